/* The live view (wmrun --ui): the server's routing of several paths
 * (wm_metrics_parse_target) and the JSON of /api/job (exec/wm_ui.h) for a small graph whose
 * every figure is set by the test. */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/wm_buf.h"
#include "exec/wm_mboard.h"
#include "exec/wm_metrics_http.h"
#include "exec/wm_ui.h"
#include "graph/wm_graph.h"
#include "time/wm_time.h"
#include "test.h"

static int pass_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}

static const wm_op_vt pass_vt = {.kind = "pass", .record = pass_record};

static int64_t now_5000(void *ud) {
  (void)ud;
  return 5000;
}

static void check_target(const char *r, wm_metrics_req want, const char *path) {
  const char *p = NULL;
  size_t n = 0;
  CHECK_I64(wm_metrics_parse_target(r, strlen(r), 8191, &p, &n), want);
  if (path) {
    CHECK_I64((int64_t)n, (int64_t)strlen(path));
    CHECK(p && memcmp(p, path, n) == 0);
  }
}

/* A thread of its own publishing thread 2's snapshot of "s 2/2" -> "w 2/2" after each of
 * `upto` records, while the test's thread makes the JSON (make tsan checks the locking). */
typedef struct ui_worker {
  wm_mboard *board;
  int upto, rc;
} ui_worker;

static void ui_worker_main(void *arg) {
  ui_worker *w = arg;
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  ctx.now = now_5000;
  wm_op *s = wm_op_new(&ctx, &pass_vt, NULL, "s 2/2"), *o = wm_op_new(&ctx, &pass_vt, NULL, "w 2/2");
  if (!s || !o || (s->nin = 1, wm_op_connect(s, 0, o)) != 0 || wm_ctx_prepare(&ctx) != WM_OK) {
    w->rc = WM_ERR;
    wm_ctx_free(&ctx);
    return;
  }
  wm_value v = wm_int(0);
  for (int i = 0; i < w->upto; i++)
    if (wm_op_input_record(s, 0, &v, i) != WM_OK || wm_mboard_publish(w->board, 1, &ctx) != WM_OK)
      w->rc = WM_ERR;
  wm_ctx_free(&ctx);
}

/* Two threads, each with instance k of "s" -> "w": every thread's operators, numbered
 * thread by thread, their edges, and per operator the totals over its instances. */
static void test_ui_threads(void) {
  wm_ctx ctx[2];
  wm_mboard *board = wm_mboard_new(2);
  CHECK(board != NULL);
  const char *names[2][2] = {{"s 1/2", "w 1/2"}, {"s 2/2", "w 2/2"}};
  const int64_t ts[2] = {3000, 1000};
  for (int t = 0; t < 2; t++) {
    wm_ctx_init(&ctx[t]);
    ctx[t].now = now_5000;
    wm_op *s = wm_op_new(&ctx[t], &pass_vt, NULL, names[t][0]);
    wm_op *w = wm_op_new(&ctx[t], &pass_vt, NULL, names[t][1]);
    CHECK(s && w);
    s->nin = 1;
    CHECK_I64(wm_op_connect(s, 0, w), 0);
    CHECK_I64(wm_ctx_prepare(&ctx[t]), WM_OK);
    wm_value v = wm_int(0);
    for (int i = 0; i < 2 - t; i++) CHECK_I64(wm_op_input_record(s, 0, &v, 500), WM_OK);
    CHECK_I64(wm_op_input_watermark(s, 0, ts[t]), WM_OK);
  }
  wm_ui_job job = {.name = "t", .parallelism = 2, .threads = 2};
  wm_buf buf;
  wm_buf_init(&buf);
  wm_ui_json(&buf, board, 5000, &job); /* nothing published yet: no operator */
  CHECK(strstr(buf.data, "\"operators\":[],\"edges\":[],\"totals\":[]}") != NULL);
  for (int t = 0; t < 2; t++) CHECK_I64(wm_mboard_publish(board, t, &ctx[t]), WM_OK);
  buf.len = 0;
  wm_ui_json(&buf, board, 5000, &job);
  /* by hand: thread 1's s (2 records) and w are ids 0 and 1, thread 2's (1 record) 2 and 3;
   * w's watermark: 3000 on thread 1, 1000 on thread 2, the slowest 1000 */
  CHECK(strstr(buf.data, "{\"id\":3,\"name\":\"w 2/2\",\"operator\":\"w\",\"subtask\":2,\"thread\":2,"
                         "\"kind\":\"pass\",\"records_in\":1,") != NULL);
  CHECK(strstr(buf.data, "\"edges\":[{\"from\":0,\"to\":1,\"chan\":0,\"port\":null,\"side\":false},"
                         "{\"from\":2,\"to\":3,\"chan\":0,\"port\":null,\"side\":false}]") != NULL);
  CHECK(strstr(buf.data, "\"totals\":[{\"operator\":\"s\",\"subtasks\":2,\"records_in\":3,"
                         "\"records_out\":3,\"late_dropped\":0,\"late_side\":0,\"watermark\":1000},"
                         "{\"operator\":\"w\",\"subtasks\":2,\"records_in\":3,\"records_out\":3,"
                         "\"late_dropped\":0,\"late_side\":0,\"watermark\":1000}]}") != NULL);
  CHECK(!buf.oom);
  /* thread 2 publishes while this one reads: every JSON sees a count it published, never
   * going back, and at the end its last */
  ui_worker w = {board, 1000, WM_OK};
  uv_thread_t tid;
  CHECK_I64(uv_thread_create(&tid, ui_worker_main, &w), 0);
  const char *key = "\"name\":\"w 2/2\",\"operator\":\"w\",\"subtask\":2,\"thread\":2,\"kind\":\"pass\","
                    "\"records_in\":";
  long last = 0;
  int backwards = 0;
  for (int i = 0; i < 200; i++) {
    buf.len = 0;
    wm_ui_json(&buf, board, 5000, &job);
    const char *p = strstr(buf.data, key);
    long n = p ? strtol(p + strlen(key), NULL, 10) : -1;
    if (n < last) backwards = 1;
    if (n > last) last = n;
  }
  uv_thread_join(&tid);
  CHECK_I64(w.rc, WM_OK);
  CHECK_I64(backwards, 0);
  buf.len = 0;
  wm_ui_json(&buf, board, 5000, &job);
  CHECK(strstr(buf.data, "\"thread\":2,\"kind\":\"pass\",\"records_in\":1000,") != NULL);
  wm_buf_free(&buf);
  wm_mboard_free(board);
  for (int t = 0; t < 2; t++) wm_ctx_free(&ctx[t]);
}

void test_ui(void) {
  /* several paths: GET and HEAD of any path, its path before '?' */
  check_target("GET / HTTP/1.1\r\n\r\n", WM_MREQ_GET, "/");
  check_target("GET /api/job?t=1 HTTP/1.1\r\nHost: x\r\n\r\n", WM_MREQ_GET, "/api/job");
  check_target("HEAD /metrics HTTP/1.0\n\n", WM_MREQ_HEAD, "/metrics");
  check_target("POST / HTTP/1.1\r\n\r\n", WM_MREQ_METHOD, NULL);
  check_target("GET /api", WM_MREQ_MORE, NULL);
  check_target("GET /\x01 HTTP/1.1\r\n\r\n", WM_MREQ_BAD, NULL);
  /* the Prometheus-only parse still answers 404 for them */
  const char *api = "GET /api/job HTTP/1.1\r\n\r\n";
  CHECK_I64(wm_metrics_parse_request(api, strlen(api), 8191), WM_MREQ_NOT_FOUND);

  /* a -> j (input 1), b -> j (input 2), j -> out and j's side output "late" -> late */
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  ctx.now = now_5000;
  wm_op *a = wm_op_new(&ctx, &pass_vt, NULL, "a"), *b = wm_op_new(&ctx, &pass_vt, NULL, "b \"q\"");
  wm_op *j = wm_op_new(&ctx, &pass_vt, NULL, "j");
  wm_op *out = wm_op_new(&ctx, &pass_vt, NULL, "out"), *late = wm_op_new(&ctx, &pass_vt, NULL, "late");
  CHECK(a && b && j && out && late);
  a->nin = b->nin = 1; /* fed by the test */
  CHECK_I64(wm_op_connect(a, 0, j), 0);
  wm_op_set_two_inputs(j, j->nin);
  CHECK_I64(wm_op_connect(b, 0, j), 1);
  CHECK_I64(wm_op_connect(j, 0, out), 0);
  int side = wm_op_port(j, "late");
  CHECK_I64(side, 1);
  j->ports[side].side = 1;
  CHECK_I64(wm_op_connect(j, side, late), 0);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  /* a: 2 records, watermark 3000; b: 1 record, no watermark: j holds at none yet (MIN),
   * its input 1 at 3000, input 2 none; out and late see j's records (3) on the main port */
  wm_value v = wm_int(0);
  CHECK_I64(wm_op_input_record(a, 0, &v, 1000), WM_OK);
  CHECK_I64(wm_op_input_record(a, 0, &v, 2000), WM_OK);
  CHECK_I64(wm_op_input_record(b, 0, &v, 1500), WM_OK);
  CHECK_I64(wm_op_input_watermark(a, 0, 3000), WM_OK);
  j->m.late_side = 1; /* as an operator counts a record it sent to "late" */
  j->ports[side].records = 1;
  wm_ui_job job = {.name = "t", .parallelism = 1, .threads = 1};
  wm_buf buf;
  wm_buf_init(&buf);
  wm_mboard *board = wm_mboard_new(1);
  CHECK(board != NULL);
  CHECK_I64(wm_mboard_publish(board, 0, &ctx), WM_OK);
  wm_ui_json(&buf, board, 5000, &job);
  /* by hand: a's watermark is 3000 (lag 5000 - 3000 = 2000), passed on to j's channel 0 */
  const char *want =
      "{\"name\":\"t\",\"parallelism\":1,\"threads\":1,\"now\":5000,"
      "\"checkpoints\":null,\"operators\":["
      "{\"id\":0,\"name\":\"a\",\"operator\":\"a\",\"subtask\":1,\"thread\":1,"
      "\"kind\":\"pass\",\"records_in\":2,\"records_out\":2,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":3000,\"lag_ms\":2000,"
      "\"channels\":[{\"watermark\":3000,\"idle\":false}],\"side_outputs\":[]},"
      "{\"id\":1,\"name\":\"b \\\"q\\\"\",\"operator\":\"b \\\"q\\\"\",\"subtask\":1,\"thread\":1,"
      "\"kind\":\"pass\",\"records_in\":1,\"records_out\":1,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":null,\"lag_ms\":null,"
      "\"channels\":[{\"watermark\":null,\"idle\":false}],\"side_outputs\":[]},"
      "{\"id\":2,\"name\":\"j\",\"operator\":\"j\",\"subtask\":1,\"thread\":1,"
      "\"kind\":\"pass\",\"records_in\":3,\"records_out\":3,"
      "\"late_dropped\":0,\"late_side\":1,\"watermark\":null,\"lag_ms\":null,"
      "\"channels\":[{\"watermark\":3000,\"idle\":false},{\"watermark\":null,\"idle\":false}],"
      "\"inputs\":[{\"records\":2,\"late_dropped\":0,\"late_side\":0,\"watermark\":3000,"
      "\"idle\":false},{\"records\":1,\"late_dropped\":0,\"late_side\":0,\"watermark\":null,"
      "\"idle\":false}],\"side_outputs\":[{\"tag\":\"late\",\"records\":1}]},"
      "{\"id\":3,\"name\":\"out\",\"operator\":\"out\",\"subtask\":1,\"thread\":1,"
      "\"kind\":\"pass\",\"records_in\":3,\"records_out\":3,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":null,\"lag_ms\":null,"
      "\"channels\":[{\"watermark\":null,\"idle\":false}],\"side_outputs\":[]},"
      "{\"id\":4,\"name\":\"late\",\"operator\":\"late\",\"subtask\":1,\"thread\":1,"
      "\"kind\":\"pass\",\"records_in\":0,\"records_out\":0,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":null,\"lag_ms\":null,"
      "\"channels\":[{\"watermark\":null,\"idle\":false}],\"side_outputs\":[]}],"
      "\"edges\":[{\"from\":0,\"to\":2,\"chan\":0,\"port\":null,\"side\":false},"
      "{\"from\":1,\"to\":2,\"chan\":1,\"port\":null,\"side\":false},"
      "{\"from\":2,\"to\":3,\"chan\":0,\"port\":null,\"side\":false},"
      "{\"from\":2,\"to\":4,\"chan\":0,\"port\":\"late\",\"side\":true}],"
      "\"totals\":[{\"operator\":\"a\",\"subtasks\":1,\"records_in\":2,\"records_out\":2,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":3000},"
      "{\"operator\":\"b \\\"q\\\"\",\"subtasks\":1,\"records_in\":1,\"records_out\":1,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":null},"
      "{\"operator\":\"j\",\"subtasks\":1,\"records_in\":3,\"records_out\":3,"
      "\"late_dropped\":0,\"late_side\":1,\"watermark\":null},"
      "{\"operator\":\"out\",\"subtasks\":1,\"records_in\":3,\"records_out\":3,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":null},"
      "{\"operator\":\"late\",\"subtasks\":1,\"records_in\":0,\"records_out\":0,"
      "\"late_dropped\":0,\"late_side\":0,\"watermark\":null}]}";
  CHECK_STR(buf.data, want);
  /* the end of a's input: "end", lag 0 */
  CHECK_I64(wm_op_input_watermark(a, 0, WM_TIME_MAX), WM_OK);
  buf.len = 0;
  CHECK_I64(wm_mboard_publish(board, 0, &ctx), WM_OK); /* the JSON shows what was published */
  wm_ui_json(&buf, board, 5000, &job);
  CHECK(strstr(buf.data, "{\"id\":0,\"name\":\"a\",\"operator\":\"a\",\"subtask\":1,\"thread\":1,"
                         "\"kind\":\"pass\",\"records_in\":2,\"records_out\":2,"
                         "\"late_dropped\":0,\"late_side\":0,\"watermark\":\"end\",\"lag_ms\":0,") != NULL);
  CHECK(!buf.oom);
  wm_buf_free(&buf);
  wm_mboard_free(board);
  wm_ctx_free(&ctx);
  test_ui_threads();
}
