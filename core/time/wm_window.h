/* Window assigners (semantics.md §4). A time window is [start, stop); max_ts = stop - 1. */
#ifndef WM_WINDOW_H
#define WM_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/wm_error.h"

typedef struct wm_window {
  int64_t start, stop;
} wm_window;

static inline int64_t wm_window_max_ts(wm_window w) { return w.stop - 1; }

typedef enum {
  WM_WA_TUMBLING = 1,
  WM_WA_SLIDING,
  WM_WA_SESSION,
  WM_WA_GLOBAL,
} wm_assigner_kind;

typedef struct wm_assigner {
  int kind;
  int64_t size, slide, offset; /* tumbling: size, offset; sliding: size, slide, offset */
  int64_t gap;                 /* session: static gap (a dynamic gap is the caller's) */
  bool processing_time;        /* fires from wall-clock timers instead of watermarks */
} wm_assigner;

/* The most windows one record can belong to (sliding: ceil(size / slide)). */
size_t wm_assigner_max_windows(const wm_assigner *a);

/* Validates the parameters: 0, or -1 with the failure in *err naming the bad one. */
int wm_assigner_check(const wm_assigner *a, wm_error *err);

/* The windows of a record at ts, written to out (at most wm_assigner_max_windows), in
 * the order semantics.md §4 gives (sliding: latest start first). Returns the count.
 * Session windows get [ts, ts + gap); merging is the window operator's job. */
size_t wm_assigner_assign(const wm_assigner *a, int64_t ts, wm_window *out);

/* The event timestamps whose windows this assigner computes exactly, [*lo, *hi]
 * (docs/windows.md, "Valid timestamps"): every window of a record in that range has its
 * start and stop within [MIN, MAX], with nothing cut off, and MIN (no timestamp) is never
 * in it. Tumbling and sliding: from the first window that starts at or after MIN being
 * complete to the last window that stops at or before MAX; sessions: (MIN, MAX - gap] for
 * the static gap (a dynamic gap: check ts <= MAX - gap per record); global windows hold
 * any timestamp, (MIN, MAX). An empty range (*lo > *hi) is possible for huge sizes. */
void wm_assigner_ts_range(const wm_assigner *a, int64_t *lo, int64_t *hi);

/* The start of the tumbling window of size `size` and offset `offset` holding ts. */
int64_t wm_window_start(int64_t ts, int64_t offset, int64_t size);

#endif
