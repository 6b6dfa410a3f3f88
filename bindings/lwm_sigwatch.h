/* core.signal_watch() (lwm_sigwatch.c): SIGINT, SIGTERM and SIGHUP during `wmrun lab`, given
 * to core.replay_data and h:replay (opts.watch) so that a signal stops them. */
#ifndef LWM_SIGWATCH_H
#define LWM_SIGWATCH_H

#include "lwm.h"

#define SIGWATCH_MT "wm.sigwatch"
typedef struct sigwatch {
  wm_ctx ctx;
  wm_exec *exec; /* NULL once closed */
} sigwatch;

/* "interrupted by SIGINT" (SIGTERM, SIGHUP) */
const char *lwm_sig_text(int sig);
/* core.signal_watch() -> a watch (w:pending(), w:close()) */
int lwm_signal_watch_new(lua_State *L);

#endif
