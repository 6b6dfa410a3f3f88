#include "time/wm_timer.h"

#include <stdlib.h>
#include <string.h>

#include "base/wm_hash.h"

typedef struct group {
  int64_t t;
  wm_timer_entry *items;
  size_t n, cap;
  int sorted; /* items are in ascending order */
} group;

struct wm_timers {
  group *groups; /* slab; free slots chained through free_list */
  size_t ngroups, capgroups;
  uint32_t *free_list;
  size_t nfree;
  uint32_t *heap; /* group indexes, min-heap by t */
  size_t nheap, capheap;
  /* open addressing: t -> group index + 1 (0 = empty, UINT32_MAX = tombstone), hashed with
   * wm_mix64 (base/wm_hash.h). Its own table, not ops/wm_keyidx.h: the key is a bare int64
   * (no wm_value to compare) and this layer is below ops. */
  uint32_t *index;
  size_t capindex, usedindex; /* usedindex counts live and tombstones */
  size_t nentries;
  group popped; /* the group handed out by the last pop */
};

#define TOMB UINT32_MAX

wm_timers *wm_timers_new(void) {
  wm_timers *q = calloc(1, sizeof *q);
  if (!q) return NULL;
  q->capindex = 64;
  q->index = calloc(q->capindex, sizeof *q->index);
  if (!q->index) { free(q); return NULL; }
  return q;
}

void wm_timers_free(wm_timers *q) {
  if (!q) return;
  for (size_t i = 0; i < q->ngroups; i++) free(q->groups[i].items);
  free(q->groups);
  free(q->free_list);
  free(q->heap);
  free(q->index);
  free(q->popped.items);
  free(q);
}

size_t wm_timers_groups(const wm_timers *q) { return q->nheap; }
size_t wm_timers_size(const wm_timers *q) { return q->nentries; }

static size_t index_find(const wm_timers *q, int64_t t, int *found) {
  size_t mask = q->capindex - 1, i = wm_mix64((uint64_t)t) & mask, tomb = SIZE_MAX;
  for (;;) {
    uint32_t g = q->index[i];
    if (g == 0) { *found = 0; return tomb != SIZE_MAX ? tomb : i; }
    if (g == TOMB) { if (tomb == SIZE_MAX) tomb = i; }
    else if (q->groups[g - 1].t == t) { *found = 1; return i; }
    i = (i + 1) & mask;
  }
}

static int index_grow(wm_timers *q) {
  size_t oldcap = q->capindex;
  uint32_t *old = q->index;
  size_t cap = oldcap;
  if (q->nheap * 2 >= oldcap) cap *= 2; /* otherwise just clear tombstones */
  uint32_t *idx = calloc(cap, sizeof *idx);
  if (!idx) return -1;
  q->index = idx;
  q->capindex = cap;
  q->usedindex = 0;
  for (size_t i = 0; i < oldcap; i++) {
    if (old[i] == 0 || old[i] == TOMB) continue;
    int found;
    size_t at = index_find(q, q->groups[old[i] - 1].t, &found);
    idx[at] = old[i];
    q->usedindex++;
  }
  free(old);
  return 0;
}

static void heap_up(wm_timers *q, size_t i) {
  uint32_t g = q->heap[i];
  int64_t t = q->groups[g].t;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (q->groups[q->heap[p]].t <= t) break;
    q->heap[i] = q->heap[p];
    i = p;
  }
  q->heap[i] = g;
}

static void heap_down(wm_timers *q, size_t i) {
  uint32_t g = q->heap[i];
  int64_t t = q->groups[g].t;
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l >= q->nheap) break;
    m = l;
    if (l + 1 < q->nheap && q->groups[q->heap[l + 1]].t < q->groups[q->heap[l]].t) m = l + 1;
    if (q->groups[q->heap[m]].t >= t) break;
    q->heap[i] = q->heap[m];
    i = m;
  }
  q->heap[i] = g;
}

static int new_group(wm_timers *q, int64_t t, uint32_t *out) {
  uint32_t g;
  if (q->nfree) {
    g = q->free_list[--q->nfree];
  } else {
    if (q->ngroups == q->capgroups) {
      size_t cap = q->capgroups ? q->capgroups * 2 : 16;
      group *ng = realloc(q->groups, cap * sizeof *ng);
      if (!ng) return -1;
      q->groups = ng;
      q->capgroups = cap;
    }
    g = (uint32_t)q->ngroups++;
    memset(&q->groups[g], 0, sizeof q->groups[g]);
  }
  if (q->nheap == q->capheap) {
    size_t cap = q->capheap ? q->capheap * 2 : 16;
    uint32_t *nh = realloc(q->heap, cap * sizeof *nh);
    if (!nh) { q->free_list[q->nfree++] = g; return -1; }
    q->heap = nh;
    q->capheap = cap;
  }
  q->groups[g].t = t;
  q->groups[g].n = 0;
  q->groups[g].sorted = 1;
  q->heap[q->nheap++] = g;
  heap_up(q, q->nheap - 1);
  *out = g;
  return 0;
}

int wm_timers_push(wm_timers *q, int64_t t, uint64_t payload, uint64_t order) {
  if ((q->usedindex + 1) * 4 >= q->capindex * 3 && index_grow(q) != 0) return -1;
  int found;
  size_t at = index_find(q, t, &found);
  uint32_t g;
  if (found) {
    g = q->index[at] - 1;
  } else {
    /* the free list must be able to take the slot back if the heap cannot grow */
    if (q->nfree == 0) {
      uint32_t *fl = realloc(q->free_list, (q->ngroups + 1) * sizeof *fl);
      if (!fl) return -1;
      q->free_list = fl;
    }
    if (new_group(q, t, &g) != 0) return -1;
    if (q->index[at] == 0) q->usedindex++;
    q->index[at] = g + 1;
  }
  group *gr = &q->groups[g];
  if (gr->n == gr->cap) {
    size_t cap = gr->cap ? gr->cap * 2 : 4;
    wm_timer_entry *ni = realloc(gr->items, cap * sizeof *ni);
    if (!ni) return -1; /* the group stays (possibly empty) and fires nothing */
    gr->items = ni;
    gr->cap = cap;
  }
  if (gr->n && gr->items[gr->n - 1].order > order) gr->sorted = 0;
  gr->items[gr->n].payload = payload;
  gr->items[gr->n].order = order;
  gr->n++;
  q->nentries++;
  return 0;
}

int wm_timers_due(const wm_timers *q, int64_t upto, int64_t *t) {
  if (q->nheap == 0) return 0;
  int64_t first = q->groups[q->heap[0]].t;
  if (first > upto) return 0;
  *t = first;
  return 1;
}

static int cmp_entry(const void *a, const void *b) {
  const wm_timer_entry *x = a, *y = b;
  return x->order < y->order ? -1 : x->order > y->order;
}

int wm_timers_pop(wm_timers *q, int64_t upto, int64_t *t, const wm_timer_entry **entries,
                  size_t *n) {
  if (q->nheap == 0) return 0;
  uint32_t g = q->heap[0];
  group *gr = &q->groups[g];
  if (gr->t > upto) return 0;
  q->heap[0] = q->heap[--q->nheap];
  if (q->nheap) heap_down(q, 0);
  int found;
  size_t at = index_find(q, gr->t, &found);
  if (found) q->index[at] = TOMB;
  /* hand the group's items out by swapping buffers with the previous popped group, so
   * both keep their capacity and no allocation happens in steady state */
  wm_timer_entry *items = gr->items;
  size_t cnt = gr->n, cap = gr->cap;
  gr->items = q->popped.items;
  gr->cap = q->popped.cap;
  gr->n = 0;
  q->popped.items = items;
  q->popped.cap = cap;
  q->popped.n = cnt;
  q->popped.t = gr->t;
  /* the entries keep their push order when orders are equal: qsort is not stable, but an
   * owner that needs it passes distinct orders */
  if (!gr->sorted && cnt > 1) qsort(items, cnt, sizeof *items, cmp_entry);
  q->free_list[q->nfree++] = g;
  q->nentries -= cnt;
  *t = q->popped.t;
  *entries = items;
  *n = cnt;
  return 1;
}

size_t wm_timers_retain(wm_timers *q, int (*keep)(void *ud, int64_t t, uint64_t payload),
                        void *ud) {
  size_t removed = 0, nh = 0;
  for (size_t h = 0; h < q->nheap; h++) {
    uint32_t g = q->heap[h];
    group *gr = &q->groups[g];
    size_t k = 0;
    for (size_t i = 0; i < gr->n; i++)
      if (keep(ud, gr->t, gr->items[i].payload)) gr->items[k++] = gr->items[i];
    removed += gr->n - k;
    gr->n = k; /* filtering keeps the order, so `sorted` still holds */
    if (k) q->heap[nh++] = g;
    else q->free_list[q->nfree++] = g; /* room for it: the free list holds every group */
  }
  if (nh == q->nheap) {
    q->nentries -= removed;
    return removed;
  }
  q->nheap = nh;
  q->nentries -= removed;
  /* the heap lost members at random places: heapify; the index loses their times */
  for (size_t i = nh / 2; i-- > 0;) heap_down(q, i);
  memset(q->index, 0, q->capindex * sizeof *q->index);
  q->usedindex = 0;
  for (size_t h = 0; h < nh; h++) {
    int found;
    size_t at = index_find(q, q->groups[q->heap[h]].t, &found);
    q->index[at] = q->heap[h] + 1;
    q->usedindex++;
  }
  return removed;
}

int wm_timers_each(const wm_timers *q,
                   int (*fn)(void *ud, int64_t t, const wm_timer_entry *e, size_t n), void *ud) {
  for (size_t h = 0; h < q->nheap; h++) {
    const group *gr = &q->groups[q->heap[h]];
    int rc = fn(ud, gr->t, gr->items, gr->n);
    if (rc) return rc;
  }
  return 0;
}
