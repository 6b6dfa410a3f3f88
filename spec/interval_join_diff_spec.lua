-- The interval join against an independent model (semantics.md §10), on random inputs:
-- 600 cases per data set, each case its own keys (keys are independent, so many cases share
-- one job run), its bounds one of 12 random configurations (lower, upper, exclusive flags;
-- one interval join per configuration in the job).
--
-- Both sides come from ONE file, split by a field, with bounded-out-of-orderness
-- watermarks of delay D emitted after every record (watermark_interval = 0). Two sets:
--
--  * "late": D = 30 ms with jitter up to 20 ms, so some records are late (1130 of 12000,
--    with 3357 pairs, for the seed below). At -p 1 the join sees the records in the file's
--    order, and after each record the watermark max(t) - D - 1: the model computes W, the
--    late records (ts < W, W not MIN), the cleanup (a record goes at the first advance of W
--    to its cleanup time or beyond made after it arrived) and the order of the output
--    exactly; the output is compared line by line, in order.
--  * "free": D = 40 ms with jitter up to 20 ms, so every record's timestamp is ABOVE the
--    watermark of all the records before it in the file (t >= clock - 20 > clock + 20 - 41).
--    At -p 3 and on two threads the join sees another interleaving of the two sides and a
--    lower watermark (W <= the file's W before the record: a parallel assigner sees a part
--    of the records, and the join takes the minimum of its channels): then no record can be
--    late, and a pair in bounds always meets (the record that comes second finds the other,
--    which is only removed at W >= its cleanup time >= the later record's ts > W). So the
--    output is the set of all pairs in bounds, the same under every interleaving: compared
--    sorted, at -p 1, -p 3 and -p 3 --threads 2. The model is run on the file's order, and
--    the spec checks that it finds no late record (the premise).
local h = require("helper")

local MIN = math.mininteger
local NCASES, NCONF = 600, 12

-- Random bounds configurations (lower in [-30, 10], upper - lower in [0, 40], a quarter
-- with lower == upper, exclusive flags at random).
local function configs(rand)
  local cs = {}
  for i = 1, NCONF do
    local lo = rand(-30, 10)
    local hi = rand(4) == 1 and lo or lo + rand(0, 40)
    cs[i] = {lower = lo, upper = hi, lex = rand(3) == 1, uex = rand(3) == 1}
  end
  return cs
end

-- The records in file order: {s = "L"|"R", cfg, k, id, t}. A global clock advances by 0..1
-- ms per record; a record belongs to one of the 6 most recent cases, so each case's records
-- lie within ~60 ms (plus the jitter) of each other; its key is one of two of the case's own.
local function records(rand, jitter)
  local list, clock = {}, 1000
  local per = 20
  for i = 1, NCASES * per do
    clock = clock + rand(0, 1)
    local newest = (i - 1) // per + 1
    local case = math.max(1, newest - rand(0, 5))
    list[i] = {s = rand(2) == 1 and "L" or "R", cfg = (case - 1) % NCONF + 1,
      k = case * 4 + rand(0, 1), id = i, t = clock + rand(-jitter, jitter)}
  end
  return list
end

-- The model: plain Lua, written from §10, independent of the operator.
local function model(list, cs, D)
  local out, late = {}, 0
  local W, maxts, adv = MIN, MIN, 0 -- adv counts the watermark's advances
  local bufs = {} -- [cfg][k] = {L = {...}, R = {...}}, each record {t, id, seq, adv}
  for seq, r in ipairs(list) do
    local c = cs[r.cfg]
    local lo = c.lower + (c.lex and 1 or 0)
    local hi = c.upper - (c.uex and 1 or 0)
    local function cleanup(side, t)
      if side == "L" then return hi > 0 and t + hi or t end
      return lo < 0 and t - lo or t
    end
    if W ~= MIN and r.t < W then
      late = late + 1
      out[#out + 1] = string.format("late %d %s%d", r.cfg, r.s, r.id)
    else
      bufs[r.cfg] = bufs[r.cfg] or {}
      local kb = bufs[r.cfg][r.k] or {L = {}, R = {}}
      bufs[r.cfg][r.k] = kb
      local mine, other = kb[r.s], kb[r.s == "L" and "R" or "L"]
      mine[#mine + 1] = {t = r.t, id = r.id, seq = seq, adv = adv}
      local from, to
      if r.s == "L" then from, to = r.t + lo, r.t + hi else from, to = r.t - hi, r.t - lo end
      local hits = {}
      for _, o in ipairs(other) do
        -- gone: an advance of W to its cleanup time or beyond came after it arrived
        local gone = adv > o.adv and W >= cleanup(r.s == "L" and "R" or "L", o.t)
        if not gone and o.t >= from and o.t <= to then hits[#hits + 1] = o end
      end
      table.sort(hits, function(a, b) if a.t ~= b.t then return a.t < b.t end return a.seq < b.seq end)
      for _, o in ipairs(hits) do
        local lt, lid, rt, rid = r.t, r.id, o.t, o.id
        if r.s == "R" then lt, lid, rt, rid = o.t, o.id, r.t, r.id end
        out[#out + 1] = string.format("%d %d L%d@%d R%d@%d @%d", r.cfg, r.k, lid, lt, rid, rt,
          math.max(lt, rt))
      end
    end
    if r.t > maxts then maxts = r.t end
    if maxts - D - 1 > W then
      W = maxts - D - 1
      adv = adv + 1
    end
  end
  return out, late
end

local function job_text(path, cs, D)
  local lines = {
    "local wm = require('wm')",
    "local env = wm.env{watermark_interval = 0}",
    "local src = env:read_lines(" .. string.format("%q", path) .. ")",
    "  :parse_csv{'s', 'cfg:integer', 'k:integer', 'id:integer', 't:integer'}",
    "  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(" .. D
      .. "):with_timestamp_field('t'))",
    "local all",
    "local function add(s) all = all and all:union(s) or s end",
  }
  for i, c in ipairs(cs) do
    lines[#lines + 1] = string.format([[
do
  local l = src:filter(function(r) return r.s == "L" and r.cfg == %d end)
  local r = src:filter(function(r) return r.s == "R" and r.cfg == %d end)
  local j = l:key_by("k"):interval_join(r:key_by("k")):between(%d, %d)%s%s
    :side_output_left_late_data("lateL"):side_output_right_late_data("lateR")
    :process(function(a, b, ctx, out)
      out(string.format("%%d %%d L%%d@%%d R%%d@%%d @%%d", a.cfg, a.k, a.id, ctx.left_timestamp,
        b.id, ctx.right_timestamp, ctx.timestamp))
    end)
  add(j)
  add(j:get_side_output("lateL"):map(function(x) return "late " .. x.cfg .. " L" .. x.id end))
  add(j:get_side_output("lateR"):map(function(x) return "late " .. x.cfg .. " R" .. x.id end))
end]], i, i, c.lower, c.upper, c.lex and ":lower_bound_exclusive()" or "",
      c.uex and ":upper_bound_exclusive()" or "")
  end
  lines[#lines + 1] = "all:print()"
  lines[#lines + 1] = "env:execute()"
  return table.concat(lines, "\n") .. "\n"
end

local function data_set(seed, jitter)
  math.randomseed(seed)
  local rand = math.random
  local cs = configs(rand)
  local list = records(rand, jitter)
  local csv = {}
  for i, r in ipairs(list) do csv[i] = string.format("%s,%d,%d,%d,%d", r.s, r.cfg, r.k, r.id, r.t) end
  local path = h.write_tmp(table.concat(csv, "\n") .. "\n", ".csv")
  return cs, list, path
end

local function lines_of(text)
  local t = {}
  for l in text:gmatch("[^\n]+") do t[#t + 1] = l:gsub("^[^ ]*> ", "") end
  return t
end

local function sorted(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c
end

local function pairs_count(out)
  local n = 0
  for _, l in ipairs(out) do if l:sub(1, 5) ~= "late " then n = n + 1 end end
  return n
end

describe("interval_join against a model", function()
  it("600 random cases with late records, at -p 1, in the exact order", function()
    local D = 30
    local cs, list, path = data_set(2801, 20)
    local want, late = model(list, cs, D)
    assert.is_true(late > 1000, "late records: " .. late)
    assert.is_true(pairs_count(want) > 1000, "pairs: " .. pairs_count(want))
    local out, err, code = h.run_job(job_text(path, cs, D), "-p 1")
    assert.are.equal(0, code, err)
    local got = lines_of(out)
    assert.are.equal(#want, #got)
    for i = 1, #want do
      if want[i] ~= got[i] then
        assert.are.equal(want[i], got[i], "line " .. i .. " differs")
      end
    end
    os.remove(path)
  end)

  it("600 random cases where no record can be late, at -p 1, -p 3 and --threads 2", function()
    local D = 40
    local cs, list, path = data_set(2802, 20)
    local want, late = model(list, cs, D)
    assert.are.equal(0, late) -- the premise (see the top of the file)
    assert.is_true(pairs_count(want) > 3000, "pairs: " .. pairs_count(want))
    local job = job_text(path, cs, D)
    want = sorted(want)
    for _, args in ipairs({"-p 1", "-p 3", "-p 3 --threads 2"}) do
      local out, err, code = h.run_job(job, args)
      assert.are.equal(0, code, err)
      local got = sorted(lines_of(out))
      assert.are.equal(#want, #got, args)
      for i = 1, #want do
        if want[i] ~= got[i] then assert.are.equal(want[i], got[i], args .. ": line " .. i) end
      end
    end
    os.remove(path)
  end)
end)
