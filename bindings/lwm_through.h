/* Repartitioning through Kafka or NATS in the plan (lwm_through.c). */
#ifndef LWM_THROUGH_H
#define LWM_THROUGH_H

#include "lwm.h"

/* Repartitioning (lwm_through.c): the writer sink (node kind "through_write"), the tap of a
 * read_kafka / read_nats node that reads an intermediate topic (node.through_writers set;
 * WM_OK and p untouched otherwise), and wm.core.through_ensure(target). */
int lwm_build_through(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                      wm_op **op);
struct wm_partsrc_config;
int lwm_through_read_tap(lwm_bridge *B, int node, struct wm_partsrc_config *p);
int lwm_through_ensure(lua_State *L);

#endif
