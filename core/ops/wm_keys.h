/* Key selectors (semantics.md §8): what key_by gives the keyed operators (window operator,
 * keyed process functions) and the exchanges that partition by key. */
#ifndef WM_KEYS_H
#define WM_KEYS_H

#include <stddef.h>

#include "base/wm_value.h"
#include "graph/wm_graph.h"

/* Extracts the key of a record. *key is borrowed: valid until the next call of fn or
 * until rec dies. Returns WM_OK or WM_ERR (message in op->ctx->error). */
typedef struct wm_keysel {
  int (*fn)(void *ud, wm_op *op, const wm_value *rec, wm_value *key);
  void (*free)(void *ud);
  void *ud;
} wm_keysel;

/* A key selector over one or more fields of the record, run in C (key_by("id"),
 * key_by{"a", "b"}). Field names are copied. 0 or -1. */
int wm_keysel_fields(wm_keysel *ks, const char *const *fields, size_t n);

/* A key selector made by wm_keysel_fields takes a missing (nil) field as the string s (len
 * bytes, copied; not empty) instead of failing: SQL's GROUP BY, whose NULL key is a key of
 * its own (lua/wm/sql/plan/lower.lua's NULL_KEY, which the SQL aggregate in C turns back into
 * NULL). 0, or -1 (not a field selector, or out of memory). */
int wm_keysel_null_as(wm_keysel *ks, const char *s, size_t len);

/* The same, where a NULL (nil) field is a key part of its own (SQL's PARTITION BY, where NULL is
 * a key): the key is then always composite (wm_key_compose's 'n' part), also with one field. */
int wm_keysel_fields_nulls(wm_keysel *ks, const char *const *fields, size_t n);

/* A key selector made by wm_keysel_fields reads its fields from the row in the record's field
 * `r` (a SQL change {k = "+I", r = row}: the SQL planner's regular join over an updating
 * input) instead of the record's own: the key is the one the row alone would give. A record
 * whose r is not a row is an error naming it. 0, or -1 (not a field selector). */
int wm_keysel_change(wm_keysel *ks);

/* The field of a key selector made by wm_keysel_fields with one field, else NULL: a
 * keyed operator may read it inline (wm_field_peek) and take a string or integer value
 * found there as the key, which is what the selector would return; it must call the
 * selector for anything else (a missing field, another type: the selector's error). */
const wm_field *wm_keysel_field1(const wm_keysel *ks);

/* The key of rec through ks, checked: a key that is nil or not a scalar is an error naming
 * the record ("key is nil (a key must be a string, number or boolean) for record ...").
 * *key is borrowed as for ks->fn. WM_OK or WM_ERR (message in op->ctx->error). */
int wm_keysel_key(const wm_keysel *ks, wm_op *op, const wm_value *rec, wm_value *key);

#endif
