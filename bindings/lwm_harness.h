/* wm.testing's harness, shared by its two files: lwm_harness.c (the harness: building it,
 * h:push and the other calls, the virtual clock, outputs, metrics, checkpoints) and
 * lwm_replay.c (wm.lab's arrival replay: recorded data sets, h:replay, h:replay_inputs, and
 * core.signal_watch). Internal to the bindings; lwm_replay.c calls lwm_harness.c, never
 * the other way (spec/layers_spec.lua): it adds its methods to the harness's metatable. */
#ifndef LWM_HARNESS_H
#define LWM_HARNESS_H

#include "time/wm_timer.h"
#include "timeline/wm_timeline.h"
#include "lwm.h"

#define HARNESS_MT "wm.Harness"

typedef struct harness {
  lwm_bridge B;
  int ready, failed, closed, finished;
  int fed; /* something was pushed, or the clock moved: too late for h:restore */
  wm_op *input;   /* inputs[0]: the one that h:push, h:watermark and h:status feed */
  wm_op **inputs; /* the input nodes (opts.inputs; default {opts.input}) */
  int ninputs;
  int channels;
  wm_op *capture; /* the result's main output */
  int outputs;    /* fns index of the outputs table: tag ("" = main) -> {values, ts} */
  int64_t now;
  int64_t interval;
  wm_timers *pt;  /* processing-time timers: payload = operator index */
  uint64_t pt_seq;
  wm_op **tsops;
  int64_t *next_periodic;
  int ntsops;
  wm_timeline *tl; /* records the run for h:timeline(path) */
  int tl_borrowed; /* tl is wmrun's --timeline recorder (opts.timeline), not the harness's */
  /* SIGINT/SIGTERM/SIGHUP during h:replay_inputs (lwm_h_replay_signalled) */
  int signals, no_drain, draining, aborted;
  const wm_exec *watch; /* h:replay's opts.watch (core.signal_watch): a signal aborts it */
  int discard;     /* h:replay without keep_output: results are not stored */
} harness;

#define SIGWATCH_MT "wm.sigwatch"
typedef struct sigwatch {
  wm_ctx ctx;
  wm_exec *exec; /* NULL once closed */
} sigwatch;

/* ---- lwm_harness.c ---- */
/* wm.core.harness(env, opts) and the harness's metatable. */
int lwm_harness_new(lua_State *L);
void lwm_harness_open(lua_State *L);
/* Starts a method on harness argument 1 (raises when it is closed, unbuilt or failed). */
harness *lwm_h_begin(lua_State *L, lwm_frame *fr);
/* Ends a method: on failure raises the pipeline's error (message in ctx.error), else returns
 * the nres results pushed above the frame. */
int lwm_h_end(lua_State *L, harness *H, lwm_frame *fr, int rc, int nres);
/* Lets the asynchronous sinks make progress (final: until they have written everything). */
int lwm_h_pump(harness *H, int final);
/* Runs everything due at or before upto on the virtual clock, in time order. */
int lwm_h_advance_to(harness *H, int64_t upto);
/* A signal during a replay: sets H->draining or H->aborted. */
void lwm_h_replay_signalled(harness *H);

/* ---- lwm_replay.c ---- */
/* "interrupted by SIGINT" (SIGTERM, SIGHUP) */
const char *lwm_sig_text(int sig);
/* h:replay(data, opts) and h:replay_inputs({data, ...}[, opts]) */
int lwm_h_replay(lua_State *L);
int lwm_h_replay_inputs(lua_State *L);

#endif
