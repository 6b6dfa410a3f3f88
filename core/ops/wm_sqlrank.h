/* SQL deduplication in C (docs/sql.md, "Deduplication and Top-N"): `ROW_NUMBER() OVER
 * (PARTITION BY k ORDER BY rt [ASC|DESC])` filtered on `rn = 1`, with rt a time attribute, over
 * an append-only input, as the Lua path (lua/wm/sql/plan/lower.lua, lower.deduplicate, Flink's
 * RowTimeDeduplicateFunction) runs it, row for row:
 *   - keep first (ASC): a row replaces the kept one when its time is strictly smaller;
 *   - keep last (DESC): when its time is larger or equal (of equal times the later row);
 *   - the first row of a key is +I; a replacement is -U of the kept row, then +U of the new.
 *
 * It is the rolling function of a keyed operator (wm_keyedop_config.rolling, keyed by the
 * PARTITION BY columns): per key the accumulator is the kept row as emitted (a C row of the
 * visible columns, values owned) and aux its time (WM_INT); the keyed operator checkpoints
 * both, key group by key group. Its results are the changelog rows {k = "+I"|"-U"|"+U",
 * r = row} (C rows), emitted with the record's timestamp. No state TTL (the planner keeps a
 * query with table.exec.state.ttl on the Lua path). */
#ifndef WM_SQLRANK_H
#define WM_SQLRANK_H

#include <stddef.h>

#include "ops/wm_agg.h"

typedef struct wm_sqldedup_spec {
  size_t nfields;
  const char *const *fields; /* the visible columns: read from the record, the result row's */
  const char *time;          /* the ORDER BY column (a time attribute: an integer, ms) */
  int keep_last;             /* 1: ORDER BY ... DESC */
} wm_sqldedup_spec;

/* Makes fn the rolling function of a deduplication (strings copied); 0, or -1 with a
 * message in *err. */
int wm_keyedfn_sqldedup(wm_winfn *fn, const wm_sqldedup_spec *spec, wm_error *err);

#endif

/* SQL Top-N in C: `ROW_NUMBER() OVER (PARTITION BY k ORDER BY c1 [DESC], ...)` filtered on
 * `rn <= N` over an append-only input, as the Lua path (lower.top_n, Flink's
 * AppendOnlyTopNFunction) runs it, row for row: per key the N first rows in the ORDER BY
 * (NULL first ascending, last descending, unless NULLS FIRST/LAST says; numbers by value,
 * strings by bytes; a NaN is neither before nor after anything), rows of equal sort keys in
 * their order of arrival; a row that does not sort before the last of a full top changes
 * nothing. Without rn (rn_name NULL): the row that enters is +I, and the row it pushes out
 * -D before it (nothing when the two are equal in every visible column, as Lua's ==). With rn:
 * the ranks from the new row's place down shift one, each a -U of the row that was there and a
 * +U of the row now there (the result row: the visible columns, then rn), and the last rank
 * +I when the top was not full.
 *
 * Per key the accumulator is the top (a C row of up to N fields, each a kept row: the visible
 * columns, then the ORDER BY columns; its slots grow fourfold as the key's rows come, from 4 up
 * to N), aux how many it holds (WM_INT); the keyed operator checkpoints both. Results {k, r} as the deduplication's. No state TTL. */
typedef struct wm_sqltopn_order {
  const char *field;
  int desc;
  int nulls_first;
} wm_sqltopn_order;

typedef struct wm_sqltopn_spec {
  size_t nfields;
  const char *const *fields; /* the visible columns */
  size_t norders;            /* >= 1 */
  const wm_sqltopn_order *orders;
  size_t n;            /* N >= 1 */
  const char *rn_name; /* the rank column of the result rows, NULL: not read */
} wm_sqltopn_spec;

int wm_keyedfn_sqltopn(wm_winfn *fn, const wm_sqltopn_spec *spec, wm_error *err);
