/* Internal to core/io: line framing, the head every line source's state starts with, handle
 * lifetimes (luv's rule) and TCP addresses, shared by wm_src_*.c and wm_sink_write.c. */
#ifndef WM_LINES_H
#define WM_LINES_H

#include <uv.h>

#include "base/wm_buf.h"
#include "io/wm_io.h"
#include "io/wm_source.h"

/* ---- handle lifetimes -------------------------------------------------------------------
 * The memory that holds a uv_*_t is released only once the handle is closed: an owner
 * counts the handles it has asked to close and is destroyed when it has been released (its
 * operator freed) and that count is back to 0. Every handle's data points at a struct that
 * starts with its owner. A handle that the host's sweep closed (uv_is_closing, the sweep
 * runs the loop at once) counts as closed. */
typedef struct wm_io_owner {
  int closing;                              /* handles closed by us, callback pending */
  int released;                             /* the operator is gone */
  void (*destroy)(struct wm_io_owner *own); /* frees the whole struct */
} wm_io_owner;

/* Closes hd (if *open) with a callback that counts it back; *open = 0. */
void wm_io_close(wm_io_owner *own, uv_handle_t *hd, int *open);
/* The operator is freed: destroys the owner now or once its handles are closed. */
void wm_io_release(wm_io_owner *own);

/* ---- line framing --------------------------------------------------------------------- */

typedef struct wm_framer {
  wm_pos pos;         /* the last line emitted: its number and the offset of its start */
  uint64_t next_at;   /* offset of the first byte not yet part of an emitted line */
  size_t max_line;
  wm_buf carry;       /* the start of a line split across reads */
} wm_framer;

/* The head of every line source's state. */
typedef struct wm_srchead {
  wm_io_owner own;   /* first: handle data points at the source */
  wm_io_host *host;
  wm_op *op;
  char *buf;         /* the read buffer, reused for every read */
  size_t chunk;
  int stopped;       /* no more lines: stop() or a failure */
  int finished;      /* wm_io_source_done called (or the job failed) */
  int paused;        /* backpressure */
} wm_srchead;

/* The largest read size (chunk) accepted, as lua/wm checks it (wm.MAX_CHUNK). */
#define WM_IO_MAX_CHUNK ((size_t)64 << 20)

void wm_framer_init(wm_framer *f, const char *origin, size_t max_line);
/* Frames the lines in data; complete lines are passed straight from the read buffer. */
int wm_framer_feed(wm_srchead *h, wm_framer *f, const char *data, size_t n);
/* The real end of the input: a last line without "\n" still counts. */
int wm_framer_flush(wm_srchead *h, wm_framer *f);
/* Forgets a partial line (a drain: the rest of it was never read). */
void wm_framer_drop(wm_framer *f);

/* Sets up the head; chunk 0 = dflt. -1 with a message when chunk is out of range or on
 * allocation failure. */
int wm_src_head_init(wm_srchead *h, wm_io_host *host, size_t chunk, size_t dflt, const char *what,
                     void (*destroy)(wm_io_owner *));
/* Creates the operator of a source whose state begins with a head, registers its driver.
 * On failure the state is released. */
wm_op *wm_src_op(wm_io_host *host, const wm_op_vt *vt, const wm_source_vt *svt, wm_srchead *h,
                 const char *name);
void wm_src_fail(wm_srchead *h);
void wm_src_done(wm_srchead *h);
void wm_src_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *b);

/* A stream source (wm_src_stream.c) on fd, a pipe, FIFO or terminal (standard input, or a
 * FIFO opened non-blocking: own_fd = 1, closed with the source). origin is copied. */
wm_op *wm_src_stream_new(wm_io_host *host, const char *name, uv_file fd, int own_fd,
                         const char *origin, const wm_lines_config *cfg);

/* ---- TCP addresses -------------------------------------------------------------------- */

/* Resolves host:port (synchronously: before the job starts). WM_OK or WM_ERR. */
int wm_io_resolve(wm_io_host *host, const char *name, int port, struct sockaddr_storage *out);
/* "host:port", malloc'ed (NULL when out of memory). */
char *wm_io_host_port(const char *host, int port);

#endif
