/* A SQL deduplication's or Top-N's rolling function in C, from its plan node (lwm_sqlrank.c). */
#ifndef LWM_SQLRANK_H
#define LWM_SQLRANK_H

#include "lwm.h"
#include "ops/wm_sqlrank.h"

/* Makes fn from node's `sqldedup` table, and meaning (n bytes) what its state means (the
 * checkpoint's check on resume); WM_OK, or WM_ERR with ctx.error set. */
int lwm_winfn_sqldedup(lwm_bridge *B, int node, const char *where, wm_winfn *fn, char *meaning,
                       size_t n);

/* The same for a Top-N from node's `sqltopn` table. */
int lwm_winfn_sqltopn(lwm_bridge *B, int node, const char *where, wm_winfn *fn, char *meaning,
                      size_t n);

#endif
