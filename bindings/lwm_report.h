/* Trace and metrics output of wmrun (lwm_report.c, reads only the core). */
#ifndef LWM_REPORT_H
#define LWM_REPORT_H

#include "lwm.h"

/* Trace and metrics output of wmrun (lwm_report.c, reads only the core). */
void lwm_trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status);
/* The same events as JSON lines (--trace-watermarks=json); ud: NULL, or the lwm_rectrace of
 * json,records (the line goes after the keyed events it holds). */
void lwm_trace_json_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                       const char *status);
/* --trace-watermarks=json,records: the keyed events (records at keyed operators, late
 * records, window firings, timers) as JSON lines; install lwm_trace_records_fn as
 * ctx->observe with a lwm_rectrace as its ud (docs/watermarks.md lists the fields). */
typedef struct lwm_rectrace lwm_rectrace;
/* buffered: lines are held (up to 32 KB) and written by lwm_rectrace_flush, by a watermark
 * line (lwm_trace_json_fn with the lwm_rectrace as its ud), and at the free, so that a long
 * trace is not a write per line; their order stays. NULL when out of memory. */
lwm_rectrace *lwm_rectrace_new(int buffered);
void lwm_rectrace_write(lwm_rectrace *r, const char *s, size_t n, int flush);
void lwm_rectrace_flush(lwm_rectrace *r); /* NULL: nothing */
void lwm_rectrace_free(lwm_rectrace *r);  /* flushes */
void lwm_trace_records_fn(void *ud, const wm_op *op, const wm_obs *ev);
/* The trace mode of a `trace_watermarks` / `trace` option (the string, or NULL for a
 * boolean `truthy`): 0 off, 1 text, 2 JSON, 3 JSON with the keyed events ("json,records");
 * -1 an unknown string. */
int lwm_trace_mode(const char *s, int truthy);
void lwm_print_metrics(lwm_bridge *B, FILE *f);
/* What an operator holds: open windows of a window operator, keys of a keyed one; -1 for
 * an operator that holds neither. */
long long lwm_op_state(const wm_op *op);
/* Input k's (0, 1) own watermark of a two-input operator, as --metrics shows it ("-",
 * "1999", "4000 idle"). */
void lwm_input_wm_text(const wm_op *op, int k, char *buf, size_t n);

#endif
