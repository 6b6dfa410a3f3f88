/* wm.lab's measures at the window operator during h:replay (lwm_lab_measure.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_hash.h"
#include "lwm_lab_measure.h"

static int i64_push(i64vec *a, int64_t x) {
  if (a->n == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 256;
    int64_t *nv = realloc(a->v, nc * sizeof *nv);
    if (!nv) return -1;
    a->v = nv;
    a->cap = nc;
  }
  a->v[a->n++] = x;
  return 0;
}

static uint64_t lat_hash(const wm_value *key, wm_window w) {
  return wm_mix64(wm_key_hash(key) ^ ((uint64_t)w.start * WM_HASH_GOLDEN) ^
                  ((uint64_t)w.stop * WM_HASH_ODD2));
}

/* The entry of (key, w), or NULL; *slot: where it is or would go. */
static lat_ent *lat_find(lab_run *R, const wm_value *key, wm_window w, uint64_t h, size_t *slot) {
  size_t mask = R->cap - 1, i = (size_t)h & mask;
  for (;; i = (i + 1) & mask) {
    lat_ent *e = &R->tab[i];
    if (!e->used) {
      *slot = i;
      return NULL;
    }
    if (e->h == h && e->w.start == w.start && e->w.stop == w.stop && wm_key_equal(&e->key, key)) {
      *slot = i;
      return e;
    }
  }
}

static int lat_grow(lab_run *R) {
  size_t nc = R->cap ? R->cap * 2 : 1024;
  lat_ent *nt = calloc(nc, sizeof *nt);
  if (!nt) return -1;
  for (size_t i = 0; i < R->cap; i++) {
    if (!R->tab[i].used) continue;
    size_t j = (size_t)R->tab[i].h & (nc - 1);
    while (nt[j].used) j = (j + 1) & (nc - 1);
    nt[j] = R->tab[i];
  }
  free(R->tab);
  R->tab = nt;
  R->cap = nc;
  return 0;
}

/* Sessions: the fired windows of key (created when add), or NULL (none, or out of memory:
 * *oom set). */
static sess_key *sess_of(lab_run *R, const wm_value *key, int add, int *oom) {
  if (!R->skcap && !add) return NULL;
  if (add && (R->skused + 1) * 2 > R->skcap) {
    size_t nc = R->skcap ? R->skcap * 2 : 64;
    sess_key *nt = calloc(nc, sizeof *nt);
    if (!nt) {
      *oom = 1;
      return NULL;
    }
    for (size_t i = 0; i < R->skcap; i++) {
      if (!R->sk[i].used) continue;
      size_t j = (size_t)R->sk[i].h & (nc - 1);
      while (nt[j].used) j = (j + 1) & (nc - 1);
      nt[j] = R->sk[i];
    }
    free(R->sk);
    R->sk = nt;
    R->skcap = nc;
  }
  uint64_t h = wm_mix64(wm_key_hash(key));
  size_t mask = R->skcap - 1, i = (size_t)h & mask;
  for (;; i = (i + 1) & mask) {
    sess_key *e = &R->sk[i];
    if (!e->used) break;
    if (e->h == h && wm_key_equal(&e->key, key)) return e;
  }
  if (!add) return NULL;
  sess_key *e = &R->sk[i];
  if (wm_value_copy(&R->H->B.ctx.host, &e->key, key) != 0) {
    *oom = 1;
    return NULL;
  }
  e->h = h;
  e->used = 1;
  R->skused++;
  return e;
}

/* The index of the first fired window of k that stops at or after t (k->n when none). */
static size_t sess_first(const sess_key *k, int64_t t) {
  size_t lo = 0, hi = k->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (k->w[mid].stop < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Marks the window (key, w) damaged when it had fired. */
static void damage(lab_run *R, const wm_value *key, wm_window w) {
  size_t slot;
  lat_ent *e = R->cap ? lat_find(R, key, w, lat_hash(key, w), &slot) : NULL;
  if (e && e->fired && !e->damaged) {
    e->damaged = 1;
    R->damaged++;
  }
}

/* Sessions: window w of key fired; it replaces the fired windows it covers (a fired window
 * that fires again grown: its first result changed). */
static int sess_fired(lab_run *R, const wm_value *key, wm_window w) {
  int oom = 0;
  sess_key *k = sess_of(R, key, 1, &oom);
  if (!k) return -1;
  size_t a = sess_first(k, w.start), b = a;
  while (b < k->n && k->w[b].start >= w.start && k->w[b].stop <= w.stop) damage(R, key, k->w[b++]);
  if (b == a) { /* insert at a */
    if (k->n == k->cap) {
      size_t nc = k->cap ? k->cap * 2 : 8;
      wm_window *nw = realloc(k->w, nc * sizeof *nw);
      if (!nw) return -1;
      k->w = nw;
      k->cap = nc;
    }
    memmove(k->w + a + 1, k->w + a, (k->n - a) * sizeof *k->w);
    k->n++;
  } else if (b > a + 1) { /* w covers several: keep one slot */
    memmove(k->w + a + 1, k->w + b, (k->n - b) * sizeof *k->w);
    k->n -= b - a - 1;
  }
  k->w[a] = w;
  return 0;
}

void lwm_lab_observe(void *ud, const wm_op *op, const wm_obs *ev) {
  lab_run *R = ud;
  if (R->prev) R->prev(R->prev_ud, op, ev);
  if (op != R->winop || R->oom) return;
  size_t slot;
  if ((ev->kind == WM_OBS_WINDOW || ev->kind == WM_OBS_LATE) && ev->key && !R->has_key) {
    if (wm_value_copy(&R->H->B.ctx.host, &R->cur_key, ev->key) != 0) {
      R->oom = 1;
      return;
    }
    R->has_key = 1;
  }
  switch (ev->kind) {
  case WM_OBS_WINDOW: {
    /* an on-time record (the window has not fired yet): the window's last so far */
    if (R->ended || ev->window.stop - 1 <= ev->watermark) break;
    if ((R->used + 1) * 2 > R->cap && lat_grow(R) != 0) {
      R->oom = 1;
      break;
    }
    uint64_t h = lat_hash(ev->key, ev->window);
    lat_ent *e = lat_find(R, ev->key, ev->window, h, &slot);
    if (!e) {
      e = &R->tab[slot];
      if (wm_value_copy(&R->H->B.ctx.host, &e->key, ev->key) != 0) {
        R->oom = 1;
        break;
      }
      e->h = h;
      e->w = ev->window;
      e->used = 1;
      R->used++;
    }
    e->last = R->H->now;
    break;
  }
  case WM_OBS_FIRE:
    if (R->gap > 0 && ev->key && sess_fired(R, ev->key, ev->window) != 0) R->oom = 1;
    if (ev->flag) {
      R->late_firings++;
      break;
    }
    R->first_firings++;
    if (R->ended) R->end_firings++;
    if (R->cap) {
      lat_ent *e = lat_find(R, ev->key, ev->window, lat_hash(ev->key, ev->window), &slot);
      if (e && !e->fired) { /* the window's first on-time firing */
        if (!R->ended && i64_push(&R->latency, R->H->now - e->last) != 0) R->oom = 1;
        e->fired = 1;
      }
    }
    break;
  case WM_OBS_LATE:
    R->dropped++;
    R->cur_dropped = 1;
    break;
  default:
    break;
  }
}

/* The k-th smallest (0-based) of a[0..n-1], reordering a (quickselect). */
static int64_t select_kth(int64_t *a, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    /* median of three as the pivot */
    int64_t x = a[lo], y = a[mid], z = a[hi];
    int64_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    size_t i = lo, j = hi;
    while (i <= j) {
      while (a[i] < piv) i++;
      while (a[j] > piv) j--;
      if (i <= j) {
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k];
  }
  return a[k];
}

/* Sets t.<name>_p50, _p99, _max (nearest rank: the ceil(p/100 * n)-th smallest); absent
 * (nil) when there is no sample. */
static void set_percentiles(lua_State *L, int t, const char *name, int64_t *a, size_t n) {
  if (n == 0) return;
  char f[64];
  static const int ps[] = {50, 99};
  for (int k = 0; k < 2; k++) {
    size_t rank = (size_t)(((unsigned long long)ps[k] * n + 99) / 100); /* ceil */
    if (rank < 1) rank = 1;
    lua_pushinteger(L, (lua_Integer)select_kth(a, n, rank - 1));
    snprintf(f, sizeof f, "%s_p%d", name, ps[k]);
    lua_setfield(L, t, f);
  }
  int64_t mx = a[0];
  for (size_t i = 1; i < n; i++)
    if (a[i] > mx) mx = a[i];
  lua_pushinteger(L, (lua_Integer)mx);
  snprintf(f, sizeof f, "%s_max", name);
  lua_setfield(L, t, f);
}


/* The first window operator of the harness's graph, or NULL. */
wm_op *lwm_lab_find_winop(harness *H) {
  for (size_t i = 0; i < H->B.ctx.nops; i++)
    if (strcmp(H->B.ctx.ops[i]->vt->kind, "window") == 0) return H->B.ctx.ops[i];
  return NULL;
}

/* Notes late record i: how far the watermark W was past its first window's end and its key,
 * and marks each of its windows (of the record's key) that had fired before it as damaged. */
static int note_late(lab_run *R, replay_out *out, const replay_opts *o, int64_t W, int64_t ts,
                     int64_t first_stop) {
  if (i64_push(&out->lateness, lwm_lab_sub_sat(W, first_stop - 1)) != 0) return -1;
  if (out->nlkeys == out->caplkeys) {
    size_t nc = out->caplkeys ? out->caplkeys * 2 : 64;
    wm_value *nk = realloc(out->lkeys, nc * sizeof *nk);
    if (!nk) return -1;
    out->lkeys = nk;
    out->caplkeys = nc;
  }
  wm_value *k = &out->lkeys[out->nlkeys++];
  if (!R->has_key) {
    *k = wm_nil();
    return 0;
  }
  if (wm_value_copy(&R->H->B.ctx.host, k, &R->cur_key) != 0) {
    out->nlkeys--;
    return -1;
  }
  if (!R->cap) return 0;
  /* the record's windows, earliest-ending first, while the watermark had passed their end */
  for (int64_t stop = first_stop; stop - o->size <= ts && stop - 1 <= W; stop += o->slide) {
    wm_window w = {stop - o->size, stop};
    size_t slot;
    lat_ent *e = lat_find(R, &R->cur_key, w, lat_hash(&R->cur_key, w), &slot);
    if (e && e->fired && !e->damaged) {
      e->damaged = 1;
      R->damaged++;
    }
  }
  return 0;
}

/* a late record's key in out->lkeys (nil when unknown); 0, or -1 when out of memory */
static int note_key(lab_run *R, replay_out *out) {
  if (out->nlkeys == out->caplkeys) {
    size_t nc = out->caplkeys ? out->caplkeys * 2 : 64;
    wm_value *nk = realloc(out->lkeys, nc * sizeof *nk);
    if (!nk) return -1;
    out->lkeys = nk;
    out->caplkeys = nc;
  }
  wm_value *kv = &out->lkeys[out->nlkeys++];
  *kv = wm_nil();
  if (R->has_key && wm_value_copy(&R->H->B.ctx.host, kv, &R->cur_key) != 0) {
    out->nlkeys--;
    return -1;
  }
  return 0;
}

int lwm_lab_session_late(lab_run *R, replay_out *out, int64_t W, int64_t ts) {
  int touched = 0, oom = 0;
  sess_key *k = R->has_key ? sess_of(R, &R->cur_key, 0, &oom) : NULL;
  int64_t stop = wm_time_add_sat(ts, R->gap);
  if (k) {
    for (size_t j = sess_first(k, ts); j < k->n && k->w[j].start <= stop; j++) {
      touched = 1;
      damage(R, &R->cur_key, k->w[j]);
    }
  }
  if (!touched && !R->cur_dropped) return 0;
  int64_t l = lwm_lab_sub_sat(W, stop - 1);
  if (i64_push(&out->lateness, l > 0 ? l : 0) != 0 || note_key(R, out) != 0) return -1;
  return 1;
}

void lwm_lab_late(lab_run *R, replay_out *out, const replay_opts *o, int64_t W,
                  int64_t first_stop, mark m) {
  out->late++;
  if (o->size > 0 && note_late(R, out, o, W, m.ts, first_stop) != 0) R->oom = 1;
  uint64_t s = out->mark_seen++;
  if (out->marks && s % out->mark_stride == 0) {
    if (out->nmarks == o->marks) { /* full: keep every other one, sample half as often */
      size_t k = 0;
      for (size_t j = 0; j < out->nmarks; j += 2) out->marks[k++] = out->marks[j];
      out->nmarks = k;
      out->mark_stride *= 2;
    }
    if (s % out->mark_stride == 0) out->marks[out->nmarks++] = m;
  }
}

int lwm_lab_out_init(replay_out *out, const replay_opts *o, size_t n) {
  memset(out, 0, sizeof *out);
  out->mark_stride = 1;
  out->lag = malloc(n * sizeof *out->lag);
  if (o->curve) {
    out->ct = malloc(o->curve * sizeof *out->ct);
    out->cw = malloc(o->curve * sizeof *out->cw);
    out->cp = malloc(o->curve * sizeof *out->cp);
  }
  if (o->marks) out->marks = malloc(o->marks * sizeof *out->marks);
  if (!out->lag || (o->curve && (!out->ct || !out->cw || !out->cp)) || (o->marks && !out->marks))
    return -1;
  return 0;
}

static void push_i64_list(lua_State *L, const int64_t *a, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)a[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

void lwm_lab_push_figures(lua_State *L, harness *H, size_t nrec, const replay_opts *o, lab_run *R,
                          replay_out *out) {
  lua_createtable(L, 0, 16);
  int t = lua_gettop(L);
  lua_pushinteger(L, (lua_Integer)nrec);
  lua_setfield(L, t, "records");
  lua_pushinteger(L, (lua_Integer)out->late);
  lua_setfield(L, t, "late");
  lua_pushinteger(L, (lua_Integer)R->dropped);
  lua_setfield(L, t, "dropped");
  lua_pushinteger(L, (lua_Integer)R->late_firings);
  lua_setfield(L, t, "late_firings");
  lua_pushinteger(L, (lua_Integer)R->latency.n);
  lua_setfield(L, t, "latency_windows");
  lua_pushinteger(L, (lua_Integer)R->end_firings);
  lua_setfield(L, t, "end_firings");
  lua_pushinteger(L, (lua_Integer)R->first_firings);
  lua_setfield(L, t, "first_firings");
  lua_pushinteger(L, (lua_Integer)R->damaged);
  lua_setfield(L, t, "damaged_windows");
  push_i64_list(L, out->lateness.v, out->lateness.n);
  lua_setfield(L, t, "late_lateness");
  lua_createtable(L, (int)out->nlkeys, 0);
  for (size_t k = 0; k < out->nlkeys; k++) {
    if (out->lkeys[k].type == WM_NIL) lua_pushboolean(L, 0);
    else lwm_push_value(&H->B, &out->lkeys[k]);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, t, "late_keys");
  set_percentiles(L, t, "lag", out->lag, nrec);
  set_percentiles(L, t, "latency", R->latency.v, R->latency.n);
  if (o->curve) {
    lua_createtable(L, 0, 3);
    push_i64_list(L, out->ct, out->ncurve);
    lua_setfield(L, -2, "t");
    push_i64_list(L, out->cw, out->ncurve);
    lua_setfield(L, -2, "wm");
    push_i64_list(L, out->cp, out->ncurve);
    lua_setfield(L, -2, "perfect");
    lua_setfield(L, t, "curve");
  }
  if (o->marks) {
    lua_createtable(L, (int)out->nmarks, 0);
    for (size_t k = 0; k < out->nmarks; k++) {
      const mark *m = &out->marks[k];
      lua_createtable(L, 0, 5);
      lua_pushinteger(L, (lua_Integer)m->t);
      lua_setfield(L, -2, "t");
      lua_pushinteger(L, (lua_Integer)m->ts);
      lua_setfield(L, -2, "ts");
      lua_pushinteger(L, (lua_Integer)m->wm);
      lua_setfield(L, -2, "wm");
      lua_pushinteger(L, (lua_Integer)m->perfect);
      lua_setfield(L, -2, "perfect");
      lua_pushboolean(L, m->dropped);
      lua_setfield(L, -2, "dropped");
      lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    lua_setfield(L, t, "marks");
  }
}

void lwm_lab_free(harness *H, lab_run *R, replay_out *out) {
  for (size_t i = 0; i < R->cap; i++)
    if (R->tab[i].used) wm_value_release(&H->B.ctx.host, &R->tab[i].key);
  free(R->tab);
  for (size_t i = 0; i < R->skcap; i++)
    if (R->sk[i].used) {
      wm_value_release(&H->B.ctx.host, &R->sk[i].key);
      free(R->sk[i].w);
    }
  free(R->sk);
  if (R->has_key) wm_value_release(&H->B.ctx.host, &R->cur_key);
  for (size_t k = 0; k < out->nlkeys; k++) wm_value_release(&H->B.ctx.host, &out->lkeys[k]);
  free(out->lkeys);
  free(out->lateness.v);
  free(R->latency.v);
  free(out->lag);
  free(out->ct);
  free(out->cw);
  free(out->cp);
  free(out->marks);
}
