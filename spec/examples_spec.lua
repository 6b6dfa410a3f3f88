-- End to end: every example with an expected output prints exactly that output.
local h = require("helper")

local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]*\n?") do if l ~= "" then t[#t + 1] = l:gsub("\n$", "") end end
  return t
end

describe("examples with an expected output", function()
  local dir = h.root .. "/examples/expected"
  local p = io.popen('ls "' .. dir .. '"')
  local names = {}
  for f in p:lines() do names[#names + 1] = f:match("^(.*)%.expected$") end
  p:close()
  assert.is_true(#names >= 2)
  for _, name in ipairs(names) do
    local job = h.root .. "/examples/" .. name .. ".lua"
    local f = io.open(job)
    if f then
      f:close()
      it(name .. " matches its expected file", function()
        local out, err, code = h.wmrun('"' .. job .. '"')
        assert.are.equal("", err)
        assert.are.equal(0, code)
        local want = h.read(dir .. "/" .. name .. ".expected")
        if name:match("parallel") then
          -- the instance prefix depends on the key's hash: compare without it
          out = out:gsub("%f[^\n%z]%d+> ", "")
          local a, b = lines(out), lines(want)
          table.sort(a)
          table.sort(b)
          assert.are.same(b, a)
        else
          assert.are.equal(want, out)
        end
      end)
    end
  end
end)

-- SQL examples: every examples/sql/NAME.sql with examples/sql/NAME.expected, run with --sql.
describe("SQL examples with an expected output", function()
  local dir = h.root .. "/examples/sql"
  local p = io.popen('ls "' .. dir .. '"')
  local names = {}
  for f in p:lines() do names[#names + 1] = f:match("^(.*)%.expected$") end
  p:close()
  assert.is_true(#names >= 3)
  for _, name in ipairs(names) do
    it(name .. ".sql matches its expected file", function()
      local out, err, code = h.wmrun('--sql "' .. dir .. "/" .. name .. '.sql"')
      assert.are.equal("", err)
      assert.are.equal(0, code)
      assert.are.equal(h.read(dir .. "/" .. name .. ".expected"), out)
    end)
  end
end)

-- Lab examples: every examples/lab/NAME.lua with examples/lab/NAME.expected, run with `wmrun lab`.
describe("lab examples with an expected output", function()
  local dir = h.root .. "/examples/lab"
  local p = io.popen('ls "' .. dir .. '"')
  local names = {}
  for f in p:lines() do names[#names + 1] = f:match("^(.*)%.expected$") end
  p:close()
  assert.is_true(#names >= 1)
  for _, name in ipairs(names) do
    it(name .. ".lua matches its expected file", function()
      local out, err, code = h.wmrun('lab "' .. dir .. "/" .. name .. '.lua"')
      assert.are.equal("", err)
      assert.are.equal(0, code)
      assert.are.equal(h.read(dir .. "/" .. name .. ".expected"), out)
    end)
  end
end)
