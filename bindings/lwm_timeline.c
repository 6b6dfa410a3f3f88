/* The timeline's glue: the recorder stays in the core (core/timeline), the picture is
 * drawn by lua/wm/timeline.lua from the table lwm_timeline_push builds. */
#include "lwm_timeline.h"

#include "lwm_alloc.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>

#include "time/wm_time.h"

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* key numbers: 1..n index keys, 0 the other keys; no field when unknown */
static void set_key(lua_State *L, int16_t key) {
  if (key == WM_TL_KEY_NONE) return;
  set_int(L, "key", key == WM_TL_KEY_OTHER ? 0 : key + 1);
}

static void set_window(lua_State *L, wm_window w) {
  set_int(L, "start", w.start);
  set_int(L, "stop", w.stop);
}

static void push_stats(lua_State *L, const wm_timeline *tl) {
  wm_timeline_stats st;
  wm_timeline_stats_get(tl, &st);
  lua_createtable(L, 0, 11);
  set_int(L, "records", (lua_Integer)st.records);
  set_int(L, "late_dropped", (lua_Integer)st.late_dropped);
  set_int(L, "late_side", (lua_Integer)st.late_side);
  set_int(L, "firings", (lua_Integer)st.firings);
  set_int(L, "late_firings", (lua_Integer)st.late_firings);
  set_int(L, "cleanups", (lua_Integer)st.cleanups);
  set_int(L, "checkpoints", (lua_Integer)st.checkpoints);
  set_int(L, "records_shown", (lua_Integer)st.records_shown);
  set_int(L, "delay_samples", (lua_Integer)st.delay_samples);
  lua_pushnumber(L, st.mean_firing_delay);
  lua_setfield(L, -2, "mean_firing_delay");
  lua_pushboolean(L, st.oom);
  lua_setfield(L, -2, "oom");
}

static void push_records(lua_State *L, const wm_timeline *tl) {
  size_t n;
  const wm_timeline_record *r = wm_timeline_records(tl, &n);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 5);
    set_int(L, "x", (lua_Integer)r[i].x);
    set_int(L, "t", r[i].t);
    set_int(L, "ts", r[i].ts);
    set_key(L, r[i].key);
    if (r[i].late) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "late");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void push_lates(lua_State *L, const wm_timeline *tl) {
  size_t n;
  const wm_timeline_late *l = wm_timeline_lates(tl, &n);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 9);
    set_int(L, "x", (lua_Integer)l[i].x);
    set_int(L, "t", l[i].t);
    set_int(L, "ts", l[i].ts);
    set_int(L, "wm", l[i].wm);
    set_int(L, "lateness", l[i].lateness);
    set_key(L, l[i].key);
    if (l[i].series >= 0) set_int(L, "series", l[i].series + 1);
    lua_pushboolean(L, l[i].side);
    lua_setfield(L, -2, "side");
    if (l[i].tag) {
      lua_pushstring(L, l[i].tag);
      lua_setfield(L, -2, "tag");
    }
    if (l[i].input) set_int(L, "input", l[i].input);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void push_marks(lua_State *L, const wm_timeline *tl) {
  static const char *const kinds[] = {"fire", "late_fire", "cleanup"};
  size_t n;
  const wm_timeline_mark *m = wm_timeline_marks(tl, &n);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 8);
    lua_pushstring(L, kinds[m[i].kind]);
    lua_setfield(L, -2, "kind");
    set_int(L, "x", (lua_Integer)m[i].x);
    set_int(L, "t", m[i].t);
    set_int(L, "wm", m[i].wm);
    set_window(L, m[i].w);
    set_int(L, "series", m[i].series + 1);
    set_key(L, m[i].key);
    if (m[i].value[0]) {
      lua_pushstring(L, m[i].value);
      lua_setfield(L, -2, "value");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void push_ckpts(lua_State *L, const wm_timeline *tl) {
  size_t n;
  const wm_timeline_ckpt *c = wm_timeline_ckpts(tl, &n);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 6);
    set_int(L, "x", (lua_Integer)c[i].x);
    set_int(L, "t", c[i].t);
    set_int(L, "id", (lua_Integer)c[i].id);
    set_int(L, "bytes", (lua_Integer)c[i].bytes);
    lua_pushnumber(L, c[i].ms);
    lua_setfield(L, -2, "ms");
    lua_pushboolean(L, c[i].final);
    lua_setfield(L, -2, "final");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void push_windows(lua_State *L, const wm_timeline *tl) {
  lua_newtable(L);
  size_t it = 0;
  lua_Integer k = 0;
  for (const wm_timeline_window *w; (w = wm_timeline_window_next(tl, &it));) {
    lua_createtable(L, 0, 8);
    set_window(L, w->w);
    set_int(L, "series", w->series + 1);
    set_int(L, "x0", (lua_Integer)w->x0);
    set_int(L, "t0", w->t0);
    if (w->cleaned) {
      set_int(L, "x1", (lua_Integer)w->x1);
      set_int(L, "t1", w->t1);
    }
    lua_pushboolean(L, w->fired);
    lua_setfield(L, -2, "fired");
    lua_rawseti(L, -2, ++k);
  }
}

static void push_series(lua_State *L, const wm_timeline *tl) {
  int n = wm_timeline_nseries(tl);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    wm_timeline_series s;
    wm_timeline_series_get(tl, i, &s);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, s.name);
    lua_setfield(L, -2, "name");
    lua_pushboolean(L, s.window != 0); /* an operator's input, drawn under the assigners' */
    lua_setfield(L, -2, "window");
    if (s.window >= 2) set_int(L, "input", s.window - 1); /* a two-input operator's input */
    set_int(L, "advances", (lua_Integer)s.advances);
    lua_createtable(L, (int)s.n, 0);
    for (size_t j = 0; j < s.n; j++) {
      lua_createtable(L, 0, 3);
      set_int(L, "x", (lua_Integer)s.steps[j].x);
      set_int(L, "t", s.steps[j].t);
      set_int(L, "v", s.steps[j].v);
      lua_rawseti(L, -2, (lua_Integer)j + 1);
    }
    lua_setfield(L, -2, "steps");
    lua_rawseti(L, -2, i + 1);
  }
}

void lwm_timeline_push(lua_State *L, const wm_timeline *tl) {
  luaL_checkstack(L, 8, "timeline");
  lua_createtable(L, 0, 11);
  lua_pushstring(L, wm_timeline_title(tl));
  lua_setfield(L, -2, "title");
  set_int(L, "arrivals", (lua_Integer)wm_timeline_arrivals(tl));
  int other;
  int nkeys = wm_timeline_nkeys(tl, &other);
  lua_createtable(L, nkeys, 0);
  for (int i = 0; i < nkeys; i++) {
    lua_pushstring(L, wm_timeline_key(tl, i));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "keys");
  lua_pushboolean(L, other);
  lua_setfield(L, -2, "other_keys");
  push_stats(L, tl);
  lua_setfield(L, -2, "stats");
  push_records(L, tl);
  lua_setfield(L, -2, "records");
  push_lates(L, tl);
  lua_setfield(L, -2, "lates");
  push_marks(L, tl);
  lua_setfield(L, -2, "marks");
  push_ckpts(L, tl);
  lua_setfield(L, -2, "checkpoints");
  push_windows(L, tl);
  lua_setfield(L, -2, "windows");
  push_series(L, tl);
  lua_setfield(L, -2, "series");
}

/* ---- wmrun: a fresh Lua state that runs one function of wm.timeline ----------------- */

typedef struct call {
  const char *luadir, *fn, *path, *x;
  wm_timeline *const *tls;
  int n;
} call;

static int pcall_timeline(lua_State *L) {
  const call *c = lua_touserdata(L, 1);
  luaL_openlibs(L);
  lua_getglobal(L, "package"); /* the library next to wmrun first, as pmain does */
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", c->luadir, c->luadir);
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_getglobal(L, "require");
  lua_pushliteral(L, "wm.timeline");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, c->fn);
  lua_pushstring(L, c->path);
  if (c->tls) {
    lua_createtable(L, c->n, 0);
    for (int i = 0; i < c->n; i++) {
      lwm_timeline_push(L, c->tls[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_createtable(L, 0, 1);
    lua_pushstring(L, c->x);
    lua_setfield(L, -2, "x");
    lua_call(L, 3, 0);
  } else if (c->x) { /* from_trace(path, trace) */
    lua_pushstring(L, c->x);
    lua_call(L, 2, 0);
  } else {
    lua_call(L, 1, 0);
  }
  return 0;
}

static int run_call(const call *c, char *err, size_t errlen) {
  const char *why;
  lua_State *L = lwm_new_state(&why);
  if (!L) {
    snprintf(err, errlen, "%s", why);
    return -1;
  }
  lua_pushcfunction(L, pcall_timeline);
  lua_pushlightuserdata(L, (void *)c);
  int rc = 0;
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    snprintf(err, errlen, "%s", msg ? msg : "(error object is not a string)");
    rc = -1;
  }
  lwm_close_state(L);
  return rc;
}

int lwm_timeline_check(const char *luadir, const char *path, char *err, size_t errlen) {
  call c = {luadir, "check_output", path, NULL, NULL, 0};
  return run_call(&c, err, errlen);
}

int lwm_timeline_from_trace(const char *luadir, const char *trace, const char *path, char *err,
                            size_t errlen) {
  call c = {luadir, "from_trace", path, trace, NULL, 0};
  return run_call(&c, err, errlen);
}

int lwm_timeline_save(const char *luadir, wm_timeline *const *tls, int n, const char *x,
                      const char *path, char *err, size_t errlen) {
  call c = {luadir, "save", path, x, tls, n};
  return run_call(&c, err, errlen);
}
