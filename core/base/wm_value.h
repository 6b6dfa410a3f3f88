/* The value model: what the core knows of a user's record.
 *
 * A record travels through the operator chain as a wm_value, a small tagged value:
 *   - immediates: nil, boolean, integer, float;
 *   - WM_CSTR: a string the core does not own (borrowed: valid only during the call that
 *     passed it, e.g. a line in a source's read buffer). Keeping it means copying it;
 *   - WM_STR: a reference-counted immutable string owned by the core;
 *   - WM_ROW: a reference-counted typed C row (a schema of named fields), e.g. from parse_csv;
 *   - WM_SLOT: a value owned by the host (a Lua value in the bindings' slot table), reference
 *     counted through the host vtable. The core never looks inside it.
 *
 * Ownership: a wm_value passed to a function is borrowed unless the comment says otherwise.
 * wm_value_retain() turns a borrowed value into an owned one (copying a WM_CSTR, adding a
 * reference to the rest); wm_value_release() drops an owned value.
 */
#ifndef WM_VALUE_H
#define WM_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/wm_error.h"

typedef enum {
  WM_NIL = 0,
  WM_BOOL,
  WM_INT,
  WM_FLOAT,
  WM_CSTR,
  WM_STR,
  WM_ROW,
  WM_SLOT,
} wm_vtype;

typedef struct wm_str wm_str;
typedef struct wm_row wm_row;
typedef struct wm_schema wm_schema;
typedef struct wm_host wm_host;
struct wm_buf;

typedef struct wm_value {
  uint8_t type;
  uint8_t flags; /* WM_VF_* */
  uint32_t len;  /* bytes of a WM_CSTR */
  union {
    bool b;
    int64_t i;
    double f;
    const char *cs;
    wm_str *s;
    wm_row *row;
    uint32_t slot;
  } u;
} wm_value;

/* A key made of several fields (key_by{"a", "b"}): an encoded WM_STR with this flag. */
#define WM_VF_COMPOSITE 1

struct wm_str {
  uint32_t refs;
  uint32_t len;
  char data[]; /* len bytes and a terminating NUL */
};

/* Host hooks for WM_SLOT values and for reading fields of host records. Filled by the
 * bindings; a pure-C user (tests, benchmarks) may leave every hook NULL if it never
 * creates WM_SLOT values. */
struct wm_host {
  void *ud;
  void (*retain)(void *ud, uint32_t slot);
  void (*release)(void *ud, uint32_t slot);
  /* Reads field `name` of a host record into *out (borrowed while rec is alive).
   * Returns 0, or -1 with a message in *err (NULL: none wanted) when rec is not a record. */
  int (*get_field)(void *ud, const wm_value *rec, const char *name, wm_value *out, wm_error *err);
  /* A new owned record: a shallow copy of rec with field `name` set to val. */
  int (*with_field)(void *ud, const wm_value *rec, const char *name, const wm_value *val,
                    wm_value *out, wm_error *err);
  /* Appends a WM_SLOT value as `print` shows it (json != 0: as inside a table). */
  void (*format)(void *ud, struct wm_buf *b, const wm_value *v, int json);
};

static inline wm_value wm_nil(void) { wm_value v = {0}; return v; }
static inline wm_value wm_int(int64_t i) { wm_value v = {0}; v.type = WM_INT; v.u.i = i; return v; }
static inline wm_value wm_float(double f) { wm_value v = {0}; v.type = WM_FLOAT; v.u.f = f; return v; }
static inline wm_value wm_bool(bool b) { wm_value v = {0}; v.type = WM_BOOL; v.u.b = b; return v; }
/* A borrowed string: s must outlive every use of the value. */
static inline wm_value wm_cstr(const char *s, size_t len) {
  wm_value v = {0}; v.type = WM_CSTR; v.len = (uint32_t)len; v.u.cs = s; return v;
}

/* An owned string copied from s; NULL on allocation failure. Caller releases. */
wm_str *wm_str_new(const char *s, size_t len);

static inline bool wm_value_is_string(const wm_value *v) {
  return v->type == WM_CSTR || v->type == WM_STR;
}
/* The bytes of a string value (WM_CSTR or WM_STR). */
static inline const char *wm_value_str(const wm_value *v, size_t *len) {
  if (v->type == WM_STR) { *len = v->u.s->len; return v->u.s->data; }
  *len = v->len;
  return v->u.cs;
}

/* Makes *v owned (see above). Returns 0, or -1 on allocation failure (v unchanged). */
int wm_value_retain(const wm_host *h, wm_value *v);
/* Drops an owned value and sets it to nil. */
void wm_value_release(const wm_host *h, wm_value *v);
/* An owned copy of a borrowed or owned value: *dst = retained src. */
int wm_value_copy(const wm_host *h, wm_value *dst, const wm_value *src);

/* Key semantics (key_by): equality and hash. Integers and integral floats are equal
 * when numerically equal (as Lua table keys are); strings compare by bytes. Slot and row
 * values are not keys. */
bool wm_key_equal(const wm_value *a, const wm_value *b);
uint64_t wm_key_hash(const wm_value *v);
/* Whether v can be a key: nil, slots and rows cannot. */
bool wm_key_valid(const wm_value *v);

/* 64-bit hash of bytes (FNV-1a with a final mix); stable across runs. */
uint64_t wm_hash_bytes(const void *p, size_t n, uint64_t seed);

/* ---- Typed C rows ------------------------------------------------------------------ */

typedef enum { WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER, WM_FT_BOOLEAN, WM_FT_ANY } wm_ftype;

struct wm_schema {
  uint32_t refs;
  uint32_t nfields;
  char **names;         /* owned */
  uint8_t *types;       /* wm_ftype */
  uint32_t *sorted;     /* field indexes in byte order of their names (for JSON printing) */
};

struct wm_row {
  uint32_t refs;
  wm_schema *schema;    /* referenced */
  wm_value fields[];    /* owned values */
};

/* A schema of n fields (names copied); NULL on allocation failure. Caller releases. */
wm_schema *wm_schema_new(uint32_t n, const char *const *names, const uint8_t *types);
void wm_schema_release(wm_schema *s);
/* Index of the field called name, or -1. */
int wm_schema_find(const wm_schema *s, const char *name);

/* A row of the schema with every field nil; NULL on allocation failure. Caller releases
 * (through wm_value_release of a WM_ROW value, or wm_row_release). */
wm_row *wm_row_new(wm_schema *s);
void wm_row_release(const wm_host *h, wm_row *r);

static inline wm_value wm_row_value(wm_row *r) {
  wm_value v = {0}; v.type = WM_ROW; v.u.row = r; return v;
}

/* A field reference resolved lazily per schema: key_by("id") on rows costs one pointer
 * compare per record once the schema has been seen. */
typedef struct wm_field {
  const char *name;          /* borrowed for the lifetime of the operator */
  const wm_schema *schema;   /* schema the cached index belongs to */
  int index;
} wm_field;

/* Reads field f of rec into *out (borrowed while rec is alive). Rows are read in C, host
 * records through the host. Returns 0; -1 with a message in *err (NULL: none wanted). A
 * missing field is nil. */
int wm_field_get(const wm_host *h, wm_field *f, const wm_value *rec, wm_value *out, wm_error *err);
/* The hot path of wm_field_get: a pointer to field f of rec when rec is a row of the
 * schema f last resolved and has the field, else NULL (then call wm_field_get). */
static inline const wm_value *wm_field_peek(const wm_field *f, const wm_value *rec) {
  if (rec->type == WM_ROW && rec->u.row->schema == f->schema && f->index >= 0)
    return &rec->u.row->fields[f->index];
  return NULL;
}

/* A new owned record equal to rec with field f set to val (val is copied). */
int wm_field_with(const wm_host *h, wm_field *f, const wm_value *rec, const wm_value *val,
                  wm_value *out, wm_error *err);

/* ---- Composite keys ---------------------------------------------------------------- */

/* Encodes n scalar values into one owned composite key (an encoded WM_STR); a nil value is a
 * part of its own (wm_keysel_fields_nulls), decoded as nil. */
int wm_key_compose(const wm_value *parts, size_t n, wm_value *out);
/* Decodes part i (0-based) of a composite key; returns the number of parts, or -1.
 * String parts are borrowed from the key. */
int wm_key_part(const wm_value *key, size_t i, wm_value *out);

#endif
