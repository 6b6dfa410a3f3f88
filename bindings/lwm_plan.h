/* The builders' toolbox (lwm_plan.c), below every builder: reading the plan, key selectors,
 * the checkpoint hooks of Lua parts. */
#ifndef LWM_PLAN_H
#define LWM_PLAN_H

#include "lwm.h"

/* Plan reading: field k of the node table at idx. Strings stay valid while the plan lives. */
const char *lwm_get_str(lua_State *L, int idx, const char *k);
lua_Integer lwm_get_int(lua_State *L, int idx, const char *k, lua_Integer dflt);
/* Stores field k of the table at idx in the per-job fns table; its index, or 0 if absent. */
int lwm_get_fn(lwm_bridge *B, int idx, const char *k);
/* Argument arg of the running C function as an integer number of ms, or a lauxlib
 * argument error (bad argument #1 to 'emit_watermark' (...)). */
int64_t lwm_check_millis(lua_State *L, int arg);
/* Pushes fields keys[0..n-1] of the user's object at idx, read with its metamethods under a
 * protected call: 0, or -1 with the error message pushed instead (one value). */
int lwm_pget_fields(lwm_bridge *B, int idx, const char *const *keys, int n);

/* A change of an updating SQL input that is a Lua table {k = "+I"|"+U"|"-U"|"-D", r = row}
 * (a Lua operator's: the Lua group aggregate, a regular join, ...): its sign (1 for +I/+U,
 * -1 for -U/-D), the kind's letter (I, U, D) and its row as a slot. Raw reads: no metamethod
 * runs, nothing raises. `what` names the reader in the error ("SQL GROUP BY over an updating
 * input"). 0, or -1 with the message in *err. */
int lwm_change_unwrap(lwm_bridge *B, const wm_value *rec, const char *what, int *sign, char *letter,
                      wm_value *row, wm_error *err);
/* The key selector of a keyed node (node.key: {fields = {...}} or {fn = f}); 0 or -1. */
int lwm_build_keysel(lwm_bridge *B, int node, const char *where, wm_keysel *ks);
/* The same from another field of the node (keyed connected streams: "key2"). */
int lwm_build_keysel_of(lwm_bridge *B, int node, const char *field, const char *where,
                        wm_keysel *ks);

/* Reads the methods snapshot and restore of the object at idx (with its metamethods); both
 * or neither must be functions. 0, or -1 with "<where>: <what>: ..." in B->ctx.error. */
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
 * else WM_ERR with the message in B->ctx.error naming each part, its job line and the fix
 * ("give it snapshot(self) and restore(self, t) methods"). */
int lwm_check_checkpointable(lwm_bridge *B);

#endif
