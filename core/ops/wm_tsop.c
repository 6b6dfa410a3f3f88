#include "ops/wm_tsop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "graph/wm_observe.h"
#include "graph/wm_statefmt.h"
#include "time/wm_time.h"

typedef struct tsop {
  wm_tsop_config cfg;
  wm_gen gen;
  int64_t last;      /* last forwarded watermark */
  bool idle;
  int64_t last_seen; /* ctx->now() at the last record (idleness) */
  int64_t last_ts;   /* ingestion time: the last timestamp given */
  const wm_field *tsfield; /* the field of with_timestamp_field with scale 1, else NULL */
  uint64_t periodics; /* periodic emits asked for by the clock (wm_tsop_periodic) */
  int holds;         /* wm_tsop_hold_idleness: while > 0 the input is paused, not silent */
  bool fresh;        /* a record (or a restore) since the last periodic emit */
} tsop;

static const wm_field *fieldts_field_ms(const wm_tsx *x);
static const char *fieldts_name(const wm_tsx *x);

int wm_tsop_emit_watermark(wm_op *op, int64_t t) {
  tsop *s = op->impl;
  if (t <= s->last) return WM_OK;
  if (s->idle) {
    int rc = wm_tsop_mark_active(op);
    if (rc != WM_OK) return rc;
  }
  if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, -1, s->last, t, NULL);
  s->last = t;
  op->wm = t;
  return wm_op_emit_watermark(op, t);
}

int wm_tsop_mark_idle(wm_op *op) {
  tsop *s = op->impl;
  if (s->idle) return WM_OK;
  s->idle = true;
  if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, -1, s->last, s->last, "idle");
  return wm_op_emit_status(op, true);
}

int wm_tsop_mark_active(wm_op *op) {
  tsop *s = op->impl;
  if (!s->idle) return WM_OK;
  s->idle = false;
  s->last_seen = wm_ctx_now(op->ctx); /* the idleness timeout starts again */
  if (op->ctx->trace) op->ctx->trace(op->ctx->trace_ud, op, -1, s->last, s->last, "active");
  return wm_op_emit_status(op, false);
}

/* The generator's periodic emit. */
static int periodic_emit(wm_op *op) {
  tsop *s = op->impl;
  if (s->cfg.custom.on_event) {
    if (!s->cfg.custom.on_periodic) return WM_OK;
    return s->cfg.custom.on_periodic(s->cfg.custom.ud, op);
  }
  if (s->cfg.ingestion) wm_gen_on_event(&s->gen, wm_ctx_now(op->ctx)); /* follow the clock */
  int64_t w;
  if (wm_gen_on_periodic(&s->gen, &w)) return wm_tsop_emit_watermark(op, w);
  return WM_OK;
}

int wm_tsop_periodic(wm_op *op) {
  tsop *s = op->impl;
  s->periodics++;
  s->fresh = false;
  return periodic_emit(op);
}

bool wm_tsop_periodic_settled(const wm_op *op) {
  const tsop *s = op->impl;
  if (op->ended || s->idle) return true; /* the clock does not ask for periodic emits then */
  return !s->cfg.custom.on_event && !s->cfg.ingestion && !s->fresh;
}

void wm_tsop_skip_periodic(wm_op *op, uint64_t n) {
  tsop *s = op->impl;
  if (!op->ended && !s->idle) s->periodics += n;
}

bool wm_tsop_few_periodic(const wm_op *op) {
  const tsop *s = op->impl;
  bool periodic = s->cfg.custom.on_event ? s->cfg.custom.on_periodic != NULL
                                         : (s->cfg.ingestion || s->cfg.builtin != WM_GEN_NONE);
  return op->ended && periodic && s->cfg.interval > 0 && s->periodics < 2;
}

uint64_t wm_tsop_periodic_count(const wm_op *op) { return ((const tsop *)op->impl)->periodics; }

int wm_tsop_check_idle(wm_op *op, int64_t now) {
  int64_t d = wm_tsop_idle_deadline(op);
  if (d != WM_TIME_MAX && now >= d) return wm_tsop_mark_idle(op);
  return WM_OK;
}

void wm_tsop_hold_idleness(wm_op *op, bool hold) {
  tsop *s = op->impl;
  if (hold) {
    s->holds++;
  } else if (s->holds > 0 && --s->holds == 0) {
    s->last_seen = wm_ctx_now(op->ctx); /* the timeout starts again */
  }
}

int64_t wm_tsop_idle_deadline(const wm_op *op) {
  const tsop *s = op->impl;
  if (s->cfg.idle_timeout <= 0 || s->idle || op->ended || s->holds > 0) return WM_TIME_MAX;
  return wm_time_add_sat(s->last_seen, s->cfg.idle_timeout);
}

/* The extractor gave MAX: the end of input, not an event time (docs/watermarks.md, "Valid
 * timestamps"). MIN is Flink's NO_TIMESTAMP: the record flows on with it and the generator
 * sees it; an operator that needs the event time (an event-time window, an event-time timer)
 * fails on it there. */
static int bad_timestamp(wm_op *op, const tsop *s, const wm_value *rec) {
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  const char *field = fieldts_name(&s->cfg.tsx);
  char what[300];
  if (field) snprintf(what, sizeof what, "timestamp field '%s' is", field);
  else snprintf(what, sizeof what, "the timestamp assigner returned");
  wm_ctx_error(op->ctx,
               "%s math.maxinteger in record %s: that value is the end of input; an event "
               "timestamp is below math.maxinteger (math.mininteger means \"no timestamp\"; "
               "docs/watermarks.md, \"Valid timestamps\")",
               what, b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

static int tsop_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  tsop *s = op->impl;
  int64_t t = ts;
  if (s->cfg.ingestion) {
    t = wm_ctx_now(op->ctx);
    if (t < s->last_ts) t = s->last_ts; /* the clock may step back; timestamps do not */
    s->last_ts = t;
  } else if (s->tsfield) {
    /* with_timestamp_field in milliseconds on a row already seen: what fieldts_fn gives */
    const wm_value *v = wm_field_peek(s->tsfield, rec);
    if (v && v->type == WM_INT) t = v->u.i;
    else if (s->cfg.tsx.fn(s->cfg.tsx.ud, op, rec, ts, &t) != WM_OK) return WM_ERR;
  } else if (s->cfg.tsx.fn && s->cfg.tsx.fn(s->cfg.tsx.ud, op, rec, ts, &t) != WM_OK) {
    return WM_ERR;
  }
  if (t == WM_TIME_MAX && s->cfg.tsx.fn && !s->cfg.ingestion) return bad_timestamp(op, s, rec);
  if (s->cfg.idle_timeout > 0) s->last_seen = wm_ctx_now(op->ctx);
  s->fresh = true;
  if (s->idle) {
    int rc = wm_tsop_mark_active(op);
    if (rc != WM_OK) return rc;
  }
  wm_observe_record(op, t);
  int rc = wm_op_emit(op, 0, rec, t);
  if (rc != WM_OK) return rc;
  if (s->cfg.custom.on_event) {
    rc = s->cfg.custom.on_event(s->cfg.custom.ud, op, rec, t);
    if (rc != WM_OK) return rc;
  } else {
    wm_gen_on_event(&s->gen, t);
  }
  if (s->cfg.interval == 0) return wm_tsop_periodic(op);
  return WM_OK;
}

static int tsop_watermark(wm_op *op, int64_t wm) {
  /* the assigner makes its own watermarks; only the end of input passes through */
  if (wm == WM_TIME_MAX) {
    op->ended = true;
    int rc = wm_tsop_emit_watermark(op, WM_TIME_MAX);
    /* once the end of input has gone through, a generator gets one last periodic emit, as
     * in Flink's TimestampsAndWatermarksOperator.finish: what it emits changes nothing (MAX
     * has passed), its side effects happen */
    if (rc == WM_OK) rc = periodic_emit(op);
    return rc;
  }
  return WM_OK;
}

static int tsop_status(wm_op *op, bool idle) {
  (void)op;
  (void)idle;
  return WM_OK; /* the assigner decides its own status */
}

static void tsop_free(wm_op *op) {
  tsop *s = op->impl;
  if (!s) return;
  if (s->cfg.tsx.free) s->cfg.tsx.free(s->cfg.tsx.ud);
  if (s->cfg.custom.free) s->cfg.custom.free(s->cfg.custom.ud);
  free(s);
}

/* ---- checkpoints ------------------------------------------------------------------
 * version, 'T', the generator (0 none, 1 bounded, 2 custom; +4 ingestion time), the
 * built-in's max timestamp, the last watermark forwarded, idle, the clock time of the last
 * record (idleness), the last ingestion timestamp, the periodic emits asked for, then for
 * a custom generator the value its snapshot hook gave. */

static uint64_t gen_code(const tsop *s) {
  uint64_t g = s->cfg.custom.on_event ? 2 : (uint64_t)(s->cfg.builtin == WM_GEN_BOUNDED);
  return g | (s->cfg.ingestion ? 4 : 0);
}

static int tsop_snapshot(wm_op *op, wm_state_io *io) {
  tsop *s = op->impl;
  if (s->cfg.custom.on_event && !s->cfg.custom.snapshot)
    return wm_ctx_error(op->ctx,
                        "the custom watermark generator has no snapshot method, so its state "
                        "cannot be checkpointed (give it snapshot(self) and restore(self, t), "
                        "docs/checkpoints.md)");
  wm_state_put_header(io, 'T');
  wm_state_put_u(io, gen_code(s));
  wm_state_put_i(io, s->gen.max_ts);
  wm_state_put_i(io, s->last);
  wm_state_put_u(io, s->idle);
  wm_state_put_i(io, s->last_seen);
  wm_state_put_i(io, s->last_ts);
  wm_state_put_u(io, s->periodics);
  if (s->cfg.custom.on_event) {
    wm_value v = wm_nil();
    if (s->cfg.custom.snapshot(s->cfg.custom.ud, op, &v) != WM_OK) return WM_ERR;
    int rc = wm_state_put_value(op, io, &v, "the custom watermark generator's state");
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) return rc;
  }
  return wm_state_put_done(op, io);
}

static int tsop_restore(wm_op *op, wm_state_io *io) {
  tsop *s = op->impl;
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint64_t g, idle, periodics;
  int64_t max_ts, last, last_seen, last_ts;
  if (wm_state_get_header(&r, 'T', "a timestamps/watermarks operator") != WM_OK ||
      wm_state_get_u(&r, &g, "the generator") != WM_OK)
    return WM_ERR;
  if (g != gen_code(s)) {
    static const char *const names[] = {"no_watermarks", "bounded out-of-orderness",
                                        "a custom generator", "?"};
    return wm_ctx_error(op->ctx,
                        "the checkpoint's watermark strategy is %s%s, this job's is %s%s (the "
                        "job changed since the checkpoint?)",
                        names[g & 3], (g & 4) ? " (ingestion time)" : "", names[gen_code(s) & 3],
                        s->cfg.ingestion ? " (ingestion time)" : "");
  }
  if (wm_state_get_i(&r, &max_ts, "the generator's max timestamp") != WM_OK ||
      wm_state_get_i(&r, &last, "the last watermark") != WM_OK ||
      wm_state_get_u(&r, &idle, "the idle flag") != WM_OK ||
      wm_state_get_i(&r, &last_seen, "the time of the last record") != WM_OK ||
      wm_state_get_i(&r, &last_ts, "the last ingestion timestamp") != WM_OK ||
      wm_state_get_u(&r, &periodics, "the periodic emit count") != WM_OK)
    return WM_ERR;
  if (idle > 1) return wm_state_bad(&r, "the idle flag is %llu", (unsigned long long)idle);
  if (io->merge) {
    /* another old instance's (a restore at another parallelism, exec/wm_rescale.h): the
     * lowest of the instances' timestamps and watermarks, which every record any of them
     * would have taken is above; idle only when all were */
    if (s->cfg.custom.on_event)
      return wm_ctx_error(op->ctx, "the custom watermark generator of '%s' ran as several "
                                   "instances at the checkpoint: its states are not merged into "
                                   "one (give the assigner the checkpoint's parallelism with "
                                   "set_parallelism)", op->name);
    if (wm_state_get_end(&r) != WM_OK) return WM_ERR;
    if (max_ts < s->gen.max_ts) s->gen.max_ts = max_ts;
    if (last < s->last) s->last = last;
    if (last_seen > s->last_seen) s->last_seen = last_seen; /* (idleness: the latest) */
    if (last_ts < s->last_ts) s->last_ts = last_ts;
    if (periodics < s->periodics) s->periodics = periodics;
    s->idle = s->idle && idle;
    return WM_OK;
  }
  if (s->cfg.custom.on_event) {
    if (!s->cfg.custom.restore)
      return wm_ctx_error(op->ctx, "the custom watermark generator has no restore method, so "
                                   "its checkpointed state cannot be put back");
    wm_value v;
    if (wm_state_get_value(&r, &v, "the custom watermark generator's state") != WM_OK)
      return WM_ERR;
    int rc = wm_state_get_end(&r);
    if (rc == WM_OK) rc = s->cfg.custom.restore(s->cfg.custom.ud, op, &v);
    wm_value_release(&op->ctx->host, &v);
    if (rc != WM_OK) return rc;
  } else if (wm_state_get_end(&r) != WM_OK) {
    return WM_ERR;
  }
  s->gen.max_ts = max_ts;
  s->last = last;
  s->idle = idle;
  s->last_seen = last_seen;
  s->last_ts = last_ts;
  s->periodics = periodics;
  s->fresh = true; /* what the generator would emit next is not known until it is asked */
  return WM_OK;
}

/* Lookahead: hints that ask for the record's timestamp get it from the field this
 * operator reads it from (with_timestamp_field in ms); the hints go past it, to the
 * operator that asked. */
static bool tsop_ahead_wants(wm_op *op, wm_ahead *a) {
  const tsop *s = op->impl;
  if (!s->tsfield || s->cfg.ingestion || s->cfg.custom.on_event) return false;
  if (!wm_op_ahead_wants(wm_op_next(op), a) || !a->want_ts || a->ts) return false;
  a->ts = s->tsfield->name;
  return true;
}

/* The executor's period: the watermark interval, and a quarter of the idle timeout (at
 * least 1 ms) so that idleness is seen within a quarter of it. */
static int64_t tsop_period(const wm_op *op) {
  const tsop *s = op->impl;
  int64_t period = 0, iv = s->cfg.interval, idle = s->cfg.idle_timeout;
  if (iv > 0) period = iv;
  if (idle > 0) {
    int64_t p = idle / 4 > 0 ? idle / 4 : 1;
    if (period == 0 || p < period) period = p;
  }
  return period;
}

static int tsop_on_period(wm_op *op, int64_t now) {
  int rc = wm_tsop_check_idle(op, now);
  if (rc == WM_OK && !wm_tsop_is_idle(op) && wm_tsop_interval(op) > 0) rc = wm_tsop_periodic(op);
  return rc;
}

static bool tsop_idle(const wm_op *op) { return wm_tsop_is_idle(op); }

static const wm_wmsource tsop_wmsource = {
    .last_watermark = wm_tsop_last_watermark,
    .idle = tsop_idle,
    .hold_idleness = wm_tsop_hold_idleness,
    .mark_idle = wm_tsop_mark_idle,
};

static const wm_op_vt tsop_vt = {
    .kind = "timestamps/watermarks",
    .record = tsop_record,
    .watermark = tsop_watermark,
    .status = tsop_status,
    .free = tsop_free,
    .snapshot = tsop_snapshot,
    .restore = tsop_restore,
    .merge_parts = 1,
    .ahead_wants = tsop_ahead_wants,
    .period = tsop_period,
    .on_period = tsop_on_period,
    .wmsource = &tsop_wmsource,
};

bool wm_op_is_tsop(const wm_op *op) { return op->vt == &tsop_vt; }
int64_t wm_tsop_interval(const wm_op *op) { return ((const tsop *)op->impl)->cfg.interval; }
int64_t wm_tsop_idle_timeout(const wm_op *op) {
  return ((const tsop *)op->impl)->cfg.idle_timeout;
}
int64_t wm_tsop_last_record_time(const wm_op *op) {
  return ((const tsop *)op->impl)->last_seen;
}
bool wm_tsop_is_idle(const wm_op *op) { return ((const tsop *)op->impl)->idle; }
int64_t wm_tsop_last_watermark(const wm_op *op) { return ((const tsop *)op->impl)->last; }
bool wm_tsop_is_custom(const wm_op *op) {
  return ((const tsop *)op->impl)->cfg.custom.on_event != NULL;
}
int wm_tsop_builtin(const wm_op *op) { return ((const tsop *)op->impl)->cfg.builtin; }

wm_op *wm_tsop_new(wm_ctx *ctx, const char *name, wm_tsop_config *cfg) {
  tsop *s = calloc(1, sizeof *s);
  wm_op *op = s ? wm_op_new(ctx, &tsop_vt, s, name) : NULL;
  if (!op) {
    free(s);
    if (cfg->tsx.free) cfg->tsx.free(cfg->tsx.ud);
    if (cfg->custom.free) cfg->custom.free(cfg->custom.ud);
    wm_ctx_error(ctx, "out of memory creating '%s'", name);
    return NULL;
  }
  s->cfg = *cfg;
  s->tsfield = cfg->ingestion ? NULL : fieldts_field_ms(&s->cfg.tsx);
  wm_gen_init(&s->gen, cfg->builtin, cfg->delay);
  s->last = WM_TIME_MIN;
  s->last_seen = wm_ctx_now(ctx);
  s->last_ts = WM_TIME_MIN;
  if (cfg->ingestion) wm_gen_init(&s->gen, WM_GEN_BOUNDED, 0);
  return op;
}

/* ---- timestamp from a field ------------------------------------------------------- */

typedef struct fieldts {
  char *name;
  wm_field f;
  int64_t scale;
} fieldts;

static int fieldts_fn(void *ud, wm_op *op, const wm_value *rec, int64_t prev, int64_t *ts);

/* The field of a with_timestamp_field extractor in milliseconds (scale 1), or NULL. */
static const wm_field *fieldts_field_ms(const wm_tsx *x) {
  if (x->fn != fieldts_fn) return NULL;
  const fieldts *f = x->ud;
  return f->scale == 1 ? &f->f : NULL;
}

/* The field of a with_timestamp_field extractor, or NULL. */
static const char *fieldts_name(const wm_tsx *x) {
  return x->fn == fieldts_fn ? ((const fieldts *)x->ud)->name : NULL;
}

static void fieldts_free(void *ud) {
  fieldts *f = ud;
  free(f->name);
  free(f);
}

static int fieldts_fn(void *ud, wm_op *op, const wm_value *rec, int64_t prev, int64_t *ts) {
  (void)prev;
  fieldts *f = ud;
  wm_ctx *ctx = op->ctx;
  wm_value v;
  if (wm_field_get(&ctx->host, &f->f, rec, &v, &ctx->error) != 0) {
    wm_buf b; /* the host's message (a Lua table's __index raised, ...): the record */
    wm_buf_init(&b);
    wm_format_value(&b, rec, 0, ctx->host.format, ctx->host.ud);
    wm_ctx_error_append(ctx, " (with_timestamp_field('%s') on record %s)", f->name,
                        b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  int64_t i;
  const char *why = NULL;
  if (v.type == WM_INT) i = v.u.i;
  else if (v.type == WM_FLOAT && floor(v.u.f) == v.u.f && fabs(v.u.f) < 9.2e18) i = (int64_t)v.u.f;
  else {
    why = v.type == WM_NIL ? "missing" : v.type == WM_FLOAT ? "not an integral number"
                                                            : "not an integer";
    i = 0;
  }
  if (!why && f->scale != 1 && (i > INT64_MAX / f->scale || i < INT64_MIN / f->scale))
    why = "out of range once scaled to milliseconds";
  if (why) {
    wm_buf b;
    wm_buf_init(&b);
    wm_format_value(&b, rec, 0, ctx->host.format, ctx->host.ud);
    wm_ctx_error(ctx, "timestamp field '%s' is %s in record %s", f->name, why,
                 b.data ? b.data : "");
    wm_buf_free(&b);
    return WM_ERR;
  }
  *ts = i * f->scale;
  return WM_OK;
}

int wm_tsx_field(wm_tsx *x, const char *field, int64_t scale) {
  fieldts *f = calloc(1, sizeof *f);
  if (!f || !(f->name = strdup(field))) {
    free(f);
    return -1;
  }
  f->f.name = f->name;
  f->f.index = -1;
  f->scale = scale;
  x->fn = fieldts_fn;
  x->free = fieldts_free;
  x->ud = f;
  return 0;
}
