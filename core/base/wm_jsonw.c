/* The per-schema JSON writer (see wm_jsonw.h). */
#include "base/wm_jsonw.h"

#include <math.h>
#include <stdlib.h>

void wm_jsonw_init(wm_jsonw *w) { memset(w, 0, sizeof *w); }

static void prep_clear(wm_jsonw_prep *p) {
  wm_schema_release(p->schema);
  free(p->off);
  free(p->keys);
  memset(p, 0, sizeof *p);
}

void wm_jsonw_free(wm_jsonw *w) {
  for (unsigned i = 0; i < w->n; i++) prep_clear(&w->prep[i]);
  memset(w, 0, sizeof *w);
}

/* A key prefix of up to this many bytes is copied as a block of that size (no memcpy call). */
#define KEY_COPY 16

/* The prepared form of s, made on first sight; NULL when out of memory. */
static const wm_jsonw_prep *prep_for(wm_jsonw *w, wm_schema *s) {
  for (unsigned i = 0; i < w->n; i++)
    if (w->prep[i].schema == s) return &w->prep[i];
  wm_buf keys;
  wm_buf_init(&keys);
  uint32_t *off = malloc((s->nfields + 1) * sizeof *off);
  if (!off) return NULL;
  for (uint32_t k = 0; k < s->nfields; k++) {
    const char *name = s->names[s->sorted[k]];
    off[k] = (uint32_t)keys.len;
    wm_buf_addc(&keys, ',');
    wm_buf_add_json_string(&keys, name, strlen(name));
    wm_buf_addc(&keys, ':');
  }
  off[s->nfields] = (uint32_t)keys.len;
  for (int pad = 0; pad < KEY_COPY; pad++) wm_buf_addc(&keys, '\0'); /* room for fixed copies */
  if (keys.oom || keys.len > UINT32_MAX) {
    wm_buf_free(&keys);
    free(off);
    return NULL;
  }
  wm_jsonw_prep *p;
  if (w->n < WM_JSONW_SCHEMAS) {
    p = &w->prep[w->n++];
  } else { /* a stream of many schemas: replace in turn */
    p = &w->prep[w->next];
    w->next = (w->next + 1) % WM_JSONW_SCHEMAS;
    prep_clear(p);
  }
  p->schema = s;
  s->refs++;
  p->off = off;
  p->keys = keys.data;
  return p;
}

/* The number of decimal digits of u: from its bit length (log10(2) ~ 1233 / 4096), one
 * compare with the power of ten it may fall short of, no division. */
static unsigned count_digits(uint64_t u) {
  static const uint64_t pow10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL,
                                     1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
                                     10000000000ULL, 100000000000ULL, 1000000000000ULL,
                                     10000000000000ULL, 100000000000000ULL,
                                     1000000000000000ULL, 10000000000000000ULL,
                                     100000000000000000ULL, 1000000000000000000ULL,
                                     10000000000000000000ULL};
  u |= 1; /* 0 has one digit; an odd u compares with the (even) powers of ten as u */
  unsigned t = ((64u - (unsigned)__builtin_clzll(u)) * 1233u) >> 12;
  return t - (u < pow10[t]) + 1;
}

/* wm_buf_add_int's digits, two at a time, written in place. */
static void put_int(wm_buf *b, int64_t i) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                              "34353637383940414243444546474849505152535455565758596061626364656667"
                              "6869707172737475767778798081828384858687888990919293949596979899";
  if (wm_buf_reserve(b, 20) != 0) return;
  uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
  unsigned digits = count_digits(u);
  char *p = b->data + b->len;
  if (i < 0) *p++ = '-';
  char *q = p + digits;
  while (u > UINT32_MAX) { /* eight digits at a time in 32-bit arithmetic, cheaper than 64 */
    uint32_t lo = (uint32_t)(u % 100000000u);
    u /= 100000000u;
    for (int k = 0; k < 4; k++) {
      unsigned d = (lo % 100) * 2;
      lo /= 100;
      *--q = pairs[d + 1];
      *--q = pairs[d];
    }
  }
  uint32_t v = (uint32_t)u;
  while (v >= 100) {
    unsigned d = (v % 100) * 2;
    v /= 100;
    *--q = pairs[d + 1];
    *--q = pairs[d];
  }
  if (v >= 10) {
    *--q = pairs[v * 2 + 1];
    *--q = pairs[v * 2];
  } else {
    *--q = (char)('0' + v);
  }
  b->len = (size_t)(p + digits - b->data);
  b->data[b->len] = '\0';
}

/* 1 for the bytes a JSON string takes as they are with no check: printable ASCII but '"' and
 * '\\' */
static const unsigned char plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* A JSON string: copied in one piece when no byte needs an escape or a check (printable
 * ASCII but '"' and '\\'), else the generic escaper. */
static void put_json_string(wm_buf *b, const char *s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) { /* eight bytes at a time: any byte < 0x20, >= 0x80, '"', '\\' */
    uint64_t x;
    memcpy(&x, s + i, 8);
    const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
    uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
    uint64_t bad = x | ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((bs - ones) & ~bs);
    if (bad & high) break;
  }
  for (; i < n; i++) {
    if (!plain[(unsigned char)s[i]]) {
      wm_buf_add_json_string(b, s, n);
      return;
    }
  }
  if (wm_buf_reserve(b, n + 2) != 0) return;
  char *p = b->data + b->len;
  *p++ = '"';
  memcpy(p, s, n);
  p[n] = '"';
  b->len += n + 2;
  b->data[b->len] = '\0';
}

static void put_value(wm_jsonw *w, wm_buf *b, const wm_value *v, int json,
                      wm_format_slot_fn slot_fn, void *ud);

static void put_row(wm_jsonw *w, wm_buf *b, const wm_value *v, wm_format_slot_fn slot_fn,
                    void *ud) {
  const wm_row *r = v->u.row;
  const wm_jsonw_prep *p = prep_for(w, r->schema);
  if (!p) {
    wm_format_value(b, v, 1, slot_fn, ud);
    return;
  }
  const wm_schema *s = r->schema;
  wm_buf_addc(b, '{');
  size_t start = b->len;
  for (uint32_t k = 0; k < s->nfields; k++) {
    const wm_value *f = &r->fields[s->sorted[k]];
    if (f->type == WM_NIL) continue; /* as the generic formatter: nil fields are absent */
    const char *key = p->keys + p->off[k];
    size_t len = p->off[k + 1] - p->off[k];
    if (b->len == start) { /* the first field written has no comma */
      key++;
      len--;
    }
    if (len <= KEY_COPY && wm_buf_reserve(b, KEY_COPY) == 0) {
      memcpy(b->data + b->len, key, KEY_COPY); /* the bytes past len are the next key's or padding */
      b->len += len;
      b->data[b->len] = '\0';
    } else {
      wm_buf_add(b, key, len);
    }
    if (f->type == WM_INT) put_int(b, f->u.i); /* the common fields without a call */
    else if ((f->type == WM_CSTR || f->type == WM_STR) && !(f->flags & WM_VF_COMPOSITE)) {
      size_t n;
      const char *str = wm_value_str(f, &n);
      put_json_string(b, str, n);
    } else {
      put_value(w, b, f, 1, slot_fn, ud);
    }
  }
  wm_buf_addc(b, '}');
}

static void put_value(wm_jsonw *w, wm_buf *b, const wm_value *v, int json,
                      wm_format_slot_fn slot_fn, void *ud) {
  switch (v->type) {
  case WM_INT: put_int(b, v->u.i); return;
  case WM_ROW: put_row(w, b, v, slot_fn, ud); return;
  case WM_CSTR:
  case WM_STR:
    if (json && !(v->flags & WM_VF_COMPOSITE)) {
      size_t n;
      const char *s = wm_value_str(v, &n);
      put_json_string(b, s, n);
      return;
    }
    break;
  default: break;
  }
  wm_format_value(b, v, json, slot_fn, ud); /* nil, booleans, floats, raw strings, slots */
}

void wm_jsonw_value(wm_jsonw *w, wm_buf *b, const wm_value *v, int json,
                    wm_format_slot_fn slot_fn, void *ud) {
  put_value(w, b, v, json, slot_fn, ud);
}
