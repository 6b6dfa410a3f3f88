/* SQL lookup joins in C (docs/sql.md, "Lookup joins"): `JOIN side FOR SYSTEM_TIME AS OF
 * o.proc_time AS s ON <left expression> = s.k [AND ...]` against a bounded table read whole,
 * as the Lua path (lua/wm/sql/plan/temporal_join.lua, Planner:lookup_join) runs it, row for
 * row and in the same order:
 *   - the side table is read (spec.load) at the first probe row and again at the first probe
 *     row once `ttl` ms have passed since (the processing-time clock, wm_ctx_now); its rows
 *     are kept in a hash table by their key (the key columns' values), rows with a NULL key
 *     part left out;
 *   - a probe row's key is its key expressions (a wm_rexpr program over the row); it meets the
 *     side rows of its key in the table's order: one joined row each, emitted with the probe
 *     row's timestamp. A NULL key part meets nothing; LEFT (spec.outer): a row that meets
 *     nothing is emitted with the side's columns NULL;
 *   - keys are the Lua path's key strings (temporal_join.lua, key_part): a number is its
 *     integer when it is integral (math.tointeger: 1 = 1.0, -0.0 = 0), else its text
 *     (tostring, "%.14g"); strings by bytes; booleans; a number never meets a string.
 * No state is checkpointed (the Lua path's neither): a restored job reads the table again
 * at its first probe row. */
#ifndef WM_SQLLOOKUP_H
#define WM_SQLLOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "graph/wm_graph.h"
#include "ops/wm_rexpr.h"

/* Reads the side table: *vals an array of nrows * nfields owned values (row i's column j at
 * i * nfields + j, nil for a missing one; malloc'd, the operator frees it), the columns
 * being spec.fields. 0, or -1 with the reason in *err (the context's error: the operator
 * adds itself, the probe row and a line saying it was reading the table). */
typedef int (*wm_sqllookup_load)(void *ud, wm_value **vals, size_t *nrows, wm_error *err);

typedef struct wm_sqllookup_spec {
  const char *table;         /* the side table's name (messages) */
  size_t nkeys;              /* >= 1 */
  wm_rexpr *x;               /* the probe row's key program (taken, freed even on failure) */
  const int *lkey;           /* nkeys node indexes of x */
  size_t nfields;
  const char *const *fields; /* the side's columns */
  const size_t *rkey;        /* nkeys indexes into fields */
  size_t nout;               /* the joined row's columns */
  const char *const *out_names;
  const uint8_t *out_types;  /* wm_ftype each (NULL: WM_FT_ANY) */
  const uint8_t *out_side;   /* 0: the probe row's field out_lfield[i]; 1: side column out_rfield[i] */
  const char *const *out_lfield;
  const size_t *out_rfield;
  int outer;                 /* LEFT JOIN */
  int64_t ttl;               /* ms >= 0: read the table again after that long (0: at every
                              * probe row with a key, as the Lua path) */
  wm_sqllookup_load load;
  void *load_ud;
  void (*load_free)(void *ud); /* frees load_ud with the operator (NULL: nothing) */
} wm_sqllookup_spec;

/* The operator (names copied). NULL on failure (message in ctx->error; spec->x and load_ud
 * freed). */
wm_op *wm_sqllookup_new(wm_ctx *ctx, const char *name, const wm_sqllookup_spec *spec);
bool wm_op_is_sqllookup(const wm_op *op);
/* The rows of the side table read last, and how many times it was read (tests, metrics). */
size_t wm_sqllookup_rows(const wm_op *op);
uint64_t wm_sqllookup_loads(const wm_op *op);

#endif
