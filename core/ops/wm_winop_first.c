/* The window operator's first records packed inline. */
#include "ops/wm_winop_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- inline first records ------------------------------------------------------------
 *
 * The built-in sum, min and max keep their window's first record (to emit it with the
 * field replaced). Retaining the row costs its allocation, its key string's, and the
 * decoder's reuse of its row: at 10^6 keys nearly every record opens a window. Instead,
 * when the key is a string of up to 8 bytes (all in the hot part, not copied) and the
 * record is a row of the schema seen first (rec_schema) whose fields are scalars, the
 * record is packed into the entry's cold part: a tag byte per field, then 8 bytes per
 * field that has a payload (a number; a string of up to 8 bytes; a string equal to the
 * key has none). It is unpacked into a new row only when the window fires (the result:
 * the row with the field replaced, what builtin_fire makes) or is checkpointed (the row
 * as it came: the checkpoint's bytes are those of the retained row). A record that does
 * not pack is retained as before. */

enum { PK_NIL, PK_FALSE, PK_TRUE, PK_INT, PK_FLOAT, PK_KEY, PK_STR0 /* + length, 0 to 8 */ };

/* Packs row r into out (the cold part of e, whose key is kb): the key's bytes after the
 * first 8 (tl of them), a tag per field, 8 bytes per field with a payload. False when it
 * does not fit. */
static bool pack_first(const wentry *e, const char *kb, size_t tl, const wm_row *r,
                       uint8_t out[32]) {
  uint32_t n = r->schema->nfields;
  uint8_t b[32] = {0};
  if (tl + n > sizeof b) return false;
  if (tl) memcpy(b, kb + 8, tl);
  uint8_t *tag = b + tl;
  size_t at = tl + n;
  for (uint32_t j = 0; j < n; j++) {
    const wm_value *v = &r->fields[j];
    const void *src = NULL;
    size_t len = 8;
    switch (v->type) {
    case WM_NIL: tag[j] = PK_NIL; break;
    case WM_BOOL: tag[j] = v->u.b ? PK_TRUE : PK_FALSE; break;
    case WM_INT: tag[j] = PK_INT; src = &v->u.i; break;
    case WM_FLOAT: tag[j] = PK_FLOAT; src = &v->u.f; break;
    case WM_CSTR:
    case WM_STR: {
      if (v->flags) return false;
      size_t l;
      const char *p = wm_value_str(v, &l);
      /* the key (a string of up to 8 bytes is its kpre: no call) */
      if (e->kcls == KEY_STR && l == e->klen &&
          (l <= 8 ? str_pre(p, l) == e->kpre : memcmp(p, kb, l) == 0)) {
        tag[j] = PK_KEY;
        break;
      }
      if (l > 8) return false;
      tag[j] = (uint8_t)(PK_STR0 + l);
      src = p;
      len = l;
      break;
    }
    default: return false;
    }
    if (!src) continue;
    if (at + 8 > sizeof b) return false;
    if (len == 8) memcpy(b + at, src, 8); /* numbers: a fixed size, no call */
    else memcpy(b + at, src, len);
    at += 8;
  }
  memcpy(out, b, sizeof b);
  return true;
}

/* A string of len bytes from p in field f of a row: written over the string f holds when
 * nobody else holds it and it has room (*cap bytes; cap NULL: never), else a new one with
 * room for at least 16 bytes. WM_OK or WM_ERR. */
static int put_str(wm_value *f, const char *p, size_t len, uint32_t *cap) {
  if (cap && f->type == WM_STR && f->u.s->refs == 1 && *cap >= len) {
    memcpy(f->u.s->data, p, len);
    f->u.s->data[len] = '\0';
    f->u.s->len = (uint32_t)len;
    return WM_OK;
  }
  size_t room = len < 16 ? 16 : len;
  wm_str *w = malloc(sizeof *w + room + 1);
  if (!w) return WM_ERR;
  w->refs = 1;
  w->len = (uint32_t)len;
  memcpy(w->data, p, len);
  w->data[len] = '\0';
  if (f->type != WM_NIL) wm_value_release(NULL, f); /* a string: no host needed */
  f->type = WM_STR;
  f->flags = 0;
  f->u.s = w;
  if (cap) *cap = (uint32_t)room;
  return WM_OK;
}

/* Fills row r (of rec_schema; fields nil or, with cap, those of the last fill) with the
 * record packed in entry i, field `field` (when >= 0) set to *val instead. */
static int fill_first(const winop *s, uint32_t i, int field, const wm_value *val, wm_row *r,
                      uint32_t *cap) {
  const wentry *e = &s->e[i];
  size_t tl = e->klen > 8 ? e->klen - 8 : 0;
  const uint8_t *tag = s->c[i].rec + tl;
  uint32_t n = s->rec_schema->nfields;
  const uint8_t *pay = tag + n;
  keybuf kb;
  key_of(s, i, &kb); /* its bytes in kb.b */
  for (uint32_t j = 0; j < n; j++) {
    wm_value *f = &r->fields[j];
    uint8_t t = tag[j];
    wm_value v = wm_nil();
    const char *str = NULL;
    size_t len = 0;
    if (t == PK_INT) {
      v = wm_int(0);
      memcpy(&v.u.i, pay, 8);
    } else if (t == PK_FLOAT) {
      v = wm_float(0);
      memcpy(&v.u.f, pay, 8);
    } else if (t == PK_TRUE || t == PK_FALSE) {
      v = wm_bool(t == PK_TRUE);
    } else if (t == PK_KEY) {
      str = kb.b;
      len = e->klen;
    } else if (t >= PK_STR0) {
      str = (const char *)pay;
      len = (size_t)(t - PK_STR0);
    }
    if (t == PK_INT || t == PK_FLOAT || t >= PK_STR0) pay += 8;
    if ((int)j == field) {
      v = *val; /* a number (sum, min, max): nothing to retain */
      str = NULL;
    }
    if (str) {
      if (put_str(f, str, len, cap ? &cap[j] : NULL) != WM_OK) return WM_ERR;
    } else {
      if (f->type == WM_STR) wm_value_release(NULL, f);
      *f = v;
    }
  }
  return WM_OK;
}

/* The row packed in entry i as a new owned WM_ROW in *out (checkpoints). */
int wm_wo_unpack_first(wm_op *op, const winop *s, uint32_t i, wm_value *out) {
  wm_row *r = wm_row_new(s->rec_schema);
  if (!r || fill_first(s, i, -1, NULL, r, NULL) != WM_OK) {
    if (r) wm_row_release(&op->ctx->host, r);
    return wm_ctx_error(op->ctx, "out of memory writing a checkpoint");
  }
  *out = wm_row_value(r);
  return WM_OK;
}

/* The first record of a new window (aux still nil) packed into entry i when it can be:
 * true, with aux set as builtin_add sets it (and the key's copy, if it had one, dropped:
 * its bytes after the first 8 are packed with the record); false: add it as before. */
bool wm_wo_inline_first(wm_op *op, winop *s, uint32_t i, const wm_value *rec) {
  wentry *e = &s->e[i];
  wcold *c = &s->c[i];
  if (rec->type != WM_ROW || e->kcls == KEY_OTHER || e->klen > 8 + 24) return false;
  const wm_row *r = rec->u.row;
  if (r->schema != s->rec_schema) {
    if (s->rec_schema) return false;
    int fi = wm_schema_find(r->schema, s->pane_field->name);
    if (fi < 0) return false;
    s->rec_schema = r->schema;
    s->rec_schema->refs++;
    s->inl_fidx = fi;
  }
  const wm_value *v = &r->fields[s->inl_fidx];
  if (v->type != WM_INT && v->type != WM_FLOAT) return false; /* builtin_add's error */
  keybuf kb;
  const wm_value *key = key_of(s, i, &kb);
  size_t n;
  const char *kbytes = wm_value_str(key, &n);
  uint8_t packed[32];
  if (!pack_first(e, kbytes, n > 8 ? n - 8 : 0, r, packed)) return false;
  wm_value_release(&op->ctx->host, &c->key);
  memcpy(c->rec, packed, sizeof packed);
  e->inl = 1;
  e->aux = *v;
  return true;
}

/* Fires a window whose first record is packed in entry first (itself, or the pane created
 * first): what builtin_fire emits, the record with the field set to *aux. */
int wm_wo_inline_fire(wm_op *op, winop *s, uint32_t first, int64_t max_ts, const wm_value *aux) {
  const wm_host *h = &op->ctx->host;
  /* the row fired last, when nobody downstream kept it: no allocation per firing */
  if (s->fire_row && s->fire_row->refs > 1) {
    wm_row_release(h, s->fire_row);
    s->fire_row = NULL;
  }
  if (!s->fire_row) {
    uint32_t n = s->rec_schema->nfields;
    if (!s->fire_cap && !(s->fire_cap = calloc(n ? n : 1, sizeof *s->fire_cap)))
      return wm_ctx_error(op->ctx, "out of memory firing a window");
    memset(s->fire_cap, 0, (n ? n : 1) * sizeof *s->fire_cap);
    if (!(s->fire_row = wm_row_new(s->rec_schema)))
      return wm_ctx_error(op->ctx, "out of memory firing a window");
  }
  if (fill_first(s, first, s->inl_fidx, aux, s->fire_row, s->fire_cap) != WM_OK)
    return wm_ctx_error(op->ctx, "out of memory firing a window");
  wm_value out = wm_row_value(s->fire_row);
  return wm_op_emit(op, 0, &out, max_ts);
}
