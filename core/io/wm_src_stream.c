/* Stream sources: standard input on a pipe or a terminal, a FIFO (read_lines on one), and
 * the TCP client socket_lines(host, port). One reader over a uv_stream_t.
 *
 * The end of the input (EOF) ends the source, and a last line without "\n" counts. A TCP
 * connection reset by the peer is an error that names the address: the input did not end,
 * it was cut. A drain stops reading; a partial line is then dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "io/wm_lines.h"

typedef struct streamsrc {
  wm_srchead h; /* first */
  wm_framer fr;
  char *origin;
  int kind; /* 0 pipe, 1 tty, 2 tcp */
  union {
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_tcp_t tcp;
    uv_stream_t s;
  } u;
  int open, reading, connected;
  uv_file fd;                    /* pipe/tty */
  int own_fd;                    /* a FIFO we opened: closed here unless a handle took it */
  struct sockaddr_storage addr;  /* tcp */
  uv_connect_t conn;
} streamsrc;

static void stream_destroy(wm_io_owner *own) {
  streamsrc *s = (streamsrc *)own;
  if (s->own_fd && s->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, s->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  free(s->h.buf);
  wm_buf_free(&s->fr.carry);
  free(s->origin);
  free(s);
}

static void stream_close(streamsrc *s) {
  if (s->open && s->reading && !uv_is_closing((uv_handle_t *)&s->u.s)) uv_read_stop(&s->u.s);
  s->reading = 0;
  wm_io_close(&s->h.own, (uv_handle_t *)&s->u.s, &s->open);
}

static void stream_free(wm_op *op) {
  streamsrc *s = op->impl;
  if (!s) return;
  stream_close(s);
  wm_io_release(&s->h.own);
}

/* flush = 1 at the real end of the input (EOF), 0 after a drain. */
static void stream_end(streamsrc *s, int flush) {
  if (s->h.finished) return;
  stream_close(s);
  if (!flush) wm_framer_drop(&s->fr);
  else if (wm_framer_flush(&s->h, &s->fr) != WM_OK) {
    wm_src_fail(&s->h);
    return;
  }
  wm_src_done(&s->h);
}

static void on_stream_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  streamsrc *s = st->data;
  if (s->h.finished || n == 0) return;
  if (n == UV_EOF) { /* a partial last line still counts */
    stream_end(s, 1);
    return;
  }
  if (n < 0) {
    wm_ctx_error(s->h.op->ctx, "cannot read %s: %s%s", s->origin, uv_strerror((int)n),
                 n == UV_ECONNRESET ? " (the input was cut, not ended)" : "");
    stream_close(s);
    wm_src_fail(&s->h);
    return;
  }
  int rc = wm_framer_feed(&s->h, &s->fr, s->h.buf, (size_t)n);
  wm_io_batch_done(s->h.host);
  if (rc != WM_OK) {
    stream_close(s);
    wm_src_fail(&s->h);
  }
}

static int stream_read_start(streamsrc *s) {
  if (s->reading || s->h.paused || s->h.stopped || !s->open) return 0;
  int rc = uv_read_start(&s->u.s, wm_src_alloc, on_stream_read);
  if (rc == 0) s->reading = 1;
  return rc;
}

static void on_connect(uv_connect_t *req, int status) {
  streamsrc *s = req->data;
  if (s->h.finished || s->h.stopped) return;
  if (status < 0) {
    wm_ctx_error(s->h.op->ctx, "cannot connect to %s: %s", s->origin, uv_strerror(status));
    stream_close(s);
    wm_src_fail(&s->h);
    return;
  }
  s->connected = 1;
  int rc = stream_read_start(s);
  if (rc != 0) {
    wm_ctx_error(s->h.op->ctx, "cannot read %s: %s", s->origin, uv_strerror(rc));
    stream_close(s);
    wm_src_fail(&s->h);
  }
}

static int stream_start(wm_op *op, wm_io_host *host) {
  streamsrc *s = op->impl;
  uv_loop_t *loop = host->loop;
  int rc;
  if (s->kind == 2) {
    if ((rc = uv_tcp_init(loop, &s->u.tcp)) == 0) {
      s->open = 1;
      s->u.s.data = s;
      s->conn.data = s;
      rc = uv_tcp_connect(&s->conn, &s->u.tcp, (const struct sockaddr *)&s->addr, on_connect);
    }
    if (rc != 0) {
      stream_close(s);
      s->h.finished = s->h.stopped = 1;
      return wm_ctx_error(op->ctx, "cannot connect to %s: %s", s->origin, uv_strerror(rc));
    }
    return WM_OK;
  }
  if (s->kind == 1) {
    rc = uv_tty_init(loop, &s->u.tty, s->fd, 1);
    if (rc == 0) s->open = 1;
  } else if ((rc = uv_pipe_init(loop, &s->u.pipe, 0)) == 0) {
    s->open = 1;
    rc = uv_pipe_open(&s->u.pipe, s->fd);
    if (rc == 0) s->own_fd = 0; /* closed with the handle from now on */
  }
  s->u.s.data = s;
  s->connected = 1;
  if (rc == 0) rc = stream_read_start(s);
  if (rc != 0) {
    stream_close(s);
    s->h.finished = s->h.stopped = 1;
    return wm_ctx_error(op->ctx, "cannot read %s: %s", s->origin, uv_strerror(rc));
  }
  return WM_OK;
}

static void stream_stop(wm_op *op, wm_io_host *host, int finish) {
  streamsrc *s = op->impl;
  (void)host;
  if (s->h.stopped) return;
  if (!finish) {
    s->h.stopped = s->h.finished = 1;
    stream_close(s);
    return;
  }
  stream_end(s, 0);
}

static void stream_pause(wm_op *op, wm_io_host *host, int paused) {
  streamsrc *s = op->impl;
  (void)host;
  s->h.paused = paused;
  if (paused) {
    if (s->reading) uv_read_stop(&s->u.s);
    s->reading = 0;
  } else if (s->connected && stream_read_start(s) != 0) {
    wm_ctx_error(op->ctx, "cannot read %s", s->origin);
    stream_close(s);
    wm_src_fail(&s->h);
  }
}

static const wm_op_vt stdin_vt = {.kind = "read_lines", .record = wm_source_record, .free = stream_free};
static const wm_op_vt socket_vt = {.kind = "socket_lines", .record = wm_source_record, .free = stream_free};
static const wm_source_vt stream_svt = {.start = stream_start, .stop = stream_stop, .pause = stream_pause};

static streamsrc *stream_alloc(wm_io_host *host, const char *origin, size_t chunk, size_t max_line,
                               const char *what) {
  streamsrc *s = calloc(1, sizeof *s);
  if (!s || !(s->origin = origin ? strdup(origin) : NULL)) {
    free(s);
    wm_ctx_error(host->ctx, "out of memory");
    return NULL;
  }
  s->fd = -1;
  wm_framer_init(&s->fr, s->origin, max_line);
  if (wm_src_head_init(&s->h, host, chunk, (size_t)64 << 10, what, stream_destroy) != 0) {
    stream_destroy(&s->h.own);
    return NULL;
  }
  return s;
}

wm_op *wm_src_stream_new(wm_io_host *host, const char *name, uv_file fd, int own_fd,
                         const char *origin, const wm_lines_config *cfg) {
  streamsrc *s = stream_alloc(host, origin, cfg->chunk, cfg->max_line, name ? name : "read_lines");
  if (!s) {
    if (own_fd) {
      uv_fs_t req;
      uv_fs_close(NULL, &req, fd, NULL);
      uv_fs_req_cleanup(&req);
    }
    return NULL;
  }
  s->kind = uv_guess_handle(fd) == UV_TTY ? 1 : 0;
  s->fd = fd;
  s->own_fd = own_fd;
  return wm_src_op(host, &stdin_vt, &stream_svt, &s->h, name);
}

wm_op *wm_socket_lines_new(wm_io_host *host, const char *name, const wm_tcp_config *cfg) {
  char *origin = wm_io_host_port(cfg->host, cfg->port);
  if (!origin) {
    wm_ctx_error(host->ctx, "out of memory");
    return NULL;
  }
  streamsrc *s = stream_alloc(host, origin, cfg->chunk, cfg->max_line, name ? name : "socket_lines");
  free(origin);
  if (!s) return NULL;
  s->kind = 2;
  if (wm_io_resolve(host, cfg->host, cfg->port, &s->addr) != WM_OK) {
    stream_destroy(&s->h.own);
    return NULL;
  }
  return wm_src_op(host, &socket_vt, &stream_svt, &s->h, name);
}
