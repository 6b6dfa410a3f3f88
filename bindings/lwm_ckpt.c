/* Checkpoints of a bridge's context with the bindings' codec for Lua values (lwm_mt.c):
 * the parts of wm_ctx_snapshot / wm_ctx_restore (graph/wm_snapshot.h) as a Lua table
 * {[part name] = bytes}, for the test harness's h:snapshot() / h:restore(s) (wm.testing)
 * and for any caller that keeps its parts in Lua. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_codec.h"
#include "graph/wm_snapshot.h"
#include "lwm.h"
#include "lwm_ckpt.h"
#include "lwm_codec.h"
#include "lwm_graph.h"
#include "lwm_plan.h"

static int put_part(void *ud, const char *name, const void *data, size_t len, wm_error *err) {
  (void)err;
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

/* ---- wm.core._checkpoint_sources(env[, positions]) -> positions ------------------------
 * For the specs of the sources' positions, before the checkpoint coordinator runs whole
 * jobs: runs the env's job on one thread as execute() does (without signals, metrics or
 * traces), first refusing what lwm_check_checkpointable refuses and restoring each source
 * named in positions ({[operator name] = bytes}); after the run, returns every source's
 * position as the coordinator would store it. Sources that cannot be checkpointed (files
 * are the coordinator's) are left out. */

static int run_sources(lwm_bridge *B, int env, int positions) {
  lua_State *L = B->L;
  wm_exec_config cfg = {.watermark_interval = (int64_t)lwm_get_int(L, env, "watermark_interval", 200)};
  B->exec = wm_exec_new(&B->ctx, &cfg);
  if (!B->exec) return WM_ERR;
  wm_op **outop = NULL;
  int *outport = NULL;
  lua_Integer n = 0;
  int rc = lwm_build(B, env, &outop, &outport, &n);
  free(outop);
  free(outport);
  if (rc == WM_OK) rc = lwm_check_checkpointable(B);
  lua_pushnil(L);
  while (rc == WM_OK && positions && lua_next(L, positions)) {
    const char *name = lua_tostring(L, -2);
    size_t len, i = 0;
    const char *data = lua_tolstring(L, -1, &len);
    while (i < B->ctx.nops && (!name || strcmp(B->ctx.ops[i]->name, name) != 0)) i++;
    if (i == B->ctx.nops || !data)
      rc = wm_ctx_error(&B->ctx, "no source named '%s' in this job", name ? name : "?");
    else
      rc = wm_exec_restore_source(B->exec, B->ctx.ops[i], data, len);
    lua_pop(L, rc == WM_OK ? 1 : 2);
  }
  if (rc == WM_OK) rc = wm_exec_run(B->exec);
  if (rc != WM_OK) return rc;
  lua_newtable(L);
  wm_buf b;
  wm_buf_init(&b);
  for (size_t i = 0; rc == WM_OK && i < B->ctx.nops; i++) {
    wm_op *op = B->ctx.ops[i];
    if (op->nin != 0 || (strcmp(op->vt->kind, "generate") != 0 && strcmp(op->vt->kind, "source") != 0 &&
                          strcmp(op->vt->kind, "nexmark") != 0))
      continue;
    wm_buf_clear(&b);
    rc = wm_exec_snapshot_source(B->exec, op, &b);
    if (rc == WM_OK) {
      lua_pushlstring(L, b.data ? b.data : "", b.len);
      lua_setfield(L, -2, op->name);
    }
  }
  wm_buf_free(&b);
  if (rc != WM_OK) lua_pop(L, 1);
  return rc;
}

int lwm_checkpoint_sources(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lwm_bridge *B = calloc(1, sizeof *B);
  if (!B) return luaL_error(L, "out of memory");
  lwm_bridge_init(B, L); /* 3 msgh, 4 slots, 5 fns */
  int rc = run_sources(B, 1, lua_istable(L, 2) ? 2 : 0);
  if (rc == WM_OK) lua_replace(L, 2); /* the positions, below the bridge's slots */
  else lua_pushstring(L, wm_ctx_errtext(&B->ctx));
  if (rc != WM_OK) lua_replace(L, 2);
  wm_ctx_free(&B->ctx);
  wm_exec_free(B->exec);
  lwm_unregister(B);
  free(B->refs);
  free(B->free_slots);
  free(B);
  lua_settop(L, 2);
  if (rc != WM_OK) return lua_error(L);
  return 1;
}
