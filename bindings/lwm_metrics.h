/* The Prometheus endpoint and the progress line of a run (lwm_metrics.c). */
#ifndef LWM_METRICS_H
#define LWM_METRICS_H

#include "lwm.h"

/* The Prometheus endpoint (env.metrics_http), the live view (env.ui_http) and the progress
 * line (env.progress) of a run,
 * on thread 0's loop (lwm_metrics.c); on the other threads of a job, the publishing of their
 * metrics for the endpoint. Call start on every thread; ck: the run's checkpoint
 * coordinator (NULL: none), for the checkpoint series. start: WM_OK or WM_ERR; end (the
 * executor's on_end hook, and once more after the run: it is idempotent) closes their
 * handles. */
struct wm_ckptrun;
typedef struct lwm_services {
  struct wm_metrics_http *http;
  struct wm_metrics_http *ui;   /* the live view (env.ui_http): the same server, more routes */
  struct lwm_ui *uiv;           /* its page and job (lwm_metrics.c) */
  struct wm_mboard *own_board;  /* one thread: the endpoint's board */
  struct publisher *publisher;  /* threads 2..n: their snapshots for thread 1's endpoint */
  struct progress *progress;
  struct lwm_task_status *task; /* a scale-out task's status line (lwm_task.c) */
} lwm_services;
int lwm_services_start(lwm_bridge *B, int env, uv_loop_t *loop, const struct wm_ckptrun *ck,
                       lwm_services *s);
void lwm_services_end(void *ud);

#endif
