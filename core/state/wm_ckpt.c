/* Checkpoint storage (wm_ckpt.h): write temp, fsync, rename; MANIFEST last; readers trust
 * nothing they read. */
#include "state/wm_ckpt.h"
#include "state/wm_crc_table.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define PART_MAGIC "WMCP"
#define MAN_MAGIC "WMCM"
#define PART_HEADER 20 /* magic 4, version 4, length 8, crc 4 */
#define NAME_MAX_LEN 200
#define MAX_PARTS 1000000u
#define MAX_META (64u << 20)

#define LOCK_NAME "LOCK"

struct wm_ckpt_store {
  char *dir;
  int keep;
  int lock_fd; /* DIR/LOCK, flock()ed for the store's life */
  int crash_before_rename; /* tests: _exit(99) with the MANIFEST written, not renamed */
};

typedef struct part_info {
  char *name;
  uint64_t len;
  uint32_t crc;
} part_info;

struct wm_ckpt_writer {
  wm_ckpt_store *s;
  uint64_t id;
  char *path; /* DIR/chk-ID */
  part_info *parts;
  size_t n, cap;
};

struct wm_ckpt_reader {
  uint64_t id, created_ms;
  char *path;
  uint8_t *meta;
  size_t metalen;
  part_info *parts;
  size_t n;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* ---- CRC-32 ------------------------------------------------------------------------ */

/* Slicing by 8 (eight bytes per step through the tables of wm_crc_table.h): about 10x the
 * bit-by-bit loop, which made a 50 MB checkpoint's CRCs take most of its restore. */
uint32_t wm_crc32(uint32_t crc, const void *data, size_t len) {
  const uint8_t *p = data;
  const uint32_t(*t)[256] = wm_crc_table;
  crc = ~crc;
  while (len >= 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

/* ---- little-endian fields ------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* ---- files ----------------------------------------------------------------------------- */

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  s[la] = '/';
  memcpy(s + la + 1, b, lb + 1);
  return s;
}

static int write_all(int fd, const void *data, size_t len) {
  const uint8_t *p = data;
  while (len) {
    ssize_t k = write(fd, p, len);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

static int fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* Writes head then body to dir/name through dir/.tmp-name, fsynced, renamed. */
static int write_file(const char *dir, const char *name, const void *head, size_t headlen,
                      const void *body, size_t bodylen, int crash, char *err, size_t errlen) {
  char tmpname[NAME_MAX_LEN + 8];
  snprintf(tmpname, sizeof tmpname, ".tmp-%s", name);
  char *tmp = join(dir, tmpname), *final = join(dir, name);
  int rc = -1;
  if (!tmp || !final) {
    seterr(err, errlen, "out of memory");
    goto out;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    seterr(err, errlen, "%s: %s", tmp, strerror(errno));
    goto out;
  }
  if (write_all(fd, head, headlen) != 0 || (bodylen && write_all(fd, body, bodylen) != 0) ||
      fsync(fd) != 0) {
    seterr(err, errlen, "%s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    goto out;
  }
  if (crash) _exit(99); /* wm_ckpt_store_crash_before_rename */
  if (close(fd) != 0 || rename(tmp, final) != 0) {
    seterr(err, errlen, "%s: %s", final, strerror(errno));
    unlink(tmp);
    goto out;
  }
  rc = 0;
out:
  free(tmp);
  free(final);
  return rc;
}

/* Reads a whole file (at most max bytes). 0, or -1 with a message. */
static int read_file(const char *path, size_t max, uint8_t **data, size_t *len, char *err,
                     size_t errlen) {
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    seterr(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    seterr(err, errlen, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > max) {
    seterr(err, errlen, "%s: %lld bytes, more than the %zu a checkpoint file may have", path,
           (long long)st.st_size, max);
    close(fd);
    return -1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    seterr(err, errlen, "out of memory reading %s", path);
    close(fd);
    return -1;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  if (got != n) {
    seterr(err, errlen, "%s: short read", path);
    free(buf);
    return -1;
  }
  *data = buf;
  *len = n;
  return 0;
}

static void remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char *p = join(path, e->d_name);
      if (p) {
        unlink(p);
        free(p);
      }
    }
    closedir(d);
  }
  rmdir(path);
}

static int mkdirs(const char *dir) {
  char *p = strdup(dir);
  if (!p) return -1;
  for (char *q = p + 1; *q; q++) {
    if (*q != '/') continue;
    *q = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *q = '/';
  }
  int rc = (mkdir(p, 0755) != 0 && errno != EEXIST) ? -1 : 0;
  free(p);
  return rc;
}

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

/* ---- the directory's lock ------------------------------------------------------------------
 *
 * One job at a time per directory: DIR/LOCK is flock()ed (exclusive, without waiting) for
 * the store's life and holds "pid P host H" of its holder. The kernel releases the lock when
 * the holder exits, however it ends (kill -9 too), so a stale file never blocks a restart;
 * the file itself is never removed (a remover could race a new holder of another inode). */

/* What the holder wrote into the lock file ("pid 123 host box"), or "unknown". */
static void lock_holder(int fd, char *out, size_t n) {
  char buf[300];
  ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
  size_t len = k > 0 ? (size_t)k : 0;
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\0')) len--;
  buf[len] = '\0';
  int ok = len > 4 && !strncmp(buf, "pid ", 4);
  for (size_t i = 0; ok && i < len; i++)
    if ((unsigned char)buf[i] < ' ' || (unsigned char)buf[i] > '~') ok = 0;
  snprintf(out, n, "%s", ok ? buf : "unknown: its lock file is being written");
}

static int take_lock(wm_ckpt_store *s, char *err, size_t errlen) {
  char *path = join(s->dir, LOCK_NAME);
  if (!path) {
    seterr(err, errlen, "out of memory");
    return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    seterr(err, errlen, "cannot open the lock file %s: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  int rc;
  while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    int e = errno;
    if (e == EWOULDBLOCK) {
      char who[300];
      lock_holder(fd, who, sizeof who);
      seterr(err, errlen, "checkpoint directory %s is in use by another job (%s; lock file %s): "
                          "two jobs on one checkpoint directory would take and resume each "
                          "other's checkpoints; stop that job first, or give this one another "
                          "--checkpoint-dir", s->dir, who, path);
    } else {
      seterr(err, errlen, "cannot lock %s (one job at a time per checkpoint directory): %s",
             path, strerror(e));
    }
    close(fd);
    free(path);
    return -1;
  }
  char host[256] = "?", line[400];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  int n = snprintf(line, sizeof line, "pid %ld host %s\n", (long)getpid(), host);
  if (n < 0 || (size_t)n >= sizeof line) n = (int)strlen(line);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != (ssize_t)n) {
    seterr(err, errlen, "cannot write the lock file %s: %s", path, strerror(errno));
    close(fd);
    free(path);
    return -1;
  }
  free(path);
  s->lock_fd = fd;
  return 0;
}

wm_ckpt_store *wm_ckpt_store_open(const char *dir, int keep, char *err, size_t errlen) {
  if (!dir || !*dir) {
    seterr(err, errlen, "checkpoint directory is empty");
    return NULL;
  }
  if (keep < 1) {
    seterr(err, errlen, "checkpoints to keep must be at least 1 (got %d)", keep);
    return NULL;
  }
  if (mkdirs(dir) != 0) {
    seterr(err, errlen, "checkpoint directory %s: %s", dir, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    seterr(err, errlen, "checkpoint directory %s: not a directory", dir);
    return NULL;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    seterr(err, errlen, "checkpoint directory %s: %s", dir, strerror(errno));
    return NULL;
  }
  wm_ckpt_store *s = calloc(1, sizeof *s);
  if (!s || !(s->dir = strdup(dir))) {
    free(s);
    seterr(err, errlen, "out of memory");
    return NULL;
  }
  s->keep = keep;
  s->lock_fd = -1;
  if (take_lock(s, err, errlen) != 0) {
    wm_ckpt_store_free(s);
    return NULL;
  }
  return s;
}

void wm_ckpt_store_free(wm_ckpt_store *s) {
  if (!s) return;
  if (s->lock_fd >= 0) close(s->lock_fd); /* releases the lock */
  free(s->dir);
  free(s);
}

const char *wm_ckpt_store_dir(const wm_ckpt_store *s) { return s->dir; }
void wm_ckpt_store_crash_before_rename(wm_ckpt_store *s) { s->crash_before_rename = 1; }

static int parse_id(const char *name, uint64_t *id) {
  if (strncmp(name, "chk-", 4) != 0 || strlen(name) != 24) return 0;
  uint64_t v = 0;
  for (const char *p = name + 4; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  *id = v;
  return 1;
}

static void id_name(char *buf, size_t n, uint64_t id) { snprintf(buf, n, "chk-%020" PRIu64, id); }

static int cmp_desc(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The ids of the checkpoint directories, newest first. -1 on error. */
static int list_ids(wm_ckpt_store *s, uint64_t **ids, size_t *n, char *err, size_t errlen) {
  *ids = NULL;
  *n = 0;
  DIR *d = opendir(s->dir);
  if (!d) {
    seterr(err, errlen, "checkpoint directory %s: %s", s->dir, strerror(errno));
    return -1;
  }
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    uint64_t id;
    if (!parse_id(e->d_name, &id)) continue;
    if (*n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      uint64_t *g = realloc(*ids, nc * sizeof *g);
      if (!g) {
        closedir(d);
        free(*ids);
        *ids = NULL;
        seterr(err, errlen, "out of memory");
        return -1;
      }
      *ids = g;
      cap = nc;
    }
    (*ids)[(*n)++] = id;
  }
  closedir(d);
  if (*n) qsort(*ids, *n, sizeof **ids, cmp_desc);
  return 0;
}

uint64_t wm_ckpt_next_id(wm_ckpt_store *s) {
  uint64_t *ids;
  size_t n;
  char err[8];
  if (list_ids(s, &ids, &n, err, sizeof err) != 0) return 1;
  if (n == 0) {
    free(ids);
    return 1;
  }
  uint64_t next = ids[0] + 1;
  free(ids);
  return next;
}

int wm_ckpt_clear(wm_ckpt_store *s, char *err, size_t errlen) {
  uint64_t *ids;
  size_t n;
  if (list_ids(s, &ids, &n, err, errlen) != 0) return -1;
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char name[32];
    id_name(name, sizeof name, ids[i]);
    char *p = join(s->dir, name);
    if (!p) {
      seterr(err, errlen, "out of memory");
      rc = -1;
      break;
    }
    remove_tree(p);
    struct stat st;
    if (stat(p, &st) == 0) {
      seterr(err, errlen, "cannot remove checkpoint %s", p);
      rc = -1;
    }
    free(p);
    if (rc != 0) break;
  }
  free(ids);
  return rc;
}

/* ---- writing --------------------------------------------------------------------------------- */

wm_ckpt_writer *wm_ckpt_begin(wm_ckpt_store *s, uint64_t id, char *err, size_t errlen) {
  char name[32];
  id_name(name, sizeof name, id);
  wm_ckpt_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->path = join(s->dir, name))) {
    free(w);
    seterr(err, errlen, "out of memory");
    return NULL;
  }
  w->s = s;
  w->id = id;
  remove_tree(w->path); /* what a crashed attempt at this id left */
  if (mkdir(w->path, 0755) != 0) {
    seterr(err, errlen, "checkpoint %s: %s", w->path, strerror(errno));
    free(w->path);
    free(w);
    return NULL;
  }
  return w;
}

int wm_ckpt_put(wm_ckpt_writer *w, const char *name, const void *data, size_t len, char *err,
                size_t errlen) {
  if (!valid_name(name)) {
    seterr(err, errlen, "bad checkpoint part name '%s'", name);
    return -1;
  }
  for (size_t i = 0; i < w->n; i++)
    if (!strcmp(w->parts[i].name, name)) {
      seterr(err, errlen, "checkpoint part '%s' written twice", name);
      return -1;
    }
  if (w->n == w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 8;
    part_info *g = realloc(w->parts, nc * sizeof *g);
    if (!g) {
      seterr(err, errlen, "out of memory");
      return -1;
    }
    w->parts = g;
    w->cap = nc;
  }
  uint8_t head[PART_HEADER];
  uint32_t crc = wm_crc32(0, data, len);
  memcpy(head, PART_MAGIC, 4);
  put32(head + 4, WM_CKPT_VERSION);
  put64(head + 8, (uint64_t)len);
  put32(head + 16, crc);
  if (write_file(w->path, name, head, sizeof head, data, len, 0, err, errlen) != 0) return -1;
  part_info *p = &w->parts[w->n];
  if (!(p->name = strdup(name))) {
    seterr(err, errlen, "out of memory");
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
  free(w->path);
  free(w);
}

void wm_ckpt_abort(wm_ckpt_writer *w) {
  if (!w) return;
  remove_tree(w->path);
  writer_free(w);
}

static void prune(wm_ckpt_store *s);

int wm_ckpt_commit(wm_ckpt_writer *w, const void *meta, size_t metalen, uint64_t created_ms,
                   char *err, size_t errlen) {
  int rc = -1;
  uint8_t *m = NULL;
  if (metalen > MAX_META) {
    seterr(err, errlen, "checkpoint metadata of %zu bytes is too large", metalen);
    goto out;
  }
  size_t size = 4 + 4 + 8 + 8 + 8 + metalen + 4 + 4;
  for (size_t i = 0; i < w->n; i++) size += 2 + strlen(w->parts[i].name) + 8 + 4;
  if (!(m = malloc(size))) {
    seterr(err, errlen, "out of memory");
    goto out;
  }
  uint8_t *p = m;
  memcpy(p, MAN_MAGIC, 4), p += 4;
  put32(p, WM_CKPT_VERSION), p += 4;
  put64(p, w->id), p += 8;
  put64(p, created_ms), p += 8;
  put64(p, metalen), p += 8;
  if (metalen) memcpy(p, meta, metalen), p += metalen;
  put32(p, (uint32_t)w->n), p += 4;
  for (size_t i = 0; i < w->n; i++) {
    size_t nl = strlen(w->parts[i].name);
    p[0] = (uint8_t)nl, p[1] = (uint8_t)(nl >> 8), p += 2;
    memcpy(p, w->parts[i].name, nl), p += nl;
    put64(p, w->parts[i].len), p += 8;
    put32(p, w->parts[i].crc), p += 4;
  }
  put32(p, wm_crc32(0, m, (size_t)(p - m))), p += 4;
  /* the parts' renames reach the disk before the MANIFEST's */
  if (fsync_dir(w->path) != 0) {
    seterr(err, errlen, "checkpoint %s: %s", w->path, strerror(errno));
    goto out;
  }
  if (write_file(w->path, "MANIFEST", m, (size_t)(p - m), NULL, 0,
                 w->s->crash_before_rename, err, errlen) != 0) goto out;
  if (fsync_dir(w->path) != 0 || fsync_dir(w->s->dir) != 0) {
    seterr(err, errlen, "checkpoint %s: %s", w->path, strerror(errno));
    goto out;
  }
  rc = 0;
out:
  free(m);
  wm_ckpt_store *s = w->s;
  if (rc != 0) remove_tree(w->path);
  writer_free(w);
  if (rc == 0) prune(s);
  return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Loads and checks the MANIFEST of checkpoint dir path into r. 0, or -1 with a message. */
static int load_manifest(wm_ckpt_reader *r, char *err, size_t errlen) {
  char *mp = join(r->path, "MANIFEST");
  if (!mp) {
    seterr(err, errlen, "out of memory");
    return -1;
  }
  struct stat st;
  if (stat(mp, &st) != 0) {
    seterr(err, errlen, "no MANIFEST (the checkpoint was not finished)");
    free(mp);
    return -1;
  }
  uint8_t *m;
  size_t n;
  int rc = read_file(mp, MAX_META + 64u * MAX_PARTS, &m, &n, err, errlen);
  free(mp);
  if (rc != 0) return -1;
  const uint8_t *p = m, *end = m + n;
#define NEED(k)                                                        \
  do {                                                                 \
    if ((size_t)(end - p) < (size_t)(k)) {                             \
      seterr(err, errlen, "MANIFEST is truncated (%zu bytes)", n);     \
      goto bad;                                                        \
    }                                                                  \
  } while (0)
  if (n >= 4 && memcmp(p, MAN_MAGIC, 4) != 0) {
    seterr(err, errlen, "MANIFEST is not a wmrun checkpoint manifest");
    goto bad;
  }
  NEED(4 + 4 + 4);
  if (get32(end - 4) != wm_crc32(0, m, n - 4)) {
    seterr(err, errlen, "MANIFEST fails its CRC check (damaged)");
    goto bad;
  }
  end -= 4;
  p += 4;
  if (get32(p) != WM_CKPT_VERSION) {
    seterr(err, errlen, "MANIFEST has format version %u; this wmrun reads version %u", get32(p),
           WM_CKPT_VERSION);
    goto bad;
  }
  p += 4;
  NEED(24);
  uint64_t id = get64(p), created = get64(p + 8), metalen = get64(p + 16);
  p += 24;
  if (id != r->id) {
    seterr(err, errlen, "MANIFEST names checkpoint %" PRIu64 ", its directory %" PRIu64, id, r->id);
    goto bad;
  }
  if (metalen > MAX_META) {
    seterr(err, errlen, "MANIFEST metadata length %" PRIu64 " is out of range", metalen);
    goto bad;
  }
  NEED(metalen);
  r->created_ms = created;
  r->metalen = (size_t)metalen;
  if (!(r->meta = malloc(r->metalen ? r->metalen : 1))) {
    seterr(err, errlen, "out of memory");
    goto bad;
  }
  memcpy(r->meta, p, r->metalen);
  p += r->metalen;
  NEED(4);
  uint32_t np = get32(p);
  p += 4;
  if (np > MAX_PARTS || np > (size_t)(end - p) / 14) {
    seterr(err, errlen, "MANIFEST part count %u is out of range", np);
    goto bad;
  }
  if (!(r->parts = calloc(np ? np : 1, sizeof *r->parts))) {
    seterr(err, errlen, "out of memory");
    goto bad;
  }
  for (uint32_t i = 0; i < np; i++) {
    NEED(2);
    size_t nl = (size_t)p[0] | ((size_t)p[1] << 8);
    p += 2;
    NEED(nl + 12);
    char *name = malloc(nl + 1);
    if (!name) {
      seterr(err, errlen, "out of memory");
      goto bad;
    }
    memcpy(name, p, nl);
    name[nl] = '\0';
    p += nl;
    r->parts[r->n].name = name;
    r->parts[r->n].len = get64(p);
    r->parts[r->n].crc = get32(p + 8);
    r->n++;
    p += 12;
    if (strlen(name) != nl || !valid_name(name)) {
      seterr(err, errlen, "MANIFEST names a bad part");
      goto bad;
    }
  }
  if (p != end) {
    seterr(err, errlen, "MANIFEST has %zu bytes after its last part", (size_t)(end - p));
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
static int read_part(wm_ckpt_reader *r, size_t i, uint8_t **data, size_t *len, char *err,
                     size_t errlen) {
  const part_info *pi = &r->parts[i];
  char *path = join(r->path, pi->name);
  if (!path) {
    seterr(err, errlen, "out of memory");
    return -1;
  }
  uint8_t *f;
  size_t n;
  char sub[512];
  if (pi->len > SIZE_MAX - PART_HEADER ||
      read_file(path, (size_t)pi->len + PART_HEADER, &f, &n, sub, sizeof sub) != 0) {
    seterr(err, errlen, "part %s: %s", pi->name, pi->len > SIZE_MAX - PART_HEADER ? "too large" : sub);
    free(path);
    return -1;
  }
  free(path);
  const char *why = NULL;
  if (n < PART_HEADER || memcmp(f, PART_MAGIC, 4) != 0) why = "not a wmrun checkpoint part";
  else if (get32(f + 4) != WM_CKPT_VERSION) why = "unknown format version";
  else if (get64(f + 8) != pi->len || n - PART_HEADER != pi->len) why = "truncated or wrong length";
  else if (get32(f + 16) != pi->crc || wm_crc32(0, f + PART_HEADER, n - PART_HEADER) != pi->crc)
    why = "fails its CRC check (damaged)";
  if (why) {
    seterr(err, errlen, "part %s: %s", pi->name, why);
    free(f);
    return -1;
  }
  memmove(f, f + PART_HEADER, n - PART_HEADER);
  *data = f;
  *len = n - PART_HEADER;
  return 0;
}

static wm_ckpt_reader *reader_new(wm_ckpt_store *s, uint64_t id) {
  char name[32];
  id_name(name, sizeof name, id);
  wm_ckpt_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->id = id;
  if (!(r->path = join(s->dir, name))) {
    free(r);
    return NULL;
  }
  return r;
}

/* Opens checkpoint id with every part checked. NULL with a message. */
static wm_ckpt_reader *open_checked(wm_ckpt_store *s, uint64_t id, char *err, size_t errlen) {
  wm_ckpt_reader *r = reader_new(s, id);
  if (!r) {
    seterr(err, errlen, "out of memory");
    return NULL;
  }
  if (load_manifest(r, err, errlen) != 0) goto bad;
  for (size_t i = 0; i < r->n; i++) {
    uint8_t *d;
    size_t n;
    if (read_part(r, i, &d, &n, err, errlen) != 0) goto bad;
    free(d);
  }
  return r;
bad:
  wm_ckpt_reader_free(r);
  return NULL;
}

int wm_ckpt_open_latest(wm_ckpt_store *s, wm_ckpt_warn_fn warn, void *ud, wm_ckpt_reader **out,
                        char *err, size_t errlen) {
  *out = NULL;
  uint64_t *ids;
  size_t n;
  if (list_ids(s, &ids, &n, err, errlen) != 0) return -1;
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    char why[600];
    wm_ckpt_reader *r = open_checked(s, ids[i], why, sizeof why);
    if (r) {
      *out = r;
      found = 1;
    } else if (warn) {
      char msg[900];
      snprintf(msg, sizeof msg, "checkpoint %" PRIu64 " in %s is skipped: %s", ids[i], s->dir, why);
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

int wm_ckpt_get(wm_ckpt_reader *r, const char *name, uint8_t **data, size_t *len, char *err,
                size_t errlen) {
  *data = NULL;
  *len = 0;
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->parts[i].name, name)) return read_part(r, i, data, len, err, errlen) ? -1 : 1;
  return 0;
}

void wm_ckpt_reader_free(wm_ckpt_reader *r) {
  if (!r) return;
  free_parts(r->parts, r->n);
  free(r->meta);
  free(r->path);
  free(r);
}

/* Keeps the newest s->keep complete checkpoints; removes every other checkpoint directory
 * older than the oldest one kept (complete, damaged or unfinished). */
static void prune(wm_ckpt_store *s) {
  uint64_t *ids;
  size_t n;
  char err[8];
  if (list_ids(s, &ids, &n, err, sizeof err) != 0) return;
  int kept = 0;
  size_t i = 0;
  for (; i < n && kept < s->keep; i++) {
    wm_ckpt_reader *r = reader_new(s, ids[i]);
    char why[256];
    if (r && load_manifest(r, why, sizeof why) == 0) kept++;
    wm_ckpt_reader_free(r);
  }
  if (kept == s->keep)
    for (; i < n; i++) {
      char name[32];
      id_name(name, sizeof name, ids[i]);
      char *p = join(s->dir, name);
      if (p) remove_tree(p);
      free(p);
    }
  free(ids);
}
