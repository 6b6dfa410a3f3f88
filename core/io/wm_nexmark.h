/* The Nexmark event generator: Person, Auction and Bid events with the model of Flink's
 * nexmark generator (github.com/nexmark/nexmark, nexmark-flink: NexmarkConfiguration,
 * GeneratorConfig, NexmarkGenerator, Person/Auction/BidGenerator), written in C.
 *
 * An event is a pure function of the configuration (seed included) and its event number:
 * the random draws of event n come from a generator seeded with (seed, event id), so the
 * same options give the same sequence, a source resumes it from a count alone (its
 * checkpoint) and any event can be made on its own (tests). Flink's generator draws from one
 * unseeded random stream instead, so its values are not reproducible; the ids, proportions,
 * hot ratios, timestamps and out-of-order groups follow its model exactly:
 *
 *   - event number n = 1 + count (Flink's table source starts at firstEventNumber = 1, and its
 *     event ids at firstEventId = 1): with out-of-order groups of g events the number used is
 *     adjusted(n) = (n / g) * g + (n * 953) % g (a permutation within each group, 953 being
 *     prime), the event id is 1 + adjusted(n);
 *   - the kind of event id e: e % (person + auction + bid proportions) below `person` is a
 *     Person, below `person + auction` an Auction, else a Bid (1:3:46: exactly 1 person, 3
 *     auctions and 46 bids in every 50 consecutive events when g = 1);
 *   - the event time of number m: base_time + (long)(m * 1e6 / event_rate) / 1000 ms; an
 *     event's time is that of its adjusted number; the watermark after it (the least time of
 *     this and every later event) is the time of (n / g) * g;
 *   - ids: persons from 1000, auctions from 1000, categories 10..14; a Person has the id of the
 *     last person so far, an Auction the id of the last auction so far; an auction's seller is
 *     a hot seller (the first of the last 100 persons) unless 1 in hot_sellers_ratio, else a
 *     random active person; a bid's auction is hot (the first of the last 100 auctions)
 *     unless 1 in hot_auction_ratio, its bidder hot (the second of the last 100 persons)
 *     unless 1 in hot_bidders_ratio. As in Flink's BidGenerator, a bidder id has the first
 *     person id (1000) added twice.
 *
 * Events are rows (base/wm_value.h): {event_type, person, auction, bid, dateTime}, the one
 * of person/auction/bid that the event is a row of its fields (Flink's nexmark DDL), the others
 * nil; dateTime (ms) is the event's time. Strings that repeat (cities, names, channels, URLs)
 * are made once per generator and shared by reference: a generator and its rows belong to one
 * thread (rows crossing threads are encoded, base/wm_codec.h). */
#ifndef WM_NEXMARK_H
#define WM_NEXMARK_H

#include <stdint.h>

#include "base/wm_value.h"

typedef struct wm_nexmark_config {
  int64_t events;            /* events.num: how many; 0 = unbounded */
  int64_t event_rate;        /* first-event.rate: events per second of event time (10000) */
  int person_proportion;     /* 1 */
  int auction_proportion;    /* 3 */
  int bid_proportion;        /* 46 */
  int hot_auction_ratio;     /* bid.hot-ratio.auctions: 2 */
  int hot_bidders_ratio;     /* bid.hot-ratio.bidders: 4 */
  int hot_sellers_ratio;     /* auction.hot-ratio.sellers: 4 */
  int avg_person_size;       /* person.avg-size, bytes: 200 */
  int avg_auction_size;      /* 500 */
  int avg_bid_size;          /* 100 */
  int in_flight_auctions;    /* numInFlightAuctions: 100 */
  int active_people;         /* numActivePeople: 1000 */
  int64_t out_of_order_group;/* outOfOrderGroupSize: 1 = in order */
  int64_t base_time;         /* ms of event number 0 (1436918400000, 2015-07-15 00:00 UTC,
                                Beam's nexmark base time; Flink's uses the wall clock) */
  uint64_t seed;             /* 0 */
  /* Fields a reader never uses (projection pushdown, docs/io.md "Nexmark"): bit i of omit[k]
   * leaves field i of a row of kind k (WM_NEXMARK_*, fields in the order of Flink's DDL) out
   * of the row (nil), and a kind whose every field is omitted has no sub-row at all. The
   * other fields, and every other event, are what they are without it (each event draws
   * from its own generator: an omitted string is drawn and not copied, or not drawn when
   * nothing after it in its event is). 0: every field (the default). */
  uint32_t omit[3];
} wm_nexmark_config;

/* The number of fields of a row of kind k (8, 10, 7), and field i's name (Flink's DDL). */
int wm_nexmark_nfields(int kind);
const char *wm_nexmark_field(int kind, int i);

enum { WM_NEXMARK_PERSON = 0, WM_NEXMARK_AUCTION = 1, WM_NEXMARK_BID = 2 };

/* Flink's defaults. */
void wm_nexmark_config_default(wm_nexmark_config *c);
/* NULL when the configuration is valid, else a message naming the field (static text). */
const char *wm_nexmark_config_check(const wm_nexmark_config *c);

typedef struct wm_nexmark wm_nexmark;

/* A generator; NULL on allocation failure (the configuration must have passed the check).
 * Caller frees with wm_nexmark_free. */
wm_nexmark *wm_nexmark_new(const wm_nexmark_config *c);
void wm_nexmark_free(wm_nexmark *g);
const wm_nexmark_config *wm_nexmark_cfg(const wm_nexmark *g);

/* The event made after `count` events (count from 0): an owned row in *out (caller
 * releases), its event time in *ts and the watermark after it in *wm (either may be NULL).
 * 0, or -1 on allocation failure. The kind is the row's field 0 (event_type). */
int wm_nexmark_event(wm_nexmark *g, int64_t count, wm_value *out, int64_t *ts, int64_t *wm);

/* The model's numbers, exposed for tests: the event id of the event made after `count`
 * events, its kind (WM_NEXMARK_*), and the event time of an event number. */
int64_t wm_nexmark_event_id(const wm_nexmark_config *c, int64_t count);
int wm_nexmark_kind(const wm_nexmark_config *c, int64_t event_id);
int64_t wm_nexmark_time(const wm_nexmark_config *c, int64_t number);

/* A hash of every field of the configuration (a checkpoint refuses another configuration). */
uint64_t wm_nexmark_config_hash(const wm_nexmark_config *c);

#endif
