-- wmrun --timeline and h:timeline: the picture must be well-formed XML and hold exactly
-- what the run did (one mark per record, per firing, per late record; watermark steps in
-- order), and a large run must stay small.
local helper = require("helper")
local lxp = require("lxp")
local wm = require("wm")
local testing = require("wm.testing")

-- Parses XML text into a tree {tag, attr, children}; errors on malformed input.
local function parse(text)
  local root = {tag = "#root", attr = {}, children = {}}
  local stack = {root}
  local p = lxp.new({
    StartElement = function(_, name, attr)
      local e = {tag = name, attr = attr, children = {}, text = ""}
      table.insert(stack[#stack].children, e)
      stack[#stack + 1] = e
    end,
    EndElement = function() stack[#stack] = nil end,
    CharacterData = function(_, s) local top = stack[#stack]; top.text = (top.text or "") .. s end,
  })
  local ok, msg, line = p:parse(text)
  assert(ok, "malformed XML: " .. tostring(msg) .. " at line " .. tostring(line))
  ok, msg = p:parse()
  assert(ok, "malformed XML at the end: " .. tostring(msg))
  p:close()
  assert(#stack == 1, "unclosed elements")
  return root.children[1]
end

local function has_class(e, c)
  local cl = e.attr and e.attr.class
  if not cl then return false end
  for w in cl:gmatch("%S+") do if w == c then return true end end
  return false
end

-- Every element under e (depth first) for which pred holds.
local function find(e, pred, out)
  out = out or {}
  for _, c in ipairs(e.children or {}) do
    if pred(c) then out[#out + 1] = c end
    find(c, pred, out)
  end
  return out
end

local function group(panel, cls)
  return find(panel, function(x) return x.tag == "g" and has_class(x, cls) end)[1]
end

local function with_class(e, ...)
  local cls = {...}
  return find(e, function(x)
    for _, c in ipairs(cls) do if not has_class(x, c) then return false end end
    return true
  end)
end

local function title_of(e)
  for _, c in ipairs(e.children) do if c.tag == "title" then return c.text end end
  return nil
end

-- The steps of a watermark path "M x y H x V y ... [H x]": list of {x, y}.
local function steps(d)
  local pts = {}
  local x, y = d:match("^M([%d.]+) ([%d.]+)")
  pts[1] = {tonumber(x), tonumber(y)}
  for hx, vy in d:gmatch("H([%d.]+)V([%d.]+)") do pts[#pts + 1] = {tonumber(hx), tonumber(vy)} end
  return pts
end

local function panels(svg) return with_class(svg, "panel") end

-- Every file a test makes goes into one directory of this spec's own, removed at the end.
local tmpdir
local function tmpfile(name) return tmpdir .. "/" .. name end
setup(function()
  tmpdir = helper.tmpdir()
end)
teardown(function() os.execute("rm -rf '" .. tmpdir .. "'") end)

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

local function run_c(outfile, extra)
  local out, err, code = helper.wmrun((extra or "") .. " --timeline " .. outfile .. " " ..
    helper.root .. "/examples/c_lateness_side_output.lua")
  assert(code == 0, err)
  return out, err
end

describe("wmrun --timeline", function()
  it("draws scenario c: every record, the firings, the late firings and the side output", function()
    local path = tmpfile("t1.svg")
    local out, err = run_c(path, "--trace-watermarks")
    -- the job's own output and trace are unchanged
    assert.equal(helper.read(helper.root .. "/examples/expected/c_lateness_side_output.expected"), out)
    local svg = parse(helper.read(path))
    os.remove(path)
    assert.equal("svg", svg.tag)
    local p = panels(svg)
    assert.equal(1, #p)
    p = p[1]
    -- 10 input lines: 8 ordinary dots, and the 2 records that went to the side output
    local recs = with_class(group(p, "records"), "rec")
    local lates = with_class(group(p, "lates"), "late")
    assert.equal(8, #recs)
    assert.equal(2, #lates)
    for _, l in ipairs(lates) do
      assert.is_true(has_class(l, "side"))
      assert.truthy(title_of(l):find("Sent to side output 'late'", 1, true))
      assert.truthy(title_of(l):find("allowed lateness (2000 ms)", 1, true))
    end
    -- the records at 1 s and 2 s after the window was cleaned up (records #8 and #9)
    assert.truthy(title_of(lates[1]):find("^late record #8: ts 1577844001000"))
    assert.truthy(title_of(lates[2]):find("^late record #9: ts 1577844002000"))
    -- firings: [0, 5) on time, then three late firings; [5, 10) at the end of input
    local marks = group(p, "marks")
    assert.equal(2, #with_class(marks, "fire", "ontime"))
    assert.equal(3, #with_class(marks, "fire", "late"))
    assert.equal(2, #with_class(marks, "cleanup"))
    for _, f in ipairs(with_class(marks, "fire", "late")) do
      assert.truthy(title_of(f):find("late firing of window [1577844000000", 1, true))
    end
    assert.equal(2, #with_class(group(p, "bands"), "band"))
    assert.equal("5", p.attr["data-firings"])
    assert.equal("3", p.attr["data-late-firings"])
    assert.equal("2", p.attr["data-late"])
    -- the assigner's watermark: one step per generated advance of the trace, going up
    local generated = 0
    for line in err:gmatch("[^\n]+") do
      if line:find("generated: ", 1, true) and not line:find("idle") then generated = generated + 1 end
    end
    local lines = with_class(group(p, "watermarks"), "wm", "assigner")
    assert.equal(1, #lines)
    local pts = steps(lines[1].attr.d)
    assert.equal(generated, #pts)
    assert.equal(6, #pts)
    for i = 2, #pts do
      assert.is_true(pts[i][1] >= pts[i - 1][1], "x goes forward")
      assert.is_true(pts[i][2] < pts[i - 1][2], "the watermark goes up")
    end
    -- the window operator's combined input watermark is drawn too, in another colour, and
    -- the legend tells the two apart
    local window = with_class(group(p, "watermarks"), "wm", "window")
    assert.equal(1, #window)
    assert.are_not.equal(lines[1].attr.stroke, window[1].attr.stroke)
    local legend = {}
    for _, t in ipairs(find(group(p, "legend"), function(x) return x.tag == "text" end)) do
      legend[#legend + 1] = t.text
    end
    legend = table.concat(legend, "|")
    assert.truthy(legend:find("generated by the assigner", 1, true), legend)
    assert.truthy(legend:find("input of the window operator", 1, true), legend)
  end)

  -- one mark per checkpoint the run took, counted against the trace's `[checkpoint] N`
  -- lines (a run ends with a final checkpoint, and takes one before its first record):
  -- its number, size and duration in the hover, the legend saying what it is
  local function checkpoint_marks(extra, records)
    local path, ck = tmpfile("ck.svg"), tmpfile("ck")
    local _, err = run_c(path, extra .. " --trace-watermarks --checkpoint-dir '" .. ck .. "'")
    os.execute("rm -rf '" .. ck .. "'")
    local svg = parse(helper.read(path))
    os.remove(path)
    local taken = {}
    for line in err:gmatch("[^\n]+") do
      local id, rest = line:match("^%[checkpoint%] (%d+)(.*)")
      if id then
        local bytes, ms = rest:match(": (%d+) bytes in ([%d.]+) ms")
        taken[#taken + 1] = {id = id, final = rest:find("^ %(final%)") ~= nil, bytes = bytes, ms = ms}
      end
    end
    local p = panels(svg)[1]
    local marks = with_class(group(p, "checkpoints"), "ckpt")
    assert.is_true(#taken >= 2, err)
    assert.equal(#taken, #marks)
    for i, m in ipairs(marks) do
      local t, title = taken[i], title_of(marks[i])
      assert.equal(t.id, m.attr["data-id"])
      assert.equal("checkpoint " .. t.id, title:match("^checkpoint %d+"))
      assert.truthy(title:find(": " .. t.bytes .. " bytes", 1, true), title)
      assert.truthy(title:find(" in " .. t.ms .. " ms", 1, true), title)
      assert.equal(t.final, title:find("(final", 1, true) ~= nil, title)
      -- a vertical line across the plot
      local x0, x1 = m.attr.d:match("^M([%d.]+) [%d.]+V[%d.]+$"), nil -- luacheck: ignore 311
      assert.truthy(x0, m.attr.d)
      if i > 1 then
        x1 = marks[i - 1].attr.d:match("^M([%d.]+)")
        assert.is_true(tonumber(x0) >= tonumber(x1), "in the order they were taken")
      end
    end
    assert.truthy(taken[#taken].final, "the run ends with a final checkpoint")
    assert.truthy(title_of(marks[1]):find("before the first record", 1, true))
    assert.truthy(title_of(marks[#marks]):find("after " .. records .. " records", 1, true))
    local stats = with_class(p, "stats")[1]
    assert.truthy(stats.text:find(#taken .. " checkpoints", 1, true), stats.text)
    local legend = {}
    for _, t in ipairs(find(group(p, "legend"), function(x) return x.tag == "text" end)) do
      legend[#legend + 1] = t.text
    end
    assert.truthy(table.concat(legend, "|"):find("checkpoint completed", 1, true))
  end

  it("marks every checkpoint the job took", function()
    checkpoint_marks("", 10)
  end)

  it("marks every checkpoint of a job on two threads, whichever thread committed it", function()
    -- the recorder observes thread 1 (its 5 records), the other thread commits some
    checkpoint_marks("-p 2 --threads 2 --checkpoint-interval 1ms", 5)
  end)

  it("has no checkpoint mark nor legend entry without --checkpoint-dir", function()
    local path = tmpfile("nock.svg")
    run_c(path)
    local text = helper.read(path)
    os.remove(path)
    assert.equal(0, #with_class(parse(text), "ckpt"))
    assert.falsy(text:find("checkpoint", 1, true))
  end)

  it("writes a self-contained HTML page", function()
    local path = tmpfile("t2.html")
    run_c(path)
    local html = helper.read(path)
    os.remove(path)
    assert.truthy(html:find("^<!DOCTYPE html>"))
    -- one file: the zoom script is inline, nothing is fetched from anywhere
    assert.truthy(html:find("<script>", 1, true))
    assert.truthy(html:find("addEventListener('wheel'", 1, true))
    assert.falsy(html:find("src=", 1, true))
    assert.falsy(html:find("href=", 1, true))
    assert.falsy(html:find("@import", 1, true))
    for ref in html:gmatch("url%((.-)%)") do
      assert.equal("#", ref:sub(1, 1), "url(" .. ref .. ") is not inside the page")
    end
    -- the SVG inside is well-formed XML with the same marks
    local svg = parse(html:match("<svg.-</svg>"))
    assert.equal(8, #with_class(svg, "rec"))
  end)

  it("can put processing time on the x axis", function()
    local path = tmpfile("t3.svg")
    run_c(path, "--timeline-x time")
    local text = helper.read(path)
    os.remove(path)
    assert.truthy(text:find(">processing time", 1, true))
    assert.falsy(text:find("arrival order of the records", 1, true))
    assert.equal(8, #with_class(parse(text), "rec"))
  end)

  it("rejects bad options", function()
    local _, err, code = helper.wmrun("--compare x.lua job.lua")
    assert.equal(2, code)
    assert.truthy(err:find("--compare needs --timeline", 1, true))
    _, err, code = helper.wmrun("--timeline-x sideways --timeline a.svg job.lua")
    assert.equal(2, code)
    assert.truthy(err:find("'order' or 'time'", 1, true))
  end)

  -- Runs scenario c with --timeline path, which must be refused before the job runs.
  local function refused(path, message)
    local out, err, code = helper.wmrun("--timeline " .. path .. " " .. helper.root ..
      "/examples/c_lateness_side_output.lua")
    assert.equal(2, code)
    assert.equal("", out, "the job did not run")
    assert.truthy(err:find("--timeline " .. path .. ": " .. message, 1, true), err)
  end

  it("refuses, before the job runs, a file that is not .html or .svg", function()
    local path = tmpfile("x.png")
    refused(path, "expected a file name ending in .html (a page) or .svg, got '.png'")
    assert.is_false(exists(path))
  end)

  it("fails before the job runs when the timeline cannot be written", function()
    refused(tmpfile("missing/t.html"), "cannot write there: No such file or directory")
    -- a file that can be written is not left behind by the check when the job fails
    local ok_path = tmpfile("ok.svg")
    local _, err2, code2 = helper.wmrun("--timeline " .. ok_path .. " " .. tmpfile("nojob.lua"))
    assert.equal(1, code2, err2)
    assert.is_false(exists(ok_path))
  end)

  it("compares two strategies on the same input, one above the other", function()
    -- the same job with 5 s of out-of-orderness instead of 2 s: nothing is late
    local src = helper.read(helper.root .. "/examples/c_lateness_side_output.lua")
    local other = src:gsub('bounded_out_of_orderness%("2s"%)', 'bounded_out_of_orderness("5s")')
    local data = helper.root .. "/examples/data/c_lateness_side_output.csv"
    local job = tmpfile("other.lua")
    local f = assert(io.open(job, "w"))
    f:write(other)
    f:close()
    local path = tmpfile("t4.svg")
    local _, err, code = helper.wmrun("--timeline " .. path .. " --compare " .. job .. " " ..
      helper.root .. "/examples/c_lateness_side_output.lua " .. data)
    os.remove(job)
    assert.equal(0, code, err)
    local svg = parse(helper.read(path))
    os.remove(path)
    local p = panels(svg)
    assert.equal(2, #p)
    assert.truthy(p[1].attr["data-title"]:find("c_lateness_side_output.lua$"))
    assert.equal("2", p[1].attr["data-late"])
    assert.equal("0", p[2].attr["data-late"])
    assert.equal(0, #with_class(group(p[2], "lates"), "late"))
    assert.equal(10, #with_class(group(p[2], "records"), "rec"))
    -- with 5 s of delay, [0, 5) fires only at the end of input: no on-time firing
    -- before it, so no delay is measured; with 2 s it fired 3001 ms of event time late
    assert.equal("3001.0", p[1].attr["data-mean-firing-delay"])
    assert.truthy(err:find("2 late records, 3 late firings, mean firing delay 3001 ms", 1, true))
    assert.truthy(err:find("0 late records", 1, true))
  end)
end)

describe("h:timeline", function()
  it("draws what the harness pushed: one dot per record, one mark per firing", function()
    local h = testing.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling("5s")):allowed_lateness("1s")
        :side_output_late_data("late"):sum("vc")
    end)
    h:push({id = "a", vc = 1}, 1000):push({id = "b", vc = 2}, 2000):push({id = "a", vc = 1}, 6000)
    h:watermark(4999)                        -- [0, 5) fires for a and b: one mark, 2 keys
    h:push({id = "a", vc = 1}, 3000)         -- a late firing of a's [0, 5)
    h:watermark(6000)                        -- cleanup of [0, 5) (4999 + 1000 <= 6000)
    h:push({id = "b", vc = 1}, 3500)         -- late: to the side output
    h:finish()
    local results = h:output()
    assert.equal(4, #results)
    assert.equal(1, #h:side_output("late"))
    local path = tmpfile("t5.svg")
    h:timeline(path)
    local svg = parse(helper.read(path))
    os.remove(path)
    local p = panels(svg)[1]
    assert.equal(4, #with_class(group(p, "records"), "rec"))
    local lates = with_class(group(p, "lates"), "late")
    assert.equal(1, #lates)
    assert.truthy(title_of(lates[1]):find("ts 3500, key b", 1, true))
    -- the 4 results: 2 keys at 4999 (one mark), 1 late firing, a's [5, 10) at the end
    local n = 0
    for _, f in ipairs(with_class(group(p, "marks"), "fire")) do n = n + tonumber(f.attr["data-n"]) end
    assert.equal(#results, n)
    assert.equal(1, #with_class(group(p, "marks"), "fire", "late"))
    local two = with_class(group(p, "marks"), "fire", "ontime")[1]
    assert.equal("2", two.attr["data-n"])
    assert.truthy(title_of(two):find("2 keys", 1, true))
    -- keys are coloured and named in the legend
    local legend = group(p, "legend")
    local names = {}
    for _, t in ipairs(find(legend, function(x) return x.tag == "text" end)) do names[t.text] = true end
    assert.is_true(names.a and names.b)
  end)

  it("refuses a file that is not .html or .svg", function()
    local h = testing.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
    end)
    h:push({id = "a", vc = 1}, 1000):finish()
    local path = tmpfile("h.png")
    local ok, err = pcall(h.timeline, h, path)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("timeline: '" .. path .. "': expected a file name " ..
      "ending in .html (a page) or .svg, got '.png'", 1, true), tostring(err))
    assert.is_false(exists(path))
  end)

  it("keeps a one-million-record run under 5 MB, with every late record counted", function()
    local h = testing.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling("1s")):count()
    end)
    local keys = {"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12"}
    local recs = {}
    for i = 1, #keys do recs[i] = {id = keys[i]} end
    local late_expected, maxts = 0, 0
    local W = math.mininteger
    for i = 0, 999999 do
      -- mostly in order; every 997th record is 3 s behind (late for a 1 s window)
      local ts = i
      if i % 997 == 0 and i > 5000 then ts = i - 3000 end
      if ts + 0 <= W then late_expected = late_expected + 1 end
      h:push(recs[i % 12 + 1], ts)
      if ts > maxts then maxts = ts end
      if i % 100 == 99 then W = maxts - 500; h:watermark(W) end
    end
    h:finish()
    local dropped = 0
    for _, m in ipairs(h:metrics()) do dropped = dropped + m.late_records_dropped end
    assert.equal(late_expected, dropped)
    local path = tmpfile("t6.html")
    h:timeline(path)
    local text = helper.read(path)
    os.remove(path)
    assert.is_true(#text < 5 * 1024 * 1024, "the page has " .. #text .. " bytes")
    local svg = parse(text:match("<svg.-</svg>"))
    local p = panels(svg)[1]
    assert.equal("1000000", p.attr["data-records"])
    assert.equal(tostring(late_expected), p.attr["data-late"])
    -- every late record is drawn, with its reason
    assert.equal(late_expected, #with_class(group(p, "lates"), "late"))
    local shown = #with_class(group(p, "records"), "rec")
    assert.is_true(shown > 1000 and shown <= 15000, shown .. " records drawn")
  end)
end)

-- The texts of every <title> under e.
local function titles(e)
  local out = {}
  for _, t in ipairs(find(e, function(x) return x.tag == "title" end)) do out[#out + 1] = t.text end
  return out
end

describe("the timeline of a keyed job", function()
  local keys = {"north", "south", "east", "west", "pump 7"}

  it("draws every firing in its key's lane, with its result, and the key in every hover", function()
    local h = testing.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
    end)
    for i, k in ipairs(keys) do h:push({id = k, vc = i}, 1000 + i) end
    for i, k in ipairs(keys) do h:push({id = k, vc = 10 * i}, 6000 + i) end
    h:watermark(4999)                  -- [0, 5) fires for the five keys at one moment
    h:push({id = "east", vc = 100}, 2000) -- late: dropped
    h:finish()                         -- [5, 10) fires for the five keys at the end
    local results = h:output()
    assert.equal(10, #results)
    local path = tmpfile("keys.svg")
    h:timeline(path)
    local p = panels(parse(helper.read(path)))[1]
    assert.equal("10", p.attr["data-firings"])
    -- one lane per key, in the order the keys came
    local lanes = with_class(group(p, "lanes"), "lane")
    assert.equal(#keys, #lanes)
    local lane = {}
    for i, l in ipairs(lanes) do
      assert.equal(keys[i], l.attr["data-key"])
      lane[keys[i]] = l
    end
    -- one mark per firing: as many as the harness has results, each in its key's lane,
    -- its hover naming the key and holding the result
    local n = 0
    for _, r in ipairs(results) do
      local found = false
      for _, f in ipairs(with_class(lane[r.id], "fire")) do
        local t = title_of(f)
        assert.truthy(t:find("^key " .. r.id:gsub("%p", "%%%0") .. ": window %["), t)
        if t:find('"vc":' .. r.vc .. "}", 1, true) then found = true end
      end
      assert.is_true(found, "a firing of " .. r.id .. " with vc " .. r.vc)
    end
    for _, l in ipairs(lanes) do n = n + #with_class(l, "fire") end
    assert.equal(#results, n)
    -- the value is written next to the mark, without the key
    local vals = {}
    for _, t in ipairs(with_class(lane.north, "val")) do vals[t.text] = true end
    assert.is_true(vals["vc=1"] and vals["vc=10"], "north's values")
    -- the late record in east's lane
    local late = with_class(lane.east, "late")
    assert.equal(1, #late)
    assert.truthy(title_of(late[1]):find("ts 2000, key east", 1, true))
    -- the plot's mark for the five firings at 4999 lists the keys
    local first = with_class(group(p, "marks"), "fire", "ontime")[1]
    assert.equal("5", first.attr["data-n"])
    assert.truthy(title_of(first):find("5 keys: north, south, east, west, pump 7", 1, true))
    -- every hover of a record, a late record, a firing or a cleanup names its key
    for _, g in ipairs({"records", "lates", "marks"}) do
      for _, t in ipairs(titles(group(p, g))) do
        assert.truthy(t:find("key", 1, true), g .. ": " .. t)
      end
    end
    for _, t in ipairs(titles(group(p, "bands"))) do
      assert.truthy(t:find("5 keys: ", 1, true), t)
    end
  end)

  it("gives every firing of a job with five sensors a mark of its own", function()
    local path = tmpfile("sensors.html")
    local out, err, code = helper.wmrun("--timeline " .. path .. " " .. helper.root ..
      "/examples/timeline_keys.lua")
    assert.equal(0, code, err)
    local firings, ids, nids = 0, {}, 0
    for line in out:gmatch("[^\n]+") do
      if not line:find("^Side>") then
        firings = firings + 1
        local id = line:match('"id":"([^"]+)"')
        if not ids[id] then ids[id] = true; nids = nids + 1 end
      end
    end
    assert.equal(37, firings)
    local p = panels(parse(helper.read(path):match("<svg.-</svg>")))[1]
    assert.equal(tostring(firings), p.attr["data-firings"])
    local lanes = with_class(group(p, "lanes"), "lane")
    assert.equal(nids, #lanes)
    local marks = 0
    for _, l in ipairs(lanes) do
      assert.is_true(ids[l.attr["data-key"]], l.attr["data-key"])
      marks = marks + #with_class(l, "fire")
    end
    assert.equal(firings, marks)
  end)

  it("labels the x axis in processing time", function()
    local h = testing.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
    end)
    for i = 0, 10 do
      h:push({id = "a", vc = 1}, i * 1000)
      h:advance_processing_time(1000)
    end
    h:finish()
    local function labels(opts)
      local path = tmpfile("pt.svg")
      h:timeline(path, opts)
      local p = panels(parse(helper.read(path)))[1]
      local out = {}
      for _, t in ipairs(with_class(p, "tick")) do out[t.text] = true end
      return out, helper.read(path)
    end
    local x, text = labels({x = "time"})
    assert.is_true(x["+5 s"] and x["+10 s"], "processing-time labels")
    assert.truthy(text:find(">processing time since the first event<", 1, true))
    -- arrival order: the processing time of the records is written under the ticks
    x, text = labels()
    assert.is_true(x["+4 s"] and x["+10 s"], "processing time under the arrival order")
    assert.truthy(text:find("below: processing time since the first record", 1, true))
  end)
end)
