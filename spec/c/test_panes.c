/* Sliding windows in panes (core/ops/wm_winop.c, "panes"): the results of sum, min, max and
 * count, their order and the late records are those of Flink's per-window rules, computed
 * here by brute force. */
#include <stdlib.h>

#include "base/wm_buf.h"
#include "time/wm_time.h"
#include "ops/wm_winop.h"
#include "test.h"

enum { NREC = 3000, NKEY = 7, SIZE = 6000, SLIDE = 2000, BOUND = 300 };

static int agg = WM_AGG_SUM; /* the aggregation under test */

typedef struct rec {
  int key;
  int64_t ts;
  int64_t v;
  int is_float; /* v is sent as a float */
} rec;

/* One window of the brute-force model. */
typedef struct mwin {
  int key;
  int64_t start;
  int64_t first_ts; /* the first record's ts */
  int64_t sum; /* sum, min, max or count */
  int has_float;
  uint64_t seq; /* creation order */
  int open;
} mwin;

static int64_t floor_mod(int64_t a, int64_t b) {
  int64_t m = a % b;
  return m < 0 ? m + b : m;
}

static void add_line(wm_buf *out, const mwin *w) {
  char line[160];
  if (agg == WM_AGG_COUNT)
    snprintf(line, sizeof line, "%lld {\"count\":%lld,\"key\":\"k%d\",\"start\":%lld,\"stop\":%lld}\n",
             (long long)(w->start + SIZE - 1), (long long)w->sum, w->key, (long long)w->start,
             (long long)(w->start + SIZE));
  else if (w->has_float)
    snprintf(line, sizeof line, "%lld {\"id\":\"k%d\",\"ts\":%lld,\"vc\":%lld.0}\n",
             (long long)(w->start + SIZE - 1), w->key, (long long)w->first_ts, (long long)w->sum);
  else
    snprintf(line, sizeof line, "%lld {\"id\":\"k%d\",\"ts\":%lld,\"vc\":%lld}\n",
             (long long)(w->start + SIZE - 1), w->key, (long long)w->first_ts, (long long)w->sum);
  wm_buf_adds(out, line);
}

/* Fires the open windows with max_ts <= W, by max_ts and then creation order. */
static void model_fire(mwin *ws, size_t n, int64_t W, wm_buf *out) {
  for (;;) {
    mwin *best = NULL;
    for (size_t i = 0; i < n; i++) {
      mwin *w = &ws[i];
      if (!w->open || w->start + SIZE - 1 > W) continue;
      if (!best || w->start < best->start || (w->start == best->start && w->seq < best->seq))
        best = w;
    }
    if (!best) return;
    add_line(out, best);
    best->open = 0;
  }
}

/* Flink's rules record by record: a record goes to each of its windows that is not late
 * (max_ts > the watermark), creating it; it is late when all are; the watermark after it
 * is max_ts - BOUND - 1 when that grows; windows fire when it passes their max_ts. */
static int64_t model(const rec *rs, size_t n, wm_buf *out) {
  mwin *ws = calloc(n * (SIZE / SLIDE), sizeof *ws);
  size_t nw = 0;
  uint64_t seq = 0;
  int64_t W = WM_TIME_MIN, max_ts = WM_TIME_MIN, late = 0;
  for (size_t i = 0; i < n; i++) {
    const rec *r = &rs[i];
    int took = 0;
    int64_t last = r->ts - floor_mod(r->ts, SLIDE);
    for (int64_t st = last; st > r->ts - SIZE; st -= SLIDE) {
      if (st + SIZE - 1 <= W) continue;
      took = 1;
      mwin *w = NULL;
      for (size_t j = 0; j < nw && !w; j++)
        if (ws[j].open && ws[j].key == r->key && ws[j].start == st) w = &ws[j];
      if (!w) {
        w = &ws[nw++];
        *w = (mwin){r->key, st, r->ts, agg == WM_AGG_COUNT ? 0 : r->v, 0, seq++, 1};
      } else if (agg == WM_AGG_SUM) {
        w->sum += r->v;
      } else if (agg == WM_AGG_MIN) {
        if (r->v < w->sum) w->sum = r->v;
      } else if (agg == WM_AGG_MAX) {
        if (r->v > w->sum) w->sum = r->v;
      }
      if (agg == WM_AGG_COUNT) w->sum++;
      w->has_float |= r->is_float;
    }
    late += !took;
    if (r->ts > max_ts) max_ts = r->ts;
    if (max_ts - BOUND - 1 > W) {
      W = max_ts - BOUND - 1;
      model_fire(ws, nw, W, out);
    }
  }
  model_fire(ws, nw, WM_TIME_MAX, out);
  free(ws);
  return late;
}

/* The window operator (sliding SIZE/SLIDE, sum("vc"), key_by("id")) on the same records,
 * with the same watermarks. */
static int64_t engine(const rec *rs, size_t n, wm_buf *out, size_t *open_mid, size_t *panes_mid) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_winop_config cfg = {0};
  cfg.assigner.kind = WM_WA_SLIDING;
  cfg.assigner.size = SIZE;
  cfg.assigner.slide = SLIDE;
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  CHECK_I64(wm_winfn_builtin(&cfg.fn, agg, agg == WM_AGG_COUNT ? NULL : "vc"), 0);
  wm_op *w = wm_winop_new(&ctx, "window", &cfg);
  capture cap = {.label = NULL};
  wm_buf_init(&cap.out);
  wm_op *sink = wm_op_new(&ctx, &capture_vt, &cap, "sink");
  wm_op_connect(w, 0, sink);
  wm_op *src = wm_op_new(&ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, w);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  static const char *const names[] = {"id", "ts", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER};
  wm_schema *sc = wm_schema_new(3, names, types);
  int64_t max_ts = WM_TIME_MIN, W = WM_TIME_MIN;
  int ok = 1;
  for (size_t i = 0; i < n; i++) {
    char id[16];
    snprintf(id, sizeof id, "k%d", rs[i].key);
    wm_row *r = wm_row_new(sc);
    r->fields[0] = wm_cstr(id, strlen(id));
    wm_value_retain(NULL, &r->fields[0]); /* a copy of the bytes */
    r->fields[1] = wm_int(rs[i].ts);
    r->fields[2] = rs[i].is_float ? wm_float((double)rs[i].v) : wm_int(rs[i].v);
    wm_value v = wm_row_value(r);
    ok &= wm_op_input_record(w, 0, &v, rs[i].ts) == WM_OK;
    wm_value_release(NULL, &v);
    if (rs[i].ts > max_ts) max_ts = rs[i].ts;
    if (max_ts - BOUND - 1 > W) {
      W = max_ts - BOUND - 1;
      ok &= wm_op_input_watermark(w, 0, W) == WM_OK;
    }
    if (i == n / 2) {
      *open_mid = wm_winop_open_windows(w);
      *panes_mid = wm_winop_open_panes(w);
    }
  }
  ok &= wm_op_input_watermark(w, 0, WM_TIME_MAX) == WM_OK;
  CHECK(ok);
  CHECK_I64(wm_winop_open_windows(w), 0);
  int64_t late = (int64_t)w->m.late_dropped;
  wm_buf_adds(out, cap.out.data ? cap.out.data : "");
  wm_buf_free(&cap.out);
  wm_schema_release(sc);
  wm_ctx_free(&ctx);
  return late;
}

/* Records of NKEY keys, timestamps rising 10 ms a record with up to 600 ms of disorder
 * (more than BOUND: some records are late for some of their windows) and some 4-7 s late
 * (for most or all of their windows), values
 * of either sign; float_at >= 0 sends that record's value as a float. */
static void make(rec *rs, int float_at) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < NREC; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    rs[i].key = (int)(x % NKEY);
    rs[i].ts = 1700000000000 + (int64_t)i * 10 - (int64_t)((x >> 8) % 600);
    if (i % 97 == 50) rs[i].ts -= 4000 + (int64_t)((x >> 40) % 3000); /* late for most or all */
    rs[i].v = (int64_t)((x >> 20) % 2001) - 1000;
    rs[i].is_float = i == float_at;
  }
}

static void check_against_model(int float_at) {
  static rec rs[NREC];
  make(rs, float_at);
  wm_buf want, got;
  wm_buf_init(&want);
  wm_buf_init(&got);
  int64_t late_want = model(rs, NREC, &want);
  size_t open_mid = 0, panes_mid = 0;
  int64_t late_got = engine(rs, NREC, &got, &open_mid, &panes_mid);
  CHECK(late_want > 0); /* the input does have late records */
  CHECK_I64(late_got, late_want);
  CHECK_STR(got.data, want.data);
  /* windows open at the middle: each key has about SIZE / SLIDE + 1 windows open (the
   * count leaves the panes out) */
  CHECK(open_mid >= NKEY * (SIZE / SLIDE) && open_mid <= NKEY * (SIZE / SLIDE + 2));
  /* in panes while every value is an integer: about as many panes as windows; after a
   * float value, none */
  if (float_at < 0 || float_at > NREC / 2)
    CHECK(panes_mid >= NKEY * (SIZE / SLIDE) && panes_mid <= NKEY * (SIZE / SLIDE + 2));
  else
    CHECK_I64(panes_mid, 0);
  wm_buf_free(&want);
  wm_buf_free(&got);
}

void test_panes(void) {
  static const struct {
    int agg;
    const char *name;
  } aggs[] = {{WM_AGG_MIN, "panes: sliding min equals the per-window rules"},
              {WM_AGG_MAX, "panes: sliding max equals the per-window rules"},
              {WM_AGG_COUNT, "panes: sliding count equals the per-window rules"},
              {WM_AGG_SUM, "panes: sliding sum equals the per-window rules"}};
  for (size_t a = 0; a < sizeof aggs / sizeof *aggs; a++) {
    agg = aggs[a].agg;
    T.current = aggs[a].name;
    check_against_model(-1);
  }
  T.current = "panes: a float value in the middle goes back to windows, exactly";
  check_against_model(NREC / 2);
  T.current = "panes: a float value first";
  check_against_model(0);
}
