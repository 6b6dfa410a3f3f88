#include "base/wm_spsc.h"

#include <stdlib.h>

wm_spsc *wm_spsc_new(size_t cap) {
  size_t n = 2;
  while (n < cap) n <<= 1;
  wm_spsc *q = aligned_alloc(64, (sizeof *q + 63) / 64 * 64);
  if (!q) return NULL;
  q->slots = calloc(n, sizeof *q->slots);
  if (!q->slots) {
    free(q);
    return NULL;
  }
  q->mask = n - 1;
  atomic_init(&q->head, 0);
  atomic_init(&q->tail, 0);
  atomic_init(&q->popped_bytes, 0);
  atomic_init(&q->want_wake, 0);
  return q;
}

void wm_spsc_free(wm_spsc *q) {
  if (!q) return;
  free(q->slots);
  free(q);
}

bool wm_spsc_push(wm_spsc *q, void *p) {
  size_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
  size_t head = atomic_load_explicit(&q->head, memory_order_acquire);
  if (tail - head > q->mask) return false; /* full */
  q->slots[tail & q->mask] = p;
  /* release: the item (and what it points to) is visible before the new tail */
  atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
  return true;
}

void *wm_spsc_pop(wm_spsc *q) {
  size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  size_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
  if (head == tail) return NULL;
  void *p = q->slots[head & q->mask];
  /* release: the slot has been read before the producer may reuse it */
  atomic_store_explicit(&q->head, head + 1, memory_order_release);
  return p;
}

size_t wm_spsc_size(wm_spsc *q) {
  size_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
  size_t head = atomic_load_explicit(&q->head, memory_order_acquire);
  return tail - head;
}
