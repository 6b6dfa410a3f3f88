/* Snapshots of a whole prepared context: one named part per operator instance, what the
 * checkpoint coordinator stores with state/wm_ckpt.h (docs/checkpoints.md, "What a
 * checkpoint holds").
 *
 * A part is the graph's own state of the operator, then the operator's (wm_op_snapshot):
 *   uvar length of the graph section
 *   graph section: version, 'G', the operator kind (vt->kind), its input channels (each
 *     one's watermark, idle flag and alignment: the combiner, time/wm_watermark.h), the
 *     combined watermark and status last forwarded into the operator (comb.out, out_idle;
 *     what an operator that forwards, e.g. map, last sent downstream), op->wm, op->ended
 *     and the operator's metrics (records in and out, late drops, parse errors)
 *   the operator's own bytes (graph/wm_state.h; empty for stateless operators)
 * The graph's state is kept by these functions rather than by wm_op_snapshot, so that
 * every operator, stateless ones included, gets it without a hook of its own; what an
 * operator that makes its own watermarks sent downstream (the timestamps operator) is in
 * its own bytes.
 *
 * Part names: "uid-<uid>.<instance>" for an operator given a uid (wm_op_set_uid), else
 * "op-<p>.<instance>" with p the operator's place in the plan (creation order, 0-based).
 * The instance is the caller's (the executor thread's index; 0 with one thread). */
#ifndef WM_SNAPSHOT_H
#define WM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_codec.h"
#include "graph/wm_graph.h"

/* Receives one part; the bytes are borrowed for the call. 0, or -1 with err filled
 * (base/wm_error.h; wm_ctx_snapshot passes its context's). */
typedef int (*wm_part_put_fn)(void *ud, const char *name, const void *data, size_t len,
                              wm_error *err);

typedef struct wm_part {
  const char *name;
  const uint8_t *data;
  size_t len;
} wm_part;

/* The part name of the operator at place pos of its context; 0, or -1 if it does not fit. */
int wm_op_part_name(const wm_op *op, size_t pos, int instance, char *out, size_t n);

/* The graph section of op (appended to b), and its restore from exactly those bytes
 * (refused, with the reason in op->ctx->error, when the kind or the number of input channels
 * differ, or the bytes are damaged). */
int wm_op_snapshot_graph(wm_op *op, wm_buf *b);
int wm_op_restore_graph(wm_op *op, const uint8_t *data, size_t len);

/* Restores op (prepared, freshly built) from the parts of n instances of another
 * parallelism or thread count (docs/checkpoints.md, "Key groups and rescaling"): the graph's
 * state merged (each input channel's watermark the lowest of the parts'; when the number of
 * channels changed, every channel at the lowest of all; idle only when idle in every part;
 * the metrics those of `same`, the part of the instance of op's own number, or zero), then
 * the operator's own state from each part in turn: an operator with keyed state keeps the
 * keys of key groups [first, last] of `groups` from every part; any other takes exactly one
 * part (n > 1 is refused) unless its vtable says merge_parts. WM_OK, or WM_ERR with
 * ctx->error naming the part. */
int wm_op_restore_parts(wm_op *op, const wm_codec_host *codec, const wm_part *const *parts,
                        size_t n, const wm_part *same, uint32_t groups, uint32_t first,
                        uint32_t last);

/* Snapshots every operator of ctx (prepared, between two records) and hands each part to
 * put, in plan order. codec: how host (Lua) values are written (NULL: none). Taking one
 * before the first record checks that every operator can be snapshot (e.g. a custom
 * generator without snapshot hooks is refused). WM_OK, or WM_ERR with ctx->error. */
int wm_ctx_snapshot(wm_ctx *ctx, int instance, const wm_codec_host *codec, wm_part_put_fn put,
                    void *ud);
/* Restores every operator of ctx (prepared, freshly built, before the first record) from
 * parts (the whole checkpoint may be given: parts of other instances, and parts that are
 * not named op-* or uid-*, are ignored). Refused when an operator has no part or a part
 * of this instance names no operator (the plan's shape differs), or a part is refused by
 * its operator. WM_OK, or WM_ERR with ctx->error. */
int wm_ctx_restore(wm_ctx *ctx, int instance, const wm_codec_host *codec, const wm_part *parts,
                   size_t nparts);

#endif
