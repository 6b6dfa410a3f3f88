/* The interval join (semantics.md §10, Flink's IntervalJoinOperator): a keyed operator with
 * two inputs. A left record l meets every buffered right record r of its key with
 * l.ts + lower <= r.ts <= l.ts + upper, a right record every buffered left record with
 * r.ts - upper <= l.ts <= r.ts - lower; the join function runs once per pair, the other
 * side's records in ascending timestamp and, for equal timestamps, in arrival order.
 *
 * State: per key and side, the records kept as owned values in an array sorted by
 * (timestamp, arrival). A record is late when the operator's watermark W is not MIN and
 * ts < W: it joins nothing, is not kept, and goes to its side's late port (a side output)
 * or is dropped and counted. Kept records go when W reaches their cleanup time: a left
 * record at l.ts + upper (l.ts when upper <= 0), a right record at r.ts - lower (r.ts
 * when lower >= 0); one event-time timer per (key, side, timestamp), fired at W >= t. A
 * key whose two buffers are empty holds no memory. A record without a timestamp (MIN) is
 * an error.
 *
 * Outer (Flink SQL's TimeIntervalJoin, LEFT/RIGHT/FULL): with cfg.outer[side], a kept record
 * of that side that met nothing goes to the join function with the other side NULL (its
 * timestamp MIN) when its cleanup time comes, before the watermark is passed on. The output
 * watermark is the input watermark minus cfg.wm_delay (>= 0; Flink's
 * KeyedCoProcessOperatorWithWatermarkDelay), MIN and MAX unchanged.
 */
#ifndef WM_IJOIN_H
#define WM_IJOIN_H

#include "graph/wm_graph.h"
#include "ops/wm_keys.h"

/* The join function: called once per pair; key, left and right are borrowed for the call.
 * It emits its results itself (wm_op_emit on op, usually at max(lts, rts)). An outer join
 * calls it with left or right NULL (and its timestamp WM_TIME_MIN) for a record that met
 * nothing. */
typedef struct wm_ijoin_fn {
  int (*join)(void *ud, wm_op *op, const wm_value *key, const wm_value *left, int64_t lts,
              const wm_value *right, int64_t rts);
  void (*free)(void *ud);
  void *ud;
} wm_ijoin_fn;

typedef struct wm_ijoin_config {
  wm_keysel keysel;  /* the left input's key; owned by the operator from now on */
  wm_keysel keysel2; /* the right input's key; owned */
  int64_t lower, upper; /* the bounds as given (lower <= upper) */
  bool lower_exclusive, upper_exclusive; /* an exclusive bound moves inwards by 1 ms */
  /* the late side outputs' tags per side (0 left, 1 right; copied); NULL: late records
   * of that side are dropped and counted */
  const char *late_tag[2];
  wm_ijoin_fn fn; /* owned */
  bool outer[2];   /* emit the records of that side that met nothing, padded (NULL other) */
  int64_t wm_delay; /* the output watermark is held back by this much (>= 0) */
} wm_ijoin_config;

/* NULL on failure (message in ctx->error); takes ownership of cfg's parts even then. */
wm_op *wm_ijoin_new(wm_ctx *ctx, const char *name, wm_ijoin_config *cfg);
bool wm_op_is_ijoin(const wm_op *op);
/* Input channels from `first2` on are the right input's. Call once the left input is
 * connected (before the right one). */
void wm_ijoin_set_second_input(wm_op *op, int first2);

/* For metrics and tests: keys held, records buffered per side, late records per side
 * (to the side output or dropped), pending cleanup timers. */
size_t wm_ijoin_keys(const wm_op *op);
size_t wm_ijoin_buffered(const wm_op *op, int side);
uint64_t wm_ijoin_late(const wm_op *op, int side);
size_t wm_ijoin_timers(const wm_op *op);

#endif
