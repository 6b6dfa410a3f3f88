/* SQL deduplication and Top-N in C (ops/wm_sqlrank.h) in a keyed operator's rolling mode: the
 * changelog of keep-last, keep-first and a Top-2 with and without rn worked out by hand (equal times, NULL and mixed-type values), a
 * checkpoint taken after every record and restored into a fresh operator giving the same
 * changelog, a record without its time refused with a clear message. */
#include <stdlib.h>
#include <string.h>

#include "graph/wm_snapshot.h"
#include "ops/wm_keyedop.h"
#include "ops/wm_sqlrank.h"
#include "test.h"

enum { VNUL, VINT, VFLT, VSTR };

typedef struct rec {
  const char *k;
  int vt;
  int64_t vi;
  double vf;
  const char *vs;
  int has_t;
  int64_t t;
} rec;

typedef struct rig {
  wm_ctx ctx;
  capture out;
  wm_op *w;
  wm_schema *s;
} rig;

/* mode: 0 keep first, 1 keep last, 2 Top-2 by v DESC, 3 the same reading rn, 4 keep last keyed
 * by wm_keysel_fields_nulls (a NULL k a key of its own) */
static void rig_init(rig *g, int keep_last) {
  wm_ctx_init(&g->ctx);
  static const char *const names[] = {"k", "v", "t"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_ANY, WM_FT_INTEGER};
  g->s = wm_schema_new(3, names, types);
  g->out = (capture){.label = NULL};
  wm_buf_init(&g->out.out);
  wm_keyedop_config cfg;
  memset(&cfg, 0, sizeof cfg);
  const char *key = "k";
  if (keep_last == 4) CHECK_I64(wm_keysel_fields_nulls(&cfg.keysel, &key, 1), 0);
  else CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  static const char *const visible[] = {"k", "v"};
  wm_error err;
  wm_error_clear(&err);
  if (keep_last < 2 || keep_last == 4) {
    wm_sqldedup_spec spec = {.nfields = 2, .fields = visible, .time = "t", .keep_last = keep_last != 0};
    CHECK_I64(wm_keyedfn_sqldedup(&cfg.rolling, &spec, &err), 0);
  } else {
    static const wm_sqltopn_order by_v = {.field = "v", .desc = 1, .nulls_first = 0};
    wm_sqltopn_spec spec = {.nfields = 2, .fields = visible, .norders = 1, .orders = &by_v, .n = 2,
                            .rn_name = keep_last == 3 ? "rn" : NULL};
    CHECK_I64(wm_keyedfn_sqltopn(&cfg.rolling, &spec, &err), 0);
  }
  snprintf(cfg.meaning, sizeof cfg.meaning, "SQL dedup test %d", keep_last);
  g->w = wm_keyedop_new(&g->ctx, "dedup", &cfg);
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

/* Record i at timestamp 10 * (i + 1); the result of the last one. */
static int feed(rig *g, const rec *rs, size_t from, size_t to) {
  int rc = WM_OK;
  for (size_t i = from; i < to && rc == WM_OK; i++) {
    wm_row *r = wm_row_new(g->s);
    if (rs[i].k) {
      r->fields[0] = wm_cstr(rs[i].k, strlen(rs[i].k));
      wm_value_retain(NULL, &r->fields[0]);
    }
    if (rs[i].vt == VINT) r->fields[1] = wm_int(rs[i].vi);
    if (rs[i].vt == VFLT) r->fields[1] = wm_float(rs[i].vf);
    if (rs[i].vt == VSTR) {
      r->fields[1] = wm_cstr(rs[i].vs, strlen(rs[i].vs));
      wm_value_retain(NULL, &r->fields[1]);
    }
    if (rs[i].has_t) r->fields[2] = wm_int(rs[i].t);
    wm_value v = wm_row_value(r);
    rc = wm_op_input_record(g->w, 0, &v, 10 * ((int64_t)i + 1));
    wm_value_release(NULL, &v);
  }
  return rc;
}

/* a at 1 s, b at 2 s, a at 3 s, a (v NULL) at 0.5 s, b at 2 s again, a at 3 s again */
static const rec rs[] = {
    {"a", VINT, 1, 0, NULL, 1, 1000}, {"b", VSTR, 0, 0, "x", 1, 2000},
    {"a", VINT, 3, 0, NULL, 1, 3000}, {"a", VNUL, 0, 0, NULL, 1, 500},
    {"b", VFLT, 0, 2.5, NULL, 1, 2000}, {"a", VINT, 6, 0, NULL, 1, 3000},
};

/* By hand, keep last (a row replaces the kept one when its time is >= the kept one's): a 1 +I;
 * b x +I; a 3 (3 s >= 1 s): -U a 1, +U a 3; a NULL (0.5 s < 3 s): nothing; b 2.5 (2 s >= 2 s):
 * -U b x, +U b 2.5; a 6 (3 s >= 3 s): -U a 3, +U a 6. Each at its record's timestamp. */
static const char *const last_expect =
    "10 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":1}}\n"
    "20 {\"k\":\"+I\",\"r\":{\"k\":\"b\",\"v\":\"x\"}}\n"
    "30 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"v\":1}}\n"
    "30 {\"k\":\"+U\",\"r\":{\"k\":\"a\",\"v\":3}}\n"
    "50 {\"k\":\"-U\",\"r\":{\"k\":\"b\",\"v\":\"x\"}}\n"
    "50 {\"k\":\"+U\",\"r\":{\"k\":\"b\",\"v\":2.5}}\n"
    "60 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"v\":3}}\n"
    "60 {\"k\":\"+U\",\"r\":{\"k\":\"a\",\"v\":6}}\n";

/* Keep first (a row replaces the kept one when its time is < the kept one's): a 1 +I; b x +I;
 * a 3 (3 s, not < 1 s): nothing; a NULL (0.5 s < 1 s): -U a 1, +U a with v NULL (absent); b 2.5
 * (2 s, not < 2 s): nothing; a 6 (3 s, not < 0.5 s): nothing. */
static const char *const first_expect =
    "10 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":1}}\n"
    "20 {\"k\":\"+I\",\"r\":{\"k\":\"b\",\"v\":\"x\"}}\n"
    "40 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"v\":1}}\n"
    "40 {\"k\":\"+U\",\"r\":{\"k\":\"a\"}}\n";

/* Top-2 by v DESC (NULL last) of a: 1, 3, 2, 5, then b 7, a 3 again, a NULL, b NULL */
static const rec ts_rs[] = {
    {"a", VINT, 1, 0, NULL, 1, 0}, {"a", VINT, 3, 0, NULL, 1, 0}, {"a", VINT, 2, 0, NULL, 1, 0},
    {"a", VINT, 5, 0, NULL, 1, 0}, {"b", VINT, 7, 0, NULL, 1, 0}, {"a", VINT, 3, 0, NULL, 1, 0},
    {"a", VNUL, 0, 0, NULL, 1, 0}, {"b", VNUL, 0, 0, NULL, 1, 0},
};

/* By hand, without rn: a 1 enters: +I; a 3 enters: +I ([3, 1]); a 2 enters [3, 2], 1 goes out:
 * -D 1 before +I 2; a 5: [5, 3], -D 2, +I 5; b 7: +I; a 3 again: not before the last of the full
 * [5, 3] (an equal key keeps its place after it): nothing; a NULL (last in DESC): nothing; b
 * NULL: b's top not full, after 7: +I. */
static const char *const topn_expect =
    "10 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":1}}\n"
    "20 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":3}}\n"
    "30 {\"k\":\"-D\",\"r\":{\"k\":\"a\",\"v\":1}}\n"
    "30 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":2}}\n"
    "40 {\"k\":\"-D\",\"r\":{\"k\":\"a\",\"v\":2}}\n"
    "40 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":5}}\n"
    "50 {\"k\":\"+I\",\"r\":{\"k\":\"b\",\"v\":7}}\n"
    "80 {\"k\":\"+I\",\"r\":{\"k\":\"b\"}}\n";

/* With rn: a 1: +I rank 1; a 3 at rank 1: rank 1 goes from 1 to 3 (-U, +U), rank 2 new (+I 1);
 * a 2 at rank 2: -U 1, +U 2 at rank 2 (1 drops out); a 5 at rank 1: rank 1 3 -> 5, rank 2
 * 2 -> 3; b 7: +I rank 1; a 3 again, a NULL: nothing; b NULL: +I rank 2. */
static const char *const topn_rn_expect =
    "10 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"rn\":1,\"v\":1}}\n"
    "20 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"rn\":1,\"v\":1}}\n"
    "20 {\"k\":\"+U\",\"r\":{\"k\":\"a\",\"rn\":1,\"v\":3}}\n"
    "20 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"rn\":2,\"v\":1}}\n"
    "30 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"rn\":2,\"v\":1}}\n"
    "30 {\"k\":\"+U\",\"r\":{\"k\":\"a\",\"rn\":2,\"v\":2}}\n"
    "40 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"rn\":1,\"v\":3}}\n"
    "40 {\"k\":\"+U\",\"r\":{\"k\":\"a\",\"rn\":1,\"v\":5}}\n"
    "40 {\"k\":\"-U\",\"r\":{\"k\":\"a\",\"rn\":2,\"v\":2}}\n"
    "40 {\"k\":\"+U\",\"r\":{\"k\":\"a\",\"rn\":2,\"v\":3}}\n"
    "50 {\"k\":\"+I\",\"r\":{\"k\":\"b\",\"rn\":1,\"v\":7}}\n"
    "80 {\"k\":\"+I\",\"r\":{\"k\":\"b\",\"rn\":2}}\n";

/* Keep last keyed by a k that may be NULL: NULL 1 at 1 s, a 2 at 1 s, NULL 3 at 2 s, a 4 at 0.5 s */
static const rec null_rs[] = {
    {NULL, VINT, 1, 0, NULL, 1, 1000}, {"a", VINT, 2, 0, NULL, 1, 1000},
    {NULL, VINT, 3, 0, NULL, 1, 2000}, {"a", VINT, 4, 0, NULL, 1, 500},
};

/* By hand: the NULL key's first row +I (k absent); a's +I; NULL 3 (2 s >= 1 s) replaces NULL 1
 * (one key: not a's, and not an error); a 4 (0.5 s < 1 s): nothing. The checkpoint holds the
 * NULL key (a composite key with an 'n' part). */
static const char *const null_expect =
    "10 {\"k\":\"+I\",\"r\":{\"v\":1}}\n"
    "20 {\"k\":\"+I\",\"r\":{\"k\":\"a\",\"v\":2}}\n"
    "30 {\"k\":\"-U\",\"r\":{\"v\":1}}\n"
    "30 {\"k\":\"+U\",\"r\":{\"v\":3}}\n";

/* wm_key_compose with a nil part: its own part, decoded as nil; not equal to 0 nor "" */
static void null_parts(void) {
  wm_value a[2] = {wm_nil(), wm_int(0)}, b[2] = {wm_int(0), wm_int(0)}, c[2] = {wm_nil(), wm_int(0)};
  wm_value ka, kb, kc, part = wm_int(7);
  CHECK_I64(wm_key_compose(a, 2, &ka), 0);
  CHECK_I64(wm_key_compose(b, 2, &kb), 0);
  CHECK_I64(wm_key_compose(c, 2, &kc), 0);
  CHECK(!wm_key_equal(&ka, &kb));
  CHECK(wm_key_equal(&ka, &kc));
  CHECK(wm_key_hash(&ka) == wm_key_hash(&kc));
  CHECK_I64(wm_key_part(&ka, 0, &part), 2);
  CHECK_I64(part.type, WM_NIL);
  CHECK_I64(wm_key_part(&ka, 1, &part), 2);
  CHECK_I64(part.type, WM_INT);
  wm_value_release(NULL, &ka);
  wm_value_release(NULL, &kb);
  wm_value_release(NULL, &kc);
}

typedef struct parts {
  wm_part p[8];
  size_t n;
} parts;

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

/* Every cut: the records before it, a checkpoint restored into a fresh operator, the records
 * after it: together the hand-worked changelog (the kept row and its time are in the
 * checkpoint: the resumed operator replaces it, or not, as the uninterrupted one). */
static void changelog(int keep_last, const rec *in, size_t n, const char *expect) {
  for (size_t cut = 0; cut <= n; cut++) {
    rig a, b;
    parts ps = {0};
    rig_init(&a, keep_last);
    CHECK_I64(feed(&a, in, 0, cut), WM_OK);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    rig_init(&b, keep_last);
    int rc = wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n);
    CHECK_I64(rc, WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  restore at %zu: %s\n", cut, wm_ctx_errtext(&b.ctx));
    CHECK_I64(feed(&b, in, cut, n), WM_OK);
    wm_buf all;
    wm_buf_init(&all);
    wm_buf_adds(&all, a.out.out.data ? a.out.out.data : "");
    wm_buf_adds(&all, b.out.out.data ? b.out.out.data : "");
    CHECK_STR(all.data, expect);
    wm_buf_free(&all);
    rig_free(&a);
    rig_free(&b);
    for (size_t i = 0; i < ps.n; i++) {
      free((char *)ps.p[i].name);
      free((uint8_t *)ps.p[i].data);
    }
  }
}

/* A checkpoint of keep-last does not restore into keep-first (the state means another thing);
 * a record whose time is NULL is an error naming the column; a spec without a time is refused. */
static void errors(void) {
  rig a, b;
  parts ps = {0};
  rig_init(&a, 1);
  CHECK_I64(feed(&a, rs, 0, 2), WM_OK);
  CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
  rig_init(&b, 0);
  CHECK_I64(wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&b.ctx), "changed since the checkpoint") != NULL);
  rig_free(&b);
  for (size_t i = 0; i < ps.n; i++) {
    free((char *)ps.p[i].name);
    free((uint8_t *)ps.p[i].data);
  }
  static const rec nt[] = {{"a", VINT, 9, 0, NULL, 0, 0}};
  CHECK_I64(feed(&a, nt, 0, 1), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&a.ctx), "ORDER BY time 't' is NULL") != NULL);
  rig_free(&a);
  wm_winfn fn;
  wm_error err;
  wm_error_clear(&err);
  static const char *const visible[] = {"k"};
  wm_sqldedup_spec spec = {.nfields = 1, .fields = visible, .time = NULL};
  CHECK_I64(wm_keyedfn_sqldedup(&fn, &spec, &err), -1);
  CHECK(strstr(err.msg, "no ORDER BY time") != NULL);
}

void test_sqlrank(void) {
  size_t n = sizeof rs / sizeof rs[0], tn = sizeof ts_rs / sizeof ts_rs[0];
  T.current = "sqlrank: deduplication keep last, and checkpoints";
  changelog(1, rs, n, last_expect);
  T.current = "sqlrank: deduplication keep first, and checkpoints";
  changelog(0, rs, n, first_expect);
  T.current = "sqlrank: Top-2 without rn, and checkpoints";
  changelog(2, ts_rs, tn, topn_expect);
  T.current = "sqlrank: Top-2 with rn, and checkpoints";
  changelog(3, ts_rs, tn, topn_rn_expect);
  T.current = "sqlrank: deduplication keyed by a field that may be NULL, and checkpoints";
  changelog(4, null_rs, sizeof null_rs / sizeof null_rs[0], null_expect);
  null_parts();
  T.current = "sqlrank: errors";
  errors();
}
