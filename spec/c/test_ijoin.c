/* The interval join operator (ops/wm_ijoin.h, semantics.md §10), driven directly: records
 * are integers whose key is the value / 100 and whose identity is the value; the join emits
 * left * 10000 + right at max(lts, rts). Every expected output is worked out by hand from
 * the rules in the header, next to each case. Its checkpoints are in test_snapshot.c. */
#include <stdlib.h>

#include "ops/wm_ijoin.h"
#include "ops/wm_keyidx.h"
#include "time/wm_time.h"
#include "test.h"

static int key_fn(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  (void)ud;
  (void)op;
  if (rec->type != WM_INT) {
    *key = wm_nil();
    return WM_OK;
  }
  if (rec->u.i < 0) { /* a string key */
    *key = wm_cstr("neg", 3);
    return WM_OK;
  }
  *key = wm_int(rec->u.i / 100);
  return WM_OK;
}

static int join_fn(void *ud, wm_op *op, const wm_value *key, const wm_value *l, int64_t lts,
                   const wm_value *r, int64_t rts) {
  int *calls = ud;
  (*calls)++;
  (void)key;
  /* (an outer join's padded record: the missing side counts as 0) */
  wm_value v = wm_int((l ? l->u.i : 0) * 10000 + (r ? r->u.i : 0));
  return wm_op_emit(op, 0, &v, lts > rts ? lts : rts);
}

static int src_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}
static const wm_op_vt src_vt = {.kind = "source", .record = src_record};

typedef struct fixture {
  wm_ctx ctx;
  wm_op *j;
  capture out, late;
  int calls;
} fixture;

/* A join between(lo, hi) with exclusive flags; late tags "late" (both sides) when late. */
static void setup(fixture *f, int64_t lo, int64_t hi, bool lex, bool uex, int late) {
  memset(f, 0, sizeof *f);
  wm_ctx_init(&f->ctx);
  wm_buf_init(&f->out.out);
  wm_buf_init(&f->late.out);
  f->late.label = "late";
  wm_ijoin_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.keysel2.fn = key_fn;
  cfg.lower = lo;
  cfg.upper = hi;
  cfg.lower_exclusive = lex;
  cfg.upper_exclusive = uex;
  if (late) cfg.late_tag[0] = cfg.late_tag[1] = "late";
  cfg.fn.join = join_fn;
  cfg.fn.ud = &f->calls;
  f->j = wm_ijoin_new(&f->ctx, "ijoin", &cfg);
  CHECK(f->j != NULL);
  wm_op *a = wm_op_new(&f->ctx, &src_vt, NULL, "left");
  wm_op *b = wm_op_new(&f->ctx, &src_vt, NULL, "right");
  wm_op_connect(a, 0, f->j);
  wm_ijoin_set_second_input(f->j, 1);
  wm_op_connect(b, 0, f->j);
  wm_op_connect(f->j, 0, wm_op_new(&f->ctx, &capture_vt, &f->out, "out"));
  if (late) wm_op_connect(f->j, wm_op_port(f->j, "late"), wm_op_new(&f->ctx, &capture_vt, &f->late, "late"));
  CHECK_I64(wm_ctx_prepare(&f->ctx), WM_OK);
}

static void teardown(fixture *f) {
  wm_ctx_free(&f->ctx);
  wm_buf_free(&f->out.out);
  wm_buf_free(&f->late.out);
}

static int L(fixture *f, int64_t v, int64_t ts) {
  wm_value x = wm_int(v);
  return wm_op_input_record(f->j, 0, &x, ts);
}
static int R(fixture *f, int64_t v, int64_t ts) {
  wm_value x = wm_int(v);
  return wm_op_input_record(f->j, 1, &x, ts);
}
static void W(fixture *f, int64_t w) {
  CHECK_I64(wm_op_input_watermark(f->j, 0, w), WM_OK);
  CHECK_I64(wm_op_input_watermark(f->j, 1, w), WM_OK);
}
static const char *out(fixture *f) { return f->out.out.data ? f->out.out.data : ""; }
static void clear(fixture *f) {
  f->out.out.len = 0;
  if (f->out.out.data) f->out.out.data[0] = 0;
}

static void bounds_and_order(void) {
  fixture f;
  T.current = "ijoin: bounds at their edges, order of the other side";
  setup(&f, -2, 3, false, false, 0);
  /* a = 101 at 10 meets rights in [8, 13] */
  L(&f, 101, 10);
  R(&f, 102, 8);  /* lower edge */
  R(&f, 103, 13); /* upper edge */
  R(&f, 104, 7);
  R(&f, 105, 14);
  CHECK_STR(out(&f), "10 1010102\n13 1010103\n");
  clear(&f);
  /* 106 at 11 meets [9, 14] in ascending ts: 103@13, 105@14; equal timestamps in arrival
   * order: 107 at 13 comes after 103 */
  R(&f, 107, 13);
  CHECK_STR(out(&f), "13 1010107\n");
  clear(&f);
  L(&f, 106, 11);
  CHECK_STR(out(&f), "13 1060103\n13 1060107\n14 1060105\n");
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 2);
  CHECK_I64(wm_ijoin_buffered(f.j, 1), 5);
  teardown(&f);

  T.current = "ijoin: exclusive bounds, lower == upper";
  setup(&f, -2, 3, true, true, 0); /* [-1, 2] */
  L(&f, 101, 10);
  R(&f, 102, 8);
  R(&f, 103, 9);
  R(&f, 104, 12);
  R(&f, 105, 13);
  CHECK_STR(out(&f), "10 1010103\n12 1010104\n");
  teardown(&f);
  setup(&f, 5, 5, false, true, 0); /* [5, 4]: nothing meets */
  L(&f, 101, 10);
  R(&f, 102, 15);
  CHECK_STR(out(&f), "");
  CHECK_I64(f.calls, 0);
  teardown(&f);
  setup(&f, 5, 5, false, false, 0);
  L(&f, 101, 10);
  R(&f, 102, 15);
  R(&f, 103, 14);
  CHECK_STR(out(&f), "15 1010102\n");
  teardown(&f);
}

static void late_records(void) {
  fixture f;
  T.current = "ijoin: late records per side, to the late port or counted";
  setup(&f, 0, 10, false, false, 1);
  L(&f, 101, -1000000); /* W is MIN: nothing is late */
  W(&f, 20);
  L(&f, 102, 19); /* late */
  R(&f, 103, 5);  /* late */
  R(&f, 104, 20); /* not late: meets no left (101 went at -999990) */
  CHECK_STR(out(&f), "");
  CHECK_STR(f.late.out.data, "late 19 102\nlate 5 103\n");
  CHECK_I64(wm_ijoin_late(f.j, 0), 1);
  CHECK_I64(wm_ijoin_late(f.j, 1), 1);
  CHECK_I64(f.j->m.late_side, 2);
  CHECK_I64(f.j->m.late_dropped, 0);
  teardown(&f);
  setup(&f, 0, 10, false, false, 0);
  W(&f, 20);
  L(&f, 102, 19);
  L(&f, 202, 19);
  R(&f, 103, 5);
  CHECK_I64(wm_ijoin_late(f.j, 0), 2);
  CHECK_I64(wm_ijoin_late(f.j, 1), 1);
  CHECK_I64(f.j->m.late_dropped, 3);
  CHECK_I64(wm_ijoin_keys(f.j), 0); /* a late record makes no key */
  teardown(&f);
}

static void errors(void) {
  fixture f;
  T.current = "ijoin: MIN timestamp, bad key";
  setup(&f, 0, 10, false, false, 0);
  CHECK_I64(R(&f, 101, WM_TIME_MIN), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&f.ctx), "record has no timestamp (math.mininteger)") != NULL);
  CHECK(strstr(wm_ctx_errtext(&f.ctx), "right input, record 101") != NULL);
  wm_value s = wm_cstr("x", 1); /* key_fn gives nil */
  CHECK_I64(wm_op_input_record(f.j, 0, &s, 5), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&f.ctx), "key is nil") != NULL);
  teardown(&f);
  /* the first keys of the two sides: a number and a string never meet */
  setup(&f, 0, 10, false, false, 0);
  CHECK_I64(L(&f, 101, 5), WM_OK);
  CHECK_I64(L(&f, -1, 5), WM_OK); /* a second key type on one side: allowed */
  CHECK_I64(R(&f, -2, 5), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&f.ctx), "left input's are numbers (first 1), the right input's strings "
                          "(first \"neg\")") != NULL);
  teardown(&f);
}

/* Cleanup at l.ts + upper / r.ts - lower, with the upper <= 0 / lower >= 0 cases. */
static void cleanup(void) {
  fixture f;
  T.current = "ijoin: cleanup times";
  setup(&f, -5, -2, false, false, 0); /* left at l.ts, right at r.ts + 5 */
  R(&f, 101, 7);
  L(&f, 102, 10); /* [5, 8] */
  CHECK_STR(out(&f), "10 1020101\n");
  CHECK_I64(wm_ijoin_timers(f.j), 2);
  W(&f, 9);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 1);
  W(&f, 10);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 0);
  CHECK_I64(wm_ijoin_buffered(f.j, 1), 1);
  W(&f, 11);
  CHECK_I64(wm_ijoin_buffered(f.j, 1), 1);
  W(&f, 12);
  CHECK_I64(wm_ijoin_buffered(f.j, 1), 0);
  CHECK_I64(wm_ijoin_keys(f.j), 0);
  CHECK_I64(wm_ijoin_timers(f.j), 0);
  teardown(&f);
  setup(&f, 2, 4, false, false, 0); /* left at l.ts + 4, right at r.ts */
  R(&f, 101, 12);
  L(&f, 102, 9);
  W(&f, 12);
  CHECK_I64(wm_ijoin_buffered(f.j, 1), 0);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 1);
  W(&f, 13);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 0);
  teardown(&f);
  /* one timer per (key, side, cleanup time): equal timestamps share it */
  setup(&f, 0, 5, false, false, 0);
  L(&f, 101, 10);
  L(&f, 102, 10);
  L(&f, 103, 11);
  L(&f, 201, 10);
  CHECK_I64(wm_ijoin_timers(f.j), 3);
  W(&f, 15); /* 101, 102, 201 go; 103 stays until 16 */
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 1);
  CHECK_I64(wm_ijoin_keys(f.j), 1);
  /* a record at W whose cleanup time has passed stays until the next watermark */
  teardown(&f);
  setup(&f, -3, 0, false, false, 0);
  W(&f, 10);
  L(&f, 101, 10);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 1);
  R(&f, 102, 10);
  CHECK_STR(out(&f), "10 1010102\n");
  W(&f, 11);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 0);
  teardown(&f);
}

/* Many keys come and go: the index's deletions keep every other key findable, and slots
 * are reused. */
static void many_keys(void) {
  fixture f;
  T.current = "ijoin: keys freed and reused";
  setup(&f, 0, 0, false, false, 0);
  /* keys k = 0..1999, one left record each at ts = k (value k * 100) */
  for (int64_t k = 0; k < 2000; k++) L(&f, k * 100, k);
  CHECK_I64(wm_ijoin_keys(f.j), 2000);
  W(&f, 999); /* the lefts of keys 0..999 go (cleanup at l.ts, upper = 0) */
  CHECK_I64(wm_ijoin_keys(f.j), 1000);
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 1000);
  /* rights of keys 1000..1999 at ts = k meet their left; a right of a new key 5000 meets
   * nothing */
  for (int64_t k = 1000; k < 2000; k++) R(&f, k * 100 + 1, k);
  R(&f, 500000, 5000);
  CHECK_I64(f.calls, 1000);
  CHECK_I64(wm_ijoin_keys(f.j), 1001);
  /* the last output line: key 1999 */
  CHECK(strstr(out(&f), "1999 1999199901\n") != NULL);
  /* new keys take the freed slots; the index still finds the old ones */
  for (int64_t k = 3000; k < 3500; k++) L(&f, k * 100, 6000);
  CHECK_I64(wm_ijoin_keys(f.j), 1501);
  clear(&f);
  R(&f, 1500 * 100 + 2, 1500); /* key 1500's left at 1500 is kept */
  CHECK_STR(out(&f), "1500 1500150002\n");
  W(&f, WM_TIME_MAX);
  CHECK_I64(wm_ijoin_keys(f.j), 0);
  CHECK_I64(wm_ijoin_buffered(f.j, 0) + wm_ijoin_buffered(f.j, 1), 0);
  teardown(&f);
}

/* Timestamps at the ends of the range: bounds saturate instead of wrapping. */
static void extremes(void) {
  fixture f;
  T.current = "ijoin: timestamps near MIN and MAX";
  setup(&f, -10, 10, false, false, 0);
  L(&f, 101, WM_TIME_MAX - 3);
  R(&f, 102, WM_TIME_MAX - 1);
  L(&f, 103, WM_TIME_MIN + 2);
  R(&f, 104, WM_TIME_MIN + 5);
  CHECK_I64(f.calls, 2);
  W(&f, WM_TIME_MAX - 1); /* the left at MAX - 3 goes at MAX (saturated), not before */
  CHECK_I64(wm_ijoin_buffered(f.j, 0), 1);
  W(&f, WM_TIME_MAX);
  CHECK_I64(wm_ijoin_keys(f.j), 0);
  teardown(&f);
}

/* The key index under random adds and removes (backward-shift deletion), against a plain
 * scan of the entries: keys are integers 0..299 in 64 entries, many colliding in 16 places. */
typedef struct kent {
  wm_value key;
  uint64_t hash;
  int live;
} kent;

static const wm_value *kent_key(void *ud, uint32_t i, uint64_t *hash) {
  const kent *e = &((const kent *)ud)[i];
  *hash = e->hash;
  return &e->key;
}

static void keyidx_random(void) {
  T.current = "keyidx: random adds and removes";
  kent ents[64];
  memset(ents, 0, sizeof ents);
  wm_keyidx x;
  CHECK_I64(wm_keyidx_init(&x, kent_key, ents), 0);
  uint64_t rng = 28;
  int bad = 0;
  for (int step = 0; step < 20000; step++) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t k = (int64_t)((rng >> 33) % 300);
    wm_value key = wm_int(k);
    uint64_t h = wm_key_hash(&key) & (step < 10000 ? 0xf : ~0ULL); /* collisions, then not */
    uint32_t want = WM_KEYIDX_NONE, free_at = WM_KEYIDX_NONE;
    for (uint32_t i = 0; i < 64; i++) {
      if (ents[i].live && ents[i].key.u.i == k) want = i;
      if (!ents[i].live && free_at == WM_KEYIDX_NONE) free_at = i;
    }
    if (step == 10000) { /* other hashes: empty everything */
      wm_keyidx_clear(&x);
      for (int i = 0; i < 64; i++) ents[i].live = 0;
      continue;
    }
    if (wm_keyidx_find(&x, &key, h) != want) bad++;
    if (want != WM_KEYIDX_NONE) {
      wm_keyidx_remove(&x, want);
      ents[want].live = 0;
    } else if (free_at != WM_KEYIDX_NONE) {
      ents[free_at] = (kent){key, h, 1};
      if (wm_keyidx_add(&x, free_at) != 0) bad++;
    }
  }
  CHECK_I64(bad, 0);
  size_t live = 0;
  for (int i = 0; i < 64; i++) live += ents[i].live;
  CHECK_I64(x.n, live);
  wm_keyidx_free(&x);
}

/* A sink that writes its records as capture does and its watermarks as "W w" lines. */
static int wcap_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  capture *c = op->impl;
  wm_buf_add_int(&c->out, ts);
  wm_buf_addc(&c->out, ' ');
  wm_format_value(&c->out, rec, 0, NULL, NULL);
  wm_buf_addc(&c->out, '\n');
  return WM_OK;
}
static int wcap_watermark(wm_op *op, int64_t w) {
  capture *c = op->impl;
  wm_buf_adds(&c->out, "W ");
  wm_buf_add_int(&c->out, w);
  wm_buf_addc(&c->out, '\n');
  return WM_OK;
}
static const wm_op_vt wcap_vt = {.kind = "capture", .record = wcap_record, .watermark = wcap_watermark};

/* An outer join between(lo, hi): outer sides, the watermark held back by delay. */
static void setup_outer(fixture *f, int64_t lo, int64_t hi, bool ol, bool orr, int64_t delay) {
  memset(f, 0, sizeof *f);
  wm_ctx_init(&f->ctx);
  wm_buf_init(&f->out.out);
  wm_buf_init(&f->late.out);
  wm_ijoin_config cfg = {0};
  cfg.keysel.fn = key_fn;
  cfg.keysel2.fn = key_fn;
  cfg.lower = lo;
  cfg.upper = hi;
  cfg.outer[0] = ol;
  cfg.outer[1] = orr;
  cfg.wm_delay = delay;
  cfg.fn.join = join_fn;
  cfg.fn.ud = &f->calls;
  f->j = wm_ijoin_new(&f->ctx, "ijoin", &cfg);
  CHECK(f->j != NULL);
  wm_op *a = wm_op_new(&f->ctx, &src_vt, NULL, "left");
  wm_op *b = wm_op_new(&f->ctx, &src_vt, NULL, "right");
  wm_op_connect(a, 0, f->j);
  wm_ijoin_set_second_input(f->j, 1);
  wm_op_connect(b, 0, f->j);
  wm_op_connect(f->j, 0, wm_op_new(&f->ctx, &wcap_vt, &f->out, "out"));
  CHECK_I64(wm_ctx_prepare(&f->ctx), WM_OK);
}

static void outer(void) {
  fixture f;
  T.current = "ijoin: FULL outer, padding at cleanup, the watermark held back";
  /* r meets l when l.ts - 2 <= r.ts <= l.ts + 3; a left record goes at l.ts + 3, a right one
   * at r.ts + 2; the watermark held back by max(3, 2) = 3 (Flink SQL's rule) */
  setup_outer(&f, -2, 3, true, true, 3);
  L(&f, 101, 10);
  R(&f, 102, 8); /* meets 101 */
  L(&f, 103, 20);
  R(&f, 104, 30); /* 103 meets [18, 23]: not 30 */
  CHECK_STR(out(&f), "10 1010102\n");
  clear(&f);
  /* W 22: 101 (at 13) and 102 (at 10) go, both met: nothing; out 22 - 3 */
  W(&f, 22);
  CHECK_STR(out(&f), "W 19\n");
  clear(&f);
  /* W 23: 103 goes, met nothing: padded at its own time, before the watermark */
  W(&f, 23);
  CHECK_STR(out(&f), "20 1030000\nW 20\n");
  clear(&f);
  /* 105 at 28 (in time) meets [26, 31]: 104 at 30; the pair carries 30 */
  L(&f, 105, 28);
  CHECK_STR(out(&f), "30 1050104\n");
  clear(&f);
  /* W 40: 105 (at 31) and 104 (at 32) go, both met: nothing */
  W(&f, 40);
  CHECK_STR(out(&f), "W 37\n");
  clear(&f);
  /* late (39 < 40): dropped and counted, never padded */
  L(&f, 106, 39);
  R(&f, 107, 41); /* in time, meets nothing: padded when W reaches 43 */
  W(&f, 42);
  CHECK_STR(out(&f), "W 39\n");
  clear(&f);
  CHECK_I64(wm_ijoin_late(f.j, 0), 1);
  /* the end: MAX passes unchanged, after the last padding */
  W(&f, WM_TIME_MAX);
  CHECK_STR(out(&f), "41 107\nW 9223372036854775807\n");
  teardown(&f);

  T.current = "ijoin: LEFT outer pads the left side only; no delay keeps the watermark";
  setup_outer(&f, 0, 5, true, false, 0);
  L(&f, 101, 10);
  R(&f, 202, 10); /* another key: meets nothing, not padded */
  W(&f, 15);
  CHECK_STR(out(&f), "10 1010000\nW 15\n");
  teardown(&f);
}

void test_ijoin(void) {
  outer();
  keyidx_random();
  bounds_and_order();
  late_records();
  errors();
  cleanup();
  many_keys();
  extremes();
}
