/* wm.testing's C part: drives the core graph that wmrun would build, with the clock and
 * the processing-time timer service replaced by virtual ones (api.md: wm.testing).
 *
 * The harness is a userdata holding a bridge. Its Lua tables (message handler, slots,
 * fns) are registered under the bridge's address and pushed again at the start of every
 * method with lwm_enter, because each method runs on its own stack frame. User value 1
 * keeps the plan (operator names and tags point into it) alive.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/wm_keyedop.h"
#include "graph/wm_observe.h"
#include "time/wm_timer.h"
#include "lwm.h"
#include "lwm_timeline.h"

#define HARNESS_MT "wm.Harness"

typedef struct harness {
  lwm_bridge B;
  int ready, failed, closed, finished;
  wm_op *input;
  int channels;
  wm_op *capture; /* the result's main output */
  int outputs;    /* fns index of the outputs table: tag ("" = main) -> {values, ts} */
  int64_t now;
  int64_t interval;
  wm_timers *pt;  /* processing-time timers: payload = operator index */
  uint64_t pt_seq;
  wm_op **tsops;
  int64_t *next_periodic;
  int ntsops;
  wm_timeline *tl; /* records the run for h:timeline(path) */
} harness;

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

/* ---- method frame ---------------------------------------------------------------------- */

static harness *h_begin(lua_State *L, lwm_frame *fr) {
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  if (H->closed) luaL_error(L, "the harness is closed");
  if (!H->ready) luaL_error(L, "the harness could not be built");
  if (H->failed) luaL_error(L, "the harness failed earlier: %s", H->B.ctx.err);
  H->B.downstream_failed = 0;
  lwm_enter(&H->B, L, fr);
  return H;
}

/* Ends a method: on failure raises the pipeline's error (message in ctx.err). */
static int h_end(lua_State *L, harness *H, lwm_frame *fr, int rc, int nres) {
  if (rc != WM_OK) {
    H->failed = 1;
    lwm_leave(&H->B, fr);
    lua_pushstring(L, H->B.ctx.err);
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

static int check_channel(lua_State *L, harness *H, int idx) {
  lua_Integer ch = luaL_optinteger(L, idx, 1);
  luaL_argcheck(L, ch >= 1 && ch <= H->channels, idx, "no such input channel");
  return (int)ch - 1;
}

/* h:push(record, ts|nil, channel) */
static int l_push(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  int64_t ts = lua_isnoneornil(L, 3) ? WM_TIME_MIN : (int64_t)luaL_checkinteger(L, 3);
  int ch = check_channel(L, H, 4);
  H = h_begin(L, &fr);
  wm_value v;
  int rc;
  if (lwm_to_value(&H->B, 2, &v) != 0) rc = wm_ctx_error(&H->B.ctx, "out of memory");
  else {
    /* with no assigner in the pipeline, the pushed timestamps are the records' times */
    if (H->ntsops == 0 && ts != WM_TIME_MIN) wm_observe_record(H->input, ts);
    rc = wm_op_input_record(H->input, ch, &v, ts);
    wm_value_release(&H->B.ctx.host, &v);
  }
  return h_end(L, H, &fr, rc, 0);
}

/* h:watermark(t, channel) */
static int l_watermark(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  int64_t t = (int64_t)luaL_checkinteger(L, 2);
  int ch = check_channel(L, H, 3);
  H = h_begin(L, &fr);
  return h_end(L, H, &fr, wm_op_input_watermark(H->input, ch, t), 0);
}

/* h:status(channel, idle) */
static int l_status(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  int ch = check_channel(L, H, 2);
  int idle = lua_toboolean(L, 3);
  H = h_begin(L, &fr);
  return h_end(L, H, &fr, wm_op_input_status(H->input, ch, idle), 0);
}

/* Runs everything due at or before `upto`, in time order: processing-time timers, then
 * idleness timeouts, then periodic watermarks. */
static int advance_to(harness *H, int64_t upto) {
  wm_ctx *ctx = &H->B.ctx;
  for (;;) {
    int64_t next = WM_TIME_MAX, t;
    if (wm_timers_due(H->pt, upto, &t)) next = t;
    for (int i = 0; i < H->ntsops; i++) {
      wm_op *op = H->tsops[i];
      int64_t d = wm_tsop_idle_deadline(op);
      if (d < next) next = d;
      if (!op->ended && H->interval > 0 && H->next_periodic[i] < next) next = H->next_periodic[i];
    }
    if (next > upto) break;
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
      if (H->interval > 0 && H->next_periodic[i] <= H->now) {
        while (H->next_periodic[i] <= H->now) H->next_periodic[i] += H->interval;
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
  H = h_begin(L, &fr);
  return h_end(L, H, &fr, advance_to(H, wm_time_add_sat(H->now, (int64_t)ms)), 0);
}

/* h:finish(): the end of input (MAX) on every channel */
static int l_finish(lua_State *L) {
  lwm_frame fr;
  harness *H = h_begin(L, &fr);
  int rc = WM_OK;
  if (!H->finished) {
    H->finished = 1;
    for (int ch = 0; ch < H->channels && rc == WM_OK; ch++)
      rc = wm_op_input_watermark(H->input, ch, WM_TIME_MAX);
  }
  return h_end(L, H, &fr, rc, 0);
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
  return h_end(L, H, &fr, WM_OK, 3);
}

/* h:metrics() -> list of {name, kind, records_in, records_out, late_records_dropped,
 * watermark, idle, open_windows, keys, event_timers, processing_timers} */
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
    if (wm_op_is_keyedop(op)) {
      lua_pushinteger(L, (lua_Integer)wm_keyedop_keys(op));
      lua_setfield(L, -2, "keys");
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
  lua_pushinteger(L, (lua_Integer)H->capture->wm);
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
  wm_ctx_free(&H->B.ctx); /* releases slots while the slot table is on the stack */
  lwm_leave(&H->B, &fr);
  H->B.L = L;
  lwm_unregister(&H->B);
  wm_timers_free(H->pt);
  H->pt = NULL;
  wm_timeline_free(H->tl);
  H->tl = NULL;
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
  if (H->closed || !H->tl) return luaL_error(L, "the harness is closed");
  lwm_timeline_push(L, H->tl);
  return 1;
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
  lwm_bridge_init(B, L); /* 4 msgh, 5 slots, 6 fns */
  H->closed = 0;
  H->channels = (int)lwm_get_int(L, 2, "channels", 1);
  H->now = (int64_t)lwm_get_int(L, 2, "processing_time", 0);
  H->interval = (int64_t)lwm_get_int(L, 1, "watermark_interval", 200);
  B->ctx.now = h_now;
  B->ctx.now_ud = H;
  B->ctx.pt_register = h_pt_register;
  B->ctx.pt_ud = H;
  lua_getfield(L, 2, "trace");
  if (lua_toboolean(L, -1)) B->ctx.trace = lwm_trace_fn;
  lua_pop(L, 1);
  /* the run is always recorded (bounded memory) so that h:timeline can draw it */
  lua_getfield(L, 2, "title");
  H->tl = wm_timeline_new(lua_isstring(L, -1) ? lua_tostring(L, -1) : "wm.testing harness");
  lua_pop(L, 1);
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
  if (rc == WM_OK && (in < 1 || in > n || res < 1 || res > n))
    rc = wm_ctx_error(&B->ctx, "harness: bad input or result node");
  if (rc == WM_OK) {
    H->input = outop[in];
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
    lua_pushstring(L, B->ctx.err);
    h_free(L, H);
    return lua_error(L);
  }
  H->ready = 1;
  lua_settop(L, 3);
  return 1;
}

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
