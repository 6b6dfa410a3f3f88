/* Window triggers and evictors (semantics.md §5, api.md: Triggers, Evictors).
 *
 * A trigger is a small vtable the window operator calls on every record added to a window,
 * on the window's timers, when windows merge and when a window is cleared. Each callback
 * returns a WM_TR_* result (or WM_ERR). The window operator keeps, per (key, window), two
 * integers of trigger state (tstate[0..1]) and one host value (hstate, for triggers written
 * in Lua), and the set of timers the trigger registered (deduplicated per time and domain,
 * as Flink's timer service does).
 *
 * The default event-time trigger is never called through this vtable: the window operator
 * recognises it (wm_trigger_is_default_event_time) and inlines it, so that the common case
 * pays no indirect call per record.
 */
#ifndef WM_TRIGGER_H
#define WM_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/wm_graph.h"
#include "time/wm_window.h"

enum {
  WM_TR_CONTINUE = 0,
  WM_TR_FIRE = 1,
  WM_TR_PURGE = 2,
  WM_TR_FIRE_AND_PURGE = 3,
};

enum { WM_DOMAIN_EVENT = 0, WM_DOMAIN_PROCESSING = 1 };

typedef struct wm_trigger_ctx wm_trigger_ctx;

/* The timer service a trigger sees, provided by the operator that runs the trigger (the
 * window operator): the trigger context carries it, so that triggers depend on no
 * operator. Registering the same (time, domain) twice for a window gives one timer. */
typedef struct wm_trigger_timers {
  int (*register_timer)(wm_trigger_ctx *c, int domain, int64_t t); /* WM_OK or WM_ERR */
  void (*delete_timer)(wm_trigger_ctx *c, int domain, int64_t t);
  int64_t (*now)(wm_trigger_ctx *c);                               /* processing time, ms */
} wm_trigger_timers;

/* What a trigger callback sees: the window, its key, clocks, its state, and the timer
 * service. Owned by the window operator; valid for the call. */
struct wm_trigger_ctx {
  wm_op *op;
  const wm_value *key;
  wm_window window;
  int64_t max_ts;
  int64_t watermark;
  int64_t *state;        /* two integers of per-window trigger state (0 initially) */
  wm_value *hstate;      /* per-window host state (nil initially; owned by the window) */
  const wm_trigger_timers *timers;
  void *owner;           /* the operator's internals, for the timer service */
  uint32_t entry;        /* the window, for the timer service */
};

/* The timer service, for triggers (built-in or written in Lua). */
static inline int wm_trigger_register(wm_trigger_ctx *c, int domain, int64_t t) {
  return c->timers->register_timer(c, domain, t);
}
static inline void wm_trigger_delete(wm_trigger_ctx *c, int domain, int64_t t) {
  c->timers->delete_timer(c, domain, t);
}
static inline int64_t wm_trigger_now(wm_trigger_ctx *c) { return c->timers->now(c); }

typedef struct wm_trigger wm_trigger;

typedef struct wm_trigger_vt {
  const char *name;
  int (*on_element)(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts);
  int (*on_event_time)(const wm_trigger *t, wm_trigger_ctx *c, int64_t time);
  int (*on_processing_time)(const wm_trigger *t, wm_trigger_ctx *c, int64_t time);
  /* After windows merged into c->window; the state was merged with merge_state. NULL: the
   * trigger cannot be used with merging windows. */
  int (*on_merge)(const wm_trigger *t, wm_trigger_ctx *c);
  /* Merges the integer state of a merged-away window into the target's. */
  void (*merge_state)(const wm_trigger *t, int64_t *into, const int64_t *from);
  /* The window is being deleted (or merged away). */
  int (*clear)(const wm_trigger *t, wm_trigger_ctx *c);
} wm_trigger_vt;

struct wm_trigger {
  const wm_trigger_vt *vt;
  int64_t n;           /* count(n), continuous_*(interval) */
  wm_trigger *inner;   /* purging(inner): owned */
  void *ud;            /* custom triggers: the host's data */
  void (*free)(void *ud);
  /* Checkpoints (optional, set by the host after wm_trigger_custom): state of the trigger
   * object itself, beyond the per-window state (state, hstate) that the window operator
   * checkpoints; a Lua trigger's snapshot(self) / restore(self, t). snapshot gives one
   * owned value *out, restore takes such a value (borrowed). NULL: nothing else. */
  int (*snapshot)(void *ud, wm_op *op, wm_value *out);
  int (*restore)(void *ud, wm_op *op, const wm_value *state);
};

typedef enum {
  WM_TRIG_EVENT_TIME = 1,
  WM_TRIG_PROCESSING_TIME,
  WM_TRIG_COUNT,
  WM_TRIG_CONTINUOUS_EVENT_TIME,
  WM_TRIG_CONTINUOUS_PROCESSING_TIME,
  WM_TRIG_END_OF_STREAM,
  WM_TRIG_NEVER,
} wm_trigger_kind;

/* A built-in trigger (n: the count or interval). NULL on allocation failure. Caller frees
 * with wm_trigger_free (or hands it to the window operator). */
wm_trigger *wm_trigger_new(int kind, int64_t n);
/* purging(inner): takes ownership of inner (freed on failure too). */
wm_trigger *wm_trigger_purging(wm_trigger *inner);
/* A trigger with the host's vtable (custom triggers written in Lua); ud freed with free_ud. */
wm_trigger *wm_trigger_custom(const wm_trigger_vt *vt, void *ud, void (*free_ud)(void *));
void wm_trigger_free(wm_trigger *t);

bool wm_trigger_is_default_event_time(const wm_trigger *t);
bool wm_trigger_can_merge(const wm_trigger *t);

/* ---- evictors ----------------------------------------------------------------------- */

/* The records of a window handed to an evictor: values (owned by the window) and their
 * timestamps. An evictor removes records by compacting the arrays in place (releasing
 * what it removes) and lowering *n. */
typedef struct wm_evict_items {
  wm_value *items;
  int64_t *ts;
  uint32_t n;
} wm_evict_items;

typedef struct wm_evictor {
  int kind;    /* 0: none; WM_EV_* */
  int64_t n;   /* count: records to keep; time: ms to keep */
  bool after;  /* evict after the window function instead of before */
  /* custom: called before (after = 0) and after (after = 1) the function. */
  int (*fn)(void *ud, wm_op *op, int after, const wm_trigger_ctx *c, wm_evict_items *it);
  void (*free)(void *ud);
  void *ud;
} wm_evictor;

enum { WM_EV_COUNT = 1, WM_EV_TIME, WM_EV_CUSTOM };

/* Applies a built-in evictor (Flink's CountEvictor / TimeEvictor rules) to it. */
void wm_evict_builtin(const wm_host *h, const wm_evictor *e, wm_evict_items *it);

#endif
