/* Writing and reading the bytes of the operators' checkpoint hooks (graph/wm_state.h). */
#ifndef WM_STATEFMT_H
#define WM_STATEFMT_H

#include <stddef.h>
#include <stdint.h>

#include "graph/wm_graph.h"
#include "graph/wm_state.h"

/* ---- helpers for the operators' formats (graph/wm_statefmt.c) ---------------------------
 *
 * Every operator's bytes start with WM_STATE_VERSION and a tag byte naming the operator
 * kind ('T' timestamps/watermarks, 'W' window, 'K' keyed process, 'G' the graph's own
 * per-operator part), so that the bytes of another kind or another version are refused by
 * name. Counts are checked against the bytes left before anything is allocated. */
#define WM_STATE_VERSION 1

static inline void wm_state_put_u(wm_state_io *io, uint64_t v) { wm_codec_put_uvar(io->out, v); }
static inline void wm_state_put_i(wm_state_io *io, int64_t v) { wm_codec_put_ivar(io->out, v); }
/* The version and tag. */
void wm_state_put_header(wm_state_io *io, char tag);
/* A user value (record, key, accumulator) through the codec; WM_ERR naming `what` (e.g. a
 * Lua function inside an accumulator, a host value without a codec host). */
int wm_state_put_value(wm_op *op, wm_state_io *io, const wm_value *v, const char *what);
/* WM_ERR when the output buffer could not grow. */
int wm_state_put_done(wm_op *op, wm_state_io *io);

/* A timer queue (time/wm_timer.h): every group's time and entries in push order. */
struct wm_timers;
void wm_state_put_timers(wm_state_io *io, const struct wm_timers *q);

/* Asks the context's processing-time timer service (wm_ctx_register_processing_timer) for
 * every time pending in q again: what a restored operator's queue expects. */
int wm_state_rearm(wm_op *op, const struct wm_timers *q);

/* A cursor over a restore's bytes. */
typedef struct wm_state_rd {
  const uint8_t *p, *begin, *end;
  wm_op *op;
  wm_state_io *io;
} wm_state_rd;

void wm_state_rd_init(wm_state_rd *r, wm_op *op, wm_state_io *io);
/* Checks the version and the tag (kind: the operator kind's name for the message). */
int wm_state_get_header(wm_state_rd *r, char tag, const char *kind);
int wm_state_get_u(wm_state_rd *r, uint64_t *v, const char *what);
int wm_state_get_i(wm_state_rd *r, int64_t *v, const char *what);
/* A count of things that take at least `unit` bytes each: refused when more than the
 * bytes left could hold. */
int wm_state_get_count(wm_state_rd *r, uint64_t *n, size_t unit, const char *what);
/* A user value, owned by the caller (release it). */
int wm_state_get_value(wm_state_rd *r, wm_value *out, const char *what);
/* Pushes the queue written by wm_state_put_timers into q (empty); valid(ud, t, payload)
 * refuses an entry the owner cannot take (WM_ERR, message set). */
int wm_state_get_timers(wm_state_rd *r, struct wm_timers *q,
                        int (*valid)(void *ud, wm_state_rd *r, int64_t t, uint64_t payload),
                        void *ud);
/* As wm_state_get_timers, with each entry's payload given to map(ud, r, t, &payload),
 * which may change it: 0 push it, 1 leave the entry out (its key is not this instance's),
 * WM_ERR refuse (message set). */
int wm_state_get_timers_map(wm_state_rd *r, struct wm_timers *q,
                            int (*map)(void *ud, wm_state_rd *r, int64_t t, uint64_t *payload),
                            void *ud);
/* Whether key belongs to the key groups a restore keeps (wm_state_io.groups): 1 keep. */
int wm_state_key_kept(const wm_state_io *io, const wm_value *key);
/* Every byte was read. */
int wm_state_get_end(wm_state_rd *r);
/* "damaged checkpoint state: <message> (at byte N of M)"; WM_ERR. */
int wm_state_bad(wm_state_rd *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
