-- Records that are Lua tables with a metatable, read and written by the declarative
-- operators (key_by("id"), with_timestamp_field, sum("vc"), rolling sum): the metatable's
-- __index / __newindex run under a protected call (bindings/lwm_bridge.c), so an error in
-- them fails the job with a message that names the field, the operator and the record,
-- instead of unwinding through the core and libuv (issue 27, "Also").
local h = require("helper")

local HEAD = [[
local wm = require("wm")
local env = wm.env()
local bad = {__index = function(_, k) error("no field " .. k .. " here") end}
]]

-- Runs the job; checks that it failed as a data error (exit 1, no traceback of the execute
-- call) whose message has every piece of `want`.
local function fails_with(body, want)
  local out, err, code = h.run_job(HEAD .. body)
  assert.are.equal(1, code, "exit code; stderr:\n" .. err)
  assert.are.equal("", out)
  for _, w in ipairs(want) do
    assert.is_truthy(err:find(w, 1, true), "missing '" .. w .. "' in:\n" .. err)
  end
  assert.is_falsy(err:find("stack traceback", 1, true), "a traceback:\n" .. err)
  assert.is_falsy(err:find("AddressSanitizer", 1, true), err)
  return err
end

describe("a record whose metatable raises", function()
  it("fails key_by(\"id\") naming the field, the operator and the record", function()
    fails_with([[
env:from_elements(1, 2, 3)
  :map(function(x) return setmetatable({vc = x}, bad) end)
  :key_by("id")
  :sum("vc")
  :print()
env:execute()
]], {"wmrun: reading field 'id' of the record raised an error: ", ":3: no field id here",
     "(key_by on record {\"vc\":1})", "\n  in operator 'rolling sum(vc) (", "while reading element 1 of from_elements"})
  end)

  it("fails with_timestamp_field naming the operator", function()
    fails_with([[
env:from_elements(1, 2, 3)
  :map(function(x) return setmetatable({vc = x}, bad) end)
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :print()
env:execute()
]], {"wmrun: reading field 'ts' of the record raised an error: ", ":3: no field ts here",
     " (with_timestamp_field('ts') on record {\"vc\":1})\n  in operator 'timestamps/watermarks ("})
  end)

  it("fails a window's sum(\"vc\") naming the operator", function()
    fails_with([[
env:from_elements(1, 2, 3)
  :map(function(x) return setmetatable({id = "k", ts = x * 1000}, bad) end)
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("10s"))
  :sum("vc")
  :print()
env:execute()
]], {"wmrun: reading field 'vc' of the record raised an error: ", ":3: no field vc here",
     " (sum('vc') on record {\"id\":\"k\",\"ts\":1000})\n  in operator 'tumbling window sum(vc) ("})
  end)

  it("fails a rolling sum whose copy's __newindex raises, naming the operator", function()
    fails_with([[
local ro = {__index = function(_, k) if k == "vc" then return 1 end end,
            __newindex = function(_, k) error("read-only record, cannot set " .. k) end}
env:from_elements(1, 2)
  :map(function() return setmetatable({id = "k"}, ro) end)
  :key_by("id")
  :sum("vc")
  :print()
env:execute()
]], {"wmrun: setting field 'vc' of the record raised an error: ", ":5: read-only record, cannot set vc",
     " (sum('vc') on record {\"id\":\"k\"})\n  in operator 'rolling sum(vc) ("})
  end)

  it("keeps a string that __index made alive while the record is (a composite key)", function()
    -- each __index call collects first: without an anchor, the string of field a is gone
    -- (its memory reused for b's) by the time the key is composed
    local out, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env()
local mt = {__index = function(t, k)
  collectgarbage()
  return k .. ":" .. string.rep("x", 60) .. ":" .. t.n
end}
env:from_elements(1, 2, 3)
  :map(function(x) return setmetatable({n = x % 2}, mt) end)
  :key_by{"a", "b"}
  :process(function(_, ctx, out) out(ctx.key[1]:sub(1, 2) .. ctx.key[1]:sub(-2) .. " "
    .. ctx.key[2]:sub(1, 2) .. ctx.key[2]:sub(-2)) end)
  :print()
env:execute()
]])
    assert.are.equal(0, code, err)
    assert.are.equal("a::1 b::1\na::0 b::0\na::1 b::1\n", out)
  end)
end)
