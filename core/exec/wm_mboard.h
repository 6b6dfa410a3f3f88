/* The metrics board: what the Prometheus endpoint (exec/wm_metrics_http.h) shows of every
 * thread of a job, and the text format it is shown in (docs/metrics.md).
 *
 * A thread's operators are read only by that thread. So each thread *publishes* a snapshot
 * of its operators' counters (wm_mboard_publish: copied from its context into a buffer of
 * its own, without a lock, then swapped into the board under the board's mutex), from its
 * loop every WM_MBOARD_EVERY_MS and once more when its run ends; the thread that serves
 * /metrics publishes its own at the request and formats every thread's latest snapshot
 * under the mutex (wm_mboard_format). Another thread's figures are thus at most
 * WM_MBOARD_EVERY_MS old, and each thread's are consistent (taken between two batches).
 *
 * Samples are labelled operator (the operator's name without the " k/n" of an instance),
 * subtask (the instance index k, 1-based like the source context's ctx.subtask; 1 for an
 * operator of parallelism 1) and,
 * with several threads, thread (1-based, as --metrics says "thread k:"). With checkpoints
 * (wm_mboard_set_checkpoints) the job's checkpoint series come last.
 *
 * The live view (exec/wm_ui.h) reads the same snapshots (wm_mboard_read): they hold what it
 * shows of an operator besides the counters (its kind, input channels, edges, and a
 * partitioned source's lag per partition). */
#ifndef WM_MBOARD_H
#define WM_MBOARD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

typedef struct wm_mboard wm_mboard;

/* ---- a thread's snapshot (read-only outside this module) ---- */
enum { WM_MS_IN, WM_MS_OUT, WM_MS_LATE_DROPPED, WM_MS_LATE_SIDE, WM_MS_NCOUNT };

typedef struct wm_msnap_chan { /* an input channel: its watermark and whether idle */
  int64_t wm;
  bool idle;
} wm_msnap_chan;

typedef struct wm_msnap_edge { /* an edge out of an operator */
  uintptr_t to; /* the id of the operator it leads to (this thread's) */
  int chan;     /* the input channel there */
  size_t tag;   /* the port's tag (offset in names); SIZE_MAX: the main output */
  bool side;    /* a user's side output */
} wm_msnap_edge;

typedef struct wm_msnap_side { /* a side output: its tag (offset in names), its records */
  size_t tag;
  uint64_t records;
} wm_msnap_side;

typedef struct wm_msnap_lag { /* a partitioned source's partition (io/wm_conn.h) */
  size_t part;     /* its name (offset in names) */
  int64_t records; /* its lag, wm_partsrc_lag; -1: not known (yet) */
} wm_msnap_lag;

typedef struct wm_msnap_op {
  uintptr_t id;       /* the operator's address: an identity for edges, never dereferenced */
  const char *kind;   /* its vt->kind (a static string) */
  size_t name;        /* offset in names */
  size_t base_len;    /* the name's length without the instance's " k/n" */
  int subtask;        /* k (1 without " k/n") */
  bool window, keyed, two, source; /* gauges that apply; two inputs; no input */
  uint64_t c[WM_MS_NCOUNT];
  int64_t wm;
  uint64_t windows, keys, expired;
  wm_input_metrics in[2]; /* two inputs: per input */
  int64_t in_wm[2];
  bool in_idle[2];
  size_t side0, nside; /* sides[side0 .. side0 + nside) */
  size_t chan0, nchan; /* chans[...] */
  size_t edge0, nedge; /* edges[...] */
  size_t lag0, nlag;   /* lags[...] */
} wm_msnap_op;

typedef struct wm_msnap {
  wm_buf names; /* NUL-terminated names, tags and partitions */
  wm_msnap_op *ops;
  size_t nops, capops;
  wm_msnap_side *sides;
  size_t nsides, capsides;
  wm_msnap_chan *chans;
  size_t nchans, capchans;
  wm_msnap_edge *edges;
  size_t nedges, capedges;
  wm_msnap_lag *lags;
  size_t nlags, caplags;
  bool bp;        /* the thread's backpressure is known (wm_mboard_set_exec): */
  bool bp_paused; /* its sources are paused now, */
  uint64_t bp_paused_ms; /* have been paused in all (ms), */
  int64_t bp_queued;     /* bytes its sinks and channels have queued */
  int valid; /* published at least once */
} wm_msnap;

#define WM_MBOARD_EVERY_MS 100

/* A board for n threads (n >= 1); NULL when out of memory. */
wm_mboard *wm_mboard_new(int n);
void wm_mboard_free(wm_mboard *b);
int wm_mboard_threads(const wm_mboard *b);

/* From thread `thread` (0-based) only: snapshots ctx's operators and makes the snapshot the
 * board's for that thread. WM_OK, or WM_ERR when out of memory (the previous snapshot
 * stays). */
int wm_mboard_publish(wm_mboard *b, int thread, const wm_ctx *ctx);

struct wm_exec;
/* From thread `thread` only, before it publishes: the executor whose backpressure its
 * snapshots carry (wm_exec_paused, _paused_ms, _pressure_bytes), or NULL (none). */
void wm_mboard_set_exec(wm_mboard *b, int thread, struct wm_exec *e);

/* The job's checkpoints so far, for the checkpoint series. */
typedef struct wm_mboard_ckpt {
  uint64_t taken;      /* committed by this run */
  double last_ms;      /* the last one's duration */
  uint64_t last_bytes; /* the last one's size */
} wm_mboard_ckpt;
/* get (called from the serving thread at each request) fills in the job's checkpoints (the
 * bindings read exec/wm_ckptrun.h's wm_ckptrun_stats_get); NULL: no checkpoints, no
 * series. Set it before serving; ud must outlive the serving. */
void wm_mboard_set_checkpoints(wm_mboard *b, void (*get)(void *ud, wm_mboard_ckpt *out),
                               void *ud);

/* Calls fn(ud, s, n) with every thread's latest snapshot (s[t] thread t's, 0-based; one not
 * valid has published nothing yet) under the board's lock: fn reads them, publishes
 * nothing, keeps no pointer into them. From any thread. */
void wm_mboard_read(wm_mboard *b, void (*fn)(void *ud, const wm_msnap *s, int n), void *ud);

/* Appends every thread's latest snapshot in the Prometheus text format (version 0.0.4);
 * now is the processing time (ms) the watermark lag is measured from. A thread that has
 * published nothing yet shows no operators. */
void wm_mboard_format(wm_buf *out, wm_mboard *b, int64_t now);

/* The same for the operators of one context (one thread, no thread label, no checkpoint
 * series); the caller's thread must be the context's. */
void wm_metrics_format(wm_buf *out, const wm_ctx *ctx, int64_t now);

#endif
