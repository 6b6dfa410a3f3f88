/* The local directory checkpoint store (wm_ckpt_store.h): DIR/chk-<20 digits>/<name> per
 * object, each written to a temporary name, fsynced and renamed; the MANIFEST likewise, after
 * an fsync of the checkpoint's directory, and followed by fsyncs of it and of DIR. DIR/LOCK is
 * flock()ed for the store's life: the claim, which no other process can take over while this
 * one lives (the kernel drops it when the process ends, however it ends). */
#include "state/wm_ckpt_store.h"
#include "state/wm_ckpt_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define NAME_MAX_LEN 200
#define LOCK_NAME "LOCK"

typedef struct local_store {
  wm_ckpt_backend base;
  char *dir;
  int lock_fd; /* DIR/LOCK, flock()ed for the store's life */
} local_store;

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  s[la] = '/';
  memcpy(s + la + 1, b, lb + 1);
  return s;
}

static void id_name(char *buf, size_t n, uint64_t id) { snprintf(buf, n, "chk-%020" PRIu64, id); }

/* DIR/chk-ID, or NULL (out of memory). */
static char *ckpt_path(const local_store *s, uint64_t id) {
  char name[32];
  id_name(name, sizeof name, id);
  return join(s->dir, name);
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
                      const void *body, size_t bodylen, int crash, wm_error *err) {
  char tmpname[NAME_MAX_LEN + 8];
  snprintf(tmpname, sizeof tmpname, ".tmp-%s", name);
  char *tmp = join(dir, tmpname), *final = join(dir, name);
  int rc = -1;
  if (!tmp || !final) {
    wm_error_set(err, "out of memory");
    goto out;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    wm_error_set(err, "%s: %s", tmp, strerror(errno));
    goto out;
  }
  if (write_all(fd, head, headlen) != 0 || (bodylen && write_all(fd, body, bodylen) != 0) ||
      fsync(fd) != 0) {
    wm_error_set(err, "%s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    goto out;
  }
  if (crash) _exit(99); /* wm_ckpt_store_crash_before_rename */
  if (close(fd) != 0 || rename(tmp, final) != 0) {
    wm_error_set(err, "%s: %s", final, strerror(errno));
    unlink(tmp);
    goto out;
  }
  rc = 0;
out:
  free(tmp);
  free(final);
  return rc;
}

/* Reads a whole file (at most max bytes). 1, 0 when there is no such file, or -1 with a
 * message. */
static int read_file(const char *path, size_t max, uint8_t **data, size_t *len, wm_error *err) {
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    wm_error_set(err, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    wm_error_set(err, "%s: not a regular file", path);
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > max) {
    wm_error_set(err, "%s: %lld bytes, more than the %zu a checkpoint file may have", path,
           (long long)st.st_size, max);
    close(fd);
    return -1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    wm_error_set(err, "out of memory reading %s", path);
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
    wm_error_set(err, "%s: short read", path);
    free(buf);
    return -1;
  }
  *data = buf;
  *len = n;
  return 1;
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

static int take_lock(local_store *s, wm_error *err) {
  char *path = join(s->dir, LOCK_NAME);
  if (!path) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    wm_error_set(err, "cannot open the lock file %s: %s", path, strerror(errno));
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
      wm_error_set(err, "checkpoint directory %s is in use by another job (%s; lock file %s): "
                          "two jobs on one checkpoint directory would take and resume each "
                          "other's checkpoints; stop that job first, or give this one another "
                          "--checkpoint-dir", s->dir, who, path);
    } else {
      wm_error_set(err, "cannot lock %s (one job at a time per checkpoint directory): %s",
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
    wm_error_set(err, "cannot write the lock file %s: %s", path, strerror(errno));
    close(fd);
    free(path);
    return -1;
  }
  free(path);
  s->lock_fd = fd;
  return 0;
}

/* ---- the operations ------------------------------------------------------------------------ */

static int local_begin(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  local_store *s = (local_store *)b;
  char *path = ckpt_path(s, id);
  if (!path) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  remove_tree(path); /* what a crashed attempt at this id left */
  int rc = 0;
  if (mkdir(path, 0755) != 0) {
    wm_error_set(err, "checkpoint %s: %s", path, strerror(errno));
    rc = -1;
  }
  free(path);
  return rc;
}

static int local_put(wm_ckpt_backend *b, uint64_t id, const char *name, const void *head,
                     size_t headlen, const void *body, size_t bodylen, wm_error *err) {
  char *path = ckpt_path((local_store *)b, id);
  if (!path) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  int rc = write_file(path, name, head, headlen, body, bodylen, 0, err);
  free(path);
  return rc;
}

static int local_complete(wm_ckpt_backend *b, uint64_t id, const void *manifest, size_t len,
                          int crash, wm_error *err) {
  local_store *s = (local_store *)b;
  char *path = ckpt_path(s, id);
  if (!path) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  int rc = -1;
  /* the parts' renames reach the disk before the MANIFEST's */
  if (fsync_dir(path) != 0) {
    wm_error_set(err, "checkpoint %s: %s", path, strerror(errno));
    goto out;
  }
  if (write_file(path, "MANIFEST", manifest, len, NULL, 0, crash, err) != 0) goto out;
  if (fsync_dir(path) != 0 || fsync_dir(s->dir) != 0) {
    wm_error_set(err, "checkpoint %s: %s", path, strerror(errno));
    goto out;
  }
  rc = 0;
out:
  free(path);
  return rc;
}

static int local_get(wm_ckpt_backend *b, uint64_t id, const char *name, size_t max,
                     uint8_t **data, size_t *len, wm_error *err) {
  *data = NULL;
  *len = 0;
  char *dir = ckpt_path((local_store *)b, id), *path = dir ? join(dir, name) : NULL;
  free(dir);
  if (!path) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  int rc = read_file(path, max, data, len, err);
  free(path);
  return rc;
}

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

/* The ids of the DIR/chk-<20 digits> entries; other names are ignored. */
static int local_list(wm_ckpt_backend *b, uint64_t **ids, size_t *n, wm_error *err) {
  local_store *s = (local_store *)b;
  *ids = NULL;
  *n = 0;
  DIR *d = opendir(s->dir);
  if (!d) {
    wm_error_set(err, "checkpoint directory %s: %s", s->dir, strerror(errno));
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
        *n = 0;
        wm_error_set(err, "out of memory");
        return -1;
      }
      *ids = g;
      cap = nc;
    }
    (*ids)[(*n)++] = id;
  }
  closedir(d);
  return 0;
}

static int local_remove(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  char *p = ckpt_path((local_store *)b, id);
  if (!p) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  remove_tree(p);
  struct stat st;
  int rc = 0;
  if (stat(p, &st) == 0) {
    wm_error_set(err, "cannot remove checkpoint %s", p);
    rc = -1;
  }
  free(p);
  return rc;
}

static void local_free(wm_ckpt_backend *b) {
  local_store *s = (local_store *)b;
  if (!s) return;
  if (s->lock_fd >= 0) close(s->lock_fd); /* releases the lock */
  free(s->dir);
  free(s);
}

static const wm_ckpt_backend_vt local_vt = {
    .begin = local_begin,
    .put = local_put,
    .complete = local_complete,
    .get = local_get,
    .list = local_list,
    .remove = local_remove,
    .free = local_free,
};

wm_ckpt_backend *wm_ckpt_local_open(const char *dir, wm_error *err) {
  if (!dir || !*dir) {
    wm_error_set(err, "checkpoint directory is empty");
    return NULL;
  }
  if (mkdirs(dir) != 0) {
    wm_error_set(err, "checkpoint directory %s: %s", dir, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    wm_error_set(err, "checkpoint directory %s: not a directory", dir);
    return NULL;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    wm_error_set(err, "checkpoint directory %s: %s", dir, strerror(errno));
    return NULL;
  }
  local_store *s = calloc(1, sizeof *s);
  if (!s || !(s->dir = strdup(dir))) {
    free(s);
    wm_error_set(err, "out of memory");
    return NULL;
  }
  s->base.vt = &local_vt;
  s->base.name = s->dir;
  s->lock_fd = -1;
  if (take_lock(s, err) != 0) {
    local_free(&s->base);
    return NULL;
  }
  return &s->base;
}

/* ---- marks: the file DIR/<path>/<name>, holding "ended\n" for ENDED (any bytes count) -------- */

typedef struct local_marks {
  wm_ckpt_marks base;
  char *dir;
} local_marks;

static char *mark_path(const local_marks *m, const char *path, const char *name) {
  char *d = join(m->dir, path), *f = d ? join(d, name) : NULL;
  free(d);
  return f;
}

static int local_mark_get(wm_ckpt_marks *b, const char *path, const char *name, wm_error *err) {
  char *f = mark_path((local_marks *)b, path, name);
  if (!f) return wm_error_set(err, "out of memory");
  struct stat st;
  int rc = stat(f, &st) == 0 ? 1 : errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  if (rc < 0) wm_error_set(err, "%s: %s", f, strerror(errno));
  free(f);
  return rc;
}

static int local_mark_set(wm_ckpt_marks *b, const char *path, const char *name, wm_error *err) {
  local_marks *m = (local_marks *)b;
  char *d = join(m->dir, path);
  if (!d) return wm_error_set(err, "out of memory");
  int rc = 0;
  if (mkdirs(d) != 0) rc = wm_error_set(err, "%s: %s", d, strerror(errno));
  if (rc == 0) {
    char body[64];
    int n = snprintf(body, sizeof body, "%.50s\n", name);
    for (int i = 0; i < n; i++) body[i] = (char)(body[i] >= 'A' && body[i] <= 'Z' ? body[i] + 32 : body[i]);
    rc = write_file(d, name, body, (size_t)n, NULL, 0, 0, err);
  }
  if (rc == 0 && fsync_dir(d) != 0) rc = wm_error_set(err, "%s: %s", d, strerror(errno));
  free(d);
  return rc;
}

static void local_marks_free(wm_ckpt_marks *b) {
  local_marks *m = (local_marks *)b;
  if (!m) return;
  free(m->dir);
  free(m);
}

static const wm_ckpt_marks_vt local_marks_vt = {
    .get = local_mark_get, .set = local_mark_set, .free = local_marks_free};

wm_ckpt_marks *wm_ckpt_local_marks(const char *dir, wm_error *err) {
  if (!dir || !*dir) {
    wm_error_set(err, "checkpoint directory is empty");
    return NULL;
  }
  local_marks *m = calloc(1, sizeof *m);
  if (!m || !(m->dir = strdup(dir))) {
    free(m);
    wm_error_set(err, "out of memory");
    return NULL;
  }
  m->base.vt = &local_marks_vt;
  return &m->base;
}
