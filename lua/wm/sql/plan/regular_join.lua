--- Regular joins (Flink SQL's non-windowed joins): `a [INNER | LEFT | RIGHT | FULL [OUTER]]
-- JOIN b ON a.k = b.k [AND ...]` (and `FROM a, b WHERE ...`) without a time condition that
-- bounds one table's time attribute by the other's on both sides, or with an updating input
-- (the result of a GROUP BY, a deduplication, a Top-N, an outer join). wm.sql.plan.join finds
-- the join's tables and conditions and calls this module when the join is a regular one.
--
-- It runs on a keyed co-process function (one key per value of the equality keys) that keeps
-- every row of both sides in `ctx.state` (so in checkpoints) and emits a changelog with the
-- rules of Flink's StreamingJoinOperator: an accumulate row (+I, +U) joins the rows of the
-- other side it meets; a retraction (-U, -D) retracts the pairs it made; an outer side's row
-- that meets nothing is emitted padded with NULLs (+I), the padded row retracted (-D) when its
-- first match comes and emitted again (+I) when its last match goes.
--
-- `table.exec.state.ttl` (SET): each row kept expires when it was not written (added, its count
-- or its number of matches changed) for that long, on the processing-time clock, as Flink's
-- StateTtlConfig with OnCreateAndWrite and NeverReturnExpired: an expired row meets nothing
-- any more. docs/sql.md, "Regular joins".
--
-- The INNER join on equality keys of plain columns (append-only or updating inputs, with or
-- without a TTL) runs in C instead (core/ops/wm_sqljoin.h, `c_join` below): the same rows in the same order,
-- with the rows kept as C rows; WMRUN_SQL_JOIN=lua forces the Lua path.
-- @module wm.sql.plan.regular_join
local wmbase = require("wm.base")
local expr = require("wm.sql.expr")
local base = require("wm.sql.plan.base")
local cexpr = require("wm.sql.cexpr")

local Planner = base.Planner

local M = {}

--- Set to true to force the Lua path in this process (the specs compare both paths).
M.force_lua = false

--- Sorts the conjuncts of a regular join: the equalities of one table's column with the
-- other's are the keys; for an inner join every other condition (of ON or WHERE) filters the
-- joined rows; for an outer join the keys come from ON only, the rest of ON is the join's
-- condition (it decides which rows meet, so which are padded) and WHERE filters the result.
-- `all`: the conjuncts of ON then WHERE, the first `on_n` of ON; `ref(e)`: the side and
-- column of a column reference. Returns lkeys, rkeys, key_pos, rest (WHERE), on_rest (a
-- list: the outer join's condition).
function M.classify(all, on_n, outer, ref, rside)
  local lkeys, rkeys, key_pos, rest, on_rest = {}, {}, {}, {}, {}
  for i, c in ipairs(all) do
    local in_on = i <= on_n
    local used = false
    if c.tag == "bin" and c.op == "=" and (in_on or not outer) then
      local s1, c1 = ref(c[1])
      local s2, c2 = ref(c[2])
      if s1 and s2 and s1 ~= s2 then
        if s1 == rside then c1, c2 = c2, c1 end
        lkeys[#lkeys + 1], rkeys[#rkeys + 1], key_pos[#key_pos + 1] = c1, c2, c[1].pos
        used = true
      end
    end
    if not used then
      if outer and in_on then on_rest[#on_rest + 1] = c else rest[#rest + 1] = c end
    end
  end
  return lkeys, rkeys, key_pos, rest, on_rest
end

-- A string that identifies a row by its values (the multiset of a side's rows is keyed by it).
local function row_id_fn(fields)
  local n = #fields
  return function(r)
    local t = {}
    for i = 1, n do
      local v = r[fields[i]]
      if v == nil then
        t[i] = "\0"
      elseif math.type(v) == "float" then
        t[i] = string.format("f%.17g", v)
      else
        t[i] = type(v):sub(1, 1) .. tostring(v)
      end
    end
    return table.concat(t, "\1")
  end
end

-- The key_by key of the join keys: one string (the type and value of each key, NULL a value of
-- its own; a row with a NULL key meets nothing anyway), so that a key of several columns is one
-- scalar.
local function key_fn(fns)
  local n = #fns
  if n == 0 then return function() return "" end end
  return function(r)
    local t = {}
    for i = 1, n do
      local v = fns[i](r)
      if v == nil then
        t[i] = "\0"
      elseif math.type(v) == "float" then
        t[i] = string.format("f%.17g", v)
      else
        t[i] = type(v):sub(1, 1) .. tostring(v)
      end
    end
    return table.concat(t, "\1")
  end
end

--- The join operator. spec:
-- `lkey`, `rkey` (key functions of a row), `lnull`, `rnull` (true when a row's key has a
-- NULL: it meets nothing), `lfields`, `rfields` (the fields of a side's rows), `lupd`, `rupd`
-- (the side is a changelog `{k, r}`), `merge(l, r)` (the joined row; nil for a padded side),
-- `cond(joined)` (the outer join's ON condition beyond the keys, or nil), `keep_left`,
-- `keep_right` (LEFT, RIGHT, FULL), `ttl` (ms, or nil), `updating` (emit `{k, r}`; else only
-- +I rows come out and they are emitted as rows).
function M.lower(ls, rs, spec)
  local merge, cond, ttl, upd_out = spec.merge, spec.cond, spec.ttl, spec.updating
  local ids = {row_id_fn(spec.lfields), row_id_fn(spec.rfields)}
  local nulls = {spec.lnull, spec.rnull}
  local outer = {spec.keep_left or false, spec.keep_right or false}
  local upd = {spec.lupd, spec.rupd}
  local NAMES = {"L", "R"}

  -- A side's rows for a key: `{m = {[row id] = entry}, s = the next entry's number}`, an entry
  -- `{r = row, n = count, a = matches (outer side), t = last write (with a TTL), s = number}`;
  -- the numbers keep the order the rows came in, in which a row meets them (each entry is in
  -- one table only: a checkpoint copies tables, it would part two references to one).

  -- drops the rows of a side that expired; true when some did
  local function expire(side, now)
    local gone = false
    for id, e in pairs(side.m) do
      if e.t + ttl <= now then
        side.m[id] = nil
        gone = true
      end
    end
    return gone
  end
  local function by_number(a, b) return a.s < b.s end

  local function process(sx, x, ctx, emit)
    local row, kind
    if upd[sx] then row, kind = x.r, x.k else row, kind = x, "+I" end
    local ox = 3 - sx
    local st = ctx.state
    local mine, other = st[NAMES[sx]], st[NAMES[ox]]
    local now
    if ttl then
      now = ctx.timer_service:current_processing_time()
      if mine and expire(mine, now) then
        if next(mine.m) == nil then mine = nil end
        st[NAMES[sx]] = mine
      end
      if other and expire(other, now) then
        if next(other.m) == nil then other = nil end
        st[NAMES[ox]] = other
      end
    end
    local function pair(o, k)
      local j = sx == 1 and merge(row, o) or merge(o, row)
      if upd_out then emit({k = k, r = j}) else emit(j) end
    end
    local function pad(r, k, s)
      local j = s == 1 and merge(r, nil) or merge(nil, r)
      emit({k = k, r = j}) -- (a padded row only comes out of an outer join: updating)
    end
    -- the rows of the other side this row meets, in the order they came (each once; `n` times
    -- in the multiset)
    local met, nmet = {}, 0
    if other and not nulls[sx](row) then
      for _, e in pairs(other.m) do
        if not cond or cond(sx == 1 and merge(row, e.r) or merge(e.r, row)) then
          met[#met + 1] = e
          nmet = nmet + e.n
        end
      end
      if #met > 1 then table.sort(met, by_number) end
    end
    local in_outer, o_outer = outer[sx], outer[ox]
    local touched = false -- a row of the other side changed its number of matches
    local id = ids[sx](row)
    if kind == "+I" or kind == "+U" then
      if o_outer then
        for _, e in ipairs(met) do
          if e.a == 0 then for _ = 1, e.n do pad(e.r, "-D", ox) end end
          e.a = e.a + 1
          if ttl then e.t = now end
          touched = true
        end
      end
      local k = (in_outer or o_outer) and "+I" or kind
      if nmet == 0 and in_outer then
        pad(row, "+I", sx)
      else
        for _, e in ipairs(met) do for _ = 1, e.n do pair(e.r, k) end end
      end
      -- add the row to its side
      mine = mine or {m = {}, s = 1}
      local found = mine.m[id]
      if found then
        found.n = found.n + 1
        if in_outer then found.a = nmet end
        if ttl then found.t = now end
      else
        mine.m[id] = {r = row, n = 1, a = in_outer and nmet or nil, t = now, s = mine.s}
        mine.s = mine.s + 1
      end
      st[NAMES[sx]] = mine
    else -- -U, -D
      local e = mine and mine.m[id]
      if e then
        if e.n > 1 then
          e.n = e.n - 1
          if ttl then e.t = now end
        else
          mine.m[id] = nil
          if next(mine.m) == nil then mine = nil end
        end
        st[NAMES[sx]] = mine
      end
      if nmet == 0 then
        if in_outer then pad(row, "-D", sx) end
      else
        local k = in_outer and "-D" or kind
        for _, o in ipairs(met) do for _ = 1, o.n do pair(o.r, k) end end
        if o_outer then
          for _, o in ipairs(met) do
            if o.a == 1 then for _ = 1, o.n do pad(o.r, "+I", ox) end end
            o.a = o.a - 1
            if ttl then o.t = now end
            touched = true
          end
        end
      end
    end
    if touched then st[NAMES[ox]] = other end -- (a write: with a TTL, renews the key)
  end

  local function key_of(f, u)
    if u then return function(e) return f(e.r) end end
    return f
  end
  local opts = {
    process_element1 = function(x, ctx, emit) process(1, x, ctx, emit) end,
    process_element2 = function(x, ctx, emit) process(2, x, ctx, emit) end,
  }
  if ttl then
    -- the key's state as a whole: gone once no row of it was written for ttl, so that a key
    -- whose rows all expired frees its memory (each row's own time says whether it is seen)
    opts.state_ttl = {ttl = ttl, update = "on_create_and_write", time = "processing"}
  end
  return ls:key_by(key_of(spec.lkey, spec.lupd)):connect(rs:key_by(key_of(spec.rkey, spec.rupd)))
    :process(opts):name(spec.name or "regular join")
end

-- The column types the C join keeps (a ROW column, a Lua table, stays on the Lua path).
local SCALAR = {INT = true, BIGINT = true, DOUBLE = true, STRING = true, BOOLEAN = true, TIMESTAMP = true,
                TIMESTAMP_LTZ = true}

-- The rows of `s` whose key `fields` are all not NULL, filtered in C (a `sql_rows` program):
-- a NULL key meets nothing, and the key exchange needs a key.
local function keys_not_null(s, fields, what)
  local prog, conj = {}, nil
  for _, f in ipairs(fields) do
    prog[#prog + 1] = {op = "col", name = f}
    prog[#prog + 1] = {op = "notnull", args = {#prog}}
    if conj then
      prog[#prog + 1] = {op = "and", args = {conj, #prog}}
    end
    conj = #prog
  end
  return wmbase.one_input(s, "sql_rows", {prog = prog, filter = conj}, "join keys not NULL (" .. what .. ")")
end

-- Whether a join's input is keyed in C on the C path: an append-only side, or an updating
-- side whose changes {k, r} are C rows (cexpr.c_changes: a Lua table's row is not read by the
-- C key selector).
local function c_changes(rel)
  return not rel.updating or cexpr.c_changes(rel.stream)
end

-- The join in C (core/ops/wm_sqljoin.h, docs/sql.md "Regular joins"), or nil when the Lua path
-- runs it: an INNER join on at least one equality key (of append-only or updating inputs:
-- an updating side's changes {k, r} add or retract its rows as M.lower does), every column
-- of both inputs a plain scalar column (`ttl`: table.exec.state.ttl, ms or nil: the C
-- operator expires rows as M.lower does). The C operator keeps the
-- Lua path's order and identity of rows (M.lower: a side's rows of a key in the order they
-- first came, an identical row counted) and builds the joined row from the columns that
-- `ctx.merge` copies (`ctx.lcopy`, `ctx.rcopy`: {from = a side's field, to = the joined row's
-- column}). A key of two numeric types is compared as a float, as the Lua key is.
local function c_join(ctx, ttl)
  local L, R, kfields = ctx.L, ctx.R, ctx.kfields
  if M.force_lua or os.getenv("WMRUN_SQL_JOIN") == "lua" then return nil end
  if ctx.outer or #kfields == 0 or not (ctx.lcopy and ctx.rcopy) then
    return nil
  end
  local sides = {}
  for d, rel in ipairs({L, R}) do
    local fields, index, types = {}, {}, {}
    for i, c in ipairs(rel.cols) do
      local f = c.field or c.name
      if not SCALAR[c.type] or index[f] then return nil end
      fields[i], index[f], types[f] = f, i, c.type
    end
    sides[d] = {fields = fields, index = index, types = types}
  end
  local lkey, rkey, kfloat, lkf, rkf = {}, {}, {}, {}, {}
  for i, kf in ipairs(kfields) do
    local li, ri = sides[1].index[kf[1]], sides[2].index[kf[2]]
    if not li or not ri then return nil end
    local lt, rt = sides[1].types[kf[1]], sides[2].types[kf[2]]
    lkey[i], rkey[i], lkf[i], rkf[i] = li, ri, kf[1], kf[2]
    kfloat[i] = (expr.NUMERIC[lt] and expr.NUMERIC[rt] and lt ~= rt) and true or false
  end
  local out = {}
  for d, copy in ipairs({ctx.lcopy, ctx.rcopy}) do
    for _, x in ipairs(copy) do
      local i = sides[d].index[x.from]
      if not i then return nil end
      out[#out + 1] = {name = x.to, side = d - 1, field = i}
    end
  end
  local jspec = {
    nkeys = #lkf, key_float = kfloat, out = out, ttl = ttl,
    left = {fields = sides[1].fields, key = lkey, updating = L.updating or false},
    right = {fields = sides[2].fields, key = rkey, updating = R.updating or false},
  }
  local name = "regular join" .. (ttl and " (state ttl " .. ttl .. " ms)" or "")
  if not (L.updating or R.updating) then
    local ls = keys_not_null(L.stream, lkf, "left")
    local rs = keys_not_null(R.stream, rkf, "right")
    return ls:key_by(lkf):connect(rs:key_by(rkf)):_sql_join(jspec, name)
  end
  -- an updating side (changes {k, r}) whose changes are C rows (a C GROUP BY, join or rank):
  -- keyed in C by the fields of the change's row (wm_keysel_change; a NULL key part is a key
  -- of its own there: the C operator drops its rows, they meet nothing, as M.lower's
  -- drop_null), the append-only side by its fields as above; WMRUN_SQL_EXPR=lua or
  -- WMRUN_SQL_CHANGES=lua keeps the Lua key strings below
  if c_changes(L) and c_changes(R) then
    local function ckeyed(rel, kf, what)
      if not rel.updating then return keys_not_null(rel.stream, kf, what):key_by(kf) end
      local keyed = rel.stream:key_by(kf)
      keyed.key.change, keyed.key.null_key = true, "\0<NULL>"
      return keyed
    end
    return ckeyed(L, lkf, "left"):connect(ckeyed(R, rkf, "right")):_sql_join(jspec, name)
  end
  -- else both sides keyed by the Lua path's key strings (of the change's row), so that the
  -- two sides' keys meet in one instance; a NULL key is a key there (the C operator drops its
  -- rows: they meet nothing, M.lower's drop_null); an append-only side's rows with a NULL
  -- key still go first, in C
  local function keyed(rel, fns, kf, what)
    local f = key_fn(fns)
    if rel.updating then return rel.stream:key_by(function(e) return f(e.r) end) end
    return keys_not_null(rel.stream, kf, what):key_by(f)
  end
  return keyed(L, ctx.lfns, lkf, "left"):connect(keyed(R, ctx.rfns, rkf, "right")):_sql_join(jspec, name)
end

--- Plans the operator of a regular join (called by Planner:plan_join): `ctx` has L, R (the
-- inputs), lfns, rfns, kfields (the keys: functions of a row and the fields they read),
-- merge, outer ("LEFT", "RIGHT", "FULL" or false), on_rest (the outer join's ON conditions
-- beyond the keys), cols (the joined row's columns), aliases (the scope's names of the join's
-- tables), lcopy, rcopy (what merge copies), pos. Returns the joined stream and whether it is
-- updating.
function Planner:regular_join(ctx)
  local L, R, kfields, outer = ctx.L, ctx.R, ctx.kfields, ctx.outer
  local keep_left = outer == "LEFT" or outer == "FULL"
  local keep_right = outer == "RIGHT" or outer == "FULL"
  local updating = (L.updating or R.updating or outer) and true or false
  local cstream = c_join(ctx, self:state_ttl())
  if cstream then return cstream, updating end
  local nk = #kfields
  local function null_of(k)
    return function(r)
      for i = 1, nk do if r[kfields[i][k]] == nil then return true end end
      return false
    end
  end
  local lnull, rnull = null_of(1), null_of(2)
  -- an inner side's row with a NULL key meets nothing and is never padded: it goes before the
  -- join (an outer side's is kept: it comes out padded)
  local ls, rs = L.stream, R.stream
  local function drop_null(s, upd, isnull, what)
    if nk == 0 then return s end
    local f = upd and function(e) return not isnull(e.r) end or function(r) return not isnull(r) end
    return s:filter(f):name("join keys not NULL (" .. what .. ")")
  end
  if not keep_left then ls = drop_null(ls, L.updating, lnull, "left") end
  if not keep_right then rs = drop_null(rs, R.updating, rnull, "right") end
  local cond
  if ctx.on_rest and ctx.on_rest[1] then
    local e = ctx.on_rest[1]
    for i = 2, #ctx.on_rest do e = {tag = "bin", op = "AND", pos = ctx.on_rest[i].pos, e, ctx.on_rest[i]} end
    local scope = self:row_scope(ctx.cols, nil, ctx.aliases)
    local s, t = expr.compile(e, scope)
    if t ~= "BOOLEAN" and t ~= "NULL" then
      self:err(ctx.on_rest[1].pos, "the ON condition of a join must be BOOLEAN, got %s", expr.show(t))
    end
    cond = expr.load("function(r) return " .. s .. " == true end", base.lineof(self, ctx.on_rest[1].pos))
  end
  local function fields(rel)
    local t = {}
    for i, c in ipairs(rel.cols) do t[i] = c.field or c.name end
    return t
  end
  local ttl = self:state_ttl()
  local stream = M.lower(ls, rs, {
    lkey = key_fn(ctx.lfns), rkey = key_fn(ctx.rfns), lnull = lnull, rnull = rnull,
    lfields = fields(L), rfields = fields(R), lupd = L.updating, rupd = R.updating,
    merge = ctx.merge, cond = cond, keep_left = keep_left, keep_right = keep_right, ttl = ttl,
    updating = updating,
    name = (outer and outer .. " " or "") .. "regular join" .. (ttl and " (state ttl " .. ttl .. " ms)" or ""),
  })
  return stream, updating
end

return M
