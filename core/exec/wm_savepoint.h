/* Savepoints (docs/checkpoints.md, "Savepoints"): a self-contained copy of one complete
 * checkpoint, taken on purpose, that a changed job restores operator by operator.
 *
 * Format: a savepoint is a checkpoint store (a directory, or a nats:// URL) that holds one
 * complete checkpoint, a copy of a checkpoint of the running job: every part byte for byte
 * (state/wm_ckpt.h's format, CRCs included) and its MANIFEST, whose metadata is the
 * checkpoint's (exec/wm_ckptrun.h: "op" lines with place, kind, uid and name, "source"
 * lines, threads, final) followed by one line
 *     savepoint <checkpoint id> <the checkpoint store it was copied from>
 * Nothing in it refers to the job's checkpoint directory: it can be moved, copied or put in
 * another store. Parts are copied as they are (keyed state keeps its encoding).
 *
 * Restoring (wm_savepoint_fit) matches parts to the new job's operators by uid: an operator
 * with a uid takes the part of that uid; one without takes the part of its place only when
 * the savepoint's operator at that place had no uid and the same kind; an operator with no
 * part starts empty (its part is a snapshot of the freshly built operator). A part of the
 * savepoint that no operator takes and that holds state of its own is refused, naming its
 * uid, unless allow_non_restored (Flink's --allowNonRestoredState). That is done at the
 * parallelism and thread count the savepoint was taken at; the same job (wm_savepoint_same_plan)
 * at another is restored as a checkpoint is (exec/wm_rescale.h), and a changed job at another
 * is refused (exec/wm_ckptrun_restore.c).
 *
 * Taking one from a running job (wmrun savepoint CKDIR TARGET): the client writes
 * CKDIR/SAVEPOINT-REQUEST (a nonce and the target) and sends SIGUSR2 to the process that
 * holds CKDIR/LOCK; the job takes a checkpoint, copies it to the target and answers in
 * CKDIR/SAVEPOINT-RESULT ("ok" or "error", with the nonce). Errors are 0 / -1 with a
 * message in the caller's buffer. */
#ifndef WM_SAVEPOINT_H
#define WM_SAVEPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "base/wm_buf.h"
#include "base/wm_codec.h"
#include "exec/wm_exec.h"
#include "graph/wm_snapshot.h"
#include "state/wm_ckpt.h"

#define WM_SAVEPOINT_REQUEST "SAVEPOINT-REQUEST"
#define WM_SAVEPOINT_RESULT "SAVEPOINT-RESULT"

/* Copies the newest complete checkpoint of `from` (named from_name in the MANIFEST line) into
 * a new store at target, which must hold no checkpoint yet. *id gets the checkpoint's id.
 * 0, or -1 with err filled (base/wm_error.h; NULL: no message wanted). */
int wm_savepoint_write(wm_ckpt_store *from, const char *from_name, const char *target,
                       uint64_t *id, wm_error *err);

/* Opens the savepoint at path (a directory that must exist, or a nats:// URL) and reads its
 * checkpoint: *out (free with wm_ckpt_reader_free) and *store (free after the reader). A
 * savepoint with no complete checkpoint (damaged, empty) is an error that says what was
 * wrong. 0, or -1 with err filled. */
int wm_savepoint_open(const char *path, wm_ckpt_store **store, wm_ckpt_reader **out,
                      wm_error *err);

/* The parts of a savepoint fitted to the job of ctx (its one thread's exec, after the build,
 * before the first record), as above: *out (n parts, names and data owned: free with
 * wm_savepoint_parts_free). *fresh counts the operators that start empty; news (when not
 * NULL) gets the names of those the user wrote ('a', 'b'). WM_OK, or WM_ERR with the message
 * in ctx->error. */
int wm_savepoint_fit(wm_ctx *ctx, wm_exec *exec, int instance, const wm_codec_host *codec,
                     const char *meta, size_t mlen, const wm_part *parts, size_t np,
                     int allow_non_restored, wm_part **out, size_t *n, int *fresh, wm_buf *news);
void wm_savepoint_parts_free(wm_part *parts, size_t n);

/* The coordinator's side (exec/wm_ckptrun.c). A request of wmrun savepoint: reads and
 * removes dir/SAVEPOINT-REQUEST into *target and *nonce (malloc'ed; an earlier request still
 * pending there is answered as superseded). 1 a request, 0 none (a bad one is a warning). */
int wm_savepoint_next_request(const char *dir, char **target, char **nonce, FILE *log);
/* Serves it after a checkpoint of store completed: the savepoint is written and the answer
 * (dir/SAVEPOINT-RESULT) given; a failure is a warning, and the job goes on. Frees and
 * clears *target and *nonce. */
void wm_savepoint_serve(wm_ckpt_store *store, const char *dir, const char *job, char **target,
                        char **nonce, FILE *log);
/* --stop-with-savepoint after checkpoint ckid: writes it and says so on log. 0, or -1 with
 * err filled. */
int wm_savepoint_stop(wm_ckpt_store *store, const char *dir, const char *target, uint64_t ckid,
                      FILE *log, wm_error *err);
/* --from-savepoint `from` and what the checkpoint directory dir holds (got: 1 with its newest
 * complete checkpoint in *r): 1 the savepoint is read (*r, *sps: wm_savepoint_open), 0 dir's
 * checkpoint is used (one of a run that started from a savepoint: a restart after a crash),
 * -1 refused (err filled). */
int wm_savepoint_pick(const char *from, const char *dir, int got, wm_ckpt_reader **r,
                      wm_ckpt_store **sps, wm_error *err);
/* wm_savepoint_fit on one thread, replacing *parts (their data freed) by the fitted ones
 * (free with wm_savepoint_parts_free), and saying on log which operators start empty. */
int wm_savepoint_refit(wm_ctx *ctx, wm_exec *exec, const wm_codec_host *codec, const char *meta,
                       size_t mlen, wm_part **parts, size_t *np, int allow_non_restored,
                       const char *name, FILE *log);
/* Whether the savepoint's job (its MANIFEST's "op" lines, meta) is ctx's: the same plan
 * operators, in order, of the same kinds and uids (the executor's own operators, exchanges and
 * channels between threads, and every instance after the first left out, so that the plan
 * at any parallelism or thread count compares; names, which hold the script's file name, are
 * not compared). 1 the same, 0 not (diff says how, in dlen bytes), -1 out of memory. */
int wm_savepoint_same_plan(const wm_ctx *ctx, const char *meta, size_t mlen, char *diff,
                           size_t dlen);
/* The parallelism a checkpoint was taken at: the most instances of one operator in its
 * MANIFEST's "part" lines (1 when it has none). */
int wm_savepoint_parallelism(const char *meta, size_t mlen);
/* Watches SIGUSR2 on loop with h (unreferenced; *open set once initialised: the loop's end
 * closes it). WM_OK or WM_ERR. */
int wm_savepoint_watch(uv_loop_t *loop, uv_signal_t *h, int *open, uv_signal_cb cb, void *ud);

/* The client (wmrun savepoint): asks the job running on checkpoint directory dir for a
 * savepoint into target and waits for its answer for at most timeout_ms. 0 with the job's
 * answer in msg, or -1 with why in msg. */
int wm_savepoint_request(const char *dir, const char *target, int64_t timeout_ms, char *msg,
                         size_t msglen);

#endif
