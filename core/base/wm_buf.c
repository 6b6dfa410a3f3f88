#include "base/wm_buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wm_buf_init(wm_buf *b) { memset(b, 0, sizeof *b); }

void wm_buf_free(wm_buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

int wm_buf_grow(wm_buf *b, size_t n) {
  if (b->len + n + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    b->oom = 1;
    return -1;
  }
  b->data = d;
  b->cap = cap;
  return 0;
}

void wm_buf_add_grow(wm_buf *b, const char *s, size_t n) {
  if (wm_buf_grow(b, n) != 0) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void wm_buf_adds(wm_buf *b, const char *s) { wm_buf_add(b, s, strlen(s)); }

void wm_buf_addc_grow(wm_buf *b, char c) {
  if (wm_buf_grow(b, 1) != 0) return;
  b->data[b->len++] = c;
  b->data[b->len] = '\0';
}

void wm_buf_add_int(wm_buf *b, int64_t i) {
  char tmp[24], *p = tmp + sizeof tmp;
  uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (i < 0) *--p = '-';
  wm_buf_add(b, p, (size_t)(tmp + sizeof tmp - p));
}

void wm_buf_add_float(wm_buf *b, double f) {
  char tmp[64];
  int n;
  if (isinf(f)) n = snprintf(tmp, sizeof tmp, f > 0 ? "inf" : "-inf");
  else if (isnan(f)) n = snprintf(tmp, sizeof tmp, signbit(f) ? "-nan" : "nan");
  else {
    n = snprintf(tmp, sizeof tmp, "%.14g", f);
    if (strspn(tmp, "-0123456789") == (size_t)n) n += snprintf(tmp + n, sizeof tmp - (size_t)n, ".0");
  }
  wm_buf_add(b, tmp, (size_t)n);
}

/* The length of the valid UTF-8 sequence at s (n > 0 bytes, s[0] >= 0x80), or 0: no overlong
 * forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < len; k++)
    if (s[k] < 0x80 || s[k] > 0xBF) return 0;
  return len;
}

/* JSON text must be UTF-8 (RFC 8259): a byte that is not part of a valid UTF-8 sequence is
 * written as U+FFFD, one per byte, so that every line parses. */
void wm_buf_add_json_string(wm_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  wm_buf_addc(b, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    if (c >= 0x80) {
      size_t len = utf8_len((const unsigned char *)s + i, n - i);
      if (len) {
        i += len - 1;
        continue;
      }
    }
    wm_buf_add(b, s + run, i - run);
    run = i + 1;
    if (c >= 0x80) {
      wm_buf_add(b, "\xEF\xBF\xBD", 3);
      continue;
    }
    switch (c) {
    case '"': wm_buf_add(b, "\\\"", 2); break;
    case '\\': wm_buf_add(b, "\\\\", 2); break;
    case '\n': wm_buf_add(b, "\\n", 2); break;
    case '\r': wm_buf_add(b, "\\r", 2); break;
    case '\t': wm_buf_add(b, "\\t", 2); break;
    default: {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      wm_buf_add(b, u, 6);
    }
    }
  }
  wm_buf_add(b, s + run, n - run);
  wm_buf_addc(b, '"');
}

void wm_format_value(wm_buf *b, const wm_value *v, int json, wm_format_slot_fn slot_fn,
                     void *ud) {
  switch (v->type) {
  case WM_NIL: wm_buf_adds(b, json ? "null" : "nil"); break;
  case WM_BOOL: wm_buf_adds(b, v->u.b ? "true" : "false"); break;
  case WM_INT: wm_buf_add_int(b, v->u.i); break;
  case WM_FLOAT:
    if (json && !isfinite(v->u.f)) wm_buf_adds(b, "null");
    else wm_buf_add_float(b, v->u.f);
    break;
  case WM_CSTR:
  case WM_STR: {
    size_t n;
    if (v->flags & WM_VF_COMPOSITE) { /* a composite key shows as the list of its parts */
      wm_value part;
      int count = wm_key_part(v, 0, &part);
      wm_buf_addc(b, '[');
      for (int i = 0; i < count; i++) {
        wm_key_part(v, (size_t)i, &part);
        if (i) wm_buf_addc(b, ',');
        wm_format_value(b, &part, 1, slot_fn, ud);
      }
      wm_buf_addc(b, ']');
      break;
    }
    const char *s = wm_value_str(v, &n);
    if (json) wm_buf_add_json_string(b, s, n);
    else wm_buf_add(b, s, n);
    break;
  }
  case WM_ROW: {
    const wm_row *r = v->u.row;
    const wm_schema *s = r->schema;
    int first = 1;
    wm_buf_addc(b, '{');
    for (uint32_t k = 0; k < s->nfields; k++) {
      uint32_t i = s->sorted[k];
      if (r->fields[i].type == WM_NIL) continue; /* as a Lua table: nil fields are absent */
      if (!first) wm_buf_addc(b, ',');
      first = 0;
      wm_buf_add_json_string(b, s->names[i], strlen(s->names[i]));
      wm_buf_addc(b, ':');
      wm_format_value(b, &r->fields[i], 1, slot_fn, ud);
    }
    wm_buf_addc(b, '}');
    break;
  }
  case WM_SLOT:
    if (slot_fn) slot_fn(ud, b, v, json);
    else wm_buf_adds(b, "<value>");
    break;
  default: wm_buf_adds(b, "?"); break;
  }
}
