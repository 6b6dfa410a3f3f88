#include "exec/wm_mt.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_spsc.h"
#include "time/wm_time.h"

#define BATCH_BYTES (32 * 1024) /* hand a batch over once it holds this much */
#define WAKE_BATCHES 64          /* batches drained per queue per wake-up (fairness) */

/* MSG_ORIGIN: the origin and unit of the positions that follow (sent when they change);
 * MSG_RECORD_POS: a record with its position (line, offset) in that origin. */
/* MSG_BARRIER: checkpoint barrier N (wm_mt.h, "checkpoints"), addressed to the thread. */
enum { MSG_RECORD = 1, MSG_WATERMARK, MSG_IDLE, MSG_ACTIVE, MSG_ORIGIN, MSG_RECORD_POS,
       MSG_BARRIER };

typedef struct outq {
  wm_buf cur;          /* messages not handed over yet */
  batch *head, *tail;  /* batches that did not fit in the full queue */
  uint64_t pend_bytes; /* bytes in head..tail */
  uint64_t pushed;     /* bytes handed over (compare with the queue's popped_bytes) */
  wm_encoder enc;
  batch *spare;        /* a returned batch whose buffer cur now uses */
  const char *origin;  /* the origin and unit last sent (MSG_ORIGIN) */
  const char *unit;
  int origin_sent;
} outq;

/* Positions received from one thread: the records' positions are published in ctx->pos
 * while they run here, as on the thread that read them. */
typedef struct inpos {
  wm_buf origin, unit;
  wm_pos pos;
} inpos;

struct wm_mt_local {
  wm_mt_job *job;
  int self;
  wm_exec *exec;
  wm_ctx *ctx;
  wm_codec_host ch;
  outq *out;          /* per destination thread */
  wm_decoder *dec;    /* per source thread */
  inpos *inp;         /* per source thread */
  wm_op **targets;    /* by gid; NULL when not on this thread */
  uint32_t ntargets;
  int nremote, ended; /* remote input channels, and how many have ended */
  int64_t reported;   /* bytes in flight reported to wm_exec_pressure */
  wm_op *recv;        /* the receiver pseudo-source */
  int stopping, done, started;
  /* checkpoints: the hooks, the checkpoint this thread has cut (0: none), per source
   * thread whether its messages are being recorded and what was recorded, and how many
   * barriers of ck_id are still to come */
  wm_mt_ckpt_hooks ck;
  int ck_on;
  uint64_t ck_id;
  int *rec;
  wm_buf *chan;
  wm_encoder *chan_enc;
  int ck_open;
  /* a stopping checkpoint (wm_mt.h): the one this thread has cut for and holds at (0:
   * none), and per source thread what came after the cut, kept unprocessed in the recorded
   * channels' format for the case that the checkpoint is given up */
  uint64_t held;
  wm_buf *hold;
  wm_encoder *hold_enc;
};

typedef struct sender {
  wm_mt_local *l;
  int to;
  uint32_t gid;
  int chan;
  char *from;
} sender;

/* ---- sending ---------------------------------------------------------------------- */

static void update_pressure(wm_mt_local *l);

static int64_t in_flight(wm_mt_local *l) {
  int64_t total = 0;
  for (int t = 0; t < l->job->n; t++) {
    if (t == l->self) continue;
    outq *o = &l->out[t];
    uint64_t popped = atomic_load(&l->job->q[l->self * l->job->n + t]->popped_bytes);
    total += (int64_t)(o->pend_bytes + (o->pushed - popped));
  }
  return total;
}

/* Hands the pending batches for thread t to its queue while there is room. */
static void push_pending(wm_mt_local *l, int t) {
  outq *o = &l->out[t];
  wm_spsc *q = l->job->q[l->self * l->job->n + t];
  int pushed = 0;
  while (o->head) {
    batch *b = o->head;
    batch *next = b->next;
    size_t len = b->len;
    if (!wm_spsc_push(q, b)) break; /* b belongs to the consumer from here on */
    o->head = next;
    if (!next) o->tail = NULL;
    o->pend_bytes -= len;
    o->pushed += len;
    pushed = 1;
  }
  if (pushed) wm_mt_wake(l->job, t);
}

static int flush(wm_mt_local *l, int t) {
  outq *o = &l->out[t];
  if (o->cur.len == 0) return WM_OK;
  if (o->cur.oom) return wm_ctx_error(l->ctx, "out of memory sending records to thread %d", t + 1);
  batch *b = o->spare ? o->spare : malloc(sizeof *b);
  o->spare = NULL;
  if (!b) return wm_ctx_error(l->ctx, "out of memory sending records to thread %d", t + 1);
  b->next = NULL;
  b->len = o->cur.len;
  b->cap = o->cur.cap;
  b->data = o->cur.data;
  wm_buf_init(&o->cur);
  if (o->tail) o->tail->next = b;
  else o->head = b;
  o->tail = b;
  o->pend_bytes += b->len;
  push_pending(l, t);
  update_pressure(l);
  return WM_OK;
}

/* Reports the bytes in flight as backpressure; asks the consumers for a wake-up while
 * they matter (the flag is set before the count is read, so a pop in between still wakes). */
static void report_in_flight(wm_mt_local *l, int64_t total) {
  int64_t delta = total - l->reported;
  l->reported = total; /* first: the executor may resume a source that sends at once */
  if (delta) wm_exec_pressure(l->exec, delta);
}

static void update_pressure(wm_mt_local *l) {
  /* the report comes first: it is what may pause the sources, and a pause decided after the
   * flags below were skipped would wait for a wake-up that no consumer sends */
  report_in_flight(l, in_flight(l));
  int pending = 0;
  for (int t = 0; t < l->job->n; t++)
    if (t != l->self && l->out[t].head) pending = 1;
  if (l->reported > 0 && (pending || wm_exec_paused(l->exec))) {
    for (int t = 0; t < l->job->n; t++)
      if (t != l->self) atomic_store(&l->job->q[l->self * l->job->n + t]->want_wake, 1);
    report_in_flight(l, in_flight(l)); /* what was popped before the flags were up */
  }
}

static void put_header(wm_buf *b, int kind, const sender *s) {
  wm_buf_addc(b, (char)kind);
  wm_codec_put_uvar(b, s->gid);
  wm_codec_put_uvar(b, (uint64_t)s->chan);
}

static int send_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  sender *s = op->impl;
  outq *o = &s->l->out[s->to];
  if (!o->cur.data) { /* a new batch: reuse one the consumer gave back */
    wm_mt_job *j = s->l->job;
    batch *b = wm_spsc_pop(j->ret[s->l->self * j->n + s->to]);
    if (b) {
      o->cur.data = b->data;
      o->cur.cap = b->cap;
      o->cur.len = 0;
      o->spare = b;
    }
  }
  if (!o->cur.data && wm_buf_reserve(&o->cur, BATCH_BYTES + BATCH_BYTES / 4) != 0)
    return wm_ctx_error(op->ctx, "out of memory sending records to thread %d", s->to + 1);
  size_t mark = o->cur.len;
  const wm_pos *pos = op->ctx->pos;
  if (pos && (!o->origin_sent || pos->origin != o->origin || pos->unit != o->unit)) {
    /* the receiver keeps it for the records that follow (in this and later batches) */
    wm_buf_addc(&o->cur, (char)MSG_ORIGIN);
    const char *u = pos->unit ? pos->unit : "";
    size_t on = pos->origin ? strlen(pos->origin) : 0, un = strlen(u);
    wm_codec_put_uvar(&o->cur, on);
    wm_buf_add(&o->cur, pos->origin ? pos->origin : "", on);
    wm_codec_put_uvar(&o->cur, un);
    wm_buf_add(&o->cur, u, un);
    o->origin = pos->origin;
    o->unit = pos->unit;
    o->origin_sent = 1;
    mark = o->cur.len;
  }
  put_header(&o->cur, pos ? MSG_RECORD_POS : MSG_RECORD, s);
  wm_codec_put_ivar(&o->cur, ts);
  if (pos) {
    wm_codec_put_uvar(&o->cur, pos->line);
    wm_codec_put_uvar(&o->cur, pos->offset);
  }
  if (wm_encode_value(&o->enc, &s->l->ch, &o->cur, rec, &op->ctx->error) != 0) {
    o->cur.len = mark;
    wm_buf text;
    wm_buf_init(&text);
    wm_format_value(&text, rec, 0, op->ctx->host.format, op->ctx->host.ud);
    int rc = wm_ctx_error(op->ctx,
                          "%s: cannot send a record to another thread (%s): %s; a record that "
                          "crosses threads may hold only nil, booleans, numbers, strings and "
                          "tables\n  record: %.600s",
                          s->from, op->name, op->ctx->error.msg, text.data ? text.data : "");
    wm_buf_free(&text);
    return rc;
  }
  op->m.records_out++;
  return o->cur.len >= BATCH_BYTES ? flush(s->l, s->to) : WM_OK;
}

static int send_watermark(wm_op *op, int64_t wm) {
  sender *s = op->impl;
  outq *o = &s->l->out[s->to];
  put_header(&o->cur, MSG_WATERMARK, s);
  wm_codec_put_ivar(&o->cur, wm);
  return o->cur.oom ? wm_ctx_error(op->ctx, "out of memory") : WM_OK;
}

static int send_status(wm_op *op, bool idle) {
  sender *s = op->impl;
  put_header(&s->l->out[s->to].cur, idle ? MSG_IDLE : MSG_ACTIVE, s);
  return s->l->out[s->to].cur.oom ? wm_ctx_error(op->ctx, "out of memory") : WM_OK;
}

static void sender_free(wm_op *op) {
  sender *s = op->impl;
  if (!s) return;
  free(s->from);
  free(s);
}

static const wm_op_vt sender_vt = {.kind = "send", .record = send_record,
                                   .watermark = send_watermark, .status = send_status,
                                   .free = sender_free};

wm_op *wm_mt_sender_new(wm_mt_local *l, const char *name, const char *from, int thread,
                        uint32_t gid, int chan) {
  sender *s = calloc(1, sizeof *s);
  if (s) s->from = strdup(from ? from : "?");
  wm_op *op = s && s->from ? wm_op_new(l->ctx, &sender_vt, s, name) : NULL;
  if (!op) {
    if (s) free(s->from);
    free(s);
    wm_ctx_error(l->ctx, "out of memory");
    return NULL;
  }
  s->l = l;
  s->to = thread;
  s->gid = gid;
  s->chan = chan;
  return op;
}

/* ---- receiving -------------------------------------------------------------------- */

static int corrupt(wm_mt_local *l, int from) {
  return wm_ctx_error(l->ctx, "corrupt message from thread %d to thread %d", from + 1, l->self + 1);
}

static int local_snapshot(wm_mt_local *l, uint64_t id);
static int close_channel(wm_mt_local *l, int from);
static int thaw(wm_mt_local *l);

/* Appends a message of thread `from` to b in the recorded channels' format (enc: b's
 * encoder). */
static int encode_msg(wm_mt_local *l, wm_buf *b, wm_encoder *enc, int from, int kind, uint64_t gid,
                      uint64_t chan, int64_t t, const wm_value *v) {
  wm_buf_addc(b, (char)(kind == MSG_RECORD_POS ? MSG_RECORD : kind));
  wm_codec_put_uvar(b, gid);
  wm_codec_put_uvar(b, chan);
  if (kind != MSG_IDLE && kind != MSG_ACTIVE) wm_codec_put_ivar(b, t);
  if (v && wm_encode_value(enc, &l->ch, b, v, &l->ctx->error) != 0)
    return wm_ctx_error(l->ctx, "cannot checkpoint a record in flight from thread %d: %s",
                        from + 1, l->ctx->error.msg);
  return b->oom ? wm_ctx_error(l->ctx, "out of memory recording a checkpoint") : WM_OK;
}

/* Records a message of thread `from` that came after this thread's cut (wm_mt.h); holding
 * for a stopping checkpoint, also keeps it for later instead of processing it. 1: the message
 * is to be processed now; 0: it is kept; WM_ERR. */
static int record_msg(wm_mt_local *l, int from, int kind, uint64_t gid, uint64_t chan, int64_t t,
                      const wm_value *v) {
  if (l->rec && l->rec[from] &&
      encode_msg(l, &l->chan[from], &l->chan_enc[from], from, kind, gid, chan, t, v) != WM_OK)
    return WM_ERR;
  if (!l->held) return 1;
  return encode_msg(l, &l->hold[from], &l->hold_enc[from], from, kind, gid, chan, t, v) != WM_OK
             ? WM_ERR
             : 0;
}

static int dispatch_bytes(wm_mt_local *l, int from, wm_decoder *dec, inpos *ip, const char *data,
                          size_t len) {
  const uint8_t *p = (const uint8_t *)data, *end = p + len;
  while (p < end) {
    int kind = *p++;
    uint64_t gid, chan;
    if (kind == MSG_BARRIER) {
      uint64_t id;
      if (wm_codec_get_uvar(&p, end, &id) != 0) return corrupt(l, from);
      if (!l->ck_on) continue;
      if (id > l->ck_id && l->held && thaw(l) != WM_OK) return WM_ERR; /* a newer one: the stop
                                                                          * was given up */
      if (id > l->ck_id && local_snapshot(l, id) != WM_OK) return WM_ERR;
      if (id == l->ck_id && l->rec[from] && close_channel(l, from) != WM_OK) return WM_ERR;
      continue;
    }
    if (kind == MSG_ORIGIN) {
      uint64_t on, un;
      if (wm_codec_get_uvar(&p, end, &on) != 0 || on > (uint64_t)(end - p)) return corrupt(l, from);
      wm_buf_clear(&ip->origin);
      wm_buf_add(&ip->origin, (const char *)p, (size_t)on);
      p += on;
      if (wm_codec_get_uvar(&p, end, &un) != 0 || un > (uint64_t)(end - p)) return corrupt(l, from);
      wm_buf_clear(&ip->unit);
      wm_buf_add(&ip->unit, (const char *)p, (size_t)un);
      p += un;
      if (ip->origin.oom || ip->unit.oom || wm_buf_reserve(&ip->origin, 0) != 0 ||
          wm_buf_reserve(&ip->unit, 0) != 0)
        return wm_ctx_error(l->ctx, "out of memory");
      ip->origin.data[ip->origin.len] = '\0'; /* also when empty (reserve does not) */
      ip->unit.data[ip->unit.len] = '\0';
      ip->pos.origin = ip->origin.data;
      ip->pos.unit = un ? ip->unit.data : NULL;
      continue;
    }
    if (wm_codec_get_uvar(&p, end, &gid) != 0 || wm_codec_get_uvar(&p, end, &chan) != 0 ||
        gid >= l->ntargets || !l->targets[gid])
      return corrupt(l, from);
    wm_op *op = l->targets[gid];
    int rc;
    int64_t t;
    switch (kind) {
    case MSG_RECORD:
    case MSG_RECORD_POS: {
      wm_value v;
      if (wm_codec_get_ivar(&p, end, &t) != 0) return corrupt(l, from);
      if (kind == MSG_RECORD_POS && (wm_codec_get_uvar(&p, end, &ip->pos.line) != 0 ||
                                     wm_codec_get_uvar(&p, end, &ip->pos.offset) != 0))
        return corrupt(l, from);
      if (wm_decode_value(dec, &l->ctx->host, &l->ch, &p, end, &v, &l->ctx->error) != 0)
        return wm_ctx_error(l->ctx, "thread %d: a record from thread %d: %s", l->self + 1, from + 1,
                            l->ctx->error.msg);
      int now = record_msg(l, from, kind, gid, chan, t, &v);
      if (now != 1) {
        wm_value_release(&l->ctx->host, &v);
        if (now == WM_ERR) return WM_ERR;
        continue;
      }
      l->recv->m.records_out++;
      const wm_pos *outer = l->ctx->pos;
      l->ctx->pos = kind == MSG_RECORD_POS ? &ip->pos : NULL;
      rc = wm_op_input_record(op, (int)chan, &v, t);
      l->ctx->pos = outer;
      if (rc == WM_ERR) wm_op_failed(op, rc); /* names the operator, as wm_op_emit does */
      if (rc == WM_ERR && kind == MSG_RECORD_POS) wm_pos_add_context(l->ctx, &ip->pos);
      wm_value_release(&l->ctx->host, &v);
      break;
    }
    case MSG_WATERMARK:
      if (wm_codec_get_ivar(&p, end, &t) != 0) return corrupt(l, from);
      if ((rc = record_msg(l, from, kind, gid, chan, t, NULL)) != 1) {
        if (rc == WM_ERR) return WM_ERR;
        continue;
      }
      if (t == WM_TIME_MAX) l->ended++;
      rc = wm_op_input_watermark(op, (int)chan, t);
      break;
    case MSG_IDLE:
    case MSG_ACTIVE:
      if ((rc = record_msg(l, from, kind, gid, chan, 0, NULL)) != 1) {
        if (rc == WM_ERR) return WM_ERR;
        continue;
      }
      rc = wm_op_input_status(op, (int)chan, kind == MSG_IDLE);
      break;
    default: return corrupt(l, from);
    }
    if (rc != WM_OK) return rc;
  }
  return WM_OK;
}

static int dispatch(wm_mt_local *l, int from, const batch *b) {
  return dispatch_bytes(l, from, &l->dec[from], &l->inp[from], b->data, b->len);
}

/* ---- checkpoints ------------------------------------------------------------------------ */

void wm_mt_set_checkpoints(wm_mt_local *l, const wm_mt_ckpt_hooks *h) {
  l->ck = *h;
  l->ck_on = 1;
}

wm_op *wm_mt_receiver(wm_mt_local *l) { return l->recv; }

/* The cut of checkpoint id: the snapshot, then barrier id to every other thread, then the
 * other threads' messages are recorded until their barriers come. */
static int local_snapshot(wm_mt_local *l, uint64_t id) {
  int n = l->job->n;
  if (!l->rec) {
    l->rec = calloc((size_t)n, sizeof *l->rec);
    l->chan = calloc((size_t)n, sizeof *l->chan);
    l->chan_enc = calloc((size_t)n, sizeof *l->chan_enc);
    l->hold = calloc((size_t)n, sizeof *l->hold);
    l->hold_enc = calloc((size_t)n, sizeof *l->hold_enc);
    if (!l->rec || !l->chan || !l->chan_enc || !l->hold || !l->hold_enc)
      return wm_ctx_error(l->ctx, "out of memory");
    for (int t = 0; t < n; t++) {
      wm_buf_init(&l->chan[t]);
      wm_encoder_init(&l->chan_enc[t]);
      wm_buf_init(&l->hold[t]);
      wm_encoder_init(&l->hold_enc[t]);
    }
  }
  l->ck_id = id; /* an older checkpoint not finished here is given up */
  if (l->ck.snapshot(l->ck.ud, id) != WM_OK) return WM_ERR;
  l->ck_open = 0;
  for (int t = 0; t < n; t++) {
    if (t == l->self) continue;
    wm_buf_addc(&l->out[t].cur, (char)MSG_BARRIER);
    wm_codec_put_uvar(&l->out[t].cur, id);
    if (flush(l, t) != WM_OK) return WM_ERR;
    l->rec[t] = 1;
    wm_buf_clear(&l->chan[t]);
    wm_encoder_free(&l->chan_enc[t]);
    wm_encoder_init(&l->chan_enc[t]);
    l->ck_open++;
  }
  if (id == wm_mt_stop_checkpoint(l->job)) {
    /* the stop's: nothing past the cut may be emitted (it would be emitted again by the run
     * that resumes from it): the sources pause, no timer fires, and what the other threads
     * send is kept, not processed (before their barriers it is recorded as well) */
    l->held = id;
    wm_exec_hold(l->exec, 1);
  }
  return l->ck_open == 0 ? l->ck.done(l->ck.ud, id) : WM_OK;
}

/* The stopping checkpoint this thread holds at was given up (a thread whose inputs had
 * ended could not take its part): the run goes on, with what was kept meanwhile first. */
static int thaw(wm_mt_local *l) {
  l->held = 0;
  wm_exec_hold(l->exec, 0);
  int rc = WM_OK;
  for (int t = 0; t < l->job->n; t++) {
    if (t == l->self) continue;
    l->rec[t] = 0; /* the checkpoint is gone: nothing more is recorded for it */
    wm_buf_clear(&l->chan[t]);
    if (rc == WM_OK && l->hold[t].oom) rc = wm_ctx_error(l->ctx, "out of memory holding for a stop");
    if (rc == WM_OK && l->hold[t].len) rc = wm_mt_replay_channel(l, t, l->hold[t].data, l->hold[t].len);
    wm_buf_clear(&l->hold[t]);
    wm_encoder_free(&l->hold_enc[t]);
    wm_encoder_init(&l->hold_enc[t]);
  }
  return rc;
}

/* On a wake-up of a held thread: whether the stopping checkpoint is still the one asked for. */
static int check_thaw(wm_mt_local *l) {
  if (!l->held || wm_mt_stop_checkpoint(l->job) == l->held) return WM_OK;
  return thaw(l);
}

static int close_channel(wm_mt_local *l, int from) {
  l->rec[from] = 0;
  if (l->chan[from].oom) return wm_ctx_error(l->ctx, "out of memory recording a checkpoint");
  if (l->chan[from].len &&
      l->ck.put_channel(l->ck.ud, l->ck_id, from, l->chan[from].data, l->chan[from].len) != WM_OK)
    return WM_ERR;
  wm_buf_clear(&l->chan[from]);
  return --l->ck_open == 0 ? l->ck.done(l->ck.ud, l->ck_id) : WM_OK;
}

int wm_mt_replay_channel(wm_mt_local *l, int from, const void *data, size_t len) {
  if (from < 0 || from >= l->job->n || from == l->self)
    return wm_ctx_error(l->ctx, "damaged checkpoint: a channel from thread %d to thread %d",
                        from + 1, l->self + 1);
  wm_decoder dec;
  wm_decoder_init(&dec);
  inpos ip;
  memset(&ip, 0, sizeof ip);
  wm_buf_init(&ip.origin);
  wm_buf_init(&ip.unit);
  int rc = dispatch_bytes(l, from, &dec, &ip, data, len);
  wm_decoder_free(&dec);
  wm_buf_free(&ip.origin);
  wm_buf_free(&ip.unit);
  return rc;
}

int wm_mt_decode_channel(wm_ctx *ctx, const wm_codec_host *ch, const void *data, size_t len,
                         wm_mt_msg_fn fn, void *ud) {
  const uint8_t *p = data, *end = p + len;
  wm_decoder dec;
  wm_decoder_init(&dec);
  int rc = WM_OK;
  while (p < end && rc == WM_OK) {
    int kind = *p++;
    uint64_t gid, chan;
    int64_t t = 0;
    wm_value v = wm_nil();
    if (kind < MSG_RECORD || kind > MSG_ACTIVE || wm_codec_get_uvar(&p, end, &gid) != 0 ||
        wm_codec_get_uvar(&p, end, &chan) != 0 || gid > UINT32_MAX || chan > INT_MAX ||
        (kind != MSG_IDLE && kind != MSG_ACTIVE && wm_codec_get_ivar(&p, end, &t) != 0)) {
      rc = wm_ctx_error(ctx, "damaged checkpoint: a record in flight between threads");
      break;
    }
    if (kind == MSG_RECORD &&
        wm_decode_value(&dec, &ctx->host, ch, &p, end, &v, &ctx->error) != 0) {
      rc = wm_ctx_error(ctx, "damaged checkpoint: a record in flight between threads: %s", ctx->error.msg);
      break;
    }
    static const int kinds[] = {0, WM_MT_RECORD, WM_MT_WATERMARK, WM_MT_IDLE, WM_MT_ACTIVE};
    rc = fn(ud, kinds[kind], (uint32_t)gid, (int)chan, t, kind == MSG_RECORD ? &v : NULL);
    wm_value_release(&ctx->host, &v);
  }
  wm_decoder_free(&dec);
  return rc;
}

static void check_ckpt_request(wm_mt_local *l) {
  if (!l->ck_on) return;
  if (check_thaw(l) != WM_OK) {
    wm_exec_fail(l->exec);
    return;
  }
  uint64_t req = atomic_load(&l->job->ck_req);
  if (req > l->ck_id && l->held && thaw(l) != WM_OK) wm_exec_fail(l->exec);
  else if (req > l->ck_id && local_snapshot(l, req) != WM_OK) wm_exec_fail(l->exec);
}

static void close_handles(wm_mt_local *l) {
  mt_worker *w = &l->job->w[l->self];
  uv_mutex_lock(&w->mu);
  int was_open = w->open;
  w->open = 0;
  uv_mutex_unlock(&w->mu);
  if (was_open && !uv_is_closing((uv_handle_t *)&w->wake)) uv_close((uv_handle_t *)&w->wake, NULL);
  if (w->prep_open && !uv_is_closing((uv_handle_t *)&w->prep)) uv_close((uv_handle_t *)&w->prep, NULL);
  w->prep_open = 0;
}

static void check_done(wm_mt_local *l) {
  if (l->done || l->stopping || !l->started || l->held || l->ended < l->nremote) return;
  for (int t = 0; t < l->job->n; t++)
    if (t != l->self && (l->out[t].cur.len || l->out[t].head)) return;
  if (wm_exec_pending_sources(l->exec) > 1) return; /* a local source still runs */
  l->done = 1;
  close_handles(l);
  wm_exec_source_done(l->exec, l->recv);
}

/* Stops this thread because another one failed or aborted. */
static int follow_job(wm_mt_local *l) {
  int st = wm_mt_job_state(l->job);
  if (l->stopping || st == 0) return 0;
  l->stopping = 1;
  if (st == 3) { /* stopped after a checkpoint (SIGTERM): no drain, no failure */
    if (!l->done) wm_exec_stop_saved(l->exec);
    close_handles(l);
    return 1;
  }
  if (!l->done) wm_exec_fail(l->exec); /* stops the sources, our stop() closes the handles */
  else close_handles(l);
  return 1;
}

static void fail_here(wm_mt_local *l) {
  wm_exec_fail(l->exec); /* our stop() reports ctx->error to the job */
}

static void on_wake(uv_async_t *h) {
  wm_mt_local *l = h->data;
  if (follow_job(l) || l->done) return;
  check_ckpt_request(l);
  if (l->stopping) return;
  int n = l->job->n, more = 0, any = 0;
  for (int t = 0; t < n; t++) {
    if (t == l->self) continue;
    wm_spsc *q = l->job->q[t * n + l->self];
    int k = 0;
    batch *b;
    while (k < WAKE_BATCHES && (b = wm_spsc_pop(q))) {
      int rc = dispatch(l, t, b);
      wm_spsc_consumed(q, b->len);
      if (!wm_spsc_push(l->job->ret[t * n + l->self], b)) { /* give it back for reuse */
        free(b->data);
        free(b);
      }
      k++;
      if (rc != WM_OK) {
        fail_here(l);
        return;
      }
    }
    if (k && atomic_exchange(&q->want_wake, 0)) wm_mt_wake(l->job, t);
    if (k == WAKE_BATCHES) more = 1;
    any |= k;
  }
  if (any) wm_exec_batch_done(l->exec);
  for (int t = 0; t < n; t++)
    if (t != l->self) push_pending(l, t);
  update_pressure(l);
  if (more && !l->stopping && !l->done) uv_async_send(h); /* our own handle: still open */
  check_done(l);
}

/* Before the loop waits: hand over what the sources and timers produced. */
static void on_prepare(uv_prepare_t *h) {
  wm_mt_local *l = h->data;
  if (follow_job(l) || l->done) return;
  for (int t = 0; t < l->job->n; t++) {
    if (t == l->self) continue;
    if (flush(l, t) != WM_OK) {
      fail_here(l);
      return;
    }
    push_pending(l, t);
  }
  update_pressure(l);
  check_done(l);
}

static int recv_start(wm_op *src, wm_io_host *host) {
  (void)host;
  wm_mt_local *l = src->impl;
  mt_worker *w = &l->job->w[l->self];
  l->started = 1;
  int rc = uv_prepare_start(&w->prep, on_prepare);
  if (rc != 0) return wm_ctx_error(l->ctx, "cannot start the thread's hand-over: %s", uv_strerror(rc));
  uv_async_send(&w->wake); /* drain what arrived before the loop ran */
  return WM_OK;
}

static void recv_stop(wm_op *src, wm_io_host *host, int finish) {
  (void)host;
  wm_mt_local *l = src->impl;
  if (finish) return; /* a drain: the remote inputs end when their sources do */
  if (!l->stopping) {
    l->stopping = 1;
    if (l->ctx->error.msg[0]) {
      wm_mt_job_fail(l->job, &l->ctx->error);
    } else {
      wm_mt_job_abort(l->job);
    }
  }
  close_handles(l);
}

/* The receiver's position: how many remote channels have ended (the rest of what it passed
 * on is in its targets' state and in the recorded channels). */
static int recv_snapshot(wm_op *src, wm_buf *out) {
  wm_mt_local *l = src->impl;
  wm_buf_addc(out, 1);
  wm_codec_put_uvar(out, (uint64_t)l->ended);
  return out->oom ? wm_ctx_error(l->ctx, "out of memory") : WM_OK;
}

static int recv_restore(wm_op *src, const char *data, size_t n) {
  wm_mt_local *l = src->impl;
  const uint8_t *p = (const uint8_t *)data, *end = p + n;
  uint64_t ended;
  if (n < 1 || *p++ != 1 || wm_codec_get_uvar(&p, end, &ended) != 0 || p != end ||
      ended > (uint64_t)l->nremote)
    return wm_ctx_error(l->ctx, "damaged checkpoint: the position of '%s'", src->name);
  l->ended = (int)ended;
  return WM_OK;
}

static const wm_source_vt recv_src_vt = {.start = recv_start, .stop = recv_stop, .pause = NULL,
                                         .snapshot = recv_snapshot, .restore = recv_restore};
static const wm_op_vt recv_vt = {.kind = "receive"};

wm_mt_local *wm_mt_local_new(wm_mt_job *j, int thread, wm_exec *exec, const wm_codec_host *ch) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  wm_mt_local *l = calloc(1, sizeof *l);
  if (l) {
    l->out = calloc((size_t)j->n, sizeof *l->out);
    l->dec = calloc((size_t)j->n, sizeof *l->dec);
    l->inp = calloc((size_t)j->n, sizeof *l->inp);
  }
  if (!l || !l->out || !l->dec || !l->inp) {
    if (l) {
      free(l->out);
      free(l->dec);
      free(l->inp);
    }
    free(l);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  l->job = j;
  l->self = thread;
  l->exec = exec;
  l->ctx = ctx;
  l->ch = *ch;
  for (int t = 0; t < j->n; t++) {
    wm_buf_init(&l->out[t].cur);
    wm_encoder_init(&l->out[t].enc);
    wm_decoder_init(&l->dec[t]);
    wm_buf_init(&l->inp[t].origin);
    wm_buf_init(&l->inp[t].unit);
  }
  char name[64];
  snprintf(name, sizeof name, "from other threads (thread %d)", thread + 1);
  l->recv = wm_op_new(ctx, &recv_vt, l, name);
  mt_worker *w = &j->w[thread];
  int rc = l->recv && wm_exec_add_source(exec, l->recv, &recv_src_vt) == 0 ? 0 : UV_ENOMEM;
  if (rc == 0) rc = uv_prepare_init(wm_exec_loop(exec), &w->prep);
  if (rc == 0) {
    w->prep_open = 1;
    w->prep.data = l;
    uv_unref((uv_handle_t *)&w->prep);
    rc = uv_async_init(wm_exec_loop(exec), &w->wake, on_wake);
  }
  if (rc != 0) {
    wm_ctx_error(ctx, "cannot set up thread %d: %s", thread + 1, uv_strerror(rc));
    if (w->prep_open) uv_close((uv_handle_t *)&w->prep, NULL);
    w->prep_open = 0;
    wm_mt_local_free(l);
    return NULL;
  }
  w->wake.data = l;
  uv_mutex_lock(&w->mu);
  w->open = 1;
  uv_mutex_unlock(&w->mu);
  return l;
}

void wm_mt_local_free(wm_mt_local *l) {
  if (!l) return;
  close_handles(l); /* after a failed build the loop never ran */
  for (int t = 0; t < l->job->n; t++) {
    outq *o = &l->out[t];
    wm_buf_free(&o->cur);
    free(o->spare);
    while (o->head) {
      batch *b = o->head;
      o->head = b->next;
      free(b->data);
      free(b);
    }
    wm_encoder_free(&o->enc);
    wm_decoder_free(&l->dec[t]);
    wm_buf_free(&l->inp[t].origin);
    wm_buf_free(&l->inp[t].unit);
    if (l->chan) wm_buf_free(&l->chan[t]);
    if (l->chan_enc) wm_encoder_free(&l->chan_enc[t]);
    if (l->hold) wm_buf_free(&l->hold[t]);
    if (l->hold_enc) wm_encoder_free(&l->hold_enc[t]);
  }
  free(l->hold);
  free(l->hold_enc);
  free(l->rec);
  free(l->chan);
  free(l->chan_enc);
  free(l->out);
  free(l->dec);
  free(l->inp);
  free(l->targets);
  free(l);
}

int wm_mt_set_target(wm_mt_local *l, uint32_t gid, wm_op *op) {
  if (gid >= l->ntargets) {
    uint32_t n = gid + 16;
    wm_op **t = realloc(l->targets, n * sizeof *t);
    if (!t) return -1;
    memset(t + l->ntargets, 0, (n - l->ntargets) * sizeof *t);
    l->targets = t;
    l->ntargets = n;
  }
  l->targets[gid] = op;
  return 0;
}

void wm_mt_add_remote_input(wm_mt_local *l) { l->nremote++; }
