/* The per-schema JSON writer (base/wm_jsonw.c) against the generic formatter
 * (wm_format_value): the same bytes for awkward values, field names and schemas. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/wm_jsonw.h"
#include "test.h"

/* Checks that the writer and the generic formatter write the same bytes for v, both with
 * json 0 (print) and 1 (write_lines "json"), after some text already in the buffer. */
static void same_bytes(wm_jsonw *w, const wm_value *v, const char *what) {
  for (int json = 0; json <= 1; json++) {
    wm_buf a, b;
    wm_buf_init(&a);
    wm_buf_init(&b);
    wm_buf_adds(&a, "> ");
    wm_buf_adds(&b, "> ");
    wm_format_value(&a, v, json, NULL, NULL);
    wm_jsonw_value(w, &b, v, json, NULL, NULL);
    int same = a.len == b.len && memcmp(a.data, b.data, a.len) == 0 && b.data[b.len] == '\0';
    if (!same) fprintf(stderr, "  %s (json %d): generic %s, writer %s\n", what, json, a.data, b.data);
    CHECK(same);
    CHECK(!a.oom && !b.oom);
    wm_buf_free(&a);
    wm_buf_free(&b);
  }
}

/* The awkward values, each used as every field of a row in turn. */
static wm_value awkward(int i, wm_str **owned) {
  static const char *const strs[] = {
      "",                        /* empty */
      "a\0b",                    /* NUL inside (3 bytes) */
      "\xff\xc3(",               /* invalid UTF-8 */
      "quote\" back\\ nl\n tab\t cr\r \x01\x1f \x7f",
      "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", /* valid UTF-8 */
      "\xed\xa0\x80 surrogate, \xc0\xaf overlong, \xf4\x90\x80\x80 too big",
      "12345678",                /* exactly eight plain bytes */
      "1234567\"",               /* the escape at the end of an eight-byte block */
      "abcdefghijklmnop\\qrstu", /* the escape in the third block */
      "abcdefghijklmnopqrstuvwxyz0123456789", /* long and plain */
      "\x80",
  };
  const size_t nstr = sizeof strs / sizeof strs[0];
  static const size_t lens[] = {0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 1};
  static const int64_t ints[] = {0, -1, 9, 10, 99, 100, -100, 4294967295, 4294967296, -4294967296,
                                 99999999, 100000000, 1700000000000, 9999999999999999,
                                 INT64_MAX, INT64_MIN, INT64_MIN + 1};
  const size_t nint = sizeof ints / sizeof ints[0];
  const double floats[] = {-0.0, 0.0, 0.1, 1.5, -2.0, 1e300, 1e-300, 123456789012345678.0,
                           INFINITY, -INFINITY, NAN, -NAN, 3.0e15, 1e16};
  const size_t nfloat = sizeof floats / sizeof floats[0];
  if (i < (int)nstr) {
    size_t n = lens[i] ? lens[i] : strlen(strs[i]);
    if (i % 2) { /* an owned string for some, a borrowed one for the others */
      *owned = wm_str_new(strs[i], n);
      wm_value v = {0};
      v.type = WM_STR;
      v.u.s = *owned;
      return v;
    }
    return wm_cstr(strs[i], n);
  }
  i -= (int)nstr;
  if (i < (int)nint) return wm_int(ints[i]);
  i -= (int)nint;
  if (i < (int)nfloat) return wm_float(floats[i]);
  i -= (int)nfloat;
  if (i == 0) return wm_bool(true);
  if (i == 1) return wm_bool(false);
  if (i == 2) return wm_nil();
  return (wm_value){.type = 0xff}; /* the end */
}

void test_jsonw(void) {
  wm_jsonw w;
  wm_jsonw_init(&w);
  /* integers at every power of ten (the digit count), both signs, as wm_buf_add_int */
  for (int k = 0; k <= 19; k++) {
    uint64_t p = 1;
    for (int e = 0; e < k; e++) p *= 10;
    const uint64_t around[] = {p - 1, p, p + 1};
    for (int a = 0; a < 3; a++) {
      for (int neg = 0; neg < 2; neg++) {
        uint64_t u = around[a];
        if (u > (uint64_t)INT64_MAX) u = (uint64_t)INT64_MAX - (uint64_t)a; /* k = 19 */
        int64_t i = neg ? -(int64_t)u : (int64_t)u;
        wm_buf want, got;
        wm_buf_init(&want);
        wm_buf_init(&got);
        wm_buf_add_int(&want, i);
        wm_value v = wm_int(i);
        wm_jsonw_value(&w, &got, &v, 1, NULL, NULL);
        CHECK_STR(got.data, want.data);
        wm_buf_free(&want);
        wm_buf_free(&got);
      }
    }
  }

  /* field names that need escapes, sort before one another, are empty or not ASCII */
  const char *names[] = {"vc", "a\"q", "", "\xc3\xa9t\xc3\xa9", "\x01x", "z\\", "id",
                         "a_longer_field_name_of_more_than_sixteen_bytes"};
  const uint32_t nf = sizeof names / sizeof names[0];
  wm_schema *sc = wm_schema_new(nf, names, NULL);
  CHECK(sc != NULL);
  if (!sc) return;
  /* every awkward value, top level and in every field, the other fields nil or not */
  for (int i = 0;; i++) {
    wm_str *owned = NULL;
    wm_value v = awkward(i, &owned);
    if (v.type == 0xff) break;
    char what[64];
    snprintf(what, sizeof what, "value %d", i);
    same_bytes(&w, &v, what);
    for (uint32_t f = 0; f < nf; f++) {
      wm_row *r = wm_row_new(sc);
      CHECK(r != NULL);
      if (!r) break;
      r->fields[f] = v;
      if (owned) owned->refs++;
      wm_value rv = wm_row_value(r);
      snprintf(what, sizeof what, "value %d alone in field %u", i, f);
      same_bytes(&w, &rv, what);
      for (uint32_t g = 0; g < nf; g++)
        if (g != f) r->fields[g] = wm_int((int64_t)g - 3);
      snprintf(what, sizeof what, "value %d in field %u of a full row", i, f);
      same_bytes(&w, &rv, what);
      wm_value_release(NULL, &rv);
    }
    wm_value_release(NULL, &v);
  }
  /* a row of nils only, a nested row, a composite key in a row */
  wm_row *r = wm_row_new(sc);
  wm_row *inner = wm_row_new(sc);
  CHECK(r && inner);
  if (!r || !inner) return;
  wm_value rv = wm_row_value(r);
  same_bytes(&w, &rv, "all nil");
  wm_buf b;
  wm_buf_init(&b);
  wm_jsonw_value(&w, &b, &rv, 0, NULL, NULL);
  CHECK_STR(b.data, "{}");
  inner->fields[6] = wm_cstr("k1", 2);
  inner->fields[0] = wm_float(-0.0);
  r->fields[2] = wm_row_value(inner);
  wm_value parts[2] = {wm_cstr("x\"", 2), wm_int(-7)};
  CHECK_I64(wm_key_compose(parts, 2, &r->fields[7]), 0);
  r->fields[1] = wm_float(NAN);
  same_bytes(&w, &rv, "nested row and composite key");
  /* written out by hand as well: the bytes `print` has always given */
  wm_buf_clear(&b);
  wm_jsonw_value(&w, &b, &rv, 0, NULL, NULL);
  CHECK_STR(b.data, "{\"\":{\"id\":\"k1\",\"vc\":-0.0},\"a\\\"q\":null,"
                    "\"a_longer_field_name_of_more_than_sixteen_bytes\":[\"x\\\"\",-7]}");
  wm_value_release(NULL, &rv);
  /* more schemas than the writer keeps prepared: each row still written right */
  wm_schema *more[WM_JSONW_SCHEMAS + 2];
  for (int round = 0; round < 3; round++) {
    for (int s = 0; s < WM_JSONW_SCHEMAS + 2; s++) {
      const char *two[] = {s % 2 ? "b" : "a", "n\n"};
      if (round == 0) more[s] = wm_schema_new(2, two, NULL);
      CHECK(more[s] != NULL);
      if (!more[s]) return;
      wm_row *t = wm_row_new(more[s]);
      CHECK(t != NULL);
      if (!t) return;
      t->fields[0] = wm_int(s);
      t->fields[1] = wm_cstr("v", 1);
      wm_value tv = wm_row_value(t);
      same_bytes(&w, &tv, "one of many schemas");
      wm_buf_clear(&b);
      wm_jsonw_value(&w, &b, &tv, 1, NULL, NULL);
      char want[64];
      snprintf(want, sizeof want, "{\"%s\":%d,\"n\\n\":\"v\"}", s % 2 ? "b" : "a", s);
      CHECK_STR(b.data, want);
      wm_value_release(NULL, &tv);
    }
  }
  for (int s = 0; s < WM_JSONW_SCHEMAS + 2; s++) wm_schema_release(more[s]);
  wm_buf_free(&b);
  wm_jsonw_free(&w); /* releases the schemas it still holds: ASan sees a leak otherwise */
  wm_schema_release(sc);
}
