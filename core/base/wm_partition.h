/* Key partitioning shared with NATS: wm_partition is the nats-server's own partition(n, ...)
 * subject-mapping function (FNV-1a 32 of the key's bytes, modulo n), so records that
 * wmrun puts into partition subjects and records that a server-side mapping
 * (`"in.*": "ev.{{partition(6,1)}}.{{wildcard(1)}}"`) puts there agree. */
#ifndef WM_PARTITION_H
#define WM_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_error.h"
#include "base/wm_hash.h" /* wm_fnv1a32 */

/* The partition of a key among count (>= 1) partitions: wm_fnv1a32(key) % count. */
uint32_t wm_partition(const void *key, size_t n, uint32_t count);

/* A list of partitions, "0-3", "0,2,5", "0-2, 7" (a static share of a partitioned
 * source), parsed into *list (sorted, each once, each in 0 .. count-1; malloc'd, the
 * caller frees) of *n. 0, or -1 with the failure in *err: `partitions: 6 is not a partition of 0 .. 5
 * (partition_count = 6)`, `partitions: bad range '3-1' in "3-1"`, `partitions must be like
 * "0-3" or "0,2,5", got "x"`, "out of memory". */
int wm_parse_partitions(const char *spec, int count, int **list, int *n, wm_error *err);

#endif
