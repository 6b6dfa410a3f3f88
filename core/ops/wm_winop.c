#include "ops/wm_winop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "time/wm_time.h"
#include "graph/wm_observe.h"
#include "graph/wm_statefmt.h"
#include "time/wm_timer.h"

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
 * fire_group pushes the next one (wake_at). Timers of other triggers go through tm.
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

/* The first 8 bytes of a string of n bytes, zero padded (a string's kpre). */
static const wm_op_vt winop_vt;

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

static kprobe kprobe_of(const wm_value *key) {
  kprobe k = {key, 0, 0, KEY_OTHER};
  if (wm_value_is_string(key)) {
    size_t n;
    const char *b = wm_value_str(key, &n);
    k.pre = str_pre(b, n);
    k.len = (uint32_t)n;
    k.cls = (key->flags & WM_VF_COMPOSITE) ? KEY_COMPOSITE : KEY_STR;
  }
  return k;
}

/* c: e's cold part, read only for keys that are not strings or longer than 8 bytes */
static bool key_matches(const wentry *e, const wcold *c, const kprobe *k) {
  if (e->kcls != k->cls) return false;
  if (k->cls == KEY_OTHER) return wm_key_equal(&c->key, k->key);
  if (e->klen != (k->len < KLEN_MAX ? k->len : KLEN_MAX) || e->kpre != k->pre) return false;
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
 * first record (kpre, then the rest at the start of the record: inline_first). */
static const wm_value *key_of(const winop *s, uint32_t i, keybuf *kb) {
  const wentry *e = &s->e[i];
  if (!e->inl && s->c[i].key.type != WM_NIL) return &s->c[i].key;
  memcpy(kb->b, &e->kpre, 8);
  if (e->klen > 8) memcpy(kb->b + 8, s->c[i].rec, e->klen - 8);
  kb->v = wm_cstr(kb->b, e->klen);
  if (e->kcls == KEY_COMPOSITE) kb->v.flags = WM_VF_COMPOSITE;
  return &kb->v;
}

/* Entry i's key as the index compares it. */
static kprobe kprobe_at(const winop *s, uint32_t i, keybuf *kb) {
  return kprobe_of(key_of(s, i, kb));
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

/* The hash of a key inside this operator's state (never seen outside it: exchanges
 * partition with wm_key_hash). Strings of up to 8 bytes hash from the probe's inline
 * prefix with one mix instead of a byte loop. */
static uint64_t short_key_bits(uint64_t pre, uint64_t len, uint64_t cls) {
  return pre ^ (len << 56) ^ (cls << 60) ^ 0x5bd1e9955bd1e995ULL;
}

/* A key's part of entry_hash: short strings unmixed (entry_hash mixes once, with the
 * window: one mix less on every record's path to its slot), anything else wm_key_hash. */
static uint64_t key_hash_of(const kprobe *k) {
  if (k->cls != KEY_OTHER && k->len <= 8) return short_key_bits(k->pre, k->len, k->cls);
  return wm_key_hash(k->key);
}

/* The hash of an entry: one mix of the key's bits and the window's (merging windows: of the
 * key alone). The full key and window are compared on every match, so two entries of one
 * hash are only a probe longer. */
static uint64_t entry_hash(const winop *s, uint64_t khash, wm_window w) {
  if (s->merging) return mix(khash);
  return mix(khash ^ ((uint64_t)w.start * 0x9e3779b97f4a7c15ULL) ^
             ((uint64_t)w.stop * 0xc2b2ae3d27d4eb4fULL));
}

static int64_t max_ts_of(wm_window w) {
  return (w.start == WM_TIME_MIN && w.stop == WM_TIME_MAX) ? WM_TIME_MAX : w.stop - 1;
}

static int64_t cleanup_of(const winop *s, wm_window w) {
  return wm_time_add_sat(max_ts_of(w), s->cfg.lateness);
}

static bool win_eq(wm_window a, wm_window b) { return a.start == b.start && a.stop == b.stop; }

/* Index slots carry the upper half of the entry's hash, so that probing past other
 * entries never reads them: a lookup costs one index line and the found entry's line. */
static uint32_t slot_ent(uint64_t v) { return (uint32_t)v; }
static uint64_t slot_make(uint32_t ent, uint64_t h) { return (uint64_t)ent | (h >> 32 << 32); }
/* The home slot of hash h: from its upper half, the half the slot holds, so that moving
 * slots (idx_remove) needs no entry's line (at 10^6 windows every one is a cache miss). */
static size_t home_of(uint64_t h, size_t mask) { return (size_t)(h >> 32) & mask; }

/* The slot of (key, w) in the index (merging windows: of key): found (1) or where to
 * insert (0). */
static size_t idx_find(const winop *s, const kprobe *key, uint64_t h, wm_window w, int *found) {
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

/* Big arrays grow with realloc, never a new block and a free of the old one: glibc serves
 * blocks of 128 KiB and more with mmap (realloc then moves pages with mremap, copying
 * nothing), but once such a block is freed it raises its mmap threshold to that size, and
 * later blocks up to it come from the heap, where what is freed stays resident: at 10^6
 * open windows that cost about 24 bytes per window of peak RSS. */
static int idx_rebuild(winop *s, size_t cap) {
  uint64_t *n = realloc(s->idx, cap * sizeof *n);
  if (!n) return -1;
  memset(n, 0, cap * sizeof *n);
  s->idx = n;
  s->capidx = cap;
  s->usedidx = 0;
  size_t mask = cap - 1;
  for (uint32_t i = 0; i < s->ne; i++) {
    wentry *e = &s->e[i];
    if (!e->live) continue;
    if (s->merging && s->x[i].kup != NONE) continue; /* only a key's root is indexed */
    /* (key, window) pairs, and merging keys' roots, are unique: the first empty slot of the
     * run, no compare; the slots of the entries ahead are started early (random lines at
     * many windows) */
    if (i + 16 < s->ne) __builtin_prefetch(&n[home_of(s->e[i + 16].hash, mask)]);
    size_t at;
    for (at = home_of(e->hash, mask); slot_ent(n[at]) != 0; at = (at + 1) & mask) {
    }
    n[at] = slot_make(i + 1, e->hash);
    s->usedidx++;
  }
  return 0;
}

/* Empties slot `at` of a non-merging index by shifting the rest of its probe run back
 * (linear probing without tombstones). Windows are deleted all the time (every firing
 * deletes one per key): tombstones would fill the index and lengthen every probe.
 * Merging windows keep tombstones: merge_add deletes entries while it holds a slot. */
static void idx_remove(winop *s, size_t at) {
  size_t mask = s->capidx - 1, i = at, j = at;
  for (;;) {
    j = (j + 1) & mask;
    uint64_t v = s->idx[j];
    if (slot_ent(v) == 0) break;
    size_t home = home_of(v, mask);
    /* the entry at j may move to i if its home is not in (i, j] (cyclically) */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      s->idx[i] = s->idx[j];
      i = j;
    }
  }
  s->idx[i] = 0;
  s->usedidx--;
}

static int idx_reserve(wm_op *op, winop *s) {
  if ((s->usedidx + 1) * 4 < s->capidx * 3) return WM_OK;
  size_t cap = s->capidx;
  if ((size_t)s->nlive * 2 >= cap / 2) cap *= 2;
  if (idx_rebuild(s, cap) != 0) return wm_ctx_error(op->ctx, "out of memory in window state");
  return WM_OK;
}

/* Room for cap hot entries, 64-byte aligned (a lookup's fields then sit in one line of the
 * entry, not across two), the ne in use kept. Grown with realloc (see idx_rebuild): the
 * block's alignment may change, and then the entries move to the aligned place. */
static int hot_grow(winop *s, uint32_t cap) {
  size_t off = s->e ? (size_t)((char *)s->e - (char *)s->e_raw) : 0;
  char *raw = realloc(s->e_raw, (size_t)cap * sizeof(wentry) + 64);
  if (!raw) return -1;
  size_t noff = (64 - ((uintptr_t)raw & 63)) & 63;
  if (noff != off && s->ne) memmove(raw + noff, raw + off, (size_t)s->ne * sizeof(wentry));
  s->e_raw = raw;
  s->e = (wentry *)(void *)(raw + noff);
  return 0;
}

static int entry_alloc(winop *s, uint32_t *out) {
  if (s->free_head != NONE) {
    *out = s->free_head;
    s->free_head = (uint32_t)s->e[*out].kpre;
    return 0;
  }
  if (s->ne == s->cape) {
    uint32_t cap = s->cape ? s->cape * 2 : 64;
    wcold *c = realloc(s->c, cap * sizeof *c);
    if (!c) return -1;
    s->c = c;
    if (s->by_chan) {
      uint8_t *fch = realloc(s->fch, cap);
      if (!fch) return -1;
      s->fch = fch;
    }
    if (s->need_ext) {
      wext *x = realloc(s->x, cap * sizeof *x);
      if (!x) return -1;
      s->x = x;
    }
    if (hot_grow(s, cap) != 0) return -1;
    s->cape = cap;
  }
  memset(&s->e[s->ne], 0, sizeof s->e[s->ne]);
  memset(&s->c[s->ne], 0, sizeof s->c[s->ne]);
  if (s->x) memset(&s->x[s->ne], 0, sizeof s->x[s->ne]);
  *out = s->ne++;
  return 0;
}

/* Releases the window's contents (a purge): the window itself stays. */
static void entry_purge(wm_op *op, winop *s, wentry *e) {
  const wm_host *h = &op->ctx->host;
  if (e->inl) { /* a packed first record holds nothing to release; the key was not copied */
    memset(CO(e), 0, sizeof *CO(e));
    e->inl = 0;
  } else {
    wm_value_release(h, &CO(e)->acc);
  }
  wm_value_release(h, &e->aux);
  if (s->x) {
    for (uint32_t k = 0; k < XO(e)->nitems; k++) wm_value_release(h, &XO(e)->items[k]);
    XO(e)->nitems = 0;
  }
}

/* ---- a key's sessions ----------------------------------------------------------------
 *
 * The windows of one key of a merging operator never intersect (merge_add merges those
 * that do), so their order by start is their order by stop too. They form a treap: a
 * binary search tree by start whose nodes are heap-ordered by a priority drawn from their
 * slot number (kpri: a fixed function, so the shape follows from the windows alone), with
 * the root in the index, threaded in order by knext and kprev. Finding where a record's
 * window goes is a descent of expected O(log n) for n open sessions of the key, linking
 * and unlinking an entry O(log n) expected: a key with 40 000 open sessions costs a record
 * about what a key with one does (issue 34: the sorted chain this replaced was walked from
 * the key's earliest window on every record, and on every deletion). */

static void knone(wext *x) { x->knext = x->kprev = x->kl = x->kr = x->kup = NONE; }

static uint32_t kpri(uint32_t i) {
  return (uint32_t)(mix((uint64_t)i + 0x9e3779b97f4a7c15ULL) >> 32);
}

/* whether entry a belongs above entry b (a strict order: ties by slot) */
static bool kabove(uint32_t a, uint32_t b) {
  uint32_t pa = kpri(a), pb = kpri(b);
  return pa != pb ? pa > pb : a < b;
}

/* Rotates entry i above its parent; *root follows when i becomes the root. */
static void krotate_up(wext *x, uint32_t i, uint32_t *root) {
  uint32_t p = x[i].kup, g = x[p].kup, b;
  if (x[p].kl == i) {
    b = x[i].kr;
    x[p].kl = b;
    x[i].kr = p;
  } else {
    b = x[i].kl;
    x[p].kr = b;
    x[i].kl = p;
  }
  if (b != NONE) x[b].kup = p;
  x[p].kup = i;
  x[i].kup = g;
  if (g == NONE) *root = i;
  else if (x[g].kl == p) x[g].kl = i;
  else x[g].kr = i;
}

/* Links entry i into the treap of root *root (NONE: empty) between its neighbours by start,
 * prev and next (NONE at either end). */
static void klink(wext *x, uint32_t i, uint32_t prev, uint32_t next, uint32_t *root) {
  x[i].kl = x[i].kr = NONE;
  x[i].kprev = prev;
  x[i].knext = next;
  if (prev != NONE) x[prev].knext = i;
  if (next != NONE) x[next].kprev = i;
  if (*root == NONE) {
    x[i].kup = NONE;
    *root = i;
    return;
  }
  /* a leaf next to its in-order neighbour: prev's right child if it has none, else next's
   * left child (next is then the leftmost entry of prev's right subtree) */
  if (prev != NONE && x[prev].kr == NONE) {
    x[prev].kr = i;
    x[i].kup = prev;
  } else {
    x[next].kl = i;
    x[i].kup = next;
  }
  while (x[i].kup != NONE && kabove(i, x[i].kup)) krotate_up(x, i, root);
}

/* Unlinks entry i from the treap of root *root (NONE once it is empty). */
static void kunlink(wext *x, uint32_t i, uint32_t *root) {
  while (x[i].kl != NONE && x[i].kr != NONE)
    krotate_up(x, kabove(x[i].kl, x[i].kr) ? x[i].kl : x[i].kr, root);
  uint32_t c = x[i].kl != NONE ? x[i].kl : x[i].kr, p = x[i].kup;
  if (c != NONE) x[c].kup = p;
  if (p == NONE) *root = c;
  else if (x[p].kl == i) x[p].kl = c;
  else x[p].kr = c;
  if (x[i].kprev != NONE) x[x[i].kprev].knext = x[i].knext;
  if (x[i].knext != NONE) x[x[i].knext].kprev = x[i].kprev;
  knone(&x[i]);
}

static void entry_delete(wm_op *op, winop *s, uint32_t i) {
  wentry *e = &s->e[i];
  const wm_host *h = &op->ctx->host;
  int found = 0;
  size_t at = 0;
  if (s->merging) {
    keybuf kb;
    kprobe k = kprobe_at(s, i, &kb);
    at = idx_find(s, &k, e->hash, e->w, &found);
  } else {
    /* every entry is indexed, in the probe run from its hash's home: find its slot by
     * number, with no key to compare (no tombstones here) */
    size_t mask = s->capidx - 1;
    for (at = home_of(e->hash, mask); slot_ent(s->idx[at]) != 0; at = (at + 1) & mask) {
      if (slot_ent(s->idx[at]) == i + 1) {
        found = 1;
        break;
      }
    }
  }
  if (s->merging) {
    if (found) {
      uint32_t root = slot_ent(s->idx[at]) - 1;
      kunlink(s->x, i, &root);
      s->idx[at] = root != NONE ? slot_make(root + 1, e->hash) : TOMB;
    }
  } else if (found) {
    idx_remove(s, at);
  }
  entry_purge(op, s, e);
  wm_value_release(h, &CO(e)->key);
  if (s->x) {
    wext *x = XO(e);
    wm_value_release(h, &x->hstate);
    free(x->items);
    free(x->its);
    free(x->tm);
    x->items = NULL;
    x->its = NULL;
    x->tm = NULL;
    x->capitems = x->ntm = x->captm = 0;
  }
  e->live = 0;
  e->fire = 0;
  e->gen = (e->gen + 1) & 0x7fffffffu;
  e->kpre = s->free_head;
  s->free_head = i;
  s->nlive--;
}

static uint64_t payload(uint32_t i, uint32_t gen) { return (uint64_t)i | ((uint64_t)gen << 32); }

/* A new entry for (key, w), indexed at slot `at` of the index (found by idx_find). */
static int entry_new(wm_op *op, winop *s, const kprobe *k, uint64_t h, wm_window w, size_t at,
                     uint32_t *out) {
  const wm_value *key = k->key;
  uint32_t i;
  if (entry_alloc(s, &i) != 0) return wm_ctx_error(op->ctx, "out of memory in window state");
  wentry *e = &s->e[i];
  uint32_t gen = e->gen;
  memset(e, 0, sizeof *e);
  memset(CO(e), 0, sizeof *CO(e));
  e->gen = gen;
  /* a key of up to 8 bytes is all in kpre/klen/kcls: not copied when nothing needs a
   * pointer to it that lives on (custom triggers' contexts do) */
  if (!(s->kelide && k->cls != KEY_OTHER && k->len <= 8) &&
      wm_value_copy(&op->ctx->host, &CO(e)->key, key) != 0) {
    e->kpre = s->free_head;
    s->free_head = i;
    return wm_ctx_error(op->ctx, "out of memory in window state");
  }
  e->hash = h;
  e->kpre = k->pre;
  e->klen = k->len < KLEN_MAX ? k->len : KLEN_MAX;
  e->kcls = k->cls;
  e->w = w;
  e->seq = op->ctx->seq++;
  if (s->x) {
    memset(XO(e), 0, sizeof *XO(e));
    knone(XO(e));
    XO(e)->wake_t = WM_TIME_MIN;
  }
  e->live = 1;
  s->nlive++;
  if (slot_ent(s->idx[at]) == 0) s->usedidx++;
  s->idx[at] = slot_make(i + 1, h);
  *out = i;
  return WM_OK;
}

/* Finds or creates the state of (key, w) (windows that do not merge); h is
 * entry_hash(key, w). */
static int entry_get(wm_op *op, winop *s, const kprobe *key, uint64_t h, wm_window w,
                     uint32_t *out, int *created) {
  /* idx_reserve's test first: the call only when the index must grow */
  if ((s->usedidx + 1) * 4 >= s->capidx * 3 && idx_reserve(op, s) != WM_OK) return WM_ERR;
  int found;
  size_t at = idx_find(s, key, h, w, &found);
  if (found) {
    *out = slot_ent(s->idx[at]) - 1;
    *created = 0;
    return WM_OK;
  }
  *created = 1;
  return entry_new(op, s, key, h, w, at, out);
}

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

static int push_event(wm_op *op, winop *s, uint32_t i, int64_t t) {
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
static int push_cleanup(wm_op *op, winop *s, uint32_t i) {
  wentry *e = &s->e[i];
  if (s->event_time) {
    int64_t cl = cleanup_of(s, e->w);
    if (s->fast && e->fire && max_ts_of(e->w) == cl) return WM_OK;
    return push_event(op, s, i, cl);
  }
  if (s->cfg.assigner.processing_time) return push_processing(op, s, i, max_ts_of(e->w));
  return WM_OK;
}

static const wm_trigger_timers trigger_timers;

/* Merging event-time windows: makes sure entry i has a wake-up queued at or before the
 * earlier of its firing (fire_t, default trigger) and its cleanup. */
static int wake_at(wm_op *op, winop *s, uint32_t i) {
  wext *c = &s->x[i];
  int64_t need = cleanup_of(s, s->e[i].w);
  if (s->e[i].fire && max_ts_of(s->e[i].w) < need) need = max_ts_of(s->e[i].w);
  if (c->wake_t != WM_TIME_MIN && c->wake_t <= need) return WM_OK;
  c->wake_t = need;
  return push_event(op, s, i, need);
}

/* The timers of entry i once its window moved or was created (merging windows). */
static int merged_timers(wm_op *op, winop *s, uint32_t i) {
  return s->event_time ? wake_at(op, s, i) : push_cleanup(op, s, i);
}

static void tctx_init(wm_op *op, winop *s, uint32_t i, wm_trigger_ctx *c) {
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
  return domain == WM_DOMAIN_EVENT ? push_event(c->op, s, c->entry, t)
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
static bool tm_take(winop *s, wentry *e, int domain, int64_t t) {
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
  tm_take(s, &s->e[c->entry], domain, t);
}

static int64_t trigger_now(wm_trigger_ctx *c) { return wm_ctx_now(c->op->ctx); }

static const wm_trigger_timers trigger_timers = {trigger_register, trigger_delete, trigger_now};

/* ---- contents and firing ------------------------------------------------------------ */

/* Room for one more record in a list-mode window (and its timestamp, with an evictor). */
static int items_reserve(wm_op *op, winop *s, wentry *e) {
  wext *x = XO(e);
  if (x->nitems < x->capitems) return WM_OK;
  uint32_t cap = x->capitems ? x->capitems * 2 : 4;
  wm_value *n = realloc(x->items, cap * sizeof *n);
  if (!n) return wm_ctx_error(op->ctx, "out of memory in window state");
  x->items = n;
  if (s->cfg.evictor.kind) {
    int64_t *t = realloc(x->its, cap * sizeof *t);
    if (!t) return wm_ctx_error(op->ctx, "out of memory in window state");
    x->its = t;
  }
  x->capitems = cap;
  return WM_OK;
}

/* ---- inline first records ------------------------------------------------------------
 *
 * The built-in sum, min and max keep their window's first record (to emit it with the
 * field replaced). Retaining the row costs its allocation, its key string's, and the
 * decoder's reuse of its row: at 10^6 keys nearly every record opens a window. Instead,
 * when the key is a string of up to 8 bytes (all in the hot part, not copied) and the
 * record is a row of the schema seen first (rec_schema) whose fields are scalars, the
 * record is packed into the entry's cold part: a tag byte per field, then 8 bytes per
 * field that has a payload (a number; a string of up to 8 bytes; a string equal to the
 * key has none). It is unpacked into a new row only when the window fires (the result:
 * the row with the field replaced, what builtin_fire makes) or is checkpointed (the row
 * as it came: the checkpoint's bytes are those of the retained row). A record that does
 * not pack is retained as before. */

enum { PK_NIL, PK_FALSE, PK_TRUE, PK_INT, PK_FLOAT, PK_KEY, PK_STR0 /* + length, 0 to 8 */ };

/* Packs row r into out (the cold part of e, whose key is kb): the key's bytes after the
 * first 8 (tl of them), a tag per field, 8 bytes per field with a payload. False when it
 * does not fit. */
static bool pack_first(const wentry *e, const char *kb, size_t tl, const wm_row *r,
                       uint8_t out[32]) {
  uint32_t n = r->schema->nfields;
  uint8_t b[32] = {0};
  if (tl + n > sizeof b) return false;
  if (tl) memcpy(b, kb + 8, tl);
  uint8_t *tag = b + tl;
  size_t at = tl + n;
  for (uint32_t j = 0; j < n; j++) {
    const wm_value *v = &r->fields[j];
    const void *src = NULL;
    size_t len = 8;
    switch (v->type) {
    case WM_NIL: tag[j] = PK_NIL; break;
    case WM_BOOL: tag[j] = v->u.b ? PK_TRUE : PK_FALSE; break;
    case WM_INT: tag[j] = PK_INT; src = &v->u.i; break;
    case WM_FLOAT: tag[j] = PK_FLOAT; src = &v->u.f; break;
    case WM_CSTR:
    case WM_STR: {
      if (v->flags) return false;
      size_t l;
      const char *p = wm_value_str(v, &l);
      /* the key (a string of up to 8 bytes is its kpre: no call) */
      if (e->kcls == KEY_STR && l == e->klen &&
          (l <= 8 ? str_pre(p, l) == e->kpre : memcmp(p, kb, l) == 0)) {
        tag[j] = PK_KEY;
        break;
      }
      if (l > 8) return false;
      tag[j] = (uint8_t)(PK_STR0 + l);
      src = p;
      len = l;
      break;
    }
    default: return false;
    }
    if (!src) continue;
    if (at + 8 > sizeof b) return false;
    if (len == 8) memcpy(b + at, src, 8); /* numbers: a fixed size, no call */
    else memcpy(b + at, src, len);
    at += 8;
  }
  memcpy(out, b, sizeof b);
  return true;
}

/* A string of len bytes from p in field f of a row: written over the string f holds when
 * nobody else holds it and it has room (*cap bytes; cap NULL: never), else a new one with
 * room for at least 16 bytes. WM_OK or WM_ERR. */
static int put_str(wm_value *f, const char *p, size_t len, uint32_t *cap) {
  if (cap && f->type == WM_STR && f->u.s->refs == 1 && *cap >= len) {
    memcpy(f->u.s->data, p, len);
    f->u.s->data[len] = '\0';
    f->u.s->len = (uint32_t)len;
    return WM_OK;
  }
  size_t room = len < 16 ? 16 : len;
  wm_str *w = malloc(sizeof *w + room + 1);
  if (!w) return WM_ERR;
  w->refs = 1;
  w->len = (uint32_t)len;
  memcpy(w->data, p, len);
  w->data[len] = '\0';
  if (f->type != WM_NIL) wm_value_release(NULL, f); /* a string: no host needed */
  f->type = WM_STR;
  f->flags = 0;
  f->u.s = w;
  if (cap) *cap = (uint32_t)room;
  return WM_OK;
}

/* Fills row r (of rec_schema; fields nil or, with cap, those of the last fill) with the
 * record packed in entry i, field `field` (when >= 0) set to *val instead. */
static int fill_first(const winop *s, uint32_t i, int field, const wm_value *val, wm_row *r,
                      uint32_t *cap) {
  const wentry *e = &s->e[i];
  size_t tl = e->klen > 8 ? e->klen - 8 : 0;
  const uint8_t *tag = s->c[i].rec + tl;
  uint32_t n = s->rec_schema->nfields;
  const uint8_t *pay = tag + n;
  keybuf kb;
  key_of(s, i, &kb); /* its bytes in kb.b */
  for (uint32_t j = 0; j < n; j++) {
    wm_value *f = &r->fields[j];
    uint8_t t = tag[j];
    wm_value v = wm_nil();
    const char *str = NULL;
    size_t len = 0;
    if (t == PK_INT) {
      v = wm_int(0);
      memcpy(&v.u.i, pay, 8);
    } else if (t == PK_FLOAT) {
      v = wm_float(0);
      memcpy(&v.u.f, pay, 8);
    } else if (t == PK_TRUE || t == PK_FALSE) {
      v = wm_bool(t == PK_TRUE);
    } else if (t == PK_KEY) {
      str = kb.b;
      len = e->klen;
    } else if (t >= PK_STR0) {
      str = (const char *)pay;
      len = (size_t)(t - PK_STR0);
    }
    if (t == PK_INT || t == PK_FLOAT || t >= PK_STR0) pay += 8;
    if ((int)j == field) {
      v = *val; /* a number (sum, min, max): nothing to retain */
      str = NULL;
    }
    if (str) {
      if (put_str(f, str, len, cap ? &cap[j] : NULL) != WM_OK) return WM_ERR;
    } else {
      if (f->type == WM_STR) wm_value_release(NULL, f);
      *f = v;
    }
  }
  return WM_OK;
}

/* The row packed in entry i as a new owned WM_ROW in *out (checkpoints). */
static int unpack_first(wm_op *op, const winop *s, uint32_t i, wm_value *out) {
  wm_row *r = wm_row_new(s->rec_schema);
  if (!r || fill_first(s, i, -1, NULL, r, NULL) != WM_OK) {
    if (r) wm_row_release(&op->ctx->host, r);
    return wm_ctx_error(op->ctx, "out of memory writing a checkpoint");
  }
  *out = wm_row_value(r);
  return WM_OK;
}

/* The first record of a new window (aux still nil) packed into entry i when it can be:
 * true, with aux set as builtin_add sets it (and the key's copy, if it had one, dropped:
 * its bytes after the first 8 are packed with the record); false: add it as before. */
static bool inline_first(wm_op *op, winop *s, uint32_t i, const wm_value *rec) {
  wentry *e = &s->e[i];
  wcold *c = &s->c[i];
  if (rec->type != WM_ROW || e->kcls == KEY_OTHER || e->klen > 8 + 24) return false;
  const wm_row *r = rec->u.row;
  if (r->schema != s->rec_schema) {
    if (s->rec_schema) return false;
    int fi = wm_schema_find(r->schema, s->pane_field->name);
    if (fi < 0) return false;
    s->rec_schema = r->schema;
    s->rec_schema->refs++;
    s->inl_fidx = fi;
  }
  const wm_value *v = &r->fields[s->inl_fidx];
  if (v->type != WM_INT && v->type != WM_FLOAT) return false; /* builtin_add's error */
  keybuf kb;
  const wm_value *key = key_of(s, i, &kb);
  size_t n;
  const char *kbytes = wm_value_str(key, &n);
  uint8_t packed[32];
  if (!pack_first(e, kbytes, n > 8 ? n - 8 : 0, r, packed)) return false;
  wm_value_release(&op->ctx->host, &c->key);
  memcpy(c->rec, packed, sizeof packed);
  e->inl = 1;
  e->aux = *v;
  return true;
}

static int add_record(wm_op *op, winop *s, wentry *e, const wm_value *rec, int64_t ts) {
  if (s->list) {
    wext *x = XO(e);
    if (items_reserve(op, s, e) != WM_OK) return WM_ERR;
    if (wm_value_copy(&op->ctx->host, &x->items[x->nitems], rec) != 0)
      return wm_ctx_error(op->ctx, "out of memory in window state");
    if (x->its) x->its[x->nitems] = ts;
    x->nitems++;
    return WM_OK;
  }
  if (e->inl) {
    /* sum, min, max with a first record: add reads only aux (acc is only the first) */
    wm_value none = wm_nil();
    int rc = s->cfg.fn.add(s->cfg.fn.ud, op, &none, &e->aux, rec);
    wm_value_release(&op->ctx->host, &none);
    return rc;
  }
  if (s->inl_ok && e->aux.type == WM_NIL && inline_first(op, s, (uint32_t)(e - s->e), rec))
    return WM_OK;
  return s->cfg.fn.add(s->cfg.fn.ud, op, &CO(e)->acc, &e->aux, rec);
}

static bool entry_empty(const winop *s, const wentry *e) {
  if (s->list) return XO(e)->nitems == 0;
  return !e->inl && CO(e)->acc.type == WM_NIL && e->aux.type == WM_NIL;
}

/* f for entry e (not inl); kb: where its key may be rebuilt */
static void fire_init(wm_op *op, winop *s, wentry *e, wm_fire *f, keybuf *kb) {
  f->key = key_of(s, (uint32_t)(e - s->e), kb);
  f->window = e->w;
  f->max_ts = max_ts_of(e->w);
  f->watermark = op->wm;
  f->acc = &CO(e)->acc;
  f->aux = &e->aux;
  f->items = s->x ? XO(e)->items : NULL;
  f->nitems = s->x ? XO(e)->nitems : 0;
}

/* Fires a window whose first record is packed in entry first (itself, or the pane created
 * first): what builtin_fire emits, the record with the field set to *aux. */
static int inline_fire(wm_op *op, winop *s, uint32_t first, int64_t max_ts, const wm_value *aux) {
  const wm_host *h = &op->ctx->host;
  /* the row fired last, when nobody downstream kept it: no allocation per firing */
  if (s->fire_row && s->fire_row->refs > 1) {
    wm_row_release(h, s->fire_row);
    s->fire_row = NULL;
  }
  if (!s->fire_row) {
    uint32_t n = s->rec_schema->nfields;
    if (!s->fire_cap && !(s->fire_cap = calloc(n ? n : 1, sizeof *s->fire_cap)))
      return wm_ctx_error(op->ctx, "out of memory firing a window");
    memset(s->fire_cap, 0, (n ? n : 1) * sizeof *s->fire_cap);
    if (!(s->fire_row = wm_row_new(s->rec_schema)))
      return wm_ctx_error(op->ctx, "out of memory firing a window");
  }
  if (fill_first(s, first, s->inl_fidx, aux, s->fire_row, s->fire_cap) != WM_OK)
    return wm_ctx_error(op->ctx, "out of memory firing a window");
  wm_value out = wm_row_value(s->fire_row);
  return wm_op_emit(op, 0, &out, max_ts);
}

static int evict(wm_op *op, winop *s, uint32_t i, int after) {
  const wm_evictor *ev = &s->cfg.evictor;
  if (ev->kind != WM_EV_CUSTOM && ev->after != (after != 0)) return WM_OK;
  wentry *e = &s->e[i];
  wm_evict_items it = {XO(e)->items, XO(e)->its, XO(e)->nitems};
  if (ev->kind == WM_EV_CUSTOM) {
    wm_trigger_ctx c;
    tctx_init(op, s, i, &c);
    if (ev->fn(ev->ud, op, after, &c, &it) != WM_OK) return WM_ERR;
    e = &s->e[i];
  } else {
    wm_evict_builtin(&op->ctx->host, ev, &it);
  }
  XO(e)->nitems = it.n;
  return WM_OK;
}

/* ---- panes (sliding windows) ------------------------------------------------------------
 *
 * A sliding window of size n * slide is the union of n panes of slide ms. For the built-in
 * sum, min and max of integers and count(), with the default event-time trigger and no
 * allowed lateness, a record updates one pane entry (key, [p, p + slide)) instead of n
 * window entries. Each window still has an entry of its own (a marker: no contents),
 * created when its first pane is, in the assigner's order, with the timers it always had:
 * so windows are created, fire and are cleaned up in exactly the order and at the times
 * they were, and the watermark decides lateness per window as before. A window's result is
 * assembled when it fires: the sum (count, min, max) of its panes' partials (integers add
 * with wrap-around, so any grouping gives the record-by-record sum) with the first record
 * of the pane created first (panes are created by their first record, so that is the
 * window's first record). A pane is deleted with the
 * window that starts where it starts, the last one holding it. Late records cannot reach a
 * window that has fired: with no lateness a window is deleted when it fires.
 *
 * The first record that does not fit (a value that is not an integer, a window cut at the
 * ends of time) turns the state back into one entry per window (unpane), exactly, and the
 * operator goes on as without panes. The pane flag is part of a checkpoint. */

static bool is_pane(const winop *s, const wentry *e) {
  return s->panes && e->w.stop - e->w.start == s->cfg.assigner.slide;
}

/* The pane of key k (khash: key_hash_of(k)) starting at start: its entry, or NONE. */
static uint32_t pane_find(const winop *s, const kprobe *k, uint64_t khash, int64_t start) {
  wm_window pw = {start, start + s->cfg.assigner.slide};
  int found;
  size_t at = idx_find(s, k, entry_hash(s, khash, pw), pw, &found);
  return found ? slot_ent(s->idx[at]) - 1 : NONE;
}

/* Window marker i's contents from its panes: the sum (count, min, max) of their partials,
 * and *first, the pane created first (NONE when it has none). */
static void pane_combine(const winop *s, uint32_t i, uint32_t *first, int64_t *sum) {
  const wentry *e = &s->e[i];
  keybuf kb;
  kprobe k = kprobe_at(s, i, &kb);
  uint64_t kh = key_hash_of(&k);
  int64_t acc = 0;
  *first = NONE;
  for (int64_t ps = e->w.start; ps < e->w.stop; ps += s->cfg.assigner.slide) {
    uint32_t p = pane_find(s, &k, kh, ps);
    if (p == NONE) continue;
    int64_t v = s->e[p].aux.u.i;
    if (*first == NONE) acc = v;
    else if (s->pane_agg == WM_AGG_MIN) acc = v < acc ? v : acc;
    else if (s->pane_agg == WM_AGG_MAX) acc = v > acc ? v : acc;
    else acc = (int64_t)((uint64_t)acc + (uint64_t)v);
    if (*first == NONE || s->e[p].seq < s->e[*first].seq) *first = p;
  }
  *sum = acc;
}

/* Fires window marker i: its result assembled from its panes. */
static int pane_emit(wm_op *op, winop *s, uint32_t i) {
  uint32_t first;
  int64_t sum;
  pane_combine(s, i, &first, &sum);
  if (first == NONE) return WM_OK;
  wentry *e = &s->e[i];
  keybuf kb;
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL)) /* the key is rebuilt only for them */
    wm_observe_fire(op, key_of(s, i, &kb), e->w,
                    s->firing_t == WM_TIME_MIN && max_ts_of(e->w) <= op->wm);
  wm_value aux = wm_int(sum);
  if (s->e[first].inl) return inline_fire(op, s, first, max_ts_of(e->w), &aux);
  wm_fire f;
  fire_init(op, s, e, &f, &kb);
  f.acc = &s->c[first].acc;
  f.aux = &aux;
  return s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
}

/* Window marker i is cleaned up: the pane at its start is in no later window. */
static void pane_drop(wm_op *op, winop *s, uint32_t i) {
  keybuf kb;
  kprobe k = kprobe_at(s, i, &kb);
  uint32_t p = pane_find(s, &k, key_hash_of(&k), s->e[i].w.start);
  if (p == NONE) return;
  entry_delete(op, s, p);
  s->npane--;
}

/* Back to one entry per window: each marker gets the contents its panes hold (what adding
 * its records one by one would have made), then the panes go. */
static int unpane(wm_op *op, winop *s) {
  for (uint32_t i = 0; i < s->ne; i++) {
    if (!s->e[i].live || is_pane(s, &s->e[i])) continue;
    uint32_t first;
    int64_t sum;
    pane_combine(s, i, &first, &sum);
    if (first == NONE) continue;
    if (s->e[first].inl) {
      /* the same key: the marker drops its copy (if any) and takes the packed record */
      wm_value_release(&op->ctx->host, &s->c[i].key);
      s->c[i] = s->c[first];
      s->e[i].inl = 1;
    } else if (s->c[first].acc.type != WM_NIL &&
               wm_value_copy(&op->ctx->host, &s->c[i].acc, &s->c[first].acc) != 0) {
      return wm_ctx_error(op->ctx, "out of memory in window state");
    }
    s->e[i].aux = wm_int(sum);
  }
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live && is_pane(s, &s->e[i])) entry_delete(op, s, i);
  s->panes = false;
  s->npane = 0;
  return WM_OK;
}

/* Emits the window's result (a FIRE): nothing when the window holds nothing. */
static int emit_window(wm_op *op, winop *s, uint32_t i) {
  if (s->panes) return pane_emit(op, s, i);
  wentry *e = &s->e[i];
  wm_fire f;
  keybuf kb;
  if (entry_empty(s, e)) return WM_OK;
  /* a firing outside a timer, with the watermark past the window's end, is a late firing */
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_fire(op, key_of(s, i, &kb), e->w,
                    s->firing_t == WM_TIME_MIN && max_ts_of(e->w) <= op->wm);
  if (e->inl) return inline_fire(op, s, i, max_ts_of(e->w), &e->aux);
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
static int act(wm_op *op, winop *s, uint32_t i, int res) {
  if (res < 0) return WM_ERR;
  if ((res & WM_TR_FIRE) && emit_window(op, s, i) != WM_OK) return WM_ERR;
  if (res & WM_TR_PURGE) entry_purge(op, s, &s->e[i]);
  return WM_OK;
}

/* The window is done: tell the trigger, delete its state. */
static int clear_all(wm_op *op, winop *s, uint32_t i) {
  if (!s->fast) {
    wm_trigger_ctx c;
    tctx_init(op, s, i, &c);
    if (s->trig->vt->clear(s->trig, &c) != WM_OK) return WM_ERR;
  }
  keybuf kb;
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    wm_observe_cleanup(op, key_of(s, i, &kb), s->e[i].w);
  if (s->panes) pane_drop(op, s, i);
  entry_delete(op, s, i);
  return WM_OK;
}

/* ---- merging (session) windows ------------------------------------------------------ */

static bool intersects(wm_window a, wm_window b) { return a.start <= b.stop && b.start <= a.stop; }

/* Adds window w of key to the key's merging set: creates it, or merges it with the windows
 * it intersects or touches (Flink's MergingWindowSet.addWindow). *out is the window the
 * record belongs to; *skip = 1 when w is new, merges nothing and is late. */
static int merge_add(wm_op *op, winop *s, const kprobe *key, uint64_t khash, wm_window w,
                     uint32_t *out, int *skip) {
  *skip = 0;
  uint64_t h = entry_hash(s, khash, w);
  if (idx_reserve(op, s) != WM_OK) return WM_ERR;
  int found;
  size_t at = idx_find(s, key, h, w, &found);
  uint32_t root = found ? slot_ent(s->idx[at]) - 1 : NONE, prev = NONE, next = NONE, n = 0;
  /* next: the key's first window that stops at or after w starts; prev, the one before it,
   * stops before (windows of a key are disjoint: in order of start, also of stop) */
  for (uint32_t j = root; j != NONE;) {
    if (s->e[j].w.stop >= w.start) {
      next = j;
      j = s->x[j].kl;
    } else {
      prev = j;
      j = s->x[j].kr;
    }
  }
  /* the run of windows that w touches: next and those after it that start by w's stop */
  for (uint32_t j = next; j != NONE && s->e[j].w.start <= w.stop; j = s->x[j].knext) {
    if (n == s->caprun) {
      uint32_t cap = s->caprun ? s->caprun * 2 : 8;
      uint32_t *r = realloc(s->run, cap * sizeof *r);
      if (!r) return wm_ctx_error(op->ctx, "out of memory merging windows");
      s->run = r;
      s->caprun = cap;
    }
    s->run[n++] = j;
  }
  int64_t W = op->wm;
  if (n == 0) {
    if (s->event_time && cleanup_of(s, w) <= W) {
      *skip = 1;
      return WM_OK;
    }
    uint32_t i;
    /* entry_new indexes the new entry: the key's root (which may be it) goes back after */
    if (entry_new(op, s, key, h, w, at, &i) != WM_OK) return WM_ERR;
    klink(s->x, i, prev, next, &root);
    s->idx[at] = slot_make(root + 1, h);
    *out = i;
    if (s->fast && max_ts_of(w) > W) s->e[i].fire = 1;
    return merged_timers(op, s, i);
  }
  uint32_t t = s->run[0];
  wm_window cover = w;
  for (uint32_t k = 0; k < n; k++) {
    wm_window o = s->e[s->run[k]].w;
    if (o.start < cover.start) cover.start = o.start;
    if (o.stop > cover.stop) cover.stop = o.stop;
  }
  *out = t;
  if (n == 1 && win_eq(cover, s->e[t].w)) return WM_OK; /* inside an existing window */
  /* the earliest window's state becomes the merged window's; the others are merged into
   * it in order of their start, then deleted. The target's timers belonged to its old
   * window: forget them (the trigger re-registers in on_merge). */
  s->x[t].ntm = 0;
  s->e[t].fire = 0;
  for (uint32_t k = 1; k < n; k++) {
    uint32_t j = s->run[k];
    if (!s->fast) {
      wm_trigger_ctx c;
      tctx_init(op, s, j, &c);
      if (s->trig->vt->clear(s->trig, &c) != WM_OK) return WM_ERR;
    }
    wentry *te = &s->e[t], *je = &s->e[j];
    if (s->list) {
      wext *tx = XO(te), *jx = XO(je);
      for (uint32_t q = 0; q < jx->nitems; q++) {
        if (items_reserve(op, s, te) != WM_OK) return WM_ERR;
        tx->items[tx->nitems] = jx->items[q]; /* moved */
        if (tx->its) tx->its[tx->nitems] = jx->its ? jx->its[q] : WM_TIME_MIN;
        tx->nitems++;
      }
      jx->nitems = 0;
    } else if (!(CO(je)->acc.type == WM_NIL && je->aux.type == WM_NIL)) {
      if (CO(te)->acc.type == WM_NIL && te->aux.type == WM_NIL) { /* purged target: take b's */
        CO(te)->acc = CO(je)->acc;
        te->aux = je->aux;
        CO(je)->acc = wm_nil();
        je->aux = wm_nil();
      } else if (s->cfg.fn.merge(s->cfg.fn.ud, op, &CO(te)->acc, &te->aux, &CO(je)->acc, &je->aux) !=
                 WM_OK) {
        return WM_ERR;
      }
    }
    if (!s->fast && s->trig->vt->merge_state)
      s->trig->vt->merge_state(s->trig, s->x[t].tstate, s->x[j].tstate);
    entry_delete(op, s, j);
  }
  s->e[t].w = cover;
  if (s->fast) {
    if (max_ts_of(cover) > W) s->e[t].fire = 1;
  } else {
    wm_trigger_ctx c;
    tctx_init(op, s, t, &c);
    if (s->trig->vt->on_merge(s->trig, &c) != WM_OK) return WM_ERR;
  }
  return merged_timers(op, s, t);
}

/* ---- the operator ------------------------------------------------------------------- */

static int on_element(wm_op *op, winop *s, uint32_t i, const wm_value *rec, int64_t ts) {
  const wm_value *v;
  wm_value *aux = &s->e[i].aux;
  if (s->sum_field && aux->type == WM_INT && (v = wm_field_peek(s->sum_field, rec)) &&
      v->type == WM_INT) {
    aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)v->u.i); /* as builtin_add: wraps */
  } else if (add_record(op, s, &s->e[i], rec, ts) != WM_OK) {
    return WM_ERR;
  }
  if (s->fast) { /* EventTimeTrigger.onElement: a late firing, or wait for the timer */
    if (max_ts_of(s->e[i].w) <= op->wm) return emit_window(op, s, i);
    return WM_OK;
  }
  wm_trigger_ctx c;
  tctx_init(op, s, i, &c);
  return act(op, s, i, s->trig->vt->on_element(s->trig, &c, rec, ts));
}

/* by_chan: rec, from a channel before the one entry i's first record came from, becomes
 * the window's first record (what a single reader would have seen first); the aggregate
 * folds the window's in after rec's value, as adding the records in that order would. */
static int first_replace(wm_op *op, winop *s, uint32_t i, const wm_value *rec, int64_t ts) {
  wentry *e = &s->e[i];
  const wm_host *h = &op->ctx->host;
  wm_value later = e->aux; /* sum, min, max: a number, nothing owned */
  wm_value key = wm_nil();
  if (e->inl) {
    /* the key's bytes after the first 8 are packed with the record: keep them */
    keybuf kb;
    if (e->klen > 8 && wm_value_copy(h, &key, key_of(s, i, &kb)) != 0)
      return wm_ctx_error(op->ctx, "out of memory in window state");
    memset(CO(e), 0, sizeof *CO(e));
    e->inl = 0;
    CO(e)->key = key;
  } else {
    wm_value_release(h, &CO(e)->acc);
  }
  e->aux = wm_nil();
  if (add_record(op, s, e, rec, ts) != WM_OK) return WM_ERR;
  wm_agg_combine(s->pane_agg, &e->aux, &later);
  return WM_OK;
}

/* Adds a record to the (key, w) window of a non-merging assigner, creating its state and
 * timers on first use (the default trigger's timer at max_ts, the cleanup timer). */
static inline int window_add(wm_op *op, winop *s, const wm_value *key, wm_window w, uint32_t i,
                             int created, const wm_value *rec, int64_t ts) {
  int64_t mts = max_ts_of(w);
  wm_observe_window(op, key, ts, w, created);
  if (created) {
    if (s->fast && mts > op->wm) {
      s->e[i].fire = 1;
      if (push_event(op, s, i, mts) != WM_OK) return WM_ERR;
    }
    if (push_cleanup(op, s, i) != WM_OK) return WM_ERR;
  }
  if (s->by_chan) {
    if (created || entry_empty(s, &s->e[i])) {
      s->fch[i] = (uint8_t)s->chan;
    } else if (s->chan < s->fch[i]) { /* an earlier part of the input: its record is first */
      s->fch[i] = (uint8_t)s->chan;
      if (first_replace(op, s, i, rec, ts) != WM_OK) return WM_ERR;
      if (mts <= op->wm) return emit_window(op, s, i); /* as on_element: a late firing */
      return WM_OK;
    }
  }
  return on_element(op, s, i, rec, ts);
}

static inline int add_to_window(wm_op *op, winop *s, const kprobe *kp, const wm_value *key,
                                uint64_t h, wm_window w, const wm_value *rec, int64_t ts) {
  uint32_t i = 0;
  int created = 0;
  if (entry_get(op, s, kp, h, w, &i, &created) != WM_OK) return WM_ERR;
  return window_add(op, s, key, w, i, created, rec, ts);
}

/* A record of a sliding window in pane mode: WM_OK, WM_ERR, or 1 when the record does not
 * fit panes and the state went back to one entry per window (the caller then adds it as
 * without panes). *any: some window took it. */
static int pane_record(wm_op *op, winop *s, const kprobe *kp, const wm_value *key,
                       uint64_t khash, const wm_value *rec, int64_t ts, int *any) {
  int64_t W = op->wm, slide = s->cfg.assigner.slide;
  const wm_value *v = NULL;
  wm_value got = wm_int(1); /* count() */
  if (s->pane_field) {
    v = wm_field_peek(s->pane_field, rec);
    /* not a row of the schema seen last: the general read (resolves the field) */
    if (!v && wm_field_get(&op->ctx->host, s->pane_field, rec, &got, op->ctx->err,
                           sizeof op->ctx->err) == 0)
      v = &got;
    if (!v || v->type != WM_INT) return unpane(op, s) == WM_OK ? 1 : WM_ERR;
  } else {
    v = &got;
  }
  if (!s->pc_ok || ts < s->pc.start || ts >= s->pc.stop) {
    /* a record outside the last one's pane: its windows (every ts of a pane has the same) */
    size_t n = wm_assigner_assign(&s->cfg.assigner, ts, s->wins);
    int64_t ps = WM_TIME_MIN;
    int fits = n > 0;
    for (size_t k = 0; k < n; k++) {
      fits = fits && s->wins[k].stop - s->wins[k].start == s->cfg.assigner.size;
      if (s->wins[k].start > ps) ps = s->wins[k].start;
    }
    if (!fits) return unpane(op, s) == WM_OK ? 1 : WM_ERR;
    s->pc = (wm_window){ps, ps + slide};
    s->pn = n;
    s->pc_clean = cleanup_of(s, (wm_window){ps, ps + s->cfg.assigner.size});
    s->pc_ok = true;
  }
  if (s->pc_clean <= W) return WM_OK; /* every window of the record is late */
  *any = 1;
  wm_window pw = s->pc;
  uint32_t p;
  int created;
  if (entry_get(op, s, kp, entry_hash(s, khash, pw), pw, &p, &created) != WM_OK) return WM_ERR;
  if (created) s->npane++;
  if (created || WM_OBS_UNLIKELY(op->ctx->observe != NULL)) {
    /* a new pane may start windows of this key: their markers and timers, in order */
    for (size_t k = 0; k < s->pn; k++) {
      wm_window w = s->wins[k];
      if (cleanup_of(s, w) <= W) continue; /* late window: skip */
      if (!created) {
        wm_observe_window(op, key, ts, w, 0);
        continue;
      }
      uint32_t i;
      int wc;
      if (entry_get(op, s, kp, entry_hash(s, khash, w), w, &i, &wc) != WM_OK) return WM_ERR;
      wm_observe_window(op, key, ts, w, wc);
      if (!wc) continue;
      int64_t mts = max_ts_of(w);
      if (mts > W) {
        s->e[i].fire = 1;
        if (push_event(op, s, i, mts) != WM_OK) return WM_ERR;
      }
      if (push_cleanup(op, s, i) != WM_OK) return WM_ERR;
    }
  }
  wm_value *aux = &s->e[p].aux;
  if (aux->type != WM_INT) return add_record(op, s, &s->e[p], rec, ts); /* the first */
  if (s->pane_agg == WM_AGG_MIN) {
    if (v->u.i < aux->u.i) aux->u.i = v->u.i;
  } else if (s->pane_agg == WM_AGG_MAX) {
    if (v->u.i > aux->u.i) aux->u.i = v->u.i;
  } else {
    aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)v->u.i); /* sum, count: wraps */
  }
  return WM_OK;
}

/* A record whose timestamp is none (MIN) or outside the range the assigner's windows can
 * hold (wm_assigner_ts_range; gap: a dynamic session gap, else 0). */
static int bad_timestamp(wm_op *op, const winop *s, const wm_value *rec, int64_t ts, int64_t gap) {
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  const char *r = b.data ? b.data : "";
  if (ts == WM_TIME_MIN) {
    wm_ctx_error(op->ctx,
                 "record has no timestamp (math.mininteger); did you forget "
                 "assign_timestamps_and_watermarks? (an event-time window needs one): %s",
                 r);
  } else {
    int64_t hi = gap > 0 ? WM_TIME_MAX - gap : s->ts_hi;
    wm_ctx_error(op->ctx,
                 "record timestamp %lld is outside the range of these windows, %lld to %lld "
                 "(beyond it a window's bounds overflow; docs/windows.md, \"Valid "
                 "timestamps\"): %s",
                 (long long)ts, (long long)s->ts_lo, (long long)hi, r);
  }
  wm_buf_free(&b);
  return WM_ERR;
}

/* The entry of window w and a string key of n <= 8 bytes (prefix pre) whose entry hash is
 * h, as idx_find would find it in one pass: the entry's index + 1; 0 when the probe reached
 * an empty slot first (*at: that slot, where idx_find would insert); TOMB at a tombstone
 * (merging windows only: the caller leaves it to the general path). */
static inline uint32_t short_find(const winop *s, uint64_t h, wm_window w, size_t n,
                                  uint64_t pre, size_t *at) {
  size_t mask = s->capidx - 1, i = home_of(h, mask);
  for (;; i = (i + 1) & mask) {
    uint64_t sv = s->idx[i];
    uint32_t ent = slot_ent(sv);
    if (ent == 0 || ent == TOMB) {
      *at = i;
      return ent;
    }
    if ((sv >> 32) != (h >> 32)) continue;
    const wentry *e = &s->e[ent - 1];
    if (e->hash == h && win_eq(e->w, w) && e->kcls == KEY_STR && e->klen == n && e->kpre == pre)
      return ent;
  }
}

/* tumble_hit's new window: out of line, so that the hit keeps a small frame. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int tumble_new(wm_op *op, winop *s, const wm_value *kf, uint64_t pre, uint64_t h,
                      size_t at, const wm_value *rec, int64_t ts) {
  kprobe kp = {kf, pre, kf->u.s->len, KEY_STR};
  uint32_t i;
  if (entry_new(op, s, &kp, h, s->tw, at, &i) != WM_OK) return WM_ERR;
  return window_add(op, s, kf, s->tw, i, 1, rec, ts);
}

/* The common record of a tumbling event-time window with the default trigger, sum of an
 * integer field and a key_by of one string field of up to 8 bytes, not late. What the
 * general path below does for it, in one pass without its calls (kprobe, hashes,
 * entry_get, add_to_window, on_element): the same lookup, the same sum, the same late
 * firing; a new window is created at the slot the lookup ended on, as entry_get would, and
 * then added to as add_to_window does. Returns 1 (nothing done) for anything else: a late
 * record, an index that must grow, a record of another schema, a key or value of another
 * type, a record of an earlier channel than the window's first (by_chan), a timeline. */
static inline int tumble_hit(wm_op *op, winop *s, const wm_value *rec, int64_t ts) {
  const wm_value *kf = wm_field_peek(s->key1, rec), *v = wm_field_peek(s->sum_field, rec);
  if (!kf || !v || kf->type != WM_STR || kf->flags || v->type != WM_INT) return 1;
  if (ts < s->ts_lo || ts > s->ts_hi) return 1; /* bad_timestamp's, below */
  if (!s->tw_ok || ts < s->tw.start || ts >= s->tw.stop || s->tw_clean <= op->wm) return 1;
  if ((s->usedidx + 1) * 4 >= s->capidx * 3 || WM_OBS_UNLIKELY(op->ctx->observe != NULL))
    return 1;
  size_t n = kf->u.s->len;
  if (n > 8) return 1;
  uint64_t pre = str_pre(kf->u.s->data, n);
  uint64_t kh = short_key_bits(pre, n, KEY_STR);
  wm_window w = s->tw;
  uint64_t h = entry_hash(s, kh, w);
  size_t at = 0;
  uint32_t ent = short_find(s, h, w, n, pre, &at);
  if (ent == 0) /* a new window, at the slot idx_find would give (no tombstones seen) */
    return tumble_new(op, s, kf, pre, h, at, rec, ts);
  if (ent == TOMB) return 1;
  wentry *e = &s->e[ent - 1];
  if (e->aux.type != WM_INT || (s->by_chan && s->chan < s->fch[ent - 1])) return 1;
  e->aux.u.i = (int64_t)((uint64_t)e->aux.u.i + (uint64_t)v->u.i); /* as builtin_add: wraps */
  if (max_ts_of(w) <= op->wm) return emit_window(op, s, ent - 1); /* a late firing */
  return WM_OK;
}

/* The common record of a sliding window in pane mode keyed by one string field of up to 8
 * bytes: its pane (the one of the last record) exists and holds an integer, which the
 * record's value (or 1 for count) is folded into, as pane_record does for it without its
 * calls. Returns 1 (nothing done) for anything else: another pane, a pane to create (its
 * windows' markers and timers), a late record, a key or value of another type, a row of
 * another schema, a timeline. */
static inline int pane_hit(wm_op *op, winop *s, const wm_value *rec, int64_t ts) {
  const wm_value *kf = wm_field_peek(s->key1, rec), *v = NULL;
  if (!kf || kf->type != WM_STR || kf->flags) return 1;
  if (s->pane_field && (!(v = wm_field_peek(s->pane_field, rec)) || v->type != WM_INT)) return 1;
  if (ts < s->ts_lo || ts > s->ts_hi) return 1; /* bad_timestamp's, below */
  if (!s->pc_ok || ts < s->pc.start || ts >= s->pc.stop || s->pc_clean <= op->wm) return 1;
  if (WM_OBS_UNLIKELY(op->ctx->observe != NULL)) return 1;
  size_t n = kf->u.s->len;
  if (n > 8) return 1;
  uint64_t pre = str_pre(kf->u.s->data, n);
  uint64_t h = entry_hash(s, short_key_bits(pre, n, KEY_STR), s->pc);
  size_t at = 0;
  uint32_t ent = short_find(s, h, s->pc, n, pre, &at);
  if (ent == 0 || ent == TOMB) return 1; /* a new pane: pane_record makes it */
  wm_value *aux = &s->e[ent - 1].aux;
  if (aux->type != WM_INT) return 1; /* its first record: add_record */
  int64_t x = v ? v->u.i : 1;
  if (s->pane_agg == WM_AGG_MIN) {
    if (x < aux->u.i) aux->u.i = x;
  } else if (s->pane_agg == WM_AGG_MAX) {
    if (x > aux->u.i) aux->u.i = x;
  } else {
    aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)x); /* sum, count: wraps */
  }
  return WM_OK;
}

static int winop_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  winop *s = op->impl;
  s->chan = chan < 255 ? chan : 255;
  wm_ctx *ctx = op->ctx;
  if (s->tfast) {
    int rc = tumble_hit(op, s, rec, ts);
    if (rc != 1) return rc;
  } else if (s->panes && s->key1) {
    int rc = pane_hit(op, s, rec, ts);
    if (rc != 1) return rc;
  }
  if (s->event_time && (ts < s->ts_lo || ts > s->ts_hi)) return bad_timestamp(op, s, rec, ts, 0);
  wm_value key;
  const wm_value *kf;
  if (s->key1 && (kf = wm_field_peek(s->key1, rec)) &&
      (kf->type == WM_STR || kf->type == WM_INT || kf->type == WM_CSTR)) {
    key = *kf; /* what fieldkeys_fn would give, and a valid key */
  } else {
    if (s->cfg.keysel.fn(s->cfg.keysel.ud, op, rec, &key) != WM_OK) return WM_ERR;
  }
  if (WM_OBS_UNLIKELY(!wm_key_valid(&key))) {
    wm_buf b;
    wm_buf_init(&b);
    wm_op_format_record(op, rec, &b);
    wm_ctx_error(ctx, "key is %s (a key must be a string, number or boolean) for record %s",
                 key.type == WM_NIL ? "nil" : "not a scalar", b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  kprobe kp = kprobe_of(&key);
  uint64_t khash = key_hash_of(&kp);
  int64_t at_ts = s->cfg.assigner.processing_time ? wm_ctx_now(ctx) : ts;
  int64_t W = op->wm;
  int any = 0, rc;
  if (s->merging) {
    wm_assigner a = s->cfg.assigner;
    if (s->cfg.gapfn.fn) {
      if (s->cfg.gapfn.fn(s->cfg.gapfn.ud, op, rec, ts, &a.gap) != WM_OK) return WM_ERR;
      if (s->event_time && ts > WM_TIME_MAX - a.gap) return bad_timestamp(op, s, rec, ts, a.gap);
    }
    wm_assigner_assign(&a, at_ts, s->wins);
    uint32_t i = 0;
    int skip = 0;
    /* the key may be borrowed from a Lua call: merging calls no Lua before it is copied */
    if (merge_add(op, s, &kp, khash, s->wins[0], &i, &skip) != WM_OK) return WM_ERR;
    if (!skip) {
      any = 1;
      wm_observe_window(op, &key, ts, s->e[i].w, 0);
      if (on_element(op, s, i, rec, ts) != WM_OK) return WM_ERR;
    }
  } else if (s->cfg.assigner.kind == WM_WA_TUMBLING) {
    /* one window; consecutive records usually share it: the assigner runs only when the
     * record leaves the last window (exact: every ts in [start, stop) has this window,
     * unless it was cut at MIN or MAX, which is never cached) */
    if (!s->tw_ok || at_ts < s->tw.start || at_ts >= s->tw.stop) {
      wm_assigner_assign(&s->cfg.assigner, at_ts, &s->tw);
      s->tw_ok = s->tw.start != WM_TIME_MIN && s->tw.stop != WM_TIME_MAX &&
                 s->tw.stop - s->tw.start == s->cfg.assigner.size;
      s->tw_clean = cleanup_of(s, s->tw);
    }
    wm_window w = s->tw;
    if (!(s->event_time && s->tw_clean <= W)) { /* else a late window: skip */
      any = 1;
      if (add_to_window(op, s, &kp, &key, entry_hash(s, khash, w), w, rec, ts) != WM_OK)
        return WM_ERR;
    }
  } else if (s->panes &&
             (rc = pane_record(op, s, &kp, &key, khash, rec, ts, &any)) != 1) {
    if (rc != WM_OK) return WM_ERR;
  } else {
    size_t n = wm_assigner_assign(&s->cfg.assigner, at_ts, s->wins);
    for (size_t k = 0; k < n; k++) s->whash[k] = entry_hash(s, khash, s->wins[k]);
    if (n > 1) {
      /* several windows per record (sliding): their lookups are independent cache misses;
       * start them all (index slots, then the entries they name) before the first one is
       * needed, so that they overlap instead of queueing. Only hints: a stale address is
       * never dereferenced. */
      size_t mask = s->capidx - 1;
      for (size_t k = 0; k < n; k++) __builtin_prefetch(&s->idx[home_of(s->whash[k], mask)]);
      for (size_t k = 0; k < n; k++) {
        uint32_t ent = slot_ent(s->idx[home_of(s->whash[k], mask)]);
        if (ent != 0 && ent != TOMB) __builtin_prefetch(&s->e[ent - 1]);
      }
    }
    for (size_t k = 0; k < n; k++) {
      wm_window w = s->wins[k];
      if (s->event_time && cleanup_of(s, w) <= W) continue; /* late window: skip */
      any = 1;
      if (add_to_window(op, s, &kp, &key, s->whash[k], w, rec, ts) != WM_OK) return WM_ERR;
    }
  }
  if (!any && s->event_time && s->cfg.late_as_partial && s->fast &&
      s->cfg.assigner.kind == WM_WA_TUMBLING) {
    /* its window's partial of one record (at the window's end, as a firing emits it):
     * the function's state after adding this record alone */
    wm_value acc = wm_nil(), aux = wm_nil();
    rc = s->cfg.fn.add(s->cfg.fn.ud, op, &acc, &aux, rec);
    if (rc == WM_OK) {
      wm_fire f = {.key = &key, .window = s->tw, .max_ts = max_ts_of(s->tw), .watermark = W,
                   .acc = &acc, .aux = &aux};
      rc = s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
    }
    wm_value_release(&ctx->host, &acc);
    wm_value_release(&ctx->host, &aux);
    return rc;
  }
  if (!any && s->event_time && wm_time_add_sat(ts, s->cfg.lateness) <= W) {
    wm_observe_late(op, &key, ts, s->cfg.lateness, s->late_port > 0 ? s->late_tag : NULL);
    if (s->late_port > 0) {
      op->m.late_side += op->ports[s->late_port].side; /* not the pre-aggregation's own port */
      return wm_op_emit(op, s->late_port, rec, ts);
    }
    op->m.late_dropped++;
  }
  return WM_OK;
}

const char *wm_winop_key_field(const wm_op *op) {
  if (op->vt != &winop_vt) return NULL;
  const winop *s = op->impl;
  return s->tfast ? s->key1->name : NULL;
}

/* hot entries of 64 bytes and index slots: past about 4 MB, beyond a core's L2 */
#define HINT_MIN_WINDOWS 65536u

bool wm_winop_wants_hints(const wm_op *op) {
  const winop *s = op->impl;
  return s->nlive >= HINT_MIN_WINDOWS;
}

int wm_winop_prefetch_slot(wm_op *op, const char *key, size_t n, int64_t ts, uint64_t *h) {
  winop *s = op->impl;
  if (n > 8 || !s->tw_ok || ts < s->tw.start || ts >= s->tw.stop) return -1;
  uint64_t pre = str_pre(key, n);
  uint64_t kh = short_key_bits(pre, n, KEY_STR);
  *h = entry_hash(s, kh, s->tw);
  __builtin_prefetch(&s->idx[home_of(*h, s->capidx - 1)]);
  return 0;
}

void wm_winop_prefetch_entry(wm_op *op, uint64_t h) {
  winop *s = op->impl;
  uint64_t v = s->idx[home_of(h, s->capidx - 1)]; /* the index may have grown: a hint only */
  uint32_t ent = slot_ent(v);
  if (ent != 0 && ent != TOMB && (v >> 32) == (h >> 32)) __builtin_prefetch(&s->e[ent - 1]);
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
      bool reg = tm_take(s, e, domain, t);
      if (!reg && !clean) {
        if (wake && wake_at(op, s, i) != WM_OK) return WM_ERR; /* the window moved on */
        continue;
      }
      wm_trigger_ctx c;
      tctx_init(op, s, i, &c);
      res = domain == WM_DOMAIN_EVENT ? s->trig->vt->on_event_time(s->trig, &c, t)
                                      : s->trig->vt->on_processing_time(s->trig, &c, t);
    }
    if (act(op, s, i, res) != WM_OK) return WM_ERR;
    if (clean && s->e[i].live && s->e[i].gen == gen && clear_all(op, s, i) != WM_OK) return WM_ERR;
    if (wake && s->e[i].live && s->e[i].gen == gen && wake_at(op, s, i) != WM_OK) return WM_ERR;
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

static void winop_free(wm_op *op) {
  winop *s = op->impl;
  if (!s) return;
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) entry_delete(op, s, i);
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

/* ---- checkpoints ---------------------------------------------------------------------
 *
 * version, 'W', the configuration as text (refused when it differs: the bytes of a 5 s
 * window do not make a 10 s one), end-of-input flushing, compaction's pass and thresholds,
 * the trigger object's own state (per level of the trigger: a flag, then the value its
 * snapshot hook gave), then the slab of entries as it is: slot for slot, so that the
 * queued timers, which name (slot, generation), stay valid as written. A free slot is its
 * generation; a live one its generation, flags (EF_*: what follows), the key, the window,
 * the incremental state, the timers it expects (fire_t, wake_t, relative to its max_ts),
 * its creation sequence (the order of equal timers, relative to the previous live
 * entry's), list-mode records (and their timestamps with an evictor), the trigger's
 * integers and host value, the trigger's registrations. Then the event-time and the
 * processing-time queues, entry for entry in push order. The index, the merging chains,
 * the free list and the scratch space are rebuilt on restore. */

enum { EF_FIRE = 1, EF_WAKE = 2, EF_ACC = 4, EF_ITEMS = 8, EF_TSTATE = 16, EF_HSTATE = 32,
       EF_TM = 64, EF_CHAN = 128, EF_ALL = 255 };

static const char *const assigner_names[] = {"?", "tumbling", "sliding", "session", "global"};

/* What must not change between the checkpoint and the job that restores it. */
static void config_text(const winop *s, char *out, size_t n) {
  const wm_assigner *a = &s->cfg.assigner;
  int k = snprintf(out, n, "%s size %lld slide %lld offset %lld gap %lld%s, lateness %lld, %s",
                   assigner_names[a->kind >= 1 && a->kind <= 4 ? a->kind : 0],
                   (long long)a->size, (long long)a->slide, (long long)a->offset,
                   (long long)a->gap, a->processing_time ? " (processing time)" : "",
                   (long long)s->cfg.lateness, s->list ? "records kept" : "incremental");
  static const char *const ev[] = {"no evictor", "count evictor", "time evictor",
                                   "custom evictor"};
  int ek = s->cfg.evictor.kind;
  if (k > 0 && (size_t)k < n)
    k += snprintf(out + k, n - (size_t)k, ", %s", ev[ek >= 0 && ek <= 3 ? ek : 0]);
  for (const wm_trigger *t = s->trig; t && k > 0 && (size_t)k < n; t = t->inner)
    k += snprintf(out + k, n - (size_t)k, ", trigger %s %lld", t->vt->name, (long long)t->n);
  if (s->by_chan && k > 0 && (size_t)k < n)
    k += snprintf(out + k, n - (size_t)k, ", first by channel");
  if (s->cfg.merges_partials && k > 0 && (size_t)k < n)
    snprintf(out + k, n - (size_t)k, ", merges partials");
}

/* What the function's state means (wm_winop_config.meaning): the given text, or a
 * built-in's aggregation and field; "" when unknown (not checked). */
static void meaning_text(const winop *s, char *out, size_t n) {
  wm_winfn_meaning(s->cfg.meaning, &s->cfg.fn, out, n);
}

#define MEANING_SEP "\nfunction "

/* The configuration text a snapshot writes: config_text, then the function's meaning
 * after MEANING_SEP when it is known (a checkpoint written before the meaning has none). */
static void snapshot_text(const winop *s, char *out, size_t n) {
  config_text(s, out, n);
  size_t k = strlen(out);
  char m[256];
  meaning_text(s, m, sizeof m);
  if (m[0] && k < n) snprintf(out + k, n - k, "%s%s", MEANING_SEP, m);
}

static int64_t rel(int64_t t, int64_t base) { return (int64_t)((uint64_t)t - (uint64_t)base); }
static int64_t unrel(int64_t d, int64_t base) { return (int64_t)((uint64_t)d + (uint64_t)base); }

static int put_entry(wm_op *op, winop *s, wm_state_io *io, uint32_t i, uint64_t *prev_seq) {
  const wentry *e = &s->e[i];
  const wcold *c = &s->c[i];
  static const wext none = {.wake_t = WM_TIME_MIN};
  const wext *x = s->x ? &s->x[i] : &none;
  unsigned f = (e->fire ? EF_FIRE : 0) | (x->wake_t != WM_TIME_MIN ? EF_WAKE : 0) |
               (e->inl || c->acc.type != WM_NIL ? EF_ACC : 0) | (x->nitems ? EF_ITEMS : 0) |
               (x->tstate[0] || x->tstate[1] ? EF_TSTATE : 0) |
               (x->hstate.type != WM_NIL ? EF_HSTATE : 0) | (x->ntm ? EF_TM : 0) |
               (s->by_chan && s->fch[i] ? EF_CHAN : 0);
  int64_t mts = max_ts_of(e->w);
  keybuf kb;
  wm_state_put_u(io, f);
  if (wm_state_put_value(op, io, key_of(s, i, &kb), "a window's key") != WM_OK) return WM_ERR;
  wm_state_put_i(io, e->w.start);
  wm_state_put_u(io, (uint64_t)e->w.stop - (uint64_t)e->w.start);
  if (wm_state_put_value(op, io, &e->aux, "a window's accumulator") != WM_OK) return WM_ERR;
  if (e->inl) { /* the record as it came: the bytes a retained row gives */
    wm_value row;
    if (unpack_first(op, s, i, &row) != WM_OK) return WM_ERR;
    int rc = wm_state_put_value(op, io, &row, "a window's accumulator");
    wm_value_release(&op->ctx->host, &row);
    if (rc != WM_OK) return WM_ERR;
  } else if ((f & EF_ACC) && wm_state_put_value(op, io, &c->acc, "a window's accumulator") != WM_OK) {
    return WM_ERR;
  }
  if (f & EF_FIRE) wm_state_put_i(io, 0); /* the firing timer is at max_ts */
  if (f & EF_WAKE) wm_state_put_i(io, rel(x->wake_t, mts));
  wm_state_put_i(io, (int64_t)(e->seq - *prev_seq));
  *prev_seq = e->seq;
  if (f & EF_ITEMS) {
    wm_state_put_u(io, x->nitems);
    for (uint32_t k = 0; k < x->nitems; k++)
      if (wm_state_put_value(op, io, &x->items[k], "a window's record") != WM_OK) return WM_ERR;
    if (s->cfg.evictor.kind)
      for (uint32_t k = 0; k < x->nitems; k++) wm_state_put_i(io, x->its ? x->its[k] : WM_TIME_MIN);
  }
  if (f & EF_TSTATE) {
    wm_state_put_i(io, x->tstate[0]);
    wm_state_put_i(io, x->tstate[1]);
  }
  if ((f & EF_HSTATE) && wm_state_put_value(op, io, &x->hstate, "a trigger's state") != WM_OK)
    return WM_ERR;
  if (f & EF_TM) {
    wm_state_put_u(io, x->ntm);
    for (uint32_t k = 0; k < x->ntm; k++) {
      wm_state_put_i(io, x->tm[k].t);
      wm_state_put_u(io, (uint64_t)x->tm[k].domain);
      wm_state_put_u(io, x->tm[k].epoch);
    }
  }
  if (f & EF_CHAN) wm_state_put_u(io, s->fch[i]);
  return WM_OK;
}

static int winop_snapshot(wm_op *op, wm_state_io *io) {
  winop *s = op->impl;
  char cfg[800];
  snapshot_text(s, cfg, sizeof cfg);
  wm_state_put_header(io, 'W');
  wm_state_put_u(io, strlen(cfg));
  wm_buf_adds(io->out, cfg);
  wm_state_put_u(io, (uint64_t)s->pt_flushing | (s->panes ? 2u : 0u)); /* bit 1: panes */
  wm_state_put_u(io, s->epoch);
  wm_state_put_u(io, s->compact_at[0]);
  wm_state_put_u(io, s->compact_at[1]);
  for (const wm_trigger *t = s->trig; t; t = t->inner) {
    wm_state_put_u(io, t->snapshot != NULL);
    if (!t->snapshot) continue;
    wm_value v = wm_nil();
    if (t->snapshot(t->ud, op, &v) != WM_OK) return WM_ERR;
    int rc = wm_state_put_value(op, io, &v, "the trigger's state");
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) return rc;
  }
  wm_state_put_u(io, s->ne);
  uint64_t prev_seq = 0;
  for (uint32_t i = 0; i < s->ne; i++) {
    wm_state_put_u(io, ((uint64_t)s->e[i].gen << 1) | s->e[i].live);
    if (s->e[i].live && put_entry(op, s, io, i, &prev_seq) != WM_OK) return WM_ERR;
  }
  wm_state_put_timers(io, s->timers);
  wm_state_put_timers(io, s->ptimers);
  return wm_state_put_done(op, io);
}

/* Reads the live entry at slot i (already marked live, its generation set). */
static int get_entry(wm_state_rd *r, winop *s, uint32_t i, uint64_t *prev_seq) {
  wm_op *op = r->op;
  wentry *e = &s->e[i];
  wcold *c = &s->c[i];
  wext *x = s->x ? &s->x[i] : NULL;
  uint64_t f, len, n, u;
  int64_t d;
  if (wm_state_get_u(r, &f, "a window's flags") != WM_OK) return WM_ERR;
  if (f & ~(uint64_t)EF_ALL) return wm_state_bad(r, "a window's flags are %llu", (unsigned long long)f);
  if (!x && (f & (EF_WAKE | EF_ITEMS | EF_TSTATE | EF_HSTATE | EF_TM)))
    return wm_state_bad(r, "a window's trigger state or records in an operator that keeps none");
  if (wm_state_get_value(r, &c->key, "a window's key") != WM_OK) return WM_ERR;
  if (!wm_key_valid(&c->key)) return wm_state_bad(r, "a window's key is not a scalar");
  if (wm_state_get_i(r, &e->w.start, "a window's start") != WM_OK ||
      wm_state_get_u(r, &len, "a window's length") != WM_OK)
    return WM_ERR;
  e->w.stop = (int64_t)((uint64_t)e->w.start + len);
  if (e->w.stop < e->w.start) return wm_state_bad(r, "a window ends before it starts");
  kprobe k = kprobe_of(&c->key);
  e->hash = entry_hash(s, key_hash_of(&k), e->w);
  e->kpre = k.pre;
  e->klen = k.len < KLEN_MAX ? k.len : KLEN_MAX;
  e->kcls = k.cls;
  /* as entry_new: a key of up to 8 bytes is not kept when the hot part is enough */
  if (s->kelide && k.cls != KEY_OTHER && k.len <= 8) wm_value_release(&op->ctx->host, &c->key);
  int64_t mts = max_ts_of(e->w);
  if (wm_state_get_value(r, &e->aux, "a window's accumulator") != WM_OK) return WM_ERR;
  if ((f & EF_ACC) && wm_state_get_value(r, &c->acc, "a window's accumulator") != WM_OK)
    return WM_ERR;
  if (f & EF_FIRE) {
    if (wm_state_get_i(r, &d, "a window's firing time") != WM_OK) return WM_ERR;
    if (d != 0) return wm_state_bad(r, "a window's firing time is not its end");
    e->fire = 1;
  }
  if (f & EF_WAKE) {
    if (wm_state_get_i(r, &d, "a window's wake-up time") != WM_OK) return WM_ERR;
    x->wake_t = unrel(d, mts);
  }
  if (wm_state_get_i(r, &d, "a window's creation order") != WM_OK) return WM_ERR;
  e->seq = *prev_seq + (uint64_t)d;
  *prev_seq = e->seq;
  if (f & EF_ITEMS) {
    if (!s->list) return wm_state_bad(r, "records in a window that keeps none");
    if (wm_state_get_count(r, &n, 1, "a window's record count") != WM_OK) return WM_ERR;
    if (n > UINT32_MAX / 2) return wm_state_bad(r, "a window holds %llu records", (unsigned long long)n);
    x->items = calloc(n ? n : 1, sizeof *x->items);
    if (s->cfg.evictor.kind) x->its = calloc(n ? n : 1, sizeof *x->its);
    if (!x->items || (s->cfg.evictor.kind && !x->its))
      return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
    x->capitems = (uint32_t)(n ? n : 1);
    for (uint64_t q = 0; q < n; q++) {
      if (wm_state_get_value(r, &x->items[q], "a window's record") != WM_OK) return WM_ERR;
      x->nitems++;
    }
    for (uint64_t q = 0; s->cfg.evictor.kind && q < n; q++)
      if (wm_state_get_i(r, &x->its[q], "a record's timestamp") != WM_OK) return WM_ERR;
  }
  if ((f & EF_TSTATE) && (wm_state_get_i(r, &x->tstate[0], "a trigger's state") != WM_OK ||
                          wm_state_get_i(r, &x->tstate[1], "a trigger's state") != WM_OK))
    return WM_ERR;
  if ((f & EF_HSTATE) && wm_state_get_value(r, &x->hstate, "a trigger's state") != WM_OK)
    return WM_ERR;
  if (f & EF_TM) {
    if (wm_state_get_count(r, &n, 3, "a trigger's timer count") != WM_OK) return WM_ERR;
    if (!(x->tm = calloc(n ? n : 1, sizeof *x->tm)))
      return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
    x->captm = (uint32_t)(n ? n : 1);
    for (uint64_t q = 0; q < n; q++) {
      tmreg *t = &x->tm[q];
      if (wm_state_get_i(r, &t->t, "a trigger's timer") != WM_OK ||
          wm_state_get_u(r, &u, "a trigger timer's domain") != WM_OK)
        return WM_ERR;
      if (u > 1) return wm_state_bad(r, "a trigger timer's domain is %llu", (unsigned long long)u);
      t->domain = (int)u;
      if (wm_state_get_u(r, &u, "a trigger timer's pass") != WM_OK) return WM_ERR;
      t->epoch = (uint32_t)u;
      x->ntm++;
    }
  }
  if (s->by_chan) s->fch[i] = 0;
  if (f & EF_CHAN) {
    if (!s->by_chan) return wm_state_bad(r, "a first record's channel in an operator that keeps none");
    if (wm_state_get_u(r, &u, "a first record's channel") != WM_OK) return WM_ERR;
    if (u > 255) return wm_state_bad(r, "a first record's channel is %llu", (unsigned long long)u);
    s->fch[i] = (uint8_t)u;
  }
  return WM_OK;
}

typedef struct startidx {
  int64_t start;
  uint32_t i;
} startidx;

static int cmp_start(const void *a, const void *b) {
  const startidx *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The index over the restored entries; for merging windows, the keys' treaps, each linked
 * in order of start (the root indexed). */
static int index_entries(wm_state_rd *r, winop *s) {
  size_t cap = 64;
  while (cap < (size_t)s->nlive * 2 + 2) cap *= 2;
  uint64_t *n = calloc(cap, sizeof *n);
  if (!n) return wm_ctx_error(r->op->ctx, "out of memory restoring a checkpoint");
  free(s->idx);
  s->idx = n;
  s->capidx = cap;
  s->usedidx = 0;
  startidx *order = calloc(s->nlive ? s->nlive : 1, sizeof *order);
  if (!order) return wm_ctx_error(r->op->ctx, "out of memory restoring a checkpoint");
  uint32_t m = 0;
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) order[m++] = (startidx){s->e[i].w.start, i};
  if (s->merging) qsort(order, m, sizeof *order, cmp_start);
  int rc = WM_OK;
  for (uint32_t q = 0; q < m && rc == WM_OK; q++) {
    uint32_t i = order[q].i;
    wentry *e = &s->e[i];
    keybuf kb;
    kprobe k = kprobe_at(s, i, &kb);
    int found;
    size_t at = idx_find(s, &k, e->hash, e->w, &found);
    if (s->x) knone(&s->x[i]);
    if (!found) {
      s->idx[at] = slot_make(i + 1, e->hash);
      s->usedidx++;
    } else if (!s->merging) {
      rc = wm_state_bad(r, "a window appears twice");
    } else {
      /* after the key's latest window so far (its treap's rightmost entry) */
      uint32_t root = slot_ent(s->idx[at]) - 1, t = root;
      while (s->x[t].kr != NONE) t = s->x[t].kr;
      if (intersects(s->e[t].w, e->w)) {
        rc = wm_state_bad(r, "a key's sessions overlap");
      } else {
        klink(s->x, i, t, NONE, &root);
        s->idx[at] = slot_make(root + 1, e->hash);
      }
    }
  }
  free(order);
  return rc;
}

static int winop_timer_valid(void *ud, wm_state_rd *r, int64_t t, uint64_t payload) {
  (void)t;
  const winop *s = ud;
  if ((uint32_t)payload >= s->ne || (payload >> 32) > 0x7fffffffu)
    return wm_state_bad(r, "a timer names window %u of %u", (uint32_t)payload, s->ne);
  return WM_OK;
}

static int restore_body(wm_state_rd *r, winop *s) {
  wm_op *op = r->op;
  char cfg[512];
  uint64_t n, u[4];
  config_text(s, cfg, sizeof cfg);
  if (wm_state_get_header(r, 'W', "a window operator") != WM_OK ||
      wm_state_get_count(r, &n, 1, "the configuration") != WM_OK)
    return WM_ERR;
  /* the configuration must be the same; the function's meaning too, when the checkpoint
   * has it (written since it is kept) and this job knows it, unless a change is allowed */
  size_t sep = strlen(MEANING_SEP), base = 0;
  while (base < n && !(base + sep <= n && memcmp(r->p + base, MEANING_SEP, sep) == 0)) base++;
  if (base != strlen(cfg) || memcmp(r->p, cfg, base) != 0)
    return wm_ctx_error(op->ctx,
                        "the checkpoint's window operator differs from this job's: it was\n"
                        "    %.*s\n  and is now\n    %s\n  (the job changed since the "
                        "checkpoint)",
                        (int)(base < 400 ? base : 400), (const char *)r->p, cfg);
  char now[256];
  meaning_text(s, now, sizeof now);
  if (base < n && now[0]) {
    const char *was = (const char *)r->p + base + sep;
    size_t wl = n - base - sep;
    if (wl != strlen(now) || memcmp(was, now, wl) != 0) {
      if (!op->ctx->allow_state_change)
        return wm_ctx_error(op->ctx,
                            "the window function changed since the checkpoint: its state was "
                            "made by\n    %.*s\n  and this job's is\n    %s\n  the windows "
                            "open at the checkpoint would come out wrong (to go on with that "
                            "state anyway, run with --allow-state-change)",
                            (int)(wl < 300 ? wl : 300), was, now);
      op->ctx->state_changes++;
    }
  }
  r->p += n;
  static const char *const what[] = {"the end-of-input flag", "the compaction pass",
                                     "the compaction threshold", "the compaction threshold"};
  for (int k = 0; k < 4; k++)
    if (wm_state_get_u(r, &u[k], what[k]) != WM_OK) return WM_ERR;
  if (u[0] > 3 || u[1] > UINT32_MAX) return wm_state_bad(r, "bad end-of-input flag or pass");
  if ((u[0] & 2) && !s->panes_ok) return wm_state_bad(r, "panes for windows that cannot have them");
  s->panes = (u[0] & 2) != 0; /* a state written as panes reads as panes */
  for (const wm_trigger *t = s->trig; t; t = t->inner) {
    uint64_t has;
    if (wm_state_get_u(r, &has, "the trigger's state flag") != WM_OK) return WM_ERR;
    if (has > 1) return wm_state_bad(r, "the trigger's state flag is %llu", (unsigned long long)has);
    if (!has) continue;
    if (!t->restore)
      return wm_ctx_error(op->ctx, "the checkpoint holds state of trigger '%s' and this job's "
                                   "trigger has no restore method to take it", t->vt->name);
    wm_value v;
    if (wm_state_get_value(r, &v, "the trigger's state") != WM_OK) return WM_ERR;
    int rc = t->restore(t->ud, op, &v);
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) return WM_ERR;
  }
  if (wm_state_get_count(r, &n, 1, "the number of window slots") != WM_OK) return WM_ERR;
  if (n >= NONE / 2) return wm_state_bad(r, "%llu window slots", (unsigned long long)n);
  if (n) {
    uint32_t cap = (uint32_t)n;
    s->c = calloc(cap, sizeof *s->c);
    if (s->need_ext) s->x = calloc(cap, sizeof *s->x);
    if (s->by_chan) s->fch = calloc(cap, 1);
    if (hot_grow(s, cap) != 0 || !s->c || (s->need_ext && !s->x) || (s->by_chan && !s->fch))
      return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
    memset(s->e, 0, cap * sizeof *s->e);
    s->cape = cap;
  }
  uint64_t prev_seq = 0, max_seq = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t g;
    if (wm_state_get_u(r, &g, "a window slot") != WM_OK) return WM_ERR;
    if ((g >> 1) > 0x7fffffffu) return wm_state_bad(r, "a window slot's generation is too big");
    s->ne = i + 1;
    s->e[i].gen = (uint32_t)(g >> 1);
    if (s->x) s->x[i].wake_t = WM_TIME_MIN;
    if (!(g & 1)) continue;
    s->e[i].live = 1; /* from here on winop_free releases what the entry holds */
    s->nlive++;
    if (get_entry(r, s, i, &prev_seq) != WM_OK) return WM_ERR;
    if (s->e[i].seq >= max_seq) max_seq = s->e[i].seq + 1;
  }
  if (index_entries(r, s) != WM_OK) return WM_ERR;
  for (uint32_t i = s->ne; i-- > 0;) {
    if (s->e[i].live) continue;
    s->e[i].kpre = s->free_head;
    s->free_head = i;
  }
  if (wm_state_get_timers(r, s->timers, winop_timer_valid, s) != WM_OK ||
      wm_state_get_timers(r, s->ptimers, winop_timer_valid, s) != WM_OK ||
      wm_state_get_end(r) != WM_OK)
    return WM_ERR;
  s->pt_flushing = u[0] & 1;
  s->npane = 0;
  for (uint32_t i = 0; i < s->ne; i++) s->npane += s->e[i].live && is_pane(s, &s->e[i]);
  s->epoch = (uint32_t)u[1];
  s->compact_at[0] = (size_t)u[2];
  s->compact_at[1] = (size_t)u[3];
  /* windows made from now on order after the restored ones, as they would have */
  if (op->ctx->seq < max_seq) op->ctx->seq = max_seq;
  if (wm_state_rearm(op, s->ptimers) != WM_OK) return WM_ERR;
  return WM_OK;
}

/* Back to the empty state the operator was built with. */
static int reset_state(wm_op *op, winop *s) {
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) entry_delete(op, s, i);
  free(s->e_raw);
  free(s->c);
  free(s->x);
  free(s->fch);
  s->e = NULL;
  s->e_raw = NULL;
  s->c = NULL;
  s->x = NULL;
  s->fch = NULL;
  s->ne = s->cape = s->nlive = 0;
  s->free_head = NONE;
  s->usedidx = 0;
  s->pt_flushing = false;
  s->panes = s->panes_ok;
  s->npane = 0;
  s->pc_ok = false;
  s->epoch = 0;
  s->compact_at[0] = s->compact_at[1] = 0;
  uint64_t *idx = calloc(64, sizeof *idx);
  wm_timers *q = wm_timers_new(), *pq = wm_timers_new();
  if (!idx || !q || !pq) {
    free(idx);
    wm_timers_free(q);
    wm_timers_free(pq);
    return WM_ERR;
  }
  free(s->idx);
  s->idx = idx;
  s->capidx = 64;
  wm_timers_free(s->timers);
  wm_timers_free(s->ptimers);
  s->timers = q;
  s->ptimers = pq;
  return WM_OK;
}

static int winop_restore(wm_op *op, wm_state_io *io) {
  winop *s = op->impl;
  if (s->ne || wm_timers_size(s->timers) || wm_timers_size(s->ptimers))
    return wm_ctx_error(op->ctx, "a checkpoint is restored only into a new operator");
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  if (restore_body(&r, s) == WM_OK) return WM_OK;
  /* the index may be half built: entry_delete must not find stale slots in it */
  memset(s->idx, 0, s->capidx * sizeof *s->idx);
  reset_state(op, s);
  return WM_ERR;
}

static const wm_op_vt winop_vt = {
    .kind = "window",
    .record = winop_record,
    .watermark = winop_watermark,
    .processing_time = winop_processing_time,
    .free = winop_free,
    .snapshot = winop_snapshot,
    .restore = winop_restore,
};

int wm_winop_chan(const wm_op *op) {
  const winop *s = op->impl;
  return s->chan;
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
