
#include "exec/wm_exec.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/wm_buf.h"
#include "time/wm_timer.h"
#include "time/wm_time.h"

typedef struct srcent {
  wm_op *op;
  const wm_source_vt *vt;
  int done;
} srcent;

struct wm_exec {
  wm_io_host host; /* what sources and sinks see of the executor */
  wm_ctx *ctx;
  wm_exec_config cfg;
  uv_loop_t loop;
  int loop_ok;
  uv_timer_t periodic;
  int periodic_open;
  /* checkpoints: take(savepoint_ud) every ck_interval ms */
  uv_timer_t ck_timer;
  int ck_open;
  int64_t ck_interval;
  int (*ck_take)(void *ud);
  /* SIGINT/SIGTERM/SIGHUP: the process's handler (below) counts the signal here and wakes
   * the loop through sig_async; sig_seen is what the loop has acted on */
  uv_async_t sig_async;
  int sig_open;
  _Atomic int sig_recv;
  _Atomic int sig_last;
  int sig_seen;
  srcent *srcs;
  int nsrc, ndone;
  wm_op **periodic_ops; /* the operators with a period (vt->period), driven by one timer */
  int nperiodic_ops;
  int failed, draining, aborted, finished, saved;
  /* processing-time timers: payload = index of the operator in ctx->ops */
  wm_timers *pt;
  uv_timer_t pt_timer;
  int pt_open;
  uint64_t pt_seq;
  /* backpressure: bytes queued by asynchronous sinks */
  int64_t pressure;
  int paused;
  int held;       /* wm_exec_hold: sources paused and timers held whatever the pressure */
  int src_paused; /* what the sources were last told (paused || held) */
  int pressure_busy; /* inside wm_exec_pressure (a nested report only counts) */
  uint64_t pressure_moves; /* reports that changed the total: progress while paused */
  uint64_t paused_at, paused_ms; /* uv_now when the sources last paused; ms paused before */
  int writing;             /* asynchronous writes in flight (wm_io_writing) */
  struct flusher {
    void (*fn)(void *ud, int paused);
    void *ud;
  } *flushers;             /* sinks told to write what they hold when the sources pause */
  int nflushers;
  /* the stall check: paused, no report and no write in flight for stall_timeout ms */
  uv_timer_t stall_timer;
  int stall_open;
  uint64_t stall_moves;
  uint64_t stall_since;
};

static int pt_register(void *ud, wm_op *op, int64_t t);

/* The host entries are the executor's own functions (e->host is the first member). */
static int host_add_source(wm_io_host *h, wm_op *op, const wm_source_vt *vt) {
  return wm_exec_add_source((wm_exec *)h, op, vt);
}
static void host_source_done(wm_io_host *h, wm_op *src) { wm_exec_source_done((wm_exec *)h, src); }
static void host_fail(wm_io_host *h) { wm_exec_fail((wm_exec *)h); }
static void host_batch_done(wm_io_host *h) { wm_exec_batch_done((wm_exec *)h); }
static void host_pressure(wm_io_host *h, int64_t delta) { wm_exec_pressure((wm_exec *)h, delta); }
static void host_writing(wm_io_host *h, int delta) { ((wm_exec *)h)->writing += delta; }
static int host_add_flusher(wm_io_host *h, void (*fn)(void *ud, int paused), void *ud) {
  wm_exec *e = (wm_exec *)h;
  struct flusher *n = realloc(e->flushers, (size_t)(e->nflushers + 1) * sizeof *n);
  if (!n) return wm_ctx_error(e->ctx, "out of memory");
  e->flushers = n;
  n[e->nflushers++] = (struct flusher){fn, ud};
  return WM_OK;
}

wm_exec *wm_exec_new(wm_ctx *ctx, const wm_exec_config *cfg) {
  wm_exec *e = calloc(1, sizeof *e);
  if (!e) {
    wm_ctx_error(ctx, "out of memory creating the executor");
    return NULL;
  }
  e->ctx = ctx;
  e->cfg = *cfg;
  int rc = uv_loop_init(&e->loop);
  if (rc != 0) {
    wm_ctx_error(ctx, "cannot create the event loop: %s", uv_strerror(rc));
    free(e);
    return NULL;
  }
  e->loop_ok = 1;
  e->loop.data = e;
  e->host = (wm_io_host){.loop = &e->loop, .ctx = ctx, .add_source = host_add_source,
                         .source_done = host_source_done, .fail = host_fail,
                         .batch_done = host_batch_done, .pressure = host_pressure,
                         .writing = host_writing, .add_flusher = host_add_flusher};
  if (!e->cfg.pressure_high) e->cfg.pressure_high = (size_t)1 << 20;
  if (!e->cfg.pressure_low) e->cfg.pressure_low = e->cfg.pressure_high / 4;
  if (!e->cfg.stall_timeout) e->cfg.stall_timeout = WM_EXEC_STALL_TIMEOUT;
  ctx->pt_register = pt_register;
  ctx->pt_ud = e;
  return e;
}

static void walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void close_services(wm_exec *e);

void wm_exec_free(wm_exec *e) {
  if (!e) return;
  if (e->loop_ok) {
    close_services(e); /* a host that ran the loop itself (wm_exec_watch_signals) */
    /* everything should be closed by now; close stragglers so the loop can end */
    uv_walk(&e->loop, walk_close, NULL);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    uv_loop_close(&e->loop);
  }
  free(e->srcs);
  free(e->flushers);
  free(e->periodic_ops);
  wm_timers_free(e->pt);
  free(e);
}

uv_loop_t *wm_exec_loop(wm_exec *e) { return &e->loop; }
wm_ctx *wm_exec_ctx(wm_exec *e) { return e->ctx; }
int wm_exec_stopping(const wm_exec *e) { return e->failed || e->draining || e->aborted; }
int wm_exec_failed(const wm_exec *e) { return e->failed; }
int wm_exec_pending_sources(const wm_exec *e) { return e->nsrc - e->ndone; }

wm_io_host *wm_exec_host(wm_exec *e) { return &e->host; }

int wm_exec_add_source(wm_exec *e, wm_op *op, const wm_source_vt *vt) {
  srcent *n = realloc(e->srcs, (size_t)(e->nsrc + 1) * sizeof *n);
  if (!n) return -1;
  e->srcs = n;
  n[e->nsrc].op = op;
  n[e->nsrc].vt = vt;
  n[e->nsrc].done = 0;
  e->nsrc++;
  return 0;
}

int wm_exec_nsources(const wm_exec *e) { return e->nsrc; }
wm_op *wm_exec_source_op(const wm_exec *e, int i) { return i >= 0 && i < e->nsrc ? e->srcs[i].op : NULL; }
int wm_exec_saved(const wm_exec *e) { return e->saved; }
void wm_exec_set_checkpoints(wm_exec *e, int64_t interval, int (*take)(void *ud),
                             int (*savepoint)(void *ud), void *ud) {
  e->ck_interval = interval;
  e->ck_take = take;
  e->cfg.savepoint = savepoint;
  e->cfg.savepoint_ud = ud;
}

static const srcent *find_source(const wm_exec *e, const wm_op *op) {
  for (int i = 0; i < e->nsrc; i++)
    if (e->srcs[i].op == op) return &e->srcs[i];
  return NULL;
}

const wm_source_vt *wm_exec_source_vt(const wm_exec *e, const wm_op *op) {
  const srcent *s = find_source(e, op);
  return s ? s->vt : NULL;
}

int wm_exec_snapshot_source(wm_exec *e, wm_op *op, wm_buf *out) {
  const srcent *s = find_source(e, op);
  if (!s) return wm_ctx_error(e->ctx, "operator '%s' is not a source", op->name);
  if (!s->vt->snapshot)
    return wm_ctx_error(e->ctx, "source '%s' keeps no position a checkpoint could hold "
                                "(standard input from a pipe, FIFOs and sockets cannot be read "
                                "again): run the job without checkpoints (docs/checkpoints.md)",
                        op->name);
  return s->vt->snapshot(op, out);
}

int wm_exec_restore_source(wm_exec *e, wm_op *op, const char *data, size_t n) {
  const srcent *s = find_source(e, op);
  if (!s) return wm_ctx_error(e->ctx, "operator '%s' is not a source", op->name);
  if (!s->vt->restore)
    return wm_ctx_error(e->ctx, "source '%s' cannot be restored from a checkpoint yet", op->name);
  return s->vt->restore(op, data, n);
}

static void on_pt_timer(uv_timer_t *t);

/* Arms the libuv timer for the earliest processing-time timer. */
static void pt_arm(wm_exec *e) {
  int64_t t;
  if (!e->pt_open || !wm_timers_due(e->pt, INT64_MAX, &t)) return;
  int64_t now = wm_ctx_now(e->ctx), delay = t > now ? t - now : 0;
  int rc = uv_timer_start(&e->pt_timer, on_pt_timer, (uint64_t)delay, 0);
  if (rc != 0) {
    wm_ctx_error(e->ctx, "cannot start a processing-time timer: %s", uv_strerror(rc));
    wm_exec_fail(e);
  }
}

static int pt_register(void *ud, wm_op *op, int64_t t) {
  wm_exec *e = ud;
  size_t i;
  for (i = 0; i < e->ctx->nops && e->ctx->ops[i] != op; i++) {
  }
  if (!e->pt) {
    e->pt = wm_timers_new();
    if (!e->pt) return wm_ctx_error(e->ctx, "out of memory");
  }
  if (!e->pt_open) {
    int rc = uv_timer_init(&e->loop, &e->pt_timer);
    if (rc != 0) return wm_ctx_error(e->ctx, "cannot create a timer: %s", uv_strerror(rc));
    e->pt_timer.data = e;
    e->pt_open = 1;
  }
  if (wm_timers_push(e->pt, t, (uint64_t)i, e->pt_seq++) != 0)
    return wm_ctx_error(e->ctx, "out of memory");
  pt_arm(e);
  return WM_OK;
}

static void on_pt_timer(uv_timer_t *h) {
  wm_exec *e = h->data;
  if (e->held) return; /* wm_exec_hold arms it again when the hold ends */
  int64_t t;
  const wm_timer_entry *ents;
  size_t n;
  while (!e->failed && wm_timers_pop(e->pt, wm_ctx_now(e->ctx), &t, &ents, &n)) {
    for (size_t k = 0; k < n && !e->failed; k++) {
      wm_op *op = e->ctx->ops[ents[k].payload];
      if (op->vt->processing_time && op->vt->processing_time(op, t) != WM_OK) wm_exec_fail(e);
    }
  }
  if (!e->failed) pt_arm(e);
}

/* ---- signals ---------------------------------------------------------------------------
 * A signal handler has no context argument, so the executors that watch signals are listed
 * in the one process-wide table of the core (as lua.c keeps globalL). The handler only does
 * what is async-signal-safe: it counts the signal on every executor, wakes each loop with
 * uv_async_send, and asks each host to interrupt user code that may never return to the
 * loop (the bindings set a Lua hook, as lua.c does). The loop then drains (or aborts with
 * no_drain). A second signal exits with status 130 at once, from the handler: whatever the
 * job is doing, even blocked in a system call. */

#define SIG_MAX_EXECS 256
static const int sig_nums[3] = {SIGINT, SIGTERM, SIGHUP};

static struct {
  _Atomic(wm_exec *) execs[SIG_MAX_EXECS];
  _Atomic int nwatch;   /* executors listed */
  _Atomic int count;    /* signals since the first executor was listed */
  _Atomic int busy;     /* handlers running (an executor leaving waits for them) */
  uv_mutex_t mu;        /* listing and unlisting, installing and restoring the handlers */
  struct sigaction old[3];
} sig_table;
static uv_once_t sig_once = UV_ONCE_INIT;
static void sig_init(void) {
  if (uv_mutex_init(&sig_table.mu) != 0) abort(); /* not expected on Linux */
}

static void sig_handler(int signum) {
  int saved = errno;
  atomic_fetch_add(&sig_table.busy, 1);
  if (atomic_fetch_add(&sig_table.count, 1) >= 1) _exit(130);
  for (int i = 0; i < SIG_MAX_EXECS; i++) {
    wm_exec *e = atomic_load(&sig_table.execs[i]);
    if (!e) continue;
    atomic_store(&e->sig_last, signum);
    atomic_fetch_add(&e->sig_recv, 1);
    uv_async_send(&e->sig_async);
    if (e->cfg.interrupt) e->cfg.interrupt(e->cfg.interrupt_ud);
  }
  atomic_fetch_sub(&sig_table.busy, 1);
  errno = saved;
}

static int sig_watch(wm_exec *e) {
  uv_once(&sig_once, sig_init);
  uv_mutex_lock(&sig_table.mu);
  int slot = -1;
  for (int i = 0; i < SIG_MAX_EXECS && slot < 0; i++)
    if (!atomic_load(&sig_table.execs[i])) slot = i;
  int rc = 0;
  if (slot >= 0 && atomic_load(&sig_table.nwatch) == 0) { /* the first executor of a job */
    atomic_store(&sig_table.count, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sig_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaddset(&sa.sa_mask, sig_nums[i]);
    for (int i = 0; i < 3 && rc == 0; i++) rc = sigaction(sig_nums[i], &sa, &sig_table.old[i]);
  }
  if (slot >= 0 && rc == 0) {
    atomic_store(&sig_table.execs[slot], e);
    atomic_fetch_add(&sig_table.nwatch, 1);
  }
  uv_mutex_unlock(&sig_table.mu);
  return slot < 0 ? -1 : rc;
}

static void sig_unwatch(wm_exec *e) {
  uv_once(&sig_once, sig_init);
  uv_mutex_lock(&sig_table.mu);
  for (int i = 0; i < SIG_MAX_EXECS; i++) {
    wm_exec *x = e;
    if (atomic_compare_exchange_strong(&sig_table.execs[i], &x, NULL) &&
        atomic_fetch_sub(&sig_table.nwatch, 1) == 1)
      for (int k = 0; k < 3; k++) sigaction(sig_nums[k], &sig_table.old[k], NULL);
  }
  uv_mutex_unlock(&sig_table.mu);
  /* a handler running on another thread may still hold e: wait until it is out */
  while (atomic_load(&sig_table.busy) > 0) {
  }
}

static void on_signal(uv_async_t *h);

int wm_exec_signal_pending(const wm_exec *e) { return e->sig_seen != atomic_load(&e->sig_recv); }

int wm_exec_signal(const wm_exec *e) { return atomic_load(&e->sig_last); }

static void close_services(wm_exec *e) {
  if (e->stall_open) {
    uv_close((uv_handle_t *)&e->stall_timer, NULL);
    e->stall_open = 0;
  }
  if (e->ck_open) {
    uv_close((uv_handle_t *)&e->ck_timer, NULL);
    e->ck_open = 0;
  }
  if (e->pt_open) {
    uv_close((uv_handle_t *)&e->pt_timer, NULL);
    e->pt_open = 0;
  }
  if (e->periodic_open) {
    uv_close((uv_handle_t *)&e->periodic, NULL);
    e->periodic_open = 0;
  }
  if (e->sig_open) {
    sig_unwatch(e);
    uv_close((uv_handle_t *)&e->sig_async, NULL);
    e->sig_open = 0;
  }
}

void wm_exec_fail(wm_exec *e) {
  if (e->failed) return;
  e->failed = 1;
  for (int i = 0; i < e->nsrc; i++)
    if (!e->srcs[i].done) {
      e->srcs[i].done = 1;
      e->ndone++;
      e->srcs[i].vt->stop(e->srcs[i].op, &e->host, 0);
    }
  close_services(e);
  uv_stop(&e->loop);
}

void wm_exec_source_done(wm_exec *e, wm_op *src) {
  for (int i = 0; i < e->nsrc; i++) {
    if (e->srcs[i].op != src) continue;
    if (e->srcs[i].done && !e->draining) return;
    if (!e->srcs[i].done) {
      e->srcs[i].done = 1;
      e->ndone++;
    }
    break;
  }
  if (e->failed) return;
  src->ended = true;
  src->wm = WM_TIME_MAX;
  if (wm_op_emit_watermark(src, WM_TIME_MAX) != WM_OK) {
    wm_exec_fail(e);
    return;
  }
  if (e->ndone == e->nsrc) {
    e->finished = 1;
    close_services(e);
  }
}

void wm_exec_drain(wm_exec *e) {
  if (e->draining || e->failed) return;
  e->draining = 1;
  for (int i = 0; i < e->nsrc; i++)
    if (!e->srcs[i].done) e->srcs[i].vt->stop(e->srcs[i].op, &e->host, 1);
}

void wm_exec_batch_done(wm_exec *e) {
  if (e->cfg.on_batch) e->cfg.on_batch(e->cfg.on_batch_ud);
}

static void on_periodic(uv_timer_t *t) {
  wm_exec *e = t->data;
  if (e->failed || e->held) return;
  int64_t now = wm_ctx_now(e->ctx);
  for (int i = 0; i < e->nperiodic_ops; i++) {
    wm_op *op = e->periodic_ops[i];
    if (op->ended) continue;
    int rc = op->vt->on_period(op, now);
    if (rc != WM_OK) {
      wm_exec_fail(e);
      return;
    }
  }
}

static void on_ck_timer(uv_timer_t *t) {
  wm_exec *e = t->data;
  if (wm_exec_stopping(e) || e->ndone == e->nsrc || e->held) return;
  if (e->ck_take(e->cfg.savepoint_ud) != WM_OK) wm_exec_fail(e);
}

/* Sources are paused above the high mark and resumed below the low one. A source that is
 * resumed may emit at once (the bytes a read-ahead brought while it was paused), and its
 * records may reach a sink that reports again from inside this function: such a nested
 * call only counts its bytes, and the outer call, once every source has heard the last
 * decision, decides again on the new total. No source is left with a stale decision. */
void wm_exec_pressure(wm_exec *e, int64_t delta) {
  e->pressure += delta;
  if (delta) e->pressure_moves++;
  if (e->pressure_busy) return;
  e->pressure_busy = 1;
  for (;;) {
    int want = e->paused ? e->pressure > (int64_t)e->cfg.pressure_low
                         : e->pressure > (int64_t)e->cfg.pressure_high;
    if (want != e->paused) {
      e->paused = want;
      uv_update_time(&e->loop);
      if (want) e->paused_at = uv_now(&e->loop);
      else e->paused_ms += uv_now(&e->loop) - e->paused_at;
    }
    int tell = e->paused || e->held; /* a hold keeps them paused whatever the pressure */
    if (tell == e->src_paused) break;
    e->src_paused = tell;
    for (int i = 0; i < e->nsrc; i++)
      if (!e->srcs[i].done && e->srcs[i].vt->pause) e->srcs[i].vt->pause(e->srcs[i].op, &e->host, tell);
    /* paused, what the sinks gather is written at once: nothing else would drain it */
    for (int i = 0; i < e->nflushers; i++) e->flushers[i].fn(e->flushers[i].ud, tell);
  }
  e->pressure_busy = 0;
}

void wm_exec_hold(wm_exec *e, int on) {
  on = on != 0;
  if (e->held == on) return;
  e->held = on;
  wm_exec_pressure(e, 0); /* tells the sources (a nested call: the outer one does) */
  if (!on && !e->failed) pt_arm(e); /* the timers that came due meanwhile */
}

int wm_exec_held(const wm_exec *e) { return e->held; }

int64_t wm_exec_pressure_bytes(const wm_exec *e) { return e->pressure; }

uint64_t wm_exec_paused_ms(wm_exec *e) {
  if (!e->paused) return e->paused_ms;
  uv_update_time(&e->loop);
  return e->paused_ms + (uv_now(&e->loop) - e->paused_at);
}

/* "'a', 'b'": the sources that have not ended, with the state of backpressure. */
static void describe_open_sources(const wm_exec *e, wm_buf *b) {
  int n = 0;
  for (int i = 0; i < e->nsrc; i++) {
    if (e->srcs[i].done) continue;
    wm_buf_adds(b, n++ ? ", '" : "'");
    wm_buf_adds(b, e->srcs[i].op->name);
    wm_buf_addc(b, '\'');
  }
  wm_buf_adds(b, e->paused ? " (paused by backpressure: " : " (not paused: ");
  wm_buf_add_int(b, e->pressure);
  wm_buf_adds(b, " bytes reported queued by the sinks and exchanges, resumed under ");
  wm_buf_add_int(b, (int64_t)e->cfg.pressure_low);
  wm_buf_adds(b, "; writes in flight: ");
  wm_buf_add_int(b, e->writing);
  wm_buf_addc(b, ')');
}

/* Every second while the sources are paused: a pause in which no sink reports a change and no
 * write is in flight can never end (nothing will drain the queue), so after stall_timeout ms
 * of it the job fails, naming the sources, instead of waiting for ever. A slow sink keeps a
 * write in flight or reports its progress, and is not a stall. */
static void on_stall_timer(uv_timer_t *t) {
  wm_exec *e = t->data;
  uint64_t now = uv_now(&e->loop);
  if (!e->paused || e->held || e->writing > 0 || e->pressure_moves != e->stall_moves) {
    e->stall_moves = e->pressure_moves;
    e->stall_since = now;
    return;
  }
  if (now - e->stall_since < (uint64_t)e->cfg.stall_timeout || wm_exec_stopping(e)) return;
  wm_buf b;
  wm_buf_init(&b);
  describe_open_sources(e, &b);
  wm_ctx_error(e->ctx,
               "the job made no progress for %lld ms with its sources paused and nothing being "
               "written: %s. This is a bug in wmrun, please report it (the stall timeout is "
               "--stall-timeout, env{stall_timeout = ...})",
               (long long)e->cfg.stall_timeout, b.oom ? "(out of memory)" : b.data);
  wm_buf_free(&b);
  wm_exec_fail(e);
}

int wm_exec_paused(const wm_exec *e) { return e->paused; }

static void stop_now(wm_exec *e);

static void on_signal(uv_async_t *h) {
  wm_exec *e = h->data;
  int recv = atomic_load(&e->sig_recv);
  if (e->sig_seen == recv) return;
  e->sig_seen = recv; /* the loop has it: the host's interrupt hook stands down */
  if (e->failed || e->aborted) return;
  int savepoint = !e->draining && e->cfg.savepoint && atomic_load(&e->sig_last) == SIGTERM;
  if (savepoint) { /* stop with a checkpoint: no drain, exit 0 */
    int r = e->cfg.savepoint(e->cfg.savepoint_ud);
    if (r == WM_ERR) {
      wm_exec_fail(e);
      return;
    }
    if (r == WM_STOP) return; /* under way: wm_exec_stop_saved comes once it is complete */
    e->saved = 1;
  }
  if (!savepoint && !e->draining && !e->cfg.no_drain) {
    wm_exec_drain(e);
    return;
  }
  stop_now(e); /* a second signal (or --no-drain), or after the checkpoint */
}

void wm_exec_stop_saved(wm_exec *e) {
  if (e->failed || e->aborted) return;
  e->saved = 1;
  stop_now(e);
}

/* Stops at once: the sources without finishing, the services, the loop. */
static void stop_now(wm_exec *e) {
  e->aborted = 1;
  for (int i = 0; i < e->nsrc; i++)
    if (!e->srcs[i].done) {
      e->srcs[i].done = 1;
      e->srcs[i].vt->stop(e->srcs[i].op, &e->host, 0);
    }
  close_services(e);
  uv_stop(&e->loop);
}

int wm_exec_watch_signals(wm_exec *e) {
  if (e->sig_open) return WM_OK;
  /* a peer that closes a socket (or a pipe) must give EPIPE, not kill the process */
  signal(SIGPIPE, SIG_IGN);
  int rc = uv_async_init(&e->loop, &e->sig_async, on_signal);
  if (rc != 0) return wm_ctx_error(e->ctx, "cannot watch signals: %s", uv_strerror(rc));
  e->sig_async.data = e;
  e->sig_open = 1;
  uv_unref((uv_handle_t *)&e->sig_async);
  if (sig_watch(e) != 0) return wm_ctx_error(e->ctx, "cannot watch signals: %s", strerror(errno));
  return WM_OK;
}

int wm_exec_run(wm_exec *e) {
  wm_ctx *ctx = e->ctx;
  int rc;
  /* the periodic timer drives every operator's periodic work (vt->period, on_period: the
   * assigners' periodic watermarks and idleness checks), at the shortest period */
  int64_t period = 0;
  for (size_t i = 0; i < ctx->nops; i++) {
    wm_op *op = ctx->ops[i];
    int64_t p = op->vt->period && op->vt->on_period ? op->vt->period(op) : 0;
    if (p <= 0) continue;
    wm_op **n = realloc(e->periodic_ops, (size_t)(e->nperiodic_ops + 1) * sizeof *n);
    if (!n) return wm_ctx_error(ctx, "out of memory");
    e->periodic_ops = n;
    n[e->nperiodic_ops++] = op;
    if (period == 0 || p < period) period = p;
  }
  if (period > 0) {
    if ((rc = uv_timer_init(&e->loop, &e->periodic)) != 0)
      return wm_ctx_error(ctx, "cannot create the watermark timer: %s", uv_strerror(rc));
    e->periodic.data = e;
    e->periodic_open = 1;
    if ((rc = uv_timer_start(&e->periodic, on_periodic, (uint64_t)period, (uint64_t)period)) != 0) {
      close_services(e);
      return wm_ctx_error(ctx, "cannot start the watermark timer: %s", uv_strerror(rc));
    }
    uv_unref((uv_handle_t *)&e->periodic); /* the sources keep the loop alive, not the timer */
  }
  if (e->ck_take && e->ck_interval > 0) {
    if ((rc = uv_timer_init(&e->loop, &e->ck_timer)) != 0) {
      close_services(e);
      return wm_ctx_error(ctx, "cannot create the checkpoint timer: %s", uv_strerror(rc));
    }
    e->ck_timer.data = e;
    e->ck_open = 1;
    uint64_t iv = (uint64_t)e->ck_interval;
    if ((rc = uv_timer_start(&e->ck_timer, on_ck_timer, iv, iv)) != 0) {
      close_services(e);
      return wm_ctx_error(ctx, "cannot start the checkpoint timer: %s", uv_strerror(rc));
    }
    uv_unref((uv_handle_t *)&e->ck_timer);
  }
  if (e->cfg.handle_signals && (rc = wm_exec_watch_signals(e)) != WM_OK) {
    close_services(e);
    return rc;
  }
  if (e->cfg.stall_timeout > 0 && e->nsrc > 0) {
    if ((rc = uv_timer_init(&e->loop, &e->stall_timer)) != 0) {
      close_services(e);
      return wm_ctx_error(ctx, "cannot create the stall check timer: %s", uv_strerror(rc));
    }
    e->stall_timer.data = e;
    e->stall_open = 1;
    e->stall_since = uv_now(&e->loop);
    uint64_t iv = e->cfg.stall_timeout < 4000 ? (uint64_t)(e->cfg.stall_timeout + 3) / 4 : 1000;
    if ((rc = uv_timer_start(&e->stall_timer, on_stall_timer, iv, iv)) != 0) {
      close_services(e);
      return wm_ctx_error(ctx, "cannot start the stall check timer: %s", uv_strerror(rc));
    }
    uv_unref((uv_handle_t *)&e->stall_timer); /* the sources keep the loop alive, not the check */
  }
  for (int i = 0; i < e->nsrc && !e->failed; i++) {
    if (e->srcs[i].vt->start(e->srcs[i].op, &e->host) != WM_OK) wm_exec_fail(e);
  }
  if (e->nsrc == 0) close_services(e);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  if (!e->failed && !e->aborted && e->ndone < e->nsrc) {
    /* the loop ran out of work while a source still had input: never a success */
    wm_buf b;
    wm_buf_init(&b);
    describe_open_sources(e, &b);
    wm_ctx_error(ctx, "the job stopped with sources still open: %s. This is a bug in wmrun, "
                      "please report it",
                 b.oom ? "(out of memory)" : b.data);
    wm_buf_free(&b);
    wm_exec_fail(e);
  }
  if (e->cfg.on_end) e->cfg.on_end(e->cfg.on_end_ud);
  close_services(e);
  /* a failure or an abort (or a paused reader) leaves sinks' sockets and files open: close every handle now,
   * while the operators that own them are still alive, and let the callbacks run */
  uv_walk(&e->loop, walk_close, NULL);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  if (e->failed) return WM_ERR;
  if (e->aborted && !e->saved) return WM_STOP;
  return WM_OK;
}

