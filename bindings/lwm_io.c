/* Building sources, parsers and sinks from the plan (env:read_lines, :parse_csv, ...),
 * and the parts of them that call Lua: the JSON decoder (lua-cjson), Lua formatters for
 * write_lines, env:generate and custom Lua sources (env:source). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/wm_csv.h"
#include "lwm.h"

/* ---- parse_json: lua-cjson's decode, called per line ---------------------------------- */

typedef struct jsondec {
  lwm_opinfo oi; /* fn: cjson.decode; keep: a slot that holds the last decoded value */
} jsondec;

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

static int json_decode(void *ud, wm_op *op, const char *s, size_t n, wm_value *out, char *err,
                       size_t errlen) {
  jsondec *j = ud;
  lwm_bridge *B = j->oi.B;
  lua_State *L = B->L;
  j->oi.op = op;
  lwm_push_fn(B, j->oi.fn);
  lua_pushlstring(L, s, n);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) { /* a decoding error: no traceback wanted */
    const char *m = lua_tostring(L, -1);
    snprintf(err, errlen, "invalid JSON: %s", m ? m : "?");
    lua_pop(L, 1);
    return 1;
  }
  int t = lua_type(L, -1);
  if (t == LUA_TLIGHTUSERDATA || t == LUA_TNIL) {
    lua_pop(L, 1);
    snprintf(err, errlen, "the line is JSON null, not a record");
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
    lua_pop(L, 2);
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

int lwm_build_io(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                 wm_op **op) {
  lua_State *L = B->L;
  if (strcmp(kind, "read_lines") == 0) {
    lua_getfield(L, node, "follow");
    int follow = lua_toboolean(L, -1);
    lua_pop(L, 1);
    wm_lines_config lc = {.path = lwm_get_str(L, node, "path"),
                          .max_line = (size_t)lwm_get_int(L, node, "max_line", 0),
                          .chunk = (size_t)lwm_get_int(L, node, "chunk", 0),
                          .follow = follow,
                          .poll_ms = (int64_t)lwm_get_int(L, node, "poll", 0)};
    *op = wm_lines_new(B->exec, name, &lc);
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
  return 0;
}
