/* Window functions: the interface a keyed operator calls (incremental add/merge, fire),
 * and the built-in aggregations that implement it in C. Used by the window operator and
 * by the rolling aggregations of keyed streams. */
#ifndef WM_AGG_H
#define WM_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_value.h"
#include "graph/wm_graph.h"
#include "time/wm_window.h"

/* What a window function sees when its window fires. */
typedef struct wm_fire {
  const wm_value *key;
  wm_window window;
  int64_t max_ts;          /* the results' timestamp */
  int64_t watermark;       /* the operator's current watermark */
  const wm_value *acc, *aux; /* incremental state */
  const wm_value *items;   /* list mode: the window's records in arrival order */
  size_t nitems;
} wm_fire;

typedef struct wm_winfn {
  int list; /* 1: keep every record (process functions); 0: incremental (acc, aux) */
  /* Adds rec to the state. acc and aux belong to the window (nil before the first add);
   * the function replaces them with owned values. Not called in list mode. */
  int (*add)(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec);
  /* Emits the window's result(s) with wm_op_emit(op, 0, value, f->max_ts). */
  int (*fire)(void *ud, wm_op *op, const wm_fire *f);
  /* Merges state b into a (session windows); b is released by the caller. NULL: not
   * mergeable. */
  int (*merge)(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *bacc,
               const wm_value *baux);
  void (*free)(void *ud);
  void *ud;
} wm_winfn;

typedef enum {
  WM_AGG_SUM = 1,
  WM_AGG_MIN,
  WM_AGG_MAX,
  WM_AGG_MIN_BY,
  WM_AGG_MAX_BY,
  WM_AGG_COUNT,
} wm_agg_kind;

/* A built-in aggregation (semantics.md §7) on field (ignored for count); 0 or -1. */
int wm_winfn_builtin(wm_winfn *fn, int agg, const char *field);

/* The field of a built-in sum made by wm_winfn_builtin, else NULL: an operator may add
 * an integer field to an integer accumulator (aux) inline, wrapping as the built-in does;
 * it calls fn->add for anything else. */
const wm_field *wm_winfn_sum_field(const wm_winfn *fn);
/* The built-in aggregation fn computes (WM_AGG_*), and in *field the field it reads (NULL
 * for count); 0 when fn is not a built-in. The field is the builtin's own (its resolved
 * schema cache): a window operator may read it with wm_field_get. */
int wm_winfn_builtin_agg(const wm_winfn *fn, wm_field **field);
/* What an aggregation's state means, into out (n bytes), for the checkpoint's check that a
 * resumed job aggregates as the checkpointed one did: `given` when not empty (a Lua
 * function's place or uid version), else a built-in's name and field ("sum(vc)"); "" when
 * unknown (not checked). */
void wm_winfn_meaning(const char *given, const wm_winfn *fn, char *out, size_t n);

/* Folds b, the aggregate of a built-in `agg` (WM_AGG_SUM, _MIN, _MAX, _COUNT) over some
 * records, into *aux, its aggregate over records that come before them: as adding those
 * records one by one would (sums of integers wrap; min and max keep *aux on ties). */
void wm_agg_combine(int agg, wm_value *aux, const wm_value *b);

#endif
