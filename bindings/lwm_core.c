/* The wm.core module: turns an env's plan into a core graph and runs it. */
#include <stdlib.h>
#include <string.h>

#include "time/wm_time.h"
#include "ops/wm_keyedop.h"
#include "lwm.h"

#include <signal.h>

/* ---- host hooks for slot values ------------------------------------------------------ */

static int host_get_field(void *ud, const wm_value *rec, const char *name, wm_value *out,
                          char *err, size_t errlen) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_rawgeti(L, B->slots, rec->u.slot);
  if (lua_type(L, -1) != LUA_TTABLE) {
    snprintf(err, errlen, "cannot read field '%s' of a %s (expected a table record)", name,
             luaL_typename(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  lua_getfield(L, -1, name);
  int t = lua_type(L, -1);
  if (t == LUA_TTABLE || t == LUA_TFUNCTION || t == LUA_TUSERDATA || t == LUA_TTHREAD) {
    snprintf(err, errlen, "field '%s' is a %s, not a string, number or boolean", name,
             luaL_typename(L, -1));
    lua_pop(L, 2);
    return -1;
  }
  /* the field's value stays referenced by the record, so a string's bytes stay valid */
  lwm_to_value(B, -1, out);
  lua_pop(L, 2);
  return 0;
}

static int host_with_field(void *ud, const wm_value *rec, const char *name, const wm_value *val,
                           wm_value *out, char *err, size_t errlen) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_rawgeti(L, B->slots, rec->u.slot);
  if (lua_type(L, -1) != LUA_TTABLE) {
    snprintf(err, errlen, "cannot set field '%s' of a %s", name, luaL_typename(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  int src = lua_gettop(L);
  lua_createtable(L, 0, 4);
  lua_pushnil(L);
  while (lua_next(L, src)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  if (lua_getmetatable(L, src)) lua_setmetatable(L, -2);
  lwm_push_value(B, val);
  lua_setfield(L, -2, name);
  uint32_t s = lwm_slot_new(B, -1);
  lua_pop(L, 2);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  *out = wm_nil();
  out->type = WM_SLOT;
  out->u.slot = s;
  return 0;
}

static void host_format(void *ud, wm_buf *b, const wm_value *v, int json) {
  lwm_bridge *B = ud;
  lua_rawgeti(B->L, B->slots, v->u.slot);
  lwm_format_lua(B->L, -1, b, json, 0);
  lua_pop(B->L, 1);
}

/* ---- the message handler (as lua.c's) ------------------------------------------------ */

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* ---- plan reading helpers ------------------------------------------------------------ */

/* Reads field k of the table at idx as a string (NULL when absent); the string stays
 * valid while the node table lives. */
const char *lwm_get_str(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1);
  return s;
}

lua_Integer lwm_get_int(lua_State *L, int idx, const char *k, lua_Integer dflt) {
  lua_getfield(L, idx, k);
  lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : dflt;
  lua_pop(L, 1);
  return v;
}

/* Stores field k of the table at idx in the fns table; 0 when absent. */
int lwm_get_fn(lwm_bridge *B, int idx, const char *k) {
  lua_getfield(B->L, idx, k);
  if (lua_isnil(B->L, -1)) {
    lua_pop(B->L, 1);
    return 0;
  }
  lua_rawseti(B->L, B->fns, ++B->nfns);
  return B->nfns;
}


/* ---- execute ------------------------------------------------------------------------- */

static void fmt_time(char *buf, size_t n, int64_t t) {
  if (t == WM_TIME_MIN) snprintf(buf, n, "MIN");
  else if (t == WM_TIME_MAX) snprintf(buf, n, "MAX");
  else snprintf(buf, n, "%lld", (long long)t);
}

/* What an operator holds: open windows of a window operator, keys of a keyed one. */
static long long op_state(const wm_op *op) {
  if (strcmp(op->vt->kind, "window") == 0) return (long long)wm_winop_open_windows(op);
  if (wm_op_is_keyedop(op)) return (long long)wm_keyedop_keys(op);
  return -1;
}

void lwm_print_metrics(lwm_bridge *B, FILE *f) {
  /* the operator column fits the longest name (names carry the script path and line) */
  int w = 8;
  for (size_t i = 0; i < B->ctx.nops; i++) {
    int n = (int)strlen(B->ctx.ops[i]->name);
    if (n > w) w = n;
  }
  if (w > 160) w = 160; /* alignment only: longer names are printed whole */
  fprintf(f, "%-*s %11s %11s %20s %8s %8s\n", w, "operator", "records in", "records out",
          "watermark", "late", "windows");
  for (size_t i = 0; i < B->ctx.nops; i++) {
    wm_op *op = B->ctx.ops[i];
    char wm[32], st[32];
    fmt_time(wm, sizeof wm, op->wm);
    if (op->wm == WM_TIME_MIN) snprintf(wm, sizeof wm, "-");
    if (wm_op_is_tsop(op) && wm_tsop_is_idle(op)) snprintf(wm + strlen(wm), sizeof wm - strlen(wm), " idle");
    long long state = op_state(op);
    if (state < 0) snprintf(st, sizeof st, "-");
    else snprintf(st, sizeof st, "%lld", state);
    fprintf(f, "%-*s %11llu %11llu %20s %8llu %8s\n", w, op->name,
            (unsigned long long)op->m.records_in, (unsigned long long)op->m.records_out, wm,
            (unsigned long long)op->m.late_dropped, st);
  }
  for (size_t i = 0; i < B->ctx.nops; i++) /* parse_csv/parse_json with on_error = "skip" */
    if (B->ctx.ops[i]->m.parse_errors)
      fprintf(f, "parse errors: %llu in '%s'\n",
              (unsigned long long)B->ctx.ops[i]->m.parse_errors, B->ctx.ops[i]->name);
  fflush(f);
}

/* One line per watermark advance or status change:
 *   [watermark] OP: channel N: OLD -> NEW        the combined input of OP advanced
 *   [watermark] OP: channel N: idle | active     the channel's status changed the input's
 *   [watermark] OP: generated: OLD -> NEW        an assigner's generator emitted
 *   [watermark] OP: generated: idle | active */
void lwm_trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status) {
  (void)ud;
  char a[24], b[24], where[32];
  fmt_time(a, sizeof a, old_wm);
  fmt_time(b, sizeof b, new_wm);
  if (chan < 0) snprintf(where, sizeof where, "generated");
  else snprintf(where, sizeof where, "channel %d", chan + 1);
  if (status)
    fprintf(stderr, "[watermark] %s: %s: %s (watermark %s)\n", op->name, where, status, a);
  else
    fprintf(stderr, "[watermark] %s: %s: %s -> %s\n", op->name, where, a, b);
}

/* ---- the "no watermark" warning and SIGUSR1 metrics ----------------------------------- */

#define NOWM_RECORDS 10000
#define NOWM_MS 10000

typedef struct watch {
  lwm_bridge *B;
  int64_t start, interval;
  int done;          /* warned, or a watermark was seen */
  int metrics;
  uv_timer_t timer;
  uv_signal_t usr1;
  int timer_open, usr1_open;
} watch;

static void check_watermarks(watch *w) {
  if (w->done) return;
  lwm_bridge *B = w->B;
  uint64_t records = 0;
  int consumers = 0, tsops = 0, idle = 0;
  const wm_op *none = NULL, *custom = NULL;
  for (size_t i = 0; i < B->ctx.nops; i++) {
    const wm_op *op = B->ctx.ops[i];
    if (op->wm > WM_TIME_MIN) {
      w->done = 1;
      return;
    }
    if (op->nin == 0) records += op->m.records_out;
    if (op_state(op) >= 0) consumers++;
    if (wm_op_is_tsop(op)) {
      tsops++;
      if (wm_tsop_is_idle(op)) idle++;
      if (wm_tsop_is_custom(op)) custom = op;
      else if (wm_tsop_builtin(op) == WM_GEN_NONE) none = op;
    }
  }
  if (!consumers || records == 0) return;
  int64_t elapsed = wm_ctx_now(&B->ctx) - w->start;
  if (!((records >= NOWM_RECORDS && elapsed >= 2 * w->interval) || elapsed >= NOWM_MS)) return;
  w->done = 1;
  char why[700];
  if (!tsops)
    snprintf(why, sizeof why, "the job has no watermark strategy (add "
                              "assign_timestamps_and_watermarks before the windows)");
  else if (idle == tsops)
    snprintf(why, sizeof why, "every input is idle (with_idleness), so no watermark moves");
  else if (custom)
    snprintf(why, sizeof why, "the watermark generator of '%s' never emitted one (call "
                              "out:emit_watermark(t) from on_event or on_periodic_emit)",
             custom->name);
  else if (none)
    snprintf(why, sizeof why, "'%s' uses no_watermarks()", none->name);
  else
    snprintf(why, sizeof why, "the assigners have not emitted a watermark yet (watermark "
                              "interval %lld ms)", (long long)w->interval);
  fprintf(stderr, "wmrun: warning: %llu records in %lld ms and no watermark at all: event-time "
                  "windows and timers cannot fire; %s\n",
          (unsigned long long)records, (long long)elapsed, why);
}

/* A bounded input read faster than the watermark interval: a periodic strategy was asked
 * for fewer than two watermarks, so the windows fired only at the end of input. Said once,
 * at the end, when there are windows or timers to fire (issue 17). */
static void warn_few_periodic(lwm_bridge *B) {
  const wm_op *few = NULL;
  int consumers = 0;
  for (size_t i = 0; i < B->ctx.nops; i++) {
    const wm_op *op = B->ctx.ops[i];
    if (op_state(op) >= 0) consumers++;
    if (!few && wm_op_is_tsop(op) && wm_tsop_few_periodic(op)) few = op;
  }
  if (!few || !consumers) return;
  unsigned long long n = (unsigned long long)wm_tsop_periodic_count(few);
  fprintf(stderr, "wmrun: warning: the input of '%s' ended after %llu periodic watermark "
                  "emission%s (watermark_interval %lld ms), so event-time windows fired only "
                  "at the end of input; set watermark_interval = 0 (--watermark-interval 0) "
                  "for a watermark after every record, or replay the input at its recorded "
                  "arrival times\n",
          few->name, n, n == 1 ? "" : "s", (long long)wm_tsop_interval(few));
}

static void on_batch(void *ud) {
  watch *w = ud;
  if (w->B->gc_step > 0) lua_gc(w->B->L, LUA_GCSTEP, w->B->gc_step);
  check_watermarks(w);
}

static void on_watch_timer(uv_timer_t *t) { check_watermarks(t->data); }

static void on_usr1(uv_signal_t *s, int signum) {
  (void)signum;
  watch *w = s->data;
  lwm_print_metrics(w->B, stderr);
}

static void watch_close(watch *w) {
  /* the executor closes every handle of its loop at the end of a run: close only what is
   * still open */
  if (w->timer_open && !uv_is_closing((uv_handle_t *)&w->timer))
    uv_close((uv_handle_t *)&w->timer, NULL);
  if (w->usr1_open && !uv_is_closing((uv_handle_t *)&w->usr1))
    uv_close((uv_handle_t *)&w->usr1, NULL);
  w->timer_open = w->usr1_open = 0;
}

static int watch_start(watch *w, uv_loop_t *loop) {
  int rc = uv_timer_init(loop, &w->timer);
  if (rc == 0) {
    w->timer_open = 1;
    w->timer.data = w;
    rc = uv_timer_start(&w->timer, on_watch_timer, 1000, 1000);
    uv_unref((uv_handle_t *)&w->timer);
  }
  if (rc == 0 && w->metrics) {
    rc = uv_signal_init(loop, &w->usr1);
    if (rc == 0) {
      w->usr1_open = 1;
      w->usr1.data = w;
      rc = uv_signal_start(&w->usr1, on_usr1, SIGUSR1);
      uv_unref((uv_handle_t *)&w->usr1);
    }
  }
  if (rc != 0) {
    watch_close(w);
    return wm_ctx_error(&w->B->ctx, "cannot start the job's watch timer: %s", uv_strerror(rc));
  }
  return WM_OK;
}

/* ---- build ----------------------------------------------------------------------------- */

int lwm_build(lwm_bridge *B, int env, wm_op ***outopp, int **outportp, lua_Integer *np) {
  B->watermark_interval = (int64_t)lwm_get_int(B->L, env, "watermark_interval", 200);
  int rc = lwm_build_graph(B, env, outopp, outportp, np);
  if (rc == WM_OK) rc = wm_ctx_prepare(&B->ctx);
  if (rc != WM_OK) {
    free(*outopp);
    free(*outportp);
    *outopp = NULL;
    *outportp = NULL;
  }
  return rc;
}

static int build_and_run(lwm_bridge *B, int env) {
  lua_State *L = B->L;
  watch w;
  memset(&w, 0, sizeof w);
  w.B = B;
  w.interval = (int64_t)lwm_get_int(L, env, "watermark_interval", 200);
  w.start = wm_ctx_now(&B->ctx);
  lua_getfield(L, env, "metrics");
  w.metrics = lua_toboolean(L, -1);
  lua_getfield(L, env, "trace_watermarks");
  if (lua_toboolean(L, -1)) B->ctx.trace = lwm_trace_fn;
  lua_getfield(L, env, "no_drain");
  int no_drain = lua_toboolean(L, -1);
  lua_getfield(L, env, "timeline"); /* wmrun --timeline: a recorder (light userdata) */
  wm_timeline *tl = lua_islightuserdata(L, -1) ? lua_touserdata(L, -1) : NULL;
  lua_pop(L, 4);
  wm_exec_config ecfg = {.watermark_interval = w.interval, .handle_signals = 1,
                         .on_batch = on_batch, .on_batch_ud = &w, .no_drain = no_drain};
  B->exec = wm_exec_new(&B->ctx, &ecfg);
  int rc = B->exec ? WM_OK : WM_ERR;
  if (rc == WM_OK && B->mtjob) rc = lwm_mt_attach(B); /* several threads (lwm_mt.c) */
  /* the recorder is not shared between threads: with --threads it sees thread 1's operators */
  if (tl && B->thread != 0) tl = NULL;
  if (rc == WM_OK && tl) wm_timeline_attach(tl, &B->ctx);
  wm_op **outop = NULL;
  int *outport = NULL;
  lua_Integer n = 0;
  if (rc == WM_OK) rc = lwm_build(B, env, &outop, &outport, &n);
  free(outop);
  free(outport);
  if (B->mtjob) rc = lwm_mt_barrier(B, rc);
  if (rc == WM_OK && B->thread == 0) rc = watch_start(&w, wm_exec_loop(B->exec));
  if (rc == WM_OK) {
    rc = wm_exec_run(B->exec);
    if (rc == WM_OK && B->thread == 0) warn_few_periodic(B);
    watch_close(&w);
    uv_run(wm_exec_loop(B->exec), UV_RUN_DEFAULT); /* the watch's close callbacks */
  }
  if (B->mt) lwm_mt_detach(B);
  wm_print_flush_all(&B->ctx);
  if (w.metrics) {
    if (B->mtjob) {
      lwm_mt_metrics(B, stderr);
    } else {
      lwm_print_metrics(B, stderr);
    }
  }
  if (tl) wm_timeline_detach(tl, &B->ctx);
  return rc;
}

void lwm_bridge_init(lwm_bridge *B, lua_State *L) {
  B->L = L;
  B->gc_step = 0;
  wm_ctx_init(&B->ctx);
  B->ctx.host.ud = B;
  B->ctx.host.retain = lwm_slot_retain;
  B->ctx.host.release = lwm_slot_release;
  B->ctx.host.get_field = host_get_field;
  B->ctx.host.with_field = host_with_field;
  B->ctx.host.format = host_format;
  lua_pushcfunction(L, msghandler);
  B->msgh = lua_gettop(L);
  lua_newtable(L);
  B->slots = lua_gettop(L);
  lua_newtable(L);
  B->fns = lua_gettop(L);
  lwm_register(B);
}

/* core.execute(env, name) */
static int l_execute(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  lwm_mt_run *run;
  struct wm_mt_job *job;
  int thread, nthreads;
  if (lwm_mt_prepare(L, 1, &run, &job, &thread, &nthreads)) return 0;
  lwm_bridge *B = calloc(1, sizeof *B);
  if (!B) {
    if (job) { /* let the other threads stop */
      static const lwm_bridge zero;
      lwm_bridge *tmp = malloc(sizeof *tmp);
      if (tmp) {
        *tmp = zero;
        tmp->mtjob = job;
        tmp->thread = thread;
        lwm_mt_barrier(tmp, WM_ERR);
        lwm_mt_finish(tmp, run, WM_ERR);
        free(tmp);
      }
    }
    return luaL_error(L, "out of memory");
  }
  lwm_bridge_init(B, L);
  B->mtjob = job;
  B->thread = thread;
  B->nthreads = nthreads;
  /* records are short-lived tables: the generational collector suits them far better
   * (measured: about 1.3x on the Lua-path benchmark); the previous mode is restored after */
  int oldgc = lua_gc(L, LUA_GCGEN, 0, 0);
  int rc = build_and_run(B, 1);
  if (oldgc == LUA_GCINC) lua_gc(L, LUA_GCINC, 0, 0, 0);
  /* free the graph while the slot table is still on the stack */
  wm_ctx_free(&B->ctx);
  wm_exec_free(B->exec);
  lwm_unregister(B);
  if (job) {
    rc = lwm_mt_finish(B, run, rc);
    if (!run) { /* a worker: thread 1 reports the result; the rest of the script must not run */
      free(B->refs);
      free(B->free_slots);
      free(B);
      return lwm_mt_stop_script(L);
    }
  }
  if (rc == WM_STOP) {
    lua_pushliteral(L, "wmrun: interrupted");
  } else if (rc != WM_OK) {
    lua_pushstring(L, B->ctx.err);
    /* a data or setup error (no user function failed): its message already names the
     * file, line, operator and record. Remember it, so that wmrun's message handler does not
     * add the traceback of the execute call to it, which would say nothing more */
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "wm.core.data_error");
  }
  free(B->refs);
  free(B->free_slots);
  free(B);
  if (rc != WM_OK) return lua_error(L);
  return 0;
}

/* core.duration(text) -> ms | nil, message */
static int l_duration(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  int64_t ms;
  char err[256];
  if (wm_duration_parse(s, &ms, err, sizeof err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)ms);
  return 1;
}

/* core.format(value, json) -> string, as print shows it */
static int l_format(lua_State *L) {
  lua_settop(L, 2);
  int json = lua_toboolean(L, 2);
  wm_buf b;
  wm_buf_init(&b);
  lwm_format_lua(L, 1, &b, json, 0);
  if (b.oom) {
    wm_buf_free(&b);
    return luaL_error(L, "out of memory");
  }
  lua_pushlstring(L, b.data ? b.data : "", b.len);
  wm_buf_free(&b);
  return 1;
}

/* core.thread() -> the thread (1-based) this Lua state runs on */
static int l_thread(lua_State *L) {
  lua_pushinteger(L, lwm_mt_thread(L));
  return 1;
}

static const luaL_Reg core_funcs[] = {
    {"execute", l_execute},
    {"duration", l_duration},
    {"format", l_format},
    {"harness", lwm_harness_new},
    {"replay_data", lwm_replay_data_new},
    {"thread", l_thread},
    {"_codec_roundtrip", lwm_mt_roundtrip},
    {NULL, NULL},
};

int luaopen_wm_core(lua_State *L);
int luaopen_wm_core(lua_State *L) {
  lwm_harness_open(L);
  luaL_newlib(L, core_funcs);
  lua_pushliteral(L, LWM_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushfstring(L, "libuv %s", uv_version_string());
  lua_setfield(L, -2, "libuv_version");
  return 1;
}
