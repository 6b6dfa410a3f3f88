-- Differential test of the window join and co-group (semantics.md §4-§6, §10): random
-- two-input cases run through wmrun and through a small independent model written here in
-- plain Lua (no wmrun code), and the results compared.
--
-- Every job has six operators: tumbling(10), sliding(12, 4) and session(5), each as a join
-- and as a co-group. A case is a set of records of its own keys ("A17k1", ...) for one of the
-- operators; all cases share one job run. Both inputs come from ONE source (from_elements,
-- the generated records in order) split by a field, each side with its own watermark assigner
-- (watermark after every record), so the join's watermark is the minimum of the two sides'.
--
-- Two data sets, because lateness depends on how the two inputs interleave:
-- * A, at -p 1 only: records out of order (bounded_out_of_orderness(4) per side), allowed
--   lateness 5, 3 and 4. At -p 1 the records reach the join in the source's order, so the
--   model computes each side's watermark and every late firing and dropped record exactly;
--   the order inside each window's firings is compared too.
-- * B, at -p 1, -p 3 and -p 3 --threads 2: each side's timestamps never decrease (monotonous
--   per side) and there is no lateness. Then no record can be late in any interleaving: an
--   instance of a side's assigner sees a subsequence of that side, so the join's watermark is
--   below the timestamp of any record still to come on any channel, and each window fires
--   once with all its records. Timestamps are even and the session gap odd, so a record never
--   exactly touches a session that may have fired already (a window [t, t + 5) that fired has
--   W >= t + 4, and a later record has ts > W, so only ts = t + 5 could touch it: odd). The
--   results are then the same in any interleaving, except the order of the records inside a
--   window, which -p 3 does not fix: B compares each window's results as sorted lists.
-- Results are grouped by (operator, key, timestamp): a window's firings in the order emitted.
local h = require("helper")

local MIN = math.mininteger

local OPS = { -- the assigners, lateness of data set A; operator o = 2 * (i - 1) + 1 joins, + 2 co-groups
  {kind = "tumbling", size = 10, lateness = 5},
  {kind = "sliding", size = 12, slide = 4, lateness = 3},
  {kind = "session", gap = 5, lateness = 4},
}
local BOUND_A = 4

local function op_of(o) return OPS[(o - 1) // 2 + 1], (o % 2 == 1) and "join" or "co_group" end

-- ---- the model --------------------------------------------------------------------------

-- One keyed window operator of the model: wins[key] = list of {start, stop, items, timer}.
local function model_op(o, lateness)
  local cfg, what = op_of(o)
  local m = {wins = {}, groups = {}, late = 0, late_firings = 0}
  local function emit(key, w)
    local maxts = w.stop - 1
    local g = o .. "|" .. key .. "|" .. maxts
    local list = m.groups[g] or {}
    m.groups[g] = list
    if what == "join" then
      for _, l in ipairs(w.items) do
        if l.s == "L" then
          for _, r in ipairs(w.items) do
            if r.s == "R" then list[#list + 1] = l.id .. "+" .. r.id end
          end
        end
      end
    else
      local ls, rs = {}, {}
      for _, it in ipairs(w.items) do
        if it.s == "L" then ls[#ls + 1] = it.id else rs[#rs + 1] = it.id end
      end
      list[#list + 1] = table.concat(ls, ",") .. "/" .. table.concat(rs, ",")
    end
  end
  -- a record at watermark W
  function m.record(r, W)
    local ws = m.wins[r.k] or {}
    m.wins[r.k] = ws
    local function added(w)
      if w.stop - 1 <= W then
        emit(r.k, w)
        m.late_firings = m.late_firings + 1
      else
        w.timer = true
      end
    end
    local added_any = false
    if cfg.kind == "session" then
      local nw = {start = r.ts, stop = r.ts + cfg.gap}
      local run, rest = {}, {}
      for _, w in ipairs(ws) do
        if w.start <= nw.stop and nw.start <= w.stop then run[#run + 1] = w else rest[#rest + 1] = w end
      end
      local w -- the window the record goes to: its own, or the merged one (nil: late)
      if #run == 0 then
        if nw.stop - 1 + lateness > W then
          nw.items = {r}
          w = nw
        end
      else
        -- the merged window: the earliest window's records, then the others' in order of start
        table.sort(run, function(a, b) return a.start < b.start end)
        w = {start = math.min(nw.start, run[1].start), stop = nw.stop, items = {}}
        for _, x in ipairs(run) do
          if x.stop > w.stop then w.stop = x.stop end
          for _, it in ipairs(x.items) do w.items[#w.items + 1] = it end
        end
        w.items[#w.items + 1] = r
      end
      if w then
        rest[#rest + 1] = w
        m.wins[r.k] = rest
        added(w)
        added_any = true
      end
    else
      local starts = {}
      if cfg.kind == "tumbling" then
        starts[1] = r.ts - r.ts % cfg.size
      else
        local s = r.ts - r.ts % cfg.slide
        while s > r.ts - cfg.size do starts[#starts + 1] = s; s = s - cfg.slide end
      end
      for _, s in ipairs(starts) do
        local stop = s + cfg.size
        if stop - 1 + lateness > W then
          local w
          for _, x in ipairs(ws) do if x.start == s then w = x end end
          if not w then
            w = {start = s, stop = stop, items = {}}
            ws[#ws + 1] = w
          end
          w.items[#w.items + 1] = r
          added(w)
          added_any = true
        end
      end
    end
    if not added_any and r.ts + lateness <= W then m.late = m.late + 1 end
  end
  -- the watermark advances to W: due timers fire, then windows past their cleanup go
  function m.advance(W)
    for key, ws in pairs(m.wins) do
      local keep = {}
      for _, w in ipairs(ws) do
        if w.timer and w.stop - 1 <= W then
          w.timer = false
          emit(key, w)
        end
        if w.stop - 1 + lateness > W then keep[#keep + 1] = w end
      end
      m.wins[key] = keep
    end
  end
  return m
end

-- Runs the records (in source order) through the six operators; returns groups, late counts.
local function model(recs, lateness_of, bound)
  local ops = {}
  for o = 1, 6 do ops[o] = model_op(o, lateness_of(o)) end
  local maxts = {L = MIN, R = MIN}
  local W = MIN
  for _, r in ipairs(recs) do
    ops[r.o].record(r, W)
    if r.ts > maxts[r.s] then maxts[r.s] = r.ts end
    local wl = maxts.L == MIN and MIN or maxts.L - bound - 1
    local wr = maxts.R == MIN and MIN or maxts.R - bound - 1
    local nw = math.min(wl, wr)
    if nw > W then
      W = nw
      for o = 1, 6 do ops[o].advance(W) end
    end
  end
  for o = 1, 6 do ops[o].advance(math.maxinteger) end
  local groups, late, late_firings = {}, 0, 0
  for o = 1, 6 do
    for g, list in pairs(ops[o].groups) do groups[g] = list end
    late = late + ops[o].late
    late_firings = late_firings + ops[o].late_firings
  end
  return groups, late, late_firings
end

-- ---- the data ---------------------------------------------------------------------------

local function gen_a(n)
  math.randomseed(2810)
  local recs, id = {}, 0
  for c = 1, n do
    local o, base = (c - 1) % 6 + 1, c * 30
    for _ = 1, math.random(3, 12) do
      id = id + 1
      local ts = base + math.random(0, 25)
      if math.random() < 0.1 then ts = ts - math.random(5, 30) end -- very late now and then
      recs[#recs + 1] = {o = o, k = "A" .. c .. "k" .. math.random(1, 2), s = math.random() < 0.5 and "L" or "R",
        ts = ts, id = id}
    end
  end
  return recs
end

local function gen_b(n)
  math.randomseed(2811)
  local recs, id, t = {}, 0, {L = 0, R = 0}
  for c = 1, n do
    local o, base = (c - 1) % 6 + 1, c * 30
    for _ = 1, math.random(3, 12) do
      id = id + 1
      local s = math.random() < 0.5 and "L" or "R"
      t[s] = math.max(t[s], base) + 2 * math.random(0, 3) -- even, never decreasing per side
      recs[#recs + 1] = {o = o, k = "B" .. c .. "k" .. math.random(1, 2), s = s, ts = t[s], id = id}
    end
  end
  return recs
end

-- ---- the job ----------------------------------------------------------------------------

local function job(recs, lateness_of, strategy)
  local lines = {"local wm = require('wm')", "local env = wm.env{watermark_interval = 0}",
    "local R = {"}
  for _, r in ipairs(recs) do
    lines[#lines + 1] = string.format("{o=%d,k=%q,s=%q,ts=%d,id=%d},", r.o, r.k, r.s, r.ts, r.id)
  end
  lines[#lines + 1] = "}"
  lines[#lines + 1] = "local st = " .. strategy .. ":with_timestamp_field('ts')"
  lines[#lines + 1] = [[
local src = env:from_elements(table.unpack(R))
local left = src:filter(function(r) return r.s == "L" end):assign_timestamps_and_watermarks(st)
local right = src:filter(function(r) return r.s == "R" end):assign_timestamps_and_watermarks(st)
local function ids(list)
  local t = {}
  for i, r in ipairs(list) do t[i] = r.id end
  return table.concat(t, ",")
end
local outs = {}
local function assigner(i)
  if i == 1 then return wm.windows.tumbling(10) end
  if i == 2 then return wm.windows.sliding(12, 4) end
  return wm.windows.session(5)
end]]
  for o = 1, 6 do
    local _, what = op_of(o)
    local fn = what == "join"
      and string.format("function(l, r) return '%d|' .. l.k .. '|' .. l.id .. '+' .. r.id end", o)
      or string.format("function(k, ls, rs, out) out('%d|' .. k .. '|' .. ids(ls) .. '/' .. ids(rs)) end", o)
    lines[#lines + 1] = string.format([[
do
  local function mine(r) return r.o == %d end
  outs[#outs + 1] = left:filter(mine):%s(right:filter(mine)):where("k"):equal_to("k")
    :window(assigner(%d)):allowed_lateness(%d):apply(%s)
end]], o, what, (o - 1) // 2 + 1, lateness_of(o), fn)
  end
  lines[#lines + 1] = [[
local all = outs[1]:union(table.unpack(outs, 2))
all:key_by(function() return 0 end):process(function(r, ctx, out) out(r .. "|" .. ctx.timestamp) end)
  :print("J")
env:execute("window join diff")]]
  return table.concat(lines, "\n")
end

-- wmrun's results grouped as the model's: "o|key|ts" -> list of payloads in output order
local function run(text, args)
  local out, err, code = h.run_job(text, (args or "") .. " --metrics")
  assert.are.equal(0, code, err)
  local groups, n = {}, 0
  for line in out:gmatch("[^\n]+") do
    local o, k, payload, ts = line:match("^J[^>]*> (%d+)|([^|]+)|([^|]*)|(%-?%d+)$")
    assert(o, "unexpected line: " .. line)
    local g = o .. "|" .. k .. "|" .. ts
    groups[g] = groups[g] or {}
    table.insert(groups[g], payload)
    n = n + 1
  end
  return groups, n, err
end

-- (a co-group's lists of ids sorted too)
local function sorted_groups(groups)
  local function ids(text)
    local t = {}
    for id in text:gmatch("%d+") do t[#t + 1] = tonumber(id) end
    table.sort(t)
    return table.concat(t, ",")
  end
  local t = {}
  for g, list in pairs(groups) do
    local c = {}
    for i, p in ipairs(list) do
      local ls, rs = p:match("^([%d,]*)/([%d,]*)$")
      c[i] = ls and ids(ls) .. "/" .. ids(rs) or p
    end
    table.sort(c)
    t[g] = c
  end
  return t
end

local function count_cases(recs)
  local cases, per = {}, {}
  for _, r in ipairs(recs) do
    local c = r.k:match("^(%a%d+)k")
    if not cases[c] then cases[c] = true; per[r.o] = (per[r.o] or 0) + 1 end
  end
  return per
end

-- the groups that differ (at most 8), as text: empty when want and got are the same
local function differences(want, got)
  local keys, seen = {}, {}
  for g in pairs(want) do keys[#keys + 1] = g; seen[g] = true end
  for g in pairs(got) do if not seen[g] then keys[#keys + 1] = g end end
  table.sort(keys)
  local out = {}
  for _, g in ipairs(keys) do
    local a, b = table.concat(want[g] or {}, " "), table.concat(got[g] or {}, " ")
    if a ~= b and #out < 8 then out[#out + 1] = g .. ": model {" .. a .. "} wmrun {" .. b .. "}" end
  end
  return table.concat(out, "\n")
end

-- the late records the window operators dropped, from the --metrics table on stderr (the
-- column "late dropped", third from the end)
local function dropped(err)
  local total = 0
  for line in err:gmatch("[^\n]+") do
    if line:match("^%a+ window join ") or line:match("^%a+ window co_group ") then
      local cols = {}
      for c in line:gmatch("%S+") do cols[#cols + 1] = c end
      total = total + assert(tonumber(cols[#cols - 2]), line)
    end
  end
  return total
end

describe("window join differential", function()
  it("data set A (out of order, lateness) at -p 1: every firing, late firing and drop as the model's", function()
    local recs = gen_a(500)
    local per = count_cases(recs)
    for o = 1, 6 do assert.is_true(per[o] >= 80, "cases of operator " .. o) end
    local lateness = function(o) return op_of(o).lateness end
    local want, late, late_firings = model(recs, lateness, BOUND_A)
    local got, _, err = run(job(recs, lateness, "wm.watermarks.bounded_out_of_orderness(" .. BOUND_A .. ")"))
    assert.are.equal("", differences(want, got))
    assert.are.equal(late, dropped(err))
    -- the data exercise what they should: late firings and drops
    assert.is_true(late > 20, "late records dropped by the model: " .. late)
    assert.is_true(late_firings > 50, "late firings in the model: " .. late_firings)
  end)

  it("data set B (in order per side) at -p 1, -p 3 and -p 3 --threads 2: the model's results", function()
    local recs = gen_b(500)
    local zero = function() return 0 end
    local want = sorted_groups((model(recs, zero, 0)))
    local text = job(recs, zero, "wm.watermarks.monotonous()")
    for _, args in ipairs({"", "-p 3", "-p 3 --threads 2"}) do
      local got = run(text, args)
      assert.are.equal("", differences(want, sorted_groups(got)), "at " .. args)
    end
  end)
end)
