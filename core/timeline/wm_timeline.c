#include "timeline/wm_timeline.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/wm_observe.h"
#include "time/wm_time.h"
#include "ops/wm_tsop.h"
#include "time/wm_window.h"

#define LEGEND_KEYS 10 /* keys with their own colour; the rest are "other keys" */
#define KEY_OTHER LEGEND_KEYS
#define KEY_NONE (-1)
#define KEY_TEXT 48
#define MAX_SERIES 32

enum { MK_FIRE = 0, MK_LATE_FIRE = 1, MK_CLEANUP = 2 };

typedef struct tl_step {
  uint64_t x;
  int64_t t, v;
} tl_step;

typedef struct tl_series {
  char *name;
  const wm_op *op; /* while attached; NULL after */
  int window;      /* 1: combined input of a window operator; 0: an assigner */
  tl_step *p;
  size_t n, cap;
  uint64_t bucket; /* steps in one x bucket of this width are merged */
  uint64_t steps;  /* every advance, thinned or not */
} tl_series;

typedef struct tl_rec {
  uint64_t x;
  int64_t t, ts;
  int16_t key;
  uint8_t late;
} tl_rec;

typedef struct tl_late {
  uint64_t x;
  int64_t t, ts, wm, lateness;
  int16_t key, series;
  uint8_t side;
  const char *tag; /* interned in the recorder */
} tl_late;

typedef struct tl_mark {
  uint64_t x;
  int64_t t, wm;
  wm_window w;
  uint32_t count;
  int16_t series, key;
  uint8_t kind;
} tl_mark;

typedef struct tl_win {
  wm_window w;
  uint64_t x0, x1;
  int64_t t0, t1;
  int16_t series;
  uint8_t used, cleaned, fired, opened;
} tl_win;

/* A thinned list: an item with counter value c is kept when c % stride == 0. */
typedef struct tl_list {
  void *a;
  size_t n, cap, limit, size;
  uint64_t stride, seen;
} tl_list;

struct wm_timeline {
  char *title;
  wm_timeline_limits lim;
  wm_ctx *ctx;
  wm_trace_fn prev_trace;
  void *prev_trace_ud;
  uint64_t nrec;        /* records seen at assigners */
  uint64_t cur_x;       /* x of the latest record */
  int64_t cur_t;
  int64_t max_seen;     /* highest record timestamp so far */
  int64_t last_ts;      /* the latest record: its timestamp, whether its key is known */
  int last_keyed;
  size_t last_at;       /* its index in recs, or SIZE_MAX when not kept */
  tl_list recs, lates, marks;
  tl_series series[MAX_SERIES];
  int nseries;
  tl_win *wins;
  size_t capwins, nwins;
  uint64_t win_stride; /* a window is drawn when hash % win_stride == 0 */
  char keys[LEGEND_KEYS][KEY_TEXT];
  int nkeys, other_keys;
  char *tags[8];
  int ntags;
  wm_timeline_stats st;
  double delay_sum;
};

/* ---- recording ------------------------------------------------------------------------ */

static void list_init(tl_list *l, size_t size, size_t limit) {
  memset(l, 0, sizeof *l);
  l->size = size;
  l->limit = limit;
  l->stride = 1;
}

static void key_text(const wm_value *k, char *out, size_t n) {
  switch (k->type) {
  case WM_BOOL: snprintf(out, n, "%s", k->u.b ? "true" : "false"); break;
  case WM_INT: snprintf(out, n, "%" PRId64, k->u.i); break;
  case WM_FLOAT: snprintf(out, n, "%.14g", k->u.f); break;
  case WM_CSTR: snprintf(out, n, "%.*s", (int)(k->len < n ? k->len : n - 1), k->u.cs); break;
  case WM_STR:
    if (k->flags & WM_VF_COMPOSITE) {
      size_t at = 0;
      out[0] = '\0';
      for (size_t i = 0; at + 1 < n; i++) {
        wm_value part;
        if (wm_key_part(k, i, &part) < 0 || part.type == WM_STR) break;
        char one[KEY_TEXT];
        key_text(&part, one, sizeof one);
        at += (size_t)snprintf(out + at, n - at, "%s%s", i ? "," : "", one);
        if (at >= n) break;
      }
    } else {
      snprintf(out, n, "%.*s", (int)(k->u.s->len < n ? k->u.s->len : n - 1), k->u.s->data);
    }
    break;
  default: snprintf(out, n, "?");
  }
}

static int16_t key_id(wm_timeline *tl, const wm_value *k) {
  if (!k) return KEY_NONE;
  char text[KEY_TEXT];
  key_text(k, text, sizeof text);
  for (int i = 0; i < tl->nkeys; i++)
    if (strcmp(tl->keys[i], text) == 0) return (int16_t)i;
  if (tl->nkeys < LEGEND_KEYS) {
    memcpy(tl->keys[tl->nkeys], text, sizeof text);
    return (int16_t)tl->nkeys++;
  }
  tl->other_keys = 1;
  return KEY_OTHER;
}

static const char *intern_tag(wm_timeline *tl, const char *tag) {
  if (!tag) return NULL;
  for (int i = 0; i < tl->ntags; i++)
    if (strcmp(tl->tags[i], tag) == 0) return tl->tags[i];
  if (tl->ntags == (int)(sizeof tl->tags / sizeof tl->tags[0])) return "(side output)";
  char *c = strdup(tag);
  if (!c) {
    tl->st.oom = 1;
    return "(side output)";
  }
  return tl->tags[tl->ntags++] = c;
}

static int is_window_op(const wm_op *op) { return strcmp(op->vt->kind, "window") == 0; }

static int series_of(wm_timeline *tl, const wm_op *op, int window) {
  for (int i = 0; i < tl->nseries; i++)
    if (tl->series[i].op == op && tl->series[i].window == window) return i;
  if (tl->nseries == MAX_SERIES) return -1;
  tl_series *s = &tl->series[tl->nseries];
  memset(s, 0, sizeof *s);
  int same = 0;
  for (int i = 0; i < tl->nseries; i++)
    if (strcmp(tl->series[i].name, op->name) == 0) same++;
  size_t n = strlen(op->name) + 16;
  s->name = malloc(n);
  if (!s->name) {
    tl->st.oom = 1;
    return -1;
  }
  if (same) snprintf(s->name, n, "%s #%d", op->name, same + 1);
  else snprintf(s->name, n, "%s", op->name);
  s->op = op;
  s->window = window;
  s->bucket = 1;
  return tl->nseries++;
}

static int64_t now_of(const wm_op *op) { return op->ctx->now(op->ctx->now_ud); }

static void add_step(wm_timeline *tl, int si, uint64_t x, int64_t t, int64_t v) {
  tl_series *s = &tl->series[si];
  s->steps++;
  /* merge into the previous step when both fall into one bucket */
  if (s->n > 0 && s->p[s->n - 1].x / s->bucket == x / s->bucket) {
    s->p[s->n - 1].v = v;
    s->p[s->n - 1].t = t;
    return;
  }
  while (s->n >= tl->lim.steps) { /* until merging buckets made room */
    s->bucket *= 2;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
      if (k > 0 && s->p[k - 1].x / s->bucket == s->p[i].x / s->bucket) {
        s->p[k - 1].v = s->p[i].v;
        s->p[k - 1].t = s->p[i].t;
      } else {
        s->p[k++] = s->p[i];
      }
    }
    s->n = k;
  }
  if (s->n > 0 && s->p[s->n - 1].x / s->bucket == x / s->bucket) {
    s->p[s->n - 1].v = v;
    s->p[s->n - 1].t = t;
    return;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    if (cap > tl->lim.steps) cap = tl->lim.steps;
    tl_step *p = realloc(s->p, cap * sizeof *p);
    if (!p) {
      tl->st.oom = 1;
      return;
    }
    s->p = p;
    s->cap = cap;
  }
  s->p[s->n++] = (tl_step){x, t, v};
}

static void tl_trace(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                     const char *status) {
  wm_timeline *tl = ud;
  if (!status) {
    int si = -1;
    if (chan < 0 && wm_op_is_tsop(op)) si = series_of(tl, op, 0);
    else if (chan >= 0 && is_window_op(op)) si = series_of(tl, op, 1);
    if (si >= 0) {
      uint64_t x = new_wm == WM_TIME_MAX ? tl->nrec : tl->cur_x;
      add_step(tl, si, x, now_of(op), new_wm);
    }
  }
  if (tl->prev_trace) tl->prev_trace(tl->prev_trace_ud, op, chan, old_wm, new_wm, status);
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

static uint64_t win_hash(int si, wm_window w) {
  return mix64((uint64_t)w.start * 0x9e3779b97f4a7c15ULL ^ mix64((uint64_t)w.stop) ^
               (uint64_t)si);
}

static void wins_rehash(wm_timeline *tl, size_t cap);

/* The band of (series, window), or NULL when it is not drawn (thinned or no room). */
static tl_win *win_get(wm_timeline *tl, int si, wm_window w, int create) {
  uint64_t h = win_hash(si, w);
  if ((h >> 8) % tl->win_stride != 0) return NULL;
  if (tl->capwins == 0) {
    if (!create) return NULL;
    wins_rehash(tl, 64);
    if (tl->capwins == 0) return NULL;
  }
  size_t mask = tl->capwins - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    tl_win *e = &tl->wins[i];
    if (!e->used) {
      if (!create) return NULL;
      if (tl->nwins >= tl->lim.windows) { /* thin: keep half of the windows */
        tl->win_stride *= 2;
        for (size_t k = 0; k < tl->capwins; k++)
          if (tl->wins[k].used && (win_hash(tl->wins[k].series, tl->wins[k].w) >> 8) %
                                          tl->win_stride != 0)
            tl->wins[k].used = 2; /* dropped: removed by the rehash */
        size_t before = tl->nwins;
        wins_rehash(tl, tl->capwins);
        if (tl->st.oom && tl->nwins == before) return NULL;
        return win_get(tl, si, w, create);
      }
      if ((tl->nwins + 1) * 2 > tl->capwins) {
        size_t cap = tl->capwins;
        wins_rehash(tl, cap * 2);
        if (tl->capwins == cap) return NULL; /* out of memory */
        return win_get(tl, si, w, create);
      }
      memset(e, 0, sizeof *e);
      e->used = 1;
      e->w = w;
      e->series = (int16_t)si;
      tl->nwins++;
      return e;
    }
    if (e->used == 1 && e->series == si && e->w.start == w.start && e->w.stop == w.stop)
      return e;
  }
}

static void wins_rehash(wm_timeline *tl, size_t cap) {
  tl_win *n = calloc(cap, sizeof *n);
  if (!n) {
    tl->st.oom = 1;
    return;
  }
  size_t mask = cap - 1, count = 0;
  for (size_t k = 0; k < tl->capwins; k++) {
    tl_win *e = &tl->wins[k];
    if (e->used != 1) continue;
    size_t i = win_hash(e->series, e->w) & mask;
    while (n[i].used) i = (i + 1) & mask;
    n[i] = *e;
    count++;
  }
  free(tl->wins);
  tl->wins = n;
  tl->capwins = cap;
  tl->nwins = count;
}

static void *list_push(wm_timeline *tl, tl_list *l);

static void on_record(wm_timeline *tl, const wm_op *op, const wm_obs *ev) {
  uint64_t x = tl->nrec++;
  tl->cur_x = x;
  tl->cur_t = now_of(op);
  tl->st.records++;
  if (ev->ts > tl->max_seen) tl->max_seen = ev->ts;
  tl->last_ts = ev->ts;
  tl->last_keyed = 0;
  tl_rec *r = list_push(tl, &tl->recs);
  tl->last_at = r ? (size_t)(r - (tl_rec *)tl->recs.a) : SIZE_MAX;
  if (r) *r = (tl_rec){x, tl->cur_t, ev->ts, KEY_NONE, 0};
}

/* The latest record gets its key from the first window operator that sees it. */
static int16_t key_of_last(wm_timeline *tl, const wm_obs *ev) {
  int16_t k = key_id(tl, ev->key);
  if (!tl->last_keyed && ev->ts == tl->last_ts) {
    tl->last_keyed = 1;
    if (tl->last_at != SIZE_MAX) ((tl_rec *)tl->recs.a)[tl->last_at].key = k;
  }
  return k;
}

/* Room for the next item of a thinned list: a pointer to fill, or NULL when the item is
 * thinned out (or memory ran out: st.oom is set). Items are numbered 0, 1, 2, ...; the
 * list keeps those whose number is a multiple of the stride, and when it is full the
 * stride doubles and every other kept item goes. */
static void *list_push(wm_timeline *tl, tl_list *l) {
  uint64_t c = l->seen++;
  if (c % l->stride != 0) return NULL;
  if (l->n == l->limit) { /* thin by position: keep every other item */
    l->stride *= 2;
    size_t k = 0;
    for (size_t i = 0; i < l->n; i += 2, k++)
      if (k != i) memcpy((char *)l->a + k * l->size, (char *)l->a + i * l->size, l->size);
    l->n = k;
    if (c % l->stride != 0) return NULL;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    if (cap > l->limit) cap = l->limit;
    void *a = realloc(l->a, cap * l->size);
    if (!a) {
      tl->st.oom = 1;
      return NULL;
    }
    l->a = a;
    l->cap = cap;
  }
  return (char *)l->a + l->n++ * l->size;
}

static void on_window(wm_timeline *tl, const wm_op *op, const wm_obs *ev) {
  key_of_last(tl, ev);
  if (!ev->flag) return;
  int si = series_of(tl, op, 1);
  if (si < 0 || ev->window.start == WM_TIME_MIN) return; /* a global window has no band */
  tl_win *b = win_get(tl, si, ev->window, 1);
  if (b && !b->opened) {
    b->opened = 1;
    b->x0 = tl->cur_x;
    b->t0 = tl->cur_t;
  }
}

static void on_mark(wm_timeline *tl, const wm_op *op, const wm_obs *ev, int kind) {
  int si = series_of(tl, op, 1);
  if (si < 0) return;
  uint64_t x = ev->watermark == WM_TIME_MAX ? tl->nrec : tl->cur_x;
  int64_t t = now_of(op);
  int16_t key = key_id(tl, ev->key);
  if (kind == MK_CLEANUP) tl->st.cleanups++;
  else {
    tl->st.firings++;
    if (kind == MK_LATE_FIRE) tl->st.late_firings++;
    int64_t mts = wm_window_max_ts(ev->window);
    if (kind == MK_FIRE && ev->watermark != WM_TIME_MAX && ev->window.stop != WM_TIME_MAX &&
        tl->max_seen != WM_TIME_MIN) {
      tl->delay_sum += (double)tl->max_seen - (double)mts;
      tl->st.delay_samples++;
    }
  }
  if (ev->window.start != WM_TIME_MIN) {
    tl_win *b = win_get(tl, si, ev->window, 1);
    if (b && !b->opened) {
      b->opened = 1;
      b->x0 = x;
      b->t0 = t;
    }
    if (b) {
      if (kind == MK_CLEANUP) {
        b->cleaned = 1;
        b->x1 = x;
        b->t1 = t;
      } else {
        b->fired = 1;
      }
    }
  }
  /* the keys of one window firing at one watermark make one mark */
  tl_list *l = &tl->marks;
  if (l->n > 0) {
    tl_mark *m = &((tl_mark *)l->a)[l->n - 1];
    if (m->x == x && m->kind == kind && m->series == si && m->w.start == ev->window.start &&
        m->w.stop == ev->window.stop) {
      m->count++;
      if (m->key != key) m->key = KEY_NONE;
      return;
    }
  }
  tl_mark *m = list_push(tl, l);
  if (m) *m = (tl_mark){x, t, ev->watermark, ev->window, 1, (int16_t)si, key, (uint8_t)kind};
}

static void on_late(wm_timeline *tl, const wm_op *op, const wm_obs *ev) {
  int16_t key = key_of_last(tl, ev);
  int si = series_of(tl, op, 1);
  if (ev->flag) tl->st.late_side++;
  else tl->st.late_dropped++;
  int is_last = ev->ts == tl->last_ts;
  if (is_last && tl->last_at != SIZE_MAX) ((tl_rec *)tl->recs.a)[tl->last_at].late = 1;
  tl_late *r = list_push(tl, &tl->lates);
  if (r)
    *r = (tl_late){tl->cur_x, tl->cur_t, ev->ts, ev->watermark, ev->lateness, key,
                   (int16_t)si, (uint8_t)ev->flag, intern_tag(tl, ev->tag)};
}

static void tl_observe(void *ud, const wm_op *op, const wm_obs *ev) {
  wm_timeline *tl = ud;
  switch (ev->kind) {
  case WM_OBS_RECORD: on_record(tl, op, ev); break;
  case WM_OBS_WINDOW: on_window(tl, op, ev); break;
  case WM_OBS_FIRE: on_mark(tl, op, ev, ev->flag ? MK_LATE_FIRE : MK_FIRE); break;
  case WM_OBS_CLEANUP: on_mark(tl, op, ev, MK_CLEANUP); break;
  case WM_OBS_LATE: on_late(tl, op, ev); break;
  default: break;
  }
}

wm_timeline *wm_timeline_new(const char *title) {
  wm_timeline *tl = calloc(1, sizeof *tl);
  if (!tl) return NULL;
  tl->title = strdup(title ? title : "");
  if (!tl->title) {
    free(tl);
    return NULL;
  }
  wm_timeline_set_limits(tl, &(wm_timeline_limits){0, 0, 0, 0, 0});
  tl->max_seen = WM_TIME_MIN;
  tl->last_at = SIZE_MAX;
  tl->win_stride = 1;
  return tl;
}

void wm_timeline_set_limits(wm_timeline *tl, const wm_timeline_limits *lim) {
  tl->lim.records = lim->records ? lim->records : 15000;
  tl->lim.late = lim->late ? lim->late : 5000;
  tl->lim.marks = lim->marks ? lim->marks : 6000;
  tl->lim.windows = lim->windows ? lim->windows : 2500;
  tl->lim.steps = lim->steps ? lim->steps : 3000;
  list_init(&tl->recs, sizeof(tl_rec), tl->lim.records);
  list_init(&tl->lates, sizeof(tl_late), tl->lim.late);
  list_init(&tl->marks, sizeof(tl_mark), tl->lim.marks);
}

void wm_timeline_free(wm_timeline *tl) {
  if (!tl) return;
  free(tl->recs.a);
  free(tl->lates.a);
  free(tl->marks.a);
  for (int i = 0; i < tl->nseries; i++) {
    free(tl->series[i].name);
    free(tl->series[i].p);
  }
  for (int i = 0; i < tl->ntags; i++) free(tl->tags[i]);
  free(tl->wins);
  free(tl->title);
  free(tl);
}

void wm_timeline_attach(wm_timeline *tl, wm_ctx *ctx) {
  tl->ctx = ctx;
  tl->prev_trace = ctx->trace;
  tl->prev_trace_ud = ctx->trace_ud;
  ctx->trace = tl_trace;
  ctx->trace_ud = tl;
  ctx->observe = tl_observe;
  ctx->observe_ud = tl;
}

void wm_timeline_detach(wm_timeline *tl, wm_ctx *ctx) {
  if (ctx->observe_ud == tl) {
    ctx->observe = NULL;
    ctx->observe_ud = NULL;
  }
  if (ctx->trace_ud == tl) {
    ctx->trace = tl->prev_trace;
    ctx->trace_ud = tl->prev_trace_ud;
  }
  /* operators die with the context: the series keep only their names */
  for (int i = 0; i < tl->nseries; i++) tl->series[i].op = NULL;
  tl->ctx = NULL;
}

void wm_timeline_stats_get(const wm_timeline *tl, wm_timeline_stats *st) {
  *st = tl->st;
  st->records_shown = 0;
  for (size_t i = 0; i < tl->recs.n; i++)
    if (!((const tl_rec *)tl->recs.a)[i].late) st->records_shown++;
  st->mean_firing_delay = st->delay_samples ? tl->delay_sum / (double)st->delay_samples : 0;
}

/* ---- the picture ---------------------------------------------------------------------- */

#define PIC_W 1400.0
#define PAN_L 96.0  /* left margin: the event-time axis */
#define PAN_R 270.0 /* right margin: the legend */
#define PAN_T 58.0  /* title and counts */
#define PAN_B 44.0  /* the x axis */

static const char *const key_colours[LEGEND_KEYS] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
    "#edc948", "#9c755f", "#17becf", "#bcbd22", "#1f3b73"};
static const char *const line_colours[] = {"#1f5fbf", "#7b3fa0", "#0b8a7a", "#b8860b",
                                           "#444444", "#8b4513"};

typedef struct plot {
  double L, T, W, H;   /* the plot area */
  double x0, x1;       /* x range (record index or processing time) */
  double y0, y1;       /* event-time range */
  int xmode, epoch;
} plot;

static double px(const plot *p, uint64_t x, int64_t t) {
  double v = p->xmode == WM_TL_X_TIME ? (double)t : (double)x;
  double r = p->L + (v - p->x0) / (p->x1 - p->x0) * p->W;
  if (r < p->L) r = p->L;
  if (r > p->L + p->W) r = p->L + p->W;
  return r;
}

static double py(const plot *p, int64_t v) {
  if (v == WM_TIME_MAX) return p->T;
  if (v == WM_TIME_MIN) return p->T + p->H;
  double r = p->T + p->H - ((double)v - p->y0) / (p->y1 - p->y0) * p->H;
  if (r < p->T) r = p->T;
  if (r > p->T + p->H) r = p->T + p->H;
  return r;
}

static void esc(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t') fputc(*s, f);
    }
  }
}

/* An event time as text: raw ms, with the UTC time of day for epoch-like values. */
static void fmt_ts(char *b, size_t n, int64_t v, int epoch) {
  if (v == WM_TIME_MAX) {
    snprintf(b, n, "MAX (end of input)");
    return;
  }
  if (v == WM_TIME_MIN) {
    snprintf(b, n, "MIN");
    return;
  }
  if (epoch) {
    time_t s = (time_t)(v >= 0 ? v / 1000 : (v - 999) / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(b, n, "%" PRId64 " (%02d:%02d:%02d.%03d UTC)", v, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(v - (int64_t)s * 1000));
  } else {
    snprintf(b, n, "%" PRId64, v);
  }
}

static void fmt_win(char *b, size_t n, wm_window w, int epoch) {
  if (w.start == WM_TIME_MIN) {
    snprintf(b, n, "global window");
    return;
  }
  char s[64], e[64];
  fmt_ts(s, sizeof s, w.start, epoch);
  fmt_ts(e, sizeof e, w.stop, epoch);
  snprintf(b, n, "window [%s, %s)", s, e);
}

static double nice_step(double range, int ticks) {
  double raw = range / ticks;
  if (raw <= 0) return 1;
  double mag = pow(10, floor(log10(raw)));
  double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void tick_label(char *b, size_t n, double v, double step, int epoch) {
  if (fabs(v) < 0.5) v = 0; /* no "-0" */
  int64_t i = (int64_t)llround(v);
  if (epoch) {
    time_t s = (time_t)(i >= 0 ? i / 1000 : (i - 999) / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    if (step < 1000)
      snprintf(b, n, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
               (int)(i - (int64_t)s * 1000));
    else
      snprintf(b, n, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
  } else if (step >= 1000 && fmod(step, 1000) == 0) {
    snprintf(b, n, "%g s", v / 1000);
  } else {
    snprintf(b, n, "%g ms", v);
  }
}

static void range_y(double *lo, double *hi, int64_t v) {
  if (v == WM_TIME_MIN || v == WM_TIME_MAX) return;
  if ((double)v < *lo) *lo = (double)v;
  if ((double)v > *hi) *hi = (double)v;
}

static void range_x(double *lo, double *hi, int xmode, uint64_t x, int64_t t) {
  double v = xmode == WM_TL_X_TIME ? (double)t : (double)x;
  if (v < *lo) *lo = v;
  if (v > *hi) *hi = v;
}

/* The scales shared by every panel. */
static void scales(wm_timeline *const *tls, int n, int xmode, plot *p) {
  double ylo = HUGE_VAL, yhi = -HUGE_VAL, xlo = HUGE_VAL, xhi = -HUGE_VAL;
  for (int k = 0; k < n; k++) {
    const wm_timeline *tl = tls[k];
    const tl_rec *r = tl->recs.a;
    for (size_t i = 0; i < tl->recs.n; i++) {
      range_y(&ylo, &yhi, r[i].ts);
      range_x(&xlo, &xhi, xmode, r[i].x, r[i].t);
    }
    const tl_late *l = tl->lates.a;
    for (size_t i = 0; i < tl->lates.n; i++) {
      range_y(&ylo, &yhi, l[i].ts);
      range_x(&xlo, &xhi, xmode, l[i].x, l[i].t);
    }
    const tl_mark *m = tl->marks.a;
    for (size_t i = 0; i < tl->marks.n; i++) {
      if (m[i].w.start != WM_TIME_MIN) {
        range_y(&ylo, &yhi, m[i].w.start);
        range_y(&ylo, &yhi, m[i].w.stop);
      }
      range_x(&xlo, &xhi, xmode, m[i].x, m[i].t);
    }
    for (size_t i = 0; i < tl->capwins; i++) {
      if (tl->wins[i].used != 1) continue;
      range_y(&ylo, &yhi, tl->wins[i].w.start);
      range_y(&ylo, &yhi, tl->wins[i].w.stop);
    }
    for (int s = 0; s < tl->nseries; s++)
      for (size_t i = 0; i < tl->series[s].n; i++) {
        range_y(&ylo, &yhi, tl->series[s].p[i].v);
        range_x(&xlo, &xhi, xmode, tl->series[s].p[i].x, tl->series[s].p[i].t);
      }
    if (xmode == WM_TL_X_ORDER) range_x(&xlo, &xhi, xmode, tl->nrec, 0);
  }
  if (ylo > yhi) ylo = 0, yhi = 1000;
  if (xlo > xhi) xlo = 0, xhi = 1;
  if (xmode == WM_TL_X_ORDER) xlo = 0;
  if (yhi - ylo < 1) yhi = ylo + 1;
  if (xhi - xlo < 1) xhi = xlo + 1;
  double pad = (yhi - ylo) * 0.04;
  p->y0 = ylo - pad;
  p->y1 = yhi + pad;
  double xpad = (xhi - xlo) * 0.015;
  p->x0 = xlo - xpad;
  p->x1 = xhi + xpad;
  p->xmode = xmode;
  p->epoch = fabs(ylo) >= 1e11;
}

static void axes(FILE *f, const plot *p) {
  fprintf(f, "<g class=\"axes\">\n<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
             "height=\"%.1f\"/>\n", p->L, p->T, p->W, p->H);
  double step = nice_step(p->y1 - p->y0, 8);
  for (double v = ceil(p->y0 / step) * step; v <= p->y1; v += step) {
    double y = py(p, (int64_t)llround(v));
    char b[64];
    tick_label(b, sizeof b, v, step, p->epoch);
    fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            p->L, y, p->L + p->W, y, p->L - 6, y + 4, b);
  }
  double xs = nice_step(p->x1 - p->x0, 10);
  if (p->xmode == WM_TL_X_ORDER && xs < 1) xs = 1;
  for (double v = ceil(p->x0 / xs) * xs; v <= p->x1; v += xs) {
    double x = p->L + (v - p->x0) / (p->x1 - p->x0) * p->W;
    char b[64];
    if (p->xmode == WM_TL_X_ORDER) snprintf(b, sizeof b, "%.0f", fabs(v) < 0.5 ? 0.0 : v);
    else tick_label(b, sizeof b, v - p->x0, xs, 0);
    fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            x, p->T, x, p->T + p->H, x, p->T + p->H + 16, b);
  }
  fprintf(f, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
          p->L + p->W / 2, p->T + p->H + 34,
          p->xmode == WM_TL_X_ORDER ? "arrival order of the records at the assigners"
                                    : "processing time since the first event");
  fprintf(f, "<text class=\"axis\" transform=\"translate(%.1f %.1f) rotate(-90)\" "
             "text-anchor=\"middle\">event time%s</text>\n</g>\n",
          p->L - 80, p->T + p->H / 2, p->epoch ? " (UTC)" : "");
}

static const char *key_class(int16_t k, char *b, size_t n) {
  if (k == KEY_NONE) return "kn";
  if (k == KEY_OTHER) return "ko";
  snprintf(b, n, "k%d", (int)k);
  return b;
}

static void panel(FILE *f, const wm_timeline *tl, const plot *p, double top) {
  wm_timeline_stats st;
  wm_timeline_stats_get(tl, &st);
  fprintf(f, "<g class=\"panel\" data-title=\"");
  esc(f, tl->title);
  fprintf(f, "\" data-records=\"%" PRIu64 "\" data-late=\"%" PRIu64 "\" data-firings=\"%" PRIu64
             "\" data-late-firings=\"%" PRIu64 "\" data-mean-firing-delay=\"%.1f\">\n",
          st.records, st.late_dropped + st.late_side, st.firings, st.late_firings,
          st.mean_firing_delay);
  fprintf(f, "<text class=\"title\" x=\"%.1f\" y=\"%.1f\">", p->L, top + 22);
  esc(f, tl->title);
  fprintf(f, "</text>\n<text class=\"stats\" x=\"%.1f\" y=\"%.1f\">%" PRIu64 " records",
          p->L, top + 42, st.records);
  if (st.records_shown + tl->lates.n < st.records)
    fprintf(f, " (%" PRIu64 " drawn)", st.records_shown + (uint64_t)tl->lates.n);
  fprintf(f, " · <tspan class=\"bad\">%" PRIu64 " late records</tspan> (%" PRIu64 " dropped, %"
             PRIu64 " to a side output)", st.late_dropped + st.late_side, st.late_dropped,
          st.late_side);
  if (tl->lates.n < st.late_dropped + st.late_side) fprintf(f, " (%zu drawn)", tl->lates.n);
  fprintf(f, " · %" PRIu64 " firings, %" PRIu64 " of them late · mean firing delay ",
          st.firings, st.late_firings);
  if (st.delay_samples) fprintf(f, "%.0f ms", st.mean_firing_delay);
  else fprintf(f, "-");
  if (st.oom) fprintf(f, " · OUT OF MEMORY: partial picture");
  fprintf(f, "</text>\n");
  axes(f, p);
  char b[160], c[160], kb[8];
  /* window bands */
  fprintf(f, "<g class=\"bands\">\n");
  double right = p->L + p->W;
  for (size_t i = 0; i < tl->capwins; i++) {
    const tl_win *w = &tl->wins[i];
    if (w->used != 1) continue;
    double x0 = px(p, w->x0, w->t0), x1 = w->cleaned ? px(p, w->x1, w->t1) : right;
    double y0 = py(p, w->w.stop), y1 = py(p, w->w.start);
    if (x1 - x0 < 2) x1 = x0 + 2;
    fmt_win(b, sizeof b, w->w, p->epoch && tl->nwins <= 300);
    fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
               "<title>%s of ", x0, y0, x1 - x0, y1 - y0, b);
    esc(f, tl->series[w->series].name);
    if (w->cleaned)
      fprintf(f, ": from record #%" PRIu64 " until its cleanup at #%" PRIu64 "</title></rect>\n",
              w->x0, w->x1);
    else fprintf(f, ": from record #%" PRIu64 ", never cleaned up</title></rect>\n", w->x0);
  }
  fprintf(f, "</g>\n");
  /* records */
  const tl_rec *r = tl->recs.a;
  int titles = tl->recs.n <= 3000;
  fprintf(f, "<g class=\"records\">\n");
  for (size_t i = 0; i < tl->recs.n; i++) {
    if (r[i].late) continue; /* drawn with the late records */
    fprintf(f, "<circle class=\"rec %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\"",
            key_class(r[i].key, kb, sizeof kb), px(p, r[i].x, r[i].t), py(p, r[i].ts),
            tl->recs.n <= 300 ? "3.4" : "2");
    if (titles) {
      fmt_ts(b, sizeof b, r[i].ts, p->epoch);
      fprintf(f, "><title>record #%" PRIu64 ": ts %s", r[i].x, b);
      if (r[i].key >= 0 && r[i].key < LEGEND_KEYS) {
        fprintf(f, ", key ");
        esc(f, tl->keys[r[i].key]);
      }
      fprintf(f, "</title></circle>\n");
    } else {
      fprintf(f, "/>\n");
    }
  }
  fprintf(f, "</g>\n");
  /* watermark lines */
  fprintf(f, "<g class=\"watermarks\">\n");
  for (int s = 0; s < tl->nseries; s++) {
    const tl_series *se = &tl->series[s];
    if (se->n == 0) continue;
    const char *col = line_colours[se->window ? 4 + s % 2 : s % 4];
    fprintf(f, "<path class=\"wm %s\" stroke=\"%s\" data-op=\"", se->window ? "window" : "assigner",
            col);
    esc(f, se->name);
    fprintf(f, "\" data-steps=\"%zu\" d=\"M%.1f %.1f", se->n, px(p, se->p[0].x, se->p[0].t),
            py(p, se->p[0].v));
    for (size_t i = 1; i < se->n; i++)
      fprintf(f, "H%.1fV%.1f", px(p, se->p[i].x, se->p[i].t), py(p, se->p[i].v));
    if (se->p[se->n - 1].v != WM_TIME_MAX) fprintf(f, "H%.1f", right);
    fprintf(f, "\"><title>%s watermark of ", se->window ? "combined input" : "generated");
    esc(f, se->name);
    fprintf(f, ": %" PRIu64 " advances", se->steps);
    fmt_ts(b, sizeof b, se->p[se->n - 1].v, p->epoch);
    fprintf(f, ", last %s</title></path>\n", b);
  }
  fprintf(f, "</g>\n");
  /* firings and cleanups */
  fprintf(f, "<g class=\"marks\">\n");
  const tl_mark *m = tl->marks.a;
  int terse = tl->marks.n > 500; /* big runs: shorter titles keep the page small */
  for (size_t i = 0; i < tl->marks.n; i++) {
    double x = px(p, m[i].x, m[i].t);
    double y = m[i].w.start == WM_TIME_MIN ? p->T : py(p, wm_window_max_ts(m[i].w));
    fmt_win(b, sizeof b, m[i].w, p->epoch && !terse);
    fmt_ts(c, sizeof c, m[i].wm, p->epoch && !terse);
    if (m[i].kind == MK_FIRE)
      fprintf(f, "<path class=\"fire ontime\" data-n=\"%u\" d=\"M%.1f %.1fl-5.5 -9h11z\">"
                 "<title>%s fired on time: the watermark reached %s", m[i].count, x, y, b, c);
    else if (m[i].kind == MK_LATE_FIRE)
      fprintf(f, "<path class=\"fire late\" data-n=\"%u\" d=\"M%.1f %.1fl6 6l-6 6l-6 -6z\">"
                 "<title>late firing of %s%s(watermark %s)", m[i].count, x, y - 6, b,
              terse ? " " : ": a late record arrived within the allowed lateness ", c);
    else
      fprintf(f, "<path class=\"cleanup\" data-n=\"%u\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\">"
                 "<title>%s cleaned up (state deleted) at watermark %s", m[i].count, x - 4,
              (m[i].w.start == WM_TIME_MIN ? p->T : py(p, m[i].w.start)) - 4, b, c);
    if (m[i].count > 1) fprintf(f, ", %u keys", m[i].count);
    else if (m[i].key >= 0 && m[i].key < LEGEND_KEYS) {
      fprintf(f, ", key ");
      esc(f, tl->keys[m[i].key]);
    }
    fprintf(f, "</title></path>\n");
  }
  fprintf(f, "</g>\n");
  /* late records */
  fprintf(f, "<g class=\"lates\">\n");
  const tl_late *l = tl->lates.a;
  terse = tl->lates.n > 300;
  for (size_t i = 0; i < tl->lates.n; i++) {
    fmt_ts(b, sizeof b, l[i].ts, p->epoch && !terse);
    fmt_ts(c, sizeof c, l[i].wm, p->epoch && !terse);
    fprintf(f, "<circle class=\"late %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\"><title>late record "
               "#%" PRIu64 ": ts %s", l[i].side ? "side" : "dropped", px(p, l[i].x, l[i].t),
            py(p, l[i].ts), l[i].x, b);
    if (l[i].key >= 0 && l[i].key < LEGEND_KEYS) {
      fprintf(f, ", key ");
      esc(f, tl->keys[l[i].key]);
    }
    if (terse) {
      fprintf(f, ": ts + %" PRId64 " &lt;= watermark %s. ", l[i].lateness, c);
    } else {
      fprintf(f, ". Reason: ts + allowed lateness (%" PRId64 " ms) &lt;= watermark %s of ",
              l[i].lateness, c);
      if (l[i].series >= 0) esc(f, tl->series[l[i].series].name);
      fprintf(f, ": every window it belongs to is already cleaned up. ");
    }
    if (l[i].side) {
      fprintf(f, "Sent to side output '");
      esc(f, l[i].tag ? l[i].tag : "");
      fprintf(f, "'.</title></circle>\n");
    } else {
      fprintf(f, "Dropped%s.</title></circle>\n", terse ? "" : " (counted in late_records_dropped)");
    }
  }
  fprintf(f, "</g>\n");
  /* legend */
  double lx = p->L + p->W + 22, ly = p->T + 6;
  fprintf(f, "<g class=\"legend\">\n");
  fprintf(f, "<text class=\"lh\" x=\"%.1f\" y=\"%.1f\">keys</text>\n", lx, ly);
  for (int k = 0; k < tl->nkeys + tl->other_keys; k++) {
    ly += 16;
    fprintf(f, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"/><text x=\"%.1f\" "
               "y=\"%.1f\">", key_class(k < tl->nkeys ? (int16_t)k : KEY_OTHER, kb, sizeof kb),
            lx + 5, ly - 4, lx + 15, ly);
    if (k < tl->nkeys) esc(f, tl->keys[k]);
    else fprintf(f, "other keys");
    fprintf(f, "</text>\n");
  }
  ly += 26;
  fprintf(f, "<text class=\"lh\" x=\"%.1f\" y=\"%.1f\">marks</text>\n", lx, ly);
  ly += 18;
  fprintf(f, "<circle class=\"late side\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\"/><text x=\"%.1f\" "
             "y=\"%.1f\">late record, to side output</text>\n", lx + 5, ly - 4, lx + 15, ly);
  ly += 18;
  fprintf(f, "<circle class=\"late dropped\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\"/><text x=\"%.1f\" "
             "y=\"%.1f\">late record, dropped</text>\n", lx + 5, ly - 4, lx + 15, ly);
  ly += 18;
  fprintf(f, "<path class=\"fire ontime\" d=\"M%.1f %.1fl-5.5 -9h11z\"/><text x=\"%.1f\" "
             "y=\"%.1f\">window fired (watermark)</text>\n", lx + 5, ly, lx + 15, ly);
  ly += 18;
  fprintf(f, "<path class=\"fire late\" d=\"M%.1f %.1fl6 6l-6 6l-6 -6z\"/><text x=\"%.1f\" "
             "y=\"%.1f\">late firing</text>\n", lx + 5, ly - 10, lx + 15, ly);
  ly += 18;
  fprintf(f, "<path class=\"cleanup\" d=\"M%.1f %.1fl8 8m0 -8l-8 8\"/><text x=\"%.1f\" "
             "y=\"%.1f\">window cleaned up</text>\n", lx + 1, ly - 8, lx + 15, ly);
  ly += 18;
  fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\"/><text "
             "x=\"%.1f\" y=\"%.1f\">window [start, end) while open</text>\n", lx, ly - 9,
          lx + 15, ly);
  ly += 26;
  fprintf(f, "<text class=\"lh\" x=\"%.1f\" y=\"%.1f\">watermarks</text>\n", lx, ly);
  for (int s = 0; s < tl->nseries; s++) {
    const tl_series *se = &tl->series[s];
    if (se->n == 0) continue;
    ly += 16;
    fprintf(f, "<path class=\"wm %s\" stroke=\"%s\" d=\"M%.1f %.1fh14\"/><text x=\"%.1f\" "
               "y=\"%.1f\">%s ", se->window ? "window" : "assigner",
            line_colours[se->window ? 4 + s % 2 : s % 4], lx, ly - 4, lx + 19, ly,
            se->window ? "window input:" : "assigner:");
    char name[24]; /* fits the legend's margin; the whole name is in the title (hover) */
    snprintf(name, sizeof name, "%s", se->name);
    if (strlen(se->name) >= sizeof name) memcpy(name + sizeof name - 4, "...", 4);
    esc(f, name);
    fprintf(f, "<title>");
    esc(f, se->name);
    fprintf(f, "</title>");
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</g>\n</g>\n");
}

static const char css[] =
    "text{font-family:sans-serif;font-size:12px;fill:#222}"
    ".title{font-size:15px;font-weight:bold}.stats{font-size:12.5px}.bad{fill:#c81e1e}"
    ".lh{font-weight:bold}.tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}"
    ".frame{fill:none;stroke:#999}.grid{stroke:#eee}"
    ".band{fill:#8a94a6;fill-opacity:.13;stroke:#8a94a6;stroke-opacity:.45}"
    ".rec{stroke:none}.kn{fill:#777}.ko{fill:#aaa}"
    ".wm{fill:none;stroke-width:1.6}.wm.assigner{stroke-dasharray:6 3;stroke-width:2}"
    ".fire.ontime{fill:#2a9d3a;stroke:#145a1e}.fire.late{fill:#f39c12;stroke:#9a5b00}"
    ".cleanup{fill:none;stroke:#555;stroke-width:1.6}"
    ".late.side{fill:#fff;stroke:#d62020;stroke-width:2.4}"
    ".late.dropped{fill:#d62020;stroke:#7a0000}";

int wm_timeline_write(FILE *f, wm_timeline *const *tls, int n, int xmode, int html, char *err,
                      size_t errlen) {
  if (n < 1) {
    snprintf(err, errlen, "nothing to draw");
    return -1;
  }
  plot p;
  scales(tls, n, xmode, &p);
  double ph = n == 1 ? 620 : 500, height = ph * n;
  if (html) {
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<title>wmrun timeline: ");
    esc(f, tls[0]->title);
    fprintf(f, "</title><style>body{margin:16px;background:#f6f6f6;font-family:sans-serif}"
               "svg{background:#fff;border:1px solid #ddd;max-width:100%%;height:auto}"
               "p{color:#444;font-size:13px}</style></head><body>\n");
  } else {
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\">\n<style>%s", PIC_W, height, PIC_W, height, css);
  for (int k = 0; k < LEGEND_KEYS; k++) fprintf(f, ".k%d{fill:%s}", k, key_colours[k]);
  fprintf(f, "</style>\n<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", PIC_W, height);
  for (int k = 0; k < n; k++) {
    plot q = p;
    double top = ph * k;
    q.L = PAN_L;
    q.T = top + PAN_T;
    q.W = PIC_W - PAN_L - PAN_R;
    q.H = ph - PAN_T - PAN_B - 8;
    panel(f, tls[k], &q, top);
  }
  fprintf(f, "</svg>\n");
  if (html)
    fprintf(f, "<p>Hover over a mark for details. x: %s; y: event time. Written by wmrun "
               "--timeline.</p>\n</body></html>\n",
            xmode == WM_TL_X_ORDER ? "arrival order" : "processing time");
  if (ferror(f)) {
    snprintf(err, errlen, "write error");
    return -1;
  }
  return 0;
}

int wm_timeline_save(const char *path, wm_timeline *const *tls, int n, int xmode, char *err,
                     size_t errlen) {
  size_t len = strlen(path);
  int html = (len >= 5 && strcmp(path + len - 5, ".html") == 0) ||
             (len >= 4 && strcmp(path + len - 4, ".htm") == 0);
  FILE *f = fopen(path, "w");
  if (!f) {
    snprintf(err, errlen, "cannot write the timeline '%s'", path);
    return -1;
  }
  char e2[200];
  int rc = wm_timeline_write(f, tls, n, xmode, html, e2, sizeof e2);
  if (fclose(f) != 0 && rc == 0) {
    snprintf(e2, sizeof e2, "write error");
    rc = -1;
  }
  if (rc != 0) snprintf(err, errlen, "timeline '%s': %s", path, e2);
  return rc;
}
