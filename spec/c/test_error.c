/* Errors are data (base/wm_error.h): the core sets a failure's parts, never edits or reads
 * its text, and the parts format into the text wmrun has always printed. */
#include "base/wm_error.h"
#include "io/wm_source.h"
#include "test.h"

/* An operator that passes records on, and one that fails every record. */
static int pass_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}
static int fail_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan, (void)rec, (void)ts;
  const char *how = op->impl;
  wm_ctx_error(op->ctx, "%s", how);
  /* the host would add a Lua traceback; a part the core keeps as it is */
  static const char tb[] = "\nstack traceback:\n\t[C]: in ?";
  if (strcmp(how, "traced") == 0) wm_error_set_trace(&op->ctx->error, tb, strlen(tb));
  if (strcmp(how, "data.csv:17: field 'ts': 'x' is not an integer") == 0)
    wm_error_pos_shown(&op->ctx->error);
  return WM_ERR;
}
static const wm_op_vt pass_vt = {.kind = "pass", .record = pass_record};
static const wm_op_vt fail_vt = {.kind = "fail", .record = fail_record};

/* source -> "outer" (passes) -> "inner" (fails with `how`), fed one record from data.csv:17;
 * WM_ERR, the failure in ctx. */
static int run(const char *how, wm_ctx *ctx) {
  wm_ctx_init(ctx);
  wm_op *src = wm_op_new(ctx, &pass_vt, NULL, "source");
  wm_op *outer = wm_op_new(ctx, &pass_vt, NULL, "outer");
  wm_op *inner = wm_op_new(ctx, &fail_vt, (void *)how, "inner");
  wm_op_connect(src, 0, outer);
  wm_op_connect(outer, 0, inner);
  wm_ctx_prepare(ctx);
  wm_pos pos = {.origin = "data.csv", .line = 17};
  wm_value v = wm_int(5);
  return wm_source_emit(src, &pos, &v, 1);
}

void test_error(void) {
  /* 1. the parts format into today's text, in the order they were added, the traceback
   * after them and what was appended after the traceback last (the text of a Lua map's
   * failure, as wmrun printed it before the parts existed: written out by hand) */
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_ctx_error(&ctx, "job.lua:3: attempt to index a nil value (local 'r')");
  wm_error_set_op(&ctx.error, "map (job.lua:3)");
  wm_error_set_record(&ctx.error, "{id=1}");
  static const char tb[] = "\nstack traceback:\n\tjob.lua:3: in function";
  wm_error_set_trace(&ctx.error, tb, strlen(tb));
  wm_ctx_error_append(&ctx, "\n  in on_timer(5) (event time)");
  wm_error_set_pos(&ctx.error, "data.csv:2");
  wm_ctx_error_context(&ctx, "\n  while taking checkpoint 3 in ck");
  CHECK_STR(wm_ctx_errtext(&ctx), "job.lua:3: attempt to index a nil value (local 'r')\n"
                                  "  in operator 'map (job.lua:3)'\n"
                                  "  on record {id=1}\n"
                                  "  while reading data.csv:2\n"
                                  "  while taking checkpoint 3 in ck\n"
                                  "stack traceback:\n\tjob.lua:3: in function\n"
                                  "  in on_timer(5) (event time)");
  /* an operator and a position are kept once: the first (innermost) */
  wm_error_set_op(&ctx.error, "outer");
  wm_error_set_pos(&ctx.error, "data.csv:9");
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_OP, NULL), "map (job.lua:3)");
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_POS, NULL), "data.csv:2");
  /* appended text goes to the message while there are no parts; a new failure drops them */
  wm_ctx_error(&ctx, "field 'v' is missing");
  wm_ctx_error_append(&ctx, " (key_by on record 7)");
  CHECK_STR(ctx.error.msg, "field 'v' is missing (key_by on record 7)");
  CHECK(wm_error_part(&ctx.error, WM_EPART_OP, NULL) == NULL);
  CHECK_STR(wm_ctx_errtext(&ctx), "field 'v' is missing (key_by on record 7)");
  /* a message written into msg directly drops the old parts too */
  wm_error_set_op(&ctx.error, "x");
  snprintf(ctx.error.msg, sizeof ctx.error.msg, "disk full");
  wm_error_took(&ctx.error);
  CHECK_STR(wm_ctx_errtext(&ctx), "disk full");
  wm_ctx_free(&ctx);

  /* 2. the core sets parts: the innermost failing operator and the source's position, the
   * message untouched (the text as wmrun printed it before: "boom", then the operator that
   * failed, then the line it was reading) */
  CHECK_I64(run("boom", &ctx), WM_ERR);
  CHECK_STR(ctx.error.msg, "boom");
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_OP, NULL), "inner");
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_POS, NULL), "data.csv:17");
  CHECK_STR(wm_ctx_errtext(&ctx), "boom\n  in operator 'inner'\n  while reading data.csv:17");
  wm_ctx_free(&ctx);
  /* the position goes before the host's traceback, which the core leaves alone */
  CHECK_I64(run("traced", &ctx), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&ctx), "traced\n  in operator 'inner'\n  while reading data.csv:17\n"
                                  "stack traceback:\n\t[C]: in ?");
  wm_ctx_free(&ctx);
  /* a message that starts with its position (a parse error) says so by a part: no line */
  CHECK_I64(run("data.csv:17: field 'ts': 'x' is not an integer", &ctx), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&ctx),
            "data.csv:17: field 'ts': 'x' is not an integer\n  in operator 'inner'");
  wm_ctx_free(&ctx);
  /* the core decides by parts, not by the message's text: a message that quotes the lines
   * (text the old code searched for) still gets its operator and position */
  CHECK_I64(run("bad input \"\n  in operator 'q'\n  while reading z:1\"", &ctx), WM_ERR);
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_OP, NULL), "inner");
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_POS, NULL), "data.csv:17");
  wm_ctx_free(&ctx);

  /* 3. the job script's line of the failing operator is a part of its own, set where the
   * operator is built (wm_op_set_where), kept once (the innermost); the text is the same, as
   * the operator's name shows the line */
  wm_ctx_init(&ctx);
  wm_op *s3 = wm_op_new(&ctx, &pass_vt, NULL, "source");
  wm_op *o3 = wm_op_new(&ctx, &pass_vt, NULL, "filter (job.lua:6)");
  wm_op *f3 = wm_op_new(&ctx, &fail_vt, (void *)"boom", "map (job.lua:7)");
  CHECK_I64(wm_op_set_where(o3, "job.lua:6"), WM_OK);
  CHECK_I64(wm_op_set_where(f3, "job.lua:7"), WM_OK);
  wm_op_connect(s3, 0, o3);
  wm_op_connect(o3, 0, f3);
  wm_ctx_prepare(&ctx);
  wm_pos pos3 = {.origin = "data.csv", .line = 17};
  wm_value v3 = wm_int(5);
  CHECK_I64(wm_source_emit(s3, &pos3, &v3, 1), WM_ERR);
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_WHERE, NULL), "job.lua:7");
  CHECK_STR(wm_error_part(&ctx.error, WM_EPART_OP, NULL), "map (job.lua:7)");
  CHECK_STR(wm_ctx_errtext(&ctx), "boom\n  in operator 'map (job.lua:7)'\n  while reading data.csv:17");
  /* an operator made by no job line (the source) has none */
  wm_ctx_error(&ctx, "again");
  wm_op_error_parts(s3);
  CHECK(wm_error_part(&ctx.error, WM_EPART_WHERE, NULL) == NULL);
  wm_ctx_free(&ctx);
}
