/* The size-class pool allocator (core/base/wm_pool.c) under lua_Alloc's contract. */
#include <stdint.h>
#include <stdlib.h>

#include "base/wm_pool.h"
#include "test.h"

static void fill(unsigned char *p, size_t n, unsigned char seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i);
}
static int holds(const unsigned char *p, size_t n, unsigned char seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i)) return 0;
  return 1;
}

static void test_pool_classes(void) {
  wm_pool *p = wm_pool_new();
  CHECK(p != NULL);
  wm_pool_stats st;
  /* blocks are 16-byte aligned; a block freed is the next one of its class handed out */
  void *a = wm_pool_alloc(p, NULL, 5 /* a Lua type tag, ignored */, 40);
  void *b = wm_pool_alloc(p, NULL, 0, 40);
  CHECK(a && b && a != b);
  CHECK(((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0);
  fill(a, 40, 1);
  fill(b, 40, 2);
  CHECK(holds(a, 40, 1) && holds(b, 40, 2));
  CHECK(wm_pool_alloc(p, a, 40, 0) == NULL);
  void *c = wm_pool_alloc(p, NULL, 0, 33); /* 33..48: the same class as 40 */
  CHECK(c == a);
  CHECK(holds(b, 40, 2));
  /* a resize inside the class keeps the block */
  fill(c, 33, 3);
  CHECK(wm_pool_alloc(p, c, 33, 48) == c);
  CHECK(holds(c, 33, 3));
  /* to another class: moved, the common prefix copied, the old block back on its list */
  unsigned char *d = wm_pool_alloc(p, c, 48, 200);
  CHECK(d && (void *)d != c && holds(d, 33, 3));
  CHECK(wm_pool_alloc(p, NULL, 0, 48) == c);
  /* a shrink copies the prefix that fits */
  fill(d, 200, 4);
  unsigned char *e = wm_pool_alloc(p, d, 200, 20);
  CHECK(e && holds(e, 20, 4));
  /* larger than WM_POOL_MAX: malloc, and across the limit both ways */
  unsigned char *big = wm_pool_alloc(p, NULL, 0, WM_POOL_MAX + 1);
  CHECK(big != NULL);
  fill(big, WM_POOL_MAX + 1, 5);
  wm_pool_stats_get(p, &st);
  CHECK_I64(st.large_out, 1);
  CHECK_I64(st.pooled_out, 3); /* b, e and the 48-byte block c handed out again */
  big = wm_pool_alloc(p, big, WM_POOL_MAX + 1, 100000);
  CHECK(big && holds(big, WM_POOL_MAX + 1, 5));
  big = wm_pool_alloc(p, big, 100000, WM_POOL_MAX);
  CHECK(big && holds(big, WM_POOL_MAX, 5));
  wm_pool_stats_get(p, &st);
  CHECK_I64(st.large_out, 0);
  CHECK_I64(st.pooled_out, 4);
  /* freeing NULL (Lua frees a table's empty array part so) is nothing, of any size */
  CHECK(wm_pool_alloc(p, NULL, 0, 0) == NULL);
  CHECK(wm_pool_alloc(p, NULL, 48, 0) == NULL);
  CHECK(wm_pool_alloc(p, NULL, 4096, 0) == NULL);
  wm_pool_stats_get(p, &st);
  CHECK_I64(st.large_out, 0);
  CHECK_I64(st.pooled_out, 4);
  void *f = wm_pool_alloc(p, NULL, 0, 48); /* c is still out, not on its class's list */
  CHECK(f && f != c);
  wm_pool_alloc(p, f, 48, 0);
  big = wm_pool_alloc(p, big, WM_POOL_MAX, 4096);
  CHECK(big && holds(big, WM_POOL_MAX, 5));
  wm_pool_alloc(p, big, 4096, 0);
  wm_pool_alloc(p, b, 40, 0);
  wm_pool_alloc(p, e, 20, 0);
  wm_pool_alloc(p, c, 48, 0);
  wm_pool_stats_get(p, &st);
  CHECK_I64(st.large_out, 0);
  CHECK_I64(st.pooled_out, 0);
  wm_pool_free(p);
}

/* Many live blocks across many chunks: none overlaps another, each keeps its bytes, and
 * freed blocks are reused before new chunks are taken. */
static void test_pool_many(void) {
  enum { N = 20000 };
  wm_pool *p = wm_pool_new();
  CHECK(p != NULL);
  static unsigned char *blk[N];
  static size_t len[N];
  uint64_t x = 88172645463325252u;
  for (int i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    len[i] = 1 + (size_t)(x % WM_POOL_MAX);
    blk[i] = wm_pool_alloc(p, NULL, 0, len[i]);
    if (!blk[i]) break;
    fill(blk[i], len[i], (unsigned char)i);
  }
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= blk[i] && holds(blk[i], len[i], (unsigned char)i);
  CHECK(ok);
  wm_pool_stats st;
  wm_pool_stats_get(p, &st);
  size_t chunks = st.chunks;
  CHECK(chunks > 2);
  CHECK_I64(st.pooled_out, N);
  /* free every other block and take the same sizes again: no new chunk */
  for (int i = 0; i < N; i += 2) wm_pool_alloc(p, blk[i], len[i], 0);
  for (int i = 0; i < N; i += 2) {
    blk[i] = wm_pool_alloc(p, NULL, 0, len[i]);
    if (blk[i]) fill(blk[i], len[i], (unsigned char)(i + 7));
  }
  wm_pool_stats_get(p, &st);
  CHECK_I64(st.chunks, chunks);
  ok = 1;
  for (int i = 0; i < N; i++)
    ok &= blk[i] && holds(blk[i], len[i], (unsigned char)(i % 2 ? i : i + 7));
  CHECK(ok);
  /* wm_pool_free releases pooled blocks still out (ASan/valgrind see no leak) */
  wm_pool_free(p);
}

void test_pool(void) {
  T.current = "pool classes";
  test_pool_classes();
  T.current = "pool many";
  test_pool_many();
}
