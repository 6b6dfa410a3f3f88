-- SQL options (issue 26, item 3): SET keys wmrun does not implement are errors that name the
-- key and list the ones it does; 'table.exec.source.idle-timeout' and the table option
-- 'scan.watermark.idle-timeout' let a window fire while a Kafka partition stays empty.
local h = require("helper")
local sql_run = require("sql_run")
local services = require("services")

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local T = [[
CREATE TABLE t (word STRING, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
]]
local SELECT = "SELECT word, COUNT(*) FROM t GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), word;\n"
local IN = {["in.csv"] = "a,1000\nb,2000\na,7000\n"}

describe("SQL SET", function()
  it("a key wmrun does not implement is an error naming it and listing the implemented ones", function()
    local _, err, code = sql_run.run("SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';\n" .. T .. SELECT, IN)
    assert.are.equal(1, code)
    assert.are.equal("job.sql:1:5: SET 'table.optimizer.agg-phase-strategy': wmrun does not implement this option "
      .. "(it implements 'execution.runtime-mode', 'parallelism.default', 'pipeline.auto-watermark-interval', "
      .. "'table.exec.source.idle-timeout', 'table.local-time-zone', 'table.exec.state.ttl', "
      .. "'table.exec.mini-batch.enabled', 'table.exec.mini-batch.allow-latency', 'table.exec.mini-batch.size')\n",
      err)
    _, err, code = sql_run.run(T .. "SET 'sql-client.execution.result-mode' = 'tableau';\n" .. SELECT, IN)
    assert.are.equal(1, code)
    assert.matches("^job.sql:3:5: SET 'sql%-client.execution.result%-mode': wmrun does not implement", err)
    -- the unquoted form, and RESET of such a key
    _, err, code = sql_run.run("SET table.optimizer.join-reorder-enabled = true;\n" .. T .. SELECT, IN)
    assert.are.equal(1, code)
    assert.matches("^job.sql:1:5: SET 'table.optimizer.join%-reorder%-enabled': wmrun does not implement", err)
    _, err, code = sql_run.run("RESET 'table.optimizer.join-reorder-enabled';\n" .. T .. SELECT, IN)
    assert.are.equal(1, code)
    assert.matches("^job.sql:1:7: RESET 'table.optimizer.join%-reorder%-enabled': wmrun does not implement", err)
  end)

  it("the implemented keys are accepted; bad values are errors", function()
    local _
    local out, err, code = sql_run.run("SET 'execution.runtime-mode' = 'streaming';\n"
      .. "SET 'table.exec.source.idle-timeout' = '1 s';\nRESET 'table.exec.source.idle-timeout';\n" .. T .. SELECT, IN)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a, 1]\n+I[b, 1]\n+I[a, 1]\n", out)
    _, err, code = sql_run.run("SET 'execution.runtime-mode' = 'batch';\n" .. T .. SELECT, IN)
    assert.are.equal(1, code)
    assert.matches("^job.sql:1:5: only 'streaming' is supported for execution.runtime%-mode", err)
    _, err, code = sql_run.run("SET 'table.exec.source.idle-timeout' = 'soon';\n" .. T .. SELECT, IN)
    assert.are.equal(1, code)
    assert.matches("^job.sql:1:5: bad duration 'soon' for 'table.exec.source.idle%-timeout'", err)
    _, err, code = sql_run.run((T:gsub("'format' = 'csv'", "'format' = 'csv', 'scan.watermark.idle-timeout' = '-1 s'"))
      .. SELECT, IN)
    assert.are.equal(1, code)
    assert.matches("bad duration '%-1 s' for 'scan.watermark.idle%-timeout'", err)
  end)
end)

describe("SQL idle timeout", function()
  -- Partitions 0 and 1 of a topic of 3 hold rows up to 12 s; partition 2 stays empty. With a
  -- 1 s bound the window [0 s, 5 s) can fire only when partition 2 stops holding back the
  -- watermark: idle after the timeout. The source is unbounded: the job runs until killed.
  local function run(k, dir, set, table_opt)
    local _, err, code = h.wmrun(q(h.write_tmp([[
local wm = require("wm")
local env = wm.env{}
env:from_elements({p = 0, line = "a,1000"}, {p = 0, line = "a,2000"}, {p = 0, line = "a,12000"},
                  {p = 1, line = "b,1500"}, {p = 1, line = "b,11000"})
  :write_kafka{brokers = arg[1], topic = "w", partition = "p", format = function(r) return r.line end}
env:execute()
]], ".lua")) .. " " .. k.bootstrap)
    assert.are.equal(0, code, err)
    -- the results go to standard error, written at once (print flushes a file at the end)
    local ddl = set .. [[
CREATE TABLE t (word STRING, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
  WITH ('connector' = 'kafka', 'topic' = 'w', 'properties.bootstrap.servers' = ']] .. k.bootstrap .. [[',
        'scan.startup.mode' = 'earliest-offset', 'format' = 'csv']] .. table_opt .. [[);
]]
    local p = h.bg_job(dir, string.format([[
local wm = require("wm")
local env = wm.env{watermark_interval = 50}
env:execute_sql(%q)
env:sql_query("SELECT word, COUNT(*) AS n FROM t GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), word")
  :to_append_stream():sink(function(r) io.stderr:write("row ", r.word, " ", r.n, "\n") end)
env:execute()
]], ddl))
    h.finally(p.kill)
    -- the two results of the first window (the next window waits for later rows)
    local errtext = h.wait_for(function()
      local e = h.read_or_empty(p.err)
      if p.done() then error("the job ended: " .. e) end
      return e:find("row b 1\n", 1, true) and e:find("row a 2\n", 1, true) and e
    end, "the window [0 s, 5 s) to fire", 30)
    local rows = {}
    for l in errtext:gmatch("row [^\n]+") do rows[#rows + 1] = l end
    table.sort(rows)
    assert.are.same({"row a 2", "row b 1"}, rows)
  end

  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("SET 'table.exec.source.idle-timeout' lets a window fire while a partition is empty", function()
    local k = services.kafka{"w:3"}
    h.finally(function() k:stop() end)
    run(k, dir, "SET 'table.exec.source.idle-timeout' = '500 ms';\n", "")
  end)

  it("the table option 'scan.watermark.idle-timeout' does the same for its table", function()
    local k = services.kafka{"w:3"}
    h.finally(function() k:stop() end)
    run(k, dir, "", ", 'scan.watermark.idle-timeout' = '500 ms'")
  end)
end)

describe("SQL 'source.split-by-bytes' (a filesystem table read in byte ranges)", function()
  -- 3000 lines "wN,ts": every line read once, by 3 readers at -p 3 (docs/parallelism.md)
  local lines = {}
  for i = 1, 3000 do lines[i] = string.format("w%d,%d", i % 7, i * 10) end
  local FILE = {["in.csv"] = table.concat(lines, "\n") .. "\n"}
  local TS = [[
CREATE TABLE t (word STRING, ts BIGINT) WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv',
  'source.split-by-bytes' = 'true');
SELECT word, ts FROM t;
]]
  it("at -p 1, 2, 3 gives every line once; at -p 3 each of 3 readers reads a part", function()
    for _, p in ipairs({1, 2, 3}) do
      local out, err, code = sql_run.run(TS, {["in.csv"] = FILE["in.csv"]}, {args = "--metrics -p " .. p})
      assert.are.equal(0, code, err)
      local rows = {}
      for l in out:gmatch("[^\n]+") do rows[#rows + 1] = l:gsub("^%d+> ", "") end
      assert.are.equal(3000, #rows)
      local seen = {}
      for _, r in ipairs(rows) do
        local w, ts = r:match("^%+I%[(w%d), (%d+)%]$")
        assert.is_truthy(w, r)
        assert.is_nil(seen[ts], "read twice: " .. r)
        seen[ts] = true
        assert.are.equal("w" .. (tonumber(ts) // 10 % 7), w)
      end
      local readers, total = 0, 0
      for n in err:gmatch("read_lines%([^)]*%)[^\n]-%s+0%s+(%d+)") do
        readers = readers + 1
        total = total + tonumber(n)
        assert.is_true(tonumber(n) > 3000 / p / 2, err) -- a part of about a p-th
      end
      assert.are.equal(p, readers, err)
      assert.are.equal(3000, total)
    end
  end)

  it("is refused on another connector, and a bad value is an error", function()
    local _, err, code = sql_run.run("CREATE TABLE s (line STRING) WITH ('connector' = 'stdin', 'format' = 'csv', "
      .. "'source.split-by-bytes' = 'true');\nSELECT * FROM s;\n", {})
    assert.are.equal(1, code)
    assert.matches("'source.split-by-bytes' is an option of a filesystem source, not of connector 'stdin'",
      err, 1, true)
    _, err, code = sql_run.run((TS:gsub("'source.split%-by%-bytes' = 'true'", "'source.split-by-bytes' = 'yes'")),
      {["in.csv"] = "a,1\n"})
    assert.are.equal(1, code)
    assert.matches("option 'source.split-by-bytes' must be 'true' or 'false', got 'yes'", err, 1, true)
  end)
end)
