/* Repartitioning (key_by(k, {through = ...}), lua/wm/through.lua, core/io/wm_through.h):
 * the writer sink's builder, the reader's tap on read_kafka / read_nats nodes that read an
 * intermediate topic, and wm.core.through_ensure, which the plan calls at the job line. */
#include <stdlib.h>
#include <string.h>

#include "io/wm_through.h"
#include "lwm.h"
#include "lwm_codec.h"
#include "lwm_plan.h"
#include "lwm_through.h"

#define ENSURE_TIMEOUT_MS 10000

/* The target table at idx ({kind = "kafka" | "nats", partitions, brokers, topic, props,
 * replication | url, stream, subject}); its strings live in the plan. props: the
 * properties (caller frees), NULL when there are none. */
static void read_target(lua_State *L, int idx, wm_through_target *t, const char ***props) {
  memset(t, 0, sizeof *t);
  *props = NULL;
  const char *kind = lwm_get_str(L, idx, "kind");
  t->kind = kind && strcmp(kind, "nats") == 0 ? WM_TRANSPORT_NATS : WM_TRANSPORT_KAFKA;
  t->partitions = (int)lwm_get_int(L, idx, "partitions", 1);
  t->brokers = lwm_get_str(L, idx, "brokers");
  t->topic = lwm_get_str(L, idx, "topic");
  t->replication = (int)lwm_get_int(L, idx, "replication", -1);
  t->url = lwm_get_str(L, idx, "url");
  t->stream = lwm_get_str(L, idx, "stream");
  t->subject = lwm_get_str(L, idx, "subject");
  lua_getfield(L, idx, "props");
  int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  if (n > 0 && (*props = calloc((size_t)n, sizeof **props))) {
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, -1, i + 1);
      (*props)[i] = lua_tostring(L, -1); /* kept alive by the plan */
      lua_pop(L, 1);
    }
    t->props = *props;
    t->nprops = n;
  }
  lua_pop(L, 1);
}

/* wm.core.through_ensure(target) -> last sequence (NATS; 0 for Kafka) | nil, message */
int lwm_through_ensure(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  wm_through_target t;
  const char **props;
  read_target(L, 1, &t, &props);
  wm_error err;
  int64_t last = 0;
  lua_Integer timeout = lwm_get_int(L, 1, "timeout", ENSURE_TIMEOUT_MS);
  int rc = wm_transport_make(&t, timeout > 0 && timeout < INT32_MAX ? (int)timeout : ENSURE_TIMEOUT_MS, &last,
                             &err);
  free(props);
  if (rc != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, wm_error_format(&err));
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)last);
  return 1;
}

/* The node's writer id and count: writer_base * p + instance - 1 of writers * p, where
 * writer_base and writers are set by wm.through.cut (default 0 and 1). */
static wm_op *build_writer(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_through_writer_config c;
  memset(&c, 0, sizeof c);
  /* the key selector reads node.key: the through's own key is in node.tkey, so that the
   * edge into the writers is not a key exchange (writers are the instances upstream) */
  lua_createtable(L, 0, 1);
  lua_getfield(L, node, "tkey");
  lua_setfield(L, -2, "key");
  int rc = lwm_build_keysel(B, lua_gettop(L), where, &c.key);
  lua_pop(L, 1);
  if (rc != 0) return NULL;
  lua_getfield(L, node, "target");
  const char **props;
  read_target(L, lua_gettop(L), &c.target, &props);
  int base = (int)lwm_get_int(L, node, "writer_base", 0);
  int count = (int)lwm_get_int(L, node, "writer_count", 1);
  c.writer = base * B->parallelism + B->instance - 1;
  c.writers = count * B->parallelism;
  lwm_codec_host(B, &c.codec);
  wm_op *op = wm_through_writer_new(&B->ctx, name, &c); /* owns c.key from now on */
  free(props);
  lua_pop(L, 1);
  return op;
}

int lwm_build_through(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                      wm_op **op) {
  if (strcmp(kind, "through_write") != 0) return 0;
  *op = build_writer(B, node, name, where);
  return 1;
}

int lwm_through_read_tap(lwm_bridge *B, int node, wm_partsrc_config *p) {
  int writers = (int)lwm_get_int(B->L, node, "through_writers", 0);
  if (writers <= 0) return WM_OK; /* not a repartitioning reader */
  wm_codec_host ch;
  lwm_codec_host(B, &ch);
  if (!(p->tap = wm_through_tap_new(p->nparts, writers, &ch))) return wm_ctx_error(&B->ctx, "out of memory");
  return WM_OK;
}
