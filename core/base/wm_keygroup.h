/* Key groups (Flink's KeyGroupRangeAssignment): the unit in which keyed state is assigned to
 * operator instances, so that a checkpoint taken at one parallelism restores at another.
 *
 * A job has a fixed maximum parallelism M (wm.env{max_parallelism = M}, --max-parallelism;
 * WM_KEYGROUPS_DEFAULT when not given): the number of key groups. A key belongs to key group
 *
 *     g = wm_key_hash(key) mod M                                  (wm_keygroup_of)
 *
 * (wm_key_hash: the engine's stable key hash, the same on every machine and run), and at
 * parallelism p (1 <= p <= M) key group g is owned by the instance (0-based)
 *
 *     i = g * p / M                                               (wm_keygroup_instance)
 *
 * so instance i owns the contiguous range of key groups
 *
 *     [ceil(i * M / p), floor(((i + 1) * M - 1) / p)]              (wm_keygroup_range)
 *
 * Every key_by exchange routes by this rule, and a keyed operator's checkpoint records M and
 * its range: the state of key group g is wherever the key's records went. Flink computes g
 * from murmur(key.hashCode()); wmrun's wm_key_hash is already mixed. */
#ifndef WM_KEYGROUP_H
#define WM_KEYGROUP_H

#include <stdint.h>

#include "base/wm_value.h"

#define WM_KEYGROUPS_DEFAULT 128
#define WM_KEYGROUPS_MAX 32768 /* Flink's upper bound of the maximum parallelism (2^15) */

/* The key group of a key hash among m (>= 1) groups. */
static inline uint32_t wm_keygroup_of_hash(uint64_t hash, uint32_t m) {
  return (uint32_t)(hash % (uint64_t)m);
}
/* The key group of key (a valid key: wm_key_valid) among m groups. */
static inline uint32_t wm_keygroup_of(const wm_value *key, uint32_t m) {
  return wm_keygroup_of_hash(wm_key_hash(key), m);
}
/* The instance (0-based) of p that owns key group g of m (g < m, 1 <= p <= m). */
static inline int wm_keygroup_instance(uint32_t g, int p, uint32_t m) {
  return (int)((uint64_t)g * (uint64_t)p / (uint64_t)m);
}
/* The key groups [*first, *last] (inclusive) instance i (0-based) of p owns among m
 * (1 <= p <= m: never empty). */
static inline void wm_keygroup_range(int i, int p, uint32_t m, uint32_t *first, uint32_t *last) {
  *first = (uint32_t)(((uint64_t)i * m + (uint64_t)p - 1) / (uint64_t)p);
  *last = (uint32_t)((((uint64_t)i + 1) * m - 1) / (uint64_t)p);
}

#endif
