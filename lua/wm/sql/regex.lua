--- Regular expressions for SQL's REGEXP_EXTRACT: the part of Java's syntax (java.util.regex,
-- which Flink uses) that queries use, matched by backtracking as Java does (leftmost match,
-- greedy quantifiers unless followed by `?`, alternatives tried left to right):
-- literals, `.`, `[...]` and `[^...]` with ranges, `\d \D \w \W \s \S`, escaped punctuation,
-- `\t \n \r`, `^` and `$` (the whole input), `\b`, groups `(...)` and `(?:...)`, `|`, and the
-- quantifiers `* + ? {n} {n,} {n,m}` (each with a lazy `?` form).
-- Anything else (back-references, look-around, possessive quantifiers, flags, `\Q`, Unicode
-- classes) is an error naming it, never a silently different match. `.` and classes match
-- bytes; `.` takes a whole UTF-8 character.
-- @module wm.sql.regex
local M = {}

local function class_of(set, ch)
  if ch == "d" or ch == "D" then for b = 48, 57 do set[b] = true end
  elseif ch == "w" or ch == "W" then
    for b = 48, 57 do set[b] = true end
    for b = 65, 90 do set[b] = true end
    for b = 97, 122 do set[b] = true end
    set[95] = true
  elseif ch == "s" or ch == "S" then
    for _, b in ipairs({9, 10, 11, 12, 13, 32}) do set[b] = true end
  else
    return false
  end
  return true
end

local function negate(set)
  local out = {}
  for b = 0, 255 do out[b] = not set[b] or nil end
  return out
end

local ESCAPES = {t = "\t", n = "\n", r = "\r", f = "\f", e = "\27", a = "\7"}

--- Compiles `pat`. Returns a function `find(s)` -> start, stop (inclusive) and the groups
-- (a list of {start, stop} or false), or nil when nothing matches; or nil and an error
-- message when the pattern has something this module does not take.
function M.compile(pat)
  local pos, ngroups = 1, 0
  local st = {} -- per match: s, n, cs, ce
  local function fail(msg) error({regex = msg .. " (at character " .. pos .. " of the pattern)"}, 0) end
  local function peek() return pat:sub(pos, pos) end

  -- node constructors: each a function m(i, k) that matches at i and calls k(j), false if none
  local function byteset(set, utf8dot)
    return function(i, k)
      local b = st.s:byte(i)
      if not b or not set[b] then return false end
      local j = i + 1
      if utf8dot and b >= 0xC0 then
        while j <= st.n and st.s:byte(j) >= 0x80 and st.s:byte(j) < 0xC0 do j = j + 1 end
      end
      return k(j)
    end
  end
  local function literal(c)
    return function(i, k)
      if st.s:byte(i) ~= c then return false end
      return k(i + 1)
    end
  end
  local function is_word(i)
    local b = st.s:byte(i)
    return b and (b == 95 or (b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122)) or false
  end

  local parse_alt

  local function parse_class()
    -- after '['
    local set, neg = {}, false
    if peek() == "^" then neg, pos = true, pos + 1 end
    local first = true
    while true do
      local c = peek()
      if c == "" then fail("an unclosed '['") end
      if c == "]" and not first then pos = pos + 1 break end
      first = false
      local lo
      if c == "\\" then
        local e = pat:sub(pos + 1, pos + 1)
        pos = pos + 2
        local sub = {}
        if class_of(sub, e:lower()) then
          if e:match("%u") then sub = negate(sub) end
          for b in pairs(sub) do set[b] = true end
        elseif ESCAPES[e] then lo = ESCAPES[e]:byte()
        elseif e:match("%p") then lo = e:byte()
        else fail("'\\" .. e .. "' in a character class is not supported")
        end
      elseif c == "[" or (c == "&" and pat:sub(pos + 1, pos + 1) == "&") then
        fail("nested classes and '&&' in a character class are not supported")
      else
        lo, pos = c:byte(), pos + 1
      end
      if lo then
        if peek() == "-" and pat:sub(pos + 1, pos + 1) ~= "]" and pat:sub(pos + 1, pos + 1) ~= "" then
          local hi = pat:sub(pos + 1, pos + 1)
          if hi == "\\" then
            local e = pat:sub(pos + 2, pos + 2)
            hi = ESCAPES[e] or (e:match("%p") and e) or fail("'\\" .. e .. "' as the end of a range")
            pos = pos + 3
          else
            pos = pos + 2
          end
          for b = lo, hi:byte() do set[b] = true end
        else
          set[lo] = true
        end
      end
    end
    return byteset(neg and negate(set) or set)
  end

  local function parse_atom()
    local c = peek()
    if c == "(" then
      pos = pos + 1
      local g
      if pat:sub(pos, pos) == "?" then
        if pat:sub(pos + 1, pos + 1) ~= ":" then fail("'(?" .. pat:sub(pos + 1, pos + 1) .. "' is not supported") end
        pos = pos + 2
      else
        ngroups = ngroups + 1
        g = ngroups
      end
      local inner = parse_alt()
      if peek() ~= ")" then fail("an unclosed '('") end
      pos = pos + 1
      if not g then return inner end
      return function(i, k)
        return inner(i, function(j)
          local cs, ce = st.cs, st.ce
          local os, oe = cs[g], ce[g]
          cs[g], ce[g] = i, j - 1
          if k(j) then return true end
          cs[g], ce[g] = os, oe
          return false
        end)
      end
    elseif c == "[" then
      pos = pos + 1
      return parse_class()
    elseif c == "." then
      pos = pos + 1
      local set = {}
      for b = 0, 255 do if b ~= 10 and b ~= 13 and (b < 0x80 or b >= 0xC0) then set[b] = true end end
      return byteset(set, true)
    elseif c == "^" then
      pos = pos + 1
      return function(i, k) if i ~= 1 then return false end return k(i) end
    elseif c == "$" then
      pos = pos + 1
      return function(i, k)
        local n = st.n
        if i == n + 1 or (i == n and st.s:byte(n) == 10) then return k(i) end
        return false
      end
    elseif c == "\\" then
      local e = pat:sub(pos + 1, pos + 1)
      pos = pos + 2
      local set = {}
      if class_of(set, e:lower()) then
        if e:match("%u") then set = negate(set) end
        return byteset(set)
      end
      if e == "b" or e == "B" then
        local want = e == "b"
        return function(i, k)
          if (is_word(i - 1) ~= is_word(i)) ~= want then return false end
          return k(i)
        end
      end
      if ESCAPES[e] then return literal(ESCAPES[e]:byte()) end
      if e ~= "" and e:match("%p") then return literal(e:byte()) end
      fail("'\\" .. e .. "' is not supported")
    elseif c == "*" or c == "+" or c == "?" or c == "{" then
      fail("'" .. c .. "' with nothing to repeat")
    end
    pos = pos + 1
    return literal(c:byte())
  end

  local function repeat_of(m, min, max, lazy)
    local function rep(i, k, count)
      if lazy then
        if count >= min and k(i) then return true end
        if count < max then
          return m(i, function(j) if j == i and count >= min then return false end return rep(j, k, count + 1) end)
        end
        return false
      end
      if count < max and m(i, function(j)
        if j == i and count >= min then return false end -- an empty match ends the loop
        return rep(j, k, count + 1)
      end) then
        return true
      end
      if count >= min then return k(i) end
      return false
    end
    return function(i, k) return rep(i, k, 0) end
  end

  local function parse_seq()
    local items = {}
    while true do
      local c = peek()
      if c == "" or c == "|" or c == ")" then break end
      local m = parse_atom()
      local q = peek()
      local min, max
      if q == "*" then min, max, pos = 0, math.huge, pos + 1
      elseif q == "+" then min, max, pos = 1, math.huge, pos + 1
      elseif q == "?" then min, max, pos = 0, 1, pos + 1
      elseif q == "{" then
        local a, b, close = pat:match("^{(%d+)(,?%d*)()}", pos)
        if not a then fail("'{' that is no {n}, {n,} or {n,m}") end
        min = tonumber(a)
        if b == "" then max = min elseif b == "," then max = math.huge else max = tonumber(b:sub(2)) end
        pos = close + 1
      end
      if min then
        local lazy = false
        if peek() == "?" then lazy, pos = true, pos + 1
        elseif peek() == "+" then fail("possessive quantifiers are not supported") end
        m = repeat_of(m, min, max, lazy)
      end
      items[#items + 1] = m
    end
    local n = #items
    if n == 0 then return function(i, k) return k(i) end end
    if n == 1 then return items[1] end
    local function at(idx)
      if idx > n then return nil end
      local m, rest = items[idx], at(idx + 1)
      if not rest then return m end
      return function(i, k) return m(i, function(j) return rest(j, k) end) end
    end
    return at(1)
  end

  parse_alt = function()
    local alts = {parse_seq()}
    while peek() == "|" do
      pos = pos + 1
      alts[#alts + 1] = parse_seq()
    end
    if #alts == 1 then return alts[1] end
    return function(i, k)
      for _, a in ipairs(alts) do if a(i, k) then return true end end
      return false
    end
  end

  local ok, root = pcall(function()
    local r = parse_alt()
    if pos <= #pat then fail("an unmatched ')'") end
    return r
  end)
  if not ok then
    if type(root) == "table" and root.regex then return nil, root.regex end
    error(root, 0)
  end

  return function(s)
    local n = #s
    st.s, st.n = s, n
    local stop
    local function done(j) stop = j - 1 return true end
    for start = 1, n + 1 do
      st.cs, st.ce = {}, {}
      if root(start, done) then
        local groups = {}
        for g = 1, ngroups do
          groups[g] = st.cs[g] and {st.cs[g], st.ce[g]} or false
        end
        return start, stop, groups
      end
    end
    return nil
  end, nil, ngroups
end

--- Flink's REGEXP_EXTRACT(s, regex[, index]): group `index` (0: the whole match) of the first
-- match, NULL when nothing matches, the group did not take part, or there is no such group.
-- `cache` maps patterns to compiled ones; a pattern this module does not take raises `fail`.
function M.extract(cache, s, pat, index, fail)
  if s == nil or pat == nil then return nil end
  index = index or 0
  local c = cache[pat]
  if not c then
    local find, err, ng = M.compile(pat)
    if not find then fail("REGEXP_EXTRACT: not supported yet: " .. err .. " in '" .. pat .. "'") end
    c = {find = find, ng = ng}
    cache[pat] = c
  end
  if index < 0 or index > c.ng then return nil end
  local a, b, groups = c.find(s)
  if not a then return nil end
  if index == 0 then return s:sub(a, b) end
  local g = groups[index]
  if not g then return nil end
  return s:sub(g[1], g[2])
end

return M
