/* The window operator's merging (session) windows. */
#include "ops/wm_winop_int.h"

#include <stdlib.h>

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
/* ---- merging (session) windows ------------------------------------------------------ */

/* Adds window w of key to the key's merging set: creates it, or merges it with the windows
 * it intersects or touches (Flink's MergingWindowSet.addWindow). *out is the window the
 * record belongs to; *skip = 1 when w is new, merges nothing and is late. */
int wm_wo_merge_add(wm_op *op, winop *s, const kprobe *key, uint64_t khash, wm_window w,
                     uint32_t *out, int *skip) {
  *skip = 0;
  uint64_t h = entry_hash(s, khash, w);
  if (wm_wo_idx_reserve(op, s) != WM_OK) return WM_ERR;
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
    /* wm_wo_entry_new indexes the new entry: the key's root (which may be it) goes back after */
    if (wm_wo_entry_new(op, s, key, h, w, at, &i) != WM_OK) return WM_ERR;
    wm_wo_klink(s->x, i, prev, next, &root);
    s->idx[at] = slot_make(root + 1, h);
    *out = i;
    if (s->fast && max_ts_of(w) > W) s->e[i].fire = 1;
    return wm_wo_merged_timers(op, s, i);
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
      wm_wo_tctx_init(op, s, j, &c);
      if (s->trig->vt->clear(s->trig, &c) != WM_OK) return WM_ERR;
    }
    wentry *te = &s->e[t], *je = &s->e[j];
    if (s->list) {
      wext *tx = XO(te), *jx = XO(je);
      for (uint32_t q = 0; q < jx->nitems; q++) {
        if (wm_wo_items_reserve(op, s, te) != WM_OK) return WM_ERR;
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
    wm_wo_entry_delete(op, s, j);
  }
  s->e[t].w = cover;
  if (s->fast) {
    if (max_ts_of(cover) > W) s->e[t].fire = 1;
  } else {
    wm_trigger_ctx c;
    wm_wo_tctx_init(op, s, t, &c);
    if (s->trig->vt->on_merge(s->trig, &c) != WM_OK) return WM_ERR;
  }
  return wm_wo_merged_timers(op, s, t);
}
