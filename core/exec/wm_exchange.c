#include "exec/wm_exchange.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/wm_keygroup.h"
#include "graph/wm_statefmt.h"

typedef struct exchange {
  int mode, n, next;
  uint32_t groups; /* key groups (the job's maximum parallelism) */
  int *ports;
  wm_keysel keysel;
} exchange;

int wm_exchange_route(const wm_value *key, int n, uint32_t groups) {
  if (groups < (uint32_t)n) groups = (uint32_t)n; /* refused at build (lwm_graph.c) */
  return wm_keygroup_instance(wm_keygroup_of(key, groups), n, groups);
}

static int xch_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  exchange *x = op->impl;
  int target;
  if (x->mode == WM_XCH_BROADCAST) {
    for (int i = 0; i < x->n; i++) {
      int rc = wm_op_emit(op, x->ports[i], rec, ts);
      if (rc != WM_OK) return rc;
    }
    return WM_OK;
  }
  if (x->mode == WM_XCH_HASH) {
    wm_value key;
    if (x->keysel.fn(x->keysel.ud, op, rec, &key) != WM_OK) return WM_ERR;
    if (!wm_key_valid(&key))
      return wm_ctx_error(op->ctx, "key_by: the key is not a string, number or boolean");
    target = wm_exchange_route(&key, x->n, x->groups);
  } else {
    target = x->next;
    x->next = (x->next + 1) % x->n;
  }
  return wm_op_emit(op, x->ports[target], rec, ts);
}

static void xch_free(wm_op *op) {
  exchange *x = op->impl;
  if (!x) return;
  if (x->keysel.free) x->keysel.free(x->keysel.ud);
  free(x->ports);
  free(x);
}

/* Checkpoints: version, 'X', the instance the next record goes to (round robin; 0 for a
 * key_by). Without it a resumed rebalance would start again at instance 1, and the records
 * after the checkpoint would reach other instances than in the run that was interrupted
 * (which an exactly-once key_by through, deduplicating per writer instance, cannot take).
 * An empty state (a checkpoint from before) restores 0. */
static int xch_snapshot(wm_op *op, wm_state_io *io) {
  const exchange *x = op->impl;
  wm_state_put_header(io, 'X');
  wm_state_put_u(io, (uint64_t)x->next);
  return wm_state_put_done(op, io);
}

static int xch_restore(wm_op *op, wm_state_io *io) {
  exchange *x = op->impl;
  if (io->len == 0) {
    x->next = 0;
    return WM_OK;
  }
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  uint64_t next;
  if (wm_state_get_header(&r, 'X', "an exchange") != WM_OK ||
      wm_state_get_u(&r, &next, "the next instance") != WM_OK)
    return WM_ERR;
  if (next >= (uint64_t)x->n)
    return wm_state_bad(&r, "the next instance is %llu of %d", (unsigned long long)next, x->n);
  if (wm_state_get_end(&r) != WM_OK) return WM_ERR;
  x->next = (int)next;
  return WM_OK;
}

static const wm_op_vt xch_vt = {.kind = "exchange", .record = xch_record, .free = xch_free,
                                .snapshot = xch_snapshot, .restore = xch_restore};

int wm_exchange_port(const wm_op *op, int i) { return ((const exchange *)op->impl)->ports[i]; }
int wm_exchange_mode(const wm_op *op) { return ((const exchange *)op->impl)->mode; }

wm_op *wm_exchange_new(wm_ctx *ctx, const char *name, int mode, int n, wm_keysel *keysel) {
  exchange *x = calloc(1, sizeof *x);
  if (x) x->ports = calloc((size_t)n, sizeof *x->ports);
  wm_op *op = x && x->ports ? wm_op_new(ctx, &xch_vt, x, name) : NULL;
  if (!op) {
    if (x) free(x->ports);
    free(x);
    if (keysel && keysel->free) keysel->free(keysel->ud);
    wm_ctx_error(ctx, "out of memory creating an exchange");
    return NULL;
  }
  x->mode = mode;
  x->n = n;
  x->groups = ctx->key_groups ? ctx->key_groups : WM_KEYGROUPS_DEFAULT;
  if (keysel) x->keysel = *keysel;
  for (int i = 0; i < n; i++) {
    char tag[16];
    snprintf(tag, sizeof tag, "\1#%d", i + 1); /* '\1': wmrun's own port, not a side output */
    if ((x->ports[i] = wm_op_port(op, tag)) < 0) {
      wm_ctx_error(ctx, "out of memory creating an exchange");
      return NULL;
    }
  }
  return op;
}
