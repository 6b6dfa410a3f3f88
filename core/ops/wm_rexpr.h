/* SQL row expressions in C: the WHERE conditions and SELECT items of the SQL planner
 * (lua/wm/sql/expr.lua) evaluated over records without a Lua call (docs/sql.md, "Expressions
 * in C").
 *
 * A program is a list of nodes; a node reads its arguments by index (they come before it).
 * It is built once (the planner's expression tree walked by bindings/lwm_rexpr.c, or a test)
 * and evaluated per record by wm_rexpr_eval. Values follow the Lua path exactly, as
 * lua/wm/sql/values.lua's runtime (R.add, R.eq, ...) computes them:
 *   - SQL NULL is nil; every operator but AND, OR, IS [NOT] NULL, IS TRUE/FALSE, CASE,
 *     COALESCE and IF gives NULL for a NULL operand; AND/OR use three-valued logic;
 *   - INT, BIGINT, TIMESTAMP are integers (int64; + - * wrap as Lua's do), DOUBLE floats; an
 *     integer meeting a float becomes a float; integers and floats compare exactly (Lua 5.4);
 *   - `/` of integers truncates toward zero, `%`/MOD of integers has the dividend's sign,
 *     and both raise "<where>: division by zero" for a zero divisor (where: the script's
 *     file:line:col of the operator, given when the node is made);
 *   - strings compare by bytes (the C locale's order, as Lua's). A result string is borrowed
 *     from the record or from a literal of the program, or made by a string function
 *     (UPPER, ||, DATE_FORMAT, ...): the program owns those until wm_rexpr_reset.
 * A program belongs to one operator instance (its column nodes cache field positions).
 *
 * The operator wm_rproject_new filters (a BOOLEAN node: a record passes when it is TRUE) and/or
 * projects (one node per output column) WM_ROW or host records into new WM_ROW records of
 * a fixed schema, keeping each record's timestamp. */
#ifndef WM_REXPR_H
#define WM_REXPR_H

#include "base/wm_value.h"
#include "graph/wm_graph.h"

typedef enum {
  WM_RX_COL,      /* field `name` of the record (nil when missing) */
  WM_RX_SUBCOL,   /* field `sub` of the row in field `name` (nil when that is nil) */
  WM_RX_LIT,      /* a constant */
  WM_RX_ADD, WM_RX_SUB, WM_RX_MUL, /* 2 args */
  WM_RX_FDIV,     /* a / b as floats (DOUBLE /) */
  WM_RX_IDIV,     /* integer division truncated toward zero; error on a zero divisor */
  WM_RX_MOD,      /* % and MOD(a, b) */
  WM_RX_NEG, WM_RX_ABS,            /* 1 arg */
  WM_RX_EQ, WM_RX_NE, WM_RX_LT, WM_RX_LE, WM_RX_GT, WM_RX_GE, /* 2 args */
  WM_RX_AND, WM_RX_OR,             /* 2 args, three-valued */
  WM_RX_NOT,
  WM_RX_ISNULL, WM_RX_NOTNULL,     /* 1 arg */
  WM_RX_IS_TRUE, WM_RX_IS_FALSE, WM_RX_NOT_TRUE, WM_RX_NOT_FALSE, /* IS [NOT] TRUE/FALSE */
  WM_RX_BETWEEN,  /* v, lo, hi: lo <= v AND v <= hi */
  WM_RX_IN,       /* v, x1, x2, ...: TRUE on an equal x, else NULL if v or an x is NULL, else FALSE */
  WM_RX_CASE,     /* c1, r1, c2, r2, ..., else: the r of the first c that is TRUE */
  WM_RX_COALESCE, /* the first argument that is not NULL */
  WM_RX_IF,       /* c, a, b: a when c is TRUE, else b */
  WM_RX_TO_DOUBLE,/* CAST(numeric or BOOLEAN AS DOUBLE) */
  WM_RX_BOOL_TO_INT, /* CAST(BOOLEAN AS INT/BIGINT) */
  WM_RX_HOUR,     /* HOUR(ts): floor(ts / 3600000) mod 24 */
  WM_RX_TO_TS3, WM_RX_TO_TS0, /* TO_TIMESTAMP_LTZ(v, 3) and (v, 0): ms, an integer when it fits */
  /* strings (R.concat, R.upper, ... of lua/wm/sql/values.lua): bytes, the C locale's */
  WM_RX_CONCAT,   /* s1, s2, ...: `||` and CONCAT; NULL when one is NULL */
  WM_RX_UPPER, WM_RX_LOWER, /* ASCII letters only (Lua's string.upper in the C locale) */
  WM_RX_TRIM,     /* the ASCII white space (isspace) cut at both ends */
  WM_RX_CHAR_LENGTH, /* UTF-8 characters (Lua's utf8.len), the bytes when not valid UTF-8: INT */
  WM_RX_SUBSTRING,   /* s, start[, len]: characters when valid UTF-8, else bytes; error on len < 0 */
  WM_RX_LIKE,        /* s, pattern: `%` any bytes, `_` one byte, the rest itself */
  WM_RX_SPLIT_INDEX, /* s, sep, i: the i-th (from 0) piece; NULL past the end, for i < 0 or s '' */
  WM_RX_DATE_FORMAT, /* ts, pattern: the pattern a string literal node (given when made); a
                      * string ts is read as CAST(ts AS TIMESTAMP) (NULL when it is none) */
  WM_RX_REGEXP_EXTRACT, /* s, regex[, group]: ops/wm_rregex.h; the regex a string literal node */
  WM_RX_TO_STR,    /* CAST(number or BOOLEAN AS STRING): 12, 1.5E10 (Java's Double.toString), TRUE */
  WM_RX_TS_TO_STR, /* CAST(TIMESTAMP AS STRING): yyyy-MM-dd HH:mm:ss.SSS */
  WM_RX_FROM_STR,  /* s, to, try: CAST(STRING AS TIMESTAMP[_LTZ] or BOOLEAN), TO_TIMESTAMP: `to`
                    * the type's name and `try` (TRY_CAST: NULL for text that is none) literals */
  WM_RX_PROCTIME,  /* PROCTIME(), no args: the program's clock (wm_rexpr_set_clock) now, ms, an
                    * integer (the Lua path's R_proctime: the operator's processing time) */
  WM_RX_UDF,       /* a user function: its arguments' values given to the host's callback
                    * (made by wm_rexpr_udf only) */
  WM_RX_NOPS
} wm_rx_op;

typedef struct wm_rexpr wm_rexpr;

/* An empty program; NULL on allocation failure. */
wm_rexpr *wm_rexpr_new(void);
void wm_rexpr_free(wm_rexpr *x);

/* Builders: each returns the new node's index (>= 0), or -1 on allocation failure or a bad
 * argument (an index not below the new node's, a wrong count; message in wm_rexpr_error). */
int wm_rexpr_col(wm_rexpr *x, const char *name, const char *sub); /* sub NULL: WM_RX_COL */
int wm_rexpr_lit(wm_rexpr *x, const wm_value *v);                 /* v is copied */
/* where: "file:line:col" for run-time errors (copied; NULL for none). */
int wm_rexpr_op(wm_rexpr *x, wm_rx_op op, const int *args, int nargs, const char *where);
const char *wm_rexpr_error(const wm_rexpr *x);
/* The processing-time clock PROCTIME() reads: now(ud) at each evaluation (ms). A program
 * without one fails on PROCTIME() ("PROCTIME() without a clock"). wm_rproject_new gives its
 * program the context's clock (wm_ctx_now: the wall clock, or the harness's virtual one). */
void wm_rexpr_set_clock(wm_rexpr *x, int64_t (*now)(void *ud), void *ud);

/* A user function a program calls (SQL's `f(args)` of a function written in Lua: the host,
 * bindings/lwm_rexpr.c, calls it with just the arguments' values, no table per row).
 * call(ud, args, nargs, out, err): the arguments are scalars or nil (strings borrowed); it sets
 * *out to a scalar or nil (a string valid until the next call of call: the program copies it)
 * and returns 0, or -1 with the message in *err (and the host's traceback in err's trace part).
 * free(ud) (may be NULL) runs when the program is freed. */
typedef struct wm_rx_udf {
  int (*call)(void *ud, const wm_value *args, int nargs, wm_value *out, wm_error *err);
  void (*free)(void *ud);
  void *ud;
} wm_rx_udf;
/* Adds a WM_RX_UDF node calling u (copied; the program owns u->ud from now on, also on
 * failure) with the values of nodes args. where: the call's place, for messages (copied). */
int wm_rexpr_udf(wm_rexpr *x, const wm_rx_udf *u, const int *args, int nargs, const char *where);
/* The operator called `name` ("add", "eq", ...: the WM_RX_ names in lower case), or -1. */
int wm_rexpr_op_of(const char *name);
int wm_rexpr_count(const wm_rexpr *x);

/* Evaluates node `node` on record rec: *out is a scalar, nil, or a string borrowed from rec
 * or from the program (copy it to keep it): valid until wm_rexpr_reset. Returns 0, or -1
 * with the message in *err (e.g. "q.sql:3:24: division by zero", or a field that cannot be
 * read).
 * Identical subexpressions (same operator, literal or column, and arguments; as the builders
 * find them) are computed once per record: the evaluations on the same rec since the last
 * wm_rexpr_reset share their values, so a caller must reset (or pass another rec) before it
 * evaluates a record whose fields changed in place. */
int wm_rexpr_eval(wm_rexpr *x, int node, const wm_host *h, const wm_value *rec, wm_value *out,
                  wm_error *err);
/* Drops the strings the evaluations since the last reset made (their results are no longer
 * valid): a caller evaluating per record calls it once it has copied what it keeps. */
void wm_rexpr_reset(wm_rexpr *x);
/* How many nodes the evaluations computed so far (a value taken from another occurrence of
 * the same subexpression is not counted; columns and literals are): tests and statistics. */
int64_t wm_rexpr_computed(const wm_rexpr *x);

/* The filter/projection operator. filter: a node index or -1 (no WHERE); out: nout node
 * indexes, one per field of schema (nout == schema->nfields), or schema NULL (no SELECT:
 * records pass unchanged). Takes the program and a reference to the schema (even on
 * failure). NULL on failure with the message in ctx. */
wm_op *wm_rproject_new(wm_ctx *ctx, const char *name, wm_rexpr *x, int filter, const int *out, int nout,
                       wm_schema *schema);
/* An operator of wm_rproject_new that filters and projects in one (the SQL planner's WHERE
 * and SELECT joined, lua/wm/sql/cexpr.lua): an error of its projection names the operator
 * `name` at `where` (the map the planner keeps after it), as the two operators would (each
 * copied; NULL: the operator's own). 0, or -1 (out of memory, in the context's error). */
int wm_rproject_name_projection(wm_op *op, const char *name, const char *where);

/* Makes a wm_rproject_new operator take changes {k = "+I"|"+U"|"-U"|"-D", r = row} (C rows,
 * as the SQL operators in C emit them: the SQL planner's WHERE and SELECT over an updating
 * input): the filter and the projection run on the change's row r; a change that passes is
 * emitted unchanged (filter only) or as the change {k, the projected row}. A record that is not
 * such a change stops the job with a message naming it. 0, or -1 (not such an operator, or
 * out of memory). */
int wm_rproject_changes(wm_op *op);

#endif
