/* The C tests' Kafka mock cluster (librdkafka's rdkafka_mock.h): one broker in a producer
 * handle of its own. The test creates its topics and, at its end, destroys the cluster
 * before the handle. */
#ifndef TEST_KAFKA_H
#define TEST_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "test.h"

/* A mock cluster, its handle in *handle; NULL (a failed CHECK) when it cannot be made. */
static inline rd_kafka_mock_cluster_t *test_kafka_mock(rd_kafka_t **handle) {
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
  rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  CHECK(p != NULL);
  *handle = p;
  if (!p) return NULL;
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(p, 1);
  CHECK(mc != NULL);
  if (!mc) {
    rd_kafka_destroy(p);
    *handle = NULL;
  }
  return mc;
}

#endif
