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
}
