/* Checkpoints of a bridge's context with the bindings' codec for Lua values (lwm_mt.c):
 * the parts of wm_ctx_snapshot / wm_ctx_restore (graph/wm_snapshot.h) as a Lua table
 * {[part name] = bytes}, for the test harness's h:snapshot() / h:restore(s) (wm.testing)
 * and for any caller that keeps its parts in Lua. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_codec.h"
#include "graph/wm_snapshot.h"
#include "lwm.h"

static int put_part(void *ud, const char *name, const void *data, size_t len, char *err,
                    size_t errlen) {
  (void)err;
  (void)errlen;
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_pushlstring(L, (const char *)data, len);
  lua_setfield(L, -2, name);
  return 0;
}

int lwm_snapshot_parts(lwm_bridge *B, int instance) {
  lua_State *L = B->L;
  luaL_checkstack(L, 4, "wmrun: a snapshot");
  lua_newtable(L);
  wm_codec_host ch;
  lwm_codec_host(B, &ch);
  if (wm_ctx_snapshot(&B->ctx, instance, &ch, put_part, B) != WM_OK) {
    lua_pop(L, 1);
    return WM_ERR;
  }
  return WM_OK;
}

int lwm_restore_parts(lwm_bridge *B, int instance, int idx) {
  lua_State *L = B->L;
  idx = lua_absindex(L, idx);
  size_t n = 0, cap = 8;
  wm_part *parts = malloc(cap * sizeof *parts);
  if (!parts) return wm_ctx_error(&B->ctx, "out of memory restoring a checkpoint");
  lua_pushnil(L);
  while (lua_next(L, idx)) { /* the strings stay in the table during the restore */
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 2);
      free(parts);
      return wm_ctx_error(&B->ctx, "damaged checkpoint: its parts are not named byte strings");
    }
    if (n == cap) {
      wm_part *np = realloc(parts, 2 * cap * sizeof *np);
      if (!np) {
        lua_pop(L, 2);
        free(parts);
        return wm_ctx_error(&B->ctx, "out of memory restoring a checkpoint");
      }
      parts = np;
      cap *= 2;
    }
    size_t len;
    const char *data = lua_tolstring(L, -1, &len);
    parts[n++] = (wm_part){.name = lua_tostring(L, -2), .data = (const uint8_t *)data, .len = len};
    lua_pop(L, 1);
  }
  wm_codec_host ch;
  lwm_codec_host(B, &ch);
  int rc = wm_ctx_restore(&B->ctx, instance, &ch, parts, n);
  free(parts);
  return rc;
}
