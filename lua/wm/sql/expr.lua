--- SQL expressions: type checking, and compilation to Lua source (loaded once with `load`,
-- never interpreted per row by walking a tree).
--
-- `compile(e, scope)` returns the Lua source of an expression and its SQL type. The scope
-- tells what names mean: `scope.column(node)` resolves a column reference to (source, type),
-- `scope.match(node)` (optional) replaces whole sub-expressions first (group keys, aggregates
-- and window properties after a GROUP BY).
-- @module wm.sql.expr
local errors = require("wm.sql.errors")
local values = require("wm.sql.values")

local M = {}

local NUMERIC = {INT = 1, BIGINT = 2, DOUBLE = 3}
local TEMPORAL = {TIMESTAMP = true, TIMESTAMP_LTZ = true}
M.NUMERIC = NUMERIC

local AGGS = {COUNT = true, SUM = true, MIN = true, MAX = true, AVG = true}
M.AGGS = AGGS
local WINDOW_FNS = {TUMBLE = true, HOP = true, SESSION = true, CUMULATE = true}
M.WINDOW_FNS = WINDOW_FNS
local WINDOW_PROPS = {}
for w in pairs(WINDOW_FNS) do
  for _, p in ipairs({"_START", "_END", "_ROWTIME", "_PROCTIME"}) do WINDOW_PROPS[w .. p] = true end
end
M.WINDOW_PROPS = WINDOW_PROPS

--- The user functions of the script being planned (name -> definition, wm.sql.functions):
-- the planner sets it before each statement, so that its aggregate functions are aggregates.
M.user_functions = {}

--- The definition of a user aggregate function named `name`, if there is one.
function M.user_agg(name)
  local d = M.user_functions[name]
  if d and d.kind == "aggregate" then return d end
  return nil
end

--- True when `e` is a call of an aggregate function (built-in or user-defined).
function M.is_agg_call(e)
  return e.tag == "call" and (AGGS[e.name] or M.user_agg(e.name)) and not e.over and true or false
end

--- The SQL type name of a parsed type node (`VARCHAR(10)` -> STRING, ...).
function M.type_name(t, src)
  local n = t.name
  if n == "STRING" or n == "VARCHAR" or n == "CHAR" then return "STRING" end
  if n == "INT" or n == "INTEGER" or n == "SMALLINT" or n == "TINYINT" then return "INT" end
  if n == "BIGINT" then return "BIGINT" end
  if n == "DOUBLE" or n == "FLOAT" then return "DOUBLE" end
  if n == "BOOLEAN" then return "BOOLEAN" end
  if n == "TIMESTAMP" or n == "TIMESTAMP_LTZ" then
    if t.p1 and t.p1 ~= 3 then
      errors.raise(src, t.pos, "%s(%d) is not supported: timestamps have millisecond precision, use %s(3)",
        n, t.p1, n)
    end
    return n
  end
  errors.raise(src, t.pos, "type %s is not supported (STRING, INT, BIGINT, DOUBLE, BOOLEAN, TIMESTAMP(3), "
    .. "TIMESTAMP_LTZ(3))", n)
end

--- How a type is shown in messages.
function M.show(t)
  if t == "TIMESTAMP" then return "TIMESTAMP(3)" end
  if t == "TIMESTAMP_LTZ" then return "TIMESTAMP_LTZ(3)" end
  return t
end

--- A string that is equal for structurally equal expressions (positions ignored). Kept in
-- the node (`_sig`): a scope after GROUP BY asks it of every node it compiles.
function M.sig(e)
  if type(e) ~= "table" then return tostring(e) end
  local s = e._sig
  if not s then
    s = M.sig_of(e)
    e._sig = s
  end
  return s
end

function M.sig_of(e)
  local t = e.tag
  if t == "col" then return "c:" .. e.name end
  if t == "lit" then return "l:" .. tostring(e.type) .. ":" .. tostring(e.value) end
  if t == "interval" then return "i:" .. tostring(e.ms) end
  local parts = {t, e.op or "", e.name or "", e.distinct and "d" or "", e.star and "*" or "", e.neg and "n" or ""}
  for i = 1, #e do parts[#parts + 1] = M.sig(e[i]) end
  for _, k in ipairs({"args", "list"}) do
    if e[k] then for _, a in ipairs(e[k]) do parts[#parts + 1] = M.sig(a) end end
  end
  if e.whens then
    for _, w in ipairs(e.whens) do parts[#parts + 1] = M.sig(w[1]) .. "=>" .. M.sig(w[2]) end
  end
  if e.operand then parts[#parts + 1] = "o" .. M.sig(e.operand) end
  if e.else_ then parts[#parts + 1] = "e" .. M.sig(e.else_) end
  if e.type and type(e.type) == "table" then parts[#parts + 1] = e.type.name end
  if e.filter then parts[#parts + 1] = "f" .. M.sig(e.filter) end -- agg(...) FILTER (WHERE ...)
  if e.over then parts[#parts + 1] = "w" .. tostring(e.over) end -- agg(...) OVER (...): each its own
  return "(" .. table.concat(parts, " ") .. ")"
end

--- Calls fn(node) on every aggregate call in e (not inside another aggregate).
function M.each_agg(e, fn)
  if type(e) ~= "table" then return end
  if M.is_agg_call(e) then return fn(e) end
  for i = 1, #e do M.each_agg(e[i], fn) end
  for _, k in ipairs({"args", "list"}) do
    if e[k] then for _, a in ipairs(e[k]) do M.each_agg(a, fn) end end
  end
  if e.whens then for _, w in ipairs(e.whens) do M.each_agg(w[1], fn); M.each_agg(w[2], fn) end end
  if e.operand then M.each_agg(e.operand, fn) end
  if e.else_ then M.each_agg(e.else_, fn) end
end

--- The type of arithmetic over two numeric types (or NULL): the wider one.
local function numeric_result(a, b)
  if a == "NULL" then return b end
  if b == "NULL" then return a end
  return (NUMERIC[a] >= NUMERIC[b]) and a or b
end
M.numeric_result = numeric_result
M.TEMPORAL = TEMPORAL

local function comparable(a, b)
  if a == "NULL" or b == "NULL" or a == b then return true end
  if NUMERIC[a] and NUMERIC[b] then return true end
  if TEMPORAL[a] and TEMPORAL[b] then return true end
  return false
end

--- The type that values of `types` share (CASE branches, IN lists, COALESCE): the type, or
-- nil and the first two types that have none.
function M.common_type(types)
  local t = "NULL"
  for _, x in ipairs(types) do
    if t == "NULL" then t = x
    elseif x ~= "NULL" and x ~= t then
      if NUMERIC[t] and NUMERIC[x] then t = numeric_result(t, x)
      elseif TEMPORAL[t] and TEMPORAL[x] then t = "TIMESTAMP"
      else return nil, t, x end
    end
  end
  return t
end

local function common_type(src, pos, types, what)
  local t, a, b = M.common_type(types)
  if not t then errors.raise(src, pos, "%s mixes %s and %s", what, M.show(a), M.show(b)) end
  return t
end

-- Functions: name -> {min, max args, fn(src, node, args, types) -> lua source, type}
local FUNCS = {}

-- The arguments of a call: a list, or past 100 of them (registers) one table unpacked.
local function arglist(a)
  if #a <= 100 then return table.concat(a, ", ") end
  return "table.unpack({" .. table.concat(a, ", ") .. "}, 1, " .. #a .. ")"
end
M.arglist = arglist

local function want(src, node, i, t, okset, what)
  if t ~= "NULL" and not okset[t] then
    errors.raise(src, node.args[i].pos, "%s: argument %d must be %s, got %s", node.name, i, what, M.show(t))
  end
end
local STR = {STRING = true}

-- The script position of node `n` as a Lua string literal, for run-time errors.
local function where(src, n)
  local name = src and src.name or "sql"
  if not (n and n.pos and src and src.text) then return string.format("%q", name) end
  local l, c = errors.line_col(src.text, n.pos)
  return string.format("%q", name .. ":" .. l .. ":" .. c)
end

FUNCS.UPPER = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING"); return "R_upper(" .. a[1] .. ")", "STRING"
end}
FUNCS.LOWER = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING"); return "R_lower(" .. a[1] .. ")", "STRING"
end}
FUNCS.TRIM = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING"); return "R_trim(" .. a[1] .. ")", "STRING"
end}
FUNCS.CHAR_LENGTH = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  return "R_char_length(" .. a[1] .. ")", "INT"
end}
FUNCS.CHARACTER_LENGTH = FUNCS.CHAR_LENGTH
FUNCS.CONCAT = {1, 254, function(src, n, a, t)
  for i = 1, #a do want(src, n, i, t[i], STR, "a STRING") end
  return "R_concat(" .. arglist(a) .. ")", "STRING"
end}
FUNCS.SUBSTRING = {2, 3, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  for i = 2, #a do want(src, n, i, t[i], {INT = true, BIGINT = true}, "an integer") end
  return "R_substring(" .. a[1] .. ", " .. a[2] .. ", " .. (a[3] or "nil") .. ", " .. where(src, n) .. ")", "STRING"
end}
FUNCS.SUBSTR = FUNCS.SUBSTRING
FUNCS.ABS = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], NUMERIC, "numeric")
  return "R_abs(" .. a[1] .. ")", t[1]
end}
FUNCS.MOD = {2, 2, function(src, n, a, t)
  want(src, n, 1, t[1], NUMERIC, "numeric")
  want(src, n, 2, t[2], NUMERIC, "numeric")
  return "R_mod(" .. a[1] .. ", " .. a[2] .. ", " .. where(src, n) .. ")", numeric_result(t[1], t[2])
end}
FUNCS.COALESCE = {1, 254, function(src, n, a, t)
  return "R_coalesce(" .. arglist(a) .. ")", common_type(src, n.pos, t, "COALESCE")
end}
FUNCS.IF = {3, 3, function(src, n, a, t)
  want(src, n, 1, t[1], {BOOLEAN = true}, "a BOOLEAN")
  return "R_if_(" .. table.concat(a, ", ") .. ")", common_type(src, n.pos, {t[2], t[3]}, "IF")
end}
FUNCS.TO_TIMESTAMP_LTZ = {1, 2, function(src, n, a, t)
  want(src, n, 1, t[1], NUMERIC, "numeric (epoch seconds or milliseconds)")
  local p = n.args[2] and n.args[2].tag == "lit" and n.args[2].value or (n.args[2] and -1 or 3)
  if p ~= 0 and p ~= 3 then
    errors.raise(src, n.args[2] and n.args[2].pos or n.pos, "TO_TIMESTAMP_LTZ: the precision must be 0 or 3")
  end
  return "R_to_ts_ltz(" .. a[1] .. ", " .. p .. ")", "TIMESTAMP_LTZ"
end}
FUNCS.TO_TIMESTAMP = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  return "R_cast(" .. a[1] .. ", 'STRING', 'TIMESTAMP', false, " .. where(src, n) .. ")", "TIMESTAMP"
end}
-- HOUR(ts): the hour of the day, 0..23 (BIGINT, as Flink's); TIMESTAMP_LTZ in the session's
-- time zone, which is UTC only
FUNCS.HOUR = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], TEMPORAL, "a TIMESTAMP")
  return "R_hour(" .. a[1] .. ")", "BIGINT"
end}
-- SPLIT_INDEX(s, sep, i): the i-th (from 0) piece of s split at every sep, NULL past the end
FUNCS.SPLIT_INDEX = {3, 3, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  want(src, n, 2, t[2], STR, "a STRING")
  want(src, n, 3, t[3], {INT = true, BIGINT = true}, "an integer")
  return "R_split_index(" .. a[1] .. ", " .. a[2] .. ", " .. a[3] .. ")", "STRING"
end}
-- REGEXP_EXTRACT(s, regex[, index]): group `index` of the first match (wm.sql.regex); a
-- literal pattern is checked here
FUNCS.REGEXP_EXTRACT = {2, 3, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  want(src, n, 2, t[2], STR, "a STRING")
  if a[3] then want(src, n, 3, t[3], {INT = true, BIGINT = true}, "an integer") end
  local p = n.args[2]
  if p.tag == "lit" and p.type == "STRING" then
    local ok, err = require("wm.sql.regex").compile(p.value)
    if not ok then errors.raise(src, p.pos, "REGEXP_EXTRACT: not supported yet: %s", err) end
  end
  return "R_regexp_extract(" .. a[1] .. ", " .. a[2] .. ", " .. (a[3] or "0") .. ", " .. where(src, n) .. ")",
    "STRING"
end}
-- DATE_FORMAT(ts, 'yyyy-MM-dd'): the time as text (UTC, the session's only time zone); a
-- literal pattern is checked here
FUNCS.DATE_FORMAT = {2, 2, function(src, n, a, t)
  want(src, n, 1, t[1], {TIMESTAMP = true, TIMESTAMP_LTZ = true, STRING = true}, "a TIMESTAMP or a STRING")
  want(src, n, 2, t[2], STR, "a STRING")
  local p = n.args[2]
  if p.tag == "lit" and p.type == "STRING" then
    local ok, err = values.date_pattern(p.value)
    if not ok then errors.raise(src, p.pos, "DATE_FORMAT: %s", err) end
  end
  return "R_date_format(" .. a[1] .. ", " .. a[2] .. ", " .. where(src, n) .. ")", "STRING"
end}
M.FUNCS = FUNCS

local BINOPS = {["="] = "R_eq", ["<>"] = "R_ne", ["<"] = "R_lt", ["<="] = "R_le", [">"] = "R_gt", [">="] = "R_ge"}

local compile

-- The code and type of `a op b`, both compiled; `e` is the node (for its positions).
local function bin_code(e, scope, a, ta, b, tb)
  local src = scope.src
  local op = e.op
  if op == "AND" or op == "OR" then
    for i, t in ipairs({ta, tb}) do
      if t ~= "BOOLEAN" and t ~= "NULL" then
        errors.raise(src, e[i].pos, "%s needs BOOLEAN operands, got %s", op, M.show(t))
      end
    end
    return (op == "AND" and "R_and_(" or "R_or_(") .. a .. ", " .. b .. ")", "BOOLEAN"
  end
  if BINOPS[op] then
    if not comparable(ta, tb) then
      errors.raise(src, e.pos, "cannot compare %s with %s", M.show(ta), M.show(tb))
    end
    return BINOPS[op] .. "(" .. a .. ", " .. b .. ")", "BOOLEAN"
  end
  if op == "||" then
    for i, t in ipairs({ta, tb}) do
      if t ~= "STRING" and t ~= "NULL" then
        errors.raise(src, e[i].pos, "|| needs STRING operands, got %s (use CAST)", M.show(t))
      end
    end
    return "R_concat(" .. a .. ", " .. b .. ")", "STRING"
  end
  -- arithmetic; timestamps +/- intervals
  if (op == "+" or op == "-") and TEMPORAL[ta] and tb == "INTERVAL" then
    return (op == "+" and "R_add(" or "R_sub(") .. a .. ", " .. b .. ")", ta
  end
  if op == "+" and ta == "INTERVAL" and TEMPORAL[tb] then return "R_add(" .. a .. ", " .. b .. ")", tb end
  if ta == "INTERVAL" and tb == "INTERVAL" and (op == "+" or op == "-") then
    return (op == "+" and "R_add(" or "R_sub(") .. a .. ", " .. b .. ")", "INTERVAL"
  end
  for i, t in ipairs({ta, tb}) do
    if not NUMERIC[t] and t ~= "NULL" then
      errors.raise(src, e[i].pos, "operator %s needs numeric operands, got %s", op, M.show(t))
    end
  end
  local rt = numeric_result(ta, tb)
  if rt == "NULL" then rt = "INT" end
  local fn = ({["+"] = "R_add", ["-"] = "R_sub", ["*"] = "R_mul", ["%"] = "R_mod"})[op]
  if op == "/" then fn = rt == "DOUBLE" and "R_fdiv" or "R_idiv" end
  if fn == "R_idiv" or fn == "R_mod" then return fn .. "(" .. a .. ", " .. b .. ", " .. where(src, e) .. ")", rt end
  return fn .. "(" .. a .. ", " .. b .. ")", rt
end

-- Limits of generated code. Lua's parser nests about 200 levels (C stack) and a function
-- has 255 registers; a compiled expression nests about one level per node. So the compiler
-- counts the nesting (`depth`) and, past HOIST_DEPTH, loads the sub-expression as a
-- function of its own (`hoist`), called with every name compiled code can use. A long chain
-- of one operator (`a + b + ... `, `x AND y AND ...`, the parser makes it left-deep) is
-- compiled along its spine in a loop, hoisted every HOIST_DEPTH operators.
local HOIST_DEPTH = 16
local IN_GROUP = 50 -- non-literal IN lists: R_in_ over groups this large, OR-ed in a balanced tree
local depth = 0
local HOIST_ARGS = "(r, k, a, ws, we)"

local load_chunk

-- `src` (an expression) as a call of a function of its own.
local function hoist_expr(src)
  return load_chunk("return function" .. HOIST_ARGS .. " return " .. src .. " end", "=sql")
end
-- A value (a function, an IN set) made reachable from generated code: its source text.
local function registered(v)
  local h = values.runtime.hoisted
  h[#h + 1] = v
  return "R_hoisted[" .. #h .. "]"
end
local function hoisted(fn) return registered(fn) .. HOIST_ARGS end

-- True when e has more than `n` levels of nodes below it (bounded recursion).
local function taller(e, n)
  if type(e) ~= "table" then return false end
  if n <= 0 then return true end
  for i = 1, #e do if taller(e[i], n - 1) then return true end end
  for _, f in ipairs({"args", "list"}) do
    if e[f] then for _, x in ipairs(e[f]) do if taller(x, n - 1) then return true end end end
  end
  if e.whens then
    for _, w in ipairs(e.whens) do if taller(w[1], n - 1) or taller(w[2], n - 1) then return true end end
  end
  return taller(e.operand, n - 1) or taller(e.else_, n - 1)
end

-- Operators whose chains are compiled along the spine (same precedence level in the parser).
local CHAIN = {AND = "AND", OR = "OR", ["+"] = "add", ["-"] = "add", ["*"] = "mul", ["/"] = "mul",
  ["%"] = "mul", ["||"] = "||"}

-- A binary node: its left spine of the same precedence level walked in a loop.
local function compile_bin(e, scope)
  local level = CHAIN[e.op]
  local spine = {e}
  local x = e[1]
  while level and type(x) == "table" and x.tag == "bin" and CHAIN[x.op] == level
      and not (scope.match and scope.match(x)) do
    spine[#spine + 1] = x
    x = x[1]
  end
  if #spine <= HOIST_DEPTH then
    local a, ta = compile(e[1], scope)
    local b, tb = compile(e[2], scope)
    return bin_code(e, scope, a, ta, b, tb)
  end
  local saved = depth
  local acc, t = compile(x, scope)
  local steps = 0
  for i = #spine, 1, -1 do
    local node = spine[i]
    depth = HOIST_DEPTH -- the right operand sits under up to HOIST_DEPTH calls of the chain
    local b, tb = compile(node[2], scope)
    acc, t = bin_code(node, scope, acc, t, b, tb)
    steps = steps + 1
    if steps == HOIST_DEPTH and i > 1 then
      acc, steps = hoisted(hoist_expr(acc)), 0
    end
  end
  depth = saved
  return acc, t
end

local function lua_string(s) return string.format("%q", s) end

local compile_node

compile = function(e, scope)
  if scope.match then
    local s, t = scope.match(e)
    if s then return s, t end
  end
  if depth >= HOIST_DEPTH and taller(e, 4) then
    local saved = depth
    depth = 0
    local s, t = compile_node(e, scope)
    depth = saved
    return hoisted(hoist_expr(s)), t
  end
  depth = depth + 1
  local s, t = compile_node(e, scope)
  depth = depth - 1
  return s, t
end

compile_node = function(e, scope)
  local src = scope.src
  local tag = e.tag
  if tag == "lit" then
    if e.type == "NULL" then return "nil", "NULL" end
    if e.type == "STRING" then return lua_string(e.value), "STRING" end
    if e.type == "BOOLEAN" then return tostring(e.value), "BOOLEAN" end
    if e.type == "DOUBLE" then return string.format("%.17g", e.value):gsub("^([-%d]+)$", "%1.0"), "DOUBLE" end
    return string.format("%d", e.value), e.type
  elseif tag == "interval" then
    if not e.ms then errors.raise(src, e.pos, "bad interval '%s' %s", e.text, e.unit) end
    return tostring(e.ms), "INTERVAL"
  elseif tag == "tslit" then
    local v = values.parse_timestamp(e.text)
    if not v then errors.raise(src, e.pos, "bad TIMESTAMP literal '%s' (yyyy-MM-dd HH:mm:ss.SSS)", e.text) end
    return tostring(v), "TIMESTAMP"
  elseif tag == "col" then
    return scope.column(e)
  elseif tag == "bin" then
    return compile_bin(e, scope)
  elseif tag == "un" then
    local a, t = compile(e[1], scope)
    if e.op == "NOT" then
      if t ~= "BOOLEAN" and t ~= "NULL" then errors.raise(src, e[1].pos, "NOT needs a BOOLEAN, got %s", M.show(t)) end
      return "R_not_(" .. a .. ")", "BOOLEAN"
    end
    if not NUMERIC[t] and t ~= "NULL" then errors.raise(src, e[1].pos, "unary - needs a number, got %s", M.show(t)) end
    return "R_neg(" .. a .. ")", t
  elseif tag == "isnull" then
    local a = compile(e[1], scope)
    return "(" .. a .. (e.neg and " ~= nil)" or " == nil)"), "BOOLEAN"
  elseif tag == "isbool" then
    local a, t = compile(e[1], scope)
    if t ~= "BOOLEAN" and t ~= "NULL" then errors.raise(src, e[1].pos, "IS %s needs a BOOLEAN", tostring(e.value)) end
    return "(" .. a .. (e.neg and " ~= " or " == ") .. tostring(e.value) .. ")", "BOOLEAN"
  elseif tag == "like" then
    local a, ta = compile(e[1], scope)
    local b, tb = compile(e[2], scope)
    if (ta ~= "STRING" and ta ~= "NULL") or (tb ~= "STRING" and tb ~= "NULL") then
      errors.raise(src, e.pos, "LIKE needs STRING operands, got %s and %s", M.show(ta), M.show(tb))
    end
    local s = "R_like(" .. a .. ", " .. b .. ")"
    if e.neg then s = "R_not_(" .. s .. ")" end
    return s, "BOOLEAN"
  elseif tag == "between" then
    local a, ta = compile(e[1], scope)
    local lo, tl = compile(e[2], scope)
    local hi, th = compile(e[3], scope)
    if not comparable(ta, tl) or not comparable(ta, th) then
      errors.raise(src, e.pos, "BETWEEN cannot compare %s with %s and %s", M.show(ta), M.show(tl), M.show(th))
    end
    local s = "R_between(" .. a .. ", " .. lo .. ", " .. hi .. ")"
    if e.neg then s = "R_not_(" .. s .. ")" end
    return s, "BOOLEAN"
  elseif tag == "in" then
    local a, ta = compile(e[1], scope)
    local parts, literal = {}, true
    for i, x in ipairs(e.list) do
      local s, t = compile(x, scope)
      if not comparable(ta, t) then errors.raise(src, x.pos, "IN cannot compare %s with %s", M.show(ta), M.show(t)) end
      parts[i] = s
      if x.tag ~= "lit" then literal = false end
    end
    local s
    if literal then
      -- a list of literals: one table lookup
      local set, has_null = {}, false
      for _, x in ipairs(e.list) do
        if x.type == "NULL" then has_null = true else set[x.value] = true end
      end
      s = "R_in_set(" .. a .. ", " .. registered(set) .. ", " .. tostring(has_null) .. ")"
    else
      -- groups of IN_GROUP values (registers), OR-ed in a balanced tree (nesting)
      local groups = {}
      for i = 1, #parts, IN_GROUP do
        local last = math.min(#parts, i + IN_GROUP - 1)
        groups[#groups + 1] = "R_in_(" .. a .. ", " .. table.concat(parts, ", ", i, last) .. ")"
      end
      while #groups > 1 do
        local up = {}
        for i = 1, #groups, 2 do
          up[#up + 1] = groups[i + 1] and ("R_or_(" .. groups[i] .. ", " .. groups[i + 1] .. ")") or groups[i]
        end
        groups = up
      end
      s = groups[1]
    end
    if e.neg then s = "R_not_(" .. s .. ")" end
    return s, "BOOLEAN"
  elseif tag == "case" then
    local results, types = {}, {}
    local saved = depth
    depth = 0 -- the CASE is a function of its own
    local op_src, op_t
    if e.operand then op_src, op_t = compile(e.operand, scope) end
    local conds = {}
    for i, w in ipairs(e.whens) do
      local c, ct = compile(w[1], scope)
      if e.operand then
        if not comparable(op_t, ct) then
          errors.raise(src, w[1].pos, "CASE compares %s with %s", M.show(op_t), M.show(ct))
        end
        c = "R_eq(" .. op_src .. ", " .. c .. ")"
      elseif ct ~= "BOOLEAN" and ct ~= "NULL" then
        errors.raise(src, w[1].pos, "WHEN needs a BOOLEAN condition, got %s", M.show(ct))
      end
      conds[i] = c
      results[i], types[i] = compile(w[2], scope)
    end
    local else_src = "nil"
    if e.else_ then
      local t
      else_src, t = compile(e.else_, scope)
      types[#types + 1] = t
    end
    depth = saved
    local rt = common_type(src, e.pos, types, "CASE")
    -- a function of its own: if c1 == true then return r1 elseif ... end, evaluated lazily
    local parts = {"return function" .. HOIST_ARGS .. " "}
    for i = 1, #conds do
      parts[#parts + 1] = (i == 1 and "if " or "elseif ") .. conds[i] .. " == true then return " .. results[i] .. " "
    end
    parts[#parts + 1] = "else return " .. else_src .. " end end"
    return hoisted(load_chunk(table.concat(parts), "=sql")), rt
  elseif tag == "cast" then
    local a, t = compile(e[1], scope)
    local to = M.type_name(e.type, src)
    if t == "INTERVAL" then errors.raise(src, e.pos, "cannot CAST an INTERVAL") end
    local ok = t == "NULL" or t == to or to == "STRING" or t == "STRING"
      or (NUMERIC[to] and (NUMERIC[t] or t == "BOOLEAN")) or (to == "BOOLEAN" and NUMERIC[t])
      or (TEMPORAL[to] and TEMPORAL[t])
    if not ok then errors.raise(src, e.pos, "cannot CAST %s AS %s", M.show(t), M.show(to)) end
    if t == "NULL" then return "nil", to end
    return string.format("R_cast(%s, %q, %q, %s, %s)", a, t, to, tostring(e.try), where(src, e)), to
  elseif tag == "call" then
    if M.is_agg_call(e) then
      errors.raise(src, e.pos, "aggregate function %s is not allowed %s", e.name, scope.agg_where or "here")
    end
    if WINDOW_FNS[e.name] then
      errors.raise(src, e.pos, "%s can only be used in GROUP BY (a group window)", e.name)
    end
    if WINDOW_PROPS[e.name] then
      errors.raise(src, e.pos, "%s needs GROUP BY %s(...)", e.name, e.name:match("^(%u+)_"))
    end
    if e.over and e.name ~= "ROW_NUMBER" then
      errors.raise(src, e.pos, "not supported yet: %s(...) OVER (...) here (an OVER aggregate is an item of a "
        .. "SELECT without GROUP BY, wm.sql.plan.over)", e.name)
    end
    if e.over then
      errors.raise(src, e.pos, "not supported yet: ROW_NUMBER() OVER (...) here: it is an item of a query that "
        .. "an outer query filters on it, WHERE rn <= N (Top-N) or rn = 1 (deduplication)")
    end
    if e.filter then
      errors.raise(src, e.filter_pos, "FILTER (WHERE ...) is for aggregate functions, not %s", e.name)
    end
    if e.name == "CURRENT_WATERMARK" and scope.current_watermark then
      return scope.current_watermark(e)
    end
    -- PROCTIME(): the processing time of the operator that evaluates it (wm.sql.plan.proctime),
    -- in a SELECT list only (a scope with proctime_ok)
    if e.name == "PROCTIME" then
      if #e.args > 0 or e.star or e.distinct then errors.raise(src, e.pos, "PROCTIME takes no arguments") end
      if not scope.proctime_ok then
        errors.raise(src, e.pos, "not supported yet: PROCTIME() here (it is an item of a SELECT without GROUP BY, "
          .. "as in CREATE VIEW v AS SELECT *, PROCTIME() AS pt FROM t)")
      end
      scope.uses_proctime = true
      return "R_proctime()", "TIMESTAMP_LTZ"
    end
    local f = FUNCS[e.name]
    if not f and scope.functions and scope.functions[e.name] then f = scope.functions[e.name] end
    if not f then errors.raise(src, e.pos, "unknown function '%s'", e.name) end
    if e.star or e.distinct then errors.raise(src, e.pos, "%s takes no %s", e.name, e.star and "*" or "DISTINCT") end
    if #e.args < f[1] or #e.args > f[2] then
      errors.raise(src, e.pos, "%s takes %s argument%s, got %d", e.name,
        f[1] == f[2] and tostring(f[1]) or (f[1] .. " to " .. f[2]), f[2] == 1 and "" or "s", #e.args)
    end
    local a, t = {}, {}
    for i, x in ipairs(e.args) do a[i], t[i] = compile(x, scope) end
    return f[3](src, e, a, t)
  end
  if tag == "exists" or tag == "in_query" then
    errors.raise(src, e.pos, "not supported yet: subqueries in expressions (EXISTS and IN (SELECT ...) make a "
      .. "semi or anti window join: WHERE EXISTS (SELECT ... WHERE L.window_start = R.window_start AND "
      .. "L.window_end = R.window_end ...))")
  end
  errors.raise(src, e.pos, "unsupported expression (%s)", tostring(tag))
end
function M.compile(e, scope)
  depth = 0
  return compile(e, scope)
end

-- The chunk header: every run-time helper as a local (R_add = R.add, ...).
local header
do
  local names = {}
  for k in pairs(values.runtime) do names[#names + 1] = k end
  table.sort(names)
  local lines = {"local R = ..."}
  for _, k in ipairs(names) do lines[#lines + 1] = "local R_" .. k .. " = R." .. k end
  header = table.concat(lines, "\n") .. "\n"
end

--- Loads generated source as a function. `body` is the text of `function(...) ... end`.
-- @tparam string body Lua source of a function expression
-- @tparam string chunkname shown in run-time errors (the script's file:line)
-- @tparam[opt] table upvalues extra values, available as `U` in the body
-- @treturn function
function M.load(body, chunkname, upvalues)
  -- the names of HOIST_ARGS that the body's function does not have stay nil locals (cheaper
  -- for the calls of hoisted parts than globals)
  return load_chunk("local U = select(2, ...)\nlocal " .. HOIST_ARGS:sub(2, -2) .. "\nreturn " .. body,
    "=" .. chunkname, upvalues)
end

load_chunk = function(text, chunkname, upvalues)
  text = header .. text
  local chunk, err = load(text, chunkname, "t", {select = select, error = error, math = math,
    string = string, table = table, tostring = tostring, type = type, pairs = pairs, ipairs = ipairs})
  if not chunk then error("internal error compiling SQL: " .. err, 0) end
  return chunk(values.runtime, upvalues or {})
end

return M
