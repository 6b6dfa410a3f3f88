/* wm.lab's arrival replay in wm.testing's harness: recorded data sets (core.replay_data),
 * h:replay (the figures of a candidate strategy, measured at the window operator),
 * h:replay_inputs (a job replayed on its sources' arrival times), and core.signal_watch
 * (SIGINT and the others during a lab). Split from lwm_harness.c (issue 27); the harness
 * itself is there, shared through lwm_harness.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_hash.h"

#include "graph/wm_observe.h"
#include "io/wm_csv.h"
#include "io/wm_source.h"
#include "lwm.h"
#include "lwm_harness.h"
#include "lwm_plan.h"
#include "lwm_replay.h"

/* ---- core.signal_watch(): SIGINT, SIGTERM and SIGHUP for `wmrun lab` ----------------------
 * A lab is no job: it has no executor of its own to drain, and each candidate's harness lives
 * for one replay. The watch is an executor listed with the process's signal handler
 * (wm_exec_watch_signals) for as long as it is open, whose loop never runs: a signal stays
 * pending on it, and what is given the watch (core.replay_data, h:replay's opts.watch) stops
 * with "interrupted by SIGINT" (a second signal exits 130 at once, from the handler). Until it
 * is open, the process's dispositions are those it inherited (a background process of a
 * script ignores SIGINT, as under `lab ... &`). */
const char *lwm_sig_text(int sig) {
  return sig == SIGTERM ? "interrupted by SIGTERM"
         : sig == SIGHUP ? "interrupted by SIGHUP"
                         : "interrupted by SIGINT";
}

static int l_sigwatch_close(lua_State *L) {
  sigwatch *W = luaL_checkudata(L, 1, SIGWATCH_MT);
  if (W->exec) {
    wm_exec_free(W->exec);
    W->exec = NULL;
    wm_ctx_free(&W->ctx);
  }
  return 0;
}

/* w:pending() -> "interrupted by SIGINT" (SIGTERM, SIGHUP) once a signal came, else nil */
static int l_sigwatch_pending(lua_State *L) {
  sigwatch *W = luaL_checkudata(L, 1, SIGWATCH_MT);
  if (W->exec && wm_exec_signal_pending(W->exec)) lua_pushstring(L, lwm_sig_text(wm_exec_signal(W->exec)));
  else lua_pushnil(L);
  return 1;
}

int lwm_signal_watch_new(lua_State *L) {
  sigwatch *W = lua_newuserdatauv(L, sizeof *W, 0);
  memset(W, 0, sizeof *W);
  if (luaL_newmetatable(L, SIGWATCH_MT)) {
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, l_sigwatch_pending);
    lua_setfield(L, -2, "pending");
    lua_pushcfunction(L, l_sigwatch_close);
    lua_setfield(L, -2, "close");
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_sigwatch_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, l_sigwatch_close);
    lua_setfield(L, -2, "__close");
  }
  lua_setmetatable(L, -2);
  wm_ctx_init(&W->ctx);
  wm_exec_config cfg = {.watermark_interval = 0};
  W->exec = wm_exec_new(&W->ctx, &cfg);
  if (!W->exec || wm_exec_watch_signals(W->exec) != WM_OK) {
    lua_pushstring(L, wm_ctx_errtext(&W->ctx));
    if (W->exec) wm_exec_free(W->exec);
    W->exec = NULL;
    wm_ctx_free(&W->ctx);
    return lua_error(L);
  }
  return 1;
}

/* ---- arrival replay (wm.lab): recorded lines with their arrival times -------------------
 *
 * A replay data set holds the lines of a recorded file in arrival order (a stable sort),
 * each with its event time and its arrival (processing) time, and the perfect watermark
 * before each arrival: perfect[i] = min(ts[i..n-1]) - 1, the highest watermark that no
 * record still to come violates. h:replay(data, opts) pushes the lines into a harness
 * whose pipeline parses them (parse_csv), with the virtual clock moved to each arrival
 * first, and measures lateness, lag and latency at the pipeline's window operator. */

#define REPLAY_MT "wm.ReplayData"

typedef struct replay_data {
  size_t n;
  char *text;       /* the file, lines NUL-terminated in place */
  size_t *off;      /* line i starts at text + off[i] (arrival order) */
  uint32_t *len;
  uint32_t *lineno; /* line number in the file (for messages) */
  char *path;       /* the file's name (for messages) */
  int64_t *ts, *arrival, *perfect;
} replay_data;

static void replay_data_clear(replay_data *D) {
  free(D->path);
  free(D->text);
  free(D->off);
  free(D->len);
  free(D->lineno);
  free(D->ts);
  free(D->arrival);
  free(D->perfect);
  memset(D, 0, sizeof *D);
}

static int replay_data_gc(lua_State *L) {
  replay_data_clear(luaL_checkudata(L, 1, REPLAY_MT));
  return 0;
}

typedef struct arr_idx {
  int64_t arrival;
  size_t i;
} arr_idx;

static int cmp_arrival(const void *a, const void *b) {
  const arr_idx *x = a, *y = b;
  if (x->arrival != y->arrival) return x->arrival < y->arrival ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i; /* stable: file order among equal arrivals */
}

/* Reads the whole file into *text (NUL-terminated); 0, or -1 with errno set. */
static int read_file(const char *path, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      int bad = ferror(f);
      fclose(f);
      if (bad) {
        free(buf);
        return -1;
      }
      buf[n] = '\0';
      *text = buf;
      *len = n;
      return 0;
    }
  }
  free(buf);
  fclose(f);
  errno = ENOMEM;
  return -1;
}

/* Loads the lines of path into D. With fields (a parse_csv node's columns), decodes each
 * line and reads the integer fields tsf (NULL: no event times) and arrf; without arrf the
 * arrivals are given[0..ngiven-1], one per line in file order. lenient (the parser's
 * on_error is "skip" or "side_output"): a line that does not parse, or has no arrival, is
 * not an error but arrives with the line before it in the file (the first lines with the
 * first that has one), and the parser deals with it when it is replayed. 0, or -1 with a
 * message (path:line: ...) in err. */
static int replay_data_load(replay_data *D, const char *path, const wm_csv_field *fields,
                            uint32_t nf, char sep, int header, int lenient, const char *tsf,
                            const char *arrf, const int64_t *given, size_t ngiven,
                            const wm_exec *watch, char *err, size_t errlen) {
  size_t flen = 0;
  D->path = strdup(path); /* NULL: messages say "?" */
  if (read_file(path, &D->text, &flen) != 0) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  size_t cap = 1024;
  D->off = malloc(cap * sizeof *D->off);
  D->len = malloc(cap * sizeof *D->len);
  D->lineno = malloc(cap * sizeof *D->lineno);
  D->ts = malloc(cap * sizeof *D->ts);
  D->arrival = malloc(cap * sizeof *D->arrival);
  wm_decoder dec = {0};
  int rc = -1;
  if (!D->off || !D->len || !D->lineno || !D->ts || !D->arrival ||
      (fields && wm_decoder_csv(&dec, fields, nf, sep) != 0)) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  wm_ctx ctx; /* for the decoder's out-of-memory message only */
  wm_ctx_init(&ctx);
  wm_op dummy;
  memset(&dummy, 0, sizeof dummy);
  dummy.ctx = &ctx;
  int its = -1, iar = -1;
  for (uint32_t k = 0; fields && k < nf; k++) {
    if (tsf && strcmp(fields[k].name, tsf) == 0) its = (int)k;
    if (arrf && strcmp(fields[k].name, arrf) == 0) iar = (int)k;
  }
  if ((tsf && its < 0) || (arrf && iar < 0)) {
    snprintf(err, errlen, "no column '%s' among the fields", tsf && its < 0 ? tsf : arrf);
    goto done_ctx;
  }
  char *p = D->text, *end = D->text + flen;
  uint32_t lineno = 0;
  /* lenient: the last arrival read, and the first of the lines before it that had none */
  int64_t prev = 0;
  int have_prev = 0;
  size_t unfilled = SIZE_MAX;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *le = nl ? nl : end;
    lineno++;
    size_t ll = (size_t)(le - p);
    if (ll > 0 && p[ll - 1] == '\r') ll--;
    p[ll] = '\0';
    char *line = p;
    p = nl ? nl + 1 : end;
    if (watch && (lineno & 0xffff) == 0 && wm_exec_signal_pending(watch)) {
      snprintf(err, errlen, "%s while reading %s (line %u)", lwm_sig_text(wm_exec_signal(watch)),
               path, lineno);
      goto done_ctx;
    }
    if (header && lineno == 1) continue;
    if (ll > UINT32_MAX) {
      snprintf(err, errlen, "%s:%u: line too long", path, lineno);
      goto done_ctx;
    }
    int64_t t = WM_TIME_MIN, a = 0;
    if (fields) {
      wm_value row;
      char derr[512];
      int d = dec.decode(dec.ud, &dummy, line, ll, &row, derr, sizeof derr);
      if (d == 1 && !lenient) {
        snprintf(err, errlen, "%s:%u: %s", path, lineno, derr);
        goto done_ctx;
      }
      if (d != 0 && d != 1) {
        snprintf(err, errlen, "%.900s", wm_ctx_errtext(&ctx));
        goto done_ctx;
      }
      int bad = -1;
      if (d == 0 && its >= 0) {
        const wm_value *tv = &row.u.row->fields[its];
        if (tv->type == WM_INT) t = tv->u.i;
        else bad = its;
      }
      if (d == 0 && iar >= 0) {
        const wm_value *av = &row.u.row->fields[iar];
        if (av->type == WM_INT) a = av->u.i;
        else bad = iar;
      }
      if (d == 0) wm_value_release(NULL, &row);
      if (bad >= 0 && !lenient) {
        snprintf(err, errlen, "%s:%u: field '%s' is empty (it must be an integer number of ms)",
                 path, lineno, fields[bad].name);
        goto done_ctx;
      }
      if (lenient && iar >= 0) { /* a line the parser will skip: it arrives with its neighbour */
        if (d == 1 || bad >= 0) {
          a = have_prev ? prev : 0;
          if (!have_prev && unfilled == SIZE_MAX) unfilled = D->n;
        } else {
          prev = a;
          have_prev = 1;
          for (; unfilled < D->n; unfilled++) D->arrival[unfilled] = a;
          unfilled = SIZE_MAX;
        }
      }
    }
    if (iar < 0) {
      if (D->n >= ngiven) {
        snprintf(err, errlen, "%s:%u: no arrival time for this line (the file grew?)", path, lineno);
        goto done_ctx;
      }
      a = given[D->n];
    }
    if (D->n == cap) {
      cap *= 2;
      size_t *no = realloc(D->off, cap * sizeof *no);
      if (no) D->off = no;
      uint32_t *nl2 = realloc(D->len, cap * sizeof *nl2);
      if (nl2) D->len = nl2;
      uint32_t *nn = realloc(D->lineno, cap * sizeof *nn);
      if (nn) D->lineno = nn;
      int64_t *nt = realloc(D->ts, cap * sizeof *nt);
      if (nt) D->ts = nt;
      int64_t *na = realloc(D->arrival, cap * sizeof *na);
      if (na) D->arrival = na;
      if (!no || !nl2 || !nn || !nt || !na) {
        snprintf(err, errlen, "out of memory");
        goto done_ctx;
      }
    }
    D->off[D->n] = (size_t)(line - D->text);
    D->len[D->n] = (uint32_t)ll;
    D->lineno[D->n] = lineno;
    D->ts[D->n] = t;
    D->arrival[D->n] = a;
    D->n++;
  }
  /* arrival order (usually the file's already) */
  int sorted = 1;
  for (size_t i = 1; i < D->n && sorted; i++) sorted = D->arrival[i - 1] <= D->arrival[i];
  if (!sorted) {
    arr_idx *ix = malloc(D->n * sizeof *ix);
    size_t *o2 = malloc(D->n * sizeof *o2);
    uint32_t *l2 = malloc(D->n * sizeof *l2), *n2 = malloc(D->n * sizeof *n2);
    int64_t *t2 = malloc(D->n * sizeof *t2);
    if (ix && o2 && l2 && n2 && t2) {
      for (size_t i = 0; i < D->n; i++) ix[i] = (arr_idx){D->arrival[i], i};
      qsort(ix, D->n, sizeof *ix, cmp_arrival);
      for (size_t i = 0; i < D->n; i++) {
        size_t j = ix[i].i;
        o2[i] = D->off[j];
        l2[i] = D->len[j];
        n2[i] = D->lineno[j];
        t2[i] = D->ts[j];
        D->arrival[i] = ix[i].arrival;
      }
      free(D->off);
      free(D->len);
      free(D->lineno);
      free(D->ts);
      D->off = o2;
      D->len = l2;
      D->lineno = n2;
      D->ts = t2;
      o2 = NULL;
      l2 = n2 = NULL;
      t2 = NULL;
    }
    int oom = !ix || o2 || l2 || n2 || t2;
    free(ix);
    free(o2);
    free(l2);
    free(n2);
    free(t2);
    if (oom) {
      snprintf(err, errlen, "out of memory");
      goto done_ctx;
    }
  }
  D->perfect = malloc((D->n ? D->n : 1) * sizeof *D->perfect);
  if (!D->perfect) {
    snprintf(err, errlen, "out of memory");
    goto done_ctx;
  }
  int64_t m = WM_TIME_MAX;
  for (size_t i = D->n; i-- > 0;) {
    if (D->ts[i] < m) m = D->ts[i];
    D->perfect[i] = m == WM_TIME_MIN ? m : m - 1;
  }
  rc = 0;
done_ctx:
  wm_ctx_free(&ctx);
done:
  if (dec.free) dec.free(dec.ud);
  return rc;
}

/* core.replay_data(path, parse_node, timestamp_field, arrival[, watch]) -> data
 * parse_node: a parse_csv plan node ({fields = {{name, type, optional}...}, sep, header}), or
 * nil (the lines are not decoded); timestamp_field: an integer column, or nil (no event
 * times); arrival: an integer column, or a list of arrival times, one per line in file order. */
int lwm_replay_data_new(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  const char *tsf = luaL_optstring(L, 3, NULL);
  const char *arrf = lua_type(L, 4) == LUA_TSTRING ? lua_tostring(L, 4) : NULL;
  if (!arrf) luaL_checktype(L, 4, LUA_TTABLE);
  luaL_argcheck(L, !lua_isnoneornil(L, 2) || (!tsf && !arrf), 2,
                "columns need the parse_csv node");
  const sigwatch *W = lua_isnoneornil(L, 5) ? NULL : luaL_checkudata(L, 5, SIGWATCH_MT);
  luaL_argcheck(L, !W || W->exec, 5, "the signal watch is closed");
  lua_settop(L, 4);
  replay_data *D = lua_newuserdatauv(L, sizeof *D, 0); /* 5 */
  memset(D, 0, sizeof *D);
  luaL_setmetatable(L, REPLAY_MT);
  uint32_t nf = 0;
  wm_csv_field *fields = NULL;
  const char *sep = NULL;
  int header = 0, lenient = 0;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "fields"); /* 6 */
    luaL_argcheck(L, lua_istable(L, 6), 2, "no fields");
    nf = (uint32_t)lua_rawlen(L, 6);
    fields = calloc(nf ? nf : 1, sizeof *fields);
    if (!fields) return luaL_error(L, "out of memory");
    static const char *const types[] = {"string", "integer", "number", "boolean", NULL};
    static const uint8_t codes[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER, WM_FT_BOOLEAN};
    for (uint32_t k = 0; k < nf; k++) {
      lua_rawgeti(L, 6, (lua_Integer)k + 1);
      lua_getfield(L, -1, "name");
      fields[k].name = lua_tostring(L, -1); /* the plan keeps it alive */
      lua_getfield(L, -2, "type");
      const char *ty = lua_tostring(L, -1);
      fields[k].type = WM_FT_STRING;
      for (int t = 0; ty && types[t]; t++)
        if (strcmp(ty, types[t]) == 0) fields[k].type = codes[t];
      lua_getfield(L, -3, "optional");
      fields[k].optional = (uint8_t)lua_toboolean(L, -1);
      lua_pop(L, 4);
      if (!fields[k].name) {
        free(fields);
        return luaL_argerror(L, 2, "a field has no name");
      }
    }
    sep = lwm_get_str(L, 2, "sep");
    const char *on_error = lwm_get_str(L, 2, "on_error");
    lenient = on_error && strcmp(on_error, "fail") != 0;
    lua_getfield(L, 2, "header");
    header = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  int64_t *given = NULL;
  size_t ngiven = 0;
  if (!arrf) { /* the arrival times, computed by the caller */
    ngiven = (size_t)lua_rawlen(L, 4);
    given = malloc((ngiven ? ngiven : 1) * sizeof *given);
    if (!given) {
      free(fields);
      return luaL_error(L, "out of memory");
    }
    for (size_t i = 0; i < ngiven; i++) {
      int isnum = 0;
      lua_rawgeti(L, 4, (lua_Integer)i + 1);
      given[i] = (int64_t)lua_tointegerx(L, -1, &isnum);
      lua_pop(L, 1);
      if (!isnum) {
        free(fields);
        free(given);
        return luaL_error(L, "arrival time %d is not an integer number of ms", (int)i + 1);
      }
    }
  }
  char err[1024];
  int rc = replay_data_load(D, path, fields, nf, sep && *sep ? sep[0] : ',', header, lenient,
                            tsf, arrf, given, ngiven, W ? W->exec : NULL, err, sizeof err);
  free(fields);
  free(given);
  if (rc != 0) {
    replay_data_clear(D);
    return luaL_error(L, "%s", err);
  }
  lua_settop(L, 5);
  return 1;
}

/* data:count() */
static int l_data_count(lua_State *L) {
  replay_data *D = luaL_checkudata(L, 1, REPLAY_MT);
  lua_pushinteger(L, (lua_Integer)D->n);
  return 1;
}

/* data:get(i) -> line, ts, arrival, perfect, file line number (i: 1-based, arrival order) */
static int l_data_get(lua_State *L) {
  replay_data *D = luaL_checkudata(L, 1, REPLAY_MT);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && (size_t)i <= D->n, 2, "no such record");
  size_t k = (size_t)i - 1;
  lua_pushlstring(L, D->text + D->off[k], D->len[k]);
  lua_pushinteger(L, (lua_Integer)D->ts[k]);
  lua_pushinteger(L, (lua_Integer)D->arrival[k]);
  lua_pushinteger(L, (lua_Integer)D->perfect[k]);
  lua_pushinteger(L, (lua_Integer)D->lineno[k]);
  return 5;
}

static const luaL_Reg replay_data_methods[] = {
    {"count", l_data_count},
    {"get", l_data_get},
    {NULL, NULL},
};

/* ---- the replay: figures measured at the window operator ------------------------------ */

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

/* Sessions: the windows of a key that have fired, disjoint and in order (a window that
 * fires again, extended, replaces those it covers). */
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
  if ((R->skused + 1) * 2 > R->skcap) {
    if (!add) goto find;
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
find:;
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

/* Sessions: window w of key fired; it replaces the fired windows it covers. */
static int sess_fired(lab_run *R, const wm_value *key, wm_window w) {
  int oom = 0;
  sess_key *k = sess_of(R, key, 1, &oom);
  if (!k) return -1;
  size_t a = sess_first(k, w.start), b = a;
  while (b < k->n && k->w[b].start >= w.start && k->w[b].stop <= w.stop) {
    /* a fired window that fires again grown (a late firing): its first result changed */
    size_t slot;
    lat_ent *e = R->cap ? lat_find(R, key, k->w[b], lat_hash(key, k->w[b]), &slot) : NULL;
    if (e && e->fired && !e->damaged) {
      e->damaged = 1;
      R->damaged++;
    }
    b++;
  }
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

static void lab_observe(void *ud, const wm_op *op, const wm_obs *ev) {
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
static wm_op *find_winop(harness *H) {
  for (size_t i = 0; i < H->B.ctx.nops; i++)
    if (strcmp(H->B.ctx.ops[i]->vt->kind, "window") == 0) return H->B.ctx.ops[i];
  return NULL;
}

static int64_t sub_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? WM_TIME_MAX : WM_TIME_MIN;
  return r;
}

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

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

/* Notes late record i: how far the watermark W was past its first window's end and its key,
 * and marks each of its windows (of the record's key) that had fired before it as damaged. */
static int note_late(lab_run *R, replay_out *out, const replay_opts *o, int64_t W, int64_t ts,
                     int64_t first_stop) {
  if (i64_push(&out->lateness, sub_sat(W, first_stop - 1)) != 0) return -1;
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

/* Sessions, after record (ts) was pushed with the watermark at W: it is late when it was
 * dropped, or when its window [ts, ts + gap) touches a window of its key that had fired (it
 * came after its session's result: a late firing, an extension that fires again, or a
 * session split in two). Each such fired window is damaged. 1 when late (its lateness,
 * W - (ts + gap - 1) but at least 0, and key noted), 0 when not, -1 out of memory. */
static int note_late_session(lab_run *R, replay_out *out, int64_t W, int64_t ts) {
  int touched = 0, oom = 0;
  sess_key *k = R->has_key ? sess_of(R, &R->cur_key, 0, &oom) : NULL;
  int64_t stop = wm_time_add_sat(ts, R->gap);
  if (k) {
    for (size_t j = sess_first(k, ts); j < k->n && k->w[j].start <= stop; j++) {
      touched = 1;
      if (!R->cap) continue;
      size_t slot;
      lat_ent *e = lat_find(R, &R->cur_key, k->w[j], lat_hash(&R->cur_key, k->w[j]), &slot);
      if (e && e->fired && !e->damaged) {
        e->damaged = 1;
        R->damaged++;
      }
    }
  }
  if (!touched && !R->cur_dropped) return 0;
  int64_t l = sub_sat(W, stop - 1);
  if (i64_push(&out->lateness, l > 0 ? l : 0) != 0) return -1;
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
  return 1;
}

static int replay_loop(harness *H, replay_data *D, const replay_opts *o, lab_run *R,
                       replay_out *out) {
  wm_ctx *ctx = &H->B.ctx;
  wm_op *win = (wm_op *)R->winop;
  int rc = WM_OK;
  /* sessions: a record at the end of a fired session would still merge into it (windows
   * that touch merge), so their perfect watermark is one less: min(ts still to come) - 2 */
#define PERFECT(k) (R->gap > 0 ? sub_sat(D->perfect[k], 1) : D->perfect[k])
  int64_t floor_wm = D->n ? PERFECT(0) : 0, last_perfect = WM_TIME_MIN;
  size_t next_curve = 0, curve_k = 0;
  for (size_t i = 0; i < D->n && rc == WM_OK; i++) {
    if ((rc = lwm_h_advance_to(H, D->arrival[i])) != WM_OK) break;
    if (H->watch && (lwm_h_replay_signalled(H), H->aborted)) {
      rc = wm_ctx_error(ctx, "%s", lwm_sig_text(wm_exec_signal(H->watch)));
      break;
    }
    int64_t W = win ? win->wm : WM_TIME_MIN, ts = D->ts[i];
    int64_t weff = W > floor_wm ? W : floor_wm;
    out->lag[i] = sub_sat(PERFECT(i), weff);
    if (out->ct && i == next_curve) {
      out->ct[curve_k] = D->arrival[i];
      out->cw[curve_k] = weff;
      out->cp[curve_k] = PERFECT(i);
      curve_k++;
      next_curve = curve_k < o->curve ? (size_t)((double)curve_k * (double)D->n / (double)o->curve) : D->n;
      if (next_curve <= i) next_curve = i + 1;
    }
    int late = 0;
    int64_t stop = 0;
    if (win && o->size > 0) { /* the end of the record's earliest-ending window */
      int64_t last = ts - (ts - o->offset - floor_div(ts - o->offset, o->slide) * o->slide);
      int64_t j = floor_div(last - ts + o->size - 1, o->slide);
      stop = last - j * o->slide + o->size;
      late = W >= stop - 1;
    }
    R->cur_dropped = 0;
    if (R->has_key) {
      wm_value_release(&ctx->host, &R->cur_key);
      R->has_key = 0;
    }
    wm_value v = wm_cstr(D->text + D->off[i], D->len[i]);
    rc = wm_op_input_record(H->input, 0, &v, ts);
    if (rc != WM_OK) {
      wm_ctx_error_context(ctx, "\n  while replaying %s:%u", D->path ? D->path : "?", D->lineno[i]);
      break;
    }
    if (win && R->gap > 0) {
      int l = note_late_session(R, out, W, ts);
      if (l < 0) R->oom = 1;
      late = l > 0;
    }
    if (R->gap == 0 && (late || R->cur_dropped)) {
      out->late++;
      if (o->size > 0 && note_late(R, out, o, W, ts, stop) != 0) R->oom = 1;
    } else if (late) {
      out->late++;
    }
    if (late || R->cur_dropped) {
      uint64_t s = out->mark_seen++;
      if (out->marks && s % out->mark_stride == 0) {
        if (out->nmarks == o->marks) { /* full: keep every other one, sample half as often */
          size_t k = 0;
          for (size_t m = 0; m < out->nmarks; m += 2) out->marks[k++] = out->marks[m];
          out->nmarks = k;
          out->mark_stride *= 2;
        }
        if (s % out->mark_stride == 0)
          out->marks[out->nmarks++] = (mark){D->arrival[i], ts, weff, PERFECT(i), R->cur_dropped};
      }
    }
    if (o->perfect && i + 1 < D->n && PERFECT(i + 1) > last_perfect) {
      last_perfect = PERFECT(i + 1);
      rc = wm_op_input_watermark(H->input, 0, last_perfect);
    }
    if (R->oom) rc = wm_ctx_error(ctx, "out of memory");
  }
  out->ncurve = curve_k;
  if (rc == WM_OK && D->n && o->drain > 0)
    rc = lwm_h_advance_to(H, wm_time_add_sat(D->arrival[D->n - 1], o->drain));
  if (rc == WM_OK && H->watch && (lwm_h_replay_signalled(H), H->aborted))
    rc = wm_ctx_error(ctx, "%s", lwm_sig_text(wm_exec_signal(H->watch)));
  R->ended = 1;
  if (rc == WM_OK && !H->finished) {
    H->finished = 1;
    for (int ch = 0; ch < H->channels && rc == WM_OK; ch++)
      rc = wm_op_input_watermark(H->input, ch, WM_TIME_MAX);
  }
  if (rc == WM_OK && R->oom) rc = wm_ctx_error(ctx, "out of memory");
  return rc;
#undef PERFECT
}

static void push_i64_list(lua_State *L, const int64_t *a, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)a[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* h:replay(data, {perfect, keep_output, size, slide, offset, gap, drain, curve, marks}) -> figures
 * (gap: session windows of that gap, size 0)
 * Replays data into the harness: for each record in arrival order, the virtual clock moves
 * to its arrival (running what comes due: timers, idleness, periodic watermarks), then the
 * line is pushed; after the last one the clock runs `drain` ms more, then the input ends. */
int lwm_h_replay(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  replay_data *D = luaL_checkudata(L, 2, REPLAY_MT);
  luaL_checktype(L, 3, LUA_TTABLE);
  replay_opts o;
  memset(&o, 0, sizeof o);
  lua_getfield(L, 3, "perfect");
  o.perfect = lua_toboolean(L, -1);
  lua_getfield(L, 3, "keep_output");
  int keep = lua_toboolean(L, -1);
  lua_pop(L, 2);
  o.size = (int64_t)lwm_get_int(L, 3, "size", 0);
  o.slide = (int64_t)lwm_get_int(L, 3, "slide", o.size);
  o.offset = (int64_t)lwm_get_int(L, 3, "offset", 0);
  o.drain = (int64_t)lwm_get_int(L, 3, "drain", 0);
  o.gap = (int64_t)lwm_get_int(L, 3, "gap", 0);
  o.curve = (size_t)lwm_get_int(L, 3, "curve", 0);
  o.marks = (size_t)lwm_get_int(L, 3, "marks", 0);
  lua_getfield(L, 3, "watch");
  const sigwatch *W = lua_isnil(L, -1) ? NULL : luaL_checkudata(L, -1, SIGWATCH_MT);
  lua_pop(L, 1);
  luaL_argcheck(L, !W || W->exec, 3, "the signal watch is closed");
  luaL_argcheck(L, o.size >= 0 && (o.size == 0 || (o.slide > 0 && o.slide <= o.size)), 3,
                "bad window size or slide");
  luaL_argcheck(L, o.gap >= 0 && (o.gap == 0 || o.size == 0), 3, "bad session gap");
  if (H->finished) return luaL_error(L, "replay: the harness's input has ended already");
  H = lwm_h_begin(L, &fr);
  lab_run R;
  memset(&R, 0, sizeof R);
  R.H = H;
  R.winop = find_winop(H);
  R.gap = o.gap;
  replay_out out;
  memset(&out, 0, sizeof out);
  out.mark_stride = 1;
  int rc = WM_OK;
  /* without a window operator (a job replayed by read_lines{arrival}) nothing is measured */
  size_t n = D->n ? D->n : 1;
  if (rc == WM_OK) {
    out.lag = malloc(n * sizeof *out.lag);
    if (o.curve) {
      out.ct = malloc(o.curve * sizeof *out.ct);
      out.cw = malloc(o.curve * sizeof *out.cw);
      out.cp = malloc(o.curve * sizeof *out.cp);
    }
    if (o.marks) out.marks = malloc(o.marks * sizeof *out.marks);
    if (!out.lag || (o.curve && (!out.ct || !out.cw || !out.cp)) || (o.marks && !out.marks))
      rc = wm_ctx_error(&H->B.ctx, "out of memory");
  }
  if (rc == WM_OK) {
    /* the lab observes instead of the harness's recorder (h:timeline is not for a replay) */
    if (H->tl) {
      wm_timeline_detach(H->tl, &H->B.ctx);
      if (!H->tl_borrowed) wm_timeline_free(H->tl);
      H->tl = NULL;
    }
    R.prev = H->B.ctx.observe;
    R.prev_ud = H->B.ctx.observe_ud;
    H->B.ctx.observe = lab_observe;
    H->B.ctx.observe_ud = &R;
    H->discard = !keep;
    H->watch = W ? W->exec : NULL;
    rc = replay_loop(H, D, &o, &R, &out);
    H->watch = NULL;
    H->aborted = 0;
    H->discard = 0;
    H->B.ctx.observe = R.prev;
    H->B.ctx.observe_ud = R.prev_ud;
  }
  if (rc == WM_OK) {
    lua_createtable(L, 0, 16);
    int t = lua_gettop(L);
    lua_pushinteger(L, (lua_Integer)D->n);
    lua_setfield(L, t, "records");
    lua_pushinteger(L, (lua_Integer)out.late);
    lua_setfield(L, t, "late");
    lua_pushinteger(L, (lua_Integer)R.dropped);
    lua_setfield(L, t, "dropped");
    lua_pushinteger(L, (lua_Integer)R.late_firings);
    lua_setfield(L, t, "late_firings");
    lua_pushinteger(L, (lua_Integer)R.latency.n);
    lua_setfield(L, t, "latency_windows");
    lua_pushinteger(L, (lua_Integer)R.end_firings);
    lua_setfield(L, t, "end_firings");
    lua_pushinteger(L, (lua_Integer)R.first_firings);
    lua_setfield(L, t, "first_firings");
    lua_pushinteger(L, (lua_Integer)R.damaged);
    lua_setfield(L, t, "damaged_windows");
    push_i64_list(L, out.lateness.v, out.lateness.n);
    lua_setfield(L, t, "late_lateness");
    lua_createtable(L, (int)out.nlkeys, 0);
    for (size_t k = 0; k < out.nlkeys; k++) {
      if (out.lkeys[k].type == WM_NIL) lua_pushboolean(L, 0);
      else lwm_push_value(&H->B, &out.lkeys[k]);
      lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    lua_setfield(L, t, "late_keys");
    set_percentiles(L, t, "lag", out.lag, D->n);
    set_percentiles(L, t, "latency", R.latency.v, R.latency.n);
    if (o.curve) {
      lua_createtable(L, 0, 3);
      push_i64_list(L, out.ct, out.ncurve);
      lua_setfield(L, -2, "t");
      push_i64_list(L, out.cw, out.ncurve);
      lua_setfield(L, -2, "wm");
      push_i64_list(L, out.cp, out.ncurve);
      lua_setfield(L, -2, "perfect");
      lua_setfield(L, t, "curve");
    }
    if (o.marks) {
      lua_createtable(L, (int)out.nmarks, 0);
      for (size_t k = 0; k < out.nmarks; k++) {
        const mark *m = &out.marks[k];
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
  for (size_t i = 0; i < R.cap; i++)
    if (R.tab[i].used) wm_value_release(&H->B.ctx.host, &R.tab[i].key);
  free(R.tab);
  for (size_t i = 0; i < R.skcap; i++)
    if (R.sk[i].used) {
      wm_value_release(&H->B.ctx.host, &R.sk[i].key);
      free(R.sk[i].w);
    }
  free(R.sk);
  if (R.has_key) wm_value_release(&H->B.ctx.host, &R.cur_key);
  for (size_t k = 0; k < out.nlkeys; k++) wm_value_release(&H->B.ctx.host, &out.lkeys[k]);
  free(out.lkeys);
  free(out.lateness.v);
  free(R.latency.v);
  free(out.lag);
  free(out.ct);
  free(out.cw);
  free(out.cp);
  free(out.marks);
  return lwm_h_end(L, H, &fr, rc, rc == WM_OK ? 1 : 0);
}

/* h:replay_inputs({data, ...}): a job replayed on its sources' arrival times
 * (read_lines{arrival}, wm.lab.replay): data k feeds input k (channel 1). The lines of all
 * sources are merged in arrival order on the one virtual clock: before each line the clock
 * moves to its arrival (running what comes due: timers, idleness, periodic watermarks),
 * then the line is pushed. Lines that arrive at the same millisecond go in the order of
 * their sources (k), then in their file's order. A source ends (the MAX watermark) right
 * after its last line, as a file source ends when it reaches the end of the file (an empty
 * file at once); the job ends when every source has, once the sinks have written
 * everything. */
int lwm_h_replay_inputs(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  luaL_checktype(L, 2, LUA_TTABLE);
  int k = (int)lua_rawlen(L, 2);
  luaL_argcheck(L, k == H->ninputs, 2, "one data set per input");
  int signals = 0;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "signals");
    signals = lua_toboolean(L, -1);
    lua_getfield(L, 3, "no_drain");
    H->no_drain = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  lua_settop(L, 2);
  replay_data **D = lua_newuserdatauv(L, (size_t)k * (sizeof *D + sizeof(size_t)), 0);
  size_t *next = (size_t *)(D + k);
  for (int j = 0; j < k; j++) {
    lua_rawgeti(L, 2, j + 1);
    D[j] = luaL_checkudata(L, -1, REPLAY_MT); /* kept alive by the table at 2 */
    lua_pop(L, 1);
    next[j] = 0;
  }
  if (H->finished) return luaL_error(L, "replay: the harness's input has ended already");
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  wm_ctx *ctx = &H->B.ctx;
  int rc = WM_OK;
  if (signals) {
    H->signals = 1;
    rc = wm_exec_watch_signals(H->B.exec);
  }
  for (int j = 0; j < k && rc == WM_OK; j++) /* an empty file ends at once */
    if (D[j]->n == 0) rc = wm_op_input_watermark(H->inputs[j], 0, WM_TIME_MAX);
  for (uint64_t pushed = 0; rc == WM_OK; pushed++) {
    lwm_h_replay_signalled(H);
    if (H->aborted) {
      rc = wm_ctx_error(ctx, "wmrun: interrupted");
      break;
    }
    if (H->draining) { /* SIGINT: every source that has not ended ends now */
      for (int c = 0; c < k && rc == WM_OK; c++)
        if (next[c] < D[c]->n) {
          next[c] = D[c]->n;
          rc = wm_op_input_watermark(H->inputs[c], 0, WM_TIME_MAX);
        }
      break;
    }
    int j = -1;
    for (int c = 0; c < k; c++) /* the earliest next arrival; the first source on ties */
      if (next[c] < D[c]->n && (j < 0 || D[c]->arrival[next[c]] < D[j]->arrival[next[j]])) j = c;
    if (j < 0) break;
    replay_data *d = D[j];
    size_t i = next[j];
    if ((rc = lwm_h_advance_to(H, d->arrival[i])) != WM_OK) break;
    if (H->draining || H->aborted) continue; /* a signal stopped the clock before the line */
    next[j]++;
    wm_value v = wm_cstr(d->text + d->off[i], d->len[i]);
    /* emitted as a source emits (no records in, as --metrics shows a live source), at its
     * position in the file: parsers and errors name the file's line, as for a live source */
    wm_pos pos = {.origin = d->path ? d->path : "?", .line = d->lineno[i], .offset = d->off[i]};
    rc = wm_source_emit(H->inputs[j], &pos, &v, d->ts[i]);
    if (rc == WM_OK && next[j] == d->n) rc = wm_op_input_watermark(H->inputs[j], 0, WM_TIME_MAX);
    if (rc != WM_OK) break;
    /* the sinks write as they go; backpressure holds the replay as it would a live source */
    if ((pushed & 1023) == 1023 || wm_exec_paused(H->B.exec)) rc = lwm_h_pump(H, 0);
  }
  H->finished = 1;
  if (rc == WM_OK) rc = lwm_h_pump(H, 1);
  wm_print_flush_all(ctx);
  return lwm_h_end(L, H, &fr, rc, 0);
}

void lwm_replay_open(lua_State *L) {
  /* the harness's replay methods (its metatable exists: lwm_harness_open comes first) */
  if (luaL_getmetatable(L, HARNESS_MT) == LUA_TTABLE && lua_getfield(L, -1, "__index") == LUA_TTABLE) {
    lua_pushcfunction(L, lwm_h_replay);
    lua_setfield(L, -2, "replay");
    lua_pushcfunction(L, lwm_h_replay_inputs);
    lua_setfield(L, -2, "replay_inputs");
  }
  lua_pop(L, 2);
  if (luaL_newmetatable(L, REPLAY_MT)) {
    luaL_newlib(L, replay_data_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, replay_data_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
}
