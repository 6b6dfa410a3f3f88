/* REGEXP_EXTRACT's regular expressions in C (ops/wm_rregex.h): lua/wm/sql/regex.lua's parser
 * and backtracking matcher, the continuations of its closures made explicit (a chain of
 * `kont` on the C stack). A repeat of one character class or literal loops instead of
 * recursing per character (the same matches: such a node matches at most one way). */
#include "ops/wm_rregex.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X_LIT, X_SET, X_BOL, X_EOL, X_WORDB, X_GROUP, X_SEQ, X_ALT, X_REP };

typedef struct xnode {
  uint8_t kind;
  uint8_t flag;   /* X_SET: `.` (takes a whole UTF-8 character); X_WORDB: \b; X_REP: lazy */
  unsigned char c; /* X_LIT */
  int group;      /* X_GROUP: its number */
  int child;      /* X_GROUP, X_REP */
  int min, max;   /* X_REP (max INT_MAX: no bound) */
  int *kids;      /* X_SEQ, X_ALT: owned */
  int nkids;
  uint8_t set[32]; /* X_SET: a bit per byte */
} xnode;

struct wm_rregex {
  xnode *n;
  int len, cap, root, ngroups;
  uint8_t first[32]; /* the bytes a match that takes any can begin with */
  bool nullable;     /* whether a match can take none (then every start is tried) */
  /* compiling */
  const char *pat;
  size_t plen, pos; /* pos: 0-based (regex.lua's pos - 1) */
  char *err;
  size_t errsz;
  bool failed;
  /* matching */
  const unsigned char *s;
  size_t sn, stop;
  size_t *cs, *ce; /* per group: the capture [cs, ce), cs SIZE_MAX when none */
  int depth;
  bool deep;
};

/* ---- compiling ------------------------------------------------------------------------- */

static int fail(wm_rregex *r, const char *msg) {
  if (!r->failed) snprintf(r->err, r->errsz, "%s (at character %zu of the pattern)", msg, r->pos + 1);
  r->failed = true;
  return -1;
}
static int oom(wm_rregex *r) {
  if (!r->failed) snprintf(r->err, r->errsz, "out of memory");
  r->failed = true;
  return -1;
}
static int peek(const wm_rregex *r) { return r->pos < r->plen ? (unsigned char)r->pat[r->pos] : -1; }
static int at(const wm_rregex *r, size_t i) { return i < r->plen ? (unsigned char)r->pat[i] : -1; }

static int node(wm_rregex *r, int kind) {
  if (r->len == r->cap) {
    int cap = r->cap ? r->cap * 2 : 16;
    xnode *n = realloc(r->n, (size_t)cap * sizeof *n);
    if (!n) return oom(r);
    r->n = n;
    r->cap = cap;
  }
  xnode *x = &r->n[r->len];
  memset(x, 0, sizeof *x);
  x->kind = (uint8_t)kind;
  return r->len++;
}

static void set_add(uint8_t *set, int b) { set[b >> 3] |= (uint8_t)(1u << (b & 7)); }
static bool set_has(const uint8_t *set, int b) { return set[b >> 3] & (1u << (b & 7)); }
static void set_negate(uint8_t *set) {
  for (int i = 0; i < 32; i++) set[i] = (uint8_t)~set[i];
}
static bool is_punct(int c) { return c >= 0 && c < 128 && c > 32 && c != 127 && !((c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z')); }
static bool is_upper(int c) { return c >= 'A' && c <= 'Z'; }
/* \d \w \s (lower case e): their bytes added to set; false for another letter */
static bool class_of(uint8_t *set, int e) {
  if (e == 'd') {
    for (int b = '0'; b <= '9'; b++) set_add(set, b);
  } else if (e == 'w') {
    for (int b = '0'; b <= '9'; b++) set_add(set, b);
    for (int b = 'A'; b <= 'Z'; b++) set_add(set, b);
    for (int b = 'a'; b <= 'z'; b++) set_add(set, b);
    set_add(set, '_');
  } else if (e == 's') {
    static const int sp[] = {9, 10, 11, 12, 13, 32};
    for (int i = 0; i < 6; i++) set_add(set, sp[i]);
  } else {
    return false;
  }
  return true;
}
/* regex.lua's ESCAPES: the byte, or -1 */
static int escape_of(int e) {
  switch (e) {
  case 't': return '\t';
  case 'n': return '\n';
  case 'r': return '\r';
  case 'f': return '\f';
  case 'e': return 27;
  case 'a': return 7;
  default: return -1;
  }
}
static int lower(int c) { return is_upper(c) ? c + 32 : c; }

static int parse_alt(wm_rregex *r);

/* after '[' */
static int parse_class(wm_rregex *r) {
  uint8_t set[32] = {0};
  bool neg = false, first = true;
  if (peek(r) == '^') {
    neg = true;
    r->pos++;
  }
  for (;;) {
    int c = peek(r);
    if (c < 0) return fail(r, "an unclosed '['");
    if (c == ']' && !first) {
      r->pos++;
      break;
    }
    first = false;
    int lo = -1;
    if (c == '\\') {
      int e = at(r, r->pos + 1);
      r->pos += 2;
      uint8_t sub[32] = {0};
      if (e >= 0 && class_of(sub, lower(e))) {
        if (is_upper(e)) set_negate(sub);
        for (int i = 0; i < 32; i++) set[i] |= sub[i];
      } else if (escape_of(e) >= 0) {
        lo = escape_of(e);
      } else if (is_punct(e)) {
        lo = e;
      } else {
        return fail(r, "a '\\' escape in a character class that is not supported");
      }
    } else if (c == '[' || (c == '&' && at(r, r->pos + 1) == '&')) {
      return fail(r, "nested classes and '&&' in a character class are not supported");
    } else {
      lo = c;
      r->pos++;
    }
    if (lo >= 0) {
      int n1 = at(r, r->pos + 1);
      if (peek(r) == '-' && n1 != ']' && n1 >= 0) {
        int hi = n1;
        if (hi == '\\') {
          int e = at(r, r->pos + 2);
          hi = escape_of(e) >= 0 ? escape_of(e) : is_punct(e) ? e : -1;
          if (hi < 0) return fail(r, "a '\\' escape as the end of a range that is not supported");
          r->pos += 3;
        } else {
          r->pos += 2;
        }
        for (int b = lo; b <= hi; b++) set_add(set, b);
      } else {
        set_add(set, lo);
      }
    }
  }
  if (neg) set_negate(set);
  int i = node(r, X_SET);
  if (i >= 0) memcpy(r->n[i].set, set, sizeof set);
  return i;
}

static int parse_atom(wm_rregex *r) {
  int c = peek(r);
  if (c == '(') {
    r->pos++;
    int g = 0;
    if (peek(r) == '?') {
      if (at(r, r->pos + 1) != ':') return fail(r, "a '(?' group other than '(?:' is not supported");
      r->pos += 2;
    } else {
      g = ++r->ngroups;
    }
    int inner = parse_alt(r);
    if (inner < 0) return -1;
    if (peek(r) != ')') return fail(r, "an unclosed '('");
    r->pos++;
    if (!g) return inner;
    int i = node(r, X_GROUP);
    if (i >= 0) {
      r->n[i].group = g;
      r->n[i].child = inner;
    }
    return i;
  }
  if (c == '[') {
    r->pos++;
    return parse_class(r);
  }
  if (c == '.') {
    r->pos++;
    int i = node(r, X_SET);
    if (i < 0) return -1;
    for (int b = 0; b < 256; b++)
      if (b != 10 && b != 13 && (b < 0x80 || b >= 0xC0)) set_add(r->n[i].set, b);
    r->n[i].flag = 1;
    return i;
  }
  if (c == '^' || c == '$') {
    r->pos++;
    return node(r, c == '^' ? X_BOL : X_EOL);
  }
  if (c == '\\') {
    int e = at(r, r->pos + 1);
    r->pos += 2;
    uint8_t set[32] = {0};
    if (e >= 0 && class_of(set, lower(e))) {
      if (is_upper(e)) set_negate(set);
      int i = node(r, X_SET);
      if (i >= 0) memcpy(r->n[i].set, set, sizeof set);
      return i;
    }
    if (e == 'b' || e == 'B') {
      int i = node(r, X_WORDB);
      if (i >= 0) r->n[i].flag = e == 'b';
      return i;
    }
    int b = escape_of(e) >= 0 ? escape_of(e) : is_punct(e) ? e : -1;
    if (b < 0) return fail(r, "a '\\' escape that is not supported");
    int i = node(r, X_LIT);
    if (i >= 0) r->n[i].c = (unsigned char)b;
    return i;
  }
  if (c == '*' || c == '+' || c == '?' || c == '{') return fail(r, "a quantifier with nothing to repeat");
  r->pos++;
  int i = node(r, X_LIT);
  if (i >= 0) r->n[i].c = (unsigned char)c;
  return i;
}

/* a decimal number of the pattern at *p (digits only), capped at INT_MAX */
static int number(const wm_rregex *r, size_t *p) {
  long long v = 0;
  while (at(r, *p) >= '0' && at(r, *p) <= '9') {
    v = v * 10 + (at(r, *p) - '0');
    if (v > INT_MAX) v = INT_MAX;
    (*p)++;
  }
  return (int)v;
}

/* a list of node indexes being made */
typedef struct ilist {
  int *v;
  int n, cap;
} ilist;
static int push(wm_rregex *r, ilist *l, int x) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 4;
    int *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return oom(r);
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = x;
  return 0;
}
/* a SEQ or ALT node of the list (which it takes) */
static int list_node(wm_rregex *r, int kind, ilist *l) {
  int i = node(r, kind);
  if (i < 0) {
    free(l->v);
    return -1;
  }
  r->n[i].kids = l->v;
  r->n[i].nkids = l->n;
  return i;
}

static int parse_seq(wm_rregex *r) {
  ilist items = {0};
  for (;;) {
    int c = peek(r);
    if (c < 0 || c == '|' || c == ')') break;
    int m = parse_atom(r);
    if (m < 0) goto bad;
    int q = peek(r), min = -1, max = 0;
    if (q == '*') { min = 0; max = INT_MAX; r->pos++; }
    else if (q == '+') { min = 1; max = INT_MAX; r->pos++; }
    else if (q == '?') { min = 0; max = 1; r->pos++; }
    else if (q == '{') {
      /* ^{(%d+)(,?%d*)()} */
      size_t p = r->pos + 1, d = p;
      int a = number(r, &p);
      bool ok = p > d;
      max = a;
      if (ok && at(r, p) == ',') {
        p++;
        size_t e = p;
        int b = number(r, &p);
        max = p > e ? b : INT_MAX;
      } else if (ok && at(r, p) >= '0' && at(r, p) <= '9') {
        ok = false;
      }
      if (!ok || at(r, p) != '}') {
        fail(r, "a '{' that is no {n}, {n,} or {n,m}");
        goto bad;
      }
      min = a;
      r->pos = p + 1;
    }
    if (min >= 0) {
      bool lazy = false;
      if (peek(r) == '?') {
        lazy = true;
        r->pos++;
      } else if (peek(r) == '+') {
        fail(r, "possessive quantifiers are not supported");
        goto bad;
      }
      int rep = node(r, X_REP);
      if (rep < 0) goto bad;
      r->n[rep].child = m;
      r->n[rep].min = min;
      r->n[rep].max = max;
      r->n[rep].flag = lazy;
      m = rep;
    }
    if (push(r, &items, m) != 0) goto bad;
  }
  if (items.n == 1) {
    int one = items.v[0];
    free(items.v);
    return one;
  }
  return list_node(r, X_SEQ, &items);
bad:
  free(items.v);
  return -1;
}

static int parse_alt(wm_rregex *r) {
  ilist alts = {0};
  int s = parse_seq(r);
  if (s < 0 || push(r, &alts, s) != 0) goto bad;
  while (peek(r) == '|') {
    r->pos++;
    s = parse_seq(r);
    if (s < 0 || push(r, &alts, s) != 0) goto bad;
  }
  if (alts.n == 1) {
    free(alts.v);
    return s;
  }
  return list_node(r, X_ALT, &alts);
bad:
  free(alts.v);
  return -1;
}

/* The bytes a match of node i can begin with, added to set; true when it can match taking no
 * byte (zero-width assertions count as taking none: an over-estimate of the bytes). */
static bool first_of(const wm_rregex *r, int i, uint8_t *set, int depth) {
  const xnode *x = &r->n[i];
  if (depth > 200) { /* (deeper than any parse: give up on skipping) */
    memset(set, 0xff, 32);
    return true;
  }
  switch (x->kind) {
  case X_LIT: set_add(set, x->c); return false;
  case X_SET:
    for (int k = 0; k < 32; k++) set[k] |= x->set[k];
    return false;
  case X_BOL: case X_EOL: case X_WORDB: return true;
  case X_GROUP: return first_of(r, x->child, set, depth + 1);
  case X_SEQ:
    for (int k = 0; k < x->nkids; k++)
      if (!first_of(r, x->kids[k], set, depth + 1)) return false;
    return true;
  case X_ALT: {
    bool any = false;
    for (int k = 0; k < x->nkids; k++) any = first_of(r, x->kids[k], set, depth + 1) || any;
    return any;
  }
  default: /* X_REP */
    return first_of(r, x->child, set, depth + 1) || x->min == 0;
  }
}

void wm_rregex_free(wm_rregex *r) {
  if (!r) return;
  for (int i = 0; i < r->len; i++) free(r->n[i].kids);
  free(r->n);
  free(r->cs);
  free(r->ce);
  free(r);
}

wm_rregex *wm_rregex_new(const char *pat, size_t len, char *err, size_t errsz) {
  wm_rregex *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, errsz, "out of memory");
    return NULL;
  }
  r->pat = pat;
  r->plen = len;
  r->err = err;
  r->errsz = errsz;
  r->root = parse_alt(r);
  if (r->root >= 0 && r->pos < r->plen) fail(r, "an unmatched ')'");
  if (!r->failed) r->nullable = first_of(r, r->root, r->first, 0);
  if (!r->failed) {
    r->cs = malloc((size_t)(r->ngroups + 1) * sizeof *r->cs);
    r->ce = malloc((size_t)(r->ngroups + 1) * sizeof *r->ce);
    if (!r->cs || !r->ce) oom(r);
  }
  r->pat = NULL;
  r->err = NULL;
  if (r->failed) {
    wm_rregex_free(r);
    return NULL;
  }
  return r;
}

int wm_rregex_groups(const wm_rregex *r) { return r->ngroups; }

/* ---- matching ---------------------------------------------------------------------------- */

/* What to do after a node matched up to j: regex.lua's continuation closures. */
enum { K_DONE, K_SEQ, K_GROUP, K_REP };
typedef struct kont {
  uint8_t kind;
  int node;             /* K_SEQ: the sequence (idx: its next item); K_GROUP, K_REP: the node */
  int idx;              /* K_REP: the count so far */
  size_t start;         /* K_GROUP: where the group began; K_REP: where this round began */
  const struct kont *next;
} kont;

/* nested calls allowed: well inside a thread's stack, under AddressSanitizer too */
#define MAX_DEPTH 5000

static bool match(wm_rregex *r, int ni, size_t i, const kont *k);
static bool rep(wm_rregex *r, int ni, size_t i, const kont *k, int count);

static bool run(wm_rregex *r, const kont *k, size_t j) {
  switch (k->kind) {
  case K_DONE:
    r->stop = j;
    return true;
  case K_SEQ: {
    const xnode *x = &r->n[k->node];
    if (k->idx == x->nkids) return run(r, k->next, j);
    kont nk = {K_SEQ, k->node, k->idx + 1, 0, k->next};
    return match(r, x->kids[k->idx], j, &nk);
  }
  case K_GROUP: {
    int g = r->n[k->node].group;
    size_t os = r->cs[g], oe = r->ce[g];
    r->cs[g] = k->start;
    r->ce[g] = j;
    if (run(r, k->next, j)) return true;
    r->cs[g] = os;
    r->ce[g] = oe;
    return false;
  }
  default: /* K_REP: an empty round ends the loop */
    if (j == k->start && k->idx >= r->n[k->node].min) return false;
    return rep(r, k->node, j, k->next, k->idx + 1);
  }
}

static bool is_word(const wm_rregex *r, size_t i) {
  if (i >= r->sn) return false;
  int b = r->s[i];
  return b == '_' || (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
}

/* one step of a single-character node (X_LIT, X_SET) at i: the end, or SIZE_MAX for none */
static size_t step(const wm_rregex *r, const xnode *x, size_t i) {
  if (i >= r->sn) return SIZE_MAX;
  int b = r->s[i];
  if (x->kind == X_LIT) return b == x->c ? i + 1 : SIZE_MAX;
  if (!set_has(x->set, b)) return SIZE_MAX;
  size_t j = i + 1;
  if (x->flag && b >= 0xC0)
    while (j < r->sn && r->s[j] >= 0x80 && r->s[j] < 0xC0) j++;
  return j;
}

/* the repeat of a single-character node from i: a loop over the ends (each round matches one
 * way and never empty, so the recursion of regex.lua's rep tries exactly these, in this order) */
static bool rep_simple(wm_rregex *r, const xnode *rp, const xnode *c, size_t i, const kont *k) {
  if (rp->flag) { /* lazy: the fewest rounds first */
    size_t j = i;
    for (int count = 0;; count++) {
      if (count >= rp->min && run(r, k, j)) return true;
      if (r->deep || count >= rp->max) return false;
      j = step(r, c, j);
      if (j == SIZE_MAX) return false;
    }
  }
  /* greedy: as many rounds as match, then back one at a time */
  size_t j = i;
  int count = 0;
  while (count < rp->max) {
    size_t e = step(r, c, j);
    if (e == SIZE_MAX) break;
    j = e;
    count++;
  }
  for (;;) {
    if (count < rp->min) return false;
    if (run(r, k, j)) return true;
    if (r->deep || count == 0) return false;
    /* the previous end: one byte back, and past a UTF-8 character's continuation bytes */
    j--;
    if (c->kind == X_SET && c->flag)
      while (j > i && r->s[j] >= 0x80 && r->s[j] < 0xC0) j--;
    count--;
  }
}

static bool rep(wm_rregex *r, int ni, size_t i, const kont *k, int count) {
  const xnode *x = &r->n[ni];
  kont nk = {K_REP, ni, count, i, k};
  if (x->flag) {
    if (count >= x->min && run(r, k, i)) return true;
    if (count < x->max) return match(r, x->child, i, &nk);
    return false;
  }
  if (count < x->max && match(r, x->child, i, &nk)) return true;
  if (count >= x->min) return run(r, k, i);
  return false;
}

static bool match(wm_rregex *r, int ni, size_t i, const kont *k) {
  if (r->deep) return false;
  if (++r->depth > MAX_DEPTH) {
    r->deep = true;
    return false;
  }
  const xnode *x = &r->n[ni];
  bool ok = false;
  switch (x->kind) {
  case X_LIT: case X_SET: {
    size_t j = step(r, x, i);
    ok = j != SIZE_MAX && run(r, k, j);
    break;
  }
  case X_BOL: ok = i == 0 && run(r, k, i); break;
  case X_EOL: ok = (i == r->sn || (i + 1 == r->sn && r->s[i] == '\n')) && run(r, k, i); break;
  case X_WORDB:
    ok = ((i > 0 && is_word(r, i - 1)) != is_word(r, i)) == (x->flag != 0) && run(r, k, i);
    break;
  case X_GROUP: {
    kont nk = {K_GROUP, ni, 0, i, k};
    ok = match(r, x->child, i, &nk);
    break;
  }
  case X_SEQ:
    if (x->nkids == 0) ok = run(r, k, i);
    else {
      kont nk = {K_SEQ, ni, 1, 0, k};
      ok = match(r, x->kids[0], i, &nk);
    }
    break;
  case X_ALT:
    for (int a = 0; a < x->nkids && !ok && !r->deep; a++) ok = match(r, x->kids[a], i, k);
    break;
  default: { /* X_REP */
    const xnode *c = &r->n[x->child];
    if (c->kind == X_LIT || c->kind == X_SET) ok = rep_simple(r, x, c, i, k);
    else ok = rep(r, ni, i, k, 0);
    break;
  }
  }
  r->depth--;
  return ok && !r->deep;
}

int wm_rregex_extract(wm_rregex *r, const char *s, size_t n, int g, size_t *from, size_t *to) {
  if (g < 0 || g > r->ngroups) return 0;
  r->s = (const unsigned char *)s;
  r->sn = n;
  r->depth = 0;
  r->deep = false;
  kont done = {K_DONE, 0, 0, 0, NULL};
  for (size_t start = 0; start <= n; start++) {
    /* a start where no match can begin: skipped (it would fail) */
    if (!r->nullable && (start == n || !set_has(r->first, r->s[start]))) continue;
    for (int i = 0; i <= r->ngroups; i++) r->cs[i] = r->ce[i] = SIZE_MAX;
    if (match(r, r->root, start, &done)) {
      if (g == 0) {
        *from = start;
        *to = r->stop;
        return 1;
      }
      if (r->cs[g] == SIZE_MAX) return 0;
      *from = r->cs[g];
      *to = r->ce[g];
      return 1;
    }
    if (r->deep) return -1;
  }
  return 0;
}
