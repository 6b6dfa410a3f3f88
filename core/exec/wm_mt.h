/* The multi-core executor: operator instances spread over worker threads.
 *
 * Each thread has its own wm_ctx, wm_exec (libuv loop) and operators; a job (wm_mt_job)
 * links them. Between every ordered pair of threads there is a bounded single-producer/
 * single-consumer queue (wm_spsc) of batches. A batch is a run of messages, each
 * addressed to one input channel of one operator instance (its global id, "gid"):
 *   RECORD  ts and the record in the compact encoding of wm_codec.h
 *   WATERMARK, IDLE, ACTIVE
 * so watermarks and idle status travel in-band, in order with the records.
 *
 * On the sending side an edge to an instance on another thread ends in a *sender*
 * operator that appends messages to the batch for that thread. Batches are handed over
 * when they are full and before the loop waits (a uv_prepare_t); the receiving thread is
 * woken with uv_async_send. Nothing ever blocks inside an operator: a batch that does not
 * fit in a full queue stays with the sender, and the bytes in flight count as backpressure
 * (wm_exec_pressure), which pauses the thread's sources while it keeps draining its
 * incoming queues; the consumer wakes the producer once it has made room. Two threads
 * sending to each other therefore cannot deadlock.
 *
 * On the receiving side a *receiver* pseudo-source (registered with the executor) drains
 * the incoming queues and feeds each message into its channel. It ends (and so lets the
 * loop end) once every remote channel has delivered the end-of-input watermark, every
 * outgoing batch has been handed over, and every local source has ended.
 *
 * A failure on any thread is recorded in the job and wakes every thread, which stops. */
#ifndef WM_MT_H
#define WM_MT_H

#include <stdint.h>

#include "base/wm_codec.h"
#include "exec/wm_exec.h"
#include "exec/wm_mboard.h"
#include "exec/wm_mt_job.h"
#include "graph/wm_graph.h"

typedef struct wm_mt_local wm_mt_local;

/* ---- one thread's part ------------------------------------------------------------ */

/* The part of thread `thread` (0-based) on its executor: opens the wake-up handle on the
 * executor's loop and registers the receiver as a source. Call it before building, from
 * the thread that runs exec. ch: the host's codec hooks (copied). NULL on failure
 * (message in the executor's ctx->error). */
wm_mt_local *wm_mt_local_new(wm_mt_job *j, int thread, wm_exec *exec, const wm_codec_host *ch);
/* After wm_exec_run has returned (or instead of it, after a failed build). */
void wm_mt_local_free(wm_mt_local *l);

/* Building: op is the local instance with global id gid (a possible target of remote
 * channels). 0 or -1 (out of memory). */
int wm_mt_set_target(wm_mt_local *l, uint32_t gid, wm_op *op);
/* One more input channel of a local operator is fed from another thread. */
void wm_mt_add_remote_input(wm_mt_local *l);
/* An operator that sends what it receives to channel chan of instance gid on thread
 * `thread`; connect the upstream to it. name: the operator's name (e.g. "to thread 2:
 * window (job.lua:9) 2/2"); from: the upstream operator's name, for errors. NULL on
 * failure (message in ctx->error). */
wm_op *wm_mt_sender_new(wm_mt_local *l, const char *name, const char *from, int thread,
                        uint32_t gid, int chan);

/* ---- checkpoints (exec/wm_ckptrun.h) ------------------------------------------------
 *
 * With several threads a checkpoint follows Chandy and Lamport's snapshot algorithm, with
 * numbered barriers in-band through the queues: when a thread first learns of checkpoint
 * N (the coordinator's request, or barrier N arriving from another thread) it snapshots
 * its whole context between two events and then appends barrier N to every outgoing queue,
 * before any later message. From then on, until barrier N has come from a thread, the
 * messages that thread sends are processed as usual and also recorded (re-encoded): they
 * were in flight at the cut, and the checkpoint holds them as that channel's state. Once
 * every other thread's barrier has arrived, the thread's part is complete. No input is
 * ever blocked, so the threads' graph may have cycles (two threads exchanging records both
 * ways) without deadlock. A restore replays each recorded channel into its operators
 * before the run.
 * The checkpoint that stops the job (SIGTERM, wm_mt_request_stop_checkpoint) differs in one
 * thing: a thread that has cut for it holds (wm_exec_hold: its sources pause, no timer
 * fires) and processes nothing more: what the other threads send is kept (and, before their
 * barriers, recorded as usual), so nothing past the cut is emitted, which the resumed run
 * would emit again. Should the stop be given up (wm_mt_cancel_stop_checkpoint), the thread
 * processes what it kept and goes on. */
typedef struct wm_mt_ckpt_hooks {
  /* This thread's snapshot for checkpoint id (between two events): the coordinator writes
   * the thread's parts. WM_OK or WM_ERR (ctx->error; the job fails). */
  int (*snapshot)(void *ud, uint64_t id);
  /* The state of the channel from thread `from` (its messages after this thread's cut). */
  int (*put_channel)(void *ud, uint64_t id, int from, const void *data, size_t len);
  /* Every other thread's barrier id has arrived: this thread's part is complete. */
  int (*done)(void *ud, uint64_t id);
  void *ud;
} wm_mt_ckpt_hooks;
void wm_mt_set_checkpoints(wm_mt_local *l, const wm_mt_ckpt_hooks *h);
/* Replays a channel state (put_channel's bytes) into this thread's operators: after the
 * restore, before the run. WM_OK or WM_ERR (ctx->error). */
int wm_mt_replay_channel(wm_mt_local *l, int from, const void *data, size_t len);
/* The messages of a channel state (put_channel's bytes), one by one, without a job: for a
 * restore at another thread count or parallelism (exec/wm_rescale.h). fn gets each message
 * (rec: the record of a WM_MT_RECORD, NULL otherwise; borrowed for the call). WM_OK, or
 * WM_ERR (ctx->error: damaged bytes, or fn's failure). */
enum { WM_MT_RECORD = 1, WM_MT_WATERMARK, WM_MT_IDLE, WM_MT_ACTIVE };
typedef int (*wm_mt_msg_fn)(void *ud, int kind, uint32_t gid, int chan, int64_t t,
                            const wm_value *rec);
int wm_mt_decode_channel(wm_ctx *ctx, const wm_codec_host *ch, const void *data, size_t len,
                         wm_mt_msg_fn fn, void *ud);
/* The receiver of thread l (a registered source: its position is how many remote channels
 * have ended). */
wm_op *wm_mt_receiver(wm_mt_local *l);

#endif
