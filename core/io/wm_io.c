/* Line sources and asynchronous sinks on libuv (see wm_io.h).
 *
 * Ownership of handles follows luv: a struct owns its uv_*_t by value; memory that holds
 * a handle is freed only once the handle is closed (the executor closes every handle
 * before the operators are freed); bytes being written stay in their buffer until the
 * write callback.
 */
#include "io/wm_io.h"

#include <stdlib.h>
#include <string.h>

#include "exec/wm_exec.h"
#include "time/wm_time.h"

/* ---- line framing --------------------------------------------------------------------- */

typedef struct framer {
  const char *origin; /* borrowed from the source */
  size_t max_line;
  wm_buf carry;       /* the start of a line split across reads */
  uint64_t lineno;
} framer;

/* The head of every line source's impl. */
typedef struct srchead {
  const framer *cur; /* the framer whose line is being emitted (wm_io_current_line) */
  wm_exec *exec;
  wm_op *op;
  char *buf;         /* the read buffer, reused for every read */
  size_t chunk;
  int stopped;       /* no more lines: stop() or a failure */
  int finished;      /* wm_exec_source_done called (or the job failed) */
  int paused;        /* backpressure */
} srchead;

int wm_io_current_line(wm_ctx *ctx, const char **origin, uint64_t *line) {
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    if (op->vt->record != wm_source_record) continue;
    const srchead *h = op->impl;
    if (h && h->cur) {
      *origin = h->cur->origin;
      *line = h->cur->lineno;
      return 1;
    }
  }
  return 0;
}

static void framer_init(framer *f, const char *origin, size_t max_line) {
  f->origin = origin;
  f->max_line = max_line ? max_line : (size_t)1 << 20;
  f->lineno = 0;
  wm_buf_init(&f->carry);
}

static int head_init(srchead *h, wm_exec *exec, size_t chunk, size_t dflt) {
  h->exec = exec;
  h->chunk = chunk ? chunk : dflt;
  h->buf = malloc(h->chunk);
  return h->buf ? 0 : -1;
}

static int emit_line(srchead *h, framer *f, const char *s, size_t n) {
  if (n && s[n - 1] == '\r') n--;
  f->lineno++;
  wm_value v = wm_cstr(s, n);
  h->cur = f;
  int rc = wm_op_emit(h->op, 0, &v, WM_TIME_MIN);
  h->cur = NULL;
  if (rc == WM_ERR) {
    /* parse errors already start with the position */
    wm_ctx *ctx = h->op->ctx;
    size_t ol = strlen(f->origin);
    if (!(strncmp(ctx->err, f->origin, ol) == 0 && ctx->err[ol] == ':'))
      wm_ctx_error_context(ctx, "\n  while reading %s:%llu", f->origin,
                          (unsigned long long)f->lineno);
  }
  return rc;
}

static int too_long(srchead *h, framer *f) {
  return wm_ctx_error(h->op->ctx, "%s:%llu: line longer than %zu bytes (max_line)", f->origin,
                      (unsigned long long)f->lineno + 1, f->max_line);
}

/* Frames the lines in data; complete lines are passed straight from the read buffer. */
static int framer_feed(srchead *h, framer *f, const char *data, size_t n) {
  const char *p = data, *end = data + n;
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
      rc = emit_line(h, f, f->carry.data, f->carry.len);
      wm_buf_clear(&f->carry);
    } else {
      rc = emit_line(h, f, p, part);
    }
    if (rc != WM_OK) return rc;
    p = nl + 1;
  }
  return WM_OK;
}

/* End of input: a last line without "\n" still counts. */
static int framer_flush(srchead *h, framer *f) {
  if (!f->carry.len) return WM_OK;
  int rc = emit_line(h, f, f->carry.data, f->carry.len);
  wm_buf_clear(&f->carry);
  return rc;
}

static void src_fail(srchead *h) {
  h->stopped = 1;
  h->finished = 1;
  wm_exec_fail(h->exec);
}

static void src_done(srchead *h) {
  if (h->finished) return;
  h->finished = 1;
  h->stopped = 1;
  wm_exec_source_done(h->exec, h->op);
}

static void close_handle(uv_handle_t *hd, int *open, uv_close_cb cb) {
  if (*open && !uv_is_closing(hd)) uv_close(hd, cb);
  *open = 0;
}

/* Creates the operator of a source whose impl begins with a srchead. */
static wm_op *src_op(wm_exec *exec, const wm_op_vt *vt, const wm_source_vt *svt, srchead *h,
                     const char *name) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  wm_op *op = wm_op_new(ctx, vt, h, name);
  if (!op) {
    vt->free(&(wm_op){.impl = h});
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  h->op = op;
  if (wm_exec_add_source(exec, op, svt) != 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL; /* the op is freed with the context */
  }
  return op;
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  srchead *h = hd->data;
  *b = uv_buf_init(h->buf, (unsigned)h->chunk);
}

/* ---- files: read with uv_fs_read at increasing offsets; follow = wait for growth --------- */

typedef struct filesrc {
  srchead h; /* first */
  framer fr;
  char *path;   /* as given; "<stdin>" for "-" */
  uv_file fd;
  int own_fd;
  int64_t offset;
  uv_fs_t req;
  int req_busy;
  int follow, waiting; /* follow: at the end, waiting for the file to grow */
  int64_t poll_ms;
  uv_fs_event_t ev;
  int ev_open;
  uv_timer_t tm;
  int tm_open;
} filesrc;

static void file_read(filesrc *f);

static void file_close_fd(filesrc *f) {
  if (f->own_fd && f->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, f->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  f->fd = -1;
}

static void file_close_watch(filesrc *f) {
  close_handle((uv_handle_t *)&f->ev, &f->ev_open, NULL);
  close_handle((uv_handle_t *)&f->tm, &f->tm_open, NULL);
}

static void file_free(wm_op *op) {
  filesrc *f = op->impl;
  if (!f) return;
  file_close_fd(f);
  free(f->h.buf);
  wm_buf_free(&f->fr.carry);
  free(f->path);
  free(f);
}

/* The end: flush the last line, then the end-of-input watermark. */
static void file_end(filesrc *f) {
  if (f->h.finished) return;
  file_close_watch(f);
  if (framer_flush(&f->h, &f->fr) != WM_OK) {
    src_fail(&f->h);
    return;
  }
  file_close_fd(f);
  src_done(&f->h);
}

static void file_wake(filesrc *f) {
  if (!f->waiting || f->req_busy || f->h.paused || f->h.stopped) return;
  f->waiting = 0;
  file_read(f);
}

static void on_file_event(uv_fs_event_t *ev, const char *fn, int events, int status) {
  (void)fn;
  (void)events;
  (void)status;
  file_wake(ev->data);
}

static void on_file_timer(uv_timer_t *t) { file_wake(t->data); }

/* follow: watch the file with inotify, and poll as a fallback (network filesystems). */
static int file_watch(filesrc *f) {
  uv_loop_t *loop = wm_exec_loop(f->h.exec);
  int rc;
  if (!f->ev_open && uv_fs_event_init(loop, &f->ev) == 0) {
    f->ev_open = 1;
    f->ev.data = f;
    if (uv_fs_event_start(&f->ev, on_file_event, f->path, 0) != 0)
      close_handle((uv_handle_t *)&f->ev, &f->ev_open, NULL);
  }
  if (!f->tm_open) {
    if ((rc = uv_timer_init(loop, &f->tm)) != 0) return rc;
    f->tm_open = 1;
    f->tm.data = f;
    uint64_t ms = f->poll_ms > 0 ? (uint64_t)f->poll_ms : 1000;
    if ((rc = uv_timer_start(&f->tm, on_file_timer, ms, ms)) != 0) return rc;
  }
  return 0;
}

static void on_file_read(uv_fs_t *req) {
  filesrc *f = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  f->req_busy = 0;
  if (f->h.finished) return;
  if (f->h.stopped) { /* a drain: what was read before counts */
    file_end(f);
    return;
  }
  if (n < 0) {
    wm_ctx_error(f->h.op->ctx, "cannot read '%s': %s", f->path, uv_strerror((int)n));
    src_fail(&f->h);
    return;
  }
  if (n == 0) {
    if (!f->follow) {
      file_end(f);
      return;
    }
    /* a truncated file (rotated with copytruncate) is read again from its start */
    uv_fs_t st;
    if (uv_fs_fstat(NULL, &st, f->fd, NULL) == 0 && (int64_t)st.statbuf.st_size < f->offset)
      f->offset = 0;
    uv_fs_req_cleanup(&st);
    f->waiting = 1;
    int rc = file_watch(f);
    if (rc != 0) {
      wm_ctx_error(f->h.op->ctx, "cannot follow '%s': %s", f->path, uv_strerror(rc));
      src_fail(&f->h);
    }
    return;
  }
  f->offset += n;
  int rc = framer_feed(&f->h, &f->fr, f->h.buf, (size_t)n);
  wm_exec_batch_done(f->h.exec);
  if (rc != WM_OK) {
    src_fail(&f->h);
    return;
  }
  if (f->h.stopped) {
    file_end(f);
    return;
  }
  if (f->h.paused) {
    f->waiting = 1; /* resumed by file_pause(0) */
    return;
  }
  file_read(f);
}

static void file_read(filesrc *f) {
  uv_buf_t b = uv_buf_init(f->h.buf, (unsigned)f->h.chunk);
  f->req.data = f;
  int rc = uv_fs_read(wm_exec_loop(f->h.exec), &f->req, f->fd, &b, 1, f->offset, on_file_read);
  if (rc != 0) {
    wm_ctx_error(f->h.op->ctx, "cannot read '%s': %s", f->path, uv_strerror(rc));
    src_fail(&f->h);
    return;
  }
  f->req_busy = 1;
}

static int file_start(wm_op *op, wm_exec *exec) {
  filesrc *f = op->impl;
  (void)exec;
  file_read(f);
  return f->h.finished ? WM_ERR : WM_OK;
}

static void file_stop(wm_op *op, wm_exec *exec, int finish) {
  filesrc *f = op->impl;
  (void)exec;
  if (f->h.stopped) return;
  f->h.stopped = 1;
  file_close_watch(f);
  if (!finish) {
    f->h.finished = 1;
    return;
  }
  if (!f->req_busy) file_end(f); /* else the read callback ends it */
}

static void file_pause(wm_op *op, wm_exec *exec, int paused) {
  filesrc *f = op->impl;
  (void)exec;
  f->h.paused = paused;
  if (!paused) file_wake(f);
}

static const wm_op_vt file_vt = {.kind = "read_lines", .record = wm_source_record, .free = file_free};
static const wm_source_vt file_svt = {.start = file_start, .stop = file_stop, .pause = file_pause};

/* ---- streams: pipes and terminals (standard input) and TCP clients -------------------- */

typedef struct streamsrc {
  srchead h; /* first */
  framer fr;
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
  struct sockaddr_storage addr;  /* tcp */
  uv_connect_t conn;
} streamsrc;

static void stream_free(wm_op *op) {
  streamsrc *s = op->impl;
  if (!s) return;
  free(s->h.buf);
  wm_buf_free(&s->fr.carry);
  free(s->origin);
  free(s);
}

static void stream_close(streamsrc *s) {
  if (s->open && s->reading) uv_read_stop(&s->u.s);
  s->reading = 0;
  close_handle((uv_handle_t *)&s->u.s, &s->open, NULL);
}

static void stream_end(streamsrc *s) {
  if (s->h.finished) return;
  stream_close(s);
  if (framer_flush(&s->h, &s->fr) != WM_OK) {
    src_fail(&s->h);
    return;
  }
  src_done(&s->h);
}

static void on_stream_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  streamsrc *s = st->data;
  if (s->h.finished || n == 0) return;
  /* the peer closing (even abruptly) ends the input; a partial last line still counts */
  if (n == UV_EOF || n == UV_ECONNRESET) {
    stream_end(s);
    return;
  }
  if (n < 0) {
    wm_ctx_error(s->h.op->ctx, "cannot read %s: %s", s->origin, uv_strerror((int)n));
    stream_close(s);
    src_fail(&s->h);
    return;
  }
  int rc = framer_feed(&s->h, &s->fr, s->h.buf, (size_t)n);
  wm_exec_batch_done(s->h.exec);
  if (rc != WM_OK) {
    stream_close(s);
    src_fail(&s->h);
  }
}

static int stream_read_start(streamsrc *s) {
  if (s->reading || s->h.paused || s->h.stopped || !s->open) return 0;
  int rc = uv_read_start(&s->u.s, on_alloc, on_stream_read);
  if (rc == 0) s->reading = 1;
  return rc;
}

static void on_connect(uv_connect_t *req, int status) {
  streamsrc *s = req->data;
  if (s->h.finished || s->h.stopped) return;
  if (status < 0) {
    wm_ctx_error(s->h.op->ctx, "cannot connect to %s: %s", s->origin, uv_strerror(status));
    stream_close(s);
    src_fail(&s->h);
    return;
  }
  s->connected = 1;
  int rc = stream_read_start(s);
  if (rc != 0) {
    wm_ctx_error(s->h.op->ctx, "cannot read %s: %s", s->origin, uv_strerror(rc));
    stream_close(s);
    src_fail(&s->h);
  }
}

static int stream_start(wm_op *op, wm_exec *exec) {
  streamsrc *s = op->impl;
  uv_loop_t *loop = wm_exec_loop(exec);
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

static void stream_stop(wm_op *op, wm_exec *exec, int finish) {
  streamsrc *s = op->impl;
  (void)exec;
  if (s->h.stopped) return;
  if (!finish) {
    s->h.stopped = s->h.finished = 1;
    stream_close(s);
    return;
  }
  stream_end(s);
}

static void stream_pause(wm_op *op, wm_exec *exec, int paused) {
  streamsrc *s = op->impl;
  (void)exec;
  s->h.paused = paused;
  if (paused) {
    if (s->reading) uv_read_stop(&s->u.s);
    s->reading = 0;
  } else if (s->connected && stream_read_start(s) != 0) {
    wm_ctx_error(op->ctx, "cannot read %s", s->origin);
    stream_close(s);
    src_fail(&s->h);
  }
}

static const wm_op_vt stdin_vt = {.kind = "read_lines", .record = wm_source_record, .free = stream_free};
static const wm_op_vt socket_vt = {.kind = "socket_lines", .record = wm_source_record, .free = stream_free};
static const wm_source_vt stream_svt = {.start = stream_start, .stop = stream_stop, .pause = stream_pause};

wm_op *wm_lines_new(wm_exec *exec, const char *name, const wm_lines_config *cfg) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  int is_stdin = strcmp(cfg->path, "-") == 0;
  uv_file fd = 0;
  if (!is_stdin) {
    uv_fs_t req;
    fd = uv_fs_open(NULL, &req, cfg->path, UV_FS_O_RDONLY, 0, NULL);
    uv_fs_req_cleanup(&req);
    if (fd < 0) {
      wm_ctx_error(ctx, "cannot open '%s': %s", cfg->path,
                   fd == UV_ENOENT ? "No such file or directory" : uv_strerror(fd));
      return NULL;
    }
    uv_fs_t st;
    int dir = uv_fs_fstat(NULL, &st, fd, NULL) == 0 && (st.statbuf.st_mode & S_IFMT) == S_IFDIR;
    uv_fs_req_cleanup(&st);
    if (dir) {
      uv_fs_close(NULL, &req, fd, NULL);
      uv_fs_req_cleanup(&req);
      wm_ctx_error(ctx, "cannot open '%s': Is a directory", cfg->path);
      return NULL;
    }
  }
  uv_handle_type ht = uv_guess_handle(fd);
  if (is_stdin && (ht == UV_NAMED_PIPE || ht == UV_TTY)) {
    streamsrc *s = calloc(1, sizeof *s);
    if (!s || head_init(&s->h, exec, cfg->chunk, (size_t)64 << 10) != 0 ||
        !(s->origin = strdup("<stdin>"))) {
      if (s) free(s->h.buf);
      free(s);
      wm_ctx_error(ctx, "out of memory");
      return NULL;
    }
    s->kind = ht == UV_TTY ? 1 : 0;
    s->fd = fd;
    framer_init(&s->fr, s->origin, cfg->max_line);
    return src_op(exec, &stdin_vt, &stream_svt, &s->h, name);
  }
  filesrc *f = calloc(1, sizeof *f);
  if (!f || head_init(&f->h, exec, cfg->chunk, (size_t)256 << 10) != 0 ||
      !(f->path = strdup(is_stdin ? "<stdin>" : cfg->path))) {
    if (f) free(f->h.buf);
    free(f);
    if (!is_stdin) {
      uv_fs_t req;
      uv_fs_close(NULL, &req, fd, NULL);
      uv_fs_req_cleanup(&req);
    }
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  f->fd = fd;
  f->own_fd = !is_stdin;
  f->follow = cfg->follow && !is_stdin;
  f->poll_ms = cfg->poll_ms;
  framer_init(&f->fr, f->path, cfg->max_line);
  return src_op(exec, &file_vt, &file_svt, &f->h, name);
}

/* ---- TCP addresses ------------------------------------------------------------------- */

/* Resolves host:port (synchronously: before the job starts). */
static int resolve(wm_exec *exec, const char *host, int port, struct sockaddr_storage *out) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  if (port < 0 || port > 65535)
    return wm_ctx_error(ctx, "%s:%d: the port must be between 0 and 65535", host, port);
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  uv_getaddrinfo_t req;
  int rc = uv_getaddrinfo(wm_exec_loop(exec), &req, NULL, host, ps, &hints);
  if (rc != 0)
    return wm_ctx_error(ctx, "cannot resolve %s:%d: %s", host, port, uv_strerror(rc));
  memset(out, 0, sizeof *out);
  memcpy(out, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
  uv_freeaddrinfo(req.addrinfo);
  return WM_OK;
}

static char *host_port(const char *host, int port) {
  size_t n = strlen(host) + 16;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s:%d", host, port);
  return s;
}

wm_op *wm_socket_lines_new(wm_exec *exec, const char *name, const wm_tcp_config *cfg) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  streamsrc *s = calloc(1, sizeof *s);
  if (!s || head_init(&s->h, exec, cfg->chunk, (size_t)64 << 10) != 0 ||
      !(s->origin = host_port(cfg->host, cfg->port))) {
    if (s) free(s->h.buf);
    free(s);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  s->kind = 2;
  framer_init(&s->fr, s->origin, cfg->max_line);
  if (resolve(exec, cfg->host, cfg->port, &s->addr) != WM_OK) {
    stream_free(&(wm_op){.impl = s});
    return NULL;
  }
  return src_op(exec, &socket_vt, &stream_svt, &s->h, name);
}

/* ---- a TCP server: lines from every client --------------------------------------------- */

typedef struct listensrc listensrc;

typedef struct client {
  listensrc *ls;
  uv_tcp_t tcp;
  framer fr;
  char origin[160];
  int open, reading, ended;
  struct client *next;
} client;

struct listensrc {
  srchead h; /* first */
  char *origin;
  uv_tcp_t server;
  int server_open;
  int port;
  size_t max_line;
  int max_clients, accepted, active; /* active: clients whose input has not ended */
  client *clients;
};

static void client_unlink_free(client *c) {
  listensrc *ls = c->ls;
  for (client **pp = &ls->clients; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  wm_buf_free(&c->fr.carry);
  free(c);
}

static void on_client_closed(uv_handle_t *hd) { client_unlink_free(hd->data); }

static void listen_free(wm_op *op) {
  listensrc *ls = op->impl;
  if (!ls) return;
  while (ls->clients) { /* handles already closed by the executor */
    client *c = ls->clients;
    ls->clients = c->next;
    wm_buf_free(&c->fr.carry);
    free(c);
  }
  free(ls->h.buf);
  free(ls->origin);
  free(ls);
}

static void listen_check_done(listensrc *ls) {
  if (!ls->server_open && ls->active == 0) src_done(&ls->h);
}

static void client_close(client *c) {
  if (c->open && c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
  if (c->open && !uv_is_closing((uv_handle_t *)&c->tcp))
    uv_close((uv_handle_t *)&c->tcp, on_client_closed);
  c->open = 0;
}

/* A client's input ended: its last line counts. WM_OK or WM_ERR. */
static int client_end(client *c, int flush) {
  if (c->ended) return WM_OK;
  c->ended = 1;
  c->ls->active--;
  int rc = flush ? framer_flush(&c->ls->h, &c->fr) : WM_OK;
  client_close(c);
  return rc;
}

static void on_client_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  client *c = st->data;
  listensrc *ls = c->ls;
  if (ls->h.finished || n == 0) return;
  int rc;
  if (n < 0) { /* EOF, or a reset: that client's input ends */
    rc = client_end(c, 1);
    if (rc == WM_OK) listen_check_done(ls);
  } else {
    rc = framer_feed(&ls->h, &c->fr, ls->h.buf, (size_t)n);
    wm_exec_batch_done(ls->h.exec);
  }
  if (rc != WM_OK) src_fail(&ls->h);
}

static void on_client_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  /* one read buffer for every client: each read is framed before the next one starts */
  srchead *h = &((client *)hd->data)->ls->h;
  *b = uv_buf_init(h->buf, (unsigned)h->chunk);
}

static int client_read_start(client *c) {
  if (c->reading || !c->open || c->ls->h.paused) return 0;
  int rc = uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read);
  if (rc == 0) c->reading = 1;
  return rc;
}

static void close_server(listensrc *ls) { close_handle((uv_handle_t *)&ls->server, &ls->server_open, NULL); }

static void on_connection(uv_stream_t *server, int status) {
  listensrc *ls = server->data;
  if (ls->h.stopped || status < 0) return;
  client *c = calloc(1, sizeof *c);
  if (!c) {
    wm_ctx_error(ls->h.op->ctx, "out of memory accepting a client");
    src_fail(&ls->h);
    return;
  }
  c->ls = ls;
  if (uv_tcp_init(server->loop, &c->tcp) != 0) {
    free(c);
    return;
  }
  c->open = 1;
  c->tcp.data = c;
  c->next = ls->clients;
  ls->clients = c;
  wm_buf_init(&c->fr.carry);
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    c->ended = 1;
    client_close(c);
    return;
  }
  ls->accepted++;
  ls->active++;
  snprintf(c->origin, sizeof c->origin, "%s (client %d)", ls->origin, ls->accepted);
  framer_init(&c->fr, c->origin, ls->max_line);
  if (ls->max_clients > 0 && ls->accepted >= ls->max_clients) close_server(ls);
  if (client_read_start(c) != 0) {
    client_end(c, 0);
    listen_check_done(ls);
  }
}

static int listen_start(wm_op *op, wm_exec *exec) {
  (void)op;
  (void)exec;
  return WM_OK; /* listening since creation: clients may connect as soon as it is announced */
}

static void listen_stop(wm_op *op, wm_exec *exec, int finish) {
  listensrc *ls = op->impl;
  (void)exec;
  if (ls->h.stopped) return;
  ls->h.stopped = 1;
  close_server(ls);
  int rc = WM_OK;
  for (client *c = ls->clients, *next; c; c = next) {
    next = c->next;
    if (client_end(c, finish) != WM_OK) rc = WM_ERR;
  }
  if (!finish) {
    ls->h.finished = 1;
    return;
  }
  if (rc != WM_OK) src_fail(&ls->h);
  else listen_check_done(ls);
}

static void listen_pause(wm_op *op, wm_exec *exec, int paused) {
  listensrc *ls = op->impl;
  (void)exec;
  ls->h.paused = paused;
  for (client *c = ls->clients; c; c = c->next) {
    if (paused) {
      if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
      c->reading = 0;
    } else if (!c->ended) {
      client_read_start(c);
    }
  }
}

static const wm_op_vt listen_vt = {.kind = "listen_lines", .record = wm_source_record, .free = listen_free};
static const wm_source_vt listen_svt = {.start = listen_start, .stop = listen_stop, .pause = listen_pause};

wm_op *wm_listen_lines_new(wm_exec *exec, const char *name, const wm_tcp_config *cfg) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  listensrc *ls = calloc(1, sizeof *ls);
  struct sockaddr_storage addr;
  if (!ls || head_init(&ls->h, exec, cfg->chunk, (size_t)64 << 10) != 0) {
    if (ls) free(ls->h.buf);
    free(ls);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  ls->max_clients = cfg->max_clients;
  ls->max_line = cfg->max_line;
  wm_op *op = src_op(exec, &listen_vt, &listen_svt, &ls->h, name);
  if (!op) return NULL;
  if (resolve(exec, cfg->host, cfg->port, &addr) != WM_OK) return NULL;
  int rc = uv_tcp_init(wm_exec_loop(exec), &ls->server);
  if (rc == 0) {
    ls->server_open = 1;
    ls->server.data = ls;
    rc = uv_tcp_bind(&ls->server, (const struct sockaddr *)&addr, 0);
  }
  if (rc == 0) rc = uv_listen((uv_stream_t *)&ls->server, 128, on_connection);
  if (rc != 0) {
    wm_ctx_error(ctx, "cannot listen on %s:%d: %s", cfg->host, cfg->port, uv_strerror(rc));
    close_server(ls);
    return NULL;
  }
  struct sockaddr_storage bound;
  int len = sizeof bound;
  ls->port = cfg->port;
  if (uv_tcp_getsockname(&ls->server, (struct sockaddr *)&bound, &len) == 0) {
    if (bound.ss_family == AF_INET) ls->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    else if (bound.ss_family == AF_INET6)
      ls->port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
  }
  if (!(ls->origin = host_port(cfg->host, ls->port))) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  if (!cfg->quiet) {
    fprintf(stderr, "wmrun: listening on %s\n", ls->origin);
    fflush(stderr);
  }
  return op;
}

int wm_listen_lines_port(const wm_op *op) {
  return op->vt == &listen_vt ? ((const listensrc *)op->impl)->port : -1;
}

/* ---- asynchronous sinks --------------------------------------------------------------- */

typedef struct writer {
  wm_exec *exec;
  wm_op *op;
  char *origin;        /* the path, or host:port */
  int tcp;
  wm_write_config cfg; /* path/host not kept */
  /* file */
  uv_file fd;
  int64_t offset;
  uv_fs_t req;
  /* tcp */
  uv_tcp_t sock;
  int sock_open, connected;
  uv_connect_t conn;
  uv_write_t wreq;
  /* buffers: `pend` gathers lines, `fly` is being written */
  wm_buf pend, fly;
  size_t fly_off;
  int busy, ending, closed, failed;
  int64_t reported;    /* bytes reported to wm_exec_pressure */
  wm_buf line;
} writer;

static void writer_report(writer *w) {
  int64_t q = (int64_t)(w->pend.len + w->fly.len - w->fly_off);
  if (q != w->reported) {
    wm_exec_pressure(w->exec, q - w->reported);
    w->reported = q;
  }
}

static void writer_fail(writer *w, const char *what, int rc) {
  if (w->failed) return;
  w->failed = 1;
  wm_ctx_error(w->op->ctx, "%s %s: %s\n  in sink '%s'", what, w->origin, uv_strerror(rc),
               w->op->name);
  wm_exec_fail(w->exec);
}

static void writer_close(writer *w) {
  if (w->closed) return;
  w->closed = 1;
  if (w->tcp) {
    close_handle((uv_handle_t *)&w->sock, &w->sock_open, NULL);
  } else if (w->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, w->fd, NULL);
    uv_fs_req_cleanup(&req);
    w->fd = -1;
  }
}

static void writer_kick(writer *w);

static void writer_written(writer *w, ssize_t n) {
  w->busy = 0;
  if (w->failed) return;
  w->fly_off += (size_t)n;
  if (w->fly_off >= w->fly.len) {
    wm_buf_clear(&w->fly);
    w->fly_off = 0;
  }
  writer_report(w);
  writer_kick(w);
}

static void on_fs_written(uv_fs_t *req) {
  writer *w = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  if (n < 0) {
    w->busy = 0;
    writer_fail(w, "cannot write to", (int)n);
    return;
  }
  w->offset += n;
  writer_written(w, n);
}

static void on_tcp_written(uv_write_t *req, int status) {
  writer *w = req->data;
  if (status < 0) {
    w->busy = 0;
    if (status != UV_ECANCELED) writer_fail(w, "cannot write to", status);
    return;
  }
  writer_written(w, (ssize_t)(w->fly.len - w->fly_off));
}

/* Starts the next write when there is something to write and nothing in flight; closes
 * the output once everything is written after the end of input. */
static void writer_kick(writer *w) {
  if (w->busy || w->failed || w->closed) return;
  if (w->tcp && !w->connected) return;
  if (w->fly.len == 0) {
    if (w->pend.len == 0 || (w->pend.len < w->cfg.buffer && !w->ending)) {
      if (w->ending && w->pend.len == 0) writer_close(w);
      return;
    }
    wm_buf t = w->fly;
    w->fly = w->pend;
    w->pend = t;
    w->fly_off = 0;
  }
  uv_buf_t b = uv_buf_init(w->fly.data + w->fly_off, (unsigned)(w->fly.len - w->fly_off));
  int rc;
  if (w->tcp) {
    w->wreq.data = w;
    rc = uv_write(&w->wreq, (uv_stream_t *)&w->sock, &b, 1, on_tcp_written);
  } else {
    w->req.data = w;
    rc = uv_fs_write(wm_exec_loop(w->exec), &w->req, w->fd, &b, 1, w->offset, on_fs_written);
  }
  if (rc != 0) {
    writer_fail(w, "cannot write to", rc);
    return;
  }
  w->busy = 1;
}

static int writer_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  writer *w = op->impl;
  if (w->failed) return WM_ERR;
  size_t before = w->pend.len;
  if (w->cfg.format == WM_FMT_CUSTOM) {
    if (w->cfg.custom.fn(w->cfg.custom.ud, op, rec, &w->pend) != WM_OK) {
      w->pend.len = before;
      return WM_ERR;
    }
  } else {
    wm_format_value(&w->pend, rec, w->cfg.format == WM_FMT_JSON, op->ctx->host.format,
                    op->ctx->host.ud);
  }
  wm_buf_addc(&w->pend, '\n');
  if (w->pend.oom) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  writer_report(w);
  if (w->pend.len >= w->cfg.buffer) writer_kick(w);
  return WM_OK;
}

static int writer_watermark(wm_op *op, int64_t wm) {
  writer *w = op->impl;
  if (wm == WM_TIME_MAX && !w->ending) {
    w->ending = 1; /* flush everything, then close */
    writer_kick(w);
  }
  return WM_OK;
}

static void writer_free(wm_op *op) {
  writer *w = op->impl;
  if (!w) return;
  if (!w->tcp && w->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, w->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  if (w->cfg.custom.free) w->cfg.custom.free(w->cfg.custom.ud);
  wm_buf_free(&w->pend);
  wm_buf_free(&w->fly);
  wm_buf_free(&w->line);
  free(w->origin);
  free(w);
}

static const wm_op_vt write_lines_vt = {.kind = "write_lines", .record = writer_record,
                                        .watermark = writer_watermark, .free = writer_free};
static const wm_op_vt write_socket_vt = {.kind = "write_socket", .record = writer_record,
                                         .watermark = writer_watermark, .free = writer_free};

static writer *writer_new(wm_exec *exec, const char *name, wm_write_config *cfg,
                          const wm_op_vt *vt, char *origin) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  writer *w = calloc(1, sizeof *w);
  if (!w || !origin) {
    free(w);
    free(origin);
    if (cfg->custom.free) cfg->custom.free(cfg->custom.ud);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  w->exec = exec;
  w->cfg = *cfg;
  w->cfg.path = w->cfg.host = NULL;
  if (!w->cfg.buffer) w->cfg.buffer = (size_t)64 << 10;
  w->origin = origin;
  w->fd = -1;
  wm_buf_init(&w->pend);
  wm_buf_init(&w->fly);
  wm_buf_init(&w->line);
  w->op = wm_op_new(ctx, vt, w, name);
  if (!w->op) {
    writer_free(&(wm_op){.impl = w});
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  return w;
}

wm_op *wm_write_lines_new(wm_exec *exec, const char *name, wm_write_config *cfg) {
  writer *w = writer_new(exec, name, cfg, &write_lines_vt, strdup(cfg->path));
  if (!w) return NULL;
  uv_fs_t req;
  int fd = uv_fs_open(NULL, &req, cfg->path, UV_FS_O_WRONLY | UV_FS_O_CREAT | UV_FS_O_TRUNC,
                      0666, NULL);
  uv_fs_req_cleanup(&req);
  if (fd < 0) {
    wm_ctx_error(w->op->ctx, "cannot open '%s' for writing: %s", cfg->path, uv_strerror(fd));
    return NULL;
  }
  w->fd = fd;
  return w->op;
}

static void on_sink_connect(uv_connect_t *req, int status) {
  writer *w = req->data;
  if (w->failed || w->closed) return;
  if (status < 0) {
    writer_fail(w, "cannot connect to", status);
    return;
  }
  w->connected = 1;
  writer_kick(w);
}

wm_op *wm_write_socket_new(wm_exec *exec, const char *name, wm_write_config *cfg) {
  writer *w = writer_new(exec, name, cfg, &write_socket_vt, host_port(cfg->host, cfg->port));
  if (!w) return NULL;
  w->tcp = 1;
  struct sockaddr_storage addr;
  if (resolve(exec, cfg->host, cfg->port, &addr) != WM_OK) return NULL;
  int rc = uv_tcp_init(wm_exec_loop(exec), &w->sock);
  if (rc == 0) {
    w->sock_open = 1;
    w->sock.data = w;
    w->conn.data = w;
    rc = uv_tcp_connect(&w->conn, &w->sock, (const struct sockaddr *)&addr, on_sink_connect);
  }
  if (rc != 0) {
    wm_ctx_error(w->op->ctx, "cannot connect to %s: %s", w->origin, uv_strerror(rc));
    return NULL;
  }
  return w->op;
}
