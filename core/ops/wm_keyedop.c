#include "ops/wm_keyedop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_observe.h"
#include "graph/wm_statefmt.h"
#include "ops/wm_keyidx.h"
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
  int64_t last;  /* state TTL: the state's last access (see wm_keyedop.h); rolling mode
                  * with a mini-batch: the timestamp of the key's last record in the batch */
  uint32_t gen;  /* bumped when the key goes: timers of the place carry it */
  uint8_t live;  /* the place holds a key (0: on the free list) */
  uint8_t dirty; /* mini-batch: the key is in the batch (keyedop.dirty) */
} kentry;

typedef struct keyedop {
  wm_keyedop_config cfg;
  kentry *e;
  uint32_t ne, cape; /* places used (live or free), allocated */
  uint32_t nlive;
  uint32_t *freel; /* places of removed keys, reused first */
  uint32_t nfree, capfree;
  wm_keyidx ix; /* key -> place (the core's table with deletion, ops/wm_keyidx.h) */
  wm_timers *q[2];
  uint64_t seq;
  int64_t cur;  /* the entry being processed, -1 outside callbacks */
  int first2;   /* the first channel of the second input (0: one input) */
  int used;     /* state TTL: the current callback read (1) or wrote (2) the state */
  uint32_t sweep; /* state TTL: the next place the cleanup pass examines */
  uint64_t expired;
  char ktype[2]; /* keyed connected streams: the kind of key each input gave first */
  uint32_t *dirty; /* mini-batch: the places of the keys in the batch, in order of arrival */
  uint32_t ndirty, capdirty;
  uint32_t batched;   /* records in the batch */
  int64_t batch_wall; /* wall-clock time the batch last ended (or the first on_period) */
} keyedop;

static int tset_find(const tset *s, int64_t t) {
  for (uint32_t i = 0; i < s->n; i++)
    if (s->t[i] == t) return (int)i;
  return -1;
}

static const wm_value *place_key(void *ud, uint32_t i, uint64_t *hash) {
  const kentry *e = &((const keyedop *)ud)->e[i];
  *hash = e->hash;
  return &e->key;
}

/* The entry of key, created when missing. */
static int entry_get(wm_op *op, keyedop *s, const wm_value *key, uint32_t *out) {
  uint64_t h = wm_key_hash(key);
  uint32_t i = wm_keyidx_find(&s->ix, key, h);
  if (i != WM_KEYIDX_NONE) {
    *out = i;
    return WM_OK;
  }
  if (s->nfree) {
    i = s->freel[s->nfree - 1];
  } else {
    if (s->ne == s->cape) {
      uint32_t cap = s->cape ? s->cape * 2 : 16;
      kentry *n = realloc(s->e, cap * sizeof *n);
      if (!n) return wm_ctx_error(op->ctx, "out of memory in keyed state");
      s->e = n;
      s->cape = cap;
    }
    i = s->ne;
    s->e[i].gen = 0;
  }
  kentry *e = &s->e[i];
  uint32_t gen = e->gen;
  memset(e, 0, sizeof *e);
  e->gen = gen;
  e->last = WM_TIME_MIN;
  if (wm_value_copy(&op->ctx->host, &e->key, key) != 0)
    return wm_ctx_error(op->ctx, "out of memory in keyed state");
  e->hash = h;
  if (wm_keyidx_add(&s->ix, i) != 0) {
    wm_value_release(&op->ctx->host, &e->key);
    return wm_ctx_error(op->ctx, "out of memory in keyed state");
  }
  e->live = 1;
  if (s->nfree) s->nfree--;
  else s->ne++;
  s->nlive++;
  *out = i;
  return WM_OK;
}

static void entry_release(const wm_host *h, kentry *e) {
  wm_value_release(h, &e->key);
  wm_value_release(h, &e->state);
  wm_value_release(h, &e->acc);
  wm_value_release(h, &e->aux);
  free(e->timers[0].t);
  free(e->timers[1].t);
  e->timers[0].t = e->timers[1].t = NULL;
  e->timers[0].n = e->timers[1].n = e->timers[0].cap = e->timers[1].cap = 0;
}

/* Removes entry i (not the one being processed): memory freed, the place reused. */
static void entry_remove(wm_op *op, keyedop *s, uint32_t i) {
  kentry *e = &s->e[i];
  wm_keyidx_remove(&s->ix, i);
  entry_release(&op->ctx->host, e);
  e->live = 0;
  e->gen++; /* queue entries of the key that was here never fire for the next one */
  if (s->nfree == s->capfree) { /* cannot fail in a way that loses the key: it is gone */
    uint32_t cap = s->capfree ? s->capfree * 2 : 16;
    uint32_t *n = realloc(s->freel, cap * sizeof *n);
    if (!n) { /* the place stays unused until a restore: memory is still freed */
      s->nlive--;
      return;
    }
    s->freel = n;
    s->capfree = cap;
  }
  s->freel[s->nfree++] = i;
  s->nlive--;
}

/* A process function's key that holds nothing (no state, no timers) goes. */
static void entry_settle(wm_op *op, keyedop *s, uint32_t i) {
  const kentry *e = &s->e[i];
  if (!s->cfg.rolling.add && e->live && e->state.type == WM_NIL && e->timers[0].n == 0 &&
      e->timers[1].n == 0)
    entry_remove(op, s, i);
}

/* ---- state TTL ------------------------------------------------------------------------ */

static int64_t ttl_clock(wm_op *op, const keyedop *s) {
  return s->cfg.ttl.time == WM_TIME_EVENT ? op->wm : wm_ctx_now(op->ctx);
}

static int ttl_expired(const keyedop *s, const kentry *e, int64_t clock) {
  return e->state.type != WM_NIL && wm_time_add_sat(e->last, s->cfg.ttl.ttl) <= clock;
}

/* Drops entry i's state when it has expired (before a call, and in the cleanup pass). */
static void ttl_check(wm_op *op, keyedop *s, uint32_t i, int64_t clock) {
  kentry *e = &s->e[i];
  if (!ttl_expired(s, e, clock)) return;
  wm_value_release(&op->ctx->host, &e->state);
  s->expired++;
}

/* After a call at access time `at` whose state was `before`: the access counts (a write,
 * a replaced state, or a read with on_read_and_write). */
static void ttl_note(keyedop *s, kentry *e, const wm_value *before, int64_t at) {
  int wrote = (s->used & 2) || before->type != e->state.type ||
              memcmp(&before->u, &e->state.u, sizeof before->u) != 0;
  if (wrote || ((s->used & 1) && s->cfg.ttl.update == WM_TTL_ON_READ_AND_WRITE))
    if (e->last == WM_TIME_MIN || at > e->last || s->cfg.ttl.time == WM_TIME_PROCESSING)
      e->last = at;
}

/* The incremental cleanup: examines up to n places after the last one examined. */
static void ttl_cleanup(wm_op *op, keyedop *s, uint32_t n) {
  if (!s->cfg.ttl.ttl || s->cur >= 0 || s->ne == 0) return;
  int64_t clock = ttl_clock(op, s);
  if (n > s->ne) n = s->ne;
  for (uint32_t k = 0; k < n; k++) {
    if (s->sweep >= s->ne) s->sweep = 0;
    uint32_t i = s->sweep++;
    if (!s->e[i].live) continue;
    ttl_check(op, s, i, clock);
    entry_settle(op, s, i);
  }
}

/* The payload of a timer of entry i: its place and generation. */
static uint64_t timer_payload(const keyedop *s, uint32_t i) {
  return (uint64_t)s->e[i].gen << 32 | i;
}

void wm_keyedop_state_used(wm_op *op, int write) {
  keyedop *s = op->impl;
  if (s->cur >= 0) s->used |= write ? 2 : 1;
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
  if (wm_timers_push(s->q[domain], t, timer_payload(s, (uint32_t)s->cur), s->seq++) != 0)
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

size_t wm_keyedop_keys(const wm_op *op) { return ((const keyedop *)op->impl)->nlive; }

uint64_t wm_keyedop_expired(const wm_op *op) { return ((const keyedop *)op->impl)->expired; }

int64_t wm_keyedop_ttl(const wm_op *op) { return ((const keyedop *)op->impl)->cfg.ttl.ttl; }

size_t wm_keyedop_timers(const wm_op *op, int domain) {
  const keyedop *s = op->impl;
  size_t n = 0;
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) n += s->e[i].timers[domain].n;
  return n;
}

void wm_keyedop_set_second_input(wm_op *op, int first2) { ((keyedop *)op->impl)->first2 = first2; }

/* A record as print shows it (json 1: a string quoted, as inside a table), for messages. */
static void record_text(wm_ctx *ctx, const wm_value *rec, wm_buf *b, int json) {
  wm_buf_init(b);
  wm_format_value(b, rec, json, ctx->host.format, ctx->host.ud);
}

static const char *key_kind_name(char k) {
  switch (k) {
  case 'n': return "a number";
  case 'b': return "a boolean";
  case 'c': return "a key of several fields";
  default: return "a string";
  }
}

/* Keyed connected streams: both inputs' keys must be of one kind to meet (Flink checks the
 * key types when the job is built; a Lua key's type shows with the first record). */
static int check_key_kind(wm_op *op, keyedop *s, int second, const wm_value *key,
                          const wm_value *rec) {
  char k = key->type == WM_INT || key->type == WM_FLOAT ? 'n'
           : key->type == WM_BOOL                       ? 'b'
           : (key->flags & WM_VF_COMPOSITE)             ? 'c'
                                                        : 's';
  if (!s->ktype[second]) s->ktype[second] = k;
  char other = s->ktype[!second];
  if (!other || other == k) return WM_OK;
  wm_buf b, kb;
  record_text(op->ctx, rec, &b, 0);
  record_text(op->ctx, key, &kb, 1);
  wm_ctx_error(op->ctx, "keyed connected streams: the %s input's key is %s (%s) for record %s, "
                        "and the %s input's keys are %s: equal keys of the two inputs must be "
                        "of one type to meet (convert one side's key, e.g. with tostring in "
                        "its key_by function)",
               second ? "second" : "first", key_kind_name(k), kb.data ? kb.data : "",
               b.data ? b.data : "", second ? "first" : "second", key_kind_name(other));
  wm_buf_free(&b);
  wm_buf_free(&kb);
  return WM_ERR;
}

/* Runs one callback for entry i with the key's state (a TTL checked before, the access
 * noted after, the key removed when it holds nothing). at: the access time of an event-time
 * TTL (the record's timestamp, the timer's time). */
typedef struct kcall {
  int kind; /* 0 element, 1 element2, 2 timer */
  const wm_value *rec;
  int64_t ts;
  int domain;
} kcall;

static int run_call(wm_op *op, keyedop *s, uint32_t i, const kcall *c) {
  int ttl = s->cfg.ttl.ttl > 0;
  int64_t at = 0;
  if (ttl) {
    int64_t clock = ttl_clock(op, s);
    ttl_check(op, s, i, clock);
    at = s->cfg.ttl.time == WM_TIME_PROCESSING ? clock
         : c->kind == 2 && c->domain == WM_TIME_PROCESSING ? op->wm
                                                           : c->ts;
  }
  wm_value before = s->e[i].state;
  int64_t saved = s->cur;
  int saved_used = s->used;
  s->cur = i;
  s->used = 0;
  kentry *e = &s->e[i]; /* the entry may not move while the functions run: they add no keys */
  int rc;
  if (c->kind == 2)
    rc = s->cfg.fn.timer(s->cfg.fn.ud, op, &e->key, &e->state, c->ts, c->domain);
  else
    rc = (c->kind == 1 ? s->cfg.fn.element2 : s->cfg.fn.element)(s->cfg.fn.ud, op, &e->key,
                                                                &e->state, c->rec, c->ts);
  if (ttl) ttl_note(s, e, &before, at);
  s->cur = saved;
  s->used = saved_used;
  if (rc == WM_OK && saved < 0) entry_settle(op, s, i);
  return rc;
}

/* ---- mini-batch (rolling mode, wm_keyedop_config.minibatch_size) ---------------------- */

static int batch_add(wm_op *op, keyedop *s, uint32_t i) {
  if (s->ndirty == s->capdirty) {
    uint32_t cap = s->capdirty ? s->capdirty * 2 : 64;
    uint32_t *n = realloc(s->dirty, cap * sizeof *n);
    if (!n) return wm_ctx_error(op->ctx, "out of memory in a mini-batch");
    s->dirty = n;
    s->capdirty = cap;
  }
  s->dirty[s->ndirty++] = i;
  s->e[i].dirty = 1;
  return WM_OK;
}

/* Ends the batch: every key in it fires once, in the order the keys came; a key whose
 * aggregation then holds nothing goes (as after a record without a batch). */
static int batch_end(wm_op *op, keyedop *s) {
  int rc = WM_OK;
  uint32_t k = 0;
  s->batched = 0;
  for (; k < s->ndirty && rc == WM_OK; k++) {
    uint32_t i = s->dirty[k];
    kentry *e = &s->e[i];
    e->dirty = 0;
    if (!e->live) continue;
    wm_fire f;
    memset(&f, 0, sizeof f);
    f.key = &e->key;
    f.window.start = WM_TIME_MIN;
    f.window.stop = WM_TIME_MAX;
    f.max_ts = e->last;
    f.watermark = op->wm;
    f.acc = &e->acc;
    f.aux = &e->aux;
    s->cur = i;
    rc = s->cfg.rolling.fire(s->cfg.rolling.ud, op, &f);
    s->cur = -1;
    if (rc == WM_OK && s->e[i].acc.type == WM_NIL && s->e[i].aux.type == WM_NIL) entry_remove(op, s, i);
  }
  for (; k < s->ndirty; k++) s->e[s->dirty[k]].dirty = 0; /* (the job fails: nothing fires) */
  s->ndirty = 0;
  return rc;
}

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
    record_text(ctx, rec, &b, 0);
    wm_ctx_error(ctx, "key is %s (a key must be a string, number or boolean) for record %s",
                 key.type == WM_NIL ? "nil" : "not a scalar", b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  if (s->first2 > 0 && check_key_kind(op, s, second, &key, rec) != WM_OK) return WM_ERR;
  if (s->cfg.ttl.ttl > 0 && s->cfg.ttl.time == WM_TIME_EVENT && ts == WM_TIME_MIN) {
    wm_buf b;
    record_text(ctx, rec, &b, 0);
    wm_ctx_error(ctx, "state_ttl with time = \"event\" measures the state's age by record "
                      "timestamps, and record %s has none (math.mininteger; did you forget "
                      "assign_timestamps_and_watermarks?)", b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  wm_observe_arrive(op, &key, ts);
  uint32_t i = 0;
  if (entry_get(op, s, &key, &i) != WM_OK) return WM_ERR;
  int rc;
  if (s->cfg.rolling.add) {
    int64_t saved = s->cur;
    s->cur = i;
    /* the entry may not move while the functions run: they add no keys */
    kentry *e = &s->e[i];
    rc = s->cfg.rolling.add(s->cfg.rolling.ud, op, &e->acc, &e->aux, rec);
    if (rc == WM_OK && s->cfg.minibatch_size) {
      s->cur = saved;
      e->last = ts;
      if (!e->dirty && batch_add(op, s, i) != WM_OK) return WM_ERR;
      return ++s->batched >= s->cfg.minibatch_size ? batch_end(op, s) : WM_OK;
    }
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
    s->cur = saved;
    /* a key whose aggregation holds nothing goes (a SQL GROUP BY's group whose rows were all
     * retracted, wm_sqlagg.h): its place is reused */
    if (rc == WM_OK && s->e[i].acc.type == WM_NIL && s->e[i].aux.type == WM_NIL) entry_remove(op, s, i);
    return rc;
  }
  kcall c = {second, rec, ts, 0};
  rc = run_call(op, s, i, &c);
  if (rc == WM_OK) ttl_cleanup(op, s, WM_KEYEDOP_CLEANUP_RECORD);
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
      if (i >= s->ne || !s->e[i].live || s->e[i].gen != (uint32_t)(ents[k].payload >> 32))
        continue; /* a key that went: its place may hold another key now */
      tset *ts = &s->e[i].timers[domain];
      int at = tset_find(ts, t);
      if (at < 0) continue; /* deleted, or a duplicate of a timer re-registered */
      ts->t[at] = ts->t[--ts->n];
      kcall c = {2, NULL, t, domain};
      wm_observe_timer(op, &s->e[i].key, t, domain);
      if (run_call(op, s, i, &c) != WM_OK) return WM_ERR;
    }
  }
  return WM_OK;
}

static int keyed_watermark(wm_op *op, int64_t W) {
  keyedop *s = op->impl;
  if (s->ndirty && batch_end(op, s) != WM_OK) return WM_ERR;
  if (s->cfg.fn.timer && fire_due(op, s, WM_TIME_EVENT, W) != WM_OK) return WM_ERR;
  ttl_cleanup(op, s, WM_KEYEDOP_CLEANUP_WATERMARK);
  return wm_op_emit_watermark(op, W);
}

static int keyed_processing_time(wm_op *op, int64_t t) {
  keyedop *s = op->impl;
  if (!s->cfg.fn.timer) return WM_OK;
  if (fire_due(op, s, WM_TIME_PROCESSING, t) != WM_OK) return WM_ERR;
  ttl_cleanup(op, s, WM_KEYEDOP_CLEANUP_WATERMARK);
  return WM_OK;
}

/* Releases every key's state and timers (s->ne stays). */
static void release_entries(wm_op *op, keyedop *s) {
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) entry_release(&op->ctx->host, &s->e[i]);
}

static int64_t keyed_period(const wm_op *op) {
  const keyedop *s = op->impl;
  return s->cfg.minibatch_size ? s->cfg.minibatch_latency : 0;
}

/* (called at the shortest period of all operators: the batch ends once its own has passed) */
static int keyed_on_period(wm_op *op, int64_t now) {
  keyedop *s = op->impl;
  if (s->batch_wall == WM_TIME_MIN) s->batch_wall = now;
  if (now - s->batch_wall < s->cfg.minibatch_latency) return WM_OK;
  s->batch_wall = now;
  return s->ndirty ? batch_end(op, s) : WM_OK;
}

static void keyed_free(wm_op *op) {
  keyedop *s = op->impl;
  if (!s) return;
  release_entries(op, s);
  free(s->dirty);
  free(s->e);
  free(s->freel);
  wm_keyidx_free(&s->ix);
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
 * was by every wmrun before it was kept; 3 a process function with a state TTL, followed by
 * its time domain), the registration sequence, the keys held in the order of their places
 * (each: key, state, accumulator, aux, then per domain its timers; with a TTL then the
 * state's last access), whether the function's own state follows (and the value), then the
 * event-time and the processing-time queues (time/wm_timer.h order, payload = the key's
 * number in this list; entries of keys that went are left out). A checkpoint of a wmrun
 * before keys were removed has the same layout (its places were the creation order). */

/* What a rolling aggregation's accumulator means; "" when unknown (not checked). */
static void rolling_meaning(const keyedop *s, char *out, size_t n) {
  wm_winfn_meaning(s->cfg.meaning, &s->cfg.rolling, out, n);
}

/* The queues in the layout of wm_state_put_timers, payloads renumbered by rank[]. */
typedef struct qput {
  const keyedop *s;
  const uint32_t *rank;
  wm_state_io *io;
  int count; /* 1: count the groups that keep an entry (in n) */
  uint64_t n;
} qput;

static int entry_wanted(const keyedop *s, uint64_t payload) {
  uint32_t i = (uint32_t)payload;
  return i < s->ne && s->e[i].live && s->e[i].gen == (uint32_t)(payload >> 32);
}

static int put_group(void *ud, int64_t t, const wm_timer_entry *e, size_t n) {
  qput *p = ud;
  size_t keep = 0;
  for (size_t k = 0; k < n; k++) keep += entry_wanted(p->s, e[k].payload);
  if (!keep) return 0;
  if (p->count) {
    p->n++;
    return 0;
  }
  wm_state_put_i(p->io, t);
  wm_state_put_u(p->io, keep);
  for (size_t k = 0; k < n; k++)
    if (entry_wanted(p->s, e[k].payload)) {
      wm_state_put_u(p->io, p->rank[(uint32_t)e[k].payload]);
      wm_state_put_u(p->io, e[k].order);
    }
  return 0;
}

static void put_queue(const keyedop *s, const uint32_t *rank, wm_state_io *io,
                      const wm_timers *q) {
  qput p = {s, rank, io, 1, 0};
  wm_timers_each(q, put_group, &p);
  wm_state_put_u(io, p.n);
  p.count = 0;
  wm_timers_each(q, put_group, &p);
}

static int keyed_snapshot(wm_op *op, wm_state_io *io) {
  keyedop *s = op->impl;
  int ttl = s->cfg.ttl.ttl > 0;
  wm_state_put_header(io, 'K');
  char m[256] = "";
  if (s->cfg.rolling.add) rolling_meaning(s, m, sizeof m);
  wm_state_put_u(io, s->cfg.rolling.add ? (m[0] ? 2 : 1) : ttl ? 3 : 0);
  if (m[0]) {
    wm_state_put_u(io, strlen(m));
    wm_buf_adds(io->out, m);
  }
  if (ttl) wm_state_put_u(io, (uint64_t)s->cfg.ttl.time);
  uint32_t *rank = malloc((s->ne ? s->ne : 1) * sizeof *rank);
  if (!rank) return wm_ctx_error(op->ctx, "out of memory writing a checkpoint");
  wm_state_put_u(io, s->seq);
  wm_state_put_u(io, s->nlive);
  uint32_t r = 0;
  for (uint32_t i = 0; i < s->ne; i++) {
    const kentry *e = &s->e[i];
    if (!e->live) continue;
    rank[i] = r++;
    if (wm_state_put_value(op, io, &e->key, "a key") != WM_OK ||
        wm_state_put_value(op, io, &e->state, "a key's state") != WM_OK ||
        wm_state_put_value(op, io, &e->acc, "a rolling aggregate") != WM_OK ||
        wm_state_put_value(op, io, &e->aux, "a rolling aggregate") != WM_OK) {
      free(rank);
      return WM_ERR;
    }
    for (int d = 0; d < 2; d++) {
      wm_state_put_u(io, e->timers[d].n);
      for (uint32_t k = 0; k < e->timers[d].n; k++) wm_state_put_i(io, e->timers[d].t[k]);
    }
    if (ttl) wm_state_put_i(io, e->last);
  }
  wm_state_put_u(io, s->cfg.fn.snapshot != NULL);
  if (s->cfg.fn.snapshot) {
    wm_value v = wm_nil();
    int rc = s->cfg.fn.snapshot(s->cfg.fn.ud, op, &v);
    if (rc == WM_OK) rc = wm_state_put_value(op, io, &v, "the process function's state");
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) {
      free(rank);
      return rc;
    }
  }
  put_queue(s, rank, io, s->q[0]);
  put_queue(s, rank, io, s->q[1]);
  free(rank);
  return wm_state_put_done(op, io);
}

/* The keys of the part being restored: where each took its place (KEY_LEFT: not here). */
#define KEY_LEFT UINT32_MAX
typedef struct kplaces {
  const keyedop *s;
  const uint32_t *place;
  uint64_t n;
} kplaces;

/* A timer of the part names its key by its number in the part: renumbered to the key's
 * place here, or left out with a key of another instance. */
static int keyed_timer_map(void *ud, wm_state_rd *r, int64_t t, uint64_t *payload) {
  (void)t;
  const kplaces *kp = ud;
  if (*payload >= kp->n) return wm_state_bad(r, "a timer names key %llu of %llu",
                                             (unsigned long long)*payload,
                                             (unsigned long long)kp->n);
  uint32_t at = kp->place[*payload];
  if (at == KEY_LEFT) return 1;
  *payload = (uint64_t)at | ((uint64_t)kp->s->e[at].gen << 32);
  return WM_OK;
}

/* Reads past a key's state (a key of another instance's key group). */
static int skip_key(wm_state_rd *r, uint64_t mode) {
  const wm_host *h = &r->op->ctx->host;
  static const char *const what[] = {"a key's state", "a rolling aggregate", "a rolling aggregate"};
  for (int k = 0; k < 3; k++) {
    wm_value v;
    if (wm_state_get_value(r, &v, what[k]) != WM_OK) return WM_ERR;
    wm_value_release(h, &v);
  }
  uint64_t n;
  int64_t t;
  for (int d = 0; d < 2; d++) {
    if (wm_state_get_count(r, &n, 1, "the number of a key's timers") != WM_OK) return WM_ERR;
    for (uint64_t k = 0; k < n; k++)
      if (wm_state_get_i(r, &t, "a key's timer") != WM_OK) return WM_ERR;
  }
  if (mode == 3 && wm_state_get_i(r, &t, "a key's last access") != WM_OK) return WM_ERR;
  return WM_OK;
}

static int restore_tail(wm_op *op, keyedop *s, wm_state_rd *r, kplaces *kp, uint64_t seq);

static int keyed_restore_body(wm_op *op, keyedop *s, wm_state_rd *r) {
  const wm_host *h = &op->ctx->host;
  uint64_t mode, seq, ne, n;
  if (wm_state_get_header(r, 'K', "a keyed process operator") != WM_OK ||
      wm_state_get_u(r, &mode, "the mode") != WM_OK)
    return WM_ERR;
  if (mode > 3) return wm_state_bad(r, "the mode is %llu", (unsigned long long)mode);
  int rolling = mode == 1 || mode == 2, ttl = s->cfg.ttl.ttl > 0;
  if (rolling != (s->cfg.rolling.add != NULL))
    return wm_ctx_error(op->ctx, "the checkpoint holds a %s where this job has a %s (the job "
                                 "changed since the checkpoint?)",
                        rolling ? "rolling aggregation" : "process function",
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
  if (!rolling && (mode == 3) != ttl)
    return wm_ctx_error(op->ctx, "the checkpoint holds a process function's state %s a "
                                 "state_ttl, and this job's process function has %s (the "
                                 "state's ages are not known, or would be lost: give it the "
                                 "state_ttl of the checkpoint's job)",
                        mode == 3 ? "with" : "without", ttl ? "one" : "none");
  if (mode == 3) {
    uint64_t time;
    if (wm_state_get_u(r, &time, "the state_ttl's time") != WM_OK) return WM_ERR;
    if (time > 1) return wm_state_bad(r, "the state_ttl's time is %llu", (unsigned long long)time);
    if ((int)time != s->cfg.ttl.time)
      return wm_ctx_error(op->ctx, "the checkpoint's state_ttl measures %s time and this job's "
                                   "%s time: the state's ages do not carry over (give it time "
                                   "= \"%s\")",
                          time ? "processing" : "event",
                          s->cfg.ttl.time ? "processing" : "event",
                          time ? "processing" : "event");
  }
  if (wm_state_get_u(r, &seq, "the timer sequence") != WM_OK ||
      wm_state_get_count(r, &ne, 6, "the number of keys") != WM_OK)
    return WM_ERR;
  /* the place each key of the part takes here (KEY_LEFT: another instance's key group) */
  uint32_t *place = malloc((size_t)(ne ? ne : 1) * sizeof *place);
  if (!place) return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  kplaces kp = {s, place, ne};
  for (uint64_t i = 0; i < ne; i++) {
    wm_value key;
    if (wm_state_get_value(r, &key, "a key") != WM_OK) goto bad;
    if (!wm_key_valid(&key)) {
      wm_value_release(h, &key);
      wm_state_bad(r, "a key that is not a scalar");
      goto bad;
    }
    if (!wm_state_key_kept(r->io, &key)) { /* read past it: another instance's */
      wm_value_release(h, &key);
      place[i] = KEY_LEFT;
      if (skip_key(r, mode) != WM_OK) goto bad;
      continue;
    }
    uint32_t at;
    uint32_t before = s->ne;
    int rc = entry_get(op, s, &key, &at);
    wm_value_release(h, &key);
    if (rc != WM_OK) goto bad;
    if (s->ne == before) {
      wm_state_bad(r, "a key appears twice");
      goto bad;
    }
    place[i] = at;
    kentry *e = &s->e[at];
    if (wm_state_get_value(r, &e->state, "a key's state") != WM_OK ||
        wm_state_get_value(r, &e->acc, "a rolling aggregate") != WM_OK ||
        wm_state_get_value(r, &e->aux, "a rolling aggregate") != WM_OK)
      goto bad;
    for (int d = 0; d < 2; d++) {
      tset *ts = &e->timers[d];
      if (wm_state_get_count(r, &n, 1, "the number of a key's timers") != WM_OK) goto bad;
      if (n && !(ts->t = malloc(n * sizeof *ts->t))) {
        wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
        goto bad;
      }
      ts->cap = (uint32_t)n;
      for (uint64_t k = 0; k < n; k++) {
        if (wm_state_get_i(r, &ts->t[k], "a key's timer") != WM_OK) goto bad;
        ts->n++;
      }
    }
    if (mode == 3 && wm_state_get_i(r, &e->last, "a key's last access") != WM_OK) goto bad;
  }
  if (restore_tail(op, s, r, &kp, seq) != WM_OK) goto bad;
  free(place);
  return WM_OK;
bad:
  free(place);
  return WM_ERR;
}

/* The function's own state and the queues, after the keys. */
static int restore_tail(wm_op *op, keyedop *s, wm_state_rd *r, kplaces *kp, uint64_t seq) {
  const wm_host *h = &op->ctx->host;
  uint64_t has;
  if (wm_state_get_u(r, &has, "the function's state flag") != WM_OK) return WM_ERR;
  if (has > 1 || (has && !s->cfg.fn.restore))
    return has > 1 ? wm_state_bad(r, "the function's state flag is %llu", (unsigned long long)has)
                   : wm_ctx_error(op->ctx, "the checkpoint holds state of the process function "
                                           "itself, and this job's function has no restore "
                                           "method to take it");
  if (has) {
    wm_value v;
    if (wm_state_get_value(r, &v, "the process function's state") != WM_OK) return WM_ERR;
    /* not keyed (the table's own fields, a broadcast state): the first part's */
    int rc = r->io->merge ? WM_OK : s->cfg.fn.restore(s->cfg.fn.ud, op, &v);
    wm_value_release(h, &v);
    if (rc != WM_OK) return WM_ERR;
  }
  if (wm_state_get_timers_map(r, s->q[0], keyed_timer_map, kp) != WM_OK ||
      wm_state_get_timers_map(r, s->q[1], keyed_timer_map, kp) != WM_OK ||
      wm_state_get_end(r) != WM_OK)
    return WM_ERR;
  if (seq > s->seq) s->seq = seq;
  if (wm_state_rearm(op, s->q[1]) != WM_OK) return WM_ERR;
  return WM_OK;
}

static int keyed_restore(wm_op *op, wm_state_io *io) {
  keyedop *s = op->impl;
  if (!io->merge && (s->ne || wm_timers_size(s->q[0]) || wm_timers_size(s->q[1])))
    return wm_ctx_error(op->ctx, "a checkpoint is restored only into a new operator");
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  if (keyed_restore_body(op, s, &r) == WM_OK) {
    /* a mini-batch keeps no state of its own: each key fires once, emitting what its last
     * emission before the checkpoint did not (wm_keyedop_config.minibatch_size) */
    for (uint32_t i = 0; s->cfg.minibatch_size && i < s->ne; i++)
      if (s->e[i].live && !s->e[i].dirty) {
        s->e[i].last = WM_TIME_MIN;
        if (batch_add(op, s, i) != WM_OK) return WM_ERR;
      }
    return WM_OK;
  }
  /* back to the empty operator it was built as: no half-restored state stays */
  release_entries(op, s);
  s->ne = s->nlive = s->nfree = s->ndirty = 0;
  wm_keyidx_clear(&s->ix);
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

static void keyed_gauges(const wm_op *op, wm_op_gauges *g) {
  g->has_keys = true;
  g->keys = wm_keyedop_keys(op);
  g->keys_expired = wm_keyedop_expired(op);
}

static const wm_op_vt keyed_vt = {
    .kind = "keyed process",
    .gauges = keyed_gauges,
    .record = keyed_record,
    .watermark = keyed_watermark,
    .processing_time = keyed_processing_time,
    .period = keyed_period,
    .on_period = keyed_on_period,
    .free = keyed_free,
    .snapshot = keyed_snapshot,
    .restore = keyed_restore,
    .keyed_state = 1,
};

bool wm_op_is_keyedop(const wm_op *op) { return op->vt == &keyed_vt; }

wm_op *wm_keyedop_new(wm_ctx *ctx, const char *name, wm_keyedop_config *cfg) {
  keyedop *s = calloc(1, sizeof *s);
  wm_op *op = NULL;
  if (s) {
    s->cfg = *cfg;
    s->cur = -1;
    s->batch_wall = WM_TIME_MIN;
    int ix = wm_keyidx_init(&s->ix, place_key, s);
    s->q[0] = wm_timers_new();
    s->q[1] = wm_timers_new();
    if (ix == 0 && s->q[0] && s->q[1]) op = wm_op_new(ctx, &keyed_vt, s, name);
  }
  if (!op) {
    if (s) {
      wm_keyidx_free(&s->ix);
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
