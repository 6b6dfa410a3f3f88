#include "time/wm_time.h"
#include "time/wm_window.h"
#include "test.h"

void test_time(void) {
  static const struct {
    const char *text;
    int ok;
    int64_t ms;
  } cases[] = {
      {"250ms", 1, 250}, {"2s", 1, 2000}, {"5 s", 1, 5000}, {"1min", 1, 60000},
      {"1h", 1, 3600000}, {"1d", 1, 86400000}, {"1500", 1, 1500}, {" 3 seconds ", 1, 3000},
      {"0", 1, 0}, {"2x", 0, 0}, {"", 0, 0}, {"s", 0, 0}, {"-1s", 0, 0}, {"1.5s", 0, 0},
      {"99999999999999999999", 0, 0}, {"9999999999999999d", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t ms = -1;
    wm_error err;
    wm_error_clear(&err);
    int rc = wm_duration_parse(cases[i].text, &ms, &err);
    CHECK_I64(rc == 0, cases[i].ok);
    if (cases[i].ok) CHECK_I64(ms, cases[i].ms);
    else CHECK(strstr(err.msg, cases[i].text) != NULL); /* the error names the bad text */
  }
  CHECK_I64(wm_time_add_sat(WM_TIME_MAX - 5, 10), WM_TIME_MAX);
  CHECK_I64(wm_time_add_sat(WM_TIME_MIN + 5, -10), WM_TIME_MIN);
  CHECK_I64(wm_time_add_sat(4999, 2000), 6999);
  CHECK_I64(wm_time_sub_sat(WM_TIME_MIN, 1), WM_TIME_MIN);
  CHECK_I64(wm_time_floor_mod(-1, 5000), 4999);
  CHECK_I64(wm_time_floor_mod(-5000, 5000), 0);
  CHECK_I64(wm_time_floor_mod(7, 5), 2);
}

void test_window(void) {
  /* tumbling: start = ts - ((ts - offset) mod size), also for negative timestamps */
  static const struct {
    int64_t ts, size, offset, start;
  } tum[] = {
      {1577844001000, 5000, 0, 1577844000000},
      {1577844004999, 5000, 0, 1577844000000},
      {1577844005000, 5000, 0, 1577844005000},
      {0, 5000, 0, 0},
      {-1, 5000, 0, -5000},
      {-5000, 5000, 0, -5000},
      {-5001, 5000, 0, -10000},
      {7, 5, 2, 7},
      {6, 5, 2, 2},
      {1, 5, 2, -3},
      {3600000 * 5 + 10, 3600000 * 24, -8 * 3600000, -8 * 3600000},
      {WM_TIME_MAX, 1000, 0, WM_TIME_MAX - 807},
  };
  for (size_t i = 0; i < sizeof tum / sizeof tum[0]; i++) {
    wm_assigner a = {.kind = WM_WA_TUMBLING, .size = tum[i].size, .offset = tum[i].offset};
    wm_window w[1];
    CHECK_I64(wm_assigner_assign(&a, tum[i].ts, w), 1);
    CHECK_I64(w[0].start, tum[i].start);
    CHECK_I64(w[0].stop, wm_time_add_sat(tum[i].start, tum[i].size));
  }
  {
    /* the smallest timestamp: its window starts at or below it and contains it */
    wm_assigner a = {.kind = WM_WA_TUMBLING, .size = 1000};
    wm_window w[1];
    wm_assigner_assign(&a, WM_TIME_MIN + 5, w);
    CHECK(w[0].start <= WM_TIME_MIN + 5 && w[0].stop > WM_TIME_MIN + 5);
  }
  /* the valid timestamps of each assigner (docs/windows.md), worked out by hand: MIN is
   * -9223372036854775808, so the first window of size 1000 that starts at or after MIN
   * starts at -9223372036854775000; sliding 10 s / 5 s needs its earliest window (10 s
   * back) to start there too; the last windows must stop at or before MAX */
  {
    static const struct {
      wm_assigner a;
      int64_t lo, hi;
    } rng[] = {
        {{.kind = WM_WA_TUMBLING, .size = 1000}, -9223372036854775000, 9223372036854774999},
        {{.kind = WM_WA_SLIDING, .size = 10000, .slide = 5000}, -9223372036854770000,
         9223372036854769999},
        /* a slide that does not divide the size: starts are multiples of 3000 */
        {{.kind = WM_WA_SLIDING, .size = 10000, .slide = 3000}, -9223372036854767000,
         9223372036854767999},
        {{.kind = WM_WA_TUMBLING, .size = 5, .offset = 2}, WM_TIME_MIN + 1, WM_TIME_MAX - 1},
        {{.kind = WM_WA_SESSION, .gap = 3600000}, WM_TIME_MIN + 1, WM_TIME_MAX - 3600000},
        {{.kind = WM_WA_GLOBAL}, WM_TIME_MIN + 1, WM_TIME_MAX - 1},
    };
    for (size_t i = 0; i < sizeof rng / sizeof rng[0]; i++) {
      int64_t lo, hi;
      wm_assigner_ts_range(&rng[i].a, &lo, &hi);
      CHECK_I64(lo, rng[i].lo);
      CHECK_I64(hi, rng[i].hi);
    }
  }
  /* sliding: latest start first, every start > ts - size */
  {
    wm_assigner a = {.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000};
    wm_window w[8];
    size_t n = wm_assigner_assign(&a, 1577844001000, w);
    CHECK_I64(n, 3);
    CHECK_I64(w[0].start, 1577844000000);
    CHECK_I64(w[1].start, 1577843998000);
    CHECK_I64(w[2].start, 1577843996000);
    CHECK_I64(w[2].stop, 1577844002000);
  }
  {
    /* a slide that does not divide the size: 10 s every 3 s holds a record in 4 windows */
    wm_assigner a = {.kind = WM_WA_SLIDING, .size = 10000, .slide = 3000};
    wm_window w[8];
    CHECK_I64(wm_assigner_max_windows(&a), 4);
    size_t n = wm_assigner_assign(&a, 9999, w);
    CHECK_I64(n, 4); /* starts 9000, 6000, 3000, 0 */
    CHECK_I64(w[0].start, 9000);
    CHECK_I64(w[3].start, 0);
    n = wm_assigner_assign(&a, 11000, w); /* starts 9000, 6000, 3000 (0 ends at 10000) */
    CHECK_I64(n, 3);
    for (size_t k = 0; k < n; k++) CHECK(w[k].start <= 11000 && w[k].stop > 11000);
  }
  {
    wm_assigner a = {.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000};
    wm_window w[8];
    size_t n = wm_assigner_assign(&a, -1, w); /* negative: -2000, -4000, -6000 */
    CHECK_I64(n, 3);
    CHECK_I64(w[0].start, -2000);
    CHECK_I64(w[2].start, -6000);
  }
  /* bad parameters are named */
  {
    wm_error err;
    wm_assigner a = {.kind = WM_WA_TUMBLING, .size = 0};
    CHECK(wm_assigner_check(&a, &err) != 0 && strstr(err.msg, "size"));
    wm_assigner b = {.kind = WM_WA_SLIDING, .size = 1000, .slide = 2000};
    CHECK(wm_assigner_check(&b, &err) != 0 && strstr(err.msg, "slide"));
    wm_assigner c = {.kind = WM_WA_SLIDING, .size = 1000, .slide = 0};
    CHECK(wm_assigner_check(&c, &err) != 0 && strstr(err.msg, "slide"));
  }
}
