/* Checkpoints of operators (graph/wm_snapshot.h, graph/wm_state.h): for every operator
 * kind, feeding part of an input, snapshotting the whole context, restoring into a freshly
 * built context of the same plan and feeding the rest gives exactly the output (records,
 * late records, watermarks and statuses, in order) of an uninterrupted run, at every cut
 * point; damaged, truncated, foreign and other-version bytes are refused with a clear
 * error. */
#include <stdlib.h>

#include "base/wm_buf.h"
#include "base/wm_keygroup.h"
#include "exec/wm_exchange.h"
#include "exec/wm_rescale.h"
#include "graph/wm_snapshot.h"
#include "graph/wm_statefmt.h"
#include "ops/wm_ijoin.h"
#include "ops/wm_keyedop.h"
#include "ops/wm_tsop.h"
#include "ops/wm_winop.h"
#include "time/wm_time.h"
#include "test.h"

/* ---- a plan, a virtual clock, and a sink that logs everything in order ---------------- */

typedef struct ptreg {
  wm_op *op;
  int64_t t;
} ptreg;

typedef struct plan plan;
typedef void (*build_fn)(plan *p);

typedef struct sink {
  plan *p;
  const char *label;
} sink;

struct plan {
  wm_ctx ctx;
  wm_buf out;
  int64_t now;
  ptreg pt[256];
  int npt;
  wm_op *in[2];   /* where records go (inputs 0 and 1) */
  wm_op *gen[2];  /* timestamps operators, for periodic emits and idleness */
  wm_op *src[2];  /* upstream of in[]: end of input */
  sink main, late;
  wm_schema *schema;
  int quiet; /* run: errors expected (damaged state), not failures */
};

static int64_t vnow(void *ud) { return ((plan *)ud)->now; }

static int vpt_register(void *ud, wm_op *op, int64_t t) {
  plan *p = ud;
  if (p->npt == 256) return wm_ctx_error(&p->ctx, "too many processing-time timers");
  p->pt[p->npt++] = (ptreg){op, t};
  return WM_OK;
}

static void log_line(sink *s, const char *what, int64_t t, const wm_value *rec) {
  wm_buf *b = &s->p->out;
  if (s->label) {
    wm_buf_adds(b, s->label);
    wm_buf_addc(b, ' ');
  }
  wm_buf_adds(b, what);
  wm_buf_add_int(b, t);
  if (rec) {
    wm_buf_addc(b, ' ');
    wm_format_value(b, rec, 0, NULL, NULL);
  }
  wm_buf_addc(b, '\n');
}

static int sink_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  log_line(op->impl, "", ts, rec);
  return WM_OK;
}
static int sink_watermark(wm_op *op, int64_t w) {
  log_line(op->impl, "W ", w, NULL);
  return WM_OK;
}
static int sink_status(wm_op *op, bool idle) {
  log_line(op->impl, idle ? "idle " : "active ", 0, NULL);
  return WM_OK;
}
static const wm_op_vt sink_vt = {.kind = "sink", .record = sink_record,
                                 .watermark = sink_watermark, .status = sink_status};
static int src_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}
static const wm_op_vt src_vt = {.kind = "source", .record = src_record};

static void plan_init(plan *p, build_fn build) {
  memset(p, 0, sizeof *p);
  wm_ctx_init(&p->ctx);
  wm_buf_init(&p->out);
  p->ctx.now = vnow;
  p->ctx.now_ud = p;
  p->ctx.pt_register = vpt_register;
  p->ctx.pt_ud = p;
  p->main.p = p->late.p = p;
  p->late.label = "late";
  static const char *const names[] = {"id", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER};
  p->schema = wm_schema_new(2, names, types);
  build(p);
  CHECK_I64(wm_ctx_prepare(&p->ctx), WM_OK);
}

static void plan_free(plan *p) {
  wm_ctx_free(&p->ctx);
  wm_buf_free(&p->out);
  wm_schema_release(p->schema);
}

/* The sources (one per input) and the sink, around a middle built by the scenario. */
static wm_op *add_src(plan *p, int i) {
  return p->src[i] = wm_op_new(&p->ctx, &src_vt, NULL, i ? "source 2" : "source");
}
static wm_op *add_sink(plan *p) { return wm_op_new(&p->ctx, &sink_vt, &p->main, "sink"); }
static wm_op *add_late_sink(plan *p) { return wm_op_new(&p->ctx, &sink_vt, &p->late, "late sink"); }

static wm_op *add_tsop(plan *p, int i, int64_t delay, int64_t interval, int64_t idle) {
  wm_tsop_config tc = {0};
  tc.builtin = WM_GEN_BOUNDED;
  tc.delay = delay;
  tc.interval = interval;
  tc.idle_timeout = idle;
  wm_op *t = wm_tsop_new(&p->ctx, i ? "timestamps 2" : "timestamps", &tc);
  wm_op_connect(add_src(p, i), 0, t);
  p->in[i] = p->src[i];
  p->gen[i] = t;
  return t;
}

/* ---- events ------------------------------------------------------------------------- */

typedef struct ev {
  char kind;  /* r record, p periodic emit, c clock to ts (fires processing timers), i idleness
               * check, e end of input */
  const char *key;
  int64_t ts; /* ms */
  int64_t v;
  int in;
} ev;

#define R(k, ts, v) {'r', k, ts, v, 0}
#define R2(k, ts, v) {'r', k, ts, v, 1}
#define P {'p', NULL, 0, 0, 0}
#define C(t) {'c', NULL, t, 0, 0}
#define I {'i', NULL, 0, 0, 0}
#define E {'e', NULL, 0, 0, 0}

static int fire_pt(plan *p) {
  for (;;) {
    int best = -1;
    for (int i = 0; i < p->npt; i++)
      if (p->pt[i].t <= p->now && (best < 0 || p->pt[i].t < p->pt[best].t)) best = i;
    if (best < 0) return WM_OK;
    ptreg r = p->pt[best];
    memmove(&p->pt[best], &p->pt[best + 1], (size_t)(p->npt - best - 1) * sizeof *p->pt);
    p->npt--;
    if (r.op->vt->processing_time(r.op, r.t) != WM_OK) return WM_ERR;
  }
}

static int run(plan *p, const ev *evs, size_t from, size_t to) {
  for (size_t k = from; k < to; k++) {
    const ev *e = &evs[k];
    int rc = WM_OK;
    switch (e->kind) {
    case 'r': {
      wm_row *r = wm_row_new(p->schema);
      r->fields[0] = wm_cstr(e->key, strlen(e->key));
      wm_value_retain(NULL, &r->fields[0]);
      r->fields[1] = wm_int(e->v);
      if (p->schema->nfields > 2) r->fields[2] = wm_int((int64_t)k); /* which record */
      wm_value v = wm_row_value(r);
      rc = wm_op_input_record(p->in[e->in], 0, &v, e->ts);
      wm_value_release(NULL, &v);
      break;
    }
    case 'p':
      for (int i = 0; i < 2 && rc == WM_OK; i++)
        if (p->gen[i]) rc = wm_tsop_periodic(p->gen[i]);
      break;
    case 'c':
      p->now = e->ts;
      rc = fire_pt(p);
      break;
    case 'i':
      for (int i = 0; i < 2 && rc == WM_OK; i++)
        if (p->gen[i]) rc = wm_tsop_check_idle(p->gen[i], p->now);
      break;
    case 'e':
      for (int i = 0; i < 2 && rc == WM_OK; i++)
        if (p->src[i]) rc = wm_op_emit_watermark(p->src[i], WM_TIME_MAX);
      if (rc == WM_OK) {
        p->now = WM_TIME_MAX - 1;
        rc = fire_pt(p);
      }
      break;
    }
    if (rc != WM_OK) {
      if (p->quiet) return rc;
      fprintf(stderr, "FAIL %s: event %zu: %s\n", T.current, k, wm_ctx_errtext(&p->ctx));
      T.failed++;
      return rc;
    }
  }
  return WM_OK;
}

/* ---- parts in memory ---------------------------------------------------------------- */

typedef struct parts {
  wm_part p[32];
  size_t n;
} parts;

static int put_part(void *ud, const char *name, const void *data, size_t len, wm_error *err) {
  parts *ps = ud;
  if (ps->n == 32) return wm_error_set(err, "too many parts");
  uint8_t *d = malloc(len ? len : 1);
  char *nm = strdup(name);
  if (!d || !nm) {
    free(d);
    free(nm);
    return wm_error_set(err, "out of memory");
  }
  memcpy(d, data, len);
  ps->p[ps->n++] = (wm_part){nm, d, len};
  return 0;
}

static void parts_free(parts *ps) {
  for (size_t i = 0; i < ps->n; i++) {
    free((char *)ps->p[i].name);
    free((uint8_t *)ps->p[i].data);
  }
  ps->n = 0;
}

static size_t parts_bytes(const parts *ps) {
  size_t n = 0;
  for (size_t i = 0; i < ps->n; i++) n += ps->p[i].len;
  return n;
}

/* ---- the round trip ------------------------------------------------------------------ */

static const wm_codec_host *cur_codec; /* host values: the codec host given to snapshots */

/* Every cut point of evs: the uninterrupted output equals the output before the cut plus
 * the output of a fresh plan restored from the snapshot at the cut; the snapshot changes
 * nothing in the plan it was taken of. Returns the largest snapshot's size. */
static size_t roundtrip(build_fn build, const ev *evs, size_t n, const char *expect) {
  plan full;
  plan_init(&full, build);
  run(&full, evs, 0, n);
  if (expect) CHECK_STR(full.out.data, expect);
  size_t biggest = 0;
  int bad = 0;
  for (size_t cut = 0; cut <= n; cut++) {
    plan a, b;
    plan_init(&a, build);
    parts ps = {0};
    if (run(&a, evs, 0, cut) != WM_OK) break;
    if (wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps) != WM_OK) {
      fprintf(stderr, "FAIL %s: snapshot at %zu: %s\n", T.current, cut, wm_ctx_errtext(&a.ctx));
      T.failed++;
      plan_free(&a);
      break;
    }
    if (parts_bytes(&ps) > biggest) biggest = parts_bytes(&ps);
    size_t prefix = a.out.len;
    int64_t now = a.now;
    run(&a, evs, cut, n);
    if (strcmp(a.out.data ? a.out.data : "", full.out.data ? full.out.data : "") != 0) bad++;
    plan_init(&b, build);
    b.now = now; /* the clock goes on where it was */
    wm_buf_add(&b.out, a.out.data ? a.out.data : "", prefix);
    if (wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n) != WM_OK) {
      fprintf(stderr, "FAIL %s: restore at %zu: %s\n", T.current, cut, wm_ctx_errtext(&b.ctx));
      T.failed++;
    } else {
      run(&b, evs, cut, n);
      if (strcmp(b.out.data ? b.out.data : "", full.out.data ? full.out.data : "") != 0) {
        fprintf(stderr, "FAIL %s: cut at event %zu gives\n%s\nexpected\n%s\n", T.current, cut,
                b.out.data, full.out.data);
        T.failed++;
      } else {
        T.passed++;
      }
    }
    plan_free(&a);
    plan_free(&b);
    parts_free(&ps);
  }
  CHECK_I64(bad, 0); /* a snapshot leaves the plan as it was */
  plan_free(&full);
  return biggest;
}

/* The snapshot at cut, damaged: every part cut at every length, every byte flipped, the
 * version changed: refused (never a crash; ASan checks the flips). */
static void damage(build_fn build, const ev *evs, size_t nevs, size_t cut) {
  plan a;
  plan_init(&a, build);
  run(&a, evs, 0, cut);
  parts ps = {0};
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_OK);
  int accepted = 0, unclear = 0;
  for (size_t k = 0; k < ps.n; k++) {
    const wm_part orig = ps.p[k];
    uint8_t *buf = malloc(orig.len + 1);
    for (size_t len = 0; len < orig.len; len++) {
      memcpy(buf, orig.data, len);
      ps.p[k].data = buf;
      ps.p[k].len = len;
      plan b;
      plan_init(&b, build);
      if (wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n) == WM_OK) {
        accepted++;
      } else if (!strstr(wm_ctx_errtext(&b.ctx), "damaged checkpoint state") ||
                 !strstr(wm_ctx_errtext(&b.ctx), orig.name)) {
        if (!unclear) fprintf(stderr, "unclear: %s\n", wm_ctx_errtext(&b.ctx));
        unclear++;
      }
      plan_free(&b);
    }
    for (size_t at = 0; at < orig.len; at++) {
      memcpy(buf, orig.data, orig.len);
      buf[at] ^= 0xff;
      ps.p[k].data = buf;
      ps.p[k].len = orig.len;
      plan b;
      plan_init(&b, build);
      b.quiet = 1;
      if (wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n) == WM_OK) run(&b, evs, cut, nevs);
      plan_free(&b);
    }
    ps.p[k] = orig;
    free(buf);
  }
  CHECK_I64(accepted, 0);
  CHECK_I64(unclear, 0);
  /* another version: the operator section's first byte (after the graph section) */
  for (size_t k = 0; k < ps.n; k++) {
    const uint8_t *p = ps.p[k].data, *end = p + ps.p[k].len;
    uint64_t glen;
    wm_codec_get_uvar(&p, end, &glen);
    size_t at = (size_t)(p - ps.p[k].data) + (size_t)glen;
    if (at >= ps.p[k].len) continue;
    ((uint8_t *)ps.p[k].data)[at] = WM_STATE_VERSION + 1;
    plan b;
    plan_init(&b, build);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_ERR);
    CHECK(strstr(wm_ctx_errtext(&b.ctx), "format version 2") != NULL);
    plan_free(&b);
    ((uint8_t *)ps.p[k].data)[at] = WM_STATE_VERSION;
  }
  parts_free(&ps);
  plan_free(&a);
}

/* ---- window scenarios --------------------------------------------------------------- */

typedef struct wspec {
  wm_assigner a;
  int64_t lateness;
  int trig, trig_n, purging;
  int ev, ev_n;
  int agg;
  int64_t delay;
} wspec;

static const wspec *cur_w;

static wm_op *add_window(plan *p, const wspec *w) {
  wm_winop_config cfg = {0};
  cfg.assigner = w->a;
  cfg.lateness = w->lateness;
  cfg.late_tag = "late";
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_winfn_builtin(&cfg.fn, w->agg ? w->agg : WM_AGG_SUM, "vc");
  if (w->trig) {
    cfg.trigger = wm_trigger_new(w->trig, w->trig_n);
    if (w->purging) cfg.trigger = wm_trigger_purging(cfg.trigger);
  }
  if (w->ev) {
    cfg.evictor.kind = w->ev;
    cfg.evictor.n = w->ev_n;
  }
  wm_op *op = wm_winop_new(&p->ctx, "window", &cfg);
  wm_op_connect(op, 0, add_sink(p));
  wm_op_connect(op, wm_op_port(op, "late"), add_late_sink(p));
  return op;
}

static void build_window(plan *p) {
  wm_op *t = add_tsop(p, 0, cur_w->delay, 0, 0);
  wm_op_connect(t, 0, add_window(p, cur_w));
}

/* Two inputs with idleness into one window operator: the combiner's channels. */
static void build_two_idle(plan *p) {
  wm_op *w = add_window(p, cur_w);
  wm_op_connect(add_tsop(p, 0, 0, 100, 1000), 0, w);
  wm_op_connect(add_tsop(p, 1, 0, 100, 1000), 0, w);
}

/* Event time: records of two keys, watermarks after every record (interval 0). */
static const ev tumble_evs[] = {
    R("a", 1000, 1), R("b", 1500, 2), R("a", 4999, 3), R("b", 6000, 4), /* W 5000: fires [0,5) */
    R("a", 3000, 5),                                                     /* late, re-fires */
    R("a", 7500, 6), R("b", 8000, 7), R("a", 2000, 8),                   /* W 7000: cleanup done: late */
    R("b", 11000, 9), R("a", 9999, 10), R("a", 12500, 11), E};

/* Sessions (gap 3 s) that merge: a bridge record joins two sessions, a late one joins a
 * fired session within the lateness. */
static const ev session_evs[] = {
    R("a", 1000, 1), R("a", 6000, 2), R("b", 2000, 3), R("a", 3500, 4), /* merges a's two */
    R("b", 9000, 5), R("a", 13000, 6), R("a", 10500, 7), R("b", 5500, 8),
    R("a", 16500, 9), R("a", 7000, 10), R("b", 30000, 11), R("a", 14000, 12), E};

static const ev pt_evs[] = {
    C(100), R("a", 1, 1), R("b", 2, 2), C(900), R("a", 3, 3), C(1000), R("a", 4, 4), C(1500),
    R("b", 5, 5), C(2100), C(2200), R("a", 6, 6), E};

static const ev idle_evs[] = {
    C(0), R("a", 1000, 1), R2("a", 2000, 2), P, C(500), R("a", 6000, 3), P, C(1400), I, /* 2 idle */
    P, R("b", 7000, 4), P, C(2000), R2("a", 3000, 5), P, I, C(3100), I, R("a", 12000, 6),
    P, C(4200), I, P, R2("b", 13000, 7), P, E};

/* Keys of 1 to 31 bytes: up to 30 (8 in the hot part, the rest with the packed first
 * record of a sum) are kept in the window's entry, the 31-byte one as a copy. */
#define K30 "abcdefghijklmnopqrstuvwxyz0123"
#define K31 "abcdefghijklmnopqrstuvwxyz01234"
static const ev longkey_evs[] = {
    R("a", 1000, 1), R("abcdefgh", 1500, 2), R("abcdefghi", 1700, 3), R(K30, 2000, 4),
    R(K31, 2500, 5), R(K30, 4000, 6), R("abcdefghi", 6000, 7), R("a", 6500, 8),
    R(K31, 7000, 9), R("abcdefgh", 9000, 10), R(K30, 12000, 11), E};

/* The snapshot of a plan restored from a snapshot is the same bytes: first records packed
 * in the window's entries (wm_winop.c "inline first records") are written as the rows they
 * came as, which a restored operator keeps as rows. */
static void same_bytes(build_fn build, const ev *evs, size_t n) {
  for (size_t cut = 0; cut <= n; cut++) {
    plan a, b;
    plan_init(&a, build);
    plan_init(&b, build);
    parts pa = {0}, pb = {0};
    run(&a, evs, 0, cut);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &pa), WM_OK);
    b.now = a.now;
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, pa.p, pa.n), WM_OK);
    CHECK_I64(wm_ctx_snapshot(&b.ctx, 0, cur_codec, put_part, &pb), WM_OK);
    CHECK_I64(pb.n, pa.n);
    for (size_t k = 0; k < pa.n && k < pb.n; k++) {
      CHECK_STR(pb.p[k].name, pa.p[k].name);
      CHECK(pb.p[k].len == pa.p[k].len && memcmp(pb.p[k].data, pa.p[k].data, pa.p[k].len) == 0);
    }
    parts_free(&pa);
    parts_free(&pb);
    plan_free(&a);
    plan_free(&b);
  }
}

/* ---- key groups: a window's state split between instances ---------------------------
 * At every cut, the plan's parts restored into two plans, the window keeping the key groups
 * of instance i of 2 (of 128): given every later event, each gives for the keys it owns the
 * very lines (records and late records, in their order) the uninterrupted run gives for
 * them; and ended right after the restore, it fires windows of its own keys only. */
static int line_owner(const char *line, size_t n) {
  const char *k = NULL;
  for (size_t j = 0; j + 6 <= n && !k; j++)
    if (!memcmp(line + j, "\"id\":\"", 6)) k = line + j;
  if (!k) return -1; /* a watermark's line */
  k += 6;
  const char *e = memchr(k, '"', n - (size_t)(k - line));
  if (!e) return -1;
  wm_value key = wm_cstr(k, (size_t)(e - k));
  return wm_keygroup_instance(wm_keygroup_of(&key, 128), 2, 128);
}

/* The lines of text whose key instance i owns. */
static void owned_lines(const char *text, size_t len, int i, wm_buf *out) {
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    if (line_owner(p, n) == i) wm_buf_add(out, p, n);
    p += n;
  }
}

static int restore_instance(plan *b, const parts *ps, int i) {
  uint32_t first, last;
  wm_keygroup_range(i, 2, 128, &first, &last);
  for (size_t j = 0; j < b->ctx.nops; j++) {
    char name[64];
    snprintf(name, sizeof name, "op-%zu.0", j);
    const wm_part *pt = NULL;
    for (size_t k = 0; k < ps->n; k++)
      if (!strcmp(ps->p[k].name, name)) pt = &ps->p[k];
    if (!pt || wm_op_restore_parts(b->ctx.ops[j], cur_codec, &pt, 1, pt, 128, first, last) != WM_OK)
      return WM_ERR;
  }
  return WM_OK;
}

static void split_roundtrip(build_fn build, const ev *evs, size_t n) {
  plan full;
  plan_init(&full, build);
  run(&full, evs, 0, n);
  int bad = 0, owned[2] = {0, 0};
  for (size_t cut = 0; cut <= n && !bad; cut++) {
    plan a;
    plan_init(&a, build);
    parts ps = {0};
    run(&a, evs, 0, cut);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_OK);
    for (int i = 0; i < 2; i++) {
      plan b, c;
      plan_init(&b, build);
      plan_init(&c, build);
      b.now = c.now = a.now;
      if (restore_instance(&b, &ps, i) != WM_OK || restore_instance(&c, &ps, i) != WM_OK) {
        fprintf(stderr, "FAIL %s: split restore at %zu: %s\n", T.current, cut, wm_ctx_errtext(&b.ctx));
        bad++;
      } else {
        run(&b, evs, cut, n);
        wm_buf got, want;
        wm_buf_init(&got);
        wm_buf_init(&want);
        owned_lines(a.out.data ? a.out.data : "", a.out.len, i, &got);
        owned_lines(b.out.data ? b.out.data : "", b.out.len, i, &got);
        owned_lines(full.out.data ? full.out.data : "", full.out.len, i, &want);
        wm_buf_addc(&got, '\0');
        wm_buf_addc(&want, '\0');
        if (strcmp(got.data, want.data) != 0) {
          fprintf(stderr, "FAIL %s: instance %d cut at %zu gives\n%s\nexpected\n%s\n", T.current,
                  i, cut, got.data, want.data);
          bad++;
        }
        owned[i] += want.len > 1;
        wm_buf_free(&got);
        wm_buf_free(&want);
        /* ended at once: only its own keys' windows come out */
        static const ev end[] = {E};
        run(&c, end, 0, 1);
        const char *q = c.out.data ? c.out.data : "";
        for (const char *l = q; *l;) {
          size_t ln = strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0);
          if (line_owner(l, ln) == 1 - i) bad++;
          l += ln;
        }
      }
      plan_free(&b);
      plan_free(&c);
    }
    parts_free(&ps);
    plan_free(&a);
  }
  CHECK_I64(bad, 0);
  CHECK(owned[0] > 0 && owned[1] > 0); /* both instances own keys with output */
  plan_free(&full);
}

static void windows(void) {
  static const struct {
    const char *name;
    wspec w;
    const ev *evs;
    size_t n;
  } cases[] = {
      {"tumbling sum, lateness, late output", {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000, .delay = 0},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"tumbling min_by, no lateness", {{.kind = WM_WA_TUMBLING, .size = 5000}, .agg = WM_AGG_MIN_BY, .delay = 1000},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"sliding count", {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .agg = WM_AGG_COUNT, .lateness = 1000},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      /* sum, default trigger, no lateness: the state is in panes (wm_winop.c "panes") */
      {"sliding sum in panes", {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .delay = 1000},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"sliding count in panes", {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .agg = WM_AGG_COUNT, .delay = 500},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"tumbling sum, keys of 1 to 31 bytes", {{.kind = WM_WA_TUMBLING, .size = 5000}, .delay = 1000},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
      {"tumbling max, keys of 1 to 31 bytes", {{.kind = WM_WA_TUMBLING, .size = 5000}, .agg = WM_AGG_MAX, .delay = 1000},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
      {"sliding sum in panes, keys of 1 to 31 bytes", {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .delay = 1000},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
      {"sessions, lateness", {{.kind = WM_WA_SESSION, .gap = 3000}, .lateness = 4000, .delay = 500},
       session_evs, sizeof session_evs / sizeof *session_evs},
      {"sessions, count trigger", {{.kind = WM_WA_SESSION, .gap = 3000}, .trig = WM_TRIG_COUNT, .trig_n = 2, .lateness = 1000},
       session_evs, sizeof session_evs / sizeof *session_evs},
      {"sessions, continuous event time", {{.kind = WM_WA_SESSION, .gap = 3000}, .trig = WM_TRIG_CONTINUOUS_EVENT_TIME, .trig_n = 1500},
       session_evs, sizeof session_evs / sizeof *session_evs},
      {"continuous event time", {{.kind = WM_WA_TUMBLING, .size = 10000}, .trig = WM_TRIG_CONTINUOUS_EVENT_TIME, .trig_n = 2000, .lateness = 3000},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"count windows (global, purging count 3)", {{.kind = WM_WA_GLOBAL}, .trig = WM_TRIG_COUNT, .trig_n = 3, .purging = 1},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"count evictor", {{.kind = WM_WA_TUMBLING, .size = 10000}, .trig = WM_TRIG_COUNT, .trig_n = 2, .ev = WM_EV_COUNT, .ev_n = 3},
       tumble_evs, sizeof tumble_evs / sizeof *tumble_evs},
      {"time evictor, sessions", {{.kind = WM_WA_SESSION, .gap = 3000}, .ev = WM_EV_TIME, .ev_n = 2000, .lateness = 2000},
       session_evs, sizeof session_evs / sizeof *session_evs},
      {"processing-time tumbling", {{.kind = WM_WA_TUMBLING, .size = 1000, .processing_time = true}, .agg = WM_AGG_COUNT},
       pt_evs, sizeof pt_evs / sizeof *pt_evs},
      {"processing-time sessions", {{.kind = WM_WA_SESSION, .gap = 500, .processing_time = true}, .lateness = 0},
       pt_evs, sizeof pt_evs / sizeof *pt_evs},
      {"continuous processing time", {{.kind = WM_WA_TUMBLING, .size = 10000}, .trig = WM_TRIG_CONTINUOUS_PROCESSING_TIME, .trig_n = 700},
       pt_evs, sizeof pt_evs / sizeof *pt_evs},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    T.current = cases[c].name;
    cur_w = &cases[c].w;
    roundtrip(build_window, cases[c].evs, cases[c].n, NULL);
  }
  static const struct {
    const char *name;
    wspec w;
    const ev *evs;
    size_t n;
  } split_cases[] = {
      {"split by key group: tumbling sum, lateness", {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
      {"split by key group: sliding sum in panes", {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .delay = 1000},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
      {"split by key group: tumbling max", {{.kind = WM_WA_TUMBLING, .size = 5000}, .agg = WM_AGG_MAX, .delay = 1000},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
      {"split by key group: sessions, lateness", {{.kind = WM_WA_SESSION, .gap = 3000}, .lateness = 4000, .delay = 500},
       longkey_evs, sizeof longkey_evs / sizeof *longkey_evs},
  };
  for (size_t c = 0; c < sizeof split_cases / sizeof *split_cases; c++) {
    T.current = split_cases[c].name;
    cur_w = &split_cases[c].w;
    split_roundtrip(build_window, split_cases[c].evs, split_cases[c].n);
  }
  static const wspec bytes_w[] = {{{.kind = WM_WA_TUMBLING, .size = 5000}, .delay = 1000},
                                  {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .delay = 1000}};
  for (size_t c = 0; c < sizeof bytes_w / sizeof *bytes_w; c++) {
    T.current = c ? "sliding sum in panes, restored state's bytes" : "tumbling sum, restored state's bytes";
    cur_w = &bytes_w[c];
    same_bytes(build_window, longkey_evs, sizeof longkey_evs / sizeof *longkey_evs);
  }
  /* many sessions of one key open at once, restored at every cut (issue 34: the key's
   * sessions form a treap, rebuilt on restore from the entries' windows): 160 records of
   * a (every seventh of b) over about 300 gaps, some arriving 0-25 s late, the watermark
   * (bounded out-of-orderness 8 s) about 50 sessions behind */
  enum { NMANY = 160 };
  ev many[NMANY + 1];
  uint64_t st = 34;
  for (int i = 0; i < NMANY; i++) {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t r = (int64_t)(st >> 33);
    int64_t ts = i % 10 == 9 ? i * 150 - r % 25000 : i * 150 + r % 300;
    many[i] = (ev){'r', i % 7 == 6 ? "b" : "a", ts < 1 ? 1 : ts, 1 + r % 97, 0};
  }
  many[NMANY] = (ev){'e', NULL, 0, 0, 0};
  static const struct {
    const char *name;
    wspec w;
  } many_cases[] = {
      {"many open sessions of a key, lateness", {{.kind = WM_WA_SESSION, .gap = 100}, .lateness = 3000, .delay = 8000}},
      {"many open sessions of a key, count", {{.kind = WM_WA_SESSION, .gap = 100}, .agg = WM_AGG_COUNT, .delay = 8000}},
      {"many open sessions of a key, count trigger", {{.kind = WM_WA_SESSION, .gap = 100}, .trig = WM_TRIG_COUNT, .trig_n = 3, .lateness = 2000, .delay = 8000}},
      {"many open sessions of a key, time evictor", {{.kind = WM_WA_SESSION, .gap = 100}, .ev = WM_EV_TIME, .ev_n = 50, .lateness = 1000, .delay = 8000}},
  };
  for (size_t c = 0; c < sizeof many_cases / sizeof *many_cases; c++) {
    T.current = many_cases[c].name;
    cur_w = &many_cases[c].w;
    roundtrip(build_window, many, NMANY + 1, NULL);
  }
  T.current = "two inputs, idleness";
  static const wspec two = {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 1000};
  cur_w = &two;
  roundtrip(build_two_idle, idle_evs, sizeof idle_evs / sizeof *idle_evs, NULL);
  T.current = "damaged window state";
  static const wspec ses = {{.kind = WM_WA_SESSION, .gap = 3000}, .trig = WM_TRIG_COUNT, .trig_n = 2, .lateness = 1000};
  cur_w = &ses;
  damage(build_window, session_evs, sizeof session_evs / sizeof *session_evs, 7);
  static const wspec evw = {{.kind = WM_WA_SLIDING, .size = 6000, .slide = 2000}, .trig = WM_TRIG_COUNT, .trig_n = 2, .ev = WM_EV_COUNT, .ev_n = 3, .lateness = 2000};
  cur_w = &evw;
  damage(build_window, tumble_evs, sizeof tumble_evs / sizeof *tumble_evs, 6);
  cur_w = &two;
  damage(build_two_idle, idle_evs, sizeof idle_evs / sizeof *idle_evs, 12);
}

/* ---- keyed process functions and rolling aggregations ----------------------------- */

/* Per key: state counts the records; vc < 50 registers an event timer at ts + vc, 50..89
 * deletes the one at ts + vc - 50, 90..99 a processing-time timer at now + 10 * (vc - 90).
 * A timer emits "key:count@t". The function's own state (snapshot hooks): how many
 * timers fired in all, part of what a timer emits. */
typedef struct kfn {
  int64_t fired;
} kfn;

static int k_element(void *ud, wm_op *op, const wm_value *key, wm_value *state,
                     const wm_value *rec, int64_t ts) {
  (void)ud;
  (void)key;
  int64_t n = rec->u.row->fields[1].u.i;
  *state = wm_int(state->type == WM_INT ? state->u.i + 1 : 1);
  if (n < 50) return wm_keyedop_register(op, WM_TIME_EVENT, ts + n);
  if (n < 90) return wm_keyedop_delete(op, WM_TIME_EVENT, ts + n - 50);
  return wm_keyedop_register(op, WM_TIME_PROCESSING, wm_ctx_now(op->ctx) + 10 * (n - 90));
}

static int k_timer(void *ud, wm_op *op, const wm_value *key, wm_value *state, int64_t t,
                   int domain) {
  kfn *f = ud;
  f->fired++;
  char b[128];
  size_t kl;
  const char *k = wm_value_str(key, &kl);
  int n = snprintf(b, sizeof b, "%.*s:%lld@%s%lld #%lld", (int)kl, k, (long long)state->u.i,
                   domain == WM_TIME_EVENT ? "" : "pt ", (long long)t, (long long)f->fired);
  wm_value v = wm_cstr(b, (size_t)n);
  return wm_op_emit(op, 0, &v, t);
}

static int k_snapshot(void *ud, wm_op *op, wm_value *out) {
  (void)op;
  *out = wm_int(((kfn *)ud)->fired);
  return WM_OK;
}

static int k_restore(void *ud, wm_op *op, const wm_value *v) {
  if (v->type != WM_INT) return wm_ctx_error(op->ctx, "bad function state");
  ((kfn *)ud)->fired = v->u.i;
  return WM_OK;
}

static void build_keyed(plan *p) {
  wm_keyedop_config cfg = {0};
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  kfn *f = calloc(1, sizeof *f);
  cfg.fn = (wm_keyed_fn){.element = k_element, .timer = k_timer, .snapshot = k_snapshot,
                         .restore = k_restore, .free = free, .ud = f};
  wm_op *k = wm_keyedop_new(&p->ctx, "process", &cfg);
  wm_op_connect(add_tsop(p, 0, 0, 0, 0), 0, k);
  wm_op_connect(k, 0, add_sink(p));
}

/* The first n bytes of needle in hay (no memmem in C11). */
static const char *find_bytes(const void *hay, size_t hl, const char *needle, size_t n) {
  const char *h = hay;
  for (size_t i = 0; i + n <= hl; i++)
    if (memcmp(h + i, needle, n) == 0) return h + i;
  return NULL;
}

static int rolling_agg = WM_AGG_SUM; /* build_rolling's aggregation */

static void build_rolling(plan *p) {
  wm_keyedop_config cfg = {0};
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_winfn_builtin(&cfg.rolling, rolling_agg, "vc");
  wm_op *k = wm_keyedop_new(&p->ctx, "rolling sum", &cfg);
  wm_op_connect(add_tsop(p, 0, 0, 0, 0), 0, k);
  wm_op_connect(k, 0, add_sink(p));
}

static const ev keyed_evs[] = {
    C(0), R("a", 1000, 5), R("b", 1000, 5), R("a", 1002, 30), R("b", 1001, 53), /* b's deleted */
    R("a", 1004, 95), R("b", 1003, 92), C(20), R("c", 1010, 1), R("a", 1011, 2), C(40),
    R("b", 1050, 40), C(60), R("a", 1200, 0), R("c", 1300, 99), E};

/* A rolling sum's checkpoint restored into a rolling max: refused naming both, unless a
 * change is allowed; a state of mode 1 (written before the meaning was kept) is taken. */
static void rolling_changed(void) {
  T.current = "rolling sum -> max";
  plan a, b;
  rolling_agg = WM_AGG_SUM;
  plan_init(&a, build_rolling);
  run(&a, keyed_evs, 0, 6);
  parts ps = {0};
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_OK);
  rolling_agg = WM_AGG_MAX;
  plan_init(&b, build_rolling);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "the rolling aggregation changed since the checkpoint: its state was "
                          "made by\n    sum(vc)\n  and this job's is\n    max(vc)\n") != NULL);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "--allow-state-change") != NULL);
  plan_free(&b);
  plan_init(&b, build_rolling);
  b.ctx.allow_state_change = 1;
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_OK);
  CHECK_I64(b.ctx.state_changes, 1);
  plan_free(&b);
  /* the same state as a wmrun before the meaning wrote it: mode 1, no text */
  size_t ki = ps.n;
  const char *m = NULL;
  for (size_t i = 0; i < ps.n && ki == ps.n; i++)
    if ((m = find_bytes(ps.p[i].data, ps.p[i].len, "\x02\x07sum(vc)", 9))) ki = i;
  CHECK(ki < ps.n);
  if (ki < ps.n) {
    const uint8_t *d = ps.p[ki].data;
    size_t at = (size_t)((const uint8_t *)m - d), ol = 0;
    uint8_t *old = malloc(ps.p[ki].len);
    memcpy(old, d, at);
    ol = at;
    old[ol++] = 1;
    memcpy(old + ol, m + 9, ps.p[ki].len - at - 9);
    ol += ps.p[ki].len - at - 9;
    wm_part *olds = malloc(ps.n * sizeof *olds);
    memcpy(olds, ps.p, ps.n * sizeof *olds);
    olds[ki].data = old;
    olds[ki].len = ol;
    plan_init(&b, build_rolling);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, olds, ps.n), WM_OK);
    CHECK_I64(b.ctx.state_changes, 0);
    plan_free(&b);
    free(olds);
    free(old);
  }
  rolling_agg = WM_AGG_SUM;
  parts_free(&ps);
  plan_free(&a);
}

static void keyed(void) {
  T.current = "keyed process function, timers";
  roundtrip(build_keyed, keyed_evs, sizeof keyed_evs / sizeof *keyed_evs, NULL);
  T.current = "rolling sum";
  roundtrip(build_rolling, keyed_evs, sizeof keyed_evs / sizeof *keyed_evs, NULL);
  T.current = "damaged keyed state";
  damage(build_keyed, keyed_evs, sizeof keyed_evs / sizeof *keyed_evs, 7);
  damage(build_rolling, keyed_evs, sizeof keyed_evs / sizeof *keyed_evs, 7);
  rolling_changed();
}

/* ---- a custom watermark generator -------------------------------------------------- */

/* Watermark: the highest timestamp - 1000, emitted every other record (on_event) and on
 * periodic emits. */
typedef struct cgen {
  int64_t max, n;
  int hooks;
} cgen;

static int cg_event(void *ud, wm_op *op, const wm_value *rec, int64_t ts) {
  (void)rec;
  cgen *g = ud;
  if (ts > g->max) g->max = ts;
  if (++g->n % 2 == 0) return wm_tsop_emit_watermark(op, g->max - 1000);
  return WM_OK;
}
static int cg_periodic(void *ud, wm_op *op) {
  cgen *g = ud;
  return g->n ? wm_tsop_emit_watermark(op, g->max - 1000) : WM_OK;
}
static int cg_snapshot(void *ud, wm_op *op, wm_value *out) {
  (void)op;
  cgen *g = ud;
  /* a composite key stands for a Lua table here: two integers in one value */
  wm_value kp[2] = {wm_int(g->max), wm_int(g->n)};
  return wm_key_compose(kp, 2, out) == 0 ? WM_OK : WM_ERR;
}
static int cg_restore(void *ud, wm_op *op, const wm_value *v) {
  cgen *g = ud;
  wm_value a, b;
  if (wm_key_part(v, 0, &a) != 2 || wm_key_part(v, 1, &b) != 2)
    return wm_ctx_error(op->ctx, "bad generator state");
  g->max = a.u.i;
  g->n = b.u.i;
  return WM_OK;
}

static int cgen_hooks;

static void build_custom(plan *p) {
  cgen *g = calloc(1, sizeof *g);
  g->max = WM_TIME_MIN + 1000;
  wm_tsop_config tc = {0};
  tc.custom = (wm_wmgen){.on_event = cg_event, .on_periodic = cg_periodic, .free = free, .ud = g};
  if (cgen_hooks) {
    tc.custom.snapshot = cg_snapshot;
    tc.custom.restore = cg_restore;
  }
  tc.interval = 100;
  wm_op *t = wm_tsop_new(&p->ctx, "custom timestamps", &tc);
  wm_op_connect(add_src(p, 0), 0, t);
  p->in[0] = p->src[0];
  p->gen[0] = t;
  static const wspec w = {{.kind = WM_WA_TUMBLING, .size = 2000}, .lateness = 0};
  wm_op_connect(t, 0, add_window(p, &w));
}

static const ev custom_evs[] = {R("a", 1000, 1), R("a", 2500, 2), P, R("b", 1200, 3),
                                R("a", 4100, 4), R("b", 3900, 5), P, R("a", 6000, 6), E};

static void custom_generator(void) {
  T.current = "custom watermark generator with snapshot hooks";
  cgen_hooks = 1;
  roundtrip(build_custom, custom_evs, sizeof custom_evs / sizeof *custom_evs, NULL);
  T.current = "custom watermark generator without snapshot hooks";
  cgen_hooks = 0;
  plan a;
  plan_init(&a, build_custom);
  parts ps = {0};
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&a.ctx), "custom watermark generator has no snapshot method") != NULL);
  CHECK(strstr(wm_ctx_errtext(&a.ctx), "in operator 'custom timestamps'") != NULL);
  parts_free(&ps);
  plan_free(&a);
}

/* ---- the plan's shape -------------------------------------------------------------- */

static const wspec shape_w = {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000};
static const wspec shape_w2 = {{.kind = WM_WA_TUMBLING, .size = 10000}, .lateness = 2000};
static const wspec shape_w_max = {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000,
                                  .agg = WM_AGG_MAX};
static const wspec shape_w_count = {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000,
                                    .agg = WM_AGG_COUNT};

static void build_uid(plan *p) {
  wm_op *t = add_tsop(p, 0, 0, 0, 0);
  wm_op *w = add_window(p, cur_w);
  CHECK_I64(wm_op_set_uid(w, "sums"), WM_OK);
  wm_op_connect(t, 0, w);
}

static void shape(void) {
  T.current = "plan shape";
  cur_w = &shape_w;
  plan a;
  plan_init(&a, build_window);
  run(&a, tumble_evs, 0, 4);
  parts ps = {0};
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_OK);
  CHECK_I64(ps.n, 5);
  CHECK_STR(ps.p[0].name, "op-0.0");
  CHECK_STR(ps.p[2].name, "op-2.0");
  /* a part missing */
  plan b;
  plan_init(&b, build_window);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n - 1), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&b.ctx), "the checkpoint holds no state for operator 'late sink' (part op-4.0): the "
                       "job changed since the checkpoint (give operators a stable id with uid, "
                       "docs/checkpoints.md)");
  plan_free(&b);
  /* a part left over; parts of another instance and other names are ignored */
  wm_part more[8];
  memcpy(more, ps.p, ps.n * sizeof *more);
  more[5] = (wm_part){"op-1.1", ps.p[1].data, 3};
  more[6] = (wm_part){"source-0", ps.p[1].data, 1};
  plan_init(&b, build_window);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, more, 7), WM_OK);
  plan_free(&b);
  more[7] = (wm_part){"op-5.0", ps.p[1].data, 3};
  plan_init(&b, build_window);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, more, 8), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&b.ctx), "the checkpoint holds the state of an operator this job does not have "
                       "(part op-5.0): the job changed since the checkpoint (docs/checkpoints.md)");
  plan_free(&b);
  /* another operator at that place */
  wm_part swapped[5];
  memcpy(swapped, ps.p, sizeof swapped);
  swapped[1].data = ps.p[2].data;
  swapped[1].len = ps.p[2].len;
  plan_init(&b, build_window);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, swapped, 5), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "the checkpoint holds a 'window' operator where this job has "
                          "'source', a 'source'") != NULL);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "restoring part op-1.0") != NULL);
  plan_free(&b);
  /* the window operator changed */
  cur_w = &shape_w2;
  plan_init(&b, build_window);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "the checkpoint's window operator differs from this job's: it was\n"
                          "    tumbling size 5000 slide 0 offset 0 gap 0, lateness 2000, "
                          "incremental, no evictor, trigger event_time 0\n  and is now\n"
                          "    tumbling size 10000 ") != NULL);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "in operator 'window'") != NULL);
  plan_free(&b);
  /* the window function changed (sum -> max, sum -> count): refused, naming both, unless a
   * change is allowed (--allow-state-change), which is counted */
  for (int k = 0; k < 2; k++) {
    cur_w = k == 0 ? &shape_w_max : &shape_w_count;
    plan_init(&b, build_window);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_ERR);
    CHECK(strstr(wm_ctx_errtext(&b.ctx), k == 0 ? "the window function changed since the checkpoint: its state "
                                     "was made by\n    sum(vc)\n  and this job's is\n    max(vc)\n"
                                   : "its state was made by\n    sum(vc)\n  and this job's is\n    "
                                     "count\n") != NULL);
    CHECK(strstr(wm_ctx_errtext(&b.ctx), "--allow-state-change") != NULL);
    CHECK(strstr(wm_ctx_errtext(&b.ctx), "in operator 'window'") != NULL);
    plan_free(&b);
    plan_init(&b, build_window);
    b.ctx.allow_state_change = 1;
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_OK);
    CHECK_I64(b.ctx.state_changes, 1);
    plan_free(&b);
  }
  /* a checkpoint written before the function's meaning was kept (its configuration text
   * without "\nfunction ...") is restored into any function, as it was then */
  {
    size_t wi = ps.n;
    const char *tx = NULL;
    for (size_t i = 0; i < ps.n && wi == ps.n; i++) {
      tx = find_bytes(ps.p[i].data, ps.p[i].len, "tumbling size 5000", 18);
      if (tx) wi = i;
    }
    CHECK(wi < ps.n);
    if (wi < ps.n) {
      const uint8_t *d = ps.p[wi].data;
      size_t at = (size_t)((const uint8_t *)tx - d), tl = d[at - 1];
      const char *sep = find_bytes(tx, tl, "\nfunction sum(vc)", 17);
      CHECK(tl < 128 && sep != NULL && (size_t)(sep - tx) + 17 == tl);
      uint8_t *old = malloc(ps.p[wi].len);
      size_t base = (size_t)(sep - tx), ol = 0;
      memcpy(old, d, at - 1);
      ol = at - 1;
      old[ol++] = (uint8_t)base;
      memcpy(old + ol, tx, base);
      ol += base;
      memcpy(old + ol, d + at + tl, ps.p[wi].len - at - tl);
      ol += ps.p[wi].len - at - tl;
      wm_part olds[5];
      memcpy(olds, ps.p, sizeof olds);
      olds[wi].data = old;
      olds[wi].len = ol;
      cur_w = &shape_w_max;
      plan_init(&b, build_window);
      CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, olds, 5), WM_OK);
      CHECK_I64(b.ctx.state_changes, 0);
      plan_free(&b);
      free(old);
    }
  }
  /* into an operator that already holds state */
  cur_w = &shape_w;
  plan_init(&b, build_window);
  run(&b, tumble_evs, 0, 1);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "a checkpoint is restored only into a new operator") != NULL);
  plan_free(&b);
  parts_free(&ps);
  plan_free(&a);
  /* uids name parts; a bad or repeated uid is refused */
  plan_init(&a, build_uid);
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_OK);
  CHECK_STR(ps.p[2].name, "uid-sums.0");
  CHECK_I64(wm_op_set_uid(a.ctx.ops[3], "sums"), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&a.ctx), "uid 'sums' of operator 'sink' is already the uid of 'window'");
  CHECK_I64(wm_op_set_uid(a.ctx.ops[3], "a b"), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&a.ctx), "bad uid 'a b' for operator 'sink' (a uid is 1 to 120 letters, digits, "
                       "'.', '_' or '-')");
  parts_free(&ps);
  plan_free(&a);
  T.current = "uid";
  roundtrip(build_uid, tumble_evs, sizeof tumble_evs / sizeof *tumble_evs, NULL);
}

/* ---- host values (Lua tables) through the codec host -------------------------------- */

/* A host whose values are integers in slots, reference counted; the codec host writes
 * them as WM_C_TABLE and an integer, and refuses 666 as the bindings refuse a function. */
static struct {
  int64_t v[512];
  uint32_t refs[512];
} FH;

static void fh_retain(void *ud, uint32_t slot) {
  (void)ud;
  FH.refs[slot]++;
}
static void fh_release(void *ud, uint32_t slot) {
  (void)ud;
  FH.refs[slot]--;
}
static int fh_new(int64_t x, wm_value *out) {
  for (uint32_t i = 1; i < 512; i++) {
    if (FH.refs[i]) continue;
    FH.refs[i] = 1;
    FH.v[i] = x;
    *out = wm_nil();
    out->type = WM_SLOT;
    out->u.slot = i;
    return 0;
  }
  return -1;
}
static int fh_encode(void *ud, wm_buf *b, const wm_value *v, wm_error *err) {
  (void)ud;
  if (FH.v[v->u.slot] == 666) {
    wm_error_set(err, "a function cannot be checkpointed");
    return -1;
  }
  wm_buf_addc(b, WM_C_TABLE);
  wm_codec_put_ivar(b, FH.v[v->u.slot]);
  return 0;
}
static int fh_decode(void *ud, const uint8_t **p, const uint8_t *end, wm_value *out, wm_error *err) {
  (void)ud;
  int64_t x;
  (*p)++;
  if (wm_codec_get_ivar(p, end, &x) != 0 || fh_new(x, out) != 0) {
    wm_error_set(err, "truncated host value");
    return -1;
  }
  return 0;
}
static const wm_codec_host fh_codec = {.encode = fh_encode, .decode = fh_decode};

static int fh_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  (void)ud;
  (void)aux;
  wm_value n;
  if (fh_new((acc->type == WM_SLOT ? FH.v[acc->u.slot] : 0) + rec->u.row->fields[1].u.i, &n))
    return wm_ctx_error(op->ctx, "out of slots");
  wm_value_release(&op->ctx->host, acc);
  *acc = n;
  return WM_OK;
}
static int fh_fire(void *ud, wm_op *op, const wm_fire *f) {
  (void)ud;
  wm_value v = wm_int(FH.v[f->acc->u.slot]);
  return wm_op_emit(op, 0, &v, f->max_ts);
}

static void build_host(plan *p) {
  p->ctx.host.retain = fh_retain;
  p->ctx.host.release = fh_release;
  wm_op *t = add_tsop(p, 0, 0, 0, 0);
  wm_winop_config cfg = {0};
  cfg.assigner.kind = WM_WA_TUMBLING;
  cfg.assigner.size = 5000;
  cfg.lateness = 2000;
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  cfg.fn = (wm_winfn){.add = fh_add, .fire = fh_fire};
  wm_op *w = wm_winop_new(&p->ctx, "window", &cfg);
  wm_op_connect(t, 0, w);
  wm_op_connect(w, 0, add_sink(p));
}

static int fh_live(void) {
  int n = 0;
  for (int i = 0; i < 512; i++) n += FH.refs[i] != 0;
  return n;
}

/* A custom trigger with state of its own (records seen by the trigger, through its
 * snapshot hooks) and per-window host state (records in the window, a host value): fires
 * every third record it sees, on a window's second record, and at the window's end. */
typedef struct ctrig {
  int64_t seen;
} ctrig;

static int ct_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)rec;
  (void)ts;
  ctrig *g = t->ud;
  g->seen++;
  int64_t n = c->hstate->type == WM_SLOT ? FH.v[c->hstate->u.slot] + 1 : 1;
  wm_value v;
  if (fh_new(n, &v) != 0) return wm_ctx_error(c->op->ctx, "out of slots");
  wm_value_release(&c->op->ctx->host, c->hstate);
  *c->hstate = v;
  if (g->seen % 3 == 0 || n == 2) return WM_TR_FIRE;
  return wm_trigger_register(c, WM_DOMAIN_EVENT, c->max_ts);
}
static int ct_event(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  (void)t;
  return time == c->max_ts ? WM_TR_FIRE : WM_TR_CONTINUE;
}
static int ct_proc(const wm_trigger *t, wm_trigger_ctx *c, int64_t time) {
  (void)t;
  (void)c;
  (void)time;
  return WM_TR_CONTINUE;
}
static int ct_clear(const wm_trigger *t, wm_trigger_ctx *c) {
  (void)t;
  wm_trigger_delete(c, WM_DOMAIN_EVENT, c->max_ts);
  return WM_OK;
}
static const wm_trigger_vt ct_vt = {"counting", ct_element, ct_event, ct_proc, NULL, NULL, ct_clear};
static int ct_snapshot(void *ud, wm_op *op, wm_value *out) {
  (void)op;
  *out = wm_int(((ctrig *)ud)->seen);
  return WM_OK;
}
static int ct_restore(void *ud, wm_op *op, const wm_value *v) {
  (void)op;
  ((ctrig *)ud)->seen = v->u.i;
  return WM_OK;
}

static void build_trigger(plan *p) {
  p->ctx.host.retain = fh_retain;
  p->ctx.host.release = fh_release;
  static const wspec w = {{.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000};
  wm_op *t = add_tsop(p, 0, 0, 0, 0);
  wm_winop_config cfg = {0};
  cfg.assigner = w.a;
  cfg.lateness = w.lateness;
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_winfn_builtin(&cfg.fn, WM_AGG_SUM, "vc");
  cfg.trigger = wm_trigger_custom(&ct_vt, calloc(1, sizeof(ctrig)), free);
  cfg.trigger->snapshot = ct_snapshot;
  cfg.trigger->restore = ct_restore;
  wm_op *op = wm_winop_new(&p->ctx, "window", &cfg);
  wm_op_connect(t, 0, op);
  wm_op_connect(op, 0, add_sink(p));
}

static void host_values(void) {
  T.current = "custom trigger with its own state and host window state";
  cur_codec = &fh_codec;
  roundtrip(build_trigger, tumble_evs, sizeof tumble_evs / sizeof *tumble_evs, NULL);
  damage(build_trigger, tumble_evs, sizeof tumble_evs / sizeof *tumble_evs, 5);
  CHECK_I64(fh_live(), 0);
  T.current = "host values through the codec host";
  cur_codec = &fh_codec;
  roundtrip(build_host, tumble_evs, sizeof tumble_evs / sizeof *tumble_evs, NULL);
  damage(build_host, tumble_evs, sizeof tumble_evs / sizeof *tumble_evs, 4);
  CHECK_I64(fh_live(), 0); /* restored values are owned, and released with their windows */
  static const ev bad[] = {R("a", 1000, 600), R("a", 1001, 66)};
  plan a;
  plan_init(&a, build_host);
  run(&a, bad, 0, 2);
  parts ps = {0};
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_ERR);
  CHECK_STR(wm_ctx_errtext(&a.ctx), "cannot checkpoint a window's accumulator: a function cannot be "
                       "checkpointed\n  in operator 'window'");
  parts_free(&ps);
  plan_free(&a);
  /* without a codec host, a host value is an error too */
  plan_init(&a, build_host);
  run(&a, bad, 0, 1);
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&a.ctx), "cannot checkpoint a window's accumulator") != NULL);
  parts_free(&ps);
  plan_free(&a);
  CHECK_I64(fh_live(), 0);
  cur_codec = NULL;
}

/* ---- pre-aggregation (docs/performance.md, "Pre-aggregation") ------------------------
 *
 * Two inputs (the parts of a file, input 0 first in the file) into a tumbling window with
 * lateness and a late side output. Per record: both feed the window, which takes its first
 * record by channel. Pre-aggregated: each feeds a local window (no lateness; its late
 * records on a side port) whose results and late records go through a key exchange to the
 * window. For any interleaving of the two inputs, both give the same records, late records
 * and watermarks; and the pre-aggregated plan survives a snapshot at every cut. */

static int cur_pre_agg;
static wm_op *last_receiver;
static const char *const pre_key = "id";
static const char *const count_key = "key"; /* count's partials: {count, key, start, stop} */

/* cur_pre_agg PRE_REDUCE: a reduce in C (what bindings/lwm_ops.c does for a Lua reduce):
 * red(a, b) = {id = a.id, vc = a.vc + b.vc, seq = a.seq, last = b's last record}, which is
 * associative but not commutative (the first and the last record show the order). The
 * local windows reduce their part's records and emit partials {key, acc} (a record late
 * for its part as its own partial); the window (per record: of the records; pre-
 * aggregated: of the partials' acc) keeps one value per input channel (wm_winop_chan) and
 * folds the channels in order at its firing. */
enum { PRE_REDUCE = 100 };
static wm_schema *red_schema;     /* {id, vc, seq, last} */
static wm_schema *partial_schema; /* {key, acc} */

static int red_last(const wm_value *r) {
  return r->u.row->schema->nfields > 3 ? 3 : 2;
}

/* *acc = red(*acc, b) (owned) */
static int red_into(wm_op *op, wm_value *acc, const wm_value *b) {
  const wm_host *h = &op->ctx->host;
  wm_row *r = wm_row_new(red_schema);
  if (!r) return wm_ctx_error(op->ctx, "out of memory");
  const wm_row *a = acc->u.row;
  if (wm_value_copy(h, &r->fields[0], &a->fields[0]) != 0) {
    wm_row_release(h, r);
    return wm_ctx_error(op->ctx, "out of memory");
  }
  r->fields[1] = wm_int(a->fields[1].u.i + b->u.row->fields[1].u.i);
  r->fields[2] = a->fields[2];
  r->fields[3] = b->u.row->fields[red_last(b)];
  wm_value_release(h, acc);
  *acc = wm_row_value(r);
  return WM_OK;
}

static int red_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  (void)ud;
  (void)aux;
  if (acc->type == WM_NIL)
    return wm_value_copy(&op->ctx->host, acc, rec) == 0 ? WM_OK : wm_ctx_error(op->ctx, "out of memory");
  return red_into(op, acc, rec);
}
static int red_partial(void *ud, wm_op *op, const wm_fire *f) {
  (void)ud;
  const wm_host *h = &op->ctx->host;
  wm_row *r = wm_row_new(partial_schema);
  if (!r) return wm_ctx_error(op->ctx, "out of memory");
  wm_value v = wm_row_value(r);
  int rc = wm_value_copy(h, &r->fields[0], f->key) != 0 || wm_value_copy(h, &r->fields[1], f->acc) != 0
               ? wm_ctx_error(op->ctx, "out of memory")
               : wm_op_emit(op, 0, &v, f->max_ts);
  wm_value_release(h, &v);
  return rc;
}

/* the window's: acc a row {c0, c1} of the channels' values; ud non-NULL: rec is a partial */
static wm_schema *chan_schema;
static int chan_add(void *ud, wm_op *op, wm_value *acc, wm_value *aux, const wm_value *rec) {
  if (ud) rec = &rec->u.row->fields[1];
  int c = wm_winop_chan(op);
  if (c < 0 || c > 1) return wm_ctx_error(op->ctx, "channel %d", c);
  if (acc->type == WM_NIL) {
    wm_row *r = wm_row_new(chan_schema);
    if (!r) return wm_ctx_error(op->ctx, "out of memory");
    *acc = wm_row_value(r);
  }
  return red_add(NULL, op, &acc->u.row->fields[c], aux, rec);
}
static int chan_fire(void *ud, wm_op *op, const wm_fire *f) {
  (void)ud;
  wm_value *cs = f->acc->u.row->fields, v = wm_nil();
  for (int c = 0; c < 2; c++)
    if (cs[c].type != WM_NIL && red_add(NULL, op, &v, NULL, &cs[c]) != WM_OK) return WM_ERR;
  /* the fold stays as channel 0's value: a late firing adds the records late for it after */
  wm_value_release(&op->ctx->host, &cs[0]);
  wm_value_release(&op->ctx->host, &cs[1]);
  cs[1] = wm_nil();
  cs[0] = v;
  return wm_op_emit(op, 0, &v, f->max_ts);
}

/* chan 0: the local windows' function; 1: the window's, of records; 2: of partials */
static void red_fn(wm_winfn *fn, int chan) {
  memset(fn, 0, sizeof *fn);
  fn->add = chan ? chan_add : red_add;
  fn->fire = chan ? chan_fire : red_partial;
  fn->ud = chan == 2 ? fn : NULL;
}

static wm_winop_config pre_config(int64_t lateness, const char *late_tag) {
  wm_winop_config cfg = {0};
  cfg.assigner.kind = WM_WA_TUMBLING;
  cfg.assigner.size = 2000;
  cfg.lateness = lateness;
  cfg.late_tag = late_tag;
  wm_keysel_fields(&cfg.keysel, &pre_key, 1);
  if (cur_pre_agg == PRE_REDUCE) red_fn(&cfg.fn, 0);
  else wm_winfn_builtin(&cfg.fn, cur_pre_agg, "vc");
  return cfg;
}

/* count and reduce: no late side output (their partials are not records), partials keyed
 * by their key; count's window adds the partials' counts up, reduce's folds them */
static wm_op *pre_receiver(plan *p, int pre) {
  static const char *const names[] = {"id", "vc", "seq"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER};
  wm_schema_release(p->schema);
  p->schema = wm_schema_new(3, names, types);
  int count = cur_pre_agg == WM_AGG_COUNT, reduce = cur_pre_agg == PRE_REDUCE;
  wm_winop_config cfg = pre_config(1000, count || reduce ? NULL : "late");
  cfg.first_by_chan = 1;
  if ((count || reduce) && pre) {
    cfg.keysel.free(cfg.keysel.ud);
    wm_keysel_fields(&cfg.keysel, &count_key, 1);
    cfg.merges_partials = 1;
  }
  if (count && pre) {
    cfg.fn.free(cfg.fn.ud);
    wm_winfn_builtin(&cfg.fn, WM_AGG_SUM, "count");
  }
  if (reduce) red_fn(&cfg.fn, pre ? 2 : 1); /* per record too: channel 0 is the file's first part */
  wm_op *w = last_receiver = wm_winop_new(&p->ctx, "window", &cfg);
  wm_op_connect(w, 0, add_sink(p));
  if (!count && !reduce) wm_op_connect(w, wm_op_port(w, "late"), add_late_sink(p));
  return w;
}

static void build_per_record(plan *p) {
  wm_op *w = pre_receiver(p, 0);
  for (int i = 0; i < 2; i++) wm_op_connect(add_tsop(p, i, 1000, 0, 0), 0, w);
}

static void build_pre(plan *p) {
  wm_op *w = pre_receiver(p, 1);
  int count = cur_pre_agg == WM_AGG_COUNT || cur_pre_agg == PRE_REDUCE; /* keyed partials */
  for (int i = 0; i < 2; i++) {
    wm_winop_config cfg = pre_config(0, count ? NULL : "pre");
    cfg.late_as_partial = count;
    wm_op *l = wm_winop_new(&p->ctx, i ? "pre-aggregation 2" : "pre-aggregation", &cfg);
    wm_keysel ks = {0};
    wm_keysel_fields(&ks, count ? &count_key : &pre_key, 1);
    wm_op *x = wm_exchange_new(&p->ctx, "key_by", WM_XCH_HASH, 1, &ks);
    wm_op_connect(add_tsop(p, i, 1000, 0, 0), 0, l);
    wm_op_connect(l, 0, x);
    if (!count) wm_op_connect(l, wm_op_port(l, "pre"), x);
    wm_op_connect(x, wm_exchange_port(x, 0), w);
  }
}

static int cmp_line(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* out's lines, sorted (the windows that end together fire in creation order, which the
 * partials' arrival changes), in a new string */
static char *sorted_lines(const wm_buf *out) {
  size_t n = out->len;
  char *s = malloc(n + 1), *r = malloc(n + 2);
  char **l = malloc((n + 1) * sizeof *l);
  size_t k = 0, at = 0;
  memcpy(s, out->data ? out->data : "", n);
  s[n] = 0;
  for (char *q = strtok(s, "\n"); q; q = strtok(NULL, "\n")) l[k++] = q;
  qsort(l, k, sizeof *l, cmp_line);
  for (size_t i = 0; i < k; i++) at += (size_t)sprintf(r + at, "%s\n", l[i]);
  r[at] = 0;
  free(s);
  free(l);
  return r;
}

/* n events of two inputs in a random interleaving: keys of 1, 2 and 19 bytes (the first
 * record packed with the key, or with its tail), each input's timestamps up to 4 s out of
 * order against a 1 s bound (late for the input, within the lateness, beyond it) */
static void pre_events(ev *evs, size_t n, uint64_t seed) {
  static const char *const keys[] = {"a", "bb", "a-key-of-19-bytes.."};
  int64_t t[2] = {0, 0};
  for (size_t k = 0; k + 1 < n; k++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t r = (uint32_t)(seed >> 33);
    int in = (int)(r & 1);
    t[in] += (int64_t)(r >> 1) % 300;
    int64_t ts = t[in] - (int64_t)((r >> 10) % 4000);
    evs[k] = (ev){'r', keys[(r >> 4) % 3], ts < 0 ? 0 : ts, (int64_t)((r >> 20) % 19) - 5, in};
  }
  evs[n - 1] = (ev){'e', NULL, 0, 0, 0};
}

/* a result line's window end and key ("1999" and "a" of 1999 {"id":"a",...} or of
 * 1999 {"count":2,"key":"a",...}), as one string in out; 0 for other lines */
static int result_of(const char *l, char *out, size_t n) {
  const char *k = strstr(l, "\"id\":\"");
  if (!k) k = strstr(l, "\"key\":\"");
  const char *sp = strchr(l, ' '), *nl = strchr(l, '\n');
  if (l[0] < '0' || l[0] > '9' || !k || !sp || (nl && k > nl)) return 0;
  k = strchr(k, ':') + 2;
  const char *q = strchr(k, '"');
  snprintf(out, n, "%.*s %.*s", (int)(sp - l), l, (int)(q - k), k);
  return 1;
}

/* whether the lines hold a late record ("late 1234 {...}", not "late W 1234") */
static int late_records(const char *x) {
  for (const char *l = strstr(x, "late "); l; l = strstr(l + 1, "late "))
    if ((l == x || l[-1] == '\n') && l[5] != 'W') return 1;
  return 0;
}

/* whether the lines hold a window's result twice (a firing, then a late firing) */
static int late_firings(const char *x) {
  char a[128], b[128];
  for (const char *l = x; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (!result_of(l, a, sizeof a)) continue;
    for (const char *m = strchr(l, '\n'); m && m[1]; m = strchr(m + 1, '\n'))
      if (result_of(m + 1, b, sizeof b) && strcmp(a, b) == 0) return 1;
  }
  return 0;
}

/* the per-record plan and the pre-aggregated plan each give `expect` (sorted) for evs */
static void both_plans(const char *what, const ev *evs, size_t n, const char *expect) {
  for (int b = 0; b < 2; b++) {
    char name[120];
    snprintf(name, sizeof name, "%s%s", b ? "pre-aggregated: " : "", what);
    T.current = name;
    plan p;
    plan_init(&p, b ? build_pre : build_per_record);
    run(&p, evs, 0, n);
    char *x = sorted_lines(&p.out);
    CHECK_STR(x, expect);
    free(x);
    plan_free(&p);
  }
}

static void preagg(void) {
  static const int aggs[] = {WM_AGG_SUM, WM_AGG_MIN, WM_AGG_MAX, WM_AGG_COUNT, PRE_REDUCE};
  static const char *const names[] = {"sum", "min", "max", "count", "reduce"};
  static const char *const rnames[] = {"id", "vc", "seq", "last"}, *const cnames[] = {"c0", "c1"};
  static const uint8_t rtypes[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_INTEGER};
  static const uint8_t ctypes[] = {WM_FT_ANY, WM_FT_ANY};
  static const char *const pnames[] = {"key", "acc"};
  red_schema = wm_schema_new(4, rnames, rtypes);
  chan_schema = wm_schema_new(2, cnames, ctypes);
  partial_schema = wm_schema_new(2, pnames, ctypes);
  static ev evs[241];
  for (size_t a = 0; a < 5; a++) {
    cur_pre_agg = aggs[a];
    for (uint64_t seed = 1; seed <= 20; seed++) {
      char name[80];
      snprintf(name, sizeof name, "pre-aggregated %s, interleaving %u", names[a], (unsigned)seed);
      T.current = name;
      pre_events(evs, 241, seed);
      plan per, pre;
      plan_init(&per, build_per_record);
      wm_op *rper = last_receiver;
      plan_init(&pre, build_pre);
      wm_op *rpre = last_receiver;
      run(&per, evs, 0, 241);
      run(&pre, evs, 0, 241);
      char *x = sorted_lines(&per.out), *y = sorted_lines(&pre.out);
      /* the input has records late at the window, and records within the lateness: late
       * firings (a window's result more than once) */
      if (aggs[a] == WM_AGG_COUNT || aggs[a] == PRE_REDUCE) CHECK(rper->m.late_dropped > 0);
      else CHECK(late_records(x));
      CHECK(late_firings(x));
      CHECK_I64(rpre->m.late_dropped, rper->m.late_dropped);
      CHECK_STR(y, x);
      free(x);
      free(y);
      plan_free(&per);
      plan_free(&pre);
      if (seed <= 2) roundtrip(build_pre, evs, 241, NULL);
    }
  }
  /* the first record by channel: input 1's record arrives first, input 0's is first in the
   * file, so it is the one the result carries (its seq 1, and the key's tail packed with it) */
  static const ev first[] = {{'r', "a-key-of-19-bytes..", 100, 4, 1}, {'r', "a-key-of-19-bytes..", 200, 5, 0},
                             {'r', "a", 300, 1, 1}, {'r', "a", 400, 2, 1}, E};
  cur_pre_agg = WM_AGG_SUM;
  both_plans("first record by channel", first, sizeof first / sizeof *first,
             "1999 {\"id\":\"a\",\"seq\":2,\"vc\":3}\n"
             "1999 {\"id\":\"a-key-of-19-bytes..\",\"seq\":1,\"vc\":9}\n"
             "W -601\nW -801\nW -901\nW 9223372036854775807\n"
             "late W -601\nlate W -801\nlate W -901\nlate W 9223372036854775807\n");
  /* the reduce's order: input 1's records arrive first, input 0's are first in the file */
  static const ev order[] = {{'r', "a", 100, 4, 1}, {'r', "a", 200, 5, 1}, {'r', "a", 300, 1, 0},
                             {'r', "a", 400, 2, 0}, {'r', "a", 3000, 7, 1}, {'r', "a", 1500, 3, 0}, E};
  cur_pre_agg = PRE_REDUCE;
  /* [0, 2000): input 0's records 2, 3, 5 (seq), then input 1's 0 and 1, whose partial
   * (pre-aggregated) arrives first, at input 1's watermark 1999 */
  both_plans("reduce folded in channel order", order, sizeof order / sizeof *order,
             "1999 {\"id\":\"a\",\"last\":1,\"seq\":2,\"vc\":15}\n"
             "3999 {\"id\":\"a\",\"seq\":4,\"vc\":7}\n"
             "W -601\nW -801\nW 1999\nW 499\nW 9223372036854775807\n");
  wm_schema_release(red_schema);
  wm_schema_release(chan_schema);
  wm_schema_release(partial_schema);
}

/* A rebalance (round robin to 2 instances: the main sink and the "late"-labelled one)
 * after a source: a resumed run sends each record to the instance the uninterrupted run
 * sent it to, so the exchange's next instance is in the checkpoint (issue 26: before, it
 * started again at instance 1, and an exactly-once key_by through behind it got
 * duplicates). */
static void build_rebalance(plan *p) {
  wm_op *x = wm_exchange_new(&p->ctx, "rebalance", WM_XCH_ROUND_ROBIN, 2, NULL);
  wm_op_connect(add_src(p, 0), 0, x);
  p->in[0] = p->src[0];
  wm_op_connect(x, wm_exchange_port(x, 0), add_sink(p));
  wm_op_connect(x, wm_exchange_port(x, 1), add_late_sink(p));
}

static void rebalance(void) {
  T.current = "rebalance";
  static const ev evs[] = {R("a", 1, 1), R("b", 2, 2), R("c", 3, 3), R("d", 4, 4), R("e", 5, 5), E};
  /* worked out by hand: a, c, e to instance 1, b, d to instance 2 ("late" sink) */
  roundtrip(build_rebalance, evs, sizeof evs / sizeof *evs,
            "1 {\"id\":\"a\",\"vc\":1}\n"
            "late 2 {\"id\":\"b\",\"vc\":2}\n"
            "3 {\"id\":\"c\",\"vc\":3}\n"
            "late 4 {\"id\":\"d\",\"vc\":4}\n"
            "5 {\"id\":\"e\",\"vc\":5}\n"
            "W 9223372036854775807\n"
            "late W 9223372036854775807\n");
  /* a checkpoint from before (no state for the exchange) restores instance 1 */
  plan a;
  plan_init(&a, build_rebalance);
  wm_state_io io = {.data = NULL, .len = 0};
  CHECK_I64(wm_op_restore(a.ctx.ops[0], &io), WM_OK);
  plan_free(&a);
}

/* ---- the interval join ---------------------------------------------------------------- */

/* Emits "left vc+right vc" at the larger timestamp. */
static int ij_fn(void *ud, wm_op *op, const wm_value *key, const wm_value *l, int64_t lts,
                 const wm_value *r, int64_t rts) {
  (void)ud;
  (void)key;
  char b[64]; /* (an outer join's padded record: the missing side is -1) */
  int n = snprintf(b, sizeof b, "%lld+%lld", l ? (long long)l->u.row->fields[1].u.i : -1LL,
                   r ? (long long)r->u.row->fields[1].u.i : -1LL);
  wm_value v = wm_cstr(b, (size_t)n);
  return wm_op_emit(op, 0, &v, lts > rts ? lts : rts);
}

/* between(-300, 500) with the upper bound exclusive; late lefts to "late", late rights
 * counted; both inputs 100 ms out of order */
static void build_ijoin(plan *p) {
  wm_ijoin_config cfg = {0};
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_keysel_fields(&cfg.keysel2, &key, 1);
  cfg.lower = -300;
  cfg.upper = 500;
  cfg.upper_exclusive = true;
  cfg.late_tag[0] = "late";
  cfg.fn.join = ij_fn;
  wm_op *j = wm_ijoin_new(&p->ctx, "interval join", &cfg);
  wm_op_connect(add_tsop(p, 0, 100, 0, 0), 0, j);
  wm_ijoin_set_second_input(j, 1);
  wm_op_connect(add_tsop(p, 1, 100, 0, 0), 0, j);
  wm_op_connect(j, 0, add_sink(p));
  wm_op_connect(j, wm_op_port(j, "late"), add_late_sink(p));
}

/* The same join outer on both sides (a record that met nothing is emitted padded when it
 * goes), the output watermark held back by 500 ms: whether a kept record met one is state. */
static void build_ijoin_outer(plan *p) {
  wm_ijoin_config cfg = {0};
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_keysel_fields(&cfg.keysel2, &key, 1);
  cfg.lower = -300;
  cfg.upper = 500;
  cfg.upper_exclusive = true;
  cfg.outer[0] = cfg.outer[1] = true;
  cfg.wm_delay = 500;
  cfg.fn.join = ij_fn;
  wm_op *j = wm_ijoin_new(&p->ctx, "interval join", &cfg);
  wm_op_connect(add_tsop(p, 0, 100, 0, 0), 0, j);
  wm_ijoin_set_second_input(j, 1);
  wm_op_connect(add_tsop(p, 1, 100, 0, 0), 0, j);
  wm_op_connect(j, 0, add_sink(p));
}

/* The same join emitting its key first ("id":"a" 1+2), so that split_roundtrip can tell
 * which instance owns each line. */
static int ij_key_fn(void *ud, wm_op *op, const wm_value *key, const wm_value *l, int64_t lts,
                     const wm_value *r, int64_t rts) {
  (void)ud;
  char b[96];
  size_t kl;
  const char *k = wm_value_str(key, &kl);
  int n = snprintf(b, sizeof b, "\"id\":\"%.*s\" %lld+%lld", (int)kl, k,
                   l ? (long long)l->u.row->fields[1].u.i : -1LL,
                   r ? (long long)r->u.row->fields[1].u.i : -1LL);
  wm_value v = wm_cstr(b, (size_t)n);
  return wm_op_emit(op, 0, &v, lts > rts ? lts : rts);
}

static void build_ijoin_key(plan *p) {
  wm_ijoin_config cfg = {0};
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_keysel_fields(&cfg.keysel2, &key, 1);
  cfg.lower = -300;
  cfg.upper = 500;
  cfg.outer[0] = true; /* (which kept records met one goes with each key) */
  cfg.fn.join = ij_key_fn;
  wm_op *j = wm_ijoin_new(&p->ctx, "interval join", &cfg);
  wm_op_connect(add_tsop(p, 0, 100, 0, 0), 0, j);
  wm_ijoin_set_second_input(j, 1);
  wm_op_connect(add_tsop(p, 1, 100, 0, 0), 0, j);
  wm_op_connect(j, 0, add_sink(p));
}

static const ev ijoin_evs[] = {
    R("a", 1000, 1), R2("a", 900, 2), R2("b", 1200, 3), R("b", 1000, 4), R2("a", 1499, 5),
    R2("a", 1500, 6), R("a", 1000, 7), R("b", 1700, 8), R2("b", 1800, 9), R("a", 700, 10),
    R2("c", 2000, 11), R("c", 2200, 12), R2("a", 600, 13), R("a", 2600, 14), R2("a", 2400, 15),
    R("c", 3000, 16), R2("c", 2800, 17), E};

/* keys "a" and "b" fall in the first half of 128 key groups, "e" and "f" in the second */
static const ev ijoin_split_evs[] = {
    R("a", 1000, 1), R2("e", 900, 2), R2("b", 1200, 3), R("e", 1000, 4), R2("a", 1499, 5),
    R("f", 1100, 6), R("a", 1000, 7), R("b", 1700, 8), R2("b", 1800, 9), R2("f", 1300, 10),
    R2("e", 2000, 11), R("f", 2200, 12), R2("a", 600, 13), R("e", 2600, 14), R2("f", 2400, 15),
    R("b", 3000, 16), R2("e", 2800, 17), E};

static wm_op *find_ijoin(plan *p) {
  for (size_t i = 0; i < p->ctx.nops; i++)
    if (wm_op_is_ijoin(p->ctx.ops[i])) return p->ctx.ops[i];
  return NULL;
}

static void ijoin_state(void) {
  T.current = "interval join: both sides' records, timers, late counts";
  size_t n = sizeof ijoin_evs / sizeof *ijoin_evs;
  roundtrip(build_ijoin, ijoin_evs, n, NULL);
  T.current = "damaged interval join state";
  damage(build_ijoin, ijoin_evs, n, 9);
  damage(build_ijoin, ijoin_evs, n, 14);
  T.current = "outer interval join: which kept records met one";
  roundtrip(build_ijoin_outer, ijoin_evs, n, NULL);
  damage(build_ijoin_outer, ijoin_evs, n, 9);
  /* split by key group (a rescale): each instance's keys' records and cleanup timers */
  T.current = "interval join split between instances by key group";
  split_roundtrip(build_ijoin_key, ijoin_split_evs, sizeof ijoin_split_evs / sizeof *ijoin_split_evs);
  /* what --metrics shows goes on too: records kept and late counts per side */
  T.current = "interval join: restored counts";
  for (size_t cut = 0; cut < n; cut++) {
    plan a, b;
    plan_init(&a, build_ijoin);
    plan_init(&b, build_ijoin);
    run(&a, ijoin_evs, 0, cut);
    parts ps = {0};
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &ps), WM_OK);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, cur_codec, ps.p, ps.n), WM_OK);
    const wm_op *x = find_ijoin(&a), *y = find_ijoin(&b);
    for (int side = 0; side < 2; side++) {
      CHECK_I64(wm_ijoin_late(y, side), wm_ijoin_late(x, side));
      CHECK_I64(wm_ijoin_buffered(y, side), wm_ijoin_buffered(x, side));
    }
    CHECK_I64(wm_ijoin_keys(y), wm_ijoin_keys(x));
    CHECK_I64(wm_ijoin_timers(y), wm_ijoin_timers(x));
    if (cut == n - 1) CHECK(wm_ijoin_late(x, 0) > 0 && wm_ijoin_late(x, 1) > 0);
    parts_free(&ps);
    plan_free(&a);
    plan_free(&b);
  }
}

/* A timestamp assigner restored from two old instances' parts (a rescale, vt merge_parts):
 * the lowest of their watermarks and timestamps, in either order. */
static void build_ts(plan *p) { wm_op_connect(add_tsop(p, 0, 100, 0, 0), 0, add_sink(p)); }

static const wm_part *ts_part(plan *p, parts *ps) {
  size_t j = 0;
  while (j < p->ctx.nops && p->ctx.ops[j] != p->gen[0]) j++;
  char name[32];
  snprintf(name, sizeof name, "op-%zu.0", j);
  for (size_t k = 0; k < ps->n; k++)
    if (!strcmp(ps->p[k].name, name)) return &ps->p[k];
  return NULL;
}

static void tsop_merge(void) {
  T.current = "timestamp assigner merged from two instances";
  static const ev lo[] = {R("a", 1000, 1), P}, hi[] = {R("a", 3000, 1), P},
                  after[] = {R("a", 2000, 1), P};
  plan a, a2;
  plan_init(&a, build_ts);
  plan_init(&a2, build_ts);
  run(&a, lo, 0, 2);
  run(&a2, hi, 0, 2);
  CHECK_I64(wm_tsop_last_watermark(a.gen[0]), 899);
  CHECK_I64(wm_tsop_last_watermark(a2.gen[0]), 2899);
  parts pa = {0}, pb = {0};
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, cur_codec, put_part, &pa), WM_OK);
  CHECK_I64(wm_ctx_snapshot(&a2.ctx, 0, cur_codec, put_part, &pb), WM_OK);
  const wm_part *x = ts_part(&a, &pa), *y = ts_part(&a2, &pb);
  CHECK(x && y);
  for (int order = 0; order < 2 && x && y; order++) {
    const wm_part *two[2] = {order ? y : x, order ? x : y};
    plan b;
    plan_init(&b, build_ts);
    CHECK_I64(wm_op_restore_parts(b.gen[0], cur_codec, two, 2, NULL, 0, 0, 0), WM_OK);
    CHECK_I64(wm_tsop_last_watermark(b.gen[0]), 899);
    /* its max timestamp is 1000, not 3000: a record at 2000 moves the watermark on */
    run(&b, after, 0, 2);
    CHECK_I64(wm_tsop_last_watermark(b.gen[0]), 1899);
    plan_free(&b);
  }
  parts_free(&pa);
  parts_free(&pb);
  plan_free(&a);
  plan_free(&a2);
}

/* ---- in-flight watermarks at another parallelism ---------------------------------------
 * A checkpoint at -p 2 on two threads holds a watermark in flight to the window on channel
 * 0, from the old instance 0 of the union of partitions (partitions 0 and 2, at 66 s). At
 * -p 3 channel 0 is fed by the new instance 0 (partitions 0 and 3; partition 3 at 52 s):
 * raised to 66 s, it let the window pass partition 3's records of 52..66 s as late
 * (spec/rescale_spec.lua, rescale:nats and rescale:kafka, lost them about 1 run in 4). At
 * the parallelism of the checkpoint the channel is fed by the same instance: applied. */
static int64_t inflight_wm(int unions_now) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *u[3] = {NULL, NULL, NULL}, *w = wm_op_new(&ctx, &sink_vt, NULL, "window");
  CHECK(w != NULL);
  w->node = 2, w->subtask = 0, w->nsub = 1;
  for (int i = 0; i < unions_now; i++) {
    u[i] = wm_op_new(&ctx, &src_vt, NULL, "partitions");
    CHECK(u[i] != NULL);
    u[i]->node = 1, u[i]->subtask = i, u[i]->nsub = unions_now;
    CHECK_I64(wm_op_connect(u[i], 0, w), i);
  }
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_buf chan;
  wm_buf_init(&chan);
  wm_buf_addc(&chan, 2); /* a watermark (wm_mt.c, MSG_WATERMARK) */
  wm_codec_put_uvar(&chan, 2); /* to the window: global instance 2 (node 1 had 2) */
  wm_codec_put_uvar(&chan, 0); /* on channel 0 */
  wm_codec_put_ivar(&chan, 66000);
  static const char meta[] = "part op-1.0 1 0 0 2\npart op-1.1 1 0 1 2\npart op-2.0 2 0 0 1\n";
  static const uint8_t none[1];
  wm_part pts[] = {{"op-1.0", none, 0}, {"op-1.1", none, 0}, {"op-2.0", none, 0},
                     {"chan-0-1", (const uint8_t *)chan.data, chan.len}};
  wm_rescale *r = wm_rescale_new(meta, sizeof meta - 1, pts, 4, &ctx.error);
  CHECK(r != NULL);
  int64_t got = WM_TIME_MIN;
  if (r) {
    CHECK_I64(wm_rescale_replay(r, &ctx, NULL), WM_OK);
    got = w->comb.ch[0].wm;
    wm_rescale_free(r);
  }
  wm_buf_free(&chan);
  wm_ctx_free(&ctx);
  return got;
}

/* A watermark in flight to old instance 1 (0-based) of a map forwarded from a filter of
 * set_parallelism(2) at -p 2 (channel 0 of instance k fed by filter k), on one thread now:
 * at -p 2 it is instance 1's alone (instance 0's channel 0 is filter 0's); at -p 3 the two
 * filters feed every map through a rebalance, channel 0 being filter 0's: dropped (raised
 * to filter 1's 66 s, it could pass filter 0's records of below it as late downstream). The
 * channels' watermarks of instances 0, 1 (and 2) in *wm. */
static const wm_op_vt fwd_map_vt = {.kind = "map"}; /* (no records here) */

static void inflight_fwd_wm(int p_now, int64_t *wm) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *f[2], *m[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 2; i++) {
    f[i] = wm_op_new(&ctx, &src_vt, NULL, "filter");
    CHECK(f[i] != NULL);
    f[i]->node = 1, f[i]->subtask = i, f[i]->nsub = 2;
  }
  for (int k = 0; k < p_now; k++) {
    m[k] = wm_op_new(&ctx, &fwd_map_vt, NULL, "map");
    CHECK(m[k] != NULL);
    m[k]->node = 2, m[k]->subtask = k, m[k]->nsub = p_now;
  }
  for (int i = 0; i < 2; i++) {
    if (p_now == 2) {
      CHECK_I64(wm_op_connect(f[i], 0, m[i]), 0);
      continue;
    }
    wm_op *x = wm_exchange_new(&ctx, "rebalance", WM_XCH_ROUND_ROBIN, p_now, NULL);
    CHECK(x != NULL);
    wm_op_connect(f[i], 0, x);
    for (int k = 0; k < p_now; k++) CHECK_I64(wm_op_connect(x, wm_exchange_port(x, k), m[k]), i);
  }
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_buf chan;
  wm_buf_init(&chan);
  wm_buf_addc(&chan, 2);       /* a watermark */
  wm_codec_put_uvar(&chan, 3); /* to instance 1 of node 2 (node 1 had 2) */
  wm_codec_put_uvar(&chan, 0); /* on channel 0 */
  wm_codec_put_ivar(&chan, 66000);
  static const char meta[] = "part op-1.0 1 0 0 2\npart op-1.1 1 0 1 2\npart op-2.0 2 0 0 2\n"
                             "part op-2.1 2 0 1 2\n";
  static const uint8_t none[1];
  wm_part pts[] = {{"op-1.0", none, 0}, {"op-1.1", none, 0}, {"op-2.0", none, 0},
                   {"op-2.1", none, 0}, {"chan-0-1", (const uint8_t *)chan.data, chan.len}};
  wm_rescale *r = wm_rescale_new(meta, sizeof meta - 1, pts, 5, &ctx.error);
  CHECK(r != NULL);
  if (r) {
    CHECK_I64(wm_rescale_replay(r, &ctx, NULL), WM_OK);
    wm_rescale_free(r);
  }
  for (int k = 0; k < p_now; k++) wm[k] = m[k]->comb.ch[0].wm;
  wm_buf_free(&chan);
  wm_ctx_free(&ctx);
}

static void inflight_forwarded(void) {
  T.current = "a watermark in flight on a forwarded channel";
  int64_t wm[3];
  inflight_fwd_wm(2, wm); /* (a channel starts at WM_TIME_MIN: no part restored here) */
  CHECK_I64(wm[0], WM_TIME_MIN);
  CHECK_I64(wm[1], 66000);
  inflight_fwd_wm(3, wm);
  for (int k = 0; k < 3; k++) CHECK_I64(wm[k], WM_TIME_MIN);
}

static void inflight_rescaled(void) {
  CHECK(inflight_wm(3) < 52000); /* another instance 0 now: not raised */
  CHECK_I64(inflight_wm(2), 66000); /* the same instance 0: raised */
}

/* ---- records in flight to a two-input operator at another parallelism ----------------
 * An operator of two inputs tells them apart by channel: input 1's channels come first,
 * one per feeding instance (or one, forwarded). A checkpoint at -p 2 on two threads holds
 * records in flight to instance 2 of a join, whose channels were then 0-1 (input 1, from
 * its 2 feeders) and 2-3 (input 2). At -p 3 input 1 has channels 0-2 and input 2 3-5: a
 * right row in flight on old channel 2, sent to what feeds channel 2 now (input 1's third
 * exchange), was joined as a left row, and the SQL regular join lost rows and repeated
 * others after -p 2 --threads 2 -> -p 3 (spec/rescale_spec.lua). Each record must reach
 * its own input, at the instance that owns its key now. */
typedef struct side_log {
  wm_buf b;
} side_log;

static int side_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  side_log *l = op->impl;
  (void)ts;
  wm_buf_add_int(&l->b, op->subtask);
  wm_buf_adds(&l->b, "/input ");
  wm_buf_add_int(&l->b, wm_op_input_of(op, chan) + 1);
  wm_buf_addc(&l->b, ' ');
  wm_buf_add_int(&l->b, rec->u.i);
  wm_buf_addc(&l->b, '\n');
  return WM_OK;
}
static const wm_op_vt side_vt = {.kind = "two inputs", .record = side_record};

static int self_key(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  (void)ud, (void)op;
  *key = *rec;
  return WM_OK;
}

/* The plan now: nodes 1 and 2 (the inputs) at p_now, node 3 (the two-input operator) at
 * p_now through key_by exchanges, or at 1 fed directly (keyed = 0: a connect that forwards
 * at equal parallelisms); the checkpoint's: all three at 2. Replays the records `recs`
 * (value, old channel) in flight to old instance 2 of node 3 (global id 5); what arrived,
 * one "instance/input N value" line each (instances 0-based). */
static void inflight_two(int keyed, int p_now, const int (*recs)[2], int nrecs, wm_buf *out) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  side_log log;
  wm_buf_init(&log.b);
  int pj = keyed ? p_now : 1;
  wm_op *in[2][3] = {{NULL}}, *j[3] = {NULL};
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < p_now; i++) {
      in[s][i] = wm_op_new(&ctx, &src_vt, NULL, s ? "right" : "left");
      CHECK(in[s][i] != NULL);
      in[s][i]->node = (uint32_t)s + 1, in[s][i]->subtask = i, in[s][i]->nsub = p_now;
    }
  for (int k = 0; k < pj; k++) {
    j[k] = wm_op_new(&ctx, &side_vt, &log, "join");
    CHECK(j[k] != NULL);
    j[k]->node = 3, j[k]->subtask = k, j[k]->nsub = pj;
    j[k]->in1_node = 1, j[k]->in1_fwd = !keyed;
  }
  for (int s = 0; s < 2; s++) {
    for (int i = 0; i < p_now; i++) {
      if (!keyed) { /* one instance now: every feeder's edge straight to it */
        wm_op_connect(in[s][i], 0, j[0]);
        continue;
      }
      wm_keysel ks = {.fn = self_key};
      wm_op *x = wm_exchange_new(&ctx, "key_by", WM_XCH_HASH, pj, &ks);
      CHECK(x != NULL);
      wm_op_connect(in[s][i], 0, x);
      for (int k = 0; k < pj; k++) wm_op_connect(x, wm_exchange_port(x, k), j[k]);
    }
    if (s == 0)
      for (int k = 0; k < pj; k++) wm_op_set_two_inputs(j[k], j[k]->nin);
  }
  CHECK_I64(j[0]->in2, p_now);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_buf chan;
  wm_buf_init(&chan);
  wm_encoder enc;
  wm_encoder_init(&enc);
  for (int i = 0; i < nrecs; i++) {
    wm_buf_addc(&chan, 1);          /* a record (wm_mt.c, MSG_RECORD) */
    wm_codec_put_uvar(&chan, 5);    /* to instance 2 of node 3 (nodes 1 and 2 had 2 each) */
    wm_codec_put_uvar(&chan, (uint64_t)recs[i][1]);
    wm_codec_put_ivar(&chan, 1000); /* its timestamp */
    wm_value v = wm_int(recs[i][0]);
    CHECK_I64(wm_encode_value(&enc, NULL, &chan, &v, NULL), 0);
  }
  wm_encoder_free(&enc);
  static const char meta[] = "part op-1.0 1 0 0 2\npart op-1.1 1 0 1 2\npart op-2.0 2 0 0 2\n"
                             "part op-2.1 2 0 1 2\npart op-3.0 3 0 0 2\npart op-3.1 3 0 1 2\n";
  static const uint8_t none[1];
  wm_part pts[] = {{"op-1.0", none, 0}, {"op-1.1", none, 0}, {"op-2.0", none, 0},
                   {"op-2.1", none, 0}, {"op-3.0", none, 0}, {"op-3.1", none, 0},
                   {"chan-0-1", (const uint8_t *)chan.data, chan.len}};
  wm_rescale *r = wm_rescale_new(meta, sizeof meta - 1, pts, 7, &ctx.error);
  CHECK(r != NULL);
  if (r) {
    CHECK_I64(wm_rescale_replay(r, &ctx, NULL), WM_OK);
    wm_rescale_free(r);
  }
  wm_buf_adds(out, log.b.data ? log.b.data : "");
  wm_buf_free(&log.b);
  wm_buf_free(&chan);
  wm_ctx_free(&ctx);
}

static void inflight_two_inputs(void) {
  T.current = "records in flight to a two-input operator at another parallelism";
  /* keyed, -p 2 -> -p 3: old channels 0-1 were input 1's, 2-3 input 2's; each key at the
   * instance that owns its group among 3 (base/wm_keygroup.h) */
  static const int keyed[][2] = {{11, 2}, {12, 3}, {13, 0}, {14, 1}};
  wm_buf got, want;
  wm_buf_init(&got);
  wm_buf_init(&want);
  inflight_two(1, 3, keyed, 4, &got);
  for (int i = 0; i < 4; i++) {
    wm_value k = wm_int(keyed[i][0]);
    wm_buf_add_int(&want, wm_exchange_route(&k, 3, WM_KEYGROUPS_DEFAULT));
    wm_buf_adds(&want, keyed[i][1] >= 2 ? "/input 2 " : "/input 1 ");
    wm_buf_add_int(&want, keyed[i][0]);
    wm_buf_addc(&want, '\n');
  }
  CHECK_STR(got.data ? got.data : "", want.data);
  /* forwarded at -p 2 (a connect of two streams of 2 instances: one channel each, input
   * 2's on old channel 1), one instance now (input 1 on channels 0-2, input 2 on 3-5) */
  static const int fwd[][2] = {{21, 1}, {22, 0}};
  wm_buf_free(&got);
  wm_buf_init(&got);
  inflight_two(0, 3, fwd, 2, &got);
  CHECK_STR(got.data ? got.data : "", "0/input 2 21\n0/input 1 22\n");
  wm_buf_free(&got);
  wm_buf_free(&want);
}

/* A broadcast record in flight at the checkpoint to old instance 1 (0-based) of a keyed
 * broadcast process (-p 2 on two threads): instance 0, on the sender's thread, had processed
 * it (its broadcast state holds it), instance 1 had not. Each new instance takes its broadcast state
 * from one old part (restore_op: its own number's at the same parallelism, else the first
 * whose key groups meet its own), so the record goes to those that took old instance 2's,
 * and only to them: through the broadcast exchange, to every instance, the others applied it
 * twice (a rate summed twice; the --threads 2 -> 1 and -p 2 --threads 2 -> -p 3 moves). */
static const wm_op_vt side_keyed_vt = {.kind = "keyed broadcast process", .record = side_record,
                                       .keyed_state = 1};

static void inflight_bcast(int p_now, wm_buf *out) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  side_log log;
  wm_buf_init(&log.b);
  wm_op *in[3] = {NULL}, *j[3] = {NULL}, *rules = wm_op_new(&ctx, &src_vt, NULL, "rules");
  CHECK(rules != NULL);
  rules->node = 2, rules->subtask = 0, rules->nsub = 1;
  for (int i = 0; i < p_now; i++) {
    in[i] = wm_op_new(&ctx, &src_vt, NULL, "events");
    j[i] = wm_op_new(&ctx, &side_keyed_vt, &log, "process");
    CHECK(in[i] != NULL && j[i] != NULL);
    in[i]->node = 1, in[i]->subtask = i, in[i]->nsub = p_now;
    j[i]->node = 3, j[i]->subtask = i, j[i]->nsub = p_now;
    j[i]->in1_node = 1;
  }
  for (int i = 0; i < p_now; i++) {
    wm_keysel ks = {.fn = self_key};
    wm_op *x = wm_exchange_new(&ctx, "key_by", WM_XCH_HASH, p_now, &ks);
    CHECK(x != NULL);
    wm_op_connect(in[i], 0, x);
    for (int k = 0; k < p_now; k++) wm_op_connect(x, wm_exchange_port(x, k), j[k]);
  }
  for (int k = 0; k < p_now; k++) wm_op_set_two_inputs(j[k], j[k]->nin);
  wm_op *b = wm_exchange_new(&ctx, "broadcast", WM_XCH_BROADCAST, p_now, NULL);
  CHECK(b != NULL);
  wm_op_connect(rules, 0, b);
  for (int k = 0; k < p_now; k++) wm_op_connect(b, wm_exchange_port(b, k), j[k]);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_buf chan;
  wm_buf_init(&chan);
  wm_encoder enc;
  wm_encoder_init(&enc);
  wm_buf_addc(&chan, 1);          /* a record */
  wm_codec_put_uvar(&chan, 4);    /* to instance 2 of node 3 (node 1 had 2, node 2 one) */
  wm_codec_put_uvar(&chan, 2);    /* on input 2's channel (input 1 had 2) */
  wm_codec_put_ivar(&chan, 1000);
  wm_value v = wm_int(7);
  CHECK_I64(wm_encode_value(&enc, NULL, &chan, &v, NULL), 0);
  wm_encoder_free(&enc);
  static const char meta[] = "part op-1.0 1 0 0 2\npart op-1.1 1 0 1 2\npart op-2.0 2 0 0 1\n"
                             "part op-3.0 3 0 0 2\npart op-3.1 3 0 1 2\n";
  static const uint8_t none[1];
  wm_part pts[] = {{"op-1.0", none, 0}, {"op-1.1", none, 0}, {"op-2.0", none, 0},
                   {"op-3.0", none, 0}, {"op-3.1", none, 0},
                   {"chan-0-1", (const uint8_t *)chan.data, chan.len}};
  wm_rescale *r = wm_rescale_new(meta, sizeof meta - 1, pts, 6, &ctx.error);
  CHECK(r != NULL);
  if (r) {
    CHECK_I64(wm_rescale_replay(r, &ctx, NULL), WM_OK);
    wm_rescale_free(r);
  }
  wm_buf_adds(out, log.b.data ? log.b.data : "");
  wm_buf_free(&log.b);
  wm_buf_free(&chan);
  wm_ctx_free(&ctx);
}

static void inflight_broadcast(void) {
  T.current = "a broadcast record in flight, at another parallelism or thread count";
  wm_buf got;
  wm_buf_init(&got);
  /* new instances 0 (groups 0-42) and 1 (43-85) took old instance 0's state (0-63), 2
   * (86-127) old 1's */
  inflight_bcast(3, &got);
  CHECK_STR(got.data ? got.data : "", "2/input 2 7\n");
  wm_buf_free(&got);
  wm_buf_init(&got);
  inflight_bcast(2, &got); /* one thread now: each instance its own old state */
  CHECK_STR(got.data ? got.data : "", "1/input 2 7\n");
  wm_buf_free(&got);
}

void test_snapshot(void) {
  inflight_rescaled();
  inflight_two_inputs();
  inflight_broadcast();
  inflight_forwarded();
  tsop_merge();
  rebalance();
  preagg();
  windows();
  host_values();
  keyed();
  ijoin_state();
  custom_generator();
  shape();
}
