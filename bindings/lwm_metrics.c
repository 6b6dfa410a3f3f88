/* What a running job shows of itself besides --metrics: the Prometheus endpoint
 * (--metrics-port, env metrics = {port, host}; core/exec/wm_metrics_http.c) and the progress
 * line on stderr (--progress; docs/metrics.md). Both run on thread 0's loop and close their
 * handles in the executor's on_end hook. The endpoint shows every thread's operators: each
 * other thread publishes a snapshot of its own to the job's board (exec/wm_mboard.h) from
 * its loop every WM_MBOARD_EVERY_MS and at its end; thread 0 publishes its own at each
 * request. The live view (--ui, env ui = {port, host}) is the same server with the page at
 * / and core/exec/wm_ui.c's JSON at /api/job, on thread 0: it reads the same board (every
 * thread's operators; the other threads publish for it as for the endpoint). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/wm_ckptrun.h"
#include "exec/wm_mboard.h"
#include "exec/wm_metrics_http.h"
#include "exec/wm_mt.h"
#include "exec/wm_ui.h"
#include "io/wm_io.h"
#include "ops/wm_tsop.h"
#include "time/wm_time.h"
#include "lwm.h"
#include "lwm_metrics.h"
#include "lwm_task.h"

#define PROGRESS_FIRST_MS 1000 /* a job shorter than this shows no line (unless forced) */
#define PROGRESS_EVERY_MS 200

typedef struct progress {
  uv_timer_t timer; /* first: freed in its close callback */
  lwm_bridge *B;
  uint64_t start;   /* uv_now at the start, ms */
  int shown;        /* a line was drawn */
  int forced;       /* --progress: a final line even for a short job */
  size_t last_len;  /* to blank the rest of a longer previous line */
} progress;

/* "2020-01-01 02:00:05.250" (UTC), "-" before the first watermark, "end" after the last. */
static void fmt_wall(char *buf, size_t n, int64_t t) {
  if (t == WM_TIME_MIN) {
    snprintf(buf, n, "-");
    return;
  }
  if (t == WM_TIME_MAX) {
    snprintf(buf, n, "end of input");
    return;
  }
  time_t secs = (time_t)(t >= 0 ? t / 1000 : (t - 999) / 1000);
  int ms = (int)(t - (int64_t)secs * 1000);
  struct tm tm;
  if (!gmtime_r(&secs, &tm)) {
    snprintf(buf, n, "%lld", (long long)t);
    return;
  }
  char day[40];
  strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, n, "%s.%03d", day, ms);
}

static void progress_draw(progress *p, int final) {
  const wm_ctx *ctx = &p->B->ctx;
  uint64_t records = 0;
  int64_t done = 0, total = 0, wm = WM_TIME_MAX;
  int known = 0, tsops = 0;
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    if (op->nin == 0) records += op->m.records_out;
    int64_t d, t;
    if (wm_lines_progress(op, &d, &t)) {
      done += d;
      total += t;
      known = 1;
    }
    if (wm_op_is_tsop(op)) { /* the job's watermark: the slowest assigner's */
      int64_t w = wm_tsop_last_watermark(op);
      if (w < wm) wm = w;
      tsops++;
    }
  }
  if (!tsops) wm = WM_TIME_MIN;
  double secs = (double)(uv_now(wm_exec_loop(p->B->exec)) - p->start) / 1000.0;
  if (secs < 0.001) secs = 0.001; /* a job shorter than the clock's step */
  char line[256], pct[32], when[48];
  pct[0] = '\0';
  if (known) snprintf(pct, sizeof pct, ", %.0f%% read", total > 0 ? 100.0 * (double)done / (double)total : 100.0);
  fmt_wall(when, sizeof when, wm);
  int n = snprintf(line, sizeof line, "wmrun: %llu records, %.0f records/s%s, watermark %s",
                   (unsigned long long)records, (double)records / secs, pct, when);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  /* the line is redrawn in place: blanks cover what a longer previous line left */
  fprintf(stderr, "\r%s%*s%s", line, p->last_len > len ? (int)(p->last_len - len) : 0, "",
          final ? "\n" : "");
  fflush(stderr);
  p->last_len = len;
  p->shown = 1;
}

static void on_progress(uv_timer_t *t) { progress_draw(t->data, 0); }

static void on_progress_closed(uv_handle_t *h) { free(h); }

/* The checkpoint series: the coordinator's stats (the job's, shared by its threads). */
static void ck_stats(void *ud, wm_mboard_ckpt *out) {
  wm_ckptrun_stats st;
  wm_ckptrun_stats_get(ud, &st);
  *out = (wm_mboard_ckpt){st.taken, st.last_ms, st.last_bytes};
}

/* A thread other than 0 with the endpoint on: its snapshots for the board. */
typedef struct publisher {
  uv_timer_t timer; /* first: freed in its close callback */
  lwm_bridge *B;
  wm_mboard *board;
} publisher;

static void on_publish(uv_timer_t *t) {
  publisher *p = t->data;
  wm_mboard_publish(p->board, p->B->thread, &p->B->ctx); /* out of memory: the last one stays */
}

static void on_publisher_closed(uv_handle_t *h) { free(h); }

static int publisher_start(lwm_bridge *B, uv_loop_t *loop, wm_mboard *board, lwm_services *s) {
  publisher *p = calloc(1, sizeof *p);
  int urc = p ? uv_timer_init(loop, &p->timer) : UV_ENOMEM;
  if (urc != 0) {
    free(p);
    return wm_ctx_error(&B->ctx, "cannot start publishing thread %d's metrics: %s",
                        B->thread + 1, uv_strerror(urc));
  }
  p->B = B;
  p->board = board;
  p->timer.data = p;
  s->publisher = p;
  wm_mboard_set_exec(board, B->thread, B->exec); /* its backpressure in its snapshots */
  wm_mboard_publish(board, B->thread, &B->ctx); /* its operators, before the first record */
  if ((urc = uv_timer_start(&p->timer, on_publish, WM_MBOARD_EVERY_MS, WM_MBOARD_EVERY_MS)) != 0)
    return wm_ctx_error(&B->ctx, "cannot start publishing thread %d's metrics: %s",
                        B->thread + 1, uv_strerror(urc));
  uv_unref((uv_handle_t *)&p->timer); /* the sources keep the loop alive */
  return WM_OK;
}


/* The live view: its page (env.ui_http.page, copied) and what its JSON shows. */
typedef struct lwm_ui {
  lwm_bridge *B;
  wm_mboard *board;
  wm_ui_job job;
  char *name;
  size_t page_len;
  char page[]; /* NUL-terminated */
} lwm_ui;

static void ui_page(wm_buf *body, void *ud) {
  lwm_ui *u = ud;
  wm_buf_add(body, u->page, u->page_len);
}

static void ui_json(wm_buf *body, void *ud) {
  lwm_ui *u = ud;
  wm_mboard_publish(u->board, u->B->thread, &u->B->ctx); /* this thread's, fresh; out of
                                                          * memory: the last one stays */
  wm_ui_json(body, u->board, wm_ctx_now(&u->B->ctx), &u->job);
}

static void ui_free(lwm_ui *u) {
  if (!u) return;
  free(u->name);
  free(u);
}

/* "wmrun: live view on http://HOST:PORT/" */
static void print_url(const char *what, const char *host, int port, const char *path) {
  int v6 = strchr(host, ':') != NULL;
  fprintf(stderr, "wmrun: %s on http://%s%s%s:%d%s\n", what, v6 ? "[" : "", host, v6 ? "]" : "",
          port, path);
}

/* Starts the live view (env.ui_http at the top of the stack: {port, host, page}). */
static int ui_start(lwm_bridge *B, int env, uv_loop_t *loop, lwm_services *s,
                    const struct wm_ckptrun *ckpt, wm_mboard *board) {
  lua_State *L = B->L;
  lua_getfield(L, -1, "port");
  lua_getfield(L, -2, "host");
  lua_getfield(L, -3, "page");
  int port = (int)lua_tointeger(L, -3);
  const char *host = lua_isstring(L, -2) ? lua_tostring(L, -2) : "127.0.0.1";
  size_t plen = 0;
  const char *page = lua_isstring(L, -1) ? lua_tolstring(L, -1, &plen) : "";
  lwm_ui *u = malloc(sizeof *u + plen + 1);
  int rc = WM_OK;
  if (!u) {
    rc = wm_ctx_error(&B->ctx, "out of memory");
  } else {
    memcpy(u->page, page, plen + 1);
    u->page_len = plen;
    u->B = B;
    u->board = board;
    /* the job's name: the argument of env:execute, next to the env on the stack */
    const char *name = lua_isstring(L, env + 1) ? lua_tostring(L, env + 1) : "wmrun job";
    u->name = strdup(name);
    lua_getfield(L, env, "parallelism");
    int par = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 1;
    lua_pop(L, 1);
    u->job = (wm_ui_job){.name = u->name, .parallelism = par,
                         .threads = B->nthreads > 0 ? B->nthreads : 1,
                         .exec = B->exec, .ckpt = ckpt, .start_ms = uv_now(loop)};
    int bound = 0;
    if (!u->name) rc = wm_ctx_error(&B->ctx, "out of memory");
    else if (!(s->ui = wm_metrics_http_start(loop, &B->ctx, host, port, &bound))) {
      char why[1024];
      snprintf(why, sizeof why, "%s", wm_ctx_errtext(&B->ctx));
      rc = wm_ctx_error(&B->ctx, "the live view (--ui): %s", why);
    } else if (wm_metrics_http_route(s->ui, "/", "text/html; charset=utf-8", ui_page, u) != WM_OK ||
               wm_metrics_http_route(s->ui, "/api/job", "application/json", ui_json, u) != WM_OK) {
      rc = wm_ctx_error(&B->ctx, "the live view (--ui): too many routes");
    } else {
      if (ckpt) wm_mboard_set_checkpoints(board, ck_stats, (void *)ckpt);
      wm_metrics_http_set_board(s->ui, board, B->thread); /* its /metrics: every thread's */
      print_url("live view", host, bound, "/");
    }
  }
  if (rc != WM_OK) ui_free(u);
  else s->uiv = u;
  lua_pop(L, 3);
  return rc;
}

int lwm_services_start(lwm_bridge *B, int env, uv_loop_t *loop, const struct wm_ckptrun *ck,
                       lwm_services *s) {
  lua_State *L = B->L;
  memset(s, 0, sizeof *s);
  int rc = WM_OK;
  lua_getfield(L, env, "ui_http");
  int ui = lua_istable(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, env, "metrics_http");
  if ((ui || lua_istable(L, -1)) && B->thread != 0) {
    rc = publisher_start(B, loop, wm_mt_job_board(B->mtjob), s);
    lua_pop(L, 1);
    if (rc != WM_OK) lwm_services_end(s);
    return rc; /* thread 0 serves; the progress line is thread 0's too */
  }
  if (B->thread != 0) {
    lua_pop(L, 1);
    return WM_OK;
  }
  /* the board thread 0 serves from: the job's (threads), or one of its own */
  wm_mboard *board = NULL;
  if (ui || lua_istable(L, -1)) {
    board = B->mtjob ? wm_mt_job_board(B->mtjob) : (s->own_board = wm_mboard_new(1));
    if (!board) rc = wm_ctx_error(&B->ctx, "out of memory starting the metrics endpoint");
    else wm_mboard_set_exec(board, B->thread, B->exec);
  }
  if (rc == WM_OK && lua_istable(L, -1)) {
    lua_getfield(L, -1, "port");
    lua_getfield(L, -2, "host");
    int port = (int)lua_tointeger(L, -2);
    const char *host = lua_isstring(L, -1) ? lua_tostring(L, -1) : "127.0.0.1";
    int bound = 0;
    s->http = wm_metrics_http_start(loop, &B->ctx, host, port, &bound);
    if (!s->http) rc = WM_ERR;
    if (s->http) {
      if (ck) wm_mboard_set_checkpoints(board, ck_stats, (void *)ck);
      wm_metrics_http_set_board(s->http, board, B->thread);
    }
    if (s->http) fprintf(stderr, "wmrun: metrics on http://%s%s%s:%d/metrics\n", strchr(host, ':') ? "[" : "",
                 host, strchr(host, ':') ? "]" : "", bound);
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  lua_getfield(L, env, "ui_http"); /* nil unless asked: nothing runs, nothing is allocated */
  if (rc == WM_OK && ui) rc = ui_start(B, env, loop, s, ck, board);
  lua_pop(L, 1);
  if (rc == WM_OK) rc = lwm_task_status_start(B, loop, &s->task);
  lua_getfield(L, env, "progress"); /* true: --progress; false: --no-progress; nil: a terminal */
  int forced = lua_toboolean(L, -1);
  int on = lua_isnil(L, -1) ? isatty(STDERR_FILENO) : forced;
  lua_pop(L, 1);
  if (rc == WM_OK && on) {
    progress *p = calloc(1, sizeof *p);
    int urc = p ? uv_timer_init(loop, &p->timer) : UV_ENOMEM;
    if (urc != 0) {
      free(p);
      lwm_services_end(s);
      return wm_ctx_error(&B->ctx, "cannot start the progress line: %s", uv_strerror(urc));
    }
    p->B = B;
    p->forced = forced;
    p->start = uv_now(loop);
    p->timer.data = p;
    s->progress = p;
    if ((urc = uv_timer_start(&p->timer, on_progress, PROGRESS_FIRST_MS, PROGRESS_EVERY_MS)) != 0) {
      lwm_services_end(s);
      return wm_ctx_error(&B->ctx, "cannot start the progress line: %s", uv_strerror(urc));
    }
    uv_unref((uv_handle_t *)&p->timer); /* the sources keep the loop alive, not the line */
  }
  return rc;
}

void lwm_services_end(void *ud) {
  lwm_services *s = ud;
  if (s->http) {
    wm_metrics_http_stop(s->http); /* no request is answered after this */
    s->http = NULL;
  }
  if (s->publisher) {
    publisher *p = s->publisher;
    wm_mboard_publish(p->board, p->B->thread, &p->B->ctx); /* the thread's final figures */
    uv_close((uv_handle_t *)&p->timer, on_publisher_closed);
    s->publisher = NULL;
  }
  if (s->ui) { /* no route runs once stopped: its connections read no more */
    wm_metrics_http_stop(s->ui);
    s->ui = NULL;
  }
  ui_free(s->uiv);
  s->uiv = NULL;
  wm_mboard_free(s->own_board); /* no server reads it any more */
  s->own_board = NULL;
  if (s->task) {
    lwm_task_status_end(s->task);
    s->task = NULL;
  }
  if (s->progress) {
    progress *p = s->progress;
    if (p->shown || p->forced) progress_draw(p, 1); /* the last numbers stay on screen */
    uv_close((uv_handle_t *)&p->timer, on_progress_closed);
    s->progress = NULL;
  }
}
