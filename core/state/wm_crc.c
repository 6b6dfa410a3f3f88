/* CRC-32 (wm_crc.h). */
#include "state/wm_crc.h"
#include "state/wm_crc_table.h"

/* Slicing by 8 (eight bytes per step through the tables of wm_crc_table.h): about 10x the
 * bit-by-bit loop, which made a 50 MB checkpoint's CRCs take most of its restore. */
uint32_t wm_crc32(uint32_t crc, const void *data, size_t len) {
  const uint8_t *p = data;
  const uint32_t(*t)[256] = wm_crc_table;
  crc = ~crc;
  while (len >= 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}
