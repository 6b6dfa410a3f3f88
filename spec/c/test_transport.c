/* The transport interface (core/io/wm_transport.h) on librdkafka's mock cluster: making a
 * topic and refusing one of another partition count; a message's partition, key, timestamp
 * and headers as a consumer reads them back; a send the client refuses and a delivery the
 * broker refuses, each reported once as "<op>: cannot deliver to topic ... : <why>" with the
 * first failure kept; and NATS's connection error (no server: port 1). The expected values
 * are the inputs themselves (what was sent is what must be read) and librdkafka's own error
 * texts for the errors forced. (Making a missing topic needs the admin API's controller,
 * which librdkafka's mock cluster lacks: no test here or in the specs makes one.) */
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "io/wm_transport.h"
#include "time/wm_time.h"
#include "test.h"
#include "test_kafka.h"

static const wm_op_vt plain_vt = {.kind = "plain"};

/* The one message at the start of topic/partition: "value|key|ts|header wm-writer" into out
 * ("-" for a missing key or header). */
static void read_back(const char *brokers, const char *topic, int partition, wm_buf *out) {
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", "test_transport", err, sizeof err);
  rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
  rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  CHECK(c != NULL);
  if (!c) return;
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic, partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
  CHECK(rd_kafka_assign(c, l) == RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_message_t *m = NULL;
  for (int i = 0; i < 100 && !m; i++) { /* at most 10 s: the message is there already */
    m = rd_kafka_consumer_poll(c, 100);
    if (m && m->err) {
      rd_kafka_message_destroy(m);
      m = NULL;
    }
  }
  CHECK(m != NULL);
  if (m) {
    wm_buf_add(out, m->payload, m->len);
    wm_buf_addc(out, '|');
    if (m->key) wm_buf_add(out, m->key, m->key_len);
    else wm_buf_addc(out, '-');
    wm_buf_addc(out, '|');
    wm_buf_add_int(out, rd_kafka_message_timestamp(m, NULL));
    wm_buf_addc(out, '|');
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t vn;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, "wm-writer", &v, &vn) == RD_KAFKA_RESP_ERR_NO_ERROR)
      wm_buf_add(out, v, vn);
    else
      wm_buf_addc(out, '-');
    rd_kafka_message_destroy(m);
  }
  wm_buf_addc(out, '\0');
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
}

static void kafka_cases(rd_kafka_mock_cluster_t *mc, const char *brokers) {
  wm_error err;
  char want[1024];
  int64_t last = -1;
  /* making a topic that exists (the mock has no controller for the admin API): its count is
   * checked, and another count is refused */
  CHECK(rd_kafka_mock_topic_create(mc, "t", 3, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  wm_transport_target tg = {.kind = WM_TRANSPORT_KAFKA, .partitions = 3, .brokers = brokers, .topic = "t",
                            .replication = -1};
  CHECK(wm_transport_make(&tg, 10000, &last, &err) == 0);
  CHECK_I64(last, 0);
  tg.partitions = 2;
  CHECK(wm_transport_make(&tg, 10000, &last, &err) == -1);
  snprintf(want, sizeof want, "topic 't' on %s has 3 partitions, not 2", brokers);
  CHECK_STR(err.msg, want);
  tg.partitions = 3;

  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &plain_vt, NULL, "w");
  CHECK(op != NULL);
  if (!op) return;

  /* messages: what was sent is what a consumer reads */
  wm_transport_config cfg = {.target = tg, .name = "w", .label = "key_by through", .ordered = 1};
  wm_transport *t = wm_transport_open(&cfg, &err);
  CHECK(t != NULL);
  if (!t) return;
  CHECK(wm_transport_complete(t, WM_TRANSPORT_END) == WM_OK); /* nothing sent: nothing to wait for */
  const char *hdr[4] = {"wm-writer", "0/1", "wm-seq", "1"};
  wm_transport_msg a = {.data = "A", .len = 1, .key = "k1", .keylen = 2, .partition = 2, .ts = 1000,
                        .headers = hdr, .nheaders = 4};
  wm_transport_msg b = {.data = "B", .len = 1, .partition = 0, .ts = WM_TIME_MIN};
  CHECK(wm_transport_send(t, &a) == WM_OK);
  CHECK(wm_transport_send(t, &b) == WM_OK);
  CHECK(wm_transport_complete(t, WM_TRANSPORT_CHECKPOINT) == WM_OK);
  CHECK(!wm_transport_failed(t));
  wm_buf got;
  wm_buf_init(&got);
  read_back(brokers, "t", 2, &got);
  CHECK_STR(got.data, "A|k1|1000|0/1");
  wm_buf_clear(&got);
  read_back(brokers, "t", 0, &got);
  CHECK(got.data && strncmp(got.data, "B|-|", 4) == 0); /* no key; the producer's own time */
  CHECK(got.data && strcmp(got.data + strlen(got.data) - 2, "|-") == 0);
  wm_buf_free(&got);

  /* a send the client refuses: reported once, and the first failure is kept */
  wm_transport_msg bad = {.data = "C", .len = 1, .partition = 7, .ts = 1};
  CHECK(wm_transport_send(t, &bad) == WM_ERR);
  CHECK(wm_transport_failed(t));
  CHECK(wm_transport_error(op, t) == WM_ERR);
  snprintf(want, sizeof want, "w: cannot deliver to topic 't' at %s: Local: Unknown partition", brokers);
  CHECK_STR(wm_ctx_errtext(&ctx), want);
  wm_transport_fail(t, "a later failure");
  CHECK(wm_transport_send(t, &a) == WM_ERR);
  CHECK_STR(t->why, "Local: Unknown partition");
  wm_transport_free(t);

  /* a delivery the broker refuses: the send is taken, complete reports the delivery report */
  cfg.ordered = 0;
  cfg.label = "write_kafka";
  t = wm_transport_open(&cfg, &err);
  CHECK(t != NULL);
  if (!t) return;
  rd_kafka_mock_push_request_errors(mc, 0 /* Produce */, 1, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  CHECK(wm_transport_send(t, &a) == WM_OK);
  CHECK(wm_transport_complete(t, WM_TRANSPORT_END) == WM_ERR);
  CHECK(wm_transport_error(op, t) == WM_ERR);
  snprintf(want, sizeof want, "w: cannot deliver to topic 't' at %s: Broker: Topic authorization failed",
           brokers);
  CHECK_STR(wm_ctx_errtext(&ctx), want);
  CHECK(wm_transport_send(t, &b) == WM_ERR); /* failed for good */
  wm_transport_free(t);

  /* a producer that cannot start: a bad property, said by librdkafka */
  const char *props[2] = {"no.such.property", "1"};
  cfg.target.props = props;
  cfg.target.nprops = 2;
  CHECK(wm_transport_open(&cfg, &err) == NULL);
  CHECK(strstr(err.msg, "no.such.property") != NULL);
  wm_ctx_free(&ctx);
}

void test_transport(void) {
  rd_kafka_t *p;
  rd_kafka_mock_cluster_t *mc = test_kafka_mock(&p);
  if (mc) {
    kafka_cases(mc, rd_kafka_mock_cluster_bootstraps(mc));
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(p);
  }
  /* NATS: nothing listens on port 1 */
  wm_error err;
  wm_transport_config cfg = {.target = {.kind = WM_TRANSPORT_NATS, .partitions = 2, .url = "nats://127.0.0.1:1",
                                        .stream = "S", .subject = "s"},
                             .name = "w", .label = "key_by through", .ordered = 1};
  CHECK(wm_transport_open(&cfg, &err) == NULL);
  CHECK(strncmp(err.msg, "cannot connect to nats://127.0.0.1:1: ", 38) == 0);
  int64_t last = -1;
  CHECK(wm_transport_make(&cfg.target, 1000, &last, &err) == -1);
  CHECK(strncmp(err.msg, "cannot connect to nats://127.0.0.1:1: ", 38) == 0);
}
