/* The timeline recorder and its picture (wmrun --timeline, wm.testing's h:timeline).
 *
 * A recorder attaches to a context as its observer (core/wm_observe.h) and as a link in
 * its watermark trace chain. It keeps, in bounded memory:
 *   - a stride sample of the records seen by assigners (every record while the run is
 *     small; when the sample is full the stride doubles and the sample is thinned);
 *   - the late records, the window firings and the cleanups (each up to a limit that is
 *     far above what a readable picture holds; beyond it they are thinned the same way,
 *     and the page says how many it shows), with exact totals;
 *   - the watermark steps of every assigner and the combined input watermark of every
 *     window operator (thinned by merging steps that fall into one x bucket);
 *   - one band per distinct window (thinned by a hash of the window when there are many).
 * It writes a self-contained SVG (or an HTML page holding it): x = arrival order of the
 * records at the assigners (or processing time), y = event time.
 *
 * A recorder outlives the contexts it observed: it copies the names it needs.
 */
#ifndef WM_TIMELINE_H
#define WM_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#include "graph/wm_graph.h"

typedef struct wm_timeline wm_timeline;

/* A recorder titled `title` (copied). NULL when out of memory. */
wm_timeline *wm_timeline_new(const char *title);
void wm_timeline_free(wm_timeline *tl);

/* Memory and picture limits: records kept in the sample, and late records, firing and
 * cleanup marks, window bands, watermark steps per line. 0 keeps a default. Call before
 * recording. */
typedef struct wm_timeline_limits {
  size_t records, late, marks, windows, steps;
} wm_timeline_limits;
void wm_timeline_set_limits(wm_timeline *tl, const wm_timeline_limits *lim);

/* Starts observing ctx: installs ctx->observe and chains ctx->trace (the previous trace
 * function keeps being called). Detach before ctx is freed or reused. */
void wm_timeline_attach(wm_timeline *tl, wm_ctx *ctx);
void wm_timeline_detach(wm_timeline *tl, wm_ctx *ctx);

/* Totals of a recording (exact, whatever was thinned). */
typedef struct wm_timeline_stats {
  uint64_t records, late_dropped, late_side, firings, late_firings, cleanups;
  uint64_t records_shown;
  double mean_firing_delay; /* ms; NaN-free: 0 when there was no on-time firing */
  uint64_t delay_samples;
  int oom;                  /* the recorder ran out of memory: the picture is partial */
} wm_timeline_stats;
void wm_timeline_stats_get(const wm_timeline *tl, wm_timeline_stats *st);

enum { WM_TL_X_ORDER = 0, WM_TL_X_TIME = 1 };

/* Writes the picture of n recordings drawn one above the other on the same scales (n = 1:
 * one run; n = 2: comparison). html: an HTML page with the SVG inline; else an SVG file.
 * 0, or -1 with a message in err. */
int wm_timeline_write(FILE *f, wm_timeline *const *tls, int n, int xmode, int html,
                      char *err, size_t errlen);
/* Same, to a file: HTML when path ends in ".html" or ".htm", SVG otherwise. */
int wm_timeline_save(const char *path, wm_timeline *const *tls, int n, int xmode, char *err,
                     size_t errlen);

#endif
