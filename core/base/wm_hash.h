/* The core's hashes, defined once: a 64-bit mixer for tables and FNV-1a (32 and 64 bits)
 * for bytes. Header only (static inline): every caller is a hot loop or a table probe.
 *
 * What stays apart, on purpose:
 * - wm_key_hash (base/wm_value.c) keeps its own finalizers: it is the partition function
 *   of key_by's exchanges (which instance owns a key), so changing it moves keys between
 *   instances; it is a contract, not a table's private choice.
 * - wm_partition (base/wm_partition.h) is FNV-1a 32 as nats-server's partition() computes
 *   it: it uses wm_fnv1a32 below and must keep its exact value. */
#ifndef WM_HASH_H
#define WM_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit mixer (the xmxmx form of murmur3's finalizer with better constants): every
 * input bit reaches every output bit. For open-addressing tables of the core (the window
 * operator's index, timers, the timeline's bands, the lab's latency table). */
static inline uint64_t wm_mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

/* The golden-ratio multiplier and a second odd constant, to spread a field before
 * combining it with others into one wm_mix64. */
#define WM_HASH_GOLDEN 0x9e3779b97f4a7c15ULL
#define WM_HASH_ODD2 0xc2b2ae3d27d4eb4fULL

#define WM_FNV32_BASIS 2166136261u
#define WM_FNV32_PRIME 16777619u
#define WM_FNV64_BASIS 14695981039346656037ULL
#define WM_FNV64_PRIME 1099511628211ULL

/* FNV-1a, 32 bits, of n bytes continuing from h (WM_FNV32_BASIS to start). */
static inline uint32_t wm_fnv1a32_from(uint32_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * WM_FNV32_PRIME;
  return h;
}

/* FNV-1a, 32 bits (offset basis 2166136261, prime 16777619) of n bytes. */
static inline uint32_t wm_fnv1a32(const void *p, size_t n) {
  return wm_fnv1a32_from(WM_FNV32_BASIS, p, n);
}

/* FNV-1a, 64 bits, of n bytes continuing from h (WM_FNV64_BASIS to start). */
static inline uint64_t wm_fnv1a64_from(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * WM_FNV64_PRIME;
  return h;
}

/* FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211) of n bytes. */
static inline uint64_t wm_fnv1a64(const void *p, size_t n) {
  return wm_fnv1a64_from(WM_FNV64_BASIS, p, n);
}

#endif
