/* A Kafka-compatible broker on 127.0.0.1: librdkafka's mock cluster (rdkafka_mock.h). One
 * source, two programs (the Makefile builds both):
 *
 *   build/wmrun-kafka-dev [-b BROKERS] [-m MB] [-a FILE] TOPIC:PARTITIONS ...
 *
 * For trying things out (docs/connectors.md, "Quick start (Kafka...)"; installed by make
 * install): creates the topics, prints the bootstrap address ("127.0.0.1:PORT,...") on one
 * line of standard output, or into FILE with -a (written whole once the broker serves),
 * says on standard error what it is, and serves until SIGINT or SIGTERM. Messages are kept
 * in memory only: past MB megabytes of memory (-m, default 512; 0: no limit) it stops with a
 * message rather than take the machine's memory.
 *
 *   build/kafka_mock [-b BROKERS] [-d] [-t SECONDS] [-m MB] [-a FILE] TOPIC:PARTITIONS ...
 *
 * For the specs (spec/services.lua starts and stops it): the same, silent, and it stays until
 * standard input closes or SIGTERM/SIGINT arrives. -d: ignore standard input (wait for a
 * signal only); -t: end by itself after that many seconds at the latest (so a spec that dies
 * cannot leave it running for long).
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
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#ifdef WM_KAFKA_DEV
#define PROG "wmrun-kafka-dev"
#else
#define PROG "kafka_mock"
#endif

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

/* The process's resident memory in MB (0 when /proc cannot tell). */
static long rss_mb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
  fclose(f);
  return rss * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

/* Writes the bootstrap address into path, whole (a temporary file renamed). */
static int write_addr(const char *path, const char *addr) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return -1;
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  int ok = fprintf(f, "%s\n", addr) > 0;
  ok = fclose(f) == 0 && ok;
  return ok && rename(tmp, path) == 0 ? 0 : -1;
}

static void usage(void) {
#ifdef WM_KAFKA_DEV
  fprintf(stderr, "usage: " PROG " [-b BROKERS] [-m MB] [-a FILE] TOPIC:PARTITIONS ...\n"
                  "  a Kafka-compatible broker on 127.0.0.1 for trying things out (messages in memory)\n");
#else
  fprintf(stderr, "usage: " PROG " [-b BROKERS] [-d] [-t SECONDS] [-m MB] [-a FILE] TOPIC:PARTITIONS ...\n");
#endif
}

int main(int argc, char **argv) {
#ifdef WM_KAFKA_DEV
  int no_stdin = 1, limit_mb = 512;
#else
  int no_stdin = 0, limit_mb = 0;
#endif
  int brokers = 1, first = 1, lifetime = 0;
  const char *addr_file = NULL;
  while (first < argc && argv[first][0] == '-') {
    const char *o = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
    if (strcmp(o, "-d") == 0) {
      no_stdin = 1;
      first++;
      continue;
    }
    if (!v) {
      brokers = 0;
      break;
    }
    if (strcmp(o, "-b") == 0) brokers = atoi(v);
    else if (strcmp(o, "-t") == 0) lifetime = atoi(v);
    else if (strcmp(o, "-m") == 0) limit_mb = atoi(v);
    else if (strcmp(o, "-a") == 0) addr_file = v;
    else {
      brokers = 0;
      break;
    }
    first += 2;
  }
  if (brokers < 1 || first >= argc || limit_mb < 0) {
    usage();
    return 2;
  }
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, PROG ": %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) {
    fprintf(stderr, PROG ": cannot start the mock cluster\n");
    rd_kafka_destroy(rk);
    return 1;
  }
  for (int i = first; i < argc; i++) {
    char name[256];
    const char *colon = strrchr(argv[i], ':');
    int parts = colon ? atoi(colon + 1) : 1;
    size_t n = colon ? (size_t)(colon - argv[i]) : strlen(argv[i]);
    if (n == 0 || n >= sizeof name || parts < 1) {
      fprintf(stderr, PROG ": bad topic '%s' (TOPIC:PARTITIONS)\n", argv[i]);
      rd_kafka_mock_cluster_destroy(mc);
      rd_kafka_destroy(rk);
      return 2;
    }
    memcpy(name, argv[i], n);
    name[n] = 0;
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, parts, 1);
    if (e) {
      fprintf(stderr, PROG ": cannot create topic '%s': %s\n", name, rd_kafka_err2str(e));
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
  const char *boot = rd_kafka_mock_cluster_bootstraps(mc);
#ifdef WM_KAFKA_DEV
  if (!addr_file) /* (with -a the address goes into the file only) */
#endif
  {
    printf("%s\n", boot);
    fflush(stdout);
  }
  if (addr_file && write_addr(addr_file, boot) != 0) {
    fprintf(stderr, PROG ": cannot write the address into '%s': %s\n", addr_file, strerror(errno));
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 1;
  }
#ifdef WM_KAFKA_DEV
  fprintf(stderr, PROG ": a Kafka-compatible broker at %s for trying things out (librdkafka's mock "
                  "cluster): messages are kept in memory only", boot);
  if (limit_mb > 0) fprintf(stderr, ", and it stops when it holds more than %d MB (-m)", limit_mb);
  fprintf(stderr, "; not for production. Topics:");
  for (int i = first; i < argc; i++) fprintf(stderr, " %s", argv[i]);
  fprintf(stderr, " (TOPIC:PARTITIONS). Stop it with Ctrl-C.\n");
#endif
  char buf[512];
  size_t have = 0;
  unsigned long nth = 0;
  int rc = 0;
  while (!stop_requested) {
    if (limit_mb > 0 && rss_mb() > limit_mb) {
      fprintf(stderr, PROG ": stopping: it holds more than %d MB of memory (-m %d); its messages are "
                      "kept in memory only (for more, use a real Kafka or a larger -m)\n", limit_mb, limit_mb);
      rc = 1;
      break;
    }
    if (no_stdin) {
      /* woken by a signal, or once a second to check the memory */
      struct timespec ts = {limit_mb > 0 ? 1 : 3600, 0};
      nanosleep(&ts, NULL);
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
  return rc;
}
