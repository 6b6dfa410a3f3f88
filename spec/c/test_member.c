/* Scale-out's group membership on librdkafka's mock cluster in this process
 * (core/io/wm_member_kafka.c): a first member is assigned every partition; when a second
 * joins, the partitions that move are revoked from the first, and the second is assigned
 * them only after the first has released them, so that no partition has two owners; the
 * two own every partition once between them. And the task names of wm_super.h. */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "exec/wm_super.h"
#include "io/wm_member.h"
#include "test.h"
#include "test_kafka.h"

#define NPART 4

typedef struct member_state {
  wm_member *m;
  int owned[NPART];
  int revoked[NPART]; /* revoked, not released yet */
  int assigns, revokes;
  int bad; /* events naming no partition of the topic, and failed polls: checked once at the end */
} member_state;

/* Takes every event there is. It is called a number of times that depends on how fast the
 * mock rebalances, so it counts what is wrong in s->bad rather than CHECKing each time (a
 * CHECK here made the number of passed checks vary from run to run). */
static void drain(member_state *s) {
  wm_member_event ev;
  wm_error err;
  int r;
  while ((r = wm_member_poll(s->m, &ev, &err)) == 1) {
    if (ev.source != 0 || ev.partition < 0 || ev.partition >= NPART) {
      fprintf(stderr, "member: an event of source %d, partition %d\n", ev.source, ev.partition);
      s->bad++;
      continue;
    }
    if (ev.kind == WM_MEMBER_ASSIGN) {
      s->owned[ev.partition] = 1;
      s->assigns++;
    } else if (ev.kind == WM_MEMBER_REVOKE) {
      s->owned[ev.partition] = 0;
      s->revoked[ev.partition] = 1;
      s->revokes++;
    }
  }
  if (r != 0) {
    fprintf(stderr, "member: poll: %s\n", err.msg);
    s->bad++;
  }
}

static int count(const int *v) {
  int n = 0;
  for (int i = 0; i < NPART; i++) n += v[i] != 0;
  return n;
}

/* Polls a and b until done(a, b) holds, up to 60 s (the bound only matters when broken). */
static int wait_for(member_state *a, member_state *b, int (*done)(member_state *, member_state *)) {
  for (int i = 0; i < 3000; i++) {
    drain(a);
    if (b) drain(b);
    if (done(a, b)) return 1;
    uv_sleep(20);
  }
  return 0;
}

static int all_assigned(member_state *a, member_state *b) {
  (void)b;
  return count(a->owned) == NPART;
}

static int some_revoked(member_state *a, member_state *b) {
  (void)b;
  return a->revokes > 0;
}

static int b_took_them(member_state *a, member_state *b) {
  (void)a;
  return count(b->owned) > 0;
}

static wm_member *join(const char *brokers) {
  static const char *const sources[] = {"mt"};
  static const int counts[] = {NPART};
  static const char *const props[] = {"session.timeout.ms", "6000", "heartbeat.interval.ms", "100",
                                      "log_level", "2"};
  wm_member_kafka_config kc = {.c = {.group = "tg", .nsources = 1, .sources = sources, .counts = counts},
                               .brokers = brokers,
                               .props = props,
                               .nprops = 6};
  wm_error err;
  wm_member *m = wm_member_kafka_new(&kc, &err);
  if (!m) fprintf(stderr, "member: %s\n", err.msg);
  return m;
}

static void test_task_names(void) {
  char b[64];
  wm_super_task_name(1, "events/2", b, sizeof b);
  CHECK_STR(b, "events-2");
  wm_super_task_name(2, "events/2", b, sizeof b);
  CHECK_STR(b, "x2.events-2");
  wm_super_task_name(1, "a b:c/11", b, sizeof b);
  CHECK_STR(b, "a-b-c-11");
  wm_super_task_name(1, "long-name/3", b, 6);
  CHECK_STR(b, "long-");
}

void test_member(void) {
  test_task_names();
  wm_error err;
  rd_kafka_t *p;
  rd_kafka_mock_cluster_t *mc = test_kafka_mock(&p);
  if (!mc) return;
  CHECK(rd_kafka_mock_topic_create(mc, "mt", NPART, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
  const char *brokers = rd_kafka_mock_cluster_bootstraps(mc);
  member_state a = {0}, b = {0};
  a.m = join(brokers);
  CHECK(a.m != NULL);
  if (a.m) {
    CHECK(wait_for(&a, NULL, all_assigned));
    b.m = join(brokers);
    CHECK(b.m != NULL);
  }
  if (a.m && b.m) {
    CHECK(wait_for(&a, &b, some_revoked));
    /* the first has not released them: the second owns nothing yet */
    for (int i = 0; i < 25; i++) {
      drain(&a);
      drain(&b);
      uv_sleep(20);
    }
    CHECK_I64(count(b.owned), 0);
    int moving = count(a.revoked);
    CHECK(moving > 0 && moving < NPART);
    for (int i = 0; i < NPART; i++)
      if (a.revoked[i]) CHECK(wm_member_release(a.m, 0, i, &err) == 0);
    CHECK(wait_for(&a, &b, b_took_them));
    /* cooperative: the second gets what the first gave back, and only that */
    for (int i = 0; i < NPART; i++) {
      CHECK(a.owned[i] + b.owned[i] == 1);
      CHECK_I64(b.owned[i], a.revoked[i]);
    }
    CHECK(wm_member_release(a.m, 0, NPART, &err) == -1);
    CHECK(strstr(err.msg, "no partition 4") != NULL);
    CHECK(a.m->ops->end && a.m->ops->end(a.m, 0, 0) == 0); /* an empty partition ends at 0 */
  }
  /* every event named a partition of the topic, and no poll failed */
  CHECK_I64(a.bad, 0);
  CHECK_I64(b.bad, 0);
  wm_member_free(b.m);
  wm_member_free(a.m);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(p);
}
