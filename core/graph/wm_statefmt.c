#include "graph/wm_statefmt.h"

#include "base/wm_keygroup.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/wm_graph.h"
#include "time/wm_timer.h"

void wm_state_put_header(wm_state_io *io, char tag) {
  wm_buf_addc(io->out, (char)WM_STATE_VERSION);
  wm_buf_addc(io->out, tag);
}

int wm_state_put_value(wm_op *op, wm_state_io *io, const wm_value *v, const char *what) {
  if (wm_encode_value(io->enc, io->codec, io->out, v, &op->ctx->error) != 0)
    return wm_ctx_error(op->ctx, "cannot checkpoint %s: %s", what, op->ctx->error.msg);
  return WM_OK;
}

int wm_state_put_done(wm_op *op, wm_state_io *io) {
  if (io->out->oom) return wm_ctx_error(op->ctx, "out of memory writing a checkpoint");
  return WM_OK;
}

void wm_state_rd_init(wm_state_rd *r, wm_op *op, wm_state_io *io) {
  r->p = r->begin = io->data;
  r->end = io->data + io->len;
  r->op = op;
  r->io = io;
}

int wm_state_bad(wm_state_rd *r, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return wm_ctx_error(r->op->ctx, "damaged checkpoint state: %s (at byte %zu of %zu)", msg,
                      (size_t)(r->p - r->begin), (size_t)(r->end - r->begin));
}

static const char *tag_kind(char tag) {
  switch (tag) {
  case 'T': return "a timestamps/watermarks operator";
  case 'W': return "a window operator";
  case 'K': return "a keyed process operator";
  case 'G': return "the graph's part of an operator";
  default: return NULL;
  }
}

int wm_state_get_header(wm_state_rd *r, char tag, const char *kind) {
  if (r->end - r->p < 2) {
    if (r->p == r->end)
      return wm_state_bad(r, "no state for %s (the checkpoint holds none for this operator)",
                          kind);
    return wm_state_bad(r, "truncated in the header");
  }
  if (r->p[0] != WM_STATE_VERSION)
    return wm_ctx_error(r->op->ctx,
                        "checkpoint state of format version %u, this wmrun reads version %u "
                        "(a checkpoint of another wmrun version?)",
                        r->p[0], WM_STATE_VERSION);
  if ((char)r->p[1] != tag) {
    const char *k = tag_kind((char)r->p[1]);
    return wm_ctx_error(r->op->ctx,
                        "the checkpoint holds the state of %s where this job has %s "
                        "(the job changed since the checkpoint?)",
                        k ? k : "an unknown kind of operator", kind);
  }
  r->p += 2;
  return WM_OK;
}

int wm_state_get_u(wm_state_rd *r, uint64_t *v, const char *what) {
  if (wm_codec_get_uvar(&r->p, r->end, v) != 0) return wm_state_bad(r, "truncated in %s", what);
  return WM_OK;
}

int wm_state_get_i(wm_state_rd *r, int64_t *v, const char *what) {
  if (wm_codec_get_ivar(&r->p, r->end, v) != 0) return wm_state_bad(r, "truncated in %s", what);
  return WM_OK;
}

int wm_state_get_count(wm_state_rd *r, uint64_t *n, size_t unit, const char *what) {
  if (wm_state_get_u(r, n, what) != WM_OK) return WM_ERR;
  if (*n > (uint64_t)(r->end - r->p) / (unit ? unit : 1))
    return wm_state_bad(r, "%s says %llu, more than the %zu bytes left can hold", what,
                        (unsigned long long)*n, (size_t)(r->end - r->p));
  return WM_OK;
}

int wm_state_get_value(wm_state_rd *r, wm_value *out, const char *what) {
  wm_ctx *ctx = r->op->ctx;
  if (r->p == r->end) return wm_state_bad(r, "truncated in %s", what);
  if (wm_decode_value(r->io->dec, &ctx->host, r->io->codec, &r->p, r->end, out, &ctx->error) != 0)
    return wm_state_bad(r, "%s: %s", what, ctx->error.msg);
  /* a top-level string borrows the bytes: copy it */
  if (out->type == WM_CSTR && wm_value_retain(&ctx->host, out) != 0)
    return wm_ctx_error(ctx, "out of memory restoring a checkpoint");
  return WM_OK;
}

int wm_state_get_end(wm_state_rd *r) {
  if (r->p != r->end) return wm_state_bad(r, "%zu bytes left over", (size_t)(r->end - r->p));
  return WM_OK;
}

static int put_group(void *ud, int64_t t, const wm_timer_entry *e, size_t n) {
  wm_state_io *io = ud;
  wm_state_put_i(io, t);
  wm_state_put_u(io, n);
  for (size_t i = 0; i < n; i++) {
    wm_state_put_u(io, e[i].payload);
    wm_state_put_u(io, e[i].order);
  }
  return 0;
}

void wm_state_put_timers(wm_state_io *io, const wm_timers *q) {
  wm_state_put_u(io, wm_timers_groups(q));
  wm_timers_each(q, put_group, io);
}

int wm_state_get_timers(wm_state_rd *r, wm_timers *q,
                        int (*valid)(void *ud, wm_state_rd *r, int64_t t, uint64_t payload),
                        void *ud) {
  uint64_t ng, n, pl, ord;
  int64_t t;
  if (wm_state_get_count(r, &ng, 2, "the number of timer groups") != WM_OK) return WM_ERR;
  for (uint64_t g = 0; g < ng; g++) {
    if (wm_state_get_i(r, &t, "a timer's time") != WM_OK ||
        wm_state_get_count(r, &n, 2, "the number of timers") != WM_OK)
      return WM_ERR;
    for (uint64_t i = 0; i < n; i++) {
      if (wm_state_get_u(r, &pl, "a timer") != WM_OK ||
          wm_state_get_u(r, &ord, "a timer's order") != WM_OK)
        return WM_ERR;
      if (valid(ud, r, t, pl) != WM_OK) return WM_ERR;
      if (wm_timers_push(q, t, pl, ord) != 0)
        return wm_ctx_error(r->op->ctx, "out of memory restoring a checkpoint");
    }
  }
  return WM_OK;
}

int wm_state_get_timers_map(wm_state_rd *r, wm_timers *q,
                            int (*map)(void *ud, wm_state_rd *r, int64_t t, uint64_t *payload),
                            void *ud) {
  uint64_t ng, n, pl, ord;
  int64_t t;
  if (wm_state_get_count(r, &ng, 2, "the number of timer groups") != WM_OK) return WM_ERR;
  for (uint64_t g = 0; g < ng; g++) {
    if (wm_state_get_i(r, &t, "a timer's time") != WM_OK ||
        wm_state_get_count(r, &n, 2, "the number of timers") != WM_OK)
      return WM_ERR;
    for (uint64_t i = 0; i < n; i++) {
      if (wm_state_get_u(r, &pl, "a timer") != WM_OK ||
          wm_state_get_u(r, &ord, "a timer's order") != WM_OK)
        return WM_ERR;
      int m = map(ud, r, t, &pl);
      if (m == WM_ERR) return WM_ERR;
      if (m == 1) continue;
      if (wm_timers_push(q, t, pl, ord) != 0)
        return wm_ctx_error(r->op->ctx, "out of memory restoring a checkpoint");
    }
  }
  return WM_OK;
}

int wm_state_key_kept(const wm_state_io *io, const wm_value *key) {
  if (!io->groups) return 1;
  uint32_t g = wm_keygroup_of(key, io->groups);
  return g >= io->kg_first && g <= io->kg_last;
}

static int rearm_group(void *ud, int64_t t, const wm_timer_entry *e, size_t n) {
  (void)e;
  (void)n;
  wm_op *op = ud;
  return wm_ctx_register_processing_timer(op->ctx, op, t) != WM_OK;
}

int wm_state_rearm(wm_op *op, const wm_timers *q) {
  return wm_timers_each(q, rearm_group, op) != 0 ? WM_ERR : WM_OK;
}
