/* The Prometheus endpoint and the progress line of a run (lwm_metrics.c). */
#ifndef LWM_METRICS_H
#define LWM_METRICS_H

#include "lwm.h"

/* The Prometheus endpoint (env.metrics_http), the live view (env.ui_http) and the progress
 * line (env.progress) of a run,
 * on thread 0's loop (lwm_metrics.c). start: WM_OK or WM_ERR; end (the executor's on_end
 * hook, and once more after the run: it is idempotent) closes their handles. */
typedef struct lwm_services {
  struct wm_metrics_http *http;
  struct wm_metrics_http *ui;   /* the live view (env.ui_http): the same server, more routes */
  struct lwm_ui *uiv;           /* its page and job (lwm_metrics.c) */
  struct progress *progress;
  struct lwm_task_status *task; /* a scale-out task's status line (lwm_task.c) */
} lwm_services;
struct wm_ckptrun;
/* ckpt: the run's checkpoints, shown by the live view (NULL: none). */
int lwm_services_start(lwm_bridge *B, int env, uv_loop_t *loop, lwm_services *s,
                       const struct wm_ckptrun *ckpt);
void lwm_services_end(void *ud);

#endif
