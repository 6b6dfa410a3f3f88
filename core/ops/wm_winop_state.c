/* The window operator's keyed window state: the slab of entries and its index. */
#include "ops/wm_winop_int.h"

#include <stdlib.h>
#include <string.h>

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
 * Merging windows keep tombstones: wm_wo_merge_add deletes entries while it holds a slot. */
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

int wm_wo_idx_reserve(wm_op *op, winop *s) {
  if ((s->usedidx + 1) * 4 < s->capidx * 3) return WM_OK;
  size_t cap = s->capidx;
  if ((size_t)s->nlive * 2 >= cap / 2) cap *= 2;
  if (idx_rebuild(s, cap) != 0) return wm_ctx_error(op->ctx, "out of memory in window state");
  return WM_OK;
}

/* Room for cap hot entries, 64-byte aligned (a lookup's fields then sit in one line of the
 * entry, not across two), the ne in use kept. Grown with realloc (see idx_rebuild): the
 * block's alignment may change, and then the entries move to the aligned place. */
int wm_wo_hot_grow(winop *s, uint32_t cap) {
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
    if (wm_wo_hot_grow(s, cap) != 0) return -1;
    s->cape = cap;
  }
  memset(&s->e[s->ne], 0, sizeof s->e[s->ne]);
  memset(&s->c[s->ne], 0, sizeof s->c[s->ne]);
  if (s->x) memset(&s->x[s->ne], 0, sizeof s->x[s->ne]);
  *out = s->ne++;
  return 0;
}

/* Releases the window's contents (a purge): the window itself stays. */
void wm_wo_entry_purge(wm_op *op, winop *s, wentry *e) {
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
void wm_wo_entry_delete(wm_op *op, winop *s, uint32_t i) {
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
      wm_wo_kunlink(s->x, i, &root);
      s->idx[at] = root != NONE ? slot_make(root + 1, e->hash) : TOMB;
    }
  } else if (found) {
    idx_remove(s, at);
  }
  wm_wo_entry_purge(op, s, e);
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
/* A new entry for (key, w), indexed at slot `at` of the index (found by idx_find). */
int wm_wo_entry_new(wm_op *op, winop *s, const kprobe *k, uint64_t h, wm_window w, size_t at,
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

/* ---- a key's sessions ----------------------------------------------------------------
 *
 * The windows of one key of a merging operator never intersect (wm_wo_merge_add merges those
 * that do), so their order by start is their order by stop too. They form a treap: a
 * binary search tree by start whose nodes are heap-ordered by a priority drawn from their
 * slot number (kpri: a fixed function, so the shape follows from the windows alone), with
 * the root in the index, threaded in order by knext and kprev. Finding where a record's
 * window goes is a descent of expected O(log n) for n open sessions of the key, linking
 * and unlinking an entry O(log n) expected: a key with 40 000 open sessions costs a record
 * about what a key with one does (issue 34: the sorted chain this replaced was walked from
 * the key's earliest window on every record, and on every deletion). */

static uint32_t kpri(uint32_t i) {
  return (uint32_t)(wm_mix64((uint64_t)i + WM_HASH_GOLDEN) >> 32);
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
void wm_wo_klink(wext *x, uint32_t i, uint32_t prev, uint32_t next, uint32_t *root) {
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
void wm_wo_kunlink(wext *x, uint32_t i, uint32_t *root) {
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

/* Room for one more record in a list-mode window (and its timestamp, with an evictor). */
int wm_wo_items_reserve(wm_op *op, winop *s, wentry *e) {
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

/* Deletes every live entry and frees the slab's arrays (the index stays), leaving an empty
 * slab: for freeing the operator and for a failed restore. */
void wm_wo_slab_clear(wm_op *op, winop *s) {
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) wm_wo_entry_delete(op, s, i);
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
}
