/* The bindings: the only C that includes Lua. */
#ifndef LWM_H
#define LWM_H

#include <lauxlib.h>
#include <lua.h>

#include "../core/wm_buf.h"
#include "../core/wm_time.h"
#include "../core/wm_exec.h"
#include "../core/wm_graph.h"
#include "../core/wm_tsop.h"
#include "../core/wm_winop.h"

#define LWM_VERSION "0.1.0"

/* One job run: the Lua state, the stack positions that stay put while the job runs, the
 * slot table's reference counts and the core context. */
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
  int gc_step;
} lwm_bridge;

/* C functions that Lua calls back during a job (out(), ctx:output(), a generator's
 * emit_watermark, ...) run in a new stack frame, where the bridge's stack indexes mean
 * nothing: they enter a frame first (pushing the handler, slot and fns tables, and using
 * their own lua_State, which may be a coroutine) and leave it before returning or raising. */
typedef struct lwm_frame {
  lua_State *L;
  int msgh, slots, fns;
} lwm_frame;
void lwm_frame_enter(lwm_bridge *B, lua_State *L, lwm_frame *saved);
void lwm_frame_leave(lwm_bridge *B, const lwm_frame *saved);
/* Stores the handler, slot and fns tables (at B's stack indexes) in the registry, keyed by
 * B, for lwm_frame_enter; lwm_bridge_unanchor removes them. */
void lwm_bridge_anchor(lwm_bridge *B);
void lwm_bridge_unanchor(lwm_bridge *B);

/* Per operator: its user function(s) and where it was defined. */
typedef struct lwm_opinfo {
  lwm_bridge *B;
  int fn;        /* index in the fns table of the main function (0 if none) */
  int fn2, fn3, fn4, fn5; /* further functions (aggregate parts, process_fn, ...) */
  int keep;      /* a slot that keeps a Lua function's last result alive (keys) */
  char *where;   /* "job.lua:12" */
  wm_op *op;
} lwm_opinfo;

/* Slots: a Lua value held by C (records in windows, accumulators). */
uint32_t lwm_slot_new(lwm_bridge *B, int idx); /* value at idx; refcount 1; 0 on failure */
void lwm_slot_retain(void *ud, uint32_t slot);
void lwm_slot_release(void *ud, uint32_t slot);

/* Pushes a core value as a Lua value. */
void lwm_push_value(lwm_bridge *B, const wm_value *v);
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
int lwm_call(lwm_opinfo *oi, int nargs, int nres, const wm_value *rec);

/* Error with the operator's name and definition line, and the record. */
int lwm_op_error(lwm_opinfo *oi, const wm_value *rec, const char *fmt, ...);

/* Builds the core graph of an env's plan (the table at env_idx) and runs it. */
int lwm_execute(lua_State *L);

/* Operators implemented with Lua calls (lwm_ops.c); each returns NULL on failure. */
wm_op *lwm_map_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int kind);
wm_op *lwm_sink_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, int collect);
wm_op *lwm_pass_new(lwm_bridge *B, const char *name);
wm_op *lwm_elements_new(lwm_bridge *B, lwm_opinfo *oi, const char *name, lua_Integer count);
int lwm_tsx_lua(wm_tsx *x, lwm_opinfo *oi);
int lwm_keysel_lua(wm_keysel *ks, lwm_opinfo *oi);
int lwm_winfn_lua(wm_winfn *fn, lwm_opinfo *oi, const char *kind);
int lwm_wmgen_lua(wm_wmgen *g, lwm_opinfo *oi);
lwm_opinfo *lwm_opinfo_new(lwm_bridge *B, const char *where);
void lwm_opinfo_free(void *ud);

enum { LWM_MAP = 1, LWM_FILTER, LWM_FLAT_MAP };

/* Plan reading: field k of the node table at idx. Strings stay valid while the plan lives. */
const char *lwm_get_str(lua_State *L, int idx, const char *k);
lua_Integer lwm_get_int(lua_State *L, int idx, const char *k, lua_Integer dflt);
/* Stores field k of the table at idx in the per-job fns table; its index, or 0 if absent. */
int lwm_get_fn(lwm_bridge *B, int idx, const char *k);

/* Node builders, one per area: each returns 1 and sets *op (NULL on failure, with the
 * message in B->ctx.err) when it knows the node kind, and 0 when it does not. */
int lwm_build_io(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                 wm_op **op);
int lwm_build_windows(lwm_bridge *B, int node, const char *kind, const char *name,
                      const char *where, wm_op **op);
int lwm_build_time(lwm_bridge *B, int node, const char *kind, const char *name,
                   const char *where, wm_op **op);

#endif
