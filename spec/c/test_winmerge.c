/* Table-driven tests of the window operator beyond tumbling windows: session merging,
 * sliding windows, global and count windows, triggers, evictors and processing time.
 * Each case feeds records and watermarks (and wall-clock steps) and compares every
 * emission ("timestamp value" lines) with the result worked out by hand from
 * semantics.md §4-§7. */
#include <stdlib.h>

#include "base/wm_buf.h"
#include "time/wm_time.h"
#include "ops/wm_winop.h"
#include "test.h"


/* a virtual wall clock and the processing-time timers registered with it */
typedef struct vclock {
  int64_t now;
  int64_t t[64];
  int n;
} vclock;

static int64_t vnow(void *ud) { return ((vclock *)ud)->now; }
static int vreg(void *ud, wm_op *op, int64_t t) {
  (void)op;
  vclock *c = ud;
  if (c->n < 64) c->t[c->n++] = t;
  return WM_OK;
}
/* moves the clock to `to`, firing due timers in time order */
static int vadvance(vclock *c, wm_op *op, int64_t to) {
  c->now = to;
  for (;;) {
    int best = -1;
    for (int i = 0; i < c->n; i++)
      if (c->t[i] <= to && (best < 0 || c->t[i] < c->t[best])) best = i;
    if (best < 0) return WM_OK;
    int64_t t = c->t[best];
    c->t[best] = c->t[--c->n];
    if (op->vt->processing_time(op, t) != WM_OK) return WM_ERR;
  }
}

typedef struct step {
  char kind; /* 'r' record (key, t = ts ms, v = vc), 'w' watermark t, 'p' clock to t */
  const char *key;
  int64_t t, v;
} step;

enum { EV_NONE, EV_COUNT, EV_TIME };

typedef struct wcase {
  const char *name;
  wm_assigner a;
  int64_t lateness;
  int trig; /* 0: default */
  int64_t trig_n;
  int purging;
  int ev, ev_after;
  int64_t ev_n;
  int agg;
  const char *late_tag;
  step steps[16];
  const char *expect, *expect_late;
  int64_t dropped;
} wcase;

#define R(k, t, v) {'r', k, t, v}
#define WMK(t) {'w', NULL, t, 0}
#define P(t) {'p', NULL, t, 0}
#define CNT(s, e, n) "{\"count\":" #n ",\"key\":\"a\",\"start\":" #s ",\"stop\":" #e "}\n"
#define MAXS "9223372036854775807"
#define MINS "-9223372036854775808"

static const wcase cases[] = {
    {"session: windows that touch merge", {.kind = WM_WA_SESSION, .gap = 5000}, .agg = WM_AGG_COUNT,
     .steps = {R("a", 2000, 1), R("a", 7000, 1), WMK(11999), R("a", 14000, 1), WMK(WM_TIME_MAX)},
     .expect = "11999 " CNT(2000, 12000, 2) "18999 " CNT(14000, 19000, 1)},
    {"session: a late record bridges two live sessions", {.kind = WM_WA_SESSION, .gap = 3000},
     .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), R("a", 6000, 1), WMK(3500), R("a", 3500, 1), WMK(WM_TIME_MAX)},
     .expect = "8999 " CNT(1000, 9000, 3)},
    {"session: bridging merges the accumulators (sum keeps the earliest record)",
     {.kind = WM_WA_SESSION, .gap = 3000}, .agg = WM_AGG_SUM,
     .steps = {R("a", 1000, 1), R("a", 5000, 2), R("a", 3500, 4), R("b", 3600, 8), WMK(WM_TIME_MAX)},
     .expect = "6599 {\"id\":\"b\",\"ts\":3600,\"vc\":8}\n7999 {\"id\":\"a\",\"ts\":1000,\"vc\":7}\n"},
    {"session: absorbs a session that fired but is not cleaned up (timer moves)",
     {.kind = WM_WA_SESSION, .gap = 2000}, .lateness = 5000, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), WMK(4000), R("a", 2500, 1), WMK(5000), WMK(WM_TIME_MAX)},
     .expect = "2999 " CNT(1000, 3000, 1) "4499 " CNT(1000, 4500, 2)},
    {"session: absorbing a fired session behind the watermark fires at once",
     {.kind = WM_WA_SESSION, .gap = 2000}, .lateness = 5000, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), WMK(4000), R("a", 1500, 1), WMK(WM_TIME_MAX)},
     .expect = "2999 " CNT(1000, 3000, 1) "3499 " CNT(1000, 3500, 2)},
    {"session: a record inside a session changes nothing but the contents",
     {.kind = WM_WA_SESSION, .gap = 5000}, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), R("a", 4000, 1), R("a", 2000, 1), WMK(WM_TIME_MAX)},
     .expect = "8999 " CNT(1000, 9000, 3)},
    {"session: a late record that merges nothing is dropped and counted",
     {.kind = WM_WA_SESSION, .gap = 1000}, .agg = WM_AGG_COUNT,
     .steps = {R("a", 5000, 1), WMK(4000), R("a", 1000, 1), WMK(WM_TIME_MAX)},
     .expect = "5999 " CNT(5000, 6000, 1), .dropped = 1},
    {"sliding: slide not dividing the size, negative timestamp, offset",
     {.kind = WM_WA_SLIDING, .size = 10000, .slide = 3000, .offset = 1000}, .agg = WM_AGG_COUNT,
     .steps = {R("a", -500, 1), WMK(WM_TIME_MAX)},
     .expect = "1999 " CNT(-8000, 2000, 1) "4999 " CNT(-5000, 5000, 1) "7999 " CNT(-2000, 8000, 1)},
    {"sliding: a record late for some of its windows only",
     {.kind = WM_WA_SLIDING, .size = 4000, .slide = 2000}, .agg = WM_AGG_COUNT,
     .steps = {R("a", 3000, 1), WMK(3999), R("a", 2500, 1), WMK(WM_TIME_MAX)},
     .expect = "3999 " CNT(0, 4000, 1) "5999 " CNT(2000, 6000, 2)},
    {"tumbling: lateness larger than the window",
     {.kind = WM_WA_TUMBLING, .size = 1000}, .lateness = 5000, .agg = WM_AGG_COUNT,
     .late_tag = "late",
     .steps = {R("a", 500, 1), WMK(1200), R("a", 600, 1), WMK(5998), R("a", 700, 1), WMK(5999),
               R("a", 800, 1), WMK(WM_TIME_MAX)},
     .expect = "999 " CNT(0, 1000, 1) "999 " CNT(0, 1000, 2) "999 " CNT(0, 1000, 3),
     .expect_late = "late 800 {\"id\":\"a\",\"ts\":800,\"vc\":1}\n"},
    {"global: the default trigger never fires", {.kind = WM_WA_GLOBAL}, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1, 1), R("a", 2, 1), WMK(WM_TIME_MAX)}, .expect = ""},
    {"global + end_of_stream fires once at the end", {.kind = WM_WA_GLOBAL},
     .trig = WM_TRIG_END_OF_STREAM, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1, 1), R("a", WM_TIME_MIN, 1), WMK(5), R("a", 2, 1), WMK(WM_TIME_MAX)},
     .expect = MAXS " {\"count\":3,\"key\":\"a\",\"start\":" MINS ",\"stop\":" MAXS "}\n"},
    {"count(3): purging count trigger on a global window", {.kind = WM_WA_GLOBAL},
     .trig = WM_TRIG_COUNT, .trig_n = 3, .purging = 1, .agg = WM_AGG_SUM,
     .steps = {R("a", 1, 1), R("a", 2, 2), R("a", 3, 3), R("a", 4, 4), R("a", 5, 5), R("a", 6, 6),
               R("a", 7, 7), WMK(WM_TIME_MAX)},
     .expect = MAXS " {\"id\":\"a\",\"ts\":1,\"vc\":6}\n" MAXS " {\"id\":\"a\",\"ts\":4,\"vc\":15}\n"},
    {"count(3, 2): fire every 2 records with the last 3", {.kind = WM_WA_GLOBAL},
     .trig = WM_TRIG_COUNT, .trig_n = 2, .ev = EV_COUNT, .ev_n = 3, .agg = WM_AGG_SUM,
     .steps = {R("a", 1, 1), R("a", 2, 2), R("a", 3, 3), R("a", 4, 4), R("a", 5, 5), R("a", 6, 6),
               R("a", 7, 7), WMK(WM_TIME_MAX)},
     .expect = MAXS " {\"id\":\"a\",\"ts\":1,\"vc\":3}\n" MAXS " {\"id\":\"a\",\"ts\":2,\"vc\":9}\n" MAXS
               " {\"id\":\"a\",\"ts\":4,\"vc\":15}\n"},
    {"count trigger on tumbling windows replaces the end-of-window firing",
     {.kind = WM_WA_TUMBLING, .size = 4000}, .trig = WM_TRIG_COUNT, .trig_n = 2, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), R("a", 2000, 1), R("a", 3000, 1), WMK(WM_TIME_MAX)},
     .expect = "3999 " CNT(0, 4000, 2)},
    {"purging(event_time): a late firing after a purge holds only the late record",
     {.kind = WM_WA_TUMBLING, .size = 5000}, .lateness = 2000, .trig = WM_TRIG_EVENT_TIME,
     .purging = 1, .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), R("a", 2000, 1), WMK(5000), R("a", 3000, 1), WMK(WM_TIME_MAX)},
     .expect = "4999 " CNT(0, 5000, 2) "4999 " CNT(0, 5000, 1)},
    {"continuous_event_time: every interval and at the window's end",
     {.kind = WM_WA_TUMBLING, .size = 10000}, .trig = WM_TRIG_CONTINUOUS_EVENT_TIME, .trig_n = 4000,
     .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), R("a", 2000, 1), WMK(4500), R("a", 5000, 1), WMK(WM_TIME_MAX)},
     .expect = "9999 " CNT(0, 10000, 2) "9999 " CNT(0, 10000, 3) "9999 " CNT(0, 10000, 3)},
    {"continuous_event_time on a global window ends at the end of input",
     {.kind = WM_WA_GLOBAL}, .trig = WM_TRIG_CONTINUOUS_EVENT_TIME, .trig_n = 1000,
     .agg = WM_AGG_COUNT, .steps = {R("a", 500, 1), WMK(999), WMK(1500), WMK(WM_TIME_MAX)},
     /* at 1000 (watermark 1500), at 2000 (registered before the end), at MAX (the window's
      * end); the 3000 the last firing asks for is refused: the window never ends */
     .expect = MAXS " {\"count\":1,\"key\":\"a\",\"start\":" MINS ",\"stop\":" MAXS "}\n"
               MAXS " {\"count\":1,\"key\":\"a\",\"start\":" MINS ",\"stop\":" MAXS "}\n"
               MAXS " {\"count\":1,\"key\":\"a\",\"start\":" MINS ",\"stop\":" MAXS "}\n"},
    {"count evictor before the function", {.kind = WM_WA_TUMBLING, .size = 10000}, .ev = EV_COUNT,
     .ev_n = 2, .agg = WM_AGG_SUM,
     .steps = {R("a", 1000, 1), R("a", 2000, 2), R("a", 3000, 4), WMK(WM_TIME_MAX)},
     .expect = "9999 {\"id\":\"a\",\"ts\":2000,\"vc\":6}\n"},
    {"count evictor after the function", {.kind = WM_WA_TUMBLING, .size = 10000},
     .trig = WM_TRIG_COUNT, .trig_n = 2, .ev = EV_COUNT, .ev_n = 1, .ev_after = 1,
     .agg = WM_AGG_COUNT,
     .steps = {R("a", 1000, 1), R("a", 2000, 1), R("a", 3000, 1), R("a", 4000, 1), WMK(WM_TIME_MAX)},
     .expect = "9999 " CNT(0, 10000, 2) "9999 " CNT(0, 10000, 3)},
    {"time evictor keeps records newer than latest - keep", {.kind = WM_WA_TUMBLING, .size = 10000},
     .ev = EV_TIME, .ev_n = 2000, .agg = WM_AGG_SUM,
     .steps = {R("a", 1000, 1), R("a", 7000, 2), R("a", 5000, 4), R("a", 6000, 8), WMK(WM_TIME_MAX)},
     .expect = "9999 {\"id\":\"a\",\"ts\":7000,\"vc\":10}\n"},
    {"processing-time tumbling windows fire from the wall clock, the rest at the end",
     {.kind = WM_WA_TUMBLING, .size = 1000, .processing_time = true}, .agg = WM_AGG_COUNT,
     .steps = {P(100), R("a", 5, 1), P(500), R("a", 6, 1), P(998), P(1000), P(1500), R("a", 7, 1),
               WMK(WM_TIME_MAX)},
     .expect = "999 " CNT(0, 1000, 2) "1999 " CNT(1000, 2000, 1)},
    {"processing-time sessions merge on the wall clock",
     {.kind = WM_WA_SESSION, .gap = 1000, .processing_time = true}, .agg = WM_AGG_COUNT,
     .steps = {P(100), R("a", 5, 1), P(900), R("a", 6, 1), P(1899), P(1900), R("a", 7, 1), P(5000)},
     .expect = "1899 " CNT(100, 1900, 2) "2899 " CNT(1900, 2900, 1)},
    {"processing_time trigger on event-time windows",
     {.kind = WM_WA_TUMBLING, .size = 1000}, .trig = WM_TRIG_PROCESSING_TIME, .agg = WM_AGG_COUNT,
     .steps = {P(0), R("a", 100, 1), WMK(2000), P(998), P(999)}, .expect = ""},
};

static wm_schema *schema(void) {
  static const char *const names[] = {"id", "ts", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER};
  return wm_schema_new(3, names, types);
}

static void run_case(const wcase *c) {
  T.current = c->name;
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  vclock clk = {0};
  ctx.now = vnow;
  ctx.now_ud = &clk;
  ctx.pt_register = vreg;
  ctx.pt_ud = &clk;
  wm_winop_config cfg = {0};
  cfg.assigner = c->a;
  cfg.lateness = c->lateness;
  cfg.late_tag = c->late_tag;
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  CHECK_I64(wm_winfn_builtin(&cfg.fn, c->agg, "vc"), 0);
  if (c->trig) {
    cfg.trigger = wm_trigger_new(c->trig, c->trig_n);
    if (c->purging) cfg.trigger = wm_trigger_purging(cfg.trigger);
    CHECK(cfg.trigger != NULL);
  }
  if (c->ev) {
    cfg.evictor.kind = c->ev == EV_COUNT ? WM_EV_COUNT : WM_EV_TIME;
    cfg.evictor.n = c->ev_n;
    cfg.evictor.after = c->ev_after;
  }
  wm_op *w = wm_winop_new(&ctx, "window", &cfg);
  CHECK(w != NULL);
  if (!w) {
    wm_ctx_free(&ctx);
    return;
  }
  capture main = {.label = NULL}, late = {.label = "late"};
  wm_buf_init(&main.out);
  wm_buf_init(&late.out);
  wm_op_connect(w, 0, wm_op_new(&ctx, &capture_vt, &main, "main"));
  if (c->late_tag) wm_op_connect(w, wm_op_port(w, c->late_tag), wm_op_new(&ctx, &capture_vt, &late, "late"));
  wm_op_connect(wm_op_new(&ctx, &capture_vt, NULL, "src"), 0, w);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_schema *s = schema();
  for (size_t i = 0; i < sizeof c->steps / sizeof c->steps[0] && c->steps[i].kind; i++) {
    const step *st = &c->steps[i];
    int rc = WM_OK;
    if (st->kind == 'r') {
      wm_row *r = wm_row_new(s);
      r->fields[0] = wm_cstr(st->key, strlen(st->key));
      wm_value_retain(NULL, &r->fields[0]);
      r->fields[1] = wm_int(st->t);
      r->fields[2] = wm_int(st->v);
      wm_value v = wm_row_value(r);
      rc = wm_op_input_record(w, 0, &v, st->t);
      wm_value_release(NULL, &v);
    } else if (st->kind == 'w') {
      rc = wm_op_input_watermark(w, 0, st->t);
    } else {
      rc = vadvance(&clk, w, st->t);
    }
    CHECK_I64(rc, WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
  }
  CHECK_STR(main.out.data ? main.out.data : "", c->expect);
  if (c->expect_late) CHECK_STR(late.out.data ? late.out.data : "", c->expect_late);
  CHECK_I64(w->m.late_dropped, c->dropped);
  wm_schema_release(s);
  wm_ctx_free(&ctx);
  wm_buf_free(&main.out);
  wm_buf_free(&late.out);
}

/* A session that grows with every record holds its timers per window, not per record:
 * before, every move queued a timer at the new end that stayed until its time (issue 13.8:
 * 135 bytes a record). One key, a 1 h gap, a record per ms, the watermark 1 ms behind. */
static void session_timers(void) {
  static const struct {
    int agg;
    int64_t lateness;
    int trig;
    int64_t gap;
    size_t max_timers; /* at most this many queued timers after the records */
    const char *want;
  } st[] = {
      /* one wake-up: firing and cleanup coincide */
      {WM_AGG_COUNT, 0, 0, 3600000, 1, "3604999 " CNT(1, 3605000, 5000)},
      {WM_AGG_SUM, 0, 0, 3600000, 1, "3604999 {\"id\":\"a\",\"ts\":1,\"vc\":5000}\n"},
      /* lateness: the wake-up is the firing */
      {WM_AGG_COUNT, 60000, 0, 3600000, 1, "3604999 " CNT(1, 3605000, 5000)},
      /* another trigger: the cleanup's wake-up (count(5000) fires at the last record) */
      {WM_AGG_COUNT, 0, WM_TRIG_COUNT, 3600000, 1, "3604999 " CNT(1, 3605000, 5000)},
      /* a 10 ms gap: the watermark passes every wake-up before the session ends, each
       * pushes the next; still one */
      {WM_AGG_COUNT, 0, 0, 10, 1, "5009 " CNT(1, 5010, 5000)},
      {WM_AGG_COUNT, 0, WM_TRIG_COUNT, 10, 1, "5009 " CNT(1, 5010, 5000)},
      /* a trigger that registers at the session's new end with every record (and every
       * 1000 s): superseded timers are dropped once the queue has doubled, so it holds at
       * most 2 x 3 wanted (the end, the next 1000 s, the cleanup's wake-up) + 64. At the end
       * it fires at 1000, 2000 and 3000 s and at the session's end. */
      {WM_AGG_COUNT, 0, WM_TRIG_CONTINUOUS_EVENT_TIME, 3600000, 2 * 3 + 64,
       "3604999 " CNT(1, 3605000, 5000) "3604999 " CNT(1, 3605000, 5000)
       "3604999 " CNT(1, 3605000, 5000) "3604999 " CNT(1, 3605000, 5000)},
  };
  enum { N = 5000 };
  for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) {
    T.current = "session: timers per window, not per record";
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    wm_winop_config cfg = {0};
    cfg.assigner = (wm_assigner){.kind = WM_WA_SESSION, .gap = st[k].gap};
    cfg.lateness = st[k].lateness;
    const char *key = "id";
    CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
    CHECK_I64(wm_winfn_builtin(&cfg.fn, st[k].agg, "vc"), 0);
    if (st[k].trig)
      cfg.trigger = wm_trigger_new(st[k].trig, st[k].trig == WM_TRIG_COUNT ? N : 1000000);
    wm_op *w = wm_winop_new(&ctx, "window", &cfg);
    CHECK(w != NULL);
    if (!w) {
      wm_ctx_free(&ctx);
      continue;
    }
    capture main = {.label = NULL};
    wm_buf_init(&main.out);
    wm_op_connect(w, 0, wm_op_new(&ctx, &capture_vt, &main, "main"));
    wm_op_connect(wm_op_new(&ctx, &capture_vt, NULL, "src"), 0, w);
    CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
    wm_schema *sc = schema();
    int rc = WM_OK;
    for (int64_t t = 1; t <= N && rc == WM_OK; t++) {
      wm_row *r = wm_row_new(sc);
      r->fields[0] = wm_cstr("a", 1);
      r->fields[1] = wm_int(t);
      r->fields[2] = wm_int(1);
      wm_value v = wm_row_value(r);
      rc = wm_op_input_record(w, 0, &v, t);
      wm_value_release(NULL, &v);
      if (rc == WM_OK) rc = wm_op_input_watermark(w, 0, t - 1);
    }
    CHECK_I64(rc, WM_OK);
    CHECK_I64(wm_winop_open_windows(w), 1);
    CHECK(wm_winop_queued_timers(w) <= st[k].max_timers);
    if (wm_winop_queued_timers(w) > st[k].max_timers)
      fprintf(stderr, "  case %zu: %zu timers queued\n", k, wm_winop_queued_timers(w));
    /* and the session still fires once, whole (the count trigger: at its 5000th record) */
    CHECK_I64(wm_op_input_watermark(w, 0, WM_TIME_MAX), WM_OK);
    CHECK_STR(main.out.data ? main.out.data : "", st[k].want);
    CHECK_I64(wm_winop_open_windows(w), 0);
    wm_schema_release(sc);
    wm_ctx_free(&ctx);
    wm_buf_free(&main.out);
  }
}

static int nm_element(const wm_trigger *t, wm_trigger_ctx *c, const wm_value *rec, int64_t ts) {
  (void)t, (void)c, (void)rec, (void)ts;
  return WM_TR_CONTINUE;
}
static const wm_trigger_vt no_merge_vt = {"no merge", nm_element, NULL, NULL, NULL, NULL, NULL};

/* Bad configurations are refused when the operator is built, with a message. */
static void bad_configs(void) {
  T.current = "window operator: bad configurations";
  static const char *const key = "id";
  for (int k = 0; k < 4; k++) {
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    wm_winop_config cfg = {0};
    wm_keysel_fields(&cfg.keysel, &key, 1);
    wm_winfn_builtin(&cfg.fn, WM_AGG_SUM, "vc");
    const char *want = NULL;
    switch (k) {
    case 0:
      cfg.assigner = (wm_assigner){.kind = WM_WA_SESSION, .gap = 0};
      want = "gap";
      break;
    case 1: /* a window function that cannot merge on session windows */
      cfg.assigner = (wm_assigner){.kind = WM_WA_SESSION, .gap = 10};
      cfg.fn.merge = NULL;
      want = "merge";
      break;
    case 2: /* a trigger that cannot merge */
      cfg.assigner = (wm_assigner){.kind = WM_WA_SESSION, .gap = 10};
      cfg.trigger = wm_trigger_custom(&no_merge_vt, NULL, NULL);
      want = "trigger";
      break;
    default:
      cfg.assigner = (wm_assigner){.kind = WM_WA_SLIDING, .size = 10, .slide = 20};
      want = "slide";
    }
    CHECK(wm_winop_new(&ctx, "w", &cfg) == NULL);
    CHECK(strstr(wm_ctx_errtext(&ctx), want) != NULL);
    wm_ctx_free(&ctx);
  }
  CHECK(wm_trigger_new(WM_TRIG_COUNT, 0) == NULL);
  CHECK(wm_trigger_new(WM_TRIG_CONTINUOUS_EVENT_TIME, -1) == NULL);
}

/* Built-in evictors on their own. */
static void evictors(void) {
  T.current = "evictors";
  wm_value items[4] = {wm_int(1), wm_int(2), wm_int(3), wm_int(4)};
  int64_t ts[4] = {100, 400, 200, 300};
  wm_evict_items it = {items, ts, 4};
  wm_evictor e = {.kind = WM_EV_TIME, .n = 150};
  wm_evict_builtin(NULL, &e, &it); /* latest 400, cutoff 250: keeps 400 and 300 */
  CHECK_I64(it.n, 2);
  CHECK_I64(items[0].u.i, 2);
  CHECK_I64(items[1].u.i, 4);
  wm_evictor c = {.kind = WM_EV_COUNT, .n = 1};
  wm_evict_builtin(NULL, &c, &it);
  CHECK_I64(it.n, 1);
  CHECK_I64(items[0].u.i, 4);
  int64_t none[1] = {WM_TIME_MIN};
  wm_value one[1] = {wm_int(9)};
  wm_evict_items it2 = {one, none, 1};
  wm_evict_builtin(NULL, &e, &it2); /* no timestamps: the time evictor keeps everything */
  CHECK_I64(it2.n, 1);
}

void test_winmerge(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  bad_configs();
  session_timers();
  evictors();
}
