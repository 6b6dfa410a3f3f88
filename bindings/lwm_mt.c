/* The bindings' half of the multi-core executor (core/wm_mt.h): worker threads, each with
 * its own lua_State that runs the job script again, (docs/parallelism.md, "Threads").
 *
 * The thread that calls execute() is thread 1. It creates the job and starts threads
 * 2..n; each of those creates a Lua state and asks the host (wmrun, through the spawn hook
 * it registers) to run the job script in it exactly as it ran it first. When the script
 * of thread k calls execute(), this file builds thread k's part of the graph (the
 * instances placed on it), meets the others at a barrier, runs, and then stops the rest
 * of that script with a private error value, so code after execute() runs only once. The
 * Lua values that cross threads are encoded by lwm_codec.c. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_codec.h"
#include "exec/wm_mt.h"
#include "lwm.h"
#include "lwm_codec.h"
#include "lwm_mt.h"
#include "lwm_plan.h"
#include "lwm_report.h"
#include "lwm_alloc.h"

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
    wm_error e;
    wm_error_set(&e, "thread %d: %s", w->thread + 1, msg);
    wm_mt_job_fail(w->job, &e);
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
  wm_mt_job *job = run && ws ? wm_mt_job_new(n, 64, NULL) : NULL;
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
      wm_error e;
      wm_error_set(&e, "cannot start thread %d", t + 1);
      wm_mt_job_fail(job, &e);
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
  if (rc == WM_ERR && B->ctx.error.msg[0]) wm_mt_job_fail(job, &B->ctx.error);
  else if (rc == WM_STOP) wm_mt_job_abort(job);
  if (!run) return rc; /* a worker: thread 1 reports */
  for (int t = 1; t < run->n; t++)
    if (run->w[t].started) uv_thread_join(&run->w[t].tid);
  int st = wm_mt_job_state(job);
  if (st == 1) {
    B->ctx.error = *wm_mt_job_error(job); /* the failing thread's parts, formatted at the top */
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
  wm_codec_host ch;
  lwm_codec_host_records(B, &ch);
  B->mt = wm_mt_local_new(B->mtjob, B->thread, B->exec, &ch);
  return B->mt ? WM_OK : WM_ERR;
}

int lwm_mt_barrier(lwm_bridge *B, int rc) {
  if (rc != WM_OK && B->ctx.error.msg[0]) wm_mt_job_fail(B->mtjob, &B->ctx.error);
  if (wm_mt_job_barrier(B->mtjob, B->thread, rc == WM_OK, B->fingerprint) != 0) {
    wm_error_clear(&B->ctx.error); /* the job's message is the one to report */
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
