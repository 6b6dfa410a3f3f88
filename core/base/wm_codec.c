#include "base/wm_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wm_encoder_init(wm_encoder *e) { memset(e, 0, sizeof *e); }

void wm_encoder_free(wm_encoder *e) {
  for (int i = 0; i < WM_CODEC_SCHEMAS; i++)
    if (e->schemas[i]) wm_schema_release(e->schemas[i]);
  memset(e, 0, sizeof *e);
}

void wm_decoder_init(wm_decoder *d) { memset(d, 0, sizeof *d); }

static void drop_kept(wm_decoder *d, int id) {
  if (d->keep[id]) wm_row_release(NULL, d->keep[id]); /* scalars only: no host needed */
  free(d->cap[id]);
  d->keep[id] = NULL;
  d->cap[id] = NULL;
}

void wm_decoder_free(wm_decoder *d) {
  for (int i = 0; i < WM_CODEC_SCHEMAS; i++) {
    drop_kept(d, i);
    if (d->schemas[i]) wm_schema_release(d->schemas[i]);
  }
  memset(d, 0, sizeof *d);
}

void wm_codec_put_uvar_long(wm_buf *b, uint64_t v) {
  if (wm_buf_reserve(b, 10) != 0) return;
  uint8_t *d = (uint8_t *)b->data + b->len, *start = d;
  while (v >= 0x80) {
    *d++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *d++ = (uint8_t)v;
  b->len += (size_t)(d - start);
  b->data[b->len] = '\0';
}

int wm_codec_get_uvar_long(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t c = *(*p)++;
    r |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

static void put_str(wm_buf *b, int tag, const char *s, size_t n) {
  wm_buf_addc(b, (char)tag);
  wm_codec_put_uvar(b, n);
  wm_buf_add(b, s, n);
}

/* The id of a schema in the encoder; *fresh when it must be (re)defined. */
static int schema_id(wm_encoder *e, wm_schema *s, int *fresh) {
  for (int i = 0; i < WM_CODEC_SCHEMAS; i++)
    if (e->schemas[i] == s) {
      *fresh = 0;
      return i;
    }
  int id = e->next;
  e->next = (e->next + 1) % WM_CODEC_SCHEMAS;
  if (e->schemas[id]) wm_schema_release(e->schemas[id]);
  /* keep it referenced: its address can then never name another schema */
  s->refs++;
  e->schemas[id] = s;
  *fresh = 1;
  return id;
}

int wm_encode_value(wm_encoder *e, const wm_codec_host *ch, wm_buf *b, const wm_value *v,
                    wm_error *err) {
  switch (v->type) {
  case WM_NIL: wm_buf_addc(b, WM_C_NIL); break;
  case WM_BOOL: wm_buf_addc(b, v->u.b ? WM_C_TRUE : WM_C_FALSE); break;
  case WM_INT:
    wm_buf_addc(b, WM_C_INT);
    wm_codec_put_ivar(b, v->u.i);
    break;
  case WM_FLOAT: {
    char raw[8];
    memcpy(raw, &v->u.f, 8);
    wm_buf_addc(b, WM_C_FLOAT);
    wm_buf_add(b, raw, 8);
    break;
  }
  case WM_CSTR:
  case WM_STR: {
    size_t n;
    const char *s = wm_value_str(v, &n);
    put_str(b, (v->flags & WM_VF_COMPOSITE) ? WM_C_KEY : WM_C_STR, s, n);
    break;
  }
  case WM_ROW: {
    wm_row *r = v->u.row;
    wm_schema *s = r->schema;
    int fresh, id = schema_id(e, s, &fresh);
    wm_buf_addc(b, fresh ? WM_C_ROWDEF : WM_C_ROW);
    wm_codec_put_uvar(b, (uint64_t)id);
    if (fresh) {
      wm_codec_put_uvar(b, s->nfields);
      for (uint32_t i = 0; i < s->nfields; i++) {
        wm_buf_addc(b, (char)s->types[i]);
        size_t n = strlen(s->names[i]);
        wm_codec_put_uvar(b, n);
        wm_buf_add(b, s->names[i], n);
      }
    }
    for (uint32_t i = 0; i < s->nfields; i++)
      if (wm_encode_value(e, ch, b, &r->fields[i], err) != 0) return -1;
    break;
  }
  case WM_SLOT:
    if (!ch || !ch->encode) {
      wm_error_set(err, "a host value cannot be encoded here");
      return -1;
    }
    if (ch->encode(ch->ud, b, v, err) != 0) return -1;
    break;
  default:
    wm_error_set(err, "a value of unknown type %d cannot be encoded", v->type);
    return -1;
  }
  if (b->oom) {
    wm_error_set(err, "out of memory encoding a record");
    return -1;
  }
  return 0;
}

static int truncated(wm_error *err) {
  wm_error_set(err, "corrupt record encoding (truncated)");
  return -1;
}

/* A composite key's bytes (wm_key_compose): parts 's' + 4-byte length + bytes, or 'f', 'b',
 * 'i', 'n' (NULL) + 8 bytes. Decoded keys are read by wm_key_part, which trusts this layout. */
static int key_well_formed(const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  while (p < end) {
    uint8_t tag = *p++;
    if (tag == 's') {
      uint32_t l;
      if (end - p < 4) return 0;
      memcpy(&l, p, 4);
      p += 4;
      if ((size_t)(end - p) < l) return 0;
      p += l;
    } else if (tag == 'f' || tag == 'b' || tag == 'i' || tag == 'n') {
      if (end - p < 8) return 0;
      p += 8;
    } else {
      return 0;
    }
  }
  return 1;
}

static int decode_rec(wm_decoder *d, const wm_host *h, const wm_codec_host *ch, const uint8_t **p,
                      const uint8_t *end, wm_value *out, int top, wm_error *err);

/* A string field of a kept row decoded in place (its string held only by that row and at
 * least n bytes large). 1 done, 0 not possible here, -1 corrupt. */
static int str_in_place(const wm_decoder *d, int id, uint32_t i, wm_value *f, const uint8_t **p,
                        const uint8_t *end, wm_error *err) {
  uint8_t tag = **p;
  if ((tag != WM_C_STR && tag != WM_C_KEY) || f->type != WM_STR || f->u.s->refs != 1) return 0;
  const uint8_t *q = *p + 1;
  uint64_t n;
  if (wm_codec_get_uvar(&q, end, &n) != 0 || (uint64_t)(end - q) < n) return truncated(err);
  if (n > d->cap[id][i]) return 0;
  if (tag == WM_C_KEY && !key_well_formed(q, (size_t)n)) {
    wm_error_set(err, "corrupt record encoding (composite key)");
    return -1;
  }
  memcpy(f->u.s->data, q, (size_t)n);
  f->u.s->data[n] = '\0';
  f->u.s->len = (uint32_t)n;
  f->flags = tag == WM_C_KEY ? WM_VF_COMPOSITE : 0;
  *p = q + n;
  return 1;
}

/* A record's row: into the kept row of its schema when only the decoder holds it, else a new
 * one, which is kept in turn when all its fields are scalars (nil, booleans, numbers,
 * strings). */
static int decode_top_row(wm_decoder *d, const wm_host *h, const wm_codec_host *ch,
                          const uint8_t **p, const uint8_t *end, int id, wm_schema *s,
                          wm_value *out, wm_error *err) {
  wm_row *r = d->keep[id];
  int reuse = r && r->refs == 1 && r->schema == s;
  if (!reuse) {
    if (r) drop_kept(d, id);
    if (!(r = wm_row_new(s))) {
      wm_error_set(err, "out of memory decoding a record");
      return -1;
    }
  }
  int scalar = 1;
  for (uint32_t i = 0; i < s->nfields; i++) {
    wm_value *f = &r->fields[i];
    int rc = reuse && *p < end ? str_in_place(d, id, i, f, p, end, err) : 0;
    if (rc == 0) {
      if (reuse) {
        wm_value_release(NULL, f); /* a kept row holds scalars only */
        d->cap[id][i] = 0;
      }
      rc = decode_rec(d, h, ch, p, end, f, 0, err) == 0 ? 1 : -1;
      if (rc == 1 && reuse && f->type == WM_STR) d->cap[id][i] = f->u.s->len;
    }
    if (rc < 0) {
      if (reuse) {
        d->keep[id] = NULL;
        free(d->cap[id]);
        d->cap[id] = NULL;
      }
      wm_row_release(h, r);
      return -1;
    }
    if (f->type == WM_SLOT || f->type == WM_ROW) scalar = 0;
  }
  if (reuse && !scalar) { /* the kept row took a table: the caller's alone from here on */
    d->keep[id] = NULL;
    free(d->cap[id]);
    d->cap[id] = NULL;
    *out = wm_row_value(r);
    return 0;
  }
  if (!reuse && scalar && (d->cap[id] = malloc((s->nfields ? s->nfields : 1) * sizeof(uint32_t)))) {
    for (uint32_t i = 0; i < s->nfields; i++)
      d->cap[id][i] = r->fields[i].type == WM_STR ? r->fields[i].u.s->len : 0;
    d->keep[id] = r;
  }
  if (d->keep[id] == r) r->refs++; /* the caller's reference; the decoder keeps its own */
  *out = wm_row_value(r);
  return 0;
}

static int decode_rec(wm_decoder *d, const wm_host *h, const wm_codec_host *ch, const uint8_t **p,
                      const uint8_t *end, wm_value *out, int top, wm_error *err) {
  *out = wm_nil();
  if (*p >= end) return truncated(err);
  uint8_t tag = **p;
  switch (tag) {
  case WM_C_NIL: (*p)++; return 0;
  case WM_C_FALSE: (*p)++; *out = wm_bool(false); return 0;
  case WM_C_TRUE: (*p)++; *out = wm_bool(true); return 0;
  case WM_C_INT: {
    int64_t i;
    (*p)++;
    if (wm_codec_get_ivar(p, end, &i) != 0) return truncated(err);
    *out = wm_int(i);
    return 0;
  }
  case WM_C_FLOAT: {
    double f;
    (*p)++;
    if (end - *p < 8) return truncated(err);
    memcpy(&f, *p, 8);
    *p += 8;
    *out = wm_float(f);
    return 0;
  }
  case WM_C_STR:
  case WM_C_KEY: {
    uint64_t n;
    (*p)++;
    if (wm_codec_get_uvar(p, end, &n) != 0 || (uint64_t)(end - *p) < n) return truncated(err);
    if (tag == WM_C_KEY && !key_well_formed(*p, (size_t)n)) {
      wm_error_set(err, "corrupt record encoding (composite key)");
      return -1;
    }
    if (top && tag == WM_C_STR) {
      *out = wm_cstr((const char *)*p, (size_t)n);
    } else {
      wm_str *s = wm_str_new((const char *)*p, (size_t)n);
      if (!s) {
        wm_error_set(err, "out of memory decoding a record");
        return -1;
      }
      out->type = WM_STR;
      out->u.s = s;
      if (tag == WM_C_KEY) out->flags = WM_VF_COMPOSITE;
    }
    *p += n;
    return 0;
  }
  case WM_C_TABLE:
    if (!ch || !ch->decode) {
      wm_error_set(err, "a host value cannot be decoded here");
      return -1;
    }
    return ch->decode(ch->ud, p, end, out, err);
  case WM_C_ROWDEF:
  case WM_C_ROW: {
    uint64_t id, nf;
    (*p)++;
    if (wm_codec_get_uvar(p, end, &id) != 0) return truncated(err);
    if (id >= WM_CODEC_SCHEMAS) {
      wm_error_set(err, "corrupt record encoding (schema %llu)", (unsigned long long)id);
      return -1;
    }
    if (tag == WM_C_ROWDEF) {
      if (wm_codec_get_uvar(p, end, &nf) != 0 || nf > 4096) return truncated(err);
      char **names = calloc(nf ? nf : 1, sizeof *names);
      uint8_t *types = calloc(nf ? nf : 1, 1);
      int bad = !names || !types;
      for (uint64_t i = 0; !bad && i < nf; i++) {
        uint64_t n;
        if (*p >= end) { bad = 2; break; }
        types[i] = *(*p)++;
        if (wm_codec_get_uvar(p, end, &n) != 0 || (uint64_t)(end - *p) < n) { bad = 2; break; }
        names[i] = malloc(n + 1);
        if (!names[i]) { bad = 1; break; }
        memcpy(names[i], *p, n);
        names[i][n] = '\0';
        *p += n;
      }
      wm_schema *s = bad ? NULL : wm_schema_new((uint32_t)nf, (const char *const *)names, types);
      for (uint64_t i = 0; names && i < nf; i++) free(names[i]);
      free(names);
      free(types);
      if (bad == 2) return truncated(err);
      if (!s) {
        wm_error_set(err, "out of memory decoding a record");
        return -1;
      }
      if (d->schemas[id]) wm_schema_release(d->schemas[id]);
      d->schemas[id] = s;
    }
    wm_schema *s = d->schemas[id];
    if (!s) {
      wm_error_set(err, "corrupt record encoding (undefined schema %llu)", (unsigned long long)id);
      return -1;
    }
    if (top) return decode_top_row(d, h, ch, p, end, (int)id, s, out, err);
    wm_row *r = wm_row_new(s);
    if (!r) {
      wm_error_set(err, "out of memory decoding a record");
      return -1;
    }
    for (uint32_t i = 0; i < s->nfields; i++) {
      if (decode_rec(d, h, ch, p, end, &r->fields[i], 0, err) != 0) {
        wm_row_release(h, r);
        return -1;
      }
    }
    *out = wm_row_value(r);
    return 0;
  }
  default:
    wm_error_set(err, "corrupt record encoding (tag %d)", tag);
    return -1;
  }
}

int wm_decode_value(wm_decoder *d, const wm_host *h, const wm_codec_host *ch, const uint8_t **p,
                    const uint8_t *end, wm_value *out, wm_error *err) {
  return decode_rec(d, h, ch, p, end, out, 1, err);
}
