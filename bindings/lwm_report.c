/* What wmrun prints about a running job: the --metrics table and the --trace-watermarks
 * lines. Reads the core only, so that every binding file may call it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/wm_obs.h"
#include "io/wm_conn.h"
#include "ops/wm_ijoin.h"
#include "ops/wm_keyedop.h"
#include "ops/wm_sqljoin.h"
#include "lwm.h"
#include "lwm_report.h"

static void fmt_time(char *buf, size_t n, int64_t t) {
  if (t == WM_TIME_MIN) snprintf(buf, n, "MIN");
  else if (t == WM_TIME_MAX) snprintf(buf, n, "MAX");
  else snprintf(buf, n, "%lld", (long long)t);
}

/* Input k's own watermark of a two-input operator as --metrics shows it: "-" before any,
 * "4000 idle" when every channel of that input is idle. */
void lwm_input_wm_text(const wm_op *op, int k, char *buf, size_t n) {
  bool idle;
  int64_t v = wm_op_input_wm(op, k, &idle);
  if (v == WM_TIME_MIN) snprintf(buf, n, "-");
  else fmt_time(buf, n, v);
  if (idle) snprintf(buf + strlen(buf), n - strlen(buf), " idle");
}

/* The --metrics line of an interval join ("interval join '...': late left N, ..."). */
static void join_report(const wm_op *op, FILE *f) {
  if (wm_op_is_sqljoin(op)) {
    fprintf(f, "SQL join '%s': keys %zu; rows kept left %llu (%zu distinct), right %llu (%zu distinct)\n",
            op->name, wm_sqljoin_keys(op), (unsigned long long)wm_sqljoin_rows(op, 0),
            wm_sqljoin_distinct(op, 0), (unsigned long long)wm_sqljoin_rows(op, 1), wm_sqljoin_distinct(op, 1));
    return;
  }
  if (!wm_op_is_ijoin(op)) return;
  fprintf(f, "interval join '%s': late left %llu, late right %llu; buffered left %zu, right "
             "%zu, keys %zu\n",
          op->name, (unsigned long long)wm_ijoin_late(op, 0),
          (unsigned long long)wm_ijoin_late(op, 1), wm_ijoin_buffered(op, 0),
          wm_ijoin_buffered(op, 1), wm_ijoin_keys(op));
}

/* What an operator holds: open windows of a window operator, keys of a keyed one. */
long long lwm_op_state(const wm_op *op) {
  if (strcmp(op->vt->kind, "window") == 0) return (long long)wm_winop_open_windows(op);
  if (wm_op_is_keyedop(op)) return (long long)wm_keyedop_keys(op);
  if (wm_op_is_ijoin(op)) return (long long)wm_ijoin_keys(op);
  if (wm_op_is_sqljoin(op)) return (long long)wm_sqljoin_keys(op);
  return -1;
}

void lwm_print_metrics(lwm_bridge *B, FILE *f) {
  /* the operator column fits the longest name (names carry the script path and line) */
  int w = 8;
  for (size_t i = 0; i < B->ctx.nops; i++) {
    int n = (int)strlen(B->ctx.ops[i]->name);
    if (n > w) w = n;
  }
  if (w > 160) w = 160; /* alignment only: longer names are printed whole */
  /* records out: the main output (results); side out: every side output, each listed
   * below; late: dropped, or sent to the late side output (docs/metrics.md) */
  fprintf(f, "%-*s %11s %11s %9s %20s %12s %12s %8s\n", w, "operator", "records in", "records out",
          "side out", "watermark", "late dropped", "late to side", "windows");
  for (size_t i = 0; i < B->ctx.nops; i++) {
    wm_op *op = B->ctx.ops[i];
    char wm[32], st[32];
    fmt_time(wm, sizeof wm, op->wm);
    if (op->wm == WM_TIME_MIN) snprintf(wm, sizeof wm, "-");
    if (wm_op_is_tsop(op) && wm_tsop_is_idle(op)) snprintf(wm + strlen(wm), sizeof wm - strlen(wm), " idle");
    long long state = lwm_op_state(op);
    if (state < 0) snprintf(st, sizeof st, "-");
    else snprintf(st, sizeof st, "%lld", state);
    uint64_t side = 0;
    for (int p = 1; p < op->nports; p++)
      if (op->ports[p].side) side += op->ports[p].records;
    fprintf(f, "%-*s %11llu %11llu %9llu %20s %12llu %12llu %8s\n", w, op->name,
            (unsigned long long)op->m.records_in, (unsigned long long)op->m.records_out,
            (unsigned long long)side, wm, (unsigned long long)op->m.late_dropped,
            (unsigned long long)op->m.late_side, st);
    /* a two-input operator: a row per input (its records, own watermark, late records) */
    for (int k = 0; k < 2 && op->in2 != INT_MAX; k++) {
      const char *name = k == 0 ? "  input 1" : "  input 2";
      lwm_input_wm_text(op, k, wm, sizeof wm);
      const wm_input_metrics *in = &op->m.in[k];
      fprintf(f, "%-*s %11llu %11s %9s %20s %12llu %12llu %8s\n", w, name,
              (unsigned long long)in->records, "-", "-", wm,
              (unsigned long long)in->late_dropped, (unsigned long long)in->late_side, "-");
    }
  }
  for (size_t i = 0; i < B->ctx.nops; i++) { /* each side output on its own */
    const wm_op *op = B->ctx.ops[i];
    for (int p = 1; p < op->nports; p++)
      if (op->ports[p].side)
        fprintf(f, "side output '%s' of '%s': %llu record%s\n", op->ports[p].tag, op->name,
                (unsigned long long)op->ports[p].records, op->ports[p].records == 1 ? "" : "s");
  }
  for (size_t i = 0; i < B->ctx.nops; i++) { /* keyed state: keys held, and dropped by a TTL */
    const wm_op *op = B->ctx.ops[i];
    if (!wm_op_is_keyedop(op)) continue;
    fprintf(f, "keys of '%s': %zu held", op->name, wm_keyedop_keys(op));
    if (wm_keyedop_ttl(op) > 0)
      fprintf(f, ", %llu expired (state_ttl)", (unsigned long long)wm_keyedop_expired(op));
    fputc('\n', f);
  }
  for (size_t i = 0; i < B->ctx.nops; i++) join_report(B->ctx.ops[i], f); /* per side */
  for (size_t i = 0; i < B->ctx.nops; i++) /* parse_csv/parse_json with on_error = "skip" */
    if (B->ctx.ops[i]->m.parse_errors)
      fprintf(f, "parse errors: %llu in '%s'\n",
              (unsigned long long)B->ctx.ops[i]->m.parse_errors, B->ctx.ops[i]->name);
  wm_buf al; /* watermark alignment of read_kafka / read_nats (docs/connectors.md) */
  wm_buf_init(&al);
  wm_partsrc_metrics(&B->ctx, &al);
  if (al.len) fwrite(al.data, 1, al.len, f);
  wm_buf_free(&al);
  fflush(f);
}

/* One line per watermark advance or status change:
 *   [watermark] OP: channel N: OLD -> NEW        the combined input of OP advanced
 *   [watermark] OP: channel N: idle | active     the channel's status changed the input's
 *   [watermark] OP: generated: OLD -> NEW        an assigner's generator emitted
 *   [watermark] OP: generated: idle | active
 * A two-input operator's lines say which input the channel is of, and end with both inputs'
 * own watermarks; an input's watermark or status that changes while the other input holds
 * the operator's back has a line of its own:
 *   [watermark] OP: channel N (input K): OLD -> NEW [input 1: A, input 2: B]
 *   [watermark] OP: channel N (input K): input K OLD -> NEW, held at W [input 1: A, input 2: B]
 *   [watermark] OP: channel N (input K): input K idle | active (watermark W) [...] */
void lwm_trace_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                  const char *status) {
  (void)ud;
  char a[24], b[24], where[48], both[96] = "";
  fmt_time(a, sizeof a, old_wm);
  fmt_time(b, sizeof b, new_wm);
  int two = op->in2 != INT_MAX && chan >= 0, in = wm_op_input_of(op, chan) + 1;
  if (chan < 0) snprintf(where, sizeof where, "generated");
  else if (two) snprintf(where, sizeof where, "channel %d (input %d)", chan + 1, in);
  else snprintf(where, sizeof where, "channel %d", chan + 1);
  if (two) {
    char w1[32], w2[32];
    lwm_input_wm_text(op, 0, w1, sizeof w1);
    lwm_input_wm_text(op, 1, w2, sizeof w2);
    snprintf(both, sizeof both, " [input 1: %s, input 2: %s]", w1, w2);
  }
  if (two && status && strcmp(status, "input") == 0) {
    char held[24];
    fmt_time(held, sizeof held, op->wm);
    fprintf(stderr, "[watermark] %s: %s: input %d %s -> %s, held at %s%s\n", op->name, where, in,
            a, b, held, both);
  } else if (two && status && strncmp(status, "input ", 6) == 0) {
    fprintf(stderr, "[watermark] %s: %s: input %d %s (watermark %s)%s\n", op->name, where, in,
            status + 6, a, both);
  } else if (status) {
    fprintf(stderr, "[watermark] %s: %s: %s (watermark %s)%s\n", op->name, where, status, a, both);
  } else {
    fprintf(stderr, "[watermark] %s: %s: %s -> %s%s\n", op->name, where, a, b, both);
  }
}

/* A time of the JSON trace: a number, or "MIN" / "MAX" for the extremes. */
static void json_time(wm_buf *b, int64_t t) {
  if (t == WM_TIME_MIN) wm_buf_adds(b, "\"MIN\"");
  else if (t == WM_TIME_MAX) wm_buf_adds(b, "\"MAX\"");
  else wm_buf_add_int(b, t);
}

/* --trace-watermarks=json: the events of lwm_trace_fn, one JSON object a line on stderr
 * (docs/watermarks.md lists the fields). kind: "watermark" (OLD -> NEW), "idle", "active",
 * "input_watermark" (an input moved, held at W), "input_idle", "input_active". */
void lwm_trace_json_fn(void *ud, const wm_op *op, int chan, int64_t old_wm, int64_t new_wm,
                       const char *status) {
  (void)ud;
  int two = op->in2 != INT_MAX && chan >= 0, in = wm_op_input_of(op, chan) + 1;
  const char *kind = "watermark";
  if (status && strcmp(status, "input") == 0) kind = two ? "input_watermark" : "watermark";
  else if (status && strcmp(status, "input idle") == 0) kind = "input_idle";
  else if (status && strcmp(status, "input active") == 0) kind = "input_active";
  else if (status) kind = status;
  wm_buf b;
  wm_buf_init(&b);
  wm_buf_adds(&b, "{\"kind\":");
  wm_buf_add_json_string(&b, kind, strlen(kind));
  wm_buf_adds(&b, ",\"operator\":");
  wm_buf_add_json_string(&b, op->name, strlen(op->name));
  wm_buf_adds(&b, ",\"subtask\":");
  wm_buf_add_int(&b, op->subtask + 1);
  wm_buf_adds(&b, ",\"parallelism\":");
  wm_buf_add_int(&b, op->nsub > 0 ? op->nsub : 1);
  if (chan < 0) {
    wm_buf_adds(&b, ",\"source\":\"generated\"");
  } else {
    wm_buf_adds(&b, ",\"source\":\"channel\",\"channel\":");
    wm_buf_add_int(&b, chan + 1);
  }
  if (two) {
    wm_buf_adds(&b, ",\"input\":");
    wm_buf_add_int(&b, in);
  }
  if (status && strcmp(kind, "watermark") != 0 && strcmp(kind, "input_watermark") != 0) {
    wm_buf_adds(&b, ",\"watermark\":");
    json_time(&b, old_wm);
  } else {
    wm_buf_adds(&b, ",\"from\":");
    json_time(&b, old_wm);
    wm_buf_adds(&b, ",\"to\":");
    json_time(&b, new_wm);
  }
  if (strcmp(kind, "input_watermark") == 0) {
    wm_buf_adds(&b, ",\"held_at\":");
    json_time(&b, op->wm);
  }
  if (two) {
    wm_buf_adds(&b, ",\"inputs\":[");
    for (int k = 0; k < 2; k++) {
      bool idle;
      int64_t v = wm_op_input_wm(op, k, &idle);
      wm_buf_adds(&b, k ? ",{\"watermark\":" : "{\"watermark\":");
      if (v == WM_TIME_MIN) wm_buf_adds(&b, "null");
      else json_time(&b, v);
      wm_buf_adds(&b, idle ? ",\"idle\":true}" : ",\"idle\":false}");
    }
    wm_buf_adds(&b, "]");
  }
  wm_buf_adds(&b, ",\"processing_time\":");
  wm_buf_add_int(&b, wm_ctx_now(op->ctx));
  wm_buf_adds(&b, "}\n");
  if (b.oom) fprintf(stderr, "[watermark] (trace line lost: out of memory)\n");
  else if (ud) lwm_rectrace_write(ud, b.data, b.len, 1); /* after the keyed events before it */
  else fwrite(b.data, 1, b.len, stderr);
  wm_buf_free(&b);
}

/* ---- --trace-watermarks=json,records: the keyed events ----------------------------------
 *
 * An observer (ctx->observe) that writes a JSON line per record at a keyed operator ("record":
 * at a window operator the first window it went into, at a process function its call), per
 * late record ("late"), per window firing ("firing") and per process-function timer
 * ("timer"). Installed only with the option: without it the operators' observe branches
 * stay untaken.
 *
 * A window operator reports a record once per window it goes into (sliding windows: several,
 * in the assigner's order, newest start first). One record's windows come one after the
 * other at its operator with its timestamp, key and strictly decreasing starts, and the next
 * record's first window never starts before the previous record's last (windows turn late
 * from the oldest up): a window event of the same (operator, timestamp, key) whose start is
 * below the run's last start is the same record, any other a new one. */

#define RUN_OPS 16

#define OUT_FLUSH 32768 /* bytes of lines held before they are written */

struct lwm_rectrace {
  struct {
    const wm_op *op;
    int64_t ts, start;
    uint64_t khash;
  } run[RUN_OPS];
  wm_buf key, line;
  wm_buf out; /* lines not written yet */
  int buffered;
};

lwm_rectrace *lwm_rectrace_new(int buffered) {
  lwm_rectrace *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  wm_buf_init(&r->key);
  wm_buf_init(&r->line);
  wm_buf_init(&r->out);
  r->buffered = buffered;
  return r;
}

void lwm_rectrace_flush(lwm_rectrace *r) {
  if (!r || r->out.len == 0) return;
  fwrite(r->out.data, 1, r->out.len, stderr);
  fflush(stderr);
  wm_buf_clear(&r->out);
}

void lwm_rectrace_write(lwm_rectrace *r, const char *s, size_t n, int flush) {
  if (!r->buffered) {
    fwrite(s, 1, n, stderr);
    return;
  }
  wm_buf_add(&r->out, s, n);
  if (r->out.oom) { /* write what is held, then this line on its own */
    wm_buf_clear(&r->out);
    r->out.oom = 0;
    fprintf(stderr, "[watermark] (trace lines lost: out of memory)\n");
    fwrite(s, 1, n, stderr);
    return;
  }
  if (flush || r->out.len >= OUT_FLUSH) lwm_rectrace_flush(r);
}

void lwm_rectrace_free(lwm_rectrace *r) {
  if (!r) return;
  lwm_rectrace_flush(r);
  wm_buf_free(&r->key);
  wm_buf_free(&r->line);
  wm_buf_free(&r->out);
  free(r);
}

/* {"kind":K,"operator":..,"subtask":..,"parallelism":.. (as the watermark lines) */
static void json_head(wm_buf *b, const char *kind, const wm_op *op) {
  wm_buf_adds(b, "{\"kind\":");
  wm_buf_add_json_string(b, kind, strlen(kind));
  wm_buf_adds(b, ",\"operator\":");
  wm_buf_add_json_string(b, op->name, strlen(op->name));
  wm_buf_adds(b, ",\"subtask\":");
  wm_buf_add_int(b, op->subtask + 1);
  wm_buf_adds(b, ",\"parallelism\":");
  wm_buf_add_int(b, op->nsub > 0 ? op->nsub : 1);
}

/* The key as `print` shows it (r->key), and a hash of that text. */
static uint64_t key_text(lwm_rectrace *r, const wm_op *op, const wm_value *key) {
  wm_buf_clear(&r->key);
  if (key) wm_format_value(&r->key, key, 0, op->ctx->host.format, op->ctx->host.ud);
  uint64_t h = UINT64_C(1469598103934665603);
  for (size_t i = 0; i < r->key.len; i++) h = (h ^ (unsigned char)r->key.data[i]) * UINT64_C(1099511628211);
  return key ? h : 0;
}

/* Whether this window event starts a new record (see above), noting it in the run. */
static int new_record(lwm_rectrace *r, const wm_op *op, int64_t ts, uint64_t kh, int64_t start) {
  int k = 0;
  while (k < RUN_OPS && r->run[k].op && r->run[k].op != op) k++;
  if (k == RUN_OPS) k = (int)(((uintptr_t)op >> 4) % RUN_OPS); /* more operators: shared */
  int same = r->run[k].op == op && r->run[k].ts == ts && r->run[k].khash == kh &&
             start < r->run[k].start;
  r->run[k].op = op;
  r->run[k].ts = ts;
  r->run[k].khash = kh;
  r->run[k].start = start;
  return !same;
}

void lwm_trace_records_fn(void *ud, const wm_op *op, const wm_obs *ev) {
  lwm_rectrace *r = ud;
  const char *kind;
  switch (ev->kind) {
  case WM_OBS_WINDOW:
  case WM_OBS_ARRIVE: kind = "record"; break;
  case WM_OBS_LATE: kind = "late"; break;
  case WM_OBS_FIRE: kind = "firing"; break;
  case WM_OBS_TIMER: kind = "timer"; break;
  default: return;
  }
  uint64_t kh = key_text(r, op, ev->key);
  if (ev->kind == WM_OBS_WINDOW && !new_record(r, op, ev->ts, kh, ev->window.start)) return;
  wm_buf *b = &r->line;
  wm_buf_clear(b);
  json_head(b, kind, op);
  wm_buf_adds(b, ",\"key\":");
  if (ev->key) wm_buf_add_json_string(b, r->key.data ? r->key.data : "", r->key.len);
  else wm_buf_adds(b, "null");
  if (op->in2 != INT_MAX && op->cur_in) {
    wm_buf_adds(b, ",\"input\":");
    wm_buf_add_int(b, op->cur_in);
  }
  switch (ev->kind) {
  case WM_OBS_FIRE:
    wm_buf_adds(b, ",\"start\":");
    json_time(b, ev->window.start);
    wm_buf_adds(b, ",\"end\":");
    json_time(b, ev->window.stop);
    wm_buf_adds(b, ev->flag ? ",\"late\":true" : ",\"late\":false");
    break;
  case WM_OBS_TIMER:
    wm_buf_adds(b, ",\"time\":");
    json_time(b, ev->ts);
    wm_buf_adds(b, ev->flag == WM_TIME_PROCESSING ? ",\"domain\":\"processing\""
                                                  : ",\"domain\":\"event\"");
    break;
  default:
    wm_buf_adds(b, ",\"timestamp\":");
    json_time(b, ev->ts);
  }
  if (ev->kind == WM_OBS_LATE) {
    wm_buf_adds(b, ",\"late_by\":");
    wm_buf_add_int(b, (int64_t)((uint64_t)ev->watermark - (uint64_t)ev->ts));
    wm_buf_adds(b, ",\"allowed_lateness\":");
    wm_buf_add_int(b, ev->lateness);
    if (ev->flag) {
      wm_buf_adds(b, ",\"dropped\":false,\"side_output\":");
      wm_buf_add_json_string(b, ev->tag ? ev->tag : "", ev->tag ? strlen(ev->tag) : 0);
    } else {
      wm_buf_adds(b, ",\"dropped\":true");
    }
  }
  wm_buf_adds(b, ",\"watermark\":");
  json_time(b, ev->watermark);
  wm_buf_adds(b, ",\"processing_time\":");
  wm_buf_add_int(b, wm_ctx_now(op->ctx));
  wm_buf_adds(b, "}\n");
  if (b->oom || r->key.oom) fprintf(stderr, "[watermark] (trace line lost: out of memory)\n");
  else lwm_rectrace_write(r, b->data, b->len, 0);
}

/* The trace mode of a `trace_watermarks` / `trace` option: 0 off, 1 text, 2 JSON, 3 JSON
 * with the keyed events; -1 an unknown string. */
int lwm_trace_mode(const char *s, int truthy) {
  if (!s) return truthy ? 1 : 0;
  if (strcmp(s, "text") == 0) return 1;
  if (strcmp(s, "json") == 0) return 2;
  if (strcmp(s, "json,records") == 0) return 3;
  return -1;
}
