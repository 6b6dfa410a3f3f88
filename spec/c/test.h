/* A minimal table-driven test harness for the C core. */
#ifndef WM_TEST_H
#define WM_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_graph.h"

/* A sink operator that writes "[label ]ts value" lines into a buffer (impl: a capture). */
typedef struct capture {
  wm_buf out;
  const char *label;
} capture;
extern const wm_op_vt capture_vt;

typedef struct test_stats {
  int passed, failed;
  const char *current;
} test_stats;

extern test_stats T;

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (cond) T.passed++;                                                                \
    else {                                                                               \
      T.failed++;                                                                        \
      fprintf(stderr, "FAIL %s (%s:%d): %s\n", T.current, __FILE__, __LINE__, #cond);    \
    }                                                                                    \
  } while (0)

#define CHECK_I64(a, b)                                                                  \
  do {                                                                                   \
    int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                                        \
    if (a_ == b_) T.passed++;                                                            \
    else {                                                                               \
      T.failed++;                                                                        \
      fprintf(stderr, "FAIL %s (%s:%d): %s == %" PRId64 ", expected %s == %" PRId64 "\n", \
              T.current, __FILE__, __LINE__, #a, a_, #b, b_);                            \
    }                                                                                    \
  } while (0)

#define CHECK_STR(a, b)                                                                  \
  do {                                                                                   \
    const char *a_ = (a), *b_ = (b);                                                     \
    if (a_ && b_ && strcmp(a_, b_) == 0) T.passed++;                                     \
    else {                                                                               \
      T.failed++;                                                                        \
      fprintf(stderr, "FAIL %s (%s:%d): %s is\n  \"%s\"\nexpected\n  \"%s\"\n", T.current, \
              __FILE__, __LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");           \
    }                                                                                    \
  } while (0)

void test_time(void);
void test_sqlagg(void);
void test_sqlfspart(void);
void test_io(void);
void test_exec(void);
void test_conn(void);
void test_member(void);
void test_metrics(void);
void test_mboard(void);
void test_ui(void);
void test_through(void);
void test_transport(void);
void test_window(void);
void test_watermark(void);
void test_timer(void);
void test_winop(void);
void test_winop_diff(void);
void test_value(void);
void test_keyedop(void);
void test_ijoin(void);
void test_sqljoin(void);
void test_sqllookup(void);
void test_sqlrank(void);
void test_winmerge(void);
void test_sessions(void);
void test_mt(void);
void test_ckpt(void);
void test_ckpt_store(void);
void test_savepoint(void);
void test_graph(void);
void test_snapshot(void);
void test_pool(void);
void test_panes(void);
void test_jsonw(void);
void test_twoin(void);
void test_nexmark(void);
void test_error(void);
void test_rexpr(void);
void test_keygroup(void);

#endif
