/* The window operator (wm_winop.h): construction, the vtable, firing and emitting, freeing.
 * Its other concerns have files of their own (wm_winop_int.h lists them). */
#include "ops/wm_winop.h"

#include <stdlib.h>
#include <string.h>

#include "graph/wm_observe.h"
#include "ops/wm_winop_int.h"


static int evict(wm_op *op, winop *s, uint32_t i, int after) {
  const wm_evictor *ev = &s->cfg.evictor;
  if (ev->kind != WM_EV_CUSTOM && ev->after != (after != 0)) return WM_OK;
  wentry *e = &s->e[i];
  wm_evict_items it = {XO(e)->items, XO(e)->its, XO(e)->nitems};
  if (ev->kind == WM_EV_CUSTOM) {
    wm_trigger_ctx c;
    wm_wo_tctx_init(op, s, i, &c);
    if (ev->fn(ev->ud, op, after, &c, &it) != WM_OK) return WM_ERR;
    e = &s->e[i];
  } else {
    wm_evict_builtin(&op->ctx->host, ev, &it);
  }
  XO(e)->nitems = it.n;
  return WM_OK;
}

/* Emits the window's result (a FIRE): nothing when the window holds nothing. */
int wm_wo_emit_window(wm_op *op, winop *s, uint32_t i) {
  if (s->panes) return wm_wo_pane_emit(op, s, i);
  wentry *e = &s->e[i];
  wm_fire f;
  keybuf kb;
  if (entry_empty(s, e)) return WM_OK;
  /* a firing outside a timer, with the watermark past the window's end, is a late firing */
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_fire(op, key_of(s, i, &kb), e->w,
                    s->firing_t == WM_TIME_MIN && max_ts_of(e->w) <= op->wm);
  if (e->inl) return wm_wo_inline_fire(op, s, i, max_ts_of(e->w), &e->aux);
  if (!s->cfg.evictor.kind) {
    fire_init(op, s, e, &f, &kb);
    /* e stays valid: firing adds no entries */
    return s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
  }
  if (evict(op, s, i, 0) != WM_OK) return WM_ERR;
  e = &s->e[i];
  fire_init(op, s, e, &f, &kb);
  int rc = WM_OK;
  if (s->cfg.fn.list) {
    rc = s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
  } else if (XO(e)->nitems > 0) {
    /* an incremental function over the records the evictor kept */
    wm_value acc = wm_nil(), aux = wm_nil();
    for (uint32_t k = 0; k < XO(e)->nitems && rc == WM_OK; k++)
      rc = s->cfg.fn.add(s->cfg.fn.ud, op, &acc, &aux, &XO(e)->items[k]);
    if (rc == WM_OK) {
      f.acc = &acc;
      f.aux = &aux;
      rc = s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
    }
    wm_value_release(&op->ctx->host, &acc);
    wm_value_release(&op->ctx->host, &aux);
  }
  if (rc != WM_OK) return rc;
  return evict(op, s, i, 1);
}

/* Acts on a trigger's result for entry i. */
int wm_wo_act(wm_op *op, winop *s, uint32_t i, int res) {
  if (res < 0) return WM_ERR;
  if ((res & WM_TR_FIRE) && wm_wo_emit_window(op, s, i) != WM_OK) return WM_ERR;
  if (res & WM_TR_PURGE) wm_wo_entry_purge(op, s, &s->e[i]);
  return WM_OK;
}

/* The window is done: tell the trigger, delete its state. */
static int clear_all(wm_op *op, winop *s, uint32_t i) {
  if (!s->fast) {
    wm_trigger_ctx c;
    wm_wo_tctx_init(op, s, i, &c);
    if (s->trig->vt->clear(s->trig, &c) != WM_OK) return WM_ERR;
  }
  keybuf kb;
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_cleanup(op, key_of(s, i, &kb), s->e[i].w);
  if (s->panes) wm_wo_pane_drop(op, s, i);
  wm_wo_entry_delete(op, s, i);
  return WM_OK;
}

/* Fires the entries of one popped timer group of a domain. */
static int fire_group(wm_op *op, winop *s, int domain, int64_t t, const wm_timer_entry *ents,
                      size_t n) {
  s->firing_t = t;
  for (size_t k = 0; k < n; k++) {
    /* a group is often thousands of windows (all keys' windows end together), each one's
     * entry, cold part and index slot (deleted at cleanup) a likely cache miss at many
     * keys: start them some windows ahead so that they overlap. Only hints: an index
     * read from an entry not yet valid is never dereferenced. */
    if (k + 8 < n && (uint32_t)ents[k + 8].payload < s->ne) {
      uint32_t a = (uint32_t)ents[k + 8].payload;
      __builtin_prefetch(&s->e[a]);
      __builtin_prefetch(&s->c[a]);
    }
    if (k + 4 < n && (uint32_t)ents[k + 4].payload < s->ne)
      __builtin_prefetch(&s->idx[home_of(s->e[(uint32_t)ents[k + 4].payload].hash, s->capidx - 1)]);
    uint64_t p = ents[k].payload;
    uint32_t i = (uint32_t)p, gen = (uint32_t)(p >> 32);
    if (i >= s->ne || !s->e[i].live || s->e[i].gen != gen) continue;
    wentry *e = &s->e[i];
    /* merging event-time windows: the firing and the cleanup come from the wake-up alone
     * (any timer of the entry at that time stands for it); the rest are superseded */
    bool wake = false;
    if (s->merging && s->event_time && domain == WM_DOMAIN_EVENT) {
      wake = t == XO(e)->wake_t;
      if (wake) XO(e)->wake_t = WM_TIME_MIN;
      else if (s->fast) continue;
    }
    bool clean = domain == WM_DOMAIN_EVENT
                     ? (s->event_time && t == cleanup_of(s, e->w) && (wake || !s->merging))
                     : (s->cfg.assigner.processing_time && t == max_ts_of(e->w));
    int res;
    if (s->fast) {
      res = WM_TR_CONTINUE;
      if (domain == WM_DOMAIN_EVENT && e->fire && max_ts_of(e->w) == t) {
        e->fire = 0;
        res = WM_TR_FIRE;
      }
    } else {
      bool reg = wm_wo_tm_take(s, e, domain, t);
      if (!reg && !clean) {
        if (wake && wm_wo_wake_at(op, s, i) != WM_OK) return WM_ERR; /* the window moved on */
        continue;
      }
      wm_trigger_ctx c;
      wm_wo_tctx_init(op, s, i, &c);
      res = domain == WM_DOMAIN_EVENT ? s->trig->vt->on_event_time(s->trig, &c, t)
                                      : s->trig->vt->on_processing_time(s->trig, &c, t);
    }
    if (wm_wo_act(op, s, i, res) != WM_OK) return WM_ERR;
    if (clean && s->e[i].live && s->e[i].gen == gen && clear_all(op, s, i) != WM_OK) return WM_ERR;
    if (wake && s->e[i].live && s->e[i].gen == gen && wm_wo_wake_at(op, s, i) != WM_OK) return WM_ERR;
  }
  s->firing_t = WM_TIME_MIN;
  return WM_OK;
}

static int drain(wm_op *op, winop *s, wm_timers *q, int domain, int64_t upto) {
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (wm_timers_pop(q, upto, &t, &ents, &n))
    if (fire_group(op, s, domain, t, ents, n) != WM_OK) return WM_ERR;
  return WM_OK;
}

static int winop_watermark(wm_op *op, int64_t W) {
  winop *s = op->impl;
  if (drain(op, s, s->timers, WM_DOMAIN_EVENT, W) != WM_OK) return WM_ERR;
  if (W == WM_TIME_MAX && !s->pt_flushing) {
    /* end of input: every window is emitted, also those waiting for the wall clock; the
     * processing-time timers pending now fire once, in order (new ones are ignored) */
    s->pt_flushing = true;
    if (drain(op, s, s->ptimers, WM_DOMAIN_PROCESSING, WM_TIME_MAX) != WM_OK) return WM_ERR;
  }
  return wm_op_emit_watermark(op, W);
}

static int winop_processing_time(wm_op *op, int64_t t) {
  winop *s = op->impl;
  return drain(op, s, s->ptimers, WM_DOMAIN_PROCESSING, t);
}

void wm_wo_free(wm_op *op) {
  winop *s = op->impl;
  if (!s) return;
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) wm_wo_entry_delete(op, s, i);
  free(s->e_raw);
  free(s->c);
  free(s->x);
  free(s->fch);
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

static const wm_op_vt winop_vt = {
    .kind = "window",
    .record = wm_wo_record,
    .watermark = winop_watermark,
    .processing_time = winop_processing_time,
    .free = wm_wo_free,
    .snapshot = wm_wo_snapshot,
    .restore = wm_wo_restore,
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
  char err[256];
  if (wm_assigner_check(&cfg->assigner, err, sizeof err) != 0) {
    wm_ctx_error(ctx, "window operator '%s': %s", name, err);
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
    wm_wo_free(&fake);
  }
  wm_winop_config_free(cfg);
  return NULL;
}
