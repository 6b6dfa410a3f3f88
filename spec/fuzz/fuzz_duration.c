/* libFuzzer target: durations ("250ms", "2 s", "1min", ...; core/time/wm_time.c).
 * Invariants: a parsed duration is >= 0 and the same as its value written back in ms;
 * a rejected one has a message that quotes the text ("bad duration '...': why"). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "time/wm_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256) return 0;
  char text[257], back[64];
  wm_error err;
  memcpy(text, data, size);
  text[size] = '\0';
  int64_t ms = -1;
  wm_error_clear(&err);
  if (wm_duration_parse(text, &ms, &err) == 0) {
    ASSERT(ms >= 0);
    int64_t again = -1;
    snprintf(back, sizeof back, "%" PRId64 "ms", ms);
    ASSERT(wm_duration_parse(back, &again, NULL) == 0 && again == ms);
  } else {
    ASSERT(strncmp(err.msg, "bad duration '", 14) == 0 && strstr(err.msg, "': ") != NULL);
  }
  return 0;
}
