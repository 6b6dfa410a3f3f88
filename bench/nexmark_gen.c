/*
 * nexmark_gen.c - the Nexmark generator alone (core/io/wm_nexmark.c): makes N events as
 * rows and releases them, on one core, and prints the events per second over the wall time
 * and over the process's CPU time (steadier on a shared machine), and the kinds made. Built and
 * run by bench/nexmark.sh.
 *
 *   nexmark_gen [N]      (default 10000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "io/wm_nexmark.h"

int main(int argc, char **argv) {
  long long n = argc > 1 ? atoll(argv[1]) : 10000000;
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  c.seed = 42;
  struct timespec t0, t1, c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  wm_nexmark *g = wm_nexmark_new(&c);
  if (!g) return 1;
  long long kinds[3] = {0, 0, 0};
  for (long long k = 0; k < n; k++) {
    wm_value v;
    if (wm_nexmark_event(g, k, &v, NULL, NULL) != 0) return 1;
    kinds[v.u.row->fields[0].u.i]++;
    wm_value_release(NULL, &v);
  }
  wm_nexmark_free(g);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
  printf("%-30s %10.0f events/s wall (%6.2f s) %10.0f events/s CPU (%6.2f s)\n", "generator alone (1 core)",
         (double)n / s, s, (double)n / cpu, cpu);
  printf("  (%lld persons, %lld auctions, %lld bids)\n", kinds[0], kinds[1], kinds[2]);
  return 0;
}
