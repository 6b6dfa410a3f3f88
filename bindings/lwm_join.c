/* The interval join from the plan (a:key_by(k1):interval_join(b:key_by(k2)):between(...)
 * :process(fn); lua/wm/interval_join.lua): the core operator (ops/wm_ijoin.h) keeps both
 * sides' records as values in C; the user's fn(left, right, ctx, out) runs per pair. */
#include <stdlib.h>
#include <string.h>

#include "ops/wm_ijoin.h"
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

int lwm_build_join(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op) {
  if (strcmp(kind, "interval_join") != 0) return 0;
  B->event_time = 1; /* it waits for watermarks to free what it keeps */
  *op = build_interval_join(B, node, name, where);
  return 1;
}

void lwm_join_metrics(lua_State *L, const wm_op *op) {
  if (!wm_op_is_ijoin(op)) return;
  set_int(L, "keys", (int64_t)wm_ijoin_keys(op));
  set_int(L, "buffered_left", (int64_t)wm_ijoin_buffered(op, 0));
  set_int(L, "buffered_right", (int64_t)wm_ijoin_buffered(op, 1));
  set_int(L, "late_left", (int64_t)wm_ijoin_late(op, 0));
  set_int(L, "late_right", (int64_t)wm_ijoin_late(op, 1));
  set_int(L, "cleanup_timers", (int64_t)wm_ijoin_timers(op));
}

