/* Operators implemented with Lua calls, and the Lua parts of core operators (lwm_ops.c). */
#ifndef LWM_OPS_H
#define LWM_OPS_H

#include "lwm.h"

/* Each returns NULL on failure. */
wm_op *lwm_map_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int kind);
wm_op *lwm_sink_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int collect);
wm_op *lwm_pass_new(lwm_bridge *B, const char *name);
/* vt->free of operators whose impl is (or starts with) an lwm_opinfo. */
void lwm_op_free_info(wm_op *op);
/* A source operator whose impl starts with oi (owned from now on, freed on failure): creates
 * it, points oi->op at it and registers its driver. NULL on failure (message in ctx.error). */
wm_op *lwm_source_new(lwm_bridge *B, const wm_op_vt *vt, lwm_opinfo *oi, const char *name,
                      const wm_source_vt *svt);
wm_op *lwm_elements_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, lua_Integer count);
int lwm_tsx_lua(wm_tsx *x, lwm_opinfo *oi);
int lwm_keysel_lua(wm_keysel *ks, lwm_opinfo *oi);
/* A window function in Lua; pfn: the process function of reduce/aggregate (0: none). */
int lwm_winfn_lua(wm_winfn *fn, lwm_opinfo *oi, const char *kind, int pfn);
/* The same for a pre-aggregated window (docs/performance.md, "Pre-aggregation"), mode
 * LWM_WL_PARTIAL: the local operator of a part, which emits the partial {key, acc} (acc
 * the reduced record, or the accumulator, not result(acc)); LWM_WL_MERGE: the window,
 * which folds the partials' acc of each channel apart and the channels in order at its
 * firing (reduce: with fn, aggregate: with merge, then result). */
enum { LWM_WL_PLAIN = 0, LWM_WL_PARTIAL = 1, LWM_WL_MERGE = 2 };
int lwm_winfn_lua_pre(wm_winfn *fn, lwm_opinfo *oi, const char *kind, int pfn, int mode);
/* Pushes a window as a table {start, stop, max_timestamp}. */
void lwm_push_window(lua_State *L, wm_window win, int64_t max_ts);
lwm_opinfo *lwm_opinfo_new(lwm_bridge *B, const char *where);
void lwm_opinfo_free(void *ud);

enum { LWM_MAP = 1, LWM_FILTER, LWM_FLAT_MAP };

#endif
