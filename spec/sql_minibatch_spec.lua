-- SQL mini-batch (SET 'table.exec.mini-batch.*', Flink's option names and checks; docs/sql.md
-- "Mini-batch"): an unwindowed GROUP BY in C emits a group's change once per batch. Hand-worked
-- changelogs, the option's errors, the final results of Nexmark q15/q17 against the run without
-- batches, and a job stopped by SIGTERM and resumed whose changelog stays consistent.
local h = require("helper")
local sql_run = require("sql_run")

local MB = "SET 'table.exec.mini-batch.enabled' = 'true';\n"
  .. "SET 'table.exec.mini-batch.allow-latency' = '1 h';\n"

local function run_sql(sql, files)
  local dir = h.tmpdir()
  files = files or {}
  files["job.sql"] = sql
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  local out, err, code = h.sh(h.wmrun_path() .. " --sql " .. h.shell_quote(dir .. "/job.sql"))
  h.rmdir(dir)
  return out, err, code
end

local function lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- Applies a changelog ("+I[k, ...]" lines, the key the first column): every -U/-D retracts the
-- key's current row, every +I/+U inserts a key that has none. The table as "row" lines, sorted.
local function apply(text)
  local cur = {}
  for _, l in ipairs(lines(text)) do
    local kind, row = l:match("^([%+%-][IUD])(%b[])$")
    assert(kind, "not a changelog row: " .. l)
    local key = row:match("^%[([^,%]]*)")
    if kind == "+I" or kind == "+U" then
      assert(cur[key] == nil, "a second row for " .. key .. ": " .. l)
      cur[key] = row
    else
      assert(cur[key] == row, "retracts what is not the row of " .. key .. ": " .. l .. " (row: "
        .. tostring(cur[key]) .. ")")
      cur[key] = nil
    end
  end
  local t = {}
  for _, r in pairs(cur) do t[#t + 1] = r end
  table.sort(t)
  return table.concat(t, "\n")
end

local CSV_DDL = "CREATE TABLE t (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = 'd.csv', "
  .. "'format' = 'csv');\nCREATE TABLE o (k STRING, n BIGINT, s BIGINT) WITH ('connector' = 'print');\n"
local CSV = "a,1\na,2\nb,5\na,3\nb,1\nc,0\nc,0\n"

describe("SQL mini-batch", function()
  it("emits each group's change once per batch of table.exec.mini-batch.size rows", function()
    local out, err, code = run_sql(MB .. "SET 'table.exec.mini-batch.size' = '3';\n" .. CSV_DDL
      .. "INSERT INTO o SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k;", {["d.csv"] = CSV})
    assert.are.equal(0, code, err)
    -- by hand, batches [a1 a2 b5] [a3 b1 c0] [c0] (the last one ended by the end of input):
    -- a {2, 3}, b {1, 5}; a {3, 6}, b {2, 6}, c {1, 0}; c {2, 0}
    assert.are.equal(table.concat({"+I[a, 2, 3]", "+I[b, 1, 5]", "-U[a, 2, 3]", "+U[a, 3, 6]",
      "-U[b, 1, 5]", "+U[b, 2, 6]", "+I[c, 1, 0]", "-U[c, 1, 0]", "+U[c, 2, 0]"}, "\n") .. "\n", out)
    -- batches of 2: [a1 a2] [b5 a3] [b1 c0] [c0]; a's group is unchanged by nothing, c's second
    -- row changes COUNT only
    out, err, code = run_sql(MB .. "SET 'table.exec.mini-batch.size' = '2';\n" .. CSV_DDL
      .. "INSERT INTO o SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k;", {["d.csv"] = CSV})
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat({"+I[a, 2, 3]", "+I[b, 1, 5]", "-U[a, 2, 3]", "+U[a, 3, 6]",
      "-U[b, 1, 5]", "+U[b, 2, 6]", "+I[c, 1, 0]", "-U[c, 1, 0]", "+U[c, 2, 0]"}, "\n") .. "\n", out)
  end)

  it("emits nothing for a group a batch leaves as it was", function()
    -- MAX(v) of a: 5 after [a5 a1], [a2 a3] leaves it 5: no row; [a9] changes it
    local out, err, code = run_sql(MB .. "SET 'table.exec.mini-batch.size' = '2';\n"
      .. "CREATE TABLE t (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = 'd.csv', "
      .. "'format' = 'csv');\nCREATE TABLE o (k STRING, m BIGINT) WITH ('connector' = 'print');\n"
      .. "INSERT INTO o SELECT k, MAX(v) FROM t GROUP BY k;", {["d.csv"] = "a,5\na,1\na,2\na,3\na,9\n"})
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a, 5]\n-U[a, 5]\n+U[a, 9]\n", out)
  end)

  it("refuses what Flink refuses, naming the option", function()
    local q = CSV_DDL .. "INSERT INTO o SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k;"
    local _, err, code = run_sql("SET 'table.exec.mini-batch.enabled' = 'true';\n"
      .. "SET 'table.exec.mini-batch.size' = '10';\n" .. q, {["d.csv"] = CSV})
    assert.are_not.equal(0, code)
    assert.matches("job.sql:1:%d+: MiniBatch Latency must be greater than 0 ms", err)
    _, err, code = run_sql(MB .. q, {["d.csv"] = CSV})
    assert.are_not.equal(0, code)
    assert.matches("'table.exec.mini-batch.size' must be > 0", err, 1, true)
    _, err, code = run_sql("SET 'table.exec.mini-batch.enabled' = 'yes';\n" .. q, {["d.csv"] = CSV})
    assert.are_not.equal(0, code)
    assert.matches("job.sql:1:5: 'table.exec.mini-batch.enabled' is 'true' or 'false' (got 'yes')", err, 1, true)
    _, err, code = run_sql("SET 'table.exec.mini-batch.size' = 'many';\n" .. q, {["d.csv"] = CSV})
    assert.are_not.equal(0, code)
    assert.matches("'table.exec.mini-batch.size' is a number of rows (got 'many')", err, 1, true)
    _, err, code = run_sql("SET 'table.exec.mini-batch.allow-latency' = 'soon';\n" .. q, {["d.csv"] = CSV})
    assert.are_not.equal(0, code)
    assert.matches("bad duration 'soon' for 'table.exec.mini-batch.allow-latency'", err, 1, true)
    -- off: every row's change, as without the option: +I for each group's first row (3), a
    -- -U/+U pair for each of the other four
    local out
    out, err, code = run_sql("SET 'table.exec.mini-batch.enabled' = 'false';\n" .. q, {["d.csv"] = CSV})
    assert.are.equal(0, code, err)
    assert.are.equal(3 + 4 * 2, #lines(out))
  end)

  for _, query in ipairs({"q15", "q17"}) do
    it("gives Nexmark " .. query .. " the results of the run without batches, in fewer rows", function()
      local f = assert(io.open("examples/nexmark/" .. query .. ".sql"))
      local text = f:read("a"):gsub("'events.num' = '%d+'", "'events.num' = '30000'")
      f:close()
      local plain, err, code = run_sql(text)
      assert.are.equal(0, code, err)
      local batched
      batched, err, code = run_sql(MB .. "SET 'table.exec.mini-batch.size' = '1000';\n" .. text)
      assert.are.equal(0, code, err)
      local want = apply(plain)
      assert.is_true(#want > 0)
      assert.are.equal(want, apply(batched))
      assert.is_true(#lines(batched) < #lines(plain) / 2, #lines(batched) .. " rows of " .. #lines(plain))
    end)
  end
end)

describe("SQL mini-batch with checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- A generator (checkpointed: its counter) at RATE records a second, no watermarks: batches
  -- end at 50 rows (the latency is an hour) and at the end of input.
  local job = [[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 7, v = (i * 37) % 101}
  end, {count = 3000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("t", s, {"k:STRING", "v:INT"})
env:execute_sql("SET 'table.exec.mini-batch.enabled' = 'true'")
env:execute_sql("SET 'table.exec.mini-batch.allow-latency' = '1 h'")
env:execute_sql("SET 'table.exec.mini-batch.size' = '50'")
env:execute_sql("SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS mi, MAX(v) AS ma, COUNT(DISTINCT v) AS dv "
  .. "FROM t GROUP BY k")
env:execute()
]]

  it("a job stopped by SIGTERM resumes with a consistent changelog and the same results", function()
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    -- by hand: 60 batches of 50 rows, each with a row of all 7 keys, every key's COUNT changes
    -- in each: 7 +I, then 59 * 7 pairs of -U/+U
    assert.are.equal(7 + 59 * 14, #lines(ref))
    -- i = 1..3000: k1..k4 have 429 rows, k0, k5, k6 428; v = 37 i mod 101 takes every value
    assert.matches("%+U%[k1, 429, %d+, 0, 100, 101%]", ref)
    assert.matches("%+U%[k0, 428, %d+, 0, 100, 101%]", ref)
    -- a batch not ended at the cut is in the checkpoint as its groups' states: the resumed run
    -- emits what the stopped one had not, no row twice, none retracted that was not emitted
    assert.are.equal(apply(ref), apply(part .. rest))
  end)
end)
