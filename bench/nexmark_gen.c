/*
 * nexmark_gen.c - the Nexmark floor: the generator alone (core/io/wm_nexmark.c), with no
 * engine, on one core. Makes N events as rows and
 *   gen   releases them (the generate-and-discard floor);
 *   q0    formats each bid as q0's output row (auction,bidder,price,dateTime,extra) to CSV text
 *         in a buffer, discarded (the floor of q0 with formatting);
 *   q1    the same with q1's price (0.908 * price, a DOUBLE);
 *   csv   writes every event to stdout as one flat CSV line (bench/nexmark.sh's file input):
 *         event_type, the person's 7 fields, the auction's 9, the bid's 6 (each without its
 *         dateTime; empty when the event is of another kind), the event's dateTime in ms.
 * and prints (to stderr for csv) the events per second over the wall time and over the
 * process's CPU time (steadier on a shared machine), and the kinds made. Built and run by
 * bench/nexmark.sh.
 *
 *   nexmark_gen [N [gen|q0|q1|csv [RATE]]]   (default 10000000 gen; RATE: first-event.rate)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/wm_buf.h"
#include "io/wm_nexmark.h"

/* Appends a value as CSV text: integers, doubles (%.17g), strings (quoted when needed). */
static void add_value(wm_buf *b, const wm_value *v) {
  char tmp[64];
  int n = 0;
  if (v->type == WM_INT) {
    n = snprintf(tmp, sizeof tmp, "%lld", (long long)v->u.i);
  } else if (v->type == WM_FLOAT) {
    n = snprintf(tmp, sizeof tmp, "%.17g", v->u.f);
  } else if (wm_value_is_string(v)) {
    size_t len;
    const char *s = wm_value_str(v, &len);
    if (memchr(s, ',', len) || memchr(s, '"', len) || memchr(s, '\n', len)) {
      wm_buf_add_grow(b, "\"", 1);
      for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') wm_buf_add_grow(b, "\"", 1);
        wm_buf_add_grow(b, s + i, 1);
      }
      wm_buf_add_grow(b, "\"", 1);
    } else {
      wm_buf_add_grow(b, s, len);
    }
    return;
  }
  if (n > 0) wm_buf_add_grow(b, tmp, (size_t)n);
}

/* Appends a timestamp (ms since the epoch, UTC) as 'YYYY-MM-DD HH:MM:SS.mmm'. */
static void add_ts(wm_buf *b, int64_t ms) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  char tmp[48];
  gmtime_r(&s, &tm);
  int n = snprintf(tmp, sizeof tmp, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
                   tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
  if (n > 0) wm_buf_add_grow(b, tmp, (size_t)n);
}

/* The flat CSV line of an event (mode csv). */
static void add_flat(wm_buf *b, const wm_row *top) {
  static const int nfields[3] = {8, 10, 7}, dt_field[3] = {6, 5, 5};
  add_value(b, &top->fields[0]);
  for (int k = 0; k < 3; k++) {
    const wm_value *sub = &top->fields[1 + k];
    for (int f = 0; f < nfields[k]; f++) {
      if (f == dt_field[k]) continue;
      wm_buf_add_grow(b, ",", 1);
      if (sub->type == WM_ROW) add_value(b, &sub->u.row->fields[f]);
    }
  }
  wm_buf_add_grow(b, ",", 1);
  add_value(b, &top->fields[4]);
  wm_buf_add_grow(b, "\n", 1);
}

int main(int argc, char **argv) {
  long long n = argc > 1 ? atoll(argv[1]) : 10000000;
  const char *mode = argc > 2 ? argv[2] : "gen";
  int m = !strcmp(mode, "gen") ? 0 : !strcmp(mode, "q0") ? 1 : !strcmp(mode, "q1") ? 2 : !strcmp(mode, "csv") ? 3 : -1;
  if (m < 0) {
    fprintf(stderr, "nexmark_gen: unknown mode '%s' (gen, q0, q1, csv)\n", mode);
    return 2;
  }
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  c.seed = 42;
  if (argc > 3) c.event_rate = atoll(argv[3]);
  const char *bad = wm_nexmark_config_check(&c);
  if (bad) {
    fprintf(stderr, "nexmark_gen: %s\n", bad);
    return 2;
  }
  struct timespec t0, t1, c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  wm_nexmark *g = wm_nexmark_new(&c);
  if (!g) return 1;
  wm_buf b;
  wm_buf_init(&b);
  long long kinds[3] = {0, 0, 0}, bytes = 0;
  for (long long k = 0; k < n; k++) {
    wm_value v;
    if (wm_nexmark_event(g, k, &v, NULL, NULL) != 0) return 1;
    const wm_row *top = v.u.row;
    int kind = (int)top->fields[0].u.i;
    kinds[kind]++;
    if (m == 3) {
      add_flat(&b, top);
      if (b.len > 60000) {
        if (fwrite(b.data, 1, b.len, stdout) != b.len) return 1;
        bytes += (long long)b.len;
        wm_buf_clear(&b);
      }
    } else if (m > 0 && kind == WM_NEXMARK_BID) {
      const wm_value *bid = top->fields[3].u.row->fields;
      add_value(&b, &bid[0]);
      wm_buf_add_grow(&b, ",", 1);
      add_value(&b, &bid[1]);
      wm_buf_add_grow(&b, ",", 1);
      if (m == 1) {
        add_value(&b, &bid[2]);
      } else {
        wm_value p = wm_float(0.908 * (double)bid[2].u.i);
        add_value(&b, &p);
      }
      wm_buf_add_grow(&b, ",", 1);
      add_ts(&b, bid[5].u.i);
      wm_buf_add_grow(&b, ",", 1);
      add_value(&b, &bid[6]);
      wm_buf_add_grow(&b, "\n", 1);
      bytes += (long long)b.len;
      wm_buf_clear(&b);
    }
    wm_value_release(NULL, &v);
  }
  if (m == 3 && b.len) {
    if (fwrite(b.data, 1, b.len, stdout) != b.len) return 1;
    bytes += (long long)b.len;
  }
  if (b.oom) return 1;
  wm_buf_free(&b);
  wm_nexmark_free(g);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
  FILE *out = m == 3 ? stderr : stdout;
  char label[64];
  snprintf(label, sizeof label, m == 0 ? "floor: generate" : "floor: generate + %s text", mode);
  fprintf(out, "%-34s %10.0f events/s wall (%6.2f s) %10.0f events/s CPU (%6.2f s)\n", label, (double)n / s, s,
          (double)n / cpu, cpu);
  fprintf(out, "  (%lld persons, %lld auctions, %lld bids; %lld bytes of text)\n", kinds[0], kinds[1], kinds[2],
          bytes);
  return 0;
}
