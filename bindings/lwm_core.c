/* The wm.core module: turns an env's plan into a core graph and runs it. */
#include <stdlib.h>
#include <string.h>

#include "../core/wm_time.h"
#include "lwm.h"

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

static void on_batch(void *ud) {
  lwm_bridge *B = ud;
  lua_gc(B->L, LUA_GCSTEP, B->gc_step);
}

static wm_op *build_assign(lwm_bridge *B, int node, const char *name, const char *where,
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
    lua_getfield(L, s, "factory");
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, 1);
    lua_setfield(L, -2, "subtask");
    lua_pushinteger(L, 1);
    lua_setfield(L, -2, "parallelism");
    if (lua_pcall(L, 1, 1, B->msgh) != LUA_OK) {
      wm_ctx_error(&B->ctx, "%s: the generator factory failed: %s", where, lua_tostring(L, -1));
      lua_pop(L, 2);
      if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
      return NULL;
    }
    int ok = lua_istable(L, -1);
    if (ok) {
      lua_getfield(L, -1, "on_event");
      lua_getfield(L, -2, "on_periodic_emit");
      int e = lua_type(L, -2), p = lua_type(L, -1);
      ok = (e == LUA_TFUNCTION || e == LUA_TNIL) && (p == LUA_TFUNCTION || p == LUA_TNIL) &&
           !(e == LUA_TNIL && p == LUA_TNIL);
      lua_pop(L, 2);
    }
    if (!ok) {
      wm_ctx_error(&B->ctx,
                   "%s: the generator factory must return a table with on_event(self, record, "
                   "ts, out) and/or on_periodic_emit(self, out) functions, got a %s",
                   where, luaL_typename(L, -1));
      lua_pop(L, 2);
      if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
      return NULL;
    }
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi || lwm_wmgen_lua(&cfg.custom, oi) != 0) goto oom;
  }
  lua_pop(L, 1);
  return wm_tsop_new(&B->ctx, name, &cfg);
oom:
  lua_settop(L, s - 1);
  if (cfg.tsx.free) cfg.tsx.free(cfg.tsx.ud);
  wm_ctx_error(&B->ctx, "out of memory");
  return NULL;
}

/* ---- execute ------------------------------------------------------------------------- */

static void print_metrics(lwm_bridge *B) {
  fprintf(stderr, "%-48s %12s %12s %21s %8s\n", "operator", "records in", "records out",
          "watermark", "late");
  for (size_t i = 0; i < B->ctx.nops; i++) {
    wm_op *op = B->ctx.ops[i];
    char wm[32];
    if (op->wm == WM_TIME_MIN) snprintf(wm, sizeof wm, "-");
    else if (op->wm == WM_TIME_MAX) snprintf(wm, sizeof wm, "MAX");
    else snprintf(wm, sizeof wm, "%lld", (long long)op->wm);
    fprintf(stderr, "%-48.48s %12llu %12llu %21s %8llu\n", op->name,
            (unsigned long long)op->m.records_in, (unsigned long long)op->m.records_out, wm,
            (unsigned long long)op->m.late_dropped);
  }
  for (size_t i = 0; i < B->ctx.nops; i++) /* parse_csv/parse_json with on_error = "skip" */
    if (B->ctx.ops[i]->m.parse_errors)
      fprintf(stderr, "parse errors: %llu in '%s'\n",
              (unsigned long long)B->ctx.ops[i]->m.parse_errors, B->ctx.ops[i]->name);
}

static void trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                     const char *status) {
  (void)ud;
  char a[24], b[24];
  if (old_wm == WM_TIME_MIN) snprintf(a, sizeof a, "MIN");
  else if (old_wm == WM_TIME_MAX) snprintf(a, sizeof a, "MAX");
  else snprintf(a, sizeof a, "%lld", (long long)old_wm);
  if (new_wm == WM_TIME_MAX) snprintf(b, sizeof b, "MAX");
  else if (new_wm == WM_TIME_MIN) snprintf(b, sizeof b, "MIN");
  else snprintf(b, sizeof b, "%lld", (long long)new_wm);
  if (status)
    fprintf(stderr, "[watermark] %s: channel %d %s\n", op->name, chan + 1, status);
  else if (chan < 0)
    fprintf(stderr, "[watermark] %s: %s -> %s\n", op->name, a, b);
  else
    fprintf(stderr, "[watermark] %s: channel %d %s -> %s\n", op->name, chan + 1, a, b);
}

static int build_and_run(lwm_bridge *B, int env) {
  lua_State *L = B->L;
  int64_t interval = (int64_t)lwm_get_int(L, env, "watermark_interval", 200);
  lua_getfield(L, env, "metrics");
  int metrics = lua_toboolean(L, -1);
  lua_getfield(L, env, "trace_watermarks");
  if (lua_toboolean(L, -1)) B->ctx.trace = trace_fn;
  lua_getfield(L, env, "no_drain");
  int no_drain = lua_toboolean(L, -1);
  lua_pop(L, 3);
  wm_exec_config ecfg = {.watermark_interval = interval, .handle_signals = 1,
                         .on_batch = on_batch, .on_batch_ud = B, .no_drain = no_drain};
  B->exec = wm_exec_new(&B->ctx, &ecfg);
  if (!B->exec) return WM_ERR;

  lua_getfield(L, env, "nodes");
  int nodes = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, nodes);
  wm_op **outop = calloc((size_t)n + 1, sizeof *outop);
  int *outport = calloc((size_t)n + 1, sizeof *outport);
  if (!outop || !outport) {
    free(outop);
    free(outport);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  int rc = WM_OK;
  for (lua_Integer i = 1; i <= n && rc == WM_OK; i++) {
    lua_rawgeti(L, nodes, i);
    int node = lua_gettop(L);
    const char *kind = lwm_get_str(L, node, "kind");
    const char *where = lwm_get_str(L, node, "where");
    const char *nm = lwm_get_str(L, node, "name");
    char name[512];
    snprintf(name, sizeof name, "%s (%s)", nm ? nm : kind, where ? where : "?");
    wm_op *op = NULL;
    int port = 0, connect = 1;
    if (strcmp(kind, "from_elements") == 0) {
      lwm_opinfo *oi = lwm_opinfo_new(B, where);
      if (oi) {
        oi->fn = lwm_get_fn(B, node, "list");
        op = lwm_elements_new(B, oi, name, lwm_get_int(L, node, "count", 0));
      } else wm_ctx_error(&B->ctx, "out of memory");
    } else if (strcmp(kind, "map") == 0 || strcmp(kind, "filter") == 0 ||
               strcmp(kind, "flat_map") == 0) {
      lwm_opinfo *oi = lwm_opinfo_new(B, where);
      if (oi) {
        oi->fn = lwm_get_fn(B, node, "fn");
        op = lwm_map_new(B, oi, name,
                         kind[0] == 'm' ? LWM_MAP : kind[0] == 'f' && kind[1] == 'i' ? LWM_FILTER
                                                                                    : LWM_FLAT_MAP);
      } else wm_ctx_error(&B->ctx, "out of memory");
    } else if (strcmp(kind, "assign") == 0) {
      op = build_assign(B, node, name, where, interval);
    } else if (strcmp(kind, "print") == 0) {
      wm_print_config pc = {.prefix = lwm_get_str(L, node, "prefix"), .instance = 0, .out = stdout};
      op = wm_print_new(&B->ctx, name, &pc);
    } else if (strcmp(kind, "collect") == 0 || strcmp(kind, "sink") == 0) {
      lwm_opinfo *oi = lwm_opinfo_new(B, where);
      if (oi) {
        oi->fn = lwm_get_fn(B, node, kind[0] == 'c' ? "target" : "fn");
        op = lwm_sink_new(B, oi, name, kind[0] == 'c');
      } else wm_ctx_error(&B->ctx, "out of memory");
    } else if (strcmp(kind, "union") == 0) {
      op = lwm_pass_new(B, name);
    } else if (strcmp(kind, "side_output") == 0 || strcmp(kind, "rebalance") == 0) {
      /* no operator of its own: a port of the input operator */
      lua_getfield(L, node, "inputs");
      lua_rawgeti(L, -1, 1);
      lua_Integer in = lwm_get_int(L, lua_gettop(L), "id", 0);
      lua_pop(L, 2);
      op = outop[in];
      port = outport[in];
      if (kind[0] == 's') {
        port = wm_op_port(op, lwm_get_str(L, node, "tag"));
        if (port < 0) wm_ctx_error(&B->ctx, "out of memory");
      }
      connect = 0;
    } else if (!lwm_build_io(B, node, kind, name, where, &op) &&
               !lwm_build_windows(B, node, kind, name, where, &op) &&
               !lwm_build_time(B, node, kind, name, where, &op)) {
      wm_ctx_error(&B->ctx, "%s: '%s' is not supported yet", where ? where : "?", kind);
    }
    if (!op || port < 0) rc = WM_ERR;
    if (rc == WM_OK && connect) {
      lua_getfield(L, node, "inputs");
      lua_Integer nin = (lua_Integer)lua_rawlen(L, -1);
      for (lua_Integer k = 1; k <= nin && rc == WM_OK; k++) {
        lua_rawgeti(L, -1, k);
        lua_Integer in = lwm_get_int(L, lua_gettop(L), "id", 0);
        lua_pop(L, 1);
        if (wm_op_connect(outop[in], outport[in], op) < 0)
          rc = wm_ctx_error(&B->ctx, "out of memory");
      }
      lua_pop(L, 1);
    }
    outop[i] = op;
    outport[i] = port;
    lua_pop(L, 1); /* node */
  }
  free(outop);
  free(outport);
  lua_pop(L, 1); /* nodes */
  if (rc == WM_OK) rc = wm_ctx_prepare(&B->ctx);
  if (rc == WM_OK) rc = wm_exec_run(B->exec);
  wm_print_flush_all(&B->ctx);
  if (metrics) print_metrics(B);
  return rc;
}

/* core.execute(env, name) */
static int l_execute(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  lwm_bridge *B = calloc(1, sizeof *B);
  if (!B) return luaL_error(L, "out of memory");
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
  int rc = build_and_run(B, 1);
  /* free the graph while the slot table is still on the stack */
  wm_ctx_free(&B->ctx);
  wm_exec_free(B->exec);
  if (rc == WM_STOP) {
    lua_pushliteral(L, "wmrun: interrupted");
  } else if (rc != WM_OK) {
    lua_pushstring(L, B->ctx.err);
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

static const luaL_Reg core_funcs[] = {
    {"execute", l_execute},
    {"duration", l_duration},
    {"format", l_format},
    {NULL, NULL},
};

int luaopen_wm_core(lua_State *L);
int luaopen_wm_core(lua_State *L) {
  luaL_newlib(L, core_funcs);
  lua_pushliteral(L, LWM_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushfstring(L, "libuv %s", uv_version_string());
  lua_setfield(L, -2, "libuv_version");
  return 1;
}
