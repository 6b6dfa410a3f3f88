/* SQL rows as Flink's print sink shows them, in C: `+I[a, 1, 2.5, 2016-04-27 11:34:20.000, <NULL>]`
 * (docs/sql.md, "Types and NULL"), for the 'print' connector of an append-only query. The
 * text is lua/wm/sql/values.lua's row_formatter's, byte for byte: a STRING as is; an integer
 * as a decimal; a float as Java's Double.toString (`1.5`, `2.0`, `1.0E10`, `1.0E-5`,
 * `NaN`, `Infinity`); a BOOLEAN column TRUE/FALSE; a TIMESTAMP column (integer ms) as
 * `yyyy-MM-dd HH:mm:ss.SSS` in UTC; NULL (a missing field) as `<NULL>`. */
#ifndef WM_SQLFMT_H
#define WM_SQLFMT_H

#include "base/wm_buf.h"
#include "base/wm_value.h"
#include "graph/wm_graph.h"

typedef enum { WM_SQLF_PLAIN, WM_SQLF_BOOLEAN, WM_SQLF_TIMESTAMP } wm_sqlf_kind;

/* Appends a float as Java's Double.toString writes it. */
void wm_sqlfmt_double(wm_buf *b, double x);
/* Appends ms since the epoch as yyyy-MM-dd HH:mm:ss.SSS (UTC, proleptic Gregorian). */
void wm_sqlfmt_timestamp(wm_buf *b, int64_t ms);

/* An operator that turns each record into the string "+I[...]" of the n columns `names`
 * (copied), each shown as its kind says. NULL on failure, with the message in ctx. */
wm_op *wm_sqlfmt_new(wm_ctx *ctx, const char *name, int n, const char *const *names, const uint8_t *kinds);

#endif
