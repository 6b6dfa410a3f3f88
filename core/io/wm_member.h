/* Group membership for scale-out (docs/scaleout.md): which partitions of a
 * job's partitioned sources this process owns. A backend (Kafka consumer group:
 * wm_member_kafka.c; NATS static list or JetStream KV leases: wm_member_nats.c) reports
 * "partition X is now yours" (ASSIGN) and "give partition X back" (REVOKE) events; the
 * supervisor (one child process per owned partition) answers a REVOKE with
 * wm_member_release once that partition's child has stopped with its final checkpoint.
 *
 * Partitions are numbered per source, 0..count-1, and named by strings ("events/3" for a
 * Kafka topic, "ev/3" for a NATS stream): the name is what the supervisor logs and uses
 * for the task name.
 *
 * Threads: the supervisor calls every function here from its own (libuv loop) thread.
 * A backend may keep a thread of its own (Kafka polls its consumer on one, so that its
 * rebalance callback can wait for wm_member_release); it then calls cfg->notify from that
 * thread whenever an event waits (the supervisor's uv_async_send), and must be safe to
 * call concurrently with its own thread. The supervisor also calls wm_member_poll every
 * m->poll_ms milliseconds (backends without a thread do their heartbeats there).
 *
 * Stability: s2 builds the NATS backend on this header. Change it only by adding.
 * Added after the first version: wm_member_ops.end and wm_member_ops.foreign (optional, may
 * stay NULL).
 */
#ifndef WM_MEMBER_H
#define WM_MEMBER_H

#include <stddef.h>

#include "base/wm_error.h"

enum {
  WM_MEMBER_ASSIGN = 1, /* partition is ours: start its task */
  WM_MEMBER_REVOKE = 2, /* give it back: stop its task (final checkpoint), then release */
  WM_MEMBER_LOST = 3,   /* it was taken from us (session/lease expired): another process may
                           already run it; kill its task at once, no final checkpoint, and
                           do not release */
};

typedef struct wm_member_event {
  int kind;             /* WM_MEMBER_* */
  int source;           /* index into wm_member_common.sources */
  int partition;        /* 0..counts[source]-1 */
  char name[256];       /* "events/3" */
} wm_member_event;

/* What every backend's configuration starts with (borrowed by the constructor: the
 * backend copies what it keeps). */
typedef struct wm_member_common {
  const char *group;          /* the group (Kafka group.id; NATS: the lease bucket wm_<group>) */
  int nsources;
  const char *const *sources; /* per source: topic (Kafka) / stream (NATS) */
  const int *counts;          /* per source: its partition count */
  void (*notify)(void *arg);  /* called from the backend's thread when an event waits; may be
                                 NULL (then only the periodic poll sees events) */
  void *notify_arg;
} wm_member_common;

typedef struct wm_member wm_member;

typedef struct wm_member_ops {
  const char *kind; /* "kafka", "nats" */
  /* The next event into *ev: 1, 0 when none waits, -1 on a fatal failure (in *err:
     "group 'job1': cannot reach the Kafka brokers at ..."). */
  int (*poll)(wm_member *m, wm_member_event *ev, wm_error *err);
  /* Gives back a partition after its REVOKE (or at the end, any owned partition): 0 or -1
     with the failure in *err. The backend may then hand it to another process. */
  int (*release)(wm_member *m, int source, int partition, wm_error *err);
  /* Leaves the group and frees m. The supervisor has stopped every task first; whatever is
     still owned is released without further events (no REVOKE is reported any more). */
  void (*free)(wm_member *m);
  /* Optional (NULL: not known): the position the partition's next record will get (Kafka:
     its high watermark offset; NATS: the subject's last sequence + 1), asked of the server
     (may block a moment), or -1. For the lag column of --metrics. */
  long long (*end)(wm_member *m, int source, int partition);
  /* Optional (NULL: none is): whether the partition can never be this process's (NATS: it
     is outside its static share). The supervisor's end does not wait for such partitions. */
  int (*foreign)(wm_member *m, int source, int partition);
} wm_member_ops;

/* A backend's object begins with this struct (its first member), so that the supervisor
 * sees every backend the same way. */
struct wm_member {
  const wm_member_ops *ops;
  int poll_ms;                /* call poll at least this often (ms); 0: only after notify */
};

static inline int wm_member_poll(wm_member *m, wm_member_event *ev, wm_error *err) {
  return m->ops->poll(m, ev, err);
}
static inline int wm_member_release(wm_member *m, int source, int partition, wm_error *err) {
  return m->ops->release(m, source, partition, err);
}
static inline void wm_member_free(wm_member *m) {
  if (m) m->ops->free(m);
}

/* ---- Kafka (wm_member_kafka.c) -------------------------------------------------------- */

typedef struct wm_member_kafka_config {
  wm_member_common c;
  const char *brokers;        /* bootstrap.servers */
  const char *const *props;   /* extra librdkafka properties: name, value, ... (the job's) */
  int nprops;
} wm_member_kafka_config;

/* Joins group c.group on the topics c.sources (subscribe, cooperative-sticky); the
 * consumer never fetches records (its partitions stay paused) and never commits. NULL with
 * the failure in *err. */
wm_member *wm_member_kafka_new(const wm_member_kafka_config *cfg, wm_error *err);

/* ---- NATS (wm_member_nats.c, helper s2) ---------------------------------------------- */

typedef struct wm_member_nats_config {
  wm_member_common c;          /* c.sources: the streams; partition p of stream S is "S/p" */
  const char *url;             /* the NATS server (not needed when every source is static) */
  const char *const *partitions; /* per source: a static share ("0-3", "0,2,5": this process
                                  runs exactly those, no leases) or NULL (leases); the array
                                  itself may be NULL (all leased) */
  long long lease_ms;          /* lease time = the TTL of a new bucket (0: 10000); an existing
                                  bucket keeps its own TTL, which is then the lease time */
  long long heartbeat_ms;      /* how often leases are renewed and shares recomputed (0: a
                                  quarter of the lease time) */
  const char *member;          /* this process's name in the bucket (NULL: host-pid-random) */
  const char *const *subjects; /* per source (or NULL): the read_nats subject filter, whose
                                  first '*' token is the partition number ("ev.*.>"), for the
                                  end op (the lag in --metrics) */
} wm_member_nats_config;

/* Static shares are assigned at once (ASSIGN events, never revoked). Leased sources: the
 * JetStream key-value bucket wm_<c.group> (created when missing, its TTL the lease time)
 * holds one key per live member ("member.<name>", renewed every heartbeat) and one per
 * owned partition ("part.<stream>.<p>", its value the owner): a partition is acquired by
 * creating its key, kept by updating it on its last revision (compare-and-set) every
 * heartbeat, and released by a delete on that revision. Each member keeps at most
 * ceil(partitions / live members) of every source (REVOKE for the extras when members
 * join) and takes free partitions up to that share; a member that stops renewing loses
 * its keys when they expire (TTL), and the others take them over. A lease that could not
 * be renewed (taken by another, or expired while the server was unreachable) is reported
 * LOST. Everything runs in wm_member_poll (poll_ms: a tenth of the heartbeat), on the
 * caller's thread: no thread of its own. With a url it connects (also for static shares,
 * for the end op). NULL with the failure in *err ("group 'job1': cannot connect to
 * nats://...: ...") on failure. */
wm_member *wm_member_nats_new(const wm_member_nats_config *cfg, wm_error *err);

#endif
