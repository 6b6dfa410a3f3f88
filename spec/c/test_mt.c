/* The multi-core executor's building blocks: the SPSC queue and the record encoding. */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

#include "base/wm_codec.h"
#include "base/wm_spsc.h"
#include "exec/wm_mt.h"
#include "io/wm_source.h"
#include "test.h"

static void test_spsc_basic(void) {
  wm_spsc *q = wm_spsc_new(3);
  CHECK(q != NULL);
  CHECK_I64(wm_spsc_capacity(q), 4); /* rounded up to a power of two */
  CHECK(wm_spsc_pop(q) == NULL);
  int v[10];
  /* wrap around the ring several times, in FIFO order */
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 4; i++) CHECK(wm_spsc_push(q, &v[i]));
    CHECK(!wm_spsc_push(q, &v[4])); /* full: the push fails, never blocks */
    CHECK_I64(wm_spsc_size(q), 4);
    CHECK(wm_spsc_pop(q) == &v[0]);
    CHECK(wm_spsc_push(q, &v[4])); /* room again */
    for (int i = 1; i <= 4; i++) CHECK(wm_spsc_pop(q) == &v[i]);
    CHECK(wm_spsc_pop(q) == NULL);
  }
  wm_spsc_consumed(q, 10);
  CHECK_I64(atomic_load(&q->popped_bytes), 10);
  wm_spsc_free(q);
}

#define STRESS_N 1000000

typedef struct stress {
  wm_spsc *q;
  int full; /* times the producer found the ring full */
} stress;

static void producer(void *arg) {
  stress *s = arg;
  for (uintptr_t i = 1; i <= STRESS_N; i++)
    while (!wm_spsc_push(s->q, (void *)i)) {
      s->full++;
      sched_yield();
    }
}

/* A million items through a small ring between two threads: every item arrives once, in
 * order (run it under -fsanitize=thread to check the memory ordering). */
static void test_spsc_threads(void) {
  stress s = {.q = wm_spsc_new(64)};
  uv_thread_t t;
  CHECK_I64(uv_thread_create(&t, producer, &s), 0);
  uintptr_t expect = 1, bad = 0;
  while (expect <= STRESS_N) {
    void *p = wm_spsc_pop(s.q);
    if (!p) {
      sched_yield();
      continue;
    }
    if ((uintptr_t)p != expect) bad++;
    expect++;
  }
  uv_thread_join(&t);
  CHECK_I64(bad, 0);
  CHECK(wm_spsc_pop(s.q) == NULL);
  wm_spsc_free(s.q);
}

static int same(const wm_value *a, const wm_value *b) {
  if (a->type == WM_CSTR || a->type == WM_STR) {
    if (b->type != WM_CSTR && b->type != WM_STR) return 0;
    size_t n1, n2;
    const char *s1 = wm_value_str(a, &n1), *s2 = wm_value_str(b, &n2);
    return n1 == n2 && memcmp(s1, s2, n1) == 0 && (a->flags & WM_VF_COMPOSITE) == (b->flags & WM_VF_COMPOSITE);
  }
  if (a->type != b->type) return 0;
  switch (a->type) {
  case WM_NIL: return 1;
  case WM_BOOL: return a->u.b == b->u.b;
  case WM_INT: return a->u.i == b->u.i;
  case WM_FLOAT: return memcmp(&a->u.f, &b->u.f, 8) == 0;
  case WM_ROW: {
    const wm_row *r1 = a->u.row, *r2 = b->u.row;
    if (r1->schema->nfields != r2->schema->nfields) return 0;
    for (uint32_t i = 0; i < r1->schema->nfields; i++)
      if (strcmp(r1->schema->names[i], r2->schema->names[i]) != 0 ||
          r1->schema->types[i] != r2->schema->types[i] || !same(&r1->fields[i], &r2->fields[i]))
        return 0;
    return 1;
  }
  default: return 0;
  }
}

/* Encodes v, decodes it, compares; returns the encoded size (or -1). */
static long roundtrip(wm_encoder *e, wm_decoder *d, const wm_value *v) {
  wm_buf b;
  wm_buf_init(&b);
  wm_error err;
  long n = -1;
  if (wm_encode_value(e, NULL, &b, v, &err) == 0) {
    const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
    wm_value out;
    if (wm_decode_value(d, NULL, NULL, &p, end, &out, &err) == 0) {
      if (p == end && same(v, &out)) n = (long)b.len;
      wm_value_release(NULL, &out);
    }
  }
  wm_buf_free(&b);
  return n;
}

static void test_codec(void) {
  wm_encoder e;
  wm_decoder d;
  wm_encoder_init(&e);
  wm_decoder_init(&d);
  wm_value scalars[] = {wm_nil(), wm_bool(true), wm_bool(false), wm_int(0), wm_int(-1), wm_int(63),
                        wm_int(INT64_MAX), wm_int(INT64_MIN), wm_float(0.5), wm_float(-0.0),
                        wm_float(INFINITY), wm_float(1e300), wm_cstr("", 0), wm_cstr("a\0b", 3)};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    CHECK(roundtrip(&e, &d, &scalars[i]) > 0);
  CHECK_I64(roundtrip(&e, &d, &scalars[4]), 2); /* small integers: tag + one byte */
  /* a composite key keeps its flag */
  wm_value parts[2] = {wm_cstr("k", 1), wm_int(7)}, key;
  CHECK_I64(wm_key_compose(parts, 2, &key), 0);
  CHECK(roundtrip(&e, &d, &key) > 0);
  wm_value_release(NULL, &key);
  /* rows: the schema goes once, later rows name it by id */
  const char *names[3] = {"id", "ts", "vc"};
  uint8_t types[3] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER};
  wm_schema *s = wm_schema_new(3, names, types);
  wm_row *r = wm_row_new(s);
  wm_str *id = wm_str_new("k000042", 7);
  r->fields[0].type = WM_STR;
  r->fields[0].u.s = id;
  r->fields[1] = wm_int(1700000000123);
  r->fields[2] = wm_float(57.5);
  wm_value row = wm_row_value(r);
  long first = roundtrip(&e, &d, &row), second = roundtrip(&e, &d, &row);
  CHECK(first > 0 && second > 0);
  CHECK(second < first - 10); /* no names the second time */
  /* a schema freed and another allocated: still decoded with the right names */
  wm_value_release(NULL, &row);
  wm_schema_release(s);
  const char *names2[1] = {"other"};
  wm_schema *s2 = wm_schema_new(1, names2, NULL);
  wm_row *r2 = wm_row_new(s2);
  r2->fields[0] = wm_bool(true);
  wm_value row2 = wm_row_value(r2);
  CHECK(roundtrip(&e, &d, &row2) > 0);
  /* every truncation of an encoding is an error, never a crash or a read past the end */
  wm_encoder e2;
  wm_decoder d2;
  wm_encoder_init(&e2);
  wm_buf b;
  wm_buf_init(&b);
  wm_error err;
  CHECK_I64(wm_encode_value(&e2, NULL, &b, &row2, &err), 0);
  int bad = 0;
  for (size_t cut = 0; cut < b.len; cut++) {
    wm_decoder_init(&d2);
    const uint8_t *p = (const uint8_t *)b.data;
    wm_value out;
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, b.data, cut);
    p = copy;
    if (wm_decode_value(&d2, NULL, NULL, &p, copy + cut, &out, &err) == 0) {
      bad++;
      wm_value_release(NULL, &out);
    }
    free(copy);
    wm_decoder_free(&d2);
  }
  CHECK_I64(bad, 0);
  /* a row that names a schema the decoder never saw; an unknown tag */
  wm_decoder_init(&d2);
  const uint8_t undefined[] = {WM_C_ROW, 5}, unknown[] = {200};
  const uint8_t *p = undefined;
  wm_value out;
  CHECK_I64(wm_decode_value(&d2, NULL, NULL, &p, undefined + 2, &out, &err), -1);
  CHECK(strstr(err.msg, "undefined schema") != NULL);
  p = unknown;
  CHECK_I64(wm_decode_value(&d2, NULL, NULL, &p, unknown + 1, &out, &err), -1);
  CHECK(strstr(err.msg, "tag 200") != NULL);
  /* a composite key whose part runs past its bytes (found by fuzz_codec: wm_key_part read
   * past the end when the key was printed) */
  const uint8_t badkey[] = {WM_C_KEY, 3, 's', 9, 0};
  p = badkey;
  CHECK_I64(wm_decode_value(&d2, NULL, NULL, &p, badkey + sizeof badkey, &out, &err), -1);
  CHECK(strstr(err.msg, "composite key") != NULL);
  /* a host value without host hooks is an error, not a crash */
  wm_value slot = {.type = WM_SLOT};
  wm_buf_clear(&b);
  CHECK_I64(wm_encode_value(&e2, NULL, &b, &slot, &err), -1);
  wm_decoder_free(&d2);
  wm_buf_free(&b);
  wm_encoder_free(&e2);
  wm_value_release(NULL, &row2);
  wm_schema_release(s2);
  wm_encoder_free(&e);
  wm_decoder_free(&d);
}

/* Encodes a row {id = str, v = i} into b (cleared first). */
static void enc_row(wm_encoder *e, wm_schema *s, wm_buf *b, const char *str, int64_t i) {
  wm_row *r = wm_row_new(s);
  r->fields[0] = wm_cstr(str, strlen(str));
  wm_value_retain(NULL, &r->fields[0]);
  r->fields[1] = wm_int(i);
  wm_value v = wm_row_value(r);
  wm_error err;
  wm_buf_clear(b);
  CHECK_I64(wm_encode_value(e, NULL, b, &v, &err), 0);
  wm_value_release(NULL, &v);
}

static int dec(wm_decoder *d, const wm_buf *b, wm_value *out) {
  const uint8_t *p = (const uint8_t *)b->data;
  wm_error err;
  return wm_decode_value(d, NULL, NULL, &p, p + b->len, out, &err);
}

/* The decoder decodes a row into the last one of its schema when nobody holds that one any
 * more (and its string in place when it fits), never into a row or a string that someone
 * still holds. */
static void test_codec_reuse(void) {
  wm_encoder e;
  wm_decoder d;
  wm_encoder_init(&e);
  wm_decoder_init(&d);
  const char *names[2] = {"id", "v"};
  wm_schema *s = wm_schema_new(2, names, NULL);
  wm_buf b;
  wm_buf_init(&b);
  wm_value a, c, x;
  enc_row(&e, s, &b, "abcdef", 1);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK_I64(a.u.row->refs, 2); /* the caller's and the decoder's */
  wm_row *ra = a.u.row;
  wm_str *sa = ra->fields[0].u.s;
  wm_value_release(NULL, &a); /* nobody holds it: the next row goes into it */
  enc_row(&e, s, &b, "xyz", 2);
  CHECK_I64(dec(&d, &b, &c), 0);
  CHECK(c.u.row == ra && c.u.row->fields[0].u.s == sa);
  CHECK_STR(c.u.row->fields[0].u.s->data, "xyz");
  CHECK_I64((int64_t)c.u.row->fields[0].u.s->len, 3);
  CHECK_I64(c.u.row->fields[1].u.i, 2);
  /* held (a window keeps the record): the next one is a new row, this one unchanged */
  enc_row(&e, s, &b, "held?", 3);
  CHECK_I64(dec(&d, &b, &x), 0);
  CHECK(x.u.row != c.u.row);
  CHECK_STR(c.u.row->fields[0].u.s->data, "xyz");
  CHECK_I64(c.u.row->fields[1].u.i, 2);
  CHECK_STR(x.u.row->fields[0].u.s->data, "held?");
  wm_value_release(NULL, &c);
  /* the new row is kept now; its string held elsewhere (a key) is not written over */
  wm_value key = x.u.row->fields[0];
  wm_value_retain(NULL, &key);
  wm_row *rx = x.u.row;
  wm_value_release(NULL, &x);
  enc_row(&e, s, &b, "ab", 4);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK(a.u.row == rx && a.u.row->fields[0].u.s != key.u.s);
  CHECK_STR(key.u.s->data, "held?");
  CHECK_STR(a.u.row->fields[0].u.s->data, "ab");
  wm_value_release(NULL, &key);
  wm_value_release(NULL, &a);
  /* a longer string than the one in place: a new string, the right bytes */
  enc_row(&e, s, &b, "a much longer string than before", 5);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK(a.u.row == rx);
  CHECK_STR(a.u.row->fields[0].u.s->data, "a much longer string than before");
  CHECK_I64(a.u.row->fields[1].u.i, 5);
  wm_value_release(NULL, &a);
  /* then a short one goes into that string */
  enc_row(&e, s, &b, "q", 6);
  CHECK_I64(dec(&d, &b, &a), 0);
  CHECK_STR(a.u.row->fields[0].u.s->data, "q");
  CHECK_I64((int64_t)a.u.row->fields[0].u.s->len, 1);
  wm_value_release(NULL, &a);
  wm_buf_free(&b);
  wm_schema_release(s);
  wm_encoder_free(&e);
  wm_decoder_free(&d); /* releases the kept row (ASan: nothing leaks) */
}

/* ---- a stopping checkpoint on two threads --------------------------------------------------
 * Thread 1 has a source that emits 1, 2, 3, ... (5 every millisecond while not paused) to an
 * operator on thread 2, which counts them. Checkpoint 1 is asked for as the stop's
 * (wm_mt_request_stop_checkpoint). Once both threads have taken their parts, each must emit
 * and process nothing more: the source has emitted exactly what it had at its cut, the
 * operator has processed exactly what it had at its cut, and what it had plus the records of
 * the channel state is what the source had emitted at its cut (none lost, none twice).
 * Without the hold the source goes on, and thread 2 processes what comes after its cut.
 * Then (stop = 0) the stop is given up instead: the threads go on, thread 2 first processing
 * what it kept, and sees 1..N in order, each once. */

enum { STOP_N = 3000 };

typedef struct stopjob stopjob;

typedef struct stopthr {
  stopjob *job;
  int t;
  wm_ctx ctx;
  wm_exec *exec;
  wm_mt_local *l;
  /* thread 1: the source */
  wm_op *src;
  uv_timer_t tick;
  int paused, ended;
  int64_t emitted, emitted_at_cut;
  /* thread 2: the counter */
  int64_t seen, seen_at_cut, chan_records, out_of_order;
  int done;
  uv_thread_t th;
} stopthr;

struct stopjob {
  wm_mt_job *j;
  stopthr thr[2];
  int stop;       /* 1: the stop completes (job saved); 0: it is given up */
  _Atomic int done, ready;
  _Atomic int64_t seen; /* thread 2's count, for the main thread */
  _Atomic int ticks;    /* the source's timer, paused or not */
  int ticks_from;
  uv_mutex_t mu; /* with cv: the main thread waits for what the counters above tell */
  uv_cond_t cv;
};

/* A counter of J changed: wakes wait_until. */
static void notify(stopjob *J) {
  uv_mutex_lock(&J->mu);
  uv_cond_broadcast(&J->cv);
  uv_mutex_unlock(&J->mu);
}

static void stop_tick(uv_timer_t *h) {
  stopthr *s = h->data;
  atomic_fetch_add(&s->job->ticks, 1);
  notify(s->job);
  for (int k = 0; k < 5 && !s->paused && !s->ended; k++) {
    wm_value v = wm_int(++s->emitted);
    CHECK(wm_op_emit(s->src, 0, &v, 0) == WM_OK);
    if (s->emitted == STOP_N) {
      s->ended = 1;
      uv_timer_stop(&s->tick);
      wm_io_source_done(wm_exec_host(s->exec), s->src);
    }
  }
}
static int stop_src_start(wm_op *op, wm_io_host *host) {
  (void)host;
  stopthr *s = op->impl;
  return uv_timer_start(&s->tick, stop_tick, 1, 1) == 0 ? WM_OK : WM_ERR;
}
static void stop_src_stop(wm_op *op, wm_io_host *host, int finish) {
  (void)host;
  (void)finish;
  stopthr *s = op->impl;
  uv_timer_stop(&s->tick);
}
static void stop_src_pause(wm_op *op, wm_io_host *host, int paused) {
  (void)host;
  ((stopthr *)op->impl)->paused = paused;
}
static const wm_source_vt stop_src_svt = {.start = stop_src_start, .stop = stop_src_stop,
                                          .pause = stop_src_pause};
static const wm_op_vt stop_src_vt = {.kind = "numbers", .record = wm_source_record};

static int stop_count(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  stopthr *s = op->impl;
  if (rec->type != WM_INT || rec->u.i != s->seen + 1) s->out_of_order++;
  s->seen++;
  atomic_store(&s->job->seen, s->seen);
  notify(s->job);
  return WM_OK;
}
static const wm_op_vt stop_count_vt = {.kind = "count", .record = stop_count};

static int stop_hook_snapshot(void *ud, uint64_t id) {
  stopthr *s = ud;
  CHECK_I64((int64_t)id, 1);
  s->emitted_at_cut = s->emitted;
  s->seen_at_cut = s->seen;
  return WM_OK;
}
static int chan_msg(void *ud, int kind, uint32_t gid, int chan, int64_t t, const wm_value *rec) {
  (void)gid;
  (void)chan;
  (void)t;
  stopthr *s = ud;
  if (kind == WM_MT_RECORD) {
    if (rec->type != WM_INT || rec->u.i != s->seen_at_cut + s->chan_records + 1) s->out_of_order++;
    s->chan_records++;
  }
  return WM_OK;
}
static int stop_hook_channel(void *ud, uint64_t id, int from, const void *data, size_t len) {
  stopthr *s = ud;
  CHECK_I64((int64_t)id, 1);
  CHECK_I64(from, 0);
  return wm_mt_decode_channel(&s->ctx, &(wm_codec_host){0}, data, len, chan_msg, s);
}
static int stop_hook_done(void *ud, uint64_t id) {
  stopthr *s = ud;
  CHECK_I64((int64_t)id, 1);
  s->done = 1;
  atomic_fetch_add(&s->job->done, 1);
  notify(s->job);
  return WM_OK;
}

static void stop_thread(void *arg) {
  stopthr *s = arg;
  stopjob *J = s->job;
  wm_ctx_init(&s->ctx);
  wm_exec_config cfg = {.stall_timeout = -1};
  s->exec = wm_exec_new(&s->ctx, &cfg);
  wm_codec_host ch = {0};
  s->l = s->exec ? wm_mt_local_new(J->j, s->t, s->exec, &ch) : NULL;
  int ok = s->l != NULL;
  if (ok && s->t == 0) {
    s->src = wm_op_new(&s->ctx, &stop_src_vt, s, "numbers");
    wm_op *snd = wm_mt_sender_new(s->l, "to thread 2", "numbers", 1, 0, 0);
    ok = s->src && snd && wm_op_connect(s->src, 0, snd) >= 0 &&
         uv_timer_init(wm_exec_loop(s->exec), &s->tick) == 0;
    s->tick.data = s;
    if (ok) ok = wm_exec_add_source(s->exec, s->src, &stop_src_svt) == 0;
  } else if (ok) {
    wm_op *cnt = wm_op_new(&s->ctx, &stop_count_vt, s, "count");
    ok = cnt && wm_mt_set_target(s->l, 0, cnt) == 0;
    if (cnt) cnt->nin++; /* its channel 0 is the remote one */
    wm_mt_add_remote_input(s->l);
  }
  ok = ok && wm_ctx_prepare(&s->ctx) == WM_OK;
  CHECK(ok);
  if (ok) {
    wm_mt_ckpt_hooks h = {.snapshot = stop_hook_snapshot, .put_channel = stop_hook_channel,
                          .done = stop_hook_done, .ud = s};
    wm_mt_set_checkpoints(s->l, &h);
  }
  CHECK(wm_mt_job_barrier(J->j, s->t, ok, 0) == 0);
  if (ok) {
    atomic_fetch_add(&J->ready, 1);
    int rc = wm_exec_run(s->exec);
    if (rc != WM_OK) fprintf(stderr, "  thread %d: %s\n", s->t + 1, wm_ctx_errtext(&s->ctx));
    CHECK(rc == WM_OK);
  }
  wm_mt_local_free(s->l);
  wm_ctx_free(&s->ctx);
  wm_exec_free(s->exec);
}

/* Waits until fn(J) holds, woken by notify (at most 20 s: a hung job fails the checks after). */
static void wait_until(int (*fn)(stopjob *), stopjob *J) {
  uint64_t end = uv_hrtime() + UINT64_C(20000000000);
  uv_mutex_lock(&J->mu);
  while (!fn(J)) {
    uint64_t now = uv_hrtime();
    if (now >= end || uv_cond_timedwait(&J->cv, &J->mu, end - now) != 0) break;
  }
  uv_mutex_unlock(&J->mu);
}
static int seen_some(stopjob *J) { return atomic_load(&J->seen) >= 200; }
static int both_done(stopjob *J) { return atomic_load(&J->done) == 2; }
static int ticked(stopjob *J) { return atomic_load(&J->ticks) >= J->ticks_from + 20; }

static void test_stop_hold(int stop) {
  stopjob J = {.stop = stop};
  wm_error err;
  CHECK(uv_mutex_init(&J.mu) == 0);
  CHECK(uv_cond_init(&J.cv) == 0);
  J.j = wm_mt_job_new(2, 64, &err);
  CHECK(J.j != NULL);
  if (!J.j) {
    uv_cond_destroy(&J.cv);
    uv_mutex_destroy(&J.mu);
    return;
  }
  for (int t = 0; t < 2; t++) {
    J.thr[t].job = &J;
    J.thr[t].t = t;
    CHECK(uv_thread_create(&J.thr[t].th, stop_thread, &J.thr[t]) == 0);
  }
  wait_until(seen_some, &J); /* running, records crossing */
  wm_mt_request_stop_checkpoint(J.j, 1);
  wait_until(both_done, &J);
  CHECK(both_done(&J));
  /* 20 ticks of the source's timer held: without the hold it would emit 5 records a tick */
  J.ticks_from = atomic_load(&J.ticks);
  wait_until(ticked, &J);
  CHECK(ticked(&J));
  if (stop) wm_mt_job_saved(J.j);
  else wm_mt_cancel_stop_checkpoint(J.j, 1);
  for (int t = 0; t < 2; t++) uv_thread_join(&J.thr[t].th);
  stopthr *a = &J.thr[0], *b = &J.thr[1];
  CHECK_I64(b->out_of_order, 0);
  CHECK(a->emitted_at_cut > 0 && a->emitted_at_cut < STOP_N);
  if (stop) {
    CHECK_I64(a->emitted, a->emitted_at_cut); /* nothing past the cut */
    CHECK_I64(b->seen, b->seen_at_cut);
    CHECK_I64(b->seen_at_cut + b->chan_records, a->emitted_at_cut); /* none lost */
  } else {
    CHECK_I64(a->emitted, STOP_N);
    CHECK_I64(b->seen, STOP_N); /* what was kept, then the rest: 1..N in order */
  }
  wm_mt_job_free(J.j);
  uv_cond_destroy(&J.cv);
  uv_mutex_destroy(&J.mu);
}

void test_mt(void) {
  test_stop_hold(1);
  test_stop_hold(0);
  test_spsc_basic();
  test_spsc_threads();
  test_codec();
  test_codec_reuse();
}
