/* Parsing lines into records in C: the parse operator (parse_csv, parse_json) and the
 * CSV decoder that turns a line into a typed C row (wm_row) with no Lua call.
 *
 * The parse operator takes lines (string records), asks its decoder for a record and
 * emits it with the line's timestamp. A malformed line is handled by the operator's
 * on_error mode:
 *   - WM_PARSE_FAIL: the job stops with "data.csv:17: field 'ts': 'abc' is not an integer"
 *     (the position of the line comes from the line source that is emitting it);
 *   - WM_PARSE_SKIP: the line is dropped and counted in op->m.parse_errors;
 *   - WM_PARSE_SIDE: a row {error = "...", line = n, text = "..."} goes to the side output
 *     "parse_errors" (and is counted too).
 */
#ifndef WM_CSV_H
#define WM_CSV_H

#include "graph/wm_graph.h"

enum { WM_PARSE_FAIL = 0, WM_PARSE_SKIP = 1, WM_PARSE_SIDE = 2 };

/* The side-output tag of malformed lines. */
#define WM_PARSE_ERRORS_TAG "parse_errors"

/* A decoder: turns one line into a record. */
typedef struct wm_decoder {
  /* Decodes line s (n bytes, borrowed for the call) into *out, which the caller releases.
   * Returns 0; 1 when the line is malformed (err filled, base/wm_error.h: a message without
   * position, e.g. "field 'ts': 'abc' is not an integer"; not the context's, since a
   * malformed line may be skipped or sent to a side output and the job go on); WM_ERR for
   * any other failure (ctx->error). */
  int (*decode)(void *ud, wm_op *op, const char *s, size_t n, wm_value *out, wm_error *err);
  void (*free)(void *ud);
  void *ud;
} wm_decoder;

typedef struct wm_parse_config {
  wm_decoder dec;     /* owned by the operator from now on (even when creation fails) */
  int on_error;       /* WM_PARSE_* */
  int header;         /* skip the first record of each source (the one at line 1 of
                         its position, wm_source.h; the first record at all when no
                         source publishes a position) */
  const char *what;   /* "parse_csv" or "parse_json", for messages */
} wm_parse_config;

/* The parse operator; NULL on failure (message in ctx->error). */
wm_op *wm_parse_new(wm_ctx *ctx, const char *name, wm_parse_config *cfg);

/* One column of a CSV line. */
typedef struct wm_csv_field {
  const char *name;   /* copied */
  uint8_t type;       /* WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER or WM_FT_BOOLEAN */
  uint8_t optional;   /* an empty field is nil instead of an error (strings: "" unless set) */
  uint8_t skip;       /* not decoded (a column no one reads: projection pushdown): the field
                         is always nil in the row and its text is not checked; the line must
                         still have the column (the field count is checked) */
} wm_csv_field;

/* A CSV decoder (RFC 4180 quoting, separator sep) producing rows of the given columns.
 * Rows are reused when no one else holds them, so a steady stream of lines allocates
 * nothing per line. 0, or -1 on allocation failure. */
int wm_decoder_csv(wm_decoder *d, const wm_csv_field *fields, uint32_t n, char sep);

/* Lines whose lookahead hints (wm_op_vt.ahead) the operator after the parse used (tests). */
uint64_t wm_parse_lookahead_hints(const wm_op *op);

#endif
