/* SQL lookup joins in C from the plan (lwm_sqllookup.c). */
#ifndef LWM_SQLLOOKUP_H
#define LWM_SQLLOOKUP_H

#include "lwm.h"

/* The node kind "sql_lookup" (lua/wm/sql/plan/temporal_join.lua): a wm_sqllookup operator.
 * Returns 1 when kind is its (*op set, NULL on failure with the message in B->ctx), 0
 * otherwise. */
int lwm_build_sqllookup(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                        wm_op **op);

/* The harness's metrics of a lookup join (fields of the table on top): rows (the side table's,
 * read last) and loads (how many times it was read). Nothing for another operator. */
void lwm_sqllookup_metrics(lua_State *L, const wm_op *op);

#endif
