/* Checkpoints (wm_ckpt.h): the format (a part's header and CRC, the MANIFEST), which
 * checkpoint is the newest complete one and what is pruned, over a store of objects
 * (wm_ckpt_store.h). Readers trust nothing they read. */
#include "state/wm_ckpt.h"
#include "state/wm_ckpt_store.h"
#include "state/wm_ckpt_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_MAGIC "WMCP"
#define MAN_MAGIC "WMCM"
#define MANIFEST "MANIFEST"
#define PART_HEADER 20 /* magic 4, version 4, length 8, crc 4 */
#define NAME_MAX_LEN 200
#define MAX_PARTS 1000000u
#define MAX_META (64u << 20)

struct wm_ckpt_store {
  wm_ckpt_backend *b;
  int keep;
  int crash_before_rename; /* tests: _exit(99) with the MANIFEST written, not made visible */
};

typedef struct part_info {
  char *name;
  uint64_t len;
  uint32_t crc;
} part_info;

struct wm_ckpt_writer {
  wm_ckpt_store *s;
  uint64_t id;
  part_info *parts;
  size_t n, cap;
};

struct wm_ckpt_reader {
  wm_ckpt_store *s;
  uint64_t id, created_ms;
  uint8_t *meta;
  size_t metalen;
  part_info *parts;
  size_t n;
};

static int valid_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > NAME_MAX_LEN || !strcmp(name, "MANIFEST") || name[0] == '.') return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

/* ---- the store --------------------------------------------------------------------------- */

wm_ckpt_store *wm_ckpt_store_new(wm_ckpt_backend *b, int keep, wm_error *err) {
  if (!b) return NULL;
  if (keep < 1) {
    wm_error_set(err, "checkpoints to keep must be at least 1 (got %d)", keep);
    b->vt->free(b);
    return NULL;
  }
  wm_ckpt_store *s = calloc(1, sizeof *s);
  if (!s) {
    wm_error_set(err, "out of memory");
    b->vt->free(b);
    return NULL;
  }
  s->b = b;
  s->keep = keep;
  return s;
}

wm_ckpt_store *wm_ckpt_store_open(const char *dir, int keep, wm_error *err) {
  if (keep < 1) {
    wm_error_set(err, "checkpoints to keep must be at least 1 (got %d)", keep);
    return NULL;
  }
  const char *colon = dir ? strstr(dir, "://") : NULL;
  if (colon && !strncmp(dir, "nats://", 7))
    return wm_ckpt_store_new(wm_ckpt_nats_open(dir, err), keep, err);
  if (colon) {
    wm_error_set(err, "checkpoint store %s: no store of the kind '%.*s://' in this wmrun "
                        "(a checkpoint directory is a path, a NATS store nats://HOST:PORT/BUCKET)", dir, (int)(colon - dir), dir);
    return NULL;
  }
  return wm_ckpt_store_new(wm_ckpt_local_open(dir, err), keep, err);
}

wm_ckpt_marks *wm_ckpt_marks_open(const char *where, wm_error *err) {
  const char *colon = where ? strstr(where, "://") : NULL;
  if (colon && !strncmp(where, "nats://", 7)) return wm_ckpt_nats_marks(where, err);
  if (colon) {
    wm_error_set(err, "checkpoint store %s: no store of the kind '%.*s://' in this wmrun "
                      "(a checkpoint directory is a path, a NATS store nats://HOST:PORT/BUCKET)",
                 where, (int)(colon - where), where);
    return NULL;
  }
  return wm_ckpt_local_marks(where, err);
}

/* a mark's path and name: names of the store's paths ('/' between them), never "." or ".." */
static int valid_mark(const char *path, const char *name, wm_error *err) {
  for (const char *p = path; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-' || (*p == '/' && p > path && p[-1] != '/' && p[1])))
      return wm_error_set(err, "mark %s of %s: the path may hold only letters, digits, '.', '_', "
                               "'-' and single '/' between names", name, path);
  for (const char *p = name; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
      return wm_error_set(err, "mark '%s': a mark's name is letters and '_'", name);
  if (!*path || !*name || path[0] == '.' || strstr(path, "/.") || strstr(path, ".."))
    return wm_error_set(err, "mark '%s' of '%s': an empty name, or a name that starts with '.'",
                        name, path);
  return 0;
}

int wm_ckpt_mark_get(wm_ckpt_marks *m, const char *path, const char *name, wm_error *err) {
  if (valid_mark(path, name, err) != 0) return -1;
  return m->vt->get(m, path, name, err);
}

int wm_ckpt_mark_set(wm_ckpt_marks *m, const char *path, const char *name, wm_error *err) {
  if (valid_mark(path, name, err) != 0) return -1;
  return m->vt->set(m, path, name, err);
}

void wm_ckpt_marks_free(wm_ckpt_marks *m) {
  if (m) m->vt->free(m);
}

void wm_ckpt_store_free(wm_ckpt_store *s) {
  if (!s) return;
  s->b->vt->free(s->b);
  free(s);
}

const char *wm_ckpt_store_dir(const wm_ckpt_store *s) { return s->b->name; }
void wm_ckpt_store_crash_before_rename(wm_ckpt_store *s) { s->crash_before_rename = 1; }

static int cmp_desc(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The ids present in the store, newest first. -1 on error. */
static int list_ids(wm_ckpt_store *s, uint64_t **ids, size_t *n, wm_error *err) {
  if (s->b->vt->list(s->b, ids, n, err) != 0) return -1;
  if (*n) qsort(*ids, *n, sizeof **ids, cmp_desc);
  return 0;
}

uint64_t wm_ckpt_next_id(wm_ckpt_store *s) {
  uint64_t *ids;
  size_t n;
  if (list_ids(s, &ids, &n, NULL) != 0) return 1;
  uint64_t next = n ? ids[0] + 1 : 1;
  free(ids);
  return next;
}

int wm_ckpt_clear(wm_ckpt_store *s, wm_error *err) {
  uint64_t *ids;
  size_t n;
  if (list_ids(s, &ids, &n, err) != 0) return -1;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) rc = s->b->vt->remove(s->b, ids[i], err);
  free(ids);
  return rc;
}

/* ---- writing --------------------------------------------------------------------------------- */

wm_ckpt_writer *wm_ckpt_begin(wm_ckpt_store *s, uint64_t id, wm_error *err) {
  wm_ckpt_writer *w = calloc(1, sizeof *w);
  if (!w) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  w->s = s;
  w->id = id;
  if (s->b->vt->begin(s->b, id, err) != 0) {
    free(w);
    return NULL;
  }
  return w;
}

int wm_ckpt_put(wm_ckpt_writer *w, const char *name, const void *data, size_t len, wm_error *err) {
  if (!valid_name(name)) {
    wm_error_set(err, "bad checkpoint part name '%s'", name);
    return -1;
  }
  for (size_t i = 0; i < w->n; i++)
    if (!strcmp(w->parts[i].name, name)) {
      wm_error_set(err, "checkpoint part '%s' written twice", name);
      return -1;
    }
  if (w->n == w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 8;
    part_info *g = realloc(w->parts, nc * sizeof *g);
    if (!g) {
      wm_error_set(err, "out of memory");
      return -1;
    }
    w->parts = g;
    w->cap = nc;
  }
  uint8_t head[PART_HEADER];
  uint32_t crc = wm_crc32(0, data, len);
  memcpy(head, PART_MAGIC, 4);
  wm_put32(head + 4, WM_CKPT_VERSION);
  wm_put64(head + 8, (uint64_t)len);
  wm_put32(head + 16, crc);
  wm_ckpt_backend *b = w->s->b;
  if (b->vt->put(b, w->id, name, head, sizeof head, data, len, err) != 0) return -1;
  part_info *p = &w->parts[w->n];
  if (!(p->name = strdup(name))) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  p->len = len;
  p->crc = crc;
  w->n++;
  return 0;
}

static void free_parts(part_info *p, size_t n) {
  for (size_t i = 0; i < n; i++) free(p[i].name);
  free(p);
}

static void writer_free(wm_ckpt_writer *w) {
  free_parts(w->parts, w->n);
  free(w);
}

void wm_ckpt_abort(wm_ckpt_writer *w) {
  if (!w) return;
  w->s->b->vt->remove(w->s->b, w->id, NULL);
  writer_free(w);
}

static void prune(wm_ckpt_store *s);

/* The MANIFEST of w: magic, version, id, creation time, the metadata, the parts (name, length,
 * CRC), and a CRC of all that. NULL (out of memory). */
static uint8_t *manifest(const wm_ckpt_writer *w, const void *meta, size_t metalen,
                         uint64_t created_ms, size_t *len) {
  size_t size = 4 + 4 + 8 + 8 + 8 + metalen + 4 + 4;
  for (size_t i = 0; i < w->n; i++) size += 2 + strlen(w->parts[i].name) + 8 + 4;
  uint8_t *m = malloc(size);
  if (!m) return NULL;
  uint8_t *p = m;
  memcpy(p, MAN_MAGIC, 4), p += 4;
  wm_put32(p, WM_CKPT_VERSION), p += 4;
  wm_put64(p, w->id), p += 8;
  wm_put64(p, created_ms), p += 8;
  wm_put64(p, metalen), p += 8;
  if (metalen) memcpy(p, meta, metalen), p += metalen;
  wm_put32(p, (uint32_t)w->n), p += 4;
  for (size_t i = 0; i < w->n; i++) {
    size_t nl = strlen(w->parts[i].name);
    p[0] = (uint8_t)nl, p[1] = (uint8_t)(nl >> 8), p += 2;
    memcpy(p, w->parts[i].name, nl), p += nl;
    wm_put64(p, w->parts[i].len), p += 8;
    wm_put32(p, w->parts[i].crc), p += 4;
  }
  wm_put32(p, wm_crc32(0, m, (size_t)(p - m))), p += 4;
  *len = (size_t)(p - m);
  return m;
}

int wm_ckpt_commit(wm_ckpt_writer *w, const void *meta, size_t metalen, uint64_t created_ms,
                   wm_error *err) {
  int rc = -1;
  uint8_t *m = NULL;
  size_t mlen = 0;
  wm_ckpt_store *s = w->s;
  if (metalen > MAX_META) {
    wm_error_set(err, "checkpoint metadata of %zu bytes is too large", metalen);
    goto out;
  }
  if (!(m = manifest(w, meta, metalen, created_ms, &mlen))) {
    wm_error_set(err, "out of memory");
    goto out;
  }
  rc = s->b->vt->complete(s->b, w->id, m, mlen, s->crash_before_rename, err);
out:
  free(m);
  if (rc != 0) s->b->vt->remove(s->b, w->id, NULL);
  writer_free(w);
  if (rc == 0) prune(s);
  return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Loads and checks the MANIFEST of checkpoint r->id into r. 0, or -1 with a message. */
static int load_manifest(wm_ckpt_reader *r, wm_error *err) {
  uint8_t *m;
  size_t n;
  wm_ckpt_backend *b = r->s->b;
  int got = b->vt->get(b, r->id, MANIFEST, MAX_META + 64u * MAX_PARTS, &m, &n, err);
  if (got == 0) wm_error_set(err, "no MANIFEST (the checkpoint was not finished)");
  if (got != 1) return -1;
  const uint8_t *p = m, *end = m + n;
#define NEED(k)                                                        \
  do {                                                                 \
    if ((size_t)(end - p) < (size_t)(k)) {                             \
      wm_error_set(err, "MANIFEST is truncated (%zu bytes)", n);     \
      goto bad;                                                        \
    }                                                                  \
  } while (0)
  if (n >= 4 && memcmp(p, MAN_MAGIC, 4) != 0) {
    wm_error_set(err, "MANIFEST is not a wmrun checkpoint manifest");
    goto bad;
  }
  NEED(4 + 4 + 4);
  if (wm_get32(end - 4) != wm_crc32(0, m, n - 4)) {
    wm_error_set(err, "MANIFEST fails its CRC check (damaged)");
    goto bad;
  }
  end -= 4;
  p += 4;
  if (wm_get32(p) != WM_CKPT_VERSION) {
    wm_error_set(err, "MANIFEST has format version %u; this wmrun reads version %u", wm_get32(p),
           WM_CKPT_VERSION);
    goto bad;
  }
  p += 4;
  NEED(24);
  uint64_t id = wm_get64(p), created = wm_get64(p + 8), metalen = wm_get64(p + 16);
  p += 24;
  if (id != r->id) {
    wm_error_set(err, "MANIFEST names checkpoint %" PRIu64 ", its directory %" PRIu64, id, r->id);
    goto bad;
  }
  if (metalen > MAX_META) {
    wm_error_set(err, "MANIFEST metadata length %" PRIu64 " is out of range", metalen);
    goto bad;
  }
  NEED(metalen);
  r->created_ms = created;
  r->metalen = (size_t)metalen;
  if (!(r->meta = malloc(r->metalen ? r->metalen : 1))) {
    wm_error_set(err, "out of memory");
    goto bad;
  }
  memcpy(r->meta, p, r->metalen);
  p += r->metalen;
  NEED(4);
  uint32_t np = wm_get32(p);
  p += 4;
  if (np > MAX_PARTS || np > (size_t)(end - p) / 14) {
    wm_error_set(err, "MANIFEST part count %u is out of range", np);
    goto bad;
  }
  if (!(r->parts = calloc(np ? np : 1, sizeof *r->parts))) {
    wm_error_set(err, "out of memory");
    goto bad;
  }
  for (uint32_t i = 0; i < np; i++) {
    NEED(2);
    size_t nl = (size_t)p[0] | ((size_t)p[1] << 8);
    p += 2;
    NEED(nl + 12);
    char *name = malloc(nl + 1);
    if (!name) {
      wm_error_set(err, "out of memory");
      goto bad;
    }
    memcpy(name, p, nl);
    name[nl] = '\0';
    p += nl;
    r->parts[r->n].name = name;
    r->parts[r->n].len = wm_get64(p);
    r->parts[r->n].crc = wm_get32(p + 8);
    r->n++;
    p += 12;
    if (strlen(name) != nl || !valid_name(name)) {
      wm_error_set(err, "MANIFEST names a bad part");
      goto bad;
    }
  }
  if (p != end) {
    wm_error_set(err, "MANIFEST has %zu bytes after its last part", (size_t)(end - p));
    goto bad;
  }
#undef NEED
  free(m);
  return 0;
bad:
  free(m);
  return -1;
}

/* Reads part i of r, checked. 0, or -1 with a message. */
static int read_part(wm_ckpt_reader *r, size_t i, uint8_t **data, size_t *len, wm_error *err) {
  const part_info *pi = &r->parts[i];
  uint8_t *f;
  size_t n;
  wm_error sub;
  if (pi->len > SIZE_MAX - PART_HEADER) {
    wm_error_set(err, "part %s: too large", pi->name);
    return -1;
  }
  wm_ckpt_backend *b = r->s->b;
  int got = b->vt->get(b, r->id, pi->name, (size_t)pi->len + PART_HEADER, &f, &n, &sub);
  if (got != 1) {
    wm_error_set(err, "part %s: %s", pi->name, got == 0 ? "missing (the MANIFEST names it)" : sub.msg);
    return -1;
  }
  const char *why = NULL;
  if (n < PART_HEADER || memcmp(f, PART_MAGIC, 4) != 0) why = "not a wmrun checkpoint part";
  else if (wm_get32(f + 4) != WM_CKPT_VERSION) why = "unknown format version";
  else if (wm_get64(f + 8) != pi->len || n - PART_HEADER != pi->len) why = "truncated or wrong length";
  else if (wm_get32(f + 16) != pi->crc || wm_crc32(0, f + PART_HEADER, n - PART_HEADER) != pi->crc)
    why = "fails its CRC check (damaged)";
  if (why) {
    wm_error_set(err, "part %s: %s", pi->name, why);
    free(f);
    return -1;
  }
  memmove(f, f + PART_HEADER, n - PART_HEADER);
  *data = f;
  *len = n - PART_HEADER;
  return 0;
}

static wm_ckpt_reader *reader_new(wm_ckpt_store *s, uint64_t id) {
  wm_ckpt_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->s = s;
  r->id = id;
  return r;
}

/* Opens checkpoint id with every part checked. NULL with a message. */
static wm_ckpt_reader *open_checked(wm_ckpt_store *s, uint64_t id, wm_error *err) {
  wm_ckpt_reader *r = reader_new(s, id);
  if (!r) {
    wm_error_set(err, "out of memory");
    return NULL;
  }
  if (load_manifest(r, err) != 0) goto bad;
  for (size_t i = 0; i < r->n; i++) {
    uint8_t *d;
    size_t n;
    if (read_part(r, i, &d, &n, err) != 0) goto bad;
    free(d);
  }
  return r;
bad:
  wm_ckpt_reader_free(r);
  return NULL;
}

int wm_ckpt_open_latest(wm_ckpt_store *s, wm_ckpt_warn_fn warn, void *ud, wm_ckpt_reader **out,
                        wm_error *err) {
  *out = NULL;
  uint64_t *ids;
  size_t n;
  if (list_ids(s, &ids, &n, err) != 0) return -1;
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    wm_error why;
    wm_ckpt_reader *r = open_checked(s, ids[i], &why);
    if (r) {
      *out = r;
      found = 1;
    } else if (warn) {
      char msg[900];
      snprintf(msg, sizeof msg, "checkpoint %" PRIu64 " in %s is skipped: %.600s", ids[i], s->b->name, why.msg);
      warn(ud, msg);
    }
  }
  free(ids);
  return found;
}

uint64_t wm_ckpt_reader_id(const wm_ckpt_reader *r) { return r->id; }
uint64_t wm_ckpt_reader_created_ms(const wm_ckpt_reader *r) { return r->created_ms; }
const void *wm_ckpt_reader_meta(const wm_ckpt_reader *r, size_t *len) {
  *len = r->metalen;
  return r->meta;
}
size_t wm_ckpt_reader_nparts(const wm_ckpt_reader *r) { return r->n; }
const char *wm_ckpt_reader_part_name(const wm_ckpt_reader *r, size_t i) {
  return i < r->n ? r->parts[i].name : NULL;
}

int wm_ckpt_get(wm_ckpt_reader *r, const char *name, uint8_t **data, size_t *len, wm_error *err) {
  *data = NULL;
  *len = 0;
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->parts[i].name, name)) return read_part(r, i, data, len, err) ? -1 : 1;
  return 0;
}

void wm_ckpt_reader_free(wm_ckpt_reader *r) {
  if (!r) return;
  free_parts(r->parts, r->n);
  free(r->meta);
  free(r);
}

/* Keeps the newest s->keep complete checkpoints; removes every other checkpoint older than
 * the oldest one kept (complete, damaged or unfinished). */
static void prune(wm_ckpt_store *s) {
  uint64_t *ids;
  size_t n;
  if (list_ids(s, &ids, &n, NULL) != 0) return;
  int kept = 0;
  size_t i = 0;
  for (; i < n && kept < s->keep; i++) {
    wm_ckpt_reader *r = reader_new(s, ids[i]);
    if (r && load_manifest(r, NULL) == 0) kept++;
    wm_ckpt_reader_free(r);
  }
  if (kept == s->keep)
    for (; i < n; i++) s->b->vt->remove(s->b, ids[i], NULL);
  free(ids);
}
