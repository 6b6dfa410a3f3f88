#include "ops/wm_ijoin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_statefmt.h"
#include "ops/wm_keyidx.h"
#include "time/wm_time.h"
#include "time/wm_timer.h"

/* A kept record: 32 bytes here, plus what its value holds (a Lua table's slot, a row). */
typedef struct jrec {
  int64_t ts;
  wm_value v;      /* owned */
  uint8_t matched; /* it met a record of the other side (for an outer join) */
} jrec;

/* A side's records of one key, r[lo..hi) sorted by (ts, arrival); cleanup removes from
 * the front, so lo moves up and the array is compacted when it must grow. */
typedef struct jbuf {
  jrec *r;
  uint32_t lo, hi, cap;
} jbuf;

typedef struct jkey {
  wm_value key; /* owned; nil in a free slot */
  uint64_t hash;
  jbuf b[2];
  uint32_t next_free; /* free slots: the next free slot + 1 (0: none) */
  uint8_t live;
} jkey;

typedef struct ijoin {
  wm_ijoin_config cfg;
  char *tag[2];
  int port[2];        /* the late ports (0: none) */
  int64_t lo, hi;     /* the bounds with exclusivity applied: inclusive */
  jkey *k;            /* key slots; a cleanup timer's payload is slot * 2 + side */
  uint32_t nk, capk;  /* slots used (live or free), allocated */
  uint32_t free_head; /* first free slot + 1 (0: none) */
  uint32_t nlive;
  wm_keyidx ix;       /* key -> slot */
  wm_timers *q;       /* cleanup timers, event time */
  uint64_t seq;       /* the order of timers of one time: registration order */
  int first2;         /* the first channel of the right input */
  const wm_field *key1[2]; /* key_by of one field per side: read inline (wm_keysel_field1) */
  /* the type of each side's first key (0: none yet; key_class) and the key as print shows
   * it: two sides whose keys differ in type would never meet (an error, as in Flink) */
  int kclass[2];
  char kfirst[2][80];
  uint64_t late[2];   /* late records per side */
  size_t nbuf[2];     /* records buffered per side */
  int64_t wm_out;     /* the last watermark passed on when held back (wm_delay > 0) */
} ijoin;

static int64_t sat_add(int64_t a, int64_t b) {
  if (b > 0 && a > WM_TIME_MAX - b) return WM_TIME_MAX;
  if (b < 0 && a < WM_TIME_MIN - b) return WM_TIME_MIN;
  return a + b;
}

/* When a kept record of `side` with timestamp ts goes (Flink's cleanup timer). */
static int64_t cleanup_at(const ijoin *s, int side, int64_t ts) {
  if (side == 0) return s->hi > 0 ? sat_add(ts, s->hi) : ts;
  return s->lo < 0 ? sat_add(ts, -s->lo) : ts;
}

/* ---- keys ---------------------------------------------------------------------------- */

static const wm_value *slot_key(void *ud, uint32_t i, uint64_t *hash) {
  const jkey *e = &((const ijoin *)ud)->k[i];
  *hash = e->hash;
  return &e->key;
}

/* The slot of key, created when missing. */
static int key_slot(wm_op *op, ijoin *s, const wm_value *key, uint32_t *out) {
  uint64_t h = wm_key_hash(key);
  uint32_t found = wm_keyidx_find(&s->ix, key, h);
  if (found != WM_KEYIDX_NONE) {
    *out = found;
    return WM_OK;
  }
  uint32_t slot = 0;
  if (s->free_head) {
    slot = s->free_head - 1;
    s->free_head = s->k[slot].next_free;
  } else {
    if (s->nk == s->capk) {
      uint32_t cap = s->capk ? s->capk * 2 : 16;
      jkey *n = realloc(s->k, cap * sizeof *n);
      if (!n) return wm_ctx_error(op->ctx, "out of memory in the interval join");
      s->k = n;
      s->capk = cap;
    }
    slot = s->nk++;
  }
  jkey *e = &s->k[slot];
  memset(e, 0, sizeof *e);
  e->hash = h;
  if (wm_value_copy(&op->ctx->host, &e->key, key) != 0 || wm_keyidx_add(&s->ix, slot) != 0) {
    wm_value_release(&op->ctx->host, &e->key);
    e->next_free = s->free_head;
    s->free_head = slot + 1;
    return wm_ctx_error(op->ctx, "out of memory in the interval join");
  }
  e->live = 1;
  s->nlive++;
  *out = slot;
  return WM_OK;
}

/* Frees the slot of a key whose buffers are both empty. */
static void key_drop(wm_op *op, ijoin *s, uint32_t slot) {
  jkey *e = &s->k[slot];
  wm_keyidx_remove(&s->ix, slot);
  wm_value_release(&op->ctx->host, &e->key);
  free(e->b[0].r);
  free(e->b[1].r);
  memset(e, 0, sizeof *e);
  e->next_free = s->free_head;
  s->free_head = slot + 1;
  s->nlive--;
}

/* ---- buffers ------------------------------------------------------------------------- */

/* The first place in b whose ts is > t (upper) or >= t (!upper). */
static uint32_t jbuf_bound(const jbuf *b, int64_t t, int upper) {
  uint32_t lo = b->lo, hi = b->hi;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (upper ? b->r[mid].ts <= t : b->r[mid].ts < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Inserts an owned value after every record of b with ts <= t; its place in *at. */
static int jbuf_insert(jbuf *b, int64_t t, wm_value v, uint32_t *at) {
  uint32_t pos = jbuf_bound(b, t, 1);
  if (b->hi == b->cap) {
    if (b->lo > 0) { /* room at the front: compact */
      memmove(b->r, b->r + b->lo, (b->hi - b->lo) * sizeof *b->r);
      pos -= b->lo;
      b->hi -= b->lo;
      b->lo = 0;
    } else {
      uint32_t cap = b->cap ? b->cap * 2 : 4;
      jrec *n = realloc(b->r, cap * sizeof *n);
      if (!n) return -1;
      b->r = n;
      b->cap = cap;
    }
  }
  memmove(b->r + pos + 1, b->r + pos, (b->hi - pos) * sizeof *b->r);
  b->r[pos].ts = t;
  b->r[pos].v = v;
  b->r[pos].matched = 0;
  b->hi++;
  *at = pos;
  return 0;
}

/* ---- records ------------------------------------------------------------------------- */

static int no_timestamp(wm_op *op, int side, const wm_value *rec) {
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  wm_ctx_error(op->ctx, "record has no timestamp (math.mininteger); did you forget "
                        "assign_timestamps_and_watermarks? (the interval join's %s input, "
                        "record %s)", side ? "right" : "left", b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

/* What kind of value a key is: 1 a number, 2 a string, 3 a composite key, 4 a boolean. */
static int key_class(const wm_value *k) {
  if (k->type == WM_INT || k->type == WM_FLOAT) return 1;
  if (k->type == WM_BOOL) return 4;
  return (k->flags & WM_VF_COMPOSITE) ? 3 : 2;
}

/* The first key of a side: its type must be the other side's first key's. */
static int first_key(wm_op *op, ijoin *s, int side, const wm_value *key, const wm_value *rec) {
  static const char *const names[] = {"", "numbers", "strings", "composite keys (of several fields)",
                                      "booleans"};
  s->kclass[side] = key_class(key);
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, key, &b);
  const char *q = s->kclass[side] == 2 ? "\"" : "";
  snprintf(s->kfirst[side], sizeof s->kfirst[side], "%s%.60s%s", q, b.data ? b.data : "", q);
  wm_buf_free(&b);
  int o = !side;
  if (!s->kclass[o] || s->kclass[o] == s->kclass[side]) return WM_OK;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  wm_ctx_error(op->ctx, "the keys of the interval join's two inputs have different types: the "
                        "left input's are %s (first %s), the right input's %s (first %s); keys "
                        "of different types never meet (key both inputs to one type, e.g. with "
                        "tonumber or tostring in the key function), at record %s",
               names[s->kclass[0]], s->kfirst[0], names[s->kclass[1]], s->kfirst[1],
               b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

static int ij_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  ijoin *s = op->impl;
  int side = s->first2 > 0 && chan >= s->first2;
  wm_value key;
  const wm_value *kf = s->key1[side] ? wm_field_peek(s->key1[side], rec) : NULL;
  if (kf && (kf->type == WM_STR || kf->type == WM_INT || kf->type == WM_CSTR))
    key = *kf; /* what the field's selector would give, and a valid key */
  else if (wm_keysel_key(side ? &s->cfg.keysel2 : &s->cfg.keysel, op, rec, &key) != WM_OK)
    return WM_ERR;
  if (!s->kclass[side] && first_key(op, s, side, &key, rec) != WM_OK) return WM_ERR;
  if (ts == WM_TIME_MIN) return no_timestamp(op, side, rec);
  if (op->wm != WM_TIME_MIN && ts < op->wm) { /* late: joins nothing, is not kept */
    s->late[side]++;
    if (s->port[side] > 0) {
      op->m.late_side++;
      return wm_op_emit(op, s->port[side], rec, ts);
    }
    op->m.late_dropped++;
    return WM_OK;
  }
  uint32_t slot = 0, at = 0;
  if (key_slot(op, s, &key, &slot) != WM_OK) return WM_ERR;
  jkey *e = &s->k[slot];
  jbuf *mine = &e->b[side];
  wm_value v = wm_nil();
  if (wm_value_copy(&op->ctx->host, &v, rec) != 0 || jbuf_insert(mine, ts, v, &at) != 0) {
    if (v.type != WM_NIL) wm_value_release(&op->ctx->host, &v);
    if (mine->hi == mine->lo && e->b[!side].hi == e->b[!side].lo) key_drop(op, s, slot);
    return wm_ctx_error(op->ctx, "out of memory in the interval join");
  }
  s->nbuf[side]++;
  /* one timer per (key, side, cleanup time): a neighbour with the same cleanup time has
   * registered it (cleanup_at is monotonic in ts, so such records are adjacent) */
  int64_t t = cleanup_at(s, side, ts);
  int has = (at > mine->lo && cleanup_at(s, side, mine->r[at - 1].ts) == t) ||
            (at + 1 < mine->hi && cleanup_at(s, side, mine->r[at + 1].ts) == t);
  if (!has && wm_timers_push(s->q, t, (uint64_t)slot * 2 + (uint64_t)side, s->seq++) != 0)
    return wm_ctx_error(op->ctx, "out of memory registering a timer");
  /* the other side's records in the bounds, ascending (ts, arrival) */
  const jbuf *other = &e->b[!side];
  int64_t from = side ? sat_add(ts, -s->hi) : sat_add(ts, s->lo);
  int64_t to = side ? sat_add(ts, -s->lo) : sat_add(ts, s->hi);
  if (s->lo > s->hi) return WM_OK; /* exclusive bounds of lower == upper: nothing meets */
  uint32_t i = jbuf_bound(other, from, 0);
  if (i < other->hi && other->r[i].ts <= to) mine->r[at].matched = 1;
  for (; i < other->hi && other->r[i].ts <= to; i++) {
    jrec *o = &e->b[!side].r[i];
    o->matched = 1;
    int rc = side ? s->cfg.fn.join(s->cfg.fn.ud, op, &e->key, &o->v, o->ts, rec, ts)
                  : s->cfg.fn.join(s->cfg.fn.ud, op, &e->key, rec, ts, &o->v, o->ts);
    if (rc != WM_OK) return rc;
    /* (the function may not touch the join's state: e and other stay valid) */
  }
  return WM_OK;
}

/* A cleanup timer: the side's records whose cleanup time is t go (an outer side's that met
 * nothing to the join function first, padded). */
static int cleanup(wm_op *op, ijoin *s, int64_t t, uint64_t payload) {
  uint32_t slot = (uint32_t)(payload / 2);
  int side = (int)(payload % 2);
  if (slot >= s->nk || !s->k[slot].live) return WM_OK; /* (never: a key with a timer has records) */
  jkey *e = &s->k[slot];
  jbuf *b = &e->b[side];
  uint32_t a = b->lo;
  while (a < b->hi && cleanup_at(s, side, b->r[a].ts) < t) a++;
  uint32_t z = a;
  while (z < b->hi && cleanup_at(s, side, b->r[z].ts) == t) z++;
  if (s->cfg.outer[side])
    for (uint32_t i = a; i < z; i++) {
      const jrec *r = &e->b[side].r[i];
      if (r->matched) continue;
      int rc = side ? s->cfg.fn.join(s->cfg.fn.ud, op, &e->key, NULL, WM_TIME_MIN, &r->v, r->ts)
                    : s->cfg.fn.join(s->cfg.fn.ud, op, &e->key, &r->v, r->ts, NULL, WM_TIME_MIN);
      if (rc != WM_OK) return rc;
    }
  for (uint32_t i = a; i < z; i++) wm_value_release(&op->ctx->host, &b->r[i].v);
  s->nbuf[side] -= z - a;
  if (a == b->lo) {
    b->lo = z;
  } else if (z > a) {
    memmove(b->r + a, b->r + z, (b->hi - z) * sizeof *b->r);
    b->hi -= z - a;
  }
  if (b->lo == b->hi) {
    free(b->r);
    memset(b, 0, sizeof *b);
    if (e->b[!side].lo == e->b[!side].hi) key_drop(op, s, slot);
  }
  return WM_OK;
}

static int ij_watermark(wm_op *op, int64_t W) {
  ijoin *s = op->impl;
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (wm_timers_pop(s->q, W, &t, &ents, &n))
    for (size_t i = 0; i < n; i++)
      if (cleanup(op, s, t, ents[i].payload) != WM_OK) return WM_ERR;
  if (W == WM_TIME_MIN || W == WM_TIME_MAX || s->cfg.wm_delay <= 0) return wm_op_emit_watermark(op, W);
  int64_t out = sat_add(W, -s->cfg.wm_delay);
  if (out <= s->wm_out) return WM_OK; /* (held back: nothing new to pass on yet) */
  s->wm_out = out;
  return wm_op_emit_watermark(op, out);
}

static void release_keys(wm_op *op, ijoin *s) {
  for (uint32_t i = 0; i < s->nk; i++) {
    jkey *e = &s->k[i];
    if (!e->live) continue;
    for (int d = 0; d < 2; d++) {
      for (uint32_t j = e->b[d].lo; j < e->b[d].hi; j++)
        wm_value_release(&op->ctx->host, &e->b[d].r[j].v);
      free(e->b[d].r);
    }
    wm_value_release(&op->ctx->host, &e->key);
  }
}

static void ij_free(wm_op *op) {
  ijoin *s = op->impl;
  if (!s) return;
  release_keys(op, s);
  free(s->k);
  wm_keyidx_free(&s->ix);
  wm_timers_free(s->q);
  free(s->tag[0]);
  free(s->tag[1]);
  if (s->cfg.keysel.free) s->cfg.keysel.free(s->cfg.keysel.ud);
  if (s->cfg.keysel2.free) s->cfg.keysel2.free(s->cfg.keysel2.ud);
  if (s->cfg.fn.free) s->cfg.fn.free(s->cfg.fn.ud);
  free(s);
}

/* ---- checkpoints ------------------------------------------------------------------------
 * version, 'J', the bounds in effect (lower, upper: inclusive), the timer sequence, the
 * late counts (left, right), the number of key slots, then per slot whether it is live and,
 * if so, its key and per side (left, right) the count of its records and each record's
 * timestamp and value (and, for an outer join, whether it met one) in (ts, arrival) order; then the cleanup timers (time/wm_timer.h
 * order, payload = slot * 2 + side). A restore gives each key read a slot of its own and
 * rewrites the timers' slots (a rescale reads the parts of several old instances, each
 * key of the new instance's key groups from the part that held it). */

static int ij_snapshot(wm_op *op, wm_state_io *io) {
  ijoin *s = op->impl;
  wm_state_put_header(io, 'J');
  wm_state_put_i(io, s->lo);
  wm_state_put_i(io, s->hi);
  wm_state_put_u(io, s->seq);
  wm_state_put_u(io, s->late[0]);
  wm_state_put_u(io, s->late[1]);
  wm_state_put_u(io, s->nk);
  for (uint32_t i = 0; i < s->nk; i++) {
    const jkey *e = &s->k[i];
    wm_state_put_u(io, e->live);
    if (!e->live) continue;
    if (wm_state_put_value(op, io, &e->key, "a key") != WM_OK) return WM_ERR;
    for (int d = 0; d < 2; d++) {
      wm_state_put_u(io, e->b[d].hi - e->b[d].lo);
      for (uint32_t j = e->b[d].lo; j < e->b[d].hi; j++) {
        wm_state_put_i(io, e->b[d].r[j].ts);
        if (wm_state_put_value(op, io, &e->b[d].r[j].v, d ? "a right record" : "a left record") !=
            WM_OK)
          return WM_ERR;
        if (s->cfg.outer[0] || s->cfg.outer[1]) wm_state_put_u(io, e->b[d].r[j].matched);
      }
    }
  }
  wm_state_put_timers(io, s->q);
  return wm_state_put_done(op, io);
}

/* Where each key slot of the part being read went (IJ_LEFT: it was read past, a key of
 * another instance's key group); what the cleanup timers' payloads are rewritten by. */
#define IJ_LEFT UINT32_MAX
typedef struct ijplaces {
  const ijoin *s;
  const uint32_t *place;
  uint64_t n;
} ijplaces;

static int ij_timer_map(void *ud, wm_state_rd *r, int64_t t, uint64_t *payload) {
  const ijplaces *kp = ud;
  const ijoin *s = kp->s;
  uint64_t slot = *payload / 2;
  int side = (int)(*payload % 2);
  if (slot >= kp->n)
    return wm_state_bad(r, "a cleanup timer names key slot %llu, which holds no key",
                        (unsigned long long)slot);
  uint32_t at = kp->place[slot];
  if (at == IJ_LEFT) return 1;
  if (at == IJ_LEFT - 1)
    return wm_state_bad(r, "a cleanup timer names key slot %llu, which holds no key",
                        (unsigned long long)slot);
  const jbuf *b = &s->k[at].b[side];
  for (uint32_t j = b->lo; j < b->hi; j++)
    if (cleanup_at(s, side, b->r[j].ts) == t) {
      *payload = (uint64_t)at * 2 + (uint64_t)side;
      return WM_OK;
    }
  return wm_state_bad(r, "a cleanup timer at %lld for no record", (long long)t);
}

/* Reads past a live key's records (a key of another instance's key group). */
static int ij_skip_key(ijoin *s, wm_state_rd *r) {
  const wm_host *h = &r->op->ctx->host;
  for (int d = 0; d < 2; d++) {
    uint64_t n, m;
    int64_t ts;
    if (wm_state_get_count(r, &n, 2, "the number of a key's records") != WM_OK) return WM_ERR;
    for (uint64_t j = 0; j < n; j++) {
      wm_value v;
      if (wm_state_get_i(r, &ts, "a record's timestamp") != WM_OK ||
          wm_state_get_value(r, &v, "a kept record") != WM_OK)
        return WM_ERR;
      wm_value_release(h, &v);
      if ((s->cfg.outer[0] || s->cfg.outer[1]) &&
          wm_state_get_u(r, &m, "whether a kept record met one") != WM_OK)
        return WM_ERR;
    }
  }
  return WM_OK;
}

/* One part. Each live key of the kept key groups (every key outside a rescale) takes a
 * slot of its own here (key_slot), so that the parts of several old instances can be read
 * one after the other (io->merge); the timers are rewritten to the new slots. */
static int ij_restore_body(wm_op *op, ijoin *s, wm_state_rd *r, uint32_t **placep) {
  const wm_host *h = &op->ctx->host;
  int64_t lo, hi;
  uint64_t seq, late0, late1, nk;
  if (wm_state_get_header(r, 'J', "an interval join") != WM_OK ||
      wm_state_get_i(r, &lo, "the lower bound") != WM_OK ||
      wm_state_get_i(r, &hi, "the upper bound") != WM_OK ||
      wm_state_get_u(r, &seq, "the timer sequence") != WM_OK ||
      wm_state_get_u(r, &late0, "the late count") != WM_OK ||
      wm_state_get_u(r, &late1, "the late count") != WM_OK ||
      wm_state_get_count(r, &nk, 1, "the number of key slots") != WM_OK)
    return WM_ERR;
  if ((lo != s->lo || hi != s->hi) && !op->ctx->allow_state_change)
    return wm_ctx_error(op->ctx, "the interval join's bounds changed since the checkpoint: its "
                                 "state was kept for [%lld, %lld] and this job's are [%lld, %lld] "
                                 "(inclusive; to go on with that state anyway, run with "
                                 "--allow-state-change)",
                        (long long)lo, (long long)hi, (long long)s->lo, (long long)s->hi);
  if ((lo != s->lo || hi != s->hi) && !r->io->merge) op->ctx->state_changes++;
  if (nk > UINT32_MAX / 2) return wm_state_bad(r, "%llu key slots", (unsigned long long)nk);
  uint32_t *place = malloc((size_t)(nk ? nk : 1) * sizeof *place);
  if (!place) return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  *placep = place;
  for (uint64_t i = 0; i < nk; i++) {
    uint64_t live;
    place[i] = IJ_LEFT - 1; /* (a free slot: no timer may name it) */
    if (wm_state_get_u(r, &live, "a key slot's flag") != WM_OK) return WM_ERR;
    if (live > 1) return wm_state_bad(r, "a key slot's flag is %llu", (unsigned long long)live);
    if (!live) continue;
    wm_value key;
    if (wm_state_get_value(r, &key, "a key") != WM_OK) return WM_ERR;
    if (!wm_key_valid(&key)) {
      wm_value_release(h, &key);
      return wm_state_bad(r, "a key that is not a scalar");
    }
    if (!wm_state_key_kept(r->io, &key)) { /* another instance's key group */
      wm_value_release(h, &key);
      place[i] = IJ_LEFT;
      if (ij_skip_key(s, r) != WM_OK) return WM_ERR;
      continue;
    }
    uint32_t before = s->nlive, at;
    int rc = key_slot(op, s, &key, &at);
    wm_value_release(h, &key);
    if (rc != WM_OK) return WM_ERR;
    if (s->nlive == before) return wm_state_bad(r, "a key appears twice");
    place[i] = at;
    jkey *e = &s->k[at];
    for (int d = 0; d < 2; d++) {
      uint64_t n;
      jbuf *b = &e->b[d];
      if (wm_state_get_count(r, &n, 2, "the number of a key's records") != WM_OK) return WM_ERR;
      if (n > UINT32_MAX / 2) return wm_state_bad(r, "%llu records", (unsigned long long)n);
      if (n && !(b->r = malloc(n * sizeof *b->r)))
        return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
      b->cap = (uint32_t)n;
      for (uint64_t j = 0; j < n; j++) {
        int64_t ts;
        if (wm_state_get_i(r, &ts, "a record's timestamp") != WM_OK) return WM_ERR;
        if (j > 0 && ts < b->r[b->hi - 1].ts)
          return wm_state_bad(r, "a key's records out of timestamp order");
        if (wm_state_get_value(r, &b->r[b->hi].v, "a kept record") != WM_OK) return WM_ERR;
        uint64_t m = 0;
        b->r[b->hi].matched = 0;
        if ((s->cfg.outer[0] || s->cfg.outer[1]) &&
            wm_state_get_u(r, &m, "whether a kept record met one") != WM_OK) {
          wm_value_release(h, &b->r[b->hi].v);
          return WM_ERR;
        }
        if (m > 1) {
          wm_value_release(h, &b->r[b->hi].v);
          return wm_state_bad(r, "a kept record's flag is %llu", (unsigned long long)m);
        }
        b->r[b->hi].matched = (uint8_t)m;
        b->r[b->hi++].ts = ts;
        s->nbuf[d]++;
      }
    }
    if (e->b[0].hi == 0 && e->b[1].hi == 0) return wm_state_bad(r, "a key without records");
  }
  ijplaces kp = {s, place, nk};
  if (wm_state_get_timers_map(r, s->q, ij_timer_map, &kp) != WM_OK ||
      wm_state_get_end(r) != WM_OK)
    return WM_ERR;
  if (seq > s->seq) s->seq = seq;
  /* the late counts are the instance's metrics: kept by a restore of the same instance,
   * started anew (as the graph's metrics are) when the key groups are divided anew */
  if (!r->io->groups) {
    s->late[0] = late0;
    s->late[1] = late1;
  }
  return WM_OK;
}

static int ij_restore(wm_op *op, wm_state_io *io) {
  ijoin *s = op->impl;
  if (!io->merge && (s->nk || wm_timers_size(s->q)))
    return wm_ctx_error(op->ctx, "a checkpoint is restored only into a new operator");
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint32_t *place = NULL;
  int rc = ij_restore_body(op, s, &r, &place);
  free(place);
  if (rc == WM_OK) return WM_OK;
  /* back to the empty operator it was built as */
  release_keys(op, s);
  free(s->k);
  s->k = NULL;
  s->nk = s->capk = s->free_head = s->nlive = 0;
  s->nbuf[0] = s->nbuf[1] = 0;
  wm_keyidx_clear(&s->ix);
  wm_timers *q = wm_timers_new();
  if (q) {
    wm_timers_free(s->q);
    s->q = q;
  }
  return WM_ERR;
}

static const wm_op_vt ijoin_vt = {
    .kind = "interval join",
    .record = ij_record,
    .watermark = ij_watermark,
    .free = ij_free,
    .snapshot = ij_snapshot,
    .restore = ij_restore,
    .keyed_state = 1,
};

bool wm_op_is_ijoin(const wm_op *op) { return op->vt == &ijoin_vt; }

void wm_ijoin_set_second_input(wm_op *op, int first2) { ((ijoin *)op->impl)->first2 = first2; }

size_t wm_ijoin_keys(const wm_op *op) { return ((const ijoin *)op->impl)->nlive; }
size_t wm_ijoin_buffered(const wm_op *op, int side) {
  return ((const ijoin *)op->impl)->nbuf[side != 0];
}
uint64_t wm_ijoin_late(const wm_op *op, int side) { return ((const ijoin *)op->impl)->late[side != 0]; }
size_t wm_ijoin_timers(const wm_op *op) { return wm_timers_size(((const ijoin *)op->impl)->q); }

static char *dup_str(const char *t) {
  size_t n = strlen(t) + 1;
  char *c = malloc(n);
  if (c) memcpy(c, t, n);
  return c;
}

wm_op *wm_ijoin_new(wm_ctx *ctx, const char *name, wm_ijoin_config *cfg) {
  ijoin *s = calloc(1, sizeof *s);
  wm_op *op = NULL;
  int ok = s != NULL;
  if (s) {
    s->cfg = *cfg;
    s->cfg.late_tag[0] = s->cfg.late_tag[1] = NULL;
    s->wm_out = WM_TIME_MIN;
    /* Flink moves an exclusive bound inwards by 1 ms and then needs no more checks */
    s->lo = cfg->lower_exclusive ? sat_add(cfg->lower, 1) : cfg->lower;
    s->hi = cfg->upper_exclusive ? sat_add(cfg->upper, -1) : cfg->upper;
    s->key1[0] = wm_keysel_field1(&s->cfg.keysel);
    s->key1[1] = wm_keysel_field1(&s->cfg.keysel2);
    s->q = wm_timers_new();
    ok = wm_keyidx_init(&s->ix, slot_key, s) == 0 && s->q;
    for (int d = 0; d < 2 && ok; d++)
      if (cfg->late_tag[d] && !(s->tag[d] = dup_str(cfg->late_tag[d]))) ok = 0;
    if (ok) op = wm_op_new(ctx, &ijoin_vt, s, name);
    for (int d = 0; op && d < 2; d++)
      if (s->tag[d] && (s->port[d] = wm_op_port(op, s->tag[d])) < 0) {
        wm_ctx_error(ctx, "out of memory creating '%s'", name);
        return NULL; /* the context frees op (and s with it) */
      }
  }
  if (!op) {
    if (s) {
      wm_keyidx_free(&s->ix);
      wm_timers_free(s->q);
      free(s->tag[0]);
      free(s->tag[1]);
      free(s);
    }
    if (cfg->keysel.free) cfg->keysel.free(cfg->keysel.ud);
    if (cfg->keysel2.free) cfg->keysel2.free(cfg->keysel2.ud);
    if (cfg->fn.free) cfg->fn.free(cfg->fn.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  return op;
}
