/* SQL regular joins in C (docs/sql.md, "Regular joins"): the INNER join of two append-only
 * inputs on equality keys, as the Lua path (lua/wm/sql/plan/regular_join.lua, M.lower) runs
 * it, row for row and in the same order:
 *   - a side's rows of one key are a multiset in the order of first arrival: a row equal to
 *     one kept (every column of the side equal, of the same type: an integer is not a float,
 *     -0.0 is not 0.0) adds one to its count;
 *   - a row that arrives meets the other side's kept rows of its key in that order, each
 *     `count` times: one joined row per meeting, emitted with the arriving row's timestamp;
 *     then it is kept;
 *   - a row with a NULL key part meets nothing and is not kept (the planner filters those
 *     before the key exchange too).
 * The key: each key part's type and value (NULL none); a part marked `key_float` is compared
 * as a float on both sides (numeric keys of two types, as the planner's `r[f] + 0.0`, which
 * also makes -0.0 0.0; without it -0.0 and 0.0 are two keys, as two Lua keys are).
 *
 * State: per key and side, the kept rows (C rows of the side's columns, owned values) with
 * their counts, and an index from (key, side, row) to the row for the counts. Without a TTL it
 * grows with the input; with one (spec.ttl) a key's expired rows go when a record of the key
 * comes (before it meets them), and a sweep of two keys per record frees the keys whose rows
 * all expired. Checkpointed (snapshot/restore), key group by key group (the key
 * groups of the key selectors given, which the job's key exchange uses).
 *
 * The joined row: a C row (WM_ROW) of the output columns, column i being column
 * out_field[i] of side out_side[i]'s row.
 *
 * An updating side (spec.side[d].updating: the result of a GROUP BY): its records are changes
 * {k = "+I"|"+U"|"-U"|"-D", r = row}, C rows read in C or others (Lua tables) through
 * spec.unwrap. As the Lua path's M.lower for an inner join:
 *   - +I, +U: the row is added as an append-only side's row is, and meets the other side's
 *     kept rows (each count times, in their order), the pairs emitted with its kind;
 *   - -U, -D: one count of the kept row equal to it goes (the entry goes at 0: a later equal
 *     row comes at the end of the order; none kept: nothing goes), then it meets the other
 *     side's kept rows as an addition does, the pairs emitted with its kind (-U, -D).
 * When a side is updating, every output is a change {k, r = the joined row} (an append-only
 * side's row is +I); else it is the joined row. */
#ifndef WM_SQLJOIN_H
#define WM_SQLJOIN_H

#include <stddef.h>
#include <stdint.h>

#include "graph/wm_graph.h"
#include "ops/wm_keys.h"

typedef struct wm_sqljoin_side {
  size_t nfields;
  const char *const *fields; /* the columns of the side's rows: what a kept row holds */
  const size_t *key;         /* nkeys indexes into fields: the key parts */
  int updating;              /* its records are changes {k, r} */
} wm_sqljoin_side;

/* Reads a change that is not a C row (a Lua table): its sign (+1: +I, +U; -1: -U, -D), its
 * kind's letter ('I', 'U', 'D') and its row (owned: a value wm_field_get reads). 0, or -1
 * with err set (not a change). (The binding's: lwm_sqljoin_unwrap.) */
typedef int (*wm_sqljoin_unwrap)(void *ud, const wm_value *rec, int *sign, char *letter, wm_value *row,
                                 wm_error *err);

typedef struct wm_sqljoin_spec {
  size_t nkeys; /* >= 1 */
  wm_sqljoin_side side[2];
  const uint8_t *key_float; /* nkeys flags (NULL: none) */
  size_t nout;
  const char *const *out_names;
  const uint8_t *out_side;  /* 0 left, 1 right */
  const size_t *out_field;  /* an index into that side's fields */
  int64_t ttl; /* table.exec.state.ttl in ms (0: none): a kept row not written (added, or its
                * count changed) for that long on the processing-time clock (wm_ctx_now) is
                * gone, as the Lua path's (Flink's OnCreateAndWrite, NeverReturnExpired) */
  wm_sqljoin_unwrap unwrap; /* for an updating side's changes that are not C rows (NULL: an error) */
  void *unwrap_ud;
} wm_sqljoin_spec;

/* The operator (names copied). ks, ks2: the left and right input's key selectors as the key
 * exchange computes them (the key groups of a restore); owned from now on, freed even on
 * failure. Input 2 is the channels from op->in2 on (wm_op_set_two_inputs). NULL on failure
 * (message in ctx->error). */
wm_op *wm_sqljoin_new(wm_ctx *ctx, const char *name, const wm_sqljoin_spec *spec, wm_keysel ks,
                      wm_keysel ks2);
bool wm_op_is_sqljoin(const wm_op *op);

/* For metrics and tests: keys held, distinct rows kept of a side, rows kept of a side
 * (counting each distinct row count times). */
size_t wm_sqljoin_keys(const wm_op *op);
size_t wm_sqljoin_distinct(const wm_op *op, int side);
uint64_t wm_sqljoin_rows(const wm_op *op, int side);

#endif
