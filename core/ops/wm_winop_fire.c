/* The window operator's firing: a window's result emitted, a trigger's result acted on, the
 * windows of a popped timer group fired and cleaned up. */
#include "ops/wm_winop_int.h"

#include "graph/wm_observe.h"

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

int wm_wo_drain(wm_op *op, winop *s, wm_timers *q, int domain, int64_t upto) {
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (wm_timers_pop(q, upto, &t, &ents, &n))
    if (fire_group(op, s, domain, t, ents, n) != WM_OK) return WM_ERR;
  return WM_OK;
}

