/* SQL row expressions in C (ops/wm_rexpr.h): building, evaluating, and the filter/projection
 * operator. The arithmetic and comparisons are Lua 5.4's (lvm.c), which the Lua path uses. */
#include "ops/wm_rexpr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wm_buf.h"

typedef struct rnode {
  uint8_t op;
  int nargs;
  int *args;      /* owned */
  char *where;    /* owned, or NULL */
  wm_value lit;   /* WM_RX_LIT: owned */
  wm_field f, g;  /* WM_RX_COL: f; WM_RX_SUBCOL: f the row, g its field (names owned) */
} rnode;

struct wm_rexpr {
  rnode *n;
  int len, cap;
  char err[200];
};

wm_rexpr *wm_rexpr_new(void) { return calloc(1, sizeof(wm_rexpr)); }

void wm_rexpr_free(wm_rexpr *x) {
  if (!x) return;
  for (int i = 0; i < x->len; i++) {
    rnode *n = &x->n[i];
    free(n->args);
    free(n->where);
    free((char *)n->f.name);
    free((char *)n->g.name);
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
  "to_double", "bool_to_int", "hour", "to_ts3", "to_ts0"};

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
  case WM_RX_TO_TS0:
    return 1;
  case WM_RX_BETWEEN: case WM_RX_IF: return 3;
  case WM_RX_IN: return -2;
  case WM_RX_CASE: case WM_RX_COALESCE: return -1;
  default: return 2;
  }
}

int wm_rexpr_op(wm_rexpr *x, wm_rx_op op, const int *args, int nargs, const char *where) {
  if (op <= WM_RX_LIT || op >= WM_RX_NOPS) {
    snprintf(x->err, sizeof x->err, "bad operator %d", (int)op);
    return -1;
  }
  int a = arity(op);
  if ((a >= 0 && nargs != a) || (a < 0 && nargs < -a) || (op == WM_RX_CASE && nargs % 2 == 0)) {
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
  rnode *n = add_node(x);
  if (!n) return -1;
  n->op = (uint8_t)op;
  n->nargs = nargs;
  n->args = malloc((size_t)nargs * sizeof(int) + 1);
  n->where = where ? strdup(where) : NULL;
  if (!n->args || (where && !n->where)) {
    free(n->args);
    free(n->where);
    snprintf(x->err, sizeof x->err, "out of memory");
    return -1;
  }
  if (nargs > 0) memcpy(n->args, args, (size_t)nargs * sizeof(int));
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
static int failed(wm_op *op, const wm_value *rec) {
  wm_buf b;
  wm_buf_init(&b);
  wm_op_format_record(op, rec, &b);
  if (b.len > 400) {
    b.len = 400;
    b.data[b.len] = '\0';
    wm_buf_adds(&b, "...");
  }
  wm_op_error_parts(op);
  wm_error_set_record(&op->ctx->error, b.data && !b.oom ? b.data : "");
  wm_buf_free(&b);
  return WM_ERR;
}

static int rproject_record(wm_op *op, int chan, const wm_value *rec, int64_t ts) {
  (void)chan;
  rproject *p = op->impl;
  wm_ctx *ctx = op->ctx;
  if (p->filter >= 0) {
    wm_value c;
    if (eval(p->x, p->filter, &ctx->host, rec, &c, &ctx->error) != 0) return failed(op, rec);
    if (c.type != WM_BOOL || !c.u.b) return WM_OK;
  }
  if (!p->schema) return wm_op_emit(op, 0, rec, ts);
  wm_row *r = wm_row_new(p->schema);
  if (!r) return wm_ctx_error(ctx, "out of memory");
  for (int i = 0; i < p->nout; i++) {
    wm_value v;
    if (eval(p->x, p->out[i], &ctx->host, rec, &v, &ctx->error) != 0) {
      wm_row_release(&ctx->host, r);
      return failed(op, rec);
    }
    if (wm_value_copy(&ctx->host, &r->fields[i], &v) != 0) {
      wm_row_release(&ctx->host, r);
      return wm_ctx_error(ctx, "out of memory");
    }
  }
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
