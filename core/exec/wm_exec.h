/* The executor: one libuv loop that drives the sources, the periodic watermark timer,
 * idleness checks and signals for one wm_ctx.
 *
 * A source is an operator with no inputs plus a driver (io/wm_source.h). The executor
 * implements the sources' host (wm_io_host): it starts them, pushes their end-of-input
 * watermark (WM_TIME_MAX) down their chain when they are done, stops them on a drain or a
 * failure and pauses them under backpressure. The run ends when every source is done and
 * every handle is closed.
 */
#ifndef WM_EXEC_H
#define WM_EXEC_H

#include <stdio.h>
#include <uv.h>

#include "graph/wm_graph.h"
#include "io/wm_io.h" /* the sources and sinks it drives (wm_source.h among them) */

typedef struct wm_exec wm_exec;


typedef struct wm_exec_config {
  int64_t watermark_interval; /* ms; 0 = assigners emit after every record */
  int handle_signals;         /* SIGINT/SIGTERM/SIGHUP: the first drains, a second exits 130 */
  /* Called from the signal handler (so async-signal-safe, as lua_sethook is) to make user
   * code that never returns to the loop check wm_exec_interrupt_check. NULL: none. */
  void (*interrupt)(void *ud);
  void *interrupt_ud;
  void (*on_batch)(void *ud); /* after each batch of records (the bindings step the GC) */
  void *on_batch_ud;
  int no_drain;               /* the first signal stops at once, without flushing */
  /* Checkpointing on (exec/wm_ckptrun.h): the first SIGTERM calls savepoint(ud), which
   * takes a checkpoint, and then stops at once without draining (wm_exec_saved says so;
   * the run returns WM_OK); WM_ERR from it fails the job; WM_STOP: the checkpoint is under
   * way (several threads), the run goes on until wm_exec_stop_saved. NULL: SIGTERM drains. */
  int (*savepoint)(void *ud);
  void *savepoint_ud;
  size_t pressure_high;       /* backpressure marks in bytes (0 = 1 MiB and a quarter) */
  size_t pressure_low;
  /* ms the sources may stay paused with no sink reporting progress and no write in flight
   * before the job fails as stalled (0 = WM_EXEC_STALL_TIMEOUT, negative = never) */
  int64_t stall_timeout;
  /* Called once the sources are done, before the executor closes what is left on its loop:
   * the host closes its own handles there (metrics server, progress line), so that their
   * close callbacks run (NULL: none). */
  void (*on_end)(void *ud);
  void *on_end_ud;
} wm_exec_config;

#define WM_EXEC_STALL_TIMEOUT 60000

/* NULL on failure (message in ctx->error). */
wm_exec *wm_exec_new(wm_ctx *ctx, const wm_exec_config *cfg);
void wm_exec_free(wm_exec *exec);
uv_loop_t *wm_exec_loop(wm_exec *exec);
wm_ctx *wm_exec_ctx(wm_exec *exec);

/* The host that sources and asynchronous sinks of this executor run on (borrowed, valid
 * until wm_exec_free). */
wm_io_host *wm_exec_host(wm_exec *exec);

/* Registers a source driver for op (op has no inputs). 0 or -1. */
int wm_exec_add_source(wm_exec *exec, wm_op *op, const wm_source_vt *vt);

/* A source's position for a checkpoint (its vt->snapshot), appended to out; restore reads
 * it back before the run. WM_OK, or WM_ERR (ctx->error) when op is not a registered source,
 * cannot be checkpointed yet, or the data does not fit it. */
int wm_exec_snapshot_source(wm_exec *exec, wm_op *op, wm_buf *out);
int wm_exec_restore_source(wm_exec *exec, wm_op *op, const char *data, size_t n);

/* The registered sources (the multi-core receiver among them), in registration order. */
int wm_exec_nsources(const wm_exec *exec);
wm_op *wm_exec_source_op(const wm_exec *exec, int i);
/* The driver of a registered source (NULL: op is none). */
const wm_source_vt *wm_exec_source_vt(const wm_exec *exec, const wm_op *op);

/* Runs every source until all are done. WM_OK; WM_ERR with the message in ctx->error;
 * WM_STOP when stopped by a second signal. */
int wm_exec_run(wm_exec *exec);

/* A source has ended its input: emits WM_TIME_MAX down its chain. */
void wm_exec_source_done(wm_exec *exec, wm_op *src);
/* A source or callback failed (message in ctx->error): stops the job. */
void wm_exec_fail(wm_exec *exec);
/* Call after a batch of records (GC stepping, signal checks). */
void wm_exec_batch_done(wm_exec *exec);
/* Whether the job is stopping (failed or drained). */
int wm_exec_stopping(const wm_exec *exec);
/* Whether it failed (message in ctx->error), not drained or stopped by a signal. */
int wm_exec_failed(const wm_exec *exec);
/* For a host that drives the loop itself (the test harness replaying a recorded job):
 * watches SIGINT, SIGTERM and SIGHUP as wm_exec_run does with handle_signals. The host asks
 * wm_exec_signal_pending (the loop, when it runs, drains, or with no_drain stops: both make
 * wm_exec_stopping true without wm_exec_failed); a second signal exits 130 at once.
 * wm_exec_free stops watching. WM_OK or WM_ERR. */
int wm_exec_watch_signals(wm_exec *exec);
/* Whether a signal has arrived that the loop has not acted on yet: user code that runs on
 * and on while this stays true keeps the loop from it (the host's interrupt hook asks). */
int wm_exec_signal_pending(const wm_exec *exec);
/* The last signal received (SIGINT, SIGTERM or SIGHUP; 0 none). */
int wm_exec_signal(const wm_exec *exec);
/* Checkpoint scheduling (exec/wm_ckptrun.h), set after wm_exec_new and before the run:
 * every interval ms (0: never) the loop calls take(ud) between two batches of records
 * while sources are running (WM_ERR fails the job); savepoint becomes cfg.savepoint. */
void wm_exec_set_checkpoints(wm_exec *exec, int64_t interval, int (*take)(void *ud),
                             int (*savepoint)(void *ud), void *ud);
/* Stops the run at once after a checkpoint (an asynchronous savepoint has completed): the
 * run returns WM_OK and wm_exec_saved says so. */
void wm_exec_stop_saved(wm_exec *exec);
/* Whether the run was stopped by SIGTERM after a checkpoint (cfg.savepoint). */
int wm_exec_saved(const wm_exec *exec);
/* Requests a drain as the first SIGINT does. */
void wm_exec_drain(wm_exec *exec);
/* How many registered sources have not ended yet (the multi-core executor's receiver,
 * itself a source, ends last). */
int wm_exec_pending_sources(const wm_exec *exec);

/* ---- backpressure ------------------------------------------------------------------ */

/* Sinks that write asynchronously report the bytes they have queued (delta may be
 * negative). When the total passes the high mark (1 MiB by default) every source is paused
 * (its vt->pause(src, exec, 1)); once it falls under the low mark they resume. */
void wm_exec_pressure(wm_exec *exec, int64_t delta);
/* Holds the run (on = 1) or lets it go on (0): a hold pauses every source whatever the
 * backpressure (vt->pause) and fires no timer (periodic work such as watermarks,
 * processing-time timers, the checkpoint interval) until it ends; timers that came due
 * meanwhile fire then. The multi-core executor holds a thread that has taken its part of a
 * stopping checkpoint: nothing past the cut may be emitted (wm_mt.h). */
void wm_exec_hold(wm_exec *exec, int on);
int wm_exec_held(const wm_exec *exec);
/* Whether the sources are paused by backpressure. */
int wm_exec_paused(const wm_exec *exec);
/* The bytes the sinks have reported queued (the sum of every delta so far). */
int64_t wm_exec_pressure_bytes(const wm_exec *exec);
/* The time the sources have spent paused by backpressure so far, ms (the live view). */
uint64_t wm_exec_paused_ms(wm_exec *exec);
#endif
