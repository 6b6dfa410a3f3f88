/* The test-only switches (lwm_testenv.h, docs/testing.md): read here and nowhere else. */
#include "lwm_testenv.h"

#include <stdlib.h>
#include <string.h>

int lwm_test_gcstress(void) {
  const char *v = getenv("WM_GCSTRESS");
  return v && *v && strcmp(v, "0") != 0;
}

long long lwm_test_fail_alloc(const char **why) {
  const char *n = getenv("WM_FAIL_ALLOC");
  if (!n || !*n) return 0;
  char *end;
  unsigned long long at = strtoull(n, &end, 10);
  if (*end != '\0' || at == 0 || *n == '-' || at > (unsigned long long)0x7fffffffffffffffLL) {
    *why = "WM_FAIL_ALLOC must be a positive integer (the allocation that fails first)";
    return -1;
  }
  return (long long)at;
}

const char *lwm_test_ckpt_crash(void) {
  const char *v = getenv("WM_CKPT_CRASH");
  return v && *v ? v : NULL;
}
