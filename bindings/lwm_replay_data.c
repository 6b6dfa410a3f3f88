/* wm.lab's replay data (core.replay_data): recorded lines with their arrival times.
 *
 * A replay data set holds the lines of a recorded file in arrival order (a stable sort),
 * each with its event time and its arrival (processing) time, and the perfect watermark
 * before each arrival: perfect[i] = min(ts[i..n-1]) - 1, the highest watermark that no
 * record still to come violates. h:replay(data, opts) pushes the lines into a harness
 * whose pipeline parses them (parse_csv), with the virtual clock moved to each arrival
 * first, and measures lateness, lag and latency at the pipeline's window operator. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wm_csv.h"
#include "lwm_plan.h"
#include "lwm_replay_data.h"
#include "lwm_sigwatch.h"

static void replay_data_clear(replay_data *D) {
  free(D->path);
  free(D->text);
  free(D->off);
  free(D->len);
  free(D->lineno);
  free(D->ts);
  free(D->arrival);
  free(D->perfect);
  memset(D, 0, sizeof *D);
}

static int replay_data_gc(lua_State *L) {
  replay_data_clear(luaL_checkudata(L, 1, REPLAY_MT));
  return 0;
}

typedef struct arr_idx {
  int64_t arrival;
  size_t i;
} arr_idx;

static int cmp_arrival(const void *a, const void *b) {
  const arr_idx *x = a, *y = b;
  if (x->arrival != y->arrival) return x->arrival < y->arrival ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i; /* stable: file order among equal arrivals */
}

/* Reads the whole file into *text (NUL-terminated); 0, or -1 with errno set. */
static int read_file(const char *path, char **text, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      int bad = ferror(f);
      fclose(f);
      if (bad) {
        free(buf);
        return -1;
      }
      buf[n] = '\0';
      *text = buf;
      *len = n;
      return 0;
    }
  }
  free(buf);
  fclose(f);
  errno = ENOMEM;
  return -1;
}

/* Loads the lines of path into D. With fields (a parse_csv node's columns), decodes each
 * line and reads the integer fields tsf (NULL: no event times) and arrf; without arrf the
 * arrivals are given[0..ngiven-1], one per line in file order. lenient (the parser's
 * on_error is "skip" or "side_output"): a line that does not parse, or has no arrival, is
 * not an error but arrives with the line before it in the file (the first lines with the
 * first that has one), and the parser deals with it when it is replayed. 0, or -1 with a
 * message (path:line: ...) in err. */
static int replay_data_load(replay_data *D, const char *path, const wm_csv_field *fields,
                            uint32_t nf, char sep, int header, int lenient, const char *tsf,
                            const char *arrf, const int64_t *given, size_t ngiven,
                            const wm_exec *watch, char *err, size_t errlen) {
  size_t flen = 0;
  D->path = strdup(path); /* NULL: messages say "?" */
  if (read_file(path, &D->text, &flen) != 0) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  size_t cap = 1024;
  D->off = malloc(cap * sizeof *D->off);
  D->len = malloc(cap * sizeof *D->len);
  D->lineno = malloc(cap * sizeof *D->lineno);
  D->ts = malloc(cap * sizeof *D->ts);
  D->arrival = malloc(cap * sizeof *D->arrival);
  wm_decoder dec = {0};
  int rc = -1;
  if (!D->off || !D->len || !D->lineno || !D->ts || !D->arrival ||
      (fields && wm_decoder_csv(&dec, fields, nf, sep) != 0)) {
    snprintf(err, errlen, "out of memory");
    goto done;
  }
  wm_ctx ctx; /* for the decoder's out-of-memory message only */
  wm_ctx_init(&ctx);
  wm_op dummy;
  memset(&dummy, 0, sizeof dummy);
  dummy.ctx = &ctx;
  int its = -1, iar = -1;
  for (uint32_t k = 0; fields && k < nf; k++) {
    if (tsf && strcmp(fields[k].name, tsf) == 0) its = (int)k;
    if (arrf && strcmp(fields[k].name, arrf) == 0) iar = (int)k;
  }
  if ((tsf && its < 0) || (arrf && iar < 0)) {
    snprintf(err, errlen, "no column '%s' among the fields", tsf && its < 0 ? tsf : arrf);
    goto done_ctx;
  }
  char *p = D->text, *end = D->text + flen;
  uint32_t lineno = 0;
  /* lenient: the last arrival read, and the first of the lines before it that had none */
  int64_t prev = 0;
  int have_prev = 0;
  size_t unfilled = SIZE_MAX;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *le = nl ? nl : end;
    lineno++;
    size_t ll = (size_t)(le - p);
    if (ll > 0 && p[ll - 1] == '\r') ll--;
    p[ll] = '\0';
    char *line = p;
    p = nl ? nl + 1 : end;
    if (watch && (lineno & 0xffff) == 0 && wm_exec_signal_pending(watch)) {
      snprintf(err, errlen, "%s while reading %s (line %u)", lwm_sig_text(wm_exec_signal(watch)),
               path, lineno);
      goto done_ctx;
    }
    if (header && lineno == 1) continue;
    if (ll > UINT32_MAX) {
      snprintf(err, errlen, "%s:%u: line too long", path, lineno);
      goto done_ctx;
    }
    int64_t t = WM_TIME_MIN, a = 0;
    if (fields) {
      wm_value row;
      wm_error derr;
      int d = dec.decode(dec.ud, &dummy, line, ll, &row, &derr);
      if (d == 1 && !lenient) {
        snprintf(err, errlen, "%s:%u: %.511s", path, lineno, derr.msg);
        goto done_ctx;
      }
      if (d != 0 && d != 1) {
        snprintf(err, errlen, "%.900s", wm_ctx_errtext(&ctx));
        goto done_ctx;
      }
      int bad = -1;
      if (d == 0 && its >= 0) {
        const wm_value *tv = &row.u.row->fields[its];
        if (tv->type == WM_INT) t = tv->u.i;
        else bad = its;
      }
      if (d == 0 && iar >= 0) {
        const wm_value *av = &row.u.row->fields[iar];
        if (av->type == WM_INT) a = av->u.i;
        else bad = iar;
      }
      if (d == 0) wm_value_release(NULL, &row);
      if (bad >= 0 && !lenient) {
        snprintf(err, errlen, "%s:%u: field '%s' is empty (it must be an integer number of ms)",
                 path, lineno, fields[bad].name);
        goto done_ctx;
      }
      if (lenient && iar >= 0) { /* a line the parser will skip: it arrives with its neighbour */
        if (d == 1 || bad >= 0) {
          a = have_prev ? prev : 0;
          if (!have_prev && unfilled == SIZE_MAX) unfilled = D->n;
        } else {
          prev = a;
          have_prev = 1;
          for (; unfilled < D->n; unfilled++) D->arrival[unfilled] = a;
          unfilled = SIZE_MAX;
        }
      }
    }
    if (iar < 0) {
      if (D->n >= ngiven) {
        snprintf(err, errlen, "%s:%u: no arrival time for this line (the file grew?)", path, lineno);
        goto done_ctx;
      }
      a = given[D->n];
    }
    if (D->n == cap) {
      cap *= 2;
      size_t *no = realloc(D->off, cap * sizeof *no);
      if (no) D->off = no;
      uint32_t *nl2 = realloc(D->len, cap * sizeof *nl2);
      if (nl2) D->len = nl2;
      uint32_t *nn = realloc(D->lineno, cap * sizeof *nn);
      if (nn) D->lineno = nn;
      int64_t *nt = realloc(D->ts, cap * sizeof *nt);
      if (nt) D->ts = nt;
      int64_t *na = realloc(D->arrival, cap * sizeof *na);
      if (na) D->arrival = na;
      if (!no || !nl2 || !nn || !nt || !na) {
        snprintf(err, errlen, "out of memory");
        goto done_ctx;
      }
    }
    D->off[D->n] = (size_t)(line - D->text);
    D->len[D->n] = (uint32_t)ll;
    D->lineno[D->n] = lineno;
    D->ts[D->n] = t;
    D->arrival[D->n] = a;
    D->n++;
  }
  /* arrival order (usually the file's already) */
  int sorted = 1;
  for (size_t i = 1; i < D->n && sorted; i++) sorted = D->arrival[i - 1] <= D->arrival[i];
  if (!sorted) {
    arr_idx *ix = malloc(D->n * sizeof *ix);
    size_t *o2 = malloc(D->n * sizeof *o2);
    uint32_t *l2 = malloc(D->n * sizeof *l2), *n2 = malloc(D->n * sizeof *n2);
    int64_t *t2 = malloc(D->n * sizeof *t2);
    if (ix && o2 && l2 && n2 && t2) {
      for (size_t i = 0; i < D->n; i++) ix[i] = (arr_idx){D->arrival[i], i};
      qsort(ix, D->n, sizeof *ix, cmp_arrival);
      for (size_t i = 0; i < D->n; i++) {
        size_t j = ix[i].i;
        o2[i] = D->off[j];
        l2[i] = D->len[j];
        n2[i] = D->lineno[j];
        t2[i] = D->ts[j];
        D->arrival[i] = ix[i].arrival;
      }
      free(D->off);
      free(D->len);
      free(D->lineno);
      free(D->ts);
      D->off = o2;
      D->len = l2;
      D->lineno = n2;
      D->ts = t2;
      o2 = NULL;
      l2 = n2 = NULL;
      t2 = NULL;
    }
    int oom = !ix || o2 || l2 || n2 || t2;
    free(ix);
    free(o2);
    free(l2);
    free(n2);
    free(t2);
    if (oom) {
      snprintf(err, errlen, "out of memory");
      goto done_ctx;
    }
  }
  D->perfect = malloc((D->n ? D->n : 1) * sizeof *D->perfect);
  if (!D->perfect) {
    snprintf(err, errlen, "out of memory");
    goto done_ctx;
  }
  int64_t m = WM_TIME_MAX;
  for (size_t i = D->n; i-- > 0;) {
    if (D->ts[i] < m) m = D->ts[i];
    D->perfect[i] = m == WM_TIME_MIN ? m : m - 1;
  }
  rc = 0;
done_ctx:
  wm_ctx_free(&ctx);
done:
  if (dec.free) dec.free(dec.ud);
  return rc;
}

/* core.replay_data(path, parse_node, timestamp_field, arrival[, watch]) -> data
 * parse_node: a parse_csv plan node ({fields = {{name, type, optional}...}, sep, header}), or
 * nil (the lines are not decoded); timestamp_field: an integer column, or nil (no event
 * times); arrival: an integer column, or a list of arrival times, one per line in file order. */
int lwm_replay_data_new(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  const char *tsf = luaL_optstring(L, 3, NULL);
  const char *arrf = lua_type(L, 4) == LUA_TSTRING ? lua_tostring(L, 4) : NULL;
  if (!arrf) luaL_checktype(L, 4, LUA_TTABLE);
  luaL_argcheck(L, !lua_isnoneornil(L, 2) || (!tsf && !arrf), 2,
                "columns need the parse_csv node");
  const sigwatch *W = lua_isnoneornil(L, 5) ? NULL : luaL_checkudata(L, 5, SIGWATCH_MT);
  luaL_argcheck(L, !W || W->exec, 5, "the signal watch is closed");
  lua_settop(L, 4);
  replay_data *D = lua_newuserdatauv(L, sizeof *D, 0); /* 5 */
  memset(D, 0, sizeof *D);
  luaL_setmetatable(L, REPLAY_MT);
  uint32_t nf = 0;
  wm_csv_field *fields = NULL;
  const char *sep = NULL;
  int header = 0, lenient = 0;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "fields"); /* 6 */
    luaL_argcheck(L, lua_istable(L, 6), 2, "no fields");
    nf = (uint32_t)lua_rawlen(L, 6);
    fields = calloc(nf ? nf : 1, sizeof *fields);
    if (!fields) return luaL_error(L, "out of memory");
    static const char *const types[] = {"string", "integer", "number", "boolean", NULL};
    static const uint8_t codes[] = {WM_FT_STRING, WM_FT_INTEGER, WM_FT_NUMBER, WM_FT_BOOLEAN};
    for (uint32_t k = 0; k < nf; k++) {
      lua_rawgeti(L, 6, (lua_Integer)k + 1);
      lua_getfield(L, -1, "name");
      fields[k].name = lua_tostring(L, -1); /* the plan keeps it alive */
      lua_getfield(L, -2, "type");
      const char *ty = lua_tostring(L, -1);
      fields[k].type = WM_FT_STRING;
      for (int t = 0; ty && types[t]; t++)
        if (strcmp(ty, types[t]) == 0) fields[k].type = codes[t];
      lua_getfield(L, -3, "optional");
      fields[k].optional = (uint8_t)lua_toboolean(L, -1);
      lua_pop(L, 4);
      if (!fields[k].name) {
        free(fields);
        return luaL_argerror(L, 2, "a field has no name");
      }
    }
    sep = lwm_get_str(L, 2, "sep");
    const char *on_error = lwm_get_str(L, 2, "on_error");
    lenient = on_error && strcmp(on_error, "fail") != 0;
    lua_getfield(L, 2, "header");
    header = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  int64_t *given = NULL;
  size_t ngiven = 0;
  if (!arrf) { /* the arrival times, computed by the caller */
    ngiven = (size_t)lua_rawlen(L, 4);
    given = malloc((ngiven ? ngiven : 1) * sizeof *given);
    if (!given) {
      free(fields);
      return luaL_error(L, "out of memory");
    }
    for (size_t i = 0; i < ngiven; i++) {
      int isnum = 0;
      lua_rawgeti(L, 4, (lua_Integer)i + 1);
      given[i] = (int64_t)lua_tointegerx(L, -1, &isnum);
      lua_pop(L, 1);
      if (!isnum) {
        free(fields);
        free(given);
        return luaL_error(L, "arrival time %d is not an integer number of ms", (int)i + 1);
      }
    }
  }
  char err[1024];
  int rc = replay_data_load(D, path, fields, nf, sep && *sep ? sep[0] : ',', header, lenient,
                            tsf, arrf, given, ngiven, W ? W->exec : NULL, err, sizeof err);
  free(fields);
  free(given);
  if (rc != 0) {
    replay_data_clear(D);
    return luaL_error(L, "%s", err);
  }
  lua_settop(L, 5);
  return 1;
}

/* data:count() */
static int l_data_count(lua_State *L) {
  replay_data *D = luaL_checkudata(L, 1, REPLAY_MT);
  lua_pushinteger(L, (lua_Integer)D->n);
  return 1;
}

/* data:get(i) -> line, ts, arrival, perfect, file line number (i: 1-based, arrival order) */
static int l_data_get(lua_State *L) {
  replay_data *D = luaL_checkudata(L, 1, REPLAY_MT);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && (size_t)i <= D->n, 2, "no such record");
  size_t k = (size_t)i - 1;
  lua_pushlstring(L, D->text + D->off[k], D->len[k]);
  lua_pushinteger(L, (lua_Integer)D->ts[k]);
  lua_pushinteger(L, (lua_Integer)D->arrival[k]);
  lua_pushinteger(L, (lua_Integer)D->perfect[k]);
  lua_pushinteger(L, (lua_Integer)D->lineno[k]);
  return 5;
}

static const luaL_Reg replay_data_methods[] = {
    {"count", l_data_count},
    {"get", l_data_get},
    {NULL, NULL},
};

void lwm_replay_data_open(lua_State *L) {
  if (luaL_newmetatable(L, REPLAY_MT)) {
    luaL_newlib(L, replay_data_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, replay_data_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
}
