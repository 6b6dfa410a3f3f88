/* The bindings' half of the multi-core executor (core/wm_mt.h): worker threads, each with
 * its own lua_State that runs the job script again, and the encoding of Lua values that
 * cross threads (docs/parallelism.md, "Threads").
 *
 * The thread that calls execute() is thread 1. It creates the job and starts threads
 * 2..n; each of those creates a Lua state and asks the host (wmrun, through the spawn hook
 * it registers) to run the job script in it exactly as it ran it first. When the script
 * of thread k calls execute(), this file builds thread k's part of the graph (the
 * instances placed on it), meets the others at a barrier, runs, and then stops the rest
 * of that script with a private error value, so code after execute() runs only once. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_codec.h"
#include "exec/wm_mt.h"
#include "lwm.h"
#include "lwm_alloc.h"

#define MAX_DEPTH 100 /* nesting of tables in a record that crosses threads */

/* registry keys (addresses of static anchors) */
static const char spawn_key = 0;  /* full userdata: lwm_spawn, set by the host */
static const char worker_key = 0; /* light userdata: the worker of this state */
static const char seq_key = 0;    /* integer: execute() calls made in this state */
static const char stop_key = 0;   /* the error value that ends a worker's script */

typedef struct worker {
  wm_mt_job *job;
  int thread;     /* 0-based */
  lua_Integer seq; /* the execute() call to run, counted as thread 1 counted it */
  lwm_spawn spawn;
  uv_thread_t tid;
  int started, arrived;
} worker;

struct lwm_mt_run {
  wm_mt_job *job;
  worker *w; /* w[1..n-1] */
  int n;
};

void lwm_set_spawn(lua_State *L, const lwm_spawn *s) {
  lwm_spawn *u = lua_newuserdatauv(L, sizeof *u, 0);
  *u = *s;
  lua_rawsetp(L, LUA_REGISTRYINDEX, &spawn_key);
}

int lwm_mt_thread(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &worker_key);
  const worker *w = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return w ? w->thread + 1 : 1;
}

/* ---- Lua values <-> bytes ---------------------------------------------------------- */

static void path_add(char *path, size_t cap, lua_State *L, int k) {
  size_t n = strlen(path);
  if (lua_type(L, k) == LUA_TSTRING) snprintf(path + n, cap - n, ".%s", lua_tostring(L, k));
  else if (lua_isinteger(L, k)) snprintf(path + n, cap - n, "[%lld]", (long long)lua_tointeger(L, k));
  else snprintf(path + n, cap - n, "[?]");
}

static int enc_lua(lua_State *L, wm_buf *b, int idx, const void **anc, int depth, const char *root,
                   char *path, size_t pcap, char *err, size_t errlen) {
  switch (lua_type(L, idx)) {
  case LUA_TNIL: wm_buf_addc(b, WM_C_NIL); return 0;
  case LUA_TBOOLEAN: wm_buf_addc(b, lua_toboolean(L, idx) ? WM_C_TRUE : WM_C_FALSE); return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      wm_buf_addc(b, WM_C_INT);
      wm_codec_put_ivar(b, (int64_t)lua_tointeger(L, idx));
    } else {
      double f = (double)lua_tonumber(L, idx);
      char raw[8];
      memcpy(raw, &f, 8);
      wm_buf_addc(b, WM_C_FLOAT);
      wm_buf_add(b, raw, 8);
    }
    return 0;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    wm_buf_addc(b, WM_C_STR);
    wm_codec_put_uvar(b, n);
    wm_buf_add(b, s, n);
    return 0;
  }
  case LUA_TTABLE: {
    const void *t = lua_topointer(L, idx);
    for (int i = 0; i < depth; i++)
      if (anc[i] == t) {
        snprintf(err, errlen, "it holds a cycle (%s%s contains itself)", root, path);
        return -1;
      }
    if (depth >= MAX_DEPTH) {
      snprintf(err, errlen, "its tables are nested more than %d levels deep (at %s%s)",
               MAX_DEPTH, root, path);
      return -1;
    }
    if (!lua_checkstack(L, 4)) {
      snprintf(err, errlen, "out of Lua stack space");
      return -1;
    }
    anc[depth] = t;
    wm_buf_addc(b, WM_C_TABLE);
    size_t plen = strlen(path);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      int k = lua_gettop(L) - 1, v = k + 1;
      int kt = lua_type(L, k);
      path_add(path, pcap, L, k);
      if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN) {
        snprintf(err, errlen, "it holds a %s used as a key (in %s%.*s)", lua_typename(L, kt),
                 root, (int)plen, path);
        lua_pop(L, 2);
        return -1;
      }
      if (enc_lua(L, b, k, anc, depth + 1, root, path, pcap, err, errlen) != 0 ||
          enc_lua(L, b, v, anc, depth + 1, root, path, pcap, err, errlen) != 0) {
        lua_pop(L, 2);
        return -1;
      }
      path[plen] = '\0';
      lua_pop(L, 1);
    }
    wm_buf_addc(b, WM_C_NIL);
    return 0;
  }
  default:
    if (depth == 0) snprintf(err, errlen, "it is a %s", luaL_typename(L, idx));
    else snprintf(err, errlen, "it holds a %s (at %s%s)", luaL_typename(L, idx), root, path);
    return -1;
  }
}

int lwm_encode_lua(lua_State *L, wm_buf *b, int idx, const char *root, char *err,
                   size_t errlen) {
  const void *anc[MAX_DEPTH];
  char path[256] = "";
  return enc_lua(L, b, lua_absindex(L, idx), anc, 0, root, path, sizeof path, err, errlen);
}

static int codec_encode_as(void *ud, wm_buf *b, const wm_value *v, const char *root, char *err,
                           size_t errlen) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_rawgeti(L, B->slots, v->u.slot);
  int rc = lwm_encode_lua(L, b, -1, root, err, errlen);
  lua_pop(L, 1);
  return rc;
}

static int codec_encode(void *ud, wm_buf *b, const wm_value *v, char *err, size_t errlen) {
  return codec_encode_as(ud, b, v, "record", err, errlen);
}

static int codec_encode_state(void *ud, wm_buf *b, const wm_value *v, char *err, size_t errlen) {
  return codec_encode_as(ud, b, v, "value", err, errlen);
}

/* Pushes the value encoded at *p. */
static int dec_lua(lua_State *L, const uint8_t **p, const uint8_t *end, int depth, char *err,
                   size_t errlen) {
  if (*p >= end) goto bad;
  int tag = *(*p)++;
  switch (tag) {
  case WM_C_NIL: lua_pushnil(L); return 0;
  case WM_C_FALSE: lua_pushboolean(L, 0); return 0;
  case WM_C_TRUE: lua_pushboolean(L, 1); return 0;
  case WM_C_INT: {
    int64_t i;
    if (wm_codec_get_ivar(p, end, &i) != 0) goto bad;
    lua_pushinteger(L, (lua_Integer)i);
    return 0;
  }
  case WM_C_FLOAT: {
    double f;
    if (end - *p < 8) goto bad;
    memcpy(&f, *p, 8);
    *p += 8;
    lua_pushnumber(L, (lua_Number)f);
    return 0;
  }
  case WM_C_STR: {
    uint64_t n;
    if (wm_codec_get_uvar(p, end, &n) != 0 || (uint64_t)(end - *p) < n) goto bad;
    lua_pushlstring(L, (const char *)*p, (size_t)n);
    *p += n;
    return 0;
  }
  case WM_C_TABLE:
    if (depth >= MAX_DEPTH || !lua_checkstack(L, 4)) goto bad;
    lua_newtable(L);
    for (;;) {
      if (*p >= end) goto bad;
      if (**p == WM_C_NIL) {
        (*p)++;
        return 0;
      }
      if (dec_lua(L, p, end, depth + 1, err, errlen) != 0) return -1;
      if (lua_isnil(L, -1) || (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) != lua_tonumber(L, -1)))
        goto bad;
      if (dec_lua(L, p, end, depth + 1, err, errlen) != 0) return -1;
      lua_rawset(L, -3);
    }
  default: break;
  }
bad:
  snprintf(err, errlen, "corrupt record encoding");
  return -1;
}

int lwm_decode_lua(lua_State *L, const uint8_t **p, const uint8_t *end, char *err,
                   size_t errlen) {
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8) || dec_lua(L, p, end, 0, err, errlen) != 0) {
    lua_settop(L, top);
    if (!err[0]) snprintf(err, errlen, "corrupt record encoding");
    return -1;
  }
  return 0;
}

static int codec_decode(void *ud, const uint8_t **p, const uint8_t *end, wm_value *out, char *err,
                        size_t errlen) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  int top = lua_gettop(L);
  if (lwm_decode_lua(L, p, end, err, errlen) != 0) return -1;
  int rc = lwm_to_value(B, -1, out); /* a table: a new slot */
  lua_settop(L, top);
  if (rc != 0) snprintf(err, errlen, "out of memory");
  return rc;
}

void lwm_codec_host(lwm_bridge *B, wm_codec_host *ch) {
  *ch = (wm_codec_host){.ud = B, .encode = codec_encode_state, .decode = codec_decode};
}

/* For the C tests of the encoding through Lua (wm.core._codec_roundtrip): encodes the
 * value at index 1 and decodes it back. */
int lwm_mt_roundtrip(lua_State *L) {
  luaL_checkany(L, 1);
  wm_buf b;
  wm_buf_init(&b);
  char err[512] = "";
  if (lwm_encode_lua(L, &b, 1, "record", err, sizeof err) != 0) {
    wm_buf_free(&b);
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
  lua_Integer len = (lua_Integer)b.len;
  if (lwm_decode_lua(L, &p, end, err, sizeof err) != 0 || p != end) {
    wm_buf_free(&b);
    return luaL_error(L, "decoding failed: %s", err);
  }
  wm_buf_free(&b);
  lua_pushinteger(L, len);
  return 2;
}

/* ---- threads ------------------------------------------------------------------------ */

/* worker (light userdata) -> nothing: registers the worker, under lua_pcall (it allocates) */
static int set_worker(lua_State *L) {
  lua_settop(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &worker_key);
  return 0;
}

static void worker_main(void *arg) {
  worker *w = arg;
  const char *why = NULL;
  lua_State *L = lwm_new_state(&why); /* WM_FAIL_ALLOC applies to every thread's state */
  const char *msg = NULL;
  int st = LUA_OK;
  char text0[300];
  if (!L) {
    snprintf(text0, sizeof text0, "cannot create a Lua state: %s", why);
    msg = text0;
  } else {
    lua_pushcfunction(L, set_worker);
    lua_pushlightuserdata(L, w);
    st = lua_pcall(L, 1, 0, 0);
    if (st == LUA_OK) st = w->spawn.run(L, w->spawn.ud);
    if (st != LUA_OK) msg = lua_tostring(L, -1);
    if (!msg) msg = "the job script ended without calling execute(): every thread runs the "
                    "script and must reach the same execute()";
  }
  if (!w->arrived) { /* the script failed, or ended, before its execute() */
    char text[4200];
    snprintf(text, sizeof text, "thread %d: %s", w->thread + 1, msg);
    wm_mt_job_fail(w->job, text);
    wm_mt_job_barrier(w->job, w->thread, 0, 0);
  }
  if (L) lwm_close_state(L);
}

/* How many threads a job uses: threads = 0 means one per core; never more than the
 * largest parallelism of its operators (an extra thread would have nothing to run). */
static int job_threads(lua_State *L, int env) {
  lua_Integer t = lwm_get_int(L, env, "threads", 1);
  if (t == 0) t = (lua_Integer)uv_available_parallelism();
  if (t <= 1) return 1;
  lua_Integer envp = lwm_get_int(L, env, "parallelism", 1), maxp = 1;
  lua_getfield(L, env, "nodes");
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lua_Integer p = lwm_get_int(L, -1, "parallelism", 0);
    if (p <= 0) p = lwm_get_int(L, -1, "max_parallelism", 0) == 1 ? 1 : envp;
    if (p > maxp) maxp = p;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (t > maxp) t = maxp;
  if (t > 256) t = 256;
  return (int)t;
}

static lua_Integer next_seq(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &seq_key);
  lua_Integer s = lua_tointeger(L, -1) + 1;
  lua_pop(L, 1);
  lua_pushinteger(L, s);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &seq_key);
  return s;
}

int lwm_mt_prepare(lua_State *L, int env, lwm_mt_run **runp, wm_mt_job **jobp, int *thread,
                   int *nthreads) {
  *runp = NULL;
  *jobp = NULL;
  *thread = 0;
  *nthreads = 1;
  lua_Integer seq = next_seq(L);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &worker_key);
  worker *me = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (me) { /* a worker's script */
    if (seq < me->seq) return 1; /* an earlier execute() of the script: thread 1 ran it */
    me->arrived = 1;             /* build_and_run meets the barrier */
    *jobp = me->job;
    *thread = me->thread;
    *nthreads = wm_mt_job_threads(me->job);
    return 0;
  }
  int n = job_threads(L, env);
  if (n <= 1) return 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &spawn_key);
  const lwm_spawn *sp = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!sp)
    return luaL_error(L, "threads = %d: running a job on several threads needs wmrun (every "
                         "thread runs the job script again); use threads = 1 here", n);
  lwm_mt_run *run = calloc(1, sizeof *run);
  worker *ws = calloc((size_t)n, sizeof *ws);
  char err[256];
  wm_mt_job *job = run && ws ? wm_mt_job_new(n, 64, err, sizeof err) : NULL;
  if (!job) {
    free(run);
    free(ws);
    return luaL_error(L, "out of memory starting %d threads", n);
  }
  run->job = job;
  run->w = ws;
  run->n = n;
  for (int t = 1; t < n; t++) {
    ws[t].job = job;
    ws[t].thread = t;
    ws[t].seq = seq;
    ws[t].spawn = *sp;
    if (uv_thread_create(&ws[t].tid, worker_main, &ws[t]) == 0) {
      ws[t].started = 1;
    } else {
      char msg[128];
      snprintf(msg, sizeof msg, "cannot start thread %d", t + 1);
      wm_mt_job_fail(job, msg);
      wm_mt_job_absent(job, t);
    }
  }
  *runp = run;
  *jobp = job;
  *nthreads = n;
  return 0;
}

int lwm_mt_finish(lwm_bridge *B, lwm_mt_run *run, int rc) {
  wm_mt_job *job = B->mtjob;
  if (rc == WM_ERR && B->ctx.err[0]) wm_mt_job_fail(job, B->ctx.err);
  else if (rc == WM_STOP) wm_mt_job_abort(job);
  if (!run) return rc; /* a worker: thread 1 reports */
  for (int t = 1; t < run->n; t++)
    if (run->w[t].started) uv_thread_join(&run->w[t].tid);
  int st = wm_mt_job_state(job);
  if (st == 1) {
    snprintf(B->ctx.err, sizeof B->ctx.err, "%s", wm_mt_job_error(job));
    rc = WM_ERR;
  } else if (st == 2) {
    rc = WM_STOP;
  }
  wm_mt_job_free(job);
  free(run->w);
  free(run);
  return rc;
}

int lwm_mt_stop_script(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&stop_key);
  return lua_error(L);
}

/* ---- attaching a thread's part to a bridge ------------------------------------------- */

int lwm_mt_attach(lwm_bridge *B) {
  wm_codec_host ch = {.ud = B, .encode = codec_encode, .decode = codec_decode};
  B->mt = wm_mt_local_new(B->mtjob, B->thread, B->exec, &ch);
  return B->mt ? WM_OK : WM_ERR;
}

int lwm_mt_barrier(lwm_bridge *B, int rc) {
  if (rc != WM_OK && B->ctx.err[0]) {
    char msg[4200];
    snprintf(msg, sizeof msg, "%s", B->ctx.err);
    wm_mt_job_fail(B->mtjob, msg);
  }
  if (wm_mt_job_barrier(B->mtjob, B->thread, rc == WM_OK, B->fingerprint) != 0) {
    B->ctx.err[0] = '\0'; /* the job's message is the one to report */
    return WM_ERR;
  }
  return rc;
}

void lwm_mt_detach(lwm_bridge *B) {
  wm_mt_local_free(B->mt);
  B->mt = NULL;
}

void lwm_mt_metrics(lwm_bridge *B, FILE *f) {
  wm_mt_job_lock(B->mtjob);
  fprintf(f, "thread %d:\n", B->thread + 1);
  lwm_print_metrics(B, f);
  wm_mt_job_unlock(B->mtjob);
}
