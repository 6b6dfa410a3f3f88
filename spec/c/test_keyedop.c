/* The keyed process operator: timers per key coalesce, are deletable, fire in time order
 * when the watermark reaches them (then the watermark is forwarded), and processing-time
 * timers go through the context's timer service. Also the assigner's idleness deadline. */
#include <stdlib.h>

#include "base/wm_buf.h"
#include "ops/wm_keyedop.h"
#include "time/wm_time.h"
#include "ops/wm_tsop.h"
#include "exec/wm_exchange.h"
#include "test.h"

/* A sink that writes "ts value" lines, and "W t" for each watermark. */
static int cap_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  wm_buf *b = op->impl;
  wm_buf_add_int(b, ts);
  wm_buf_addc(b, ' ');
  wm_format_value(b, rec, 0, NULL, NULL);
  wm_buf_addc(b, '\n');
  return WM_OK;
}
static int cap_watermark(wm_op *op, int64_t w) {
  wm_buf *b = op->impl;
  wm_buf_adds(b, "W ");
  wm_buf_add_int(b, w);
  wm_buf_addc(b, '\n');
  return WM_OK;
}
static const wm_op_vt cap_vt = {.kind = "capture", .record = cap_record, .watermark = cap_watermark};

/* The key selector: the record itself (an integer) divided by 100; the record's last two
 * digits say what to do: 0-49 register an event timer at ts + n, 50-98 delete the event
 * timer at ts + n - 50, 99 register a processing-time timer at ts. */
static int key_fn(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  (void)ud;
  (void)op;
  *key = wm_int(rec->u.i / 100);
  return WM_OK;
}

static int element(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                   const wm_value *rec, int64_t ts) {
  (void)ud;
  (void)key;
  int64_t n = rec->u.i % 100;
  *state = wm_int(state->type == WM_INT ? state->u.i + 1 : 1); /* records seen per key */
  if (n < 50) return wm_keyedop_register(op, WM_TIME_EVENT, ts + n);
  if (n < 99) return wm_keyedop_delete(op, WM_TIME_EVENT, ts + n - 50);
  return wm_keyedop_register(op, WM_TIME_PROCESSING, ts);
}

static int timer(void *ud, wm_op *op, const wm_value *key, wm_value *state, int64_t t,
                 int domain) {
  (void)ud;
  /* emits key * 1000 + records seen, at t (negative for processing time) */
  wm_value v = wm_int(key->u.i * 1000 + state->u.i);
  return wm_op_emit(op, 0, &v, domain == WM_TIME_EVENT ? t : -t);
}

typedef struct ptq {
  int n;
  wm_op *op[8];
  int64_t t[8];
} ptq;

static int pt_register(void *ud, wm_op *op, int64_t t) {
  ptq *q = ud;
  if (q->n == 8) return WM_ERR;
  q->op[q->n] = op;
  q->t[q->n++] = t;
  return WM_OK;
}

static void timers_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  ptq q = {0};
  ctx.pt_register = pt_register;
  ctx.pt_ud = &q;
  wm_keyedop_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.fn.element = element;
  cfg.fn.timer = timer;
  wm_op *k = wm_keyedop_new(&ctx, "keyed", &cfg);
  wm_buf out;
  wm_buf_init(&out);
  wm_op *cap = wm_op_new(&ctx, &cap_vt, &out, "capture");
  CHECK(k && cap);
  wm_op_connect(k, 0, cap);
  k->nin = 1;
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_value r;
  /* key 1: timers at 110 and 120, 110 twice (coalesced) */
  r = wm_int(110); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  r = wm_int(110); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  r = wm_int(120); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  /* key 2: timer at 110, then deleted; then at 105 */
  r = wm_int(210); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  r = wm_int(260); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  r = wm_int(205); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  CHECK_I64(wm_keyedop_keys(k), 2);
  CHECK_I64(wm_keyedop_timers(k, WM_TIME_EVENT), 3);
  CHECK_I64(wm_op_input_watermark(k, 0, 109), WM_OK);
  CHECK_STR(out.data, "105 2003\nW 109\n");
  wm_buf_clear(&out);
  CHECK_I64(wm_op_input_watermark(k, 0, 200), WM_OK);
  CHECK_STR(out.data, "110 1003\n120 1003\nW 200\n");
  CHECK_I64(wm_keyedop_timers(k, WM_TIME_EVENT), 0);
  /* processing time: registered through the context, fired by it */
  wm_buf_clear(&out);
  r = wm_int(399); CHECK_I64(wm_op_input_record(k, 0, &r, 500), WM_OK);
  r = wm_int(399); CHECK_I64(wm_op_input_record(k, 0, &r, 500), WM_OK); /* coalesced */
  CHECK_I64(q.n, 1);
  CHECK_I64(q.t[0], 500);
  CHECK(q.op[0] == k);
  CHECK_I64(k->vt->processing_time(k, 500), WM_OK);
  CHECK_STR(out.data, "-500 3002\n");
  /* outside a callback, the timer service is not available */
  CHECK_I64(wm_keyedop_register(k, WM_TIME_EVENT, 1), WM_ERR);
  wm_ctx_free(&ctx);
  wm_buf_free(&out);
}

static int64_t fake_now(void *ud) { return *(int64_t *)ud; }

static void idleness_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  int64_t now = 1000;
  ctx.now = fake_now;
  ctx.now_ud = &now;
  wm_tsop_config cfg = {0};
  cfg.builtin = WM_GEN_BOUNDED;
  cfg.interval = 0;
  cfg.idle_timeout = 300;
  wm_op *a = wm_tsop_new(&ctx, "assign", &cfg);
  wm_buf out;
  wm_buf_init(&out);
  wm_op *cap = wm_op_new(&ctx, &cap_vt, &out, "capture");
  wm_op_connect(a, 0, cap);
  a->nin = 1;
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  CHECK_I64(wm_tsop_idle_deadline(a), 1300);
  now = 1100;
  wm_value r = wm_int(1);
  CHECK_I64(wm_op_input_record(a, 0, &r, 50), WM_OK);
  CHECK_I64(wm_tsop_idle_deadline(a), 1400);
  CHECK_I64(wm_tsop_check_idle(a, 1399), WM_OK);
  CHECK(!wm_tsop_is_idle(a));
  CHECK(!cap->comb.out_idle);
  CHECK_I64(wm_tsop_check_idle(a, 1400), WM_OK);
  CHECK(wm_tsop_is_idle(a));
  CHECK(cap->comb.out_idle); /* the status went downstream */
  CHECK_I64(wm_tsop_idle_deadline(a), WM_TIME_MAX);
  now = 2000;
  CHECK_I64(wm_op_input_record(a, 0, &r, 60), WM_OK); /* a record: active again */
  CHECK(!wm_tsop_is_idle(a));
  CHECK(!cap->comb.out_idle);
  CHECK_I64(wm_tsop_idle_deadline(a), 2300);
  CHECK_I64(wm_tsop_last_watermark(a), 59);
  wm_ctx_free(&ctx);
  wm_buf_free(&out);
}


/* Keyed connected streams: the second input's records (channels from first2 on) go through
 * the second key selector (the record mod 10) and element2; both inputs share the key's
 * state and timers. The operator's watermark is the minimum of both inputs' channels. */
static int key2_fn(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  (void)ud;
  (void)op;
  *key = wm_int(rec->u.i % 10);
  return WM_OK;
}
static int element2(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                    const wm_value *rec, int64_t ts) {
  (void)ud;
  (void)rec;
  /* the second input adds 100 to the key's count and sets a timer at ts */
  *state = wm_int((state->type == WM_INT ? state->u.i : 0) + 100);
  (void)key;
  return wm_keyedop_register(op, WM_TIME_EVENT, ts);
}

static void two_inputs_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_keyedop_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.keysel2.fn = key2_fn;
  cfg.fn.element = element;
  cfg.fn.element2 = element2;
  cfg.fn.timer = timer;
  wm_op *k = wm_keyedop_new(&ctx, "keyed co", &cfg);
  wm_buf out;
  wm_buf_init(&out);
  wm_op *cap = wm_op_new(&ctx, &cap_vt, &out, "capture");
  CHECK(k && cap);
  wm_op_connect(k, 0, cap);
  k->nin = 3; /* channel 0: the first input; 1 and 2: the second */
  wm_keyedop_set_second_input(k, 1);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_value r;
  /* first input: record 149 is key 1, a timer at 100 + 49 */
  r = wm_int(149); CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  /* second input: 31 and 71 are key 1 (mod 10) on two channels: the same state */
  r = wm_int(31); CHECK_I64(wm_op_input_record(k, 1, &r, 120), WM_OK);
  r = wm_int(71); CHECK_I64(wm_op_input_record(k, 2, &r, 130), WM_OK);
  CHECK_I64(wm_keyedop_keys(k), 1);
  CHECK_I64(wm_keyedop_timers(k, WM_TIME_EVENT), 3);
  /* the first input alone at 200 moves nothing: the minimum waits for channels 1 and 2 */
  CHECK_I64(wm_op_input_watermark(k, 0, 200), WM_OK);
  CHECK_I64(wm_op_input_watermark(k, 1, 200), WM_OK);
  CHECK_I64(out.len, 0);
  CHECK_I64(wm_op_input_watermark(k, 2, 125), WM_OK);
  /* key 1 * 1000 + 1 record of input 1 + 2 * 100 of input 2 */
  CHECK_STR(out.data, "120 1201\nW 125\n");
  wm_buf_clear(&out);
  CHECK_I64(wm_op_input_watermark(k, 2, 200), WM_OK);
  CHECK_STR(out.data, "130 1201\n149 1201\nW 200\n");
  wm_ctx_free(&ctx);
  wm_buf_free(&out);
}

/* A broadcast second input (no keysel2): element2 runs outside any key, so a timer cannot be
 * registered there; the first input's keys and timers are untouched. */
static int bcast_element2(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                          const wm_value *rec, int64_t ts) {
  (void)ud;
  (void)state;
  CHECK(key->type == WM_NIL);
  wm_value v = wm_int(-rec->u.i);
  CHECK_I64(wm_keyedop_register(op, WM_TIME_EVENT, ts), WM_ERR); /* no key: no timers */
  op->ctx->err[0] = 0;
  return wm_op_emit(op, 0, &v, ts);
}

static void broadcast_input_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_keyedop_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.fn.element = element;
  cfg.fn.element2 = bcast_element2;
  cfg.fn.timer = timer;
  wm_op *k = wm_keyedop_new(&ctx, "keyed broadcast", &cfg);
  wm_buf out;
  wm_buf_init(&out);
  wm_op *cap = wm_op_new(&ctx, &cap_vt, &out, "capture");
  CHECK(k && cap);
  wm_op_connect(k, 0, cap);
  k->nin = 2;
  wm_keyedop_set_second_input(k, 1);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_value r = wm_int(7);
  CHECK_I64(wm_op_input_record(k, 1, &r, 50), WM_OK);
  CHECK_I64(wm_keyedop_keys(k), 0);
  r = wm_int(110);
  CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  CHECK_I64(wm_keyedop_keys(k), 1);
  CHECK_STR(out.data, "50 -7\n");
  wm_ctx_free(&ctx);
  wm_buf_free(&out);
}

/* A broadcast exchange: every record to every instance, in order; watermarks too. */
static void broadcast_exchange_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *x = wm_exchange_new(&ctx, "broadcast", WM_XCH_BROADCAST, 3, NULL);
  wm_buf out[3];
  wm_op *cap[3];
  for (int i = 0; i < 3; i++) {
    wm_buf_init(&out[i]);
    cap[i] = wm_op_new(&ctx, &cap_vt, &out[i], "capture");
    CHECK(x && cap[i] && wm_op_connect(x, wm_exchange_port(x, i), cap[i]) >= 0);
  }
  x->nin = 1;
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_value r = wm_int(1);
  CHECK_I64(wm_op_input_record(x, 0, &r, 10), WM_OK);
  r = wm_int(2);
  CHECK_I64(wm_op_input_record(x, 0, &r, 20), WM_OK);
  CHECK_I64(wm_op_input_watermark(x, 0, 20), WM_OK);
  for (int i = 0; i < 3; i++) {
    CHECK_STR(out[i].data, "10 1\n20 2\nW 20\n");
    wm_buf_free(&out[i]);
  }
  wm_ctx_free(&ctx);
}

void test_keyedop(void) {
  timers_case();
  two_inputs_case();
  broadcast_input_case();
  broadcast_exchange_case();
  idleness_case();
}
