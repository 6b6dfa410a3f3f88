/* Time-related operators from the plan: the timestamp/watermark assigner with custom
 * generators written in Lua, keyed process functions with timers, rolling keyed
 * aggregations, and the harness's input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/wm_keyedop.h"
#include "lwm.h"

/* Stores the value on top of the stack in the fns table; returns its index. */
static int store_fn(lwm_bridge *B) {
  lua_rawseti(B->L, B->fns, ++B->nfns);
  return B->nfns;
}

/* An integer number of ms from the argument at idx, or a Lua error naming fn. */
static int64_t check_millis(lua_State *L, int idx, const char *fn, const char *what) {
  if (lua_isinteger(L, idx)) return (int64_t)lua_tointeger(L, idx);
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number n = lua_tonumber(L, idx);
    if (floor(n) == n && fabs(n) < 9.2e18) return (int64_t)n;
    luaL_error(L, "%s: %s must be an integer number of ms, got %f", fn, what, (double)n);
  }
  luaL_error(L, "%s: %s must be an integer number of ms, got %s", fn, what,
             luaL_typename(L, idx));
  return 0;
}

/* ---- custom watermark generators ---------------------------------------------------- */

typedef struct genlua {
  lwm_opinfo oi; /* fn: the generator table; fn2: on_event; fn3: on_periodic_emit; fn4: out */
  wm_op *op;
} genlua;

/* out:emit_watermark(t) */
static int l_gen_emit(lua_State *L) {
  genlua *g = lua_touserdata(L, lua_upvalueindex(1));
  int64_t t = check_millis(L, 2, "emit_watermark", "the watermark");
  lwm_bridge *B = g->oi.B;
  lwm_frame fr;
  lwm_enter(B, L, &fr);
  int rc = wm_tsop_emit_watermark(g->op, t);
  lwm_leave(B, &fr);
  return lwm_callback_done(B, L, rc);
}

/* out:mark_idle() / out:mark_active() */
static int l_gen_idle(lua_State *L) {
  genlua *g = lua_touserdata(L, lua_upvalueindex(1));
  int active = lua_toboolean(L, lua_upvalueindex(2));
  lwm_bridge *B = g->oi.B;
  lwm_frame fr;
  lwm_enter(B, L, &fr);
  int rc = active ? wm_tsop_mark_active(g->op) : wm_tsop_mark_idle(g->op);
  lwm_leave(B, &fr);
  return lwm_callback_done(B, L, rc);
}

static int gen_event(void *ud, wm_op *op, const wm_value *rec, int64_t ts) {
  genlua *g = ud;
  lwm_bridge *B = g->oi.B;
  g->op = op;
  g->oi.op = op;
  lwm_push_fn(B, g->oi.fn2);
  lwm_push_fn(B, g->oi.fn);
  lwm_push_value(B, rec);
  lua_pushinteger(B->L, (lua_Integer)ts);
  lwm_push_fn(B, g->oi.fn4);
  return lwm_call(&g->oi, 4, 0, rec);
}

static int gen_periodic(void *ud, wm_op *op) {
  genlua *g = ud;
  lwm_bridge *B = g->oi.B;
  g->op = op;
  g->oi.op = op;
  lwm_push_fn(B, g->oi.fn3);
  lwm_push_fn(B, g->oi.fn);
  lwm_push_fn(B, g->oi.fn4);
  return lwm_call(&g->oi, 2, 0, NULL);
}

static int gen_noop(lua_State *L) {
  (void)L;
  return 0;
}

/* Expects the generator table on top of the stack (popped). 0 or -1. */
static int wmgen_lua(wm_wmgen *gen, lwm_opinfo *oi, wm_op **opp) {
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  genlua *g = realloc(oi, sizeof *g);
  if (!g) {
    lwm_opinfo_free(oi);
    lua_pop(L, 1);
    return -1;
  }
  g->op = NULL;
  (void)opp;
  lua_getfield(L, -1, "on_event");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushcfunction(L, gen_noop);
  }
  g->oi.fn2 = store_fn(B);
  lua_getfield(L, -1, "on_periodic_emit");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushcfunction(L, gen_noop);
  }
  g->oi.fn3 = store_fn(B);
  g->oi.fn = store_fn(B); /* the generator itself */
  lua_createtable(L, 0, 3); /* out */
  lua_pushlightuserdata(L, g);
  lua_pushcclosure(L, l_gen_emit, 1);
  lua_setfield(L, -2, "emit_watermark");
  lua_pushlightuserdata(L, g);
  lua_pushboolean(L, 0);
  lua_pushcclosure(L, l_gen_idle, 2);
  lua_setfield(L, -2, "mark_idle");
  lua_pushlightuserdata(L, g);
  lua_pushboolean(L, 1);
  lua_pushcclosure(L, l_gen_idle, 2);
  lua_setfield(L, -2, "mark_active");
  g->oi.fn4 = store_fn(B);
  gen->on_event = gen_event;
  gen->on_periodic = gen_periodic;
  gen->free = lwm_opinfo_free;
  gen->ud = g;
  return 0;
}

wm_op *lwm_build_assign(lwm_bridge *B, int node, const char *name, const char *where,
                        int64_t interval) {
  lua_State *L = B->L;
  wm_tsop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.interval = interval;
  lua_getfield(L, node, "strategy");
  int s = lua_gettop(L);
  const char *kind = lwm_get_str(L, s, "kind");
  cfg.delay = (int64_t)lwm_get_int(L, s, "delay", 0);
  cfg.idle_timeout = (int64_t)lwm_get_int(L, s, "idleness", 0);
  if (cfg.idle_timeout < 0) {
    lua_pop(L, 1);
    wm_ctx_error(&B->ctx, "%s: with_idleness: the timeout must not be negative", where);
    return NULL;
  }
  cfg.builtin = kind && strcmp(kind, "none") == 0 ? WM_GEN_NONE : WM_GEN_BOUNDED;
  const char *field = lwm_get_str(L, s, "ts_field");
  if (field) {
    if (wm_tsx_field(&cfg.tsx, field, (int64_t)lwm_get_int(L, s, "ts_scale", 1)) != 0) goto oom;
  } else {
    lua_getfield(L, s, "ts_fn");
    int has = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (has) {
      lwm_opinfo *oi = lwm_opinfo_new(B, where);
      if (!oi) goto oom;
      oi->fn = lwm_get_fn(B, s, "ts_fn");
      lwm_tsx_lua(&cfg.tsx, oi);
    }
  }
  if (kind && strcmp(kind, "custom") == 0) {
    /* one generator per assigner instance: call the factory now */
    const char *gname = lwm_get_str(L, s, "gen_where");
    lua_getfield(L, s, "factory");
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, B->instance > 0 ? B->instance : 1);
    lua_setfield(L, -2, "subtask");
    lua_pushinteger(L, B->parallelism > 0 ? B->parallelism : 1);
    lua_setfield(L, -2, "parallelism");
    if (lua_pcall(L, 1, 1, B->msgh) != LUA_OK) {
      wm_ctx_error(&B->ctx, "%s: the watermark generator factory (for_generator at %s) failed: %s",
                   where, gname ? gname : "?", lua_tostring(L, -1));
      lua_pop(L, 2);
      if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
      return NULL;
    }
    int ok = lua_istable(L, -1);
    const char *bad = NULL;
    if (ok) {
      lua_getfield(L, -1, "on_event");
      lua_getfield(L, -2, "on_periodic_emit");
      int e = lua_type(L, -2), p = lua_type(L, -1);
      if (e != LUA_TFUNCTION && e != LUA_TNIL) bad = "on_event is not a function";
      else if (p != LUA_TFUNCTION && p != LUA_TNIL) bad = "on_periodic_emit is not a function";
      else if (e == LUA_TNIL && p == LUA_TNIL) bad = "it has neither on_event nor on_periodic_emit";
      ok = bad == NULL;
      lua_pop(L, 2);
    }
    if (!ok) {
      wm_ctx_error(&B->ctx,
                   "%s: the watermark generator factory (for_generator at %s) must return a "
                   "table with on_event(self, record, ts, out) and/or on_periodic_emit(self, "
                   "out) functions, got %s%s",
                   where, gname ? gname : "?",
                   bad ? "a table where " : "a ", bad ? bad : luaL_typename(L, -1));
      lua_pop(L, 2);
      if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
      return NULL;
    }
    char gwhere[600];
    snprintf(gwhere, sizeof gwhere, "%s", gname ? gname : where);
    lwm_opinfo *oi = lwm_opinfo_new(B, gwhere);
    if (!oi || wmgen_lua(&cfg.custom, oi, NULL) != 0) goto oom;
  }
  lua_pop(L, 1);
  return wm_tsop_new(&B->ctx, name, &cfg);
oom:
  lua_settop(L, s - 1);
  if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
  wm_ctx_error(&B->ctx, "out of memory");
  return NULL;
}

/* ---- key selectors from the plan ---------------------------------------------------- */


/* ---- keyed process functions ------------------------------------------------------- */

typedef struct kproc {
  lwm_opinfo oi; /* fn: process_element; fn2: on_timer (0: none); fn3: ctx; fn4: out */
  wm_op *op;
  int64_t ts;    /* timestamp of what out() emits */
} kproc;

static kproc *kproc_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

/* out(value) */
static int l_kp_out(lua_State *L) {
  kproc *k = kproc_of(L);
  lwm_bridge *B = k->oi.B;
  lua_settop(L, 1);
  lwm_frame fr;
  lwm_enter(B, L, &fr);
  wm_value v;
  int rc = lwm_to_value(B, 1, &v) != 0 ? wm_ctx_error(&B->ctx, "out of memory")
                                        : wm_op_emit(k->op, 0, &v, k->ts);
  wm_value_release(&B->ctx.host, &v);
  lwm_leave(B, &fr);
  return lwm_callback_done(B, L, rc);
}

/* ctx:output(tag, value) */
static int l_kp_output(lua_State *L) {
  kproc *k = kproc_of(L);
  lwm_bridge *B = k->oi.B;
  const char *tag = luaL_checkstring(L, 2);
  lua_settop(L, 3);
  int port = wm_op_port(k->op, tag);
  if (port < 0) return luaL_error(L, "out of memory");
  lwm_frame fr;
  lwm_enter(B, L, &fr);
  wm_value v;
  int rc = lwm_to_value(B, 3, &v) != 0 ? wm_ctx_error(&B->ctx, "out of memory")
                                        : wm_op_emit(k->op, port, &v, k->ts);
  wm_value_release(&B->ctx.host, &v);
  lwm_leave(B, &fr);
  return lwm_callback_done(B, L, rc);
}

static const char *const timer_fn_names[4] = {
    "register_event_time_timer", "register_processing_time_timer", "delete_event_time_timer",
    "delete_processing_time_timer"};

/* timer_service:register_*_timer(t) / delete_*_timer(t); upvalue 2: which (0..3) */
static int l_kp_timer(lua_State *L) {
  kproc *k = kproc_of(L);
  int which = (int)lua_tointeger(L, lua_upvalueindex(2));
  const char *fname = timer_fn_names[which];
  int64_t t = check_millis(L, 2, fname, "the time");
  if (which < 2 && !k->oi.fn2)
    return luaL_error(L, "%s: this process function has no on_timer to call (use "
                         "keyed:process{process_element = fn, on_timer = fn})", fname);
  int domain = which % 2 == 0 ? WM_TIME_EVENT : WM_TIME_PROCESSING;
  int rc = which < 2 ? wm_keyedop_register(k->op, domain, t)
                     : wm_keyedop_delete(k->op, domain, t);
  if (rc != WM_OK) return luaL_error(L, "%s: %s", fname, k->oi.B->ctx.err);
  return 0;
}

static int l_kp_watermark(lua_State *L) {
  kproc *k = kproc_of(L);
  lua_pushinteger(L, (lua_Integer)k->op->wm);
  return 1;
}

static int l_kp_now(lua_State *L) {
  kproc *k = kproc_of(L);
  lua_pushinteger(L, (lua_Integer)wm_ctx_now(k->op->ctx));
  return 1;
}

/* Pushes the reused ctx table with the fields of this call. */
static void push_ctx(kproc *k, const wm_value *key, wm_value *state, int64_t ts,
                     const char *domain) {
  lwm_bridge *B = k->oi.B;
  lua_State *L = B->L;
  lwm_push_fn(B, k->oi.fn3);
  lwm_push_value(B, key);
  lua_setfield(L, -2, "key");
  if (ts == WM_TIME_MIN) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)ts);
  lua_setfield(L, -2, "timestamp");
  lwm_push_value(B, state);
  lua_setfield(L, -2, "state");
  if (domain) lua_pushstring(L, domain);
  else lua_pushnil(L);
  lua_setfield(L, -2, "time_domain");
}

/* The key's state is a Lua table (ctx.state), created on first use. */
static int ensure_state(lwm_bridge *B, wm_value *state) {
  if (state->type != WM_NIL) return WM_OK;
  lua_newtable(B->L);
  int rc = lwm_to_value(B, -1, state);
  lua_pop(B->L, 1);
  return rc == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
}

static int kp_element(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                      const wm_value *rec, int64_t ts) {
  kproc *k = ud;
  lwm_bridge *B = k->oi.B;
  k->op = op;
  k->oi.op = op;
  k->ts = ts;
  if (ensure_state(B, state) != WM_OK) return WM_ERR;
  luaL_checkstack(B->L, 6, "wmrun: keyed process");
  lwm_push_fn(B, k->oi.fn);
  lwm_push_value(B, rec);
  push_ctx(k, key, state, ts, NULL);
  lwm_push_fn(B, k->oi.fn4);
  return lwm_call(&k->oi, 3, 0, rec);
}

static int kp_timer(void *ud, wm_op *op, const wm_value *key, wm_value *state, int64_t t,
                    int domain) {
  kproc *k = ud;
  lwm_bridge *B = k->oi.B;
  if (!k->oi.fn2) return WM_OK;
  k->op = op;
  k->oi.op = op;
  /* event-time timers' output carries the timer's time; processing-time output none */
  k->ts = domain == WM_TIME_EVENT ? t : WM_TIME_MIN;
  if (ensure_state(B, state) != WM_OK) return WM_ERR;
  luaL_checkstack(B->L, 6, "wmrun: keyed process");
  lwm_push_fn(B, k->oi.fn2);
  lua_pushinteger(B->L, (lua_Integer)t);
  push_ctx(k, key, state, t, domain == WM_TIME_EVENT ? "event_time" : "processing_time");
  lwm_push_fn(B, k->oi.fn4);
  int rc = lwm_call(&k->oi, 3, 0, NULL);
  if (rc != WM_OK)
    wm_ctx_error_append(&B->ctx, "\n  in on_timer(%lld) (%s time)", (long long)t,
                        domain == WM_TIME_EVENT ? "event" : "processing");
  return rc;
}

static wm_op *build_process(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  if (lwm_build_keysel(B, node, where, &cfg.keysel) != 0) return NULL;
  lwm_opinfo *oi = lwm_opinfo_new(B, where);
  kproc *k = oi ? realloc(oi, sizeof *k) : NULL;
  if (!k) {
    lwm_opinfo_free(oi);
    cfg.keysel.free(cfg.keysel.ud);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  k->op = NULL;
  k->ts = WM_TIME_MIN;
  k->oi.fn = lwm_get_fn(B, node, "fn");
  k->oi.fn2 = lwm_get_fn(B, node, "on_timer");
  /* ctx, reused for every call */
  lua_createtable(L, 0, 8);
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_output, 1);
  lua_setfield(L, -2, "output");
  lua_createtable(L, 0, 6); /* timer_service */
  for (int i = 0; i < 4; i++) {
    lua_pushlightuserdata(L, k);
    lua_pushinteger(L, i);
    lua_pushcclosure(L, l_kp_timer, 2);
    lua_setfield(L, -2, timer_fn_names[i]);
  }
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_watermark, 1);
  lua_setfield(L, -2, "current_watermark");
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_now, 1);
  lua_setfield(L, -2, "current_processing_time");
  lua_setfield(L, -2, "timer_service");
  k->oi.fn3 = store_fn(B);
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_out, 1);
  k->oi.fn4 = store_fn(B);
  cfg.fn.element = kp_element;
  cfg.fn.timer = kp_timer;
  cfg.fn.free = lwm_opinfo_free;
  cfg.fn.ud = k;
  wm_op *op = wm_keyedop_new(&B->ctx, name, &cfg);
  if (op) k->op = k->oi.op = op;
  return op;
}

/* ---- rolling aggregations ------------------------------------------------------------ */

static wm_op *build_rolling(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  const char *agg = lwm_get_str(L, node, "agg");
  static const char *const aggs[] = {"sum", "min", "max", "min_by", "max_by"};
  int kindi = 0;
  for (int i = 0; i < 5; i++)
    if (agg && strcmp(agg, aggs[i]) == 0) kindi = i + 1;
  int rc;
  if (kindi) {
    rc = wm_winfn_builtin(&cfg.rolling, kindi, lwm_get_str(L, node, "field"));
  } else {
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (oi) oi->fn = lwm_get_fn(B, node, "fn");
    rc = oi ? lwm_winfn_lua(&cfg.rolling, oi, "reduce", 0) : -1;
  }
  if (rc != 0) {
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  if (lwm_build_keysel(B, node, where, &cfg.keysel) != 0) {
    cfg.rolling.free(cfg.rolling.ud);
    return NULL;
  }
  return wm_keyedop_new(&B->ctx, name, &cfg);
}

int lwm_build_time(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op) {
  if (strcmp(kind, "keyed_process") == 0) *op = build_process(B, node, name, where);
  else if (strcmp(kind, "keyed_rolling") == 0) *op = build_rolling(B, node, name, where);
  else if (strcmp(kind, "harness_input") == 0) {
    /* the test harness's input: channels fed by the harness, combined by rule 3 */
    *op = lwm_pass_new(B, name);
    if (*op) (*op)->nin = (int)lwm_get_int(B->L, node, "channels", 1);
  } else return 0;
  return 1;
}
