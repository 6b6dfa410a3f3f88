-- The stress switches of docs/testing.md: WM_GCSTRESS (make gcstress) and WM_FAIL_ALLOC
-- (make alloc-sweep). The sweeps themselves are make targets; these check the switches.
local h = require("helper")

local function run_with(envvars, text)
  local p = h.write_tmp(text, ".lua")
  local out, err, code = h.sh(envvars .. " " .. h.wmrun_path() .. " " .. p)
  os.remove(p)
  return out, err, code
end

local job = [[
local wm = require("wm")
local env = wm.env{}
local collected = 0
env:from_elements(1, 2, 3)
  :map(function(x)
    -- garbage with a finalizer: collected before the next call only by a full collection
    setmetatable({}, {__gc = function() collected = collected + 1 end})
    return x .. ":" .. collected
  end)
  :print()
env:execute()
]]

describe("WM_GCSTRESS", function()
  it("runs a full garbage collection after every call of a user function", function()
    local out, err, code = run_with("WM_GCSTRESS=1", job)
    assert.are.equal(0, code, err)
    assert.are.equal("1:0\n2:1\n3:2\n", out)
  end)
end)

describe("WM_FAIL_ALLOC", function()
  it("makes the Lua state run out of memory at the Nth allocation: a clear error, exit 1", function()
    for _, n in ipairs({1, 2, 100, 1000}) do
      local out, err, code = run_with("WM_FAIL_ALLOC=" .. n, job)
      assert.are.equal(1, code, n .. ": " .. err)
      assert.are.equal("", out)
      assert.matches("^wmrun: [^\n]*not enough memory", err)
    end
  end)

  it("changes nothing when N is past the job's last allocation", function()
    local out, err, code = run_with("WM_FAIL_ALLOC=100000000", job)
    assert.are.equal(0, code, err)
    assert.are.equal(3, select(2, out:gsub("\n", "")))
  end)

  it("refuses a value that is not a positive integer", function()
    for _, v in ipairs({"0", "-3", "x", "12k"}) do
      local out, err, code = run_with("WM_FAIL_ALLOC=" .. v, job)
      assert.are.equal(1, code, v)
      assert.are.equal("", out)
      assert.are.equal("wmrun: cannot create the Lua state: WM_FAIL_ALLOC must be a positive integer "
        .. "(the allocation that fails first)\n", err)
    end
  end)

  -- the run phase of a job: its last allocations are made by the bindings (records, window
  -- results, out()) and the core's callbacks; under make asan a leak fails the run too
  it("ends with a clear error, or the whole output, when memory runs out at any of a job's last "
    .. "250 allocations", function()
    if os.getenv("WMRUN_VALGRIND") then return end -- 250 runs: too slow under valgrind
    local script = h.root .. "/examples/h_process_window_ordered.lua"
    local expected = h.read(h.root .. "/examples/expected/h_process_window_ordered.expected")
    local function run(n)
      return h.sh("WM_FAIL_ALLOC=" .. n .. " " .. h.wmrun_path() .. " " .. script)
    end
    -- the first N at which the job gets through: all of its allocations come before it
    local hi = 1
    while select(3, run(hi)) ~= 0 do hi = hi * 2 end
    local lo = hi // 2
    while hi - lo > 1 do
      local mid = (lo + hi) // 2
      if select(3, run(mid)) == 0 then hi = mid else lo = mid end
    end
    local bad = {}
    for n = math.max(1, hi - 250), hi do
      local out, err, code = run(n)
      local ok = (code == 0 and out == expected)
        or (code == 1 and (err:match("^wmrun: [^\n]*not enough memory")
                           or err:match("^wmrun: [^\n]*out of memory")))
      if not ok then bad[#bad + 1] = n .. ": exit " .. code .. ": " .. err:sub(1, 200) end
    end
    assert.are.same({}, bad)
  end)
end)
