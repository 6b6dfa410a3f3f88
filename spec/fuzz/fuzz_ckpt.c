/* libFuzzer target: the checkpoint reader (core/state/wm_ckpt.c) on untrusted objects, through
 * the store interface (wm_ckpt_store.h) with an in-memory store written here. Input: two bytes
 * k (little-endian), then the MANIFEST of checkpoint 1 (the next k bytes, or all that is left)
 * and the bytes every part the MANIFEST names reads back (the rest).
 * Invariants: opening the newest complete checkpoint gives 1 (a reader), 0 (none, with a
 * warning naming checkpoint 1 and why) and never -1; a reader's every part reads back (it was
 * checked at open) with the length its get says; a part it does not name is 0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "state/wm_ckpt.h"
#include "state/wm_ckpt_store.h"

typedef struct fz_store {
  wm_ckpt_backend base;
  const uint8_t *man, *part;
  size_t manlen, partlen;
} fz_store;

static int fz_begin(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  (void)b, (void)id, (void)err;
  return -1; /* read only */
}
static int fz_put(wm_ckpt_backend *b, uint64_t id, const char *name, const void *h, size_t hl,
                  const void *d, size_t dl, wm_error *err) {
  (void)b, (void)id, (void)name, (void)h, (void)hl, (void)d, (void)dl, (void)err;
  return -1;
}
static int fz_complete(wm_ckpt_backend *b, uint64_t id, const void *m, size_t len, int crash,
                       wm_error *err) {
  (void)b, (void)id, (void)m, (void)len, (void)crash, (void)err;
  return -1;
}
static int fz_get(wm_ckpt_backend *b, uint64_t id, const char *name, size_t max, uint8_t **data,
                  size_t *len, wm_error *err) {
  (void)err;
  fz_store *s = (fz_store *)b;
  ASSERT(id == 1);
  int man = !strcmp(name, "MANIFEST");
  const uint8_t *src = man ? s->man : s->part;
  size_t n = man ? s->manlen : s->partlen;
  if (n > max) return -1;
  *data = malloc(n ? n : 1);
  ASSERT(*data != NULL);
  if (n) memcpy(*data, src, n);
  *len = n;
  return 1;
}
static int fz_list(wm_ckpt_backend *b, uint64_t **ids, size_t *n, wm_error *err) {
  (void)b, (void)err;
  *ids = malloc(sizeof **ids);
  ASSERT(*ids != NULL);
  (*ids)[0] = 1;
  *n = 1;
  return 0;
}
static int fz_remove(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  (void)b, (void)id, (void)err;
  return 0;
}
static void fz_free(wm_ckpt_backend *b) { free(b); }

static const wm_ckpt_backend_vt fz_vt = {fz_begin, fz_put,    fz_complete, fz_get,
                                         fz_list,  fz_remove, fz_free};

static int warned;
static void on_warn(void *ud, const char *msg) {
  (void)ud;
  ASSERT(strstr(msg, "checkpoint 1 in fuzz is skipped: ") != NULL);
  warned++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t k = (size_t)data[0] | (size_t)data[1] << 8;
  data += 2, size -= 2;
  if (k > size) k = size;
  fz_store *s = calloc(1, sizeof *s);
  ASSERT(s != NULL);
  s->base.vt = &fz_vt;
  s->base.name = "fuzz";
  s->man = data, s->manlen = k, s->part = data + k, s->partlen = size - k;
  wm_error err;
  wm_ckpt_store *st = wm_ckpt_store_new(&s->base, 3, &err);
  ASSERT(st != NULL);
  wm_ckpt_reader *r = NULL;
  warned = 0;
  int rc = wm_ckpt_open_latest(st, on_warn, NULL, &r, &err);
  ASSERT(rc == 0 || rc == 1);
  ASSERT(rc == 1 ? r != NULL && warned == 0 : r == NULL && warned == 1);
  if (r) {
    ASSERT(wm_ckpt_reader_id(r) == 1);
    size_t ml;
    (void)wm_ckpt_reader_meta(r, &ml);
    for (size_t i = 0; i < wm_ckpt_reader_nparts(r); i++) {
      uint8_t *d = NULL;
      size_t n = 0;
      ASSERT(wm_ckpt_get(r, wm_ckpt_reader_part_name(r, i), &d, &n, &err) == 1);
      ASSERT(n + 20 == s->partlen); /* the part's header, then its payload */
      free(d);
    }
    const char *other = "no-such-part";
    int named = 0;
    for (size_t i = 0; i < wm_ckpt_reader_nparts(r); i++)
      named |= !strcmp(wm_ckpt_reader_part_name(r, i), other);
    uint8_t *d = NULL;
    size_t n;
    ASSERT(wm_ckpt_get(r, other, &d, &n, &err) == (named ? 1 : 0));
    free(d);
    wm_ckpt_reader_free(r);
  }
  wm_ckpt_store_free(st);
  return 0;
}
