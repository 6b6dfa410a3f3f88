/* The window operator's timers: the event- and processing-time queues, cleanup and wake-up
 * timers, and the timer service of triggers. */
#include "ops/wm_winop_int.h"

#include <stdlib.h>

/* ---- timers ------------------------------------------------------------------------- */

static tmreg *tm_find(const winop *s, const wentry *e, int domain, int64_t t);

/* Whether a queued timer of a merging operator still counts (what fire_group tests), and is
 * the first one queued for it that this compaction pass sees: a trigger's registrations
 * are forgotten when its window merges, so on_merge may queue the same time again. */
static bool timer_wanted(winop *s, int domain, int64_t t, uint64_t p) {
  uint32_t i = (uint32_t)p, gen = (uint32_t)(p >> 32);
  if (i >= s->ne || !s->e[i].live || s->e[i].gen != gen) return false;
  const wentry *e = &s->e[i];
  if (domain == WM_DOMAIN_EVENT && s->event_time && t == XO(e)->wake_t) return true;
  if (domain == WM_DOMAIN_PROCESSING && s->cfg.assigner.processing_time && t == max_ts_of(e->w))
    return true;
  tmreg *r = s->fast ? NULL : tm_find(s, e, domain, t);
  if (!r || r->epoch == s->epoch) return false;
  r->epoch = s->epoch;
  return true;
}
static int keep_event(void *ud, int64_t t, uint64_t p) {
  return timer_wanted(ud, WM_DOMAIN_EVENT, t, p);
}
static int keep_processing(void *ud, int64_t t, uint64_t p) {
  return timer_wanted(ud, WM_DOMAIN_PROCESSING, t, p);
}

/* Merging windows supersede timers all the time (a trigger registers at the session's new
 * end with every record, and forgets the old one): once a queue has doubled since it was
 * last compacted, drop what no window wants any more, so that the queue stays in
 * proportion to the open windows. Amortised O(1) per push. */
static void compact(winop *s, int domain) {
  wm_timers *q = domain == WM_DOMAIN_EVENT ? s->timers : s->ptimers;
  size_t *at = &s->compact_at[domain];
  if (wm_timers_size(q) < *at) return;
  s->epoch++;
  wm_timers_retain(q, domain == WM_DOMAIN_EVENT ? keep_event : keep_processing, s);
  *at = 2 * wm_timers_size(q) + 64;
}

int wm_wo_push_event(wm_op *op, winop *s, uint32_t i, int64_t t) {
  if (s->merging) compact(s, WM_DOMAIN_EVENT);
  if (wm_timers_push(s->timers, t, payload(i, s->e[i].gen), s->e[i].seq) != 0)
    return wm_ctx_error(op->ctx, "out of memory registering a timer");
  return WM_OK;
}

static int push_processing(wm_op *op, winop *s, uint32_t i, int64_t t) {
  if (s->pt_flushing) return WM_OK;
  if (s->merging) compact(s, WM_DOMAIN_PROCESSING);
  size_t before = wm_timers_groups(s->ptimers);
  if (wm_timers_push(s->ptimers, t, payload(i, s->e[i].gen), s->e[i].seq) != 0)
    return wm_ctx_error(op->ctx, "out of memory registering a timer");
  /* one executor timer per distinct time */
  if (wm_timers_groups(s->ptimers) != before) return wm_ctx_register_processing_timer(op->ctx, op, t);
  return WM_OK;
}

/* The cleanup timer of entry i's window (event time: max_ts + lateness; processing time:
 * max_ts; global windows: none). With the default trigger and no lateness the firing
 * timer is the same instant and serves for both. */
int wm_wo_push_cleanup(wm_op *op, winop *s, uint32_t i) {
  wentry *e = &s->e[i];
  if (s->event_time) {
    int64_t cl = cleanup_of(s, e->w);
    if (s->fast && e->fire && max_ts_of(e->w) == cl) return WM_OK;
    return wm_wo_push_event(op, s, i, cl);
  }
  if (s->cfg.assigner.processing_time) return push_processing(op, s, i, max_ts_of(e->w));
  return WM_OK;
}

static const wm_trigger_timers trigger_timers;

/* Merging event-time windows: makes sure entry i has a wake-up queued at or before the
 * earlier of its firing (fire_t, default trigger) and its cleanup. */
int wm_wo_wake_at(wm_op *op, winop *s, uint32_t i) {
  wext *c = &s->x[i];
  int64_t need = cleanup_of(s, s->e[i].w);
  if (s->e[i].fire && max_ts_of(s->e[i].w) < need) need = max_ts_of(s->e[i].w);
  if (c->wake_t != WM_TIME_MIN && c->wake_t <= need) return WM_OK;
  c->wake_t = need;
  return wm_wo_push_event(op, s, i, need);
}

/* The timers of entry i once its window moved or was created (merging windows). */
int wm_wo_merged_timers(wm_op *op, winop *s, uint32_t i) {
  return s->event_time ? wm_wo_wake_at(op, s, i) : wm_wo_push_cleanup(op, s, i);
}

void wm_wo_tctx_init(wm_op *op, winop *s, uint32_t i, wm_trigger_ctx *c) {
  wentry *e = &s->e[i];
  c->op = op;
  c->key = &CO(e)->key;
  c->window = e->w;
  c->max_ts = max_ts_of(e->w);
  c->watermark = op->wm;
  c->state = XO(e)->tstate;
  c->hstate = &XO(e)->hstate;
  c->timers = &trigger_timers;
  c->owner = s;
  c->entry = i;
}

/* The timer service of triggers (wm_trigger_timers): a window's registered timers. */
static int trigger_register(wm_trigger_ctx *c, int domain, int64_t t) {
  winop *s = c->owner;
  wentry *e = &s->e[c->entry];
  if (domain == WM_DOMAIN_EVENT && c->op->wm == WM_TIME_MAX) {
    /* end of input: a window that never ends would otherwise re-register forever */
    if (c->max_ts == WM_TIME_MAX || t <= s->firing_t) return WM_OK;
  }
  if (domain == WM_DOMAIN_PROCESSING && s->pt_flushing) return WM_OK;
  if (tm_find(s, e, domain, t)) return WM_OK;
  wext *x = XO(e);
  if (x->ntm == x->captm) {
    uint32_t cap = x->captm ? x->captm * 2 : 2;
    tmreg *n = realloc(x->tm, cap * sizeof *n);
    if (!n) return wm_ctx_error(c->op->ctx, "out of memory registering a timer");
    x->tm = n;
    x->captm = cap;
  }
  x->tm[x->ntm] = (tmreg){.t = t, .domain = domain, .epoch = s->epoch - 1};
  x->ntm++;
  return domain == WM_DOMAIN_EVENT ? wm_wo_push_event(c->op, s, c->entry, t)
                                   : push_processing(c->op, s, c->entry, t);
}

/* The registration (t, domain) of entry e's trigger, or NULL. */
static tmreg *tm_find(const winop *s, const wentry *e, int domain, int64_t t) {
  const wext *x = XO(e);
  for (uint32_t k = 0; k < x->ntm; k++)
    if (x->tm[k].t == t && x->tm[k].domain == domain) return &x->tm[k];
  return NULL;
}

/* Removes (t, domain) from entry e's registered timers; whether it was there. */
bool wm_wo_tm_take(winop *s, wentry *e, int domain, int64_t t) {
  wext *x = XO(e);
  for (uint32_t k = 0; k < x->ntm; k++) {
    if (x->tm[k].t == t && x->tm[k].domain == domain) {
      x->tm[k] = x->tm[--x->ntm];
      return true;
    }
  }
  return false;
}

static void trigger_delete(wm_trigger_ctx *c, int domain, int64_t t) {
  winop *s = c->owner;
  wm_wo_tm_take(s, &s->e[c->entry], domain, t);
}

static int64_t trigger_now(wm_trigger_ctx *c) { return wm_ctx_now(c->op->ctx); }

static const wm_trigger_timers trigger_timers = {trigger_register, trigger_delete, trigger_now};
