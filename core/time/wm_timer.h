/* The timer queue, grouped by timestamp (architecture.md, Hot path).
 *
 * A min-heap of distinct timestamps, each with the list of its entries, plus a hash index
 * from timestamp to group: ten thousand keys closing the same window cost one heap
 * operation, not ten thousand. Entries are opaque to the queue (a payload chosen by the
 * owner, e.g. a window-state slot and generation) with an `order` that decides the firing
 * order among entries of the same timestamp (ascending; the window operator uses the
 * creation sequence of the (key, window)). Deletion is lazy: the owner checks on firing
 * whether an entry is still wanted.
 */
#ifndef WM_TIMER_H
#define WM_TIMER_H

#include <stddef.h>
#include <stdint.h>

typedef struct wm_timer_entry {
  uint64_t payload;
  uint64_t order;
} wm_timer_entry;

typedef struct wm_timers wm_timers;

/* NULL on allocation failure. Caller frees with wm_timers_free. */
wm_timers *wm_timers_new(void);
void wm_timers_free(wm_timers *q);

/* Adds an entry at time t. 0, or -1 on allocation failure. */
int wm_timers_push(wm_timers *q, int64_t t, uint64_t payload, uint64_t order);

/* Keeps only the entries for which keep(ud, t, payload) is true (the owner's lazy
 * deletion, done at once: for owners whose timers are superseded faster than they come
 * due). Groups left empty are dropped. O(entries). The array of the last wm_timers_pop
 * is not touched: it may be called while firing. Returns the number of entries removed. */
size_t wm_timers_retain(wm_timers *q, int (*keep)(void *ud, int64_t t, uint64_t payload),
                        void *ud);

/* Calls fn once per pending group (in no particular order) with its time and its entries
 * in push order (checkpoints: pushing them back in that order, group by group, into an
 * empty queue gives a queue that pops exactly the same). Stops at the first non-zero
 * return of fn and returns it; 0. */
int wm_timers_each(const wm_timers *q,
                   int (*fn)(void *ud, int64_t t, const wm_timer_entry *e, size_t n), void *ud);

/* Number of distinct timestamps pending, and of entries. */
size_t wm_timers_groups(const wm_timers *q);
size_t wm_timers_size(const wm_timers *q);

/* Whether a group with time <= upto is pending; its time in *t. */
int wm_timers_due(const wm_timers *q, int64_t upto, int64_t *t);

/* Removes the earliest group if its time is <= upto: returns 1 and sets *t and the entries
 * (sorted by order, then by push order) in *entries / *n. The array is owned by the queue
 * and valid until the next call to wm_timers_pop or wm_timers_free; pushes made meanwhile
 * go to new groups. Returns 0 when nothing is due. */
int wm_timers_pop(wm_timers *q, int64_t upto, int64_t *t, const wm_timer_entry **entries,
                  size_t *n);

#endif
