/* libFuzzer target through an embedded Lua state with the wm library (wm.core linked in, the
 * Lua part from lua/): FUZZ_SCRIPT (spec/fuzz/<name>.lua) returns a function that gets each
 * input as a string and raises an error when an invariant fails; the error aborts the run.
 * Expected failures of the code under test (a malformed SQL script, a bad JSON line) are the
 * script's to catch and check. Built once per script (make fuzz). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#ifndef FUZZ_SCRIPT
#error "FUZZ_SCRIPT (the path of the Lua script) must be defined"
#endif
#ifndef WM_ROOT
#error "WM_ROOT (the repository, for lua/) must be defined"
#endif

int luaopen_wm_core(lua_State *L);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *L;
static int fn_ref = LUA_NOREF;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  L = luaL_newstate();
  if (!L) abort();
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_wm_core);
  lua_setfield(L, -2, "wm.core");
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_pushstring(L, WM_ROOT "/lua/?.lua;" WM_ROOT "/lua/?/init.lua;");
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  if (luaL_loadfile(L, FUZZ_SCRIPT) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK ||
      !lua_isfunction(L, -1)) {
    fprintf(stderr, "fuzz_lua: %s: %s\n", FUZZ_SCRIPT,
            lua_isstring(L, -1) ? lua_tostring(L, -1) : "does not return a function");
    abort();
  }
  fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static int traceback(lua_State *l) {
  luaL_traceback(l, l, luaL_tolstring(l, 1, NULL), 1);
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  lua_pushcfunction(L, traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, fn_ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 0, -3) != LUA_OK) {
    fprintf(stderr, "fuzz_lua (%s): %s\n", FUZZ_SCRIPT, lua_tostring(L, -1));
    abort();
  }
  lua_pop(L, 1);
  lua_gc(L, LUA_GCSTEP, 0);
  return 0;
}
