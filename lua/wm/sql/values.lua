--- SQL values at run time: formatting as Flink prints them, casts, timestamps, and the
-- NULL-aware helpers that compiled expressions call.
--
-- Representation: STRING is a Lua string; INT and BIGINT Lua integers; DOUBLE a Lua float;
-- BOOLEAN a Lua boolean; TIMESTAMP(3) and TIMESTAMP_LTZ(3) integer milliseconds since the
-- epoch (UTC); NULL is nil.
-- @module wm.sql.values
local errors = require("wm.sql.errors")

local M = {}

M.NULL_TEXT = "<NULL>"   -- how Flink's print sink shows a NULL field

---------------------------------------------------------------------------------------------
-- Timestamps (UTC, proleptic Gregorian calendar)

local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = y // 400 -- (Lua's // floors: Hinnant's C code, whose / truncates, subtracts 399 first)
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = z // 146097 -- (floored: the C code's (z - 146096) / 146097 would floor twice)
  local doe = z - era * 146097
  local yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
  local mp = (5 * doy + 2) // 153
  local d = doy - (153 * mp + 2) // 5 + 1
  local m = mp < 10 and mp + 3 or mp - 9
  return m <= 2 and y + 1 or y, m, d
end

--- Formats ms since the epoch as `yyyy-MM-dd HH:mm:ss.SSS` (UTC).
-- @tparam integer ms
-- @treturn string
-- Window results of many keys share their start and end: a small cache of the last
-- formatted values saves a string.format per field (emptied when it grows past 256).
local ts_cache, ts_cached = {}, 0
function M.format_timestamp(ms)
  local hit = ts_cache[ms]
  if hit then return hit end
  local days, rem = ms // 86400000, ms % 86400000
  local y, mo, d = civil_from_days(days)
  local s = rem // 1000
  local text = string.format("%04d-%02d-%02d %02d:%02d:%02d.%03d", y, mo, d, s // 3600, s // 60 % 60, s % 60,
    rem % 1000)
  if ts_cached >= 256 then ts_cache, ts_cached = {}, 0 end
  ts_cache[ms], ts_cached = text, ts_cached + 1
  return text
end

--- Parses `yyyy-MM-dd[ HH:mm[:ss[.fff]]]` (or with a `T`) as UTC ms; nil when it does not fit.
-- @tparam string s
-- @treturn integer|nil
function M.parse_timestamp(s)
  local y, mo, d, rest = s:match("^%s*(%d%d%d%d)%-(%d%d?)%-(%d%d?)(.-)%s*$")
  if not y then return nil end
  local h, mi, sec, frac = 0, 0, 0, ""
  if rest ~= "" then
    local hh, mm, tail = rest:match("^[ T](%d%d?):(%d%d)(.*)$")
    if not hh then return nil end
    h, mi = tonumber(hh), tonumber(mm)
    if tail ~= "" then
      local ss, f = tail:match("^:(%d%d)(.*)$")
      if not ss then return nil end
      sec = tonumber(ss)
      if f ~= "" then
        frac = f:match("^%.(%d+)$")
        if not frac then return nil end
      end
    end
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or sec > 59 then return nil end
  local ms = tonumber((frac .. "000"):sub(1, 3))
  return ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + sec * 1000 + ms
end

---------------------------------------------------------------------------------------------
-- Formatting (CAST(x AS STRING), and what print shows)

--- A double as Java's Double.toString writes it (`1.5`, `2.0`, `1.0E10`, `1.0E-5`).
-- @tparam number x
-- @treturn string
function M.format_double(x)
  if x ~= x then return "NaN" end
  if x == math.huge then return "Infinity" end
  if x == -math.huge then return "-Infinity" end
  if x == 0 then return (1 / x < 0) and "-0.0" or "0.0" end
  local p, s = 1
  repeat
    s = string.format("%." .. (p - 1) .. "e", x)
    p = p + 1
  until tonumber(s) == x or p > 17
  local sign, int, frac, exp = s:match("^(%-?)(%d)%.?(%d*)e([-+]%d+)$")
  exp = tonumber(exp)
  local digits = (int .. frac):gsub("0+$", "")
  if digits == "" then digits = "0" end
  local ax = math.abs(x)
  if ax >= 1e-3 and ax < 1e7 then
    local point = exp + 1 -- digits before the decimal point
    local ip, fp
    if point <= 0 then
      ip, fp = "0", string.rep("0", -point) .. digits
    elseif point >= #digits then
      ip, fp = digits .. string.rep("0", point - #digits), "0"
    else
      ip, fp = digits:sub(1, point), digits:sub(point + 1)
    end
    return sign .. ip .. "." .. fp
  end
  local fp = digits:sub(2)
  if fp == "" then fp = "0" end
  return sign .. digits:sub(1, 1) .. "." .. fp .. "E" .. exp
end

--- Formats a value of SQL type `t` as CAST(v AS STRING) does (nil stays nil).
-- @tparam any v the value
-- @tparam string t the type name
function M.to_string(v, t)
  if v == nil then return nil end
  if t == "STRING" then return v end
  if t == "TIMESTAMP" or t == "TIMESTAMP_LTZ" then return M.format_timestamp(v) end
  if t == "BOOLEAN" then return v and "TRUE" or "FALSE" end
  if math.type(v) == "float" then return M.format_double(v) end
  return tostring(v)
end

--- A function that formats a row's fields (`{name = v}`, in `cols` order) as Flink's
-- print sink does: `+I[a, 1, 2016-04-27 11:34:20.000]` (`kind` is `+I`, `-U`, `+U`, `-D`).
-- @tparam table cols a list of {name =, type =}
-- @treturn function fn(kind, row) -> string
function M.row_formatter(cols)
  local n = #cols
  local names, types = {}, {}
  for i, c in ipairs(cols) do names[i], types[i] = c.name, c.type end
  local parts = {}
  local to_string, null = M.to_string, M.NULL_TEXT
  return function(kind, row)
    for i = 1, n do
      local v = row[names[i]]
      parts[i] = v == nil and null or to_string(v, types[i])
    end
    return kind .. "[" .. table.concat(parts, ", ", 1, n) .. "]"
  end
end

---------------------------------------------------------------------------------------------
-- Parsing text into a typed value (CSV fields, CAST from STRING)

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

--- Parses text as a value of type `t`. Returns the value, or nil and a reason.
function M.parse(text, t)
  if t == "STRING" then return text end
  local s = trim(text)
  if t == "INT" or t == "BIGINT" then
    local v = s:match("^[-+]?%d+$") and math.tointeger(tonumber(s))
    if not v then return nil, "not an integer" end
    if t == "INT" and (v < -2147483648 or v > 2147483647) then return nil, "out of range for INT" end
    return v
  elseif t == "DOUBLE" then
    local v = tonumber(s)
    if not v then
      local l = s:lower()
      if l == "nan" then return 0 / 0 end
      if l == "infinity" or l == "+infinity" then return math.huge end
      if l == "-infinity" then return -math.huge end
      return nil, "not a number"
    end
    return v + 0.0
  elseif t == "BOOLEAN" then
    local l = s:lower()
    if l == "true" then return true end
    if l == "false" then return false end
    return nil, "not a boolean"
  elseif t == "TIMESTAMP" or t == "TIMESTAMP_LTZ" then
    local v = M.parse_timestamp(s)
    if not v then return nil, "not a timestamp (yyyy-MM-dd HH:mm:ss.SSS)" end
    return v
  end
  return nil, "cannot parse a " .. tostring(t)
end

-- The pieces of a DATE_FORMAT pattern (Java's DateTimeFormatter letters y M d H h m s S a,
-- quoted text 'x', '' a quote, other characters as they are): strings and functions of
-- (os.date's table, milliseconds); nil and a message for a letter it does not take.
function M.date_pattern(fmt)
  local pieces, i, n = {}, 1, #fmt
  local function pad(v, w) return string.format("%0" .. w .. "d", v) end
  while i <= n do
    local c = fmt:sub(i, i)
    if c == "'" then
      if fmt:sub(i + 1, i + 1) == "'" then
        pieces[#pieces + 1] = "'"
        i = i + 2
      else
        local j = fmt:find("'", i + 1, true)
        if not j then return nil, "an unclosed quote in the pattern '" .. fmt .. "'" end
        pieces[#pieces + 1] = fmt:sub(i + 1, j - 1)
        i = j + 1
      end
    elseif c:match("%a") then
      local j = i
      while fmt:sub(j + 1, j + 1) == c do j = j + 1 end
      local w = j - i + 1
      local f
      if c == "y" then
        f = w == 2 and function(d) return pad(d.year % 100, 2) end or function(d) return pad(d.year, w) end
      elseif c == "M" and w <= 2 then f = function(d) return pad(d.month, w) end
      elseif c == "d" then f = function(d) return pad(d.day, w) end
      elseif c == "H" then f = function(d) return pad(d.hour, w) end
      elseif c == "h" then f = function(d) return pad((d.hour + 11) % 12 + 1, w) end
      elseif c == "m" then f = function(d) return pad(d.min, w) end
      elseif c == "s" then f = function(d) return pad(d.sec, w) end
      elseif c == "S" and w <= 3 then f = function(_, ms) return pad(ms, 3):sub(1, w) end
      elseif c == "a" and w == 1 then f = function(d) return d.hour < 12 and "AM" or "PM" end
      else
        return nil, "not supported yet: the pattern letters '" .. fmt:sub(i, j) .. "' in '" .. fmt
          .. "' (yyyy, yy, M, MM, d, dd, H, HH, h, hh, m, mm, s, ss, S, SS, SSS, a)"
      end
      pieces[#pieces + 1] = f
      i = j + 1
    else
      pieces[#pieces + 1] = c
      i = i + 1
    end
  end
  return pieces
end

---------------------------------------------------------------------------------------------
-- Run-time helpers for compiled expressions: every one propagates NULL (nil)

local R = {}
M.runtime = R

-- A run-time error of a compiled expression: `where` is its place in the script
-- (`job.sql:3:10`). An error object with __tostring: wmrun prints the message, the operator
-- and the record, and no Lua traceback (the library's lines say nothing to the user).
local function fail(where, msg)
  error(setmetatable({message = where and (where .. ": " .. msg) or msg, text = msg}, errors.Error), 0)
end
M.fail = fail

function R.add(a, b) if a == nil or b == nil then return nil end return a + b end
function R.sub(a, b) if a == nil or b == nil then return nil end return a - b end
function R.mul(a, b) if a == nil or b == nil then return nil end return a * b end
function R.fdiv(a, b) if a == nil or b == nil then return nil end return a / b end
function R.idiv(a, b, where)
  if a == nil or b == nil then return nil end
  if b == 0 then fail(where, "division by zero") end
  local q = a // b
  if q < 0 and q * b ~= a then q = q + 1 end -- truncate toward zero, as Java does
  return q
end
function R.mod(a, b, where)
  if a == nil or b == nil then return nil end
  if math.type(a) == "integer" and math.type(b) == "integer" then
    if b == 0 then fail(where, "division by zero") end
    return math.fmod(a, b)
  end
  return math.fmod(a, b)
end
function R.neg(a) if a == nil then return nil end return -a end
function R.eq(a, b) if a == nil or b == nil then return nil end return a == b end
function R.ne(a, b) if a == nil or b == nil then return nil end return a ~= b end
function R.lt(a, b) if a == nil or b == nil then return nil end return a < b end
function R.le(a, b) if a == nil or b == nil then return nil end return a <= b end
function R.gt(a, b) if a == nil or b == nil then return nil end return a > b end
function R.ge(a, b) if a == nil or b == nil then return nil end return a >= b end
-- three-valued logic
function R.and_(a, b)
  if a == false or b == false then return false end
  if a == nil or b == nil then return nil end
  return true
end
function R.or_(a, b)
  if a == true or b == true then return true end
  if a == nil or b == nil then return nil end
  return false
end
function R.not_(a) if a == nil then return nil end return not a end
function R.concat(...)
  local n = select("#", ...)
  for i = 1, n do if select(i, ...) == nil then return nil end end
  return table.concat({...}, "", 1, n)
end

local like_cache = {}
function R.like(s, pat)
  if s == nil or pat == nil then return nil end
  local lp = like_cache[pat]
  if not lp then
    lp = "^" .. pat:gsub("[%^%$%(%)%.%[%]%*%+%-%?%%_]", function(ch)
      if ch == "%" then return ".*" end
      if ch == "_" then return "." end
      return "%" .. ch
    end) .. "$"
    like_cache[pat] = lp
  end
  return s:find(lp) ~= nil
end
function R.upper(s) if s == nil then return nil end return s:upper() end
function R.lower(s) if s == nil then return nil end return s:lower() end
function R.char_length(s)
  if s == nil then return nil end
  return utf8.len(s) or #s
end
function R.substring(s, start, len, where)
  if s == nil or start == nil then return nil end
  local n = utf8.len(s)
  local function sub(i, j)
    if not n then return s:sub(i, j) end
    if i > n then return "" end
    local bi = utf8.offset(s, i)
    local bj = (j >= n) and #s or (utf8.offset(s, j + 1) - 1)
    return s:sub(bi, bj)
  end
  if start < 1 then start = 1 end
  if len == nil then return sub(start, math.maxinteger) end
  if len < 0 then fail(where, "SUBSTRING: negative length " .. len) end
  if len == 0 then return "" end
  return sub(start, start + len - 1)
end
function R.trim(s) if s == nil then return nil end return trim(s) end
function R.hour(ts) if ts == nil then return nil end return ts // 3600000 % 24 end
-- Flink's SPLIT_INDEX (commons-lang splitByWholeSeparatorPreserveAllTokens): empty pieces
-- count, "" has no pieces, an empty separator splits at each whitespace character
function R.split_index(s, sep, i)
  if s == nil or sep == nil or i == nil or i < 0 or s == "" then return nil end
  local pat, plain = sep, true
  if sep == "" then pat, plain = "%s", false end
  local beg = 1
  for _ = 1, i do
    local _, e = s:find(pat, beg, plain)
    if not e then return nil end
    beg = e + 1
  end
  local e = s:find(pat, beg, plain)
  return s:sub(beg, e and e - 1 or #s)
end
-- REGEXP_EXTRACT (wm.sql.regex): at most 64 patterns compiled at a time
local regex_cache, regex_cached = {}, 0
function R.regexp_extract(s, pat, index, where)
  if pat ~= nil and not regex_cache[pat] then
    regex_cached = regex_cached + 1
    if regex_cached > 64 then regex_cache, regex_cached = {}, 1 end
  end
  return require("wm.sql.regex").extract(regex_cache, s, pat, index, function(msg) fail(where, msg) end)
end
-- DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'): the pattern compiled once into pieces (M.date_pattern)
local date_cache = {}
function R.date_format(ts, fmt, where)
  if ts == nil or fmt == nil then return nil end
  if type(ts) == "string" then
    ts = M.parse_timestamp(ts)
    if ts == nil then return nil end
  end
  local pieces = date_cache[fmt]
  if not pieces then
    local err
    pieces, err = M.date_pattern(fmt)
    if not pieces then fail(where, "DATE_FORMAT: " .. err) end
    date_cache[fmt] = pieces
  end
  local secs = ts // 1000
  local d = os.date("!*t", secs)
  local parts = {}
  for i, p in ipairs(pieces) do
    if type(p) == "string" then parts[i] = p
    else parts[i] = p(d, ts % 1000) end
  end
  return table.concat(parts)
end
function R.abs(a) if a == nil then return nil end return math.abs(a) end
function R.coalesce(...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if v ~= nil then return v end
  end
  return nil
end
function R.if_(c, a, b) if c == true then return a end return b end
function R.between(v, lo, hi) return R.and_(R.ge(v, lo), R.le(v, hi)) end
function R.in_(v, ...)
  if v == nil then return nil end
  local saw_null = false
  for i = 1, select("#", ...) do
    local x = select(i, ...)
    if x == nil then saw_null = true elseif x == v then return true end
  end
  if saw_null then return nil end
  return false
end
-- `v IN (literals)`: `set` holds the literals as keys (Lua keys make 1 and 1.0 one key, as
-- `=` does); `has_null` when one of them is NULL.
function R.in_set(v, set, has_null)
  if v == nil then return nil end
  if set[v] then return true end
  if has_null then return nil end
  return false
end

-- Parts of compiled expressions loaded as functions of their own (expr.lua, `hoist`), so that
-- no generated chunk nests deeper than Lua's parser allows: R.hoisted[i](r, k, a, ws, we).
R.hoisted = {}

function R.to_ts_ltz(v, precision)
  if v == nil then return nil end
  if precision == 0 then return math.tointeger(v * 1000) or math.floor(v * 1000) end
  return math.tointeger(v) or math.floor(v)
end
-- casts: `from` and `to` are type names; `try` gives NULL instead of an error; `where` as for fail
function R.cast(v, from, to, try, where)
  if v == nil then return nil end
  if from == to then return v end
  if to == "STRING" then return M.to_string(v, from) end
  if from == "STRING" then
    local r, why = M.parse(v, to)
    if r == nil then
      if try then return nil end
      fail(where, string.format("CAST('%s' AS %s) failed: %s", v, to, why))
    end
    return r
  end
  if to == "DOUBLE" then
    if from == "BOOLEAN" then return v and 1.0 or 0.0 end
    return v + 0.0
  end
  if to == "INT" or to == "BIGINT" then
    if from == "BOOLEAN" then return v and 1 or 0 end
    if math.type(v) == "float" then
      if v ~= v or v == math.huge or v == -math.huge then
        if try then return nil end
        fail(where, "CAST(" .. M.format_double(v) .. " AS " .. to .. ") failed")
      end
      local t = v >= 0 and math.floor(v) or math.ceil(v)
      return math.tointeger(t)
    end
    return v
  end
  if to == "BOOLEAN" then return v ~= 0 end
  if (to == "TIMESTAMP" or to == "TIMESTAMP_LTZ") and (from == "TIMESTAMP" or from == "TIMESTAMP_LTZ") then
    return v
  end
  if try then return nil end
  fail(where, "cannot CAST " .. from .. " AS " .. to)
end
function R.truth(v) return v == true end

-- CURRENT_WATERMARK(rt): the operator that evaluates the expression sets `R.wm.now` (nil
-- before the first watermark) right before it calls the compiled function.
R.wm = {now = nil}
function R.cur_wm() return R.wm.now end
-- PROCTIME(): the operator that evaluates it sets `R.wm.proc` (wm.sql.plan.proctime); elsewhere
-- (a computed column of a table, a lookup join's probe) it is `R.proc_clock()`, the wall clock
-- that wm.sql.plan.temporal_join installs (a spec may replace it)
function R.proctime()
  local p = R.wm.proc
  if p == nil and R.proc_clock then p = R.proc_clock() end
  return p
end

-- Functions written in Lua are called through R.hoisted (wm.sql.functions, scalar_entry).

-- A ROW column that is NULL (the nexmark source's `bid` of a person event): its fields are
-- read from this empty table, so they are NULL too.
R.NOROW = setmetatable({}, {__newindex = function() error("internal error: NOROW is read-only", 2) end})

return M
