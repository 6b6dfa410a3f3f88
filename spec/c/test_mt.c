/* The multi-core executor's building blocks: the SPSC queue and the record encoding. */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

#include "base/wm_codec.h"
#include "base/wm_spsc.h"
#include "test.h"

static void test_spsc_basic(void) {
  wm_spsc *q = wm_spsc_new(3);
  CHECK(q != NULL);
  CHECK_I64(wm_spsc_capacity(q), 4); /* rounded up to a power of two */
  CHECK(wm_spsc_pop(q) == NULL);
  int v[10];
  /* wrap around the ring several times, in FIFO order */
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 4; i++) CHECK(wm_spsc_push(q, &v[i]));
    CHECK(!wm_spsc_push(q, &v[4])); /* full: the push fails, never blocks */
    CHECK_I64(wm_spsc_size(q), 4);
    CHECK(wm_spsc_pop(q) == &v[0]);
    CHECK(wm_spsc_push(q, &v[4])); /* room again */
    for (int i = 1; i <= 4; i++) CHECK(wm_spsc_pop(q) == &v[i]);
    CHECK(wm_spsc_pop(q) == NULL);
  }
  wm_spsc_consumed(q, 10);
  CHECK_I64(atomic_load(&q->popped_bytes), 10);
  wm_spsc_free(q);
}

#define STRESS_N 1000000

typedef struct stress {
  wm_spsc *q;
  int full; /* times the producer found the ring full */
} stress;

static void producer(void *arg) {
  stress *s = arg;
  for (uintptr_t i = 1; i <= STRESS_N; i++)
    while (!wm_spsc_push(s->q, (void *)i)) {
      s->full++;
      sched_yield();
    }
}

/* A million items through a small ring between two threads: every item arrives once, in
 * order (run it under -fsanitize=thread to check the memory ordering). */
static void test_spsc_threads(void) {
  stress s = {.q = wm_spsc_new(64)};
  uv_thread_t t;
  CHECK_I64(uv_thread_create(&t, producer, &s), 0);
  uintptr_t expect = 1, bad = 0;
  while (expect <= STRESS_N) {
    void *p = wm_spsc_pop(s.q);
    if (!p) {
      sched_yield();
      continue;
    }
    if ((uintptr_t)p != expect) bad++;
    expect++;
  }
  uv_thread_join(&t);
  CHECK_I64(bad, 0);
  CHECK(wm_spsc_pop(s.q) == NULL);
  wm_spsc_free(s.q);
}

static int same(const wm_value *a, const wm_value *b) {
  if (a->type == WM_CSTR || a->type == WM_STR) {
    if (b->type != WM_CSTR && b->type != WM_STR) return 0;
    size_t n1, n2;
    const char *s1 = wm_value_str(a, &n1), *s2 = wm_value_str(b, &n2);
    return n1 == n2 && memcmp(s1, s2, n1) == 0 && (a->flags & WM_VF_COMPOSITE) == (b->flags & WM_VF_COMPOSITE);
  }
  if (a->type != b->type) return 0;
  switch (a->type) {
  case WM_NIL: return 1;
  case WM_BOOL: return a->u.b == b->u.b;
  case WM_INT: return a->u.i == b->u.i;
  case WM_FLOAT: return memcmp(&a->u.f, &b->u.f, 8) == 0;
  case WM_ROW: {
    const wm_row *r1 = a->u.row, *r2 = b->u.row;
    if (r1->schema->nfields != r2->schema->nfields) return 0;
    for (uint32_t i = 0; i < r1->schema->nfields; i++)
      if (strcmp(r1->schema->names[i], r2->schema->names[i]) != 0 ||
          r1->schema->types[i] != r2->schema->types[i] || !same(&r1->fields[i], &r2->fields[i]))
        return 0;
    return 1;
  }
  default: return 0;
  }
}

/* Encodes v, decodes it, compares; returns the encoded size (or -1). */
static long roundtrip(wm_encoder *e, wm_decoder *d, const wm_value *v) {
  wm_buf b;
  wm_buf_init(&b);
  wm_error err;
  long n = -1;
  if (wm_encode_value(e, NULL, &b, v, &err) == 0) {
    const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
    wm_value out;
    if (wm_decode_value(d, NULL, NULL, &p, end, &out, &err) == 0) {
      if (p == end && same(v, &out)) n = (long)b.len;
      wm_value_release(NULL, &out);
    }
  }
  wm_buf_free(&b);
  return n;
}

static void test_codec(void) {
  wm_encoder e;
  wm_decoder d;
  wm_encoder_init(&e);
  wm_decoder_init(&d);
  wm_value scalars[] = {wm_nil(), wm_bool(true), wm_bool(false), wm_int(0), wm_int(-1), wm_int(63),
                        wm_int(INT64_MAX), wm_int(INT64_MIN), wm_float(0.5), wm_float(-0.0),
                        wm_float(INFINITY), wm_float(1e300), wm_cstr("", 0), wm_cstr("a\0b", 3)};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    CHECK(roundtrip(&e, &d, &scalars[i]) > 0);
  CHECK_I64(roundtrip(&e, &d, &scalars[4]), 2); /* small integers: tag + one byte */
  /* a composite key keeps its flag */
  wm_value parts[2] = {wm_cstr("k", 1), wm_int(7)}, key;
  CHECK_I64(wm_key_compose(parts, 2, &key), 0);
  CHECK(roundtrip(&e, &d, &key) > 0);
  wm_value_release(NULL, &key);
  /* rows: the schema goes once, later rows name it by id */
  const char *names[3] = {"id", "ts", "vc"};
  uint8_t types[3] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER};
  wm_schema *s = wm_schema_new(3, names, types);
  wm_row *r = wm_row_new(s);
  wm_str *id = wm_str_new("k000042", 7);
  r->fields[0].type = WM_STR;
  r->fields[0].u.s = id;
  r->fields[1] = wm_int(1700000000123);
  r->fields[2] = wm_float(57.5);
  wm_value row = wm_row_value(r);
  long first = roundtrip(&e, &d, &row), second = roundtrip(&e, &d, &row);
  CHECK(first > 0 && second > 0);
  CHECK(second < first - 10); /* no names the second time */
  /* a schema freed and another allocated: still decoded with the right names */
  wm_value_release(NULL, &row);
  wm_schema_release(s);
  const char *names2[1] = {"other"};
  wm_schema *s2 = wm_schema_new(1, names2, NULL);
  wm_row *r2 = wm_row_new(s2);
  r2->fields[0] = wm_bool(true);
  wm_value row2 = wm_row_value(r2);
  CHECK(roundtrip(&e, &d, &row2) > 0);
  /* every truncation of an encoding is an error, never a crash or a read past the end */
  wm_encoder e2;
  wm_decoder d2;
  wm_encoder_init(&e2);
  wm_buf b;
  wm_buf_init(&b);
  wm_error err;
  CHECK_I64(wm_encode_value(&e2, NULL, &b, &row2, &err), 0);
  int bad = 0;
  for (size_t cut = 0; cut < b.len; cut++) {
    wm_decoder_init(&d2);
    const uint8_t *p = (const uint8_t *)b.data;
    wm_value out;
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, b.data, cut);
    p = copy;
    if (wm_decode_value(&d2, NULL, NULL, &p, copy + cut, &out, &err) == 0) {
      bad++;
      wm_value_release(NULL, &out);
    }
    free(copy);
    wm_decoder_free(&d2);
  }
  CHECK_I64(bad, 0);
  /* a row that names a schema the decoder never saw; an unknown tag */
  wm_decoder_init(&d2);
  const uint8_t undefined[] = {WM_C_ROW, 5}, unknown[] = {200};
  const uint8_t *p = undefined;
  wm_value out;
  CHECK_I64(wm_decode_value(&d2, NULL, NULL, &p, undefined + 2, &out, &err), -1);
  CHECK(strstr(err.msg, "undefined schema") != NULL);
  p = unknown;
  CHECK_I64(wm_decode_value(&d2, NULL, NULL, &p, unknown + 1, &out, &err), -1);
  CHECK(strstr(err.msg, "tag 200") != NULL);
  /* a composite key whose part runs past its bytes (found by fuzz_codec: wm_key_part read
   * past the end when the key was printed) */
  const uint8_t badkey[] = {WM_C_KEY, 3, 's', 9, 0};
  p = badkey;
  CHECK_I64(wm_decode_value(&d2, NULL, NULL, &p, badkey + sizeof badkey, &out, &err), -1);
  CHECK(strstr(err.msg, "composite key") != NULL);
  /* a host value without host hooks is an error, not a crash */
  wm_value slot = {.type = WM_SLOT};
  wm_buf_clear(&b);
  CHECK_I64(wm_encode_value(&e2, NULL, &b, &slot, &err), -1);
  wm_decoder_free(&d2);
  wm_buf_free(&b);
  wm_encoder_free(&e2);
  wm_value_release(NULL, &row2);
  wm_schema_release(s2);
  wm_encoder_free(&e);
  wm_decoder_free(&d);
}

/* Encodes a row {id = str, v = i} into b (cleared first). */
static void enc_row(wm_encoder *e, wm_schema *s, wm_buf *b, const char *str, int64_t i) {
  wm_row *r = wm_row_new(s);
  r->fields[0] = wm_cstr(str, strlen(str));
  wm_value_retain(NULL, &r->fields[0]);
  r->fields[1] = wm_int(i);
  wm_value v = wm_row_value(r);
  wm_error err;
  wm_buf_clear(b);
  CHECK_I64(wm_encode_value(e, NULL, b, &v, &err), 0);
  wm_value_release(NULL, &v);
}

static int dec(wm_decoder *d, const wm_buf *b, wm_value *out) {
  const uint8_t *p = (const uint8_t *)b->data;
  wm_error err;
  return wm_decode_value(d, NULL, NULL, &p, p + b->len, out, &err);
}

/* The decoder decodes a row into the last one of its schema when nobody holds that one any
 * more (and its string in place when it fits), never into a row or a string that someone
 * still holds. */
static void test_codec_reuse(void) {
  wm_encoder e;
  wm_decoder d;
  wm_encoder_init(&e);
  wm_decoder_init(&d);
  const char *names[2] = {"id", "v"};
  wm_schema *s = wm_schema_new(2, names, NULL);
  wm_buf b;
  wm_buf_init(&b);
  wm_value a, c, x;
  enc_row(&e, s, &b, "abcdef", 1);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK_I64(a.u.row->refs, 2); /* the caller's and the decoder's */
  wm_row *ra = a.u.row;
  wm_str *sa = ra->fields[0].u.s;
  wm_value_release(NULL, &a); /* nobody holds it: the next row goes into it */
  enc_row(&e, s, &b, "xyz", 2);
  CHECK_I64(dec(&d, &b, &c), 0);
  CHECK(c.u.row == ra && c.u.row->fields[0].u.s == sa);
  CHECK_STR(c.u.row->fields[0].u.s->data, "xyz");
  CHECK_I64((int64_t)c.u.row->fields[0].u.s->len, 3);
  CHECK_I64(c.u.row->fields[1].u.i, 2);
  /* held (a window keeps the record): the next one is a new row, this one unchanged */
  enc_row(&e, s, &b, "held?", 3);
  CHECK_I64(dec(&d, &b, &x), 0);
  CHECK(x.u.row != c.u.row);
  CHECK_STR(c.u.row->fields[0].u.s->data, "xyz");
  CHECK_I64(c.u.row->fields[1].u.i, 2);
  CHECK_STR(x.u.row->fields[0].u.s->data, "held?");
  wm_value_release(NULL, &c);
  /* the new row is kept now; its string held elsewhere (a key) is not written over */
  wm_value key = x.u.row->fields[0];
  wm_value_retain(NULL, &key);
  wm_row *rx = x.u.row;
  wm_value_release(NULL, &x);
  enc_row(&e, s, &b, "ab", 4);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK(a.u.row == rx && a.u.row->fields[0].u.s != key.u.s);
  CHECK_STR(key.u.s->data, "held?");
  CHECK_STR(a.u.row->fields[0].u.s->data, "ab");
  wm_value_release(NULL, &key);
  wm_value_release(NULL, &a);
  /* a longer string than the one in place: a new string, the right bytes */
  enc_row(&e, s, &b, "a much longer string than before", 5);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK(a.u.row == rx);
  CHECK_STR(a.u.row->fields[0].u.s->data, "a much longer string than before");
  CHECK_I64(a.u.row->fields[1].u.i, 5);
  wm_value_release(NULL, &a);
  /* then a short one goes into that string */
  enc_row(&e, s, &b, "q", 6);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK_STR(a.u.row->fields[0].u.s->data, "q");
  CHECK_I64((int64_t)a.u.row->fields[0].u.s->len, 1);
  wm_value_release(NULL, &a);
  wm_buf_free(&b);
  wm_schema_release(s);
  wm_encoder_free(&e);
  wm_decoder_free(&d); /* releases the kept row (ASan: nothing leaks) */
}

void test_mt(void) {
  test_spsc_basic();
  test_spsc_threads();
  test_codec();
  test_codec_reuse();
}
