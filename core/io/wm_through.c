/* Repartitioning through a partitioned log (wm_through.h): the writer sink, which sends
 * through a transport (wm_transport.h: Kafka or NATS alike), and the reader's tap. */
#include "io/wm_through.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_hash.h"

#include "graph/wm_statefmt.h"
#include "io/wm_partsrc.h"
#include "time/wm_time.h"

#define THR_MAGIC 'w'
#define THR_VERSION 1

enum { K_RECORD = 'R', K_WATERMARK = 'W', K_IDLE = 'I', K_ACTIVE = 'A', K_END = 'E' };

/* The partition of a key is wm_fnv1a32(the key as print shows it) mod n, as NATS's
 * partition() subject mapping computes it (base/wm_hash.h, as wm.partition does). */

/* ---- the writer ------------------------------------------------------------------------------ */

typedef struct twriter {
  wm_transport *t;       /* ordered: a partition's messages land in the order sent */
  int partitions;
  wm_keysel key;
  wm_codec_host codec;
  int writer, writers;
  uint64_t seq;          /* records sent */
  uint64_t mk;           /* markers sent since the last record */
  int ended;             /* the end was sent */
  wm_buf msg, text;
} twriter;

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
  const char *hdr[4] = {"wm-writer", wh, "wm-seq", sh};
  wm_transport_msg m = {.data = w->msg.data, .len = w->msg.len, .partition = p, .ts = ts, .headers = hdr,
                        .nheaders = 4};
  return wm_transport_send(w->t, &m) == WM_OK ? WM_OK : wm_transport_error(op, w->t);
}

/* A marker to every partition, at position (records sent, its number since the last). */
static int tw_marker(wm_op *op, twriter *w, char kind, int64_t time) {
  tw_head(w, kind, w->seq, time);
  wm_codec_put_uvar(&w->msg, w->mk + 1);
  for (int p = 0; p < w->partitions; p++)
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
  int p = (int)(wm_fnv1a32(w->text.data ? w->text.data : "", w->text.len) % (uint32_t)w->partitions);
  uint64_t seq = w->seq + 1;
  tw_head(w, K_RECORD, seq, ts);
  wm_encoder enc; /* a schema per message: every message is read on its own (replays, restores) */
  wm_encoder_init(&enc);
  int rc = wm_encode_value(&enc, w->codec.encode ? &w->codec : NULL, &w->msg, rec, &op->ctx->error);
  wm_encoder_free(&enc);
  if (rc != 0) {
    wm_buf b;
    wm_buf_init(&b);
    wm_op_format_record(op, rec, &b);
    rc = wm_ctx_error(op->ctx, "%s: cannot write record %s: %s", op->name, b.data ? b.data : "",
                      op->ctx->error.msg);
    wm_buf_free(&b);
    return rc;
  }
  if (tw_send(op, w, p, seq, ts) != WM_OK) return WM_ERR;
  w->seq = seq;
  w->mk = 0;
  return WM_OK;
}

/* Waits until the log has every message sent so far. */
static int tw_complete(wm_op *op, twriter *w, int what) {
  return wm_transport_complete(w->t, what) == WM_OK ? WM_OK : wm_transport_error(op, w->t);
}

static int tw_watermark(wm_op *op, int64_t wm) {
  twriter *w = op->impl;
  if (wm != WM_TIME_MAX) return tw_marker(op, w, K_WATERMARK, wm);
  if (w->ended) return WM_OK;
  if (tw_marker(op, w, K_END, wm) != WM_OK) return WM_ERR;
  w->ended = 1;
  return tw_complete(op, w, WM_TRANSPORT_END);
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
  if (tw_complete(op, w, WM_TRANSPORT_CHECKPOINT) != WM_OK) return WM_ERR;
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
  wm_transport_free(w->t);
  if (w->key.free) w->key.free(w->key.ud);
  wm_buf_free(&w->msg);
  wm_buf_free(&w->text);
  free(w);
}

static const wm_op_vt twriter_vt = {.kind = "through_write", .record = tw_record,
                                    .watermark = tw_watermark, .status = tw_status,
                                    .snapshot = tw_snapshot, .restore = tw_restore, .free = tw_free};

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
  w->partitions = cfg->target.partitions;
  w->codec = cfg->codec;
  w->writer = cfg->writer;
  w->writers = cfg->writers;
  wm_buf_init(&w->msg);
  wm_buf_init(&w->text);
  wm_transport_config tc = {.target = cfg->target, .name = op->name, .label = "key_by through", .ordered = 1};
  if (!(w->t = wm_transport_open(&tc, &ctx->error))) {
    wm_ctx_error(ctx, "%s: %s", op->name, ctx->error.msg);
    return NULL; /* the op (and w) are freed with the context */
  }
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
 * the failure in *err. */
static int tap_decode(ttap *t, wm_partsrc *s, const uint8_t *b, const uint8_t *end, wm_value *v, wm_error *err) {
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
      return wm_error_set(err, "out of memory");
    }
    const uint8_t *r = (const uint8_t *)t->row.data;
    return wm_decode_value(&t->dec, h, ch, &r, r + t->row.len, v, err);
  }
  const uint8_t *start = b;
  if (wm_decode_value(&t->dec, h, ch, &b, end, v, err) != 0) return -1;
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
    if (tap_decode(t, s, b, end, &v, &s->op->ctx->error) != 0)
      return tap_bad(s, i, at, s->op->ctx->error.msg);
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
