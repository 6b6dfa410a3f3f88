/* read_kafka: a Kafka consumer (librdkafka) on a fixed assignment of partitions, one
 * librdkafka partition queue per partition so that the reading order is ours
 * (wm_partsrc.c). Offsets are neither committed nor stored here: the position of every
 * partition is kept for checkpoints (wm_partsrc_position). */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wm_kafka.h"
#include "io/wm_partsrc.h"
#include "time/wm_time.h"

#define KAFKA_TIMEOUT_MS 10000

/* A FIFO of messages. */
typedef struct spill {
  rd_kafka_message_t **m;
  size_t head, n, cap;
} spill;

static int spill_push(spill *q, rd_kafka_message_t *m) {
  if (q->head == q->n) q->head = q->n = 0;
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 16;
    rd_kafka_message_t **nm = realloc(q->m, cap * sizeof *nm);
    if (!nm) return -1;
    q->m = nm;
    q->cap = cap;
  }
  q->m[q->n++] = m;
  return 0;
}

static rd_kafka_message_t *spill_pop(spill *q) {
  return q->head < q->n ? q->m[q->head++] : NULL;
}

static void spill_free(spill *q) {
  rd_kafka_message_t *m;
  while ((m = spill_pop(q))) rd_kafka_message_destroy(m);
  free(q->m);
  q->m = NULL;
}

typedef struct ksrc {
  wm_partsrc ps; /* first */
  rd_kafka_t *rk;
  rd_kafka_queue_t **q;          /* per partition */
  rd_kafka_message_t **ready;    /* per partition: the next message, peeked */
  spill *early;                  /* per partition: messages that came through the consumer
                                    queue before its partition queue was detached */
  char **topics;                 /* per partition (owned) */
  int *partition;                /* per partition */
  char *brokers;
  wm_schema *schema;             /* metadata rows */
  rd_kafka_queue_t *cq;          /* the consumer's queue: where commit results come back */
  int commit_warned;             /* a refused commit was reported */
  int close_ms;                  /* how long closing waits for the brokers */
  int down;                      /* the brokers are unreachable (reported once) */
  int fatal;
  char fatal_msg[512];
} ksrc;

/* librdkafka's error callback, served from rd_kafka_consumer_poll in ksrc_serve: a lost
 * connection is reported once (librdkafka reconnects with backoff); a fatal error fails
 * the job. */
static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  ksrc *k = opaque;
  (void)rk;
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    char buf[256];
    rd_kafka_fatal_error(k->rk, buf, sizeof buf);
    snprintf(k->fatal_msg, sizeof k->fatal_msg, "%s", buf);
    k->fatal = 1;
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__TRANSPORT) {
    if (!k->down)
      fprintf(stderr, "wmrun: %s: lost the connection to the Kafka brokers at %s: %s (reconnecting)\n",
              k->ps.op->name, k->brokers, reason);
    k->down = 1;
  }
}

static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  (void)rk, (void)level, (void)fac, (void)buf; /* errors come through on_kafka_error */
}

rd_kafka_conf_t *wm_kafka_conf(const char *brokers, const char *const *sets, int nsets,
                               const char *const *props, int nprops, wm_error *err) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (!conf) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  rd_kafka_conf_set_log_cb(conf, on_kafka_log);
  char e[512];
  int bad = rd_kafka_conf_set(conf, "bootstrap.servers", brokers, e, sizeof e) != RD_KAFKA_CONF_OK;
  const char *what = "bootstrap.servers";
  for (int i = 0; !bad && i + 1 < nsets; i += 2)
    bad = rd_kafka_conf_set(conf, (what = sets[i]), sets[i + 1], e, sizeof e) != RD_KAFKA_CONF_OK;
  for (int i = 0; !bad && i + 1 < nprops; i += 2)
    bad = rd_kafka_conf_set(conf, (what = props[i]), props[i + 1], e, sizeof e) != RD_KAFKA_CONF_OK;
  if (bad) {
    wm_error_set(err, "property '%s': %.400s", what, e);
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  return conf;
}

int wm_kafka_partitions(const char *brokers, const char *topic, const char *const *props,
                        int nprops, int timeout_ms, int *n, wm_error *err) {
  char e[512];
  static const char *const sets[] = {"allow.auto.create.topics", "false"};
  rd_kafka_conf_t *conf = wm_kafka_conf(brokers, sets, 2, props, nprops, err);
  if (!conf) return -1;
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    wm_error_set(err, "cannot create a Kafka client for %s: %s", brokers, e);
    return -1;
  }
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t r = t ? rd_kafka_metadata(rk, 0, t, &md, timeout_ms) : rd_kafka_last_error();
  int rc = -1;
  if (r != RD_KAFKA_RESP_ERR_NO_ERROR) {
    wm_error_set(err, "cannot reach the Kafka brokers at %s: %s", brokers, rd_kafka_err2str(r));
  } else if (md->topic_cnt < 1 || md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
             md->topics[0].partition_cnt == 0) {
    wm_error_set(err, "topic '%s' does not exist on %s", topic, brokers);
  } else if (md->topics[0].err) {
    wm_error_set(err, "topic '%s' on %s: %s", topic, brokers, rd_kafka_err2str(md->topics[0].err));
  } else {
    *n = md->topics[0].partition_cnt;
    rc = 0;
  }
  if (md) rd_kafka_metadata_destroy(md);
  if (t) rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  return rc;
}

static int ksrc_serve(wm_partsrc *s) {
  ksrc *k = (ksrc *)s;
  if (!k->rk) return WM_OK;
  /* serves the error callback; messages go to the partition queues, except those
   * fetched before a partition queue was detached: they wait in its spill */
  rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, 0);
  while (m) {
    if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      int rc = wm_ctx_error(s->op->ctx, "%s: Kafka at %s: %s", s->op->name, k->brokers,
                            rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      return rc;
    }
    int i = -1;
    if (!m->err && m->rkt) {
      const char *tn = rd_kafka_topic_name(m->rkt);
      for (int j = 0; j < s->n && i < 0; j++)
        if (k->partition[j] == m->partition && strcmp(k->topics[j], tn) == 0) i = j;
    }
    if (i >= 0) {
      if (spill_push(&k->early[i], m) != 0) {
        rd_kafka_message_destroy(m);
        return wm_ctx_error(s->op->ctx, "out of memory in '%s'", s->op->name);
      }
    } else {
      rd_kafka_message_destroy(m);
    }
    m = rd_kafka_consumer_poll(k->rk, 0);
  }
  if (k->fatal)
    return wm_ctx_error(s->op->ctx, "%s: Kafka at %s: %s", s->op->name, k->brokers, k->fatal_msg);
  return WM_OK;
}

static int ksrc_peek(wm_partsrc *s, int i) {
  ksrc *k = (ksrc *)s;
  wm_part *p = &s->parts[i];
  if (k->ready[i]) return 1;
  if (p->end >= 0 && p->pos >= p->end) {
    p->done = 1;
    return 0;
  }
  for (;;) {
    rd_kafka_message_t *m = spill_pop(&k->early[i]);
    if (!m) m = rd_kafka_consume_queue(k->q[i], 0);
    if (!m) return 0;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      /* the end of what the partition holds now: a bounded source whose end lies under
       * control records (transactions) ends here */
      if (p->end >= 0 && m->offset >= p->end) {
        p->pos = m->offset;
        p->done = 1;
        rd_kafka_message_destroy(m);
        return 0;
      }
      rd_kafka_message_destroy(m);
      continue;
    }
    if (m->err) {
      int rc = wm_ctx_error(s->op->ctx, "%s: partition %s at %s: %s", s->op->name, p->name,
                            k->brokers, rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      return rc;
    }
    if (m->offset < p->pos) { /* fetched before a seek */
      rd_kafka_message_destroy(m);
      continue;
    }
    if (k->down) {
      fprintf(stderr, "wmrun: %s: reconnected to the Kafka brokers at %s\n", s->op->name, k->brokers);
      k->down = 0;
    }
    k->ready[i] = m;
    return 1;
  }
}

static int ksrc_emit(wm_partsrc *s, int i) {
  ksrc *k = (ksrc *)s;
  wm_part *p = &s->parts[i];
  rd_kafka_message_t *m = k->ready[i];
  k->ready[i] = NULL;
  rd_kafka_timestamp_type_t tt;
  int64_t ts = rd_kafka_message_timestamp(m, &tt);
  if (tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts < 0) ts = WM_TIME_MIN;
  p->pos = m->offset + 1;
  int rc;
  wm_value val = wm_cstr(m->payload ? (const char *)m->payload : "", m->payload ? m->len : 0);
  if (s->cfg.metadata) {
    wm_value f[6];
    f[0] = m->key ? wm_cstr(m->key, m->key_len) : wm_nil();
    f[1] = wm_int(m->offset);
    f[2] = wm_int(k->partition[i]);
    f[3] = ts == WM_TIME_MIN ? wm_nil() : wm_int(ts);
    f[4] = wm_cstr(k->topics[i], strlen(k->topics[i]));
    f[5] = val;
    rc = wm_partsrc_emit_row(s, i, k->schema, f, ts, m->offset);
  } else {
    rc = wm_partsrc_emit(s, i, &val, ts, m->offset);
  }
  rd_kafka_message_destroy(m);
  if (rc == WM_OK && p->end >= 0 && p->pos >= p->end) p->done = 1;
  return rc;
}

static void ksrc_close(wm_partsrc *s) {
  ksrc *k = (ksrc *)s;
  for (int i = 0; i < s->n; i++) {
    if (k->ready && k->ready[i]) {
      rd_kafka_message_destroy(k->ready[i]);
      k->ready[i] = NULL;
    }
    if (k->q && k->q[i]) {
      rd_kafka_queue_destroy(k->q[i]);
      k->q[i] = NULL;
    }
    if (k->early) spill_free(&k->early[i]);
  }
  /* the consumer lives on until the job is freed: the final checkpoint, taken after the
   * input ended, commits its positions through it */
}

static void on_kafka_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *l,
                            void *opaque);

/* Closes the consumer, serving its queue (the results of the last commits, the final
 * checkpoint's among them) until it is closed, for at most close_ms: brokers that are
 * down must not keep the job from ending (the positions are in the checkpoint). */
static void ksrc_close_consumer(ksrc *k) {
  rd_kafka_error_t *e = rd_kafka_consumer_close_queue(k->rk, k->cq);
  int closed = !e;
  if (e) rd_kafka_error_destroy(e);
  uint64_t t0 = uv_hrtime(), limit = (uint64_t)k->close_ms * 1000000u;
  /* (once closed, what is still queued is served too: a commit's answer may come last) */
  for (int last = 0; closed && !last;) {
    last = rd_kafka_consumer_closed(k->rk);
    if (!last && uv_hrtime() - t0 > limit) {
      closed = 0;
      fprintf(stderr, "wmrun: warning: %s: the Kafka brokers at %s did not answer within %d ms while "
                      "closing: the group's offsets may miss the last checkpoint's (the positions are "
                      "in the checkpoint)\n", k->ps.op->name, k->brokers, k->close_ms);
      break;
    }
    rd_kafka_event_t *ev;
    while ((ev = rd_kafka_queue_poll(k->cq, last ? 0 : 100))) {
      if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT) /* (no callback here) */
        on_kafka_commit(k->rk, rd_kafka_event_error(ev), rd_kafka_event_topic_partition_list(ev), k);
      rd_kafka_event_destroy(ev);
      if (!last) break;
    }
  }
  rd_kafka_queue_destroy(k->cq);
  k->cq = NULL;
  rd_kafka_destroy_flags(k->rk, closed ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

static void ksrc_free(wm_partsrc *s) {
  ksrc *k = (ksrc *)s;
  if (k->rk && k->cq) {
    ksrc_close_consumer(k);
  } else if (k->rk) {
    rd_kafka_consumer_close(k->rk);
    rd_kafka_destroy(k->rk);
  }
  if (k->cq) rd_kafka_queue_destroy(k->cq);
  k->cq = NULL;
  k->rk = NULL;
  for (int i = 0; k->topics && i < s->n; i++) free(k->topics[i]);
  free(k->topics);
  free(k->partition);
  free(k->q);
  free(k->ready);
  free(k->early);
  free(k->brokers);
  if (k->schema) wm_schema_release(k->schema);
}

/* Restored positions: the partitions are assigned again at the offsets of the checkpoint
 * (a bounded partition already at its end is done). */
static int ksrc_seek(wm_partsrc *s) {
  ksrc *k = (ksrc *)s;
  if (!k->rk || s->n == 0) return WM_OK;
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(s->n);
  if (!l) return wm_ctx_error(s->op->ctx, "out of memory");
  for (int i = 0; i < s->n; i++) {
    rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, k->topics[i], k->partition[i]);
    tp->offset = s->parts[i].pos >= 0 ? s->parts[i].pos : RD_KAFKA_OFFSET_BEGINNING;
    s->parts[i].done = s->parts[i].end >= 0 && s->parts[i].pos >= s->parts[i].end;
  }
  rd_kafka_resp_err_t e = rd_kafka_assign(k->rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (e)
    return wm_ctx_error(s->op->ctx, "%s: cannot assign the restored offsets at %s: %s", s->op->name,
                        k->brokers, rd_kafka_err2str(e));
  /* what was fetched from the old offsets is dropped by librdkafka (op versions) and by
   * ksrc_peek (offsets below the position) */
  return WM_OK;
}

/* The result of a commit, on the source's own thread (served by rd_kafka_consumer_poll in
 * ksrc_serve, or by rd_kafka_consumer_close when the job is freed): a refusal is a
 * warning, once per source. */
static void on_kafka_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *l,
                            void *opaque) {
  ksrc *k = opaque;
  (void)rk;
  for (int i = 0; !err && l && i < l->cnt; i++) err = l->elems[i].err;
  if (!err || err == RD_KAFKA_RESP_ERR__NO_OFFSET || k->commit_warned) return;
  k->commit_warned = 1;
  fprintf(stderr, "wmrun: warning: %s: cannot commit the offsets of the group at %s: %s (the positions are "
                  "in the checkpoint; only monitoring misses them)\n", k->ps.op->name, k->brokers,
          rd_kafka_err2str(err));
}

/* The last snapshot's positions as a list of offsets to commit (partitions no checkpoint
 * covers a record of are left out). NULL when out of memory (the failure in *err). */
static rd_kafka_topic_partition_list_t *snap_offsets(ksrc *k, wm_error *err) {
  wm_partsrc *s = &k->ps;
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(s->n);
  if (!l) {
    wm_error_set(err, "%s: out of memory committing the group's offsets", s->op->name);
    return NULL;
  }
  for (int i = 0; i < s->n; i++) {
    if (s->parts[i].snap <= 0) continue; /* no checkpoint covers a record of it yet */
    rd_kafka_topic_partition_list_add(l, k->topics[i], k->partition[i])->offset = s->parts[i].snap - 1;
  }
  return l;
}

/* The positions as the group's committed offsets. Asynchronous: called from any thread
 * (the coordinator's, under its lock, after a completed checkpoint), it reads the
 * snapshot's positions and hands them to librdkafka (thread-safe), which sends them in
 * order; the result comes back on the source's own thread (on_kafka_commit), so a broker
 * that is down does not hold the coordinator, and no thread writes another's context.
 * rd_kafka_consumer_close waits for the commits under way (the final checkpoint's).
 * WM_ERR (the failure in *err) only when librdkafka refuses at once. */
static int ksrc_commit(wm_partsrc *s, wm_error *err) {
  ksrc *k = (ksrc *)s;
  if (!k->rk || s->n == 0) return WM_OK;
  rd_kafka_topic_partition_list_t *l = snap_offsets(k, err);
  if (!l) return WM_ERR;
  rd_kafka_resp_err_t e =
      l->cnt ? rd_kafka_commit_queue(k->rk, l, k->cq, on_kafka_commit, k) : RD_KAFKA_RESP_ERR_NO_ERROR;
  rd_kafka_topic_partition_list_destroy(l);
  if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
    wm_error_set(err, "%s: cannot commit the offsets of the group at %s: %s", s->op->name, k->brokers,
             rd_kafka_err2str(e));
    return WM_ERR;
  }
  return WM_OK;
}

/* The restored positions as the group's offsets, through a consumer of its own that is
 * never assigned (a copy of the source's configuration: the same brokers, group and
 * properties), waiting for the answer for at most close_ms. For a start that finds the final
 * checkpoint: the source's own consumer is closed without reading, untouched. */
static int ksrc_commit_detached(wm_partsrc *s, wm_error *err) {
  ksrc *k = (ksrc *)s;
  if (!k->rk || s->n == 0) return WM_OK;
  rd_kafka_topic_partition_list_t *l = snap_offsets(k, err);
  if (!l) return WM_ERR;
  if (l->cnt == 0) {
    rd_kafka_topic_partition_list_destroy(l);
    return WM_OK;
  }
  char e[512] = "";
  rd_kafka_conf_t *conf = rd_kafka_conf_dup(rd_kafka_conf(k->rk));
  rd_kafka_t *rk = NULL;
  rd_kafka_queue_t *q = NULL;
  rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (conf) {
    rd_kafka_conf_set_error_cb(conf, NULL); /* (errors come back as the commit's result) */
    rd_kafka_conf_set_opaque(conf, NULL);
    if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e))) rd_kafka_conf_destroy(conf);
  } else {
    snprintf(e, sizeof e, "out of memory");
  }
  if (rk && !(q = rd_kafka_queue_new(rk))) snprintf(e, sizeof e, "out of memory");
  if (q) re = rd_kafka_commit_queue(rk, l, q, NULL, NULL);
  rd_kafka_topic_partition_list_destroy(l);
  int answered = 0;
  if (q && !re) {
    uint64_t t0 = uv_hrtime(), limit = (uint64_t)k->close_ms * 1000000u;
    while (!answered && uv_hrtime() - t0 <= limit) {
      rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
      if (!ev) continue;
      if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT) {
        answered = 1;
        re = rd_kafka_event_error(ev);
      }
      rd_kafka_event_destroy(ev);
    }
    if (!answered) snprintf(e, sizeof e, "no answer within %d ms", k->close_ms);
  }
  if (q) rd_kafka_queue_destroy(q);
  if (rk) rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  if (re && re != RD_KAFKA_RESP_ERR__NO_OFFSET) snprintf(e, sizeof e, "%s", rd_kafka_err2str(re));
  else if (answered) e[0] = '\0';
  if (!e[0]) return WM_OK;
  wm_error_set(err, "%s: cannot commit the offsets of the group at %s: %s", s->op->name, k->brokers, e);
  return WM_ERR;
}

/* The lag from librdkafka's cache: the high watermark of the last fetch response (the
 * consumer fetches on while the partition is assigned, also past a bounded end), without
 * a request. Unknown before the first fetch answered. */
static int ksrc_lag(const wm_partsrc *s, int i, int64_t *records) {
  const ksrc *k = (const ksrc *)s;
  int64_t lo, hi, pos = s->parts[i].pos;
  if (!k->rk || pos < 0) return 0;
  if (rd_kafka_get_watermark_offsets(k->rk, k->topics[i], k->partition[i], &lo, &hi) !=
          RD_KAFKA_RESP_ERR_NO_ERROR ||
      hi < 0)
    return 0;
  *records = hi > pos ? hi - pos : 0;
  return 1;
}

static const wm_partsrc_hooks ksrc_hooks = {.peek = ksrc_peek, .emit = ksrc_emit, .lag = ksrc_lag,
                                            .serve = ksrc_serve, .seek = ksrc_seek,
                                            .commit = ksrc_commit,
                                            .commit_detached = ksrc_commit_detached,
                                            .close = ksrc_close, .free = ksrc_free};

/* Resolves the start offset of every partition, the end offsets of a bounded source, and
 * assigns the partitions. WM_OK or WM_ERR. */
static int ksrc_assign(ksrc *k, const wm_kafka_source_config *cfg) {
  wm_partsrc *s = &k->ps;
  wm_ctx *ctx = s->op->ctx;
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(s->n > 0 ? s->n : 1);
  if (!l) return wm_ctx_error(ctx, "out of memory");
  int rc = WM_OK;
  for (int i = 0; i < s->n && rc == WM_OK; i++) {
    int64_t lo, hi;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(k->rk, k->topics[i], k->partition[i],
                                                             &lo, &hi, KAFKA_TIMEOUT_MS);
    if (e) {
      rc = wm_ctx_error(ctx, "%s: partition %s at %s: %s", s->op->name, s->parts[i].name,
                        k->brokers, rd_kafka_err2str(e));
      break;
    }
    rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, k->topics[i], k->partition[i]);
    if (cfg->p.start == WM_START_LATEST) tp->offset = hi;
    else if (cfg->p.start == WM_START_TIME) tp->offset = cfg->p.start_value;
    else if (cfg->p.start == WM_START_COMMITTED) tp->offset = RD_KAFKA_OFFSET_INVALID;
    else tp->offset = lo;
    if (cfg->p.bounded) s->parts[i].end = hi;
    s->parts[i].pos = cfg->p.start == WM_START_LATEST ? hi : lo;
  }
  if (rc == WM_OK && cfg->p.start == WM_START_TIME && s->n > 0) {
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(k->rk, l, KAFKA_TIMEOUT_MS);
    if (e) rc = wm_ctx_error(ctx, "%s: offsets for the start time at %s: %s", s->op->name, k->brokers,
                             rd_kafka_err2str(e));
    for (int i = 0; rc == WM_OK && i < l->cnt; i++) {
      if (l->elems[i].offset < 0) l->elems[i].offset = s->parts[i].end >= 0 ? s->parts[i].end : RD_KAFKA_OFFSET_END;
      s->parts[i].pos = l->elems[i].offset;
    }
  }
  if (rc == WM_OK && cfg->p.start == WM_START_COMMITTED && s->n > 0) {
    rd_kafka_resp_err_t e = rd_kafka_committed(k->rk, l, KAFKA_TIMEOUT_MS);
    if (e) rc = wm_ctx_error(ctx, "%s: committed offsets of group '%s' at %s: %s", s->op->name,
                             cfg->group ? cfg->group : "wmrun", k->brokers, rd_kafka_err2str(e));
    for (int i = 0; rc == WM_OK && i < l->cnt; i++) {
      if (l->elems[i].offset < 0) l->elems[i].offset = s->parts[i].pos; /* none: earliest */
      s->parts[i].pos = l->elems[i].offset;
    }
  }
  if (rc == WM_OK && s->n > 0) {
    rd_kafka_resp_err_t e = rd_kafka_assign(k->rk, l);
    if (e) rc = wm_ctx_error(ctx, "%s: cannot assign the partitions at %s: %s", s->op->name, k->brokers,
                             rd_kafka_err2str(e));
  }
  for (int i = 0; rc == WM_OK && i < s->n; i++) {
    k->q[i] = rd_kafka_queue_get_partition(k->rk, k->topics[i], k->partition[i]);
    if (!k->q[i]) rc = wm_ctx_error(ctx, "%s: no queue for partition %s", s->op->name, s->parts[i].name);
    else rd_kafka_queue_forward(k->q[i], NULL); /* its messages stay in its own queue */
    if (s->parts[i].end >= 0 && s->parts[i].pos >= s->parts[i].end) s->parts[i].done = 1;
  }
  rd_kafka_topic_partition_list_destroy(l);
  return rc;
}

wm_op *wm_kafka_source_new(wm_io_host *host, const char *name, const wm_kafka_source_config *cfg) {
  wm_partsrc *s = wm_partsrc_new(host, name, "read_kafka", &cfg->p, &ksrc_hooks, sizeof(ksrc));
  if (!s) return NULL;
  wm_ctx *ctx = s->op->ctx;
  ksrc *k = (ksrc *)s;
  int n = s->n > 0 ? s->n : 1;
  k->q = calloc((size_t)n, sizeof *k->q);
  k->ready = calloc((size_t)n, sizeof *k->ready);
  k->early = calloc((size_t)n, sizeof *k->early);
  k->topics = calloc((size_t)n, sizeof *k->topics);
  k->partition = calloc((size_t)n, sizeof *k->partition);
  k->brokers = strdup(cfg->brokers);
  k->close_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : KAFKA_TIMEOUT_MS;
  int oom = !k->q || !k->ready || !k->early || !k->topics || !k->partition || !k->brokers;
  for (int i = 0; !oom && i < s->n; i++) {
    k->topics[i] = strdup(cfg->topics[i]);
    k->partition[i] = cfg->partitions[i];
    oom = !k->topics[i];
  }
  if (!oom && cfg->p.metadata) {
    /* fields in byte order of their names, as rows print */
    const char *names[6] = {"key", "offset", "partition", "timestamp", "topic", "value"};
    const uint8_t types[6] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_STRING,
                              WM_FT_STRING};
    oom = !(k->schema = wm_schema_new(6, names, types));
  }
  if (oom) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  if (s->n == 0) return s->op; /* owns nothing: idle; needs no client */
  char e[512];
  const char *const sets[] = {"group.id", cfg->group ? cfg->group : "wmrun", "enable.auto.commit", "false",
                              "enable.auto.offset.store", "false", "enable.partition.eof", "true"};
  rd_kafka_conf_t *conf = wm_kafka_conf(cfg->brokers, sets, 8, cfg->props, cfg->nprops, &ctx->error);
  if (!conf) {
    wm_ctx_error(ctx, "%s: %s", name, ctx->error.msg);
    return NULL;
  }
  rd_kafka_conf_set_error_cb(conf, on_kafka_error);
  rd_kafka_conf_set_opaque(conf, k);
  k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
  if (!k->rk) {
    rd_kafka_conf_destroy(conf);
    wm_ctx_error(ctx, "%s: cannot create a Kafka consumer for %s: %s", name, cfg->brokers, e);
    return NULL;
  }
  rd_kafka_poll_set_consumer(k->rk);
  if (!(k->cq = rd_kafka_queue_get_consumer(k->rk))) {
    wm_ctx_error(ctx, "%s: no consumer queue", name);
    return NULL;
  }
  if (ksrc_assign(k, cfg) != WM_OK) return NULL;
  return s->op;
}
