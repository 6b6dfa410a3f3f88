/* The scale-out supervisor (wm_super.h): one libuv loop of its own, the group's events
 * (uv_async from the membership thread, and a tick), one child process per owned
 * partition (uv_spawn, exit callbacks), its stderr forwarded line by line, its status pipe
 * read for --metrics. Every handle lives in a struct freed only after its close callback. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "exec/wm_super.h"
#include "state/wm_ckpt_store.h"

extern char **environ;

#define TICK_MS 500
#define MAX_CRASHES 5
#define BACKOFF_MS 200 /* unless cfg->backoff_ms says otherwise (wmrun --restart-backoff) */
#define STEADY_MS 30000 /* a child that ran this long was not crashing in a row */
#define LINE_MAX_LEN 1024

typedef struct wm_super wm_super;
typedef struct task task;

/* One run of a task's child: the process and its three pipes, freed when all four are
 * closed. */
typedef struct child {
  task *t;
  uv_process_t proc;
  uv_pipe_t err, st, parent; /* its stderr, its status, its supervisor-alive pipe */
  int closing;               /* handles still to close (their close callbacks count down) */
  int exited, err_eof, st_eof, finished;
  int termed;                /* SIGTERM sent (a second one would stop it without its checkpoint) */
  int64_t status;
  int sig;
  uint64_t started;          /* uv_now */
  char errline[LINE_MAX_LEN]; size_t errlen; /* the line being read */
  char stline[256]; size_t stlen;
} child;

struct task {
  wm_super *S;
  int source, partition;
  char pname[256];           /* "events/2" */
  char name[300];            /* "events-2" */
  int owned;                 /* assigned to us */
  int ended;                 /* its mark ENDED seen (task-<name>/ENDED) */
  int revoked;               /* give back once the child has stopped */
  int lost;
  int crashes;
  int backoff_on;
  child *c;                  /* the running child, or NULL */
  uv_timer_t backoff;
  char last[LINE_MAX_LEN];   /* the current child's last error line ("" when none) */
  char offset[32], wm[32];   /* its last status */
};

struct wm_super {
  const wm_super_config *cfg;
  uv_loop_t loop;
  uv_async_t async;
  uv_signal_t sterm, sint, susr1;
  uv_timer_t tick;
  int open;                  /* supervisor handles not closed yet */
  wm_member *m;
  wm_ckpt_marks *marks;      /* of the checkpoint folder or store: the tasks' ENDED */
  char markerr[512];         /* the last failure to read a mark, said once */
  task *tasks;
  int ntasks;
  int *first;                /* per source: index of its partition 0 in tasks */
  int stopping, failed, shut;
  int running;               /* children alive */
  char err[1024];
  /* the rebalance line being gathered */
  char assigned[2048], revoked[2048], lost[2048];
};

/* ---- small helpers ---------------------------------------------------------------------- */

/* The back-off before a task's n-th start again in a row (n >= 1): the first, doubling. */
static uint64_t backoff(const wm_super *S, int n) {
  uint64_t first = S->cfg->backoff_ms > 0 ? (uint64_t)S->cfg->backoff_ms : BACKOFF_MS;
  return first << (n - 1);
}

void wm_super_task_name(int index, const char *pname, char *buf, size_t n) {
  size_t o = 0;
  if (n == 0) return;
  if (index > 1) {
    int k = snprintf(buf, n, "x%d.", index);
    o = k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
  }
  for (const char *p = pname; *p && o + 1 < n; p++) {
    char ch = *p;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    buf[o++] = ok ? ch : '-';
  }
  buf[o] = '\0';
}

static void list_add(char *list, size_t n, const char *name) {
  size_t len = strlen(list);
  snprintf(list + len, n - len, "%s%s", len ? ", " : "", name);
}

/* Whether the task's mark ENDED is set (in the checkpoint folder, or the store). A store that
 * cannot be read counts as not ended (asked again at the next tick), said once per message. */
static int ended_mark(wm_super *S, const task *t) {
  if (!S->marks) return 0;
  char path[320];
  snprintf(path, sizeof path, "task-%s", t->name);
  wm_error e;
  int r = wm_ckpt_mark_get(S->marks, path, "ENDED", &e);
  if (r < 0 && strncmp(S->markerr, e.msg, 500) != 0) {
    snprintf(S->markerr, sizeof S->markerr, "%.500s", e.msg);
    fprintf(S->cfg->log, "wmrun: group '%s': cannot tell whether task %s has ended (asking again): %s\n",
            S->cfg->member.group, t->name, e.msg);
    fflush(S->cfg->log);
  }
  return r == 1;
}

static void fail(wm_super *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(wm_super *S, const char *fmt, ...) {
  if (S->failed) return;
  S->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(S->err, sizeof S->err, fmt, ap);
  va_end(ap);
}

static void on_handle_closed(uv_handle_t *h) {
  wm_super *S = h->data;
  S->open--;
}

static void start_task(task *t);
static void check_done(wm_super *S);

/* ---- a child's pipes ---------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  (void)suggested;
  /* one buffer per read, freed in the read callback */
  buf->base = malloc(4096);
  buf->len = buf->base ? 4096 : 0;
}

static void child_maybe_finish(child *c);

/* The child's stderr: forwarded whole lines, the last one kept for a failure message. */
static void err_line(child *c, const char *s, size_t n) {
  task *t = c->t;
  FILE *log = t->S->cfg->log;
  fwrite(s, 1, n, log);
  fputc('\n', log);
  fflush(log);
  /* the message, not the indented lines under it, nor the lines the host calls quiet (its
   * traceback's header; the notice of a resume, which every restarted child prints first
   * and which says nothing of why it failed) */
  if (n == 0 || s[0] == '\t' || s[0] == ' ') return;
  for (const char *const *q = t->S->cfg->quiet_lines; q && *q; q++) {
    size_t k = strlen(*q);
    if (n >= k && memcmp(s, *q, k) == 0) return;
  }
  size_t k = n < sizeof t->last - 1 ? n : sizeof t->last - 1;
  memcpy(t->last, s, k);
  t->last[k] = '\0';
}

static void on_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  child *c = s->data;
  for (ssize_t i = 0; i < nread; i++) {
    char ch = buf->base[i];
    if (ch == '\n' || c->errlen == sizeof c->errline) {
      err_line(c, c->errline, c->errlen);
      c->errlen = 0;
      if (ch == '\n') continue;
    }
    c->errline[c->errlen++] = ch;
  }
  free(buf->base);
  if (nread < 0) {
    if (c->errlen) err_line(c, c->errline, c->errlen);
    c->errlen = 0;
    uv_read_stop(s);
    c->err_eof = 1;
    child_maybe_finish(c);
  }
}

static void status_line(child *c, char *s) {
  task *t = c->t;
  char off[32], wm[32];
  if (sscanf(s, "%31s %31s", off, wm) == 2) {
    memcpy(t->offset, off, sizeof off);
    memcpy(t->wm, wm, sizeof wm);
  }
}

static void on_st_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  child *c = s->data;
  for (ssize_t i = 0; i < nread; i++) {
    char ch = buf->base[i];
    if (ch == '\n' || c->stlen == sizeof c->stline - 1) {
      c->stline[c->stlen] = '\0';
      status_line(c, c->stline);
      c->stlen = 0;
      continue;
    }
    c->stline[c->stlen++] = ch;
  }
  free(buf->base);
  if (nread < 0) {
    uv_read_stop(s);
    c->st_eof = 1;
    child_maybe_finish(c);
  }
}

static void on_child_handle_closed(uv_handle_t *h) {
  child *c = h->data;
  if (--c->closing == 0) free(c);
}

static void release(task *t) {
  wm_super *S = t->S;
  wm_error e;
  t->revoked = 0;
  if (S->m && wm_member_release(S->m, t->source, t->partition, &e) != 0)
    fail(S, "%s", e.msg);
}

static void on_backoff(uv_timer_t *h) {
  task *t = h->data;
  t->backoff_on = 0;
  if (t->owned && !t->S->stopping && !t->S->failed) start_task(t);
}

/* The child is gone and its pipes are read to their end: what now. */
static void child_maybe_finish(child *c) {
  if (c->finished || !c->exited || !c->err_eof || !c->st_eof) return;
  c->finished = 1;
  task *t = c->t;
  wm_super *S = t->S;
  t->c = NULL;
  S->running--;
  c->closing = 4;
  uv_close((uv_handle_t *)&c->proc, on_child_handle_closed);
  uv_close((uv_handle_t *)&c->err, on_child_handle_closed);
  uv_close((uv_handle_t *)&c->st, on_child_handle_closed);
  uv_close((uv_handle_t *)&c->parent, on_child_handle_closed);
  int clean = c->exited && c->status == 0 && c->sig == 0;
  if (clean && ended_mark(S, t)) {
    t->ended = 1;
    t->crashes = 0;
    if (t->revoked) release(t);
  } else if (t->lost) {
    /* killed because another process may run it now; assigned to us again meanwhile, it
     * starts again from its newest checkpoint */
    t->lost = 0;
    if (t->owned && !S->stopping && !S->failed) start_task(t);
  } else if (t->revoked) {
    t->crashes = 0;
    release(t);
  } else if (!S->stopping && !S->failed && t->owned) {
    if (uv_now(&S->loop) - c->started >= STEADY_MS) t->crashes = 0;
    t->crashes++;
    char how[64];
    if (c->sig) snprintf(how, sizeof how, "killed by signal %d", c->sig);
    else snprintf(how, sizeof how, "exit status %" PRId64, c->status);
    char again[64] = "";
    if (t->crashes < MAX_CRASHES)
      snprintf(again, sizeof again, "; starting it again in %" PRIu64 " ms", backoff(S, t->crashes));
    fprintf(S->cfg->log, "wmrun: group '%s': task %s (%s) failed (%s)%s\n", S->cfg->member.group, t->name,
            t->pname, how, again);
    if (t->crashes >= MAX_CRASHES) {
      char what[700];
      snprintf(what, sizeof what, "task %s (partition %s) failed %d times in a row, the last %s%s",
               t->name, t->pname, MAX_CRASHES, c->sig ? "" : "with ", how);
      if (t->last[0]) fail(S, "%s: %s", what, t->last);
      else fail(S, "%s (it printed no error)", what);
    } else {
      if (uv_timer_start(&t->backoff, on_backoff, backoff(S, t->crashes), 0) == 0) t->backoff_on = 1;
      else fail(S, "cannot start a timer");
    }
  }
  check_done(S);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig) {
  child *c = p->data;
  c->exited = 1;
  c->status = status;
  c->sig = sig;
  child_maybe_finish(c);
}

/* ---- starting a task ---------------------------------------------------------------------- */

/* "WM_TASK=<head> <source> <tail>" (caller frees), NULL when out of memory. */
static char *task_var(const char *head, const char *source, const char *tail) {
  size_t n = strlen(head) + strlen(source) + strlen(tail) + 16;
  char *s = malloc(n);
  if (s) snprintf(s, n, "WM_TASK=%s %s %s", head, source, tail);
  return s;
}

static void spawn_failed(task *t, const char *why) {
  snprintf(t->last, sizeof t->last, "cannot start the task's process: %s", why);
  t->crashes++;
  if (t->crashes >= MAX_CRASHES) {
    fail(t->S, "task %s: %s", t->name, t->last);
    check_done(t->S);
    return;
  }
  if (uv_timer_start(&t->backoff, on_backoff, backoff(t->S, t->crashes), 0) == 0)
    t->backoff_on = 1;
}

static void start_task(task *t) {
  wm_super *S = t->S;
  const wm_super_config *cfg = S->cfg;
  if (t->c || t->ended) return;
  if (ended_mark(S, t)) {
    t->ended = 1;
    check_done(S);
    return;
  }
  t->last[0] = '\0'; /* this child's own messages */
  child *c = calloc(1, sizeof *c);
  if (!c) {
    spawn_failed(t, "out of memory");
    return;
  }
  c->t = t;
  /* the environment: ours without WM_TASK*, and the task's */
  size_t nenv = 0;
  while (environ[nenv]) nenv++;
  char **env = calloc(nenv + 4, sizeof *env);
  char **args = calloc((size_t)cfg->nargs + 2, sizeof *args);
  char head[64];
  snprintf(head, sizeof head, "%d %d", cfg->index, cfg->node);
  char tail[600];
  snprintf(tail, sizeof tail, "%d %s", t->partition, t->name);
  char *wmtask = NULL;
  if (env && args) wmtask = task_var(head, cfg->member.sources[t->source], tail);
  if (!env || !args || !wmtask) {
    free(env);
    free(args);
    free(wmtask);
    free(c);
    spawn_failed(t, "out of memory");
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < nenv; i++)
    if (strncmp(environ[i], "WM_TASK", 7) != 0) env[k++] = environ[i];
  env[k++] = wmtask;
  env[k++] = (char *)"WM_TASK_STATUS_FD=3";
  env[k++] = (char *)"WM_TASK_PARENT_FD=4";
  env[k] = NULL;
  args[0] = (char *)cfg->exe;
  for (int i = 0; i < cfg->nargs; i++) args[i + 1] = (char *)cfg->args[i];
  args[cfg->nargs + 1] = NULL;
  int rc = uv_pipe_init(&S->loop, &c->err, 0);
  int inited = rc == 0;
  if (rc == 0) inited += (rc = uv_pipe_init(&S->loop, &c->st, 0)) == 0;
  if (rc == 0) inited += (rc = uv_pipe_init(&S->loop, &c->parent, 0)) == 0;
  uv_stdio_container_t io[5];
  io[0].flags = UV_INHERIT_FD;
  io[0].data.fd = 0;
  io[1].flags = UV_INHERIT_FD;
  io[1].data.fd = 1;
  io[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  io[2].data.stream = (uv_stream_t *)&c->err;
  io[3].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  io[3].data.stream = (uv_stream_t *)&c->st;
  io[4].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
  io[4].data.stream = (uv_stream_t *)&c->parent;
  uv_process_options_t po;
  memset(&po, 0, sizeof po);
  po.file = cfg->exe;
  po.args = args;
  po.env = env;
  po.exit_cb = on_exit_cb;
  po.stdio = io;
  po.stdio_count = 5;
  /* a group of its own: the terminal's Ctrl-C reaches the supervisor, which stops the
   * children with a checkpoint, not the children directly */
  po.flags = UV_PROCESS_DETACHED;
  c->proc.data = c->err.data = c->st.data = c->parent.data = c;
  int spawned = rc == 0; /* uv_spawn initialises the process handle even when it fails */
  if (rc == 0) rc = uv_spawn(&S->loop, &c->proc, &po);
  free(env);
  free(args);
  free(wmtask);
  if (rc != 0) {
    /* the pipes that were made are closed; the process handle, never started, too */
    c->closing = inited + spawned;
    c->finished = 1;
    if (inited > 0) uv_close((uv_handle_t *)&c->err, on_child_handle_closed);
    if (inited > 1) uv_close((uv_handle_t *)&c->st, on_child_handle_closed);
    if (inited > 2) uv_close((uv_handle_t *)&c->parent, on_child_handle_closed);
    if (spawned) uv_close((uv_handle_t *)&c->proc, on_child_handle_closed);
    if (c->closing == 0) free(c);
    spawn_failed(t, uv_strerror(rc));
    return;
  }
  c->started = uv_now(&S->loop);
  t->c = c;
  S->running++;
  t->offset[0] = t->wm[0] = '\0';
  if (uv_read_start((uv_stream_t *)&c->err, on_alloc, on_err_read) != 0) c->err_eof = 1;
  if (uv_read_start((uv_stream_t *)&c->st, on_alloc, on_st_read) != 0) c->st_eof = 1;
}

/* ---- the group's events ------------------------------------------------------------------ */

static void flush_rebalance(wm_super *S) {
  if (!S->assigned[0] && !S->revoked[0] && !S->lost[0]) return;
  char line[7000];
  size_t o = (size_t)snprintf(line, sizeof line, "wmrun: group '%s':", S->cfg->member.group);
  const char *sep = " ";
  if (S->assigned[0]) {
    o += (size_t)snprintf(line + o, sizeof line - o, "%sassigned %s", sep, S->assigned);
    sep = "; ";
  }
  if (S->revoked[0] && o < sizeof line) {
    o += (size_t)snprintf(line + o, sizeof line - o, "%srevoked %s (to another process)", sep, S->revoked);
    sep = "; ";
  }
  if (S->lost[0] && o < sizeof line)
    snprintf(line + o, sizeof line - o, "%slost %s (the group went on without this process)", sep, S->lost);
  fprintf(S->cfg->log, "%s\n", line);
  fflush(S->cfg->log);
  S->assigned[0] = S->revoked[0] = S->lost[0] = '\0';
}

static void stop_backoff(task *t) {
  if (!t->backoff_on) return;
  uv_timer_stop(&t->backoff);
  t->backoff_on = 0;
}

/* Asks the task's child to stop with its final checkpoint, once. */
static void terminate(task *t) {
  if (!t->c || t->c->termed) return;
  t->c->termed = 1;
  uv_process_kill(&t->c->proc, SIGTERM);
}

static void poll_member(wm_super *S) {
  if (!S->m) return;
  wm_member_event ev;
  wm_error e;
  int r = 0;
  /* (a task started here may find every partition ended: check_done then frees S->m) */
  while (S->m && (r = wm_member_poll(S->m, &ev, &e)) == 1) {
    if (ev.source < 0 || ev.source >= S->cfg->member.nsources || ev.partition < 0 ||
        ev.partition >= S->cfg->member.counts[ev.source])
      continue;
    task *t = &S->tasks[S->first[ev.source] + ev.partition];
    if (ev.kind == WM_MEMBER_ASSIGN) {
      list_add(S->assigned, sizeof S->assigned, t->pname);
      t->owned = 1;
      t->crashes = 0;
      /* a child still dying (lost) is started again when it is gone */
      if (!S->stopping && !S->failed && !t->c) start_task(t);
    } else if (ev.kind == WM_MEMBER_REVOKE) {
      list_add(S->revoked, sizeof S->revoked, t->pname);
      t->owned = 0;
      stop_backoff(t);
      if (t->c) {
        t->revoked = 1;
        terminate(t);
      } else {
        release(t);
      }
    } else if (ev.kind == WM_MEMBER_LOST) {
      list_add(S->lost, sizeof S->lost, t->pname);
      t->owned = 0;
      stop_backoff(t);
      if (t->c) {
        t->lost = 1;
        uv_process_kill(&t->c->proc, SIGKILL);
      }
    }
  }
  flush_rebalance(S);
  if (r < 0) fail(S, "%s", e.msg);
}

static void print_table(wm_super *S) {
  FILE *log = S->cfg->log;
  int owned = 0;
  for (int i = 0; i < S->ntasks; i++) owned += S->tasks[i].owned;
  fprintf(log, "scale-out: group '%s', %d partition%s owned by this process\n", S->cfg->member.group, owned,
          owned == 1 ? "" : "s");
  fprintf(log, "%-24s %-24s %12s %10s %16s  %s\n", "task", "partition", "offset", "lag", "watermark", "state");
  for (int i = 0; i < S->ntasks; i++) {
    task *t = &S->tasks[i];
    if (!t->owned) continue;
    char lag[32] = "-";
    long long end = S->m && S->m->ops->end ? S->m->ops->end(S->m, t->source, t->partition) : -1;
    char *stop = NULL;
    long long off = t->offset[0] ? strtoll(t->offset, &stop, 10) : -1;
    if (end >= 0 && off >= 0 && stop && *stop == '\0') snprintf(lag, sizeof lag, "%lld", end > off ? end - off : 0);
    fprintf(log, "%-24s %-24s %12s %10s %16s  %s\n", t->name, t->pname, t->offset[0] ? t->offset : "-", lag,
            t->wm[0] ? t->wm : "-",
            t->ended ? "ended" : t->c ? "running" : t->backoff_on ? "restarting" : "waiting");
  }
  fflush(log);
}

/* ---- lifetime ------------------------------------------------------------------------------ */

static void shutdown_handles(wm_super *S) {
  if (S->shut) return;
  S->shut = 1;
  if (S->cfg->metrics) print_table(S);
  /* the membership thread may still notify: it is joined before the async is closed */
  wm_member_free(S->m);
  S->m = NULL;
  wm_ckpt_marks_free(S->marks);
  S->marks = NULL;
  uv_close((uv_handle_t *)&S->async, on_handle_closed);
  uv_close((uv_handle_t *)&S->sterm, on_handle_closed);
  uv_close((uv_handle_t *)&S->sint, on_handle_closed);
  uv_close((uv_handle_t *)&S->susr1, on_handle_closed);
  uv_close((uv_handle_t *)&S->tick, on_handle_closed);
  for (int i = 0; i < S->ntasks; i++) uv_close((uv_handle_t *)&S->tasks[i].backoff, on_handle_closed);
}

static int all_ended(wm_super *S) {
  for (int i = 0; i < S->ntasks; i++) {
    task *t = &S->tasks[i];
    /* (a partition that is never ours, outside a static share: its end is not our end) */
    if (!t->ended && S->m && S->m->ops->foreign && S->m->ops->foreign(S->m, t->source, t->partition))
      continue;
    if (!t->ended && !ended_mark(S, t)) return 0;
    t->ended = 1;
  }
  return 1;
}

static void stop_children(wm_super *S) {
  for (int i = 0; i < S->ntasks; i++) {
    task *t = &S->tasks[i];
    stop_backoff(t);
    terminate(t);
  }
}

static void check_done(wm_super *S) {
  if (S->shut) return;
  if ((S->failed || S->stopping) && S->running == 0) {
    shutdown_handles(S);
    return;
  }
  if (S->running == 0 && all_ended(S)) {
    shutdown_handles(S);
    return;
  }
  if (S->failed && !S->stopping) {
    S->stopping = 1;
    stop_children(S);
  }
}

static void on_async(uv_async_t *a) {
  wm_super *S = a->data;
  poll_member(S);
  check_done(S);
}

static void on_tick(uv_timer_t *h) {
  wm_super *S = h->data;
  poll_member(S);
  check_done(S);
}

static void on_stop_signal(uv_signal_t *h, int sig) {
  wm_super *S = h->data;
  (void)sig;
  if (S->stopping) return;
  S->stopping = 1;
  stop_children(S);
  check_done(S);
}

static void on_usr1(uv_signal_t *h, int sig) {
  (void)sig;
  print_table(h->data);
}

static void notify(void *arg) { uv_async_send(arg); }

int wm_super_run(const wm_super_config *cfg, wm_error *err) {
  wm_super *S = calloc(1, sizeof *S);
  if (!S) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  S->cfg = cfg;
  int n = 0;
  for (int i = 0; i < cfg->member.nsources; i++) n += cfg->member.counts[i];
  S->tasks = calloc((size_t)(n > 0 ? n : 1), sizeof *S->tasks);
  S->first = calloc((size_t)(cfg->member.nsources > 0 ? cfg->member.nsources : 1), sizeof *S->first);
  int rc = S->tasks && S->first ? uv_loop_init(&S->loop) : UV_ENOMEM;
  if (rc != 0) {
    wm_error_set(err, "cannot start the supervisor: %s", uv_strerror(rc));
    free(S->tasks);
    free(S->first);
    free(S);
    return -1;
  }
  S->ntasks = n;
  for (int s = 0, k = 0; s < cfg->member.nsources; s++) {
    S->first[s] = k;
    for (int p = 0; p < cfg->member.counts[s]; p++, k++) {
      task *t = &S->tasks[k];
      t->S = S;
      t->source = s;
      t->partition = p;
      snprintf(t->pname, sizeof t->pname, "%s/%d", cfg->member.sources[s], p);
      wm_super_task_name(cfg->index, t->pname, t->name, sizeof t->name);
    }
  }
  /* every handle is initialised before anything can fail, so that shutdown closes them all */
  S->async.data = S->sterm.data = S->sint.data = S->susr1.data = S->tick.data = S;
  int r[5];
  r[0] = uv_async_init(&S->loop, &S->async, on_async);
  r[1] = uv_signal_init(&S->loop, &S->sterm);
  r[2] = uv_signal_init(&S->loop, &S->sint);
  r[3] = uv_signal_init(&S->loop, &S->susr1);
  r[4] = uv_timer_init(&S->loop, &S->tick);
  for (int i = 0; i < 5; i++)
    if (r[i] != 0) { /* cannot happen with a fresh loop; nothing to unwind but the loop */
      wm_error_set(err, "cannot start the supervisor: %s", uv_strerror(r[i]));
      uv_loop_close(&S->loop);
      free(S->tasks);
      free(S->first);
      free(S);
      return -1;
    }
  S->open = 5 + n;
  for (int i = 0; i < n; i++) {
    uv_timer_init(&S->loop, &S->tasks[i].backoff); /* a timer's init does not fail */
    S->tasks[i].backoff.data = &S->tasks[i];
  }
  if ((rc = uv_signal_start(&S->sterm, on_stop_signal, SIGTERM)) == 0 &&
      (rc = uv_signal_start(&S->sint, on_stop_signal, SIGINT)) == 0 &&
      (rc = uv_signal_start(&S->susr1, on_usr1, SIGUSR1)) == 0)
    rc = uv_timer_start(&S->tick, on_tick, TICK_MS, TICK_MS);
  if (rc != 0) fail(S, "cannot start the supervisor: %s", uv_strerror(rc));
  wm_member_common mc = cfg->member;
  mc.notify = notify;
  mc.notify_arg = &S->async;
  if (!S->failed && cfg->ckdir) {
    wm_error e;
    if (!(S->marks = wm_ckpt_marks_open(cfg->ckdir, &e))) fail(S, "%s", e.msg);
  }
  if (!S->failed) {
    wm_error e;
    S->m = cfg->member_new(&mc, cfg->member_ud, &e);
    if (!S->m) fail(S, "%s", e.msg);
    /* a backend that renews its leases from poll asks to be polled this often (wm_member.h) */
    else if (S->m->poll_ms > 0 && S->m->poll_ms < TICK_MS &&
             (rc = uv_timer_start(&S->tick, on_tick, (uint64_t)S->m->poll_ms, (uint64_t)S->m->poll_ms)) != 0)
      fail(S, "cannot start the supervisor: %s", uv_strerror(rc));
  }
  check_done(S);
  uv_run(&S->loop, UV_RUN_DEFAULT);
  int res = S->failed ? -1 : 0;
  if (S->failed) wm_error_set(err, "%s", S->err);
  uv_loop_close(&S->loop);
  free(S->tasks);
  free(S->first);
  free(S);
  return res;
}
