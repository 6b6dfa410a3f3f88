-- The pictures read as the data says (issue 31): the lab's page (`wmrun lab --plot`) loaded in
-- headless Chromium (`--dump-dom`, tried a bounded number of times until the page's load
-- handler has run: never a fixed sleep). Checked: no script error, no label of the Pareto
-- chart overlapping another or leaving the chart (measured by the browser), one unit per
-- axis, and marks at the pixel that the axis's own ticks give for figures worked out by hand.
local h = require("helper")
local wm = require("wm")

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- The page as Chromium has run it; tried up to 3 times until `ready(dom)` holds.
local function dom(path, ready)
  local last
  for _ = 1, 3 do
    local out, err, code = h.sh_plain("timeout 60 chromium --headless --no-sandbox --disable-gpu "
      .. "--virtual-time-budget=3000 --dump-dom 'file://" .. path .. "' 2>/dev/null")
    assert.are.equal(0, code, err)
    last = out
    if ready(out) then return out end
  end
  error("the page never became ready:\n" .. tostring(last):sub(1, 2000))
end

local function body_attr(d, name) return d:match("<body[^>]-" .. name .. '="([^"]*)"') end

-- The svg element of id in the DOM, as text.
local function svg(d, id) return d:match('<svg[^>]-id="' .. id .. '".-</svg>') end

-- The ticks of an axis ("xtick", "ytick") of an svg: {{v = data value, pos = pixel, text}}.
local function ticks(s, class)
  local out = {}
  for attrs, text in s:gmatch('<text([^>]-class="tick ' .. class .. '"[^>]*)>([^<]*)</text>') do
    local pos = tonumber(attrs:match(class == "xtick" and ' x="([^"]*)"' or ' y="([^"]*)"'))
    if class == "ytick" then pos = pos - 4 end -- the label sits 4 px below its line
    out[#out + 1] = {v = tonumber(attrs:match('data%-v="([^"]*)"')), pos = pos, text = text}
  end
  return out
end

-- The pixel of value v on an axis, from two of its ticks (f: the scale, identity, log10, ...).
local function pixel(tk, v, f)
  local a, b = tk[1], tk[#tk]
  return a.pos + (f(v) - f(a.v)) / (f(b.v) - f(a.v)) * (b.pos - a.pos)
end

local function id(v) return v end
local function log10(v) return math.log(v, 10) end
local function symlog(v) local a = math.log(1 + math.abs(v) / 10, 10) return v < 0 and -a or a end

-- A lab over events.csv (the file of spec/lab_spec.lua; its figures are worked out there).
local EVENTS = "a,100,1,100\na,900,1,950\na,300,1,1000\nb,1200,1,1250\na,1500,1,1600\na,700,1,1700\n"
  .. "b,2100,1,2200\na,2500,1,2600\n"

describe("the lab's page in Chromium", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  local function page_of(lab, name)
    local path = dir .. "/" .. name .. ".html"
    require("wm.lab.plot").write(path, lab, lab:run{curve = 1200, marks = 1500}, name)
    return dom(path, function(d) return body_attr(d, "data%-labels") ~= nil end)
  end

  -- By hand (spec/lab_spec.lua): latency p50 and share on time: perfect 100 ms, 8/8;
  -- bounded 0ms 700 ms, 7/8; bounded 500ms 1100 ms, 7/8. bounded 0ms's late record arrives
  -- at 1700 (1600 after the first arrival) with W = 1499 and P = 699: 800 ahead.
  it("draws each candidate where its figures are, and loads without errors", function()
    write(dir .. "/events.csv", EVENTS)
    local d = page_of(wm.lab{
      input = {path = dir .. "/events.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
               timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.tumbling("1s"), watermark_interval = "200ms",
      strategies = {bounded = {wm.watermarks.bounded_out_of_orderness(0),
                               wm.watermarks.bounded_out_of_orderness("500ms")}},
    }, "events")
    assert.is_nil(body_attr(d, "data%-errors"))
    assert.are.equal("0", body_attr(d, "data%-label%-overlaps"))
    assert.are.equal("0", body_attr(d, "data%-labels%-outside"))
    local p = svg(d, "pareto")
    local xt, yt = ticks(p, "xtick"), ticks(p, "ytick")
    local xf = p:find("log scale", 1, true) and log10 or id
    for name, fig in pairs({perfect = {100, 100}, ["bounded 0ms"] = {700, 87.5}, ["bounded 500ms"] = {1100, 87.5}}) do
      local cx, cy = p:match('<circle cx="([^"]*)" cy="([^"]*)"[^>]-data%-name="' .. name:gsub("%p", "%%%0") .. '"')
      assert.is_truthy(cx, name)
      assert.is_true(math.abs(tonumber(cx) - pixel(xt, fig[1], xf)) < 1, name .. " x")
      assert.is_true(math.abs(tonumber(cy) - pixel(yt, fig[2], id)) < 1, name .. " y")
    end
    local c = svg(d, "curves")
    assert.matches('data%-mode="perfect"', c)
    local cxt, cyt = ticks(c, "xtick"), ticks(c, "ytick")
    local yf = c:find('data-scale="symlog"', 1, true) and symlog or id
    local mx, my = c:match('<path d="M([%d.]+) ([%d.]+)[^"]*" class="late" data%-t="1600" data%-d="800"')
    assert.is_truthy(mx)
    assert.is_true(math.abs(tonumber(mx) - pixel(cxt, 1600, id)) < 1)
    assert.is_true(math.abs(tonumber(my) - pixel(cyt, 800, yf)) < 1)
  end)

  -- Every label of the 9 candidates of examples/lab/skew_stall.lua (several near 100 %)
  -- has a place of its own, inside the chart; each axis shows one unit.
  it("labels of a crowded Pareto chart never overlap; one unit per axis", function()
    local lab = dofile("examples/lab/skew_stall.lua")
    lab.base_dir = "examples/lab"
    local d = page_of(lab, "skew")
    assert.is_nil(body_attr(d, "data%-errors"))
    assert.are.equal("9", body_attr(d, "data%-labels"))
    assert.are.equal("0", body_attr(d, "data%-label%-overlaps"))
    assert.are.equal("0", body_attr(d, "data%-labels%-outside"))
    for _, id_ in ipairs({"pareto", "curves"}) do
      local units = {}
      for _, t in ipairs(ticks(svg(d, id_), "xtick")) do units[t.text:match("[a-z]+$")] = true end
      local n = 0
      for _ in pairs(units) do n = n + 1 end
      assert.are.equal(1, n, id_)
    end
  end)

  -- A long tail: every 50th record arrives 300 s late (by hand: each holds the perfect
  -- watermark back until it comes, so every candidate runs minutes ahead of it and the
  -- candidates, 0 to 500 ms apart, would coincide). The chart then draws each watermark
  -- against the median candidate's, on a symmetric log scale, the perfect one apart.
  it("a long tail: the watermarks against the median candidate's, on a log scale", function()
    local lines = {}
    for i = 1, 3000 do
      local ts = i * 10
      local arrival = i % 50 == 0 and ts + 300000 or ts + 5
      lines[#lines + 1] = {arrival, string.format("%s,%d,1,%d", i % 2 == 0 and "a" or "b", ts, arrival)}
    end
    table.sort(lines, function(x, y) return x[1] < y[1] end)
    local text = {}
    for i, l in ipairs(lines) do text[i] = l[2] end
    write(dir .. "/tail.csv", table.concat(text, "\n") .. "\n")
    local d = page_of(wm.lab{
      input = {path = dir .. "/tail.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
               timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.tumbling("1s"), watermark_interval = "200ms",
      strategies = {bounded = wm.lab.sweep(wm.watermarks.bounded_out_of_orderness, {0, "100ms", "500ms"})},
    }, "tail")
    assert.is_nil(body_attr(d, "data%-errors"))
    local c = svg(d, "curves")
    assert.matches('data%-mode="relative"', c)
    assert.matches('data%-scale="symlog"', c)
    -- the late marks sit where their value is on that scale
    local cyt = ticks(c, "ytick")
    local n = 0
    for my, v in c:gmatch('<path d="M[%d.]+ ([%d.]+)[^"]*" class="late" data%-t="%d+" data%-d="(%-?%d+)"') do
      n = n + 1
      if n <= 5 then assert.is_true(math.abs(tonumber(my) - pixel(cyt, tonumber(v), symlog)) < 1) end
    end
    assert.is_true(n > 0)
  end)
end)

-- The timeline (`wmrun --timeline`, --timeline-x time) of a replayed job: key a sends ts 0
-- to 2000 every 100 ms (arrival ts + 1000), then 6 old records (ts 100 to 600) arrive
-- together at 3500, and key b's two old records at 4000: all late (bounded 500 ms, tumbling
-- 1 s: the watermark is past 1000 by then) and dropped.
local TL_JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = "200ms"}
env:read_lines(arg[1], {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s")):count()
  :sink(function() end)
env:execute()
]]

describe("the timeline in Chromium", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  local function timeline(lines, name)
    write(dir .. "/job.lua", TL_JOB)
    write(dir .. "/" .. name .. ".csv", table.concat(lines, "\n") .. "\n")
    local _, err, code = h.wmrun("--timeline '" .. dir .. "/" .. name .. ".html' --timeline-x time '" .. dir
      .. "/job.lua' '" .. dir .. "/" .. name .. ".csv'")
    assert.are.equal(0, code, err)
    return dir .. "/" .. name .. ".html"
  end

  -- the lanes' x ticks: {v = processing time, pos = pixel, text}
  local function lane_ticks(d)
    local out = {}
    for v, x, text in d:gmatch('<g class="xt" data%-lv="0" data%-n="%d+" data%-v="([^"]*)"><text class="tick" '
        .. 'x="([^"]*)"[^>]*>([^<]*)') do
      out[#out + 1] = {v = tonumber(v), pos = tonumber(x), text = text}
    end
    return out
  end

  it("crowded late records: a count mark at their arrival, a pair stacked, no script error", function()
    local lines = {}
    for i = 0, 20 do lines[#lines + 1] = string.format("a,%d,1,%d", i * 100, i * 100 + 1000) end
    for i = 1, 6 do lines[#lines + 1] = string.format("a,%d,1,3500", i * 100) end
    lines[#lines + 1] = "b,300,1,4000"
    lines[#lines + 1] = "b,400,1,4000"
    local d = dom(timeline(lines, "crowd"), function(t) return t:find('data-ready="1"', 1, true) ~= nil end)
    assert.is_nil(d:match('<html[^>]-data%-errors="([^"]*)"'))
    local tk = lane_ticks(d)
    assert.is_true(#tk >= 5)
    for _, t in ipairs(tk) do assert.is_truthy(t.text == "0" or t.text:match("^%+[%d.]+ s$"), t.text) end
    local lanes = d:match('<g class="lanes">.*')
    local n, cx = lanes:match('<circle class="count has%-late" data%-n="(%d+)" cx="([^"]*)"')
    assert.are.equal("6", n)
    assert.is_true(math.abs(tonumber(cx) - pixel(tk, 3500, id)) < 1)
    local lane_b = lanes:match('<g class="lane" data%-key="b">(.-)<text class="lh"')
    local pair = {}
    for x, y in lane_b:gmatch('<circle class="late dropped" cx="([^"]*)" cy="([^"]*)"') do
      pair[#pair + 1] = {tonumber(x), tonumber(y)}
    end
    assert.are.equal(2, #pair)
    for _, p in ipairs(pair) do assert.is_true(math.abs(p[1] - pixel(tk, 4000, id)) < 1) end
    assert.are_not.equal(pair[1][2], pair[2][2]) -- stacked, not on top of each other
  end)

  -- A run of 29 minutes: about ten round ticks, in minutes (no Chromium needed: the ticks
  -- are in the page as written).
  it("--timeline-x time: ticks that fit a 29-minute run, in one unit", function()
    local lines = {}
    for i = 0, 29 do lines[#lines + 1] = string.format("a,%d,1,%d", i * 60000, i * 60000 + 1000) end
    local page = h.read(timeline(lines, "long"))
    local tk = lane_ticks(page)
    assert.is_true(#tk >= 5 and #tk <= 16, #tk .. " ticks")
    for i, t in ipairs(tk) do
      if i == 1 then assert.are.equal("0", t.text)
      else assert.is_truthy(t.text:match("^%+%d+ min$"), t.text) end
    end
  end)
end)
