/* The SQL regular join in C (ops/wm_sqljoin.h), driven directly with C rows: left rows
 * {k, v}, right rows {k, w}, joined rows {k, v, k0, w}. Every expected output is worked out
 * by hand next to each case from the rules in the header (the Lua path's: first-arrival
 * order, identical rows counted, NULL keys meet nothing). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/wm_statefmt.h"
#include "ops/wm_sqljoin.h"
#include "test.h"

static int src_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  return wm_op_emit(op, 0, rec, ts);
}
static const wm_op_vt src_vt = {.kind = "source", .record = src_record};

typedef struct jfix {
  wm_ctx ctx;
  wm_op *j;
  capture out;
  wm_schema *ls, *rs;
} jfix;

static const char *const LF[] = {"k", "v"};
static const char *const RF[] = {"k", "w"};

static int64_t vclock;
static int64_t vnow(void *ud) {
  (void)ud;
  return vclock;
}

/* nkeys 1: k = k; nkeys 2: also v = w; kfloat: the first key compared as a float; ttl in ms
 * (0: none) on the virtual clock vclock */
static void setup_ttl(jfix *f, size_t nkeys, int kfloat, int64_t ttl) {
  memset(f, 0, sizeof *f);
  wm_ctx_init(&f->ctx);
  wm_buf_init(&f->out.out);
  static const size_t key[] = {0, 1};
  static const char *const onames[] = {"k", "v", "k0", "w"};
  static const uint8_t oside[] = {0, 0, 1, 1};
  static const size_t ofield[] = {0, 1, 0, 1};
  uint8_t kf[2] = {(uint8_t)kfloat, 0};
  wm_sqljoin_spec spec = {.nkeys = nkeys, .key_float = kf, .nout = 4, .out_names = onames,
                          .out_side = oside, .out_field = ofield};
  spec.side[0] = (wm_sqljoin_side){.nfields = 2, .fields = LF, .key = key};
  spec.side[1] = (wm_sqljoin_side){.nfields = 2, .fields = RF, .key = key};
  spec.ttl = ttl;
  f->ctx.now = vnow;
  wm_keysel ks, ks2;
  CHECK_I64(wm_keysel_fields(&ks, LF, nkeys), 0);
  CHECK_I64(wm_keysel_fields(&ks2, RF, nkeys), 0);
  f->j = wm_sqljoin_new(&f->ctx, "sql join", &spec, ks, ks2);
  CHECK(f->j != NULL);
  wm_op *a = wm_op_new(&f->ctx, &src_vt, NULL, "left");
  wm_op *b = wm_op_new(&f->ctx, &src_vt, NULL, "right");
  wm_op_connect(a, 0, f->j);
  wm_op_set_two_inputs(f->j, 1);
  wm_op_connect(b, 0, f->j);
  wm_op_connect(f->j, 0, wm_op_new(&f->ctx, &capture_vt, &f->out, "out"));
  CHECK_I64(wm_ctx_prepare(&f->ctx), WM_OK);
  f->ls = wm_schema_new(2, LF, NULL);
  f->rs = wm_schema_new(2, RF, NULL);
}

static void setup(jfix *f, size_t nkeys, int kfloat) { setup_ttl(f, nkeys, kfloat, 0); }

static void teardown(jfix *f) {
  wm_schema_release(f->ls);
  wm_schema_release(f->rs);
  wm_ctx_free(&f->ctx);
  wm_buf_free(&f->out.out);
}

/* A row of side `side`: k is an integer (NOKEY: nil; kd: a float instead), the other column a
 * string (NULL: nil). */
static int push(jfix *f, int side, int64_t k, int kd, const char *s, int64_t ts) {
  wm_row *r = wm_row_new(side ? f->rs : f->ls);
  if (k != INT64_MIN) r->fields[0] = kd ? wm_float((double)k) : wm_int(k);
  if (s) {
    r->fields[1].type = WM_STR;
    r->fields[1].u.s = wm_str_new(s, strlen(s));
  }
  wm_value v = wm_row_value(r);
  int rc = wm_op_input_record(f->j, side, &v, ts);
  wm_row_release(NULL, r);
  return rc;
}
#define NOKEY INT64_MIN
/* A row whose k is the float kd. */
static void push_f(jfix *f, int side, double kd, const char *s, int64_t ts) {
  wm_row *r = wm_row_new(side ? f->rs : f->ls);
  r->fields[0] = wm_float(kd);
  r->fields[1].type = WM_STR;
  r->fields[1].u.s = wm_str_new(s, strlen(s));
  wm_value v = wm_row_value(r);
  CHECK_I64(wm_op_input_record(f->j, side, &v, ts), WM_OK);
  wm_row_release(NULL, r);
}
static void Lr(jfix *f, int64_t k, const char *v, int64_t ts) { CHECK_I64(push(f, 0, k, 0, v, ts), WM_OK); }
static void Rr(jfix *f, int64_t k, const char *w, int64_t ts) { CHECK_I64(push(f, 1, k, 0, w, ts), WM_OK); }

static const char *out(jfix *f) { return f->out.out.data ? f->out.out.data : ""; }
static void clear(jfix *f) {
  f->out.out.len = 0;
  if (f->out.out.data) f->out.out.data[0] = 0;
}

static void order_and_duplicates(void) {
  jfix f;
  T.current = "sqljoin: first-arrival order, identical rows counted, NULL keys";
  setup(&f, 1, 0);
  /* left a, a (one row, count 2), b for key 1; c for key 2 */
  Lr(&f, 1, "a", 10);
  Lr(&f, 1, "a", 11);
  Lr(&f, 1, "b", 12);
  Lr(&f, 2, "c", 13);
  CHECK_STR(out(&f), "");
  /* x meets key 1's rows in their first order: a twice, then b; at x's timestamp */
  Rr(&f, 1, "x", 20);
  CHECK_STR(out(&f), "20 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n20 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n"
                     "20 {\"k\":1,\"k0\":1,\"v\":\"b\",\"w\":\"x\"}\n");
  clear(&f);
  /* a third a goes to a's place (count 3): y, z later meet a three times before b */
  Lr(&f, 1, "a", 21);
  CHECK_STR(out(&f), "21 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n");
  clear(&f);
  /* a NULL key meets nothing and is not kept; a NULL non-key column is a value */
  Lr(&f, NOKEY, "n", 22);
  Rr(&f, NOKEY, "m", 23);
  Lr(&f, 2, NULL, 24);
  CHECK_STR(out(&f), "");
  Rr(&f, 2, "y", 25);
  CHECK_STR(out(&f), "25 {\"k\":2,\"k0\":2,\"v\":\"c\",\"w\":\"y\"}\n25 {\"k\":2,\"k0\":2,\"w\":\"y\"}\n");
  clear(&f);
  /* a second x: x's count is 2 now; a new left row meets x twice */
  Rr(&f, 1, "x", 26);
  clear(&f);
  Lr(&f, 1, "d", 27);
  CHECK_STR(out(&f), "27 {\"k\":1,\"k0\":1,\"v\":\"d\",\"w\":\"x\"}\n27 {\"k\":1,\"k0\":1,\"v\":\"d\",\"w\":\"x\"}\n");
  clear(&f);
  /* kept: left a (3), b, d of key 1, c, NULL of key 2; right x (2) of 1, y of 2 */
  CHECK_I64(wm_sqljoin_keys(f.j), 2);
  CHECK_I64(wm_sqljoin_distinct(f.j, 0), 5);
  CHECK_I64(wm_sqljoin_rows(f.j, 0), 7);
  CHECK_I64(wm_sqljoin_distinct(f.j, 1), 2);
  CHECK_I64(wm_sqljoin_rows(f.j, 1), 3);
  teardown(&f);

  T.current = "sqljoin: an integer and a float are two values (keys and rows), unless key_float";
  setup(&f, 1, 0);
  Lr(&f, 1, "a", 1);
  CHECK_I64(push(&f, 1, 1, 1, "f", 2), WM_OK); /* k = 1.0: another key */
  CHECK_STR(out(&f), "");
  teardown(&f);
  setup(&f, 1, 1);
  Lr(&f, 1, "a", 1);
  CHECK_I64(push(&f, 1, 1, 1, "f", 2), WM_OK); /* both compared as floats: they meet */
  CHECK_STR(out(&f), "2 {\"k\":1,\"k0\":1.0,\"v\":\"a\",\"w\":\"f\"}\n");
  clear(&f);
  /* the left rows k = 1 and k = 1.0 are one key, two rows */
  CHECK_I64(push(&f, 0, 1, 1, "a", 3), WM_OK);
  CHECK_STR(out(&f), "3 {\"k\":1.0,\"k0\":1.0,\"v\":\"a\",\"w\":\"f\"}\n");
  CHECK_I64(wm_sqljoin_keys(f.j), 1);
  CHECK_I64(wm_sqljoin_distinct(f.j, 0), 2);
  clear(&f);
  /* compared as floats, -0.0 is 0.0 (x + 0.0, as the planner's key); else two keys */
  push_f(&f, 0, -0.0, "z", 4);
  push_f(&f, 1, 0.0, "o", 5);
  CHECK_STR(out(&f), "5 {\"k\":-0.0,\"k0\":0.0,\"v\":\"z\",\"w\":\"o\"}\n");
  teardown(&f);
  setup(&f, 1, 0);
  push_f(&f, 0, -0.0, "z", 4);
  push_f(&f, 1, 0.0, "o", 5);
  CHECK_STR(out(&f), "");
  teardown(&f);

  T.current = "sqljoin: a key of two columns";
  setup(&f, 2, 0); /* k = k AND v = w */
  Lr(&f, 1, "a", 1);
  Rr(&f, 1, "b", 2);
  Rr(&f, 2, "a", 3);
  CHECK_STR(out(&f), "");
  Rr(&f, 1, "a", 4);
  CHECK_STR(out(&f), "4 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"a\"}\n");
  teardown(&f);
}

static void snap(jfix *f, wm_buf *b) {
  wm_encoder enc;
  wm_encoder_init(&enc);
  wm_state_io io = {.out = b, .enc = &enc};
  CHECK_I64(wm_op_snapshot(f->j, &io), WM_OK);
  wm_encoder_free(&enc);
}

static int restore(jfix *f, const wm_buf *b, uint32_t groups, uint32_t first, uint32_t last) {
  wm_decoder dec;
  wm_decoder_init(&dec);
  wm_state_io io = {.data = (const uint8_t *)b->data, .len = b->len, .dec = &dec,
                    .groups = groups, .kg_first = first, .kg_last = last};
  int rc = wm_op_restore(f->j, &io);
  wm_decoder_free(&dec);
  return rc;
}

static void checkpoints(void) {
  jfix f, g;
  T.current = "sqljoin: snapshot and restore give the uninterrupted output";
  /* the reference: one run of everything */
  setup(&f, 1, 0);
  Lr(&f, 1, "a", 1);
  Lr(&f, 1, "b", 2);
  Lr(&f, 1, "a", 3);
  Rr(&f, 2, "y", 4);
  Lr(&f, 3, "c", 5);
  wm_buf b;
  wm_buf_init(&b);
  snap(&f, &b);
  clear(&f);
  Rr(&f, 1, "x", 6);
  Lr(&f, 2, "d", 7);
  Rr(&f, 1, "x", 8);
  char want[600];
  snprintf(want, sizeof want, "%s", out(&f));
  /* (hand-worked: x meets a twice then b; d meets y; the second x the same as the first) */
  CHECK_STR(want, "6 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n6 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n"
                  "6 {\"k\":1,\"k0\":1,\"v\":\"b\",\"w\":\"x\"}\n7 {\"k\":2,\"k0\":2,\"v\":\"d\",\"w\":\"y\"}\n"
                  "8 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n8 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n"
                  "8 {\"k\":1,\"k0\":1,\"v\":\"b\",\"w\":\"x\"}\n");
  /* a new operator restored from the snapshot, then the same records */
  setup(&g, 1, 0);
  CHECK_I64(restore(&g, &b, 0, 0, 0), WM_OK);
  CHECK_I64(wm_sqljoin_keys(g.j), 3);
  CHECK_I64(wm_sqljoin_rows(g.j, 0), 4);
  CHECK_I64(wm_sqljoin_distinct(g.j, 0), 3);
  Rr(&g, 1, "x", 6);
  Lr(&g, 2, "d", 7);
  Rr(&g, 1, "x", 8);
  CHECK_STR(out(&g), want);
  /* a restore into an operator that holds keys is refused */
  CHECK_I64(restore(&g, &b, 0, 0, 0), WM_ERR);
  teardown(&g);

  T.current = "sqljoin: a restore keeps its key groups' keys only";
  /* two halves of 128 key groups: every key lands in exactly one, with all its rows */
  setup(&g, 1, 0);
  CHECK_I64(restore(&g, &b, 128, 0, 63), WM_OK);
  jfix h2;
  setup(&h2, 1, 0);
  CHECK_I64(restore(&h2, &b, 128, 64, 127), WM_OK);
  CHECK_I64(wm_sqljoin_keys(g.j) + wm_sqljoin_keys(h2.j), 3);
  CHECK_I64(wm_sqljoin_rows(g.j, 0) + wm_sqljoin_rows(h2.j, 0), 4);
  CHECK_I64(wm_sqljoin_rows(g.j, 1) + wm_sqljoin_rows(h2.j, 1), 1);
  teardown(&g);
  teardown(&h2);

  T.current = "sqljoin: a NaN key (NaN meets NaN, as Lua's key strings) is restored once";
  {
    jfix n, n1, n2;
    setup(&n, 1, 0);
    push_f(&n, 0, NAN, "a", 1);
    push_f(&n, 1, NAN, "x", 2);
    CHECK_STR(out(&n), "2 {\"k\":null,\"k0\":null,\"v\":\"a\",\"w\":\"x\"}\n"); /* (JSON: NaN is null) */
    wm_buf nb;
    wm_buf_init(&nb);
    snap(&n, &nb);
    setup(&n1, 1, 0);
    setup(&n2, 1, 0);
    CHECK_I64(restore(&n1, &nb, 128, 0, 63), WM_OK);
    CHECK_I64(restore(&n2, &nb, 128, 64, 127), WM_OK);
    CHECK_I64(wm_sqljoin_keys(n1.j), 1);
    CHECK_I64(wm_sqljoin_keys(n2.j), 0);
    wm_buf_free(&nb);
    teardown(&n2);
    teardown(&n1);
    teardown(&n);
  }

  T.current = "sqljoin: damaged or foreign state is refused by name";
  setup(&g, 2, 0); /* another key: another meaning */
  CHECK_I64(restore(&g, &b, 0, 0, 0), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&g.ctx), "columns or keys changed") != NULL);
  teardown(&g);
  setup(&g, 1, 0);
  wm_buf cut;
  wm_buf_init(&cut);
  wm_buf_add(&cut, b.data, b.len - 3);
  CHECK_I64(restore(&g, &cut, 0, 0, 0), WM_ERR);
  CHECK_I64(wm_sqljoin_keys(g.j), 0); /* back to empty */
  wm_buf_free(&cut);
  teardown(&g);
  wm_buf_free(&b);
  teardown(&f);
}

/* table.exec.state.ttl: a row not written (added, count changed) for ttl ms is gone when its
 * key is read (Flink's OnCreateAndWrite, NeverReturnExpired); meeting rows is no write. */
static void ttl(void) {
  jfix f;
  T.current = "sqljoin: rows expire ttl ms after their last write";
  vclock = 0;
  setup_ttl(&f, 1, 0, 10);
  Lr(&f, 1, "a", 0);  /* a written at 0 */
  vclock = 5;
  Lr(&f, 1, "a", 5);  /* count 2, written at 5 */
  vclock = 14;
  Rr(&f, 1, "x", 14); /* a alive until 15: meets it twice; x written at 14 */
  CHECK_STR(out(&f), "14 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n14 {\"k\":1,\"k0\":1,\"v\":\"a\",\"w\":\"x\"}\n");
  clear(&f);
  vclock = 15;
  Rr(&f, 1, "x", 15); /* a expired (5 + 10 <= 15): nothing; x count 2, written at 15 */
  CHECK_STR(out(&f), "");
  CHECK_I64(wm_sqljoin_rows(f.j, 0), 0);
  vclock = 24;
  Lr(&f, 1, "b", 24); /* x alive until 25: twice */
  CHECK_STR(out(&f), "24 {\"k\":1,\"k0\":1,\"v\":\"b\",\"w\":\"x\"}\n24 {\"k\":1,\"k0\":1,\"v\":\"b\",\"w\":\"x\"}\n");
  clear(&f);
  vclock = 25;
  Lr(&f, 1, "c", 25); /* x gone; b (24) kept, c added */
  CHECK_STR(out(&f), "");
  CHECK_I64(wm_sqljoin_rows(f.j, 1), 0);
  CHECK_I64(wm_sqljoin_distinct(f.j, 0), 2);
  /* a key no row comes to: freed by the sweep once its rows expired */
  vclock = 40;
  Lr(&f, 2, "d", 40);
  Lr(&f, 2, "e", 40);
  CHECK_I64(wm_sqljoin_keys(f.j), 1);
  CHECK_I64(wm_sqljoin_distinct(f.j, 0), 2);
  /* the write times are state: a restored operator expires the same rows */
  wm_buf b;
  wm_buf_init(&b);
  snap(&f, &b);
  jfix g;
  setup_ttl(&g, 1, 0, 10);
  CHECK_I64(restore(&g, &b, 0, 0, 0), WM_OK);
  vclock = 49;
  Rr(&g, 2, "y", 49); /* d, e written at 40: alive until 50 */
  CHECK_STR(out(&g), "49 {\"k\":2,\"k0\":2,\"v\":\"d\",\"w\":\"y\"}\n49 {\"k\":2,\"k0\":2,\"v\":\"e\",\"w\":\"y\"}\n");
  clear(&g);
  vclock = 50;
  Rr(&g, 2, "z", 50);
  CHECK_STR(out(&g), "");
  /* a state kept without a TTL is not read into a join with one (no write times) */
  jfix n;
  setup(&n, 1, 0);
  CHECK_I64(restore(&n, &b, 0, 0, 0), WM_ERR);
  teardown(&n);
  wm_buf_free(&b);
  teardown(&g);
  teardown(&f);
}

/* An updating side: the right input's records are changes {k = kind, r = {k, w}}, the output
 * changes {k = kind, r = the joined row} (ops/wm_sqljoin.h; the Lua path's M.lower). */
static void setup_upd(jfix *f) {
  memset(f, 0, sizeof *f);
  wm_ctx_init(&f->ctx);
  wm_buf_init(&f->out.out);
  static const size_t key[] = {0};
  static const char *const onames[] = {"k", "v", "k0", "w"};
  static const uint8_t oside[] = {0, 0, 1, 1};
  static const size_t ofield[] = {0, 1, 0, 1};
  wm_sqljoin_spec spec = {.nkeys = 1, .nout = 4, .out_names = onames, .out_side = oside, .out_field = ofield};
  spec.side[0] = (wm_sqljoin_side){.nfields = 2, .fields = LF, .key = key};
  spec.side[1] = (wm_sqljoin_side){.nfields = 2, .fields = RF, .key = key, .updating = 1};
  wm_keysel ks, ks2;
  CHECK_I64(wm_keysel_fields(&ks, LF, 1), 0);
  CHECK_I64(wm_keysel_fields(&ks2, RF, 1), 0); /* (not called: no key exchange, no key groups) */
  f->j = wm_sqljoin_new(&f->ctx, "sql join", &spec, ks, ks2);
  CHECK(f->j != NULL);
  wm_op *a = wm_op_new(&f->ctx, &src_vt, NULL, "left");
  wm_op *b = wm_op_new(&f->ctx, &src_vt, NULL, "right");
  wm_op_connect(a, 0, f->j);
  wm_op_set_two_inputs(f->j, 1);
  wm_op_connect(b, 0, f->j);
  wm_op_connect(f->j, 0, wm_op_new(&f->ctx, &capture_vt, &f->out, "out"));
  CHECK_I64(wm_ctx_prepare(&f->ctx), WM_OK);
  f->ls = wm_schema_new(2, LF, NULL);
  f->rs = wm_schema_new(2, RF, NULL);
}

/* A change of the right side: {k = kind, r = {k, w}}. */
static void Rc(jfix *f, const char *kind, int64_t k, const char *w, int64_t ts) {
  static const char *const CF[] = {"k", "r"};
  wm_schema *cs = wm_schema_new(2, CF, NULL);
  wm_row *c = wm_row_new(cs);
  wm_row *r = wm_row_new(f->rs);
  r->fields[0] = wm_int(k);
  r->fields[1].type = WM_STR;
  r->fields[1].u.s = wm_str_new(w, strlen(w));
  c->fields[0].type = WM_STR;
  c->fields[0].u.s = wm_str_new(kind, strlen(kind));
  c->fields[1] = wm_row_value(r); /* (c takes r) */
  wm_value v = wm_row_value(c);
  CHECK_I64(wm_op_input_record(f->j, 1, &v, ts), WM_OK);
  wm_row_release(NULL, c);
  wm_schema_release(cs);
}

/* The joined change of kind, key 1, left v, right w, at ts. */
static void want(wm_buf *b, int64_t ts, const char *kind, const char *v, const char *w) {
  char t[200];
  snprintf(t, sizeof t, "%lld {\"k\":\"%s\",\"r\":{\"k\":1,\"k0\":1,\"v\":\"%s\",\"w\":\"%s\"}}\n",
           (long long)ts, kind, v, w);
  wm_buf_adds(b, t);
}

static void retractions(void) {
  jfix f;
  wm_buf w;
  wm_buf_init(&w);
  T.current = "sqljoin: an updating side's retractions take one count, the pairs carry its kind";
  setup_upd(&f);
  Lr(&f, 1, "a", 1);
  Lr(&f, 1, "a", 2); /* a twice */
  Lr(&f, 1, "b", 3);
  CHECK_STR(out(&f), "");
  Rc(&f, "+I", 1, "x", 4); /* x meets a, a, b: +I */
  want(&w, 4, "+I", "a", "x"), want(&w, 4, "+I", "a", "x"), want(&w, 4, "+I", "b", "x");
  Rc(&f, "+I", 1, "y", 5); /* right order x, y */
  want(&w, 5, "+I", "a", "y"), want(&w, 5, "+I", "a", "y"), want(&w, 5, "+I", "b", "y");
  Rc(&f, "-U", 1, "x", 6); /* x's count 1 -> 0: it goes; its pairs retracted (-U) */
  want(&w, 6, "-U", "a", "x"), want(&w, 6, "-U", "a", "x"), want(&w, 6, "-U", "b", "x");
  CHECK_STR(out(&f), w.data);
  CHECK_I64(wm_sqljoin_distinct(f.j, 1), 1);
  CHECK_I64(wm_sqljoin_rows(f.j, 1), 1);
  clear(&f);
  w.len = 0;
  Rc(&f, "+U", 1, "x", 7); /* x again: at the end now (y, x) */
  want(&w, 7, "+U", "a", "x"), want(&w, 7, "+U", "a", "x"), want(&w, 7, "+U", "b", "x");
  Lr(&f, 1, "c", 8); /* c meets y then x: +I (an append-only side's row) */
  want(&w, 8, "+I", "c", "y"), want(&w, 8, "+I", "c", "x");
  Rc(&f, "-D", 1, "z", 9); /* z was never kept: nothing goes, its pairs still go out (-D) */
  want(&w, 9, "-D", "a", "z"), want(&w, 9, "-D", "a", "z"), want(&w, 9, "-D", "b", "z"),
      want(&w, 9, "-D", "c", "z");
  Rc(&f, "-D", 3, "q", 10); /* a key never seen: nothing, no key made */
  CHECK_STR(out(&f), w.data);
  CHECK_I64(wm_sqljoin_keys(f.j), 1);
  CHECK_I64(wm_sqljoin_rows(f.j, 1), 2);
  clear(&f);
  w.len = 0;
  /* a right row of count 2 loses one count and stays in its place */
  Rc(&f, "+I", 1, "y", 11); /* y count 2 (order y, x) */
  Rc(&f, "-U", 1, "y", 12);
  clear(&f);
  Lr(&f, 1, "d", 13);
  want(&w, 13, "+I", "d", "y"), want(&w, 13, "+I", "d", "x");
  CHECK_STR(out(&f), w.data);
  clear(&f);
  w.len = 0;

  T.current = "sqljoin: an updating side's state through a checkpoint";
  wm_buf b;
  wm_buf_init(&b);
  snap(&f, &b);
  jfix g;
  setup_upd(&g);
  CHECK_I64(restore(&g, &b, 0, 0, 0), WM_OK);
  Rc(&g, "-D", 1, "y", 14); /* y goes (count 1): a, a, b, c, d meet it */
  want(&w, 14, "-D", "a", "y"), want(&w, 14, "-D", "a", "y"), want(&w, 14, "-D", "b", "y"),
      want(&w, 14, "-D", "c", "y"), want(&w, 14, "-D", "d", "y");
  Rc(&g, "-D", 1, "x", 15);
  want(&w, 15, "-D", "a", "x"), want(&w, 15, "-D", "a", "x"), want(&w, 15, "-D", "b", "x"),
      want(&w, 15, "-D", "c", "x"), want(&w, 15, "-D", "d", "x");
  CHECK_STR(out(&g), w.data);
  CHECK_I64(wm_sqljoin_rows(g.j, 1), 0);
  CHECK_I64(wm_sqljoin_rows(g.j, 0), 5);
  teardown(&g);
  /* the state of a join with an updating side is not read into one without */
  setup(&g, 1, 0);
  CHECK_I64(restore(&g, &b, 0, 0, 0), WM_ERR);
  teardown(&g);
  /* both sides emptied: the key goes */
  setup_upd(&g);
  Rc(&g, "+I", 1, "x", 1);
  Rc(&g, "-D", 1, "x", 2);
  CHECK_I64(wm_sqljoin_keys(g.j), 0);
  CHECK_STR(out(&g), "");
  teardown(&g);
  wm_buf_free(&b);
  wm_buf_free(&w);
  teardown(&f);
}

void test_sqljoin(void) {
  retractions();
  order_and_duplicates();
  checkpoints();
  ttl();
}
