/* The live view's JSON (see wm_ui.h), from the metrics board's snapshots. */
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
static void add_tag(wm_buf *b, const wm_msnap *s, size_t tag) {
  if (tag == SIZE_MAX) wm_buf_adds(b, "null");
  else {
    const char *t = s->names.data + tag;
    str(b, t[0] == '\1' ? t + 1 : t);
  }
}

typedef struct job_view {
  wm_buf *b;
  const wm_ui_job *job;
  int64_t now;
} job_view;

/* The id of the operator whose identity is `id`: its index over every thread's operators
 * in thread order; -1: none. */
static int64_t op_index(const wm_msnap *s, int n, uintptr_t id) {
  int64_t base = 0;
  for (int t = 0; t < n; t++) {
    for (size_t i = 0; i < s[t].nops; i++)
      if (s[t].ops[i].id == id) return base + (int64_t)i;
    base += (int64_t)s[t].nops;
  }
  return -1;
}

static void add_op(wm_buf *b, const wm_msnap *s, int t, const wm_msnap_op *o, int64_t id,
                   int64_t now) {
  const char *name = s->names.data + o->name;
  wm_buf_addc(b, '{');
  kv_int(b, "id", id, 1);
  key(b, "name");
  str(b, name);
  wm_buf_adds(b, ",\"operator\":");
  wm_buf_add_json_string(b, name, o->base_len);
  wm_buf_addc(b, ',');
  kv_int(b, "subtask", o->subtask, 1);
  kv_int(b, "thread", t + 1, 1);
  key(b, "kind");
  str(b, o->kind);
  wm_buf_addc(b, ',');
  kv_int(b, "records_in", (int64_t)o->c[WM_MS_IN], 1);
  kv_int(b, "records_out", (int64_t)o->c[WM_MS_OUT], 1);
  kv_int(b, "late_dropped", (int64_t)o->c[WM_MS_LATE_DROPPED], 1);
  kv_int(b, "late_side", (int64_t)o->c[WM_MS_LATE_SIDE], 1);
  key(b, "watermark");
  add_wm(b, o->wm);
  wm_buf_addc(b, ',');
  key(b, "lag_ms");
  if (o->wm == WM_TIME_MIN) wm_buf_adds(b, "null");
  else wm_buf_add_int(b, o->wm == WM_TIME_MAX ? 0 : wm_time_sub_sat(now, o->wm));
  wm_buf_adds(b, ",\"channels\":[");
  for (size_t c = 0; c < o->nchan; c++) {
    const wm_msnap_chan *ch = &s->chans[o->chan0 + c];
    wm_buf_adds(b, c ? ",{\"watermark\":" : "{\"watermark\":");
    add_wm(b, ch->wm);
    wm_buf_adds(b, ch->idle ? ",\"idle\":true}" : ",\"idle\":false}");
  }
  wm_buf_addc(b, ']');
  if (o->keyed) {
    wm_buf_addc(b, ',');
    kv_int(b, "keys", (int64_t)o->keys, 1);
    kv_int(b, "keys_expired", (int64_t)o->expired, 0);
  }
  if (o->window) {
    wm_buf_addc(b, ',');
    kv_int(b, "windows", (int64_t)o->windows, 0);
  }
  if (o->two) {
    wm_buf_adds(b, ",\"inputs\":[");
    for (int k = 0; k < 2; k++) {
      const wm_input_metrics *in = &o->in[k];
      wm_buf_adds(b, k ? ",{" : "{");
      kv_int(b, "records", (int64_t)in->records, 1);
      kv_int(b, "late_dropped", (int64_t)in->late_dropped, 1);
      kv_int(b, "late_side", (int64_t)in->late_side, 1);
      key(b, "watermark");
      add_wm(b, o->in_wm[k]);
      wm_buf_adds(b, o->in_idle[k] ? ",\"idle\":true}" : ",\"idle\":false}");
    }
    wm_buf_addc(b, ']');
  }
  wm_buf_adds(b, ",\"side_outputs\":[");
  for (size_t i = 0; i < o->nside; i++) {
    const wm_msnap_side *sd = &s->sides[o->side0 + i];
    wm_buf_adds(b, i ? ",{\"tag\":" : "{\"tag\":");
    add_tag(b, s, sd->tag);
    wm_buf_addc(b, ',');
    kv_int(b, "records", (int64_t)sd->records, 0);
    wm_buf_addc(b, '}');
  }
  wm_buf_addc(b, ']');
  if (o->nlag) {
    wm_buf_adds(b, ",\"source_lag\":[");
    for (size_t i = 0; i < o->nlag; i++) {
      const wm_msnap_lag *lg = &s->lags[o->lag0 + i];
      wm_buf_adds(b, i ? ",{\"partition\":" : "{\"partition\":");
      str(b, s->names.data + lg->part);
      wm_buf_adds(b, ",\"records\":");
      if (lg->records < 0) wm_buf_adds(b, "null");
      else wm_buf_add_int(b, lg->records);
      wm_buf_addc(b, '}');
    }
    wm_buf_addc(b, ']');
  }
  wm_buf_addc(b, '}');
}

static void add_edges(wm_buf *b, const wm_msnap *s, int n) {
  int first = 1;
  int64_t from = 0;
  wm_buf_adds(b, "\"edges\":[");
  for (int t = 0; t < n; t++) {
    for (size_t i = 0; i < s[t].nops; i++, from++) {
      const wm_msnap_op *o = &s[t].ops[i];
      for (size_t e = 0; e < o->nedge; e++) {
        const wm_msnap_edge *ed = &s[t].edges[o->edge0 + e];
        int64_t to = op_index(s, n, ed->to);
        if (to < 0) continue;
        wm_buf_adds(b, first ? "{" : ",{");
        first = 0;
        kv_int(b, "from", from, 1);
        kv_int(b, "to", to, 1);
        kv_int(b, "chan", ed->chan, 1);
        key(b, "port");
        add_tag(b, &s[t], ed->tag);
        wm_buf_adds(b, ed->side ? ",\"side\":true}" : ",\"side\":false}");
      }
    }
  }
  wm_buf_addc(b, ']');
}

static int same_operator(const wm_msnap *s1, const wm_msnap_op *a, const wm_msnap *s2,
                         const wm_msnap_op *b) {
  return a->base_len == b->base_len &&
         memcmp(s1->names.data + a->name, s2->names.data + b->name, a->base_len) == 0;
}

/* Per operator (its instances by name without " k/n"), in the order of their first: the
 * instances, the counters and gauges summed, the slowest watermark, the lag summed. */
static void add_totals(wm_buf *b, const wm_msnap *s, int n) {
  int first = 1;
  wm_buf_adds(b, "\"totals\":[");
  for (int t = 0; t < n; t++) {
    for (size_t i = 0; i < s[t].nops; i++) {
      const wm_msnap_op *o = &s[t].ops[i];
      int seen = 0; /* an instance before it: its operator is done */
      for (int t2 = 0; t2 <= t && !seen; t2++)
        for (size_t j = 0; j < (t2 == t ? i : s[t2].nops) && !seen; j++)
          seen = same_operator(&s[t], o, &s[t2], &s[t2].ops[j]);
      if (seen) continue;
      uint64_t c[WM_MS_NCOUNT] = {0}, keys = 0, windows = 0;
      int64_t wm = WM_TIME_MAX, lag = 0, subtasks = 0;
      int known = 0;
      for (int t2 = t; t2 < n; t2++) {
        for (size_t j = t2 == t ? i : 0; j < s[t2].nops; j++) {
          const wm_msnap_op *x = &s[t2].ops[j];
          if (!same_operator(&s[t], o, &s[t2], x)) continue;
          subtasks++;
          for (int k = 0; k < WM_MS_NCOUNT; k++) c[k] += x->c[k];
          keys += x->keys;
          windows += x->windows;
          if (x->wm < wm) wm = x->wm;
          for (size_t l = 0; l < x->nlag; l++) {
            int64_t r = s[t2].lags[x->lag0 + l].records;
            if (r >= 0) lag += r, known = 1;
          }
        }
      }
      wm_buf_adds(b, first ? "{\"operator\":" : ",{\"operator\":");
      first = 0;
      wm_buf_add_json_string(b, s[t].names.data + o->name, o->base_len);
      wm_buf_addc(b, ',');
      kv_int(b, "subtasks", subtasks, 1);
      kv_int(b, "records_in", (int64_t)c[WM_MS_IN], 1);
      kv_int(b, "records_out", (int64_t)c[WM_MS_OUT], 1);
      kv_int(b, "late_dropped", (int64_t)c[WM_MS_LATE_DROPPED], 1);
      kv_int(b, "late_side", (int64_t)c[WM_MS_LATE_SIDE], 1);
      if (o->keyed) kv_int(b, "keys", (int64_t)keys, 1);
      if (o->window) kv_int(b, "windows", (int64_t)windows, 1);
      if (o->nlag) {
        key(b, "source_lag");
        if (known) wm_buf_add_int(b, lag);
        else wm_buf_adds(b, "null");
        wm_buf_addc(b, ',');
      }
      key(b, "watermark");
      add_wm(b, wm);
      wm_buf_addc(b, '}');
    }
  }
  wm_buf_addc(b, ']');
}

/* The sources' backpressure: over the threads (paused on any, the longest paused time, the
 * bytes queued summed) and, with several threads, per thread. Nothing when no thread's is
 * known. */
static void add_backpressure(wm_buf *b, const wm_msnap *s, int n) {
  int known = 0, paused = 0;
  uint64_t ms = 0;
  int64_t queued = 0;
  for (int t = 0; t < n; t++) {
    if (!s[t].valid || !s[t].bp) continue;
    known = 1;
    paused |= s[t].bp_paused;
    if (s[t].bp_paused_ms > ms) ms = s[t].bp_paused_ms;
    queued += s[t].bp_queued;
  }
  if (!known) return;
  wm_buf_adds(b, paused ? ",\"backpressure\":{\"paused\":true," : ",\"backpressure\":{\"paused\":false,");
  kv_int(b, "paused_ms", (int64_t)ms, 1);
  kv_int(b, "queued_bytes", queued, 0);
  wm_buf_addc(b, '}');
  if (n < 2) return;
  wm_buf_adds(b, ",\"threads_backpressure\":[");
  int first = 1;
  for (int t = 0; t < n; t++) {
    if (!s[t].valid || !s[t].bp) continue;
    wm_buf_adds(b, first ? "{" : ",{");
    first = 0;
    kv_int(b, "thread", t + 1, 1);
    wm_buf_adds(b, s[t].bp_paused ? "\"paused\":true," : "\"paused\":false,");
    kv_int(b, "paused_ms", (int64_t)s[t].bp_paused_ms, 1);
    kv_int(b, "queued_bytes", s[t].bp_queued, 0);
    wm_buf_addc(b, '}');
  }
  wm_buf_addc(b, ']');
}

static void add_snapshots(void *ud, const wm_msnap *s, int n) {
  const job_view *v = ud;
  wm_buf *b = v->b;
  int64_t id = 0;
  add_backpressure(b, s, n);
  wm_buf_adds(b, ",\"operators\":[");
  for (int t = 0; t < n; t++) {
    for (size_t i = 0; i < s[t].nops; i++, id++) {
      if (id) wm_buf_addc(b, ',');
      add_op(b, &s[t], t, &s[t].ops[i], id, v->now);
    }
  }
  wm_buf_adds(b, "],");
  add_edges(b, s, n);
  wm_buf_addc(b, ',');
  add_totals(b, s, n);
}

void wm_ui_json(wm_buf *b, wm_mboard *board, int64_t now, const wm_ui_job *job) {
  wm_buf_adds(b, "{\"name\":");
  str(b, job->name ? job->name : "wmrun job");
  wm_buf_addc(b, ',');
  kv_int(b, "parallelism", job->parallelism, 1);
  kv_int(b, "threads", job->threads, 1);
  kv_int(b, "now", now, 1);
  if (job->exec) kv_int(b, "uptime_ms", (int64_t)(uv_now(wm_exec_loop(job->exec)) - job->start_ms), 1);
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
  job_view v = {b, job, now};
  wm_mboard_read(board, add_snapshots, &v);
  wm_buf_addc(b, '}');
}
