/* The metrics board and the Prometheus text format (see wm_mboard.h). */
#include "exec/wm_mboard.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "exec/wm_exec.h"
#include "io/wm_conn.h"
#include "time/wm_time.h"

/* ---- snapshots --------------------------------------------------------------------------- */

enum { C_IN = WM_MS_IN, C_OUT = WM_MS_OUT, C_LATE_DROPPED = WM_MS_LATE_DROPPED,
       C_LATE_SIDE = WM_MS_LATE_SIDE, NCOUNT = WM_MS_NCOUNT };

typedef wm_msnap snap;
typedef wm_msnap_op snap_op;
typedef wm_msnap_side snap_side;

struct wm_mboard {
  uv_mutex_t mu;
  int n;
  snap *front; /* the published snapshots, read under mu */
  snap *back;  /* each thread's own, filled without the lock */
  wm_exec **exec; /* each thread's executor (wm_mboard_set_exec): read by that thread only */
  void (*ck_get)(void *ud, wm_mboard_ckpt *out); /* NULL: no checkpoints */
  void *ck_ud;
};

static void snap_free(snap *s) {
  wm_buf_free(&s->names);
  free(s->ops);
  free(s->sides);
  free(s->chans);
  free(s->edges);
  free(s->lags);
}

/* Grows *p (elements of size sz) to hold need; 0 or -1. */
static int grow(void **p, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * sz);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* The instance suffix " k/n" of a name (lwm_graph.c names instances so): the length
 * without it, and k in *subtask (1 when there is none). */
static size_t split_instance(const char *name, int *subtask) {
  size_t len = strlen(name), i = len;
  *subtask = 1;
  size_t d2 = 0, d1 = 0;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--, d2++;
  if (d2 == 0 || d2 > 6 || i == 0 || name[i - 1] != '/') return len;
  i--;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--, d1++;
  if (d1 == 0 || d1 > 6 || i == 0 || name[i - 1] != ' ') return len;
  int k = atoi(name + i);
  if (k < 1) return len;
  *subtask = k;
  return i - 1;
}

static size_t add_name(snap *s, const char *name) {
  size_t at = s->names.len;
  wm_buf_adds(&s->names, name);
  wm_buf_addc(&s->names, '\0');
  return at;
}


/* Makes room for one more element in *p (n used of *cap): 0 or -1. */
#define ROOM(p, n, cap) grow((void **)&(p), &(cap), (n) + 1, sizeof *(p))

/* The instance's channels, edges, side outputs and (a partitioned source) partitions' lag.
 * 0 or -1 (out of memory). */
static int snap_lists(snap *s, snap_op *o, const wm_op *op) {
  o->chan0 = s->nchans;
  for (int c = 0; c < op->comb.n; c++) {
    if (ROOM(s->chans, s->nchans, s->capchans) != 0) return -1;
    s->chans[s->nchans++] = (wm_msnap_chan){op->comb.ch[c].wm, op->comb.ch[c].idle};
    o->nchan++;
  }
  o->side0 = s->nsides;
  o->edge0 = s->nedges;
  for (int p = 0; p < op->nports; p++) {
    const wm_port *pt = &op->ports[p];
    size_t tag = pt->tag ? add_name(s, pt->tag) : SIZE_MAX;
    if (p > 0 && pt->side) {
      if (ROOM(s->sides, s->nsides, s->capsides) != 0) return -1;
      s->sides[s->nsides++] = (snap_side){tag, pt->records};
      o->nside++;
    }
    for (int e = 0; e < pt->n; e++) {
      if (ROOM(s->edges, s->nedges, s->capedges) != 0) return -1;
      s->edges[s->nedges++] = (wm_msnap_edge){(uintptr_t)pt->edges[e].to, pt->edges[e].chan, tag,
                                              pt->side};
      o->nedge++;
    }
  }
  o->lag0 = s->nlags;
  int np = wm_partsrc_count(op);
  for (int i = 0; i < np; i++) {
    const char *part;
    int64_t pos, lag;
    if (wm_partsrc_position(op, i, &part, &pos) != 0) continue;
    if (ROOM(s->lags, s->nlags, s->caplags) != 0) return -1;
    s->lags[s->nlags++] = (wm_msnap_lag){add_name(s, part), wm_partsrc_lag(op, i, &lag) == 1 ? lag : -1};
    o->nlag++;
  }
  return 0;
}

/* Fills s from ctx's operators (the caller's thread is ctx's). 0 or -1 (out of memory). */
static int snap_take(snap *s, const wm_ctx *ctx) {
  wm_buf_clear(&s->names);
  s->names.oom = 0;
  s->nops = s->nsides = s->nchans = s->nedges = s->nlags = 0;
  if (grow((void **)&s->ops, &s->capops, ctx->nops, sizeof *s->ops) != 0) return -1;
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    snap_op *o = &s->ops[s->nops++];
    memset(o, 0, sizeof *o);
    o->id = (uintptr_t)op;
    o->kind = op->vt->kind;
    o->name = add_name(s, op->name);
    o->base_len = split_instance(op->name, &o->subtask);
    o->c[C_IN] = op->m.records_in;
    o->c[C_OUT] = op->m.records_out;
    o->c[C_LATE_DROPPED] = op->m.late_dropped;
    o->c[C_LATE_SIDE] = op->m.late_side;
    o->wm = op->wm;
    wm_op_gauges g;
    wm_op_gauges_get(op, &g);
    o->window = g.has_windows;
    o->keyed = g.has_keys;
    o->windows = g.windows;
    o->keys = g.keys;
    o->expired = g.keys_expired;
    o->two = op->in2 != INT_MAX;
    o->source = op->nin == 0;
    for (int in = 0; in < 2 && o->two; in++) {
      o->in[in] = op->m.in[in];
      o->in_wm[in] = wm_op_input_wm(op, in, &o->in_idle[in]);
    }
    if (snap_lists(s, o, op) != 0) return -1;
  }
  return s->names.oom ? -1 : 0;
}

wm_mboard *wm_mboard_new(int n) {
  if (n < 1) return NULL;
  wm_mboard *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->n = n;
  b->front = calloc((size_t)n, sizeof *b->front);
  b->back = calloc((size_t)n, sizeof *b->back);
  b->exec = calloc((size_t)n, sizeof *b->exec);
  if (!b->front || !b->back || !b->exec || uv_mutex_init(&b->mu) != 0) {
    free(b->front);
    free(b->back);
    free(b->exec);
    free(b);
    return NULL;
  }
  for (int t = 0; t < n; t++) {
    wm_buf_init(&b->front[t].names);
    wm_buf_init(&b->back[t].names);
  }
  return b;
}

void wm_mboard_free(wm_mboard *b) {
  if (!b) return;
  for (int t = 0; t < b->n; t++) {
    snap_free(&b->front[t]);
    snap_free(&b->back[t]);
  }
  free(b->front);
  free(b->back);
  free(b->exec);
  uv_mutex_destroy(&b->mu);
  free(b);
}

int wm_mboard_threads(const wm_mboard *b) { return b->n; }

int wm_mboard_publish(wm_mboard *b, int thread, const wm_ctx *ctx) {
  if (thread < 0 || thread >= b->n) return WM_ERR;
  snap *mine = &b->back[thread];
  if (snap_take(mine, ctx) != 0) return WM_ERR;
  wm_exec *e = b->exec[thread];
  mine->bp = e != NULL;
  mine->bp_paused = e && wm_exec_paused(e);
  mine->bp_paused_ms = e ? wm_exec_paused_ms(e) : 0;
  mine->bp_queued = e ? wm_exec_pressure_bytes(e) : 0;
  mine->valid = 1;
  uv_mutex_lock(&b->mu);
  snap t = b->front[thread];
  b->front[thread] = *mine;
  *mine = t; /* the old one: filled again next time */
  uv_mutex_unlock(&b->mu);
  return WM_OK;
}

void wm_mboard_set_exec(wm_mboard *b, int thread, wm_exec *e) {
  if (thread >= 0 && thread < b->n) b->exec[thread] = e;
}

void wm_mboard_read(wm_mboard *b, void (*fn)(void *ud, const wm_msnap *s, int n), void *ud) {
  uv_mutex_lock(&b->mu);
  fn(ud, b->front, b->n);
  uv_mutex_unlock(&b->mu);
}

void wm_mboard_set_checkpoints(wm_mboard *b, void (*get)(void *ud, wm_mboard_ckpt *out),
                               void *ud) {
  b->ck_get = get;
  b->ck_ud = ud;
}

/* ---- the text format ------------------------------------------------------------------ */

typedef struct view {
  const snap *s; /* s[0 .. n) */
  int n;
  int threads_label; /* with several threads: thread="k" */
} view;

static void add_escaped(wm_buf *b, const char *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (c == '\\') wm_buf_adds(b, "\\\\");
    else if (c == '"') wm_buf_adds(b, "\\\"");
    else if (c == '\n') wm_buf_adds(b, "\\n");
    else wm_buf_addc(b, c);
  }
}

static void add_header(wm_buf *b, const char *metric, const char *type, const char *help) {
  wm_buf_adds(b, "# HELP ");
  wm_buf_adds(b, metric);
  wm_buf_addc(b, ' ');
  wm_buf_adds(b, help);
  wm_buf_adds(b, "\n# TYPE ");
  wm_buf_adds(b, metric);
  wm_buf_addc(b, ' ');
  wm_buf_adds(b, type);
  wm_buf_addc(b, '\n');
}

/* metric{operator="...",subtask="k"[,thread="t"] then more labels (extra_name="extra"), and
 * the closing brace and a space. */
static void add_series(wm_buf *b, const view *v, int t, const snap_op *o, const char *metric,
                       const char *extra_name, const char *extra) {
  const snap *s = &v->s[t];
  wm_buf_adds(b, metric);
  wm_buf_adds(b, "{operator=\"");
  add_escaped(b, s->names.data + o->name, o->base_len);
  wm_buf_adds(b, "\",subtask=\"");
  wm_buf_add_int(b, o->subtask);
  if (v->threads_label) {
    wm_buf_adds(b, "\",thread=\"");
    wm_buf_add_int(b, t + 1);
  }
  wm_buf_addc(b, '"');
  if (extra_name) {
    wm_buf_addc(b, ',');
    wm_buf_adds(b, extra_name);
    wm_buf_adds(b, "=\"");
    add_escaped(b, extra, strlen(extra));
    wm_buf_addc(b, '"');
  }
  wm_buf_adds(b, "} ");
}

/* ms as seconds, exactly: 11999 -> "11.999", -1 -> "-0.001". */
static void add_seconds(wm_buf *b, int64_t ms) {
  uint64_t a = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
  char t[48];
  snprintf(t, sizeof t, "%s%llu.%03u", ms < 0 ? "-" : "", (unsigned long long)(a / 1000),
           (unsigned)(a % 1000));
  wm_buf_adds(b, t);
}

/* A watermark (lag = 0) or now minus it (lag = 1), in seconds. */
static void add_wm(wm_buf *b, int64_t w, int lag, int64_t now) {
  if (w == WM_TIME_MIN) wm_buf_adds(b, "NaN");
  else if (w == WM_TIME_MAX) wm_buf_adds(b, lag ? "0" : "+Inf");
  else add_seconds(b, lag ? wm_time_sub_sat(now, w) : w);
  wm_buf_addc(b, '\n');
}

#define EACH_OP(v, t, o)                                                                    \
  for (int t = 0; t < (v)->n; t++)                                                          \
    for (const snap_op *o = (v)->s[t].ops; o < (v)->s[t].ops + (v)->s[t].nops; o++)

/* A two-input operator's figures per input (label input: "1" or "2"). */
static void add_inputs(wm_buf *b, const view *v) {
  static const struct {
    const char *name, *type, *help;
    size_t off; /* in wm_input_metrics; SIZE_MAX: the input's own watermark */
  } m[] = {
      {"wmrun_input_records_total", "counter",
       "Records that reached a two-input operator on this input.",
       offsetof(wm_input_metrics, records)},
      {"wmrun_input_late_records_dropped_total", "counter",
       "Late records of this input a two-input operator dropped.",
       offsetof(wm_input_metrics, late_dropped)},
      {"wmrun_input_late_records_side_output_total", "counter",
       "Late records of this input a two-input operator sent to a side output.",
       offsetof(wm_input_metrics, late_side)},
      {"wmrun_input_watermark_seconds", "gauge",
       "The own watermark of this input of a two-input operator (the minimum over its active "
       "channels; the operator's is the minimum of both inputs), seconds since the epoch (NaN: "
       "none yet; +Inf: the input has ended).",
       SIZE_MAX},
  };
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
    add_header(b, m[k].name, m[k].type, m[k].help);
    EACH_OP(v, t, o) {
      for (int in = 0; in < 2 && o->two; in++) {
        add_series(b, v, t, o, m[k].name, "input", in == 0 ? "1" : "2");
        if (m[k].off == SIZE_MAX) {
          add_wm(b, o->in_wm[in], 0, 0);
          continue;
        }
        uint64_t x;
        memcpy(&x, (const char *)&o->in[in] + m[k].off, sizeof x);
        wm_buf_add_int(b, (int64_t)x);
        wm_buf_addc(b, '\n');
      }
    }
  }
}

/* One sample per operator of a kind: what: 0 a window operator's open windows, 1 a keyed
 * operator's keys, 2 the keys its state_ttl expired. */
static void add_held(wm_buf *b, const view *v, const char *metric, int what) {
  EACH_OP(v, t, o) {
    if (what == 0 ? !o->window : !o->keyed) continue;
    add_series(b, v, t, o, metric, NULL, NULL);
    wm_buf_add_int(b, (int64_t)(what == 0 ? o->windows : what == 1 ? o->keys : o->expired));
    wm_buf_addc(b, '\n');
  }
}

/* The job's checkpoints. */
static void add_checkpoints(wm_buf *b, const wm_mboard_ckpt *ck) {
  wm_mboard_ckpt st = *ck;
  add_header(b, "wmrun_checkpoints_total", "counter",
             "Checkpoints this run committed (the one before the first record included).");
  wm_buf_adds(b, "wmrun_checkpoints_total ");
  wm_buf_add_int(b, (int64_t)st.taken);
  wm_buf_addc(b, '\n');
  add_header(b, "wmrun_checkpoint_duration_seconds", "gauge",
             "Time the last committed checkpoint took, from its start to its commit (NaN: none "
             "yet).");
  wm_buf_adds(b, "wmrun_checkpoint_duration_seconds ");
  if (st.taken) wm_buf_add_float(b, st.last_ms / 1000.0);
  else wm_buf_adds(b, "NaN");
  wm_buf_addc(b, '\n');
  add_header(b, "wmrun_checkpoint_bytes", "gauge",
             "Size of the last committed checkpoint: its parts and MANIFEST (NaN: none yet).");
  wm_buf_adds(b, "wmrun_checkpoint_bytes ");
  if (st.taken) wm_buf_add_int(b, (int64_t)st.last_bytes);
  else wm_buf_adds(b, "NaN");
  wm_buf_addc(b, '\n');
}

static void format_view(wm_buf *b, const view *v, const wm_mboard_ckpt *ck, int64_t now) {
  static const struct {
    const char *name, *help;
  } counters[NCOUNT] = {
      [C_IN] = {"wmrun_records_in_total", "Records that reached the operator."},
      [C_OUT] = {"wmrun_records_out_total",
                 "Records the operator emitted on its main output (side outputs: "
                 "wmrun_side_output_records_total)."},
      [C_LATE_DROPPED] = {"wmrun_late_records_dropped_total",
                          "Records too late for any window, dropped (not sent to a side output)."},
      [C_LATE_SIDE] = {"wmrun_late_records_side_output_total",
                       "Records too late for any window, sent to the late side output."},
  };
  for (int k = 0; k < NCOUNT; k++) {
    add_header(b, counters[k].name, "counter", counters[k].help);
    EACH_OP(v, t, o) {
      add_series(b, v, t, o, counters[k].name, NULL, NULL);
      wm_buf_add_int(b, (int64_t)o->c[k]);
      wm_buf_addc(b, '\n');
    }
  }
  add_header(b, "wmrun_side_output_records_total", "counter",
             "Records the operator emitted on a side output (label output: its tag).");
  EACH_OP(v, t, o) {
    for (size_t i = o->side0; i < o->side0 + o->nside; i++) {
      const snap_side *sd = &v->s[t].sides[i];
      add_series(b, v, t, o, "wmrun_side_output_records_total", "output",
                 v->s[t].names.data + sd->tag);
      wm_buf_add_int(b, (int64_t)sd->records);
      wm_buf_addc(b, '\n');
    }
  }
  static const char *const wms[2][2] = {
      {"wmrun_watermark_seconds",
       "The operator's current input watermark, seconds since the epoch (NaN: none yet; +Inf: "
       "the input has ended)."},
      {"wmrun_watermark_lag_seconds",
       "Processing time minus the operator's watermark, seconds (NaN: no watermark yet; 0 once "
       "the input has ended)."},
  };
  for (int lag = 0; lag < 2; lag++) {
    add_header(b, wms[lag][0], "gauge", wms[lag][1]);
    EACH_OP(v, t, o) {
      add_series(b, v, t, o, wms[lag][0], NULL, NULL);
      add_wm(b, o->wm, lag, now);
    }
  }
  add_header(b, "wmrun_open_windows", "gauge", "(key, window) states a window operator holds.");
  add_held(b, v, "wmrun_open_windows", 0);
  add_header(b, "wmrun_keys", "gauge", "Keys a keyed operator holds (with state or timers).");
  add_held(b, v, "wmrun_keys", 1);
  add_header(b, "wmrun_keys_expired_total", "counter",
             "Keys whose state a keyed operator's state_ttl dropped.");
  add_held(b, v, "wmrun_keys_expired_total", 2);
  add_inputs(b, v);
  add_header(b, "wmrun_source_lag_records", "gauge",
             "Records a partition of a Kafka or NATS source holds past the source's position "
             "(Kafka: the high watermark of the last fetch minus the next offset to read; NATS: "
             "the pending count of the last message read); no sample until known.");
  EACH_OP(v, t, o) {
    for (size_t i = o->lag0; i < o->lag0 + o->nlag; i++) {
      const wm_msnap_lag *lg = &v->s[t].lags[i];
      if (lg->records < 0) continue;
      add_series(b, v, t, o, "wmrun_source_lag_records", "partition", v->s[t].names.data + lg->part);
      wm_buf_add_int(b, lg->records);
      wm_buf_addc(b, '\n');
    }
  }
  if (ck) add_checkpoints(b, ck);
}

void wm_mboard_format(wm_buf *out, wm_mboard *b, int64_t now) {
  wm_mboard_ckpt ck;
  if (b->ck_get) b->ck_get(b->ck_ud, &ck);
  uv_mutex_lock(&b->mu);
  view v = {b->front, b->n, b->n > 1};
  format_view(out, &v, b->ck_get ? &ck : NULL, now);
  uv_mutex_unlock(&b->mu);
}

void wm_metrics_format(wm_buf *out, const wm_ctx *ctx, int64_t now) {
  snap s;
  memset(&s, 0, sizeof s);
  wm_buf_init(&s.names);
  if (snap_take(&s, ctx) != 0) {
    out->oom = 1;
  } else {
    view v = {&s, 1, 0};
    format_view(out, &v, NULL, now);
  }
  snap_free(&s);
}
