/* The metrics board: what the Prometheus endpoint (exec/wm_metrics_http.h) shows of every
 * thread of a job, and the text format it is shown in (docs/metrics.md).
 *
 * A thread's operators are read only by that thread. So each thread *publishes* a snapshot
 * of its operators' counters (wm_mboard_publish: copied from its context into a buffer of
 * its own, without a lock, then swapped into the board under the board's mutex), from its
 * loop every WM_MBOARD_EVERY_MS and once more when its run ends; the thread that serves
 * /metrics publishes its own at the request and formats every thread's latest snapshot
 * under the mutex (wm_mboard_format). Another thread's figures are thus at most
 * WM_MBOARD_EVERY_MS old, and each thread's are consistent (taken between two batches).
 *
 * Samples are labelled operator (the operator's name without the " k/n" of an instance),
 * subtask (the instance index k, 1-based like the source context's ctx.subtask; 1 for an
 * operator of parallelism 1) and,
 * with several threads, thread (1-based, as --metrics says "thread k:"). With checkpoints
 * (wm_mboard_set_checkpoints) the job's checkpoint series come last. */
#ifndef WM_MBOARD_H
#define WM_MBOARD_H

#include <stdint.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

typedef struct wm_mboard wm_mboard;

#define WM_MBOARD_EVERY_MS 100

/* A board for n threads (n >= 1); NULL when out of memory. */
wm_mboard *wm_mboard_new(int n);
void wm_mboard_free(wm_mboard *b);
int wm_mboard_threads(const wm_mboard *b);

/* From thread `thread` (0-based) only: snapshots ctx's operators and makes the snapshot the
 * board's for that thread. WM_OK, or WM_ERR when out of memory (the previous snapshot
 * stays). */
int wm_mboard_publish(wm_mboard *b, int thread, const wm_ctx *ctx);

/* The job's checkpoints so far, for the checkpoint series. */
typedef struct wm_mboard_ckpt {
  uint64_t taken;      /* committed by this run */
  double last_ms;      /* the last one's duration */
  uint64_t last_bytes; /* the last one's size */
} wm_mboard_ckpt;
/* get (called from the serving thread at each request) fills in the job's checkpoints (the
 * bindings read exec/wm_ckptrun.h's wm_ckptrun_stats_get); NULL: no checkpoints, no
 * series. Set it before serving; ud must outlive the serving. */
void wm_mboard_set_checkpoints(wm_mboard *b, void (*get)(void *ud, wm_mboard_ckpt *out),
                               void *ud);

/* Appends every thread's latest snapshot in the Prometheus text format (version 0.0.4);
 * now is the processing time (ms) the watermark lag is measured from. A thread that has
 * published nothing yet shows no operators. */
void wm_mboard_format(wm_buf *out, wm_mboard *b, int64_t now);

/* The same for the operators of one context (one thread, no thread label, no checkpoint
 * series); the caller's thread must be the context's. */
void wm_metrics_format(wm_buf *out, const wm_ctx *ctx, int64_t now);

#endif
