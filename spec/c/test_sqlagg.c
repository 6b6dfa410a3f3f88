/* SQL group aggregates in C (ops/wm_sqlagg.h) in a window operator: the results worked out
 * by hand (NULLs ignored, FILTER, integer and float SUM and AVG, AVG truncating toward zero,
 * an empty aggregate), a session merge, and a checkpoint taken in the middle and restored
 * into a fresh operator giving the same results. */
#include <stdlib.h>
#include <string.h>

#include "graph/wm_snapshot.h"
#include "ops/wm_sqlagg.h"
#include "ops/wm_keyedop.h"
#include "ops/wm_winop.h"
#include "time/wm_time.h"
#include "test.h"

typedef struct rec {
  const char *id;
  int64_t ts;
  int has_vc;
  int64_t vc;
  int has_d;
  double d;
} rec;

#define V(x) 1, (x)
#define NUL 0, 0

static wm_schema *in_schema(void) {
  static const char *const names[] = {"id", "vc", "d"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER};
  return wm_schema_new(3, names, types);
}

/* the result fields, named so that their sorted order (JSON printing) is this one */
static const wm_sqlagg_cond filt[] = {{"vc", WM_SA_GT, {.type = WM_INT, .u.i = 2}},
                                      {"vc", WM_SA_LE, {.type = WM_INT, .u.i = 10}}};
static const wm_sqlagg_def defs[] = {
    {.kind = WM_SA_COUNT_STAR},
    {.kind = WM_SA_COUNT, .field = "vc"},
    {.kind = WM_SA_SUM, .field = "vc", .integer = 1},
    {.kind = WM_SA_MIN, .field = "vc", .integer = 1},
    {.kind = WM_SA_MAX, .field = "d"},
    {.kind = WM_SA_AVG, .field = "vc", .integer = 1},
    {.kind = WM_SA_AVG, .field = "d"},
    {.kind = WM_SA_COUNT_STAR, .ncond = 2, .cond = filt},
    {.kind = WM_SA_SUM, .field = "d"},
    {.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1},
};
static const wm_sqlagg_out outs[] = {
    {"a_id", WM_SA_OUT_KEY, 0},   {"b_start", WM_SA_OUT_START, 0}, {"c_end", WM_SA_OUT_END, 0},
    {"d_n", WM_SA_OUT_AGG, 0},    {"e_nvc", WM_SA_OUT_AGG, 1},     {"f_sum", WM_SA_OUT_AGG, 2},
    {"g_min", WM_SA_OUT_AGG, 3},  {"h_maxd", WM_SA_OUT_AGG, 4},    {"i_avg", WM_SA_OUT_AGG, 5},
    {"j_avgd", WM_SA_OUT_AGG, 6}, {"k_filt", WM_SA_OUT_AGG, 7},    {"l_sumd", WM_SA_OUT_AGG, 8},
    {"m_dv", WM_SA_OUT_AGG, 9},
};

typedef struct rig {
  wm_ctx ctx;
  capture out;
  wm_op *w;
  wm_schema *s;
} rig;

static void rig_init(rig *g, int kind, int64_t size) {
  wm_ctx_init(&g->ctx);
  g->s = in_schema();
  g->out = (capture){.label = NULL};
  wm_buf_init(&g->out.out);
  wm_winop_config cfg = {0};
  cfg.assigner.kind = kind;
  if (kind == WM_WA_SESSION) cfg.assigner.gap = size;
  else cfg.assigner.size = size;
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = sizeof defs / sizeof defs[0], .aggs = defs,
                         .nout = sizeof outs / sizeof outs[0], .out = outs};
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_winfn_sqlagg(&cfg.fn, &spec, &err), 0);
  snprintf(cfg.meaning, sizeof cfg.meaning, "SQL test");
  g->w = wm_winop_new(&g->ctx, "window", &cfg);
  wm_op *sink = wm_op_new(&g->ctx, &capture_vt, &g->out, "sink");
  wm_op_connect(g->w, 0, sink);
  wm_op *src = wm_op_new(&g->ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, g->w);
  CHECK_I64(wm_ctx_prepare(&g->ctx), WM_OK);
}

static void rig_free(rig *g) {
  wm_ctx_free(&g->ctx);
  wm_schema_release(g->s);
  wm_buf_free(&g->out.out);
}

static void feed(rig *g, const rec *rs, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) {
    wm_row *r = wm_row_new(g->s);
    if (rs[i].id) { /* (NULL: the key field is missing) */
      r->fields[0] = wm_cstr(rs[i].id, strlen(rs[i].id));
      wm_value_retain(NULL, &r->fields[0]);
    }
    if (rs[i].has_vc) r->fields[1] = wm_int(rs[i].vc);
    if (rs[i].has_d) r->fields[2] = wm_float(rs[i].d);
    wm_value v = wm_row_value(r);
    CHECK_I64(wm_op_input_record(g->w, 0, &v, rs[i].ts), WM_OK);
    wm_value_release(NULL, &v);
  }
}

/* a: vc 5, NULL, -4, 12, 5 and d 1.5, 2.5, NULL, 0.5, NULL; b: one row of NULLs; c: vc -7, -2 */
static const rec tumble_rs[] = {
    {"a", 1000, V(5), V(1.5)}, {"b", 1500, NUL, NUL},     {"a", 2000, NUL, V(2.5)},
    {"c", 2500, V(-7), NUL},   {"a", 3000, V(-4), NUL},   {"c", 3500, V(-2), NUL},
    {"a", 4000, V(12), V(0.5)}, {"a", 4500, V(5), NUL},
};

/* By hand. a: 5 rows, 4 vc, sum 18, min -4, max d 2.5, avg 18 / 4 = 4, avg d 4.5 / 3 = 1.5,
 * 2 < vc <= 10: 5 twice, sum d 4.5, 3 distinct vc. b: COUNTs 0 and 1, every other aggregate
 * NULL (absent). c: sum -9, avg -9 / 2 = -4 (toward zero, not -5), 2 distinct. Fired at the end, in key order of
 * creation; the results' time is the window's last millisecond. */
static const char *const tumble_expect =
    "9999 {\"a_id\":\"a\",\"b_start\":0,\"c_end\":10000,\"d_n\":5,\"e_nvc\":4,\"f_sum\":18,"
    "\"g_min\":-4,\"h_maxd\":2.5,\"i_avg\":4,\"j_avgd\":1.5,\"k_filt\":2,\"l_sumd\":4.5,\"m_dv\":3}\n"
    "9999 {\"a_id\":\"b\",\"b_start\":0,\"c_end\":10000,\"d_n\":1,\"e_nvc\":0,\"k_filt\":0,\"m_dv\":0}\n"
    "9999 {\"a_id\":\"c\",\"b_start\":0,\"c_end\":10000,\"d_n\":2,\"e_nvc\":2,\"f_sum\":-9,"
    "\"g_min\":-7,\"i_avg\":-4,\"k_filt\":0,\"m_dv\":2}\n";

static void hand_worked(void) {
  T.current = "sqlagg: hand-worked tumbling window";
  rig g;
  rig_init(&g, WM_WA_TUMBLING, 10000);
  feed(&g, tumble_rs, 0, sizeof tumble_rs / sizeof tumble_rs[0]);
  wm_op_input_watermark(g.w, 0, WM_TIME_MAX);
  CHECK_STR(g.out.out.data, tumble_expect);
  rig_free(&g);
}

/* Session gap 1 s: a at 1000 (vc 1) and 3000 (vc 2) are two sessions until 2000 (vc 3)
 * bridges them: one session [1000, 4000) of 3 rows, sum 6, min 1, avg 2. */
static void session_merge(void) {
  T.current = "sqlagg: session windows merge their states";
  static const rec rs[] = {{"a", 1000, V(1), V(0.25)}, {"a", 3000, V(2), NUL}, {"a", 2000, V(3), V(4.0)}};
  rig g;
  rig_init(&g, WM_WA_SESSION, 1000);
  feed(&g, rs, 0, 3);
  wm_op_input_watermark(g.w, 0, WM_TIME_MAX);
  CHECK_STR(g.out.out.data,
            "3999 {\"a_id\":\"a\",\"b_start\":1000,\"c_end\":4000,\"d_n\":3,\"e_nvc\":3,\"f_sum\":6,"
            "\"g_min\":1,\"h_maxd\":4.0,\"i_avg\":2,\"j_avgd\":2.125,\"k_filt\":1,\"l_sumd\":4.25,"
            "\"m_dv\":3}\n");
  rig_free(&g);
}

typedef struct parts {
  wm_part p[8];
  size_t n;
} parts;

static void free_parts(parts *ps) {
  for (size_t i = 0; i < ps->n; i++) {
    free((char *)ps->p[i].name);
    free((uint8_t *)ps->p[i].data);
  }
}

static int put_part(void *ud, const char *name, const void *data, size_t len, wm_error *err) {
  parts *ps = ud;
  if (ps->n == 8) return wm_error_set(err, "too many parts");
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

/* Every cut of the tumbling input: snapshot, restore into a fresh operator, feed the rest:
 * the same results as the hand-worked ones. */
static void snapshot_restore(void) {
  T.current = "sqlagg: a checkpoint at every cut restores the aggregates";
  size_t n = sizeof tumble_rs / sizeof tumble_rs[0];
  for (size_t cut = 0; cut <= n; cut++) {
    rig a, b;
    parts ps = {0};
    rig_init(&a, WM_WA_TUMBLING, 10000);
    feed(&a, tumble_rs, 0, cut);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    rig_free(&a);
    rig_init(&b, WM_WA_TUMBLING, 10000);
    int rc = wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n);
    CHECK_I64(rc, WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  restore at %zu: %s\n", cut, wm_ctx_errtext(&b.ctx));
    feed(&b, tumble_rs, cut, n);
    wm_op_input_watermark(b.w, 0, WM_TIME_MAX);
    CHECK_STR(b.out.out.data, tumble_expect);
    rig_free(&b);
    free_parts(&ps);
  }
}

/* COUNT(DISTINCT vc), COUNT(DISTINCT d) over 100 rows of key a: vc = i % 37 (37 values; the
 * set grows from 8 slots past 64), d = (i % 5) / 2 (0, 0.5, 1, 1.5, 2: 5 values; the integral
 * ones given as floats count as the integers they equal), then a NULL vc and an integer d 2
 * (equal to the float 2.0: no new value): 37 and 5. With a checkpoint every 10 rows. */
/* a state's slots as wm_sqlagg.c lays them out: n, i, f, t */
typedef struct {
  int64_t n, i;
  double f;
  int64_t t;
} slot_bytes[3];

static void distinct(void) {
  T.current = "sqlagg: COUNT(DISTINCT) and its sets in checkpoints";
  static const wm_sqlagg_def dd[] = {{.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1},
                                     {.kind = WM_SA_COUNT_DISTINCT, .field = "d"},
                                     {.kind = WM_SA_COUNT_STAR}};
  static const wm_sqlagg_out dout[] = {{"dv", WM_SA_OUT_AGG, 0}, {"dd", WM_SA_OUT_AGG, 1}, {"n", WM_SA_OUT_AGG, 2}};
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 3, .aggs = dd, .nout = 3, .out = dout};
  enum { N = 102 };
  static const char *const names[] = {"id", "vc", "d"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_ANY, WM_FT_ANY};
  for (int cut = 0; cut <= N; cut += 10) {
    wm_value state = wm_nil(), aux = wm_nil();
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    wm_op *op = wm_op_new(&ctx, &capture_vt, NULL, "op");
    wm_winfn fn;
    wm_error err;
    wm_error_clear(&err);
    CHECK_I64(wm_winfn_sqlagg(&fn, &spec, &err), 0);
    wm_schema *sc = wm_schema_new(3, names, types);
    for (int i = 0; i < N; i++) {
      if (i == cut) { /* the state as its bytes, into a new value: what a checkpoint does */
        wm_str *copy = wm_str_new(state.u.s ? state.u.s->data : "", state.u.s ? state.u.s->len : 0);
        wm_value_release(NULL, &state);
        state.type = WM_STR;
        state.u.s = copy;
      }
      wm_row *r = wm_row_new(sc);
      r->fields[0] = wm_cstr("a", 1);
      if (i < 100) {
        r->fields[1] = wm_int(i % 37);
        r->fields[2] = wm_float((double)(i % 5) / 2);
      } else if (i == 101) {
        r->fields[2] = wm_int(2);
      }
      wm_value v = wm_row_value(r);
      CHECK_I64(fn.add(fn.ud, op, &state, &aux, &v), WM_OK);
      wm_value_release(NULL, &v);
    }
    wm_value got;
    wm_sqlagg_result(&fn, &state, 0, &got);
    CHECK_I64(got.u.i, 37);
    wm_sqlagg_result(&fn, &state, 1, &got);
    CHECK_I64(got.u.i, 5);
    wm_sqlagg_result(&fn, &state, 2, &got);
    CHECK_I64(got.u.i, N);
    /* merged into a state of 3 rows: vc 36 (known), 40, 41 (new); d 7.5 (new) */
    wm_value b = wm_nil(), baux = wm_nil();
    for (int i = 0; i < 3; i++) {
      wm_row *r = wm_row_new(sc);
      r->fields[1] = wm_int(i == 0 ? 36 : 39 + i);
      r->fields[2] = wm_float(i == 0 ? 7.5 : 1.0);
      wm_value v = wm_row_value(r);
      CHECK_I64(fn.add(fn.ud, op, &b, &baux, &v), WM_OK);
      wm_value_release(NULL, &v);
    }
    CHECK_I64(fn.merge(fn.ud, op, &state, &aux, &b, &baux), WM_OK);
    wm_sqlagg_result(&fn, &state, 0, &got);
    CHECK_I64(got.u.i, 39);
    wm_sqlagg_result(&fn, &state, 1, &got);
    CHECK_I64(got.u.i, 6);
    wm_sqlagg_result(&fn, &state, 2, &got);
    CHECK_I64(got.u.i, N + 3);
    wm_value_release(NULL, &b);
    wm_value_release(NULL, &state);
    if (cut == 0) { /* a state of other aggregates (--allow-state-change): refused, not read */
      slot_bytes bad = {{0, 0, 0.0, 0}, {3, 1 << 20, 0.0, 8}, {0, 0, 0.0, 0}};
      state.type = WM_STR;
      state.u.s = wm_str_new((const char *)bad, sizeof bad);
      wm_row *r = wm_row_new(sc);
      r->fields[1] = wm_int(1);
      r->fields[2] = wm_int(1);
      wm_value v = wm_row_value(r);
      CHECK_I64(fn.add(fn.ud, op, &state, &aux, &v), WM_ERR);
      CHECK(strstr(ctx.error.msg, "does not hold this aggregate's values") != NULL);
      wm_value_release(NULL, &v);
      wm_value_release(NULL, &state);
    }
    wm_schema_release(sc);
    fn.free(fn.ud);
    wm_ctx_free(&ctx);
  }
}

static void bad_specs(void) {
  T.current = "sqlagg: a spec that names nothing is refused";
  wm_winfn fn;
  wm_error err;
  wm_error_clear(&err);
  wm_sqlagg_def d = {.kind = WM_SA_SUM};
  wm_sqlagg_spec spec = {.nkeys = 0, .naggs = 1, .aggs = &d, .nout = 0};
  CHECK_I64(wm_winfn_sqlagg(&fn, &spec, &err), -1);
  CHECK(strstr(err.msg, "no argument") != NULL);
  wm_sqlagg_out o = {"x", WM_SA_OUT_KEY, 0};
  d.field = "vc";
  spec.nout = 1;
  spec.out = &o;
  wm_error_clear(&err);
  CHECK_I64(wm_winfn_sqlagg(&fn, &spec, &err), -1); /* key 0 of no keys */
  CHECK(strstr(err.msg, "names nothing") != NULL);
}

/* ---- an unwindowed GROUP BY (wm_keyedfn_sqlagg in a keyed operator's rolling mode) ---- */

static const wm_sqlagg_def gdefs[] = {{.kind = WM_SA_COUNT, .field = "vc"},
                                      {.kind = WM_SA_MAX, .field = "vc", .integer = 1},
                                      {.kind = WM_SA_AVG, .field = "d"}};
static const wm_sqlagg_out gouts[] = {{"a_id", WM_SA_OUT_KEY, 0}, {"b_nvc", WM_SA_OUT_AGG, 0},
                                      {"c_max", WM_SA_OUT_AGG, 1}, {"d_avgd", WM_SA_OUT_AGG, 2}};

static void group_init_null(rig *g, int null_as) {
  wm_ctx_init(&g->ctx);
  g->s = in_schema();
  g->out = (capture){.label = NULL};
  wm_buf_init(&g->out.out);
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  if (null_as) CHECK_I64(wm_keysel_null_as(&cfg.keysel, "\0<NULL>", 7), 0);
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 3, .aggs = gdefs, .nout = 4, .out = gouts};
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_keyedfn_sqlagg(&cfg.rolling, &spec, &err), 0);
  snprintf(cfg.meaning, sizeof cfg.meaning, "SQL GROUP BY test");
  g->w = wm_keyedop_new(&g->ctx, "group", &cfg);
  wm_op *sink = wm_op_new(&g->ctx, &capture_vt, &g->out, "sink");
  wm_op_connect(g->w, 0, sink);
  wm_op *src = wm_op_new(&g->ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, g->w);
  CHECK_I64(wm_ctx_prepare(&g->ctx), WM_OK);
}

static void group_init(rig *g) { group_init_null(g, 0); }

/* group_init with a mini-batch of `size` records (wm_keyedop_config.minibatch_size) */
static void group_init_batch(rig *g, uint32_t size) {
  wm_ctx_init(&g->ctx);
  g->s = in_schema();
  g->out = (capture){.label = NULL};
  wm_buf_init(&g->out.out);
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 3, .aggs = gdefs, .nout = 4, .out = gouts};
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_keyedfn_sqlagg(&cfg.rolling, &spec, &err), 0);
  snprintf(cfg.meaning, sizeof cfg.meaning, "SQL GROUP BY test");
  cfg.minibatch_size = size;
  g->w = wm_keyedop_new(&g->ctx, "group", &cfg);
  wm_op *sink = wm_op_new(&g->ctx, &capture_vt, &g->out, "sink");
  wm_op_connect(g->w, 0, sink);
  wm_op *src = wm_op_new(&g->ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, g->w);
  CHECK_I64(wm_ctx_prepare(&g->ctx), WM_OK);
}

/* a: vc 5, NULL, 7, NULL; d 1.5, NULL, 2.5, 2.0. b: vc -3, 4; d NULL. */
static const rec group_rs[] = {
    {"a", 1000, V(5), V(1.5)}, {"a", 2000, NUL, NUL},     {"b", 3000, V(-3), NUL},
    {"a", 4000, V(7), V(2.5)}, {"a", 5000, NUL, V(2.0)}, {"b", 6000, V(4), NUL},
};

/* By hand (COUNT(vc), MAX(vc), AVG(d)): a's first row +I 1, 5, 1.5; a's NULL row changes
 * nothing: no row; b +I 1, -3, AVG NULL (absent); a's vc 7, d 2.5: 2, 7, avg 4 / 2 = 2.0;
 * a's vc NULL, d 2.0: COUNT and MAX as they were, avg 6 / 3 = 2.0 unchanged: no row; b's vc 4:
 * 2, 4. Each row at its input's time. */
static const char *const group_expect =
    "1000 {\"k\":\"+I\",\"r\":{\"a_id\":\"a\",\"b_nvc\":1,\"c_max\":5,\"d_avgd\":1.5}}\n"
    "3000 {\"k\":\"+I\",\"r\":{\"a_id\":\"b\",\"b_nvc\":1,\"c_max\":-3}}\n"
    "4000 {\"k\":\"-U\",\"r\":{\"a_id\":\"a\",\"b_nvc\":1,\"c_max\":5,\"d_avgd\":1.5}}\n"
    "4000 {\"k\":\"+U\",\"r\":{\"a_id\":\"a\",\"b_nvc\":2,\"c_max\":7,\"d_avgd\":2.0}}\n"
    "6000 {\"k\":\"-U\",\"r\":{\"a_id\":\"b\",\"b_nvc\":1,\"c_max\":-3}}\n"
    "6000 {\"k\":\"+U\",\"r\":{\"a_id\":\"b\",\"b_nvc\":2,\"c_max\":4}}\n";

/* Every cut: the rows before it, a checkpoint restored into a fresh operator, the rows after
 * it: together the hand-worked changelog (the last result emitted is in the checkpoint too:
 * no row repeated, no unchanged row emitted after the restore). */
static void group_changelog(void) {
  T.current = "sqlagg: an unwindowed GROUP BY's changelog, and checkpoints";
  size_t n = sizeof group_rs / sizeof group_rs[0];
  for (size_t cut = 0; cut <= n; cut++) {
    rig a, b;
    parts ps = {0};
    group_init(&a);
    feed(&a, group_rs, 0, cut);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    group_init(&b);
    int rc = wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n);
    CHECK_I64(rc, WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  restore at %zu: %s\n", cut, wm_ctx_errtext(&b.ctx));
    feed(&b, group_rs, cut, n);
    wm_buf all;
    wm_buf_init(&all);
    wm_buf_adds(&all, a.out.out.data ? a.out.out.data : "");
    wm_buf_adds(&all, b.out.out.data ? b.out.out.data : "");
    CHECK_STR(all.data, group_expect);
    wm_buf_free(&all);
    rig_free(&a);
    rig_free(&b);
    free_parts(&ps);
  }
  /* a window's bound in the result of a GROUP BY without one: refused */
  wm_winfn fn;
  wm_error err;
  wm_error_clear(&err);
  wm_sqlagg_out o = {"w", WM_SA_OUT_START, 0};
  wm_sqlagg_spec spec = {.nkeys = 0, .naggs = 3, .aggs = gdefs, .nout = 1, .out = &o};
  CHECK_I64(wm_keyedfn_sqlagg(&fn, &spec, &err), -1);
  CHECK(strstr(err.msg, "window's bound") != NULL);
}

/* A mini-batch (SET 'table.exec.mini-batch.*'): group_rs's rows, worked out by hand per batch
 * (a key fires once when its batch ends, with what changed since it last emitted, at the time
 * of its last row in the batch).
 * Batches of 3: [a5 a- b-3] +I a {1, 5, 1.5} at 2000, +I b {1, -3} at 3000; [a7 a(2.0) b4]
 * a -U/+U {2, 7, 2.0} at 5000, b -U/+U {2, 4} at 6000.
 * Batches of 2: [a5 a-] +I a at 2000; [b-3 a7] +I b at 3000, a -U/+U at 4000; [a(2.0) b4] a
 * is as it was ({2, 7, 6 / 3 = 2.0}): nothing; b -U/+U at 6000.
 * A watermark ends a batch before it is forwarded; a checkpoint of a batch not ended yet
 * restores into a batch whose end emits what the first run had not. */
static void group_minibatch(void) {
  T.current = "sqlagg: a mini-batch emits a key's change once per batch, and checkpoints";
  const char *A1 = "{\"k\":\"+I\",\"r\":{\"a_id\":\"a\",\"b_nvc\":1,\"c_max\":5,\"d_avgd\":1.5}}\n";
  const char *A1m = "{\"k\":\"-U\",\"r\":{\"a_id\":\"a\",\"b_nvc\":1,\"c_max\":5,\"d_avgd\":1.5}}\n";
  const char *A2 = "{\"k\":\"+U\",\"r\":{\"a_id\":\"a\",\"b_nvc\":2,\"c_max\":7,\"d_avgd\":2.0}}\n";
  const char *A2i = "{\"k\":\"+I\",\"r\":{\"a_id\":\"a\",\"b_nvc\":2,\"c_max\":7,\"d_avgd\":2.0}}\n";
  const char *B1 = "{\"k\":\"+I\",\"r\":{\"a_id\":\"b\",\"b_nvc\":1,\"c_max\":-3}}\n";
  const char *B1m = "{\"k\":\"-U\",\"r\":{\"a_id\":\"b\",\"b_nvc\":1,\"c_max\":-3}}\n";
  const char *B2 = "{\"k\":\"+U\",\"r\":{\"a_id\":\"b\",\"b_nvc\":2,\"c_max\":4}}\n";
  const char *B2i = "{\"k\":\"+I\",\"r\":{\"a_id\":\"b\",\"b_nvc\":2,\"c_max\":4}}\n";
  char want[2048];
  size_t n = sizeof group_rs / sizeof group_rs[0];
  rig g;
  group_init_batch(&g, 3);
  feed(&g, group_rs, 0, n);
  snprintf(want, sizeof want, "2000 %s3000 %s5000 %s5000 %s6000 %s6000 %s", A1, B1, A1m, A2, B1m, B2);
  CHECK_STR(g.out.out.data, want);
  rig_free(&g);
  group_init_batch(&g, 2);
  feed(&g, group_rs, 0, n);
  snprintf(want, sizeof want, "2000 %s3000 %s4000 %s4000 %s6000 %s6000 %s", A1, B1, A1m, A2, B1m, B2);
  CHECK_STR(g.out.out.data, want);
  rig_free(&g);
  /* a watermark ends the batch (of 100 rows) */
  group_init_batch(&g, 100);
  feed(&g, group_rs, 0, 2);
  CHECK(g.out.out.data == NULL || g.out.out.len == 0);
  CHECK_I64(wm_op_input_watermark(g.w, 0, 2500), WM_OK);
  snprintf(want, sizeof want, "2000 %s", A1);
  CHECK_STR(g.out.out.data, want);
  rig_free(&g);
  /* batches of 100 cut at every row: nothing emitted before the cut; after the restore the
   * final watermark's batch emits each key once, +I, at its last row after the cut (or, a key
   * no row of which came after the cut, with no time: math.mininteger) */
  for (size_t cut = 0; cut <= n; cut++) {
    rig a, b;
    parts ps = {0};
    group_init_batch(&a, 100);
    feed(&a, group_rs, 0, cut);
    CHECK(a.out.out.data == NULL || a.out.out.len == 0);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    rig_free(&a);
    group_init_batch(&b, 100);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n), WM_OK);
    feed(&b, group_rs, cut, n);
    CHECK_I64(wm_op_input_watermark(b.w, 0, WM_TIME_MAX), WM_OK);
    snprintf(want, sizeof want, "%lld %s%lld %s", cut <= 4 ? 5000LL : (long long)WM_TIME_MIN, A2i,
             cut <= 5 ? 6000LL : (long long)WM_TIME_MIN, B2i);
    CHECK_STR(b.out.out.data, want);
    if (b.out.out.data && strcmp(b.out.out.data, want) != 0) fprintf(stderr, "  at cut %zu\n", cut);
    rig_free(&b);
    free_parts(&ps);
  }
  /* batches of 2 cut after b-3: the first run emitted +I a; the restored one's first batch
   * [a7 a(2.0)] ends with a's change and b's row of the first run (no time), the last [b4] at
   * the final watermark */
  {
    rig a, b;
    parts ps = {0};
    group_init_batch(&a, 2);
    feed(&a, group_rs, 0, 3);
    snprintf(want, sizeof want, "2000 %s", A1);
    CHECK_STR(a.out.out.data, want);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    rig_free(&a);
    group_init_batch(&b, 2);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n), WM_OK);
    feed(&b, group_rs, 3, n);
    CHECK_I64(wm_op_input_watermark(b.w, 0, WM_TIME_MAX), WM_OK);
    snprintf(want, sizeof want, "5000 %s5000 %s%lld %s6000 %s6000 %s", A1m, A2, (long long)WM_TIME_MIN, B1,
             B1m, B2);
    CHECK_STR(b.out.out.data, want);
    rig_free(&b);
    free_parts(&ps);
  }
}

/* A key field that is missing (SQL's NULL key, computed in C by the planner's projection):
 * with wm_keysel_null_as it is the key "\0<NULL>" (the Lua key function's NULL_KEY), a group
 * of its own whose result row has no key field (NULL); without it, an error naming the field
 * and the record. By hand: NULL vc 5 -> +I {1, 5}; a vc 1 -> +I {a, 1, 1}; NULL vc 7 ->
 * -U {1, 5}, +U {2, 7}; a vc NULL: nothing changes. */
static void group_null_key(void) {
  T.current = "sqlagg: a missing key field is the NULL group with wm_keysel_null_as";
  static const rec rs[] = {{NULL, 1000, V(5), NUL}, {"a", 2000, V(1), NUL}, {NULL, 3000, V(7), NUL},
                           {"a", 4000, NUL, NUL}};
  rig g;
  group_init_null(&g, 1);
  feed(&g, rs, 0, 4);
  CHECK_STR(g.out.out.data ? g.out.out.data : "",
            "1000 {\"k\":\"+I\",\"r\":{\"b_nvc\":1,\"c_max\":5}}\n"
            "2000 {\"k\":\"+I\",\"r\":{\"a_id\":\"a\",\"b_nvc\":1,\"c_max\":1}}\n"
            "3000 {\"k\":\"-U\",\"r\":{\"b_nvc\":1,\"c_max\":5}}\n"
            "3000 {\"k\":\"+U\",\"r\":{\"b_nvc\":2,\"c_max\":7}}\n");
  rig_free(&g);
  /* without it: the record is refused, naming the field */
  group_init_null(&g, 0);
  wm_row *r = wm_row_new(g.s);
  r->fields[1] = wm_int(5);
  wm_value v = wm_row_value(r);
  CHECK_I64(wm_op_input_record(g.w, 0, &v, 1000), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&g.ctx), "key field 'id' is missing") != NULL);
  wm_value_release(NULL, &v);
  rig_free(&g);
  /* only a field selector takes it */
  wm_keysel ks = {0};
  CHECK_I64(wm_keysel_null_as(&ks, "x", 1), -1);
}

/* ---- over an updating input: the retracting accumulators ----------------------------- */

static wm_schema *change_schema(void) {
  static const char *const names[] = {"k", "r"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_ANY};
  return wm_schema_new(2, names, types);
}

/* A change {k = kind, r = {id, vc, d}} (has_vc/has_d 0: NULL). */
static wm_value change(wm_schema *cs, wm_schema *rs, const char *kind, const char *id, int has_vc, int64_t vc,
                       int has_d, wm_value d) {
  wm_row *r = wm_row_new(rs);
  r->fields[0] = wm_cstr(id, strlen(id));
  wm_value_retain(NULL, &r->fields[0]);
  if (has_vc) r->fields[1] = wm_int(vc);
  if (has_d) r->fields[2] = d;
  wm_row *c = wm_row_new(cs);
  c->fields[0] = wm_cstr(kind, 2);
  wm_value_retain(NULL, &c->fields[0]);
  c->fields[1] = wm_row_value(r);
  return wm_row_value(c);
}

/* A result as text ("NULL", an integer, or a float with a '.'). */
static void result_text(const wm_winfn *fn, const wm_value *acc, size_t i, char *out, size_t n) {
  wm_value v;
  wm_sqlagg_result(fn, acc, i, &v);
  if (v.type == WM_NIL) snprintf(out, n, "NULL");
  else if (v.type == WM_INT) snprintf(out, n, "%lld", (long long)v.u.i);
  else snprintf(out, n, "%.2f", v.u.f);
}

/* MAX, MIN, COUNT(DISTINCT) of vc, MAX of a DOUBLE d, SUM, AVG, COUNT(*), COUNT(vc) through
 * adds and retractions, each result worked out by hand: MAX retracted to its duplicate, then
 * to the next one, then to none; the integer 2 in the DOUBLE column the same value as 2.0 (a
 * duplicate), given back as 2.0; a retraction of a value never added changes no multiset. */
static void retracting(void) {
  T.current = "sqlagg: retracting accumulators (MAX to the next, to none, duplicates)";
  static const wm_sqlagg_def rd[] = {
      {.kind = WM_SA_MAX, .field = "vc", .integer = 1}, {.kind = WM_SA_MIN, .field = "vc", .integer = 1},
      {.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1}, {.kind = WM_SA_MAX, .field = "d"},
      {.kind = WM_SA_SUM, .field = "vc", .integer = 1}, {.kind = WM_SA_AVG, .field = "vc", .integer = 1},
      {.kind = WM_SA_COUNT_STAR}, {.kind = WM_SA_COUNT, .field = "vc"}};
  static const wm_sqlagg_out ro[] = {{"m", WM_SA_OUT_AGG, 0}};
  wm_sqlagg_spec spec = {.nkeys = 0, .naggs = 8, .aggs = rd, .nout = 1, .out = ro, .updating = 1};
  static const struct {
    const char *kind;
    int has_vc;
    int64_t vc;
    int has_d, d_int;
    double d;
    const char *expect; /* max min dv maxd sum avg n nvc */
  } steps[] = {
      {"+I", V(5), 1, 0, 2.0, "5 5 1 2.00 5 5 1 1"},
      {"+U", V(9), 1, 1, 2, "9 5 2 2.00 14 7 2 2"},
      {"+I", V(9), 1, 0, -1.5, "9 5 2 2.00 23 7 3 3"},
      {"+I", V(7), 0, 0, 0, "9 5 3 2.00 30 7 4 4"},
      {"-U", V(9), 1, 1, 2, "9 5 3 2.00 21 7 3 3"},   /* a 9 left, 2.0 once */
      {"-D", V(9), 1, 0, -1.5, "7 5 2 2.00 12 6 2 2"}, /* the next MAX */
      {"-U", V(5), 1, 0, 2.0, "7 7 1 NULL 7 7 1 1"},   /* MAX(d): none left */
      {"-D", V(7), 0, 0, 0, "NULL NULL 0 NULL NULL NULL 0 0"},
      {"+I", V(3), 0, 0, 0, "3 3 1 NULL 3 3 1 1"},
      {"+I", V(3), 0, 0, 0, "3 3 1 NULL 6 3 2 2"},
      {"-U", V(8), 0, 0, 0, "3 3 1 NULL -2 -2 1 1"}, /* 8 was never added: the multisets keep 3 */
  };
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &capture_vt, NULL, "op");
  wm_winfn fn;
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_keyedfn_sqlagg(&fn, &spec, &err), 0);
  wm_schema *cs = change_schema(), *rs = in_schema();
  wm_value state = wm_nil(), aux = wm_nil();
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    wm_value d = steps[i].d_int ? wm_int((int64_t)steps[i].d) : wm_float(steps[i].d);
    wm_value c = change(cs, rs, steps[i].kind, "a", steps[i].has_vc, steps[i].vc, steps[i].has_d, d);
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &c), WM_OK);
    wm_value_release(NULL, &c);
    char got[200] = "", one[40];
    for (size_t k = 0; k < 8; k++) {
      result_text(&fn, &state, k, one, sizeof one);
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? " " : "", one);
    }
    CHECK_STR(got, steps[i].expect);
    if (i == 5) { /* the state as its bytes, into a new value: what a checkpoint does */
      wm_str *copy = wm_str_new(state.u.s->data, state.u.s->len);
      wm_value_release(NULL, &state);
      state.type = WM_STR;
      state.u.s = copy;
    }
  }
  wm_value_release(NULL, &state);
  /* 100 values (the arrays grow), the top 70 retracted from the top (MAX to the next each
   * time), the bottom 25 from the bottom (MIN to the next; tombstones, compacted when they
   * outnumber the values by 8), then a value retracted before, a duplicate, and a new top */
  state = wm_nil();
  for (int64_t x = 0; x < 100; x++) {
    wm_value c = change(cs, rs, "+I", "a", V(x), 1, wm_float((double)x / 2));
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &c), WM_OK);
    wm_value_release(NULL, &c);
  }
  for (int64_t x = 99; x >= 30; x--) {
    wm_value c = change(cs, rs, "-U", "a", V(x), 1, wm_float((double)x / 2)), got;
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &c), WM_OK);
    wm_value_release(NULL, &c);
    wm_sqlagg_result(&fn, &state, 0, &got);
    CHECK_I64(got.u.i, x - 1);
  }
  for (int64_t x = 0; x < 25; x++) {
    wm_value c = change(cs, rs, "-D", "a", V(x), 1, wm_float((double)x / 2)), got;
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &c), WM_OK);
    wm_value_release(NULL, &c);
    wm_sqlagg_result(&fn, &state, 1, &got);
    CHECK_I64(got.u.i, x + 1);
  }
  static const struct {
    int64_t vc;
    const char *expect; /* max min dv maxd */
  } more[] = {{50, "50 25 6 25.00"}, {27, "50 25 6 25.00"}, {120, "120 25 7 60.00"}};
  for (size_t i = 0; i < 3; i++) {
    wm_value c = change(cs, rs, "+I", "a", V(more[i].vc), 1, wm_float((double)more[i].vc / 2));
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &c), WM_OK);
    wm_value_release(NULL, &c);
    char got[200] = "", one[40];
    for (size_t k = 0; k < 4; k++) {
      result_text(&fn, &state, k, one, sizeof one);
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? " " : "", one);
    }
    CHECK_STR(got, more[i].expect);
  }
  wm_value_release(NULL, &state);
  /* a retraction first: no state made */
  wm_value c = change(cs, rs, "-U", "a", V(1), 0, wm_nil());
  CHECK_I64(fn.add(fn.ud, op, &state, &aux, &c), WM_OK);
  CHECK_I64(state.type, WM_NIL);
  /* a state of other aggregates (--allow-state-change): refused, not read */
  slot_bytes bad[3] = {{{2, 1 << 20, 0.0, 4}, {0, 0, 0.0, 0}, {0, 0, 0.0, 0}},
                       {{0, 0, 0.0, 0}, {0, 0, 0.0, 0}, {0, 0, 0.0, 0}},
                       {{0, 0, 0.0, 0}, {0, 0, 0.0, 0}, {0, 0, 0.0, 0}}};
  state.type = WM_STR;
  state.u.s = wm_str_new((const char *)bad, sizeof bad);
  wm_value p = change(cs, rs, "+I", "a", V(1), 0, wm_nil());
  CHECK_I64(fn.add(fn.ud, op, &state, &aux, &p), WM_ERR);
  CHECK(strstr(ctx.error.msg, "does not hold this aggregate's values") != NULL);
  wm_value_release(NULL, &p);
  wm_value_release(NULL, &c);
  wm_value_release(NULL, &state);
  /* a record that is not a change */
  wm_row *r = wm_row_new(rs);
  wm_value plain = wm_row_value(r);
  state = wm_nil();
  CHECK_I64(fn.add(fn.ud, op, &state, &aux, &plain), WM_ERR);
  CHECK(strstr(ctx.error.msg, "is not a change") != NULL);
  wm_value_release(NULL, &plain);
  wm_schema_release(cs);
  wm_schema_release(rs);
  fn.free(fn.ud);
  wm_ctx_free(&ctx);
}

/* The key of a change: its row's id. */
static int change_key(void *ud, wm_op *op, const wm_value *c, wm_value *key) {
  (void)ud;
  (void)op;
  *key = c->u.row->fields[1].u.row->fields[0];
  return WM_OK;
}

static void change_group_init(rig *g) {
  wm_ctx_init(&g->ctx);
  g->s = change_schema();
  g->out = (capture){.label = NULL};
  wm_buf_init(&g->out.out);
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.keysel.fn = change_key;
  static const wm_sqlagg_def cd[] = {{.kind = WM_SA_COUNT_STAR}, {.kind = WM_SA_MAX, .field = "vc", .integer = 1}};
  static const wm_sqlagg_out co[] = {{"a_id", WM_SA_OUT_KEY, 0}, {"b_n", WM_SA_OUT_AGG, 0}, {"c_max", WM_SA_OUT_AGG, 1}};
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 2, .aggs = cd, .nout = 3, .out = co, .updating = 1};
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_keyedfn_sqlagg(&cfg.rolling, &spec, &err), 0);
  snprintf(cfg.meaning, sizeof cfg.meaning, "SQL GROUP BY (retract) test");
  g->w = wm_keyedop_new(&g->ctx, "group", &cfg);
  wm_op *sink = wm_op_new(&g->ctx, &capture_vt, &g->out, "sink");
  wm_op_connect(g->w, 0, sink);
  wm_op *src = wm_op_new(&g->ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, g->w);
  CHECK_I64(wm_ctx_prepare(&g->ctx), WM_OK);
}

static const struct {
  const char *kind, *id;
  int64_t vc;
} changes[] = {{"+I", "a", 5}, {"+I", "b", 7}, {"-U", "a", 5}, {"+U", "a", 9},
               {"-D", "b", 7}, {"+I", "b", 1}, {"-D", "z", 3}, {"-D", "a", 9}};

/* By hand: a +I 1, 5; b +I 1, 7; a's only row retracted: -D of its last row, the group gone;
 * a's new row: +I 1, 9 (a new group); b -D; b +I 1, 1; z never seen: nothing; a -D. Each row
 * at its input's time (1000 i). */
static const char *const change_expect =
    "0 {\"k\":\"+I\",\"r\":{\"a_id\":\"a\",\"b_n\":1,\"c_max\":5}}\n"
    "1000 {\"k\":\"+I\",\"r\":{\"a_id\":\"b\",\"b_n\":1,\"c_max\":7}}\n"
    "2000 {\"k\":\"-D\",\"r\":{\"a_id\":\"a\",\"b_n\":1,\"c_max\":5}}\n"
    "3000 {\"k\":\"+I\",\"r\":{\"a_id\":\"a\",\"b_n\":1,\"c_max\":9}}\n"
    "4000 {\"k\":\"-D\",\"r\":{\"a_id\":\"b\",\"b_n\":1,\"c_max\":7}}\n"
    "5000 {\"k\":\"+I\",\"r\":{\"a_id\":\"b\",\"b_n\":1,\"c_max\":1}}\n"
    "7000 {\"k\":\"-D\",\"r\":{\"a_id\":\"a\",\"b_n\":1,\"c_max\":9}}\n";

static void change_feed(rig *g, wm_schema *rs, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) {
    wm_value c = change(g->s, rs, changes[i].kind, changes[i].id, V(changes[i].vc), 0, wm_nil());
    CHECK_I64(wm_op_input_record(g->w, 0, &c, (int64_t)i * 1000), WM_OK);
    wm_value_release(NULL, &c);
  }
}

/* A keyed operator over changes: groups deleted (-D, the key dropped) and made again; a
 * checkpoint at every cut restored into a fresh operator gives the same changelog. */
static void change_changelog(void) {
  T.current = "sqlagg: a GROUP BY over an updating input: -D, groups made again, checkpoints";
  size_t n = sizeof changes / sizeof changes[0];
  wm_schema *rs = in_schema();
  for (size_t cut = 0; cut <= n; cut++) {
    rig a, b;
    parts ps = {0};
    change_group_init(&a);
    change_feed(&a, rs, 0, cut);
    if (cut == 3) CHECK_I64(wm_keyedop_keys(a.w), 1); /* (a's group gone with its key) */
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    change_group_init(&b);
    int rc = wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n);
    CHECK_I64(rc, WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  restore at %zu: %s\n", cut, wm_ctx_errtext(&b.ctx));
    change_feed(&b, rs, cut, n);
    if (cut == 0) CHECK_I64(wm_keyedop_keys(b.w), 1); /* b only */
    wm_buf all;
    wm_buf_init(&all);
    wm_buf_adds(&all, a.out.out.data ? a.out.out.data : "");
    wm_buf_adds(&all, b.out.out.data ? b.out.out.data : "");
    CHECK_STR(all.data, change_expect);
    wm_buf_free(&all);
    rig_free(&a);
    rig_free(&b);
    free_parts(&ps);
  }
  wm_schema_release(rs);
}

/* A result as text, a string in quotes (borrowed from the state: copied here). */
static void str_text(const wm_winfn *fn, const wm_value *acc, size_t i, char *out, size_t n) {
  wm_value v;
  wm_sqlagg_result(fn, acc, i, &v);
  if (v.type == WM_NIL) {
    snprintf(out, n, "NULL");
  } else if (wm_value_is_string(&v)) {
    size_t len;
    const char *p = wm_value_str(&v, &len);
    snprintf(out, n, "'%.*s'", (int)len, p);
  } else {
    snprintf(out, n, "%lld", (long long)v.u.i);
  }
}

static wm_value str_rec(wm_schema *sc, const char *s, int64_t vc) {
  wm_row *r = wm_row_new(sc);
  r->fields[0] = wm_cstr("k", 1);
  wm_value_retain(NULL, &r->fields[0]);
  if (s) {
    r->fields[1] = wm_cstr(s, strlen(s));
    wm_value_retain(NULL, &r->fields[1]);
  }
  r->fields[2] = wm_int(vc);
  return wm_row_value(r);
}

static void str_state(const wm_winfn *fn, const wm_value *acc, char *got, size_t n) {
  char one[120];
  got[0] = '\0';
  for (size_t k = 0; k < 4; k++) {
    str_text(fn, acc, k, one, sizeof one);
    snprintf(got + strlen(got), n - strlen(got), "%s%s", k ? " " : "", one);
  }
}

/* MIN and MAX of strings in a window's state, worked out by hand: by bytes, unsigned ("é",
 * C3 A9, after "z"), a prefix first, the empty string a value, NULL none; the strings kept
 * while the COUNT(DISTINCT) table beside them grows (its area moved to the end, the state
 * rebuilt) and while a longer string grows theirs; the state's bytes copied into a new value
 * (a checkpoint); two states merged (a session). */
static void strings(void) {
  T.current = "sqlagg: MIN and MAX of strings (bytes' order, growth, checkpoint, merge)";
  static const char *const names[] = {"id", "s", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_STRING, WM_FT_INTEGER};
  wm_schema *sc = wm_schema_new(3, names, types);
  static const wm_sqlagg_def sd[] = {{.kind = WM_SA_MIN, .field = "s"}, {.kind = WM_SA_MAX, .field = "s"},
                                     {.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1},
                                     {.kind = WM_SA_COUNT, .field = "s"}};
  static const wm_sqlagg_out so[] = {{"m", WM_SA_OUT_AGG, 0}};
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 4, .aggs = sd, .nout = 1, .out = so};
  static const struct {
    const char *s;
    int64_t vc;
    const char *expect; /* min max dv count */
  } steps[] = {
      {NULL, 1, "NULL NULL 1 0"},
      {"b", 2, "'b' 'b' 2 1"},
      {"abc", 2, "'abc' 'b' 2 2"},
      {"ab", 3, "'ab' 'b' 3 3"},       /* a prefix first */
      {"z", 4, "'ab' 'z' 4 4"},
      {"\xc3\xa9", 5, "'ab' '\xc3\xa9' 5 5"}, /* é: C3 > 7A */
      {"", 6, "'' '\xc3\xa9' 6 6"},    /* the empty string: the least */
      {NULL, 7, "'' '\xc3\xa9' 7 6"},
      {"\xc3\xa9\xc3\xa9 and a longer string", 8, "'' '\xc3\xa9\xc3\xa9 and a longer string' 8 7"},
      {"b", 9, "'' '\xc3\xa9\xc3\xa9 and a longer string' 9 8"},
  };
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &capture_vt, NULL, "op");
  wm_winfn fn;
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_winfn_sqlagg(&fn, &spec, &err), 0);
  wm_value state = wm_nil(), aux = wm_nil();
  char got[400];
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    wm_value r = str_rec(sc, steps[i].s, steps[i].vc);
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &r), WM_OK);
    wm_value_release(NULL, &r);
    str_state(&fn, &state, got, sizeof got);
    CHECK_STR(got, steps[i].expect);
    if (i == 4) { /* the state as its bytes, into a new value: what a checkpoint does */
      wm_str *copy = wm_str_new(state.u.s->data, state.u.s->len);
      wm_value_release(NULL, &state);
      state.type = WM_STR;
      state.u.s = copy;
    }
  }
  /* 200 more distinct values (the table grows from 16 to 512 entries): the strings stay */
  for (int64_t x = 100; x < 300; x++) {
    wm_value r = str_rec(sc, "c", x);
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &r), WM_OK);
    wm_value_release(NULL, &r);
  }
  str_state(&fn, &state, got, sizeof got);
  CHECK_STR(got, "'' '\xc3\xa9\xc3\xa9 and a longer string' 209 208");
  /* a session's merge: b's strings where they are better */
  wm_value b = wm_nil(), baux = wm_nil();
  static const char *const bs[] = {"\xf0\x9d\x84\x9e", "!", NULL};
  for (size_t i = 0; i < 3; i++) {
    wm_value r = str_rec(sc, bs[i], 1);
    CHECK_I64(fn.add(fn.ud, op, &b, &baux, &r), WM_OK);
    wm_value_release(NULL, &r);
  }
  str_state(&fn, &b, got, sizeof got);
  CHECK_STR(got, "'!' '\xf0\x9d\x84\x9e' 1 2");
  CHECK_I64(fn.merge(fn.ud, op, &state, &aux, &b, &baux), WM_OK);
  str_state(&fn, &state, got, sizeof got);
  /* min: '' stays (before '!'); max: 𝄞 (F0) after é (C3); 1 was counted; 208 + 2 values */
  CHECK_STR(got, "'' '\xf0\x9d\x84\x9e' 209 210");
  /* the other way: an empty state takes b's */
  wm_value e = wm_nil(), eaux = wm_nil();
  CHECK_I64(fn.merge(fn.ud, op, &e, &eaux, &b, &baux), WM_OK);
  str_state(&fn, &e, got, sizeof got);
  CHECK_STR(got, "'!' '\xf0\x9d\x84\x9e' 1 2");
  /* a number in a column of strings: refused, named */
  wm_row *nr = wm_row_new(sc);
  nr->fields[1] = wm_int(3);
  wm_value nv = wm_row_value(nr);
  CHECK_I64(fn.add(fn.ud, op, &state, &aux, &nv), WM_ERR);
  CHECK(strstr(ctx.error.msg, "a number among strings") != NULL);
  wm_value_release(NULL, &nv);
  wm_value_release(NULL, &state);
  wm_value_release(NULL, &b);
  wm_value_release(NULL, &e);
  wm_value_release(NULL, &aux);
  wm_value_release(NULL, &baux);
  wm_value_release(NULL, &eaux);
  fn.free(fn.ud);
  wm_schema_release(sc);
  wm_ctx_free(&ctx);
}

/* An unwindowed GROUP BY (key vc) of MIN(id), MAX(id), strings, by hand: b -> +I 1, b, b;
 * a -> -U, +U 1, a, b; c -> 1, a, c; vc 2's b -> +I 2, b, b; '' -> 1, '', c; NULL id and c
 * again change nothing: no row. A checkpoint at every cut (the last row, its strings in
 * aux, restored) gives the same changelog. */
static const rec str_group_rs[] = {{"b", 1000, V(1), NUL}, {"a", 2000, V(1), NUL}, {"c", 3000, V(1), NUL},
                                   {"b", 4000, V(2), NUL}, {"", 5000, V(1), NUL},  {NULL, 6000, V(1), NUL},
                                   {"c", 7000, V(1), NUL}};
static const char *const str_group_expect =
    "1000 {\"k\":\"+I\",\"r\":{\"a_vc\":1,\"b_min\":\"b\",\"c_max\":\"b\"}}\n"
    "2000 {\"k\":\"-U\",\"r\":{\"a_vc\":1,\"b_min\":\"b\",\"c_max\":\"b\"}}\n"
    "2000 {\"k\":\"+U\",\"r\":{\"a_vc\":1,\"b_min\":\"a\",\"c_max\":\"b\"}}\n"
    "3000 {\"k\":\"-U\",\"r\":{\"a_vc\":1,\"b_min\":\"a\",\"c_max\":\"b\"}}\n"
    "3000 {\"k\":\"+U\",\"r\":{\"a_vc\":1,\"b_min\":\"a\",\"c_max\":\"c\"}}\n"
    "4000 {\"k\":\"+I\",\"r\":{\"a_vc\":2,\"b_min\":\"b\",\"c_max\":\"b\"}}\n"
    "5000 {\"k\":\"-U\",\"r\":{\"a_vc\":1,\"b_min\":\"a\",\"c_max\":\"c\"}}\n"
    "5000 {\"k\":\"+U\",\"r\":{\"a_vc\":1,\"b_min\":\"\",\"c_max\":\"c\"}}\n";

static void str_group_init(rig *g) {
  wm_ctx_init(&g->ctx);
  g->s = in_schema();
  g->out = (capture){.label = NULL};
  wm_buf_init(&g->out.out);
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  const char *key = "vc";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  static const wm_sqlagg_def d[] = {{.kind = WM_SA_MIN, .field = "id"}, {.kind = WM_SA_MAX, .field = "id"}};
  static const wm_sqlagg_out o[] = {{"a_vc", WM_SA_OUT_KEY, 0}, {"b_min", WM_SA_OUT_AGG, 0}, {"c_max", WM_SA_OUT_AGG, 1}};
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 2, .aggs = d, .nout = 3, .out = o};
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_keyedfn_sqlagg(&cfg.rolling, &spec, &err), 0);
  snprintf(cfg.meaning, sizeof cfg.meaning, "SQL GROUP BY strings");
  g->w = wm_keyedop_new(&g->ctx, "group", &cfg);
  wm_op *sink = wm_op_new(&g->ctx, &capture_vt, &g->out, "sink");
  wm_op_connect(g->w, 0, sink);
  wm_op *src = wm_op_new(&g->ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, g->w);
  CHECK_I64(wm_ctx_prepare(&g->ctx), WM_OK);
}

static void str_group(void) {
  T.current = "sqlagg: an unwindowed GROUP BY of strings' changelog, and checkpoints";
  size_t n = sizeof str_group_rs / sizeof str_group_rs[0];
  for (size_t cut = 0; cut <= n; cut++) {
    rig a, b;
    parts ps = {0};
    str_group_init(&a);
    feed(&a, str_group_rs, 0, cut);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    str_group_init(&b);
    CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n), WM_OK);
    feed(&b, str_group_rs, cut, n);
    wm_buf all;
    wm_buf_init(&all);
    wm_buf_adds(&all, a.out.out.data ? a.out.out.data : "");
    wm_buf_adds(&all, b.out.out.data ? b.out.out.data : "");
    CHECK_STR(all.data, str_group_expect);
    wm_buf_free(&all);
    rig_free(&a);
    rig_free(&b);
    free_parts(&ps);
  }
}

static wm_value num_rec(wm_schema *sc, int has_vc, int64_t vc, int has_d, double d) {
  wm_row *r = wm_row_new(sc);
  r->fields[0] = wm_cstr("k", 1);
  wm_value_retain(NULL, &r->fields[0]);
  if (has_vc) r->fields[1] = wm_int(vc);
  if (has_d) r->fields[2] = wm_float(d);
  return wm_row_value(r);
}

static void counts_text(const wm_winfn *fn, const wm_value *acc, size_t n, char *got, size_t len) {
  char one[40];
  got[0] = '\0';
  for (size_t k = 0; k < n; k++) {
    result_text(fn, acc, k, one, sizeof one);
    snprintf(got + strlen(got), len - strlen(got), "%s%s", k ? " " : "", one);
  }
}

/* COUNT(DISTINCT vc) three times (all, FILTER vc > 2, FILTER vc <= 2: one shared table, a bit
 * each) and COUNT(DISTINCT d) (a table of its own), by hand: vc 1, 3, 3, 2, 5, NULL, 1, 7 ->
 * {1, 2, 3, 5, 7} 5, {3, 5, 7} 3, {1, 2} 2; d 1.5, NULL, 2.0, 2.0, 0.5, 1.5, NULL, 3.0 -> 4.
 * Then 100..199 (the shared table grows from 8 to 256 entries): 105, 103, 2; the state copied
 * as bytes (a checkpoint) on the way; a session's merge of vc 1, 2, 500: 106, 104, 2. */
static void shared_distinct(void) {
  T.current = "sqlagg: COUNT(DISTINCT)s of one column share a table";
  static const wm_sqlagg_cond gt2[] = {{"vc", WM_SA_GT, {.type = WM_INT, .u.i = 2}}};
  static const wm_sqlagg_cond le2[] = {{"vc", WM_SA_LE, {.type = WM_INT, .u.i = 2}}};
  static const wm_sqlagg_def dd[] = {
      {.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1},
      {.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1, .ncond = 1, .cond = gt2},
      {.kind = WM_SA_COUNT_DISTINCT, .field = "d"},
      {.kind = WM_SA_COUNT_DISTINCT, .field = "vc", .integer = 1, .ncond = 1, .cond = le2}};
  static const wm_sqlagg_out o[] = {{"m", WM_SA_OUT_AGG, 0}};
  wm_sqlagg_spec spec = {.nkeys = 1, .naggs = 4, .aggs = dd, .nout = 1, .out = o};
  static const struct {
    int has_vc;
    int64_t vc;
    int has_d;
    double d;
  } rs[] = {{V(1), V(1.5)}, {V(3), NUL}, {V(3), V(2.0)}, {V(2), V(2.0)},
            {V(5), V(0.5)}, {NUL, V(1.5)}, {V(1), NUL},  {V(7), V(3.0)}};
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_op *op = wm_op_new(&ctx, &capture_vt, NULL, "op");
  wm_schema *sc = in_schema();
  wm_winfn fn;
  wm_error err;
  wm_error_clear(&err);
  CHECK_I64(wm_winfn_sqlagg(&fn, &spec, &err), 0);
  wm_value state = wm_nil(), aux = wm_nil();
  char got[200];
  for (size_t i = 0; i < 8; i++) {
    wm_value r = num_rec(sc, rs[i].has_vc, rs[i].vc, rs[i].has_d, rs[i].d);
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &r), WM_OK);
    wm_value_release(NULL, &r);
  }
  counts_text(&fn, &state, 4, got, sizeof got);
  CHECK_STR(got, "5 3 4 2");
  for (int64_t x = 100; x < 200; x++) {
    if (x == 150) { /* the state as its bytes, into a new value: what a checkpoint does */
      wm_str *copy = wm_str_new(state.u.s->data, state.u.s->len);
      wm_value_release(NULL, &state);
      state.type = WM_STR;
      state.u.s = copy;
    }
    wm_value r = num_rec(sc, V(x), NUL);
    CHECK_I64(fn.add(fn.ud, op, &state, &aux, &r), WM_OK);
    wm_value_release(NULL, &r);
  }
  counts_text(&fn, &state, 4, got, sizeof got);
  CHECK_STR(got, "105 103 4 2");
  wm_value b = wm_nil(), baux = wm_nil();
  static const int64_t bv[] = {1, 2, 500};
  for (size_t i = 0; i < 3; i++) {
    wm_value r = num_rec(sc, V(bv[i]), NUL);
    CHECK_I64(fn.add(fn.ud, op, &b, &baux, &r), WM_OK);
    wm_value_release(NULL, &r);
  }
  counts_text(&fn, &b, 4, got, sizeof got);
  CHECK_STR(got, "3 1 0 2");
  CHECK_I64(fn.merge(fn.ud, op, &state, &aux, &b, &baux), WM_OK);
  counts_text(&fn, &state, 4, got, sizeof got);
  CHECK_STR(got, "106 104 4 2");
  wm_value_release(NULL, &state);
  wm_value_release(NULL, &b);
  wm_value_release(NULL, &aux);
  wm_value_release(NULL, &baux);
  fn.free(fn.ud);
  wm_schema_release(sc);
  wm_ctx_free(&ctx);
}

void test_sqlagg(void) {
  shared_distinct();
  strings();
  str_group();
  retracting();
  change_changelog();
  group_changelog();
  group_minibatch();
  group_null_key();
  hand_worked();
  session_merge();
  snapshot_restore();
  distinct();
  bad_specs();
}
