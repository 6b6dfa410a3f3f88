/* The checkpoint coordinator of one executor (docs/checkpoints.md): restores a job from
 * the newest complete checkpoint of its directory, takes checkpoints at an interval from
 * the loop (between two batches of records, so between records), on SIGTERM (stop with a
 * checkpoint, wm_exec_config.savepoint) and at the normal end of the job (the final one).
 *
 * A checkpoint is, in the store of state/wm_ckpt.h:
 *   op-P.N / uid-NAME.N   every operator instance (graph/wm_snapshot.h), sinks included
 *                         (write_lines: the file's length, made durable first)
 *   src-<part>            every source's position (wm_exec_snapshot_source), named after
 *                         its operator's part
 *   MANIFEST meta         text: "wmrun checkpoint 1", the job, whether it is final (the job
 *                         had ended), the threads, max_parallelism (the key groups), one
 *                         "op" line per operator (place, kind, uid, name), one "part" line
 *                         per part of a plan operator (its node, role, instance and count:
 *                         exec/wm_rescale.h) and one "source" line per source (its position)
 *   chan-F-T              several threads: the messages from thread F that thread T
 *                         received after its cut (wm_mt.h, "checkpoints")
 * A checkpoint of another parallelism or thread count is restored key group by key group
 * (exec/wm_rescale.h); one of another max_parallelism, or without it, is refused.
 * A checkpoint of a job that ended is final: resuming from it runs nothing (the input was
 * read to its end) and says so.
 *
 * Crash points for tests: cfg.crash (the bindings pass WM_CKPT_CRASH) = after-parts,
 * before-manifest or after-manifest, optionally followed by ":N", ends the process with
 * _exit(99) at that point of the run's Nth checkpoint (default the first, the one taken
 * before the first record when not resuming): after-parts: every part written;
 * before-manifest: the MANIFEST written and synced under its temporary name, not renamed;
 * after-manifest: just committed.
 *
 * Messages ("resuming from ...", warnings about skipped checkpoints) go to cfg.log. */
#ifndef WM_CKPTRUN_H
#define WM_CKPTRUN_H

#include <stdint.h>
#include <stdio.h>

#include "base/wm_codec.h"
#include "exec/wm_exec.h"

typedef struct wm_ckptrun wm_ckptrun;

typedef struct wm_ckptrun_config {
  const char *dir;            /* the checkpoint directory (created when missing) */
  int64_t interval;           /* ms between checkpoints; 0: only on SIGTERM and at the end */
  int fresh;                  /* remove what dir holds and start over */
  int allow_state_change;     /* restore operators whose function changed (a warning says
                                 how many: --allow-state-change) */
  int keep;                   /* complete checkpoints kept (0: 3) */
  const char *job;            /* the job's name for the MANIFEST (the script) */
  int instance;               /* this executor's thread (0-based) */
  int threads;                /* the job's thread count */
  const wm_codec_host *codec; /* how host (Lua) values are written (NULL: none) */
  FILE *log;                  /* stderr */
  int trace;                  /* a line per checkpoint taken (--trace-watermarks);
                               * 2: as JSON (--trace-watermarks=json) */
  struct wm_mt_local *mt;     /* several threads: this thread's part (exec/wm_mt.h) */
  struct wm_mt_job *mtjob;
  /* for the crash spec only (docs/checkpoints.md): "after-parts", "before-manifest" or
   * "after-manifest", optionally ":N", the point of the run's Nth checkpoint where the
   * process ends with _exit(99); NULL: never. The bindings pass WM_CKPT_CRASH
   * (bindings/lwm_testenv.h). */
  const char *crash;
  /* savepoints (exec/wm_savepoint.h, docs/checkpoints.md "Savepoints"): restore from this
   * one when dir holds no checkpoint (wmrun --from-savepoint), refusing its state that no
   * operator takes unless allow_non_restored; on SIGTERM also write a savepoint there
   * (--stop-with-savepoint). A local dir also takes requests of wmrun savepoint (SIGUSR2). */
  const char *from_savepoint;
  int allow_non_restored;
  const char *stop_savepoint;
} wm_ckptrun_config;

/* Opens the store (cfg->dir, copied; --fresh empties it). NULL with the message in the
 * executor's ctx->error. */
wm_ckptrun *wm_ckptrun_new(wm_exec *exec, const wm_ckptrun_config *cfg);
void wm_ckptrun_free(wm_ckptrun *c);

/* After the graph is built and prepared, before the run: restores the newest complete
 * checkpoint, when there is one, and says so on cfg->log. 0 nothing to restore, 1
 * restored, 2 the checkpoint is final (nothing left to do: do not run), -1 refused (the
 * message, naming the checkpoint, in ctx->error). */
int wm_ckptrun_restore(wm_ckptrun *c);

/* Schedules the checkpoints on the executor (wm_exec_set_checkpoints: every interval, and
 * on SIGTERM). WM_OK. */
int wm_ckptrun_start(wm_ckptrun *c);

/* Takes a checkpoint now (between records); final: the job has ended. With several
 * threads every thread calls it, in the same order (before the first record, at the end);
 * the last to arrive commits. WM_OK or WM_ERR (the message in ctx->error; nothing is
 * committed). */
int wm_ckptrun_take(wm_ckptrun *c, int final);
/* The final checkpoint after the run; ok = 0: this thread's run failed (every thread
 * must call it, so that the others do not wait): nothing is committed. */
int wm_ckptrun_take_final(wm_ckptrun *c, int ok);

/* The executor's savepoint hook (wm_exec_config.savepoint, ud = the coordinator). */
int wm_ckptrun_savepoint(void *ud);

/* What was taken (for --metrics). */
typedef struct wm_ckptrun_stats {
  uint64_t taken;       /* checkpoints committed by this run */
  uint64_t last_id;     /* the id of the last one (or of the one restored) */
  double last_ms, total_ms, max_ms; /* time to take them */
  uint64_t last_bytes;  /* the size of the last one (parts and MANIFEST meta) */
  double align_ms;      /* time spent aligning barriers (0 with one thread) */
  uint64_t restored_id; /* 0: not restored */
} wm_ckptrun_stats;
void wm_ckptrun_stats_get(const wm_ckptrun *c, wm_ckptrun_stats *st);
/* Prints the stats as --metrics does ("checkpoints: ..."). */
void wm_ckptrun_print_stats(const wm_ckptrun *c, FILE *f);

#endif
