/* Scale-out tasks (lwm_task.c). */
#ifndef LWM_TASK_H
#define LWM_TASK_H

#include "lwm.h"

struct lwm_task_status;

/* core.supervise and core.task_guard, into the table on the top of the stack. */
void lwm_task_open(lua_State *L);
/* In a task's child (WM_TASK and WM_TASK_STATUS_FD set): a timer writing the status line;
 * *out NULL otherwise. WM_OK or WM_ERR. end: the last line, and the timer closed. */
int lwm_task_status_start(lwm_bridge *B, uv_loop_t *loop, struct lwm_task_status **out);
void lwm_task_status_end(struct lwm_task_status *ts);

#endif
