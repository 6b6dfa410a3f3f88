/* The partitioned filesystem sink of SQL, in C (ops/wm_sqlfspart.h). */
#include "ops/wm_sqlfspart.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/wm_hash.h"
#include "graph/wm_statefmt.h"
#include "ops/wm_sqlfmt.h"
#include "time/wm_time.h"

/* ---- text --------------------------------------------------------------------------- */

/* floor division (Lua's //) */
static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The day's "yyyy-MM-dd " of ms, cached by day (rows come in time order, mostly). */
typedef struct tscache {
  int64_t day;
  int ok;
  char date[12];
} tscache;

static void add2(wm_buf *b, int64_t v) {
  char d[2] = {(char)('0' + v / 10), (char)('0' + v % 10)};
  wm_buf_add(b, d, 2);
}

/* wm_sqlfmt_timestamp's text, with the date part cached */
static void add_timestamp(wm_buf *b, int64_t ms, tscache *c) {
  int64_t day = fdiv(ms, 86400000), rem = ms - day * 86400000;
  if (!c->ok || c->day != day) {
    wm_buf t;
    wm_buf_init(&t);
    wm_sqlfmt_timestamp(&t, day * 86400000);
    c->ok = !t.oom && t.len == 23 && t.data[10] == ' '; /* a year of 4 digits */
    if (c->ok) memcpy(c->date, t.data, 11);
    c->day = day;
    wm_buf_free(&t);
  }
  if (!c->ok) {
    wm_sqlfmt_timestamp(b, ms);
    return;
  }
  wm_buf_add(b, c->date, 11);
  int64_t s = rem / 1000;
  add2(b, s / 3600);
  wm_buf_addc(b, ':');
  add2(b, s / 60 % 60);
  wm_buf_addc(b, ':');
  add2(b, s % 60);
  wm_buf_addc(b, '.');
  int64_t f = rem % 1000;
  char d[3] = {(char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10)};
  wm_buf_add(b, d, 3);
}

static void add_value_c(wm_buf *b, const wm_value *v, uint8_t kind, tscache *c) {
  switch (v->type) {
  case WM_BOOL:
    wm_buf_adds(b, kind == WM_FSP_BOOLEAN ? (v->u.b ? "TRUE" : "FALSE") : (v->u.b ? "true" : "false"));
    return;
  case WM_INT:
    if (kind == WM_FSP_TIMESTAMP) add_timestamp(b, v->u.i, c);
    else wm_buf_add_int(b, v->u.i);
    return;
  case WM_FLOAT: wm_sqlfmt_double(b, v->u.f); return;
  case WM_CSTR: case WM_STR: {
    size_t n;
    const char *s = wm_value_str(v, &n);
    wm_buf_add(b, s, n);
    return;
  }
  default: wm_format_value(b, v, 0, NULL, NULL); return;
  }
}

void wm_fspart_value(wm_buf *b, const wm_value *v, uint8_t kind) {
  tscache c = {0};
  add_value_c(b, v, kind, &c);
}

/* whether a field with byte c is quoted (delim, '"', CR, LF): a table per delimiter */
typedef struct quotes {
  uint8_t q[256];
} quotes;

static void quotes_init(quotes *t, char delim) {
  memset(t->q, 0, sizeof t->q);
  t->q[(unsigned char)delim] = t->q['"'] = t->q['\n'] = t->q['\r'] = 1;
}

static void csv_field(wm_buf *b, const char *s, size_t n, const quotes *t) {
  size_t i = 0;
  while (i < n && !t->q[(unsigned char)s[i]]) i++;
  if (i == n) {
    wm_buf_add(b, s, n);
    return;
  }
  wm_buf_addc(b, '"');
  size_t from = 0;
  for (i = 0; i < n; i++) {
    if (s[i] != '"') continue;
    wm_buf_add(b, s + from, i + 1 - from); /* through the quote, then it again */
    wm_buf_addc(b, '"');
    from = i + 1;
  }
  wm_buf_add(b, s + from, n - from);
  wm_buf_addc(b, '"');
}

void wm_fspart_csv_field(wm_buf *b, const char *s, size_t n, char delim) {
  quotes t;
  quotes_init(&t, delim);
  csv_field(b, s, n, &t);
}

/* Flink's PartitionPathUtils.escapePathName (connector_fs_partitioned.lua's ESCAPED): the control
 * characters, DEL and the 15 below */
static int escaped(unsigned char ch) {
  return ch < 32 || ch == '"' || ch == '#' || ch == '%' || ch == '\'' || ch == '*' || ch == '/' || ch == ':' ||
         ch == '=' || ch == '?' || ch == '\\' || ch == 127 || ch == '{' || ch == '[' || ch == ']' || ch == '^';
}

void wm_fspart_escape(wm_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  size_t from = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (!escaped(ch)) continue;
    wm_buf_add(b, s + from, i - from);
    char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
    wm_buf_add(b, e, 3);
    from = i + 1;
  }
  wm_buf_add(b, s + from, n - from);
}

/* Lua's %s */
static int space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int digit(char c) { return c >= '0' && c <= '9'; }

/* 1 or 2 digits at s[*i] (2 at most when max2, exactly 2 when !max2 and two) */
static int digits(const char *s, size_t n, size_t *i, int lo, int hi, int64_t *v) {
  size_t k = *i;
  int64_t x = 0;
  while (k < n && digit(s[k]) && (int)(k - *i) < hi) x = x * 10 + (s[k++] - '0');
  if ((int)(k - *i) < lo) return -1;
  *i = k;
  *v = x;
  return 0;
}

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y = m <= 2 ? y - 1 : y;
  int64_t era = fdiv(y >= 0 ? y : y - 399, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = fdiv(153 * (m + (m > 2 ? -3 : 9)) + 2, 5) + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int wm_fspart_parse_ts(const char *s, size_t n, int64_t *ms) {
  size_t i = 0;
  while (i < n && space(s[i])) i++;
  while (n > i && space(s[n - 1])) n--;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
  if (digits(s, n, &i, 4, 4, &y) || i >= n || s[i++] != '-' || digits(s, n, &i, 1, 2, &mo) || i >= n ||
      s[i++] != '-' || digits(s, n, &i, 1, 2, &d))
    return -1;
  if (i < n) {
    if (s[i] != ' ' && s[i] != 'T') return -1;
    i++;
    if (digits(s, n, &i, 1, 2, &h) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, 2, &mi)) return -1;
    if (i < n) {
      if (s[i++] != ':' || digits(s, n, &i, 2, 2, &sec)) return -1;
      if (i < n) {
        if (s[i++] != '.' || i >= n) return -1;
        int nf = 0;
        for (; i < n; i++) {
          if (!digit(s[i])) return -1;
          if (nf < 3) frac = frac * 10 + (s[i] - '0');
          nf++;
        }
        for (; nf < 3; nf++) frac *= 10;
      }
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) return -1;
  *ms = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + sec * 1000 + frac;
  return 0;
}

/* ---- the operator ------------------------------------------------------------------ */

typedef struct part {
  char *dir;        /* "<path>/a=x/b=y" */
  size_t dirlen;
  uint64_t hash;
  int64_t n;        /* the next file's number */
  wm_buf lines;     /* the open file's lines, each with its '\n' */
  int opened_set;
  int64_t opened;   /* processing time of the open file's first line */
  int64_t time;     /* partition time (partition-time trigger) */
} part;

typedef struct ptimer {
  int64_t t;
  uint32_t part;
  uint8_t proc;     /* 1 processing time, 0 event time */
} ptimer;

typedef struct fspart {
  wm_fspart_config cfg; /* strings owned */
  wm_field *cf, *ff;
  part *parts;
  uint32_t nparts, cap;
  uint32_t *ix;         /* open addressing: part index + 1, 0 empty */
  uint32_t ixcap;
  ptimer *timers;       /* registration order */
  size_t ntimers, tcap;
  int check_set;
  int64_t check;
  uint32_t last;        /* the last row's partition + 1 (0: none), ... */
  wm_buf spare;         /* the buffer of the last big file rolled, for the next one */
  wm_buf lastval;       /* ... and its partition values' text (val's bytes and ends) */
  size_t lastlen[64];
  quotes qt;
  wm_buf dir, val, name;
  tscache tc;
} fspart;

static int fail(wm_op *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(wm_op *op, const char *fmt, ...) {
  fspart *p = op->impl;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return wm_ctx_error(op->ctx, "%s: %s", p->cfg.what, msg);
}

static int oom(wm_op *op) {
  return wm_ctx_error(op->ctx, "%s: out of memory", ((fspart *)op->impl)->cfg.what);
}

/* mkdir -p */
static int make_dirs(const char *dir) {
  char *d = strdup(dir);
  if (!d) return -1;
  int rc = 0;
  for (char *q = d + 1;; q++) {
    if (*q != '/' && *q != '\0') continue;
    char c = *q;
    *q = '\0';
    if (mkdir(d, 0777) != 0 && errno != EEXIST) rc = -1;
    *q = c;
    if (!c) break;
  }
  free(d);
  return rc;
}

/* connector_fs_partitioned.lua's write_file: `.<name>.inprogress` written whole, renamed */
static int write_file(wm_op *op, const char *dir, const char *name, const char *data, size_t len) {
  fspart *p = op->impl;
  wm_buf *tmp = &p->name;
  wm_buf_clear(tmp);
  wm_buf_adds(tmp, dir);
  wm_buf_adds(tmp, "/.");
  wm_buf_adds(tmp, name);
  wm_buf_adds(tmp, ".inprogress");
  if (tmp->oom) return oom(op);
  int fd = open(tmp->data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (make_dirs(dir) != 0) return fail(op, "cannot make the folder '%s'", dir);
    fd = open(tmp->data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return fail(op, "cannot write '%s': %s", tmp->data, strerror(errno));
  }
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      close(fd);
      return fail(op, "cannot write '%s': %s", tmp->data, strerror(e));
    }
    off += (size_t)w;
  }
  if (close(fd) != 0) return fail(op, "cannot write '%s': %s", tmp->data, strerror(errno));
  char *to = malloc(strlen(dir) + strlen(name) + 2);
  if (!to) return oom(op);
  sprintf(to, "%s/%s", dir, name);
  int rc = rename(tmp->data, to);
  free(to);
  if (rc != 0) return fail(op, "cannot rename '%s': %s", tmp->data, strerror(errno));
  return WM_OK;
}

static int roll(wm_op *op, part *pt) {
  if (pt->lines.len == 0) return WM_OK;
  char name[40];
  snprintf(name, sizeof name, "part-0-%lld", (long long)pt->n);
  if (write_file(op, pt->dir, name, pt->lines.data, pt->lines.len) != WM_OK) return WM_ERR;
  pt->n++;
  wm_buf_clear(&pt->lines);
  if (pt->lines.cap > 1 << 16) { /* a big file's buffer goes to the next file that opens */
    fspart *p = op->impl;
    wm_buf_free(&p->spare);
    p->spare = pt->lines;
    wm_buf_init(&pt->lines);
  }
  pt->opened_set = 0;
  return WM_OK;
}

static int commit(wm_op *op, part *pt) {
  fspart *p = op->impl;
  if (roll(op, pt) != WM_OK) return WM_ERR;
  if (p->cfg.success) return write_file(op, pt->dir, "_SUCCESS", "", 0);
  return WM_OK;
}

/* the partition's time: the pattern with each $column replaced by its value */
static int partition_time(wm_op *op, const wm_buf *vals, const size_t *vlen, int64_t *t) {
  fspart *p = op->impl;
  const char *pat = p->cfg.pattern;
  wm_buf s;
  wm_buf_init(&s);
  for (size_t i = 0; pat[i];) {
    char c = pat[i];
    int id0 = (pat[i + 1] >= 'a' && pat[i + 1] <= 'z') || (pat[i + 1] >= 'A' && pat[i + 1] <= 'Z') ||
              pat[i + 1] == '_';
    if (c != '$' || !id0) {
      wm_buf_addc(&s, c);
      i++;
      continue;
    }
    size_t j = i + 1;
    while ((pat[j] >= 'a' && pat[j] <= 'z') || (pat[j] >= 'A' && pat[j] <= 'Z') || (pat[j] >= '0' && pat[j] <= '9') ||
           pat[j] == '_')
      j++;
    int k = 0;
    while (k < p->cfg.ncols && !(strlen(p->cfg.cols[k]) == j - i - 1 && memcmp(p->cfg.cols[k], pat + i + 1, j - i - 1) == 0))
      k++;
    if (k < p->cfg.ncols) wm_buf_add(&s, vals->data + (k ? vlen[k - 1] : 0), vlen[k] - (k ? vlen[k - 1] : 0));
    else wm_buf_add(&s, pat + i, j - i);
    i = j;
  }
  int rc = WM_OK;
  if (s.oom) rc = oom(op);
  else if (wm_fspart_parse_ts(s.data ? s.data : "", s.len, t) != 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "the partition time '%s' (from 'partition.time-extractor.timestamp-pattern' = '%s') is no "
             "timestamp (yyyy-MM-dd HH:mm:ss)", s.data ? s.data : "", pat);
    rc = wm_ctx_error(op->ctx, "%s: %s", p->cfg.what, msg);
  }
  wm_buf_free(&s);
  return rc;
}

static int ix_put(fspart *p, uint32_t i);

static int ix_grow(fspart *p) {
  uint32_t cap = p->ixcap ? p->ixcap * 2 : 64;
  uint32_t *ix = calloc(cap, sizeof *ix);
  if (!ix) return -1;
  free(p->ix);
  p->ix = ix;
  p->ixcap = cap;
  for (uint32_t i = 0; i < p->nparts; i++) ix_put(p, i);
  return 0;
}

static int ix_put(fspart *p, uint32_t i) {
  uint32_t m = p->ixcap - 1, h = (uint32_t)p->parts[i].hash & m;
  while (p->ix[h]) h = (h + 1) & m;
  p->ix[h] = i + 1;
  return 0;
}

/* The part of folder dir (made when new: *made = 1); UINT32_MAX when out of memory. */
static uint32_t part_of(fspart *p, const char *dir, size_t len, int *made) {
  uint64_t h = wm_hash_bytes(dir, len, 0);
  *made = 0;
  if (p->ixcap) {
    uint32_t m = p->ixcap - 1;
    for (uint32_t k = (uint32_t)h & m; p->ix[k]; k = (k + 1) & m) {
      part *pt = &p->parts[p->ix[k] - 1];
      if (pt->hash == h && pt->dirlen == len && memcmp(pt->dir, dir, len) == 0) return p->ix[k] - 1;
    }
  }
  if ((p->nparts + 1) * 2 > p->ixcap && ix_grow(p) != 0) return UINT32_MAX;
  if (p->nparts == p->cap) {
    uint32_t cap = p->cap ? p->cap * 2 : 16;
    part *np = realloc(p->parts, cap * sizeof *np);
    if (!np) return UINT32_MAX;
    p->parts = np;
    p->cap = cap;
  }
  part *pt = &p->parts[p->nparts];
  memset(pt, 0, sizeof *pt);
  if (!(pt->dir = malloc(len + 1))) return UINT32_MAX;
  memcpy(pt->dir, dir, len);
  pt->dir[len] = '\0';
  pt->dirlen = len;
  pt->hash = h;
  wm_buf_init(&pt->lines);
  uint32_t i = p->nparts++;
  ix_put(p, i);
  *made = 1;
  return i;
}

static int add_timer(wm_op *op, int64_t t, int proc, uint32_t i) {
  fspart *p = op->impl;
  if (p->ntimers == p->tcap) {
    size_t cap = p->tcap ? p->tcap * 2 : 16;
    ptimer *nt = realloc(p->timers, cap * sizeof *nt);
    if (!nt) return oom(op);
    p->timers = nt;
    p->tcap = cap;
  }
  p->timers[p->ntimers++] = (ptimer){.t = t, .part = i, .proc = (uint8_t)proc};
  return WM_OK;
}

/* whether a processing-time timer at t is registered already (the check, or a list's) */
static int pt_known(const fspart *p, int64_t t) {
  if (p->check_set && p->check == t) return 1;
  for (size_t k = 0; k < p->ntimers; k++)
    if (p->timers[k].proc && p->timers[k].t == t) return 1;
  return 0;
}

static int fspart_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  (void)ts;
  fspart *p = op->impl;
  wm_ctx *ctx = op->ctx;
  const wm_fspart_config *c = &p->cfg;
  wm_buf *vals = &p->val;
  wm_buf_clear(vals);
  size_t vlen[64];
  for (int i = 0; i < c->ncols; i++) {
    wm_value v;
    const wm_value *pv = wm_field_peek(&p->cf[i], rec);
    if (pv) v = *pv;
    else if (wm_field_get(&ctx->host, &p->cf[i], rec, &v, &ctx->error) != 0) return wm_op_failed(op, WM_ERR);
    if (v.type == WM_NIL) wm_buf_adds(vals, "__DEFAULT_PARTITION__");
    else add_value_c(vals, &v, c->col_kinds[i], &p->tc);
    vlen[i] = vals->len;
  }
  if (vals->oom) return oom(op);
  uint32_t i;
  part *pt;
  /* the last row's partition when the values are its values (their ends too: "a" "bc" is not
   * "ab" "c") */
  if (p->last && p->lastval.len == vals->len && memcmp(p->lastval.data, vals->data, vals->len) == 0 &&
      memcmp(p->lastlen, vlen, (size_t)c->ncols * sizeof vlen[0]) == 0) {
    i = p->last - 1;
    pt = &p->parts[i];
  } else {
    wm_buf *dir = &p->dir;
    wm_buf_clear(dir);
    wm_buf_adds(dir, c->path);
    for (int k = 0; k < c->ncols; k++) {
      size_t from = k ? vlen[k - 1] : 0;
      wm_buf_addc(dir, '/');
      wm_buf_adds(dir, c->cols[k]);
      wm_buf_addc(dir, '=');
      wm_fspart_escape(dir, vals->data + from, vlen[k] - from);
    }
    if (dir->oom) return oom(op);
    int made;
    i = part_of(p, dir->data, dir->len, &made);
    if (i == UINT32_MAX) return oom(op);
    pt = &p->parts[i];
    if (made && c->partition_time && partition_time(op, vals, vlen, &pt->time) != WM_OK) return WM_ERR;
    wm_buf_clear(&p->lastval);
    wm_buf_add(&p->lastval, vals->data ? vals->data : "", vals->len);
    if (p->lastval.oom) return oom(op);
    memcpy(p->lastlen, vlen, (size_t)c->ncols * sizeof vlen[0]);
    p->last = i + 1;
  }
  if (pt->lines.len == 0) {
    int64_t now = wm_ctx_now(ctx);
    if (pt->lines.cap == 0 && p->spare.cap > 0) {
      pt->lines = p->spare;
      wm_buf_init(&p->spare);
    }
    pt->opened_set = 1;
    pt->opened = now;
    if (c->partition_time) {
      int64_t t = pt->time + c->delay, w1 = op->wm == WM_TIME_MAX ? WM_TIME_MAX : op->wm + 1;
      if (w1 > t) t = w1;
      if (add_timer(op, t, 0, i) != WM_OK) return WM_ERR;
    } else {
      int64_t t = now + c->delay;
      int known = pt_known(p, t);
      if (add_timer(op, t, 1, i) != WM_OK || add_timer(op, WM_TIME_MAX, 0, i) != WM_OK) return WM_ERR;
      if (!known && wm_ctx_register_processing_timer(ctx, op, t) != WM_OK) return WM_ERR;
    }
    if (!p->check_set) {
      int64_t t = now + c->check;
      int known = pt_known(p, t);
      p->check_set = 1;
      p->check = t;
      if (!known && wm_ctx_register_processing_timer(ctx, op, t) != WM_OK) return WM_ERR;
    }
  }
  wm_buf *b = &pt->lines;
  for (int k = 0; k < c->nfields; k++) {
    wm_value v;
    const wm_value *pv = wm_field_peek(&p->ff[k], rec);
    if (pv) v = *pv;
    else if (wm_field_get(&ctx->host, &p->ff[k], rec, &v, &ctx->error) != 0) return wm_op_failed(op, WM_ERR);
    if (k) wm_buf_addc(b, c->delim);
    if (v.type == WM_NIL) {
      csv_field(b, c->null_literal, strlen(c->null_literal), &p->qt);
    } else if (v.type == WM_INT && c->kinds[k] != WM_FSP_TIMESTAMP && c->delim != '-' && !digit(c->delim)) {
      wm_buf_add_int(b, v.u.i); /* nothing in it to quote */
    } else if (v.type == WM_CSTR || v.type == WM_STR) {
      size_t n;
      const char *s = wm_value_str(&v, &n);
      csv_field(b, s, n, &p->qt);
    } else {
      wm_buf *t = &p->name;
      wm_buf_clear(t);
      add_value_c(t, &v, c->kinds[k], &p->tc);
      if (t->oom) return oom(op);
      csv_field(b, t->data ? t->data : "", t->len, &p->qt);
    }
  }
  wm_buf_addc(b, '\n');
  if (b->oom) return oom(op);
  return WM_OK;
}

/* Fires the timers of one domain at time t: each of their partitions, in registration order,
 * rolls (event time at the end of the input, in the process-time trigger) or commits. */
static int fire_list(wm_op *op, int proc, int64_t t) {
  fspart *p = op->impl;
  size_t k = 0, w = 0;
  uint32_t *due = NULL;
  size_t nd = 0;
  for (; k < p->ntimers; k++) {
    ptimer *x = &p->timers[k];
    if (x->proc == proc && x->t == t) {
      if (!due && !(due = malloc(p->ntimers * sizeof *due))) return oom(op);
      due[nd++] = x->part;
    } else {
      p->timers[w++] = *x;
    }
  }
  p->ntimers = w;
  int rc = WM_OK;
  for (size_t j = 0; j < nd && rc == WM_OK; j++) {
    part *pt = &p->parts[due[j]];
    rc = (!proc && t == WM_TIME_MAX) ? roll(op, pt) : commit(op, pt);
  }
  free(due);
  return rc;
}

static int fspart_watermark(wm_op *op, int64_t wm) {
  fspart *p = op->impl;
  for (;;) {
    int found = 0;
    int64_t t = 0;
    for (size_t k = 0; k < p->ntimers; k++) {
      const ptimer *x = &p->timers[k];
      if (!x->proc && x->t <= wm && (!found || x->t < t)) {
        t = x->t;
        found = 1;
      }
    }
    if (!found) break;
    if (fire_list(op, 0, t) != WM_OK) return WM_ERR;
  }
  return wm_op_emit_watermark(op, wm);
}

static int fspart_processing_time(wm_op *op, int64_t now) {
  fspart *p = op->impl;
  for (;;) {
    int found = 0;
    int64_t t = 0;
    if (p->check_set && p->check <= now) {
      t = p->check;
      found = 1;
    }
    for (size_t k = 0; k < p->ntimers; k++) {
      const ptimer *x = &p->timers[k];
      if (x->proc && x->t <= now && (!found || x->t < t)) {
        t = x->t;
        found = 1;
      }
    }
    if (!found) break;
    if (p->check_set && p->check == t) {
      p->check_set = 0;
      int open = 0;
      for (uint32_t i = 0; i < p->nparts; i++) {
        part *pt = &p->parts[i];
        if (pt->opened_set && t - pt->opened >= p->cfg.rollover && roll(op, pt) != WM_OK) return WM_ERR;
        if (pt->lines.len > 0) open = 1;
      }
      if (open) {
        int64_t nt = t + p->cfg.check;
        int known = pt_known(p, nt);
        p->check_set = 1;
        p->check = nt;
        if (!known && wm_ctx_register_processing_timer(op->ctx, op, nt) != WM_OK) return WM_ERR;
      }
    }
    if (fire_list(op, 1, t) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

/* ---- checkpoints --------------------------------------------------------------------
 * version, 'F', the number of partitions, each: its folder (length, bytes), next file number,
 * whether a file is open and since when, its partition time, its lines (length, bytes); then
 * whether the check timer is set and its time; then the timers in registration order (time,
 * domain, partition). */

static void put_bytes(wm_state_io *io, const char *s, size_t n) {
  wm_state_put_u(io, n);
  wm_buf_add(io->out, s, n);
}

static int fspart_snapshot(wm_op *op, wm_state_io *io) {
  fspart *p = op->impl;
  wm_state_put_header(io, 'F');
  wm_state_put_u(io, p->nparts);
  for (uint32_t i = 0; i < p->nparts; i++) {
    const part *pt = &p->parts[i];
    put_bytes(io, pt->dir, pt->dirlen);
    wm_state_put_i(io, pt->n);
    wm_state_put_u(io, (uint64_t)pt->opened_set);
    wm_state_put_i(io, pt->opened);
    wm_state_put_i(io, pt->time);
    put_bytes(io, pt->lines.data ? pt->lines.data : "", pt->lines.len);
  }
  wm_state_put_u(io, (uint64_t)p->check_set);
  wm_state_put_i(io, p->check);
  wm_state_put_u(io, p->ntimers);
  for (size_t k = 0; k < p->ntimers; k++) {
    wm_state_put_i(io, p->timers[k].t);
    wm_state_put_u(io, p->timers[k].proc);
    wm_state_put_u(io, p->timers[k].part);
  }
  return wm_state_put_done(op, io);
}

static int get_bytes(wm_state_rd *r, const char **s, size_t *n, const char *what) {
  uint64_t len;
  if (wm_state_get_u(r, &len, what) != WM_OK) return WM_ERR;
  if (len > (uint64_t)(r->end - r->p)) return wm_state_bad(r, "%s: %llu bytes, past the end", what, (unsigned long long)len);
  *s = (const char *)r->p;
  *n = (size_t)len;
  r->p += len;
  return WM_OK;
}

static void release_parts(fspart *p) {
  for (uint32_t i = 0; i < p->nparts; i++) {
    free(p->parts[i].dir);
    wm_buf_free(&p->parts[i].lines);
  }
  p->nparts = 0;
  p->ntimers = 0;
  p->last = 0;
  if (p->ix) memset(p->ix, 0, p->ixcap * sizeof *p->ix);
}

static int fspart_restore(wm_op *op, wm_state_io *io) {
  fspart *p = op->impl;
  wm_state_rd r;
  wm_state_rd_init(&r, op, io);
  if (wm_state_get_header(&r, 'F', "partitioned filesystem sink") != WM_OK) return WM_ERR;
  release_parts(p);
  uint64_t n;
  if (wm_state_get_count(&r, &n, 5, "partitions") != WM_OK) return WM_ERR;
  for (uint64_t i = 0; i < n; i++) {
    const char *dir, *lines;
    size_t dl, ll;
    uint64_t set;
    int64_t num, opened, time;
    if (get_bytes(&r, &dir, &dl, "a partition's folder") != WM_OK || wm_state_get_i(&r, &num, "a file number") != WM_OK ||
        wm_state_get_u(&r, &set, "a file's state") != WM_OK || wm_state_get_i(&r, &opened, "a file's time") != WM_OK ||
        wm_state_get_i(&r, &time, "a partition time") != WM_OK || get_bytes(&r, &lines, &ll, "a file's lines") != WM_OK)
      return WM_ERR;
    int made;
    uint32_t k = part_of(p, dir, dl, &made);
    if (k == UINT32_MAX) return oom(op);
    if (!made) return wm_state_bad(&r, "the partition '%.*s' twice", (int)dl, dir);
    part *pt = &p->parts[k];
    pt->n = num;
    pt->opened_set = set != 0;
    pt->opened = opened;
    pt->time = time;
    wm_buf_add(&pt->lines, lines, ll);
    if (pt->lines.oom) return oom(op);
  }
  uint64_t cs, nt;
  if (wm_state_get_u(&r, &cs, "the check timer") != WM_OK || wm_state_get_i(&r, &p->check, "the check time") != WM_OK ||
      wm_state_get_count(&r, &nt, 3, "timers") != WM_OK)
    return WM_ERR;
  p->check_set = cs != 0;
  for (uint64_t k = 0; k < nt; k++) {
    int64_t t;
    uint64_t proc, pi;
    if (wm_state_get_i(&r, &t, "a timer's time") != WM_OK || wm_state_get_u(&r, &proc, "a timer's domain") != WM_OK ||
        wm_state_get_u(&r, &pi, "a timer's partition") != WM_OK)
      return WM_ERR;
    if (pi >= p->nparts || proc > 1) return wm_state_bad(&r, "a timer of partition %llu of %u", (unsigned long long)pi, p->nparts);
    if (add_timer(op, t, (int)proc, (uint32_t)pi) != WM_OK) return WM_ERR;
  }
  if (wm_state_get_end(&r) != WM_OK) return WM_ERR;
  /* the processing-time timers, asked for again (once per time) */
  if (p->check_set && wm_ctx_register_processing_timer(op->ctx, op, p->check) != WM_OK) return WM_ERR;
  for (size_t k = 0; k < p->ntimers; k++) {
    const ptimer *x = &p->timers[k];
    if (!x->proc || (p->check_set && p->check == x->t)) continue;
    size_t j = 0;
    while (j < k && !(p->timers[j].proc && p->timers[j].t == x->t)) j++;
    if (j == k && wm_ctx_register_processing_timer(op->ctx, op, x->t) != WM_OK) return WM_ERR;
  }
  return WM_OK;
}

static void fspart_free(wm_op *op) {
  fspart *p = op->impl;
  if (!p) return;
  release_parts(p);
  free(p->parts);
  free(p->ix);
  free(p->timers);
  wm_fspart_config *c = &p->cfg;
  for (int i = 0; i < c->ncols; i++) free((char *)c->cols[i]);
  for (int i = 0; i < c->nfields; i++) free((char *)c->fields[i]);
  free((void *)c->cols);
  free((void *)c->fields);
  free((void *)c->col_kinds);
  free((void *)c->kinds);
  free((char *)c->path);
  free((char *)c->null_literal);
  free((char *)c->pattern);
  free((char *)c->what);
  free(p->cf);
  free(p->ff);
  wm_buf_free(&p->dir);
  wm_buf_free(&p->val);
  wm_buf_free(&p->name);
  wm_buf_free(&p->lastval);
  wm_buf_free(&p->spare);
  free(p);
}

static const wm_op_vt fspart_vt = {.kind = "sql_fs_partitioned",
                                   .record = fspart_record,
                                   .watermark = fspart_watermark,
                                   .processing_time = fspart_processing_time,
                                   .free = fspart_free,
                                   .snapshot = fspart_snapshot,
                                   .restore = fspart_restore};

static char *dup_or(const char *s, int *ok) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *ok = 0;
  return d;
}

wm_op *wm_fspart_new(wm_ctx *ctx, const char *name, const wm_fspart_config *cfg) {
  if (cfg->ncols < 1 || cfg->ncols > 64 || cfg->nfields < 0 || !cfg->path || (cfg->partition_time && !cfg->pattern)) {
    wm_ctx_error(ctx, "%s: a bad partitioned sink (%d partition columns)", cfg->what ? cfg->what : "?", cfg->ncols);
    return NULL;
  }
  fspart *p = calloc(1, sizeof *p);
  if (!p) {
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  int ok = 1;
  wm_fspart_config *c = &p->cfg;
  *c = *cfg;
  c->cols = NULL;
  c->fields = NULL;
  c->col_kinds = NULL;
  c->kinds = NULL;
  c->ncols = c->nfields = 0;
  c->path = dup_or(cfg->path, &ok);
  c->null_literal = dup_or(cfg->null_literal ? cfg->null_literal : "", &ok);
  c->pattern = dup_or(cfg->pattern, &ok);
  c->what = dup_or(cfg->what ? cfg->what : "partitioned filesystem sink", &ok);
  wm_buf_init(&p->dir);
  wm_buf_init(&p->val);
  wm_buf_init(&p->name);
  wm_buf_init(&p->lastval);
  wm_buf_init(&p->spare);
  quotes_init(&p->qt, c->delim);
  char **cols = calloc((size_t)cfg->ncols, sizeof *cols);
  char **fields = calloc((size_t)cfg->nfields + 1, sizeof *fields);
  uint8_t *ck = malloc((size_t)cfg->ncols), *fk = malloc((size_t)cfg->nfields + 1);
  p->cf = calloc((size_t)cfg->ncols, sizeof *p->cf);
  p->ff = calloc((size_t)cfg->nfields + 1, sizeof *p->ff);
  c->cols = (const char *const *)cols;
  c->fields = (const char *const *)fields;
  c->col_kinds = ck;
  c->kinds = fk;
  ok = ok && cols && fields && ck && fk && p->cf && p->ff;
  for (int i = 0; ok && i < cfg->ncols; i++) {
    ok = (cols[i] = strdup(cfg->cols[i])) != NULL;
    c->ncols = i + 1;
    if (ok) {
      ck[i] = cfg->col_kinds[i];
      p->cf[i].name = cols[i];
      p->cf[i].index = -1;
    }
  }
  for (int i = 0; ok && i < cfg->nfields; i++) {
    ok = (fields[i] = strdup(cfg->fields[i])) != NULL;
    c->nfields = i + 1;
    if (ok) {
      fk[i] = cfg->kinds[i];
      p->ff[i].name = fields[i];
      p->ff[i].index = -1;
    }
  }
  wm_op *op = ok ? wm_op_new(ctx, &fspart_vt, p, name) : NULL;
  if (!op) {
    wm_op tmp = {.impl = p};
    fspart_free(&tmp);
    wm_ctx_error(ctx, "out of memory");
  }
  return op;
}
