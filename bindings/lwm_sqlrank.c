/* The rolling function of a SQL deduplication in C (core/ops/wm_sqlrank.h), read from the plan
 * node's `sqldedup` table, which lua/wm/sql/plan/lower.lua writes:
 *   {fields = {"visible column", ...}, time = "$o1", keep_last = bool, meaning = "..."}
 * (keyed_rolling node, agg = "sqldedup"), and of a Top-N from its `sqltopn` table:
 *   {fields = {...}, orders = {{field = "$o1", desc = bool, nulls_first = bool}, ...}, n = N,
 *    rn = "rank column" or nil, meaning = "..."} (agg = "sqltopn"). */
#include "lwm_sqlrank.h"

#include <stdio.h>
#include <stdlib.h>

#include "lwm_plan.h"

/* The list of strings t[key] (t a stack index) as a new array (borrowed strings: the node's
 * table holds them), its length in *n; NULL with the error set when out of memory. */
static const char **names_of(lwm_bridge *B, int t, const char *key, size_t *n) {
  lua_State *L = B->L;
  lua_getfield(L, t, key);
  int tf = lua_gettop(L);
  *n = lua_istable(L, tf) ? (size_t)luaL_len(L, tf) : 0;
  const char **names = calloc(*n ? *n : 1, sizeof *names);
  if (!names) wm_ctx_error(&B->ctx, "out of memory");
  for (size_t i = 1; names && i <= *n; i++) {
    lua_rawgeti(L, tf, (lua_Integer)i);
    names[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_settop(L, tf - 1);
  return names;
}

int lwm_winfn_sqldedup(lwm_bridge *B, int node, const char *where, wm_winfn *fn, char *meaning,
                       size_t mn) {
  lua_State *L = B->L;
  int top = lua_gettop(L), rc = WM_ERR;
  const char **fields = NULL;
  lua_getfield(L, node, "sqldedup");
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) {
    wm_ctx_error(&B->ctx, "%s: SQL deduplication without its description", where);
    goto done;
  }
  snprintf(meaning, mn, "%s", lwm_get_str(L, t, "meaning") ? lwm_get_str(L, t, "meaning") : "");
  size_t nf;
  if (!(fields = names_of(B, t, "fields", &nf))) goto done;
  lua_getfield(L, t, "keep_last");
  int keep_last = lua_toboolean(L, -1);
  lua_pop(L, 1);
  wm_sqldedup_spec spec = {.nfields = nf, .fields = fields, .time = lwm_get_str(L, t, "time"),
                           .keep_last = keep_last};
  wm_error err;
  wm_error_clear(&err);
  if (wm_keyedfn_sqldedup(fn, &spec, &err) != 0) { /* (copies every string) */
    wm_ctx_error(&B->ctx, "%s: %s", where, err.msg);
    goto done;
  }
  rc = WM_OK;
done:
  free(fields);
  lua_settop(L, top);
  return rc;
}

int lwm_winfn_sqltopn(lwm_bridge *B, int node, const char *where, wm_winfn *fn, char *meaning,
                      size_t mn) {
  lua_State *L = B->L;
  int top = lua_gettop(L), rc = WM_ERR;
  const char **fields = NULL;
  wm_sqltopn_order *orders = NULL;
  lua_getfield(L, node, "sqltopn");
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) {
    wm_ctx_error(&B->ctx, "%s: SQL Top-N without its description", where);
    goto done;
  }
  snprintf(meaning, mn, "%s", lwm_get_str(L, t, "meaning") ? lwm_get_str(L, t, "meaning") : "");
  size_t nf;
  if (!(fields = names_of(B, t, "fields", &nf))) goto done;
  lua_getfield(L, t, "orders");
  int to = lua_gettop(L);
  size_t no = lua_istable(L, to) ? (size_t)luaL_len(L, to) : 0;
  if (!(orders = calloc(no ? no : 1, sizeof *orders))) {
    wm_ctx_error(&B->ctx, "out of memory");
    goto done;
  }
  for (size_t j = 1; j <= no; j++) {
    lua_rawgeti(L, to, (lua_Integer)j);
    int tj = lua_gettop(L);
    orders[j - 1].field = lwm_get_str(L, tj, "field");
    lua_getfield(L, tj, "desc");
    orders[j - 1].desc = lua_toboolean(L, -1);
    lua_getfield(L, tj, "nulls_first");
    orders[j - 1].nulls_first = lua_toboolean(L, -1);
    lua_settop(L, tj - 1);
  }
  wm_sqltopn_spec spec = {.nfields = nf, .fields = fields, .norders = no, .orders = orders,
                          .n = (size_t)lwm_get_int(L, t, "n", 0), .rn_name = lwm_get_str(L, t, "rn")};
  wm_error err;
  wm_error_clear(&err);
  if (wm_keyedfn_sqltopn(fn, &spec, &err) != 0) { /* (copies every string) */
    wm_ctx_error(&B->ctx, "%s: %s", where, err.msg);
    goto done;
  }
  rc = WM_OK;
done:
  free(fields);
  free(orders);
  lua_settop(L, top);
  return rc;
}
