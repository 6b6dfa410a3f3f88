/* write_nats: publishes one JetStream message per record through a NATS transport
 * (wm_transport.h: asynchronous publishes, resends through outages), each with a
 * deterministic Nats-Msg-Id ("<prefix>/<instance>/<n>", n counting the sink's records), so
 * that output replayed after a restore is de-duplicated by the server within the stream's
 * duplicate window. The stream is created on the first record when missing (unless a
 * checkpoint says the sink had written to it: then it was deleted, and the sink refuses to
 * make a new one that would hold only what comes after the checkpoint).
 *
 * Outages (docs/connectors.md, "Writing"): nothing is dropped and nothing fails before
 * cfg.timeout_ms (default 60 s) has passed without the server acknowledging anything
 * (wm_transport_nats.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_statefmt.h"
#include "io/wm_conn.h"
#include "io/wm_transport.h"
#include "time/wm_time.h"

typedef struct nsink {
  wm_nats_sink_config cfg;
  char *subject, *prefix;
  wm_transport *t;
  int ensured;       /* the stream exists */
  uint64_t n;        /* records published */
  uint64_t restored; /* the record count of the checkpoint restored (0: none) */
  wm_buf val, subj;
} nsink;

static int nsink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  nsink *k = op->impl;
  if (wm_transport_failed(k->t)) return wm_transport_error(op, k->t);
  wm_buf_clear(&k->val);
  if (k->cfg.format == WM_FMT_CUSTOM) {
    if (k->cfg.custom.fn(k->cfg.custom.ud, op, rec, &k->val) != WM_OK) return WM_ERR;
  } else {
    wm_format_value(&k->val, rec, k->cfg.format == WM_FMT_JSON, op->ctx->host.format, op->ctx->host.ud);
  }
  const char *subject = k->subject;
  if (!subject) {
    wm_buf_clear(&k->subj);
    if (k->cfg.subject_fn.fn(k->cfg.subject_fn.ud, op, rec, &k->subj) != WM_OK) return WM_ERR;
    wm_buf_addc(&k->subj, '\0');
    if (k->subj.oom) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
    subject = k->subj.data;
    if (!subject[0] || strpbrk(subject, " \t\r\n*>"))
      return wm_ctx_error(op->ctx, "%s: the subject function returned '%s', not a subject", op->name,
                          subject);
  }
  if (wm_buf_reserve(&k->val, 1) != 0 || k->val.oom)
    return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  if (!k->ensured) {
    int rc = k->t->vt->ensure(k->t, subject, k->restored == 0, &op->ctx->error);
    if (rc < 0) return wm_ctx_error(op->ctx, "%s: %s", op->name, op->ctx->error.msg);
    if (rc > 0)
      return wm_ctx_error(op->ctx, "%s: stream '%s' does not exist at %s, but the checkpoint restored says "
                          "this sink had written %llu records to it: it was deleted since. Not making a "
                          "new one that would hold only the records after the checkpoint (bring the "
                          "stream back, or start over with --fresh)", op->name, k->t->dest, k->t->server,
                          (unsigned long long)k->restored);
    k->ensured = 1;
  }
  char id[600];
  snprintf(id, sizeof id, "%s/%d/%llu", k->prefix, k->cfg.instance, (unsigned long long)(k->n + 1));
  const char *hdr[2] = {"Nats-Msg-Id", id};
  wm_transport_msg m = {.data = k->val.data, .len = k->val.len, .partition = WM_TRANSPORT_ANY,
                        .subject = subject, .headers = hdr, .nheaders = 2};
  if (wm_transport_send(k->t, &m) != WM_OK) return wm_transport_error(op, k->t);
  k->t->written = ++k->n;
  return WM_OK;
}

static int nsink_watermark(wm_op *op, int64_t wm) {
  nsink *k = op->impl;
  if (wm != WM_TIME_MAX || wm_transport_complete(k->t, WM_TRANSPORT_END) == WM_OK) return WM_OK;
  return wm_transport_error(op, k->t);
}

/* Checkpoints (exactly-once with the server's de-duplication): the snapshot waits for the
 * acknowledgement of every message the checkpoint covers, then keeps the count of
 * records, so that after a restore the records replayed get the Nats-Msg-Ids they had
 * (version 1, the count). */
static int nsink_snapshot(wm_op *op, wm_state_io *io) {
  nsink *k = op->impl;
  if (wm_transport_complete(k->t, WM_TRANSPORT_CHECKPOINT) != WM_OK) return wm_transport_error(op, k->t);
  wm_buf_addc(io->out, 1);
  wm_state_put_u(io, k->n);
  return wm_state_put_done(op, io);
}

static int nsink_restore(wm_op *op, wm_state_io *io) {
  nsink *k = op->impl;
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint64_t ver, n;
  if (wm_state_get_u(&r, &ver, "the sink's format version") != WM_OK) return WM_ERR;
  if (ver != 1)
    return wm_ctx_error(op->ctx, "checkpoint state of write_nats of format version %llu, this "
                                 "wmrun reads version 1", (unsigned long long)ver);
  if (wm_state_get_u(&r, &n, "the sink's record count") != WM_OK || wm_state_get_end(&r) != WM_OK)
    return WM_ERR;
  k->n = n;
  k->t->written = n;
  k->restored = n;
  return WM_OK;
}

static void nsink_free(wm_op *op) {
  nsink *k = op->impl;
  if (!k) return;
  wm_transport_free(k->t); /* no acknowledgement after this */
  if (k->cfg.custom.free) k->cfg.custom.free(k->cfg.custom.ud);
  if (k->cfg.subject_fn.free) k->cfg.subject_fn.free(k->cfg.subject_fn.ud);
  wm_buf_free(&k->val);
  wm_buf_free(&k->subj);
  free(k->subject);
  free(k->prefix);
  free(k);
}

static const wm_op_vt nsink_vt = {.kind = "write_nats", .record = nsink_record,
                                  .watermark = nsink_watermark, .snapshot = nsink_snapshot,
                                  .restore = nsink_restore, .free = nsink_free};

wm_op *wm_nats_sink_new(wm_ctx *ctx, const char *name, wm_nats_sink_config *cfg) {
  nsink *k = calloc(1, sizeof *k);
  wm_op *op = k ? wm_op_new(ctx, &nsink_vt, k, name) : NULL;
  if (!op) {
    free(k);
    if (cfg->custom.free) cfg->custom.free(cfg->custom.ud);
    if (cfg->subject_fn.free) cfg->subject_fn.free(cfg->subject_fn.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  k->cfg = *cfg; /* owns the formatters from now on */
  wm_buf_init(&k->val);
  wm_buf_init(&k->subj);
  k->subject = cfg->subject ? strdup(cfg->subject) : NULL;
  k->prefix = strdup(cfg->id_prefix ? cfg->id_prefix : "wmrun");
  if ((cfg->subject && !k->subject) || !k->prefix) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  wm_transport_config tc = {.target = {.kind = WM_TRANSPORT_NATS, .url = cfg->url, .stream = cfg->stream,
                                       .subject = cfg->subject},
                            .name = op->name, .label = "write_nats", .timeout_ms = cfg->timeout_ms,
                            .subjects = cfg->subjects, .nsubjects = cfg->nsubjects};
  if (!(k->t = wm_transport_nats_open(&tc, &ctx->error))) {
    wm_ctx_error(ctx, "%s: %s", name, ctx->error.msg);
    return NULL;
  }
  return op;
}
