/* The keyed window operator (semantics.md §5, §6) and its pluggable parts: the key
 * selector, the window function, and the built-in aggregations computed in C. */
#ifndef WM_WINOP_H
#define WM_WINOP_H

#include "graph/wm_graph.h"
#include "ops/wm_trigger.h"
#include "time/wm_window.h"

/* Extracts the key of a record. *key is borrowed: valid until the next call of fn or
 * until rec dies. Returns WM_OK or WM_ERR (message in op->ctx->err). */
typedef struct wm_keysel {
  int (*fn)(void *ud, wm_op *op, const wm_value *rec, wm_value *key);
  void (*free)(void *ud);
  void *ud;
} wm_keysel;

/* A key selector over one or more fields of the record, run in C (key_by("id"),
 * key_by{"a", "b"}). Field names are copied. 0 or -1. */
int wm_keysel_fields(wm_keysel *ks, const char *const *fields, size_t n);

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
} wm_winop_config;

/* A keyed window operator. Takes ownership of cfg->keysel, cfg->fn, cfg->trigger,
 * cfg->evictor and cfg->gapfn even on failure. NULL on failure (message in ctx->err).
 * Session windows need a function that merges (fn.merge, or list mode) and a trigger that
 * can merge. */
wm_op *wm_winop_new(wm_ctx *ctx, const char *name, wm_winop_config *cfg);

/* Number of (key, window) states currently held (the "open windows" metric). */
size_t wm_winop_open_windows(const wm_op *op);

#endif
