/* wm.lab's measures at the window operator (lwm_lab_measure.c), taken while h:replay
 * (lwm_replay.c) replays a data set: lateness, dropped records, the watermark's lag behind the
 * perfect one, the latency of first firings, the windows late records damaged, a sample of the
 * late records and the watermark curve; and the figures table h:replay returns. */
#ifndef LWM_LAB_MEASURE_H
#define LWM_LAB_MEASURE_H

#include "graph/wm_observe.h"
#include "lwm_harness.h"

typedef struct lat_ent { /* an open window: when its last on-time record arrived */
  uint64_t h;
  wm_value key; /* owned */
  wm_window w;
  int64_t last;
  int used;
  int fired;   /* its first firing happened (the entry stays: a later record damages it) */
  int damaged; /* a record of it came after its first firing (dropped or a late firing) */
} lat_ent;

typedef struct i64vec {
  int64_t *v;
  size_t n, cap;
} i64vec;

/* Sessions: the windows of a key that have fired, disjoint and in order (a window that
 * fires again, grown, replaces those it covers). */
typedef struct sess_key {
  uint64_t h;
  wm_value key; /* owned */
  wm_window *w;
  size_t n, cap;
  int used;
} sess_key;

typedef struct lab_run {
  harness *H;
  const wm_op *winop;
  wm_observe_fn prev;
  void *prev_ud;
  int ended;          /* the input has ended: firings from now on are the end's, not sampled */
  int oom;
  int cur_dropped;    /* the record being pushed was dropped */
  uint64_t dropped, late_firings, end_firings;
  uint64_t first_firings, damaged; /* windows fired, and of them those a late record reached */
  wm_value cur_key;   /* the key of the record being pushed (owned), when has_key */
  int has_key;
  lat_ent *tab;       /* open addressing, linear probing; cap a power of two */
  size_t cap, used;
  i64vec latency;
  int64_t gap;        /* session windows: the gap (0: time windows) */
  sess_key *sk;       /* sessions: the fired windows per key (open addressing) */
  size_t skcap, skused;
} lab_run;

typedef struct replay_opts {
  int perfect;         /* push the perfect watermark after every record */
  int64_t size, slide, offset; /* the time windows (size 0: unknown, lateness from events) */
  int64_t drain;       /* after the last arrival, run the clock this much longer */
  int64_t gap;         /* session windows: their gap (size 0) */
  size_t curve;        /* points of the watermark curve to return */
  size_t marks;        /* late records to return at most */
} replay_opts;

/* A sample of the late records: every stride-th one, thinned when full. */
typedef struct mark {
  int64_t t, ts, wm, perfect;
  int dropped;
} mark;

typedef struct replay_out {
  uint64_t late;
  int64_t *lag;        /* one per record */
  mark *marks;
  size_t nmarks, mark_stride;
  uint64_t mark_seen;
  int64_t *ct, *cw, *cp; /* curve: arrival, watermark, perfect watermark */
  size_t ncurve;
  i64vec lateness;     /* per late record: W - (end - 1) of its earliest-ending window */
  wm_value *lkeys;     /* per late record: its key (owned; nil when unknown) */
  size_t nlkeys, caplkeys;
} replay_out;

/* a - b, saturated to the time range */
static inline int64_t lwm_lab_sub_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? WM_TIME_MAX : WM_TIME_MIN;
  return r;
}

/* The first window operator of the harness's graph, or NULL. */
wm_op *lwm_lab_find_winop(harness *H);
/* Allocates out's arrays for n records (its other fields zero, mark_stride 1); 0, or -1 when
 * out of memory (what it could allocate is freed by lwm_lab_free). */
int lwm_lab_out_init(replay_out *out, const replay_opts *o, size_t n);
/* The observer h:replay puts in the harness's context (ud: the lab_run); it calls R->prev. */
void lwm_lab_observe(void *ud, const wm_op *op, const wm_obs *ev);
/* A late record was pushed: W, the watermark before it; first_stop, the end of its
 * earliest-ending window; m, its mark (arrival, ts, watermark, perfect, dropped). Sets
 * R->oom when out of memory. */
void lwm_lab_late(lab_run *R, replay_out *out, const replay_opts *o, int64_t W,
                  int64_t first_stop, mark m);
/* Sessions, after record (ts) was pushed with the watermark at W: it is late when it was
 * dropped, or when its window [ts, ts + gap) touches a window of its key that had fired (it
 * came after its session's result); each such fired window is damaged. 1 when late (its
 * lateness, W - (ts + gap - 1) but at least 0, and its key noted), 0 when not, -1 when out of
 * memory. */
int lwm_lab_session_late(lab_run *R, replay_out *out, int64_t W, int64_t ts);
/* Pushes the figures table of a replay of nrec records (reorders the samples). */
void lwm_lab_push_figures(lua_State *L, harness *H, size_t nrec, const replay_opts *o, lab_run *R,
                          replay_out *out);
/* Frees what R and out hold. */
void lwm_lab_free(harness *H, lab_run *R, replay_out *out);

#endif
