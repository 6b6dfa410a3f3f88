/* The multi-core executor (lwm_mt.c). */
#ifndef LWM_MT_H
#define LWM_MT_H

#include "lwm.h"

/* How the host runs the job script in a new Lua state (wmrun registers it): runs it as it
 * ran it first; returns a lua_pcall status, with the error message on L's stack. */
typedef struct lwm_spawn {
  int (*run)(lua_State *L, void *ud);
  void *ud; /* must stay valid while the job runs */
} lwm_spawn;
void lwm_set_spawn(lua_State *L, const lwm_spawn *s);
/* The thread (1-based) whose Lua state L is: 1 for the state that called execute(). */
int lwm_mt_thread(lua_State *L);

typedef struct lwm_mt_run lwm_mt_run;
struct wm_mt_job;
/* Called by execute() before anything is built. Returns 1 when this execute() is to be
 * skipped (an earlier execute() in a worker's script); otherwise 0 with *job NULL (one
 * thread) or set: on thread 1 the job was created and threads 2..n started (*run set,
 * finish with lwm_mt_finish); in a worker, *thread is the worker's index. Raises Lua
 * errors for misuse. */
int lwm_mt_prepare(lua_State *L, int env, lwm_mt_run **run, struct wm_mt_job **job, int *thread,
                   int *nthreads);
/* After the run: reports this thread's result to the job; on thread 1 (run != NULL) also
 * waits for every thread, frees the job and returns the job's result (message in
 * B->ctx.error). */
int lwm_mt_finish(lwm_bridge *B, lwm_mt_run *run, int rc);
/* Ends a worker's job script after its execute() (raises a private error value). */
int lwm_mt_stop_script(lua_State *L);
/* Around the build: attach after the executor exists, barrier after the build, detach
 * after the run. */
int lwm_mt_attach(lwm_bridge *B);
int lwm_mt_barrier(lwm_bridge *B, int rc);
void lwm_mt_detach(lwm_bridge *B);
/* --metrics of one thread, with a "thread k:" header, not interleaved with the others. */
void lwm_mt_metrics(lwm_bridge *B, FILE *f);

#endif
