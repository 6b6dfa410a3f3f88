--- The 'nexmark' connector: a table of Nexmark events (env:nexmark, the generator in C)
-- with the shape of Flink nexmark's DDL (`datagen`): `event_type INT`, `person ROW<...>`,
-- `auction ROW<...>`, `bid ROW<...>`, the computed `dateTime` and a WATERMARK. See
-- docs/sql.md ("The nexmark connector") and examples/nexmark/.
-- @module wm.sql.connector_nexmark
local nexmark = require("wm.nexmark")
local expr = require("wm.sql.expr")
local parser = require("wm.sql.parser")

local M = {}

-- SQL option -> env:nexmark option (Flink nexmark's names, NexmarkSourceOptions, and wmrun's)
local INT_OPTS = {
  ["events.num"] = "events",
  ["first-event.rate"] = "event_rate",
  ["next-event.rate"] = "event_rate",
  ["person.proportion"] = "person_proportion",
  ["auction.proportion"] = "auction_proportion",
  ["bid.proportion"] = "bid_proportion",
  ["bid.hot-ratio.auctions"] = "hot_auction_ratio",
  ["bid.hot-ratio.bidders"] = "hot_bidder_ratio",
  ["auction.hot-ratio.sellers"] = "hot_seller_ratio",
  ["person.avg-size"] = "person_avg_size",
  ["auction.avg-size"] = "auction_avg_size",
  ["bid.avg-size"] = "bid_avg_size",
  ["auctions.in-flight"] = "in_flight_auctions",
  ["people.active"] = "active_people",
  ["out-of-order.group-size"] = "out_of_order_group",
  ["base-time"] = "base_time",
  seed = "seed",
}
local OTHER = {connector = true, rate = true, tps = true, ["max-emit-speed"] = true,
               ["scan.watermark.idle-timeout"] = true}
-- Flink nexmark options that wmrun does not implement: an error saying so, not ignored
local NOT_YET = {["rate.shape"] = "a rate shape (the rate is constant)",
                 ["rate.period"] = "a rate shape (the rate is constant)",
                 ["rate.limited"] = "'rate.limited' (use 'rate' or 'max-emit-speed' = 'false')",
                 ["keep-alive"] = "'keep-alive' (a bounded table ends)", ["stop-at"] = "'stop-at' (use 'events.num')"}

-- The fields of each ROW column of Flink's DDL, and their types.
local SCHEMA = {
  event_type = "INT",
  person = {id = "BIGINT", name = "STRING", emailAddress = "STRING", creditCard = "STRING", city = "STRING",
            state = "STRING", dateTime = "TIMESTAMP", extra = "STRING"},
  auction = {id = "BIGINT", itemName = "STRING", description = "STRING", initialBid = "BIGINT",
             reserve = "BIGINT", dateTime = "TIMESTAMP", expires = "TIMESTAMP", seller = "BIGINT",
             category = "BIGINT", extra = "STRING"},
  bid = {auction = "BIGINT", bidder = "BIGINT", price = "BIGINT", channel = "STRING", url = "STRING",
         dateTime = "TIMESTAMP", extra = "STRING"},
}
-- the types a declared column may have for the generator's value
local FITS = {INT = {INT = true, BIGINT = true}, BIGINT = {BIGINT = true}, STRING = {STRING = true},
              TIMESTAMP = {TIMESTAMP = true, TIMESTAMP_LTZ = true}}

function M.options(k) return INT_OPTS[k] ~= nil or OTHER[k] ~= nil end

local function names_of(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return table.concat(out, ", ")
end

-- Flink's DDL computes dateTime from the event's sub-row; the generator's rows carry that
-- value as their `dateTime` field already, so this column is read, not computed.
local DATETIME = "CASE WHEN event_type = 0 THEN person.`dateTime` WHEN event_type = 1 THEN auction.`dateTime` "
  .. "ELSE bid.`dateTime` END"
-- Two expression trees equal in everything but their positions.
local function same_tree(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if k ~= "pos" and k ~= "_sig" and not same_tree(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if k ~= "pos" and k ~= "_sig" and a[k] == nil then return false end
  end
  return true
end
local DATETIME_TREE = parser.parse_expr(DATETIME, {name = "nexmark"})

--- Checks a nexmark table's options and columns at CREATE TABLE: fills `t.nexmark` with the
-- options of env:nexmark.
function M.check(p, t)
  local props, pos = t.props, t.props_pos
  local o = {}
  local known = {}
  for k in pairs(INT_OPTS) do known[#known + 1] = k end
  for k in pairs(OTHER) do known[#known + 1] = k end
  table.sort(known)
  for k, v in pairs(props) do
    if NOT_YET[k] then
      p:err(pos[k], "not supported yet: option '%s' of the nexmark connector: %s", k, NOT_YET[k])
    elseif not M.options(k) then
      p:err(pos[k], "unknown option '%s' for the nexmark connector (it takes '%s')", k, table.concat(known, "', '"))
    end
    local name = INT_OPTS[k]
    if name then
      local text = v
      if k:match("avg%-size$") then text = v:gsub("%s*[bB]$", "") end -- Flink's memory size: '200b'
      local n = math.tointeger(tonumber(text))
      local spec = nexmark.INT_OPTIONS[name]
      if not n or n < spec[2] or n > spec[3] then
        p:err(pos[k], "option '%s' must be an integer from %s to %s, got '%s'", k, spec[2], spec[3], v)
      end
      if o[name] and o[name] ~= n then
        p:err(pos[k], "'first-event.rate' and 'next-event.rate' must be equal (a rate shape is not supported "
          .. "yet), got %s and %s", o[name], n)
      end
      o[name] = n
    end
  end
  local rate = props.rate or props.tps
  if props.rate and props.tps then p:err(pos.tps, "give 'rate' or 'tps', not both") end
  if rate then
    local k = props.rate and "rate" or "tps"
    local x = tonumber(rate)
    if not x or x < 0 or x > 1e9 then
      p:err(pos[k], "option '%s' must be a number of events per second from 0 (as fast as possible) to 1e9, "
        .. "got '%s'", k, rate)
    end
    o.rate = x
  end
  local mes = props["max-emit-speed"]
  if mes then
    if mes:lower() ~= "true" and mes:lower() ~= "false" then
      p:err(pos["max-emit-speed"], "option 'max-emit-speed' must be 'true' or 'false', got '%s'", mes)
    end
    if mes:lower() == "false" then
      if rate then p:err(pos["max-emit-speed"], "give 'rate' or 'max-emit-speed' = 'false', not both") end
      o.max_emit_speed = false
    end
  end
  if props["scan.watermark.idle-timeout"] then
    local k = "scan.watermark.idle-timeout"
    t.idle_ms = p:duration_option(k, props[k], pos[k])
  end
  o.name = "nexmark (" .. t.name .. ")"
  -- as Flink's nexmark source, one per instance: each emits its share of the events
  o.parallel = true
  t.nexmark = o
  -- the columns: a subset of Flink's DDL, with its names and types
  for _, c in ipairs(t.physical) do
    local want = SCHEMA[c.name]
    if not want then
      p:err(c.pos, "the nexmark connector has no column '%s' (it has %s; Flink's DDL: examples/nexmark/README.md)",
        c.name, names_of(SCHEMA))
    end
    if type(want) == "string" then
      if not FITS[want][c.type] then
        p:err(c.pos, "column '%s' of a nexmark table must be %s, got %s", c.name, want, expr.show(c.type))
      end
    else
      if not c.fields then p:err(c.pos, "column '%s' of a nexmark table must be a ROW<...>", c.name) end
      for _, f in ipairs(c.fields) do
        local ft = want[f.name]
        if not ft then
          p:err(c.pos, "the nexmark %s row has no field '%s' (it has %s)", c.name, f.name, names_of(want))
        end
        if not FITS[ft][f.type] then
          p:err(c.pos, "field '%s.%s' of a nexmark table must be %s, got %s", c.name, f.name, expr.show(ft),
            expr.show(f.type))
        end
      end
    end
  end
  for _, c in ipairs(t.computed) do
    if c.name == "dateTime" and same_tree(c.expr, DATETIME_TREE) then c.field = "dateTime" end
  end
end

--- The fields of the person, auction and bid rows, in the generator's order.
M.FIELDS = nexmark.FIELDS

--- The stream of a nexmark table's rows (before its computed columns and watermarks);
-- `omit`: env:nexmark's option (fields no reader uses, wm.sql.connectors.nexmark_omit).
function M.source(_p, t, env, omit)
  local o = {}
  for k, v in pairs(t.nexmark) do o[k] = v end
  o.omit = omit
  return env:nexmark(o)
end

return M
