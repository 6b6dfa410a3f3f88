/* The source interface's shared parts (see wm_source.h). */
#include "io/wm_source.h"

#include <stdio.h>

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
  /* kept once (the innermost); none when the message starts with it (wm_error_pos_shown) */
  if (b.data) wm_error_set_pos(&ctx->error, b.data);
  wm_buf_free(&b);
}
