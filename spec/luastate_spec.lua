-- wmrun's Lua states (bindings/lwm_state.c): every state, the main one and each worker
-- thread's, gets its memory from a pool of its own and keeps what luaL_newstate sets up.
local h = require("helper")

describe("Lua states", function()
  it("warn() behaves as in lua5.4: off until @on, parts joined, on every thread", function()
    local out, err, code = h.run_job([[
local wm = require("wm")
warn("not shown")
warn("@on")
warn("thread ", tostring(wm.thread()), " says hi")
warn("@off")
warn("not shown either")
local env = wm.env{parallelism = 2, threads = 2}
env:from_elements({1, 2, 3}):map(function(x) return x * 2 end):print()
env:execute()
]])
    assert.are.equal(0, code, err)
    local n = 0
    for line in err:gmatch("[^\n]+") do
      assert.matches("^Lua warning: thread %d+ says hi$", line)
      n = n + 1
    end
    assert.are.equal(2, n) -- the main thread and the worker
    local got = {}
    for l in out:gmatch("[^\n]+") do got[#got + 1] = l:gsub("^%d+> ", "") end
    table.sort(got)
    assert.are.same({ "2", "4", "6" }, got)
  end)

  it("a job that allocates and frees many tables and strings gives exact results", function()
    local out, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local data = {}
for i = 1, 20000 do data[i] = i end
env:from_elements(data)
  :map(function(i) return { k = "key" .. (i % 97), v = i, pad = string.rep("x", i % 700) } end)
  :key_by(function(r) return r.k end)
  :count_window(1000)
  :reduce(function(a, b) return { k = a.k, v = a.v + b.v, pad = "" } end)
  :map(function(r) return r.k .. "=" .. r.v end)
  :print()
env:execute()
]])
    assert.are.equal(0, code, err)
    -- expected by arithmetic: key j gets i = j, j+97, ...; count windows of 1000 per key
    local want = {}
    for j = 0, 96 do
      local vals = {}
      for i = 1, 20000 do if i % 97 == j then vals[#vals + 1] = i end end
      for w = 0, #vals // 1000 - 1 do
        local s = 0
        for q = w * 1000 + 1, w * 1000 + 1000 do s = s + vals[q] end
        want[#want + 1] = "key" .. j .. "=" .. s
      end
    end
    table.sort(want)
    local got = {}
    for l in out:gmatch("[^\n]+") do got[#got + 1] = l end
    table.sort(got)
    assert.are.same(want, got)
  end)
end)
