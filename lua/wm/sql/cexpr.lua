--- SQL expressions in C: WHERE conditions and SELECT lists compiled to a program of the C
-- row-expression module (core/ops/wm_rexpr.h) and run by one `sql_rows` operator, with no Lua
-- call per row (docs/sql.md, "Expressions in C").
--
-- `try_filter` and `try_project` are called after the Lua compilation of the same expressions
-- succeeded (so every type error has been raised already); they return nil for anything the
-- C module does not do (CAST from STRING to a number, a pattern that is not a literal, user
-- functions, scopes after GROUP BY, ...), and the planner then keeps the Lua closure. The values are the
-- Lua path's (wm.sql.values' runtime), so both give the same rows, types and errors.
-- Setting the environment variable WMRUN_SQL_EXPR=lua forces the Lua path everywhere.
-- @module wm.sql.cexpr
local base = require("wm.base")
local errors = require("wm.sql.errors")
local values = require("wm.sql.values")
local sqlexpr = require("wm.sql.expr")

local M = {}

local NUMERIC, TEMPORAL = sqlexpr.NUMERIC, sqlexpr.TEMPORAL
local ORDERED = {INT = true, BIGINT = true, DOUBLE = true, STRING = true, TIMESTAMP = true, TIMESTAMP_LTZ = true,
                 INTERVAL = true, NULL = true}
-- wm_ftype of base/wm_value.h
local FTYPE = {STRING = 0, INT = 1, BIGINT = 1, TIMESTAMP = 1, TIMESTAMP_LTZ = 1, DOUBLE = 2, BOOLEAN = 3}

--- Set to true to force the Lua closures in this process (the specs compare both paths).
M.force_lua = false

--- Whether the C path may be used (WMRUN_SQL_EXPR=lua, or `force_lua`, forces the Lua closures).
function M.enabled()
  return not M.force_lua and os.getenv("WMRUN_SQL_EXPR") ~= "lua"
end

local numeric_result = sqlexpr.numeric_result

local function common_type(types)
  return (sqlexpr.common_type(types))
end

-- A program being built: prog (the node list), src (for positions), nested (sub-columns allowed).
local function add(P, node)
  local prog = P.prog
  prog[#prog + 1] = node
  return #prog
end

local function where(P, n)
  local src = P.src
  if not (n and n.pos and src and src.text) then return src and src.name or "sql" end
  local l, c = errors.line_col(src.text, n.pos)
  return src.name .. ":" .. l .. ":" .. c
end

local compile

local function compile_list(P, list)
  local idx, types = {}, {}
  for i, x in ipairs(list) do
    idx[i], types[i] = compile(P, x)
    if not idx[i] then return nil end
  end
  return idx, types
end

local CMP = {["="] = "eq", ["<>"] = "ne", ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge"}

-- `a || b || ...`: one concat node over the chain's operands (the parser makes it left-deep)
local function compile_concat(P, e)
  local operands, x = {}, e
  while x.tag == "bin" and x.op == "||" do
    table.insert(operands, 1, x[2])
    x = x[1]
  end
  table.insert(operands, 1, x)
  local idx, types = compile_list(P, operands)
  if not idx then return nil end
  for _, t in ipairs(types) do if t ~= "STRING" and t ~= "NULL" then return nil end end
  return add(P, {op = "concat", args = idx}), "STRING"
end

local function compile_bin(P, e)
  local op = e.op
  if op == "||" then return compile_concat(P, e) end
  local a, ta = compile(P, e[1])
  if not a then return nil end
  local b, tb = compile(P, e[2])
  if not b then return nil end
  if op == "AND" or op == "OR" then return add(P, {op = op:lower(), args = {a, b}}), "BOOLEAN" end
  if CMP[op] then
    if CMP[op] ~= "eq" and CMP[op] ~= "ne" and not (ORDERED[ta] and ORDERED[tb]) then return nil end
    return add(P, {op = CMP[op], args = {a, b}}), "BOOLEAN"
  end
  local rt
  if (op == "+" or op == "-") and TEMPORAL[ta] and tb == "INTERVAL" then rt = ta
  elseif op == "+" and ta == "INTERVAL" and TEMPORAL[tb] then rt = tb
  elseif ta == "INTERVAL" and tb == "INTERVAL" and (op == "+" or op == "-") then rt = "INTERVAL"
  else
    if not (NUMERIC[ta] or ta == "NULL") or not (NUMERIC[tb] or tb == "NULL") then return nil end
    rt = numeric_result(ta, tb)
    if rt == "NULL" then rt = "INT" end
  end
  local name = ({["+"] = "add", ["-"] = "sub", ["*"] = "mul", ["%"] = "mod"})[op]
  if op == "/" then name = rt == "DOUBLE" and "fdiv" or "idiv" end
  if not name then return nil end
  local w = (name == "idiv" or name == "mod") and where(P, e) or nil
  return add(P, {op = name, args = {a, b}, where = w}), rt
end


-- string functions: name -> the C operator, its result type
local STRING_FNS = {UPPER = {"upper", "STRING"}, LOWER = {"lower", "STRING"}, TRIM = {"trim", "STRING"},
  CHAR_LENGTH = {"char_length", "INT"}, CHARACTER_LENGTH = {"char_length", "INT"}, CONCAT = {"concat", "STRING"},
  SUBSTRING = {"substring", "STRING"}, SUBSTR = {"substring", "STRING"}, SPLIT_INDEX = {"split_index", "STRING"}}

-- Whether a REGEXP_EXTRACT pattern repeats a group (`(...)*`, `(?:..){2}`: any quantifier but
-- `?`): the C matcher (core/ops/wm_rregex.c) nests a C call per round of such a repeat, so
-- that a long input could exhaust its depth where wm.sql.regex goes on; those stay in Lua.
-- (A repeat of one character or class loops in C.) Conservative: it only looks at what
-- follows each `)` outside classes and escapes.
local function repeats_group(p)
  local i, n = 1, #p
  while i <= n do
    local c = p:sub(i, i)
    if c == "\\" then
      i = i + 2
    elseif c == "[" then
      i = i + 1
      if p:sub(i, i) == "^" then i = i + 1 end
      if p:sub(i, i) == "]" then i = i + 1 end
      while i <= n and p:sub(i, i) ~= "]" do i = i + (p:sub(i, i) == "\\" and 2 or 1) end
      i = i + 1
    else
      if c == ")" and p:sub(i + 1, i + 1):match("^[*+{]") then return true end
      i = i + 1
    end
  end
  return false
end

-- A call of a user scalar function (a Lua function): its arguments in C, then one call of
-- the function with their values from C (WM_RX_UDF: no Lua table per row); the function is
-- wm.sql.functions.call_scalar's, which checks the result and names the call in errors, as
-- the Lua path's call does. WMRUN_SQL_UDF=lua keeps the whole expression in Lua.
local UDF_ARG = {INT = true, BIGINT = true, DOUBLE = true, STRING = true, BOOLEAN = true, TIMESTAMP = true,
                 TIMESTAMP_LTZ = true, NULL = true}
local function compile_udf(P, e, def)
  if def.kind ~= "scalar" or not def.fn or os.getenv("WMRUN_SQL_UDF") == "lua" then return nil end
  local idx, types = compile_list(P, e.args)
  if not idx then return nil end
  -- (the arguments C gives it are scalars: a ROW column stays with the Lua path)
  for _, t in ipairs(types) do if not UDF_ARG[t] then return nil end end
  local w = where(P, e)
  local call_scalar = require("wm.sql.functions").call_scalar
  return add(P, {op = "udf", args = idx, where = w,
                 fn = function(...) return call_scalar(def, w, ...) end}), def.returns
end

local function compile_call(P, e)
  local name = e.name
  if e.over or e.filter or e.star or e.distinct then return nil end
  if name == "PROCTIME" then
    -- the C operator's clock (the context's: the wall clock, or the harness's virtual one),
    -- where the planner evaluates PROCTIME() per row in C (wm.sql.plan.select: scope.proctime_c)
    if #e.args > 0 or not P.scope.proctime_c or (P.functions and P.functions[name]) then return nil end
    return add(P, {op = "proctime"}), "TIMESTAMP_LTZ"
  end
  local udf = P.functions and P.functions[name] and not sqlexpr.FUNCS[name] and sqlexpr.user_functions[name]
  if udf then return compile_udf(P, e, udf) end
  local F = {MOD = true, ABS = true, COALESCE = true, IF = true, HOUR = true, TO_TIMESTAMP_LTZ = true,
    DATE_FORMAT = true, REGEXP_EXTRACT = true, TO_TIMESTAMP = true}
  if not (F[name] or STRING_FNS[name]) or (P.functions and P.functions[name]) then return nil end
  if name == "DATE_FORMAT" or name == "REGEXP_EXTRACT" then
    -- a literal pattern (the Lua compilation checked it)
    local p = e.args[2]
    if not (p.tag == "lit" and p.type == "STRING") then return nil end
    if name == "REGEXP_EXTRACT" and repeats_group(p.value) then return nil end
  end
  local idx, types = compile_list(P, e.args)
  if not idx then return nil end
  local sf = STRING_FNS[name]
  if sf then
    local w = sf[1] == "substring" and where(P, e) or nil
    return add(P, {op = sf[1], args = idx, where = w}), sf[2]
  elseif name == "REGEXP_EXTRACT" then
    return add(P, {op = "regexp_extract", args = idx, where = where(P, e)}), "STRING"
  elseif name == "TO_TIMESTAMP" then
    local l1, l2 = add(P, {op = "lit", value = "TIMESTAMP"}), add(P, {op = "lit", value = false})
    return add(P, {op = "from_str", args = {idx[1], l1, l2}, where = where(P, e)}), "TIMESTAMP"
  elseif name == "DATE_FORMAT" then
    return add(P, {op = "date_format", args = idx, where = where(P, e)}), "STRING"
  elseif name == "TO_TIMESTAMP_LTZ" then
    local p = e.args[2] and e.args[2].tag == "lit" and e.args[2].value or (e.args[2] and -1 or 3)
    if p ~= 0 and p ~= 3 then return nil end
    return add(P, {op = p == 3 and "to_ts3" or "to_ts0", args = {idx[1]}}), "TIMESTAMP_LTZ"
  elseif name == "MOD" then
    local rt = numeric_result(types[1], types[2])
    return add(P, {op = "mod", args = idx, where = where(P, e)}), rt
  elseif name == "ABS" then
    return add(P, {op = "abs", args = idx}), types[1]
  elseif name == "COALESCE" then
    local rt = common_type(types)
    if not rt then return nil end
    return add(P, {op = "coalesce", args = idx}), rt
  elseif name == "IF" then
    local rt = common_type({types[2], types[3]})
    if not rt then return nil end
    return add(P, {op = "if", args = idx}), rt
  end
  return add(P, {op = "hour", args = idx}), "BIGINT"
end

compile = function(P, e)
  local tag = e.tag
  if tag == "lit" then
    if e.type == "NULL" then return add(P, {op = "lit"}), "NULL" end
    if e.type == "DOUBLE" then return add(P, {op = "lit", value = e.value + 0.0}), "DOUBLE" end
    if e.type == "INT" or e.type == "BIGINT" then
      local v = math.tointeger(e.value)
      if not v then return nil end
      return add(P, {op = "lit", value = v}), e.type
    end
    if e.type == "STRING" or e.type == "BOOLEAN" then return add(P, {op = "lit", value = e.value}), e.type end
    return nil
  elseif tag == "interval" then
    if not e.ms then return nil end
    return add(P, {op = "lit", value = e.ms}), "INTERVAL"
  elseif tag == "tslit" then
    local v = values.parse_timestamp(e.text)
    if not v then return nil end
    return add(P, {op = "lit", value = v}), "TIMESTAMP"
  elseif tag == "col" then
    local _, t, path = P.scope.column(e)
    if not path or (P.forbid and P.forbid[path[1]]) then return nil end
    if path[2] then
      if not P.nested then return nil end
      return add(P, {op = "subcol", name = path[1], sub = path[2]}), t
    end
    return add(P, {op = "col", name = path[1]}), t
  elseif tag == "bin" then
    return compile_bin(P, e)
  elseif tag == "un" then
    local a, t = compile(P, e[1])
    if not a then return nil end
    if e.op == "NOT" then return add(P, {op = "not", args = {a}}), "BOOLEAN" end
    return add(P, {op = "neg", args = {a}}), t
  elseif tag == "isnull" then
    local a = compile(P, e[1])
    if not a then return nil end
    return add(P, {op = e.neg and "notnull" or "isnull", args = {a}}), "BOOLEAN"
  elseif tag == "isbool" then
    local a = compile(P, e[1])
    if not a then return nil end
    local op = (e.neg and "not_" or "is_") .. (e.value and "true" or "false")
    return add(P, {op = op, args = {a}}), "BOOLEAN"
  elseif tag == "like" then
    local idx = compile_list(P, {e[1], e[2]})
    if not idx then return nil end
    local s = add(P, {op = "like", args = idx})
    if e.neg then s = add(P, {op = "not", args = {s}}) end
    return s, "BOOLEAN"
  elseif tag == "between" then
    local idx, types = compile_list(P, {e[1], e[2], e[3]})
    if not idx then return nil end
    for _, t in ipairs(types) do if not ORDERED[t] then return nil end end
    local s = add(P, {op = "between", args = idx})
    if e.neg then s = add(P, {op = "not", args = {s}}) end
    return s, "BOOLEAN"
  elseif tag == "in" then
    local idx = compile_list(P, {e[1], table.unpack(e.list)})
    if not idx then return nil end
    local s = add(P, {op = "in", args = idx})
    if e.neg then s = add(P, {op = "not", args = {s}}) end
    return s, "BOOLEAN"
  elseif tag == "case" then
    local args, types = {}, {}
    local opnd
    if e.operand then
      opnd = compile(P, e.operand)
      if not opnd then return nil end
    end
    for _, w in ipairs(e.whens) do
      local c = compile(P, w[1])
      if not c then return nil end
      if opnd then c = add(P, {op = "eq", args = {opnd, c}}) end
      local r, t = compile(P, w[2])
      if not r then return nil end
      args[#args + 1], args[#args + 2] = c, r
      types[#types + 1] = t
    end
    local el
    if e.else_ then
      local t
      el, t = compile(P, e.else_)
      if not el then return nil end
      types[#types + 1] = t
    else
      el = add(P, {op = "lit"})
    end
    args[#args + 1] = el
    local rt = common_type(types)
    if not rt then return nil end
    return add(P, {op = "case", args = args}), rt
  elseif tag == "cast" then
    local a, t = compile(P, e[1])
    if not a then return nil end
    local ok, to = pcall(require("wm.sql.expr").type_name, e.type, P.src)
    if not ok then return nil end
    if t == "NULL" then return add(P, {op = "lit"}), to end
    if t == to then return a, to end
    if to == "DOUBLE" and (NUMERIC[t] or t == "BOOLEAN") then return add(P, {op = "to_double", args = {a}}), to end
    if (to == "INT" or to == "BIGINT") and (t == "INT" or t == "BIGINT") then return a, to end
    if (to == "INT" or to == "BIGINT") and t == "BOOLEAN" then return add(P, {op = "bool_to_int", args = {a}}), to end
    if TEMPORAL[to] and TEMPORAL[t] then return a, to end
    if to == "STRING" and TEMPORAL[t] then return add(P, {op = "ts_to_str", args = {a}}), to end
    if t == "STRING" and (TEMPORAL[to] or to == "BOOLEAN") then
      local l1, l2 = add(P, {op = "lit", value = to}), add(P, {op = "lit", value = e.try and true or false})
      return add(P, {op = "from_str", args = {a, l1, l2}, where = where(P, e)}), to
    end
    if to == "STRING" and (NUMERIC[t] or t == "BOOLEAN") then return add(P, {op = "to_str", args = {a}}), to end
    return nil
  elseif tag == "call" then
    return compile_call(P, e)
  end
  return nil
end

-- Whether the records of plan node `node` are C rows (the nexmark source's, possibly
-- filtered or projected in C): a sub-column (bid.price) is read in C only from those.
local function c_rows(node, depth)
  depth = depth or 0
  if depth > 50 then return false end
  if node.kind == "nexmark" then return true end
  if node.kind == "assign" or node.kind == "sql_rows" or node.kind == "filter" or node.kind == "union"
      or node.kind == "rebalance" then
    for _, i in ipairs(node.inputs) do if not c_rows(i, depth + 1) then return false end end
    return #node.inputs > 0
  end
  return false
end

-- the filter nodes try_filter made (node -> whether its program reads sub-columns), which a
-- projection right after may join (try_project)
local filters = setmetatable({}, {__mode = "k"})

local function program(stream, scope, src, changes)
  if scope.match or not M.enabled() then return nil end
  return {prog = {}, scope = scope, src = src, functions = scope.functions,
          nested = not changes and c_rows(stream.node)}
end

-- The operators whose changes {k, r} are C rows: a C GROUP BY, deduplication, Top-N, regular
-- join, and a `sql_rows` over changes.
local C_CHANGES = {sqlagg = true, sqldedup = true, sqltopn = true}

--- Whether the changes {k, r} of the updating `stream` are read in C (a C key selector of
-- their rows, a `sql_rows` filter or projection of them): when they are C rows (made by
-- one of the C operators that make changes), unless WMRUN_SQL_EXPR=lua or
-- WMRUN_SQL_CHANGES=lua (docs/sql.md, "Expressions in C") keeps the Lua functions.
function M.c_changes(stream)
  if not M.enabled() or os.getenv("WMRUN_SQL_CHANGES") == "lua" then return false end
  local node = stream.node
  if node.kind == "sql_join" or (node.kind == "sql_rows" and node.changes) then return true end
  return node.kind == "keyed_rolling" and C_CHANGES[node.agg] or false
end

--- For other operators' expressions (e.g. aggregate arguments): a program over the rows of
-- `stream` in `scope` (nil when the C path is off or the scope is not a row scope), to which
-- `M.compile(P, e)` adds expression `e`, giving the 1-based index of its node (or nil: not for
-- C) and its SQL type. `P.prog` is the node list that `lwm_rexpr_read` (bindings/lwm_rexpr.h)
-- reads from a plan node's field.
M.program = program
function M.compile(P, e) return compile(P, e) end

--- Whether every expression of `exprs` would compile to C over the rows of `stream` in
-- `scope`, whether or not the C path is on (a planner that must make the same operators on
-- both paths decides by it: wm.sql.plan.aggregate's group keys).
function M.compiles(stream, scope, src, exprs)
  if scope.match then return false end
  local P = {prog = {}, scope = scope, src = src, functions = scope.functions, nested = c_rows(stream.node)}
  for _, e in ipairs(exprs) do
    if not compile(P, e) then return false end
  end
  return true
end

--- The stream of the rows of `stream` for which `cond` is TRUE, filtered in C; nil when the
-- condition has a part the C module does not do.
-- changes: the stream is updating, its changes {k, r} C rows (M.c_changes): the changes
-- whose row passes go on (a `sql_rows` over changes, wm_rproject_changes).
function M.try_filter(stream, cond, scope, src, changes)
  if changes and not M.c_changes(stream) then return nil end
  local P = program(stream, scope, src, changes)
  if not P then return nil end
  local f = compile(P, cond)
  if not f then return nil end
  local s = base.one_input(stream, "sql_rows", {prog = P.prog, filter = f, changes = changes or nil}, "filter")
  filters[s.node] = P.nested
  return s
end

--- The stream of `items` ({expr, name}) over the rows of `stream`, computed in C into rows of
-- the columns `cols` ({name, type}); nil when an item has a part the C module does not do.
-- changes: as try_filter's; each change {k, r} becomes {k, the projected row}.
function M.try_project(stream, items, cols, scope, src, changes)
  if changes and not M.c_changes(stream) then return nil end
  local P = program(stream, scope, src, changes)
  if not P then return nil end
  -- a filter in C just made (try_filter) that nothing reads yet: the projection joins its
  -- program, so that what the WHERE computed (REGEXP_EXTRACT(url, ...) in Nexmark q21) is
  -- taken again per record rather than computed again (core/ops/wm_rexpr.c, common
  -- subexpressions); the map after it passes the rows on, so that the job's operators stay the
  -- Lua path's (checkpoints match operators by their place)
  local fnode, env = stream.node, stream.env
  local fused = filters[fnode] ~= nil and env.nodes[#env.nodes] == fnode and not fnode.out
    and fnode.changes == (changes or nil) -- (both over rows, or both over changes)
  if fused then
    P.nested = filters[fnode]
    P.prog = table.move(fnode.prog, 1, #fnode.prog, 1, {})
  end
  local out, names, types = {}, {}, {}
  for i, it in ipairs(items) do
    out[i] = compile(P, it.expr)
    if not out[i] then return nil end
    names[i], types[i] = it.name, FTYPE[cols[i].type] or 4
  end
  if fused then
    filters[fnode] = nil
    fnode.prog, fnode.out, fnode.names, fnode.types = P.prog, out, names, types
    local m = base.one_input(stream, "sql_rows", {prog = {}}, "map")
    -- (an error of the projection names the map, as on the Lua path; both get the
    -- statement's `where` afterwards, wm.sql.plan.base)
    fnode.proj_name = m.node.name
    return m
  end
  return base.one_input(stream, "sql_rows", {prog = P.prog, out = out, names = names, types = types,
                                              changes = changes or nil}, "map")
end

--- The step after a CSV table's parse_csv (wm.sql.connectors), in C: its DOUBLE columns
-- values as floats and its computed columns that are not aliases (the columns in `skip`
-- were not decoded). nil when a computed column is not for C (or reads another one).
function M.try_post(rows, p, t, skip)
  if not M.enabled() then return nil end
  local skipped, computed = {}, {}
  for _, n in ipairs(skip or {}) do skipped[n] = true end
  for _, c in ipairs(t.computed) do if not c.field then computed[c.name] = true end end
  local scope = p:row_scope(t.cols)
  local P = {prog = {}, scope = scope, src = p.src, functions = scope.functions, nested = false, forbid = computed}
  local out, names, types = {}, {}, {}
  local function put(i, c)
    out[#out + 1], names[#names + 1], types[#types + 1] = i, c.name, FTYPE[c.type] or 4
  end
  for _, c in ipairs(t.physical) do
    if not skipped[c.name] then
      local i = add(P, {op = "col", name = c.name})
      if c.type == "DOUBLE" then i = add(P, {op = "to_double", args = {i}}) end
      put(i, c)
    end
  end
  for _, c in ipairs(t.computed) do
    if not c.field then
      local i = compile(P, c.expr)
      if not i then return nil end
      put(i, c)
    end
  end
  return base.one_input(rows, "sql_rows", {prog = P.prog, out = out, names = names, types = types},
    "computed columns (" .. t.name .. ")")
end

--- The rows of `stream` with their columns renamed (`ren`: {from, to} per column of the
-- result `cols`), in C: a projection, or when no name changes an operator that passes the
-- records on unchanged (an operator all the same, so that the job's operators are those of
-- the Lua path, which checkpoints match by their place); nil when the C path is off.
-- (updating: the changes {k, r} of the stream renamed, when they are C rows: M.c_changes)
function M.try_rename(stream, ren, cols, updating)
  if not M.enabled() then return nil end
  local same = true
  for _, x in ipairs(ren) do if x.from ~= x.to then same = false end end
  local cch = updating and M.c_changes(stream) or nil
  if same then return base.one_input(stream, "sql_rows", {prog = {}, changes = cch}, "map") end
  if updating and not cch then return nil end
  local prog, out, names, types = {}, {}, {}, {}
  for i, x in ipairs(ren) do
    prog[i] = {op = "col", name = x.from}
    out[i], names[i], types[i] = i, x.to, FTYPE[cols[i].type] or 4
  end
  return base.one_input(stream, "sql_rows", {prog = prog, out = out, names = names, types = types,
                                              changes = updating or nil}, "map")
end

--- The rows of `stream` (of the columns `cols`) as Flink's print sink shows them, `+I[...]`,
-- made in C (core/ops/wm_sqlfmt.h); nil when the C path is off.
function M.try_format(stream, cols)
  if not M.enabled() then return nil end
  local names, kinds = {}, {}
  for i, c in ipairs(cols) do
    names[i] = c.name
    kinds[i] = c.type == "BOOLEAN" and 1 or (c.type == "TIMESTAMP" or c.type == "TIMESTAMP_LTZ") and 2 or 0
  end
  return base.one_input(stream, "sql_format", {names = names, kinds = kinds}, "map")
end

--- Whether `stream` was made by a `sql_rows` operator (tests, and the sinks' choice).
function M.is_c(stream) return stream.node.kind == "sql_rows" end

return M
