/* The window operator's fast paths against its general path (core/ops/wm_winop_record.c):
 * random streams (keys short and long, strings and integers; values integers and floats;
 * rows of two schemas; timestamps out of order; watermarks that make records late; allowed
 * lateness with and without a side output) go through two operators built alike, one with
 * the fast paths on (the default) and one with them forced off (wm_winop_set_fast_paths).
 * After every event their outputs, and at random points (and at the end) their snapshots,
 * must be the same bytes. The general path is the reference: nothing here computes an
 * expected result, the test only checks that the two paths agree, and that the fast paths
 * took records at all where they apply (wm_winop_fast_hits). */
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_snapshot.h"
#include "ops/wm_winop.h"
#include "time/wm_time.h"
#include "test.h"

/* a small deterministic generator (xorshift64*): the same streams on every run */
static uint64_t rng_next(uint64_t *st) {
  uint64_t x = *st;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *st = x;
  return x * 0x2545f4914f6cdd1dULL;
}
static int64_t rng_below(uint64_t *st, int64_t n) { return (int64_t)(rng_next(st) % (uint64_t)n); }

/* ---- window functions written here: a reduce and a process function ------------------- */

/* reduce: aux is the integer sum of vc (floats truncated), acc the number of records */
static int red_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  (void)ud, (void)op;
  const wm_value *v = &rec->u.row->fields[2];
  int64_t x = v->type == WM_INT ? v->u.i : v->type == WM_FLOAT ? (int64_t)v->u.f : 0;
  *aux = wm_int(aux->type == WM_INT ? (int64_t)((uint64_t)aux->u.i + (uint64_t)x) : x);
  *acc = wm_int(acc->type == WM_INT ? acc->u.i + 1 : 1);
  return WM_OK;
}
static int red_merge(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *bacc,
                     const wm_value *baux) {
  (void)ud, (void)op;
  aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)baux->u.i);
  acc->u.i += bacc->u.i;
  return WM_OK;
}
static int red_fire(void *ud, wm_op *op, const wm_fire *f) {
  (void)ud;
  wm_value v = wm_int(f->aux->u.i * 1000 + f->acc->u.i);
  return wm_op_emit(op, 0, &v, f->max_ts);
}
/* process: every record kept; fires the first record's key field and the count */
static int proc_fire(void *ud, wm_op *op, const wm_fire *f) {
  (void)ud;
  if (f->nitems == 0) return WM_OK;
  wm_value v = wm_int((int64_t)f->nitems * 7 + f->window.start % 1000);
  int rc = wm_op_emit(op, 0, &v, f->max_ts);
  if (rc != WM_OK) return rc;
  return wm_op_emit(op, 0, &f->items[0], f->max_ts);
}

enum { FN_SUM = 1, FN_MIN, FN_MAX, FN_MIN_BY, FN_MAX_BY, FN_COUNT, FN_REDUCE, FN_PROCESS };

typedef struct dcase {
  const char *name;
  int kind;            /* WM_WA_* */
  int64_t size, slide; /* slide: sliding; size: the gap for sessions */
  int64_t lateness;
  int side;            /* late records to a side output */
  int fn;              /* FN_* */
  int fast;            /* 1: a fast path applies (its hits are checked) */
} dcase;

static const dcase cases[] = {
    {"tumbling sum", WM_WA_TUMBLING, 5000, 0, 0, 0, FN_SUM, 1},
    {"tumbling sum, lateness, side", WM_WA_TUMBLING, 5000, 0, 1500, 1, FN_SUM, 1},
    {"tumbling sum, lateness", WM_WA_TUMBLING, 2000, 0, 700, 0, FN_SUM, 1},
    {"tumbling min", WM_WA_TUMBLING, 5000, 0, 0, 1, FN_MIN, 0},
    {"tumbling count", WM_WA_TUMBLING, 3000, 0, 1000, 1, FN_COUNT, 0},
    {"tumbling reduce", WM_WA_TUMBLING, 5000, 0, 1000, 1, FN_REDUCE, 0},
    {"tumbling process", WM_WA_TUMBLING, 4000, 0, 500, 1, FN_PROCESS, 0},
    {"sliding sum (panes)", WM_WA_SLIDING, 10000, 2000, 0, 0, FN_SUM, 1},
    {"sliding sum (panes), side", WM_WA_SLIDING, 6000, 2000, 0, 1, FN_SUM, 1},
    {"sliding count (panes)", WM_WA_SLIDING, 9000, 3000, 0, 1, FN_COUNT, 1},
    {"sliding min (panes)", WM_WA_SLIDING, 6000, 1000, 0, 0, FN_MIN, 1},
    {"sliding max (panes)", WM_WA_SLIDING, 4000, 2000, 0, 1, FN_MAX, 1},
    {"sliding sum, lateness", WM_WA_SLIDING, 10000, 2000, 1500, 1, FN_SUM, 0},
    {"sliding max_by", WM_WA_SLIDING, 6000, 2000, 0, 1, FN_MAX_BY, 0},
    {"sliding reduce", WM_WA_SLIDING, 6000, 3000, 500, 1, FN_REDUCE, 0},
    {"session sum", WM_WA_SESSION, 3000, 0, 0, 1, FN_SUM, 0},
    {"session sum, lateness", WM_WA_SESSION, 2000, 0, 1000, 1, FN_SUM, 0},
    {"session reduce", WM_WA_SESSION, 2500, 0, 500, 0, FN_REDUCE, 0},
    {"session process", WM_WA_SESSION, 3000, 0, 0, 1, FN_PROCESS, 0},
    {"session min_by", WM_WA_SESSION, 3000, 0, 0, 0, FN_MIN_BY, 0},
};

typedef struct side {
  wm_ctx ctx;
  capture out, late;
  wm_op *w;
} side;

static int build(side *sd, const dcase *c, bool fast) {
  wm_ctx_init(&sd->ctx);
  wm_winop_config cfg = {0};
  cfg.assigner.kind = c->kind;
  if (c->kind == WM_WA_SESSION) {
    cfg.assigner.gap = c->size;
  } else {
    cfg.assigner.size = c->size;
    cfg.assigner.slide = c->kind == WM_WA_SLIDING ? c->slide : c->size;
  }
  cfg.lateness = c->lateness;
  cfg.late_tag = c->side ? "late" : NULL;
  const char *key = "id";
  if (wm_keysel_fields(&cfg.keysel, &key, 1) != 0) return -1;
  static const int aggs[] = {0, WM_AGG_SUM, WM_AGG_MIN, WM_AGG_MAX, WM_AGG_MIN_BY, WM_AGG_MAX_BY,
                             WM_AGG_COUNT};
  if (c->fn <= FN_COUNT) {
    if (wm_winfn_builtin(&cfg.fn, aggs[c->fn], "vc") != 0) return -1;
  } else if (c->fn == FN_REDUCE) {
    cfg.fn = (wm_winfn){.add = red_add, .fire = red_fire, .merge = red_merge};
  } else {
    cfg.fn = (wm_winfn){.list = 1, .fire = proc_fire};
  }
  sd->w = wm_winop_new(&sd->ctx, "window", &cfg);
  if (!sd->w) return -1;
  wm_winop_set_fast_paths(sd->w, fast);
  sd->out = (capture){.label = NULL};
  sd->late = (capture){.label = "late"};
  wm_buf_init(&sd->out.out);
  wm_buf_init(&sd->late.out);
  wm_op *m = wm_op_new(&sd->ctx, &capture_vt, &sd->out, "main");
  wm_op *l = wm_op_new(&sd->ctx, &capture_vt, &sd->late, "late");
  wm_op_connect(sd->w, 0, m);
  if (c->side) wm_op_connect(sd->w, wm_op_port(sd->w, "late"), l);
  else wm_op_connect(m, 0, l);
  wm_op_connect(wm_op_new(&sd->ctx, &capture_vt, NULL, "src"), 0, sd->w);
  return wm_ctx_prepare(&sd->ctx);
}

static void side_free(side *sd) {
  wm_ctx_free(&sd->ctx);
  wm_buf_free(&sd->out.out);
  wm_buf_free(&sd->late.out);
}

/* every part of a snapshot, name and bytes, into one buffer */
static int put_all(void *ud, const char *name, const void *data, size_t len, wm_error *err) {
  (void)err;
  wm_buf *b = ud;
  wm_buf_adds(b, name);
  wm_buf_addc(b, '\0');
  wm_buf_add_int(b, (int64_t)len);
  wm_buf_add(b, data, len);
  return 0;
}

static bool snapshots_equal(side *a, side *b) {
  wm_buf x, y;
  wm_buf_init(&x);
  wm_buf_init(&y);
  int ra = wm_ctx_snapshot(&a->ctx, 0, NULL, put_all, &x);
  int rb = wm_ctx_snapshot(&b->ctx, 0, NULL, put_all, &y);
  bool eq = ra == WM_OK && rb == WM_OK && x.len == y.len && x.len > 0 &&
            memcmp(x.data, y.data, x.len) == 0;
  wm_buf_free(&x);
  wm_buf_free(&y);
  return eq;
}

static bool bufs_equal(const wm_buf *x, const wm_buf *y) {
  return x->len == y->len && (x->len == 0 || memcmp(x->data, y->data, x->len) == 0);
}

/* a record: id (a short or long string, or now and then an integer), ts, vc (an integer,
 * now and then a float); now and then a row of the other schema (fields in another order) */
static wm_value make_record(uint64_t *st, wm_schema *s1, wm_schema *s2, int64_t ts) {
  static const char *const keys[] = {"a", "b", "k1", "k22", "k333", "k4444", "key-55555",
                                     "kkkkkkkk", "a-longer-key-6", "x"};
  bool other = rng_below(st, 20) == 0;
  wm_row *r = wm_row_new(other ? s2 : s1);
  int ki = other ? 1 : 0, ti = other ? 2 : 1, vi = other ? 0 : 2;
  if (rng_below(st, 25) == 0) {
    r->fields[ki] = wm_int(rng_below(st, 4));
  } else {
    const char *k = keys[rng_below(st, 10)];
    wm_str *str = wm_str_new(k, strlen(k));
    r->fields[ki] = (wm_value){.type = WM_STR, .u.s = str};
  }
  r->fields[ti] = wm_int(ts);
  int64_t x = rng_below(st, 200) - 50;
  r->fields[vi] = rng_below(st, 30) == 0 ? wm_float((double)x + 0.5) : wm_int(x);
  return wm_row_value(r);
}

/* One random stream of n events through both sides; false at the first difference. */
static bool run_stream(const dcase *c, uint64_t seed, int n, uint64_t *hits) {
  side a, b;
  if (build(&a, c, true) != WM_OK || build(&b, c, false) != WM_OK) {
    fprintf(stderr, "FAIL %s: %s: cannot build: %s %s\n", T.current, c->name, wm_ctx_errtext(&a.ctx),
            wm_ctx_errtext(&b.ctx));
    T.failed++;
    return false;
  }
  static const char *const n1[] = {"id", "ts", "vc"}, *const n2[] = {"vc", "id", "ts"};
  static const uint8_t t1[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER},
                       t2[] = {WM_FT_INTEGER, WM_FT_STRING, WM_FT_INTEGER};
  wm_schema *s1 = wm_schema_new(3, n1, t1), *s2 = wm_schema_new(3, n2, t2);
  uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 1;
  int64_t base = 1700000000000 + rng_below(&st, 100000), max_ts = base;
  int64_t bound = rng_below(&st, 4) * 1000; /* out-of-orderness the watermarks allow */
  bool ok = true;
  const char *what = "";
  int at = 0;
  for (int i = 0; i < n && ok; i++) {
    at = i;
    int64_t r = rng_below(&st, 100);
    if (r < 80) {
      /* forward mostly; back by up to 12 s (often late at the bounds below) */
      int64_t ts = base + rng_below(&st, 1500) - (rng_below(&st, 4) == 0 ? rng_below(&st, 12000) : 0);
      if (rng_below(&st, 4) == 0) ts = ts / 500 * 500 - rng_below(&st, 2); /* at a window's edge */
      if (ts > base) base = ts;
      if (ts > max_ts) max_ts = ts;
      wm_value v = make_record(&st, s1, s2, ts);
      int ra = wm_op_input_record(a.w, 0, &v, ts), rb = wm_op_input_record(b.w, 0, &v, ts);
      wm_value_release(NULL, &v);
      if (ra != rb || ra != WM_OK) ok = false, what = "a record's result code";
    } else if (r < 95) {
      /* now and then exactly at the end (or cleanup) of some window: every size, slide, gap
       * and lateness below is a multiple of 100 */
      int64_t W = max_ts - bound - 1;
      if (rng_below(&st, 2) == 0) W = (max_ts - bound) / 100 * 100 - 1;
      int ra = wm_op_input_watermark(a.w, 0, W), rb = wm_op_input_watermark(b.w, 0, W);
      if (ra != rb || ra != WM_OK) ok = false, what = "a watermark's result code";
    } else if (!snapshots_equal(&a, &b)) {
      ok = false, what = "a snapshot";
    }
    if (ok && !(bufs_equal(&a.out.out, &b.out.out) && bufs_equal(&a.late.out, &b.late.out)))
      ok = false, what = "the output";
  }
  if (ok) {
    wm_op_input_watermark(a.w, 0, WM_TIME_MAX);
    wm_op_input_watermark(b.w, 0, WM_TIME_MAX);
    if (!(bufs_equal(&a.out.out, &b.out.out) && bufs_equal(&a.late.out, &b.late.out)))
      ok = false, what = "the output at the end";
    else if (!snapshots_equal(&a, &b))
      ok = false, what = "the snapshot at the end";
    else if (a.w->m.late_dropped != b.w->m.late_dropped || a.w->m.late_side != b.w->m.late_side)
      ok = false, what = "the late counts";
    else if (a.out.out.len == 0)
      ok = false, what = "an empty output (the stream tested nothing)";
  }
  if (!ok)
    fprintf(stderr, "FAIL %s: %s, seed %llu: %s differs at event %d\n  fast:\n%.2000s\n  general:\n%.2000s\n",
            T.current, c->name, (unsigned long long)seed, what, at,
            a.out.out.data ? a.out.out.data : "", b.out.out.data ? b.out.out.data : "");
  *hits += wm_winop_fast_hits(a.w);
  if (wm_winop_fast_hits(b.w) != 0) ok = false; /* forced off: none */
  wm_schema_release(s1);
  wm_schema_release(s2);
  side_free(&a);
  side_free(&b);
  return ok;
}

void test_winop_diff(void) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const dcase *c = &cases[k];
    uint64_t hits = 0;
    int bad = 0;
    for (uint64_t seed = 1; seed <= 40 && bad == 0; seed++)
      bad += !run_stream(c, seed * 131 + k, 400, &hits);
    CHECK_I64(bad, 0);
    if (c->fast && hits == 0) fprintf(stderr, "FAIL %s: %s: no fast path hit\n", T.current, c->name);
    CHECK(!c->fast || hits > 0);
  }
}
