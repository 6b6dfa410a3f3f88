/* The state of an operator for checkpoints: what the snapshot/restore hooks of its vtable
 * (graph/wm_graph.h) receive, and what they promise.
 *
 * snapshot(op, io): appends the operator's own state to io->out. The graph keeps the
 * input watermarks and channel statuses itself; the operator writes what it alone holds
 * (windows, accumulators, timers, the generator's state, a source's position). Called
 * between two calls of the operator's other entries, never from inside one; it does not
 * change the state. The bytes are the operator's own format and start with a version
 * byte. User values (records, accumulators, keys) go through
 * wm_encode_value(io->enc, io->codec, io->out, v, ...), whose host hooks write Lua
 * tables; times and counts as varints (wm_codec_put_ivar / wm_codec_put_uvar).
 *
 * restore(op, io): called at most once, after wm_ctx_prepare and before the first record,
 * with exactly the bytes io->data[0 .. io->len) (borrowed for the call) that a snapshot of
 * the same operator of the same plan wrote; it replaces the state the operator was built
 * with. Values decoded with wm_decode_value(io->dec, &op->ctx->host, io->codec, ...) are
 * then owned by the operator. Truncated, corrupt or other-version bytes are WM_ERR with
 * the reason in op->ctx->error (wm_op_restore adds the operator's name).
 *
 * Both return WM_OK or WM_ERR. The checkpoint code stores each operator instance's bytes as
 * one part of a checkpoint (state/wm_ckpt.h), after the graph's own state of the operator
 * (its input channels, graph/wm_snapshot.h, which snapshots and restores a whole context).
 * An operator with processing-time timers asks ctx->pt_register for them again in restore:
 * set it before restoring. Helpers for the formats: graph/wm_statefmt.h. */
#ifndef WM_STATE_H
#define WM_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_buf.h"
#include "base/wm_codec.h"

/* (also typedef'd in graph/wm_graph.h, which names it in the vtable; C11 allows both) */
typedef struct wm_state_io wm_state_io;
struct wm_state_io {
  wm_buf *out;                /* snapshot: the state is appended here */
  const uint8_t *data;        /* restore: the bytes to read (borrowed) */
  size_t len;
  wm_encoder *enc;            /* snapshot: schemas of rows written so far */
  wm_decoder *dec;            /* restore */
  const wm_codec_host *codec; /* how host (Lua) values are written and read; NULL: none */
  /* Restoring at another parallelism (docs/checkpoints.md, "Key groups and rescaling"),
   * into an operator whose vtable says keyed_state: keep only the keys whose key group of
   * `groups` (base/wm_keygroup.h) is in [kg_first, kg_last] (groups 0: every key), and with
   * merge set add them to what earlier parts of the same restore gave the operator (the
   * parts of several old instances; what is not keyed, e.g. a function's own state, is
   * taken from the first part only). */
  uint32_t groups, kg_first, kg_last;
  int merge;
};

/* Helpers for writing and reading the operators' formats: graph/wm_statefmt.h. */

#endif
