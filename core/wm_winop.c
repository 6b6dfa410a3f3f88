#include "wm_winop.h"

#include <stdlib.h>
#include <string.h>

#include "wm_buf.h"
#include "wm_observe.h"
#include "wm_time.h"
#include "wm_timer.h"

/* ---- window state: a slab of entries with an open-addressing index ---------------- */

typedef struct wentry {
  wm_value key; /* owned */
  uint64_t hash;
  wm_window w;
  wm_value acc, aux; /* incremental state (owned) */
  wm_value *items;   /* list mode: owned records */
  uint32_t nitems, capitems;
  uint64_t seq;      /* creation order: ties between timers fire in this order */
  uint32_t gen;      /* bumped when the slot is freed: stale timers are ignored */
  uint32_t next_free;
  uint8_t live;
} wentry;

#define TOMB UINT32_MAX
#define T_FIRE 1u
#define T_CLEANUP 2u

typedef struct winop {
  wm_winop_config cfg;
  char *late_tag;
  int late_port;
  wentry *e;
  uint32_t ne, cape, free_head, nlive;
  uint32_t *idx;
  size_t capidx, usedidx;
  wm_timers *timers;
  wm_window *wins; /* scratch for the assigner */
} winop;

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

static uint64_t entry_hash(uint64_t khash, wm_window w) {
  return mix(khash ^ mix((uint64_t)w.start) ^ ((uint64_t)w.stop * 0x9e3779b97f4a7c15ULL));
}

static int64_t max_ts_of(wm_window w) {
  return (w.start == WM_TIME_MIN && w.stop == WM_TIME_MAX) ? WM_TIME_MAX : w.stop - 1;
}

static int64_t cleanup_of(const winop *s, wm_window w) {
  return wm_time_add_sat(max_ts_of(w), s->cfg.lateness);
}

/* The slot of (key, w) in the index: found (1) or where to insert (0). */
static size_t idx_find(const winop *s, const wm_value *key, uint64_t h, wm_window w, int *found) {
  size_t mask = s->capidx - 1, i = h & mask, tomb = SIZE_MAX;
  for (;;) {
    uint32_t v = s->idx[i];
    if (v == 0) {
      *found = 0;
      return tomb != SIZE_MAX ? tomb : i;
    }
    if (v == TOMB) {
      if (tomb == SIZE_MAX) tomb = i;
    } else {
      const wentry *e = &s->e[v - 1];
      if (e->hash == h && e->w.start == w.start && e->w.stop == w.stop &&
          wm_key_equal(&e->key, key)) {
        *found = 1;
        return i;
      }
    }
    i = (i + 1) & mask;
  }
}

static int idx_rebuild(winop *s, size_t cap) {
  uint32_t *n = calloc(cap, sizeof *n);
  if (!n) return -1;
  free(s->idx);
  s->idx = n;
  s->capidx = cap;
  s->usedidx = 0;
  for (uint32_t i = 0; i < s->ne; i++) {
    wentry *e = &s->e[i];
    if (!e->live) continue;
    int found;
    size_t at = idx_find(s, &e->key, e->hash, e->w, &found);
    n[at] = i + 1;
    s->usedidx++;
  }
  return 0;
}

static int entry_alloc(winop *s, uint32_t *out) {
  if (s->free_head != UINT32_MAX) {
    *out = s->free_head;
    s->free_head = s->e[*out].next_free;
    return 0;
  }
  if (s->ne == s->cape) {
    uint32_t cap = s->cape ? s->cape * 2 : 64;
    wentry *n = realloc(s->e, cap * sizeof *n);
    if (!n) return -1;
    s->e = n;
    s->cape = cap;
  }
  memset(&s->e[s->ne], 0, sizeof s->e[s->ne]);
  *out = s->ne++;
  return 0;
}

static void entry_delete(wm_op *op, winop *s, uint32_t i) {
  wentry *e = &s->e[i];
  const wm_host *h = &op->ctx->host;
  int found;
  size_t at = idx_find(s, &e->key, e->hash, e->w, &found);
  if (found) s->idx[at] = TOMB;
  wm_value_release(h, &e->key);
  wm_value_release(h, &e->acc);
  wm_value_release(h, &e->aux);
  for (uint32_t k = 0; k < e->nitems; k++) wm_value_release(h, &e->items[k]);
  free(e->items);
  e->items = NULL;
  e->nitems = e->capitems = 0;
  e->live = 0;
  e->gen = (e->gen + 1) & 0x3fffffffu;
  e->next_free = s->free_head;
  s->free_head = i;
  s->nlive--;
}

static uint64_t payload(uint32_t i, uint32_t gen, uint32_t kind) {
  return (uint64_t)i | ((uint64_t)gen << 32) | ((uint64_t)kind << 62);
}

/* Finds or creates the state of (key, w). *created tells which. */
static int entry_get(wm_op *op, winop *s, const wm_value *key, uint64_t khash, wm_window w,
                     uint32_t *out, int *created) {
  uint64_t h = entry_hash(khash, w);
  if ((s->usedidx + 1) * 4 >= s->capidx * 3) {
    size_t cap = s->capidx;
    if ((size_t)s->nlive * 2 >= cap / 2) cap *= 2;
    if (idx_rebuild(s, cap) != 0) return wm_ctx_error(op->ctx, "out of memory in window state");
  }
  int found;
  size_t at = idx_find(s, key, h, w, &found);
  if (found) {
    *out = s->idx[at] - 1;
    *created = 0;
    return WM_OK;
  }
  uint32_t i;
  if (entry_alloc(s, &i) != 0) return wm_ctx_error(op->ctx, "out of memory in window state");
  wentry *e = &s->e[i];
  uint32_t gen = e->gen;
  memset(e, 0, sizeof *e);
  e->gen = gen;
  if (wm_value_copy(&op->ctx->host, &e->key, key) != 0) {
    e->next_free = s->free_head;
    s->free_head = i;
    return wm_ctx_error(op->ctx, "out of memory in window state");
  }
  e->hash = h;
  e->w = w;
  e->seq = op->ctx->seq++;
  e->live = 1;
  s->nlive++;
  if (s->idx[at] == 0) s->usedidx++;
  s->idx[at] = i + 1;
  *out = i;
  *created = 1;
  return WM_OK;
}

static int add_record(wm_op *op, winop *s, wentry *e, const wm_value *rec) {
  if (s->cfg.fn.list) {
    if (e->nitems == e->capitems) {
      uint32_t cap = e->capitems ? e->capitems * 2 : 4;
      wm_value *n = realloc(e->items, cap * sizeof *n);
      if (!n) return wm_ctx_error(op->ctx, "out of memory in window state");
      e->items = n;
      e->capitems = cap;
    }
    if (wm_value_copy(&op->ctx->host, &e->items[e->nitems], rec) != 0)
      return wm_ctx_error(op->ctx, "out of memory in window state");
    e->nitems++;
    return WM_OK;
  }
  return s->cfg.fn.add(s->cfg.fn.ud, op, &e->acc, &e->aux, rec);
}

static int fire(wm_op *op, winop *s, uint32_t i) {
  wentry *e = &s->e[i];
  wm_fire f;
  f.key = &e->key;
  f.window = e->w;
  f.max_ts = max_ts_of(e->w);
  f.watermark = op->wm;
  f.acc = &e->acc;
  f.aux = &e->aux;
  f.items = e->items;
  f.nitems = e->nitems;
  /* the function may emit into operators that re-enter nothing of ours, but it must not
   * see a moved slab: e stays valid because firing adds no entries */
  return s->cfg.fn.fire(s->cfg.fn.ud, op, &f);
}

/* The record as print shows it, for error messages. */
static void describe(wm_op *op, const wm_value *rec, wm_buf *b) {
  wm_format_value(b, rec, 0, op->ctx->host.format, op->ctx->host.ud);
}

static int winop_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  winop *s = op->impl;
  wm_ctx *ctx = op->ctx;
  if (ts == WM_TIME_MIN && !s->cfg.assigner.processing_time &&
      s->cfg.assigner.kind != WM_WA_GLOBAL) {
    wm_buf b;
    wm_buf_init(&b);
    describe(op, rec, &b);
    wm_ctx_error(ctx,
                 "record has no event timestamp: %s\n  (add assign_timestamps_and_watermarks "
                 "before this event-time window)",
                 b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  wm_value key;
  if (s->cfg.keysel.fn(s->cfg.keysel.ud, op, rec, &key) != WM_OK) return WM_ERR;
  if (!wm_key_valid(&key)) {
    wm_buf b;
    wm_buf_init(&b);
    describe(op, rec, &b);
    wm_ctx_error(ctx, "key is %s (a key must be a string, number or boolean) for record %s",
                 key.type == WM_NIL ? "nil" : "not a scalar", b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  uint64_t khash = wm_key_hash(&key);
  size_t n = wm_assigner_assign(&s->cfg.assigner, ts, s->wins);
  int64_t W = op->wm;
  int any = 0;
  for (size_t k = 0; k < n; k++) {
    wm_window w = s->wins[k];
    int64_t mts = max_ts_of(w), cl = cleanup_of(s, w);
    if (cl <= W) continue; /* late window: skip */
    any = 1;
    uint32_t i = 0;
    int created = 0;
    if (entry_get(op, s, &key, khash, w, &i, &created) != WM_OK) return WM_ERR;
    wm_observe_window(op, &key, ts, w, created);
    if (created) {
      /* the default event-time trigger's timer, and the cleanup timer; with no lateness
       * they are the same instant: fire, then delete */
      uint32_t gen = s->e[i].gen;
      uint64_t seq = s->e[i].seq;
      int rc = 0;
      if (mts > W) rc |= wm_timers_push(s->timers, mts, payload(i, gen, cl == mts ? T_FIRE | T_CLEANUP : T_FIRE), seq);
      if (cl != mts || mts <= W) rc |= wm_timers_push(s->timers, cl, payload(i, gen, T_CLEANUP), seq);
      if (rc) return wm_ctx_error(ctx, "out of memory registering a timer");
    }
    if (add_record(op, s, &s->e[i], rec) != WM_OK) return WM_ERR;
    if (mts <= W) { /* a late firing: accumulating, over everything the window holds */
      wm_observe_fire(op, &key, w, 1);
      if (fire(op, s, i) != WM_OK) return WM_ERR;
    }
  }
  if (!any && wm_time_add_sat(ts, s->cfg.lateness) <= W) {
    wm_observe_late(op, &key, ts, s->cfg.lateness, s->late_port > 0 ? s->late_tag : NULL);
    if (s->late_port > 0) return wm_op_emit(op, s->late_port, rec, ts);
    op->m.late_dropped++;
  }
  return WM_OK;
}

static int winop_watermark(wm_op *op, int64_t W) {
  winop *s = op->impl;
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (wm_timers_pop(s->timers, W, &t, &ents, &n)) {
    for (size_t k = 0; k < n; k++) {
      uint64_t p = ents[k].payload;
      uint32_t i = (uint32_t)p, gen = (uint32_t)(p >> 32) & 0x3fffffffu, kind = (uint32_t)(p >> 62);
      if (i >= s->ne || !s->e[i].live || s->e[i].gen != gen) continue;
      if (kind & T_FIRE) wm_observe_fire(op, &s->e[i].key, s->e[i].w, 0);
      if ((kind & T_FIRE) && fire(op, s, i) != WM_OK) return WM_ERR;
      if (kind & T_CLEANUP) wm_observe_cleanup(op, &s->e[i].key, s->e[i].w);
      if (kind & T_CLEANUP) entry_delete(op, s, i);
    }
  }
  return wm_op_emit_watermark(op, W);
}

static void winop_free(wm_op *op) {
  winop *s = op->impl;
  if (!s) return;
  for (uint32_t i = 0; i < s->ne; i++)
    if (s->e[i].live) entry_delete(op, s, i);
  free(s->e);
  free(s->idx);
  wm_timers_free(s->timers);
  free(s->wins);
  free(s->late_tag);
  if (s->cfg.keysel.free) s->cfg.keysel.free(s->cfg.keysel.ud);
  if (s->cfg.fn.free) s->cfg.fn.free(s->cfg.fn.ud);
  free(s);
}

static const wm_op_vt winop_vt = {
    .kind = "window",
    .record = winop_record,
    .watermark = winop_watermark,
    .free = winop_free,
};

size_t wm_winop_open_windows(const wm_op *op) {
  const winop *s = op->impl;
  return s->nlive;
}

wm_op *wm_winop_new(wm_ctx *ctx, const char *name, wm_winop_config *cfg) {
  winop *s = calloc(1, sizeof *s);
  if (!s) goto oom;
  s->cfg = *cfg;
  s->free_head = UINT32_MAX;
  s->capidx = 64;
  s->idx = calloc(s->capidx, sizeof *s->idx);
  s->timers = wm_timers_new();
  s->wins = calloc(wm_assigner_max_windows(&cfg->assigner), sizeof *s->wins);
  if (!s->idx || !s->timers || !s->wins) goto oom;
  if (cfg->late_tag && !(s->late_tag = strdup(cfg->late_tag))) goto oom;
  s->cfg.late_tag = s->late_tag;
  wm_op *op = wm_op_new(ctx, &winop_vt, s, name);
  if (!op) goto oom;
  if (s->late_tag && (s->late_port = wm_op_port(op, s->late_tag)) < 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL; /* op (and s) are freed with the context */
  }
  return op;
oom:
  wm_ctx_error(ctx, "out of memory creating window operator '%s'", name);
  if (s) {
    free(s->idx);
    wm_timers_free(s->timers);
    free(s->wins);
    free(s->late_tag);
    free(s);
  }
  if (cfg->keysel.free) cfg->keysel.free(cfg->keysel.ud);
  if (cfg->fn.free) cfg->fn.free(cfg->fn.ud);
  return NULL;
}

/* ---- field key selectors --------------------------------------------------------- */

typedef struct fieldkeys {
  size_t n;
  wm_field *f;
  char **names;
  wm_value *parts;
  wm_value composite; /* owned; the last composite key */
  wm_host host;
} fieldkeys;

static void fieldkeys_free(void *ud) {
  fieldkeys *k = ud;
  for (size_t i = 0; i < k->n; i++) free(k->names[i]);
  free(k->names);
  free(k->f);
  free(k->parts);
  wm_value_release(NULL, &k->composite); /* a WM_STR: needs no host */
  free(k);
}

static int fieldkeys_fn(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  fieldkeys *k = ud;
  wm_ctx *ctx = op->ctx;
  for (size_t i = 0; i < k->n; i++) {
    if (wm_field_get(&ctx->host, &k->f[i], rec, &k->parts[i], ctx->err, sizeof ctx->err) != 0) {
      wm_buf b;
      wm_buf_init(&b);
      describe(op, rec, &b);
      wm_ctx_error_append(ctx, " (key_by on record %s)", b.data ? b.data : "");
      wm_buf_free(&b);
      return WM_ERR;
    }
    if (!wm_key_valid(&k->parts[i])) {
      wm_buf b;
      wm_buf_init(&b);
      describe(op, rec, &b);
      wm_ctx_error(ctx, "key field '%s' is %s in record %s", k->names[i],
                   k->parts[i].type == WM_NIL ? "missing" : "not a string, number or boolean",
                   b.data ? b.data : "");
      wm_buf_free(&b);
      return WM_ERR;
    }
  }
  if (k->n == 1) {
    *key = k->parts[0];
    return WM_OK;
  }
  /* the composite key is borrowed by the caller until the next call: the window state
   * copies it (a new reference), so it is freed here only when no one else holds it */
  if (k->composite.type == WM_STR) wm_value_release(&ctx->host, &k->composite);
  if (wm_key_compose(k->parts, k->n, &k->composite) != 0)
    return wm_ctx_error(ctx, "out of memory composing a key");
  *key = k->composite;
  return WM_OK;
}

int wm_keysel_fields(wm_keysel *ks, const char *const *fields, size_t n) {
  fieldkeys *k = calloc(1, sizeof *k);
  if (!k) return -1;
  k->n = n;
  k->f = calloc(n, sizeof *k->f);
  k->names = calloc(n, sizeof *k->names);
  k->parts = calloc(n, sizeof *k->parts);
  if (!k->f || !k->names || !k->parts) goto fail;
  for (size_t i = 0; i < n; i++) {
    if (!(k->names[i] = strdup(fields[i]))) goto fail;
    k->f[i].name = k->names[i];
    k->f[i].index = -1;
  }
  ks->fn = fieldkeys_fn;
  ks->free = fieldkeys_free;
  ks->ud = k;
  return 0;
fail:
  fieldkeys_free(k);
  return -1;
}

/* ---- built-in aggregations ------------------------------------------------------- */

typedef struct builtin {
  int agg;
  char *field_name;
  wm_field field;
  wm_schema *count_schema; /* count(): {count, key, start, stop} */
} builtin;

static int num_of(wm_op *op, builtin *b, const wm_value *rec, wm_value *out) {
  wm_ctx *ctx = op->ctx;
  if (wm_field_get(&ctx->host, &b->field, rec, out, ctx->err, sizeof ctx->err) != 0)
    return WM_ERR;
  if (out->type == WM_INT || out->type == WM_FLOAT) return WM_OK;
  wm_buf buf;
  wm_buf_init(&buf);
  describe(op, rec, &buf);
  static const char *names[] = {"", "sum", "min", "max", "min_by", "max_by", "count"};
  wm_ctx_error(ctx, "%s('%s'): field '%s' is %s in record %s", names[b->agg], b->field_name,
               b->field_name, out->type == WM_NIL ? "missing" : "not a number",
               buf.data ? buf.data : "");
  wm_buf_free(&buf);
  return WM_ERR;
}

static int num_cmp(const wm_value *a, const wm_value *b) {
  if (a->type == WM_INT && b->type == WM_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
  double x = a->type == WM_INT ? (double)a->u.i : a->u.f;
  double y = b->type == WM_INT ? (double)b->u.i : b->u.f;
  return (x > y) - (x < y);
}

static int builtin_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  builtin *b = ud;
  const wm_host *h = &op->ctx->host;
  if (b->agg == WM_AGG_COUNT) {
    if (aux->type == WM_NIL) *aux = wm_int(0);
    aux->u.i++;
    return WM_OK;
  }
  wm_value v;
  if (num_of(op, b, rec, &v) != WM_OK) return WM_ERR;
  if (acc->type == WM_NIL) {
    if (wm_value_copy(h, acc, rec) != 0) return wm_ctx_error(op->ctx, "out of memory");
    *aux = v;
    return WM_OK;
  }
  switch (b->agg) {
  case WM_AGG_SUM:
    if (aux->type == WM_INT && v.type == WM_INT)
      aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)v.u.i); /* wraps like Lua */
    else
      *aux = wm_float((aux->type == WM_INT ? (double)aux->u.i : aux->u.f) +
                      (v.type == WM_INT ? (double)v.u.i : v.u.f));
    break;
  case WM_AGG_MIN:
    if (num_cmp(&v, aux) < 0) *aux = v;
    break;
  case WM_AGG_MAX:
    if (num_cmp(&v, aux) > 0) *aux = v;
    break;
  case WM_AGG_MIN_BY:
  case WM_AGG_MAX_BY: {
    int c = num_cmp(&v, aux);
    if ((b->agg == WM_AGG_MIN_BY && c < 0) || (b->agg == WM_AGG_MAX_BY && c > 0)) {
      wm_value n;
      if (wm_value_copy(h, &n, rec) != 0) return wm_ctx_error(op->ctx, "out of memory");
      wm_value_release(h, acc);
      *acc = n;
      *aux = v;
    }
    break;
  }
  default: break;
  }
  return WM_OK;
}

static int builtin_merge(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *bacc,
                         const wm_value *baux) {
  builtin *b = ud;
  const wm_host *h = &op->ctx->host;
  if (b->agg == WM_AGG_COUNT) {
    aux->u.i += baux->u.i;
    return WM_OK;
  }
  if (acc->type == WM_NIL) {
    if (wm_value_copy(h, acc, bacc) != 0) return wm_ctx_error(op->ctx, "out of memory");
    *aux = *baux;
    return WM_OK;
  }
  if (b->agg == WM_AGG_SUM) {
    if (aux->type == WM_INT && baux->type == WM_INT)
      aux->u.i = (int64_t)((uint64_t)aux->u.i + (uint64_t)baux->u.i);
    else
      *aux = wm_float((aux->type == WM_INT ? (double)aux->u.i : aux->u.f) +
                      (baux->type == WM_INT ? (double)baux->u.i : baux->u.f));
    return WM_OK;
  }
  int c = num_cmp(baux, aux);
  int better = (b->agg == WM_AGG_MIN || b->agg == WM_AGG_MIN_BY) ? c < 0 : c > 0;
  if (!better) return WM_OK;
  if (b->agg == WM_AGG_MIN_BY || b->agg == WM_AGG_MAX_BY) {
    wm_value n;
    if (wm_value_copy(h, &n, bacc) != 0) return wm_ctx_error(op->ctx, "out of memory");
    wm_value_release(h, acc);
    *acc = n;
  }
  *aux = *baux;
  return WM_OK;
}

static int builtin_fire(void *ud, wm_op *op, const wm_fire *f) {
  builtin *b = ud;
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  wm_value out;
  int rc;
  switch (b->agg) {
  case WM_AGG_COUNT: {
    wm_row *r = wm_row_new(b->count_schema);
    if (!r) return wm_ctx_error(ctx, "out of memory");
    /* fields in schema order: count, key, start, stop */
    r->fields[0] = *f->aux;
    if (wm_value_copy(h, &r->fields[1], f->key) != 0) {
      wm_row_release(h, r);
      return wm_ctx_error(ctx, "out of memory");
    }
    r->fields[2] = wm_int(f->window.start);
    r->fields[3] = wm_int(f->window.stop);
    out = wm_row_value(r);
    break;
  }
  case WM_AGG_MIN_BY:
  case WM_AGG_MAX_BY: return wm_op_emit(op, 0, f->acc, f->max_ts);
  default:
    if (wm_field_with(h, &b->field, f->acc, f->aux, &out, ctx->err, sizeof ctx->err) != 0)
      return WM_ERR;
  }
  rc = wm_op_emit(op, 0, &out, f->max_ts);
  wm_value_release(h, &out);
  return rc;
}

static void builtin_free(void *ud) {
  builtin *b = ud;
  free(b->field_name);
  wm_schema_release(b->count_schema);
  free(b);
}

int wm_winfn_builtin(wm_winfn *fn, int agg, const char *field) {
  builtin *b = calloc(1, sizeof *b);
  if (!b) return -1;
  b->agg = agg;
  b->field_name = strdup(field ? field : "");
  if (!b->field_name) goto fail;
  b->field.name = b->field_name;
  b->field.index = -1;
  if (agg == WM_AGG_COUNT) {
    static const char *const names[] = {"count", "key", "start", "stop"};
    static const uint8_t types[] = {WM_FT_INTEGER, WM_FT_ANY, WM_FT_INTEGER, WM_FT_INTEGER};
    if (!(b->count_schema = wm_schema_new(4, names, types))) goto fail;
  }
  memset(fn, 0, sizeof *fn);
  fn->add = builtin_add;
  fn->fire = builtin_fire;
  fn->merge = builtin_merge;
  fn->free = builtin_free;
  fn->ud = b;
  return 0;
fail:
  builtin_free(b);
  return -1;
}
