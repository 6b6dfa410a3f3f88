/* The live view's JSON (wmrun --ui PORT; docs/metrics.md "Live view"): what GET /api/job
 * answers, the same counters as /metrics and --metrics, read on the loop's thread between
 * batches. The page (lua/wm/uipage.lua) polls it. */
#ifndef WM_UI_H
#define WM_UI_H

#include "base/wm_buf.h"
#include "exec/wm_ckptrun.h"
#include "exec/wm_exec.h"
#include "graph/wm_graph.h"

/* What the JSON shows besides ctx's operators. */
typedef struct wm_ui_job {
  const char *name;     /* the job's name (NULL: "wmrun job") */
  int parallelism;      /* env.parallelism */
  int threads;          /* threads running the job (1: the deterministic schedule) */
  int thread;           /* the thread whose operators are shown (ctx's) */
  wm_exec *exec;        /* backpressure (NULL: not shown) */
  const wm_ckptrun *ckpt; /* checkpoints (NULL: not enabled) */
  uint64_t start_ms;    /* uv_now at the start: uptime_ms is measured from it */
} wm_ui_job;

/* Appends the JSON object of the job: name, parallelism, threads, thread, now (ctx's
 * processing time, ms), uptime_ms, backpressure {paused, paused_ms, queued_bytes},
 * checkpoints (null or {taken, last_id, last_ms, total_ms, max_ms, last_bytes, restored_id}),
 * operators [{id, name, kind, records_in, records_out, late_dropped, late_side, watermark,
 * lag_ms, channels [{watermark, idle}], keys?, keys_expired?, windows?, inputs? (two-input
 * operators: [{records, late_dropped, late_side, watermark, idle}] for inputs 1 and 2),
 * side_outputs [{tag, records}]}] and edges [{from, to, chan, port, side}] (ids are indexes
 * in operators; port null for the main output, side: a user's side output; with several
 * threads only the edges between ctx's operators). A watermark is null before the first and
 * "end" once its input has ended; lag_ms is null before the first and 0 at the end. */
void wm_ui_json(wm_buf *b, const wm_ctx *ctx, const wm_ui_job *job);

#endif
