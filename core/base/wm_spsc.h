/* A bounded single-producer/single-consumer queue of pointers (a lock-free ring).
 *
 * Exactly one thread may push and exactly one (other) thread may pop. A push never
 * blocks: it fails when the ring is full, and the producer decides what to do (the
 * multi-core executor keeps the item and pauses its sources: backpressure). The ring
 * also counts the bytes pushed and popped, so the producer can measure what is in
 * flight without locking. */
#ifndef WM_SPSC_H
#define WM_SPSC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wm_spsc {
  _Alignas(64) _Atomic size_t head; /* next slot to pop (written by the consumer) */
  _Atomic uint64_t popped_bytes;    /* bytes of popped items (written by the consumer) */
  _Alignas(64) _Atomic size_t tail; /* next slot to push (written by the producer) */
  _Atomic int want_wake;            /* the producer waits for room: wake it after a pop */
  _Alignas(64) size_t mask;
  void **slots;
} wm_spsc;

/* A ring of at least cap items (rounded up to a power of two, at least 2); NULL on
 * allocation failure. Caller frees with wm_spsc_free once both threads are done. */
wm_spsc *wm_spsc_new(size_t cap);
void wm_spsc_free(wm_spsc *q);
/* Producer: appends p (not NULL); false when the ring is full (p stays the caller's). */
bool wm_spsc_push(wm_spsc *q, void *p);
/* Consumer: the oldest item, or NULL when the ring is empty. */
void *wm_spsc_pop(wm_spsc *q);
/* Consumer: reports that an item of n bytes has been consumed (see popped_bytes). */
static inline void wm_spsc_consumed(wm_spsc *q, size_t n) {
  atomic_fetch_add_explicit(&q->popped_bytes, n, memory_order_release);
}
/* Either side: the number of items in the ring (exact for the calling side's view). */
size_t wm_spsc_size(wm_spsc *q);
/* The capacity in items. */
static inline size_t wm_spsc_capacity(const wm_spsc *q) { return q->mask + 1; }

#endif
