/* The built-in aggregations, computed in C with no Lua call per record (semantics.md §7):
 * sum, min, max (the first record with the field replaced), min_by, max_by (the whole
 * record holding the extreme, the first one on ties) and count(). */
#include "ops/wm_agg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"

typedef struct builtin {
  int agg;
  char *field_name;
  wm_field field;
  wm_schema *count_schema; /* count(): {count, key, start, stop} */
} builtin;

/* The names of the built-in aggregations (WM_AGG_*), for messages. */
static const char *const agg_names[] = {"", "sum", "min", "max", "min_by", "max_by", "count"};

static int num_of(wm_op *op, builtin *b, const wm_value *rec, wm_value *out) {
  wm_ctx *ctx = op->ctx;
  wm_buf buf;
  if (wm_field_get(&ctx->host, &b->field, rec, out, &ctx->error) != 0) {
    wm_buf_init(&buf); /* the host's message (a Lua table's __index raised, ...): the record */
    wm_op_format_record(op, rec, &buf);
    wm_ctx_error_append(ctx, " (%s('%s') on record %s)", agg_names[b->agg], b->field_name,
                        buf.data ? buf.data : "");
    wm_buf_free(&buf);
    return WM_ERR;
  }
  if (out->type == WM_INT || out->type == WM_FLOAT) return WM_OK;
  wm_buf_init(&buf);
  wm_op_format_record(op, rec, &buf);
  wm_ctx_error(ctx, "%s('%s'): field '%s' is %s in record %s", agg_names[b->agg], b->field_name,
               b->field_name, out->type == WM_NIL ? "missing" : "not a number",
               buf.data ? buf.data : "");
  wm_buf_free(&buf);
  return WM_ERR;
}

static int num_cmp(const wm_value *a, const wm_value *b) {
  if (a->type == WM_INT && b->type == WM_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
  double x = a->type == WM_INT ? (double)a->u.i : a->u.f;
  double y = b->type == WM_INT ? (double)b->u.i : b->u.f;
  return (x > y) - (x < y);
}

void wm_agg_combine(int agg, wm_value *aux, const wm_value *b) {
  if (aux->type == WM_NIL) {
    *aux = *b;
    return;
  }
  if (b->type != WM_INT && b->type != WM_FLOAT) return;
  switch (agg) {
  case WM_AGG_SUM:
  case WM_AGG_COUNT:
    if (aux->type == WM_INT && b->type == WM_INT)
      aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)b->u.i);
    else
      *aux = wm_float((aux->type == WM_INT ? (double)aux->u.i : aux->u.f) +
                      (b->type == WM_INT ? (double)b->u.i : b->u.f));
    break;
  case WM_AGG_MIN:
    if (num_cmp(b, aux) < 0) *aux = *b;
    break;
  case WM_AGG_MAX:
    if (num_cmp(b, aux) > 0) *aux = *b;
    break;
  default:
    break;
  }
}

static int builtin_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  builtin *b = ud;
  const wm_host *h = &op->ctx->host;
  if (b->agg == WM_AGG_COUNT) {
    if (aux->type == WM_NIL) *aux = wm_int(0);
    aux->u.i++;
    return WM_OK;
  }
  wm_value v;
  if (num_of(op, b, rec, &v) != WM_OK) return WM_ERR;
  /* aux (a number) is nil exactly when acc is: test it, acc lives in the entry's cold part */
  if (aux->type == WM_NIL) {
    if (wm_value_copy(h, acc, rec) != 0) return wm_ctx_error(op->ctx, "out of memory");
    *aux = v;
    return WM_OK;
  }
  switch (b->agg) {
  case WM_AGG_SUM:
    if (aux->type == WM_INT && v.type == WM_INT)
      aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)v.u.i); /* wraps like Lua */
    else
      *aux = wm_float((aux->type == WM_INT ? (double)aux->u.i : aux->u.f) +
                      (v.type == WM_INT ? (double)v.u.i : v.u.f));
    break;
  case WM_AGG_MIN:
    if (num_cmp(&v, aux) < 0) *aux = v;
    break;
  case WM_AGG_MAX:
    if (num_cmp(&v, aux) > 0) *aux = v;
    break;
  case WM_AGG_MIN_BY:
  case WM_AGG_MAX_BY: {
    int c = num_cmp(&v, aux);
    if ((b->agg == WM_AGG_MIN_BY && c < 0) || (b->agg == WM_AGG_MAX_BY && c > 0)) {
      wm_value n;
      if (wm_value_copy(h, &n, rec) != 0) return wm_ctx_error(op->ctx, "out of memory");
      wm_value_release(h, acc);
      *acc = n;
      *aux = v;
    }
    break;
  }
  default: break;
  }
  return WM_OK;
}

const wm_field *wm_winfn_sum_field(const wm_winfn *fn) {
  if (fn->add != builtin_add) return NULL;
  const builtin *b = fn->ud;
  return b->agg == WM_AGG_SUM ? &b->field : NULL;
}

int wm_winfn_builtin_agg(const wm_winfn *fn, wm_field **field) {
  *field = NULL;
  if (fn->add != builtin_add) return 0;
  builtin *b = fn->ud;
  if (b->agg != WM_AGG_COUNT) *field = &b->field;
  return b->agg;
}

static int builtin_merge(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *bacc,
                         const wm_value *baux) {
  builtin *b = ud;
  const wm_host *h = &op->ctx->host;
  if (b->agg == WM_AGG_COUNT) {
    aux->u.i += baux->u.i;
    return WM_OK;
  }
  if (acc->type == WM_NIL) {
    if (wm_value_copy(h, acc, bacc) != 0) return wm_ctx_error(op->ctx, "out of memory");
    *aux = *baux;
    return WM_OK;
  }
  if (b->agg == WM_AGG_SUM) {
    if (aux->type == WM_INT && baux->type == WM_INT)
      aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)baux->u.i);
    else
      *aux = wm_float((aux->type == WM_INT ? (double)aux->u.i : aux->u.f) +
                      (baux->type == WM_INT ? (double)baux->u.i : baux->u.f));
    return WM_OK;
  }
  int c = num_cmp(baux, aux);
  int better = (b->agg == WM_AGG_MIN || b->agg == WM_AGG_MIN_BY) ? c < 0 : c > 0;
  if (!better) return WM_OK;
  if (b->agg == WM_AGG_MIN_BY || b->agg == WM_AGG_MAX_BY) {
    wm_value n;
    if (wm_value_copy(h, &n, bacc) != 0) return wm_ctx_error(op->ctx, "out of memory");
    wm_value_release(h, acc);
    *acc = n;
  }
  *aux = *baux;
  return WM_OK;
}

static int builtin_fire(void *ud, wm_op *op, const wm_fire *f) {
  builtin *b = ud;
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  wm_value out;
  int rc;
  switch (b->agg) {
  case WM_AGG_COUNT: {
    wm_row *r = wm_row_new(b->count_schema);
    if (!r) return wm_ctx_error(ctx, "out of memory");
    /* fields in schema order: count, key, start, stop */
    r->fields[0] = *f->aux;
    if (wm_value_copy(h, &r->fields[1], f->key) != 0) {
      wm_row_release(h, r);
      return wm_ctx_error(ctx, "out of memory");
    }
    r->fields[2] = wm_int(f->window.start);
    r->fields[3] = wm_int(f->window.stop);
    out = wm_row_value(r);
    break;
  }
  case WM_AGG_MIN_BY:
  case WM_AGG_MAX_BY: return wm_op_emit(op, 0, f->acc, f->max_ts);
  default:
    if (wm_field_with(h, &b->field, f->acc, f->aux, &out, &ctx->error) != 0) {
      wm_buf buf;
      wm_buf_init(&buf);
      wm_op_format_record(op, f->acc, &buf);
      wm_ctx_error_append(ctx, " (%s('%s') on record %s)", agg_names[b->agg], b->field_name,
                          buf.data ? buf.data : "");
      wm_buf_free(&buf);
      return WM_ERR;
    }
  }
  rc = wm_op_emit(op, 0, &out, f->max_ts);
  wm_value_release(h, &out);
  return rc;
}

static void builtin_free(void *ud) {
  builtin *b = ud;
  free(b->field_name);
  wm_schema_release(b->count_schema);
  free(b);
}

int wm_winfn_builtin(wm_winfn *fn, int agg, const char *field) {
  builtin *b = calloc(1, sizeof *b);
  if (!b) return -1;
  b->agg = agg;
  b->field_name = strdup(field ? field : "");
  if (!b->field_name) goto fail;
  b->field.name = b->field_name;
  b->field.index = -1;
  if (agg == WM_AGG_COUNT) {
    static const char *const names[] = {"count", "key", "start", "stop"};
    static const uint8_t types[] = {WM_FT_INTEGER, WM_FT_ANY, WM_FT_INTEGER, WM_FT_INTEGER};
    if (!(b->count_schema = wm_schema_new(4, names, types))) goto fail;
  }
  memset(fn, 0, sizeof *fn);
  fn->add = builtin_add;
  fn->fire = builtin_fire;
  fn->merge = builtin_merge;
  fn->free = builtin_free;
  fn->ud = b;
  return 0;
fail:
  builtin_free(b);
  return -1;
}

void wm_winfn_meaning(const char *given, const wm_winfn *fn, char *out, size_t n) {
  static const char *const aggs[] = {"?", "sum", "min", "max", "min_by", "max_by", "count"};
  wm_field *f = NULL;
  int agg = given[0] ? 0 : wm_winfn_builtin_agg(fn, &f);
  if (given[0])
    snprintf(out, n, "%s", given);
  else if (agg >= 1 && agg <= 6)
    snprintf(out, n, "%s%s%s%s", aggs[agg], f ? "(" : "", f && f->name ? f->name : "", f ? ")" : "");
  else if (n)
    out[0] = '\0';
}
