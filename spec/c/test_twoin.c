/* Two-input operators in the graph (semantics.md §10): records and late records counted per
 * input, each input's own watermark, the trace of an input that moves while the other holds
 * the operator back, and the per-input counts in the graph's checkpoint part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "exec/wm_metrics_http.h"
#include "graph/wm_graph.h"
#include "graph/wm_observe.h"
#include "graph/wm_snapshot.h"
#include "timeline/wm_timeline.h"
#include "time/wm_time.h"
#include "test.h"

static int pass_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}

/* A join-like operator: a record behind its watermark is late; input 1's late records are
 * dropped, input 2's go to a side output (only counted here). */
static int join_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)rec;
  if (op->wm != WM_TIME_MIN && ts < op->wm) {
    if (wm_op_input_of(op, chan) == 0) {
      op->m.late_dropped++;
      wm_observe_late(op, NULL, ts, 0, NULL);
    } else {
      op->m.late_side++;
      wm_observe_late(op, NULL, ts, 0, "late2");
    }
  }
  return WM_OK;
}

static const wm_op_vt pass_vt = {.kind = "pass", .record = pass_record};
static const wm_op_vt join_vt = {.kind = "join", .record = join_record};

typedef struct traced {
  int chan;
  int64_t old_wm, new_wm;
  char status[16];
} traced;

typedef struct trace_log {
  const wm_op *op;
  traced t[16];
  int n;
} trace_log;

static void trace(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status) {
  trace_log *lg = ud;
  if (op != lg->op || lg->n == 16) return;
  traced *t = &lg->t[lg->n++];
  t->chan = chan;
  t->old_wm = old_wm;
  t->new_wm = new_wm;
  snprintf(t->status, sizeof t->status, "%s", status ? status : "-");
}

static void check_trace(const traced *t, int chan, int64_t o, int64_t n, const char *status) {
  CHECK_I64(t->chan, chan);
  CHECK_I64(t->old_wm, o);
  CHECK_I64(t->new_wm, n);
  CHECK_STR(t->status, status);
}

static wm_op *source(wm_ctx *ctx, const char *name) {
  wm_op *op = wm_op_new(ctx, &pass_vt, NULL, name);
  if (op) op->nin = 1; /* fed by the test */
  return op;
}

void test_twoin(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  trace_log lg = {0};
  ctx.trace = trace;
  ctx.trace_ud = &lg;
  wm_timeline *tl = wm_timeline_new("two inputs"); /* chains the trace above */
  CHECK(tl != NULL);
  wm_timeline_attach(tl, &ctx);
  /* input 1: two channels (s1a, s1b); input 2: one (s2) */
  wm_op *s1a = source(&ctx, "s1a"), *s1b = source(&ctx, "s1b"), *s2 = source(&ctx, "s2");
  wm_op *j = wm_op_new(&ctx, &join_vt, NULL, "join");
  CHECK(s1a && s1b && s2 && j);
  lg.op = j;
  CHECK_I64(j->in2, INT_MAX); /* one input until said otherwise */
  CHECK_I64(wm_op_connect(s1a, 0, j), 0);
  CHECK_I64(wm_op_connect(s1b, 0, j), 1);
  wm_op_set_two_inputs(j, j->nin);
  CHECK_I64(wm_op_connect(s2, 0, j), 2);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  CHECK_I64(wm_op_input_of(j, 1), 0);
  CHECK_I64(wm_op_input_of(j, 2), 1);

  wm_value v = wm_int(0);
  bool idle;
  CHECK_I64(wm_op_input_wm(j, 0, &idle), WM_TIME_MIN);
  CHECK(!idle);
  /* 1. records before any watermark: none late; 2 on input 1, 2 on input 2 */
  CHECK_I64(wm_op_input_record(s1a, 0, &v, 1), WM_OK);
  CHECK_I64(wm_op_input_record(s1b, 0, &v, 2), WM_OK);
  CHECK_I64(wm_op_input_record(s2, 0, &v, 3), WM_OK);
  CHECK_I64(wm_op_input_record(s2, 0, &v, 4), WM_OK);
  CHECK_I64(j->m.records_in, 4);
  CHECK_I64(j->m.in[0].records, 2);
  CHECK_I64(j->m.in[1].records, 2);
  /* 2. s1a at 10: input 1 is still at MIN (s1b has none): nothing traced */
  CHECK_I64(wm_op_input_watermark(s1a, 0, 10), WM_OK);
  CHECK_I64(lg.n, 0);
  /* 3. s1b at 20: input 1 moves to min(10, 20) = 10, the operator stays at MIN (input 2):
   * an "input" line */
  CHECK_I64(wm_op_input_watermark(s1b, 0, 20), WM_OK);
  CHECK_I64(j->wm, WM_TIME_MIN);
  CHECK_I64(wm_op_input_wm(j, 0, &idle), 10);
  CHECK_I64(lg.n, 1);
  check_trace(&lg.t[0], 1, WM_TIME_MIN, 10, "input");
  /* 4. s2 at 5: the operator moves to min(10, 5) = 5 */
  CHECK_I64(wm_op_input_watermark(s2, 0, 5), WM_OK);
  CHECK_I64(j->wm, 5);
  CHECK_I64(lg.n, 2);
  check_trace(&lg.t[1], 2, WM_TIME_MIN, 5, "-");
  /* 5. late records (ts < 5) on each input; 7 is not late */
  CHECK_I64(wm_op_input_record(s2, 0, &v, 3), WM_OK);
  CHECK_I64(wm_op_input_record(s1a, 0, &v, 4), WM_OK);
  CHECK_I64(wm_op_input_record(s1b, 0, &v, 7), WM_OK);
  CHECK_I64(j->m.in[0].records, 4);
  CHECK_I64(j->m.in[1].records, 3);
  CHECK_I64(j->m.in[0].late_dropped, 1);
  CHECK_I64(j->m.in[0].late_side, 0);
  CHECK_I64(j->m.in[1].late_dropped, 0);
  CHECK_I64(j->m.in[1].late_side, 1);
  CHECK_I64(j->m.late_dropped, 1);
  CHECK_I64(j->m.late_side, 1);
  /* 6. input 2 idle: the operator follows input 1 (10); input 2 shows idle at its 5 */
  CHECK_I64(wm_op_input_status(s2, 0, true), WM_OK);
  CHECK_I64(j->wm, 10);
  CHECK_I64(wm_op_input_wm(j, 1, &idle), 5);
  CHECK(idle);
  CHECK_I64(lg.n, 3);
  check_trace(&lg.t[2], 2, 5, 10, "-");
  /* 7. s1a at 30: input 1 = min(30, 20) = 20, and so the operator */
  CHECK_I64(wm_op_input_watermark(s1a, 0, 30), WM_OK);
  CHECK_I64(j->wm, 20);
  CHECK_I64(lg.n, 4);
  check_trace(&lg.t[3], 0, 10, 20, "-");
  /* 8. input 2 active again (at 5, behind: it does not pull the operator back): an
   * "input active" line */
  CHECK_I64(wm_op_input_status(s2, 0, false), WM_OK);
  CHECK_I64(j->wm, 20);
  CHECK_I64(wm_op_input_wm(j, 1, &idle), 5);
  CHECK(!idle);
  CHECK_I64(lg.n, 5);
  check_trace(&lg.t[4], 2, 5, 5, "input active");

  /* the timeline: each late record on its input's line, each input's own watermark steps */
  size_t nl;
  const wm_timeline_late *lates = wm_timeline_lates(tl, &nl);
  CHECK_I64(nl, 2);
  if (nl == 2) {
    CHECK_I64(lates[0].ts, 3);
    CHECK_I64(lates[0].input, 2);
    CHECK_I64(lates[0].side, 1);
    CHECK_I64(lates[1].ts, 4);
    CHECK_I64(lates[1].input, 1);
    CHECK_I64(lates[1].side, 0);
  }
  const char *want[] = {"join, input 1", "join, input 2"};
  int found = 0;
  for (int i = 0; i < wm_timeline_nseries(tl); i++) {
    wm_timeline_series se;
    wm_timeline_series_get(tl, i, &se);
    for (int k = 0; k < 2; k++) {
      if (strcmp(se.name, want[k]) != 0) continue;
      found++;
      CHECK_I64(se.window, 2 + k);
      /* input 1: 10 (step 3), 20 (step 7); input 2: 5 (step 4), 5 again when its idleness
       * moved the operator (step 6) */
      CHECK_I64(se.advances, 2);
      CHECK_I64(se.n > 0 ? se.steps[se.n - 1].v : -1, k == 0 ? 20 : 5);
      if (lates[0].input == 2) CHECK_I64(lates[k == 0 ? 1 : 0].series, i);
    }
  }
  CHECK_I64(found, 2);
  wm_timeline_detach(tl, &ctx);
  wm_timeline_free(tl);

  /* Prometheus: a series per input of the two-input operator, none for the others */
  wm_buf pm;
  wm_buf_init(&pm);
  wm_metrics_format(&pm, &ctx, 0);
  wm_buf_addc(&pm, '\0');
  CHECK(strstr(pm.data, "wmrun_input_records_total{operator=\"join\",subtask=\"1\",input=\"1\"} 4\n") != NULL);
  CHECK(strstr(pm.data, "wmrun_input_records_total{operator=\"join\",subtask=\"1\",input=\"2\"} 3\n") != NULL);
  CHECK(strstr(pm.data, "wmrun_input_late_records_dropped_total{operator=\"join\",subtask=\"1\",input=\"1\"} 1\n"));
  CHECK(strstr(pm.data, "wmrun_input_late_records_dropped_total{operator=\"join\",subtask=\"1\",input=\"2\"} 0\n"));
  CHECK(strstr(pm.data, "wmrun_input_late_records_side_output_total{operator=\"join\",subtask=\"1\",input=\"2\"} 1\n"));
  CHECK(strstr(pm.data, "wmrun_input_watermark_seconds{operator=\"join\",subtask=\"1\",input=\"1\"} 0.020\n"));
  CHECK(strstr(pm.data, "wmrun_input_watermark_seconds{operator=\"join\",subtask=\"1\",input=\"2\"} 0.005\n"));
  CHECK(strstr(pm.data, "{operator=\"s1a\",subtask=\"1\",input=") == NULL);
  wm_buf_free(&pm);

  /* the graph's checkpoint part keeps the per-input counts */
  wm_buf b;
  wm_buf_init(&b);
  CHECK_I64(wm_op_snapshot_graph(j, &b), WM_OK);
  wm_ctx ctx2;
  wm_ctx_init(&ctx2);
  wm_op *j2 = wm_op_new(&ctx2, &join_vt, NULL, "join");
  wm_op *one = wm_op_new(&ctx2, &join_vt, NULL, "join, one input");
  CHECK(j2 && one);
  j2->nin = one->nin = 3;
  wm_op_set_two_inputs(j2, 2);
  CHECK_I64(wm_ctx_prepare(&ctx2), WM_OK);
  CHECK_I64(wm_op_restore_graph(j2, (const uint8_t *)b.data, b.len), WM_OK);
  CHECK(memcmp(&j2->m, &j->m, sizeof j->m) == 0);
  CHECK_I64(j2->wm, 20);
  /* a part without them (a one-input operator's, or an older checkpoint's): zeros */
  wm_buf_clear(&b);
  one->m.records_in = 9;
  CHECK_I64(wm_op_snapshot_graph(one, &b), WM_OK);
  CHECK_I64(wm_op_restore_graph(j2, (const uint8_t *)b.data, b.len), WM_OK);
  CHECK_I64(j2->m.records_in, 9);
  CHECK_I64(j2->m.in[0].records, 0);
  CHECK_I64(j2->m.in[1].late_side, 0);
  wm_buf_free(&b);
  wm_ctx_free(&ctx2);
  wm_ctx_free(&ctx);
}
