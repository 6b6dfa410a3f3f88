/* The Nexmark event generator (wm_nexmark.h): Flink nexmark's model in C. */
#include "io/wm_nexmark.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_PERSON_ID 1000
#define FIRST_AUCTION_ID 1000
#define FIRST_CATEGORY_ID 10
#define NUM_CATEGORIES 5
#define PERSON_ID_LEAD 10
#define AUCTION_ID_LEAD 10
#define HOT_SELLER_RATIO 100
#define HOT_AUCTION_RATIO 100
#define HOT_BIDDER_RATIO 100
#define HOT_CHANNELS_RATIO 2
#define CHANNELS_NUMBER 10000
#define MIN_STRING_LENGTH 3
#define EXTRA_POOL ((size_t)1 << 20) /* Flink's REUSABLE_EXTRA_STRING: 1 MiB */

static const char *const US_STATES[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
static const char *const US_CITIES[] = {"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
                                        "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"};
static const char *const FIRST_NAMES[] = {"Peter", "Paul", "Luke", "John", "Saul", "Vicky",
                                          "Kate", "Julie", "Sarah", "Deiter", "Walter"};
static const char *const LAST_NAMES[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                         "Walton", "Smith", "Jones", "Noris"};
static const char *const HOT_CHANNELS[] = {"Google", "Facebook", "Baidu", "Apple"};
#define NSTATES 6
#define NCITIES 10
#define NFIRST 11
#define NLAST 9
#define NHOT 4

static const char *const TOP_NAMES[] = {"event_type", "person", "auction", "bid", "dateTime"};
static const uint8_t TOP_TYPES[] = {WM_FT_INTEGER, WM_FT_ANY, WM_FT_ANY, WM_FT_ANY, WM_FT_INTEGER};
static const char *const PERSON_NAMES[] = {"id", "name", "emailAddress", "creditCard",
                                           "city", "state", "dateTime", "extra"};
static const uint8_t PERSON_TYPES[] = {WM_FT_INTEGER, WM_FT_STRING, WM_FT_STRING, WM_FT_STRING,
                                       WM_FT_STRING, WM_FT_STRING, WM_FT_INTEGER, WM_FT_STRING};
static const char *const AUCTION_NAMES[] = {"id", "itemName", "description", "initialBid", "reserve",
                                            "dateTime", "expires", "seller", "category", "extra"};
static const uint8_t AUCTION_TYPES[] = {WM_FT_INTEGER, WM_FT_STRING, WM_FT_STRING, WM_FT_INTEGER,
                                        WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_INTEGER,
                                        WM_FT_INTEGER, WM_FT_STRING};
static const char *const BID_NAMES[] = {"auction", "bidder", "price", "channel", "url", "dateTime", "extra"};
static const uint8_t BID_TYPES[] = {WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_INTEGER, WM_FT_STRING,
                                    WM_FT_STRING, WM_FT_INTEGER, WM_FT_STRING};

struct wm_nexmark {
  wm_nexmark_config c;
  int64_t total;                 /* the sum of the proportions */
  wm_schema *top, *person, *auction, *bid;
  wm_str *states[NSTATES], *cities[NCITIES], *names[NFIRST * NLAST];
  wm_str *hot_channels[NHOT], *hot_urls[NHOT];
  wm_str *channels[CHANNELS_NUMBER], *urls[CHANNELS_NUMBER];
  wm_str *empty;
  char *pool;                    /* EXTRA_POOL letters that `extra` strings are cut from */
};

int wm_nexmark_nfields(int kind) {
  return kind == WM_NEXMARK_PERSON ? 8 : kind == WM_NEXMARK_AUCTION ? 10 : kind == WM_NEXMARK_BID ? 7 : 0;
}

const char *wm_nexmark_field(int kind, int i) {
  if (i < 0 || i >= wm_nexmark_nfields(kind)) return NULL;
  return kind == WM_NEXMARK_PERSON ? PERSON_NAMES[i] : kind == WM_NEXMARK_AUCTION ? AUCTION_NAMES[i] : BID_NAMES[i];
}

void wm_nexmark_config_default(wm_nexmark_config *c) {
  memset(c, 0, sizeof *c);
  c->event_rate = 10000;
  c->person_proportion = 1;
  c->auction_proportion = 3;
  c->bid_proportion = 46;
  c->hot_auction_ratio = 2;
  c->hot_bidders_ratio = 4;
  c->hot_sellers_ratio = 4;
  c->avg_person_size = 200;
  c->avg_auction_size = 500;
  c->avg_bid_size = 100;
  c->in_flight_auctions = 100;
  c->active_people = 1000;
  c->out_of_order_group = 1;
  c->base_time = INT64_C(1436918400000);
}

const char *wm_nexmark_config_check(const wm_nexmark_config *c) {
  if (c->events < 0) return "the number of events must be 0 (unbounded) or more";
  if (c->event_rate < 1 || c->event_rate > 1000000000) return "the event rate must be from 1 to 1e9 events per second";
  if (c->person_proportion < 1 || c->auction_proportion < 1 || c->bid_proportion < 1 ||
      c->person_proportion > 1000000 || c->auction_proportion > 1000000 || c->bid_proportion > 1000000)
    return "the proportions must be from 1 to 1000000";
  if (c->hot_auction_ratio < 1 || c->hot_bidders_ratio < 1 || c->hot_sellers_ratio < 1 ||
      c->hot_auction_ratio > 1000000 || c->hot_bidders_ratio > 1000000 || c->hot_sellers_ratio > 1000000)
    return "the hot ratios must be from 1 to 1000000";
  if (c->avg_person_size < 0 || c->avg_auction_size < 0 || c->avg_bid_size < 0 ||
      c->avg_person_size > 100000 || c->avg_auction_size > 100000 || c->avg_bid_size > 100000)
    return "the average sizes must be from 0 to 100000 bytes";
  if (c->in_flight_auctions < 1 || c->in_flight_auctions > 100000000) return "the auctions in flight must be from 1 to 1e8";
  if (c->active_people < 1 || c->active_people > 100000000) return "the active people must be from 1 to 1e8";
  if (c->out_of_order_group < 1 || c->out_of_order_group > 1000000000) return "the out-of-order group size must be from 1 to 1e9";
  if (c->base_time < 0 || c->base_time > INT64_C(253402300799999)) return "the base time must be from 0 to year 9999 in ms";
  for (int k = 0; k < 3; k++)
    if (c->omit[k] >> wm_nexmark_nfields(k)) return "omit names a field that a row of its kind does not have";
  return NULL;
}

/* ---- the random draws of one event: splitmix64 seeded by (seed, event id) ------------- */

typedef struct rng { uint64_t s; } rng;

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}
static uint64_t rng_next(rng *r) { return mix64(r->s += UINT64_C(0x9e3779b97f4a7c15)); }
/* uniform in [0, n), n >= 1 (Lemire's multiply: no division) */
static int64_t rng_int(rng *r, int64_t n) {
  if (n <= 1) return 0;
  if (n <= INT64_C(0xffffffff)) return (int64_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
  return (int64_t)(rng_next(r) % (uint64_t)n);
}
static double rng_double(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- the model's numbers ------------------------------------------------------------- */

static int64_t total_of(const wm_nexmark_config *c) {
  return (int64_t)c->person_proportion + c->auction_proportion + c->bid_proportion;
}

static int64_t adjusted(const wm_nexmark_config *c, int64_t number) {
  int64_t g = c->out_of_order_group;
  if (g == 1) return number;
  return (number / g) * g + (int64_t)(((unsigned __int128)number * 953) % (uint64_t)g);
}

int64_t wm_nexmark_event_id(const wm_nexmark_config *c, int64_t count) {
  return 1 + adjusted(c, 1 + count);
}

int wm_nexmark_kind(const wm_nexmark_config *c, int64_t id) {
  int64_t rem = id % total_of(c);
  if (rem < c->person_proportion) return WM_NEXMARK_PERSON;
  if (rem < c->person_proportion + c->auction_proportion) return WM_NEXMARK_AUCTION;
  return WM_NEXMARK_BID;
}

int64_t wm_nexmark_time(const wm_nexmark_config *c, int64_t number) {
  double delay_us = 1e6 / (double)c->event_rate;
  return c->base_time + (int64_t)((double)number * delay_us) / 1000;
}

static int64_t last_person(const wm_nexmark_config *c, int64_t total, int64_t id) {
  int64_t epoch = id / total, offset = id % total;
  if (offset >= c->person_proportion) offset = c->person_proportion - 1;
  return epoch * c->person_proportion + offset;
}

static int64_t last_auction(const wm_nexmark_config *c, int64_t total, int64_t id) {
  int64_t epoch = id / total, offset = id % total;
  if (offset < c->person_proportion) {
    epoch--;
    offset = c->auction_proportion - 1;
  } else if (offset >= c->person_proportion + c->auction_proportion) {
    offset = c->auction_proportion - 1;
  } else {
    offset -= c->person_proportion;
  }
  return epoch * c->auction_proportion + offset;
}

static int64_t next_person(const wm_nexmark_config *c, int64_t total, int64_t id, rng *r) {
  int64_t people = last_person(c, total, id) + 1;
  int64_t active = people < c->active_people ? people : c->active_people;
  return people - active + rng_int(r, active + PERSON_ID_LEAD);
}

static int64_t next_auction(const wm_nexmark_config *c, int64_t total, int64_t id, rng *r) {
  int64_t hi = last_auction(c, total, id);
  int64_t lo = hi - c->in_flight_auctions > 0 ? hi - c->in_flight_auctions : 0;
  return lo + rng_int(r, hi - lo + 1 + AUCTION_ID_LEAD);
}

static int64_t next_price(rng *r) { return (int64_t)floor(pow(10.0, rng_double(r) * 6.0) * 100.0 + 0.5); }

/* ---- strings ------------------------------------------------------------------------ */

/* Flink's nextString: 3 .. max-1 letters, 1 in 13 the special character, then trimmed of
 * spaces. Written to buf (at least max bytes); its length. */
static size_t next_string(rng *r, int max, char special, char *buf) {
  int64_t len = MIN_STRING_LENGTH + rng_int(r, max - MIN_STRING_LENGTH);
  for (int64_t i = 0; i < len; i++)
    buf[i] = rng_int(r, 13) == 0 ? special : (char)('a' + rng_int(r, 26));
  size_t a = 0, b = (size_t)len;
  while (a < b && buf[a] == ' ') a++;
  while (b > a && buf[b - 1] == ' ') b--;
  if (a) memmove(buf, buf + a, b - a);
  return b - a;
}

static wm_str *str_of(const char *s, size_t n) { return wm_str_new(s, n); }

/* Flink's nextExtra: about desired - current letters (+-20%), cut from the pool. */
static wm_str *next_extra(wm_nexmark *g, rng *r, int64_t current, int64_t desired) {
  if (current > desired) {
    g->empty->refs++;
    return g->empty;
  }
  desired -= current;
  int64_t delta = (int64_t)floor((double)desired * 0.2 + 0.5);
  int64_t size = desired - delta + (delta == 0 ? 0 : rng_int(r, 2 * delta));
  int64_t off = rng_int(r, (int64_t)EXTRA_POOL - size);
  return str_of(g->pool + off, (size_t)size);
}

static wm_value sv(wm_str *s) {
  wm_value v = {0};
  v.type = WM_STR;
  v.u.s = s;
  return v;
}
static wm_value shared(wm_str *s) {
  s->refs++;
  return sv(s);
}

/* whether field i of a row of kind k is left out (wm_nexmark_config.omit) */
#define OMIT(g, k, i) ((((g)->c.omit[k]) >> (i)) & 1u)
/* a string drawn into buf and kept unless omitted (NULL then, and `ok` stays) */
static wm_str *kept(const wm_nexmark *g, int k, int i, const char *buf, size_t n, int *ok) {
  if (OMIT(g, k, i)) return NULL;
  wm_str *s = str_of(buf, n);
  if (!s) *ok = 0;
  return s;
}

/* ---- the three kinds ---------------------------------------------------------------- */

static int make_person(wm_nexmark *g, int64_t id, rng *r, int64_t ts, wm_row *p) {
  const wm_nexmark_config *c = &g->c;
  char email[32], card[24]; /* 4 x "dddd " and a NUL; the last space is not part of it */
  int64_t first = rng_int(r, NFIRST);
  wm_str *name = g->names[first * NLAST + rng_int(r, NLAST)];
  size_t n1 = next_string(r, 7, ' ', email);
  email[n1++] = '@';
  size_t n2 = next_string(r, 5, ' ', email + n1);
  memcpy(email + n1 + n2, ".com", 4);
  size_t elen = n1 + n2 + 4;
  for (int i = 0; i < 4; i++) snprintf(card + i * 5, 6, "%04d ", (int)rng_int(r, 10000));
  wm_str *city = g->cities[rng_int(r, NCITIES)], *state = g->states[rng_int(r, NSTATES)];
  int64_t size = 8 + (int64_t)name->len + (int64_t)elen + 19 + (int64_t)city->len + (int64_t)state->len;
  int ok = 1, P = WM_NEXMARK_PERSON;
  wm_str *e = kept(g, P, 2, email, elen, &ok), *cc = kept(g, P, 3, card, 19, &ok), *extra = NULL;
  if (!OMIT(g, P, 7) && !(extra = next_extra(g, r, size, c->avg_person_size))) ok = 0;
  p->fields[0] = wm_int(last_person(c, g->total, id) + FIRST_PERSON_ID);
  if (!OMIT(g, P, 1)) p->fields[1] = shared(name);
  if (e) p->fields[2] = sv(e);
  if (cc) p->fields[3] = sv(cc);
  if (!OMIT(g, P, 4)) p->fields[4] = shared(city);
  if (!OMIT(g, P, 5)) p->fields[5] = shared(state);
  p->fields[6] = wm_int(ts);
  if (extra) p->fields[7] = sv(extra);
  for (int i = 0; i < 8; i++)
    if (OMIT(g, P, i)) p->fields[i] = wm_nil();
  return ok ? 0 : -1;
}

static int make_auction(wm_nexmark *g, int64_t count, int64_t id, rng *r, int64_t ts, wm_row *a) {
  const wm_nexmark_config *c = &g->c;
  int64_t seller = rng_int(r, c->hot_sellers_ratio) > 0
                       ? (last_person(c, g->total, id) / HOT_SELLER_RATIO) * HOT_SELLER_RATIO
                       : next_person(c, g->total, id, r);
  int64_t category = FIRST_CATEGORY_ID + rng_int(r, NUM_CATEGORIES);
  int64_t initial = next_price(r);
  /* the auction's length: about twice the time until in_flight_auctions more auctions */
  int64_t ahead = ((int64_t)c->in_flight_auctions * g->total) / c->auction_proportion;
  int64_t horizon = wm_nexmark_time(c, adjusted(c, 1 + count) + ahead) - ts;
  int64_t expires = ts + 1 + rng_int(r, horizon * 2 > 1 ? horizon * 2 : 1);
  char name[20], desc[100];
  size_t nn = next_string(r, 20, ' ', name), dn = next_string(r, 100, ' ', desc);
  int64_t reserve = initial + next_price(r);
  int64_t size = 8 + (int64_t)nn + (int64_t)dn + 40;
  int ok = 1, A = WM_NEXMARK_AUCTION;
  wm_str *ns = kept(g, A, 1, name, nn, &ok), *ds = kept(g, A, 2, desc, dn, &ok), *extra = NULL;
  if (!OMIT(g, A, 9) && !(extra = next_extra(g, r, size, c->avg_auction_size))) ok = 0;
  a->fields[0] = wm_int(last_auction(c, g->total, id) + FIRST_AUCTION_ID);
  if (ns) a->fields[1] = sv(ns);
  if (ds) a->fields[2] = sv(ds);
  a->fields[3] = wm_int(initial);
  a->fields[4] = wm_int(reserve);
  a->fields[5] = wm_int(ts);
  a->fields[6] = wm_int(expires);
  a->fields[7] = wm_int(seller + FIRST_PERSON_ID);
  a->fields[8] = wm_int(category);
  if (extra) a->fields[9] = sv(extra);
  for (int i = 0; i < 10; i++)
    if (OMIT(g, A, i)) a->fields[i] = wm_nil();
  return ok ? 0 : -1;
}

static int make_bid(wm_nexmark *g, int64_t id, rng *r, int64_t ts, wm_row *b) {
  const wm_nexmark_config *c = &g->c;
  int64_t auction = rng_int(r, c->hot_auction_ratio) > 0
                        ? (last_auction(c, g->total, id) / HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO
                        : next_auction(c, g->total, id, r);
  int64_t bidder = rng_int(r, c->hot_bidders_ratio) > 0
                       ? (last_person(c, g->total, id) / HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1
                       : next_person(c, g->total, id, r);
  int64_t price = next_price(r);
  wm_str *channel, *url;
  if (rng_int(r, HOT_CHANNELS_RATIO) > 0) {
    int64_t i = rng_int(r, NHOT);
    channel = g->hot_channels[i];
    url = g->hot_urls[i];
  } else {
    int64_t i = rng_int(r, CHANNELS_NUMBER);
    channel = g->channels[i];
    url = g->urls[i];
  }
  int B = WM_NEXMARK_BID;
  wm_str *extra = OMIT(g, B, 6) ? NULL : next_extra(g, r, 32, c->avg_bid_size);
  b->fields[0] = wm_int(auction + FIRST_AUCTION_ID);
  b->fields[1] = wm_int(bidder + 2 * FIRST_PERSON_ID); /* Flink adds it twice */
  b->fields[2] = wm_int(price);
  if (!OMIT(g, B, 3)) b->fields[3] = shared(channel);
  if (!OMIT(g, B, 4)) b->fields[4] = shared(url);
  b->fields[5] = wm_int(ts);
  if (extra) b->fields[6] = sv(extra);
  for (int i = 0; i < 7; i++)
    if (OMIT(g, B, i)) b->fields[i] = wm_nil();
  return extra || OMIT(g, B, 6) ? 0 : -1;
}

int wm_nexmark_event(wm_nexmark *g, int64_t count, wm_value *out, int64_t *ts_out, int64_t *wm_out) {
  const wm_nexmark_config *c = &g->c;
  int64_t number = 1 + count, adj = adjusted(c, number), id = 1 + adj;
  int64_t ts = wm_nexmark_time(c, adj);
  if (ts_out) *ts_out = ts;
  if (wm_out) *wm_out = wm_nexmark_time(c, (number / c->out_of_order_group) * c->out_of_order_group);
  *out = wm_nil();
  int kind = wm_nexmark_kind(c, id);
  rng r = {mix64(c->seed ^ mix64((uint64_t)id))};
  wm_row *top = wm_row_new(g->top);
  if (!top) return -1;
  top->fields[0] = wm_int(kind);
  top->fields[4] = wm_int(ts);
  *out = wm_row_value(top);
  /* a kind none of whose fields is used has no sub-row (its draws are its own) */
  if (c->omit[kind] == (UINT32_C(1) << wm_nexmark_nfields(kind)) - 1) return 0;
  wm_row *sub = wm_row_new(kind == WM_NEXMARK_PERSON    ? g->person
                           : kind == WM_NEXMARK_AUCTION ? g->auction
                                                        : g->bid);
  if (!sub) {
    wm_value_release(NULL, out);
    return -1;
  }
  top->fields[1 + kind] = wm_row_value(sub);
  int rc = kind == WM_NEXMARK_PERSON    ? make_person(g, id, &r, ts, sub)
           : kind == WM_NEXMARK_AUCTION ? make_auction(g, count, id, &r, ts, sub)
                                        : make_bid(g, id, &r, ts, sub);
  if (rc != 0) wm_value_release(NULL, out);
  return rc;
}

/* ---- the generator's shared strings ------------------------------------------------- */

/* Flink's getBaseUrl: https://www.nexmark.com/xxxxx/xxxxx/xxxxx/item.htm?query=1 */
static size_t base_url(rng *r, char *buf) {
  size_t n = (size_t)sprintf(buf, "https://www.nexmark.com/");
  for (int i = 0; i < 3; i++) {
    n += next_string(r, 5, '_', buf + n);
    buf[n++] = '/';
  }
  return n + (size_t)sprintf(buf + n, "item.htm?query=1");
}

/* Java's Math.abs(Integer.reverse(i)) (abs of the least int is itself). */
static int64_t java_abs_reverse(uint32_t i) {
  uint32_t v = 0;
  for (int b = 0; b < 32; b++) v |= ((i >> b) & 1u) << (31 - b);
  int64_t s = v >= 0x80000000u ? (int64_t)v - INT64_C(0x100000000) : (int64_t)v;
  return s == INT64_C(-2147483648) ? s : (s < 0 ? -s : s);
}

static int make_shared(wm_nexmark *g) {
  rng r = {mix64(g->c.seed ^ UINT64_C(0x6e65786d61726b))}; /* "nexmark" */
  char buf[160];
  int ok = 1;
  for (int i = 0; i < NSTATES; i++) ok &= (g->states[i] = str_of(US_STATES[i], strlen(US_STATES[i]))) != NULL;
  for (int i = 0; i < NCITIES; i++) ok &= (g->cities[i] = str_of(US_CITIES[i], strlen(US_CITIES[i]))) != NULL;
  for (int i = 0; i < NFIRST * NLAST; i++) {
    int n = snprintf(buf, sizeof buf, "%s %s", FIRST_NAMES[i / NLAST], LAST_NAMES[i % NLAST]);
    ok &= (g->names[i] = str_of(buf, (size_t)n)) != NULL;
  }
  for (int i = 0; i < NHOT; i++) {
    ok &= (g->hot_channels[i] = str_of(HOT_CHANNELS[i], strlen(HOT_CHANNELS[i]))) != NULL;
    ok &= (g->hot_urls[i] = str_of(buf, base_url(&r, buf))) != NULL;
  }
  for (uint32_t i = 0; i < CHANNELS_NUMBER; i++) {
    size_t n = base_url(&r, buf);
    if (rng_int(&r, 10) > 0) n += (size_t)sprintf(buf + n, "&channel_id=%lld", (long long)java_abs_reverse(i));
    ok &= (g->urls[i] = str_of(buf, n)) != NULL;
    int m = snprintf(buf, sizeof buf, "channel-%u", i);
    ok &= (g->channels[i] = str_of(buf, (size_t)m)) != NULL;
  }
  ok &= (g->empty = str_of("", 0)) != NULL;
  /* Flink's nextExactString: letters from ints taken six base-26 digits at a time */
  if (ok && (g->pool = malloc(EXTRA_POOL))) {
    for (size_t i = 0; i < EXTRA_POOL; i += 6) {
      uint32_t x = (uint32_t)(rng_next(&r) >> 33);
      for (size_t k = 0; k < 6 && i + k < EXTRA_POOL; k++, x /= 26) g->pool[i + k] = (char)('a' + x % 26);
    }
  }
  return ok && g->pool ? 0 : -1;
}

static void drop(wm_str **s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    wm_value v = s[i] ? sv(s[i]) : wm_nil();
    wm_value_release(NULL, &v);
  }
}

void wm_nexmark_free(wm_nexmark *g) {
  if (!g) return;
  drop(g->states, NSTATES);
  drop(g->cities, NCITIES);
  drop(g->names, NFIRST * NLAST);
  drop(g->hot_channels, NHOT);
  drop(g->hot_urls, NHOT);
  drop(g->channels, CHANNELS_NUMBER);
  drop(g->urls, CHANNELS_NUMBER);
  drop(&g->empty, 1);
  wm_schema_release(g->top);
  wm_schema_release(g->person);
  wm_schema_release(g->auction);
  wm_schema_release(g->bid);
  free(g->pool);
  free(g);
}

wm_nexmark *wm_nexmark_new(const wm_nexmark_config *c) {
  wm_nexmark *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->c = *c;
  g->total = total_of(c);
  g->top = wm_schema_new(5, TOP_NAMES, TOP_TYPES);
  g->person = wm_schema_new(8, PERSON_NAMES, PERSON_TYPES);
  g->auction = wm_schema_new(10, AUCTION_NAMES, AUCTION_TYPES);
  g->bid = wm_schema_new(7, BID_NAMES, BID_TYPES);
  if (!g->top || !g->person || !g->auction || !g->bid || make_shared(g) != 0) {
    wm_nexmark_free(g);
    return NULL;
  }
  return g;
}

const wm_nexmark_config *wm_nexmark_cfg(const wm_nexmark *g) { return &g->c; }

/* (omit is not in it: it changes no event, only which fields a row carries) */
uint64_t wm_nexmark_config_hash(const wm_nexmark_config *c) {
  int64_t f[] = {c->events, c->event_rate, c->person_proportion, c->auction_proportion, c->bid_proportion,
                 c->hot_auction_ratio, c->hot_bidders_ratio, c->hot_sellers_ratio, c->avg_person_size,
                 c->avg_auction_size, c->avg_bid_size, c->in_flight_auctions, c->active_people,
                 c->out_of_order_group, c->base_time, (int64_t)c->seed};
  return wm_hash_bytes(f, sizeof f, 0x6e6d);
}
