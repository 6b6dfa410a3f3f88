/* The checkpoint store interface (core/state/wm_ckpt_store.h): wm_ckpt.c over an in-memory
 * store written here (the format it hands a store, the fence, pruning, damaged and foreign
 * objects), and the local directory store keeping exactly the bytes it is handed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/wm_ckpt.h"
#include "state/wm_ckpt_store.h"
#include "test.h"

/* ---- an in-memory store: objects in a shared "server", claims by epoch ------------------- */

typedef struct mem_obj {
  uint64_t id;
  char name[256];
  uint8_t *data;
  size_t len;
} mem_obj;

typedef struct mem_world {
  mem_obj objs[64];
  int n;
  uint64_t epoch;    /* the newest claim */
  const char *fail;  /* when set, get fails with this message */
} mem_world;

typedef struct mem_store {
  wm_ckpt_backend base;
  mem_world *w;
  uint64_t epoch; /* this store's claim */
} mem_store;

static mem_obj *mem_find(mem_world *w, uint64_t id, const char *name) {
  for (int i = 0; i < w->n; i++)
    if (w->objs[i].id == id && !strcmp(w->objs[i].name, name)) return &w->objs[i];
  return NULL;
}

static int mem_store_obj(mem_world *w, uint64_t id, const char *name, const void *a, size_t al,
                         const void *b, size_t bl) {
  mem_obj *o = mem_find(w, id, name);
  if (!o) {
    if (w->n == 64) return -1;
    o = &w->objs[w->n++];
    o->id = id;
    snprintf(o->name, sizeof o->name, "%s", name);
  } else {
    free(o->data);
  }
  o->data = malloc(al + bl + 1);
  if (!o->data) return -1;
  if (al) memcpy(o->data, a, al);
  if (bl) memcpy(o->data + al, b, bl);
  o->len = al + bl;
  return 0;
}

static int mem_remove(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  (void)err;
  mem_world *w = ((mem_store *)b)->w;
  for (int i = 0; i < w->n;)
    if (w->objs[i].id == id) {
      free(w->objs[i].data);
      w->objs[i] = w->objs[--w->n];
    } else {
      i++;
    }
  return 0;
}

static int mem_begin(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  return mem_remove(b, id, err);
}

static int mem_put(wm_ckpt_backend *b, uint64_t id, const char *name, const void *head,
                   size_t headlen, const void *body, size_t bodylen, wm_error *err) {
  if (mem_store_obj(((mem_store *)b)->w, id, name, head, headlen, body, bodylen) != 0) {
    wm_error_set(err, "memory store full");
    return -1;
  }
  return 0;
}

static int mem_complete(wm_ckpt_backend *b, uint64_t id, const void *m, size_t len, int crash,
                        wm_error *err) {
  (void)crash;
  mem_store *s = (mem_store *)b;
  if (s->epoch != s->w->epoch) {
    wm_error_set(err, "store %s was taken over (epoch %llu, this process holds %llu)",
             b->name, (unsigned long long)s->w->epoch, (unsigned long long)s->epoch);
    return -1;
  }
  return mem_put(b, id, "MANIFEST", m, len, NULL, 0, err);
}

static int mem_get(wm_ckpt_backend *b, uint64_t id, const char *name, size_t max, uint8_t **data,
                   size_t *len, wm_error *err) {
  mem_world *w = ((mem_store *)b)->w;
  if (w->fail) {
    wm_error_set(err, "%s", w->fail);
    return -1;
  }
  mem_obj *o = mem_find(w, id, name);
  if (!o) return 0;
  if (o->len > max) {
    wm_error_set(err, "too large");
    return -1;
  }
  *data = malloc(o->len + 1);
  if (!*data) return -1;
  memcpy(*data, o->data, o->len);
  *len = o->len;
  return 1;
}

static int mem_list(wm_ckpt_backend *b, uint64_t **ids, size_t *n, wm_error *err) {
  (void)err;
  mem_world *w = ((mem_store *)b)->w;
  *ids = malloc(sizeof **ids * 65);
  *n = 0;
  if (!*ids) return -1;
  for (int i = 0; i < w->n; i++) {
    size_t k = 0;
    while (k < *n && (*ids)[k] != w->objs[i].id) k++;
    if (k == *n) (*ids)[(*n)++] = w->objs[i].id;
  }
  return 0;
}

static void mem_free(wm_ckpt_backend *b) { free(b); }

static const wm_ckpt_backend_vt mem_vt = {mem_begin, mem_put,    mem_complete, mem_get,
                                          mem_list,  mem_remove, mem_free};

/* A store on w that claims it (taking it over from any earlier one). */
static wm_ckpt_store *mem_open(mem_world *w, int keep) {
  mem_store *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->base.vt = &mem_vt;
  s->base.name = "mem";
  s->w = w;
  s->epoch = ++w->epoch;
  wm_error err;
  return wm_ckpt_store_new(&s->base, keep, &err);
}

static void mem_clear(mem_world *w) {
  for (int i = 0; i < w->n; i++) free(w->objs[i].data);
  w->n = 0;
}

static int commit(wm_ckpt_store *s, uint64_t id, const char *text, wm_error *err) {
  wm_ckpt_writer *w = wm_ckpt_begin(s, id, err);
  if (!w) return -1;
  if (wm_ckpt_put(w, "a", text, strlen(text), err) != 0 ||
      wm_ckpt_put(w, "b", "B", 1, err) != 0) {
    wm_ckpt_abort(w);
    return -1;
  }
  return wm_ckpt_commit(w, "meta", 4, 1000 + id, err);
}

typedef struct warns {
  int n;
  char first[1024], last[1024];
} warns;

static void on_warn(void *ud, const char *msg) {
  warns *w = ud;
  if (w->n++ == 0) snprintf(w->first, sizeof w->first, "%s", msg);
  snprintf(w->last, sizeof w->last, "%s", msg);
}

static uint64_t latest(wm_ckpt_store *s, warns *w) {
  wm_ckpt_reader *r = NULL;
  wm_error err;
  memset(w, 0, sizeof *w);
  if (wm_ckpt_open_latest(s, on_warn, w, &r, &err) != 1) return 0;
  uint64_t id = wm_ckpt_reader_id(r);
  wm_ckpt_reader_free(r);
  return id;
}

static int has_id(mem_world *w, uint64_t id) {
  for (int i = 0; i < w->n; i++)
    if (w->objs[i].id == id) return 1;
  return 0;
}

/* The bytes of a part object, worked out by hand: "WMCP", version 1, length 5, the CRC-32 of
 * "hello" (zlib.crc32(b"hello") = 0x3610a686), all little-endian, then the payload. */
static const uint8_t hello_part[] = {'W', 'M', 'C', 'P', 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,
                                     0x86, 0xa6, 0x10, 0x36, 'h', 'e', 'l', 'l', 'o'};

static void test_format_and_fence(mem_world *world) {
  wm_error err;
  wm_ckpt_store *a = mem_open(world, 2);
  CHECK(a != NULL);
  if (!a) return;
  CHECK_STR(wm_ckpt_store_dir(a), "mem");
  CHECK_I64(commit(a, 1, "hello", &err), 0);
  mem_obj *o = mem_find(world, 1, "a");
  CHECK(o && o->len == sizeof hello_part && !memcmp(o->data, hello_part, sizeof hello_part));
  /* the MANIFEST: magic, version, id, created, metalen, "meta", 2 parts (name length, name,
   * length, CRC each), CRC: 4+4+8+8+8+4+4 + 2*(2+1+8+4) + 4 = 74 bytes */
  o = mem_find(world, 1, "MANIFEST");
  CHECK(o && o->len == 74 && !memcmp(o->data, "WMCM\1\0\0\0\1\0\0\0\0\0\0\0\xe9\3", 18));
  CHECK(o && !memcmp(o->data + 32, "meta\2\0\0\0\1\0a\5\0\0\0\0\0\0\0\x86\xa6\x10\x36", 23));
  CHECK(o && wm_crc32(0, o->data, 70) ==
                 ((uint32_t)o->data[70] | (uint32_t)o->data[71] << 8 |
                  (uint32_t)o->data[72] << 16 | (uint32_t)o->data[73] << 24));
  warns w;
  CHECK(latest(a, &w) == 1 && w.n == 0);

  /* the fence: b claims the store (a process that took the partition over); a's next
   * checkpoint is refused at its complete step, leaves nothing, and b never sees it */
  wm_ckpt_store *b = mem_open(world, 2);
  CHECK(b != NULL);
  wm_ckpt_writer *wr = wm_ckpt_begin(a, 2, &err);
  CHECK(wr != NULL);
  if (wr) {
    CHECK_I64(wm_ckpt_put(wr, "a", "stale", 5, &err), 0);
    CHECK_I64(wm_ckpt_commit(wr, "m", 1, 5, &err), -1);
    CHECK(strstr(err.msg, "taken over (epoch 2, this process holds 1)") != NULL);
  }
  CHECK(!has_id(world, 2));
  if (b) {
    CHECK(latest(b, &w) == 1);
    CHECK(wm_ckpt_next_id(b) == 2);
    CHECK_I64(commit(b, 2, "two", &err), 0);
    CHECK(latest(b, &w) == 2);
  }
  /* and a stays fenced */
  CHECK_I64(commit(a, 3, "x", &err), -1);
  CHECK(!has_id(world, 3));
  wm_ckpt_store_free(a);

  /* pruning (keep 2): the two newest complete ones stay, with anything newer; an unfinished
   * one older than those goes */
  if (b) {
    /* unfinished: what a crash before its MANIFEST leaves (a part, no MANIFEST) */
    CHECK_I64(mem_store_obj(world, 3, "a", "u", 1, NULL, 0), 0);
    CHECK(latest(b, &w) == 2 && w.n == 1 && strstr(w.last, "checkpoint 3 in mem is skipped") &&
          strstr(w.last, "not finished"));
    CHECK_I64(commit(b, 4, "four", &err), 0);
    CHECK(has_id(world, 1) == 0 && has_id(world, 2) && has_id(world, 3) && has_id(world, 4));
    CHECK_I64(commit(b, 5, "five", &err), 0);
    CHECK(!has_id(world, 2) && !has_id(world, 3) && has_id(world, 4) && has_id(world, 5));

    /* foreign and damaged objects: skipped with the reason, never read past their end */
    o = mem_find(world, 5, "a");
    if (o) o->data[21] ^= 1;
    CHECK(latest(b, &w) == 4 && strstr(w.last, "checkpoint 5 in mem is skipped: part a: "
                                                "fails its CRC check"));
    o = mem_find(world, 4, "b");
    if (o) memcpy(o->data, "{\"js", 4);
    CHECK(latest(b, &w) == 0 && strstr(w.last, "part b: not a wmrun checkpoint part"));
    mem_store_obj(world, 7, "MANIFEST", "{\"json\": 1}", 11, NULL, 0);
    CHECK(latest(b, &w) == 0 && w.n == 3 && strstr(w.last, "checkpoint 4"));
    CHECK_I64(commit(b, 8, "eight", &err), 0);
    o = mem_find(world, 8, "b");
    if (o) snprintf(o->name, sizeof o->name, "c"); /* a part the MANIFEST names is missing */
    /* 8 and 5 have sound MANIFESTs, so pruning counted them and removed 4 (pruning reads
     * MANIFESTs only); 8 is skipped for its missing part, then 7 and 5 as before */
    CHECK(!has_id(world, 4));
    CHECK(latest(b, &w) == 0 && w.n == 3);
    CHECK(strstr(w.first, "checkpoint 8 in mem is skipped: part b: missing") != NULL);
    CHECK(strstr(w.last, "checkpoint 5") != NULL);
    world->fail = "the server said no";
    CHECK(latest(b, &w) == 0 && strstr(w.last, "the server said no"));
    world->fail = NULL;
    wm_ckpt_store_free(b);
  }
}

static void test_missing_part(mem_world *world) {
  wm_error err;
  wm_ckpt_store *s = mem_open(world, 3);
  CHECK(s != NULL);
  if (!s) return;
  CHECK_I64(commit(s, 1, "one", &err), 0);
  mem_obj *o = mem_find(world, 1, "b");
  if (o) snprintf(o->name, sizeof o->name, "c");
  warns w;
  CHECK(latest(s, &w) == 0 && strstr(w.last, "part b: missing"));
  /* clear removes everything */
  CHECK_I64(wm_ckpt_clear(s, &err), 0);
  CHECK_I64(world->n, 0);
  wm_ckpt_store_free(s);
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(4096);
  *len = buf ? fread(buf, 1, 4096, f) : 0;
  fclose(f);
  return buf;
}

/* The local store keeps byte for byte what the interface hands it (the files of
 * docs/checkpoints.md): the same commit into memory and into a directory. */
static void test_local_bytes(mem_world *world) {
  const char *base = getenv("TMPDIR");
  char dir[512], path[700];
  wm_error err;
  snprintf(dir, sizeof dir, "%s/wm-ckstore-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    CHECK(0);
    return;
  }
  wm_ckpt_store *l = wm_ckpt_store_open(dir, 3, &err);
  wm_ckpt_store *m = mem_open(world, 3);
  CHECK(l != NULL && m != NULL);
  if (l && m) {
    CHECK_I64(commit(l, 1, "hello", &err), 0);
    CHECK_I64(commit(m, 1, "hello", &err), 0);
    const char *names[] = {"a", "b", "MANIFEST"};
    for (int i = 0; i < 3; i++) {
      snprintf(path, sizeof path, "%s/chk-00000000000000000001/%s", dir, names[i]);
      size_t n = 0;
      char *got = read_all(path, &n);
      mem_obj *o = mem_find(world, 1, names[i]);
      CHECK(got && o && n == o->len && !memcmp(got, o->data, n));
      free(got);
    }
    snprintf(path, sizeof path, "%s/chk-00000000000000000001/a", dir);
    size_t n = 0;
    char *got = read_all(path, &n);
    CHECK(got && n == sizeof hello_part && !memcmp(got, hello_part, n));
    free(got);
  }
  wm_ckpt_store_free(l);
  wm_ckpt_store_free(m);
  /* a URL of an unknown store is not a directory: refused, and no directory "s3:" made */
  char cwd[512];
  if (getcwd(cwd, sizeof cwd) && chdir(dir) == 0) {
    CHECK(wm_ckpt_store_open("s3://bucket/ck", 3, &err) == NULL);
    CHECK(strstr(err.msg, "s3://bucket/ck") && strstr(err.msg, "'s3://'"));
    struct stat st;
    CHECK(stat("s3:", &st) != 0);
    if (chdir(cwd) != 0) CHECK(0);
  }
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  if (system(path) != 0) CHECK(0);
}

/* Marks of a directory (scale-out's ENDED): the file <dir>/<path>/<name> holding its name in
 * lower case, as task-<name>/ENDED always held "ended\n"; set without any claim, read back,
 * and paths or names that would leave the folder refused. */
static void test_local_marks(void) {
  const char *base = getenv("TMPDIR");
  char dir[512], path[700];
  wm_error err;
  snprintf(dir, sizeof dir, "%s/wm-ckmarks-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    CHECK(0);
    return;
  }
  /* a task's store claimed (its lock held) does not keep its supervisor from its marks */
  snprintf(path, sizeof path, "%s/task-EV-3", dir);
  wm_ckpt_store *st = wm_ckpt_store_open(path, 3, &err);
  CHECK(st != NULL);
  wm_ckpt_marks *m = wm_ckpt_marks_open(dir, &err);
  CHECK(m != NULL);
  if (m) {
    CHECK_I64(wm_ckpt_mark_get(m, "task-EV-3", "ENDED", &err), 0);
    CHECK_I64(wm_ckpt_mark_get(m, "task-x2.events-1", "ENDED", &err), 0); /* no folder yet */
    CHECK_I64(wm_ckpt_mark_set(m, "task-EV-3", "ENDED", &err), 0);
    CHECK_I64(wm_ckpt_mark_get(m, "task-EV-3", "ENDED", &err), 1);
    CHECK_I64(wm_ckpt_mark_get(m, "task-EV-4", "ENDED", &err), 0);
    CHECK_I64(wm_ckpt_mark_set(m, "task-x2.events-1", "ENDED", &err), 0); /* makes its folder */
    CHECK_I64(wm_ckpt_mark_get(m, "task-x2.events-1", "ENDED", &err), 1);
    snprintf(path, sizeof path, "%s/task-EV-3/ENDED", dir);
    size_t n = 0;
    char *got = read_all(path, &n);
    CHECK(got && n == 6 && !memcmp(got, "ended\n", 6));
    free(got);
    const char *bad[][2] = {{"../x", "ENDED"}, {"a/../b", "ENDED"}, {"/abs", "ENDED"}, {"a//b", "ENDED"},
                            {"a/", "ENDED"}, {"", "ENDED"}, {".hidden", "ENDED"}, {"a b", "ENDED"},
                            {"task-EV-3", "../LOCK"}, {"task-EV-3", ""}, {"task-EV-3", "END.ED"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      CHECK_I64(wm_ckpt_mark_set(m, bad[i][0], bad[i][1], &err), -1);
      CHECK(strstr(err.msg, "mark") != NULL);
      CHECK_I64(wm_ckpt_mark_get(m, bad[i][0], bad[i][1], &err), -1);
    }
  }
  wm_ckpt_marks_free(m);
  wm_ckpt_store_free(st);
  CHECK(wm_ckpt_marks_open("s3://bucket/ck", &err) == NULL);
  CHECK(strstr(err.msg, "'s3://'") != NULL);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  if (system(path) != 0) CHECK(0);
}

void test_ckpt_store(void) {
  test_local_marks();
  mem_world world = {0};
  test_format_and_fence(&world);
  mem_clear(&world);
  test_missing_part(&world);
  mem_clear(&world);
  test_local_bytes(&world);
  mem_clear(&world);
}
