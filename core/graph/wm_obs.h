/* The events a recorder observes (graph/wm_observe.h has the calls that operators make).
 * Apart from wm_observe.h so that graph/wm_graph.c, which wm_observe.h needs, can send
 * WM_OBS_EMIT without an include loop. */
#ifndef WM_OBS_H
#define WM_OBS_H

#include <stdint.h>

#include "base/wm_value.h"
#include "time/wm_window.h"

typedef enum {
  WM_OBS_RECORD = 1, /* a record at an assigner: ts (key unknown there) */
  WM_OBS_WINDOW,     /* a window operator added a record to window (created: a new one) */
  WM_OBS_FIRE,       /* a window fired: late = 1 for a late firing (a record into a window
                      * the watermark has passed), 0 when the watermark reached its end */
  WM_OBS_CLEANUP,    /* a window's state was deleted (its cleanup time was reached) */
  WM_OBS_LATE,       /* a late record: side = 1 sent to the side output `tag`, 0 dropped */
  WM_OBS_EMIT,       /* an operator emitted value (ts) on port flag: a firing's result when
                      * the operator is a window operator */
  WM_OBS_CHECKPOINT, /* a checkpoint completed: ckpt (op is NULL: it is the job's) */
  WM_OBS_ARRIVE,     /* a keyed process function (or rolling aggregate) got a record: key, ts
                      * (a window operator's records are its WINDOW and LATE events) */
  WM_OBS_TIMER,      /* a keyed process function's timer fired: key, ts = its time, flag =
                      * its domain (WM_TIME_EVENT or WM_TIME_PROCESSING) */
} wm_obs_kind;

/* CHECKPOINT: the checkpoint just committed. */
typedef struct wm_obs_ckpt {
  uint64_t id, bytes;
  double ms; /* from its start to its commit */
  int final; /* the one taken at the end of the input */
} wm_obs_ckpt;

/* One event. Every pointer is borrowed for the duration of the call. */
struct wm_obs {
  int kind;
  int64_t ts;            /* RECORD, WINDOW, LATE, ARRIVE: the record's timestamp; TIMER:
                          * the timer's time */
  int64_t watermark;     /* the operator's current watermark */
  wm_window window;      /* WINDOW, FIRE, CLEANUP */
  const wm_value *key;   /* WINDOW, FIRE, CLEANUP, LATE, ARRIVE, TIMER: the key; NULL when
                          * unknown */
  int flag;              /* WINDOW: created; FIRE: late firing; LATE: to a side output;
                          * TIMER: the domain */
  int64_t lateness;      /* LATE: the allowed lateness */
  const char *tag;       /* LATE: the side-output tag (NULL when dropped) */
  const wm_value *value; /* EMIT: the record emitted */
  const wm_obs_ckpt *ckpt; /* CHECKPOINT */
};

#endif
