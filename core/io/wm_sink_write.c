/* The asynchronous sinks write_lines(path) and write_socket(host, port) (see wm_io.h).
 *
 * Lines gather in a buffer (`pend`) and are written while the next ones gather (`fly`):
 * bytes being written stay in their buffer until the write callback. The bytes queued are
 * reported to the host (backpressure). The socket's memory is released only in its close
 * callback (wm_io_owner).
 *
 * Checkpoints (exactly-once files): write_lines's snapshot writes out synchronously what
 * has gathered and what is in flight (a positional write of the same bytes at the same
 * offset as the one the thread pool may be doing), fsyncs the file and records its length;
 * a restore truncates the file to that length. The file is opened without O_TRUNC and
 * truncated to 0 at the first record or watermark unless a restore came first, so that a
 * resumed job keeps what the checkpoint covers; a job that never ran (its start refused)
 * leaves the file as it was. The snapshot also records the file's identity (device, inode,
 * a hash of its last bytes): a restore refuses another file at the path, untouched.
 * write_socket keeps nothing: at-least-once.
 *
 * An output that cannot seek (a FIFO, a pipe such as /dev/stdout in `wmrun job | cmd`, a
 * terminal, a character device) is written sequentially and synchronously from the loop
 * (write(2) of the gathered buffer, as print writes standard output): a reader that stops
 * reading stops the job, and a snapshot finds nothing in flight, so it writes out what has
 * gathered before the checkpoint completes (at-least-once: nothing is cut on a restore, what
 * was written after the checkpoint is written again).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_jsonw.h"
#include "base/wm_hash.h"
#include "graph/wm_statefmt.h"
#include "io/wm_lines.h"
#include "time/wm_time.h"

typedef struct writer {
  wm_io_owner own;     /* first: the socket's data points at the writer */
  wm_io_host *host;
  wm_op *op;
  char *origin;        /* the path, or host:port */
  int tcp;
  wm_write_config cfg; /* path/host not kept */
  /* file */
  uv_file fd;
  int64_t offset;
  int regular;         /* a regular file: truncated, and exactly-once with checkpoints */
  int trunc_pending;   /* not truncated yet (the first record or watermark does it) */
  int fly_synced;      /* the write in flight was done again by a snapshot: ignore it */
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
  int draining;        /* the sources are paused: write what gathers, however little */
  int64_t reported;    /* bytes reported to the host (wm_io_pressure) */
  wm_buf line;
  wm_jsonw jw;         /* rows are written through their prepared schema */
} writer;

/* Tells the host how many bytes are queued now. The host may resume the sources from inside
 * wm_io_pressure, and a resumed source may emit at once into this very sink, which reports
 * again: `reported` is brought up to date before the call, so that the inner report counts
 * only its own change and the host's total stays the sum of what every sink holds. */
static void writer_report(writer *w) {
  int64_t q = (int64_t)(w->pend.len + w->fly.len - w->fly_off);
  int64_t delta = q - w->reported;
  if (delta == 0) return;
  w->reported = q;
  wm_io_pressure(w->host, delta);
}

/* A write is in flight (busy = 1) or done: the host counts them, so that a job paused by
 * backpressure with nothing in flight is known to be stalled (wm_io_writing). */
static void writer_busy(writer *w, int busy) {
  if (busy == w->busy) return;
  w->busy = busy;
  wm_io_writing(w->host, busy ? 1 : -1);
}

static void writer_fail(writer *w, const char *what, int rc) {
  if (w->failed) return;
  w->failed = 1;
  wm_ctx_error(w->op->ctx, "%s %s: %s\n  in sink '%s'", what, w->origin, uv_strerror(rc),
               w->op->name);
  wm_io_fail(w->host);
}

static void writer_close(writer *w) {
  if (w->closed) return;
  w->closed = 1;
  if (w->tcp) {
    wm_io_close(&w->own, (uv_handle_t *)&w->sock, &w->sock_open);
  } else if (w->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, w->fd, NULL);
    uv_fs_req_cleanup(&req);
    w->fd = -1;
  }
}

static void writer_kick(writer *w);

static int write_all_fd(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* An output that cannot seek: what has gathered, written now (see the top). */
static void writer_kick_seq(writer *w) {
  if (w->failed || w->closed) return;
  if (w->pend.len && (w->pend.len >= w->cfg.buffer || w->ending || w->draining)) {
    if (write_all_fd(w->fd, w->pend.data, w->pend.len) != 0) {
      writer_fail(w, "cannot write to", uv_translate_sys_error(errno));
      return;
    }
    w->offset += (int64_t)w->pend.len;
    wm_buf_clear(&w->pend);
    writer_report(w);
  }
  if (w->ending && w->pend.len == 0) writer_close(w);
}

static void writer_written(writer *w, ssize_t n) {
  writer_busy(w, 0);
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
  if (w->fly_synced) { /* a snapshot wrote these bytes already (and moved offset past them) */
    w->fly_synced = 0;
    writer_busy(w, 0);
    wm_buf_clear(&w->fly);
    w->fly_off = 0;
    writer_report(w);
    writer_kick(w);
    return;
  }
  if (n < 0) {
    writer_busy(w, 0);
    writer_fail(w, "cannot write to", (int)n);
    return;
  }
  w->offset += n;
  writer_written(w, n);
}

static void on_tcp_written(uv_write_t *req, int status) {
  writer *w = req->data;
  if (status < 0) {
    writer_busy(w, 0);
    if (status != UV_ECANCELED) writer_fail(w, "cannot write to", status);
    return;
  }
  writer_written(w, (ssize_t)(w->fly.len - w->fly_off));
}

/* Starts the next write when there is something to write and nothing in flight; closes
 * the output once everything is written after the end of input. */
static void writer_kick(writer *w) {
  if (!w->tcp && !w->regular) {
    writer_kick_seq(w);
    return;
  }
  if (w->busy || w->failed || w->closed) return;
  if (w->tcp && !w->connected) return;
  if (w->fly.len == 0) {
    if (w->pend.len == 0 || (w->pend.len < w->cfg.buffer && !w->ending && !w->draining)) {
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
    rc = uv_fs_write(w->host->loop, &w->req, w->fd, &b, 1, w->offset, on_fs_written);
  }
  if (rc != 0) {
    writer_fail(w, "cannot write to", rc);
    return;
  }
  writer_busy(w, 1);
}

/* Backpressure paused the sources (wm_io_add_flusher): what this sink holds is written now,
 * and so is what still arrives (from other threads) until they resume, since no more records
 * may come to fill a buffer. */
static void writer_drain(void *ud, int paused) {
  writer *w = ud;
  w->draining = paused;
  if (paused) writer_kick(w);
}

/* The file is emptied at the first sign of output unless a restore kept its start. */
static int writer_truncate(writer *w) {
  w->trunc_pending = 0;
  if (w->fd < 0 || !w->regular || ftruncate(w->fd, 0) == 0) return WM_OK;
  writer_fail(w, "cannot truncate", uv_translate_sys_error(errno));
  return WM_ERR;
}

static int writer_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  writer *w = op->impl;
  if (w->failed) return WM_ERR;
  if (w->trunc_pending && writer_truncate(w) != WM_OK) return WM_ERR;
  size_t before = w->pend.len;
  if (w->cfg.format == WM_FMT_CUSTOM) {
    if (w->cfg.custom.fn(w->cfg.custom.ud, op, rec, &w->pend) != WM_OK) {
      w->pend.len = before;
      return WM_ERR;
    }
  } else {
    wm_jsonw_value(&w->jw, &w->pend, rec, w->cfg.format == WM_FMT_JSON, op->ctx->host.format,
                   op->ctx->host.ud);
  }
  wm_buf_addc(&w->pend, '\n');
  if (w->pend.oom) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  writer_report(w);
  if (w->pend.len >= w->cfg.buffer || w->draining) writer_kick(w);
  return WM_OK;
}

static int writer_watermark(wm_op *op, int64_t wm) {
  writer *w = op->impl;
  if (w->trunc_pending && writer_truncate(w) != WM_OK) return WM_ERR;
  if (wm == WM_TIME_MAX && !w->ending) {
    w->ending = 1; /* flush everything, then close */
    writer_kick(w);
  }
  return WM_OK;
}

static void writer_destroy(wm_io_owner *own) {
  writer *w = (writer *)own;
  /* a file still pending its truncation is left as it was: the job never ran (its start was
   * refused: another job holds the checkpoint directory, a resume was refused), and the
   * file may be another job's output or what a checkpoint needs (a job that ran to its end
   * had its final watermark, which truncated it) */
  if (!w->tcp && w->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, w->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  if (w->cfg.custom.free) w->cfg.custom.free(w->cfg.custom.ud);
  wm_buf_free(&w->pend);
  wm_buf_free(&w->fly);
  wm_buf_free(&w->line);
  wm_jsonw_free(&w->jw);
  free(w->origin);
  free(w);
}

static void writer_free(wm_op *op) {
  writer *w = op->impl;
  if (!w) return;
  w->closed = 1; /* a connect callback still to come (cancelled) finds nothing to do */
  if (w->tcp) wm_io_close(&w->own, (uv_handle_t *)&w->sock, &w->sock_open);
  wm_io_release(&w->own);
}

/* ---- checkpoints ------------------------------------------------------------------ */

static int pwrite_all(int fd, const char *p, size_t n, int64_t at) {
  while (n > 0) {
    ssize_t k = pwrite(fd, p, n, (off_t)at);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    n -= (size_t)k;
    at += k;
  }
  return 0;
}

/* Everything produced so far on disk: the rest of the buffer in flight and what has
 * gathered, written at their offsets, and fsync. */
static int writer_sync(writer *w) {
  wm_ctx *ctx = w->op->ctx;
  if (w->failed) return wm_ctx_error(ctx, "sink '%s' has failed", w->op->name);
  if (w->trunc_pending && writer_truncate(w) != WM_OK) return WM_ERR;
  if (!w->regular) { /* written in order, nothing in flight: what has gathered goes out now */
    if (w->fd < 0 || w->pend.len == 0) return WM_OK;
    if (write_all_fd(w->fd, w->pend.data, w->pend.len) != 0)
      return wm_ctx_error(ctx, "cannot write '%s' for a checkpoint: %s\n  in sink '%s'",
                          w->origin, strerror(errno), w->op->name);
    w->offset += (int64_t)w->pend.len;
    wm_buf_clear(&w->pend);
    writer_report(w);
    return WM_OK;
  }
  int fd = w->fd, own = 0;
  if (fd < 0) { /* closed after the end of input: everything was written; make it durable */
    fd = open(w->origin, O_WRONLY);
    own = 1;
    if (fd < 0) return wm_ctx_error(ctx, "cannot open '%s' to sync it: %s\n  in sink '%s'",
                                    w->origin, strerror(errno), w->op->name);
  }
  int64_t at = w->offset;
  /* (a write in flight that an earlier snapshot wrote already, its callback still to come, is
   * behind offset: writing it again here would put it twice into the file) */
  size_t rest = w->fly_synced ? 0 : w->fly.len - w->fly_off;
  int rc = 0;
  if (rest) rc = pwrite_all(fd, w->fly.data + w->fly_off, rest, at);
  if (rc == 0 && w->pend.len) rc = pwrite_all(fd, w->pend.data, w->pend.len, at + (int64_t)rest);
  if (rc == 0 && w->regular && fsync(fd) != 0) rc = -1;
  int e = errno;
  if (own) close(fd);
  if (rc != 0)
    return wm_ctx_error(ctx, "cannot write '%s' for a checkpoint: %s\n  in sink '%s'", w->origin,
                        strerror(e), w->op->name);
  w->offset = at + (int64_t)rest + (int64_t)w->pend.len;
  wm_buf_clear(&w->pend);
  if (w->busy && rest) {
    w->fly_synced = 1; /* its callback clears fly */
  } else if (!w->busy) {
    wm_buf_clear(&w->fly);
    w->fly_off = 0;
  }
  writer_report(w);
  return WM_OK;
}

/* The identity of the file a checkpoint wrote: its device and inode, and a hash of its last
 * bytes before the checkpoint's length (up to TAIL_BYTES of them: a file put at the path in
 * its place may have the inode of a removed one). */
#define TAIL_BYTES 4096

typedef struct file_id {
  uint64_t dev, ino;
  uint64_t hashed; /* bytes hashed (0: no hash: the file could not be read) */
  uint64_t hash;   /* FNV-1a, 64 bits */
} file_id;

/* The hash of the n bytes of the file at path before `len`, when path is still the file of
 * (dev, ino); id->hashed = 0 when it cannot be read (a write-only file) or is another file.
 * -1 when fewer than n bytes could be read (errno set, or 0: the file is short). */
static int tail_hash(const char *path, uint64_t len, file_id *id) {
  id->hashed = 0;
  id->hash = 0;
  uint64_t n = len < TAIL_BYTES ? len : TAIL_BYTES;
  if (n == 0) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != id->dev || (uint64_t)st.st_ino != id->ino) {
    close(fd);
    errno = 0;
    return 0;
  }
  unsigned char buf[TAIL_BYTES] = {0}; /* (cppcheck cannot see that the loop fills it) */
  size_t got = 0;
  while (got < n) {
    ssize_t k = pread(fd, buf + got, (size_t)n - got, (off_t)(len - n + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = 0;
      close(fd);
      return -1;
    }
    got += (size_t)k;
  }
  close(fd);
  id->hashed = n;
  id->hash = wm_fnv1a64(buf, got);
  return 0;
}

/* version 2: whether the output is a regular file, its length, its device and inode, the
 * bytes hashed and their hash (file_id); version 1 (before the identity) had the first two */
static int lines_snapshot(wm_op *op, wm_state_io *io) {
  writer *w = op->impl;
  if (writer_sync(w) != WM_OK) return WM_ERR;
  file_id id = {0};
  if (w->regular) {
    struct stat st;
    int ok = w->fd >= 0 ? fstat(w->fd, &st) == 0 : stat(w->origin, &st) == 0;
    if (!ok)
      return wm_ctx_error(op->ctx, "cannot checkpoint '%s': %s\n  in sink '%s'", w->origin,
                          strerror(errno), op->name);
    id.dev = (uint64_t)st.st_dev;
    id.ino = (uint64_t)st.st_ino;
    if (tail_hash(w->origin, (uint64_t)w->offset, &id) != 0)
      return wm_ctx_error(op->ctx, "cannot checkpoint '%s': reading back its last bytes: %s\n  "
                                   "in sink '%s'", w->origin,
                          errno ? strerror(errno) : "the file is shorter than what was written",
                          op->name);
  }
  wm_buf_addc(io->out, 2);
  wm_buf_addc(io->out, (char)w->regular);
  wm_state_put_u(io, (uint64_t)w->offset);
  wm_state_put_u(io, id.dev);
  wm_state_put_u(io, id.ino);
  wm_state_put_u(io, id.hashed);
  if (id.hashed) wm_state_put_u(io, id.hash);
  return wm_state_put_done(op, io);
}

/* Refuses a restore into a file that is not the checkpoint's (the message says what to do). */
static int not_the_file(writer *w, const char *why) {
  return wm_ctx_error(w->op->ctx, "cannot restore '%s': it is not the file the checkpoint "
                                  "wrote: %s. The file was left as it is; put back the file the "
                                  "job wrote, or move this one away and start over with --fresh",
                      w->origin, why);
}

static int lines_restore(wm_op *op, wm_state_io *io) {
  writer *w = op->impl;
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint64_t ver, reg, len;
  file_id id = {0};
  if (wm_state_get_u(&r, &ver, "the sink's format version") != WM_OK) return WM_ERR;
  if (ver != 1 && ver != 2)
    return wm_ctx_error(op->ctx, "checkpoint state of write_lines of format version %llu, this "
                                 "wmrun reads versions 1 and 2", (unsigned long long)ver);
  if (wm_state_get_u(&r, &reg, "the sink's file type") != WM_OK ||
      wm_state_get_u(&r, &len, "the sink's file length") != WM_OK)
    return WM_ERR;
  if (ver == 2 && (wm_state_get_u(&r, &id.dev, "the sink's file device") != WM_OK ||
                   wm_state_get_u(&r, &id.ino, "the sink's file inode") != WM_OK ||
                   wm_state_get_u(&r, &id.hashed, "the sink's file bytes hashed") != WM_OK ||
                   (id.hashed && wm_state_get_u(&r, &id.hash, "the sink's file hash") != WM_OK)))
    return WM_ERR;
  if (wm_state_get_end(&r) != WM_OK) return WM_ERR;
  if (reg > 1 || id.hashed > TAIL_BYTES || id.hashed > len)
    return wm_state_bad(&r, "the sink's file type %llu or bytes hashed %llu",
                        (unsigned long long)reg, (unsigned long long)id.hashed);
  if (!reg) { /* a pipe or a terminal: nothing to cut (at-least-once) */
    w->offset = 0;
    w->trunc_pending = w->regular; /* a regular file now: written from its start */
    return WM_OK;
  }
  if (!w->regular) {
    if (ver == 1) { /* as version 1 did */
      w->trunc_pending = 0;
      w->offset = 0;
      return WM_OK;
    }
    return not_the_file(w, "the checkpoint's was a regular file, this is not (a FIFO, a device "
                           "or a terminal)");
  }
  struct stat st;
  if (fstat(w->fd, &st) != 0)
    return wm_ctx_error(op->ctx, "cannot restore '%s': %s", w->origin, strerror(errno));
  if (ver == 2 && ((uint64_t)st.st_dev != id.dev || (uint64_t)st.st_ino != id.ino)) {
    char why[200];
    snprintf(why, sizeof why, "another file is at its path (device %llu inode %llu, the "
                              "checkpoint's was device %llu inode %llu)",
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (unsigned long long)id.dev, (unsigned long long)id.ino);
    return not_the_file(w, why);
  }
  if ((uint64_t)st.st_size < len)
    return wm_ctx_error(op->ctx, "cannot restore '%s': it is shorter (%lld bytes) than the "
                                 "checkpoint's length (%llu): the file was changed since",
                        w->origin, (long long)st.st_size, (unsigned long long)len);
  if (id.hashed) {
    file_id now = {.dev = id.dev, .ino = id.ino};
    if (tail_hash(w->origin, len, &now) != 0 || now.hashed == 0)
      return wm_ctx_error(op->ctx, "cannot restore '%s': its last bytes cannot be read back to "
                                   "check that it is the file the checkpoint wrote%s%s",
                          w->origin, errno ? ": " : "", errno ? strerror(errno) : "");
    if (now.hashed != id.hashed || now.hash != id.hash) {
      char why[200];
      snprintf(why, sizeof why, "its last %llu bytes up to the checkpoint's length (%llu) differ "
                                "from those the job wrote", (unsigned long long)id.hashed,
               (unsigned long long)len);
      return not_the_file(w, why);
    }
  }
  if (len > INT64_MAX || ftruncate(w->fd, (off_t)len) != 0)
    return wm_ctx_error(op->ctx, "cannot truncate '%s' to the checkpoint's length: %s",
                        w->origin, strerror(errno));
  w->trunc_pending = 0;
  w->offset = (int64_t)len;
  return WM_OK;
}

static const wm_op_vt write_lines_vt = {.kind = "write_lines", .record = writer_record,
                                        .watermark = writer_watermark, .free = writer_free,
                                        .snapshot = lines_snapshot, .restore = lines_restore};
static const wm_op_vt write_socket_vt = {.kind = "write_socket", .record = writer_record,
                                         .watermark = writer_watermark, .free = writer_free};

static writer *writer_new(wm_io_host *host, const char *name, wm_write_config *cfg,
                          const wm_op_vt *vt, char *origin) {
  wm_ctx *ctx = host->ctx;
  writer *w = calloc(1, sizeof *w);
  if (!w || !origin) {
    free(w);
    free(origin);
    if (cfg->custom.free) cfg->custom.free(cfg->custom.ud);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  w->host = host;
  w->own.destroy = writer_destroy;
  w->cfg = *cfg;
  w->cfg.path = w->cfg.host = NULL;
  if (!w->cfg.buffer) w->cfg.buffer = (size_t)64 << 10;
  w->origin = origin;
  w->fd = -1;
  wm_buf_init(&w->pend);
  wm_buf_init(&w->fly);
  wm_buf_init(&w->line);
  wm_jsonw_init(&w->jw);
  w->op = wm_op_new(ctx, vt, w, name);
  if (!w->op) {
    writer_destroy(&w->own);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  /* (w lives as long as its operator, which outlives the run) */
  if (wm_io_add_flusher(host, writer_drain, w) != WM_OK) return NULL;
  return w;
}

wm_op *wm_write_lines_new(wm_io_host *host, const char *name, wm_write_config *cfg) {
  writer *w = writer_new(host, name, cfg, &write_lines_vt, strdup(cfg->path));
  if (!w) return NULL;
  uv_fs_t req;
  /* not truncated here: a restore keeps the part the checkpoint covers (see the top) */
  int fd = uv_fs_open(NULL, &req, cfg->path, UV_FS_O_WRONLY | UV_FS_O_CREAT, 0666, NULL);
  uv_fs_req_cleanup(&req);
  if (fd < 0) {
    wm_ctx_error(w->op->ctx, "cannot open '%s' for writing: %s", cfg->path, uv_strerror(fd));
    return NULL;
  }
  w->fd = fd;
  struct stat st;
  w->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  w->trunc_pending = 1;
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

wm_op *wm_write_socket_new(wm_io_host *host, const char *name, wm_write_config *cfg) {
  writer *w = writer_new(host, name, cfg, &write_socket_vt, wm_io_host_port(cfg->host, cfg->port));
  if (!w) return NULL;
  w->tcp = 1;
  struct sockaddr_storage addr;
  if (wm_io_resolve(host, cfg->host, cfg->port, &addr) != WM_OK) return NULL;
  int rc = uv_tcp_init(host->loop, &w->sock);
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
