/* The interval join from the plan (a:key_by(k1):interval_join(b:key_by(k2)):between(...)
 * :process(fn); lua/wm/interval_join.lua): the core operator (ops/wm_ijoin.h) keeps both
 * sides' records as values in C; the user's fn(left, right, ctx, out) runs per pair.
 * And the SQL regular join in C (node kind "sql_join", ops/wm_sqljoin.h; lua/wm/connect.lua's
 * ConnectedStreams:_sql_join, planned by lua/wm/sql/plan/regular_join.lua). */
#include <stdlib.h>
#include <string.h>

#include "ops/wm_ijoin.h"
#include "ops/wm_sqljoin.h"
#include "lwm_join.h"
#include "lwm_ops.h"
#include "lwm_plan.h"

typedef struct jproc {
  lwm_opinfo oi; /* first (freed by lwm_opinfo_free); fn: the join function; fn3: ctx;
                  * fn4: out */
  wm_op *op;
  int64_t ts; /* the timestamp of what out() emits: the larger of the pair's */
} jproc;

static jproc *jproc_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

/* out(value) */
static int l_ij_out(lua_State *L) {
  jproc *k = jproc_of(L);
  return lwm_emit_arg(k->oi.B, L, k->op, 0, 1, k->ts);
}

/* ctx:output(tag, value) */
static int l_ij_output(lua_State *L) {
  jproc *k = jproc_of(L);
  int port = wm_op_port(k->op, luaL_checkstring(L, 2));
  if (port < 0) return luaL_error(L, "out of memory");
  return lwm_emit_arg(k->oi.B, L, k->op, port, 3, k->ts);
}

static void set_int(lua_State *L, const char *f, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, f);
}

/* fn(left, right, ctx, out) for one pair */
static int ij_join(void *ud, wm_op *op, const wm_value *key, const wm_value *left, int64_t lts,
                   const wm_value *right, int64_t rts) {
  jproc *k = ud;
  lwm_bridge *B = k->oi.B;
  lua_State *L = B->L;
  k->op = k->oi.op = op;
  k->ts = lts > rts ? lts : rts; /* (an outer join's padded record: the other is MIN) */
  luaL_checkstack(L, 8, "wmrun: interval join");
  lwm_push_fn(B, k->oi.fn);
  if (left) lwm_push_value(B, left);
  else lua_pushnil(L);
  if (right) lwm_push_value(B, right);
  else lua_pushnil(L);
  lwm_push_fn(B, k->oi.fn3);
  set_int(L, "left_timestamp", lts);
  set_int(L, "right_timestamp", rts);
  set_int(L, "timestamp", k->ts);
  lwm_push_value(B, key);
  lua_setfield(L, -2, "key");
  lwm_push_fn(B, k->oi.fn4);
  return lwm_call(&k->oi, 4, 0, right == NULL || (left && lts >= rts) ? left : right);
}

static void free_keysel(void *ud) {
  wm_keysel *ks = ud;
  if (ks->free) ks->free(ks->ud);
  free(ks);
}

/* Lists a built key selector until the operator takes it; -1 (it is freed) when out of
 * memory. */
static int hold_keysel(lwm_bridge *B, const wm_keysel *ks, lwm_pending **p) {
  wm_keysel *h = malloc(sizeof *h);
  *p = h ? lwm_pending_add(B, free_keysel, h) : NULL;
  if (!*p) {
    free(h);
    if (ks->free) ks->free(ks->ud);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  *h = *ks;
  return 0;
}

/* The operator takes the key selector: its holder goes, not the selector. */
static void release_hold(lwm_bridge *B, lwm_pending *p) {
  if (!p) return;
  wm_keysel *h = p->ud;
  lwm_pending_done(B, p);
  free(h);
}

static wm_op *build_interval_join(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_ijoin_config cfg;
  memset(&cfg, 0, sizeof cfg);
  /* the plan first (lua/wm/interval_join.lua checked it): reading may raise, before
   * anything is allocated */
  int fn = lwm_get_fn(B, node, "fn");
  cfg.lower = (int64_t)lwm_get_int(L, node, "lower", 0);
  cfg.upper = (int64_t)lwm_get_int(L, node, "upper", 0);
  cfg.lower_exclusive = lwm_get_int(L, node, "lower_exclusive", 0) != 0;
  cfg.upper_exclusive = lwm_get_int(L, node, "upper_exclusive", 0) != 0;
  cfg.late_tag[0] = lwm_get_str(L, node, "late_left");
  cfg.late_tag[1] = lwm_get_str(L, node, "late_right");
  cfg.outer[0] = lwm_get_int(L, node, "outer_left", 0) != 0;
  cfg.outer[1] = lwm_get_int(L, node, "outer_right", 0) != 0;
  cfg.wm_delay = (int64_t)lwm_get_int(L, node, "watermark_delay", 0);
  lwm_opinfo *oi = lwm_opinfo_new(B, where);
  jproc *k = oi ? realloc(oi, sizeof *k) : NULL;
  lwm_pending *pp = k ? lwm_pending_add(B, lwm_opinfo_free, k) : NULL;
  if (!pp) {
    lwm_opinfo_free(k ? &k->oi : oi);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  k->op = NULL;
  k->ts = WM_TIME_MIN;
  k->oi.fn = fn;
  lwm_pending *p1 = NULL, *p2 = NULL;
  if (lwm_build_keysel(B, node, where, &cfg.keysel) != 0 || hold_keysel(B, &cfg.keysel, &p1) != 0 ||
      lwm_build_keysel_of(B, node, "key2", where, &cfg.keysel2) != 0 ||
      hold_keysel(B, &cfg.keysel2, &p2) != 0) {
    lwm_pending_done(B, pp);
    lwm_opinfo_free(k);
    if (p1) { /* the first key selector goes with its holder */
      wm_keysel *h = p1->ud;
      lwm_pending_done(B, p1);
      free_keysel(h);
    }
    return NULL;
  }
  /* ctx, reused for every pair (its fields are set per call), and out */
  lua_createtable(L, 0, 6);
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_ij_output, 1);
  lua_setfield(L, -2, "output");
  k->oi.fn3 = lwm_store_fn(B);
  lua_pushlightuserdata(L, k);
  lua_pushcclosure(L, l_ij_out, 1);
  k->oi.fn4 = lwm_store_fn(B);
  cfg.fn.join = ij_join;
  cfg.fn.free = lwm_opinfo_free;
  cfg.fn.ud = k;
  lwm_pending_done(B, pp);
  release_hold(B, p1);
  release_hold(B, p2);
  wm_op *op = wm_ijoin_new(&B->ctx, name, &cfg);
  if (op) k->op = k->oi.op = op;
  return op;
}

/* ---- the SQL regular join -------------------------------------------------------------------
 * The node's `sqljoin` table: {nkeys = n, key_float = {bool, ...}, ttl = ms or nil,
 *   left = {fields = {"a", ...}, key = {i, ...}, updating = bool}, right = {...} (key: 1-based
 *   indexes into fields; updating: the side's records are changes {k, r}),
 *   out = {{name = "x", side = 0|1, field = i (1-based)}, ...}}. Read with raw accesses (no
 * metamethod, nothing raises); the strings are borrowed from the node for the call. */

/* A change of an updating side that is a Lua table {k = "+I"|"+U"|"-U"|"-D", r = row} (a Lua
 * operator's: the Lua group aggregate, ...): its sign, kind letter and row as a slot
 * (wm_sqljoin_unwrap). Raw reads: no metamethod runs, nothing raises. */
static int sqljoin_unwrap(void *ud, const wm_value *rec, int *sign, char *letter, wm_value *row, wm_error *err) {
  return lwm_change_unwrap(ud, rec, "the SQL regular join's updating input", sign, letter, row, err);
}

typedef struct sjread {
  const char **names[2], **onames;
  size_t *key[2], *ofield;
  uint8_t *kfloat, *oside;
} sjread;

static void sjread_free(sjread *r) {
  for (int d = 0; d < 2; d++) {
    free(r->names[d]);
    free(r->key[d]);
  }
  free(r->onames);
  free(r->ofield);
  free(r->kfloat);
  free(r->oside);
}

/* t[k] as a list of n strings into *out (allocated); -1 when not. */
static int read_names(lua_State *L, int t, const char *k, size_t *n, const char ***out) {
  lua_getfield(L, t, k);
  int l = lua_gettop(L), rc = 0;
  *n = lua_istable(L, l) ? (size_t)lua_rawlen(L, l) : 0;
  *out = calloc(*n ? *n : 1, sizeof **out);
  if (!*out) rc = -1;
  for (size_t i = 0; rc == 0 && i < *n; i++) {
    lua_rawgeti(L, l, (lua_Integer)i + 1);
    if (lua_type(L, -1) == LUA_TSTRING) (*out)[i] = lua_tostring(L, -1); /* (in the node) */
    else rc = -1;
    lua_pop(L, 1);
  }
  lua_settop(L, l - 1);
  return rc;
}

/* t[k] as a list of n integers in [1, max], made 0-based, into out (n allocated). */
static int read_indexes(lua_State *L, int t, const char *k, size_t n, size_t max, size_t *out) {
  lua_getfield(L, t, k);
  int l = lua_gettop(L), rc = lua_istable(L, l) && lua_rawlen(L, l) == n ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    lua_rawgeti(L, l, (lua_Integer)i + 1);
    lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    if (v < 1 || (size_t)v > max) rc = -1;
    else out[i] = (size_t)v - 1;
    lua_pop(L, 1);
  }
  lua_settop(L, l - 1);
  return rc;
}

static int read_sqljoin(lua_State *L, int t, wm_sqljoin_spec *spec, sjread *r) {
  lua_Integer nk = lwm_get_int(L, t, "nkeys", 0);
  if (nk < 1 || nk > 64) return -1;
  spec->nkeys = (size_t)nk;
  spec->ttl = (int64_t)lwm_get_int(L, t, "ttl", 0);
  static const char *const sides[2] = {"left", "right"};
  for (int d = 0; d < 2; d++) {
    lua_getfield(L, t, sides[d]);
    int st = lua_gettop(L);
    int ok = lua_istable(L, st) && read_names(L, st, "fields", &spec->side[d].nfields, &r->names[d]) == 0;
    if (ok) ok = (r->key[d] = calloc(spec->nkeys, sizeof *r->key[d])) != NULL;
    if (ok) ok = read_indexes(L, st, "key", spec->nkeys, spec->side[d].nfields, r->key[d]) == 0;
    if (ok) {
      lua_getfield(L, st, "updating");
      spec->side[d].updating = lua_toboolean(L, -1);
      lua_pop(L, 1);
    }
    lua_settop(L, st - 1);
    if (!ok) return -1;
    spec->side[d].fields = r->names[d];
    spec->side[d].key = r->key[d];
  }
  if (!(r->kfloat = calloc(spec->nkeys, 1))) return -1;
  lua_getfield(L, t, "key_float");
  for (size_t i = 0; lua_istable(L, -1) && i < spec->nkeys; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    r->kfloat[i] = lua_toboolean(L, -1) ? 1 : 0;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  spec->key_float = r->kfloat;
  lua_getfield(L, t, "out");
  int ot = lua_gettop(L);
  size_t no = lua_istable(L, ot) ? (size_t)lua_rawlen(L, ot) : 0;
  r->onames = calloc(no ? no : 1, sizeof *r->onames);
  r->ofield = calloc(no ? no : 1, sizeof *r->ofield);
  r->oside = calloc(no ? no : 1, 1);
  int ok = r->onames && r->ofield && r->oside && no > 0;
  for (size_t i = 0; ok && i < no; i++) {
    lua_rawgeti(L, ot, (lua_Integer)i + 1);
    int e = lua_gettop(L);
    const char *nm = lua_istable(L, e) ? lwm_get_str(L, e, "name") : NULL;
    lua_Integer sd = lua_istable(L, e) ? lwm_get_int(L, e, "side", -1) : -1;
    lua_Integer f = lua_istable(L, e) ? lwm_get_int(L, e, "field", 0) : 0;
    ok = nm && (sd == 0 || sd == 1) && f >= 1 && (size_t)f <= spec->side[sd].nfields;
    if (ok) {
      r->onames[i] = nm;
      r->oside[i] = (uint8_t)sd;
      r->ofield[i] = (size_t)f - 1;
    }
    lua_settop(L, e - 1);
  }
  lua_settop(L, ot - 1);
  spec->nout = no;
  spec->out_names = r->onames;
  spec->out_side = r->oside;
  spec->out_field = r->ofield;
  return ok ? 0 : -1;
}

static wm_op *build_sql_join(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  int top = lua_gettop(L);
  wm_sqljoin_spec spec;
  sjread r;
  memset(&spec, 0, sizeof spec);
  memset(&r, 0, sizeof r);
  lua_getfield(L, node, "sqljoin");
  int ok = lua_istable(L, -1) && read_sqljoin(L, lua_gettop(L), &spec, &r) == 0;
  lua_settop(L, top);
  if (!ok) {
    sjread_free(&r);
    wm_ctx_error(&B->ctx, "%s: a SQL regular join without a valid description (or out of memory)", where);
    return NULL;
  }
  wm_keysel ks, ks2;
  memset(&ks, 0, sizeof ks);
  memset(&ks2, 0, sizeof ks2);
  if (lwm_build_keysel(B, node, where, &ks) != 0) {
    sjread_free(&r);
    return NULL;
  }
  if (lwm_build_keysel_of(B, node, "key2", where, &ks2) != 0) {
    if (ks.free) ks.free(ks.ud);
    sjread_free(&r);
    return NULL;
  }
  spec.unwrap = sqljoin_unwrap;
  spec.unwrap_ud = B;
  wm_op *op = wm_sqljoin_new(&B->ctx, name, &spec, ks, ks2);
  sjread_free(&r);
  return op;
}

int lwm_build_join(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op) {
  if (strcmp(kind, "sql_join") == 0) {
    *op = build_sql_join(B, node, name, where);
    return 1;
  }
  if (strcmp(kind, "interval_join") != 0) return 0;
  B->event_time = 1; /* it waits for watermarks to free what it keeps */
  *op = build_interval_join(B, node, name, where);
  return 1;
}

void lwm_join_metrics(lua_State *L, const wm_op *op) {
  if (wm_op_is_sqljoin(op)) {
    set_int(L, "keys", (int64_t)wm_sqljoin_keys(op));
    set_int(L, "rows_left", (int64_t)wm_sqljoin_rows(op, 0));
    set_int(L, "rows_right", (int64_t)wm_sqljoin_rows(op, 1));
    set_int(L, "distinct_left", (int64_t)wm_sqljoin_distinct(op, 0));
    set_int(L, "distinct_right", (int64_t)wm_sqljoin_distinct(op, 1));
    return;
  }
  if (!wm_op_is_ijoin(op)) return;
  set_int(L, "keys", (int64_t)wm_ijoin_keys(op));
  set_int(L, "buffered_left", (int64_t)wm_ijoin_buffered(op, 0));
  set_int(L, "buffered_right", (int64_t)wm_ijoin_buffered(op, 1));
  set_int(L, "late_left", (int64_t)wm_ijoin_late(op, 0));
  set_int(L, "late_right", (int64_t)wm_ijoin_late(op, 1));
  set_int(L, "cleanup_timers", (int64_t)wm_ijoin_timers(op));
}

