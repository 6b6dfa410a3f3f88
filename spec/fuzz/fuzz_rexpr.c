/* libFuzzer target: the string functions of the SQL row expressions in C (core/ops/wm_rexpr.c)
 * and REGEXP_EXTRACT's matcher (core/ops/wm_rregex.c). The input is up to three parts split at
 * NUL bytes: a pattern (a regular expression, and a DATE_FORMAT pattern), a string s and a
 * string p; its first bytes also give integers.
 * Invariants: a pattern is compiled or refused with a message; a match, a group, SUBSTRING,
 * TRIM and SPLIT_INDEX lie inside s (groups inside the match); UPPER and LOWER keep the length;
 * CHAR_LENGTH is at most the bytes; || is the bytes of both; nothing leaks (ASan). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ops/wm_rexpr.h"
#include "ops/wm_rregex.h"

/* v is a string inside [s, s + n) */
static int inside(const wm_value *v, const char *s, size_t n) {
  size_t l;
  const char *p = wm_value_str(v, &l);
  return p >= s && p + l <= s + n;
}

static void regex(const char *pat, size_t np, const char *s, size_t n) {
  char err[200];
  err[0] = '\0';
  wm_rregex *r = wm_rregex_new(pat, np, err, sizeof err);
  if (!r) {
    ASSERT(strstr(err, "of the pattern)") != NULL || strcmp(err, "out of memory") == 0);
    return;
  }
  size_t mf = 0, mt = 0;
  int whole = wm_rregex_extract(r, s, n, 0, &mf, &mt);
  ASSERT(whole >= -1 && whole <= 1);
  if (whole == 1) ASSERT(mf <= mt && mt <= n);
  for (int g = 1; g <= wm_rregex_groups(r) && g < 50; g++) {
    size_t f = 0, t = 0;
    int rc = wm_rregex_extract(r, s, n, g, &f, &t);
    ASSERT(rc == whole || (rc == 0 && whole == 1));
    if (rc == 1) ASSERT(mf <= f && f <= t && t <= mt);
  }
  ASSERT(wm_rregex_extract(r, s, n, wm_rregex_groups(r) + 1, &mf, &mt) == 0);
  wm_rregex_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  const char *parts[3] = {"", "", ""};
  size_t lens[3] = {0, 0, 0};
  char *copy = malloc(size + 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  copy[size] = '\0';
  size_t at = 0;
  for (int k = 0; k < 3 && at <= size; k++) {
    const char *e = memchr(copy + at, '\0', size - at);
    size_t l = e ? (size_t)(e - (copy + at)) : size - at;
    parts[k] = copy + at;
    lens[k] = l;
    at += l + 1;
  }
  int64_t i1 = size > 0 ? (int8_t)data[0] : 0, i2 = size > 1 ? (int8_t)data[1] % 8 : 0;
  int64_t ts = 0;
  for (size_t k = 0; k < 8 && k < size; k++) ts = (int64_t)((uint64_t)ts << 8 | data[k]);
  const char *s = parts[1], *p = parts[2];
  size_t n = lens[1];
  /* backtracking takes exponential time on nested repeats (as wm.sql.regex and Java do):
   * short patterns and inputs keep each run well under the fuzzer's timeout, and a pattern
   * that repeats a group is left out (the planner keeps those in Lua, wm.sql.cexpr) */
  bool group_rep = false;
  for (size_t k = 0; k + 1 < lens[0]; k++)
    if (parts[0][k] == ')' && strchr("*+{", parts[0][k + 1])) group_rep = true;
  if (lens[0] <= 24 && !group_rep) regex(parts[0], lens[0], s, n < 8 ? n : 8);

  wm_rexpr *x = wm_rexpr_new();
  ASSERT(x);
  wm_value sv = wm_cstr(s, n), pv = wm_cstr(p, lens[2]), iv1 = wm_int(i1), iv2 = wm_int(i2 < 0 ? -i2 : i2),
           tv = wm_int(ts);
  int S = wm_rexpr_lit(x, &sv), P = wm_rexpr_lit(x, &pv), I1 = wm_rexpr_lit(x, &iv1), I2 = wm_rexpr_lit(x, &iv2),
      T = wm_rexpr_lit(x, &tv);
  /* the literals are copies: results inside s are inside the copy */
  wm_value sc;
  wm_rexpr_eval(x, S, NULL, &sv, &sc, NULL);
  size_t sn;
  const char *sp = wm_value_str(&sc, &sn);
  int a2[2] = {S, P}, a3[3] = {S, I1, I2}, as[3] = {S, P, I1};
  int nodes[] = {wm_rexpr_op(x, WM_RX_UPPER, &S, 1, NULL),        wm_rexpr_op(x, WM_RX_LOWER, &S, 1, NULL),
                 wm_rexpr_op(x, WM_RX_TRIM, &S, 1, NULL),         wm_rexpr_op(x, WM_RX_CHAR_LENGTH, &S, 1, NULL),
                 wm_rexpr_op(x, WM_RX_SUBSTRING, a3, 3, "f:1:1"), wm_rexpr_op(x, WM_RX_SUBSTRING, a3, 2, NULL),
                 wm_rexpr_op(x, WM_RX_LIKE, a2, 2, NULL),         wm_rexpr_op(x, WM_RX_SPLIT_INDEX, as, 3, NULL),
                 wm_rexpr_op(x, WM_RX_CONCAT, a2, 2, NULL)};
  wm_error err;
  wm_value v;
  for (size_t k = 0; k < sizeof nodes / sizeof nodes[0]; k++) {
    ASSERT(nodes[k] >= 0);
    wm_error_clear(&err);
    int rc = wm_rexpr_eval(x, nodes[k], NULL, &sv, &v, &err);
    ASSERT(rc == 0); /* (SUBSTRING's length is >= 0 here) */
    switch (k) {
    case 0: case 1: ASSERT(v.type == WM_STR && v.u.s->len == sn); break;
    case 3: ASSERT(v.type == WM_INT && v.u.i >= 0 && (size_t)v.u.i <= sn); break;
    case 6: ASSERT(v.type == WM_BOOL); break;
    case 7: ASSERT(v.type == WM_NIL || inside(&v, sp, sn)); break;
    case 8: ASSERT(v.type == WM_STR && v.u.s->len == sn + lens[2]); break;
    default: ASSERT(inside(&v, sp, sn)); break;
    }
  }
  /* CAST AS STRING of the integer, as a timestamp; CAST(s AS TIMESTAMP / BOOLEAN), TRY_CAST */
  wm_value tsn = wm_cstr("TIMESTAMP", 9), bon = wm_cstr("BOOLEAN", 7), tru = wm_bool(true);
  int fa[3] = {S, wm_rexpr_lit(x, &tsn), wm_rexpr_lit(x, &tru)}, fb[3] = {S, wm_rexpr_lit(x, &bon), fa[2]};
  int more[] = {wm_rexpr_op(x, WM_RX_TO_STR, &T, 1, NULL), wm_rexpr_op(x, WM_RX_TS_TO_STR, &T, 1, NULL),
                wm_rexpr_op(x, WM_RX_FROM_STR, fa, 3, NULL), wm_rexpr_op(x, WM_RX_FROM_STR, fb, 3, NULL)};
  for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
    ASSERT(more[k] >= 0);
    ASSERT(wm_rexpr_eval(x, more[k], NULL, &sv, &v, &err) == 0);
    if (k < 2) ASSERT(v.type == WM_STR && v.u.s->len > 0);
    if (k == 2) ASSERT(v.type == WM_NIL || v.type == WM_INT);
    if (k == 3) ASSERT(v.type == WM_NIL || v.type == WM_BOOL);
  }
  /* DATE_FORMAT of the pattern part (when it is one) */
  int dargs[2] = {T, wm_rexpr_lit(x, &(wm_value){.type = WM_CSTR, .len = (uint32_t)lens[0], .u.cs = parts[0]})};
  int d = wm_rexpr_op(x, WM_RX_DATE_FORMAT, dargs, 2, NULL);
  if (d >= 0) {
    wm_error_clear(&err);
    int rc = wm_rexpr_eval(x, d, NULL, &sv, &v, &err);
    ASSERT(rc != 0 || wm_value_is_string(&v));
  }
  wm_rexpr_reset(x);
  wm_rexpr_free(x);
  free(copy);
  return 0;
}
