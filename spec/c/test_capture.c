#include "test.h"

static int capture_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  capture *c = op->impl;
  if (c->label) {
    wm_buf_adds(&c->out, c->label);
    wm_buf_addc(&c->out, ' ');
  }
  wm_buf_add_int(&c->out, ts);
  wm_buf_addc(&c->out, ' ');
  wm_format_value(&c->out, rec, 0, NULL, NULL);
  wm_buf_addc(&c->out, '\n');
  return WM_OK;
}

const wm_op_vt capture_vt = {.kind = "capture", .record = capture_record};
