/* A JSON writer that prepares each row schema once: the field order and the escaped
 * `"name":` prefixes are built the first time a schema is seen, and then every row of that
 * schema is written straight into the output buffer, its integers and plain strings without
 * a per-field call into the generic formatter. The bytes are wm_format_value's, always. */
#ifndef WM_JSONW_H
#define WM_JSONW_H

#include "base/wm_buf.h"

#define WM_JSONW_SCHEMAS 4 /* schemas prepared at a time (a sink rarely sees more than one) */

typedef struct wm_jsonw_prep {
  wm_schema *schema; /* referenced while prepared */
  uint32_t *off;     /* nfields + 1 offsets into keys, one per field in sorted order */
  char *keys;        /* `,"name":` for each field in sorted order, escaped, then padding */
} wm_jsonw_prep;

typedef struct wm_jsonw {
  wm_jsonw_prep prep[WM_JSONW_SCHEMAS];
  unsigned n, next; /* prepared schemas; the slot replaced next when all are taken */
} wm_jsonw;

void wm_jsonw_init(wm_jsonw *w);
/* Releases the prepared schemas. */
void wm_jsonw_free(wm_jsonw *w);

/* Appends v exactly as wm_format_value(b, v, json, slot_fn, ud) would. A schema that cannot
 * be prepared (out of memory) is written by the generic formatter instead. The writer keeps a
 * reference to every schema it prepared until wm_jsonw_free, so it must run on the thread that
 * owns the rows (as every operator does). */
void wm_jsonw_value(wm_jsonw *w, wm_buf *b, const wm_value *v, int json,
                    wm_format_slot_fn slot_fn, void *ud);

#endif
