/* Keyed process functions, connected streams and rolling aggregations in the plan (lwm_keyed.c). */
#ifndef LWM_KEYED_H
#define LWM_KEYED_H

#include "lwm.h"

/* keyed:process{...} and rolling aggregations (lwm_keyed.c). */
int lwm_build_keyed(lwm_bridge *B, int node, const char *kind, const char *name,
                    const char *where, wm_op **op);

#endif
