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
    assert.matches("%-%-trace%-watermarks: expected 'text', 'json' or 'json,records', got 'xml'", err)
  end)
end)

-- A keyed window job (tumbling 2 s, allowed lateness 500 ms, late records to "late"), with
-- monotonous watermarks (max ts - 1) after every record. By hand, the window operator sees:
--   a@1000 (watermark MIN), then W 999;
--   b@2500 (W 999), then W 2499: a's [0, 2000) fires (on time);
--   a@4200 (W 2499), then W 4199: b's [2000, 4000) fires;
--   b@1500: its window [0, 2000) was cleaned at 1999 + 500 <= 4199: late by 4199 - 1500 = 2699,
--     to "late";
--   a@3900 (W 4199): [2000, 4000) is past its end but within the lateness: a late firing;
--   a@6000 (W 4199), then W 5999: a's [4000, 6000) fires; at the end (MAX) a's [6000, 8000).
local KEYED = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({k = "a", t = 1000}, {k = "b", t = 2500}, {k = "a", t = 4200}, {k = "b", t = 1500},
    {k = "a", t = 3900}, {k = "a", t = 6000})
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps()
    :with_timestamp_assigner(function(r) return r.t end))
  :key_by(function(r) return r.k end)
  :window(wm.windows.tumbling(2000))
  :allowed_lateness(500)
  :side_output_late_data("late")
  :reduce(function(a, b) return {k = a.k, t = a.t + b.t} end)
  :print()
env:execute()
]]

local KEYED_BY_HAND = {
  "record a 1000 W MIN", "record b 2500 W 999", "firing a [0,2000) W 2499",
  "record a 4200 W 2499", "firing b [2000,4000) W 4199",
  "late b 1500 W 4199 by 2699 to late", "record a 3900 W 4199", "late firing a [2000,4000) W 4199",
  "record a 6000 W 4199", "firing a [4000,6000) W 5999", "firing a [6000,8000) W MAX",
}

-- a keyed event as one line of KEYED_BY_HAND
local function keyed_line(e)
  if e.kind == "record" then
    return ("record %s %s W %s"):format(e.key, tm(e.timestamp), tm(e.watermark))
  elseif e.kind == "late" then
    return ("late %s %s W %s by %s to %s"):format(e.key, tm(e.timestamp), tm(e.watermark),
      tm(e.late_by), e.dropped and "dropped" or e.side_output)
  elseif e.kind == "firing" then
    return ("%sfiring %s [%s,%s) W %s"):format(e.late and "late " or "", e.key, tm(e.start),
      tm(e["end"]), tm(e.watermark))
  elseif e.kind == "timer" then
    return ("timer %s %s %s W %s"):format(e.key, tm(e.time), e.domain, tm(e.watermark))
  end
end

local function keyed_events(ev)
  local t = {}
  for _, e in ipairs(ev) do
    if e.key ~= nil then t[#t + 1] = keyed_line(e) end
  end
  return t
end

describe("--trace-watermarks=json,records", function()
  it("adds the keyed events worked out by hand, and the watermark events stay as they were", function()
    local path = h.write_tmp(KEYED, ".lua")
    local out1, err1, c1 = h.wmrun("--trace-watermarks=json " .. h.shell_quote(path))
    local out2, err2, c2 = h.wmrun("--trace-watermarks=json,records " .. h.shell_quote(path))
    assert.are.equal(0, c1, err1)
    assert.are.equal(0, c2, err2)
    assert.are.equal(out1, out2)
    local plain, ev = json_events(err1), json_events(err2)
    assert.are.same({}, keyed_events(plain)) -- opt-in: the plain trace has none
    assert.are.same(KEYED_BY_HAND, keyed_events(ev))
    local wm_only = {}
    for _, e in ipairs(ev) do
      if e.key == nil then
        e.processing_time = nil
        wm_only[#wm_only + 1] = e
      else
        assert.are.equal("tumbling window reduce (", e.operator:sub(1, 24))
        assert.are.same({1, 1}, {e.subtask, e.parallelism})
        assert.is_number(e.processing_time)
      end
    end
    for _, e in ipairs(plain) do e.processing_time = nil end
    assert.are.same(plain, wm_only)
    -- in the order they happen at the window: each firing after the advance that caused it
    local seq = {}
    for _, e in ipairs(ev) do
      if e.operator and e.operator:find("^tumbling window reduce") then
        seq[#seq + 1] = e.kind == "watermark" and ("W " .. tm(e.to))
          or ((e.late and "late " or "") .. e.kind .. " " .. e.key)
      end
    end
    assert.are.same({"record a", "W 999", "record b", "W 2499", "firing a", "record a", "W 4199",
      "firing b", "late b", "record a", "late firing a", "record a", "W 5999", "firing a", "W MAX",
      "firing a"}, seq)
    for _, e in ipairs(ev) do
      if e.kind == "late" then
        assert.are.same({500, false}, {e.allowed_lateness, e.dropped})
      end
    end
  end)

  it("a record of sliding windows is one event, however many windows it goes into", function()
    -- windows of 3 s every 1 s: each record goes into 3; two equal records of key 1 and one
    -- of key 2 are three arrivals; keys as print shows them (the number 1 as "1")
    local _, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({k = 1, t = 1000}, {k = 1, t = 1000}, {k = 2, t = 2500})
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps()
    :with_timestamp_assigner(function(r) return r.t end))
  :key_by(function(r) return r.k end):window(wm.windows.sliding(3000, 1000)):count():print()
env:execute()
]], "--trace-watermarks=json,records")
    assert.are.equal(0, code, err)
    local rec = {}
    for _, e in ipairs(json_events(err)) do
      if e.kind == "record" then rec[#rec + 1] = keyed_line(e) end
    end
    assert.are.same({"record 1 1000 W MIN", "record 1 1000 W 999", "record 2 2500 W 999"}, rec)
  end)

  it("a process function's records and timers, also with --timeline recording the run", function()
    -- a timer at ts + 500 per record: x@1000 -> 1500, y@2200 -> 2700; the watermark 2199
    -- after y fires x's, the end (MAX) y's
    local dir = h.tmpdir()
    local _, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({k = "x", t = 1000}, {k = "y", t = 2200})
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps()
    :with_timestamp_assigner(function(r) return r.t end))
  :key_by("k")
  :process{process_element = function(r, ctx) ctx.timer_service:register_event_time_timer(r.t + 500) end,
    on_timer = function(t, ctx, out) out(ctx.key .. t) end}
  :print()
env:execute()
]], "--trace-watermarks=json,records --timeline " .. h.shell_quote(dir .. "/t.html"))
    assert.are.equal(0, code, err)
    assert.are.same({"record x 1000 W MIN", "record y 2200 W 999", "timer x 1500 event W 2199",
      "timer y 2700 event W MAX"}, keyed_events(json_events(err)))
    assert.is_truthy(h.read(dir .. "/t.html"):find("<svg", 1, true))
  end)

  it("wm.testing's trace = \"json,records\": the keyed events on the virtual clock", function()
    local _, err, code = h.run_job([[
local wm = require("wm")
local h = wm.testing.harness(function(input)
  return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
end, {trace = "json,records", processing_time = 7000})
h:push({id = "a", vc = 1}, 1000)
h:push({id = "b", vc = 2}, 2000)
h:watermark(4999)
h:push({id = "a", vc = 3}, 3000)
]], "")
    assert.are.equal(0, code, err)
    local ev = json_events(err)
    -- a, b into [0, 5000); 4999 fires both (a's first: keys in arrival order); a@3000 after
    -- that is 4999 - 3000 = 1999 behind the watermark: dropped (no lateness, no side output)
    local firings = {}
    for _, e in ipairs(ev) do
      if e.kind == "firing" then firings[#firings + 1] = e.key end
      if e.key ~= nil then assert.are.equal(7000, e.processing_time) end
    end
    table.sort(firings)
    assert.are.same({"a", "b"}, firings)
    local rest = {}
    for _, l in ipairs(keyed_events(ev)) do
      if not l:find("^firing") then rest[#rest + 1] = l end
    end
    assert.are.same({"record a 1000 W MIN", "record b 2000 W MIN", "late a 3000 W 4999 by 1999 to dropped"},
      rest)
    local _, err2, code2 = h.run_job([[
require("wm").testing.harness(function(input) return input end, {trace = "xml"})
]], "")
    assert.are_not.equal(0, code2)
    assert.matches('trace: expected true, "text", "json" or "json,records"', err2)
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

  it("a keyed trace: ?key=KEY shows that key's marks and every watermark, where the data says", function()
    local dir = h.tmpdir()
    local _, err, code = h.wmrun("--trace-watermarks=json,records " .. h.shell_quote(h.write_tmp(KEYED, ".lua")))
    assert.are.equal(0, code, err)
    local f = assert(io.open(dir .. "/trace.jsonl", "w"))
    f:write(err)
    f:close()
    local page = dir .. "/trace.html"
    local _, perr, pcode = h.wmrun("--timeline " .. h.shell_quote(page) .. " --from-trace "
      .. h.shell_quote(dir .. "/trace.jsonl"))
    assert.are.equal(0, pcode, perr)
    local ev = json_events(err)
    -- by hand (above): 16 watermark events (the assigner's 5 generated and 1 of its input,
    -- 5 each at the window and print), 11 keyed: a 4 records and 4 firings; b 1 record, 1
    -- late, 1 firing
    assert.are.equal(27, #ev)
    local function shown(d)
      local t = {}
      for attrs in d:gmatch("<circle([^>]*)>") do
        if not attrs:find("data-off", 1, true) then
          local k = attrs:match('data%-key="([^"]*)"')
          local kind = attrs:match('class="ev ([^"]*)"')
          t[#t + 1] = {key = k, kind = kind, cx = tonumber(attrs:match('cx="([^"]*)"')),
            cy = tonumber(attrs:match('cy="([^"]*)"'))}
        end
      end
      return t
    end
    local function count(list)
      local c = {}
      for _, m in ipairs(list) do
        local k = (m.key or "-") .. " " .. m.kind
        c[k] = (c[k] or 0) + 1
      end
      return c
    end
    local all = dom("file://" .. page)
    assert.is_nil(all:match('data%-errors="([^"]*)"'))
    assert.are.equal(27, #shown(all))
    local a = dom("file://" .. page .. "?key=a")
    assert.is_nil(a:match('data%-errors="([^"]*)"'))
    assert.are.same({["- watermark"] = 16, ["a record"] = 4, ["a firing"] = 3,
      ["a firing late_firing"] = 1}, count(shown(a)))
    assert.matches('data%-shown="24"', a)
    local b = shown(dom("file://" .. page .. "?key=b"))
    assert.are.same({["- watermark"] = 16, ["b record"] = 1, ["b late"] = 1, ["b firing"] = 1}, count(b))
    -- where the data says: x by the event's place in the trace (27 events over the plot's
    -- 960 px from x = 110), y by its time (the plot's 380 px from y = 20, 10 px inside;
    -- times from 0, the first window's start, to 8000, the last one's end)
    local function X(i) return 110 + 960 * (i - 0.5) / 27 end
    local function Y(v) return 390 - 360 * v / 8000 end
    local want = {}
    for i, e in ipairs(ev) do
      if e.key == "b" then
        local v = e.kind == "firing" and e["end"] or e.timestamp
        want[#want + 1] = {key = "b", kind = e.kind, cx = X(i), cy = Y(v)}
      end
    end
    local got = {}
    for _, m in ipairs(b) do
      if m.key then got[#got + 1] = m end
    end
    assert.are.equal(3, #got)
    for k = 1, 3 do
      assert.are.same({want[k].key, want[k].kind}, {got[k].key, got[k].kind})
      assert.is_true(math.abs(got[k].cx - want[k].cx) < 0.06 and math.abs(got[k].cy - want[k].cy) < 0.06,
        ("%s: (%s, %s), want (%.1f, %.1f)"):format(got[k].kind, got[k].cx, got[k].cy, want[k].cx, want[k].cy))
    end
    -- b's firing (before its late record) at its window's end, 4000; the late record at 1500
    assert.are.same({"firing", 210, "late", 322.5}, {got[2].kind, got[2].cy, got[3].kind, got[3].cy})
    -- with the operator too: the window's 5 watermark events and b's 3
    local wname
    for _, e in ipairs(ev) do
      if e.operator and e.operator:find("^tumbling window reduce %(") then wname = e.operator end
    end
    local w = dom("file://" .. page .. "?op=" .. wname:gsub("[^%w]", function(c)
      return string.format("%%%02X", c:byte()) end) .. "&key=b")
    assert.are.same({["- watermark"] = 5, ["b record"] = 1, ["b late"] = 1, ["b firing"] = 1},
      count(shown(w)))
    -- a key no event has: the watermarks only
    assert.are.same({["- watermark"] = 16}, count(shown(dom("file://" .. page .. "?key=zz"))))
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
