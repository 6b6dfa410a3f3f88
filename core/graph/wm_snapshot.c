#include "graph/wm_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_statefmt.h"
#include "time/wm_time.h"

int wm_op_part_name(const wm_op *op, size_t pos, int instance, char *out, size_t n) {
  int k = op->uid ? snprintf(out, n, "uid-%s.%d", op->uid, instance)
                  : snprintf(out, n, "op-%zu.%d", pos, instance);
  return k < 0 || (size_t)k >= n ? -1 : 0;
}

int wm_op_snapshot_graph(wm_op *op, wm_buf *b) {
  wm_state_io io = {.out = b};
  wm_state_put_header(&io, 'G');
  size_t kl = strlen(op->vt->kind);
  wm_state_put_u(&io, kl);
  wm_buf_add(b, op->vt->kind, kl);
  wm_state_put_u(&io, (uint64_t)op->comb.n);
  for (int i = 0; i < op->comb.n; i++) {
    const wm_channel *c = &op->comb.ch[i];
    wm_state_put_i(&io, c->wm);
    wm_state_put_u(&io, (uint64_t)c->idle | ((uint64_t)c->aligned << 1));
  }
  wm_state_put_i(&io, op->comb.out);
  wm_state_put_u(&io, (uint64_t)op->comb.out_idle | ((uint64_t)op->ended << 1));
  wm_state_put_i(&io, op->wm);
  wm_state_put_u(&io, op->m.records_in);
  wm_state_put_u(&io, op->m.records_out);
  wm_state_put_u(&io, op->m.late_dropped);
  wm_state_put_u(&io, op->m.parse_errors);
  /* added later (a checkpoint without these restores them as 0): the late records sent
   * to a side output, then the number of ports after the main one and each one's count */
  wm_state_put_u(&io, op->m.late_side);
  wm_state_put_u(&io, (uint64_t)(op->nports - 1));
  for (int i = 1; i < op->nports; i++) wm_state_put_u(&io, op->ports[i].records);
  /* since issue 28, a two-input operator's only (a checkpoint without them restores them as
   * 0): the records, late records dropped and sent to a side output of each input */
  for (int k = 0; k < 2 && op->in2 != INT_MAX; k++) {
    wm_state_put_u(&io, op->m.in[k].records);
    wm_state_put_u(&io, op->m.in[k].late_dropped);
    wm_state_put_u(&io, op->m.in[k].late_side);
  }
  return wm_state_put_done(op, &io);
}

/* A graph section as read (graph_parse), before it is applied to an operator. */
typedef struct graph_sec {
  uint64_t n;       /* input channels */
  wm_channel *ch;   /* n of them (owned) */
  int64_t out, wm;
  bool out_idle, ended;
  wm_op_metrics m;
  uint64_t np, *pv; /* the side ports' counts (owned) */
} graph_sec;

static void graph_sec_free(graph_sec *g) {
  free(g->ch);
  free(g->pv);
  memset(g, 0, sizeof *g);
}

/* Reads a graph section written for op's kind; with same_n, of op's number of channels. */
static int graph_parse(wm_op *op, const uint8_t *data, size_t len, graph_sec *g, bool same_n) {
  memset(g, 0, sizeof *g);
  wm_state_io io = {.data = data, .len = len};
  wm_state_rd r;
  wm_state_rd_init(&r, op, &io);
  uint64_t kl, n, f;
  if (wm_state_get_header(&r, 'G', "the graph's part of an operator") != WM_OK ||
      wm_state_get_count(&r, &kl, 1, "the operator kind") != WM_OK)
    return WM_ERR;
  size_t own = strlen(op->vt->kind);
  if (kl != own || memcmp(r.p, op->vt->kind, own) != 0)
    return wm_ctx_error(op->ctx,
                        "the checkpoint holds a '%.*s' operator where this job has '%s', a "
                        "'%s' (the job changed since the checkpoint?)",
                        (int)kl, (const char *)r.p, op->name, op->vt->kind);
  r.p += kl;
  if (wm_state_get_count(&r, &n, 2, "the number of input channels") != WM_OK) return WM_ERR;
  if (same_n && n != (uint64_t)op->comb.n)
    return wm_ctx_error(op->ctx,
                        "the checkpoint's operator had %llu input(s), this job's '%s' has %d "
                        "(the job changed since the checkpoint?)",
                        (unsigned long long)n, op->name, op->comb.n);
  g->n = n;
  if (!(g->ch = calloc((size_t)(n ? n : 1), sizeof *g->ch)))
    return wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  int rc = WM_OK;
  for (uint64_t i = 0; i < n && rc == WM_OK; i++) {
    rc = wm_state_get_i(&r, &g->ch[i].wm, "a channel's watermark");
    if (rc == WM_OK) rc = wm_state_get_u(&r, &f, "a channel's status");
    if (rc == WM_OK && f > 3) rc = wm_state_bad(&r, "a channel's status is %llu", (unsigned long long)f);
    g->ch[i].idle = f & 1;
    g->ch[i].aligned = (f >> 1) & 1;
  }
  if (rc == WM_OK) rc = wm_state_get_i(&r, &g->out, "the combined watermark");
  if (rc == WM_OK) rc = wm_state_get_u(&r, &f, "the combined status");
  if (rc == WM_OK && f > 3) rc = wm_state_bad(&r, "the combined status is %llu", (unsigned long long)f);
  g->out_idle = f & 1;
  g->ended = (f >> 1) & 1;
  if (rc == WM_OK) rc = wm_state_get_i(&r, &g->wm, "the operator's watermark");
  wm_op_metrics *m = &g->m;
  uint64_t *mv[] = {&m->records_in, &m->records_out, &m->late_dropped, &m->parse_errors};
  for (size_t i = 0; i < 4 && rc == WM_OK; i++) rc = wm_state_get_u(&r, mv[i], "the metrics");
  if (rc == WM_OK && r.p != r.end) {
    rc = wm_state_get_u(&r, &m->late_side, "the metrics");
    if (rc == WM_OK) rc = wm_state_get_count(&r, &g->np, 1, "the number of side ports");
    if (rc == WM_OK && g->np > 0 && !(g->pv = calloc((size_t)g->np, sizeof *g->pv)))
      rc = wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
    for (uint64_t i = 0; i < g->np && rc == WM_OK; i++)
      rc = wm_state_get_u(&r, &g->pv[i], "an output's count");
  }
  for (int k = 0; k < 2 && rc == WM_OK && r.p != r.end; k++) {
    uint64_t *iv[] = {&m->in[k].records, &m->in[k].late_dropped, &m->in[k].late_side};
    for (size_t i = 0; i < 3 && rc == WM_OK; i++) rc = wm_state_get_u(&r, iv[i], "an input's metrics");
  }
  if (rc == WM_OK) rc = wm_state_get_end(&r);
  if (rc != WM_OK) graph_sec_free(g);
  return rc;
}

/* Sets op's graph state from g (its channels: g's, which has op's number of them). */
static void graph_apply(wm_op *op, const graph_sec *g) {
  if (g->ch != op->comb.ch) memcpy(op->comb.ch, g->ch, (size_t)g->n * sizeof *g->ch);
  op->comb.out = g->out;
  op->comb.out_idle = g->out_idle;
  op->wm = g->wm;
  op->ended = g->ended;
  op->m = g->m;
  for (int i = 1; i < op->nports; i++) op->ports[i].records = (uint64_t)(i - 1) < g->np ? g->pv[i - 1] : 0;
}

int wm_op_restore_graph(wm_op *op, const uint8_t *data, size_t len) {
  graph_sec g;
  if (graph_parse(op, data, len, &g, true) != WM_OK) return WM_ERR;
  graph_apply(op, &g);
  graph_sec_free(&g);
  return WM_OK;
}

int wm_ctx_snapshot(wm_ctx *ctx, int instance, const wm_codec_host *codec, wm_part_put_fn put,
                    void *ud) {
  wm_buf g, b;
  wm_buf_init(&g);
  wm_buf_init(&b);
  int rc = WM_OK;
  for (size_t i = 0; i < ctx->nops && rc == WM_OK; i++) {
    wm_op *op = ctx->ops[i];
    char name[256]; /* always room: a uid has at most 120 bytes */
    wm_op_part_name(op, i, instance, name, sizeof name);
    wm_buf_clear(&g);
    wm_buf_clear(&b);
    if (wm_op_snapshot_graph(op, &g) != WM_OK) {
      rc = WM_ERR;
      break;
    }
    wm_codec_put_uvar(&b, g.len);
    wm_buf_add(&b, g.data, g.len);
    /* a part is a stream of its own: rows' schemas are defined again in every part */
    wm_encoder enc;
    wm_encoder_init(&enc);
    wm_state_io io = {.out = &b, .enc = &enc, .codec = codec};
    rc = wm_op_snapshot(op, &io);
    wm_encoder_free(&enc);
    if (rc == WM_OK && b.oom) rc = wm_ctx_error(ctx, "out of memory writing a checkpoint");
    if (rc == WM_OK && put(ud, name, b.data, b.len, &ctx->error) != 0) rc = WM_ERR;
  }
  wm_buf_free(&g);
  wm_buf_free(&b);
  return rc;
}

/* Whether name is an operator part of this instance ("op-*.<instance>", "uid-*.<instance>"). */
static bool own_part(const char *name, const char *suffix) {
  size_t n = strlen(name), k = strlen(suffix);
  if (strncmp(name, "op-", 3) != 0 && strncmp(name, "uid-", 4) != 0) return false;
  return n > k && strcmp(name + n - k, suffix) == 0;
}

/* The graph section of part pt (*g, *glen) and where the operator's own bytes start. */
static int part_split(wm_op *op, const wm_part *pt, const uint8_t **g, size_t *glen,
                      const uint8_t **own) {
  const uint8_t *p = pt->data, *end = pt->data + pt->len;
  uint64_t gl;
  if (wm_codec_get_uvar(&p, end, &gl) != 0 || gl > (uint64_t)(end - p))
    return wm_ctx_error(op->ctx, "damaged checkpoint state: part '%s' is truncated (%zu bytes)",
                        pt->name, pt->len);
  *g = p;
  *glen = (size_t)gl;
  *own = p + gl;
  return WM_OK;
}

/* The operator's own bytes of part pt (after its graph section) into op. */
static int restore_own(wm_op *op, const wm_codec_host *codec, const wm_part *pt, const uint8_t *own,
                       uint32_t groups, uint32_t first, uint32_t last, int merge) {
  wm_decoder dec;
  wm_decoder_init(&dec);
  wm_state_io io = {.data = own, .len = (size_t)(pt->data + pt->len - own), .dec = &dec,
                    .codec = codec, .groups = groups, .kg_first = first, .kg_last = last,
                    .merge = merge};
  int rc = wm_op_restore(op, &io);
  wm_decoder_free(&dec);
  return rc;
}

static int restore_part(wm_op *op, const wm_codec_host *codec, const wm_part *pt) {
  const uint8_t *g, *own;
  size_t glen;
  if (part_split(op, pt, &g, &glen, &own) != WM_OK ||
      wm_op_restore_graph(op, g, glen) != WM_OK)
    return WM_ERR;
  return restore_own(op, codec, pt, own, 0, 0, 0, 0);
}

int wm_op_restore_parts(wm_op *op, const wm_codec_host *codec, const wm_part *const *parts,
                        size_t n, const wm_part *same, uint32_t groups, uint32_t first,
                        uint32_t last) {
  if (n == 0) return wm_ctx_error(op->ctx, "no part to restore '%s' from", op->name);
  if (n > 1 && !op->vt->keyed_state && !op->vt->merge_parts)
    return wm_ctx_error(op->ctx, "'%s' keeps state that is not keyed: it is restored from one "
                                 "instance's part, not from %zu", op->name, n);
  graph_sec *gs = calloc(n, sizeof *gs);
  const uint8_t **own = calloc(n, sizeof *own);
  int rc = gs && own ? WM_OK : wm_ctx_error(op->ctx, "out of memory restoring a checkpoint");
  for (size_t k = 0; k < n && rc == WM_OK; k++) {
    const uint8_t *g;
    size_t glen;
    rc = part_split(op, parts[k], &g, &glen, &own[k]);
    if (rc == WM_OK) rc = graph_parse(op, g, glen, &gs[k], false);
    if (rc != WM_OK) wm_ctx_error_context(op->ctx, "\n  restoring part %s of the checkpoint", parts[k]->name);
  }
  if (rc == WM_OK) {
    /* each input channel: the lowest watermark of the parts' (every instance of a keyed
     * operator is sent the same watermarks), idle only when idle in all; the operator's
     * watermark likewise; its metrics those of the instance of its own number, if any */
    bool same_n = true;
    int64_t low = WM_TIME_MAX;
    for (size_t k = 0; k < n; k++) {
      same_n = same_n && gs[k].n == (uint64_t)op->comb.n;
      for (uint64_t c = 0; c < gs[k].n; c++)
        if (gs[k].ch[c].wm < low) low = gs[k].ch[c].wm;
    }
    graph_sec m = {0};
    m.n = (uint64_t)op->comb.n;
    m.ch = op->comb.ch; /* written in place below: graph_apply copies onto itself */
    m.out = WM_TIME_MAX;
    m.wm = WM_TIME_MAX;
    m.out_idle = m.ended = true;
    for (int c = 0; c < op->comb.n; c++) {
      wm_channel ch = {.wm = same_n ? WM_TIME_MAX : low, .idle = true, .aligned = true};
      for (size_t k = 0; k < n; k++) {
        const wm_channel *o = NULL;
        if (same_n) o = &gs[k].ch[c];
        else if (gs[k].n) o = &gs[k].ch[0];
        if (!o) continue;
        if (same_n && o->wm < ch.wm) ch.wm = o->wm;
        ch.idle = ch.idle && o->idle;
        ch.aligned = ch.aligned && o->aligned;
      }
      if (!same_n) ch.idle = false, ch.aligned = true;
      op->comb.ch[c] = ch;
    }
    for (size_t k = 0; k < n; k++) {
      if (gs[k].out < m.out) m.out = gs[k].out;
      if (gs[k].wm < m.wm) m.wm = gs[k].wm;
      m.out_idle = m.out_idle && gs[k].out_idle;
      m.ended = m.ended && gs[k].ended;
      if (parts[k] == same) {
        m.m = gs[k].m;
        m.np = gs[k].np;
        m.pv = gs[k].pv;
      }
    }
    graph_apply(op, &m);
  }
  for (size_t k = 0; k < n && rc == WM_OK; k++) {
    rc = restore_own(op, codec, parts[k], own[k], op->vt->keyed_state ? groups : 0, first, last,
                     k > 0);
    if (rc != WM_OK) wm_ctx_error_context(op->ctx, "\n  restoring part %s of the checkpoint", parts[k]->name);
  }
  for (size_t k = 0; gs && k < n; k++) graph_sec_free(&gs[k]);
  free(gs);
  free(own);
  return rc;
}

int wm_ctx_restore(wm_ctx *ctx, int instance, const wm_codec_host *codec, const wm_part *parts,
                   size_t nparts) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".%d", instance);
  bool *used = calloc(nparts ? nparts : 1, sizeof *used);
  if (!used) return wm_ctx_error(ctx, "out of memory restoring a checkpoint");
  int rc = WM_OK;
  for (size_t i = 0; i < ctx->nops && rc == WM_OK; i++) {
    wm_op *op = ctx->ops[i];
    char name[256]; /* always room: a uid has at most 120 bytes */
    wm_op_part_name(op, i, instance, name, sizeof name);
    size_t k = 0;
    while (k < nparts && strcmp(parts[k].name, name) != 0) k++;
    if (k == nparts) {
      rc = wm_ctx_error(ctx,
                        "the checkpoint holds no state for operator '%s' (part %s): the job "
                        "changed since the checkpoint (give operators a stable id with uid, "
                        "docs/checkpoints.md)",
                        op->name, name);
      break;
    }
    used[k] = true;
    if (restore_part(op, codec, &parts[k]) != WM_OK) {
      wm_ctx_error_context(ctx, "\n  restoring part %s of the checkpoint", name);
      rc = WM_ERR;
    }
  }
  for (size_t k = 0; k < nparts && rc == WM_OK; k++)
    if (!used[k] && own_part(parts[k].name, suffix))
      rc = wm_ctx_error(ctx,
                        "the checkpoint holds the state of an operator this job does not have "
                        "(part %s): the job changed since the checkpoint (docs/checkpoints.md)",
                        parts[k].name);
  free(used);
  return rc;
}
