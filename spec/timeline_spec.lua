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
  local p = io.popen("mktemp -d /tmp/wm_timeline_spec.XXXXXX")
  tmpdir = p:read("l")
  p:close()
  assert(tmpdir and tmpdir ~= "", "mktemp -d failed")
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
    local path = helper.tmpname() .. ".svg"
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
    -- the window operator's combined input watermark is drawn too
    assert.equal(1, #with_class(group(p, "watermarks"), "wm", "window"))
  end)

  it("writes a self-contained HTML page", function()
    local path = helper.tmpname() .. ".html"
    run_c(path)
    local html = helper.read(path)
    os.remove(path)
    assert.truthy(html:find("^<!DOCTYPE html>"))
    assert.falsy(html:find("<script", 1, true))
    assert.falsy(html:find("src=", 1, true))
    assert.falsy(html:find("@import", 1, true))
    assert.falsy(html:find("url(", 1, true))
    -- the SVG inside is well-formed XML with the same marks
    local svg = parse(html:match("<svg.-</svg>"))
    assert.equal(8, #with_class(svg, "rec"))
  end)

  it("can put processing time on the x axis", function()
    local path = helper.tmpname() .. ".svg"
    run_c(path, "--timeline-x time")
    local text = helper.read(path)
    os.remove(path)
    assert.truthy(text:find("processing time since the first event", 1, true))
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

  it("refuses, before the job runs, a file that is not .html or .svg", function()
    local path = tmpfile("x.png")
    local out, err, code = helper.wmrun("--timeline " .. path .. " " .. helper.root ..
      "/examples/c_lateness_side_output.lua")
    assert.equal(2, code)
    assert.equal("", out, "the job did not run")
    assert.truthy(err:find("--timeline " .. path .. ": expected a file name ending in .html " ..
      "(a page) or .svg, got '.png'", 1, true), err)
    assert.is_false(exists(path))
  end)

  it("fails before the job runs when the timeline cannot be written", function()
    local path = tmpfile("missing/t.html")
    local out, err, code = helper.wmrun("--timeline " .. path .. " " .. helper.root ..
      "/examples/c_lateness_side_output.lua")
    assert.equal(2, code)
    assert.equal("", out, "the job did not run")
    assert.truthy(err:find("--timeline " .. path .. ": cannot write there: No such file or " ..
      "directory", 1, true), err)
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
    local job = helper.write_tmp(other, ".lua")
    local path = helper.tmpname() .. ".svg"
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
    local path = helper.tmpname() .. ".svg"
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
    local path = helper.tmpname() .. ".html"
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
