/* Whether a Lua function only reads the fields of its first argument (lwm_reads_arg_only).
 *
 * A row from C (parse_csv, read_json, ...) reaches a Lua function as a new table per record:
 * the table, its three or more keys and the GC work for it are a fifth of a job such as
 * parse_csv -> map -> reduce. When the function provably cannot keep the table (store it,
 * return it, pass it to a call, capture it in a closure) nor change it, the operator fills
 * one table again for every record instead (lwm_push_arg, lwm_bridge.c: map, filter,
 * flat_map, a key_by function and a timestamp assigner; docs/api.md, "Streams").
 *
 * The proof reads the function's bytecode (lua_dump, stripped) and is deliberately narrow:
 * the first parameter lives in register 0 for the whole call, so every instruction that
 * names register 0 must be a field read of it (GETFIELD, GETI, GETTABLE with register 0 as
 * the table, the result in another register), and no nested function may capture register
 * 0 as an upvalue. Anything else (a move, a call with it, a comparison, a test, `#r`, a
 * store into it, a vararg function, an unknown opcode, a dump of another format) answers
 * no, and the function gets a table of its own per record as before. A table from wmrun has
 * no metatable, so its field reads run no code. (The debug library can still reach the
 * argument; that is outside what a job function may rely on: docs/api.md.)
 *
 * The opcodes are those of Lua 5.4 (lopcodes.h); the dump's header must say 5.4 with the
 * sizes read here, and reference functions must get their known answers (self_check, once
 * per Lua state), so a Lua whose bytecode differs is never misread: it only loses the
 * shortcut. */
#include <stdlib.h>
#include <string.h>

#include "lwm.h"

/* Lua 5.4's opcodes (lopcodes.h, OP_MOVE = 0 ... OP_EXTRAARG = 82). */
enum {
  OP_MOVE, OP_LOADI, OP_LOADF, OP_LOADK, OP_LOADKX, OP_LOADFALSE, OP_LFALSESKIP, OP_LOADTRUE,
  OP_LOADNIL, OP_GETUPVAL, OP_SETUPVAL, OP_GETTABUP, OP_GETTABLE, OP_GETI, OP_GETFIELD,
  OP_SETTABUP, OP_SETTABLE, OP_SETI, OP_SETFIELD, OP_NEWTABLE, OP_SELF, OP_ADDI, OP_ADDK,
  OP_SUBK, OP_MULK, OP_MODK, OP_POWK, OP_DIVK, OP_IDIVK, OP_BANDK, OP_BORK, OP_BXORK, OP_SHRI,
  OP_SHLI, OP_ADD, OP_SUB, OP_MUL, OP_MOD, OP_POW, OP_DIV, OP_IDIV, OP_BAND, OP_BOR, OP_BXOR,
  OP_SHL, OP_SHR, OP_MMBIN, OP_MMBINI, OP_MMBINK, OP_UNM, OP_BNOT, OP_NOT, OP_LEN, OP_CONCAT,
  OP_CLOSE, OP_TBC, OP_JMP, OP_EQ, OP_LT, OP_LE, OP_EQK, OP_EQI, OP_LTI, OP_LEI, OP_GTI,
  OP_GEI, OP_TEST, OP_TESTSET, OP_CALL, OP_TAILCALL, OP_RETURN, OP_RETURN0, OP_RETURN1,
  OP_FORLOOP, OP_FORPREP, OP_TFORPREP, OP_TFORCALL, OP_TFORLOOP, OP_SETLIST, OP_CLOSURE,
  OP_VARARG, OP_VARARGPREP, OP_EXTRAARG, NUM_OPCODES
};

/* Which operands name a register: A, B, C, C unless the k bit makes it a constant, and
 * whether A starts a range of registers (every range starts at A and goes up). */
enum { RA = 1, RB = 2, RC = 4, RCK = 8 };

static unsigned reg_operands(unsigned op) {
  switch (op) {
  case OP_MOVE: return RA | RB;
  case OP_GETTABLE: return RA | RB | RC;
  case OP_GETI: case OP_GETFIELD: return RA | RB;
  case OP_LOADI: case OP_LOADF: case OP_LOADK: case OP_LOADKX: case OP_LOADFALSE:
  case OP_LFALSESKIP: case OP_LOADTRUE: case OP_LOADNIL: case OP_GETUPVAL: case OP_SETUPVAL:
  case OP_GETTABUP: case OP_NEWTABLE: case OP_MMBINI: case OP_MMBINK: case OP_CONCAT:
  case OP_CLOSE: case OP_TBC: case OP_EQK: case OP_EQI: case OP_LTI: case OP_LEI: case OP_GTI:
  case OP_GEI: case OP_TEST: case OP_CALL: case OP_TAILCALL: case OP_RETURN: case OP_RETURN1:
  case OP_FORLOOP: case OP_FORPREP: case OP_TFORPREP: case OP_TFORCALL: case OP_TFORLOOP:
  case OP_SETLIST: case OP_CLOSURE: case OP_VARARG:
    return RA;
  case OP_SETTABUP: return RCK;
  case OP_SETTABLE: return RA | RB | RCK;
  case OP_SETI: case OP_SETFIELD: return RA | RCK;
  case OP_SELF: return RA | RB | RCK;
  case OP_ADDI: case OP_ADDK: case OP_SUBK: case OP_MULK: case OP_MODK: case OP_POWK:
  case OP_DIVK: case OP_IDIVK: case OP_BANDK: case OP_BORK: case OP_BXORK: case OP_SHRI:
  case OP_SHLI: case OP_MMBIN: case OP_UNM: case OP_BNOT: case OP_NOT: case OP_LEN:
  case OP_EQ: case OP_LT: case OP_LE: case OP_TESTSET:
    return RA | RB;
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_MOD: case OP_POW: case OP_DIV: case OP_IDIV:
  case OP_BAND: case OP_BOR: case OP_BXOR: case OP_SHL: case OP_SHR:
    return RA | RB | RC;
  case OP_JMP: case OP_RETURN0: case OP_VARARGPREP: case OP_EXTRAARG: return 0;
  default: return RA | RB | RC; /* unknown: as if it named every operand */
  }
}

/* ---- the stripped dump ----------------------------------------------------------------- */

typedef struct rd {
  const unsigned char *p, *end;
  int bad;
} rd;

static unsigned char rd_byte(rd *r) {
  if (r->p >= r->end) {
    r->bad = 1;
    return 0;
  }
  return *r->p++;
}

static void rd_skip(rd *r, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = 1;
    r->p = r->end;
  } else {
    r->p += n;
  }
}

/* ldump.c's dumpSize: 7 bits per byte, most significant first, the last byte marked 0x80 */
static size_t rd_size(rd *r) {
  size_t x = 0;
  for (int i = 0; i < 10; i++) {
    unsigned char b = rd_byte(r);
    x = (x << 7) | (b & 0x7f);
    if (b & 0x80) return x;
  }
  r->bad = 1;
  return 0;
}

static void rd_string(rd *r) {
  size_t n = rd_size(r);
  if (n > 0) rd_skip(r, n - 1);
}

/* One function of the dump. depth 0: the function itself (its code is checked, it must take
 * a parameter, not be vararg); depth 1: a function it creates, whose upvalues must not be
 * its register 0. The rest is only skipped. Returns 1 when everything checked holds. */
static int rd_function(rd *r, int depth) {
  int ok = 1;
  rd_string(r);  /* source (NULL when stripped) */
  rd_size(r);    /* linedefined */
  rd_size(r);    /* lastlinedefined */
  unsigned numparams = rd_byte(r), vararg = rd_byte(r);
  rd_byte(r); /* maxstacksize */
  if (depth == 0 && (numparams < 1 || vararg)) ok = 0;
  size_t ncode = rd_size(r);
  if (r->bad || ncode > (size_t)(r->end - r->p) / 4) return 0;
  for (size_t i = 0; i < ncode; i++) {
    uint32_t ins;
    memcpy(&ins, r->p + 4 * i, 4);
    if (depth != 0 || !ok) continue;
    unsigned op = ins & 0x7f, a = (ins >> 7) & 0xff, k = (ins >> 15) & 1, b = (ins >> 16) & 0xff,
             c = ins >> 24, regs = reg_operands(op);
    if (op >= NUM_OPCODES) ok = 0;
    if ((op == OP_GETFIELD || op == OP_GETI || (op == OP_GETTABLE && c != 0)) && b == 0) {
      if (a == 0) ok = 0; /* the result overwrites the argument */
      continue;
    }
    if (((regs & RA) && a == 0) || ((regs & RB) && b == 0) || ((regs & RC) && c == 0) ||
        ((regs & RCK) && !k && c == 0))
      ok = 0;
  }
  rd_skip(r, 4 * ncode);
  size_t nk = rd_size(r);
  for (size_t i = 0; i < nk && !r->bad; i++) {
    unsigned char tt = rd_byte(r);
    switch (tt) {
    case 0: case 1: case 17: break;  /* nil, false, true */
    case 3: case 19: rd_skip(r, 8); break; /* integer, float (sizes checked in the header) */
    case 4: case 20: rd_string(r); break;  /* short and long strings */
    default: return 0;
    }
  }
  size_t nup = rd_size(r);
  for (size_t i = 0; i < nup && !r->bad; i++) {
    unsigned instack = rd_byte(r), idx = rd_byte(r);
    rd_byte(r); /* kind */
    if (depth == 1 && instack && idx == 0) ok = 0; /* captures the argument */
  }
  size_t np = rd_size(r);
  for (size_t i = 0; i < np && !r->bad; i++)
    if (!rd_function(r, depth + 1)) ok = 0;
  /* debug information (empty when stripped, skipped all the same) */
  size_t nl = rd_size(r);
  rd_skip(r, nl);
  size_t nabs = rd_size(r);
  for (size_t i = 0; i < nabs && !r->bad; i++) {
    rd_size(r);
    rd_size(r);
  }
  size_t nloc = rd_size(r);
  for (size_t i = 0; i < nloc && !r->bad; i++) {
    rd_string(r);
    rd_size(r);
    rd_size(r);
  }
  size_t nupn = rd_size(r);
  for (size_t i = 0; i < nupn && !r->bad; i++) rd_string(r);
  return ok && !r->bad;
}

typedef struct dumpbuf {
  unsigned char *data;
  size_t len, cap;
} dumpbuf;

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  dumpbuf *d = ud;
  if (sz > d->cap - d->len) {
    size_t cap = d->cap ? d->cap : 256;
    while (cap - d->len < sz) {
      if (cap > ((size_t)1 << 30)) return 1; /* not a job's function: no answer */
      cap *= 2;
    }
    unsigned char *n = realloc(d->data, cap);
    if (!n) return 1;
    d->data = n;
    d->cap = cap;
  }
  memcpy(d->data + d->len, p, sz);
  d->len += sz;
  return 0;
}

/* The function at idx read as described above: 1, 0, or -1 when it is not a 5.4 dump. */
static int check_fn(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TFUNCTION || lua_iscfunction(L, idx)) return 0;
  luaL_checkstack(L, 2, "wmrun: reading a function");
  dumpbuf d = {NULL, 0, 0};
  lua_pushvalue(L, idx);
  int rc = lua_dump(L, dump_writer, &d, 1);
  lua_pop(L, 1);
  static const unsigned char head[] = "\x1bLua\x54\x00\x19\x93\r\n\x1a\n\x04\x08\x08";
  int ok = -1;
  if (rc == 0 && d.len > sizeof head - 1 + 16 + 1 && memcmp(d.data, head, sizeof head - 1) == 0) {
    /* after the header: LUAC_INT, LUAC_NUM (8 bytes each), the main upvalue count */
    rd r = {d.data + sizeof head - 1 + 16 + 1, d.data + d.len, 0};
    ok = rd_function(&r, 0);
  }
  free(d.data);
  return ok;
}

/* Reference functions whose answers are known: a Lua whose dump reads otherwise (another
 * opcode numbering) fails it and never reuses a table. */
static int self_check(lua_State *L) {
  static const char *const yes =
      "return function(r) local t = {} t.a = r.a t[2] = r[1] t.c = r[r.k] return t end";
  static const char *const no[] = {
      "return function(r) return r end",           "return function(r) local t = r return t end",
      "return function(r) r.x = 1 end",            "return function(r) return function() return r end end",
      "return function(r) return tostring(r) end", "return function(r) return r.a, #r end",
  };
  if (luaL_loadstring(L, yes) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    lua_pop(L, 1);
    return 0;
  }
  int ok = check_fn(L, -1) == 1;
  lua_pop(L, 1);
  for (size_t i = 0; ok && i < sizeof no / sizeof no[0]; i++) {
    if (luaL_loadstring(L, no[i]) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
      lua_pop(L, 1);
      return 0;
    }
    ok = check_fn(L, -1) == 0;
    lua_pop(L, 1);
  }
  return ok;
}

int lwm_reads_arg_only(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  /* the reference answers, once per Lua state (in its registry) */
  static const char key[] = "wmrun.escape_ok";
  int t = lua_getfield(L, LUA_REGISTRYINDEX, key);
  int sane = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (t == LUA_TNIL) {
    sane = self_check(L);
    lua_pushboolean(L, sane);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
  }
  return sane && check_fn(L, idx) == 1;
}
