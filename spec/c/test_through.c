/* The reading side of a repartitioning (io/wm_through.h): read_kafka with the through's
 * tap on librdkafka's mock cluster (in this process), fed messages written here byte by
 * byte in the format the header documents, so that what the tap makes of the writers'
 * records and markers is checked step by step: no watermark before every writer has been
 * heard of, the minimum over the writers that are neither idle nor ended, a writer back
 * from idle does not set the watermark back, records already seen (or after their
 * writer's end) are dropped, the partition ends once every writer has ended; its state
 * in a snapshot, and what it refuses. */
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "base/wm_codec.h"
#include "exec/wm_exec.h"
#include "io/wm_through.h"
#include "time/wm_time.h"
#include "test.h"
#include "test_kafka.h"

typedef struct noter {
  wm_buf seen;
  wm_exec *e;    /* snapshot the source at record "b" (when set) */
  wm_op *src;
  wm_buf snap;
} noter;

static int n_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  noter *n = op->impl;
  size_t len = 0;
  const char *s = rec->type == WM_ROW ? "" : wm_value_str(rec, &len);
  if (rec->type == WM_ROW) wm_format_value(&n->seen, rec, 1, NULL, NULL);
  else wm_buf_add(&n->seen, s, len);
  wm_buf_addc(&n->seen, '@');
  wm_buf_add_int(&n->seen, ts);
  wm_buf_addc(&n->seen, ';');
  if (n->e && len == 1 && s[0] == 'b') CHECK(wm_exec_snapshot_source(n->e, n->src, &n->snap) == WM_OK);
  return WM_OK;
}

static int n_watermark(wm_op *op, int64_t wm) {
  noter *n = op->impl;
  if (wm == WM_TIME_MAX) wm_buf_adds(&n->seen, "wm MAX;");
  else {
    wm_buf_adds(&n->seen, "wm ");
    wm_buf_add_int(&n->seen, wm);
    wm_buf_addc(&n->seen, ';');
  }
  return WM_OK;
}

static int n_status(wm_op *op, bool idle) {
  wm_buf_adds(&((noter *)op->impl)->seen, idle ? "idle;" : "active;");
  return WM_OK;
}

static const wm_op_vt noter_vt = {.kind = "noter", .record = n_record, .watermark = n_watermark,
                                  .status = n_status};

/* A message as a writer sends it: 'w', version 1, kind, writer, W, sequence, time, and a
 * record's value (a string through the record codec). */
static void produce_value(rd_kafka_t *p, const char *topic, char kind, int writer, int writers, uint64_t seq,
                          int64_t time, const wm_value *value, uint64_t mark) {
  wm_buf b;
  wm_buf_init(&b);
  wm_buf_addc(&b, 'w');
  wm_buf_addc(&b, 1);
  wm_buf_addc(&b, kind);
  wm_codec_put_uvar(&b, (uint64_t)writer);
  wm_codec_put_uvar(&b, (uint64_t)writers);
  wm_codec_put_uvar(&b, seq);
  wm_codec_put_ivar(&b, time);
  if (value) {
    wm_encoder enc; /* a fresh one: every message defines its row's schema */
    wm_encoder_init(&enc);
    wm_error err;
    CHECK(wm_encode_value(&enc, NULL, &b, value, &err) == 0);
    wm_encoder_free(&enc);
  } else {
    wm_codec_put_uvar(&b, mark); /* a marker's number since the writer's last record */
  }
  CHECK(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                          RD_KAFKA_V_VALUE(b.data, b.len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
  wm_buf_free(&b);
}

static void produce(rd_kafka_t *p, const char *topic, char kind, int writer, int writers, uint64_t seq,
                    int64_t time, const char *value) {
  wm_value v = value ? wm_cstr(value, strlen(value)) : wm_nil();
  produce_value(p, topic, kind, writer, writers, seq, time, value ? &v : NULL, 0);
}

/* A marker: its position is (seq, mark). */
static void marker(rd_kafka_t *p, const char *topic, char kind, int writer, int writers, uint64_t seq,
                   uint64_t mark, int64_t time) {
  produce_value(p, topic, kind, writer, writers, seq, time, NULL, mark);
}

/* A row {name = v} of a schema of its own. */
static void produce_row(rd_kafka_t *p, uint64_t seq, const char *name, wm_value v) {
  const char *names[1] = {name};
  const uint8_t types[1] = {v.type == WM_INT ? WM_FT_INTEGER : WM_FT_STRING};
  wm_schema *sc = wm_schema_new(1, names, types);
  wm_row *r = sc ? wm_row_new(sc) : NULL;
  CHECK(r != NULL);
  if (!r) return;
  wm_host h = {0};
  CHECK(wm_value_copy(&h, &r->fields[0], &v) == 0);
  wm_value rv = wm_row_value(r);
  produce_value(p, "rows", 'R', 0, 1, seq, (int64_t)seq, &rv, 0);
  wm_value_release(&h, &rv);
  wm_schema_release(sc);
}

/* Reads partition 0 of `topic` from the start with a tap of `writers` writers, restored
 * from `restore` when given; notes what reaches the operator after it, and a snapshot at
 * "b" when take is set. The run's result; the message of a failure in err. */
static int run(const char *brokers, const char *topic, int writers, const wm_buf *restore, wm_buf *seen,
               wm_buf *take, uint64_t *dups, char *err, size_t errlen) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  noter n = {.e = NULL};
  wm_buf_init(&n.seen);
  wm_buf_init(&n.snap);
  char name[64];
  snprintf(name, sizeof name, "%s/0", topic);
  const char *names[1] = {name}, *topics[1] = {topic};
  const int parts[1] = {0};
  wm_kafka_source_config kc = {.brokers = brokers, .group = "test", .topics = topics, .partitions = parts,
                               .p = {.nparts = 1, .names = names, .start = WM_START_EARLIEST,
                                     .tap = wm_through_tap_new(1, writers, NULL)}};
  CHECK(kc.p.tap != NULL);
  wm_op *src = wm_kafka_source_new(wm_exec_host(e), "reader", &kc);
  wm_op *sink = wm_op_new(&ctx, &noter_vt, &n, "noter");
  if (take) {
    n.e = e;
    n.src = src;
  }
  int rc = WM_ERR;
  if (src && sink && wm_op_connect(src, 0, sink) >= 0 && wm_ctx_prepare(&ctx) == WM_OK &&
      (!restore || wm_exec_restore_source(e, src, restore->data, restore->len) == WM_OK))
    rc = wm_exec_run(e);
  snprintf(err, errlen, "%.1000s", rc == WM_OK ? "" : wm_ctx_errtext(&ctx));
  if (dups) *dups = src ? wm_through_duplicates(src) : 0;
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  wm_buf_add(seen, n.seen.data ? n.seen.data : "", n.seen.len);
  if (take) wm_buf_add(take, n.snap.data ? n.snap.data : "", n.snap.len);
  wm_buf_free(&n.seen);
  wm_buf_free(&n.snap);
  return rc;
}

void test_through(void) {
  char err[1024];
  rd_kafka_t *p;
  rd_kafka_mock_cluster_t *mc = test_kafka_mock(&p);
  if (!mc) return;
  const char *topics[] = {"r", "fewer", "other", "short", "rows"};
  for (int i = 0; i < 5; i++) CHECK(rd_kafka_mock_topic_create(mc, topics[i], 1, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  const char *brokers = rd_kafka_mock_cluster_bootstraps(mc);
  rd_kafka_conf_t *pc = rd_kafka_conf_new();
  rd_kafka_conf_set(pc, "bootstrap.servers", brokers, err, sizeof err);
  rd_kafka_conf_set(pc, "log_level", "2", err, sizeof err);
  rd_kafka_t *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
  CHECK(prod != NULL);
  if (!prod) {
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(p);
    return;
  }
  /* two writers of one partition */
  produce(prod, "r", 'R', 0, 2, 1, 5, "a");
  marker(prod, "r", 'W', 0, 2, 1, 1, 10);      /* writer 1 not heard of yet: no watermark */
  produce(prod, "r", 'R', 1, 2, 1, 3, "b");    /* not late, though writer 0 is at 10 */
  marker(prod, "r", 'W', 1, 2, 1, 1, 4);       /* min(10, 4) */
  produce(prod, "r", 'R', 0, 2, 1, 5, "a");    /* writer 0's first record again: dropped */
  marker(prod, "r", 'I', 1, 2, 1, 2, 0);       /* writer 1 idle: writer 0's 10 */
  marker(prod, "r", 'I', 0, 2, 1, 2, 0);       /* both idle: the partition is */
  marker(prod, "r", 'A', 1, 2, 1, 3, 0);       /* active again, its 4 does not set 10 back */
  marker(prod, "r", 'I', 1, 2, 1, 2, 0);       /* writer 1's idle again (a restored writer): dropped */
  marker(prod, "r", 'W', 1, 2, 1, 4, 12);      /* writer 0 still idle: writer 1's 12 */
  marker(prod, "r", 'E', 0, 2, 1, 3, 0);
  produce(prod, "r", 'R', 1, 2, 2, 13, "c");
  marker(prod, "r", 'W', 1, 2, 1, 5, 14);      /* from before writer 1's record "c": dropped */
  produce(prod, "r", 'R', 0, 2, 2, 20, "d");   /* after writer 0's end: dropped */
  marker(prod, "r", 'E', 1, 2, 2, 1, 0);       /* every writer has ended: the partition ends */
  produce(prod, "fewer", 'R', 0, 1, 1, 1, NULL);
  marker(prod, "other", 'W', 3, 4, 0, 1, 1);
  CHECK(rd_kafka_producev(prod, RD_KAFKA_V_TOPIC("short"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_VALUE((void *)"w\001R", 3),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
  /* rows: the schema of the row before is used again only when the definition is the same */
  produce_row(prod, 1, "a", wm_int(1));
  produce_row(prod, 2, "a", wm_int(2));
  produce_row(prod, 3, "b", wm_cstr("x", 1));
  produce_row(prod, 4, "a", wm_int(3));
  produce_row(prod, 5, "a", wm_int(4));
  marker(prod, "rows", 'E', 0, 1, 5, 1, 0);
  CHECK(rd_kafka_flush(prod, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(prod);

  wm_buf seen, snap;
  wm_buf_init(&seen);
  wm_buf_init(&snap);
  uint64_t dups = 0;
  CHECK(run(brokers, "r", 2, NULL, &seen, &snap, &dups, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "a@5;b@3;wm 4;wm 10;idle;active;wm 12;c@13;wm MAX;");
  CHECK_I64(dups, 2);
  CHECK(snap.len > 0);
  /* restored from the snapshot taken at "b": reads on after it, knowing both writers */
  wm_buf_clear(&seen);
  CHECK(run(brokers, "r", 2, &snap, &seen, NULL, &dups, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "wm 4;wm 10;idle;active;wm 12;c@13;wm MAX;");
  CHECK_I64(dups, 2);
  wm_buf_clear(&seen);
  CHECK(run(brokers, "rows", 1, NULL, &seen, NULL, NULL, err, sizeof err) == WM_OK);
  CHECK_STR(seen.data, "{\"a\":1}@1;{\"a\":2}@2;{\"b\":\"x\"}@3;{\"a\":3}@4;{\"a\":4}@5;wm MAX;");
  /* a snapshot of another number of writers, and damaged bytes, are refused */
  wm_buf_clear(&seen);
  CHECK(run(brokers, "r", 3, &snap, &seen, NULL, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "cannot restore 'reader': the checkpoint was taken with 2 writers upstream of the "
                    "repartitioning, this run has 3") != NULL);
  wm_buf cut;
  wm_buf_init(&cut);
  wm_buf_add(&cut, snap.data, snap.len - 1);
  CHECK(run(brokers, "r", 2, &cut, &seen, NULL, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "cannot restore 'reader': the checkpoint's writer state is damaged") != NULL);
  wm_buf_free(&cut);
  /* messages that are not a writer's, or of another job's writers, or cut short */
  CHECK(run(brokers, "fewer", 2, NULL, &seen, NULL, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "reader: offset 0 of fewer/0: a message of writer 0 of 1, but 2 write to it here") != NULL);
  CHECK(run(brokers, "other", 2, NULL, &seen, NULL, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "reader: offset 0 of other/0: a message of writer 3 of 4, but 2 write to it here") != NULL);
  CHECK(run(brokers, "short", 2, NULL, &seen, NULL, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "reader: offset 0 of short/0: a damaged message (truncated)") != NULL);
  wm_buf_free(&seen);
  wm_buf_free(&snap);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(p);
}
