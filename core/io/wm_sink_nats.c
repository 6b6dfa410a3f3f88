/* write_nats: publishes one JetStream message per record, asynchronously, each with a
 * deterministic Nats-Msg-Id ("<prefix>/<instance>/<n>", n counting the sink's records),
 * so that output replayed after a restore is de-duplicated by the server within the
 * stream's duplicate window. The stream is created on the first record when missing. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_statefmt.h"
#include "io/wm_conn.h"
#include "io/wm_nats.h"
#include "time/wm_time.h"

#define NSINK_FLUSH_MS 30000

typedef struct nsink {
  wm_nats_sink_config cfg;
  char *url, *stream, *subject, *prefix, *who;
  char **subjects;
  int nsubjects;
  natsConnection *nc;
  jsCtx *js;
  int ensured;       /* the stream exists */
  uint64_t n;        /* records published */
  wm_buf val, subj;
  atomic_int failed; /* set by libnats' thread (ErrHandler) */
  char why[512];     /* written before failed is set */
} nsink;

static void on_pub_error(jsCtx *js, jsPubAckErr *pae, void *closure) {
  (void)js;
  nsink *k = closure;
  if (atomic_load(&k->failed)) return;
  snprintf(k->why, sizeof k->why, "%s", pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err));
  atomic_store(&k->failed, 1);
}

static int nsink_failure(wm_op *op) {
  nsink *k = op->impl;
  return wm_ctx_error(op->ctx, "%s: cannot publish to stream '%s' at %s: %s", op->name, k->stream,
                      k->url, k->why);
}

/* Creates the stream when it is missing, on the configured subjects, or the fixed
 * subject, or the wildcard of the first subject's first token ("ev.>"). */
static int nsink_ensure(wm_op *op, nsink *k, const char *first_subject) {
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  char why[300];
  natsStatus s = js_GetStreamInfo(&si, k->js, k->stream, NULL, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (s == NATS_OK) {
    k->ensured = 1;
    return WM_OK;
  }
  if (s != NATS_NOT_FOUND)
    return wm_ctx_error(op->ctx, "%s: stream '%s' at %s: %s", op->name, k->stream, k->url,
                        wm_nats_why(s, jerr, why, sizeof why));
  char wild[512];
  const char *one[1];
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = k->stream;
  if (k->nsubjects > 0) {
    sc.Subjects = (const char **)k->subjects;
    sc.SubjectsLen = k->nsubjects;
  } else {
    if (k->subject) {
      one[0] = k->subject;
    } else {
      size_t t = strcspn(first_subject, ".");
      snprintf(wild, sizeof wild, "%.*s.>", (int)t, first_subject);
      one[0] = wild;
    }
    sc.Subjects = one;
    sc.SubjectsLen = 1;
  }
  s = js_AddStream(&si, k->js, &sc, NULL, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (s != NATS_OK)
    return wm_ctx_error(op->ctx, "%s: cannot create stream '%s' at %s: %s", op->name, k->stream, k->url,
                        wm_nats_why(s, jerr, why, sizeof why));
  k->ensured = 1;
  return WM_OK;
}

static int nsink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  nsink *k = op->impl;
  if (atomic_load(&k->failed)) return nsink_failure(op);
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
  if (!k->ensured && nsink_ensure(op, k, subject) != WM_OK) return WM_ERR;
  char id[600];
  snprintf(id, sizeof id, "%s/%d/%llu", k->prefix, k->cfg.instance, (unsigned long long)++k->n);
  natsMsg *m = NULL;
  natsStatus s = natsMsg_Create(&m, subject, NULL, k->val.data, (int)k->val.len);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MsgId = id;
  if (s == NATS_OK) s = js_PublishMsgAsync(k->js, &m, &po);
  if (m) natsMsg_Destroy(m); /* left to us when the publish failed */
  if (s != NATS_OK) {
    char why[300];
    snprintf(k->why, sizeof k->why, "%s", wm_nats_why(s, 0, why, sizeof why));
    return nsink_failure(op);
  }
  return WM_OK;
}

/* Waits until the server acknowledged every message published so far. */
static int nsink_complete(wm_op *op, nsink *k) {
  if (!k->js) return atomic_load(&k->failed) ? nsink_failure(op) : WM_OK;
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = NSINK_FLUSH_MS;
  natsStatus s = js_PublishAsyncComplete(k->js, &po);
  if (s != NATS_OK && !atomic_load(&k->failed)) {
    snprintf(k->why, sizeof k->why, "%s while waiting for the acknowledgements", natsStatus_GetText(s));
    atomic_store(&k->failed, 1);
  }
  return atomic_load(&k->failed) ? nsink_failure(op) : WM_OK;
}

static int nsink_watermark(wm_op *op, int64_t wm) {
  return wm == WM_TIME_MAX ? nsink_complete(op, op->impl) : WM_OK;
}

/* Checkpoints (exactly-once with the server's de-duplication): the snapshot waits for the
 * acknowledgement of every message the checkpoint covers, then keeps the count of
 * records, so that after a restore the records replayed get the Nats-Msg-Ids they had
 * (version 1, the count). */
static int nsink_snapshot(wm_op *op, wm_state_io *io) {
  nsink *k = op->impl;
  if (nsink_complete(op, k) != WM_OK) return WM_ERR;
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
  return WM_OK;
}

static void nsink_free(wm_op *op) {
  nsink *k = op->impl;
  if (!k) return;
  wm_nats_close(k->nc, k->js);
  if (k->cfg.custom.free) k->cfg.custom.free(k->cfg.custom.ud);
  if (k->cfg.subject_fn.free) k->cfg.subject_fn.free(k->cfg.subject_fn.ud);
  wm_buf_free(&k->val);
  wm_buf_free(&k->subj);
  for (int i = 0; k->subjects && i < k->nsubjects; i++) free(k->subjects[i]);
  free(k->subjects);
  free(k->url);
  free(k->stream);
  free(k->subject);
  free(k->prefix);
  free(k->who);
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
  atomic_init(&k->failed, 0);
  k->url = strdup(cfg->url);
  k->stream = strdup(cfg->stream);
  k->subject = cfg->subject ? strdup(cfg->subject) : NULL;
  k->prefix = strdup(cfg->id_prefix ? cfg->id_prefix : "wmrun");
  k->who = wm_nats_who(op->name, cfg->url);
  k->subjects = cfg->nsubjects > 0 ? calloc((size_t)cfg->nsubjects, sizeof *k->subjects) : NULL;
  int oom = !k->url || !k->stream || (cfg->subject && !k->subject) || !k->prefix || !k->who ||
            (cfg->nsubjects > 0 && !k->subjects);
  for (int i = 0; !oom && i < cfg->nsubjects; i++) {
    oom = !(k->subjects[i] = strdup(cfg->subjects[i]));
    if (!oom) k->nsubjects = i + 1;
  }
  if (oom) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  char e[600];
  if (wm_nats_connect(cfg->url, k->who, &k->nc, &k->js, e, sizeof e) != 0) {
    wm_ctx_error(ctx, "%s: %s", name, e);
    return NULL;
  }
  /* the JetStream context again, now with the error handler of asynchronous publishes */
  jsCtx_Destroy(k->js);
  k->js = NULL;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.ErrHandler = on_pub_error;
  jo.PublishAsync.ErrHandlerClosure = k;
  jo.PublishAsync.MaxPending = 4096;
  natsStatus s = natsConnection_JetStream(&k->js, k->nc, &jo);
  if (s != NATS_OK) {
    wm_ctx_error(ctx, "%s: no JetStream at %s: %s", name, cfg->url, natsStatus_GetText(s));
    return NULL;
  }
  return op;
}
