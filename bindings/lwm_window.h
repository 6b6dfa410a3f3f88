/* Windows in the plan (lwm_window.c): the window operator, its local pre-aggregation. */
#ifndef LWM_WINDOW_H
#define LWM_WINDOW_H

#include "lwm.h"

/* LWM_PRE_REDUCE, LWM_PRE_AGG: a Lua reduce, a Lua aggregate with merge (their partials
 * are {key, acc}, acc the reduced record or the accumulator; a record late for its part
 * crosses as its own partial) */
enum { LWM_PRE_FIRST = 1, LWM_PRE_COUNT = 2, LWM_PRE_REDUCE = 3, LWM_PRE_AGG = 4 };
/* The local pre-aggregation (kind LWM_PRE_*) of window node `node` for one upstream instance
 * (lwm_graph.c): the same assigner, key and function (Lua ones without their process
 * function, emitting partials), no lateness, and records that are late for it emitted on
 * port *late_port (sum, min, max) or as partials of one record (count, reduce, aggregate;
 * *late_port 0) instead of dropped. NULL on failure (ctx.error). */
wm_op *lwm_build_preagg(lwm_bridge *B, int node, int kind, const char *name, const char *where,
                        int *late_port);
int lwm_build_windows(lwm_bridge *B, int node, const char *kind, const char *name,
                      const char *where, wm_op **op);
/* What the state of a Lua reduce or aggregate function of the plan node at idx means, for the
 * checks of a resume (wm_winop_config.meaning); "" for other kinds (fk). */
void lwm_fn_meaning(lua_State *L, int idx, const char *fk, char *out, size_t n);

#endif
