/* Key partitioning shared with NATS (wm_partition.h). */
#include "base/wm_partition.h"

#include <stdio.h>
#include <stdlib.h>

uint32_t wm_partition(const void *key, size_t n, uint32_t count) {
  return count ? wm_fnv1a32(key, n) % count : 0;
}

/* A decimal number at *p (after blanks), moved past it and its blanks, its digits at
 * *digits (*ndigits of them); -1 when there is none. Values above INT32_MAX count as
 * INT32_MAX + 1 (out of range of any count). */
static long long number(const char **p, const char **digits, int *ndigits) {
  const char *s = *p;
  while (*s == ' ' || *s == '\t') s++;
  if (*s < '0' || *s > '9') return -1;
  *digits = s;
  long long v = 0;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + (*s++ - '0');
    if (v > INT32_MAX) v = INT32_MAX + 1LL;
  }
  *ndigits = (int)(s - *digits);
  while (*s == ' ' || *s == '\t') s++;
  *p = s;
  return v;
}

int wm_parse_partitions(const char *spec, int count, int **list, int *n, wm_error *err) {
  *list = NULL;
  *n = 0;
  unsigned char *set = calloc((size_t)(count > 0 ? count : 1), 1);
  if (!set) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  const char *p = spec;
  for (;;) {
    const char *item = p, *da = NULL, *db = NULL;
    int na = 0, nb = 0;
    long long a = number(&p, &da, &na), b = a;
    db = da;
    nb = na;
    if (a >= 0 && *p == '-') {
      p++;
      b = number(&p, &db, &nb);
    }
    if (a < 0 || b < 0 || (*p != ',' && *p != '\0')) {
      wm_error_set(err, "partitions must be like \"0-3\" or \"0,2,5\", got \"%s\"", spec);
      free(set);
      return -1;
    }
    if (b < a) {
      wm_error_set(err, "partitions: bad range '%.*s' in \"%s\"", (int)(p - item), item, spec);
      free(set);
      return -1;
    }
    if (b >= count) {
      wm_error_set(err, "partitions: %.*s is not a partition of 0 .. %d (partition_count = %d)",
               a >= count ? na : nb, a >= count ? da : db, count - 1, count);
      free(set);
      return -1;
    }
    for (long long k = a; k <= b; k++) set[k] = 1;
    if (*p == '\0') break;
    p++;
  }
  int m = 0;
  for (int k = 0; k < count; k++) m += set[k];
  int *l = malloc((size_t)(m > 0 ? m : 1) * sizeof *l);
  if (!l) {
    wm_error_set(err, "out of memory");
    free(set);
    return -1;
  }
  m = 0;
  for (int k = 0; k < count; k++)
    if (set[k]) l[m++] = k;
  free(set);
  *list = l;
  *n = m;
  return 0;
}
