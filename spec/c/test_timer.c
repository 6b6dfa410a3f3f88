#include <stdlib.h>

#include "time/wm_timer.h"
#include "test.h"

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
  wm_timers_free(q);
}
