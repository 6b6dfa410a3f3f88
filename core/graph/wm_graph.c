#include "graph/wm_graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_obs.h"
#include "graph/wm_state.h"
#include "time/wm_time.h"

static int64_t wall_now(void *ud) {
  (void)ud;
  return wm_time_wall_ms();
}

void wm_ctx_init(wm_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  ctx->now = wall_now;
}

void wm_ctx_free(wm_ctx *ctx) {
  for (size_t i = 0; i < ctx->nops; i++) {
    wm_op *op = ctx->ops[i];
    if (op->vt->free) op->vt->free(op);
    for (int p = 0; p < op->nports; p++) {
      free(op->ports[p].tag);
      free(op->ports[p].edges);
    }
    free(op->ports);
    wm_combiner_free(&op->comb);
    free(op->name);
    free(op->uid);
    free(op->where);
    free(op);
  }
  free(ctx->ops);
  ctx->ops = NULL;
  ctx->nops = ctx->capops = 0;
}

int wm_ctx_register_processing_timer(wm_ctx *ctx, wm_op *op, int64_t t) {
  if (!ctx->pt_register)
    return wm_ctx_error(ctx, "operator '%s': processing-time timers are not available here",
                        op->name);
  return ctx->pt_register(ctx->pt_ud, op, t);
}

int wm_ctx_error(wm_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_error_vset(&ctx->error, fmt, ap);
  va_end(ap);
  return WM_ERR;
}

int wm_ctx_error_append(wm_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_error_vappend(&ctx->error, fmt, ap);
  va_end(ap);
  return WM_ERR;
}

int wm_ctx_error_context(wm_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_error_vcontext(&ctx->error, fmt, ap);
  va_end(ap);
  return WM_ERR;
}

wm_op *wm_op_new(wm_ctx *ctx, const wm_op_vt *vt, void *impl, const char *name) {
  if (ctx->nops == ctx->capops) {
    size_t cap = ctx->capops ? ctx->capops * 2 : 16;
    wm_op **n = realloc(ctx->ops, cap * sizeof *n);
    if (!n) return NULL;
    ctx->ops = n;
    ctx->capops = cap;
  }
  wm_op *op = calloc(1, sizeof *op);
  if (!op) return NULL;
  op->ports = calloc(1, sizeof *op->ports);
  op->name = strdup(name ? name : vt->kind);
  if (!op->ports || !op->name) {
    free(op->ports);
    free(op->name);
    free(op);
    return NULL;
  }
  op->nports = 1;
  op->vt = vt;
  op->ctx = ctx;
  op->impl = impl;
  op->wm = WM_TIME_MIN;
  op->in2 = INT_MAX;
  ctx->ops[ctx->nops++] = op;
  return op;
}

int wm_op_set_where(wm_op *op, const char *where) {
  char *w = strdup(where);
  if (!w) return wm_ctx_error(op->ctx, "out of memory");
  free(op->where);
  op->where = w;
  return WM_OK;
}

int wm_op_set_uid(wm_op *op, const char *uid) {
  size_t n = strlen(uid);
  if (n == 0 || n > 120 || strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789._-") != n)
    return wm_ctx_error(op->ctx,
                        "bad uid '%s' for operator '%s' (a uid is 1 to 120 letters, digits, "
                        "'.', '_' or '-')",
                        uid, op->name);
  for (size_t i = 0; i < op->ctx->nops; i++) {
    const wm_op *o = op->ctx->ops[i];
    if (o != op && o->uid && strcmp(o->uid, uid) == 0)
      return wm_ctx_error(op->ctx, "uid '%s' of operator '%s' is already the uid of '%s'", uid,
                          op->name, o->name);
  }
  char *d = strdup(uid);
  if (!d) return wm_ctx_error(op->ctx, "out of memory");
  free(op->uid);
  op->uid = d;
  return WM_OK;
}

int wm_op_port(wm_op *op, const char *tag) {
  if (!tag) return 0;
  for (int i = 1; i < op->nports; i++)
    if (strcmp(op->ports[i].tag, tag) == 0) return i;
  wm_port *np = realloc(op->ports, (size_t)(op->nports + 1) * sizeof *np);
  if (!np) return -1;
  op->ports = np;
  memset(&np[op->nports], 0, sizeof *np);
  np[op->nports].tag = strdup(tag);
  if (!np[op->nports].tag) return -1;
  np[op->nports].side = tag[0] != '\1';
  return op->nports++;
}

int wm_op_connect(wm_op *from, int port, wm_op *to) {
  wm_port *p = &from->ports[port];
  wm_edge *ne = realloc(p->edges, (size_t)(p->n + 1) * sizeof *ne);
  if (!ne) return -1;
  p->edges = ne;
  ne[p->n].to = to;
  ne[p->n].chan = to->nin++;
  return ne[p->n++].chan;
}

int wm_ctx_prepare(wm_ctx *ctx) {
  for (size_t i = 0; i < ctx->nops; i++) {
    wm_op *op = ctx->ops[i];
    wm_combiner_free(&op->comb);
    if (wm_combiner_init(&op->comb, op->nin) != 0)
      return wm_ctx_error(ctx, "out of memory preparing operator '%s'", op->name);
  }
  return WM_OK;
}

/* Names the operator whose record or watermark failed, once: the innermost failing operator
 * is the first to return, so it is the one named (wm_error keeps the first operator part;
 * errors from Lua functions set theirs already). */
void wm_op_error_parts(const wm_op *op) {
  wm_error_set_op(&op->ctx->error, op->name);
  if (op->where) wm_error_set_where(&op->ctx->error, op->where);
}

int wm_op_fail_record(wm_op *op, const wm_value *rec) {
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  if (b.len > 400) {
    b.len = 400;
    b.data[b.len] = '\0';
    wm_buf_adds(&b, "...");
  }
  wm_op_error_parts(op);
  wm_error_set_record(&op->ctx->error, b.data && !b.oom ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

static int name_failure(wm_op *op, int rc) {
  if (rc == WM_ERR) wm_op_error_parts(op);
  return rc;
}

int wm_op_failed(wm_op *to, int rc) { return name_failure(to, rc); }

int wm_op_emit_all(wm_op *op, int port, const wm_value *rec, int64_t ts) {
  wm_port *p = &op->ports[port];
  if (p->side) p->records++;
  else op->m.records_out++;
  if (op->ctx->observe) { /* one branch unless a timeline records the run */
    wm_obs ev = {.kind = WM_OBS_EMIT, .ts = ts, .watermark = op->wm, .flag = port, .value = rec};
    op->ctx->observe(op->ctx->observe_ud, op, &ev);
  }
  for (int i = 0; i < p->n; i++) {
    wm_op *to = p->edges[i].to;
    int rc = wm_op_deliver(to, p->edges[i].chan, rec, ts);
    if (rc != WM_OK) return name_failure(to, rc);
  }
  return WM_OK;
}

/* ---- two-input operators ---------------------------------------------------------------- */

void wm_op_set_two_inputs(wm_op *op, int first2) { op->in2 = first2; }

int64_t wm_op_input_wm(const wm_op *op, int k, bool *idle) {
  int lo = k == 0 ? 0 : (op->in2 < op->comb.n ? op->in2 : op->comb.n);
  int hi = k == 0 ? (op->in2 < op->comb.n ? op->in2 : op->comb.n) : op->comb.n;
  int64_t min = WM_TIME_MAX, max = WM_TIME_MIN;
  int active = 0;
  for (int c = lo; c < hi; c++) {
    const wm_channel *ch = &op->comb.ch[c];
    if (ch->wm > max) max = ch->wm;
    if (!ch->idle) {
      active = 1;
      if (ch->wm < min) min = ch->wm;
    }
  }
  *idle = hi > lo && !active;
  return active ? min : max;
}

int wm_op_deliver2(wm_op *to, int chan, const wm_value *rec, int64_t ts) {
  int k = wm_op_input_of(to, chan);
  wm_input_metrics *in = &to->m.in[k];
  uint64_t dropped = to->m.late_dropped, side = to->m.late_side;
  to->m.records_in++;
  in->records++;
  int outer = to->cur_in; /* (an operator that feeds itself) */
  to->cur_in = k + 1;
  int rc = to->vt->record(to, chan, rec, ts);
  to->cur_in = outer;
  in->late_dropped += to->m.late_dropped - dropped;
  in->late_side += to->m.late_side - side;
  return rc;
}

/* --trace-watermarks of a two-input operator: an input's own watermark or status changed
 * without changing the operator's (the other input holds it back): status "input" (old and
 * new are the input's watermarks), "input idle" or "input active". */
static void trace_input(wm_op *op, int chan, int64_t old_in, bool old_idle) {
  bool idle;
  int64_t now = wm_op_input_wm(op, wm_op_input_of(op, chan), &idle);
  if (idle != old_idle)
    op->ctx->trace(op->ctx->trace_ud, op, chan, now, now, idle ? "input idle" : "input active");
  else if (now != old_in)
    op->ctx->trace(op->ctx->trace_ud, op, chan, old_in, now, "input");
}

int wm_op_input_watermark(wm_op *op, int chan, int64_t wm) {
  if (chan < 0 || chan >= op->comb.n)
    return wm_ctx_error(op->ctx, "operator '%s' has no input channel %d", op->name, chan + 1);
  int64_t old = op->comb.out;
  bool in_idle = false;
  int traced2 = op->in2 != INT_MAX && op->ctx->trace; /* a two-input operator, traced */
  int64_t in_old = traced2 ? wm_op_input_wm(op, wm_op_input_of(op, chan), &in_idle) : 0;
  int ev = wm_combiner_watermark(&op->comb, chan, wm);
  if (traced2 && ev == 0) trace_input(op, chan, in_old, in_idle);
  if (ev & WM_COMB_ACTIVE) {
    if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, chan, old, old, "active");
    int rc = op->vt->status ? op->vt->status(op, false) : wm_op_emit_status(op, false);
    if (rc != WM_OK) return rc;
  }
  if (ev & WM_COMB_ADVANCED) {
    if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, chan, old, op->comb.out, NULL);
    op->wm = op->comb.out;
    return name_failure(op, op->vt->watermark ? op->vt->watermark(op, op->comb.out)
                                              : wm_op_emit_watermark(op, op->comb.out));
  }
  return WM_OK;
}

int wm_op_input_status(wm_op *op, int chan, bool idle) {
  if (chan < 0 || chan >= op->comb.n)
    return wm_ctx_error(op->ctx, "operator '%s' has no input channel %d", op->name, chan + 1);
  int64_t old = op->comb.out;
  bool in_idle = false;
  int traced2 = op->in2 != INT_MAX && op->ctx->trace;
  int64_t in_old = traced2 ? wm_op_input_wm(op, wm_op_input_of(op, chan), &in_idle) : 0;
  int ev = wm_combiner_status(&op->comb, chan, idle);
  int rc = WM_OK;
  if (traced2 && ev == 0) trace_input(op, chan, in_old, in_idle);
  /* turning active: the status goes first, so that downstream counts this input again;
   * turning idle (the flush of the last active channel): the watermark goes first, since
   * downstream would take a watermark after the idle status as the input turning active */
  if (ev & WM_COMB_ACTIVE) {
    if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, chan, old, old, "active");
    rc = op->vt->status ? op->vt->status(op, false) : wm_op_emit_status(op, false);
    if (rc != WM_OK) return rc;
  }
  if (ev & WM_COMB_ADVANCED) {
    if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, chan, old, op->comb.out, NULL);
    op->wm = op->comb.out;
    rc = op->vt->watermark ? op->vt->watermark(op, op->comb.out)
                           : wm_op_emit_watermark(op, op->comb.out);
    if (rc != WM_OK) return name_failure(op, rc);
  }
  if (ev & WM_COMB_IDLE) {
    int64_t w = op->comb.out;
    if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, chan, w, w, "idle");
    rc = op->vt->status ? op->vt->status(op, true) : wm_op_emit_status(op, true);
  }
  return rc;
}

int wm_op_emit_watermark(wm_op *op, int64_t wm) {
  for (int p = 0; p < op->nports; p++) {
    const wm_port *port = &op->ports[p];
    for (int i = 0; i < port->n; i++) {
      int rc = wm_op_input_watermark(port->edges[i].to, port->edges[i].chan, wm);
      if (rc != WM_OK) return rc;
    }
  }
  return WM_OK;
}

int wm_op_emit_status(wm_op *op, bool idle) {
  for (int p = 0; p < op->nports; p++) {
    const wm_port *port = &op->ports[p];
    for (int i = 0; i < port->n; i++) {
      int rc = wm_op_input_status(port->edges[i].to, port->edges[i].chan, idle);
      if (rc != WM_OK) return rc;
    }
  }
  return WM_OK;
}

void wm_op_gauges_get(const wm_op *op, wm_op_gauges *g) {
  memset(g, 0, sizeof *g);
  if (op->vt->gauges) op->vt->gauges(op, g);
}

int wm_op_snapshot(wm_op *op, wm_state_io *io) {
  if (!op->vt->snapshot) return WM_OK;
  return name_failure(op, op->vt->snapshot(op, io));
}

int wm_op_restore(wm_op *op, wm_state_io *io) {
  if (!op->vt->restore) {
    if (io->len == 0) return WM_OK;
    return wm_ctx_error(op->ctx,
                        "operator '%s' keeps no state, but the checkpoint holds %zu bytes "
                        "for it (a checkpoint of another job?)",
                        op->name, io->len);
  }
  return name_failure(op, op->vt->restore(op, io));
}
