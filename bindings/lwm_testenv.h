/* The test-only switches: environment variables that product code reads only to let the
 * specs reach a fault on purpose. Every one is read here and nowhere else (except
 * WM_THROUGH_CUT, read by lua/wm/through.lua since only Lua code uses it), and each is listed
 * in docs/testing.md ("Test-only switches"). None changes a result when it is unset.
 *
 *   WM_GCSTRESS=1        a full garbage collection after every call of a user function
 *                        (make gcstress)
 *   WM_FAIL_ALLOC=N      a Lua state's Nth allocation and every later one fail
 *                        (make alloc-sweep)
 *   WM_CKPT_CRASH=P[:N]  _exit(99) at point P of the run's Nth checkpoint (the crash spec of
 *                        docs/checkpoints.md); parsed by core/exec/wm_ckptrun.c, which gets
 *                        the text through its config and reads no environment itself
 *   WM_THROUGH_CUT=...   cuts a job at a repartitioning step (spec/through_spec.lua)
 */
#ifndef LWM_TESTENV_H
#define LWM_TESTENV_H

/* WM_GCSTRESS set and not "0". */
int lwm_test_gcstress(void);
/* WM_FAIL_ALLOC: 0 when unset; the allocation that fails first; -1 when it is not a
 * positive integer (*why then says so). */
long long lwm_test_fail_alloc(const char **why);
/* WM_CKPT_CRASH's text, or NULL when unset or empty. */
const char *lwm_test_ckpt_crash(void);

#endif
