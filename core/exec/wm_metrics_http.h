/* Prometheus metrics over HTTP on the executor's libuv loop (wmrun --metrics-port, the env
 * option metrics = {port = ..., host = ...}; docs/metrics.md).
 *
 * GET /metrics answers the text exposition format (version 0.0.4) of exec/wm_mboard.h:
 * per operator instance (labels operator, subtask, and thread with several threads) its
 * counts, watermark and lag, windows and keys held, and the job's checkpoints. Each request
 * is answered from the loop's thread, between batches: the numbers are consistent. Handles do
 * not keep the loop alive; their memory is freed in their close callbacks.
 *
 * The endpoint never takes what the job needs: at most WM_METRICS_MAX_CONNS
 * connections are served at once, and one is accepted only while a reserve of descriptors
 * stays free (a quarter of RLIMIT_NOFILE's soft limit, at least WM_METRICS_FD_RESERVE);
 * beyond either, a connection is answered 503 and closed at once. A connection gets
 * WM_METRICS_TIMEOUT_MS to send its request (then 408 and closed) and as long again to
 * read the answer. A request that is not HTTP (a control character such as a NUL byte, a
 * malformed request line such as "HEADX /metrics") is answered 400 as soon as it shows. */
#ifndef WM_METRICS_HTTP_H
#define WM_METRICS_HTTP_H

#include <uv.h>

#include "base/wm_buf.h"
#include "exec/wm_mboard.h"
#include "graph/wm_graph.h"

typedef struct wm_metrics_http wm_metrics_http;

#define WM_METRICS_MAX_CONNS 8
#define WM_METRICS_FD_RESERVE 16
#define WM_METRICS_TIMEOUT_MS 5000
#define WM_METRICS_SWEEP_MS 250
#define WM_METRICS_MAX_ROUTES 4

/* What a request (the bytes received so far) asks for. */
typedef enum wm_metrics_req {
  WM_MREQ_MORE,      /* not complete yet */
  WM_MREQ_GET,       /* GET /metrics (a query string allowed): 200 */
  WM_MREQ_HEAD,      /* HEAD /metrics: 200 without the body */
  WM_MREQ_NOT_FOUND, /* GET or HEAD of another path: 404 */
  WM_MREQ_METHOD,    /* a well-formed request with another method: 405 */
  WM_MREQ_BAD,       /* not HTTP: a control character, a malformed request line: 400 */
  WM_MREQ_TOO_LARGE  /* max bytes and still not complete: 431 */
} wm_metrics_req;

/* Classifies the request in r[0..n) (n <= max): the request line is METHOD SP TARGET SP
 * HTTP/d.d (METHOD a token, TARGET visible characters), ended by LF or CRLF; the headers end
 * at an empty line. Decided as soon as the bytes allow: a control character or a bad request
 * line is WM_MREQ_BAD before the headers end. */
wm_metrics_req wm_metrics_parse_request(const char *r, size_t n, size_t max);
/* The same for a server of several paths: GET and HEAD of any path are WM_MREQ_GET and
 * WM_MREQ_HEAD, with *path, *plen the target's path (before '?'), pointing into r. */
wm_metrics_req wm_metrics_parse_target(const char *r, size_t n, size_t max, const char **path,
                                       size_t *plen);

/* Listens on host:port (port 0: a free port) of loop, serving ctx's operators; *bound (when
 * not NULL) gets the port. NULL on failure, with a message naming host and port in
 * ctx->error. */
wm_metrics_http *wm_metrics_http_start(uv_loop_t *loop, wm_ctx *ctx, const char *host, int port,
                                       int *bound);

/* Serves GET and HEAD of path (besides /metrics) with fn's body, of content type type (the
 * live view, wmrun --ui: "/", "/api/job"; exec/wm_ui.h): fn runs on the loop's thread,
 * between batches, like /metrics. path, type and ud must outlive m. Any other path is 404.
 * WM_OK, or WM_ERR past WM_METRICS_MAX_ROUTES. */
int wm_metrics_http_route(wm_metrics_http *m, const char *path, const char *type,
                          void (*fn)(wm_buf *body, void *ud), void *ud);

/* Closes the listener and every connection; the memory goes when their close callbacks
 * have run (run the loop after this). NULL is allowed. */
void wm_metrics_http_stop(wm_metrics_http *m);

/* Serves the board's snapshots (every thread's, exec/wm_mboard.h) instead of ctx's
 * operators alone; ctx is the board's thread `thread`, published afresh at each request.
 * The board must outlive the server. (wm_metrics_format, for ctx alone: wm_mboard.h.) */
void wm_metrics_http_set_board(wm_metrics_http *m, wm_mboard *board, int thread);

#endif
