/* The part of a partitioned source that every connector shares (wm_conn.h): its
 * partitions, their output ports, the choice of the partition to read next (the lowest
 * downstream watermark), watermark alignment, backpressure and the libuv timer that
 * drives reading. A connector embeds wm_partsrc first in its state and fills the hooks. */
#ifndef WM_PARTSRC_H
#define WM_PARTSRC_H

#include <uv.h>

#include "io/wm_conn.h"

typedef struct wm_part {
  char *name;        /* owned */
  int port;
  int done;          /* bounded: read to its end */
  int released;      /* done, and the end sent down its own port */
  int restored;      /* pos comes from a checkpoint */
  int align_paused;  /* paused by alignment */
  uint64_t pauses;   /* times paused by alignment */
  int64_t pos;       /* position of the next record (-1: not known yet) */
  int64_t snap;      /* pos + 1 in the last snapshot (0: none): what commit commits */
  int64_t end;       /* bounded: the position it ends at (exclusive); connector's use */
  wm_op *assigner;   /* the timestamps/watermarks operator reading its port, or NULL */
} wm_part;

typedef struct wm_partsrc wm_partsrc;

typedef struct wm_partsrc_hooks {
  /* Makes partition i's next record ready: 1 ready, 0 none yet (sets parts[i].done when
   * the partition has ended), WM_ERR on failure (message in ctx->error). */
  int (*peek)(wm_partsrc *s, int i);
  /* Emits the ready record of partition i (wm_op_emit on parts[i].port) and moves on.
   * WM_OK, WM_ERR or WM_STOP. */
  int (*emit)(wm_partsrc *s, int i);
  /* Once per round of reading: serve the client's events. WM_OK or WM_ERR. NULL: none. */
  int (*serve)(wm_partsrc *s);
  /* After a restore (before start): read on from parts[i].pos where parts[i].restored is
   * set. WM_OK or WM_ERR. */
  int (*seek)(wm_partsrc *s);
  /* Commits the positions of the last snapshot (parts[i].snap - 1) to the server for
   * monitoring (Kafka: the group's offsets). NULL: nothing to commit. WM_OK, or WM_ERR
   * with the failure in *err (never the source's context's: the checkpoint coordinator
   * calls it from whichever thread completed the checkpoint, while the source's own thread
   * runs on). It must not wait for the server (Kafka: asynchronous). */
  int (*commit)(wm_partsrc *s, wm_error *err);
  /* As commit, but through a client of its own, waiting for the answer (for at most the
   * source's timeout): a start that finds the final checkpoint commits its positions once
   * more, since the run that wrote it may have been killed before the server had them.
   * NULL: nothing to commit. */
  int (*commit_detached)(wm_partsrc *s, wm_error *err);
  /* Partition i's lag (wm_partsrc_lag): 1 with *records set, 0 when not known. Must not
   * wait for the server. NULL: never known. */
  int (*lag)(const wm_partsrc *s, int i, int64_t *records);
  /* Releases the client (stop or the end). May be called more than once. */
  void (*close)(wm_partsrc *s);
  /* Frees the connector's own state (not the wm_partsrc). */
  void (*free)(wm_partsrc *s);
} wm_partsrc_hooks;

struct wm_partsrc {
  wm_op *op;
  wm_io_host *host;
  const char *unit;      /* what a position counts: "offset" (Kafka), "sequence" (NATS) */
  const wm_partsrc_hooks *hooks;
  wm_partsrc_config cfg; /* names/ports not kept: see parts */
  char *group;           /* alignment group (owned) or NULL */
  wm_partsrc **peers;    /* the aligned sources of the group on this context (owned array) */
  int ngroup;
  wm_part *parts;        /* owned */
  int n;
  int started, stopped, finished, paused, timer_open, timer_on, idle_open;
  int seek_pending; /* restored: hooks->seek is called as it starts (once, however many
                     * parts a restore at another parallelism gave it) */
  int64_t poll_ms;       /* wait when nothing is ready (default 5) */
  uv_timer_t timer;      /* the next round after a wait */
  uv_idle_t idle;        /* the next round at once (records ready): once per turn of the loop */
};

/* Creates the operator of a partitioned source: impl (size bytes, zeroed, beginning with
 * a wm_partsrc) is allocated here and owned by the operator. kind: "read_kafka" or
 * "read_nats". NULL on failure (message in ctx->error). */
wm_partsrc *wm_partsrc_new(wm_io_host *host, const char *name, const char *kind,
                           const wm_partsrc_config *cfg, const wm_partsrc_hooks *hooks,
                           size_t size);
/* Emits rec (borrowed) from partition i on its port, with the record's position `at` (its
 * offset or sequence) published in ctx->pos for errors. */
int wm_partsrc_emit(wm_partsrc *s, int i, const wm_value *rec, int64_t ts, int64_t at);
/* Emits rec on partition i's port as wm_partsrc_emit does without a tap: what a tap
 * (wm_conn.h) emits for a message. */
int wm_partsrc_emit_record(wm_partsrc *s, int i, const wm_value *rec, int64_t ts, int64_t at);
/* Emits a row of `schema` (metadata = true) on partition i's port; fields are borrowed
 * (copied into the row). */
int wm_partsrc_emit_row(wm_partsrc *s, int i, wm_schema *schema, const wm_value *fields,
                        int64_t ts, int64_t at);
/* Fails the job with the message in ctx->error (closes the client). */
void wm_partsrc_fail(wm_partsrc *s);

#endif
