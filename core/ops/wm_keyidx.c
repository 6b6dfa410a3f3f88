#include "ops/wm_keyidx.h"

#include <stdlib.h>

int wm_keyidx_init(wm_keyidx *x, wm_keyidx_key_fn key, void *ud) {
  x->cap = 16;
  x->n = 0;
  x->key = key;
  x->ud = ud;
  x->at = calloc(x->cap, sizeof *x->at);
  return x->at ? 0 : -1;
}

void wm_keyidx_free(wm_keyidx *x) {
  free(x->at);
  x->at = NULL;
  x->cap = x->n = 0;
}

void wm_keyidx_clear(wm_keyidx *x) {
  for (size_t i = 0; i < x->cap; i++) x->at[i] = 0;
  x->n = 0;
}

static int grow(wm_keyidx *x) {
  size_t cap = x->cap * 2, mask = cap - 1;
  uint32_t *n = calloc(cap, sizeof *n);
  if (!n) return -1;
  for (size_t i = 0; i < x->cap; i++) {
    uint32_t v = x->at[i];
    if (!v) continue;
    uint64_t h;
    x->key(x->ud, v - 1, &h);
    size_t p = h & mask;
    while (n[p]) p = (p + 1) & mask;
    n[p] = v;
  }
  free(x->at);
  x->at = n;
  x->cap = cap;
  return 0;
}

int wm_keyidx_add(wm_keyidx *x, uint32_t i) {
  if ((x->n + 1) * 4 >= x->cap * 3 && grow(x) != 0) return -1;
  uint64_t h;
  x->key(x->ud, i, &h);
  size_t mask = x->cap - 1, p = h & mask;
  while (x->at[p]) p = (p + 1) & mask;
  x->at[p] = i + 1;
  x->n++;
  return 0;
}

void wm_keyidx_remove(wm_keyidx *x, uint32_t i) {
  uint64_t h;
  const wm_value *key = x->key(x->ud, i, &h);
  int found;
  size_t p = wm_keyidx_place(x, key, h, &found), mask = x->cap - 1, q = p;
  if (!found) return;
  for (;;) { /* move back every entry after p that may stand at p */
    q = (q + 1) & mask;
    if (x->at[q] == 0) break;
    uint64_t qh;
    x->key(x->ud, x->at[q] - 1, &qh);
    size_t home = qh & mask;
    int between = p <= q ? (home > p && home <= q) : (home > p || home <= q);
    if (!between) {
      x->at[p] = x->at[q];
      p = q;
    }
  }
  x->at[p] = 0;
  x->n--;
}
