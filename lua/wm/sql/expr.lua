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

--- A string that is equal for structurally equal expressions (positions ignored).
function M.sig(e)
  if type(e) ~= "table" then return tostring(e) end
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
  return "(" .. table.concat(parts, " ") .. ")"
end

--- Calls fn(node) on every aggregate call in e (not inside another aggregate).
function M.each_agg(e, fn)
  if type(e) ~= "table" then return end
  if e.tag == "call" and AGGS[e.name] then return fn(e) end
  for i = 1, #e do M.each_agg(e[i], fn) end
  for _, k in ipairs({"args", "list"}) do
    if e[k] then for _, a in ipairs(e[k]) do M.each_agg(a, fn) end end
  end
  if e.whens then for _, w in ipairs(e.whens) do M.each_agg(w[1], fn); M.each_agg(w[2], fn) end end
  if e.operand then M.each_agg(e.operand, fn) end
  if e.else_ then M.each_agg(e.else_, fn) end
end

local function numeric_result(a, b)
  if a == "NULL" then return b end
  if b == "NULL" then return a end
  return (NUMERIC[a] >= NUMERIC[b]) and a or b
end

local function comparable(a, b)
  if a == "NULL" or b == "NULL" or a == b then return true end
  if NUMERIC[a] and NUMERIC[b] then return true end
  if TEMPORAL[a] and TEMPORAL[b] then return true end
  return false
end

local function common_type(src, pos, types, what)
  local t = "NULL"
  for _, x in ipairs(types) do
    if t == "NULL" then t = x
    elseif x ~= "NULL" and x ~= t then
      if NUMERIC[t] and NUMERIC[x] then t = numeric_result(t, x)
      elseif TEMPORAL[t] and TEMPORAL[x] then t = "TIMESTAMP"
      else errors.raise(src, pos, "%s mixes %s and %s", what, M.show(t), M.show(x)) end
    end
  end
  return t
end

-- Functions: name -> {min, max args, fn(src, node, args, types) -> lua source, type}
local FUNCS = {}

local function want(src, node, i, t, okset, what)
  if t ~= "NULL" and not okset[t] then
    errors.raise(src, node.args[i].pos, "%s: argument %d must be %s, got %s", node.name, i, what, M.show(t))
  end
end
local STR = {STRING = true}

FUNCS.UPPER = {1, 1, function(src, n, a, t) want(src, n, 1, t[1], STR, "a STRING"); return "R_upper(" .. a[1] .. ")", "STRING" end}
FUNCS.LOWER = {1, 1, function(src, n, a, t) want(src, n, 1, t[1], STR, "a STRING"); return "R_lower(" .. a[1] .. ")", "STRING" end}
FUNCS.TRIM = {1, 1, function(src, n, a, t) want(src, n, 1, t[1], STR, "a STRING"); return "R_trim(" .. a[1] .. ")", "STRING" end}
FUNCS.CHAR_LENGTH = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  return "R_char_length(" .. a[1] .. ")", "INT"
end}
FUNCS.CHARACTER_LENGTH = FUNCS.CHAR_LENGTH
FUNCS.CONCAT = {1, 254, function(src, n, a, t)
  for i = 1, #a do want(src, n, i, t[i], STR, "a STRING") end
  return "R_concat(" .. table.concat(a, ", ") .. ")", "STRING"
end}
FUNCS.SUBSTRING = {2, 3, function(src, n, a, t)
  want(src, n, 1, t[1], STR, "a STRING")
  for i = 2, #a do want(src, n, i, t[i], {INT = true, BIGINT = true}, "an integer") end
  return "R_substring(" .. table.concat(a, ", ") .. ")", "STRING"
end}
FUNCS.SUBSTR = FUNCS.SUBSTRING
FUNCS.ABS = {1, 1, function(src, n, a, t)
  want(src, n, 1, t[1], NUMERIC, "numeric")
  return "R_abs(" .. a[1] .. ")", t[1]
end}
FUNCS.MOD = {2, 2, function(src, n, a, t)
  want(src, n, 1, t[1], NUMERIC, "numeric")
  want(src, n, 2, t[2], NUMERIC, "numeric")
  return "R_mod(" .. a[1] .. ", " .. a[2] .. ")", numeric_result(t[1], t[2])
end}
FUNCS.COALESCE = {1, 254, function(src, n, a, t)
  return "R_coalesce(" .. table.concat(a, ", ") .. ")", common_type(src, n.pos, t, "COALESCE")
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
  return "R_cast(" .. a[1] .. ", 'STRING', 'TIMESTAMP', false)", "TIMESTAMP"
end}
M.FUNCS = FUNCS

local BINOPS = {["="] = "R_eq", ["<>"] = "R_ne", ["<"] = "R_lt", ["<="] = "R_le", [">"] = "R_gt", [">="] = "R_ge"}

local compile

local function compile_bin(e, scope)
  local src = scope.src
  local op = e.op
  if op == "AND" or op == "OR" then
    local a, ta = compile(e[1], scope)
    local b, tb = compile(e[2], scope)
    for i, t in ipairs({ta, tb}) do
      if t ~= "BOOLEAN" and t ~= "NULL" then
        errors.raise(src, e[i].pos, "%s needs BOOLEAN operands, got %s", op, M.show(t))
      end
    end
    return (op == "AND" and "R_and_(" or "R_or_(") .. a .. ", " .. b .. ")", "BOOLEAN"
  end
  local a, ta = compile(e[1], scope)
  local b, tb = compile(e[2], scope)
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
  return fn .. "(" .. a .. ", " .. b .. ")", rt
end

local function lua_string(s) return string.format("%q", s) end

compile = function(e, scope)
  local src = scope.src
  if scope.match then
    local s, t = scope.match(e)
    if s then return s, t end
  end
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
    local parts = {a}
    for _, x in ipairs(e.list) do
      local s, t = compile(x, scope)
      if not comparable(ta, t) then errors.raise(src, x.pos, "IN cannot compare %s with %s", M.show(ta), M.show(t)) end
      parts[#parts + 1] = s
    end
    local s = "R_in_(" .. table.concat(parts, ", ") .. ")"
    if e.neg then s = "R_not_(" .. s .. ")" end
    return s, "BOOLEAN"
  elseif tag == "case" then
    -- a nested chain of immediately-called functions would be slow: use R_if_ only for
    -- values without side effects, which all compiled expressions are
    local results, types = {}, {}
    local op_src, op_t
    if e.operand then op_src, op_t = compile(e.operand, scope) end
    local conds = {}
    for i, w in ipairs(e.whens) do
      local c, ct = compile(w[1], scope)
      if e.operand then
        if not comparable(op_t, ct) then errors.raise(src, w[1].pos, "CASE compares %s with %s", M.show(op_t), M.show(ct)) end
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
    local rt = common_type(src, e.pos, types, "CASE")
    -- (function() if c1 == true then return r1 elseif ... end)() evaluates lazily
    local parts = {"(function() "}
    for i = 1, #conds do
      parts[#parts + 1] = (i == 1 and "if " or "elseif ") .. conds[i] .. " == true then return " .. results[i] .. " "
    end
    parts[#parts + 1] = "else return " .. else_src .. " end end)()"
    return table.concat(parts), rt
  elseif tag == "cast" then
    local a, t = compile(e[1], scope)
    local to = M.type_name(e.type, src)
    if t == "INTERVAL" then errors.raise(src, e.pos, "cannot CAST an INTERVAL") end
    local ok = t == "NULL" or t == to or to == "STRING" or t == "STRING"
      or (NUMERIC[to] and (NUMERIC[t] or t == "BOOLEAN")) or (to == "BOOLEAN" and NUMERIC[t])
      or (TEMPORAL[to] and TEMPORAL[t])
    if not ok then errors.raise(src, e.pos, "cannot CAST %s AS %s", M.show(t), M.show(to)) end
    if t == "NULL" then return "nil", to end
    return string.format("R_cast(%s, %q, %q, %s)", a, t, to, tostring(e.try)), to
  elseif tag == "call" then
    if AGGS[e.name] then
      errors.raise(src, e.pos, "aggregate function %s is not allowed %s", e.name, scope.agg_where or "here")
    end
    if WINDOW_FNS[e.name] then
      errors.raise(src, e.pos, "%s can only be used in GROUP BY (a group window)", e.name)
    end
    if WINDOW_PROPS[e.name] then
      errors.raise(src, e.pos, "%s needs GROUP BY %s(...)", e.name, e.name:match("^(%u+)_"))
    end
    if e.name == "CURRENT_WATERMARK" and scope.current_watermark then
      return scope.current_watermark(e)
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
  errors.raise(src, e.pos, "unsupported expression (%s)", tostring(tag))
end
M.compile = compile

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
  local text = header .. "local U = select(2, ...)\nreturn " .. body
  local chunk, err = load(text, "=" .. chunkname, "t", {select = select, error = error, math = math,
    string = string, table = table, tostring = tostring, type = type, pairs = pairs, ipairs = ipairs})
  if not chunk then error("internal error compiling SQL: " .. err .. "\n" .. text, 0) end
  return chunk(values.runtime, upvalues or {})
end

return M
