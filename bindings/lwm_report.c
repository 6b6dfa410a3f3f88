/* What wmrun prints about a running job: the --metrics table and the --trace-watermarks
 * lines. Reads the core only, so that every binding file may call it. */
#include <stdio.h>
#include <string.h>

#include "io/wm_conn.h"
#include "ops/wm_keyedop.h"
#include "lwm.h"
#include "lwm_join.h"
#include "ops/wm_ijoin.h"

static void fmt_time(char *buf, size_t n, int64_t t) {
  if (t == WM_TIME_MIN) snprintf(buf, n, "MIN");
  else if (t == WM_TIME_MAX) snprintf(buf, n, "MAX");
  else snprintf(buf, n, "%lld", (long long)t);
}

/* What an operator holds: open windows of a window operator, keys of a keyed one. */
long long lwm_op_state(const wm_op *op) {
  if (strcmp(op->vt->kind, "window") == 0) return (long long)wm_winop_open_windows(op);
  if (wm_op_is_keyedop(op)) return (long long)wm_keyedop_keys(op);
  if (wm_op_is_ijoin(op)) return (long long)wm_ijoin_keys(op);
  return -1;
}

void lwm_print_metrics(lwm_bridge *B, FILE *f) {
  /* the operator column fits the longest name (names carry the script path and line) */
  int w = 8;
  for (size_t i = 0; i < B->ctx.nops; i++) {
    int n = (int)strlen(B->ctx.ops[i]->name);
    if (n > w) w = n;
  }
  if (w > 160) w = 160; /* alignment only: longer names are printed whole */
  /* records out: the main output (results); side out: every side output, each listed
   * below; late: dropped, or sent to the late side output (docs/metrics.md) */
  fprintf(f, "%-*s %11s %11s %9s %20s %12s %12s %8s\n", w, "operator", "records in", "records out",
          "side out", "watermark", "late dropped", "late to side", "windows");
  for (size_t i = 0; i < B->ctx.nops; i++) {
    wm_op *op = B->ctx.ops[i];
    char wm[32], st[32];
    fmt_time(wm, sizeof wm, op->wm);
    if (op->wm == WM_TIME_MIN) snprintf(wm, sizeof wm, "-");
    if (wm_op_is_tsop(op) && wm_tsop_is_idle(op)) snprintf(wm + strlen(wm), sizeof wm - strlen(wm), " idle");
    long long state = lwm_op_state(op);
    if (state < 0) snprintf(st, sizeof st, "-");
    else snprintf(st, sizeof st, "%lld", state);
    uint64_t side = 0;
    for (int p = 1; p < op->nports; p++)
      if (op->ports[p].side) side += op->ports[p].records;
    fprintf(f, "%-*s %11llu %11llu %9llu %20s %12llu %12llu %8s\n", w, op->name,
            (unsigned long long)op->m.records_in, (unsigned long long)op->m.records_out,
            (unsigned long long)side, wm, (unsigned long long)op->m.late_dropped,
            (unsigned long long)op->m.late_side, st);
  }
  for (size_t i = 0; i < B->ctx.nops; i++) { /* each side output on its own */
    const wm_op *op = B->ctx.ops[i];
    for (int p = 1; p < op->nports; p++)
      if (op->ports[p].side)
        fprintf(f, "side output '%s' of '%s': %llu record%s\n", op->ports[p].tag, op->name,
                (unsigned long long)op->ports[p].records, op->ports[p].records == 1 ? "" : "s");
  }
  for (size_t i = 0; i < B->ctx.nops; i++) lwm_join_report(B->ctx.ops[i], f); /* per side */
  for (size_t i = 0; i < B->ctx.nops; i++) /* parse_csv/parse_json with on_error = "skip" */
    if (B->ctx.ops[i]->m.parse_errors)
      fprintf(f, "parse errors: %llu in '%s'\n",
              (unsigned long long)B->ctx.ops[i]->m.parse_errors, B->ctx.ops[i]->name);
  wm_buf al; /* watermark alignment of read_kafka / read_nats (docs/connectors.md) */
  wm_buf_init(&al);
  wm_partsrc_metrics(&B->ctx, &al);
  if (al.len) fwrite(al.data, 1, al.len, f);
  wm_buf_free(&al);
  fflush(f);
}

/* One line per watermark advance or status change:
 *   [watermark] OP: channel N: OLD -> NEW        the combined input of OP advanced
 *   [watermark] OP: channel N: idle | active     the channel's status changed the input's
 *   [watermark] OP: generated: OLD -> NEW        an assigner's generator emitted
 *   [watermark] OP: generated: idle | active */
void lwm_trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status) {
  (void)ud;
  char a[24], b[24], where[32];
  fmt_time(a, sizeof a, old_wm);
  fmt_time(b, sizeof b, new_wm);
  if (chan < 0) snprintf(where, sizeof where, "generated");
  else snprintf(where, sizeof where, "channel %d", chan + 1);
  if (status)
    fprintf(stderr, "[watermark] %s: %s: %s (watermark %s)\n", op->name, where, status, a);
  else
    fprintf(stderr, "[watermark] %s: %s: %s -> %s\n", op->name, where, a, b);
}
