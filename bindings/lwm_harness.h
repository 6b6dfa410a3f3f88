/* wm.testing's harness, the lab's replay data and the signal watch (lwm_harness.c). */
#ifndef LWM_HARNESS_H
#define LWM_HARNESS_H

#include <lua.h>

/* wm.core.harness(env, opts) and the harness's metatable (lwm_harness.c). */
int lwm_harness_new(lua_State *L);
void lwm_harness_open(lua_State *L);
/* wm.core.replay_data(path, parse_node, ts_field, arrival_field): a recorded file for
 * h:replay (wm.lab; lwm_harness.c). */
int lwm_replay_data_new(lua_State *L);
int lwm_signal_watch_new(lua_State *L); /* core.signal_watch() (lwm_harness.c) */

#endif
