/* The C tests' driver: runs every suite, or the suites named on the command line (so that
 * spec/run_all.sh can run them in lanes beside each other). `-l` lists the suites.
 *   build/test_core                 every suite
 *   build/test_core member conn     these two
 *   build/test_core -x member       every suite but member
 * Each suite prints one line, "name ok N" or "name FAILED N" (N: its passed checks); the
 * last line is "C core: N passed, M failed". */
#include <stdio.h>
#include <string.h>

#include "test.h"

test_stats T;

static const struct {
  const char *name;
  void (*fn)(void);
} suites[] = {
    {"time", test_time},     {"window", test_window}, {"watermark", test_watermark},
    {"timer", test_timer},   {"winop", test_winop},   {"value", test_value},
    {"keyedop", test_keyedop}, {"winmerge", test_winmerge},
    {"ijoin", test_ijoin},
    {"sqljoin", test_sqljoin},
    {"sqllookup", test_sqllookup},
    {"sqlrank", test_sqlrank},
    {"sqlfspart", test_sqlfspart},
    {"sessions", test_sessions}, {"mt", test_mt},
    {"ckpt", test_ckpt},       {"ckstore", test_ckpt_store},       {"graph", test_graph},   {"io", test_io},
    {"snapshot", test_snapshot}, {"pool", test_pool},
    {"panes", test_panes},
    {"winop_diff", test_winop_diff},
    {"sqlagg", test_sqlagg},
    {"conn", test_conn},
    {"member", test_member},
    {"jsonw", test_jsonw},
    {"through", test_through},
    {"transport", test_transport},
    {"exec", test_exec},
    {"metrics", test_metrics},
    {"mboard", test_mboard},
    {"twoin", test_twoin},
    {"nexmark", test_nexmark},
    {"ui", test_ui},
    {"error", test_error},
    {"savepoint", test_savepoint},
    {"keygroup", test_keygroup},
    {"rexpr", test_rexpr},
};
#define NSUITES (sizeof suites / sizeof suites[0])

static int named(const char *name, int argc, char **argv, int from) {
  for (int i = from; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  int exclude = argc > 1 && strcmp(argv[1], "-x") == 0;
  int from = exclude ? 2 : 1;
  if (argc == 2 && strcmp(argv[1], "-l") == 0) {
    for (size_t i = 0; i < NSUITES; i++) printf("%s\n", suites[i].name);
    return 0;
  }
  /* a name that is no suite is an error, not a lane that silently runs nothing */
  for (int i = from; i < argc; i++) {
    size_t j = 0;
    while (j < NSUITES && strcmp(suites[j].name, argv[i]) != 0) j++;
    if (j == NSUITES) {
      fprintf(stderr, "test_core: no suite '%s' (test_core -l lists them)\n", argv[i]);
      return 2;
    }
  }
  for (size_t i = 0; i < NSUITES; i++) {
    if (argc > from && named(suites[i].name, argc, argv, from) == exclude) continue;
    T.current = suites[i].name;
    int failed = T.failed, passed = T.passed;
    suites[i].fn();
    printf("%-10s %s %d\n", suites[i].name, T.failed == failed ? "ok" : "FAILED", T.passed - passed);
    fflush(stdout);
  }
  printf("C core: %d passed, %d failed\n", T.passed, T.failed);
  return T.failed ? 1 : 0;
}
