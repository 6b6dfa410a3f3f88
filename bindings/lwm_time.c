/* Time-related operators from the plan: the timestamp/watermark assigner with custom
 * generators written in Lua, and the harness's input. */
#include <stdlib.h>
#include <string.h>

#include "lwm.h"
#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_time.h"

/* ---- custom watermark generators ---------------------------------------------------- */

typedef struct genlua {
  lwm_opinfo oi; /* fn: the generator table; fn2: on_event; fn3: on_periodic_emit; fn4: out */
  wm_op *op;
} genlua;

/* out:emit_watermark(t) */
static int l_gen_emit(lua_State *L) {
  genlua *g = lua_touserdata(L, lua_upvalueindex(1));
  int64_t t = lwm_check_millis(L, 2);
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

/* out:current_processing_time(): the job's processing-time clock (virtual under an arrival
 * replay and in wm.testing, the wall clock otherwise) */
static int l_gen_now(lua_State *L) {
  genlua *g = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, (lua_Integer)wm_ctx_now(&g->oi.B->ctx));
  return 1;
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

/* Expects the generator, its on_event and its on_periodic_emit (each may be nil) on top
 * of the stack (popped). 0 or -1. */
static int wmgen_lua(wm_wmgen *gen, lwm_opinfo *oi, const lwm_hooks *hooks) {
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  genlua *g = realloc(oi, sizeof *g);
  if (!g) {
    lwm_opinfo_free(oi);
    lua_pop(L, 3);
    return -1;
  }
  g->op = NULL;
  g->oi.hooks = *hooks;
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushcfunction(L, gen_noop);
  }
  g->oi.fn3 = lwm_store_fn(B); /* on_periodic_emit */
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushcfunction(L, gen_noop);
  }
  g->oi.fn2 = lwm_store_fn(B); /* on_event */
  g->oi.fn = lwm_store_fn(B); /* the generator itself */
  lua_createtable(L, 0, 4); /* out */
  lua_pushlightuserdata(L, g);
  lua_pushcclosure(L, l_gen_now, 1);
  lua_setfield(L, -2, "current_processing_time");
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
  g->oi.fn4 = lwm_store_fn(B);
  gen->on_event = gen_event;
  gen->on_periodic = gen_periodic;
  gen->free = lwm_opinfo_free;
  gen->ud = g;
  if (hooks->snapshot) {
    gen->snapshot = lwm_opinfo_snapshot;
    gen->restore = lwm_opinfo_restore;
  }
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
      int fn = lwm_get_fn(B, s, "ts_fn"); /* first: it may raise, with nothing to leak yet */
      lwm_push_fn(B, fn);
      int reads_only = lwm_reads_arg_only(L, -1);
      lua_pop(L, 1);
      lwm_opinfo *oi = lwm_opinfo_new(B, where);
      if (!oi) goto oom;
      oi->fn = fn;
      oi->reads_only = reads_only;
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
      static const char *const keys[2] = {"on_event", "on_periodic_emit"};
      if (lwm_pget_fields(B, -1, keys, 2) != 0) { /* its __index raised an error */
        const char *m = lua_tostring(L, -1);
        const char *tb = m ? strstr(m, "\nstack traceback:") : NULL;
        wm_ctx_error(&B->ctx, "%s: the watermark generator of for_generator at %s: reading its "
                              "on_event and on_periodic_emit failed: %.*s",
                     where, gname ? gname : "?", m ? (tb ? (int)(tb - m) : (int)strlen(m)) : 0,
                     m ? m : "");
        lua_pop(L, 3);
        if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
        return NULL;
      }
      int e = lua_type(L, -2), p = lua_type(L, -1);
      if (e != LUA_TFUNCTION && e != LUA_TNIL) bad = "on_event is not a function";
      else if (p != LUA_TFUNCTION && p != LUA_TNIL) bad = "on_periodic_emit is not a function";
      else if (e == LUA_TNIL && p == LUA_TNIL) bad = "it has neither on_event nor on_periodic_emit";
      ok = bad == NULL;
      if (!ok) lua_pop(L, 2);
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
    char gwhere[600], what[700];
    snprintf(gwhere, sizeof gwhere, "%s", gname ? gname : where);
    snprintf(what, sizeof what, "the watermark generator of for_generator at %s", gwhere);
    lwm_hooks hooks;
    if (lwm_hooks_read(B, -3, &hooks, what, where) != 0) {
      lua_pop(L, 4);
      if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
      return NULL;
    }
    if (!hooks.snapshot) /* a generator is its state (max timestamp, ...): always stateful */
      lwm_note_uncheckpointable(B, what, where,
                                "give the generator snapshot(self) (returning a plain table "
                                "of its fields) and restore(self, t) methods");
    lwm_opinfo *oi = lwm_opinfo_new(B, gwhere);
    if (!oi) lua_pop(L, 3);
    if (!oi || wmgen_lua(&cfg.custom, oi, &hooks) != 0) goto oom;
  }
  lua_pop(L, 1);
  return wm_tsop_new(&B->ctx, name, &cfg);
oom:
  lua_settop(L, s - 1);
  if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
  wm_ctx_error(&B->ctx, "out of memory");
  return NULL;
}

int lwm_build_time(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op) {
  (void)where;
  if (strcmp(kind, "harness_input") == 0) {
    /* the test harness's input: channels fed by the harness, combined by rule 3 */
    *op = lwm_pass_new(B, name);
    if (*op) (*op)->nin = (int)lwm_get_int(B->L, node, "channels", 1);
  } else return 0;
  return 1;
}
