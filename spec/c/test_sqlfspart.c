/* The partitioned filesystem sink in C (ops/wm_sqlfspart.h): the CSV fields, values, folder
 * names and partition times worked out by hand from the Lua sink's rules (values.lua's
 * to_string and parse_timestamp, connector_fs_partitioned.lua's escape, connectors.lua's CSV
 * quoting); a run on a virtual clock (commits by the watermark, rolls by the rollover check,
 * a committed partition's next file, the end of the input) whose folder is worked out by hand,
 * also when a checkpoint taken between any two steps is restored into a fresh operator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_snapshot.h"
#include "ops/wm_sqlfspart.h"
#include "test.h"
#include "time/wm_time.h"

static const char *text_of(void (*fn)(wm_buf *, const char *, size_t, char), const char *s, size_t n, char d) {
  static wm_buf b;
  wm_buf_free(&b);
  wm_buf_init(&b);
  fn(&b, s, n, d);
  return b.data ? b.data : "";
}

static void csv_field(wm_buf *b, const char *s, size_t n, char d) { wm_fspart_csv_field(b, s, n, d); }
static void escape(wm_buf *b, const char *s, size_t n, char d) { (void)d; wm_fspart_escape(b, s, n); }

static const char *value_text(wm_value v, uint8_t kind) {
  static wm_buf b;
  wm_buf_free(&b);
  wm_buf_init(&b);
  wm_fspart_value(&b, &v, kind);
  return b.data ? b.data : "";
}

static int64_t ts_of(const char *s) {
  int64_t ms = -42;
  return wm_fspart_parse_ts(s, strlen(s), &ms) == 0 ? ms : -1;
}

static void text(void) {
  /* CSV: quoted (quotes doubled) when it holds the delimiter, '"', CR or LF */
  CHECK_STR(text_of(csv_field, "plain", 5, ','), "plain");
  CHECK_STR(text_of(csv_field, "", 0, ','), "");
  CHECK_STR(text_of(csv_field, "a,b", 3, ','), "\"a,b\"");
  CHECK_STR(text_of(csv_field, "a,b", 3, ';'), "a,b");
  CHECK_STR(text_of(csv_field, "a;b", 3, ';'), "\"a;b\"");
  CHECK_STR(text_of(csv_field, "say \"hi\"", 8, ','), "\"say \"\"hi\"\"\"");
  CHECK_STR(text_of(csv_field, "\"", 1, ','), "\"\"\"\"");
  CHECK_STR(text_of(csv_field, "l1\nl2", 5, ','), "\"l1\nl2\"");
  CHECK_STR(text_of(csv_field, "cr\r", 3, ','), "\"cr\r\"");
  CHECK_STR(text_of(csv_field, "tab\tx", 5, ','), "tab\tx");
  /* folder names: Flink's escapes as %XX (upper-case hex), bytes >= 128 and blanks as they are */
  CHECK_STR(text_of(escape, "00:01", 5, 0), "00%3A01");
  CHECK_STR(text_of(escape, "a/b=c%d", 7, 0), "a%2Fb%3Dc%25d");
  CHECK_STR(text_of(escape, "\"#'*?\\{[]^", 10, 0), "%22%23%27%2A%3F%5C%7B%5B%5D%5E");
  CHECK_STR(text_of(escape, "\t\x7f" "x y", 5, 0), "%09%7Fx y");
  CHECK_STR(text_of(escape, "\xc3\xa9", 2, 0), "\xc3\xa9");
  /* values: to_string of the column's type */
  CHECK_STR(value_text(wm_int(42), WM_FSP_PLAIN), "42");
  CHECK_STR(value_text(wm_int(-7), WM_FSP_PLAIN), "-7");
  CHECK_STR(value_text(wm_float(0.1), WM_FSP_PLAIN), "0.1");
  CHECK_STR(value_text(wm_float(2.0), WM_FSP_PLAIN), "2.0");
  CHECK_STR(value_text(wm_float(1e10), WM_FSP_PLAIN), "1.0E10");
  CHECK_STR(value_text(wm_float(-2.5e-5), WM_FSP_PLAIN), "-2.5E-5");
  CHECK_STR(value_text(wm_bool(true), WM_FSP_BOOLEAN), "TRUE");
  CHECK_STR(value_text(wm_bool(false), WM_FSP_BOOLEAN), "FALSE");
  CHECK_STR(value_text(wm_cstr("a,b", 3), WM_FSP_STRING), "a,b");
  /* 2015-07-15 is day 16631 (45 years with 11 leap days, then 181 + 14 days): 1436918400 s */
  CHECK_STR(value_text(wm_int(0), WM_FSP_TIMESTAMP), "1970-01-01 00:00:00.000");
  CHECK_STR(value_text(wm_int(1436918460123), WM_FSP_TIMESTAMP), "2015-07-15 00:01:00.123");
  CHECK_STR(value_text(wm_int(1436918400000 + 86399999), WM_FSP_TIMESTAMP), "2015-07-15 23:59:59.999");
  CHECK_STR(value_text(wm_int(-1), WM_FSP_TIMESTAMP), "1969-12-31 23:59:59.999");
  CHECK_STR(value_text(wm_int(1436918460123), WM_FSP_PLAIN), "1436918460123");
  /* partition times (parse_timestamp): blanks around, 1-digit month, day and hour, 'T' */
  CHECK_I64(ts_of("2015-07-15 00:01:00"), 1436918460000);
  CHECK_I64(ts_of("2015-07-15"), 1436918400000);
  CHECK_I64(ts_of(" 2015-7-5 1:02 "), 1436054400000 + 3720000); /* July 5: 10 days before */
  CHECK_I64(ts_of("2015-07-15T00:01:00.5"), 1436918460500);
  CHECK_I64(ts_of("2015-07-15 00:01:00.1234"), 1436918460123);
  CHECK_I64(ts_of("1970-01-02"), 86400000);
  CHECK_I64(ts_of("2015-13-01"), -1);
  CHECK_I64(ts_of("2015-07-15 24:00"), -1);
  CHECK_I64(ts_of("2015-07-15 00:1"), -1);
  CHECK_I64(ts_of("2015-07-15 00:01:"), -1);
  CHECK_I64(ts_of("2015-07-15 00:01:00."), -1);
  CHECK_I64(ts_of("__DEFAULT_PARTITION__ 10:00:00"), -1);
  CHECK_I64(ts_of("2015-07-15x"), -1);
}

/* ---- a run on a virtual clock ------------------------------------------------------- */

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

typedef struct rig {
  wm_ctx ctx;
  wm_op *op;
  wm_schema *s;
  int64_t now;
  int npt;           /* processing-time timers asked for */
  int64_t pt[16];
} rig;

static int64_t rig_now(void *ud) { return ((rig *)ud)->now; }

static int rig_pt(void *ud, wm_op *op, int64_t t) {
  (void)op;
  rig *g = ud;
  if (g->npt == 16) return WM_ERR;
  g->pt[g->npt++] = t;
  return WM_OK;
}

static void rig_init(rig *g, const char *dir) {
  memset(g, 0, sizeof *g);
  wm_ctx_init(&g->ctx);
  g->ctx.now = rig_now;
  g->ctx.now_ud = g;
  g->ctx.pt_register = rig_pt;
  g->ctx.pt_ud = g;
  g->now = 1000;
  static const char *const names[] = {"a", "s", "dt", "hm"};
  static const uint8_t types[] = {WM_FT_INTEGER, WM_FT_ANY, WM_FT_STRING, WM_FT_STRING};
  g->s = wm_schema_new(4, names, types);
  static const char *const cols[] = {"dt", "hm"}, *const fields[] = {"a", "s"};
  static const uint8_t ck[] = {WM_FSP_STRING, WM_FSP_STRING}, fk[] = {WM_FSP_PLAIN, WM_FSP_STRING};
  wm_fspart_config cfg = {.path = dir, .ncols = 2, .cols = cols, .col_kinds = ck, .nfields = 2, .fields = fields,
                          .kinds = fk, .delim = ',', .null_literal = "", .partition_time = 1, .success = 1,
                          .delay = 60000, .rollover = 120000, .check = 60000, .pattern = "$dt $hm:00",
                          .what = "table 'out'"};
  g->op = wm_fspart_new(&g->ctx, "write partitions (out)", &cfg);
  CHECK(g->op != NULL);
  wm_op *src = wm_op_new(&g->ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, g->op);
  CHECK_I64(wm_ctx_prepare(&g->ctx), WM_OK);
}

static void rig_free(rig *g) {
  wm_ctx_free(&g->ctx);
  wm_schema_release(g->s);
}

static int row(rig *g, int64_t a, const char *s, const char *hm) {
  wm_row *r = wm_row_new(g->s);
  r->fields[0] = wm_int(a);
  if (s) {
    r->fields[1] = wm_cstr(s, strlen(s));
    wm_value_retain(NULL, &r->fields[1]);
  }
  r->fields[2] = wm_cstr("2020-01-01", 10);
  wm_value_retain(NULL, &r->fields[2]);
  r->fields[3] = wm_cstr(hm, strlen(hm));
  wm_value_retain(NULL, &r->fields[3]);
  wm_value v = wm_row_value(r);
  int rc = wm_op_input_record(g->op, 0, &v, 0);
  wm_value_release(NULL, &v);
  return rc;
}

/* 2020-01-01 10:00:00 UTC: day 18262 (50 years with 12 leap days), + 10 h */
#define T0 (18262LL * 86400000 + 36000000)
#define NSTEPS 8

/* Step i of the run (by hand, the files it leaves in the comments):
 * 0  now 1000: 1 "x,y" into hm=10:00 (its time T0: the commit at T0 + 1 min); the check at 61000
 * 1  2 NULL into hm=10:01 (commit at T0 + 2 min)
 * 2  watermark T0 + 1 min: hm=10:00 commits: part-0-0 "1,\"x,y\"", _SUCCESS
 * 3  3 say "hi" into hm=10:00 again: a new file (commit at max(T0 + 1 min, W + 1) = T0 + 1 min + 1 ms)
 * 4  the check at 61000: both files open 60 s < 2 min: nothing rolls; the next check at 121000
 * 5  now 121000, the check: both open 2 min: hm=10:00 part-0-1, hm=10:01 part-0-0 "2,"; none open
 * 6  4 "l1\nl2" into hm=10:01 (commit at T0 + 2 min again); the check at 181000
 * 7  the end: T0 + 1 min + 1 ms commits hm=10:00 (nothing to roll, _SUCCESS again); T0 + 2 min
 *    hm=10:01: part-0-1 "4,\"l1\nl2\"", _SUCCESS */
static int step(rig *g, int i) {
  wm_op *op = g->op;
  switch (i) {
  case 0: return row(g, 1, "x,y", "10:00");
  case 1: return row(g, 2, NULL, "10:01");
  case 2: return wm_op_input_watermark(op, 0, T0 + 60000);
  case 3: return row(g, 3, "say \"hi\"", "10:00");
  case 4: g->now = 61000; return op->vt->processing_time(op, 61000);
  case 5: g->now = 121000; return op->vt->processing_time(op, 121000);
  case 6: return row(g, 4, "l1\nl2", "10:01");
  default: return wm_op_input_watermark(op, 0, WM_TIME_MAX);
  }
}

static const char *const expect_tree =
    "dt=2020-01-01/hm=10%3A00/_SUCCESS=\n"
    "dt=2020-01-01/hm=10%3A00/part-0-0=1,\"x,y\"\n\n"
    "dt=2020-01-01/hm=10%3A00/part-0-1=3,\"say \"\"hi\"\"\"\n\n"
    "dt=2020-01-01/hm=10%3A01/_SUCCESS=\n"
    "dt=2020-01-01/hm=10%3A01/part-0-0=2,\n\n"
    "dt=2020-01-01/hm=10%3A01/part-0-1=4,\"l1\nl2\"\n\n";

/* "path=bytes\n" for every file under dir (hidden ones too), sorted by path */
static void tree(const char *dir, wm_buf *out) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cd '%s' && find . -type f | LC_ALL=C sort", dir);
  FILE *p = popen(cmd, "r");
  char line[512];
  while (p && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = '\0';
    wm_buf_adds(out, line + 2);
    wm_buf_addc(out, '=');
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, line + 2);
    FILE *f = fopen(path, "rb");
    char buf[256];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) wm_buf_add(out, buf, n);
    if (f) fclose(f);
    wm_buf_addc(out, '\n');
  }
  if (p) pclose(p);
}

static void run(void) {
  const char *tmp = getenv("TMPDIR");
  char tmpl[200];
  snprintf(tmpl, sizeof tmpl, "%s/wm-fspart-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  char *base = mkdtemp(tmpl);
  CHECK(base != NULL);
  if (!base) return;
  char dir[256], cmd[300];
  if (strlen(base) > 200) return;
  snprintf(dir, sizeof dir, "%s/out", base);
  for (int cut = 0; cut <= NSTEPS; cut++) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    rig a, b;
    parts ps = {0};
    rig_init(&a, dir);
    for (int i = 0; i < cut; i++) CHECK_I64(step(&a, i), WM_OK);
    CHECK_I64(wm_ctx_snapshot(&a.ctx, 0, NULL, put_part, &ps), WM_OK);
    rig_init(&b, dir);
    b.now = a.now;
    int rc = wm_ctx_restore(&b.ctx, 0, NULL, ps.p, ps.n);
    CHECK_I64(rc, WM_OK);
    if (rc != WM_OK) fprintf(stderr, "  restore at %d: %s\n", cut, wm_ctx_errtext(&b.ctx));
    /* the processing-time timer pending at the cut, asked for again */
    if (cut >= 1 && cut <= 4) CHECK(b.npt == 1 && b.pt[0] == 61000);
    if (cut == 5) CHECK(b.npt == 1 && b.pt[0] == 121000);
    if (cut == 0 || cut == 6) CHECK_I64(b.npt, 0);
    if (cut >= 7) CHECK(b.npt == 1 && b.pt[0] == 181000);
    for (int i = cut; i < NSTEPS; i++) CHECK_I64(step(&b, i), WM_OK);
    wm_buf got;
    wm_buf_init(&got);
    tree(dir, &got);
    CHECK_STR(got.data, expect_tree);
    if (got.data && strcmp(got.data, expect_tree) != 0) fprintf(stderr, "  (cut after step %d)\n", cut);
    wm_buf_free(&got);
    rig_free(&a);
    rig_free(&b);
    for (size_t i = 0; i < ps.n; i++) {
      free((char *)ps.p[i].name);
      free((uint8_t *)ps.p[i].data);
    }
  }
  /* a partition time that is no timestamp fails the record, naming the table and the text */
  rig g;
  rig_init(&g, dir);
  CHECK_I64(row(&g, 1, "x", "noon"), WM_ERR);
  CHECK(strstr(wm_ctx_errtext(&g.ctx), "table 'out': the partition time '2020-01-01 noon:00'") != NULL);
  rig_free(&g);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  CHECK(system(cmd) == 0);
}

void test_sqlfspart(void) {
  T.current = "sqlfspart: CSV fields, values, folder names, partition times";
  text();
  T.current = "sqlfspart: commits, rolls and the end on a virtual clock, and checkpoints";
  run();
}
