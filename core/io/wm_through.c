/* Repartitioning through a partitioned log (wm_through.h): the writer sink, the reader's
 * tap, and making the intermediate topic or stream. */
#include "io/wm_through.h"

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_statefmt.h"
#include "io/wm_kafka.h"
#include "io/wm_nats.h"
#include "io/wm_partsrc.h"
#include "time/wm_time.h"

#define THR_FLUSH_MS 60000
#define THR_MAGIC 'w'
#define THR_VERSION 1

enum { K_RECORD = 'R', K_WATERMARK = 'W', K_IDLE = 'I', K_ACTIVE = 'A', K_END = 'E' };

/* FNV-1a, 32 bits: the partition of a key is fnv1a32(the key as print shows it) mod n, as
 * NATS's partition() subject mapping computes it (and wm.partition, which is to replace
 * this copy). */
static uint32_t fnv1a32(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 16777619u;
  }
  return h;
}

/* ---- the intermediate topic or stream ---------------------------------------------------- */

/* A client of the brokers for the admin and metadata requests (destroy it); NULL with err. */
static rd_kafka_t *kafka_client(const wm_through_target *t, char *err, size_t errlen) {
  char e[512];
  rd_kafka_conf_t *conf = wm_kafka_conf(t->brokers, NULL, 0, t->props, t->nprops, e, sizeof e);
  if (!conf) {
    snprintf(err, errlen, "%s", e);
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    snprintf(err, errlen, "cannot create a Kafka client for %s: %s", t->brokers, e);
  }
  return rk;
}

/* Creates the topic with the admin API. 0, or -1 with err. */
static int kafka_create(const wm_through_target *t, int timeout_ms, char *err, size_t errlen) {
  char e[512];
  rd_kafka_t *rk = kafka_client(t, err, errlen);
  if (!rk) return -1;
  int rc = -1;
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(t->topic, t->partitions, t->replication, e, sizeof e);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  if (!nt || !q || !ao) {
    snprintf(err, errlen, "cannot create topic '%s' on %s: %s", t->topic, t->brokers, nt ? "out of memory" : e);
    goto done;
  }
  rd_kafka_AdminOptions_set_request_timeout(ao, timeout_ms, e, sizeof e);
  rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
  const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
  if (!ev || !res) {
    snprintf(err, errlen, "cannot create topic '%s' on %s: no answer in %d ms", t->topic, t->brokers,
             timeout_ms);
  } else if (rd_kafka_event_error(ev)) {
    snprintf(err, errlen, "cannot create topic '%s' on %s: %s", t->topic, t->brokers,
             rd_kafka_event_error_string(ev));
  } else {
    size_t cnt = 0;
    const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
    rd_kafka_resp_err_t te = cnt ? rd_kafka_topic_result_error(tr[0]) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (te && te != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) /* another thread or process made it */
      snprintf(err, errlen, "cannot create topic '%s' on %s: %s", t->topic, t->brokers,
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
static int kafka_count(const wm_through_target *t, int timeout_ms, int *n, char *err, size_t errlen) {
  rd_kafka_t *rk = kafka_client(t, err, errlen);
  if (!rk) return -1;
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t r = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
  int rc = 0;
  *n = 0;
  if (r != RD_KAFKA_RESP_ERR_NO_ERROR) {
    snprintf(err, errlen, "cannot reach the Kafka brokers at %s: %s", t->brokers, rd_kafka_err2str(r));
    rc = -1;
  } else {
    for (int i = 0; i < md->topic_cnt; i++)
      if (strcmp(md->topics[i].topic, t->topic) == 0 && !md->topics[i].err) *n = md->topics[i].partition_cnt;
  }
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
  return rc;
}

static int kafka_ensure(const wm_through_target *t, int timeout_ms, char *err, size_t errlen) {
  int n = 0;
  if (kafka_count(t, timeout_ms, &n, err, errlen) != 0) return -1;
  if (n == 0) {
    if (kafka_create(t, timeout_ms, err, errlen) != 0) return -1;
    char e[1024]; /* now asked by name: the brokers know it */
    if (wm_kafka_partitions(t->brokers, t->topic, t->props, t->nprops, timeout_ms, &n, e, sizeof e) != 0) {
      snprintf(err, errlen, "%s", e);
      return -1;
    }
  }
  if (n == t->partitions) return 0;
  snprintf(err, errlen, "topic '%s' on %s has %d partitions, not %d", t->topic, t->brokers, n, t->partitions);
  return -1;
}

static int nats_ensure(const wm_through_target *t, int64_t *last, char *err, size_t errlen) {
  natsConnection *nc;
  jsCtx *js;
  if (wm_nats_connect(t->url, NULL, &nc, &js, err, errlen) != 0) return -1;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  char why[300];
  natsStatus s = js_GetStreamInfo(&si, js, t->stream, NULL, &jerr);
  if (s == NATS_NOT_FOUND) {
    char subj[600];
    snprintf(subj, sizeof subj, "%s.*", t->subject);
    const char *subjects[1] = {subj};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = t->stream;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    jerr = 0;
    s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s != NATS_OK && jerr == JSStreamNameExistErr) { /* another thread or process made it */
      jerr = 0;
      s = js_GetStreamInfo(&si, js, t->stream, NULL, &jerr);
    }
    if (s != NATS_OK)
      snprintf(err, errlen, "cannot create stream '%s' on %s: %s", t->stream, t->url,
               wm_nats_why(s, jerr, why, sizeof why));
  } else if (s != NATS_OK) {
    snprintf(err, errlen, "stream '%s' on %s: %s", t->stream, t->url, wm_nats_why(s, jerr, why, sizeof why));
  }
  if (s == NATS_OK && si) *last = (int64_t)si->State.LastSeq;
  if (si) jsStreamInfo_Destroy(si);
  wm_nats_close(nc, js);
  return s == NATS_OK ? 0 : -1;
}

int wm_through_ensure(const wm_through_target *t, int timeout_ms, int64_t *last, char *err,
                      size_t errlen) {
  *last = 0;
  if (t->kind == WM_THROUGH_KAFKA) return kafka_ensure(t, timeout_ms, err, errlen);
  return nats_ensure(t, last, err, errlen);
}

/* ---- the writer ------------------------------------------------------------------------------ */

typedef struct twriter {
  wm_through_target t;   /* strings owned */
  char *brokers, *topic, *url, *stream, *subject, **props;
  wm_keysel key;
  wm_codec_host codec;
  int writer, writers;
  uint64_t seq;          /* records sent */
  uint64_t mk;           /* markers sent since the last record */
  int ended;             /* the end was sent */
  wm_buf msg, text;
  /* Kafka */
  rd_kafka_t *rk;
  int kfailed;
  uint64_t unflushed;    /* messages produced since the last flush */
  /* NATS */
  natsConnection *nc;
  jsCtx *js;
  char *who;
  char **subjects;       /* per partition */
  atomic_int nfailed;    /* set by libnats' thread */
  char why[512];         /* written before the failure flag is set */
} twriter;

static int tw_failure(wm_op *op) {
  twriter *w = op->impl;
  if (w->t.kind == WM_THROUGH_KAFKA)
    return wm_ctx_error(op->ctx, "%s: cannot deliver to topic '%s' at %s: %s", op->name, w->topic, w->brokers,
                        w->why);
  return wm_ctx_error(op->ctx, "%s: cannot publish to stream '%s' at %s: %s", op->name, w->stream, w->url,
                      w->why);
}

static int tw_failed(twriter *w) {
  return w->t.kind == WM_THROUGH_KAFKA ? w->kfailed : atomic_load(&w->nfailed);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  twriter *w = opaque;
  if (m->err && !w->kfailed) {
    snprintf(w->why, sizeof w->why, "%s", rd_kafka_err2str(m->err));
    w->kfailed = 1;
  }
}

static void on_pub_error(jsCtx *js, jsPubAckErr *pae, void *closure) {
  (void)js;
  twriter *w = closure;
  if (atomic_load(&w->nfailed)) return;
  snprintf(w->why, sizeof w->why, "%s", pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err));
  atomic_store(&w->nfailed, 1);
}

/* The message's head in w->msg. */
static void tw_head(twriter *w, char kind, uint64_t seq, int64_t time) {
  wm_buf_clear(&w->msg);
  wm_buf_addc(&w->msg, THR_MAGIC);
  wm_buf_addc(&w->msg, THR_VERSION);
  wm_buf_addc(&w->msg, kind);
  wm_codec_put_uvar(&w->msg, (uint64_t)w->writer);
  wm_codec_put_uvar(&w->msg, (uint64_t)w->writers);
  wm_codec_put_uvar(&w->msg, seq);
  wm_codec_put_ivar(&w->msg, time);
}

/* Sends w->msg to partition p. WM_OK or WM_ERR. */
static int tw_send(wm_op *op, twriter *w, int p, uint64_t seq, int64_t ts) {
  if (w->msg.oom) return wm_ctx_error(op->ctx, "out of memory in '%s'", op->name);
  char wh[48], sh[24];
  snprintf(wh, sizeof wh, "%d/%d", w->writer, w->writers);
  snprintf(sh, sizeof sh, "%llu", (unsigned long long)seq);
  if (w->t.kind == WM_THROUGH_KAFKA) {
    rd_kafka_poll(w->rk, 0); /* delivery reports */
    int64_t mts = ts == WM_TIME_MIN || ts == WM_TIME_MAX || ts < 0 ? 0 : ts;
    for (;;) {
      if (w->kfailed) return tw_failure(op);
#if defined(__clang__) /* see wm_sink_kafka.c */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wint-to-void-pointer-cast"
#endif
      rd_kafka_resp_err_t e = rd_kafka_producev(
          w->rk, RD_KAFKA_V_TOPIC(w->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(w->msg.data, w->msg.len), RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_TIMESTAMP(mts),
          RD_KAFKA_V_HEADER("wm-writer", wh, -1), RD_KAFKA_V_HEADER("wm-seq", sh, -1), RD_KAFKA_V_END);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        w->unflushed++;
        return WM_OK;
      }
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        snprintf(w->why, sizeof w->why, "%s", rd_kafka_err2str(e));
        w->kfailed = 1;
        return tw_failure(op);
      }
      rd_kafka_poll(w->rk, 100); /* backpressure: wait for deliveries */
    }
  }
  if (atomic_load(&w->nfailed)) return tw_failure(op);
  natsMsg *m = NULL;
  natsStatus s = natsMsg_Create(&m, w->subjects[p], NULL, w->msg.data, (int)w->msg.len);
  if (s == NATS_OK) s = natsMsgHeader_Set(m, "wm-writer", wh);
  if (s == NATS_OK) s = natsMsgHeader_Set(m, "wm-seq", sh);
  if (s == NATS_OK) s = js_PublishMsgAsync(w->js, &m, NULL);
  if (m) natsMsg_Destroy(m); /* left to us when the publish failed */
  if (s != NATS_OK) {
    char why[300];
    snprintf(w->why, sizeof w->why, "%s", wm_nats_why(s, 0, why, sizeof why));
    atomic_store(&w->nfailed, 1);
    return tw_failure(op);
  }
  return WM_OK;
}

/* Waits until the log has every message sent so far. */
static int tw_complete(wm_op *op, twriter *w) {
  if (w->t.kind == WM_THROUGH_KAFKA) {
    if (!w->rk || !w->unflushed) return w->kfailed ? tw_failure(op) : WM_OK; /* nothing to wait for */
    rd_kafka_resp_err_t e = rd_kafka_flush(w->rk, THR_FLUSH_MS);
    if (!e) w->unflushed = 0;
    if (e && !w->kfailed) {
      snprintf(w->why, sizeof w->why, "%s", rd_kafka_err2str(e));
      w->kfailed = 1;
    }
  } else if (w->js) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = THR_FLUSH_MS;
    natsStatus s = js_PublishAsyncComplete(w->js, &po);
    if (s != NATS_OK && !atomic_load(&w->nfailed)) {
      snprintf(w->why, sizeof w->why, "%s while waiting for the acknowledgements", natsStatus_GetText(s));
      atomic_store(&w->nfailed, 1);
    }
  }
  return tw_failed(w) ? tw_failure(op) : WM_OK;
}

/* A marker to every partition, at position (records sent, its number since the last). */
static int tw_marker(wm_op *op, twriter *w, char kind, int64_t time) {
  tw_head(w, kind, w->seq, time);
  wm_codec_put_uvar(&w->msg, w->mk + 1);
  for (int p = 0; p < w->t.partitions; p++)
    if (tw_send(op, w, p, w->seq, WM_TIME_MIN) != WM_OK) return WM_ERR;
  w->mk++;
  return WM_OK;
}

static int tw_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  twriter *w = op->impl;
  wm_value key;
  if (w->key.fn(w->key.ud, op, rec, &key) != WM_OK) return WM_ERR;
  wm_buf_clear(&w->text);
  wm_format_value(&w->text, &key, 0, op->ctx->host.format, op->ctx->host.ud);
  if (w->text.oom) return wm_ctx_error(op->ctx, "out of memory in '%s'", op->name);
  int p = (int)(fnv1a32(w->text.data ? w->text.data : "", w->text.len) % (uint32_t)w->t.partitions);
  uint64_t seq = w->seq + 1;
  tw_head(w, K_RECORD, seq, ts);
  wm_encoder enc; /* a schema per message: every message is read on its own (replays, restores) */
  wm_encoder_init(&enc);
  char err[512];
  int rc = wm_encode_value(&enc, w->codec.encode ? &w->codec : NULL, &w->msg, rec, err, sizeof err);
  wm_encoder_free(&enc);
  if (rc != 0) {
    wm_buf b;
    wm_buf_init(&b);
    wm_op_format_record(op, rec, &b);
    rc = wm_ctx_error(op->ctx, "%s: cannot write record %s: %s", op->name, b.data ? b.data : "", err);
    wm_buf_free(&b);
    return rc;
  }
  if (tw_send(op, w, p, seq, ts) != WM_OK) return WM_ERR;
  w->seq = seq;
  w->mk = 0;
  return WM_OK;
}

static int tw_watermark(wm_op *op, int64_t wm) {
  twriter *w = op->impl;
  if (wm != WM_TIME_MAX) return tw_marker(op, w, K_WATERMARK, wm);
  if (w->ended) return WM_OK;
  if (tw_marker(op, w, K_END, wm) != WM_OK) return WM_ERR;
  w->ended = 1;
  return tw_complete(op, w);
}

static int tw_status(wm_op *op, bool idle) {
  twriter *w = op->impl;
  return w->ended ? WM_OK : tw_marker(op, w, idle ? K_IDLE : K_ACTIVE, WM_TIME_MIN);
}

/* Checkpoints: waits until the log holds every message the checkpoint covers, then keeps
 * the sequence number and the markers' number, so that what a restored writer sends
 * again carries the numbers it had and the readers drop it (version 1, sequence, marker
 * number, ended). */
static int tw_snapshot(wm_op *op, wm_state_io *io) {
  twriter *w = op->impl;
  if (tw_complete(op, w) != WM_OK) return WM_ERR;
  wm_state_put_header(io, 'R');
  wm_state_put_u(io, w->seq);
  wm_state_put_u(io, w->mk);
  wm_state_put_u(io, (uint64_t)w->ended);
  return wm_state_put_done(op, io);
}

static int tw_restore(wm_op *op, wm_state_io *io) {
  twriter *w = op->impl;
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint64_t seq, mk, ended;
  if (wm_state_get_header(&r, 'R', "repartition writer") != WM_OK ||
      wm_state_get_u(&r, &seq, "the writer's sequence number") != WM_OK ||
      wm_state_get_u(&r, &mk, "the writer's marker number") != WM_OK ||
      wm_state_get_u(&r, &ended, "the writer's end") != WM_OK || wm_state_get_end(&r) != WM_OK)
    return WM_ERR;
  w->seq = seq;
  w->mk = mk;
  w->ended = ended != 0;
  return WM_OK;
}

static void tw_free(wm_op *op) {
  twriter *w = op->impl;
  if (!w) return;
  if (w->rk) rd_kafka_destroy(w->rk);
  wm_nats_close(w->nc, w->js);
  if (w->key.free) w->key.free(w->key.ud);
  wm_buf_free(&w->msg);
  wm_buf_free(&w->text);
  for (int i = 0; w->subjects && i < w->t.partitions; i++) free(w->subjects[i]);
  free(w->subjects);
  for (int i = 0; w->props && i < w->t.nprops; i++) free(w->props[i]);
  free(w->props);
  free(w->brokers);
  free(w->topic);
  free(w->url);
  free(w->stream);
  free(w->subject);
  free(w->who);
  free(w);
}

static const wm_op_vt twriter_vt = {.kind = "through_write", .record = tw_record,
                                    .watermark = tw_watermark, .status = tw_status,
                                    .snapshot = tw_snapshot, .restore = tw_restore, .free = tw_free};

static char *dup_or_null(const char *s, int *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

static int tw_connect(wm_op *op, twriter *w) {
  wm_ctx *ctx = op->ctx;
  char e[600];
  if (w->t.kind == WM_THROUGH_KAFKA) {
    static const char *const sets[] = {"message.timeout.ms", "30000", "linger.ms", "5",
                                       "enable.idempotence", "true"}; /* in order per partition */
    rd_kafka_conf_t *conf = wm_kafka_conf(w->brokers, sets, 6, (const char *const *)w->props, w->t.nprops,
                                          e, sizeof e);
    if (!conf) return wm_ctx_error(ctx, "%s: %s", op->name, e);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, w);
    w->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    if (!w->rk) {
      rd_kafka_conf_destroy(conf);
      return wm_ctx_error(ctx, "%s: cannot create a Kafka producer for %s: %s", op->name, w->brokers, e);
    }
    /* the topic's leaders now: the first records then need not wait for them (about a
     * second on the first flush otherwise) */
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(w->rk, w->topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t r = rkt ? rd_kafka_metadata(w->rk, 0, rkt, &md, 10000) : rd_kafka_last_error();
    if (md) rd_kafka_metadata_destroy(md);
    if (rkt) rd_kafka_topic_destroy(rkt);
    if (r != RD_KAFKA_RESP_ERR_NO_ERROR)
      return wm_ctx_error(ctx, "%s: cannot reach the Kafka brokers at %s: %s", op->name, w->brokers,
                          rd_kafka_err2str(r));
    return WM_OK;
  }
  if (!(w->who = wm_nats_who(op->name, w->url))) return wm_ctx_error(ctx, "out of memory");
  if (wm_nats_connect(w->url, w->who, &w->nc, &w->js, e, sizeof e) != 0)
    return wm_ctx_error(ctx, "%s: %s", op->name, e);
  jsCtx_Destroy(w->js); /* again, with the error handler of asynchronous publishes */
  w->js = NULL;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.ErrHandler = on_pub_error;
  jo.PublishAsync.ErrHandlerClosure = w;
  jo.PublishAsync.MaxPending = 4096;
  jo.PublishAsync.StallWait = THR_FLUSH_MS; /* a full window is backpressure, not a failure */
  natsStatus s = natsConnection_JetStream(&w->js, w->nc, &jo);
  if (s != NATS_OK)
    return wm_ctx_error(ctx, "%s: no JetStream at %s: %s", op->name, w->url, natsStatus_GetText(s));
  return WM_OK;
}

wm_op *wm_through_writer_new(wm_ctx *ctx, const char *name, wm_through_writer_config *cfg) {
  twriter *w = calloc(1, sizeof *w);
  wm_op *op = w ? wm_op_new(ctx, &twriter_vt, w, name) : NULL;
  if (!op) {
    free(w);
    if (cfg->key.free) cfg->key.free(cfg->key.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  w->key = cfg->key; /* owned from now on */
  w->t = cfg->target;
  w->codec = cfg->codec;
  w->writer = cfg->writer;
  w->writers = cfg->writers;
  atomic_init(&w->nfailed, 0);
  wm_buf_init(&w->msg);
  wm_buf_init(&w->text);
  int oom = 0;
  w->brokers = dup_or_null(cfg->target.brokers, &oom);
  w->topic = dup_or_null(cfg->target.topic, &oom);
  w->url = dup_or_null(cfg->target.url, &oom);
  w->stream = dup_or_null(cfg->target.stream, &oom);
  w->subject = dup_or_null(cfg->target.subject, &oom);
  int np = w->t.partitions, nprops = w->t.nprops;
  w->t.nprops = 0; /* counts what is copied, for tw_free */
  if (nprops > 0 && !oom && !(w->props = calloc((size_t)nprops, sizeof *w->props))) oom = 1;
  for (int i = 0; !oom && i < nprops; i++, w->t.nprops++) w->props[i] = dup_or_null(cfg->target.props[i], &oom);
  w->t.partitions = 0;
  if (!oom && w->t.kind == WM_THROUGH_NATS && !(w->subjects = calloc((size_t)np, sizeof *w->subjects))) oom = 1;
  for (int p = 0; !oom && w->subjects && p < np; p++, w->t.partitions++) {
    char subj[600];
    snprintf(subj, sizeof subj, "%s.%d", w->subject, p);
    w->subjects[p] = dup_or_null(subj, &oom);
  }
  w->t.partitions = np;
  if (oom) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL; /* the op (and w) are freed with the context */
  }
  if (tw_connect(op, w) != WM_OK) return NULL;
  return op;
}

/* ---- the reader's tap -------------------------------------------------------------------------- */

typedef struct twr {  /* what a partition knows of one writer */
  int64_t wm;         /* its last watermark (MIN: none yet) */
  uint64_t last;      /* the sequence number of its last record read here */
  uint64_t ms, mk;    /* the position of its last marker read here */
  uint8_t heard, idle, ended;
} twr;

typedef struct tpart {
  int64_t wm;         /* the partition's watermark (MIN: none yet) */
  uint8_t idle, ended;
  uint64_t dups;      /* records dropped as already seen */
  uint64_t stale;     /* markers dropped as already seen */
  twr *w;             /* writers of it (in ttap.ws) */
} tpart;

typedef struct ttap {
  wm_partsrc_tap base; /* first */
  int n, writers;
  tpart *parts;
  twr *ws;
  wm_codec_host codec;
  int64_t out_wm;     /* what the source last emitted */
  int out_idle;
  wm_decoder dec;     /* of every record (tap_decode) */
  wm_buf def, row;    /* the last row definition decoded; a record's row without it */
} ttap;

/* Decodes a record's value at [b, end) into *v (owned). Every message defines its row's
 * schema (it is read on its own: replays, restores); when the definition is the one
 * decoded last, its schema is used again (no schema, and with the decoder's reuse of its
 * last row no row, made per record): the fields are read as a row of it. 0, or -1 with
 * err. */
static int tap_decode(ttap *t, wm_partsrc *s, const uint8_t *b, const uint8_t *end, wm_value *v, char *err,
                      size_t n) {
  const wm_codec_host *ch = t->codec.decode ? &t->codec : NULL;
  const wm_host *h = &s->op->ctx->host;
  const uint8_t *q = b + 1;
  uint64_t id = 0, nf = 0, len;
  int def = b < end && *b == WM_C_ROWDEF && wm_codec_get_uvar(&q, end, &id) == 0 && id < WM_CODEC_SCHEMAS &&
            wm_codec_get_uvar(&q, end, &nf) == 0;
  for (uint64_t k = 0; def && k < nf; k++) {
    def = q < end;
    q++; /* the field's type */
    def = def && wm_codec_get_uvar(&q, end, &len) == 0 && len <= (uint64_t)(end - q);
    if (def) q += len;
  }
  if (def && t->dec.schemas[id] && t->def.len == (size_t)(q - b) && memcmp(t->def.data, b, t->def.len) == 0) {
    wm_buf_clear(&t->row);
    wm_buf_addc(&t->row, WM_C_ROW);
    wm_codec_put_uvar(&t->row, id);
    wm_buf_add(&t->row, (const char *)q, (size_t)(end - q));
    if (t->row.oom) {
      snprintf(err, n, "out of memory");
      return -1;
    }
    const uint8_t *r = (const uint8_t *)t->row.data;
    return wm_decode_value(&t->dec, h, ch, &r, r + t->row.len, v, err, n);
  }
  const uint8_t *start = b;
  if (wm_decode_value(&t->dec, h, ch, &b, end, v, err, n) != 0) return -1;
  if (def) { /* known from now on (only once decoded: its schema is the decoder's now) */
    wm_buf_clear(&t->def);
    wm_buf_add(&t->def, (const char *)start, (size_t)(q - start));
    if (t->def.oom) t->def.len = 0; /* (not known then) */
  }
  return 0;
}

static const wm_partsrc_tap_vt ttap_vt;

uint64_t wm_through_duplicates(const wm_op *op) {
  if (!wm_op_is_partsrc(op)) return 0;
  const wm_partsrc *s = op->impl;
  if (!s->cfg.tap || s->cfg.tap->vt != &ttap_vt) return 0;
  const ttap *t = (const ttap *)s->cfg.tap;
  uint64_t d = 0;
  for (int i = 0; i < t->n; i++) d += t->parts[i].dups;
  return d;
}

/* The partition's watermark, idleness and end from its writers. */
static void tap_part(ttap *t, int i) {
  tpart *p = &t->parts[i];
  int heard = 1, active = 0, ended = 1;
  int64_t m = WM_TIME_MAX;
  for (int k = 0; k < t->writers; k++) {
    const twr *w = &p->w[k];
    heard &= w->heard;
    if (w->ended) continue;
    ended = 0;
    if (w->idle) continue;
    active = 1;
    if (w->wm < m) m = w->wm;
  }
  if (!heard) return; /* no watermark before every writer has been heard of */
  if (ended) {
    p->ended = 1;
    p->idle = 0;
    p->wm = WM_TIME_MAX;
    return;
  }
  p->idle = !active;
  if (active && m > p->wm) p->wm = m; /* a writer back from idle does not set it back */
}

/* The source's watermark and status: the minimum over its partitions that are neither
 * idle nor ended (a partition that has ended leaves with the source's end). */
static int tap_out(ttap *t, wm_partsrc *s) {
  int active = 0, open = 0;
  int64_t m = WM_TIME_MAX;
  for (int i = 0; i < t->n; i++) {
    const tpart *p = &t->parts[i];
    if (p->ended) continue;
    open = 1;
    if (p->idle) continue;
    active = 1;
    if (p->wm < m) m = p->wm;
  }
  if (!open) return WM_OK;
  if (!active) {
    if (t->out_idle) return WM_OK;
    t->out_idle = 1;
    return wm_op_emit_status(s->op, true);
  }
  if (t->out_idle) {
    t->out_idle = 0;
    if (wm_op_emit_status(s->op, false) != WM_OK) return WM_ERR;
  }
  if (m > t->out_wm && m != WM_TIME_MIN) {
    t->out_wm = m;
    return wm_op_emit_watermark(s->op, m);
  }
  return WM_OK;
}

static int tap_bad(wm_partsrc *s, int i, int64_t at, const char *why) {
  return wm_ctx_error(s->op->ctx, "%s: %s %lld of %s: %s", s->op->name, s->unit, (long long)at,
                      s->parts[i].name, why);
}

static int tap_message(wm_partsrc_tap *tp, wm_partsrc *s, int i, const wm_value *val, int64_t ts,
                       int64_t at) {
  (void)ts;
  ttap *t = (ttap *)tp;
  tpart *p = &t->parts[i];
  size_t len = 0;
  const char *data = wm_value_is_string(val) ? wm_value_str(val, &len) : NULL;
  if (!data || len < 3 || data[0] != THR_MAGIC)
    return tap_bad(s, i, at, "not a message of a repartitioning writer (the topic holds something else)");
  const uint8_t *b = (const uint8_t *)data, *end = b + len;
  uint64_t writer, writers, seq;
  int64_t time;
  if (b[1] != THR_VERSION) return tap_bad(s, i, at, "a message of another version of wmrun's repartitioning");
  int kind = b[2];
  b += 3;
  if (wm_codec_get_uvar(&b, end, &writer) != 0 || wm_codec_get_uvar(&b, end, &writers) != 0 ||
      wm_codec_get_uvar(&b, end, &seq) != 0 || wm_codec_get_ivar(&b, end, &time) != 0)
    return tap_bad(s, i, at, "a damaged message (truncated)");
  if (writers != (uint64_t)t->writers || writer >= writers) {
    char why[200];
    snprintf(why, sizeof why, "a message of writer %llu of %llu, but %d write to it here (another job's "
             "messages in the topic?)", (unsigned long long)writer, (unsigned long long)writers, t->writers);
    return tap_bad(s, i, at, why);
  }
  twr *w = &p->w[writer];
  int first = !w->heard;
  w->heard = 1;
  if (kind != K_RECORD) {
    /* a marker at a position before one read here (after a record read here, or at or
     * before the last marker) is one that a restored writer sends again: its idle or
     * active status is of the past */
    uint64_t k;
    if (wm_codec_get_uvar(&b, end, &k) != 0) return tap_bad(s, i, at, "a damaged message (truncated)");
    if (seq < w->last || seq < w->ms || (seq == w->ms && k <= w->mk)) {
      p->stale++;
      if (!first) return WM_OK;
      tap_part(t, i);
      return tap_out(t, s);
    }
    w->ms = seq;
    w->mk = k;
  }
  switch (kind) {
  case K_RECORD: {
    if (seq <= w->last || w->ended) { /* sent again by a writer restored from a checkpoint
                                          (a writer's end is final) */
      p->dups++;
      if (!first) return WM_OK;
      break;
    }
    w->last = seq;
    wm_value v;
    char err[300];
    if (tap_decode(t, s, b, end, &v, err, sizeof err) != 0) return tap_bad(s, i, at, err);
    int rc = wm_partsrc_emit_record(s, i, &v, time, at);
    wm_value_release(&s->op->ctx->host, &v);
    if (rc != WM_OK || !first) return rc;
    break;
  }
  case K_WATERMARK:
    if (time > w->wm) w->wm = time;
    break;
  case K_IDLE:
  case K_ACTIVE: w->idle = kind == K_IDLE; break;
  case K_END:
    w->ended = 1;
    w->wm = WM_TIME_MAX;
    break;
  default: return tap_bad(s, i, at, "a message of an unknown kind");
  }
  tap_part(t, i);
  return tap_out(t, s);
}

static int64_t tap_watermark(const wm_partsrc_tap *tp, int i) { return ((const ttap *)tp)->parts[i].wm; }
static int tap_ended(const wm_partsrc_tap *tp, int i) { return ((const ttap *)tp)->parts[i].ended; }

/* After the positions: version 1, the source's watermark and idleness, the number of
 * writers and of partitions, then per partition its name, watermark, flags idle|ended<<1,
 * the duplicates and old markers dropped, and per writer its watermark, last sequence,
 * last marker's position (sequence, number) and flags heard|idle<<1|ended<<2. */
static int tap_snapshot(wm_partsrc_tap *tp, wm_partsrc *s, wm_buf *out) {
  ttap *t = (ttap *)tp;
  wm_buf_addc(out, 1);
  wm_codec_put_ivar(out, t->out_wm);
  wm_codec_put_uvar(out, (uint64_t)t->out_idle);
  wm_codec_put_uvar(out, (uint64_t)t->writers);
  wm_codec_put_uvar(out, (uint64_t)t->n);
  for (int i = 0; i < t->n; i++) {
    const tpart *p = &t->parts[i];
    size_t len = strlen(s->parts[i].name);
    wm_codec_put_uvar(out, len);
    wm_buf_add(out, s->parts[i].name, len);
    wm_codec_put_ivar(out, p->wm);
    wm_codec_put_uvar(out, (uint64_t)(p->idle | p->ended << 1));
    wm_codec_put_uvar(out, p->dups);
    wm_codec_put_uvar(out, p->stale);
    for (int k = 0; k < t->writers; k++) {
      wm_codec_put_ivar(out, p->w[k].wm);
      wm_codec_put_uvar(out, p->w[k].last);
      wm_codec_put_uvar(out, p->w[k].ms);
      wm_codec_put_uvar(out, p->w[k].mk);
      wm_codec_put_uvar(out, (uint64_t)(p->w[k].heard | p->w[k].idle << 1 | p->w[k].ended << 2));
    }
  }
  return out->oom ? wm_ctx_error(s->op->ctx, "out of memory") : WM_OK;
}

static int tap_restore(wm_partsrc_tap *tp, wm_partsrc *s, const uint8_t **pp, const uint8_t *end) {
  ttap *t = (ttap *)tp;
  const uint8_t *b = *pp;
  uint64_t idle, writers, n;
  int64_t owm;
  if (b >= end || *b++ != 1 || wm_codec_get_ivar(&b, end, &owm) != 0 || wm_codec_get_uvar(&b, end, &idle) != 0 ||
      wm_codec_get_uvar(&b, end, &writers) != 0 || wm_codec_get_uvar(&b, end, &n) != 0 ||
      n > (uint64_t)(end - b))
    goto damaged;
  if (writers != (uint64_t)t->writers)
    return wm_ctx_error(s->op->ctx, "cannot restore '%s': the checkpoint was taken with %llu writers "
                        "upstream of the repartitioning, this run has %d", s->op->name,
                        (unsigned long long)writers, t->writers);
  t->out_wm = owm;
  t->out_idle = idle != 0;
  for (uint64_t j = 0; j < n; j++) {
    uint64_t len, flags, dups, stale;
    int64_t wm;
    if (wm_codec_get_uvar(&b, end, &len) != 0 || len > (uint64_t)(end - b)) goto damaged;
    const char *name = (const char *)b;
    b += len;
    if (wm_codec_get_ivar(&b, end, &wm) != 0 || wm_codec_get_uvar(&b, end, &flags) != 0 ||
        wm_codec_get_uvar(&b, end, &dups) != 0 || wm_codec_get_uvar(&b, end, &stale) != 0)
      goto damaged;
    tpart *p = NULL;
    for (int i = 0; i < t->n && !p; i++)
      if (strlen(s->parts[i].name) == len && memcmp(s->parts[i].name, name, len) == 0) p = &t->parts[i];
    if (p) {
      p->wm = wm;
      p->idle = flags & 1;
      p->ended = (flags >> 1) & 1;
      p->dups = dups;
      p->stale = stale;
    }
    for (int k = 0; k < t->writers; k++) {
      int64_t ww;
      uint64_t last, ms, mk, wf;
      if (wm_codec_get_ivar(&b, end, &ww) != 0 || wm_codec_get_uvar(&b, end, &last) != 0 ||
          wm_codec_get_uvar(&b, end, &ms) != 0 || wm_codec_get_uvar(&b, end, &mk) != 0 ||
          wm_codec_get_uvar(&b, end, &wf) != 0)
        goto damaged;
      if (!p) continue; /* a partition this instance does not read now */
      p->w[k] = (twr){.wm = ww, .last = last, .ms = ms, .mk = mk, .heard = wf & 1, .idle = (wf >> 1) & 1,
                      .ended = (wf >> 2) & 1};
    }
  }
  *pp = b;
  return WM_OK;
damaged:
  return wm_ctx_error(s->op->ctx, "cannot restore '%s': the checkpoint's writer state is damaged", s->op->name);
}

static void tap_metrics(const wm_partsrc_tap *tp, const wm_partsrc *s, wm_buf *out) {
  const ttap *t = (const ttap *)tp;
  for (int i = 0; i < t->n; i++) {
    const tpart *p = &t->parts[i];
    int heard = 0, ended = 0;
    for (int k = 0; k < t->writers; k++) {
      heard += p->w[k].heard;
      ended += p->w[k].ended;
    }
    char wm[32], line[1400];
    if (p->wm == WM_TIME_MIN) snprintf(wm, sizeof wm, "-");
    else if (p->wm == WM_TIME_MAX) snprintf(wm, sizeof wm, "MAX");
    else snprintf(wm, sizeof wm, "%lld", (long long)p->wm);
    snprintf(line, sizeof line,
             "repartition: '%s' partition %s: watermark %s%s, writers heard %d of %d, ended %d; "
             "%llu duplicates dropped (and %llu markers sent again)\n",
             s->op->name, s->parts[i].name, wm, p->idle ? " idle" : "", heard, t->writers, ended,
             (unsigned long long)p->dups, (unsigned long long)p->stale);
    wm_buf_adds(out, line);
  }
}

static void tap_free(wm_partsrc_tap *tp) {
  ttap *t = (ttap *)tp;
  wm_decoder_free(&t->dec);
  wm_buf_free(&t->def);
  wm_buf_free(&t->row);
  free(t->parts);
  free(t->ws);
  free(t);
}

static const wm_partsrc_tap_vt ttap_vt = {.message = tap_message, .watermark = tap_watermark,
                                          .ended = tap_ended, .snapshot = tap_snapshot,
                                          .restore = tap_restore, .metrics = tap_metrics,
                                          .free = tap_free};

wm_partsrc_tap *wm_through_tap_new(int nparts, int writers, const wm_codec_host *codec) {
  ttap *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->base.vt = &ttap_vt;
  wm_decoder_init(&t->dec);
  wm_buf_init(&t->def);
  wm_buf_init(&t->row);
  t->n = nparts;
  t->writers = writers;
  t->out_wm = WM_TIME_MIN;
  if (codec) t->codec = *codec;
  t->parts = calloc((size_t)(nparts > 0 ? nparts : 1), sizeof *t->parts);
  t->ws = calloc((size_t)(nparts > 0 ? nparts : 1) * (size_t)(writers > 0 ? writers : 1), sizeof *t->ws);
  if (!t->parts || !t->ws) {
    tap_free(&t->base);
    return NULL;
  }
  for (int i = 0; i < nparts; i++) {
    t->parts[i].wm = WM_TIME_MIN;
    t->parts[i].w = &t->ws[(size_t)i * (size_t)writers];
    for (int k = 0; k < writers; k++) t->parts[i].w[k].wm = WM_TIME_MIN;
  }
  return &t->base;
}
