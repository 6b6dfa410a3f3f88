/* Lua states whose memory comes from a pool of their own (lwm_state.c), below everything. */
#ifndef LWM_STATE_H
#define LWM_STATE_H

#include <lua.h>

/* A new Lua state as luaL_newstate makes it, but whose memory comes from a wm_pool of its
 * own (one state, one thread); NULL when out of memory. Close it with lwm_pool_state_close. */
lua_State *lwm_pool_state_new(void);
/* lua_close, then frees the state's pool (any state: one of luaL_newstate is just closed). */
void lwm_pool_state_close(lua_State *L);

#endif
