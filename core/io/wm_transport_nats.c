/* The NATS JetStream transport (wm_transport.h): asynchronous publishes, and making the
 * stream of a repartitioning step.
 *
 * Outages (docs/connectors.md, "Writing"): nothing is dropped and nothing fails before the
 * timeout (default NT_TIMEOUT_MS) has passed without the server acknowledging anything. A
 * full window of unacknowledged messages (a paused server) makes the publish wait
 * (backpressure), not fail. Unless the transport is ordered, every publish has an
 * acknowledgement deadline (NT_ACK_WAIT_MS); libnats hands a message whose acknowledgement
 * did not come in time, or came as "no responders" (JetStream not ready after a restart), to
 * on_ack, which keeps it for a resend (`retry`, under mu: on_ack runs on libnats' thread).
 * The job's thread resends them, with the same headers (write_nats's Nats-Msg-Id: a copy the
 * server had stored is dropped), after a back-off that doubles from NT_BACKOFF_MIN_MS to
 * NT_BACKOFF_MAX_MS, before publishing anything new. While resending after "no responders"
 * it asks whether the stream still exists: a deleted stream fails the transport naming it.
 * An ordered transport (the repartitioning writer) is failed by any error acknowledgement:
 * a resend could land after later messages of its partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "io/wm_nats.h"
#include "io/wm_transport.h"

#define NT_TIMEOUT_MS 60000   /* default: no acknowledgement for this long fails */
#define NT_ACK_WAIT_MS 5000   /* a message unacknowledged for this long is sent again */
#define NT_MAX_PENDING 4096   /* messages in flight */
#define NT_STALL_MS 200       /* one wait of a publish for room in the window */
#define NT_BACKOFF_MIN_MS 20
#define NT_BACKOFF_MAX_MS 1000

typedef struct ntrans {
  wm_transport base; /* first */
  char *url, *stream, *subject, *who;
  char **subjects;   /* the stream's subjects when ensure makes it */
  int nsubjects;
  char **parts;      /* per partition: "<subject>.<p>" */
  int nparts;
  int ordered;
  natsConnection *nc;
  jsCtx *js;
  int64_t timeout_ms;
  /* outages: what on_ack hands back for a resend, under mu */
  uv_mutex_t mu;
  int mu_init;
  natsMsg **retry;
  atomic_int nretry; /* (read without mu: a message kept after a look is seen at the next) */
  int cap;
  char lastwhy[256]; /* the last error that asked for a resend (under mu) */
  atomic_ullong acked;     /* acknowledgements received (libnats' thread) */
  atomic_ullong completed; /* acknowledgements, errors and timeouts (libnats' thread) */
  uint64_t published;      /* publishes libnats took */
  uint64_t seen_acked;     /* acked when last looked at (the job's thread) */
  uint64_t progress_at;    /* uv_hrtime of the last progress (or of nothing outstanding) */
  int64_t backoff;         /* ms before the next resend */
} ntrans;

static uint64_t now_ns(void) { return uv_hrtime(); }

/* Whether an acknowledgement error is worth a resend: the server did not answer (a pause,
 * a restart: the deadline passed), or JetStream did not (not ready yet, or no stream on the
 * subject: then nt_stream_gone tells which), or the connection went (also as the write
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
  ntrans *k = closure;
  if (pa || !pae) {
    natsMsg_Destroy(msg);
    atomic_fetch_add(&k->acked, 1);
    atomic_fetch_add(&k->completed, 1);
    return;
  }
  const char *text = pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err);
  int keep = !k->ordered && retryable(pae->Err, pae->ErrCode) && !atomic_load(&k->base.failed);
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
    wm_transport_fail(&k->base, "%s", text);
  }
  atomic_fetch_add(&k->completed, 1);
}

/* Notes progress (an acknowledgement since the last look, or nothing outstanding) and fails
 * the transport when there has been none for the timeout. WM_OK or WM_ERR. */
static int nt_check(ntrans *k, const char *doing) {
  if (atomic_load(&k->base.failed)) return WM_ERR;
  uint64_t a = atomic_load(&k->acked), t = now_ns();
  int nretry = atomic_load(&k->nretry);
  if (a != k->seen_acked || (nretry == 0 && atomic_load(&k->completed) == k->published)) {
    if (a != k->seen_acked) k->backoff = NT_BACKOFF_MIN_MS;
    k->seen_acked = a;
    k->progress_at = t;
    return WM_OK;
  }
  double waited = (double)(t - k->progress_at) / 1e9;
  if (waited * 1000.0 < (double)k->timeout_ms) return WM_OK;
  char last[sizeof k->lastwhy];
  uv_mutex_lock(&k->mu);
  snprintf(last, sizeof last, "%s", k->lastwhy[0] ? k->lastwhy : "no answer");
  uv_mutex_unlock(&k->mu);
  wm_transport_fail(&k->base, "no acknowledgement from the server for %.1f s while %s "
                    "(%s's timeout; %llu messages unacknowledged, the last error: %s)", waited, doing,
                    k->base.label,
                    (unsigned long long)(k->published - atomic_load(&k->completed)) + (unsigned long long)nretry,
                    last);
  return WM_ERR;
}

static void nt_sleep(ntrans *k) {
  uv_sleep((unsigned)k->backoff);
  k->backoff = k->backoff * 2 > NT_BACKOFF_MAX_MS ? NT_BACKOFF_MAX_MS : k->backoff * 2;
}

/* Publishes *m (taken when it succeeds: *m is then NULL): waits while the window of
 * unacknowledged messages is full or the connection cannot take it, up to the timeout. A
 * publish that waits keeps the order: it is the same message, sent when there is room. */
static int nt_publish(ntrans *k, natsMsg **m) {
  jsPubOptions po;
  for (;;) {
    jsPubOptions_Init(&po);
    po.MaxWait = NT_ACK_WAIT_MS;
    natsStatus s = js_PublishMsgAsync(k->js, m, k->ordered ? NULL : &po);
    if (s == NATS_OK) {
      k->published++;
      return WM_OK;
    }
    if (!retryable(s, 0)) {
      char why[300];
      wm_transport_fail(&k->base, "%s", wm_nats_why(s, 0, why, sizeof why));
      return WM_ERR;
    }
    if (nt_check(k, "waiting for room to publish") != WM_OK) return WM_ERR;
    if (s != NATS_TIMEOUT) nt_sleep(k); /* a stall has waited already */
  }
}

/* Whether the stream is gone (deleted): 1 with the transport failed, 0 when it is there or
 * the server cannot say now (not ready: the resend goes on). */
static int nt_stream_gone(ntrans *k) {
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = 1000;
  natsStatus s = js_GetStreamInfo(&si, k->js, k->stream, &o, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (s != NATS_NOT_FOUND) return 0;
  wm_transport_fail(&k->base, "the stream does not exist any more (deleted while the job wrote "
                    "to it: %llu records were written); not making a new one that would hold only the "
                    "rest", (unsigned long long)k->base.written);
  return 1;
}

/* Sends again what on_ack kept, after the back-off. WM_OK or WM_ERR. */
static int nt_resend(ntrans *k) {
  if (atomic_load(&k->nretry) == 0) return WM_OK; /* (on every send: no lock then) */
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
  int no_resp = n > 0 && strstr(k->lastwhy, "o responders") != NULL;
  uv_mutex_unlock(&k->mu);
  if (n == 0) return WM_OK;
  if (!list) {
    wm_transport_fail(&k->base, "out of memory sending messages again");
    return WM_ERR;
  }
  int rc = nt_check(k, "sending messages again");
  if (rc == WM_OK) nt_sleep(k);
  if (rc == WM_OK && no_resp && nt_stream_gone(k)) rc = WM_ERR;
  int i = 0;
  for (; i < n && rc == WM_OK; i++) rc = nt_publish(k, &list[i]);
  for (int j = 0; j < n; j++) natsMsg_Destroy(list[j]); /* NULL once taken */
  free(list);
  return rc;
}

static int nt_ensure(wm_transport *t, const char *first_subject, int create, wm_error *err) {
  ntrans *k = (ntrans *)t;
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
    if ((double)(now_ns() - t0) / 1e6 >= (double)k->timeout_ms) {
      wm_error_set(err, "stream '%s' at %s: %s (for %.1f s: %s's timeout)", k->stream, k->url,
               wm_nats_why(s, jerr, why, sizeof why), (double)(now_ns() - t0) / 1e9, t->label);
      return -1;
    }
    nt_sleep(k);
  }
  if (s == NATS_OK) return 0;
  if (s != NATS_NOT_FOUND) {
    wm_error_set(err, "stream '%s' at %s: %s", k->stream, k->url, wm_nats_why(s, jerr, why, sizeof why));
    return -1;
  }
  if (!create) return 1;
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
      size_t n = strcspn(first_subject, ".");
      snprintf(wild, sizeof wild, "%.*s.>", (int)n, first_subject);
      one[0] = wild;
    }
    sc.Subjects = one;
    sc.SubjectsLen = 1;
  }
  s = js_AddStream(&si, k->js, &sc, NULL, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (s != NATS_OK) {
    wm_error_set(err, "cannot create stream '%s' at %s: %s", k->stream, k->url,
             wm_nats_why(s, jerr, why, sizeof why));
    return -1;
  }
  return 0;
}

static int nt_send(wm_transport *t, const wm_transport_msg *m) {
  ntrans *k = (ntrans *)t;
  if (nt_resend(k) != WM_OK || nt_check(k, "publishing") != WM_OK) return WM_ERR;
  const char *subject = m->subject;
  if (!subject) {
    if (m->partition < 0 || m->partition >= k->nparts) {
      wm_transport_fail(t, "no subject for partition %d", m->partition);
      return WM_ERR;
    }
    subject = k->parts[m->partition];
  }
  natsMsg *msg = NULL;
  natsStatus s = natsMsg_Create(&msg, subject, NULL, m->data, (int)m->len);
  for (int h = 0; s == NATS_OK && h + 1 < m->nheaders; h += 2) s = natsMsgHeader_Set(msg, m->headers[h], m->headers[h + 1]);
  if (s != NATS_OK) {
    natsMsg_Destroy(msg);
    char why[300];
    wm_transport_fail(t, "%s", wm_nats_why(s, 0, why, sizeof why));
    return WM_ERR;
  }
  int rc = nt_publish(k, &msg);
  natsMsg_Destroy(msg); /* left to us when the publish failed */
  return rc;
}

/* Waits until the server acknowledged every message published so far, sending again what
 * it did not take, up to the timeout without progress. */
static int nt_complete(wm_transport *t, int what) {
  ntrans *k = (ntrans *)t;
  const char *doing = what == WM_TRANSPORT_END ? "waiting for the last acknowledgements"
                                               : "waiting for the acknowledgements a checkpoint needs";
  for (;;) {
    if (nt_resend(k) != WM_OK) return WM_ERR;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 200;
    natsStatus s = js_PublishAsyncComplete(k->js, &po);
    if (atomic_load(&t->failed)) return WM_ERR;
    int nretry = atomic_load(&k->nretry);
    if (s == NATS_OK && nretry == 0) return WM_OK;
    if (s != NATS_OK && s != NATS_TIMEOUT) {
      wm_transport_fail(t, "%s while waiting for the acknowledgements", natsStatus_GetText(s));
      return WM_ERR;
    }
    if (nt_check(k, doing) != WM_OK) return WM_ERR;
  }
}

static void free_list(char **l, int n) {
  for (int i = 0; l && i < n; i++) free(l[i]);
  free(l);
}

static void nt_free(wm_transport *t) {
  ntrans *k = (ntrans *)t;
  wm_nats_close(k->nc, k->js); /* no on_ack after this */
  if (k->mu_init) {
    for (int i = 0; i < k->nretry; i++) natsMsg_Destroy(k->retry[i]);
    uv_mutex_destroy(&k->mu);
  }
  free(k->retry);
  free_list(k->subjects, k->nsubjects);
  free_list(k->parts, k->nparts);
  free(k->url);
  free(k->stream);
  free(k->subject);
  free(k->who);
  wm_transport_fini(t);
  free(k);
}

static const wm_transport_vt nt_vt = {.ensure = nt_ensure, .send = nt_send, .complete = nt_complete,
                                      .free = nt_free};

static char *dup_or_null(const char *s, int *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

wm_transport *wm_transport_nats_open(const wm_transport_config *cfg, wm_error *err) {
  const wm_transport_target *tg = &cfg->target;
  ntrans *k = calloc(1, sizeof *k);
  if (!k) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  int oom = wm_transport_init(&k->base, &nt_vt, "publish to stream", tg->stream, tg->url, cfg->label) != 0;
  atomic_init(&k->acked, 0);
  atomic_init(&k->completed, 0);
  atomic_init(&k->nretry, 0);
  k->ordered = cfg->ordered;
  k->backoff = NT_BACKOFF_MIN_MS;
  k->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : NT_TIMEOUT_MS;
  k->progress_at = now_ns();
  if (uv_mutex_init(&k->mu) != 0) {
    wm_error_set(err, "cannot create a mutex");
    nt_free(&k->base);
    return NULL;
  }
  k->mu_init = 1;
  k->url = dup_or_null(tg->url, &oom);
  k->stream = dup_or_null(tg->stream, &oom);
  k->subject = dup_or_null(tg->subject, &oom);
  k->who = wm_nats_who(cfg->name, tg->url);
  if (!k->who) oom = 1;
  if (!oom && cfg->nsubjects > 0 && !(k->subjects = calloc((size_t)cfg->nsubjects, sizeof *k->subjects))) oom = 1;
  for (int i = 0; !oom && i < cfg->nsubjects; i++, k->nsubjects++) k->subjects[i] = dup_or_null(cfg->subjects[i], &oom);
  if (!oom && tg->subject && tg->partitions > 0 && !(k->parts = calloc((size_t)tg->partitions, sizeof *k->parts)))
    oom = 1;
  for (int p = 0; !oom && k->parts && p < tg->partitions; p++, k->nparts++) {
    char subj[600];
    snprintf(subj, sizeof subj, "%s.%d", tg->subject, p);
    k->parts[p] = dup_or_null(subj, &oom);
  }
  if (oom) {
    wm_error_set(err, "out of memory");
    nt_free(&k->base);
    return NULL;
  }
  if (wm_nats_connect(tg->url, k->who, &k->nc, &k->js, err) != 0) {
    nt_free(&k->base);
    return NULL;
  }
  /* the JetStream context again, now with the handler of asynchronous publishes */
  jsCtx_Destroy(k->js);
  k->js = NULL;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.AckHandler = on_ack;
  jo.PublishAsync.AckHandlerClosure = k;
  jo.PublishAsync.MaxPending = NT_MAX_PENDING;
  jo.PublishAsync.StallWait = NT_STALL_MS;
  natsStatus s = natsConnection_JetStream(&k->js, k->nc, &jo);
  if (s != NATS_OK) {
    wm_error_set(err, "no JetStream at %s: %s", tg->url, natsStatus_GetText(s));
    nt_free(&k->base);
    return NULL;
  }
  return &k->base;
}

/* ---- making the stream of a repartitioning step ------------------------------------------ */

int wm_transport_nats_make(const wm_transport_target *t, int64_t *last, wm_error *err) {
  natsConnection *nc;
  jsCtx *js;
  if (wm_nats_connect(t->url, NULL, &nc, &js, err) != 0) return -1;
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
      wm_error_set(err, "cannot create stream '%s' on %s: %s", t->stream, t->url,
               wm_nats_why(s, jerr, why, sizeof why));
  } else if (s != NATS_OK) {
    wm_error_set(err, "stream '%s' on %s: %s", t->stream, t->url, wm_nats_why(s, jerr, why, sizeof why));
  }
  if (s == NATS_OK && si) *last = (int64_t)si->State.LastSeq;
  if (si) jsStreamInfo_Destroy(si);
  wm_nats_close(nc, js);
  return s == NATS_OK ? 0 : -1;
}
