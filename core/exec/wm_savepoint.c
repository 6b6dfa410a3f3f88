/* Savepoints (wm_savepoint.h). */
#include "exec/wm_savepoint.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/wm_buf.h"
#include "graph/wm_state.h"

static int is_url(const char *p) { return strstr(p, "://") != NULL; }

/* ---- writing one ----------------------------------------------------------------------- */

int wm_savepoint_write(wm_ckpt_store *from, const char *from_name, const char *target,
                       uint64_t *id, wm_error *err) {
  wm_ckpt_reader *r = NULL;
  wm_error we;
  wm_error_clear(&we);
  int got = wm_ckpt_open_latest(from, NULL, NULL, &r, &we);
  if (got <= 0) {
    return wm_error_set(err, "%s", got < 0 ? we.msg : "there is no complete checkpoint to copy");
  }
  *id = wm_ckpt_reader_id(r);
  wm_ckpt_store *to = wm_ckpt_store_open(target, 1, &we);
  if (!to) {
    wm_error_set(err, "%s", we.msg);
    wm_ckpt_reader_free(r);
    return -1;
  }
  int rc = -1;
  wm_ckpt_writer *w = NULL;
  wm_buf meta;
  wm_buf_init(&meta);
  if (wm_ckpt_next_id(to) != 1) {
    wm_error_set(err, "%s already holds a checkpoint or a savepoint: give the savepoint a "
                      "place of its own", target);
    goto out;
  }
  if (!(w = wm_ckpt_begin(to, *id, &we))) {
    wm_error_set(err, "%s", we.msg);
    goto out;
  }
  for (size_t i = 0; i < wm_ckpt_reader_nparts(r); i++) {
    const char *name = wm_ckpt_reader_part_name(r, i);
    uint8_t *data = NULL;
    size_t len = 0;
    int g = wm_ckpt_get(r, name, &data, &len, &we);
    if (g != 1) {
      wm_error_set(err, "checkpoint %" PRIu64 ": %s", *id, g == 0 ? "a part is missing" : we.msg);
      free(data);
      goto out;
    }
    int p = wm_ckpt_put(w, name, data, len, &we);
    free(data);
    if (p != 0) {
      wm_error_set(err, "%s", we.msg);
      goto out;
    }
  }
  size_t mlen;
  const char *m = wm_ckpt_reader_meta(r, &mlen);
  wm_buf_add(&meta, m, mlen);
  wm_buf_adds(&meta, "savepoint ");
  wm_buf_add_int(&meta, (int64_t)*id);
  wm_buf_addc(&meta, ' ');
  for (const char *p = from_name; *p; p++) wm_buf_addc(&meta, *p == '\n' ? ' ' : *p);
  wm_buf_addc(&meta, '\n');
  if (meta.oom) {
    wm_error_set(err, "out of memory");
    goto out;
  }
  rc = wm_ckpt_commit(w, meta.data, meta.len, wm_ckpt_reader_created_ms(r), &we);
  if (rc != 0) wm_error_set(err, "%s", we.msg);
  w = NULL; /* commit frees it */
out:
  if (w) wm_ckpt_abort(w);
  wm_buf_free(&meta);
  wm_ckpt_reader_free(r);
  wm_ckpt_store_free(to);
  return rc;
}

/* ---- reading one ----------------------------------------------------------------------- */

typedef struct warns {
  char text[900];
} warns;

static void on_warn(void *ud, const char *message) {
  warns *w = ud;
  size_t n = strlen(w->text);
  snprintf(w->text + n, sizeof w->text - n, "%s%s", n ? "; " : "", message);
}

int wm_savepoint_open(const char *path, wm_ckpt_store **store, wm_ckpt_reader **out,
                      wm_error *err) {
  *store = NULL;
  *out = NULL;
  struct stat st;
  if (!is_url(path) && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
    return wm_error_set(err, "savepoint %s: %s", path,
                        errno == ENOENT || !S_ISDIR(st.st_mode) ? "no such directory"
                                                                : strerror(errno));
  }
  wm_error we;
  wm_error_clear(&we);
  wm_ckpt_store *s = wm_ckpt_store_open(path, 1, &we);
  if (!s) {
    return wm_error_set(err, "savepoint %s: %s", path, we.msg);
  }
  warns w = {{0}};
  int got = wm_ckpt_open_latest(s, on_warn, &w, out, &we);
  if (got != 1) {
    wm_error_set(err, "savepoint %s cannot be used: %s", path,
                 got < 0 ? we.msg : w.text[0] ? w.text : "it holds no savepoint (no complete checkpoint)");
    wm_ckpt_store_free(s);
    return -1;
  }
  *store = s;
  return 0;
}

/* ---- fitting one to a changed job ------------------------------------------------------ */

/* The savepoint's operator at place `place` (its "op" line): kind, uid and name, each with
 * its length; 0 when there is none. */
typedef struct spop {
  const char *kind, *uid, *name;
  int kl, ul, nl;
} spop;

static int meta_op(const char *meta, size_t mlen, long place, const char *uid, spop *o) {
  const char *p = meta, *end = meta + mlen;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (le - p > 3 && !memcmp(p, "op ", 3)) {
      char *q;
      long pl = strtol(p + 3, &q, 10);
      const char *k = q + 1, *ke = k < le ? memchr(k, ' ', (size_t)(le - k)) : NULL;
      const char *u = ke ? ke + 1 : NULL, *ue = u && u < le ? memchr(u, ' ', (size_t)(le - u)) : NULL;
      if (ue) {
        *o = (spop){k, u, ue + 1, (int)(ke - k), (int)(ue - u), (int)(le - ue - 1)};
        if (uid ? ((size_t)o->ul == strlen(uid) && !memcmp(u, uid, (size_t)o->ul)) : pl == place)
          return 1;
      }
    }
    p = le + 1;
  }
  return 0;
}

typedef struct plist {
  wm_part *v;
  size_t n, cap;
  int oom;
} plist;

static int plist_add(plist *l, const char *name, const void *data, size_t len) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    wm_part *v = realloc(l->v, cap * sizeof *v);
    if (!v) return l->oom = 1, -1;
    l->v = v;
    l->cap = cap;
  }
  char *nm = strdup(name);
  uint8_t *d = malloc(len ? len : 1);
  if (!nm || !d) {
    free(nm);
    free(d);
    return l->oom = 1, -1;
  }
  if (len) memcpy(d, data, len);
  wm_part *pt = &l->v[l->n++];
  pt->name = nm;
  pt->data = d;
  pt->len = len;
  return 0;
}

/* The part of a freshly built operator, as wm_ctx_snapshot writes it (graph/wm_snapshot.h):
 * what an operator that the savepoint has no state for starts from. Only such operators are
 * snapshot: a snapshot may act (a sink makes its file durable). */
static int fresh_part(wm_op *op, const wm_codec_host *codec, wm_buf *b) {
  wm_buf g;
  wm_buf_init(&g);
  wm_buf_clear(b);
  int rc = wm_op_snapshot_graph(op, &g);
  if (rc == WM_OK) {
    wm_codec_put_uvar(b, g.len);
    wm_buf_add(b, g.data, g.len);
    wm_encoder enc;
    wm_encoder_init(&enc);
    wm_state_io io = {.out = b, .enc = &enc, .codec = codec};
    rc = wm_op_snapshot(op, &io);
    wm_encoder_free(&enc);
  }
  if (rc == WM_OK && (b->oom || g.oom)) rc = wm_ctx_error(op->ctx, "out of memory restoring a savepoint");
  wm_buf_free(&g);
  return rc;
}

void wm_savepoint_parts_free(wm_part *parts, size_t n) {
  for (size_t i = 0; parts && i < n; i++) {
    free((void *)parts[i].name);
    free((void *)parts[i].data);
  }
  free(parts);
}

static const wm_part *find(const wm_part *parts, size_t np, const char *name, size_t *k) {
  for (size_t i = 0; i < np; i++)
    if (!strcmp(parts[i].name, name)) {
      *k = i;
      return &parts[i];
    }
  return NULL;
}

/* Whether an operator part holds state of its own (bytes after its graph section). */
static int own_state(const wm_part *p) {
  const uint8_t *q = p->data, *end = p->data + p->len;
  uint64_t glen;
  if (wm_codec_get_uvar(&q, end, &glen) != 0 || glen > (uint64_t)(end - q)) return 1;
  return (size_t)(end - q) > glen;
}

/* The operators the plan adds between the user's (exchanges of key_by and rebalance, the
 * channels between threads): their state says where records go, and no uid can be given to
 * them, so a savepoint's part of one that the new plan places elsewhere is not refused. */
static int routing(const char *kind, int kl) {
  static const char *const kinds[] = {"exchange", "send", "receive"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if ((size_t)kl == strlen(kinds[i]) && !memcmp(kind, kinds[i], (size_t)kl)) return 1;
  return 0;
}

/* The savepoint part for op (place i) of this job, by uid or by place and kind; NULL. */
static const wm_part *match(const wm_op *op, size_t i, const char *name, const char *meta,
                            size_t mlen, const wm_part *parts, size_t np, size_t *k) {
  const wm_part *p = find(parts, np, name, k);
  if (!p || op->uid) return p;
  spop o;
  if (!meta_op(meta, mlen, (long)i, NULL, &o)) return NULL;
  if (!(o.ul == 1 && o.uid[0] == '-')) return NULL; /* it had a uid: that part is its own */
  size_t kl = strlen(op->vt->kind);
  return (size_t)o.kl == kl && !memcmp(o.kind, op->vt->kind, kl) ? p : NULL;
}

int wm_savepoint_fit(wm_ctx *ctx, wm_exec *exec, int instance, const wm_codec_host *codec,
                     const char *meta, size_t mlen, const wm_part *parts, size_t np,
                     int allow_non_restored, wm_part **out, size_t *n, int *fresh, wm_buf *news) {
  *out = NULL;
  *n = 0;
  *fresh = 0;
  plist res = {0};
  wm_buf pos;
  wm_buf_init(&pos);
  int rc = WM_OK;
  unsigned char *used = calloc(np ? np : 1, 1);
  if (!used) return wm_ctx_error(ctx, "out of memory restoring a savepoint");
  for (size_t i = 0; i < ctx->nops && rc == WM_OK && !res.oom; i++) {
    wm_op *op = ctx->ops[i];
    char name[270];
    size_t k;
    if (wm_op_part_name(op, i, instance, name, sizeof name) != 0) {
      rc = wm_ctx_error(ctx, "the part name of operator '%s' is too long", op->name);
      break;
    }
    const wm_part *p = match(op, i, name, meta, mlen, parts, np, &k);
    if (p) {
      used[k] = 1;
      plist_add(&res, name, p->data, p->len);
    } else { /* new to the savepoint: it starts empty */
      (*fresh)++;
      if (news && !routing(op->vt->kind, (int)strlen(op->vt->kind))) {
        wm_buf_adds(news, news->len ? ", '" : "'");
        wm_buf_adds(news, op->name);
        wm_buf_addc(news, '\'');
      }
      if ((rc = fresh_part(op, codec, &pos)) == WM_OK) plist_add(&res, name, pos.data, pos.len);
    }
  }
  /* the sources' positions: src-<its operator's part name> */
  for (int s = 0; s < wm_exec_nsources(exec) && rc == WM_OK && !res.oom; s++) {
    wm_op *src = wm_exec_source_op(exec, s);
    size_t i = 0;
    while (i < ctx->nops && ctx->ops[i] != src) i++;
    char name[270] = "src-";
    if (wm_op_part_name(src, i, instance, name + 4, sizeof name - 4) != 0) {
      rc = wm_ctx_error(ctx, "the part name of source '%s' is too long", src->name);
      break;
    }
    size_t k, kop;
    const wm_part *p = i < ctx->nops && match(src, i, name + 4, meta, mlen, parts, np, &kop)
                           ? find(parts, np, name, &k) : NULL;
    if (p) {
      used[k] = 1;
      plist_add(&res, name, p->data, p->len);
    } else {
      wm_buf_clear(&pos);
      if ((rc = wm_exec_snapshot_source(exec, src, &pos)) != WM_OK) break;
      plist_add(&res, name, pos.data ? pos.data : "", pos.len);
    }
  }
  /* what was in flight between threads, as it was */
  for (size_t k = 0; k < np && rc == WM_OK && !res.oom; k++)
    if (!strncmp(parts[k].name, "chan-", 5)) {
      used[k] = 1;
      plist_add(&res, parts[k].name, parts[k].data, parts[k].len);
    }
  if (rc == WM_OK && (res.oom || pos.oom)) rc = wm_ctx_error(ctx, "out of memory restoring a savepoint");
  /* the savepoint's state that no operator of this job takes (this instance's parts) */
  char suffix[32];
  snprintf(suffix, sizeof suffix, ".%d", instance);
  size_t sl = strlen(suffix);
  for (size_t k = 0; k < np && rc == WM_OK; k++) {
    const char *nm = parts[k].name;
    size_t len = strlen(nm);
    int src = !strncmp(nm, "src-", 4);
    const char *base = src ? nm + 4 : nm;
    if (used[k] || len <= sl || strcmp(nm + len - sl, suffix) != 0) continue;
    if (strncmp(base, "op-", 3) != 0 && strncmp(base, "uid-", 4) != 0) continue;
    if (allow_non_restored || (!src && !own_state(&parts[k]))) continue; /* nothing of its own */
    spop o = {0};
    int isuid = !strncmp(base, "uid-", 4);
    char uid[260] = "";
    if (isuid) snprintf(uid, sizeof uid, "%.*s", (int)(strlen(base) - 4 - sl), base + 4);
    int have = meta_op(meta, mlen, isuid ? -1 : strtol(base + 3, NULL, 10), isuid ? uid : NULL, &o);
    if (have && !isuid && routing(o.kind, o.kl)) continue; /* where records went, not state */
    char what[600];
    if (isuid)
      snprintf(what, sizeof what, "the operator with uid '%s'%s%.*s%s", uid, have ? " (" : "",
               have ? o.nl : 0, have ? o.name : "", have ? ")" : "");
    else
      snprintf(what, sizeof what, "the operator at place %ld of the savepoint's job, without a uid%s%.*s%s",
               strtol(base + 3, NULL, 10), have ? " (" : "", have ? o.nl : 0, have ? o.name : "",
               have ? ")" : "");
    rc = wm_ctx_error(ctx, "the savepoint holds the %s of %s, which this job does not have "
                           "(part %s): run with --allow-non-restored-state to start without it",
                      src ? "position" : "state", what, nm);
  }
  free(used);
  wm_buf_free(&pos);
  if (rc != WM_OK) {
    wm_savepoint_parts_free(res.v, res.n);
    return rc;
  }
  *out = res.v;
  *n = res.n;
  return WM_OK;
}

/* ---- asking a running job ---------------------------------------------------------------- */

static char *path_in(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Reads a small file whole (at most 8 KiB) into a NUL-terminated malloc'ed string. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *b = malloc(8193);
  size_t n = b ? fread(b, 1, 8192, f) : 0;
  fclose(f);
  if (b) b[n] = '\0';
  return b;
}

/* Writes text to dir/name through a temporary file and a rename (readers never see half). */
static int write_atomic(const char *dir, const char *name, const char *text) {
  char *p = path_in(dir, name), *t = p ? path_in(dir, "SAVEPOINT.tmp") : NULL;
  int rc = -1;
  FILE *f = t ? fopen(t, "w") : NULL;
  if (f) {
    int ok = fputs(text, f) >= 0;
    if (fclose(f) == 0 && ok && rename(t, p) == 0) rc = 0;
  }
  free(p);
  free(t);
  return rc;
}

/* The value after "key " on a line of s, copied (malloc'ed); NULL. */
static char *field(const char *s, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, key, kl) != 0 || p[kl] != ' ') continue;
    size_t n = strcspn(p + kl + 1, "\n");
    char *v = malloc(n + 1);
    if (v) {
      memcpy(v, p + kl + 1, n);
      v[n] = '\0';
    }
    return v;
  }
  return NULL;
}

static int take_request(const char *dir, char **target, char **nonce, wm_error *err) {
  *target = *nonce = NULL;
  char *p = path_in(dir, WM_SAVEPOINT_REQUEST);
  char *s = p ? slurp(p) : NULL;
  if (p) unlink(p);
  free(p);
  if (!s) return 0;
  int rc = 1;
  if (strncmp(s, "wmrun savepoint request 1\n", 26) != 0 || !(*target = field(s, "target")) ||
      !(*nonce = field(s, "nonce")) || !**target) {
    wm_error_set(err, "%s/%s is not a savepoint request of this wmrun", dir, WM_SAVEPOINT_REQUEST);
    free(*target);
    free(*nonce);
    *target = *nonce = NULL;
    rc = -1;
  }
  free(s);
  return rc;
}

static int answer(const char *dir, const char *nonce, int ok, const char *text) {
  size_t n = strlen(text) + strlen(nonce) + 64;
  char *b = malloc(n);
  if (!b) return -1;
  snprintf(b, n, "nonce %s\n%s ", nonce, ok ? "ok" : "error");
  size_t k = strlen(b);
  for (const char *p = text; *p && k + 2 < n; p++) b[k++] = *p == '\n' ? ' ' : *p;
  b[k++] = '\n';
  b[k] = '\0';
  int rc = write_atomic(dir, WM_SAVEPOINT_RESULT, b);
  free(b);
  return rc;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int wm_savepoint_request(const char *dir, const char *target, int64_t timeout_ms, char *msg,
                         size_t msglen) {
  if (is_url(dir)) {
    snprintf(msg, msglen, "%s: a running job is found by its local checkpoint directory (the "
                          "process that holds its LOCK); for a job that checkpoints to a server, "
                          "use --stop-with-savepoint", dir);
    return -1;
  }
  char *lockp = path_in(dir, "LOCK");
  char *lock = lockp ? slurp(lockp) : NULL;
  free(lockp);
  if (!lock) {
    snprintf(msg, msglen, "no job has run on checkpoint directory %s (it has no LOCK file): give "
                          "the --checkpoint-dir of the running job", dir);
    return -1;
  }
  char *pids = field(lock, "pid"), host[256] = "";
  long pid = pids ? strtol(pids, NULL, 10) : 0;
  const char *h = strstr(lock, " host ");
  char lockhost[256] = "";
  if (h) snprintf(lockhost, sizeof lockhost, "%.*s", (int)strcspn(h + 6, "\n"), h + 6);
  free(pids);
  free(lock);
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  if (pid <= 0 || kill((pid_t)pid, 0) != 0 || (lockhost[0] && strcmp(lockhost, host) != 0)) {
    if (pid > 0 && lockhost[0] && strcmp(lockhost, host) != 0)
      snprintf(msg, msglen, "the job on %s runs on host %s (pid %ld), not on this one: run wmrun "
                            "savepoint there", dir, lockhost, pid);
    else
      snprintf(msg, msglen, "no job is running on checkpoint directory %s (its last one was pid %ld)",
               dir, pid);
    return -1;
  }
  /* the job may run in another directory: a relative target is made absolute */
  char abs[8192], cwd[4096];
  if (is_url(target) || target[0] == '/' || !getcwd(cwd, sizeof cwd))
    snprintf(abs, sizeof abs, "%s", target);
  else
    snprintf(abs, sizeof abs, "%s/%s", cwd, target);
  char nonce[64], req[8400];
  snprintf(nonce, sizeof nonce, "%ld-%lld", (long)getpid(), (long long)mono_ms());
  snprintf(req, sizeof req, "wmrun savepoint request 1\nnonce %s\ntarget %s\n", nonce, abs);
  if (write_atomic(dir, WM_SAVEPOINT_REQUEST, req) != 0) {
    snprintf(msg, msglen, "cannot write %s/%s: %s", dir, WM_SAVEPOINT_REQUEST, strerror(errno));
    return -1;
  }
  if (kill((pid_t)pid, SIGUSR2) != 0) {
    snprintf(msg, msglen, "cannot signal the job (pid %ld): %s", pid, strerror(errno));
    return -1;
  }
  char *resp = path_in(dir, WM_SAVEPOINT_RESULT);
  int64_t until = mono_ms() + timeout_ms;
  int rc = -1;
  snprintf(msg, msglen, "the job (pid %ld) did not answer within %.1f s (is it running with "
                        "--checkpoint-dir %s? a savepoint waits for a checkpoint)", pid,
           (double)timeout_ms / 1000.0, dir);
  while (resp) {
    char *s = slurp(resp);
    char *nn = s ? field(s, "nonce") : NULL;
    if (nn && !strcmp(nn, nonce)) {
      char *okv = field(s, "ok"), *ev = field(s, "error");
      snprintf(msg, msglen, "%s", okv ? okv : ev ? ev : "the job's answer was not understood");
      rc = okv ? 0 : -1;
      free(okv);
      free(ev);
      free(nn);
      free(s);
      unlink(resp);
      break;
    }
    free(nn);
    free(s);
    if (kill((pid_t)pid, 0) != 0) {
      snprintf(msg, msglen, "the job (pid %ld) ended before it wrote the savepoint", pid);
      break;
    }
    if (mono_ms() >= until) break;
    sleep_ms(20);
  }
  free(resp);
  return rc;
}

/* ---- the coordinator's side (exec/wm_ckptrun.c) ------------------------------------------ */

int wm_savepoint_next_request(const char *dir, char **target, char **nonce, FILE *log) {
  char *t, *n;
  wm_error err;
  int got = take_request(dir, &t, &n, &err);
  if (got < 0) fprintf(log, "wmrun: warning: %s\n", err.msg);
  if (got <= 0) return 0;
  if (*target && answer(dir, *nonce, 0, "another request came first") != 0)
    fprintf(log, "wmrun: warning: cannot write the answer to wmrun savepoint in %s\n", dir);
  free(*target);
  free(*nonce);
  *target = t;
  *nonce = n;
  return 1;
}

void wm_savepoint_serve(wm_ckpt_store *store, const char *dir, const char *job, char **target,
                        char **nonce, FILE *log) {
  uint64_t id;
  char msg[WM_ERROR_MSG];
  wm_error err;
  int ok = wm_savepoint_write(store, dir, *target, &id, &err) == 0;
  if (ok)
    snprintf(msg, sizeof msg, "savepoint of checkpoint %" PRIu64 " of %s written to %s", id,
             job ? job : "the job", *target);
  else
    snprintf(msg, sizeof msg, "savepoint to %s failed: %.*s", *target, WM_ERROR_MSG - 100, err.msg);
  fprintf(log, "wmrun: %s%s\n", ok ? "" : "warning: ", msg);
  if (answer(dir, *nonce, ok, msg) != 0)
    fprintf(log, "wmrun: warning: cannot write the answer to wmrun savepoint in %s\n", dir);
  free(*target);
  free(*nonce);
  *target = *nonce = NULL;
}

int wm_savepoint_stop(wm_ckpt_store *store, const char *dir, const char *target, uint64_t ckid,
                      FILE *log, wm_error *err) {
  uint64_t id;
  wm_error why;
  if (wm_savepoint_write(store, dir, target, &id, &why) != 0)
    return wm_error_set(err, "stopped by SIGTERM with checkpoint %" PRIu64 ", but its savepoint "
                             "could not be written: %s", ckid, why.msg);
  fprintf(log, "wmrun: stopped by SIGTERM with checkpoint %" PRIu64 " in %s and savepoint %s "
               "(wmrun --from-savepoint %s resumes a changed job from it)\n", ckid, dir, target, target);
  return 0;
}

int wm_savepoint_pick(const char *from, const char *dir, int got, wm_ckpt_reader **r,
                      wm_ckpt_store **sps, wm_error *err) {
  if (got == 1) { /* a restart of a run that started from a savepoint goes on from its own */
    size_t mlen;
    const char *meta = wm_ckpt_reader_meta(*r, &mlen);
    for (const char *p = meta, *end = meta + mlen; p < end;) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      if ((size_t)(end - p) > 15 && !memcmp(p, "from-savepoint ", 15)) return 0;
      p = nl ? nl + 1 : end;
    }
    return wm_error_set(err, "cannot resume from savepoint %s: %s holds checkpoint %" PRIu64
                             " of a run that did not start from a savepoint: run with --fresh "
                             "to drop its checkpoints, or give another --checkpoint-dir",
                        from, dir, wm_ckpt_reader_id(*r));
  }
  return wm_savepoint_open(from, sps, r, err) == 0 ? 1 : -1;
}

int wm_savepoint_refit(wm_ctx *ctx, wm_exec *exec, const wm_codec_host *codec, const char *meta,
                       size_t mlen, wm_part **parts, size_t *np, int allow_non_restored,
                       const char *name, FILE *log) {
  wm_part *fit;
  size_t nf;
  int fresh;
  wm_buf news;
  wm_buf_init(&news);
  if (wm_savepoint_fit(ctx, exec, 0, codec, meta, mlen, *parts, *np, allow_non_restored, &fit,
                       &nf, &fresh, &news) != WM_OK) {
    wm_buf_free(&news);
    return WM_ERR;
  }
  for (size_t i = 0; i < *np; i++) free((void *)(*parts)[i].data);
  free(*parts);
  *parts = fit;
  *np = nf;
  if (news.len && !news.oom)
    fprintf(log, "wmrun: savepoint %s holds no state of %.*s (new to the job: started empty)\n",
            name, (int)news.len, news.data);
  wm_buf_free(&news);
  return WM_OK;
}

/* ---- the same job at another parallelism ------------------------------------------------ */

/* One plan operator of a signature: its kind and uid (an instance's ".k" dropped), "-"
 * without one, and its name (for messages). */
typedef struct sigop {
  char kind[64], uid[200], name[200];
} sigop;

/* The role of the savepoint's operator with part name `pname` (its "part" line; 0 when it has
 * none: the executor's own operators). */
static int part_role(const char *meta, size_t mlen, const char *pname) {
  size_t pl = strlen(pname);
  for (const char *p = meta, *end = meta + mlen; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if ((size_t)(le - p) > 5 + pl && !memcmp(p, "part ", 5) && !memcmp(p + 5, pname, pl) &&
        p[5 + pl] == ' ') {
      unsigned long node;
      int role = 0;
      char line[128];
      snprintf(line, sizeof line, "%.*s", (int)(le - p - 5 - (ptrdiff_t)pl) < 127
                                               ? (int)(le - p - 5 - (ptrdiff_t)pl) : 127,
               p + 5 + pl);
      return sscanf(line, " %lu %d", &node, &role) == 2 ? role : 0;
    }
    p = le + 1;
  }
  return 0;
}

/* The " k/n" an instance's name ends with: k (1-based) and n; 0 when there is none. */
static int inst_of(const char *name, size_t len, int *n) {
  const char *p = name + len;
  while (p > name && p[-1] >= '0' && p[-1] <= '9') p--;
  if (p == name + len || p == name || p[-1] != '/') return 0;
  *n = atoi(p);
  const char *q = --p;
  while (q > name && q[-1] >= '0' && q[-1] <= '9') q--;
  if (q == p || q == name || q[-1] != ' ') return 0;
  return atoi(q);
}

static void sig_add(sigop *v, size_t *n, size_t cap, const char *kind, int kl, const char *uid,
                    int ul, const char *name, int nl) {
  if (*n >= cap) {
    (*n)++; /* counted: more than cap differs from any plan of cap */
    return;
  }
  snprintf(v[*n].kind, sizeof v[*n].kind, "%.*s", kl, kind);
  snprintf(v[*n].uid, sizeof v[*n].uid, "%.*s", ul, uid);
  int of, inst = inst_of(name, (size_t)nl, &of);
  if (inst) /* " k/n": the instance's, not the operator's */
    while (nl > 0 && name[--nl] != ' ') {
    }
  snprintf(v[*n].name, sizeof v[*n].name, "%.*s", nl, name);
  (*n)++;
}

/* The savepoint's plan: its "op" lines (thread 1's), the executor's own operators and every
 * instance after the first left out. */
static size_t sig_meta(const char *meta, size_t mlen, sigop *v, size_t cap) {
  size_t n = 0;
  for (const char *p = meta, *end = meta + mlen; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (le - p > 3 && !memcmp(p, "op ", 3)) {
      char *q;
      long place = strtol(p + 3, &q, 10);
      const char *k = q + 1, *ke = k < le ? memchr(k, ' ', (size_t)(le - k)) : NULL;
      const char *u = ke ? ke + 1 : NULL, *ue = u && u < le ? memchr(u, ' ', (size_t)(le - u)) : NULL;
      int inst = 0, of = 1;
      if (ue) inst = inst_of(ue + 1, (size_t)(le - ue - 1), &of);
      if (ue && !routing(k, (int)(ke - k)) && inst <= 1) {
        char pname[260];
        int ul = (int)(ue - u);
        int plain = ul == 1 && u[0] == '-';
        if (plain)
          snprintf(pname, sizeof pname, "op-%ld.0", place);
        else
          snprintf(pname, sizeof pname, "uid-%.*s.0", ul < 200 ? ul : 200, u);
        if (!plain && inst == 1 && of > 1) { /* "id.1": the first instance's */
          int d = ul;
          while (d > 0 && u[d - 1] != '.') d--;
          if (d > 0) ul = d - 1;
        }
        if (part_role(meta, mlen, pname) == WM_ROLE_MAIN)
          sig_add(v, &n, cap, k, (int)(ke - k), u, ul, ue + 1, (int)(le - ue - 1));
      }
    }
    p = le + 1;
  }
  return n;
}

/* This job's plan, as sig_meta reads the savepoint's. */
static size_t sig_ctx(const wm_ctx *ctx, sigop *v, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < ctx->nops; i++) {
    const wm_op *op = ctx->ops[i];
    const char *kind = op->vt->kind ? op->vt->kind : "?";
    if (routing(kind, (int)strlen(kind)) || op->subtask != 0 || op->role != WM_ROLE_MAIN) continue;
    const char *uid = op->uid ? op->uid : "-";
    int ul = (int)strlen(uid);
    const char *dot = strrchr(uid, '.');
    if (op->uid && op->nsub > 1 && dot) ul = (int)(dot - uid);
    const char *name = op->name ? op->name : "";
    sig_add(v, &n, cap, kind, (int)strlen(kind), uid, ul, name, (int)strlen(name));
  }
  return n;
}

int wm_savepoint_same_plan(const wm_ctx *ctx, const char *meta, size_t mlen, char *diff,
                           size_t dlen) {
  enum { CAP = 256 };
  sigop *a = calloc(2 * CAP, sizeof *a);
  if (!a) return -1;
  sigop *b = a + CAP;
  size_t na = sig_meta(meta, mlen, a, CAP), nb = sig_ctx(ctx, b, CAP);
  int same = na == nb && na <= CAP;
  for (size_t i = 0; same && i < na; i++)
    same = !strcmp(a[i].kind, b[i].kind) && !strcmp(a[i].uid, b[i].uid);
  if (!same) {
    size_t i;
    for (i = 0; i < na && i < nb && i < CAP; i++)
      if (strcmp(a[i].kind, b[i].kind) || strcmp(a[i].uid, b[i].uid)) break;
    if (i < na && i < nb && i < CAP)
      snprintf(diff, dlen, "operator %zu of the savepoint's job is %s, of this job %s", i + 1,
               a[i].name, b[i].name);
    else if (i < nb && i < CAP)
      snprintf(diff, dlen, "this job has %s, which the savepoint's job has not", b[i].name);
    else if (i < na && i < CAP)
      snprintf(diff, dlen, "the savepoint's job has %s, which this job has not", a[i].name);
    else
      snprintf(diff, dlen, "it has %zu operators, this job %zu", na, nb);
  }
  free(a);
  return same;
}

int wm_savepoint_parallelism(const char *meta, size_t mlen) {
  int p = 1;
  for (const char *q = meta, *end = meta + mlen; q < end;) {
    const char *nl = memchr(q, '\n', (size_t)(end - q));
    const char *le = nl ? nl : end;
    if (le - q > 5 && !memcmp(q, "part ", 5)) {
      const char *s = le; /* NSUB: the last field */
      while (s > q && s[-1] != ' ') s--;
      int n = atoi(s);
      if (n > p) p = n;
    }
    q = le + 1;
  }
  return p;
}

int wm_savepoint_watch(uv_loop_t *loop, uv_signal_t *h, int *open, uv_signal_cb cb, void *ud) {
  int rc = uv_signal_init(loop, h);
  if (rc != 0) return WM_ERR;
  *open = 1;
  h->data = ud;
  rc = uv_signal_start(h, cb, SIGUSR2);
  uv_unref((uv_handle_t *)h);
  return rc == 0 ? WM_OK : WM_ERR;
}
