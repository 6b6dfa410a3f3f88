/* The operator graph: the checkpoint hooks of the vtable (wm_op_snapshot/wm_op_restore). */
#include <stdlib.h>

#include "base/wm_buf.h"
#include "base/wm_codec.h"
#include "graph/wm_graph.h"
#include "graph/wm_state.h"
#include "test.h"

/* An operator whose state is one counter: snapshot writes a version byte and the counter,
 * restore reads them back and rejects other versions or trailing bytes. */
typedef struct counter {
  int64_t n;
} counter;

static int counter_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan, (void)rec, (void)ts;
  ((counter *)op->impl)->n++;
  return WM_OK;
}

static int counter_snapshot(wm_op *op, wm_state_io *io) {
  wm_buf_addc(io->out, 1);
  wm_codec_put_ivar(io->out, ((counter *)op->impl)->n);
  return WM_OK;
}

static int counter_restore(wm_op *op, wm_state_io *io) {
  const uint8_t *p = io->data, *end = io->data + io->len;
  int64_t n;
  if (io->len < 1 || *p++ != 1 || wm_codec_get_ivar(&p, end, &n) != 0 || p != end)
    return wm_ctx_error(op->ctx, "bad counter state");
  ((counter *)op->impl)->n = n;
  return WM_OK;
}

static const wm_op_vt counter_vt = {.kind = "counter", .record = counter_record,
                                    .snapshot = counter_snapshot, .restore = counter_restore};
static const wm_op_vt stateless_vt = {.kind = "stateless", .record = counter_record};

void test_graph(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  counter a = {0}, b = {0}, c = {0};
  wm_op *sa = wm_op_new(&ctx, &counter_vt, &a, "a");
  wm_op *sb = wm_op_new(&ctx, &counter_vt, &b, "b");
  wm_op *st = wm_op_new(&ctx, &stateless_vt, &c, "stateless (job.lua:3)");
  CHECK(sa && sb && st);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_value v = wm_int(1);
  for (int i = 0; i < 3; i++) wm_op_input_record(sa, 0, &v, i);

  /* a snapshot restores into a fresh operator of the same kind */
  wm_buf out;
  wm_buf_init(&out);
  wm_encoder enc;
  wm_decoder dec;
  wm_encoder_init(&enc);
  wm_decoder_init(&dec);
  wm_state_io io = {.out = &out, .enc = &enc, .dec = &dec};
  CHECK_I64(wm_op_snapshot(sa, &io), WM_OK);
  CHECK_I64(out.len, 2);
  io.data = (const uint8_t *)out.data;
  io.len = out.len;
  CHECK_I64(wm_op_restore(sb, &io), WM_OK);
  CHECK_I64(b.n, 3);
  /* a corrupt state is the operator's error, and names it */
  io.len = 1;
  CHECK_I64(wm_op_restore(sb, &io), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&ctx), "bad counter state") && strstr(wm_ctx_errtext(&ctx), "in operator 'b'"));

  /* no hooks: nothing written, only an empty state restores */
  size_t before = out.len;
  CHECK_I64(wm_op_snapshot(st, &io), WM_OK);
  CHECK_I64(out.len, before);
  io.len = 0;
  CHECK_I64(wm_op_restore(st, &io), WM_OK);
  io.data = (const uint8_t *)out.data;
  io.len = out.len;
  CHECK_I64(wm_op_restore(st, &io), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&ctx), "'stateless (job.lua:3)' keeps no state") != NULL);

  wm_buf_free(&out);
  wm_encoder_free(&enc);
  wm_decoder_free(&dec);
  wm_ctx_free(&ctx);
}
