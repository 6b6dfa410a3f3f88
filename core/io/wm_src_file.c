/* The file source: read_lines(path) on a regular file (or standard input redirected from
 * one), read with uv_fs_read at increasing offsets, one chunk ahead of the one being framed
 * (file_take); `follow` waits for growth like tail -F, one chunk at a time.
 * Pipes, FIFOs and terminals are streams (wm_src_stream.c).
 *
 * follow: at the end of the file the source waits (inotify, and a poll timer as a fallback).
 * Each read after the first starts a few bytes early, at bytes already read, and compares
 * them: a file rewritten in place (`printf ... > f`) no longer has them and is read again
 * from its start, as is a file that became shorter than what was read (truncation). At the
 * end of the file, a path that now names another file (rotation: `mv f f.old` and a new f;
 * or delete and re-create) ends the old file, whose last line counts even without "\n",
 * and the new one is read from its start. Otherwise a partial last line waits for its
 * newline. A drain never emits a partial line: only the real end of a file does.
 *
 * parts: a regular file read by several instances (wm_lines_config.part/parts). Part k owns
 * the lines that START in its byte range [lo, hi) = [size*k/n, size*(k+1)/n) of the size at
 * the start, so every line has exactly one owner and no two parts need to talk. The first
 * line start at or after x is S(0) = 0, S(x) = 1 + the first "\n" at or after x - 1: part k
 * emits [S(lo), S(hi)) (the last part reads to the end). Line numbers stay exact: a part
 * reads the bytes before S(lo) as well, only counting newlines (memchr, no framing), and
 * numbers its first line one more. The count costs a read of the preceding bytes (page
 * cache speed), paid in parallel by the parts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/wm_codec.h"
#include "io/wm_lines.h"

#define TAIL 64 /* bytes of what was read kept to recognise a rewritten file */
#define SKIP_READ ((size_t)4 << 20) /* the largest read of a part's bytes before its range */

typedef struct filesrc {
  wm_srchead h; /* first */
  wm_framer fr;
  char *path;   /* as given; "<stdin>" for "-" */
  uv_file fd;
  int own_fd;
  int64_t offset;   /* where the next new byte is read */
  uv_fs_t req;
  int req_busy;     /* a read is in flight (never more than one) */
  char *buf2;       /* read-ahead: the second buffer (NULL with follow; see file_take) */
  int rb;           /* the buffer of the last read: 0 h.buf, 1 buf2, 2 skipbuf (buf_of) */
  int held;         /* a read-ahead came back while paused: its bytes wait in that buffer */
  size_t held_n;
  int ending;       /* a part's end was fed with a read-ahead in flight: its callback ends */
  size_t verify;    /* the read in flight starts this many bytes before offset */
  int follow, waiting; /* follow: at the end, waiting for the file to grow */
  int64_t poll_ms;
  uv_fs_event_t ev;
  int ev_open;
  uv_timer_t tm;
  int tm_open;
  uint64_t dev, ino;  /* follow: which file fd is */
  char tail[TAIL];    /* follow: the last bytes before offset */
  size_t tail_len;
  int part, parts;    /* parts > 1: this source reads part `part` (see above) */
  int64_t split;      /* parts: the file size the ranges are cut from (-1: not yet known) */
  uint64_t lo, hi;    /* parts: the byte range whose line starts are this part's */
  int skip;           /* parts: still counting the lines before S(lo) */
  char *skipbuf;      /* parts, while skip: larger reads for the bytes only counted */
  size_t skipcap;
  uint64_t skipped;   /* parts: newlines counted so far before S(lo) */
  int empty;          /* a part > 0 of a pipe or FIFO (part 0 reads it all): no lines */
} filesrc;

static void file_read(filesrc *f);

/* The buffer of read rb: 0 and 1 the read-ahead pair, 2 the skip buffer. */
static char *buf_of(filesrc *f, int rb) { return rb == 2 ? f->skipbuf : rb ? f->buf2 : f->h.buf; }

static void file_close_fd(filesrc *f) {
  if (f->own_fd && f->fd >= 0) {
    uv_fs_t req;
    uv_fs_close(NULL, &req, f->fd, NULL);
    uv_fs_req_cleanup(&req);
  }
  f->fd = -1;
}

static void file_close_watch(filesrc *f) {
  wm_io_close(&f->h.own, (uv_handle_t *)&f->ev, &f->ev_open);
  wm_io_close(&f->h.own, (uv_handle_t *)&f->tm, &f->tm_open);
}

static void file_destroy(wm_io_owner *own) {
  filesrc *f = (filesrc *)own;
  file_close_fd(f);
  free(f->h.buf);
  free(f->buf2);
  free(f->skipbuf);
  wm_buf_free(&f->fr.carry);
  free(f->path);
  free(f);
}

static void file_free(wm_op *op) {
  filesrc *f = op->impl;
  if (!f) return;
  file_close_watch(f);
  wm_io_release(&f->h.own);
}

/* The end: at the real end of the file (flush = 1) the last line counts; after a drain a
 * partial line was never read to its end and is dropped. Then the end-of-input watermark. */
static void file_end(filesrc *f, int flush) {
  if (f->h.finished) return;
  file_close_watch(f);
  if (!flush) wm_framer_drop(&f->fr);
  else if (wm_framer_flush(&f->h, &f->fr) != WM_OK) {
    wm_src_fail(&f->h);
    return;
  }
  file_close_fd(f);
  wm_src_done(&f->h);
}

static void file_take(filesrc *f, const char *data, size_t n);

static void file_wake(filesrc *f) {
  if (!f->waiting || f->req_busy || f->h.paused || f->h.stopped) return;
  f->waiting = 0;
  if (f->held) { /* the read-ahead that came back while paused */
    f->held = 0;
    if (f->held_n == 0) file_end(f, 1); /* the end of the file */
    else file_take(f, buf_of(f, f->rb), f->held_n);
    return;
  }
  file_read(f);
}

static void on_file_event(uv_fs_event_t *ev, const char *fn, int events, int status) {
  (void)fn;
  (void)events;
  (void)status;
  file_wake(ev->data);
}

static void on_file_timer(uv_timer_t *t) { file_wake(t->data); }

/* follow: watch the path with inotify (again after a rotation), and poll as a fallback
 * (network filesystems, a path deleted and created again). */
static int file_watch(filesrc *f, int rewatch) {
  uv_loop_t *loop = f->h.host->loop;
  int rc;
  if (rewatch && f->ev_open) uv_fs_event_stop(&f->ev);
  if (!f->ev_open && uv_fs_event_init(loop, &f->ev) == 0) {
    f->ev_open = 1;
    f->ev.data = f;
    rewatch = 1;
  }
  if (f->ev_open && rewatch && uv_fs_event_start(&f->ev, on_file_event, f->path, 0) != 0)
    wm_io_close(&f->h.own, (uv_handle_t *)&f->ev, &f->ev_open);
  if (!f->tm_open) {
    if ((rc = uv_timer_init(loop, &f->tm)) != 0) return rc;
    f->tm_open = 1;
    f->tm.data = f;
    uint64_t ms = f->poll_ms > 0 ? (uint64_t)f->poll_ms : 1000;
    if ((rc = uv_timer_start(&f->tm, on_file_timer, ms, ms)) != 0) return rc;
  }
  return 0;
}

static int file_identity(filesrc *f) {
  uv_fs_t st;
  int rc = uv_fs_fstat(NULL, &st, f->fd, NULL);
  if (rc == 0) {
    f->dev = st.statbuf.st_dev;
    f->ino = st.statbuf.st_ino;
  }
  uv_fs_req_cleanup(&st);
  return rc;
}

/* follow: the file is read again from its start (truncated or rewritten). What was read
 * of its old content is finished: a partial last line counts as a line. */
static int file_restart(filesrc *f) {
  int rc = wm_framer_flush(&f->h, &f->fr);
  f->offset = 0;
  f->tail_len = 0;
  f->fr.next_at = 0;
  return rc;
}

/* follow, at the end of the file: truncated, rotated or just not grown yet? 1 = read on
 * (from the new start), 0 = wait, WM_ERR. */
static int file_at_end(filesrc *f) {
  uv_fs_t st;
  int64_t size = -1;
  if (uv_fs_fstat(NULL, &st, f->fd, NULL) == 0) size = (int64_t)st.statbuf.st_size;
  uv_fs_req_cleanup(&st);
  if (size >= 0 && size < f->offset) return file_restart(f) == WM_OK ? 1 : WM_ERR;
  int rc = uv_fs_stat(NULL, &st, f->path, NULL);
  int other = rc == 0 && f->ino && (st.statbuf.st_dev != f->dev || st.statbuf.st_ino != f->ino);
  uv_fs_req_cleanup(&st);
  if (!other) return 0; /* not grown yet, or deleted and not created again yet */
  /* rotated: the old file is finished, the new one is read from its start */
  uv_fs_t req;
  uv_file fd = uv_fs_open(NULL, &req, f->path, UV_FS_O_RDONLY | UV_FS_O_NONBLOCK, 0, NULL);
  uv_fs_req_cleanup(&req);
  if (fd < 0) return 0; /* gone again: try at the next wake-up */
  if (wm_framer_flush(&f->h, &f->fr) != WM_OK) {
    uv_fs_close(NULL, &req, fd, NULL);
    uv_fs_req_cleanup(&req);
    return WM_ERR;
  }
  file_close_fd(f);
  f->fd = fd;
  f->offset = 0;
  f->tail_len = 0;
  f->fr.next_at = 0;
  f->fr.pos.line = 0; /* a new file: its lines count from 1 (a header is skipped again) */
  if (file_identity(f) != 0 || file_watch(f, 1) != 0) return 0;
  return 1;
}

/* Keeps the last TAIL bytes before offset (follow). */
static void file_keep_tail(filesrc *f, const char *data, size_t n) {
  if (n >= TAIL) {
    memcpy(f->tail, data + n - TAIL, TAIL);
    f->tail_len = TAIL;
    return;
  }
  size_t keep = f->tail_len + n > TAIL ? TAIL - n : f->tail_len;
  memmove(f->tail, f->tail + f->tail_len - keep, keep);
  memcpy(f->tail + keep, data, n);
  f->tail_len = keep + n;
}

/* parts: the byte range of this part, cut from the file size at the start (or the one a
 * checkpoint was taken with). */
static void part_range(filesrc *f) {
  uint64_t size = (uint64_t)f->split, k = (uint64_t)f->part, n = (uint64_t)f->parts;
  /* size * k / n without overflow for any size below 2^63 and n <= 2^31 */
  f->lo = size / n * k + size % n * k / n;
  f->hi = f->part + 1 == f->parts ? UINT64_MAX : size / n * (k + 1) + size % n * (k + 1) / n;
}

/* The newlines in [p, end): blocks of 240 bytes summed in a byte (at most 240 < 256), a loop
 * the compiler turns into vector compares (several times faster than a memchr per line,
 * which matters: a part counts every line before its range). */
static uint64_t count_nl(const char *p, const char *end) {
  uint64_t c = 0;
  while (end - p >= 240) {
    unsigned char s = 0;
    for (int i = 0; i < 240; i++) s = (unsigned char)(s + (p[i] == '\n'));
    c += s;
    p += 240;
  }
  for (; p < end; p++) c += *p == '\n';
  return c;
}

/* parts: the bytes [base, base + n) of the file. Counts the newlines before S(lo), frames
 * the lines from S(lo) and stops after the "\n" that ends the part at S(hi): *last = 1. */
static int part_feed(filesrc *f, const char *data, size_t n, uint64_t base, int *last) {
  const char *p = data, *end = data + n;
  if (f->hi == 0) { /* an empty range at the start of the file (a file of fewer bytes than parts) */
    *last = 1;
    return WM_OK;
  }
  if (f->skip) {
    uint64_t upto = f->lo - 1; /* newlines before this byte end lines of earlier parts */
    const char *stop = upto <= base ? data : upto - base < n ? data + (upto - base) : end;
    f->skipped += count_nl(p, stop);
    p = stop;
    const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    if (!nl) return WM_OK; /* S(lo) is further on */
    f->skip = 0;
    p = nl + 1;
    f->fr.pos.line = ++f->skipped; /* the first line of the part is the next one */
    f->fr.next_at = base + (uint64_t)(p - data);
    if (f->fr.next_at >= f->hi) { /* S(lo) = S(hi): no line starts in this part */
      *last = 1;
      return WM_OK;
    }
  }
  uint64_t at = base + (uint64_t)(p - data); /* the file offset of p */
  if (f->hi != UINT64_MAX && at + (uint64_t)(end - p) > f->hi - 1) {
    const char *from = at >= f->hi - 1 ? p : p + (f->hi - 1 - at);
    const char *nl = memchr(from, '\n', (size_t)(end - from));
    if (nl) {
      end = nl + 1;
      *last = 1;
    }
  }
  return wm_framer_feed(&f->h, &f->fr, p, (size_t)(end - p));
}

static void on_file_read(uv_fs_t *req) {
  filesrc *f = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  f->req_busy = 0;
  /* the request's memory is f's: it is destroyed only once no read is in flight */
  if (--f->h.own.closing == 0 && f->h.own.released) {
    f->h.own.destroy(&f->h.own);
    return;
  }
  if (f->h.finished) return;
  if (f->ending) { /* a part's end was fed while this read was ahead: it is not needed */
    file_end(f, 1);
    return;
  }
  if (f->h.stopped) { /* a drain: complete lines read before count, nothing else */
    file_end(f, 0);
    return;
  }
  if (n < 0) {
    wm_ctx_error(f->h.op->ctx, "cannot read '%s': %s", f->path, uv_strerror((int)n));
    wm_src_fail(&f->h);
    return;
  }
  const char *data = buf_of(f, f->rb);
  if (f->verify) {
    if ((size_t)n < f->verify || memcmp(data, f->tail + f->tail_len - f->verify, f->verify) != 0) {
      /* rewritten in place: read it again from its start */
      if (file_restart(f) != WM_OK) wm_src_fail(&f->h);
      else file_read(f);
      return;
    }
    data += f->verify;
    n -= (ssize_t)f->verify;
  }
  if (f->h.paused && f->buf2) { /* a read-ahead (reads start unpaused): its bytes wait */
    f->held = 1;
    f->held_n = (size_t)n;
    f->waiting = 1; /* resumed by file_pause(0) */
    return;
  }
  if (n == 0) {
    if (!f->follow) {
      file_end(f, 1);
      return;
    }
    int rc = file_at_end(f);
    if (rc == WM_ERR) {
      wm_src_fail(&f->h);
      return;
    }
    if (rc == 1) {
      file_read(f);
      return;
    }
    f->waiting = 1;
    if ((rc = file_watch(f, 0)) != 0) {
      wm_ctx_error(f->h.op->ctx, "cannot follow '%s': %s", f->path, uv_strerror(rc));
      wm_src_fail(&f->h);
    }
    return;
  }
  file_take(f, data, (size_t)n);
}

/* The next n bytes of the file, in data. Without follow, the read of the bytes after them
 * goes into the other buffer first (read-ahead: the thread pool's copy from the page cache
 * overlaps the framing of these, instead of the loop waiting for each read in turn), unless
 * a part's end is in these bytes. The framer copies a partial line (its carry), so data's
 * buffer is free again when the feed returns. */
static void file_take(filesrc *f, const char *data, size_t n) {
  int64_t base = f->offset;
  f->offset += (int64_t)n;
  if (f->follow) file_keep_tail(f, data, n);
  if (f->buf2 && !f->skip && (f->parts <= 1 || (uint64_t)f->offset < f->hi)) {
    f->rb ^= 1;
    file_read(f);
    if (f->h.finished) return;
  }
  int last = 0;
  int rc = f->parts > 1 ? part_feed(f, data, n, (uint64_t)base, &last)
                        : wm_framer_feed(&f->h, &f->fr, data, n);
  wm_io_batch_done(f->h.host);
  if (!f->skip && f->skipbuf) { /* counted: the rest goes through the pair (no read in it) */
    free(f->skipbuf);
    f->skipbuf = NULL;
  }
  if (rc != WM_OK) {
    wm_src_fail(&f->h);
    return;
  }
  if (f->req_busy) { /* the read-ahead's callback goes on from here (or ends the source) */
    if (last && !f->h.stopped) f->ending = 1;
    return;
  }
  if (last && !f->h.stopped) { /* the part ends here, after a "\n": nothing is carried */
    file_end(f, 1);
    return;
  }
  if (f->h.stopped) {
    file_end(f, 0);
    return;
  }
  if (f->h.paused) {
    f->waiting = 1; /* resumed by file_pause(0) */
    return;
  }
  file_read(f);
}

static void file_read(filesrc *f) {
  /* follow: start at bytes already read, to see whether they are still there */
  f->verify = f->follow ? (f->tail_len < f->h.chunk / 2 ? f->tail_len : f->h.chunk / 2) : 0;
  size_t size = f->h.chunk;
  if (f->skip && !f->skipbuf && f->h.chunk < SKIP_READ) {
    /* a part's bytes before its range are only counted (count_nl): read them in fewer,
     * larger reads, each a trip through the thread pool; without the memory, as chunk */
    f->skipcap = f->h.chunk * 16 < SKIP_READ ? f->h.chunk * 16 : SKIP_READ;
    f->skipbuf = malloc(f->skipcap);
  }
  if (f->skip && f->skipbuf) {
    f->rb = 2;
    size = f->skipcap;
  } else if (f->rb == 2) {
    f->rb = 0;
  }
  uv_buf_t b = uv_buf_init(buf_of(f, f->rb), (unsigned)size);
  f->req.data = f;
  int rc = uv_fs_read(f->h.host->loop, &f->req, f->fd, &b, 1, f->offset - (int64_t)f->verify,
                      on_file_read);
  if (rc != 0) {
    wm_ctx_error(f->h.op->ctx, "cannot read '%s': %s", f->path, uv_strerror(rc));
    wm_src_fail(&f->h);
    return;
  }
  f->req_busy = 1;
  f->h.own.closing++; /* the request is in f: see on_file_read */
}

static void on_empty_timer(uv_timer_t *t) { file_end(t->data, 1); }

static int file_start(wm_op *op, wm_io_host *host) {
  filesrc *f = op->impl;
  if (f->empty) { /* ends from the loop, as a read would (never inside start) */
    int rc = uv_timer_init(host->loop, &f->tm);
    if (rc == 0) {
      f->tm_open = 1;
      f->tm.data = f;
      rc = uv_timer_start(&f->tm, on_empty_timer, 0, 0);
    }
    return rc == 0 ? WM_OK : wm_ctx_error(op->ctx, "cannot start '%s': %s", f->path, uv_strerror(rc));
  }
  if (f->own_fd && file_identity(f) != 0) f->dev = f->ino = 0;
  if (f->parts > 1 && f->split < 0) {
    uv_fs_t st;
    int rc = uv_fs_fstat(NULL, &st, f->fd, NULL);
    f->split = rc == 0 ? (int64_t)st.statbuf.st_size : 0;
    uv_fs_req_cleanup(&st);
    if (rc != 0) return wm_ctx_error(op->ctx, "cannot read '%s': %s", f->path, uv_strerror(rc));
    part_range(f);
    f->skip = f->lo > 0;
  }
  file_read(f);
  return f->h.finished ? WM_ERR : WM_OK;
}

static void file_stop(wm_op *op, wm_io_host *host, int finish) {
  filesrc *f = op->impl;
  (void)host;
  if (f->h.stopped) return;
  f->h.stopped = 1;
  file_close_watch(f);
  if (!finish) {
    f->h.finished = 1;
    return;
  }
  if (!f->req_busy) file_end(f, 0); /* else the read callback ends it */
}

static void file_pause(wm_op *op, wm_io_host *host, int paused) {
  filesrc *f = op->impl;
  (void)host;
  f->h.paused = paused;
  if (!paused) file_wake(f);
}

/* The position of a checkpoint: version 1, the byte offset of the first line not emitted
 * yet, the number of lines emitted, the file's device and inode (varints). Version 2 (a
 * part of a file) adds the part, the parts and the size the ranges were cut from. While a
 * part still counts the lines before its range, it has emitted nothing: offset and lines
 * are 0 (S(lo) > 0 for every part but the first), and a restore counts again. */
static int file_snapshot(wm_op *op, wm_buf *out) {
  filesrc *f = op->impl;
  if (f->fd >= 0 && !f->dev && !f->ino) file_identity(f);
  int parts = f->parts > 1;
  wm_buf_addc(out, parts ? 2 : 1);
  wm_codec_put_uvar(out, f->skip ? 0 : f->fr.next_at);
  wm_codec_put_uvar(out, f->skip ? 0 : f->fr.pos.line);
  wm_codec_put_uvar(out, f->dev);
  wm_codec_put_uvar(out, f->ino);
  if (parts) {
    wm_codec_put_uvar(out, (uint64_t)f->part);
    wm_codec_put_uvar(out, (uint64_t)f->parts);
    wm_codec_put_uvar(out, (uint64_t)(f->split > 0 ? f->split : 0));
  }
  return out->oom ? wm_ctx_error(op->ctx, "out of memory") : WM_OK;
}

/* Before start: reading goes on at the first line not emitted. The file must be the one of
 * the checkpoint (device and inode) and at least as long as that position. */
static int file_restore(wm_op *op, const char *data, size_t n) {
  filesrc *f = op->impl;
  if (f->empty) return WM_OK;
  const uint8_t *p = (const uint8_t *)data, *end = p + n;
  uint64_t at, line, dev, ino, part = 0, parts = 1, split = 0;
  int version = n >= 1 ? *p++ : 0;
  if ((version != 1 && version != 2) || wm_codec_get_uvar(&p, end, &at) != 0 ||
      wm_codec_get_uvar(&p, end, &line) != 0 || wm_codec_get_uvar(&p, end, &dev) != 0 ||
      wm_codec_get_uvar(&p, end, &ino) != 0 ||
      (version == 2 && (wm_codec_get_uvar(&p, end, &part) != 0 ||
                        wm_codec_get_uvar(&p, end, &parts) != 0 ||
                        wm_codec_get_uvar(&p, end, &split) != 0 || parts < 2 || part >= parts ||
                        split > INT64_MAX)) ||
      p != end || at > INT64_MAX)
    return wm_ctx_error(op->ctx, "cannot restore '%s': the checkpoint's position is damaged",
                        f->path);
  int mine = f->parts > 1 ? f->parts : 1, my = f->parts > 1 ? f->part : 0;
  if (parts != (uint64_t)mine || part != (uint64_t)my)
    return wm_ctx_error(op->ctx, "cannot restore '%s': the checkpoint is of part %llu of %llu, "
                        "this source reads part %d of %d (read_lines{parallel = true} at "
                        "another parallelism)", f->path, (unsigned long long)part + 1,
                        (unsigned long long)parts, my + 1, mine);
  if (!f->own_fd)
    return wm_ctx_error(op->ctx, "cannot restore '%s': standard input cannot be read again",
                        f->path);
  uv_fs_t st;
  int rc = uv_fs_fstat(NULL, &st, f->fd, NULL);
  uint64_t cdev = rc == 0 ? st.statbuf.st_dev : 0, cino = rc == 0 ? st.statbuf.st_ino : 0;
  int64_t size = rc == 0 ? (int64_t)st.statbuf.st_size : -1;
  uv_fs_req_cleanup(&st);
  if (rc != 0 || cdev != dev || cino != ino)
    return wm_ctx_error(op->ctx, "cannot restore '%s': it is not the file of the checkpoint "
                        "(another device or inode)", f->path);
  if (size < (int64_t)at)
    return wm_ctx_error(op->ctx, "cannot restore '%s': it is shorter (%lld bytes) than the "
                        "checkpoint's position (%llu)", f->path, (long long)size,
                        (unsigned long long)at);
  f->offset = (int64_t)at;
  f->fr.next_at = at;
  f->fr.pos.line = line;
  f->tail_len = 0;
  f->dev = dev;
  f->ino = ino;
  if (f->parts > 1) { /* the ranges of the checkpoint's size; counting again if it was */
    f->split = (int64_t)split;
    part_range(f);
    f->skip = at == 0 && f->lo > 0;
    f->skipped = 0;
  }
  wm_framer_drop(&f->fr);
  return WM_OK;
}

static void file_describe(wm_op *op, const char *data, size_t n, wm_buf *out) {
  filesrc *f = op->impl;
  const uint8_t *p = (const uint8_t *)data, *end = p + n;
  uint64_t at, line;
  if (n < 1 || *p++ != 1 || wm_codec_get_uvar(&p, end, &at) != 0 ||
      wm_codec_get_uvar(&p, end, &line) != 0)
    return;
  wm_buf_adds(out, f->path);
  wm_buf_adds(out, " after line ");
  wm_buf_add_int(out, (int64_t)line);
  wm_buf_adds(out, " (byte ");
  wm_buf_add_int(out, (int64_t)at);
  wm_buf_addc(out, ')');
}

static const wm_op_vt file_vt = {.kind = "read_lines", .record = wm_source_record, .free = file_free};
static const wm_source_vt file_svt = {.start = file_start, .stop = file_stop, .pause = file_pause,
                                      .snapshot = file_snapshot, .restore = file_restore,
                                      .describe = file_describe};

/* A part > 0 of a file that is not a regular one (a FIFO, a terminal): part 0 reads it
 * as a stream, this one has no lines. */
static wm_op *empty_part(wm_io_host *host, const char *name, const wm_lines_config *cfg) {
  filesrc *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(cfg->path))) {
    free(f);
    wm_ctx_error(host->ctx, "out of memory");
    return NULL;
  }
  f->fd = -1;
  f->empty = 1;
  wm_framer_init(&f->fr, f->path, cfg->max_line);
  if (wm_src_head_init(&f->h, host, cfg->chunk, (size_t)256 << 10, name ? name : "read_lines",
                       file_destroy) != 0) {
    file_destroy(&f->h.own);
    return NULL;
  }
  return wm_src_op(host, &file_vt, &file_svt, &f->h, name);
}

wm_op *wm_lines_new(wm_io_host *host, const char *name, const wm_lines_config *cfg) {
  wm_ctx *ctx = host->ctx;
  int is_stdin = strcmp(cfg->path, "-") == 0;
  uv_file fd = 0;
  if (!is_stdin) {
    /* stat first: opening a FIFO blocks until a writer comes, so a FIFO is opened
     * non-blocking and read as a stream (the loop, and signals, go on meanwhile) */
    uv_fs_t req;
    int rc = uv_fs_stat(NULL, &req, cfg->path, NULL);
    int mode = rc == 0 ? (int)(req.statbuf.st_mode & S_IFMT) : 0;
    uv_fs_req_cleanup(&req);
    if (rc == 0 && mode == S_IFDIR) {
      wm_ctx_error(ctx, "cannot open '%s': Is a directory", cfg->path);
      return NULL;
    }
    if (rc == 0 && mode != S_IFREG && !cfg->follow && cfg->parts > 1 && cfg->part > 0)
      return empty_part(host, name, cfg);
    fd = rc < 0 ? rc
                : uv_fs_open(NULL, &req, cfg->path,
                             UV_FS_O_RDONLY | (mode == S_IFIFO ? UV_FS_O_NONBLOCK : 0), 0, NULL);
    if (rc == 0) uv_fs_req_cleanup(&req);
    if (fd < 0) {
      wm_ctx_error(ctx, "cannot open '%s': %s", cfg->path,
                   fd == UV_ENOENT ? "No such file or directory" : uv_strerror(fd));
      return NULL;
    }
    /* FIFOs and terminals (a path such as /dev/tty) are read as streams: a blocking read
     * in the thread pool would keep a drain waiting for input */
    uv_handle_type ht = uv_guess_handle(fd);
    if (mode == S_IFIFO || ht == UV_TTY || ht == UV_NAMED_PIPE)
      return wm_src_stream_new(host, name, fd, 1, cfg->path, cfg);
  } else {
    uv_handle_type ht = uv_guess_handle(fd);
    if (ht == UV_NAMED_PIPE || ht == UV_TTY)
      return wm_src_stream_new(host, name, fd, 0, "<stdin>", cfg);
  }
  filesrc *f = calloc(1, sizeof *f);
  if (!f || !(f->path = strdup(is_stdin ? "<stdin>" : cfg->path))) {
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
  if (!is_stdin && !f->follow && cfg->parts > 1) {
    f->part = cfg->part;
    f->parts = cfg->parts;
  }
  f->split = -1;
  wm_framer_init(&f->fr, f->path, cfg->max_line);
  if (wm_src_head_init(&f->h, host, cfg->chunk, (size_t)256 << 10, name ? name : "read_lines", file_destroy) != 0) {
    file_destroy(&f->h.own);
    return NULL;
  }
  if (!f->follow && !(f->buf2 = malloc(f->h.chunk))) { /* read-ahead: file_take */
    wm_ctx_error(ctx, "out of memory");
    file_destroy(&f->h.own);
    return NULL;
  }
  return wm_src_op(host, &file_vt, &file_svt, &f->h, name);
}

int wm_lines_progress(const wm_op *op, int64_t *done, int64_t *total) {
  if (op->vt != &file_vt) return 0;
  const filesrc *f = op->impl;
  if (f->follow) return 0;
  if (f->parts > 1) { /* a part: the bytes of its range framed so far */
    if (f->split < 0) return 0;
    uint64_t hi = f->hi < (uint64_t)f->split ? f->hi : (uint64_t)f->split;
    *total = (int64_t)(hi - f->lo);
    uint64_t at = f->fd < 0 ? hi : f->skip ? f->lo : f->fr.next_at;
    *done = at <= f->lo ? 0 : at >= hi ? *total : (int64_t)(at - f->lo);
    return 1;
  }
  if (f->fd < 0) { /* read to its end and closed */
    *done = *total = f->offset;
    return 1;
  }
  uv_fs_t req;
  int rc = uv_fs_fstat(NULL, &req, f->fd, NULL);
  int regular = rc == 0 && (req.statbuf.st_mode & S_IFMT) == S_IFREG;
  if (regular) *total = (int64_t)req.statbuf.st_size;
  uv_fs_req_cleanup(&req);
  if (!regular) return 0;
  *done = f->offset < *total ? f->offset : *total;
  return 1;
}
