/* The source interface's shared parts (see wm_source.h). */
#include "io/wm_source.h"

#include <stdio.h>
#include <string.h>

int wm_source_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)rec;
  (void)ts;
  return wm_ctx_error(op->ctx, "operator '%s' is a source: it has no inputs", op->name);
}

void wm_pos_format(wm_buf *b, const wm_pos *pos) {
  char n[32];
  snprintf(n, sizeof n, "%llu", (unsigned long long)pos->line);
  if (pos->unit) {
    wm_buf_adds(b, pos->unit);
    wm_buf_addc(b, ' ');
    wm_buf_adds(b, n);
    wm_buf_adds(b, " of ");
    wm_buf_adds(b, pos->origin ? pos->origin : "?");
  } else {
    wm_buf_adds(b, pos->origin ? pos->origin : "?");
    wm_buf_addc(b, ':');
    wm_buf_adds(b, n);
  }
}

void wm_pos_add_context(wm_ctx *ctx, const wm_pos *pos) {
  wm_buf b;
  wm_buf_init(&b);
  wm_pos_format(&b, pos);
  /* parse errors already start with the position ("data.csv:17: field ...") */
  if (b.data && !(strncmp(ctx->err, b.data, b.len) == 0 && ctx->err[b.len] == ':') &&
      !strstr(ctx->err, "\n  while reading "))
    wm_ctx_error_context(ctx, "\n  while reading %s", b.data);
  wm_buf_free(&b);
}
