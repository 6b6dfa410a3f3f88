/* write_kafka: one message per record through a Kafka transport (wm_transport.h: a
 * librdkafka producer; at-least-once; the message timestamp is the record's). Delivery
 * reports are served on every record; the end of input waits for every message to be
 * delivered.
 *
 * Checkpoints (at-least-once, as Flink's Kafka sink): a snapshot waits until the brokers
 * have acknowledged every message produced before it (wm_transport_complete), so that a
 * checkpoint never covers a record that is still only in the producer's queue: after a
 * crash, the records after the checkpoint are produced again (duplicates, never a loss). The
 * wait is bounded: librdkafka gives a message up after message.timeout.ms (30 s unless the
 * job's properties say otherwise), which fails the sink; the snapshot itself gives up at that
 * timeout plus 5 s (at least 60 s), failing the checkpoint (and so the job) rather than
 * completing it. The state is a version byte (no position: the sources hold them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_statefmt.h"
#include "io/wm_conn.h"
#include "io/wm_transport.h"
#include "time/wm_time.h"

typedef struct ksink {
  wm_kafka_sink_config cfg;
  char *brokers, *topic, *key_name, *part_name;
  wm_field key_field, part_field;
  int npart;             /* partitions of the topic */
  wm_transport *t;
  wm_buf val, key;
} ksink;

/* The message key of a record: the field's value as print shows it (a string as it is). */
static int ksink_key(wm_op *op, ksink *k, const wm_value *rec, int *has) {
  wm_buf_clear(&k->key);
  *has = 0;
  if (k->cfg.key.fn) {
    if (k->cfg.key.fn(k->cfg.key.ud, op, rec, &k->key) != WM_OK) return WM_ERR;
    *has = 1;
  } else if (k->key_name) {
    wm_value v;
    if (wm_field_get(&op->ctx->host, &k->key_field, rec, &v, &op->ctx->error) != 0) return WM_ERR;
    if (v.type == WM_NIL) return WM_OK;
    wm_format_value(&k->key, &v, 0, op->ctx->host.format, op->ctx->host.ud);
    *has = 1;
  }
  if (k->key.oom) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  return WM_OK;
}

/* The partition of a record: WM_TRANSPORT_ANY (the partitioner's choice) without a
 * partition field or function. WM_OK or WM_ERR. */
static int ksink_partition(wm_op *op, ksink *k, const wm_value *rec, int *part) {
  *part = WM_TRANSPORT_ANY;
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
    if (wm_field_get(&op->ctx->host, &k->part_field, rec, &v, &op->ctx->error) != 0) return WM_ERR;
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
  *part = (int)v.u.i;
  return WM_OK;
}

static int ksink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  ksink *k = op->impl;
  if (wm_transport_failed(k->t)) return wm_transport_error(op, k->t);
  wm_buf_clear(&k->val);
  if (k->cfg.format == WM_FMT_CUSTOM) {
    if (k->cfg.custom.fn(k->cfg.custom.ud, op, rec, &k->val) != WM_OK) return WM_ERR;
  } else {
    wm_format_value(&k->val, rec, k->cfg.format == WM_FMT_JSON, op->ctx->host.format, op->ctx->host.ud);
  }
  if (wm_buf_reserve(&k->val, 1) != 0 || k->val.oom)
    return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  int part;
  if (ksink_partition(op, k, rec, &part) != WM_OK) return WM_ERR;
  int has_key;
  if (ksink_key(op, k, rec, &has_key) != WM_OK) return WM_ERR;
  wm_transport_msg m = {.data = k->val.data, .len = k->val.len, .key = has_key ? k->key.data : NULL,
                        .keylen = has_key ? k->key.len : 0, .partition = part, .ts = ts};
  return wm_transport_send(k->t, &m) == WM_OK ? WM_OK : wm_transport_error(op, k->t);
}

static int ksink_watermark(wm_op *op, int64_t wm) {
  ksink *k = op->impl;
  if (wm != WM_TIME_MAX || wm_transport_complete(k->t, WM_TRANSPORT_END) == WM_OK) return WM_OK;
  return wm_transport_error(op, k->t);
}

/* version 1, nothing else: what matters is that every message before it was delivered */
static int ksink_snapshot(wm_op *op, wm_state_io *io) {
  ksink *k = op->impl;
  if (wm_transport_complete(k->t, WM_TRANSPORT_CHECKPOINT) != WM_OK) return wm_transport_error(op, k->t);
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
  wm_transport_free(k->t);
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
  int n;
  if (wm_kafka_partitions(cfg->brokers, cfg->topic, cfg->props, cfg->nprops, 10000, &n, &ctx->error) != 0) {
    wm_ctx_error(ctx, "%s: %s", name, ctx->error.msg);
    return NULL;
  }
  k->npart = n;
  wm_transport_config tc = {.target = {.kind = WM_TRANSPORT_KAFKA, .brokers = cfg->brokers, .topic = cfg->topic,
                                       .props = cfg->props, .nprops = cfg->nprops},
                            .name = op->name, .label = "write_kafka"};
  if (!(k->t = wm_transport_kafka_open(&tc, &ctx->error))) {
    wm_ctx_error(ctx, "%s: %s", name, ctx->error.msg);
    return NULL;
  }
  return op;
}
