/* Sources, sinks and parsers in the plan (lwm_io.c). Like every area's node builder
 * (lwm_window.h, lwm_time.h, lwm_keyed.h, lwm_conn.h, lwm_through.h), lwm_build_io returns 1
 * and sets *op (NULL on failure, with the message in B->ctx.error) when it knows the node
 * kind, and 0 when it does not. */
#ifndef LWM_IO_H
#define LWM_IO_H

#include "lwm.h"

int lwm_build_io(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                 wm_op **op);

#endif
