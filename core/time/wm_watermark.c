#include "time/wm_watermark.h"

#include <stdlib.h>

#include "time/wm_time.h"

void wm_gen_init(wm_gen *g, int kind, int64_t delay) {
  g->kind = kind;
  g->delay = delay;
  g->max_ts = wm_time_add_sat(wm_time_add_sat(WM_TIME_MIN, delay), 1);
}

int wm_gen_on_periodic(const wm_gen *g, int64_t *wm) {
  if (g->kind == WM_GEN_NONE) return 0;
  *wm = wm_time_sub_sat(wm_time_sub_sat(g->max_ts, g->delay), 1);
  return 1;
}

int wm_combiner_init(wm_combiner *c, int n) {
  c->ch = calloc((size_t)(n > 0 ? n : 1), sizeof *c->ch);
  if (!c->ch) return -1;
  c->n = n;
  for (int i = 0; i < n; i++) {
    c->ch[i].wm = WM_TIME_MIN;
    c->ch[i].idle = false;
    c->ch[i].aligned = true;
  }
  c->out = WM_TIME_MIN;
  c->out_idle = false;
  return 0;
}

void wm_combiner_free(wm_combiner *c) {
  free(c->ch);
  c->ch = NULL;
}

/* The minimum over active, aligned channels; advances c->out if it grew. */
static int recompute(wm_combiner *c) {
  bool any = false;
  int64_t min = WM_TIME_MAX;
  for (int i = 0; i < c->n; i++) {
    if (c->ch[i].idle || !c->ch[i].aligned) continue;
    any = true;
    if (c->ch[i].wm < min) min = c->ch[i].wm;
  }
  if (any && min > c->out) {
    c->out = min;
    return WM_COMB_ADVANCED;
  }
  return 0;
}

int wm_combiner_watermark(wm_combiner *c, int ch, int64_t wm) {
  wm_channel *x = &c->ch[ch];
  int ev = 0;
  if (x->idle) { /* a watermark means the channel is active again */
    ev |= wm_combiner_status(c, ch, false);
  }
  if (wm > x->wm) {
    x->wm = wm;
    if (!x->aligned && wm >= c->out) x->aligned = true;
    ev |= recompute(c);
  }
  return ev;
}

int wm_combiner_status(wm_combiner *c, int ch, bool idle) {
  wm_channel *x = &c->ch[ch];
  int ev = 0;
  if (x->idle == idle) return 0;
  x->idle = idle;
  if (idle) {
    bool all = true;
    for (int i = 0; i < c->n; i++) all = all && c->ch[i].idle;
    if (all) {
      /* Flink's StatusWatermarkValve flushes before going idle: no channel will advance
       * any more, so the output may move to the maximum over every channel. Only when the
       * channel that just turned idle was the one holding the output (its watermark is the
       * output); otherwise the minimum has moved past it already. */
      if (x->wm == c->out) {
        int64_t max = WM_TIME_MIN;
        for (int i = 0; i < c->n; i++)
          if (c->ch[i].wm > max) max = c->ch[i].wm;
        if (max > c->out) {
          c->out = max;
          ev |= WM_COMB_ADVANCED;
        }
      }
      if (!c->out_idle) { c->out_idle = true; ev |= WM_COMB_IDLE; }
    } else {
      ev |= recompute(c);
    }
  } else {
    x->aligned = x->wm >= c->out;
    if (c->out_idle) { c->out_idle = false; ev |= WM_COMB_ACTIVE; }
    ev |= recompute(c);
  }
  return ev;
}
