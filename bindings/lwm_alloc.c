/* lwm_alloc.c: the allocation stress of wmrun's Lua states (docs/testing.md).
 *
 * A state is lwm_pool_state_new's (lwm_state.c: the pool allocator). WM_FAIL_ALLOC=N puts an
 * allocator in front of the pool that counts the allocations (a new block or a block that
 * grows) and fails the Nth and all later ones: a sweep over N (spec/alloc_sweep.sh, under
 * ASan) shows that running out of memory at any point ends in a clear "not enough memory"
 * error, never in a crash or a leak. Only failing once would prove little: Lua runs a full GC
 * and retries a failed allocation. The count lives in the allocator's userdata (no mutable
 * statics). */
#include "lwm_alloc.h"
#include "lwm_testenv.h"

#include <stdlib.h>

#include "lwm_state.h"

typedef struct lwm_failing_alloc {
  unsigned long long count, fail_at;
  lua_Alloc inner; /* the pool's */
  void *inner_ud;
} lwm_failing_alloc;

static void *failing_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  lwm_failing_alloc *fa = ud;
  /* with ptr NULL, osize is the type of the new object, not a size */
  if (nsize > 0 && (ptr == NULL || nsize > osize) && ++fa->count >= fa->fail_at) return NULL;
  return fa->inner(fa->inner_ud, ptr, osize, nsize);
}

lua_State *lwm_new_state(const char **why) {
  long long at = lwm_test_fail_alloc(why);
  if (at < 0) return NULL;
  lua_State *L = lwm_pool_state_new();
  if (!L) {
    *why = "not enough memory";
    return NULL;
  }
  if (at) {
    lwm_failing_alloc *fa = malloc(sizeof *fa);
    if (!fa) {
      lwm_pool_state_close(L);
      *why = "not enough memory";
      return NULL;
    }
    fa->count = 0;
    fa->fail_at = at;
    fa->inner = lua_getallocf(L, &fa->inner_ud);
    lua_setallocf(L, failing_alloc, fa);
  }
  return L;
}

void lwm_close_state(lua_State *L) {
  void *ud;
  if (lua_getallocf(L, &ud) == failing_alloc) { /* the pool's allocator back, for its close */
    lwm_failing_alloc *fa = ud;
    lua_setallocf(L, fa->inner, fa->inner_ud);
    free(fa);
  }
  lwm_pool_state_close(L);
}
