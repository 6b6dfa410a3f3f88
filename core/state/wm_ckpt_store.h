/* The checkpoint store interface: where the checkpoints of wm_ckpt.h are kept.
 *
 * wm_ckpt.c owns the format (a part's header and CRC, the MANIFEST's layout, which checkpoint
 * is the newest complete one, what is pruned) and talks to its storage only through this
 * vtable; a store keeps *objects*: immutable byte strings named by a checkpoint id and a name
 * (a part's name, or "MANIFEST"). wm_ckpt_local.c keeps them in a directory (docs/checkpoints.md,
 * "Storage"); another store (a server) implements the same operations.
 *
 * The guarantees a store gives (and wm_ckpt.c relies on):
 *   - put: an object, once put, reads back byte for byte or not at all (a crash may lose it);
 *     objects are never changed in place.
 *   - complete: the atomic step. It stores the MANIFEST of checkpoint id such that a reader
 *     sees either all of it (and every object put before it) or no MANIFEST; a checkpoint
 *     without a MANIFEST is not complete.
 *   - the fence: opening a store claims it for the process. A store that another process has
 *     claimed since (it took the partition over) refuses `complete` with a message saying so,
 *     and never makes the checkpoint complete. The local directory claims with flock: a second
 *     claim is refused while the holder lives, so its fence is never lost.
 *   - list: the ids that hold anything (complete or not), in any order; remove: every object of
 *     one id (pruning, an aborted attempt).
 *
 * Everything read back is untrusted: wm_ckpt.c checks lengths and CRCs, a store only bounds
 * what it reads by `max`. Errors are 0 / -1 with the message in the caller's wm_error (NULL: no
 * message wanted). */
#ifndef WM_CKPT_STORE_H
#define WM_CKPT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_error.h"

typedef struct wm_ckpt_backend wm_ckpt_backend;

typedef struct wm_ckpt_backend_vt {
  /* Makes id ready to be written: removes what a crashed attempt at it left. */
  int (*begin)(wm_ckpt_backend *b, uint64_t id, wm_error *err);
  /* Puts object name of checkpoint id: the bytes head then body (both borrowed). */
  int (*put)(wm_ckpt_backend *b, uint64_t id, const char *name, const void *head, size_t headlen,
             const void *body, size_t bodylen, wm_error *err);
  /* The atomic step: stores the MANIFEST of id, fenced (above). With crash set the process
   * ends (_exit(99)) once the MANIFEST is written but before it is made visible (tests). */
  int (*complete)(wm_ckpt_backend *b, uint64_t id, const void *manifest, size_t len, int crash,
                  wm_error *err);
  /* Reads object name of id (at most max bytes) into *data (malloc'ed, the caller frees) and
   * *len: 1 read, 0 no such object, -1 a failure or more than max bytes (message). */
  int (*get)(wm_ckpt_backend *b, uint64_t id, const char *name, size_t max, uint8_t **data,
             size_t *len, wm_error *err);
  /* The ids that hold any object, in *ids (malloc'ed) and *n. */
  int (*list)(wm_ckpt_backend *b, uint64_t **ids, size_t *n, wm_error *err);
  /* Removes every object of id (absent is not an error). */
  int (*remove)(wm_ckpt_backend *b, uint64_t id, wm_error *err);
  /* Releases the claim and frees b. */
  void (*free)(wm_ckpt_backend *b);
} wm_ckpt_backend_vt;

/* Every store starts with this; `name` is what messages call it (the directory, the URL). */
struct wm_ckpt_backend {
  const wm_ckpt_backend_vt *vt;
  const char *name;
};

/* The local directory store (wm_ckpt_local.c): creates dir and its parents when missing and
 * claims it (flock of dir/LOCK, holding "pid P host H"). NULL with a message in err. */
wm_ckpt_backend *wm_ckpt_local_open(const char *dir, wm_error *err);
/* The NATS JetStream store (wm_ckpt_nats.c) at nats://HOST:PORT/BUCKET[/PATH]: connects,
 * makes its stream and KV bucket when missing and claims the key of PATH (taking it over
 * from any earlier holder, whose next `complete` is then refused). NULL with a message. */
wm_ckpt_backend *wm_ckpt_nats_open(const char *url, wm_error *err);

/* Marks: small named flags kept beside the checkpoints of a sub-path of a store, read and set
 * without claiming it (scale-out's supervisor reads a task's ENDED while the task's child
 * holds the task's store). `where` is a checkpoint directory or a store URL; the mark (path,
 * name) is the file <where>/<path>/<name> of a directory (today's task-<name>/ENDED), and the
 * key "[PATH/]<path>=<name>" of a NATS store's KV bucket, beside the key "[PATH/]<path>" of the
 * checkpoints at <where>/<path> ('=' is in no path, so the two never meet). A mark, once set,
 * stays (a put of one small value: all or nothing). */
typedef struct wm_ckpt_marks wm_ckpt_marks;
typedef struct wm_ckpt_marks_vt {
  /* 1 set, 0 not set, -1 with a message. */
  int (*get)(wm_ckpt_marks *m, const char *path, const char *name, wm_error *err);
  int (*set)(wm_ckpt_marks *m, const char *path, const char *name, wm_error *err);
  void (*free)(wm_ckpt_marks *m);
} wm_ckpt_marks_vt;
struct wm_ckpt_marks {
  const wm_ckpt_marks_vt *vt;
};

/* The marks of `where` (a directory, or nats://HOST:PORT/BUCKET[/PATH]: connects, makes the
 * KV bucket when missing). NULL with a message in err. */
wm_ckpt_marks *wm_ckpt_marks_open(const char *where, wm_error *err);
wm_ckpt_marks *wm_ckpt_local_marks(const char *dir, wm_error *err);
wm_ckpt_marks *wm_ckpt_nats_marks(const char *url, wm_error *err);
int wm_ckpt_mark_get(wm_ckpt_marks *m, const char *path, const char *name, wm_error *err);
int wm_ckpt_mark_set(wm_ckpt_marks *m, const char *path, const char *name, wm_error *err);
void wm_ckpt_marks_free(wm_ckpt_marks *m);

#endif
