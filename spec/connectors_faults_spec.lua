-- Faults the connectors survive (issue 34, items 3-5): a broker outage under write_kafka
-- with checkpoints and kill -9, a slow reader of a big NATS stream, a paused and a
-- restarted NATS server under write_nats, a deleted stream under a resumed write_nats.
-- Every server is started here on 127.0.0.1 (spec/services.lua) and stopped by its pid.
local helper = require("helper")
local services = require("services")

local q = services.quote

-- Runs a job script given as text: wmrun [opts] script args; stdout, stderr, exit code.
local function job(text, args, opts)
  local p = helper.write_tmp(text, ".lua")
  local out, err, code = helper.wmrun((opts or "") .. " " .. q(p) .. " " .. args)
  os.remove(p)
  return out, err, code
end

-- n lines "line-1" .. "line-n" in dir/in.txt; its path.
local function numbered_input(dir, n)
  local lines = {}
  for i = 1, n do lines[i] = "line-" .. i end
  local inp = dir .. "/in.txt"
  local f = assert(io.open(inp, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  return inp
end

-- How often each "line-i" occurs in text: missing (a list of i), duplicates (the count of
-- extra copies), total lines.
local function account(text, n)
  local seen, total = {}, 0
  for l in text:gmatch("[^\n]+") do
    total = total + 1
    local i = tonumber(l:match("^line%-(%d+)$"))
    assert(i and i >= 1 and i <= n, "an unexpected line: " .. l)
    seen[i] = (seen[i] or 0) + 1
  end
  local missing, dups = {}, 0
  for i = 1, n do
    if not seen[i] then missing[#missing + 1] = i
    else dups = dups + seen[i] - 1 end
  end
  return missing, dups, total
end

-- The newest complete checkpoint of a checkpoint directory (its id), or 0.
local function newest_checkpoint(ck)
  local best = 0
  local p = io.popen("ls " .. q(ck) .. " 2>/dev/null")
  for name in p:lines() do
    local id = tonumber(name:match("^chk%-(%d+)$"))
    if id and id > best and helper.read_or_empty(ck .. "/" .. name .. "/MANIFEST") ~= "" then best = id end
  end
  p:close()
  return best
end

describe("write_kafka with checkpoints", function()
  it("loses no record when killed with SIGKILL at random moments of broker outages (duplicates counted)", function() -- luacheck: ignore 631
    local k = services.kafka{"out:2"}
    local dir = helper.tmpdir()
    local run
    helper.finally(function()
      if run then run.kill() end
      k:stop()
      helper.rmdir(dir)
    end)
    local n = 30000
    local inp = numbered_input(dir, n)
    local ck = dir .. "/ck"
    -- (the map spends a little time per record, so that the job runs through several
    -- outages and kills before it reads its input to the end)
    local text = string.format("local inp, brokers = %q, %q\n", inp, k.bootstrap) .. [[
local wm = require("wm")
local env = wm.env{}
env:read_lines(inp, {chunk = 4096})
  :map(function(l) local x = 0; for i = 1, 10000 do x = x + i end; return l end)
  :write_kafka{brokers = brokers, topic = "out", format = "text"}
env:execute()]]
    local opts = "--checkpoint-dir " .. q(ck) .. " --checkpoint-interval 20ms"
    math.randomseed(tonumber(os.getenv("KFSEED")) or 34)
    local kills, last = 0, 0
    for round = 1, 6 do
      local rd = dir .. "/r" .. round
      assert(os.execute("mkdir " .. q(rd)))
      run = helper.bg_job(rd, text, opts)
      -- a checkpoint of this run with the brokers up, then an outage, and the kill at a
      -- random moment of it (while records wait for the broker, and checkpoints are due)
      local function log() return helper.read_or_empty(run.err) end
      assert.is_truthy(services.poll(function() return run.done() or newest_checkpoint(ck) > last end, 600), log())
      if run.done() then
        assert.are.equal(0, run.done(), log())
        break
      end
      k:down(1)
      os.execute(string.format("sleep %.3f", 0.05 + math.random() * 0.4))
      run.kill()
      local rc = services.poll(run.done, 600)
      assert.is_true(rc == 137 or rc == 0, "exit status " .. tostring(rc) .. ": " .. log())
      if rc == 137 then kills = kills + 1 end
      k:up(1)
      last = newest_checkpoint(ck)
      run = nil
      if rc == 0 then break end
    end
    assert.is_true(kills >= 3, "only " .. kills .. " runs were killed before the end")
    local _, err, code = job(text, "", opts)
    assert.are.equal(0, code, err)
    local out, e2, c2 = job([[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "out", bounded = "latest"}:print()
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, c2, e2)
    local missing, dups, total = account(out, n)
    io.stderr:write(string.format("\n  write_kafka: %d kills, %d messages for %d lines, %d duplicates\n",
      kills, total, n, dups))
    assert.are.equal(0, #missing, string.format("%d of %d lines lost (the first: line-%s)", #missing, n,
      tostring(missing[1])))
  end)
end)

-- A job writing the numbered lines of inp to stream OUT (subject "out"), spending a little
-- time per record, that creates the file `flag` once it has passed record 2000 (so that a
-- test can hurt the server while the job writes).
local function nats_writer(url, inp, flag, extra)
  return string.format("local url, inp, flag = %q, %q, %q\n", url, inp, flag) .. [[
local wm = require("wm")
local env = wm.env{}
local c = 0
env:read_lines(inp, {chunk = 4096})
  :map(function(l)
    c = c + 1
    if c == 2000 then io.open(flag, "w"):close() end
    local x = 0; for i = 1, 300 do x = x + i end
    return l
  end)
  :write_nats{url = url, stream = "OUT", subject = "out", format = "text", id_prefix = "t"]] .. (extra or "") .. [[}
env:execute()]]
end

-- What stream OUT holds: its lines.
local function nats_stream(url, name)
  local out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = arg[1], stream = arg[2], bounded = "latest"}:print()
env:execute()]], q(url) .. " " .. (name or "OUT"))
  assert.are.equal(0, code, err)
  return out
end

local function exists(path) return helper.read_or_empty(path) ~= "" or os.rename(path, path) ~= nil end

describe("write_nats", function()
  local function fixture()
    local fx = {n = services.nats(), dir = helper.tmpdir()}
    helper.finally(function()
      if fx.run then fx.run.kill() end
      os.execute("kill -CONT " .. (fx.n.pid or 0) .. " 2>/dev/null")
      fx.n:stop()
      helper.rmdir(fx.dir)
    end)
    fx.flag = fx.dir .. "/flag"
    return fx
  end

  it("rides out a pause of the server (SIGSTOP) and writes every record once", function()
    local fx = fixture()
    local nrec = 40000
    local inp = numbered_input(fx.dir, nrec)
    fx.run = helper.bg_job(fx.dir, nats_writer(fx.n.url, inp, fx.flag))
    local function log() return helper.read_or_empty(fx.run.err) end
    assert.is_truthy(services.poll(function() return exists(fx.flag) or fx.run.done() end, 600), log())
    os.execute("kill -STOP " .. fx.n.pid)
    os.execute("sleep 0.5") -- the length of the pause (the fault itself)
    os.execute("kill -CONT " .. fx.n.pid)
    assert.are.equal(0, services.poll(fx.run.done, 1200), log())
    local missing, dups, total = account(nats_stream(fx.n.url), nrec)
    assert.are.equal(0, #missing, #missing .. " lines lost")
    assert.are.equal(0, dups)
    assert.are.equal(nrec, total)
  end)

  it("rides out a restart of the server and writes every record once", function()
    local fx = fixture()
    local nrec = 40000
    local inp = numbered_input(fx.dir, nrec)
    fx.run = helper.bg_job(fx.dir, nats_writer(fx.n.url, inp, fx.flag))
    local function log() return helper.read_or_empty(fx.run.err) end
    assert.is_truthy(services.poll(function() return exists(fx.flag) or fx.run.done() end, 600), log())
    fx.n:kill()
    fx.n:start_again()
    assert.are.equal(0, services.poll(fx.run.done, 1200), log())
    local missing, dups, total = account(nats_stream(fx.n.url), nrec)
    assert.are.equal(0, #missing, #missing .. " lines lost")
    assert.are.equal(0, dups)
    assert.are.equal(nrec, total)
  end)

  it("refuses to resume into a stream deleted since the checkpoint, naming it", function()
    local fx = fixture()
    local inp = numbered_input(fx.dir, 40000)
    local opts = "--checkpoint-dir " .. q(fx.dir .. "/ck") .. " --checkpoint-interval 20ms"
    local text = nats_writer(fx.n.url, inp, fx.flag)
    fx.run = helper.bg_job(fx.dir, text, opts)
    local function log() return helper.read_or_empty(fx.run.err) end
    assert.is_truthy(services.poll(function() return exists(fx.flag) or fx.run.done() end, 600), log())
    fx.run.signal("TERM")
    assert.are.equal(0, services.poll(fx.run.done, 1200), log())
    assert.matches("stopped by SIGTERM with checkpoint", log())
    fx.run = nil
    -- the stream goes (its directory in the server's store, with the server stopped)
    fx.n:kill()
    assert(os.execute("rm -rf " .. q(fx.n.dir .. "/js/jetstream/$G/streams/OUT")))
    fx.n:start_again()
    local _, err, code = job(text, "", opts)
    assert.are.equal(1, code, err)
    assert.matches("stream 'OUT' does not exist", err)
    assert.matches("deleted", err)
  end)

  it("fails once the server has acknowledged nothing for its timeout, saying so", function()
    local fx = fixture()
    local inp = numbered_input(fx.dir, 40000)
    fx.run = helper.bg_job(fx.dir, nats_writer(fx.n.url, inp, fx.flag, ", timeout = \"1s\""))
    local function log() return helper.read_or_empty(fx.run.err) end
    assert.is_truthy(services.poll(function() return exists(fx.flag) or fx.run.done() end, 600), log())
    os.execute("kill -STOP " .. fx.n.pid)
    assert.are.equal(1, services.poll(fx.run.done, 1200), log())
    os.execute("kill -CONT " .. fx.n.pid)
    assert.matches("cannot publish to stream 'OUT' at nats://127%.0%.0%.1:%d+: no acknowledgement from the "
      .. "server for 1%.%d s while [^\n]*%(write_nats's timeout;", log())
  end)

  it("checks its timeout option", function()
    local _, err, code = job([[
local wm = require("wm")
wm.env{}:from_elements("a"):write_nats{url = "nats://127.0.0.1:1", stream = "S", subject = "s", timeout = "0s"}]], "")
    assert.are.equal(1, code)
    assert.matches("%.lua:2: write_nats: timeout must be positive", err)
  end)

  it("fails naming the stream when it is deleted while the job writes", function()
    local fx = fixture()
    local inp = numbered_input(fx.dir, 40000)
    fx.run = helper.bg_job(fx.dir, nats_writer(fx.n.url, inp, fx.flag))
    local function log() return helper.read_or_empty(fx.run.err) end
    assert.is_truthy(services.poll(function() return exists(fx.flag) or fx.run.done() end, 600), log())
    fx.n:kill()
    assert(os.execute("rm -rf " .. q(fx.n.dir .. "/js/jetstream/$G/streams/OUT")))
    fx.n:start_again()
    assert.are.equal(1, services.poll(fx.run.done, 1200), log())
    assert.matches("cannot publish to stream 'OUT' at nats://127%.0%.0%.1:%d+: the stream does not exist any "
      .. "more %(deleted while the job wrote to it", log())
  end)
end)

describe("read_nats", function()
  it("reads a big stream with a slow map to the end, dropping nothing (flow control, not a slow consumer)", function() -- luacheck: ignore 631
    local n = services.nats()
    local dir = helper.tmpdir()
    helper.finally(function() n:stop(); helper.rmdir(dir) end)
    local nrec = tonumber(os.getenv("RNCOUNT")) or 250000
    local inp = numbered_input(dir, nrec)
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1]):write_nats{url = arg[2], stream = "BIG", subject = "big", format = "text"}
env:execute()]], q(inp) .. " " .. q(n.url))
    assert.are.equal(0, code, err)
    -- the map takes its time: the server could send the whole stream meanwhile
    local out, e2, c2 = job([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = arg[1], stream = "BIG", bounded = "latest"}
  :map(function(l) local x = 0; for i = 1, 1000 do x = x + i end; return l end)
  :print()
env:execute()]], q(n.url))
    assert.are.equal(0, c2, e2)
    local missing, dups, total = account(out, nrec)
    assert.are.equal(0, #missing, #missing .. " lines lost")
    assert.are.equal(0, dups)
    assert.are.equal(nrec, total)
  end)

  it("a durable pull consumer goes on where the last run of the durable left it", function()
    local n = services.nats()
    helper.finally(function() n:stop() end)
    local function write(from, to)
      local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
local t = {}
for i = tonumber(arg[2]), tonumber(arg[3]) do t[#t + 1] = "line-" .. i end
env:from_elements(table.unpack(t)):write_nats{url = arg[1], stream = "D", subject = "d", format = "text",
  id_prefix = arg[2]}
env:execute()]], q(n.url) .. " " .. from .. " " .. to)
      assert.are.equal(0, code, err)
    end
    local function read()
      local out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = arg[1], stream = "D", durable = "dur", bounded = "latest"}:print()
env:execute()]], q(n.url))
      assert.are.equal(0, code, err)
      return out
    end
    write(1, 10)
    local missing, dups, total = account(read(), 10)
    assert.are.same({0, 0, 10}, {#missing, dups, total})
    write(11, 15)
    assert.are.equal("line-11\nline-12\nline-13\nline-14\nline-15\n", read())
  end)

  it("fails naming the stream when it is deleted while the job reads", function()
    local n = services.nats()
    local dir = helper.tmpdir()
    local run
    helper.finally(function()
      if run then run.kill() end
      n:stop()
      helper.rmdir(dir)
    end)
    local out = dir .. "/out.txt"
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:from_elements("a", "b"):write_nats{url = arg[1], stream = "GONE", subject = "gone", format = "text"}
env:execute()]], q(n.url))
    assert.are.equal(0, code, err)
    run = helper.bg_job(dir, string.format("local url, out = %q, %q\n", n.url, out) .. [[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = url, stream = "GONE"}
  :sink(function(v) local o = io.open(out, "a"); o:write(v, "\n"); o:close() end)
env:execute()]])
    local function log() return helper.read_or_empty(run.err) end
    assert.is_truthy(services.poll(function() return helper.read_or_empty(out) == "a\nb\n" end, 600), log())
    n:kill()
    assert(os.execute("rm -rf " .. q(n.dir .. "/js/jetstream/$G/streams/GONE")))
    n:start_again()
    assert.are.equal(1, services.poll(run.done, 1200), log())
    assert.matches("read_nats%(GONE@[^)]*%) %([^)]*%): stream 'GONE' does not exist any more at "
      .. "nats://127%.0%.0%.1:%d+ %(deleted while the job read it, at sequence 3 of subject 'gone'%)", log())
  end)
end)
