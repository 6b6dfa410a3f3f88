/* Window join and co-group (lua/wm/window_join.lua, docs/joins.md): the two C parts of
 * Flink's TaggedUnion plan on top of the window operator.
 *
 * - "join_tag" nodes, one per input: each record becomes a row {s = side, k = key, r = record}
 *   that refers to the record (a reference, never a copy: a C row stays a row), so that the
 *   union of both inputs can be keyed by the field k and windowed. The key is checked here:
 *   both inputs' keys must be of one type (string, number, boolean, or a composite of those),
 *   which both tag operators of a join check against one shared first key.
 * - the window function of a window node of fn_kind "join" or "co_group" (lwm_window.c builds
 *   it with lwm_winfn_wjoin): splits the window's rows by side and calls the user's function, each
 *   record converted to Lua once per firing. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "lwm.h"
#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_wjoin.h"

/* The first key a join saw (per Lua state: the tag operators of both inputs share it). */
typedef struct wjcheck {
  char cls[20];    /* its class: one letter per part, s(tring) n(umber) b(oolean) */
  int side;
  char key[120];   /* the key and its record, as print shows them */
  char rec[300];
} wjcheck;

typedef struct wjtag {
  wm_keysel ks;
  int side;            /* 1 or 2 */
  int needs_ts;        /* an event-time window: a record without timestamp is an error */
  wm_schema *schema;   /* {s, k, r} */
  wjcheck *check;      /* a userdata of the plan (the node's `check` table keeps it) */
  const char *what;    /* "join" or "co_group" (the plan's string) */
  char where[200];
} wjtag;

static const char *const SIDE_NAME[3] = {"", "first input", "second input"};

static void cls_of(const wm_value *v, char *out, size_t n) {
  size_t k = 0;
  if ((v->type == WM_STR || v->type == WM_CSTR) && (v->flags & WM_VF_COMPOSITE)) {
    wm_value part;
    int count = wm_key_part(v, 0, &part);
    for (int i = 0; i < count && k + 1 < n; i++) {
      wm_key_part(v, (size_t)i, &part);
      out[k++] = part.type == WM_BOOL ? 'b' : (part.type == WM_INT || part.type == WM_FLOAT) ? 'n' : 's';
    }
  } else if (k + 1 < n) {
    out[k++] = v->type == WM_BOOL ? 'b' : (v->type == WM_INT || v->type == WM_FLOAT) ? 'n' : 's';
  }
  out[k] = '\0';
}

static const char *cls_name(const char *cls) {
  if (strlen(cls) > 1) return "a composite key";
  return cls[0] == 'b' ? "boolean" : cls[0] == 'n' ? "number" : "string";
}

static void format_into(wm_op *op, const wm_value *v, int json, char *out, size_t n) {
  wm_buf b;
  wm_buf_init(&b);
  wm_format_value(&b, v, json, op->ctx->host.format, op->ctx->host.ud);
  snprintf(out, n, "%s", b.data ? b.data : "");
  if (b.data && strlen(b.data) >= n && n > 4) memcpy(out + n - 4, "...", 4);
  wm_buf_free(&b);
}

static int check_key(wm_op *op, wjtag *t, const wm_value *key, const wm_value *rec) {
  char cls[20];
  cls_of(key, cls, sizeof cls);
  wjcheck *c = t->check;
  if (!c->cls[0]) {
    memcpy(c->cls, cls, sizeof cls);
    c->side = t->side;
    format_into(op, key, 1, c->key, sizeof c->key);
    format_into(op, rec, 0, c->rec, sizeof c->rec);
    return WM_OK;
  }
  if (strcmp(cls, c->cls) == 0) return WM_OK;
  char k[120], r[300];
  format_into(op, key, 1, k, sizeof k);
  format_into(op, rec, 0, r, sizeof r);
  return wm_ctx_error(op->ctx,
                      "%s: %s: the keys of the two inputs have different types: key %s (%s) of record %s "
                      "of the %s, and key %s (%s) of record %s of the %s",
                      t->where, t->what, k, cls_name(cls), r, SIDE_NAME[t->side], c->key,
                      cls_name(c->cls), c->rec, SIDE_NAME[c->side]);
}

static int tag_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  wjtag *t = op->impl;
  const wm_host *h = &op->ctx->host;
  if (ts == WM_TIME_MIN && t->needs_ts) {
    char r[300];
    format_into(op, rec, 0, r, sizeof r);
    return wm_ctx_error(op->ctx,
                        "%s: %s: record %s of the %s has no timestamp (math.mininteger); did you "
                        "forget assign_timestamps_and_watermarks? (an event-time window needs one)",
                        t->where, t->what, r, SIDE_NAME[t->side]);
  }
  wm_value key;
  if (t->ks.fn(t->ks.ud, op, rec, &key) != WM_OK) { /* the selector's message, at the join's line */
    char msg[WM_ERROR_MSG];
    memcpy(msg, wm_ctx_errtext(op->ctx), sizeof msg);
    return wm_ctx_error(op->ctx, "%s: %s: the %s's key: %s", t->where, t->what, SIDE_NAME[t->side], msg);
  }
  if (check_key(op, t, &key, rec) != WM_OK) return WM_ERR;
  wm_row *row = wm_row_new(t->schema);
  if (!row) return wm_ctx_error(op->ctx, "out of memory");
  wm_value out = wm_row_value(row);
  row->fields[0] = wm_int(t->side);
  if (wm_value_copy(h, &row->fields[1], &key) != 0 || wm_value_copy(h, &row->fields[2], rec) != 0) {
    wm_value_release(h, &out);
    return wm_ctx_error(op->ctx, "out of memory");
  }
  int rc = wm_op_emit(op, 0, &out, ts);
  wm_value_release(h, &out);
  return rc;
}

static void tag_free(wm_op *op) {
  wjtag *t = op->impl;
  if (!t) return;
  if (t->ks.free) t->ks.free(t->ks.ud);
  if (t->schema) wm_schema_release(t->schema);
  free(t);
}

static const wm_op_vt tag_vt = {.kind = "join_tag", .record = tag_record, .free = tag_free};

static void free_tag_pending(void *ud) {
  wjtag *t = ud;
  if (t->ks.free) t->ks.free(t->ks.ud);
  if (t->schema) wm_schema_release(t->schema);
  free(t);
}

int lwm_build_wjoin(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                    wm_op **op) {
  if (strcmp(kind, "join_tag") != 0) return 0;
  *op = NULL;
  lua_State *L = B->L;
  /* the plan first (reading may raise, with nothing allocated yet) */
  int side = (int)lwm_get_int(L, node, "side", 1);
  int needs_ts = (int)lwm_get_int(L, node, "needs_ts", 0);
  const char *what = lwm_get_str(L, node, "what");
  const char *at = lwm_get_str(L, node, "at");
  lua_getfield(L, node, "check"); /* the table both inputs' nodes share */
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    wm_ctx_error(&B->ctx, "%s: internal error: a join_tag node without its check table", where);
    return 1;
  }
  wjcheck *c;
  if (lua_getfield(L, -1, "ud") == LUA_TUSERDATA) {
    c = lua_touserdata(L, -1);
    lua_pop(L, 2);
  } else {
    lua_pop(L, 1);
    c = lua_newuserdatauv(L, sizeof *c, 0);
    memset(c, 0, sizeof *c);
    lua_setfield(L, -2, "ud");
    lua_pop(L, 1);
  }
  wjtag *t = calloc(1, sizeof *t);
  lwm_pending *p = t ? lwm_pending_add(B, free_tag_pending, t) : NULL;
  if (!p) {
    free(t);
    wm_ctx_error(&B->ctx, "out of memory");
    return 1;
  }
  static const char *const names[] = {"s", "k", "r"};
  static const uint8_t types[] = {WM_FT_INTEGER, WM_FT_ANY, WM_FT_ANY};
  t->side = side == 2 ? 2 : 1;
  t->needs_ts = needs_ts;
  t->check = c;
  t->what = what ? what : "join";
  snprintf(t->where, sizeof t->where, "%s", at ? at : where);
  if (!(t->schema = wm_schema_new(3, names, types))) {
    lwm_pending_done(B, p);
    free_tag_pending(t);
    wm_ctx_error(&B->ctx, "out of memory");
    return 1;
  }
  if (lwm_build_keysel(B, node, where, &t->ks) != 0) {
    lwm_pending_done(B, p);
    free_tag_pending(t);
    return 1;
  }
  lwm_pending_done(B, p);
  *op = wm_op_new(&B->ctx, &tag_vt, t, name);
  if (!*op) {
    free_tag_pending(t);
    wm_ctx_error(&B->ctx, "out of memory");
  }
  return 1;
}

/* ---- the window function ---------------------------------------------------------------- */

/* The side (1, 2) and record of a window's item (a row of a tag operator). */
static int item_side(const wm_value *v) {
  if (v->type != WM_ROW || v->u.row->schema->nfields != 3) return 0;
  return (int)v->u.row->fields[0].u.i;
}

typedef struct wjfn {
  lwm_opinfo oi; /* fn: the user's function */
  int cogroup;
  int outfn;     /* a co-group's out(value) */
  wm_op *op;     /* the firing window operator, for out() */
  int64_t ts;    /* the firing window's max timestamp */
} wjfn;

/* out(value) of a co-group's function */
static int l_wj_out(lua_State *L) {
  wjfn *w = lua_touserdata(L, lua_upvalueindex(1));
  lwm_check_record(L, 1);
  return lwm_emit_arg(w->oi.B, L, w->op, 0, 1, w->ts);
}

static int wj_fire(void *ud, wm_op *op, const wm_fire *f) {
  wjfn *w = ud;
  lwm_opinfo *oi = &w->oi;
  int cogroup = w->cogroup, outfn = w->outfn;
  oi->op = w->op = op;
  w->ts = f->max_ts;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  luaL_checkstack(L, 12, "wmrun: window join");
  int base = lua_gettop(L);
  size_t nl = 0, nr = 0;
  for (size_t i = 0; i < f->nitems; i++) {
    int s = item_side(&f->items[i]);
    if (s == 1) nl++;
    else if (s == 2) nr++;
    else return wm_ctx_error(op->ctx, "internal error: a window join's record is not tagged");
  }
  if (!cogroup && (nl == 0 || nr == 0)) return WM_OK; /* an inner join: no pair */
  /* the rights (and, for a co-group, the lefts) as Lua lists, each record pushed once */
  lua_createtable(L, (int)nr, 0);
  int rights = lua_gettop(L);
  lua_Integer k = 0;
  for (size_t i = 0; i < f->nitems; i++)
    if (item_side(&f->items[i]) == 2) {
      lwm_push_value(B, &f->items[i].u.row->fields[2]);
      lua_rawseti(L, rights, ++k);
    }
  if (cogroup) {
    lua_createtable(L, (int)nl, 0);
    int lefts = lua_gettop(L);
    k = 0;
    for (size_t i = 0; i < f->nitems; i++)
      if (item_side(&f->items[i]) == 1) {
        lwm_push_value(B, &f->items[i].u.row->fields[2]);
        lua_rawseti(L, lefts, ++k);
      }
    lwm_push_fn(B, oi->fn);
    lwm_push_value(B, f->key);
    lua_pushvalue(L, lefts);
    lua_pushvalue(L, rights);
    lwm_push_fn(B, outfn);
    lwm_push_window(L, f->window, f->max_ts); /* (a fifth argument: the window) */
    int rc = lwm_call(oi, 5, 0, NULL);
    lua_settop(L, base);
    return rc;
  }
  /* every (left, right) pair: lefts in the window's order, for each the rights in theirs */
  for (size_t i = 0; i < f->nitems; i++) {
    if (item_side(&f->items[i]) != 1) continue;
    const wm_value *lrec = &f->items[i].u.row->fields[2];
    lwm_push_value(B, lrec);
    int left = lua_gettop(L);
    for (lua_Integer j = 1; j <= (lua_Integer)nr; j++) {
      lwm_push_fn(B, oi->fn);
      lua_pushvalue(L, left);
      lua_rawgeti(L, rights, j);
      if (lwm_call(oi, 2, 1, lrec) != WM_OK) {
        lua_settop(L, base);
        return WM_ERR;
      }
      if (lua_isnil(L, -1)) { /* nothing to emit */
        lua_pop(L, 1);
        continue;
      }
      wm_value v;
      if (lwm_to_value(B, -1, &v) != 0) {
        lua_settop(L, base);
        return wm_ctx_error(&B->ctx, "out of memory");
      }
      int rc = wm_op_emit(op, 0, &v, f->max_ts);
      wm_value_release(&B->ctx.host, &v);
      lua_pop(L, 1);
      if (rc != WM_OK) {
        lua_settop(L, base);
        return rc;
      }
    }
    lua_settop(L, left - 1);
  }
  lua_settop(L, base);
  return WM_OK;
}

int lwm_winfn_wjoin(wm_winfn *fn, lwm_opinfo *oi, int cogroup) {
  wjfn *w = realloc(oi, sizeof *w);
  if (!w) {
    lwm_opinfo_free(oi);
    return -1;
  }
  w->cogroup = cogroup;
  w->op = NULL;
  w->ts = 0;
  memset(fn, 0, sizeof *fn);
  fn->list = 1; /* the window keeps every (tagged) record */
  fn->fire = wj_fire;
  fn->free = lwm_opinfo_free;
  fn->ud = w;
  lua_State *L = w->oi.B->L;
  lua_pushlightuserdata(L, w);
  lua_pushcclosure(L, l_wj_out, 1);
  w->outfn = lwm_store_fn(w->oi.B);
  return 0;
}
