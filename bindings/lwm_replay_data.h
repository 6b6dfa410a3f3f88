/* wm.lab's replay data (lwm_replay_data.c): the lines of a recorded file in arrival order,
 * each with its event time, its arrival time and the perfect watermark before it. Read by
 * the replay (lwm_replay.c). */
#ifndef LWM_REPLAY_DATA_H
#define LWM_REPLAY_DATA_H

#include "lwm.h"

#define REPLAY_MT "wm.ReplayData"

typedef struct replay_data {
  size_t n;
  char *text;       /* the file, lines NUL-terminated in place */
  size_t *off;      /* line i starts at text + off[i] (arrival order) */
  uint32_t *len;
  uint32_t *lineno; /* line number in the file (for messages) */
  char *path;       /* the file's name (for messages) */
  int64_t *ts, *arrival, *perfect;
} replay_data;

/* wm.core.replay_data(path, parse_node, ts_field, arrival[, watch]): a recorded file for
 * h:replay (wm.lab). */
int lwm_replay_data_new(lua_State *L);
/* The replay data sets' metatable. */
void lwm_replay_data_open(lua_State *L);

#endif
