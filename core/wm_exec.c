
#include "wm_exec.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "wm_buf.h"
#include "wm_timer.h"
#include "wm_time.h"
#include "wm_tsop.h"

typedef struct srcent {
  wm_op *op;
  const wm_source_vt *vt;
  int done;
} srcent;

struct wm_exec {
  wm_ctx *ctx;
  wm_exec_config cfg;
  uv_loop_t loop;
  int loop_ok;
  uv_timer_t periodic;
  int periodic_open;
  uv_signal_t sig[2];
  int sig_open;
  srcent *srcs;
  int nsrc, ndone;
  wm_op **tsops;
  int ntsops;
  int failed, draining, aborted, finished;
  /* processing-time timers: payload = index of the operator in ctx->ops */
  wm_timers *pt;
  uv_timer_t pt_timer;
  int pt_open;
  uint64_t pt_seq;
};

static int pt_register(void *ud, wm_op *op, int64_t t);

wm_exec *wm_exec_new(wm_ctx *ctx, const wm_exec_config *cfg) {
  wm_exec *e = calloc(1, sizeof *e);
  if (!e) {
    wm_ctx_error(ctx, "out of memory creating the executor");
    return NULL;
  }
  e->ctx = ctx;
  e->cfg = *cfg;
  int rc = uv_loop_init(&e->loop);
  if (rc != 0) {
    wm_ctx_error(ctx, "cannot create the event loop: %s", uv_strerror(rc));
    free(e);
    return NULL;
  }
  e->loop_ok = 1;
  e->loop.data = e;
  ctx->pt_register = pt_register;
  ctx->pt_ud = e;
  return e;
}

static void walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

void wm_exec_free(wm_exec *e) {
  if (!e) return;
  if (e->loop_ok) {
    /* everything should be closed by now; close stragglers so the loop can end */
    uv_walk(&e->loop, walk_close, NULL);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    uv_loop_close(&e->loop);
  }
  free(e->srcs);
  free(e->tsops);
  wm_timers_free(e->pt);
  free(e);
}

uv_loop_t *wm_exec_loop(wm_exec *e) { return &e->loop; }
wm_ctx *wm_exec_ctx(wm_exec *e) { return e->ctx; }
int wm_exec_stopping(const wm_exec *e) { return e->failed || e->draining || e->aborted; }

int wm_exec_add_source(wm_exec *e, wm_op *op, const wm_source_vt *vt) {
  srcent *n = realloc(e->srcs, (size_t)(e->nsrc + 1) * sizeof *n);
  if (!n) return -1;
  e->srcs = n;
  n[e->nsrc].op = op;
  n[e->nsrc].vt = vt;
  n[e->nsrc].done = 0;
  e->nsrc++;
  return 0;
}

static void on_pt_timer(uv_timer_t *t);

/* Arms the libuv timer for the earliest processing-time timer. */
static void pt_arm(wm_exec *e) {
  int64_t t;
  if (!e->pt_open || !wm_timers_due(e->pt, INT64_MAX, &t)) return;
  int64_t now = wm_ctx_now(e->ctx), delay = t > now ? t - now : 0;
  int rc = uv_timer_start(&e->pt_timer, on_pt_timer, (uint64_t)delay, 0);
  if (rc != 0) {
    wm_ctx_error(e->ctx, "cannot start a processing-time timer: %s", uv_strerror(rc));
    wm_exec_fail(e);
  }
}

static int pt_register(void *ud, wm_op *op, int64_t t) {
  wm_exec *e = ud;
  size_t i;
  for (i = 0; i < e->ctx->nops && e->ctx->ops[i] != op; i++) {
  }
  if (!e->pt) {
    e->pt = wm_timers_new();
    if (!e->pt) return wm_ctx_error(e->ctx, "out of memory");
  }
  if (!e->pt_open) {
    int rc = uv_timer_init(&e->loop, &e->pt_timer);
    if (rc != 0) return wm_ctx_error(e->ctx, "cannot create a timer: %s", uv_strerror(rc));
    e->pt_timer.data = e;
    e->pt_open = 1;
  }
  if (wm_timers_push(e->pt, t, (uint64_t)i, e->pt_seq++) != 0)
    return wm_ctx_error(e->ctx, "out of memory");
  pt_arm(e);
  return WM_OK;
}

static void on_pt_timer(uv_timer_t *h) {
  wm_exec *e = h->data;
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (!e->failed && wm_timers_pop(e->pt, wm_ctx_now(e->ctx), &t, &ents, &n)) {
    for (size_t k = 0; k < n && !e->failed; k++) {
      wm_op *op = e->ctx->ops[ents[k].payload];
      if (op->vt->processing_time && op->vt->processing_time(op, t) != WM_OK) wm_exec_fail(e);
    }
  }
  if (!e->failed) pt_arm(e);
}

static void close_services(wm_exec *e) {
  if (e->pt_open) {
    uv_close((uv_handle_t *)&e->pt_timer, NULL);
    e->pt_open = 0;
  }
  if (e->periodic_open) {
    uv_close((uv_handle_t *)&e->periodic, NULL);
    e->periodic_open = 0;
  }
  if (e->sig_open) {
    uv_close((uv_handle_t *)&e->sig[0], NULL);
    uv_close((uv_handle_t *)&e->sig[1], NULL);
    e->sig_open = 0;
  }
}

void wm_exec_fail(wm_exec *e) {
  if (e->failed) return;
  e->failed = 1;
  for (int i = 0; i < e->nsrc; i++)
    if (!e->srcs[i].done) {
      e->srcs[i].done = 1;
      e->ndone++;
      e->srcs[i].vt->stop(e->srcs[i].op, e, 0);
    }
  close_services(e);
}

void wm_exec_source_done(wm_exec *e, wm_op *src) {
  for (int i = 0; i < e->nsrc; i++) {
    if (e->srcs[i].op != src) continue;
    if (e->srcs[i].done && !e->draining) return;
    if (!e->srcs[i].done) {
      e->srcs[i].done = 1;
      e->ndone++;
    }
    break;
  }
  if (e->failed) return;
  src->ended = true;
  src->wm = WM_TIME_MAX;
  if (wm_op_emit_watermark(src, WM_TIME_MAX) != WM_OK) {
    wm_exec_fail(e);
    return;
  }
  if (e->ndone == e->nsrc) {
    e->finished = 1;
    close_services(e);
  }
}

void wm_exec_drain(wm_exec *e) {
  if (e->draining || e->failed) return;
  e->draining = 1;
  for (int i = 0; i < e->nsrc; i++)
    if (!e->srcs[i].done) e->srcs[i].vt->stop(e->srcs[i].op, e, 1);
}

void wm_exec_batch_done(wm_exec *e) {
  if (e->cfg.on_batch) e->cfg.on_batch(e->cfg.on_batch_ud);
}

static void on_periodic(uv_timer_t *t) {
  wm_exec *e = t->data;
  if (e->failed) return;
  int64_t now = wm_ctx_now(e->ctx);
  for (int i = 0; i < e->ntsops; i++) {
    wm_op *op = e->tsops[i];
    if (op->ended) continue;
    int64_t idle = wm_tsop_idle_timeout(op);
    int rc = WM_OK;
    if (idle > 0 && !wm_tsop_is_idle(op) && now - wm_tsop_last_record_time(op) >= idle)
      rc = wm_tsop_mark_idle(op);
    if (rc == WM_OK && !wm_tsop_is_idle(op) && wm_tsop_interval(op) > 0) rc = wm_tsop_periodic(op);
    if (rc != WM_OK) {
      wm_exec_fail(e);
      return;
    }
  }
}

static void on_signal(uv_signal_t *s, int signum) {
  wm_exec *e = s->data;
  (void)signum;
  if (!e->draining) {
    wm_exec_drain(e);
    return;
  }
  /* a second signal: stop at once */
  e->aborted = 1;
  for (int i = 0; i < e->nsrc; i++)
    if (!e->srcs[i].done) {
      e->srcs[i].done = 1;
      e->srcs[i].vt->stop(e->srcs[i].op, e, 0);
    }
  close_services(e);
  uv_stop(&e->loop);
}

int wm_exec_run(wm_exec *e) {
  wm_ctx *ctx = e->ctx;
  int rc;
  for (size_t i = 0; i < ctx->nops; i++) {
    if (!wm_op_is_tsop(ctx->ops[i])) continue;
    wm_op **n = realloc(e->tsops, (size_t)(e->ntsops + 1) * sizeof *n);
    if (!n) return wm_ctx_error(ctx, "out of memory");
    e->tsops = n;
    n[e->ntsops++] = ctx->ops[i];
  }
  /* the periodic timer drives periodic watermarks and idleness checks */
  int64_t period = 0;
  for (int i = 0; i < e->ntsops; i++) {
    int64_t iv = wm_tsop_interval(e->tsops[i]), idle = wm_tsop_idle_timeout(e->tsops[i]);
    if (iv > 0 && (period == 0 || iv < period)) period = iv;
    if (idle > 0) {
      int64_t p = idle / 4 > 0 ? idle / 4 : 1;
      if (period == 0 || p < period) period = p;
    }
  }
  if (period > 0) {
    if ((rc = uv_timer_init(&e->loop, &e->periodic)) != 0)
      return wm_ctx_error(ctx, "cannot create the watermark timer: %s", uv_strerror(rc));
    e->periodic.data = e;
    e->periodic_open = 1;
    if ((rc = uv_timer_start(&e->periodic, on_periodic, (uint64_t)period, (uint64_t)period)) != 0) {
      close_services(e);
      return wm_ctx_error(ctx, "cannot start the watermark timer: %s", uv_strerror(rc));
    }
    uv_unref((uv_handle_t *)&e->periodic); /* the sources keep the loop alive, not the timer */
  }
  if (e->cfg.handle_signals) {
    int signums[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
      if ((rc = uv_signal_init(&e->loop, &e->sig[i])) != 0 ||
          (e->sig[i].data = e, rc = uv_signal_start(&e->sig[i], on_signal, signums[i])) != 0) {
        e->sig_open = i > 0;
        if (i == 1) uv_close((uv_handle_t *)&e->sig[1], NULL);
        close_services(e);
        return wm_ctx_error(ctx, "cannot watch signals: %s", uv_strerror(rc));
      }
      uv_unref((uv_handle_t *)&e->sig[i]);
    }
    e->sig_open = 1;
  }
  for (int i = 0; i < e->nsrc && !e->failed; i++) {
    if (e->srcs[i].vt->start(e->srcs[i].op, e) != WM_OK) wm_exec_fail(e);
  }
  if (e->nsrc == 0) close_services(e);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  close_services(e);
  uv_run(&e->loop, UV_RUN_DEFAULT); /* let close callbacks run */
  if (e->failed) return WM_ERR;
  if (e->aborted) return WM_STOP;
  return WM_OK;
}

/* ---- line source ------------------------------------------------------------------ */

typedef struct lines {
  wm_exec *exec;
  wm_op *op;
  char *path;
  size_t max_line, chunk;
  uv_file fd;
  int own_fd;
  int mode; /* 0 = file reads (fs), 1 = stream (pipe/tty) */
  union {
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_stream_t stream;
  } h;
  int h_open;
  uv_fs_t req;
  int req_busy;
  char *buf;
  wm_buf carry;
  uint64_t lineno;
  int64_t offset;
  int stopped, finished;
} lines;

static int lines_rec(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)rec;
  (void)ts;
  return wm_ctx_error(op->ctx, "a source has no inputs");
}

static void lines_close_fd(lines *l) {
  if (l->own_fd && l->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, l->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  l->fd = -1;
}

static void lines_free_op(wm_op *op) {
  lines *l = op->impl;
  if (!l) return;
  lines_close_fd(l);
  free(l->buf);
  wm_buf_free(&l->carry);
  free(l->path);
  free(l);
}

static const wm_op_vt lines_vt = {
    .kind = "read_lines",
    .record = lines_rec,
    .free = lines_free_op,
};

const char *wm_lines_position(const wm_op *op, uint64_t *line) {
  if (op->vt != &lines_vt) return NULL;
  const lines *l = op->impl;
  *line = l->lineno;
  return l->path;
}

static int emit_line(lines *l, const char *s, size_t n) {
  if (n && s[n - 1] == '\r') n--;
  l->lineno++;
  wm_value v = wm_cstr(s, n);
  int rc = wm_op_emit(l->op, 0, &v, WM_TIME_MIN);
  if (rc == WM_ERR)
    wm_ctx_error_context(l->op->ctx, "\n  while reading %s:%llu",
                        strcmp(l->path, "-") == 0 ? "<stdin>" : l->path,
                        (unsigned long long)l->lineno);
  return rc;
}

static int too_long(lines *l) {
  return wm_ctx_error(l->op->ctx, "%s:%llu: line longer than %zu bytes",
                      strcmp(l->path, "-") == 0 ? "<stdin>" : l->path,
                      (unsigned long long)l->lineno + 1, l->max_line);
}

/* Frames lines in data; complete lines are passed straight from the read buffer. */
static int lines_feed(lines *l, const char *data, size_t n) {
  const char *p = data, *end = data + n;
  while (p < end && !l->stopped) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) {
      if (l->carry.len + (size_t)(end - p) > l->max_line) return too_long(l);
      wm_buf_add(&l->carry, p, (size_t)(end - p));
      if (l->carry.oom) return wm_ctx_error(l->op->ctx, "out of memory reading lines");
      break;
    }
    int rc;
    if (l->carry.len) {
      if (l->carry.len + (size_t)(nl - p) > l->max_line) return too_long(l);
      wm_buf_add(&l->carry, p, (size_t)(nl - p));
      if (l->carry.oom) return wm_ctx_error(l->op->ctx, "out of memory reading lines");
      rc = emit_line(l, l->carry.data, l->carry.len);
      wm_buf_clear(&l->carry);
    } else {
      if ((size_t)(nl - p) > l->max_line) return too_long(l);
      rc = emit_line(l, p, (size_t)(nl - p));
    }
    if (rc != WM_OK) return rc;
    p = nl + 1;
  }
  return WM_OK;
}

/* End of input: a last line without "\n" still counts. */
static void lines_eof(lines *l) {
  if (l->finished) return;
  if (l->carry.len && !l->stopped) {
    int rc = emit_line(l, l->carry.data, l->carry.len);
    wm_buf_clear(&l->carry);
    if (rc != WM_OK) {
      l->finished = 1;
      wm_exec_fail(l->exec);
      return;
    }
  }
  l->finished = 1;
  lines_close_fd(l);
  wm_exec_source_done(l->exec, l->op);
}

static void lines_read_file(lines *l);

static void on_fs_read(uv_fs_t *req) {
  lines *l = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  l->req_busy = 0;
  if (l->finished) return;
  if (l->stopped) {
    lines_eof(l);
    return;
  }
  if (n < 0) {
    wm_ctx_error(l->op->ctx, "cannot read '%s': %s", l->path, uv_strerror((int)n));
    l->finished = 1;
    wm_exec_fail(l->exec);
    return;
  }
  if (n == 0) {
    lines_eof(l);
    return;
  }
  l->offset += n;
  int rc = lines_feed(l, l->buf, (size_t)n);
  wm_exec_batch_done(l->exec);
  if (rc != WM_OK) {
    l->finished = 1;
    wm_exec_fail(l->exec);
    return;
  }
  if (l->stopped) {
    lines_eof(l);
    return;
  }
  lines_read_file(l);
}

static void lines_read_file(lines *l) {
  uv_buf_t b = uv_buf_init(l->buf, (unsigned)l->chunk);
  l->req.data = l;
  int rc = uv_fs_read(&l->exec->loop, &l->req, l->fd, &b, 1, l->offset, on_fs_read);
  if (rc != 0) {
    wm_ctx_error(l->op->ctx, "cannot read '%s': %s", l->path, uv_strerror(rc));
    l->finished = 1;
    wm_exec_fail(l->exec);
    return;
  }
  l->req_busy = 1;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  lines *l = h->data;
  *b = uv_buf_init(l->buf, (unsigned)l->chunk);
}

static void on_stream_closed(uv_handle_t *h) {
  lines *l = h->data;
  l->h_open = 0;
}

static void lines_close_stream(lines *l) {
  if (l->h_open && !uv_is_closing((uv_handle_t *)&l->h.stream)) {
    uv_read_stop(&l->h.stream);
    uv_close((uv_handle_t *)&l->h.stream, on_stream_closed);
  }
}

static void on_stream_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  (void)b;
  lines *l = s->data;
  if (l->finished) return;
  if (n == UV_EOF) {
    lines_close_stream(l);
    lines_eof(l);
    return;
  }
  if (n < 0) {
    wm_ctx_error(l->op->ctx, "cannot read '%s': %s", l->path, uv_strerror((int)n));
    l->finished = 1;
    lines_close_stream(l);
    wm_exec_fail(l->exec);
    return;
  }
  int rc = lines_feed(l, l->buf, (size_t)n);
  wm_exec_batch_done(l->exec);
  if (rc != WM_OK) {
    l->finished = 1;
    lines_close_stream(l);
    wm_exec_fail(l->exec);
  }
}

static int lines_start(wm_op *op, wm_exec *exec) {
  lines *l = op->impl;
  l->exec = exec;
  if (l->mode == 0) {
    lines_read_file(l);
    return l->finished ? WM_ERR : WM_OK;
  }
  int rc;
  if (uv_guess_handle(l->fd) == UV_TTY)
    rc = uv_tty_init(&exec->loop, &l->h.tty, l->fd, 1);
  else if ((rc = uv_pipe_init(&exec->loop, &l->h.pipe, 0)) == 0) {
    l->h_open = 1;
    l->h.stream.data = l;
    rc = uv_pipe_open(&l->h.pipe, l->fd);
  }
  if (rc == 0) {
    l->h_open = 1;
    l->h.stream.data = l;
    rc = uv_read_start(&l->h.stream, on_alloc, on_stream_read);
  }
  if (rc != 0) {
    lines_close_stream(l);
    return wm_ctx_error(op->ctx, "cannot read '%s': %s", l->path, uv_strerror(rc));
  }
  return WM_OK;
}

static void lines_stop(wm_op *op, wm_exec *exec, int finish) {
  lines *l = op->impl;
  (void)exec;
  if (l->stopped) return;
  l->stopped = 1;
  if (l->mode == 1) lines_close_stream(l);
  if (!finish) {
    l->finished = 1;
    return;
  }
  /* a drain: what was read so far counts; the end-of-input watermark follows. A pending
   * file read finishes first (its callback sees `stopped`). */
  if (!l->req_busy) lines_eof(l);
}

static const wm_source_vt lines_src_vt = {.start = lines_start, .stop = lines_stop};

wm_op *wm_lines_new(wm_exec *exec, const char *name, const wm_lines_config *cfg) {
  wm_ctx *ctx = exec->ctx;
  lines *l = calloc(1, sizeof *l);
  if (!l) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  l->exec = exec;
  l->fd = -1;
  l->max_line = cfg->max_line ? cfg->max_line : (size_t)1 << 20;
  l->chunk = cfg->chunk ? cfg->chunk : (size_t)256 << 10;
  wm_buf_init(&l->carry);
  l->path = strdup(cfg->path);
  l->buf = malloc(l->chunk);
  if (!l->path || !l->buf) {
    free(l->path);
    free(l->buf);
    free(l);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  if (strcmp(cfg->path, "-") == 0) {
    l->fd = 0;
  } else {
    uv_fs_t req;
    int fd = uv_fs_open(NULL, &req, cfg->path, UV_FS_O_RDONLY, 0, NULL);
    uv_fs_req_cleanup(&req);
    if (fd < 0) {
      wm_ctx_error(ctx, "cannot open '%s': %s", cfg->path,
                   fd == UV_ENOENT ? "No such file or directory" : uv_strerror(fd));
      lines_free_op_direct:
      free(l->path);
      free(l->buf);
      free(l);
      return NULL;
    }
    l->fd = fd;
    l->own_fd = 1;
    uv_fs_t st;
    if (uv_fs_fstat(NULL, &st, fd, NULL) == 0 && (st.statbuf.st_mode & S_IFMT) == S_IFDIR) {
      uv_fs_req_cleanup(&st);
      wm_ctx_error(ctx, "cannot open '%s': Is a directory", cfg->path);
      lines_close_fd(l);
      goto lines_free_op_direct;
    }
    uv_fs_req_cleanup(&st);
  }
  uv_handle_type ht = uv_guess_handle(l->fd);
  l->mode = (ht == UV_NAMED_PIPE || ht == UV_TTY) ? 1 : 0;
  wm_op *op = wm_op_new(ctx, &lines_vt, l, name);
  if (!op) {
    lines_close_fd(l);
    free(l->path);
    free(l->buf);
    free(l);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  l->op = op;
  if (wm_exec_add_source(exec, op, &lines_src_vt) != 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  return op;
}
