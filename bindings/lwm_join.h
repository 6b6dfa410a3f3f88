/* The joins' node builders and what wmrun shows of them (lwm_join.c). */
#ifndef LWM_JOIN_H
#define LWM_JOIN_H

#include <stdio.h>

#include "lwm.h"

/* The interval join (node kind "interval_join") and the SQL regular join in C ("sql_join"):
 * returns 1 and sets *op (NULL on failure,
 * message in B->ctx.error) when it knows the kind, else 0. */
int lwm_build_join(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op);
/* h:metrics() fields of a join operator (keys, buffered_left, buffered_right, late_left,
 * late_right, cleanup_timers; the SQL join's keys, rows_left, rows_right, distinct_left,
 * distinct_right) on the table at the top of L's stack; nothing for others. */
void lwm_join_metrics(lua_State *L, const wm_op *op);

#endif
