-- --trace-watermarks=json (issue 31): the watermark trace as JSON lines, one object a
-- line, with the same events as the text trace. Counts worked out by hand from the jobs.
local h = require("helper")
local cjson = require("cjson")

-- three records at 1000, 2000, 3000, monotonous watermarks (ts - 1) after every record
local JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({k = "a", t = 1000}, {k = "b", t = 2000}, {k = "a", t = 3000})
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps()
    :with_timestamp_assigner(function(r) return r.t end))
  :key_by(function(r) return r.k end)
  :window(wm.windows.tumbling(2000))
  :reduce(function(a, b) return {k = a.k, t = a.t + b.t} end)
  :print()
env:execute()
]]

local function text_lines(err)
  local t = {}
  for l in err:gmatch("[^\n]+") do
    if l:find("^%[watermark%]") or l:find("^%[checkpoint%]") then t[#t + 1] = l end
  end
  return t
end

local function json_events(err)
  local t = {}
  for l in err:gmatch("[^\n]+") do
    if l:sub(1, 1) == "{" then t[#t + 1] = cjson.decode(l) end
  end
  return t
end

-- cjson decodes every number as a float: 999 -> 999.0
local function tm(v)
  if v == cjson.null then return "-" end
  return tostring(type(v) == "number" and math.tointeger(v) or v)
end

-- the text line of a JSON event, as docs/watermarks.md documents the text trace
local function as_text(e)
  local where = e.source == "generated" and "generated" or ("channel " .. tm(e.channel))
  if e.input then where = where .. " (input " .. tm(e.input) .. ")" end
  local both = ""
  if e.inputs then
    local function one(k)
      local i = e.inputs[k]
      return tm(i.watermark) .. (i.idle and " idle" or "")
    end
    both = " [input 1: " .. one(1) .. ", input 2: " .. one(2) .. "]"
  end
  local head = "[watermark] " .. e.operator .. ": " .. where .. ": "
  if e.kind == "watermark" then
    return head .. tm(e.from) .. " -> " .. tm(e.to) .. both
  elseif e.kind == "input_watermark" then
    return head .. "input " .. tm(e.input) .. " " .. tm(e.from) .. " -> " .. tm(e.to) .. ", held at "
      .. tm(e.held_at) .. both
  elseif e.kind == "input_idle" or e.kind == "input_active" then
    return head .. "input " .. tm(e.input) .. " " .. e.kind:sub(7) .. " (watermark " .. tm(e.watermark)
      .. ")" .. both
  end
  return head .. e.kind .. " (watermark " .. tm(e.watermark) .. ")" .. both
end

local function run_both(job, args)
  local path = h.write_tmp(job, ".lua")
  local out1, err1, c1 = h.wmrun((args or "") .. " --trace-watermarks " .. h.shell_quote(path))
  local out2, err2, c2 = h.wmrun((args or "") .. " --trace-watermarks=json " .. h.shell_quote(path))
  assert.are.equal(0, c1, err1)
  assert.are.equal(0, c2, err2)
  assert.are.equal(out1, out2)
  return text_lines(err1), json_events(err2), err2
end

describe("--trace-watermarks=json", function()
  it("has the events of the text trace, counted by hand", function()
    local text, ev, err = run_both(JOB)
    -- the assigner generates MIN->999, ->1999, ->2999, ->MAX (end of input) and its own
    -- input goes MIN -> MAX at the end: 5; the window and print each see the 4 advances
    local per = {}
    for _, e in ipairs(ev) do
      local op = e.operator:match("^(.-) %(")
      per[op] = (per[op] or 0) + 1
      assert.are.equal("watermark", e.kind)
      assert.are.equal(1, e.subtask)
      assert.are.equal(1, e.parallelism)
      assert.is_number(e.processing_time)
    end
    assert.are.same({["timestamps/watermarks"] = 5, ["tumbling window reduce"] = 4, print = 4}, per)
    assert.are.equal(13, #ev)
    local gen = {}
    for _, e in ipairs(ev) do
      if e.source == "generated" then gen[#gen + 1] = tm(e.from) .. ">" .. tm(e.to) end
    end
    assert.are.same({"MIN>999", "999>1999", "1999>2999", "2999>MAX"}, gen)
    -- every non-event line of stderr is absent: the trace is JSON only
    for l in err:gmatch("[^\n]+") do assert.are.equal("{", l:sub(1, 1)) end
    local mine = {}
    for i, e in ipairs(ev) do mine[i] = as_text(e) end
    assert.are.same(text, mine)
  end)

  it("traces idle and active status changes as kinds", function()
    local job = [[
      local wm = require("wm")
      local env = wm.env{watermark_interval = 0}
      env:from_elements(1, 2)
        :assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
          return {on_event = function(self, r, ts, out)
            if r == 1 then out:mark_idle() else out:emit_watermark(5) end
          end}
        end):with_timestamp_assigner(function(r) return r end))
        :print()
      env:execute()
    ]]
    local text, ev = run_both(job)
    local kinds = {}
    for _, e in ipairs(ev) do kinds[e.kind] = (kinds[e.kind] or 0) + 1 end
    -- record 1: the generator turns idle (generated and print's channel 1); record 2:
    -- active again on both, then 5 and MAX on both
    assert.are.same({idle = 2, active = 2, watermark = 5}, kinds)
    local mine = {}
    for i, e in ipairs(ev) do mine[i] = as_text(e) end
    assert.are.same(text, mine)
  end)

  it("a two-input operator's events carry its input and both inputs' watermarks", function()
    local text, ev = run_both(require("two_inputs_jobs").fast_slow)
    local two = 0
    for _, e in ipairs(ev) do
      if e.inputs then
        two = two + 1
        assert.is_true(e.input == 1 or e.input == 2)
      end
    end
    assert.is_true(two > 0)
    local mine = {}
    for i, e in ipairs(ev) do mine[i] = as_text(e) end
    assert.are.same(text, mine)
  end)

  it("reports checkpoints as kind checkpoint, as the text trace does", function()
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/in.txt", "w"))
    f:write("1000\n2000\n3000\n")
    f:close()
    local job = h.write_tmp([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_lines(arg[1]):map(tonumber)
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps()
    :with_timestamp_assigner(function(r) return r end))
  :print()
env:execute()
]], ".lua")
    local args = " --checkpoint-dir " .. h.shell_quote(dir .. "/ck") .. " " .. h.shell_quote(job) .. " "
      .. h.shell_quote(dir .. "/in.txt")
    local _, terr, tcode = h.wmrun("--trace-watermarks --no-progress" .. args)
    assert.are.equal(0, tcode, terr)
    h.rmdir(dir .. "/ck")
    local _, err, code = h.wmrun("--trace-watermarks=json --no-progress" .. args)
    assert.are.equal(0, code, err)
    -- one checkpoint before the first record, one final at the end
    local ck = {}
    for _, e in ipairs(json_events(err)) do
      if e.kind == "checkpoint" then
        ck[#ck + 1] = tm(e.id) .. (e.final and " (final)" or "")
        assert.is_true(e.bytes > 0 and e.ms >= 0 and e.alignment_ms >= 0)
      end
    end
    assert.are.same({"1", "2 (final)"}, ck)
    local tck = {}
    for _, l in ipairs(text_lines(terr)) do tck[#tck + 1] = l:match("^%[checkpoint%] (.-):") end
    assert.are.same(ck, tck)
  end)

  it("wm.testing's trace = \"json\" stamps events with the virtual clock", function()
    local job = [[
local wm = require("wm")
local h = wm.testing.harness(function(input)
  return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
end, {trace = "json", processing_time = 7000})
h:push({id = "a", vc = 1}, 1000)
h:watermark(4999)
]]
    local _, err, code = h.run_job(job, "")
    assert.are.equal(0, code, err)
    local ev = json_events(err)
    -- the input, the window and the harness output each see MIN -> 4999, at 7000
    assert.are.equal(3, #ev)
    for _, e in ipairs(ev) do
      assert.are.equal("MIN>4999@7000", tm(e.from) .. ">" .. tm(e.to) .. "@" .. tm(e.processing_time))
    end
  end)

  it("rejects an unknown format", function()
    local _, err, code = h.wmrun("--trace-watermarks=xml " .. h.shell_quote(h.write_tmp(JOB, ".lua")))
    assert.are.equal(2, code)
    assert.matches("%-%-trace%-watermarks: expected 'text' or 'json', got 'xml'", err)
  end)
end)

-- The page as headless Chromium has run it; tried up to 3 times until its script has run
-- (data-ready), never a fixed wait.
local function dom(url)
  local last
  for _ = 1, 3 do
    local out, err, code = h.sh_plain("timeout 60 chromium --headless --no-sandbox --disable-gpu "
      .. "--virtual-time-budget=3000 --dump-dom " .. h.shell_quote(url) .. " 2>/dev/null")
    assert.are.equal(0, code, err)
    last = out
    if out:find('data-ready="1"', 1, true) then return out end
  end
  error("the page never became ready:\n" .. tostring(last):sub(1, 2000))
end

-- the marks of the page: {op = name, off = hidden by the filter}
local function marks(d)
  local t = {}
  for attrs in d:gmatch("<circle([^>]*)>") do
    t[#t + 1] = {op = attrs:match('data%-op="([^"]*)"'), off = attrs:find("data-off", 1, true) ~= nil}
  end
  return t
end

describe("wmrun --timeline OUT.html --from-trace TRACE", function()
  it("draws every event, and only the chosen operator's with ?op=", function()
    local dir = h.tmpdir()
    local job = h.write_tmp(JOB, ".lua")
    local _, err, code = h.wmrun("--trace-watermarks=json " .. h.shell_quote(job))
    assert.are.equal(0, code, err)
    local f = assert(io.open(dir .. "/trace.jsonl", "w"))
    f:write(err)
    f:close()
    local page = dir .. "/trace.html"
    local _, perr, pcode = h.wmrun("--timeline " .. h.shell_quote(page) .. " --from-trace "
      .. h.shell_quote(dir .. "/trace.jsonl"))
    assert.are.equal(0, pcode, perr)
    -- by hand (first test): 13 events, 5 of the assigner, 4 of the window, 4 of print
    local function count(d)
      local shown, per = 0, {}
      for _, m in ipairs(marks(d)) do
        if not m.off then
          shown = shown + 1
          local op = m.op:match("^(.-) %(")
          per[op] = (per[op] or 0) + 1
        end
      end
      return shown, per
    end
    local all = dom("file://" .. page)
    assert.is_nil(all:match('data%-errors="([^"]*)"'))
    assert.are.equal(13, #marks(all))
    assert.are.same({13, {["timestamps/watermarks"] = 5, ["tumbling window reduce"] = 4, print = 4}},
      {count(all)})
    local p = dom("file://" .. page .. "?op=print")
    assert.is_nil(p:match('data%-errors="([^"]*)"'))
    assert.are.same({4, {print = 4}}, {count(p)})
    assert.matches('data%-shown="4"', p)
    -- the full name, as the select holds it
    local wname
    for _, e in ipairs(json_events(err)) do
      if e.operator:find("^tumbling window reduce %(") then wname = e.operator end
    end
    local w = dom("file://" .. page .. "?op=" .. wname:gsub("[^%w]", function(c)
      return string.format("%%%02X", c:byte()) end))
    assert.are.same({4, {["tumbling window reduce"] = 4}}, {count(w)})
  end)

  it("needs --timeline, and names a line that is not JSON", function()
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/bad.jsonl", "w"))
    f:write('{"kind":"watermark"}\n{"kind": oops\n')
    f:close()
    local _, err, code = h.wmrun("--from-trace " .. h.shell_quote(dir .. "/bad.jsonl"))
    assert.are.equal(2, code)
    assert.matches("%-%-from%-trace needs %-%-timeline OUT%.html", err)
    local _, err2, code2 = h.wmrun("--timeline " .. h.shell_quote(dir .. "/t.html") .. " --from-trace "
      .. h.shell_quote(dir .. "/bad.jsonl"))
    assert.are.equal(1, code2)
    assert.matches("bad%.jsonl:2: not a JSON object", err2)
  end)
end)
