/* Exchanges between parallel instances: key_by (hash partitioning) and rebalance
 * (round robin), and broadcast (every record to every instance). An exchange has one output port per downstream instance; records go to
 * one port, watermarks and status to every port (semantics.md §9). */
#ifndef WM_EXCHANGE_H
#define WM_EXCHANGE_H

#include "graph/wm_graph.h"
#include "ops/wm_keys.h"

/* WM_XCH_BROADCAST: every record to every instance, in order (a broadcast stream) */
typedef enum { WM_XCH_HASH = 1, WM_XCH_ROUND_ROBIN, WM_XCH_BROADCAST } wm_xch_mode;

/* An exchange to n downstream instances. With WM_XCH_HASH, keysel (owned from now on)
 * picks the instance that owns the key's key group (wm_exchange_route, with the context's
 * key_groups). Ports 1..n (tags "\1#1".."\1#n") lead to the
 * instances; port 0 is unused. NULL on failure (message in ctx->error). */
wm_op *wm_exchange_new(wm_ctx *ctx, const char *name, int mode, int n, wm_keysel *keysel);
/* The port that leads to instance i (0-based). */
int wm_exchange_port(const wm_op *op, int i);
/* Its mode (WM_XCH_*). */
int wm_exchange_mode(const wm_op *op);
/* The instance (0-based) a key goes to among n, with `groups` key groups (the maximum
 * parallelism, >= n): the owner of its key group (base/wm_keygroup.h), stable across runs
 * and machines, and the instance that holds the key group's state after a restore at n. */
int wm_exchange_route(const wm_value *key, int n, uint32_t groups);

#endif
