/* The keyed window operator (semantics.md §5, §6). Its pluggable parts live in their own
 * modules: the key selector (ops/wm_keys.h), the window function and the built-in
 * aggregations (ops/wm_agg.h), the trigger and the evictor (ops/wm_trigger.h). */
#ifndef WM_WINOP_H
#define WM_WINOP_H

#include "graph/wm_graph.h"
#include "ops/wm_agg.h"
#include "ops/wm_keys.h"
#include "ops/wm_trigger.h"
#include "time/wm_window.h"

/* A dynamic session gap: the gap (ms) of the session window that record rec (at ts)
 * opens. Returns WM_OK, or WM_ERR with the message in op->ctx->err. */
typedef struct wm_gapfn {
  int (*fn)(void *ud, wm_op *op, const wm_value *rec, int64_t ts, int64_t *gap);
  void (*free)(void *ud);
  void *ud;
} wm_gapfn;

typedef struct wm_winop_config {
  wm_assigner assigner;
  int64_t lateness;     /* allowed lateness, ms (>= 0) */
  const char *late_tag; /* side output for late records; NULL: drop and count */
  wm_keysel keysel;     /* owned by the operator from now on */
  wm_winfn fn;          /* owned by the operator from now on */
  wm_trigger *trigger;  /* owned; NULL: the assigner's default (event_time, processing_time,
                           or never for global windows) */
  wm_evictor evictor;   /* owned; kind 0: none */
  wm_gapfn gapfn;       /* owned; session windows with a dynamic gap (assigner.gap = -1) */
  /* 1: each input channel delivers its records in the order a single reader would have
   * seen them, channel 0 first (the parts of one file, or the partials of a local
   * pre-aggregation of such parts: docs/performance.md, "Pre-aggregation"). A window's
   * first record, the one sum, min and max emit, is then the one of the lowest channel
   * that reached it, not the first to arrive. Only with tumbling windows, the default
   * trigger and the built-in sum, min or max (else ignored); at most 255 channels. */
  int first_by_chan;
  /* 1: a record late for a tumbling window of the default trigger leaves on the main port
   * as the window function's result for that record alone, at the window's end (a local
   * pre-aggregation of count(): the window it feeds adds the partial counts up) */
  int late_as_partial;
  /* 1: the operator merges partials (config text, so that a checkpoint of a job without
   * pre-aggregation is not restored into one with it, or back) */
  int merges_partials;
  /* What the window function's state means, checked by a restore (docs/checkpoints.md,
   * "A changed window function"): e.g. "reduce (Lua function at job.lua:12)" or "reduce
   * (version 2 of uid sums)". Empty: a built-in's is its aggregation and field ("sum(vc)",
   * "count"), any other function's is not checked. */
  char meaning[200];
} wm_winop_config;

/* A keyed window operator. Takes ownership of cfg->keysel, cfg->fn, cfg->trigger,
 * cfg->evictor and cfg->gapfn even on failure. NULL on failure (message in ctx->err).
 * Session windows need a function that merges (fn.merge, or list mode) and a trigger that
 * can merge. */
wm_op *wm_winop_new(wm_ctx *ctx, const char *name, wm_winop_config *cfg);
/* Frees the parts a configuration owns (those wm_winop_new takes) and zeroes it: for a
 * builder that gives up before calling wm_winop_new. */
void wm_winop_config_free(wm_winop_config *cfg);

/* The input channel (capped at 255) of the record being added: for a window function's
 * add, which may keep its state per channel (a window that merges the partials of a
 * local pre-aggregation in channel order, bindings/lwm_ops.c). */
int wm_winop_chan(const wm_op *op);

/* Tests: with on false, every record takes the general path (wm_winop_record.c), not the
 * fast paths derived from it (on by default), so that a test can run a stream both ways
 * and compare what comes out. Changes no result. */
void wm_winop_set_fast_paths(wm_op *op, bool on);
/* Records a fast path took so far (tests: that the fast paths ran at all). */
uint64_t wm_winop_fast_hits(const wm_op *op);

/* Number of (key, window) states currently held (the "open windows" metric). */
size_t wm_winop_open_windows(const wm_op *op);
/* Number of panes held (sliding windows kept in panes, wm_winop.c "panes"; 0 otherwise):
 * not counted by wm_winop_open_windows. */
size_t wm_winop_open_panes(const wm_op *op);
/* Number of timers queued (event and processing time), superseded ones included until
 * they pop: what the operator's timer memory grows with. */
size_t wm_winop_queued_timers(const wm_op *op);

#endif
