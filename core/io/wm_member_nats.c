/* The NATS group-membership backend of scale-out (wm_member.h): static shares, or leases
 * in the JetStream key-value bucket wm_<group> (libnats kvStore), renewed with
 * compare-and-set from wm_member_poll on the supervisor's thread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/wm_partition.h"
#include "io/wm_member.h"
#include "io/wm_nats.h"

#define DEFAULT_LEASE_MS 10000

enum { P_FREE = 0, P_OWNED = 1, P_REVOKING = 2 };

typedef struct msrc {
  char *stream;  /* the partition names' stream ("ev" in "ev/3") */
  char *kname;   /* the stream as a key token (letters, digits, '-', '_'; others '_') */
  char *filter;  /* the read_nats subject filter ("ev.*.>") or NULL */
  int count;
  int is_static; /* a static share: assigned at the start, never revoked, no lease */
  unsigned char *share; /* static: per partition, whether it is in the share */
  unsigned char *state; /* per partition: P_* */
  uint64_t *rev;        /* the lease key's last revision (owned) */
  int64_t *renewed;     /* when it was last renewed (ms, monotonic) */
} msrc;

typedef struct member_nats {
  wm_member base; /* first */
  char *group, *name, *url, *who, *bucket, *member_key, *pre; /* pre: "$KV.<bucket>." */
  natsConnection *nc;
  jsCtx *js;
  kvStore *kv;
  int nsources;
  msrc *src;
  int64_t lease_ms, heartbeat_ms, next_tick;
  int64_t wait_ms;     /* how long a request to the bucket waits: half a heartbeat */
  wm_member_event *q; /* events waiting (a FIFO: q[qhead .. qn-1]) */
  int qn, qhead, qcap;
  int warned;          /* the server was unreachable (reported once until it answers) */
} member_nats;

static int64_t now_ms(void) { return (int64_t)(uv_hrtime() / 1000000u); }

#define BIND_MS 10000 /* how long binding the lease bucket may take (set_wait) */

static int push(member_nats *m, int kind, int s, int p) {
  if (m->qhead > 0 && m->qhead == m->qn) m->qhead = m->qn = 0;
  if (m->qn == m->qcap) {
    int cap = m->qcap ? m->qcap * 2 : 16;
    wm_member_event *q = realloc(m->q, (size_t)cap * sizeof *q);
    if (!q) return -1;
    m->q = q;
    m->qcap = cap;
  }
  wm_member_event *ev = &m->q[m->qn++];
  memset(ev, 0, sizeof *ev);
  ev->kind = kind;
  ev->source = s;
  ev->partition = p;
  snprintf(ev->name, sizeof ev->name, "%s/%d", m->src[s].stream, p);
  return 0;
}

/* "part.<stream>.<p>" */
static void part_key(const member_nats *m, int s, int p, char *out, size_t n) {
  snprintf(out, n, "part.%s.%d", m->src[s].kname, p);
}

/* Publishes value on key of the bucket, expecting its last revision `last` (0: that it has
 * none), or with del a delete marker. *rev the new revision. NATS status, *jerr set. */
static natsStatus kv_publish(member_nats *m, const char *key, const char *value, uint64_t last, int del,
                             uint64_t *rev, jsErrCode *jerr) {
  char subj[600];
  snprintf(subj, sizeof subj, "%s%s", m->pre, key);
  natsMsg *msg = NULL;
  natsStatus st = natsMsg_Create(&msg, subj, NULL, value, value ? (int)strlen(value) : 0);
  if (st == NATS_OK && del) st = natsMsgHeader_Set(msg, "KV-Operation", "DEL");
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = m->wait_ms;
  if (last) po.ExpectLastSubjectSeq = last;
  else po.ExpectNoMessage = true;
  jsPubAck *pa = NULL;
  *jerr = 0;
  if (st == NATS_OK) st = js_PublishMsg(&pa, m->js, msg, &po, jerr);
  if (st == NATS_OK && rev) *rev = pa->Sequence;
  jsPubAck_Destroy(pa);
  natsMsg_Destroy(msg);
  return st;
}

/* Gives up partition p of source s: its lease key is deleted on its revision (a lease that
 * is no longer ours is left alone). */
static void drop_lease(member_nats *m, int s, int p) {
  msrc *src = &m->src[s];
  if (src->state[p] == P_FREE) return;
  src->state[p] = P_FREE;
  if (src->is_static || !m->kv) return;
  char key[400];
  part_key(m, s, p, key, sizeof key);
  jsErrCode jerr;
  natsStatus st = kv_publish(m, key, NULL, src->rev[p], 1, NULL, &jerr);
  if (st != NATS_OK && jerr != JSStreamWrongLastSequenceErr) {
    char why[300];
    fprintf(stderr, "wmrun: group '%s': could not release %s/%d (%s): it is free once its lease expires\n",
            m->group, src->stream, p, wm_nats_why(st, jerr, why, sizeof why));
  }
  src->rev[p] = 0;
}

static int lost(member_nats *m, int s, int p) {
  m->src[s].state[p] = P_FREE;
  m->src[s].rev[p] = 0;
  return push(m, WM_MEMBER_LOST, s, p);
}

static int is_transient(natsStatus st) {
  return st == NATS_TIMEOUT || st == NATS_CONNECTION_CLOSED || st == NATS_CONNECTION_DISCONNECTED ||
         st == NATS_NO_SERVER || st == NATS_NO_RESPONDERS || st == NATS_STALE_CONNECTION ||
         st == NATS_IO_ERROR;
}

static void unreachable(member_nats *m, natsStatus st, jsErrCode jerr) {
  if (m->warned) return;
  m->warned = 1;
  char why[300];
  fprintf(stderr, "wmrun: group '%s': the lease bucket %s at %s does not answer (%s); retrying\n", m->group,
          m->bucket, m->url, wm_nats_why(st, jerr, why, sizeof why));
}

/* Renews every lease held (compare-and-set on its revision): one that another member has
 * taken meanwhile is LOST. When the server does not answer (each request waits at most
 * half a heartbeat), the remaining leases are not asked for in this round; a lease is LOST
 * once it may have expired: the lease minus two heartbeats after its last renewal went
 * out (sent before the server stamped it, so the server's TTL runs out later still, and
 * the next check comes at most a heartbeat and a half after). *down set when the server did
 * not answer. */
static int renew(member_nats *m, int64_t now, int *down) {
  *down = 0;
  for (int s = 0; s < m->nsources; s++) {
    msrc *src = &m->src[s];
    if (src->is_static) continue;
    for (int p = 0; p < src->count; p++) {
      if (src->state[p] == P_FREE) continue;
      jsErrCode jerr = 0;
      natsStatus st = NATS_TIMEOUT;
      if (!*down) {
        char key[400];
        part_key(m, s, p, key, sizeof key);
        uint64_t rev = 0;
        st = kv_publish(m, key, m->name, src->rev[p], 0, &rev, &jerr);
        if (st == NATS_OK) {
          src->rev[p] = rev;
          src->renewed[p] = now;
          m->warned = 0;
          continue;
        }
      }
      if (!*down && !is_transient(st)) { /* refused: another has written it since */
        if (lost(m, s, p) != 0) return -1;
        continue;
      }
      if (!*down) unreachable(m, st, jerr);
      *down = 1;
      if (now_ms() - src->renewed[p] >= m->lease_ms - 2 * m->heartbeat_ms && lost(m, s, p) != 0) return -1;
    }
  }
  return 0;
}

/* The keys now in the bucket: how many members are alive, and which partitions of each
 * leased source are taken (taken[s][p]). 0, or -1 when the server did not answer. */
static int survey(member_nats *m, int *members, unsigned char **taken) {
  kvKeysList list;
  memset(&list, 0, sizeof list);
  kvWatchOptions o;
  kvWatchOptions_Init(&o);
  o.Timeout = m->wait_ms;
  natsStatus st = kvStore_Keys(&list, m->kv, &o);
  if (st == NATS_NOT_FOUND) st = NATS_OK; /* an empty bucket */
  if (st != NATS_OK) {
    unreachable(m, st, 0);
    return -1;
  }
  *members = 0;
  for (int i = 0; i < list.Count; i++) {
    const char *k = list.Keys[i];
    if (strncmp(k, "member.", 7) == 0) {
      (*members)++;
      continue;
    }
    if (strncmp(k, "part.", 5) != 0) continue;
    const char *dot = strrchr(k, '.');
    if (!dot || dot == k + 4) continue;
    for (int s = 0; s < m->nsources; s++) {
      size_t kl = strlen(m->src[s].kname);
      if (m->src[s].is_static || (size_t)(dot - (k + 5)) != kl || strncmp(k + 5, m->src[s].kname, kl) != 0)
        continue;
      char *end;
      long p = strtol(dot + 1, &end, 10);
      if (*end == '\0' && p >= 0 && p < m->src[s].count) taken[s][p] = 1;
    }
  }
  kvKeysList_Destroy(&list);
  if (*members < 1) *members = 1; /* ourselves, whose key the server has not shown yet */
  return 0;
}

/* The fair share of every leased source: extras beyond ceil(count / members) are revoked
 * (the highest partitions first), free partitions are taken up to it. */
static int rebalance(member_nats *m, int64_t now) {
  unsigned char **taken = calloc((size_t)m->nsources, sizeof *taken);
  int rc = taken ? 0 : -1;
  for (int s = 0; rc == 0 && s < m->nsources; s++)
    if (!(taken[s] = calloc((size_t)m->src[s].count, 1))) rc = -1;
  int members = 1;
  if (rc == 0 && survey(m, &members, taken) != 0) goto done; /* next time */
  for (int s = 0; rc == 0 && s < m->nsources; s++) {
    msrc *src = &m->src[s];
    if (src->is_static) continue;
    int share = (src->count + members - 1) / members, owned = 0;
    for (int p = 0; p < src->count; p++) owned += src->state[p] != P_FREE;
    for (int p = src->count - 1; p >= 0 && owned > share; p--) {
      if (src->state[p] != P_OWNED) continue;
      src->state[p] = P_REVOKING;
      owned--;
      if (push(m, WM_MEMBER_REVOKE, s, p) != 0) rc = -1;
    }
    for (int p = 0; rc == 0 && p < src->count && owned < share; p++) {
      if (src->state[p] != P_FREE || taken[s][p]) continue;
      char key[400];
      part_key(m, s, p, key, sizeof key);
      uint64_t rev = 0;
      natsStatus st = kvStore_Create(&rev, m->kv, key, m->name, (int)strlen(m->name));
      if (st != NATS_OK) continue; /* taken by another member first (or no answer: next time) */
      src->state[p] = P_OWNED;
      src->rev[p] = rev;
      src->renewed[p] = now;
      owned++;
      if (push(m, WM_MEMBER_ASSIGN, s, p) != 0) rc = -1;
    }
  }
done:
  for (int s = 0; taken && s < m->nsources; s++) free(taken[s]);
  free(taken);
  return rc;
}

static int tick(member_nats *m, wm_error *err) {
  int64_t now = now_ms();
  m->next_tick = now + m->heartbeat_ms;
  if (!m->kv) return 0;
  int down;
  if (renew(m, now, &down) != 0) goto oom;
  if (down) return 0; /* (the next round asks again) */
  uint64_t rev;
  natsStatus st = kvStore_PutString(&rev, m->kv, m->member_key, m->name);
  if (st != NATS_OK) {
    unreachable(m, st, 0);
    return 0;
  }
  if (rebalance(m, now) != 0) goto oom;
  return 0;
oom:
  wm_error_set(err, "group '%s': out of memory", m->group);
  return -1;
}

static int mn_poll(wm_member *base, wm_member_event *ev, wm_error *err) {
  member_nats *m = (member_nats *)base;
  if (m->qhead == m->qn && now_ms() >= m->next_tick && tick(m, err) != 0) return -1;
  if (m->qhead == m->qn) return 0;
  *ev = m->q[m->qhead++];
  return 1;
}

static int mn_release(wm_member *base, int source, int partition, wm_error *err) {
  member_nats *m = (member_nats *)base;
  if (source < 0 || source >= m->nsources || partition < 0 || partition >= m->src[source].count) {
    wm_error_set(err, "group '%s': no partition %d of source %d to release", m->group, partition, source);
    return -1;
  }
  drop_lease(m, source, partition);
  return 0;
}

/* The subject filter of partition p: the filter's first '*' token made p. */
static void partition_subject(const char *filter, int p, char *out, size_t n) {
  size_t o = 0;
  int done = 0;
  for (const char *c = filter; *c && o + 12 < n; c++) {
    int token_start = c == filter || c[-1] == '.';
    if (!done && token_start && c[0] == '*' && (c[1] == '.' || c[1] == '\0')) {
      o += (size_t)snprintf(out + o, n - o, "%d", p);
      done = 1;
    } else {
      out[o++] = *c;
    }
  }
  out[o] = '\0';
}

/* Past partition p's last message: its filter's last stream sequence + 1 (the lag of
 * --metrics, end - position, then counts stream sequences: at most the partition's
 * messages still to read, 0 once it has caught up), or -1 (none, or no answer). */
static long long mn_end(wm_member *base, int s, int p) {
  member_nats *m = (member_nats *)base;
  if (!m->js || s < 0 || s >= m->nsources || !m->src[s].filter || p < 0 || p >= m->src[s].count) return -1;
  char subj[512];
  partition_subject(m->src[s].filter, p, subj, sizeof subj);
  natsMsg *last = NULL;
  jsErrCode jerr = 0;
  natsStatus st = js_GetLastMsg(&last, m->js, m->src[s].stream, subj, NULL, &jerr);
  long long end = st == NATS_OK ? (long long)natsMsg_GetSequence(last) + 1 : -1;
  if (last) natsMsg_Destroy(last);
  return end;
}

/* Outside a static share: never ours. */
static int mn_foreign(wm_member *base, int s, int p) {
  member_nats *m = (member_nats *)base;
  if (s < 0 || s >= m->nsources || p < 0 || p >= m->src[s].count) return 0;
  return m->src[s].is_static && !m->src[s].share[p];
}

static void mn_free(wm_member *base) {
  member_nats *m = (member_nats *)base;
  if (!m) return;
  for (int s = 0; m->src && s < m->nsources; s++) {
    for (int p = 0; m->src[s].state && p < m->src[s].count; p++) drop_lease(m, s, p);
    free(m->src[s].stream);
    free(m->src[s].kname);
    free(m->src[s].filter);
    free(m->src[s].share);
    free(m->src[s].state);
    free(m->src[s].rev);
    free(m->src[s].renewed);
  }
  if (m->kv && m->member_key) kvStore_Delete(m->kv, m->member_key);
  if (m->kv) kvStore_Destroy(m->kv);
  wm_nats_close(m->nc, m->js);
  free(m->src);
  free(m->q);
  free(m->group);
  free(m->name);
  free(m->url);
  free(m->who);
  free(m->bucket);
  free(m->member_key);
  free(m->pre);
  free(m);
}

static const wm_member_ops nats_ops = {.kind = "nats", .poll = mn_poll, .release = mn_release,
                                       .free = mn_free, .end = mn_end, .foreign = mn_foreign};

/* prefix + a + mid + b (mid and b may be NULL). */
static char *cat(const char *prefix, const char *a, const char *mid, const char *b) {
  size_t n = strlen(prefix) + strlen(a) + (mid ? strlen(mid) : 0) + (b ? strlen(b) : 0) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s%s%s", prefix, a, mid ? mid : "", b ? b : "");
  return s;
}

/* A member name: host-pid-random (letters, digits, '-' and '_'). */
static char *default_name(void) {
  char host[64] = "host";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "host");
  host[sizeof host - 1] = '\0';
  uint32_t r = 0;
  if (uv_random(NULL, NULL, &r, sizeof r, 0, NULL) != 0) r = (uint32_t)uv_hrtime();
  char buf[128];
  snprintf(buf, sizeof buf, "%s-%ld-%08x", host, (long)getpid(), (unsigned)r);
  for (char *c = buf; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
      *c = '_';
  return strdup(buf);
}

/* The lease bucket: bound when it exists, else created with TTL = the lease time; the
 * lease time is then the bucket's own TTL. */
static int open_bucket(member_nats *m, wm_error *err) {
  char why[300];
  natsStatus st = js_KeyValue(&m->kv, m->js, m->bucket);
  if (st == NATS_NOT_FOUND) {
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = m->bucket;
    kc.History = 1;
    kc.TTL = m->lease_ms * 1000000; /* nanoseconds (the stream's max age) */
    st = js_CreateKeyValue(&m->kv, m->js, &kc);
    if (st != NATS_OK) st = js_KeyValue(&m->kv, m->js, m->bucket); /* made by another at once */
  }
  if (st != NATS_OK) {
    wm_error_set(err, "group '%s': cannot open the lease bucket %s at %s: %s", m->group, m->bucket, m->url,
             wm_nats_why(st, 0, why, sizeof why));
    return -1;
  }
  kvStatus *ks = NULL;
  if (kvStore_Status(&ks, m->kv) == NATS_OK) {
    int64_t ttl = kvStatus_TTL(ks) / 1000000;
    if (ttl > 0) m->lease_ms = ttl;
  }
  if (ks) kvStatus_Destroy(ks);
  return 0;
}

/* The bucket's requests (kvStore's own: create, put, keys) wait at most wait_ms: a JetStream
 * context of that wait, the bucket bound again on it. */
static int set_wait(member_nats *m, wm_error *err) {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = m->wait_ms;
  jsCtx *js = NULL;
  kvStore *kv = NULL;
  natsStatus st = natsConnection_JetStream(&js, m->nc, &o);
  /* binding asks the server for the bucket's stream once: on a loaded machine that one
   * request may take longer than a heartbeat's wait, so it is tried again for up to
   * BIND_MS before the group gives up (the requests after it keep the short wait) */
  int64_t t0 = now_ms();
  if (st == NATS_OK) {
    do st = js_KeyValue(&kv, js, m->bucket);
    while (st == NATS_TIMEOUT && now_ms() - t0 < BIND_MS);
  }
  if (st != NATS_OK) {
    char why[300];
    wm_error_set(err, "group '%s': cannot open the lease bucket %s at %s: %s", m->group, m->bucket, m->url,
             wm_nats_why(st, 0, why, sizeof why));
    if (js) jsCtx_Destroy(js);
    return -1;
  }
  kvStore_Destroy(m->kv);
  jsCtx_Destroy(m->js);
  m->kv = kv;
  m->js = js;
  return 0;
}

wm_member *wm_member_nats_new(const wm_member_nats_config *cfg, wm_error *err) {
  const char *group = cfg->c.group ? cfg->c.group : "";
  if (!*group) {
    wm_error_set(err, "a NATS group needs a name");
    return NULL;
  }
  for (const char *c = group; *c; c++) {
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
          *c == '_')) {
      wm_error_set(err, "group '%s': a NATS group name may hold only letters, digits, '-' and '_' "
               "(its lease bucket is wm_<group>)", group);
      return NULL;
    }
  }
  member_nats *m = calloc(1, sizeof *m);
  if (!m) goto oom;
  m->base.ops = &nats_ops;
  m->nsources = cfg->c.nsources;
  m->lease_ms = cfg->lease_ms > 0 ? cfg->lease_ms : DEFAULT_LEASE_MS;
  m->group = strdup(group);
  m->url = strdup(cfg->url ? cfg->url : "");
  m->name = cfg->member ? strdup(cfg->member) : default_name();
  m->bucket = cat("wm_", group, NULL, NULL);
  m->src = calloc((size_t)(m->nsources > 0 ? m->nsources : 1), sizeof *m->src);
  if (!m->group || !m->url || !m->name || !m->bucket || !m->src) goto oom;
  m->member_key = cat("member.", m->name, NULL, NULL);
  m->pre = cat("$KV.", m->bucket, ".", NULL);
  m->who = cat("group '", group, "': the NATS server at ", m->url);
  if (!m->member_key || !m->pre || !m->who) goto oom;
  int leased = 0;
  for (int s = 0; s < m->nsources; s++) {
    msrc *src = &m->src[s];
    src->count = cfg->c.counts[s];
    src->stream = strdup(cfg->c.sources[s]);
    src->kname = strdup(cfg->c.sources[s]);
    size_t n = (size_t)(src->count > 0 ? src->count : 1);
    src->state = calloc(n, 1);
    src->rev = calloc(n, sizeof *src->rev);
    src->renewed = calloc(n, sizeof *src->renewed);
    const char *filter = cfg->subjects ? cfg->subjects[s] : NULL;
    src->filter = filter ? strdup(filter) : NULL;
    if (!src->stream || !src->kname || !src->state || !src->rev || !src->renewed || (filter && !src->filter))
      goto oom;
    for (char *c = src->kname; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
        *c = '_';
    const char *share = cfg->partitions ? cfg->partitions[s] : NULL;
    if (!share) {
      leased = 1;
      continue;
    }
    src->is_static = 1;
    if (!(src->share = calloc(n, 1))) goto oom;
    int *list, k;
    wm_error why;
    if (wm_parse_partitions(share, src->count, &list, &k, &why) != 0) {
      wm_error_set(err, "group '%s': stream '%s': %s", group, src->stream, why.msg);
      mn_free(&m->base);
      return NULL;
    }
    for (int i = 0; i < k; i++) {
      src->state[list[i]] = P_OWNED;
      src->share[list[i]] = 1;
      if (push(m, WM_MEMBER_ASSIGN, s, list[i]) != 0) {
        free(list);
        goto oom;
      }
    }
    free(list);
  }
  if (leased && !cfg->url) {
    wm_error_set(err, "group '%s': leases need the url of a NATS server", group);
    mn_free(&m->base);
    return NULL;
  }
  if (cfg->url) {
    wm_error e;
    if (wm_nats_connect(m->url, m->who, &m->nc, &m->js, &e) != 0) {
      wm_error_set(err, "group '%s': %s", group, e.msg);
      mn_free(&m->base);
      return NULL;
    }
  }
  if (leased) {
    if (open_bucket(m, err) != 0) {
      mn_free(&m->base);
      return NULL;
    }
  }
  m->heartbeat_ms = cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : m->lease_ms / 4; /* (the bucket's) */
  if (m->heartbeat_ms < 1) m->heartbeat_ms = 1;
  m->wait_ms = m->heartbeat_ms / 2 > 50 ? m->heartbeat_ms / 2 : 50;
  if (leased && set_wait(m, err) != 0) {
    mn_free(&m->base);
    return NULL;
  }
  m->base.poll_ms = (int)(m->heartbeat_ms / 10 > 0 ? m->heartbeat_ms / 10 : 1);
  if (!leased) m->base.poll_ms = 1000;
  return &m->base;
oom:
  wm_error_set(err, "group '%s': out of memory", group);
  mn_free(m ? &m->base : NULL);
  return NULL;
}
