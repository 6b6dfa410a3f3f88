/* The live view's JSON (see wm_ui.h). */
#include "exec/wm_ui.h"

#include <string.h>

#include "time/wm_time.h"

static void key(wm_buf *b, const char *k) {
  wm_buf_addc(b, '"');
  wm_buf_adds(b, k);
  wm_buf_adds(b, "\":");
}

static void kv_int(wm_buf *b, const char *k, int64_t v, int comma) {
  key(b, k);
  wm_buf_add_int(b, v);
  if (comma) wm_buf_addc(b, ',');
}

static void kv_num(wm_buf *b, const char *k, double v) {
  key(b, k);
  wm_buf_add_float(b, v);
  wm_buf_addc(b, ',');
}

static void str(wm_buf *b, const char *s) { wm_buf_add_json_string(b, s, strlen(s)); }

/* null before the first watermark, "end" after the last, else ms since the epoch */
static void add_wm(wm_buf *b, int64_t w) {
  if (w == WM_TIME_MIN) wm_buf_adds(b, "null");
  else if (w == WM_TIME_MAX) wm_buf_adds(b, "\"end\"");
  else wm_buf_add_int(b, w);
}

/* A port's tag as shown: wmrun's own ports ("\1..."): the text after the marker. */
static void add_tag(wm_buf *b, const char *tag) {
  if (!tag) wm_buf_adds(b, "null");
  else str(b, tag[0] == '\1' ? tag + 1 : tag);
}

static size_t op_index(const wm_ctx *ctx, const wm_op *op) {
  for (size_t i = 0; i < ctx->nops; i++)
    if (ctx->ops[i] == op) return i;
  return SIZE_MAX;
}

static void add_op(wm_buf *b, const wm_ctx *ctx, size_t i, int64_t now) {
  const wm_op *op = ctx->ops[i];
  wm_buf_addc(b, '{');
  kv_int(b, "id", (int64_t)i, 1);
  key(b, "name");
  str(b, op->name);
  wm_buf_addc(b, ',');
  key(b, "kind");
  str(b, op->vt->kind);
  wm_buf_addc(b, ',');
  kv_int(b, "records_in", (int64_t)op->m.records_in, 1);
  kv_int(b, "records_out", (int64_t)op->m.records_out, 1);
  kv_int(b, "late_dropped", (int64_t)op->m.late_dropped, 1);
  kv_int(b, "late_side", (int64_t)op->m.late_side, 1);
  key(b, "watermark");
  add_wm(b, op->wm);
  wm_buf_addc(b, ',');
  key(b, "lag_ms");
  if (op->wm == WM_TIME_MIN) wm_buf_adds(b, "null");
  else wm_buf_add_int(b, op->wm == WM_TIME_MAX ? 0 : wm_time_sub_sat(now, op->wm));
  wm_buf_adds(b, ",\"channels\":[");
  for (int c = 0; c < op->comb.n; c++) {
    wm_buf_adds(b, c ? ",{\"watermark\":" : "{\"watermark\":");
    add_wm(b, op->comb.ch[c].wm);
    wm_buf_adds(b, op->comb.ch[c].idle ? ",\"idle\":true}" : ",\"idle\":false}");
  }
  wm_buf_addc(b, ']');
  wm_op_gauges g;
  wm_op_gauges_get(op, &g);
  if (g.has_keys) {
    wm_buf_addc(b, ',');
    kv_int(b, "keys", (int64_t)g.keys, 1);
    kv_int(b, "keys_expired", (int64_t)g.keys_expired, 0);
  }
  if (g.has_windows) {
    wm_buf_addc(b, ',');
    kv_int(b, "windows", (int64_t)g.windows, 0);
  }
  if (op->in2 != INT_MAX) {
    wm_buf_adds(b, ",\"inputs\":[");
    for (int k = 0; k < 2; k++) {
      const wm_input_metrics *in = &op->m.in[k];
      bool idle;
      int64_t w = wm_op_input_wm(op, k, &idle);
      wm_buf_adds(b, k ? ",{" : "{");
      kv_int(b, "records", (int64_t)in->records, 1);
      kv_int(b, "late_dropped", (int64_t)in->late_dropped, 1);
      kv_int(b, "late_side", (int64_t)in->late_side, 1);
      key(b, "watermark");
      add_wm(b, w);
      wm_buf_adds(b, idle ? ",\"idle\":true}" : ",\"idle\":false}");
    }
    wm_buf_addc(b, ']');
  }
  wm_buf_adds(b, ",\"side_outputs\":[");
  int first = 1;
  for (int p = 1; p < op->nports; p++) {
    if (!op->ports[p].side) continue;
    wm_buf_adds(b, first ? "{\"tag\":" : ",{\"tag\":");
    first = 0;
    add_tag(b, op->ports[p].tag);
    wm_buf_addc(b, ',');
    kv_int(b, "records", (int64_t)op->ports[p].records, 0);
    wm_buf_addc(b, '}');
  }
  wm_buf_adds(b, "]}");
}

static void add_edges(wm_buf *b, const wm_ctx *ctx) {
  int first = 1;
  wm_buf_adds(b, "\"edges\":[");
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    for (int p = 0; p < op->nports; p++) {
      for (int e = 0; e < op->ports[p].n; e++) {
        size_t to = op_index(ctx, op->ports[p].edges[e].to);
        if (to == SIZE_MAX) continue; /* another thread's operator: not in ctx */
        wm_buf_adds(b, first ? "{" : ",{");
        first = 0;
        kv_int(b, "from", (int64_t)i, 1);
        kv_int(b, "to", (int64_t)to, 1);
        kv_int(b, "chan", op->ports[p].edges[e].chan, 1);
        key(b, "port");
        add_tag(b, op->ports[p].tag);
        wm_buf_adds(b, op->ports[p].side ? ",\"side\":true}" : ",\"side\":false}");
      }
    }
  }
  wm_buf_addc(b, ']');
}

void wm_ui_json(wm_buf *b, const wm_ctx *ctx, const wm_ui_job *job) {
  int64_t now = ctx->now(ctx->now_ud);
  wm_buf_adds(b, "{\"name\":");
  str(b, job->name ? job->name : "wmrun job");
  wm_buf_addc(b, ',');
  kv_int(b, "parallelism", job->parallelism, 1);
  kv_int(b, "threads", job->threads, 1);
  kv_int(b, "thread", job->thread, 1);
  kv_int(b, "now", now, 1);
  if (job->exec) {
    wm_exec *e = job->exec;
    kv_int(b, "uptime_ms", (int64_t)(uv_now(wm_exec_loop(e)) - job->start_ms), 1);
    wm_buf_adds(b, wm_exec_paused(e) ? "\"backpressure\":{\"paused\":true,"
                                     : "\"backpressure\":{\"paused\":false,");
    kv_int(b, "paused_ms", (int64_t)wm_exec_paused_ms(e), 1);
    kv_int(b, "queued_bytes", wm_exec_pressure_bytes(e), 0);
    wm_buf_adds(b, "},");
  }
  key(b, "checkpoints");
  if (job->ckpt) {
    wm_ckptrun_stats st;
    wm_ckptrun_stats_get(job->ckpt, &st);
    wm_buf_addc(b, '{');
    kv_int(b, "taken", (int64_t)st.taken, 1);
    kv_int(b, "last_id", (int64_t)st.last_id, 1);
    kv_num(b, "last_ms", st.last_ms);
    kv_num(b, "total_ms", st.total_ms);
    kv_num(b, "max_ms", st.max_ms);
    kv_int(b, "last_bytes", (int64_t)st.last_bytes, 1);
    kv_int(b, "restored_id", (int64_t)st.restored_id, 0);
    wm_buf_addc(b, '}');
  } else {
    wm_buf_adds(b, "null");
  }
  wm_buf_adds(b, ",\"operators\":[");
  for (size_t i = 0; i < ctx->nops; i++) {
    if (i) wm_buf_addc(b, ',');
    add_op(b, ctx, i, now);
  }
  wm_buf_adds(b, "],");
  add_edges(b, ctx);
  wm_buf_addc(b, '}');
}
