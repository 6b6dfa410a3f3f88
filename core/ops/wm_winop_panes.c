/* The window operator's sliding windows kept in panes. */
#include "ops/wm_winop_int.h"

#include "graph/wm_observe.h"

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
 * ends of time) turns the state back into one entry per window (wm_wo_unpane), exactly, and the
 * operator goes on as without panes. The pane flag is part of a checkpoint. */

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
int wm_wo_pane_emit(wm_op *op, winop *s, uint32_t i) {
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
  if (s->e[first].inl) return wm_wo_inline_fire(op, s, first, max_ts_of(e->w), &aux);
  wm_fire f;
  fire_init(op, s, e, &f, &kb);
  f.acc = &s->c[first].acc;
  f.aux = &aux;
  return s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
}

/* Window marker i is cleaned up: the pane at its start is in no later window. */
void wm_wo_pane_drop(wm_op *op, winop *s, uint32_t i) {
  keybuf kb;
  kprobe k = kprobe_at(s, i, &kb);
  uint32_t p = pane_find(s, &k, key_hash_of(&k), s->e[i].w.start);
  if (p == NONE) return;
  wm_wo_entry_delete(op, s, p);
  s->npane--;
}

/* Back to one entry per window: each marker gets the contents its panes hold (what adding
 * its records one by one would have made), then the panes go. */
int wm_wo_unpane(wm_op *op, winop *s) {
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
    if (s->e[i].live && is_pane(s, &s->e[i])) wm_wo_entry_delete(op, s, i);
  s->panes = false;
  s->npane = 0;
  return WM_OK;
}
