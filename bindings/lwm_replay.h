/* wm.lab's arrival replay on the harness (lwm_replay.c): h:replay and h:replay_inputs. The
 * data sets are in lwm_replay_data.h, core.signal_watch in lwm_sigwatch.h. */
#ifndef LWM_REPLAY_H
#define LWM_REPLAY_H

#include <lua.h>

/* The replay data sets' metatable, and h:replay and h:replay_inputs on the harness's (call
 * after lwm_harness_open). */
void lwm_replay_open(lua_State *L);

#endif
