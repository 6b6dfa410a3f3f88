/* Building sources and sinks from the plan (env:read_lines, ...). */
#include <string.h>

#include "lwm.h"

int lwm_build_io(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                 wm_op **op) {
  lua_State *L = B->L;
  (void)where;
  if (strcmp(kind, "read_lines") == 0) {
    wm_lines_config lc = {.path = lwm_get_str(L, node, "path"),
                          .max_line = (size_t)lwm_get_int(L, node, "max_line", 0)};
    *op = wm_lines_new(B->exec, name, &lc);
    return 1;
  }
  return 0;
}
