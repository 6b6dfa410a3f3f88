/* Lua values as bytes: the codec host of the bindings (base/wm_codec.h) for records,
 * states and accumulators that hold Lua tables, used by checkpoints (lwm_ckpt.c), the
 * builders and the multi-core executor (lwm_mt.c), which sit above it. */
#include <string.h>

#include "base/wm_codec.h"
#include "lwm.h"
#include "lwm_codec.h"

#define MAX_DEPTH 100 /* nesting of tables in an encoded value */

static void path_add(char *path, size_t cap, lua_State *L, int k) {
  size_t n = strlen(path);
  if (lua_type(L, k) == LUA_TSTRING) snprintf(path + n, cap - n, ".%s", lua_tostring(L, k));
  else if (lua_isinteger(L, k)) snprintf(path + n, cap - n, "[%lld]", (long long)lua_tointeger(L, k));
  else snprintf(path + n, cap - n, "[?]");
}

static int enc_lua(lua_State *L, wm_buf *b, int idx, const void **anc, int depth, const char *root,
                   char *path, size_t pcap, wm_error *err) {
  switch (lua_type(L, idx)) {
  case LUA_TNIL: wm_buf_addc(b, WM_C_NIL); return 0;
  case LUA_TBOOLEAN: wm_buf_addc(b, lua_toboolean(L, idx) ? WM_C_TRUE : WM_C_FALSE); return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      wm_buf_addc(b, WM_C_INT);
      wm_codec_put_ivar(b, (int64_t)lua_tointeger(L, idx));
    } else {
      double f = (double)lua_tonumber(L, idx);
      char raw[8];
      memcpy(raw, &f, 8);
      wm_buf_addc(b, WM_C_FLOAT);
      wm_buf_add(b, raw, 8);
    }
    return 0;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    wm_buf_addc(b, WM_C_STR);
    wm_codec_put_uvar(b, n);
    wm_buf_add(b, s, n);
    return 0;
  }
  case LUA_TTABLE: {
    const void *t = lua_topointer(L, idx);
    for (int i = 0; i < depth; i++)
      if (anc[i] == t) {
        wm_error_set(err, "it holds a cycle (%s%s contains itself)", root, path);
        return -1;
      }
    if (depth >= MAX_DEPTH) {
      wm_error_set(err, "its tables are nested more than %d levels deep (at %s%s)",
               MAX_DEPTH, root, path);
      return -1;
    }
    if (!lua_checkstack(L, 4)) {
      wm_error_set(err, "out of Lua stack space");
      return -1;
    }
    anc[depth] = t;
    wm_buf_addc(b, WM_C_TABLE);
    size_t plen = strlen(path);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      int k = lua_gettop(L) - 1, v = k + 1;
      int kt = lua_type(L, k);
      path_add(path, pcap, L, k);
      if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN) {
        wm_error_set(err, "it holds a %s used as a key (in %s%.*s)", lua_typename(L, kt),
                 root, (int)plen, path);
        lua_pop(L, 2);
        return -1;
      }
      if (enc_lua(L, b, k, anc, depth + 1, root, path, pcap, err) != 0 ||
          enc_lua(L, b, v, anc, depth + 1, root, path, pcap, err) != 0) {
        lua_pop(L, 2);
        return -1;
      }
      path[plen] = '\0';
      lua_pop(L, 1);
    }
    wm_buf_addc(b, WM_C_NIL);
    return 0;
  }
  default:
    if (depth == 0) wm_error_set(err, "it is a %s", luaL_typename(L, idx));
    else wm_error_set(err, "it holds a %s (at %s%s)", luaL_typename(L, idx), root, path);
    return -1;
  }
}

int lwm_encode_lua(lua_State *L, wm_buf *b, int idx, const char *root, wm_error *err) {
  const void *anc[MAX_DEPTH];
  char path[256] = "";
  return enc_lua(L, b, lua_absindex(L, idx), anc, 0, root, path, sizeof path, err);
}

static int codec_encode_as(void *ud, wm_buf *b, const wm_value *v, const char *root, wm_error *err) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_rawgeti(L, B->slots, v->u.slot);
  int rc = lwm_encode_lua(L, b, -1, root, err);
  lua_pop(L, 1);
  return rc;
}

static int codec_encode(void *ud, wm_buf *b, const wm_value *v, wm_error *err) {
  return codec_encode_as(ud, b, v, "record", err);
}

static int codec_encode_state(void *ud, wm_buf *b, const wm_value *v, wm_error *err) {
  return codec_encode_as(ud, b, v, "value", err);
}

/* Pushes the value encoded at *p. */
static int dec_lua(lua_State *L, const uint8_t **p, const uint8_t *end, int depth, wm_error *err) {
  if (*p >= end) goto bad;
  int tag = *(*p)++;
  switch (tag) {
  case WM_C_NIL: lua_pushnil(L); return 0;
  case WM_C_FALSE: lua_pushboolean(L, 0); return 0;
  case WM_C_TRUE: lua_pushboolean(L, 1); return 0;
  case WM_C_INT: {
    int64_t i;
    if (wm_codec_get_ivar(p, end, &i) != 0) goto bad;
    lua_pushinteger(L, (lua_Integer)i);
    return 0;
  }
  case WM_C_FLOAT: {
    double f;
    if (end - *p < 8) goto bad;
    memcpy(&f, *p, 8);
    *p += 8;
    lua_pushnumber(L, (lua_Number)f);
    return 0;
  }
  case WM_C_STR: {
    uint64_t n;
    if (wm_codec_get_uvar(p, end, &n) != 0 || (uint64_t)(end - *p) < n) goto bad;
    lua_pushlstring(L, (const char *)*p, (size_t)n);
    *p += n;
    return 0;
  }
  case WM_C_TABLE:
    if (depth >= MAX_DEPTH || !lua_checkstack(L, 4)) goto bad;
    lua_newtable(L);
    for (;;) {
      if (*p >= end) goto bad;
      if (**p == WM_C_NIL) {
        (*p)++;
        return 0;
      }
      if (dec_lua(L, p, end, depth + 1, err) != 0) return -1;
      if (lua_isnil(L, -1) || (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) != lua_tonumber(L, -1)))
        goto bad;
      if (dec_lua(L, p, end, depth + 1, err) != 0) return -1;
      lua_rawset(L, -3);
    }
  default: break;
  }
bad:
  wm_error_set(err, "corrupt record encoding");
  return -1;
}

int lwm_decode_lua(lua_State *L, const uint8_t **p, const uint8_t *end, wm_error *err) {
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) return wm_error_set(err, "corrupt record encoding");
  if (dec_lua(L, p, end, 0, err) != 0) {
    lua_settop(L, top);
    return -1;
  }
  return 0;
}

static int codec_decode(void *ud, const uint8_t **p, const uint8_t *end, wm_value *out, wm_error *err) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  int top = lua_gettop(L);
  if (lwm_decode_lua(L, p, end, err) != 0) return -1;
  int rc = lwm_to_value(B, -1, out); /* a table: a new slot */
  lua_settop(L, top);
  if (rc != 0) wm_error_set(err, "out of memory");
  return rc;
}

void lwm_codec_host(lwm_bridge *B, wm_codec_host *ch) {
  *ch = (wm_codec_host){.ud = B, .encode = codec_encode_state, .decode = codec_decode};
}

void lwm_codec_host_records(lwm_bridge *B, wm_codec_host *ch) {
  *ch = (wm_codec_host){.ud = B, .encode = codec_encode, .decode = codec_decode};
}

/* For the C tests of the encoding through Lua (wm.core._codec_roundtrip): encodes the
 * value at index 1 and decodes it back. */
int lwm_codec_roundtrip(lua_State *L) {
  luaL_checkany(L, 1);
  wm_buf b;
  wm_buf_init(&b);
  wm_error err;
  if (lwm_encode_lua(L, &b, 1, "record", &err) != 0) {
    wm_buf_free(&b);
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
  lua_Integer len = (lua_Integer)b.len;
  wm_error_clear(&err);
  if (lwm_decode_lua(L, &p, end, &err) != 0 || p != end) {
    wm_buf_free(&b);
    return luaL_error(L, "decoding failed: %s", err.msg);
  }
  wm_buf_free(&b);
  lua_pushinteger(L, len);
  return 2;
}

