/* Session windows against a brute-force model (issue 34): random inputs that keep hundreds
 * of sessions of a key open at once (the watermark far behind), arriving in order, in
 * reverse and at random, with records behind the watermark (dropped, or merged late within
 * the allowed lateness), bridges that merge several sessions, and one to three keys. The
 * model is Flink's MergingWindowSet and EventTimeTrigger written the plainest way (a list
 * of sessions per key, searched from end to end): a record's window merges every session
 * it intersects or touches; the earliest of them keeps its state (its first record) and
 * creation sequence; a window fires when the watermark passes its max timestamp, windows
 * firing together in order of (max timestamp, creation); a record reaching a window whose
 * end the watermark has passed fires it at once; a window is dropped at max timestamp +
 * lateness; a record that merges nothing and whose own window is past that is dropped and
 * counted. Every emission, in order, and the count of dropped records must be equal. */
#include <stdlib.h>

#include "base/wm_buf.h"
#include "ops/wm_trigger.h"
#include "ops/wm_winop.h"
#include "time/wm_time.h"
#include "test.h"

static uint64_t rnd_next(uint64_t *st) { /* splitmix64 */
  uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static int64_t rnd(uint64_t *st, int64_t n) {
  return n > 0 ? (int64_t)(rnd_next(st) % (uint64_t)n) : 0;
}

typedef struct msess {
  int64_t start, stop; /* [start, stop) */
  int64_t first_ts, first_v, sum, count;
  uint64_t seq;
} msess;

typedef struct model {
  msess *s[3];
  size_t n[3], cap[3];
  int64_t gap, lateness, W, dropped;
  uint64_t seq;
  int agg;
  wm_buf out;
} model;

static const char *const keys[3] = {"a", "b", "c"};

static int64_t m_max_ts(const msess *x) { return x->stop - 1; }

static void m_emit(model *m, int k, const msess *x) {
  char line[200];
  if (m->agg == WM_AGG_COUNT)
    snprintf(line, sizeof line,
             "%lld {\"count\":%lld,\"key\":\"%s\",\"start\":%lld,\"stop\":%lld}\n",
             (long long)m_max_ts(x), (long long)x->count, keys[k], (long long)x->start,
             (long long)x->stop);
  else
    snprintf(line, sizeof line, "%lld {\"id\":\"%s\",\"ts\":%lld,\"vc\":%lld}\n",
             (long long)m_max_ts(x), keys[k], (long long)x->first_ts, (long long)x->sum);
  wm_buf_adds(&m->out, line);
}

static void m_record(model *m, int k, int64_t ts, int64_t v) {
  int64_t start = ts, stop = ts + m->gap;
  msess *s = m->s[k];
  size_t t = SIZE_MAX, hits = 0;
  int64_t cs = start, ce = stop;
  for (size_t j = 0; j < m->n[k]; j++) {
    if (!(s[j].start <= stop && start <= s[j].stop)) continue;
    hits++;
    if (t == SIZE_MAX || s[j].start < s[t].start) t = j;
    if (s[j].start < cs) cs = s[j].start;
    if (s[j].stop > ce) ce = s[j].stop;
  }
  if (hits == 0) {
    if (stop - 1 + m->lateness <= m->W) {
      m->dropped++;
      return;
    }
    if (m->n[k] == m->cap[k]) {
      m->cap[k] = m->cap[k] ? 2 * m->cap[k] : 16;
      m->s[k] = realloc(m->s[k], m->cap[k] * sizeof *m->s[k]);
      if (!m->s[k]) abort();
    }
    m->s[k][m->n[k]++] = (msess){start, stop, ts, v, v, 1, m->seq++};
    if (stop - 1 <= m->W) m_emit(m, k, &m->s[k][m->n[k] - 1]);
    return;
  }
  /* the earliest session takes the others' contents, in any order (sum and count) */
  msess tgt = s[t];
  size_t w = 0;
  for (size_t j = 0; j < m->n[k]; j++) {
    if (s[j].start <= stop && start <= s[j].stop) {
      if (j != t) {
        tgt.sum += s[j].sum;
        tgt.count += s[j].count;
      }
    } else {
      s[w++] = s[j];
    }
  }
  tgt.start = cs;
  tgt.stop = ce;
  tgt.sum += v;
  tgt.count++;
  s[w++] = tgt;
  m->n[k] = w;
  if (ce - 1 <= m->W) m_emit(m, k, &tgt);
}

typedef struct mref {
  int k;
  size_t j;
  int64_t t;
  uint64_t seq;
} mref;

static int cmp_ref(const void *a, const void *b) {
  const mref *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void m_watermark(model *m, int64_t W) {
  size_t n = 0;
  for (int k = 0; k < 3; k++) n += m->n[k];
  mref *r = malloc((n ? n : 1) * sizeof *r);
  if (!r) abort();
  n = 0;
  for (int k = 0; k < 3; k++)
    for (size_t j = 0; j < m->n[k]; j++) {
      msess *x = &m->s[k][j];
      /* not fired yet: its end was after the last watermark */
      if (m_max_ts(x) > m->W && m_max_ts(x) <= W) r[n++] = (mref){k, j, m_max_ts(x), x->seq};
    }
  qsort(r, n, sizeof *r, cmp_ref);
  for (size_t q = 0; q < n; q++) m_emit(m, r[q].k, &m->s[r[q].k][r[q].j]);
  free(r);
  m->W = W;
  for (int k = 0; k < 3; k++) {
    size_t w = 0;
    for (size_t j = 0; j < m->n[k]; j++)
      if (!(W == WM_TIME_MAX || m_max_ts(&m->s[k][j]) + m->lateness <= W)) m->s[k][w++] = m->s[k][j];
    m->n[k] = w;
  }
}

static wm_schema *sschema(void) {
  static const char *const names[] = {"id", "ts", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER};
  return wm_schema_new(3, names, types);
}

/* The first line where a and b differ, for the failure message. */
static void first_diff(const char *a, const char *b, char *out, size_t n) {
  size_t line = 1;
  const char *la = a, *lb = b;
  while (*a && *a == *b) {
    if (*a == '\n') {
      line++;
      la = a + 1;
      lb = b + 1;
    }
    a++;
    b++;
  }
  int ea = (int)strcspn(la, "\n"), eb = (int)strcspn(lb, "\n");
  snprintf(out, n, "line %zu: got \"%.*s\", model \"%.*s\"", line, ea, la, eb, lb);
}

enum { MODE_ASC, MODE_DESC, MODE_RANDOM, MODE_MIXED };

/* One random case: returns the largest number of sessions of one key open at once. */
static size_t session_case(uint64_t seed, int agg, int trig, int lateness_on) {
  uint64_t st = seed;
  model m = {0};
  wm_buf_init(&m.out);
  m.gap = 5 + rnd(&st, 40);
  m.lateness = lateness_on ? 1 + rnd(&st, 4 * m.gap) : 0;
  m.agg = agg;
  m.W = WM_TIME_MIN;
  int nkeys = 1 + (int)rnd(&st, 3), mode = (int)rnd(&st, 4);
  int64_t n = 2000 + rnd(&st, 2000), span = n * m.gap;

  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_winop_config cfg = {0};
  cfg.assigner = (wm_assigner){.kind = WM_WA_SESSION, .gap = m.gap};
  cfg.lateness = m.lateness;
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  CHECK_I64(wm_winfn_builtin(&cfg.fn, agg, "vc"), 0);
  if (trig) cfg.trigger = wm_trigger_new(trig, 0);
  wm_op *w = wm_winop_new(&ctx, "window", &cfg);
  CHECK(w != NULL);
  if (!w) {
    wm_ctx_free(&ctx);
    wm_buf_free(&m.out);
    return 0;
  }
  capture out = {.label = NULL};
  wm_buf_init(&out.out);
  wm_op_connect(w, 0, wm_op_new(&ctx, &capture_vt, &out, "main"));
  wm_op_connect(wm_op_new(&ctx, &capture_vt, NULL, "src"), 0, w);
  CHECK_I64(wm_ctx_prepare(&ctx), WM_OK);
  wm_schema *sc = sschema();
  int64_t maxts = 0;
  size_t most = 0;
  int rc = WM_OK;
  for (int64_t i = 0; i < n && rc == WM_OK; i++) {
    int k = (int)rnd(&st, nkeys);
    int64_t ts, step = m.gap / 2 + rnd(&st, 2 * m.gap); /* about half of them merge */
    int md = mode == MODE_MIXED ? (int)rnd(&st, 3) : mode;
    if (md == MODE_ASC) ts = 1000 + i * step + rnd(&st, m.gap);
    else if (md == MODE_DESC) ts = 1000 + span * 2 - i * step;
    else ts = 1000 + rnd(&st, span * 2);
    if (rnd(&st, 10) == 0 && m.W > 1000 + 5 * m.gap) /* behind the watermark */
      ts = m.W - rnd(&st, m.lateness + 3 * m.gap);
    if (ts < 1) ts = 1;
    if (ts > maxts) maxts = ts;
    wm_row *r = wm_row_new(sc);
    r->fields[0] = wm_cstr(keys[k], 1);
    r->fields[1] = wm_int(ts);
    r->fields[2] = wm_int(1 + rnd(&st, 100));
    int64_t v = r->fields[2].u.i;
    wm_value rv = wm_row_value(r);
    rc = wm_op_input_record(w, 0, &rv, ts);
    wm_value_release(NULL, &rv);
    m_record(&m, k, ts, v);
    for (int q = 0; q < 3; q++)
      if (m.n[q] > most) most = m.n[q];
    /* now and then the watermark moves, far behind the latest record */
    if (rc == WM_OK && rnd(&st, 80) == 0) {
      int64_t W = maxts - rnd(&st, span / 2 + 1);
      if (W > m.W) {
        rc = wm_op_input_watermark(w, 0, W);
        m_watermark(&m, W);
      }
    }
  }
  if (rc == WM_OK) rc = wm_op_input_watermark(w, 0, WM_TIME_MAX);
  m_watermark(&m, WM_TIME_MAX);
  CHECK_I64(rc, WM_OK);
  if (rc != WM_OK) fprintf(stderr, "  %s\n", wm_ctx_errtext(&ctx));
  const char *got = out.out.data ? out.out.data : "", *want = m.out.data ? m.out.data : "";
  if (strcmp(got, want) == 0) {
    T.passed++;
  } else {
    char d[600];
    first_diff(got, want, d, sizeof d);
    fprintf(stderr, "FAIL %s: seed %llu (agg %d, trigger %d, gap %lld, lateness %lld, mode %d): %s\n",
            T.current, (unsigned long long)seed, agg, trig, (long long)m.gap, (long long)m.lateness,
            mode, d);
    T.failed++;
  }
  CHECK_I64(w->m.late_dropped, m.dropped);
  CHECK_I64(wm_winop_open_windows(w), 0);
  wm_schema_release(sc);
  wm_ctx_free(&ctx);
  wm_buf_free(&out.out);
  wm_buf_free(&m.out);
  for (int q = 0; q < 3; q++) free(m.s[q]);
  return most;
}

void test_sessions(void) {
  T.current = "sessions against a brute-force model";
  size_t most = 0;
  for (uint64_t seed = 1; seed <= 48; seed++) {
    int agg = (seed & 1) ? WM_AGG_SUM : WM_AGG_COUNT;
    int trig = (seed & 2) ? WM_TRIG_EVENT_TIME : 0; /* the inlined default, or the trigger object */
    size_t m = session_case(seed * 0x2545f4914f6cdd1dULL, agg, trig, (seed & 4) != 0);
    if (m > most) most = m;
  }
  /* the inputs did keep many sessions of a key open at once */
  CHECK(most >= 300);
  if (most < 300) fprintf(stderr, "  at most %zu sessions of a key open\n", most);
}
