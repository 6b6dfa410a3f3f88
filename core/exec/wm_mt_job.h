/* The job of the multi-core executor (wm_mt.h, which includes this header): what the
 * threads share, in wm_mt_job.c. Its API is everyone's; its structs are the executor's own
 * (wm_mt.c reads them; nothing else should). wm_mt.c calls wm_mt_job.c, never the other
 * way. */
#ifndef WM_MT_JOB_H
#define WM_MT_JOB_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "base/wm_error.h"
#include "base/wm_spsc.h"
#include "exec/wm_mboard.h"

typedef struct wm_mt_job wm_mt_job;

/* What other threads may touch of a thread: its wake-up handle, guarded by mu so that
 * nobody sends to it once it is closed. The handles live here, in the job, so that they
 * outlive the thread's own state. */
typedef struct mt_worker {
  uv_mutex_t mu;
  int open;
  uv_async_t wake;
  uv_prepare_t prep;
  int prep_open;
} mt_worker;

struct wm_mt_job {
  int n;
  wm_spsc **q; /* q[from * n + to]; NULL on the diagonal */
  wm_spsc **ret; /* the same pairs backwards: consumed batches go back to their producer
                  * for reuse (allocating 40 KiB per batch made malloc consolidate) */
  mt_worker *w;
  uv_mutex_t mu;
  uv_cond_t cond;
  int arrived, bad;
  uint64_t *fp;
  _Atomic int state; /* 0 running, 1 failed, 2 aborted, 3 stopped after a checkpoint */
  wm_error err;      /* the first failure, copied in by wm_mt_job_fail */
  uv_mutex_t out_mu;
  _Atomic uint64_t ck_req; /* the newest checkpoint asked for */
  _Atomic uint64_t ck_stop; /* the checkpoint that stops the job (SIGTERM); 0: none */
  void *shared;            /* the coordinators' (wm_mt_job_shared) */
  wm_mboard *board;        /* every thread's metrics snapshots (wm_mt_job_board) */
  void (*shared_free)(void *);
};

typedef struct batch {
  struct batch *next;
  size_t len, cap;
  char *data;
} batch;

/* ---- the job (shared by the threads) ---------------------------------------------- */

/* A job of n threads with queues of queue_batches batches. NULL on failure (message in
 * *err). Free it with wm_mt_job_free once every thread has finished. */
wm_mt_job *wm_mt_job_new(int n, size_t queue_batches, wm_error *err);
void wm_mt_job_free(wm_mt_job *j);
int wm_mt_job_threads(const wm_mt_job *j);
/* Records a failure (the first one wins) and wakes every thread, which stops. The failure
 * is copied with its parts (a wm_error is a value): the thread keeps its own. */
void wm_mt_job_fail(wm_mt_job *j, const wm_error *e);
/* An abort (a second signal): every thread stops, the job is interrupted, not failed. */
void wm_mt_job_abort(wm_mt_job *j);
/* 0 running, 1 failed, 2 aborted, 3 stopped after a checkpoint (wm_mt_job_saved). */
int wm_mt_job_state(wm_mt_job *j);
/* The failure, with its parts; read it (copy it) once every thread has finished. */
const wm_error *wm_mt_job_error(wm_mt_job *j);
/* Every thread calls this once, after building its part of the graph: ok = 0 when the
 * build failed; fp = a fingerprint of the graph it built (it must be the same on every
 * thread). Waits for all threads. 0 when every thread built the same graph; -1 otherwise
 * (the job has failed; a mismatch is reported in the job's message). */
int wm_mt_job_barrier(wm_mt_job *j, int thread, int ok, uint64_t fp);
/* For a thread that will never call wm_mt_job_barrier (it could not be started):
 * counts it as arrived with a failed build, without waiting. */
void wm_mt_job_absent(wm_mt_job *j, int thread);
/* The board every thread publishes its metrics snapshot to (exec/wm_mboard.h). */
wm_mboard *wm_mt_job_board(wm_mt_job *j);
/* Serialises output that threads share (per-thread metrics). */
void wm_mt_job_lock(wm_mt_job *j);
void wm_mt_job_unlock(wm_mt_job *j);
/* One object shared by the coordinators of a job's threads: the first caller makes it
 * with make(arg); the job frees it with free_fn. */
void *wm_mt_job_shared(wm_mt_job *j, void *(*make)(void *arg), void *arg, void (*free_fn)(void *));
/* Asks every thread for checkpoint id (ids increase); wakes them. */
void wm_mt_request_checkpoint(wm_mt_job *j, uint64_t id);

/* Asks every thread for checkpoint id as the one that stops the job (SIGTERM): a thread
 * that has taken its part of it holds (wm_mt.h, "checkpoints"). */
void wm_mt_request_stop_checkpoint(wm_mt_job *j, uint64_t id);
/* Checkpoint id will not complete (it was given up): if it was the stopping one, the
 * threads holding for it go on (they are woken). */
void wm_mt_cancel_stop_checkpoint(wm_mt_job *j, uint64_t id);
/* The stopping checkpoint asked for (0: none, or given up). */
uint64_t wm_mt_stop_checkpoint(wm_mt_job *j);

/* A stop after a checkpoint (SIGTERM): every thread stops as wm_exec_stop_saved does. */
void wm_mt_job_saved(wm_mt_job *j);
/* Wakes thread t: its wake-up handle, if it is still open. */
void wm_mt_wake(wm_mt_job *j, int t);

#endif
