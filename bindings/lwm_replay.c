/* wm.lab's arrival replay in wm.testing's harness: h:replay (a data set replayed into the
 * harness, the figures of a candidate strategy measured at the window operator) and
 * h:replay_inputs (a job replayed on its sources' arrival times). The harness itself is in
 * lwm_harness.c, the data sets in lwm_replay_data.c, the measures in lwm_lab_measure.c, the
 * signal watch in lwm_sigwatch.c. */
#include <stdlib.h>
#include <string.h>

#include "io/wm_source.h"
#include "lwm_harness.h"
#include "lwm_lab_measure.h"
#include "lwm_plan.h"
#include "lwm_replay.h"
#include "lwm_replay_data.h"
#include "lwm_sigwatch.h"

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int replay_loop(harness *H, replay_data *D, const replay_opts *o, lab_run *R,
                       replay_out *out) {
  wm_ctx *ctx = &H->B.ctx;
  wm_op *win = (wm_op *)R->winop;
  int rc = WM_OK;
  /* sessions: a record at the end of a fired session would still merge into it (windows
   * that touch merge), so their perfect watermark is one less: min(ts still to come) - 2 */
#define PERFECT(k) (R->gap > 0 ? lwm_lab_sub_sat(D->perfect[k], 1) : D->perfect[k])
  int64_t floor_wm = D->n ? PERFECT(0) : 0, last_perfect = WM_TIME_MIN;
  size_t next_curve = 0, curve_k = 0;
  for (size_t i = 0; i < D->n && rc == WM_OK; i++) {
    if ((rc = lwm_h_advance_to(H, D->arrival[i])) != WM_OK) break;
    if (H->watch && (lwm_h_replay_signalled(H), H->aborted)) {
      rc = wm_ctx_error(ctx, "%s", lwm_sig_text(wm_exec_signal(H->watch)));
      break;
    }
    int64_t W = win ? win->wm : WM_TIME_MIN, ts = D->ts[i];
    int64_t weff = W > floor_wm ? W : floor_wm;
    out->lag[i] = lwm_lab_sub_sat(PERFECT(i), weff);
    if (out->ct && i == next_curve) {
      out->ct[curve_k] = D->arrival[i];
      out->cw[curve_k] = weff;
      out->cp[curve_k] = PERFECT(i);
      curve_k++;
      next_curve = curve_k < o->curve ? (size_t)((double)curve_k * (double)D->n / (double)o->curve) : D->n;
      if (next_curve <= i) next_curve = i + 1;
    }
    int late = 0;
    int64_t stop = 0;
    if (win && o->size > 0) { /* the end of the record's earliest-ending window */
      int64_t last = ts - (ts - o->offset - floor_div(ts - o->offset, o->slide) * o->slide);
      int64_t j = floor_div(last - ts + o->size - 1, o->slide);
      stop = last - j * o->slide + o->size;
      late = W >= stop - 1;
    }
    R->cur_dropped = 0;
    if (R->has_key) {
      wm_value_release(&ctx->host, &R->cur_key);
      R->has_key = 0;
    }
    wm_value v = wm_cstr(D->text + D->off[i], D->len[i]);
    rc = wm_op_input_record(H->input, 0, &v, ts);
    if (rc != WM_OK) {
      wm_ctx_error_context(ctx, "\n  while replaying %s:%u", D->path ? D->path : "?", D->lineno[i]);
      break;
    }
    if (win && R->gap > 0) { /* sessions: late when dropped or after its session fired */
      int l = lwm_lab_session_late(R, out, W, ts);
      if (l < 0) R->oom = 1;
      late = l > 0;
    }
    if (late || R->cur_dropped)
      lwm_lab_late(R, out, o, W, stop, (mark){D->arrival[i], ts, weff, PERFECT(i), R->cur_dropped});
    if (o->perfect && i + 1 < D->n && PERFECT(i + 1) > last_perfect) {
      last_perfect = PERFECT(i + 1);
      rc = wm_op_input_watermark(H->input, 0, last_perfect);
    }
    if (R->oom) rc = wm_ctx_error(ctx, "out of memory");
  }
  out->ncurve = curve_k;
  if (rc == WM_OK && D->n && o->drain > 0)
    rc = lwm_h_advance_to(H, wm_time_add_sat(D->arrival[D->n - 1], o->drain));
  if (rc == WM_OK && H->watch && (lwm_h_replay_signalled(H), H->aborted))
    rc = wm_ctx_error(ctx, "%s", lwm_sig_text(wm_exec_signal(H->watch)));
  R->ended = 1;
  if (rc == WM_OK && !H->finished) {
    H->finished = 1;
    for (int ch = 0; ch < H->channels && rc == WM_OK; ch++)
      rc = wm_op_input_watermark(H->input, ch, WM_TIME_MAX);
  }
  if (rc == WM_OK && R->oom) rc = wm_ctx_error(ctx, "out of memory");
  return rc;
#undef PERFECT
}

/* h:replay(data, {perfect, keep_output, size, slide, offset, gap, drain, curve, marks}) -> figures
 * (gap: session windows of that gap, size 0)
 * Replays data into the harness: for each record in arrival order, the virtual clock moves
 * to its arrival (running what comes due: timers, idleness, periodic watermarks), then the
 * line is pushed; after the last one the clock runs `drain` ms more, then the input ends. */
static int lwm_h_replay(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  replay_data *D = luaL_checkudata(L, 2, REPLAY_MT);
  luaL_checktype(L, 3, LUA_TTABLE);
  replay_opts o;
  memset(&o, 0, sizeof o);
  lua_getfield(L, 3, "perfect");
  o.perfect = lua_toboolean(L, -1);
  lua_getfield(L, 3, "keep_output");
  int keep = lua_toboolean(L, -1);
  lua_pop(L, 2);
  o.size = (int64_t)lwm_get_int(L, 3, "size", 0);
  o.slide = (int64_t)lwm_get_int(L, 3, "slide", o.size);
  o.offset = (int64_t)lwm_get_int(L, 3, "offset", 0);
  o.drain = (int64_t)lwm_get_int(L, 3, "drain", 0);
  o.gap = (int64_t)lwm_get_int(L, 3, "gap", 0);
  o.curve = (size_t)lwm_get_int(L, 3, "curve", 0);
  o.marks = (size_t)lwm_get_int(L, 3, "marks", 0);
  lua_getfield(L, 3, "watch");
  const sigwatch *W = lua_isnil(L, -1) ? NULL : luaL_checkudata(L, -1, SIGWATCH_MT);
  lua_pop(L, 1);
  luaL_argcheck(L, !W || W->exec, 3, "the signal watch is closed");
  luaL_argcheck(L, o.size >= 0 && (o.size == 0 || (o.slide > 0 && o.slide <= o.size)), 3,
                "bad window size or slide");
  luaL_argcheck(L, o.gap >= 0 && (o.gap == 0 || o.size == 0), 3, "bad session gap");
  if (H->finished) return luaL_error(L, "replay: the harness's input has ended already");
  H = lwm_h_begin(L, &fr);
  lab_run R;
  memset(&R, 0, sizeof R);
  R.H = H;
  R.winop = lwm_lab_find_winop(H);
  R.gap = o.gap;
  replay_out out;
  /* without a window operator (a job replayed by read_lines{arrival}) nothing is measured */
  int rc = WM_OK;
  if (lwm_lab_out_init(&out, &o, D->n ? D->n : 1) != 0) rc = wm_ctx_error(&H->B.ctx, "out of memory");
  if (rc == WM_OK) {
    /* the lab observes instead of the harness's recorder (h:timeline is not for a replay) */
    if (H->tl) {
      wm_timeline_detach(H->tl, &H->B.ctx);
      if (!H->tl_borrowed) wm_timeline_free(H->tl);
      H->tl = NULL;
    }
    R.prev = H->B.ctx.observe;
    R.prev_ud = H->B.ctx.observe_ud;
    H->B.ctx.observe = lwm_lab_observe;
    H->B.ctx.observe_ud = &R;
    H->discard = !keep;
    H->watch = W ? W->exec : NULL;
    rc = replay_loop(H, D, &o, &R, &out);
    H->watch = NULL;
    H->aborted = 0;
    H->discard = 0;
    H->B.ctx.observe = R.prev;
    H->B.ctx.observe_ud = R.prev_ud;
  }
  if (rc == WM_OK) lwm_lab_push_figures(L, H, D->n, &o, &R, &out);
  lwm_lab_free(H, &R, &out);
  return lwm_h_end(L, H, &fr, rc, rc == WM_OK ? 1 : 0);
}

/* h:replay_inputs({data, ...}): a job replayed on its sources' arrival times
 * (read_lines{arrival}, wm.lab.replay): data k feeds input k (channel 1). The lines of all
 * sources are merged in arrival order on the one virtual clock: before each line the clock
 * moves to its arrival (running what comes due: timers, idleness, periodic watermarks),
 * then the line is pushed. Lines that arrive at the same millisecond go in the order of
 * their sources (k), then in their file's order. A source ends (the MAX watermark) right
 * after its last line, as a file source ends when it reaches the end of the file (an empty
 * file at once); the job ends when every source has, once the sinks have written
 * everything. */
static int lwm_h_replay_inputs(lua_State *L) {
  lwm_frame fr;
  harness *H = luaL_checkudata(L, 1, HARNESS_MT);
  luaL_checktype(L, 2, LUA_TTABLE);
  int k = (int)lua_rawlen(L, 2);
  luaL_argcheck(L, k == H->ninputs, 2, "one data set per input");
  int signals = 0;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "signals");
    signals = lua_toboolean(L, -1);
    lua_getfield(L, 3, "no_drain");
    H->no_drain = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  lua_settop(L, 2);
  replay_data **D = lua_newuserdatauv(L, (size_t)k * (sizeof *D + sizeof(size_t)), 0);
  size_t *next = (size_t *)(D + k);
  for (int j = 0; j < k; j++) {
    lua_rawgeti(L, 2, j + 1);
    D[j] = luaL_checkudata(L, -1, REPLAY_MT); /* kept alive by the table at 2 */
    lua_pop(L, 1);
    next[j] = 0;
  }
  if (H->finished) return luaL_error(L, "replay: the harness's input has ended already");
  H = lwm_h_begin(L, &fr);
  H->fed = 1;
  wm_ctx *ctx = &H->B.ctx;
  int rc = WM_OK;
  if (signals) {
    H->signals = 1;
    rc = wm_exec_watch_signals(H->B.exec);
  }
  for (int j = 0; j < k && rc == WM_OK; j++) /* an empty file ends at once */
    if (D[j]->n == 0) rc = wm_op_input_watermark(H->inputs[j], 0, WM_TIME_MAX);
  for (uint64_t pushed = 0; rc == WM_OK; pushed++) {
    lwm_h_replay_signalled(H);
    if (H->aborted) {
      rc = wm_ctx_error(ctx, "wmrun: interrupted");
      break;
    }
    if (H->draining) { /* SIGINT: every source that has not ended ends now */
      for (int c = 0; c < k && rc == WM_OK; c++)
        if (next[c] < D[c]->n) {
          next[c] = D[c]->n;
          rc = wm_op_input_watermark(H->inputs[c], 0, WM_TIME_MAX);
        }
      break;
    }
    int j = -1;
    for (int c = 0; c < k; c++) /* the earliest next arrival; the first source on ties */
      if (next[c] < D[c]->n && (j < 0 || D[c]->arrival[next[c]] < D[j]->arrival[next[j]])) j = c;
    if (j < 0) break;
    replay_data *d = D[j];
    size_t i = next[j];
    if ((rc = lwm_h_advance_to(H, d->arrival[i])) != WM_OK) break;
    if (H->draining || H->aborted) continue; /* a signal stopped the clock before the line */
    next[j]++;
    wm_value v = wm_cstr(d->text + d->off[i], d->len[i]);
    /* emitted as a source emits (no records in, as --metrics shows a live source), at its
     * position in the file: parsers and errors name the file's line, as for a live source */
    wm_pos pos = {.origin = d->path ? d->path : "?", .line = d->lineno[i], .offset = d->off[i]};
    rc = wm_source_emit(H->inputs[j], &pos, &v, d->ts[i]);
    if (rc == WM_OK && next[j] == d->n) rc = wm_op_input_watermark(H->inputs[j], 0, WM_TIME_MAX);
    if (rc != WM_OK) break;
    /* the sinks write as they go; backpressure holds the replay as it would a live source */
    if ((pushed & 1023) == 1023 || wm_exec_paused(H->B.exec)) rc = lwm_h_pump(H, 0);
  }
  H->finished = 1;
  if (rc == WM_OK) rc = lwm_h_pump(H, 1);
  wm_print_flush_all(ctx);
  return lwm_h_end(L, H, &fr, rc, 0);
}

void lwm_replay_open(lua_State *L) {
  lwm_replay_data_open(L);
  /* the harness's replay methods (its metatable exists: lwm_harness_open comes first) */
  if (luaL_getmetatable(L, HARNESS_MT) == LUA_TTABLE && lua_getfield(L, -1, "__index") == LUA_TTABLE) {
    lua_pushcfunction(L, lwm_h_replay);
    lua_setfield(L, -2, "replay");
    lua_pushcfunction(L, lwm_h_replay_inputs);
    lua_setfield(L, -2, "replay_inputs");
  }
  lua_pop(L, 2);
}
