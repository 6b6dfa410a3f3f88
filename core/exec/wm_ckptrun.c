/* The checkpoint coordinator of one executor (wm_ckptrun.h). */
#include "exec/wm_ckptrun.h"
#include "exec/wm_ckptrun_int.h"

#include "exec/wm_mt.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/wm_buf.h"
#include "graph/wm_obs.h"
#include "base/wm_keygroup.h"
#include "exec/wm_rescale.h"
#include "io/wm_conn.h"
#include "graph/wm_snapshot.h"
#include "exec/wm_savepoint.h"
#include "state/wm_ckpt.h"


uint64_t wm_ckptrun_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int wm_ckptrun_set_err(wm_ckptrun *c, const char *msg) {
  return wm_ctx_error(c->ctx, "checkpoints in %s: %s", c->dir, msg);
}

static void shared_free(void *p) {
  ck_shared *sh = p;
  if (!sh) return;
  if (sh->w) wm_ckpt_abort(sh->w);
  wm_ckpt_store_free(sh->store);
  wm_buf_free(&sh->meta);
  uv_mutex_destroy(&sh->mu);
  uv_cond_destroy(&sh->cond);
  free(sh->dir);
  free(sh->jobname);
  free(sh->members);
  free(sh->sp_target);
  free(sh->sp_nonce);
  free(sh->stop_sp);
  free(sh->origin);
  free(sh);
}

/* Opens the store (and empties it with --fresh): once per job. */
static void *shared_make(void *arg) {
  const wm_ckptrun *c = arg;
  ck_shared *sh = calloc(1, sizeof *sh);
  if (!sh) return NULL;
  if (uv_mutex_init(&sh->mu) != 0 || uv_cond_init(&sh->cond) != 0) abort(); /* not on Linux */
  wm_buf_init(&sh->meta);
  sh->n = c->cfg.threads > 1 ? c->cfg.threads : 1;
  sh->log = c->cfg.log;
  sh->trace = c->cfg.trace;
  sh->dir = strdup(c->dir);
  sh->jobname = strdup(c->job);
  sh->members = calloc((size_t)sh->n, sizeof *sh->members);
  if (c->cfg.stop_savepoint) sh->stop_sp = strdup(c->cfg.stop_savepoint);
  if (!sh->dir || !sh->jobname || !sh->members || (c->cfg.stop_savepoint && !sh->stop_sp)) {
    shared_free(sh);
    return NULL;
  }
  sh->store = wm_ckpt_store_open(c->dir, c->cfg.keep > 0 ? c->cfg.keep : 3, &sh->err);
  if (sh->store && c->cfg.fresh && wm_ckpt_clear(sh->store, &sh->err) != 0) {
    wm_ckpt_store_free(sh->store);
    sh->store = NULL;
  }
  if (sh->store) sh->next_id = wm_ckpt_next_id(sh->store);
  return sh;
}

static int parse_crash(wm_ckptrun *c, ck_shared *sh) {
  const char *crash = c->cfg.crash;
  if (!crash || !*crash) return WM_OK;
  size_t pl = strcspn(crash, ":");
  char *end = NULL;
  sh->crash_at = crash[pl] == ':' ? strtol(crash + pl + 1, &end, 10) : 1;
  if (pl == 11 && !strncmp(crash, "after-parts", pl)) sh->crash = CRASH_AFTER_PARTS;
  else if (pl == 15 && !strncmp(crash, "before-manifest", pl)) sh->crash = CRASH_BEFORE_MANIFEST;
  else if (pl == 14 && !strncmp(crash, "after-manifest", pl)) sh->crash = CRASH_AFTER_MANIFEST;
  if (!sh->crash || sh->crash_at < 1 || (end && *end))
    return wm_ctx_error(c->ctx, "WM_CKPT_CRASH: expected after-parts, before-manifest or "
                                "after-manifest, optionally followed by :N (the Nth checkpoint "
                                "of the run), got '%s'", crash);
  return WM_OK;
}

wm_ckptrun *wm_ckptrun_new(wm_exec *exec, const wm_ckptrun_config *cfg) {
  wm_ctx *ctx = wm_exec_ctx(exec);
  wm_ckptrun *c = calloc(1, sizeof *c);
  if (!c || !(c->dir = strdup(cfg->dir)) || !(c->job = strdup(cfg->job ? cfg->job : "job"))) {
    if (c) free(c->dir);
    free(c);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  c->exec = exec;
  c->ctx = ctx;
  c->cfg = *cfg;
  c->cfg.dir = c->dir;
  c->cfg.job = c->job;
  if (!c->cfg.log) c->cfg.log = stderr;
  c->mt = cfg->mt;
  wm_mt_job *job = cfg->mt ? cfg->mtjob : NULL;
  if (job) {
    c->sh = wm_mt_job_shared(job, shared_make, c, shared_free);
  } else {
    c->sh = shared_make(c);
    c->own_sh = 1;
  }
  if (!c->sh) {
    wm_ctx_error(ctx, "out of memory");
    wm_ckptrun_free(c);
    return NULL;
  }
  uv_mutex_lock(&c->sh->mu);
  c->sh->job = job;
  if (c->cfg.instance >= 0 && c->cfg.instance < c->sh->n) c->sh->members[c->cfg.instance] = c;
  int rc = c->sh->store ? parse_crash(c, c->sh) : wm_ctx_error(ctx, "%s", c->sh->err.msg);
  uv_mutex_unlock(&c->sh->mu);
  if (rc != WM_OK) {
    wm_ckptrun_free(c);
    return NULL;
  }
  return c;
}

void wm_ckptrun_free(wm_ckptrun *c) {
  if (!c) return;
  if (c->sh && !c->own_sh) {
    uv_mutex_lock(&c->sh->mu);
    if (c->cfg.instance >= 0 && c->cfg.instance < c->sh->n && c->sh->members[c->cfg.instance] == c)
      c->sh->members[c->cfg.instance] = NULL;
    uv_mutex_unlock(&c->sh->mu);
  }
  if (c->usr2_open && !uv_is_closing((uv_handle_t *)&c->usr2)) { /* a run that never ran */
    uv_close((uv_handle_t *)&c->usr2, NULL);
    uv_run(wm_exec_loop(c->exec), UV_RUN_NOWAIT);
  }
  if (c->own_sh) shared_free(c->sh);
  free(c->dir);
  free(c->job);
  free(c);
}

/* ---- taking one ------------------------------------------------------------------------ */

static int put_part(void *ud, const char *name, const void *data, size_t len, wm_error *err) {
  wm_ckptrun *c = ((void **)ud)[0];
  wm_ckpt_writer *w = ((void **)ud)[1];
  c->sh->bytes += len;
  return wm_ckpt_put(w, name, data, len, err);
}

/* The place of op in its context (the "P" of part names). */
size_t wm_ckptrun_op_place(const wm_ctx *ctx, const wm_op *op) {
  size_t i = 0;
  while (i < ctx->nops && ctx->ops[i] != op) i++;
  return i;
}

static void meta_op_line(wm_buf *m, const wm_op *op, size_t place) {
  wm_buf_adds(m, "op ");
  wm_buf_add_int(m, (int64_t)place);
  wm_buf_addc(m, ' ');
  wm_buf_adds(m, op->vt->kind ? op->vt->kind : "?");
  wm_buf_addc(m, ' ');
  wm_buf_adds(m, op->uid ? op->uid : "-");
  wm_buf_addc(m, ' ');
  for (const char *p = op->name ? op->name : ""; *p; p++) wm_buf_addc(m, *p == '\n' ? ' ' : *p);
  wm_buf_addc(m, '\n');
}

/* Waits on the shared condition (under mu) for at most 50 ms; 0, or -1 when the job has
 * failed meanwhile (a thread that will never arrive must not leave the others waiting). */
static int wait_locked(ck_shared *sh) {
  uv_cond_timedwait(&sh->cond, &sh->mu, 50u * 1000u * 1000u);
  return sh->job && wm_mt_job_state(sh->job) == 1 ? -1 : 0;
}

/* The store's failure e as the checkpoint's failure (sh->why, under mu); returns WM_ERR. */
static int why_from(ck_shared *sh, const wm_error *e) {
  snprintf(sh->why, sizeof sh->why, "%s", e->msg);
  return WM_ERR;
}

/* Starts checkpoint sh->next_id (under mu). */
static int begin_locked(ck_shared *sh, int final, int async) {
  sh->why_whole = 0;
  wm_error e;
  sh->w = wm_ckpt_begin(sh->store, sh->next_id, &e);
  if (!sh->w) return why_from(sh, &e);
  sh->id = sh->next_id;
  sh->final = final;
  sh->async = async;
  sh->arrived = 0;
  sh->bytes = 0;
  sh->t0 = uv_hrtime();
  wm_buf_clear(&sh->meta);
  return WM_OK;
}

/* This thread's parts of the checkpoint being written, and its lines of the MANIFEST
 * (under mu). WM_ERR with the message in ctx->err. */
static int write_part_locked(wm_ckptrun *c) {
  ck_shared *sh = c->sh;
  wm_ctx *ctx = c->ctx;
  void *ud[2] = {c, sh->w};
  wm_buf *m = &sh->meta, pos;
  wm_buf_init(&pos);
  int rc = wm_ctx_snapshot(ctx, c->cfg.instance, c->cfg.codec, put_part, ud);
  if (c->cfg.instance == 0) /* every thread builds the same plan (and key groups) */
    sh->groups = ctx->key_groups ? ctx->key_groups : WM_KEYGROUPS_DEFAULT;
  if (c->cfg.instance == 0) /* the shape: every thread builds the same plan */
    for (size_t i = 0; i < ctx->nops && rc == WM_OK; i++) meta_op_line(m, ctx->ops[i], i);
  for (size_t i = 0; i < ctx->nops && rc == WM_OK; i++)
    if (ctx->ops[i]->node) wm_rescale_meta_line(m, "", ctx->ops[i], i, c->cfg.instance);
  for (int i = 0; i < wm_exec_nsources(c->exec) && rc == WM_OK; i++) {
    wm_op *src = wm_exec_source_op(c->exec, i);
    char name[260] = "src-";
    wm_buf_clear(&pos);
    rc = wm_exec_snapshot_source(c->exec, src, &pos);
    if (rc == WM_OK && pos.oom) rc = wm_ctx_error(ctx, "out of memory writing a checkpoint");
    if (rc == WM_OK &&
        wm_op_part_name(src, wm_ckptrun_op_place(ctx, src), c->cfg.instance, name + 4, sizeof name - 4) != 0)
      rc = wm_ctx_error(ctx, "the part name of source '%s' is too long", src->name);
    if (rc == WM_OK && put_part(ud, name, pos.data, pos.len, &ctx->error) != 0) rc = WM_ERR;
    if (rc != WM_OK || (c->mt && src == wm_mt_receiver(c->mt))) continue;
    if (src->node) wm_rescale_meta_line(m, "src-", src, wm_ckptrun_op_place(ctx, src), c->cfg.instance);
    wm_buf_adds(m, "source ");
    wm_buf_adds(m, name + 4);
    wm_buf_addc(m, ' ');
    size_t before = m->len;
    const wm_source_vt *vt = wm_exec_source_vt(c->exec, src);
    if (vt && vt->describe) vt->describe(src, pos.data, pos.len, m);
    if (m->len == before) {
      wm_buf_add_int(m, (int64_t)src->m.records_out);
      wm_buf_adds(m, " records");
    }
    wm_buf_adds(m, " in '");
    wm_buf_adds(m, src->name);
    wm_buf_adds(m, "'\n");
  }
  if (rc == WM_OK && m->oom) rc = wm_ctx_error(ctx, "out of memory writing a checkpoint");
  wm_buf_free(&pos);
  if (rc != WM_OK)
    wm_ctx_error_context(ctx, "\n  while taking checkpoint %" PRIu64 " in %s", sh->id, c->dir);
  return rc;
}

/* The checkpoint is complete: every partitioned source commits the positions it wrote
 * into it to its server (Kafka: the group's offsets, for monitoring; wm_partsrc_commit
 * commits the positions of the last snapshot, so nothing read after the cut is committed).
 * Under mu: no thread takes its part of the next checkpoint meanwhile. A commit that
 * cannot be handed over is reported once and does not fail the job: the positions are the
 * checkpoint's (Kafka's commits are asynchronous: a refusal by the brokers is reported by
 * the source, on its own thread).
 * The sources of the other threads are committed from this one, so the message goes into
 * a buffer of the coordinator's: their contexts belong to their own running threads. */
static void commit_sources_locked(ck_shared *sh) {
  wm_error err;
  for (int t = 0; t < sh->n; t++) {
    struct wm_ckptrun *m = sh->members[t];
    if (!m) continue;
    for (int i = 0; i < wm_exec_nsources(m->exec); i++) {
      wm_op *src = wm_exec_source_op(m->exec, i);
      if (!wm_op_is_partsrc(src) || wm_partsrc_commit_to(src, &err) == WM_OK || sh->commit_warned)
        continue;
      sh->commit_warned = 1;
      fprintf(sh->log, "wmrun: warning: checkpoint %" PRIu64 ": %s (the positions are in the "
                       "checkpoint; only monitoring misses them)\n", sh->id, err.msg);
    }
  }
}

/* Commits the checkpoint every thread has written (under mu); frees the writer. */
static int commit_locked(ck_shared *sh) {
  int crash = ++sh->attempts == sh->crash_at ? sh->crash : CRASH_NONE;
  wm_buf head;
  wm_buf_init(&head);
  wm_buf_adds(&head, META_HEAD);
  wm_buf_adds(&head, "job ");
  wm_buf_adds(&head, sh->jobname ? sh->jobname : "job");
  wm_buf_adds(&head, "\nfinal ");
  wm_buf_adds(&head, sh->final ? "1" : "0");
  wm_buf_adds(&head, "\nthreads ");
  wm_buf_add_int(&head, sh->n);
  wm_buf_adds(&head, "\nmax_parallelism ");
  wm_buf_add_int(&head, sh->groups);
  wm_buf_addc(&head, '\n');
  if (sh->origin) {
    wm_buf_adds(&head, "from-savepoint ");
    wm_buf_adds(&head, sh->origin);
    wm_buf_addc(&head, '\n');
  }
  wm_buf_add(&head, sh->meta.data ? sh->meta.data : "", sh->meta.len);
  wm_ckpt_writer *w = sh->w;
  sh->w = NULL;
  if (head.oom) {
    wm_buf_free(&head);
    wm_ckpt_abort(w);
    snprintf(sh->why, sizeof sh->why, "out of memory");
    sh->why_whole = 0;
    return WM_ERR;
  }
  if (crash == CRASH_AFTER_PARTS) _exit(99);
  if (crash == CRASH_BEFORE_MANIFEST) wm_ckpt_store_crash_before_rename(sh->store);
  sh->bytes += head.len;
  sh->why_whole = 0;
  wm_error e;
  int rc = wm_ckpt_commit(w, head.data, head.len, wm_ckptrun_wall_ms(), &e);
  wm_buf_free(&head);
  if (rc != 0) return why_from(sh, &e);
  if (crash == CRASH_AFTER_MANIFEST) _exit(99);
  commit_sources_locked(sh);
  sh->next_id = sh->id + 1;
  double ms = (double)(uv_hrtime() - sh->t0) / 1e6;
  wm_ckptrun_stats *st = &sh->st;
  st->taken++;
  st->last_id = sh->id;
  st->last_ms = ms;
  st->total_ms += ms;
  if (ms > st->max_ms) st->max_ms = ms;
  st->last_bytes = sh->bytes;
  sh->recent[st->taken % 16] = (wm_obs_ckpt){sh->id, sh->bytes, ms, sh->final};
  if (sh->trace == 2) /* --trace-watermarks=json */
    fprintf(sh->log,
            "{\"kind\":\"checkpoint\",\"id\":%" PRIu64 ",\"final\":%s,\"bytes\":%llu,"
            "\"ms\":%.1f,\"alignment_ms\":%.1f}\n",
            sh->id, sh->final ? "true" : "false", (unsigned long long)sh->bytes, ms, st->align_ms);
  else if (sh->trace)
    fprintf(sh->log, "[checkpoint] %" PRIu64 "%s: %llu bytes in %.1f ms, alignment %.1f ms\n",
            sh->id, sh->final ? " (final)" : "", (unsigned long long)sh->bytes, ms, st->align_ms);
  if (sh->sp_target) /* wmrun savepoint's request */
    wm_savepoint_serve(sh->store, sh->dir, sh->jobname, &sh->sp_target, &sh->sp_nonce, sh->log);
  if (sh->savepoint && !sh->final && sh->stop_sp) { /* --stop-with-savepoint */
    if (wm_savepoint_stop(sh->store, sh->dir, sh->stop_sp, sh->id, sh->log, &e) != 0)
      return why_from(sh, &e);
    if (sh->job) wm_mt_job_saved(sh->job);
  } else if (sh->savepoint && !sh->final) {
    fprintf(sh->log, "wmrun: stopped by SIGTERM with checkpoint %" PRIu64 " in %s (run again "
                     "with the same --checkpoint-dir to resume)\n", sh->id, sh->dir);
    if (sh->job) wm_mt_job_saved(sh->job);
  }
  return WM_OK;
}

/* Tells this thread's observer (a timeline, ctx->observe) of the checkpoints committed since
 * it last looked (under mu): whichever thread committed one, the thread whose context is
 * observed reports it, on its own thread (with barriers it may be a few behind: up to
 * 16 are kept for it). */
static void report_locked(wm_ckptrun *c) {
  ck_shared *sh = c->sh;
  uint64_t n = sh->st.taken, from = c->reported + 1;
  c->reported = n;
  if (!c->ctx->observe) return;
  if (n >= 16 && from < n - 15) from = n - 15;
  for (uint64_t i = from; i <= n; i++) {
    wm_obs ev = {.kind = WM_OBS_CHECKPOINT, .ckpt = &sh->recent[i % 16]};
    c->ctx->observe(c->ctx->observe_ud, NULL, &ev);
  }
}

/* Every thread takes part (in the same order of calls): before the first record, at the
 * end, on one thread also at the interval and on SIGTERM. ok = 0: this thread cannot (its
 * run failed): nothing is committed. The last thread to arrive commits. */
static int take_sync(wm_ckptrun *c, int final, int ok) {
  ck_shared *sh = c->sh;
  uv_mutex_lock(&sh->mu);
  while (sh->ready < sh->n)
    if (wait_locked(sh) != 0) {
      uv_mutex_unlock(&sh->mu);
      return WM_OK; /* the job's failure is what is reported */
    }
  uint64_t gen = sh->gen;
  if (sh->w && sh->async) { /* one under way with barriers will not complete now */
    wm_ckpt_abort(sh->w);
    sh->w = NULL;
    sh->async = 0;
    /* a SIGTERM's: the threads that hold for it go on to the end (this thread's inputs have
     * ended, so it cannot take its part: the job drains instead of stopping) */
    if (sh->job) wm_mt_cancel_stop_checkpoint(sh->job, sh->id);
  }
  if (!sh->w && sh->sync_arrived == 0 && begin_locked(sh, final, 0) != WM_OK) sh->bad = 1;
  if (!ok || !sh->w) {
    sh->bad = 1;
  } else if (write_part_locked(c) != WM_OK) {
    sh->bad = 1;
    snprintf(sh->why, sizeof sh->why, "%s", wm_ctx_errtext(c->ctx));
    sh->why_whole = 1; /* write_part_locked added "while taking checkpoint" */
  }
  int st = sh->job ? wm_mt_job_state(sh->job) : 0;
  if (++sh->sync_arrived == sh->n) {
    if (sh->bad || (st != 0 && final)) {
      if (sh->w) wm_ckpt_abort(sh->w);
      sh->w = NULL;
      sh->last_rc = sh->bad && ok ? WM_ERR : WM_OK;
    } else {
      sh->last_rc = commit_locked(sh);
    }
    sh->sync_arrived = sh->bad = 0;
    sh->gen++;
    uv_cond_broadcast(&sh->cond);
  } else {
    while (sh->gen == gen)
      if (wait_locked(sh) != 0) {
        uv_mutex_unlock(&sh->mu);
        return WM_OK;
      }
  }
  int rc = ok ? sh->last_rc : WM_OK;
  if (rc != WM_OK && strcmp(wm_ctx_errtext(c->ctx), sh->why) != 0) {
    if (sh->why_whole) wm_ctx_error(c->ctx, "%s", sh->why);
    else wm_ckptrun_set_err(c, sh->why);
  }
  report_locked(c);
  uv_mutex_unlock(&sh->mu);
  return rc;
}

int wm_ckptrun_take(wm_ckptrun *c, int final) { return take_sync(c, final, 1); }
int wm_ckptrun_take_final(wm_ckptrun *c, int ok) { return take_sync(c, 1, ok); }

int wm_ckptrun_savepoint(void *ud) {
  wm_ckptrun *c = ud;
  ck_shared *sh = c->sh;
  if (sh->n == 1) {
    uv_mutex_lock(&sh->mu);
    sh->savepoint = 1;
    uv_mutex_unlock(&sh->mu);
    return take_sync(c, 0, 1);
  }
  if (c->cfg.instance != 0) return WM_STOP; /* thread 1 leads */
  uv_mutex_lock(&sh->mu);
  sh->savepoint = 1;
  uint64_t id = 0;
  while (sh->ready < sh->n && wait_locked(sh) == 0) {
  }
  if (sh->w && sh->async) {
    /* one under way (the interval's) is given up: the threads that have cut for it went on
     * past their cut, and a stop must emit nothing past its own. A new one, with the next
     * number: a thread cuts once for an id */
    wm_ckpt_abort(sh->w);
    sh->w = NULL;
    sh->async = 0;
    sh->next_id = sh->id + 1;
  }
  if (!sh->w && sh->ready == sh->n && begin_locked(sh, 0, 1) == WM_OK) id = sh->id;
  int rc = sh->w ? WM_STOP : wm_ckptrun_set_err(c, sh->why);
  uv_mutex_unlock(&sh->mu);
  if (id) wm_mt_request_stop_checkpoint(sh->job, id); /* the threads hold once they cut */
  return rc;
}

/* ---- several threads: barriers (wm_mt.h) ------------------------------------------------- */

static int take_periodic(void *ud) {
  wm_ckptrun *c = ud;
  ck_shared *sh = c->sh;
  if (sh->n == 1) return take_sync(c, 0, 1);
  uv_mutex_lock(&sh->mu);
  uint64_t id = 0;
  int rc = WM_OK;
  if (!sh->w && sh->ready == sh->n) { /* else the last one is still under way */
    if (begin_locked(sh, 0, 1) == WM_OK) id = sh->id;
    else rc = wm_ckptrun_set_err(c, sh->why);
  }
  report_locked(c);
  uv_mutex_unlock(&sh->mu);
  if (id) wm_mt_request_checkpoint(sh->job, id);
  return rc;
}

static int hook_snapshot(void *ud, uint64_t id) {
  wm_ckptrun *c = ud;
  ck_shared *sh = c->sh;
  uv_mutex_lock(&sh->mu);
  int rc = sh->w && sh->async && sh->id == id ? write_part_locked(c) : WM_OK;
  uv_mutex_unlock(&sh->mu);
  return rc;
}

static int hook_channel(void *ud, uint64_t id, int from, const void *data, size_t len) {
  wm_ckptrun *c = ud;
  ck_shared *sh = c->sh;
  char name[64];
  snprintf(name, sizeof name, "chan-%d-%d", from, c->cfg.instance);
  uv_mutex_lock(&sh->mu);
  int rc = WM_OK;
  if (sh->w && sh->async && sh->id == id) {
    sh->bytes += len;
    if (wm_ckpt_put(sh->w, name, data, len, &c->ctx->error) != 0) rc = WM_ERR;
  }
  uv_mutex_unlock(&sh->mu);
  return rc;
}

static int hook_done(void *ud, uint64_t id) {
  wm_ckptrun *c = ud;
  ck_shared *sh = c->sh;
  uv_mutex_lock(&sh->mu);
  int rc = WM_OK;
  if (sh->w && sh->async && sh->id == id && ++sh->arrived == sh->n) {
    sh->st.align_ms += (double)(uv_hrtime() - sh->t0) / 1e6;
    sh->arrived = 0;
    if (commit_locked(sh) != WM_OK) rc = wm_ckptrun_set_err(c, sh->why);
  }
  report_locked(c);
  uv_mutex_unlock(&sh->mu);
  return rc;
}

/* wmrun savepoint's request (SIGUSR2, or one left before the handler was there): the next
 * checkpoint to complete is copied to its target (wm_savepoint_serve); one is asked for
 * now. */
static void check_request(wm_ckptrun *c, int now) {
  ck_shared *sh = c->sh;
  uv_mutex_lock(&sh->mu);
  int got = wm_savepoint_next_request(c->dir, &sh->sp_target, &sh->sp_nonce, c->cfg.log);
  uv_mutex_unlock(&sh->mu);
  if (got && now && take_periodic(c) != WM_OK) wm_exec_fail(c->exec);
}

static void on_usr2(uv_signal_t *h, int signum) {
  (void)signum;
  check_request(h->data, 1);
}

int wm_ckptrun_start(wm_ckptrun *c) {
  if (c->cfg.instance == 0 && !strstr(c->dir, "://")) {
    if (wm_savepoint_watch(wm_exec_loop(c->exec), &c->usr2, &c->usr2_open, on_usr2, c) != WM_OK)
      return wm_ctx_error(c->ctx, "cannot watch SIGUSR2 (wmrun savepoint's requests)");
    check_request(c, c->sh->n == 1); /* sent before the handler was there */
  }
  if (c->mt) {
    wm_mt_ckpt_hooks h = {.snapshot = hook_snapshot, .put_channel = hook_channel,
                          .done = hook_done, .ud = c};
    wm_mt_set_checkpoints(c->mt, &h);
  }
  /* with several threads thread 1's timer asks for them */
  int64_t iv = c->cfg.instance == 0 ? c->cfg.interval : 0;
  wm_exec_set_checkpoints(c->exec, iv, take_periodic, wm_ckptrun_savepoint, c);
  return WM_OK;
}

void wm_ckptrun_stats_get(const wm_ckptrun *c, wm_ckptrun_stats *st) {
  uv_mutex_lock(&c->sh->mu);
  *st = c->sh->st;
  uv_mutex_unlock(&c->sh->mu);
}

void wm_ckptrun_print_stats(const wm_ckptrun *c, FILE *f) {
  wm_ckptrun_stats stats;
  wm_ckptrun_stats_get(c, &stats);
  const wm_ckptrun_stats *s = &stats;
  fprintf(f, "checkpoints: %llu taken", (unsigned long long)s->taken);
  if (s->taken)
    fprintf(f, ", last %" PRIu64 " (%llu bytes, %.1f ms), mean %.1f ms, max %.1f ms, "
               "alignment %.1f ms", s->last_id, (unsigned long long)s->last_bytes, s->last_ms,
            s->total_ms / (double)s->taken, s->max_ms, s->align_ms);
  if (s->restored_id) fprintf(f, "; resumed from %" PRIu64, s->restored_id);
  fprintf(f, " (%s)\n", c->dir);
}
