/* SQL regular joins in C (ops/wm_sqljoin.h). */
#include "ops/wm_sqljoin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "base/wm_hash.h"
#include "graph/wm_statefmt.h"
#include "ops/wm_keyidx.h"
#include "time/wm_time.h"

/* A kept row, how many times it came, and (with a TTL) when it was last written. */
typedef struct jent {
  wm_row *r; /* owned */
  uint32_t n;
  int64_t t;
} jent;

/* A side's kept rows of one key, in the order they first came. */
typedef struct jside {
  jent *e;
  uint32_t len, cap;
} jside;

typedef struct jkey {
  wm_value key; /* owned WM_STR: the key's bytes (key_bytes); nil in a free slot */
  uint64_t hash;
  jside s[2];
  uint32_t next_free; /* free slots: the next free slot + 1 (0: none) */
  uint8_t live;
} jkey;

/* The row index: a kept row of (slot, side), found by its columns' hash. slot1 = slot + 1
 * (0: an empty place); at = side << 31 | the row's index in its jside. */
typedef struct rref {
  uint32_t h;
  uint32_t slot1;
  uint32_t at;
} rref;

#define AT_SIDE 0x80000000u

typedef struct sqljoin {
  size_t nkeys;
  size_t nf[2];
  char **names[2];      /* the sides' columns (owned) */
  size_t *key[2];       /* the key parts' columns */
  uint8_t *kfloat;      /* nkeys flags */
  wm_field *f[2];       /* reading a record's columns */
  wm_schema *schema[2]; /* of the kept rows */
  wm_schema *out;       /* of the joined rows */
  size_t nout;
  uint8_t *oside;
  size_t *ofield;
  wm_keysel ks[2];
  jkey *k;
  uint32_t nk, capk;  /* slots used (live or free), allocated */
  uint32_t free_head; /* first free slot + 1 (0: none) */
  uint32_t nlive;
  uint32_t sweep;     /* the next slot the TTL's sweep looks at */
  int64_t ttl;        /* ms; 0: none */
  int64_t now;        /* the processing time of the record at hand (with a TTL) */
  wm_keyidx ix;
  rref *rx;
  size_t rcap, rn;
  wm_value *vals; /* scratch: the columns of the record at hand (borrowed from it) */
  char *kb;       /* scratch: its key's bytes */
  size_t kcap;
  size_t ndistinct[2];
  uint64_t nrows[2];
  char *meaning; /* the columns and keys, checked by a restore */
  int upd[2];        /* the side is updating: its records are changes {k, r} */
  int upd_out;       /* the output is changes (a side is updating) */
  wm_schema *cl;     /* of the changes: {k, r} */
  wm_value kinds[4]; /* owned WM_STR "+I", "+U", "-U", "-D" */
  wm_field fk[2], fr[2]; /* the fields k and r of a side's C row changes */
  wm_sqljoin_unwrap unwrap;
  void *unwrap_ud;
} sqljoin;

enum { K_PI, K_PU, K_MU, K_MD };

/* ---- values: the Lua path's identity of a value (its type and value) --------------------- */

/* A float's bits, NaNs made one per sign (Lua's "%.17g" tells only "nan" from "-nan"). */
static uint64_t fbits(double d) {
  if (isnan(d)) return signbit(d) ? 0xfff8000000000000ULL : 0x7ff8000000000000ULL;
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

static uint64_t val_hash(const wm_value *v) {
  switch (v->type) {
  case WM_NIL: return 0x51ed270b1f3a9c55ULL;
  case WM_BOOL: return v->u.b ? 0x2545f4914f6cdd1dULL : 0x6a09e667f3bcc909ULL;
  case WM_INT: return wm_mix64((uint64_t)v->u.i ^ WM_HASH_ODD2);
  case WM_FLOAT: return wm_mix64(fbits(v->u.f) ^ WM_HASH_GOLDEN);
  case WM_CSTR:
  case WM_STR: {
    size_t n;
    const char *p = wm_value_str(v, &n);
    return wm_fnv1a64(p, n);
  }
  default: return 0;
  }
}

/* Whether two scalar values are one value of one type (an integer is not a float). */
static bool val_same(const wm_value *a, const wm_value *b) {
  bool sa = wm_value_is_string(a), sb = wm_value_is_string(b);
  if (sa || sb) {
    if (!(sa && sb)) return false;
    size_t na, nb;
    const char *pa = wm_value_str(a, &na), *pb = wm_value_str(b, &nb);
    return na == nb && memcmp(pa, pb, na) == 0;
  }
  if (a->type != b->type) return false;
  switch (a->type) {
  case WM_NIL: return true;
  case WM_BOOL: return a->u.b == b->u.b;
  case WM_INT: return a->u.i == b->u.i;
  case WM_FLOAT: return fbits(a->u.f) == fbits(b->u.f);
  default: return false;
  }
}

static bool scalar(const wm_value *v) { return v->type != WM_ROW && v->type != WM_SLOT; }

/* ---- keys ---------------------------------------------------------------------------------- */

static int kb_reserve(sqljoin *s, size_t need) {
  if (need <= s->kcap) return 0;
  size_t cap = s->kcap ? s->kcap : 64;
  while (cap < need) cap *= 2;
  char *n = realloc(s->kb, cap);
  if (!n) return -1;
  s->kb = n;
  s->kcap = cap;
  return 0;
}

/* The key of a side's row (its columns in vals) as bytes in s->kb: per part a type byte and
 * the value ('n' integer, 'f' float, 'b' boolean: 8, 8, 1 bytes; 's' string: its length in
 * 4 bytes, then its bytes). 1 (*len set), 0 when a part is NULL, -1 out of memory, -2 a part
 * that is not a scalar. */
static int key_bytes(sqljoin *s, int side, const wm_value *vals, size_t *len) {
  size_t at = 0;
  for (size_t i = 0; i < s->nkeys; i++) {
    const wm_value *v = &vals[s->key[side][i]];
    if (v->type == WM_NIL) return 0;
    if (!scalar(v)) return -2;
    size_t sl = 0;
    const char *sp = wm_value_is_string(v) ? wm_value_str(v, &sl) : NULL;
    if (kb_reserve(s, at + 9 + (sp ? sl : 0)) != 0) return -1;
    char *p = s->kb + at;
    if (sp) {
      uint32_t l32 = (uint32_t)sl;
      *p++ = 's';
      memcpy(p, &l32, 4);
      memcpy(p + 4, sp, sl);
      at += 5 + sl;
    } else if (v->type == WM_BOOL) {
      p[0] = 'b';
      p[1] = v->u.b ? 1 : 0;
      at += 2;
    } else if (v->type == WM_FLOAT || (s->kfloat[i] && v->type == WM_INT)) {
      double x = v->type == WM_FLOAT ? v->u.f : (double)v->u.i;
      if (s->kfloat[i]) x += 0.0; /* (the planner's r[f] + 0.0: -0.0 becomes 0.0) */
      uint64_t b = fbits(x);
      p[0] = 'f';
      memcpy(p + 1, &b, 8);
      at += 9;
    } else {
      p[0] = 'n';
      memcpy(p + 1, &v->u.i, 8);
      at += 9;
    }
  }
  *len = at;
  return 1;
}

static const wm_value *slot_key(void *ud, uint32_t i, uint64_t *hash) {
  const jkey *e = &((const sqljoin *)ud)->k[i];
  *hash = e->hash;
  return &e->key;
}

/* The slot of the key in s->kb[0 .. len), created when missing (*made 1). */
static int key_slot(wm_op *op, sqljoin *s, size_t len, uint32_t *out, int *made) {
  wm_value kv = wm_cstr(s->kb, len);
  uint64_t h = wm_key_hash(&kv);
  uint32_t found = wm_keyidx_find(&s->ix, &kv, h);
  *made = 0;
  if (found != WM_KEYIDX_NONE) {
    *out = found;
    return WM_OK;
  }
  uint32_t slot;
  if (s->free_head) {
    slot = s->free_head - 1;
  } else {
    if (s->nk == s->capk) {
      uint32_t cap = s->capk ? s->capk * 2 : 64;
      jkey *n = realloc(s->k, cap * sizeof *n);
      if (!n) return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
      s->k = n;
      s->capk = cap;
    }
    slot = s->nk;
    memset(&s->k[slot], 0, sizeof s->k[slot]);
  }
  jkey *e = &s->k[slot];
  wm_str *str = wm_str_new(s->kb, len);
  if (!str) return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
  uint32_t next_free = e->next_free;
  memset(e, 0, sizeof *e);
  e->key.type = WM_STR;
  e->key.u.s = str;
  e->hash = h;
  if (wm_keyidx_add(&s->ix, slot) != 0) {
    wm_value_release(NULL, &e->key);
    e->next_free = next_free;
    return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
  }
  if (slot == s->nk) s->nk++;
  else s->free_head = next_free;
  e->live = 1;
  s->nlive++;
  *out = slot;
  *made = 1;
  return WM_OK;
}

/* Frees the slot of a key whose sides are both empty. */
static void key_drop(sqljoin *s, uint32_t slot) {
  jkey *e = &s->k[slot];
  wm_keyidx_remove(&s->ix, slot);
  wm_value_release(NULL, &e->key); /* (a WM_STR) */
  free(e->s[0].e);
  free(e->s[1].e);
  memset(e, 0, sizeof *e);
  e->next_free = s->free_head;
  s->free_head = slot + 1;
  s->nlive--;
}

/* ---- the row index ------------------------------------------------------------------------- */

static uint64_t row_hash(const sqljoin *s, int side, const wm_value *vals) {
  uint64_t h = WM_HASH_GOLDEN * (uint64_t)(side + 1);
  for (size_t i = 0; i < s->nf[side]; i++) h = wm_mix64(h ^ val_hash(&vals[i]));
  return h;
}

static uint32_t ref_hash(uint64_t rh, uint32_t slot) {
  return (uint32_t)wm_mix64(rh + (uint64_t)slot * WM_HASH_ODD2);
}

static const jent *ref_entry(const sqljoin *s, const rref *r) {
  return &s->k[r->slot1 - 1].s[(r->at & AT_SIDE) != 0].e[r->at & ~AT_SIDE];
}

/* The place of the row of (slot, side) whose columns are vals: its own (*found 1) or the
 * empty place where it would go. */
static size_t rx_place(const sqljoin *s, uint32_t h, uint32_t slot, int side, const wm_value *vals,
                       int *found) {
  size_t mask = s->rcap - 1, p = h & mask;
  uint32_t want_side = side ? AT_SIDE : 0;
  for (;;) {
    const rref *r = &s->rx[p];
    if (r->slot1 == 0) {
      *found = 0;
      return p;
    }
    if (r->h == h && r->slot1 == slot + 1 && (r->at & AT_SIDE) == want_side) {
      const wm_row *row = ref_entry(s, r)->r;
      size_t i = 0, n = s->nf[side];
      while (i < n && val_same(&row->fields[i], &vals[i])) i++;
      if (i == n) {
        *found = 1;
        return p;
      }
    }
    p = (p + 1) & mask;
  }
}

/* Room for one more row in the index (rehashed at 3/4 full). */
static int rx_grow(sqljoin *s) {
  if ((s->rn + 1) * 4 <= s->rcap * 3) return 0;
  size_t cap = s->rcap ? s->rcap * 2 : 1024;
  rref *n = calloc(cap, sizeof *n);
  if (!n) return -1;
  for (size_t i = 0; i < s->rcap; i++) {
    const rref *r = &s->rx[i];
    if (!r->slot1) continue;
    size_t p = r->h & (cap - 1);
    while (n[p].slot1) p = (p + 1) & (cap - 1);
    n[p] = *r;
  }
  free(s->rx);
  s->rx = n;
  s->rcap = cap;
  return 0;
}

/* Takes the entry at place p out of the row index (backward shift: the entries after it in
 * its run move back to where a probe finds them). */
static void rx_delete(sqljoin *s, size_t p) {
  size_t mask = s->rcap - 1, i = p, j = p;
  for (;;) {
    s->rx[i].slot1 = 0;
    for (;;) {
      j = (j + 1) & mask;
      if (!s->rx[j].slot1) {
        s->rn--;
        return;
      }
      size_t home = s->rx[j].h & mask;
      /* j stays when its home is cyclically in (i, j] */
      if (i <= j ? (i < home && home <= j) : (i < home || home <= j)) continue;
      s->rx[i] = s->rx[j];
      i = j;
      break;
    }
  }
}

/* The place in the row index of entry `at` of (slot, side). */
static size_t rx_of(const sqljoin *s, uint32_t slot, int side, uint32_t at) {
  const wm_row *r = s->k[slot].s[side].e[at].r;
  int found;
  size_t p = rx_place(s, ref_hash(row_hash(s, side, r->fields), slot), slot, side, r->fields, &found);
  return p; /* (found: every kept row is in the index) */
}

/* With a TTL: drops the rows of (slot, side) not written for ttl ms at s->now, as the Lua
 * path's expire (Flink's OnCreateAndWrite, NeverReturnExpired): the others keep their order. */
static void expire_side(const wm_host *h, sqljoin *s, uint32_t slot, int side) {
  jside *b = &s->k[slot].s[side];
  uint32_t w = 0;
  for (uint32_t r = 0; r < b->len; r++) {
    if (wm_time_add_sat(b->e[r].t, s->ttl) <= s->now) {
      rx_delete(s, rx_of(s, slot, side, r));
      s->ndistinct[side]--;
      s->nrows[side] -= b->e[r].n;
      wm_row_release(h, b->e[r].r);
      b->e[r].r = NULL;
      continue;
    }
    if (w != r) {
      size_t p = rx_of(s, slot, side, r); /* (found through entry r: not moved yet) */
      b->e[w] = b->e[r];
      s->rx[p].at = (side ? AT_SIDE : 0) | w;
    }
    w++;
  }
  b->len = w;
}

static int jside_push(jside *b, wm_row *r, uint32_t n, int64_t t) {
  if (b->len == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 2;
    jent *e = realloc(b->e, cap * sizeof *e);
    if (!e) return -1;
    b->e = e;
    b->cap = cap;
  }
  b->e[b->len].r = r;
  b->e[b->len].n = n;
  b->e[b->len].t = t;
  b->len++;
  return 0;
}

static void jside_free(const wm_host *h, jside *b) {
  for (uint32_t j = 0; j < b->len; j++) wm_row_release(h, b->e[j].r);
  free(b->e);
  memset(b, 0, sizeof *b);
}

/* A kept row of the side made from vals (copied). NULL when out of memory. */
static wm_row *row_of(const wm_host *h, sqljoin *s, int side, const wm_value *vals) {
  wm_row *r = wm_row_new(s->schema[side]);
  if (!r) return NULL;
  for (size_t i = 0; i < s->nf[side]; i++)
    if (wm_value_copy(h, &r->fields[i], &vals[i]) != 0) {
      wm_row_release(h, r);
      return NULL;
    }
  return r;
}

/* Adds the row vals of (slot, side): one more of a kept row, or a new one at the end. Its
 * entry's index in *at. */
static int keep_row(wm_op *op, sqljoin *s, uint32_t slot, int side, const wm_value *vals, uint32_t *at) {
  const wm_host *host = &op->ctx->host;
  if (rx_grow(s) != 0) return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
  uint32_t h = ref_hash(row_hash(s, side, vals), slot);
  int found;
  size_t p = rx_place(s, h, slot, side, vals, &found);
  jside *b = &s->k[slot].s[side];
  s->nrows[side]++;
  if (found) {
    *at = s->rx[p].at & ~AT_SIDE;
    b->e[*at].n++;
    b->e[*at].t = s->now; /* (a write: with a TTL, it renews the row) */
    return WM_OK;
  }
  if (b->len >= AT_SIDE - 1) {
    s->nrows[side]--;
    return wm_ctx_error(op->ctx, "the SQL regular join keeps more than 2^31 rows of one key");
  }
  wm_row *r = row_of(host, s, side, vals);
  if (!r || jside_push(b, r, 1, s->now) != 0) {
    if (r) wm_row_release(host, r);
    s->nrows[side]--;
    return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
  }
  *at = b->len - 1;
  s->rx[p].h = h;
  s->rx[p].slot1 = slot + 1;
  s->rx[p].at = (side ? AT_SIDE : 0) | *at;
  s->rn++;
  s->ndistinct[side]++;
  return WM_OK;
}

/* ---- records --------------------------------------------------------------------------------- */

/* An error about a record: the message is in the context's error; add the record. */
static int with_record(wm_op *op, const wm_value *rec) { return wm_op_fail_record(op, rec); }

/* One joined row of l and r, emitted `times` times (as a change of kind s->kinds[kind] when
 * the output is updating). */
static int emit_pair(wm_op *op, sqljoin *s, const wm_row *l, const wm_row *r, uint32_t times, int64_t ts,
                     int kind) {
  const wm_host *host = &op->ctx->host;
  wm_row *o = wm_row_new(s->out);
  if (!o) return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
  for (size_t i = 0; i < s->nout; i++) {
    const wm_row *src = s->oside[i] ? r : l;
    /* (kept values are owned: a copy adds a reference, or copies a scalar) */
    if (wm_value_copy(host, &o->fields[i], &src->fields[s->ofield[i]]) != 0) {
      wm_row_release(host, o);
      return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
    }
  }
  wm_value v = wm_row_value(o);
  if (s->upd_out) { /* {k = kind, r = the joined row} (the change takes o) */
    wm_row *c = wm_row_new(s->cl);
    if (!c) {
      wm_row_release(host, o);
      return wm_ctx_error(op->ctx, "out of memory in the SQL regular join");
    }
    c->fields[0] = s->kinds[kind];
    wm_value_retain(host, &c->fields[0]); /* (a WM_STR: one more reference, cannot fail) */
    c->fields[1] = v;
    v = wm_row_value(c);
    o = c;
  }
  int rc = WM_OK;
  for (uint32_t t = 0; t < times && rc == WM_OK; t++) rc = wm_op_emit(op, 0, &v, ts);
  wm_row_release(host, o);
  return rc;
}

/* With a TTL, after each record: two more slots looked at in turn, their expired rows
 * dropped and a key left with none freed, so that keys no record comes to any more free their
 * memory (what a key shows is the same: its expired rows go before it is read anyway). */
static void sweep(const wm_host *h, sqljoin *s) {
  for (int i = 0; i < 2 && s->nk > 0; i++) {
    if (s->sweep >= s->nk) s->sweep = 0;
    uint32_t slot = s->sweep++;
    if (!s->k[slot].live) continue;
    expire_side(h, s, slot, 0);
    expire_side(h, s, slot, 1);
    if (!s->k[slot].s[0].len && !s->k[slot].s[1].len) key_drop(s, slot);
  }
}

/* Takes one count of the kept row vals of (slot, side) (a retraction): its entry goes at count
 * 0, the entries after it moving up one (their order kept). Nothing when none is kept. */
static void unkeep_row(const wm_host *host, sqljoin *s, uint32_t slot, int side, const wm_value *vals) {
  if (!s->rcap) return;
  uint32_t h = ref_hash(row_hash(s, side, vals), slot);
  int found;
  size_t p = rx_place(s, h, slot, side, vals, &found);
  if (!found) return;
  jside *b = &s->k[slot].s[side];
  uint32_t at = s->rx[p].at & ~AT_SIDE;
  s->nrows[side]--;
  if (b->e[at].n > 1) {
    b->e[at].n--;
    b->e[at].t = s->now; /* (a write: with a TTL, it renews the row) */
    return;
  }
  rx_delete(s, p);
  s->ndistinct[side]--;
  wm_row_release(host, b->e[at].r);
  for (uint32_t r = at + 1; r < b->len; r++) {
    size_t q = rx_of(s, slot, side, r); /* (found through entry r: not moved yet) */
    b->e[r - 1] = b->e[r];
    s->rx[q].at = (side ? AT_SIDE : 0) | (r - 1);
  }
  b->len--;
}

/* The kind of a change (a C row {k, r}, or through s->unwrap) and its row (*row owned when
 * *owned). K_* or -1 (not a change: the error set). */
static int change_of(wm_op *op, sqljoin *s, int side, const wm_value *rec, wm_value *row, int *owned) {
  wm_ctx *ctx = op->ctx;
  *owned = 0;
  *row = wm_nil();
  int sign = 0;
  char letter = 0;
  if (rec->type == WM_ROW) {
    wm_value k = wm_nil();
    if (wm_field_get(&ctx->host, &s->fk[side], rec, &k, &ctx->error) != 0 ||
        wm_field_get(&ctx->host, &s->fr[side], rec, row, &ctx->error) != 0)
      return -1;
    size_t n = 0;
    const char *p = wm_value_is_string(&k) ? wm_value_str(&k, &n) : NULL;
    if (p && n == 2) {
      sign = p[0] == '+' ? 1 : p[0] == '-' ? -1 : 0;
      letter = p[1];
    }
    if (row->type != WM_ROW && row->type != WM_SLOT) sign = 0;
  } else if (s->unwrap) {
    if (s->unwrap(s->unwrap_ud, rec, &sign, &letter, row, &ctx->error) != 0) return -1;
    *owned = 1;
  }
  if (sign > 0 && (letter == 'I' || letter == 'U')) return letter == 'I' ? K_PI : K_PU;
  if (sign < 0 && (letter == 'U' || letter == 'D')) return letter == 'U' ? K_MU : K_MD;
  if (*owned) wm_value_release(&ctx->host, row);
  *owned = 0;
  wm_ctx_error(ctx, "the SQL regular join's %s input is updating: a record is not a change "
                    "{k = \"+I\"|\"+U\"|\"-U\"|\"-D\", r = row}",
               side ? "right" : "left");
  return -1;
}

/* A record's row (vals) of a side, the kind of change it is (K_PI for an append-only side). */
static int join_row(wm_op *op, sqljoin *s, int side, const wm_value *rec, int kind, int64_t ts) {
  wm_ctx *ctx = op->ctx;
  size_t nf = s->nf[side];
  wm_value *vals = s->vals;
  for (size_t i = 0; i < nf; i++) {
    const wm_value *p = wm_field_peek(&s->f[side][i], rec);
    if (p) vals[i] = *p;
    else if (wm_field_get(&ctx->host, &s->f[side][i], rec, &vals[i], &ctx->error) != 0)
      return with_record(op, rec);
    if (!scalar(&vals[i])) {
      wm_ctx_error(ctx, "the SQL regular join's %s input: column '%s' is not a scalar (a row or "
                        "a Lua table), which the join in C does not keep (WMRUN_SQL_JOIN=lua runs it "
                        "in Lua)",
                   side ? "right" : "left", s->names[side][i]);
      return with_record(op, rec);
    }
  }
  size_t klen = 0;
  int kr = key_bytes(s, side, vals, &klen);
  if (kr == 0) return WM_OK; /* a NULL key meets nothing and is not kept */
  if (kr < 0) return wm_ctx_error(ctx, "out of memory in the SQL regular join");
  uint32_t slot = 0, at = 0;
  int made = 0;
  if (s->ttl > 0) s->now = wm_ctx_now(ctx);
  int add = kind == K_PI || kind == K_PU;
  if (add) {
    if (key_slot(op, s, klen, &slot, &made) != WM_OK) return WM_ERR;
  } else { /* a retraction of a key never seen meets nothing and takes nothing */
    wm_value kv = wm_cstr(s->kb, klen);
    slot = wm_keyidx_find(&s->ix, &kv, wm_key_hash(&kv));
    if (slot == WM_KEYIDX_NONE) {
      if (s->ttl > 0) sweep(&ctx->host, s);
      return WM_OK;
    }
  }
  if (s->ttl > 0 && !made) { /* the key's expired rows go before it is read (both sides) */
    expire_side(&ctx->host, s, slot, side);
    expire_side(&ctx->host, s, slot, !side);
  }
  const wm_row *mine = NULL;
  wm_row *gone = NULL; /* a retraction's row as a C row (a kept row's may be freed) */
  if (add) {
    if (keep_row(op, s, slot, side, vals, &at) != WM_OK) return WM_ERR;
    mine = s->k[slot].s[side].e[at].r;
  } else {
    unkeep_row(&ctx->host, s, slot, side, vals);
    if (s->k[slot].s[!side].len) {
      if (!(gone = row_of(&ctx->host, s, side, vals))) return wm_ctx_error(ctx, "out of memory in the SQL regular join");
      mine = gone;
    }
  }
  /* the other side's rows of the key, in the order they first came, each count times (the
   * keyed state does not move while they go out: nothing downstream adds to it) */
  const jkey *e = &s->k[slot];
  const jside *o = &e->s[!side];
  int rc = WM_OK;
  for (uint32_t j = 0; j < o->len && rc == WM_OK; j++) {
    const jent *x = &o->e[j];
    rc = side ? emit_pair(op, s, x->r, mine, x->n, ts, kind) : emit_pair(op, s, mine, x->r, x->n, ts, kind);
  }
  if (gone) wm_row_release(&ctx->host, gone);
  if (rc != WM_OK) return rc;
  if (!add && !e->s[0].len && !e->s[1].len) key_drop(s, slot);
  if (s->ttl > 0) sweep(&ctx->host, s);
  return WM_OK;
}

static int sj_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  sqljoin *s = op->impl;
  int side = wm_op_input_of(op, chan);
  if (!s->upd[side]) return join_row(op, s, side, rec, K_PI, ts);
  wm_value row;
  int owned;
  int kind = change_of(op, s, side, rec, &row, &owned);
  if (kind < 0) return with_record(op, rec);
  int rc = join_row(op, s, side, &row, kind, ts);
  if (owned) wm_value_release(&op->ctx->host, &row);
  return rc;
}

/* ---- life --------------------------------------------------------------------------------- */

static void release_keys(const wm_host *h, sqljoin *s) {
  for (uint32_t i = 0; i < s->nk; i++) {
    jkey *e = &s->k[i]; /* (a free slot is zeroed: nothing to release) */
    jside_free(h, &e->s[0]);
    jside_free(h, &e->s[1]);
    wm_value_release(h, &e->key);
  }
}

/* Back to no key (the memory of the tables kept). */
static void clear_keys(const wm_host *h, sqljoin *s) {
  release_keys(h, s);
  s->nk = s->free_head = s->nlive = s->sweep = 0;
  wm_keyidx_clear(&s->ix);
  if (s->rx) memset(s->rx, 0, s->rcap * sizeof *s->rx);
  s->rn = 0;
  s->ndistinct[0] = s->ndistinct[1] = 0;
  s->nrows[0] = s->nrows[1] = 0;
}

static void sj_destroy(const wm_host *h, sqljoin *s) {
  if (!s) return;
  release_keys(h, s);
  free(s->k);
  wm_keyidx_free(&s->ix);
  free(s->rx);
  for (int d = 0; d < 2; d++) {
    for (size_t i = 0; s->names[d] && i < s->nf[d]; i++) free(s->names[d][i]);
    free(s->names[d]);
    free(s->key[d]);
    free(s->f[d]);
    if (s->schema[d]) wm_schema_release(s->schema[d]);
    if (s->ks[d].free) s->ks[d].free(s->ks[d].ud);
  }
  if (s->out) wm_schema_release(s->out);
  if (s->cl) wm_schema_release(s->cl);
  for (int i = 0; i < 4; i++) wm_value_release(h, &s->kinds[i]);
  free(s->kfloat);
  free(s->oside);
  free(s->ofield);
  free(s->vals);
  free(s->kb);
  free(s->meaning);
  free(s);
}

static void sj_free(wm_op *op) { sj_destroy(&op->ctx->host, op->impl); }

/* ---- checkpoints ----------------------------------------------------------------------------
 * version, 'Q', the meaning (the sides' columns and keys: a restore into a join of other
 * columns is refused), the number of keys, then per key and side (left, right) the number of
 * its distinct rows and each row's count and columns, in the order they first came. The key
 * is not written: it is the rows' (key_bytes), and its key group the key selector's of the
 * side's first row. */

static int sj_snapshot(wm_op *op, wm_state_io *io) {
  sqljoin *s = op->impl;
  wm_state_put_header(io, 'Q');
  wm_value m = wm_cstr(s->meaning, strlen(s->meaning));
  if (wm_state_put_value(op, io, &m, "the join's meaning") != WM_OK) return WM_ERR;
  uint32_t live = 0;
  for (uint32_t i = 0; i < s->nk; i++) live += s->k[i].live && (s->k[i].s[0].len || s->k[i].s[1].len);
  wm_state_put_u(io, live);
  for (uint32_t i = 0; i < s->nk; i++) {
    const jkey *e = &s->k[i];
    if (!e->live || (!e->s[0].len && !e->s[1].len)) continue; /* (free, or all its rows expired) */
    for (int d = 0; d < 2; d++) {
      wm_state_put_u(io, e->s[d].len);
      for (uint32_t j = 0; j < e->s[d].len; j++) {
        wm_state_put_u(io, e->s[d].e[j].n);
        if (s->ttl > 0) wm_state_put_i(io, e->s[d].e[j].t);
        for (size_t c = 0; c < s->nf[d]; c++)
          if (wm_state_put_value(op, io, &e->s[d].e[j].r->fields[c], "a kept row's column") != WM_OK)
            return WM_ERR;
      }
    }
  }
  return wm_state_put_done(op, io);
}

/* Reads one key's rows into b[0], b[1] (owned by the caller, also on failure). */
static int read_key_rows(wm_op *op, sqljoin *s, wm_state_rd *r, jside b[2]) {
  const wm_host *h = &op->ctx->host;
  for (int d = 0; d < 2; d++) {
    uint64_t n;
    if (wm_state_get_count(r, &n, 1 + s->nf[d], "the number of a key's rows") != WM_OK) return WM_ERR;
    if (n >= AT_SIDE - 1) return wm_state_bad(r, "%llu rows of a key", (unsigned long long)n);
    for (uint64_t j = 0; j < n; j++) {
      uint64_t cnt;
      if (wm_state_get_u(r, &cnt, "a kept row's count") != WM_OK) return WM_ERR;
      if (cnt < 1 || cnt > UINT32_MAX) return wm_state_bad(r, "a kept row's count is %llu", (unsigned long long)cnt);
      int64_t t = 0;
      if (s->ttl > 0 && wm_state_get_i(r, &t, "a kept row's write time") != WM_OK) return WM_ERR;
      wm_row *row = wm_row_new(s->schema[d]);
      if (!row || jside_push(&b[d], row, (uint32_t)cnt, t) != 0) {
        if (row) wm_row_release(h, row);
        return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
      }
      for (size_t c = 0; c < s->nf[d]; c++) {
        if (wm_state_get_value(r, &row->fields[c], "a kept row's column") != WM_OK) return WM_ERR;
        if (!scalar(&row->fields[c])) return wm_state_bad(r, "a kept row's column that is not a scalar");
      }
    }
  }
  if (!b[0].len && !b[1].len) return wm_state_bad(r, "a key without rows");
  return WM_OK;
}

/* Takes a key's rows (b, emptied) into a new slot and the row index. */
static int adopt_key(wm_op *op, sqljoin *s, wm_state_rd *r, jside b[2], size_t klen) {
  uint32_t slot;
  int made;
  if (key_slot(op, s, klen, &slot, &made) != WM_OK) return WM_ERR;
  if (!made) return wm_state_bad(r, "a key appears twice");
  jkey *e = &s->k[slot];
  for (int d = 0; d < 2; d++) {
    e->s[d] = b[d];
    memset(&b[d], 0, sizeof b[d]);
    for (uint32_t j = 0; j < e->s[d].len; j++) {
      const wm_row *row = e->s[d].e[j].r;
      if (rx_grow(s) != 0) return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
      uint32_t hh = ref_hash(row_hash(s, d, row->fields), slot);
      int found;
      size_t p = rx_place(s, hh, slot, d, row->fields, &found);
      if (found) return wm_state_bad(r, "a kept row appears twice");
      s->rx[p].h = hh;
      s->rx[p].slot1 = slot + 1;
      s->rx[p].at = (d ? AT_SIDE : 0) | j;
      s->rn++;
      s->ndistinct[d]++;
      s->nrows[d] += e->s[d].e[j].n;
    }
  }
  return WM_OK;
}

/* Whether a key part of a side's row is a float NaN. */
static bool nan_key(const sqljoin *s, int side, const wm_value *vals) {
  for (size_t i = 0; i < s->nkeys; i++) {
    const wm_value *v = &vals[s->key[side][i]];
    if (v->type == WM_FLOAT && isnan(v->u.f)) return true;
  }
  return false;
}

/* key_bytes' result as a restore sees it: WM_OK for a key. */
static int key_check(wm_op *op, wm_state_rd *r, int kr) {
  if (kr > 0) return WM_OK;
  if (kr == -1) return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  return wm_state_bad(r, kr == 0 ? "a kept row whose key is NULL" : "a kept row whose key is not a scalar");
}

static int sj_restore_body(wm_op *op, sqljoin *s, wm_state_rd *r) {
  const wm_host *h = &op->ctx->host;
  wm_value m;
  uint64_t nk;
  if (wm_state_get_header(r, 'Q', "a SQL regular join") != WM_OK ||
      wm_state_get_value(r, &m, "the join's meaning") != WM_OK)
    return WM_ERR;
  size_t ml = 0;
  const char *mp = wm_value_is_string(&m) ? wm_value_str(&m, &ml) : "";
  int same = ml == strlen(s->meaning) && memcmp(mp, s->meaning, ml) == 0;
  if (!same) {
    wm_ctx_error(op->ctx, "the SQL regular join's columns or keys changed since the checkpoint: its "
                          "state was kept for %.*s and this job's join is %s (its state cannot be read "
                          "into this join)",
                 (int)(ml > 300 ? 300 : ml), mp, s->meaning);
    wm_value_release(h, &m);
    return WM_ERR;
  }
  wm_value_release(h, &m);
  if (wm_state_get_count(r, &nk, 2, "the number of keys") != WM_OK) return WM_ERR;
  for (uint64_t i = 0; i < nk; i++) {
    jside b[2];
    memset(b, 0, sizeof b);
    int rc = read_key_rows(op, s, r, b);
    int d = b[0].len ? 0 : 1;
    size_t klen = 0;
    char *first = NULL; /* the first row's key: every row must give it */
    if (rc == WM_OK) {
      int kr = key_bytes(s, d, b[d].e[0].r->fields, &klen);
      if (kr > 0 && !(first = malloc(klen + 1))) kr = -1;
      if (kr > 0) memcpy(first, s->kb, klen);
      rc = key_check(op, r, kr);
    }
    for (int x = 0; x < 2 && rc == WM_OK; x++)
      for (uint32_t j = 0; j < b[x].len && rc == WM_OK; j++) {
        size_t l2 = 0;
        int kr = key_bytes(s, x, b[x].e[j].r->fields, &l2);
        rc = key_check(op, r, kr);
        if (rc == WM_OK && (l2 != klen || memcmp(s->kb, first, klen) != 0))
          rc = wm_state_bad(r, "the rows of a key have two keys");
      }
    if (rc == WM_OK && r->io->groups) { /* (groups 0: every key stays) */
      wm_value rv = wm_row_value(b[d].e[0].r), fk;
      wm_row *ch = NULL; /* an updating side's key selector reads a change: {k = "+I", r = row} */
      if (s->upd[d] && !(ch = wm_row_new(s->cl))) rc = wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
      if (ch) {
        ch->fields[0] = s->kinds[K_PI];
        wm_value_retain(h, &ch->fields[0]);
        ch->fields[1] = rv;
        wm_value_retain(h, &ch->fields[1]);
        rv = wm_row_value(ch);
      }
      if (rc != WM_OK) {
      } else if (nan_key(s, d, b[d].e[0].r->fields)) {
        /* a NaN key part, which the key exchange does not take (wm_key_valid): such a key
         * stays with the instance of the first key groups, so that it is restored once */
        if (r->io->kg_first != 0) rc = 1;
      } else if (wm_keysel_key(&s->ks[d], op, &rv, &fk) != WM_OK) {
        rc = WM_ERR;
      } else if (!wm_state_key_kept(r->io, &fk)) {
        rc = 1; /* another instance's key group */
      }
      if (ch) wm_row_release(h, ch);
    }
    if (rc == WM_OK) {
      memcpy(s->kb, first, klen); /* (key_slot reads the key from s->kb) */
      rc = adopt_key(op, s, r, b, klen);
    }
    free(first);
    jside_free(h, &b[0]);
    jside_free(h, &b[1]);
    if (rc == WM_ERR) return WM_ERR;
  }
  return wm_state_get_end(r);
}

static int sj_restore(wm_op *op, wm_state_io *io) {
  sqljoin *s = op->impl;
  if (!io->merge && s->nlive)
    return wm_ctx_error(op->ctx, "a checkpoint is restored only into a new operator");
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  if (sj_restore_body(op, s, &r) == WM_OK) return WM_OK;
  clear_keys(&op->ctx->host, s); /* back to the empty operator it was built as */
  return WM_ERR;
}

static const wm_op_vt sqljoin_vt = {
    .kind = "sql join",
    .record = sj_record,
    .free = sj_free,
    .snapshot = sj_snapshot,
    .restore = sj_restore,
    .keyed_state = 1,
};

bool wm_op_is_sqljoin(const wm_op *op) { return op->vt == &sqljoin_vt; }

size_t wm_sqljoin_keys(const wm_op *op) { return ((const sqljoin *)op->impl)->nlive; }
size_t wm_sqljoin_distinct(const wm_op *op, int side) {
  return ((const sqljoin *)op->impl)->ndistinct[side != 0];
}
uint64_t wm_sqljoin_rows(const wm_op *op, int side) { return ((const sqljoin *)op->impl)->nrows[side != 0]; }

/* "L(a,b) R(c,d) keys(0=1,1=0f)": what a checkpoint's state means. */
static char *meaning_of(const wm_sqljoin_spec *spec) {
  wm_buf b;
  wm_buf_init(&b);
  for (int d = 0; d < 2; d++) {
    wm_buf_adds(&b, d ? " R(" : "L(");
    for (size_t i = 0; i < spec->side[d].nfields; i++) {
      if (i) wm_buf_adds(&b, ",");
      wm_buf_adds(&b, spec->side[d].fields[i]);
    }
    wm_buf_adds(&b, ")");
  }
  wm_buf_adds(&b, " keys(");
  for (size_t i = 0; i < spec->nkeys; i++) {
    char t[64];
    snprintf(t, sizeof t, "%s%zu=%zu%s", i ? "," : "", spec->side[0].key[i], spec->side[1].key[i],
             spec->key_float && spec->key_float[i] ? "f" : "");
    wm_buf_adds(&b, t);
  }
  wm_buf_adds(&b, ")");
  if (spec->ttl > 0) wm_buf_adds(&b, " ttl"); /* (the rows' write times are in the state) */
  if (spec->side[0].updating || spec->side[1].updating) /* (its keys' key groups: of a change) */
    wm_buf_adds(&b, spec->side[0].updating ? (spec->side[1].updating ? " upd(L,R)" : " upd(L)") : " upd(R)");
  if (b.oom) {
    wm_buf_free(&b);
    return NULL;
  }
  char *m = strdup(b.data ? b.data : "");
  wm_buf_free(&b);
  return m;
}

/* The spec's own checks: indexes in range. NULL or what is wrong. */
static const char *bad_spec(const wm_sqljoin_spec *spec) {
  if (spec->nkeys < 1) return "no key";
  for (int d = 0; d < 2; d++) {
    if (spec->side[d].nfields < 1 || spec->side[d].nfields > 100000) return "a side's number of columns";
    for (size_t i = 0; i < spec->nkeys; i++)
      if (spec->side[d].key[i] >= spec->side[d].nfields) return "a key's column";
  }
  if (spec->nout < 1) return "no output column";
  for (size_t i = 0; i < spec->nout; i++)
    if (spec->out_side[i] > 1 || spec->out_field[i] >= spec->side[spec->out_side[i]].nfields)
      return "an output column's source";
  return NULL;
}

static wm_schema *schema_of(size_t n, const char *const *names) {
  return wm_schema_new((uint32_t)n, names, NULL); /* (every column WM_FT_ANY) */
}

wm_op *wm_sqljoin_new(wm_ctx *ctx, const char *name, const wm_sqljoin_spec *spec, wm_keysel ks,
                      wm_keysel ks2) {
  const char *bad = bad_spec(spec);
  if (bad) {
    if (ks.free) ks.free(ks.ud);
    if (ks2.free) ks2.free(ks2.ud);
    wm_ctx_error(ctx, "internal error: '%s': %s out of range", name, bad);
    return NULL;
  }
  sqljoin *s = calloc(1, sizeof *s);
  if (!s) {
    if (ks.free) ks.free(ks.ud);
    if (ks2.free) ks2.free(ks2.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  s->ks[0] = ks;
  s->ks[1] = ks2;
  s->nkeys = spec->nkeys;
  s->nout = spec->nout;
  s->ttl = spec->ttl > 0 ? spec->ttl : 0;
  int ok = wm_keyidx_init(&s->ix, slot_key, s) == 0;
  size_t maxf = 1;
  for (int d = 0; d < 2 && ok; d++) {
    size_t n = spec->side[d].nfields;
    s->nf[d] = n;
    if (n > maxf) maxf = n;
    s->names[d] = calloc(n, sizeof *s->names[d]);
    s->f[d] = calloc(n, sizeof *s->f[d]);
    s->key[d] = malloc(spec->nkeys * sizeof *s->key[d]);
    ok = s->names[d] && s->f[d] && s->key[d];
    for (size_t i = 0; ok && i < n; i++) {
      ok = (s->names[d][i] = strdup(spec->side[d].fields[i])) != NULL;
      if (ok) {
        s->f[d][i].name = s->names[d][i];
        s->f[d][i].index = -1;
      }
    }
    if (ok) {
      memcpy(s->key[d], spec->side[d].key, spec->nkeys * sizeof *s->key[d]);
      ok = (s->schema[d] = schema_of(n, (const char *const *)s->names[d])) != NULL;
    }
  }
  if (ok) {
    s->kfloat = calloc(spec->nkeys, 1);
    s->oside = malloc(spec->nout);
    s->ofield = malloc(spec->nout * sizeof *s->ofield);
    s->vals = calloc(maxf, sizeof *s->vals);
    s->meaning = meaning_of(spec);
    s->out = schema_of(spec->nout, spec->out_names);
    ok = s->kfloat && s->oside && s->ofield && s->vals && s->meaning && s->out;
  }
  if (ok) {
    static const char *const clnames[2] = {"k", "r"};
    static const uint8_t cltypes[2] = {WM_FT_STRING, WM_FT_ANY};
    static const char *const kinds[4] = {"+I", "+U", "-U", "-D"};
    ok = (s->cl = wm_schema_new(2, clnames, cltypes)) != NULL;
    for (int i = 0; ok && i < 4; i++) {
      wm_str *k = wm_str_new(kinds[i], 2);
      if (!(ok = k != NULL)) break;
      s->kinds[i].type = WM_STR;
      s->kinds[i].u.s = k;
    }
    for (int d = 0; d < 2; d++) {
      s->upd[d] = spec->side[d].updating != 0;
      s->fk[d] = (wm_field){.name = "k", .index = -1};
      s->fr[d] = (wm_field){.name = "r", .index = -1};
    }
    s->upd_out = s->upd[0] || s->upd[1];
    s->unwrap = spec->unwrap;
    s->unwrap_ud = spec->unwrap_ud;
  }
  if (ok) {
    if (spec->key_float) memcpy(s->kfloat, spec->key_float, spec->nkeys);
    memcpy(s->oside, spec->out_side, spec->nout);
    memcpy(s->ofield, spec->out_field, spec->nout * sizeof *s->ofield);
  }
  wm_op *op = ok ? wm_op_new(ctx, &sqljoin_vt, s, name) : NULL;
  if (!op) {
    sj_destroy(&ctx->host, s);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
  }
  return op;
}
