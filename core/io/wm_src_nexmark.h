/* The Nexmark source: the events of a Nexmark generator (io/wm_nexmark.h) as a source on
 * libuv, as fast as the pipeline takes them or at a steady rate (events per second of the
 * wall clock, paced by a timer as env:generate is), in batches of up to 4096 events between
 * which the loop runs (timers, signals, backpressure).
 *
 * Its checkpoint is its position, the number of events emitted, with a hash of the
 * configuration: a restored source resumes the same sequence at the next event, and a
 * checkpoint of a differently configured source is refused. One instance: parallel
 * instances would each emit the whole sequence. */
#ifndef WM_SRC_NEXMARK_H
#define WM_SRC_NEXMARK_H

#include "io/wm_nexmark.h"
#include "io/wm_source.h"

/* A source of the events of cfg (checked: an invalid one is an error naming the problem),
 * at `rate` events per second of the wall clock (0 = as fast as possible). NULL on
 * failure, with the message in host->ctx. */
wm_op *wm_src_nexmark_new(wm_io_host *host, const char *name, const wm_nexmark_config *cfg, double rate);

/* The number of events emitted so far (a test's view of the position). */
int64_t wm_src_nexmark_count(const wm_op *op);

#endif
