/* A Kafka cluster for the specs: librdkafka's mock cluster (rdkafka_mock.h) on 127.0.0.1.
 *
 *   build/kafka_mock [-b BROKERS] [-d] [-t SECONDS] TOPIC:PARTITIONS ...
 *
 * Creates each topic with its partition count, prints the bootstrap address
 * ("127.0.0.1:PORT,...") on one line of standard output, and stays until standard input
 * closes or SIGTERM/SIGINT arrives. -d: ignore standard input (wait for a signal only);
 * -t: end by itself after that many seconds at the latest (so a spec that dies cannot
 * leave it running for long). spec/services.lua starts and stops it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1; /* and interrupts read() / pause() */
}

int main(int argc, char **argv) {
  int brokers = 1, first = 1, no_stdin = 0, lifetime = 0;
  while (first < argc && argv[first][0] == '-') {
    if (strcmp(argv[first], "-d") == 0) {
      no_stdin = 1;
      first++;
    } else if (first + 1 < argc && strcmp(argv[first], "-b") == 0) {
      brokers = atoi(argv[first + 1]);
      first += 2;
    } else if (first + 1 < argc && strcmp(argv[first], "-t") == 0) {
      lifetime = atoi(argv[first + 1]);
      first += 2;
    } else {
      brokers = 0;
      break;
    }
  }
  if (brokers < 1 || first >= argc) {
    fprintf(stderr, "usage: kafka_mock [-b BROKERS] [-d] [-t SECONDS] TOPIC:PARTITIONS ...\n");
    return 2;
  }
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "kafka_mock: %s\n", err);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "kafka_mock: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) {
    fprintf(stderr, "kafka_mock: cannot start the mock cluster\n");
    rd_kafka_destroy(rk);
    return 1;
  }
  for (int i = first; i < argc; i++) {
    char name[256];
    const char *colon = strrchr(argv[i], ':');
    int parts = colon ? atoi(colon + 1) : 1;
    size_t n = colon ? (size_t)(colon - argv[i]) : strlen(argv[i]);
    if (n == 0 || n >= sizeof name || parts < 1) {
      fprintf(stderr, "kafka_mock: bad topic '%s' (TOPIC:PARTITIONS)\n", argv[i]);
      rd_kafka_mock_cluster_destroy(mc);
      rd_kafka_destroy(rk);
      return 2;
    }
    memcpy(name, argv[i], n);
    name[n] = 0;
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, parts, 1);
    if (e) {
      fprintf(stderr, "kafka_mock: cannot create topic '%s': %s\n", name, rd_kafka_err2str(e));
      rd_kafka_mock_cluster_destroy(mc);
      rd_kafka_destroy(rk);
      return 1;
    }
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: read() returns EINTR */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGALRM, &sa, NULL);
  if (lifetime > 0) alarm((unsigned)lifetime);
  printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  char buf[256];
  while (!stop_requested) {
    if (no_stdin) {
      pause();
      continue;
    }
    ssize_t r = read(0, buf, sizeof buf);
    if (r == 0 || (r < 0 && errno != EINTR)) break; /* end of input, or an error */
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
