/* The Nexmark source (wm_src_nexmark.h). */
#include "io/wm_src_nexmark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wm_lines.h"
#include "time/wm_time.h"

#define BATCH 4096

typedef struct nexsrc {
  wm_srchead h; /* first */
  wm_nexmark *gen;
  int64_t count;   /* the next event is wm_nexmark_event(gen, count) */
  int64_t part, parts; /* this instance makes the events of count part, part + parts, ... */
  double rate;     /* events per second of this part; 0 = as fast as possible */
  uint64_t t0;     /* rate: loop time at which event `c0` was due */
  int64_t c0;
  int clock_set;
  wm_pos pos;
  uv_idle_t idle;
  uv_timer_t timer;
  int idle_open, timer_open, idle_on, timer_on, waiting;
} nexsrc;

static void nex_destroy(wm_io_owner *own) {
  nexsrc *s = (nexsrc *)own;
  wm_nexmark_free(s->gen);
  free(s->h.buf);
  free(s);
}

static void nex_handles_off(nexsrc *s) {
  if (s->idle_on) uv_idle_stop(&s->idle);
  if (s->timer_on) uv_timer_stop(&s->timer);
  s->idle_on = s->timer_on = 0;
}

static void nex_close(nexsrc *s) {
  nex_handles_off(s);
  wm_io_close(&s->h.own, (uv_handle_t *)&s->idle, &s->idle_open);
  wm_io_close(&s->h.own, (uv_handle_t *)&s->timer, &s->timer_open);
}

static void nex_free(wm_op *op) {
  nexsrc *s = op->impl;
  if (!s) return;
  nex_close(s);
  wm_io_release(&s->h.own);
}

static void on_nex_idle(uv_idle_t *h);
static void on_nex_timer(uv_timer_t *h);

static void nex_fail(nexsrc *s) {
  nex_close(s);
  wm_src_fail(&s->h);
}

/* Runs the source again: at once (idle) or after ms (timer). */
static void nex_schedule(nexsrc *s, int64_t ms) {
  nex_handles_off(s);
  if (s->h.stopped) return;
  if (s->h.paused) {
    s->waiting = 1;
    return;
  }
  int rc = ms <= 0 ? uv_idle_start(&s->idle, on_nex_idle)
                   : uv_timer_start(&s->timer, on_nex_timer, (uint64_t)ms, 0);
  if (rc != 0) {
    wm_ctx_error(s->h.op->ctx, "%s: cannot schedule the source: %s", s->h.op->name, uv_strerror(rc));
    nex_fail(s);
    return;
  }
  if (ms <= 0) s->idle_on = 1;
  else s->timer_on = 1;
}

static int64_t limit_of(const nexsrc *s) {
  int64_t n = wm_nexmark_cfg(s->gen)->events;
  return n > 0 ? n : INT64_MAX;
}

/* Emits the events that are due; the ms until the next is due (0 = at once), -1 at the end,
 * -2 on failure. */
static int64_t nex_step(nexsrc *s) {
  int64_t n = BATCH, limit = limit_of(s);
  if (s->rate > 0) {
    uint64_t now = uv_now(s->h.host->loop);
    if (!s->clock_set) { /* the first run, or the first after a restore: the rate starts here */
      s->clock_set = 1;
      s->t0 = now;
      s->c0 = s->count;
    }
    /* the k-th event from c0 is due at t0 + k / rate: a steady rate, whatever the timer's jitter */
    int64_t due = (int64_t)((double)(now - s->t0) * s->rate / 1000.0) + 1;
    n = due - (s->count - s->c0) / s->parts;
    if (n > BATCH) n = BATCH;
    if (n <= 0) {
      int64_t wait = (int64_t)((double)((s->count - s->c0) / s->parts) * 1000.0 / s->rate) - (int64_t)(now - s->t0);
      return wait > 0 ? wait : 1;
    }
  }
  for (int64_t k = 0; k < n && !s->h.stopped; k++) {
    if (s->count >= limit) return -1;
    wm_value v;
    if (wm_nexmark_event(s->gen, s->count, &v, NULL, NULL) != 0) {
      wm_ctx_error(s->h.op->ctx, "out of memory generating nexmark events");
      return -2;
    }
    s->pos.line = (uint64_t)s->count + 1; /* event n of the whole sequence, from 1 */
    s->count += s->parts;
    int rc = wm_source_emit(s->h.op, &s->pos, &v, WM_TIME_MIN);
    wm_value_release(NULL, &v);
    if (rc != WM_OK) return -2;
  }
  if (s->count >= limit) return -1;
  if (s->rate > 0) {
    int64_t wait = (int64_t)((double)((s->count - s->c0) / s->parts) * 1000.0 / s->rate) -
                   (int64_t)(uv_now(s->h.host->loop) - s->t0);
    return wait > 0 ? wait : 0;
  }
  return 0;
}

static void nex_run(nexsrc *s) {
  if (s->h.stopped) return;
  int64_t r = nex_step(s);
  wm_io_batch_done(s->h.host);
  if (s->h.finished) return;
  if (r == -2) {
    nex_fail(s);
  } else if (r == -1 || s->h.stopped) {
    nex_close(s);
    wm_src_done(&s->h);
  } else {
    nex_schedule(s, r);
  }
}

static void on_nex_idle(uv_idle_t *h) { nex_run(h->data); }
static void on_nex_timer(uv_timer_t *h) {
  nexsrc *s = h->data;
  s->timer_on = 0;
  nex_run(s);
}

static int nex_start(wm_op *op, wm_io_host *host) {
  nexsrc *s = op->impl;
  int rc = uv_idle_init(host->loop, &s->idle);
  if (rc == 0) {
    s->idle_open = 1;
    s->idle.data = s;
    rc = uv_timer_init(host->loop, &s->timer);
  }
  if (rc == 0) {
    s->timer_open = 1;
    s->timer.data = s;
  }
  if (rc != 0) {
    nex_close(s);
    s->h.stopped = s->h.finished = 1;
    return wm_ctx_error(op->ctx, "%s: cannot start the source: %s", op->name, uv_strerror(rc));
  }
  nex_schedule(s, 0);
  return s->h.finished ? WM_ERR : WM_OK;
}

static void nex_stop(wm_op *op, wm_io_host *host, int finish) {
  nexsrc *s = op->impl;
  (void)host;
  if (s->h.stopped) return;
  nex_close(s);
  if (finish) wm_src_done(&s->h);
  else s->h.stopped = s->h.finished = 1;
}

static void nex_pause(wm_op *op, wm_io_host *host, int paused) {
  nexsrc *s = op->impl;
  (void)host;
  s->h.paused = paused;
  if (paused) {
    if (s->idle_on || s->timer_on) s->waiting = 1;
    nex_handles_off(s);
  } else if (s->waiting) {
    s->waiting = 0;
    nex_schedule(s, 0);
  }
}

/* ---- checkpoints: version 1, 'N', the next count, the configuration's hash, the part and
 * the number of parts (8 bytes each, little-endian) ------------------------------------ */

#define SNAP_LEN 34

static void put64(wm_buf *b, uint64_t v) {
  for (int i = 0; i < 8; i++) wm_buf_addc(b, (char)(v >> (8 * i)));
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static int nex_snapshot(wm_op *op, wm_buf *out) {
  nexsrc *s = op->impl;
  wm_buf_addc(out, 1);
  wm_buf_addc(out, 'N');
  put64(out, (uint64_t)s->count);
  put64(out, wm_nexmark_config_hash(wm_nexmark_cfg(s->gen)));
  put64(out, (uint64_t)s->part);
  put64(out, (uint64_t)s->parts);
  return out->oom ? wm_ctx_error(op->ctx, "out of memory writing a checkpoint") : WM_OK;
}

static int nex_restore(wm_op *op, const char *data, size_t n) {
  nexsrc *s = op->impl;
  const unsigned char *p = (const unsigned char *)data;
  if (n != SNAP_LEN || p[0] != 1 || p[1] != 'N' || get64(p + 2) > (uint64_t)INT64_MAX)
    return wm_ctx_error(op->ctx, "damaged checkpoint state: the position of '%s' is not one of a nexmark "
                                 "source (%zu bytes)", op->name, n);
  if (get64(p + 10) != wm_nexmark_config_hash(wm_nexmark_cfg(s->gen)))
    return wm_ctx_error(op->ctx, "the checkpoint of '%s' was taken with other nexmark options: restore it "
                                 "with the options it ran with", op->name);
  if ((int64_t)get64(p + 26) != s->parts)
    return wm_ctx_error(op->ctx, "the checkpoint of '%s' was taken at parallelism %llu, not %lld: restore it "
                                 "at the parallelism it ran with", op->name, (unsigned long long)get64(p + 26),
                        (long long)s->parts);
  if ((int64_t)get64(p + 18) != s->part || (int64_t)get64(p + 2) % s->parts != s->part)
    return wm_ctx_error(op->ctx, "damaged checkpoint state: the position of '%s' is another instance's",
                        op->name);
  s->count = (int64_t)get64(p + 2);
  s->clock_set = 0;
  return WM_OK;
}

static void nex_describe(wm_op *op, const char *data, size_t n, wm_buf *out) {
  (void)op;
  const unsigned char *p = (const unsigned char *)data;
  if (n != SNAP_LEN || p[0] != 1 || p[1] != 'N') return;
  char tmp[64];
  snprintf(tmp, sizeof tmp, "next event %llu", (unsigned long long)get64(p + 2) + 1);
  wm_buf_adds(out, tmp);
}

static const wm_op_vt nex_vt = {.kind = "nexmark", .record = wm_source_record, .free = nex_free};
static const wm_source_vt nex_svt = {.start = nex_start,
                                     .stop = nex_stop,
                                     .pause = nex_pause,
                                     .snapshot = nex_snapshot,
                                     .restore = nex_restore,
                                     .describe = nex_describe};

wm_op *wm_src_nexmark_new(wm_io_host *host, const char *name, const wm_nexmark_config *cfg, double rate,
                          int part, int parts) {
  const char *why = wm_nexmark_config_check(cfg);
  if (why) {
    wm_ctx_error(host->ctx, "%s: %s", name ? name : "nexmark", why);
    return NULL;
  }
  if (!(rate >= 0 && rate <= 1e9)) {
    wm_ctx_error(host->ctx, "%s: the rate must be from 0 (as fast as possible) to 1e9 events per second",
                 name ? name : "nexmark");
    return NULL;
  }
  if (parts < 1 || part < 0 || part >= parts) {
    wm_ctx_error(host->ctx, "%s: bad part %d of %d", name ? name : "nexmark", part, parts);
    return NULL;
  }
  nexsrc *s = calloc(1, sizeof *s);
  if (!s) {
    wm_ctx_error(host->ctx, "out of memory");
    return NULL;
  }
  if (wm_src_head_init(&s->h, host, 16, 16, "nexmark", nex_destroy) != 0) {
    free(s);
    return NULL;
  }
  if (!(s->gen = wm_nexmark_new(cfg))) {
    nex_destroy(&s->h.own);
    wm_ctx_error(host->ctx, "out of memory");
    return NULL;
  }
  s->rate = rate / parts;
  s->part = s->count = part;
  s->parts = parts;
  s->pos.origin = "nexmark";
  s->pos.unit = "event";
  return wm_src_op(host, &nex_vt, &nex_svt, &s->h, name ? name : "nexmark");
}

int64_t wm_src_nexmark_count(const wm_op *op) { return ((const nexsrc *)op->impl)->count; }
