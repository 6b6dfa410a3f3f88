/* The configuration of a window operator (wm_winop.h): what wm_winop_new takes. Apart so
 * that the operator's own files (wm_winop_int.h) need not include its public header. */
#ifndef WM_WINOP_CONFIG_H
#define WM_WINOP_CONFIG_H

#include "graph/wm_graph.h"
#include "ops/wm_agg.h"
#include "ops/wm_keys.h"
#include "ops/wm_trigger.h"
#include "time/wm_window.h"

/* A dynamic session gap: the gap (ms) of the session window that record rec (at ts)
 * opens. Returns WM_OK, or WM_ERR with the message in op->ctx->error. */
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

#endif
