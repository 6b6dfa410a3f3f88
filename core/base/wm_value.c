#include "base/wm_value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_hash.h"

wm_str *wm_str_new(const char *s, size_t len) {
  if (len > UINT32_MAX - 1) return NULL;
  wm_str *str = malloc(sizeof *str + len + 1);
  if (!str) return NULL;
  str->refs = 1;
  str->len = (uint32_t)len;
  if (len) memcpy(str->data, s, len);
  str->data[len] = '\0';
  return str;
}

int wm_value_retain(const wm_host *h, wm_value *v) {
  switch (v->type) {
  case WM_CSTR: {
    wm_str *s = wm_str_new(v->u.cs, v->len);
    if (!s) return -1;
    v->type = WM_STR;
    v->len = 0;
    v->u.s = s;
    return 0;
  }
  case WM_STR: v->u.s->refs++; return 0;
  case WM_ROW: v->u.row->refs++; return 0;
  case WM_SLOT: h->retain(h->ud, v->u.slot); return 0;
  default: return 0;
  }
}

void wm_value_release(const wm_host *h, wm_value *v) {
  switch (v->type) {
  case WM_STR:
    if (--v->u.s->refs == 0) free(v->u.s);
    break;
  case WM_ROW: wm_row_release(h, v->u.row); break;
  case WM_SLOT: h->release(h->ud, v->u.slot); break;
  default: break;
  }
  *v = wm_nil();
}

int wm_value_copy(const wm_host *h, wm_value *dst, const wm_value *src) {
  wm_value tmp = *src;
  if (wm_value_retain(h, &tmp) != 0) return -1;
  *dst = tmp;
  return 0;
}

/* ---- keys -------------------------------------------------------------------------- */

bool wm_key_valid(const wm_value *v) {
  switch (v->type) {
  case WM_BOOL: case WM_INT: case WM_CSTR: case WM_STR: return true;
  case WM_FLOAT: return !isnan(v->u.f);
  default: return false;
  }
}

/* A float that is an exact integer compares and hashes as that integer. */
static bool float_as_int(double f, int64_t *out) {
  if (f >= -9223372036854775808.0 && f < 9223372036854775808.0 && floor(f) == f) {
    *out = (int64_t)f;
    return true;
  }
  return false;
}

bool wm_key_equal(const wm_value *a, const wm_value *b) {
  int64_t ai, bi;
  if (wm_value_is_string(a) && wm_value_is_string(b)) {
    size_t al, bl;
    const char *as = wm_value_str(a, &al), *bs = wm_value_str(b, &bl);
    return al == bl && (a->flags & WM_VF_COMPOSITE) == (b->flags & WM_VF_COMPOSITE) &&
           memcmp(as, bs, al) == 0;
  }
  if ((a->type == WM_INT || a->type == WM_FLOAT) && (b->type == WM_INT || b->type == WM_FLOAT)) {
    if (a->type == WM_INT && b->type == WM_INT) return a->u.i == b->u.i;
    if (a->type == WM_FLOAT && b->type == WM_FLOAT) return a->u.f == b->u.f;
    const wm_value *fi = a->type == WM_FLOAT ? a : b, *ii = a->type == WM_FLOAT ? b : a;
    return float_as_int(fi->u.f, &ai) && ai == ii->u.i;
  }
  if (a->type == WM_BOOL && b->type == WM_BOOL) return a->u.b == b->u.b;
  (void)bi;
  return false;
}

uint64_t wm_hash_bytes(const void *p, size_t n, uint64_t seed) {
  /* FNV-1a from 1469598103934665603 (FNV's basis a digit short, kept: this hash places
   * keys on instances, base/wm_hash.h) */
  uint64_t h = wm_fnv1a64_from(1469598103934665603ULL ^ seed, p, n);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t wm_key_hash(const wm_value *v) {
  int64_t i;
  switch (v->type) {
  case WM_CSTR: case WM_STR: {
    size_t n;
    const char *s = wm_value_str(v, &n);
    return wm_hash_bytes(s, n, (v->flags & WM_VF_COMPOSITE) ? 7 : 0);
  }
  case WM_INT: return mix64((uint64_t)v->u.i);
  case WM_FLOAT:
    if (float_as_int(v->u.f, &i)) return mix64((uint64_t)i);
    {
      uint64_t bits;
      memcpy(&bits, &v->u.f, sizeof bits);
      return mix64(bits ^ 0x5555);
    }
  case WM_BOOL: return v->u.b ? 0x9e3779b97f4a7c15ULL : 0x7f4a7c159e3779b9ULL;
  default: return 0;
  }
}

/* ---- schemas and rows ------------------------------------------------------------- */


wm_schema *wm_schema_new(uint32_t n, const char *const *names, const uint8_t *types) {
  wm_schema *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->refs = 1;
  s->nfields = n;
  s->names = calloc(n ? n : 1, sizeof *s->names);
  s->types = calloc(n ? n : 1, 1);
  s->sorted = calloc(n ? n : 1, sizeof *s->sorted);
  if (!s->names || !s->types || !s->sorted) goto fail;
  for (uint32_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    s->names[i] = malloc(len + 1);
    if (!s->names[i]) goto fail;
    memcpy(s->names[i], names[i], len + 1);
    s->types[i] = types ? types[i] : WM_FT_ANY;
    s->sorted[i] = i;
  }
  /* insertion sort by name: schemas are small, and this keeps the code reentrant */
  for (uint32_t i = 1; i < n; i++) {
    uint32_t k = s->sorted[i], j = i;
    while (j > 0 && strcmp(s->names[s->sorted[j - 1]], s->names[k]) > 0) {
      s->sorted[j] = s->sorted[j - 1];
      j--;
    }
    s->sorted[j] = k;
  }
  return s;
fail:
  wm_schema_release(s);
  return NULL;
}

void wm_schema_release(wm_schema *s) {
  if (!s || --s->refs > 0) return;
  if (s->names)
    for (uint32_t i = 0; i < s->nfields; i++) free(s->names[i]);
  free(s->names);
  free(s->types);
  free(s->sorted);
  free(s);
}

int wm_schema_find(const wm_schema *s, const char *name) {
  for (uint32_t i = 0; i < s->nfields; i++)
    if (strcmp(s->names[i], name) == 0) return (int)i;
  return -1;
}

wm_row *wm_row_new(wm_schema *s) {
  /* malloc, not calloc: glibc's calloc takes no block from the thread's cache (tcache) and
   * locks the arena once a second thread runs: a row per record made calloc 15% of Nexmark
   * q0's CPU at --threads 2, against 3% on one thread. (The fields are cleared on their own:
   * gcc turns a malloc and a memset of the whole block back into calloc.) */
  wm_row *r = malloc(sizeof(wm_row) + s->nfields * sizeof(wm_value));
  if (!r) return NULL;
  if (s->nfields) memset(r->fields, 0, s->nfields * sizeof(wm_value));
  r->refs = 1;
  r->schema = s;
  s->refs++;
  return r;
}

void wm_row_release(const wm_host *h, wm_row *r) {
  if (--r->refs > 0) return;
  for (uint32_t i = 0; i < r->schema->nfields; i++) wm_value_release(h, &r->fields[i]);
  wm_schema_release(r->schema);
  free(r);
}

int wm_field_get(const wm_host *h, wm_field *f, const wm_value *rec, wm_value *out, wm_error *err) {
  if (rec->type == WM_ROW) {
    const wm_row *r = rec->u.row;
    if (f->schema != r->schema) {
      f->schema = r->schema;
      f->index = wm_schema_find(r->schema, f->name);
    }
    *out = f->index >= 0 ? r->fields[f->index] : wm_nil();
    return 0;
  }
  if (rec->type == WM_SLOT && h && h->get_field)
    return h->get_field(h->ud, rec, f->name, out, err);
  wm_error_set(err, "cannot read field '%s': the record is not a table", f->name);
  return -1;
}

int wm_field_with(const wm_host *h, wm_field *f, const wm_value *rec, const wm_value *val,
                  wm_value *out, wm_error *err) {
  if (rec->type == WM_ROW) {
    const wm_row *r = rec->u.row;
    if (f->schema != r->schema) {
      f->schema = r->schema;
      f->index = wm_schema_find(r->schema, f->name);
    }
    if (f->index < 0) {
      wm_error_set(err, "record has no field '%s'", f->name);
      return -1;
    }
    wm_row *n = wm_row_new(r->schema);
    if (!n) { wm_error_set(err, "out of memory"); return -1; }
    for (uint32_t i = 0; i < r->schema->nfields; i++) {
      const wm_value *src = (int)i == f->index ? val : &r->fields[i];
      if (wm_value_copy(h, &n->fields[i], src) != 0) {
        wm_row_release(h, n);
        wm_error_set(err, "out of memory");
        return -1;
      }
    }
    *out = wm_row_value(n);
    return 0;
  }
  if (rec->type == WM_SLOT && h && h->with_field)
    return h->with_field(h->ud, rec, f->name, val, out, err);
  wm_error_set(err, "cannot set field '%s': the record is not a table", f->name);
  return -1;
}

/* ---- composite keys: [tag byte][payload] per part; strings carry a 4-byte length ---- */

int wm_key_compose(const wm_value *parts, size_t n, wm_value *out) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = 0;
    if (wm_value_is_string(&parts[i])) wm_value_str(&parts[i], &l);
    total += 1 + (wm_value_is_string(&parts[i]) ? 4 + l : 8);
  }
  wm_str *s = wm_str_new("", 0);
  if (!s) return -1;
  wm_str *big = realloc(s, sizeof *s + total + 1);
  if (!big) { free(s); return -1; }
  s = big;
  char *p = s->data;
  for (size_t i = 0; i < n; i++) {
    const wm_value *v = &parts[i];
    int64_t iv;
    if (wm_value_is_string(v)) {
      size_t l;
      const char *b = wm_value_str(v, &l);
      uint32_t l32 = (uint32_t)l;
      *p++ = 's';
      memcpy(p, &l32, 4); p += 4;
      memcpy(p, b, l); p += l;
    } else if (v->type == WM_FLOAT && !float_as_int(v->u.f, &iv)) {
      *p++ = 'f'; memcpy(p, &v->u.f, 8); p += 8;
    } else if (v->type == WM_BOOL) {
      int64_t b = v->u.b;
      *p++ = 'b'; memcpy(p, &b, 8); p += 8;
    } else if (v->type == WM_NIL) { /* (wm_keysel_fields_nulls) */
      *p++ = 'n'; memset(p, 0, 8); p += 8;
    } else {
      iv = v->type == WM_INT ? v->u.i : (int64_t)v->u.f;
      *p++ = 'i'; memcpy(p, &iv, 8); p += 8;
    }
  }
  s->len = (uint32_t)total;
  s->data[total] = '\0';
  *out = wm_nil();
  out->type = WM_STR;
  out->flags = WM_VF_COMPOSITE;
  out->u.s = s;
  return 0;
}

int wm_key_part(const wm_value *key, size_t idx, wm_value *out) {
  size_t len;
  const char *p = wm_value_str(key, &len), *end = p + len;
  int count = 0;
  while (p < end) {
    char tag = *p++;
    wm_value v = wm_nil();
    if (tag == 's') {
      uint32_t l;
      memcpy(&l, p, 4); p += 4;
      v = wm_cstr(p, l);
      p += l;
    } else {
      int64_t raw;
      memcpy(&raw, p, 8); p += 8;
      if (tag == 'f') { double d; memcpy(&d, &raw, 8); v = wm_float(d); }
      else if (tag == 'b') v = wm_bool(raw != 0);
      else if (tag == 'n') v = wm_nil();
      else v = wm_int(raw);
    }
    if ((size_t)count == idx) *out = v;
    count++;
  }
  return count;
}
