/* The graph (lwm_graph.c), above the node builders. */
#ifndef LWM_GRAPH_H
#define LWM_GRAPH_H

#include "lwm.h"

/* Builds the whole graph of the env table at env_idx: instances, exchanges, edges.
 * *outop / *outport (caller frees) give, per node id (1..*n), its first instance and port. */
int lwm_build_graph(lwm_bridge *B, int env_idx, wm_op ***outop, int **outport, lua_Integer *n);
/* Builds the operators of an env's plan (the table at env). *outop / *outport (caller
 * frees) give, per node id 1..*n, the operator and port that produce its stream. Sources
 * need B->exec. WM_OK or WM_ERR (message in B->ctx.error). */
int lwm_build(lwm_bridge *B, int env, wm_op ***outop, int **outport, lua_Integer *n);

#endif
