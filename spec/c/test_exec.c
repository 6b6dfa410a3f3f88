/* The executor's backpressure accounting and its two guards: a run never ends as a success
 * with a source still open, and a pause that nothing can end fails the job (stall check).
 * Issue 34, items 1 and 2. */
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "exec/wm_exec.h"
#include "io/wm_io.h"

/* ---- a file source fanned out to two file sinks, each record five times ----------------
 * The sinks' write callbacks report their drained bytes, which resumes the source, whose
 * read-ahead emits at once into the same sinks: reports nested in reports. Every line must
 * arrive in both files, and the accounting must end at zero. */

static int five_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  for (int i = 0; i < 5; i++) {
    int rc = wm_op_emit(op, 0, rec, ts);
    if (rc != WM_OK) return rc;
  }
  return WM_OK;
}
static const wm_op_vt five_vt = {.kind = "five", .record = five_record};

static long count_lines(const char *path, long *sum) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char line[64];
  long n = 0;
  *sum = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    *sum += atol(line + (line[0] == '"'));
  }
  fclose(f);
  return n;
}

static void test_fanout_files(const char *dir) {
  char in[512], out1[512], out2[512];
  snprintf(in, sizeof in, "%s/in.txt", dir);
  snprintf(out1, sizeof out1, "%s/o1.txt", dir);
  snprintf(out2, sizeof out2, "%s/o2.txt", dir);
  const long lines = 20000;
  FILE *f = fopen(in, "wb");
  CHECK(f != NULL);
  if (!f) return;
  for (long i = 1; i <= lines; i++) fprintf(f, "%ld\n", i);
  fclose(f);
  /* small marks and small writes: many pauses and resumes, each resume with bytes held */
  for (int round = 0; round < 3; round++) {
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    size_t high = (size_t)4096 << round;
    wm_exec_config cfg = {.pressure_high = high, .pressure_low = high / 4};
    wm_exec *e = wm_exec_new(&ctx, &cfg);
    wm_lines_config lc = {.path = in, .chunk = 1024};
    wm_op *src = wm_lines_new(wm_exec_host(e), "read", &lc);
    wm_op *fa = wm_op_new(&ctx, &five_vt, NULL, "five a");
    wm_op *fb = wm_op_new(&ctx, &five_vt, NULL, "five b");
    wm_write_config w1 = {.path = out1, .format = WM_FMT_TEXT, .buffer = 512};
    wm_write_config w2 = {.path = out2, .format = WM_FMT_TEXT, .buffer = 700};
    wm_op *s1 = wm_write_lines_new(wm_exec_host(e), "sink 1", &w1);
    wm_op *s2 = wm_write_lines_new(wm_exec_host(e), "sink 2", &w2);
    CHECK(src && fa && fb && s1 && s2);
    if (!(src && fa && fb && s1 && s2)) return;
    CHECK(wm_op_connect(src, 0, fa) >= 0 && wm_op_connect(src, 0, fb) >= 0);
    CHECK(wm_op_connect(fa, 0, s1) >= 0 && wm_op_connect(fb, 0, s2) >= 0);
    CHECK(wm_ctx_prepare(&ctx) == WM_OK);
    int rc = wm_exec_run(e);
    CHECK(rc == WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
    CHECK_I64(wm_exec_pressure_bytes(e), 0);
    CHECK_I64(wm_exec_paused(e), 0);
    long sum1, sum2;
    CHECK_I64(count_lines(out1, &sum1), 5 * lines);
    CHECK_I64(count_lines(out2, &sum2), 5 * lines);
    CHECK_I64(sum1, 5 * lines * (lines + 1) / 2);
    CHECK_I64(sum2, 5 * lines * (lines + 1) / 2);
    wm_ctx_free(&ctx);
    wm_exec_free(e);
  }
  remove(in);
  remove(out1);
  remove(out2);
}

/* ---- sources that emit while being resumed ------------------------------------------------
 * Source "a" emits a record from its pause(0) (as a file source does with a read-ahead that
 * came back while it was paused); the record reaches a sink that reports more bytes than the
 * high mark from inside wm_exec_pressure. The outer call must decide again: both sources end
 * paused, and the executor says so. */

typedef struct fakesrc {
  wm_exec *e;
  wm_op *op;
  int paused, pauses, resumes, emit_on_resume;
  uv_async_t keep; /* keeps the loop alive while the source is "reading" (stall test) */
  int keep_open;
} fakesrc;

static int fake_start(wm_op *op, wm_io_host *host) {
  (void)op;
  (void)host;
  return WM_OK;
}
static void on_keep_closed(uv_handle_t *h) { (void)h; }
static void fake_stop(wm_op *op, wm_io_host *host, int finish) {
  (void)host;
  (void)finish;
  fakesrc *s = op->impl;
  if (s->keep_open) {
    s->keep_open = 0;
    uv_close((uv_handle_t *)&s->keep, on_keep_closed);
  }
}
static void fake_pause(wm_op *op, wm_io_host *host, int paused) {
  (void)host;
  fakesrc *s = op->impl;
  s->paused = paused;
  if (paused) s->pauses++;
  else s->resumes++;
  if (!paused && s->emit_on_resume) {
    s->emit_on_resume--;
    wm_value v = wm_int(1);
    CHECK(wm_op_emit(op, 0, &v, 0) == WM_OK);
  }
}
static const wm_source_vt fake_svt = {.start = fake_start, .stop = fake_stop, .pause = fake_pause};
static const wm_op_vt fake_vt = {.kind = "fake source", .record = wm_source_record};

typedef struct bytesink {
  wm_exec *e;
  int64_t per_record;
  int64_t held;
} bytesink;

static int bytes_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)rec;
  (void)ts;
  bytesink *b = op->impl;
  b->held += b->per_record;
  wm_exec_pressure(b->e, b->per_record);
  return WM_OK;
}
static const wm_op_vt bytes_vt = {.kind = "bytes", .record = bytes_record};

static void test_nested_resume(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {.pressure_high = 1000, .pressure_low = 250};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  fakesrc a = {.e = e, .emit_on_resume = 1}, b = {.e = e};
  bytesink k = {.e = e, .per_record = 5000};
  wm_op *oa = wm_op_new(&ctx, &fake_vt, &a, "source a");
  wm_op *ob = wm_op_new(&ctx, &fake_vt, &b, "source b");
  wm_op *ok = wm_op_new(&ctx, &bytes_vt, &k, "sink");
  CHECK(oa && ob && ok && wm_op_connect(oa, 0, ok) >= 0 && wm_op_connect(ob, 0, ok) >= 0);
  CHECK(wm_ctx_prepare(&ctx) == WM_OK);
  CHECK(wm_exec_add_source(e, oa, &fake_svt) == 0 && wm_exec_add_source(e, ob, &fake_svt) == 0);
  wm_exec_pressure(e, 2000); /* over the high mark: both pause */
  CHECK(a.paused && b.paused && wm_exec_paused(e));
  wm_exec_pressure(e, -1900); /* under the low mark: a resumes and at once sends 5000 bytes */
  CHECK_I64(wm_exec_pressure_bytes(e), 100 + 5000);
  CHECK(wm_exec_paused(e));
  CHECK(a.paused); /* paused again by the outer call's second decision */
  CHECK(b.paused); /* never left running with a stale "resume" */
  wm_exec_pressure(e, -5100);
  CHECK(!a.paused && !b.paused && !wm_exec_paused(e));
  wm_ctx_free(&ctx);
  wm_exec_free(e);
}

/* ---- the end of a run ------------------------------------------------------------------
 * A source that is paused with nothing left to resume it: the loop runs out of work. That is
 * a bug somewhere, never a success: the run fails naming the source. */
static void test_open_source_at_end(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  fakesrc a = {.e = e};
  wm_op *oa = wm_op_new(&ctx, &fake_vt, &a, "stuck source");
  CHECK(oa && wm_ctx_prepare(&ctx) == WM_OK);
  CHECK(wm_exec_add_source(e, oa, &fake_svt) == 0);
  wm_exec_pressure(e, (int64_t)4 << 20);
  CHECK(wm_exec_run(e) == WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&ctx), "the job stopped with sources still open: 'stuck source'") != NULL);
  CHECK(strstr(wm_ctx_errtext(&ctx), "paused by backpressure: 4194304 bytes") != NULL);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
}

/* ---- the stall check ---------------------------------------------------------------------
 * The loop stays alive (a handle of the source's, as a thread's wake-up handle does) while
 * the sources are paused and nobody reports progress or has a write in flight: the run fails
 * after the stall timeout, naming the source. With a write in flight it is a slow sink, not
 * a stall: the job waits, and goes on once the write completes. */

typedef struct slowsink {
  wm_exec *e;
  fakesrc *src;
  uv_timer_t tm;
  int done;
} slowsink;

static void on_slow_done(uv_timer_t *t) {
  slowsink *s = t->data;
  wm_io_writing(wm_exec_host(s->e), -1);
  wm_exec_pressure(s->e, -((int64_t)4 << 20));
  s->done = 1;
  wm_io_source_done(wm_exec_host(s->e), s->src->op);
  fake_stop(s->src->op, wm_exec_host(s->e), 1);
  uv_close((uv_handle_t *)t, NULL);
}

static void test_stall(int writing) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  /* with a write in flight the sink takes 8 stall timeouts: no stall may be declared */
  wm_exec_config cfg = {.stall_timeout = 40};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  fakesrc a = {.e = e};
  wm_op *oa = wm_op_new(&ctx, &fake_vt, &a, "paused source");
  a.op = oa;
  CHECK(oa && wm_ctx_prepare(&ctx) == WM_OK);
  CHECK(wm_exec_add_source(e, oa, &fake_svt) == 0);
  CHECK(uv_async_init(wm_exec_loop(e), &a.keep, NULL) == 0);
  a.keep_open = 1;
  slowsink s = {.e = e, .src = &a};
  CHECK_I64((int64_t)wm_exec_paused_ms(e), 0); /* never paused yet */
  uint64_t t0 = uv_now(wm_exec_loop(e)); /* the slow write ends at t0 + 320 or later */
  if (writing) {
    CHECK(uv_timer_init(wm_exec_loop(e), &s.tm) == 0);
    s.tm.data = &s;
    CHECK(uv_timer_start(&s.tm, on_slow_done, 320, 0) == 0);
    wm_io_writing(wm_exec_host(e), 1);
  }
  wm_exec_pressure(e, (int64_t)4 << 20);
  uv_update_time(wm_exec_loop(e));
  uint64_t t1 = uv_now(wm_exec_loop(e)); /* the sources paused at t1 or before */
  int rc = wm_exec_run(e);
  if (writing) {
    CHECK(rc == WM_OK);
    CHECK(s.done);
    /* paused from before t1 until the write's end (t0 + 320 or later): the live view's
     * "time paused" (wm_exec_paused_ms) is at least the difference, and stays once resumed */
    uint64_t paused = wm_exec_paused_ms(e);
    CHECK((int64_t)paused >= (int64_t)(t0 + 320) - (int64_t)t1);
    CHECK_I64((int64_t)wm_exec_paused_ms(e), (int64_t)paused);
    if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
  } else {
    CHECK(rc == WM_ERR);
    CHECK(strstr(wm_ctx_errtext(&ctx), "no progress for 40 ms") != NULL);
    CHECK(strstr(wm_ctx_errtext(&ctx), "'paused source' (paused by backpressure") != NULL);
  }
  wm_ctx_free(&ctx);
  wm_exec_free(e);
}


/* ---- sinks that hold less than their buffer ----------------------------------------------
 * A source that stops at once when paused (one record per loop turn, as generate does), and
 * two file sinks that gather 64 KiB before writing: past the high mark of 1000 bytes neither
 * has a full buffer. Paused, they must write what they hold, or nothing ever drains. */

typedef struct idlesrc {
  wm_exec *e;
  wm_op *op;
  uv_idle_t idle;
  long next, last;
  int paused, open;
} idlesrc;

static void on_idle_closed(uv_handle_t *h) { (void)h; }
static void idle_tick(uv_idle_t *h) {
  idlesrc *s = h->data;
  if (s->paused) return;
  if (s->next > s->last) {
    uv_idle_stop(&s->idle);
    wm_io_source_done(wm_exec_host(s->e), s->op);
    if (s->open) {
      s->open = 0;
      uv_close((uv_handle_t *)&s->idle, on_idle_closed);
    }
    return;
  }
  wm_value v = wm_int(s->next++);
  if (wm_op_emit(s->op, 0, &v, 0) != WM_OK) wm_io_fail(wm_exec_host(s->e));
}
static int idle_start(wm_op *op, wm_io_host *host) {
  idlesrc *s = op->impl;
  CHECK(uv_idle_init(host->loop, &s->idle) == 0);
  s->idle.data = s;
  s->open = 1;
  return uv_idle_start(&s->idle, idle_tick) == 0 ? WM_OK : WM_ERR;
}
static void idle_stop(wm_op *op, wm_io_host *host, int finish) {
  (void)host;
  (void)finish;
  idlesrc *s = op->impl;
  if (s->open) {
    s->open = 0;
    uv_close((uv_handle_t *)&s->idle, on_idle_closed);
  }
}
static void idle_pause(wm_op *op, wm_io_host *host, int paused) {
  (void)host;
  idlesrc *s = op->impl;
  s->paused = paused;
  if (s->open) {
    if (paused) uv_idle_stop(&s->idle);
    else uv_idle_start(&s->idle, idle_tick);
  }
}
static const wm_source_vt idle_svt = {.start = idle_start, .stop = idle_stop, .pause = idle_pause};

static void test_small_buffers(const char *dir) {
  char out1[512], out2[512];
  snprintf(out1, sizeof out1, "%s/s1.txt", dir);
  snprintf(out2, sizeof out2, "%s/s2.txt", dir);
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {.pressure_high = 1000, .pressure_low = 250};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  idlesrc s = {.e = e, .next = 1, .last = 3000};
  s.op = wm_op_new(&ctx, &fake_vt, &s, "generator");
  wm_write_config w1 = {.path = out1, .format = WM_FMT_TEXT};
  wm_write_config w2 = {.path = out2, .format = WM_FMT_TEXT};
  wm_op *k1 = wm_write_lines_new(wm_exec_host(e), "sink 1", &w1);
  wm_op *k2 = wm_write_lines_new(wm_exec_host(e), "sink 2", &w2);
  CHECK(s.op && k1 && k2 && wm_op_connect(s.op, 0, k1) >= 0 && wm_op_connect(s.op, 0, k2) >= 0);
  CHECK(wm_ctx_prepare(&ctx) == WM_OK);
  CHECK(wm_exec_add_source(e, s.op, &idle_svt) == 0);
  int rc = wm_exec_run(e);
  CHECK(rc == WM_OK);
  if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
  long sum;
  CHECK_I64(count_lines(out1, &sum), 3000);
  CHECK_I64(sum, 3000L * 3001 / 2);
  CHECK_I64(count_lines(out2, &sum), 3000);
  CHECK_I64(wm_exec_pressure_bytes(e), 0);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  remove(out1);
  remove(out2);
}

/* ---- periodic work through the operator's hooks ---------------------------------------
 * The executor drives vt->period / vt->on_period of any operator, not only of the timestamp
 * assigner: an operator of its own kind asking for 2 ms gets on_period with a clock that does
 * not go back, and stops the run on its third call; one whose period is 0 and one that has
 * ended are never called. (Without the hook the source would stay open: the guard timer
 * then ends the run after 5 s and the count checks fail.) */

typedef struct ticker {
  wm_exec *e;
  fakesrc *src;
  int64_t period;
  int calls;
  int64_t last_now;
  int went_back;
} ticker;

static void end_source(wm_exec *e, fakesrc *src) {
  if (!src->keep_open) return;
  wm_io_source_done(wm_exec_host(e), src->op);
  fake_stop(src->op, wm_exec_host(e), 1);
}

static int64_t tick_period(const wm_op *op) { return ((const ticker *)op->impl)->period; }
static int tick_on_period(wm_op *op, int64_t now) {
  ticker *t = op->impl;
  if (t->calls && now < t->last_now) t->went_back = 1;
  t->last_now = now;
  if (++t->calls == 3) end_source(t->e, t->src);
  return WM_OK;
}
static const wm_op_vt tick_vt = {.kind = "ticker", .period = tick_period, .on_period = tick_on_period};

static void on_guard(uv_timer_t *t) {
  ticker *k = t->data;
  end_source(k->e, k->src);
  uv_close((uv_handle_t *)t, NULL);
}

static void test_periodic_hook(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  fakesrc a = {.e = e};
  ticker k = {.e = e, .src = &a, .period = 2}, never = {.e = e, .src = &a, .period = 0},
         ended = {.e = e, .src = &a, .period = 1};
  wm_op *oa = wm_op_new(&ctx, &fake_vt, &a, "source");
  wm_op *ok = wm_op_new(&ctx, &tick_vt, &k, "ticker");
  wm_op *on = wm_op_new(&ctx, &tick_vt, &never, "no period");
  wm_op *oe = wm_op_new(&ctx, &tick_vt, &ended, "ended");
  a.op = oa;
  CHECK(oa && ok && on && oe && wm_ctx_prepare(&ctx) == WM_OK);
  oe->ended = 1;
  CHECK(wm_exec_add_source(e, oa, &fake_svt) == 0);
  CHECK(uv_async_init(wm_exec_loop(e), &a.keep, NULL) == 0);
  a.keep_open = 1;
  uv_timer_t guard;
  CHECK(uv_timer_init(wm_exec_loop(e), &guard) == 0);
  guard.data = &k;
  CHECK(uv_timer_start(&guard, on_guard, 5000, 0) == 0);
  uv_unref((uv_handle_t *)&guard);
  int rc = wm_exec_run(e);
  if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
  CHECK(rc == WM_OK);
  CHECK_I64(k.calls, 3);
  CHECK(!k.went_back);
  CHECK_I64(never.calls, 0);
  CHECK_I64(ended.calls, 0);
  if (!uv_is_closing((uv_handle_t *)&guard)) uv_close((uv_handle_t *)&guard, NULL);
  uv_run(wm_exec_loop(e), UV_RUN_NOWAIT);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
}

/* ---- a hold (a thread that has cut for a stopping checkpoint) -----------------------------
 * wm_exec_hold pauses every source whatever the backpressure, and no periodic work nor
 * processing-time timer runs until it ends; then the sources resume (unless backpressure
 * still pauses them) and a timer that came due meanwhile fires. */

typedef struct ptop {
  int fired;
} ptop;
static int pt_fire(wm_op *op, int64_t t) {
  (void)t;
  ((ptop *)op->impl)->fired++;
  return WM_OK;
}
static const wm_op_vt ptop_vt = {.kind = "pt", .processing_time = pt_fire};

typedef struct holdcheck {
  wm_exec *e;
  ticker *k;
  ptop *pt;
  int checked;
} holdcheck;

static void on_hold_check(uv_timer_t *t) {
  holdcheck *h = t->data;
  /* 40 ms held: the 2 ms ticker never ran, the 5 ms timer never fired */
  CHECK_I64(h->k->calls, 0);
  CHECK_I64(h->pt->fired, 0);
  h->checked = 1;
  wm_exec_hold(h->e, 0);
  CHECK(!wm_exec_held(h->e));
  uv_close((uv_handle_t *)t, NULL);
}

static void test_hold(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {.pressure_high = 1000, .pressure_low = 250};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  fakesrc a = {.e = e}, b = {.e = e};
  ticker k = {.e = e, .src = &a, .period = 2};
  ptop pt = {0};
  wm_op *oa = wm_op_new(&ctx, &fake_vt, &a, "source a");
  wm_op *ob = wm_op_new(&ctx, &fake_vt, &b, "source b");
  wm_op *ok = wm_op_new(&ctx, &tick_vt, &k, "ticker");
  wm_op *op = wm_op_new(&ctx, &ptop_vt, &pt, "timers");
  a.op = oa;
  b.op = ob;
  CHECK(oa && ob && ok && op && wm_ctx_prepare(&ctx) == WM_OK);
  CHECK(wm_exec_add_source(e, oa, &fake_svt) == 0 && wm_exec_add_source(e, ob, &fake_svt) == 0);
  /* held: paused once, and backpressure coming and going resumes nothing */
  wm_exec_hold(e, 1);
  CHECK(wm_exec_held(e) && a.paused && b.paused);
  wm_exec_pressure(e, 2000);
  wm_exec_pressure(e, -2000);
  CHECK(a.paused && b.paused && !wm_exec_paused(e));
  CHECK_I64(a.pauses, 1);
  CHECK_I64(a.resumes, 0);
  wm_exec_hold(e, 0);
  CHECK(!a.paused && !b.paused);
  CHECK_I64(a.resumes, 1);
  /* paused by backpressure: a hold that ends leaves them paused until the pressure falls */
  wm_exec_pressure(e, 2000);
  wm_exec_hold(e, 1);
  wm_exec_hold(e, 0);
  CHECK(a.paused && b.paused && wm_exec_paused(e));
  CHECK_I64(a.pauses, 2);
  wm_exec_pressure(e, -2000);
  CHECK(!a.paused && !b.paused);
  /* a run that starts held: no periodic work, no processing-time timer until the hold ends
   * (40 ms later); then the ticker ends the run on its third call, the timer has fired */
  wm_exec_hold(e, 1);
  CHECK(wm_ctx_register_processing_timer(&ctx, op, wm_ctx_now(&ctx) + 5) == WM_OK);
  CHECK(uv_async_init(wm_exec_loop(e), &a.keep, NULL) == 0);
  a.keep_open = 1;
  holdcheck hc = {.e = e, .k = &k, .pt = &pt};
  uv_timer_t check;
  CHECK(uv_timer_init(wm_exec_loop(e), &check) == 0);
  check.data = &hc;
  CHECK(uv_timer_start(&check, on_hold_check, 40, 0) == 0);
  wm_io_source_done(wm_exec_host(e), ob); /* b has ended: a and the ticker end the run */
  int rc = wm_exec_run(e);
  if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
  CHECK(rc == WM_OK);
  CHECK(hc.checked);
  CHECK_I64(k.calls, 3);
  CHECK_I64(pt.fired, 1);
  uv_run(wm_exec_loop(e), UV_RUN_NOWAIT);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
}

void test_exec(void) {
  char dir[] = "/tmp/wm_test_exec.XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  test_fanout_files(dir);
  test_small_buffers(dir);
  rmdir(dir);
  test_nested_resume();
  test_open_source_at_end();
  test_stall(0);
  test_stall(1);
  test_periodic_hook();
  test_hold();
}
