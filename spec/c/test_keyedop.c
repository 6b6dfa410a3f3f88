/* The keyed process operator: timers per key coalesce, are deletable, fire in time order
 * when the watermark reaches them (then the watermark is forwarded), and processing-time
 * timers go through the context's timer service. Also the assigner's idleness deadline. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_observe.h"
#include "graph/wm_state.h"
#include "ops/wm_keyedop.h"
#include "time/wm_time.h"
#include "ops/wm_tsop.h"
#include "exec/wm_exchange.h"
#include "exec/wm_metrics_http.h"
#include "timeline/wm_timeline.h"
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
  op->ctx->error.msg[0] = 0;
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

/* ---- keys that hold nothing go; state TTL -------------------------------------------
 * The record says what to do: key = record / 100, and record % 100:
 *   0 write (the key's count + 1, a new value: a write), 1 read (emits key * 1000 + count,
 *   0 for no state), 2 clear the state, 3 an event timer at ts + 10, 4 delete it. */
static int64_t ttl_now;
static int64_t ttl_clock(void *ud) { (void)ud; return ttl_now; }

static int ttl_element(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                       const wm_value *rec, int64_t ts) {
  (void)ud;
  int64_t n = rec->u.i % 100;
  wm_value v;
  switch (n) {
  case 0: *state = wm_int(state->type == WM_INT ? state->u.i + 1 : 1); return WM_OK;
  case 1:
    wm_keyedop_state_used(op, 0);
    v = wm_int(key->u.i * 1000 + (state->type == WM_INT ? state->u.i : 0));
    return wm_op_emit(op, 0, &v, ts);
  case 2: *state = wm_nil(); return WM_OK;
  case 3: return wm_keyedop_register(op, WM_TIME_EVENT, ts + 10);
  default: return wm_keyedop_delete(op, WM_TIME_EVENT, ts + 10);
  }
}

static int ttl_timer(void *ud, wm_op *op, const wm_value *key, wm_value *state, int64_t t,
                     int domain) {
  (void)ud;
  (void)domain;
  wm_value v = wm_int(key->u.i * 1000 + (state->type == WM_INT ? state->u.i : 0));
  return wm_op_emit(op, 0, &v, t);
}

typedef struct kfix {
  wm_ctx ctx;
  wm_op *k;
  wm_buf out;
} kfix;

static void kfix_open(kfix *f, const wm_state_ttl *ttl) {
  wm_ctx_init(&f->ctx);
  f->ctx.now = ttl_clock;
  wm_keyedop_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.fn.element = ttl_element;
  cfg.fn.timer = ttl_timer;
  if (ttl) cfg.ttl = *ttl;
  f->k = wm_keyedop_new(&f->ctx, "keyed", &cfg);
  wm_buf_init(&f->out);
  wm_op *cap = wm_op_new(&f->ctx, &cap_vt, &f->out, "capture");
  CHECK(f->k && cap);
  wm_op_connect(f->k, 0, cap);
  f->k->nin = 1;
  CHECK_I64(wm_ctx_prepare(&f->ctx), WM_OK);
}

static void kfix_close(kfix *f) {
  wm_ctx_free(&f->ctx);
  wm_buf_free(&f->out);
}

static int push(kfix *f, int64_t rec, int64_t ts) {
  wm_value r = wm_int(rec);
  return wm_op_input_record(f->k, 0, &r, ts);
}

/* The operator's checkpoint restored into the fresh operator g (its result). */
static int snap_restore(kfix *f, kfix *g) {
  wm_buf b;
  wm_buf_init(&b);
  wm_encoder enc;
  wm_decoder dec;
  wm_encoder_init(&enc);
  wm_decoder_init(&dec);
  wm_state_io io = {.out = &b, .enc = &enc, .dec = &dec};
  int rc = f->k->vt->snapshot(f->k, &io);
  CHECK_I64(rc, WM_OK);
  io.data = (const uint8_t *)b.data;
  io.len = b.len;
  rc = g->k->vt->restore(g->k, &io);
  wm_encoder_free(&enc);
  wm_decoder_free(&dec);
  wm_buf_free(&b);
  return rc;
}

static void removal_case(void) {
  kfix f;
  kfix_open(&f, NULL);
  CHECK_I64(push(&f, 100, 1), WM_OK); /* key 1 written: held */
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(push(&f, 101, 2), WM_OK); /* a read: still held */
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(push(&f, 102, 3), WM_OK); /* cleared, no timers: gone */
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  CHECK_I64(push(&f, 101, 4), WM_OK); /* a read of a key that holds nothing: 0, not held */
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  CHECK_STR(f.out.data, "2 1001\n4 1000\n");
  /* a key with a timer and no state is held until the timer has fired */
  wm_buf_clear(&f.out);
  CHECK_I64(push(&f, 203, 100), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(wm_op_input_watermark(f.k, 0, 110), WM_OK);
  CHECK_STR(f.out.data, "110 2000\nW 110\n");
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  /* many keys come and go: the places are reused (the index finds every key after
   * backward shifts) */
  for (int round = 0; round < 3; round++) {
    for (int64_t key = 1; key <= 500; key++) CHECK_I64(push(&f, key * 100, 200), WM_OK);
    CHECK_I64(wm_keyedop_keys(f.k), 500);
    for (int64_t key = 1; key <= 500; key += 2) CHECK_I64(push(&f, key * 100 + 2, 200), WM_OK);
    CHECK_I64(wm_keyedop_keys(f.k), 250);
    for (int64_t key = 2; key <= 500; key += 2) CHECK_I64(push(&f, key * 100 + 2, 200), WM_OK);
    CHECK_I64(wm_keyedop_keys(f.k), 0);
  }
  wm_buf_clear(&f.out);
  CHECK_I64(push(&f, 700, 300), WM_OK);
  CHECK_I64(push(&f, 700, 300), WM_OK);
  CHECK_I64(push(&f, 701, 300), WM_OK); /* written twice since it came back: count 2 */
  CHECK_STR(f.out.data, "300 7002\n");
  kfix_close(&f);
}

/* A removed key's timer must not fire for the key that takes its place: key 1 sets a
 * timer at 110 (first in the queue), deletes it and goes; key 3 sets one at 110, then key
 * 2 (in key 1's place) does. Registration order: key 3, then key 2. A queue entry that
 * named only the place would fire key 2 first. The same after a checkpoint. */
static void reuse_case(void) {
  kfix f, g;
  kfix_open(&f, NULL);
  CHECK_I64(push(&f, 103, 100), WM_OK);
  CHECK_I64(push(&f, 303, 100), WM_OK);
  CHECK_I64(push(&f, 104, 100), WM_OK); /* key 1: no timer, no state: gone */
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(push(&f, 203, 100), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 2);
  CHECK_I64(wm_keyedop_timers(f.k, WM_TIME_EVENT), 2);
  kfix_open(&g, NULL);
  CHECK_I64(snap_restore(&f, &g), WM_OK);
  CHECK_I64(wm_op_input_watermark(f.k, 0, 200), WM_OK);
  CHECK_STR(f.out.data, "110 3000\n110 2000\nW 200\n");
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  CHECK_I64(wm_keyedop_keys(g.k), 2);
  CHECK_I64(wm_op_input_watermark(g.k, 0, 200), WM_OK);
  CHECK_STR(g.out.data, "110 3000\n110 2000\nW 200\n");
  CHECK_I64(wm_keyedop_keys(g.k), 0);
  kfix_close(&f);
  kfix_close(&g);
}

static void ttl_processing_case(void) {
  wm_state_ttl ttl = {100, WM_TTL_ON_CREATE_AND_WRITE, WM_TIME_PROCESSING};
  kfix f;
  kfix_open(&f, &ttl);
  ttl_now = 1000;
  CHECK_I64(push(&f, 100, 1), WM_OK); /* written at 1000: expires at 1100 */
  ttl_now = 1050;
  CHECK_I64(push(&f, 101, 2), WM_OK); /* a read does not renew it */
  ttl_now = 1099;
  CHECK_I64(push(&f, 101, 3), WM_OK);
  ttl_now = 1100;
  CHECK_I64(push(&f, 101, 4), WM_OK); /* 1000 + 100 <= 1100: gone, the read sees none */
  CHECK_STR(f.out.data, "2 1001\n3 1001\n4 1000\n");
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  CHECK_I64(wm_keyedop_expired(f.k), 1);
  /* a write renews: written at 1100 and 1150, read at 1249 (1150 + 100 > 1249) */
  wm_buf_clear(&f.out);
  CHECK_I64(push(&f, 200, 5), WM_OK);
  ttl_now = 1150;
  CHECK_I64(push(&f, 200, 6), WM_OK);
  ttl_now = 1249;
  CHECK_I64(push(&f, 201, 7), WM_OK);
  CHECK_STR(f.out.data, "7 2002\n");
  /* the cleanup pass frees keys nobody asks for again: keys 3, 4, 5 written at 1249, then
   * at 2000 a record of key 9 examines the places after it: 2, 3, 4, 5 have expired */
  CHECK_I64(push(&f, 300, 8), WM_OK);
  CHECK_I64(push(&f, 400, 8), WM_OK);
  CHECK_I64(push(&f, 500, 8), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 4);
  ttl_now = 2000;
  for (int i = 0; i < 3; i++) CHECK_I64(push(&f, 900, 9), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(wm_keyedop_expired(f.k), 5);
  wm_buf m; /* the Prometheus series of keyed operators */
  wm_buf_init(&m);
  wm_metrics_format(&m, &f.ctx, ttl_now);
  CHECK(m.data && strstr(m.data, "\nwmrun_keys{operator=\"keyed\",subtask=\"1\"} 1\n") != NULL);
  CHECK(strstr(m.data, "\nwmrun_keys_expired_total{operator=\"keyed\",subtask=\"1\"} 5\n") != NULL);
  CHECK(strstr(m.data, "wmrun_keys{operator=\"capture\"}") == NULL);
  wm_buf_free(&m);
  kfix_close(&f);

  /* on_read_and_write: a read renews too */
  ttl.update = WM_TTL_ON_READ_AND_WRITE;
  kfix_open(&f, &ttl);
  ttl_now = 1000;
  CHECK_I64(push(&f, 100, 1), WM_OK);
  ttl_now = 1050;
  CHECK_I64(push(&f, 101, 2), WM_OK); /* renewed to 1150 */
  ttl_now = 1120;
  CHECK_I64(push(&f, 101, 3), WM_OK); /* to 1220 */
  ttl_now = 1220;
  CHECK_I64(push(&f, 101, 4), WM_OK); /* 1120 + 100 <= 1220: gone */
  CHECK_STR(f.out.data, "2 1001\n3 1001\n4 1000\n");
  kfix_close(&f);
}

static void ttl_event_case(void) {
  wm_state_ttl ttl = {100, WM_TTL_ON_CREATE_AND_WRITE, WM_TIME_EVENT};
  kfix f;
  kfix_open(&f, &ttl);
  ttl_now = 0; /* processing time plays no part */
  CHECK_I64(push(&f, 100, 1000), WM_OK); /* written by a record at 1000: gone at W 1100 */
  CHECK_I64(push(&f, 200, 1050), WM_OK); /* at W 1150 */
  CHECK_I64(push(&f, 200, 1020), WM_OK); /* an earlier record does not shorten it */
  CHECK_I64(wm_op_input_watermark(f.k, 0, 1099), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 2);
  CHECK_I64(push(&f, 101, 1090), WM_OK);
  CHECK_I64(wm_op_input_watermark(f.k, 0, 1100), WM_OK); /* the cleanup at the watermark */
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(wm_keyedop_expired(f.k), 1);
  CHECK_I64(push(&f, 201, 1100), WM_OK);
  CHECK_I64(wm_op_input_watermark(f.k, 0, 1150), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  CHECK_STR(f.out.data, "W 1099\n1090 1001\nW 1100\n1100 2002\nW 1150\n");
  /* a key with a timer keeps it when its state expires; on_timer sees no state */
  wm_buf_clear(&f.out);
  CHECK_I64(push(&f, 300, 2000), WM_OK);
  CHECK_I64(push(&f, 303, 2190), WM_OK); /* a timer at 2200 */
  CHECK_I64(wm_op_input_watermark(f.k, 0, 2100), WM_OK);
  CHECK_I64(wm_keyedop_keys(f.k), 1);
  CHECK_I64(wm_op_input_watermark(f.k, 0, 2200), WM_OK);
  CHECK_STR(f.out.data, "W 2100\n2200 3000\nW 2200\n");
  CHECK_I64(wm_keyedop_keys(f.k), 0);
  /* a record without a timestamp cannot age a state by event time */
  CHECK_I64(push(&f, 100, WM_TIME_MIN), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&f.ctx), "state_ttl with time = \"event\"") != NULL);
  kfix_close(&f);
}

static void ttl_checkpoint_case(void) {
  wm_state_ttl ttl = {100, WM_TTL_ON_CREATE_AND_WRITE, WM_TIME_PROCESSING};
  kfix f, g;
  kfix_open(&f, &ttl);
  ttl_now = 1000;
  CHECK_I64(push(&f, 100, 1), WM_OK);
  ttl_now = 1050;
  CHECK_I64(push(&f, 200, 2), WM_OK);
  kfix_open(&g, &ttl);
  CHECK_I64(snap_restore(&f, &g), WM_OK);
  ttl_now = 1100; /* key 1's state is gone, key 2's lives to 1150 */
  CHECK_I64(push(&g, 101, 3), WM_OK);
  CHECK_I64(push(&g, 201, 4), WM_OK);
  CHECK_STR(g.out.data, "3 1000\n4 2001\n");
  kfix_close(&g);
  /* a checkpoint with a TTL into a job without, and one without into a job with: refused */
  kfix_open(&g, NULL);
  CHECK_I64(snap_restore(&f, &g), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&g.ctx), "with a state_ttl") != NULL);
  kfix_close(&g);
  kfix h;
  kfix_open(&h, NULL);
  CHECK_I64(push(&h, 100, 1), WM_OK);
  kfix_open(&g, &ttl);
  CHECK_I64(snap_restore(&h, &g), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&g.ctx), "without a state_ttl") != NULL);
  kfix_close(&g);
  /* another time domain: refused */
  wm_state_ttl ev = {100, WM_TTL_ON_CREATE_AND_WRITE, WM_TIME_EVENT};
  kfix_open(&g, &ev);
  CHECK_I64(snap_restore(&f, &g), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&g.ctx), "processing time") != NULL);
  kfix_close(&g);
  kfix_close(&h);
  kfix_close(&f);
}

/* Keyed connected streams whose inputs give keys of two types: an error naming both. */
static int key2_str(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  (void)ud;
  (void)op;
  (void)rec;
  *key = wm_cstr("7", 1);
  return WM_OK;
}

static void key_kinds_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_keyedop_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.keysel2.fn = key2_str;
  cfg.fn.element = ttl_element;
  cfg.fn.element2 = ttl_element;
  cfg.fn.timer = ttl_timer;
  wm_op *k = wm_keyedop_new(&ctx, "keyed co", &cfg);
  CHECK(k);
  k->nin = 2;
  wm_keyedop_set_second_input(k, 1);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_value r = wm_int(700);
  CHECK_I64(wm_op_input_record(k, 0, &r, 1), WM_OK);
  CHECK_I64(wm_op_input_record(k, 0, &r, 1), WM_OK);
  CHECK_I64(wm_op_input_record(k, 1, &r, 1), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&ctx), "the second input's key is a string (\"7\") for record 700, and the "
                        "first input's keys are a number") != NULL);
  wm_ctx_free(&ctx);
}

/* ---- key groups: a checkpoint split among instances and merged back ----------------
 * One operator holds keys 1..300 (even keys written twice, every key a timer at its own
 * ts + 10); its bytes restored into three operators, each keeping the key groups of its
 * instance of 3 (of 128), then the three merged back into one. The key group of integer k is
 * splitmix64's finalizer of k, mod 128 (written out here), its owner group * 3 / 128. */
static uint64_t kg_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
static int kg_owner(int64_t key, int p) { return (int)(kg_mix((uint64_t)key) % 128u) * p / 128; }

static void snap_bytes(kfix *f, wm_buf *b) {
  wm_encoder enc;
  wm_encoder_init(&enc);
  wm_state_io io = {.out = b, .enc = &enc};
  CHECK_I64(f->k->vt->snapshot(f->k, &io), WM_OK);
  wm_encoder_free(&enc);
}

static int restore_groups(kfix *g, const wm_buf *b, uint32_t first, uint32_t last, int merge) {
  wm_decoder dec;
  wm_decoder_init(&dec);
  wm_state_io io = {.data = (const uint8_t *)b->data, .len = b->len, .dec = &dec,
                    .groups = 128, .kg_first = first, .kg_last = last, .merge = merge};
  int rc = g->k->vt->restore(g->k, &io);
  wm_decoder_free(&dec);
  return rc;
}

/* The lines of out, sorted, as one string. */
static void sort_lines(const char *text, char *out, size_t n) {
  char lines[400][32];
  int m = 0;
  for (const char *p = text; *p && m < 400;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    snprintf(lines[m++], sizeof lines[0], "%.*s", (int)l, p);
    p += l + (nl != NULL);
  }
  for (int i = 1; i < m; i++)
    for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
      char t[32];
      memcpy(t, lines[j], sizeof t);
      memcpy(lines[j], lines[j - 1], sizeof t);
      memcpy(lines[j - 1], t, sizeof t);
    }
  size_t k = 0;
  out[0] = '\0';
  for (int i = 0; i < m && k + 33 < n; i++) k += (size_t)snprintf(out + k, n - k, "%s\n", lines[i]);
}

static void rescale_case(void) {
  kfix f;
  kfix_open(&f, NULL);
  for (int64_t key = 1; key <= 300; key++) {
    CHECK_I64(push(&f, key * 100, key), WM_OK);
    if (key % 2 == 0) CHECK_I64(push(&f, key * 100, key), WM_OK);
    CHECK_I64(push(&f, key * 100 + 3, key), WM_OK);
  }
  wm_buf whole;
  wm_buf_init(&whole);
  snap_bytes(&f, &whole);
  /* split: instance i of 3 keeps exactly its keys, with their state and timers */
  kfix g[3];
  wm_buf part[3];
  int total = 0;
  for (int i = 0; i < 3; i++) {
    uint32_t a = (uint32_t)(i * 128 + 2) / 3, b = (uint32_t)((i + 1) * 128 - 1) / 3;
    kfix_open(&g[i], NULL);
    CHECK_I64(restore_groups(&g[i], &whole, a, b, 0), WM_OK);
    int want = 0;
    for (int64_t key = 1; key <= 300; key++) want += kg_owner(key, 3) == i;
    CHECK_I64(wm_keyedop_keys(g[i].k), want);
    CHECK(want > 50); /* (300 keys over 3: no instance is nearly empty) */
    total += want;
    wm_buf_init(&part[i]);
    snap_bytes(&g[i], &part[i]);
  }
  CHECK_I64(total, 300);
  /* merged back into one: every key again */
  kfix m;
  kfix_open(&m, NULL);
  for (int i = 0; i < 3; i++) CHECK_I64(restore_groups(&m, &part[i], 0, 127, i > 0), WM_OK);
  CHECK_I64(wm_keyedop_keys(m.k), 300);
  /* a key twice (the same part merged again) is damage */
  kfix d;
  kfix_open(&d, NULL);
  CHECK_I64(restore_groups(&d, &part[0], 0, 127, 0), WM_OK);
  CHECK_I64(restore_groups(&d, &part[0], 0, 127, 1), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&d.ctx), "a key appears twice") != NULL);
  kfix_close(&d);
  /* every timer fires where its key went: the split's lines are the whole's, each of its own
   * instance's keys (key * 1000 + count: 1 for odd keys, 2 for even ones) */
  CHECK_I64(wm_op_input_watermark(f.k, 0, 1000), WM_OK);
  CHECK_I64(wm_op_input_watermark(m.k, 0, 1000), WM_OK);
  static char a[12000], b[12000];
  wm_buf all;
  wm_buf_init(&all);
  int bad = 0;
  for (int i = 0; i < 3; i++) {
    CHECK_I64(wm_op_input_watermark(g[i].k, 0, 1000), WM_OK);
    for (const char *p = g[i].out.data; p && *p;) {
      long long ts, v;
      if (*p != 'W' && sscanf(p, "%lld %lld", &ts, &v) == 2) {
        long long key = v / 1000, count = key % 2 == 0 ? 2 : 1;
        bad += kg_owner(key, 3) != i || ts != key + 10 || v % 1000 != count;
        wm_buf_add(&all, p, strcspn(p, "\n") + 1);
      }
      p = strchr(p, '\n');
      p = p ? p + 1 : NULL;
    }
  }
  CHECK_I64(bad, 0);
  wm_buf_addc(&all, '\0');
  sort_lines(all.data, a, sizeof a);
  wm_buf fo;
  wm_buf_init(&fo);
  for (const char *p = f.out.data; p && *p;) { /* the whole's, without its watermark line */
    if (*p != 'W') wm_buf_add(&fo, p, strcspn(p, "\n") + 1);
    p = strchr(p, '\n');
    p = p ? p + 1 : NULL;
  }
  wm_buf_addc(&fo, '\0');
  sort_lines(fo.data, b, sizeof b);
  CHECK(strlen(a) > 300 * 6);
  CHECK_STR(a, b);
  CHECK_STR(m.out.data, f.out.data); /* merged: the whole's lines in the whole's order */
  wm_buf_free(&all);
  wm_buf_free(&fo);
  wm_buf_free(&whole);
  for (int i = 0; i < 3; i++) {
    wm_buf_free(&part[i]);
    kfix_close(&g[i]);
  }
  kfix_close(&m);
  kfix_close(&f);
}

/* An observer that logs "A key ts W" per record and "T key t domain W" per timer. */
static void obs_log(void *ud, const wm_op *op, const wm_obs *ev) {
  (void)op;
  wm_buf *b = ud;
  if (ev->kind != WM_OBS_ARRIVE && ev->kind != WM_OBS_TIMER) return;
  wm_buf_adds(b, ev->kind == WM_OBS_ARRIVE ? "A " : "T ");
  wm_format_value(b, ev->key, 0, NULL, NULL);
  wm_buf_addc(b, ' ');
  wm_buf_add_int(b, ev->ts);
  if (ev->kind == WM_OBS_TIMER) wm_buf_adds(b, ev->flag == WM_TIME_EVENT ? " event" : " processing");
  wm_buf_adds(b, ev->watermark == WM_TIME_MIN ? " W MIN\n" : " W ");
  if (ev->watermark != WM_TIME_MIN) {
    wm_buf_add_int(b, ev->watermark);
    wm_buf_addc(b, '\n');
  }
}

/* The observed events of a process function (--trace-watermarks=json,records): a record's
 * key and timestamp, a timer's key, time and domain; through a timeline recorder attached
 * after the observer (it chains it). By hand: records 110 and 120 of key 1 at 100 (timers
 * at 110, 120), a watermark of 115 fires the first, 200 the second. */
static void observe_case(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_buf log;
  wm_buf_init(&log);
  ctx.observe = obs_log;
  ctx.observe_ud = &log;
  wm_timeline *tl = wm_timeline_new("observe");
  CHECK(tl != NULL);
  wm_timeline_attach(tl, &ctx);
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
  wm_value r = wm_int(110);
  CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  r = wm_int(120);
  CHECK_I64(wm_op_input_record(k, 0, &r, 100), WM_OK);
  CHECK_I64(wm_op_input_watermark(k, 0, 115), WM_OK);
  CHECK_I64(wm_op_input_watermark(k, 0, 200), WM_OK);
  CHECK_STR(log.data, "A 1 100 W MIN\nA 1 100 W MIN\nT 1 110 event W 115\nT 1 120 event W 200\n");
  wm_timeline_detach(tl, &ctx);
  CHECK(ctx.observe == obs_log && ctx.observe_ud == &log); /* given back */
  wm_timeline_free(tl);
  wm_ctx_free(&ctx);
  wm_buf_free(&out);
  wm_buf_free(&log);
}

void test_keyedop(void) {
  observe_case();
  rescale_case();
  timers_case();
  two_inputs_case();
  broadcast_input_case();
  broadcast_exchange_case();
  idleness_case();
  removal_case();
  reuse_case();
  ttl_processing_case();
  ttl_event_case();
  ttl_checkpoint_case();
  key_kinds_case();
}
