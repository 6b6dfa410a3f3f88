/* libFuzzer target: the parse operator with the CSV decoder (core/io/wm_csv.c), every column
 * type, optional and skipped (projection pushdown) columns, the separators, header and the three
 * on_error modes.
 *
 * Input: byte 0 the number of columns (1..8) and the on_error mode, byte 1 the separator and
 * the header flag, then one byte per column (type, optional, skipped), then lines separated by '\n'.
 * Invariants: a decoded row has the declared number of fields and each field has its
 * column's type (or nil when optional or skipped); every line is a row, a parse error or the header;
 * a failing line gives a message with "line N:". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph/wm_graph.h"
#include "io/wm_csv.h"
#include "time/wm_time.h"

typedef struct sink {
  uint32_t n;
  const uint8_t *types, *optional, *skip;
  uint64_t rows, errors;
} sink;

static int sink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  sink *s = op->impl;
  (void)chan;
  (void)ts;
  ASSERT(rec->type == WM_ROW);
  const wm_row *r = rec->u.row;
  if (s->types == NULL) { /* the parse_errors port: {error, line, text} */
    ASSERT(r->schema->nfields == 3 && wm_value_is_string(&r->fields[0]) && r->fields[1].type == WM_INT);
    s->errors++;
    return WM_OK;
  }
  ASSERT(r->schema->nfields == s->n);
  for (uint32_t i = 0; i < s->n; i++) {
    const wm_value *f = &r->fields[i];
    if (f->type == WM_NIL) {
      ASSERT(s->optional[i] || s->skip[i]);
      continue;
    }
    switch (s->types[i]) {
    case WM_FT_STRING: ASSERT(wm_value_is_string(f)); break;
    case WM_FT_INTEGER: ASSERT(f->type == WM_INT); break;
    case WM_FT_NUMBER: ASSERT(f->type == WM_INT || f->type == WM_FLOAT); break;
    case WM_FT_BOOLEAN: ASSERT(f->type == WM_BOOL); break;
    }
  }
  s->rows++;
  return WM_OK;
}

static const wm_op_vt sink_vt = {.kind = "sink", .record = sink_record};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char seps[] = {',', ';', '\t', '|', ' ', '"', 'a', '\0'};
  static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  if (size < 2) return 0;
  uint32_t n = (uint32_t)(data[0] & 7) + 1;
  int on_error = (data[0] >> 3) % 3;
  char sep = seps[data[1] & 7];
  int header = (data[1] >> 3) & 1;
  if (size < 2 + n) return 0;
  wm_csv_field fields[8];
  uint8_t types[8], optional[8], skip[8];
  for (uint32_t i = 0; i < n; i++) {
    types[i] = (uint8_t)(data[2 + i] & 3);
    optional[i] = (uint8_t)((data[2 + i] >> 2) & 1);
    skip[i] = (uint8_t)((data[2 + i] >> 3) & 1);
    fields[i].name = names[i];
    fields[i].type = types[i];
    fields[i].optional = optional[i];
    fields[i].skip = skip[i];
  }
  const uint8_t *p = data + 2 + n, *end = data + size;

  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_parse_config cfg = {0};
  ASSERT(wm_decoder_csv(&cfg.dec, fields, n, sep) == 0);
  cfg.on_error = on_error;
  cfg.header = header;
  cfg.what = "parse_csv";
  wm_op *parse = wm_parse_new(&ctx, "parse_csv", &cfg);
  ASSERT(parse);
  sink main = {.n = n, .types = types, .optional = optional, .skip = skip}, side = {0};
  wm_op *out = wm_op_new(&ctx, &sink_vt, &main, "out");
  ASSERT(out && wm_op_connect(parse, 0, out) >= 0);
  if (on_error == WM_PARSE_SIDE) {
    wm_op *errs = wm_op_new(&ctx, &sink_vt, &side, "errors");
    ASSERT(errs && wm_op_connect(parse, wm_op_port(parse, WM_PARSE_ERRORS_TAG), errs) >= 0);
  }
  ASSERT(wm_ctx_prepare(&ctx) == WM_OK);
  uint64_t lines = 0;
  int failed = 0;
  while (p < end) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    /* the line as the line sources give it: a string of its own (no bytes past it) */
    char *line = malloc(len ? len : 1);
    ASSERT(line);
    memcpy(line, p, len);
    wm_value v = wm_cstr(line, len);
    lines++;
    int rc = wm_op_input_record(parse, 0, &v, (int64_t)lines);
    free(line);
    if (rc != WM_OK) {
      ASSERT(on_error == WM_PARSE_FAIL);
      ASSERT(strncmp(wm_ctx_errtext(&ctx), "line ", 5) == 0 &&
             strstr(wm_ctx_errtext(&ctx), " in parse_csv 'parse_csv'"));
      failed = 1;
      break;
    }
    p = nl ? nl + 1 : end;
  }
  if (!failed) {
    uint64_t skipped = header && lines > 0 ? 1 : 0;
    ASSERT(main.rows + parse->m.parse_errors + skipped == lines);
    if (on_error == WM_PARSE_SIDE) ASSERT(side.errors == parse->m.parse_errors);
  }
  wm_ctx_free(&ctx);
  return 0;
}
