/* The Nexmark generator (io/wm_nexmark.h) and its source (io/wm_src_nexmark.h). The expected
 * numbers come from the model as Flink's nexmark generator defines it (worked out by hand
 * in the comments), never from a run of this code. */
#include <stdlib.h>
#include <string.h>

#include "exec/wm_exec.h"
#include "io/wm_nexmark.h"
#include "io/wm_src_nexmark.h"
#include "test.h"

static const wm_value *fld(const wm_value *row, const char *name) {
  static const wm_value nil = {0};
  if (row->type != WM_ROW) return &nil;
  int i = wm_schema_find(row->u.row->schema, name);
  return i < 0 ? &nil : &row->u.row->fields[i];
}
static int64_t ival(const wm_value *row, const char *sub, const char *name) {
  const wm_value *v = fld(sub ? fld(row, sub) : row, name);
  return v->type == WM_INT ? v->u.i : INT64_MIN;
}
static const char *SUB[] = {"person", "auction", "bid"};

/* Two rows equal field by field (strings by bytes, sub-rows recursively). */
static int same(const wm_value *a, const wm_value *b) {
  if (a->type != b->type) return 0;
  if (a->type == WM_INT) return a->u.i == b->u.i;
  if (a->type == WM_NIL) return 1;
  if (a->type == WM_STR) return a->u.s->len == b->u.s->len && memcmp(a->u.s->data, b->u.s->data, a->u.s->len) == 0;
  if (a->type != WM_ROW || a->u.row->schema->nfields != b->u.row->schema->nfields) return 0;
  for (uint32_t i = 0; i < a->u.row->schema->nfields; i++)
    if (!same(&a->u.row->fields[i], &b->u.row->fields[i])) return 0;
  return 1;
}

static void test_determinism(void) {
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  c.seed = 42;
  wm_nexmark *g1 = wm_nexmark_new(&c), *g2 = wm_nexmark_new(&c);
  c.seed = 43;
  wm_nexmark *g3 = wm_nexmark_new(&c);
  CHECK(g1 && g2 && g3);
  if (!g1 || !g2 || !g3) return;
  int all_same = 1, ids_same = 1, strings_differ = 0;
  /* in order, and event 700 made alone after 999 (a restored source makes it so) */
  for (int64_t k = 0; k < 1000; k++) {
    wm_value a, b, d;
    CHECK(wm_nexmark_event(g1, k, &a, NULL, NULL) == 0);
    CHECK(wm_nexmark_event(g2, k, &b, NULL, NULL) == 0);
    CHECK(wm_nexmark_event(g3, k, &d, NULL, NULL) == 0);
    all_same &= same(&a, &b);
    int kind = (int)ival(&a, NULL, "event_type");
    /* another seed: the same kinds, ids and times; other strings */
    ids_same &= ival(&d, NULL, "event_type") == kind && ival(&d, NULL, "dateTime") == ival(&a, NULL, "dateTime");
    if (kind == WM_NEXMARK_PERSON) ids_same &= ival(&a, "person", "id") == ival(&d, "person", "id");
    if (kind == WM_NEXMARK_AUCTION) ids_same &= ival(&a, "auction", "id") == ival(&d, "auction", "id");
    strings_differ |= !same(&a, &d);
    wm_value_release(NULL, &a);
    wm_value_release(NULL, &b);
    wm_value_release(NULL, &d);
  }
  CHECK(all_same);
  CHECK(ids_same);
  CHECK(strings_differ);
  wm_value x, y;
  CHECK(wm_nexmark_event(g1, 700, &x, NULL, NULL) == 0);
  CHECK(wm_nexmark_event(g2, 700, &y, NULL, NULL) == 0);
  CHECK(same(&x, &y));
  wm_value_release(NULL, &x);
  wm_value_release(NULL, &y);
  wm_nexmark_free(g1);
  wm_nexmark_free(g2);
  wm_nexmark_free(g3);
}

/* 1:3:46: event ids start at 2 (Flink's table source: first event id 1 + event number 1), so
 * the first event (id 2, 2 % 50 = 2, in [1, 4)) is an auction, and every 50 consecutive
 * events hold exactly 1 person, 3 auctions and 46 bids. Persons have consecutive ids from
 * 1000 + 1 (the first person is event id 50: 50/50 * 1 + 0 = base 1); auctions from 1001
 * (id 2: epoch 0, offset 2 - 1 = 1). */
static void test_proportions_and_ids(void) {
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  wm_nexmark *g = wm_nexmark_new(&c);
  CHECK(g != NULL);
  if (!g) return;
  int kinds[2000];
  int64_t next_person = 1001, next_auction = 1001;
  int persons_ok = 1, auctions_ok = 1, bidders_ok = 1, sellers_ok = 1;
  for (int64_t k = 0; k < 2000; k++) {
    wm_value e;
    CHECK(wm_nexmark_event(g, k, &e, NULL, NULL) == 0);
    int kind = kinds[k] = (int)ival(&e, NULL, "event_type");
    /* only the sub-record of its kind */
    for (int s = 0; s < 3; s++) CHECK((fld(&e, SUB[s])->type == WM_ROW) == (s == kind));
    if (kind == WM_NEXMARK_PERSON) persons_ok &= ival(&e, "person", "id") == next_person++;
    if (kind == WM_NEXMARK_AUCTION) {
      auctions_ok &= ival(&e, "auction", "id") == next_auction++;
      /* the seller is a person that exists, or one of the 10 'leads' ahead */
      sellers_ok &= ival(&e, "auction", "seller") >= 1000 && ival(&e, "auction", "seller") <= next_person + 10;
    }
    /* Flink adds the first person id twice to a bidder */
    if (kind == WM_NEXMARK_BID) bidders_ok &= ival(&e, "bid", "bidder") >= 2000;
    wm_value_release(NULL, &e);
  }
  CHECK_I64(kinds[0], WM_NEXMARK_AUCTION);
  CHECK_I64(kinds[1], WM_NEXMARK_AUCTION);
  CHECK_I64(kinds[2], WM_NEXMARK_BID);
  CHECK_I64(kinds[48], WM_NEXMARK_PERSON); /* event id 50 */
  CHECK(persons_ok);
  CHECK(auctions_ok);
  CHECK(bidders_ok);
  CHECK(sellers_ok);
  int windows_ok = 1;
  for (int s = 0; s + 50 <= 2000; s++) {
    int n[3] = {0, 0, 0};
    for (int k = s; k < s + 50; k++) n[kinds[k]]++;
    windows_ok &= n[0] == 1 && n[1] == 3 && n[2] == 46;
  }
  CHECK(windows_ok);
  CHECK_I64(wm_nexmark_event_id(&c, 0), 2);
  /* other proportions, 2:1:1 */
  c.person_proportion = 2;
  c.auction_proportion = 1;
  c.bid_proportion = 1;
  /* rem < 2 person, rem == 2 auction, rem == 3 bid */
  CHECK_I64(wm_nexmark_kind(&c, 4), WM_NEXMARK_PERSON);
  CHECK_I64(wm_nexmark_kind(&c, 5), WM_NEXMARK_PERSON);
  CHECK_I64(wm_nexmark_kind(&c, 6), WM_NEXMARK_AUCTION);
  CHECK_I64(wm_nexmark_kind(&c, 7), WM_NEXMARK_BID);
  wm_nexmark_free(g);
}

/* Hot ratios: with ratio r, 1 in r choices is not hot. Ratio 1: never hot (nextInt(1) is 0);
 * ratio 1000000: all hot (1 in a million is not). A hot auction is the first of its batch of
 * 100 auctions: (last base-0 auction id / 100) * 100 + 1000; a hot bidder the second of its
 * batch of 100 persons, + 1000 twice; a hot seller the first, + 1000. */
static void test_hot(void) {
  for (int hot = 0; hot < 2; hot++) {
    wm_nexmark_config c;
    wm_nexmark_config_default(&c);
    c.hot_auction_ratio = c.hot_bidders_ratio = c.hot_sellers_ratio = hot ? 1000000 : 1;
    wm_nexmark *g = wm_nexmark_new(&c);
    CHECK(g != NULL);
    if (!g) return;
    int64_t last_auction = 1000, last_person = 999; /* ids of the last made so far */
    int hot_auctions = 0, hot_bidders = 0, hot_sellers = 0, bids = 0, auctions = 0;
    for (int64_t k = 0; k < 20000; k++) {
      wm_value e;
      CHECK(wm_nexmark_event(g, k, &e, NULL, NULL) == 0);
      int kind = (int)ival(&e, NULL, "event_type");
      if (kind == WM_NEXMARK_PERSON) last_person = ival(&e, "person", "id");
      if (kind == WM_NEXMARK_AUCTION) {
        last_auction = ival(&e, "auction", "id");
        auctions++;
        /* base-0 person of the batch: the last person so far (-1 before the first: then 0) */
        int64_t p0 = last_person - 1000 < 0 ? 0 : last_person - 1000;
        hot_sellers += ival(&e, "auction", "seller") == (p0 / 100) * 100 + 1000;
      }
      if (kind == WM_NEXMARK_BID) {
        bids++;
        hot_auctions += ival(&e, "bid", "auction") == ((last_auction - 1000) / 100) * 100 + 1000;
        int64_t p0 = last_person - 1000 < 0 ? 0 : last_person - 1000;
        hot_bidders += ival(&e, "bid", "bidder") == (p0 / 100) * 100 + 1 + 2000;
      }
      wm_value_release(NULL, &e);
    }
    if (hot) {
      CHECK_I64(hot_auctions, bids);
      CHECK_I64(hot_bidders, bids);
      CHECK_I64(hot_sellers, auctions);
    } else { /* uniform choices over ~110 auctions / people hit the hot one rarely */
      CHECK(hot_auctions < bids / 20);
      CHECK(hot_bidders < bids / 20);
      CHECK(hot_sellers < auctions / 20);
    }
    wm_nexmark_free(g);
  }
}

/* Event times: number m at base + (long)(m * 1e6 / rate) / 1000. At 10000 events/s, numbers 1..9
 * are at base + 0, number 10 at base + 1 (10 * 100 us = 1 ms). Out-of-order groups of g:
 * adjusted(m) = (m/g)*g + (m*953)%g, the watermark after m the time of (m/g)*g: every event of
 * the group is at or after it, and no later event is before it. */
static void test_times(void) {
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  CHECK_I64(wm_nexmark_time(&c, 9), c.base_time);
  CHECK_I64(wm_nexmark_time(&c, 10), c.base_time + 1);
  CHECK_I64(wm_nexmark_time(&c, 25), c.base_time + 2);
  c.event_rate = 1000; /* 1 ms apart */
  c.out_of_order_group = 10;
  /* count 0 is number 1: adjusted 0 + 953 % 10 = 3, id 4; number 12: 10 + (12*953)%10 = 16 */
  CHECK_I64(wm_nexmark_event_id(&c, 0), 4);
  CHECK_I64(wm_nexmark_event_id(&c, 11), 17);
  wm_nexmark *g = wm_nexmark_new(&c);
  CHECK(g != NULL);
  if (!g) return;
  int64_t max_wm = INT64_MIN, min_ts_after = INT64_MAX;
  int bounded = 1, late = 0, perm = 1;
  int64_t ts_of[200];
  for (int64_t k = 0; k < 200; k++) {
    wm_value e;
    int64_t ts, wm;
    CHECK(wm_nexmark_event(g, k, &e, &ts, &wm) == 0);
    CHECK_I64(ival(&e, NULL, "dateTime"), ts);
    ts_of[k] = ts;
    late += ts < max_wm; /* an event behind an earlier watermark */
    if (wm > max_wm) max_wm = wm;
    /* within its group: at most g - 1 ms after the watermark */
    bounded &= ts >= wm && ts - wm <= 9;
    wm_value_release(NULL, &e);
  }
  (void)min_ts_after;
  CHECK(bounded);
  CHECK_I64(late, 0);
  /* numbers 10..19 (counts 9..18) hold times 10..19 each once: the group is a permutation */
  for (int64_t t = 10; t < 20; t++) {
    int n = 0;
    for (int k = 9; k < 19; k++) n += ts_of[k] == c.base_time + t;
    perm &= n == 1;
  }
  CHECK(perm);
  /* out of order inside the group: some event earlier than its predecessor */
  int disorder = 0;
  for (int k = 1; k < 200; k++) disorder |= ts_of[k] < ts_of[k - 1];
  CHECK(disorder);
  wm_nexmark_free(g);
}

static void test_config(void) {
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  CHECK(wm_nexmark_config_check(&c) == NULL);
  c.bid_proportion = 0;
  CHECK(wm_nexmark_config_check(&c) != NULL);
  wm_nexmark_config_default(&c);
  c.event_rate = 0;
  CHECK(wm_nexmark_config_check(&c) != NULL);
  wm_nexmark_config_default(&c);
  uint64_t h = wm_nexmark_config_hash(&c);
  c.seed = 1;
  CHECK(wm_nexmark_config_hash(&c) != h);
}

/* omit: a field left out is nil, a kind with every field left out has no sub-row, and every
 * other field of every event is the one the full generator makes (drawn, not copied); a
 * mask naming a field a kind does not have is refused; the checkpoint's hash ignores it. */
static void test_omit(void) {
  wm_nexmark_config full, part;
  wm_nexmark_config_default(&full);
  full.seed = 7;
  part = full;
  part.omit[WM_NEXMARK_PERSON] = (1u << 8) - 1;        /* no person row */
  part.omit[WM_NEXMARK_AUCTION] = (1u << 1) | (1u << 9); /* itemName, extra */
  part.omit[WM_NEXMARK_BID] = (1u << 3) | (1u << 6);     /* channel, extra */
  CHECK(wm_nexmark_config_check(&part) == NULL);
  CHECK(wm_nexmark_config_hash(&part) == wm_nexmark_config_hash(&full));
  CHECK(strcmp(wm_nexmark_field(WM_NEXMARK_AUCTION, 9), "extra") == 0);
  CHECK(wm_nexmark_field(WM_NEXMARK_BID, 7) == NULL);
  wm_nexmark *gf = wm_nexmark_new(&full), *gp = wm_nexmark_new(&part);
  CHECK(gf && gp);
  if (!gf || !gp) return;
  int ok = 1, kinds = 0;
  for (int64_t k = 0; k < 2000; k++) {
    wm_value a, b;
    int64_t ta, tb;
    CHECK(wm_nexmark_event(gf, k, &a, &ta, NULL) == 0);
    CHECK(wm_nexmark_event(gp, k, &b, &tb, NULL) == 0);
    int kind = (int)ival(&a, NULL, "event_type");
    kinds |= 1 << kind;
    ok &= ta == tb && ival(&b, NULL, "event_type") == kind && ival(&b, NULL, "dateTime") == ival(&a, NULL, "dateTime");
    const wm_value *sa = fld(&a, SUB[kind]), *sb = fld(&b, SUB[kind]);
    if (kind == WM_NEXMARK_PERSON) {
      ok &= sa->type == WM_ROW && sb->type == WM_NIL;
    } else {
      ok &= sb->type == WM_ROW;
      for (int i = 0; ok && i < wm_nexmark_nfields(kind); i++) {
        const char *name = wm_nexmark_field(kind, i);
        const wm_value *fa = fld(sa, name), *fb = fld(sb, name);
        if ((part.omit[kind] >> i) & 1u) ok &= fa->type != WM_NIL && fb->type == WM_NIL;
        else ok &= same(fa, fb);
      }
    }
    wm_value_release(NULL, &a);
    wm_value_release(NULL, &b);
  }
  CHECK(ok);
  CHECK(kinds == 7);
  part.omit[WM_NEXMARK_BID] = 1u << 7; /* a bid has 7 fields */
  CHECK(wm_nexmark_config_check(&part) != NULL);
  wm_nexmark_free(gf);
  wm_nexmark_free(gp);
}

/* ---- the source on an executor: a checkpoint at event 60 resumes at event 61 ------------- */

typedef struct noter {
  wm_buf seen;
  wm_exec *e;
  wm_op *src;
  int64_t snap_at;
  wm_buf snap;
  int64_t n;
} noter;

static int note_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  noter *s = op->impl;
  int kind = (int)ival(rec, NULL, "event_type");
  wm_buf_add_int(&s->seen, (int64_t)op->ctx->pos->line);
  wm_buf_addc(&s->seen, ':');
  wm_buf_add_int(&s->seen, kind);
  wm_buf_addc(&s->seen, ':');
  const wm_value *sub = fld(rec, SUB[kind]);
  const wm_value *x = fld(sub, kind == 2 ? "price" : "id");
  wm_buf_add_int(&s->seen, x->u.i);
  wm_buf_addc(&s->seen, ';');
  if (++s->n == s->snap_at) CHECK(wm_exec_snapshot_source(s->e, s->src, &s->snap) == WM_OK);
  return WM_OK;
}
static const wm_op_vt note_vt = {.kind = "note", .record = note_record};

static int run_source(const wm_nexmark_config *c, int part, int parts, const wm_buf *restore, int64_t snap_at,
                      wm_buf *seen, wm_buf *snap, char *err, size_t errlen) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config cfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &cfg);
  noter ns = {.snap_at = snap_at};
  wm_buf_init(&ns.seen);
  wm_buf_init(&ns.snap);
  wm_op *src = wm_src_nexmark_new(wm_exec_host(e), "nexmark", c, 0, part, parts);
  wm_op *sink = wm_op_new(&ctx, &note_vt, &ns, "sink");
  ns.e = e;
  ns.src = src;
  int rc = WM_ERR;
  if (src && sink && wm_op_connect(src, 0, sink) >= 0 && wm_ctx_prepare(&ctx) == WM_OK &&
      (!restore || wm_exec_restore_source(e, src, restore->data, restore->len) == WM_OK))
    rc = wm_exec_run(e);
  snprintf(err, errlen, "%.500s", wm_ctx_errtext(&ctx));
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  wm_buf_add(seen, ns.seen.data ? ns.seen.data : "", ns.seen.len);
  if (snap) wm_buf_add(snap, ns.snap.data ? ns.snap.data : "", ns.snap.len);
  wm_buf_free(&ns.seen);
  wm_buf_free(&ns.snap);
  return rc;
}

static void test_source(void) {
  wm_nexmark_config c;
  wm_nexmark_config_default(&c);
  c.events = 150;
  c.seed = 5;
  wm_buf all, snap, rest;
  wm_buf_init(&all);
  wm_buf_init(&snap);
  wm_buf_init(&rest);
  char err[512];
  CHECK(run_source(&c, 0, 1, NULL, 60, &all, &snap, err, sizeof err) == WM_OK);
  wm_buf_addc(&all, 0);
  CHECK(snap.len == 34);
  /* 150 events, the last one numbered 150 */
  CHECK(strstr(all.data, ";150:") != NULL && strstr(all.data, ";151:") == NULL);
  CHECK(run_source(&c, 0, 1, &snap, 0, &rest, NULL, err, sizeof err) == WM_OK);
  wm_buf_addc(&rest, 0);
  /* the restored run emits events 61..150, as the first run did after its 60th */
  const char *from61 = strstr(all.data, ";61:");
  CHECK(from61 != NULL);
  if (from61) CHECK_STR(rest.data, from61 + 1);
  /* another configuration refuses the checkpoint, naming the source */
  c.seed = 6;
  wm_buf_clear(&rest);
  CHECK(run_source(&c, 0, 1, &snap, 0, &rest, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "other nexmark options") != NULL && strstr(err, "'nexmark'") != NULL);
  /* a bad configuration is an error at creation */
  c.hot_auction_ratio = 0;
  CHECK(run_source(&c, 0, 1, NULL, 0, &rest, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "hot ratios") != NULL);
  /* two parts: events 1, 3, 5, ... and 2, 4, 6, ...: together the events of one part */
  c.hot_auction_ratio = 2;
  c.seed = 5;
  wm_buf p0, p1;
  wm_buf_init(&p0);
  wm_buf_init(&p1);
  CHECK(run_source(&c, 0, 2, NULL, 0, &p0, NULL, err, sizeof err) == WM_OK);
  CHECK(run_source(&c, 1, 2, NULL, 0, &p1, NULL, err, sizeof err) == WM_OK);
  wm_buf merged;
  wm_buf_init(&merged);
  wm_buf_addc(&p0, 0);
  wm_buf_addc(&p1, 0);
  char *a = p0.data, *b = p1.data;
  for (int i = 0; i < 150; i++) { /* alternate: one record of each */
    char **q = i % 2 == 0 ? &a : &b;
    char *end = strchr(*q, ';');
    if (!end) break;
    wm_buf_add(&merged, *q, (size_t)(end - *q) + 1);
    *q = end + 1;
  }
  wm_buf_addc(&merged, 0);
  CHECK_STR(merged.data, all.data);
  /* a checkpoint of one part is refused by a source of two */
  wm_buf_clear(&rest);
  CHECK(run_source(&c, 0, 2, &snap, 0, &rest, NULL, err, sizeof err) == WM_ERR);
  CHECK(strstr(err, "parallelism 1, not 2") != NULL);
  wm_buf_free(&p0);
  wm_buf_free(&p1);
  wm_buf_free(&merged);
  wm_buf_free(&all);
  wm_buf_free(&snap);
  wm_buf_free(&rest);
}

void test_nexmark(void) {
  test_determinism();
  test_proportions_and_ids();
  test_hot();
  test_times();
  test_config();
  test_omit();
  test_source();
}
