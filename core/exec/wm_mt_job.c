/* The job of the multi-core executor (wm_mt.h): the queues between every pair of threads,
 * the barrier after the build, the job's state and first failure, checkpoint requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/wm_mt_job.h"

/* ---- the job ---------------------------------------------------------------------- */


wm_mt_job *wm_mt_job_new(int n, size_t queue_batches, wm_error *err) {
  wm_mt_job *j = calloc(1, sizeof *j);
  if (!j || !(j->q = calloc((size_t)(n * n), sizeof *j->q)) ||
      !(j->ret = calloc((size_t)(n * n), sizeof *j->ret)) ||
      !(j->w = calloc((size_t)n, sizeof *j->w)) || !(j->fp = calloc((size_t)n, sizeof *j->fp))) {
    if (j) {
      free(j->q);
      free(j->ret);
      free(j->w);
    }
    free(j);
    wm_error_set(err, "out of memory creating the threads' queues");
    return NULL;
  }
  j->n = n;
  if (!(j->board = wm_mboard_new(n))) {
    wm_error_set(err, "out of memory creating the threads' metrics");
    wm_mt_job_free(j);
    return NULL;
  }
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++)
      if (a != b && (!(j->q[a * n + b] = wm_spsc_new(queue_batches)) ||
                     !(j->ret[a * n + b] = wm_spsc_new(queue_batches)))) {
        wm_error_set(err, "out of memory creating the threads' queues");
        j->n = n;
        wm_mt_job_free(j);
        return NULL;
      }
  if (uv_mutex_init(&j->mu) != 0 || uv_mutex_init(&j->out_mu) != 0 || uv_cond_init(&j->cond) != 0) {
    wm_error_set(err, "cannot create the job's locks");
    abort(); /* not expected on Linux; nothing sensible to unwind */
  }
  for (int i = 0; i < n; i++)
    if (uv_mutex_init(&j->w[i].mu) != 0) abort();
  atomic_init(&j->state, 0);
  atomic_init(&j->ck_req, 0);
  atomic_init(&j->ck_stop, 0);
  return j;
}

void wm_mt_job_free(wm_mt_job *j) {
  if (!j) return;
  for (int i = 0; i < 2 * j->n * j->n; i++) {
    wm_spsc *q = i < j->n * j->n ? j->q[i] : j->ret[i - j->n * j->n];
    if (!q) continue;
    batch *b;
    while ((b = wm_spsc_pop(q))) { /* batches never consumed, or returned and not reused */
      free(b->data);
      free(b);
    }
    wm_spsc_free(q);
  }
  free(j->q);
  free(j->ret);
  free(j->w);
  free(j->fp);
  if (j->shared && j->shared_free) j->shared_free(j->shared);
  wm_mboard_free(j->board);
  free(j);
}

wm_mboard *wm_mt_job_board(wm_mt_job *j) { return j->board; }

void *wm_mt_job_shared(wm_mt_job *j, void *(*make)(void *arg), void *arg, void (*free_fn)(void *)) {
  uv_mutex_lock(&j->mu);
  if (!j->shared && make) {
    j->shared = make(arg);
    j->shared_free = free_fn;
  }
  void *r = j->shared;
  uv_mutex_unlock(&j->mu);
  return r;
}

void wm_mt_request_checkpoint(wm_mt_job *j, uint64_t id) {
  uint64_t cur = atomic_load(&j->ck_req);
  while (cur < id && !atomic_compare_exchange_weak(&j->ck_req, &cur, id)) {
  }
  for (int t = 0; t < j->n; t++) wm_mt_wake(j, t);
}

void wm_mt_request_stop_checkpoint(wm_mt_job *j, uint64_t id) {
  atomic_store(&j->ck_stop, id); /* before the request: whoever learns of id sees it */
  wm_mt_request_checkpoint(j, id);
}

void wm_mt_cancel_stop_checkpoint(wm_mt_job *j, uint64_t id) {
  uint64_t cur = id;
  if (id && atomic_compare_exchange_strong(&j->ck_stop, &cur, 0))
    for (int t = 0; t < j->n; t++) wm_mt_wake(j, t);
}

uint64_t wm_mt_stop_checkpoint(wm_mt_job *j) { return atomic_load(&j->ck_stop); }

int wm_mt_job_threads(const wm_mt_job *j) { return j->n; }

void wm_mt_wake(wm_mt_job *j, int t) {
  mt_worker *w = &j->w[t];
  uv_mutex_lock(&w->mu);
  if (w->open) uv_async_send(&w->wake);
  uv_mutex_unlock(&w->mu);
}

static void set_state(wm_mt_job *j, int state, const wm_error *e) {
  uv_mutex_lock(&j->mu);
  int first = atomic_load(&j->state) == 0;
  if (first) {
    if (e) j->err = *e;
    atomic_store(&j->state, state);
  }
  uv_mutex_unlock(&j->mu);
  if (first)
    for (int t = 0; t < j->n; t++) wm_mt_wake(j, t);
}

void wm_mt_job_fail(wm_mt_job *j, const wm_error *e) { set_state(j, 1, e); }
void wm_mt_job_saved(wm_mt_job *j) { set_state(j, 3, NULL); }
void wm_mt_job_abort(wm_mt_job *j) { set_state(j, 2, NULL); }
int wm_mt_job_state(wm_mt_job *j) { return atomic_load(&j->state); }
const wm_error *wm_mt_job_error(wm_mt_job *j) { return &j->err; }
void wm_mt_job_lock(wm_mt_job *j) { uv_mutex_lock(&j->out_mu); }
void wm_mt_job_unlock(wm_mt_job *j) { uv_mutex_unlock(&j->out_mu); }

int wm_mt_job_barrier(wm_mt_job *j, int thread, int ok, uint64_t fp) {
  uv_mutex_lock(&j->mu);
  j->fp[thread] = fp;
  if (!ok) j->bad = 1;
  if (++j->arrived == j->n) uv_cond_broadcast(&j->cond);
  while (j->arrived < j->n) uv_cond_wait(&j->cond, &j->mu);
  int rc = j->bad ? -1 : 0;
  int diff = -1;
  for (int t = 1; rc == 0 && t < j->n; t++)
    if (j->fp[t] != j->fp[0]) {
      diff = t;
      rc = -1;
    }
  uv_mutex_unlock(&j->mu);
  if (diff > 0) {
    wm_error e;
    wm_error_set(&e,
                 "thread %d built a different job than thread 1: every thread runs the job script, "
                 "and its top-level code must build the same job each time (see docs/parallelism.md)",
                 diff + 1);
    wm_mt_job_fail(j, &e);
  }
  return rc;
}

void wm_mt_job_absent(wm_mt_job *j, int thread) {
  uv_mutex_lock(&j->mu);
  j->fp[thread] = 0;
  j->bad = 1;
  if (++j->arrived == j->n) uv_cond_broadcast(&j->cond);
  uv_mutex_unlock(&j->mu);
}

