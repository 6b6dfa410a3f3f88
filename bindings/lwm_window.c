/* Building window operators from the plan (wm.windows, WindowedStream): assigners,
 * triggers and evictors (built-in or written in Lua), dynamic session gaps, window
 * functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lwm.h"
#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_sqlagg.h"
#include "lwm_window.h"
#include "lwm_wjoin.h"

/* ---- custom triggers written in Lua ------------------------------------------------- */

typedef struct trlua {
  lwm_opinfo oi;   /* fn: on_element, fn2: on_event_time, fn3: on_processing_time,
                      fn4: on_merge, fn5: clear (0 when absent) */
  int ctxtab;      /* the ctx table handed to every callback (reused) */
  wm_trigger_ctx *cur; /* the call in progress */
} trlua;

static trlua *trigger_of(lua_State *L) {
  trlua *t = lua_touserdata(L, lua_upvalueindex(1));
  if (!t->cur) luaL_error(L, "trigger context used outside of a trigger callback");
  return t;
}

/* ctx:register_event_time_timer(t) and friends; upvalue 2: the domain, 3: delete */
static int l_tr_timer(lua_State *L) {
  trlua *t = trigger_of(L);
  int domain = (int)lua_tointeger(L, lua_upvalueindex(2));
  int del = lua_toboolean(L, lua_upvalueindex(3));
  int64_t time = lwm_check_millis(L, 2);
  if (del) {
    wm_trigger_delete(t->cur, domain, time);
    return 0;
  }
  if (domain == WM_DOMAIN_EVENT) t->oi.B->event_time = 1;
  if (wm_trigger_register(t->cur, domain, time) != WM_OK) {
    t->oi.B->downstream_failed = 1;
    return luaL_error(L, "%s", wm_ctx_errtext(&t->oi.B->ctx));
  }
  return 0;
}

/* Sets up the ctx table for a call and pushes fn, (args pushed by the caller). */
static void tr_begin(trlua *t, wm_trigger_ctx *c) {
  lwm_bridge *B = t->oi.B;
  lua_State *L = B->L;
  t->cur = c;
  t->oi.op = c->op;
  lwm_push_fn(B, t->ctxtab);
  lua_pushinteger(L, (lua_Integer)c->watermark);
  lua_setfield(L, -2, "current_watermark");
  lua_pushinteger(L, (lua_Integer)wm_trigger_now(c));
  lua_setfield(L, -2, "current_processing_time");
  lwm_push_value(B, c->key);
  lua_setfield(L, -2, "key");
  /* per-window state: a table created on first use */
  if (c->hstate->type == WM_NIL) {
    lua_newtable(L);
    uint32_t slot = lwm_slot_new(B, -1);
    lua_pop(L, 1);
    if (slot) {
      c->hstate->type = WM_SLOT;
      c->hstate->u.slot = slot;
    }
  }
  lwm_push_value(B, c->hstate);
  lua_setfield(L, -2, "state");
  lua_pop(L, 1);
}

/* Calls the callback fn with nargs arguments (pushed after the function), then the window
 * and ctx; returns the trigger result. */
static int tr_call(trlua *t, wm_trigger_ctx *c, int nargs, const wm_value *rec, int want_result) {
  lwm_bridge *B = t->oi.B;
  lua_State *L = B->L;
  lwm_push_window(L, c->window, c->max_ts);
  lwm_push_fn(B, t->ctxtab);
  int rc = lwm_call(&t->oi, nargs + 2, 1, rec);
  t->cur = NULL;
  if (rc != WM_OK) return WM_ERR;
  if (!want_result) {
    lua_pop(L, 1);
    return WM_OK;
  }
  int res = -1;
  if (lua_isnil(L, -1)) res = WM_TR_CONTINUE;
  else if (lua_type(L, -1) == LUA_TSTRING) {
    const char *s = lua_tostring(L, -1);
    if (strcmp(s, "continue") == 0) res = WM_TR_CONTINUE;
    else if (strcmp(s, "fire") == 0) res = WM_TR_FIRE;
    else if (strcmp(s, "purge") == 0) res = WM_TR_PURGE;
    else if (strcmp(s, "fire_and_purge") == 0) res = WM_TR_FIRE_AND_PURGE;
  }
  if (res < 0) {
    char d[64];
    if (lua_type(L, -1) == LUA_TSTRING) snprintf(d, sizeof d, "\"%.40s\"", lua_tostring(L, -1));
    else snprintf(d, sizeof d, "a %s", luaL_typename(L, -1));
    lua_pop(L, 1);
    return lwm_op_error(&t->oi, rec,
                        "custom trigger returned %s (expected \"continue\", \"fire\", \"purge\" "
                        "or \"fire_and_purge\")", d);
  }
  lua_pop(L, 1);
  return res;
}

static int trl_element(const wm_trigger *tr, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  trlua *t = tr->ud;
  if (!t->oi.fn) return WM_TR_CONTINUE;
  tr_begin(t, c);
  lwm_push_fn(t->oi.B, t->oi.fn);
  lwm_push_value(t->oi.B, rec);
  lua_pushinteger(t->oi.B->L, (lua_Integer)ts);
  return tr_call(t, c, 2, rec, 1);
}

static int trl_time(trlua *t, int fn, wm_trigger_ctx *c, int64_t time) {
  if (!fn) return WM_TR_CONTINUE;
  tr_begin(t, c);
  lwm_push_fn(t->oi.B, fn);
  lua_pushinteger(t->oi.B->L, (lua_Integer)time);
  return tr_call(t, c, 1, NULL, 1);
}
static int trl_event(const wm_trigger *tr, wm_trigger_ctx *c, int64_t time) {
  trlua *t = tr->ud;
  return trl_time(t, t->oi.fn2, c, time);
}
static int trl_proc(const wm_trigger *tr, wm_trigger_ctx *c, int64_t time) {
  trlua *t = tr->ud;
  return trl_time(t, t->oi.fn3, c, time);
}
static int trl_noarg(trlua *t, int fn, wm_trigger_ctx *c) {
  if (!fn) return WM_OK;
  tr_begin(t, c);
  lwm_push_fn(t->oi.B, fn);
  return tr_call(t, c, 0, NULL, 0);
}
static int trl_merge(const wm_trigger *tr, wm_trigger_ctx *c) {
  trlua *t = tr->ud;
  return trl_noarg(t, t->oi.fn4, c);
}
static int trl_clear(const wm_trigger *tr, wm_trigger_ctx *c) {
  trlua *t = tr->ud;
  return trl_noarg(t, t->oi.fn5, c);
}

static const wm_trigger_vt trlua_vt = {"custom", trl_element, trl_event, trl_proc, trl_merge, NULL, trl_clear};
static const wm_trigger_vt trlua_nomerge_vt = {"custom", trl_element, trl_event, trl_proc, NULL, NULL, trl_clear};

static wm_trigger *custom_trigger(lwm_bridge *B, int spec, const char *where) {
  lua_State *L = B->L;
  wm_error_clear(&B->ctx.error); /* NULL with no message: out of memory */
  lwm_opinfo *oi = lwm_opinfo_new(B, where);
  if (!oi) return NULL;
  trlua *t = realloc(oi, sizeof *t);
  if (!t) {
    lwm_opinfo_free(oi);
    return NULL;
  }
  t->cur = NULL;
  t->oi.fn = lwm_get_fn(B, spec, "on_element");
  t->oi.fn2 = lwm_get_fn(B, spec, "on_event_time");
  t->oi.fn3 = lwm_get_fn(B, spec, "on_processing_time");
  t->oi.fn4 = lwm_get_fn(B, spec, "on_merge");
  t->oi.fn5 = lwm_get_fn(B, spec, "clear");
  if (lua_getfield(L, spec, "self") == LUA_TTABLE && /* the spec, when it has methods */
      lwm_hooks_read(B, -1, &t->oi.hooks, "the custom trigger", where) != 0) {
    lua_pop(L, 1);
    lwm_opinfo_free(t);
    return NULL;
  }
  lua_pop(L, 1);
  static const struct {
    const char *name;
    int domain, del;
  } m[] = {{"register_event_time_timer", WM_DOMAIN_EVENT, 0},
           {"register_processing_time_timer", WM_DOMAIN_PROCESSING, 0},
           {"delete_event_time_timer", WM_DOMAIN_EVENT, 1},
           {"delete_processing_time_timer", WM_DOMAIN_PROCESSING, 1}};
  lua_createtable(L, 0, 8);
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    lua_pushlightuserdata(L, t);
    lua_pushinteger(L, m[i].domain);
    lua_pushboolean(L, m[i].del);
    lua_pushcclosure(L, l_tr_timer, 3);
    lua_setfield(L, -2, m[i].name);
  }
  lua_rawseti(L, B->fns, ++B->nfns);
  t->ctxtab = B->nfns;
  wm_trigger *tr = wm_trigger_custom(t->oi.fn4 ? &trlua_vt : &trlua_nomerge_vt, t, lwm_opinfo_free);
  if (tr && t->oi.hooks.snapshot) {
    tr->snapshot = lwm_opinfo_snapshot;
    tr->restore = lwm_opinfo_restore;
  }
  return tr;
}

/* A trigger from its spec table at idx (wm.triggers); NULL with a message. */
static wm_trigger *build_trigger(lwm_bridge *B, int idx, const char *where) {
  lua_State *L = B->L;
  const char *kind = lwm_get_str(L, idx, "kind");
  int64_t n = (int64_t)lwm_get_int(L, idx, "n", 0);
  static const struct {
    const char *name;
    int kind;
  } kinds[] = {{"event_time", WM_TRIG_EVENT_TIME},
               {"processing_time", WM_TRIG_PROCESSING_TIME},
               {"count", WM_TRIG_COUNT},
               {"continuous_event_time", WM_TRIG_CONTINUOUS_EVENT_TIME},
               {"continuous_processing_time", WM_TRIG_CONTINUOUS_PROCESSING_TIME},
               {"end_of_stream", WM_TRIG_END_OF_STREAM},
               {"never", WM_TRIG_NEVER}};
  wm_trigger *t = NULL;
  if (!kind) {
    wm_ctx_error(&B->ctx, "%s: not a trigger", where);
    return NULL;
  }
  if (strcmp(kind, "purging") == 0) {
    lua_getfield(L, idx, "inner");
    wm_trigger *inner = build_trigger(B, lua_gettop(L), where);
    lua_pop(L, 1);
    if (!inner) return NULL;
    t = wm_trigger_purging(inner);
  } else if (strcmp(kind, "custom") == 0) {
    t = custom_trigger(B, idx, where);
    if (!t && B->ctx.error.msg[0]) return NULL; /* the message is set */
  } else {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
      if (strcmp(kind, kinds[i].name) == 0) {
        if (kinds[i].kind == WM_TRIG_EVENT_TIME || kinds[i].kind == WM_TRIG_CONTINUOUS_EVENT_TIME)
          B->event_time = 1;
        t = wm_trigger_new(kinds[i].kind, n);
        if (!t) {
          wm_ctx_error(&B->ctx, "%s: bad %s trigger (%lld)", where, kind, (long long)n);
          return NULL;
        }
        return t;
      }
    wm_ctx_error(&B->ctx, "%s: unknown trigger '%s'", where, kind);
    return NULL;
  }
  if (!t) wm_ctx_error(&B->ctx, "out of memory");
  return t;
}

/* ---- custom evictors ---------------------------------------------------------------- */

typedef struct evlua {
  lwm_opinfo oi; /* fn: before, fn2: after */
} evlua;

static int evl_fn(void *ud, wm_op *op, int after, const wm_trigger_ctx *c, wm_evict_items *it) {
  evlua *e = ud;
  lwm_bridge *B = e->oi.B;
  lua_State *L = B->L;
  int fn = after ? e->oi.fn2 : e->oi.fn;
  if (!fn) return WM_OK;
  e->oi.op = op;
  luaL_checkstack(L, 8, "wmrun: evictor");
  int orig = lua_gettop(L) + 1;
  for (int copy = 0; copy < 2; copy++) { /* the originals (kept to match), then the argument */
    if (copy) lwm_push_fn(B, fn);
    lua_createtable(L, (int)it->n, 0);
    for (uint32_t i = 0; i < it->n; i++) {
      lwm_push_value(B, &it->items[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  }
  lua_createtable(L, 0, 4); /* ctx */
  lwm_push_window(L, c->window, c->max_ts);
  lua_setfield(L, -2, "window");
  lwm_push_value(B, c->key);
  lua_setfield(L, -2, "key");
  lua_pushinteger(L, (lua_Integer)c->watermark);
  lua_setfield(L, -2, "current_watermark");
  lua_createtable(L, (int)it->n, 0);
  for (uint32_t i = 0; i < it->n; i++) {
    if (it->ts[i] == WM_TIME_MIN) lua_pushboolean(L, 0);
    else lua_pushinteger(L, (lua_Integer)it->ts[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "timestamps");
  if (lwm_call(&e->oi, 2, 1, NULL) != WM_OK) {
    lua_settop(L, orig - 1);
    return WM_ERR;
  }
  if (lua_isnil(L, -1)) { /* nil: keep everything */
    lua_settop(L, orig - 1);
    return WM_OK;
  }
  if (!lua_istable(L, -1)) {
    const char *tn = luaL_typename(L, -1);
    lua_settop(L, orig - 1);
    return lwm_op_error(&e->oi, NULL, "evictor %s returned a %s (expected a list of records)",
                        after ? "after" : "before", tn);
  }
  /* the kept records, in their new order; a record found among the originals keeps its
   * timestamp (matched by identity, scanning forward), others get none */
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  wm_value *items = calloc((size_t)n + 1, sizeof *items);
  int64_t *ts = calloc((size_t)n + 1, sizeof *ts);
  if (!items || !ts) {
    free(items);
    free(ts);
    lua_settop(L, orig - 1);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  uint32_t scan = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    ts[i - 1] = WM_TIME_MIN;
    for (uint32_t k = scan; k < it->n; k++) {
      lua_rawgeti(L, orig, (lua_Integer)k + 1);
      int same = lua_rawequal(L, -1, -2);
      lua_pop(L, 1);
      if (same) {
        ts[i - 1] = it->ts[k];
        scan = k + 1;
        break;
      }
    }
    wm_value v;
    if (lwm_to_value(B, -1, &v) != 0 || (v.type != WM_SLOT && wm_value_retain(&B->ctx.host, &v) != 0)) {
      for (lua_Integer k = 1; k < i; k++) wm_value_release(&B->ctx.host, &items[k - 1]);
      free(items);
      free(ts);
      lua_settop(L, orig - 1);
      return wm_ctx_error(&B->ctx, "out of memory");
    }
    items[i - 1] = v;
    lua_pop(L, 1);
  }
  lua_settop(L, orig - 1);
  /* replace the window's records; the arrays are the window's, so reuse their room */
  for (uint32_t i = 0; i < it->n; i++) wm_value_release(&B->ctx.host, &it->items[i]);
  uint32_t keep = 0;
  for (lua_Integer i = 0; i < n; i++) {
    if (keep < it->n) {
      it->items[keep] = items[i];
      it->ts[keep] = ts[i];
      keep++;
    } else {
      wm_value_release(&B->ctx.host, &items[i]); /* more records than before: not kept */
    }
  }
  free(items);
  free(ts);
  if ((uint32_t)n > it->n) {
    it->n = keep;
    return lwm_op_error(&e->oi, NULL, "an evictor may remove records but not add any (%lld > %lu)",
                        (long long)n, (unsigned long)it->n);
  }
  it->n = keep;
  return WM_OK;
}

/* ---- dynamic session gaps ------------------------------------------------------------ */

static int gap_fn(void *ud, wm_op *op, const wm_value *rec, int64_t ts, int64_t *gap) {
  (void)ts;
  lwm_opinfo *oi = ud;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  oi->op = op;
  lwm_push_fn(B, oi->fn);
  lwm_push_value(B, rec);
  if (lwm_call(oi, 1, 1, rec) != WM_OK) return WM_ERR;
  int ok = 0;
  if (lua_isinteger(L, -1)) {
    *gap = (int64_t)lua_tointeger(L, -1);
    ok = *gap > 0;
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    lua_Number n = lua_tonumber(L, -1);
    if (floor(n) == n && n > 0 && n < 9.2e18) {
      *gap = (int64_t)n;
      ok = 1;
    }
  }
  if (!ok) {
    char d[80];
    if (lua_type(L, -1) == LUA_TNUMBER) {
      if (lua_isinteger(L, -1)) snprintf(d, sizeof d, "%lld", (long long)lua_tointeger(L, -1));
      else snprintf(d, sizeof d, "%.17g", (double)lua_tonumber(L, -1));
    } else if (lua_type(L, -1) == LUA_TSTRING) {
      snprintf(d, sizeof d, "the string \"%.40s\"", lua_tostring(L, -1));
    } else {
      snprintf(d, sizeof d, "%s", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    return lwm_op_error(oi, rec, "session gap function returned %s (expected a positive integer number of ms)", d);
  }
  lua_pop(L, 1);
  return WM_OK;
}

/* ---- the window operator -------------------------------------------------------------- */


static int build_assigner(lwm_bridge *B, int node, const char *where, wm_winop_config *cfg,
                          int *count_n, int *count_slide) {
  lua_State *L = B->L;
  lua_getfield(L, node, "assigner");
  int a = lua_gettop(L);
  const char *kind = lwm_get_str(L, a, "kind");
  if (!kind) kind = "?";
  wm_assigner *as = &cfg->assigner;
  if (strcmp(kind, "tumbling") == 0) as->kind = WM_WA_TUMBLING;
  else if (strcmp(kind, "sliding") == 0) as->kind = WM_WA_SLIDING;
  else if (strcmp(kind, "session") == 0) as->kind = WM_WA_SESSION;
  else if (strcmp(kind, "global") == 0 || strcmp(kind, "count") == 0) as->kind = WM_WA_GLOBAL;
  else {
    lua_pop(L, 1);
    return wm_ctx_error(&B->ctx, "%s: unknown window assigner '%s'", where, kind);
  }
  as->size = (int64_t)lwm_get_int(L, a, "size", 0);
  as->slide = (int64_t)lwm_get_int(L, a, "slide", 0);
  as->offset = (int64_t)lwm_get_int(L, a, "offset", 0);
  as->gap = (int64_t)lwm_get_int(L, a, "gap", 0);
  lua_getfield(L, a, "processing_time");
  as->processing_time = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (strcmp(kind, "count") == 0) {
    *count_n = (int)lwm_get_int(L, a, "size", 0);
    *count_slide = (int)lwm_get_int(L, a, "slide", 0);
    as->size = as->slide = 0;
  }
  lua_getfield(L, a, "gap_fn");
  if (!lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) {
      lua_pop(L, 1);
      return wm_ctx_error(&B->ctx, "out of memory");
    }
    oi->fn = lwm_get_fn(B, a, "gap_fn");
    as->gap = -1;
    cfg->gapfn.fn = gap_fn;
    cfg->gapfn.free = lwm_opinfo_free;
    cfg->gapfn.ud = oi;
  } else {
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (wm_assigner_check(as, &B->ctx.error) != 0)
    return wm_ctx_error(&B->ctx, "%s: %s", where, B->ctx.error.msg);
  return WM_OK;
}

static int build_evictor(lwm_bridge *B, int node, const char *where, wm_evictor *ev) {
  lua_State *L = B->L;
  lua_getfield(L, node, "evictor");
  int e = lua_gettop(L);
  if (!lua_istable(L, e)) {
    lua_pop(L, 1);
    return WM_OK;
  }
  const char *kind = lwm_get_str(L, e, "kind");
  lua_getfield(L, e, "after");
  ev->after = lua_toboolean(L, -1);
  lua_pop(L, 1);
  ev->n = (int64_t)lwm_get_int(L, e, "n", 0);
  if (kind && strcmp(kind, "count") == 0) ev->kind = WM_EV_COUNT;
  else if (kind && strcmp(kind, "time") == 0) ev->kind = WM_EV_TIME;
  else if (kind && strcmp(kind, "custom") == 0) {
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    evlua *x = oi ? realloc(oi, sizeof *x) : NULL;
    if (!x) {
      lwm_opinfo_free(oi);
      lua_pop(L, 1);
      return wm_ctx_error(&B->ctx, "out of memory");
    }
    x->oi.fn = lwm_get_fn(B, e, "before");
    x->oi.fn2 = lwm_get_fn(B, e, "after_fn");
    ev->kind = WM_EV_CUSTOM;
    ev->fn = evl_fn;
    ev->free = lwm_opinfo_free;
    ev->ud = x;
  } else {
    lua_pop(L, 1);
    return wm_ctx_error(&B->ctx, "%s: unknown evictor '%s'", where, kind ? kind : "?");
  }
  lua_pop(L, 1);
  return WM_OK;
}

/* The configuration being built: listed as pending (lwm_pending_add) until the operator takes
 * it, since reading the plan may raise (running out of memory) between two of the parts it
 * allocates, and then nothing is left on the C stack to free them. */
static void free_config(void *ud) {
  wm_winop_config_free(ud);
  free(ud);
}

/* the side output of a pre-aggregation's late records: they go on to the key exchange */
#define PREAGG_LATE "\1wmrun: late for the pre-aggregation" /* '\1': not a side output */

/* pre: 0 for the window (B->preagg: whether it merges partials), else the local
 * pre-aggregation's operator (lwm_build_preagg) of that kind (LWM_PRE_*) */
/* Appends where the Lua function at the top of the stack is defined, and pops it: "function
 * at line 12 of the job" for the job script's own (so that a job renamed or run from another
 * folder is the same job), else "function at lib.lua:12" (the file without its folders). */
static void add_fn_place(lua_State *L, const char *role, char *out, size_t n, int *count) {
  lua_Debug ar;
  if (!lua_isfunction(L, -1) || lua_iscfunction(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getinfo(L, ">S", &ar);
  const char *src = ar.source ? ar.source : "?";
  if (*src == '@' || *src == '=') src++;
  lua_getfield(L, LUA_REGISTRYINDEX, "wm.core.job");
  const char *job = lua_tostring(L, -1);
  int own = job && (strcmp(src, job) == 0 || (ar.source && *ar.source != '@'));
  lua_pop(L, 1);
  const char *slash = strrchr(src, '/');
  if (slash) src = slash + 1;
  size_t k = strlen(out);
  if (k < n && own)
    snprintf(out + k, n - k, "%s%s%sfunction at line %d of the job", *count ? ", " : "", role,
             *role ? " " : "", ar.linedefined);
  else if (k < n)
    snprintf(out + k, n - k, "%s%s%sfunction at %.60s:%d", *count ? ", " : "", role,
             *role ? " " : "", src, ar.linedefined);
  ++*count;
}

/* What an incremental Lua window function's state means (wm_winop_config.meaning): its kind
 * and where its state-making functions are defined ("reduce (function at line 12 of the
 * job)", "aggregate (create function at agg.lua:5, add function at agg.lua:6)"), or the version
 * the user gave with the operator's uid (`:uid("sums", 2)`: "reduce (version 2 of uid
 * sums)"), which then stands for them. A process function keeps the records, whatever
 * reads them: not checked. */
void lwm_fn_meaning(lua_State *L, int node, const char *fk, char *out, size_t n) {
  out[0] = '\0';
  if (strcmp(fk, "reduce") != 0 && strcmp(fk, "aggregate") != 0) return;
  const char *uid = lwm_get_str(L, node, "uid"), *ver = lwm_get_str(L, node, "uid_version");
  if (uid && ver) {
    snprintf(out, n, "%s (version %s of uid %s)", fk, ver, uid);
    return;
  }
  snprintf(out, n, "%s (", fk);
  int count = 0;
  if (strcmp(fk, "reduce") == 0) {
    lua_getfield(L, node, "fn");
    add_fn_place(L, "", out, n, &count);
  } else {
    lua_getfield(L, node, "agg");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "create");
      add_fn_place(L, "create", out, n, &count);
      lua_getfield(L, -1, "add");
      add_fn_place(L, "add", out, n, &count);
    }
    lua_pop(L, 1);
  }
  size_t k = strlen(out);
  if (!count) out[0] = '\0';
  else if (k + 1 < n) snprintf(out + k, n - k, ")");
}

static wm_op *build_window(lwm_bridge *B, int node, const char *name, const char *where, int pre) {
  lua_State *L = B->L;
  wm_winop_config *cfg = calloc(1, sizeof *cfg);
  lwm_pending *pending = cfg ? lwm_pending_add(B, free_config, cfg) : NULL;
  if (!pending) {
    free(cfg);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  int count_n = 0, count_slide = 0;
  if (build_assigner(B, node, where, cfg, &count_n, &count_slide) != WM_OK) goto fail;
  cfg->lateness = pre ? 0 : (int64_t)lwm_get_int(L, node, "lateness", 0);
  /* count's, reduce's and aggregate's partials carry their key (below); a record late for
   * its part crosses as its own partial. sum, min and max: as a record. */
  int keyed_partials = pre ? pre != LWM_PRE_FIRST : B->preagg && B->preagg != LWM_PRE_FIRST;
  cfg->late_tag = !pre ? lwm_get_str(L, node, "late_tag") : keyed_partials ? NULL : PREAGG_LATE;
  cfg->first_by_chan = !pre && B->preagg == LWM_PRE_FIRST;
  cfg->late_as_partial = pre && keyed_partials;
  cfg->merges_partials = !pre && B->preagg != 0;
  /* count's partials are its results, {count, key, start, stop}, reduce's and aggregate's
   * {key, acc}: keyed by their key */
  static const char *const pkey[] = {"key"};
  if (!pre && keyed_partials) {
    if (wm_keysel_fields(&cfg->keysel, pkey, 1) != 0) {
      wm_ctx_error(&B->ctx, "out of memory");
      goto fail;
    }
  } else if (lwm_build_keysel(B, node, where, &cfg->keysel) != WM_OK) {
    goto fail;
  }
  /* the trigger: the user's, or the assigner's default (count windows: purging count(n),
   * or count(slide) with an evictor keeping the last n) */
  lua_getfield(L, node, "trigger");
  if (lua_istable(L, -1)) {
    cfg->trigger = build_trigger(B, lua_gettop(L), where);
    lua_pop(L, 1);
    if (!cfg->trigger) goto fail;
  } else {
    lua_pop(L, 1);
    /* the assigner's default trigger: event time unless processing time or global */
    if (cfg->assigner.kind != WM_WA_GLOBAL && !cfg->assigner.processing_time) B->event_time = 1;
    if (count_n > 0) {
      cfg->trigger = count_slide > 0 ? wm_trigger_new(WM_TRIG_COUNT, count_slide)
                                    : wm_trigger_purging(wm_trigger_new(WM_TRIG_COUNT, count_n));
      if (!cfg->trigger) {
        wm_ctx_error(&B->ctx, "out of memory");
        goto fail;
      }
    }
  }
  if (build_evictor(B, node, where, &cfg->evictor) != WM_OK) goto fail;
  if (count_n > 0 && count_slide > 0 && !cfg->evictor.kind) {
    cfg->evictor.kind = WM_EV_COUNT;
    cfg->evictor.n = count_n;
  }
  /* the function */
  const char *fk = lwm_get_str(L, node, "fn_kind");
  int rc = 0;
  if (!pre && B->preagg == LWM_PRE_COUNT) { /* the partials' counts, added up */
    rc = wm_winfn_builtin(&cfg->fn, WM_AGG_SUM, "count");
  } else if (fk && strcmp(fk, "builtin") == 0) {
    const char *agg = lwm_get_str(L, node, "agg");
    static const char *const aggs[] = {"sum", "min", "max", "min_by", "max_by", "count"};
    int kindi = 0;
    for (int i = 0; i < 6; i++)
      if (agg && strcmp(agg, aggs[i]) == 0) kindi = i + 1;
    rc = wm_winfn_builtin(&cfg->fn, kindi, lwm_get_str(L, node, "field"));
  } else if (fk && strcmp(fk, "sqlagg") == 0) { /* a SQL GROUP BY's aggregates in C */
    if (lwm_winfn_sqlagg(B, node, where, &cfg->fn, cfg->meaning, sizeof cfg->meaning, 0) != WM_OK) goto fail;
  } else {
    int fns[5] = {lwm_get_fn(B, node, "fn"), 0, 0, 0, 0};
    lua_getfield(L, node, "agg");
    if (lua_istable(L, -1)) {
      int ag = lua_gettop(L);
      fns[1] = lwm_get_fn(B, ag, "create");
      fns[2] = lwm_get_fn(B, ag, "add");
      fns[3] = lwm_get_fn(B, ag, "result");
      fns[4] = lwm_get_fn(B, ag, "merge");
    }
    lua_pop(L, 1);
    int pfn = lwm_get_fn(B, node, "process_fn");
    /* pre-aggregated: the process function runs at the window only */
    int mode = pre ? LWM_WL_PARTIAL : B->preagg ? LWM_WL_MERGE : LWM_WL_PLAIN;
    if (pre) pfn = 0;
    lwm_opinfo *oi = lwm_opinfo_new(B, where); /* after the reads, which may raise */
    if (!oi) rc = -1;
    else {
      oi->fn = fns[0];
      oi->fn2 = fns[1];
      oi->fn3 = fns[2];
      oi->fn4 = fns[3];
      oi->fn5 = fns[4];
      int join = fk && strcmp(fk, "join") == 0, cogroup = fk && strcmp(fk, "co_group") == 0;
      if (join || cogroup) rc = lwm_winfn_wjoin(&cfg->fn, oi, cogroup); /* a window join's */
      else rc = lwm_winfn_lua_pre(&cfg->fn, oi, fk ? fk : "reduce", pfn, mode);
    }
    lwm_fn_meaning(L, node, fk ? fk : "reduce", cfg->meaning, sizeof cfg->meaning);
  }
  if (rc != 0) {
    wm_ctx_error(&B->ctx, "out of memory");
    goto fail;
  }
  lwm_pending_done(B, pending);
  wm_op *op = wm_winop_new(&B->ctx, name, cfg); /* it takes the parts, even when it fails */
  free(cfg);
  if (!op) { /* the core's message names the operator; add the line */
    char msg[WM_ERROR_MSG];
    memcpy(msg, wm_ctx_errtext(&B->ctx), sizeof msg);
    wm_ctx_error(&B->ctx, "%s: %s", where, msg);
  }
  return op;
fail:
  lwm_pending_done(B, pending);
  free_config(cfg);
  return NULL;
}

wm_op *lwm_build_preagg(lwm_bridge *B, int node, int kind, const char *name, const char *where,
                        int *late_port) {
  wm_op *op = build_window(B, node, name, where, kind);
  *late_port = 0;
  if (op && kind == LWM_PRE_FIRST && (*late_port = wm_op_port(op, PREAGG_LATE)) < 0) {
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL; /* op is freed with the context */
  }
  return op;
}

int lwm_build_windows(lwm_bridge *B, int node, const char *kind, const char *name,
                      const char *where, wm_op **op) {
  if (strcmp(kind, "window") != 0) return 0;
  *op = build_window(B, node, name, where, 0);
  return 1;
}
