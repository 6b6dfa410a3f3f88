/* Repartitioning through a partitioned log: key_by(key, {through = {kafka = ...} |
 * {nats = ...}}) (Kafka Streams' repartition; docs/connectors.md, "Repartitioning").
 *
 * The write side is a sink (wm_through_writer_new): writer i of W sends every record to
 * intermediate partition fnv1a32(key as print shows it) mod n, as one message holding
 * the record (record codec: C rows and Lua tables both travel) and its timestamp, with
 * the writer and its sequence number in the message headers and in the message itself;
 * and it sends markers to EVERY partition whenever its input's watermark advances or
 * its status changes: watermark, idle, active, end (the end of its input). Its sequence
 * number is in its checkpoints (the snapshot waits until the log has every message).
 *
 * The read side is a partitioned source (read_kafka / read_nats over the n partitions)
 * with a tap (wm_through_tap_new) between its client and its port: per partition, the
 * watermark is the minimum over the W writers that are neither idle nor ended, and there
 * is none before every writer has been heard of (a message of its own on that
 * partition); a record whose (writer, sequence) was already seen there is dropped (a
 * writer replaying after a restore), counted in --metrics; a partition ends once every
 * writer sent its end, and the source once every partition it reads has ended. The
 * source's watermark is the minimum over its partitions that are neither idle nor ended.
 * The per-writer state is in the source's checkpoints with the positions.
 *
 * Message bytes (both transports): 'w', version 1, kind ('R' record, 'W' watermark, 'I'
 * idle, 'A' active, 'E' end), writer (uvar), W (uvar), sequence (uvar: a record's own
 * number, from 1; a marker's is the writer's record count when it was sent), time (ivar:
 * the record's timestamp or the watermark), then for a record its value (record codec,
 * with its row schema: every message reads on its own), for a marker its number since
 * the writer's last record (uvar, from 1). A marker whose position (sequence, number) is
 * not after the last one read on its partition, or that comes before a record read
 * there, is one a restored writer sends again, and is dropped (a replayed "idle" must
 * not take the writer out of the minimum again). Headers: wm-writer "i/W", wm-seq. */
#ifndef WM_THROUGH_H
#define WM_THROUGH_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_codec.h"
#include "io/wm_conn.h"
#include "io/wm_transport.h"
#include "ops/wm_keys.h"

/* The intermediate topic or stream (made when the job is built: wm_transport_make). */
typedef wm_transport_target wm_through_target;

typedef struct wm_through_writer_config {
  wm_through_target target; /* strings copied */
  wm_keysel key;            /* owned by the writer from now on (also on failure) */
  wm_codec_host codec;      /* how host (Lua) values are written; encode NULL: none */
  int writer, writers;      /* writer i (from 0) of W */
} wm_through_writer_config;

/* The write side's sink, on an ordered transport. Connects here (an unreachable server fails the build, naming
 * the operator). NULL on failure (message in ctx->error). */
wm_op *wm_through_writer_new(wm_ctx *ctx, const char *name, wm_through_writer_config *cfg);

/* The read side's tap over the nparts partitions a source instance reads, written by
 * `writers` writers; codec: how host values are read (decode NULL: none). The caller
 * puts it in the source's wm_partsrc_config. NULL when out of memory. */
wm_partsrc_tap *wm_through_tap_new(int nparts, int writers, const wm_codec_host *codec);

/* Duplicates the taps of ctx's sources have dropped so far (for tests and metrics). */
uint64_t wm_through_duplicates(const wm_op *op);

#endif
