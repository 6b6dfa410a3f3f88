#include <stdlib.h>

#include "base/wm_buf.h"
#include "base/wm_codec.h"
#include "base/wm_value.h"
#include "test.h"

/* The inline append and varint paths (wm_buf.h, wm_codec.h) at their edges: an append
 * that exactly fills the buffer, one that must grow it, and LEB128 bytes as the format
 * defines them (7 bits per byte, low group first, high bit = more follows). */
static void test_buf_varint_edges(void) {
  wm_buf b;
  wm_buf_init(&b);
  wm_buf_add(&b, "", 0); /* an empty append on an empty buffer makes it a "" */
  CHECK(b.data != NULL && b.len == 0 && b.data[0] == '\0');
  CHECK(wm_buf_reserve(&b, 0) == 0);
  size_t cap = b.cap;
  while (b.len + 2 <= cap) wm_buf_addc(&b, 'x'); /* fills it: len = cap - 1, then the NUL */
  CHECK_I64((int64_t)b.cap, (int64_t)cap);
  CHECK_I64((int64_t)b.len, (int64_t)cap - 1);
  wm_buf_addc(&b, 'y'); /* must grow */
  CHECK(b.cap > cap && b.len == cap && b.data[cap - 1] == 'y' && b.data[cap] == '\0');
  wm_buf_clear(&b);
  wm_buf_add(&b, "abc", 3);
  wm_buf_add(&b, "de", 2);
  CHECK_STR(b.data, "abcde");
  wm_buf_clear(&b);
  static const struct {
    uint64_t v;
    const char *bytes;
    size_t n;
  } cases[] = {
      {0, "\x00", 1},
      {0x7f, "\x7f", 1},
      {0x80, "\x80\x01", 2},
      {300, "\xac\x02", 2},
      {0x3fff, "\xff\x7f", 2},
      {0x4000, "\x80\x80\x01", 3},
      {UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    wm_buf_clear(&b);
    wm_codec_put_uvar(&b, cases[i].v);
    CHECK_I64((int64_t)b.len, (int64_t)cases[i].n);
    CHECK(memcmp(b.data, cases[i].bytes, cases[i].n) == 0 && b.data[b.len] == '\0');
    const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
    uint64_t got = 1;
    CHECK(wm_codec_get_uvar(&p, end, &got) == 0 && got == cases[i].v && p == end);
    /* cut short: one byte fewer is an error, and so is nothing */
    p = (const uint8_t *)b.data;
    CHECK(wm_codec_get_uvar(&p, end - 1, &got) == -1);
  }
  /* zigzag: -1 -> 1, 1 -> 2, INT64_MIN -> UINT64_MAX */
  wm_buf_clear(&b);
  wm_codec_put_ivar(&b, -1);
  wm_codec_put_ivar(&b, 1);
  wm_codec_put_ivar(&b, INT64_MIN);
  CHECK(b.len == 12 && b.data[0] == 1 && b.data[1] == 2);
  const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
  int64_t a = 0, c = 0, m = 0;
  CHECK(wm_codec_get_ivar(&p, end, &a) == 0 && wm_codec_get_ivar(&p, end, &c) == 0 &&
        wm_codec_get_ivar(&p, end, &m) == 0);
  CHECK(a == -1 && c == 1 && m == INT64_MIN && p == end);
  /* a varint written into a buffer with less than 10 bytes of room grows it */
  wm_buf_free(&b);
  wm_buf_init(&b);
  CHECK(wm_buf_reserve(&b, 0) == 0);
  while (b.len + 3 < b.cap) wm_buf_addc(&b, 'x');
  size_t before = b.len;
  wm_codec_put_uvar(&b, UINT64_MAX);
  CHECK(b.len == before + 10 && !b.oom && (uint8_t)b.data[before + 9] == 1);
  wm_buf_free(&b);
}

void test_value(void) {
  test_buf_varint_edges();
  /* keys: integers and integral floats are equal and hash alike; strings by bytes */
  wm_value a = wm_int(3), b = wm_float(3.0), c = wm_float(3.5), s1 = wm_cstr("ab", 2);
  wm_value s2 = s1;
  CHECK(wm_key_equal(&a, &b));
  CHECK(wm_key_hash(&a) == wm_key_hash(&b));
  CHECK(!wm_key_equal(&a, &c));
  CHECK_I64(wm_value_retain(NULL, &s2), 0); /* owned copy */
  CHECK(s2.type == WM_STR && s2.u.s->refs == 1);
  CHECK(wm_key_equal(&s1, &s2));
  CHECK(wm_key_hash(&s1) == wm_key_hash(&s2));
  CHECK(!wm_key_valid(&(wm_value){0}));
  wm_value nan = wm_float(0.0 / 0.0);
  CHECK(!wm_key_valid(&nan));
  /* composite keys round-trip and differ from their parts */
  wm_value parts[3] = {wm_cstr("x", 1), wm_int(-7), wm_bool(true)}, k, p;
  CHECK_I64(wm_key_compose(parts, 3, &k), 0);
  CHECK_I64(wm_key_part(&k, 1, &p), 3);
  CHECK(p.type == WM_INT && p.u.i == -7);
  CHECK(!wm_key_equal(&k, &parts[0]));
  wm_buf b1;
  wm_buf_init(&b1);
  wm_format_value(&b1, &k, 0, NULL, NULL);
  CHECK_STR(b1.data, "[\"x\",-7,true]");
  /* floats print as Lua's tostring; strings in JSON are escaped */
  wm_buf_clear(&b1);
  wm_value f = wm_float(2.0), g = wm_float(0.1), q = wm_cstr("a\"b\n\x01", 5);
  wm_format_value(&b1, &f, 0, NULL, NULL);
  wm_buf_addc(&b1, ' ');
  wm_format_value(&b1, &g, 0, NULL, NULL);
  wm_buf_addc(&b1, ' ');
  wm_format_value(&b1, &q, 1, NULL, NULL);
  CHECK_STR(b1.data, "2.0 0.1 \"a\\\"b\\n\\u0001\"");
  /* rows print as JSON with sorted keys, nil fields left out */
  static const char *const names[] = {"vc", "id", "ts", "none"};
  wm_schema *sc = wm_schema_new(4, names, NULL);
  wm_row *r = wm_row_new(sc);
  r->fields[0] = wm_int(3);
  r->fields[1] = wm_cstr("ws_001", 6);
  wm_value_retain(NULL, &r->fields[1]);
  r->fields[2] = wm_int(1577844001);
  wm_buf_clear(&b1);
  wm_value rv = wm_row_value(r);
  wm_format_value(&b1, &rv, 0, NULL, NULL);
  CHECK_STR(b1.data, "{\"id\":\"ws_001\",\"ts\":1577844001,\"vc\":3}");
  /* field access and with_field on rows, in C */
  wm_field fld = {.name = "vc", .index = -1};
  wm_value got, out;
  wm_error err;
  CHECK_I64(wm_field_get(NULL, &fld, &rv, &got, &err), 0);
  CHECK_I64(got.u.i, 3);
  wm_value nine = wm_int(9);
  CHECK_I64(wm_field_with(NULL, &fld, &rv, &nine, &out, &err), 0);
  CHECK_I64(out.u.row->fields[0].u.i, 9);
  CHECK_I64(r->fields[0].u.i, 3); /* the original is unchanged */
  wm_value_release(NULL, &out);
  wm_value_release(NULL, &rv);
  wm_schema_release(sc);
  wm_value_release(NULL, &k);
  wm_value_release(NULL, &s2);
  wm_buf_free(&b1);
}
