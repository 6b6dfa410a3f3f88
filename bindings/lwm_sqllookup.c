/* SQL lookup joins in C: the "sql_lookup" plan node (lua/wm/sql/plan/temporal_join.lua,
 * c_lookup) built into a wm_sqllookup operator (ops/wm_sqllookup.h). The node:
 *   {prog = the probe row's key program (wm.sql.cexpr), lkey = {node, ...} (1-based),
 *    fields = {side column, ...}, rkey = {index into fields, ...} (1-based),
 *    out = {{name =, side = 0, from = probe field} | {name =, side = 1, field = i}, ...},
 *    types = {wm_ftype, ...} (per out column), outer = bool, ttl = ms, table = name,
 *    load = function() -> {row table, ...} (the side table, read whole)}.
 * The table is read by calling `load` (a Lua call per read, not per row): each row table's
 * columns become owned C values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_rexpr.h"
#include "lwm_sqllookup.h"
#include "ops/wm_sqllookup.h"

typedef struct lkread {
  lwm_opinfo *oi; /* fn: the node's load */
  size_t nfields;
  char **fields;  /* owned copies */
} lkread;

static void lkread_free(void *ud) {
  lkread *r = ud;
  if (!r) return;
  lwm_opinfo_free(r->oi);
  for (size_t i = 0; r->fields && i < r->nfields; i++) free(r->fields[i]);
  free(r->fields);
  free(r);
}

/* wm_sqllookup_load: calls load() and copies its rows' columns (raw reads: no metamethod) */
static int lk_load(void *ud, wm_value **vals, size_t *nrows, wm_error *err) {
  lkread *r = ud;
  lwm_bridge *B = r->oi->B;
  lua_State *L = B->L;
  int top = lua_gettop(L);
  lwm_push_fn(B, r->oi->fn);
  if (lwm_call(r->oi, 0, 1, NULL) != WM_OK) return -1; /* (the message is in B->ctx.error) */
  if (!lua_istable(L, -1)) {
    const char *what = luaL_typename(L, -1); /* (a static name) */
    lua_settop(L, top);
    return wm_error_set(err, "the table's reader gave %s, not a list of rows", what);
  }
  int list = lua_gettop(L);
  size_t n = (size_t)lua_rawlen(L, list), nf = r->nfields;
  wm_value *v = calloc(n * nf + 1, sizeof *v);
  if (!v) {
    lua_settop(L, top);
    return wm_error_set(err, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, list, (lua_Integer)i + 1);
    int row = lua_gettop(L);
    int ok = lua_istable(L, row);
    for (size_t j = 0; ok && j < nf; j++) {
      lua_pushstring(L, r->fields[j]);
      lua_rawget(L, row);
      wm_value t;
      ok = lwm_to_value(B, -1, &t) == 0;
      if (ok) {
        ok = wm_value_copy(&B->ctx.host, &v[i * nf + j], &t) == 0;
        if (t.type == WM_SLOT) wm_value_release(&B->ctx.host, &t);
      }
      lua_pop(L, 1);
    }
    int istab = lua_istable(L, row);
    lua_settop(L, row - 1);
    if (!ok) {
      for (size_t k = 0; k < n * nf; k++) wm_value_release(&B->ctx.host, &v[k]);
      free(v);
      lua_settop(L, top);
      return istab ? wm_error_set(err, "out of memory") : wm_error_set(err, "row %zu of the table is not a table", i + 1);
    }
  }
  lua_settop(L, top);
  *vals = v;
  *nrows = n;
  return 0;
}

/* t[k] as a list of n integers in [1, max], made 0-based, into out (n entries) */
static int read_idx(lua_State *L, int t, const char *k, size_t n, size_t max, size_t *out) {
  lua_getfield(L, t, k);
  int rc = lua_istable(L, -1) && (size_t)lua_rawlen(L, -1) == n ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    if (v < 1 || (size_t)v > max) rc = -1;
    else out[i] = (size_t)v - 1;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return rc;
}

static wm_op *build(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  int top = lua_gettop(L);
  char msg[300] = "out of memory";
  int *map = NULL, n = 0;
  size_t nk = 0, nf = 0, no = 0;
  int *lkey = NULL;
  size_t *tmp = NULL, *rkey = NULL, *orf = NULL;
  const char **fields = NULL, **onames = NULL, **olf = NULL;
  uint8_t *oside = NULL, *otypes = NULL;
  wm_op *op = NULL;
  lkread *rd = calloc(1, sizeof *rd);
  wm_rexpr *x = lwm_rexpr_read(B, node, "prog", &map, &n, msg, sizeof msg);
  if (!rd || !x) goto fail;
  snprintf(msg, sizeof msg, "a bad description");
  lua_getfield(L, node, "lkey");
  nk = lua_istable(L, -1) ? (size_t)lua_rawlen(L, -1) : 0;
  lua_pop(L, 1);
  lua_getfield(L, node, "fields");
  nf = lua_istable(L, -1) ? (size_t)lua_rawlen(L, -1) : 0;
  lua_pop(L, 1);
  lua_getfield(L, node, "out");
  no = lua_istable(L, -1) ? (size_t)lua_rawlen(L, -1) : 0;
  lua_pop(L, 1);
  if (nk < 1 || nf < 1 || no < 1) goto fail;
  lkey = calloc(nk, sizeof *lkey);
  tmp = calloc(nk, sizeof *tmp);
  rkey = calloc(nk, sizeof *rkey);
  fields = calloc(nf, sizeof *fields);
  rd->fields = calloc(nf, sizeof *rd->fields);
  onames = calloc(no, sizeof *onames);
  olf = calloc(no, sizeof *olf);
  orf = calloc(no, sizeof *orf);
  oside = calloc(no, 1);
  otypes = calloc(no, 1);
  if (!lkey || !tmp || !rkey || !fields || !rd->fields || !onames || !olf || !orf || !oside || !otypes) {
    snprintf(msg, sizeof msg, "out of memory");
    goto fail;
  }
  rd->nfields = nf;
  if (read_idx(L, node, "lkey", nk, (size_t)n, tmp) != 0 || read_idx(L, node, "rkey", nk, nf, rkey) != 0) goto fail;
  for (size_t k = 0; k < nk; k++) lkey[k] = map[tmp[k]];
  lua_getfield(L, node, "fields");
  for (size_t j = 0; j < nf; j++) {
    lua_rawgeti(L, -1, (lua_Integer)j + 1);
    fields[j] = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL; /* (the node keeps it) */
    lua_pop(L, 1);
    if (!fields[j]) break;
    rd->fields[j] = strdup(fields[j]);
    if (!rd->fields[j]) break;
  }
  lua_pop(L, 1);
  for (size_t j = 0; j < nf; j++)
    if (!rd->fields[j]) goto fail;
  lua_getfield(L, node, "out");
  lua_getfield(L, node, "types");
  int ok = lua_istable(L, -1);
  for (size_t i = 0; ok && i < no; i++) {
    lua_rawgeti(L, -2, (lua_Integer)i + 1);
    int e = lua_gettop(L);
    ok = lua_istable(L, e);
    lua_Integer sd = ok ? lwm_get_int(L, e, "side", -1) : -1;
    onames[i] = ok ? lwm_get_str(L, e, "name") : NULL;
    if (sd == 0) olf[i] = lwm_get_str(L, e, "from");
    if (sd == 1) {
      lua_Integer f = lwm_get_int(L, e, "field", 0);
      if (f >= 1 && (size_t)f <= nf) orf[i] = (size_t)f - 1;
      else ok = 0;
    }
    ok = ok && onames[i] && (sd == 1 || (sd == 0 && olf[i]));
    oside[i] = (uint8_t)(sd == 1);
    lua_rawgeti(L, -2, (lua_Integer)i + 1);
    lua_Integer ty = lua_tointeger(L, -1);
    ok = ok && ty >= 0 && ty <= WM_FT_ANY;
    otypes[i] = (uint8_t)ty;
    lua_settop(L, e - 1);
  }
  lua_pop(L, 2);
  if (!ok) goto fail;
  rd->oi = lwm_opinfo_new(B, where);
  if (!rd->oi) {
    snprintf(msg, sizeof msg, "out of memory");
    goto fail;
  }
  rd->oi->fn = lwm_get_fn(B, node, "load");
  lua_Integer ttl = lwm_get_int(L, node, "ttl", 0);
  lua_getfield(L, node, "outer");
  int outer = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!rd->oi->fn || ttl < 0) goto fail;
  wm_sqllookup_spec spec = {
    .table = lwm_get_str(L, node, "table"), .nkeys = nk, .x = x, .lkey = lkey, .nfields = nf,
    .fields = fields, .rkey = rkey, .nout = no, .out_names = onames, .out_types = otypes,
    .out_side = oside, .out_lfield = olf, .out_rfield = orf, .outer = outer, .ttl = (int64_t)ttl,
    .load = lk_load, .load_ud = rd, .load_free = lkread_free};
  x = NULL;
  lkread *keep = rd;
  rd = NULL;
  op = wm_sqllookup_new(&B->ctx, name, &spec); /* (takes the program and the reader) */
  if (op) keep->oi->op = op;
  goto done;
fail:
  wm_ctx_error(&B->ctx, "%s: building '%s': %s", where ? where : "?", name, msg);
done:
  lua_settop(L, top);
  wm_rexpr_free(x);
  lkread_free(rd);
  free(map);
  free(lkey);
  free(tmp);
  free(rkey);
  free(fields);
  free(onames);
  free(olf);
  free(orf);
  free(oside);
  free(otypes);
  return op;
}

int lwm_build_sqllookup(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                        wm_op **op) {
  if (strcmp(kind, "sql_lookup") != 0) return 0;
  *op = build(B, node, name, where);
  return 1;
}

void lwm_sqllookup_metrics(lua_State *L, const wm_op *op) {
  if (!wm_op_is_sqllookup(op)) return;
  lua_pushinteger(L, (lua_Integer)wm_sqllookup_rows(op));
  lua_setfield(L, -2, "rows");
  lua_pushinteger(L, (lua_Integer)wm_sqllookup_loads(op));
  lua_setfield(L, -2, "loads");
}
