/* write_kafka: a librdkafka producer, one message per record (at-least-once; the message
 * timestamp is the record's). Delivery reports are served on every record; the end of
 * input waits for every message to be delivered.
 *
 * Checkpoints (at-least-once, as Flink's Kafka sink): a snapshot waits until the brokers
 * have acknowledged every message produced before it (ksink_drain), so that a checkpoint
 * never covers a record that is still only in the producer's queue: after a crash, the
 * records after the checkpoint are produced again (duplicates, never a loss). The wait is
 * bounded: librdkafka gives a message up after message.timeout.ms (30 s unless the job's
 * properties say otherwise), which fails the sink; the snapshot itself gives up at that
 * timeout plus KSINK_DRAIN_SLACK_MS, failing the checkpoint (and so the job) rather than
 * completing it. The state is a version byte (no position: the sources hold them). */
#include <librdkafka/rdkafka.h>
#include <uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_statefmt.h"
#include "io/wm_conn.h"
#include "io/wm_kafka.h"
#include "time/wm_time.h"

#define KSINK_FLUSH_MS 60000       /* the least the drain waits */
#define KSINK_DRAIN_SLACK_MS 5000  /* beyond message.timeout.ms */

typedef struct ksink {
  wm_kafka_sink_config cfg;
  char *brokers, *topic, *key_name, *part_name;
  wm_field key_field, part_field;
  int npart;             /* partitions of the topic */
  int64_t drain_ms;      /* how long a drain waits (max(KSINK_FLUSH_MS, message.timeout.ms + slack)) */
  rd_kafka_t *rk;
  wm_buf val, key;
  int failed;
  char why[512];
} ksink;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  ksink *k = opaque;
  if (m->err && !k->failed) {
    k->failed = 1;
    snprintf(k->why, sizeof k->why, "%s", rd_kafka_err2str(m->err));
  }
}

static int ksink_failure(wm_op *op) {
  ksink *k = op->impl;
  return wm_ctx_error(op->ctx, "%s: cannot deliver to topic '%s' at %s: %s", op->name, k->topic,
                      k->brokers, k->why);
}

/* The message key of a record: the field's value as print shows it (a string as it is). */
static int ksink_key(wm_op *op, ksink *k, const wm_value *rec, int *has) {
  wm_buf_clear(&k->key);
  *has = 0;
  if (k->cfg.key.fn) {
    if (k->cfg.key.fn(k->cfg.key.ud, op, rec, &k->key) != WM_OK) return WM_ERR;
    *has = 1;
  } else if (k->key_name) {
    wm_value v;
    if (wm_field_get(&op->ctx->host, &k->key_field, rec, &v, op->ctx->err, sizeof op->ctx->err) != 0)
      return WM_ERR;
    if (v.type == WM_NIL) return WM_OK;
    wm_format_value(&k->key, &v, 0, op->ctx->host.format, op->ctx->host.ud);
    *has = 1;
  }
  if (k->key.oom) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  return WM_OK;
}

/* The partition of a record: RD_KAFKA_PARTITION_UA (the partitioner's choice) without a
 * partition field or function. WM_OK or WM_ERR. */
static int ksink_partition(wm_op *op, ksink *k, const wm_value *rec, int32_t *part) {
  *part = RD_KAFKA_PARTITION_UA;
  wm_value v = wm_nil();
  if (k->cfg.partition.fn) {
    wm_buf_clear(&k->key);
    if (k->cfg.partition.fn(k->cfg.partition.ud, op, rec, &k->key) != WM_OK) return WM_ERR;
    wm_buf_addc(&k->key, '\0');
    if (k->key.oom) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
    char *end;
    long long p = strtoll(k->key.data, &end, 10);
    if (end != k->key.data && *end == 0) v = wm_int(p);
    else v = wm_cstr(k->key.data, strlen(k->key.data));
  } else if (k->part_name) {
    if (wm_field_get(&op->ctx->host, &k->part_field, rec, &v, op->ctx->err, sizeof op->ctx->err) != 0)
      return WM_ERR;
  } else {
    return WM_OK;
  }
  if (v.type != WM_INT || v.u.i < 0 || v.u.i >= k->npart) {
    wm_buf b;
    wm_buf_init(&b);
    wm_format_value(&b, rec, 0, op->ctx->host.format, op->ctx->host.ud);
    int rc = wm_ctx_error(op->ctx, "%s: the partition must be an integer from 0 to %d (topic '%s' has %d), "
                          "in record %s", op->name, k->npart - 1, k->topic, k->npart, b.data ? b.data : "");
    wm_buf_free(&b);
    return rc;
  }
  *part = (int32_t)v.u.i;
  return WM_OK;
}

static int ksink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  ksink *k = op->impl;
  rd_kafka_poll(k->rk, 0); /* delivery reports */
  if (k->failed) return ksink_failure(op);
  wm_buf_clear(&k->val);
  if (k->cfg.format == WM_FMT_CUSTOM) {
    if (k->cfg.custom.fn(k->cfg.custom.ud, op, rec, &k->val) != WM_OK) return WM_ERR;
  } else {
    wm_format_value(&k->val, rec, k->cfg.format == WM_FMT_JSON, op->ctx->host.format, op->ctx->host.ud);
  }
  if (wm_buf_reserve(&k->val, 1) != 0 || k->val.oom)
    return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  int32_t part;
  if (ksink_partition(op, k, rec, &part) != WM_OK) return WM_ERR;
  int has_key;
  if (ksink_key(op, k, rec, &has_key) != WM_OK) return WM_ERR;
  int64_t mts = ts == WM_TIME_MIN || ts < 0 ? 0 : ts;
  for (;;) {
/* librdkafka's RD_KAFKA_V_* macros pass an int through a void * vararg; clang (the fuzz
 * build) warns about their cast, gcc does not */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wint-to-void-pointer-cast"
#endif
    rd_kafka_resp_err_t e = rd_kafka_producev(
        k->rk, RD_KAFKA_V_TOPIC(k->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(k->val.data, k->val.len),
        RD_KAFKA_V_KEY(has_key ? k->key.data : NULL, has_key ? k->key.len : 0),
        RD_KAFKA_V_PARTITION(part), RD_KAFKA_V_TIMESTAMP(mts), RD_KAFKA_V_END);
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(k->rk, 100); /* backpressure: wait for deliveries */
      if (k->failed) return ksink_failure(op);
      continue;
    }
    snprintf(k->why, sizeof k->why, "%s", rd_kafka_err2str(e));
    return ksink_failure(op);
  }
  return WM_OK;
}

/* Waits until the brokers have acknowledged every message produced so far (delivery reports
 * served meanwhile), at most k->drain_ms. WM_OK, or WM_ERR naming the sink, the topic and
 * what is left. `why`: what waits ("the end of input", "checkpoint"). */
static int ksink_drain(wm_op *op, ksink *k, const char *why) {
  uint64_t t0 = uv_hrtime();
  for (;;) {
    rd_kafka_resp_err_t e = rd_kafka_flush(k->rk, 200);
    if (k->failed) return ksink_failure(op);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return WM_OK;
    if (e != RD_KAFKA_RESP_ERR__TIMED_OUT) {
      k->failed = 1;
      snprintf(k->why, sizeof k->why, "%s", rd_kafka_err2str(e));
      return ksink_failure(op);
    }
    int64_t waited = (int64_t)((uv_hrtime() - t0) / 1000000u);
    if (waited >= k->drain_ms) {
      k->failed = 1;
      snprintf(k->why, sizeof k->why, "%d messages still unacknowledged after %.1f s of waiting for %s "
               "(write_kafka waits message.timeout.ms + %.1f s, at least %.1f s)", rd_kafka_outq_len(k->rk),
               (double)waited / 1000.0, why, KSINK_DRAIN_SLACK_MS / 1000.0, KSINK_FLUSH_MS / 1000.0);
      return ksink_failure(op);
    }
  }
}

static int ksink_watermark(wm_op *op, int64_t wm) {
  ksink *k = op->impl;
  if (wm != WM_TIME_MAX) return WM_OK;
  return ksink_drain(op, k, "the end of input");
}

/* version 1, nothing else: what matters is that every message before it was delivered */
static int ksink_snapshot(wm_op *op, wm_state_io *io) {
  ksink *k = op->impl;
  if (ksink_drain(op, k, "a checkpoint") != WM_OK) return WM_ERR;
  wm_buf_addc(io->out, 1);
  return wm_state_put_done(op, io);
}

static int ksink_restore(wm_op *op, wm_state_io *io) {
  if (io->len == 0) return WM_OK; /* a checkpoint of a wmrun whose write_kafka kept nothing */
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint64_t ver;
  if (wm_state_get_u(&r, &ver, "the sink's format version") != WM_OK) return WM_ERR;
  if (ver != 1)
    return wm_ctx_error(op->ctx, "checkpoint state of write_kafka of format version %llu, this "
                                 "wmrun reads version 1", (unsigned long long)ver);
  return wm_state_get_end(&r);
}

static void ksink_free(wm_op *op) {
  ksink *k = op->impl;
  if (!k) return;
  if (k->rk) rd_kafka_destroy(k->rk);
  if (k->cfg.custom.free) k->cfg.custom.free(k->cfg.custom.ud);
  if (k->cfg.key.free) k->cfg.key.free(k->cfg.key.ud);
  if (k->cfg.partition.free) k->cfg.partition.free(k->cfg.partition.ud);
  wm_buf_free(&k->val);
  wm_buf_free(&k->key);
  free(k->brokers);
  free(k->topic);
  free(k->key_name);
  free(k->part_name);
  free(k);
}

static const wm_op_vt ksink_vt = {.kind = "write_kafka", .record = ksink_record,
                                  .watermark = ksink_watermark, .snapshot = ksink_snapshot,
                                  .restore = ksink_restore, .free = ksink_free};

wm_op *wm_kafka_sink_new(wm_ctx *ctx, const char *name, wm_kafka_sink_config *cfg) {
  ksink *k = calloc(1, sizeof *k);
  if (!k) {
    if (cfg->custom.free) cfg->custom.free(cfg->custom.ud);
    if (cfg->key.free) cfg->key.free(cfg->key.ud);
    if (cfg->partition.free) cfg->partition.free(cfg->partition.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  k->cfg = *cfg;
  wm_buf_init(&k->val);
  wm_buf_init(&k->key);
  wm_op *op = wm_op_new(ctx, &ksink_vt, k, name);
  if (!op) {
    wm_op tmp = {.impl = k};
    ksink_free(&tmp); /* frees cfg's parts too (k->cfg owns them) */
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  k->brokers = strdup(cfg->brokers);
  k->topic = strdup(cfg->topic);
  if (cfg->key_field) {
    k->key_name = strdup(cfg->key_field);
    k->key_field.name = k->key_name;
    k->key_field.index = -1;
  }
  if (cfg->partition_field) {
    k->part_name = strdup(cfg->partition_field);
    k->part_field.name = k->part_name;
    k->part_field.index = -1;
  }
  if (!k->brokers || !k->topic || (cfg->key_field && !k->key_name) ||
      (cfg->partition_field && !k->part_name)) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  char e[512];
  int n;
  if (wm_kafka_partitions(cfg->brokers, cfg->topic, cfg->props, cfg->nprops, 10000, &n, e, sizeof e) != 0) {
    wm_ctx_error(ctx, "%s: %s", name, e);
    return NULL;
  }
  k->npart = n;
  static const char *const sets[] = {"message.timeout.ms", "30000", "linger.ms", "5"};
  rd_kafka_conf_t *conf = wm_kafka_conf(cfg->brokers, sets, 4, cfg->props, cfg->nprops, e, sizeof e);
  if (!conf) {
    wm_ctx_error(ctx, "%s: %s", name, e);
    return NULL;
  }
  char mt[32];
  size_t mtl = sizeof mt;
  long long mto = 30000;
  if (rd_kafka_conf_get(conf, "message.timeout.ms", mt, &mtl) == RD_KAFKA_CONF_OK) mto = atoll(mt);
  k->drain_ms = mto + KSINK_DRAIN_SLACK_MS > KSINK_FLUSH_MS ? mto + KSINK_DRAIN_SLACK_MS : KSINK_FLUSH_MS;
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, k);
  k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
  if (!k->rk) {
    rd_kafka_conf_destroy(conf);
    wm_ctx_error(ctx, "%s: cannot create a Kafka producer for %s: %s", name, cfg->brokers, e);
    return NULL;
  }
  return op;
}
