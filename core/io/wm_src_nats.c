/* read_nats: JetStream pull consumers (libnats), one per subject of the stream (a partition
 * each), with no acknowledgements: the position of every subject (the stream sequence of
 * its next message) is kept for checkpoints (wm_partsrc_position); messages are fetched in
 * bounded batches only while the job takes records (see "the source" below). Also the
 * connection helpers that write_nats shares (wm_nats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "io/wm_nats.h"
#include "io/wm_partsrc.h"
#include "time/wm_time.h"

#define NATS_TIMEOUT_MS 5000

/* ---- connections ----------------------------------------------------------------------- */

static void on_disconnected(natsConnection *nc, void *closure) {
  if (natsConnection_IsClosed(nc)) return; /* closed by us */
  fprintf(stderr, "wmrun: %s: lost the connection (reconnecting)\n", (const char *)closure);
}

static void on_reconnected(natsConnection *nc, void *closure) {
  (void)nc;
  fprintf(stderr, "wmrun: %s: reconnected\n", (const char *)closure);
}

const char *wm_nats_why(natsStatus s, jsErrCode jerr, char *buf, size_t n) {
  const char *last = nats_GetLastError(NULL);
  if (last && last[0] == '(') { /* "(conn.c:2088): No server ...": the text only */
    const char *e = strstr(last, "): ");
    if (e) last = e + 3;
  }
  if (jerr) snprintf(buf, n, "%s (JetStream error %d)", last && *last ? last : natsStatus_GetText(s), (int)jerr);
  else snprintf(buf, n, "%s", last && *last ? last : natsStatus_GetText(s));
  return buf;
}

int wm_nats_connect(const char *url, const char *who, natsConnection **nc, jsCtx **js, wm_error *err) {
  natsOptions *o = NULL;
  *nc = NULL;
  *js = NULL;
  natsStatus s = natsOptions_Create(&o);
  if (s == NATS_OK) s = natsOptions_SetURL(o, url);
  if (s == NATS_OK) s = natsOptions_SetTimeout(o, NATS_TIMEOUT_MS);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1); /* forever, while the job runs */
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(o, 500);
  if (s == NATS_OK && who) s = natsOptions_SetDisconnectedCB(o, on_disconnected, (void *)who);
  if (s == NATS_OK && who) s = natsOptions_SetReconnectedCB(o, on_reconnected, (void *)who);
  if (s == NATS_OK) s = natsConnection_Connect(nc, o);
  natsOptions_Destroy(o);
  if (s != NATS_OK) {
    char why[300];
    wm_error_set(err, "cannot connect to %s: %s", url, wm_nats_why(s, 0, why, sizeof why));
    natsConnection_Destroy(*nc);
    *nc = NULL;
    return -1;
  }
  s = natsConnection_JetStream(js, *nc, NULL);
  if (s != NATS_OK) {
    wm_error_set(err, "no JetStream at %s: %s", url, natsStatus_GetText(s));
    wm_nats_close(*nc, NULL);
    *nc = NULL;
    return -1;
  }
  return 0;
}

char *wm_nats_who(const char *name, const char *url) {
  size_t n = strlen(name) + strlen(url) + 32;
  char *w = malloc(n);
  if (w) snprintf(w, n, "%s: the NATS server at %s", name, url);
  return w;
}

void wm_nats_close(natsConnection *nc, jsCtx *js) {
  if (js) jsCtx_Destroy(js);
  if (nc) {
    natsConnection_Close(nc);
    natsConnection_Destroy(nc);
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void wm_nats_free_list(char **list, int n) {
  for (int i = 0; list && i < n; i++) free(list[i]);
  free(list);
}

int wm_nats_subjects(const char *url, const char *stream, const char *filter, int timeout_ms,
                     char ***list, int *n, wm_error *err) {
  (void)timeout_ms;
  natsConnection *nc;
  jsCtx *js;
  *list = NULL;
  *n = 0;
  if (wm_nats_connect(url, NULL, &nc, &js, err) != 0) return -1;
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Info.SubjectsFilter = filter;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetStreamInfo(&si, js, stream, &o, &jerr);
  int rc = -1;
  if (s == NATS_NOT_FOUND) {
    wm_error_set(err, "stream '%s' does not exist on %s", stream, url);
  } else if (s != NATS_OK) {
    char why[300];
    wm_error_set(err, "stream '%s' on %s: %s", stream, url, wm_nats_why(s, jerr, why, sizeof why));
  } else if (!filter) {
    rc = 0; /* the stream is there */
  } else {
    const jsStreamStateSubjects *ss = si->State.Subjects;
    int cnt = ss ? ss->Count : 0;
    char **l = calloc((size_t)(cnt > 0 ? cnt : 1), sizeof *l);
    int oom = !l;
    for (int i = 0; !oom && i < cnt; i++) oom = !(l[i] = strdup(ss->List[i].Subject));
    if (!oom && cnt == 0) oom = !(l[cnt++] = strdup(filter)); /* nothing yet: one partition */
    if (oom) {
      wm_nats_free_list(l, cnt);
      wm_error_set(err, "out of memory");
    } else {
      qsort(l, (size_t)cnt, sizeof *l, cmp_str);
      *list = l;
      *n = cnt;
      rc = 0;
    }
  }
  if (si) jsStreamInfo_Destroy(si);
  wm_nats_close(nc, js);
  return rc;
}

/* ---- the source ------------------------------------------------------------------------- */

/* Reading is pulled, never pushed: every partition has a pull consumer (no acknowledgements)
 * and an inbox of its own, and asks the consumer for NSRC_BATCH messages at a time, with at
 * most NSRC_REQS requests in flight (request r answers on "<inbox>.<r>"). A new request
 * goes out only when peek finds a slot free, and peek runs only while the job takes
 * records (the source is paused under backpressure): what the client holds is bounded
 * (NSRC_REQS * NSRC_BATCH messages a partition), so a slow job slows the reading and no
 * message is ever dropped (a push consumer's client drops what overflows its pending
 * limit: "Slow Consumer, messages dropped").
 *
 * A request lives NSRC_EXPIRES_MS at the server, which then ends it with a 408 status; one
 * not ended NSRC_GRACE_MS after that (a server restart forgets it; a request to a consumer
 * that is not there is not answered at all) is given up, and the next one first asks for
 * the consumer, as after a 503 (no responders: JetStream not ready, or the consumer gone,
 * e.g. an ephemeral one the server removed after NSRC_INACTIVE_MS without requests while
 * the job was paused), which also makes the next request wait a back-off
 * (NSRC_BACKOFF_MIN_MS doubling to NSRC_BACKOFF_MAX_MS): a missing consumer is made again at
 * the partition's position (the messages before it, should any come again, are dropped by
 * their sequence); a missing stream fails the source, naming it. */
#define NSRC_BATCH 1024
#define NSRC_REQS 4
#define NSRC_EXPIRES_MS 5000
#define NSRC_GRACE_MS 2000
#define NSRC_INACTIVE_MS 60000
#define NSRC_BACKOFF_MIN_MS 50
#define NSRC_BACKOFF_MAX_MS 1000
#define NSRC_API_WAIT_MS 2000

typedef struct npart {
  natsSubscription *sub;   /* "<inbox>.*" */
  char *inbox;             /* owned */
  char *cons;              /* the consumer's name (owned); NULL: none yet */
  char *next;              /* "$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>" (owned) */
  int64_t left[NSRC_REQS]; /* messages still due on request r (0: the slot is free) */
  uint64_t sent[NSRC_REQS];/* uv_hrtime of request r */
  uint64_t ord[NSRC_REQS]; /* the order of request r among those sent (the server serves them
                              in that order: a message answers the oldest one still open) */
  uint64_t nsent;
  uint64_t wait_until;     /* no request before (a back-off) */
  int64_t backoff;         /* ms */
  int check;               /* ask for the consumer before the next request */
  natsMsg *ready;          /* the next message, peeked */
  uint64_t seq;            /* its stream sequence */
  int64_t mts;             /* its time (ms) */
  uint64_t ready_pending;  /* the pending count the server gave with it */
  uint64_t pending;        /* the same of the last message emitted */
  int pending_known;       /* a message was emitted */
} npart;

typedef struct nsrc {
  wm_partsrc ps; /* first */
  natsConnection *nc;
  jsCtx *js;
  npart *np;              /* per partition */
  char **subjects;        /* per partition (owned) */
  char *url, *stream, *durable;
  char *who;              /* "<op> to the NATS server at <url>", for connection reports */
  int start;              /* cfg.p.start, start_value: where a consumer starts without a position */
  int64_t start_value;
  wm_schema *schema;
} nsrc;

static int nsrc_fail(nsrc *k, int i, const char *what, natsStatus st, jsErrCode jerr) {
  char why[300];
  wm_partsrc *s = &k->ps;
  return wm_ctx_error(s->op->ctx, "%s: %s subject '%s' of stream '%s' at %s: %s", s->op->name, what,
                      k->subjects[i], k->stream, k->url, wm_nats_why(st, jerr, why, sizeof why));
}

/* A consumer name from the durable name and the subject: letters, digits, '-' and '_'. */
static void durable_name(char *out, size_t n, const char *durable, const char *subject) {
  snprintf(out, n, "%s_%s", durable, subject);
  for (char *c = out; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
      *c = '_';
}

/* Makes partition i's pull consumer, starting at `start` (WM_START_*, start_value); a
 * durable one that exists is used as it is, unless `fresh` (a restored position: it is
 * made again there). WM_OK or WM_ERR. */
static int nsrc_consumer(nsrc *k, int i, int start, int64_t start_value, int fresh) {
  npart *q = &k->np[i];
  jsErrCode jerr = 0;
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = NSRC_API_WAIT_MS;
  char dname[512];
  jsConsumerInfo *ci = NULL;
  natsStatus st;
  if (k->durable) {
    durable_name(dname, sizeof dname, k->durable, k->subjects[i]);
    if (fresh) {
      st = js_DeleteConsumer(k->js, k->stream, dname, &o, &jerr);
      if (st != NATS_OK && st != NATS_NOT_FOUND) return nsrc_fail(k, i, "cannot restart the consumer of", st, jerr);
    } else {
      st = js_GetConsumerInfo(&ci, k->js, k->stream, dname, &o, &jerr);
      if (st == NATS_OK && ci->Config && ci->Config->DeliverSubject && ci->Config->DeliverSubject[0]) {
        jsConsumerInfo_Destroy(ci);
        return wm_ctx_error(k->ps.op->ctx, "%s: the durable consumer '%s' of stream '%s' at %s is a push "
                            "consumer (made by an older wmrun); read_nats reads with pull consumers: "
                            "delete it, or name another durable", k->ps.op->name, dname, k->stream, k->url);
      }
      if (st != NATS_OK && st != NATS_NOT_FOUND) return nsrc_fail(k, i, "cannot read", st, jerr);
    }
  }
  if (!ci) {
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.FilterSubject = k->subjects[i];
    cc.AckPolicy = js_AckNone; /* positions live in checkpoints, not in acks */
    cc.MaxRequestBatch = NSRC_BATCH;
    switch (start) {
    case WM_START_LATEST: cc.DeliverPolicy = js_DeliverNew; break;
    case WM_START_SEQUENCE:
      cc.DeliverPolicy = js_DeliverByStartSequence;
      cc.OptStartSeq = (uint64_t)(start_value > 0 ? start_value : 1);
      break;
    case WM_START_TIME:
      cc.DeliverPolicy = js_DeliverByStartTime;
      cc.OptStartTime = start_value * 1000000;
      break;
    default: cc.DeliverPolicy = js_DeliverAll; break;
    }
    if (k->durable) cc.Durable = dname;
    else cc.InactiveThreshold = (int64_t)NSRC_INACTIVE_MS * 1000000;
    jerr = 0;
    st = js_AddConsumer(&ci, k->js, k->stream, &cc, &o, &jerr);
    if (st != NATS_OK) return nsrc_fail(k, i, "cannot read", st, jerr);
  }
  if (!ci || !ci->Name) {
    if (ci) jsConsumerInfo_Destroy(ci);
    return wm_ctx_error(k->ps.op->ctx, "%s: the server at %s gave no name for the consumer of subject '%s'",
                        k->ps.op->name, k->url, k->subjects[i]);
  }
  size_t n = strlen(k->stream) + strlen(ci->Name) + 40;
  char *name = strdup(ci->Name), *next = malloc(n);
  jsConsumerInfo_Destroy(ci);
  if (!name || !next) {
    free(name);
    free(next);
    return wm_ctx_error(k->ps.op->ctx, "out of memory in '%s'", k->ps.op->name);
  }
  snprintf(next, n, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", k->stream, name);
  free(q->cons);
  free(q->next);
  q->cons = name;
  q->next = next;
  for (int r = 0; r < NSRC_REQS; r++) q->left[r] = 0; /* requests to an old consumer: given up */
  return WM_OK;
}

/* Partition i's inbox, new (what an old one still receives is never read). */
static int nsrc_inbox(nsrc *k, int i) {
  npart *q = &k->np[i];
  if (q->sub) {
    natsSubscription_Unsubscribe(q->sub);
    natsSubscription_Destroy(q->sub);
    q->sub = NULL;
  }
  natsInbox *ib = NULL;
  natsStatus st = natsInbox_Create(&ib);
  size_t n = ib ? strlen(ib) + 8 : 0;
  char *inbox = ib ? malloc(n) : NULL, *wild = inbox ? malloc(n) : NULL;
  if (inbox && wild) {
    snprintf(inbox, n, "%s", ib);
    snprintf(wild, n, "%s.*", ib);
  }
  natsInbox_Destroy(ib);
  if (st != NATS_OK || !inbox || !wild) {
    free(inbox);
    free(wild);
    return wm_ctx_error(k->ps.op->ctx, "out of memory in '%s'", k->ps.op->name);
  }
  st = natsConnection_SubscribeSync(&q->sub, k->nc, wild);
  free(wild);
  free(q->inbox);
  q->inbox = inbox;
  if (st == NATS_OK) st = natsSubscription_SetPendingLimits(q->sub, -1, -1); /* bounded by the requests */
  if (st != NATS_OK) return nsrc_fail(k, i, "cannot read", st, 0);
  for (int r = 0; r < NSRC_REQS; r++) q->left[r] = 0;
  return WM_OK;
}

/* Asks for more on every free slot of partition i (after a back-off, after checking the
 * consumer when a 503 came). WM_OK or WM_ERR. */
static int nsrc_request(nsrc *k, int i) {
  wm_partsrc *s = &k->ps;
  npart *q = &k->np[i];
  uint64_t now = uv_hrtime();
  if (now < q->wait_until) return WM_OK;
  for (int r = 0; r < NSRC_REQS; r++) /* forgotten by the server (a restart), or nobody there */
    if (q->left[r] > 0 && now - q->sent[r] > (uint64_t)(NSRC_EXPIRES_MS + NSRC_GRACE_MS) * 1000000u) {
      q->left[r] = 0;
      q->check = 1;
    }
  if (q->check) {
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = NSRC_API_WAIT_MS;
    natsStatus st = js_GetConsumerInfo(&ci, k->js, k->stream, q->cons, &o, &jerr);
    if (ci) jsConsumerInfo_Destroy(ci);
    if (jerr == 10059) /* JetStream's "stream not found" */
      return wm_ctx_error(s->op->ctx, "%s: stream '%s' does not exist any more at %s (deleted while the job "
                          "read it, at sequence %lld of subject '%s')", s->op->name, k->stream, k->url,
                          (long long)s->parts[i].pos, k->subjects[i]);
    if (st == NATS_NOT_FOUND) {
      int64_t pos = s->parts[i].pos;
      int rc = pos > 0 ? nsrc_consumer(k, i, WM_START_SEQUENCE, pos, 1)
                       : nsrc_consumer(k, i, k->start, k->start_value, 1);
      if (rc != WM_OK) return WM_ERR;
    } else if (st != NATS_OK) { /* JetStream not there yet: wait on */
      q->wait_until = now + (uint64_t)q->backoff * 1000000u;
      q->backoff = q->backoff * 2 > NSRC_BACKOFF_MAX_MS ? NSRC_BACKOFF_MAX_MS : q->backoff * 2;
      return WM_OK;
    }
    q->check = 0;
  }
  char body[96], reply[300];
  int bl = snprintf(body, sizeof body, "{\"batch\":%d,\"expires\":%lld}", NSRC_BATCH,
                    (long long)NSRC_EXPIRES_MS * 1000000LL);
  for (int r = 0; r < NSRC_REQS; r++) {
    if (q->left[r] > 0) continue;
    snprintf(reply, sizeof reply, "%s.%d", q->inbox, r);
    natsStatus st = natsConnection_PublishRequest(k->nc, q->next, reply, body, bl);
    if (st != NATS_OK) return nsrc_fail(k, i, "cannot ask for the messages of", st, 0);
    q->left[r] = NSRC_BATCH;
    q->sent[r] = now;
    q->ord[r] = ++q->nsent;
  }
  return WM_OK;
}

/* The request a status message of partition i's inbox ends (it comes on the request's own
 * reply subject), or -1. */
static int nsrc_slot(const npart *q, natsMsg *m) {
  const char *subj = natsMsg_GetSubject(m);
  size_t n = strlen(q->inbox);
  if (!subj || strncmp(subj, q->inbox, n) != 0 || subj[n] != '.') return -1;
  int r = atoi(subj + n + 1);
  return r >= 0 && r < NSRC_REQS ? r : -1;
}

static int nsrc_peek(wm_partsrc *s, int i) {
  nsrc *k = (nsrc *)s;
  wm_part *p = &s->parts[i];
  npart *q = &k->np[i];
  if (q->ready) return 1;
  if (p->end >= 0 && p->pos > p->end) {
    p->done = 1;
    return 0;
  }
  if (!q->sub) return 0;
  for (;;) {
    if (nsrc_request(k, i) != WM_OK) return WM_ERR;
    int msgs = 0, bytes = 0;
    natsStatus st = natsSubscription_GetPending(q->sub, &msgs, &bytes);
    if (st != NATS_OK) return nsrc_fail(k, i, "cannot read", st, 0);
    if (msgs <= 0) return 0;
    natsMsg *m = NULL;
    st = natsSubscription_NextMsg(&m, q->sub, NATS_TIMEOUT_MS);
    if (st == NATS_TIMEOUT) return 0;
    const char *status = NULL;
    if (st == NATS_NO_RESPONDERS ||
        (st == NATS_OK && natsMsg_GetDataLength(m) == 0 && natsMsgHeader_Get(m, "Status", &status) == NATS_OK)) {
      /* the end of a request: 404 (nothing now), 408 (expired), 409 (ended by the server);
       * 503: no responders; 100: a heartbeat */
      if (!status || strncmp(status, "100", 3) != 0) {
        int r = m ? nsrc_slot(q, m) : -1;
        if (r >= 0) q->left[r] = 0;
        if (!status || strncmp(status, "503", 3) == 0) {
          q->check = 1;
          q->wait_until = uv_hrtime() + (uint64_t)q->backoff * 1000000u;
          q->backoff = q->backoff * 2 > NSRC_BACKOFF_MAX_MS ? NSRC_BACKOFF_MAX_MS : q->backoff * 2;
        } else if (strncmp(status, "409", 3) == 0) {
          const char *d = NULL;
          if (natsMsgHeader_Get(m, "Description", &d) == NATS_OK && d && strstr(d, "Deleted")) q->check = 1;
        }
      }
      natsMsg_Destroy(m);
      continue;
    }
    if (st != NATS_OK) return nsrc_fail(k, i, "cannot read", st, 0);
    /* a message carries its own subject: it answers the oldest open request */
    int o = -1;
    for (int j = 0; j < NSRC_REQS; j++)
      if (q->left[j] > 0 && (o < 0 || q->ord[j] < q->ord[o])) o = j;
    if (o >= 0) q->left[o]--;
    q->backoff = NSRC_BACKOFF_MIN_MS;
    jsMsgMetaData *md = NULL;
    st = natsMsg_GetMetaData(&md, m);
    if (st != NATS_OK) {
      natsMsg_Destroy(m);
      return wm_ctx_error(s->op->ctx, "%s: subject %s at %s: a message without JetStream metadata: %s",
                          s->op->name, p->name, k->url, natsStatus_GetText(st));
    }
    uint64_t seq = md->Sequence.Stream;
    q->mts = md->Timestamp / 1000000;
    q->ready_pending = md->NumPending;
    jsMsgMetaData_Destroy(md);
    if (p->pos > 0 && (int64_t)seq < p->pos) { /* again, after a consumer was made again */
      natsMsg_Destroy(m);
      continue;
    }
    q->seq = seq;
    if (p->end >= 0 && (int64_t)seq > p->end) { /* came after the start: not ours */
      natsMsg_Destroy(m);
      p->done = 1;
      return 0;
    }
    q->ready = m;
    return 1;
  }
}

static int nsrc_emit(wm_partsrc *s, int i) {
  nsrc *k = (nsrc *)s;
  wm_part *p = &s->parts[i];
  npart *q = &k->np[i];
  natsMsg *m = q->ready;
  q->ready = NULL;
  int64_t ts = q->mts;
  p->pos = (int64_t)q->seq + 1;
  q->pending = q->ready_pending;
  q->pending_known = 1;
  const char *data = natsMsg_GetData(m);
  wm_value val = wm_cstr(data ? data : "", data ? (size_t)natsMsg_GetDataLength(m) : 0);
  int rc;
  if (s->cfg.metadata) {
    const char *subj = natsMsg_GetSubject(m);
    wm_value f[5];
    f[0] = wm_int((int64_t)q->seq);
    f[1] = wm_cstr(k->stream, strlen(k->stream));
    f[2] = wm_cstr(subj, strlen(subj));
    f[3] = wm_int(ts);
    f[4] = val;
    rc = wm_partsrc_emit_row(s, i, k->schema, f, ts, (int64_t)q->seq);
  } else {
    rc = wm_partsrc_emit(s, i, &val, ts, (int64_t)q->seq);
  }
  natsMsg_Destroy(m);
  if (rc == WM_OK && p->end >= 0 && p->pos > p->end) p->done = 1;
  return rc;
}

/* Frees partition i's client side (the inbox; the consumer stays: an ephemeral one goes by
 * itself once unused, a durable one is the durable's position). */
static void nsrc_part_close(nsrc *k, int i) {
  npart *q = &k->np[i];
  if (q->ready) natsMsg_Destroy(q->ready);
  q->ready = NULL;
  if (q->sub) natsSubscription_Destroy(q->sub); /* once its connection is closed, or unsubscribed */
  q->sub = NULL;
}

static void nsrc_close(wm_partsrc *s) {
  nsrc *k = (nsrc *)s;
  if (k->nc) natsConnection_Close(k->nc); /* the reader thread hands out no more messages */
  for (int i = 0; k->np && i < s->n; i++) nsrc_part_close(k, i);
  wm_nats_close(k->nc, k->js);
  k->nc = NULL;
  k->js = NULL;
}

static void nsrc_free(wm_partsrc *s) {
  nsrc *k = (nsrc *)s;
  for (int i = 0; k->subjects && i < s->n; i++) free(k->subjects[i]);
  for (int i = 0; k->np && i < s->n; i++) {
    free(k->np[i].inbox);
    free(k->np[i].cons);
    free(k->np[i].next);
  }
  free(k->subjects);
  free(k->np);
  free(k->url);
  free(k->stream);
  free(k->durable);
  free(k->who);
  if (k->schema) wm_schema_release(k->schema);
}

/* Partition i reads from `start`: its consumer and its inbox. WM_OK or WM_ERR. */
static int nsrc_open(nsrc *k, int i, int start, int64_t start_value, int fresh) {
  k->np[i].backoff = NSRC_BACKOFF_MIN_MS;
  k->np[i].check = 0;
  k->np[i].wait_until = 0;
  if (nsrc_consumer(k, i, start, start_value, fresh) != WM_OK) return WM_ERR;
  return nsrc_inbox(k, i);
}

static int nsrc_subscribe(nsrc *k, const wm_nats_source_config *cfg) {
  wm_partsrc *s = &k->ps;
  wm_ctx *ctx = s->op->ctx;
  for (int i = 0; i < s->n; i++) {
    wm_part *p = &s->parts[i];
    jsErrCode jerr = 0;
    char why[300];
    if (cfg->p.bounded) {
      /* the end: the last message now of the partition's subject, or of its filter (a
       * partition subject "ev.3.>": the server takes wildcards for the last message) */
      natsMsg *last = NULL;
      natsStatus st = js_GetLastMsg(&last, k->js, k->stream, k->subjects[i], NULL, &jerr);
      if (st == NATS_OK) p->end = (int64_t)natsMsg_GetSequence(last);
      else if (st == NATS_NOT_FOUND) {
        p->end = 0;
        st = NATS_OK;
      }
      if (last) natsMsg_Destroy(last);
      if (st != NATS_OK)
        return wm_ctx_error(ctx, "%s: stream '%s' at %s: %s", s->op->name, k->stream, k->url,
                            wm_nats_why(st, jerr, why, sizeof why));
    }
    if (cfg->p.bounded && cfg->p.start == WM_START_LATEST) p->done = 1;
    if (p->end == 0) p->done = 1;
    if (p->done) continue;
    /* the position of the next record is known from the start (a checkpoint before the
     * first record then holds it) */
    if (cfg->p.start == WM_START_SEQUENCE) p->pos = cfg->p.start_value > 0 ? cfg->p.start_value : 1;
    if (nsrc_open(k, i, cfg->p.start, cfg->p.start_value, 0) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

/* Restored positions: the restored subjects are read again from their sequence, by a
 * consumer made there, through a new inbox. */
static int nsrc_seek(wm_partsrc *s) {
  nsrc *k = (nsrc *)s;
  for (int i = 0; i < s->n; i++) {
    wm_part *p = &s->parts[i];
    if (!p->restored || !k->js) continue;
    npart *q = &k->np[i];
    if (q->ready) natsMsg_Destroy(q->ready);
    q->ready = NULL;
    p->done = p->end >= 0 && p->pos > p->end;
    if (p->done) continue;
    if (nsrc_open(k, i, WM_START_SEQUENCE, p->pos, 1) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

/* The lag from the messages' metadata (no request): the server's count of the messages of
 * the consumer's subject after a message, as it delivered it; a message peeked and not yet
 * emitted counts too. Fresh while the source reads (pulls are answered as messages come);
 * a partition that no longer reads (a bounded one at its end, or one paused) keeps the
 * count of its last message. Unknown before the first message. */
static int nsrc_lag(const wm_partsrc *s, int i, int64_t *records) {
  const npart *q = &((const nsrc *)s)->np[i];
  if (q->ready) *records = (int64_t)q->ready_pending + 1;
  else if (q->pending_known) *records = (int64_t)q->pending;
  else return 0;
  return 1;
}

static const wm_partsrc_hooks nsrc_hooks = {.peek = nsrc_peek, .emit = nsrc_emit, .seek = nsrc_seek,
                                            .lag = nsrc_lag,
                                            .close = nsrc_close, .free = nsrc_free};

wm_op *wm_nats_source_new(wm_io_host *host, const char *name, const wm_nats_source_config *cfg) {
  wm_partsrc *s = wm_partsrc_new(host, name, "read_nats", &cfg->p, &nsrc_hooks, sizeof(nsrc));
  if (!s) return NULL;
  wm_ctx *ctx = s->op->ctx;
  nsrc *k = (nsrc *)s;
  size_t n = (size_t)(s->n > 0 ? s->n : 1);
  k->np = calloc(n, sizeof *k->np);
  k->subjects = calloc(n, sizeof *k->subjects);
  k->url = strdup(cfg->url);
  k->stream = strdup(cfg->stream);
  k->durable = cfg->durable ? strdup(cfg->durable) : NULL;
  k->start = cfg->p.start;
  k->start_value = cfg->p.start_value;
  int oom = (cfg->durable && !k->durable) || !k->np || !k->subjects || !k->url || !k->stream;
  for (int i = 0; !oom && i < s->n; i++) oom = !(k->subjects[i] = strdup(cfg->subjects[i]));
  if (!oom && cfg->p.metadata) {
    const char *names[5] = {"sequence", "stream", "subject", "timestamp", "value"};
    const uint8_t types[5] = {WM_FT_INTEGER, WM_FT_STRING, WM_FT_STRING, WM_FT_INTEGER, WM_FT_STRING};
    oom = !(k->schema = wm_schema_new(5, names, types));
  }
  if (oom) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  if (s->n == 0) return s->op;
  if (!(k->who = wm_nats_who(s->op->name, cfg->url))) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  if (wm_nats_connect(cfg->url, k->who, &k->nc, &k->js, &ctx->error) != 0) {
    wm_ctx_error(ctx, "%s: %s", name, ctx->error.msg);
    return NULL;
  }
  if (nsrc_subscribe(k, cfg) != WM_OK) return NULL;
  return s->op;
}
