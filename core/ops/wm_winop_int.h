/* The window operator's insides, shared by its files (internal: only core/ops/wm_winop*.c
 * include this). The files, one concern each:
 *   wm_winop.c          the operator: construction, vtable, watermarks, freeing
 *   wm_winop_record.c   what a record does to a window (the general path and the fast paths
 *                       derived from it), lookahead hints
 *   wm_winop_fire.c     firing: emitting a window's result, acting on triggers, timer groups
 *   wm_winop_state.c    the keyed window state: the slab of entries, its index, a merging
 *                       key's sessions (a treap), list-mode records
 *   wm_winop_timers.c   timer queues, cleanup and wake-up timers, the triggers' timer service
 *   wm_winop_session.c  merging (session) windows: merge_add
 * They call one another one way only, bottom first: state, timers, first, panes, fire,
 * session, record, ckpt, wm_winop.c (spec/layers.lua checks that no two call each other).
 *   wm_winop_panes.c    sliding windows kept in panes
 *   wm_winop_first.c    first records packed inline
 *   wm_winop_ckpt.c     the checkpoint format
 * Functions shared between the files are named wm_wo_*; the hot path's helpers are static
 * inline here, so that splitting the file costs the record path no call. */
#ifndef WM_WINOP_INT_H
#define WM_WINOP_INT_H

#include <stdint.h>
#include <string.h>

#include "base/wm_hash.h"
#include "ops/wm_winop_config.h"
#include "time/wm_time.h"
#include "time/wm_timer.h"

/* A step of the record path: inlined wherever it is called, so that the fast paths, which
 * call the general path's steps (wm_winop_record.c), pay no call for them. */
#if defined(__GNUC__)
#define WO_STEP static inline __attribute__((always_inline))
#else
#define WO_STEP static inline
#endif

/* ---- window state ------------------------------------------------------------------
 *
 * A slab of entries, one per (key, window), with an open-addressing index. Windows that
 * do not merge are found by (key, window) directly. Merging (session) windows are indexed
 * by key alone: the index points at the root of the key's sessions, a treap (see "a key's
 * sessions" below) threaded in order of start (knext, kprev), usually of one or two entries.
 *
 * Timers live in two queues grouped by timestamp (event time, processing time), holding
 * (entry, generation) with the entry's creation sequence as the order among equal times.
 * Deletion is lazy: on firing, a timer counts only if its entry still wants it:
 *   - the default event-time trigger (inlined): the entry's fire_t;
 *   - other triggers: the entry's set of registered (time, domain) pairs (tm);
 *   - cleanup: the time equals the window's cleanup time.
 * Merging event-time windows move (a session grows with every record), so a timer per
 * move would stay queued until its time: one per record. Instead such a window keeps one
 * wake-up timer for its firing (default trigger) and its cleanup, at wake_t, the earlier of
 * the two; a move that needs nothing earlier pushes nothing, and when the wake-up pops,
 * fire_group pushes the next one (wm_wo_wake_at). Timers of other triggers go through tm.
 */
typedef struct tmreg {
  int64_t t;
  int domain;
  uint32_t epoch; /* compact(): the pass that kept a queued timer for it */
} tmreg;

typedef struct wentry {
  /* hot: what a record's lookup and a built-in aggregation touch: one cache line */
  uint64_t hash;
  uint64_t kpre;     /* string keys: the first 8 bytes (zero padded), compared before the
                        bytes; a free slot: the next free slot (the free list) */
  wm_window w;
  wm_value aux;      /* incremental state (owned); built-ins keep their number here */
  uint64_t seq;      /* creation order: ties between timers fire in this order */
  uint32_t klen : 28; /* string keys: the length (KLEN_MAX: that long or longer) */
  uint32_t kcls : 2;  /* KEY_OTHER, KEY_STR or KEY_COMPOSITE */
  uint32_t fire : 1;  /* default trigger: its firing timer is queued, at max_ts */
  uint32_t inl : 1;   /* the cold part holds the first record packed (rec), see "inline" */
  uint32_t gen : 31;  /* bumped when the slot is freed: stale timers are ignored */
  uint32_t live : 1;
} wentry;

#define KLEN_MAX ((1u << 28) - 1)

/* cold: the rest of an entry, in a parallel array (same index): read when a window is
 * created, fires or is deleted. A key of a string of up to 8 bytes is all in the hot part
 * (kpre, klen, kcls), and operators with the default trigger keep no copy of it (key is
 * nil: key_of rebuilds it); then the first record of a built-in sum, min or max may be
 * kept packed in the 32 bytes instead of a retained row (inl). */
typedef struct wcold {
  union {
    struct {
      wm_value key; /* owned; nil: the key is the hot part's kpre/klen (key_of) */
      wm_value acc; /* incremental state (owned) */
    };
    uint8_t rec[32]; /* inl: the first record, packed (pack_first) */
  };
} wcold;

/* what only some operators use (list mode, evictors, custom triggers, merging windows):
 * a third parallel array, allocated only for them (winop.x; NULL otherwise) */
typedef struct wext {
  int64_t wake_t;    /* merging event-time windows: the queued wake-up, or WM_TIME_MIN */
  uint32_t knext;    /* merging windows: the key's next window (by start), or NONE */
  uint32_t kprev;    /* ... its previous window, or NONE */
  uint32_t kl, kr, kup; /* ... its children and parent in the key's treap, or NONE */
  uint32_t nitems, capitems;
  wm_value *items;   /* list mode: owned records */
  int64_t *its;      /* with an evictor: their timestamps */
  int64_t tstate[2]; /* trigger state */
  wm_value hstate;   /* trigger state of host triggers (owned) */
  tmreg *tm;         /* timers the trigger registered */
  uint32_t ntm, captm;
} wext;

enum { KEY_OTHER, KEY_STR, KEY_COMPOSITE };

/* the cold part and the extension of hot entry p_ (with the operator state s in scope) */
#define CO(p_) (&s->c[(p_) - s->e])
#define XO(p_) (&s->x[(p_) - s->e])
_Static_assert(sizeof(wentry) == 64, "the hot part of an entry is one cache line");
_Static_assert(sizeof(wcold) == 32, "the cold part of an entry is half a cache line");

/* A key as the index compares it: for strings, class, length and first 8 bytes first, so
 * that a lookup reads the key's bytes (another cache miss) only for keys longer than 8. */
typedef struct kprobe {
  const wm_value *key;
  uint64_t pre;
  uint32_t len;
  uint8_t cls;
} kprobe;

static inline uint64_t str_pre(const char *b, size_t n) {
  uint64_t pre = 0;
  if (n >= 8) {
    memcpy(&pre, b, 8); /* a fixed size: no call */
  } else {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the same value as a memcpy of n bytes into zero, from two overlapping loads */
    if (n >= 4) {
      uint32_t lo, hi;
      memcpy(&lo, b, 4);
      memcpy(&hi, b + n - 4, 4);
      pre = (uint64_t)lo | ((uint64_t)hi << (8 * (n - 4)));
    } else if (n >= 2) {
      uint16_t lo, hi;
      memcpy(&lo, b, 2);
      memcpy(&hi, b + n - 2, 2);
      pre = (uint64_t)lo | ((uint64_t)hi << (8 * (n - 2)));
    } else if (n == 1) {
      pre = (unsigned char)b[0];
    }
#else
    memcpy(&pre, b, n);
#endif
  }
  return pre;
}

WO_STEP kprobe kprobe_of(const wm_value *key) {
  kprobe k = {key, 0, 0, KEY_OTHER};
  if (wm_value_is_string(key)) {
    size_t n;
    const char *b = wm_value_str(key, &n);
    k.pre = str_pre(b, n);
    k.len = n < KLEN_MAX ? (uint32_t)n : KLEN_MAX; /* as an entry's klen */
    k.cls = (key->flags & WM_VF_COMPOSITE) ? KEY_COMPOSITE : KEY_STR;
  }
  return k;
}

/* c: e's cold part, read only for keys that are not strings or longer than 8 bytes */
WO_STEP bool key_matches(const wentry *e, const wcold *c, const kprobe *k) {
  if (e->kcls != k->cls) return false;
  if (k->cls == KEY_OTHER) return wm_key_equal(&c->key, k->key);
  if (e->klen != k->len || e->kpre != k->pre) return false;
  if (k->len <= 8) return true;
  if (e->inl) { /* the rest of the key is at the start of the packed record */
    size_t n;
    const char *b = wm_value_str(k->key, &n);
    return memcmp(b + 8, c->rec, n - 8) == 0;
  }
  return wm_key_equal(&c->key, k->key);
}

#define TOMB UINT32_MAX
#define NONE UINT32_MAX
typedef struct winop {
  wm_winop_config cfg;
  char *late_tag;
  int late_port;
  wentry *e;         /* hot parts, 64-byte aligned (inside e_raw) */
  void *e_raw;       /* the block e is in */
  wcold *c;          /* cold parts */
  wext *x;           /* extensions (need_ext), else NULL */
  uint32_t ne, cape, free_head, nlive;
  uint64_t *idx;      /* slots: entry + 1 (0 empty, TOMB) in the low half, hash >> 32 above */
  size_t capidx, usedidx;
  wm_timers *timers;  /* event time */
  wm_timers *ptimers; /* processing time */
  wm_window *wins;    /* scratch for the assigner */
  uint64_t *whash;    /* scratch: entry_hash of each of wins */
  uint32_t *run;      /* scratch for merging */
  uint32_t caprun;
  wm_trigger *trig;
  bool fast;          /* the default event-time trigger, inlined */
  bool merging;       /* session windows */
  bool event_time;    /* windows end on event time (not processing-time, not global) */
  bool list;          /* keep every record (process functions, evictors) */
  bool pt_flushing;   /* end of input: processing-time timers drain, new ones are ignored */
  const wm_field *key1;      /* key_by of one field: read it inline (wm_keysel_field1) */
  const wm_field *sum_field; /* the built-in sum: add integers inline (wm_winfn_sum_field) */
  bool tfast;         /* tumbling, default trigger, key1 and sum_field: tumble_hit first */
  bool hit_tumble;    /* tfast and the fast paths on (wm_winop_set_fast_paths) */
  bool hit_pane;      /* panes_ok, key1 and the fast paths on: pane_hit first */
  uint64_t hits;      /* records a fast path took (wm_winop_fast_hits) */
  uint32_t nahead;    /* lookahead: hints taken; the last WM_AHEAD of them: */
  uint64_t ring[WM_AHEAD]; /* their entry hashes */
  uint8_t ring_ok[WM_AHEAD]; /* whether each was prefetched */
  bool tw_ok;         /* tumbling: tw is the window of the last record (not cut at MIN or MAX) */
  wm_window tw;
  int64_t tw_clean;   /* cleanup_of(tw) */
  int64_t firing_t;   /* time of the timer being fired (WM_TIME_MIN: none) */
  int64_t ts_lo, ts_hi; /* event time: the valid timestamps (wm_assigner_ts_range) */
  bool panes_ok;      /* sliding, default trigger, sum/min/max/count, no lateness: panes */
  int pane_agg;       /* the built-in (WM_AGG_SUM, _MIN, _MAX, _COUNT) */
  wm_field *pane_field; /* the field it reads (NULL for count) */
  bool panes;         /* the state is in panes (see "panes" below) */
  uint32_t npane;     /* live pane entries (not windows: wm_winop_open_windows omits them) */
  bool pc_ok;         /* panes: pc is the pane of the last record, s->wins its pn windows */
  wm_window pc;
  size_t pn;
  int64_t pc_clean;   /* cleanup_of the last window holding pc (the one starting with it) */
  size_t compact_at[2]; /* merging: queue sizes (event, processing) that trigger compact() */
  uint32_t epoch;       /* compact()'s pass */
  bool need_ext;        /* list mode, an evictor, a custom trigger or merging: s->x */
  bool kelide;          /* the default trigger: keys of up to 8 bytes are not copied */
  bool inl_ok;          /* built-in sum, min or max, not merging: first records may be packed */
  wm_schema *rec_schema; /* inl: the schema of the packed records (referenced) */
  int inl_fidx;          /* inl: the index of the aggregated field in rec_schema */
  wm_row *fire_row;      /* inl: the last row fired (referenced), reused once nobody else
                            holds it; its string fields hold fire_cap[j] bytes */
  uint32_t *fire_cap;
  bool by_chan;          /* cfg.first_by_chan in effect: fch holds each entry's channel */
  uint8_t *fch;          /* by_chan: the channel of each entry's first record */
  int chan;              /* the channel of the record being added (wm_winop_chan) */
} winop;

/* A key rebuilt from an entry (key_of): valid while the keybuf is. */
typedef struct keybuf {
  wm_value v;
  char b[40];
} keybuf;

/* Entry i's key: its copy in the cold part, or a string rebuilt in kb: a key of up to 8
 * bytes the operator did not copy (all in kpre), or the key of an entry with a packed
 * first record (kpre, then the rest at the start of the record: wm_wo_inline_first). */
static inline const wm_value *key_of(const winop *s, uint32_t i, keybuf *kb) {
  const wentry *e = &s->e[i];
  if (!e->inl && s->c[i].key.type != WM_NIL) return &s->c[i].key;
  memcpy(kb->b, &e->kpre, 8);
  if (e->klen > 8) memcpy(kb->b + 8, s->c[i].rec, e->klen - 8);
  kb->v = wm_cstr(kb->b, e->klen);
  if (e->kcls == KEY_COMPOSITE) kb->v.flags = WM_VF_COMPOSITE;
  return &kb->v;
}

/* Entry i's key as the index compares it. */
static inline kprobe kprobe_at(const winop *s, uint32_t i, keybuf *kb) {
  return kprobe_of(key_of(s, i, kb));
}

/* The hash of a key inside this operator's state (never seen outside it: exchanges
 * partition with wm_key_hash). Strings of up to 8 bytes hash from the probe's inline
 * prefix with one mix instead of a byte loop. */
static inline uint64_t short_key_bits(uint64_t pre, uint64_t len, uint64_t cls) {
  return pre ^ (len << 56) ^ (cls << 60) ^ 0x5bd1e9955bd1e995ULL;
}

/* A key's part of entry_hash: short strings unmixed (entry_hash mixes once, with the
 * window: one mix less on every record's path to its slot), anything else wm_key_hash. */
static inline uint64_t key_hash_of(const kprobe *k) {
  if (k->cls != KEY_OTHER && k->len <= 8) return short_key_bits(k->pre, k->len, k->cls);
  return wm_key_hash(k->key);
}

/* The hash of an entry: one mix of the key's bits and the window's (merging windows: of the
 * key alone). The full key and window are compared on every match, so two entries of one
 * hash are only a probe longer. */
static inline uint64_t entry_hash(const winop *s, uint64_t khash, wm_window w) {
  if (s->merging) return wm_mix64(khash);
  return wm_mix64(khash ^ ((uint64_t)w.start * WM_HASH_GOLDEN) ^ ((uint64_t)w.stop * WM_HASH_ODD2));
}

static inline int64_t max_ts_of(wm_window w) {
  return (w.start == WM_TIME_MIN && w.stop == WM_TIME_MAX) ? WM_TIME_MAX : w.stop - 1;
}

static inline int64_t cleanup_of(const winop *s, wm_window w) {
  return wm_time_add_sat(max_ts_of(w), s->cfg.lateness);
}

static inline bool win_eq(wm_window a, wm_window b) { return a.start == b.start && a.stop == b.stop; }

/* Index slots carry the upper half of the entry's hash, so that probing past other
 * entries never reads them: a lookup costs one index line and the found entry's line. */
static inline uint32_t slot_ent(uint64_t v) { return (uint32_t)v; }
static inline uint64_t slot_make(uint32_t ent, uint64_t h) { return (uint64_t)ent | (h >> 32 << 32); }
/* The home slot of hash h: from its upper half, the half the slot holds, so that moving
 * slots (idx_remove) needs no entry's line (at 10^6 windows every one is a cache miss). */
static inline size_t home_of(uint64_t h, size_t mask) { return (size_t)(h >> 32) & mask; }

/* The slot of (key, w) in the index (merging windows: of key): found (1) or where to
 * insert (0). The window operator keeps this index rather than the core's shared one
 * (ops/wm_keyidx.h): it is the hottest table of the runtime (bench/fast_path.lua, 200 000
 * records of 10^4 keys: 215.4 M instructions under callgrind, of which the inline record
 * steps of this header, the probe among them, are 26.3 M, about 131 a record), and it keys by
 * (key, window) with the key's 8-byte prefix and the upper half of the hash in the slot, so a
 * probe compares in the index line; wm_keyidx costs an out-of-line call, an indirect key
 * callback and a full wm_key_equal per probe. */
WO_STEP size_t idx_find(const winop *s, const kprobe *key, uint64_t h, wm_window w, int *found) {
  size_t mask = s->capidx - 1, i = home_of(h, mask), tomb = SIZE_MAX;
  for (;;) {
    uint64_t v = s->idx[i];
    uint32_t ent = slot_ent(v);
    if (ent == 0) {
      *found = 0;
      return tomb != SIZE_MAX ? tomb : i;
    }
    if (ent == TOMB) {
      if (tomb == SIZE_MAX) tomb = i;
    } else if ((v >> 32) == (h >> 32)) {
      const wentry *e = &s->e[ent - 1];
      if (e->hash == h && (s->merging || win_eq(e->w, w)) && key_matches(e, &s->c[ent - 1], key)) {
        *found = 1;
        return i;
      }
    }
    i = (i + 1) & mask;
  }
}
/* ---- between the operator's files --------------------------------------------------- */

/* the record path (wm_winop_record.c) */
int wm_wo_record(wm_op *op, int chan, const wm_value *rec, int64_t ts);
bool wm_wo_ahead_wants(wm_op *op, wm_ahead *a);
size_t wm_wo_ahead(wm_op *op, const wm_hint *h, size_t n);
/* firing (wm_winop_fire.c) */
int wm_wo_emit_window(wm_op *op, winop *s, uint32_t i);
/* Acts on a trigger's result for entry i (fires, purges). */
int wm_wo_act(wm_op *op, winop *s, uint32_t i, int res);
/* Fires the timers of queue q (of domain) up to upto. */
int wm_wo_drain(wm_op *op, winop *s, wm_timers *q, int domain, int64_t upto);
/* the state: slab and index (wm_winop_state.c) */
int wm_wo_idx_reserve(wm_op *op, winop *s);
int wm_wo_hot_grow(winop *s, uint32_t cap);
void wm_wo_entry_purge(wm_op *op, winop *s, wentry *e);
void wm_wo_entry_delete(wm_op *op, winop *s, uint32_t i);
void wm_wo_slab_clear(wm_op *op, winop *s);
int wm_wo_entry_new(wm_op *op, winop *s, const kprobe *k, uint64_t h, wm_window w, size_t at,
                    uint32_t *out);
int wm_wo_items_reserve(wm_op *op, winop *s, wentry *e);
void wm_wo_klink(wext *x, uint32_t i, uint32_t prev, uint32_t next, uint32_t *root);
void wm_wo_kunlink(wext *x, uint32_t i, uint32_t *root);
/* merging (session) windows (wm_winop_session.c) */
int wm_wo_merge_add(wm_op *op, winop *s, const kprobe *key, uint64_t khash, wm_window w,
                    uint32_t *out, int *skip);
/* timers and the triggers' timer service (wm_winop_timers.c) */
int wm_wo_push_event(wm_op *op, winop *s, uint32_t i, int64_t t);
int wm_wo_push_cleanup(wm_op *op, winop *s, uint32_t i);
int wm_wo_wake_at(wm_op *op, winop *s, uint32_t i);
int wm_wo_merged_timers(wm_op *op, winop *s, uint32_t i);
void wm_wo_tctx_init(wm_op *op, winop *s, uint32_t i, wm_trigger_ctx *c);
bool wm_wo_tm_take(winop *s, wentry *e, int domain, int64_t t);
/* inline first records (wm_winop_first.c) */
bool wm_wo_inline_first(wm_op *op, winop *s, uint32_t i, const wm_value *rec);
int wm_wo_inline_fire(wm_op *op, winop *s, uint32_t first, int64_t max_ts, const wm_value *aux);
int wm_wo_unpack_first(wm_op *op, const winop *s, uint32_t i, wm_value *out);
/* panes (wm_winop_panes.c) */
int wm_wo_pane_emit(wm_op *op, winop *s, uint32_t i);
void wm_wo_pane_drop(wm_op *op, winop *s, uint32_t i);
int wm_wo_unpane(wm_op *op, winop *s);
/* checkpoints (wm_winop_ckpt.c) */
int wm_wo_snapshot(wm_op *op, wm_state_io *io);
int wm_wo_restore(wm_op *op, wm_state_io *io);

/* ---- small helpers every file uses ---------------------------------------------------- */

static inline uint64_t payload(uint32_t i, uint32_t gen) { return (uint64_t)i | ((uint64_t)gen << 32); }
static inline void knone(wext *x) { x->knext = x->kprev = x->kl = x->kr = x->kup = NONE; }
static inline bool intersects(wm_window a, wm_window b) { return a.start <= b.stop && b.start <= a.stop; }
static inline bool is_pane(const winop *s, const wentry *e) {
  return s->panes && e->w.stop - e->w.start == s->cfg.assigner.slide;
}

static inline bool entry_empty(const winop *s, const wentry *e) {
  if (s->list) return XO(e)->nitems == 0;
  return !e->inl && CO(e)->acc.type == WM_NIL && e->aux.type == WM_NIL;
}

/* Finds or creates the state of (key, w) (windows that do not merge); h is
 * entry_hash(key, w). */
WO_STEP int entry_get(wm_op *op, winop *s, const kprobe *key, uint64_t h, wm_window w,
                     uint32_t *out, int *created) {
  /* wm_wo_idx_reserve's test first: the call only when the index must grow */
  if ((s->usedidx + 1) * 4 >= s->capidx * 3 && wm_wo_idx_reserve(op, s) != WM_OK) return WM_ERR;
  int found;
  size_t at = idx_find(s, key, h, w, &found);
  if (found) {
    *out = slot_ent(s->idx[at]) - 1;
    *created = 0;
    return WM_OK;
  }
  *created = 1;
  return wm_wo_entry_new(op, s, key, h, w, at, out);
}

/* f for entry e (not inl); kb: where its key may be rebuilt */
static inline void fire_init(wm_op *op, winop *s, wentry *e, wm_fire *f, keybuf *kb) {
  f->key = key_of(s, (uint32_t)(e - s->e), kb);
  f->window = e->w;
  f->max_ts = max_ts_of(e->w);
  f->watermark = op->wm;
  f->acc = &CO(e)->acc;
  f->aux = &e->aux;
  f->items = s->x ? XO(e)->items : NULL;
  f->nitems = s->x ? XO(e)->nitems : 0;
}

#endif
