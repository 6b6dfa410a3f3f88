/* A SQL windowed GROUP BY's window function in C, from its plan node (lwm_sqlagg.c). */
#ifndef LWM_SQLAGG_H
#define LWM_SQLAGG_H

#include "lwm.h"
#include "ops/wm_sqlagg.h"

/* Makes fn from node's `sqlagg` table (changelog: an unwindowed GROUP BY's rolling function,
 * wm_keyedfn_sqlagg), and meaning (n bytes) what its state means (the checkpoint's check on
 * resume); WM_OK, or WM_ERR with ctx.error set. */
int lwm_winfn_sqlagg(lwm_bridge *B, int node, const char *where, wm_winfn *fn, char *meaning,
                     size_t n, int changelog);

#endif
