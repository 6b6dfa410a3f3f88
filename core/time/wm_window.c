#include "time/wm_window.h"

#include <stdio.h>

#include "time/wm_time.h"

int64_t wm_window_start(int64_t ts, int64_t offset, int64_t size) {
  /* (ts - offset) mod size with a mathematical modulo; computed so that it cannot
   * overflow for any ts: reduce offset first */
  int64_t off = wm_time_floor_mod(offset, size);
  int64_t r = wm_time_floor_mod(wm_time_floor_mod(ts, size) - off, size);
  return ts < WM_TIME_MIN + r ? WM_TIME_MIN : ts - r; /* the first window is cut at MIN */
}

size_t wm_assigner_max_windows(const wm_assigner *a) {
  if (a->kind == WM_WA_SLIDING) return (size_t)((a->size + a->slide - 1) / a->slide);
  return 1;
}

int wm_assigner_check(const wm_assigner *a, wm_error *err) {
  switch (a->kind) {
  case WM_WA_TUMBLING:
    if (a->size <= 0) {
      wm_error_set(err, "window size must be positive (got %lld ms)", (long long)a->size);
      return -1;
    }
    return 0;
  case WM_WA_SLIDING:
    if (a->size <= 0) {
      wm_error_set(err, "window size must be positive (got %lld ms)", (long long)a->size);
      return -1;
    }
    if (a->slide <= 0) {
      wm_error_set(err, "window slide must be positive (got %lld ms)", (long long)a->slide);
      return -1;
    }
    if (a->slide > a->size) {
      wm_error_set(err,
               "window slide (%lld ms) is larger than the size (%lld ms): records between "
               "windows would belong to none",
               (long long)a->slide, (long long)a->size);
      return -1;
    }
    if (a->size / a->slide > 100000) {
      wm_error_set(err, "window size / slide is %lld: too many windows per record",
               (long long)(a->size / a->slide));
      return -1;
    }
    return 0;
  case WM_WA_SESSION:
    if (a->gap <= 0 && a->gap != -1) {
      wm_error_set(err, "session gap must be positive (got %lld ms)", (long long)a->gap);
      return -1;
    }
    return 0;
  case WM_WA_GLOBAL: return 0;
  default: wm_error_set(err, "unknown window assigner"); return -1;
  }
}

size_t wm_assigner_assign(const wm_assigner *a, int64_t ts, wm_window *out) {
  switch (a->kind) {
  case WM_WA_TUMBLING: {
    int64_t s = wm_window_start(ts, a->offset, a->size);
    out[0].start = s;
    out[0].stop = wm_time_add_sat(s, a->size);
    return 1;
  }
  case WM_WA_SLIDING: {
    size_t n = 0;
    int64_t last = wm_window_start(ts, a->offset, a->slide);
    int64_t lower = wm_time_sub_sat(ts, a->size); /* start > ts - size */
    for (int64_t s = last; s > lower; s -= a->slide) {
      out[n].start = s;
      out[n].stop = wm_time_add_sat(s, a->size);
      n++;
      if (s < WM_TIME_MIN + a->slide) break;
    }
    return n;
  }
  case WM_WA_SESSION:
    out[0].start = ts;
    out[0].stop = wm_time_add_sat(ts, a->gap);
    return 1;
  case WM_WA_GLOBAL:
    out[0].start = WM_TIME_MIN;
    out[0].stop = WM_TIME_MAX;
    return 1;
  default: return 0;
  }
}

void wm_assigner_ts_range(const wm_assigner *a, int64_t *lo, int64_t *hi) {
  *lo = WM_TIME_MIN + 1;
  *hi = WM_TIME_MAX - 1;
  if (a->kind == WM_WA_SESSION) {
    if (a->gap > 0) *hi = WM_TIME_MAX - a->gap;
    return;
  }
  if (a->kind != WM_WA_TUMBLING && a->kind != WM_WA_SLIDING) return;
  int64_t size = a->size, slide = a->kind == WM_WA_SLIDING ? a->slide : a->size;
  /* windows start at s = offset (mod slide); a record at ts is in those with
   * ts - size < s <= ts. s0: the first start at or after MIN; the record's earliest window
   * is s0 or later exactly when ts >= s0 + size - slide (slide <= size: no overflow) */
  int64_t off = wm_time_floor_mod(a->offset, slide);
  int64_t s0 = WM_TIME_MIN + wm_time_floor_mod(off - wm_time_floor_mod(WM_TIME_MIN, slide), slide);
  int64_t first = s0 + (size - slide);
  if (first > *lo) *lo = first;
  /* sl: the last start whose window stops at or before MAX; its records run to sl + slide
   * - 1, where the next window (not computable) begins */
  int64_t sl = wm_window_start(WM_TIME_MAX - size, a->offset, slide);
  int64_t last = sl + (slide - 1);
  if (last < *hi) *hi = last;
}
