/* Checkpoints: each one a set of named parts (one per operator instance or source) and a
 * MANIFEST written last, kept in a store (wm_ckpt_store.h: the local directory below, or
 * another store behind the same interface).
 *
 *   DIR/chk-00000000000000000017/<part>   a part: magic, version, length, CRC-32, payload
 *   DIR/chk-00000000000000000017/MANIFEST  the parts' names, lengths and CRCs, the job's
 *                                          metadata (shape, positions), and its own CRC
 *
 * A checkpoint is complete when its MANIFEST is there and checks out; writing one is: every
 * part to a temporary name, fsync, rename; the MANIFEST likewise; fsync the directory.
 * A crash at any moment leaves either a complete checkpoint or one that readers skip.
 * The store keeps the newest `keep` complete checkpoints and removes older ones (and
 * incomplete ones older than the newest complete one).
 *
 * Files read back are untrusted: every length and CRC is checked before use; a damaged
 * newest checkpoint falls back to the previous complete one, with a warning.
 *
 * No global state; errors are 0 / -1 with the message in the caller's wm_error (NULL: no
 * message wanted). */
#ifndef WM_CKPT_H
#define WM_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/wm_error.h"
#include "state/wm_crc.h"

#define WM_CKPT_VERSION 1u

typedef struct wm_ckpt_store wm_ckpt_store;
typedef struct wm_ckpt_writer wm_ckpt_writer;
typedef struct wm_ckpt_reader wm_ckpt_reader;
struct wm_ckpt_backend;

/* A warning about a checkpoint that was skipped (damaged, incomplete). ud is the caller's. */
typedef void (*wm_ckpt_warn_fn)(void *ud, const char *message);

/* Opens (creating it and its parents when missing) the store at dir; keep >= 1 complete
 * checkpoints are kept. NULL with a message in err. The store copies dir.
 * The store locks the directory (flock of dir/LOCK, which holds "pid P host H") until it is
 * freed: a second store on it, in this process or another, is refused with a message naming
 * the holder; the kernel drops the lock when its process ends, however it ends. */
wm_ckpt_store *wm_ckpt_store_open(const char *dir, int keep, wm_error *err);
/* The checkpoints in store b (wm_ckpt_store.h), which the result owns (b is freed on a
 * failure too; NULL b gives NULL, for wm_ckpt_store_new(open(..., err), keep, err)). */
wm_ckpt_store *wm_ckpt_store_new(struct wm_ckpt_backend *b, int keep, wm_error *err);
void wm_ckpt_store_free(wm_ckpt_store *s);
/* The store's name in messages (the directory). */
const char *wm_ckpt_store_dir(const wm_ckpt_store *s);
/* For crash tests: the next commit ends the process (_exit(99)) once its MANIFEST is
 * written and synced under its temporary name, before the rename (the store's atomic step). */
void wm_ckpt_store_crash_before_rename(wm_ckpt_store *s);

/* Starts checkpoint `id` (ids increase; use wm_ckpt_next_id). NULL with a message in err. */
wm_ckpt_writer *wm_ckpt_begin(wm_ckpt_store *s, uint64_t id, wm_error *err);
/* Writes one part (name: [A-Za-z0-9._-], at most 200 bytes, not "MANIFEST", unique within
 * the checkpoint); the bytes are borrowed for the call. 0, or -1 with a message. */
int wm_ckpt_put(wm_ckpt_writer *w, const char *name, const void *data, size_t len, wm_error *err);
/* Writes the MANIFEST (with meta, borrowed: the job's shape and whatever the caller needs
 * to see before reading parts) and makes the checkpoint complete; then prunes. Frees w,
 * whatever the result. 0, or -1 with a message (the checkpoint is then not complete, and
 * what it wrote is removed): a store claimed by another process since this one opened it
 * (the fence, wm_ckpt_store.h) refuses. */
int wm_ckpt_commit(wm_ckpt_writer *w, const void *meta, size_t metalen, uint64_t created_ms,
                   wm_error *err);
/* Drops an unfinished checkpoint (removes what it wrote). Frees w. */
void wm_ckpt_abort(wm_ckpt_writer *w);

/* Removes every checkpoint of the store, complete or not (wmrun --fresh). 0, or -1 with a
 * message. */
int wm_ckpt_clear(wm_ckpt_store *s, wm_error *err);

/* The id after the highest one present in the store (complete or not), or 1. */
uint64_t wm_ckpt_next_id(wm_ckpt_store *s);

/* Opens the newest complete checkpoint, skipping damaged ones with a warning each.
 * Returns 1 and *out (free with wm_ckpt_reader_free), 0 when there is none, -1 with a
 * message on a failure to read the directory. */
int wm_ckpt_open_latest(wm_ckpt_store *s, wm_ckpt_warn_fn warn, void *ud, wm_ckpt_reader **out,
                        wm_error *err);
uint64_t wm_ckpt_reader_id(const wm_ckpt_reader *r);
uint64_t wm_ckpt_reader_created_ms(const wm_ckpt_reader *r);
/* The MANIFEST's metadata: borrowed until the reader is freed. */
const void *wm_ckpt_reader_meta(const wm_ckpt_reader *r, size_t *len);
/* The number of parts and the name of part i (borrowed). */
size_t wm_ckpt_reader_nparts(const wm_ckpt_reader *r);
const char *wm_ckpt_reader_part_name(const wm_ckpt_reader *r, size_t i);
/* Reads part `name` (its CRC and length checked against the file and the MANIFEST) into
 * *data (owned by the caller: free()), *len. 1 found, 0 no such part, -1 damaged (message). */
int wm_ckpt_get(wm_ckpt_reader *r, const char *name, uint8_t **data, size_t *len, wm_error *err);
void wm_ckpt_reader_free(wm_ckpt_reader *r);

#endif
