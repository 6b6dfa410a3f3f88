#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "time/wm_time.h"
#include "ops/wm_winop.h"
#include "test.h"

/* A sink that writes "ts value" lines (and "late value" for the late port) to a buffer. */

static wm_schema *sensor_schema(void) {
  static const char *const names[] = {"id", "ts", "vc"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_INTEGER};
  return wm_schema_new(3, names, types);
}

static int push(wm_op *op, wm_schema *s, const char *id, int64_t secs, int64_t vc) {
  wm_row *r = wm_row_new(s);
  r->fields[0] = wm_cstr(id, strlen(id));
  wm_value_retain(NULL, &r->fields[0]);
  r->fields[1] = wm_int(secs);
  r->fields[2] = wm_int(vc);
  wm_value v = wm_row_value(r);
  int rc = wm_op_input_record(op, 0, &v, secs * 1000);
  wm_value_release(NULL, &v);
  return rc;
}

/* Scenario c: tumbling 5 s, lateness 2 s, late side output; bounded 2 s watermarks
 * computed by hand after every record. */
/* A prepared context's tumbling 5 s window operator keyed by "id", sum("vc"), lateness 2 s,
 * its results captured in main, with_side: its late records in late. */
static wm_op *tumbling_late(wm_ctx *ctx, int with_side, capture *main, capture *late) {
  wm_winop_config cfg = {0};
  cfg.assigner.kind = WM_WA_TUMBLING;
  cfg.assigner.size = 5000;
  cfg.lateness = 2000;
  cfg.late_tag = with_side ? "late" : NULL;
  const char *key = "id";
  CHECK_I64(wm_keysel_fields(&cfg.keysel, &key, 1), 0);
  CHECK_I64(wm_winfn_builtin(&cfg.fn, WM_AGG_SUM, "vc"), 0);
  wm_op *w = wm_winop_new(ctx, "window", &cfg);
  wm_buf_init(&main->out);
  wm_buf_init(&late->out);
  wm_op *m = wm_op_new(ctx, &capture_vt, main, "main");
  wm_op *l = wm_op_new(ctx, &capture_vt, late, "late");
  wm_op_connect(w, 0, m);
  if (with_side) wm_op_connect(w, wm_op_port(w, "late"), l);
  int64_t dummy_ch = wm_op_connect(m, 0, l); /* unused edge: keeps l's channel count valid */
  (void)dummy_ch;
  wm_op *src = wm_op_new(ctx, &capture_vt, NULL, "src");
  wm_op_connect(src, 0, w);
  CHECK_I64(wm_ctx_prepare(ctx), WM_OK);
  return w;
}

static void scenario_c(int with_side) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  capture main = {.label = NULL}, late = {.label = "late"};
  wm_op *w = tumbling_late(&ctx, with_side, &main, &late);
  wm_schema *s = sensor_schema();
  static const int64_t secs[] = {1, 2, 3, 8, 1, 2, 3, 9, 1, 2};
  int64_t max_ts = WM_TIME_MIN + 2001;
  for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++) {
    CHECK_I64(push(w, s, "ws_001", 1577844000 + secs[i], 1), WM_OK);
    int64_t ts = (1577844000 + secs[i]) * INT64_C(1000);
    if (ts > max_ts) max_ts = ts;
    wm_op_input_watermark(w, 0, max_ts - 2000 - 1);
  }
  CHECK_I64(wm_winop_open_windows(w), 1); /* [5, 10) */
  wm_op_input_watermark(w, 0, WM_TIME_MAX);
  CHECK_I64(wm_winop_open_windows(w), 0);
  CHECK_STR(main.out.data,
            "1577844004999 {\"id\":\"ws_001\",\"ts\":1577844001,\"vc\":3}\n"
            "1577844004999 {\"id\":\"ws_001\",\"ts\":1577844001,\"vc\":4}\n"
            "1577844004999 {\"id\":\"ws_001\",\"ts\":1577844001,\"vc\":5}\n"
            "1577844004999 {\"id\":\"ws_001\",\"ts\":1577844001,\"vc\":6}\n"
            "1577844009999 {\"id\":\"ws_001\",\"ts\":1577844008,\"vc\":2}\n");
  if (with_side) {
    CHECK_STR(late.out.data,
              "late 1577844001000 {\"id\":\"ws_001\",\"ts\":1577844001,\"vc\":1}\n"
              "late 1577844002000 {\"id\":\"ws_001\",\"ts\":1577844002,\"vc\":1}\n");
    CHECK_I64(w->m.late_dropped, 0);
    CHECK_I64(w->m.late_side, 2); /* counted as sent to the side output (issue 26) */
    CHECK_I64(w->ports[wm_op_port(w, "late")].records, 2);
  } else {
    CHECK_I64(w->m.late_dropped, 2);
    CHECK_I64(w->m.late_side, 0);
  }
  CHECK_I64(w->m.records_out, 5); /* the results only, not the late records */
  wm_schema_release(s);
  wm_ctx_free(&ctx);
  wm_buf_free(&main.out);
  wm_buf_free(&late.out);
}

/* A prepared context's tumbling 5 s window operator keyed by "id", computing the built-in
 * agg of field, its results captured in out. */
static wm_op *tumbling_builtin(wm_ctx *ctx, int agg, const char *field, capture *out) {
  wm_winop_config cfg = {0};
  cfg.assigner.kind = WM_WA_TUMBLING;
  cfg.assigner.size = 5000;
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_winfn_builtin(&cfg.fn, agg, field);
  wm_op *w = wm_winop_new(ctx, "window", &cfg);
  wm_buf_init(&out->out);
  wm_op_connect(w, 0, wm_op_new(ctx, &capture_vt, out, "out"));
  wm_op_connect(wm_op_new(ctx, &capture_vt, NULL, "src"), 0, w);
  wm_ctx_prepare(ctx);
  return w;
}

/* Several keys closing at the same instant fire in creation order; count() and min_by. */
static void keys_and_builtins(void) {
  static const struct {
    int agg;
    const char *field;
    const char *expect;
  } cases[] = {
      {WM_AGG_COUNT, NULL,
       "4999 {\"count\":2,\"key\":\"b\",\"start\":0,\"stop\":5000}\n"
       "4999 {\"count\":1,\"key\":\"a\",\"start\":0,\"stop\":5000}\n"
       "9999 {\"count\":1,\"key\":\"a\",\"start\":5000,\"stop\":10000}\n"},
      {WM_AGG_MIN_BY, "vc",
       "4999 {\"id\":\"b\",\"ts\":2,\"vc\":1}\n"
       "4999 {\"id\":\"a\",\"ts\":1,\"vc\":5}\n"
       "9999 {\"id\":\"a\",\"ts\":6,\"vc\":7}\n"},
      {WM_AGG_MAX, "vc",
       "4999 {\"id\":\"b\",\"ts\":0,\"vc\":3}\n"
       "4999 {\"id\":\"a\",\"ts\":1,\"vc\":5}\n"
       "9999 {\"id\":\"a\",\"ts\":6,\"vc\":7}\n"},
      {WM_AGG_MAX_BY, "vc",
       "4999 {\"id\":\"b\",\"ts\":0,\"vc\":3}\n"
       "4999 {\"id\":\"a\",\"ts\":1,\"vc\":5}\n"
       "9999 {\"id\":\"a\",\"ts\":6,\"vc\":7}\n"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    capture out = {0};
    wm_op *w = tumbling_builtin(&ctx, cases[c].agg, cases[c].field, &out);
    wm_schema *s = sensor_schema();
    push(w, s, "b", 0, 3);
    push(w, s, "a", 1, 5);
    push(w, s, "b", 2, 1);
    push(w, s, "a", 6, 7);
    wm_op_input_watermark(w, 0, WM_TIME_MAX);
    CHECK_STR(out.out.data, cases[c].expect);
    wm_schema_release(s);
    wm_ctx_free(&ctx);
    wm_buf_free(&out.out);
  }
}

/* Lateness beyond the end of time saturates: cleanup at MAX, no overflow. */
static void lateness_overflow(void) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_winop_config cfg = {0};
  cfg.assigner.kind = WM_WA_TUMBLING;
  cfg.assigner.size = 5000;
  cfg.lateness = WM_TIME_MAX;
  const char *key = "id";
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_winfn_builtin(&cfg.fn, WM_AGG_SUM, "vc");
  wm_op *w = wm_winop_new(&ctx, "window", &cfg);
  capture out = {0};
  wm_buf_init(&out.out);
  wm_op *m = wm_op_new(&ctx, &capture_vt, &out, "out");
  wm_op_connect(w, 0, m);
  wm_op_connect(wm_op_new(&ctx, &capture_vt, NULL, "src"), 0, w);
  wm_ctx_prepare(&ctx);
  wm_schema *s = sensor_schema();
  push(w, s, "a", 1, 1);
  wm_op_input_watermark(w, 0, 100000);   /* fires, but is kept: cleanup is at MAX */
  CHECK_I64(wm_winop_open_windows(w), 1);
  push(w, s, "a", 2, 1);                 /* a late firing, never dropped */
  CHECK_I64(w->m.late_dropped, 0);
  wm_op_input_watermark(w, 0, WM_TIME_MAX);
  CHECK_I64(wm_winop_open_windows(w), 0);
  CHECK_STR(out.out.data,
            "4999 {\"id\":\"a\",\"ts\":1,\"vc\":1}\n"
            "4999 {\"id\":\"a\",\"ts\":1,\"vc\":2}\n");
  wm_schema_release(s);
  wm_ctx_free(&ctx);
  wm_buf_free(&out.out);
}

/* The first record of a built-in sum, min or max packed in the window's entry instead of
 * a retained row (wm_winop.c "inline first records"): the window then holds no reference
 * to the record it was given (the decoder's row is reused), for keys of 1 to 32 bytes and
 * rows of scalars; what does not pack (a key longer than 32 bytes, a string field of more
 * than 8 bytes other than the key, too many payloads) is retained as before. The results
 * are those of the retained row either way. */
static void inline_first_records(void) {
  static const char *const names[] = {"id", "ts", "vc", "ok", "note", "none"};
  static const uint8_t types[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_ANY,
                                  WM_FT_BOOLEAN, WM_FT_STRING, WM_FT_ANY};
  static const struct {
    const char *id;
    const char *note;
    int retained; /* the window keeps the row */
  } rows[] = {
      {"a", "", 0},
      {"abcdefgh", "12345678", 0},
      {"abcdefghi", "x", 0},
      {"abcdefghijklmnopqr", "abcdefghijklmnopqr", 0}, /* the note is the key: no payload */
      {"abcdefghijklmnopqrs", "y", 1}, /* 11 bytes of key + 6 tags + 3 payloads: too many */
      {"abcdefghijklmnopqrstuvwxyz0123456", "y", 1}, /* 33 bytes: too long */
      {"b", "a long note", 1},                      /* 11 bytes, not the key */
  };
  static const int aggs[] = {WM_AGG_SUM, WM_AGG_MIN, WM_AGG_MAX};
  static const char *const expect[] = {
      /* sum: the first record (vc 3, ok true; the nil field is not printed) with vc the sum
       * 3 + 4.5 (a float from then on) */
      "4999 {\"id\":\"a\",\"note\":\"\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n"
      "4999 {\"id\":\"abcdefgh\",\"note\":\"12345678\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n"
      "4999 {\"id\":\"abcdefghi\",\"note\":\"x\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n"
      "4999 {\"id\":\"abcdefghijklmnopqr\",\"note\":\"abcdefghijklmnopqr\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n"
      "4999 {\"id\":\"abcdefghijklmnopqrs\",\"note\":\"y\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n"
      "4999 {\"id\":\"abcdefghijklmnopqrstuvwxyz0123456\",\"note\":\"y\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n"
      "4999 {\"id\":\"b\",\"note\":\"a long note\",\"ok\":true,\"ts\":1,\"vc\":7.5}\n",
      "4999 {\"id\":\"a\",\"note\":\"\",\"ok\":true,\"ts\":1,\"vc\":3}\n"
      "4999 {\"id\":\"abcdefgh\",\"note\":\"12345678\",\"ok\":true,\"ts\":1,\"vc\":3}\n"
      "4999 {\"id\":\"abcdefghi\",\"note\":\"x\",\"ok\":true,\"ts\":1,\"vc\":3}\n"
      "4999 {\"id\":\"abcdefghijklmnopqr\",\"note\":\"abcdefghijklmnopqr\",\"ok\":true,\"ts\":1,\"vc\":3}\n"
      "4999 {\"id\":\"abcdefghijklmnopqrs\",\"note\":\"y\",\"ok\":true,\"ts\":1,\"vc\":3}\n"
      "4999 {\"id\":\"abcdefghijklmnopqrstuvwxyz0123456\",\"note\":\"y\",\"ok\":true,\"ts\":1,\"vc\":3}\n"
      "4999 {\"id\":\"b\",\"note\":\"a long note\",\"ok\":true,\"ts\":1,\"vc\":3}\n",
      "4999 {\"id\":\"a\",\"note\":\"\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n"
      "4999 {\"id\":\"abcdefgh\",\"note\":\"12345678\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n"
      "4999 {\"id\":\"abcdefghi\",\"note\":\"x\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n"
      "4999 {\"id\":\"abcdefghijklmnopqr\",\"note\":\"abcdefghijklmnopqr\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n"
      "4999 {\"id\":\"abcdefghijklmnopqrs\",\"note\":\"y\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n"
      "4999 {\"id\":\"abcdefghijklmnopqrstuvwxyz0123456\",\"note\":\"y\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n"
      "4999 {\"id\":\"b\",\"note\":\"a long note\",\"ok\":true,\"ts\":1,\"vc\":4.5}\n",
  };
  for (size_t a = 0; a < sizeof aggs / sizeof *aggs; a++) {
    T.current = "inline first records";
    wm_ctx ctx;
    wm_ctx_init(&ctx);
    capture out = {0};
    wm_op *w = tumbling_builtin(&ctx, aggs[a], "vc", &out);
    wm_schema *s = wm_schema_new(6, names, types);
    for (int pass = 0; pass < 2; pass++) {
      for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
        wm_row *r = wm_row_new(s);
        r->fields[0] = wm_cstr(rows[k].id, strlen(rows[k].id));
        wm_value_retain(NULL, &r->fields[0]);
        r->fields[1] = wm_int(pass + 1);
        r->fields[2] = pass ? wm_float(4.5) : wm_int(3);
        r->fields[3] = wm_bool(pass == 0);
        r->fields[4] = wm_cstr(rows[k].note, strlen(rows[k].note));
        wm_value_retain(NULL, &r->fields[4]);
        wm_value v = wm_row_value(r);
        CHECK_I64(wm_op_input_record(w, 0, &v, 1000 + pass), WM_OK);
        /* only the window's first record may be kept */
        CHECK_I64(r->refs, 1 + (pass == 0 && rows[k].retained));
        /* a key of up to 8 bytes is never copied, a longer one while the row is kept */
        CHECK_I64(r->fields[0].u.s->refs,
                  1 + (pass == 0 && rows[k].retained && strlen(rows[k].id) > 8));
        wm_value_release(NULL, &v);
      }
    }
    wm_op_input_watermark(w, 0, WM_TIME_MAX);
    CHECK_STR(out.out.data, expect[a]);
    wm_schema_release(s);
    wm_ctx_free(&ctx);
    wm_buf_free(&out.out);
  }
}

/* A row {id, ts = secs, vc} on channel chan at secs * 1000; id NULL: the integer key 7. */
static void push_row(wm_op *op, int chan, wm_schema *s, const char *id, int64_t secs,
                     wm_value vc) {
  wm_row *r = wm_row_new(s);
  if (id) {
    r->fields[0] = wm_cstr(id, strlen(id));
    wm_value_retain(NULL, &r->fields[0]);
  } else {
    r->fields[0] = wm_int(7);
  }
  r->fields[1] = wm_int(secs);
  r->fields[2] = vc;
  wm_value v = wm_row_value(r);
  CHECK_I64(wm_op_input_record(op, chan, &v, secs * 1000), WM_OK);
  wm_value_release(NULL, &v);
}

/* The tumbling sum's record path for a window that exists (wm_winop.c tumble_hit) gives
 * the general path's results: keys of 1, 8 and 9 bytes with one prefix and an integer key
 * apart, a float in the sum from then on, a late firing (lateness 2 s) and a record late
 * for its window to the side output; the first record of an earlier channel taking the
 * window's first place (first_by_chan); 300 keys (the index grows between hits). */
static void tumbling_hits(void) {
  T.current = "tumbling hits";
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  capture main = {.label = NULL}, late = {.label = "late"};
  wm_op *w = tumbling_late(&ctx, 1, &main, &late);
  wm_schema *s = sensor_schema();
  push_row(w, 0, s, "a", 1, wm_int(1));
  push_row(w, 0, s, "abcdefgh", 2, wm_int(10));
  push_row(w, 0, s, "abcdefghi", 2, wm_int(100));
  push_row(w, 0, s, "a", 3, wm_int(2));
  push_row(w, 0, s, "abcdefgh", 3, wm_int(20));
  push_row(w, 0, s, "abcdefghi", 4, wm_int(200));
  push_row(w, 0, s, NULL, 1, wm_int(5));
  push_row(w, 0, s, NULL, 2, wm_int(6));
  push_row(w, 0, s, "a", 4, wm_float(0.5));
  push_row(w, 0, s, "a", 4, wm_int(1));
  wm_op_input_watermark(w, 0, 5000); /* fires [0, 5000); kept until 6999 */
  push_row(w, 0, s, "abcdefgh", 4, wm_int(5)); /* late firings */
  push_row(w, 0, s, "a", 3, wm_int(1));
  wm_op_input_watermark(w, 0, 7000); /* cleans [0, 5000) up */
  push_row(w, 0, s, "abcdefgh", 4, wm_int(1)); /* late: side output */
  wm_op_input_watermark(w, 0, WM_TIME_MAX);
  CHECK_STR(main.out.data,
            "4999 {\"id\":\"a\",\"ts\":1,\"vc\":4.5}\n"
            "4999 {\"id\":\"abcdefgh\",\"ts\":2,\"vc\":30}\n"
            "4999 {\"id\":\"abcdefghi\",\"ts\":2,\"vc\":300}\n"
            "4999 {\"id\":7,\"ts\":1,\"vc\":11}\n"
            "4999 {\"id\":\"abcdefgh\",\"ts\":2,\"vc\":35}\n"
            "4999 {\"id\":\"a\",\"ts\":1,\"vc\":5.5}\n");
  CHECK_STR(late.out.data, "late 4000 {\"id\":\"abcdefgh\",\"ts\":4,\"vc\":1}\n");
  wm_ctx_free(&ctx);
  wm_buf_free(&main.out);
  wm_buf_free(&late.out);

  /* first_by_chan: channel 0's record comes first in the window, whenever it arrives */
  wm_ctx_init(&ctx);
  wm_winop_config cfg = {0};
  const char *key = "id";
  cfg.assigner.kind = WM_WA_TUMBLING;
  cfg.assigner.size = 5000;
  cfg.first_by_chan = 1;
  wm_keysel_fields(&cfg.keysel, &key, 1);
  wm_winfn_builtin(&cfg.fn, WM_AGG_SUM, "vc");
  w = wm_winop_new(&ctx, "window", &cfg);
  capture out = {0};
  wm_buf_init(&out.out);
  wm_op_connect(w, 0, wm_op_new(&ctx, &capture_vt, &out, "out"));
  wm_op_connect(wm_op_new(&ctx, &capture_vt, NULL, "src0"), 0, w);
  wm_op_connect(wm_op_new(&ctx, &capture_vt, NULL, "src1"), 0, w);
  wm_ctx_prepare(&ctx);
  push_row(w, 1, s, "k", 2, wm_int(10));
  push_row(w, 1, s, "k", 3, wm_int(1));
  push_row(w, 0, s, "k", 1, wm_int(5));
  push_row(w, 0, s, "k", 4, wm_int(1));
  push_row(w, 1, s, "k", 4, wm_int(1));
  wm_op_input_watermark(w, 0, WM_TIME_MAX);
  wm_op_input_watermark(w, 1, WM_TIME_MAX);
  CHECK_STR(out.out.data, "4999 {\"id\":\"k\",\"ts\":1,\"vc\":18}\n");
  wm_ctx_free(&ctx);
  wm_buf_free(&out.out);

  /* 300 keys, two records each: the index grows while windows are hit */
  capture many = {0};
  wm_ctx_init(&ctx);
  w = tumbling_builtin(&ctx, WM_AGG_SUM, "vc", &many);
  char ids[300][16];
  for (int k = 0; k < 300; k++) snprintf(ids[k], sizeof ids[k], "k%d", k);
  for (int k = 0; k < 300; k++) push_row(w, 0, s, ids[k], 1, wm_int(k));
  for (int k = 0; k < 300; k++) push_row(w, 0, s, ids[k], 2, wm_int(1000));
  wm_op_input_watermark(w, 0, WM_TIME_MAX);
  wm_buf want;
  wm_buf_init(&want);
  for (int k = 0; k < 300; k++) {
    char line[80];
    snprintf(line, sizeof line, "4999 {\"id\":\"k%d\",\"ts\":1,\"vc\":%d}\n", k, k + 1000);
    wm_buf_adds(&want, line);
  }
  CHECK_STR(many.out.data, want.data);
  wm_buf_free(&want);
  wm_ctx_free(&ctx);
  wm_buf_free(&many.out);
  wm_schema_release(s);
}

void test_winop(void) {
  scenario_c(1);
  scenario_c(0);
  keys_and_builtins();
  lateness_overflow();
  inline_first_records();
  tumbling_hits();
}
