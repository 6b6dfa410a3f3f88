/* Time in the plan (lwm_time.c): timestamp assigners and watermark generators. */
#ifndef LWM_TIME_H
#define LWM_TIME_H

#include "lwm.h"

int lwm_build_time(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op);
/* assign_timestamps_and_watermarks (lwm_time.c); interval is the env's watermark interval. */
wm_op *lwm_build_assign(lwm_bridge *B, int node, const char *name, const char *where,
                        int64_t interval);

#endif
