/* The bridge between core values and Lua values: the slot table, conversions, the
 * formatter for Lua values, and protected calls of user functions. */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lwm.h"
#include "lwm_testenv.h"

/* ---- slots ----------------------------------------------------------------------- */

uint32_t lwm_slot_new(lwm_bridge *B, int idx) {
  lua_State *L = B->L;
  idx = lua_absindex(L, idx);
  uint32_t s;
  if (B->nfree) {
    s = B->free_slots[--B->nfree];
  } else {
    if (B->nslots + 1 >= B->capslots) {
      uint32_t cap = B->capslots ? B->capslots * 2 : 1024;
      uint32_t *r = realloc(B->refs, cap * sizeof *r);
      if (!r) return 0;
      B->refs = r;
      uint32_t *f = realloc(B->free_slots, cap * sizeof *f);
      if (!f) return 0;
      B->free_slots = f;
      B->capslots = cap;
    }
    s = ++B->nslots;
  }
  lua_pushvalue(L, idx);
  lua_rawseti(L, B->slots, s);
  B->refs[s] = 1;
  return s;
}

void lwm_slot_retain(void *ud, uint32_t slot) {
  lwm_bridge *B = ud;
  B->refs[slot]++;
}

void lwm_slot_release(void *ud, uint32_t slot) {
  lwm_bridge *B = ud;
  if (--B->refs[slot] > 0) return;
  lua_pushnil(B->L);
  lua_rawseti(B->L, B->slots, slot);
  B->free_slots[B->nfree++] = slot;
}

/* ---- field names as Lua strings ------------------------------------------------------ */

/* Stores the value on top of the stack (popped) at fns[*ref], taking an index on first use. */
static void store_key(lwm_bridge *B, int *ref) {
  if (*ref) lua_rawseti(B->L, B->fns, *ref);
  else *ref = lwm_store_fn(B);
}

/* Pushes the list of the names of schema s as Lua strings, made once per cached schema: a
 * row then becomes a table with lua_rawgeti + lua_rawset per field instead of hashing and
 * interning each C name (lua_setfield). Its stack index. */
static int push_row_keys(lwm_bridge *B, wm_schema *s) {
  lua_State *L = B->L;
  struct lwm_rowkeys *e = &B->rowkeys[((uintptr_t)s >> 4) % LWM_ROWKEYS];
  if (e->schema != s) {
    wm_schema_release(e->schema); /* the entry is empty until the new list is stored */
    e->schema = NULL;
    lua_createtable(L, (int)s->nfields, 0);
    for (uint32_t i = 0; i < s->nfields; i++) {
      lua_pushstring(L, s->names[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    store_key(B, &e->ref);
    s->refs++; /* a cached pointer is never a freed schema's */
    e->schema = s;
  }
  lua_rawgeti(L, B->fns, e->ref);
  return lua_gettop(L);
}

/* Drops the caches (the schemas they retain) when the bridge ends. */
static void free_key_caches(lwm_bridge *B) {
  for (int i = 0; i < LWM_ROWKEYS; i++) {
    wm_schema_release(B->rowkeys[i].schema);
    B->rowkeys[i].schema = NULL;
  }
}

/* ---- conversions ----------------------------------------------------------------- */

void lwm_push_value(lwm_bridge *B, const wm_value *v) {
  lua_State *L = B->L;
  switch (v->type) {
  case WM_NIL: lua_pushnil(L); break;
  case WM_BOOL: lua_pushboolean(L, v->u.b); break;
  case WM_INT: lua_pushinteger(L, (lua_Integer)v->u.i); break;
  case WM_FLOAT: lua_pushnumber(L, (lua_Number)v->u.f); break;
  case WM_CSTR:
  case WM_STR: {
    size_t n;
    const char *s = wm_value_str(v, &n);
    if (v->flags & WM_VF_COMPOSITE) { /* a composite key becomes a list */
      wm_value part;
      int count = wm_key_part(v, 0, &part);
      lua_createtable(L, count, 0);
      for (int i = 0; i < count; i++) {
        wm_key_part(v, (size_t)i, &part);
        lwm_push_value(B, &part);
        lua_rawseti(L, -2, i + 1);
      }
    } else {
      lua_pushlstring(L, s, n);
    }
    break;
  }
  case WM_ROW: {
    const wm_row *r = v->u.row;
    luaL_checkstack(L, 5, "wmrun: converting a row");
    int keys = push_row_keys(B, r->schema);
    lua_createtable(L, 0, (int)r->schema->nfields);
    for (uint32_t i = 0; i < r->schema->nfields; i++) {
      if (r->fields[i].type == WM_NIL) continue; /* nil fields are absent */
      lua_rawgeti(L, keys, (lua_Integer)i + 1);
      lwm_push_value(B, &r->fields[i]);
      lua_rawset(L, -3);
    }
    lua_replace(L, keys);
    break;
  }
  case WM_SLOT: lua_rawgeti(L, B->slots, v->u.slot); break;
  default: lua_pushnil(L); break;
  }
}

void lwm_push_arg(lwm_bridge *B, lwm_opinfo *oi, const wm_value *rec) {
  if (!oi->reads_only || rec->type != WM_ROW) {
    lwm_push_value(B, rec);
    return;
  }
  /* the function cannot have kept the table it was given last time, nor changed it: every
   * field is set again (existing keys: nothing is allocated), a nil field cleared */
  lua_State *L = B->L;
  const wm_row *r = rec->u.row;
  wm_schema *s = r->schema;
  luaL_checkstack(L, 5, "wmrun: converting a row");
  int keys = push_row_keys(B, s);
  if (oi->rowtab && oi->rowschema == s) {
    lua_rawgeti(L, B->fns, oi->rowtab);
  } else { /* the first row, or one of another schema: a table for its names */
    lua_createtable(L, 0, (int)s->nfields);
    lua_pushvalue(L, -1);
    store_key(B, &oi->rowtab);
    s->refs++;
    wm_schema_release(oi->rowschema);
    oi->rowschema = s;
  }
  for (uint32_t i = 0; i < s->nfields; i++) {
    lua_rawgeti(L, keys, (lua_Integer)i + 1);
    lwm_push_value(B, &r->fields[i]); /* nil: absent, as in lwm_push_value */
    lua_rawset(L, -3);
  }
  lua_replace(L, keys);
}

int lwm_to_value(lwm_bridge *B, int idx, wm_value *out) {
  lua_State *L = B->L;
  *out = wm_nil();
  switch (lua_type(L, idx)) {
  case LUA_TNIL: return 0;
  case LUA_TBOOLEAN: *out = wm_bool(lua_toboolean(L, idx)); return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) *out = wm_int((int64_t)lua_tointeger(L, idx));
    else *out = wm_float((double)lua_tonumber(L, idx));
    return 0;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    *out = wm_cstr(s, n);
    return 0;
  }
  default: {
    uint32_t s = lwm_slot_new(B, idx);
    if (!s) return -1;
    out->type = WM_SLOT;
    out->u.slot = s;
    return 0;
  }
  }
}

/* ---- formatting Lua values as print shows them ---------------------------------- */

typedef struct keyent {
  const char *s;
  size_t n;
  int pos; /* index in the scratch table of the key's value */
} keyent;

static int cmp_keys(const void *a, const void *b) {
  const keyent *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->s, y->s, n);
  if (c) return c;
  return (x->n > y->n) - (x->n < y->n);
}

/* The key order of a table whose keys are all short strings is cached per shape (the keys in
 * the order lua_next gives them), so that printing a stream of tables of one shape sorts
 * once: a direct-mapped cache in a userdata of the registry, whose uservalue table anchors
 * every cached key (so a cached pointer is never a collected string's). Short strings are
 * interned: one text, one pointer. */
#define SHAPE_KEYS 16  /* tables of more keys are sorted every time */
#define SHAPE_SLOTS 64
#define SHAPE_KEYLEN 40 /* Lua 5.4's short strings (LUAI_MAXSHORTLEN); checked when anchored */

typedef struct shape {
  uint32_t n;                    /* keys; 0: empty slot */
  const char *keys[SHAPE_KEYS];  /* in lua_next order, anchored */
  size_t lens[SHAPE_KEYS];
  uint8_t order[SHAPE_KEYS];     /* positions in keys, in byte order of the keys */
} shape;

typedef struct shape_cache {
  shape slot[SHAPE_SLOTS];
} shape_cache;

static const char shape_cache_anchor = 0; /* its address is the registry key */

/* The cache of L, made on first use (raises on out of memory, as the scratch table would);
 * pushes its anchor table. */
static shape_cache *shape_cache_of(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &shape_cache_anchor) == LUA_TUSERDATA) { /* +1 */
    shape_cache *c = lua_touserdata(L, -1);
    lua_getiuservalue(L, -1, 1); /* +1: the anchors */
    lua_remove(L, -2);
    return c;
  }
  lua_pop(L, 1);
  shape_cache *c = lua_newuserdatauv(L, sizeof *c, 1);
  memset(c, 0, sizeof *c);
  lua_createtable(L, SHAPE_SLOTS * SHAPE_KEYS, 0);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, -3, 1);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &shape_cache_anchor);
  lua_remove(L, -2); /* stack: anchors */
  return c;
}

static int key_less(const char *a, size_t an, const char *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c < 0 : an < bn;
}

/* The byte order of the n keys (all strings, so all different), from the cache or sorted and
 * cached; NULL when the keys cannot be cached (a key that is not interned). */
static const uint8_t *shape_order(lua_State *L, const char *const *keys, const size_t *lens,
                                  uint32_t n) {
  uintptr_t h = n;
  for (uint32_t j = 0; j < n; j++) h = (h ^ (uintptr_t)keys[j]) * (uintptr_t)0x9E3779B97F4A7C15u;
  shape_cache *c = shape_cache_of(L); /* +1: anchors */
  shape *e = &c->slot[(h >> 20) % SHAPE_SLOTS];
  if (e->n == n && memcmp(e->keys, keys, n * sizeof *keys) == 0) {
    lua_pop(L, 1);
    return e->order;
  }
  int anchors = lua_gettop(L);
  lua_Integer base = (lua_Integer)(e - c->slot) * SHAPE_KEYS;
  e->n = 0; /* the slot is rewritten: empty until it is whole */
  for (uint32_t j = 0; j < SHAPE_KEYS; j++) {
    if (j < n) lua_pushlstring(L, keys[j], lens[j]); /* the same string when interned */
    else lua_pushnil(L);
    int same = j >= n || lua_tostring(L, -1) == keys[j];
    lua_rawseti(L, anchors, base + j + 1);
    if (!same) {
      lua_pop(L, 1);
      return NULL;
    }
  }
  lua_pop(L, 1);
  for (uint32_t j = 0; j < n; j++) {
    e->keys[j] = keys[j];
    e->lens[j] = lens[j];
    uint32_t i = j; /* insertion sort: at most SHAPE_KEYS keys */
    while (i > 0 && key_less(keys[j], lens[j], keys[e->order[i - 1]], lens[e->order[i - 1]])) {
      e->order[i] = e->order[i - 1];
      i--;
    }
    e->order[i] = (uint8_t)j;
  }
  e->n = n;
  return e->order;
}

static void format_table(lua_State *L, int idx, wm_buf *b, int depth) {
  /* a sequence prints as an array */
  lua_Unsigned n = lua_rawlen(L, idx);
  size_t count = 0;
  int only_seq = 1;
  /* tables of short string keys keep their keys and values on the stack, in lua_next order
   * (the keys stay alive there whatever a __tostring below does) */
  int top = lua_gettop(L);
  int shaped = lua_checkstack(L, 2 * SHAPE_KEYS + 8);
  const char *skeys[SHAPE_KEYS];
  size_t slens[SHAPE_KEYS];
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    count++;
    if (only_seq) {
      if (!lua_isinteger(L, -2)) only_seq = 0;
      else {
        lua_Integer k = lua_tointeger(L, -2);
        if (k < 1 || (lua_Unsigned)k > n) only_seq = 0;
      }
    }
    if (shaped) {
      if (count > SHAPE_KEYS || lua_type(L, -2) != LUA_TSTRING) shaped = 0;
      else {
        skeys[count - 1] = lua_tolstring(L, -2, &slens[count - 1]);
        if (slens[count - 1] > SHAPE_KEYLEN) shaped = 0;
        else {
          lua_pushvalue(L, -2); /* the key and the value stay, under the key lua_next goes on from */
          continue;
        }
      }
    }
    lua_pop(L, 1);
  }
  if (shaped && count > 0) {
    const uint8_t *cached = shape_order(L, skeys, slens, (uint32_t)count);
    if (cached) {
      uint8_t order[SHAPE_KEYS]; /* a copy: formatting a value below may reuse the slot */
      memcpy(order, cached, count);
      wm_buf_addc(b, '{');
      for (size_t i = 0; i < count; i++) {
        uint8_t j = order[i];
        if (i) wm_buf_addc(b, ',');
        wm_buf_add_json_string(b, skeys[j], slens[j]);
        wm_buf_addc(b, ':');
        lwm_format_lua(L, top + 2 + 2 * j, b, 1, depth + 1);
      }
      wm_buf_addc(b, '}');
      lua_settop(L, top);
      return;
    }
  }
  lua_settop(L, top);
  if (n > 0 && only_seq && count == n) {
    wm_buf_addc(b, '[');
    for (lua_Unsigned i = 1; i <= n; i++) {
      if (i > 1) wm_buf_addc(b, ',');
      lua_rawgeti(L, idx, (lua_Integer)i);
      lwm_format_lua(L, lua_gettop(L), b, 1, depth + 1);
      lua_pop(L, 1);
    }
    wm_buf_addc(b, ']');
    return;
  }
  if (count == 0) {
    wm_buf_adds(b, "{}");
    return;
  }
  /* an object with sorted keys: keys as strings and values go to a scratch table that
   * keeps them alive while a C array of keys is sorted (a userdata: running out of memory
   * below raises, and nothing may be left to free) */
  keyent *keys = lua_newuserdatauv(L, count * sizeof *keys, 0);
  lua_createtable(L, (int)(count * 2), 0);
  int scratch = lua_gettop(L);
  size_t k = 0;
  lua_pushnil(L);
  while (lua_next(L, idx) && k < count) {
    /* key as text: strings as they are, other keys through tostring */
    if (lua_type(L, -2) == LUA_TSTRING) lua_pushvalue(L, -2);
    else if (lua_type(L, -2) == LUA_TNUMBER || lua_type(L, -2) == LUA_TBOOLEAN) {
      lua_pushvalue(L, -2);
      lua_tolstring(L, -1, NULL); /* converts the copy in place, never the key itself */
      if (lua_type(L, -1) != LUA_TSTRING) { lua_pop(L, 1); lua_pushstring(L, lua_toboolean(L, -2) ? "true" : "false"); }
    } else {
      lua_pushfstring(L, "%s: %p", luaL_typename(L, -2), lua_topointer(L, -2));
    }
    lua_rawseti(L, scratch, (lua_Integer)(2 * k + 1));
    lua_rawseti(L, scratch, (lua_Integer)(2 * k + 2)); /* pops the value */
    lua_rawgeti(L, scratch, (lua_Integer)(2 * k + 1));
    keys[k].s = lua_tolstring(L, -1, &keys[k].n);
    keys[k].pos = (int)(2 * k + 2);
    lua_pop(L, 1); /* the string stays alive in scratch */
    k++;
  }
  qsort(keys, k, sizeof *keys, cmp_keys);
  wm_buf_addc(b, '{');
  for (size_t i = 0; i < k; i++) {
    if (i) wm_buf_addc(b, ',');
    wm_buf_add_json_string(b, keys[i].s, keys[i].n);
    wm_buf_addc(b, ':');
    lua_rawgeti(L, scratch, keys[i].pos);
    lwm_format_lua(L, lua_gettop(L), b, 1, depth + 1);
    lua_pop(L, 1);
  }
  wm_buf_addc(b, '}');
  lua_pop(L, 2); /* scratch, keys */
}

void lwm_format_lua(lua_State *L, int idx, wm_buf *b, int json, int depth) {
  idx = lua_absindex(L, idx);
  if (!lua_checkstack(L, 8)) {
    wm_buf_adds(b, "...");
    return;
  }
  switch (lua_type(L, idx)) {
  case LUA_TNIL: wm_buf_adds(b, json ? "null" : "nil"); break;
  case LUA_TBOOLEAN: wm_buf_adds(b, lua_toboolean(L, idx) ? "true" : "false"); break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) wm_buf_add_int(b, (int64_t)lua_tointeger(L, idx));
    else {
      wm_value v = wm_float((double)lua_tonumber(L, idx));
      wm_format_value(b, &v, json, NULL, NULL);
    }
    break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    if (json) wm_buf_add_json_string(b, s, n);
    else wm_buf_add(b, s, n);
    break;
  }
  case LUA_TTABLE:
    if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
      lua_pushvalue(L, idx);
      if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
        const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "not a string";
        wm_buf_adds(b, "<__tostring failed: ");
        wm_buf_adds(b, msg);
        wm_buf_adds(b, ">");
      } else {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        if (json) wm_buf_add_json_string(b, s, n);
        else wm_buf_add(b, s, n);
      }
      lua_pop(L, 1);
      break;
    }
    if (depth > 32) {
      wm_buf_adds(b, json ? "\"...\"" : "...");
      break;
    }
    format_table(L, idx, b, depth);
    break;
  default: {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s: %p", luaL_typename(L, idx), lua_topointer(L, idx));
    if (json) wm_buf_add_json_string(b, tmp, strlen(tmp));
    else wm_buf_adds(b, tmp);
  }
  }
}

/* ---- re-entry ------------------------------------------------------------------- */

void lwm_register(lwm_bridge *B) {
  lua_State *L = B->L;
  lua_createtable(L, 3, 0);
  lua_pushvalue(L, B->msgh);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, B->slots);
  lua_rawseti(L, -2, 2);
  lua_pushvalue(L, B->fns);
  lua_rawseti(L, -2, 3);
  lua_rawsetp(L, LUA_REGISTRYINDEX, B); /* registry[B] = {msgh, slots, fns} */
}

void lwm_unregister(lwm_bridge *B) {
  free_key_caches(B);
  lua_pushnil(B->L);
  lua_rawsetp(B->L, LUA_REGISTRYINDEX, B);
}

void lwm_enter(lwm_bridge *B, lua_State *L, lwm_frame *f) {
  f->L = B->L;
  f->msgh = B->msgh;
  f->slots = B->slots;
  f->fns = B->fns;
  f->top = lua_gettop(L);
  luaL_checkstack(L, 6, "wmrun: re-entering the bridge");
  lua_rawgetp(L, LUA_REGISTRYINDEX, B);
  lua_rawgeti(L, -1, 1);
  lua_rawgeti(L, -2, 2);
  lua_rawgeti(L, -3, 3);
  lua_remove(L, -4); /* stack: msgh slots fns */
  B->L = L;
  B->msgh = f->top + 1;
  B->slots = f->top + 2;
  B->fns = f->top + 3;
}

void lwm_leave(lwm_bridge *B, const lwm_frame *f) {
  lua_settop(B->L, f->top);
  B->L = f->L;
  B->msgh = f->msgh;
  B->slots = f->slots;
  B->fns = f->fns;
}

int lwm_callback_done(lwm_bridge *B, lua_State *L, int rc) {
  if (rc == WM_OK) return 0;
  B->downstream_failed = 1; /* outer frames keep the message already in B->ctx.error */
  return luaL_error(L, "downstream operator failed");
}

/* ---- calls ----------------------------------------------------------------------- */

void lwm_push_fn(lwm_bridge *B, int fn) { lua_rawgeti(B->L, B->fns, fn); }

int lwm_store_fn(lwm_bridge *B) {
  lua_rawseti(B->L, B->fns, ++B->nfns);
  return B->nfns;
}

/* Records are never nil (Flink has no null records): out(nil) is the caller's mistake, as
 * a map that returns nil is. */
void lwm_check_record(lua_State *L, int arg) {
  if (lua_isnoneornil(L, arg)) luaL_typeerror(L, arg, "record");
}

int lwm_emit_arg(lwm_bridge *B, lua_State *L, wm_op *op, int port, int arg, int64_t ts) {
  lwm_check_record(L, arg);
  lua_settop(L, arg);
  lwm_frame fr;
  lwm_enter(B, L, &fr);
  wm_value v;
  int rc = lwm_to_value(B, arg, &v) != 0 ? wm_ctx_error(&B->ctx, "out of memory") : WM_OK;
  if (rc == WM_OK) {
    rc = wm_op_emit(op, port, &v, ts);
    wm_value_release(&B->ctx.host, &v);
  }
  lwm_leave(B, &fr);
  return lwm_callback_done(B, L, rc);
}

/* The record part of the failure: as print shows it, cut after 400 bytes. */
static void add_record(lwm_bridge *B, const wm_value *rec) {
  wm_buf b;
  wm_buf_init(&b);
  wm_format_value(&b, rec, 0, B->ctx.host.format, B->ctx.host.ud);
  if (b.len > 400) {
    b.len = 400;
    b.data[b.len] = '\0';
    wm_buf_adds(&b, "...");
  }
  wm_error_set_record(&B->ctx.error, b.data && !b.oom ? b.data : "");
  wm_buf_free(&b);
}

int lwm_op_error(lwm_opinfo *oi, const wm_value *rec, const char *fmt, ...) {
  lwm_bridge *B = oi->B;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  wm_ctx_error(&B->ctx, "%s: %s", oi->where, msg);
  if (oi->op) wm_op_error_parts(oi->op);
  else wm_error_set_op(&B->ctx.error, "?");
  if (rec) add_record(B, rec);
  return WM_ERR;
}

int lwm_call(lwm_opinfo *oi, int nargs, int nres, const wm_value *rec) {
  lwm_bridge *B = oi->B;
  lua_State *L = B->L;
  int msgh = B->msgh, slots = B->slots, fns = B->fns;
  B->depth++;
  int st = lua_pcall(L, nargs, nres, msgh);
  if (--B->depth == 0) B->hook_ticks = 0; /* it returned: whatever runs next starts afresh */
  if (B->gcstress) lua_gc(L, LUA_GCCOLLECT); /* the results are on the stack: kept */
  if (st == LUA_OK) return WM_OK;
  /* an error raised in a C callback between its lwm_enter and lwm_leave (running out of
   * memory while emitting) left B on that callback's frame, which is gone: back to this one */
  B->L = L;
  B->msgh = msgh;
  B->slots = slots;
  B->fns = fns;
  if (!B->downstream_failed) {
    size_t n;
    const char *m = lua_tolstring(L, -1, &n);
    if (!m) m = "(error object is not a string)";
    const char *tb = strstr(m, "\nstack traceback:");
    int head = tb ? (int)(tb - m) : (int)strlen(m);
    /* the host splits Lua's text: the message, and the traceback as an opaque part */
    wm_ctx_error(&B->ctx, "%.*s", head, m);
    if (oi->op) wm_op_error_parts(oi->op);
    else wm_error_set_op(&B->ctx.error, "?");
    if (rec) add_record(B, rec);
    if (tb) wm_error_set_trace(&B->ctx.error, tb, strlen(tb));
  }
  B->downstream_failed = 1; /* outer Lua frames keep this message */
  lua_pop(L, 1);
  return WM_ERR;
}

/* ---- host hooks for slot values ------------------------------------------------- */

/* Field reads and writes of a record that is a Lua table, for the core's declarative
 * operators (key_by("id"), sum("vc"), with_timestamp_field, ...). They run inside the core's
 * frames and libuv's, where an error must not unwind: a table with a metatable (whose
 * __index or __newindex runs the user's code, which may raise) is read and copied under
 * lua_pcall, and the error comes back as the message in err, which the operator completes
 * with its name and the record. A table without a metatable runs no code. */

static const char field_anchor = 0; /* its address is the registry key of the anchors */

/* record, name (light userdata) -> its field (the record's __index may run). A string that
 * __index made is referenced by nothing else: it is kept in anchors[record][name] (a table
 * with weak keys), so that it lives as long as the record, as a stored field does. */
static int get_field_protected(lua_State *L) {
  const char *name = lua_touserdata(L, 2);
  lua_settop(L, 1);
  if (lua_getfield(L, 1, name) == LUA_TSTRING) { /* at 2 */
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &field_anchor) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_createtable(L, 0, 1);
      lua_pushliteral(L, "k");
      lua_setfield(L, -2, "__mode");
      lua_setmetatable(L, -2);
      lua_pushvalue(L, -1);
      lua_rawsetp(L, LUA_REGISTRYINDEX, &field_anchor);
    }
    lua_pushvalue(L, 1); /* anchors[record] */
    if (lua_rawget(L, -2) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, 1);
      lua_pushvalue(L, -2);
      lua_rawset(L, -4);
    }
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, name);
    lua_settop(L, 2);
  }
  return 1;
}

/* The error of a protected call, on top of the stack (popped), into err. */
static void field_error(lua_State *L, const char *what, const char *name, wm_error *err) {
  const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  if (m)
    wm_error_set(err, "%s field '%s' of the record raised an error: %s", what, name, m);
  else
    wm_error_set(err, "%s field '%s' of the record raised an error (a %s value)", what, name,
                 luaL_typename(L, -1));
  lua_pop(L, 1);
}

static int host_get_field(void *ud, const wm_value *rec, const char *name, wm_value *out,
                          wm_error *err) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  if (lua_rawgeti(L, B->slots, rec->u.slot) != LUA_TTABLE) {
    wm_error_set(err, "cannot read field '%s' of a %s (expected a table record)", name,
             luaL_typename(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  int t;
  if (lua_getmetatable(L, -1)) { /* its __index may raise: under lua_pcall */
    lua_pop(L, 1);
    lua_pushcfunction(L, get_field_protected);
    lua_pushvalue(L, -2);
    lua_pushlightuserdata(L, (void *)name);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
      field_error(L, "reading", name, err);
      lua_pop(L, 1);
      return -1;
    }
    t = lua_type(L, -1);
  } else {
    t = lua_getfield(L, -1, name); /* a plain table: no code runs */
  }
  /* the field's value stays referenced by the record (or its anchor), so a string's bytes
   * stay valid */
  switch (t) { /* the scalars converted here, as lwm_to_value does */
  case LUA_TNIL: *out = wm_nil(); break;
  case LUA_TBOOLEAN: *out = wm_bool(lua_toboolean(L, -1)); break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    *out = wm_cstr(s, n);
    break;
  }
  case LUA_TNUMBER: lwm_to_value(B, -1, out); break;
  default:
    wm_error_set(err, "field '%s' is a %s, not a string, number or boolean", name,
             luaL_typename(L, -1));
    lua_pop(L, 2);
    return -1;
  }
  lua_pop(L, 2);
  return 0;
}

/* record, name (light userdata), value -> a shallow copy of the record with the field set
 * (the copy has the record's metatable, whose __newindex may run). */
static int with_field_protected(lua_State *L) {
  const char *name = lua_touserdata(L, 2);
  lua_createtable(L, 0, 4);
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  if (lua_getmetatable(L, 1)) lua_setmetatable(L, -2);
  lua_pushvalue(L, 3);
  lua_setfield(L, -2, name);
  return 1;
}

static int host_with_field(void *ud, const wm_value *rec, const char *name, const wm_value *val,
                           wm_value *out, wm_error *err) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_rawgeti(L, B->slots, rec->u.slot);
  if (lua_type(L, -1) != LUA_TTABLE) {
    wm_error_set(err, "cannot set field '%s' of a %s", name, luaL_typename(L, -1));
    lua_pop(L, 1);
    return -1;
  }
  int src = lua_gettop(L);
  if (lua_getmetatable(L, src)) { /* its __newindex may raise: under lua_pcall */
    lua_pop(L, 1);
    lua_pushcfunction(L, with_field_protected);
    lua_pushvalue(L, src);
    lua_pushlightuserdata(L, (void *)name);
    lwm_push_value(B, val);
    if (lua_pcall(L, 3, 1, 0) != LUA_OK) {
      field_error(L, "setting", name, err);
      lua_pop(L, 1);
      return -1;
    }
  } else { /* a plain table: no code runs */
    lua_createtable(L, 0, 4);
    lua_pushnil(L);
    while (lua_next(L, src)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
    lwm_push_value(B, val);
    lua_setfield(L, -2, name);
  }
  uint32_t s = lwm_slot_new(B, -1);
  lua_pop(L, 2);
  if (!s) {
    wm_error_set(err, "out of memory");
    return -1;
  }
  *out = wm_nil();
  out->type = WM_SLOT;
  out->u.slot = s;
  return 0;
}

/* value, buffer (light userdata), json -> nothing */
static int format_protected(lua_State *L) {
  lwm_format_lua(L, 1, lua_touserdata(L, 2), lua_toboolean(L, 3), 0);
  return 0;
}

/* A held value as print shows it, for the core (print sinks, the record of an error
 * message). Under lua_pcall: running out of memory while formatting marks the buffer
 * (b->oom) instead of unwinding the core's frames. */
static void host_format(void *ud, wm_buf *b, const wm_value *v, int json) {
  lwm_bridge *B = ud;
  lua_State *L = B->L;
  lua_pushcfunction(L, format_protected);
  lua_rawgeti(L, B->slots, v->u.slot);
  lua_pushlightuserdata(L, b);
  lua_pushboolean(L, json);
  if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
    b->oom = 1;
    lua_pop(L, 1);
  }
}

/* ---- the message handler (as lua.c's) ------------------------------------------------ */

/* Whether msg starts with a position ("job.lua:12: "). */
static int has_position(const char *msg) {
  const char *c = strchr(msg, ':');
  if (!c || c == msg || !isdigit((unsigned char)c[1])) return 0;
  for (c++; isdigit((unsigned char)*c); c++) {
  }
  return *c == ':';
}

/* Errors raised by C functions (coroutine.yield, an error object's __tostring) carry no
 * position: give them the line of the user's code that called them. */
static const char *add_position(lua_State *L, const char *msg) {
  if (has_position(msg)) return msg;
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    return lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
  }
  return msg;
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      add_position(L, lua_tostring(L, -1));
      return 1;
    }
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, add_position(L, msg), 1);
  return 1;
}

/* ---- the bridge of a job run -------------------------------------------------------- */

lwm_pending *lwm_pending_add(lwm_bridge *B, void (*free_fn)(void *), void *ud) {
  lwm_pending *p = malloc(sizeof *p);
  if (!p) return NULL;
  *p = (lwm_pending){.next = B->pending, .free = free_fn, .ud = ud};
  B->pending = p;
  return p;
}

void lwm_pending_done(lwm_bridge *B, lwm_pending *p) {
  for (lwm_pending **q = &B->pending; p && *q; q = &(*q)->next) {
    if (*q == p) {
      *q = p->next;
      free(p);
      return;
    }
  }
}

void lwm_pending_free_all(lwm_bridge *B) {
  while (B->pending) {
    lwm_pending *p = B->pending;
    B->pending = p->next;
    p->free(p->ud);
    free(p);
  }
}


/* B (light userdata) -> msgh, slots, fns, registered under B: the Lua half of
 * lwm_bridge_init, under lua_pcall so that running out of memory leaks nothing of B */
static int bridge_values(lua_State *L) {
  lwm_bridge *B = lua_touserdata(L, 1);
  lua_pushcfunction(L, msghandler);
  lua_newtable(L);
  lua_newtable(L);
  B->msgh = 2; /* this frame's indexes, for lwm_register */
  B->slots = 3;
  B->fns = 4;
  lwm_register(B);
  return 3;
}

int lwm_bridge_init(lwm_bridge *B, lua_State *L) {
  B->L = L;
  B->gc_step = 0;
  memset(B->rowkeys, 0, sizeof B->rowkeys);
  B->gcstress = lwm_test_gcstress(); /* make gcstress (docs/testing.md) */
  wm_ctx_init(&B->ctx);
  B->ctx.host.ud = B;
  B->ctx.host.retain = lwm_slot_retain;
  B->ctx.host.release = lwm_slot_release;
  B->ctx.host.get_field = host_get_field;
  B->ctx.host.with_field = host_with_field;
  B->ctx.host.format = host_format;
  lua_pushcfunction(L, bridge_values);
  lua_pushlightuserdata(L, B);
  if (lua_pcall(L, 1, 3, 0) != LUA_OK) return -1;
  B->msgh = lua_gettop(L) - 2;
  B->slots = lua_gettop(L) - 1;
  B->fns = lua_gettop(L);
  return 0;
}

