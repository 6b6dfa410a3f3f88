/* Event time: milliseconds as int64_t, durations, saturating arithmetic. */
#ifndef WM_TIME_H
#define WM_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_error.h"

#define WM_TIME_MIN INT64_MIN /* no watermark yet */
#define WM_TIME_MAX INT64_MAX /* end of input */

/* a + b, clamped to [WM_TIME_MIN, WM_TIME_MAX]. */
int64_t wm_time_add_sat(int64_t a, int64_t b);

/* a - b, clamped to [WM_TIME_MIN, WM_TIME_MAX]. */
int64_t wm_time_sub_sat(int64_t a, int64_t b);

/* Mathematical modulo: the result is in [0, m) for m > 0, also for negative a. */
int64_t wm_time_floor_mod(int64_t a, int64_t m);

/* Parses a duration such as "250ms", "2s", "5 s", "1min", "1h", "1d" or "1500" (ms)
 * into milliseconds. Returns 0 on success; on failure returns -1 and writes a message
 * naming the bad text in *err (NULL: none wanted). */
int wm_duration_parse(const char *text, int64_t *out, wm_error *err);

/* Current wall-clock time in ms since the Unix epoch. */
int64_t wm_time_wall_ms(void);

#endif
