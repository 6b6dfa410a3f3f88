/* The timestamp and watermark assigner (assign_timestamps_and_watermarks), semantics.md §2.
 *
 * Per record: extract the timestamp, forward the record with it, then let the generator
 * see it (on_event), and with watermark_interval = 0 call the periodic emit right away.
 * A watermark is forwarded only when strictly greater than the last one forwarded.
 * Upstream watermarks are ignored, except the end of input (WM_TIME_MAX), which goes
 * through and is followed by one last periodic emit (Flink's finish()).
 */
#ifndef WM_TSOP_H
#define WM_TSOP_H

#include "graph/wm_graph.h"

/* Timestamp extractor; fn NULL keeps the timestamp the record already has. prev_ts is
 * that timestamp (WM_TIME_MIN when none). */
typedef struct wm_tsx {
  int (*fn)(void *ud, wm_op *op, const wm_value *rec, int64_t prev_ts, int64_t *ts);
  void (*free)(void *ud);
  void *ud;
} wm_tsx;

/* Timestamp from a numeric field, ms = value * scale, computed in C. 0 or -1. */
int wm_tsx_field(wm_tsx *x, const char *field, int64_t scale);

/* A custom generator (e.g. written in Lua). Its callbacks emit through
 * wm_tsop_emit_watermark / wm_tsop_mark_idle / wm_tsop_mark_active. */
typedef struct wm_wmgen {
  int (*on_event)(void *ud, wm_op *op, const wm_value *rec, int64_t ts);
  int (*on_periodic)(void *ud, wm_op *op);
  /* Checkpoints (optional; a Lua generator's snapshot(self) / restore(self, t) methods):
   * snapshot gives the generator's state as one owned value *out (a plain table, written
   * with the codec host), restore puts such a value (borrowed) back. Without them the
   * generator's state cannot be checkpointed and a snapshot of its operator is refused. */
  int (*snapshot)(void *ud, wm_op *op, wm_value *out);
  int (*restore)(void *ud, wm_op *op, const wm_value *state);
  void (*free)(void *ud);
  void *ud;
} wm_wmgen;

typedef struct wm_tsop_config {
  wm_tsx tsx;          /* owned by the operator from now on */
  int builtin;         /* WM_GEN_NONE or WM_GEN_BOUNDED when custom.on_event is NULL */
  int64_t delay;       /* bounded out-of-orderness, ms */
  wm_wmgen custom;     /* owned by the operator from now on; used when on_event is set */
  int64_t interval;    /* watermark interval, ms; 0 = periodic emit after every record */
  int64_t idle_timeout;/* with_idleness, ms; 0 = never idle */
  bool ingestion;      /* ingestion time: ts = ctx->now() (never decreasing), watermarks
                        * follow the clock (now - 1 on each periodic emit); tsx unused */
} wm_tsop_config;

/* NULL on failure (message in ctx->error); takes ownership of cfg's parts even then. */
wm_op *wm_tsop_new(wm_ctx *ctx, const char *name, wm_tsop_config *cfg);
/* The periodic emit (called by the executor every interval, or by the harness). */
int wm_tsop_periodic(wm_op *op);
/* Whether the input ended before the clock asked a periodic strategy (watermark_interval >
 * 0, a generator with a periodic emit) for two periodic emits: the windows then fired only
 * at the end of input, which a user of a file read in milliseconds should be told. The
 * last emit after the end of input does not count. */
bool wm_tsop_few_periodic(const wm_op *op);
/* Whether a periodic emit now would change nothing: a built-in generator (not ingestion
 * time, not custom) that has seen no record since its last periodic emit gives the same
 * watermark again, which is not forwarded; an ended or idle assigner gets no periodic emit.
 * A custom generator's emit may do anything, and ingestion time follows the clock: never
 * settled. A virtual clock (the replay) skips the emits of a settled assigner up to the next
 * event that may change it, counting them (wm_tsop_skip_periodic). */
bool wm_tsop_periodic_settled(const wm_op *op);
/* Counts n periodic emits skipped while settled, as if asked for (wm_tsop_periodic_count,
 * checkpoints and wm_tsop_few_periodic see the same count as when stepping). */
void wm_tsop_skip_periodic(wm_op *op, uint64_t n);
/* The periodic emits the clock asked for so far (wm_tsop_periodic calls). */
uint64_t wm_tsop_periodic_count(const wm_op *op);
/* For generators: forward t if it is greater than the last forwarded watermark. */
int wm_tsop_emit_watermark(wm_op *op, int64_t t);
int wm_tsop_mark_idle(wm_op *op);
int wm_tsop_mark_active(wm_op *op);
int64_t wm_tsop_interval(const wm_op *op);
int64_t wm_tsop_idle_timeout(const wm_op *op);
/* Wall-clock (ctx->now) time of the last record, for idleness detection. */
int64_t wm_tsop_last_record_time(const wm_op *op);
bool wm_tsop_is_idle(const wm_op *op);
/* Idleness check at processing time now: marks the assigner idle when it has seen no
 * record for idle_timeout ms. WM_OK or an error from downstream. */
int wm_tsop_check_idle(wm_op *op, int64_t now);
/* The processing time at which the assigner turns idle if no record comes (WM_TIME_MAX
 * when it has no idleness or is idle already). */
int64_t wm_tsop_idle_deadline(const wm_op *op);
/* A source paused its input (backpressure, watermark alignment): no record is coming for
 * a reason other than silence, so idleness does not advance while held; released (as
 * many times as held), the idleness timeout starts again (Flink: a paused split is not
 * idle). */
void wm_tsop_hold_idleness(wm_op *op, bool hold);
/* The last watermark the assigner forwarded (WM_TIME_MIN before the first). */
int64_t wm_tsop_last_watermark(const wm_op *op);
/* Whether the generator is custom (on_event set), and whether it ever emitted. */
bool wm_tsop_is_custom(const wm_op *op);
int wm_tsop_builtin(const wm_op *op);
bool wm_op_is_tsop(const wm_op *op);

#endif
