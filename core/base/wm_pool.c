/* The size-class pool allocator (see wm_pool.h). Why: the Lua path allocates a string, two
 * tables and their parts per record; glibc's malloc/free were about 17% of its time. */
#include "base/wm_pool.h"

#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer, free pooled blocks and the unused rest of a chunk are poisoned,
 * so a use after free inside the pool is still reported. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define NCLASSES (WM_POOL_MAX / WM_POOL_GRAIN)

typedef struct chunk {
  struct chunk *next;
  /* blocks follow, 16-byte aligned */
} chunk;
#define CHUNK_HEAD ((sizeof(chunk) + WM_POOL_GRAIN - 1) / WM_POOL_GRAIN * WM_POOL_GRAIN)

struct wm_pool {
  void *free_list[NCLASSES]; /* per class: blocks linked through their first word */
  char *cur, *end;           /* the bump area of the newest chunk */
  chunk *chunks;             /* every chunk in use, newest first */
  chunk *spare;              /* taken when malloc fails, so that a shrink never fails */
  size_t nchunks, pooled_out, large_out;
};

static size_t class_of(size_t n) { return (n - 1) / WM_POOL_GRAIN; } /* n in 1..WM_POOL_MAX */
static size_t class_size(size_t c) { return (c + 1) * WM_POOL_GRAIN; }

wm_pool *wm_pool_new(void) {
  wm_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->spare = malloc(WM_POOL_CHUNK);
  if (!p->spare) {
    free(p);
    return NULL;
  }
  p->spare->next = NULL;
  p->nchunks = 1;
  return p;
}

void wm_pool_free(wm_pool *p) {
  if (!p) return;
  for (chunk *c = p->chunks; c;) {
    chunk *next = c->next;
    UNPOISON(c, WM_POOL_CHUNK);
    free(c);
    c = next;
  }
  free(p->spare);
  free(p);
}

/* Starts a new chunk (the old bump area's rest goes to the free lists); 0 or -1. */
static int new_chunk(wm_pool *p) {
  chunk *c = malloc(WM_POOL_CHUNK);
  if (c) {
    p->nchunks++;
  } else {
    if (!p->spare) return -1;
    c = p->spare;
    p->spare = NULL;
  }
  /* the old chunk's rest: one block of the largest class that fits, then smaller ones */
  while (p->end - p->cur >= WM_POOL_GRAIN) {
    size_t left = (size_t)(p->end - p->cur);
    size_t k = class_of(left < WM_POOL_MAX ? left : WM_POOL_MAX);
    if (class_size(k) > left) k--;
    void **b = (void **)(void *)p->cur; /* blocks are WM_POOL_GRAIN-aligned */
    UNPOISON(b, sizeof *b);
    *b = p->free_list[k];
    POISON(b, class_size(k));
    p->free_list[k] = b;
    p->cur += class_size(k);
  }
  c->next = p->chunks;
  p->chunks = c;
  p->cur = (char *)c + CHUNK_HEAD;
  p->end = (char *)c + WM_POOL_CHUNK;
  POISON(p->cur, (size_t)(p->end - p->cur));
  return 0;
}

static void *get(wm_pool *p, size_t n) {
  if (n > WM_POOL_MAX) {
    void *b = malloc(n);
    p->large_out += b != NULL;
    return b;
  }
  size_t k = class_of(n), sz = class_size(k);
  void **b = p->free_list[k];
  if (b) {
    UNPOISON(b, sz);
    p->free_list[k] = *b;
  } else {
    if ((size_t)(p->end - p->cur) < sz && new_chunk(p) != 0) return NULL;
    b = (void **)(void *)p->cur;
    p->cur += sz;
    UNPOISON(b, sz);
  }
  p->pooled_out++;
  return b;
}

static void put(wm_pool *p, void *ptr, size_t n) {
  if (n > WM_POOL_MAX) {
    free(ptr);
    p->large_out--;
    return;
  }
  size_t k = class_of(n);
  void **b = ptr;
  *b = p->free_list[k];
  POISON(b, class_size(k));
  p->free_list[k] = b;
  p->pooled_out--;
}

/* Everything but taking a block off a non-empty free list and putting one back: out of
 * line, so that those two fast paths below save and restore no registers. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void *alloc_slow(wm_pool *p, void *ptr, size_t osize, size_t nsize) {
  if (nsize == 0) {
    if (ptr) put(p, ptr, osize);
    return NULL;
  }
  if (!ptr) return get(p, nsize);
  if (osize > WM_POOL_MAX && nsize > WM_POOL_MAX) return realloc(ptr, nsize);
  if (osize <= WM_POOL_MAX && nsize <= WM_POOL_MAX && class_of(osize) == class_of(nsize))
    return ptr;
  void *b = get(p, nsize);
  if (!b) return NULL;
  memcpy(b, ptr, osize < nsize ? osize : nsize);
  put(p, ptr, osize);
  return b;
}

void *wm_pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  wm_pool *p = ud;
  if (nsize == 0) {
    if (!ptr) return NULL; /* Lua frees empty parts of tables this way */
    if (osize <= WM_POOL_MAX) { /* put(), inline */
      size_t k = class_of(osize);
      void **b = ptr;
      *b = p->free_list[k];
      POISON(b, class_size(k));
      p->free_list[k] = b;
      p->pooled_out--;
      return NULL;
    }
  } else if (!ptr && nsize <= WM_POOL_MAX) { /* get() from a free list, inline */
    size_t k = class_of(nsize);
    void **b = p->free_list[k];
    if (b) {
      UNPOISON(b, class_size(k));
      p->free_list[k] = *b;
      p->pooled_out++;
      return b;
    }
  }
  return alloc_slow(p, ptr, osize, nsize);
}

void wm_pool_stats_get(const wm_pool *p, wm_pool_stats *st) {
  st->chunks = p->nchunks;
  st->pooled_out = p->pooled_out;
  st->large_out = p->large_out;
}
