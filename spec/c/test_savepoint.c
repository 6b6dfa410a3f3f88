/* Savepoints (core/exec/wm_savepoint.c): the copy of a store's newest checkpoint into a new
 * store, opening one (missing, empty, damaged), and wmrun savepoint's client when no job
 * runs. Fitting a savepoint to a changed job runs in spec/savepoint_spec.lua. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/wm_savepoint.h"
#include "state/wm_ckpt.h"
#include "test.h"

static char *sp_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/wm-sp-XXXXXX", base && *base ? base : "/tmp");
  char *d = mkdtemp(tmpl);
  return d ? strdup(d) : NULL;
}

/* Checkpoint id with parts "uid-a.0" = text and "op-1.0" = "B", meta "wmrun checkpoint 1\n...". */
static int commit(wm_ckpt_store *s, uint64_t id, const char *text) {
  char meta[64];
  wm_error err;
  wm_error_clear(&err);
  wm_ckpt_writer *w = wm_ckpt_begin(s, id, &err);
  if (!w) return -1;
  if (wm_ckpt_put(w, "uid-a.0", text, strlen(text), &err) != 0 ||
      wm_ckpt_put(w, "op-1.0", "B", 1, &err) != 0) {
    wm_ckpt_abort(w);
    return -1;
  }
  snprintf(meta, sizeof meta, "wmrun checkpoint 1\nthreads 1\nid %llu\n", (unsigned long long)id);
  return wm_ckpt_commit(w, meta, strlen(meta), 5000 + id, &err);
}

void test_savepoint(void) {
  char *dir = sp_tmpdir();
  CHECK(dir != NULL);
  if (!dir) return;
  char ck[600], sp[600];
  wm_error err;
  snprintf(ck, sizeof ck, "%s/ck", dir);
  snprintf(sp, sizeof sp, "%s/sp", dir);
  wm_error we;
  wm_error_clear(&we);
  wm_ckpt_store *s = wm_ckpt_store_open(ck, 3, &we);
  CHECK(s != NULL);
  if (!s) return;
  CHECK_I64(commit(s, 1, "first"), 0);
  CHECK_I64(commit(s, 2, "second state"), 0);

  /* the newest checkpoint, copied whole, with the savepoint line */
  uint64_t id = 0;
  CHECK_I64(wm_savepoint_write(s, "ck-name", sp, &id, &err), 0);
  CHECK_I64(id, 2);
  wm_ckpt_store *ps = NULL;
  wm_ckpt_reader *r = NULL;
  CHECK_I64(wm_savepoint_open(sp, &ps, &r, &err), 0);
  if (r) {
    CHECK_I64(wm_ckpt_reader_id(r), 2);
    CHECK_I64(wm_ckpt_reader_created_ms(r), 5002);
    CHECK_I64(wm_ckpt_reader_nparts(r), 2);
    size_t ml;
    const char *m = wm_ckpt_reader_meta(r, &ml);
    const char *want = "wmrun checkpoint 1\nthreads 1\nid 2\nsavepoint 2 ck-name\n";
    CHECK(ml == strlen(want) && memcmp(m, want, ml) == 0);
    uint8_t *data = NULL;
    size_t len = 0;
    CHECK_I64(wm_ckpt_get(r, "uid-a.0", &data, &len, &we), 1);
    CHECK(len == 12 && data && memcmp(data, "second state", 12) == 0);
    free(data);
  }
  wm_ckpt_reader_free(r);
  wm_ckpt_store_free(ps);
  /* a second one into the same place is refused; the first stays */
  CHECK_I64(wm_savepoint_write(s, "ck-name", sp, &id, &err), -1);
  CHECK(strstr(err.msg, "already holds a checkpoint or a savepoint") != NULL);
  wm_ckpt_store_free(s);

  /* a damaged part: the savepoint is refused, saying which part */
  char part[800], cmd[1400];
  snprintf(part, sizeof part, "%s/chk-%020d/uid-a.0", sp, 2);
  FILE *f = fopen(part, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, -2, SEEK_END);
    int c = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(c ^ 0x40, f);
    fclose(f);
  }
  CHECK_I64(wm_savepoint_open(sp, &ps, &r, &err), -1);
  CHECK(strstr(err.msg, "cannot be used: checkpoint 2 in") != NULL);
  CHECK(strstr(err.msg, "uid-a.0") != NULL);
  CHECK(r == NULL && ps == NULL);
  /* missing, empty */
  snprintf(cmd, sizeof cmd, "%s/none", dir);
  CHECK_I64(wm_savepoint_open(cmd, &ps, &r, &err), -1);
  CHECK(strstr(err.msg, "/none: no such directory") != NULL);
  CHECK_I64(wm_savepoint_open(dir, &ps, &r, &err), -1);
  CHECK(strstr(err.msg, "it holds no savepoint") != NULL);

  /* the client: no LOCK; a LOCK of a process that has ended (never this one: the request's
   * signal would end it) */
  char msg[1200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/nolock' '%s/gone'", dir, dir);
  CHECK_I64(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/nolock", dir);
  CHECK_I64(wm_savepoint_request(cmd, sp, 1000, msg, sizeof msg), -1);
  CHECK(strstr(msg, "no job has run on checkpoint directory") != NULL);
  CHECK(strstr(msg, "(it has no LOCK file)") != NULL);
  long dead = 0;
  FILE *pp = popen("sh -c 'echo $$'", "r");
  if (pp) {
    if (fscanf(pp, "%ld", &dead) != 1) dead = 0;
    pclose(pp); /* it has ended */
  }
  CHECK(dead > 0 && dead != (long)getpid());
  char host[256] = "";
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  snprintf(cmd, sizeof cmd, "%s/gone/LOCK", dir);
  f = fopen(cmd, "w");
  if (f) {
    fprintf(f, "pid %ld host %s\n", dead, host);
    fclose(f);
  }
  snprintf(cmd, sizeof cmd, "%s/gone", dir);
  CHECK_I64(wm_savepoint_request(cmd, sp, 1000, msg, sizeof msg), -1);
  CHECK(strstr(msg, "no job is running on checkpoint directory") != NULL);
  CHECK_I64(wm_savepoint_request("nats://127.0.0.1:1/ck", sp, 1000, msg, sizeof msg), -1);
  CHECK(strstr(msg, "--stop-with-savepoint") != NULL);

  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  free(dir);
}
