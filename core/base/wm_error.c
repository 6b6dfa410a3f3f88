/* A failure as data (see wm_error.h). */
#include "base/wm_error.h"

#include <stdio.h>
#include <string.h>

void wm_error_clear(wm_error *e) {
  e->msg[0] = '\0';
  e->nparts = 0;
  e->buflen = 0;
  e->trace[0] = '\0';
  e->tail[0] = '\0';
  e->text[0] = '\0';
}

void wm_error_took(wm_error *e) {
  e->nparts = 0;
  e->buflen = 0;
  e->trace[0] = '\0';
  e->tail[0] = '\0';
}

void wm_error_vset(wm_error *e, const char *fmt, va_list ap) {
  char m[WM_ERROR_MSG]; /* fmt's arguments may point into e->msg or e->text */
  vsnprintf(m, sizeof m, fmt, ap);
  wm_error_clear(e);
  memcpy(e->msg, m, strlen(m) + 1);
}

int wm_error_set(wm_error *e, const char *fmt, ...) {
  if (!e) return -1;
  va_list ap;
  va_start(ap, fmt);
  wm_error_vset(e, fmt, ap);
  va_end(ap);
  return -1;
}

static int has(const wm_error *e, int kind) {
  for (int i = 0; i < e->nparts; i++)
    if (e->part[i].kind == kind) return 1;
  return 0;
}

void wm_error_add(wm_error *e, int kind, const char *text) {
  if ((kind == WM_EPART_OP && has(e, WM_EPART_OP)) ||
      (kind == WM_EPART_WHERE && has(e, WM_EPART_WHERE)) ||
      ((kind == WM_EPART_POS || kind == WM_EPART_POS_SHOWN) &&
       (has(e, WM_EPART_POS) || has(e, WM_EPART_POS_SHOWN))))
    return;
  size_t n = text ? strlen(text) : 0;
  if (e->nparts == WM_ERROR_MAXPARTS || e->buflen + n + 1 > sizeof e->buf) return;
  if (n) memcpy(e->buf + e->buflen, text, n);
  e->buf[e->buflen + n] = '\0';
  e->part[e->nparts].kind = (unsigned char)kind;
  e->part[e->nparts].off = (unsigned short)e->buflen;
  e->part[e->nparts].len = (unsigned short)n;
  e->nparts++;
  e->buflen += n + 1;
}

void wm_error_set_op(wm_error *e, const char *name) { wm_error_add(e, WM_EPART_OP, name); }
void wm_error_set_record(wm_error *e, const char *text) { wm_error_add(e, WM_EPART_RECORD, text); }
void wm_error_set_pos(wm_error *e, const char *pos) { wm_error_add(e, WM_EPART_POS, pos); }
void wm_error_pos_shown(wm_error *e) { wm_error_add(e, WM_EPART_POS_SHOWN, NULL); }
void wm_error_set_where(wm_error *e, const char *where) { wm_error_add(e, WM_EPART_WHERE, where); }

void wm_error_vcontext(wm_error *e, const char *fmt, va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  wm_error_add(e, WM_EPART_CONTEXT, line);
}

void wm_error_set_trace(wm_error *e, const char *trace, size_t n) {
  if (n > sizeof e->trace - 1) n = sizeof e->trace - 1;
  memcpy(e->trace, trace, n);
  e->trace[n] = '\0';
}

void wm_error_vappend(wm_error *e, const char *fmt, va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  if (e->trace[0]) {
    size_t len = strlen(e->tail);
    snprintf(e->tail + len, sizeof e->tail - len, "%s", line);
  } else if (e->nparts) {
    wm_error_add(e, WM_EPART_CONTEXT, line);
  } else {
    size_t len = strlen(e->msg);
    snprintf(e->msg + len, sizeof e->msg - len, "%s", line);
  }
}

const char *wm_error_part(const wm_error *e, int kind, size_t *len) {
  for (int i = 0; i < e->nparts; i++)
    if (e->part[i].kind == kind) {
      if (len) *len = e->part[i].len;
      return e->buf + e->part[i].off;
    }
  return NULL;
}

typedef struct {
  char *p;
  size_t len, cap;
} out;

static void put(out *o, const char *s, size_t n) {
  if (o->len + 1 >= o->cap) return;
  if (n > o->cap - 1 - o->len) n = o->cap - 1 - o->len;
  memcpy(o->p + o->len, s, n);
  o->len += n;
  o->p[o->len] = '\0';
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

const char *wm_error_format(wm_error *e) {
  out o = {e->text, 0, sizeof e->text};
  e->text[0] = '\0';
  puts_(&o, e->msg);
  for (int i = 0; i < e->nparts; i++) {
    const char *t = e->buf + e->part[i].off;
    size_t n = e->part[i].len;
    switch (e->part[i].kind) {
    case WM_EPART_OP:
      puts_(&o, "\n  in operator '");
      put(&o, t, n);
      puts_(&o, "'");
      break;
    case WM_EPART_RECORD:
      puts_(&o, "\n  on record ");
      put(&o, t, n);
      break;
    case WM_EPART_POS:
      puts_(&o, "\n  while reading ");
      put(&o, t, n);
      break;
    case WM_EPART_CONTEXT:
      put(&o, t, n);
      break;
    default: /* WM_EPART_POS_SHOWN: in the message already; WM_EPART_WHERE: in the operator's
              * name */
      break;
    }
  }
  puts_(&o, e->trace);
  puts_(&o, e->tail);
  return e->text;
}
