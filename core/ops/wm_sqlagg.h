/* SQL group aggregates in C (docs/sql.md, "Aggregates in C"): a window function computing
 * several of COUNT(*), COUNT(x), COUNT(DISTINCT x), SUM, MIN, MAX, AVG, each optionally with
 * FILTER (WHERE ...), over the columns of a row, and building the result row in C. Used by
 * the window operator for a windowed GROUP BY (TUMBLE, HOP, SESSION) whose aggregates all qualify,
 * and (wm_keyedfn_sqlagg) by a keyed operator for one without a window; the planner
 * (lua/wm/sql/plan/aggregate.lua) falls back to the Lua aggregates otherwise.
 *
 * An argument or a filter is a plain column, or a conjunction of `column op number`
 * comparisons for a filter. Where a row expression module (core/ops/wm_rexpr) compiles
 * anything else, it plugs in through wm_sqlagg_def.eval (the hook: an argument computed by
 * a function of the row); nothing sets it yet.
 *
 * MIN and MAX take strings as well as numbers (over appending rows): compared by their bytes,
 * unsigned, a prefix first (code point order for UTF-8, as Flink's BinaryStringData.compareTo
 * of stored strings).
 *
 * A window's state (the window operator's acc) is one owned WM_STR: fixed-size slots, one
 * per aggregate, then areas: the hash tables of the COUNT(DISTINCT) sets (an incremental
 * distinct count: a value is looked up once) and the bytes of MIN/MAX's strings, position
 * independent (offsets, no pointers): the operator's checkpoint writes it as bytes and
 * restores it as it was. An area that grows moves to the end of the state (the old one left
 * as garbage, the state rebuilt without it when garbage passes half of the rest). */
#ifndef WM_SQLAGG_H
#define WM_SQLAGG_H

#include <stddef.h>

#include "base/wm_value.h"
#include "ops/wm_agg.h"

/* COUNT(DISTINCT x): of numbers (an integral float counts as its integer, as Lua's keys) */
enum {
  WM_SA_COUNT_STAR = 1,
  WM_SA_COUNT,
  WM_SA_SUM,
  WM_SA_MIN,
  WM_SA_MAX,
  WM_SA_AVG,
  WM_SA_COUNT_DISTINCT
};
enum { WM_SA_LT = 1, WM_SA_LE, WM_SA_GT, WM_SA_GE, WM_SA_EQ, WM_SA_NE };
/* Where a result field comes from (WM_SA_OUT_KEY: a part of the key; lower.lua's NULL_KEY
 * string, "\0<NULL>", the key of a NULL key column, is a NULL field, in a window's result
 * row and a changelog's alike) */
enum { WM_SA_OUT_KEY = 1, WM_SA_OUT_AGG, WM_SA_OUT_START, WM_SA_OUT_END, WM_SA_OUT_TIME };

/* One comparison of a FILTER: `field op value` (value an integer or a float); a NULL field
 * makes it false, as SQL's comparison with NULL is not TRUE. */
typedef struct wm_sqlagg_cond {
  const char *field;
  int op;
  wm_value value;
} wm_sqlagg_cond;

/* The hook for arguments that are expressions: *out = the argument's value for rec
 * (borrowed while rec is alive, or an immediate); 0, or -1 with a message in *err. */
typedef int (*wm_sqlagg_eval)(void *ud, const wm_value *rec, wm_value *out, wm_error *err);

typedef struct wm_sqlagg_def {
  int kind;           /* WM_SA_* */
  const char *field;  /* the argument column (not COUNT(*)) */
  int integer;        /* the argument's SQL type is an integer: SUM and AVG stay integers
                       * (AVG truncates toward zero, as Flink's long division); else they are
                       * floats */
  size_t ncond;       /* FILTER (WHERE c1 AND c2 ...): 0 = none */
  const wm_sqlagg_cond *cond;
  wm_sqlagg_eval eval; /* when set: the argument is eval(eval_ud, rec) instead of field */
  void *eval_ud;
} wm_sqlagg_def;

typedef struct wm_sqlagg_out {
  const char *name;
  int src;   /* WM_SA_OUT_* */
  int index; /* the key (0-based, of nkeys) or the aggregate */
} wm_sqlagg_out;

/* The hook of an updating input whose records the core cannot read (a host's table
 * {k = "+I"|"+U"|"-U"|"-D", r = row}): *sign = +1 (+I, +U) or -1 (-U, -D), *row = the row, an
 * owned value (the caller releases it). 0, or -1 with a message in *err. */
typedef int (*wm_sqlagg_unwrap)(void *ud, const wm_value *rec, int *sign, wm_value *row, wm_error *err);

typedef struct wm_sqlagg_spec {
  size_t nkeys; /* the key_by key: the one field's value, or a composite of nkeys parts */
  size_t naggs;
  const wm_sqlagg_def *aggs;
  size_t nout;
  const wm_sqlagg_out *out;
  /* wm_keyedfn_sqlagg only: the input is updating (a changelog: records {k, r}, WM_ROW ones
   * read in C, others through unwrap when set) */
  int updating;
  wm_sqlagg_unwrap unwrap;
  void *unwrap_ud;
} wm_sqlagg_spec;

/* Makes fn the window function of spec (strings copied); 0, or -1 with a message in *err. */
int wm_winfn_sqlagg(wm_winfn *fn, const wm_sqlagg_spec *spec, wm_error *err);

/* Makes fn the rolling function of an unwindowed GROUP BY (a keyed operator's rolling mode,
 * wm_keyedop_config.rolling): after each row it emits the changelog of the key's result row,
 * as {k = "+I", r = row} the first time, then {k = "-U", r = old} and {k = "+U", r = new}
 * only when an aggregate's value changed (Flink's GroupAggFunction emits no unchanged row).
 * The key's acc is the aggregates' state, as a window's; its aux the last result emitted.
 * spec->out names keys and aggregates only. A key part that is lower.lua's NULL_KEY string
 * ("\0<NULL>", a Lua key function's NULL) is a NULL field. 0, or -1 with a message. */
int wm_keyedfn_sqlagg(wm_winfn *fn, const wm_sqlagg_spec *spec, wm_error *err);

/* Over an updating input (spec->updating), as Flink's GroupAggFunction with retraction: a
 * record is {k = "+I"|"+U"|"-U"|"-D", r = row}; +I and +U add r's values, -U and -D retract
 * them (COUNT, SUM, AVG arithmetically; MIN, MAX and COUNT(DISTINCT) keep the multiset of their
 * values, a value -> count, as MinWithRetract/MaxWithRetract: retracting the current MAX gives
 * the next one). The state counts the key's rows: a retraction of a key never seen does
 * nothing, and a key whose rows drop to 0 emits {k = "-D", r = its last row} and its acc and
 * aux become nil (the keyed operator then drops the key). A multiset is a sorted array of
 * (value, count) in the state string, after the slots and the row counter: position
 * independent, as the rest. MIN/MAX of a DOUBLE column give a float (an integral one is
 * kept as its integer, as Lua's table keys, then given back as a float). MIN/MAX of strings
 * are not for an updating input (a string in one is an error; the planner keeps them in Lua). */

/* The value of aggregate i of a state (an acc the function made), into *out (an immediate,
 * or a MIN/MAX string as a WM_CSTR borrowed from acc while it is unchanged): for tests and
 * the result row. */
void wm_sqlagg_result(const wm_winfn *fn, const wm_value *acc, size_t i, wm_value *out);

#endif
