/* The NATS JetStream checkpoint store (wm_ckpt_store.h), for nats://HOST:PORT/BUCKET[/PATH].
 *
 * libnats 3.4 has no Object Store, so an object is messages of a stream of wmrun's own,
 * WMCK_<BUCKET> (subjects wmck.<BUCKET>.>, file storage): chunks of at most 256 KiB on
 *   wmck.<BUCKET>.<scope>.<id>.<epoch>.<name>.<k>     k = 0, 1, ...
 * then an end marker on ....<name>.end: "WMCKOBJ1", the length (8), the chunk count (4) and
 * the CRC-32 of the whole (4), little-endian ('.' in a name is written '='; in the scope, the
 * PATH, '/' is written '=' and '.' '~').
 *
 * The claim, the fence and the list of complete checkpoints are one key of the KV bucket
 * <BUCKET> (the scope's PATH, "default" without one), changed only by compare-and-set:
 *   wmrun checkpoints 1
 *   epoch E pid P host H            the newest claim
 *   complete ID EPOCH               one line per complete checkpoint
 * Opening the store claims it (epoch + 1). `complete` puts the MANIFEST as an object, then
 * appends its line with a compare-and-set on the revision it read, and only while the key's
 * epoch is still its own: a process that another one took over from can write objects
 * (under its own epoch, where nobody reads them) but never complete a checkpoint. A
 * checkpoint id's objects are those of the epoch its line names.
 *
 * Marks (wm_ckpt_store.h) are keys of the same bucket, "[PATH/]<path>=<name>", put without a
 * claim: scale-out's task-<name>=ENDED. */
#include "io/wm_nats.h"
#include "state/wm_crc.h"
#include "state/wm_ckpt_util.h"
#include "state/wm_ckpt_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (256u * 1024u)
#define END_MAGIC "WMCKOBJ1"
#define END_LEN 24
#define REC_HEAD "wmrun checkpoints 1\n"
#define REC_MAX (1u << 20)
#define CAS_TRIES 20

typedef struct rec {
  uint64_t epoch;
  char holder[300];
  uint64_t *ids, *epochs;
  size_t n;
} rec;

typedef struct nats_store {
  wm_ckpt_backend base;
  char *url, *server, *bucket, *key, *stream, *prefix, *who;
  natsConnection *nc;
  jsCtx *js;
  kvStore *kv;
  int has_path;   /* a PATH was given (else the key is "default") */
  uint64_t epoch; /* this process's claim */
  rec seen;       /* the key as last read (for the epochs of complete ids) */
} nats_store;

static const char *last_error(natsStatus s, char *buf, size_t n) {
  natsStatus ls;
  const char *t = nats_GetLastError(&ls);
  snprintf(buf, n, "%s", t && *t ? t : natsStatus_GetText(s));
  return buf;
}

/* ---- the key ----------------------------------------------------------------------------- */

static void rec_free(rec *r) {
  free(r->ids);
  free(r->epochs);
  memset(r, 0, sizeof *r);
}

static int rec_add(rec *r, uint64_t id, uint64_t epoch) {
  uint64_t *a = realloc(r->ids, (r->n + 1) * sizeof *a);
  if (!a) return -1;
  r->ids = a;
  uint64_t *b = realloc(r->epochs, (r->n + 1) * sizeof *b);
  if (!b) return -1;
  r->epochs = b;
  r->ids[r->n] = id;
  r->epochs[r->n++] = epoch;
  return 0;
}

/* Parses the key's value (untrusted). 0, or -1 with what is wrong. */
static int rec_parse(const char *v, size_t len, rec *r, char *why, size_t whylen) {
  memset(r, 0, sizeof *r);
  size_t hl = strlen(REC_HEAD);
  if (len < hl || memcmp(v, REC_HEAD, hl) != 0 || memchr(v, '\0', len)) {
    wm_ckpt_seterr(why, whylen, "it holds something wmrun did not write (it begins '%.20s')",
           len ? v : "");
    return -1;
  }
  const char *p = v + hl, *end = v + len;
  int line = 2;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    char buf[400];
    size_t ll = (size_t)(nl - p);
    if (ll >= sizeof buf) goto bad;
    memcpy(buf, p, ll);
    buf[ll] = '\0';
    unsigned long long a, b;
    int used = 0;
    if (line == 2) {
      if (sscanf(buf, "epoch %llu %n", &a, &used) != 1 || used == 0) goto bad;
      r->epoch = a;
      snprintf(r->holder, sizeof r->holder, "%s", buf + used);
    } else {
      if (sscanf(buf, "complete %llu %llu%n", &a, &b, &used) != 2 || (size_t)used != ll) goto bad;
      if (rec_add(r, a, b) != 0) {
        wm_ckpt_seterr(why, whylen, "out of memory");
        rec_free(r);
        return -1;
      }
    }
    p = nl + 1;
    line++;
  }
  if (p != end || line < 3) goto bad;
  return 0;
bad:
  wm_ckpt_seterr(why, whylen, "its line %d is not what wmrun writes", line);
  rec_free(r);
  return -1;
}

/* Reads the key: 1 and *r, *rev; 0 when there is no key; -1 with a message. */
static int rec_read(nats_store *s, rec *r, uint64_t *rev, wm_error *err) {
  kvEntry *e = NULL;
  natsStatus st = kvStore_Get(&e, s->kv, s->key);
  if (st == NATS_NOT_FOUND) return 0;
  if (st != NATS_OK) {
    char why[300];
    wm_error_set(err, "checkpoint store %s: cannot read key '%s' of bucket '%s': %s", s->url,
           s->key, s->bucket, last_error(st, why, sizeof why));
    return -1;
  }
  const char *v = kvEntry_ValueString(e);
  int len = kvEntry_ValueLen(e);
  *rev = kvEntry_Revision(e);
  char why[300];
  int rc = (len < 0 || (size_t)len > REC_MAX) ? -1 : rec_parse(v ? v : "", (size_t)len, r, why, sizeof why);
  if (len < 0 || (size_t)len > REC_MAX) snprintf(why, sizeof why, "it is %d bytes long", len);
  kvEntry_Destroy(e);
  if (rc != 0) {
    wm_error_set(err, "checkpoint store %s: key '%s' of bucket '%s' is not wmrun's: %s (give "
                        "the store another bucket or path)", s->url, s->key, s->bucket, why);
    return -1;
  }
  return 1;
}

/* Writes r with compare-and-set on rev (0: the key must not exist). 0 written, 1 someone
 * changed it since (read again), -1 with a message. */
static int rec_write(nats_store *s, const rec *r, uint64_t rev, wm_error *err) {
  size_t cap = 512 + r->n * 64; /* a line is at most 9 + 20 + 1 + 20 + 1 bytes */
  char *v = malloc(cap);
  if (!v) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  size_t len = (size_t)snprintf(v, cap, "%sepoch %" PRIu64 " %s\n", REC_HEAD, r->epoch, r->holder);
  for (size_t i = 0; i < r->n && len < cap; i++)
    len += (size_t)snprintf(v + len, cap - len, "complete %" PRIu64 " %" PRIu64 "\n", r->ids[i],
                            r->epochs[i]);
  uint64_t nrev = 0;
  natsStatus st = rev ? kvStore_Update(&nrev, s->kv, s->key, v, (int)len, rev)
                      : kvStore_Create(&nrev, s->kv, s->key, v, (int)len);
  free(v);
  if (st == NATS_OK) return 0;
  char why[300];
  last_error(st, why, sizeof why);
  if (strstr(why, "wrong last sequence") || strstr(why, "key exists")) return 1;
  wm_error_set(err, "checkpoint store %s: cannot write key '%s' of bucket '%s': %s", s->url,
         s->key, s->bucket, why);
  return -1;
}

static int fenced(nats_store *s, const rec *r, uint64_t id, wm_error *err) {
  wm_error_set(err, "checkpoint store %s was taken over by another process (%s, epoch %" PRIu64
                      "; this process holds epoch %" PRIu64 "): this process lost its claim "
                      "and does not complete checkpoint %" PRIu64, s->url,
         r->holder[0] ? r->holder : "unknown", r->epoch, s->epoch, id);
  return -1;
}

/* ---- objects -------------------------------------------------------------------------------- */

/* The subject of object name of (id, epoch), its part `tail` ("end" or a chunk number). */
static char *subject(const nats_store *s, uint64_t id, uint64_t epoch, const char *name,
                     const char *tail) {
  size_t n = strlen(s->prefix) + strlen(name) + strlen(tail) + 64;
  char *subj = malloc(n);
  if (!subj) return NULL;
  int k = snprintf(subj, n, "%s.%" PRIu64 ".%" PRIu64 ".", s->prefix, id, epoch);
  for (const char *p = name; *p; p++) subj[k++] = *p == '.' ? '=' : *p;
  snprintf(subj + k, n - (size_t)k, ".%s", tail);
  return subj;
}

static int publish(nats_store *s, const char *subj, const void *data, size_t len, wm_error *err) {
  jsPubAck *pa = NULL;
  jsErrCode jerr = 0;
  natsStatus st = js_Publish(&pa, s->js, subj, data, (int)len, NULL, &jerr);
  jsPubAck_Destroy(pa);
  if (st == NATS_OK) return 0;
  char why[300];
  wm_error_set(err, "checkpoint store %s: cannot store %s: %s", s->url, subj,
         wm_nats_why(st, jerr, why, sizeof why));
  return -1;
}

/* Stores head+body as object name of (id, s->epoch): chunks, then the end marker. */
static int put_object(nats_store *s, uint64_t id, const char *name, const uint8_t *head,
                      size_t hl, const uint8_t *body, size_t bl, wm_error *err) {
  size_t total = hl + bl, nchunks = (total + CHUNK - 1) / CHUNK;
  uint8_t *buf = malloc(total ? total : 1);
  if (!buf) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  if (hl) memcpy(buf, head, hl);
  if (bl) memcpy(buf + hl, body, bl);
  int rc = 0;
  for (size_t k = 0; k < nchunks && rc == 0; k++) {
    char tail[24];
    snprintf(tail, sizeof tail, "%zu", k);
    char *subj = subject(s, id, s->epoch, name, tail);
    size_t off = k * CHUNK, n = total - off < CHUNK ? total - off : CHUNK;
    rc = subj ? publish(s, subj, buf + off, n, err) : -1;
    if (!subj) wm_error_set(err, "out of memory");
    free(subj);
  }
  if (rc == 0) {
    uint8_t end[END_LEN];
    memcpy(end, END_MAGIC, 8);
    wm_put64(end + 8, total);
    wm_put32(end + 16, (uint32_t)nchunks);
    wm_put32(end + 20, wm_crc32(0, buf, total));
    char *subj = subject(s, id, s->epoch, name, "end");
    rc = subj ? publish(s, subj, end, sizeof end, err) : -1;
    if (!subj) wm_error_set(err, "out of memory");
    free(subj);
  }
  free(buf);
  return rc;
}

/* The last message on subj: 1 and *msg, 0 none, -1 with a message. */
static int last_msg(nats_store *s, const char *subj, natsMsg **msg, wm_error *err) {
  jsErrCode jerr = 0;
  natsStatus st = js_GetLastMsg(msg, s->js, s->stream, subj, NULL, &jerr);
  if (st == NATS_NOT_FOUND) return 0;
  if (st == NATS_OK) return 1;
  char why[300];
  wm_error_set(err, "cannot read %s: %s", subj, wm_nats_why(st, jerr, why, sizeof why));
  return -1;
}

static int get_object(nats_store *s, uint64_t id, uint64_t epoch, const char *name, size_t max,
                      uint8_t **data, size_t *len, wm_error *err) {
  char *subj = subject(s, id, epoch, name, "end");
  if (!subj) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  natsMsg *m = NULL;
  int got = last_msg(s, subj, &m, err);
  free(subj);
  if (got != 1) return got;
  const uint8_t *e = (const uint8_t *)natsMsg_GetData(m);
  int el = natsMsg_GetDataLength(m);
  if (el != END_LEN || memcmp(e, END_MAGIC, 8) != 0) {
    natsMsg_Destroy(m);
    wm_error_set(err, "its end marker is not a wmrun checkpoint object's");
    return -1;
  }
  uint64_t total = wm_get64(e + 8);
  uint32_t nchunks = wm_get32(e + 16), crc = wm_get32(e + 20);
  natsMsg_Destroy(m);
  if (total > max) {
    wm_error_set(err, "%" PRIu64 " bytes, more than the %zu it may have", total, max);
    return -1;
  }
  if ((uint64_t)nchunks != (total + CHUNK - 1) / CHUNK) {
    wm_error_set(err, "its end marker names %u chunks for %" PRIu64 " bytes", nchunks, total);
    return -1;
  }
  uint8_t *buf = malloc(total ? (size_t)total : 1);
  if (!buf) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  for (uint32_t k = 0; k < nchunks; k++) {
    char tail[24];
    snprintf(tail, sizeof tail, "%u", k);
    char *cs = subject(s, id, epoch, name, tail);
    got = cs ? last_msg(s, cs, &m, err) : -1;
    if (!cs) wm_error_set(err, "out of memory");
    free(cs);
    size_t off = (size_t)k * CHUNK, want = total - off < CHUNK ? (size_t)total - off : CHUNK;
    if (got == 0) wm_error_set(err, "its chunk %u is missing", k);
    if (got == 1 && (size_t)natsMsg_GetDataLength(m) != want) {
      wm_error_set(err, "its chunk %u has %d bytes, not %zu", k, natsMsg_GetDataLength(m), want);
      got = -1;
    }
    if (got == 1) memcpy(buf + off, natsMsg_GetData(m), want);
    if (m) natsMsg_Destroy(m);
    m = NULL;
    if (got != 1) {
      free(buf);
      return -1;
    }
  }
  if (wm_crc32(0, buf, (size_t)total) != crc) {
    free(buf);
    wm_error_set(err, "its chunks fail the CRC of its end marker (damaged)");
    return -1;
  }
  *data = buf;
  *len = (size_t)total;
  return 1;
}

/* Purges the messages on filter. */
static int purge(nats_store *s, const char *filter, wm_error *err) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Purge.Subject = filter;
  jsErrCode jerr = 0;
  natsStatus st = js_PurgeStream(s->js, s->stream, &o, &jerr);
  if (st == NATS_OK) return 0;
  char why[300];
  wm_error_set(err, "checkpoint store %s: cannot purge %s: %s", s->url, filter,
         wm_nats_why(st, jerr, why, sizeof why));
  return -1;
}

/* ---- the operations ------------------------------------------------------------------------ */

/* The epoch of complete checkpoint id in r, or 0. */
static uint64_t epoch_of(const rec *r, uint64_t id) {
  for (size_t i = 0; i < r->n; i++)
    if (r->ids[i] == id) return r->epochs[i];
  return 0;
}

static int nats_begin(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  nats_store *s = (nats_store *)b;
  char filter[512];
  /* only this epoch's: another process's objects under the same id are not ours to touch */
  snprintf(filter, sizeof filter, "%s.%" PRIu64 ".%" PRIu64 ".>", s->prefix, id, s->epoch);
  return purge(s, filter, err);
}

static int nats_put(wm_ckpt_backend *b, uint64_t id, const char *name, const void *head,
                    size_t headlen, const void *body, size_t bodylen, wm_error *err) {
  return put_object((nats_store *)b, id, name, head, headlen, body, bodylen, err);
}

static int nats_complete(wm_ckpt_backend *b, uint64_t id, const void *manifest, size_t len,
                         int crash, wm_error *err) {
  nats_store *s = (nats_store *)b;
  if (put_object(s, id, "MANIFEST", manifest, len, NULL, 0, err) != 0) return -1;
  if (crash) _exit(99); /* wm_ckpt_store_crash_before_rename: written, not yet complete */
  for (int tries = 0; tries < CAS_TRIES; tries++) {
    rec r;
    uint64_t rev = 0;
    int got = rec_read(s, &r, &rev, err);
    if (got < 0) return -1;
    if (got == 0) {
      wm_error_set(err, "checkpoint store %s: key '%s' of bucket '%s' was deleted while this "
                          "process held it", s->url, s->key, s->bucket);
      return -1;
    }
    if (r.epoch != s->epoch) {
      fenced(s, &r, id, err);
      rec_free(&r);
      return -1;
    }
    int rc = rec_add(&r, id, s->epoch);
    if (rc != 0) wm_error_set(err, "out of memory");
    if (rc == 0) rc = rec_write(s, &r, rev, err);
    rec_free(&r);
    if (rc <= 0) return rc;
  }
  wm_error_set(err, "checkpoint store %s: key '%s' kept changing", s->url, s->key);
  return -1;
}

static int nats_get(wm_ckpt_backend *b, uint64_t id, const char *name, size_t max,
                    uint8_t **data, size_t *len, wm_error *err) {
  nats_store *s = (nats_store *)b;
  *data = NULL;
  *len = 0;
  uint64_t epoch = strcmp(name, "MANIFEST") ? epoch_of(&s->seen, id) : 0;
  if (!epoch) { /* a MANIFEST is read from the key as it is now */
    rec r;
    uint64_t rev;
    int got = rec_read(s, &r, &rev, err);
    if (got <= 0) return got;
    rec_free(&s->seen);
    s->seen = r;
    epoch = epoch_of(&s->seen, id);
    if (!epoch) return 0; /* not complete */
  }
  wm_error sub;
  int got = get_object(s, id, epoch, name, max, data, len, &sub);
  if (got < 0) wm_error_set(err, "object %s of checkpoint %" PRIu64 " (epoch %" PRIu64 "): %s",
                            name, id, epoch, sub.msg);
  return got;
}

static int nats_list(wm_ckpt_backend *b, uint64_t **ids, size_t *n, wm_error *err) {
  nats_store *s = (nats_store *)b;
  *ids = NULL;
  *n = 0;
  char filter[512];
  snprintf(filter, sizeof filter, "%s.>", s->prefix);
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Info.SubjectsFilter = filter;
  jsStreamInfo *si = NULL;
  jsErrCode jerr = 0;
  natsStatus st = js_GetStreamInfo(&si, s->js, s->stream, &o, &jerr);
  if (st != NATS_OK) {
    char why[300];
    wm_error_set(err, "checkpoint store %s: stream '%s': %s", s->url, s->stream,
           wm_nats_why(st, jerr, why, sizeof why));
    return -1;
  }
  int cnt = si->State.Subjects ? si->State.Subjects->Count : 0;
  uint64_t *a = malloc(sizeof *a * (size_t)(cnt + 1));
  if (!a) {
    jsStreamInfo_Destroy(si);
    wm_error_set(err, "out of memory");
    return -1;
  }
  size_t pl = strlen(s->prefix);
  for (int i = 0; i < cnt; i++) {
    const char *subj = si->State.Subjects->List[i].Subject, *p = subj + pl + 1;
    uint64_t id = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 20) id = id * 10 + (uint64_t)(*p++ - '0'), digits++;
    if (!digits || *p != '.') continue; /* not an object of ours: ignored */
    size_t k = 0;
    while (k < *n && a[k] != id) k++;
    if (k == *n) a[(*n)++] = id;
  }
  jsStreamInfo_Destroy(si);
  *ids = a;
  return 0;
}

static int nats_remove(wm_ckpt_backend *b, uint64_t id, wm_error *err) {
  nats_store *s = (nats_store *)b;
  char filter[512];
  for (int tries = 0; tries < CAS_TRIES; tries++) {
    rec r;
    uint64_t rev = 0;
    int got = rec_read(s, &r, &rev, err);
    if (got < 0) return -1;
    if (got == 0 || r.epoch != s->epoch) { /* not ours any more: only our own objects */
      rec_free(&r);
      snprintf(filter, sizeof filter, "%s.%" PRIu64 ".%" PRIu64 ".>", s->prefix, id, s->epoch);
      return purge(s, filter, err);
    }
    size_t k = 0, j = 0;
    for (; k < r.n; k++)
      if (r.ids[k] != id) r.ids[j] = r.ids[k], r.epochs[j++] = r.epochs[k];
    int rc = 0;
    if (j != r.n) { /* off the list first: a reader never sees it half purged */
      r.n = j;
      rc = rec_write(s, &r, rev, err);
    }
    rec_free(&r);
    if (rc < 0) return -1;
    if (rc == 1) continue;
    snprintf(filter, sizeof filter, "%s.%" PRIu64 ".>", s->prefix, id);
    return purge(s, filter, err);
  }
  wm_error_set(err, "checkpoint store %s: key '%s' kept changing", s->url, s->key);
  return -1;
}

static void nats_free(wm_ckpt_backend *b) {
  nats_store *s = (nats_store *)b;
  if (!s) return;
  if (s->kv) kvStore_Destroy(s->kv);
  wm_nats_close(s->nc, s->js);
  rec_free(&s->seen);
  free(s->url);
  free(s->server);
  free(s->bucket);
  free(s->key);
  free(s->stream);
  free(s->prefix);
  free(s->who);
  free(s);
}

static const wm_ckpt_backend_vt nats_vt = {
    .begin = nats_begin,
    .put = nats_put,
    .complete = nats_complete,
    .get = nats_get,
    .list = nats_list,
    .remove = nats_remove,
    .free = nats_free,
};

/* ---- opening -------------------------------------------------------------------------------- */

static int name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

/* Splits nats://HOST:PORT/BUCKET[/PATH] into s. 0, or -1 with a message. */
static int parse_url(nats_store *s, const char *url, wm_error *err) {
  const char *hp = url + 7, *slash = strchr(hp, '/');
  if (strncmp(url, "nats://", 7) != 0 || !slash || slash == hp || !slash[1]) {
    wm_error_set(err, "checkpoint store %s: give it as nats://HOST:PORT/BUCKET (a bucket "
                        "name after the server)", url);
    return -1;
  }
  const char *bk = slash + 1, *bend = bk;
  while (name_char(*bend)) bend++;
  if (bend == bk || (*bend && *bend != '/')) {
    wm_error_set(err, "checkpoint store %s: the bucket name may hold only letters, digits, "
                        "'_' and '-'", url);
    return -1;
  }
  const char *path = *bend ? bend + 1 : "";
  /* names of letters, digits, '_', '-' and '.' (not first or last, never two in a row: a
   * KV key's tokens), single '/' between them */
  for (const char *p = path; *p; p++) {
    int first = p == path || p[-1] == '/', last = !p[1] || p[1] == '/';
    int ok = name_char(*p) || (*p == '.' && !first && !last && p[1] != '.') ||
             (*p == '/' && !first && p[1]);
    if (!ok) {
      wm_error_set(err, "checkpoint store %s: the path after the bucket may hold only "
                          "letters, digits, '_', '-', '.' inside names and single '/' between "
                          "names", url);
      return -1;
    }
  }
  size_t pl = strlen(path) ? strlen(path) : 7;
  s->has_path = *path != '\0';
  s->server = strndup(url, (size_t)(slash - url));
  s->bucket = strndup(bk, (size_t)(bend - bk));
  s->key = strdup(*path ? path : "default");
  s->stream = malloc(strlen(s->bucket ? s->bucket : "") + 8);
  s->prefix = malloc(strlen(s->bucket ? s->bucket : "") + pl + 16);
  if (!s->server || !s->bucket || !s->key || !s->stream || !s->prefix) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  sprintf(s->stream, "WMCK_%s", s->bucket);
  /* the key as one subject token: '/' written '=', '.' written '~' (neither is in a path) */
  int k = sprintf(s->prefix, "wmck.%s.", s->bucket);
  for (const char *p = s->key; *p; p++) s->prefix[k++] = *p == '/' ? '=' : *p == '.' ? '~' : *p;
  s->prefix[k] = '\0';
  return 0;
}

static int open_kv(nats_store *s, wm_error *err);

/* The stream WMCK_<BUCKET> (made when missing; one of that name but not wmrun's is refused)
 * and the KV bucket. */
static int open_stream(nats_store *s, wm_error *err) {
  char subj[200], why[300];
  snprintf(subj, sizeof subj, "wmck.%s.>", s->bucket);
  for (int tries = 0; tries < 2; tries++) {
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetStreamInfo(&si, s->js, s->stream, NULL, &jerr);
    if (st == NATS_OK) {
      int ours = si->Config && si->Config->SubjectsLen == 1 && !strcmp(si->Config->Subjects[0], subj);
      jsStreamInfo_Destroy(si);
      if (ours) break;
      wm_error_set(err, "checkpoint store %s: the stream '%s' on %s is not wmrun's checkpoint "
                          "stream (its subjects are not just %s): give the store another bucket",
             s->url, s->stream, s->server, subj);
      return -1;
    }
    if (st != NATS_NOT_FOUND) {
      wm_error_set(err, "checkpoint store %s: stream '%s': %s", s->url, s->stream,
             wm_nats_why(st, jerr, why, sizeof why));
      return -1;
    }
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const char *subjects[1] = {subj};
    cfg.Name = s->stream;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    st = js_AddStream(&si, s->js, &cfg, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    if (st == NATS_OK) break;
    if (tries == 1) { /* made by another process at the same moment is read again above */
      wm_error_set(err, "checkpoint store %s: cannot make the stream '%s': %s", s->url,
             s->stream, wm_nats_why(st, jerr, why, sizeof why));
      return -1;
    }
  }
  return open_kv(s, err);
}

/* The KV bucket <BUCKET> (made when missing). */
static int open_kv(nats_store *s, wm_error *err) {
  char why[300];
  natsStatus st = js_KeyValue(&s->kv, s->js, s->bucket);
  if (st == NATS_NOT_FOUND) {
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = s->bucket;
    kc.History = 1;
    kc.StorageType = js_FileStorage;
    st = js_CreateKeyValue(&s->kv, s->js, &kc);
    if (st != NATS_OK) st = js_KeyValue(&s->kv, s->js, s->bucket);
  }
  if (st != NATS_OK) {
    wm_error_set(err, "checkpoint store %s: KV bucket '%s': %s", s->url, s->bucket,
           last_error(st, why, sizeof why));
    return -1;
  }
  return 0;
}

/* Claims the key: its epoch + 1 with this process as holder. */
static int claim(nats_store *s, wm_error *err) {
  char host[256] = "?";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  for (int tries = 0; tries < CAS_TRIES; tries++) {
    rec r;
    uint64_t rev = 0;
    int got = rec_read(s, &r, &rev, err);
    if (got < 0) return -1;
    if (got == 0) memset(&r, 0, sizeof r);
    r.epoch++;
    snprintf(r.holder, sizeof r.holder, "pid %ld host %.200s", (long)getpid(), host);
    int rc = rec_write(s, &r, got ? rev : 0, err);
    uint64_t epoch = r.epoch;
    rec_free(&r);
    if (rc < 0) return -1;
    if (rc == 0) {
      s->epoch = epoch;
      return 0;
    }
  }
  wm_error_set(err, "checkpoint store %s: key '%s' kept changing", s->url, s->key);
  return -1;
}

wm_ckpt_backend *wm_ckpt_nats_open(const char *url, wm_error *err) {
  nats_store *s = calloc(1, sizeof *s);
  if (!s || !(s->url = strdup(url))) {
    free(s);
    wm_error_set(err, "out of memory");
    return NULL;
  }
  s->base.vt = &nats_vt;
  s->base.name = s->url;
  if (parse_url(s, url, err) != 0) goto bad;
  if (!(s->who = wm_nats_who("checkpoint store", s->server))) {
    wm_error_set(err, "out of memory");
    goto bad;
  }
  wm_error sub;
  if (wm_nats_connect(s->server, s->who, &s->nc, &s->js, &sub) != 0) {
    wm_error_set(err, "checkpoint store %s: %s", url, sub.msg);
    goto bad;
  }
  if (open_stream(s, err) != 0 || claim(s, err) != 0) goto bad;
  return &s->base;
bad:
  nats_free(&s->base);
  return NULL;
}

/* ---- marks: the key "[PATH/]<path>=<name>" of the bucket (wm_ckpt_store.h) ------------------ */

typedef struct nats_marks {
  wm_ckpt_marks base;
  nats_store *s; /* connected, its KV bucket open, never claimed */
} nats_marks;

/* The mark's key (malloc'ed), NULL when out of memory. */
static char *mark_key(const nats_store *s, const char *path, const char *name) {
  size_t n = strlen(s->key) + strlen(path) + strlen(name) + 4;
  char *k = malloc(n);
  if (k) snprintf(k, n, "%s%s%s=%s", s->has_path ? s->key : "", s->has_path ? "/" : "", path, name);
  return k;
}

static int nats_mark_get(wm_ckpt_marks *b, const char *path, const char *name, wm_error *err) {
  nats_store *s = ((nats_marks *)b)->s;
  char *key = mark_key(s, path, name);
  if (!key) return wm_error_set(err, "out of memory");
  kvEntry *e = NULL;
  natsStatus st = kvStore_Get(&e, s->kv, key);
  int rc = st == NATS_OK ? 1 : st == NATS_NOT_FOUND ? 0 : -1;
  if (rc < 0) {
    char why[300];
    wm_error_set(err, "checkpoint store %s: cannot read key '%s' of bucket '%s': %s", s->url, key,
                 s->bucket, last_error(st, why, sizeof why));
  }
  kvEntry_Destroy(e);
  free(key);
  return rc;
}

static int nats_mark_set(wm_ckpt_marks *b, const char *path, const char *name, wm_error *err) {
  nats_store *s = ((nats_marks *)b)->s;
  char *key = mark_key(s, path, name);
  if (!key) return wm_error_set(err, "out of memory");
  uint64_t rev = 0;
  natsStatus st = kvStore_PutString(&rev, s->kv, key, "set");
  int rc = 0;
  if (st != NATS_OK) {
    char why[300];
    rc = wm_error_set(err, "checkpoint store %s: cannot write key '%s' of bucket '%s': %s", s->url,
                      key, s->bucket, last_error(st, why, sizeof why));
  }
  free(key);
  return rc;
}

static void nats_marks_free(wm_ckpt_marks *b) {
  nats_marks *m = (nats_marks *)b;
  if (!m) return;
  nats_free(&m->s->base);
  free(m);
}

static const wm_ckpt_marks_vt nats_marks_vt = {
    .get = nats_mark_get, .set = nats_mark_set, .free = nats_marks_free};

wm_ckpt_marks *wm_ckpt_nats_marks(const char *url, wm_error *err) {
  nats_marks *m = calloc(1, sizeof *m);
  nats_store *s = calloc(1, sizeof *s);
  if (!m || !s || !(s->url = strdup(url))) {
    free(m);
    free(s);
    wm_error_set(err, "out of memory");
    return NULL;
  }
  s->base.vt = &nats_vt;
  s->base.name = s->url;
  m->base.vt = &nats_marks_vt;
  m->s = s;
  wm_error sub;
  if (parse_url(s, url, err) != 0) goto bad;
  if (!(s->who = wm_nats_who("checkpoint store", s->server))) {
    wm_error_set(err, "out of memory");
    goto bad;
  }
  if (wm_nats_connect(s->server, s->who, &s->nc, &s->js, &sub) != 0) {
    wm_error_set(err, "checkpoint store %s: %s", url, sub.msg);
    goto bad;
  }
  if (open_kv(s, err) == 0) return &m->base;
bad:
  nats_marks_free(&m->base);
  return NULL;
}
