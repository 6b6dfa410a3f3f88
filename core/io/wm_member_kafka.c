/* Group membership on a Kafka consumer group (wm_member.h): a consumer subscribed to the
 * job's topics with the cooperative-sticky assignor, that never fetches a record (its
 * partitions are paused as soon as they are assigned) and never commits. It is polled on a
 * thread of its own, so that its rebalance callback can wait, on that thread, until the
 * supervisor has stopped the task of every revoked partition (wm_member_release) before
 * it gives them up with an incremental unassign: a partition is never read by two tasks.
 * Partitions lost (the session expired) are unassigned at once and reported as LOST. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "io/wm_kafka.h"
#include "io/wm_member.h"

#define POLL_MS 100

typedef struct ev_queue {
  wm_member_event *v;
  size_t head, n, cap;
} ev_queue;

typedef struct kmember {
  wm_member m; /* first */
  rd_kafka_t *rk;
  wm_member_common c;
  char *group;
  char **sources; /* owned copies */
  int *counts;
  char *brokers;
  unsigned char **pending; /* per source, per partition: revoked, not yet released */
  uv_thread_t thread;
  int thread_started;
  uv_mutex_t mu;
  uv_cond_t cond;
  ev_queue q;      /* under mu */
  int stop;        /* under mu: the thread leaves the group and ends */
  int closing;     /* under mu: revokes are given up at once */
  int fatal;       /* under mu */
  char fatal_msg[1024];
} kmember;

static int source_of(const kmember *k, const char *topic) {
  for (int i = 0; i < k->c.nsources; i++)
    if (strcmp(k->sources[i], topic) == 0) return i;
  return -1;
}

/* Under mu. 0, or -1 when out of memory (then the failure is fatal). */
static int push_event(kmember *k, int kind, int source, int partition) {
  ev_queue *q = &k->q;
  if (q->head == q->n) q->head = q->n = 0;
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 16;
    wm_member_event *nv = realloc(q->v, cap * sizeof *nv);
    if (!nv) {
      k->fatal = 1;
      snprintf(k->fatal_msg, sizeof k->fatal_msg, "group '%s': out of memory", k->group);
      return -1;
    }
    q->v = nv;
    q->cap = cap;
  }
  wm_member_event *e = &q->v[q->n++];
  e->kind = kind;
  e->source = source;
  e->partition = partition;
  snprintf(e->name, sizeof e->name, "%s/%d", k->sources[source], partition);
  return 0;
}

static void set_fatal(kmember *k, const char *what, rd_kafka_error_t *err) {
  uv_mutex_lock(&k->mu);
  if (!k->fatal) {
    k->fatal = 1;
    snprintf(k->fatal_msg, sizeof k->fatal_msg, "group '%s' at %s: %s: %s", k->group, k->brokers, what,
             err ? rd_kafka_error_string(err) : "failed");
  }
  uv_mutex_unlock(&k->mu);
}

/* Whether every partition of l that is ours waits for no release. Under mu. */
static int all_released(const kmember *k, const rd_kafka_topic_partition_list_t *l) {
  for (int i = 0; i < l->cnt; i++) {
    int s = source_of(k, l->elems[i].topic);
    int p = l->elems[i].partition;
    if (s >= 0 && p >= 0 && p < k->counts[s] && k->pending[s][p]) return 0;
  }
  return 1;
}

/* On the member's thread, inside rd_kafka_consumer_poll. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *l,
                         void *opaque) {
  kmember *k = opaque;
  rd_kafka_error_t *e = NULL;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    /* the consumer must fetch nothing: paused before the fetcher starts (and whatever it
     * fetched anyway is dropped by the poll loop) */
    for (int i = 0; i < l->cnt; i++) l->elems[i].offset = RD_KAFKA_OFFSET_END;
    e = rd_kafka_incremental_assign(rk, l);
    if (e) {
      set_fatal(k, "cannot take the assigned partitions", e);
      rd_kafka_error_destroy(e);
      return;
    }
    rd_kafka_pause_partitions(rk, l);
    uv_mutex_lock(&k->mu);
    for (int i = 0; i < l->cnt; i++) {
      int s = source_of(k, l->elems[i].topic);
      int p = l->elems[i].partition;
      if (s >= 0 && p >= 0 && p < k->counts[s]) push_event(k, WM_MEMBER_ASSIGN, s, p);
    }
    uv_mutex_unlock(&k->mu);
    if (k->c.notify) k->c.notify(k->c.notify_arg);
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    int lost = rd_kafka_assignment_lost(rk);
    uv_mutex_lock(&k->mu);
    int wait = !lost && !k->closing;
    for (int i = 0; i < l->cnt; i++) {
      int s = source_of(k, l->elems[i].topic);
      int p = l->elems[i].partition;
      if (s < 0 || p < 0 || p >= k->counts[s] || k->closing) continue;
      push_event(k, lost ? WM_MEMBER_LOST : WM_MEMBER_REVOKE, s, p);
      if (wait) k->pending[s][p] = 1;
    }
    uv_mutex_unlock(&k->mu);
    if (k->c.notify) k->c.notify(k->c.notify_arg);
    /* a revoked partition is given up only once its task has stopped */
    uv_mutex_lock(&k->mu);
    while (wait && !k->closing && !all_released(k, l)) uv_cond_wait(&k->cond, &k->mu);
    for (int i = 0; i < l->cnt; i++) {
      int s = source_of(k, l->elems[i].topic);
      int p = l->elems[i].partition;
      if (s >= 0 && p >= 0 && p < k->counts[s]) k->pending[s][p] = 0;
    }
    uv_mutex_unlock(&k->mu);
    e = rd_kafka_incremental_unassign(rk, l);
    if (e) {
      set_fatal(k, "cannot give back the revoked partitions", e);
      rd_kafka_error_destroy(e);
    }
    return;
  }
  /* an error of the group protocol */
  uv_mutex_lock(&k->mu);
  if (!k->fatal) {
    k->fatal = 1;
    snprintf(k->fatal_msg, sizeof k->fatal_msg, "group '%s' at %s: rebalance failed: %s", k->group,
             k->brokers, rd_kafka_err2str(err));
  }
  uv_mutex_unlock(&k->mu);
  if (k->c.notify) k->c.notify(k->c.notify_arg);
}

static void run(void *arg) {
  kmember *k = arg;
  for (;;) {
    uv_mutex_lock(&k->mu);
    int stop = k->stop;
    uv_mutex_unlock(&k->mu);
    if (stop) break;
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(k->rk, POLL_MS);
    if (!msg) continue;
    if (msg->err && msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      /* a fatal consumer error ends membership; others (a broker down for a while) are
       * retried by librdkafka */
      char why[512];
      if (rd_kafka_fatal_error(k->rk, why, sizeof why)) {
        uv_mutex_lock(&k->mu);
        if (!k->fatal) {
          k->fatal = 1;
          snprintf(k->fatal_msg, sizeof k->fatal_msg, "group '%s' at %s: %.300s", k->group, k->brokers, why);
        }
        uv_mutex_unlock(&k->mu);
        if (k->c.notify) k->c.notify(k->c.notify_arg);
      }
    }
    rd_kafka_message_destroy(msg); /* records are the tasks' to read */
  }
  /* leaving: the revoke this triggers is given up at once (closing) */
  rd_kafka_consumer_close(k->rk);
}

static int km_poll(wm_member *m, wm_member_event *ev, wm_error *err) {
  kmember *k = (kmember *)m;
  uv_mutex_lock(&k->mu);
  int rc = 0;
  if (k->q.head < k->q.n) {
    *ev = k->q.v[k->q.head++];
    rc = 1;
  } else if (k->fatal) {
    wm_error_set(err, "%s", k->fatal_msg);
    rc = -1;
  }
  uv_mutex_unlock(&k->mu);
  return rc;
}

static int km_release(wm_member *m, int source, int partition, wm_error *err) {
  kmember *k = (kmember *)m;
  if (source < 0 || source >= k->c.nsources || partition < 0 || partition >= k->counts[source]) {
    wm_error_set(err, "group '%s': no partition %d of source %d", k->group, partition, source);
    return -1;
  }
  uv_mutex_lock(&k->mu);
  k->pending[source][partition] = 0;
  uv_cond_broadcast(&k->cond);
  uv_mutex_unlock(&k->mu);
  return 0;
}

static void km_free(wm_member *m) {
  kmember *k = (kmember *)m;
  if (k->thread_started) {
    uv_mutex_lock(&k->mu);
    k->stop = 1;
    k->closing = 1;
    uv_cond_broadcast(&k->cond);
    uv_mutex_unlock(&k->mu);
    uv_thread_join(&k->thread);
  }
  if (k->rk) rd_kafka_destroy(k->rk);
  if (k->pending)
    for (int i = 0; i < k->c.nsources; i++) free(k->pending[i]);
  free(k->pending);
  if (k->sources)
    for (int i = 0; i < k->c.nsources; i++) free(k->sources[i]);
  free(k->sources);
  free(k->counts);
  free(k->group);
  free(k->brokers);
  free(k->q.v);
  uv_cond_destroy(&k->cond);
  uv_mutex_destroy(&k->mu);
  free(k);
}

static long long km_end(wm_member *m, int source, int partition) {
  kmember *k = (kmember *)m;
  if (source < 0 || source >= k->c.nsources) return -1;
  int64_t lo, hi;
  if (rd_kafka_query_watermark_offsets(k->rk, k->sources[source], partition, &lo, &hi, 2000))
    return -1;
  return (long long)hi;
}

static const wm_member_ops kafka_ops = {
    .kind = "kafka", .poll = km_poll, .release = km_release, .free = km_free, .end = km_end};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

wm_member *wm_member_kafka_new(const wm_member_kafka_config *cfg, wm_error *err) {
  kmember *k = calloc(1, sizeof *k);
  if (!k) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  if (uv_mutex_init(&k->mu) != 0) {
    free(k);
    wm_error_set(err, "cannot create a mutex");
    return NULL;
  }
  if (uv_cond_init(&k->cond) != 0) {
    uv_mutex_destroy(&k->mu);
    free(k);
    wm_error_set(err, "cannot create a condition variable");
    return NULL;
  }
  k->m.ops = &kafka_ops;
  k->m.poll_ms = 0;
  k->c = cfg->c;
  int n = cfg->c.nsources;
  k->group = dup_str(cfg->c.group);
  k->brokers = dup_str(cfg->brokers);
  k->sources = calloc((size_t)(n > 0 ? n : 1), sizeof *k->sources);
  k->counts = calloc((size_t)(n > 0 ? n : 1), sizeof *k->counts);
  k->pending = calloc((size_t)(n > 0 ? n : 1), sizeof *k->pending);
  int oom = !k->group || !k->brokers || !k->sources || !k->counts || !k->pending;
  for (int i = 0; !oom && i < n; i++) {
    k->sources[i] = dup_str(cfg->c.sources[i]);
    k->counts[i] = cfg->c.counts[i];
    k->pending[i] = calloc((size_t)(k->counts[i] > 0 ? k->counts[i] : 1), 1);
    oom = !k->sources[i] || !k->pending[i];
  }
  if (oom) {
    k->c.nsources = k->sources ? n : 0;
    km_free(&k->m);
    wm_error_set(err, "out of memory");
    return NULL;
  }
  static const char *const sets[] = {"group.id", NULL,
                                     "partition.assignment.strategy", "cooperative-sticky",
                                     "enable.auto.commit", "false",
                                     "enable.auto.offset.store", "false",
                                     "enable.partition.eof", "false"};
  const char *s[sizeof sets / sizeof sets[0]];
  memcpy(s, sets, sizeof s);
  s[1] = k->group;
  wm_error ce;
  rd_kafka_conf_t *conf = wm_kafka_conf(k->brokers, s, (int)(sizeof s / sizeof s[0]), cfg->props,
                                        cfg->nprops, &ce);
  if (!conf) {
    wm_error_set(err, "group '%s': %s", k->group, ce.msg);
    km_free(&k->m);
    return NULL;
  }
  /* the group's own settings win over the job's properties */
  char e[512];
  for (size_t i = 0; i + 1 < sizeof s / sizeof s[0]; i += 2)
    rd_kafka_conf_set(conf, s[i], s[i + 1], e, sizeof e);
  rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
  rd_kafka_conf_set_opaque(conf, k);
  k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
  if (!k->rk) {
    rd_kafka_conf_destroy(conf);
    wm_error_set(err, "group '%s': cannot create a Kafka consumer for %s: %s", k->group, k->brokers, e);
    km_free(&k->m);
    return NULL;
  }
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n > 0 ? n : 1);
  if (!l) {
    wm_error_set(err, "out of memory");
    km_free(&k->m);
    return NULL;
  }
  for (int i = 0; i < n; i++) rd_kafka_topic_partition_list_add(l, k->sources[i], RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t re = rd_kafka_subscribe(k->rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (re) {
    wm_error_set(err, "group '%s': cannot subscribe at %s: %s", k->group, k->brokers, rd_kafka_err2str(re));
    km_free(&k->m);
    return NULL;
  }
  if (uv_thread_create(&k->thread, run, k) != 0) {
    wm_error_set(err, "group '%s': cannot start the membership thread", k->group);
    km_free(&k->m);
    return NULL;
  }
  k->thread_started = 1;
  return &k->m;
}
