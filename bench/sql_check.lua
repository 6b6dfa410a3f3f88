-- bench/sql.sh's check: do the SQL changelog (`+I[id, cnt, start, end]`) and the Lua
-- count() output (`{"count":n,"key":"id","start":ms,"stop":ms}`) hold the same
-- (key, window start, count) triples? usage: lua5.4 bench/sql_check.lua sql.out lua.out
local values = dofile(arg[0]:gsub("[^/]*$", "") .. "../lua/wm/sql/values.lua")
local a, b, na, nb = {}, {}, 0, 0
for line in io.lines(arg[1]) do
  local id, n, ws = line:match("^%+I%[([^,]+), (%d+), ([^,]+), [^,]+%]$")
  assert(id, "bad SQL line: " .. line)
  local k = id .. " " .. values.parse_timestamp(ws) .. " " .. n
  a[k] = (a[k] or 0) + 1
  na = na + 1
end
for line in io.lines(arg[2]) do
  local n = line:match('"count":(%d+)')
  local id = line:match('"key":"([^"]+)"')
  local s = line:match('"start":(%-?%d+)')
  assert(n and id and s, "bad Lua line: " .. line)
  local k = id .. " " .. s .. " " .. n
  b[k] = (b[k] or 0) + 1
  nb = nb + 1
end
local bad = 0
for k, c in pairs(a) do if b[k] ~= c then bad = bad + 1 if bad <= 5 then print("only in SQL: " .. k) end end end
for k, c in pairs(b) do if a[k] ~= c then bad = bad + 1 if bad <= 10 then print("only in Lua: " .. k) end end end
if bad > 0 or na ~= nb then
  print(string.format("DIFFERENT: %d SQL rows, %d Lua rows, %d differences", na, nb, bad))
  os.exit(1)
end
print(string.format("same counts: %d windows", na))
