/* Does a Kafka broker honour transactions for a read_committed consumer? (docs/connectors.md,
 * "Exactly-once to Kafka: not with the mock"). Not built by make: the evidence behind
 * write_kafka being at-least-once, kept so that it can be checked again on another librdkafka:
 *
 *   cc -o build/kafka_txn_probe tools/kafka_txn_probe.c -lrdkafka
 *   build/kafka_mock -d -t 60 -a addr t:1 &  (wait for addr)  build/kafka_txn_probe $(cat addr) t
 *
 * It produces two messages in an aborted transaction, two in a committed one and one in a
 * transaction left open, then reads the topic from the beginning with
 * isolation.level=read_committed and prints what it gets. A Kafka broker gives the two
 * committed messages (exit 0); librdkafka 2.0.2's mock cluster gives all five (exit 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

static void check(const char *what, rd_kafka_error_t *e) {
  if (!e) return;
  fprintf(stderr, "kafka_txn_probe: %s: %s\n", what, rd_kafka_error_string(e));
  exit(1);
}

static void produce(rd_kafka_t *p, const char *topic, const char *v) {
  rd_kafka_resp_err_t e = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                            RD_KAFKA_V_VALUE((void *)v, strlen(v)),
                                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  if (e) {
    fprintf(stderr, "kafka_txn_probe: produce: %s\n", rd_kafka_err2str(e));
    exit(1);
  }
}

static rd_kafka_conf_t *conf(const char *brokers, const char *k, const char *v) {
  char err[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  if (rd_kafka_conf_set(c, "bootstrap.servers", brokers, err, sizeof err) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "kafka_txn_probe: %s\n", err);
    exit(1);
  }
  return c;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: kafka_txn_probe BROKERS TOPIC (an empty topic of one partition)\n");
    return 1;
  }
  const char *topic = argv[2];
  char err[512];
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf(argv[1], "transactional.id", "kafka-txn-probe"), err,
                               sizeof err);
  if (!p) {
    fprintf(stderr, "kafka_txn_probe: %s\n", err);
    return 1;
  }
  check("init_transactions", rd_kafka_init_transactions(p, 10000));
  check("begin_transaction", rd_kafka_begin_transaction(p));
  produce(p, topic, "aborted-1");
  produce(p, topic, "aborted-2");
  rd_kafka_flush(p, 10000);
  check("abort_transaction", rd_kafka_abort_transaction(p, 10000));
  printf("transaction 1 (aborted-1, aborted-2): aborted\n");
  check("begin_transaction", rd_kafka_begin_transaction(p));
  produce(p, topic, "committed-1");
  produce(p, topic, "committed-2");
  check("commit_transaction", rd_kafka_commit_transaction(p, 10000));
  printf("transaction 2 (committed-1, committed-2): committed\n");
  check("begin_transaction", rd_kafka_begin_transaction(p));
  produce(p, topic, "open-1");
  rd_kafka_flush(p, 10000);
  printf("transaction 3 (open-1): left open\n");

  rd_kafka_conf_t *cc = conf(argv[1], "isolation.level", "read_committed");
  if (rd_kafka_conf_set(cc, "group.id", "kafka-txn-probe", err, sizeof err) != RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(cc, "enable.partition.eof", "true", err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "kafka_txn_probe: %s\n", err);
    return 1;
  }
  rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
  if (!k) {
    fprintf(stderr, "kafka_txn_probe: %s\n", err);
    return 1;
  }
  rd_kafka_poll_set_consumer(k);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(k, l);
  rd_kafka_topic_partition_list_destroy(l);
  int n = 0, eof = 0;
  for (int i = 0; i < 300 && !eof; i++) { /* at most 30 s */
    rd_kafka_message_t *m = rd_kafka_consumer_poll(k, 100);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) eof = 1;
    else if (m->err) printf("consumer error: %s\n", rd_kafka_message_errstr(m));
    else {
      printf("read_committed read offset %lld: %.*s\n", (long long)m->offset, (int)m->len, (char *)m->payload);
      n++;
    }
    rd_kafka_message_destroy(m);
  }
  printf("a read_committed consumer read %d messages; a Kafka broker gives 2 (committed-1, committed-2)\n", n);
  rd_kafka_consumer_close(k);
  rd_kafka_destroy(k);
  rd_kafka_error_destroy(rd_kafka_abort_transaction(p, 5000));
  rd_kafka_destroy(p);
  return n == 2 ? 0 : 2;
}
