/* The toolbox of the node builders, below all of them: reading fields of the plan (the
 * tables that lua/wm builds), storing its functions in the per-job table, checking the
 * arguments of the C functions that user code calls, and building key selectors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lwm.h"

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
  lua_State *L = B->L;
  lua_getfield(L, node, "key");
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
    rc = wm_keysel_fields(ks, fields, n);
  } else {
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) rc = -1;
    else {
      oi->fn = lwm_get_fn(B, k, "fn");
      rc = lwm_keysel_lua(ks, oi);
    }
  }
  lua_settop(L, k - 1);
  return rc == 0 ? 0 : wm_ctx_error(&B->ctx, "out of memory");
}
