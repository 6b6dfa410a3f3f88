/* The window operator's checkpoint format. */
#include "ops/wm_winop_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_statefmt.h"

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
    if (wm_wo_unpack_first(op, s, i, &row) != WM_OK) return WM_ERR;
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

int wm_wo_snapshot(wm_op *op, wm_state_io *io) {
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
  /* as wm_wo_entry_new: a key of up to 8 bytes is not kept when the hot part is enough */
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
        wm_wo_klink(s->x, i, t, NONE, &root);
        s->idx[at] = slot_make(root + 1, e->hash);
      }
    }
  }
  free(order);
  return rc;
}

/* The slots of the part being restored: at base.. here; left[k]: slot k's key is another
 * instance's (restoring at another parallelism), NULL: every key stays. */
typedef struct slotmap {
  const winop *s;
  uint32_t base, n;
  uint8_t *left;
} slotmap;

/* A timer names (slot, generation) of the part: moved by base, or left out with its key. */
static int winop_timer_map(void *ud, wm_state_rd *r, int64_t t, uint64_t *payload) {
  (void)t;
  const slotmap *m = ud;
  uint32_t k = (uint32_t)*payload;
  if (k >= m->n || (*payload >> 32) > 0x7fffffffu)
    return wm_state_bad(r, "a timer names window %u of %u", k, m->n);
  if (m->left && m->left[k]) return 1;
  *payload += m->base;
  return WM_OK;
}

/* Room for cap slots (the restored ones and those before them), the new ones zeroed. */
static int grow_slots(winop *s, uint32_t cap) {
  if (cap <= s->cape) return 0;
  uint32_t old = s->cape;
  wcold *c = realloc(s->c, cap * sizeof *c);
  if (!c) return -1;
  s->c = c;
  memset(c + old, 0, (cap - old) * sizeof *c);
  if (s->need_ext) {
    wext *x = realloc(s->x, cap * sizeof *x);
    if (!x) return -1;
    s->x = x;
    memset(x + old, 0, (cap - old) * sizeof *x);
  }
  if (s->by_chan) {
    uint8_t *f = realloc(s->fch, cap);
    if (!f) return -1;
    s->fch = f;
    memset(f + old, 0, cap - old);
  }
  if (wm_wo_hot_grow(s, cap) != 0) return -1;
  memset(s->e + old, 0, (cap - old) * sizeof *s->e);
  s->cape = cap;
  return 0;
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
    int rc = r->io->merge ? WM_OK : t->restore(t->ud, op, &v); /* not keyed: the first's */
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) return WM_ERR;
  }
  if (wm_state_get_count(r, &n, 1, "the number of window slots") != WM_OK) return WM_ERR;
  /* with merge, this part's slots go after those of the parts restored before */
  uint32_t sbase = r->io->merge ? s->ne : 0;
  if (n >= NONE / 2 - sbase) return wm_state_bad(r, "%llu window slots", (unsigned long long)n);
  if (n && grow_slots(s, sbase + (uint32_t)n) != 0)
    return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  uint64_t prev_seq = 0, max_seq = 0;
  slotmap sm = {s, sbase, (uint32_t)n, NULL};
  if (r->io->groups && n && !(sm.left = calloc((size_t)n, 1)))
    return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = sbase + k;
    uint64_t g;
    if (wm_state_get_u(r, &g, "a window slot") != WM_OK) goto bad;
    if ((g >> 1) > 0x7fffffffu) {
      wm_state_bad(r, "a window slot's generation is too big");
      goto bad;
    }
    s->ne = i + 1;
    s->e[i].gen = (uint32_t)(g >> 1);
    if (s->x) s->x[i].wake_t = WM_TIME_MIN;
    if (!(g & 1)) continue;
    s->e[i].live = 1; /* from here on wm_wo_free releases what the entry holds */
    s->nlive++;
    if (get_entry(r, s, i, &prev_seq) != WM_OK) goto bad;
    if (s->e[i].seq >= max_seq) max_seq = s->e[i].seq + 1;
    keybuf kb;
    if (sm.left && !wm_state_key_kept(r->io, key_of(s, i, &kb))) {
      wm_wo_entry_delete(op, s, i); /* another instance's key group (not indexed yet) */
      sm.left[k] = 1;
    }
  }
  if (index_entries(r, s) != WM_OK) goto bad;
  s->free_head = NONE;
  for (uint32_t i = s->ne; i-- > 0;) {
    if (s->e[i].live) continue;
    s->e[i].kpre = s->free_head;
    s->free_head = i;
  }
  if (wm_state_get_timers_map(r, s->timers, winop_timer_map, &sm) != WM_OK ||
      wm_state_get_timers_map(r, s->ptimers, winop_timer_map, &sm) != WM_OK ||
      wm_state_get_end(r) != WM_OK)
    goto bad;
  free(sm.left);
  if (r->io->merge) { /* the flags of the first part; the latest trigger pass */
    if (u[1] > s->epoch) s->epoch = (uint32_t)u[1];
    u[1] = s->epoch;
    u[0] = (u[0] & ~1u) | (uint64_t)s->pt_flushing;
    u[2] = s->compact_at[0];
    u[3] = s->compact_at[1];
  }
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
bad:
  free(sm.left);
  return WM_ERR;
}

/* Back to the empty state the operator was built with. */
static int reset_state(wm_op *op, winop *s) {
  wm_wo_slab_clear(op, s);
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

int wm_wo_restore(wm_op *op, wm_state_io *io) {
  winop *s = op->impl;
  if (!io->merge && (s->ne || wm_timers_size(s->timers) || wm_timers_size(s->ptimers)))
    return wm_ctx_error(op->ctx, "a checkpoint is restored only into a new operator");
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  if (restore_body(&r, s) == WM_OK) return WM_OK;
  /* the index may be half built: wm_wo_entry_delete must not find stale slots in it */
  memset(s->idx, 0, s->capidx * sizeof *s->idx);
  reset_state(op, s);
  return WM_ERR;
}
