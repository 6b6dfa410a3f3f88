/* The window function of a SQL windowed GROUP BY computed in C (core/ops/wm_sqlagg.h): read
 * from the plan node's `sqlagg` table, which lua/wm/sql/plan/lower.lua writes:
 *   {nkeys = n, meaning = "...",
 *    aggs = {{kind = "COUNT(*)"|"COUNT"|"COUNT(DISTINCT)"|"SUM"|"MIN"|"MAX"|"AVG", field = "f",
 *             integer = bool,
 *             filter = {{field = "f", op = "<"|"<="|">"|">="|"="|"<>", value = number}, ...}}},
 *    out = {{name = "n", src = "key"|"agg"|"start"|"end"|"time", index = i (1-based)}}}
 * and the rolling function of an unwindowed GROUP BY (changelog: wm_keyedfn_sqlagg) from the
 * same table (keyed_rolling node, agg = "sqlagg"), with `updating = true` over an updating
 * input (its records changes {k, r}: Lua tables ones read by unwrap_lua). */
#include "lwm_sqlagg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwm_plan.h"

/* A change of an updating input that is a Lua table {k = "+I"|"+U"|"-U"|"-D", r = row} (a Lua
 * operator's: the Lua group aggregate, a regular join, ...): its sign, and its row as a slot
 * (wm_sqlagg_unwrap). Raw reads: no metamethod runs, nothing raises. */
static int unwrap_lua(void *ud, const wm_value *rec, int *sign, wm_value *row, wm_error *err) {
  return lwm_change_unwrap(ud, rec, "SQL GROUP BY over an updating input", sign, NULL, row, err);
}

static int find(const char *s, const char *const *names, int n) {
  for (int i = 0; s && i < n; i++)
    if (strcmp(s, names[i]) == 0) return i + 1;
  return 0;
}

int lwm_winfn_sqlagg(lwm_bridge *B, int node, const char *where, wm_winfn *fn, char *meaning,
                     size_t mn, int changelog) {
  lua_State *L = B->L;
  int top = lua_gettop(L), rc = WM_ERR;
  static const char *const kinds[] = {"COUNT(*)", "COUNT", "SUM", "MIN", "MAX", "AVG", "COUNT(DISTINCT)"};
  static const char *const ops[] = {"<", "<=", ">", ">=", "=", "<>"};
  static const char *const srcs[] = {"key", "agg", "start", "end", "time"};
  wm_sqlagg_def *defs = NULL;
  wm_sqlagg_cond *conds = NULL;
  wm_sqlagg_out *outs = NULL;
  lua_getfield(L, node, "sqlagg");
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) {
    wm_ctx_error(&B->ctx, "%s: SQL aggregate without its description", where);
    goto done;
  }
  snprintf(meaning, mn, "%s", lwm_get_str(L, t, "meaning") ? lwm_get_str(L, t, "meaning") : "");
  wm_sqlagg_spec spec = {.nkeys = (size_t)lwm_get_int(L, t, "nkeys", 0)};
  lua_getfield(L, t, "updating");
  if (lua_toboolean(L, -1)) { /* an unwindowed GROUP BY over an updating input */
    spec.updating = 1;
    spec.unwrap = unwrap_lua;
    spec.unwrap_ud = B;
  }
  lua_pop(L, 1);
  lua_getfield(L, t, "aggs");
  int ta = lua_gettop(L);
  size_t na = lua_istable(L, ta) ? (size_t)luaL_len(L, ta) : 0, nc = 0;
  for (size_t i = 1; i <= na; i++) { /* the conditions, all in one array */
    lua_rawgeti(L, ta, (lua_Integer)i);
    lua_getfield(L, -1, "filter");
    if (lua_istable(L, -1)) nc += (size_t)luaL_len(L, -1);
    lua_pop(L, 2);
  }
  lua_getfield(L, t, "out");
  int to = lua_gettop(L);
  size_t no = lua_istable(L, to) ? (size_t)luaL_len(L, to) : 0;
  defs = calloc(na ? na : 1, sizeof *defs);
  conds = calloc(nc ? nc : 1, sizeof *conds);
  outs = calloc(no ? no : 1, sizeof *outs);
  if (!defs || !conds || !outs) {
    wm_ctx_error(&B->ctx, "out of memory");
    goto done;
  }
  size_t ci = 0;
  for (size_t i = 1; i <= na; i++) {
    lua_rawgeti(L, ta, (lua_Integer)i);
    int ti = lua_gettop(L);
    wm_sqlagg_def *d = &defs[i - 1];
    d->kind = find(lwm_get_str(L, ti, "kind"), kinds, 7);
    d->field = lwm_get_str(L, ti, "field"); /* borrowed: the node outlives the call */
    lua_getfield(L, ti, "integer");
    d->integer = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, ti, "filter");
    if (lua_istable(L, -1)) {
      int tf = lua_gettop(L);
      size_t k = (size_t)luaL_len(L, tf);
      d->cond = &conds[ci];
      d->ncond = k;
      for (size_t j = 1; j <= k; j++, ci++) {
        lua_rawgeti(L, tf, (lua_Integer)j);
        int tc = lua_gettop(L);
        conds[ci].field = lwm_get_str(L, tc, "field");
        conds[ci].op = find(lwm_get_str(L, tc, "op"), ops, 6);
        lua_getfield(L, tc, "value");
        if (lua_isinteger(L, -1)) conds[ci].value = wm_int((int64_t)lua_tointeger(L, -1));
        else if (lua_type(L, -1) == LUA_TNUMBER) conds[ci].value = wm_float((double)lua_tonumber(L, -1));
        lua_pop(L, 2);
      }
    }
    lua_settop(L, ti - 1);
  }
  for (size_t j = 1; j <= no; j++) {
    lua_rawgeti(L, to, (lua_Integer)j);
    int tj = lua_gettop(L);
    outs[j - 1].name = lwm_get_str(L, tj, "name");
    outs[j - 1].src = find(lwm_get_str(L, tj, "src"), srcs, 5);
    outs[j - 1].index = (int)lwm_get_int(L, tj, "index", 0) - 1;
    lua_settop(L, tj - 1);
  }
  spec.naggs = na;
  spec.aggs = defs;
  spec.nout = no;
  spec.out = outs;
  wm_error err;
  wm_error_clear(&err);
  int made = changelog ? wm_keyedfn_sqlagg(fn, &spec, &err) : wm_winfn_sqlagg(fn, &spec, &err);
  if (made != 0) { /* (copies every string) */
    wm_ctx_error(&B->ctx, "%s: %s", where, err.msg);
    goto done;
  }
  rc = WM_OK;
done:
  free(defs);
  free(conds);
  free(outs);
  lua_settop(L, top);
  return rc;
}
