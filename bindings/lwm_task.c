/* Scale-out's side of the bindings (docs/scaleout.md, lua/wm/scaleout.lua):
 * core.supervise{...} runs the supervisor (core/exec/wm_super.c) on a Kafka group or NATS leases;
 * core.task_guard() makes a task's child die with its supervisor; and the status line a
 * task's child writes on WM_TASK_STATUS_FD (its partition's offset and its watermark),
 * a service of the run (lwm_services) like the progress line. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <signal.h>
#include <sys/prctl.h>
#endif

#include "exec/wm_super.h"
#include "io/wm_conn.h"
#include "io/wm_member.h"
#include "lwm.h"
#include "lwm_plan.h"
#include "lwm_task.h"
#include "ops/wm_tsop.h"
#include "state/wm_ckpt_store.h"

#define STATUS_EVERY_MS 500

/* ---- core.supervise ------------------------------------------------------------------------ */

typedef struct kafka_ud {
  const char *brokers;
  const char *const *props;
  int nprops;
} kafka_ud;

static wm_member *kafka_member(const wm_member_common *c, void *ud, wm_error *err) {
  kafka_ud *k = ud;
  wm_member_kafka_config kc = {.c = *c, .brokers = k->brokers, .props = k->props, .nprops = k->nprops};
  return wm_member_kafka_new(&kc, err);
}

typedef struct nats_ud {
  const char *url;
  const char *const *partitions; /* per source, NULL entries: leases */
  const char *const *subjects;
  long long lease_ms;
} nats_ud;

static wm_member *nats_member(const wm_member_common *c, void *ud, wm_error *err) {
  nats_ud *n = ud;
  wm_member_nats_config nc = {.c = *c, .url = n->url, .partitions = n->partitions, .subjects = n->subjects,
                              .lease_ms = n->lease_ms};
  return wm_member_nats_new(&nc, err);
}

/* The strings of the list field k of the table at idx (borrowed from it); *n set. NULL
 * when out of memory. Caller frees the array. */
static const char **strings(lua_State *L, int idx, const char *k, int *n) {
  lua_getfield(L, idx, k);
  int len = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  const char **v = calloc((size_t)len + 1, sizeof *v);
  for (int i = 0; v && i < len; i++) {
    lua_rawgeti(L, -1, i + 1);
    v[i] = lua_tostring(L, -1); /* the strings stay in the table */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  *n = len;
  return v;
}

/* core.supervise{kind = "kafka", group, ckdir, index, node, sources = {...}, counts = {...},
 * args = {...}, brokers, props = {...}, metrics, backoff_ms} -> true | nil, message; kind = "nats": url,
 * partitions = {share | false, ...}, subjects = {filter, ...}, lease_ms instead of brokers and
 * props. */
static int l_supervise(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *kind = lwm_get_str(L, 1, "kind");
  int is_nats = kind && strcmp(kind, "nats") == 0;
  luaL_argcheck(L, kind && (strcmp(kind, "kafka") == 0 || is_nats), 1, "kind must be 'kafka' or 'nats'");
  int nsources, nargs, nprops, ncounts, nshares, nsubjects;
  const char **sources = strings(L, 1, "sources", &nsources);
  const char **shares = strings(L, 1, "partitions", &nshares);
  const char **subjects = strings(L, 1, "subjects", &nsubjects);
  const char **args = strings(L, 1, "args", &nargs);
  const char **props = strings(L, 1, "props", &nprops);
  int *counts = calloc((size_t)nsources + 1, sizeof *counts);
  lua_getfield(L, 1, "counts");
  ncounts = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  for (int i = 0; counts && i < nsources && i < ncounts; i++) {
    lua_rawgeti(L, -1, i + 1);
    counts[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  char exe[4096];
  size_t exelen = sizeof exe;
  int bad = !sources || !args || !props || !counts || !shares || !subjects ||
            (nshares && nshares != nsources) || (nsubjects && nsubjects != nsources);
  if (!bad && uv_exepath(exe, &exelen) != 0) bad = 2;
  if (bad) {
    free(shares);
    free(subjects);
    free(sources);
    free(args);
    free(props);
    free(counts);
    return luaL_error(L, bad == 2 ? "scale_out: cannot find the wmrun binary" : "out of memory");
  }
  kafka_ud kud = {.brokers = lwm_get_str(L, 1, "brokers"), .props = props, .nprops = nprops};
  /* (a share per source, or none: all leased) */
  nats_ud nud = {.url = lwm_get_str(L, 1, "url"), .partitions = nshares ? shares : NULL,
                 .subjects = nsubjects ? subjects : NULL,
                 .lease_ms = (long long)lwm_get_int(L, 1, "lease_ms", 0)};
  /* a child's stderr lines that are not its failure's message: Lua's traceback header
   * (the lines under it are indented) and the notice every restarted child prints first */
  static const char *const quiet_lines[] = {"stack traceback:", "wmrun: resuming from checkpoint ",
                                            NULL};
  wm_super_config cfg = {.exe = exe,
                         .args = args,
                         .nargs = nargs,
                         .ckdir = lwm_get_str(L, 1, "ckdir"),
                         .index = (int)lwm_get_int(L, 1, "index", 1),
                         .node = (int)lwm_get_int(L, 1, "node", 0),
                         .member = {.group = lwm_get_str(L, 1, "group"),
                                    .nsources = nsources,
                                    .sources = sources,
                                    .counts = counts},
                         .member_new = is_nats ? nats_member : kafka_member,
                         .member_ud = is_nats ? (void *)&nud : (void *)&kud,
                         .metrics = lua_getfield(L, 1, "metrics") != LUA_TNIL && lua_toboolean(L, -1),
                         .log = stderr,
                         .quiet_lines = quiet_lines};
  lua_pop(L, 1);
  cfg.backoff_ms = lwm_get_int(L, 1, "backoff_ms", 0);
  wm_error err;
  int rc = 0;
  if (cfg.ckdir && !strstr(cfg.ckdir, "://") && mkdir(cfg.ckdir, 0777) != 0 && errno != EEXIST)
    rc = wm_error_set(&err, "cannot create the checkpoint folder %s: %s", cfg.ckdir, strerror(errno));
  if (rc == 0) rc = wm_super_run(&cfg, &err);
  free(shares);
  free(subjects);
  free(sources);
  free(args);
  free(props);
  free(counts);
  if (rc != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "scale_out: %s", wm_error_format(&err));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- core.task_mark ---------------------------------------------------------------------- */

/* core.task_mark(where, path, name) -> true | nil, message: sets the mark `name` of the
 * sub-path `path` of the checkpoint folder or store `where` (wm_ckpt_store.h: a task's ENDED,
 * which its supervisor reads) */
static int l_task_mark(lua_State *L) {
  const char *where = luaL_checkstring(L, 1), *path = luaL_checkstring(L, 2),
             *name = luaL_checkstring(L, 3);
  wm_error err;
  wm_ckpt_marks *m = wm_ckpt_marks_open(where, &err);
  int rc = m ? wm_ckpt_mark_set(m, path, name, &err) : -1;
  wm_ckpt_marks_free(m);
  if (rc != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- core.task_guard ------------------------------------------------------------------------ */

/* Blocks on the supervisor-alive pipe; its end (the supervisor died, however) ends the
 * process at once, so that a task never runs in two processes. */
static void watch_parent(void *arg) {
  int fd = (int)(intptr_t)arg;
  char b[64];
  for (;;) {
    ssize_t r = read(fd, b, sizeof b);
    if (r == 0 || (r < 0 && errno != EINTR)) _exit(137);
  }
}

/* core.task_guard() -> true: the child of a supervisor dies with it */
static int l_task_guard(lua_State *L) {
#ifdef __linux__
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return luaL_error(L, "scale_out: prctl: %s", strerror(errno));
#endif
  /* the task's own subprocesses (os.execute) do not keep its pipes open */
  const char *sfd = getenv("WM_TASK_STATUS_FD");
  if (sfd && *sfd) fcntl(atoi(sfd), F_SETFD, FD_CLOEXEC);
  const char *v = getenv("WM_TASK_PARENT_FD");
  if (v && *v) {
    int pfd = atoi(v);
    fcntl(pfd, F_SETFD, FD_CLOEXEC);
    int fl = fcntl(pfd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(pfd, F_SETFL, fl & ~O_NONBLOCK); /* the watch blocks */
    uv_thread_t th;
    int fd = atoi(v);
    /* never joined: it ends the process, or ends with it */
    if (uv_thread_create(&th, watch_parent, (void *)(intptr_t)fd) != 0)
      return luaL_error(L, "scale_out: cannot watch the supervisor");
  }
  lua_pushboolean(L, 1);
  return 1;
}

void lwm_task_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"supervise", l_supervise}, {"task_guard", l_task_guard},
                                 {"task_mark", l_task_mark}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0); /* into the core table on the stack */
}

/* ---- the status line ------------------------------------------------------------------------ */

typedef struct lwm_task_status {
  uv_timer_t timer; /* first: freed in its close callback */
  lwm_bridge *B;
  int fd;
} lwm_task_status;

static void status_write(lwm_task_status *ts) {
  const wm_ctx *ctx = &ts->B->ctx;
  long long pos = -1;
  int64_t wm = WM_TIME_MAX;
  int tsops = 0;
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    const char *name;
    int64_t p;
    if (pos < 0 && wm_op_is_partsrc(op) && wm_partsrc_position(op, 0, &name, &p) == 0) pos = (long long)p;
    if (wm_op_is_tsop(op)) {
      int64_t w = wm_tsop_last_watermark(op);
      if (w < wm) wm = w;
      tsops++;
    }
  }
  char line[96], wmbuf[32], posbuf[32];
  if (!tsops || wm == WM_TIME_MIN) snprintf(wmbuf, sizeof wmbuf, "-");
  else if (wm == WM_TIME_MAX) snprintf(wmbuf, sizeof wmbuf, "end");
  else snprintf(wmbuf, sizeof wmbuf, "%lld", (long long)wm);
  if (pos < 0) snprintf(posbuf, sizeof posbuf, "-");
  else snprintf(posbuf, sizeof posbuf, "%lld", pos);
  int n = snprintf(line, sizeof line, "%s %s\n", posbuf, wmbuf);
  if (n > 0 && write(ts->fd, line, (size_t)n) < 0) {
    /* the supervisor is gone: the parent watch ends the process */
  }
}

static void on_status(uv_timer_t *t) { status_write(t->data); }

static void on_status_closed(uv_handle_t *h) { free(h); }

int lwm_task_status_start(lwm_bridge *B, uv_loop_t *loop, struct lwm_task_status **out) {
  *out = NULL;
  const char *v = getenv("WM_TASK_STATUS_FD");
  if (!v || !*v || !getenv("WM_TASK")) return WM_OK;
  lwm_task_status *ts = calloc(1, sizeof *ts);
  int urc = ts ? uv_timer_init(loop, &ts->timer) : UV_ENOMEM;
  if (urc != 0) {
    free(ts);
    return wm_ctx_error(&B->ctx, "cannot start the task's status: %s", uv_strerror(urc));
  }
  ts->B = B;
  ts->fd = atoi(v);
  ts->timer.data = ts;
  *out = ts;
  if ((urc = uv_timer_start(&ts->timer, on_status, 0, STATUS_EVERY_MS)) != 0)
    return wm_ctx_error(&B->ctx, "cannot start the task's status: %s", uv_strerror(urc));
  uv_unref((uv_handle_t *)&ts->timer);
  return WM_OK;
}

void lwm_task_status_end(struct lwm_task_status *ts) {
  if (!ts) return;
  status_write(ts); /* the last numbers */
  uv_close((uv_handle_t *)&ts->timer, on_status_closed);
}
