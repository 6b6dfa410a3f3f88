/* Building window operators from the plan (wm.windows, WindowedStream). */
#include <stdlib.h>
#include <string.h>

#include "lwm.h"

static wm_op *build_window(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_winop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  /* the assigner */
  lua_getfield(L, node, "assigner");
  int a = lua_gettop(L);
  const char *kind = lwm_get_str(L, a, "kind");
  if (!kind) kind = "?";
  if (strcmp(kind, "tumbling") == 0) cfg.assigner.kind = WM_WA_TUMBLING;
  else if (strcmp(kind, "sliding") == 0) cfg.assigner.kind = WM_WA_SLIDING;
  else {
    lua_pop(L, 1);
    wm_ctx_error(&B->ctx, "%s: %s windows are not supported yet", where, kind);
    return NULL;
  }
  cfg.assigner.size = (int64_t)lwm_get_int(L, a, "size", 0);
  cfg.assigner.slide = (int64_t)lwm_get_int(L, a, "slide", 0);
  cfg.assigner.offset = (int64_t)lwm_get_int(L, a, "offset", 0);
  lua_pop(L, 1);
  char err[512];
  if (wm_assigner_check(&cfg.assigner, err, sizeof err) != 0) {
    wm_ctx_error(&B->ctx, "%s: %s", where, err);
    return NULL;
  }
  cfg.lateness = (int64_t)lwm_get_int(L, node, "lateness", 0);
  cfg.late_tag = lwm_get_str(L, node, "late_tag");
  /* the key */
  lua_getfield(L, node, "key");
  int k = lua_gettop(L);
  lua_getfield(L, k, "fields");
  if (lua_istable(L, -1)) {
    size_t n = (size_t)lua_rawlen(L, -1);
    const char *fields[16];
    if (n < 1 || n > 16) {
      lua_pop(L, 2);
      wm_ctx_error(&B->ctx, "%s: key_by takes 1 to 16 fields", where);
      return NULL;
    }
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, -1, (lua_Integer)i + 1);
      fields[i] = lua_tostring(L, -1);
      lua_pop(L, 1); /* the strings live in the plan */
    }
    int rc = wm_keysel_fields(&cfg.keysel, fields, n);
    lua_pop(L, 2);
    if (rc != 0) {
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
  } else {
    lua_pop(L, 1);
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) {
      lua_pop(L, 1);
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
    oi->fn = lwm_get_fn(B, k, "fn");
    lua_pop(L, 1);
    if (lwm_keysel_lua(&cfg.keysel, oi) != 0) {
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
  }
  /* the function */
  const char *fk = lwm_get_str(L, node, "fn_kind");
  int rc = 0;
  if (fk && strcmp(fk, "builtin") == 0) {
    const char *agg = lwm_get_str(L, node, "agg");
    static const char *const aggs[] = {"sum", "min", "max", "min_by", "max_by", "count"};
    int kindi = 0;
    for (int i = 0; i < 6; i++)
      if (agg && strcmp(agg, aggs[i]) == 0) kindi = i + 1;
    rc = wm_winfn_builtin(&cfg.fn, kindi, lwm_get_str(L, node, "field"));
  } else {
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) rc = -1;
    else {
      oi->fn = lwm_get_fn(B, node, "fn");
      lua_getfield(L, node, "agg");
      if (lua_istable(L, -1)) {
        int ag = lua_gettop(L);
        oi->fn2 = lwm_get_fn(B, ag, "create");
        oi->fn3 = lwm_get_fn(B, ag, "add");
        oi->fn4 = lwm_get_fn(B, ag, "result");
        oi->fn5 = lwm_get_fn(B, ag, "merge");
      }
      lua_pop(L, 1);
      rc = lwm_winfn_lua(&cfg.fn, oi, fk ? fk : "reduce");
    }
  }
  if (rc != 0) {
    if (cfg.keysel.free) cfg.keysel.free(cfg.keysel.ud);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  return wm_winop_new(&B->ctx, name, &cfg);
}

int lwm_build_windows(lwm_bridge *B, int node, const char *kind, const char *name,
                      const char *where, wm_op **op) {
  if (strcmp(kind, "window") != 0) return 0;
  *op = build_window(B, node, name, where);
  return 1;
}
