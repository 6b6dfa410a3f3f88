/* SQL filters and projections in C: the "sql_rows" plan node (wm.sql.cexpr) built into a
 * wm_rproject operator (ops/wm_rexpr.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwm_plan.h"
#include "lwm_rexpr.h"
#include "ops/wm_rexpr.h"
#include "ops/wm_sqlfmt.h"
#include "ops/wm_sqlfspart.h"

/* ---- user functions (WM_RX_UDF): the Lua function called with the arguments' values ---- */

typedef struct rx_udf {
  lwm_bridge *B;
  int fn;       /* in B's fns table: function(...) -> value (wm.sql.functions.call_scalar) */
  char *str;    /* the last string result, copied (valid until the next call) */
  size_t cap;
} rx_udf;

static void rx_udf_free(void *ud) {
  rx_udf *u = ud;
  if (!u) return;
  free(u->str);
  free(u);
}

/* The call's parts, for rx_udf_protected (a light userdata: nothing allocated to pass it). */
typedef struct rx_udf_args {
  rx_udf *u;
  const wm_value *args;
  int nargs;
} rx_udf_args;

/* (under lua_pcall) pushes the function and its arguments and calls it: a Lua string made for
 * an argument may run out of memory, which must not unwind the C frames of the operators
 * (their records would leak) */
static int rx_udf_protected(lua_State *L) {
  rx_udf_args *a = lua_touserdata(L, 2); /* (1: the function, pushed by the caller) */
  lwm_bridge *B = a->u->B;
  luaL_checkstack(L, a->nargs + 2, "calling a user function");
  lua_pushvalue(L, 1);
  for (int i = 0; i < a->nargs; i++) {
    /* scalars only (the planner's check): a row or a Lua value would need the bridge's
     * tables, which are not in this frame's stack */
    if (a->args[i].type == WM_ROW || a->args[i].type == WM_SLOT)
      return luaL_error(L, "argument %d of a user function is not a scalar", i + 1);
    lwm_push_value(B, &a->args[i]);
  }
  lua_call(L, a->nargs, 1);
  return 1;
}

static int rx_udf_call(void *ud, const wm_value *args, int nargs, wm_value *out, wm_error *err) {
  rx_udf *u = ud;
  lwm_bridge *B = u->B;
  lua_State *L = B->L;
  int msgh = B->msgh, slots = B->slots, fns = B->fns;
  if (!lua_checkstack(L, 4)) return wm_error_set(err, "out of memory (the Lua stack) calling a user function");
  rx_udf_args a = {u, args, nargs};
  /* (a light C function, a value of the fns table, a light userdata: nothing allocated) */
  lua_pushcfunction(L, rx_udf_protected);
  lwm_push_fn(B, u->fn);
  lua_pushlightuserdata(L, &a);
  B->depth++;
  int st = lua_pcall(L, 2, 1, msgh);
  if (--B->depth == 0) B->hook_ticks = 0;
  if (B->gcstress) lua_gc(L, LUA_GCCOLLECT); /* (WM_GCSTRESS, as lwm_call: the result is on the stack) */
  if (st != LUA_OK) {
    B->L = L; /* (as lwm_call: back to this frame) */
    B->msgh = msgh;
    B->slots = slots;
    B->fns = fns;
    size_t n;
    const char *m = lua_tolstring(L, -1, &n);
    if (!m) m = "(error object is not a string)";
    const char *tb = strstr(m, "\nstack traceback:");
    int head = tb ? (int)(tb - m) : (int)strlen(m);
    wm_error_set(err, "%.*s", head, m);
    if (tb) wm_error_set_trace(err, tb, strlen(tb));
    lua_pop(L, 1);
    return -1;
  }
  int t = lua_type(L, -1);
  int rc = 0;
  if (t == LUA_TNIL) {
    *out = wm_nil();
  } else if (t == LUA_TBOOLEAN) {
    *out = wm_bool(lua_toboolean(L, -1));
  } else if (t == LUA_TNUMBER) {
    *out = lua_isinteger(L, -1) ? wm_int((int64_t)lua_tointeger(L, -1)) : wm_float((double)lua_tonumber(L, -1));
  } else if (t == LUA_TSTRING) {
    size_t n;
    const char *p = lua_tolstring(L, -1, &n);
    if (n + 1 > u->cap) {
      char *q = realloc(u->str, n + 1);
      if (!q) rc = wm_error_set(err, "out of memory");
      else {
        u->str = q;
        u->cap = n + 1;
      }
    }
    if (rc == 0) {
      if (n) memcpy(u->str, p, n);
      u->str[n] = '\0';
      *out = wm_cstr(u->str, n);
    }
  } else { /* (call_scalar checked the declared type: a scalar, or nil) */
    rc = wm_error_set(err, "a user function returned a %s", luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return rc;
}

/* A "udf" node: {op = "udf", fn = function, args = {...}, where = "file:line:col"}. */
static int read_udf(lwm_bridge *B, int t, wm_rexpr *x, const int *args, int nargs, char *buf, size_t bufsz) {
  lua_State *L = B->L;
  lua_getfield(L, t, "fn");
  int isfn = lua_type(L, -1) == LUA_TFUNCTION;
  lua_pop(L, 1);
  if (!isfn) {
    snprintf(buf, bufsz, "a udf node without its function");
    return -1;
  }
  rx_udf *u = calloc(1, sizeof *u);
  if (!u) {
    snprintf(buf, bufsz, "out of memory");
    return -1;
  }
  u->B = B;
  u->fn = lwm_get_fn(B, t, "fn");
  wm_rx_udf cb = {rx_udf_call, rx_udf_free, u};
  /* (the program owns u from here, also on failure) */
  // cppcheck-suppress memleak
  return wm_rexpr_udf(x, &cb, args, nargs, lwm_get_str(L, t, "where"));
}

/* node i of the program table at prog: added to x; its index, or -1 with the message in buf */
static int read_node(lwm_bridge *B, int prog, lua_Integer i, wm_rexpr *x, const int *map, char *buf,
                     size_t bufsz) {
  lua_State *L = B->L;
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
      if (op == WM_RX_UDF) {
        buf[0] = '\0';
        r = read_udf(B, t, x, args, nargs, buf, bufsz);
        if (r < 0 && buf[0]) op = -1; /* (the message is in buf) */
      } else {
        r = wm_rexpr_op(x, (wm_rx_op)op, args, nargs, lwm_get_str(L, t, "where"));
      }
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
    m[i - 1] = read_node(B, prog, i, x, m, msg, msgsz);
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
  /* node.changes: the records are changes {k, r} (the SQL planner's, over an updating input) */
  lua_getfield(L, node, "changes");
  int changes = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (*op && changes && wm_rproject_changes(*op) != 0) {
    *op = NULL; /* (the context frees the operator it made) */
    wm_ctx_error(&B->ctx, "out of memory");
  }
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

/* The strings and kinds of node[names_key] and node[kinds_key] (borrowed strings: the plan
 * keeps them); their count, or -1 (out of memory: -2, a bad entry). */
static int names_kinds(lua_State *L, int node, const char *names_key, const char *kinds_key, const char ***names,
                       uint8_t **kinds) {
  lua_getfield(L, node, names_key);
  lua_getfield(L, node, kinds_key);
  int n = lua_istable(L, -2) ? (int)lua_rawlen(L, -2) : 0;
  *names = calloc((size_t)n + 1, sizeof **names);
  *kinds = malloc((size_t)n + 1);
  int rc = !*names || !*kinds ? -1 : n;
  for (int i = 0; rc >= 0 && i < n; i++) {
    lua_rawgeti(L, -2, i + 1);
    (*names)[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, -1, i + 1);
    lua_Integer k = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (!(*names)[i] || k < 0 || k > WM_FSP_STRING) rc = -2;
    else (*kinds)[i] = (uint8_t)k;
  }
  lua_pop(L, 2);
  return rc;
}

/* "sql_fs_partitioned" (lua/wm/sql/connectors.lua): path, cols + col_kinds (the partition
 * columns), fields + kinds (the lines' columns), delim, null_literal, partition_time,
 * success, delay, rollover, check (ms), pattern, what */
static int build_fspart(lwm_bridge *B, int node, const char *name, const char *where, wm_op **op) {
  lua_State *L = B->L;
  const char **cols = NULL, **fields = NULL;
  uint8_t *ck = NULL, *fk = NULL;
  int nc = names_kinds(L, node, "cols", "col_kinds", &cols, &ck);
  int nf = nc < 0 ? nc : names_kinds(L, node, "fields", "kinds", &fields, &fk);
  *op = NULL;
  if (nc == -1 || nf == -1) wm_ctx_error(&B->ctx, "out of memory");
  else if (nc < 0 || nf < 0) wm_ctx_error(&B->ctx, "%s: building '%s': a bad column name or kind", where ? where : "?", name);
  else {
    const char *delim = lwm_get_str(L, node, "delim");
    lua_getfield(L, node, "partition_time");
    int pt = lua_toboolean(L, -1);
    lua_getfield(L, node, "success");
    int success = lua_toboolean(L, -1);
    lua_pop(L, 2);
    wm_fspart_config cfg = {.path = lwm_get_str(L, node, "path"), .ncols = nc, .cols = cols, .col_kinds = ck,
                            .nfields = nf, .fields = fields, .kinds = fk, .delim = delim && delim[0] ? delim[0] : ',',
                            .null_literal = lwm_get_str(L, node, "null_literal"), .partition_time = pt,
                            .success = success, .delay = lwm_get_int(L, node, "delay", 0),
                            .rollover = lwm_get_int(L, node, "rollover", 0), .check = lwm_get_int(L, node, "check", 60000),
                            .pattern = lwm_get_str(L, node, "pattern"), .what = lwm_get_str(L, node, "what")};
    *op = wm_fspart_new(&B->ctx, name, &cfg);
  }
  free(cols);
  free(fields);
  free(ck);
  free(fk);
  return 1;
}

int lwm_build_rexpr(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                    wm_op **op) {
  if (strcmp(kind, "sql_format") == 0) return build_format(B, node, name, where, op);
  if (strcmp(kind, "sql_fs_partitioned") == 0) return build_fspart(B, node, name, where, op);
  if (strcmp(kind, "sql_rows") != 0) return 0;
  return build(B, node, name, where, op);
}
