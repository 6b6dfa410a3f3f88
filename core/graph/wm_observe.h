/* Observing a run: the events a recorder (wm_timeline) needs to draw a job's timeline.
 *
 * Operators call the small inline functions below at the points that matter: a record at
 * an assigner, a record added to a window, a window firing, a window cleaned up, a late
 * record. Watermark advances are not observed here: they already go through ctx->trace,
 * which a recorder chains. When no observer is installed (ctx->observe == NULL) each
 * call costs one predictable branch.
 */
#ifndef WM_OBSERVE_H
#define WM_OBSERVE_H

#include "graph/wm_graph.h"
#include "graph/wm_obs.h"

static inline void wm_observe_(wm_op *op, int kind, int64_t ts, int64_t watermark,
                               wm_window w, const wm_value *key, int flag, int64_t lateness,
                               const char *tag) {
  wm_obs ev = {kind, ts, watermark, w, key, flag, lateness, tag, NULL, NULL};
  op->ctx->observe(op->ctx->observe_ud, op, &ev);
}

#if defined(__GNUC__)
#define WM_OBS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define WM_OBS_UNLIKELY(x) (x)
#endif

/* A record at an assigner (before it is forwarded, so that later events follow it). */
static inline void wm_observe_record(wm_op *op, int64_t ts) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_RECORD, ts, op->wm, (wm_window){0, 0}, NULL, 0, 0, NULL);
}

/* A window operator added a record (ts, key) to window w; created = w is new. */
static inline void wm_observe_window(wm_op *op, const wm_value *key, int64_t ts, wm_window w,
                                     int created) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_WINDOW, ts, op->wm, w, key, created, 0, NULL);
}

/* Window w of key fired; late = a late firing. */
static inline void wm_observe_fire(wm_op *op, const wm_value *key, wm_window w, int late) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_FIRE, 0, op->wm, w, key, late, 0, NULL);
}

/* Window w of key was cleaned up (its state deleted). */
static inline void wm_observe_cleanup(wm_op *op, const wm_value *key, wm_window w) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_CLEANUP, 0, op->wm, w, key, 0, 0, NULL);
}

/* A late record (ts, key): sent to side output tag, or dropped when tag is NULL. */
static inline void wm_observe_late(wm_op *op, const wm_value *key, int64_t ts,
                                   int64_t lateness, const char *tag) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_LATE, ts, op->wm, (wm_window){0, 0}, key, tag != NULL, lateness,
                tag);
}

/* A keyed process function (or rolling aggregate) got a record (ts) of key. */
static inline void wm_observe_arrive(wm_op *op, const wm_value *key, int64_t ts) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_ARRIVE, ts, op->wm, (wm_window){0, 0}, key, 0, 0, NULL);
}

/* A keyed process function's timer of key at t fired (domain: WM_TIME_EVENT or
 * WM_TIME_PROCESSING). */
static inline void wm_observe_timer(wm_op *op, const wm_value *key, int64_t t, int domain) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_(op, WM_OBS_TIMER, t, op->wm, (wm_window){0, 0}, key, domain, 0, NULL);
}

/* op emits rec (ts) on port (graph/wm_graph.c's wm_op_emit, for every operator). */
static inline void wm_observe_emit(wm_op *op, int port, const wm_value *rec, int64_t ts) {
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL)) {
    wm_obs ev = {WM_OBS_EMIT, ts, op->wm, (wm_window){0, 0}, NULL, port, 0, NULL, rec, NULL};
    op->ctx->observe(op->ctx->observe_ud, op, &ev);
  }
}

#endif
