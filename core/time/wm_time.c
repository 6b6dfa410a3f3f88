
#include "time/wm_time.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t wm_time_add_sat(int64_t a, int64_t b) {
  if (b > 0 && a > WM_TIME_MAX - b) return WM_TIME_MAX;
  if (b < 0 && a < WM_TIME_MIN - b) return WM_TIME_MIN;
  return a + b;
}

int64_t wm_time_sub_sat(int64_t a, int64_t b) {
  if (b == WM_TIME_MIN) return a >= 0 ? WM_TIME_MAX : a - b;
  return wm_time_add_sat(a, -b);
}

int64_t wm_time_floor_mod(int64_t a, int64_t m) {
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

static const struct {
  const char *unit;
  int64_t ms;
} units[] = {
    {"ms", 1}, {"milli", 1}, {"millis", 1}, {"millisecond", 1}, {"milliseconds", 1},
    {"s", 1000}, {"sec", 1000}, {"secs", 1000}, {"second", 1000}, {"seconds", 1000},
    {"min", 60000}, {"mins", 60000}, {"minute", 60000}, {"minutes", 60000}, {"m", 60000},
    {"h", 3600000}, {"hour", 3600000}, {"hours", 3600000},
    {"d", 86400000}, {"day", 86400000}, {"days", 86400000},
};

static int bad(const char *text, const char *why, wm_error *err) {
  wm_error_set(err, "bad duration '%s': %s", text, why);
  return -1;
}

int wm_duration_parse(const char *text, int64_t *out, wm_error *err) {
  const char *p = text;
  while (isspace((unsigned char)*p)) p++;
  if (!isdigit((unsigned char)*p))
    return bad(text, "expected a number followed by a unit (ms, s, min, h, d)", err);
  errno = 0;
  char *end;
  long long n = strtoll(p, &end, 10);
  if (errno == ERANGE) return bad(text, "number out of range", err);
  p = end;
  while (isspace((unsigned char)*p)) p++;
  const char *u = p;
  while (isalpha((unsigned char)*p)) p++;
  size_t ulen = (size_t)(p - u);
  while (isspace((unsigned char)*p)) p++;
  if (*p) return bad(text, "unexpected text after the unit", err);
  int64_t mult = 1;
  if (ulen) {
    size_t i, nunits = sizeof units / sizeof units[0];
    for (i = 0; i < nunits; i++)
      if (strlen(units[i].unit) == ulen && strncmp(units[i].unit, u, ulen) == 0) break;
    if (i == nunits) return bad(text, "unknown unit (use ms, s, min, h or d)", err);
    mult = units[i].ms;
  }
  if (n > INT64_MAX / mult) return bad(text, "duration out of range", err);
  *out = (int64_t)n * mult;
  return 0;
}

int64_t wm_time_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
