/* SQL rows as Flink's print sink shows them, in C (ops/wm_sqlfmt.h). */
#include "ops/wm_sqlfmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wm_sqlfmt_double(wm_buf *b, double x) {
  if (isnan(x)) { wm_buf_adds(b, "NaN"); return; }
  if (isinf(x)) { wm_buf_adds(b, x > 0 ? "Infinity" : "-Infinity"); return; }
  if (x == 0) { wm_buf_adds(b, signbit(x) ? "-0.0" : "0.0"); return; }
  /* the fewest significant digits that read back as x (values.lua's format_double) */
  char s[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(s, sizeof s, "%.*e", p - 1, x);
    if (strtod(s, NULL) == x) break;
  }
  const char *q = s;
  bool neg = *q == '-';
  if (neg) q++;
  char digits[32];
  size_t nd = 0;
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9' && nd < sizeof digits - 1) digits[nd++] = *q;
  int exp = *q == 'e' ? atoi(q + 1) : 0;
  while (nd > 0 && digits[nd - 1] == '0') nd--;
  if (nd == 0) digits[nd++] = '0';
  digits[nd] = '\0';
  if (neg) wm_buf_addc(b, '-');
  double ax = fabs(x);
  if (ax >= 1e-3 && ax < 1e7) {
    int point = exp + 1; /* digits before the decimal point */
    if (point <= 0) {
      wm_buf_adds(b, "0.");
      for (int i = 0; i < -point; i++) wm_buf_addc(b, '0');
      wm_buf_adds(b, digits);
    } else if ((size_t)point >= nd) {
      wm_buf_adds(b, digits);
      for (size_t i = nd; i < (size_t)point; i++) wm_buf_addc(b, '0');
      wm_buf_adds(b, ".0");
    } else {
      wm_buf_add(b, digits, (size_t)point);
      wm_buf_addc(b, '.');
      wm_buf_adds(b, digits + point);
    }
    return;
  }
  wm_buf_addc(b, digits[0]);
  wm_buf_addc(b, '.');
  wm_buf_adds(b, nd > 1 ? digits + 1 : "0");
  char e[16];
  snprintf(e, sizeof e, "E%d", exp);
  wm_buf_adds(b, e);
}

/* floor division and modulo (Lua's // and %) */
static int64_t fdiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }
static int64_t fmod64(int64_t a, int64_t b) { /* (a - fdiv(a, b) * b overflows at INT64_MIN) */
  int64_t r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

void wm_sqlfmt_timestamp(wm_buf *b, int64_t ms) {
  int64_t days = fdiv(ms, 86400000), rem = fmod64(ms, 86400000);
  /* civil_from_days (Howard Hinnant's), as values.lua */
  int64_t z = days + 719468;
  int64_t era = fdiv(z, 146097); /* floored already: Hinnant's z - 146096 is for a truncating / */
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y++;
  int64_t s = rem / 1000;
  char t[80];
  snprintf(t, sizeof t, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%03lld", (long long)y, (long long)m, (long long)d,
           (long long)(s / 3600), (long long)(s / 60 % 60), (long long)(s % 60), (long long)(rem % 1000));
  wm_buf_adds(b, t);
}

typedef struct sqlfmt {
  int n;
  wm_field *f;     /* names owned */
  uint8_t *kinds;
  wm_buf buf;
} sqlfmt;

static void sqlfmt_free(wm_op *op) {
  sqlfmt *p = op->impl;
  if (!p) return;
  for (int i = 0; i < p->n; i++) free((char *)p->f[i].name);
  free(p->f);
  free(p->kinds);
  wm_buf_free(&p->buf);
  free(p);
}

static void add_value(wm_buf *b, const wm_value *v, uint8_t kind) {
  switch (v->type) {
  case WM_NIL: wm_buf_adds(b, "<NULL>"); return;
  case WM_BOOL:
    wm_buf_adds(b, kind == WM_SQLF_BOOLEAN ? (v->u.b ? "TRUE" : "FALSE") : (v->u.b ? "true" : "false"));
    return;
  case WM_INT:
    if (kind == WM_SQLF_TIMESTAMP) wm_sqlfmt_timestamp(b, v->u.i);
    else wm_buf_add_int(b, v->u.i);
    return;
  case WM_FLOAT: wm_sqlfmt_double(b, v->u.f); return;
  case WM_CSTR: case WM_STR: {
    size_t n;
    const char *s = wm_value_str(v, &n);
    wm_buf_add(b, s, n);
    return;
  }
  default: wm_format_value(b, v, 0, NULL, NULL); return;
  }
}

static int sqlfmt_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  sqlfmt *p = op->impl;
  wm_ctx *ctx = op->ctx;
  wm_buf *b = &p->buf;
  b->len = 0;
  wm_buf_adds(b, "+I[");
  for (int i = 0; i < p->n; i++) {
    wm_value v;
    const wm_value *pv = wm_field_peek(&p->f[i], rec);
    if (pv) v = *pv;
    else if (wm_field_get(&ctx->host, &p->f[i], rec, &v, &ctx->error) != 0) return wm_op_failed(op, WM_ERR);
    if (i) wm_buf_adds(b, ", ");
    add_value(b, &v, p->kinds[i]);
  }
  wm_buf_addc(b, ']');
  if (b->oom) return wm_ctx_error(ctx, "out of memory");
  wm_value out = wm_cstr(b->data, b->len); /* borrowed for the call: print copies what it keeps */
  return wm_op_emit(op, 0, &out, ts);
}

static const wm_op_vt sqlfmt_vt = {.kind = "sql_format", .record = sqlfmt_record, .free = sqlfmt_free};

wm_op *wm_sqlfmt_new(wm_ctx *ctx, const char *name, int n, const char *const *names, const uint8_t *kinds) {
  sqlfmt *p = calloc(1, sizeof *p);
  bool ok = p != NULL;
  if (ok) {
    p->f = calloc((size_t)n + 1, sizeof *p->f);
    p->kinds = malloc((size_t)n + 1);
    ok = p->f && p->kinds;
  }
  for (int i = 0; ok && i < n; i++) {
    p->f[i].name = strdup(names[i]);
    p->f[i].index = -1;
    p->kinds[i] = kinds[i];
    p->n = i + 1;
    ok = p->f[i].name != NULL;
  }
  wm_op *op = NULL;
  if (ok) {
    wm_buf_init(&p->buf);
    op = wm_op_new(ctx, &sqlfmt_vt, p, name);
  }
  if (!op) {
    if (p) {
      wm_op tmp = {.impl = p};
      sqlfmt_free(&tmp);
    }
    wm_ctx_error(ctx, "out of memory");
  }
  return op;
}
