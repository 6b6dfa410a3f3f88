/* Building the operator graph of a plan: one or more instances per node, the exchanges
 * between them (key_by: hash partitioning; rebalance or a change of parallelism: round
 * robin; otherwise forward, instance i to instance i), and the edges (semantics.md §9). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_keygroup.h"
#include "exec/wm_exchange.h"
#include "ops/wm_ijoin.h"
#include "ops/wm_sqljoin.h"
#include "ops/wm_keyedop.h"
#include "exec/wm_mt.h"
#include "lwm.h"
#include "lwm_conn.h"
#include "lwm_graph.h"
#include "lwm_io.h"
#include "lwm_join.h"
#include "lwm_keyed.h"
#include "lwm_ops.h"
#include "lwm_plan.h"
#include "lwm_rexpr.h"
#include "lwm_sqllookup.h"
#include "lwm_through.h"
#include "lwm_time.h"
#include "lwm_window.h"
#include "lwm_wjoin.h"

typedef struct built {
  int n;        /* instances */
  wm_op **ops;  /* owned array; the operators belong to the context; NULL: on another thread */
  int *ports;   /* the output port of each instance */
  int rr;       /* edges out of this node are round robin (rebalance) */
  int bc;       /* edges out of this node go to every instance (broadcast) */
  uint32_t gid0; /* global id of instance 0 (instance k: gid0 + k), the same on every thread */
  int pin0;     /* every instance runs on the first thread (Lua sinks: their effects stay
                 * in the state that called execute) */
  const char *name;
  const char *where; /* the job line (own nodes only) */
  int own;           /* the node has operators of its own (not a side output, a rebalance) */
  uint32_t node;     /* the plan's node of its operators (a side output's, a rebalance's: its
                      * input's) */
} built;

/* Input channels allocated so far per global instance id, counted for every edge on every
 * thread, so that all threads agree on the channel numbers of remote edges. */
typedef struct chans {
  int *nin;
  uint32_t n, cap;
} chans;

/* The thread that runs instance k of a node (multi-core executor, docs/parallelism.md):
 * instance k on thread k mod threads, so forward edges between equal parallelism stay
 * on one thread and only exchanges cross threads. */
static int thread_of(const lwm_bridge *B, const built *b, int k) {
  if (!B->mt || b->pin0) return 0;
  return k % B->nthreads;
}

static int is_local(const lwm_bridge *B, const built *b, int k) {
  return thread_of(B, b, k) == B->thread;
}

/* One edge from `from` (port) to instance k of `to`: a direct connection on one thread,
 * a sender when the instance is on another thread, a remote input channel when `from` is. */
static int edge_to(lwm_bridge *B, chans *cs, wm_op *from, int port, int from_local,
                   const built *to, int k, const wm_op *producer) {
  uint32_t gid = to->gid0 + (uint32_t)k;
  int chan = cs->nin[gid]++;
  int to_local = is_local(B, to, k);
  if (from_local && to_local) {
    int c = wm_op_connect(from, port, to->ops[k]);
    if (c < 0) return wm_ctx_error(&B->ctx, "out of memory");
    if (c != chan) return wm_ctx_error(&B->ctx, "internal error: channel numbering of '%s'", from->name);
  } else if (from_local) {
    char sname[700];
    int t = thread_of(B, to, k);
    if (to->n > 1) snprintf(sname, sizeof sname, "to thread %d: %s %d/%d", t + 1, to->name, k + 1, to->n);
    else snprintf(sname, sizeof sname, "to thread %d: %s", t + 1, to->name);
    wm_op *s = wm_mt_sender_new(B->mt, sname, producer->name, t, gid, chan);
    if (!s) return WM_ERR;
    if (wm_op_connect(from, port, s) < 0) return wm_ctx_error(&B->ctx, "out of memory");
  } else if (to_local) {
    if (to->ops[k]->nin != chan)
      return wm_ctx_error(&B->ctx, "internal error: channel numbering of '%s'", to->ops[k]->name);
    to->ops[k]->nin++;
    wm_mt_add_remote_input(B->mt);
  }
  return WM_OK;
}

/* One operator for one instance of a node (B->instance / B->parallelism are set). The plan
 * is read before anything is allocated for the operator: reading it may raise (running out
 * of memory), and the protected build can only free what the graph already holds. */
static wm_op *build_one(lwm_bridge *B, int node, const char *kind, const char *name,
                        const char *where) {
  lua_State *L = B->L;
  wm_op *op = NULL;
  if (strcmp(kind, "from_elements") == 0) {
    int list = lwm_get_fn(B, node, "list");
    lua_Integer count = lwm_get_int(L, node, "count", 0);
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) {
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
    oi->fn = list;
    return lwm_elements_new(B, oi, name, count);
  }
  if (strcmp(kind, "map") == 0 || strcmp(kind, "filter") == 0 || strcmp(kind, "flat_map") == 0) {
    int fn = lwm_get_fn(B, node, "fn");
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) {
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
    oi->fn = fn;
    int k = kind[0] == 'm' ? LWM_MAP : kind[1] == 'i' ? LWM_FILTER : LWM_FLAT_MAP;
    return lwm_map_new(B, oi, name, k);
  }
  if (strcmp(kind, "assign") == 0)
    return lwm_build_assign(B, node, name, where, B->watermark_interval);
  if (strcmp(kind, "print") == 0) {
    wm_print_config pc = {.prefix = lwm_get_str(L, node, "prefix"),
                          .instance = B->parallelism > 1 ? B->instance : 0,
                          .out = stdout};
    return wm_print_new(&B->ctx, name, &pc);
  }
  if (strcmp(kind, "discard") == 0) return wm_discard_new(&B->ctx, name);
  if (strcmp(kind, "collect") == 0 || strcmp(kind, "sink") == 0) {
    int fn = lwm_get_fn(B, node, kind[0] == 'c' ? "target" : "fn");
    lwm_opinfo *oi = lwm_opinfo_new(B, where);
    if (!oi) {
      wm_ctx_error(&B->ctx, "out of memory");
      return NULL;
    }
    oi->fn = fn;
    return lwm_sink_new(B, oi, name, kind[0] == 'c');
  }
  if (strcmp(kind, "union") == 0) return lwm_pass_new(B, name);
  if (lwm_build_io(B, node, kind, name, where, &op) ||
      lwm_build_windows(B, node, kind, name, where, &op) ||
      lwm_build_time(B, node, kind, name, where, &op) ||
      lwm_build_keyed(B, node, kind, name, where, &op) ||
      lwm_build_join(B, node, kind, name, where, &op) ||
      lwm_build_conn(B, node, kind, name, where, &op) ||
      lwm_build_wjoin(B, node, kind, name, where, &op) ||
      lwm_build_through(B, node, kind, name, where, &op) ||
      lwm_build_rexpr(B, node, kind, name, where, &op) ||
      lwm_build_sqllookup(B, node, kind, name, where, &op))
    return op;
  wm_ctx_error(&B->ctx, "%s: '%s' is not supported yet", where ? where : "?", kind);
  return NULL;
}

/* Whether column `field` of parse_csv node nd (on the stack) is a required integer. */
static int csv_integer(lua_State *L, int nd, const char *field) {
  int top = lua_gettop(L), ok = 0;
  lua_getfield(L, nd, "fields");
  for (lua_Integer k = 1; lua_istable(L, top + 1) && k <= (lua_Integer)lua_rawlen(L, top + 1); k++) {
    lua_rawgeti(L, top + 1, k);
    int f = lua_gettop(L);
    const char *nm = lwm_get_str(L, f, "name"), *ty = lwm_get_str(L, f, "type");
    lua_getfield(L, f, "optional");
    if (nm && strcmp(nm, field) == 0)
      ok = ty && strcmp(ty, "integer") == 0 && !lua_toboolean(L, -1);
    lua_settop(L, top + 1);
  }
  lua_settop(L, top);
  return ok;
}

/* Local pre-aggregation before the key exchange (docs/performance.md, "Pre-aggregation"):
 * whether window node `node` (its input first_in) qualifies, and how (LWM_PRE_*, 0: not).
 * A keyed tumbling event-time window with the default trigger and no evictor, on one input
 * that is a chain of forward edges at one parallelism > 1 (assigners without idleness or a
 * custom generator, filters) back to a file read in parts, through a parse_csv, and either
 * a built-in sum, min or max of a required integer column of that parse_csv (then each
 * part's records reach the window on their own channel in file order, part 1's channel
 * first, so the window can take its first record by channel, and integer sums (wrapping),
 * minima and maxima combine exactly), or count() with no late side output (then maps and
 * parse_json may be in the chain too: no first record, no field), or a Lua reduce or
 * aggregate with merge with no late side output (maps too: the window folds the parts'
 * partials in part order, at most 256 parts, which is the file's order of the records). */
static int preagg_ok(lwm_bridge *B, int nodes, int node, const built *b, lua_Integer first_in,
                     lua_Integer nin) {
  lua_State *L = B->L;
  int top = lua_gettop(L), ok = 0, assign = 0, csv = 0, kindp = 0;
  const char *fk = lwm_get_str(L, node, "fn_kind"), *agg = lwm_get_str(L, node, "agg");
  const char *field = lwm_get_str(L, node, "field");
  int late_side = lwm_get_str(L, node, "late_tag") != NULL;
  if (nin != 1 || !fk) return 0;
  if (strcmp(fk, "builtin") == 0 && agg && strcmp(agg, "count") == 0) {
    kindp = late_side ? 0 : LWM_PRE_COUNT;
  } else if (strcmp(fk, "builtin") == 0 && agg) {
    if (field && (strcmp(agg, "sum") == 0 || strcmp(agg, "min") == 0 || strcmp(agg, "max") == 0))
      kindp = LWM_PRE_FIRST;
  } else if (strcmp(fk, "reduce") == 0 && !late_side) {
    kindp = LWM_PRE_REDUCE;
  } else if (strcmp(fk, "aggregate") == 0 && !late_side) {
    lua_getfield(L, node, "agg");
    if (lua_istable(L, -1)) lua_getfield(L, -1, "merge");
    kindp = lua_isfunction(L, -1) ? LWM_PRE_AGG : 0;
    lua_settop(L, top);
  }
  /* the window tells at most 256 channels apart (wm_winop_chan, first_by_chan): the order
   * of the parts beyond is not kept (count has no order) */
  if (!kindp || (kindp != LWM_PRE_COUNT && b[first_in].n > 256)) return 0;
  /* count, reduce, aggregate: any decoder and maps may come before (sum, min and max need
   * the parse_csv's integer column: a map may change the field's type, and float sums
   * depend on their grouping; a reduce or aggregate sees the same records either way) */
  int count = kindp != LWM_PRE_FIRST;
  lua_getfield(L, node, "trigger");
  lua_getfield(L, node, "evictor");
  lua_getfield(L, node, "assigner");
  const char *ak = lua_istable(L, -1) ? lwm_get_str(L, lua_gettop(L), "kind") : NULL;
  lua_getfield(L, -1, "processing_time");
  int plain = lua_isnil(L, -4) && lua_isnil(L, -3) && ak && strcmp(ak, "tumbling") == 0 &&
              !lua_toboolean(L, -1);
  lua_settop(L, top);
  if (!plain) return 0;
  int n = b[first_in].n;
  for (lua_Integer id = first_in; id >= 1 && n > 1;) {
    const built *bi = &b[id];
    if (bi->n != n || bi->rr) break;
    lua_rawgeti(L, nodes, id);
    int nd = lua_gettop(L);
    const char *kind = lwm_get_str(L, nd, "kind");
    if (!kind) break;
    if (strcmp(kind, "read_lines") == 0) {
      lua_getfield(L, nd, "parallel");
      ok = assign && csv && lua_toboolean(L, -1);
      break;
    }
    if (csv && !count) break; /* sum, min, max: parse_csv right after the file */
    if (strcmp(kind, "assign") == 0) {
      lua_getfield(L, nd, "strategy");
      const char *sk = lua_istable(L, -1) ? lwm_get_str(L, lua_gettop(L), "kind") : NULL;
      if (!sk || strcmp(sk, "custom") == 0 || lwm_get_int(L, lua_gettop(L), "idleness", 0) != 0)
        break;
      assign = 1;
    } else if (strcmp(kind, "parse_csv") == 0) {
      if (!count && !csv_integer(L, nd, field)) break;
      csv = 1;
    } else if (count && (strcmp(kind, "parse_json") == 0 || strcmp(kind, "map") == 0 ||
                         strcmp(kind, "flat_map") == 0)) {
      csv = 1; /* count: any decoder */
    } else if (strcmp(kind, "filter") != 0) {
      break;
    }
    lua_getfield(L, nd, "inputs");
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) != 1) break;
    lua_rawgeti(L, -1, 1);
    lua_Integer next = lua_istable(L, -1) ? lwm_get_int(L, lua_gettop(L), "id", 0) : 0;
    lua_settop(L, top);
    if (next < 1 || next >= id) break;
    id = next;
  }
  lua_settop(L, top);
  return ok ? kindp : 0;
}

/* Connects every instance of `in` to the instances of `to` (n of them); pre: through a local
 * pre-aggregation per instance of `in` (preagg_ok). */
static int connect_node(lwm_bridge *B, chans *cs, const built *in, built *to, int node, int keyed,
                   const char *name, const char *where, int pre, lua_Integer node_id) {
  int mode = in->bc ? WM_XCH_BROADCAST : keyed ? WM_XCH_HASH
             : (in->rr || in->n != to->n) ? WM_XCH_ROUND_ROBIN : 0;
  if (to->n == 1) mode = 0; /* one instance: every upstream instance feeds it directly */
  for (int j = 0; j < in->n; j++) {
    wm_op *src = in->ops[j]; /* NULL: on another thread */
    if (mode == 0) {
      if (edge_to(B, cs, src, in->ports[j], src != NULL, to, to->n == 1 ? 0 : j, src) != WM_OK)
        return WM_ERR;
      continue;
    }
    wm_op *x = NULL;
    if (src) {
      char xname[600];
      snprintf(xname, sizeof xname, "%s to %s",
               mode == WM_XCH_HASH ? "key_by" : mode == WM_XCH_BROADCAST ? "broadcast" : "rebalance", name);
      wm_keysel ks = {0};
      /* count's partials: {count, key, ...}, reduce's and aggregate's: {key, acc} */
      static const char *const pkey[] = {"key"};
      if (mode == WM_XCH_HASH && pre && pre != LWM_PRE_FIRST) {
        if (wm_keysel_fields(&ks, pkey, 1) != 0) return wm_ctx_error(&B->ctx, "out of memory");
      } else if (mode == WM_XCH_HASH && lwm_build_keysel(B, node, where, &ks) != 0) {
        return WM_ERR;
      }
      x = wm_exchange_new(&B->ctx, xname, mode, to->n, mode == WM_XCH_HASH ? &ks : NULL);
      if (!x) return WM_ERR;
      if (pre && mode == WM_XCH_HASH) {
        /* the partials at the local firing, and the records late for it, in their order */
        char pname[700];
        snprintf(pname, sizeof pname, "pre-aggregation of %s %d/%d", name, j + 1, in->n);
        int late = 0;
        wm_op *pa = lwm_build_preagg(B, node, pre, pname, where, &late);
        if (!pa) return WM_ERR;
        pa->node = (uint32_t)node_id;
        pa->subtask = j;
        pa->nsub = in->n;
        pa->role = WM_ROLE_PREAGG;
        if (wm_op_connect(src, in->ports[j], pa) < 0 || wm_op_connect(pa, 0, x) < 0 ||
            (late > 0 && wm_op_connect(pa, late, x) < 0))
          return wm_ctx_error(&B->ctx, "out of memory");
      } else if (wm_op_connect(src, in->ports[j], x) < 0) {
        return wm_ctx_error(&B->ctx, "out of memory");
      }
    }
    for (int k = 0; k < to->n; k++)
      if (edge_to(B, cs, x, x ? wm_exchange_port(x, k) : 0, x != NULL, to, k, src) != WM_OK)
        return WM_ERR;
  }
  return WM_OK;
}

/* The id of input k of node i (its inputs table at `inputs`): a node of this env's plan
 * built before it. A stream of another env has an id that means another node here (even
 * node i itself: an endless loop of emits), so anything else is an error. */
static lua_Integer input_id(lwm_bridge *B, int nodes, int inputs, lua_Integer k, lua_Integer i,
                            const char *where, const char *what) {
  lua_State *L = B->L;
  lua_rawgeti(L, inputs, k);
  int in = lua_gettop(L);
  lua_Integer id = lwm_get_int(L, in, "id", 0);
  int ok = id >= 1 && id < i;
  if (ok) {
    lua_rawgeti(L, nodes, id);
    ok = lua_rawequal(L, -1, in);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (ok) return id;
  wm_ctx_error(&B->ctx, "%s: %s: input %lld is a stream of another environment (wm.env): the "
                        "streams of a job must all come from the env that executes it",
               where, what, (long long)k);
  return 0;
}

/* The state of a graph build that outlives a Lua error raised in the middle of it (the
 * caller frees it): a user's object can raise from a metamethod, and memory can run out. */
typedef struct graph_build {
  lwm_bridge *B;
  built *b;
  lua_Integer n;
  chans cs;
  wm_op ***outopp;
  int **outportp;
  lua_Integer *np;
} graph_build;

/* The job's number of key groups (base/wm_keygroup.h) into B->ctx.key_groups: the env's
 * max_parallelism, else 128, or Flink's default for a larger parallelism (1.5 times the
 * largest, rounded up to a power of two, at most 32768). A node asking for more instances
 * than there are key groups is refused: key groups are what a parallelism divides. */
static int set_key_groups(lwm_bridge *B, int env, int nodes, lua_Integer n, int envp) {
  lua_State *L = B->L;
  lua_Integer given = lwm_get_int(L, env, "max_parallelism", 0);
  lua_Integer top = envp;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, nodes, i);
    lua_Integer p = lwm_get_int(L, -1, "parallelism", 0);
    if (p > top) top = p;
    if (given > 0 && p > given) {
      const char *where = lwm_get_str(L, -1, "where");
      wm_ctx_error(&B->ctx, "%s: parallelism %lld is more than the job's max_parallelism %lld "
                            "(its number of key groups, which no parallelism can exceed: raise "
                            "it with wm.env{max_parallelism = ...} or --max-parallelism)",
                   where ? where : "?", (long long)p, (long long)given);
      lua_pop(L, 1);
      return WM_ERR;
    }
    lua_pop(L, 1);
  }
  if (given > 0 && envp > given)
    return wm_ctx_error(&B->ctx, "the job's parallelism %d is more than its max_parallelism %lld "
                                 "(its number of key groups, which no parallelism can exceed: "
                                 "raise it with wm.env{max_parallelism = ...} or "
                                 "--max-parallelism)", envp, (long long)given);
  uint32_t g = WM_KEYGROUPS_DEFAULT;
  if (given > 0) g = (uint32_t)given;
  else if (top > WM_KEYGROUPS_DEFAULT) {
    uint64_t want = (uint64_t)top + (uint64_t)top / 2;
    while (g < want && g < WM_KEYGROUPS_MAX) g *= 2;
  }
  B->ctx.key_groups = g;
  return WM_OK;
}

static int build_graph(lwm_bridge *B, int env, graph_build *gb) {
  lua_State *L = B->L;
  wm_op ***outopp = gb->outopp;
  int **outportp = gb->outportp;
  lua_Integer *np = gb->np;
  int envp = (int)lwm_get_int(L, env, "parallelism", 1);
  const char *time = lwm_get_str(L, env, "time");
  int ingestion = time && strcmp(time, "ingestion") == 0;
  int no_pre = lwm_get_int(L, env, "no_pre_aggregate", 0) != 0;
  lua_getfield(L, env, "nodes");
  int nodes = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, nodes);
  if (set_key_groups(B, env, nodes, n, envp) != WM_OK) {
    lua_pop(L, 1);
    return WM_ERR;
  }
  built *b = gb->b = calloc((size_t)n + 1, sizeof *b);
  if (!b) {
    lua_pop(L, 1);
    return wm_ctx_error(&B->ctx, "out of memory");
  }
  gb->n = n;
  int rc = WM_OK;
  chans *cs = &gb->cs;
  uint32_t ngid = 0;
  uint64_t fp = 0;
  for (lua_Integer i = 1; i <= n && rc == WM_OK; i++) {
    lua_rawgeti(L, nodes, i);
    int node = lua_gettop(L);
    const char *kind = lwm_get_str(L, node, "kind");
    const char *where = lwm_get_str(L, node, "where");
    const char *nm = lwm_get_str(L, node, "name");
    if (!where) where = "?";
    char name[512];
    snprintf(name, sizeof name, "%s (%s)", nm ? nm : kind, where);
    built *me = &b[i];
    me->name = nm ? nm : kind;
    lua_getfield(L, node, "inputs");
    int inputs = lua_gettop(L);
    lua_Integer nin = (lua_Integer)lua_rawlen(L, inputs);
    lua_Integer first_in = 0;
    for (lua_Integer k = 1; k <= nin && rc == WM_OK; k++) {
      lua_Integer id = input_id(B, nodes, inputs, k, i, where, nm ? nm : kind);
      if (id == 0) rc = WM_ERR;
      else if (k == 1) first_in = id;
    }
    if (rc != WM_OK) break;
    if (strcmp(kind, "side_output") == 0 || strcmp(kind, "rebalance") == 0 ||
        strcmp(kind, "broadcast") == 0) {
      /* no operator of its own: the input's instances, through another port */
      const built *in = &b[first_in];
      me->n = in->n;
      me->ops = malloc((size_t)in->n * sizeof *me->ops);
      me->ports = malloc((size_t)in->n * sizeof *me->ports);
      if (!me->ops || !me->ports) rc = wm_ctx_error(&B->ctx, "out of memory");
      for (int j = 0; rc == WM_OK && j < in->n; j++) {
        me->ops[j] = in->ops[j];
        me->ports[j] = in->ports[j];
        if (kind[0] == 's' && in->ops[j] &&
            (me->ports[j] = wm_op_port(in->ops[j], lwm_get_str(L, node, "tag"))) < 0)
          rc = wm_ctx_error(&B->ctx, "out of memory");
      }
      me->rr = kind[0] == 'r';
      me->bc = kind[0] == 'b';
      me->gid0 = in->gid0;
      me->pin0 = in->pin0;
      me->node = in->node;
      lua_settop(L, nodes);
      continue;
    }
    /* names are unique: a line that makes two operators of one name (s:map(f):map(g))
     * names the second "map (job.lua:3) #2" */
    me->where = where;
    me->own = 1;
    me->node = (uint32_t)i;
    int same = 1;
    for (lua_Integer j = 1; j < i; j++)
      if (b[j].own && strcmp(b[j].name, me->name) == 0 && strcmp(b[j].where, where) == 0) same++;
    if (same > 1) snprintf(name + strlen(name), sizeof name - strlen(name), " #%d", same);
    int p = (int)lwm_get_int(L, node, "parallelism", 0);
    int explicit_p = p > 0;
    if (!explicit_p) p = envp;
    if (lwm_get_int(L, node, "max_parallelism", 0) == 1) {
      /* the node says why (wm.io's one_instance); write_lines and any other: as before */
      const char *why = lwm_get_str(L, node, "one_instance");
      if (!why)
        why = strcmp(kind, "write_lines") == 0 ? "one file, one writer" : "not a parallel source";
      if (explicit_p && p > 1) {
        rc = wm_ctx_error(&B->ctx, "%s: %s cannot run in parallel: %s (set_parallelism(%d))", where,
                          nm ? nm : kind, why, p);
        break;
      }
      /* say so where the user looks (--metrics, --trace-watermarks, errors) */
      if (p > 1)
        snprintf(name + strlen(name), sizeof name - strlen(name), " [one instance: %s]", why);
      p = 1;
    }
    me->n = p;
    me->ops = calloc((size_t)p, sizeof *me->ops);
    me->ports = calloc((size_t)p, sizeof *me->ports);
    if (!me->ops || !me->ports) {
      rc = wm_ctx_error(&B->ctx, "out of memory");
      break;
    }
    me->gid0 = ngid;
    ngid += (uint32_t)p;
    me->pin0 = strcmp(kind, "collect") == 0 || strcmp(kind, "sink") == 0;
    fp = wm_hash_bytes(kind, strlen(kind), fp);
    fp = wm_hash_bytes(where, strlen(where), fp ^ (uint64_t)p);
    if (ngid > cs->cap) {
      uint32_t cap = ngid * 2;
      int *nn = realloc(cs->nin, cap * sizeof *nn);
      if (!nn) {
        rc = wm_ctx_error(&B->ctx, "out of memory");
        break;
      }
      memset(nn + cs->cap, 0, (cap - cs->cap) * sizeof *nn);
      cs->nin = nn;
      cs->cap = cap;
    }
    lua_getfield(L, node, "key");
    int keyed = lua_istable(L, -1);
    lua_pop(L, 1);
    /* (at parallelism 1 the window's inputs are connected directly, with no exchange) */
    int pre = keyed && !no_pre && p > 1 && strcmp(kind, "window") == 0 && !ingestion
                  ? preagg_ok(B, nodes, node, b, first_in, nin)
                  : 0;
    B->preagg = pre;
    for (int k = 0; k < p && rc == WM_OK; k++) {
      if (!is_local(B, me, k)) continue;
      char iname[600];
      if (p > 1) snprintf(iname, sizeof iname, "%s %d/%d", name, k + 1, p);
      else snprintf(iname, sizeof iname, "%s", name);
      B->instance = k + 1;
      B->parallelism = p;
      me->ops[k] = build_one(B, node, kind, iname, where);
      if (me->ops[k]) {
        me->ops[k]->node = (uint32_t)i;
        me->ops[k]->subtask = k;
        me->ops[k]->nsub = p;
        me->ops[k]->part_path = (int)lwm_get_int(L, node, "partition", 0);
      }
      if (!me->ops[k]) rc = WM_ERR;
      else if (B->mt && wm_mt_set_target(B->mt, me->gid0 + (uint32_t)k, me->ops[k]) != 0)
        rc = wm_ctx_error(&B->ctx, "out of memory");
      if (rc == WM_OK && strcmp(where, "?") != 0) rc = wm_op_set_where(me->ops[k], where);
    }
    const char *uid = lwm_get_str(L, node, "uid"); /* :uid("name"), checked by stream.lua */
    for (int k = 0; uid && k < p && rc == WM_OK; k++) {
      char id[160];
      if (p > 1) snprintf(id, sizeof id, "%s.%d", uid, k + 1);
      else snprintf(id, sizeof id, "%s", uid);
      if (me->ops[k]) rc = wm_op_set_uid(me->ops[k], id);
    }
    if (rc == WM_OK && ingestion && nin == 0 &&
        (strcmp(kind, "harness_input") != 0 || lwm_get_int(L, node, "replayed", 0))) {
      /* ingestion time: a source's records (a replayed source's too, on the replay's clock)
       * get their timestamps from the clock, and watermarks follow the clock */
      for (int k = 0; k < p && rc == WM_OK; k++) {
        if (!me->ops[k]) continue;
        wm_tsop_config tc;
        memset(&tc, 0, sizeof tc);
        tc.ingestion = true;
        tc.interval = B->watermark_interval;
        char tname[600];
        snprintf(tname, sizeof tname, "ingestion time (%s)%s", where, p > 1 ? " *" : "");
        wm_op *ts = wm_tsop_new(&B->ctx, tname, &tc);
        if (ts) {
          ts->node = (uint32_t)i;
          ts->subtask = k;
          ts->nsub = p;
          ts->role = WM_ROLE_CLOCK;
        }
        if (!ts || wm_op_connect(me->ops[k], me->ports[k], ts) < 0) rc = WM_ERR;
        else if (uid) { /* the clock's operator of a source with a uid: <uid>.ingestion */
          char id[180];
          if (p > 1) snprintf(id, sizeof id, "%s.%d.ingestion", uid, k + 1);
          else snprintf(id, sizeof id, "%s.ingestion", uid);
          rc = wm_op_set_uid(ts, id);
        }
        if (rc == WM_OK && ts) {
          me->ops[k] = ts;
          me->ports[k] = 0;
        }
      }
    }
    B->preagg = 0;
    /* keyed connected streams (a node with key2): input 2 is partitioned by its own key,
     * and each instance learns where its second input's channels start */
    int two = lua_getfield(L, node, "key2") == LUA_TTABLE;
    lua_pop(L, 1);
    int bcast = lua_getfield(L, node, "bcast") == LUA_TBOOLEAN; /* a broadcast second input */
    lua_pop(L, 1);
    for (lua_Integer k = 1; k <= nin && rc == WM_OK; k++) {
      lua_rawgeti(L, inputs, k);
      lua_Integer in = lwm_get_int(L, lua_gettop(L), "id", 0); /* checked by input_id */
      lua_pop(L, 1);
      if ((two || bcast) && k == 2)
        for (int j = 0; j < p; j++)
          if (me->ops[j]) {
            int first2 = cs->nin[me->gid0 + (uint32_t)j];
            if (wm_op_is_ijoin(me->ops[j])) wm_ijoin_set_second_input(me->ops[j], first2);
            else if (!wm_op_is_sqljoin(me->ops[j])) /* (it reads wm_op_set_two_inputs') */
              wm_keyedop_set_second_input(me->ops[j], first2);
          }
      /* any operator of two inputs (but a union, whose inputs are alike) is a two-input
       * operator: the graph counts and traces its inputs apart (wm_op_set_two_inputs) */
      if (nin == 2 && k == 2 && strcmp(kind, "union") != 0)
        for (int j = 0; j < p; j++)
          if (me->ops[j]) wm_op_set_two_inputs(me->ops[j], cs->nin[me->gid0 + (uint32_t)j]);
      /* where input 1 comes from, and whether it forwards at equal parallelisms (as
       * connect_node decides): a restore at another parallelism tells from them which
       * input an old channel was of */
      if (nin == 2 && k == 1 && strcmp(kind, "union") != 0)
        for (int j = 0; j < p; j++)
          if (me->ops[j]) {
            me->ops[j]->in1_node = b[in].node;
            me->ops[j]->in1_fwd = !keyed && !b[in].rr && !b[in].bc;
          }
      if (two && k == 2) {
        lua_getfield(L, node, "key");
        lua_getfield(L, node, "key2");
        lua_setfield(L, node, "key"); /* (connect_node reads the key of the node) */
      }
      rc = connect_node(B, cs, &b[in], me, node, keyed, name, where, pre, i);
      if (two && k == 2) lua_setfield(L, node, "key"); /* back to the first input's */
    }
    lua_settop(L, nodes);
  }
  if (rc == WM_OK) {
    *outopp = calloc((size_t)n + 1, sizeof **outopp);
    *outportp = calloc((size_t)n + 1, sizeof **outportp);
    if (!*outopp || !*outportp) rc = wm_ctx_error(&B->ctx, "out of memory");
    for (lua_Integer i = 1; rc == WM_OK && i <= n; i++) {
      (*outopp)[i] = b[i].n ? b[i].ops[0] : NULL;
      (*outportp)[i] = b[i].n ? b[i].ports[0] : 0;
    }
    *np = n;
  }
  B->fingerprint = fp;
  lua_pop(L, 1); /* nodes */
  return rc;
}

/* build_graph under a protected call: graph_build (light userdata), env -> rc */
static int build_graph_protected(lua_State *L) {
  graph_build *gb = lua_touserdata(L, 1);
  lwm_frame fr;
  lwm_enter(gb->B, L, &fr); /* the bridge's stack slots, on this call's frame */
  lua_pushinteger(L, build_graph(gb->B, 2, gb));
  return 1;
}

int lwm_build_graph(lwm_bridge *B, int env, wm_op ***outopp, int **outportp, lua_Integer *np) {
  lua_State *L = B->L;
  graph_build gb = {.B = B, .outopp = outopp, .outportp = outportp, .np = np};
  *outopp = NULL;
  *outportp = NULL;
  *np = 0;
  lwm_frame saved = {.L = B->L, .msgh = B->msgh, .slots = B->slots, .fns = B->fns};
  lua_pushcfunction(L, build_graph_protected);
  lua_pushlightuserdata(L, &gb);
  lua_pushvalue(L, env);
  int st = lua_pcall(L, 2, 1, B->msgh);
  /* back to this frame's slots (lwm_leave would reset the top of a frame that is gone) */
  B->L = saved.L;
  B->msgh = saved.msgh;
  B->slots = saved.slots;
  B->fns = saved.fns;
  int rc;
  if (st == LUA_OK) {
    rc = (int)lua_tointeger(L, -1);
  } else {
    const char *m = lua_tostring(L, -1);
    rc = wm_ctx_error(&B->ctx, "%s", m ? m : "(error object is not a string)");
  }
  lua_pop(L, 1);
  lwm_pending_free_all(B); /* parts of an operator the error stopped half-built */
  for (lua_Integer i = 1; gb.b && i <= gb.n; i++) {
    free(gb.b[i].ops);
    free(gb.b[i].ports);
  }
  free(gb.b);
  free(gb.cs.nin);
  if (rc != WM_OK) {
    free(*outopp);
    free(*outportp);
    *outopp = NULL;
    *outportp = NULL;
    *np = 0;
  }
  return rc;
}

/* ---- build ----------------------------------------------------------------------------- */

int lwm_build(lwm_bridge *B, int env, wm_op ***outopp, int **outportp, lua_Integer *np) {
  B->watermark_interval = (int64_t)lwm_get_int(B->L, env, "watermark_interval", 200);
  int rc = lwm_build_graph(B, env, outopp, outportp, np);
  if (rc == WM_OK) rc = wm_ctx_prepare(&B->ctx);
  if (rc != WM_OK) {
    free(*outopp);
    free(*outportp);
    *outopp = NULL;
    *outportp = NULL;
  }
  return rc;
}

