/* The parse operator and the CSV decoder (see wm_csv.h). */
#include "io/wm_csv.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "io/wm_source.h"
#include "time/wm_time.h"

/* ---- the parse operator -------------------------------------------------------------- */

typedef struct parser {
  wm_parse_config cfg;
  char *what;
  int port;               /* the "parse_errors" port (WM_PARSE_SIDE) */
  wm_schema *err_schema;  /* {error, line, text} */
  uint64_t seen;          /* lines seen: the line number when no source publishes one */
  int header_done;        /* without a source position: the first line was skipped */
  /* lookahead (parser_ahead_wants): the operator the hints go to, the columns they read */
  wm_op *ahead_to;
  uint32_t kcol, tcol;    /* the key's and the timestamp's columns */
  uint64_t hints;         /* lines hinted that the operator after used */
  wm_error bad;           /* the decoder's message for a malformed line */
} parser;

static void parser_free(wm_op *op) {
  parser *p = op->impl;
  if (!p) return;
  if (p->cfg.dec.free) p->cfg.dec.free(p->cfg.dec.ud);
  wm_schema_release(p->err_schema);
  free(p->what);
  free(p);
}

/* Appends at most 60 bytes of s, with "..." when cut. */
static void add_excerpt(wm_buf *b, const char *s, size_t n) {
  if (n > 60) {
    wm_buf_add(b, s, 60);
    wm_buf_adds(b, "...");
  } else {
    wm_buf_add(b, s, n);
  }
}

static int parse_error(wm_op *op, parser *p, const char *line, size_t n, const char *msg) {
  wm_ctx *ctx = op->ctx;
  const wm_pos *pos = ctx->pos;
  uint64_t lineno = pos ? pos->line : p->seen;
  op->m.parse_errors++;
  if (p->cfg.on_error == WM_PARSE_SKIP) return WM_OK;
  if (p->cfg.on_error == WM_PARSE_FAIL) {
    wm_buf b;
    wm_buf_init(&b);
    if (pos) wm_pos_format(&b, pos);
    if (pos) {
      wm_ctx_error(ctx, "%s: %s", b.data ? b.data : "", msg);
      wm_error_pos_shown(&ctx->error); /* the message starts with it */
    } else
      wm_ctx_error(ctx, "line %llu: %s", (unsigned long long)lineno, msg);
    wm_buf_clear(&b);
    add_excerpt(&b, line, n);
    wm_ctx_error_append(ctx, "\n  in %s '%s' on line \"%s\"", p->what, op->name,
                        b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  /* side output: {error = msg, line = n, text = line} */
  wm_row *r = wm_row_new(p->err_schema);
  if (!r) return wm_ctx_error(ctx, "out of memory");
  wm_str *e = wm_str_new(msg, strlen(msg)), *t = wm_str_new(line, n);
  if (!e || !t) {
    free(e);
    free(t);
    wm_row_release(&ctx->host, r);
    return wm_ctx_error(ctx, "out of memory");
  }
  r->fields[0].type = WM_STR;
  r->fields[0].u.s = e;
  r->fields[1] = wm_int((int64_t)lineno);
  r->fields[2].type = WM_STR;
  r->fields[2].u.s = t;
  wm_value v = wm_row_value(r);
  int rc = wm_op_emit(op, p->port, &v, WM_TIME_MIN);
  wm_value_release(&ctx->host, &v);
  return rc;
}

static int parser_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  parser *p = op->impl;
  wm_ctx *ctx = op->ctx;
  p->seen++;
  if (!wm_value_is_string(rec)) {
    wm_buf b;
    wm_buf_init(&b);
    wm_format_value(&b, rec, 0, ctx->host.format, ctx->host.ud);
    wm_ctx_error(ctx, "%s expects lines (strings), got the record %s", p->what,
                 b.data ? b.data : "");
    wm_op_error_parts(op);
    wm_buf_free(&b);
    return WM_ERR;
  }
  size_t n;
  const char *s = wm_value_str(rec, &n);
  if (p->cfg.header) {
    /* the first record of each source (of each file a followed path rotates to) */
    if (ctx->pos) {
      if (ctx->pos->line == 1) return WM_OK;
    } else if (!p->header_done) {
      p->header_done = 1;
      return WM_OK;
    }
  }
  wm_value out = wm_nil();
  int rc = p->cfg.dec.decode(p->cfg.dec.ud, op, s, n, &out, &p->bad);
  if (rc == 1) return parse_error(op, p, s, n, p->bad.msg);
  if (rc != 0) return WM_ERR;
  rc = wm_op_emit(op, 0, &out, ts);
  if (out.type == WM_ROW && out.u.row->refs > 1)
    out.u.row->refs--; /* the usual case: the decoder still holds the row */
  else
    wm_value_release(&ctx->host, &out);
  return rc;
}

static bool parser_ahead_wants(wm_op *op, wm_ahead *a);
static size_t parser_ahead(wm_op *op, const wm_hint *lines, size_t n);

static const wm_op_vt parser_vt = {
    .kind = "parse",
    .record = parser_record,
    .free = parser_free,
    .ahead_wants = parser_ahead_wants,
    .ahead = parser_ahead,
};

wm_op *wm_parse_new(wm_ctx *ctx, const char *name, wm_parse_config *cfg) {
  parser *p = calloc(1, sizeof *p);
  static const char *const names[] = {"error", "line", "text"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_STRING};
  if (!p) goto oom;
  p->cfg = *cfg;
  p->what = strdup(cfg->what ? cfg->what : "parse");
  p->err_schema = wm_schema_new(3, names, types);
  if (!p->what || !p->err_schema) goto oom;
  wm_op *op = wm_op_new(ctx, &parser_vt, p, name);
  if (!op) goto oom;
  if (cfg->on_error == WM_PARSE_SIDE && (p->port = wm_op_port(op, WM_PARSE_ERRORS_TAG)) < 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL; /* the op (and p) are freed with the context */
  }
  return op;
oom:
  if (p) {
    wm_schema_release(p->err_schema);
    free(p->what);
    free(p);
  }
  if (cfg->dec.free) cfg->dec.free(cfg->dec.ud);
  wm_ctx_error(ctx, "out of memory");
  return NULL;
}

/* ---- the CSV decoder ----------------------------------------------------------------- */

typedef struct csvdec {
  wm_schema *schema;
  uint8_t *optional;
  uint8_t *skip;   /* per field: not decoded, left nil (wm_csv_field.skip) */
  uint32_t *cap;   /* bytes each string field of `row` can hold without reallocating */
  char sep;
  bool plain_ok;   /* every field a string or an integer: csv_plain first */
  wm_row *row;     /* the last row; reused when only the decoder holds it */
  wm_buf unq;      /* a quoted field with "" escapes, unquoted */
  char num[80];    /* a number as a C string for strtod */
} csvdec;

static void csvdec_free(void *ud) {
  csvdec *d = ud;
  if (!d) return;
  if (d->row) wm_row_release(NULL, d->row); /* only immediates and WM_STR: no host needed */
  wm_schema_release(d->schema);
  free(d->optional);
  free(d->skip);
  free(d->cap);
  wm_buf_free(&d->unq);
  free(d);
}

static void trim(const char **s, size_t *n) {
  while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

/* Decimal integer with an optional sign; 0 on success. */
static int parse_int(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (n && (s[0] == '-' || s[0] == '+')) neg = s[0] == '-', i = 1;
  if (i == n) return -1;
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (n - i <= 18) { /* below 10^18: cannot overflow, no division per digit */
    for (; i < n; i++) {
      unsigned c = (unsigned char)s[i] - '0';
      if (c > 9) return -1;
      v = v * 10 + c;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
  }
  for (; i < n; i++) {
    unsigned c = (unsigned char)s[i] - '0';
    if (c > 9) return -1;
    if (v > (lim - c) / 10) return -1;
    v = v * 10 + c;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
/* The value of the k digits at s, or UINT64_MAX when one of them is not a digit. */
static uint64_t digits_bytes(const char *s, int k) {
  uint64_t v = 0;
  for (int j = 0; j < k; j++) {
    unsigned c = (unsigned char)s[j] - '0';
    if (c > 9) return UINT64_MAX;
    v = v * 10 + c;
  }
  return v;
}
#endif

/* The value of 8 ASCII digits at s (s[0] the most significant), or UINT64_MAX when one
 * of the 8 bytes is not a digit (SWAR: 8 digits in a few multiplications). */
static uint64_t load_digits8(const char *s) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t x;
  memcpy(&x, s, 8);
  /* every byte in '0'..'9': its high nibble is 3, and still 3 after adding 6 (a byte
   * whose high nibble is 3 never carries into the next one) */
  if (((x & 0xF0F0F0F0F0F0F0F0ULL) | (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) !=
      0x3333333333333333ULL)
    return UINT64_MAX;
  x = ((x & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;          /* pairs: 10 * a + b */
  x = ((x & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;     /* quads */
  x = ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
  return x;
#else
  return digits_bytes(s, 8);
#endif
}

/* load_digits8 for 4 digits: their value, or UINT32_MAX when one of the 4 bytes is not a
 * digit. */
static uint32_t load_digits4(const char *s) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint32_t x;
  memcpy(&x, s, 4);
  if (((x & 0xF0F0F0F0u) | (((x + 0x06060606u) & 0xF0F0F0F0u) >> 4)) != 0x33333333u)
    return UINT32_MAX;
  x = ((x & 0x0F0F0F0Fu) * 2561) >> 8;   /* pairs: 10 * a + b */
  return ((x & 0x00FF00FFu) * 6553601) >> 16;
#else
  uint64_t v = digits_bytes(s, 4);
  return v == UINT64_MAX ? UINT32_MAX : (uint32_t)v;
#endif
}

/* A decimal number (no hex, inf or nan): an integer when written as one, as Lua's
 * tonumber does; 0 on success, -1 when not a number, -2 when out of a double's range
 * ("1e400" is rejected as "inf" is: a number column holds finite numbers only). */
static int parse_num(csvdec *d, const char *s, size_t n, wm_value *out) {
  int64_t i;
  if (parse_int(s, n, &i) == 0) {
    *out = wm_int(i);
    return 0;
  }
  if (n == 0 || n >= sizeof d->num) return -1;
  int digits = 0;
  for (size_t k = 0; k < n; k++) {
    char c = s[k];
    if (c >= '0' && c <= '9') digits = 1;
    else if (!(c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return -1;
  }
  if (!digits) return -1;
  memcpy(d->num, s, n);
  d->num[n] = '\0';
  char *end;
  double f = strtod(d->num, &end);
  if (end != d->num + n) return -1;
  if (isinf(f)) return -2;
  *out = wm_float(f);
  return 0;
}

static int ieq(const char *s, size_t n, const char *lit) {
  size_t l = strlen(lit);
  if (n != l) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != lit[i]) return 0;
  }
  return 1;
}

/* Stores a string field, reusing its buffer when only this row holds it; avail: bytes
 * readable from s (at least n). */
static int set_str(csvdec *d, uint32_t i, const char *s, size_t n, size_t avail) {
  wm_value *f = &d->row->fields[i];
  if (f->type == WM_STR && f->u.s->refs == 1 && d->cap[i] >= n) {
    if (n <= 16 && avail >= 16 && d->cap[i] >= 16)
      memcpy(f->u.s->data, s, 16); /* a fixed size, no call: the bytes past n are unused */
    else
      memcpy(f->u.s->data, s, n);
    f->u.s->data[n] = '\0';
    f->u.s->len = (uint32_t)n;
    return 0;
  }
  wm_value_release(NULL, f);
  if (n > UINT32_MAX - 64) return -1;
  uint32_t cap = n < 24 ? 24 : (uint32_t)n;
  wm_str *str = malloc(sizeof *str + cap + 1);
  if (!str) return -1;
  str->refs = 1;
  str->len = (uint32_t)n;
  memcpy(str->data, s, n);
  str->data[n] = '\0';
  f->type = WM_STR;
  f->u.s = str;
  d->cap[i] = cap;
  return 0;
}

/* Fills err with "field 'name': 'text' is not an integer"; returns 1 (a malformed line). */
static int bad_field(wm_error *err, const char *name, const char *s, size_t n,
                     const char *what) {
  int cut = n > 40;
  wm_error_set(err, "field '%s': '%.*s%s' is not %s", name, cut ? 40 : (int)n, s,
               cut ? "..." : "", what);
  return 1;
}

/* The run of ASCII digits from c: its end, and its value in *v (modulo 2^64 past 19
 * digits); 8 and then 4 digits in one step each when they are there. */
static inline const char *scan_digits(const char *c, const char *end, uint64_t *v) {
  uint64_t r = 0;
  if (end - c >= 8) {
    uint64_t x = load_digits8(c);
    if (x != UINT64_MAX) {
      r = x;
      c += 8;
    }
  }
  if (end - c >= 4) {
    uint32_t x = load_digits4(c);
    if (x != UINT32_MAX) {
      r = r * 10000 + x;
      c += 4;
    }
  }
  while (c < end) {
    unsigned dg = (unsigned char)*c - '0';
    if (dg > 9) break;
    r = r * 10 + dg;
    c++;
  }
  *v = r;
  return c;
}

/* The first sep from c (or end). Fields are short: a plain loop beats a call to memchr,
 * 8 bytes at a time: the first byte equal to sep is the lowest zero byte of x ^ seps. */
static inline const char *find_sep(const char *c, const char *end, char sep) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ULL, seps = ones * (unsigned char)sep;
  while (end - c >= 8) {
    uint64_t x;
    memcpy(&x, c, 8);
    x ^= seps;
    uint64_t z = (x - ones) & ~x & (ones << 7);
    if (z) return c + __builtin_ctzll(z) / 8;
    c += 8;
  }
#endif
  while (c < end && *c != sep) c++;
  return c;
}

/* The usual line, decoded in one pass with no per-field choices beyond the column's
 * type: every field unquoted, integers of 1 to 18 plain digits, non-empty strings written
 * over the row's own string of the field (only the decoder holds it, with room). 0 when the
 * whole line was decoded so; 1 for anything else (a quote, blanks or a sign in an integer,
 * an empty field, a string to allocate, too few or too many fields), and the general loop
 * then decodes the line again from its start, every field, as if this had not run. */
static int csv_plain(csvdec *d, const char *s, const char *end) {
  const uint32_t nf = d->schema->nfields;
  const uint8_t *const types = d->schema->types;
  wm_value *const fields = d->row->fields;
  const char sep = d->sep;
  const char *p = s;
  for (uint32_t i = 0;;) {
    wm_value *f = &fields[i];
    const char *c = p;
    if (d->skip[i]) {
      if (c < end && *c == '"') return 1;
      c = find_sep(c, end, sep);
    } else if (types[i] == WM_FT_INTEGER) {
      uint64_t v;
      c = scan_digits(c, end, &v);
      if (c == p || c - p > 18 || (c < end && *c != sep) || f->type == WM_STR) return 1;
      *f = wm_int((int64_t)v);
    } else {
      if (c == end || *c == '"') return 1;
      c = find_sep(c, end, sep);
      {
        size_t fl = (size_t)(c - p);
        if (fl == 0 || f->type != WM_STR || f->u.s->refs != 1 || d->cap[i] < fl) return 1;
        if (fl <= 16 && end - p >= 16 && d->cap[i] >= 16)
          memcpy(f->u.s->data, p, 16); /* a fixed size, no call: the bytes past fl are unused */
        else
          memcpy(f->u.s->data, p, fl);
        f->u.s->data[fl] = '\0';
        f->u.s->len = (uint32_t)fl;
      }
    }
    p = c;
    if (++i == nf) return p == end ? 0 : 1;
    if (p == end) return 1;
    p++; /* the separator */
  }
}

static int csv_decode(void *ud, wm_op *op, const char *s, size_t n, wm_value *out,
                      wm_error *err) {
  csvdec *d = ud;
  const wm_schema *sc = d->schema;
  const char *p = s, *end = s + n;
  (void)op;
  if (!d->row || d->row->refs != 1) {
    if (d->row) wm_row_release(NULL, d->row);
    d->row = wm_row_new(d->schema);
    if (!d->row) return wm_ctx_error(op->ctx, "out of memory");
  }
  if (d->plain_ok && sc->nfields > 0 && csv_plain(d, s, end) == 0) goto decoded;
  for (uint32_t i = 0; i < sc->nfields; i++) {
    const char *name = sc->names[i];
    const char *fs;
    size_t fl;
    int quoted = 0;
    if (i > 0) {
      if (p >= end) {
        wm_error_set(err, "expected %u fields, got %u", sc->nfields, i);
        return 1;
      }
      p++; /* the separator */
    }
    if (sc->types[i] == WM_FT_INTEGER && p < end && !d->skip[i]) {
      /* the common case of an integer field: plain digits up to the separator, parsed
       * while scanning (one pass instead of a scan, a trim and a parse). Anything else
       * (a sign, blanks, quotes, 19 digits or more, bad text) takes the general path
       * below from the same place. */
      uint64_t v;
      char sep = d->sep;
      const char *c = scan_digits(p, end, &v);
      if (c > p && c - p <= 18 && (c == end || *c == sep)) {
        wm_value *f = &d->row->fields[i];
        if (f->type == WM_STR) wm_value_release(NULL, f);
        *f = wm_int((int64_t)v);
        p = c;
        continue;
      }
    }
    if (p < end && *p == '"') {
      /* a quoted field: "" stands for one quote; the field ends at a lone quote */
      quoted = 1;
      const char *q = ++p;
      int escaped = 0;
      for (;;) {
        const char *c = memchr(q, '"', (size_t)(end - q));
        if (!c) {
          wm_error_set(err, "field '%s': unterminated quoted field", name);
          return 1;
        }
        if (c + 1 < end && c[1] == '"') {
          escaped = 1;
          q = c + 2;
          continue;
        }
        q = c;
        break;
      }
      if (escaped) {
        wm_buf_clear(&d->unq);
        for (const char *c = p; c < q; c++) {
          wm_buf_addc(&d->unq, *c);
          if (*c == '"') c++;
        }
        if (d->unq.oom) return wm_ctx_error(op->ctx, "out of memory");
        fs = d->unq.data ? d->unq.data : "";
        fl = d->unq.len;
      } else {
        fs = p;
        fl = (size_t)(q - p);
      }
      p = q + 1;
      if (p < end && *p != d->sep) {
        wm_error_set(err, "field '%s': unexpected text after the closing quote", name);
        return 1;
      }
    } else {
      const char *c = find_sep(p, end, d->sep);
      fs = p;
      fl = (size_t)(c - p);
      p = c;
    }
    if (d->skip[i]) continue; /* a field no one reads: bounds found, left nil */
    wm_value *f = &d->row->fields[i];
    uint8_t t = sc->types[i];
    if (t == WM_FT_STRING) {
      if (fl == 0 && !quoted && d->optional[i]) {
        wm_value_release(NULL, f);
        continue;
      }
      if (set_str(d, i, fs, fl, quoted ? fl : (size_t)(end - fs)) != 0) return wm_ctx_error(op->ctx, "out of memory");
      continue;
    }
    trim(&fs, &fl);
    if (fl == 0) {
      if (d->optional[i]) {
        wm_value_release(NULL, f);
        continue;
      }
      wm_error_set(err, "field '%s' is empty", name);
      return 1;
    }
    wm_value v;
    if (t == WM_FT_INTEGER) {
      int64_t iv;
      if (parse_int(fs, fl, &iv) != 0) return bad_field(err, name, fs, fl, "an integer");
      v = wm_int(iv);
    } else if (t == WM_FT_NUMBER) {
      int nrc = parse_num(d, fs, fl, &v);
      if (nrc != 0)
        return bad_field(err, name, fs, fl,
                         nrc == -2 ? "a finite number (out of range)" : "a number");
    } else {
      if (ieq(fs, fl, "true") || (fl == 1 && fs[0] == '1')) v = wm_bool(true);
      else if (ieq(fs, fl, "false") || (fl == 1 && fs[0] == '0')) v = wm_bool(false);
      else return bad_field(err, name, fs, fl, "a boolean (true or false)");
    }
    if (f->type == WM_STR) wm_value_release(NULL, f);
    *f = v;
  }
  if (p < end) {
    uint32_t more = 0;
    for (const char *c = p; c < end; c++) more += *c == d->sep;
    wm_error_set(err, "expected %u fields, got %u", sc->nfields, sc->nfields + more);
    return 1;
  }
decoded:
  d->row->refs++; /* the caller's reference; the decoder keeps its own for reuse */
  *out = wm_row_value(d->row);
  return 0;
}

int wm_decoder_csv(wm_decoder *dec, const wm_csv_field *fields, uint32_t n, char sep) {
  csvdec *d = calloc(1, sizeof *d);
  const char **names = calloc(n ? n : 1, sizeof *names);
  uint8_t *types = calloc(n ? n : 1, 1);
  if (!d || !names || !types) goto fail;
  wm_buf_init(&d->unq);
  d->sep = sep;
  d->optional = calloc(n ? n : 1, 1);
  d->skip = calloc(n ? n : 1, 1);
  d->cap = calloc(n ? n : 1, sizeof *d->cap);
  if (!d->optional || !d->skip || !d->cap) goto fail;
  d->plain_ok = true;
  for (uint32_t i = 0; i < n; i++) {
    names[i] = fields[i].name;
    types[i] = fields[i].type;
    d->optional[i] = fields[i].optional;
    d->skip[i] = fields[i].skip;
    if (types[i] != WM_FT_STRING && types[i] != WM_FT_INTEGER) d->plain_ok = false;
  }
  d->schema = wm_schema_new(n, names, types);
  if (!d->schema) goto fail;
  free(names);
  free(types);
  dec->decode = csv_decode;
  dec->free = csvdec_free;
  dec->ud = d;
  return 0;
fail:
  free(names);
  free(types);
  csvdec_free(d);
  return -1;
}

/* ---- lookahead -----------------------------------------------------------------------
 *
 * Hints of lines coming (from the framer before the parse) become hints of keys and
 * timestamps for the operator that asked for them after it (wm_op_vt.ahead_wants): a CSV
 * parse reads the asked string column and integer column of each line, as the decoder
 * will, without decoding the rest. */

static bool parser_ahead_wants(wm_op *op, wm_ahead *a) {
  parser *p = op->impl;
  wm_ahead d;
  if (p->cfg.dec.decode != csv_decode || !wm_op_ahead_wants(wm_op_next(op), &d) || !d.key ||
      !d.ts)
    return false;
  const csvdec *dec = p->cfg.dec.ud;
  int kc = wm_schema_find(dec->schema, d.key), tc = wm_schema_find(dec->schema, d.ts);
  if (kc < 0 || tc < 0 || dec->schema->types[kc] != WM_FT_STRING ||
      dec->schema->types[tc] != WM_FT_INTEGER)
    return false;
  p->kcol = (uint32_t)kc;
  p->tcol = (uint32_t)tc;
  p->ahead_to = d.to;
  a->to = op; /* the lines themselves */
  return true;
}

/* The key and timestamp columns of one line into *k (k->key NULL: not readable so). */
static void ahead_line(const parser *p, const char *line, size_t n, wm_hint *k) {
  const csvdec *d = p->cfg.dec.ud;
  const char *c = line, *end = line + n, *ks = NULL;
  size_t kn = 0;
  uint64_t ts = 0;
  uint32_t last = p->kcol > p->tcol ? p->kcol : p->tcol;
  k->key = NULL;
  for (uint32_t i = 0;; i++) {
    const char *f = c;
    if (i == p->tcol) {
      c = scan_digits(c, end, &ts);
      if (c == f || c - f > 18 || (c < end && *c != d->sep)) return;
    } else {
      if (c < end && *c == '"') return;
      c = find_sep(c, end, d->sep);
      if (i == p->kcol) ks = f, kn = (size_t)(c - f);
    }
    if (i == last) {
      *k = (wm_hint){ks, kn, (int64_t)ts};
      return;
    }
    if (c == end) return;
    c++;
  }
}

static size_t parser_ahead(wm_op *op, const wm_hint *lines, size_t n) {
  parser *p = op->impl;
  wm_hint k[WM_AHEAD];
  for (size_t j = 0; j < n; j++) ahead_line(p, lines[j].key, lines[j].n, &k[j]);
  size_t used = p->ahead_to->vt->ahead(p->ahead_to, k, n);
  p->hints += used;
  return used;
}

uint64_t wm_parse_lookahead_hints(const wm_op *op) { return ((const parser *)op->impl)->hints; }
