/* A size-class pool allocator for one thread's Lua state (lua_Alloc's contract, no Lua
 * header): blocks of up to WM_POOL_MAX bytes are carved from 64 KiB chunks into 16-byte
 * classes and kept on one free list per class; larger blocks go to malloc. Lua passes every
 * block's size back on realloc and free, so blocks carry no header. Not thread-safe: one
 * pool per Lua state, used by the thread that runs the state. */
#ifndef WM_POOL_H
#define WM_POOL_H

#include <stddef.h>

#define WM_POOL_GRAIN 16
#define WM_POOL_MAX 512
#define WM_POOL_CHUNK (64 * 1024)

typedef struct wm_pool wm_pool;

/* A new, empty pool (it allocates one spare chunk, see wm_pool_alloc); NULL when out of
 * memory. Caller frees with wm_pool_free after the last block is no longer used. */
wm_pool *wm_pool_new(void);
/* Frees every chunk (and so every pooled block still out) and the pool. Blocks larger than
 * WM_POOL_MAX that are still out are not freed: Lua's lua_close frees all of them first. */
void wm_pool_free(wm_pool *p);

/* lua_Alloc: ud is the wm_pool. ptr == NULL: a new block of nsize bytes (osize is then
 * Lua's object type and ignored); nsize == 0: frees ptr (of osize bytes), returns NULL;
 * otherwise resizes ptr from osize to nsize bytes, returning the block (moved or not) or
 * NULL with ptr untouched. A block that stays in its size class is returned as is. A shrink
 * never fails while the spare chunk is unused (Lua assumes shrinking cannot fail). */
void *wm_pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

typedef struct wm_pool_stats {
  size_t chunks;        /* chunks taken from malloc, the spare one included */
  size_t pooled_out;    /* pooled blocks currently allocated */
  size_t large_out;     /* blocks larger than WM_POOL_MAX currently allocated */
} wm_pool_stats;
void wm_pool_stats_get(const wm_pool *p, wm_pool_stats *st);

#endif
