/* wm.testing's C part: drives the core graph that wmrun would build, with the clock and
 * the processing-time timer service replaced by virtual ones (api.md: wm.testing).
 *
 * The harness is a userdata holding a bridge. Its Lua tables (message handler, slots,
 * fns) are registered under the bridge's address and pushed again at the start of every
 * method with lwm_enter, because each method runs on its own stack frame. User value 1
 * keeps the plan (operator names and tags point into it) alive. wm.lab's arrival replay
 * (h:replay, h:replay_inputs) is in lwm_replay.c, its data sets (core.replay_data) in
 * lwm_replay_data.c, its measures in lwm_lab_measure.c, core.signal_watch in lwm_sigwatch.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wm_keyedop.h"
#include "graph/wm_observe.h"
#include "time/wm_timer.h"
#include "lwm.h"
#include "lwm_ckpt.h"
#include "lwm_graph.h"
#include "lwm_harness.h"
#include "lwm_join.h"
#include "lwm_sqllookup.h"
#include "lwm_plan.h"
#include "lwm_report.h"
#include "lwm_timeline.h"

typedef struct capture {
  harness *H;
  char *tag; /* "" for the main output */
} capture;

static int64_t h_now(void *ud) { return ((harness *)ud)->now; }

static int h_pt_register(void *ud, wm_op *op, int64_t t) {
  harness *H = ud;
  size_t i;
  for (i = 0; i < H->B.ctx.nops && H->B.ctx.ops[i] != op; i++) {
  }
  if (wm_timers_push(H->pt, t, (uint64_t)i, H->pt_seq++) != 0)
    return wm_ctx_error(&H->B.ctx, "out of memory");
  return WM_OK;
}

/* ---- the capture operator: appends what it receives to outputs[tag] ------------------- */

static int capture_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  capture *c = op->impl;
  if (c->H->discard) return WM_OK;
  lwm_bridge *B = &c->H->B;
  lua_State *L = B->L;
  luaL_checkstack(L, 6, "wmrun: harness output");
  lwm_push_fn(B, c->H->outputs);
  if (lua_getfield(L, -1, c->tag) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    lua_newtable(L);
    lua_setfield(L, -2, "values");
    lua_newtable(L);
    lua_setfield(L, -2, "ts");
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, c->tag);
  }
  lua_getfield(L, -1, "values");
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1) + 1;
  lwm_push_value(B, rec);
  lua_rawseti(L, -2, n);
  lua_getfield(L, -2, "ts");
  if (ts == WM_TIME_MIN) lua_pushboolean(L, 0);
  else lua_pushinteger(L, (lua_Integer)ts);
  lua_rawseti(L, -2, n);
  lua_pop(L, 4);
  return WM_OK;
}

static void capture_free(wm_op *op) {
  capture *c = op->impl;
  if (!c) return;
  free(c->tag);
  free(c);
}

static const wm_op_vt capture_vt = {
    .kind = "harness output", .record = capture_record, .free = capture_free};

static wm_op *capture_new(harness *H, wm_op *from, int port, const char *tag) {
  capture *c = calloc(1, sizeof *c);
  char name[300];
  snprintf(name, sizeof name, tag[0] ? "harness side output '%s'" : "harness output", tag);
  if (!c || !(c->tag = strdup(tag))) {
    free(c);
    wm_ctx_error(&H->B.ctx, "out of memory");
    return NULL;
  }
  c->H = H;
  wm_op *op = wm_op_new(&H->B.ctx, &capture_vt, c, name);
  if (!op) {
    capture_free(&(wm_op){.impl = c});
    wm_ctx_error(&H->B.ctx, "out of memory");
    return NULL;
  }
  if (wm_op_connect(from, port, op) < 0) {
    wm_ctx_error(&H->B.ctx, "out of memory");
    return NULL;
  }
  return op;
}

/* ---- asynchronous sinks ---------------------------------------------------------------
 *
 * write_lines and write_socket write on a libuv loop (core/io): the harness owns an
 * executor that no source runs on, only for its loop, its backpressure count and its
 * failure flag. lwm_h_pump lets the sinks make progress: at once what is ready, then, while
 * the sinks hold more than the executor's high mark (backpressure: a live job would stop
 * reading), until they have written enough; at the end (final), until every sink has
 * written everything and closed. A sink's failure (message in ctx.error) is WM_ERR. */
int lwm_h_pump(harness *H, int final) {
  wm_exec *e = H->B.exec;
  if (!e) return WM_OK;
  uv_loop_t *loop = wm_exec_loop(e);
  /* (a drain still flushes: only a failure or an abort leaves the sinks as they are) */
  if (!wm_exec_failed(e) && !H->aborted && uv_loop_alive(loop)) {
    if (final) {
      uv_run(loop, UV_RUN_DEFAULT);
    } else {
      uv_run(loop, UV_RUN_NOWAIT);
      while (wm_exec_paused(e) && !wm_exec_stopping(e) && !wm_exec_signal_pending(e) &&
             uv_run(loop, UV_RUN_ONCE) != 0) {
      }
    }
  }
  return wm_exec_failed(e) ? WM_ERR : WM_OK;
}

/* SIGINT, SIGTERM or SIGHUP during a replay (the executor's handler, wm_exec_watch_signals),
 * as in a live job: the first drains (every source ends at once: the open windows fire, the
 * sinks flush, the run succeeds), or with no_drain stops at once ("wmrun: interrupted", exit
 * status 130); a second one exits 130 at once, whatever the replay is doing. The replay asks
 * after every line; the executor's loop, when it runs, may have taken the signal first. */
void lwm_h_replay_signalled(harness *H) {
  if (H->watch) { /* the lab's watcher: any signal stops the replay */
    if (!H->aborted && wm_exec_signal_pending(H->watch)) H->aborted = 1;
    return;
  }
  wm_exec *e = H->B.exec;
  if (!H->signals || H->draining || H->aborted) return;
  if (!wm_exec_signal_pending(e) && !(wm_exec_stopping(e) && !wm_exec_failed(e))) return;
  if (H->no_drain) H->aborted = 1;
  else H->draining = 1;
}

/* ---- method frame ---------------------------------------------------------------------- */

harness *lwm_h_begin(lua_State *L, lwm_frame *fr) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  if (H->closed) luaL_error(L, "the harness is closed");
  if (!H->ready) luaL_error(L, "the harness could not be built");
  if (H->failed) luaL_error(L, "the harness failed earlier: %s", wm_ctx_errtext(&H->B.ctx));
  H->B.downstream_failed = 0;
  lwm_enter(&H->B, L, fr);
  return H;
}

/* Ends a method: on failure raises the pipeline's error (message in ctx.error). */
int lwm_h_end(lua_State *L, harness *H, lwm_frame *fr, int rc, int nres) {
  if (rc != WM_OK) {
    H->failed = 1;
    lwm_leave(&H->B, fr);
    lua_pushstring(L, wm_ctx_errtext(&H->B.ctx));
    return lua_error(L);
  }
  /* results were pushed above the frame: move them down before leaving */
  int first = lua_gettop(L) - nres + 1;
  for (int i = 0; i < nres; i++) lua_copy(L, first + i, fr->top + 1 + i);
  lua_settop(L, fr->top + nres);
  H->B.L = fr->L;
  H->B.msgh = fr->msgh;
  H->B.slots = fr->slots;
  H->B.fns = fr->fns;
  return nres;
}

/* The input (argument idx + 1, 1-based, default 1: h:push's and the others' side) and its
 * channel (argument idx, 1-based, default 1); returns the channel, 0-based. */
static int check_channel(lua_State *L, harness *H, int idx, wm_op **in) {
  if (H->closed || !H->ready) luaL_error(L, "the harness is closed");
  lua_Integer k = luaL_optinteger(L, idx + 1, 1);
  luaL_argcheck(L, k >= 1 && k <= H->ninputs, idx + 1, "no such input");
  *in = H->inputs[k - 1];
  lua_Integer ch = luaL_optinteger(L, idx, 1);
  luaL_argcheck(L, ch >= 1 && ch <= (*in)->comb.n, idx, "no such input channel");
  return (int)ch - 1;
}

/* h:push(record, ts|nil, channel, input) */
static int l_push(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  int64_t ts = lua_isnoneornil(L, 3) ? WM_TIME_MIN : (int64_t)luaL_checkinteger(L, 3);
  wm_op *in;
  int ch = check_channel(L, H, 4, &in);
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  wm_value v;
  int rc;
  if (lwm_to_value(&H->B, 2, &v) != 0) rc = wm_ctx_error(&H->B.ctx, "out of memory");
  else {
    /* with no assigner in the pipeline, the pushed timestamps are the records' times */
    if (H->ntsops == 0 && ts != WM_TIME_MIN) wm_observe_record(in, ts);
    rc = wm_op_input_record(in, ch, &v, ts);
    wm_value_release(&H->B.ctx.host, &v);
    if (rc == WM_OK) rc = lwm_h_pump(H, 0);
  }
  return lwm_h_end(L, H, &fr, rc, 0);
}

/* h:watermark(t, channel, input) */
static int l_watermark(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  int64_t t = (int64_t)luaL_checkinteger(L, 2);
  wm_op *in;
  int ch = check_channel(L, H, 3, &in);
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  return lwm_h_end(L, H, &fr, wm_op_input_watermark(in, ch, t), 0);
}

/* h:status(channel, idle, input) */
static int l_status(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  wm_op *in;
  lua_settop(L, 4);
  lua_rotate(L, 3, 1); /* (channel, input, idle): check_channel's order */
  int ch = check_channel(L, H, 2, &in);
  int idle = lua_toboolean(L, 4);
  lua_settop(L, 1);
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  return lwm_h_end(L, H, &fr, wm_op_input_status(in, ch, idle), 0);
}

/* The first time p + k * step (k >= 0) at or after lim (p < lim), and k: WM_TIME_MAX (never)
 * when past the end of time. */
static int64_t periodic_from(int64_t p, int64_t step, int64_t lim, uint64_t *k) {
  uint64_t gap = (uint64_t)lim - (uint64_t)p; /* lim > p: exact in unsigned arithmetic */
  uint64_t n = gap / (uint64_t)step + (gap % (uint64_t)step != 0);
  *k = n;
  __int128 at = (__int128)p + (__int128)n * step; /* below 2^65: no overflow */
  return at >= WM_TIME_MAX ? WM_TIME_MAX : (int64_t)at;
}

/* Runs everything due at or before `upto`, in time order: processing-time timers, then
 * idleness timeouts, then periodic watermarks. The clock jumps from one event that may
 * change something to the next: the periodic emits of a settled assigner
 * (wm_tsop_periodic_settled: they would give its last watermark again) before the next other
 * event are skipped in one step and counted, so a gap of 10^12 ms costs as much as one of
 * 200 ms. A time of WM_TIME_MAX never comes due: a periodic emit or idleness timeout
 * past the end of time is not. During a replay that watches signals, a signal stops the
 * clock where it is (returns WM_OK with H->now < upto; the caller asks lwm_h_replay_signalled). */
int lwm_h_advance_to(harness *H, int64_t upto) {
  wm_ctx *ctx = &H->B.ctx;
  for (uint64_t step = 0;; step++) {
    if ((H->signals || H->watch) && (step & 255) == 255) {
      lwm_h_replay_signalled(H);
      if (H->draining || H->aborted) return WM_OK;
    }
    int64_t next = WM_TIME_MAX, t;
    int settled = 0, timer = wm_timers_due(H->pt, upto, &t);
    if (timer) next = t;
    for (int i = 0; i < H->ntsops; i++) {
      wm_op *op = H->tsops[i];
      int64_t d = wm_tsop_idle_deadline(op);
      if (d < next) next = d;
      if (op->ended || H->interval <= 0) continue;
      if (wm_tsop_periodic_settled(op)) settled = 1;
      else if (H->next_periodic[i] < next) next = H->next_periodic[i];
    }
    if (settled) { /* skip their emits before the next other event (or past upto) */
      int64_t lim = next <= upto ? next : wm_time_add_sat(upto, 1);
      for (int i = 0; i < H->ntsops; i++) {
        wm_op *op = H->tsops[i];
        if (op->ended || !wm_tsop_periodic_settled(op)) continue;
        if (H->next_periodic[i] < lim) {
          uint64_t k;
          H->next_periodic[i] = periodic_from(H->next_periodic[i], H->interval, lim, &k);
          wm_tsop_skip_periodic(op, k);
        }
        if (H->next_periodic[i] < next) next = H->next_periodic[i];
      }
    }
    if (next > upto || (next == WM_TIME_MAX && !timer)) break;
    if (next > H->now) H->now = next;
    const wm_timer_entry *ents;
    size_t n;
    while (wm_timers_pop(H->pt, H->now, &t, &ents, &n)) {
      for (size_t k = 0; k < n; k++) {
        wm_op *op = ctx->ops[ents[k].payload];
        if (op->vt->processing_time) {
          int rc = op->vt->processing_time(op, t);
          if (rc != WM_OK) return rc;
        }
      }
    }
    for (int i = 0; i < H->ntsops; i++) {
      wm_op *op = H->tsops[i];
      int rc = wm_tsop_check_idle(op, H->now);
      if (rc != WM_OK) return rc;
      if (H->interval > 0 && H->next_periodic[i] <= H->now && H->next_periodic[i] != WM_TIME_MAX) {
        uint64_t k; /* the next one after now, in phase */
        H->next_periodic[i] =
            periodic_from(H->next_periodic[i], H->interval, wm_time_add_sat(H->now, 1), &k);
        if (!op->ended && !wm_tsop_is_idle(op) && (rc = wm_tsop_periodic(op)) != WM_OK)
          return rc;
      }
    }
  }
  if (upto > H->now) H->now = upto;
  return WM_OK;
}

/* h:advance_processing_time(ms) */
static int l_advance(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  lua_Integer ms = luaL_checkinteger(L, 2);
  luaL_argcheck(L, ms >= 0, 2, "processing time cannot go back");
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  return lwm_h_end(L, H, &fr, lwm_h_advance_to(H, wm_time_add_sat(H->now, (int64_t)ms)), 0);
}

/* h:finish(): the end of input (MAX) on every channel of every input */
static int l_finish(lua_State *L) {
  lwm_frame fr;
  harness *H = lwm_h_begin(L, &fr);
  int rc = WM_OK;
  H->fed = 1;
  if (!H->finished) {
    H->finished = 1;
    for (int k = 0; k < H->ninputs && rc == WM_OK; k++)
      for (int ch = 0; ch < H->inputs[k]->comb.n && rc == WM_OK; ch++)
        rc = wm_op_input_watermark(H->inputs[k], ch, WM_TIME_MAX);
    if (rc == WM_OK) rc = lwm_h_pump(H, 1); /* the sinks write everything and close */
  }
  return lwm_h_end(L, H, &fr, rc, 0);
}

/* h:take(tag) -> values, timestamps (false = none); resets the list */
static int l_take(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  const char *tag = luaL_optstring(L, 2, "");
  if (H->closed || !H->ready) return luaL_error(L, "the harness is closed");
  lwm_enter(&H->B, L, &fr);
  lwm_push_fn(&H->B, H->outputs);
  int known = lua_getfield(L, -1, tag) == LUA_TTABLE;
  if (!known) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
  }
  lua_getfield(L, -1, "values");
  lua_getfield(L, -2, "ts");
  if (known) { /* fresh lists for the next call */
    lua_newtable(L);
    lua_setfield(L, -4, "values");
    lua_newtable(L);
    lua_setfield(L, -4, "ts");
  }
  lua_pushboolean(L, known);
  return lwm_h_end(L, H, &fr, WM_OK, 3);
}

/* h:metrics() -> list of {name, kind, records_in, records_out, late_records_dropped,
 * late_records_side_output, side_outputs = {tag = n}, watermark, idle, open_windows, keys,
 * keys_expired, event_timers, processing_timers, inputs = {{records_in,
 * late_records_dropped, late_records_side_output, watermark, idle} x 2} (two-input
 * operators)} */
static int l_metrics(lua_State *L) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  if (H->closed || !H->ready) return luaL_error(L, "the harness is closed");
  wm_ctx *ctx = &H->B.ctx;
  lua_createtable(L, (int)ctx->nops, 0);
  int k = 0;
  for (size_t i = 0; i < ctx->nops; i++) {
    wm_op *op = ctx->ops[i];
    if (op->vt == &capture_vt) continue;
    lua_createtable(L, 0, 10);
    lua_pushstring(L, op->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, op->vt->kind);
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, (lua_Integer)op->m.records_in);
    lua_setfield(L, -2, "records_in");
    lua_pushinteger(L, (lua_Integer)op->m.records_out);
    lua_setfield(L, -2, "records_out");
    lua_pushinteger(L, (lua_Integer)op->m.late_dropped);
    lua_setfield(L, -2, "late_records_dropped");
    lua_pushinteger(L, (lua_Integer)op->m.late_side);
    lua_setfield(L, -2, "late_records_side_output");
    lua_createtable(L, 0, op->nports - 1); /* {tag = records} of its side outputs */
    for (int p = 1; p < op->nports; p++) {
      if (!op->ports[p].side) continue;
      lua_pushinteger(L, (lua_Integer)op->ports[p].records);
      lua_setfield(L, -2, op->ports[p].tag);
    }
    lua_setfield(L, -2, "side_outputs");
    lua_pushinteger(L, (lua_Integer)op->m.parse_errors);
    lua_setfield(L, -2, "parse_errors");
    lua_pushinteger(L, (lua_Integer)op->wm);
    lua_setfield(L, -2, "watermark");
    lua_pushboolean(L, wm_op_is_tsop(op) ? wm_tsop_is_idle(op) : op->comb.out_idle);
    lua_setfield(L, -2, "idle");
    if (strcmp(op->vt->kind, "window") == 0) {
      lua_pushinteger(L, (lua_Integer)wm_winop_open_windows(op));
      lua_setfield(L, -2, "open_windows");
    }
    if (op->in2 != INT_MAX) { /* a two-input operator: inputs = {input 1's, input 2's} */
      lua_createtable(L, 2, 0);
      for (int in = 0; in < 2; in++) {
        bool idle;
        int64_t w = wm_op_input_wm(op, in, &idle);
        lua_createtable(L, 0, 5);
        lua_pushinteger(L, (lua_Integer)op->m.in[in].records);
        lua_setfield(L, -2, "records_in");
        lua_pushinteger(L, (lua_Integer)op->m.in[in].late_dropped);
        lua_setfield(L, -2, "late_records_dropped");
        lua_pushinteger(L, (lua_Integer)op->m.in[in].late_side);
        lua_setfield(L, -2, "late_records_side_output");
        lua_pushinteger(L, (lua_Integer)w);
        lua_setfield(L, -2, "watermark");
        lua_pushboolean(L, idle);
        lua_setfield(L, -2, "idle");
        lua_rawseti(L, -2, in + 1);
      }
      lua_setfield(L, -2, "inputs");
    }
    lwm_join_metrics(L, op);
    lwm_sqllookup_metrics(L, op);
    if (wm_op_is_keyedop(op)) {
      lua_pushinteger(L, (lua_Integer)wm_keyedop_keys(op));
      lua_setfield(L, -2, "keys");
      lua_pushinteger(L, (lua_Integer)wm_keyedop_expired(op));
      lua_setfield(L, -2, "keys_expired");
      lua_pushinteger(L, (lua_Integer)wm_keyedop_timers(op, WM_TIME_EVENT));
      lua_setfield(L, -2, "event_timers");
      lua_pushinteger(L, (lua_Integer)wm_keyedop_timers(op, WM_TIME_PROCESSING));
      lua_setfield(L, -2, "processing_timers");
    }
    lua_rawseti(L, -2, ++k);
  }
  return 1;
}

/* h:current_watermark(): the watermark the result stream has emitted */
static int l_current_watermark(lua_State *L) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  if (H->closed || !H->ready) return luaL_error(L, "the harness is closed");
  lua_pushinteger(L, (lua_Integer)(H->capture ? H->capture->wm : WM_TIME_MIN));
  return 1;
}

/* h:processing_time(): the virtual clock */
static int l_processing_time(lua_State *L) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  lua_pushinteger(L, (lua_Integer)H->now);
  return 1;
}

static void h_free(lua_State *L, harness *H) {
  if (H->closed) return;
  H->closed = 1;
  lwm_frame fr;
  lwm_enter(&H->B, L, &fr);
  if (H->tl) wm_timeline_detach(H->tl, &H->B.ctx);
  H->B.ctx.observe = NULL; /* the keyed events' observer (H->rt), freed below */
  /* the sinks' handles are closed (and their callbacks run) while the sinks still exist */
  wm_exec_free(H->B.exec);
  H->B.exec = NULL;
  wm_ctx_free(&H->B.ctx); /* releases slots while the slot table is on the stack */
  lwm_leave(&H->B, &fr);
  H->B.L = L;
  lwm_unregister(&H->B);
  wm_timers_free(H->pt);
  H->pt = NULL;
  if (!H->tl_borrowed) wm_timeline_free(H->tl);
  H->tl = NULL;
  lwm_rectrace_free(H->rt); /* after the context: nothing observes any more */
  H->rt = NULL;
  free(H->inputs);
  H->inputs = NULL;
  free(H->tsops);
  free(H->next_periodic);
  free(H->B.refs);
  free(H->B.free_slots);
  H->tsops = NULL;
  H->next_periodic = NULL;
  H->B.refs = NULL;
  H->B.free_slots = NULL;
}

/* h:recording(): the run so far as lwm_timeline_push's table (lua/wm/timeline.lua) */
static int l_recording(lua_State *L) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  if (H->closed) return luaL_error(L, "the harness is closed");
  if (!H->tl) return luaL_error(L, "timeline: the harness ran a replay (h:replay records no timeline)");
  lwm_timeline_push(L, H->tl);
  return 1;
}

/* h:snapshot() -> {[part] = bytes}, the virtual clock, {next periodic emit per assigner}:
 * every operator's state as a checkpoint holds it (wm.testing packs it into a string).
 * Refuses, as a checkpointing job does at start, Lua parts whose state it cannot hold. */
static int l_snapshot(lua_State *L) {
  lwm_frame fr;
  harness *H = lwm_h_begin(L, &fr);
  int rc = lwm_check_checkpointable(&H->B);
  if (rc == WM_OK) rc = lwm_snapshot_parts(&H->B, 0);
  if (rc != WM_OK) {
    lwm_leave(&H->B, &fr);
    lua_pushstring(L, wm_ctx_errtext(&H->B.ctx)); /* the harness goes on: nothing changed */
    return lua_error(L);
  }
  lua_pushinteger(L, (lua_Integer)H->now);
  lua_createtable(L, H->ntsops, 0);
  for (int i = 0; i < H->ntsops; i++) {
    lua_pushinteger(L, (lua_Integer)H->next_periodic[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return lwm_h_end(L, H, &fr, WM_OK, 3);
}

/* h:restore(parts, now, periodic): what h:snapshot gave, into a harness of the same job
 * that has not been fed yet. */
static int l_restore(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer now = luaL_checkinteger(L, 3);
  luaL_checktype(L, 4, LUA_TTABLE);
  if (H->fed) return luaL_error(L, "restore: this harness has been fed already (restore into a "
                                   "new harness of the same job, before anything else)");
  if ((lua_Integer)lua_rawlen(L, 4) != H->ntsops)
    return luaL_error(L, "restore: the snapshot has %d timestamp assigner(s), this job %d",
                      (int)lua_rawlen(L, 4), H->ntsops);
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  H->now = (int64_t)now; /* first: restored operators register their timers at their times */
  for (int i = 0; i < H->ntsops; i++) {
    lua_rawgeti(L, 4, i + 1);
    H->next_periodic[i] = (int64_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  return lwm_h_end(L, H, &fr, lwm_restore_parts(&H->B, 0, 2), 0);
}

static int l_close(lua_State *L) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  h_free(L, H);
  return 0;
}

/* core.harness(env, {input = id, result = id, channels = n, processing_time = t0,
 *                    side_outputs = {tag, ...}, trace = bool}) */
int lwm_harness_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  harness *H = lua_newuserdatauv(L, sizeof *H, 1); /* 3 */
  memset(H, 0, sizeof *H);
  H->closed = 1; /* until the bridge exists */
  luaL_setmetatable(L, HARNESS_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 3, 1);
  H->pt = wm_timers_new();
  if (!H->pt) return luaL_error(L, "out of memory");
  lwm_bridge *B = &H->B;
  if (lwm_bridge_init(B, L) != 0) return lua_error(L); /* 4 msgh, 5 slots, 6 fns */
  H->closed = 0;
  H->channels = (int)lwm_get_int(L, 2, "channels", 1);
  H->now = (int64_t)lwm_get_int(L, 2, "processing_time", 0);
  H->interval = (int64_t)lwm_get_int(L, 1, "watermark_interval", 200);
  /* an executor for its loop only (asynchronous sinks, lwm_h_pump); its clock and timer service
   * are replaced by the harness's virtual ones below */
  wm_exec_config ecfg = {.watermark_interval = H->interval};
  B->exec = wm_exec_new(&B->ctx, &ecfg);
  if (!B->exec) {
    lua_pushstring(L, wm_ctx_errtext(&B->ctx));
    h_free(L, H);
    return lua_error(L);
  }
  B->ctx.now = h_now;
  B->ctx.now_ud = H;
  B->ctx.pt_register = h_pt_register;
  B->ctx.pt_ud = H;
  /* true, "text", "json" or "json,records" (--trace-watermarks=...) */
  lua_getfield(L, 2, "trace");
  int tmode = lwm_trace_mode(lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL,
                             lua_toboolean(L, -1));
  lua_pop(L, 1);
  if (tmode < 0) {
    h_free(L, H);
    return luaL_error(L, "trace: expected true, \"text\", \"json\" or \"json,records\"");
  }
  if (tmode > 0) B->ctx.trace = tmode >= 2 ? lwm_trace_json_fn : lwm_trace_fn;
  if (tmode == 3) { /* the keyed events, before the recorder that chains them */
    if (!(H->rt = lwm_rectrace_new(0))) { /* unbuffered: in step with the calls */
      h_free(L, H);
      return luaL_error(L, "out of memory");
    }
    B->ctx.observe = lwm_trace_records_fn;
    B->ctx.observe_ud = H->rt;
  }
  /* the run is always recorded (bounded memory) so that h:timeline can draw it; into
   * wmrun's recorder when it gives one (--timeline of a replayed job) */
  lua_getfield(L, 2, "timeline");
  if (lua_islightuserdata(L, -1)) {
    H->tl = lua_touserdata(L, -1);
    H->tl_borrowed = 1;
  }
  lua_getfield(L, 2, "title");
  if (!H->tl)
    H->tl = wm_timeline_new(lua_isstring(L, -1) ? lua_tostring(L, -1) : "wm.testing harness");
  lua_pop(L, 2);
  if (!H->tl) {
    h_free(L, H);
    return luaL_error(L, "out of memory");
  }
  wm_timeline_attach(H->tl, &B->ctx);
  lua_newtable(L);
  H->outputs = ++B->nfns;
  lua_rawseti(L, B->fns, H->outputs);
  wm_op **outop = NULL;
  int *outport = NULL;
  lua_Integer n = 0;
  int rc = lwm_build(B, 1, &outop, &outport, &n);
  lua_Integer in = lwm_get_int(L, 2, "input", 0), res = lwm_get_int(L, 2, "result", 0);
  /* inputs = {id, ...}: several inputs (a replayed job's sources); input: the first */
  lua_getfield(L, 2, "inputs");
  int ninputs = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  if (rc == WM_OK && ninputs == 0) {
    ninputs = 1;
  } else if (rc == WM_OK) {
    lua_rawgeti(L, -1, 1);
    in = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  if (rc == WM_OK && (in < 1 || in > n || res < 0 || res > n))
    rc = wm_ctx_error(&B->ctx, "harness: bad input or result node");
  if (rc == WM_OK && !(H->inputs = calloc((size_t)ninputs, sizeof *H->inputs)))
    rc = wm_ctx_error(&B->ctx, "out of memory");
  for (int k = 0; rc == WM_OK && k < ninputs; k++) {
    lua_Integer id = in;
    if (k > 0) {
      lua_rawgeti(L, -1, k + 1);
      id = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    if (id < 1 || id > n) rc = wm_ctx_error(&B->ctx, "harness: bad input node");
    else H->inputs[H->ninputs++] = outop[id];
  }
  lua_pop(L, 1);
  /* a replayed source with time = "ingestion" is followed by its ingestion-time assigner
   * (lwm_graph.c), which is the node's output: its lines go into the source's own operator,
   * the one that feeds it */
  for (int k = 0; rc == WM_OK && k < H->ninputs; k++)
    if (wm_op_is_tsop(H->inputs[k])) {
      for (size_t i = 0; i < B->ctx.nops; i++) {
        const wm_op *o = B->ctx.ops[i];
        if (o->nports > 0 && o->ports[0].n == 1 && o->ports[0].edges[0].to == H->inputs[k]) {
          H->inputs[k] = B->ctx.ops[i];
          break;
        }
      }
    }
  if (rc == WM_OK) H->input = H->inputs[0];
  if (rc == WM_OK && res > 0) { /* result 0: none (a replayed job's sinks are its own) */
    wm_op *result = outop[res];
    H->capture = capture_new(H, result, outport[res], "");
    if (!H->capture) rc = WM_ERR;
    /* side outputs: declared tags get their port now, so nothing sent there is lost */
    lua_getfield(L, 2, "side_outputs");
    for (lua_Integer i = 1; rc == WM_OK && lua_istable(L, -1) && i <= (lua_Integer)lua_rawlen(L, -1); i++) {
      lua_rawgeti(L, -1, i);
      if (lua_type(L, -1) == LUA_TSTRING && wm_op_port(result, lua_tostring(L, -1)) < 0)
        rc = wm_ctx_error(&B->ctx, "out of memory");
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    for (int p = 1; rc == WM_OK && p < result->nports; p++)
      if (!capture_new(H, result, p, result->ports[p].tag)) rc = WM_ERR;
  }
  free(outop);
  free(outport);
  if (rc == WM_OK) rc = wm_ctx_prepare(&B->ctx);
  for (size_t i = 0; rc == WM_OK && i < B->ctx.nops; i++) {
    if (!wm_op_is_tsop(B->ctx.ops[i])) continue;
    wm_op **t = realloc(H->tsops, (size_t)(H->ntsops + 1) * sizeof *t);
    int64_t *np = t ? realloc(H->next_periodic, (size_t)(H->ntsops + 1) * sizeof *np) : NULL;
    if (t) H->tsops = t;
    if (np) H->next_periodic = np;
    if (!t || !np) {
      rc = wm_ctx_error(&B->ctx, "out of memory");
      break;
    }
    H->tsops[H->ntsops] = B->ctx.ops[i];
    H->next_periodic[H->ntsops++] = wm_time_add_sat(H->now, H->interval);
  }
  if (rc != WM_OK) {
    lua_pushstring(L, wm_ctx_errtext(&B->ctx));
    h_free(L, H);
    return lua_error(L);
  }
  H->ready = 1;
  lua_settop(L, 3);
  return 1;
}

/* h:print_metrics(): wmrun --metrics' table on stderr */
static int l_print_metrics(lua_State *L) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  if (H->closed || !H->ready) return luaL_error(L, "the harness is closed");
  lwm_print_metrics(&H->B, stderr);
  return 0;
}

/* (h:replay and h:replay_inputs are added by lwm_replay_open) */
static const luaL_Reg harness_methods[] = {
    {"push", l_push},
    {"watermark", l_watermark},
    {"status", l_status},
    {"advance_processing_time", l_advance},
    {"finish", l_finish},
    {"take", l_take},
    {"metrics", l_metrics},
    {"current_watermark", l_current_watermark},
    {"processing_time", l_processing_time},
    {"recording", l_recording},
    {"snapshot", l_snapshot},
    {"restore", l_restore},
    {"print_metrics", l_print_metrics},
    {"close", l_close},
    {NULL, NULL},
};

void lwm_harness_open(lua_State *L) {
  if (luaL_newmetatable(L, HARNESS_MT)) {
    luaL_newlib(L, harness_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
}
