/* Lua states of wmrun (the main one and each worker thread's): lua_newstate with the
 * size-class pool allocator of core/base/wm_pool.c, and lauxlib's panic and warning
 * functions (luaL_newstate's, which lauxlib does not export). Calls only Lua and the core:
 * below every other binding file. */
#include <stdio.h>
#include <string.h>

#include "base/wm_pool.h"
#include "lwm_state.h"

static int panic(lua_State *L) {
  const char *msg = lua_tostring(L, -1);
  if (msg == NULL) msg = "error object is not a string";
  fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", msg);
  fflush(stderr);
  return 0; /* return to Lua to abort */
}

/* Warnings as lauxlib's: off until "@on", "@off" turns them off again, a message may come
 * in parts (tocont). */
static void warn_off(void *ud, const char *message, int tocont);
static void warn_on(void *ud, const char *message, int tocont);
static void warn_cont(void *ud, const char *message, int tocont);

static int warn_control(lua_State *L, const char *message, int tocont) {
  if (tocont || *(message++) != '@') return 0; /* not a control message */
  if (strcmp(message, "off") == 0) lua_setwarnf(L, warn_off, L);
  else if (strcmp(message, "on") == 0) lua_setwarnf(L, warn_on, L);
  return 1;
}
static void warn_off(void *ud, const char *message, int tocont) {
  warn_control((lua_State *)ud, message, tocont);
}
static void warn_cont(void *ud, const char *message, int tocont) {
  lua_State *L = ud;
  fprintf(stderr, "%s", message);
  if (tocont) {
    lua_setwarnf(L, warn_cont, L);
  } else {
    fprintf(stderr, "\n");
    fflush(stderr);
    lua_setwarnf(L, warn_on, L);
  }
}
static void warn_on(void *ud, const char *message, int tocont) {
  if (warn_control((lua_State *)ud, message, tocont)) return;
  fprintf(stderr, "Lua warning: ");
  warn_cont(ud, message, tocont);
}

lua_State *lwm_pool_state_new(void) {
  wm_pool *pool = wm_pool_new();
  if (!pool) return NULL;
  lua_State *L = lua_newstate(wm_pool_alloc, pool);
  if (!L) {
    wm_pool_free(pool);
    return NULL;
  }
  lua_atpanic(L, panic);
  lua_setwarnf(L, warn_off, L);
  return L;
}

void lwm_pool_state_close(lua_State *L) {
  void *ud = NULL;
  lua_Alloc f = lua_getallocf(L, &ud);
  lua_close(L);
  if (f == wm_pool_alloc) wm_pool_free(ud);
}
