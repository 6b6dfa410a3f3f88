/* The checkpoint coordinator's private parts, shared by wm_ckptrun.c (taking checkpoints) and
 * wm_ckptrun_restore.c (restoring one): not for other files. Include exec/wm_ckptrun.h first
 * (this header uses its types and does not include it, so that the two make no loop). */
#ifndef WM_CKPTRUN_INT_H
#define WM_CKPTRUN_INT_H

#include "exec/wm_mt.h"

#include <stdint.h>
#include <stdio.h>

#include "base/wm_buf.h"
#include "graph/wm_obs.h"
#include "state/wm_ckpt.h"

#define META_HEAD "wmrun checkpoint 1\n"

enum { CRASH_NONE, CRASH_AFTER_PARTS, CRASH_BEFORE_MANIFEST, CRASH_AFTER_MANIFEST };

/* What the coordinators of a job's threads share (one thread: a private one). Everything
 * in it is under mu. A checkpoint is written by every thread into one writer; the thread
 * that completes it commits it. */
typedef struct ck_shared {
  uv_mutex_t mu;
  uv_cond_t cond;
  int n;                /* threads */
  wm_mt_job *job;       /* NULL with one thread */
  wm_ckpt_store *store;
  wm_error err;         /* opening the store failed (every thread reports it) */
  uint64_t next_id;
  int crash;
  long crash_at, attempts;
  /* the checkpoint being written */
  wm_ckpt_writer *w;
  uint64_t id;
  int async;            /* taken with barriers (several threads, while running) */
  int final, savepoint;
  int arrived;          /* with barriers: threads whose part is complete */
  int sync_arrived, bad; /* at the rendezvous of take_sync; one could not write its part */
  char why[WM_ERROR_MSG];
  int why_whole;        /* why is a thread's whole failure (it names the checkpoint), not a
                           reason of the store's to prefix with the folder */
  wm_buf meta;
  uint32_t groups;      /* the job's key groups (its max parallelism), for the MANIFEST */
  uint64_t bytes, t0;
  /* the sync rendezvous (before the first record, at the end); ready: threads past their
   * restore (nothing is written before every thread has read the store) */
  uint64_t gen;
  int ready;
  int last_rc;
  wm_ckptrun_stats st;
  wm_obs_ckpt recent[16]; /* the last ones committed, at st.taken % 16, for report_locked */
  FILE *log;
  int trace;
  char *dir, *jobname;
  /* every thread's coordinator (by instance), for the commits after a checkpoint */
  struct wm_ckptrun **members;
  int commit_warned;    /* a failed group commit was reported */
  /* savepoints: a request of wmrun savepoint (served by the next commit), the target of
   * --stop-with-savepoint, and the savepoint this run's history started from */
  char *sp_target, *sp_nonce, *stop_sp, *origin;
} ck_shared;

struct wm_ckptrun {
  wm_exec *exec;
  wm_ctx *ctx;
  wm_ckptrun_config cfg;
  char *dir, *job;
  ck_shared *sh;
  int own_sh;
  wm_mt_local *mt;
  uint64_t reported; /* checkpoints taken that this thread's observer has been told of */
  uv_signal_t usr2;  /* thread 1 with a local dir: wmrun savepoint's requests */
  int usr2_open;
  const char *rname; /* what is restored: dir, or the savepoint (messages) */
  int rsp;           /* restoring a savepoint */
};

/* "checkpoints in DIR: MSG" as the context's error; returns WM_ERR */
int wm_ckptrun_set_err(wm_ckptrun *c, const char *msg);
/* the wall clock, in ms */
uint64_t wm_ckptrun_wall_ms(void);
/* an operator's place in its context (the index of ctx->ops; nops when it is none of them) */
size_t wm_ckptrun_op_place(const wm_ctx *ctx, const wm_op *op);

#endif
