/* wm_ckpt_util.h */
#include "state/wm_ckpt_util.h"

#include <stdarg.h>
#include <stdio.h>

void wm_ckpt_seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}
