/* CRC-32 (IEEE 802.3, as zlib's crc32): what checks checkpoint parts, MANIFESTs and the
 * objects of a checkpoint store. */
#ifndef WM_CRC_H
#define WM_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 of data, continued from crc (start with 0). */
uint32_t wm_crc32(uint32_t crc, const void *data, size_t len);

#endif
