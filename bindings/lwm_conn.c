/* The connectors' side of the bindings (docs/connectors.md): building read_kafka,
 * write_kafka, read_nats and write_nats from their plan nodes (lua/wm/connectors.lua), and
 * wm.core.kafka_partitions / wm.core.nats_subjects, which the plan asks before the job is
 * built so that every partition gets its own watermark generator. */
#include <stdlib.h>
#include <string.h>

#include "base/wm_partition.h"
#include "io/wm_conn.h"
#include "io/wm_member.h"
#include "lwm.h"
#include "lwm_conn.h"
#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_through.h"

#define DISCOVERY_TIMEOUT_MS 10000

/* ---- plan reading ------------------------------------------------------------------------ */

static int get_bool(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  int b = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return b;
}

/* The strings of the list field k of the table at idx, borrowed from the plan; *n set.
 * NULL with *n = 0 when absent; NULL with *n = -1 on allocation failure. Caller frees. */
static const char **get_strings(lua_State *L, int idx, const char *k, int *n) {
  lua_getfield(L, idx, k);
  *n = 0;
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  int len = (int)lua_rawlen(L, -1);
  const char **v = calloc((size_t)(len > 0 ? len : 1), sizeof *v);
  if (!v) {
    lua_pop(L, 1);
    *n = -1;
    return NULL;
  }
  for (int i = 0; i < len; i++) {
    lua_rawgeti(L, -1, i + 1);
    v[i] = lua_tostring(L, -1); /* the strings live in the plan */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  *n = len;
  return v;
}

static int start_mode(const char *s) {
  if (!s) return WM_START_EARLIEST;
  if (strcmp(s, "latest") == 0 || strcmp(s, "new") == 0) return WM_START_LATEST;
  if (strcmp(s, "committed") == 0) return WM_START_COMMITTED;
  if (strcmp(s, "timestamp") == 0 || strcmp(s, "time") == 0) return WM_START_TIME;
  if (strcmp(s, "sequence") == 0) return WM_START_SEQUENCE;
  return WM_START_EARLIEST;
}

/* The partitions of node.parts that this instance owns (partition j goes to instance
 * j mod parallelism), with their fields; arrays of at most the number of parts. */
typedef struct owned {
  int n;
  const char **names, **tags, **a; /* a: topic (Kafka) or subject (NATS) */
  int *partition;
} owned;

static void owned_free(owned *o) {
  free(o->names);
  free(o->tags);
  free(o->a);
  free(o->partition);
}

static int read_owned(lwm_bridge *B, int node, const char *afield, owned *o) {
  lua_State *L = B->L;
  memset(o, 0, sizeof *o);
  lua_getfield(L, node, "parts");
  int parts = lua_gettop(L);
  int len = lua_istable(L, parts) ? (int)lua_rawlen(L, parts) : 0;
  size_t m = (size_t)(len > 0 ? len : 1);
  o->names = calloc(m, sizeof *o->names);
  o->tags = calloc(m, sizeof *o->tags);
  o->a = calloc(m, sizeof *o->a);
  o->partition = calloc(m, sizeof *o->partition);
  if (!o->names || !o->tags || !o->a || !o->partition) {
    lua_settop(L, parts - 1);
    owned_free(o);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  int split = get_bool(L, node, "split");
  for (int j = 0; j < len; j++) {
    if (j % B->parallelism != B->instance - 1) continue;
    lua_rawgeti(L, parts, j + 1);
    int t = lua_gettop(L);
    o->names[o->n] = lwm_get_str(L, t, "name");
    o->tags[o->n] = split ? lwm_get_str(L, t, "tag") : NULL;
    o->a[o->n] = lwm_get_str(L, t, afield);
    o->partition[o->n] = (int)lwm_get_int(L, t, "partition", 0);
    o->n++;
    lua_settop(L, t - 1);
  }
  lua_settop(L, parts - 1);
  return WM_OK;
}

static void read_partsrc(lwm_bridge *B, int node, const owned *o, wm_partsrc_config *p) {
  lua_State *L = B->L;
  memset(p, 0, sizeof *p);
  p->nparts = o->n;
  p->names = o->names;
  p->tags = o->tags;
  p->start = start_mode(lwm_get_str(L, node, "start"));
  p->start_value = (int64_t)lwm_get_int(L, node, "start_value", 0);
  p->bounded = get_bool(L, node, "bounded");
  p->metadata = get_bool(L, node, "metadata");
  p->align.group = lwm_get_str(L, node, "align_group");
  p->align.max_drift = (int64_t)lwm_get_int(L, node, "align_drift", 0);
  p->align.interval = (int64_t)lwm_get_int(L, node, "align_interval", 0);
}

/* ---- key and subject functions ------------------------------------------------------------ */

typedef struct strfn {
  lwm_opinfo *oi;
  const char *what; /* "key", "subject" */
} strfn;

static int strfn_call(void *ud, wm_op *op, const wm_value *rec, wm_buf *out) {
  strfn *f = ud;
  lwm_opinfo *oi = f->oi;
  lua_State *L = oi->B->L;
  oi->op = op;
  lwm_push_fn(oi->B, oi->fn);
  lwm_push_value(oi->B, rec);
  if (lwm_call(oi, 1, 1, rec) != WM_OK) return WM_ERR;
  if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER) {
    const char *tn = luaL_typename(L, -1);
    lua_pop(L, 1);
    return lwm_op_error(oi, rec, "the %s function returned a %s (expected a string)", f->what, tn);
  }
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  wm_buf_add(out, s, n);
  lua_pop(L, 1);
  return WM_OK;
}

static void strfn_free(void *ud) {
  strfn *f = ud;
  lwm_opinfo_free(f->oi);
  free(f);
}

/* The function in field k of the node as a formatter; 0 (fmt untouched when there is no
 * function) or WM_ERR. */
static int get_strfn(lwm_bridge *B, int node, const char *k, const char *what, const char *where,
                     wm_formatter *fmt) {
  lua_getfield(B->L, node, k);
  int isfn = lua_isfunction(B->L, -1);
  lua_pop(B->L, 1);
  if (!isfn) return WM_OK;
  strfn *f = calloc(1, sizeof *f);
  if (!f || !(f->oi = lwm_opinfo_new(B, where))) {
    free(f);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  f->oi->fn = lwm_get_fn(B, node, k);
  f->what = what;
  fmt->fn = strfn_call;
  fmt->free = strfn_free;
  fmt->ud = f;
  return WM_OK;
}

/* A sink's `format` (nil or "json", "text", or a function as write_lines) into *format and
 * *custom. WM_OK or WM_ERR. */
static int get_format(lwm_bridge *B, int node, const char *where, int *format, wm_formatter *custom) {
  memset(custom, 0, sizeof *custom);
  const char *s = lwm_get_str(B->L, node, "format");
  *format = s && strcmp(s, "text") == 0 ? WM_FMT_TEXT : WM_FMT_JSON;
  if (get_strfn(B, node, "format", "format", where, custom) != WM_OK) return WM_ERR;
  if (custom->fn) *format = WM_FMT_CUSTOM;
  return WM_OK;
}

/* ---- the builders --------------------------------------------------------------------------- */

static wm_op *build_read_kafka(lwm_bridge *B, int node, const char *name) {
  lua_State *L = B->L;
  owned o;
  if (read_owned(B, node, "topic", &o) != WM_OK) return NULL;
  int nprops;
  const char **props = get_strings(L, node, "props", &nprops);
  if (nprops < 0) {
    owned_free(&o);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  wm_kafka_source_config kc = {.brokers = lwm_get_str(L, node, "brokers"),
                               .group = lwm_get_str(L, node, "group"),
                               .topics = o.a,
                               .partitions = o.partition,
                               .props = props,
                               .nprops = nprops,
                               .timeout_ms = (int)lwm_get_int(L, node, "timeout", 0)};
  read_partsrc(B, node, &o, &kc.p);
  wm_op *op = NULL;
  if (lwm_through_read_tap(B, node, &kc.p) == WM_OK) /* repartitioning: lwm_through.c */
    op = wm_kafka_source_new(wm_exec_host(B->exec), name, &kc);
  owned_free(&o);
  free(props);
  return op;
}

static wm_op *build_read_nats(lwm_bridge *B, int node, const char *name) {
  lua_State *L = B->L;
  owned o;
  if (read_owned(B, node, "subject", &o) != WM_OK) return NULL;
  wm_nats_source_config nc = {.url = lwm_get_str(L, node, "url"),
                              .stream = lwm_get_str(L, node, "stream"),
                              .durable = lwm_get_str(L, node, "durable"),
                              .subjects = o.a};
  read_partsrc(B, node, &o, &nc.p);
  wm_op *op = NULL;
  if (lwm_through_read_tap(B, node, &nc.p) == WM_OK) /* repartitioning: lwm_through.c */
    op = wm_nats_source_new(wm_exec_host(B->exec), name, &nc);
  owned_free(&o);
  return op;
}

/* Frees the formatters made so far when building a sink fails (their owner is then nobody). */
static void drop(wm_formatter *const *f, int n) {
  for (int i = 0; i < n; i++)
    if (f[i]->free) f[i]->free(f[i]->ud);
}

static wm_op *build_write_kafka(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_kafka_sink_config kc;
  memset(&kc, 0, sizeof kc);
  wm_formatter *const made[3] = {&kc.custom, &kc.key, &kc.partition};
  if (get_format(B, node, where, &kc.format, &kc.custom) != WM_OK) return NULL;
  if (get_strfn(B, node, "key", "key", where, &kc.key) != WM_OK ||
      get_strfn(B, node, "partition", "partition", where, &kc.partition) != WM_OK) {
    drop(made, 3);
    return NULL;
  }
  kc.key_field = lwm_get_str(L, node, "key");
  kc.partition_field = lwm_get_str(L, node, "partition");
  kc.brokers = lwm_get_str(L, node, "brokers");
  kc.topic = lwm_get_str(L, node, "topic");
  int nprops;
  const char **props = get_strings(L, node, "props", &nprops);
  if (nprops < 0) {
    drop(made, 3);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  kc.props = props;
  kc.nprops = nprops;
  wm_op *op = wm_kafka_sink_new(&B->ctx, name, &kc);
  free(props);
  return op;
}

static wm_op *build_write_nats(lwm_bridge *B, int node, const char *name, const char *where) {
  lua_State *L = B->L;
  wm_nats_sink_config nc;
  memset(&nc, 0, sizeof nc);
  wm_formatter *const made[2] = {&nc.custom, &nc.subject_fn};
  if (get_format(B, node, where, &nc.format, &nc.custom) != WM_OK) return NULL;
  if (get_strfn(B, node, "subject", "subject", where, &nc.subject_fn) != WM_OK) {
    drop(made, 2);
    return NULL;
  }
  nc.subject = lwm_get_str(L, node, "subject");
  int ns;
  const char **subjects = get_strings(L, node, "subjects", &ns);
  if (ns < 0) {
    drop(made, 2);
    wm_ctx_error(&B->ctx, "out of memory");
    return NULL;
  }
  nc.url = lwm_get_str(L, node, "url");
  nc.stream = lwm_get_str(L, node, "stream");
  nc.subjects = subjects;
  nc.nsubjects = ns;
  nc.id_prefix = lwm_get_str(L, node, "id_prefix");
  nc.instance = B->instance;
  nc.timeout_ms = (int64_t)lwm_get_int(L, node, "timeout", 60000);
  wm_op *op = wm_nats_sink_new(&B->ctx, name, &nc);
  free(subjects);
  return op;
}

int lwm_build_conn(lwm_bridge *B, int node, const char *kind, const char *name, const char *where,
                   wm_op **op) {
  if (strcmp(kind, "read_kafka") == 0) *op = build_read_kafka(B, node, name);
  else if (strcmp(kind, "read_nats") == 0) *op = build_read_nats(B, node, name);
  else if (strcmp(kind, "write_kafka") == 0) *op = build_write_kafka(B, node, name, where);
  else if (strcmp(kind, "write_nats") == 0) *op = build_write_nats(B, node, name, where);
  else return 0;
  return 1;
}

/* ---- discovery, before the job is built ------------------------------------------------------- */

/* wm.core.kafka_partitions(brokers, topic[, props[, timeout_ms]]) -> n | nil, message */
int lwm_kafka_partitions(lua_State *L) {
  const char *brokers = luaL_checkstring(L, 1);
  const char *topic = luaL_checkstring(L, 2);
  const char *props[64];
  int nprops = 0;
  if (lua_istable(L, 3)) {
    int len = (int)lua_rawlen(L, 3);
    luaL_argcheck(L, len <= 64, 3, "at most 32 properties");
    for (int i = 0; i < len; i++) {
      lua_rawgeti(L, 3, i + 1);
      props[nprops++] = lua_tostring(L, -1); /* kept alive by the table */
      lua_pop(L, 1);
    }
  }
  lua_Integer timeout = luaL_optinteger(L, 4, DISCOVERY_TIMEOUT_MS);
  luaL_argcheck(L, timeout > 0 && timeout <= INT32_MAX, 4, "a timeout in ms");
  wm_error err;
  int n;
  if (wm_kafka_partitions(brokers, topic, props, nprops, (int)timeout, &n, &err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_pushinteger(L, n);
  return 1;
}

/* wm.core.nats_subjects(url, stream[, filter]) -> {subject, ...} | nil, message. Without a
 * filter: {} once the stream is found. */
int lwm_nats_subjects(lua_State *L) {
  const char *url = luaL_checkstring(L, 1);
  const char *stream = luaL_checkstring(L, 2);
  const char *filter = luaL_optstring(L, 3, NULL);
  wm_error err;
  char **list;
  int n;
  if (wm_nats_subjects(url, stream, filter, DISCOVERY_TIMEOUT_MS, &list, &n, &err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, list[i]);
    lua_rawseti(L, -2, i + 1);
  }
  wm_nats_free_list(list, n);
  return 1;
}

/* wm.partition(key, n) -> the partition (0..n-1) of key: nats-server's partition(n, ...)
 * mapping function (FNV-1a 32 of the key's bytes, mod n). key: a string or a number (its
 * text, as tostring gives it); n: 1 .. 2^31-1 (the server's own limit, an int32). */
int lwm_partition(lua_State *L) {
  int t = lua_type(L, 1);
  if (t != LUA_TSTRING && t != LUA_TNUMBER) return luaL_typeerror(L, 1, "string or number");
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 1 && n <= INT32_MAX, 2, "the number of partitions must be 1 .. 2147483647");
  size_t len;
  const char *key = luaL_tolstring(L, 1, &len);
  lua_pushinteger(L, (lua_Integer)wm_partition(key, len, (uint32_t)n));
  return 1;
}

/* wm.core.parse_partitions(spec, count) -> {p, ...} (sorted, from 0) | nil, message */
int lwm_parse_partitions(lua_State *L) {
  const char *spec = luaL_checkstring(L, 1);
  lua_Integer count = luaL_checkinteger(L, 2);
  luaL_argcheck(L, count >= 1 && count <= INT32_MAX, 2, "a partition count");
  int *list, n;
  wm_error err;
  if (wm_parse_partitions(spec, (int)count, &list, &n, &err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, list[i]);
    lua_rawseti(L, -2, i + 1);
  }
  free(list);
  return 1;
}

/* ---- the NATS membership backend, for its specs ------------------------------------------- */

#define MEMBER_MT "wm.member_nats"

typedef struct lmember {
  wm_member *m;
} lmember;

static lmember *check_member(lua_State *L) {
  lmember *u = luaL_checkudata(L, 1, MEMBER_MT);
  if (!u->m) luaL_error(L, "the member has left its group");
  return u;
}

/* m:poll() -> {{kind = "assign" | "revoke" | "lost", source = 1.., partition = 0.., name}, ...}:
 * every event waiting now. */
static int member_poll(lua_State *L) {
  lmember *u = check_member(L);
  lua_newtable(L);
  wm_error err;
  wm_member_event ev;
  int rc, k = 0;
  while ((rc = wm_member_poll(u->m, &ev, &err)) == 1) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, ev.kind == WM_MEMBER_ASSIGN ? "assign" : ev.kind == WM_MEMBER_REVOKE ? "revoke" : "lost");
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, ev.source + 1);
    lua_setfield(L, -2, "source");
    lua_pushinteger(L, ev.partition);
    lua_setfield(L, -2, "partition");
    lua_pushstring(L, ev.name);
    lua_setfield(L, -2, "name");
    lua_rawseti(L, -2, ++k);
  }
  if (rc < 0) return luaL_error(L, "%s", err.msg);
  return 1;
}

/* m:release(source (1..), partition) */
static int member_release(lua_State *L) {
  lmember *u = check_member(L);
  wm_error err;
  if (wm_member_release(u->m, (int)luaL_checkinteger(L, 2) - 1, (int)luaL_checkinteger(L, 3), &err) != 0)
    return luaL_error(L, "%s", err.msg);
  return 0;
}

/* m:leave(): releases what it owns and leaves the group (also when collected). */
static int member_leave(lua_State *L) {
  lmember *u = luaL_checkudata(L, 1, MEMBER_MT);
  wm_member_free(u->m);
  u->m = NULL;
  return 0;
}

/* wm.core._member_nats{url, group, sources = {stream, ...}, counts = {n, ...},
 * partitions = {share | false, ...}, lease_ms, heartbeat_ms, member} -> member | nil, message */
int lwm_member_nats(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  wm_member_nats_config c;
  memset(&c, 0, sizeof c);
  c.url = lwm_get_str(L, 1, "url");
  c.c.group = lwm_get_str(L, 1, "group");
  c.member = lwm_get_str(L, 1, "member");
  c.lease_ms = (long long)lwm_get_int(L, 1, "lease_ms", 0);
  c.heartbeat_ms = (long long)lwm_get_int(L, 1, "heartbeat_ms", 0);
  int n, nc;
  const char **sources = get_strings(L, 1, "sources", &n);
  lua_getfield(L, 1, "counts");
  nc = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  int *counts = calloc((size_t)(n > 0 ? n : 1), sizeof *counts);
  const char **shares = calloc((size_t)(n > 0 ? n : 1), sizeof *shares);
  if (n < 0 || !counts || !shares) {
    free(sources);
    free(counts);
    free(shares);
    return luaL_error(L, "out of memory");
  }
  for (int i = 0; i < n && i < nc; i++) {
    lua_rawgeti(L, -1, i + 1);
    counts[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "partitions");
  for (int i = 0; lua_istable(L, -1) && i < n; i++) {
    lua_rawgeti(L, -1, i + 1);
    shares[i] = lua_tostring(L, -1); /* (a string in the table: it stays alive) */
    lua_pop(L, 1);
  }
  c.c.nsources = n;
  c.c.sources = sources;
  c.c.counts = counts;
  c.partitions = shares;
  lmember *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->m = NULL;
  if (luaL_newmetatable(L, MEMBER_MT)) {
    static const luaL_Reg methods[] = {{"poll", member_poll}, {"release", member_release},
                                       {"leave", member_leave}, {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, member_leave);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  wm_error err;
  u->m = wm_member_nats_new(&c, &err);
  free(sources);
  free(counts);
  free(shares);
  if (!u->m) {
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  return 1;
}
