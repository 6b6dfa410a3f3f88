/* Window join and co-group in the plan (lwm_wjoin.c; docs/joins.md). */
#ifndef LWM_WJOIN_H
#define LWM_WJOIN_H

#include "lwm.h"

/* The "join_tag" node of each input: 1 and *op set (NULL on failure, message in B->ctx.error)
 * when it knows the node kind, 0 when it does not (as every area's builder, lwm_io.h). */
int lwm_build_wjoin(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                    wm_op **op);
/* The window function of a window node of fn_kind "join" / "co_group" (oi->fn: the user's
 * function; takes oi, freed on failure); 0 or -1. */
int lwm_winfn_wjoin(wm_winfn *fn, lwm_opinfo *oi, int cogroup);

#endif
