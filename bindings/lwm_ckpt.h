/* Checkpoints of a bridge's context with the bindings' codec (lwm_ckpt.c). */
#ifndef LWM_CKPT_H
#define LWM_CKPT_H

#include "lwm.h"

/* Checkpoints of B's prepared context with the bindings' codec (lwm_ckpt.c): pushes the
 * parts of a snapshot as a table {[part name] = bytes}; restores from such a table at idx
 * (before the first record). WM_OK, or WM_ERR with the message in B->ctx.error (nothing
 * pushed). instance: as for wm_ctx_snapshot (the executor thread's index, 0 on one). */
int lwm_snapshot_parts(lwm_bridge *B, int instance);
int lwm_restore_parts(lwm_bridge *B, int instance, int idx);
/* wm.core._checkpoint_sources(env[, positions]) -> positions: the specs' way to the sources'
 * positions before the coordinator runs whole jobs (lwm_ckpt.c). */
int lwm_checkpoint_sources(lua_State *L);

#endif
