/* Watermark generation (semantics.md §2) and combination across channels (§3). */
#ifndef WM_WATERMARK_H
#define WM_WATERMARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- built-in generators -------------------------------------------------------- */

typedef enum {
  WM_GEN_NONE = 0,    /* no_watermarks(): emits nothing */
  WM_GEN_BOUNDED = 1, /* bounded_out_of_orderness(d); monotonous() is d = 0 */
} wm_gen_kind;

typedef struct wm_gen {
  int kind;
  int64_t delay;  /* d, ms */
  int64_t max_ts; /* starts at MIN + d + 1 */
} wm_gen;

void wm_gen_init(wm_gen *g, int kind, int64_t delay);
/* on every record */
static inline void wm_gen_on_event(wm_gen *g, int64_t ts) {
  if (ts > g->max_ts) g->max_ts = ts;
}
/* on periodic emit: returns 1 and the watermark in *wm, or 0 when it emits nothing */
int wm_gen_on_periodic(const wm_gen *g, int64_t *wm);

/* ---- combining channels ---------------------------------------------------------- */

typedef struct wm_channel {
  int64_t wm;
  bool idle;
  bool aligned; /* counts in the minimum (false after returning from idle below the output) */
} wm_channel;

typedef struct wm_combiner {
  wm_channel *ch; /* owned */
  int n;
  int64_t out;    /* last forwarded watermark; WM_TIME_MIN at start */
  bool out_idle;  /* last forwarded status */
} wm_combiner;

/* 0, or -1 on allocation failure. Every channel starts active at WM_TIME_MIN. */
int wm_combiner_init(wm_combiner *c, int nchannels);
void wm_combiner_free(wm_combiner *c);

/* Events from the combiner after an input change (bit set). */
#define WM_COMB_ADVANCED 1  /* forward the new watermark c->out */
#define WM_COMB_IDLE 2      /* forward "idle" (every channel is idle) */
#define WM_COMB_ACTIVE 4    /* forward "active" (a channel turned active again) */

/* A watermark on channel ch. Returns a set of WM_COMB_* bits. */
int wm_combiner_watermark(wm_combiner *c, int ch, int64_t wm);
/* A status change on channel ch. Returns a set of WM_COMB_* bits. When the last active
 * channel turns idle and its watermark is the output, the output first moves to the
 * maximum over every channel (WM_COMB_ADVANCED with WM_COMB_IDLE: forward the watermark,
 * then the idle status), as Flink's StatusWatermarkValve does. */
int wm_combiner_status(wm_combiner *c, int ch, bool idle);

#endif
