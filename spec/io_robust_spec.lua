-- The source interface under stress: shutdown with open handles (valgrind), positions of
-- every kind of source (also across threads), drains that cut a line, followed files that
-- are truncated, rewritten and rotated, FIFOs, full disks, resets and out-of-range input.
-- No test depends on machine speed: every wait polls for a condition with a bounded
-- deadline (10 s, checking every 50 ms) that only matters when something is broken.
local h = require("helper")

local dir -- this spec's own temporary directory, removed at the end

setup(function()
  dir = h.tmpdir()
end)

teardown(function()
  if dir then os.execute("rm -rf '" .. dir .. "'") end
end)

local n = 0
local function path(name)
  n = n + 1
  return dir .. "/" .. n .. "_" .. name
end

local function put(p, text, mode)
  local f = assert(io.open(p, mode or "wb"))
  f:write(text)
  f:close()
end

local read_or_empty, wait_for = h.read_or_empty, h.wait_for

--- Runs a job in the background; p.pid() is wmrun's pid, p.wait() its exit code.
local function bg_job(text, args)
  local job, out, err, pidf, rcf = path("job.lua"), path("out"), path("err"), path("pid"), path("rc")
  put(job, text)
  local cmd = string.format("%s %s %s >%s 2>%s & echo $! > %s; wait $!", h.wmrun_path(), args or "", job,
    out, err, pidf)
  os.execute(string.format("sh -c '%s; echo $? > %s' >/dev/null 2>&1 </dev/null &", cmd:gsub("'", "'\\''"), rcf))
  local p = {out = out, err = err}
  function p.pid()
    return wait_for(function() return tonumber(read_or_empty(pidf):match("%d+")) end, "wmrun to start")
  end
  function p.done() return tonumber(read_or_empty(rcf):match("%d+")) end
  function p.wait() return wait_for(p.done, "wmrun to end") end
  return p
end

local function job(body)
  return 'local wm = require("wm")\nlocal env = wm.env{ watermark_interval = 0 }\n' .. body ..
    '\nenv:execute()\n'
end

local function run(body, args)
  local p = path("job.lua")
  put(p, job(body))
  local out, err, code = h.wmrun((args and (args .. " ") or "") .. p)
  return out, err, code, p
end

describe("shutdown with open handles", function()
  local has_valgrind = os.execute("command -v valgrind >/dev/null 2>&1")

  it("frees a listen source's memory only after its handle is closed (valgrind clean)", function()
    if not has_valgrind then
      pending("valgrind is not installed")
      return
    end
    if os.execute("grep -q __asan_init '" .. h.wmrun_bin .. "'") then
      pending("an ASan build: valgrind cannot run it (make test runs this)")
      return
    end
    local p = path("job.lua")
    put(p, job([[
env:listen_lines("127.0.0.1", 0, {quiet = true}):print()
env:read_lines("/nonexistent/input.csv"):print()]]))
    local _, err, code = h.sh("valgrind -q --error-exitcode=99 " .. h.wmrun_bin .. " " .. p)
    assert.are.equal(1, code, err)
    assert.truthy(err:find("cannot open '/nonexistent/input.csv': No such file or directory", 1, true), err)
    assert.falsy(err:find("Invalid", 1, true), err)
  end)
end)

describe("positions of Lua-backed sources", function()
  it("header = true skips the first element of from_elements", function()
    local out, err, code = run([[
env:from_elements("id,v", "a,1", "b,2"):parse_csv{"id", "v:integer", header = true}:print()]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal('{"id":"a","v":1}\n{"id":"b","v":2}\n', out)
  end)

  it("a parse error names the element of from_elements", function()
    local _, err, code, p = run([[
env:from_elements("id,v", "a,1", "b,x"):parse_csv{"id", "v:integer", header = true}:print()]])
    assert.are.equal(1, code)
    assert.truthy(err:find("wmrun: element 3 of from_elements (" .. h.chunkname(p) .. ":3): field 'v': 'x' is not an "
      .. "integer", 1, true), err)
  end)

  it("a parse error names the record of generate, and the side output its number", function()
    local _, err, code, p = run([[
env:generate(function(i) return i == 2 and "x" or tostring(i) end, {count = 3})
  :parse_csv{"n:integer"}:print()]])
    assert.are.equal(1, code)
    assert.truthy(err:find("wmrun: record 2 of generate (" .. h.chunkname(p) .. ":3): field 'n': 'x' is not an integer",
      1, true), err)
    local out
    out, err, code = run([[
local s = env:generate(function(i) return i == 2 and "x" or tostring(i) end, {count = 3})
  :parse_csv{"n:integer", on_error = "side_output"}
s:get_side_output("parse_errors"):map(function(e) return e.line .. " " .. e.text end):print()]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("2 x\n", out)
  end)
end)

describe("draining a file", function()
  it("never emits the half-read line in the buffer as a record (SIGINT mid-file)", function()
    local data, out = path("big.csv"), path("out.jsonl")
    put(data, string.rep("k,1000000000\n", 200))
    -- 13-byte lines read 16 bytes at a time: nearly every read ends inside a line
    local _, err, code = run(([[
local pid = io.open("/proc/self/stat"):read("n")
local sent = false
env:read_lines(%q, {chunk = 16})
  :map(function(l)
    if not sent then sent = true; io.popen("kill -INT " .. pid):close() end -- the drain starts
    return l
  end)
  :parse_csv{"id", "v:integer"}
  :write_lines(%q)]]):format(data, out))
    assert.are.equal(0, code, err)
    local text = read_or_empty(out)
    local lines = 0
    for l in text:gmatch("[^\n]+") do
      lines = lines + 1
      assert.are.equal('{"id":"k","v":1000000000}', l)
    end
    assert.truthy(lines >= 1 and lines < 200, tostring(lines))
  end)
end)

describe("follow = true behaves like tail -F", function()
  local function follow_job(f, seen)
    return bg_job(job(([[
local seen = assert(io.open(%q, "w"))
env:read_lines(%q, {follow = true, poll = "50ms"})
  :map(function(l) seen:write(l, "\n"); seen:flush(); return l end)
  :print()]]):format(seen, f)))
  end

  it("does not splice a partial line with the next file content after a truncation", function()
    local f, seen = path("log"), path("seen")
    put(f, "x0\npartial")
    local p = follow_job(f, seen)
    wait_for(function() return read_or_empty(seen) == "x0\n" end, "the first line")
    put(f, "") -- truncate
    put(f, "t1\n", "ab")
    wait_for(function() return read_or_empty(seen):find("t1\n", 1, true) end, "the line after the truncation")
    os.execute("kill -INT " .. p.pid())
    assert.are.equal(0, p.wait())
    assert.are.equal("x0\npartial\nt1\n", read_or_empty(seen))
  end)

  it("reads a file rewritten in place from its start (longer or not)", function()
    local f, seen = path("log"), path("seen")
    put(f, "x1\n")
    local p = follow_job(f, seen)
    wait_for(function() return read_or_empty(seen) == "x1\n" end, "the first line")
    put(f, "y1\ny2\ny3\n")
    wait_for(function() return read_or_empty(seen) == "x1\ny1\ny2\ny3\n" end, "the rewritten lines")
    put(f, "a-much-longer-line\n")
    wait_for(function() return read_or_empty(seen):find("longer", 1, true) end, "the longer line")
    os.execute("kill -INT " .. p.pid())
    assert.are.equal(0, p.wait())
    assert.are.equal("x1\ny1\ny2\ny3\na-much-longer-line\n", read_or_empty(seen))
  end)

  it("follows a rotation (mv f f.old, new f) and a delete and re-create; a partial line waits", function()
    local f, seen = path("log"), path("seen")
    put(f, "r1\n")
    local p = follow_job(f, seen)
    wait_for(function() return read_or_empty(seen) == "r1\n" end, "the first line")
    put(f, "r2\n", "ab")
    wait_for(function() return read_or_empty(seen) == "r1\nr2\n" end, "the appended line")
    assert(os.rename(f, f .. ".old"))
    put(f, "n1\n")
    wait_for(function() return read_or_empty(seen) == "r1\nr2\nn1\n" end, "the rotated-in file")
    assert(os.remove(f))
    put(f, "d1\nhalf")
    wait_for(function() return read_or_empty(seen) == "r1\nr2\nn1\nd1\n" end, "the re-created file")
    put(f, "-done\n", "ab")
    wait_for(function() return read_or_empty(seen) == "r1\nr2\nn1\nd1\nhalf-done\n" end, "the completed line")
    os.execute("kill -INT " .. p.pid())
    assert.are.equal(0, p.wait())
  end)
end)

describe("outputs that fail", function()
  local function to_full(args)
    return h.sh("sh -c '" .. h.wmrun_path() .. " " .. args .. " >/dev/full'")
  end

  it("a full standard output is an error (exit 1), not a silent success", function()
    local p = path("job.lua")
    put(p, job([[env:generate(function(i) return i end, {count = 3}):print()]]))
    local _, err, code = to_full(p)
    assert.are.equal(1, code)
    assert.truthy(err:find("cannot write to standard output: No space left on device", 1, true), err)
  end)

  it("output of Lua's print that could not be written fails the job too", function()
    local p = path("job.lua")
    put(p, job([[env:from_elements(1, 2):map(function(x) print("seen", x) return x end):sink(function() end)]]))
    local _, err, code = to_full(p)
    assert.are.equal(1, code)
    assert.truthy(err:find("wmrun: cannot write to standard output", 1, true), err)
  end)

  it("the SQL runner on a full standard output fails too", function()
    local _, err, code = to_full("--sql " .. h.root .. "/examples/sql/k_sql_tumble_count.sql")
    assert.are.equal(1, code)
    assert.truthy(err:find("cannot write to standard output", 1, true), err)
  end)
end)

describe("FIFOs", function()
  it("a FIFO with no writer yet does not block: SIGINT drains (exit 0), a writer's lines are read", function()
    local fifo, ready = path("fifo"), path("ready")
    assert(os.execute("mkfifo '" .. fifo .. "'"))
    local p = bg_job(job(([[
env:generate(function() io.open(%q, "w"):close() return nil end)
env:read_lines(%q):print()]]):format(ready, fifo)))
    wait_for(function() return io.open(ready) end, "the job to run")
    os.execute("kill -INT " .. p.pid())
    assert.are.equal(0, p.wait())
    local q = bg_job(job(([[env:read_lines(%q):print()]]):format(fifo)))
    q.pid()
    assert(os.execute("printf 'a\\nb\\n' > '" .. fifo .. "'"))
    assert.are.equal(0, q.wait())
    assert.are.equal("a\nb\n", read_or_empty(q.out))
  end)
end)

describe("input out of range", function()
  it("a number column rejects 1e400 as it rejects inf (finite numbers only)", function()
    local data = path("n.csv")
    put(data, "1.5\n1e400\n")
    local _, err, code = run(([[env:read_lines(%q):parse_csv{"x:number"}:print()]]):format(data))
    assert.are.equal(1, code)
    assert.truthy(err:find(data .. ":2: field 'x': '1e400' is not a finite number (out of range)", 1, true), err)
    put(data, "inf\n")
    _, err, code = run(([[env:read_lines(%q):parse_csv{"x:number"}:print()]]):format(data))
    assert.are.equal(1, code)
    assert.truthy(err:find(data .. ":1: field 'x': 'inf' is not a number", 1, true), err)
  end)
end)

describe("positions with several threads", function()
  local function data_with_bad_line(total, bad)
    local t = {}
    for i = 1, total do t[#t + 1] = i == bad and ("k" .. i .. ",oops") or ("k" .. i .. "," .. i) end
    local p = path("d.csv")
    put(p, table.concat(t, "\n") .. "\n")
    return p
  end

  it("a parse error on another thread names the file and the line, as with one thread", function()
    local data = data_with_bad_line(400, 302)
    local body = ([[env:read_lines(%q):parse_csv{"id", "v:integer"}:print()]]):format(data)
    local errs = {}
    for _, args in ipairs({"-p 2", "-p 2 --threads 2"}) do
      local _, err, code = run(body, args)
      assert.are.equal(1, code, args)
      assert.truthy(err:find(data .. ":302: field 'v': 'oops' is not an integer", 1, true), args .. ": " .. err)
      errs[#errs + 1] = err:gsub("%d+_job%.lua", "job.lua")
    end
    assert.are.equal(errs[1], errs[2]) -- the same message, operator line included
  end)

  it("the side output's line and a map error's 'while reading' are the same on two threads", function()
    local data = data_with_bad_line(400, 302)
    local body = ([[
local s = env:read_lines(%q):parse_csv{"id", "v:integer", on_error = "side_output"}
s:get_side_output("parse_errors"):map(function(e) return e.line end):print()]]):format(data)
    local out, err, code = run(body, "-p 2 --threads 2")
    assert.are.equal(0, code, err)
    assert.truthy(out:match("^%d?>? ?302\n$"), out)
    local _, err2, code2 = run(([[
env:read_lines(%q):map(function(l) if l:find("oops") then error("bad " .. l) end return l end):print()]])
      :format(data), "-p 2 --threads 2")
    assert.are.equal(1, code2)
    assert.truthy(err2:find("while reading " .. data .. ":302", 1, true), err2)
  end)

  -- read_lines{parallel = true}: each instance reads the lines that start in its part of
  -- the bytes, and numbers them as if it had read the file from its start
  it("a file read in parts names the line of an error in any part, on one thread or two", function()
    local data = data_with_bad_line(400, 302)
    local body = ([[env:read_lines(%q, {parallel = true}):parse_csv{"id", "v:integer"}:print()]]):format(data)
    local errs = {}
    for _, args in ipairs({"-p 2", "-p 2 --threads 2", "-p 3", "-p 4 --threads 2"}) do
      local _, err, code = run(body, args)
      assert.are.equal(1, code, args)
      assert.truthy(err:find(data .. ":302: field 'v': 'oops' is not an integer", 1, true), args .. ": " .. err)
      errs[#errs + 1] = err:gsub("%d+_job%.lua", "job.lua"):gsub(" %d/%d", "")
    end
    assert.are.equal(errs[1], errs[2])
  end)

  it("a file read in parts gives every line once, with its number; a header is skipped once", function()
    local t = {"id,v"}
    for i = 1, 500 do t[#t + 1] = "k" .. i .. "," .. ("x"):rep(i % 37) end -- lines of many lengths
    local data = path("parts.csv")
    put(data, table.concat(t, "\n") .. "\n")
    local body = ([[
local s = env:read_lines(%q, {parallel = true, chunk = 100})
  :parse_csv{"id", "v:integer", header = true, on_error = "side_output"}
s:get_side_output("parse_errors"):map(function(e) return e.line .. " " .. e.text end):print()]]):format(data)
    for _, args in ipairs({"-p 1", "-p 2", "-p 3 --threads 2", "-p 7"}) do
      local out, err, code = run(body, args)
      assert.are.equal(0, code, err)
      local got = {}
      for l in out:gmatch("[^\n]+") do got[#got + 1] = l:gsub("^%d+> ", "") end
      table.sort(got, function(a, b) return tonumber(a:match("^%d+")) < tonumber(b:match("^%d+")) end)
      -- every line but the header is a parse error ("x..." is no integer; "" is none)
      assert.are.equal(500, #got, args)
      for i = 1, 500 do assert.are.equal((i + 1) .. " " .. t[i + 1], got[i], args) end
    end
  end)

  it("parallel is refused for standard input and a followed file; parts show in the metrics", function()
    local _, err, code = run([[env:read_lines("-", {parallel = true}):print()]])
    assert.are.equal(1, code)
    assert.truthy(err:find("read_lines: parallel reads a file in parts, not standard input", 1, true), err)
    local data = data_with_bad_line(10, 0)
    _, err, code = run(([[env:read_lines(%q, {parallel = true, follow = true}):print()]]):format(data))
    assert.are.equal(1, code)
    assert.truthy(err:find("not a followed file", 1, true), err)
    _, err, code = run(([[env:read_lines(%q, {parallel = true}):print()]]):format(data), "-p 2 --metrics")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("read_lines%([^\n]*%) 2/2"), err)
    assert.falsy(err:find("[one instance", 1, true), err)
  end)
end)
