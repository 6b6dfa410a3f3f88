/* The print sink: Flink's print() format (api.md, Sinks), one line per record on a FILE
 * (standard output by default). A failed write or flush is an error that stops the job:
 * output that was not written is never taken as written. */
#ifndef WM_PRINT_H
#define WM_PRINT_H

#include <stdio.h>

#include "graph/wm_graph.h"

typedef struct wm_print_config {
  const char *prefix; /* NULL or "" for none */
  int instance;       /* 1-based instance; 0 when parallelism is 1 */
  FILE *out;          /* stdout by default */
} wm_print_config;

/* print(): one line per record in Flink's format (api.md). Flushes after every line only
 * when the output is a terminal, and at the end of input (a failed flush is an error:
 * "cannot write to standard output: No space left on device"). NULL on failure. */
wm_op *wm_print_new(wm_ctx *ctx, const char *name, const wm_print_config *cfg);
/* discard(): a sink that drops every record (Flink's DiscardingSink, SQL's 'blackhole'),
 * in C, on the thread of its instance. NULL on failure (message in ctx->error). */
wm_op *wm_discard_new(wm_ctx *ctx, const char *name);
/* Flushes every print sink of the context. WM_OK, or WM_ERR (message in ctx->error) when a
 * flush failed. */
int wm_print_flush_all(wm_ctx *ctx);

#endif
