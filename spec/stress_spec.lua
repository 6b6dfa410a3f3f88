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
end)
