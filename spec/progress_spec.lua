-- The progress line (--progress, --no-progress; docs/metrics.md): one line on stderr redrawn
-- with "\r" (records, records/s, % of the files read, the watermark as a UTC time); never
-- when stderr is not a terminal unless forced.
local h = require("helper")
local q = h.shell_quote

local CSV = "a,1\na,7\na,12\na,2\n"
local JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_lines(arg[1]):parse_csv{"k", "ts:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts", 1000))
  :key_by("k"):window(wm.windows.tumbling("5s")):count():print()
env:execute()
]]


local function run_on(args)
  local csv = h.write_tmp(CSV, ".csv")
  local job = h.write_tmp(JOB, ".lua")
  local out, err, code = h.wmrun((args or "") .. " " .. q(job) .. " " .. q(csv))
  os.remove(csv)
  os.remove(job)
  return out, err, code
end

local FIRED = '{"count":1,"key":"a","start":0,"stop":5000}\n{"count":1,"key":"a","start":5000,"stop":10000}\n'
  .. '{"count":1,"key":"a","start":10000,"stop":15000}\n'

describe("the progress line", function()
  it("--progress draws it with \\r and leaves the final numbers on a line of their own", function()
    local out, err, code = run_on("--progress")
    assert.are.equal(0, code)
    assert.are.equal(FIRED, out)
    assert.matches("^\rwmrun: 4 records, %d+ records/s, 100%% read, watermark end of input *\n$", err)
  end)

  it("is not drawn when stderr is not a terminal, nor with --no-progress", function()
    local _, err, code = run_on("")
    assert.are.equal(0, code)
    assert.are.equal("", err)
    local _, err2 = run_on("--progress --no-progress")
    assert.are.equal("", err2)
  end)

  it("shows the watermark as a UTC time while the job runs", function()
    local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:generate(function(i) return {k = "a", ts = i * 1000} end, {rate = 50})
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("5s")):count():print()
env:execute()
]]
    local dir = h.tmpdir()
    -- (bg_job: its shell waits for wmrun and writes its exit status, which the spec waits for)
    local p = h.bg_job(dir, job, "--progress")
    local pid = p.pid()
    h.finally(function() p.kill(); h.rmdir(dir) end)
    -- record i has ts = i s, so the watermark is a whole second minus 1 ms after 1970-01-01
    local line = h.wait_for(function()
      return h.read_or_empty(dir .. "/err"):match("\r(wmrun: %d+ records, %d+ records/s, watermark "
        .. "1970%-01%-01 %d%d:%d%d:%d%d%.999)")
    end, "a progress line with a watermark")
    os.execute("kill " .. pid)
    p.wait()
    assert.is_truthy(line)
    assert.matches("\rwmrun: %d+ records, %d+ records/s, watermark end of input *\n$", h.read(dir .. "/err"))
  end)
end)
