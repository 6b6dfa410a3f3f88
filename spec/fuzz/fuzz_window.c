/* libFuzzer target: a sequence of random operations on the window operator (core/ops) and
 * the watermark combiner (core/time) against the invariants of semantics.md:
 *   - watermarks never go back (the operator's combined input watermark and what it emits);
 *   - no window fires twice on time (firings during a watermark or status change), and a
 *     window fires on time only once the watermark has passed its end;
 *   - nothing is lost: every record is in a result (the last firing of its window), in the
 *     late side output or in the late-drop counter (tumbling and session windows);
 *   - after the final watermark no window state is left.
 * Input: byte 0 the assigner (tumbling, sliding, session), the allowed lateness and whether
 * late records go to a side output; byte 1 the window size; then two bytes per operation on
 * one of two input channels: a record (key, timestamp around the channel's watermark), a
 * watermark (forwards or backwards), idle or active. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph/wm_graph.h"
#include "graph/wm_observe.h"
#include "ops/wm_winop.h"
#include "time/wm_time.h"

#define MAXWIN 4096

typedef struct fired {
  int key;
  int64_t start, stop, count;
  int ontime; /* on-time firings */
} fired;

typedef struct harness {
  wm_op *win;
  int in_watermark;   /* inside a watermark or status call: firings are on time */
  int64_t out_wm;     /* the last watermark the window operator emitted */
  fired w[MAXWIN];
  int nw;
  uint64_t late_out;
  uint64_t in_results; /* the last counts of the windows whose state was deleted */
} harness;

static harness H;
static int verbose; /* FUZZ_VERBOSE=1: print the operations and firings (to study a find) */

static const wm_value *field(const wm_row *r, const char *name) {
  int i = wm_schema_find(r->schema, name);
  ASSERT(i >= 0);
  return &r->fields[i];
}

static int key_of(const wm_value *k) {
  size_t kl;
  ASSERT(k && wm_value_is_string(k));
  const char *ks = wm_value_str(k, &kl);
  ASSERT(kl == 2 && ks[0] == 'k');
  return ks[1] - '0';
}

static int main_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)op;
  (void)chan;
  ASSERT(rec->type == WM_ROW);
  const wm_row *r = rec->u.row;
  const wm_value *k = field(r, "key"), *c = field(r, "count"), *s = field(r, "start"),
                 *e = field(r, "stop");
  ASSERT(wm_value_is_string(k) && c->type == WM_INT && s->type == WM_INT && e->type == WM_INT);
  int key = key_of(k);
  ASSERT(ts == e->u.i - 1);          /* results carry the window's max timestamp */
  ASSERT(ts <= H.win->wm);           /* fired only once the watermark passed the end */
  ASSERT(c->u.i > 0);
  int i;
  for (i = 0; i < H.nw; i++)
    if (H.w[i].key == key && H.w[i].start == s->u.i && H.w[i].stop == e->u.i) break;
  if (i == H.nw) {
    ASSERT(H.nw < MAXWIN);
    H.w[H.nw++] = (fired){.key = key, .start = s->u.i, .stop = e->u.i};
  }
  H.w[i].count = c->u.i;
  if (verbose)
    fprintf(stderr, "  fire k%d [%" PRId64 ", %" PRId64 ") count %" PRId64 "%s\n", key, s->u.i,
            e->u.i, c->u.i, H.in_watermark ? " (on time)" : " (late firing)");
  if (H.in_watermark) {
    H.w[i].ontime++;
    ASSERT(H.w[i].ontime == 1); /* no window fires twice on time */
  }
  return WM_OK;
}

static int main_watermark(wm_op *op, int64_t wm) {
  (void)op;
  ASSERT(wm > H.out_wm);
  H.out_wm = wm;
  return WM_OK;
}

static int late_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)op;
  (void)chan;
  (void)rec;
  (void)ts;
  H.late_out++;
  if (verbose) fprintf(stderr, "  late record at %" PRId64 "\n", ts);
  return WM_OK;
}

static const wm_op_vt main_vt = {.kind = "main", .record = main_record, .watermark = main_watermark};
static const wm_op_vt late_vt = {.kind = "late", .record = late_record};
static const wm_op_vt src_vt = {.kind = "src"};

/* A window's state is deleted: its last firing is its result (a session window merged into
 * another one is not deleted but replaced, and counts in the window it became). */
static void observe(void *ud, const wm_op *op, const wm_obs *ev) {
  (void)ud;
  if (op != H.win || ev->kind != WM_OBS_CLEANUP) return;
  int key = key_of(ev->key);
  for (int i = 0; i < H.nw; i++)
    if (H.w[i].key == key && H.w[i].start == ev->window.start && H.w[i].stop == ev->window.stop) {
      H.in_results += (uint64_t)H.w[i].count;
      if (verbose)
        fprintf(stderr, "  cleanup k%d [%" PRId64 ", %" PRId64 ")\n", key, ev->window.start,
                ev->window.stop);
      H.w[i] = H.w[--H.nw];
      return;
    }
  /* a window cleaned up without a firing held nothing (a firing of nothing emits nothing) */
}

static void trace(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status) {
  (void)ud;
  (void)chan;
  if (op == H.win && !status) ASSERT(new_wm > old_wm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int64_t lateness[] = {0, 1000, 3000, 10000};
  if (size < 2 || size > 2 + 2 * 2000) return 0;
  memset(&H, 0, sizeof H);
  verbose = getenv("FUZZ_VERBOSE") != NULL;
  H.out_wm = WM_TIME_MIN;
  int kind = data[0] & 3;
  if (kind == 0) kind = WM_WA_TUMBLING;
  int64_t size_ms = ((data[1] & 7) + 1) * 1000;
  wm_winop_config cfg = {0};
  cfg.assigner.kind = kind;
  cfg.assigner.size = size_ms;
  cfg.assigner.slide = size_ms / (((data[1] >> 3) & 3) + 1);
  cfg.assigner.gap = size_ms;
  cfg.lateness = lateness[(data[0] >> 2) & 3];
  int side = (data[0] >> 4) & 1;
  cfg.late_tag = side ? "late" : NULL;
  const char *key = "id";

  wm_ctx ctx;
  wm_ctx_init(&ctx);
  ctx.trace = trace;
  ctx.observe = observe;
  ASSERT(wm_keysel_fields(&cfg.keysel, &key, 1) == 0);
  ASSERT(wm_winfn_builtin(&cfg.fn, WM_AGG_COUNT, NULL) == 0);
  wm_op *w = wm_winop_new(&ctx, "window", &cfg);
  ASSERT(w);
  H.win = w;
  wm_op *m = wm_op_new(&ctx, &main_vt, NULL, "main");
  ASSERT(m && wm_op_connect(w, 0, m) >= 0);
  if (side) {
    wm_op *l = wm_op_new(&ctx, &late_vt, NULL, "late");
    ASSERT(l && wm_op_connect(w, wm_op_port(w, "late"), l) >= 0);
  }
  wm_op *a = wm_op_new(&ctx, &src_vt, NULL, "a"), *b = wm_op_new(&ctx, &src_vt, NULL, "b");
  int chans[2] = {wm_op_connect(a, 0, w), wm_op_connect(b, 0, w)};
  ASSERT(chans[0] >= 0 && chans[1] >= 0);
  ASSERT(wm_ctx_prepare(&ctx) == WM_OK);

  static const char *const names[] = {"id", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER};
  wm_schema *sc = wm_schema_new(2, names, types);
  ASSERT(sc);
  static const char *const keys[] = {"k0", "k1", "k2", "k3"};
  int64_t chan_wm[2] = {0, 0};
  uint64_t records = 0;
  for (size_t i = 2; i + 1 < size; i += 2) {
    uint8_t op = data[i], arg = data[i + 1];
    int ch = (op >> 3) & 1;
    switch (op & 7) {
    case 0: case 1: case 2: case 3: { /* a record around the channel's watermark */
      int64_t ts = chan_wm[ch] + (int64_t)(int8_t)arg * 100;
      if (ts < 0) ts = 0;
      wm_row *r = wm_row_new(sc);
      ASSERT(r);
      r->fields[0] = wm_cstr(keys[(op >> 4) & 3], 2);
      r->fields[1] = wm_int((int64_t)i);
      wm_value v = wm_row_value(r);
      records++;
      if (verbose) fprintf(stderr, "record k%d at %" PRId64 " on %d (wm %" PRId64 ")\n", (op >> 4) & 3, ts, ch, w->wm);
      ASSERT(wm_op_input_record(w, chans[ch], &v, ts) == WM_OK);
      wm_value_release(NULL, &v);
      break;
    }
    case 4: case 5: /* a watermark, forwards or (ignored by the combiner) backwards */
      chan_wm[ch] += (int64_t)(int8_t)arg * 50;
      if (chan_wm[ch] < 0) chan_wm[ch] = 0;
      H.in_watermark = 1;
      if (verbose) fprintf(stderr, "watermark %" PRId64 " on %d\n", chan_wm[ch], ch);
      ASSERT(wm_op_input_watermark(w, chans[ch], chan_wm[ch]) == WM_OK);
      H.in_watermark = 0;
      break;
    case 6: /* idle or active */
      H.in_watermark = 1;
      if (verbose) fprintf(stderr, "%s on %d\n", arg & 1 ? "idle" : "active", ch);
      ASSERT(wm_op_input_status(w, chans[ch], arg & 1) == WM_OK);
      H.in_watermark = 0;
      break;
    default: break;
    }
  }
  /* the end of input: both channels active, then the end of time */
  H.in_watermark = 1;
  for (int ch = 0; ch < 2; ch++) ASSERT(wm_op_input_status(w, chans[ch], false) == WM_OK);
  for (int ch = 0; ch < 2; ch++) ASSERT(wm_op_input_watermark(w, chans[ch], WM_TIME_MAX) == WM_OK);
  H.in_watermark = 0;
  ASSERT(w->wm == WM_TIME_MAX);
  ASSERT(wm_winop_open_windows(w) == 0);
  if (side) ASSERT(w->m.late_dropped == 0);
  if (kind != WM_WA_SESSION) ASSERT(H.nw == 0); /* every window that fired was cleaned up */
  if (kind != WM_WA_SLIDING) { /* sliding windows hold a record several times */
    if (H.in_results + H.late_out + w->m.late_dropped != records) {
      fprintf(stderr, "fuzz_window: %" PRIu64 " records, %" PRIu64 " in results, %" PRIu64
              " late, %" PRIu64 " dropped\n", records, H.in_results, H.late_out, w->m.late_dropped);
      abort();
    }
  }
  wm_schema_release(sc);
  wm_ctx_free(&ctx);
  return 0;
}
