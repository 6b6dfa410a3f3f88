-- SQL operators' state and changelogs (issue 26, items 5 and 6): a GROUP BY without a window
-- keeps its groups in the checkpoint, and its updating result is partitioned by key, so that
-- each key's -U/+U stay in order in one instance.
local h = require("helper")
local sql_run = require("sql_run")

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function lines_of(text)
  local t = {}
  for l in text:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- The last result per key of a changelog printed as `+I[k, n]` / `+U[k, n]` / `-U[...]`.
local function finals(text)
  local last = {}
  for kind, k, n in text:gmatch("([+-][IUD])%[([^,]+), (%d+)%]") do
    if kind == "+I" or kind == "+U" then last[k] = tonumber(n) elseif kind == "-D" then last[k] = nil end
  end
  return last
end

describe("SQL state", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- A Lua job whose stream goes through SQL: a generator (checkpointed: its counter) at
  -- RATE records a second, and `SELECT k, COUNT(*), SUM(v) ... GROUP BY k`.
  local job = [[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 7, v = i % 5}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("t", s, {"k:STRING", "v:INT"})
env:execute_sql("SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k")
env:execute()
]]

  for _, threads in ipairs{1, 2} do
    local par = threads == 2 and "-p 2 --threads 2 " or ""
    it("a GROUP BY without a window resumes from its checkpoint (SIGTERM, resume)"
       .. (threads == 2 and " (-p 2 --threads 2)" or ""), function()
      local ref, part, rest = sql_run.stop_and_resume(dir, job, par)
      -- resumed: the rest of the changelog; no group starts again from zero
      for _, l in ipairs(lines_of(rest)) do
        assert.is_nil(l:match("%+I%[k%d, 1,"), "a group started again from zero: " .. l)
      end
      assert.are.same(finals(ref), finals(part .. rest))
      if threads == 1 then
        -- one instance, one order: the two runs print exactly the uninterrupted changelog
        assert.are.equal(ref, part .. rest)
      else
        -- two threads: the records of a group reach it in no fixed order (the generator's
        -- records are rebalanced over both threads before the key exchange), so the sums
        -- differ from run to run; the counts do not: a group of n records has printed
        -- +I/+U with the counts 1..n and -U with 1..n-1, each once. A row printed twice (a
        -- thread going on past its cut for the stop, the resumed run printing it again)
        -- repeats a count
        local function counts(text)
          local by, last = {}, {}
          for _, l in ipairs(lines_of(text)) do
            local kind, k, n = l:match("^%d+> ([%+%-][IU])%[(k%d), (%d+),")
            assert(kind, l)
            by[k] = by[k] or {}
            by[k][#by[k] + 1] = (kind == "-U" and "-" or "+") .. n
            if kind ~= "-U" and tonumber(n) > (last[k] or 0) then last[k] = tonumber(n) end
          end
          return by, last
        end
        local _, want = counts(ref)
        local got = counts(part .. rest)
        local groups = 0
        for k, n in pairs(want) do
          groups = groups + 1
          -- 2000 records, i % 7: 285 of k0 and k6, 286 of the others
          assert.are.equal((k == "k0" or k == "k6") and 285 or 286, n, k)
          local expect = {}
          for c = 1, n do expect[#expect + 1] = "+" .. c end
          for c = 1, n - 1 do expect[#expect + 1] = "-" .. c end
          table.sort(expect)
          table.sort(got[k])
          assert.are.same(expect, got[k], "the counts of group " .. k)
        end
        assert.are.equal(7, groups)
      end
    end)
  end

  it("an updating result at parallelism 2 is partitioned by key: each key's changes in order, "
     .. "in one instance (--threads 2)", function()
    local lines = {}
    for i = 1, 400 do lines[i] = "w" .. (i * 7 % 13) end
    local f = assert(io.open(dir .. "/in.txt", "w"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    local sql = dir .. "/job.sql"
    f = assert(io.open(sql, "w"))
    f:write([[
SET 'parallelism.default' = '2';
CREATE TABLE w (word STRING) WITH ('connector' = 'filesystem', 'path' = 'in.txt', 'format' = 'csv');
SELECT word, COUNT(*) AS n FROM w GROUP BY word;
]])
    f:close()
    for _, threads in ipairs{1, 2} do
      local out, err, code = h.wmrun("--threads " .. threads .. " --sql " .. q(sql))
      assert.are.equal(0, code, err)
      local inst, next_n, seen = {}, {}, 0
      for _, l in ipairs(lines_of(out)) do
        local i, kind, word, n = l:match("^(%d+)> ([+-][IUD])%[(w%d+), (%d+)%]$")
        assert.is_truthy(i, l)
        n = tonumber(n)
        seen = seen + 1
        -- one instance per key
        inst[word] = inst[word] or i
        assert.are.equal(inst[word], i, word .. " printed by two instances")
        -- in order: +I 1, then -U n, +U n+1, ...
        local want = next_n[word] or {"+I", 1}
        assert.are.same(want, {kind, n}, "out of order for " .. word .. ": " .. l)
        if kind == "-U" then next_n[word] = {"+U", n + 1} else next_n[word] = {"-U", n} end
      end
      assert.are.equal(400 * 2 - 13, seen)
    end
  end)

  it("a WATERMARK that runs as a Lua generator is checkpointed (was refused with --checkpoint-dir)", function()
    local f = assert(io.open(dir .. "/in.csv", "w"))
    f:write("a,1000\nb,2000\na,7000\n")
    f:close()
    local sql = dir .. "/job.sql"
    f = assert(io.open(sql, "w"))
    f:write([[
CREATE TABLE s (id STRING, ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
SELECT id, COUNT(*) AS n FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;
]])
    f:close()
    local out, err, code = h.wmrun("--watermark-interval 0 --checkpoint-dir " .. q(dir .. "/ck") .. " --sql " .. q(sql))
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a, 1]\n+I[b, 1]\n+I[a, 1]\n", out)
  end)
end)
