/* The window operator: what a record does to a window. */
#include "ops/wm_winop_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_observe.h"

static int add_record(wm_op *op, winop *s, wentry *e, const wm_value *rec, int64_t ts) {
  if (s->list) {
    wext *x = XO(e);
    if (wm_wo_items_reserve(op, s, e) != WM_OK) return WM_ERR;
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
  if (s->inl_ok && e->aux.type == WM_NIL && wm_wo_inline_first(op, s, (uint32_t)(e - s->e), rec))
    return WM_OK;
  return s->cfg.fn.add(s->cfg.fn.ud, op, &CO(e)->acc, &e->aux, rec);
}

/* ---- the operator ------------------------------------------------------------------- */

WO_STEP int on_element(wm_op *op, winop *s, uint32_t i, const wm_value *rec, int64_t ts) {
  const wm_value *v;
  wm_value *aux = &s->e[i].aux;
  if (s->sum_field && aux->type == WM_INT && (v = wm_field_peek(s->sum_field, rec)) &&
      v->type == WM_INT) {
    aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)v->u.i); /* as builtin_add: wraps */
  } else if (add_record(op, s, &s->e[i], rec, ts) != WM_OK) {
    return WM_ERR;
  }
  if (s->fast) { /* EventTimeTrigger.onElement: a late firing, or wait for the timer */
    if (max_ts_of(s->e[i].w) <= op->wm) return wm_wo_emit_window(op, s, i);
    return WM_OK;
  }
  wm_trigger_ctx c;
  wm_wo_tctx_init(op, s, i, &c);
  return wm_wo_act(op, s, i, s->trig->vt->on_element(s->trig, &c, rec, ts));
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
WO_STEP int window_add(wm_op *op, winop *s, const wm_value *key, wm_window w, uint32_t i,
                             int created, const wm_value *rec, int64_t ts) {
  wm_observe_window(op, key, ts, w, created);
  if (created) {
    int64_t mts = max_ts_of(w);
    if (s->fast && mts > op->wm) {
      s->e[i].fire = 1;
      if (wm_wo_push_event(op, s, i, mts) != WM_OK) return WM_ERR;
    }
    if (wm_wo_push_cleanup(op, s, i) != WM_OK) return WM_ERR;
  }
  if (s->by_chan) {
    if (created || entry_empty(s, &s->e[i])) {
      s->fch[i] = (uint8_t)s->chan;
    } else if (s->chan < s->fch[i]) { /* an earlier part of the input: its record is first */
      s->fch[i] = (uint8_t)s->chan;
      if (first_replace(op, s, i, rec, ts) != WM_OK) return WM_ERR;
      if (max_ts_of(w) <= op->wm) return wm_wo_emit_window(op, s, i); /* as on_element: a late firing */
      return WM_OK;
    }
  }
  return on_element(op, s, i, rec, ts);
}

WO_STEP int add_to_window(wm_op *op, winop *s, const kprobe *kp, const wm_value *key,
                                uint64_t h, wm_window w, const wm_value *rec, int64_t ts) {
  uint32_t i = 0;
  int created = 0;
  if (entry_get(op, s, kp, h, w, &i, &created) != WM_OK) return WM_ERR;
  return window_add(op, s, key, w, i, created, rec, ts);
}

/* ---- the steps of a record -------------------------------------------------------------
 *
 * What a record does to a window is written once, as the steps below, which wm_wo_record
 * (the general path) calls in this order: the timestamp's range (ts_ok), the key
 * (key_peek, else the key selector), its probe and hash (kprobe_of, key_hash_of), then per
 * assigner the window (tumble_late; pane_value and pane_window; the assigner), and the
 * window's state (add_to_window: entry_get, then window_add: timers, first records by
 * channel, on_element; pane_add). The fast paths, tumble_hit and pane_hit, call the same
 * steps in the same order for the records they take, and only skip the dispatch between
 * them: whatever a step would refuse (a timestamp out of range, a key that is no short
 * string, a late window, a value that does not fit panes) they leave, untouched, to the
 * general path (return 1). The differential test (spec/c/test_winop_diff.c) runs random
 * streams both ways and compares every output and every snapshot. */

/* Whether ts is one the windows can hold (event time; else any). */
WO_STEP bool ts_ok(const winop *s, int64_t ts) {
  return !(s->event_time && (ts < s->ts_lo || ts > s->ts_hi));
}

/* The key of a key_by of one field, read inline: the field's value when it holds a string
 * or an integer (what fieldkeys_fn would give, and a valid key; borrowed from rec), else
 * NULL: the key selector decides. */
WO_STEP const wm_value *key_peek(const winop *s, const wm_value *rec) {
  const wm_value *kf;
  if (!s->key1 || !(kf = wm_field_peek(s->key1, rec)) ||
      !(kf->type == WM_STR || kf->type == WM_INT || kf->type == WM_CSTR))
    return NULL;
  return kf;
}

/* A key the fast paths take: a plain string of up to 8 bytes (all in the entry's hot part). */
WO_STEP bool key_short(const wm_value *key) {
  return key->type == WM_STR && !key->flags && key->u.s->len <= 8;
}

/* Tumbling windows: makes s->tw the window of at_ts, and whether it is late (event time:
 * cleaned up already). Consecutive records usually share a window: the assigner runs only
 * when the record leaves the last one (exact: every ts in [start, stop) has this window,
 * unless it was cut at MIN or MAX, which is never cached). */
WO_STEP bool tumble_late(wm_op *op, winop *s, int64_t at_ts) {
  if (!s->tw_ok || at_ts < s->tw.start || at_ts >= s->tw.stop) {
    wm_assigner_assign(&s->cfg.assigner, at_ts, &s->tw);
    s->tw_ok = s->tw.start != WM_TIME_MIN && s->tw.stop != WM_TIME_MAX &&
               s->tw.stop - s->tw.start == s->cfg.assigner.size;
    s->tw_clean = cleanup_of(s, s->tw);
  }
  return s->event_time && s->tw_clean <= op->wm;
}

/* Panes: the integer a record adds to its pane (its field's, or 1 for count()); NULL when
 * it has none (the state then goes back to one entry per window). got: room for it. */
WO_STEP const wm_value *pane_value(wm_op *op, winop *s, const wm_value *rec,
                                         wm_value *got) {
  const wm_value *v = got;
  *got = wm_int(1); /* count() */
  if (s->pane_field) {
    v = wm_field_peek(s->pane_field, rec);
    /* not a row of the schema seen last: the general read (resolves the field) */
    /* a failure is not this path's (no message): the general path reports it */
    if (!v && wm_field_get(&op->ctx->host, s->pane_field, rec, got, NULL) == 0)
      v = got;
  }
  return v && v->type == WM_INT ? v : NULL;
}

/* Panes: makes s->pc the pane of ts and s->wins its s->pn windows (every ts of a pane has
 * the same); false, changing nothing, when they do not fit panes (a window cut at the ends
 * of time). */
WO_STEP bool pane_window(winop *s, int64_t ts) {
  if (s->pc_ok && ts >= s->pc.start && ts < s->pc.stop) return true;
  size_t n = wm_assigner_assign(&s->cfg.assigner, ts, s->wins);
  int64_t ps = WM_TIME_MIN;
  int fits = n > 0;
  for (size_t k = 0; k < n; k++) {
    fits = fits && s->wins[k].stop - s->wins[k].start == s->cfg.assigner.size;
    if (s->wins[k].start > ps) ps = s->wins[k].start;
  }
  if (!fits) return false;
  s->pc = (wm_window){ps, ps + s->cfg.assigner.slide};
  s->pn = n;
  s->pc_clean = cleanup_of(s, (wm_window){ps, ps + s->cfg.assigner.size});
  s->pc_ok = true;
  return true;
}

/* A new pane p may start windows of this key: their markers and timers, in order (and,
 * observed, the windows the record is in). Out of line: rare, and the hit keeps a small
 * frame. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int pane_open(wm_op *op, winop *s, const kprobe *kp, const wm_value *key,
                     uint64_t khash, int64_t ts, int created) {
  int64_t W = op->wm;
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
      if (wm_wo_push_event(op, s, i, mts) != WM_OK) return WM_ERR;
    }
    if (wm_wo_push_cleanup(op, s, i) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

/* Panes: adds a record of value v to its pane s->pc (not late), creating the pane, and the
 * markers and timers of the windows it starts, on first use. */
WO_STEP int pane_add(wm_op *op, winop *s, const kprobe *kp, const wm_value *key,
                           uint64_t khash, const wm_value *v, const wm_value *rec, int64_t ts) {
  wm_window pw = s->pc;
  uint32_t p;
  int created;
  if (entry_get(op, s, kp, entry_hash(s, khash, pw), pw, &p, &created) != WM_OK) return WM_ERR;
  if (created) s->npane++;
  if ((created || WM_OBS_UNLIKELY(op->ctx->observe != NULL)) &&
      pane_open(op, s, kp, key, khash, ts, created) != WM_OK)
    return WM_ERR;
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

/* A record of a sliding window in pane mode: WM_OK, WM_ERR, or 1 when the record does not
 * fit panes and the state went back to one entry per window (the caller then adds it as
 * without panes). *any: some window took it. */
static int pane_record(wm_op *op, winop *s, const kprobe *kp, const wm_value *key,
                       uint64_t khash, const wm_value *rec, int64_t ts, int *any) {
  wm_value got;
  const wm_value *v = pane_value(op, s, rec, &got);
  if (!v || !pane_window(s, ts)) return wm_wo_unpane(op, s) == WM_OK ? 1 : WM_ERR;
  if (s->pc_clean <= op->wm) return WM_OK; /* every window of the record is late */
  *any = 1;
  return pane_add(op, s, kp, key, khash, v, rec, ts);
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

/* ---- the fast paths --------------------------------------------------------------------
 *
 * For the common record of the two commonest shapes, the general path's steps without its
 * dispatch (the key selector, the key's checks, the assigner's kind, the late record's
 * tail). Each returns 1, having changed nothing the general path would not change the same
 * way, for a record it leaves to the general path. */

/* Tumbling event-time windows, the default trigger, a key_by of one field (s->tfast): a
 * record with a short string key, in range, of a window that is not late. */
static inline int tumble_hit(wm_op *op, winop *s, const wm_value *rec, int64_t ts) {
  const wm_value *key;
  if (!ts_ok(s, ts) || !(key = key_peek(s, rec)) || !key_short(key)) return 1;
  kprobe kp = kprobe_of(key);
  uint64_t khash = key_hash_of(&kp);
  if (tumble_late(op, s, ts)) return 1;
  return add_to_window(op, s, &kp, key, entry_hash(s, khash, s->tw), s->tw, rec, ts);
}

/* Sliding windows in pane mode keyed by one field: a record with a short string key, in
 * range, whose value fits its pane, and whose pane is not late. */
static inline int pane_hit(wm_op *op, winop *s, const wm_value *rec, int64_t ts) {
  wm_value got;
  const wm_value *key, *v;
  if (!ts_ok(s, ts) || !(key = key_peek(s, rec)) || !key_short(key)) return 1;
  kprobe kp = kprobe_of(key);
  uint64_t khash = key_hash_of(&kp);
  if (!(v = pane_value(op, s, rec, &got)) || !pane_window(s, ts) || s->pc_clean <= op->wm)
    return 1;
  return pane_add(op, s, &kp, key, khash, v, rec, ts);
}

/* ---- the general path ------------------------------------------------------------------ */

/* Out of line: the fast paths then run in a small frame of their own. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int record_general(wm_op *op, winop *s, const wm_value *rec, int64_t ts) {
  wm_ctx *ctx = op->ctx;
  if (!ts_ok(s, ts)) return bad_timestamp(op, s, rec, ts, 0);
  wm_value key;
  const wm_value *kf = key_peek(s, rec);
  if (kf) key = *kf;
  else if (s->cfg.keysel.fn(s->cfg.keysel.ud, op, rec, &key) != WM_OK) return WM_ERR;
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
    if (wm_wo_merge_add(op, s, &kp, khash, s->wins[0], &i, &skip) != WM_OK) return WM_ERR;
    if (!skip) {
      any = 1;
      wm_observe_window(op, &key, ts, s->e[i].w, 0);
      if (on_element(op, s, i, rec, ts) != WM_OK) return WM_ERR;
    }
  } else if (s->cfg.assigner.kind == WM_WA_TUMBLING) {
    if (!tumble_late(op, s, at_ts)) { /* else a late window: skip */
      any = 1;
      if (add_to_window(op, s, &kp, &key, entry_hash(s, khash, s->tw), s->tw, rec, ts) != WM_OK)
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

int wm_wo_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  winop *s = op->impl;
  s->chan = chan < 255 ? chan : 255;
  int rc = 1;
  if (s->hit_tumble) rc = tumble_hit(op, s, rec, ts);
  else if (s->hit_pane && s->panes) rc = pane_hit(op, s, rec, ts);
  if (rc != 1) {
    s->hits++;
    return rc;
  }
  return record_general(op, s, rec, ts);
}

/* ---- lookahead ---------------------------------------------------------------------------
 *
 * Hints of records coming (wm_op_vt.ahead): for an operator on tumble_hit's path whose
 * state has outgrown the caches, the index slot of each hinted (key, window) is prefetched,
 * and the entry the slot names once the slot has had time to arrive (WM_AHEAD / 2 hints
 * later). Only hints: a stale slot is never dereferenced. */

/* hot entries of 64 bytes and index slots: past about 4 MB, beyond a core's L2 (below it,
 * reading the lines ahead costs more than the misses it hides) */
#define HINT_MIN_WINDOWS 65536u

bool wm_wo_ahead_wants(wm_op *op, wm_ahead *a) {
  const winop *s = op->impl;
  if (!s->tfast || s->nlive < HINT_MIN_WINDOWS) return false;
  a->to = op;
  a->key = s->key1->name;
  a->want_ts = true;
  return true;
}

size_t wm_wo_ahead(wm_op *op, const wm_hint *h, size_t n) {
  winop *s = op->impl;
  const uint64_t *idx = s->idx;
  const wentry *e = s->e;
  size_t used = 0, mask = s->capidx - 1;
  wm_window tw = s->tw;
  bool tw_ok = s->tw_ok;
  uint32_t na = s->nahead;
  for (size_t k = 0; k < n; k++) {
    uint32_t slot = na++ % WM_AHEAD;
    uint8_t ok = 0;
    if (h[k].key && h[k].n <= 8 && tw_ok && h[k].ts >= tw.start && h[k].ts < tw.stop) {
      uint64_t hh = entry_hash(s, short_key_bits(str_pre(h[k].key, h[k].n), h[k].n, KEY_STR), tw);
      s->ring[slot] = hh;
      __builtin_prefetch(&idx[home_of(hh, mask)]);
      ok = 1;
    }
    s->ring_ok[slot] = ok;
    used += ok;
    uint32_t j = (na - 1 - WM_AHEAD / 2) % WM_AHEAD;
    if (na > WM_AHEAD / 2 && s->ring_ok[j]) {
      uint64_t hj = s->ring[j], v = idx[home_of(hj, mask)];
      uint32_t ent = slot_ent(v);
      if (ent != 0 && ent != TOMB && (v >> 32) == (hj >> 32)) __builtin_prefetch(&e[ent - 1]);
    }
  }
  s->nahead = na;
  return used;
}
