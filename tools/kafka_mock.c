/* A Kafka cluster for the specs: librdkafka's mock cluster (rdkafka_mock.h) on 127.0.0.1.
 *
 *   build/kafka_mock [-b BROKERS] [-d] [-t SECONDS] TOPIC:PARTITIONS ...
 *
 * Creates each topic with its partition count, prints the bootstrap address
 * ("127.0.0.1:PORT,...") on one line of standard output, and stays until standard input
 * closes or SIGTERM/SIGINT arrives. -d: ignore standard input (wait for a signal only);
 * -t: end by itself after that many seconds at the latest (so a spec that dies cannot
 * leave it running for long). spec/services.lua starts and stops it.
 *
 * Without -d, every line of standard input is a command, answered by one line on standard
 * output once it is done ("ok N: <the command>" for the N-th command, or "error N: why"):
 *
 *   down BROKER | up BROKER        the broker (id from 1; -1: all) drops its connections
 *                                  and refuses new ones / accepts them again
 *   topic-error TOPIC ERR          metadata requests for TOPIC answer ERR (NO_ERROR: clear)
 *   request-error-clear API        the errors still queued for requests of API are dropped
 *   request-error API COUNT ERR    the next COUNT requests of API (a number, or Fetch,
 *                                  Metadata, OffsetCommit, OffsetFetch, FindCoordinator)
 *                                  fail with ERR
 *
 * ERR is a Kafka error name as rd_kafka_err2name gives it (UNKNOWN_TOPIC_OR_PART,
 * _TRANSPORT, ...) or its number. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t stop_requested;

/* The code of an error name (or number); 0 and *ok = 0 when unknown. */
static rd_kafka_resp_err_t err_code(const char *name, int *ok) {
  const struct rd_kafka_err_desc *d;
  size_t n;
  char *end;
  long v = strtol(name, &end, 10);
  *ok = 1;
  if (*name && !*end) return (rd_kafka_resp_err_t)v;
  rd_kafka_get_err_descs(&d, &n);
  for (size_t i = 0; i < n; i++)
    if (d[i].name && strcmp(d[i].name, name) == 0) return d[i].code;
  *ok = 0;
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* A protocol request type: a number or one of a few names; -1 when unknown. */
static int api_key(const char *name) {
  static const struct { const char *name; int key; } keys[] = {
      {"Produce", 0}, {"Fetch", 1}, {"ListOffsets", 2}, {"Metadata", 3}, {"OffsetCommit", 8},
      {"OffsetFetch", 9}, {"FindCoordinator", 10}};
  char *end;
  long v = strtol(name, &end, 10);
  if (*name && !*end) return v >= 0 && v < 100 ? (int)v : -1;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strcmp(keys[i].name, name) == 0) return keys[i].key;
  return -1;
}

/* Runs one command line (see the top); the answer goes to standard output. */
static void command(rd_kafka_mock_cluster_t *mc, char *line, unsigned long nth) {
  char *argv[5];
  int argc = 0;
  char copy[512];
  snprintf(copy, sizeof copy, "%s", line);
  for (char *t = strtok(line, " \t\r"); t && argc < 5; t = strtok(NULL, " \t\r")) argv[argc++] = t;
  if (argc == 0) return;
  const char *why = NULL;
  rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
  int ok = 1;
  if ((strcmp(argv[0], "down") == 0 || strcmp(argv[0], "up") == 0) && argc == 2) {
    int32_t id = (int32_t)atoi(argv[1]);
    e = argv[0][0] == 'd' ? rd_kafka_mock_broker_set_down(mc, id) : rd_kafka_mock_broker_set_up(mc, id);
  } else if (strcmp(argv[0], "topic-error") == 0 && argc == 3) {
    rd_kafka_resp_err_t te = err_code(argv[2], &ok);
    if (ok) rd_kafka_mock_topic_set_error(mc, argv[1], te);
    else why = "unknown error name";
  } else if (strcmp(argv[0], "request-error") == 0 && argc == 4) {
    int key = api_key(argv[1]);
    int cnt = atoi(argv[2]);
    rd_kafka_resp_err_t re = err_code(argv[3], &ok);
    if (key < 0) why = "unknown request type";
    else if (cnt < 1 || cnt > 1000) why = "bad count";
    else if (!ok) why = "unknown error name";
    else {
      rd_kafka_resp_err_t errs[1000];
      for (int i = 0; i < cnt; i++) errs[i] = re;
      rd_kafka_mock_push_request_errors_array(mc, (int16_t)key, (size_t)cnt, errs);
    }
  } else if (strcmp(argv[0], "request-error-clear") == 0 && argc == 2) {
    int key = api_key(argv[1]);
    if (key < 0) why = "unknown request type";
    else rd_kafka_mock_clear_request_errors(mc, (int16_t)key);
  } else {
    why = "unknown command (down N, up N, topic-error TOPIC ERR, request-error API COUNT ERR, "
          "request-error-clear API)";
  }
  if (!why && e) why = rd_kafka_err2str(e);
  if (why) printf("error %lu: %s: %s\n", nth, copy, why);
  else printf("ok %lu: %s\n", nth, copy);
  fflush(stdout);
}

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
  char buf[512];
  size_t have = 0;
  unsigned long nth = 0;
  while (!stop_requested) {
    if (no_stdin) {
      pause();
      continue;
    }
    ssize_t r = read(0, buf + have, sizeof buf - 1 - have);
    if (r == 0 || (r < 0 && errno != EINTR)) break; /* end of input, or an error */
    if (r < 0) continue;
    have += (size_t)r;
    char *nl;
    while ((nl = memchr(buf, '\n', have))) {
      *nl = 0;
      command(mc, buf, ++nth);
      have -= (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, have);
    }
    if (have == sizeof buf - 1) { /* a line too long: dropped */
      printf("error %lu: a command longer than %zu bytes\n", ++nth, sizeof buf - 2);
      fflush(stdout);
      have = 0;
    }
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
