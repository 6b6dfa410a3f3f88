/* The window operator's merging (session) windows. */
#include "ops/wm_winop_int.h"

#include <stdlib.h>

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
