/* Built-in triggers and evictors, with Flink's rules (EventTimeTrigger, ProcessingTimeTrigger,
 * CountTrigger, ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, PurgingTrigger,
 * CountEvictor, TimeEvictor). */
#include "ops/wm_trigger.h"

#include <stdlib.h>

#include "time/wm_time.h"

static int cont(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  (void)t;
  (void)c;
  (void)time;
  return WM_TR_CONTINUE;
}

static int no_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  (void)c;
  return WM_OK;
}

/* ---- event_time: fire when the watermark passes the window's end -------------------- */

static int et_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)t;
  (void)rec;
  (void)ts;
  if (c->max_ts <= c->watermark) return WM_TR_FIRE;
  return wm_trigger_register(c, WM_DOMAIN_EVENT, c->max_ts);
}
static int et_time(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  (void)t;
  return time == c->max_ts ? WM_TR_FIRE : WM_TR_CONTINUE;
}
static int et_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  if (c->max_ts > c->watermark) return wm_trigger_register(c, WM_DOMAIN_EVENT, c->max_ts);
  return WM_OK;
}
static int et_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  wm_trigger_delete(c, WM_DOMAIN_EVENT, c->max_ts);
  return WM_OK;
}
static const wm_trigger_vt event_time_vt = {"event_time", et_element, et_time, cont, et_merge, NULL, et_clear};

/* ---- processing_time ---------------------------------------------------------------- */

static int pt_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)t;
  (void)rec;
  (void)ts;
  return wm_trigger_register(c, WM_DOMAIN_PROCESSING, c->max_ts);
}
static int pt_time(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  (void)t;
  (void)c;
  (void)time;
  return WM_TR_FIRE;
}
static int pt_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  if (c->max_ts > wm_trigger_now(c)) return wm_trigger_register(c, WM_DOMAIN_PROCESSING, c->max_ts);
  return WM_OK;
}
static int pt_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  wm_trigger_delete(c, WM_DOMAIN_PROCESSING, c->max_ts);
  return WM_OK;
}
static const wm_trigger_vt processing_time_vt = {"processing_time", pt_element, cont, pt_time, pt_merge, NULL, pt_clear};

/* ---- count(n): state[0] counts the records since the last firing --------------------- */

static int count_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)rec;
  (void)ts;
  if (++c->state[0] >= t->n) {
    c->state[0] = 0;
    return WM_TR_FIRE;
  }
  return WM_TR_CONTINUE;
}
static int count_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  (void)c;
  return WM_OK;
}
static void sum_state(const wm_trigger *t, int64_t *into, const int64_t *from) {
  (void)t;
  into[0] += from[0];
}
static int count_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  c->state[0] = 0;
  return WM_OK;
}
static const wm_trigger_vt count_vt = {"count", count_element, cont, cont, count_merge, sum_state, count_clear};

/* ---- continuous_event_time(i) / continuous_processing_time(i) ----------------------
 * state[0] = 1 when a next firing time is set, state[1] = that time. */

static int next_fire(const wm_trigger *t, wm_trigger_ctx *c, int domain, int64_t time) {
  int64_t next = wm_time_add_sat(time, t->n);
  if (next > c->max_ts) next = c->max_ts;
  c->state[0] = 1;
  c->state[1] = next;
  return wm_trigger_register(c, domain, next);
}

static int cet_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)rec;
  if (c->max_ts <= c->watermark) return WM_TR_FIRE;
  if (wm_trigger_register(c, WM_DOMAIN_EVENT, c->max_ts) != WM_OK) return WM_ERR;
  if (!c->state[0]) /* Flink aligns with Java's remainder (towards zero) */
    return next_fire(t, c, WM_DOMAIN_EVENT, ts - (ts % t->n));
  return WM_TR_CONTINUE;
}
static int cet_time(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  if (time == c->max_ts) return WM_TR_FIRE;
  if (c->state[0] && c->state[1] == time) {
    c->state[0] = 0;
    if (next_fire(t, c, WM_DOMAIN_EVENT, time) != WM_OK) return WM_ERR;
    return WM_TR_FIRE;
  }
  return WM_TR_CONTINUE;
}
static void min_state(const wm_trigger *t, int64_t *into, const int64_t *from) {
  (void)t;
  if (!from[0]) return;
  if (!into[0] || from[1] < into[1]) {
    into[0] = 1;
    into[1] = from[1];
  }
}
static int cet_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  if (c->state[0]) return wm_trigger_register(c, WM_DOMAIN_EVENT, c->state[1]);
  return WM_OK;
}
static int cet_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  if (c->state[0]) wm_trigger_delete(c, WM_DOMAIN_EVENT, c->state[1]);
  c->state[0] = 0;
  return WM_OK;
}
static const wm_trigger_vt cet_vt = {"continuous_event_time", cet_element, cet_time, cont, cet_merge, min_state, cet_clear};

static int cpt_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)rec;
  (void)ts;
  if (!c->state[0]) {
    int64_t now = wm_trigger_now(c);
    if (next_fire(t, c, WM_DOMAIN_PROCESSING, now - (now % t->n)) != WM_OK) return WM_ERR;
  }
  return WM_TR_CONTINUE;
}
static int cpt_time(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  if (c->state[0] && c->state[1] == time) {
    c->state[0] = 0;
    if (next_fire(t, c, WM_DOMAIN_PROCESSING, time) != WM_OK) return WM_ERR;
    return WM_TR_FIRE;
  }
  return WM_TR_CONTINUE;
}
static int cpt_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  if (c->state[0]) return wm_trigger_register(c, WM_DOMAIN_PROCESSING, c->state[1]);
  return WM_OK;
}
static int cpt_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  if (c->state[0]) wm_trigger_delete(c, WM_DOMAIN_PROCESSING, c->state[1]);
  c->state[0] = 0;
  return WM_OK;
}
static const wm_trigger_vt cpt_vt = {"continuous_processing_time", cpt_element, cont, cpt_time, cpt_merge, min_state, cpt_clear};

/* ---- end_of_stream: fires once, when the input ends (the MAX watermark) ------------- */

static int eos_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)t;
  (void)rec;
  (void)ts;
  return wm_trigger_register(c, WM_DOMAIN_EVENT, WM_TIME_MAX);
}
static int eos_time(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  (void)t;
  (void)c;
  return time == WM_TIME_MAX ? WM_TR_FIRE : WM_TR_CONTINUE;
}
static int eos_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  return wm_trigger_register(c, WM_DOMAIN_EVENT, WM_TIME_MAX);
}
static const wm_trigger_vt eos_vt = {"end_of_stream", eos_element, eos_time, cont, eos_merge, NULL, no_clear};

/* ---- never (the default of global windows) ------------------------------------------ */

static int never_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)t;
  (void)c;
  (void)rec;
  (void)ts;
  return WM_TR_CONTINUE;
}
static int never_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  (void)c;
  return WM_OK;
}
static const wm_trigger_vt never_vt = {"never", never_element, cont, cont, never_merge, NULL, no_clear};

/* ---- purging(inner): every FIRE becomes FIRE_AND_PURGE ------------------------------ */

static int purge_of(int r) { return r == WM_TR_FIRE ? WM_TR_FIRE_AND_PURGE : r; }
static int pg_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  return purge_of(t->inner->vt->on_element(t->inner, c, rec, ts));
}
static int pg_event(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  return purge_of(t->inner->vt->on_event_time(t->inner, c, time));
}
static int pg_proc(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  return purge_of(t->inner->vt->on_processing_time(t->inner, c, time));
}
static int pg_merge(const wm_trigger *t, wm_trigger_ctx *c) {
  return t->inner->vt->on_merge(t->inner, c);
}
static void pg_merge_state(const wm_trigger *t, int64_t *into, const int64_t *from) {
  if (t->inner->vt->merge_state) t->inner->vt->merge_state(t->inner, into, from);
}
static int pg_clear(const wm_trigger *t, wm_trigger_ctx *c) { return t->inner->vt->clear(t->inner, c); }
static const wm_trigger_vt purging_vt = {"purging", pg_element, pg_event, pg_proc, pg_merge, pg_merge_state, pg_clear};

wm_trigger *wm_trigger_new(int kind, int64_t n) {
  const wm_trigger_vt *vt;
  switch (kind) {
  case WM_TRIG_EVENT_TIME: vt = &event_time_vt; break;
  case WM_TRIG_PROCESSING_TIME: vt = &processing_time_vt; break;
  case WM_TRIG_COUNT: vt = &count_vt; break;
  case WM_TRIG_CONTINUOUS_EVENT_TIME: vt = &cet_vt; break;
  case WM_TRIG_CONTINUOUS_PROCESSING_TIME: vt = &cpt_vt; break;
  case WM_TRIG_END_OF_STREAM: vt = &eos_vt; break;
  case WM_TRIG_NEVER: vt = &never_vt; break;
  default: return NULL;
  }
  if ((kind == WM_TRIG_COUNT || kind == WM_TRIG_CONTINUOUS_EVENT_TIME ||
       kind == WM_TRIG_CONTINUOUS_PROCESSING_TIME) && n <= 0)
    return NULL;
  wm_trigger *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->vt = vt;
  t->n = n;
  return t;
}

wm_trigger *wm_trigger_purging(wm_trigger *inner) {
  if (!inner) return NULL;
  wm_trigger *t = calloc(1, sizeof *t);
  if (!t) {
    wm_trigger_free(inner);
    return NULL;
  }
  t->vt = &purging_vt;
  t->inner = inner;
  return t;
}

wm_trigger *wm_trigger_custom(const wm_trigger_vt *vt, void *ud, void (*free_ud)(void *)) {
  wm_trigger *t = calloc(1, sizeof *t);
  if (!t) {
    if (free_ud) free_ud(ud);
    return NULL;
  }
  t->vt = vt;
  t->ud = ud;
  t->free = free_ud;
  return t;
}

void wm_trigger_free(wm_trigger *t) {
  if (!t) return;
  wm_trigger_free(t->inner);
  if (t->free) t->free(t->ud);
  free(t);
}

bool wm_trigger_is_default_event_time(const wm_trigger *t) { return t && t->vt == &event_time_vt; }

bool wm_trigger_can_merge(const wm_trigger *t) {
  return t->vt->on_merge != NULL && (!t->inner || wm_trigger_can_merge(t->inner));
}

/* ---- evictors ----------------------------------------------------------------------- */

static void evict_first(const wm_host *h, wm_evict_items *it, uint32_t k) {
  for (uint32_t i = 0; i < k; i++) wm_value_release(h, &it->items[i]);
  for (uint32_t i = k; i < it->n; i++) {
    it->items[i - k] = it->items[i];
    it->ts[i - k] = it->ts[i];
  }
  it->n -= k;
}

void wm_evict_builtin(const wm_host *h, const wm_evictor *e, wm_evict_items *it) {
  if (e->kind == WM_EV_COUNT) {
    if (it->n > (uint64_t)e->n) evict_first(h, it, it->n - (uint32_t)e->n);
    return;
  }
  if (e->kind != WM_EV_TIME || it->n == 0 || it->ts[0] == WM_TIME_MIN) return;
  /* TimeEvictor: keep the records newer than (latest timestamp - keep) */
  int64_t latest = WM_TIME_MIN;
  for (uint32_t i = 0; i < it->n; i++)
    if (it->ts[i] > latest) latest = it->ts[i];
  int64_t cutoff = wm_time_sub_sat(latest, e->n);
  uint32_t k = 0;
  for (uint32_t i = 0; i < it->n; i++) {
    if (it->ts[i] <= cutoff) {
      wm_value_release(h, &it->items[i]);
      continue;
    }
    it->items[k] = it->items[i];
    it->ts[k] = it->ts[i];
    k++;
  }
  it->n = k;
}
