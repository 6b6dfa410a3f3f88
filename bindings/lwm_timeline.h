/* The timeline's glue: hands a recording (core/timeline) to lua/wm/timeline.lua, which
 * draws it. */
#ifndef LWM_TIMELINE_H
#define LWM_TIMELINE_H

#include <lua.h>

#include "timeline/wm_timeline.h"

/* Pushes the recording as a table (stack +1; the layout is documented at the top of
 * lua/wm/timeline.lua). Borrows tl for the call only. */
void lwm_timeline_push(lua_State *L, const wm_timeline *tl);

/* For wmrun, which has no Lua state between jobs: a fresh state with the wm library of
 * luadir. Checks before the job runs that path is an output the timeline can write
 * (.html or .svg, a writable place): 0, or -1 with the reason in err. */
int lwm_timeline_check(const char *luadir, const char *path, char *err, size_t errlen);
/* Draws the n recordings (one above the other) into path; x is "order" or "time".
 * 0, or -1 with the reason in err. */
/* Draws the JSON lines of --trace-watermarks=json in the file trace into path (a page with a
 * filter by operator: wm.timeline.from_trace); 0, or -1 with err. */
int lwm_timeline_from_trace(const char *luadir, const char *trace, const char *path, char *err,
                            size_t errlen);
int lwm_timeline_save(const char *luadir, wm_timeline *const *tls, int n, const char *x,
                      const char *path, char *err, size_t errlen);

#endif
