/* Prometheus metrics over HTTP on the executor's libuv loop (wmrun --metrics-port, the env
 * option metrics = {port = ..., host = ...}; docs/metrics.md).
 *
 * GET /metrics answers the text exposition format (version 0.0.4) with, per operator of
 * the context (label `operator`): wmrun_records_in_total, wmrun_records_out_total,
 * wmrun_late_records_dropped_total, wmrun_watermark_milliseconds (NaN before the first
 * watermark, +Inf once the input has ended), wmrun_watermark_lag_milliseconds (processing
 * time minus the watermark), and wmrun_open_windows for window operators. Each request is
 * answered from the loop's thread, between batches: the numbers are consistent. Handles do
 * not keep the loop alive; their memory is freed in their close callbacks. */
#ifndef WM_METRICS_HTTP_H
#define WM_METRICS_HTTP_H

#include <uv.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

typedef struct wm_metrics_http wm_metrics_http;

/* Listens on host:port (port 0: a free port) of loop, serving ctx's operators; *bound (when
 * not NULL) gets the port. NULL on failure, with a message naming host and port in
 * ctx->err. */
wm_metrics_http *wm_metrics_http_start(uv_loop_t *loop, wm_ctx *ctx, const char *host, int port,
                                       int *bound);

/* Closes the listener and every connection; the memory goes when their close callbacks
 * have run (run the loop after this). NULL is allowed. */
void wm_metrics_http_stop(wm_metrics_http *m);

/* Appends the metrics of ctx's operators in the Prometheus text format; now is the
 * processing time (ms) the lag is measured from. */
void wm_metrics_format(wm_buf *b, const wm_ctx *ctx, int64_t now);

#endif
