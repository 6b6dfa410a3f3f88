/* The wm.core module: turns an env's plan into a core graph and runs it. */
#include <stdlib.h>
#include <string.h>

#include "time/wm_time.h"
#include "exec/wm_ckptrun.h"
#include "ops/wm_keyedop.h"
#include "lwm.h"
#include "lwm_ckpt.h"
#include "lwm_codec.h"
#include "lwm_conn.h"
#include "lwm_graph.h"
#include "lwm_harness.h"
#include "lwm_replay.h"
#include "lwm_replay_data.h"
#include "lwm_sigwatch.h"
#include "lwm_metrics.h"
#include "lwm_mt.h"
#include "lwm_plan.h"
#include "lwm_report.h"
#include "lwm_task.h"
#include "lwm_through.h"
#include "lwm_testenv.h"

#include <signal.h>

/* ---- execute ------------------------------------------------------------------------- */

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
  lwm_rectrace *rt; /* --trace-watermarks=json,records: flushed after each batch */
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
    if (lwm_op_state(op) >= 0) consumers++;
    if (wm_op_is_tsop(op)) {
      tsops++;
      if (wm_tsop_is_idle(op)) idle++;
      if (wm_tsop_is_custom(op)) custom = op;
      else if (wm_tsop_builtin(op) == WM_GEN_NONE) none = op;
    }
  }
  /* processing-time windows, counts and rolling aggregations need no watermark */
  if (!B->event_time || !consumers || records == 0) return;
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
 * at the end, when there are windows or timers to fire. */
static void warn_few_periodic(lwm_bridge *B) {
  const wm_op *few = NULL;
  int consumers = 0;
  for (size_t i = 0; i < B->ctx.nops; i++) {
    const wm_op *op = B->ctx.ops[i];
    if (lwm_op_state(op) >= 0) consumers++;
    if (!few && wm_op_is_tsop(op) && wm_tsop_few_periodic(op)) few = op;
  }
  if (!few || !consumers || !B->event_time) return; /* only event-time parts wait */
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
  lwm_rectrace_flush(w->rt); /* the batch's keyed events, before whatever comes next */
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

/* ---- interrupting a runaway function (as lua.c's SIGINT) ----------------------------------
 * The executor's signal handler calls lwm_interrupt, which sets a hook on the job's Lua
 * state; lua_sethook is safe in a signal handler (lua.c does the same). The hook removes
 * itself as soon as the loop has seen the signal (the job then drains as usual). A user
 * function that keeps the loop from it, running LWM_HOOK_TICKS x LWM_HOOK_COUNT VM
 * instructions (5 x 10^7) in one call, is stopped with an error that names it. Counting
 * instructions, not time, leaves a function blocked in a system call alone: the second
 * signal ends that one (status 130). */

#define LWM_HOOK_COUNT 1000000
#define LWM_HOOK_TICKS 50
static const char hook_key = 'h'; /* registry: the running bridge (light userdata) */

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &hook_key);
  lwm_bridge *B = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!B || !B->exec || !wm_exec_signal_pending(B->exec)) {
    lua_sethook(L, NULL, 0, 0);
    return;
  }
  if (ar->event != LUA_HOOKCOUNT || ++B->hook_ticks < LWM_HOOK_TICKS) return;
  lua_sethook(L, NULL, 0, 0);
  int sig = wm_exec_signal(B->exec);
  const char *name = sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT";
  lua_getinfo(L, "Sl", ar);
  if (ar->currentline > 0) lua_pushfstring(L, "%s:%d: ", ar->short_src, ar->currentline);
  else lua_pushliteral(L, "");
  lua_pushfstring(L, "interrupted by %s: the function defined at %s:%d did not return (a loop "
                     "that never ends?)", name, ar->short_src, ar->linedefined);
  lua_concat(L, 2);
  lua_error(L);
}

static void lwm_interrupt(void *ud) {
  lwm_bridge *B = ud;
  lua_sethook(B->L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, LWM_HOOK_COUNT);
}

/* env.checkpoint = {dir = DIR, interval = ms, fresh = bool, allow_state_change = bool}
 * (lua/wm/base.lua checks it):
 * a coordinator on this thread's executor (exec/wm_ckptrun.h), or NULL (rc in *rc). */
static wm_ckptrun *checkpoint_open(lwm_bridge *B, int env, int trace, wm_codec_host *codec,
                                   int *rc) {
  lua_State *L = B->L;
  wm_ckptrun *ck = NULL;
  lua_getfield(L, env, "checkpoint");
  if (lua_istable(L, -1)) {
    int t = lua_gettop(L);
    wm_ckptrun_config cfg = {.dir = lwm_get_str(L, t, "dir"),
                             .interval = (int64_t)lwm_get_int(L, t, "interval", 10000),
                             .instance = B->thread, .threads = B->nthreads > 0 ? B->nthreads : 1,
                             .log = stderr, .trace = trace, .crash = lwm_test_ckpt_crash()};
    lua_getfield(L, t, "fresh");
    cfg.fresh = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, t, "allow_state_change");
    cfg.allow_state_change = lua_toboolean(L, -1);
    lua_pop(L, 1);
    cfg.from_savepoint = lwm_get_str(L, t, "from_savepoint"); /* savepoints (wm_savepoint.h) */
    cfg.stop_savepoint = lwm_get_str(L, t, "stop_with_savepoint");
    lua_getfield(L, t, "allow_non_restored_state");
    cfg.allow_non_restored = lua_toboolean(L, -1);
    lua_getfield(L, LUA_REGISTRYINDEX, "wm.core.job");
    cfg.job = lua_tostring(L, -1);
    lwm_codec_host(B, codec); /* Lua values (tables in records, states, accumulators) */
    cfg.codec = codec;
    cfg.mt = B->mt;
    cfg.mtjob = B->mtjob;
    if (!cfg.dir) {
      *rc = wm_ctx_error(&B->ctx, "env checkpoint: no dir");
    } else if ((*rc = lwm_check_checkpointable(B)) == WM_OK) {
      ck = wm_ckptrun_new(B->exec, &cfg);
      if (!ck) *rc = WM_ERR;
    }
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  return ck;
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
  /* true, "json" or "json,records" (--trace-watermarks=json[,records]) */
  lua_getfield(L, env, "trace_watermarks");
  int tmode = lwm_trace_mode(lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL,
                             lua_toboolean(L, -1));
  int trace_json = tmode >= 2;
  if (tmode > 0) B->ctx.trace = trace_json ? lwm_trace_json_fn : lwm_trace_fn;
  lwm_rectrace *rt = tmode == 3 ? lwm_rectrace_new(1) : NULL; /* the keyed events */
  if (rt) { /* held, written after each batch of records and with each watermark line */
    B->ctx.observe = lwm_trace_records_fn;
    B->ctx.observe_ud = rt;
    B->ctx.trace_ud = rt;
    w.rt = rt;
  }
  lua_getfield(L, env, "no_drain");
  int no_drain = lua_toboolean(L, -1);
  lua_getfield(L, env, "timeline"); /* wmrun --timeline: a recorder (light userdata) */
  wm_timeline *tl = lua_islightuserdata(L, -1) ? lua_touserdata(L, -1) : NULL;
  lua_pop(L, 4);
  lwm_services svc = {0};
  wm_exec_config ecfg = {.watermark_interval = w.interval, .handle_signals = 1,
                         .on_batch = on_batch, .on_batch_ud = &w, .no_drain = no_drain,
                         .interrupt = lwm_interrupt, .interrupt_ud = B,
                         .on_end = lwm_services_end, .on_end_ud = &svc};
  /* env.stall_timeout: nil = the executor's default, 0 = never (the executor's -1) */
  lua_Integer stall = lwm_get_int(L, env, "stall_timeout", -1);
  if (stall >= 0) ecfg.stall_timeout = stall > 0 ? (int64_t)stall : -1;
  ecfg.pressure_high = (size_t)lwm_get_int(L, env, "pressure_high", 0); /* 0: the defaults */
  ecfg.pressure_low = (size_t)lwm_get_int(L, env, "pressure_low", 0);
  lua_pushlightuserdata(L, B);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &hook_key);
  B->exec = wm_exec_new(&B->ctx, &ecfg);
  int rc = B->exec ? WM_OK : WM_ERR;
  if (tmode == 3 && !rt) rc = wm_ctx_error(&B->ctx, "out of memory starting the trace");
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
  /* checkpoints: resume from the newest, or take one before the first record (which finds
   * every part that cannot be checkpointed at start) */
  int resumed = 0;
  wm_codec_host codec;
  int ck_trace = B->ctx.trace == NULL ? 0 : trace_json ? 2 : 1;
  wm_ckptrun *ck = rc == WM_OK ? checkpoint_open(B, env, ck_trace, &codec, &rc) : NULL;
  if (ck) {
    resumed = wm_ckptrun_restore(ck);
    if (resumed < 0) rc = WM_ERR;
    else if (resumed == 0) rc = wm_ckptrun_take(ck, 0);
    if (rc == WM_OK) rc = wm_ckptrun_start(ck);
  }
  if (rc == WM_OK && resumed != 2) /* every thread: the others publish their metrics */
    rc = lwm_services_start(B, env, wm_exec_loop(B->exec), ck, &svc);
  if (rc == WM_OK && B->thread == 0 && resumed != 2) rc = watch_start(&w, wm_exec_loop(B->exec));
  if (rc == WM_OK && resumed != 2) {
    rc = wm_exec_run(B->exec);
    if (rc == WM_OK && B->thread == 0) warn_few_periodic(B);
    watch_close(&w);
    uv_run(wm_exec_loop(B->exec), UV_RUN_DEFAULT); /* the watch's close callbacks */
  }
  /* the job ended: its final checkpoint (not after a SIGTERM's; every thread takes part,
   * also one that failed, so that the others do not wait for it) */
  if (ck) {
    int ok = rc == WM_OK && resumed != 2 && !wm_exec_saved(B->exec);
    int frc = wm_ckptrun_take_final(ck, ok);
    if (rc == WM_OK) rc = frc;
  }
  if (B->exec) { /* the services of a run that failed to start: their close callbacks */
    lwm_services_end(&svc);
    uv_run(wm_exec_loop(B->exec), UV_RUN_NOWAIT);
  }
  if (B->mt) lwm_mt_detach(B);
  wm_print_flush_all(&B->ctx);
  if (w.metrics) {
    if (B->mtjob) {
      lwm_mt_metrics(B, stderr);
    } else {
      lwm_print_metrics(B, stderr);
    }
    if (ck) wm_ckptrun_print_stats(ck, stderr);
  }
  wm_ckptrun_free(ck);
  if (tl) wm_timeline_detach(tl, &B->ctx);
  if (rt) {
    B->ctx.observe = NULL;
    B->ctx.observe_ud = NULL;
    B->ctx.trace_ud = NULL;
    lwm_rectrace_free(rt);
  }
  lua_sethook(L, NULL, 0, 0); /* a signal's hook that did not fire */
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &hook_key);
  return rc;
}

/* The job's error message (light userdata, a string) -> the message, remembered as a data
 * error; when `data` (arg 2) is false, only pushed. */
static int push_job_error(lua_State *L) {
  lua_pushstring(L, lua_touserdata(L, 1));
  if (lua_toboolean(L, 2)) {
    /* a data or setup error (no user function failed): its message already names the
     * file, line, operator and record. Remember it, so that wmrun's message handler does not
     * add the traceback of the execute call to it, which would say nothing more */
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "wm.core.data_error");
  }
  return 1;
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
  int bad = !B ? 1 : lwm_bridge_init(B, L) != 0 ? 2 : 0; /* 2: its message on the stack */
  if (bad) {
    free(B);
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
    return bad == 1 ? luaL_error(L, "out of memory") : lua_error(L);
  }
  B->mtjob = job;
  B->thread = thread;
  B->nthreads = nthreads;
  /* records are short-lived tables: the generational collector suits them far better
   * (measured: about 1.3x on the Lua-path benchmark); the previous mode is restored after */
  int oldgc = lua_gc(L, LUA_GCGEN, 0, 0);
  int rc = build_and_run(B, 1);
  /* stopped by SIGTERM with its checkpoint (not ended): the task mode asks (wm.scaleout) */
  int saved = B->exec && wm_exec_saved(B->exec);
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
  if (rc != WM_OK) {
    /* under lua_pcall, so that running out of memory here (the job may have failed for that
     * very reason) leaves its own message instead of unwinding past the frees below */
    static const char interrupted[] = "wmrun: interrupted";
    lua_pushcfunction(L, push_job_error);
    lua_pushlightuserdata(L, rc == WM_STOP ? (void *)interrupted : (void *)wm_ctx_errtext(&B->ctx));
    lua_pushboolean(L, rc != WM_STOP);
    lua_pcall(L, 2, 1, 0); /* the message, or the memory error's */
  }
  free(B->refs);
  free(B->free_slots);
  free(B);
  if (rc != WM_OK) return lua_error(L);
  lua_pushboolean(L, saved);
  lua_setfield(L, 1, "stopped");
  return 0;
}

/* core.duration(text) -> ms | nil, message */
static int l_duration(lua_State *L) {
  const char *s = luaL_checkstring(L, 1);
  int64_t ms;
  wm_error err;
  if (wm_duration_parse(s, &ms, &err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
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

/* core._reads_arg_only(fn) -> whether map/filter/flat_map give fn one table refilled per
 * row (lwm_escape.c; for the specs) */
static int l_reads_arg_only(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_pushboolean(L, lwm_reads_arg_only(L, 1));
  return 1;
}

/* core.wall_ms() -> the wall clock in ms since the epoch (SQL's PROCTIME(), a lookup join's
 * cache) */
static int l_wall_ms(lua_State *L) {
  uv_timeval64_t tv;
  int rc = uv_gettimeofday(&tv);
  if (rc != 0) return luaL_error(L, "uv_gettimeofday: %s", uv_strerror(rc));
  lua_pushinteger(L, (lua_Integer)(tv.tv_sec * 1000 + tv.tv_usec / 1000));
  return 1;
}

static const luaL_Reg core_funcs[] = {
    {"_reads_arg_only", l_reads_arg_only},
    {"wall_ms", l_wall_ms},
    {"execute", l_execute},
    {"duration", l_duration},
    {"format", l_format},
    {"harness", lwm_harness_new},
    {"replay_data", lwm_replay_data_new},
    {"signal_watch", lwm_signal_watch_new},
    {"thread", l_thread},
    {"_codec_roundtrip", lwm_codec_roundtrip},
    {"_checkpoint_sources", lwm_checkpoint_sources},
    {"kafka_partitions", lwm_kafka_partitions},
    {"nats_subjects", lwm_nats_subjects},
    {"partition", lwm_partition},
    {"parse_partitions", lwm_parse_partitions},
    {"_member_nats", lwm_member_nats},
    {"through_ensure", lwm_through_ensure},
    {NULL, NULL},
};

int luaopen_wm_core(lua_State *L);
int luaopen_wm_core(lua_State *L) {
  lwm_harness_open(L);
  lwm_replay_open(L);
  luaL_newlib(L, core_funcs);
  lwm_task_open(L);
  lua_pushliteral(L, LWM_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushfstring(L, "libuv %s", uv_version_string());
  lua_setfield(L, -2, "libuv_version");
  return 1;
}
