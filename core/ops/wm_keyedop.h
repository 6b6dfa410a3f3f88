/* The keyed process operator (semantics.md §8) and rolling keyed aggregations.
 *
 * State is kept per key: an opaque value the function owns (e.g. a Lua table of the
 * bindings), and the key's timers. Timers are grouped by timestamp in two wm_timers
 * queues (event time, processing time); a timer is (key, time, domain): registering it
 * twice coalesces, deleting it removes it. Event-time timers fire when the operator's
 * watermark W reaches them (t <= W), in ascending time and, for equal times, in the order
 * they were registered; then W is forwarded. Processing-time timers fire from the
 * context's processing-time timer service (the executor's libuv timer, or the harness's
 * virtual clock).
 *
 * Keys that hold nothing go (process mode): after every call, a key whose state is nil and
 * that has no timers is removed: its memory is freed and its place reused by a later key.
 * (The host tells "empty" by setting *state to nil: the Lua binding does so for an empty
 * table.) Timers carry the place and a generation of the key, so a queue entry of a removed
 * key never fires for the key that reuses its place. In rolling mode a key goes when the
 * function left its acc and aux nil (a SQL GROUP BY's group whose rows were all retracted).
 *
 * State TTL (wm_state_ttl, semantics.md §10): a key's state not written (or, with
 * WM_TTL_ON_READ_AND_WRITE, read) for ttl ms is dropped: before any call for the key when
 * it has expired (so it is never seen), and by an incremental cleanup pass that examines a
 * few keys per record and per watermark (WM_KEYEDOP_CLEANUP_*). Timers stay. Processing
 * time: expired when last access + ttl <= now; event time: when last access + ttl <= the
 * watermark, the access time being the record's timestamp (an event-time timer's time; the
 * watermark in a processing-time timer).
 */
#ifndef WM_KEYEDOP_H
#define WM_KEYEDOP_H

#include "graph/wm_graph.h"
#include "ops/wm_agg.h"
#include "ops/wm_keys.h"

typedef enum { WM_TIME_EVENT = 0, WM_TIME_PROCESSING = 1 } wm_time_domain;

/* A keyed process function. key is borrowed for the call; *state belongs to the key
 * (nil before the first call) and the function may replace it with an owned value. */
typedef struct wm_keyed_fn {
  int (*element)(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                 const wm_value *rec, int64_t ts);
  /* keyed connected streams: the records of the second input (NULL: one input); with no
   * keysel2 the second input is a broadcast stream: element2 gets a nil key and a nil
   * state, outside any key (no timers) */
  int (*element2)(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                  const wm_value *rec, int64_t ts);
  int (*timer)(void *ud, wm_op *op, const wm_value *key, wm_value *state, int64_t t,
               int domain);
  /* Checkpoints (optional): state the function keeps outside the per-key state (a Lua
   * function object's snapshot(self) / restore(self, t)), as one owned value *out, and
   * its restore from such a value (borrowed). The per-key states are checkpointed by the
   * operator. NULL: nothing beyond the per-key state. */
  int (*snapshot)(void *ud, wm_op *op, wm_value *out);
  int (*restore)(void *ud, wm_op *op, const wm_value *state);
  void (*free)(void *ud);
  void *ud;
} wm_keyed_fn;

enum { WM_TTL_ON_CREATE_AND_WRITE = 0, WM_TTL_ON_READ_AND_WRITE = 1 };

typedef struct wm_state_ttl {
  int64_t ttl; /* ms; 0: the state never expires */
  int update;  /* WM_TTL_ON_CREATE_AND_WRITE or WM_TTL_ON_READ_AND_WRITE */
  int time;    /* WM_TIME_PROCESSING or WM_TIME_EVENT */
} wm_state_ttl;

/* Keys examined by one cleanup step of a TTL: after every record, and at every watermark
 * (and processing-time tick). More than one per record: a key made per record is freed
 * within a bounded number of records once it has expired. */
#define WM_KEYEDOP_CLEANUP_RECORD 4
#define WM_KEYEDOP_CLEANUP_WATERMARK 64

typedef struct wm_keyedop_config {
  wm_keysel keysel;  /* owned by the operator from now on */
  wm_keysel keysel2; /* keyed connected streams: the second input's key (fn NULL: one
                      * input); owned. Both keys meet in one state and timer service. */
  wm_keyed_fn fn;    /* process mode (fn.element set); owned */
  wm_winfn rolling;  /* rolling mode (rolling.add set): add, then fire with the key's
                      * accumulator and the record's timestamp after every record; owned */
  /* rolling mode: what the accumulator means, checked by a restore as a window's is
   * (wm_winop_config.meaning); empty: a built-in's aggregation and field, else unchecked */
  char meaning[200];
  wm_state_ttl ttl; /* process mode: the state's time to live (ttl.ttl 0: none) */
  /* rolling mode, mini-batch (SQL's table.exec.mini-batch.*): 0 fires after every record;
   * n > 0 adds every record at once but fires a key only when the batch ends: n records
   * since the last end, a watermark (before it is forwarded), minibatch_latency ms of wall
   * clock (0: no such limit); every key a restore brings is in the first batch. The rolling fire must then emit what changed since it last emitted, and nothing
   * for a key that did not change (wm_keyedfn_sqlagg's does), so that a key fires once per
   * batch however many of its records came, and the batch needs no state of its own in a
   * checkpoint. A batch's fire carries the timestamp of the key's last record in it. */
  uint32_t minibatch_size;
  int64_t minibatch_latency;
} wm_keyedop_config;

/* NULL on failure (message in ctx->error); takes ownership of cfg's parts even then. */
wm_op *wm_keyedop_new(wm_ctx *ctx, const char *name, wm_keyedop_config *cfg);
bool wm_op_is_keyedop(const wm_op *op);
/* Keyed connected streams: input channels from `first2` on are the second input's (its
 * records go through keysel2 and fn.element2). Call once the first input is connected. */
void wm_keyedop_set_second_input(wm_op *op, int first2);

/* The timer service of the key being processed (only during element/timer callbacks).
 * WM_OK, or WM_ERR when called outside a callback. */
int wm_keyedop_register(wm_op *op, int domain, int64_t t);
int wm_keyedop_delete(wm_op *op, int domain, int64_t t);
/* The state of the key being processed was read (write 0) or written (write 1) in this
 * callback: what a state TTL counts as an access. A host whose state is a mutable object
 * (a Lua table) calls it; a state replaced by another value (*state changed) counts as
 * written without it. No-op outside callbacks. */
void wm_keyedop_state_used(wm_op *op, int write);
/* Number of keys held (with state or timers), and of pending timers (for metrics and
 * tests); keys whose state a TTL dropped so far. */
size_t wm_keyedop_keys(const wm_op *op);
uint64_t wm_keyedop_expired(const wm_op *op);
/* The state TTL in ms (0: none). */
int64_t wm_keyedop_ttl(const wm_op *op);
size_t wm_keyedop_timers(const wm_op *op, int domain);

#endif
