/* The keyed window operator (semantics.md §5, §6). Its pluggable parts live in their own
 * modules: the key selector (ops/wm_keys.h), the window function and the built-in
 * aggregations (ops/wm_agg.h), the trigger and the evictor (ops/wm_trigger.h). */
#ifndef WM_WINOP_H
#define WM_WINOP_H

#include "graph/wm_graph.h"
#include "ops/wm_winop_config.h"

/* A keyed window operator. Takes ownership of cfg->keysel, cfg->fn, cfg->trigger,
 * cfg->evictor and cfg->gapfn even on failure. NULL on failure (message in ctx->error).
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
