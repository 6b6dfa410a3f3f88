/* Key partitioning shared with NATS (wm_partition.h). */
#include "base/wm_partition.h"

uint32_t wm_fnv1a32(const void *p, size_t n) {
  const unsigned char *b = p;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 16777619u;
  }
  return h;
}

uint32_t wm_partition(const void *key, size_t n, uint32_t count) {
  return count ? wm_fnv1a32(key, n) % count : 0;
}
