/* An index from keys to the entries of an owner's array (open addressing, linear probing,
 * deletion by backward shift): the owner keeps its entries (each with its key and the key's
 * hash, wm_key_hash) wherever it likes and says how to read them; the index holds entry
 * numbers only. The core's one table from keys to entries: the interval join
 * (ops/wm_ijoin.c) and the keyed process (ops/wm_keyedop.c) use it; its hashes are wm_key_hash
 * (mixing: base/wm_hash.h). Tables that keep their own, and why, say so where they are: the
 * window operator's index (ops/wm_winop_int.h), timers (time/wm_timer.c), the timeline's
 * (timeline/wm_timeline.c). */
#ifndef WM_KEYIDX_H
#define WM_KEYIDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_value.h"

/* The key and hash of entry i of the owner (ud). */
typedef const wm_value *(*wm_keyidx_key_fn)(void *ud, uint32_t i, uint64_t *hash);

typedef struct wm_keyidx {
  uint32_t *at; /* entry + 1; 0 = empty */
  size_t cap;   /* a power of two */
  size_t n;
  wm_keyidx_key_fn key;
  void *ud;
} wm_keyidx;

#define WM_KEYIDX_NONE UINT32_MAX

/* 0, or -1 when out of memory. */
int wm_keyidx_init(wm_keyidx *x, wm_keyidx_key_fn key, void *ud);
void wm_keyidx_free(wm_keyidx *x);
/* Empties the index (keeps its memory). */
void wm_keyidx_clear(wm_keyidx *x);
/* The place of key: its entry's (*found 1), or the empty place where it would go. Inline
 * (as wm_keyidx_find): a keyed operator looks up a key on every record. */
static inline size_t wm_keyidx_place(const wm_keyidx *x, const wm_value *key, uint64_t h,
                                     int *found) {
  size_t mask = x->cap - 1, p = h & mask;
  for (;;) {
    uint32_t v = x->at[p];
    if (v == 0) {
      *found = 0;
      return p;
    }
    uint64_t eh;
    const wm_value *ek = x->key(x->ud, v - 1, &eh);
    if (eh == h && wm_key_equal(ek, key)) {
      *found = 1;
      return p;
    }
    p = (p + 1) & mask;
  }
}

/* The entry of key (h = wm_key_hash(key)), or WM_KEYIDX_NONE. */
static inline uint32_t wm_keyidx_find(const wm_keyidx *x, const wm_value *key, uint64_t h) {
  int found;
  size_t p = wm_keyidx_place(x, key, h, &found);
  return found ? x->at[p] - 1 : WM_KEYIDX_NONE;
}
/* Adds entry i (its key must not be in the index yet; the owner's key function must give
 * it). 0, or -1 when out of memory (nothing added). */
int wm_keyidx_add(wm_keyidx *x, uint32_t i);
/* Removes entry i, whose key is in the index. */
void wm_keyidx_remove(wm_keyidx *x, uint32_t i);

#endif
