#include "time/wm_time.h"
#include "time/wm_watermark.h"
#include "test.h"

void test_watermark(void) {
  /* bounded out-of-orderness: emits max_ts - d - 1; nothing seen: MIN (no overflow) */
  wm_gen g;
  int64_t w;
  wm_gen_init(&g, WM_GEN_BOUNDED, 2000);
  CHECK(wm_gen_on_periodic(&g, &w));
  CHECK_I64(w, WM_TIME_MIN);
  static const struct {
    int64_t ts, wm;
  } steps[] = {{1000, -1001}, {8000, 5999}, {3000, 5999}, {9000, 6999}, {8999, 6999}};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    wm_gen_on_event(&g, steps[i].ts);
    CHECK(wm_gen_on_periodic(&g, &w));
    CHECK_I64(w, steps[i].wm);
  }
  /* monotonous: d = 0 */
  wm_gen_init(&g, WM_GEN_BOUNDED, 0);
  wm_gen_on_event(&g, 1461756862000);
  wm_gen_on_periodic(&g, &w);
  CHECK_I64(w, 1461756861999);
  /* no watermarks */
  wm_gen_init(&g, WM_GEN_NONE, 0);
  wm_gen_on_event(&g, 5);
  CHECK(!wm_gen_on_periodic(&g, &w));

  /* combining two channels: the minimum, forwarded only when it increases */
  wm_combiner c;
  CHECK_I64(wm_combiner_init(&c, 2), 0);
  CHECK_I64(wm_combiner_watermark(&c, 0, 100), 0); /* channel 1 still at MIN */
  CHECK_I64(c.out, WM_TIME_MIN);
  CHECK_I64(wm_combiner_watermark(&c, 1, 50), WM_COMB_ADVANCED);
  CHECK_I64(c.out, 50);
  CHECK_I64(wm_combiner_watermark(&c, 1, 40), 0); /* a channel never goes back */
  CHECK_I64(wm_combiner_watermark(&c, 1, 200), WM_COMB_ADVANCED);
  CHECK_I64(c.out, 100);
  /* an idle channel does not hold the minimum back */
  CHECK_I64(wm_combiner_watermark(&c, 1, 300), 0);
  CHECK_I64(wm_combiner_status(&c, 0, true), WM_COMB_ADVANCED);
  CHECK_I64(c.out, 300);
  /* all idle: forward idle, no watermark */
  CHECK_I64(wm_combiner_status(&c, 1, true), WM_COMB_IDLE);
  CHECK(c.out_idle);
  /* channel 0 returns at 100, below the output 300: it does not pull it back, and it
   * does not count until it catches up */
  CHECK_I64(wm_combiner_status(&c, 0, false), WM_COMB_ACTIVE);
  CHECK_I64(c.out, 300);
  CHECK_I64(wm_combiner_watermark(&c, 0, 250), 0);
  CHECK_I64(c.out, 300);
  CHECK_I64(wm_combiner_watermark(&c, 0, 400), WM_COMB_ADVANCED);
  CHECK_I64(c.out, 400);
  /* a watermark on an idle channel makes it active */
  CHECK_I64(wm_combiner_watermark(&c, 1, 500) & WM_COMB_ADVANCED, 0); /* min(400, 500) */
  CHECK(!c.ch[1].idle);
  CHECK_I64(c.out, 400);
  CHECK_I64(wm_combiner_watermark(&c, 0, 600), WM_COMB_ADVANCED);
  CHECK_I64(c.out, 500);
  wm_combiner_free(&c);

  /* every channel idle: the valve flushes (semantics.md §3, Flink's StatusWatermarkValve).
   * Each case starts from fresh channels at MIN; a step is a watermark (W) or a status
   * (I idle, A active) on a channel, with the events and the output expected after it. */
  enum { W, I, A };
  static const struct {
    int ncase, n; /* case number (a fresh combiner when it changes), its channels */
    int what, ch;
    int64_t wm;   /* W: the watermark */
    int ev;
    int64_t out;
  } flush[] = {
      /* docs/testing.md's recipe: a at 7999, b holds 1999; a idle, then b idle: max 7999 */
      {1, 2, W, 0, 7999, 0, WM_TIME_MIN},
      {1, 2, W, 1, 1999, WM_COMB_ADVANCED, 1999},
      {1, 2, I, 0, 0, 0, 1999},
      {1, 2, I, 1, 0, WM_COMB_ADVANCED | WM_COMB_IDLE, 7999},
      /* the other order: b idle lets a's 7999 through; a idle then flushes nothing more */
      {2, 2, W, 0, 7999, 0, WM_TIME_MIN},
      {2, 2, W, 1, 1999, WM_COMB_ADVANCED, 1999},
      {2, 2, I, 1, 0, WM_COMB_ADVANCED, 7999},
      {2, 2, I, 0, 0, WM_COMB_IDLE, 7999},
      /* a channel that never had a watermark holds MIN; its idleness flushes the other's */
      {3, 2, W, 0, 5000, 0, WM_TIME_MIN},
      {3, 2, I, 0, 0, 0, WM_TIME_MIN},
      {3, 2, I, 1, 0, WM_COMB_ADVANCED | WM_COMB_IDLE, 5000},
      /* one channel: its watermark is the output already, nothing to flush */
      {4, 1, W, 0, 50, WM_COMB_ADVANCED, 50},
      {4, 1, I, 0, 0, WM_COMB_IDLE, 50},
      {4, 1, A, 0, 0, WM_COMB_ACTIVE, 50},
      {4, 1, W, 0, 60, WM_COMB_ADVANCED, 60},
      /* a channel back from idle below the output (not aligned) turns idle again: its
       * watermark is not the output, so no flush */
      {5, 2, W, 0, 100, 0, WM_TIME_MIN},
      {5, 2, W, 1, 300, WM_COMB_ADVANCED, 100},
      {5, 2, I, 0, 0, WM_COMB_ADVANCED, 300},
      {5, 2, I, 1, 0, WM_COMB_IDLE, 300},
      {5, 2, A, 0, 0, WM_COMB_ACTIVE, 300},
      {5, 2, I, 0, 0, WM_COMB_IDLE, 300},
      /* three channels, the last to turn idle holds the output: max of all three */
      {6, 3, W, 0, 10, 0, WM_TIME_MIN},
      {6, 3, W, 1, 30, 0, WM_TIME_MIN},
      {6, 3, W, 2, 20, WM_COMB_ADVANCED, 10},
      {6, 3, I, 1, 0, 0, 10},
      {6, 3, I, 2, 0, 0, 10},
      {6, 3, I, 0, 0, WM_COMB_ADVANCED | WM_COMB_IDLE, 30},
  };
  int cur = 0;
  for (size_t i = 0; i < sizeof flush / sizeof flush[0]; i++) {
    if (flush[i].ncase != cur) {
      if (cur) wm_combiner_free(&c);
      cur = flush[i].ncase;
      CHECK_I64(wm_combiner_init(&c, flush[i].n), 0);
    }
    int ev = flush[i].what == W   ? wm_combiner_watermark(&c, flush[i].ch, flush[i].wm)
             : flush[i].what == I ? wm_combiner_status(&c, flush[i].ch, true)
                                  : wm_combiner_status(&c, flush[i].ch, false);
    if (ev != flush[i].ev || c.out != flush[i].out)
      fprintf(stderr, "  idle flush case %d step %zu\n", flush[i].ncase, i);
    CHECK_I64(ev, flush[i].ev);
    CHECK_I64(c.out, flush[i].out);
  }
  wm_combiner_free(&c);
}
