/* Restoring a checkpoint at another parallelism or thread count (docs/checkpoints.md, "Key
 * groups and rescaling"), Flink's rules:
 *   - keyed state (an operator whose vtable says keyed_state: windows, window joins,
 *     keyed process functions, interval joins) by key group: instance i of p takes, from every old instance whose range
 *     of key groups meets its own, the keys of its range (graph/wm_snapshot.h,
 *     wm_op_restore_parts);
 *   - an operator whose vtable says merge_parts (a timestamp assigner) restores, at another
 *     parallelism, from the parts of every old instance (the lowest watermark of them all);
 *   - any other operator keeps its instance's state when its parallelism did not change;
 *     when it did, an operator without state of its own (map, filter, print, ...) starts
 *     with the input watermarks of the old instance of its number (or the first) and
 *     forwards anew from them (nothing forwarded yet, not ended), and one with state is
 *     refused, naming it
 *     (a pre-aggregation before a window too: its partials are of any key);
 *   - a source keeps its instance's position when its parallelism did not change; at
 *     another, a partitioned source (read_kafka, read_nats) takes each partition's position
 *     from the old part that names it, and any other source is refused (the sources are
 *     checked before any operator is restored);
 *   - the operators on one partition's path (its forward operators and its timestamp
 *     assigner, wm_op.part_path) take, in every new instance, the state of the old
 *     instance that read the partition, and the channels those assigners feed start at
 *     the watermark and status the assigner restored with;
 *   - the executor's own operators (exchanges, senders and receivers between threads)
 *     start anew;
 *   - the records in flight between threads at the cut (chan-F-T parts) go, on one thread,
 *     to the operator that feeds the channel they were sent on: a key_by exchange routes
 *     each record to the instance that owns its key group now; a watermark or status in
 *     flight goes to its channel only when what feeds the channel kept its parallelism
 *     (else another instance feeds channel N now: dropped, the new one forwards its own).
 * The MANIFEST's "part" lines say where each part's operator is in the plan (wm_op.node,
 * role, subtask, nsub). Nothing here is global; errors go to ctx->error. */
#ifndef WM_RESCALE_H
#define WM_RESCALE_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_buf.h"
#include "base/wm_codec.h"
#include "graph/wm_graph.h"
#include "graph/wm_snapshot.h"

typedef struct wm_rescale wm_rescale;

/* Appends the MANIFEST line "part <prefix><name> NODE ROLE SUBTASK NSUB" of op (at place
 * `place` of thread `thread`'s plan): where the part's operator is in the job's plan. */
void wm_rescale_meta_line(wm_buf *m, const char *prefix, const wm_op *op, size_t place,
                          int thread);

/* The "part" lines of a checkpoint's MANIFEST text (meta), over its parts (borrowed: they
 * must outlive the result). NULL with err filled (base/wm_error.h; NULL: no message wanted). */
wm_rescale *wm_rescale_new(const char *meta, size_t mlen, const wm_part *parts, size_t np,
                           wm_error *err);
void wm_rescale_free(wm_rescale *r);

/* 1 when the ordinary restore (wm_ctx_restore: parts by name) fits: the same number of
 * threads, and every operator of ctx that has a place in the plan has a part of its own
 * identity under the name it would write now. */
int wm_rescale_same(const wm_rescale *r, const wm_ctx *ctx, int thread, int threads_then,
                    int threads_now);

/* Restores every operator of ctx (prepared, freshly built) by the rules above, with the
 * job's key groups. WM_OK, or WM_ERR with ctx->error. */
int wm_rescale_restore(wm_rescale *r, wm_ctx *ctx, const wm_codec_host *codec, uint32_t groups);

/* The parts that hold source src's position, *n of them in *out (malloc'ed: free it):
 * src-<name> of the same instance at the same parallelism; at another, for a partitioned
 * source (wm_partsrc_rescalable), the parts of every old instance, each naming its
 * partitions' positions, of which src restores those of the partitions it reads now.
 * WM_OK, or WM_ERR with ctx->error saying why (any other source at another parallelism). */
int wm_rescale_source(wm_rescale *r, wm_ctx *ctx, const wm_op *src, const wm_part ***out,
                      size_t *n);

/* Whether the checkpoint holds records in flight between threads (chan-* parts). */
int wm_rescale_has_channels(const wm_rescale *r);

/* Replays every channel state of the checkpoint into ctx, which runs the whole job on one
 * thread (after wm_rescale_restore, before the run). WM_OK, or WM_ERR with ctx->error. */
int wm_rescale_replay(wm_rescale *r, wm_ctx *ctx, const wm_codec_host *codec);

#endif
