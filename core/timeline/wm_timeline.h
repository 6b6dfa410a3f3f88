/* The timeline recorder (wmrun --timeline, wm.testing's h:timeline).
 *
 * A recorder attaches to a context as its observer (graph/wm_observe.h) and as a link in
 * its watermark trace chain. It keeps, in bounded memory:
 *   - a stride sample of the records seen by assigners (every record while the run is
 *     small; when the sample is full the stride doubles and the sample is thinned);
 *   - the late records, the window firings (one per key and window) and the cleanups
 *     (each up to a limit far above what a readable picture holds; beyond it they are
 *     thinned the same way), with exact totals;
 *   - the watermark steps of every assigner, the combined input watermark of every
 *     window operator and each input's own watermark of every two-input operator (thinned
 *     by merging steps that fall into one x bucket);
 *   - one band per distinct window (thinned by a hash of the window when there are many);
 *   - the text of the first WM_TL_KEYS keys (the others are "other keys");
 *   - the checkpoints completed (WM_OBS_CHECKPOINT), up to the late records' limit.
 * x is the arrival order of the records at the assigners, t the processing time.
 *
 * The recorder only records: lua/wm/timeline.lua draws the picture from what the
 * accessors below return (bindings/lwm_timeline.c hands it over as a Lua table).
 * A recorder outlives the contexts it observed: it copies the names it needs.
 */
#ifndef WM_TIMELINE_H
#define WM_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "graph/wm_graph.h"
#include "time/wm_window.h"

typedef struct wm_timeline wm_timeline;

/* A recorder titled `title` (copied). NULL when out of memory. */
wm_timeline *wm_timeline_new(const char *title);
void wm_timeline_free(wm_timeline *tl);

/* Memory limits: records kept in the sample, late records, firing and cleanup marks,
 * window bands, watermark steps per line. 0 keeps a default. Call before recording. */
typedef struct wm_timeline_limits {
  size_t records, late, marks, windows, steps;
} wm_timeline_limits;
void wm_timeline_set_limits(wm_timeline *tl, const wm_timeline_limits *lim);

/* Starts observing ctx: chains ctx->observe and ctx->trace (the previous observer and trace
 * function keep being called). Detach before ctx is freed or reused. */
void wm_timeline_attach(wm_timeline *tl, wm_ctx *ctx);
void wm_timeline_detach(wm_timeline *tl, wm_ctx *ctx);

/* Totals of a recording (exact, whatever was thinned). */
typedef struct wm_timeline_stats {
  uint64_t records, late_dropped, late_side, firings, late_firings, cleanups, checkpoints;
  uint64_t records_shown;
  double mean_firing_delay; /* ms; NaN-free: 0 when there was no on-time firing */
  uint64_t delay_samples;
  int oom;                  /* the recorder ran out of memory: the recording is partial */
} wm_timeline_stats;
void wm_timeline_stats_get(const wm_timeline *tl, wm_timeline_stats *st);

/* ---- reading a recording (every pointer borrowed until the next event or the free) ---- */

#define WM_TL_KEYS 64         /* keys recorded by name */
#define WM_TL_KEY_NONE (-1)   /* the key is unknown (a record no window operator saw) */
#define WM_TL_KEY_OTHER (-2)  /* a key beyond the first WM_TL_KEYS */

enum { WM_TL_FIRE = 0, WM_TL_LATE_FIRE = 1, WM_TL_CLEANUP = 2 };

/* A record at an assigner; key: an index for wm_timeline_key or WM_TL_KEY_*. */
typedef struct wm_timeline_record {
  uint64_t x;
  int64_t t, ts;
  int16_t key;
  uint8_t late; /* it was late (it is also in the late records) */
} wm_timeline_record;

/* A late record; series: the window operator's series (-1 unknown). */
typedef struct wm_timeline_late {
  uint64_t x;
  int64_t t, ts, wm, lateness;
  int16_t key, series;
  uint8_t side;    /* 1: sent to the side output tag; 0: dropped */
  const char *tag; /* interned in the recorder */
  uint8_t input;   /* a two-input operator's late record: its input (1, 2); 0 otherwise */
} wm_timeline_late;

#define WM_TL_VALUE 64 /* bytes of a firing's result kept (cut with "...") */

/* A firing (kind WM_TL_FIRE or WM_TL_LATE_FIRE) or cleanup of one key's window. value: what
 * the firing emitted, as `print` shows it ("; " between several results), "" for none. */
typedef struct wm_timeline_mark {
  uint64_t x;
  int64_t t, wm;
  wm_window w;
  int16_t series, key;
  uint8_t kind;
  char value[WM_TL_VALUE];
} wm_timeline_mark;

/* A window band: from its first record (x0, t0) to its cleanup (x1, t1) when cleaned. */
typedef struct wm_timeline_window {
  wm_window w;
  uint64_t x0, x1;
  int64_t t0, t1;
  int16_t series;
  uint8_t used, cleaned, fired, opened;
} wm_timeline_window;

typedef struct wm_timeline_step {
  uint64_t x;
  int64_t t, v;
} wm_timeline_step;

/* A watermark line: an assigner's generated watermark (window = 0), a window operator's
 * combined input watermark (window = 1), or the own watermark of input 1 or 2 of a
 * two-input operator (window = 2, 3; named "OP, input K"). advances counts every step,
 * thinned or not. */
typedef struct wm_timeline_series {
  const char *name;
  int window;
  const wm_timeline_step *steps;
  size_t n;
  uint64_t advances;
} wm_timeline_series;

/* A completed checkpoint (--checkpoint-dir): when it was committed (x: the records seen
 * at the assigners before it), its id, size (bytes)
 * and the time it took (ms); final: the one taken at the end of the input. */
typedef struct wm_timeline_ckpt {
  uint64_t x;
  int64_t t;
  uint64_t id, bytes;
  double ms;
  uint8_t final;
} wm_timeline_ckpt;

const char *wm_timeline_title(const wm_timeline *tl);
/* Records seen at the assigners (the x of the end of input). */
uint64_t wm_timeline_arrivals(const wm_timeline *tl);
const wm_timeline_record *wm_timeline_records(const wm_timeline *tl, size_t *n);
const wm_timeline_late *wm_timeline_lates(const wm_timeline *tl, size_t *n);
const wm_timeline_mark *wm_timeline_marks(const wm_timeline *tl, size_t *n);
/* The checkpoints (thinned like the late records when there are very many). */
const wm_timeline_ckpt *wm_timeline_ckpts(const wm_timeline *tl, size_t *n);
/* The window bands, one per call: *it starts at 0; NULL after the last. */
const wm_timeline_window *wm_timeline_window_next(const wm_timeline *tl, size_t *it);
int wm_timeline_nseries(const wm_timeline *tl);
void wm_timeline_series_get(const wm_timeline *tl, int i, wm_timeline_series *out);
/* Keys by index (0 .. n-1); *other: some keys were beyond WM_TL_KEYS. */
int wm_timeline_nkeys(const wm_timeline *tl, int *other);
const char *wm_timeline_key(const wm_timeline *tl, int i);

#endif
