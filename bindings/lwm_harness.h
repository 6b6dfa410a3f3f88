/* wm.testing's harness, shared by lwm_harness.c (the harness: building it, h:push and the
 * other calls, the virtual clock, outputs, metrics, checkpoints), lwm_replay.c (wm.lab's
 * arrival replay: h:replay, h:replay_inputs) and lwm_lab_measure.c (the lab's measures).
 * Internal to the bindings; those two call lwm_harness.c, never the other way
 * (spec/layers_spec.lua): lwm_replay.c adds its methods to the harness's metatable. */
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
  struct lwm_rectrace *rt; /* trace = "json,records": the keyed events' observer */
  /* SIGINT/SIGTERM/SIGHUP during h:replay_inputs (lwm_h_replay_signalled) */
  int signals, no_drain, draining, aborted;
  const wm_exec *watch; /* h:replay's opts.watch (core.signal_watch): a signal aborts it */
  int discard;     /* h:replay without keep_output: results are not stored */
} harness;

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

#endif
