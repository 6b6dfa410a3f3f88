/* The window operator (wm_winop.h): construction, the vtable, watermarks, freeing.
 * Its other concerns have files of their own (wm_winop_int.h lists them). */
#include "ops/wm_winop.h"

#include <stdlib.h>
#include <string.h>

#include "graph/wm_observe.h"
#include "ops/wm_winop_int.h"

static int winop_watermark(wm_op *op, int64_t W) {
  winop *s = op->impl;
  if (wm_wo_drain(op, s, s->timers, WM_DOMAIN_EVENT, W) != WM_OK) return WM_ERR;
  if (W == WM_TIME_MAX && !s->pt_flushing) {
    /* end of input: every window is emitted, also those waiting for the wall clock; the
     * processing-time timers pending now fire once, in order (new ones are ignored) */
    s->pt_flushing = true;
    if (wm_wo_drain(op, s, s->ptimers, WM_DOMAIN_PROCESSING, WM_TIME_MAX) != WM_OK) return WM_ERR;
  }
  return wm_op_emit_watermark(op, W);
}

static int winop_processing_time(wm_op *op, int64_t t) {
  winop *s = op->impl;
  return wm_wo_drain(op, s, s->ptimers, WM_DOMAIN_PROCESSING, t);
}

static void winop_free(wm_op *op) {
  winop *s = op->impl;
  if (!s) return;
  wm_wo_slab_clear(op, s);
  free(s->idx);
  if (s->fire_row) wm_row_release(&op->ctx->host, s->fire_row);
  free(s->fire_cap);
  if (s->rec_schema) wm_schema_release(s->rec_schema);
  wm_timers_free(s->timers);
  wm_timers_free(s->ptimers);
  free(s->wins);
  free(s->whash);
  free(s->run);
  free(s->late_tag);
  wm_trigger_free(s->trig);
  if (s->cfg.keysel.free) s->cfg.keysel.free(s->cfg.keysel.ud);
  if (s->cfg.fn.free) s->cfg.fn.free(s->cfg.fn.ud);
  if (s->cfg.evictor.free) s->cfg.evictor.free(s->cfg.evictor.ud);
  if (s->cfg.gapfn.free) s->cfg.gapfn.free(s->cfg.gapfn.ud);
  free(s);
}

static void winop_gauges(const wm_op *op, wm_op_gauges *g) {
  g->has_windows = true;
  g->windows = wm_winop_open_windows(op);
}

static const wm_op_vt winop_vt = {
    .kind = "window",
    .gauges = winop_gauges,
    .record = wm_wo_record,
    .watermark = winop_watermark,
    .processing_time = winop_processing_time,
    .free = winop_free,
    .snapshot = wm_wo_snapshot,
    .restore = wm_wo_restore,
    .keyed_state = 1,
    .ahead_wants = wm_wo_ahead_wants,
    .ahead = wm_wo_ahead,
};

int wm_winop_chan(const wm_op *op) {
  const winop *s = op->impl;
  return s->chan;
}

void wm_winop_set_fast_paths(wm_op *op, bool on) {
  winop *s = op->impl;
  s->hit_tumble = on && s->tfast;
  s->hit_pane = on && s->panes_ok && s->key1;
}

uint64_t wm_winop_fast_hits(const wm_op *op) {
  const winop *s = op->impl;
  return s->hits;
}

size_t wm_winop_open_windows(const wm_op *op) {
  const winop *s = op->impl;
  return s->nlive - s->npane;
}

size_t wm_winop_open_panes(const wm_op *op) {
  const winop *s = op->impl;
  return s->npane;
}

size_t wm_winop_queued_timers(const wm_op *op) {
  const winop *s = op->impl;
  return wm_timers_size(s->timers) + wm_timers_size(s->ptimers);
}

void wm_winop_config_free(wm_winop_config *cfg) {
  if (cfg->keysel.free) cfg->keysel.free(cfg->keysel.ud);
  if (cfg->fn.free) cfg->fn.free(cfg->fn.ud);
  wm_trigger_free(cfg->trigger);
  if (cfg->evictor.free) cfg->evictor.free(cfg->evictor.ud);
  if (cfg->gapfn.free) cfg->gapfn.free(cfg->gapfn.ud);
  memset(cfg, 0, sizeof *cfg);
}

wm_op *wm_winop_new(wm_ctx *ctx, const char *name, wm_winop_config *cfg) {
  if (wm_assigner_check(&cfg->assigner, &ctx->error) != 0) {
    wm_ctx_error(ctx, "window operator '%s': %s", name, ctx->error.msg);
    wm_winop_config_free(cfg);
    return NULL;
  }
  bool merging = cfg->assigner.kind == WM_WA_SESSION;
  bool list = cfg->fn.list || cfg->evictor.kind != 0;
  if (merging && !list && !cfg->fn.merge) {
    wm_ctx_error(ctx, "window operator '%s': session windows merge, and this window function "
                      "cannot merge (an aggregate needs a 'merge' function)", name);
    wm_winop_config_free(cfg);
    return NULL;
  }
  if (merging && cfg->trigger && !wm_trigger_can_merge(cfg->trigger)) {
    wm_ctx_error(ctx, "window operator '%s': session windows merge, and the trigger cannot "
                      "(a custom trigger needs on_merge)", name);
    wm_winop_config_free(cfg);
    return NULL;
  }
  if (merging && cfg->assigner.gap == -1 && !cfg->gapfn.fn) {
    wm_ctx_error(ctx, "window operator '%s': a dynamic session gap needs a gap function", name);
    wm_winop_config_free(cfg);
    return NULL;
  }
  winop *s = calloc(1, sizeof *s);
  if (!s) goto oom;
  s->cfg = *cfg;
  memset(cfg, 0, sizeof *cfg); /* owned by s from here */
  s->late_tag = NULL;
  s->free_head = NONE;
  s->capidx = 64;
  s->merging = merging;
  s->list = list;
  s->event_time = !s->cfg.assigner.processing_time && s->cfg.assigner.kind != WM_WA_GLOBAL;
  s->firing_t = WM_TIME_MIN;
  wm_assigner_ts_range(&s->cfg.assigner, &s->ts_lo, &s->ts_hi);
  s->trig = s->cfg.trigger;
  s->cfg.trigger = NULL;
  if (!s->trig) {
    int kind = s->cfg.assigner.kind == WM_WA_GLOBAL   ? WM_TRIG_NEVER
               : s->cfg.assigner.processing_time ? WM_TRIG_PROCESSING_TIME
                                                  : WM_TRIG_EVENT_TIME;
    s->trig = wm_trigger_new(kind, 0);
  }
  s->fast = wm_trigger_is_default_event_time(s->trig) && s->event_time;
  s->need_ext = !s->fast || s->list || s->merging;
  /* trigger contexts (custom triggers and evictors) hold a pointer to the key */
  s->kelide = s->fast && s->cfg.evictor.kind != WM_EV_CUSTOM;
  s->key1 = wm_keysel_field1(&s->cfg.keysel);
  s->sum_field = s->list ? NULL : wm_winfn_sum_field(&s->cfg.fn);
  s->tfast = s->fast && !s->merging && s->event_time && s->key1 && s->sum_field &&
             s->cfg.assigner.kind == WM_WA_TUMBLING && !s->cfg.assigner.processing_time;
  {
    const wm_assigner *a = &s->cfg.assigner;
    s->pane_agg = s->list ? 0 : wm_winfn_builtin_agg(&s->cfg.fn, &s->pane_field);
    bool agg_ok = s->pane_agg == WM_AGG_SUM || s->pane_agg == WM_AGG_MIN ||
                  s->pane_agg == WM_AGG_MAX || s->pane_agg == WM_AGG_COUNT;
    s->panes_ok = a->kind == WM_WA_SLIDING && s->fast && agg_ok && s->cfg.lateness == 0 &&
                  a->slide > 0 && a->size > a->slide && a->size % a->slide == 0;
    s->panes = s->panes_ok;
    s->inl_ok = s->fast && !s->merging && s->kelide && (s->pane_agg == WM_AGG_SUM ||
                s->pane_agg == WM_AGG_MIN || s->pane_agg == WM_AGG_MAX);
    s->by_chan = s->cfg.first_by_chan && s->fast && a->kind == WM_WA_TUMBLING &&
                 s->cfg.evictor.kind == 0 && (s->pane_agg == WM_AGG_SUM ||
                 s->pane_agg == WM_AGG_MIN || s->pane_agg == WM_AGG_MAX);
  }
  s->hit_tumble = s->tfast;
  s->hit_pane = s->panes_ok && s->key1;
  s->idx = calloc(s->capidx, sizeof *s->idx);
  s->timers = wm_timers_new();
  s->ptimers = wm_timers_new();
  s->wins = calloc(wm_assigner_max_windows(&s->cfg.assigner), sizeof *s->wins);
  s->whash = calloc(wm_assigner_max_windows(&s->cfg.assigner), sizeof *s->whash);
  if (!s->trig || !s->idx || !s->timers || !s->ptimers || !s->wins || !s->whash) goto oom;
  if (s->cfg.late_tag && !(s->late_tag = strdup(s->cfg.late_tag))) goto oom;
  s->cfg.late_tag = s->late_tag;
  wm_op *op = wm_op_new(ctx, &winop_vt, s, name);
  if (!op) goto oom;
  if (s->late_tag && (s->late_port = wm_op_port(op, s->late_tag)) < 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL; /* op (and s) are freed with the context */
  }
  return op;
oom:
  wm_ctx_error(ctx, "out of memory creating window operator '%s'", name);
  if (s) {
    wm_op fake = {.ctx = ctx, .impl = s};
    winop_free(&fake);
  }
  wm_winop_config_free(cfg);
  return NULL;
}
