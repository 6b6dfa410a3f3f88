-- The partitioned filesystem sink in C (core/ops/wm_sqlfspart.h) against the Lua sink
-- (lua/wm/sql/connector_fs_partitioned.lua, WMRUN_SQL_FS_SINK=lua), a different implementation
-- of the same files: q10-like jobs on randomized inputs (several partitions, late rows into
-- committed partitions, NULLs in lines and in partition values, strings with the delimiter,
-- quotes, CR and LF, partition values Flink escapes) write the same folders byte for byte; and
-- jobs killed with SIGKILL at random moments and at the checkpoint crash points, resumed until
-- they finish, write the folders of an uninterrupted run, in both paths.
local h = require("helper")
local ck = require("ckpt_kill")

local q = h.shell_quote

-- the files under `dir` (hidden ones too): relative path -> bytes
local function tree(dir)
  local out = {}
  local p = io.popen("cd " .. q(dir) .. " 2>/dev/null && find . -type f | sort")
  for f in p:lines() do out[f:sub(3)] = h.read(dir .. "/" .. f) end
  p:close()
  return out
end

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- Rows a,s,dt,hm,ts: `n` rows from 2020-01-01 23:50 on, `step` ms apart on average, in time
-- order but for about one in `late` that comes up to 90 s late (into a partition that may
-- have committed already).
local function gen_src(n, seed, step, late)
  math.randomseed(seed)
  local words = {"plain", "with,comma", "with\"quote", "x", "", "ünï", "semi;colon", "tab\there"}
  local lines = {}
  local t = 0
  local base = 1577922600 -- 2020-01-01 23:50:00 UTC
  for i = 1, n do
    t = t + math.random(0, 2 * step)
    local at = t
    if math.random(late) == 1 then at = math.max(0, t - math.random(0, 90000)) end
    local w = words[math.random(#words)]
    if w:find('[,"]') then w = '"' .. w:gsub('"', '""') .. '"' end
    local sec = base + at // 1000
    lines[i] = string.format("%d,%s,%s,%s,%s.%03d", i, w, os.date("!%Y-%m-%d", sec), os.date("!%H:%M", sec),
      os.date("!%Y-%m-%d %H:%M:%S", sec), at % 1000)
  end
  return table.concat(lines, "\n") .. "\n"
end

-- a source of those rows, and a SELECT of q10's kind with every type and awkward text
local SRC = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE src (a INT, s STRING, dt STRING, hm STRING, ts STRING, rt AS TO_TIMESTAMP(ts),
  WATERMARK FOR rt AS rt - INTERVAL '2' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'src.csv', 'format' = 'csv');
]]
local COLS = [[
  CASE WHEN MOD(a, 7) = 0 THEN NULL ELSE a END,
  CASE MOD(a, 5) WHEN 0 THEN CAST(NULL AS STRING) WHEN 1 THEN 'l1
l2 ' || s WHEN 2 THEN 'cr]] .. "\r" .. [[' || s ELSE s END,
  CAST(a AS DOUBLE) / 8 * CASE WHEN MOD(a, 3) = 0 THEN 1e9 ELSE 1 END,
  MOD(a, 2) = 0, CASE WHEN MOD(a, 11) = 0 THEN NULL ELSE rt END]]

local JOBS = {
  -- q10's sink: partition-time commits with a success file
  {name = "partition-time commits", sql = SRC .. [[
CREATE TABLE out (a INT, s STRING, d DOUBLE, b BOOLEAN, t TIMESTAMP(3), dt STRING, hm STRING)
  PARTITIONED BY (dt, hm) WITH ('connector' = 'filesystem', 'path' = 'OUT/', 'format' = 'csv',
  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 min',
  'sink.partition-commit.policy.kind' = 'success-file',
  'partition.time-extractor.timestamp-pattern' = '$dt $hm:00');
INSERT INTO out SELECT]] .. COLS .. [[, dt, hm FROM src;
]]},
  -- processing-time commits (not before the end: 1 h), NULL and escaped partition values, a
  -- delimiter and a null literal of its own, a timestamp partition column
  {name = "process-time, NULL partitions, ';' and a null literal", sql = SRC .. [[
CREATE TABLE out (a INT, s STRING, d DOUBLE, b BOOLEAN, t TIMESTAMP(3), k STRING, day TIMESTAMP(3))
  PARTITIONED BY (k, day) WITH ('connector' = 'filesystem', 'path' = 'OUT', 'format' = 'csv',
  'csv.field-delimiter' = ';', 'csv.null-literal' = 'N;A', 'sink.partition-commit.delay' = '1 h',
  'sink.partition-commit.policy.kind' = 'success-file');
INSERT INTO out SELECT]] .. COLS .. [[, CASE MOD(a, 4) WHEN 0 THEN CAST(NULL AS STRING) WHEN 1 THEN hm
  WHEN 2 THEN 'a/b=c%d"e#f*g?h\i{j[k]l^m''n' ELSE 'tab	x y' END, TO_TIMESTAMP(dt) FROM src;
]]},
}

-- Runs `sql` (OUT the output folder `out`) in `dir` with the env prefix; the folder's files.
local function run(dir, sql, env, out, args)
  local p = dir .. "/" .. out .. ".sql"
  ck.write(p, (sql:gsub("OUT", out)))
  local _, err, code = h.sh((env or "") .. " " .. h.wmrun_path() .. " " .. (args or "") .. " --sql " .. q(p))
  assert.are.equal(0, code, err)
  return tree(dir .. "/" .. out)
end

describe("SQL partitioned filesystem sink in C", function()
  for _, job in ipairs(JOBS) do
    it("writes the Lua sink's folders byte for byte: " .. job.name, function()
      local dir = h.tmpdir()
      h.finally(function() h.rmdir(dir) end)
      for seed = 1, 3 do
        ck.write(dir .. "/src.csv", gen_src(1500, seed, 1000, 20))
        local c = run(dir, job.sql, "", "c" .. seed)
        local l = run(dir, job.sql, "WMRUN_SQL_FS_SINK=lua", "l" .. seed)
        assert.is_true(count(c) >= 8, "only " .. count(c) .. " files")
        assert.are.same(l, c)
        -- what the inputs were made to reach: quoted fields, NULLs, more than one part file
        local all, parts = {}, 0
        for f, text in pairs(c) do
          all[#all + 1] = text
          if f:match("part%-0%-[1-9]$") then parts = parts + 1 end
        end
        all = table.concat(all)
        assert.truthy(all:find('"l1\nl2 ', 1, true))
        assert.truthy(all:find('"cr\r', 1, true))
        assert.truthy(all:find('""', 1, true))
        if job.name:find("NULL") then
          assert.truthy(all:find('"N;A"', 1, true))
          assert.truthy(next(c) and tree(dir .. "/c" .. seed .. "/k=__DEFAULT_PARTITION__") ~= nil)
          local found = false
          for f in pairs(c) do
            if f:find("k=a%2Fb%3Dc%25d%22e%23f%2Ag%3Fh%5Ci%7Bj%5Bk%5Dl%5Em%27n/", 1, true) then found = true end
          end
          assert.is_true(found)
        else
          assert.is_true(parts > 0, "no partition got a second file")
        end
      end
    end)
  end

  it("is the job's sink unless WMRUN_SQL_FS_SINK=lua (the Lua sink is a keyed process: --metrics counts its key)",
    function()
      local dir = h.tmpdir()
      h.finally(function() h.rmdir(dir) end)
      ck.write(dir .. "/src.csv", gen_src(50, 1, 1000, 20))
      local p = ck.write(dir .. "/job.sql", (JOBS[1].sql:gsub("OUT", "o")))
      local _, c = h.sh(h.wmrun_path() .. " --metrics --sql " .. q(p))
      local _, l = h.sh("WMRUN_SQL_FS_SINK=lua " .. h.wmrun_path() .. " --metrics --sql " .. q(p))
      assert.matches("write partitions %([^)]*/o%)", c)
      assert.is_nil(c:find("keys of 'write partitions", 1, true))
      assert.truthy(l:find("keys of 'write partitions", 1, true))
    end)

  -- the end of the input and per-row watermarks: every roll falls at the same row again in a
  -- resumed run, so the files are the uninterrupted run's exactly (docs/sql.md)
  for _, env in ipairs({"", "WMRUN_SQL_FS_SINK=lua"}) do
    it("killed at random moments and at the checkpoint crash points, resumed: the uninterrupted run's files"
        .. (env ~= "" and " (" .. env .. ")" or ""), function()
      local dir = h.tmpdir()
      h.finally(function() h.rmdir(dir) end)
      ck.write(dir .. "/src.csv", gen_src(4000, 7, 1000, 15))
      local t0 = ck.now_ms()
      local ref = run(dir, JOBS[1].sql, env, "ref")
      local took = math.max(ck.now_ms() - t0, 20)
      assert.is_true(count(ref) > 10)
      local p = ck.write(dir .. "/run.sql", (JOBS[1].sql:gsub("OUT", "run")))
      local args = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 10ms --sql " .. q(p)
      for _, point in ipairs{"after-parts", "before-manifest", "after-manifest"} do
        local _, e, c = h.sh(env .. " WM_CKPT_CRASH=" .. point .. " " .. h.wmrun_bin .. " " .. args)
        assert.are.equal(99, c, point .. ": " .. e)
      end
      math.randomseed(3)
      for _ = 1, 12 do
        local c = ck.run_killed(args, math.random() * took / 1000, env)
        assert.is_true(c == 137 or c == 0, "exit status " .. tostring(c))
      end
      local _, e, c = h.sh(env .. " " .. h.wmrun_bin .. " " .. args)
      assert.are.equal(0, c, e)
      assert.are.same(ref, tree(dir .. "/run"))
    end)
  end
end)
