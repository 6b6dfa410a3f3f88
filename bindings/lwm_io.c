/* Building sources, parsers and sinks from the plan (env:read_lines, :parse_csv, ...),
 * and the parts of them that call Lua: the JSON decoder (lua-cjson), Lua formatters for
 * write_lines, env:generate and custom Lua sources (env:source). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wm_csv.h"
#include "io/wm_src_nexmark.h"
#include "lwm.h"
#include "lwm_codec.h"
#include "lwm_io.h"
#include "lwm_ops.h"
#include "lwm_plan.h"

/* ---- parse_json: lua-cjson's decode, called per line ---------------------------------- */

typedef struct jsondec {
  lwm_opinfo oi; /* fn: cjson.decode; fn2: wm.json's exact decoder over it; keep: a slot that
                    holds the last decoded value */
} jsondec;

/* An integer beyond 2^53, where cjson's doubles are no longer exact, takes 16 digits or more:
 * only a line with such a run of digits goes through wm.json's exact decoder. */
static int json_long_digits(const char *s, size_t n) {
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] >= '0' && s[i] <= '9') {
      if (++run >= 16) return 1;
    } else {
      run = 0;
    }
  }
  return 0;
}

/* lua-cjson decodes every number as a float; JSON has one number type, and a Lua 5.4 user
 * expects 1 and not 1.0: integral numbers within 2^53 become integers. */
static void json_integers(lua_State *L, int idx, int depth) {
  if (depth > 64 || !lua_checkstack(L, 4)) return;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int t = lua_type(L, -1);
    if (t == LUA_TNUMBER && !lua_isinteger(L, -1)) {
      lua_Number n = lua_tonumber(L, -1);
      if (floor(n) == n && fabs(n) <= 9007199254740992.0) {
        lua_pushvalue(L, -2);
        lua_pushinteger(L, (lua_Integer)n);
        lua_rawset(L, idx); /* assigning an existing key during lua_next is allowed */
      }
    } else if (t == LUA_TTABLE) {
      json_integers(L, -1, depth + 1);
    }
    lua_pop(L, 1);
  }
}

static int json_decode(void *ud, wm_op *op, const char *s, size_t n, wm_value *out,
                       wm_error *err) {
  jsondec *j = ud;
  lwm_bridge *B = j->oi.B;
  lua_State *L = B->L;
  j->oi.op = op;
  lwm_push_fn(B, json_long_digits(s, n) ? j->oi.fn2 : j->oi.fn);
  lua_pushlstring(L, s, n);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) { /* a decoding error: no traceback wanted */
    const char *m = lua_tostring(L, -1);
    wm_error_set(err, "invalid JSON: %s", m ? m : "?");
    lua_pop(L, 1);
    return 1;
  }
  int t = lua_type(L, -1);
  if (t == LUA_TLIGHTUSERDATA || t == LUA_TNIL) {
    lua_pop(L, 1);
    wm_error_set(err, "the line is JSON null, not a record");
    return 1;
  }
  if (t == LUA_TTABLE) json_integers(L, -1, 0);
  else if (t == LUA_TNUMBER && !lua_isinteger(L, -1)) {
    lua_Number x = lua_tonumber(L, -1);
    if (floor(x) == x && fabs(x) <= 9007199254740992.0) {
      lua_pop(L, 1);
      lua_pushinteger(L, (lua_Integer)x);
    }
  }
  /* the value stays in the keep slot until the next line: a string's bytes stay valid */
  lua_rawseti(L, B->slots, j->oi.keep);
  lua_rawgeti(L, B->slots, j->oi.keep);
  int rc = lwm_to_value(B, -1, out);
  lua_pop(L, 1);
  return rc == 0 ? 0 : wm_ctx_error(&B->ctx, "out of memory");
}

static void json_free(void *ud) { lwm_opinfo_free(ud); }

static int json_decoder(lwm_bridge *B, const char *where, wm_decoder *d) {
  lua_State *L = B->L;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cjson");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    wm_ctx_error(&B->ctx, "%s: parse_json needs lua-cjson (the Debian package lua-cjson): %s",
                 where, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  lua_getfield(L, -1, "new"); /* an instance of its own: settings of other users stay theirs */
  if (lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
    lua_pop(L, 2);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "cjson");
    lua_call(L, 1, 1);
  } else {
    lua_remove(L, -2);
  }
  jsondec *j = calloc(1, sizeof *j);
  char *w = strdup(where ? where : "?");
  if (!j || !w) {
    free(j);
    free(w);
    lua_pop(L, 1);
    wm_ctx_error(&B->ctx, "out of memory");
    return -1;
  }
  j->oi.B = B;
  j->oi.where = w;
  lua_getfield(L, -1, "decode");
  lua_getglobal(L, "require");
  lua_pushliteral(L, "wm.json");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    wm_ctx_error(&B->ctx, "%s: parse_json: %s", w, lua_tostring(L, -1));
    lua_pop(L, 3);
    free(j);
    free(w);
    return -1;
  }
  lua_getfield(L, -1, "exact_decoder"); /* cjson decode wm.json exact_decoder */
  lua_pushvalue(L, -3);
  lua_call(L, 1, 1);                     /* cjson decode wm.json exact */
  lua_rawseti(L, B->fns, ++B->nfns);
  j->oi.fn2 = B->nfns;
  lua_pop(L, 1);
  lua_rawseti(L, B->fns, ++B->nfns);
  j->oi.fn = B->nfns;
  lua_pop(L, 1);
  lua_pushboolean(L, 0);
  j->oi.keep = (int)lwm_slot_new(B, -1);
  lua_pop(L, 1);
  if (!j->oi.keep) {
    json_free(j);
    wm_ctx_error(&B->ctx, "out of memory");
    return -1;
  }
  d->decode = json_decode;
  d->free = json_free;
  d->ud = j;
  return 0;
}

static int on_error_mode(const char *s) {
  if (!s || strcmp(s, "fail") == 0) return WM_PARSE_FAIL;
  if (strcmp(s, "skip") == 0) return WM_PARSE_SKIP;
  return WM_PARSE_SIDE;
}

static wm_op *build_parse_csv(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  lua_getfield(L, node, "fields");
  int fl = lua_gettop(L);
  uint32_t n = (uint32_t)lua_rawlen(L, fl);
  wm_csv_field *fields = calloc(n ? n : 1, sizeof *fields);
  if (!fields) {
    lua_pop(L, 1);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    lua_rawgeti(L, fl, (lua_Integer)i + 1);
    int f = lua_gettop(L);
    fields[i].name = lwm_get_str(L, f, "name"); /* kept alive by the plan */
    const char *t = lwm_get_str(L, f, "type");
    fields[i].type = !t || strcmp(t, "string") == 0 ? WM_FT_STRING
                     : strcmp(t, "integer") == 0    ? WM_FT_INTEGER
                     : strcmp(t, "number") == 0     ? WM_FT_NUMBER
                                                    : WM_FT_BOOLEAN;
    lua_getfield(L, f, "optional");
    fields[i].optional = (uint8_t)lua_toboolean(L, -1);
    lua_getfield(L, f, "skip");
    fields[i].skip = (uint8_t)lua_toboolean(L, -1);
    lua_pop(L, 3);
  }
  const char *sep = lwm_get_str(L, node, "sep");
  wm_parse_config pc;
  memset(&pc, 0, sizeof pc);
  int rc = wm_decoder_csv(&pc.dec, fields, n, sep && *sep ? sep[0] : ',');
  free(fields);
  lua_pop(L, 1);
  if (rc != 0) {
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  lua_getfield(L, node, "header");
  pc.header = lua_toboolean(L, -1);
  lua_pop(L, 1);
  pc.on_error = on_error_mode(lwm_get_str(L, node, "on_error"));
  pc.what = "parse_csv";
  (void)where;
  return wm_parse_new(&B->ctx, name, &pc);
}

static wm_op *build_parse_json(lwm_bridge *B, int node, const char *name, const char *where) {
  wm_parse_config pc;
  memset(&pc, 0, sizeof pc);
  if (json_decoder(B, where, &pc.dec) != 0) return NULL;
  pc.on_error = on_error_mode(lwm_get_str(B->L, node, "on_error"));
  pc.what = "parse_json";
  return wm_parse_new(&B->ctx, name, &pc);
}

static int build_io_more(lwm_bridge *B, int node, const char *kind, const char *name,
                         const char *where, wm_op **op);

int lwm_build_io(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                 wm_op **op) {
  lua_State *L = B->L;
  if (strcmp(kind, "read_lines") == 0) {
    lua_getfield(L, node, "follow");
    int follow = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, node, "parallel");
    int parts = lua_toboolean(L, -1) && B->parallelism > 1 ? B->parallelism : 1;
    lua_pop(L, 1);
    wm_lines_config lc = {.path = lwm_get_str(L, node, "path"),
                          .max_line = (size_t)lwm_get_int(L, node, "max_line", 0),
                          .chunk = (size_t)lwm_get_int(L, node, "chunk", 0),
                          .follow = follow,
                          .poll_ms = (int64_t)lwm_get_int(L, node, "poll", 0),
                          /* a file read in parts: one per instance (wm_src_file.c) */
                          .part = parts > 1 ? B->instance - 1 : 0,
                          .parts = parts};
    *op = wm_lines_new(wm_exec_host(B->exec), name, &lc);
    return 1;
  }
  if (strcmp(kind, "parse_csv") == 0) {
    *op = build_parse_csv(B, node, name, where);
    return 1;
  }
  if (strcmp(kind, "parse_json") == 0) {
    *op = build_parse_json(B, node, name, where);
    return 1;
  }
  return build_io_more(B, node, kind, name, where, op);
}

/* ---- write_lines with a Lua formatter ------------------------------------------------- */

static int lua_format_fn(void *ud, wm_op *op, const wm_value *rec, wm_buf *out) {
  lwm_opinfo *oi = ud;
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  oi->op = op;
  lwm_push_fn(B, oi->fn);
  lwm_push_value(B, rec);
  if (lwm_call(oi, 1, 1, rec) != WM_OK) return WM_ERR;
  if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER) {
    const char *tn = luaL_typename(L, -1);
    lua_pop(L, 1);
    return lwm_op_error(oi, rec, "the format function returned a %s (expected a string)", tn);
  }
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  wm_buf_add(out, s, n);
  lua_pop(L, 1);
  return WM_OK;
}

static int sink_format(lwm_bridge *B, int node, const char *where, wm_write_config *wc) {
  lua_State *L = B->L;
  lua_getfield(L, node, "format");
  int t = lua_type(L, -1);
  const char *s = t == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1);
  if (t == LUA_TFUNCTION) {
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) return wm_ctx_error(&B->ctx, "out of memory");
    oi->fn = lwm_get_fn(B, node, "format");
    wc->format = WM_FMT_CUSTOM;
    wc->custom.fn = lua_format_fn;
    wc->custom.free = lwm_opinfo_free;
    wc->custom.ud = oi;
  } else {
    wc->format = s && strcmp(s, "text") == 0 ? WM_FMT_TEXT : WM_FMT_JSON;
  }
  return WM_OK;
}

/* ---- sources driven from Lua: env:generate and env:source ------------------------------ */

typedef struct luasrc {
  lwm_opinfo oi;   /* generate: fn = fn(i); source: fn = open, fn2 = poll, fn3 = close,
                      fn4 = the ctx table */
  int custom;      /* env:source */
  wm_io_host *host;
  wm_pos pos;      /* the record being emitted: "record n of generate (job.lua:5)" */
  char origin[200];
  lua_Integer next, count; /* generate: the next index; count 0 = until fn returns nil */
  double rate;     /* generate: records per second; 0 = as fast as possible */
  uint64_t t0;     /* generate: loop time of the first record (ms) */
  uv_idle_t idle;
  uv_timer_t timer;
  int idle_open, timer_open, idle_on, timer_on;
  int stopped, finished, paused, waiting, opened;
  int64_t last_wm; /* source: the last watermark it emitted */
  int idle_status; /* source: marked idle */
  int restored;    /* restored from a checkpoint: generate's rate clock restarts there */
} luasrc;

static const wm_op_vt generate_vt = {.kind = "generate", .record = wm_source_record, .free = lwm_op_free_info};
static const wm_op_vt source_vt = {.kind = "source", .record = wm_source_record, .free = lwm_op_free_info};

static void luasrc_handles_off(luasrc *s) {
  if (s->idle_on) uv_idle_stop(&s->idle);
  if (s->timer_on) uv_timer_stop(&s->timer);
  s->idle_on = s->timer_on = 0;
}

static void luasrc_close(luasrc *s) {
  luasrc_handles_off(s);
  if (s->idle_open) uv_close((uv_handle_t *)&s->idle, NULL);
  if (s->timer_open) uv_close((uv_handle_t *)&s->timer, NULL);
  s->idle_open = s->timer_open = 0;
}

/* Calls close(ctx) of a custom source once. */
static int luasrc_call_close(luasrc *s) {
  if (!s->custom || !s->opened || !s->oi.fn3) return WM_OK;
  s->opened = 0;
  lwm_push_fn(s->oi.B, s->oi.fn3);
  lwm_push_fn(s->oi.B, s->oi.fn4);
  return lwm_call(&s->oi, 1, 0, NULL);
}

static void luasrc_fail(luasrc *s) {
  s->stopped = s->finished = 1;
  luasrc_close(s);
  wm_io_fail(s->host);
}

static void luasrc_end(luasrc *s) {
  if (s->finished) return;
  s->stopped = s->finished = 1;
  luasrc_close(s);
  if (luasrc_call_close(s) != WM_OK) {
    wm_io_fail(s->host);
    return;
  }
  wm_io_source_done(s->host, s->oi.op);
}

static void on_luasrc_idle(uv_idle_t *h);
static void on_luasrc_timer(uv_timer_t *h);

/* Runs the source again: at once (idle) or after ms (timer). */
static void luasrc_schedule(luasrc *s, int64_t ms) {
  luasrc_handles_off(s);
  if (s->stopped) return;
  if (s->paused) {
    s->waiting = 1;
    return;
  }
  int rc = ms <= 0 ? uv_idle_start(&s->idle, on_luasrc_idle)
                   : uv_timer_start(&s->timer, on_luasrc_timer, (uint64_t)ms, 0);
  if (rc != 0) {
    wm_ctx_error(&s->oi.B->ctx, "%s: cannot schedule the source: %s", s->oi.where, uv_strerror(rc));
    luasrc_fail(s);
    return;
  }
  if (ms <= 0) s->idle_on = 1;
  else s->timer_on = 1;
}

/* generate: emits the records that are due; returns the ms until the next is due (0 = at
 * once), or -1 at the end. */
static int64_t generate_step(luasrc *s) {
  lwm_bridge *B = s->oi.B;
  lua_State *L = B->L;
  lua_Integer n = 512;
  if (s->rate > 0) {
    uint64_t now = uv_now(s->host->loop);
    if (s->next == 1) s->t0 = now;
    else if (s->restored) /* resumed: record next is due now, the rate goes on from there */
      s->t0 = now - (uint64_t)((double)(s->next - 1) * 1000.0 / s->rate);
    s->restored = 0;
    /* record i is due at t0 + (i - 1) / rate: a steady rate, whatever the timer's jitter */
    lua_Integer due = (lua_Integer)((double)(now - s->t0) * s->rate / 1000.0) + 1;
    n = due - s->next + 1;
    if (n > 4096) n = 4096;
    if (n <= 0) {
      double at = (double)(s->next - 1) * 1000.0 / s->rate;
      int64_t wait = (int64_t)at - (int64_t)(now - s->t0);
      return wait > 0 ? wait : 1;
    }
  }
  for (lua_Integer k = 0; k < n && !s->stopped; k++) {
    if (s->count > 0 && s->next > s->count) return -1;
    lwm_push_fn(B, s->oi.fn);
    lua_pushinteger(L, s->next);
    if (lwm_call(&s->oi, 1, 1, NULL) != WM_OK) return -2;
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      return -1;
    }
    wm_value v;
    if (lwm_to_value(B, -1, &v) != 0) {
      lua_pop(L, 1);
      wm_ctx_error(&B->ctx, "out of memory");
      return -2;
    }
    s->pos.line = (uint64_t)s->next++;
    int rc = wm_source_emit(s->oi.op, &s->pos, &v, WM_TIME_MIN);
    wm_value_release(&B->ctx.host, &v);
    lua_pop(L, 1);
    if (rc != WM_OK) return -2;
  }
  if (s->count > 0 && s->next > s->count) return -1;
  if (s->rate > 0) {
    double at = (double)(s->next - 1) * 1000.0 / s->rate;
    int64_t wait = (int64_t)at - (int64_t)(uv_now(s->host->loop) - s->t0);
    return wait > 0 ? wait : 0;
  }
  return 0;
}

/* source: one poll(ctx); its result decides: true = again, false/nil = end, n = wait n ms. */
static int64_t source_step(luasrc *s) {
  lwm_bridge *B = s->oi.B;
  lua_State *L = B->L;
  lwm_push_fn(B, s->oi.fn2);
  lwm_push_fn(B, s->oi.fn4);
  if (lwm_call(&s->oi, 1, 1, NULL) != WM_OK) return -2;
  int64_t r;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    lua_Number x = lua_tonumber(L, -1);
    r = x > 0 ? (int64_t)ceil(x) : 0;
  } else {
    r = lua_toboolean(L, -1) ? 0 : -1;
  }
  lua_pop(L, 1);
  return r;
}

static void luasrc_run(luasrc *s) {
  if (s->stopped) return;
  int64_t r = s->custom ? source_step(s) : generate_step(s);
  wm_io_batch_done(s->host);
  if (r == -2) luasrc_fail(s);
  else if (s->finished) return;
  else if (r == -1 || s->stopped) luasrc_end(s);
  else luasrc_schedule(s, r);
}

static void on_luasrc_idle(uv_idle_t *h) { luasrc_run(h->data); }
static void on_luasrc_timer(uv_timer_t *h) {
  luasrc *s = h->data;
  s->timer_on = 0;
  luasrc_run(s);
}

static int luasrc_start(wm_op *op, wm_io_host *host) {
  luasrc *s = op->impl;
  s->host = host;
  uv_loop_t *loop = host->loop;
  int rc = uv_idle_init(loop, &s->idle);
  if (rc == 0) {
    s->idle_open = 1;
    s->idle.data = s;
    rc = uv_timer_init(loop, &s->timer);
  }
  if (rc == 0) {
    s->timer_open = 1;
    s->timer.data = s;
  }
  if (rc != 0) {
    luasrc_close(s);
    return wm_ctx_error(op->ctx, "%s: cannot start the source: %s", s->oi.where, uv_strerror(rc));
  }
  if (s->custom && s->oi.fn) {
    lwm_push_fn(s->oi.B, s->oi.fn);
    lwm_push_fn(s->oi.B, s->oi.fn4);
    if (lwm_call(&s->oi, 1, 0, NULL) != WM_OK) {
      s->stopped = s->finished = 1;
      luasrc_close(s);
      return WM_ERR;
    }
  }
  s->opened = 1;
  luasrc_schedule(s, 0);
  return s->finished ? WM_ERR : WM_OK;
}

static void luasrc_stop(wm_op *op, wm_io_host *host, int finish) {
  luasrc *s = op->impl;
  (void)host;
  if (s->stopped) return;
  if (!finish) {
    s->stopped = s->finished = 1;
    luasrc_close(s);
    return;
  }
  luasrc_end(s);
}

static void luasrc_pause(wm_op *op, wm_io_host *host, int paused) {
  luasrc *s = op->impl;
  (void)host;
  s->paused = paused;
  if (paused) {
    if (s->idle_on || s->timer_on) s->waiting = 1;
    luasrc_handles_off(s);
  } else if (s->waiting) {
    s->waiting = 0;
    luasrc_schedule(s, 0);
  }
}

/* ---- checkpoints: the source's position (io/wm_source.h) --------------------------------
 * version 1, 'L', then one value with the bindings' codec (lwm_encode_lua): a table
 * {next = generate's next index, or line = a source's records emitted so far, wm = the last
 * watermark a source emitted, idle = its idle flag, state = what its snapshot(ctx) gave}. */

static int luasrc_snapshot(wm_op *op, wm_buf *out) {
  luasrc *s = op->impl;
  lwm_bridge *B = s->oi.B;
  lua_State *L = B->L;
  if (s->custom && !s->oi.hooks.snapshot)
    return wm_ctx_error(op->ctx, "%s: the custom source has no snapshot method, so its position "
                                 "cannot be checkpointed (give it snapshot(ctx) and "
                                 "restore(ctx, t), docs/checkpoints.md)", s->oi.where);
  luaL_checkstack(L, 4, "wmrun: a source's checkpoint");
  lua_createtable(L, 0, 4);
  if (s->custom) {
    wm_value v;
    if (lwm_opinfo_snapshot(&s->oi, op, &v) != WM_OK) {
      lua_pop(L, 1);
      return WM_ERR;
    }
    lwm_push_value(B, &v);
    wm_value_release(&B->ctx.host, &v);
    lua_setfield(L, -2, "state");
    lua_pushinteger(L, (lua_Integer)s->pos.line);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, (lua_Integer)s->last_wm);
    lua_setfield(L, -2, "wm");
    lua_pushboolean(L, s->idle_status);
    lua_setfield(L, -2, "idle");
  } else {
    lua_pushinteger(L, s->next);
    lua_setfield(L, -2, "next");
  }
  wm_buf_addc(out, 1);
  wm_buf_addc(out, 'L');
  int rc = lwm_encode_lua(L, out, -1, "state", &op->ctx->error);
  lua_pop(L, 1);
  if (rc != 0)
    return wm_ctx_error(op->ctx, "%s: cannot checkpoint the custom source's state: %s",
                        s->oi.where, op->ctx->error.msg);
  return out->oom ? wm_ctx_error(op->ctx, "out of memory writing a checkpoint") : WM_OK;
}

/* Field k of the table on top as an integer within [lo, hi]; 0 or -1. */
static int get_pos_int(lua_State *L, const char *k, lua_Integer lo, lua_Integer hi,
                       lua_Integer *v) {
  lua_getfield(L, -1, k);
  int ok = lua_isinteger(L, -1) && lua_tointeger(L, -1) >= lo && lua_tointeger(L, -1) <= hi;
  if (ok) *v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return ok ? 0 : -1;
}

static int luasrc_restore(wm_op *op, const char *data, size_t n) {
  luasrc *s = op->impl;
  lwm_bridge *B = s->oi.B;
  lua_State *L = B->L;
  const uint8_t *p = (const uint8_t *)data, *end = p + n;
  if (n < 2 || p[0] != 1 || p[1] != 'L')
    return wm_ctx_error(op->ctx, "damaged checkpoint state: the position of '%s' (%zu bytes)",
                        op->name, n);
  p += 2;
  if (lwm_decode_lua(L, &p, end, &op->ctx->error) != 0)
    return wm_ctx_error(op->ctx, "damaged checkpoint state: the position of '%s': %s", op->name,
                        op->ctx->error.msg);
  lua_Integer next = 0, line = 0, wm = 0;
  int bad = p != end || !lua_istable(L, -1);
  if (!bad && !s->custom) bad = get_pos_int(L, "next", 1, LUA_MAXINTEGER, &next) != 0;
  if (!bad && s->custom)
    bad = get_pos_int(L, "line", 0, LUA_MAXINTEGER, &line) != 0 ||
          get_pos_int(L, "wm", LUA_MININTEGER, LUA_MAXINTEGER, &wm) != 0;
  if (bad) {
    lua_pop(L, 1);
    return wm_ctx_error(op->ctx, "damaged checkpoint state: the position of '%s' is not one of "
                                 "%s", op->name, s->custom ? "a custom source" : "generate");
  }
  int rc = WM_OK;
  if (s->custom) {
    lua_getfield(L, -1, "idle");
    s->idle_status = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!s->oi.hooks.restore) {
      lua_pop(L, 1);
      return wm_ctx_error(op->ctx, "%s: the custom source has no restore method, so its "
                                   "checkpointed position cannot be put back", s->oi.where);
    }
    lua_getfield(L, -1, "state");
    if (!lua_istable(L, -1)) {
      lua_pop(L, 2);
      return wm_ctx_error(op->ctx, "damaged checkpoint state: the position of '%s' holds no "
                                   "state table", op->name);
    }
    wm_value v;
    rc = lwm_to_value(B, -1, &v) == 0 ? WM_OK : wm_ctx_error(op->ctx, "out of memory");
    lua_pop(L, 1);
    if (rc == WM_OK) {
      rc = lwm_opinfo_restore(&s->oi, op, &v);
      wm_value_release(&B->ctx.host, &v);
    }
    s->pos.line = (uint64_t)line;
    s->last_wm = (int64_t)wm;
    if (wm > WM_TIME_MIN) op->wm = (int64_t)wm;
  } else {
    s->next = next;
    s->restored = 1;
  }
  lua_pop(L, 1);
  return rc;
}

static const wm_source_vt luasrc_svt = {.start = luasrc_start,
                                        .stop = luasrc_stop,
                                        .pause = luasrc_pause,
                                        .snapshot = luasrc_snapshot,
                                        .restore = luasrc_restore};

/* ctx:emit(record[, ts]) */
static int l_ctx_emit(lua_State *L) {
  luasrc *s = lua_touserdata(L, lua_upvalueindex(1));
  lwm_bridge *B = s->oi.B;
  lua_settop(L, 3);
  int64_t ts = WM_TIME_MIN;
  if (!lua_isnil(L, 3)) {
    if (!lua_isinteger(L, 3)) {
      lua_Number x = luaL_checknumber(L, 3);
      if (floor(x) != x || fabs(x) >= 9.2e18)
        return luaL_argerror(L, 3, "the timestamp must be an integer number of ms");
      ts = (int64_t)x;
    } else {
      ts = (int64_t)lua_tointeger(L, 3);
    }
  }
  if (lua_isnil(L, 2)) return luaL_argerror(L, 2, "cannot emit nil");
  if (s->stopped) return 0;
  lwm_frame fr;
  lwm_enter(B, L, &fr);
  int rc = WM_OK;
  if (s->idle_status) {
    s->idle_status = 0;
    rc = wm_op_emit_status(s->oi.op, false);
  }
  wm_value v;
  if (rc == WM_OK && lwm_to_value(B, 2, &v) != 0) {
    lwm_leave(B, &fr);
    return luaL_error(L, "out of memory");
  }
  if (rc == WM_OK) {
    s->pos.line++;
    rc = wm_source_emit(s->oi.op, &s->pos, &v, ts);
    wm_value_release(&B->ctx.host, &v);
  }
  lwm_leave(B, &fr);
  if (rc == WM_OK) return 0;
  B->downstream_failed = 1;
  return luaL_error(L, "downstream operator failed");
}

/* ctx:emit_watermark(t): forwarded when greater than the last one */
static int l_ctx_emit_watermark(lua_State *L) {
  luasrc *s = lua_touserdata(L, lua_upvalueindex(1));
  lua_Integer t;
  if (lua_isinteger(L, 2)) t = lua_tointeger(L, 2);
  else {
    lua_Number x = luaL_checknumber(L, 2);
    if (floor(x) != x || fabs(x) >= 9.2e18)
      return luaL_argerror(L, 2, "the watermark must be an integer number of ms");
    t = (lua_Integer)x;
  }
  if (s->stopped || (int64_t)t <= s->last_wm) return 0;
  s->last_wm = (int64_t)t;
  s->oi.op->wm = (int64_t)t;
  lwm_frame fr;
  lwm_enter(s->oi.B, L, &fr);
  int rc = wm_op_emit_watermark(s->oi.op, (int64_t)t);
  lwm_leave(s->oi.B, &fr);
  return lwm_callback_done(s->oi.B, L, rc);
}

/* ctx:mark_idle(): downstream stops waiting for this source's watermarks until it emits */
static int l_ctx_mark_idle(lua_State *L) {
  luasrc *s = lua_touserdata(L, lua_upvalueindex(1));
  if (s->stopped || s->idle_status) return 0;
  s->idle_status = 1;
  lwm_frame fr;
  lwm_enter(s->oi.B, L, &fr);
  int rc = wm_op_emit_status(s->oi.op, true);
  lwm_leave(s->oi.B, &fr);
  return lwm_callback_done(s->oi.B, L, rc);
}

static wm_op *build_luasrc(lwm_bridge *B, int node, const char *name, const char *where, int custom) {
  lua_State *L = B->L;
  lwm_opinfo *oi = lwm_opinfo_new(B, where);
  luasrc *s = oi ? realloc(oi, sizeof *s) : NULL;
  if (!s) {
    lwm_opinfo_free(oi);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  memset((char *)s + sizeof s->oi, 0, sizeof *s - sizeof s->oi);
  s->custom = custom;
  s->next = 1;
  s->last_wm = WM_TIME_MIN;
  s->host = wm_exec_host(B->exec);
  snprintf(s->origin, sizeof s->origin, "%s (%s)", custom ? "source" : "generate", where);
  s->pos.origin = s->origin;
  s->pos.unit = "record";
  if (custom) {
    s->oi.fn = lwm_get_fn(B, node, "open");
    s->oi.fn2 = lwm_get_fn(B, node, "poll");
    s->oi.fn3 = lwm_get_fn(B, node, "close");
    /* the user's ctx table, made by the DSL; with parallel = true every instance has its
     * own (its emit, its subtask, the user's fields of its share) */
    lua_getfield(L, node, "parallel");
    int parallel = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (parallel) lua_createtable(L, 0, 8);
    else lua_getfield(L, node, "ctx");
    lua_pushlightuserdata(L, s);
    lua_pushcclosure(L, l_ctx_emit, 1);
    lua_setfield(L, -2, "emit");
    lua_pushlightuserdata(L, s);
    lua_pushcclosure(L, l_ctx_emit_watermark, 1);
    lua_setfield(L, -2, "emit_watermark");
    lua_pushlightuserdata(L, s);
    lua_pushcclosure(L, l_ctx_mark_idle, 1);
    lua_setfield(L, -2, "mark_idle");
    lua_pushinteger(L, parallel && B->instance > 0 ? B->instance : 1);
    lua_setfield(L, -2, "subtask");
    lua_pushinteger(L, parallel && B->parallelism > 0 ? B->parallelism : 1);
    lua_setfield(L, -2, "parallelism");
    lua_rawseti(L, B->fns, ++B->nfns);
    s->oi.fn4 = B->nfns;
    s->oi.hooks.snapshot = lwm_get_fn(B, node, "snapshot");
    s->oi.hooks.restore = lwm_get_fn(B, node, "restore");
    s->oi.hooks.self = s->oi.fn4; /* the source's callbacks all take its ctx */
    if (!s->oi.hooks.snapshot)
      lwm_note_uncheckpointable(B, "the custom source (env:source)", where,
                                "give it snapshot(ctx), returning a plain table of its "
                                "position, and restore(ctx, t) methods");
  } else {
    s->oi.fn = lwm_get_fn(B, node, "fn");
    s->count = lwm_get_int(L, node, "count", 0);
    lua_getfield(L, node, "rate");
    s->rate = lua_isnumber(L, -1) ? (double)lua_tonumber(L, -1) : 0;
    lua_pop(L, 1);
  }
  return lwm_source_new(B, custom ? &source_vt : &generate_vt, &s->oi, name, &luasrc_svt);
}

/* ---- env:nexmark: the options were checked by wm.io (lua/wm/nexmark.lua) -------------- */

static wm_op *build_nexmark(lwm_bridge *B, int node, const char *name) {
  lua_State *L = B->L;
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  c.events = (int64_t)lwm_get_int(L, node, "events", c.events);
  c.event_rate = (int64_t)lwm_get_int(L, node, "event_rate", c.event_rate);
  c.person_proportion = (int)lwm_get_int(L, node, "person_proportion", c.person_proportion);
  c.auction_proportion = (int)lwm_get_int(L, node, "auction_proportion", c.auction_proportion);
  c.bid_proportion = (int)lwm_get_int(L, node, "bid_proportion", c.bid_proportion);
  c.hot_auction_ratio = (int)lwm_get_int(L, node, "hot_auction_ratio", c.hot_auction_ratio);
  c.hot_bidders_ratio = (int)lwm_get_int(L, node, "hot_bidder_ratio", c.hot_bidders_ratio);
  c.hot_sellers_ratio = (int)lwm_get_int(L, node, "hot_seller_ratio", c.hot_sellers_ratio);
  c.avg_person_size = (int)lwm_get_int(L, node, "person_avg_size", c.avg_person_size);
  c.avg_auction_size = (int)lwm_get_int(L, node, "auction_avg_size", c.avg_auction_size);
  c.avg_bid_size = (int)lwm_get_int(L, node, "bid_avg_size", c.avg_bid_size);
  c.in_flight_auctions = (int)lwm_get_int(L, node, "in_flight_auctions", c.in_flight_auctions);
  c.active_people = (int)lwm_get_int(L, node, "active_people", c.active_people);
  c.out_of_order_group = (int64_t)lwm_get_int(L, node, "out_of_order_group", c.out_of_order_group);
  c.base_time = (int64_t)lwm_get_int(L, node, "base_time", c.base_time);
  c.seed = (uint64_t)lwm_get_int(L, node, "seed", 0);
  c.omit[WM_NEXMARK_PERSON] = (uint32_t)lwm_get_int(L, node, "omit_person", 0);
  c.omit[WM_NEXMARK_AUCTION] = (uint32_t)lwm_get_int(L, node, "omit_auction", 0);
  c.omit[WM_NEXMARK_BID] = (uint32_t)lwm_get_int(L, node, "omit_bid", 0);
  lua_getfield(L, node, "rate");
  double rate = lua_isnumber(L, -1) ? (double)lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  /* parallel: instance k of n makes every n-th event from the k-th (wm_src_nexmark.h) */
  lua_getfield(L, node, "parallel");
  int parts = lua_toboolean(L, -1) && B->parallelism > 1 ? B->parallelism : 1;
  lua_pop(L, 1);
  return wm_src_nexmark_new(wm_exec_host(B->exec), name, &c, rate, parts > 1 ? B->instance - 1 : 0, parts);
}

/* ---- the builder ----------------------------------------------------------------------- */

static int build_io_more(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                  wm_op **op) {
  lua_State *L = B->L;
  if (strcmp(kind, "socket_lines") == 0 || strcmp(kind, "listen_lines") == 0) {
    lua_getfield(L, node, "quiet");
    int quiet = lua_toboolean(L, -1);
    lua_pop(L, 1);
    wm_tcp_config tc = {.host = lwm_get_str(L, node, "host"),
                        .port = (int)lwm_get_int(L, node, "port", 0),
                        .max_line = (size_t)lwm_get_int(L, node, "max_line", 0),
                        .chunk = (size_t)lwm_get_int(L, node, "chunk", 0),
                        .max_clients = (int)lwm_get_int(L, node, "max_clients", 0),
                        .quiet = quiet};
    *op = kind[0] == 's' ? wm_socket_lines_new(wm_exec_host(B->exec), name, &tc)
                         : wm_listen_lines_new(wm_exec_host(B->exec), name, &tc);
    return 1;
  }
  if (strcmp(kind, "nexmark") == 0) {
    *op = build_nexmark(B, node, name);
    return 1;
  }
  if (strcmp(kind, "generate") == 0 || strcmp(kind, "source") == 0) {
    *op = build_luasrc(B, node, name, where, kind[0] == 's');
    return 1;
  }
  if (strcmp(kind, "write_lines") == 0 || strcmp(kind, "write_socket") == 0) {
    wm_write_config wc;
    memset(&wc, 0, sizeof wc);
    wc.path = lwm_get_str(L, node, "path");
    wc.host = lwm_get_str(L, node, "host");
    wc.port = (int)lwm_get_int(L, node, "port", 0);
    wc.buffer = (size_t)lwm_get_int(L, node, "buffer", 0);
    if (sink_format(B, node, where, &wc) != WM_OK) {
      *op = NULL;
      return 1;
    }
    *op = kind[6] == 'l' ? wm_write_lines_new(wm_exec_host(B->exec), name, &wc)
                         : wm_write_socket_new(wm_exec_host(B->exec), name, &wc);
    return 1;
  }
  return 0;
}
