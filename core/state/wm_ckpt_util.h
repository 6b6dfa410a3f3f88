/* What the checkpoint modules share (wm_ckpt.c and its stores): a clause of a message into a
 * scratch buffer (the stores' APIs fill a wm_error), and the little-endian fields of their
 * formats. */
#ifndef WM_CKPT_UTIL_H
#define WM_CKPT_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Formats into err (errlen bytes; nothing when err is NULL or errlen 0). */
void wm_ckpt_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void wm_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void wm_put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t wm_get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static inline uint64_t wm_get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

#endif
