/* The Kafka transport (wm_transport.h): a librdkafka producer, and making the topic of a
 * repartitioning step.
 *
 * Delivery reports are served on every send (on the job's thread: rd_kafka_poll). complete
 * waits until the brokers have acknowledged every message produced before it (a checkpoint
 * then never covers a record that is still only in the producer's queue: at-least-once, as
 * Flink's Kafka sink flushes in snapshotState). The wait is bounded: librdkafka gives a
 * message up after message.timeout.ms (30 s unless the properties say otherwise), which fails
 * the transport; complete itself gives up at that timeout plus KT_DRAIN_SLACK_MS (at least
 * KT_FLUSH_MS), saying how many messages are left. */
#include <librdkafka/rdkafka.h>
#include <uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wm_conn.h"
#include "io/wm_kafka.h"
#include "io/wm_transport.h"
#include "time/wm_time.h"

#define KT_FLUSH_MS 60000       /* the least complete waits */
#define KT_DRAIN_SLACK_MS 5000  /* beyond message.timeout.ms */
#define KT_MAX_HEADERS 8

typedef struct ktrans {
  wm_transport base; /* first */
  rd_kafka_t *rk;
  char *topic;
  int64_t drain_ms;   /* how long complete waits (max(KT_FLUSH_MS, message.timeout.ms + slack)) */
  uint64_t unflushed; /* messages produced since the last complete */
} ktrans;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  ktrans *k = opaque;
  if (m->err) wm_transport_fail(&k->base, "%s", rd_kafka_err2str(m->err));
}

static int kt_ensure(wm_transport *t, const char *subject, int create, wm_error *err) {
  (void)t, (void)subject, (void)create, (void)err;
  return 0; /* the topic was checked when the job was built */
}

static int kt_send(wm_transport *t, const wm_transport_msg *m) {
  ktrans *k = (ktrans *)t;
  rd_kafka_poll(k->rk, 0); /* delivery reports */
  rd_kafka_vu_t vu[6 + KT_MAX_HEADERS];
  size_t n = 0;
  vu[n].vtype = RD_KAFKA_VTYPE_TOPIC;
  vu[n++].u.cstr = k->topic;
  vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vu[n++].u.i = RD_KAFKA_MSG_F_COPY;
  vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
  vu[n].u.mem.ptr = (void *)(uintptr_t)m->data;
  vu[n++].u.mem.size = m->len;
  if (m->key) {
    vu[n].vtype = RD_KAFKA_VTYPE_KEY;
    vu[n].u.mem.ptr = (void *)(uintptr_t)m->key;
    vu[n++].u.mem.size = m->keylen;
  }
  vu[n].vtype = RD_KAFKA_VTYPE_PARTITION;
  vu[n++].u.i32 = m->partition == WM_TRANSPORT_ANY ? RD_KAFKA_PARTITION_UA : (int32_t)m->partition;
  vu[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
  vu[n++].u.i64 = m->ts < 0 || m->ts == WM_TIME_MAX ? 0 : m->ts;
  for (int h = 0; h + 1 < m->nheaders && h / 2 < KT_MAX_HEADERS; h += 2) {
    vu[n].vtype = RD_KAFKA_VTYPE_HEADER;
    vu[n].u.header.name = m->headers[h];
    vu[n].u.header.val = m->headers[h + 1];
    vu[n++].u.header.size = -1;
  }
  for (;;) {
    if (atomic_load(&t->failed)) return WM_ERR;
    rd_kafka_error_t *error = rd_kafka_produceva(k->rk, vu, n);
    if (!error) {
      k->unflushed++;
      return WM_OK;
    }
    rd_kafka_resp_err_t e = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      wm_transport_fail(t, "%s", rd_kafka_err2str(e));
      return WM_ERR;
    }
    rd_kafka_poll(k->rk, 100); /* backpressure: wait for deliveries */
  }
}

/* Waits until the brokers have acknowledged every message produced so far (delivery reports
 * served meanwhile), at most k->drain_ms. */
static int kt_complete(wm_transport *t, int what) {
  ktrans *k = (ktrans *)t;
  if (!k->unflushed) return atomic_load(&t->failed) ? WM_ERR : WM_OK; /* nothing to wait for */
  uint64_t t0 = uv_hrtime();
  for (;;) {
    rd_kafka_resp_err_t e = rd_kafka_flush(k->rk, 200);
    if (atomic_load(&t->failed)) return WM_ERR;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      k->unflushed = 0;
      return WM_OK;
    }
    if (e != RD_KAFKA_RESP_ERR__TIMED_OUT) {
      wm_transport_fail(t, "%s", rd_kafka_err2str(e));
      return WM_ERR;
    }
    int64_t waited = (int64_t)((uv_hrtime() - t0) / 1000000u);
    if (waited >= k->drain_ms) {
      wm_transport_fail(t, "%d messages still unacknowledged after %.1f s of waiting for %s "
                        "(%s waits message.timeout.ms + %.1f s, at least %.1f s)", rd_kafka_outq_len(k->rk),
                        (double)waited / 1000.0, what == WM_TRANSPORT_END ? "the end of input" : "a checkpoint",
                        t->label, KT_DRAIN_SLACK_MS / 1000.0, KT_FLUSH_MS / 1000.0);
      return WM_ERR;
    }
  }
}

static void kt_free(wm_transport *t) {
  ktrans *k = (ktrans *)t;
  if (k->rk) rd_kafka_destroy(k->rk);
  free(k->topic);
  wm_transport_fini(t);
  free(k);
}

static const wm_transport_vt kt_vt = {.ensure = kt_ensure, .send = kt_send, .complete = kt_complete,
                                      .free = kt_free};

wm_transport *wm_transport_kafka_open(const wm_transport_config *cfg, wm_error *err) {
  const wm_transport_target *tg = &cfg->target;
  ktrans *k = calloc(1, sizeof *k);
  if (!k) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  if (wm_transport_init(&k->base, &kt_vt, "deliver to topic", tg->topic, tg->brokers, cfg->label) != 0 ||
      !(k->topic = strdup(tg->topic))) {
    kt_free(&k->base);
    wm_error_set(err, "out of memory");
    return NULL;
  }
  /* the idempotent producer keeps the order of a partition's messages through retries */
  static const char *const sets[] = {"message.timeout.ms", "30000", "linger.ms", "5", "enable.idempotence",
                                     "true"};
  rd_kafka_conf_t *conf = wm_kafka_conf(tg->brokers, sets, cfg->ordered ? 6 : 4, tg->props, tg->nprops, err);
  if (!conf) {
    kt_free(&k->base);
    return NULL;
  }
  char mt[32];
  size_t mtl = sizeof mt;
  long long mto = 30000;
  if (rd_kafka_conf_get(conf, "message.timeout.ms", mt, &mtl) == RD_KAFKA_CONF_OK) mto = atoll(mt);
  k->drain_ms = mto + KT_DRAIN_SLACK_MS > KT_FLUSH_MS ? mto + KT_DRAIN_SLACK_MS : KT_FLUSH_MS;
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, k);
  char e[512];
  k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
  if (!k->rk) {
    rd_kafka_conf_destroy(conf);
    wm_error_set(err, "cannot create a Kafka producer for %s: %s", tg->brokers, e);
    kt_free(&k->base);
    return NULL;
  }
  /* the topic's leaders now: the first records then need not wait for them (about a
   * second on the first flush otherwise) */
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, k->topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t r = rkt ? rd_kafka_metadata(k->rk, 0, rkt, &md, 10000) : rd_kafka_last_error();
  if (md) rd_kafka_metadata_destroy(md);
  if (rkt) rd_kafka_topic_destroy(rkt);
  if (r != RD_KAFKA_RESP_ERR_NO_ERROR) {
    wm_error_set(err, "cannot reach the Kafka brokers at %s: %s", tg->brokers, rd_kafka_err2str(r));
    kt_free(&k->base);
    return NULL;
  }
  return &k->base;
}

/* ---- making the topic of a repartitioning step ------------------------------------------ */

/* A client of the brokers for the admin and metadata requests (destroy it); NULL with err. */
static rd_kafka_t *kafka_client(const wm_transport_target *t, wm_error *err) {
  rd_kafka_conf_t *conf = wm_kafka_conf(t->brokers, NULL, 0, t->props, t->nprops, err);
  if (!conf) return NULL;
  char e[512];
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    wm_error_set(err, "cannot create a Kafka client for %s: %s", t->brokers, e);
  }
  return rk;
}
/* Creates the topic with the admin API. 0, or -1 with err. */
static int kafka_create(const wm_transport_target *t, int timeout_ms, wm_error *err) {
  char e[512];
  rd_kafka_t *rk = kafka_client(t, err);
  if (!rk) return -1;
  int rc = -1;
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(t->topic, t->partitions, t->replication, e, sizeof e);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  if (!nt || !q || !ao) {
    wm_error_set(err, "cannot create topic '%s' on %s: %s", t->topic, t->brokers, nt ? "out of memory" : e);
    goto done;
  }
  rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, e, sizeof e);
  rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
  const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
  if (!ev || !res) {
    wm_error_set(err, "cannot create topic '%s' on %s: no answer in %d ms", t->topic, t->brokers,
             timeout_ms);
  } else if (rd_kafka_event_error(ev)) {
    wm_error_set(err, "cannot create topic '%s' on %s: %s", t->topic, t->brokers,
             rd_kafka_event_error_string(ev));
  } else {
    size_t cnt = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
    rd_kafka_resp_err_t te = cnt ? rd_kafka_topic_result_error(tr[0]) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (te && te != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) /* another thread or process made it */
      wm_error_set(err, "cannot create topic '%s' on %s: %s", t->topic, t->brokers,
               rd_kafka_topic_result_error_string(tr[0]) ? rd_kafka_topic_result_error_string(tr[0])
                                                          : rd_kafka_err2str(te));
    else
      rc = 0;
  }
  if (ev) rd_kafka_event_destroy(ev);
done:
  if (ao) rd_kafka_AdminOptions_destroy(ao);
  if (q) rd_kafka_queue_destroy(q);
  if (nt) rd_kafka_NewTopic_destroy(nt);
  rd_kafka_destroy(rk);
  return rc;
}

/* The partitions of the topic from the metadata of every topic (asking for the topic
 * itself would make a broker that creates topics on demand create it with its default
 * count): *n = 0 when it does not exist. 0, or -1 with err. */
static int kafka_count(const wm_transport_target *t, int timeout_ms, int *n, wm_error *err) {
  rd_kafka_t *rk = kafka_client(t, err);
  if (!rk) return -1;
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t r = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
  int rc = 0;
  *n = 0;
  if (r != RD_KAFKA_RESP_ERR_NO_ERROR) {
    wm_error_set(err, "cannot reach the Kafka brokers at %s: %s", t->brokers, rd_kafka_err2str(r));
    rc = -1;
  } else {
    for (int i = 0; i < md->topic_cnt; i++)
      if (strcmp(md->topics[i].topic, t->topic) == 0 && !md->topics[i].err) *n = md->topics[i].partition_cnt;
  }
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
  return rc;
}

int wm_transport_kafka_make(const wm_transport_target *t, int timeout_ms, wm_error *err) {
  int n = 0;
  if (kafka_count(t, timeout_ms, &n, err) != 0) return -1;
  if (n == 0) {
    if (kafka_create(t, timeout_ms, err) != 0) return -1;
    /* now asked by name: the brokers know it */
    if (wm_kafka_partitions(t->brokers, t->topic, t->props, t->nprops, timeout_ms, &n, err) != 0) return -1;
  }
  if (n == t->partitions) return 0;
  wm_error_set(err, "topic '%s' on %s has %d partitions, not %d", t->topic, t->brokers, n, t->partitions);
  return -1;
}

