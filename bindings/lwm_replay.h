/* wm.lab's arrival replay on the harness (lwm_replay.c): recorded data sets, h:replay,
 * h:replay_inputs, and core.signal_watch. */
#ifndef LWM_REPLAY_H
#define LWM_REPLAY_H

#include <lua.h>

/* wm.core.replay_data(path, parse_node, ts_field, arrival_field): a recorded file for
 * h:replay (wm.lab). */
int lwm_replay_data_new(lua_State *L);
int lwm_signal_watch_new(lua_State *L); /* core.signal_watch() */
/* The replay data sets' metatable, and h:replay and h:replay_inputs on the harness's (call
 * after lwm_harness_open). */
void lwm_replay_open(lua_State *L);

#endif
