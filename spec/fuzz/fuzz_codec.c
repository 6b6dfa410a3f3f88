/* libFuzzer target: the value codec's decoder (core/base/wm_codec.c), the format of the
 * bytes between threads and of checkpoint files to come: untrusted input.
 * Input: a stream of encoded values, decoded one after the other with one decoder (schemas
 * defined earlier in the stream stay known). Invariants: decoding never reads past the
 * input and stops with a message at the first corrupt value; every value decoded encodes
 * again and decodes to a value that prints the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/wm_buf.h"
#include "base/wm_codec.h"

static void show(wm_buf *b, const wm_value *v) {
  wm_buf_clear(b);
  wm_format_value(b, v, 0, NULL, NULL);
  wm_buf_addc(b, '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a copy of exactly `size` bytes, so that ASan sees any read past the end */
  uint8_t *copy = malloc(size ? size : 1);
  ASSERT(copy);
  memcpy(copy, data, size);
  wm_decoder d;
  wm_decoder_init(&d);
  const uint8_t *p = copy, *end = copy + size;
  wm_error err;
  wm_buf a, b, enc;
  wm_buf_init(&a);
  wm_buf_init(&b);
  wm_buf_init(&enc);
  while (p < end) {
    wm_value v;
    wm_error_clear(&err);
    const uint8_t *before = p;
    if (wm_decode_value(&d, NULL, NULL, &p, end, &v, &err) != 0) {
      ASSERT(err.msg[0] != '\0');
      break;
    }
    ASSERT(p > before && p <= end);
    /* round trip through a fresh encoder and decoder */
    wm_encoder e;
    wm_encoder_init(&e);
    wm_buf_clear(&enc);
    ASSERT(wm_encode_value(&e, NULL, &enc, &v, &err) == 0);
    wm_decoder d2;
    wm_decoder_init(&d2);
    const uint8_t *q = (const uint8_t *)enc.data, *qend = q + enc.len;
    wm_value w;
    ASSERT(wm_decode_value(&d2, NULL, NULL, &q, qend, &w, &err) == 0);
    ASSERT(q == qend);
    show(&a, &v);
    show(&b, &w);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
      fprintf(stderr, "fuzz_codec: round trip changed %s into %s\n", a.data, b.data);
      abort();
    }
    wm_value_release(NULL, &w);
    wm_value_release(NULL, &v);
    wm_decoder_free(&d2);
    wm_encoder_free(&e);
  }
  wm_buf_free(&a);
  wm_buf_free(&b);
  wm_buf_free(&enc);
  wm_decoder_free(&d);
  free(copy);
  return 0;
}
