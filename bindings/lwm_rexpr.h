/* SQL filters and projections in C from the plan (lwm_rexpr.c). */
#ifndef LWM_REXPR_H
#define LWM_REXPR_H

#include "lwm.h"
#include "ops/wm_rexpr.h"

/* The node kind "sql_rows" (wm.sql.cexpr): a wm_rproject operator whose program is read from
 * node.prog ({op =, name =, sub =, value =, args = {1-based indexes}, where =} each), with
 * node.filter (an index or nil), node.out (indexes) and node.names / node.types (the output
 * schema; absent: no projection). Returns 1 when kind is its (*op set, NULL on failure with
 * the message in B->ctx), 0 otherwise. */
int lwm_build_rexpr(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                    wm_op **op);

/* The program in field `field` of the plan node at index `node` (a list of nodes as above,
 * made by wm.sql.cexpr: for other operators' expressions, e.g. aggregate arguments) as a
 * wm_rexpr; *map (owned, *count entries) gives the wm_rexpr node of each 1-based Lua index.
 * NULL with the reason in msg on failure. */
wm_rexpr *lwm_rexpr_read(lwm_bridge *B, int node, const char *field, int **map, int *count, char *msg,
                         size_t msgsz);

#endif
