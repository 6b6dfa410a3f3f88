/* The toolbox of the node builders, below all of them: reading fields of the plan (the
 * tables that lua/wm builds), storing its functions in the per-job table, checking the
 * arguments of the C functions that user code calls, and building key selectors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lwm.h"
#include "lwm_ops.h"
#include "lwm_plan.h"

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
  return lwm_store_fn(B);
}

/* An integer number of ms from argument arg of the C function running, or a lauxlib
 * argument error: "bad argument #1 to 'emit_watermark' (an integer number of ms expected,
 * got 1.5)". Floats with an integral value are accepted, as lua_tointeger does. */
int64_t lwm_check_millis(lua_State *L, int arg) {
  if (lua_isinteger(L, arg)) return (int64_t)lua_tointeger(L, arg);
  if (lua_type(L, arg) == LUA_TNUMBER) {
    lua_Number n = lua_tonumber(L, arg);
    if (floor(n) == n && fabs(n) < 9.2e18) return (int64_t)n;
    luaL_argerror(L, arg, lua_pushfstring(L, "an integer number of ms expected, got %f", n));
  }
  luaL_typeerror(L, arg, "integer number of ms");
  return 0;
}

/* t, k1, ..., kn -> t[k1], ..., t[kn] (with metamethods) */
static int pget(lua_State *L) {
  int n = lua_gettop(L) - 1;
  for (int i = 1; i <= n; i++) lua_getfield(L, 1, lua_tostring(L, i + 1));
  return n;
}

int lwm_change_unwrap(lwm_bridge *B, const wm_value *rec, const char *what, int *sign, char *letter,
                      wm_value *row, wm_error *err) {
  lua_State *L = B->L;
  *row = wm_nil();
  *sign = 0;
  if (rec->type != WM_SLOT || lua_rawgeti(L, B->slots, rec->u.slot) != LUA_TTABLE) {
    if (rec->type == WM_SLOT) lua_pop(L, 1);
    return wm_error_set(err, "%s: a record is not a change {k = \"+I\"|\"+U\"|\"-U\"|\"-D\", r = row}", what);
  }
  lua_pushliteral(L, "k");
  lua_rawget(L, -2);
  size_t n = 0;
  const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
  if (k && n == 2 && k[0] == '+' && (k[1] == 'I' || k[1] == 'U')) *sign = 1;
  if (k && n == 2 && k[0] == '-' && (k[1] == 'U' || k[1] == 'D')) *sign = -1;
  if (*sign && letter) *letter = k[1];
  lua_pop(L, 1);
  lua_pushliteral(L, "r");
  lua_rawget(L, -2);
  int rc = 0;
  if (!*sign || lua_type(L, -1) != LUA_TTABLE) {
    rc = wm_error_set(err, "%s: a record is not a change {k = \"+I\"|\"+U\"|\"-U\"|\"-D\", r = row} (k = %s, r a %s)",
                      what, k ? k : "not a string", luaL_typename(L, -1));
  } else {
    uint32_t slot = lwm_slot_new(B, -1);
    if (!slot) rc = wm_error_set(err, "out of memory");
    else {
      row->type = WM_SLOT;
      row->u.slot = slot;
    }
  }
  lua_pop(L, 2);
  return rc;
}

/* Fields of a user's object read with its metamethods (__index may be a class, or may
 * raise): a protected call, so that an error unwinds nothing of the build. */
int lwm_pget_fields(lwm_bridge *B, int idx, const char *const *keys, int n) {
  lua_State *L = B->L;
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, n + 2, "wmrun: reading an object");
  lua_pushcfunction(L, pget);
  lua_pushvalue(L, idx);
  for (int i = 0; i < n; i++) lua_pushstring(L, keys[i]);
  return lua_pcall(L, n + 1, n, B->msgh) == LUA_OK ? 0 : -1;
}

/* ---- key selectors from the plan ------------------------------------------------------ */

/* node.key: {fields = {...}} (1 to 16 field names) or {fn = f}. */
int lwm_build_keysel(lwm_bridge *B, int node, const char *where, wm_keysel *ks) {
  return lwm_build_keysel_of(B, node, "key", where, ks);
}

int lwm_build_keysel_of(lwm_bridge *B, int node, const char *field, const char *where,
                        wm_keysel *ks) {
  lua_State *L = B->L;
  lua_getfield(L, node, field);
  int k = lua_gettop(L);
  lua_getfield(L, k, "fields");
  int rc = 0;
  if (lua_istable(L, -1)) {
    size_t n = (size_t)lua_rawlen(L, -1);
    const char *fields[16];
    if (n < 1 || n > 16) {
      lua_settop(L, k - 1);
      return wm_ctx_error(&B->ctx, "%s: key_by takes 1 to 16 fields", where);
    }
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, (lua_Integer)i + 1);
      fields[i] = lua_tostring(L, -1); /* the strings live in the plan */
      lua_pop(L, 1);
    }
    lua_getfield(L, k, "nulls"); /* (the SQL planner's ranks: a NULL field is a key part) */
    int nulls = lua_toboolean(L, -1);
    lua_pop(L, 1);
    rc = nulls ? wm_keysel_fields_nulls(ks, fields, n) : wm_keysel_fields(ks, fields, n);
    /* null_key (the SQL planner's GROUP BY): a nil field is that key, not an error */
    lua_getfield(L, k, "null_key");
    size_t nl = 0;
    const char *nk = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &nl) : NULL;
    if (rc == 0 && nk && nl > 0) rc = wm_keysel_null_as(ks, nk, nl);
    lua_pop(L, 1);
    /* change (the SQL planner's regular join over changes {k, r}): the fields of r */
    lua_getfield(L, k, "change");
    if (rc == 0 && lua_toboolean(L, -1)) rc = wm_keysel_change(ks);
    lua_pop(L, 1);
  } else {
    int fn = lwm_get_fn(B, k, "fn"); /* first: it may raise, with nothing to leak yet */
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) rc = -1;
    else {
      oi->fn = fn;
      rc = lwm_keysel_lua(ks, oi);
    }
  }
  lua_settop(L, k - 1);
  return rc == 0 ? 0 : wm_ctx_error(&B->ctx, "out of memory");
}

/* ---- checkpoint hooks of Lua parts (docs/checkpoints.md, "User state in Lua") ---------- */

int lwm_hooks_read(lwm_bridge *B, int idx, lwm_hooks *h, const char *what, const char *where) {
  lua_State *L = B->L;
  idx = lua_absindex(L, idx);
  h->self = h->snapshot = h->restore = 0;
  static const char *const keys[2] = {"snapshot", "restore"};
  if (lwm_pget_fields(B, idx, keys, 2) != 0) {
    const char *m = lua_tostring(L, -1);
    const char *tb = m ? strstr(m, "\nstack traceback:") : NULL;
    wm_ctx_error(&B->ctx, "%s: %s: reading its snapshot and restore methods failed: %.*s", where,
                 what, m ? (tb ? (int)(tb - m) : (int)strlen(m)) : 0, m ? m : "");
    lua_pop(L, 1);
    return -1;
  }
  int s = lua_type(L, -2), r = lua_type(L, -1);
  const char *bad = (s != LUA_TNIL && s != LUA_TFUNCTION)   ? "snapshot is not a function"
                    : (r != LUA_TNIL && r != LUA_TFUNCTION) ? "restore is not a function"
                    : (s == LUA_TNIL) != (r == LUA_TNIL)
                        ? (s == LUA_TNIL ? "it has restore but no snapshot method (give both)"
                                         : "it has snapshot but no restore method (give both)")
                        : NULL;
  if (bad) {
    lua_pop(L, 2);
    wm_ctx_error(&B->ctx, "%s: %s: %s", where, what, bad);
    return -1;
  }
  if (s == LUA_TNIL) {
    lua_pop(L, 2);
    return 0;
  }
  h->restore = lwm_store_fn(B);
  h->snapshot = lwm_store_fn(B);
  lua_pushvalue(L, idx);
  h->self = lwm_store_fn(B);
  return 0;
}

int lwm_opinfo_snapshot(void *ud, wm_op *op, wm_value *out) {
  lwm_opinfo *oi = ud;
  const lwm_hooks *h = &oi->hooks;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  *out = wm_nil();
  oi->op = op;
  luaL_checkstack(L, 4, "wmrun: a snapshot method");
  lwm_push_fn(B, h->snapshot);
  lwm_push_fn(B, h->self);
  if (lwm_call(oi, 1, 1, NULL) != WM_OK) {
    wm_ctx_error_append(&B->ctx, "\n  in its snapshot method (%s)", oi->where);
    return WM_ERR;
  }
  if (!lua_istable(L, -1)) {
    const char *tn = luaL_typename(L, -1);
    lua_pop(L, 1);
    return wm_ctx_error(&B->ctx, "%s: snapshot(self) returned a %s (expected a plain table)",
                        oi->where, tn);
  }
  int rc = lwm_to_value(B, -1, out);
  lua_pop(L, 1);
  return rc == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
}

int lwm_opinfo_restore(void *ud, wm_op *op, const wm_value *state) {
  lwm_opinfo *oi = ud;
  const lwm_hooks *h = &oi->hooks;
  lwm_bridge *B = oi->B;
  oi->op = op;
  luaL_checkstack(B->L, 4, "wmrun: a restore method");
  lwm_push_fn(B, h->restore);
  lwm_push_fn(B, h->self);
  lwm_push_value(B, state);
  if (lwm_call(oi, 2, 0, NULL) != WM_OK) {
    wm_ctx_error_append(&B->ctx, "\n  in its restore method (%s)", oi->where);
    return WM_ERR;
  }
  return WM_OK;
}

/* The parts noted so far: a list in the fns table under this key. */
#define UNCKPT_KEY "uncheckpointable"

void lwm_note_uncheckpointable(lwm_bridge *B, const char *part, const char *where,
                               const char *fix) {
  lua_State *L = B->L;
  luaL_checkstack(L, 4, "wmrun: a build note");
  if (lua_getfield(L, B->fns, UNCKPT_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, B->fns, UNCKPT_KEY);
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  for (lua_Integer i = 1; i <= n; i++) { /* parallel instances: one line per part */
    lua_rawgeti(L, -1, i);
    const char *s = lua_tostring(L, -1);
    size_t pl = strlen(where);
    int same = s && strncmp(s, where, pl) == 0 && s[pl] == ':' && s[pl + 1] == ' ' &&
               strncmp(s + pl + 2, part, strlen(part)) == 0;
    lua_pop(L, 1);
    if (same) {
      lua_pop(L, 1);
      return;
    }
  }
  lua_pushfstring(L, "%s: %s cannot be checkpointed: %s", where, part, fix);
  lua_rawseti(L, -2, n + 1);
  lua_pop(L, 1);
}

int lwm_check_checkpointable(lwm_bridge *B) {
  lua_State *L = B->L;
  if (lua_getfield(L, B->fns, UNCKPT_KEY) != LUA_TTABLE || lua_rawlen(L, -1) == 0) {
    lua_pop(L, 1);
    return WM_OK;
  }
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  int list = lua_gettop(L);
  if (n > 50) n = 50;
  luaL_checkstack(L, (int)n * 2 + 4, "wmrun: a message");
  lua_pushfstring(L, "checkpointing is on, and %s of this job keep%s state that a checkpoint "
                     "cannot hold:",
                  n == 1 ? "one part" : "parts", n == 1 ? "s" : "");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_pushliteral(L, "\n  ");
    lua_rawgeti(L, list, i);
  }
  lua_pushliteral(L, "\n(docs/checkpoints.md, \"User state in Lua\")");
  lua_concat(L, (int)n * 2 + 2);
  int rc = wm_ctx_error(&B->ctx, "%s", lua_tostring(L, -1));
  lua_pop(L, 2);
  return rc;
}
