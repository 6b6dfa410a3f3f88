/* Checkpoint storage (core/state/wm_ckpt.c): round trip, retention, and every way a
 * checkpoint on disk can be unfinished or damaged. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/wm_exec.h"
#include "graph/wm_state.h"
#include "io/wm_io.h"
#include "state/wm_ckpt.h"
#include "time/wm_time.h"
#include "test.h"

typedef struct warnings {
  int n;
  char first[1024], last[1024];
} warnings;

static void on_warn(void *ud, const char *msg) {
  warnings *w = ud;
  if (w->n++ == 0) snprintf(w->first, sizeof w->first, "%s", msg);
  snprintf(w->last, sizeof w->last, "%s", msg);
}

static char *tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/wm-ckpt-XXXXXX", base && *base ? base : "/tmp");
  char *d = mkdtemp(tmpl);
  return d ? strdup(d) : NULL;
}

static void rm_rf(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static int count_checkpoints(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) n += strncmp(e->d_name, "chk-", 4) == 0;
  if (d) closedir(d);
  return n;
}

/* Commits checkpoint id with parts "a" = text, "b" = "B", meta = "meta<id>". */
static int commit_one(wm_ckpt_store *s, uint64_t id, const char *text) {
  wm_error err;
  char meta[32];
  wm_ckpt_writer *w = wm_ckpt_begin(s, id, &err);
  if (!w) return -1;
  if (wm_ckpt_put(w, "a", text, strlen(text), &err) != 0 ||
      wm_ckpt_put(w, "b", "B", 1, &err) != 0) {
    wm_ckpt_abort(w);
    return -1;
  }
  snprintf(meta, sizeof meta, "meta%llu", (unsigned long long)id);
  return wm_ckpt_commit(w, meta, strlen(meta), 1000 + id, &err);
}

static char *part_path(const char *dir, uint64_t id, const char *name) {
  static char buf[1024]; /* test-only scratch */
  snprintf(buf, sizeof buf, "%s/chk-%020llu/%s", dir, (unsigned long long)id, name);
  return buf;
}

static void flip_byte(const char *path, long off) {
  FILE *f = fopen(path, "r+b");
  if (!f) return;
  fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
  int c = fgetc(f);
  fseek(f, -1, SEEK_CUR);
  fputc(c ^ 0x40, f);
  fclose(f);
}

/* Opens the latest and returns its id (0 when none), with the warnings in *w. */
static uint64_t latest_id(wm_ckpt_store *s, warnings *w) {
  wm_ckpt_reader *r;
  wm_error err;
  memset(w, 0, sizeof *w);
  int rc = wm_ckpt_open_latest(s, on_warn, w, &r, &err);
  if (rc != 1) return 0;
  uint64_t id = wm_ckpt_reader_id(r);
  wm_ckpt_reader_free(r);
  return id;
}

/* ---- write_lines's snapshot: the identity of its file (issue 34 item 6) ------------------ */

static void put_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static char *get_text(const char *path) {
  static char buf[4096];
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  return buf;
}

/* A write_lines sink on path, restored from state (when given) and then snapshotted into
 * snap (when given). The restore's result; the context's message in err. */
static int sink_cycle(const char *path, const void *state, size_t len, wm_buf *snap, char *err,
                      size_t errlen) {
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config ecfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &ecfg);
  wm_write_config wc = {.path = path, .format = WM_FMT_TEXT};
  wm_op *op = e ? wm_write_lines_new(wm_exec_host(e), "sink", &wc) : NULL;
  int rc = WM_ERR;
  if (op) {
    wm_state_io io = {.out = snap, .data = state, .len = len};
    rc = state ? op->vt->restore(op, &io) : WM_OK;
    if (rc == WM_OK && snap) rc = op->vt->snapshot(op, &io);
  }
  size_t n = strlen(wm_ctx_errtext(&ctx));
  if (n >= errlen) n = errlen - 1;
  memcpy(err, wm_ctx_errtext(&ctx), n);
  err[n] = '\0';
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  return rc;
}

static void test_sink_identity(const char *dir) {
  char path[600], err[1024];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  /* a checkpoint of version 1 (before the identity: type and length) is still restored: the
   * file is cut to the length it gives */
  put_text(path, "hello world\nEXTRA after the checkpoint\n");
  static const uint8_t v1[] = {1, 1, 12};
  wm_buf snap;
  wm_buf_init(&snap);
  CHECK_I64(sink_cycle(path, v1, sizeof v1, &snap, err, sizeof err), WM_OK);
  CHECK_STR(get_text(path), "hello world\n");
  /* its snapshot is of version 2 and restores into the same file */
  CHECK(snap.len > 3 && (uint8_t)snap.data[0] == 2);
  char err2[1024];
  CHECK_I64(sink_cycle(path, snap.data, snap.len, NULL, err2, sizeof err2), WM_OK);
  CHECK_STR(get_text(path), "hello world\n");
  /* another file at the path (the old one removed: it may even get its inode back), longer
   * than the checkpoint's length: refused by name, left as it was */
  CHECK_I64(unlink(path), 0);
  put_text(path, "somebody else's precious file, longer than twelve bytes\n");
  CHECK_I64(sink_cycle(path, snap.data, snap.len, NULL, err, sizeof err), WM_ERR);
  CHECK(strstr(err, path) != NULL);
  CHECK(strstr(err, "is not the file the checkpoint wrote") != NULL);
  CHECK(strstr(err, "--fresh") != NULL);
  CHECK_STR(get_text(path), "somebody else's precious file, longer than twelve bytes\n");
  /* the same file (inode) with other bytes before the checkpoint's length: refused */
  CHECK_I64(unlink(path), 0);
  put_text(path, "hello world\n");
  wm_buf_clear(&snap);
  CHECK_I64(sink_cycle(path, v1, sizeof v1, &snap, err, sizeof err), WM_OK);
  FILE *f = fopen(path, "r+b");
  if (f) {
    fputs("HELLO world\nand more", f);
    fclose(f);
  }
  CHECK_I64(sink_cycle(path, snap.data, snap.len, NULL, err, sizeof err), WM_ERR);
  CHECK(strstr(err, "differ from those the job wrote") != NULL);
  CHECK_STR(get_text(path), "HELLO world\nand more");
  /* damaged: every cut of the state is refused, never read past */
  put_text(path, "hello world\n");
  wm_buf_clear(&snap);
  CHECK_I64(sink_cycle(path, v1, sizeof v1, &snap, err, sizeof err), WM_OK);
  int refused = 0;
  for (size_t cut = 0; cut < snap.len; cut++)
    refused += sink_cycle(path, snap.data, cut, NULL, err, sizeof err) == WM_ERR;
  CHECK_I64(refused, (int64_t)snap.len);
  CHECK_STR(get_text(path), "hello world\n");
  wm_buf_free(&snap);
}

/* Two snapshots while one write is in flight, its callback not run yet (checkpoints every
 * few ms on a loaded machine, the thread pool slower than the next checkpoint): the second
 * must not write the bytes in flight again. It did, at the offset past them, so the file held
 * that buffer twice (checkpoint_spec's kill test failed now and then with a file longer by
 * exactly one buffer). The loop does not run between the emits and the snapshots, so the
 * callback cannot come in between whatever the machine's speed. */
static void test_sink_snapshots_in_flight(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/inflight.txt", dir);
  wm_ctx ctx;
  wm_ctx_init(&ctx);
  wm_exec_config ecfg = {0};
  wm_exec *e = wm_exec_new(&ctx, &ecfg);
  wm_write_config wc = {.path = path, .format = WM_FMT_TEXT, .buffer = 16};
  wm_op *op = e ? wm_write_lines_new(wm_exec_host(e), "sink", &wc) : NULL;
  CHECK(op != NULL);
  if (!op) return;
  char want[4096] = "", line[64];
  int n = 0, ok = 1;
  for (int round = 0; round < 3 && ok; round++) {
    /* 5 lines of 10 bytes: the third passes the 16-byte buffer and starts a write */
    for (int i = 0; i < 5; i++, n++) {
      snprintf(line, sizeof line, "line %04d", n);
      strcat(want, line);
      strcat(want, "\n");
      wm_value v = wm_cstr(line, strlen(line));
      ok &= op->vt->record(op, 0, &v, 0) == WM_OK;
    }
    for (int k = 0; k < 2; k++) { /* two checkpoints, the write still in flight */
      wm_buf snap;
      wm_buf_init(&snap);
      wm_state_io io = {.out = &snap};
      ok &= op->vt->snapshot(op, &io) == WM_OK;
      wm_buf_free(&snap);
    }
    uv_run(wm_exec_loop(e), UV_RUN_NOWAIT);
    uv_run(wm_exec_loop(e), UV_RUN_DEFAULT); /* the write's callback */
  }
  CHECK(ok);
  ok &= op->vt->watermark(op, WM_TIME_MAX) == WM_OK;
  uv_run(wm_exec_loop(e), UV_RUN_DEFAULT);
  CHECK(ok);
  CHECK_STR(get_text(path), want);
  wm_ctx_free(&ctx);
  wm_exec_free(e);
  remove(path);
}

void test_ckpt(void) {
  /* the standard CRC-32 check value */
  CHECK(wm_crc32(0, "123456789", 9) == 0xCBF43926u);
  CHECK(wm_crc32(wm_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u);
  { /* longer than the 8-byte steps, split at every place: zlib.crc32 gives 0x17bc2a46 */
    uint8_t d[1000];
    for (int i = 0; i < 1000; i++) d[i] = (uint8_t)(i * 7 + 3);
    CHECK(wm_crc32(0, d, sizeof d) == 0x17bc2a46u);
    int split_ok = 1;
    for (size_t k = 0; k <= 17; k++)
      if (wm_crc32(wm_crc32(0, d, k), d + k, sizeof d - k) != 0x17bc2a46u) split_ok = 0;
    CHECK(split_ok);
  }

  char *dir = tmpdir();
  CHECK(dir != NULL);
  if (!dir) return;
  wm_error err;
  char sub[600];
  snprintf(sub, sizeof sub, "%s/nested/store", dir);
  wm_ckpt_store *s = wm_ckpt_store_open(sub, 3, &err);
  CHECK(s != NULL);
  if (!s) return;
  CHECK(wm_ckpt_next_id(s) == 1);

  /* round trip: parts, metadata, id, creation time */
  CHECK_I64(commit_one(s, 1, "hello"), 0);
  CHECK(wm_ckpt_next_id(s) == 2);
  wm_ckpt_reader *r = NULL;
  warnings w;
  CHECK_I64(wm_ckpt_open_latest(s, on_warn, &w, &r, &err), 1);
  if (r) {
    CHECK(wm_ckpt_reader_id(r) == 1);
    CHECK(wm_ckpt_reader_created_ms(r) == 1001);
    size_t ml;
    const char *meta = wm_ckpt_reader_meta(r, &ml);
    CHECK(ml == 5 && memcmp(meta, "meta1", 5) == 0);
    CHECK(wm_ckpt_reader_nparts(r) == 2);
    CHECK_STR(wm_ckpt_reader_part_name(r, 0), "a");
    uint8_t *d;
    size_t n;
    CHECK_I64(wm_ckpt_get(r, "a", &d, &n, &err), 1);
    CHECK(n == 5 && memcmp(d, "hello", 5) == 0);
    free(d);
    CHECK_I64(wm_ckpt_get(r, "nope", &d, &n, &err), 0);
    wm_ckpt_reader_free(r);
  }

  /* part names: checked, unique */
  wm_ckpt_writer *wr = wm_ckpt_begin(s, 2, &err);
  CHECK(wr != NULL);
  if (wr) {
    CHECK_I64(wm_ckpt_put(wr, "../x", "", 0, &err), -1);
    CHECK(strstr(err.msg, "bad checkpoint part name") != NULL);
    CHECK_I64(wm_ckpt_put(wr, "MANIFEST", "", 0, &err), -1);
    CHECK_I64(wm_ckpt_put(wr, "op-1.0", "", 0, &err), 0);
    CHECK_I64(wm_ckpt_put(wr, "op-1.0", "", 0, &err), -1);
    CHECK(strstr(err.msg, "written twice") != NULL);
    wm_ckpt_abort(wr);
  }
  CHECK_I64(count_checkpoints(sub), 1);

  /* retention: the newest three complete ones stay */
  for (uint64_t id = 2; id <= 5; id++) CHECK_I64(commit_one(s, id, "x"), 0);
  CHECK_I64(count_checkpoints(sub), 3);
  CHECK(latest_id(s, &w) == 5 && w.n == 0);

  /* an unfinished newest one (a crash before the MANIFEST rename) is skipped with a warning */
  wr = wm_ckpt_begin(s, 6, &err);
  CHECK(wr != NULL);
  if (wr) CHECK_I64(wm_ckpt_put(wr, "a", "new", 3, &err), 0);
  CHECK(latest_id(s, &w) == 5);
  CHECK(w.n == 1 && strstr(w.last, "checkpoint 6") && strstr(w.last, "not finished"));
  if (wr) wm_ckpt_abort(wr);
  CHECK(wm_ckpt_next_id(s) == 6);

  /* a damaged part in the newest: the previous one, with the reason */
  flip_byte(part_path(sub, 5, "a"), -1);
  CHECK(latest_id(s, &w) == 4);
  CHECK(w.n == 1 && strstr(w.last, "part a") && strstr(w.last, "CRC"));
  /* a truncated part */
  CHECK_I64(truncate(part_path(sub, 4, "b"), 10), 0);
  CHECK(latest_id(s, &w) == 3);
  CHECK(w.n == 2 && strstr(w.last, "part b"));
  /* a damaged MANIFEST */
  flip_byte(part_path(sub, 3, "MANIFEST"), 10);
  CHECK(latest_id(s, &w) == 0);
  CHECK(w.n == 3 && strstr(w.last, "MANIFEST fails its CRC"));

  /* a MANIFEST cut at every length is refused, never read past its end */
  CHECK_I64(commit_one(s, 7, "seven"), 0);
  char *mp = strdup(part_path(sub, 7, "MANIFEST"));
  struct stat st;
  CHECK(mp && stat(mp, &st) == 0);
  FILE *f = fopen(mp, "rb");
  char whole[4096];
  size_t len = f ? fread(whole, 1, sizeof whole, f) : 0;
  if (f) fclose(f);
  int refused = 0;
  for (size_t cut = 0; cut < len; cut++) {
    f = fopen(mp, "wb");
    if (!f) break;
    fwrite(whole, 1, cut, f);
    fclose(f);
    refused += latest_id(s, &w) != 7;
  }
  CHECK_I64(refused, (int64_t)len);
  /* a foreign file in its place */
  f = fopen(mp, "wb");
  if (f) {
    fputs("this is not a manifest at all, just text", f);
    fclose(f);
  }
  CHECK(latest_id(s, &w) != 7 && strstr(w.first, "checkpoint 7") &&
        strstr(w.first, "not a wmrun checkpoint manifest"));
  free(mp);

  /* one job at a time: a second store on the directory is refused while the first is open,
   * naming its holder (pid and host) and the lock file; taken again once it is freed */
  {
    char host[256] = "", want[400];
    CHECK(gethostname(host, sizeof host) == 0);
    snprintf(want, sizeof want, "(pid %ld host %s;", (long)getpid(), host);
    wm_error err2;
    wm_ckpt_store *s2 = wm_ckpt_store_open(sub, 3, &err2);
    CHECK(s2 == NULL);
    CHECK(strstr(err2.msg, "is in use by another job") != NULL);
    CHECK(strstr(err2.msg, want) != NULL);
    CHECK(strstr(err2.msg, "/nested/store/LOCK") != NULL);
    CHECK(strstr(err2.msg, "--checkpoint-dir") != NULL);
    wm_ckpt_store_free(s2);
    /* --fresh is refused too (it clears through a store): the first one's checkpoints stay */
    CHECK_I64(count_checkpoints(sub) > 0, 1);
  }

  /* store errors */
  wm_ckpt_store_free(s);
  {
    wm_ckpt_store *s3 = wm_ckpt_store_open(sub, 3, &err);
    CHECK(s3 != NULL);
    wm_ckpt_store_free(s3);
  }
  CHECK(wm_ckpt_store_open(sub, 0, &err) == NULL);
  CHECK(strstr(err.msg, "at least 1") != NULL);
  snprintf(sub, sizeof sub, "%s/file", dir);
  f = fopen(sub, "w");
  if (f) fclose(f);
  CHECK(wm_ckpt_store_open(sub, 3, &err) == NULL);
  CHECK(strstr(err.msg, sub) != NULL);
  test_sink_identity(dir);
  test_sink_snapshots_in_flight(dir);
  rm_rf(dir);
  free(dir);
}
