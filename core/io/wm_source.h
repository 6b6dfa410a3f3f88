/* The source interface: what every source (file, standard input, socket client, listener,
 * generator, Lua-backed source, the multi-core receiver) implements, and the host it runs on.
 *
 * A source is an operator with no inputs (its vtable's `record` is wm_source_record) plus
 * a driver (wm_source_vt) registered with its host. The host (the executor implements it,
 * exec/wm_exec.h) owns the libuv loop: it starts every source, stops them on a drain or a
 * failure, pauses them under backpressure, and emits the end-of-input watermark when a
 * source says it is done. Sources never call the executor directly, only their host.
 *
 * Positions: a source emits each record with wm_source_emit, which publishes the record's
 * position (origin, line, byte offset) in ctx->pos for the duration of the emit. Parsers
 * (header skipping, "data.csv:17: ..." errors, the side output's `line`), error context
 * ("while reading data.csv:17") and the multi-core exchange (which carries the position to
 * the other thread) read it there, and nothing else guesses.
 *
 * Handles follow luv's rule: the memory of a uv_*_t is released only in its close callback
 * (or once the host has closed it and run the loop), so no correctness depends on whether
 * the context or the executor is freed first.
 */
#ifndef WM_SOURCE_H
#define WM_SOURCE_H

#include <uv.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

typedef struct wm_io_host wm_io_host;

typedef struct wm_source_vt {
  /* Starts producing: registers handles on host->loop. WM_OK or WM_ERR. */
  int (*start)(wm_op *src, wm_io_host *host);
  /* Stops producing (a drain or a failure): the source closes its handles and, when
   * `finish` is set, then calls wm_io_source_done. May be called more than once. */
  void (*stop)(wm_op *src, wm_io_host *host, int finish);
  /* Backpressure: stop reading (paused = 1) or read again (0). NULL = cannot pause. */
  void (*pause)(wm_op *src, wm_io_host *host, int paused);
  /* Checkpoints (NULL = not supported yet; the checkpoint work fills in the others).
   * snapshot appends the source's position to out (a file, wm_src_file.c: the byte offset
   * of the first line not yet emitted, the number of lines emitted, device and inode;
   * generate, to come: its counter); restore reads it back before start, checking it
   * (untrusted bytes). WM_OK or WM_ERR. Reached through wm_exec_snapshot_source. */
  int (*snapshot)(wm_op *src, wm_buf *out);
  int (*restore)(wm_op *src, const char *data, size_t n);
  /* The position snapshot wrote, as messages show it ("data.csv line 17, byte 300"),
   * appended to out; bytes that do not parse append nothing. NULL: not described. */
  void (*describe)(wm_op *src, const char *data, size_t n, wm_buf *out);
} wm_source_vt;

/* The loop sources and asynchronous sinks run on; the executor fills it in. */
struct wm_io_host {
  uv_loop_t *loop;
  wm_ctx *ctx;
  /* registers a source driver for op (an operator with no inputs); 0 or -1 */
  int (*add_source)(wm_io_host *h, wm_op *op, const wm_source_vt *vt);
  /* the source's input has ended: the end-of-input watermark goes down its chain */
  void (*source_done)(wm_io_host *h, wm_op *src);
  /* a source or sink failed (message in ctx->error): stops the job */
  void (*fail)(wm_io_host *h);
  /* after each batch of records (GC stepping, signal checks) */
  void (*batch_done)(wm_io_host *h);
  /* bytes queued by an asynchronous sink (delta may be negative): backpressure */
  void (*pressure)(wm_io_host *h, int64_t delta);
  /* an asynchronous sink started (+1) or finished (-1) a write: a job paused by backpressure
   * with no write in flight makes no progress (the executor's stall check) */
  void (*writing)(wm_io_host *h, int delta);
  /* a sink that gathers bytes before writing them registers fn(ud, paused): when backpressure
   * pauses the sources (paused = 1) it writes what it holds and what still arrives (from other
   * threads) however little, until they resume (paused = 0); else sinks each holding less
   * than their buffer could pause the job for ever. ud must stay valid while the loop runs. */
  int (*add_flusher)(wm_io_host *h, void (*fn)(void *ud, int paused), void *ud);
};

static inline int wm_io_add_source(wm_io_host *h, wm_op *op, const wm_source_vt *vt) {
  return h->add_source(h, op, vt);
}
static inline void wm_io_source_done(wm_io_host *h, wm_op *src) { h->source_done(h, src); }
static inline void wm_io_fail(wm_io_host *h) { h->fail(h); }
static inline void wm_io_batch_done(wm_io_host *h) { h->batch_done(h); }
static inline void wm_io_pressure(wm_io_host *h, int64_t delta) { h->pressure(h, delta); }
static inline void wm_io_writing(wm_io_host *h, int delta) { h->writing(h, delta); }
static inline int wm_io_add_flusher(wm_io_host *h, void (*fn)(void *ud, int paused), void *ud) {
  return h->add_flusher(h, fn, ud);
}

/* The `record` entry of a source operator's vtable: a source has no inputs, so a record
 * reaching it is a wiring error. */
int wm_source_record(wm_op *op, int chan, const wm_value *rec, int64_t ts);

/* Emits rec (borrowed) from source op with its position pos (borrowed; published in
 * ctx->pos during the call). On failure adds the position part ("while reading <position>")
 * to ctx->error (wm_pos_add_context). Returns wm_op_emit's result. */
static inline int wm_source_emit_port(wm_op *src, int port, const wm_pos *pos,
                                      const wm_value *rec, int64_t ts);
static inline int wm_source_emit(wm_op *src, const wm_pos *pos, const wm_value *rec,
                                 int64_t ts) {
  return wm_source_emit_port(src, 0, pos, rec, ts);
}

/* Adds the position part ("\n  while reading <position>") to ctx->error, unless it has one
 * (a parse error that starts with the position marks it with wm_error_pos_shown). */
void wm_pos_add_context(wm_ctx *ctx, const wm_pos *pos);

/* The same on output port `port` (a partitioned source: one port per partition). Inline:
 * a line read goes from the framer to the first operator with no call between. */
static inline int wm_source_emit_port(wm_op *src, int port, const wm_pos *pos,
                                      const wm_value *rec, int64_t ts) {
  wm_ctx *ctx = src->ctx;
  const wm_pos *outer = ctx->pos;
  ctx->pos = pos;
  int rc = wm_op_emit(src, port, rec, ts);
  ctx->pos = outer;
  if (rc == WM_ERR) wm_pos_add_context(ctx, pos);
  return rc;
}

/* Appends a position as messages show it: "data.csv:17", or "element 3 of from_elements
 * (job.lua:3)" for a position with a unit. */
void wm_pos_format(wm_buf *b, const wm_pos *pos);

#endif
