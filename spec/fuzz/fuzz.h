/* What every libFuzzer target of spec/fuzz shares. */
#ifndef WM_FUZZ_H
#define WM_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A broken invariant: print it and abort, so that libFuzzer keeps the input as a crash. */
#define ASSERT(c)                                                                        \
  do {                                                                                   \
    if (!(c)) {                                                                          \
      fprintf(stderr, "%s: invariant failed: %s (line %d)\n", __FILE__, #c, __LINE__); \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
