/* The allocator of wmrun's Lua states, with the allocation stress of docs/testing.md. */
#ifndef LWM_ALLOC_H
#define LWM_ALLOC_H

#include <lua.h>

/* A new Lua state as lwm_pool_state_new makes it (lwm_state.c). With WM_FAIL_ALLOC=N in the
 * environment (read here, once per state), the state's Nth allocation and every later one
 * fail, as when memory runs out (frees and shrinks still work, as Lua requires). NULL when the state cannot
 * be made; *why (a static string) then says why. Close it with lwm_close_state. */
lua_State *lwm_new_state(const char **why);
/* lwm_pool_state_close, after freeing what lwm_new_state added to the state's allocator. */
void lwm_close_state(lua_State *L);

#endif
