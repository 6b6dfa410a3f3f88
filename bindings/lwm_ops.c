/* Operators and operator parts whose logic is a user's Lua function. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lwm.h"
#include "lwm_ops.h"

lwm_opinfo *lwm_opinfo_new(lwm_bridge *B, const char *where) {
  lwm_opinfo *oi = calloc(1, sizeof *oi);
  if (!oi) return NULL;
  oi->B = B;
  oi->where = strdup(where ? where : "?");
  if (!oi->where) {
    free(oi);
    return NULL;
  }
  return oi;
}

void lwm_opinfo_free(void *ud) {
  lwm_opinfo *oi = ud;
  if (!oi) return;
  if (oi->keep) lwm_slot_release(oi->B, (uint32_t)oi->keep);
  wm_schema_release(oi->rowschema);
  free(oi->where);
  free(oi);
}

void lwm_op_free_info(wm_op *op) { lwm_opinfo_free(op->impl); }

/* ---- map, filter, flat_map --------------------------------------------------------- */

typedef struct flat {
  lwm_opinfo oi; /* first: the op's impl is both */
  int64_t ts;    /* timestamp of the record being processed */
} flat;

static int map_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  lwm_opinfo *oi = op->impl;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  lwm_push_fn(B, oi->fn);
  lwm_push_arg(B, oi, rec);
  if (lwm_call(oi, 1, 1, rec) != WM_OK) return WM_ERR;
  int t = lua_type(L, -1);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return lwm_op_error(oi, rec, "map returned nil (use filter or flat_map to drop records)");
  }
  if (t != LUA_TBOOLEAN && t != LUA_TNUMBER && t != LUA_TSTRING && !oi->busy) {
    /* a table (or other value held in a slot): in the op's own slot, overwritten by the
     * next record unless someone downstream kept it (then that one is theirs) */
    if (oi->keep && B->refs[oi->keep] == 1) {
      lua_rawseti(L, B->slots, oi->keep); /* an existing entry: allocates nothing */
    } else {
      if (oi->keep) lwm_slot_release(B, (uint32_t)oi->keep);
      oi->keep = (int)lwm_slot_new(B, -1);
      lua_pop(L, 1);
      if (!oi->keep) return wm_ctx_error(&B->ctx, "out of memory");
    }
    wm_value out = wm_nil();
    out.type = WM_SLOT;
    out.u.slot = (uint32_t)oi->keep;
    oi->busy = 1;
    int rc = wm_op_emit(op, 0, &out, ts);
    oi->busy = 0;
    return rc;
  }
  wm_value out;
  if (lwm_to_value(B, -1, &out) != 0) {
    lua_pop(L, 1);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  int rc = wm_op_emit(op, 0, &out, ts);
  wm_value_release(&B->ctx.host, &out);
  lua_pop(L, 1);
  return rc;
}

static int filter_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  lwm_opinfo *oi = op->impl;
  lwm_bridge *B = oi->B;
  lwm_push_fn(B, oi->fn);
  lwm_push_arg(B, oi, rec);
  if (lwm_call(oi, 1, 1, rec) != WM_OK) return WM_ERR;
  int keep = lua_toboolean(B->L, -1);
  lua_pop(B->L, 1);
  return keep ? wm_op_emit(op, 0, rec, ts) : WM_OK;
}

/* out(value) of flat_map and of process functions: emits on the op's main port */
static int l_out(lua_State *L) {
  wm_op *op = lua_touserdata(L, lua_upvalueindex(1));
  flat *f = op->impl;
  return lwm_emit_arg(f->oi.B, L, op, 0, 1, f->ts);
}

static int flat_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  flat *f = op->impl;
  lwm_bridge *B = f->oi.B;
  f->ts = ts;
  lwm_push_fn(B, f->oi.fn);
  lwm_push_arg(B, &f->oi, rec);
  lwm_push_fn(B, f->oi.fn2);
  return lwm_call(&f->oi, 2, 0, rec);
}

static const wm_op_vt map_vt = {.kind = "map", .record = map_record, .free = lwm_op_free_info};
static const wm_op_vt filter_vt = {.kind = "filter", .record = filter_record, .free = lwm_op_free_info};
static const wm_op_vt flat_vt = {.kind = "flat_map", .record = flat_record, .free = lwm_op_free_info};

/* Stores the value on top of the stack in the fns table; returns its index. */
wm_op *lwm_map_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int kind) {
  const wm_op_vt *vt = kind == LWM_MAP ? &map_vt : kind == LWM_FILTER ? &filter_vt : &flat_vt;
  if (kind == LWM_FLAT_MAP) {
    flat *f = realloc(oi, sizeof *f);
    if (!f) {
      lwm_opinfo_free(oi);
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
    oi = &f->oi;
  }
  wm_op *op = wm_op_new(&B->ctx, vt, oi, name);
  if (!op) {
    lwm_opinfo_free(oi);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  oi->op = op;
  lwm_push_fn(B, oi->fn);
  oi->reads_only = lwm_reads_arg_only(B->L, -1);
  lua_pop(B->L, 1);
  if (kind == LWM_FLAT_MAP) {
    lua_pushlightuserdata(B->L, op);
    lua_pushcclosure(B->L, l_out, 1);
    oi->fn2 = lwm_store_fn(B);
  }
  return op;
}

/* ---- pass-through (union) ----------------------------------------------------------- */

static int pass_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}
static const wm_op_vt pass_vt = {.kind = "union", .record = pass_record};

wm_op *lwm_pass_new(lwm_bridge *B, const char *name) {
  wm_op *op = wm_op_new(&B->ctx, &pass_vt, NULL, name);
  if (!op) wm_ctx_error(&B->ctx, "out of memory");
  return op;
}

/* ---- sinks: sink(fn) and collect() --------------------------------------------------- */

static int sink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  lwm_opinfo *oi = op->impl;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  lwm_push_fn(B, oi->fn);
  lwm_push_value(B, rec);
  lwm_push_fn(B, oi->fn2); /* the ctx table, reused */
  if (ts == WM_TIME_MIN) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)ts);
  lua_setfield(L, -2, "timestamp");
  lua_pushinteger(L, (lua_Integer)op->wm);
  lua_setfield(L, -2, "current_watermark");
  return lwm_call(oi, 2, 0, rec);
}

static int collect_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  lwm_opinfo *oi = op->impl;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  lwm_push_fn(B, oi->fn);
  lwm_push_value(B, rec);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  return WM_OK;
}

static const wm_op_vt sink_vt = {.kind = "sink", .record = sink_record, .free = lwm_op_free_info};
static const wm_op_vt collect_vt = {.kind = "collect", .record = collect_record, .free = lwm_op_free_info};

wm_op *lwm_sink_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int collect) {
  wm_op *op = wm_op_new(&B->ctx, collect ? &collect_vt : &sink_vt, oi, name);
  if (!op) {
    lwm_opinfo_free(oi);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  oi->op = op;
  if (!collect) {
    lua_newtable(B->L);
    oi->fn2 = lwm_store_fn(B);
  }
  return op;
}

/* ---- from_elements: a bounded source pumped in batches from an idle handle ---------- */

typedef struct elements {
  lwm_opinfo oi;
  lua_Integer next, count;
  uv_idle_t idle;
  int idle_open, stopped;
  wm_io_host *host;
  wm_pos pos;       /* "element n of from_elements (job.lua:3)" */
  char origin[200];
} elements;

static const wm_op_vt elements_vt = {.kind = "from_elements", .record = wm_source_record, .free = lwm_op_free_info};

static void elements_close(elements *e) {
  if (e->idle_open) {
    uv_idle_stop(&e->idle);
    uv_close((uv_handle_t *)&e->idle, NULL);
    e->idle_open = 0;
  }
}

static void on_elements_idle(uv_idle_t *h) {
  elements *e = h->data;
  lwm_bridge *B = e->oi.B;
  lua_State *L = B->L;
  lua_Integer end = e->next + 512;
  if (end > e->count + 1) end = e->count + 1;
  lwm_push_fn(B, e->oi.fn);
  int list = lua_gettop(L);
  for (; e->next < end && !e->stopped; e->next++) {
    lua_rawgeti(L, list, e->next);
    wm_value v;
    if (lwm_to_value(B, -1, &v) != 0) {
      lua_settop(L, list - 1);
      wm_ctx_error(&B->ctx, "out of memory");
      elements_close(e);
      wm_io_fail(e->host);
      return;
    }
    e->pos.line = (uint64_t)e->next;
    int rc = wm_source_emit(e->oi.op, &e->pos, &v, WM_TIME_MIN);
    wm_value_release(&B->ctx.host, &v);
    lua_pop(L, 1);
    if (rc != WM_OK) {
      lua_settop(L, list - 1);
      elements_close(e);
      e->stopped = 1;
      wm_io_fail(e->host);
      return;
    }
  }
  lua_settop(L, list - 1);
  wm_io_batch_done(e->host);
  if (e->next > e->count || e->stopped) {
    elements_close(e);
    if (!e->stopped || e->next > e->count) wm_io_source_done(e->host, e->oi.op);
  }
}

static int elements_start(wm_op *op, wm_io_host *host) {
  elements *e = op->impl;
  e->host = host;
  int rc = uv_idle_init(host->loop, &e->idle);
  if (rc == 0) {
    e->idle_open = 1;
    e->idle.data = e;
    rc = uv_idle_start(&e->idle, on_elements_idle);
  }
  if (rc != 0) {
    elements_close(e);
    return wm_ctx_error(op->ctx, "cannot start from_elements: %s", uv_strerror(rc));
  }
  return WM_OK;
}

static void elements_stop(wm_op *op, wm_io_host *host, int finish) {
  elements *e = op->impl;
  if (e->stopped) return;
  e->stopped = 1;
  elements_close(e);
  if (finish) wm_io_source_done(host, op);
}

static const wm_source_vt elements_src = {.start = elements_start, .stop = elements_stop};

wm_op *lwm_elements_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, lua_Integer count) {
  elements *e = realloc(oi, sizeof *e);
  if (!e) {
    lwm_opinfo_free(oi);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  memset((char *)e + sizeof e->oi, 0, sizeof *e - sizeof e->oi);
  e->next = 1;
  e->count = count;
  snprintf(e->origin, sizeof e->origin, "from_elements (%s)", e->oi.where);
  e->pos.origin = e->origin;
  e->pos.unit = "element";
  return lwm_source_new(B, &elements_vt, &e->oi, name, &elements_src);
}

wm_op *lwm_source_new(lwm_bridge *B, const wm_op_vt *vt, lwm_opinfo *oi, const char *name,
                      const wm_source_vt *svt) {
  wm_op *op = wm_op_new(&B->ctx, vt, oi, name);
  if (!op) {
    lwm_opinfo_free(oi);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  oi->op = op;
  if (wm_exec_add_source(B->exec, op, svt) != 0) { /* op is freed with the context */
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  return op;
}

/* ---- timestamp assigner and key selector functions ---------------------------------- */

/* An integer number of ms from the value on top of the stack. */
static int to_millis(lua_State *L, int64_t *out) {
  if (lua_isinteger(L, -1)) {
    *out = (int64_t)lua_tointeger(L, -1);
    return 1;
  }
  if (lua_type(L, -1) == LUA_TNUMBER) {
    lua_Number n = lua_tonumber(L, -1);
    if (floor(n) == n && fabs(n) < 9.2e18) {
      *out = (int64_t)n;
      return 1;
    }
  }
  return 0;
}

static const char *describe_top(lua_State *L, char *buf, size_t n) {
  if (lua_type(L, -1) == LUA_TSTRING) snprintf(buf, n, "the string \"%.40s\"", lua_tostring(L, -1));
  else if (lua_type(L, -1) == LUA_TNUMBER) snprintf(buf, n, "%.17g", (double)lua_tonumber(L, -1));
  else snprintf(buf, n, "%s", luaL_typename(L, -1));
  return buf;
}

static int tsx_fn(void *ud, wm_op *op, const wm_value *rec, int64_t prev, int64_t *ts) {
  lwm_opinfo *oi = ud;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  oi->op = op;
  lwm_push_fn(B, oi->fn);
  lwm_push_arg(B, oi, rec);
  if (prev == WM_TIME_MIN) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)prev);
  if (lwm_call(oi, 2, 1, rec) != WM_OK) return WM_ERR;
  if (!to_millis(L, ts)) {
    char d[80];
    describe_top(L, d, sizeof d);
    lua_pop(L, 1);
    return lwm_op_error(oi, rec,
                        "timestamp assigner returned %s (expected an integer number of ms)", d);
  }
  lua_pop(L, 1);
  return WM_OK;
}

int lwm_tsx_lua(wm_tsx *x, lwm_opinfo *oi) {
  x->fn = tsx_fn;
  x->free = lwm_opinfo_free;
  x->ud = oi;
  return 0;
}

typedef struct keyfn {
  lwm_opinfo oi;
  wm_value composite; /* owned: the last composite key */
} keyfn;

static int keysel_fn(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  keyfn *k = ud;
  lwm_opinfo *oi = &k->oi;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  oi->op = op;
  lwm_push_fn(B, oi->fn);
  lwm_push_arg(B, oi, rec);
  if (lwm_call(oi, 1, 1, rec) != WM_OK) return WM_ERR;
  int t = lua_type(L, -1);
  if (t == LUA_TTABLE) { /* a list of scalars: a composite key */
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    int list = lua_gettop(L); /* the parts pile up above it */
    wm_value parts[16];
    if (n < 1 || n > 16) {
      lua_pop(L, 1);
      return lwm_op_error(oi, rec, "key selector returned a table that is not a list of 1 to 16 values");
    }
    if (!lua_checkstack(L, (int)n)) {
      lua_pop(L, 1);
      return wm_ctx_error(&B->ctx, "out of memory");
    }
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, list, i);
      lwm_to_value(B, -1, &parts[i - 1]);
      if (!wm_key_valid(&parts[i - 1])) {
        if (parts[i - 1].type == WM_SLOT) wm_value_release(&B->ctx.host, &parts[i - 1]);
        lua_pop(L, (int)i + 1);
        return lwm_op_error(oi, rec, "key part %lld is not a string, number or boolean", (long long)i);
      }
    }
    wm_value_release(&B->ctx.host, &k->composite);
    int rc = wm_key_compose(parts, (size_t)n, &k->composite);
    lua_pop(L, (int)n + 1);
    if (rc != 0) return wm_ctx_error(&B->ctx, "out of memory");
    *key = k->composite;
    return WM_OK;
  }
  if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN) {
    char d[80];
    describe_top(L, d, sizeof d);
    lua_pop(L, 1);
    return lwm_op_error(oi, rec, "key selector returned %s (a key is a string, number or boolean)", d);
  }
  if (t == LUA_TNUMBER && !lua_isinteger(L, -1) && isnan(lua_tonumber(L, -1))) {
    lua_pop(L, 1);
    return lwm_op_error(oi, rec, "key selector returned NaN");
  }
  /* keep the result alive (a string's bytes are borrowed) until the next call */
  lua_rawseti(L, B->slots, oi->keep);
  lua_rawgeti(L, B->slots, oi->keep);
  lwm_to_value(B, -1, key);
  lua_pop(L, 1);
  return WM_OK;
}

static void keyfn_free(void *ud) {
  keyfn *k = ud;
  wm_value_release(NULL, &k->composite);
  lwm_opinfo_free(&k->oi);
}

int lwm_keysel_lua(wm_keysel *ks, lwm_opinfo *oi) {
  keyfn *k = realloc(oi, sizeof *k);
  if (!k) {
    lwm_opinfo_free(oi);
    return -1;
  }
  k->composite = wm_nil();
  /* listed while the slot is made: that may raise (running out of memory) */
  lwm_pending *p = lwm_pending_add(k->oi.B, keyfn_free, k);
  if (!p) {
    keyfn_free(k);
    return -1;
  }
  lua_pushboolean(k->oi.B->L, 0);
  k->oi.keep = (int)lwm_slot_new(k->oi.B, -1);
  lua_pop(k->oi.B->L, 1);
  lwm_push_fn(k->oi.B, k->oi.fn);
  k->oi.reads_only = lwm_reads_arg_only(k->oi.B->L, -1);
  lua_pop(k->oi.B->L, 1);
  lwm_pending_done(k->oi.B, p);
  if (!k->oi.keep) {
    keyfn_free(k);
    return -1;
  }
  ks->fn = keysel_fn;
  ks->free = keyfn_free;
  ks->ud = k;
  return 0;
}

/* ---- window functions: reduce, aggregate, process ----------------------------------- */

typedef struct winlua {
  lwm_opinfo oi; /* fn: reduce fn / process fn; fn2..fn5: aggregate create/add/result/merge */
  int kind;      /* 1 reduce, 2 aggregate, 3 process */
  int pfn;       /* reduce/aggregate: the process function that receives the result (0: none) */
  int mode;      /* LWM_WL_* (pre-aggregation: the local operator's partials, the window's
                  * merging of them) */
  int outfn, outputfn; /* out(value) and ctx:output(tag, value) closures */
  int64_t ts;    /* for out(): the firing window's max timestamp */
  wm_op *op;
  wm_schema *partial; /* LWM_WL_PARTIAL: the partials' {key, acc} */
  wm_field accf;      /* LWM_WL_MERGE: a partial's field acc */
} winlua;

/* Stores the Lua value on top of the stack (popped) as the owned *acc, reusing acc's slot
 * when only the window holds it. */
static int set_acc(lwm_bridge *B, wm_value *acc) {
  lua_State *L = B->L;
  if (acc->type == WM_SLOT && B->refs[acc->u.slot] == 1 && lua_type(L, -1) >= LUA_TTABLE) {
    lua_rawseti(L, B->slots, acc->u.slot);
    return 0;
  }
  wm_value v;
  if (lwm_to_value(B, -1, &v) != 0 || (v.type != WM_SLOT && wm_value_retain(&B->ctx.host, &v) != 0)) {
    lua_pop(L, 1);
    return -1;
  }
  wm_value_release(&B->ctx.host, acc);
  *acc = v;
  lua_pop(L, 1);
  return 0;
}

/* Replaces the two values on top of the stack, a and b, by fn(a, b) (reduce) or
 * merge(a, b) (aggregate); on failure cuts the stack back to base. */
static int combine_top(winlua *w, int base, const wm_value *rec) {
  lua_State *L = w->oi.B->L;
  lwm_push_fn(w->oi.B, w->kind == 1 ? w->oi.fn : w->oi.fn5);
  lua_insert(L, -3);
  if (lwm_call(&w->oi, 2, 1, rec) != WM_OK) {
    lua_settop(L, base);
    return WM_ERR;
  }
  if (w->kind == 1 && lua_isnil(L, -1)) {
    lua_settop(L, base);
    return lwm_op_error(&w->oi, rec, "the reduce function returned nil");
  }
  return WM_OK;
}

/* LWM_WL_MERGE (docs/performance.md, "Pre-aggregation"): the window of a pre-aggregated
 * job gets the partials {key, acc} of each part (a record late for its part as its own
 * partial) on the part's channel, in file order. It keeps one value per channel, in the
 * table T that is acc: T[c] the fold of channel c-1's partials' acc (reduce: fn,
 * aggregate: merge), T[-c] = true once it has one, T.n the highest c; the firing folds
 * them in channel order, which is the file's order. */
static int win_add_chan(winlua *w, wm_op *op, wm_value *acc, const wm_value *rec) {
  lwm_bridge *B = w->oi.B;
  lua_State *L = B->L;
  lua_Integer c = (lua_Integer)wm_winop_chan(op) + 1;
  wm_value part;
  if (wm_field_get(&B->ctx.host, &w->accf, rec, &part, &B->ctx.error) != 0) return WM_ERR;
  if (acc->type == WM_NIL) {
    lua_createtable(L, 2, 2);
    if (set_acc(B, acc) != 0) return wm_ctx_error(&B->ctx, "out of memory");
  }
  lwm_push_value(B, acc); /* T */
  int t = lua_gettop(L);
  lua_rawgeti(L, t, -c);
  int had = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (had) {
    lua_rawgeti(L, t, c);
    lwm_push_value(B, &part);
    if (combine_top(w, t - 1, rec) != WM_OK) return WM_ERR;
  } else {
    lua_pushboolean(L, 1);
    lua_rawseti(L, t, -c);
    lua_getfield(L, t, "n");
    lua_Integer n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (c > n) {
      lua_pushinteger(L, c);
      lua_setfield(L, t, "n");
    }
    lwm_push_value(B, &part);
  }
  lua_rawseti(L, t, c);
  lua_settop(L, t - 1);
  return WM_OK;
}

/* LWM_WL_MERGE: pushes the fold of T (acc) in channel order, and leaves it in T as channel
 * 1's only value (a late firing then adds the records late for the window after it). */
static int win_fold_chan(winlua *w, const wm_fire *f) {
  lwm_bridge *B = w->oi.B;
  lua_State *L = B->L;
  lwm_push_value(B, f->acc); /* T */
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) {
    lua_pop(L, 1);
    return wm_ctx_error(&B->ctx, "%s: a window that merges partials fired without one",
                        w->oi.where);
  }
  lua_getfield(L, t, "n");
  lua_Integer n = lua_tointeger(L, -1);
  lua_pop(L, 1);
  int have = 0;
  for (lua_Integer c = 1; c <= n; c++) {
    lua_rawgeti(L, t, -c);
    int present = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!present) continue;
    if (!have) {
      lua_rawgeti(L, t, c);
      have = 1;
      continue;
    }
    lua_rawgeti(L, t, c);
    if (combine_top(w, t - 1, NULL) != WM_OK) return WM_ERR;
  }
  if (!have) lua_pushnil(L);
  for (lua_Integer c = 2; c <= n; c++) {
    lua_pushnil(L);
    lua_rawseti(L, t, c);
    lua_pushnil(L);
    lua_rawseti(L, t, -c);
  }
  lua_pushvalue(L, -1);
  lua_rawseti(L, t, 1);
  lua_pushboolean(L, have);
  lua_rawseti(L, t, -1);
  lua_pushinteger(L, 1);
  lua_setfield(L, t, "n");
  lua_remove(L, t);
  return WM_OK;
}

static int win_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  winlua *w = ud;
  lwm_bridge *B = w->oi.B;
  w->oi.op = op;
  if (w->mode == LWM_WL_MERGE) return win_add_chan(w, op, acc, rec);
  if (w->kind == 1) {
    if (acc->type == WM_NIL) /* the first record is the initial accumulator */
      return wm_value_copy(&B->ctx.host, acc, rec) == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
    lwm_push_fn(B, w->oi.fn);
    lwm_push_value(B, acc);
    lwm_push_value(B, rec);
    if (lwm_call(&w->oi, 2, 1, rec) != WM_OK) return WM_ERR;
    if (lua_isnil(B->L, -1)) {
      lua_pop(B->L, 1);
      return lwm_op_error(&w->oi, rec, "the reduce function returned nil");
    }
    return set_acc(B, acc) == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
  }
  /* aggregate */
  if (acc->type == WM_NIL && aux->type == WM_NIL) {
    lwm_push_fn(B, w->oi.fn2);
    if (lwm_call(&w->oi, 0, 1, rec) != WM_OK) return WM_ERR;
    if (set_acc(B, acc) != 0) return wm_ctx_error(&B->ctx, "out of memory");
    *aux = wm_bool(true); /* created, even if the accumulator is nil */
  }
  lwm_push_fn(B, w->oi.fn3);
  lwm_push_value(B, acc);
  lwm_push_value(B, rec);
  if (lwm_call(&w->oi, 2, 1, rec) != WM_OK) return WM_ERR;
  return set_acc(B, acc) == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
}

static int emit_top(wm_op *op, lwm_bridge *B, int64_t ts) {
  wm_value v;
  if (lwm_to_value(B, -1, &v) != 0) {
    lua_pop(B->L, 1);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  int rc = wm_op_emit(op, 0, &v, ts);
  wm_value_release(&B->ctx.host, &v);
  lua_pop(B->L, 1);
  return rc;
}

/* Pushes a closure of fn with upvalue ud and stores it in fns. Such closures run in their
 * own stack frame: they re-enter the bridge with lwm_enter/lwm_leave. */
static int store_closure(lwm_bridge *B, lua_CFunction fn, void *ud) {
  lua_State *L = B->L;
  lua_pushlightuserdata(L, ud);
  lua_pushcclosure(L, fn, 1);
  return lwm_store_fn(B);
}

/* out(value) for process functions */
static int l_win_out(lua_State *L) {
  winlua *w = lua_touserdata(L, lua_upvalueindex(1));
  lwm_bridge *B = w->oi.B;
  lwm_check_record(L, 1);
  lua_settop(L, 1);
  lwm_frame f;
  lwm_enter(B, L, &f);
  lua_pushvalue(L, 1);
  int rc = emit_top(w->op, B, w->ts);
  lwm_leave(B, &f);
  return lwm_callback_done(B, L, rc);
}

/* ctx:output(tag, value) for process functions */
static int l_win_output(lua_State *L) {
  winlua *w = lua_touserdata(L, lua_upvalueindex(1));
  int port = wm_op_port(w->op, luaL_checkstring(L, 2));
  if (port < 0) return luaL_error(L, "out of memory");
  return lwm_emit_arg(w->oi.B, L, w->op, port, 3, w->ts);
}

/* Pushes a window as a table {start, stop, max_timestamp}. */
void lwm_push_window(lua_State *L, wm_window win, int64_t max_ts) {
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)win.start);
  lua_setfield(L, -2, "start");
  lua_pushinteger(L, (lua_Integer)win.stop);
  lua_setfield(L, -2, "stop");
  lua_pushinteger(L, (lua_Integer)max_ts);
  lua_setfield(L, -2, "max_timestamp");
}

/* Calls fn(key, ctx, records, out) with the records already pushed on top. */
static int call_process(winlua *w, int fn, const wm_fire *f) {
  lwm_bridge *B = w->oi.B;
  lua_State *L = B->L;
  luaL_checkstack(L, 8, "wmrun: process window");
  int records = lua_gettop(L);
  lwm_push_fn(B, fn);
  lwm_push_value(B, f->key);
  lua_createtable(L, 0, 5); /* ctx */
  lwm_push_window(L, f->window, f->max_ts);
  lua_setfield(L, -2, "window");
  lua_pushinteger(L, (lua_Integer)f->watermark);
  lua_setfield(L, -2, "current_watermark");
  lua_pushinteger(L, (lua_Integer)wm_ctx_now(&B->ctx));
  lua_setfield(L, -2, "current_processing_time");
  lwm_push_value(B, f->key);
  lua_setfield(L, -2, "key");
  lwm_push_fn(B, w->outputfn);
  lua_setfield(L, -2, "output");
  lua_pushvalue(L, records);
  lwm_push_fn(B, w->outfn);
  lua_remove(L, records);
  return lwm_call(&w->oi, 4, 0, NULL);
}

/* LWM_WL_PARTIAL: the local pre-aggregation's partial {key, acc}, acc the reduced record
 * or the accumulator (not result(acc): the window merges the partials). The key goes
 * with it: a reduce's result need not have its records' key. */
static int win_partial(winlua *w, wm_op *op, const wm_fire *f) {
  const wm_host *h = &w->oi.B->ctx.host;
  wm_row *r = wm_row_new(w->partial);
  if (!r) return wm_ctx_error(op->ctx, "out of memory");
  wm_value out = wm_row_value(r);
  if (wm_value_copy(h, &r->fields[0], f->key) != 0 || wm_value_copy(h, &r->fields[1], f->acc) != 0) {
    wm_value_release(h, &out);
    return wm_ctx_error(op->ctx, "out of memory");
  }
  int rc = wm_op_emit(op, 0, &out, f->max_ts);
  wm_value_release(h, &out);
  return rc;
}

static int win_fire(void *ud, wm_op *op, const wm_fire *f) {
  winlua *w = ud;
  lwm_bridge *B = w->oi.B;
  lua_State *L = B->L;
  w->oi.op = op;
  w->op = op;
  w->ts = f->max_ts;
  if (w->kind == 3) {
    lua_createtable(L, (int)f->nitems, 0);
    for (size_t i = 0; i < f->nitems; i++) {
      lwm_push_value(B, &f->items[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return call_process(w, w->oi.fn, f);
  }
  if (w->mode == LWM_WL_PARTIAL) return win_partial(w, op, f);
  if (w->mode == LWM_WL_MERGE) {
    if (win_fold_chan(w, f) != WM_OK) return WM_ERR;
  } else if (w->kind == 2 || w->pfn) {
    lwm_push_value(B, f->acc);
  } else {
    return wm_op_emit(op, 0, f->acc, f->max_ts);
  }
  if (w->kind == 2) {
    lwm_push_fn(B, w->oi.fn4);
    lua_insert(L, -2);
    if (lwm_call(&w->oi, 1, 1, NULL) != WM_OK) return WM_ERR;
  }
  if (!w->pfn) return emit_top(op, B, f->max_ts);
  /* the process function receives the single result in a list */
  lua_createtable(L, 1, 0);
  lua_insert(L, -2);
  lua_rawseti(L, -2, 1);
  return call_process(w, w->pfn, f);
}

static int win_merge(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *bacc,
                     const wm_value *baux) {
  winlua *w = ud;
  lwm_bridge *B = w->oi.B;
  (void)aux;
  (void)baux;
  w->oi.op = op;
  lwm_push_fn(B, w->kind == 1 ? w->oi.fn : w->oi.fn5);
  lwm_push_value(B, acc);
  lwm_push_value(B, bacc);
  if (lwm_call(&w->oi, 2, 1, NULL) != WM_OK) return WM_ERR;
  return set_acc(B, acc) == 0 ? WM_OK : wm_ctx_error(&B->ctx, "out of memory");
}

static void winlua_free(void *ud) {
  winlua *w = ud;
  wm_schema_release(w->partial);
  lwm_opinfo_free(ud);
}

int lwm_winfn_lua(wm_winfn *fn, lwm_opinfo *oi, const char *kind, int pfn) {
  return lwm_winfn_lua_pre(fn, oi, kind, pfn, LWM_WL_PLAIN);
}

int lwm_winfn_lua_pre(wm_winfn *fn, lwm_opinfo *oi, const char *kind, int pfn, int mode) {
  winlua *w = realloc(oi, sizeof *w);
  if (!w) {
    lwm_opinfo_free(oi);
    return -1;
  }
  w->kind = strcmp(kind, "reduce") == 0 ? 1 : strcmp(kind, "aggregate") == 0 ? 2 : 3;
  w->pfn = pfn;
  w->mode = mode;
  w->op = NULL;
  w->ts = 0;
  w->partial = NULL;
  w->accf = (wm_field){.name = "acc", .schema = NULL, .index = -1};
  if (mode == LWM_WL_PARTIAL && w->kind != 3) {
    static const char *const names[] = {"key", "acc"};
    static const uint8_t types[] = {WM_FT_ANY, WM_FT_ANY};
    if (!(w->partial = wm_schema_new(2, names, types))) {
      lwm_opinfo_free(&w->oi);
      return -1;
    }
  }
  memset(fn, 0, sizeof *fn);
  fn->list = w->kind == 3;
  fn->add = win_add;
  fn->fire = win_fire;
  fn->merge = (w->kind == 1 || (w->kind == 2 && w->oi.fn5)) ? win_merge : NULL;
  fn->free = winlua_free;
  fn->ud = w;
  lwm_bridge *B = w->oi.B;
  w->outfn = store_closure(B, l_win_out, w);
  w->outputfn = store_closure(B, l_win_output, w);
  return 0;
}
