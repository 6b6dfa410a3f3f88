/* Partitioned sources: reading order, alignment and the reading timer (wm_partsrc.h). */
#include "io/wm_partsrc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_codec.h"
#include "time/wm_time.h"

/* Records read per turn of the loop before other handles get their turn. */
#define PARTSRC_BUDGET 256

static void partsrc_free_op(wm_op *op);

static const wm_op_vt kafka_vt = {.kind = "read_kafka", .record = wm_source_record,
                                  .free = partsrc_free_op};
static const wm_op_vt nats_vt = {.kind = "read_nats", .record = wm_source_record,
                                 .free = partsrc_free_op};

int wm_op_is_partsrc(const wm_op *op) { return op->vt == &kafka_vt || op->vt == &nats_vt; }

int wm_partsrc_rescalable(const wm_op *op) {
  return wm_op_is_partsrc(op) && !((const wm_partsrc *)op->impl)->cfg.tap;
}

int wm_partsrc_count(const wm_op *op) {
  return wm_op_is_partsrc(op) ? ((const wm_partsrc *)op->impl)->n : -1;
}

int wm_partsrc_position(const wm_op *op, int i, const char **name, int64_t *pos) {
  if (!wm_op_is_partsrc(op)) return -1;
  const wm_partsrc *s = op->impl;
  if (i < 0 || i >= s->n) return -1;
  *name = s->parts[i].name;
  *pos = s->parts[i].pos;
  return 0;
}

int wm_partsrc_lag(const wm_op *op, int i, int64_t *records) {
  if (!wm_op_is_partsrc(op)) return -1;
  const wm_partsrc *s = op->impl;
  if (i < 0 || i >= s->n) return -1;
  return s->hooks && s->hooks->lag ? s->hooks->lag(s, i, records) : 0;
}

int wm_partsrc_commit_to(wm_op *op, wm_error *err) {
  if (!wm_op_is_partsrc(op)) {
    wm_error_set(err, "operator '%s' is not a partitioned source", op->name);
    return WM_ERR;
  }
  wm_partsrc *s = op->impl;
  return s->hooks && s->hooks->commit ? s->hooks->commit(s, err) : WM_OK;
}

int wm_partsrc_commit_final(wm_op *op, wm_error *err) {
  if (!wm_op_is_partsrc(op)) {
    wm_error_set(err, "operator '%s' is not a partitioned source", op->name);
    return WM_ERR;
  }
  wm_partsrc *s = op->impl;
  return s->hooks && s->hooks->commit_detached ? s->hooks->commit_detached(s, err) : WM_OK;
}

int wm_partsrc_commit(wm_op *op) {
  return wm_partsrc_commit_to(op, &op->ctx->error) == WM_OK ? WM_OK : WM_ERR;
}

/* The watermark of partition i as its own assigner made it: MIN without one. */
static int64_t part_wm(const wm_part *p) {
  return p->assigner ? wm_op_wmsource(p->assigner)->last_watermark(p->assigner) : WM_TIME_MIN;
}

static int part_idle(const wm_part *p) {
  return p->assigner && wm_op_wmsource(p->assigner)->idle(p->assigner);
}

static void part_hold(wm_op *assigner, bool hold) {
  if (assigner) wm_op_wmsource(assigner)->hold_idleness(assigner, hold);
}

/* The assigner (an operator that makes watermarks: vt->wmsource) reading a port through
 * forward operators (parse_csv, map, ...), if any. */
static wm_op *find_assigner(wm_op *op, int port) {
  if (port <= 0 || port >= op->nports || op->ports[port].n != 1) return NULL;
  wm_op *to = op->ports[port].edges[0].to;
  for (int hops = 0; to && hops < 16; hops++) {
    if (wm_op_wmsource(to)) return to;
    if (to->nin != 1 || to->nports < 1 || to->ports[0].n != 1) return NULL;
    to = to->ports[0].edges[0].to;
  }
  return NULL;
}

/* ---- alignment ------------------------------------------------------------------------ */

/* The aligned sources of this context in me's group (me among them), found once at the
 * start so that the per-record check does not walk every operator. WM_OK or WM_ERR. */
static int group_find(wm_partsrc *me) {
  wm_ctx *ctx = me->op->ctx;
  for (int pass = 0; pass < 2; pass++) {
    me->ngroup = 0;
    for (size_t k = 0; k < ctx->nops; k++) {
      wm_op *op = ctx->ops[k];
      if (!wm_op_is_partsrc(op)) continue;
      wm_partsrc *s = op->impl;
      if (!s->group || strcmp(s->group, me->group) != 0) continue;
      if (pass) me->peers[me->ngroup] = s;
      me->ngroup++;
    }
    if (!pass && !(me->peers = calloc((size_t)me->ngroup, sizeof *me->peers)))
      return wm_ctx_error(ctx, "out of memory in '%s'", me->op->name);
  }
  return WM_OK;
}

/* The minimum watermark of the group over partitions that are neither done nor idle and
 * have a watermark. WM_TIME_MAX when there is none. */
static int64_t group_min(const wm_partsrc *me) {
  int64_t m = WM_TIME_MAX;
  for (int g = 0; g < me->ngroup; g++) {
    const wm_partsrc *s = me->peers[g];
    for (int i = 0; i < s->n; i++) {
      const wm_part *p = &s->parts[i];
      int64_t w = part_wm(p);
      /* done, idle, or without a watermark yet (read first anyway): not counted */
      if (p->done || part_idle(p) || w == WM_TIME_MIN) continue;
      if (w < m) m = w;
    }
  }
  return m;
}

static void align_update(wm_partsrc *s) {
  if (!s->group) return;
  int64_t m = group_min(s);
  int64_t limit = m == WM_TIME_MAX ? WM_TIME_MAX : wm_time_add_sat(m, s->cfg.align.max_drift);
  for (int i = 0; i < s->n; i++) {
    wm_part *p = &s->parts[i];
    int ahead = !p->done && part_wm(p) > limit;
    if (ahead && !p->align_paused) p->pauses++;
    if (ahead != p->align_paused) part_hold(p->assigner, ahead);
    p->align_paused = ahead;
  }
}

void wm_partsrc_metrics(wm_ctx *ctx, wm_buf *out) {
  for (size_t k = 0; k < ctx->nops; k++) {
    const wm_op *op = ctx->ops[k];
    if (!wm_op_is_partsrc(op)) continue;
    const wm_partsrc *s = op->impl;
    if (s->cfg.tap && s->cfg.tap->vt->metrics) s->cfg.tap->vt->metrics(s->cfg.tap, s, out);
    if (!s->group) continue;
    for (int i = 0; i < s->n; i++) {
      char line[1400];
      snprintf(line, sizeof line,
               "alignment: '%s' partition %s: paused %llu times (group '%s', max drift %lld ms)%s\n",
               op->name, s->parts[i].name, (unsigned long long)s->parts[i].pauses, s->group,
               (long long)s->cfg.align.max_drift, s->parts[i].align_paused ? ", paused now" : "");
      wm_buf_adds(out, line);
    }
  }
}

/* The end of a partition's own port (its assigner then no longer holds the union's
 * watermark back, as Flink releases a finished split's output). */
static int end_port(wm_op *op, int port) {
  if (port <= 0 || port >= op->nports) return WM_OK;
  for (int e = 0; e < op->ports[port].n; e++) {
    int rc = wm_op_input_watermark(op->ports[port].edges[e].to, op->ports[port].edges[e].chan,
                                   WM_TIME_MAX);
    if (rc != WM_OK) return rc;
  }
  return WM_OK;
}

static int release(wm_partsrc *s, int i) {
  wm_part *p = &s->parts[i];
  if (!p->done || p->released) return WM_OK;
  p->released = 1;
  return end_port(s->op, p->port);
}

/* ---- reading ----------------------------------------------------------------------------- */

/* The readable partition with the lowest watermark (ties: the first), or -1. */
static int lowest(const wm_partsrc *s, const unsigned char *skip) {
  int best = -1;
  int64_t bw = WM_TIME_MAX;
  for (int i = 0; i < s->n; i++) {
    const wm_part *p = &s->parts[i];
    if (p->done || p->align_paused || (skip && skip[i])) continue;
    int64_t w = s->cfg.tap ? s->cfg.tap->vt->watermark(s->cfg.tap, i) : part_wm(p);
    if (best < 0 || w < bw) {
      best = i;
      bw = w;
    }
  }
  return best;
}

/* No more reading: the client goes, the timer and the idle handle close (their memory is
 * the source's, freed with the context after the loop has run the close). 1 the first
 * time, then 0. */
static int shut(wm_partsrc *s) {
  if (s->finished) return 0;
  s->finished = 1;
  s->stopped = 1;
  if (s->hooks->close) s->hooks->close(s);
  if (s->timer_open && !uv_is_closing((uv_handle_t *)&s->timer)) uv_close((uv_handle_t *)&s->timer, NULL);
  s->timer_open = 0;
  if (s->idle_open && !uv_is_closing((uv_handle_t *)&s->idle)) uv_close((uv_handle_t *)&s->idle, NULL);
  s->idle_open = 0;
  return 1;
}

static void partsrc_finish(wm_partsrc *s) {
  if (shut(s)) wm_io_source_done(s->host, s->op);
}

void wm_partsrc_fail(wm_partsrc *s) {
  if (shut(s)) wm_io_fail(s->host);
}

static void on_timer(uv_timer_t *t);
static void on_idle(uv_idle_t *h);

/* The next round in ms, or at once (0). At once is the idle handle, not a timer at 0:
 * libuv (1.44) runs a timer re-armed at 0 from its callback again in the same round of
 * timers, so while records are always ready the loop would never reach its other phases:
 * neither I/O (signals, the other threads' wake-ups that carry checkpoint barriers) nor
 * the prepare handles that hand records over to other threads. An idle handle runs once
 * per turn of the loop, after the timers that have come due, before the rest. */
static void schedule(wm_partsrc *s, int64_t ms) {
  if (s->stopped || s->paused || !s->timer_open || !s->idle_open) return;
  int rc;
  if (ms == 0) {
    uv_timer_stop(&s->timer);
    rc = uv_idle_start(&s->idle, on_idle);
  } else {
    uv_idle_stop(&s->idle);
    rc = uv_timer_start(&s->timer, on_timer, (uint64_t)ms, 0);
  }
  if (rc != 0) {
    wm_ctx_error(s->op->ctx, "%s: cannot start a timer: %s", s->op->name, uv_strerror(rc));
    wm_partsrc_fail(s);
  }
}

/* One round: serve the client, then read up to a budget of records, each from the
 * partition chosen by `lowest`. A bounded source waits for that partition; an unbounded
 * one reads the lowest partition that has a record ready. */
static void pump(wm_partsrc *s) {
  if (s->stopped) return;
  if (s->hooks->serve && s->hooks->serve(s) != WM_OK) {
    wm_partsrc_fail(s);
    return;
  }
  int emitted = 0;
  unsigned char small[64];
  unsigned char *skip = s->n <= 64 ? small : calloc((size_t)s->n, 1);
  if (!skip) {
    wm_ctx_error(s->op->ctx, "out of memory in '%s'", s->op->name);
    wm_partsrc_fail(s);
    return;
  }
  while (!s->stopped && !s->paused && emitted < PARTSRC_BUDGET) {
    align_update(s);
    memset(skip, 0, (size_t)s->n);
    int i = -1, rc = 0;
    for (;;) {
      i = lowest(s, skip);
      if (i < 0) break;
      rc = s->hooks->peek(s, i);
      if (rc == WM_ERR) break;
      if (rc == 1) break;
      if (s->parts[i].done) {
        rc = release(s, i);
        if (rc != WM_OK) break;
        align_update(s); /* a partition that ended no longer holds the group back */
        continue;
      }
      if (s->cfg.bounded) {
        i = -1; /* wait for this partition: the order must not depend on fetch timing */
        break;
      }
      skip[i] = 1;
    }
    if (rc == WM_ERR) {
      if (skip != small) free(skip);
      wm_partsrc_fail(s);
      return;
    }
    if (i < 0) break;
    rc = s->hooks->emit(s, i);
    if (rc == WM_OK && s->cfg.tap && s->cfg.tap->vt->ended(s->cfg.tap, i)) s->parts[i].done = 1;
    if (rc == WM_OK) rc = release(s, i);
    if (rc != WM_OK) {
      if (skip != small) free(skip);
      if (rc == WM_STOP) partsrc_finish(s);
      else wm_partsrc_fail(s);
      return;
    }
    emitted++;
  }
  if (skip != small) free(skip);
  if (s->stopped) return;
  if (emitted) wm_io_batch_done(s->host);
  int all_done = 1;
  for (int i = 0; i < s->n; i++) all_done &= s->parts[i].done;
  if (all_done && (s->cfg.bounded || s->cfg.tap)) { /* a tap's partitions end by themselves */
    partsrc_finish(s);
    return;
  }
  int waiting_all = 0;
  if (s->group) {
    waiting_all = 1;
    for (int i = 0; i < s->n; i++) waiting_all &= s->parts[i].done || s->parts[i].align_paused;
  }
  schedule(s, emitted ? 0 : waiting_all ? s->cfg.align.interval : s->poll_ms);
}

static void on_timer(uv_timer_t *t) { pump(t->data); }

static void on_idle(uv_idle_t *h) {
  uv_idle_stop(h);
  pump(h->data);
}

static int partsrc_start(wm_op *op, wm_io_host *host) {
  wm_partsrc *s = op->impl;
  (void)host;
  if (s->seek_pending) {
    s->seek_pending = 0;
    int rc = s->hooks->seek(s);
    if (rc != WM_OK) return rc;
  }
  for (int i = 0; i < s->n; i++) {
    s->parts[i].assigner = find_assigner(op, s->parts[i].port);
    if (s->cfg.tap && s->cfg.tap->vt->ended(s->cfg.tap, i)) s->parts[i].done = 1; /* restored */
  }
  if (s->group && group_find(s) != WM_OK) return WM_ERR;
  if (uv_timer_init(s->host->loop, &s->timer) != 0)
    return wm_ctx_error(op->ctx, "%s: cannot create a timer", op->name);
  s->timer.data = s;
  s->timer_open = 1;
  if (uv_idle_init(s->host->loop, &s->idle) != 0)
    return wm_ctx_error(op->ctx, "%s: cannot create an idle handle", op->name);
  s->idle.data = s;
  s->idle_open = 1;
  s->started = 1;
  if (s->n == 0) {
    /* an instance that owns no partition does not hold the watermark back */
    int rc = wm_op_emit_status(op, true);
    if (rc != WM_OK) return rc;
  }
  /* nor on the ports of the partitions that other instances own: their own assigners here
   * (each partition has one per instance, read forward) are idle, so that the union of the
   * partitions on this instance goes by the partitions it owns, or is idle when it owns
   * none; a port without an assigner ends */
  for (int port = 1; port < op->nports; port++) {
    int mine = 0;
    for (int i = 0; i < s->n; i++) mine |= s->parts[i].port == port;
    if (mine) continue;
    wm_op *a = find_assigner(op, port);
    int rc = a ? wm_op_wmsource(a)->mark_idle(a) : end_port(op, port);
    if (rc != WM_OK) return rc;
  }
  for (int i = 0; i < s->n; i++) {
    int rc = release(s, i); /* empty partitions of a bounded source */
    if (rc != WM_OK) return rc;
  }
  schedule(s, 0);
  return WM_OK;
}

static void partsrc_stop(wm_op *op, wm_io_host *host, int finish) {
  (void)host;
  wm_partsrc *s = op->impl;
  if (finish) partsrc_finish(s);
  else shut(s);
}

static void partsrc_pause(wm_op *op, wm_io_host *host, int paused) {
  (void)host;
  wm_partsrc *s = op->impl;
  if (paused != s->paused) /* backpressure: the partitions are paused, not silent */
    for (int i = 0; i < s->n; i++)
      part_hold(s->parts[i].assigner, paused);
  s->paused = paused;
  if (paused) {
    if (s->timer_open) uv_timer_stop(&s->timer);
    if (s->idle_open) uv_idle_stop(&s->idle);
  } else {
    schedule(s, 0);
  }
}

/* The position of a checkpoint: version 1, the number of partitions, then per partition
 * its name (length and bytes) and its position + 1 (0: none known yet), varints. */
static int partsrc_snapshot(wm_op *op, wm_buf *out) {
  wm_partsrc *s = op->impl;
  wm_buf_addc(out, 1);
  wm_codec_put_uvar(out, (uint64_t)s->n);
  for (int i = 0; i < s->n; i++) {
    size_t len = strlen(s->parts[i].name);
    wm_codec_put_uvar(out, len);
    wm_buf_add(out, s->parts[i].name, len);
    wm_codec_put_uvar(out, (uint64_t)(s->parts[i].pos + 1));
    s->parts[i].snap = s->parts[i].pos + 1;
  }
  if (s->cfg.tap && s->cfg.tap->vt->snapshot(s->cfg.tap, s, out) != WM_OK) return WM_ERR;
  return out->oom ? wm_ctx_error(op->ctx, "out of memory") : WM_OK;
}

/* Before start: every partition named in the checkpoint goes on at its position (the
 * others start as configured), sought as the source starts. A restore at another
 * parallelism calls it once per old instance's part: each names its own partitions. The
 * bytes are checked (a checkpoint is untrusted input). */
static int partsrc_restore(wm_op *op, const char *data, size_t n) {
  wm_partsrc *s = op->impl;
  const uint8_t *p = (const uint8_t *)data, *end = p + n;
  uint64_t cnt;
  if (n < 1 || *p++ != 1 || wm_codec_get_uvar(&p, end, &cnt) != 0 || cnt > n) goto damaged;
  for (uint64_t k = 0; k < cnt; k++) {
    uint64_t len, pos;
    if (wm_codec_get_uvar(&p, end, &len) != 0 || len > (uint64_t)(end - p)) goto damaged;
    const char *name = (const char *)p;
    p += len;
    if (wm_codec_get_uvar(&p, end, &pos) != 0 || pos > (uint64_t)INT64_MAX) goto damaged;
    for (int i = 0; i < s->n; i++) {
      if (strlen(s->parts[i].name) != len || memcmp(s->parts[i].name, name, len) != 0) continue;
      if (pos > 0) {
        s->parts[i].pos = (int64_t)pos - 1;
        s->parts[i].snap = (int64_t)pos; /* what a commit before the next snapshot commits */
        s->parts[i].restored = 1;
      }
    }
  }
  if (s->cfg.tap && s->cfg.tap->vt->restore(s->cfg.tap, s, &p, end) != WM_OK) return WM_ERR;
  if (p != end) goto damaged;
  s->seek_pending = s->hooks->seek != NULL;
  return WM_OK;
damaged:
  return wm_ctx_error(op->ctx, "cannot restore '%s': the checkpoint's position is damaged", op->name);
}

static const wm_source_vt partsrc_svt = {.start = partsrc_start, .stop = partsrc_stop,
                                         .pause = partsrc_pause, .snapshot = partsrc_snapshot,
                                         .restore = partsrc_restore};

static void partsrc_free_op(wm_op *op) {
  wm_partsrc *s = op->impl;
  if (!s) return;
  if (s->hooks && s->hooks->close) s->hooks->close(s);
  if (s->hooks && s->hooks->free) s->hooks->free(s);
  if (s->cfg.tap) s->cfg.tap->vt->free(s->cfg.tap);
  for (int i = 0; i < s->n; i++) free(s->parts[i].name);
  free(s->parts);
  free(s->group);
  free(s->peers);
  free(s);
}

wm_partsrc *wm_partsrc_new(wm_io_host *host, const char *name, const char *kind,
                           const wm_partsrc_config *cfg, const wm_partsrc_hooks *hooks,
                           size_t size) {
  wm_ctx *ctx = host->ctx;
  wm_partsrc *s = calloc(1, size);
  if (!s) {
    if (cfg->tap) cfg->tap->vt->free(cfg->tap);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  s->host = host;
  s->cfg = *cfg;
  s->cfg.names = NULL;
  s->cfg.tags = NULL;
  s->cfg.align.group = NULL;
  if (s->cfg.align.interval <= 0) s->cfg.align.interval = 1000;
  s->poll_ms = 5;
  s->unit = strcmp(kind, "read_kafka") == 0 ? "offset" : "sequence";
  s->n = cfg->nparts;
  s->parts = calloc((size_t)(s->n > 0 ? s->n : 1), sizeof *s->parts);
  int oom = !s->parts || (cfg->align.group && !(s->group = strdup(cfg->align.group)));
  for (int i = 0; !oom && i < s->n; i++) {
    s->parts[i].name = strdup(cfg->names[i]);
    s->parts[i].pos = -1;
    s->parts[i].end = -1;
    oom = !s->parts[i].name;
  }
  wm_op *op = oom ? NULL : wm_op_new(ctx, strcmp(kind, "read_kafka") == 0 ? &kafka_vt : &nats_vt, s, name);
  if (!op) {
    if (s->parts)
      for (int i = 0; i < s->n; i++) free(s->parts[i].name);
    free(s->parts);
    free(s->group);
    free(s);
    if (cfg->tap) cfg->tap->vt->free(cfg->tap);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  s->op = op;
  for (int i = 0; i < s->n; i++) {
    s->parts[i].port = cfg->tags && cfg->tags[i] ? wm_op_port(op, cfg->tags[i]) : 0;
    if (s->parts[i].port < 0) {
      wm_ctx_error(ctx, "out of memory");
      return NULL; /* the op (and s) are freed with the context */
    }
  }
  if (wm_io_add_source(host, op, &partsrc_svt) != 0) {
    wm_ctx_error(ctx, "out of memory");
    return NULL; /* the op (and s) are freed with the context */
  }
  s->hooks = hooks; /* from now on the hooks free the connector's state */
  return s;
}

int wm_partsrc_emit_row(wm_partsrc *s, int i, wm_schema *schema, const wm_value *fields,
                        int64_t ts, int64_t at) {
  wm_ctx *ctx = s->op->ctx;
  wm_row *r = wm_row_new(schema);
  if (!r) return wm_ctx_error(ctx, "out of memory in '%s'", s->op->name);
  for (uint32_t k = 0; k < schema->nfields; k++) {
    if (wm_value_copy(&ctx->host, &r->fields[k], &fields[k]) != 0) {
      wm_row_release(&ctx->host, r);
      return wm_ctx_error(ctx, "out of memory in '%s'", s->op->name);
    }
  }
  wm_value v = wm_row_value(r);
  int rc = wm_partsrc_emit(s, i, &v, ts, at);
  wm_value_release(&ctx->host, &v);
  return rc;
}

int wm_partsrc_emit(wm_partsrc *s, int i, const wm_value *rec, int64_t ts, int64_t at) {
  if (s->cfg.tap) return s->cfg.tap->vt->message(s->cfg.tap, s, i, rec, ts, at);
  return wm_partsrc_emit_record(s, i, rec, ts, at);
}

int wm_partsrc_emit_record(wm_partsrc *s, int i, const wm_value *rec, int64_t ts, int64_t at) {
  wm_part *p = &s->parts[i];
  /* the record's position: "offset 17 of events/0", "sequence 5 of ev.a" */
  wm_pos pos = {.origin = p->name, .unit = s->unit, .line = (uint64_t)(at < 0 ? 0 : at)};
  return wm_source_emit_port(s->op, p->port, &pos, rec, ts);
}
