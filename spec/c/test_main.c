#include <stdio.h>

#include "test.h"

test_stats T;

int main(void) {
  struct {
    const char *name;
    void (*fn)(void);
  } suites[] = {
      {"time", test_time},     {"window", test_window}, {"watermark", test_watermark},
      {"timer", test_timer},   {"winop", test_winop},   {"value", test_value},
      {"keyedop", test_keyedop}, {"winmerge", test_winmerge},
      {"sessions", test_sessions}, {"mt", test_mt},
      {"ckpt", test_ckpt},       {"graph", test_graph},   {"io", test_io},
      {"snapshot", test_snapshot}, {"pool", test_pool},
      {"panes", test_panes},
      {"conn", test_conn},
      {"member", test_member},
      {"jsonw", test_jsonw},
      {"through", test_through},
      {"exec", test_exec},
      {"metrics", test_metrics},
  };
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    T.current = suites[i].name;
    int before = T.failed;
    suites[i].fn();
    printf("%-10s %s\n", suites[i].name, T.failed == before ? "ok" : "FAILED");
  }
  printf("C core: %d passed, %d failed\n", T.passed, T.failed);
  return T.failed ? 1 : 0;
}
