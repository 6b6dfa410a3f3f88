/* write_nats: publishes one JetStream message per record, asynchronously, each with a
 * deterministic Nats-Msg-Id ("<prefix>/<instance>/<n>", n counting the sink's records),
 * so that output replayed after a restore is de-duplicated by the server within the
 * stream's duplicate window. The stream is created on the first record when missing
 * (unless a checkpoint says the sink had written to it: then it was deleted, and the sink
 * refuses to make a new one that would hold only what comes after the checkpoint).
 *
 * Outages (docs/connectors.md, "Writing"): nothing is dropped and nothing fails before
 * cfg.timeout_ms (default NSINK_TIMEOUT_MS) has passed without the server acknowledging
 * anything. Every publish has an acknowledgement deadline (NSINK_ACK_WAIT_MS); libnats
 * hands a message whose acknowledgement did not come in time, or came as "no responders"
 * (JetStream not ready after a restart), to on_ack, which keeps it for a resend (`retry`,
 * under mu: on_ack runs on libnats' thread). The job's thread resends them, with the same
 * Nats-Msg-Id (so a copy the server had stored is dropped), after a back-off that doubles
 * from NSINK_BACKOFF_MIN_MS to NSINK_BACKOFF_MAX_MS, before publishing anything new. A full
 * window of unacknowledged messages (a paused server) makes the publish wait (backpressure),
 * not fail. While resending after "no responders" the sink asks whether the stream still
 * exists: a deleted stream fails the job naming it. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "graph/wm_statefmt.h"
#include "io/wm_conn.h"
#include "io/wm_nats.h"
#include "time/wm_time.h"

#define NSINK_TIMEOUT_MS 60000   /* default: no acknowledgement for this long fails the job */
#define NSINK_ACK_WAIT_MS 5000   /* a message unacknowledged for this long is sent again */
#define NSINK_MAX_PENDING 4096   /* messages in flight */
#define NSINK_STALL_MS 200       /* one wait of a publish for room in the window */
#define NSINK_BACKOFF_MIN_MS 20
#define NSINK_BACKOFF_MAX_MS 1000

typedef struct nsink {
  wm_nats_sink_config cfg;
  char *url, *stream, *subject, *prefix, *who;
  char **subjects;
  int nsubjects;
  natsConnection *nc;
  jsCtx *js;
  int ensured;       /* the stream exists */
  uint64_t n;        /* records published */
  uint64_t restored; /* the record count of the checkpoint restored (0: none) */
  int64_t timeout_ms;
  wm_buf val, subj;
  atomic_int failed; /* set by libnats' thread (on_ack) */
  char why[512];     /* written before failed is set */
  /* outages: what on_ack hands back for a resend, under mu */
  uv_mutex_t mu;
  int mu_init;
  natsMsg **retry;
  int nretry, cap;
  char lastwhy[256]; /* the last error that asked for a resend (under mu) */
  atomic_ullong acked;     /* acknowledgements received (libnats' thread) */
  atomic_ullong completed; /* acknowledgements, errors and timeouts (libnats' thread) */
  uint64_t published;      /* publishes libnats took */
  uint64_t seen_acked;     /* acked when last looked at (the job's thread) */
  uint64_t progress_at;    /* uv_hrtime of the last progress (or of nothing outstanding) */
  int64_t backoff;         /* ms before the next resend */
} nsink;

static uint64_t now_ns(void) { return uv_hrtime(); }

/* Whether an acknowledgement error is worth a resend: the server did not answer (a pause,
 * a restart: the deadline passed), or JetStream did not (not ready yet, or no stream on the
 * subject: then nsink_stream_gone tells which), or the connection went (also as the write
 * error of the socket the server closed while restarting: "send error: 104", an I/O error,
 * before libnats has seen the disconnection). */
static int retryable(natsStatus s, jsErrCode jerr) {
  if (jerr) return jerr == 10008; /* JetStream temporarily unavailable */
  return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_CLOSED ||
         s == NATS_CONNECTION_DISCONNECTED || s == NATS_STALE_CONNECTION ||
         s == NATS_INSUFFICIENT_BUFFER || s == NATS_NO_SERVER || s == NATS_IO_ERROR;
}

/* libnats' thread: every acknowledgement, good or bad. The message is ours to destroy or
 * keep (AckHandler). */
static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure) {
  (void)js;
  nsink *k = closure;
  if (pa || !pae) {
    natsMsg_Destroy(msg);
    atomic_fetch_add(&k->acked, 1);
    atomic_fetch_add(&k->completed, 1);
    return;
  }
  const char *text = pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err);
  int keep = retryable(pae->Err, pae->ErrCode) && !atomic_load(&k->failed);
  uv_mutex_lock(&k->mu);
  if (keep && k->nretry == k->cap) {
    int cap = k->cap ? k->cap * 2 : 256;
    natsMsg **r = realloc(k->retry, (size_t)cap * sizeof *r);
    if (r) {
      k->retry = r;
      k->cap = cap;
    } else {
      keep = 0;
      text = "out of memory keeping a message to send again";
    }
  }
  if (keep) {
    k->retry[k->nretry++] = msg;
    snprintf(k->lastwhy, sizeof k->lastwhy, "%s", text);
  }
  uv_mutex_unlock(&k->mu);
  if (!keep) {
    natsMsg_Destroy(msg);
    if (!atomic_load(&k->failed)) {
      snprintf(k->why, sizeof k->why, "%s", text);
      atomic_store(&k->failed, 1);
    }
  }
  atomic_fetch_add(&k->completed, 1);
}

static int nsink_failure(wm_op *op) {
  nsink *k = op->impl;
  return wm_ctx_error(op->ctx, "%s: cannot publish to stream '%s' at %s: %s", op->name, k->stream,
                      k->url, k->why);
}

/* Notes progress (an acknowledgement since the last look, or nothing outstanding) and fails
 * the sink when there has been none for the timeout. WM_OK or WM_ERR (message set). */
static int nsink_check(wm_op *op, nsink *k, const char *doing) {
  if (atomic_load(&k->failed)) return nsink_failure(op);
  uint64_t a = atomic_load(&k->acked), t = now_ns();
  uv_mutex_lock(&k->mu);
  int nretry = k->nretry;
  char last[sizeof k->lastwhy];
  snprintf(last, sizeof last, "%s", k->lastwhy[0] ? k->lastwhy : "no answer");
  uv_mutex_unlock(&k->mu);
  if (a != k->seen_acked || (nretry == 0 && atomic_load(&k->completed) == k->published)) {
    if (a != k->seen_acked) k->backoff = NSINK_BACKOFF_MIN_MS;
    k->seen_acked = a;
    k->progress_at = t;
    return WM_OK;
  }
  double waited = (double)(t - k->progress_at) / 1e9;
  if (waited * 1000.0 < (double)k->timeout_ms) return WM_OK;
  snprintf(k->why, sizeof k->why, "no acknowledgement from the server for %.1f s while %s "
           "(write_nats's timeout; %llu messages unacknowledged, the last error: %s)", waited, doing,
           (unsigned long long)(k->published - atomic_load(&k->completed)) + (unsigned long long)nretry,
           last);
  atomic_store(&k->failed, 1);
  return nsink_failure(op);
}

static void nsink_sleep(nsink *k) {
  uv_sleep((unsigned)k->backoff);
  k->backoff = k->backoff * 2 > NSINK_BACKOFF_MAX_MS ? NSINK_BACKOFF_MAX_MS : k->backoff * 2;
}

/* Publishes *m (taken when it succeeds: *m is then NULL): waits while the window of
 * unacknowledged messages is full or the connection cannot take it, up to the timeout. */
static int nsink_publish(wm_op *op, nsink *k, natsMsg **m) {
  jsPubOptions po;
  for (;;) {
    jsPubOptions_Init(&po);
    po.MaxWait = NSINK_ACK_WAIT_MS;
    natsStatus s = js_PublishMsgAsync(k->js, m, &po);
    if (s == NATS_OK) {
      k->published++;
      return WM_OK;
    }
    if (!retryable(s, 0)) {
      char why[300];
      snprintf(k->why, sizeof k->why, "%s", wm_nats_why(s, 0, why, sizeof why));
      atomic_store(&k->failed, 1);
      return nsink_failure(op);
    }
    if (nsink_check(op, k, "waiting for room to publish") != WM_OK) return WM_ERR;
    if (s != NATS_TIMEOUT) nsink_sleep(k); /* a stall has waited already */
  }
}

/* Whether the stream is gone (deleted): 1 with k->why set, 0 when it is there or the server
 * cannot say now (not ready: the resend goes on). */
static int nsink_stream_gone(nsink *k) {
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = 1000;
  natsStatus s = js_GetStreamInfo(&si, k->js, k->stream, &o, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (s != NATS_NOT_FOUND) return 0;
  snprintf(k->why, sizeof k->why, "the stream does not exist any more (deleted while the job wrote "
           "to it: %llu records were written); not making a new one that would hold only the "
           "rest", (unsigned long long)k->n);
  return 1;
}

/* Sends again what on_ack kept, after the back-off. WM_OK or WM_ERR. */
static int nsink_resend(wm_op *op, nsink *k) {
  uv_mutex_lock(&k->mu);
  int n = k->nretry;
  natsMsg **list = NULL;
  if (n > 0) {
    list = malloc((size_t)n * sizeof *list);
    if (list) {
      memcpy(list, k->retry, (size_t)n * sizeof *list);
      k->nretry = 0;
    }
  }
  int no_resp = strstr(k->lastwhy, "o responders") != NULL;
  uv_mutex_unlock(&k->mu);
  if (n == 0) return WM_OK;
  if (!list) return wm_ctx_error(op->ctx, "out of memory in sink '%s'", op->name);
  int rc = nsink_check(op, k, "sending messages again");
  if (rc == WM_OK) nsink_sleep(k);
  if (rc == WM_OK && no_resp && nsink_stream_gone(k)) {
    atomic_store(&k->failed, 1);
    rc = nsink_failure(op);
  }
  int i = 0;
  for (; i < n && rc == WM_OK; i++) rc = nsink_publish(op, k, &list[i]);
  for (int j = 0; j < n; j++) natsMsg_Destroy(list[j]); /* NULL once taken */
  free(list);
  return rc;
}

/* Creates the stream when it is missing, on the configured subjects, or the fixed
 * subject, or the wildcard of the first subject's first token ("ev.>"). Waits (with the
 * back-off, up to the timeout) while JetStream does not answer. */
static int nsink_ensure(wm_op *op, nsink *k, const char *first_subject) {
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  char why[300];
  natsStatus s;
  uint64_t t0 = now_ns();
  for (;;) {
    jerr = 0;
    s = js_GetStreamInfo(&si, k->js, k->stream, NULL, &jerr);
    if (si) jsStreamInfo_Destroy(si);
    si = NULL;
    if (s == NATS_OK || s == NATS_NOT_FOUND || !retryable(s, jerr)) break;
    if ((double)(now_ns() - t0) / 1e6 >= (double)k->timeout_ms)
      return wm_ctx_error(op->ctx, "%s: stream '%s' at %s: %s (for %.1f s: write_nats's timeout)", op->name,
                          k->stream, k->url, wm_nats_why(s, jerr, why, sizeof why),
                          (double)(now_ns() - t0) / 1e9);
    nsink_sleep(k);
  }
  if (s == NATS_OK) {
    k->ensured = 1;
    return WM_OK;
  }
  if (s != NATS_NOT_FOUND)
    return wm_ctx_error(op->ctx, "%s: stream '%s' at %s: %s", op->name, k->stream, k->url,
                        wm_nats_why(s, jerr, why, sizeof why));
  if (k->restored > 0)
    return wm_ctx_error(op->ctx, "%s: stream '%s' does not exist at %s, but the checkpoint restored says "
                        "this sink had written %llu records to it: it was deleted since. Not making a "
                        "new one that would hold only the records after the checkpoint (bring the "
                        "stream back, or start over with --fresh)", op->name, k->stream, k->url,
                        (unsigned long long)k->restored);
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
  if (nsink_resend(op, k) != WM_OK || nsink_check(op, k, "publishing") != WM_OK) return WM_ERR;
  char id[600];
  snprintf(id, sizeof id, "%s/%d/%llu", k->prefix, k->cfg.instance, (unsigned long long)(k->n + 1));
  natsMsg *m = NULL;
  natsStatus s = natsMsg_Create(&m, subject, NULL, k->val.data, (int)k->val.len);
  if (s == NATS_OK) s = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
  if (s != NATS_OK) {
    natsMsg_Destroy(m);
    char why[300];
    snprintf(k->why, sizeof k->why, "%s", wm_nats_why(s, 0, why, sizeof why));
    return nsink_failure(op);
  }
  int rc = nsink_publish(op, k, &m);
  natsMsg_Destroy(m); /* left to us when the publish failed */
  if (rc == WM_OK) k->n++;
  return rc;
}

/* Waits until the server acknowledged every message published so far, sending again what
 * it did not take, up to the timeout without progress. */
static int nsink_complete(wm_op *op, nsink *k, const char *doing) {
  if (!k->js) return atomic_load(&k->failed) ? nsink_failure(op) : WM_OK;
  for (;;) {
    if (nsink_resend(op, k) != WM_OK) return WM_ERR;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 200;
    natsStatus s = js_PublishAsyncComplete(k->js, &po);
    if (atomic_load(&k->failed)) return nsink_failure(op);
    uv_mutex_lock(&k->mu);
    int nretry = k->nretry;
    uv_mutex_unlock(&k->mu);
    if (s == NATS_OK && nretry == 0) return WM_OK;
    if (s != NATS_OK && s != NATS_TIMEOUT) {
      snprintf(k->why, sizeof k->why, "%s while waiting for the acknowledgements", natsStatus_GetText(s));
      atomic_store(&k->failed, 1);
      return nsink_failure(op);
    }
    if (nsink_check(op, k, doing) != WM_OK) return WM_ERR;
  }
}

static int nsink_watermark(wm_op *op, int64_t wm) {
  return wm == WM_TIME_MAX ? nsink_complete(op, op->impl, "waiting for the last acknowledgements") : WM_OK;
}

/* Checkpoints (exactly-once with the server's de-duplication): the snapshot waits for the
 * acknowledgement of every message the checkpoint covers, then keeps the count of
 * records, so that after a restore the records replayed get the Nats-Msg-Ids they had
 * (version 1, the count). */
static int nsink_snapshot(wm_op *op, wm_state_io *io) {
  nsink *k = op->impl;
  if (nsink_complete(op, k, "waiting for the acknowledgements a checkpoint needs") != WM_OK) return WM_ERR;
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
  k->restored = n;
  return WM_OK;
}

static void nsink_free(wm_op *op) {
  nsink *k = op->impl;
  if (!k) return;
  wm_nats_close(k->nc, k->js); /* no on_ack after this */
  if (k->mu_init) {
    for (int i = 0; i < k->nretry; i++) natsMsg_Destroy(k->retry[i]);
    uv_mutex_destroy(&k->mu);
  }
  free(k->retry);
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
  atomic_init(&k->acked, 0);
  atomic_init(&k->completed, 0);
  k->backoff = NSINK_BACKOFF_MIN_MS;
  k->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : NSINK_TIMEOUT_MS;
  k->progress_at = now_ns();
  if (uv_mutex_init(&k->mu) != 0) {
    wm_ctx_error(ctx, "cannot create a mutex for '%s'", name);
    return NULL;
  }
  k->mu_init = 1;
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
  jo.PublishAsync.AckHandler = on_ack;
  jo.PublishAsync.AckHandlerClosure = k;
  jo.PublishAsync.MaxPending = NSINK_MAX_PENDING;
  jo.PublishAsync.StallWait = NSINK_STALL_MS;
  natsStatus s = natsConnection_JetStream(&k->js, k->nc, &jo);
  if (s != NATS_OK) {
    wm_ctx_error(ctx, "%s: no JetStream at %s: %s", name, cfg->url, natsStatus_GetText(s));
    return NULL;
  }
  return op;
}
