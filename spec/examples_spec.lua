-- End to end: every example with an expected output prints exactly that output.
local h = require("helper")

local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]*\n?") do if l ~= "" then t[#t + 1] = l:gsub("\n$", "") end end
  return t
end

-- the same lines, in any order
local function same_lines(want, out)
  local a, b = lines(out), lines(want)
  table.sort(a)
  table.sort(b)
  assert.are.same(b, a)
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
          same_lines(want, (out:gsub("%f[^\n%z]%d+> ", "")))
        else
          assert.are.equal(want, out)
        end
      end)
    end
  end
end)

-- Every DIR/NAME.EXT with a DIR/NAME.expected prints exactly that file when run as
-- `wmrun ARGS "DIR/NAME.EXT"`.
local function expected_outputs(title, sub, ext, args, at_least)
  describe(title, function()
    local dir = h.root .. "/examples/" .. sub
    local p = io.popen('ls "' .. dir .. '"')
    local names = {}
    for f in p:lines() do names[#names + 1] = f:match("^(.*)%.expected$") end
    p:close()
    assert.is_true(#names >= at_least)
    for _, name in ipairs(names) do
      it(name .. ext .. " matches its expected file", function()
        local out, err, code = h.wmrun(args .. ' "' .. dir .. "/" .. name .. ext .. '"')
        assert.are.equal("", err)
        assert.are.equal(0, code)
        local want = h.read(dir .. "/" .. name .. ".expected")
        if sub == "sql" and name:match("join") then
          -- a SQL join of two sources: its rows come as the pairs meet, in an order that depends on
          -- how the sources' records interleave (the set does not): compare the lines sorted
          same_lines(want, out)
        else
          assert.are.equal(want, out)
        end
      end)
    end
  end)
end

-- SQL examples: every examples/sql/NAME.sql with examples/sql/NAME.expected, run with --sql.
expected_outputs("SQL examples with an expected output", "sql", ".sql", "--sql", 3)
-- Lab examples: every examples/lab/NAME.lua with examples/lab/NAME.expected, run with `wmrun lab`.
expected_outputs("lab examples with an expected output", "lab", ".lua", "lab", 1)
-- Examples of jobs that combine streams: every examples/joins/NAME.lua with NAME.expected.
expected_outputs("join examples with an expected output", "joins", ".lua", "", 1)
