/* A transport: the writing side of a partitioned log, one interface for Kafka
 * (wm_transport_kafka.c, a librdkafka producer) and NATS JetStream (wm_transport_nats.c,
 * asynchronous publishes), used by write_kafka, write_nats and the repartitioning writer of
 * key_by{through = ...} (wm_through.c), none of which calls a client library itself (the sinks
 * open their own backend, the repartitioning writer either: wm_transport_open.c).
 *
 * What every backend does the same way:
 * - send: a message (value, key, partition or subject, timestamp, headers) handed to the
 *   client without waiting for the server; a full window of unacknowledged messages makes it
 *   wait (backpressure), never fail;
 * - delivery results come back asynchronously; the first failure is kept (t->why) and makes
 *   every later call fail, so the operator reports one message, wm_transport_error's
 *   "<op>: cannot deliver to topic 'x' at <brokers>: <why>" (Kafka) or "<op>: cannot
 *   publish to stream 'X' at <url>: <why>" (NATS);
 * - complete: waits until the server has acknowledged every message sent so far (the end of
 *   input, and every checkpoint: at-least-once), up to a deadline that says what is left.
 *
 * `ordered` (the repartitioning writer: its readers drop a record whose sequence number is
 * not after the last one read) asks that the messages of one partition land in the order
 * sent: Kafka's idempotent producer; on NATS a message the server answered with an error
 * fails the transport rather than being sent again (after later ones), and a publish has no
 * acknowledgement deadline of its own. Otherwise (the
 * sinks) NATS sends again what was not acknowledged within 5 s, with the same headers
 * (write_nats's Nats-Msg-Id de-duplicates), riding out server pauses and restarts until
 * timeout_ms passes without any acknowledgement. */
#ifndef WM_TRANSPORT_H
#define WM_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/wm_graph.h"

enum { WM_TRANSPORT_KAFKA = 1, WM_TRANSPORT_NATS = 2 };

/* What complete waits for (its messages say which). */
enum { WM_TRANSPORT_END = 0, WM_TRANSPORT_CHECKPOINT = 1 };

/* A message's partition when the client chooses it (Kafka's partitioner, by key). */
#define WM_TRANSPORT_ANY (-1)

/* The topic or stream. */
typedef struct wm_transport_target {
  int kind;                  /* WM_TRANSPORT_KAFKA or WM_TRANSPORT_NATS */
  int partitions;            /* n (0: unknown, then every message names its partition or subject) */
  const char *brokers, *topic; /* Kafka */
  const char *const *props;  /* librdkafka properties: name, value, ... */
  int nprops;
  int replication;           /* Kafka: the replication factor of a topic made here (-1: the
                                brokers' default) */
  const char *url, *stream, *subject; /* NATS: partition p is the subject "<subject>.<p>" */
} wm_transport_target;

/* Makes the topic (Kafka admin API, n partitions) or the stream (on "<subject>.*") when it
 * is missing; a Kafka topic with another number of partitions is an error. NATS: *last is
 * the stream's last sequence now (0 when empty). 0, or -1 with err ("cannot reach the
 * Kafka brokers at ...", "topic 'x' on ... has 2 partitions, not 4"). */
int wm_transport_make(const wm_transport_target *t, int timeout_ms, int64_t *last, wm_error *err);

typedef struct wm_transport_config {
  wm_transport_target target; /* strings copied */
  const char *name;           /* the operator's (NATS reports a lost connection with it) */
  const char *label;          /* what the user called ("write_kafka"): named by deadlines */
  int ordered;                /* see above */
  int64_t timeout_ms;         /* NATS: how long without any acknowledgement fails (0: 60 s) */
  const char *const *subjects;/* NATS: the subjects of a stream ensure makes (copied) */
  int nsubjects;
} wm_transport_config;

typedef struct wm_transport_msg {
  const char *data;
  size_t len;
  const char *key;            /* Kafka's message key (NULL: none) */
  size_t keylen;
  int partition;              /* 0..n-1, or WM_TRANSPORT_ANY */
  const char *subject;        /* NATS: the subject (NULL: the partition's) */
  int64_t ts;                 /* Kafka's message timestamp, ms (negative or WM_TIME_MAX: none) */
  const char *const *headers; /* name, value, ... (nheaders strings) */
  int nheaders;
} wm_transport_msg;

typedef struct wm_transport wm_transport;
typedef struct wm_transport_vt {
  /* Makes sure the stream exists before the first message (NATS; Kafka's topic is checked
   * when the job is built): made on cfg.subjects, or the target's subject, or the wildcard
   * of `subject`'s first token ("ev.>"), unless `create` is 0. Waits while the server does
   * not answer, up to the timeout. 0; 1: missing and not made; -1 with err. */
  int (*ensure)(wm_transport *t, const char *subject, int create, wm_error *err);
  /* WM_OK, or WM_ERR with t->why (report it with wm_transport_error). */
  int (*send)(wm_transport *t, const wm_transport_msg *m);
  /* Waits until every message sent is acknowledged. WM_OK, or WM_ERR with t->why. */
  int (*complete)(wm_transport *t, int what);
  void (*free)(wm_transport *t);
} wm_transport_vt;

struct wm_transport {
  const wm_transport_vt *vt;
  const char *verb;           /* "deliver to topic", "publish to stream" */
  char *dest, *server;        /* the topic or stream, the brokers or URL (owned) */
  char *label;                /* (owned) */
  uint64_t written;           /* what the owner has written, restored counts included: the
                                 owner keeps it, messages name it */
  atomic_int failed;          /* set once, also by the client's threads */
  char why[512];              /* written before failed is set */
};

/* Connects (Kafka: makes the producer and learns the topic's leaders; NATS: connects, with
 * a JetStream context for asynchronous publishes). NULL with err ("cannot create a Kafka
 * producer for ...", "cannot connect to nats://...: ...", "out of memory"). */
wm_transport *wm_transport_open(const wm_transport_config *cfg, wm_error *err);

static inline int wm_transport_send(wm_transport *t, const wm_transport_msg *m) { return t->vt->send(t, m); }
static inline int wm_transport_complete(wm_transport *t, int what) { return t->vt->complete(t, what); }
static inline int wm_transport_failed(const wm_transport *t) { return atomic_load(&t->failed); }
/* Closes the connection (no callback after this) and frees t; t may be NULL. */
void wm_transport_free(wm_transport *t);

/* Keeps the first failure: t->why from the format, then the failed flag. */
void wm_transport_fail(wm_transport *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Sets op's error from t's failure: "<op>: cannot <verb> '<dest>' at <server>: <why>".
 * WM_ERR. */
int wm_transport_error(wm_op *op, const wm_transport *t);

/* The backends (wm_transport_open.c chooses by kind). */
wm_transport *wm_transport_kafka_open(const wm_transport_config *cfg, wm_error *err);
wm_transport *wm_transport_nats_open(const wm_transport_config *cfg, wm_error *err);
int wm_transport_kafka_make(const wm_transport_target *t, int timeout_ms, wm_error *err);
int wm_transport_nats_make(const wm_transport_target *t, int64_t *last, wm_error *err);
/* Fills in what every backend shares (strings copied); -1 when out of memory. */
int wm_transport_init(wm_transport *t, const wm_transport_vt *vt, const char *verb, const char *dest,
                      const char *server, const char *label);
/* Frees what wm_transport_init made (not t). */
void wm_transport_fini(wm_transport *t);

#endif
