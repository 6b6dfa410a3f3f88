/* The metrics board (exec/wm_mboard.h): every thread's operators in one scrape, labelled
 * operator / subtask / thread, a snapshot published by the thread that owns the context,
 * and the watermarks in seconds. Expected texts are written out by hand from the counts set
 * below. */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/wm_buf.h"
#include "exec/wm_mboard.h"
#include "graph/wm_graph.h"
#include "test.h"
#include "time/wm_time.h"

static int rec_noop(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)op, (void)chan, (void)rec, (void)ts;
  return WM_OK;
}
static const wm_op_vt plain_vt = {.kind = "map", .record = rec_noop};

/* the checkpoint stats the bindings would read from the coordinator */
static void fake_ckpt(void *ud, wm_mboard_ckpt *out) { *out = *(const wm_mboard_ckpt *)ud; }

static int has(const wm_buf *b, const char *s) { return b->data && strstr(b->data, s) != NULL; }

/* A thread of its own: creates its context, publishes it one records_in at a time up to
 * `upto`, then once more with the final count, as lwm_metrics.c's publisher does. */
typedef struct worker {
  wm_mboard *board;
  uint64_t upto;
  int rc;
} worker;

static void worker_main(void *arg) {
  worker *w = arg;
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &plain_vt, NULL, "map (job.lua:4) 2/2");
  if (!op) {
    w->rc = WM_ERR;
    return;
  }
  /* from 5: the board's slot already holds 4 for this operator (c1's snapshot), so a scrape
   * before the first publish must not see the count go back */
  for (uint64_t i = 5; i <= w->upto; i++) {
    op->m.records_in = i; /* only this thread touches its operators */
    if (wm_mboard_publish(w->board, 1, &ctx) != WM_OK) w->rc = WM_ERR;
  }
  wm_ctx_free(&ctx);
}

void test_mboard(void) {
  wm_mboard *b = wm_mboard_new(2);
  CHECK(b != NULL);
  CHECK_I64(wm_mboard_threads(b), 2);
  wm_ctx c0, c1;
  wm_ctx_init(&c0);
  wm_ctx_init(&c1);
  /* thread 1: instance 1 of a map, a source of parallelism 1 with a side output; thread 2:
   * instance 2 of the map, and a name with a quote and a backslash */
  wm_op *m1 = wm_op_new(&c0, &plain_vt, NULL, "map (job.lua:4) 1/2");
  wm_op *src = wm_op_new(&c0, &plain_vt, NULL, "src (job.lua:2)");
  wm_op *m2 = wm_op_new(&c1, &plain_vt, NULL, "map (job.lua:4) 2/2");
  wm_op *odd = wm_op_new(&c1, &plain_vt, NULL, "a \"q\" \\ 3/x");
  CHECK(m1 && src && m2 && odd);
  int late = wm_op_port(src, "late");
  CHECK(late > 0);
  m1->m.records_in = 3;
  m2->m.records_in = 4;
  src->m.records_out = 7;
  src->m.late_side = 2;
  src->ports[late].side = 1;
  src->ports[late].records = 2;
  m1->wm = 11999;                  /* 11.999 s */
  m2->wm = -1;                     /* before the epoch: -0.001 s */
  src->wm = WM_TIME_MAX;           /* ended: +Inf, lag 0 */
  odd->wm = WM_TIME_MIN;           /* none yet: NaN */

  wm_buf out;
  wm_buf_init(&out);
  /* nothing published: no operator, but every family's header */
  wm_mboard_format(&out, b, 0);
  CHECK(has(&out, "# TYPE wmrun_records_in_total counter\n"));
  CHECK(!has(&out, "operator="));
  CHECK(!has(&out, "wmrun_checkpoints_total")); /* no coordinator: no checkpoint series */

  CHECK_I64(wm_mboard_publish(b, 0, &c0), WM_OK);
  CHECK_I64(wm_mboard_publish(b, 1, &c1), WM_OK);
  CHECK_I64(wm_mboard_publish(b, 2, &c1), WM_ERR); /* no such thread */
  m1->m.records_in = 100; /* not published: the scrape shows the snapshot's 3 */
  wm_buf_clear(&out);
  wm_mboard_format(&out, b, 20000);
  CHECK(has(&out, "\nwmrun_records_in_total{operator=\"map (job.lua:4)\",subtask=\"1\",thread=\"1\"} 3\n"));
  CHECK(has(&out, "\nwmrun_records_in_total{operator=\"map (job.lua:4)\",subtask=\"2\",thread=\"2\"} 4\n"));
  CHECK(has(&out, "\nwmrun_records_out_total{operator=\"src (job.lua:2)\",subtask=\"1\",thread=\"1\"} 7\n"));
  CHECK(has(&out, "\nwmrun_late_records_side_output_total{operator=\"src (job.lua:2)\",subtask=\"1\",thread=\"1\"} 2\n"));
  CHECK(has(&out, "\nwmrun_side_output_records_total{operator=\"src (job.lua:2)\",subtask=\"1\",thread=\"1\",output=\"late\"} 2\n"));
  /* " 3/x" is no instance suffix: the name stays whole, escaped */
  CHECK(has(&out, "\nwmrun_records_in_total{operator=\"a \\\"q\\\" \\\\ 3/x\",subtask=\"1\",thread=\"2\"} 0\n"));
  CHECK(has(&out, "\nwmrun_watermark_seconds{operator=\"map (job.lua:4)\",subtask=\"1\",thread=\"1\"} 11.999\n"));
  CHECK(has(&out, "\nwmrun_watermark_seconds{operator=\"map (job.lua:4)\",subtask=\"2\",thread=\"2\"} -0.001\n"));
  CHECK(has(&out, "\nwmrun_watermark_seconds{operator=\"src (job.lua:2)\",subtask=\"1\",thread=\"1\"} +Inf\n"));
  CHECK(has(&out, "\nwmrun_watermark_lag_seconds{operator=\"src (job.lua:2)\",subtask=\"1\",thread=\"1\"} 0\n"));
  CHECK(has(&out, "\nwmrun_watermark_seconds{operator=\"a \\\"q\\\" \\\\ 3/x\",subtask=\"1\",thread=\"2\"} NaN\n"));
  /* lag: 20000 - 11999 ms */
  CHECK(has(&out, "\nwmrun_watermark_lag_seconds{operator=\"map (job.lua:4)\",subtask=\"1\",thread=\"1\"} 8.001\n"));
  /* one family header each, not one per thread */
  const char *first = strstr(out.data, "# TYPE wmrun_records_in_total");
  CHECK(first && !strstr(first + 1, "# TYPE wmrun_records_in_total"));

  /* checkpoints: none committed yet, then 3, the last 1234 bytes in 2.5 ms */
  wm_mboard_ckpt ck = {0, 0, 0};
  wm_mboard_set_checkpoints(b, fake_ckpt, &ck);
  wm_buf_clear(&out);
  wm_mboard_format(&out, b, 0);
  CHECK(has(&out, "# TYPE wmrun_checkpoints_total counter\nwmrun_checkpoints_total 0\n"));
  CHECK(has(&out, "\nwmrun_checkpoint_duration_seconds NaN\n"));
  CHECK(has(&out, "# TYPE wmrun_checkpoint_bytes gauge\nwmrun_checkpoint_bytes NaN\n"));
  ck = (wm_mboard_ckpt){3, 2.5, 1234};
  wm_buf_clear(&out);
  wm_mboard_format(&out, b, 0);
  CHECK(has(&out, "\nwmrun_checkpoints_total 3\n"));
  CHECK(has(&out, "\nwmrun_checkpoint_duration_seconds 0.0025\n"));
  CHECK(has(&out, "\nwmrun_checkpoint_bytes 1234\n"));
  wm_mboard_set_checkpoints(b, NULL, NULL);

  /* one context alone: no thread label */
  wm_buf_clear(&out);
  wm_metrics_format(&out, &c0, 20000);
  CHECK(has(&out, "\nwmrun_records_in_total{operator=\"map (job.lua:4)\",subtask=\"1\"} 100\n"));

  /* a second thread publishes while this one formats (make tsan checks the locking): each
   * scrape sees a count the worker published, never going back, and finally its last */
  worker w = {b, 2000, WM_OK};
  uv_thread_t tid;
  CHECK_I64(uv_thread_create(&tid, worker_main, &w), 0);
  uint64_t last = 0;
  int backwards = 0;
  const char *key = "\nwmrun_records_in_total{operator=\"map (job.lua:4)\",subtask=\"2\",thread=\"2\"} ";
  for (int i = 0; i < 200; i++) {
    wm_buf_clear(&out);
    wm_mboard_format(&out, b, 0);
    const char *p = strstr(out.data, key);
    if (!p) continue;
    uint64_t v = strtoull(p + strlen(key), NULL, 10);
    if (v < last) backwards = 1;
    last = v;
  }
  uv_thread_join(&tid);
  CHECK_I64(w.rc, WM_OK);
  CHECK_I64(backwards, 0);
  wm_buf_clear(&out);
  wm_mboard_format(&out, b, 0);
  CHECK(has(&out, "\nwmrun_records_in_total{operator=\"map (job.lua:4)\",subtask=\"2\",thread=\"2\"} 2000\n"));

  wm_buf_free(&out);
  wm_ctx_free(&c0);
  wm_ctx_free(&c1);
  wm_mboard_free(b);
}
