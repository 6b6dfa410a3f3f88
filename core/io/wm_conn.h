/* Connectors to partitioned logs: Kafka (librdkafka) and NATS JetStream (libnats), see
 * docs/connectors.md.
 *
 * Sources read a fixed list of partitions (Kafka: topic/partition; NATS: one subject of a
 * stream each), discovered before the job is built (wm_kafka_partitions,
 * wm_nats_subjects) so that the plan can give every partition its own watermark generator
 * (Flink's per-split watermarks): partition i's records go out on its own output port,
 * where a timestamps/watermarks operator of its own reads them; the partitions' watermarks
 * meet again in a union (the minimum over non-idle partitions, semantics.md §3).
 *
 * Reading order (wm_partsrc.c): a source reads next from the partition whose downstream
 * watermark is lowest. A bounded source waits for that partition's next record rather
 * than read another one, so a replay gives the same output whatever the fetch timing.
 * Watermark alignment pauses partitions that run more than max_drift ahead of their
 * group's minimum.
 *
 * Positions: every partition has a position (Kafka: the offset of the next record to
 * read; NATS: the stream sequence of the next message), reported by wm_partsrc_position
 * for snapshots; no offset is committed or acknowledged while reading: wm_partsrc_commit_to
 * commits a completed checkpoint's (Kafka: asynchronously, the result on the source's thread).
 */
#ifndef WM_CONN_H
#define WM_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"
#include "io/wm_io.h"

/* ---- what every partitioned source shares ----------------------------------------- */

/* Where a source starts. */
enum {
  WM_START_EARLIEST = 0, /* Kafka earliest / NATS "first" */
  WM_START_LATEST = 1,   /* Kafka latest / NATS "new": only what comes after the start */
  WM_START_COMMITTED = 2,/* Kafka: the group's committed offsets (earliest when none);
                            NATS: the durable consumer's position */
  WM_START_TIME = 3,     /* the first record at or after start_value (ms) */
  WM_START_SEQUENCE = 4, /* NATS: stream sequence start_value */
};

typedef struct wm_align_config {
  const char *group;     /* NULL: no alignment */
  int64_t max_drift;     /* ms */
  int64_t interval;      /* ms between checks while every partition waits (default 1000) */
} wm_align_config;

/* A tap between a partitioned source's client and its ports: every message value goes to
 * it instead of downstream, and it emits what the message holds (the repartitioning
 * reader of key_by{through = ...}, io/wm_through.h, which decodes records and watermark
 * markers). Owned by the source from wm_partsrc_new on (freed with it). */
typedef struct wm_partsrc wm_partsrc;
typedef struct wm_partsrc_tap wm_partsrc_tap;
typedef struct wm_partsrc_tap_vt {
  /* The message of partition i: its value (borrowed), timestamp and position. WM_OK/WM_ERR. */
  int (*message)(wm_partsrc_tap *t, wm_partsrc *s, int i, const wm_value *val, int64_t ts,
                 int64_t at);
  /* Partition i's watermark (the reading order reads the lowest first). */
  int64_t (*watermark)(const wm_partsrc_tap *t, int i);
  /* Whether partition i has ended (read no further; the source ends once all have). */
  int (*ended)(const wm_partsrc_tap *t, int i);
  /* Its state, after the positions in the source's checkpoint bytes; restore advances *p. */
  int (*snapshot)(wm_partsrc_tap *t, wm_partsrc *s, wm_buf *out);
  int (*restore)(wm_partsrc_tap *t, wm_partsrc *s, const uint8_t **p, const uint8_t *end);
  /* Lines for --metrics (wm_partsrc_metrics); NULL: none. */
  void (*metrics)(const wm_partsrc_tap *t, const wm_partsrc *s, wm_buf *out);
  void (*free)(wm_partsrc_tap *t);
} wm_partsrc_tap_vt;
struct wm_partsrc_tap {
  const wm_partsrc_tap_vt *vt;
};

typedef struct wm_partsrc_config {
  int nparts;
  const char *const *names; /* "events/0", "ev.a": shown in errors and metrics (copied) */
  const char *const *tags; /* the output port (side-output tag) of each partition, where
                            its own assigner reads it (NULL: all on the main port) */
  int start;             /* WM_START_* */
  int64_t start_value;
  int bounded;           /* read up to the end found at the start, then end */
  int metadata;          /* rows with the record's metadata instead of the value string */
  wm_align_config align;
  wm_partsrc_tap *tap;   /* NULL, or a tap (owned by the source from wm_partsrc_new on) */
} wm_partsrc_config;

/* How many partitions the source has, and partition i's name and position (the offset or
 * sequence of its next record; -1 before the first is known). 0 or -1 if op is not a
 * partitioned source or i out of range. */
int wm_partsrc_count(const wm_op *op);
int wm_partsrc_position(const wm_op *op, int i, const char **name, int64_t *pos);
/* Partition i's lag: the records the server holds past its position (Kafka: the high
 * watermark librdkafka last had from a fetch minus the offset of the next record; NATS: the
 * pending count the last message read carried), read without asking the server. 1 with
 * *records set, 0 when not known (yet), -1 if op is not a partitioned source or i out of
 * range. From op's own thread. */
int wm_partsrc_lag(const wm_op *op, int i, int64_t *records);
/* Commits every partition's position to the server (Kafka: the offsets of the group, as
 * Flink does after each completed checkpoint, for monitoring; NATS: nothing, its positions
 * live in checkpoints only). For the checkpoint coordinator, once a checkpoint holding
 * these positions is complete: it commits the positions of the last snapshot (never
 * one read after it). WM_OK or WM_ERR (message in ctx->error). */
int wm_partsrc_commit(wm_op *op);
/* The same with the failure in *err, and nothing of op's context touched: what the
 * coordinator calls, from whichever thread completed the checkpoint (under its lock, which
 * also covers the snapshots), while op's own thread runs on. Kafka's commit is handed to
 * librdkafka (WM_OK then); its result comes back on op's own thread, a refusal as a warning
 * on stderr, once per source. */
int wm_partsrc_commit_to(wm_op *op, wm_error *err);
/* A start that finds the final checkpoint (nothing left to read): commits the restored
 * positions once more through a client of the source's own, and waits for the answer (at
 * most the source's timeout); the run that wrote the checkpoint may have been killed before
 * the server had its asynchronous commit. WM_OK or WM_ERR (the failure in *err). */
int wm_partsrc_commit_final(wm_op *op, wm_error *err);
/* Appends alignment counters ("alignment: ... paused N times") of every partitioned
 * source of ctx, one line each (for --metrics); nothing when no source aligns. */
void wm_partsrc_metrics(wm_ctx *ctx, wm_buf *out);
/* Whether op is a partitioned source (read_kafka, read_nats). */
int wm_op_is_partsrc(const wm_op *op);
/* Whether op is a partitioned source whose positions a restore at another parallelism may
 * gather from the parts of several old instances (each of its partitions from the part that
 * names it): every one but a tap's (the key_by through a broker of wm.through). */
int wm_partsrc_rescalable(const wm_op *op);

/* ---- Kafka --------------------------------------------------------------------------- */

/* The partitions of a topic, asked of the brokers before the job starts. *n set; returns 0,
 * or -1 with the failure in *err: "topic 'x' does not exist on 127.0.0.1:9092", or "cannot
 * reach the Kafka brokers at ...". props: extra librdkafka properties (name, value, name,
 * value, ...), nprops strings. */
int wm_kafka_partitions(const char *brokers, const char *topic, const char *const *props,
                        int nprops, int timeout_ms, int *n, wm_error *err);

typedef struct wm_kafka_source_config {
  const char *brokers;   /* bootstrap.servers */
  const char *group;     /* group.id (NULL: "wmrun") */
  const char *const *topics;  /* per partition (nparts of them) */
  const int *partitions;      /* per partition */
  const char *const *props;   /* extra librdkafka properties: name, value, ... */
  int nprops;
  int timeout_ms;        /* how long closing waits for the brokers (the last commits); 0: 10 s */
  wm_partsrc_config p;
} wm_kafka_source_config;

/* read_kafka: a source of the partitions in cfg (the ones this instance owns; none: it is
 * idle and, when bounded, ends at once). Creates the consumer here; NULL on failure. */
wm_op *wm_kafka_source_new(wm_io_host *host, const char *name, const wm_kafka_source_config *cfg);

typedef struct wm_kafka_sink_config {
  const char *brokers;
  const char *topic;
  const char *const *props;
  int nprops;
  int format;            /* WM_FMT_* as write_lines */
  wm_formatter custom;   /* format function (owned from now on) */
  const char *key_field; /* the message key: a field of the record, or */
  wm_formatter key;      /* a function (owned), or neither: no key */
  const char *partition_field; /* the partition: an integer field, or */
  wm_formatter partition;      /* a function (owned), or neither: librdkafka's partitioner */
} wm_kafka_sink_config;

/* write_kafka: one message per record (at-least-once). Delivery errors fail the job
 * naming the brokers and topic; the end of input waits until every message is delivered. */
wm_op *wm_kafka_sink_new(wm_ctx *ctx, const char *name, wm_kafka_sink_config *cfg);

/* ---- NATS JetStream ---------------------------------------------------------------- */

/* The subjects of stream `stream` that match `filter` and hold messages now (the source's
 * partitions), sorted; *list is an array of owned strings (free with wm_nats_free_list). A
 * stream without such messages gives the filter itself as the only partition. filter NULL:
 * only checks that the stream exists (*n = 0). 0, or -1 with the failure in *err
 * ("read_nats: stream 'X' does not exist on nats://...", "cannot connect to ..."). */
int wm_nats_subjects(const char *url, const char *stream, const char *filter, int timeout_ms,
                     char ***list, int *n, wm_error *err);
void wm_nats_free_list(char **list, int n);

typedef struct wm_nats_source_config {
  const char *url;
  const char *stream;
  const char *durable;   /* NULL: ephemeral consumers; else "<durable>_<subject>" per subject */
  const char *const *subjects; /* per partition: a subject, or a filter ("ev.3.>": a
                                  partition of read_nats{partition_count = n}, one position,
                                  the stream sequence, for all its subjects) */
  wm_partsrc_config p;
} wm_nats_source_config;

wm_op *wm_nats_source_new(wm_io_host *host, const char *name, const wm_nats_source_config *cfg);

typedef struct wm_nats_sink_config {
  const char *url;
  const char *stream;
  const char *subject;   /* a fixed subject, or */
  wm_formatter subject_fn; /* a function of the record (owned) */
  const char *const *subjects; /* the stream's subjects when it is created */
  int nsubjects;
  int format;
  wm_formatter custom;
  const char *id_prefix; /* Nats-Msg-Id = "<id_prefix>/<instance>/<n>" (n counts records) */
  int instance;
  int64_t timeout_ms;    /* how long without any acknowledgement fails the sink (0: 60 s) */
} wm_nats_sink_config;

/* write_nats: publishes one message per record with a deterministic Nats-Msg-Id, so a
 * replay is de-duplicated by the server within the stream's duplicate window. Creates the
 * stream when it is missing (refuses when a restored checkpoint says it had written to
 * it). Rides out server pauses and restarts by sending again what was not acknowledged,
 * failing only after timeout_ms without any acknowledgement. */
wm_op *wm_nats_sink_new(wm_ctx *ctx, const char *name, wm_nats_sink_config *cfg);

#endif
