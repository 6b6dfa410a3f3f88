-- Signals (docs/api.md "Signals"): the first SIGINT, SIGTERM or SIGHUP drains the job; a
-- user function that never returns to the loop is interrupted through a Lua hook, with an
-- error naming it; a second signal exits with status 130, whatever the job is doing.
-- Every wait is for a condition (a marker line the job prints), never for a time.
local h = require("helper")

local function marked(p)
  h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end,
    "the job's marker line", 60)
end

describe("signals", function()
  local dir, jobs
  before_each(function() dir, jobs = h.tmpdir(), {} end)
  after_each(function()
    for _, p in ipairs(jobs) do p.kill() end
    h.rmdir(dir)
  end)
  local function start(text, args)
    local p = h.bg_job(dir, text, args)
    jobs[#jobs + 1] = p
    return p
  end

  local spin = [[
local wm = require("wm")
local env = wm.env()
env:from_elements(1, 2):map(function(r)
  io.stderr:write("started\n")
  while true do end
end):print()
env:execute()
]]

  it("SIGINT interrupts a map that loops forever, naming the function (issue 13.10)", function()
    local p = start(spin)
    marked(p)
    p.signal("INT")
    assert.are.equal(1, p.wait())
    local err = h.read_or_empty(p.err)
    assert.matches("job%.lua:5: interrupted by SIGINT: the function defined at [^\n]*job%.lua:3 did not return", err)
    assert.matches("in operator 'map %([^\n]*job%.lua:3%)'", err)
    assert.matches("on record 1", err)
  end)

  it("SIGTERM interrupts a runaway map on the second of two threads", function()
    local p = start([[
local wm = require("wm")
local env = wm.env{parallelism = 2}
env:from_elements(1, 2, 3, 4):rebalance():map(function(r)
  if wm.core.thread() == 2 then io.stderr:write("started\n") while true do end end
  return r
end):print()
env:execute()
]], "--threads 2")
    marked(p)
    p.signal("TERM")
    assert.are.equal(1, p.wait())
    assert.matches("job%.lua:4: interrupted by SIGTERM: the function defined at [^\n]*job%.lua:3 did not return",
      h.read_or_empty(p.err))
    assert.matches("in operator 'map %([^\n]*job%.lua:3%) 2/2'", h.read_or_empty(p.err))
  end)

  it("SIGHUP drains as SIGTERM does: the open window fires into the output file (issue 13.17)", function()
    local data, out = dir .. "/in.csv", dir .. "/result.jsonl"
    local f = assert(io.open(data, "w"))
    f:write("a,1,1\na,2,2\n")
    f:close()
    local p = start(([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local n = 0
env:read_lines(%q, {follow = true, poll = "50ms"})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :map(function(r) n = n + 1; if n == 2 then io.stderr:write("started\n") end; return r end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts", 1000))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
  :write_lines(%q)
env:execute()
]]):format(data, out))
    marked(p)
    p.signal("HUP")
    assert.are.equal(0, p.wait(), h.read_or_empty(p.err))
    assert.are.equal('{"id":"a","ts":1,"vc":3}\n', h.read_or_empty(out))
  end)

  it("a second signal exits 130 even while a function is blocked in a system call", function()
    assert(os.execute("mkfifo '" .. dir .. "/fifo'"))
    local p = start(([[
local wm = require("wm")
local env = wm.env()
env:from_elements(1):map(function(r)
  io.stderr:write("started\n")
  local f = io.open(%q, "r") -- no writer: open() blocks
  return r
end):print()
env:execute()
]]):format(dir .. "/fifo"))
    marked(p)
    p.signal("INT")
    p.signal("INT")
    assert.are.equal(130, p.wait())
  end)
end)
