#include "ops/wm_keyedop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_statefmt.h"
#include "time/wm_time.h"
#include "time/wm_timer.h"

typedef struct tset { /* a key's timers of one domain: a small unsorted set */
  int64_t *t;
  uint32_t n, cap;
} tset;

typedef struct kentry {
  wm_value key; /* owned */
  uint64_t hash;
  wm_value state, acc, aux; /* owned */
  tset timers[2];
} kentry;

typedef struct keyedop {
  wm_keyedop_config cfg;
  kentry *e;
  uint32_t ne, cape;
  uint32_t *idx; /* open addressing: entry index + 1; 0 = empty (entries are never deleted) */
  size_t capidx;
  wm_timers *q[2];
  uint64_t seq;
  int64_t cur;  /* the entry being processed, -1 outside callbacks */
  int first2;   /* the first channel of the second input (0: one input) */
} keyedop;

static int tset_find(const tset *s, int64_t t) {
  for (uint32_t i = 0; i < s->n; i++)
    if (s->t[i] == t) return (int)i;
  return -1;
}

static size_t idx_find(const keyedop *s, const wm_value *key, uint64_t h, int *found) {
  size_t mask = s->capidx - 1, i = h & mask;
  for (;;) {
    uint32_t v = s->idx[i];
    if (v == 0) {
      *found = 0;
      return i;
    }
    const kentry *e = &s->e[v - 1];
    if (e->hash == h && wm_key_equal(&e->key, key)) {
      *found = 1;
      return i;
    }
    i = (i + 1) & mask;
  }
}

static int idx_grow(keyedop *s) {
  size_t cap = s->capidx * 2;
  uint32_t *n = calloc(cap, sizeof *n);
  if (!n) return -1;
  free(s->idx);
  s->idx = n;
  s->capidx = cap;
  for (uint32_t i = 0; i < s->ne; i++) {
    int found;
    n[idx_find(s, &s->e[i].key, s->e[i].hash, &found)] = i + 1;
  }
  return 0;
}

/* The entry of key, created when missing. */
static int entry_get(wm_op *op, keyedop *s, const wm_value *key, uint32_t *out) {
  uint64_t h = wm_key_hash(key);
  int found;
  size_t at = idx_find(s, key, h, &found);
  if (found) {
    *out = s->idx[at] - 1;
    return WM_OK;
  }
  if ((size_t)(s->ne + 1) * 4 >= s->capidx * 3) {
    if (idx_grow(s) != 0) return wm_ctx_error(op->ctx, "out of memory in keyed state");
    at = idx_find(s, key, h, &found);
  }
  if (s->ne == s->cape) {
    uint32_t cap = s->cape ? s->cape * 2 : 16;
    kentry *n = realloc(s->e, cap * sizeof *n);
    if (!n) return wm_ctx_error(op->ctx, "out of memory in keyed state");
    s->e = n;
    s->cape = cap;
  }
  kentry *e = &s->e[s->ne];
  memset(e, 0, sizeof *e);
  if (wm_value_copy(&op->ctx->host, &e->key, key) != 0)
    return wm_ctx_error(op->ctx, "out of memory in keyed state");
  e->hash = h;
  s->idx[at] = s->ne + 1;
  *out = s->ne++;
  return WM_OK;
}

int wm_keyedop_register(wm_op *op, int domain, int64_t t) {
  keyedop *s = op->impl;
  if (s->cur < 0)
    return wm_ctx_error(op->ctx, "operator '%s': timers can only be set while a record or a "
                                 "timer is processed", op->name);
  if (domain == WM_TIME_EVENT && t == WM_TIME_MIN) /* Flink's NO_TIMESTAMP: no event time */
    return wm_ctx_error(op->ctx, "record has no timestamp (math.mininteger); did you forget "
                                 "assign_timestamps_and_watermarks? (an event-time timer at "
                                 "math.mininteger)");
  tset *ts = &s->e[s->cur].timers[domain];
  if (tset_find(ts, t) >= 0) return WM_OK; /* same key and time: one timer */
  if (ts->n == ts->cap) {
    uint32_t cap = ts->cap ? ts->cap * 2 : 2;
    int64_t *n = realloc(ts->t, cap * sizeof *n);
    if (!n) return wm_ctx_error(op->ctx, "out of memory registering a timer");
    ts->t = n;
    ts->cap = cap;
  }
  if (wm_timers_push(s->q[domain], t, (uint64_t)s->cur, s->seq++) != 0)
    return wm_ctx_error(op->ctx, "out of memory registering a timer");
  ts->t[ts->n++] = t;
  if (domain == WM_TIME_PROCESSING) return wm_ctx_register_processing_timer(op->ctx, op, t);
  return WM_OK;
}

int wm_keyedop_delete(wm_op *op, int domain, int64_t t) {
  keyedop *s = op->impl;
  if (s->cur < 0)
    return wm_ctx_error(op->ctx, "operator '%s': timers can only be deleted while a record "
                                 "or a timer is processed", op->name);
  tset *ts = &s->e[s->cur].timers[domain];
  int i = tset_find(ts, t);
  if (i >= 0) ts->t[i] = ts->t[--ts->n]; /* the queue entry is skipped when it comes due */
  return WM_OK;
}

size_t wm_keyedop_keys(const wm_op *op) { return ((const keyedop *)op->impl)->ne; }

size_t wm_keyedop_timers(const wm_op *op, int domain) {
  const keyedop *s = op->impl;
  size_t n = 0;
  for (uint32_t i = 0; i < s->ne; i++) n += s->e[i].timers[domain].n;
  return n;
}

void wm_keyedop_set_second_input(wm_op *op, int first2) { ((keyedop *)op->impl)->first2 = first2; }

static int keyed_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  keyedop *s = op->impl;
  wm_ctx *ctx = op->ctx;
  wm_value key;
  int second = s->first2 > 0 && chan >= s->first2;
  if (second && !s->cfg.keysel2.fn) { /* a broadcast input: no key, no state, no timers */
    wm_value nokey = wm_nil(), nostate = wm_nil();
    int64_t saved = s->cur;
    s->cur = -1;
    int rc = s->cfg.fn.element2(s->cfg.fn.ud, op, &nokey, &nostate, rec, ts);
    s->cur = saved;
    return rc;
  }
  const wm_keysel *ks = second ? &s->cfg.keysel2 : &s->cfg.keysel;
  if (ks->fn(ks->ud, op, rec, &key) != WM_OK) return WM_ERR;
  if (!wm_key_valid(&key)) {
    wm_buf b;
    wm_buf_init(&b);
    wm_format_value(&b, rec, 0, ctx->host.format, ctx->host.ud);
    wm_ctx_error(ctx, "key is %s (a key must be a string, number or boolean) for record %s",
                 key.type == WM_NIL ? "nil" : "not a scalar", b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  uint32_t i = 0;
  if (entry_get(op, s, &key, &i) != WM_OK) return WM_ERR;
  int64_t saved = s->cur;
  s->cur = i;
  int rc;
  if (s->cfg.rolling.add) {
    /* the entry may not move while the functions run: they add no keys */
    kentry *e = &s->e[i];
    rc = s->cfg.rolling.add(s->cfg.rolling.ud, op, &e->acc, &e->aux, rec);
    if (rc == WM_OK) {
      wm_fire f;
      memset(&f, 0, sizeof f);
      f.key = &e->key;
      f.window.start = WM_TIME_MIN;
      f.window.stop = WM_TIME_MAX;
      f.max_ts = ts;
      f.watermark = op->wm;
      f.acc = &e->acc;
      f.aux = &e->aux;
      rc = s->cfg.rolling.fire(s->cfg.rolling.ud, op, &f);
    }
  } else {
    rc = (second ? s->cfg.fn.element2 : s->cfg.fn.element)(s->cfg.fn.ud, op, &s->e[i].key,
                                                          &s->e[i].state, rec, ts);
  }
  s->cur = saved;
  return rc;
}

/* Fires the timers of one domain that are due at `upto`. */
static int fire_due(wm_op *op, keyedop *s, int domain, int64_t upto) {
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (wm_timers_pop(s->q[domain], upto, &t, &ents, &n)) {
    for (size_t k = 0; k < n; k++) {
      uint32_t i = (uint32_t)ents[k].payload;
      tset *ts = &s->e[i].timers[domain];
      int at = tset_find(ts, t);
      if (at < 0) continue; /* deleted, or a duplicate of a timer re-registered */
      ts->t[at] = ts->t[--ts->n];
      int64_t saved = s->cur;
      s->cur = i;
      int rc = s->cfg.fn.timer(s->cfg.fn.ud, op, &s->e[i].key, &s->e[i].state, t, domain);
      s->cur = saved;
      if (rc != WM_OK) return rc;
    }
  }
  return WM_OK;
}

static int keyed_watermark(wm_op *op, int64_t W) {
  keyedop *s = op->impl;
  if (s->cfg.fn.timer && fire_due(op, s, WM_TIME_EVENT, W) != WM_OK) return WM_ERR;
  return wm_op_emit_watermark(op, W);
}

static int keyed_processing_time(wm_op *op, int64_t t) {
  keyedop *s = op->impl;
  if (!s->cfg.fn.timer) return WM_OK;
  return fire_due(op, s, WM_TIME_PROCESSING, t);
}

/* Releases every key's state and timers (s->ne stays). */
static void release_entries(wm_op *op, keyedop *s) {
  const wm_host *h = &op->ctx->host;
  for (uint32_t i = 0; i < s->ne; i++) {
    wm_value_release(h, &s->e[i].key);
    wm_value_release(h, &s->e[i].state);
    wm_value_release(h, &s->e[i].acc);
    wm_value_release(h, &s->e[i].aux);
    free(s->e[i].timers[0].t);
    free(s->e[i].timers[1].t);
  }
}

static void keyed_free(wm_op *op) {
  keyedop *s = op->impl;
  if (!s) return;
  release_entries(op, s);
  free(s->e);
  free(s->idx);
  wm_timers_free(s->q[0]);
  wm_timers_free(s->q[1]);
  if (s->cfg.keysel.free) s->cfg.keysel.free(s->cfg.keysel.ud);
  if (s->cfg.keysel2.free) s->cfg.keysel2.free(s->cfg.keysel2.ud);
  if (s->cfg.fn.free) s->cfg.fn.free(s->cfg.fn.ud);
  if (s->cfg.rolling.free) s->cfg.rolling.free(s->cfg.rolling.ud);
  free(s);
}

/* ---- checkpoints ------------------------------------------------------------------
 * version, 'K', the mode (0 process, 1 rolling, 2 rolling followed by the length and text
 * of what its accumulator means: "sum(vc)"; 1 is written when the meaning is not known, and
 * was by every wmrun before it was kept), the registration sequence, the keys in
 * creation order (each: key, state, accumulator, aux, then per domain its timers), whether
 * the function's own state follows (and the value), then the event-time and the
 * processing-time queues (time/wm_timer.h order, payload = the key's place). */

/* What a rolling aggregation's accumulator means; "" when unknown (not checked). */
static void rolling_meaning(const keyedop *s, char *out, size_t n) {
  wm_winfn_meaning(s->cfg.meaning, &s->cfg.rolling, out, n);
}

static int keyed_snapshot(wm_op *op, wm_state_io *io) {
  keyedop *s = op->impl;
  wm_state_put_header(io, 'K');
  char m[256] = "";
  if (s->cfg.rolling.add) rolling_meaning(s, m, sizeof m);
  wm_state_put_u(io, s->cfg.rolling.add == NULL ? 0 : m[0] ? 2 : 1);
  if (m[0]) {
    wm_state_put_u(io, strlen(m));
    wm_buf_adds(io->out, m);
  }
  wm_state_put_u(io, s->seq);
  wm_state_put_u(io, s->ne);
  for (uint32_t i = 0; i < s->ne; i++) {
    const kentry *e = &s->e[i];
    if (wm_state_put_value(op, io, &e->key, "a key") != WM_OK ||
        wm_state_put_value(op, io, &e->state, "a key's state") != WM_OK ||
        wm_state_put_value(op, io, &e->acc, "a rolling aggregate") != WM_OK ||
        wm_state_put_value(op, io, &e->aux, "a rolling aggregate") != WM_OK)
      return WM_ERR;
    for (int d = 0; d < 2; d++) {
      wm_state_put_u(io, e->timers[d].n);
      for (uint32_t k = 0; k < e->timers[d].n; k++) wm_state_put_i(io, e->timers[d].t[k]);
    }
  }
  wm_state_put_u(io, s->cfg.fn.snapshot != NULL);
  if (s->cfg.fn.snapshot) {
    wm_value v = wm_nil();
    if (s->cfg.fn.snapshot(s->cfg.fn.ud, op, &v) != WM_OK) return WM_ERR;
    int rc = wm_state_put_value(op, io, &v, "the process function's state");
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) return rc;
  }
  wm_state_put_timers(io, s->q[0]);
  wm_state_put_timers(io, s->q[1]);
  return wm_state_put_done(op, io);
}

static int keyed_timer_valid(void *ud, wm_state_rd *r, int64_t t, uint64_t payload) {
  (void)t;
  const keyedop *s = ud;
  if (payload >= s->ne) return wm_state_bad(r, "a timer names key %llu of %u",
                                            (unsigned long long)payload, s->ne);
  return WM_OK;
}

static int keyed_restore_body(wm_op *op, keyedop *s, wm_state_rd *r) {
  const wm_host *h = &op->ctx->host;
  uint64_t mode, seq, ne, n, has;
  if (wm_state_get_header(r, 'K', "a keyed process operator") != WM_OK ||
      wm_state_get_u(r, &mode, "the mode") != WM_OK)
    return WM_ERR;
  if (mode > 2) return wm_state_bad(r, "the mode is %llu", (unsigned long long)mode);
  if ((mode != 0) != (s->cfg.rolling.add != NULL))
    return wm_ctx_error(op->ctx, "the checkpoint holds a %s where this job has a %s (the job "
                                 "changed since the checkpoint?)",
                        mode ? "rolling aggregation" : "process function",
                        s->cfg.rolling.add ? "rolling aggregation" : "process function");
  if (mode == 2) { /* what the accumulators mean: the same, unless a change is allowed */
    uint64_t wl;
    if (wm_state_get_count(r, &wl, 1, "the rolling aggregation's meaning") != WM_OK) return WM_ERR;
    const char *was = (const char *)r->p;
    r->p += wl;
    char now[256];
    rolling_meaning(s, now, sizeof now);
    if (now[0] && (wl != strlen(now) || memcmp(was, now, wl) != 0)) {
      if (!op->ctx->allow_state_change)
        return wm_ctx_error(op->ctx,
                            "the rolling aggregation changed since the checkpoint: its state "
                            "was made by\n    %.*s\n  and this job's is\n    %s\n  every key "
                            "would go on from the other one's accumulator (to go on with that "
                            "state anyway, run with --allow-state-change)",
                            (int)(wl < 300 ? wl : 300), was, now);
      op->ctx->state_changes++;
    }
  }
  if (wm_state_get_u(r, &seq, "the timer sequence") != WM_OK ||
      wm_state_get_count(r, &ne, 6, "the number of keys") != WM_OK)
    return WM_ERR;
  for (uint64_t i = 0; i < ne; i++) {
    wm_value key;
    if (wm_state_get_value(r, &key, "a key") != WM_OK) return WM_ERR;
    if (!wm_key_valid(&key)) {
      wm_value_release(h, &key);
      return wm_state_bad(r, "a key that is not a scalar");
    }
    uint32_t at;
    uint32_t before = s->ne;
    int rc = entry_get(op, s, &key, &at);
    wm_value_release(h, &key);
    if (rc != WM_OK) return WM_ERR;
    if (s->ne == before) return wm_state_bad(r, "a key appears twice");
    kentry *e = &s->e[at];
    if (wm_state_get_value(r, &e->state, "a key's state") != WM_OK ||
        wm_state_get_value(r, &e->acc, "a rolling aggregate") != WM_OK ||
        wm_state_get_value(r, &e->aux, "a rolling aggregate") != WM_OK)
      return WM_ERR;
    for (int d = 0; d < 2; d++) {
      tset *ts = &e->timers[d];
      if (wm_state_get_count(r, &n, 1, "the number of a key's timers") != WM_OK) return WM_ERR;
      if (n && !(ts->t = malloc(n * sizeof *ts->t)))
        return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
      ts->cap = (uint32_t)n;
      for (uint64_t k = 0; k < n; k++) {
        if (wm_state_get_i(r, &ts->t[k], "a key's timer") != WM_OK) return WM_ERR;
        ts->n++;
      }
    }
  }
  if (wm_state_get_u(r, &has, "the function's state flag") != WM_OK) return WM_ERR;
  if (has > 1 || (has && !s->cfg.fn.restore))
    return has > 1 ? wm_state_bad(r, "the function's state flag is %llu", (unsigned long long)has)
                   : wm_ctx_error(op->ctx, "the checkpoint holds state of the process function "
                                           "itself, and this job's function has no restore "
                                           "method to take it");
  if (has) {
    wm_value v;
    if (wm_state_get_value(r, &v, "the process function's state") != WM_OK) return WM_ERR;
    int rc = s->cfg.fn.restore(s->cfg.fn.ud, op, &v);
    wm_value_release(h, &v);
    if (rc != WM_OK) return WM_ERR;
  }
  if (wm_state_get_timers(r, s->q[0], keyed_timer_valid, s) != WM_OK ||
      wm_state_get_timers(r, s->q[1], keyed_timer_valid, s) != WM_OK ||
      wm_state_get_end(r) != WM_OK)
    return WM_ERR;
  s->seq = seq;
  if (wm_state_rearm(op, s->q[1]) != WM_OK) return WM_ERR;
  return WM_OK;
}

static int keyed_restore(wm_op *op, wm_state_io *io) {
  keyedop *s = op->impl;
  if (s->ne || wm_timers_size(s->q[0]) || wm_timers_size(s->q[1]))
    return wm_ctx_error(op->ctx, "a checkpoint is restored only into a new operator");
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  if (keyed_restore_body(op, s, &r) == WM_OK) return WM_OK;
  /* back to the empty operator it was built as: no half-restored state stays */
  release_entries(op, s);
  s->ne = 0;
  memset(s->idx, 0, s->capidx * sizeof *s->idx);
  wm_timers *q0 = wm_timers_new(), *q1 = wm_timers_new();
  if (q0 && q1) {
    wm_timers_free(s->q[0]);
    wm_timers_free(s->q[1]);
    s->q[0] = q0;
    s->q[1] = q1;
  } else {
    wm_timers_free(q0);
    wm_timers_free(q1);
  }
  return WM_ERR;
}

static const wm_op_vt keyed_vt = {
    .kind = "keyed process",
    .record = keyed_record,
    .watermark = keyed_watermark,
    .processing_time = keyed_processing_time,
    .free = keyed_free,
    .snapshot = keyed_snapshot,
    .restore = keyed_restore,
};

bool wm_op_is_keyedop(const wm_op *op) { return op->vt == &keyed_vt; }

wm_op *wm_keyedop_new(wm_ctx *ctx, const char *name, wm_keyedop_config *cfg) {
  keyedop *s = calloc(1, sizeof *s);
  wm_op *op = NULL;
  if (s) {
    s->cfg = *cfg;
    s->cur = -1;
    s->capidx = 16;
    s->idx = calloc(s->capidx, sizeof *s->idx);
    s->q[0] = wm_timers_new();
    s->q[1] = wm_timers_new();
    if (s->idx && s->q[0] && s->q[1]) op = wm_op_new(ctx, &keyed_vt, s, name);
  }
  if (!op) {
    if (s) {
      free(s->idx);
      wm_timers_free(s->q[0]);
      wm_timers_free(s->q[1]);
      free(s);
    }
    if (cfg->keysel.free) cfg->keysel.free(cfg->keysel.ud);
    if (cfg->keysel2.free) cfg->keysel2.free(cfg->keysel2.ud);
    if (cfg->fn.free) cfg->fn.free(cfg->fn.ud);
    if (cfg->rolling.free) cfg->rolling.free(cfg->rolling.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  return op;
}
