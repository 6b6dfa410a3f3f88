-- A row from C reaches map/filter/flat_map in one table refilled per row, but only when the
-- function provably only reads that table's fields (bindings/lwm_escape.c reads its
-- bytecode). These specs check the proof's answers, and that jobs whose functions keep,
-- change or pass on their argument still see a table of their own per row.
-- luacheck: globals wm_spec_last_row
local h = require("helper")
local wm = require("wm")

local reads_only = wm.core._reads_arg_only

local function job(body)
  return 'local wm = require("wm")\nlocal env = wm.env{ watermark_interval = 0 }\n' .. body ..
    '\nenv:execute()\n'
end

describe("row tables refilled per row", function()
  it("are given to functions that only read fields of their argument", function()
    local up = {}
    local yes = {
      function(r) return { id = r.id, ts = r.ts, vc = r.vc } end,
      function(r) return r.vc > 3 end,
      function(r) return r.id .. "|" .. tostring(r.n) .. string.format("%d", r.vc * 2 + 1) end,
      function(r) local k = "id" return r[k], r[1] end,
      function(r) up[#up + 1] = r.id return #up end, -- keeps a field, not the table
      function(r, out) out(r.id) out({ r.vc }) end,   -- flat_map: fields passed on
      function(r) local f = function(x) return x + 1 end return f(r.n) end, -- no capture of r
      function(r) if r.a == nil then return 0 end return r.a end,
      function(r) for i = 1, r.n do up[i] = r.id end return true end,
    }
    for i, f in ipairs(yes) do
      assert.is_true(reads_only(f), "function " .. i)
    end
  end)

  it("are not given to functions that could keep, change or pass on their argument", function()
    local kept = {}
    local no = {
      function(r) return r end,
      function(r) local t = r return t.id end,
      function(r) kept[#kept + 1] = r return r.id end,
      function(r) wm_spec_last_row = r return 1 end,  -- a global
      function(r) kept.last = r return 1 end,          -- a field of another table
      function(r) return { r } end,
      function(r) r.x = 1 return r.id end,             -- changes it
      function(r) r[1] = 2 return r.id end,
      function(r) return function() return r.id end end, -- captured by a closure
      function(r) return tostring(r) end,              -- passed to a call
      function(r) return setmetatable(r, {}) end,
      function(r) for k in pairs(r) do kept[k] = true end return 1 end,
      function(r) return #r end,
      function(r) if r then return 1 end end,
      function(r) return r == kept end,
      function(r) return r:method() end,
      function(r) r = r.x return r end,                -- the parameter is assigned
      function(r, out) out(r) end,                     -- flat_map passing the row on
      function(...) return (...).id end,               -- vararg
      function() return 1 end,                         -- no parameter
      print,                                            -- a C function
    }
    for i, f in ipairs(no) do
      assert.is_false(reads_only(f), "function " .. i)
    end
  end)

  it("keep every row a function keeps its own (the analysis says no to them)", function()
    local data = h.write_tmp("a,1\nb,2\nc,3\n", ".csv")
    local out, err, code = h.run_job(job(([[
local kept, changed = {}, {}
env:read_lines(%q):parse_csv{"id", "n:integer"}
  :map(function(r) kept[#kept + 1] = r return r.id end):print("m")
env:read_lines(%q):parse_csv{"id", "n:integer"}
  :filter(function(r) r.seen = (r.seen or 0) + 1 changed[#changed + 1] = r.seen return true end)
  :print("f")
env:execute()
for _, r in ipairs(kept) do print(r.id, r.n) end
print(table.concat(changed, ","))
do return end]]):format(data, data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local lines = {}
    for l in out:gmatch("[^\n]+") do
      if not l:find("^[mf]>") then lines[#lines + 1] = l end
    end
    -- one table per row: three rows kept with their values; each row seen once
    assert.are.same({ "a\t1", "b\t2", "c\t3", "1,1,1" }, lines)
    os.remove(data)
  end)

  it("refill every field of a refilled table: an empty optional field is nil, a schema its own", function()
    local a = h.write_tmp("x,1,5\ny,2,\nz,3,7\n", ".csv")
    local b = h.write_tmp("9,q\n", ".csv")
    local out, err, code = h.run_job(job(([[
local s1 = env:read_lines(%q):parse_csv{"id", "n:integer", "v:integer?"}
local s2 = env:read_lines(%q):parse_csv{"n:integer", "id"}
local function show(r) return r.id .. " " .. r.n .. " " .. tostring(r.v) end
s1:map(show):print("a")
s1:filter(function(r) return r.v == nil end):map(show):print("nil")
s1:union(s2):map(show):print("u")
s1:flat_map(function(r, out) out(r.id .. tostring(r.v)) end):print("fm")
s1:key_by(function(r) return r.v or "none" end):sum("n"):print("k")
s1:assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("10s")
    :with_timestamp_assigner(function(r) return (r.v or 0) * 1000 end))
  :key_by("id"):window(wm.windows.tumbling("1s"))
  :process(function(key, ctx, _records, out) out(key .. "@" .. ctx.window.start) end):print("ts")]]):format(a, b)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local got = {}
    for l in out:gmatch("[^\n]+") do got[#got + 1] = l end
    table.sort(got)
    assert.are.same({
      "a> x 1 5", "a> y 2 nil", "a> z 3 7",
      "fm> x5", "fm> ynil", "fm> z7",
      'k> {"id":"x","n":1,"v":5}', 'k> {"id":"y","n":2}', 'k> {"id":"z","n":3,"v":7}',
      "nil> y 2 nil",
      "ts> x@5000", "ts> y@0", "ts> z@7000",
      "u> q 9 nil", "u> x 1 5", "u> y 2 nil", "u> z 3 7",
    }, got)
    assert.is_true(reads_only(function(r) return r.id .. " " .. r.n .. " " .. tostring(r.v) end))
    assert.is_true(reads_only(function(r) return (r.v or 0) * 1000 end))
    os.remove(a)
    os.remove(b)
  end)
end)
