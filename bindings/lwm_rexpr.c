/* SQL filters and projections in C: the "sql_rows" plan node (wm.sql.cexpr) built into a
 * wm_rproject operator (ops/wm_rexpr.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwm_plan.h"
#include "lwm_rexpr.h"
#include "ops/wm_rexpr.h"
#include "ops/wm_sqlfmt.h"

/* node i of the program table at prog: added to x; its index, or -1 with the message in buf */
static int read_node(lua_State *L, int prog, lua_Integer i, wm_rexpr *x, const int *map, char *buf,
                     size_t bufsz) {
  lua_rawgeti(L, prog, i);
  int t = lua_gettop(L);
  int r = -1;
  const char *opname = lwm_get_str(L, t, "op");
  int op = opname ? wm_rexpr_op_of(opname) : -1;
  if (op < 0) {
    snprintf(buf, bufsz, "node %lld: unknown operator '%s'", (long long)i, opname ? opname : "?");
  } else if (op == WM_RX_COL || op == WM_RX_SUBCOL) {
    const char *name = lwm_get_str(L, t, "name"), *sub = lwm_get_str(L, t, "sub");
    if (!name || (op == WM_RX_SUBCOL && !sub)) snprintf(buf, bufsz, "node %lld: a column without a name", (long long)i);
    else r = wm_rexpr_col(x, name, op == WM_RX_SUBCOL ? sub : NULL);
  } else if (op == WM_RX_LIT) {
    wm_value v = wm_nil();
    lua_getfield(L, t, "value");
    switch (lua_type(L, -1)) {
    case LUA_TBOOLEAN: v = wm_bool(lua_toboolean(L, -1)); break;
    case LUA_TNUMBER:
      v = lua_isinteger(L, -1) ? wm_int((int64_t)lua_tointeger(L, -1)) : wm_float((double)lua_tonumber(L, -1));
      break;
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      v = wm_cstr(s, n);
      break;
    }
    default: break;
    }
    r = wm_rexpr_lit(x, &v); /* copied before the pop */
    lua_pop(L, 1);
  } else {
    lua_getfield(L, t, "args");
    int nargs = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
    int *args = malloc((size_t)nargs * sizeof(int) + 1);
    if (args) {
      for (int j = 0; j < nargs; j++) {
        lua_rawgeti(L, -1, j + 1);
        lua_Integer a = lua_tointeger(L, -1);
        lua_pop(L, 1);
        args[j] = a >= 1 && a < i ? map[a - 1] : -1;
      }
      r = wm_rexpr_op(x, (wm_rx_op)op, args, nargs, lwm_get_str(L, t, "where"));
      free(args);
    }
    lua_pop(L, 1);
  }
  if (r < 0 && op >= 0) snprintf(buf, bufsz, "node %lld: %s", (long long)i, wm_rexpr_error(x));
  lua_pop(L, 1);
  return r;
}

wm_rexpr *lwm_rexpr_read(lwm_bridge *B, int node, const char *field, int **map, int *count, char *msg,
                         size_t msgsz) {
  lua_State *L = B->L;
  snprintf(msg, msgsz, "out of memory");
  *map = NULL;
  *count = 0;
  lua_getfield(L, node, field);
  int prog = lua_gettop(L);
  lua_Integer n = lua_istable(L, prog) ? (lua_Integer)lua_rawlen(L, prog) : 0;
  wm_rexpr *x = wm_rexpr_new();
  int *m = malloc((size_t)n * sizeof(int) + 1);
  if (!x || !m) goto fail;
  for (lua_Integer i = 1; i <= n; i++) {
    m[i - 1] = read_node(L, prog, i, x, m, msg, msgsz);
    if (m[i - 1] < 0) goto fail;
  }
  lua_pop(L, 1);
  *map = m;
  *count = (int)n;
  return x;
fail:
  lua_pop(L, 1);
  wm_rexpr_free(x);
  free(m);
  return NULL;
}

static int build(lwm_bridge *B, int node, const char *name, const char *where, wm_op **op) {
  lua_State *L = B->L;
  char msg[300] = "out of memory";
  int *map = NULL, *out = NULL;
  wm_schema *schema = NULL;
  char **names = NULL;
  uint8_t *types = NULL;
  int nout = 0, filter = -1, ok = 0, n = 0;
  lua_pushnil(L); /* (in place of the program table the code below pops) */
  wm_rexpr *x = lwm_rexpr_read(B, node, "prog", &map, &n, msg, sizeof msg);
  if (!x) goto done;
  lua_Integer f = lwm_get_int(L, node, "filter", 0);
  if (f < 0 || f > n) {
    snprintf(msg, sizeof msg, "filter node %lld out of range", (long long)f);
    goto done;
  }
  if (f) filter = map[f - 1];
  lua_getfield(L, node, "out");
  if (lua_istable(L, -1)) {
    nout = (int)lua_rawlen(L, -1);
    out = malloc((size_t)nout * sizeof(int) + 1);
    names = calloc((size_t)nout + 1, sizeof(char *));
    types = malloc((size_t)nout + 1);
    if (!out || !names || !types) {
      lua_pop(L, 1);
      goto done;
    }
    lua_getfield(L, node, "names");
    lua_getfield(L, node, "types");
    for (int i = 0; i < nout; i++) {
      lua_rawgeti(L, -3, i + 1);
      lua_Integer k = lua_tointeger(L, -1);
      lua_rawgeti(L, -3, i + 1);
      names[i] = (char *)lua_tostring(L, -1);
      lua_rawgeti(L, -3, i + 1);
      types[i] = (uint8_t)lua_tointeger(L, -1);
      lua_pop(L, 3);
      if (k < 1 || k > n || !names[i] || types[i] > WM_FT_ANY) {
        lua_pop(L, 3);
        snprintf(msg, sizeof msg, "output column %d: a bad node, name or type", i + 1);
        goto done;
      }
      out[i] = map[k - 1];
    }
    /* the names stay valid while the plan's tables are on the stack */
    schema = wm_schema_new((uint32_t)nout, (const char *const *)names, types);
    lua_pop(L, 2);
    if (!schema) {
      lua_pop(L, 1);
      goto done;
    }
  }
  lua_pop(L, 1);
  ok = 1;
done:
  lua_pop(L, 1); /* the placeholder */
  free(map);
  free(names);
  free(types);
  if (!ok) {
    wm_rexpr_free(x);
    if (schema) wm_schema_release(schema);
    free(out);
    wm_ctx_error(&B->ctx, "%s: building '%s': %s", where ? where : "?", name, msg);
    *op = NULL;
    return 1;
  }
  *op = wm_rproject_new(&B->ctx, name, x, filter, out, nout, schema);
  if (schema) wm_schema_release(schema); /* the operator holds its own reference */
  /* a filter and projection in one (wm.sql.cexpr's try_project): the projection's errors name
   * the map after it, "map (job.sql:2)" where this one is "filter (job.sql:2)" (and " 1/2") */
  const char *pname = lwm_get_str(L, node, "proj_name"), *own = lwm_get_str(L, node, "name");
  size_t lown = own ? strlen(own) : 0;
  if (*op && pname && own && strncmp(name, own, lown) == 0) {
    char full[700];
    snprintf(full, sizeof full, "%s%s", pname, name + lown);
    if (wm_rproject_name_projection(*op, full, NULL) != 0)
      *op = NULL; /* (the context, which holds the operator, frees it; its error is set) */
  }
  free(out);
  return 1;
}

/* "sql_format": node.names (the columns) and node.kinds (wm_sqlf_kind each) */
static int build_format(lwm_bridge *B, int node, const char *name, const char *where, wm_op **op) {
  lua_State *L = B->L;
  lua_getfield(L, node, "names");
  lua_getfield(L, node, "kinds");
  int n = lua_istable(L, -2) ? (int)lua_rawlen(L, -2) : 0;
  const char **names = calloc((size_t)n + 1, sizeof *names);
  uint8_t *kinds = malloc((size_t)n + 1);
  int bad = !names || !kinds;
  for (int i = 0; !bad && i < n; i++) {
    lua_rawgeti(L, -2, i + 1);
    names[i] = lua_tostring(L, -1); /* the plan keeps the string */
    lua_pop(L, 1);
    lua_rawgeti(L, -1, i + 1);
    lua_Integer k = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (!names[i] || k < 0 || k > WM_SQLF_TIMESTAMP) bad = 2;
    else kinds[i] = (uint8_t)k;
  }
  *op = bad ? NULL : wm_sqlfmt_new(&B->ctx, name, n, names, kinds);
  lua_pop(L, 2);
  free(names);
  free(kinds);
  if (bad == 1) wm_ctx_error(&B->ctx, "out of memory");
  if (bad == 2) wm_ctx_error(&B->ctx, "%s: building '%s': a bad column name or kind", where ? where : "?", name);
  return 1;
}

int lwm_build_rexpr(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                    wm_op **op) {
  if (strcmp(kind, "sql_format") == 0) return build_format(B, node, name, where, op);
  if (strcmp(kind, "sql_rows") != 0) return 0;
  return build(B, node, name, where, op);
}
