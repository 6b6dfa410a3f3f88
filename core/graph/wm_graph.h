/* The operator graph: a context, operators with a vtable, ports and channels.
 *
 * Operators that need no exchange are chained: emitting a record is a direct call of the
 * downstream operator's `record` function, with no queue between them. Every operator
 * has one input channel per upstream edge and combines their watermarks (semantics.md
 * §3) before its own `watermark` function sees a strictly increasing watermark.
 */
#ifndef WM_GRAPH_H
#define WM_GRAPH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/wm_buf.h"
#include "base/wm_error.h"
#include "base/wm_value.h"
#include "time/wm_watermark.h"

typedef struct wm_op wm_op;
typedef struct wm_ahead wm_ahead; /* lookahead, below */
typedef struct wm_wmsource wm_wmsource; /* a watermark source's capability, below */
typedef struct wm_hint wm_hint;
typedef struct wm_ctx wm_ctx;
typedef struct wm_state_io wm_state_io; /* graph/wm_state.h */

#define WM_OK 0
#define WM_ERR (-1)   /* failure; its message and parts are in ctx->error */
#define WM_STOP (-2)  /* a clean stop was requested (not an error) */

/* Watermark tracing: called for every watermark advance and status change of an operator
 * when set (wmrun --trace-watermarks). */
typedef void (*wm_trace_fn)(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                            const char *status);
/* Observing a run (core/wm_observe.h): NULL unless a recorder (wm_timeline) is attached. */
typedef struct wm_obs wm_obs;
typedef void (*wm_observe_fn)(void *ud, const wm_op *op, const wm_obs *ev);

/* Where a record comes from: the position a source publishes in ctx->pos while it emits
 * the record (io/wm_source.h). Parsers, side outputs and error messages read it. */
typedef struct wm_pos {
  const char *origin; /* "data.csv", "<stdin>", "127.0.0.1:9999 (client 2)", "from_elements (job.lua:3)" */
  const char *unit;   /* NULL: a line of text ("data.csv:17"); else what is counted
                         ("element" gives "element 3 of from_elements (job.lua:3)") */
  uint64_t line;      /* 1-based number of the line (element, record) being emitted */
  uint64_t offset;    /* byte offset of the line's start in its origin (0 when not bytes) */
} wm_pos;

/* Everything a job's core state hangs off; one per executor thread. */
struct wm_ctx {
  wm_host host;
  uint64_t seq;              /* creation sequence for (key, window) pairs */
  int64_t (*now)(void *ud);  /* processing-time clock (ms); the harness makes it virtual */
  void *now_ud;
  wm_trace_fn trace;
  void *trace_ud;
  wm_observe_fn observe;
  void *observe_ud;
  /* Processing-time timers: the executor (libuv) or the test harness (a virtual clock)
   * calls op->vt->processing_time(op, t) once ctx->now() >= t. NULL: not available. */
  int (*pt_register)(void *ud, wm_op *op, int64_t t);
  void *pt_ud;
  const wm_pos *pos;         /* the position of the record a source is emitting; NULL when
                                no source is emitting (timers, watermarks, tests) */
  wm_op **ops;               /* every operator, in creation order (owned) */
  size_t nops, capops;
  /* Restores: 1 accepts an operator whose function's state means something else than the
   * checkpoint's (wmrun --allow-state-change); state_changes counts those accepted. */
  int allow_state_change;
  int state_changes;
  /* The job's maximum parallelism: its number of key groups (base/wm_keygroup.h), by which
   * key_by routes and keyed state is checkpointed. 0: WM_KEYGROUPS_DEFAULT. */
  uint32_t key_groups;
  wm_error error; /* the last failure (base/wm_error.h); last: the hot fields stay together */
};

/* Initialises a context with the wall clock; 0. */
void wm_ctx_init(wm_ctx *ctx);
/* Frees every operator of the context. */
void wm_ctx_free(wm_ctx *ctx);
/* A new failure with this message (no parts yet); returns WM_ERR. */
int wm_ctx_error(wm_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends text at the end of the failure (wm_error_vappend); returns WM_ERR. */
int wm_ctx_error_append(wm_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Adds a line of context (e.g. "\n  restoring part op-1.0 of the checkpoint") after the
 * parts so far, before a traceback; returns WM_ERR. */
int wm_ctx_error_context(wm_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The failure as text, formatted from its parts (for the top: bindings, wmrun, tests). */
static inline const char *wm_ctx_errtext(wm_ctx *ctx) { return wm_error_format(&ctx->error); }
static inline int64_t wm_ctx_now(wm_ctx *ctx) { return ctx->now(ctx->now_ud); }
/* Asks for op->vt->processing_time(op, t) at wall-clock (ctx->now) time t. Timers are not
 * coalesced here: an operator that needs it keeps its own set. WM_OK or WM_ERR. */
int wm_ctx_register_processing_timer(wm_ctx *ctx, wm_op *op, int64_t t);

struct wm_op_gauges;

typedef struct wm_op_vt {
  const char *kind;
  /* A record on input channel chan; rec is borrowed for the call. */
  int (*record)(wm_op *op, int chan, const wm_value *rec, int64_t ts);
  /* The combined input watermark advanced to wm (strictly increasing). NULL = forward. */
  int (*watermark)(wm_op *op, int64_t wm);
  /* The combined input status changed. NULL = forward. */
  int (*status)(wm_op *op, bool idle);
  /* A processing-time timer registered with wm_ctx_register_processing_timer fired. */
  int (*processing_time)(wm_op *op, int64_t t);
  /* Frees the operator's own state (impl). */
  void (*free)(wm_op *op);
  /* Checkpoint hooks (architecture.md: every operator exposes them; the contract is in
   * graph/wm_state.h). NULL: the operator keeps no state across records (map, filter,
   * print, ...); the checkpoint work fills them operator by operator. Called through
   * wm_op_snapshot / wm_op_restore. WM_OK, or WM_ERR with the reason in op->ctx->error. */
  int (*snapshot)(wm_op *op, wm_state_io *io);
  int (*restore)(wm_op *op, wm_state_io *io);
  /* 1: the operator's state is keyed (a window, a keyed process function): its restore
   * takes io->groups, kg_first, kg_last and merge (graph/wm_state.h), so a checkpoint of
   * another parallelism restores into it, key group by key group. */
  int keyed_state;
  /* 1: the operator's state is not keyed but restores from the parts of several old
   * instances, the second and later with io->merge set, into one that holds no more than
   * any of them claimed (the timestamp assigner: the lowest watermark of its instances), so
   * that a checkpoint of another parallelism restores into it. */
  int merge_parts;
  /* Lookahead (optional, a hint that changes nothing: see wm_ahead). ahead_wants: whether
   * op takes hints now of records on their way to it, and what they must carry, in *a
   * (zeroed by the caller); an operator before it asks once per batch of records, with
   * wm_op_ahead_wants. ahead: n hints (1 to WM_AHEAD), in the order their records will
   * come, for a->to (op itself or an operator after it, as ahead_wants said); returns how
   * many it used. */
  bool (*ahead_wants)(wm_op *op, wm_ahead *a);
  size_t (*ahead)(wm_op *op, const wm_hint *h, size_t n);
  /* Periodic work (optional; the timestamp assigner's periodic watermarks and idleness
   * checks): period gives, once before the run, how often the operator wants on_period
   * (ms; 0: never); the executor calls on_period(op, now) on a wall-clock timer of the
   * shortest period of all operators, for every operator with a period that has not ended.
   * WM_OK or WM_ERR (the job fails). */
  int64_t (*period)(const wm_op *op);
  int (*on_period)(wm_op *op, int64_t now);
  /* A watermark source (optional: NULL for operators that forward watermarks): an operator
   * that makes the watermarks of its output itself; sources ask it (wm_op_wmsource). */
  const wm_wmsource *wmsource;
  /* What the operator holds, for metrics and the live view (optional: NULL holds nothing
   * worth showing): fills the fields that apply and sets their flags (wm_op_gauges). */
  void (*gauges)(const wm_op *op, struct wm_op_gauges *g);
} wm_op_vt;

/* An operator's state in numbers (vt->gauges): open (key, window) states of a window
 * operator; keys held, and keys whose state a state_ttl dropped, of a keyed one. */
typedef struct wm_op_gauges {
  bool has_windows, has_keys;
  uint64_t windows, keys, keys_expired;
} wm_op_gauges;

/* op's gauges (all zero and no flag set when it has none). */
void wm_op_gauges_get(const wm_op *op, wm_op_gauges *g);

/* What an operator that makes watermarks (vt->wmsource) answers the operators before it: a
 * partitioned source, whose partitions each have one, and the timeline, which draws them. */
struct wm_wmsource {
  /* The last watermark it forwarded (WM_TIME_MIN before the first). */
  int64_t (*last_watermark)(const wm_op *op);
  /* Whether its output is idle now. */
  bool (*idle)(const wm_op *op);
  /* Its input is paused (backpressure, watermark alignment), not silent: idleness does not
   * advance while held; released as many times as held, the timeout starts again. */
  void (*hold_idleness)(wm_op *op, bool hold);
  /* Marks its output idle (a partition another instance owns). WM_OK or WM_ERR. */
  int (*mark_idle)(wm_op *op);
};

/* Lookahead: an operator may tell the operator after it, ahead of time, of records that are
 * coming (their keys and timestamps), so that it can prefetch their state; operators meet
 * only at these hooks, never by each other's types. An operator that passes records on
 * unchanged in the fields asked for may answer ahead_wants for the one after it (filling in
 * what it knows: a timestamp assigner names the field the timestamp comes from). */
struct wm_ahead {
  wm_op *to;         /* where the hints go (its vt->ahead) */
  const char *key;   /* the field whose string bytes a hint carries as key; NULL: the record
                        itself (a string record: a line) */
  bool want_ts;      /* hints carry the record's timestamp, ... */
  const char *ts;    /* ... read from this integer field (ms); NULL: not known yet */
};

/* One hint: a record coming. key NULL: one that will come but could not be read (its place
 * in the order counts). */
struct wm_hint {
  const char *key;
  size_t n;
  int64_t ts;
};

/* How many records ahead hints are given. */
#define WM_AHEAD 8

typedef struct wm_edge {
  wm_op *to;
  int chan;
} wm_edge;

typedef struct wm_port {
  char *tag;        /* NULL for the main output; a side-output tag otherwise (owned) */
  wm_edge *edges;   /* owned */
  int n;
  int side;         /* a user's side output: counted in `records`, not in records_out. A tag
                     * that starts with '\1' is wmrun's own port (a partition's, an
                     * exchange's, the pre-aggregation's late records): counted in
                     * records_out as the main output */
  uint64_t records; /* side outputs: the records emitted on this port */
} wm_port;

/* records_out: the records of the main output and of wmrun's internal ports, not of side
 * outputs (each side port counts its own); late_dropped / late_side: records too late for
 * any window, dropped or sent to the late side output. */
typedef struct wm_input_metrics {
  uint64_t records, late_dropped, late_side;
} wm_input_metrics;
typedef struct wm_op_metrics {
  uint64_t records_in, records_out, late_dropped, parse_errors, late_side;
  /* a two-input operator's figures per input (in[0] input 1, in[1] input 2): the records
   * that reached it on that input, and of them those its record function counted late
   * (late_dropped / late_side went up during the call). Zero for other operators. */
  wm_input_metrics in[2];
} wm_op_metrics;

struct wm_op {
  const wm_op_vt *vt;
  wm_ctx *ctx;
  char *name;        /* e.g. "map (job.lua:12)", owned */
  void *impl;        /* the operator's own state */
  int nin;           /* input channels */
  wm_combiner comb;  /* initialised by wm_op_prepare */
  wm_port *ports;    /* ports[0] main output */
  int nports;
  wm_op_metrics m;
  int64_t wm;        /* current input watermark (comb.out) */
  bool ended;
  char *uid;         /* a stable id for checkpoints (:uid("name")), owned; NULL: none */
  char *where;       /* the job script's line that made it ("job.lua:12"), owned; NULL: none */
  int in2;           /* a two-input operator (wm_op_set_two_inputs): its first input channel
                      * of input 2, channels below it being input 1's; INT_MAX otherwise */
  int cur_in;        /* a two-input operator, during a record call: the record's input (1 or
                      * 2; observers read it, e.g. a late record's input); 0 otherwise */
  /* Its place in the job's plan, set by the builder, for restores at another parallelism
   * or thread count (exec/wm_ckptrun.c, "rescaling"): the plan's node (1-based; 0 an
   * operator of the executor's own: an exchange, a sender, a receiver), the instance
   * (0-based) of nsub, and its role (WM_ROLE_*: the node's operator, or one the builder
   * adds around it). */
  uint32_t node;
  int subtask, nsub, role;
  /* On the path of one partition of a partitioned source (its copy of the forward
   * operators and its timestamp assigner, wm.connectors): that partition's index + 1 (the
   * instance that reads it is index mod nsub); 0 otherwise. Set by the builder. */
  int part_path;
  /* A two-input operator (in2): the plan's node whose instances feed its input 1, and
   * whether that input forwards (one channel, from the instance of its number) when the two
   * run as the same number of instances (neither keyed, nor after a rebalance or a
   * broadcast). A restore at another parallelism works out from them where input 2's
   * channels began at the checkpoint (exec/wm_rescale.c). Set by the builder; 0: not known. */
  uint32_t in1_node;
  int in1_fwd;
};

enum { WM_ROLE_MAIN = 0, WM_ROLE_CLOCK = 1, WM_ROLE_PREAGG = 2 };

/* Creates an operator owned by ctx; name is copied. NULL on allocation failure. */
wm_op *wm_op_new(wm_ctx *ctx, const wm_op_vt *vt, void *impl, const char *name);
/* Gives op a stable id: its checkpoint part is then named after it, not after its place in
 * the plan (graph/wm_snapshot.h). Letters, digits, '.', '_' and '-', at most 120 bytes,
 * unique in the context. WM_OK, or WM_ERR with the reason in ctx->error. */
int wm_op_set_uid(wm_op *op, const char *uid);
/* Records the job script's line that made op (copied): a failure of op carries it as a part
 * of its own (WM_EPART_WHERE). WM_OK, or WM_ERR (out of memory) in ctx->error. */
int wm_op_set_where(wm_op *op, const char *where);
/* Names op as the failure's operator (its name and script line, once: the innermost). */
void wm_op_error_parts(const wm_op *op);
/* A failure of op on record rec (its message already in the context's error): names op and
 * adds the record as print shows it (cut at 400 bytes). Returns WM_ERR. */
int wm_op_fail_record(wm_op *op, const wm_value *rec);
/* The port for a side-output tag (created when missing); 0 for tag NULL. -1 on failure. */
int wm_op_port(wm_op *op, const char *tag);
/* Connects port `port` of from to a new input channel of to. Returns the channel or -1. */
int wm_op_connect(wm_op *from, int port, wm_op *to);
/* Call once every edge is made: sets up the watermark combiners. 0 or WM_ERR. */
int wm_ctx_prepare(wm_ctx *ctx);

/* ---- two-input operators (semantics.md §10) --------------------------------------------
 * Any operator may have two inputs: its input channels from `first2` on are input 2's (the
 * builder connects every edge of input 1 first). The graph then counts records and late
 * records per input (m.in), --trace-watermarks and the timeline show both inputs'
 * watermarks, and nothing else changes: the operator's watermark is still the minimum over
 * every channel of both inputs (rule 3). Call once input 1 is connected. */
void wm_op_set_two_inputs(wm_op *op, int first2);
/* 0 for a channel of input 1 (or of a one-input operator), 1 for input 2. */
static inline int wm_op_input_of(const wm_op *op, int chan) { return chan >= op->in2; }
/* Input k's (0 or 1) own watermark: the minimum over its active channels, as rule 3 would
 * combine them alone; when every one of its channels is idle, *idle is set and the result
 * is the highest of them. MIN before any. (For metrics and traces: O(channels).) */
int64_t wm_op_input_wm(const wm_op *op, int k, bool *idle);
/* Delivers a record to input channel chan of a two-input operator (the slow path of
 * wm_op_deliver): counts it and its lateness per input. */
int wm_op_deliver2(wm_op *to, int chan, const wm_value *rec, int64_t ts);
/* Delivers a record to input channel chan of to (counted in to's records_in). */
static inline int wm_op_deliver(wm_op *to, int chan, const wm_value *rec, int64_t ts) {
  if (to->in2 != INT_MAX) return wm_op_deliver2(to, chan, rec, ts);
  to->m.records_in++;
  return to->vt->record(to, chan, rec, ts);
}

/* Emits a record on a port: calls every downstream operator of that port. rec is
 * borrowed for the call. */
int wm_op_emit_all(wm_op *op, int port, const wm_value *rec, int64_t ts);
/* On WM_ERR, names `to` as the failure's operator part unless one is named already (the
 * innermost failing operator; printed "in operator 'to'"); returns rc. */
int wm_op_failed(wm_op *to, int rc);
/* wm_op_emit_all, with the usual case inline (one edge, no observer): a chain of operators
 * is then a chain of direct calls, without a frame of wm_op_emit_all's between each two. */
static inline int wm_op_emit(wm_op *op, int port, const wm_value *rec, int64_t ts) {
  const wm_port *p = &op->ports[port];
  if (p->n != 1 || op->ctx->observe) return wm_op_emit_all(op, port, rec, ts);
  if (p->side) op->ports[port].records++;
  else op->m.records_out++;
  wm_op *to = p->edges[0].to;
  int rc = wm_op_deliver(to, p->edges[0].chan, rec, ts);
  return rc == WM_OK ? WM_OK : wm_op_failed(to, rc);
}
/* Emits a watermark on every port of op. */
int wm_op_emit_watermark(wm_op *op, int64_t wm);
/* Emits an idle/active status on every port of op. */
int wm_op_emit_status(wm_op *op, bool idle);

/* The checkpoint hooks of op (graph/wm_state.h): an operator without a snapshot hook
 * writes nothing and returns WM_OK; one without a restore hook accepts only an empty state
 * (io->len 0), and any bytes for it are an error naming it. */
int wm_op_snapshot(wm_op *op, wm_state_io *io);
int wm_op_restore(wm_op *op, wm_state_io *io);

/* Appends rec as print shows it to b, for error messages that name the record. */
static inline void wm_op_format_record(const wm_op *op, const wm_value *rec, wm_buf *b) {
  wm_format_value(b, rec, 0, op->ctx->host.format, op->ctx->host.ud);
}

/* Input side, for drivers and tests: feed a watermark or status into a channel of op. */
int wm_op_input_watermark(wm_op *op, int chan, int64_t wm);
int wm_op_input_status(wm_op *op, int chan, bool idle);
static inline int wm_op_input_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  return wm_op_deliver(op, chan, rec, ts);
}

/* The operator op's main port leads to alone (one edge), else NULL. */
static inline wm_op *wm_op_next(const wm_op *op) {
  return op->ports[0].n == 1 ? op->ports[0].edges[0].to : NULL;
}

/* op's watermark-source capability, or NULL (op NULL: none). */
static inline const wm_wmsource *wm_op_wmsource(const wm_op *op) {
  return op ? op->vt->wmsource : NULL;
}

/* Whether op (NULL: none) takes lookahead hints now, and what they must carry in *a. */
static inline bool wm_op_ahead_wants(wm_op *op, wm_ahead *a) {
  *a = (wm_ahead){0};
  return op && op->vt->ahead_wants && op->vt->ahead_wants(op, a) && a->to && a->to->vt->ahead;
}

#endif
