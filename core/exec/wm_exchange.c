#include "exec/wm_exchange.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct exchange {
  int mode, n, next;
  int *ports;
  wm_keysel keysel;
} exchange;

int wm_exchange_route(const wm_value *key, int n) {
  return (int)(wm_key_hash(key) % (uint64_t)n);
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
    target = wm_exchange_route(&key, x->n);
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

static const wm_op_vt xch_vt = {.kind = "exchange", .record = xch_record, .free = xch_free};

int wm_exchange_port(const wm_op *op, int i) { return ((const exchange *)op->impl)->ports[i]; }

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
  if (keysel) x->keysel = *keysel;
  for (int i = 0; i < n; i++) {
    char tag[16];
    snprintf(tag, sizeof tag, "#%d", i + 1);
    if ((x->ports[i] = wm_op_port(op, tag)) < 0) {
      wm_ctx_error(ctx, "out of memory creating an exchange");
      return NULL;
    }
  }
  return op;
}
