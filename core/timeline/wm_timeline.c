#include "timeline/wm_timeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "base/wm_hash.h"
#include "graph/wm_observe.h"
#include "time/wm_time.h"
#include "time/wm_window.h"

#define KEY_OTHER WM_TL_KEY_OTHER
#define KEY_NONE WM_TL_KEY_NONE
#define KEY_TEXT 48
/* open-addressing index of the key texts (> 2 * WM_TL_KEYS), FNV-1a of the text: fixed size,
 * never deleted from, int16 slots; the bands' table (wins) is keyed by (series, window, x),
 * not by a key: neither is ops/wm_keyidx.h's shape. Both hash with base/wm_hash.h. */
#define KEY_INDEX 128
#define MAX_SERIES 32

enum { MK_FIRE = WM_TL_FIRE, MK_LATE_FIRE = WM_TL_LATE_FIRE, MK_CLEANUP = WM_TL_CLEANUP };

typedef wm_timeline_step tl_step;
typedef wm_timeline_record tl_rec;
typedef wm_timeline_late tl_late;
typedef wm_timeline_mark tl_mark;
typedef wm_timeline_window tl_win;
typedef wm_timeline_ckpt tl_ckpt;

typedef struct tl_series {
  char *name;
  const wm_op *op; /* while attached; NULL after */
  int window;      /* 1: combined input of a window operator; 0: an assigner; 2, 3: input
                    * 1, 2 of a two-input operator */
  tl_step *p;
  size_t n, cap;
  uint64_t bucket; /* steps in one x bucket of this width are merged */
  uint64_t steps;  /* every advance, thinned or not */
} tl_series;

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
  wm_observe_fn prev_observe; /* an observer installed before (the JSON trace's records) */
  void *prev_observe_ud;
  uint64_t nrec;        /* records seen at assigners */
  uint64_t cur_x;       /* x of the latest record */
  int64_t cur_t;
  int64_t max_seen;     /* highest record timestamp so far */
  int64_t last_ts;      /* the latest record: its timestamp, whether its key is known */
  int last_keyed;
  size_t last_at;       /* its index in recs, or SIZE_MAX when not kept */
  tl_list recs, lates, marks, ckpts;
  tl_series series[MAX_SERIES];
  int nseries;
  tl_win *wins;
  size_t capwins, nwins;
  uint64_t win_stride; /* a window is drawn when hash % win_stride == 0 */
  char keys[WM_TL_KEYS][KEY_TEXT];
  int16_t key_index[KEY_INDEX]; /* key number + 1, 0 = empty */
  int nkeys, other_keys;
  char *tags[8];
  int ntags;
  wm_timeline_stats st;
  double delay_sum;
  tl_mark *firing;           /* the firing whose results are being emitted, or NULL */
  const wm_op *firing_op;
  wm_buf text;               /* a result as text */
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
  uint32_t h = wm_fnv1a32(text, strlen(text));
  for (size_t i = h % KEY_INDEX;; i = (i + 1) % KEY_INDEX) {
    int16_t e = tl->key_index[i];
    if (e == 0) {
      if (tl->nkeys == WM_TL_KEYS) break;
      memcpy(tl->keys[tl->nkeys], text, sizeof text);
      tl->key_index[i] = (int16_t)(tl->nkeys + 1);
      return (int16_t)tl->nkeys++;
    }
    if (strcmp(tl->keys[e - 1], text) == 0) return (int16_t)(e - 1);
  }
  tl->other_keys = 1;
  return KEY_OTHER;
}

static const char *intern_tag(wm_timeline *tl, const char *tag) {
  if (!tag) return NULL;
  if (tag[0] == '\1') tag++; /* wmrun's own port (wm_port.side): shown without the mark */
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
  size_t n = strlen(op->name) + 32;
  s->name = malloc(n);
  if (!s->name) {
    tl->st.oom = 1;
    return -1;
  }
  snprintf(s->name, n, "%s%s", op->name, window == 2 ? ", input 1" : window == 3 ? ", input 2" : "");
  int same = 0;
  for (int i = 0; i < tl->nseries; i++)
    if (strcmp(tl->series[i].name, s->name) == 0) same++;
  if (same) snprintf(s->name + strlen(s->name), n - strlen(s->name), " #%d", same + 1);
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
    if (chan < 0 && wm_op_wmsource(op)) si = series_of(tl, op, 0);
    else if (chan >= 0 && is_window_op(op)) si = series_of(tl, op, 1);
    if (si >= 0) {
      uint64_t x = new_wm == WM_TIME_MAX ? tl->nrec : tl->cur_x;
      add_step(tl, si, x, now_of(op), new_wm);
    }
  }
  /* a two-input operator: the own watermark of the channel's input, whether or not the
   * operator's moved ("input": the other input holds it back) */
  if (chan >= 0 && op->in2 != INT_MAX && (!status || strcmp(status, "input") == 0)) {
    bool idle;
    int k = wm_op_input_of(op, chan);
    int64_t v = wm_op_input_wm(op, k, &idle);
    int si = series_of(tl, op, 2 + k);
    if (si >= 0 && v != WM_TIME_MIN) add_step(tl, si, v == WM_TIME_MAX ? tl->nrec : tl->cur_x, now_of(op), v);
  }
  if (tl->prev_trace) tl->prev_trace(tl->prev_trace_ud, op, chan, old_wm, new_wm, status);
}

static uint64_t win_hash(int si, wm_window w) {
  return wm_mix64((uint64_t)w.start * WM_HASH_GOLDEN ^ wm_mix64((uint64_t)w.stop) ^
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

/* The next slot of a list that has room below its limit (grown as needed); NULL when out
 * of memory. */
static void *list_append(wm_timeline *tl, tl_list *l) {
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

static void on_record(wm_timeline *tl, const wm_op *op, const wm_obs *ev) {
  tl->firing = NULL;
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
  return list_append(tl, l);
}

/* Marks are thinned by moment and window, not by position: the firings of every key of a
 * window at one watermark stay together (thinning by position keeps every other one of
 * them, and then every other key's lane goes empty). */
static tl_mark *mark_push(wm_timeline *tl, int si, wm_window w, uint64_t x) {
  tl_list *l = &tl->marks;
  uint64_t h = wm_mix64(win_hash(si, w) ^ (x * WM_HASH_GOLDEN)) >> 8;
  l->seen++;
  if (h % l->stride != 0) return NULL;
  while (l->n == l->limit) { /* keep the marks of about half of the moments */
    if (l->stride > (UINT64_C(1) << 40)) return NULL;
    l->stride *= 2;
    tl_mark *a = l->a;
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++)
      if ((wm_mix64(win_hash(a[i].series, a[i].w) ^ (a[i].x * WM_HASH_GOLDEN)) >> 8) %
              l->stride == 0)
        a[k++] = a[i];
    l->n = k;
    if (h % l->stride != 0) return NULL;
  }
  return list_append(tl, l);
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
  tl->firing = NULL;
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
  tl_mark *m = mark_push(tl, si, ev->window, x);
  if (m) *m = (tl_mark){x, t, ev->watermark, ev->window, (int16_t)si, key, (uint8_t)kind, ""};
  tl->firing = kind == MK_CLEANUP ? NULL : m;
  tl->firing_op = op;
}

/* A result of the firing just observed (the window operator emits it on its main port). */
static void on_emit(wm_timeline *tl, const wm_op *op, const wm_obs *ev) {
  tl_mark *m = tl->firing;
  if (!m || op != tl->firing_op || ev->flag != 0) return;
  size_t at = strlen(m->value);
  if (at + 4 >= sizeof m->value) return; /* full: already cut */
  wm_buf_clear(&tl->text);
  wm_format_value(&tl->text, ev->value, 0, op->ctx->host.format, op->ctx->host.ud);
  if (tl->text.oom) tl->st.oom = 1;
  if (at) {
    memcpy(m->value + at, "; ", 3);
    at += 2;
  }
  size_t room = sizeof m->value - 1 - at, n = tl->text.len;
  if (n > room) n = room;
  if (n) memcpy(m->value + at, tl->text.data, n);
  m->value[at + n] = '\0';
  if (n < tl->text.len) memcpy(m->value + sizeof m->value - 4, "...", 4); /* cut: say so */
}

static void on_late(wm_timeline *tl, const wm_op *op, const wm_obs *ev) {
  int16_t key = key_of_last(tl, ev);
  /* a two-input operator's late record belongs to its input's line */
  int si = series_of(tl, op, op->in2 != INT_MAX && op->cur_in ? 1 + op->cur_in : 1);
  if (ev->flag) tl->st.late_side++;
  else tl->st.late_dropped++;
  int is_last = ev->ts == tl->last_ts;
  if (is_last && tl->last_at != SIZE_MAX) ((tl_rec *)tl->recs.a)[tl->last_at].late = 1;
  tl_late *r = list_push(tl, &tl->lates);
  if (r)
    *r = (tl_late){tl->cur_x, tl->cur_t, ev->ts, ev->watermark, ev->lateness, key,
                   (int16_t)si, (uint8_t)ev->flag, intern_tag(tl, ev->tag),
                   (uint8_t)(op->in2 != INT_MAX ? op->cur_in : 0)};
}

/* A checkpoint committed (op is NULL): x is the number of records seen before it. */
static void on_ckpt(wm_timeline *tl, const wm_obs *ev) {
  const wm_obs_ckpt *ck = ev->ckpt;
  tl->st.checkpoints++;
  tl_ckpt *c = list_push(tl, &tl->ckpts);
  int64_t t = tl->ctx ? tl->ctx->now(tl->ctx->now_ud) : tl->cur_t;
  if (c) *c = (tl_ckpt){tl->nrec, t, ck->id, ck->bytes, ck->ms, (uint8_t)(ck->final != 0)};
}

static void tl_observe(void *ud, const wm_op *op, const wm_obs *ev) {
  wm_timeline *tl = ud;
  switch (ev->kind) {
  case WM_OBS_RECORD: on_record(tl, op, ev); break;
  case WM_OBS_WINDOW: on_window(tl, op, ev); break;
  case WM_OBS_FIRE: on_mark(tl, op, ev, ev->flag ? MK_LATE_FIRE : MK_FIRE); break;
  case WM_OBS_CLEANUP: on_mark(tl, op, ev, MK_CLEANUP); break;
  case WM_OBS_LATE: on_late(tl, op, ev); break;
  case WM_OBS_EMIT: on_emit(tl, op, ev); break;
  case WM_OBS_CHECKPOINT: on_ckpt(tl, ev); break;
  default: break;
  }
  if (tl->prev_observe) tl->prev_observe(tl->prev_observe_ud, op, ev);
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
  wm_buf_init(&tl->text);
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
  list_init(&tl->ckpts, sizeof(tl_ckpt), tl->lim.late);
}

void wm_timeline_free(wm_timeline *tl) {
  if (!tl) return;
  free(tl->recs.a);
  free(tl->lates.a);
  free(tl->marks.a);
  free(tl->ckpts.a);
  for (int i = 0; i < tl->nseries; i++) {
    free(tl->series[i].name);
    free(tl->series[i].p);
  }
  for (int i = 0; i < tl->ntags; i++) free(tl->tags[i]);
  free(tl->wins);
  wm_buf_free(&tl->text);
  free(tl->title);
  free(tl);
}

void wm_timeline_attach(wm_timeline *tl, wm_ctx *ctx) {
  tl->ctx = ctx;
  tl->prev_trace = ctx->trace;
  tl->prev_trace_ud = ctx->trace_ud;
  ctx->trace = tl_trace;
  ctx->trace_ud = tl;
  tl->prev_observe = ctx->observe;
  tl->prev_observe_ud = ctx->observe_ud;
  ctx->observe = tl_observe;
  ctx->observe_ud = tl;
}

void wm_timeline_detach(wm_timeline *tl, wm_ctx *ctx) {
  if (ctx->observe_ud == tl) {
    ctx->observe = tl->prev_observe;
    ctx->observe_ud = tl->prev_observe_ud;
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

/* ---- reading -------------------------------------------------------------------------- */

const char *wm_timeline_title(const wm_timeline *tl) { return tl->title; }

uint64_t wm_timeline_arrivals(const wm_timeline *tl) { return tl->nrec; }

const wm_timeline_record *wm_timeline_records(const wm_timeline *tl, size_t *n) {
  *n = tl->recs.n;
  return tl->recs.a;
}

const wm_timeline_late *wm_timeline_lates(const wm_timeline *tl, size_t *n) {
  *n = tl->lates.n;
  return tl->lates.a;
}

const wm_timeline_mark *wm_timeline_marks(const wm_timeline *tl, size_t *n) {
  *n = tl->marks.n;
  return tl->marks.a;
}

const wm_timeline_ckpt *wm_timeline_ckpts(const wm_timeline *tl, size_t *n) {
  *n = tl->ckpts.n;
  return tl->ckpts.a;
}

const wm_timeline_window *wm_timeline_window_next(const wm_timeline *tl, size_t *it) {
  while (*it < tl->capwins) {
    const tl_win *w = &tl->wins[(*it)++];
    if (w->used == 1) return w;
  }
  return NULL;
}

int wm_timeline_nseries(const wm_timeline *tl) { return tl->nseries; }

void wm_timeline_series_get(const wm_timeline *tl, int i, wm_timeline_series *out) {
  const tl_series *s = &tl->series[i];
  *out = (wm_timeline_series){s->name, s->window, s->p, s->n, s->steps};
}

int wm_timeline_nkeys(const wm_timeline *tl, int *other) {
  if (other) *other = tl->other_keys;
  return tl->nkeys;
}

const char *wm_timeline_key(const wm_timeline *tl, int i) { return tl->keys[i]; }
