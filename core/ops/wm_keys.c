/* Key selectors computed in C: key_by("field") and key_by{"f1", "f2"} (composite keys). */
#include "ops/wm_keys.h"

#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"

typedef struct fieldkeys {
  size_t n;
  wm_field *f;
  char **names;
  wm_value *parts;
  wm_value composite; /* owned; the last composite key */
  wm_host host;
  char *null_key; /* with wm_keysel_null_as: what a missing (nil) field stands for */
  size_t null_len;
  int nulls; /* wm_keysel_fields_nulls: a NULL part is a key part of its own */
  int change; /* wm_keysel_change: the fields are read from the record's field r */
  wm_field rf;
} fieldkeys;

static void fieldkeys_free(void *ud) {
  fieldkeys *k = ud;
  for (size_t i = 0; i < k->n; i++) free(k->names[i]);
  free(k->names);
  free(k->f);
  free(k->parts);
  free(k->null_key);
  wm_value_release(NULL, &k->composite); /* a WM_STR: needs no host */
  free(k);
}

static int fieldkeys_fn(void *ud, wm_op *op, const wm_value *rec, wm_value *key) {
  fieldkeys *k = ud;
  wm_ctx *ctx = op->ctx;
  const wm_value *from = rec;
  wm_value row;
  if (k->change) { /* a change {k, r}: its row's fields (borrowed while rec is alive) */
    if (wm_field_get(&ctx->host, &k->rf, rec, &row, &ctx->error) != 0) {
      wm_buf b;
      wm_buf_init(&b);
      wm_op_format_record(op, rec, &b);
      wm_ctx_error_append(ctx, " (key_by on the row r of change %s)", b.data ? b.data : "");
      wm_buf_free(&b);
      return WM_ERR;
    }
    if (row.type != WM_ROW && row.type != WM_SLOT) {
      wm_buf b;
      wm_buf_init(&b);
      wm_op_format_record(op, rec, &b);
      wm_ctx_error(ctx, "key_by of changes: record %s is not a change {k = kind, r = row}", b.data ? b.data : "");
      wm_buf_free(&b);
      return WM_ERR;
    }
    from = &row;
  }
  for (size_t i = 0; i < k->n; i++) {
    if (wm_field_get(&ctx->host, &k->f[i], from, &k->parts[i], &ctx->error) != 0) {
      wm_buf b;
      wm_buf_init(&b);
      wm_op_format_record(op, rec, &b);
      wm_ctx_error_append(ctx, " (key_by on record %s)", b.data ? b.data : "");
      wm_buf_free(&b);
      return WM_ERR;
    }
    if (k->parts[i].type == WM_NIL && k->null_key) k->parts[i] = wm_cstr(k->null_key, k->null_len);
    if (!wm_key_valid(&k->parts[i]) && !(k->nulls && k->parts[i].type == WM_NIL)) {
      wm_buf b;
      wm_buf_init(&b);
      wm_op_format_record(op, rec, &b);
      wm_ctx_error(ctx, "key field '%s' is %s in record %s", k->names[i],
                   k->parts[i].type == WM_NIL ? "missing" : "not a string, number or boolean",
                   b.data ? b.data : "");
      wm_buf_free(&b);
      return WM_ERR;
    }
  }
  if (k->n == 1 && k->parts[0].type != WM_NIL) {
    *key = k->parts[0];
    return WM_OK;
  }
  /* the composite key is borrowed by the caller until the next call: the window state
   * copies it (a new reference), so it is freed here only when no one else holds it */
  if (k->composite.type == WM_STR) wm_value_release(&ctx->host, &k->composite);
  if (wm_key_compose(k->parts, k->n, &k->composite) != 0)
    return wm_ctx_error(ctx, "out of memory composing a key");
  *key = k->composite;
  return WM_OK;
}

const wm_field *wm_keysel_field1(const wm_keysel *ks) {
  if (ks->fn != fieldkeys_fn) return NULL;
  const fieldkeys *k = ks->ud;
  return k->n == 1 && !k->nulls ? &k->f[0] : NULL;
}

int wm_keysel_fields(wm_keysel *ks, const char *const *fields, size_t n) {
  fieldkeys *k = calloc(1, sizeof *k);
  if (!k) return -1;
  k->n = n;
  k->f = calloc(n, sizeof *k->f);
  k->names = calloc(n, sizeof *k->names);
  k->parts = calloc(n, sizeof *k->parts);
  if (!k->f || !k->names || !k->parts) goto fail;
  for (size_t i = 0; i < n; i++) {
    if (!(k->names[i] = strdup(fields[i]))) goto fail;
    k->f[i].name = k->names[i];
    k->f[i].index = -1;
  }
  ks->fn = fieldkeys_fn;
  ks->free = fieldkeys_free;
  ks->ud = k;
  return 0;
fail:
  fieldkeys_free(k);
  return -1;
}

int wm_keysel_null_as(wm_keysel *ks, const char *s, size_t len) {
  if (ks->fn != fieldkeys_fn || len == 0) return -1;
  fieldkeys *k = ks->ud;
  char *copy = malloc(len);
  if (!copy) return -1;
  memcpy(copy, s, len);
  free(k->null_key);
  k->null_key = copy;
  k->null_len = len;
  return 0;
}

int wm_keysel_fields_nulls(wm_keysel *ks, const char *const *fields, size_t n) {
  if (wm_keysel_fields(ks, fields, n) != 0) return -1;
  ((fieldkeys *)ks->ud)->nulls = 1;
  return 0;
}

int wm_keysel_key(const wm_keysel *ks, wm_op *op, const wm_value *rec, wm_value *key) {
  if (ks->fn(ks->ud, op, rec, key) != WM_OK) return WM_ERR;
  if (wm_key_valid(key)) return WM_OK;
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  wm_ctx_error(op->ctx, "key is %s (a key must be a string, number or boolean) for record %s",
               key->type == WM_NIL ? "nil" : "not a scalar", b.data ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

int wm_keysel_change(wm_keysel *ks) {
  if (ks->fn != fieldkeys_fn) return -1;
  fieldkeys *k = ks->ud;
  k->change = 1;
  k->rf.name = "r";
  k->rf.index = -1;
  return 0;
}
