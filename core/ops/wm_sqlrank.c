/* SQL deduplication in C (ops/wm_sqlrank.h). */
#include "ops/wm_sqlrank.h"

#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

typedef struct sqldedup {
  size_t nf;
  wm_field *f;       /* the visible columns of a record (names owned) */
  wm_field tf;       /* its time column (name owned) */
  int keep_last;
  wm_schema *schema; /* of the result rows */
  wm_schema *cl;     /* of the changelog rows {k, r} */
  /* between add and fire (one record): 0 nothing to emit, 1 +I, 2 -U prev then +U */
  int pending;
  wm_value prev; /* owned: the row replaced (pending 2) */
} sqldedup;

/* The record in an error message (appended to ctx.error). */
static int bad_record(wm_op *op, const wm_value *rec) {
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  wm_ctx_error_append(op->ctx, " in record %s", b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

static int read_field(wm_op *op, wm_field *f, const wm_value *rec, wm_value *out) {
  const wm_value *p = wm_field_peek(f, rec);
  if (p) {
    *out = *p;
    return WM_OK;
  }
  if (wm_field_get(&op->ctx->host, f, rec, out, &op->ctx->error) != 0) return bad_record(op, rec);
  return WM_OK;
}

static int is_num(const wm_value *v) { return v->type == WM_INT || v->type == WM_FLOAT; }

/* -1, 0, 1 as Lua's < and == on numbers (an integer against a float mathematically). */
static int num_cmp(const wm_value *a, const wm_value *b) {
  if (a->type == WM_INT && b->type == WM_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
  double x = a->type == WM_INT ? (double)a->u.i : a->u.f;
  double y = b->type == WM_INT ? (double)b->u.i : b->u.f;
  return (x > y) - (x < y);
}

static int dd_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  sqldedup *s = ud;
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  s->pending = 0;
  wm_value t;
  if (read_field(op, &s->tf, rec, &t) != WM_OK) return WM_ERR;
  if (!is_num(&t)) {
    wm_ctx_error(ctx, "SQL deduplication: its ORDER BY time '%s' is %s, not a time", s->tf.name,
                 t.type == WM_NIL ? "NULL" : "not a number");
    return bad_record(op, rec);
  }
  int first = acc->type != WM_ROW;
  if (!first) {
    if (!is_num(aux)) return wm_ctx_error(ctx, "SQL deduplication: a kept row without its time");
    int c = num_cmp(&t, aux);
    if (s->keep_last ? c < 0 : c >= 0) return WM_OK; /* the kept row stays */
  }
  wm_row *r = wm_row_new(s->schema);
  if (!r) return wm_ctx_error(ctx, "out of memory");
  for (size_t i = 0; i < s->nf; i++) {
    wm_value v;
    if (read_field(op, &s->f[i], rec, &v) != WM_OK) {
      wm_row_release(h, r);
      return WM_ERR;
    }
    if (wm_value_copy(h, &r->fields[i], &v) != 0) {
      wm_row_release(h, r);
      return wm_ctx_error(ctx, "out of memory");
    }
  }
  if (first) {
    wm_value_release(h, acc);
    s->pending = 1;
  } else {
    wm_value_release(h, &s->prev);
    s->prev = *acc;
    s->pending = 2;
  }
  *acc = wm_row_value(r);
  wm_value_release(h, aux);
  *aux = t; /* (a number: an immediate) */
  return WM_OK;
}

/* Emits {k = kind, r = row} (row borrowed). */
static int emit_change(sqldedup *s, wm_op *op, int64_t ts, const char *kind, const wm_value *row) {
  const wm_host *h = &op->ctx->host;
  wm_row *c = wm_row_new(s->cl);
  wm_str *k = wm_str_new(kind, 2);
  if (!c || !k) {
    if (c) wm_row_release(h, c);
    free(k);
    return wm_ctx_error(op->ctx, "out of memory");
  }
  c->fields[0].type = WM_STR;
  c->fields[0].u.s = k;
  if (wm_value_copy(h, &c->fields[1], row) != 0) {
    wm_row_release(h, c);
    return wm_ctx_error(op->ctx, "out of memory");
  }
  wm_value out = wm_row_value(c);
  int rc = wm_op_emit(op, 0, &out, ts);
  wm_value_release(h, &out);
  return rc;
}

static int dd_fire(void *ud, wm_op *op, const wm_fire *f) {
  sqldedup *s = ud;
  int pending = s->pending, rc = WM_OK;
  s->pending = 0;
  if (pending == 1) {
    rc = emit_change(s, op, f->max_ts, "+I", f->acc);
  } else if (pending == 2) {
    rc = emit_change(s, op, f->max_ts, "-U", &s->prev);
    if (rc == WM_OK) rc = emit_change(s, op, f->max_ts, "+U", f->acc);
    wm_value_release(&op->ctx->host, &s->prev);
  }
  return rc;
}

static void dd_free(void *ud) {
  sqldedup *s = ud;
  if (!s) return;
  for (size_t i = 0; s->f && i < s->nf; i++) free((char *)s->f[i].name);
  free(s->f);
  free((char *)s->tf.name);
  /* (prev is released by fire, which always follows add; a failed add keeps nothing) */
  if (s->schema) wm_schema_release(s->schema);
  if (s->cl) wm_schema_release(s->cl);
  free(s);
}

int wm_keyedfn_sqldedup(wm_winfn *fn, const wm_sqldedup_spec *spec, wm_error *err) {
  if (!spec->time || spec->nfields == 0) {
    wm_error_set(err, "SQL deduplication: %s", spec->time ? "no column to keep" : "no ORDER BY time");
    return -1;
  }
  sqldedup *s = calloc(1, sizeof *s);
  uint8_t *types = calloc(spec->nfields, 1);
  if (!s || !types) goto oom;
  s->keep_last = spec->keep_last ? 1 : 0;
  if (!(s->f = calloc(spec->nfields, sizeof *s->f))) goto oom;
  for (size_t i = 0; i < spec->nfields; i++) {
    char *name = strdup(spec->fields[i] ? spec->fields[i] : "");
    if (!name) goto oom;
    s->f[i] = (wm_field){.name = name, .index = -1};
    s->nf++;
    types[i] = WM_FT_ANY;
  }
  char *tname = strdup(spec->time);
  if (!tname) goto oom;
  s->tf = (wm_field){.name = tname, .index = -1};
  if (!(s->schema = wm_schema_new((uint32_t)spec->nfields, spec->fields, types))) goto oom;
  static const char *const names[2] = {"k", "r"};
  static const uint8_t cltypes[2] = {WM_FT_STRING, WM_FT_ANY};
  if (!(s->cl = wm_schema_new(2, names, cltypes))) goto oom;
  free(types);
  memset(fn, 0, sizeof *fn);
  fn->add = dd_add;
  fn->fire = dd_fire;
  fn->free = dd_free;
  fn->ud = s;
  return 0;
oom:
  wm_error_set(err, "out of memory");
  free(types);
  dd_free(s);
  return -1;
}
