/* The bindings: the only C that includes Lua. This header is the bridge (lwm_bridge.c):
 * the job run's state, user functions called from the core, Lua values held by C. Each other
 * binding file declares what it offers in its own header (lwm_ops.h, lwm_plan.h, ...;
 * docs/architecture.md draws their order). */
#ifndef LWM_H
#define LWM_H

#include <lauxlib.h>
#include <lua.h>

#include "base/wm_buf.h"
#include "time/wm_time.h"
#include "exec/wm_exec.h"
#include "graph/wm_graph.h"
#include "timeline/wm_timeline.h"
#include "ops/wm_tsop.h"
#include "ops/wm_winop.h"

#define LWM_VERSION "0.1.0"

/* One job run: the Lua state, the stack positions that stay put while the job runs, the
 * slot table's reference counts and the core context. */
/* A part of an operator being built that a Lua error raised while the builder reads the plan
 * (running out of memory) would leak: the builder lists it here until the operator owns it,
 * and the protected graph build frees what is still listed when the build fails. */
typedef struct lwm_pending {
  struct lwm_pending *next;
  void (*free)(void *ud);
  void *ud;
} lwm_pending;

#define LWM_ROWKEYS 8

typedef struct lwm_bridge {
  lua_State *L;
  int msgh;   /* stack index of the message handler */
  int slots;  /* stack index of the slot table */
  int fns;    /* stack index of the per-job table of user functions and objects */
  int nfns;
  uint32_t *refs; /* reference count per slot; 0 = free */
  uint32_t *free_slots;
  uint32_t nslots, capslots, nfree;
  wm_ctx ctx;
  wm_exec *exec;
  int downstream_failed; /* an emit from inside a Lua callback failed (message in ctx.error) */
  int instance, parallelism; /* the instance being built (1-based) and its operator's count */
  /* the multi-core executor (lwm_mt.c): this thread's part (NULL on one thread), the
   * thread's index (0-based) and count, and a fingerprint of the graph built */
  struct wm_mt_local *mt;
  struct wm_mt_job *mtjob;
  int thread, nthreads;
  uint64_t fingerprint;
  int64_t watermark_interval;
  int gc_step;
  /* the job has parts that wait for watermarks: set by the builders for event-time windows
   * and event-time triggers, and when a process function or a custom trigger registers an
   * event-time timer (the "no watermark" warning is only about those) */
  int event_time;
  /* the window being built merges the partials of a local pre-aggregation (lwm_graph.c,
   * docs/performance.md "Pre-aggregation"): LWM_PRE_FIRST (sum, min, max: its first records
   * go by input channel) or LWM_PRE_COUNT (count: it adds up the partials' counts); 0 none */
  int preagg;
  /* interrupting a runaway function (lwm_core.c): nesting of lwm_call, and the hook's
   * instruction-count ticks since the outermost call began */
  int depth, hook_ticks;
  int gcstress; /* WM_GCSTRESS=1: a full collection after every call of a user function */
  lwm_pending *pending; /* parts of the operators being built (lwm_pending_add) */
  /* The field names of row schemas as interned Lua strings (lwm_bridge.c), so that a row
   * becomes a table without hashing its C names: per schema a list of its names in the fns
   * table at index ref (0: none yet), the schema retained while cached (released by
   * lwm_unregister, so a cached pointer is never a freed schema's). Direct-mapped: a job of
   * more schemas only misses more often. */
  struct lwm_rowkeys {
    wm_schema *schema;
    int ref;
  } rowkeys[LWM_ROWKEYS];
} lwm_bridge;

/* Checkpoint hooks of a Lua part (docs/checkpoints.md, "User state in Lua"): the object
 * that is `self` and its snapshot(self) / restore(self, t) methods, as fns indexes (all 0:
 * the part has none). */
typedef struct lwm_hooks {
  int self, snapshot, restore;
} lwm_hooks;

/* Per operator: its user function(s) and where it was defined. */
typedef struct lwm_opinfo {
  lwm_bridge *B;
  int fn;        /* index in the fns table of the main function (0 if none) */
  int fn2, fn3, fn4, fn5; /* further functions (aggregate parts, process_fn, ...) */
  int keep;      /* a slot that keeps a Lua function's last result alive (keys; map's
                  * result table while it goes downstream, reused when nobody kept it) */
  int busy;      /* map: keep is being emitted (a nested call takes a slot of its own) */
  int reads_only; /* the function only reads its first argument's fields (lwm_escape.c) */
  int rowtab;    /* reads_only: the table rows are given in, refilled per row (lwm_push_arg) */
  wm_schema *rowschema; /* its schema (retained) */
  char *where;   /* "job.lua:12" */
  wm_op *op;
  lwm_hooks hooks; /* checkpoint methods of a generator, source, process fn or trigger */
} lwm_opinfo;

/* Re-entering the bridge from a C function that Lua called (out(), emit_watermark(),
 * harness methods): stack indexes are per call frame, so B->msgh/slots/fns are pushed
 * again on the caller's frame and restored by lwm_leave. lwm_register stores them in the
 * registry (keyed by B) once they are on the stack; lwm_unregister drops them. */
typedef struct lwm_frame {
  lua_State *L;
  int msgh, slots, fns, top;
} lwm_frame;
void lwm_register(lwm_bridge *B);
void lwm_unregister(lwm_bridge *B);
void lwm_enter(lwm_bridge *B, lua_State *L, lwm_frame *f);
/* The end of a C callback that emitted into the core: 0, or, when rc failed, a Lua error
 * that unwinds the user's function (the real message stays in B->ctx.error). */
int lwm_callback_done(lwm_bridge *B, lua_State *L, int rc);
void lwm_leave(lwm_bridge *B, const lwm_frame *f);

/* Slots: a Lua value held by C (records in windows, accumulators). */
uint32_t lwm_slot_new(lwm_bridge *B, int idx); /* value at idx; refcount 1; 0 on failure */
void lwm_slot_retain(void *ud, uint32_t slot);
void lwm_slot_release(void *ud, uint32_t slot);

/* Pushes a core value as a Lua value. */
void lwm_push_value(lwm_bridge *B, const wm_value *v);
/* A record as a Lua function's first argument: for a function that only reads its fields
 * (oi->reads_only), a row fills the operator's one table; else as lwm_push_value. */
void lwm_push_arg(lwm_bridge *B, lwm_opinfo *oi, const wm_value *rec);
/* 1 when the Lua function at idx provably only reads fields of its first argument
 * (lwm_escape.c): it cannot keep, pass on or change the table it is given. */
int lwm_reads_arg_only(lua_State *L, int idx);
/* Converts the Lua value at idx into a wm_value: scalars directly (strings borrowed from
 * the Lua stack, so the value must stay there), anything else into a new slot (owned:
 * release it with wm_value_release). */
int lwm_to_value(lwm_bridge *B, int idx, wm_value *out);

/* Appends the Lua value at idx as print shows it. */
void lwm_format_lua(lua_State *L, int idx, wm_buf *b, int json, int depth);

/* Calls the function at fns[fn] with nargs arguments already pushed above it (the
 * function must be pushed first with lwm_push_fn). On error, writes the message into
 * B->ctx.error naming the operator and (when rec is given) the record, and returns WM_ERR.
 * Leaves nres results on success. */
void lwm_push_fn(lwm_bridge *B, int fn);
/* Stores the value on top of the stack in the fns table (popped); its index. */
int lwm_store_fn(lwm_bridge *B);
/* Argument arg of the running C function (out(record), ctx:output(tag, record)) must be a
 * record: a lauxlib argument error for nil or none. */
void lwm_check_record(lua_State *L, int arg);
/* out(record) and ctx:output(tag, record) of user code: emits argument arg of the running
 * C function (checked with lwm_check_record) on op's port with timestamp ts; returns what
 * the lua_CFunction returns (a Lua error when the emit failed downstream). */
int lwm_emit_arg(lwm_bridge *B, lua_State *L, wm_op *op, int port, int arg, int64_t ts);
int lwm_call(lwm_opinfo *oi, int nargs, int nres, const wm_value *rec);

/* Error with the operator's name and definition line, and the record. */
int lwm_op_error(lwm_opinfo *oi, const wm_value *rec, const char *fmt, ...);

/* Sets up a bridge on L (lwm_bridge.c): the core context with the host hooks, and the
 * message handler, slot table and fns table pushed on L's stack (registered with
 * lwm_register). 0, or -1 with the error (running out of memory) on the stack instead. */
int lwm_bridge_init(lwm_bridge *B, lua_State *L);
/* Lists a part being built (free(ud) frees it); NULL when out of memory (nothing listed). */
lwm_pending *lwm_pending_add(lwm_bridge *B, void (*free_fn)(void *), void *ud);
/* The part is owned elsewhere now: off the list (p may be NULL). */
void lwm_pending_done(lwm_bridge *B, lwm_pending *p);
/* Frees every part still listed (a failed build). */
void lwm_pending_free_all(lwm_bridge *B);

#endif
