--- The Nexmark source: `env:nexmark{...}`, Person, Auction and Bid events generated in C
-- with the model of Flink's nexmark generator (docs/io.md, "Nexmark"; core/io/wm_nexmark.h).
-- @module wm.nexmark
local base = require("wm.base")

local Env = base.Env
local stream, opt_table = base.stream, base.opt_table

local M = {}

-- option -> {default, lo, hi}: integers (the names of Flink's NexmarkConfiguration, in snake
-- case; docs/io.md has the table with Flink's SQL option names)
M.INT_OPTIONS = {
  events = {0, 0, math.maxinteger},
  event_rate = {10000, 1, 1000000000},
  person_proportion = {1, 1, 1000000},
  auction_proportion = {3, 1, 1000000},
  bid_proportion = {46, 1, 1000000},
  hot_auction_ratio = {2, 1, 1000000},
  hot_bidder_ratio = {4, 1, 1000000},
  hot_seller_ratio = {4, 1, 1000000},
  person_avg_size = {200, 0, 100000},
  auction_avg_size = {500, 0, 100000},
  bid_avg_size = {100, 0, 100000},
  in_flight_auctions = {100, 1, 100000000},
  active_people = {1000, 1, 100000000},
  out_of_order_group = {1, 1, 1000000000},
  base_time = {1436918400000, 0, 253402300799999},
  seed = {0, math.mininteger, math.maxinteger},
}

--- The fields of a person, an auction and a bid, in the order of Flink's nexmark DDL (and of
-- the generator's rows, core/io/wm_nexmark.h).
M.FIELDS = {
  person = {"id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"},
  auction = {"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller",
    "category", "extra"},
  bid = {"auction", "bidder", "price", "channel", "url", "dateTime", "extra"},
}
local KINDS = {"person", "auction", "bid"}

local KNOWN = {rate = true, max_emit_speed = true, name = true, parallel = true, omit = true}
for k in pairs(M.INT_OPTIONS) do KNOWN[k] = true end

--- Checks the options of env:nexmark (errors at `level` name the option); a table of them
-- with the defaults filled in.
-- @local
function M.options(opts, level)
  opts = opt_table(opts, "nexmark", KNOWN, level + 1)
  local o = {}
  for k, spec in pairs(M.INT_OPTIONS) do
    local v = opts[k]
    if v == nil then
      v = spec[1]
    elseif math.type(v) ~= "integer" or v < spec[2] or v > spec[3] then
      error(string.format("nexmark: %s must be an integer from %s to %s, got %s", k, spec[2], spec[3],
        tostring(v)), level + 1)
    end
    o[k] = v
  end
  local rate = opts.rate
  if rate == math.huge or rate == 0 then rate = nil end
  if rate ~= nil and (type(rate) ~= "number" or not (rate >= 1e-6 and rate <= 1e9)) then
    error("nexmark: rate must be a number of events per second from 1e-6 to 1e9 (0 or math.huge: as fast "
      .. "as possible), got " .. tostring(rate), level + 1)
  end
  if opts.max_emit_speed ~= nil and type(opts.max_emit_speed) ~= "boolean" then
    error("nexmark: max_emit_speed must be a boolean, got " .. tostring(opts.max_emit_speed), level + 1)
  end
  -- Flink's max-emit-speed = false: the events come at the pace of their event time
  if opts.max_emit_speed == false then
    if rate ~= nil then error("nexmark: give rate or max_emit_speed = false, not both", level + 1) end
    rate = o.event_rate
  end
  o.rate = rate
  if opts.name ~= nil and type(opts.name) ~= "string" then
    error("nexmark: name must be a string, got " .. type(opts.name), level + 1)
  end
  o.name = opts.name or "nexmark"
  if opts.parallel ~= nil and type(opts.parallel) ~= "boolean" then
    error("nexmark: parallel must be a boolean, got " .. tostring(opts.parallel), level + 1)
  end
  o.parallel = opts.parallel or nil
  -- omit = {bid = {"url", "extra"}, person = true, ...}: fields left out of the rows (nil), a
  -- kind's whole row with true; as bit masks for the generator (omit_person, ...)
  if opts.omit ~= nil then
    if type(opts.omit) ~= "table" then
      error("nexmark: omit must be a table {person = ..., auction = ..., bid = ...}, got " .. type(opts.omit),
        level + 1)
    end
    for k in pairs(opts.omit) do
      if not M.FIELDS[k] then
        error("nexmark: omit: no kind '" .. tostring(k) .. "' (person, auction, bid)", level + 1)
      end
    end
    for _, kind in ipairs(KINDS) do
      local v, fields, mask = opts.omit[kind], M.FIELDS[kind], 0
      if v == true then
        mask = (1 << #fields) - 1
      elseif type(v) == "table" then
        for _, name in ipairs(v) do
          local bit
          for i, f in ipairs(fields) do if f == name then bit = i - 1 end end
          if not bit then
            error(string.format("nexmark: omit: a %s has no field '%s' (it has %s)", kind, tostring(name),
              table.concat(fields, ", ")), level + 1)
          end
          mask = mask | (1 << bit)
        end
      elseif v ~= nil and v ~= false then
        error("nexmark: omit." .. kind .. " must be true or a list of field names, got " .. type(v), level + 1)
      end
      if mask ~= 0 then o["omit_" .. kind] = mask end
    end
  end
  return o
end

--- A source of Nexmark events (Flink nexmark's Person, Auction and Bid), one stream of
-- records `{event_type = 0|1|2, person = {...}, auction = {...}, bid = {...}, dateTime = ms}`
-- where only the sub-record of the event's type is present (0 person, 1 auction, 2 bid), as
-- in Flink's nexmark DDL. The same options give the same events (a fixed base time and a seed);
-- the source checkpoints its position and resumes the same sequence. One instance, unless
-- `parallel`: then instance k of n emits events k, k + n, k + 2n, ... (all of them together
-- the events of one instance, whatever n).
-- @tparam[opt] table opts `events` (how many, 0 or absent: unbounded), `rate` (events per
--   second of the wall clock; absent, 0 or math.huge: as fast as possible), `max_emit_speed`
--   (false: at the pace of the event times, `event_rate`), `event_rate` (events per second of
--   event time: the spacing of the timestamps, 10000), `seed`, `base_time` (ms of event number
--   0), `person_proportion`, `auction_proportion`, `bid_proportion` (1, 3, 46),
--   `hot_auction_ratio`, `hot_bidder_ratio`, `hot_seller_ratio` (2, 4, 4), `person_avg_size`,
--   `auction_avg_size`, `bid_avg_size` (bytes: 200, 500, 100), `in_flight_auctions` (100),
--   `active_people` (1000), `out_of_order_group` (1: in order), `parallel` (true: one share
--   of the events per instance, at `rate / n` each), `name`, `omit` (fields no reader uses,
--   left out of the rows: `{bid = {"url", "extra"}, person = true}`, a list of a kind's field
--   names or true for its whole row; every other field and event is the same without it)
-- @treturn Stream
-- @usage env:nexmark{events = 1000, seed = 7}:filter(function(e) return e.event_type == 2 end)
function Env:nexmark(opts)
  local o = M.options(opts, 2)
  if not o.parallel then
    o.max_parallelism = 1
    o.one_instance = "one nexmark sequence (parallel = true splits it between instances)"
  end
  return stream(self, self:_node("nexmark", {}, o))
end

return M
