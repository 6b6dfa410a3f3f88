-- A generator of realistic disorder for the watermark lab (docs/lab.md).
--
--   lua5.4 examples/lab/disorder.lua [options] > events.csv
--
-- Writes lines "key,ts,value,arrival" (ts and arrival in ms) in arrival order. Each key is
-- a source that produces one record every `1000 * keys / rate` ms of event time (with a
-- little jitter); a record arrives at its event time plus its delays:
--   --delay MS         the median network delay (default 20); delays have a long tail:
--                      log-normal with --sigma (default 1.0), and a fraction --spike
--                      (default 0.001) of them are 1 to 5 s longer (retransmissions)
--   --burst MS         the sources send in batches: a record leaves at the next multiple
--                      of MS (default 0: at once)
--   --stall K:FROM:TO  source K sends nothing between event times FROM and TO (ms), then
--                      catches up: the held records arrive at TO plus 1 ms each
--   --skew K:MS        source K's clock is MS behind: its timestamps are MS too small
--   --records N (default 20000)  --keys N (default 8)  --rate N per s (default 1000)
--   --seed N (default 1)
-- The output depends only on the options (Lua 5.4's math.random with the seed).
local opts = {records = 20000, keys = 8, rate = 1000, seed = 1, delay = 20, sigma = 1.0,
              spike = 0.001, burst = 0, stalls = {}, skews = {}}

local function usage(msg)
  io.stderr:write("disorder.lua: ", msg, "\n(see the comment at the top of the file)\n")
  os.exit(2)
end

local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  local name = a:match("^%-%-(.+)$")
  if not name or v == nil then usage("bad argument '" .. a .. "'") end
  if name == "stall" then
    local k, from, to = v:match("^(%d+):(%d+):(%d+)$")
    if not k then usage("--stall expects KEY:FROM:TO, got '" .. v .. "'") end
    opts.stalls[tonumber(k)] = {from = tonumber(from), to = tonumber(to)}
  elseif name == "skew" then
    local k, ms = v:match("^(%d+):(%d+)$")
    if not k then usage("--skew expects KEY:MS, got '" .. v .. "'") end
    opts.skews[tonumber(k)] = tonumber(ms)
  elseif opts[name] ~= nil and type(opts[name]) == "number" then
    opts[name] = tonumber(v) or usage("--" .. name .. " expects a number, got '" .. v .. "'")
  else
    usage("unknown option '" .. a .. "'")
  end
  i = i + 2
end

math.randomseed(math.tointeger(opts.seed) or 1)

-- A standard normal deviate (Box-Muller).
local function normal()
  local u1, u2 = 1 - math.random(), math.random()
  return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
end

local function network_delay()
  local d = opts.delay * math.exp(opts.sigma * normal())
  if math.random() < opts.spike then d = d + 1000 + 4000 * math.random() end
  return math.floor(d + 0.5)
end

local recs = {}
local period = 1000 * opts.keys / opts.rate -- ms between two records of one source
local n_per_key = math.ceil(opts.records / opts.keys)
for k = 1, opts.keys do
  local stall, skew = opts.stalls[k], opts.skews[k] or 0
  local phase = period * (k - 1) / opts.keys
  local held = 0
  for j = 0, n_per_key - 1 do
    if #recs >= opts.records then break end
    local t = math.floor(phase + j * period + (math.random() - 0.5) * period * 0.5)
    if t < 0 then t = 0 end
    local sent = t
    if opts.burst > 0 then sent = (t // opts.burst + 1) * opts.burst end
    local arrival = sent + network_delay()
    if stall and t >= stall.from and t < stall.to then
      held = held + 1
      arrival = stall.to + held
    end
    recs[#recs + 1] = {key = string.format("s%02d", k), ts = t - skew, v = math.random(1, 100),
                       arrival = arrival, seq = #recs}
  end
end
table.sort(recs, function(a, b)
  if a.arrival ~= b.arrival then return a.arrival < b.arrival end
  return a.seq < b.seq
end)
local out = io.stdout
for _, r in ipairs(recs) do
  out:write(r.key, ",", r.ts, ",", r.v, ",", r.arrival, "\n")
end
