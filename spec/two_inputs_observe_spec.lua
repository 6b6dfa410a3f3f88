-- --metrics, --trace-watermarks and --timeline show both inputs of a two-input operator
-- (issue 28): its records, late records and own watermark per input. The figures are worked
-- out by hand from the jobs below.
local h = require("helper")

-- input 1 gets records at 10 then 100, input 2 at 10 then 20, watermarks ts - 1 after every
-- record, a timer at 50 (spec/two_inputs_jobs.lua)
local FAST_SLOW = require("two_inputs_jobs").fast_slow

local TR = "[watermark] keyed co-process: " -- the trace lines of the two-input operator

-- the lines of text that mention `what`, without the operators' "(job.lua:N)"
local function lines_of(text, what)
  local t = {}
  for l in text:gmatch("[^\n]+") do
    if l:find(what, 1, true) then t[#t + 1] = (l:gsub(" %([^()]*%.lua:%d+%)", "")) end
  end
  return t
end

-- the --metrics rows: operator name -> {fields...}; an "input K" row belongs to the row above
local function metrics_rows(err)
  local rows, last = {}, nil
  for l in err:gmatch("[^\n]+") do
    local name, rest = l:match("^(%S.-%S)%s%s+(%d+%s.*)$")
    local input, irest = l:match("^  input (%d)%s+(%d+%s.*)$")
    if input and last then
      local f = {}
      for w in irest:gmatch("%S+") do f[#f + 1] = w end
      last.inputs[tonumber(input)] = f
    elseif name then
      local f = {}
      for w in rest:gmatch("%S+") do f[#f + 1] = w end
      last = {fields = f, inputs = {}}
      rows[(name:gsub(" %([^()]*%.lua:%d+%)", ""))] = last
    end
  end
  return rows
end

describe("two-input operators seen from outside", function()
  it("--trace-watermarks: which input moved, both inputs' own watermarks", function()
    local _, err, code = h.run_job(FAST_SLOW, "--trace-watermarks")
    assert.are.equal(0, code, err)
    -- by hand: fast's 9 alone cannot move the operator (slow has none: MIN); slow's 9 makes
    -- min(9, 9); fast's 99 is held at 9; slow's 19 gives min(99, 19); fast's end (MAX) is
    -- held at 19; slow's end moves it to MAX
    assert.are.same({
      TR .. "channel 1 (input 1): input 1 MIN -> 9, held at MIN [input 1: 9, input 2: -]",
      TR .. "channel 2 (input 2): MIN -> 9 [input 1: 9, input 2: 9]",
      TR .. "channel 1 (input 1): input 1 9 -> 99, held at 9 [input 1: 99, input 2: 9]",
      TR .. "channel 2 (input 2): 9 -> 19 [input 1: 99, input 2: 19]",
      TR .. "channel 1 (input 1): input 1 99 -> MAX, held at 19 [input 1: MAX, input 2: 19]",
      TR .. "channel 2 (input 2): 19 -> MAX [input 1: MAX, input 2: MAX]",
    }, lines_of(err, "keyed co-process"))
    -- a one-input operator's lines are as before
    assert.are.same({"[watermark] print: channel 1: MIN -> 9", "[watermark] print: channel 1: 9 -> 19",
      "[watermark] print: channel 1: 19 -> MAX"}, lines_of(err, "[watermark] print"))
  end)

  it("--metrics: a row per input with its records and watermark", function()
    local _, err, code = h.run_job(FAST_SLOW, "--metrics")
    assert.are.equal(0, code, err)
    local rows = metrics_rows(err)
    local op = rows["keyed co-process"]
    assert.is_table(op, err)
    -- in 4 (2 + 2), out 5 (4 records and the timer's), watermark MAX, 0 keys (the key keeps
    -- no ctx.state and its timer has fired: a key that holds nothing is gone)
    assert.are.same({"4", "5", "0", "MAX", "0", "0", "0"}, op.fields)
    -- per input: records, "-" "-", own watermark, late dropped, late to side, "-"
    assert.are.same({"2", "-", "-", "MAX", "0", "0", "-"}, op.inputs[1])
    assert.are.same({"2", "-", "-", "MAX", "0", "0", "-"}, op.inputs[2])
    assert.are.same({}, rows["print"].inputs) -- one input: no rows
  end)

  it("--metrics at -p 2, on one and two threads: every broadcast instance gets every rule", function()
    local job = [[
      local wm = require("wm")
      local env = wm.env()
      local rules = env:from_elements({name = "big", limit = 100}, {name = "any", limit = 0},
        {name = "huge", limit = 1000})
      local pay = env:from_elements({u = "ann", a = 5}, {u = "bob", a = 500}, {u = "cy", a = 50},
        {u = "dan", a = 7}, {u = "eve", a = 9})
      pay:key_by("u"):connect(rules:broadcast()):process{
        process_broadcast_element = function(r, ctx) ctx.broadcast_state[r.name] = r.limit end,
        process_element = function(p, ctx, out) out(p.u) end}:print()
      env:execute()
    ]]
    for _, args in ipairs({"-p 2 --metrics", "-p 2 --threads 2 --metrics"}) do
      local _, err, code = h.run_job(job, args)
      assert.are.equal(0, code, err)
      local rows = metrics_rows(err)
      local a, b = rows["keyed broadcast process 1/2"], rows["keyed broadcast process 2/2"]
      assert.is_table(a, err)
      assert.is_table(b, err)
      -- input 2 (broadcast): the 3 rules reach each instance; input 1: the 5 payments split by key
      assert.are.equal("3", a.inputs[2][1])
      assert.are.equal("3", b.inputs[2][1])
      assert.are.equal(5, tonumber(a.inputs[1][1]) + tonumber(b.inputs[1][1]))
      -- and each instance's records in is the sum of its inputs'
      assert.are.equal(tonumber(a.fields[1]), tonumber(a.inputs[1][1]) + 3)
      assert.are.equal(tonumber(b.fields[1]), tonumber(b.inputs[1][1]) + 3)
    end
  end)

  it("a replayed job (read_lines{arrival}, docs/lab.md) shows its inputs the same way", function()
    local dir = h.tmpdir()
    local function write(name, text)
      local f = assert(io.open(dir .. "/" .. name, "wb"))
      f:write(text)
      f:close()
    end
    -- orders (id, cur, ts, arrival) and rates (cur, r, ts, arrival)
    write("orders.csv", "o1,EUR,1000,1100\no2,USD,2000,2050\n")
    write("rates.csv", "EUR,3,900,950\nUSD,5,2500,2600\n")
    write("job.lua", [[
local wm = require("wm")
local DIR = ...
local env = wm.env{watermark_interval = 0}
local st = wm.watermarks.monotonous():with_timestamp_field("ts")
local orders = env:read_lines(DIR .. "/orders.csv", {arrival = "arrival"})
  :parse_csv{"id", "cur", "ts:integer", "arrival:integer"}:assign_timestamps_and_watermarks(st)
local rates = env:read_lines(DIR .. "/rates.csv", {arrival = "arrival"})
  :parse_csv{"cur", "r:integer", "ts:integer", "arrival:integer"}:assign_timestamps_and_watermarks(st)
orders:key_by("cur"):connect(rates:key_by("cur")):process{
  process_element1 = function(o, ctx)
    ctx.state.o = o
    ctx.timer_service:register_event_time_timer(o.ts)
  end,
  process_element2 = function(r, ctx) ctx.state.r = r end,
  on_timer = function(t, ctx, out)
    local r = ctx.state.r
    out(ctx.state.o.id .. "@" .. t .. "=" .. (r and r.ts <= t and r.r or "none"))
  end}:print()
env:execute()
]])
    local out, err, code = h.wmrun("--metrics --trace-watermarks " .. h.shell_quote(dir .. "/job.lua") .. " "
      .. h.shell_quote(dir))
    h.rmdir(dir)
    assert.are.equal(0, code, err)
    -- by hand, in arrival order: rates 900 (950) makes input 2 899, input 1 has none; o1 (1100)
    -- makes input 1 999: the operator 899; o2 (2050) moves input 1 to 1999 and the end of the
    -- orders (right after their last line) to MAX, both held at 899; USD 2500 (2600) moves the
    -- operator to 2499: o1's timer (1000, EUR 3 at 900) and o2's (2000: USD's rate is later)
    assert.are.equal("o1@1000=3\no2@2000=none\n", out)
    assert.are.same({
      TR .. "channel 2 (input 2): input 2 MIN -> 899, held at MIN [input 1: -, input 2: 899]",
      TR .. "channel 1 (input 1): MIN -> 899 [input 1: 999, input 2: 899]",
      TR .. "channel 1 (input 1): input 1 999 -> 1999, held at 899 [input 1: 1999, input 2: 899]",
      TR .. "channel 1 (input 1): input 1 1999 -> MAX, held at 899 [input 1: MAX, input 2: 899]",
      TR .. "channel 2 (input 2): 899 -> 2499 [input 1: MAX, input 2: 2499]",
      TR .. "channel 2 (input 2): 2499 -> MAX [input 1: MAX, input 2: MAX]",
    }, lines_of(err, "[watermark] keyed co-process"))
    local op = metrics_rows(err)["keyed co-process"]
    assert.are.same({"2", "-", "-", "MAX", "0", "0", "-"}, op.inputs[1])
    assert.are.same({"2", "-", "-", "MAX", "0", "0", "-"}, op.inputs[2])
  end)

  it("--timeline: a watermark line per input of the two-input operator", function()
    local dir = h.tmpdir()
    local svg = dir .. "/t.svg"
    local _, err, code = h.run_job(FAST_SLOW, "--timeline " .. h.shell_quote(svg))
    assert.are.equal(0, code, err)
    local text = h.read(svg)
    local lines = {}
    for class, op, title in text:gmatch('<path class="wm ([^"]*)"[^>]-data%-op="([^"]*)"[^>]*><title>([^<]*)') do
      lines[(op:gsub(" %([^()]*%.lua:%d+%)", ""))] = {class = class, title = title}
    end
    h.rmdir(dir)
    local one, two = lines["keyed co-process, input 1"], lines["keyed co-process, input 2"]
    assert.is_table(one, text)
    assert.is_table(two)
    assert.are.equal("window input1", one.class)
    assert.are.equal("window input2", two.class)
    -- input 1: 9, 99, MAX; input 2: 9, 19, MAX (the trace above)
    assert.matches("the own watermark of input 1 .*: 3 advances, last MAX", one.title)
    assert.matches("the own watermark of input 2 .*: 3 advances, last MAX", two.title)
  end)
end)
