/* read_kafka on a real executor against librdkafka's mock cluster (in this process, on
 * 127.0.0.1): the positions it publishes ("offset N of topic/partition"), the reading order
 * of a bounded replay (partition by partition when no assigner tells watermarks apart), and
 * its snapshot and restore through the source interface: a run restored from a snapshot
 * taken at the record "b" reads on at "c"; damaged bytes are refused. */
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "exec/wm_exec.h"
#include "io/wm_conn.h"
#include "ops/wm_tsop.h"
#include "test.h"
#include "test_kafka.h"

typedef struct ksink {
  wm_buf seen;
  wm_exec *e;
  wm_op *src;
  wm_buf snap;
  wm_exec *ex;   /* for the snapshot before a commit */
  int commit;    /* at "b", snapshot the source then commit (as the coordinator does after a
                  * completed checkpoint); 2: at "a" commit with no snapshot taken (nothing);
                  * 3: at "b", a commit the broker refuses (mc) */
  rd_kafka_mock_cluster_t *mc;
} ksink;

/* notes "origin@line:text;" of every record; at "b" snapshots the source */
static int k_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  ksink *ks = op->impl;
  const wm_pos *p = op->ctx->pos;
  wm_buf_adds(&ks->seen, p && p->origin ? p->origin : "nopos");
  wm_buf_addc(&ks->seen, '@');
  wm_buf_add_int(&ks->seen, p ? (int64_t)p->line : -1);
  wm_buf_addc(&ks->seen, ':');
  size_t n;
  const char *s = wm_value_str(rec, &n);
  wm_buf_add(&ks->seen, s, n);
  wm_buf_addc(&ks->seen, ';');
  if (ks->e && n == 1 && s[0] == 'b') CHECK(wm_exec_snapshot_source(ks->e, ks->src, &ks->snap) == WM_OK);
  if (ks->commit == 2 && n == 1 && s[0] == 'a') CHECK(wm_partsrc_commit(ks->src) == WM_OK);
  if (ks->commit == 1 && n == 1 && s[0] == 'b') {
    wm_buf cut;
    wm_buf_init(&cut);
    CHECK(wm_exec_snapshot_source(ks->ex, ks->src, &cut) == WM_OK);
    wm_buf_free(&cut);
    CHECK(wm_partsrc_commit(ks->src) == WM_OK);
  }
  if (ks->commit == 3 && n == 1 && s[0] == 'b') {
    /* the coordinator commits the sources of every thread from the one that completed the
     * checkpoint: the commit is handed to librdkafka and its refusal comes back on the
     * source's own thread (a warning on stderr, see connectors_spec.lua); the call leaves
     * the source's context (its own thread's) as it was */
    wm_buf cut;
    wm_buf_init(&cut);
    CHECK(wm_exec_snapshot_source(ks->ex, ks->src, &cut) == WM_OK);
    wm_buf_free(&cut);
    rd_kafka_mock_push_request_errors(ks->mc, 8 /* OffsetCommit */, 1,
                                      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
    snprintf(op->ctx->error.msg, sizeof op->ctx->error.msg, "untouched");
    wm_error err;
    wm_error_clear(&err);
    CHECK(wm_partsrc_commit_to(ks->src, &err) == WM_OK);
    CHECK_STR(err.msg, "");
    CHECK_STR(wm_ctx_errtext(op->ctx), "untouched");
    op->ctx->error.msg[0] = 0;
  }
  return WM_OK;
}

static const wm_op_vt k_vt = {.kind = "noter", .record = k_record};

/* Produces value v into topic/partition and waits for its delivery. */
static void produce(rd_kafka_t *p, const char *topic, int part, const char *v) {
  CHECK(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
                          RD_KAFKA_V_VALUE((void *)v, strlen(v)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
}

/* Reads topic "t" (partitions 0 and 1) bounded, restored from `restore` when given; notes
 * what it saw, and a snapshot at "b" when take is set. start: WM_START_*; commit: commit
 * the positions at "b". The run's result. */
static int run_kafka_mc(rd_kafka_mock_cluster_t *mc, const char *brokers, int start, int commit,
                        const wm_buf *restore, wm_buf *seen, wm_buf *take) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  ksink ks = {.e = NULL};
  wm_buf_init(&ks.seen);
  wm_buf_init(&ks.snap);
  const char *names[2] = {"t/0", "t/1"}, *topics[2] = {"t", "t"};
  const int parts[2] = {0, 1};
  wm_kafka_source_config kc = {.brokers = brokers, .group = "test", .topics = topics, .partitions = parts,
                               .p = {.nparts = 2, .names = names, .bounded = 1, .start = start}};
  wm_op *src = wm_kafka_source_new(wm_exec_host(e), "read_kafka", &kc);
  wm_op *sink = wm_op_new(&ctx, &k_vt, &ks, "sink");
  if (take) {
    ks.e = e;
    ks.src = src;
  }
  if (commit) {
    ks.commit = commit;
    ks.mc = mc;
    ks.ex = e;
    ks.src = src;
  }
  int rc = WM_ERR;
  if (src && sink && wm_op_connect(src, 0, sink) >= 0 && wm_ctx_prepare(&ctx) == WM_OK &&
      (!restore || wm_exec_restore_source(e, src, restore->data, restore->len) == WM_OK))
    rc = wm_exec_run(e);
  if (rc != WM_OK) fprintf(stderr, "run_kafka: %s\n", wm_ctx_errtext(&ctx));
  CHECK_I64(wm_partsrc_count(src), 2);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  wm_buf_add(seen, ks.seen.data ? ks.seen.data : "", ks.seen.len);
  if (take) wm_buf_add(take, ks.snap.data ? ks.snap.data : "", ks.snap.len);
  wm_buf_free(&ks.seen);
  wm_buf_free(&ks.snap);
  return rc;
}

static int run_kafka_as(const char *brokers, int start, int commit, const wm_buf *restore, wm_buf *seen,
                        wm_buf *take) {
  return run_kafka_mc(NULL, brokers, start, commit, restore, seen, take);
}

static int run_kafka(const char *brokers, const wm_buf *restore, wm_buf *seen, wm_buf *take) {
  return run_kafka_as(brokers, WM_START_EARLIEST, 0, restore, seen, take);
}

static int64_t vclock(void *ud) { return *(const int64_t *)ud; }

/* What a partitioned source does to its partitions' assigners while it pauses them
 * (backpressure, alignment): their idleness does not advance (a virtual clock). */
static void test_hold_idleness(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  int64_t now = 0;
  ctx.now = vclock;
  ctx.now_ud = &now;
  wm_tsop_config tc;
  memset(&tc, 0, sizeof tc);
  tc.builtin = WM_GEN_BOUNDED;
  tc.idle_timeout = 100;
  wm_op *held = wm_tsop_new(&ctx, "held", &tc);
  memset(&tc, 0, sizeof tc);
  tc.builtin = WM_GEN_BOUNDED;
  tc.idle_timeout = 100;
  wm_op *free_running = wm_tsop_new(&ctx, "not held", &tc);
  CHECK(held && free_running && wm_ctx_prepare(&ctx) == WM_OK);
  if (!held || !free_running) return;
  now = 50;
  wm_tsop_hold_idleness(held, true);
  wm_tsop_hold_idleness(held, true); /* alignment and backpressure at once */
  now = 1000;
  CHECK(wm_tsop_check_idle(held, now) == WM_OK && wm_tsop_check_idle(free_running, now) == WM_OK);
  CHECK(!wm_tsop_is_idle(held));
  CHECK(wm_tsop_is_idle(free_running)); /* the control: silent for 1000 ms, idle */
  wm_tsop_hold_idleness(held, false);
  now = 1500;
  CHECK(wm_tsop_check_idle(held, now) == WM_OK);
  CHECK(!wm_tsop_is_idle(held)); /* still held once */
  wm_tsop_hold_idleness(held, false); /* the timeout starts again at 1500 */
  now = 1599;
  CHECK(wm_tsop_check_idle(held, now) == WM_OK);
  CHECK(!wm_tsop_is_idle(held));
  now = 1600;
  CHECK(wm_tsop_check_idle(held, now) == WM_OK);
  CHECK(wm_tsop_is_idle(held));
  wm_ctx_free(&ctx);
}

void test_conn(void) {
  test_hold_idleness();
  char err[512];
  rd_kafka_t *p;
  rd_kafka_mock_cluster_t *mc = test_kafka_mock(&p);
  if (!mc) return;
  CHECK(rd_kafka_mock_topic_create(mc, "t", 2, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  const char *brokers = rd_kafka_mock_cluster_bootstraps(mc);
  /* the producer writes to the mock through its bootstrap address, as a client would */
  rd_kafka_conf_t *pc = rd_kafka_conf_new();
  rd_kafka_conf_set(pc, "bootstrap.servers", brokers, err, sizeof err);
  rd_kafka_conf_set(pc, "log_level", "2", err, sizeof err);
  rd_kafka_t *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
  CHECK(prod != NULL);
  if (prod) {
    produce(prod, "t", 0, "a");
    produce(prod, "t", 0, "b");
    produce(prod, "t", 0, "c");
    produce(prod, "t", 1, "x");
    CHECK(rd_kafka_flush(prod, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(prod);

    wm_buf seen, snap;
    wm_buf_init(&seen);
    wm_buf_init(&snap);
    CHECK(run_kafka(brokers, NULL, &seen, &snap) == WM_OK);
    /* no assigner: every partition's watermark is MIN, so partition 0 goes first, whole */
    CHECK_STR(seen.data, "t/0@0:a;t/0@1:b;t/0@2:c;t/1@0:x;");
    CHECK(snap.len > 0);
    wm_buf_clear(&seen);
    CHECK(run_kafka(brokers, &snap, &seen, NULL) == WM_OK);
    /* the snapshot taken while "b" goes down the chain counts b as read: the restored run
     * reads on at c (and from the start of partition 1, which had not begun) */
    CHECK_STR(seen.data, "t/0@2:c;t/1@0:x;");
    /* committed at "b" (b counted as read), a job starting from the group's offsets reads on
     * at c; before any commit it starts at the earliest offsets */
    wm_buf_clear(&seen);
    CHECK(run_kafka_as(brokers, WM_START_COMMITTED, 0, NULL, &seen, NULL) == WM_OK);
    CHECK_STR(seen.data, "t/0@0:a;t/0@1:b;t/0@2:c;t/1@0:x;");
    /* a commit before any snapshot commits nothing (no checkpoint covers a record yet) */
    wm_buf_clear(&seen);
    CHECK(run_kafka_as(brokers, WM_START_EARLIEST, 2, NULL, &seen, NULL) == WM_OK);
    wm_buf_clear(&seen);
    CHECK(run_kafka_as(brokers, WM_START_COMMITTED, 0, NULL, &seen, NULL) == WM_OK);
    CHECK_STR(seen.data, "t/0@0:a;t/0@1:b;t/0@2:c;t/1@0:x;");
    wm_buf_clear(&seen);
    CHECK(run_kafka_as(brokers, WM_START_EARLIEST, 1, NULL, &seen, NULL) == WM_OK);
    wm_buf_clear(&seen);
    CHECK(run_kafka_as(brokers, WM_START_COMMITTED, 0, NULL, &seen, NULL) == WM_OK);
    CHECK_STR(seen.data, "t/0@2:c;t/1@0:x;");
    wm_buf_clear(&seen);
    CHECK(run_kafka_mc(mc, brokers, WM_START_EARLIEST, 3, NULL, &seen, NULL) == WM_OK);
    wm_buf bad;
    wm_buf_init(&bad);
    wm_buf_addc(&bad, 9); /* not a version this source wrote */
    wm_buf_clear(&seen);
    CHECK(run_kafka(brokers, &bad, &seen, NULL) == WM_ERR);
    wm_buf_free(&bad);
    wm_buf_free(&seen);
    wm_buf_free(&snap);
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(p);
}
