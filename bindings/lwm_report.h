/* Trace and metrics output of wmrun (lwm_report.c, reads only the core). */
#ifndef LWM_REPORT_H
#define LWM_REPORT_H

#include "lwm.h"

/* Trace and metrics output of wmrun (lwm_report.c, reads only the core). */
void lwm_trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status);
/* The same events as JSON lines (--trace-watermarks=json). */
void lwm_trace_json_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                       const char *status);
void lwm_print_metrics(lwm_bridge *B, FILE *f);
/* What an operator holds: open windows of a window operator, keys of a keyed one; -1 for
 * an operator that holds neither. */
long long lwm_op_state(const wm_op *op);
/* Input k's (0, 1) own watermark of a two-input operator, as --metrics shows it ("-",
 * "1999", "4000 idle"). */
void lwm_input_wm_text(const wm_op *op, int k, char *buf, size_t n);

#endif
