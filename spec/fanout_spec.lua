-- Fan-out and fan-in jobs with several file sinks under hard backpressure: every input line
-- must be accounted for in every output, at -p 1 and at -p 2 --threads 2 (issue 34, items 1
-- and 2: a job that stopped reading and exited 0, a job that hung on two threads).
local h = require("helper")

local N = 3000 -- input lines: the numbers 1..N
local SUM = N * (N + 1) // 2

-- A run that hangs must fail the spec, not hold it: the stall check should fail the job
-- long before this bound (it only matters when something is broken).
local function run(job, args)
  local p = h.write_tmp(job, ".lua")
  local out, err, code = h.sh("timeout -k 5 120 " .. h.wmrun_path() .. " --stall-timeout 20s " .. args .. " " .. p)
  os.remove(p)
  return out, err, code
end

-- count and sum of the integers of a file, one a line (the families read some 3 million
-- lines: the message is made only for a line that is no integer)
local function tally(path)
  local n, s = 0, 0
  local tointeger, tonum = math.tointeger, tonumber
  for l in io.lines(path) do
    n = n + 1
    local v = tointeger(tonum(l))
    if not v then error("not an integer line: " .. l) end
    s = s + v
  end
  return n, s
end

local function input(dir)
  local path = dir .. "/in.txt"
  local f = assert(io.open(path, "wb"))
  for i = 1, N do f:write(i, "\n") end
  f:close()
  return path
end

-- A random job: branches off one source, each a chain of stages whose effect on the count
-- and the sum of the numbers is known; some branches are unioned into one sink. Returns the
-- job's text and, per output file, the expected {count, sum}.
local function random_job(seed, dir, inpath)
  local rng = seed
  local function rand(a, b) -- a small LCG: the same job for a seed on every machine
    rng = (rng * 1103515245 + 12345) % 2147483648
    return a + rng % (b - a + 1)
  end
  local high = ({256, 1024, 4096, 65536})[rand(1, 4)]
  local lines = {
    "local wm = require('wm')",
    ("local env = wm.env{watermark_interval = 0, backpressure = {high = %d}}"):format(high),
    ("local src = env:read_lines(%q)"):format(inpath),
    "local function num(line) return math.tointeger(tonumber(line)) end",
    "local function out(r) return tostring(r) end",
  }
  local expect, pending = {}, {}
  local nb = rand(2, 5)
  for b = 1, nb do
    local count, sum = N, SUM
    local expr = "src"
    local m = rand(0, 3) -- filter: keep the numbers not divisible by m (m >= 2)
    if m >= 2 then
      local kc, ks = 0, 0
      for i = 1, N do if i % m ~= 0 then kc, ks = kc + 1, ks + i end end
      count, sum = kc, ks
      expr = expr .. (":filter(function(l) return num(l) %% %d ~= 0 end)"):format(m)
    end
    local k = rand(1, 6) -- each line k times
    if k > 1 then
      expr = expr .. (":flat_map(function(l, o) for _ = 1, %d do o(l) end end)"):format(k)
      count, sum = count * k, sum * k
    end
    if rand(0, 1) == 1 then -- through a Lua map (a table and back)
      expr = expr .. ":map(function(l) return {n = num(l)} end):map(function(r) return r.n end)"
    end
    if rand(0, 2) == 0 and #pending < 2 then -- fan-in: joins another branch's sink
      pending[#pending + 1] = {expr = expr, count = count, sum = sum}
    else
      local path = ("%s/out%d.txt"):format(dir, b)
      if #pending > 0 then
        local others = {}
        for _, p in ipairs(pending) do
          others[#others + 1] = p.expr
          count, sum = count + p.count, sum + p.sum
        end
        expr = expr .. ":union(" .. table.concat(others, ", ") .. ")"
        pending = {}
      end
      lines[#lines + 1] = ("%s:write_lines(%q, out)"):format(expr, path)
      expect[path] = {count, sum}
    end
  end
  for i, p in ipairs(pending) do -- what is left has a sink of its own
    local path = ("%s/rest%d.txt"):format(dir, i)
    lines[#lines + 1] = ("%s:write_lines(%q, out)"):format(p.expr, path)
    expect[path] = {p.count, p.sum}
  end
  lines[#lines + 1] = "env:execute('fan " .. seed .. "')"
  return table.concat(lines, "\n") .. "\n", expect
end

local function check_family(args, seeds)
  local dir = h.tmpdir()
  h.finally(function() h.rmdir(dir) end)
  local inpath = input(dir)
  for _, seed in ipairs(seeds) do
    local job, expect = random_job(seed, dir, inpath)
    local _, err, code = run(job, args)
    assert(code == 0, ("seed %d (%s): exit %d\n%s\n%s"):format(seed, args, code, err, job))
    for path, want in pairs(expect) do
      local n, s = tally(path)
      assert(n == want[1] and s == want[2], ("seed %d (%s): %s has %d lines (sum %d), expected %d (sum %d)\n%s")
        :format(seed, args, path, n, s, want[1], want[2], job))
      os.remove(path)
    end
  end
end

local function seeds(first, n)
  local t = {}
  for i = 1, n do t[i] = first + i end
  return t
end

describe("fan-out and fan-in under backpressure", function()
  it("two busy file sinks after one source read every line (issue 34, item 1)", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    local inpath = input(dir)
    for _, args in ipairs({"", "-p 2 --threads 2"}) do
      local _, err, code = run(([[
        local wm = require("wm")
        local env = wm.env{backpressure = {high = 2048}}
        local s = env:read_lines(%q)
        s:flat_map(function(l, out) for _ = 1, 5 do out(l) end end):write_lines(%q, tostring)
        s:flat_map(function(l, out) for _ = 1, 5 do out(l) end end):write_lines(%q, tostring)
        env:execute("fan")
      ]]):format(inpath, dir .. "/o1.txt", dir .. "/o2.txt"), args)
      assert.are.equal(0, code, err)
      for _, o in ipairs({"/o1.txt", "/o2.txt"}) do
        local n, s = tally(dir .. o)
        assert.are.same({5 * N, 5 * SUM}, {n, s}, args .. " " .. o)
      end
    end
  end)

  it("two sliding windows writing two files count every record (issue 34, items 1 and 2)", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    local inpath = input(dir)
    -- each number n is a record at time n ms with value n: in order, so none is late; each
    -- record is in size/slide windows, so a file's sums add up to that many times SUM
    for _, args in ipairs({"", "-p 2 --threads 2"}) do
      local _, err, code = run(([[
        local wm = require("wm")
        local env = wm.env{watermark_interval = 0, backpressure = {high = 1024}}
        local s = env:read_lines(%q):parse_csv{"n:integer"}
          :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("n"))
        local k = s:map(function(r) return {k = r.n %% 3, n = r.n} end)
        k:key_by("k"):window(wm.windows.sliding(40, 10)):sum("n")
          :write_lines(%q, function(r) return tostring(r.n) end)
        k:key_by("k"):window(wm.windows.sliding(90, 30)):sum("n")
          :write_lines(%q, function(r) return tostring(r.n) end)
        env:execute("windows")
      ]]):format(inpath, dir .. "/w1.txt", dir .. "/w2.txt"), args)
      assert.are.equal(0, code, err)
      local _, s1 = tally(dir .. "/w1.txt")
      local _, s2 = tally(dir .. "/w2.txt")
      assert.are.equal(4 * SUM, s1, args)
      assert.are.equal(3 * SUM, s2, args)
    end
  end)

  it("a random family of 50 jobs at -p 1 accounts for every line", function()
    check_family("", seeds(1000, 50))
  end)

  it("a random family of 50 jobs at -p 2 --threads 2 accounts for every line", function()
    check_family("-p 2 --threads 2", seeds(2000, 50))
  end)
end)
