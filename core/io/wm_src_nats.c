/* read_nats: JetStream consumers (libnats), one per subject of the stream (a partition
 * each), with no acknowledgements: the position of every subject (the stream sequence of
 * its next message) is kept for checkpoints (wm_partsrc_position). Also the connection
 * helpers that write_nats shares (wm_nats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int wm_nats_connect(const char *url, const char *who, natsConnection **nc, jsCtx **js, char *err,
                    size_t errlen) {
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
    snprintf(err, errlen, "cannot connect to %s: %s", url, wm_nats_why(s, 0, why, sizeof why));
    natsConnection_Destroy(*nc);
    *nc = NULL;
    return -1;
  }
  s = natsConnection_JetStream(js, *nc, NULL);
  if (s != NATS_OK) {
    snprintf(err, errlen, "no JetStream at %s: %s", url, natsStatus_GetText(s));
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
                     char ***list, int *n, char *err, size_t errlen) {
  (void)timeout_ms;
  natsConnection *nc;
  jsCtx *js;
  *list = NULL;
  *n = 0;
  if (wm_nats_connect(url, NULL, &nc, &js, err, errlen) != 0) return -1;
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Info.SubjectsFilter = filter;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_GetStreamInfo(&si, js, stream, &o, &jerr);
  int rc = -1;
  if (s == NATS_NOT_FOUND) {
    snprintf(err, errlen, "stream '%s' does not exist on %s", stream, url);
  } else if (s != NATS_OK) {
    char why[300];
    snprintf(err, errlen, "stream '%s' on %s: %s", stream, url, wm_nats_why(s, jerr, why, sizeof why));
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
      snprintf(err, errlen, "out of memory");
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

typedef struct nsrc {
  wm_partsrc ps; /* first */
  natsConnection *nc;
  jsCtx *js;
  natsSubscription **sub; /* per partition */
  natsMsg **ready;        /* per partition: the next message, peeked */
  uint64_t *seq;          /* its stream sequence */
  int64_t *mts;           /* its time (ms) */
  char **subjects;        /* per partition (owned) */
  char *url, *stream, *durable;
  char *who;              /* "<op> to the NATS server at <url>", for connection reports */
  wm_schema *schema;
} nsrc;

static int nsrc_peek(wm_partsrc *s, int i) {
  nsrc *k = (nsrc *)s;
  wm_part *p = &s->parts[i];
  if (k->ready[i]) return 1;
  if (p->end >= 0 && p->pos > p->end) {
    p->done = 1;
    return 0;
  }
  int msgs = 0, bytes = 0;
  natsStatus st = natsSubscription_GetPending(k->sub[i], &msgs, &bytes);
  if (st != NATS_OK && st != NATS_SLOW_CONSUMER)
    return wm_ctx_error(s->op->ctx, "%s: subject %s at %s: %s", s->op->name, p->name, k->url,
                        natsStatus_GetText(st));
  if (msgs <= 0) return 0;
  natsMsg *m = NULL;
  st = natsSubscription_NextMsg(&m, k->sub[i], NATS_TIMEOUT_MS);
  if (st == NATS_TIMEOUT) return 0;
  if (st != NATS_OK)
    return wm_ctx_error(s->op->ctx, "%s: subject %s at %s: %s", s->op->name, p->name, k->url,
                        natsStatus_GetText(st));
  jsMsgMetaData *md = NULL;
  st = natsMsg_GetMetaData(&md, m);
  if (st != NATS_OK) {
    natsMsg_Destroy(m);
    return wm_ctx_error(s->op->ctx, "%s: subject %s at %s: a message without JetStream metadata: %s",
                        s->op->name, p->name, k->url, natsStatus_GetText(st));
  }
  k->seq[i] = md->Sequence.Stream;
  k->mts[i] = md->Timestamp / 1000000;
  jsMsgMetaData_Destroy(md);
  if (p->end >= 0 && (int64_t)k->seq[i] > p->end) { /* came after the start: not ours */
    natsMsg_Destroy(m);
    p->done = 1;
    return 0;
  }
  k->ready[i] = m;
  return 1;
}

static int nsrc_emit(wm_partsrc *s, int i) {
  nsrc *k = (nsrc *)s;
  wm_part *p = &s->parts[i];
  natsMsg *m = k->ready[i];
  k->ready[i] = NULL;
  int64_t ts = k->mts[i];
  p->pos = (int64_t)k->seq[i] + 1;
  const char *data = natsMsg_GetData(m);
  wm_value val = wm_cstr(data ? data : "", data ? (size_t)natsMsg_GetDataLength(m) : 0);
  int rc;
  if (s->cfg.metadata) {
    const char *subj = natsMsg_GetSubject(m);
    wm_value f[5];
    f[0] = wm_int((int64_t)k->seq[i]);
    f[1] = wm_cstr(k->stream, strlen(k->stream));
    f[2] = wm_cstr(subj, strlen(subj));
    f[3] = wm_int(ts);
    f[4] = val;
    rc = wm_partsrc_emit_row(s, i, k->schema, f, ts, (int64_t)k->seq[i]);
  } else {
    rc = wm_partsrc_emit(s, i, &val, ts, (int64_t)k->seq[i]);
  }
  natsMsg_Destroy(m);
  if (rc == WM_OK && p->end >= 0 && p->pos > p->end) p->done = 1;
  return rc;
}

/* libnats' reader thread may still hand a message in flight to a subscription being
 * destroyed (a crash seen when a resumed job ended at once): a subscription is destroyed
 * once unsubscribed (unsub, on a restore: it is made again at the restored sequence) or
 * once its connection is closed (at the end). */
static void sub_drop(natsSubscription **sub, int unsub) {
  if (!*sub) return;
  if (unsub) natsSubscription_Unsubscribe(*sub);
  natsSubscription_Destroy(*sub);
  *sub = NULL;
}

static void nsrc_close(wm_partsrc *s) {
  nsrc *k = (nsrc *)s;
  if (k->nc) natsConnection_Close(k->nc); /* the reader thread hands out no more messages */
  for (int i = 0; i < s->n; i++) {
    if (k->ready && k->ready[i]) {
      natsMsg_Destroy(k->ready[i]);
      k->ready[i] = NULL;
    }
    if (k->sub) sub_drop(&k->sub[i], 0);
  }
  wm_nats_close(k->nc, k->js);
  k->nc = NULL;
  k->js = NULL;
}

static void nsrc_free(wm_partsrc *s) {
  nsrc *k = (nsrc *)s;
  for (int i = 0; k->subjects && i < s->n; i++) free(k->subjects[i]);
  free(k->subjects);
  free(k->sub);
  free(k->ready);
  free(k->seq);
  free(k->mts);
  free(k->url);
  free(k->stream);
  free(k->durable);
  free(k->who);
  if (k->schema) wm_schema_release(k->schema);
}

static const wm_partsrc_hooks nsrc_hooks;

/* A consumer name from the durable name and the subject: letters, digits, '-' and '_'. */
static void durable_name(char *out, size_t n, const char *durable, const char *subject) {
  snprintf(out, n, "%s_%s", durable, subject);
  for (char *c = out; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
      *c = '_';
}

/* Subscribes partition i from `start` (WM_START_*, with start_value). WM_OK or WM_ERR. */
static int nsrc_sub_one(nsrc *k, int i, int start, int64_t start_value) {
  wm_partsrc *s = &k->ps;
  jsErrCode jerr = 0;
  char why[300];
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = k->stream;
  switch (start) {
  case WM_START_LATEST: so.Config.DeliverPolicy = js_DeliverNew; break;
  case WM_START_SEQUENCE:
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = (uint64_t)(start_value > 0 ? start_value : 1);
    break;
  case WM_START_TIME:
    so.Config.DeliverPolicy = js_DeliverByStartTime;
    so.Config.OptStartTime = start_value * 1000000;
    break;
  default: so.Config.DeliverPolicy = js_DeliverAll; break;
  }
  char dname[512];
  if (k->durable) {
    durable_name(dname, sizeof dname, k->durable, k->subjects[i]);
    so.Config.Durable = dname;
    so.Config.AckPolicy = js_AckNone; /* positions live in checkpoints, not in acks */
  } else {
    so.Ordered = true; /* ephemeral, in order, recreated by libnats after a gap */
  }
  natsStatus st = js_SubscribeSync(&k->sub[i], k->js, k->subjects[i], NULL, &so, &jerr);
  if (st != NATS_OK)
    return wm_ctx_error(s->op->ctx, "%s: cannot read subject '%s' of stream '%s' at %s: %s", s->op->name,
                        k->subjects[i], k->stream, k->url, wm_nats_why(st, jerr, why, sizeof why));
  return WM_OK;
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
    if (nsrc_sub_one(k, i, cfg->p.start, cfg->p.start_value) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

/* Restored positions: the restored subjects are read again from their sequence. */
static int nsrc_seek(wm_partsrc *s) {
  nsrc *k = (nsrc *)s;
  for (int i = 0; i < s->n; i++) {
    wm_part *p = &s->parts[i];
    if (!p->restored || !k->js) continue;
    if (k->ready[i]) natsMsg_Destroy(k->ready[i]);
    k->ready[i] = NULL;
    sub_drop(&k->sub[i], 1);
    p->done = p->end >= 0 && p->pos > p->end;
    if (p->done) continue;
    if (nsrc_sub_one(k, i, WM_START_SEQUENCE, p->pos) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

static const wm_partsrc_hooks nsrc_hooks = {.peek = nsrc_peek, .emit = nsrc_emit, .seek = nsrc_seek,
                                            .close = nsrc_close, .free = nsrc_free};

wm_op *wm_nats_source_new(wm_io_host *host, const char *name, const wm_nats_source_config *cfg) {
  wm_partsrc *s = wm_partsrc_new(host, name, "read_nats", &cfg->p, &nsrc_hooks, sizeof(nsrc));
  if (!s) return NULL;
  wm_ctx *ctx = s->op->ctx;
  nsrc *k = (nsrc *)s;
  size_t n = (size_t)(s->n > 0 ? s->n : 1);
  k->sub = calloc(n, sizeof *k->sub);
  k->ready = calloc(n, sizeof *k->ready);
  k->seq = calloc(n, sizeof *k->seq);
  k->mts = calloc(n, sizeof *k->mts);
  k->subjects = calloc(n, sizeof *k->subjects);
  k->url = strdup(cfg->url);
  k->stream = strdup(cfg->stream);
  k->durable = cfg->durable ? strdup(cfg->durable) : NULL;
  int oom = (cfg->durable && !k->durable) || !k->sub || !k->ready || !k->seq || !k->mts || !k->subjects ||
            !k->url || !k->stream;
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
  char e[600];
  if (!(k->who = wm_nats_who(s->op->name, cfg->url))) {
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  if (wm_nats_connect(cfg->url, k->who, &k->nc, &k->js, e, sizeof e) != 0) {
    wm_ctx_error(ctx, "%s: %s", name, e);
    return NULL;
  }
  if (nsrc_subscribe(k, cfg) != WM_OK) return NULL;
  return s->op;
}
