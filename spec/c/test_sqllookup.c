/* The SQL lookup join in C (ops/wm_sqllookup.h), driven directly with C rows: probe rows
 * {k, id}, side rows {sk, v} read by a test loader, joined rows {id, k, v}. Every expected
 * output is worked out by hand next to each case from the rules in the header (the Lua path's:
 * the table's order, NULL keys meet nothing, numbers meet as Lua's key strings do). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/wm_sqllookup.h"
#include "test.h"

static int src_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}
static const wm_op_vt src_vt = {.kind = "source", .record = src_record};

/* the side table the loader gives: n rows of (sk, v), sk an integer, a float, a string or
 * NULL */
typedef struct srow {
  char kind; /* 'i', 'f', 's', 0 (NULL) */
  int64_t i;
  double f;
  const char *s;
  const char *v;
} srow;

typedef struct lfix {
  wm_ctx ctx;
  wm_op *j;
  capture out;
  wm_schema *ps;
  const srow *side;
  size_t nside;
  int loads, fail;
  int64_t now;
} lfix;

static int64_t vnow(void *ud) { return ((lfix *)ud)->now; }

static wm_value str_of(const char *s) {
  wm_value v = wm_nil();
  if (s) {
    v.type = WM_STR;
    v.u.s = wm_str_new(s, strlen(s));
  }
  return v;
}

static int loader(void *ud, wm_value **vals, size_t *nrows, wm_error *err) {
  lfix *f = ud;
  f->loads++;
  if (f->fail) return wm_error_set(err, "side.csv: no such file");
  wm_value *v = calloc(f->nside * 2 + 1, sizeof *v);
  if (!v) return wm_error_set(err, "out of memory");
  for (size_t r = 0; r < f->nside; r++) {
    const srow *s = &f->side[r];
    if (s->kind == 'i') v[2 * r] = wm_int(s->i);
    if (s->kind == 'f') v[2 * r] = wm_float(s->f);
    if (s->kind == 's') v[2 * r] = str_of(s->s);
    v[2 * r + 1] = str_of(s->v);
  }
  *vals = v;
  *nrows = f->nside;
  return 0;
}

/* key: k (mod 0) or MOD(k, mod); outer: LEFT; ttl ms */
static void setup(lfix *f, const srow *side, size_t n, int64_t mod, int outer, int64_t ttl) {
  memset(f, 0, sizeof *f);
  wm_ctx_init(&f->ctx);
  f->ctx.now = vnow;
  f->ctx.now_ud = f;
  wm_buf_init(&f->out.out);
  f->side = side;
  f->nside = n;
  wm_rexpr *x = wm_rexpr_new();
  int key = wm_rexpr_col(x, "k", NULL);
  if (mod) {
    wm_value m = wm_int(mod);
    int args[2] = {key, wm_rexpr_lit(x, &m)};
    key = wm_rexpr_op(x, WM_RX_MOD, args, 2, "q.sql:3:40");
  }
  CHECK(key >= 0);
  static const char *const fields[] = {"sk", "v"};
  static const size_t rkey[] = {0};
  static const char *const onames[] = {"id", "k", "v"};
  static const uint8_t oside[] = {0, 0, 1};
  static const char *const olf[] = {"id", "k", NULL};
  static const size_t orf[] = {0, 0, 1};
  wm_sqllookup_spec spec = {.table = "side", .nkeys = 1, .x = x, .lkey = &key, .nfields = 2, .fields = fields,
                            .rkey = rkey, .nout = 3, .out_names = onames, .out_side = oside, .out_lfield = olf,
                            .out_rfield = orf, .outer = outer, .ttl = ttl, .load = loader, .load_ud = f};
  f->j = wm_sqllookup_new(&f->ctx, "lookup join (side)", &spec);
  CHECK(f->j != NULL);
  wm_op *a = wm_op_new(&f->ctx, &src_vt, NULL, "probe");
  wm_op_connect(a, 0, f->j);
  wm_op_connect(f->j, 0, wm_op_new(&f->ctx, &capture_vt, &f->out, "out"));
  CHECK_I64(wm_ctx_prepare(&f->ctx), WM_OK);
  static const char *const pf[] = {"id", "k"};
  f->ps = wm_schema_new(2, pf, NULL);
}

static void teardown(lfix *f) {
  wm_schema_release(f->ps);
  wm_ctx_free(&f->ctx);
  wm_buf_free(&f->out.out);
}

/* a probe row {id, k}: k as the value given */
static int probe(lfix *f, int64_t id, wm_value k, int64_t ts) {
  wm_row *r = wm_row_new(f->ps);
  r->fields[0] = wm_int(id);
  r->fields[1] = k;
  wm_value v = wm_row_value(r);
  int rc = wm_op_input_record(f->j, 0, &v, ts);
  wm_row_release(NULL, r);
  return rc;
}
static void P(lfix *f, int64_t id, wm_value k, int64_t ts) { CHECK_I64(probe(f, id, k, ts), WM_OK); }

static const char *out(lfix *f) { return f->out.out.data ? f->out.out.data : ""; }
static void clear(lfix *f) {
  f->out.out.len = 0;
  if (f->out.out.data) f->out.out.data[0] = 0;
}

static const srow SIDE[] = {
  {'i', 1, 0, NULL, "one"}, {'i', 2, 0, NULL, "two"}, {'i', 2, 0, NULL, "deux"}, {0, 0, 0, NULL, "nul"},
  {'i', 3, 0, NULL, "three"}, {'s', 0, 0, "2", "str2"},
};

static void order_duplicates_nulls(void) {
  lfix f;
  T.current = "sqllookup: the table's order, duplicates, NULL keys, the first read at the first probe";
  setup(&f, SIDE, 6, 0, 0, 1000);
  /* a NULL probe key meets nothing and reads nothing */
  P(&f, 1, wm_nil(), 5);
  CHECK_STR(out(&f), "");
  CHECK_I64(f.loads, 0);
  /* key 2: two, deux (the table's order), at the probe's timestamp; the string "2" is
   * another key */
  P(&f, 2, wm_int(2), 10);
  CHECK_STR(out(&f), "10 {\"id\":2,\"k\":2,\"v\":\"two\"}\n10 {\"id\":2,\"k\":2,\"v\":\"deux\"}\n");
  CHECK_I64(f.loads, 1);
  CHECK_I64(wm_sqllookup_rows(f.j), 6);
  clear(&f);
  /* 1.0 meets 1; 4 nothing; the string "2" meets str2 only */
  P(&f, 3, wm_float(1.0), 11);
  P(&f, 4, wm_int(4), 12);
  wm_value s2 = wm_cstr("2", 1);
  P(&f, 5, s2, 13);
  CHECK_STR(out(&f), "11 {\"id\":3,\"k\":1.0,\"v\":\"one\"}\n13 {\"id\":5,\"k\":\"2\",\"v\":\"str2\"}\n");
  CHECK_I64(f.loads, 1);
  teardown(&f);
}

static void left_join(void) {
  lfix f;
  T.current = "sqllookup: LEFT pads the rows that meet nothing (a NULL key too)";
  setup(&f, SIDE, 6, 0, 1, 1000);
  P(&f, 1, wm_nil(), 5);
  P(&f, 2, wm_int(4), 6);
  P(&f, 3, wm_int(3), 7);
  CHECK_STR(out(&f), "5 {\"id\":1}\n6 {\"id\":2,\"k\":4}\n7 {\"id\":3,\"k\":3,\"v\":\"three\"}\n");
  teardown(&f);
}

static void number_keys(void) {
  lfix f;
  T.current = "sqllookup: numbers meet as Lua's key strings (integral: the integer; else %.14g)";
  /* 0.1 + 0.2 is 0.30000000000000004, whose %.14g is "0.3": the probe 0.3 meets it (Lua's
   * tostring of both is "0.3"); -0.0 is the integer 0; 2.5 meets 2.5 only; 1e300 its own */
  static const srow side[] = {
    {'f', 0, 0.30000000000000004, NULL, "pointthree"}, {'i', 0, 0, NULL, "zero"},
    {'f', 0, 2.5, NULL, "twohalf"}, {'f', 0, 1e300, NULL, "big"}, {'i', 2, 0, NULL, "two"},
  };
  setup(&f, side, 5, 0, 0, 1000);
  P(&f, 1, wm_float(0.3), 1);
  P(&f, 2, wm_float(-0.0), 2);
  P(&f, 3, wm_float(2.5), 3);
  P(&f, 4, wm_float(1e300), 4);
  P(&f, 5, wm_float(2.0000000000001), 5); /* not integral: "2.0000000000001", not 2 */
  P(&f, 6, wm_float(NAN), 6);             /* "nan" or "-nan": nothing in the table */
  CHECK_STR(out(&f), "1 {\"id\":1,\"k\":0.3,\"v\":\"pointthree\"}\n2 {\"id\":2,\"k\":-0.0,\"v\":\"zero\"}\n"
                     "3 {\"id\":3,\"k\":2.5,\"v\":\"twohalf\"}\n4 {\"id\":4,\"k\":1e+300,\"v\":\"big\"}\n");
  teardown(&f);
}

static void key_expression_and_error(void) {
  lfix f;
  T.current = "sqllookup: a key expression (MOD), its failure naming the operator and the row";
  setup(&f, SIDE, 6, 3, 0, 1000);
  /* MOD(5, 3) = 2: two, deux; MOD(-2, 3) = -2 (the dividend's sign): nothing */
  P(&f, 1, wm_int(5), 1);
  P(&f, 2, wm_int(-2), 2);
  CHECK_STR(out(&f), "1 {\"id\":1,\"k\":5,\"v\":\"two\"}\n1 {\"id\":1,\"k\":5,\"v\":\"deux\"}\n");
  teardown(&f);
  setup(&f, SIDE, 6, 0, 0, 1000);
  f.fail = 1;
  CHECK_I64(probe(&f, 7, wm_int(1), 3), WM_ERR);
  const char *e = wm_ctx_errtext(&f.ctx);
  CHECK(strstr(e, "side.csv: no such file") != NULL);
  CHECK(strstr(e, "lookup join (side)") != NULL);
  CHECK(strstr(e, "reading the table 'side' of the lookup join") != NULL);
  CHECK(strstr(e, "{\"id\":7,\"k\":1}") != NULL);
  teardown(&f);
}

static void refresh(void) {
  lfix f;
  T.current = "sqllookup: the table read again once ttl has passed since the last read";
  srow side[] = {{'i', 1, 0, NULL, "one"}};
  setup(&f, side, 1, 0, 0, 100);
  f.now = 50;
  P(&f, 1, wm_int(1), 1); /* reads (the next read at 150) */
  side[0].v = "uno";
  f.now = 149;
  P(&f, 2, wm_int(1), 2); /* what was read */
  f.now = 150;
  P(&f, 3, wm_int(1), 3); /* reads again */
  CHECK_STR(out(&f), "1 {\"id\":1,\"k\":1,\"v\":\"one\"}\n2 {\"id\":2,\"k\":1,\"v\":\"one\"}\n"
                     "3 {\"id\":3,\"k\":1,\"v\":\"uno\"}\n");
  CHECK_I64(f.loads, 2);
  CHECK_I64(wm_sqllookup_loads(f.j), 2);
  teardown(&f);
  /* ttl 0: a read at every probe row with a key (none for a NULL key), the clock standing */
  side[0].v = "one";
  setup(&f, side, 1, 0, 0, 0);
  P(&f, 1, wm_int(1), 1);
  side[0].v = "uno";
  P(&f, 2, wm_int(1), 2);
  P(&f, 3, wm_nil(), 3);
  CHECK_STR(out(&f), "1 {\"id\":1,\"k\":1,\"v\":\"one\"}\n2 {\"id\":2,\"k\":1,\"v\":\"uno\"}\n");
  CHECK_I64(f.loads, 2);
  teardown(&f);
}

void test_sqllookup(void) {
  order_duplicates_nulls();
  left_join();
  number_keys();
  key_expression_and_error();
  refresh();
}
