/* The bindings: the only C that includes Lua. */
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
  int downstream_failed; /* an emit from inside a Lua callback failed (message in ctx.err) */
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
 * that unwinds the user's function (the real message stays in B->ctx.err). */
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
 * B->ctx.err naming the operator and (when rec is given) the record, and returns WM_ERR.
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

/* Builds the core graph of an env's plan (the table at env_idx) and runs it. */
int lwm_execute(lua_State *L);

/* Operators implemented with Lua calls (lwm_ops.c); each returns NULL on failure. */
wm_op *lwm_map_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int kind);
wm_op *lwm_sink_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int collect);
wm_op *lwm_pass_new(lwm_bridge *B, const char *name);
/* vt->free of operators whose impl is (or starts with) an lwm_opinfo. */
void lwm_op_free_info(wm_op *op);
/* A source operator whose impl starts with oi (owned from now on, freed on failure): creates
 * it, points oi->op at it and registers its driver. NULL on failure (message in ctx.err). */
wm_op *lwm_source_new(lwm_bridge *B, const wm_op_vt *vt, lwm_opinfo *oi, const char *name,
                      const wm_source_vt *svt);
wm_op *lwm_elements_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, lua_Integer count);
int lwm_tsx_lua(wm_tsx *x, lwm_opinfo *oi);
int lwm_keysel_lua(wm_keysel *ks, lwm_opinfo *oi);
/* A window function in Lua; pfn: the process function of reduce/aggregate (0: none). */
int lwm_winfn_lua(wm_winfn *fn, lwm_opinfo *oi, const char *kind, int pfn);
/* The same for a pre-aggregated window (docs/performance.md, "Pre-aggregation"), mode
 * LWM_WL_PARTIAL: the local operator of a part, which emits the partial {key, acc} (acc
 * the reduced record, or the accumulator, not result(acc)); LWM_WL_MERGE: the window,
 * which folds the partials' acc of each channel apart and the channels in order at its
 * firing (reduce: with fn, aggregate: with merge, then result). */
enum { LWM_WL_PLAIN = 0, LWM_WL_PARTIAL = 1, LWM_WL_MERGE = 2 };
int lwm_winfn_lua_pre(wm_winfn *fn, lwm_opinfo *oi, const char *kind, int pfn, int mode);
/* Pushes a window as a table {start, stop, max_timestamp}. */
void lwm_push_window(lua_State *L, wm_window win, int64_t max_ts);
lwm_opinfo *lwm_opinfo_new(lwm_bridge *B, const char *where);
void lwm_opinfo_free(void *ud);

enum { LWM_MAP = 1, LWM_FILTER, LWM_FLAT_MAP };

/* ---- Lua states (lwm_state.c), below everything ------------------------------------ */
/* A new Lua state as luaL_newstate makes it, but whose memory comes from a wm_pool of its
 * own (one state, one thread); NULL when out of memory. Close it with lwm_closestate. */
lua_State *lwm_newstate(void);
/* lua_close, then frees the state's pool (any state: one of luaL_newstate is just closed). */
void lwm_closestate(lua_State *L);

/* ---- the builders' toolbox (lwm_plan.c), below every builder ---------------------------- */

/* Plan reading: field k of the node table at idx. Strings stay valid while the plan lives. */
const char *lwm_get_str(lua_State *L, int idx, const char *k);
/* What the state of a Lua reduce or aggregate function of the plan node at idx means, for the
 * checks of a resume (wm_winop_config.meaning; lwm_window.c); "" for other kinds (fk). */
void lwm_fn_meaning(lua_State *L, int idx, const char *fk, char *out, size_t n);
lua_Integer lwm_get_int(lua_State *L, int idx, const char *k, lua_Integer dflt);
/* Stores field k of the table at idx in the per-job fns table; its index, or 0 if absent. */
int lwm_get_fn(lwm_bridge *B, int idx, const char *k);
/* Argument arg of the running C function as an integer number of ms, or a lauxlib
 * argument error (bad argument #1 to 'emit_watermark' (...)). */
int64_t lwm_check_millis(lua_State *L, int arg);
/* Pushes fields keys[0..n-1] of the user's object at idx, read with its metamethods under a
 * protected call: 0, or -1 with the error message pushed instead (one value). */
int lwm_pget_fields(lwm_bridge *B, int idx, const char *const *keys, int n);
/* The key selector of a keyed node (node.key: {fields = {...}} or {fn = f}); 0 or -1. */
int lwm_build_keysel(lwm_bridge *B, int node, const char *where, wm_keysel *ks);
/* The same from another field of the node (keyed connected streams: "key2"). */
int lwm_build_keysel_of(lwm_bridge *B, int node, const char *field, const char *where,
                        wm_keysel *ks);

/* Reads the methods snapshot and restore of the object at idx (with its metamethods); both
 * or neither must be functions. 0, or -1 with "<where>: <what>: ..." in B->ctx.err. */
int lwm_hooks_read(lwm_bridge *B, int idx, lwm_hooks *h, const char *what, const char *where);
/* oi->hooks.self:snapshot() as an owned value *out (it must return a table), and
 * self:restore(t) with t pushed from state; ud is an lwm_opinfo (or a struct that starts
 * with one): the core's snapshot / restore entries of generators, process functions and
 * triggers take these. Called for operator op, errors name it. WM_OK or WM_ERR. */
int lwm_opinfo_snapshot(void *ud, wm_op *op, wm_value *out);
int lwm_opinfo_restore(void *ud, wm_op *op, const wm_value *state);
/* Notes a part of the job (e.g. "the custom watermark generator of for_generator at
 * job.lua:4") built at `where` (the job line of its operator) whose state a checkpoint
 * cannot hold, and how to fix it; noted once per part and line (parallel instances). */
void lwm_note_uncheckpointable(lwm_bridge *B, const char *part, const char *where,
                               const char *fix);
/* Called by the checkpoint coordinator before the first record when checkpointing is on,
 * after the build: WM_OK when every Lua part of the job built in B can be checkpointed,
 * else WM_ERR with the message in B->ctx.err naming each part, its job line and the fix
 * ("give it snapshot(self) and restore(self, t) methods"). */
int lwm_check_checkpointable(lwm_bridge *B);

/* Checkpoints of B's prepared context with the bindings' codec (lwm_ckpt.c): pushes the
 * parts of a snapshot as a table {[part name] = bytes}; restores from such a table at idx
 * (before the first record). WM_OK, or WM_ERR with the message in B->ctx.err (nothing
 * pushed). instance: as for wm_ctx_snapshot (the executor thread's index, 0 on one). */
int lwm_snapshot_parts(lwm_bridge *B, int instance);
int lwm_restore_parts(lwm_bridge *B, int instance, int idx);
/* wm.core._checkpoint_sources(env[, positions]) -> positions: the specs' way to the sources'
 * positions before the coordinator runs whole jobs (lwm_ckpt.c). */
int lwm_checkpoint_sources(lua_State *L);

/* ---- the graph (lwm_graph.c), above the node builders --------------------------------- */

/* Builds the whole graph of the env table at env_idx: instances, exchanges, edges.
 * *outop / *outport (caller frees) give, per node id (1..*n), its first instance and port. */
int lwm_build_graph(lwm_bridge *B, int env_idx, wm_op ***outop, int **outport, lua_Integer *n);

/* Node builders, one per area: each returns 1 and sets *op (NULL on failure, with the
 * message in B->ctx.err) when it knows the node kind, and 0 when it does not. */
int lwm_build_io(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                 wm_op **op);
/* LWM_PRE_REDUCE, LWM_PRE_AGG: a Lua reduce, a Lua aggregate with merge (their partials
 * are {key, acc}, acc the reduced record or the accumulator; a record late for its part
 * crosses as its own partial) */
enum { LWM_PRE_FIRST = 1, LWM_PRE_COUNT = 2, LWM_PRE_REDUCE = 3, LWM_PRE_AGG = 4 };
/* The local pre-aggregation (kind LWM_PRE_*) of window node `node` for one upstream instance
 * (lwm_graph.c): the same assigner, key and function (Lua ones without their process
 * function, emitting partials), no lateness, and records that are late for it emitted on
 * port *late_port (sum, min, max) or as partials of one record (count, reduce, aggregate;
 * *late_port 0) instead of dropped. NULL on failure (ctx.err). */
wm_op *lwm_build_preagg(lwm_bridge *B, int node, int kind, const char *name, const char *where,
                        int *late_port);
int lwm_build_windows(lwm_bridge *B, int node, const char *kind, const char *name,
                      const char *where, wm_op **op);
int lwm_build_time(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op);
/* keyed:process{...} and rolling aggregations (lwm_keyed.c). */
int lwm_build_keyed(lwm_bridge *B, int node, const char *kind, const char *name,
                    const char *where, wm_op **op);
/* The connectors (lwm_conn.c): read_kafka, write_kafka, read_nats, write_nats. */
int lwm_build_conn(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                   wm_op **op);
/* Repartitioning (lwm_through.c): the writer sink (node kind "through_write"), the tap of a
 * read_kafka / read_nats node that reads an intermediate topic (node.through_writers set;
 * WM_OK and p untouched otherwise), and wm.core.through_ensure(target). */
int lwm_build_through(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                      wm_op **op);
struct wm_partsrc_config;
int lwm_through_read_tap(lwm_bridge *B, int node, struct wm_partsrc_config *p);
int lwm_through_ensure(lua_State *L);
/* wm.core.kafka_partitions(brokers, topic[, props]), wm.core.nats_subjects(url, stream, filter) */
int lwm_kafka_partitions(lua_State *L);
int lwm_nats_subjects(lua_State *L);
/* wm.partition(key, n): NATS's partition() mapping function (base/wm_partition.h) */
int lwm_partition(lua_State *L);
/* wm.core.parse_partitions(spec, count): a static share "0-3,5" (base/wm_partition.h) */
int lwm_parse_partitions(lua_State *L);
/* wm.core._member_nats{...}: the NATS membership backend (io/wm_member.h), for its specs */
int lwm_member_nats(lua_State *L);
/* assign_timestamps_and_watermarks (lwm_time.c); interval is the env's watermark interval. */
wm_op *lwm_build_assign(lwm_bridge *B, int node, const char *name, const char *where,
                        int64_t interval);
/* Builds the operators of an env's plan (the table at env). *outop / *outport (caller
 * frees) give, per node id 1..*n, the operator and port that produce its stream. Sources
 * need B->exec. WM_OK or WM_ERR (message in B->ctx.err). */
int lwm_build(lwm_bridge *B, int env, wm_op ***outop, int **outport, lua_Integer *n);
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
/* wm.core.harness(env, opts) and the harness's metatable (lwm_harness.c). */
int lwm_harness_new(lua_State *L);
void lwm_harness_open(lua_State *L);
/* wm.core.replay_data(path, parse_node, ts_field, arrival_field): a recorded file for
 * h:replay (wm.lab; lwm_replay.c). */
int lwm_replay_data_new(lua_State *L);
int lwm_signal_watch_new(lua_State *L); /* core.signal_watch() (lwm_replay.c) */
/* The replay data sets' metatable, and h:replay and h:replay_inputs on the harness's (call
 * after lwm_harness_open; lwm_replay.c). */
void lwm_replay_open(lua_State *L);
/* Trace and metrics output of wmrun (lwm_report.c, reads only the core). */
void lwm_trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status);
void lwm_print_metrics(lwm_bridge *B, FILE *f);
/* What an operator holds: open windows of a window operator, keys of a keyed one; -1 for
 * an operator that holds neither. */
long long lwm_op_state(const wm_op *op);
/* Input k's (0, 1) own watermark of a two-input operator, as --metrics shows it ("-",
 * "1999", "4000 idle"). */
void lwm_input_wm_text(const wm_op *op, int k, char *buf, size_t n);

/* The Prometheus endpoint (env.metrics_http) and the progress line (env.progress) of a run,
 * on thread 0's loop (lwm_metrics.c). start: WM_OK or WM_ERR; end (the executor's on_end
 * hook, and once more after the run: it is idempotent) closes their handles. */
typedef struct lwm_services {
  struct wm_metrics_http *http;
  struct progress *progress;
  struct lwm_task_status *task; /* a scale-out task's status line (lwm_task.c) */
} lwm_services;
int lwm_services_start(lwm_bridge *B, int env, uv_loop_t *loop, lwm_services *s);
void lwm_services_end(void *ud);

/* ---- scale-out (lwm_task.c) ----------------------------------------------------------- */

/* core.supervise and core.task_guard, into the table on the top of the stack. */
void lwm_task_open(lua_State *L);
/* In a task's child (WM_TASK and WM_TASK_STATUS_FD set): a timer writing the status line;
 * *out NULL otherwise. WM_OK or WM_ERR. end: the last line, and the timer closed. */
int lwm_task_status_start(lwm_bridge *B, uv_loop_t *loop, struct lwm_task_status **out);
void lwm_task_status_end(struct lwm_task_status *ts);

/* ---- the multi-core executor (lwm_mt.c) ---------------------------------------------- */

/* How the host runs the job script in a new Lua state (wmrun registers it): runs it as it
 * ran it first; returns a lua_pcall status, with the error message on L's stack. */
typedef struct lwm_spawn {
  int (*run)(lua_State *L, void *ud);
  void *ud; /* must stay valid while the job runs */
} lwm_spawn;
void lwm_set_spawn(lua_State *L, const lwm_spawn *s);
/* The thread (1-based) whose Lua state L is: 1 for the state that called execute(). */
int lwm_mt_thread(lua_State *L);
/* wm.core._codec_roundtrip(v) -> copy, bytes | fail, message */

/* ---- Lua values as bytes (lwm_mt.c): the record codec's host for Lua tables ----------- */

/* The codec host of B's Lua values (tables held in slots), for wm_ctx_snapshot /
 * wm_ctx_restore (graph/wm_snapshot.h): nil, booleans, integers, floats (bit for bit,
 * -0.0 and nan too), strings (any bytes) and tables of those, nested up to 100 levels.
 * A function, userdata, coroutine, a table used as a key or a cycle is an error that says
 * where in the value it is ("it holds a function (at value.acc.f)"). Fills *ch
 * (base/wm_codec.h; not included here: its wm_decoder is not the parsers'). */
struct wm_codec_host;
void lwm_codec_host(lwm_bridge *B, struct wm_codec_host *ch);
/* Appends the Lua value at idx (any type) to b; root names it in errors ("state"). 0, or
 * -1 with the message in err. */
int lwm_encode_lua(lua_State *L, wm_buf *b, int idx, const char *root, char *err,
                   size_t errlen);
/* Pushes the value encoded at *p (advanced past it). 0, or -1 (nothing pushed) with the
 * message in err (truncated or corrupt bytes). */
int lwm_decode_lua(lua_State *L, const uint8_t **p, const uint8_t *end, char *err,
                   size_t errlen);
int lwm_mt_roundtrip(lua_State *L);

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
 * B->ctx.err). */
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
