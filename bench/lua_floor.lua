-- lua_floor.lua - what csv_lua's two Lua functions cost on their own, in plain Lua: no input,
-- no parsing, no windows, no output. The map and the reduce of bench/csv_lua.lua run over N
-- rows (one row table refilled, as wmrun gives it to a map that only reads its fields) of
-- 10^4 keys, folding each key's records as a reduce would. Whatever the engine does, csv_lua
-- cannot take less than this; issue 18's csv_lua target (2.5 times the plain-Lua framework)
-- leaves the engine the difference between the framework's time / 2.5 and this.
--   usage: lua5.4 bench/lua_floor.lua [N]   (default 3000000)
collectgarbage("generational") -- as wmrun runs jobs
local n = tonumber(arg and arg[1]) or 3000000
local map = function(r) return { id = r.id, ts = r.ts, vc = r.vc } end
local reduce = function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end
local ids = {}
for i = 1, 10000 do ids[i] = string.format("k%06d", i) end
local acc, row = {}, {}
local t0 = os.clock()
for i = 1, n do
  row.id = ids[(i * 7919) % 10000 + 1]
  row.ts = 1700000000000 + i
  row.vc = i % 100
  local m = map(row)
  local k = m.id
  local a = acc[k]
  acc[k] = a and reduce(a, m) or m
end
local t = os.clock() - t0
local sum = 0
for _, a in pairs(acc) do sum = sum + a.vc end
io.write(string.format("lua_floor: %d records, the two functions alone: %.3f s CPU (check %d)\n", n, t, sum))
