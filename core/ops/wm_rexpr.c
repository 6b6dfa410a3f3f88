/* SQL row expressions in C (ops/wm_rexpr.h): building, evaluating, and the filter/projection
 * operator. The arithmetic and comparisons are Lua 5.4's (lvm.c), which the Lua path uses. */
#include "ops/wm_rexpr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"
#include "ops/wm_rregex.h"
#include "ops/wm_sqlfmt.h"

/* A piece of a DATE_FORMAT pattern: text (kind 0: bytes [at, at + width) of the pattern's
 * copy) or a field (kind: the pattern letter, width: how many of it) */
typedef struct dpiece {
  char kind;
  int width;
  size_t at;
} dpiece;

typedef struct rnode {
  uint8_t op;
  int nargs;
  int *args;      /* owned */
  char *where;    /* owned, or NULL */
  wm_value lit;   /* WM_RX_LIT: owned */
  wm_field f, g;  /* WM_RX_COL: f; WM_RX_SUBCOL: f the row, g its field (names owned) */
  wm_value *vals; /* WM_RX_CONCAT: its arguments' values while it runs (owned) */
  dpiece *pieces; /* WM_RX_DATE_FORMAT: the pattern (owned), npieces of them, text in ptext */
  int npieces;
  char *ptext;
  wm_rregex *re;  /* WM_RX_REGEXP_EXTRACT: owned */
} rnode;

struct wm_rexpr {
  rnode *n;
  int len, cap;
  wm_str **tmp;   /* the strings made since the last wm_rexpr_reset (a reference each) */
  int ntmp, captmp;
  wm_buf buf;     /* DATE_FORMAT's text being made */
  char err[200];
};

wm_rexpr *wm_rexpr_new(void) {
  wm_rexpr *x = calloc(1, sizeof(wm_rexpr));
  if (x) wm_buf_init(&x->buf);
  return x;
}

void wm_rexpr_reset(wm_rexpr *x) {
  for (int i = 0; i < x->ntmp; i++)
    if (--x->tmp[i]->refs == 0) free(x->tmp[i]);
  x->ntmp = 0;
}

void wm_rexpr_free(wm_rexpr *x) {
  if (!x) return;
  wm_rexpr_reset(x);
  free(x->tmp);
  wm_buf_free(&x->buf);
  for (int i = 0; i < x->len; i++) {
    rnode *n = &x->n[i];
    free(n->args);
    free(n->where);
    free((char *)n->f.name);
    free((char *)n->g.name);
    free(n->vals);
    free(n->pieces);
    free(n->ptext);
    wm_rregex_free(n->re);
    wm_value_release(NULL, &n->lit); /* a scalar or a WM_STR: no host */
  }
  free(x->n);
  free(x);
}

const char *wm_rexpr_error(const wm_rexpr *x) { return x->err; }

static const char *const OP_NAMES[WM_RX_NOPS] = {
  "col", "subcol", "lit", "add", "sub", "mul", "fdiv", "idiv", "mod", "neg", "abs",
  "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "isnull", "notnull",
  "is_true", "is_false", "not_true", "not_false", "between", "in", "case", "coalesce", "if",
  "to_double", "bool_to_int", "hour", "to_ts3", "to_ts0", "concat", "upper", "lower", "trim", "char_length",
  "substring", "like", "split_index", "date_format", "regexp_extract", "to_str", "ts_to_str", "from_str"};

int wm_rexpr_op_of(const char *name) {
  for (int i = 0; i < WM_RX_NOPS; i++)
    if (strcmp(OP_NAMES[i], name) == 0) return i;
  return -1;
}
int wm_rexpr_count(const wm_rexpr *x) { return x->len; }

static rnode *add_node(wm_rexpr *x) {
  if (x->len == x->cap) {
    int cap = x->cap ? x->cap * 2 : 16;
    rnode *n = realloc(x->n, (size_t)cap * sizeof *n);
    if (!n) {
      snprintf(x->err, sizeof x->err, "out of memory");
      return NULL;
    }
    x->n = n;
    x->cap = cap;
  }
  rnode *n = &x->n[x->len];
  memset(n, 0, sizeof *n);
  n->f.index = n->g.index = -1;
  return n;
}

int wm_rexpr_col(wm_rexpr *x, const char *name, const char *sub) {
  rnode *n = add_node(x);
  if (!n) return -1;
  n->op = sub ? WM_RX_SUBCOL : WM_RX_COL;
  n->f.name = strdup(name);
  n->g.name = sub ? strdup(sub) : NULL;
  if (!n->f.name || (sub && !n->g.name)) {
    free((char *)n->f.name);
    free((char *)n->g.name);
    snprintf(x->err, sizeof x->err, "out of memory");
    return -1;
  }
  return x->len++;
}

int wm_rexpr_lit(wm_rexpr *x, const wm_value *v) {
  if (v->type == WM_ROW || v->type == WM_SLOT) {
    snprintf(x->err, sizeof x->err, "a literal must be nil, a boolean, a number or a string");
    return -1;
  }
  rnode *n = add_node(x);
  if (!n) return -1;
  n->op = WM_RX_LIT;
  if (wm_value_copy(NULL, &n->lit, v) != 0) {
    snprintf(x->err, sizeof x->err, "out of memory");
    return -1;
  }
  return x->len++;
}

/* the argument counts: exact, or at least -n */
static int arity(wm_rx_op op) {
  switch (op) {
  case WM_RX_NEG: case WM_RX_ABS: case WM_RX_NOT: case WM_RX_ISNULL: case WM_RX_NOTNULL:
  case WM_RX_IS_TRUE: case WM_RX_IS_FALSE: case WM_RX_NOT_TRUE: case WM_RX_NOT_FALSE:
  case WM_RX_TO_DOUBLE: case WM_RX_BOOL_TO_INT: case WM_RX_HOUR: case WM_RX_TO_TS3:
  case WM_RX_TO_TS0: case WM_RX_UPPER: case WM_RX_LOWER: case WM_RX_TRIM: case WM_RX_CHAR_LENGTH:
  case WM_RX_TO_STR: case WM_RX_TS_TO_STR:
    return 1;
  case WM_RX_BETWEEN: case WM_RX_IF: case WM_RX_SPLIT_INDEX: case WM_RX_FROM_STR: return 3;
  case WM_RX_IN: case WM_RX_SUBSTRING: case WM_RX_REGEXP_EXTRACT: return -2;
  case WM_RX_CASE: case WM_RX_COALESCE: case WM_RX_CONCAT: return -1;
  default: return 2;
  }
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* DATE_FORMAT's pattern s (values.date_pattern of lua/wm/sql/values.lua: Java's letters y M d
 * H h m s S a, 'quoted text', '' a quote, any other byte itself) into n's pieces */
static int date_pattern(wm_rexpr *x, rnode *n, const char *s, size_t len) {
  n->pieces = malloc((len + 1) * sizeof *n->pieces);
  n->ptext = malloc(len + 1);
  if (!n->pieces || !n->ptext) {
    snprintf(x->err, sizeof x->err, "out of memory");
    return -1;
  }
  if (len) memcpy(n->ptext, s, len);
  n->ptext[len] = '\0';
  int k = 0;
  size_t i = 0;
  while (i < len) {
    char c = s[i];
    dpiece *p = &n->pieces[k++];
    p->kind = 0;
    p->at = i;
    p->width = 1;
    if (c == '\'') {
      if (i + 1 < len && s[i + 1] == '\'') {
        i += 2;
        continue;
      }
      const char *q = memchr(s + i + 1, '\'', len - i - 1);
      if (!q) {
        snprintf(x->err, sizeof x->err, "DATE_FORMAT: an unclosed quote in the pattern '%.*s'", (int)len, s);
        return -1;
      }
      p->at = i + 1;
      p->width = (int)(q - (s + i + 1));
      i = (size_t)(q - s) + 1;
    } else if (is_alpha(c)) {
      size_t j = i;
      while (j + 1 < len && s[j + 1] == c) j++;
      size_t w = j - i + 1;
      bool ok = c == 'y' || c == 'd' || c == 'H' || c == 'h' || c == 'm' || c == 's' || (c == 'M' && w <= 2)
                || (c == 'S' && w <= 3) || (c == 'a' && w == 1);
      if (!ok) {
        snprintf(x->err, sizeof x->err, "DATE_FORMAT: not supported yet: the pattern letters '%.*s'", (int)w, s + i);
        return -1;
      }
      p->kind = c;
      p->width = (int)w;
      i = j + 1;
    } else {
      i++;
    }
  }
  n->npieces = k;
  return 0;
}

int wm_rexpr_op(wm_rexpr *x, wm_rx_op op, const int *args, int nargs, const char *where) {
  if (op <= WM_RX_LIT || op >= WM_RX_NOPS) {
    snprintf(x->err, sizeof x->err, "bad operator %d", (int)op);
    return -1;
  }
  int a = arity(op);
  if ((a >= 0 && nargs != a) || (a < 0 && nargs < -a) || (op == WM_RX_CASE && nargs % 2 == 0)
      || ((op == WM_RX_SUBSTRING || op == WM_RX_REGEXP_EXTRACT) && nargs > 3)) {
    snprintf(x->err, sizeof x->err, "operator %d takes %s%d arguments, got %d", (int)op, a < 0 ? "at least " : "",
             a < 0 ? -a : a, nargs);
    return -1;
  }
  for (int i = 0; i < nargs; i++) {
    if (args[i] < 0 || args[i] >= x->len) {
      snprintf(x->err, sizeof x->err, "argument %d of node %d is node %d, not an earlier one", i + 1, x->len, args[i]);
      return -1;
    }
  }
  if (op == WM_RX_FROM_STR) {
    const rnode *to = &x->n[args[1]], *try_ = &x->n[args[2]];
    if (to->op != WM_RX_LIT || !wm_value_is_string(&to->lit) || try_->op != WM_RX_LIT || try_->lit.type != WM_BOOL) {
      snprintf(x->err, sizeof x->err, "from_str: the type and try must be literals");
      return -1;
    }
  }
  if (op == WM_RX_DATE_FORMAT || op == WM_RX_REGEXP_EXTRACT) {
    const rnode *p = &x->n[args[1]];
    if (p->op != WM_RX_LIT || !wm_value_is_string(&p->lit)) {
      snprintf(x->err, sizeof x->err, "%s: the pattern must be a string literal",
               op == WM_RX_DATE_FORMAT ? "DATE_FORMAT" : "REGEXP_EXTRACT");
      return -1;
    }
  }
  rnode *n = add_node(x);
  if (!n) return -1;
  n->op = (uint8_t)op;
  n->nargs = nargs;
  n->args = malloc((size_t)nargs * sizeof(int) + 1);
  n->where = where ? strdup(where) : NULL;
  if (op == WM_RX_CONCAT) n->vals = calloc((size_t)nargs, sizeof(wm_value));
  if (!n->args || (where && !n->where) || (op == WM_RX_CONCAT && !n->vals)) {
    free(n->args);
    free(n->where);
    free(n->vals);
    snprintf(x->err, sizeof x->err, "out of memory");
    return -1;
  }
  if (nargs > 0) memcpy(n->args, args, (size_t)nargs * sizeof(int));
  if (op == WM_RX_DATE_FORMAT) {
    size_t len;
    const char *s = wm_value_str(&x->n[args[1]].lit, &len);
    if (date_pattern(x, n, s, len) != 0) {
      free(n->args);
      free(n->where);
      free(n->pieces);
      free(n->ptext);
      return -1;
    }
  }
  if (op == WM_RX_REGEXP_EXTRACT) {
    size_t len;
    const char *s = wm_value_str(&x->n[args[1]].lit, &len);
    char why[160];
    n->re = wm_rregex_new(s, len, why, sizeof why);
    if (!n->re) {
      snprintf(x->err, sizeof x->err, "REGEXP_EXTRACT: %s", why);
      free(n->args);
      free(n->where);
      return -1;
    }
  }
  return x->len++;
}

/* ---- Lua 5.4's numbers ------------------------------------------------------------------ */

#define TWO53 9007199254740992.0
#define TWO63 9223372036854775808.0

static bool fits_f(int64_t i) { return (uint64_t)i + (1ULL << 53) <= (1ULL << 54); }
/* f as an integer (floor: mode -1, ceil: 1, exact: 0); false when out of range, or not
 * integral in mode 0 */
static bool f2i(double f, int mode, int64_t *out) {
  double g = mode < 0 ? floor(f) : mode > 0 ? ceil(f) : f;
  if (mode == 0 && g != floor(f)) return false;
  if (!(g >= -TWO63 && g < TWO63)) return false;
  *out = (int64_t)g;
  return true;
}
static bool lt_if(int64_t i, double f) {
  if (fits_f(i)) return (double)i < f;
  int64_t fi;
  if (f2i(f, 1, &fi)) return i < fi;
  return f > 0;
}
static bool le_if(int64_t i, double f) {
  if (fits_f(i)) return (double)i <= f;
  int64_t fi;
  if (f2i(f, -1, &fi)) return i <= fi;
  return f > 0;
}
static bool lt_fi(double f, int64_t i) {
  if (fits_f(i)) return f < (double)i;
  int64_t fi;
  if (f2i(f, -1, &fi)) return fi < i;
  return f < 0;
}
static bool le_fi(double f, int64_t i) {
  if (fits_f(i)) return f <= (double)i;
  int64_t fi;
  if (f2i(f, 1, &fi)) return fi <= i;
  return f < 0;
}

static bool is_num(const wm_value *v) { return v->type == WM_INT || v->type == WM_FLOAT; }
static double num(const wm_value *v) { return v->type == WM_INT ? (double)v->u.i : v->u.f; }

/* Lua's a == b (raw) */
static bool veq(const wm_value *a, const wm_value *b) {
  if (a->type == WM_INT && b->type == WM_INT) return a->u.i == b->u.i;
  if (is_num(a) && is_num(b)) {
    if (a->type == WM_FLOAT && b->type == WM_FLOAT) return a->u.f == b->u.f;
    int64_t i = a->type == WM_INT ? a->u.i : b->u.i, fi;
    double f = a->type == WM_FLOAT ? a->u.f : b->u.f;
    return f2i(f, 0, &fi) && fi == i;
  }
  if (wm_value_is_string(a) && wm_value_is_string(b)) {
    size_t la, lb;
    const char *sa = wm_value_str(a, &la), *sb = wm_value_str(b, &lb);
    return la == lb && memcmp(sa, sb, la) == 0;
  }
  if (a->type == WM_BOOL && b->type == WM_BOOL) return a->u.b == b->u.b;
  return a->type == WM_NIL && b->type == WM_NIL;
}

static int strcmp_v(const wm_value *a, const wm_value *b) {
  size_t la, lb;
  const char *sa = wm_value_str(a, &la), *sb = wm_value_str(b, &lb);
  int c = memcmp(sa, sb, la < lb ? la : lb);
  if (c) return c;
  return la < lb ? -1 : la > lb ? 1 : 0;
}

/* Lua's a < b (le: a <= b); -1 when the values cannot be ordered */
static int vless(const wm_value *a, const wm_value *b, bool le) {
  if (a->type == WM_INT && b->type == WM_INT) return le ? a->u.i <= b->u.i : a->u.i < b->u.i;
  if (a->type == WM_FLOAT && b->type == WM_FLOAT) return le ? a->u.f <= b->u.f : a->u.f < b->u.f;
  if (a->type == WM_INT && b->type == WM_FLOAT) return le ? le_if(a->u.i, b->u.f) : lt_if(a->u.i, b->u.f);
  if (a->type == WM_FLOAT && b->type == WM_INT) return le ? le_fi(a->u.f, b->u.i) : lt_fi(a->u.f, b->u.i);
  if (wm_value_is_string(a) && wm_value_is_string(b)) {
    int c = strcmp_v(a, b);
    return le ? c <= 0 : c < 0;
  }
  return -1;
}

/* ---- evaluation ------------------------------------------------------------------------ */

static int eval(wm_rexpr *x, int i, const wm_host *h, const wm_value *rec, wm_value *out, wm_error *err);

static int bad(const rnode *n, wm_error *err, const char *what) {
  return wm_error_set(err, "%s%s%s", n->where ? n->where : "", n->where ? ": " : "", what);
}

static int arith(const rnode *n, const wm_value *a, const wm_value *b, wm_value *out, wm_error *err) {
  if (!is_num(a) || !is_num(b)) return bad(n, err, "attempt to perform arithmetic on a non-number value");
  bool ints = a->type == WM_INT && b->type == WM_INT;
  uint64_t x = (uint64_t)a->u.i, y = (uint64_t)b->u.i;
  switch (n->op) {
  case WM_RX_ADD: *out = ints ? wm_int((int64_t)(x + y)) : wm_float(num(a) + num(b)); return 0;
  case WM_RX_SUB: *out = ints ? wm_int((int64_t)(x - y)) : wm_float(num(a) - num(b)); return 0;
  case WM_RX_MUL: *out = ints ? wm_int((int64_t)(x * y)) : wm_float(num(a) * num(b)); return 0;
  case WM_RX_FDIV: *out = wm_float(num(a) / num(b)); return 0;
  case WM_RX_IDIV: {
    /* R.idiv: b == 0 fails; q = a // b (floor); q < 0 and q * b ~= a: q + 1 */
    if (num(b) == 0) return bad(n, err, "division by zero");
    if (ints) {
      int64_t p = a->u.i, d = b->u.i, q;
      if (d == -1) q = (int64_t)(0 - (uint64_t)p);
      else {
        q = p / d;
        if ((p % d != 0) && ((p ^ d) < 0)) q -= 1; /* floor */
      }
      if (q < 0 && (int64_t)((uint64_t)q * (uint64_t)d) != p) q += 1;
      *out = wm_int(q);
    } else {
      double q = floor(num(a) / num(b));
      if (q < 0 && q * num(b) != num(a)) q += 1;
      *out = wm_float(q);
    }
    return 0;
  }
  case WM_RX_MOD:
    /* R.mod: math.fmod; of two integers a zero divisor fails, -1 gives 0 */
    if (ints) {
      if (b->u.i == 0) return bad(n, err, "division by zero");
      *out = wm_int(b->u.i == -1 ? 0 : a->u.i % b->u.i);
    } else {
      *out = wm_float(fmod(num(a), num(b)));
    }
    return 0;
  default: return bad(n, err, "internal error: not an arithmetic operator");
  }
}

/* ---- strings (R.concat, R.upper, ... of lua/wm/sql/values.lua) ------------------------- */

/* A new string of len bytes (and a '\0'), owned by the program until wm_rexpr_reset; NULL on
 * allocation failure. */
static wm_str *new_str(wm_rexpr *x, size_t len) {
  if (len > UINT32_MAX - 1) return NULL;
  if (x->ntmp == x->captmp) {
    int cap = x->captmp ? x->captmp * 2 : 16;
    wm_str **t = realloc(x->tmp, (size_t)cap * sizeof *t);
    if (!t) return NULL;
    x->tmp = t;
    x->captmp = cap;
  }
  wm_str *s = malloc(sizeof *s + len + 1);
  if (!s) return NULL;
  s->refs = 1;
  s->len = (uint32_t)len;
  s->data[len] = '\0';
  x->tmp[x->ntmp++] = s;
  return s;
}

static wm_value str_value(wm_str *s) {
  wm_value v = {0};
  v.type = WM_STR;
  v.u.s = s;
  return v;
}

static int oom(wm_error *err) { return wm_error_set(err, "out of memory"); }

/* isspace of the C locale (Lua's %s) */
static bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Lua 5.4's utf8_decode (lutf8lib.c, strict): the bytes of the character at s[i], or 0 when
 * they are not valid UTF-8 (a byte past len reads as Lua's terminating '\0') */
static size_t utf8_seq(const unsigned char *s, size_t i, size_t len) {
  static const uint32_t limits[] = {~(uint32_t)0, 0x80, 0x800, 0x10000u, 0x200000u, 0x4000000u};
  unsigned c = s[i];
  if (c < 0x80) return 1;
  uint32_t res = 0;
  int count = 0;
  for (; c & 0x40; c <<= 1) {
    if (i + (size_t)count + 1 >= len) return 0;
    unsigned cc = s[i + (size_t)++count];
    if ((cc & 0xC0) != 0x80) return 0;
    res = (res << 6) | (cc & 0x3F);
    if (count > 5) return 0;
  }
  res |= (uint32_t)(c & 0x7F) << (count * 5);
  if (res > 0x7FFFFFFFu || res < limits[count]) return 0;
  if (res > 0x10FFFFu || (res >= 0xD800u && res <= 0xDFFFu)) return 0;
  return (size_t)count + 1;
}

/* utf8.len(s): the characters, or -1 when s is not valid UTF-8 */
static int64_t utf8_len(const char *s, size_t len) {
  int64_t n = 0;
  for (size_t i = 0; i < len; n++) {
    size_t k = utf8_seq((const unsigned char *)s, i, len);
    if (!k) return -1;
    i += k;
  }
  return n;
}

/* the byte index where character k (1-based, 1 <= k <= n + 1) of valid UTF-8 s starts */
static size_t utf8_at(const char *s, size_t len, int64_t k) {
  size_t i = 0;
  for (int64_t c = 1; c < k && i < len; c++) {
    do i++;
    while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80);
  }
  return i;
}

/* R.substring's sub(i, j) (i >= 1): characters i..j when s is valid UTF-8 (n of them), else
 * Lua's s:sub(i, j); *from, *to the bytes [from, to). -1 where Lua's code meets a nil. */
static int substr(const char *s, size_t len, int64_t n, int64_t i, int64_t j, size_t *from, size_t *to) {
  int64_t l = (int64_t)len, bi, bj; /* 1-based, as Lua's */
  if (n < 0) {
    bi = i;
    bj = j > l ? l : j >= 0 ? j : j < -l ? 0 : l + j + 1;
  } else {
    if (i > n) { *from = *to = 0; return 0; }
    bi = (int64_t)utf8_at(s, len, i) + 1;
    if (j >= n) bj = l;
    else if (j >= 0) bj = (int64_t)utf8_at(s, len, j + 1);
    else if (j == -1) bj = 0;
    else {
      /* utf8.offset(s, j + 1): the (-(j + 1))-th character from the end */
      int64_t k = -(j + 1);
      if (k > n) return -1;
      bj = (int64_t)utf8_at(s, len, n - k + 1);
    }
  }
  if (bi > bj) { *from = *to = 0; return 0; }
  *from = (size_t)(bi - 1);
  *to = (size_t)bj;
  return 0;
}

/* LIKE: `%` any bytes, `_` one byte (R.like's Lua pattern: .* and .), anchored at both ends */
static bool like(const char *s, size_t ns, const char *p, size_t np) {
  size_t i = 0, j = 0, star = SIZE_MAX, mark = 0;
  while (i < ns) {
    if (j < np && p[j] == '%') {
      star = j++;
      mark = i;
    } else if (j < np && (p[j] == '_' || p[j] == s[i])) {
      i++;
      j++;
    } else if (star != SIZE_MAX) {
      j = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (j < np && p[j] == '%') j++;
  return j == np;
}

/* s:find(sep, from, true) (or the first white space byte for an empty sep): the match
 * [*at, *end), false when there is none */
static bool find_sep(const char *s, size_t len, const char *sep, size_t nsep, size_t from, size_t *at,
                     size_t *end) {
  for (size_t i = from; i < len; i++) {
    if (nsep == 0 ? is_space((unsigned char)s[i]) : (len - i >= nsep && memcmp(s + i, sep, nsep) == 0)) {
      *at = i;
      *end = i + (nsep ? nsep : 1);
      return true;
    }
    if (nsep && len - i < nsep) break;
  }
  return false;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

/* values.lua's civil_from_days (days since 1970-01-01 to a proleptic Gregorian date) */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = floor_div(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* values.lua's days_from_civil (its floor divisions) */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y = m <= 2 ? y - 1 : y;
  int64_t era = floor_div(y >= 0 ? y : y - 399, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = floor_div(153 * (m + (m > 2 ? -3 : 9)) + 2, 5) + d - 1;
  int64_t doe = yoe * 365 + floor_div(yoe, 4) - floor_div(yoe, 100) + doy;
  return era * 146097 + doe - 719468;
}

/* `n` digits (1 or 2 when max2: Lua's %d%d?) at s[*i]: their value, -1 when there are none */
static int64_t digits(const char *s, size_t len, size_t *i, int n, bool max2) {
  int64_t v = 0;
  int k = 0;
  while (*i < len && is_digit(s[*i]) && k < (max2 ? 2 : n)) {
    v = v * 10 + (s[*i] - '0');
    (*i)++;
    k++;
  }
  return k >= n ? v : -1;
}

/* values.parse_timestamp: `yyyy-M[M]-d[d][( |T)H[H]:mm[:ss[.f...]]]` with white space around,
 * as UTC ms; false when s is none */
static bool parse_timestamp(const char *s, size_t len, int64_t *out) {
  size_t i = 0, e = len;
  while (i < len && is_space((unsigned char)s[i])) i++;
  while (e > i && is_space((unsigned char)s[e - 1])) e--; /* (.-)%s*$: the rest ends here */
  int64_t y = digits(s, e, &i, 4, false), mo, d, h = 0, mi = 0, sec = 0, ms = 0;
  if (y < 0 || i >= e || s[i] != '-') return false;
  i++;
  if ((mo = digits(s, e, &i, 1, true)) < 0 || i >= e || s[i] != '-') return false;
  i++;
  if ((d = digits(s, e, &i, 1, true)) < 0) return false;
  if (i < e) {
    if (s[i] != ' ' && s[i] != 'T') return false;
    i++;
    if ((h = digits(s, e, &i, 1, true)) < 0 || i >= e || s[i] != ':') return false;
    i++;
    if ((mi = digits(s, e, &i, 2, false)) < 0) return false;
    if (i < e) {
      if (s[i] != ':') return false;
      i++;
      if ((sec = digits(s, e, &i, 2, false)) < 0) return false;
      if (i < e) {
        if (s[i] != '.' || i + 1 >= e) return false;
        size_t f = ++i;
        while (i < e && is_digit(s[i])) i++;
        if (i < e) return false;
        /* tonumber((frac .. "000"):sub(1, 3)) */
        for (size_t k = 0; k < 3; k++) ms = ms * 10 + (f + k < e ? s[f + k] - '0' : 0);
      }
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) return false;
  *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + sec * 1000 + ms;
  return true;
}

/* R.date_format: ts (ms) as n's pattern (UTC) */
static int date_format(wm_rexpr *x, const rnode *n, int64_t ts, wm_value *out, wm_error *err) {
  int64_t secs = floor_div(ts, 1000), ms = ts % 1000; /* (secs * 1000 overflows at INT64_MIN) */
  if (ms < 0) ms += 1000;
  int64_t days = floor_div(secs, 86400), rem = secs - days * 86400, year;
  int month, day, hour = (int)(rem / 3600), min = (int)(rem / 60 % 60), sec = (int)(rem % 60);
  civil_from_days(days, &year, &month, &day);
  wm_buf *b = &x->buf;
  wm_buf_clear(b);
  for (int k = 0; k < n->npieces; k++) {
    const dpiece *p = &n->pieces[k];
    char t[128];
    int64_t v;
    switch (p->kind) {
    case 0: wm_buf_add(b, n->ptext + p->at, (size_t)p->width); continue;
    case 'a': wm_buf_adds(b, hour < 12 ? "AM" : "PM"); continue;
    case 'S': snprintf(t, sizeof t, "%03d", (int)ms); wm_buf_add(b, t, (size_t)p->width); continue;
    case 'y': v = p->width == 2 ? year - floor_div(year, 100) * 100 : year; break;
    case 'M': v = month; break;
    case 'd': v = day; break;
    case 'H': v = hour; break;
    case 'h': v = (hour + 11) % 12 + 1; break;
    case 'm': v = min; break;
    default: v = sec; break;
    }
    /* string.format("%0<w>d", v): Lua takes a width of two digits at most */
    if (p->width > 99) return bad(n, err, "DATE_FORMAT: a field of more than 99 letters");
    if (v >= 0) { /* (the same digits without snprintf: the hot path of DATE_FORMAT) */
      char *e = t + sizeof t, *q = e;
      do *--q = (char)('0' + v % 10), v /= 10;
      while (v);
      while (e - q < p->width) *--q = '0';
      wm_buf_add(b, q, (size_t)(e - q));
      continue;
    }
    snprintf(t, sizeof t, "%0*lld", p->width, (long long)v);
    wm_buf_adds(b, t);
  }
  if (b->oom) return oom(err);
  wm_str *s = new_str(x, b->len);
  if (!s) return oom(err);
  if (b->len) memcpy(s->data, b->data, b->len);
  *out = str_value(s);
  return 0;
}

static int eval_args(wm_rexpr *x, const rnode *n, int k, const wm_host *h, const wm_value *rec, wm_value *v,
                     wm_error *err) {
  for (int j = 0; j < k; j++)
    if (eval(x, n->args[j], h, rec, &v[j], err) != 0) return -1;
  return 0;
}

static int eval(wm_rexpr *x, int i, const wm_host *h, const wm_value *rec, wm_value *out, wm_error *err) {
  rnode *n = &x->n[i];
  wm_value v[3];
  switch ((wm_rx_op)n->op) {
  case WM_RX_COL: {
    const wm_value *p = wm_field_peek(&n->f, rec);
    if (p) { *out = *p; return 0; }
    return wm_field_get(h, &n->f, rec, out, err);
  }
  case WM_RX_SUBCOL: {
    wm_value r;
    const wm_value *p = wm_field_peek(&n->f, rec);
    if (p) r = *p;
    else if (wm_field_get(h, &n->f, rec, &r, err) != 0) return -1;
    if (r.type == WM_NIL) { *out = wm_nil(); return 0; } /* another event's row: NULL fields */
    if (r.type != WM_ROW) return wm_error_set(err, "field '%s' is not a row", n->f.name);
    p = wm_field_peek(&n->g, &r);
    if (p) { *out = *p; return 0; }
    return wm_field_get(h, &n->g, &r, out, err);
  }
  case WM_RX_LIT: *out = n->lit; return 0;
  case WM_RX_ADD: case WM_RX_SUB: case WM_RX_MUL: case WM_RX_FDIV: case WM_RX_IDIV: case WM_RX_MOD:
    if (eval_args(x, n, 2, h, rec, v, err) != 0) return -1;
    if (v[0].type == WM_NIL || v[1].type == WM_NIL) { *out = wm_nil(); return 0; }
    return arith(n, &v[0], &v[1], out, err);
  case WM_RX_NEG: case WM_RX_ABS:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (v[0].type == WM_INT) {
      bool neg = n->op == WM_RX_NEG || v[0].u.i < 0;
      *out = wm_int(neg ? (int64_t)(0 - (uint64_t)v[0].u.i) : v[0].u.i);
    } else if (v[0].type == WM_FLOAT) {
      *out = wm_float(n->op == WM_RX_NEG ? -v[0].u.f : fabs(v[0].u.f));
    } else {
      return bad(n, err, "attempt to perform arithmetic on a non-number value");
    }
    return 0;
  case WM_RX_EQ: case WM_RX_NE: case WM_RX_LT: case WM_RX_LE: case WM_RX_GT: case WM_RX_GE: {
    if (eval_args(x, n, 2, h, rec, v, err) != 0) return -1;
    if (v[0].type == WM_NIL || v[1].type == WM_NIL) { *out = wm_nil(); return 0; }
    int r;
    switch ((wm_rx_op)n->op) {
    case WM_RX_EQ: r = veq(&v[0], &v[1]); break;
    case WM_RX_NE: r = !veq(&v[0], &v[1]); break;
    case WM_RX_LT: r = vless(&v[0], &v[1], false); break;
    case WM_RX_LE: r = vless(&v[0], &v[1], true); break;
    case WM_RX_GT: r = vless(&v[1], &v[0], false); break;
    default: r = vless(&v[1], &v[0], true); break;
    }
    if (r < 0) return bad(n, err, "attempt to compare values of different types");
    *out = wm_bool(r != 0);
    return 0;
  }
  case WM_RX_AND: case WM_RX_OR: {
    /* both sides are evaluated (as R.and_/R.or_ are: an error on the right still raises) */
    if (eval_args(x, n, 2, h, rec, v, err) != 0) return -1;
    bool dom = n->op == WM_RX_OR; /* the value that decides */
    bool a_dom = v[0].type == WM_BOOL && v[0].u.b == dom, b_dom = v[1].type == WM_BOOL && v[1].u.b == dom;
    if (a_dom || b_dom) *out = wm_bool(dom);
    else if (v[0].type == WM_NIL || v[1].type == WM_NIL) *out = wm_nil();
    else *out = wm_bool(!dom);
    return 0;
  }
  case WM_RX_NOT:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) *out = wm_nil();
    else *out = wm_bool(v[0].type == WM_BOOL && !v[0].u.b);
    return 0;
  case WM_RX_ISNULL: case WM_RX_NOTNULL:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    *out = wm_bool((v[0].type == WM_NIL) == (n->op == WM_RX_ISNULL));
    return 0;
  case WM_RX_IS_TRUE: case WM_RX_IS_FALSE: case WM_RX_NOT_TRUE: case WM_RX_NOT_FALSE: {
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    bool want = n->op == WM_RX_IS_TRUE || n->op == WM_RX_NOT_TRUE;
    bool is = v[0].type == WM_BOOL && v[0].u.b == want;
    *out = wm_bool(n->op == WM_RX_IS_TRUE || n->op == WM_RX_IS_FALSE ? is : !is);
    return 0;
  }
  case WM_RX_BETWEEN: {
    if (eval_args(x, n, 3, h, rec, v, err) != 0) return -1;
    /* R.between: and_(ge(v, lo), le(v, hi)) */
    wm_value c[2];
    for (int j = 0; j < 2; j++) {
      if (v[0].type == WM_NIL || v[j + 1].type == WM_NIL) { c[j] = wm_nil(); continue; }
      int r = j == 0 ? vless(&v[1], &v[0], true) : vless(&v[0], &v[2], true);
      if (r < 0) return bad(n, err, "attempt to compare values of different types");
      c[j] = wm_bool(r != 0);
    }
    if ((c[0].type == WM_BOOL && !c[0].u.b) || (c[1].type == WM_BOOL && !c[1].u.b)) *out = wm_bool(false);
    else if (c[0].type == WM_NIL || c[1].type == WM_NIL) *out = wm_nil();
    else *out = wm_bool(true);
    return 0;
  }
  case WM_RX_IN: {
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    bool saw_null = false;
    for (int j = 1; j < n->nargs; j++) {
      if (eval(x, n->args[j], h, rec, &v[1], err) != 0) return -1;
      if (v[0].type == WM_NIL) continue; /* (R.in_ evaluates the list first) */
      if (v[1].type == WM_NIL) saw_null = true;
      else if (veq(&v[0], &v[1])) { *out = wm_bool(true); return 0; }
    }
    *out = v[0].type == WM_NIL || saw_null ? wm_nil() : wm_bool(false);
    return 0;
  }
  case WM_RX_CASE:
    for (int j = 0; j + 1 < n->nargs; j += 2) {
      if (eval(x, n->args[j], h, rec, &v[0], err) != 0) return -1;
      if (v[0].type == WM_BOOL && v[0].u.b) return eval(x, n->args[j + 1], h, rec, out, err);
    }
    return eval(x, n->args[n->nargs - 1], h, rec, out, err);
  case WM_RX_COALESCE:
    /* R.coalesce(...) gets every argument evaluated */
    *out = wm_nil();
    for (int j = 0; j < n->nargs; j++) {
      if (eval(x, n->args[j], h, rec, &v[0], err) != 0) return -1;
      if (out->type == WM_NIL) *out = v[0];
    }
    return 0;
  case WM_RX_IF:
    if (eval_args(x, n, 3, h, rec, v, err) != 0) return -1;
    *out = v[0].type == WM_BOOL && v[0].u.b ? v[1] : v[2];
    return 0;
  case WM_RX_TO_DOUBLE:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) *out = wm_nil();
    else if (v[0].type == WM_BOOL) *out = wm_float(v[0].u.b ? 1.0 : 0.0);
    else if (is_num(&v[0])) *out = wm_float(num(&v[0]));
    else return bad(n, err, "attempt to perform arithmetic on a non-number value");
    return 0;
  case WM_RX_BOOL_TO_INT:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_BOOL) *out = wm_int(v[0].u.b ? 1 : 0);
    else *out = v[0];
    return 0;
  case WM_RX_HOUR:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (v[0].type != WM_INT) return bad(n, err, "HOUR of a non-integer time");
    {
      int64_t t = v[0].u.i, q = t / 3600000;
      if (t % 3600000 != 0 && t < 0) q--;
      int64_t r = q % 24;
      if (r < 0) r += 24;
      *out = wm_int(r);
    }
    return 0;
  case WM_RX_TO_TS3: case WM_RX_TO_TS0:
    /* R.to_ts_ltz: (v or v * 1000) as math.tointeger(x) or math.floor(x) */
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (!is_num(&v[0])) return bad(n, err, "attempt to perform arithmetic on a non-number value");
    if (n->op == WM_RX_TO_TS0) {
      if (v[0].type == WM_INT) v[0].u.i = (int64_t)((uint64_t)v[0].u.i * 1000u);
      else v[0].u.f *= 1000.0;
    }
    if (v[0].type == WM_INT) { *out = v[0]; return 0; }
    {
      int64_t k;
      if (f2i(v[0].u.f, -1, &k)) *out = wm_int(k); /* floor of an integral value is itself */
      else *out = wm_float(floor(v[0].u.f));       /* out of range, NaN: a float, as Lua's */
    }
    return 0;
  case WM_RX_CONCAT: {
    /* R.concat(...): every argument evaluated, NULL when one is NULL */
    size_t total = 0;
    bool null = false;
    for (int j = 0; j < n->nargs; j++) {
      if (eval(x, n->args[j], h, rec, &n->vals[j], err) != 0) return -1;
      if (n->vals[j].type == WM_NIL) null = true;
      else if (!wm_value_is_string(&n->vals[j])) return bad(n, err, "|| of a value that is not a string");
      else {
        size_t l;
        wm_value_str(&n->vals[j], &l);
        total += l;
      }
    }
    if (null) { *out = wm_nil(); return 0; }
    wm_str *s = new_str(x, total);
    if (!s) return oom(err);
    size_t at = 0;
    for (int j = 0; j < n->nargs; j++) {
      size_t l;
      const char *p = wm_value_str(&n->vals[j], &l);
      if (l) memcpy(s->data + at, p, l);
      at += l;
    }
    *out = str_value(s);
    return 0;
  }
  case WM_RX_UPPER: case WM_RX_LOWER: case WM_RX_TRIM: case WM_RX_CHAR_LENGTH: {
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (!wm_value_is_string(&v[0])) return bad(n, err, "a string function of a value that is not a string");
    size_t l;
    const char *p = wm_value_str(&v[0], &l);
    if (n->op == WM_RX_CHAR_LENGTH) {
      int64_t c = utf8_len(p, l);
      *out = wm_int(c < 0 ? (int64_t)l : c);
      return 0;
    }
    if (n->op == WM_RX_TRIM) {
      size_t a = 0, e = l;
      while (a < e && is_space((unsigned char)p[a])) a++;
      while (e > a && is_space((unsigned char)p[e - 1])) e--;
      *out = wm_cstr(p + a, e - a); /* borrowed, as its argument is */
      return 0;
    }
    wm_str *s = new_str(x, l);
    if (!s) return oom(err);
    bool up = n->op == WM_RX_UPPER;
    for (size_t j = 0; j < l; j++) {
      char c = p[j];
      if (up && c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
      else if (!up && c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
      s->data[j] = c;
    }
    *out = str_value(s);
    return 0;
  }
  case WM_RX_SUBSTRING: {
    if (eval_args(x, n, n->nargs, h, rec, v, err) != 0) return -1;
    if (v[0].type == WM_NIL || v[1].type == WM_NIL) { *out = wm_nil(); return 0; }
    bool has_len = n->nargs == 3 && v[2].type != WM_NIL; /* a NULL length: to the end, as R.substring */
    if (!wm_value_is_string(&v[0]) || v[1].type != WM_INT || (has_len && v[2].type != WM_INT))
      return bad(n, err, "SUBSTRING of a value that is not a string, or a position that is not an integer");
    size_t l;
    const char *p = wm_value_str(&v[0], &l);
    int64_t st = v[1].u.i < 1 ? 1 : v[1].u.i, j = INT64_MAX;
    if (has_len) {
      int64_t len = v[2].u.i;
      if (len < 0) {
        char m[80];
        snprintf(m, sizeof m, "SUBSTRING: negative length %lld", (long long)len);
        return bad(n, err, m);
      }
      if (len == 0) { *out = wm_cstr(p, 0); return 0; }
      j = (int64_t)((uint64_t)st + (uint64_t)len - 1u); /* wraps as Lua's integers */
    }
    size_t from, to;
    if (substr(p, l, utf8_len(p, l), st, j, &from, &to) != 0)
      return bad(n, err, "SUBSTRING: the end position is out of range");
    *out = wm_cstr(p + from, to - from);
    return 0;
  }
  case WM_RX_LIKE: {
    if (eval_args(x, n, 2, h, rec, v, err) != 0) return -1;
    if (v[0].type == WM_NIL || v[1].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (!wm_value_is_string(&v[0]) || !wm_value_is_string(&v[1])) return bad(n, err, "LIKE of a value that is not a string");
    size_t ls, lp;
    const char *s = wm_value_str(&v[0], &ls), *p = wm_value_str(&v[1], &lp);
    *out = wm_bool(like(s, ls, p, lp));
    return 0;
  }
  case WM_RX_SPLIT_INDEX: {
    if (eval_args(x, n, 3, h, rec, v, err) != 0) return -1;
    if (v[0].type == WM_NIL || v[1].type == WM_NIL || v[2].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (!wm_value_is_string(&v[0]) || !wm_value_is_string(&v[1]) || v[2].type != WM_INT)
      return bad(n, err, "SPLIT_INDEX of a value that is not a string, or an index that is not an integer");
    size_t l, lsep, beg = 0, at, end;
    const char *s = wm_value_str(&v[0], &l), *sep = wm_value_str(&v[1], &lsep);
    if (v[2].u.i < 0 || l == 0) { *out = wm_nil(); return 0; }
    for (int64_t k = 0; k < v[2].u.i; k++) {
      if (!find_sep(s, l, sep, lsep, beg, &at, &end)) { *out = wm_nil(); return 0; }
      beg = end;
    }
    if (!find_sep(s, l, sep, lsep, beg, &at, &end)) at = l;
    *out = wm_cstr(s + beg, at - beg);
    return 0;
  }
  case WM_RX_REGEXP_EXTRACT: {
    /* regex.extract: NULL for a NULL string, a group out of range, no match, or a group that
     * took no part; a NULL group is 0 */
    if (eval_args(x, n, 2, h, rec, v, err) != 0) return -1;
    if (n->nargs == 3 && eval(x, n->args[2], h, rec, &v[2], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    int64_t g = n->nargs == 3 && v[2].type != WM_NIL ? v[2].u.i : 0;
    if (!wm_value_is_string(&v[0]) || (n->nargs == 3 && v[2].type != WM_NIL && v[2].type != WM_INT))
      return bad(n, err, "REGEXP_EXTRACT of a value that is not a string, or a group that is not an integer");
    if (g < 0 || g > wm_rregex_groups(n->re)) { *out = wm_nil(); return 0; }
    size_t l, from, to;
    const char *s = wm_value_str(&v[0], &l);
    int r = wm_rregex_extract(n->re, s, l, (int)g, &from, &to);
    if (r < 0) return bad(n, err, WM_RREGEX_DEEP);
    *out = r ? wm_cstr(s + from, to - from) : wm_nil();
    return 0;
  }
  case WM_RX_TO_STR: case WM_RX_TS_TO_STR: {
    /* R.cast(v, from, 'STRING'): values.to_string */
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL || wm_value_is_string(&v[0])) { *out = v[0]; return 0; }
    if (v[0].type == WM_BOOL) { *out = v[0].u.b ? wm_cstr("TRUE", 4) : wm_cstr("FALSE", 5); return 0; }
    wm_buf *b = &x->buf;
    wm_buf_clear(b);
    if (n->op == WM_RX_TS_TO_STR && v[0].type == WM_INT) wm_sqlfmt_timestamp(b, v[0].u.i);
    else if (n->op == WM_RX_TO_STR && v[0].type == WM_FLOAT) wm_sqlfmt_double(b, v[0].u.f);
    else if (n->op == WM_RX_TO_STR && v[0].type == WM_INT) wm_buf_add_int(b, v[0].u.i);
    else return bad(n, err, "CAST AS STRING of a value of another type");
    if (b->oom) return oom(err);
    wm_str *s = new_str(x, b->len);
    if (!s) return oom(err);
    if (b->len) memcpy(s->data, b->data, b->len);
    *out = str_value(s);
    return 0;
  }
  case WM_RX_FROM_STR: {
    /* R.cast(v, 'STRING', to, try, where): values.parse of the text */
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (!wm_value_is_string(&v[0])) return bad(n, err, "CAST of a value that is not a string");
    size_t l, lt;
    const char *s = wm_value_str(&v[0], &l), *to = wm_value_str(&x->n[n->args[1]].lit, &lt);
    const char *why;
    if (strcmp(to, "BOOLEAN") == 0) {
      size_t a = 0, e = l;
      while (a < e && is_space((unsigned char)s[a])) a++;
      while (e > a && is_space((unsigned char)s[e - 1])) e--;
      char w[6] = {0};
      for (size_t k = 0; k < e - a && k < 5; k++) w[k] = (char)(s[a + k] >= 'A' && s[a + k] <= 'Z' ? s[a + k] + 32 : s[a + k]);
      if (e - a == 4 && memcmp(w, "true", 4) == 0) { *out = wm_bool(true); return 0; }
      if (e - a == 5 && memcmp(w, "false", 5) == 0) { *out = wm_bool(false); return 0; }
      why = "not a boolean";
    } else {
      int64_t ts;
      if (parse_timestamp(s, l, &ts)) { *out = wm_int(ts); return 0; }
      why = "not a timestamp (yyyy-MM-dd HH:mm:ss.SSS)";
    }
    if (x->n[n->args[2]].lit.u.b) { *out = wm_nil(); return 0; }
    char m[600];
    snprintf(m, sizeof m, "CAST('%.*s' AS %s) failed: %s", (int)(l > 400 ? 400 : l), s, to, why);
    return bad(n, err, m);
  }
  case WM_RX_DATE_FORMAT:
    if (eval(x, n->args[0], h, rec, &v[0], err) != 0) return -1;
    if (v[0].type == WM_NIL) { *out = wm_nil(); return 0; }
    if (wm_value_is_string(&v[0])) {
      size_t l;
      const char *s = wm_value_str(&v[0], &l);
      int64_t ts;
      if (!parse_timestamp(s, l, &ts)) { *out = wm_nil(); return 0; }
      v[0] = wm_int(ts);
    }
    if (v[0].type != WM_INT) return bad(n, err, "DATE_FORMAT of a non-integer time");
    return date_format(x, n, v[0].u.i, out, err);
  default: break;
  }
  return wm_error_set(err, "internal error: bad expression node %d", (int)n->op);
}

int wm_rexpr_eval(wm_rexpr *x, int node, const wm_host *h, const wm_value *rec, wm_value *out,
                  wm_error *err) {
  if (node < 0 || node >= x->len) return wm_error_set(err, "internal error: no expression node %d", node);
  return eval(x, node, h, rec, out, err);
}

/* ---- the operator ---------------------------------------------------------------------- */

typedef struct rproject {
  wm_rexpr *x;
  int filter;
  int *out;
  int nout;
  wm_schema *schema; /* referenced; NULL: no projection */
} rproject;

static void rproject_free(wm_op *op) {
  rproject *p = op->impl;
  if (!p) return;
  wm_rexpr_free(p->x);
  free(p->out);
  if (p->schema) wm_schema_release(p->schema);
  free(p);
}

/* An evaluation failed: the message is in the context's error; add the record and operator. */
static int failed(wm_op *op, const wm_value *rec) { return wm_op_fail_record(op, rec); }

static int rproject_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  rproject *p = op->impl;
  wm_ctx *ctx = op->ctx;
  if (p->filter >= 0) {
    wm_value c;
    int rc = eval(p->x, p->filter, &ctx->host, rec, &c, &ctx->error);
    wm_rexpr_reset(p->x); /* (c is a boolean: the strings made are not needed) */
    if (rc != 0) return failed(op, rec);
    if (c.type != WM_BOOL || !c.u.b) return WM_OK;
  }
  if (!p->schema) return wm_op_emit(op, 0, rec, ts);
  wm_row *r = wm_row_new(p->schema);
  if (!r) return wm_ctx_error(ctx, "out of memory");
  for (int i = 0; i < p->nout; i++) {
    wm_value v;
    if (eval(p->x, p->out[i], &ctx->host, rec, &v, &ctx->error) != 0) {
      wm_rexpr_reset(p->x);
      wm_row_release(&ctx->host, r);
      return failed(op, rec);
    }
    if (wm_value_copy(&ctx->host, &r->fields[i], &v) != 0) {
      wm_rexpr_reset(p->x);
      wm_row_release(&ctx->host, r);
      return wm_ctx_error(ctx, "out of memory");
    }
  }
  wm_rexpr_reset(p->x); /* the row holds its own references */
  wm_value out = wm_row_value(r);
  int rc = wm_op_emit(op, 0, &out, ts);
  wm_row_release(&ctx->host, r);
  return rc;
}

static const wm_op_vt rproject_vt = {.kind = "sql_rows", .record = rproject_record, .free = rproject_free};

wm_op *wm_rproject_new(wm_ctx *ctx, const char *name, wm_rexpr *x, int filter, const int *out, int nout,
                       wm_schema *schema) {
  rproject *p = calloc(1, sizeof *p);
  if (p) p->out = malloc((size_t)nout * sizeof(int) + 1);
  if (!p || !p->out) {
    if (p) free(p);
    wm_rexpr_free(x);
    wm_ctx_error(ctx, "out of memory");
    return NULL;
  }
  p->x = x;
  p->filter = filter;
  p->nout = nout;
  if (schema) schema->refs++;
  p->schema = schema;
  if (nout > 0) memcpy(p->out, out, (size_t)nout * sizeof(int));
  bool ok = filter < x->len && (!schema || (uint32_t)nout == schema->nfields);
  for (int i = 0; i < nout; i++) ok = ok && out[i] >= 0 && out[i] < x->len;
  if (!ok) {
    wm_op tmp = {.impl = p};
    rproject_free(&tmp);
    wm_ctx_error(ctx, "internal error: '%s': a node index out of range or a schema of another size", name);
    return NULL;
  }
  wm_op *op = wm_op_new(ctx, &rproject_vt, p, name);
  if (!op) {
    wm_op tmp = {.impl = p};
    rproject_free(&tmp);
    wm_ctx_error(ctx, "out of memory");
  }
  return op;
}
