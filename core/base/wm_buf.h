/* A growable byte buffer, and the record formatter used by print, write_lines and errors. */
#ifndef WM_BUF_H
#define WM_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/wm_value.h"

typedef struct wm_buf {
  char *data; /* owned; NUL-terminated after every append */
  size_t len, cap;
  int oom;    /* set when an append could not grow the buffer (the text is cut) */
} wm_buf;

void wm_buf_init(wm_buf *b);
void wm_buf_free(wm_buf *b);
static inline void wm_buf_clear(wm_buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}
/* The out-of-line halves of the three below: growing the buffer. */
int wm_buf_grow(wm_buf *b, size_t n);
void wm_buf_add_grow(wm_buf *b, const char *s, size_t n);
void wm_buf_addc_grow(wm_buf *b, char c);

/* Makes room for n more bytes; 0 or -1. Inline: when the room is there (the common case,
 * e.g. every message of an exchange batch), an append is a compare and a copy. */
static inline int wm_buf_reserve(wm_buf *b, size_t n) {
  return b->len + n + 1 <= b->cap ? 0 : wm_buf_grow(b, n);
}
static inline void wm_buf_add(wm_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    wm_buf_add_grow(b, s, n);
    return;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}
static inline void wm_buf_addc(wm_buf *b, char c) {
  if (b->len + 2 > b->cap) {
    wm_buf_addc_grow(b, c);
    return;
  }
  b->data[b->len++] = c;
  b->data[b->len] = '\0';
}
void wm_buf_adds(wm_buf *b, const char *s);
void wm_buf_add_int(wm_buf *b, int64_t i);
/* A float as Lua's tostring writes it ("%.14g", with ".0" added to integral values). */
void wm_buf_add_float(wm_buf *b, double f);
/* A JSON string literal with escapes. */
void wm_buf_add_json_string(wm_buf *b, const char *s, size_t n);

/* Host hook to format a WM_SLOT value as `print` would: appends to b. */
typedef void (*wm_format_slot_fn)(void *ud, wm_buf *b, const wm_value *v, int json);

/* Appends v as `print` shows it: a string as is, a number as Lua's tostring, a row as
 * compact JSON with sorted keys; slot values through the host hook. With json != 0,
 * strings are quoted (the form used inside tables and by write_lines). */
void wm_format_value(wm_buf *b, const wm_value *v, int json, wm_format_slot_fn slot_fn,
                     void *ud);

#endif
