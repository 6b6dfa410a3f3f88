/* SQL lookup joins in C (ops/wm_sqllookup.h). */
#include "ops/wm_sqllookup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"

/* A key of the table: its bytes (kb[koff, koff + klen)), the rows that have it (head, then
 * next[] in the table's order) */
typedef struct lkent {
  uint64_t hash;
  size_t koff, klen;
  uint32_t head, tail; /* row indexes + 1 (0: a free entry) */
} lkent;

typedef struct sqllookup {
  wm_sqllookup_spec spec; /* the arrays below are the operator's copies */
  char *table;
  int *lkey;
  char **fields;
  size_t *rkey;
  char **onames;
  uint8_t *otypes, *oside;
  wm_field *lf; /* out column i of the probe row: lf[i] (out_side 0) */
  size_t *orf;
  wm_schema *schema;
  /* the table read last */
  int loaded;
  int64_t next_load;
  wm_value *vals; /* nrows * nfields owned values */
  size_t nrows;
  uint32_t *next; /* per row: the next row of its key + 1 (0: the last) */
  lkent *ents;
  size_t cap, nents; /* cap a power of 2 (0: none) */
  wm_buf kb;  /* the keys' bytes */
  wm_buf probe; /* a probe row's key being made */
  uint64_t loads;
} sqllookup;

/* ---- keys: the Lua path's key strings (temporal_join.lua, key_part) ---------------------- */

/* Appends part v of a key to b; 1 when v is NULL (or cannot be a key: a row), else 0; -1 on
 * allocation failure. A number integral within int64 (math.tointeger) is 'i' and its 8
 * bytes; another number 'n' and Lua's tostring of it ("%.14g", ".0" added when that looks
 * like an integer: so never the text of an integer); a string 's', its length and bytes; a
 * boolean 'b' and a byte. */
static int key_part(wm_buf *b, const wm_value *v) {
  char t[48];
  size_t n = 0;
  const char *p = NULL;
  int64_t i;
  switch (v->type) {
  case WM_INT: i = v->u.i; goto integer;
  case WM_FLOAT: {
    double d = v->u.f;
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && floor(d) == d) {
      i = (int64_t)d;
      goto integer;
    }
    t[0] = 'n';
    int k = snprintf(t + 1, sizeof t - 3, "%.14g", d);
    if (k < 0) k = 0;
    if (t[1 + strspn(t + 1, "-0123456789")] == '\0') {
      t[1 + k++] = '.';
      t[1 + k++] = '0';
    }
    n = (size_t)k + 1;
    break;
  }
  case WM_BOOL:
    t[0] = 'b';
    t[1] = v->u.b ? 1 : 0;
    n = 2;
    break;
  case WM_CSTR:
  case WM_STR: {
    size_t l;
    p = wm_value_str(v, &l);
    uint32_t l32 = (uint32_t)l;
    t[0] = 's';
    memcpy(t + 1, &l32, 4);
    if (wm_buf_reserve(b, 5 + l) != 0) return -1;
    wm_buf_add(b, t, 5);
    wm_buf_add(b, p, l);
    return 0;
  }
  default: return 1; /* NULL, rows, slots: no key */
  }
  if (wm_buf_reserve(b, n) != 0) return -1;
  wm_buf_add(b, t, n);
  return 0;
integer:
  t[0] = 'i';
  memcpy(t + 1, &i, 8);
  if (wm_buf_reserve(b, 9) != 0) return -1;
  wm_buf_add(b, t, 9);
  return 0;
}

static uint64_t key_hash(const char *p, size_t n) { return wm_hash_bytes(p, n, 0x9e3779b97f4a7c15ULL); }

/* The entry of key (p, n) with hash h: its index, or the free slot where it goes */
static size_t find(const sqllookup *s, const char *p, size_t n, uint64_t h) {
  size_t mask = s->cap - 1, i = (size_t)h & mask;
  for (;;) {
    const lkent *e = &s->ents[i];
    if (!e->head) return i;
    if (e->hash == h && e->klen == n && memcmp(s->kb.data + e->koff, p, n) == 0) return i;
    i = (i + 1) & mask;
  }
}

/* ---- the table ---------------------------------------------------------------------------- */

static void drop_table(const wm_host *h, sqllookup *s) {
  for (size_t i = 0; i < s->nrows * s->spec.nfields; i++) wm_value_release(h, &s->vals[i]);
  free(s->vals);
  free(s->next);
  free(s->ents);
  s->vals = NULL;
  s->next = NULL;
  s->ents = NULL;
  s->nrows = s->cap = s->nents = 0;
  wm_buf_clear(&s->kb);
}

/* Reads the table (spec.load) at probe row rec and indexes it by key. WM_OK, or WM_ERR in
 * ctx->error. */
static int load_table(wm_op *op, sqllookup *s, const wm_value *rec) {
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  wm_value *vals = NULL;
  size_t nrows = 0;
  if (s->spec.load(s->spec.load_ud, &vals, &nrows, &ctx->error) != 0) {
    wm_ctx_error_context(ctx, "\n  reading the table '%s' of the lookup join", s->table);
    return wm_op_fail_record(op, rec);
  }
  drop_table(h, s);
  s->vals = vals;
  s->nrows = nrows;
  s->loads++;
  if (nrows > UINT32_MAX - 1) return wm_ctx_error(ctx, "the table '%s' of the lookup join has too many rows", s->table);
  size_t cap = 16;
  while (cap < nrows * 2) cap *= 2;
  s->next = calloc(nrows + 1, sizeof *s->next);
  s->ents = calloc(cap, sizeof *s->ents);
  if (!s->next || !s->ents) return wm_ctx_error(ctx, "out of memory");
  s->cap = cap;
  size_t nf = s->spec.nfields;
  for (size_t r = 0; r < nrows; r++) {
    size_t at = s->kb.len;
    int null = 0;
    for (size_t k = 0; k < s->spec.nkeys && !null; k++) {
      int rc = key_part(&s->kb, &vals[r * nf + s->rkey[k]]);
      if (rc < 0) return wm_ctx_error(ctx, "out of memory");
      null = rc;
    }
    if (null) { /* a NULL key part: no key of the table */
      s->kb.len = at;
      continue;
    }
    size_t n = s->kb.len - at;
    uint64_t hh = key_hash(s->kb.data + at, n);
    size_t i = find(s, s->kb.data + at, n, hh);
    lkent *e = &s->ents[i];
    if (e->head) {
      s->next[e->tail - 1] = (uint32_t)r + 1;
      e->tail = (uint32_t)r + 1;
      s->kb.len = at; /* (the entry has the bytes already) */
    } else {
      e->hash = hh;
      e->koff = at;
      e->klen = n;
      e->head = e->tail = (uint32_t)r + 1;
      s->nents++;
    }
  }
  if (s->kb.oom) return wm_ctx_error(ctx, "out of memory");
  return WM_OK;
}

/* ---- probe rows ----------------------------------------------------------------------------- */

/* Emits the joined row of probe row rec and side row r (NULL: the side's columns NULL). */
static int emit_joined(wm_op *op, sqllookup *s, const wm_value *rec, const wm_value *r, int64_t ts) {
  wm_ctx *ctx = op->ctx;
  const wm_host *h = &ctx->host;
  wm_row *row = wm_row_new(s->schema);
  if (!row) return wm_ctx_error(ctx, "out of memory");
  for (size_t i = 0; i < s->spec.nout; i++) {
    wm_value v = wm_nil();
    if (s->oside[i] == 0) {
      const wm_value *p = wm_field_peek(&s->lf[i], rec);
      if (p) v = *p;
      else if (wm_field_get(h, &s->lf[i], rec, &v, &ctx->error) != 0) {
        wm_row_release(h, row);
        return wm_op_fail_record(op, rec);
      }
    } else if (r) {
      v = r[s->orf[i]];
    }
    if (wm_value_copy(h, &row->fields[i], &v) != 0) {
      wm_row_release(h, row);
      return wm_ctx_error(ctx, "out of memory");
    }
  }
  wm_value out = wm_row_value(row);
  int rc = wm_op_emit(op, 0, &out, ts);
  wm_row_release(h, row);
  return rc;
}

static int sl_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  sqllookup *s = op->impl;
  wm_ctx *ctx = op->ctx;
  /* the key first (the Lua path's order: a row with a NULL key reads no table) */
  wm_buf_clear(&s->probe);
  int null = 0;
  for (size_t k = 0; k < s->spec.nkeys && !null; k++) {
    wm_value v;
    if (wm_rexpr_eval(s->spec.x, s->lkey[k], &ctx->host, rec, &v, &ctx->error) != 0) {
      wm_rexpr_reset(s->spec.x);
      return wm_op_fail_record(op, rec);
    }
    int rc = key_part(&s->probe, &v);
    if (rc < 0) {
      wm_rexpr_reset(s->spec.x);
      return wm_ctx_error(ctx, "out of memory");
    }
    null = rc;
  }
  wm_rexpr_reset(s->spec.x);
  if (s->probe.oom) return wm_ctx_error(ctx, "out of memory");
  const lkent *e = NULL;
  if (!null) {
    int64_t now = wm_ctx_now(ctx);
    if (!s->loaded || now >= s->next_load) {
      if (load_table(op, s, rec) != WM_OK) return WM_ERR;
      s->loaded = 1;
      s->next_load = now + s->spec.ttl;
    }
    if (s->cap) {
      uint64_t hh = key_hash(s->probe.data, s->probe.len);
      size_t i = find(s, s->probe.data, s->probe.len, hh);
      if (s->ents[i].head) e = &s->ents[i];
    }
  }
  if (!e) return s->spec.outer ? emit_joined(op, s, rec, NULL, ts) : WM_OK;
  size_t nf = s->spec.nfields;
  for (uint32_t r = e->head; r; r = s->next[r - 1]) {
    int rc = emit_joined(op, s, rec, &s->vals[(size_t)(r - 1) * nf], ts);
    if (rc != WM_OK) return rc;
  }
  return WM_OK;
}

/* ---- the operator ------------------------------------------------------------------------- */

static void sl_destroy(const wm_host *h, sqllookup *s) {
  if (!s) return;
  drop_table(h, s);
  wm_buf_free(&s->kb);
  wm_buf_free(&s->probe);
  wm_rexpr_free(s->spec.x);
  if (s->spec.load_free) s->spec.load_free(s->spec.load_ud);
  free(s->table);
  free(s->lkey);
  for (size_t i = 0; s->fields && i < s->spec.nfields; i++) free(s->fields[i]);
  free(s->fields);
  free(s->rkey);
  for (size_t i = 0; s->onames && i < s->spec.nout; i++) free(s->onames[i]);
  for (size_t i = 0; s->lf && i < s->spec.nout; i++) free((char *)s->lf[i].name);
  free(s->onames);
  free(s->lf);
  free(s->otypes);
  free(s->oside);
  free(s->orf);
  if (s->schema) wm_schema_release(s->schema);
  free(s);
}

static void sl_free(wm_op *op) { sl_destroy(&op->ctx->host, op->impl); }

static const wm_op_vt sqllookup_vt = {.kind = "sql lookup join", .record = sl_record, .free = sl_free};

bool wm_op_is_sqllookup(const wm_op *op) { return op->vt == &sqllookup_vt; }
size_t wm_sqllookup_rows(const wm_op *op) { return ((const sqllookup *)op->impl)->nrows; }
uint64_t wm_sqllookup_loads(const wm_op *op) { return ((const sqllookup *)op->impl)->loads; }

/* What is wrong with spec (NULL: nothing) */
static const char *bad_spec(const wm_sqllookup_spec *sp) {
  if (!sp->x || !sp->load) return "no key program or no table reader";
  if (sp->nkeys < 1 || !sp->lkey || !sp->rkey) return "no keys";
  if (sp->nout < 1 || !sp->out_names || !sp->out_side) return "no output columns";
  if (sp->ttl < 0) return "a negative cache ttl";
  int n = wm_rexpr_count(sp->x);
  for (size_t k = 0; k < sp->nkeys; k++) {
    if (sp->lkey[k] < 0 || sp->lkey[k] >= n) return "a key node out of range";
    if (sp->rkey[k] >= sp->nfields) return "a key column out of range";
  }
  for (size_t i = 0; i < sp->nout; i++) {
    if (!sp->out_names[i]) return "an output column without a name";
    if (sp->out_side[i] == 0 && !(sp->out_lfield && sp->out_lfield[i])) return "an output column of no field";
    if (sp->out_side[i] == 1 && !(sp->out_rfield && sp->out_rfield[i] < sp->nfields))
      return "an output column out of range";
    if (sp->out_side[i] > 1) return "an output column of no side";
  }
  return NULL;
}

wm_op *wm_sqllookup_new(wm_ctx *ctx, const char *name, const wm_sqllookup_spec *spec) {
  const char *bad = bad_spec(spec);
  if (bad) {
    wm_rexpr_free(spec->x);
    if (spec->load_free) spec->load_free(spec->load_ud);
    wm_ctx_error(ctx, "internal error: building '%s': %s", name, bad);
    return NULL;
  }
  sqllookup *s = calloc(1, sizeof *s);
  if (!s) {
    wm_rexpr_free(spec->x);
    if (spec->load_free) spec->load_free(spec->load_ud);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  s->spec = *spec;
  wm_buf_init(&s->kb);
  wm_buf_init(&s->probe);
  size_t nk = spec->nkeys, nf = spec->nfields, no = spec->nout;
  s->table = strdup(spec->table ? spec->table : "?");
  s->lkey = malloc(nk * sizeof *s->lkey);
  s->rkey = malloc(nk * sizeof *s->rkey);
  s->fields = calloc(nf + 1, sizeof *s->fields);
  s->onames = calloc(no, sizeof *s->onames);
  s->lf = calloc(no, sizeof *s->lf);
  s->otypes = malloc(no);
  s->oside = malloc(no);
  s->orf = calloc(no, sizeof *s->orf);
  int ok = s->table && s->lkey && s->rkey && s->fields && s->onames && s->lf && s->otypes && s->oside && s->orf;
  for (size_t k = 0; ok && k < nk; k++) {
    s->lkey[k] = spec->lkey[k];
    s->rkey[k] = spec->rkey[k];
  }
  for (size_t j = 0; ok && j < nf; j++) ok = (s->fields[j] = strdup(spec->fields[j] ? spec->fields[j] : "?")) != NULL;
  for (size_t i = 0; ok && i < no; i++) {
    s->oside[i] = spec->out_side[i];
    s->otypes[i] = spec->out_types ? spec->out_types[i] : WM_FT_ANY;
    ok = (s->onames[i] = strdup(spec->out_names[i])) != NULL;
    s->lf[i].index = -1;
    if (ok && s->oside[i] == 0) ok = (s->lf[i].name = strdup(spec->out_lfield[i])) != NULL;
    if (s->oside[i] == 1) s->orf[i] = spec->out_rfield[i];
  }
  if (ok) ok = (s->schema = wm_schema_new((uint32_t)no, (const char *const *)s->onames, s->otypes)) != NULL;
  wm_op *op = ok ? wm_op_new(ctx, &sqllookup_vt, s, name) : NULL;
  if (!op) {
    sl_destroy(&ctx->host, s);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  s->spec.table = s->table;
  s->spec.fields = (const char *const *)s->fields;
  s->spec.lkey = s->lkey;
  s->spec.rkey = s->rkey;
  s->spec.out_names = (const char *const *)s->onames;
  s->spec.out_types = s->otypes;
  s->spec.out_side = s->oside;
  s->spec.out_lfield = NULL;
  s->spec.out_rfield = s->orf;
  return op;
}
