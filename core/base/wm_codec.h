/* A compact binary encoding of record values, for records that cross threads.
 *
 * A value is a tag byte and its payload:
 *   NIL, FALSE, TRUE                      no payload
 *   INT    zigzag varint                  FLOAT  8 bytes (native order: same process)
 *   STR    varint length, bytes           KEY    the same, for a composite key
 *   TABLE  (key, value)* then NIL         a host (Lua) table, written by the host hooks
 *   ROWDEF varint id, varint n, n x (type byte, varint length, name), then the n fields
 *   ROW    varint id, then the fields     a row whose schema was defined earlier
 * Schemas are sent once per encoder/decoder pair (a stream in FIFO order) and then named
 * by a small id, so a row costs its field values and two bytes.
 *
 * An encoder and its decoder each belong to one thread; the bytes travel between them. */
#ifndef WM_CODEC_H
#define WM_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_buf.h"
#include "base/wm_error.h"
#include "base/wm_value.h"

enum {
  WM_C_NIL = 0,
  WM_C_FALSE,
  WM_C_TRUE,
  WM_C_INT,
  WM_C_FLOAT,
  WM_C_STR,
  WM_C_KEY,
  WM_C_TABLE,
  WM_C_ROWDEF,
  WM_C_ROW,
};

#define WM_CODEC_SCHEMAS 32

/* Host hooks for WM_SLOT values (Lua tables). */
typedef struct wm_codec_host {
  void *ud;
  /* Appends slot value v (a WM_SLOT) to b. 0, or -1 with the failure in *err (e.g. the
   * record holds a function). */
  int (*encode)(void *ud, wm_buf *b, const wm_value *v, wm_error *err);
  /* Decodes the host value whose tag is at **p (WM_C_TABLE), advancing *p, into an owned
   * value *out. 0, or -1 with the failure in *err. */
  int (*decode)(void *ud, const uint8_t **p, const uint8_t *end, wm_value *out, wm_error *err);
} wm_codec_host;

typedef struct wm_encoder {
  wm_schema *schemas[WM_CODEC_SCHEMAS]; /* referenced */
  int next;                              /* the slot to reuse when all are taken */
} wm_encoder;

typedef struct wm_decoder {
  wm_schema *schemas[WM_CODEC_SCHEMAS]; /* referenced */
  /* per schema id, the last top-level row decoded, when its fields are all scalars; the
   * decoder holds a reference and decodes the next row into it (its strings too, up to
   * cap bytes) when nobody else holds it any more: no allocation per crossing row */
  wm_row *keep[WM_CODEC_SCHEMAS];
  uint32_t *cap[WM_CODEC_SCHEMAS]; /* per field of keep: a string field's capacity */
} wm_decoder;

void wm_encoder_init(wm_encoder *e);
void wm_encoder_free(wm_encoder *e);
void wm_decoder_init(wm_decoder *d);
void wm_decoder_free(wm_decoder *d);

/* Appends v (borrowed) to b. 0, or -1 with the failure in *err (NULL: none wanted). */
int wm_encode_value(wm_encoder *e, const wm_codec_host *ch, wm_buf *b, const wm_value *v,
                    wm_error *err);
/* Decodes one value at *p (advanced past it). *out is owned (release it), except a
 * top-level string, which is a WM_CSTR borrowed from the input bytes. 0, or -1 with a
 * failure in *err (truncated or corrupt input). */
int wm_decode_value(wm_decoder *d, const wm_host *h, const wm_codec_host *ch, const uint8_t **p,
                    const uint8_t *end, wm_value *out, wm_error *err);

/* Varints (LEB128), for the message framing of the executor and the host hooks. Inline:
 * a one-byte varint (most lengths, ids and small numbers) is a compare and a store. */
void wm_codec_put_uvar_long(wm_buf *b, uint64_t v);
static inline void wm_codec_put_uvar(wm_buf *b, uint64_t v) {
  if (v < 0x80) wm_buf_addc(b, (char)v);
  else wm_codec_put_uvar_long(b, v);
}
static inline void wm_codec_put_ivar(wm_buf *b, int64_t v) {
  /* zigzag; the sign mask is built unsigned (>> of a negative int64_t is implementation-defined) */
  wm_codec_put_uvar(b, ((uint64_t)v << 1) ^ (0u - ((uint64_t)v >> 63)));
}
/* 0, or -1 when the input ends inside the varint. */
int wm_codec_get_uvar_long(const uint8_t **p, const uint8_t *end, uint64_t *v);
static inline int wm_codec_get_uvar(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (*p < end && !(**p & 0x80)) {
    *v = *(*p)++;
    return 0;
  }
  return wm_codec_get_uvar_long(p, end, v);
}
static inline int wm_codec_get_ivar(const uint8_t **p, const uint8_t *end, int64_t *v) {
  uint64_t u;
  if (wm_codec_get_uvar(p, end, &u) != 0) return -1;
  *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
  return 0;
}

#endif
