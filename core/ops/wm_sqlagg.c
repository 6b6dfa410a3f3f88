/* SQL group aggregates in C over a window (wm_sqlagg.h). */
#include "ops/wm_sqlagg.h"

#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"

/* One aggregate's state: n (rows counted / values added), the running value (t: WM_NIL none
 * yet, WM_INT in i, WM_FLOAT in f). 32 bytes, no pointers: the state is its bytes. A MIN or
 * MAX of strings (t WM_STR): its bytes at offset i of the state (an area of n bytes, n its
 * capacity), used of them (the value's length). A
 * multiset's (an updating input's MIN, MAX, COUNT(DISTINCT)): n its values, i its array's
 * offset, used the array's entries (values and tombstones), t its capacity. */
typedef struct slot {
  int64_t n;
  int64_t i;
  union {
    double f;
    int64_t used;
  };
  int64_t t;
} slot;

typedef struct cond {
  wm_field field;
  int op;
  wm_value value;
} cond;

typedef struct agg {
  wm_sqlagg_def d;
  wm_field field;
  cond *cond;
  /* COUNT(DISTINCT) over appending rows: the aggregate whose table holds its values (its
   * own index, or the first COUNT(DISTINCT) of the same column: one table, one lookup per
   * row for them all, as Flink's distinct aggregates sharing a MapState); bit: its flag in
   * the entries of a shared table (0: the table is its alone) */
  size_t own;
  uint64_t bit;
} agg;

typedef struct sqlagg {
  size_t nkeys, naggs, nout;
  agg *aggs;
  wm_sqlagg_out *out;
  wm_schema *schema; /* the result row's */
  int changelog;      /* an unwindowed GROUP BY's (wm_keyedfn_sqlagg): aux is the last result */
  wm_schema *cl;      /* its changelog rows: {k = "+I"|"-U"|"+U"|"-D", r = row} */
  int retract;        /* its input is updating: records {k, r}; a row counter after the slots,
                       * MIN, MAX and COUNT(DISTINCT) multisets (ment arrays) */
  wm_field fk, fr;    /* the fields k and r of a WM_ROW changelog record */
  wm_sqlagg_unwrap unwrap; /* (other records) */
  void *unwrap_ud;
} sqlagg;

/* The bytes of a state's slots: one per aggregate, and the row counter (retract). */
static size_t slots_bytes(const sqlagg *s) { return (s->naggs + (s->retract ? 1 : 0)) * sizeof(slot); }

static const char *const kind_names[] = {"?",   "COUNT(*)", "COUNT", "SUM",
                                         "MIN", "MAX",      "AVG",   "COUNT(DISTINCT)"};

static int num_cmp(const wm_value *a, const wm_value *b) {
  if (a->type == WM_INT && b->type == WM_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
  double x = a->type == WM_INT ? (double)a->u.i : a->u.f;
  double y = b->type == WM_INT ? (double)b->u.i : b->u.f;
  return (x > y) - (x < y);
}

static int is_num(const wm_value *v) { return v->type == WM_INT || v->type == WM_FLOAT; }

/* A field of rec, with the record in the message when it cannot be read or is not a number
 * (nor a string, str set: MIN and MAX). */
static int read_num(wm_op *op, wm_field *f, const char *what, const wm_value *rec, wm_value *out, int str) {
  wm_ctx *ctx = op->ctx;
  const wm_value *p = wm_field_peek(f, rec);
  if (p) *out = *p;
  else if (wm_field_get(&ctx->host, f, rec, out, &ctx->error) != 0) goto bad;
  if (out->type == WM_NIL || is_num(out) || (str && wm_value_is_string(out))) return WM_OK;
  wm_ctx_error(ctx, "%s: column '%s' is not a number%s", what, f->name, str ? " nor a string" : "");
bad:;
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  wm_ctx_error_append(ctx, " in record %s", b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

/* Whether the FILTER of a lets rec in: 1, 0, or WM_ERR. */
static int passes(wm_op *op, agg *a, const wm_value *rec) {
  for (size_t k = 0; k < a->d.ncond; k++) {
    cond *c = &a->cond[k];
    wm_value v;
    if (read_num(op, &c->field, "FILTER (WHERE ...)", rec, &v, 0) != WM_OK) return WM_ERR;
    if (v.type == WM_NIL) return 0;
    int r = num_cmp(&v, &c->value), ok;
    switch (c->op) {
    case WM_SA_LT: ok = r < 0; break;
    case WM_SA_LE: ok = r <= 0; break;
    case WM_SA_GT: ok = r > 0; break;
    case WM_SA_GE: ok = r >= 0; break;
    case WM_SA_EQ: ok = r == 0; break;
    default: ok = r != 0; break;
    }
    /* NaN compares false every way: num_cmp gives 0 for it, so = and <= would pass it */
    if (v.type == WM_FLOAT && v.u.f != v.u.f) ok = 0;
    if (!ok) return 0;
  }
  return 1;
}

/* The state of a window as writable slots: acc made (nil), or copied when shared. A state
 * is the slots, then the tables of the COUNT(DISTINCT) sets (slot.i: the table's offset in
 * the state, slot.t: its capacity, slot.n: its values). */
static slot *own_state(wm_op *op, const sqlagg *s, wm_value *acc) {
  size_t n = slots_bytes(s);
  if (acc->type == WM_STR && acc->u.s->refs == 1 && acc->u.s->len >= n)
    return (slot *)(void *)acc->u.s->data;
  size_t len = acc->type == WM_STR && acc->u.s->len >= n ? acc->u.s->len : n;
  wm_str *str = malloc(sizeof(wm_str) + len + 1); /* as wm_str_new: freed by wm_value_release */
  if (!str) {
    wm_ctx_error(op->ctx, "out of memory");
    return NULL;
  }
  str->refs = 1;
  str->len = (uint32_t)len;
  str->data[len] = '\0';
  if (acc->type == WM_STR && acc->u.s->len >= n) {
    memcpy(str->data, acc->u.s->data, len);
  } else {
    slot *sl = (slot *)(void *)str->data;
    for (size_t i = 0; i < n / sizeof(slot); i++) sl[i] = (slot){.n = 0, .i = 0, .f = 0.0, .t = WM_NIL};
  }
  wm_value_release(&op->ctx->host, acc);
  acc->type = WM_STR;
  acc->flags = 0;
  acc->u.s = str;
  return (slot *)(void *)str->data;
}

/* ---- COUNT(DISTINCT x) of numbers: an open-addressing set in the state ---------------- */

typedef struct dent {
  uint64_t bits; /* the integer, or the float's bits */
  uint64_t tag;  /* low byte: 0 empty, 1 integer, 2 float (an integral float is its integer, as
                  * Lua keys); a shared table's: the bits (agg.bit) of the aggregates holding it */
} dent;

#define DENT_KIND(t) ((t) & 0xffu)

static uint64_t dent_hash(const dent *d) {
  uint64_t h = (d->bits ^ (DENT_KIND(d->tag) << 62)) * UINT64_C(0x9E3779B97F4A7C15);
  return h ^ (h >> 29);
}

/* Whether aggregate j has a table in the state (a COUNT(DISTINCT) that owns one). */
static int has_table(const sqlagg *s, size_t j) {
  return s->aggs[j].d.kind == WM_SA_COUNT_DISTINCT && s->aggs[j].own == j;
}

/* The entries of j's table: a shared one counts them in slot.used, else they are j's values. */
static int64_t entries(const sqlagg *s, size_t j, const slot *sl) { return s->aggs[j].bit ? sl->used : sl->n; }

static dent *table_of(wm_value *acc, const slot *sl) {
  return (dent *)(void *)(acc->u.s->data + sl->i);
}

/* The entry of d's value in a table of capacity cap (a power of 2, never full), d put there
 * when it was not (*isnew 1); NULL when the table is full after all (a state restored with
 * --allow-state-change whose counts do not match its table). */
static dent *dent_find(dent *tab, int64_t cap, const dent *d, int *isnew) {
  uint64_t mask = (uint64_t)cap - 1, k = dent_hash(d) & mask;
  for (int64_t probes = 0; tab[k].tag; probes++) {
    if (DENT_KIND(tab[k].tag) == DENT_KIND(d->tag) && tab[k].bits == d->bits) {
      *isnew = 0;
      return &tab[k];
    }
    if (probes == cap) return NULL;
    k = (k + 1) & mask;
  }
  tab[k] = *d;
  *isnew = 1;
  return &tab[k];
}

static void dent_put(dent *tab, int64_t cap, const dent *d) {
  int isnew;
  (void)dent_find(tab, cap, d, &isnew);
}

static int table_ok(const sqlagg *s, size_t k, const slot *sl, size_t len);
static int bad_state(wm_op *op, const sqlagg *s, size_t k);

/* Whether aggregate k of state sl holds a string (MIN or MAX of strings: an area of the state). */
static int holds_str(const sqlagg *s, const slot *sl, size_t k) {
  int kind = s->aggs[k].d.kind;
  return (kind == WM_SA_MIN || kind == WM_SA_MAX) && sl[k].t == WM_STR;
}

/* The bytes of a string area of capacity cap: rounded up to 8, so that the tables after it
 * stay aligned. */
static size_t area_bytes(int64_t cap) { return ((size_t)cap + 7) & ~(size_t)7; }

static int str_ok(const sqlagg *s, const slot *sl, size_t len);

/* The state rebuilt with the table of aggregate `grow` at capacity `cap` (a COUNT(DISTINCT)'s:
 * entries; a string MIN or MAX's: bytes, its value kept when it fits), the others as they
 * are (the strings' areas packed: what a longer string left behind goes): WM_OK, or WM_ERR. */
static int regrow(wm_op *op, const sqlagg *s, wm_value *acc, size_t grow, int64_t cap) {
  size_t len = s->naggs * sizeof(slot);
  const slot *old = (const slot *)(const void *)acc->u.s->data;
  for (size_t j = 0; j < s->naggs; j++) {
    if (holds_str(s, old, j)) {
      if (!str_ok(s, &old[j], acc->u.s->len)) return bad_state(op, s, j);
      len += area_bytes(j == grow ? cap : old[j].n);
      continue;
    }
    if (!has_table(s, j)) continue;
    if (!table_ok(s, j, &old[j], acc->u.s->len)) return bad_state(op, s, j);
    len += (size_t)(j == grow ? cap : old[j].t) * sizeof(dent);
  }
  if (len > UINT32_MAX - 1)
    return wm_ctx_error(op->ctx, "%s(%s): too many values in one window", kind_names[s->aggs[grow].d.kind],
                        s->aggs[grow].d.field ? s->aggs[grow].d.field : "?");
  wm_str *str = calloc(1, sizeof(wm_str) + len + 1);
  if (!str) return wm_ctx_error(op->ctx, "out of memory");
  str->refs = 1;
  str->len = (uint32_t)len;
  slot *nw = (slot *)(void *)str->data;
  memcpy(nw, old, s->naggs * sizeof(slot));
  size_t off = s->naggs * sizeof(slot);
  for (size_t j = 0; j < s->naggs; j++) {
    if (holds_str(s, old, j)) {
      int64_t c = j == grow ? cap : old[j].n, keep = old[j].used <= c ? old[j].used : 0;
      if (keep) memcpy(str->data + off, acc->u.s->data + old[j].i, (size_t)keep);
      nw[j].i = (int64_t)off;
      nw[j].n = c;
      nw[j].used = keep;
      off += area_bytes(c);
      continue;
    }
    if (!has_table(s, j)) continue;
    int64_t c = j == grow ? cap : old[j].t;
    dent *tab = (dent *)(void *)(str->data + off);
    const dent *ot = (const dent *)(const void *)(acc->u.s->data + old[j].i);
    if (j != grow) { /* (the same capacity: the same places, wherever the table lies) */
      if (c) memcpy(tab, ot, (size_t)c * sizeof(dent));
    } else {
      for (int64_t e = 0; e < old[j].t; e++)
        if (ot[e].tag) dent_put(tab, c, &ot[e]);
    }
    nw[j].i = (int64_t)off;
    nw[j].t = c;
    off += (size_t)c * sizeof(dent);
  }
  wm_value_release(&op->ctx->host, acc);
  acc->type = WM_STR;
  acc->flags = 0;
  acc->u.s = str;
  return WM_OK;
}

/* The bytes of a state's slots and areas (COUNT(DISTINCT) tables, strings): what is not
 * garbage. */
static size_t live_bytes(const sqlagg *s, const slot *sl) {
  size_t n = s->naggs * sizeof(slot);
  for (size_t j = 0; j < s->naggs; j++) {
    if (holds_str(s, sl, j)) n += area_bytes(sl[j].n > 0 ? sl[j].n : 0);
    else if (has_table(s, j)) n += (size_t)(sl[j].t > 0 ? sl[j].t : 0) * sizeof(dent);
  }
  return n;
}

/* The area of aggregate `grow` (its table or its string, valid) at capacity cap, a new one at
 * the end of the state (realloc: the others stay where they are, nothing copied but the
 * grown one), its old one left as garbage; the state rebuilt (regrow) when garbage would
 * outweigh the rest. WM_OK, or WM_ERR. */
static int grow_area(wm_op *op, const sqlagg *s, wm_value *acc, size_t grow, int64_t cap) {
  const slot *old = (const slot *)(const void *)acc->u.s->data;
  size_t len = acc->u.s->len, live = live_bytes(s, old), str = holds_str(s, old, grow);
  size_t add = str ? area_bytes(cap) : (size_t)cap * sizeof(dent);
  if (acc->u.s->refs != 1 || live > len || len - live > live / 2 || add > UINT32_MAX - 1 - len)
    return regrow(op, s, acc, grow, cap);
  wm_str *n = realloc(acc->u.s, sizeof(wm_str) + len + add + 1);
  if (!n) return wm_ctx_error(op->ctx, "out of memory");
  acc->u.s = n;
  n->len = (uint32_t)(len + add);
  memset(n->data + len, 0, add + 1);
  slot *x = &((slot *)(void *)n->data)[grow];
  if (str) {
    if (x->used <= cap && x->used) memcpy(n->data + len, n->data + x->i, (size_t)x->used);
    else if (x->used > cap) x->used = 0;
    x->n = cap;
  } else {
    dent *tab = (dent *)(void *)(n->data + len);
    const dent *ot = (const dent *)(const void *)(n->data + x->i);
    for (int64_t e = 0; e < x->t; e++)
      if (ot[e].tag) dent_put(tab, cap, &ot[e]);
    x->t = cap;
  }
  x->i = (int64_t)len;
  return WM_OK;
}

/* Whether slot sl's table lies inside a state of len bytes (a state restored with
 * --allow-state-change for other aggregates may hold anything): its capacity 0 or a power of
 * 2 with room for its values, its bytes after the slots. */
static int table_ok(const sqlagg *s, size_t k, const slot *sl, size_t len) {
  int64_t e = entries(s, k, sl);
  if (sl->t == 0) return e == 0;
  if (sl->t < 0 || (sl->t & (sl->t - 1)) || e < 0 || e >= sl->t) return 0;
  size_t base = slots_bytes(s);
  return sl->i >= (int64_t)base && (uint64_t)sl->t <= (len - base) / sizeof(dent) &&
         (uint64_t)sl->i - base <= len - base - (uint64_t)sl->t * sizeof(dent);
}

static int bad_state(wm_op *op, const sqlagg *s, size_t k) {
  return wm_ctx_error(op->ctx, "%s(%s): the window's state does not hold this aggregate's "
                      "values (restored with --allow-state-change from other aggregates?)",
                      kind_names[s->aggs[k].d.kind], s->aggs[k].d.field ? s->aggs[k].d.field : "?");
}

/* Whether a string MIN/MAX's area lies inside a state of len bytes (slot.i its offset, slot.n
 * its capacity, slot.used its length). */
static int str_ok(const sqlagg *s, const slot *sl, size_t len) {
  if (sl->n == 0) return sl->used == 0;
  size_t base = s->naggs * sizeof(slot);
  if (sl->n < 0 || sl->used < 0 || sl->used > sl->n || len < base) return 0;
  return sl->i >= (int64_t)base && (uint64_t)sl->n <= len - base && (uint64_t)sl->i - base <= len - base - (uint64_t)sl->n;
}

/* Strings in SQL's order, as Flink's BinaryStringData.compareTo of two stored strings: by
 * their UTF-8 bytes, unsigned, a prefix first (which is code point order; Java's
 * String.compareTo, by UTF-16 code units, differs only between a character above U+FFFF and
 * one of U+E000..U+FFFF; Lua's < in the C locale is this order too). */
static int str_cmp(const char *a, size_t na, const char *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c) return c;
  return (na > nb) - (na < nb);
}

/* MIN or MAX (aggregate k) of the string p[0..n): kept when better than the state's. */
static int str_minmax(wm_op *op, const sqlagg *s, wm_value *acc, size_t k, const char *p, size_t n) {
  slot *sl = &((slot *)(void *)acc->u.s->data)[k];
  if (sl->t == WM_STR) {
    if (!str_ok(s, sl, acc->u.s->len)) return bad_state(op, s, k);
    int c = str_cmp(p, n, acc->u.s->data + sl->i, (size_t)sl->used);
    if (s->aggs[k].d.kind == WM_SA_MIN ? c >= 0 : c <= 0) return WM_OK;
  } else if (sl->t != WM_NIL) {
    return wm_ctx_error(op->ctx, "%s(%s): a string among numbers", kind_names[s->aggs[k].d.kind],
                        s->aggs[k].d.field ? s->aggs[k].d.field : "?");
  } else {
    *sl = (slot){.n = 0, .i = 0, .used = 0, .t = WM_STR};
  }
  if ((int64_t)n > sl->n) {
    int64_t cap = sl->n * 2 > (int64_t)n ? sl->n * 2 : (int64_t)n;
    if (grow_area(op, s, acc, k, cap) != WM_OK) return WM_ERR;
    sl = &((slot *)(void *)acc->u.s->data)[k];
  }
  if (n) memcpy(acc->u.s->data + sl->i, p, n);
  sl->used = (int64_t)n;
  return WM_OK;
}

/* Adds v (a number, not NULL) to the set of aggregate k. */
static int distinct_add(wm_op *op, const sqlagg *s, wm_value *acc, size_t k, const wm_value *v) {
  dent d = {0, 1};
  if (v->type == WM_INT) {
    d.bits = (uint64_t)v->u.i;
  } else if (v->u.f != v->u.f) {
    return wm_ctx_error(op->ctx, "COUNT(DISTINCT %s): NaN is not a value it can count",
                        s->aggs[k].d.field ? s->aggs[k].d.field : "?");
  } else if (v->u.f >= -9223372036854775808.0 && v->u.f < 9223372036854775808.0 &&
             (double)(int64_t)v->u.f == v->u.f) {
    d.bits = (uint64_t)(int64_t)v->u.f;
  } else {
    memcpy(&d.bits, &v->u.f, sizeof d.bits);
    d.tag = 2;
  }
  size_t o = s->aggs[k].own;
  slot *sl = &((slot *)(void *)acc->u.s->data)[o];
  if (!table_ok(s, o, sl, acc->u.s->len)) return bad_state(op, s, k);
  if ((entries(s, o, sl) + 1) * 2 > sl->t) {
    if (grow_area(op, s, acc, o, sl->t ? sl->t * 2 : 8) != WM_OK) return WM_ERR;
    sl = &((slot *)(void *)acc->u.s->data)[o];
  }
  int isnew;
  dent *e = dent_find(table_of(acc, sl), sl->t, &d, &isnew);
  if (!e) return bad_state(op, s, k);
  uint64_t bit = s->aggs[k].bit;
  if (!bit) {
    sl->n += isnew;
    return WM_OK;
  }
  sl->used += isnew; /* (a shared table's entries) */
  if (!(e->tag & bit)) {
    e->tag |= bit;
    ((slot *)(void *)acc->u.s->data)[k].n++;
  }
  return WM_OK;
}

/* ---- an updating input: multisets of MIN, MAX and COUNT(DISTINCT) --------------------- */

/* One value of a multiset and how many times it is held. The value as Lua's table key: an
 * integer (tag 1), or a float that is not integral (tag 2, its bits); sorted by value. A value
 * retracted to count 0 stays as a tombstone (a change -U v, +U v, the common one when a row's
 * other columns changed, moves nothing), dropped at the top at once and all together when
 * they outnumber the values (ms_compact). */
typedef struct ment {
  uint64_t bits;
  int64_t tag;
  int64_t count;
} ment;

static int is_multiset(int kind) {
  return kind == WM_SA_MIN || kind == WM_SA_MAX || kind == WM_SA_COUNT_DISTINCT;
}

static double ment_float(const ment *m) {
  double d;
  memcpy(&d, &m->bits, sizeof d);
  return d;
}

/* i against f exactly (as Lua's comparison of an integer and a float; f not NaN). */
static int cmp_int_float(int64_t i, double f) {
  if (f >= 9223372036854775808.0) return -1;
  if (f < -9223372036854775808.0) return 1;
  int64_t t = (int64_t)f; /* toward zero */
  if (i != t) return i < t ? -1 : 1;
  double frac = f - (double)t;
  return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static int ment_cmp(const ment *a, const ment *b) {
  if (a->tag == 1 && b->tag == 1) {
    int64_t x = (int64_t)a->bits, y = (int64_t)b->bits;
    return (x > y) - (x < y);
  }
  if (a->tag == 2 && b->tag == 2) {
    double x = ment_float(a), y = ment_float(b);
    return (x > y) - (x < y);
  }
  if (a->tag == 1) return cmp_int_float((int64_t)a->bits, ment_float(b));
  return -cmp_int_float((int64_t)b->bits, ment_float(a));
}

/* Whether slot sl's array lies inside a state of len bytes (slot.i its offset, slot.t its
 * capacity, slot.used its entries, slot.n its values; a state restored with
 * --allow-state-change may hold anything). */
static int ms_ok(const sqlagg *s, const slot *sl, size_t len) {
  if (sl->t == 0) return sl->n == 0 && sl->used == 0;
  size_t base = slots_bytes(s);
  if (sl->t < 0 || sl->n < 0 || sl->n > sl->used || sl->used > sl->t || len < base) return 0;
  return sl->i >= (int64_t)base && (uint64_t)sl->t <= (len - base) / sizeof(ment) &&
         (uint64_t)sl->i - base <= len - base - (uint64_t)sl->t * sizeof(ment);
}

static wm_value ms_result(const sqlagg *s, const agg *a, const slot *sl, const char *data, size_t len) {
  if (a->d.kind == WM_SA_COUNT_DISTINCT) return wm_int(sl->n);
  if (sl->n <= 0 || !ms_ok(s, sl, len)) return wm_nil();
  const ment *tab = (const ment *)(const void *)(data + sl->i), *m = &tab[sl->used - 1];
  if (a->d.kind == WM_SA_MIN)
    for (m = tab; m->count <= 0 && m < &tab[sl->used - 1]; m++) continue; /* (tombstones) */
  if (m->tag == 2) return wm_float(ment_float(m));
  /* an integer; of a DOUBLE column a float (the integral value it was) */
  return a->d.integer ? wm_int((int64_t)m->bits) : wm_float((double)(int64_t)m->bits);
}

/* The state rebuilt with the array of aggregate `grow` at capacity `cap`: WM_OK or WM_ERR. */
static int ms_regrow(wm_op *op, const sqlagg *s, wm_value *acc, size_t grow, int64_t cap) {
  size_t base = slots_bytes(s), len = base;
  const slot *old = (const slot *)(const void *)acc->u.s->data;
  for (size_t j = 0; j < s->naggs; j++)
    if (is_multiset(s->aggs[j].d.kind)) len += (size_t)(j == grow ? cap : old[j].t) * sizeof(ment);
  if (len > UINT32_MAX - 1)
    return wm_ctx_error(op->ctx, "%s(%s): too many values in one group", kind_names[s->aggs[grow].d.kind],
                        s->aggs[grow].d.field ? s->aggs[grow].d.field : "?");
  wm_str *str = calloc(1, sizeof(wm_str) + len + 1);
  if (!str) return wm_ctx_error(op->ctx, "out of memory");
  str->refs = 1;
  str->len = (uint32_t)len;
  slot *nw = (slot *)(void *)str->data;
  memcpy(nw, old, base);
  size_t off = base;
  for (size_t j = 0; j < s->naggs; j++) {
    if (!is_multiset(s->aggs[j].d.kind)) continue;
    int64_t c = j == grow ? cap : old[j].t;
    if (old[j].used) memcpy(str->data + off, acc->u.s->data + old[j].i, (size_t)old[j].used * sizeof(ment));
    nw[j].i = c ? (int64_t)off : 0;
    nw[j].t = c;
    off += (size_t)c * sizeof(ment);
  }
  wm_value_release(&op->ctx->host, acc);
  acc->type = WM_STR;
  acc->flags = 0;
  acc->u.s = str;
  return WM_OK;
}

static int ms_bad_state(wm_op *op, const sqlagg *s, size_t k) {
  return wm_ctx_error(op->ctx, "%s(%s): the group's state does not hold this aggregate's values "
                      "(restored with --allow-state-change from other aggregates?)",
                      kind_names[s->aggs[k].d.kind], s->aggs[k].d.field ? s->aggs[k].d.field : "?");
}

/* Drops the tombstones of a multiset's array. */
static void ms_compact(slot *sl, ment *tab) {
  int64_t w = 0;
  for (int64_t r = 0; r < sl->used; r++)
    if (tab[r].count > 0) tab[w++] = tab[r];
  sl->used = w;
}

/* Adds (delta 1) or retracts (-1) v (a number, not NULL) in the multiset of aggregate k, as
 * Lua's m[v] = (m[v] or 0) + delta, the value gone at 0 (a retraction of a value not held
 * does nothing). */
static int ms_update(wm_op *op, const sqlagg *s, wm_value *acc, size_t k, const wm_value *v, int delta) {
  ment key = {0, 1, 0};
  if (v->type == WM_INT) {
    key.bits = (uint64_t)v->u.i;
  } else if (v->u.f != v->u.f) {
    return wm_ctx_error(op->ctx, "%s(%s): NaN is not a value it can hold (over an updating input)",
                        kind_names[s->aggs[k].d.kind], s->aggs[k].d.field ? s->aggs[k].d.field : "?");
  } else if (v->u.f >= -9223372036854775808.0 && v->u.f < 9223372036854775808.0 &&
             (double)(int64_t)v->u.f == v->u.f) {
    key.bits = (uint64_t)(int64_t)v->u.f; /* (-0.0 too: the integer 0) */
  } else {
    memcpy(&key.bits, &v->u.f, sizeof key.bits);
    key.tag = 2;
  }
  slot *sl = &((slot *)(void *)acc->u.s->data)[k];
  if (!ms_ok(s, sl, acc->u.s->len)) return ms_bad_state(op, s, k);
  ment *tab = (ment *)(void *)(acc->u.s->data + sl->i);
  int64_t lo = 0, hi = sl->used; /* the first entry >= key */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ment_cmp(&tab[mid], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < sl->used && ment_cmp(&tab[lo], &key) == 0) {
    if (tab[lo].count <= 0) { /* a tombstone */
      if (delta > 0) tab[lo].count = delta, sl->n++;
      return WM_OK;
    }
    tab[lo].count += delta;
    if (tab[lo].count > 0) return WM_OK;
    tab[lo].count = 0;
    sl->n--;
    while (sl->used > 0 && tab[sl->used - 1].count <= 0) sl->used--; /* (MAX: the last entry) */
    if (sl->used - sl->n > sl->n + 8) ms_compact(sl, tab);
    return WM_OK;
  }
  if (delta < 0) return WM_OK;
  if (sl->used == sl->t) {
    if (sl->used - sl->n > sl->n / 4) { /* room made by the tombstones */
      ms_compact(sl, tab);
      return ms_update(op, s, acc, k, v, delta);
    }
    if (ms_regrow(op, s, acc, k, sl->t ? sl->t * 2 : 4) != WM_OK) return WM_ERR;
    sl = &((slot *)(void *)acc->u.s->data)[k];
    tab = (ment *)(void *)(acc->u.s->data + sl->i);
  }
  memmove(&tab[lo + 1], &tab[lo], (size_t)(sl->used - lo) * sizeof(ment));
  key.count = delta;
  tab[lo] = key;
  sl->n++;
  sl->used++;
  return WM_OK;
}

/* Retracts v from a COUNT, SUM or AVG, as Lua's aggregates: the count less one, the sum
 * less v (kept when no value is left: the result is then NULL). */
static void retract_value(const agg *a, slot *sl, const wm_value *v) {
  if (a->d.kind == WM_SA_COUNT_STAR) {
    sl->n--;
    return;
  }
  if (v->type == WM_NIL) return;
  sl->n--;
  if (a->d.kind == WM_SA_COUNT) return;
  if (a->d.integer && v->type == WM_INT && sl->t != WM_FLOAT) {
    sl->i = (int64_t)((uint64_t)sl->i - (uint64_t)v->u.i); /* wraps, as Lua's integers */
    sl->t = WM_INT;
  } else {
    if (sl->t == WM_INT) sl->f = (double)sl->i;
    sl->f -= v->type == WM_INT ? (double)v->u.i : v->u.f;
    sl->t = WM_FLOAT;
  }
}

/* The sign of a changelog kind: +1 (+I, +U), -1 (-U, -D), 0 (something else). */
static int kind_sign(const char *p, size_t n) {
  if (!p || n != 2 || (p[0] != '+' && p[0] != '-')) return 0;
  if (p[0] == '+' && (p[1] == 'I' || p[1] == 'U')) return 1;
  if (p[0] == '-' && (p[1] == 'U' || p[1] == 'D')) return -1;
  return 0;
}

/* The sign and the row (owned) of a changelog record: WM_OK or WM_ERR. */
static int unwrap(wm_op *op, sqlagg *s, const wm_value *rec, int *sign, wm_value *row) {
  wm_ctx *ctx = op->ctx;
  *row = wm_nil();
  if (rec->type != WM_ROW) {
    if (!s->unwrap) goto bad;
    if (s->unwrap(s->unwrap_ud, rec, sign, row, &ctx->error) != 0) return WM_ERR;
    return WM_OK;
  }
  wm_value k = wm_nil(), r = wm_nil();
  if (wm_field_get(&ctx->host, &s->fk, rec, &k, &ctx->error) != 0 ||
      wm_field_get(&ctx->host, &s->fr, rec, &r, &ctx->error) != 0)
    return WM_ERR;
  size_t n = 0;
  const char *p = wm_value_is_string(&k) ? wm_value_str(&k, &n) : NULL;
  if (!(*sign = kind_sign(p, n)) || (r.type != WM_ROW && r.type != WM_SLOT)) goto bad;
  if (wm_value_copy(&ctx->host, row, &r) != 0) return wm_ctx_error(ctx, "out of memory");
  return WM_OK;
bad:;
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  wm_ctx_error(ctx, "SQL GROUP BY over an updating input: a record is not a change "
               "{k = \"+I\"|\"+U\"|\"-U\"|\"-D\", r = row}: %s", b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

static void add_value(const agg *a, slot *sl, const wm_value *v) {
  switch (a->d.kind) {
  case WM_SA_COUNT_STAR: sl->n++; return;
  case WM_SA_COUNT: if (v->type != WM_NIL) sl->n++; return;
  case WM_SA_SUM:
  case WM_SA_AVG:
    if (v->type == WM_NIL) return;
    sl->n++;
    if (a->d.integer && v->type == WM_INT && sl->t != WM_FLOAT) {
      sl->i = (int64_t)((uint64_t)sl->i + (uint64_t)v->u.i); /* wraps, as Lua's integers */
      sl->t = WM_INT;
    } else { /* a float column (or a float in an integer one): float, as 0.0 + v */
      if (sl->t == WM_INT) sl->f = (double)sl->i;
      sl->f += v->type == WM_INT ? (double)v->u.i : v->u.f;
      sl->t = WM_FLOAT;
    }
    return;
  default: { /* MIN, MAX */
    if (v->type == WM_NIL) return;
    sl->n++;
    if (sl->t != WM_NIL) {
      wm_value cur = sl->t == WM_INT ? wm_int(sl->i) : wm_float(sl->f);
      int c = num_cmp(v, &cur);
      if (a->d.kind == WM_SA_MIN ? c >= 0 : c <= 0) return;
    }
    if (v->type == WM_INT) sl->i = v->u.i, sl->t = WM_INT;
    else sl->f = v->u.f, sl->t = WM_FLOAT;
  }
  }
}

static int is_minmax(const agg *a) { return a->d.kind == WM_SA_MIN || a->d.kind == WM_SA_MAX; }

/* The argument of aggregate a in rec, into *v (borrowed while rec is alive): 1, 0 when its
 * FILTER leaves rec out, or WM_ERR. */
static int arg_of(wm_op *op, agg *a, const wm_value *rec, wm_value *v) {
  if (a->d.ncond) {
    int p = passes(op, a, rec);
    if (p != 1) return p;
  }
  *v = wm_nil();
  if (a->d.eval) {
    if (a->d.eval(a->d.eval_ud, rec, v, &op->ctx->error) != 0) return WM_ERR;
    if (v->type != WM_NIL && !is_num(v) && a->d.kind != WM_SA_COUNT && !(is_minmax(a) && wm_value_is_string(v)))
      return wm_ctx_error(op->ctx, "%s: its argument is not a number", kind_names[a->d.kind]);
  } else if (a->d.kind != WM_SA_COUNT_STAR) {
    if (a->d.kind == WM_SA_COUNT) {
      const wm_value *p = wm_field_peek(&a->field, rec);
      if (p) *v = *p;
      else if (wm_field_get(&op->ctx->host, &a->field, rec, v, &op->ctx->error) != 0)
        return WM_ERR;
    } else if (read_num(op, &a->field, kind_names[a->d.kind], rec, v, is_minmax(a)) != WM_OK) {
      return WM_ERR;
    }
  }
  return 1;
}

/* A change of an updating input: its row's values added or retracted, the rows counted. */
static int sa_add_change(sqlagg *s, wm_op *op, wm_value *acc, const wm_value *rec) {
  int sign = 0, rc = WM_OK;
  wm_value row;
  if (unwrap(op, s, rec, &sign, &row) != WM_OK) return WM_ERR;
  if (sign < 0 && acc->type != WM_STR) goto done; /* a retraction of a group never seen */
  slot *st = own_state(op, s, acc);
  if (!st) {
    rc = WM_ERR;
    goto done;
  }
  st[s->naggs].n += sign; /* the group's rows */
  for (size_t i = 0; i < s->naggs; i++) {
    agg *a = &s->aggs[i];
    wm_value v;
    int p = arg_of(op, a, &row, &v);
    if (p == WM_ERR) {
      rc = WM_ERR;
      goto done;
    }
    if (!p) continue;
    if (is_minmax(a) && wm_value_is_string(&v)) {
      rc = wm_ctx_error(op->ctx, "%s(%s): MIN and MAX of strings over an updating input are not computed in C "
                        "(the planner keeps them in Lua)", kind_names[a->d.kind], a->d.field ? a->d.field : "?");
      goto done;
    }
    if (is_multiset(a->d.kind)) {
      if (v.type != WM_NIL && ms_update(op, s, acc, i, &v, sign) != WM_OK) {
        rc = WM_ERR;
        goto done;
      }
      st = (slot *)(void *)acc->u.s->data; /* (the state may have moved) */
      continue;
    }
    if (sign > 0) add_value(a, &st[i], &v);
    else retract_value(a, &st[i], &v);
  }
done:
  wm_value_release(&op->ctx->host, &row);
  return rc;
}

static int sa_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  sqlagg *s = ud;
  if (s->retract) return sa_add_change(s, op, acc, rec);
  slot *st = own_state(op, s, acc);
  if (!st) return WM_ERR;
  for (size_t i = 0; i < s->naggs; i++) {
    agg *a = &s->aggs[i];
    wm_value v;
    int p = arg_of(op, a, rec, &v);
    if (p == WM_ERR) return WM_ERR;
    if (!p) continue;
    if (a->d.kind == WM_SA_COUNT_DISTINCT) {
      if (v.type != WM_NIL && distinct_add(op, s, acc, i, &v) != WM_OK) return WM_ERR;
      st = (slot *)(void *)acc->u.s->data; /* (the state may have moved) */
      continue;
    }
    if (is_minmax(a) && wm_value_is_string(&v)) { /* MIN, MAX of strings: the bytes in the state */
      size_t sn;
      const char *sp = wm_value_str(&v, &sn);
      if (str_minmax(op, s, acc, i, sp, sn) != WM_OK) return WM_ERR;
      st = (slot *)(void *)acc->u.s->data;
      continue;
    }
    if (is_minmax(a) && st[i].t == WM_STR && v.type != WM_NIL)
      return wm_ctx_error(op->ctx, "%s(%s): a number among strings", kind_names[a->d.kind],
                          a->d.field ? a->d.field : "?");
    add_value(a, &st[i], &v);
  }
  if (s->changelog) return WM_OK; /* (aux: the last result, fire's) */
  if (aux->type != WM_INT) *aux = wm_int(0);
  aux->u.i++; /* the window's rows */
  return WM_OK;
}

static int sa_merge(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *bacc,
                    const wm_value *baux) {
  sqlagg *s = ud;
  size_t n = s->naggs * sizeof(slot);
  if (bacc->type != WM_STR || bacc->u.s->len < n) return WM_OK; /* b holds nothing */
  slot *a = own_state(op, s, acc);
  if (!a) return WM_ERR;
  const slot *b = (const slot *)(const void *)bacc->u.s->data;
  for (size_t i = 0; i < s->naggs; i++) {
    slot *x = &a[i];
    const slot *y = &b[i];
    int kind = s->aggs[i].d.kind;
    if (kind == WM_SA_COUNT_DISTINCT) { /* b's values (of this aggregate) into a's set */
      size_t o = s->aggs[i].own;
      uint64_t bit = s->aggs[i].bit;
      const slot *yo = &b[o];
      if (!table_ok(s, o, yo, bacc->u.s->len)) return bad_state(op, s, i);
      const dent *bt = (const dent *)(const void *)(bacc->u.s->data + yo->i);
      for (int64_t e = 0; e < yo->t; e++) {
        if (!bt[e].tag || (bit && !(bt[e].tag & bit))) continue;
        wm_value v = DENT_KIND(bt[e].tag) == 1 ? wm_int((int64_t)bt[e].bits) : wm_float(0.0);
        if (DENT_KIND(bt[e].tag) == 2) memcpy(&v.u.f, &bt[e].bits, sizeof v.u.f);
        if (distinct_add(op, s, acc, i, &v) != WM_OK) return WM_ERR;
      }
      a = (slot *)(void *)acc->u.s->data;
      continue;
    }
    if ((kind == WM_SA_MIN || kind == WM_SA_MAX) && y->t == WM_STR) { /* b's string, if better */
      if (!str_ok(s, y, bacc->u.s->len)) return bad_state(op, s, i);
      if (str_minmax(op, s, acc, i, bacc->u.s->data + y->i, (size_t)y->used) != WM_OK) return WM_ERR;
      a = (slot *)(void *)acc->u.s->data;
      continue;
    }
    if (kind == WM_SA_COUNT_STAR || kind == WM_SA_COUNT) {
      x->n += y->n;
    } else if (y->t == WM_NIL) {
      continue;
    } else if (x->t == WM_NIL) {
      *x = *y;
    } else if (kind == WM_SA_SUM || kind == WM_SA_AVG) {
      x->n += y->n;
      if (x->t == WM_INT && y->t == WM_INT) {
        x->i = (int64_t)((uint64_t)x->i + (uint64_t)y->i);
      } else {
        double xf = x->t == WM_INT ? (double)x->i : x->f, yf = y->t == WM_INT ? (double)y->i : y->f;
        x->f = xf + yf;
        x->t = WM_FLOAT;
      }
    } else if (x->t == WM_STR) {
      return wm_ctx_error(op->ctx, "%s(%s): a number among strings", kind_names[kind],
                          s->aggs[i].d.field ? s->aggs[i].d.field : "?");
    } else {
      x->n += y->n;
      wm_value xv = x->t == WM_INT ? wm_int(x->i) : wm_float(x->f);
      wm_value yv = y->t == WM_INT ? wm_int(y->i) : wm_float(y->f);
      int c = num_cmp(&yv, &xv);
      if (kind == WM_SA_MIN ? c < 0 : c > 0) {
        x->t = y->t;
        x->i = y->i;
        x->f = y->f;
      }
    }
  }
  int64_t rows = (aux->type == WM_INT ? aux->u.i : 0) + (baux->type == WM_INT ? baux->u.i : 0);
  *aux = wm_int(rows);
  return WM_OK;
}

static wm_value slot_result(const agg *a, const slot *sl) {
  switch (a->d.kind) {
  case WM_SA_COUNT_STAR:
  case WM_SA_COUNT:
  case WM_SA_COUNT_DISTINCT: return wm_int(sl->n);
  case WM_SA_AVG:
    if (sl->n == 0 || sl->t == WM_NIL) return wm_nil();
    if (sl->t == WM_INT) return wm_int(sl->i / sl->n); /* C truncates toward zero, as Java */
    return wm_float(sl->f / (double)sl->n);
  case WM_SA_SUM: /* (no value left after retractions: NULL, its running sum kept, as Lua's) */
    if (sl->n == 0 || sl->t == WM_NIL) return wm_nil();
    return sl->t == WM_INT ? wm_int(sl->i) : wm_float(sl->f);
  default:
    if (sl->t == WM_NIL) return wm_nil();
    return sl->t == WM_INT ? wm_int(sl->i) : wm_float(sl->f);
  }
}

void wm_sqlagg_result(const wm_winfn *fn, const wm_value *acc, size_t i, wm_value *out) {
  const sqlagg *s = fn->ud;
  *out = wm_nil();
  if (i >= s->naggs) return;
  if (acc->type != WM_STR || acc->u.s->len < slots_bytes(s)) {
    slot zero = {.n = 0, .i = 0, .f = 0.0, .t = WM_NIL};
    *out = slot_result(&s->aggs[i], &zero);
    return;
  }
  const slot *sl = &((const slot *)(const void *)acc->u.s->data)[i];
  if (s->retract && is_multiset(s->aggs[i].d.kind)) {
    *out = ms_result(s, &s->aggs[i], sl, acc->u.s->data, acc->u.s->len);
    return;
  }
  if (is_minmax(&s->aggs[i]) && sl->t == WM_STR) { /* (borrowed from the state) */
    if (str_ok(s, sl, acc->u.s->len))
      *out = sl->n ? wm_cstr(acc->u.s->data + sl->i, (size_t)sl->used) : wm_cstr("", 0);
    return;
  }
  *out = slot_result(&s->aggs[i], sl);
}

/* The key a Lua key function gives for a NULL group key (lua/wm/sql/plan/lower.lua's
 * NULL_KEY): the result row's key field is NULL. */
static int is_null_key(const wm_value *v) {
  size_t n;
  const char *p = wm_value_is_string(v) ? wm_value_str(v, &n) : NULL;
  return p && n == 7 && memcmp(p, "\0<NULL>", 7) == 0;
}

/* The result row of a window, or (vals not NULL: a changelog row) of those aggregates'
 * values, into *out (owned): WM_OK, or WM_ERR. */
static int result_row(sqlagg *s, wm_op *op, const wm_fire *f, const wm_value *vals, wm_value *out) {
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  wm_row *r = wm_row_new(s->schema);
  if (!r) return wm_ctx_error(ctx, "out of memory");
  for (size_t j = 0; j < s->nout; j++) {
    const wm_sqlagg_out *o = &s->out[j];
    wm_value v = wm_nil();
    switch (o->src) {
    case WM_SA_OUT_KEY:
      if (s->nkeys == 1) {
        v = *f->key;
      } else if (wm_key_part(f->key, (size_t)o->index, &v) < 0) {
        wm_row_release(h, r);
        return wm_ctx_error(ctx, "SQL aggregate: key part %d missing", o->index + 1);
      }
      if (is_null_key(&v)) continue; /* (a window's NULL key part too: key_by's null_key) */
      if (wm_value_copy(h, &r->fields[j], &v) != 0) {
        wm_row_release(h, r);
        return wm_ctx_error(ctx, "out of memory");
      }
      continue;
    case WM_SA_OUT_AGG: {
      wm_winfn fn = {.ud = s};
      if (vals) v = vals[o->index];
      else wm_sqlagg_result(&fn, f->acc, (size_t)o->index, &v);
      if (wm_value_is_string(&v)) { /* (a MIN or MAX of strings: borrowed) */
        if (wm_value_copy(h, &r->fields[j], &v) != 0) {
          wm_row_release(h, r);
          return wm_ctx_error(ctx, "out of memory");
        }
        continue;
      }
      break;
    }
    case WM_SA_OUT_START: v = wm_int(f->window.start); break;
    case WM_SA_OUT_END: v = wm_int(f->window.stop); break;
    default: v = wm_int(f->window.stop - 1); break;
    }
    r->fields[j] = v;
  }
  *out = wm_row_value(r);
  return WM_OK;
}

static int sa_fire(void *ud, wm_op *op, const wm_fire *f) {
  sqlagg *s = ud;
  wm_value out;
  if (result_row(s, op, f, NULL, &out) != WM_OK) return WM_ERR;
  int rc = wm_op_emit(op, 0, &out, f->max_ts);
  wm_value_release(&op->ctx->host, &out);
  return rc;
}

/* ---- an unwindowed GROUP BY: a changelog row when the result changed ------------------- */

/* One aggregate's last emitted value in aux (a WM_STR: naggs of them, then the bytes of the
 * strings among them): t WM_NIL, WM_INT, WM_FLOAT (the value's bits) or WM_STR (bits: its
 * offset in aux << 32 | its length). */
typedef struct last {
  int64_t t;
  uint64_t bits;
} last;

static wm_value last_value(const last *l, const wm_str *aux) {
  if (l->t == WM_INT) return wm_int((int64_t)l->bits);
  if (l->t == WM_STR) { /* (borrowed from aux) */
    uint64_t off = l->bits >> 32, n = l->bits & 0xffffffffu;
    if (off > aux->len || n > aux->len - off) return wm_nil();
    return wm_cstr(aux->data + off, (size_t)n);
  }
  if (l->t != WM_FLOAT) return wm_nil();
  double d;
  memcpy(&d, &l->bits, sizeof d);
  return wm_float(d);
}

/* As Lua's ==, which the Lua path compares with: NULL equals NULL, 1 equals 1.0, NaN nothing,
 * strings by their bytes. */
static int same_value(const wm_value *a, const wm_value *b) {
  if (a->type == WM_NIL || b->type == WM_NIL) return a->type == b->type;
  if (wm_value_is_string(a) || wm_value_is_string(b)) {
    if (!wm_value_is_string(a) || !wm_value_is_string(b)) return 0;
    size_t na, nb;
    const char *pa = wm_value_str(a, &na), *pb = wm_value_str(b, &nb);
    return na == nb && (na == 0 || memcmp(pa, pb, na) == 0);
  }
  if (a->type == WM_FLOAT && a->u.f != a->u.f) return 0;
  if (b->type == WM_FLOAT && b->u.f != b->u.f) return 0;
  return num_cmp(a, b) == 0;
}

/* Emits {k = kind, r = the row of vals}. */
static int emit_change(sqlagg *s, wm_op *op, const wm_fire *f, const char *kind, const wm_value *vals) {
  const wm_host *h = &op->ctx->host;
  wm_row *c = wm_row_new(s->cl);
  wm_str *k = wm_str_new(kind, 2);
  if (!c || !k) {
    if (c) wm_row_release(h, c);
    free(k);
    return wm_ctx_error(op->ctx, "out of memory");
  }
  c->fields[0].type = WM_STR;
  c->fields[0].u.s = k;
  if (result_row(s, op, f, vals, &c->fields[1]) != WM_OK) {
    wm_row_release(h, c);
    return WM_ERR;
  }
  wm_value out = wm_row_value(c);
  int rc = wm_op_emit(op, 0, &out, f->max_ts);
  wm_value_release(h, &out);
  return rc;
}

static int sa_fire_changelog(void *ud, wm_op *op, const wm_fire *f) {
  sqlagg *s = ud;
  size_t n = s->naggs ? s->naggs : 1, bytes = s->naggs * sizeof(last);
  wm_value small[32]; /* (no allocation per row for up to 16 aggregates) */
  wm_value *cur = 2 * n <= 32 ? small : calloc(2 * n, sizeof *cur);
  if (!cur) return wm_ctx_error(op->ctx, "out of memory");
  wm_value *prev = cur + n;
  wm_winfn fn = {.ud = s};
  for (size_t i = 0; i < s->naggs; i++) wm_sqlagg_result(&fn, f->acc, i, &cur[i]);
  wm_value *aux = (wm_value *)f->aux; /* the key's own (the keyed operator's rolling mode) */
  int first = aux->type != WM_STR || aux->u.s->len < bytes, rc = WM_OK;
  if (s->retract) { /* an updating input's: a group of no row goes, its last row as -D */
    wm_value *acc = (wm_value *)f->acc;
    if (acc->type != WM_STR) goto done; /* (a retraction of a group never seen) */
    if (acc->u.s->len >= slots_bytes(s) && ((const slot *)(const void *)acc->u.s->data)[s->naggs].n > 0)
      goto change;
    if (!first) {
      const last *l = (const last *)(const void *)aux->u.s->data;
      for (size_t i = 0; i < s->naggs; i++) prev[i] = last_value(&l[i], aux->u.s);
      rc = emit_change(s, op, f, "-D", prev);
    }
    wm_value_release(&op->ctx->host, acc);
    wm_value_release(&op->ctx->host, aux);
    *acc = wm_nil();
    *aux = wm_nil();
    goto done;
  }
change:
  if (!first) {
    const last *l = (const last *)(const void *)aux->u.s->data;
    int same = 1;
    for (size_t i = 0; i < s->naggs; i++) {
      prev[i] = last_value(&l[i], aux->u.s);
      if (!same_value(&prev[i], &cur[i])) same = 0;
    }
    if (same) goto done; /* as Flink's GroupAggFunction: an unchanged row is not emitted */
    if ((rc = emit_change(s, op, f, "-U", prev)) != WM_OK) goto done;
  }
  if ((rc = emit_change(s, op, f, first ? "+I" : "+U", cur)) != WM_OK) goto done;
  size_t need = bytes; /* the last values, then the strings' bytes */
  for (size_t i = 0; i < s->naggs; i++) {
    size_t sn = 0;
    if (wm_value_is_string(&cur[i])) (void)wm_value_str(&cur[i], &sn);
    if (sn > UINT32_MAX - 1 - need) {
      rc = wm_ctx_error(op->ctx, "SQL GROUP BY: a result row's strings are too long");
      goto done;
    }
    need += sn;
  }
  if (first || aux->u.s->refs != 1 || aux->u.s->len != need) {
    wm_str *big = malloc(sizeof(wm_str) + need + 1); /* as wm_str_new */
    if (!big) {
      rc = wm_ctx_error(op->ctx, "out of memory");
      goto done;
    }
    big->refs = 1;
    big->len = (uint32_t)need;
    big->data[need] = '\0';
    wm_value_release(&op->ctx->host, aux);
    aux->type = WM_STR;
    aux->flags = 0;
    aux->u.s = big;
  }
  last *l = (last *)(void *)aux->u.s->data;
  size_t off = bytes;
  for (size_t i = 0; i < s->naggs; i++) {
    l[i].t = cur[i].type;
    l[i].bits = 0;
    if (cur[i].type == WM_INT) {
      l[i].bits = (uint64_t)cur[i].u.i;
    } else if (cur[i].type == WM_FLOAT) {
      memcpy(&l[i].bits, &cur[i].u.f, sizeof l[i].bits);
    } else if (wm_value_is_string(&cur[i])) { /* (cur's strings are the acc's: not aux's) */
      size_t sn;
      const char *sp = wm_value_str(&cur[i], &sn);
      if (sn) memcpy(aux->u.s->data + off, sp, sn);
      l[i].t = WM_STR;
      l[i].bits = (uint64_t)off << 32 | (uint64_t)sn;
      off += sn;
    }
  }
done:
  if (cur != small) free(cur);
  return rc;
}

static void sa_free(void *ud) {
  sqlagg *s = ud;
  if (!s) return;
  for (size_t i = 0; s->aggs && i < s->naggs; i++) {
    agg *a = &s->aggs[i];
    free((char *)a->d.field);
    for (size_t k = 0; a->cond && k < a->d.ncond; k++) free((char *)a->cond[k].field.name);
    free(a->cond);
  }
  free(s->aggs);
  for (size_t j = 0; s->out && j < s->nout; j++) free((char *)s->out[j].name);
  free(s->out);
  wm_schema_release(s->schema);
  if (s->cl) wm_schema_release(s->cl);
  free(s);
}

static char *dup(const char *x) { return x ? strdup(x) : NULL; }

/* The COUNT(DISTINCT)s of one column share its first one's table (share; else each has its
 * own): up to 56 of them, a bit each in the entries' tags. */
static void share_tables(sqlagg *s, int share) {
  for (size_t i = 0; i < s->naggs; i++) {
    agg *a = &s->aggs[i];
    a->own = i;
    a->bit = 0;
    if (!share || a->d.kind != WM_SA_COUNT_DISTINCT || !a->d.field || a->d.eval) continue;
    for (size_t j = 0; j < i; j++) {
      agg *b = &s->aggs[j];
      if (b->own != j || b->d.kind != WM_SA_COUNT_DISTINCT || !b->d.field || b->d.eval ||
          strcmp(a->d.field, b->d.field) != 0)
        continue;
      int used = 0; /* (the bits this table gives out) */
      for (size_t k = 0; k < i; k++) used += s->aggs[k].own == j;
      if (used >= 56) continue;
      if (!b->bit) b->bit = UINT64_C(1) << 8;
      a->own = j;
      a->bit = UINT64_C(1) << (8 + used);
      break;
    }
  }
}

int wm_winfn_sqlagg(wm_winfn *fn, const wm_sqlagg_spec *spec, wm_error *err) {
  sqlagg *s = calloc(1, sizeof *s);
  if (!s) goto oom;
  s->nkeys = spec->nkeys;
  s->naggs = spec->naggs;
  if (!(s->aggs = calloc(spec->naggs ? spec->naggs : 1, sizeof *s->aggs))) goto oom;
  for (size_t i = 0; i < spec->naggs; i++) {
    agg *a = &s->aggs[i];
    a->d = spec->aggs[i];
    a->d.field = NULL;
    a->d.cond = NULL;
    if (a->d.kind < WM_SA_COUNT_STAR || a->d.kind > WM_SA_COUNT_DISTINCT) {
      wm_error_set(err, "SQL aggregate %zu: unknown kind %d", i + 1, a->d.kind);
      goto fail;
    }
    if (a->d.kind != WM_SA_COUNT_STAR && !spec->aggs[i].field && !a->d.eval) {
      wm_error_set(err, "SQL aggregate %zu (%s): no argument", i + 1, kind_names[a->d.kind]);
      goto fail;
    }
    if (spec->aggs[i].field && !(a->d.field = dup(spec->aggs[i].field))) goto oom;
    a->field = (wm_field){.name = a->d.field, .index = -1};
    if (a->d.ncond) {
      a->d.ncond = 0;
      if (!(a->cond = calloc(spec->aggs[i].ncond, sizeof *a->cond))) goto oom;
      for (size_t k = 0; k < spec->aggs[i].ncond; k++) {
        const wm_sqlagg_cond *c = &spec->aggs[i].cond[k];
        char *name = dup(c->field);
        if (!name) goto oom;
        a->cond[k] = (cond){.field = {.name = name, .index = -1}, .op = c->op, .value = c->value};
        a->d.ncond++;
        if (!is_num(&c->value) || c->op < WM_SA_LT || c->op > WM_SA_NE) {
          wm_error_set(err, "SQL aggregate %zu: FILTER on '%s' needs a comparison with a number", i + 1,
                       name);
          goto fail;
        }
      }
    }
  }
  share_tables(s, 1);
  s->nout = spec->nout;
  if (!(s->out = calloc(spec->nout ? spec->nout : 1, sizeof *s->out))) goto oom;
  const char **names = calloc(spec->nout ? spec->nout : 1, sizeof *names);
  uint8_t *types = calloc(spec->nout ? spec->nout : 1, 1);
  if (!names || !types) {
    free(names);
    free(types);
    goto oom;
  }
  for (size_t j = 0; j < spec->nout; j++) {
    s->out[j] = spec->out[j];
    s->out[j].name = dup(spec->out[j].name);
    names[j] = s->out[j].name ? s->out[j].name : "";
    types[j] = WM_FT_ANY;
    int src = spec->out[j].src, idx = spec->out[j].index;
    if ((src == WM_SA_OUT_KEY && (idx < 0 || (size_t)idx >= spec->nkeys)) ||
        (src == WM_SA_OUT_AGG && (idx < 0 || (size_t)idx >= spec->naggs)) || src < WM_SA_OUT_KEY ||
        src > WM_SA_OUT_TIME) {
      wm_error_set(err, "SQL aggregate: result field %zu names nothing", j + 1);
      free(names);
      free(types);
      goto fail;
    }
  }
  s->schema = wm_schema_new((uint32_t)spec->nout, names, types);
  free(names);
  free(types);
  if (!s->schema) goto oom;
  memset(fn, 0, sizeof *fn);
  fn->add = sa_add;
  fn->merge = sa_merge;
  fn->fire = sa_fire;
  fn->free = sa_free;
  fn->ud = s;
  return 0;
oom:
  wm_error_set(err, "out of memory");
fail:
  sa_free(s);
  return -1;
}

int wm_keyedfn_sqlagg(wm_winfn *fn, const wm_sqlagg_spec *spec, wm_error *err) {
  for (size_t j = 0; j < spec->nout; j++)
    if (spec->out[j].src != WM_SA_OUT_KEY && spec->out[j].src != WM_SA_OUT_AGG) {
      wm_error_set(err, "SQL GROUP BY without a window: result field %zu is a window's bound", j + 1);
      return -1;
    }
  if (wm_winfn_sqlagg(fn, spec, err) != 0) return -1;
  sqlagg *s = fn->ud;
  static const char *const names[2] = {"k", "r"};
  static const uint8_t types[2] = {WM_FT_STRING, WM_FT_ANY};
  if (!(s->cl = wm_schema_new(2, names, types))) {
    sa_free(s);
    wm_error_set(err, "out of memory");
    return -1;
  }
  s->changelog = 1;
  if (spec->updating) {
    s->retract = 1;
    share_tables(s, 0); /* (an updating input's COUNT(DISTINCT)s are multisets of their own) */
    s->fk = (wm_field){.name = "k", .index = -1};
    s->fr = (wm_field){.name = "r", .index = -1};
    s->unwrap = spec->unwrap;
    s->unwrap_ud = spec->unwrap_ud;
  }
  fn->fire = sa_fire_changelog;
  fn->merge = NULL;
  return 0;
}
