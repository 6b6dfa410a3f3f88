/* Keyed operators from the plan: process functions with state and timers
 * (keyed:process{...}) and rolling aggregations (keyed:sum(...), keyed:reduce(fn), ...). */
#include <stdlib.h>
#include <string.h>

#include "ops/wm_keyedop.h"
#include "lwm.h"
#include "lwm_keyed.h"
#include "lwm_sqlagg.h"
#include "lwm_sqlrank.h"
#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_window.h"

/* ---- keyed process functions ------------------------------------------------------- */

typedef struct kproc {
  lwm_opinfo oi; /* fn: process_element; fn2: on_timer (0: none); fn3: ctx; fn4: out;
                  * fn5: process_element2, or process_broadcast_element */
  wm_op *op;
  int64_t ts;    /* timestamp of what out() emits */
  /* a broadcast second input: this instance's broadcast state (a table), the ctx of
   * process_broadcast_element (fns slots; 0: none) */
  int bstate, bctx;
  /* a state TTL: ctx.state is a proxy (slot `proxy`) whose metatable (slot `pmt`) holds the
   * key's table at [1]; its accesses tell the operator what was read and written */
  int proxy, pmt;
} kproc;

static kproc *kproc_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

/* out(value) */
static int l_kp_out(lua_State *L) {
  kproc *k = kproc_of(L);
  return lwm_emit_arg(k->oi.B, L, k->op, 0, 1, k->ts);
}

/* ctx:output(tag, value) */
static int l_kp_output(lua_State *L) {
  kproc *k = kproc_of(L);
  int port = wm_op_port(k->op, luaL_checkstring(L, 2));
  if (port < 0) return luaL_error(L, "out of memory");
  return lwm_emit_arg(k->oi.B, L, k->op, port, 3, k->ts);
}

static const char *const timer_fn_names[4] = {
    "register_event_time_timer", "register_processing_time_timer", "delete_event_time_timer",
    "delete_processing_time_timer"};

/* timer_service:register_*_timer(t) / delete_*_timer(t); upvalue 2: which (0..3) */
static int l_kp_timer(lua_State *L) {
  kproc *k = kproc_of(L);
  int which = (int)lua_tointeger(L, lua_upvalueindex(2));
  const char *fname = timer_fn_names[which];
  int64_t t = lwm_check_millis(L, 2);
  if (which < 2 && !k->oi.fn2)
    return luaL_error(L, "%s: this process function has no on_timer to call (use "
                         "keyed:process{process_element = fn, on_timer = fn})", fname);
  int domain = which % 2 == 0 ? WM_TIME_EVENT : WM_TIME_PROCESSING;
  if (which == 0) k->oi.B->event_time = 1;
  int rc = which < 2 ? wm_keyedop_register(k->op, domain, t)
                     : wm_keyedop_delete(k->op, domain, t);
  if (rc != WM_OK) return luaL_error(L, "%s: %s", fname, wm_ctx_errtext(&k->oi.B->ctx));
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

/* ---- ctx.state under a state TTL: a proxy that sees reads and writes ------------------
 * A read is any field read of ctx.state (ctx.state.x, pairs, #); a write any assignment to
 * a field of it (ctx.state.x = v, also nil). A change inside a table held in a field
 * (ctx.state.list[1] = v) is a read of ctx.state.list: assign the field again to count it
 * as a write (docs/joins.md, "State that expires"). */
static void proxy_target(lua_State *L) { /* pushes the key's table */
  lua_rawgeti(L, lua_upvalueindex(2), 1);
}

static int l_st_index(lua_State *L) {
  kproc *k = kproc_of(L);
  wm_keyedop_state_used(k->op, 0);
  proxy_target(L);
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int l_st_newindex(lua_State *L) {
  kproc *k = kproc_of(L);
  wm_keyedop_state_used(k->op, 1);
  proxy_target(L);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, -3);
  return 0;
}

static int l_st_len(lua_State *L) {
  kproc *k = kproc_of(L);
  wm_keyedop_state_used(k->op, 0);
  proxy_target(L);
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
  return 1;
}

static int l_st_pairs(lua_State *L) {
  kproc *k = kproc_of(L);
  wm_keyedop_state_used(k->op, 0);
  lua_getglobal(L, "next");
  proxy_target(L);
  lua_pushnil(L);
  return 3;
}

/* Makes the proxy and its metatable of k. */
static void proxy_setup(lwm_bridge *B, kproc *k) {
  lua_State *L = B->L;
  static const struct { const char *name; lua_CFunction fn; } mm[] = {
      {"__index", l_st_index}, {"__newindex", l_st_newindex}, {"__len", l_st_len},
      {"__pairs", l_st_pairs}};
  lua_newtable(L); /* the proxy */
  lua_createtable(L, 1, 5);
  for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
    lua_pushlightuserdata(L, k);
    lua_pushvalue(L, -2);
    lua_pushcclosure(L, mm[i].fn, 2);
    lua_setfield(L, -2, mm[i].name);
  }
  lua_pushstring(L, "ctx.state (with a state_ttl)");
  lua_setfield(L, -2, "__metatable");
  lua_pushvalue(L, -1);
  k->pmt = lwm_store_fn(B);
  lua_setmetatable(L, -2);
  k->proxy = lwm_store_fn(B);
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
  if (k->proxy) {
    lwm_push_fn(B, k->pmt);
    lwm_push_value(B, state);
    lua_rawseti(L, -2, 1);
    lua_pop(L, 1);
    lwm_push_fn(B, k->proxy);
  } else {
    lwm_push_value(B, state);
  }
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

/* After a call: the key's state is what ctx.state holds. An empty table (or nil) leaves the
 * key with no state (*state nil: the operator frees a key with no timers); another table
 * assigned to ctx.state replaces the state. */
static int settle_state(kproc *k, wm_value *state) {
  lwm_bridge *B = k->oi.B;
  lua_State *L = B->L;
  luaL_checkstack(L, 4, "wmrun: keyed process");
  int top = lua_gettop(L);
  lwm_push_fn(B, k->oi.fn3);
  int t = lua_getfield(L, -1, "state");
  if (k->proxy) lwm_push_fn(B, k->proxy);
  else lwm_push_value(B, state);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 1);
  if (t == LUA_TTABLE && !same) { /* ctx.state = another table */
    wm_value v;
    if (lwm_to_value(B, -1, &v) != 0) {
      lua_settop(L, top);
      return wm_ctx_error(&B->ctx, "out of memory");
    }
    wm_value_release(&B->ctx.host, state);
    *state = v;
  } else if (t != LUA_TTABLE && t != LUA_TNIL) {
    lua_settop(L, top);
    return wm_ctx_error(&B->ctx, "%s: ctx.state was set to a %s: the key's state is a table "
                                 "(set its fields, or set ctx.state = nil to clear it)",
                        k->oi.where, lua_typename(L, t));
  }
  lua_settop(L, top);
  if (t == LUA_TNIL) {
    wm_value_release(&B->ctx.host, state);
    return WM_OK;
  }
  lwm_push_value(B, state);
  lua_pushnil(L);
  int empty = lua_next(L, -2) == 0;
  lua_settop(L, top);
  if (empty) wm_value_release(&B->ctx.host, state);
  return WM_OK;
}

/* Calls the element function `fn` (a fns slot) of k with the record and the key's ctx. */
static int kp_call(kproc *k, int fn, wm_op *op, const wm_value *key, wm_value *state,
                   const wm_value *rec, int64_t ts) {
  lwm_bridge *B = k->oi.B;
  k->op = op;
  k->oi.op = op;
  k->ts = ts;
  if (ensure_state(B, state) != WM_OK) return WM_ERR;
  luaL_checkstack(B->L, 6, "wmrun: keyed process");
  lwm_push_fn(B, fn);
  lwm_push_value(B, rec);
  push_ctx(k, key, state, ts, NULL);
  lwm_push_fn(B, k->oi.fn4);
  int rc = lwm_call(&k->oi, 3, 0, rec);
  return rc == WM_OK ? settle_state(k, state) : rc;
}

static int kp_element(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                      const wm_value *rec, int64_t ts) {
  kproc *k = ud;
  return kp_call(k, k->oi.fn, op, key, state, rec, ts);
}

/* keyed connected streams: process_element2 (fn5) for the second input's records */
static int kp_element2(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                       const wm_value *rec, int64_t ts) {
  kproc *k = ud;
  return kp_call(k, k->oi.fn5, op, key, state, rec, ts);
}

/* process_broadcast_element(record, ctx, out) for a broadcast input's records: no key, no
 * keyed state, no timers; ctx.broadcast_state is the instance's table, writable here */
static int kp_bcast_element(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                            const wm_value *rec, int64_t ts) {
  (void)key;
  (void)state;
  kproc *k = ud;
  lwm_bridge *B = k->oi.B;
  lua_State *L = B->L;
  k->op = op;
  k->oi.op = op;
  k->ts = ts;
  luaL_checkstack(L, 6, "wmrun: broadcast process");
  lwm_push_fn(B, k->oi.fn5);
  lwm_push_value(B, rec);
  lwm_push_fn(B, k->bctx);
  if (ts == WM_TIME_MIN) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)ts);
  lua_setfield(L, -2, "timestamp");
  lwm_push_fn(B, k->oi.fn4);
  return lwm_call(&k->oi, 3, 0, rec);
}

/* Checkpoints of a process function with a broadcast input: {b = the broadcast state,
 * u = what the table form's snapshot(self) returns}. The broadcast state is this
 * instance's: every instance holds the same (each sees every broadcast record). */
static int kp_snapshot(void *ud, wm_op *op, wm_value *out) {
  kproc *k = ud;
  lwm_bridge *B = k->oi.B;
  lua_State *L = B->L;
  wm_value u = wm_nil();
  if (k->oi.hooks.snapshot && lwm_opinfo_snapshot(ud, op, &u) != WM_OK) return WM_ERR;
  luaL_checkstack(L, 4, "wmrun: broadcast state");
  lua_createtable(L, 0, 2);
  lwm_push_fn(B, k->bstate);
  lua_setfield(L, -2, "b");
  lwm_push_value(B, &u);
  lua_setfield(L, -2, "u");
  wm_value_release(&B->ctx.host, &u);
  int rc = lwm_to_value(B, -1, out);
  lua_pop(L, 1);
  return rc == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
}

static int kp_restore(void *ud, wm_op *op, const wm_value *st) {
  kproc *k = ud;
  lwm_bridge *B = k->oi.B;
  lua_State *L = B->L;
  luaL_checkstack(L, 6, "wmrun: broadcast state");
  lwm_push_value(B, st);
  int t = lua_gettop(L);
  if (!lua_istable(L, t) || lua_getfield(L, t, "b") != LUA_TTABLE) {
    lua_settop(L, t - 1);
    return wm_ctx_error(&B->ctx, "%s: the checkpoint holds no broadcast state for this process "
                                 "function", k->oi.where);
  }
  lwm_push_fn(B, k->bstate); /* the table the functions hold: refilled, not replaced */
  lua_pushnil(L);
  while (lua_next(L, -2)) { /* clear it */
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, -4);
  }
  lua_pushnil(L);
  while (lua_next(L, t + 1)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, t + 2);
  }
  lua_getfield(L, t, "u");
  int has_u = !lua_isnil(L, -1);
  wm_value u = wm_nil();
  int rc = has_u && lwm_to_value(B, -1, &u) != 0 ? wm_ctx_error(&B->ctx, "out of memory") : WM_OK;
  lua_settop(L, t - 1);
  if (rc == WM_OK && k->oi.hooks.restore && has_u) rc = lwm_opinfo_restore(ud, op, &u);
  wm_value_release(&B->ctx.host, &u);
  return rc;
}

/* The read-only view process_element gets of the broadcast state (Flink's
 * ReadOnlyBroadcastState): reads go to the table, a write is an error at the user's line. */
static const char ro_view[] =
    "local t = ...\n"
    "return setmetatable({}, {__index = t, __len = function() return #t end,\n"
    "  __pairs = function() return next, t, nil end,\n"
    "  __newindex = function(_, k) error('ctx.broadcast_state is read-only in process_element "
    "(setting ' .. tostring(k) .. '): only process_broadcast_element may change it', 2) end})\n";

/* Sets current_watermark() and current_processing_time() of k on the timer service table at
 * the top of the stack. */
static void set_clock_fns(lua_State *L, kproc *k) {
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_watermark, 1);
  lua_setfield(L, -2, "current_watermark");
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_now, 1);
  lua_setfield(L, -2, "current_processing_time");
}

/* timer_service:register_*_timer / delete_*_timer in process_broadcast_element (upvalue 1:
 * the name): timers belong to a key, and a broadcast record has none */
static int l_kp_bcast_no_timer(lua_State *L) {
  return luaL_error(L, "%s: process_broadcast_element has no key, and timers are per key "
                       "(register them in process_element or on_timer)",
                    lua_tostring(L, lua_upvalueindex(1)));
}

/* Makes the broadcast state of k, the ctx of process_broadcast_element, and sets the
 * read-only view on ctx (at the top of the stack). 0, or -1 with ctx->error set. */
static int bcast_setup(lwm_bridge *B, kproc *k) {
  lua_State *L = B->L;
  int ctx = lua_gettop(L);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  k->bstate = lwm_store_fn(B);
  if (luaL_loadbuffer(L, ro_view, sizeof ro_view - 1, "=broadcast state") != LUA_OK) {
    wm_ctx_error(&B->ctx, "%s", lua_tostring(L, -1));
    lua_settop(L, ctx);
    return -1;
  }
  lua_insert(L, -2);
  lua_call(L, 1, 1);
  lua_setfield(L, ctx, "broadcast_state");
  /* process_broadcast_element's ctx: the state to change, output, the watermark */
  lua_createtable(L, 0, 4);
  lwm_push_fn(B, k->bstate);
  lua_setfield(L, -2, "broadcast_state");
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_output, 1);
  lua_setfield(L, -2, "output");
  lua_createtable(L, 0, 6);
  for (int i = 0; i < 4; i++) {
    lua_pushstring(L, timer_fn_names[i]);
    lua_pushcclosure(L, l_kp_bcast_no_timer, 1);
    lua_setfield(L, -2, timer_fn_names[i]);
  }
  set_clock_fns(L, k);
  lua_setfield(L, -2, "timer_service");
  k->bctx = lwm_store_fn(B);
  return 0;
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
  return rc == WM_OK ? settle_state(k, state) : rc;
}

static void free_keysel(void *ud) {
  wm_keysel *ks = ud;
  if (ks->free) ks->free(ks->ud);
  free(ks);
}

/* An error path of build_process: the second key goes with the first. */
static void release_key2(lwm_bridge *B, lwm_pending *pk2, wm_keyedop_config *cfg) {
  if (!pk2) return;
  wm_keysel *ks2 = pk2->ud;
  lwm_pending_done(B, pk2);
  free(ks2);
  cfg->keysel2.free(cfg->keysel2.ud);
}

static wm_op *build_process(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  if (lwm_build_keysel(B, node, where, &cfg.keysel) != 0) return NULL;
  int two = lua_getfield(L, node, "key2") == LUA_TTABLE; /* keyed connected streams */
  lua_pop(L, 1);
  if (two && lwm_build_keysel_of(B, node, "key2", where, &cfg.keysel2) != 0) {
    cfg.keysel.free(cfg.keysel.ud);
    return NULL;
  }
  /* (from here on a raise frees the second key through the pending list, below) */
  lwm_pending *pk2 = NULL;
  if (two) {
    wm_keysel *ks2 = malloc(sizeof *ks2);
    pk2 = ks2 ? lwm_pending_add(B, free_keysel, ks2) : NULL;
    if (!pk2) {
      free(ks2);
      cfg.keysel.free(cfg.keysel.ud);
      cfg.keysel2.free(cfg.keysel2.ud);
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
    *ks2 = cfg.keysel2;
  }
  lwm_opinfo *oi = lwm_opinfo_new(B, where);
  kproc *k = oi ? realloc(oi, sizeof *k) : NULL;
  /* the key selector and k are listed as pending until the operator takes them: the plan
   * is read (and the ctx table made) after they exist, and that may raise */
  wm_keysel *ks = k ? malloc(sizeof *ks) : NULL;
  lwm_pending *pk = ks ? lwm_pending_add(B, free_keysel, ks) : NULL;
  lwm_pending *pp = pk ? lwm_pending_add(B, lwm_opinfo_free, k) : NULL;
  if (!pp) {
    lwm_pending_done(B, pk);
    free(ks);
    if (k) lwm_opinfo_free(k);
    else lwm_opinfo_free(oi);
    cfg.keysel.free(cfg.keysel.ud);
    release_key2(B, pk2, &cfg);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  *ks = cfg.keysel;
  k->op = NULL;
  k->ts = WM_TIME_MIN;
  k->oi.fn = lwm_get_fn(B, node, "fn");
  k->oi.fn2 = lwm_get_fn(B, node, "on_timer");
  int bcast = lua_getfield(L, node, "bcast") == LUA_TBOOLEAN; /* a broadcast second input */
  lua_pop(L, 1);
  if (two || bcast) k->oi.fn5 = lwm_get_fn(B, node, "fn2");
  k->bstate = k->bctx = 0;
  k->proxy = k->pmt = 0;
  cfg.ttl.ttl = lwm_get_int(L, node, "ttl", 0); /* state_ttl, checked by the Lua side */
  cfg.ttl.update = (int)lwm_get_int(L, node, "ttl_update", WM_TTL_ON_CREATE_AND_WRITE);
  cfg.ttl.time = (int)lwm_get_int(L, node, "ttl_time", WM_TIME_PROCESSING);
  if (cfg.ttl.ttl > 0) proxy_setup(B, k);
  if (lua_getfield(L, node, "obj") == LUA_TTABLE && /* the table form's methods */
      lwm_hooks_read(B, -1, &k->oi.hooks, "the process function", where) != 0) {
    lua_pop(L, 1);
    lwm_pending_done(B, pp);
    lwm_pending_done(B, pk);
    free(ks);
    lwm_opinfo_free(k);
    cfg.keysel.free(cfg.keysel.ud);
    release_key2(B, pk2, &cfg);
    return NULL;
  }
  lua_pop(L, 1);
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
  set_clock_fns(L, k);
  lua_setfield(L, -2, "timer_service");
  if (bcast && bcast_setup(B, k) != 0) {
    lua_pop(L, 1);
    lwm_pending_done(B, pp);
    lwm_pending_done(B, pk);
    free(ks);
    lwm_opinfo_free(k);
    cfg.keysel.free(cfg.keysel.ud);
    release_key2(B, pk2, &cfg);
    return NULL;
  }
  k->oi.fn3 = lwm_store_fn(B);
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_kp_out, 1);
  k->oi.fn4 = lwm_store_fn(B);
  cfg.fn.element = kp_element;
  if (two) cfg.fn.element2 = kp_element2;
  if (bcast) cfg.fn.element2 = kp_bcast_element;
  cfg.fn.timer = kp_timer;
  cfg.fn.free = lwm_opinfo_free;
  cfg.fn.ud = k;
  if (bcast) { /* the broadcast state, and the table form's own state if it has hooks */
    cfg.fn.snapshot = kp_snapshot;
    cfg.fn.restore = kp_restore;
  } else if (k->oi.hooks.snapshot) {
    cfg.fn.snapshot = lwm_opinfo_snapshot;
    cfg.fn.restore = lwm_opinfo_restore;
  }
  lwm_pending_done(B, pp);
  lwm_pending_done(B, pk);
  free(ks);
  if (pk2) { /* the operator takes the second key (its holder goes, not the key) */
    wm_keysel *ks2 = pk2->ud;
    lwm_pending_done(B, pk2);
    free(ks2);
  }
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
  if (agg && strcmp(agg, "sqlagg") == 0) { /* an unwindowed SQL GROUP BY in C */
    if (lwm_winfn_sqlagg(B, node, where, &cfg.rolling, cfg.meaning, sizeof cfg.meaning, 1) != WM_OK)
      return NULL;
    if (lwm_build_keysel(B, node, where, &cfg.keysel) != 0) {
      cfg.rolling.free(cfg.rolling.ud);
      return NULL;
    }
    /* SET 'table.exec.mini-batch.*' (the planner checked them: wm.sql.plan.ddl) */
    lua_getfield(L, node, "sqlagg");
    lua_Integer size = lua_istable(L, -1) ? lwm_get_int(L, -1, "minibatch_size", 0) : 0;
    lua_Integer latency = lua_istable(L, -1) ? lwm_get_int(L, -1, "minibatch_latency", 0) : 0;
    lua_pop(L, 1);
    cfg.minibatch_size = size > 0 && size <= UINT32_MAX ? (uint32_t)size : 0;
    cfg.minibatch_latency = latency > 0 ? (int64_t)latency : 0;
    return wm_keyedop_new(&B->ctx, name, &cfg);
  }
  int dedup = agg && strcmp(agg, "sqldedup") == 0, topn = agg && strcmp(agg, "sqltopn") == 0;
  if (dedup || topn) { /* a SQL deduplication or Top-N in C */
    if ((dedup ? lwm_winfn_sqldedup : lwm_winfn_sqltopn)(B, node, where, &cfg.rolling, cfg.meaning,
                                                        sizeof cfg.meaning) != WM_OK)
      return NULL;
    if (lwm_build_keysel(B, node, where, &cfg.keysel) != 0) {
      cfg.rolling.free(cfg.rolling.ud);
      return NULL;
    }
    return wm_keyedop_new(&B->ctx, name, &cfg);
  }
  if (kindi) {
    rc = wm_winfn_builtin(&cfg.rolling, kindi, lwm_get_str(L, node, "field"));
  } else {
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (oi) oi->fn = lwm_get_fn(B, node, "fn");
    rc = oi ? lwm_winfn_lua(&cfg.rolling, oi, "reduce", 0) : -1;
    lwm_fn_meaning(L, node, "reduce", cfg.meaning, sizeof cfg.meaning);
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

int lwm_build_keyed(lwm_bridge *B, int node, const char *kind, const char *name,
                    const char *where, wm_op **op) {
  if (strcmp(kind, "keyed_process") == 0) *op = build_process(B, node, name, where);
  else if (strcmp(kind, "keyed_rolling") == 0) *op = build_rolling(B, node, name, where);
  else return 0;
  return 1;
}
