/* The live view's JSON (wmrun --ui PORT; docs/metrics.md "Live view"): what GET /api/job
 * answers, the same counters as /metrics and --metrics: every thread's operators, read
 * from the metrics board's snapshots (exec/wm_mboard.h: each thread publishes its own
 * between batches; another thread's operators are never read). The page
 * (lua/wm/uipage.lua) polls it. */
#ifndef WM_UI_H
#define WM_UI_H

#include "base/wm_buf.h"
#include "exec/wm_ckptrun.h"
#include "exec/wm_exec.h"
#include "exec/wm_mboard.h"
#include "graph/wm_graph.h"

/* What the JSON shows besides the operators. */
typedef struct wm_ui_job {
  const char *name;     /* the job's name (NULL: "wmrun job") */
  int parallelism;      /* env.parallelism */
  int threads;          /* threads running the job (1: the deterministic schedule) */
  wm_exec *exec;        /* the serving thread's, for uptime_ms (NULL: not shown) */
  const wm_ckptrun *ckpt; /* checkpoints (NULL: not enabled) */
  uint64_t start_ms;    /* uv_now at the start: uptime_ms is measured from it */
} wm_ui_job;

/* Appends the JSON object of the job: name, parallelism, threads, now (the processing time
 * lag_ms is measured from, ms), uptime_ms, backpressure {paused, paused_ms, queued_bytes}
 * over the threads whose snapshots carry it (wm_mboard_set_exec: paused on any, the longest
 * paused time, the bytes summed), with several threads threads_backpressure [{thread,
 * paused, paused_ms, queued_bytes}],
 * checkpoints (null or {taken, last_id, last_ms, total_ms, max_ms, last_bytes, restored_id}),
 * operators: every thread's, thread by thread, from the board's latest snapshots
 * [{id, name, operator (the name without " k/n"), subtask (k, 1-based), thread (1-based),
 * kind, records_in, records_out, late_dropped, late_side, watermark, lag_ms,
 * channels [{watermark, idle}], keys?, keys_expired?, windows?, inputs? (two-input
 * operators: [{records, late_dropped, late_side, watermark, idle}] for inputs 1 and 2),
 * side_outputs [{tag, records}], source_lag? (a Kafka or NATS source: [{partition, records}],
 * records null while not known)}], edges [{from, to, chan, port, side}] (ids are indexes in
 * operators; port null for the main output, side: a user's side output; the edges inside
 * each thread: records that cross threads leave by a "to thread k: ..." operator and come
 * in by "from other threads (thread k)") and totals, per operator in the order of its first
 * instance [{operator, subtasks, records_in, records_out, late_dropped, late_side, keys?,
 * windows?, source_lag? (the known partitions' sum, or null), watermark (the slowest
 * instance's)}]. A watermark is null before the first and "end" once its input has ended;
 * lag_ms is null before the first and 0 at the end. */
void wm_ui_json(wm_buf *b, wm_mboard *board, int64_t now, const wm_ui_job *job);

#endif
