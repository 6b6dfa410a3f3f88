/* Line framing, source heads, handle lifetimes and TCP addresses (see wm_lines.h). */
#include "io/wm_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/wm_time.h"

/* ---- handle lifetimes ------------------------------------------------------------------- */

static void on_owned_closed(uv_handle_t *hd) {
  wm_io_owner *own = hd->data;
  own->closing--;
  if (own->released && own->closing == 0) own->destroy(own);
}

void wm_io_close(wm_io_owner *own, uv_handle_t *hd, int *open) {
  if (!*open) return;
  *open = 0;
  if (uv_is_closing(hd)) return; /* the host's sweep closed it (and ran the loop) */
  own->closing++;
  uv_close(hd, on_owned_closed);
}

void wm_io_release(wm_io_owner *own) {
  own->released = 1;
  if (own->closing == 0) own->destroy(own);
}

/* ---- line framing ----------------------------------------------------------------------- */

void wm_framer_init(wm_framer *f, const char *origin, size_t max_line) {
  memset(&f->pos, 0, sizeof f->pos);
  f->pos.origin = origin;
  f->next_at = 0;
  f->max_line = max_line ? max_line : (size_t)1 << 20;
  wm_buf_init(&f->carry);
}

/* s: the line without its "\n" (nl = 1 when it had one). */
static int emit_line(wm_srchead *h, wm_framer *f, const char *s, size_t n, int nl) {
  f->pos.line++;
  f->pos.offset = f->next_at;
  f->next_at += n + (size_t)nl;
  if (n && s[n - 1] == '\r') n--;
  wm_value v = wm_cstr(s, n);
  return wm_source_emit(h->op, &f->pos, &v, WM_TIME_MIN);
}

static int too_long(wm_srchead *h, wm_framer *f) {
  return wm_ctx_error(h->op->ctx, "%s:%llu: line longer than %zu bytes (max_line)", f->pos.origin,
                      (unsigned long long)f->pos.line + 1, f->max_line);
}

int wm_framer_feed(wm_srchead *h, wm_framer *f, const char *data, size_t n) {
  const char *p = data, *end = data + n;
  /* lookahead: when the operator after the source takes hints of the lines themselves
   * (asked once per buffer, wm_op_ahead_wants), it is told of each whole line of the buffer
   * WM_AHEAD lines before it gets it; q is the first line not told yet, ahead the lines
   * told from p on */
  wm_ahead want;
  wm_op *la = wm_op_ahead_wants(wm_op_next(h->op), &want) && !want.key && !want.want_ts
                  ? want.to
                  : NULL;
  wm_hint told[WM_AHEAD];
  const char *q = p;
  unsigned ahead = 0;
  while (p < end && !h->stopped) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t part = (size_t)((nl ? nl : end) - p), len = f->carry.len + part;
    if (len > f->max_line) {
      /* a "\r" before the "\n" is not part of the line */
      int cr = nl && ((part && p[part - 1] == '\r') ||
                      (!part && f->carry.len && f->carry.data[f->carry.len - 1] == '\r'));
      if (len > f->max_line + 1 || (nl && len - (size_t)cr > f->max_line)) return too_long(h, f);
    }
    if (!nl) {
      wm_buf_add(&f->carry, p, part);
      if (f->carry.oom) return wm_ctx_error(h->op->ctx, "out of memory reading lines");
      break;
    }
    int rc;
    if (f->carry.len) {
      wm_buf_add(&f->carry, p, part);
      if (f->carry.oom) return wm_ctx_error(h->op->ctx, "out of memory reading lines");
      rc = emit_line(h, f, f->carry.data, f->carry.len, 1);
      wm_buf_clear(&f->carry);
    } else {
      if (la) {
        if (q <= p) q = p, ahead = 0;
        size_t nt = 0;
        while (ahead < WM_AHEAD && q < end) {
          const char *qe = memchr(q, '\n', (size_t)(end - q));
          if (!qe) {
            q = end;
            break;
          }
          told[nt++] = (wm_hint){q, (size_t)(qe - q), 0};
          q = qe + 1;
          ahead++;
        }
        if (nt) la->vt->ahead(la, told, nt);
        if (ahead) ahead--;
      }
      rc = emit_line(h, f, p, part, 1);
    }
    if (rc != WM_OK) return rc;
    p = nl + 1;
  }
  return WM_OK;
}

int wm_framer_flush(wm_srchead *h, wm_framer *f) {
  if (!f->carry.len) return WM_OK;
  int rc = emit_line(h, f, f->carry.data, f->carry.len, 0);
  wm_buf_clear(&f->carry);
  return rc;
}

void wm_framer_drop(wm_framer *f) { wm_buf_clear(&f->carry); }

/* ---- source heads ----------------------------------------------------------------------- */

int wm_src_head_init(wm_srchead *h, wm_io_host *host, size_t chunk, size_t dflt, const char *what,
                     void (*destroy)(wm_io_owner *)) {
  h->host = host;
  h->own.destroy = destroy;
  if (chunk > WM_IO_MAX_CHUNK) {
    wm_ctx_error(host->ctx, "%s: chunk must be at most %zu bytes (64 MiB), got %zu", what, WM_IO_MAX_CHUNK,
                 chunk);
    return -1;
  }
  h->chunk = chunk ? chunk : dflt;
  h->buf = malloc(h->chunk);
  if (!h->buf) {
    wm_ctx_error(host->ctx, "out of memory");
    return -1;
  }
  return 0;
}

wm_op *wm_src_op(wm_io_host *host, const wm_op_vt *vt, const wm_source_vt *svt, wm_srchead *h,
                 const char *name) {
  wm_ctx *ctx = host->ctx;
  wm_op *op = wm_op_new(ctx, vt, h, name);
  if (!op) {
    vt->free(&(wm_op){.impl = h});
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  h->op = op;
  if (wm_io_add_source(host, op, svt) != 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL; /* the op is freed with the context */
  }
  return op;
}

void wm_src_fail(wm_srchead *h) {
  h->stopped = 1;
  h->finished = 1;
  wm_io_fail(h->host);
}

void wm_src_done(wm_srchead *h) {
  if (h->finished) return;
  h->finished = 1;
  h->stopped = 1;
  wm_io_source_done(h->host, h->op);
}

void wm_src_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  wm_srchead *h = hd->data;
  *b = uv_buf_init(h->buf, (unsigned)h->chunk);
}

/* ---- TCP addresses ---------------------------------------------------------------------- */

int wm_io_resolve(wm_io_host *host, const char *name, int port, struct sockaddr_storage *out) {
  wm_ctx *ctx = host->ctx;
  if (port < 0 || port > 65535)
    return wm_ctx_error(ctx, "%s:%d: the port must be between 0 and 65535", name, port);
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  uv_getaddrinfo_t req;
  int rc = uv_getaddrinfo(host->loop, &req, NULL, name, ps, &hints);
  if (rc != 0) return wm_ctx_error(ctx, "cannot resolve %s:%d: %s", name, port, uv_strerror(rc));
  memset(out, 0, sizeof *out);
  memcpy(out, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
  uv_freeaddrinfo(req.addrinfo);
  return WM_OK;
}

char *wm_io_host_port(const char *host, int port) {
  size_t n = strlen(host) + 16;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s:%d", host, port);
  return s;
}
