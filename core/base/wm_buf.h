/* A growable byte buffer, and the record formatter used by print, write_lines and errors. */
#ifndef WM_BUF_H
#define WM_BUF_H

#include <stddef.h>
#include <stdint.h>

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
/* Makes room for n more bytes; 0 or -1. */
int wm_buf_reserve(wm_buf *b, size_t n);
void wm_buf_add(wm_buf *b, const char *s, size_t n);
void wm_buf_adds(wm_buf *b, const char *s);
void wm_buf_addc(wm_buf *b, char c);
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
