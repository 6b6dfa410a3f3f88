--- Exact JSON integers for parse_json (docs/io.md).
--
-- lua-cjson (Debian's 2.1.0) decodes every number to a double, which holds integers exactly
-- only up to 2^53: `{"ts":1700000000000000001}` would become ...000 without a word, and it
-- has no option to keep integers. parse_json decodes a line with cjson as it is, unless the
-- line has a run of 16 digits or more (the only way to write an integer beyond 2^53; the C
-- side checks that, so other lines pay nothing). Such a line goes through `exact_decoder`:
-- every integer literal beyond 2^53 is swapped for a stand-in number that the line does not
-- hold, cjson decodes the result, and the stand-ins are replaced by the exact 64-bit
-- integers. An integer literal beyond the 64-bit range is an error naming the field.
-- @module wm.json
local M = {}

local TWO53 = 9007199254740992
local MAX_DEPTH = 1000 -- cjson's default decode_max_depth

-- The integer literals of `line` outside strings that a double cannot hold exactly:
-- a list of {from, to, value}; and the values of every number literal (for the stand-ins).
-- Raises for an integer beyond 64 bits, naming the field (the last key seen before it).
local function scan(line)
  local big, seen = {}, {}
  local pos, n, key = 1, #line, nil
  while pos <= n do
    local c = line:sub(pos, pos)
    if c == '"' then
      local i = pos + 1
      while true do
        local q = line:find('["\\]', i)
        if not q then return big, seen end -- unterminated: cjson reports it
        if line:sub(q, q) == "\\" then i = q + 2 else i = q break end
      end
      local after = line:match("^%s*:", i + 1)
      if after then key = line:sub(pos + 1, i - 1) end
      pos = i + 1
    elseif c == "-" or c:match("%d") then
      local lit = line:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not lit or lit == "-" then pos = pos + 1 else
        local v = tonumber(lit)
        if v then seen[v] = true end
        if lit:match("^-?%d+$") and #lit >= 16 then
          if math.type(v) ~= "integer" then
            error(string.format("%sthe integer %s is beyond the 64-bit range (%d to %d)",
              key and ("field '" .. key .. "': ") or "", lit, math.mininteger, math.maxinteger), 0)
          end
          if v > TWO53 or v < -TWO53 then big[#big + 1] = {pos, pos + #lit - 1, v} end
        end
        pos = pos + #lit
      end
    else
      pos = pos + 1
    end
  end
  return big, seen
end

local function restore(t, stand, depth)
  if depth > MAX_DEPTH then return end
  for k, v in pairs(t) do
    if math.type(v) == "float" and stand[v] then t[k] = stand[v]
    elseif type(v) == "table" then restore(v, stand, depth + 1) end
  end
end

--- A decoder `fn(line) -> value` that keeps integers beyond 2^53 exact, over cjson's
-- `decode` (it raises as `decode` does, and for integers beyond 64 bits).
-- @tparam function decode lua-cjson's decode (of the parse_json instance)
-- @treturn function
function M.exact_decoder(decode)
  return function(line)
    local big, seen = scan(line)
    if #big == 0 then return decode(line) end
    local parts, stand, last, k = {}, {}, 1, 0
    for _, b in ipairs(big) do
      local s
      repeat k = k + 1 s = -(k + 0.25) until not seen[s] -- exact in a double, and printed exactly
      stand[s] = b[3]
      parts[#parts + 1] = line:sub(last, b[1] - 1)
      parts[#parts + 1] = string.format("%.2f", s)
      last = b[2] + 1
    end
    parts[#parts + 1] = line:sub(last)
    local v = decode(table.concat(parts))
    if type(v) == "table" then restore(v, stand, 1)
    elseif math.type(v) == "float" and stand[v] then v = stand[v] end
    return v
  end
end

return M
