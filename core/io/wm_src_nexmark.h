/* The Nexmark source: the events of a Nexmark generator (io/wm_nexmark.h) as a source on
 * libuv, as fast as the pipeline takes them or at a steady rate (events per second of the
 * wall clock, paced by a timer as env:generate is), in batches of up to 4096 events between
 * which the loop runs (timers, signals, backpressure).
 *
 * Parallel instances split the sequence: instance `part` of `parts` emits the events made
 * after part, part + parts, part + 2 parts, ... events (each at rate / parts), so that all of
 * them together emit exactly the events of one instance, each instance in event order.
 * (Flink's nexmark splits the event ids into ranges with a timeline each instead, which
 * changes the events with the parallelism.)
 *
 * Its checkpoint is its position, the next event it makes, with a hash of the configuration
 * and its part: a restored source resumes the same sequence at the next event, and a
 * checkpoint of a differently configured source, or of another parallelism, is refused. */
#ifndef WM_SRC_NEXMARK_H
#define WM_SRC_NEXMARK_H

#include "io/wm_nexmark.h"
#include "io/wm_source.h"

/* A source of the events of cfg (checked: an invalid one is an error naming the problem),
 * at `rate` events per second of the wall clock for all parts together (0 = as fast as
 * possible); part 0 of 1 is the whole sequence. NULL on failure, with the message in
 * host->ctx. */
wm_op *wm_src_nexmark_new(wm_io_host *host, const char *name, const wm_nexmark_config *cfg, double rate,
                          int part, int parts);

/* The count of the next event this source makes (a test's view of the position). */
int64_t wm_src_nexmark_count(const wm_op *op);

#endif
