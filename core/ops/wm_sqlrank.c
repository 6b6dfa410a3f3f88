/* SQL deduplication in C (ops/wm_sqlrank.h). */
#include "ops/wm_sqlrank.h"

#include <stdio.h>
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

/* ---- Top-N ----------------------------------------------------------------------------- */

typedef struct sqltopn {
  size_t nf, no, n;
  wm_field *f; /* the visible columns, then the ORDER BY ones (names owned) */
  uint8_t *desc, *nfirst;
  int with_rn;
  wm_schema *kept; /* of a kept row: nf + no */
  /* of the top, by capacity: tops[i] holds cap[i] kept rows, cap[0] = min(n, 4), each next
   * four times larger, the last n (a top grows as its key's rows come: a key of few rows
   * keeps few slots, whatever N) */
  wm_schema *tops[12];
  size_t cap[12], ntops;
  wm_schema *out;  /* of a result row: nf (+ rn) */
  wm_schema *cl;
  wm_value *vals; /* scratch: the record's nf + no columns (borrowed from it) */
  wm_value *nb;   /* scratch: the top with the new row in it (n + 1) */
  const wm_value *rec; /* the record between add and fire */
} sqltopn;

static int str_cmp(const wm_value *a, const wm_value *b) {
  size_t na, nb;
  const char *pa = wm_value_str(a, &na), *pb = wm_value_str(b, &nb);
  int c = memcmp(pa, pb, na < nb ? na : nb);
  if (c) return c < 0 ? -1 : 1;
  return (na > nb) - (na < nb);
}

static int is_nan(const wm_value *v) { return v->type == WM_FLOAT && v->u.f != v->u.f; }

/* Lua's a == b on column values. */
static int lua_eq(const wm_value *a, const wm_value *b) {
  if (is_num(a) && is_num(b)) return !is_nan(a) && !is_nan(b) && num_cmp(a, b) == 0;
  int sa = wm_value_is_string(a), sb = wm_value_is_string(b);
  if (sa || sb) return sa && sb && str_cmp(a, b) == 0;
  if (a->type != b->type) return 0;
  if (a->type == WM_NIL) return 1;
  if (a->type == WM_BOOL) return a->u.b == b->u.b;
  return 0;
}

/* Lua's x < y on two non-NULL column values: 1, 0, or -1 when they do not compare. */
static int lua_lt(const wm_value *x, const wm_value *y) {
  if (is_num(x) && is_num(y)) return !is_nan(x) && !is_nan(y) && num_cmp(x, y) < 0;
  if (wm_value_is_string(x) && wm_value_is_string(y)) return str_cmp(x, y) < 0;
  return -1;
}

/* Whether the record's order values (o) sort before the kept row k: 1, 0, or WM_ERR. */
static int tn_less(wm_op *op, sqltopn *s, const wm_value *o, const wm_row *k) {
  for (size_t j = 0; j < s->no; j++) {
    const wm_value *x = &o[j], *y = &k->fields[s->nf + j];
    if (lua_eq(x, y)) continue;
    if (x->type == WM_NIL) return s->nfirst[j];
    if (y->type == WM_NIL) return !s->nfirst[j];
    int lt = s->desc[j] ? lua_lt(y, x) : lua_lt(x, y);
    if (lt < 0)
      return wm_ctx_error(op->ctx, "SQL Top-N: ORDER BY column '%s' holds values that do not compare",
                          s->f[s->nf + j].name);
    return lt;
  }
  return 0;
}

static int tn_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  (void)op;
  (void)acc;
  (void)aux;
  ((sqltopn *)ud)->rec = rec;
  return WM_OK;
}

/* Emits {k = kind, r = the result row of kept row k (rank rn when the rows carry it)}. */
static int tn_emit(sqltopn *s, wm_op *op, int64_t ts, const char *kind, const wm_value *k, int64_t rn) {
  const wm_host *h = &op->ctx->host;
  wm_row *r = wm_row_new(s->out);
  if (!r) return wm_ctx_error(op->ctx, "out of memory");
  for (size_t i = 0; i < s->nf; i++)
    if (wm_value_copy(h, &r->fields[i], &k->u.row->fields[i]) != 0) {
      wm_row_release(h, r);
      return wm_ctx_error(op->ctx, "out of memory");
    }
  if (s->with_rn) r->fields[s->nf] = wm_int(rn);
  wm_value v = wm_row_value(r);
  sqldedup d = {.cl = s->cl};
  int rc = emit_change(&d, op, ts, kind, &v);
  wm_value_release(h, &v);
  return rc;
}

static int tn_fire(void *ud, wm_op *op, const wm_fire *f) {
  sqltopn *s = ud;
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  const wm_value *rec = s->rec;
  wm_value *acc = (wm_value *)f->acc, *aux = (wm_value *)f->aux; /* the key's own */
  s->rec = NULL;
  if (!rec) return wm_ctx_error(ctx, "SQL Top-N: fired without a record");
  size_t nv = s->nf + s->no;
  for (size_t i = 0; i < nv; i++)
    if (read_field(op, &s->f[i], rec, &s->vals[i]) != WM_OK) return WM_ERR;
  if (acc->type != WM_ROW) {
    wm_row *t = wm_row_new(s->tops[0]);
    if (!t) return wm_ctx_error(ctx, "out of memory");
    wm_value_release(h, acc);
    *acc = wm_row_value(t);
    wm_value_release(h, aux);
    *aux = wm_int(0);
  }
  wm_row *top = acc->u.row;
  size_t size = aux->type == WM_INT && aux->u.i >= 0 ? (size_t)aux->u.i : 0;
  size_t capacity = top->schema->nfields;
  if (size > capacity || capacity > s->n) return wm_ctx_error(ctx, "SQL Top-N: a top of a bad size");
  for (size_t i = 0; i < size; i++)
    if (top->fields[i].type != WM_ROW || top->fields[i].u.row->schema->nfields != nv)
      return wm_ctx_error(ctx, "SQL Top-N: a kept row of a bad shape");
  const wm_value *o = s->vals + s->nf;
  if (size >= s->n) {
    int lt = tn_less(op, s, o, top->fields[size - 1].u.row);
    if (lt != 1) return lt == 0 ? WM_OK : WM_ERR;
  }
  /* its place: after every row that does not sort after it */
  size_t p = size;
  while (p > 0) {
    int lt = tn_less(op, s, o, top->fields[p - 1].u.row);
    if (lt == WM_ERR) return WM_ERR;
    if (!lt) break;
    p--;
  }
  /* a top of our own (not a restore decoder's too) with room for the rows kept after this one */
  size_t need = size + 1 < s->n ? size + 1 : s->n;
  if (top->refs != 1 || need > capacity) {
    size_t t = 0;
    while (t + 1 < s->ntops && s->cap[t] < need) t++;
    wm_row *c = wm_row_new(s->tops[t]);
    if (!c) return wm_ctx_error(ctx, "out of memory");
    for (size_t i = 0; i < size; i++) {
      c->fields[i] = top->fields[i]; /* (rows: a reference each) */
      c->fields[i].u.row->refs++;
    }
    wm_value_release(h, acc);
    *acc = wm_row_value(c);
    top = c;
  }
  wm_row *k = wm_row_new(s->kept);
  if (!k) return wm_ctx_error(ctx, "out of memory");
  for (size_t i = 0; i < nv; i++)
    if (wm_value_copy(h, &k->fields[i], &s->vals[i]) != 0) {
      wm_row_release(h, k);
      return wm_ctx_error(ctx, "out of memory");
    }
  /* the top with the new row at p (values moved, not copied) */
  wm_value *nb = s->nb;
  for (size_t i = 0; i < p; i++) nb[i] = top->fields[i];
  nb[p] = wm_row_value(k);
  for (size_t i = p; i < size; i++) nb[i + 1] = top->fields[i];
  size_t len = size + 1;
  int rc = WM_OK;
  if (!s->with_rn) {
    if (len > s->n) {
      int same = 1;
      for (size_t i = 0; i < s->nf; i++)
        if (!lua_eq(&nb[s->n].u.row->fields[i], &k->fields[i])) same = 0;
      if (!same) {
        rc = tn_emit(s, op, f->max_ts, "-D", &nb[s->n], 0);
        if (rc == WM_OK) rc = tn_emit(s, op, f->max_ts, "+I", &nb[p], 0);
      }
    } else {
      rc = tn_emit(s, op, f->max_ts, "+I", &nb[p], 0);
    }
  } else {
    size_t m = len < s->n + 1 ? len : s->n + 1;
    for (size_t j = p + 1; j < m && rc == WM_OK; j++) {
      rc = tn_emit(s, op, f->max_ts, "-U", &nb[j], (int64_t)j);
      if (rc == WM_OK) rc = tn_emit(s, op, f->max_ts, "+U", &nb[j - 1], (int64_t)j);
    }
    if (rc == WM_OK && m <= s->n) rc = tn_emit(s, op, f->max_ts, "+I", &nb[m - 1], (int64_t)m);
  }
  size_t keep = len < s->n ? len : s->n;
  for (size_t i = 0; i < keep; i++) top->fields[i] = nb[i];
  if (len > s->n) wm_value_release(h, &nb[s->n]);
  *aux = wm_int((int64_t)keep);
  return rc;
}

static void tn_free(void *ud) {
  sqltopn *s = ud;
  if (!s) return;
  for (size_t i = 0; s->f && i < s->nf + s->no; i++) free((char *)s->f[i].name);
  free(s->f);
  free(s->desc);
  free(s->nfirst);
  free(s->vals);
  free(s->nb);
  if (s->kept) wm_schema_release(s->kept);
  for (size_t i = 0; i < s->ntops; i++) wm_schema_release(s->tops[i]);
  if (s->out) wm_schema_release(s->out);
  if (s->cl) wm_schema_release(s->cl);
  free(s);
}

/* A schema of n fields named names[i] (or "1", "2", ... when names is NULL), all WM_FT_ANY. */
static wm_schema *any_schema(size_t n, const char *const *names) {
  const char **nm = calloc(n ? n : 1, sizeof *nm);
  uint8_t *types = calloc(n ? n : 1, 1);
  char *digits = names ? NULL : calloc(n ? n : 1, 21);
  wm_schema *s = NULL;
  if (nm && types && (names || digits)) {
    for (size_t i = 0; i < n; i++) {
      types[i] = WM_FT_ANY;
      if (names) {
        nm[i] = names[i];
      } else {
        snprintf(digits + 21 * i, 21, "%zu", i + 1);
        nm[i] = digits + 21 * i;
      }
    }
    s = wm_schema_new((uint32_t)n, nm, types);
  }
  free(nm);
  free(types);
  free(digits);
  return s;
}

int wm_keyedfn_sqltopn(wm_winfn *fn, const wm_sqltopn_spec *spec, wm_error *err) {
  if (spec->norders == 0 || spec->n == 0 || spec->n > 100000 || spec->nfields == 0) {
    wm_error_set(err, "SQL Top-N: %s", spec->norders == 0 ? "no ORDER BY" : spec->nfields == 0 ? "no column to keep"
                                                                             : "N out of 1 .. 100000");
    return -1;
  }
  size_t nv = spec->nfields + spec->norders;
  sqltopn *s = calloc(1, sizeof *s);
  const char **names = calloc(nv + 1, sizeof *names);
  if (!s || !names) goto oom;
  s->nf = spec->nfields;
  s->no = spec->norders;
  s->n = spec->n;
  s->with_rn = spec->rn_name != NULL;
  s->f = calloc(nv, sizeof *s->f);
  s->desc = calloc(s->no, 1);
  s->nfirst = calloc(s->no, 1);
  s->vals = calloc(nv, sizeof *s->vals);
  s->nb = calloc(s->n + 1, sizeof *s->nb);
  if (!s->f || !s->desc || !s->nfirst || !s->vals || !s->nb) goto oom;
  for (size_t i = 0; i < nv; i++) {
    const char *src = i < s->nf ? spec->fields[i] : spec->orders[i - s->nf].field;
    char *name = strdup(src ? src : "");
    if (!name) goto oom;
    s->f[i] = (wm_field){.name = name, .index = -1};
    names[i] = name;
  }
  for (size_t j = 0; j < s->no; j++) {
    s->desc[j] = spec->orders[j].desc ? 1 : 0;
    s->nfirst[j] = spec->orders[j].nulls_first ? 1 : 0;
  }
  if (!(s->kept = any_schema(nv, names))) goto oom;
  for (size_t c = s->n < 4 ? s->n : 4;; c = c * 4 < s->n ? c * 4 : s->n) {
    if (!(s->tops[s->ntops] = any_schema(c, NULL))) goto oom;
    s->cap[s->ntops++] = c;
    if (c == s->n) break;
  }
  names[s->nf] = spec->rn_name;
  if (!(s->out = any_schema(s->nf + (s->with_rn ? 1 : 0), names))) goto oom;
  static const char *const clnames[2] = {"k", "r"};
  static const uint8_t cltypes[2] = {WM_FT_STRING, WM_FT_ANY};
  if (!(s->cl = wm_schema_new(2, clnames, cltypes))) goto oom;
  free(names);
  memset(fn, 0, sizeof *fn);
  fn->add = tn_add;
  fn->fire = tn_fire;
  fn->free = tn_free;
  fn->ud = s;
  return 0;
oom:
  wm_error_set(err, "out of memory");
  free(names);
  tn_free(s);
  return -1;
}
