#include <stdlib.h>

#include "time/wm_timer.h"
#include "test.h"

static int keep_odd_times_big_payloads(void *ud, int64_t t, uint64_t payload) {
  (void)ud;
  return t % 2 == 1 && payload >= 100;
}

void test_timer(void) {
  wm_timers *q = wm_timers_new();
  CHECK(q != NULL);
  /* many entries at few timestamps: one group per timestamp */
  int pushed = 1;
  for (uint64_t k = 0; k < 10000; k++) pushed &= wm_timers_push(q, 4999, k, k) == 0;
  CHECK(pushed);
  CHECK_I64(wm_timers_push(q, 9999, 1, 1), 0);
  CHECK_I64(wm_timers_push(q, 2, 7, 3), 0);
  CHECK_I64(wm_timers_push(q, 2, 8, 1), 0); /* same time, earlier order: fires first */
  CHECK_I64(wm_timers_groups(q), 3);
  CHECK_I64(wm_timers_size(q), 10003);
  int64_t t;
  const wm_timer_entry *e;
  size_t n;
  CHECK(!wm_timers_pop(q, 1, &t, &e, &n)); /* nothing due at 1 */
  CHECK(wm_timers_due(q, 2, &t) && t == 2);
  CHECK(wm_timers_pop(q, 5000, &t, &e, &n));
  CHECK_I64(t, 2);
  CHECK_I64(n, 2);
  CHECK_I64(e[0].payload, 8);
  CHECK_I64(e[1].payload, 7);
  CHECK(wm_timers_pop(q, 5000, &t, &e, &n));
  CHECK_I64(t, 4999);
  CHECK_I64(n, 10000);
  int inorder = 1;
  for (size_t i = 0; i < n; i++) inorder &= e[i].payload == i;
  CHECK(inorder);
  /* a push during processing of a popped group goes to a new group */
  CHECK_I64(wm_timers_push(q, 4999, 42, 0), 0);
  CHECK(wm_timers_pop(q, 5000, &t, &e, &n));
  CHECK_I64(t, 4999);
  CHECK_I64(n, 1);
  CHECK(!wm_timers_pop(q, 5000, &t, &e, &n));
  CHECK(wm_timers_pop(q, INT64_MAX, &t, &e, &n));
  CHECK_I64(t, 9999);
  CHECK_I64(wm_timers_size(q), 0);
  /* heap order over many random timestamps, including MIN/MAX-adjacent ones */
  uint64_t x = 12345;
  for (int i = 0; i < 5000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    wm_timers_push(q, (int64_t)(x % 100000) - 50000, (uint64_t)i, (uint64_t)i);
  }
  wm_timers_push(q, INT64_MAX, 1, 1);
  wm_timers_push(q, INT64_MIN, 1, 1);
  int64_t last = INT64_MIN;
  int sorted = 1;
  size_t total = 0;
  while (wm_timers_pop(q, INT64_MAX, &t, &e, &n)) {
    sorted &= t >= last;
    last = t;
    total += n;
  }
  CHECK(sorted);
  CHECK_I64(total, 5002);
  CHECK_I64(last, INT64_MAX);

  /* retain: drops the entries the owner no longer wants, and the groups left empty; what
   * stays pops in time order, and a time whose group went away can be pushed again */
  for (int i = 0; i < 300; i++) wm_timers_push(q, 1000 + i % 100, (uint64_t)i, (uint64_t)i);
  CHECK_I64(wm_timers_size(q), 300);
  CHECK_I64(wm_timers_groups(q), 100);
  CHECK_I64(wm_timers_retain(q, keep_odd_times_big_payloads, NULL), 300 - 50 - 50);
  CHECK_I64(wm_timers_size(q), 100);   /* payloads 100..299 at the 50 odd times */
  CHECK_I64(wm_timers_groups(q), 50);
  CHECK_I64(wm_timers_push(q, 1000, 7, 7), 0);
  CHECK_I64(wm_timers_groups(q), 51);
  last = INT64_MIN;
  sorted = 1;
  total = 0;
  int kept = 1;
  while (wm_timers_pop(q, INT64_MAX, &t, &e, &n)) {
    sorted &= t > last;
    last = t;
    for (size_t k = 0; k < n; k++) {
      kept &= t == 1000 ? e[k].payload == 7 : (t % 2 == 1 && e[k].payload >= 100);
      if (k) sorted &= e[k].order >= e[k - 1].order;
    }
    total += n;
  }
  CHECK(sorted);
  CHECK(kept);
  CHECK_I64(total, 101);
  wm_timers_free(q);
}
