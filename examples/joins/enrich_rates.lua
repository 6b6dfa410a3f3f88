-- Temporal enrichment with keyed connected streams (the "versioned table" pattern of Flink's
-- temporal joins, written as a KeyedCoProcessFunction): every order is priced at the rate of
-- its currency that was valid at the order's time, once the watermark (the minimum of both
-- inputs) says that no earlier rate can still come. docs/joins.md explains each step.
--
-- orders.csv: id,currency,time (ms),amount    rates.csv: currency,time (ms),rate
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{watermark_interval = 0}
local by_time = wm.watermarks.monotonous():with_timestamp_field("ts")

local orders = env:read_lines(here .. "/data/orders.csv")
  :parse_csv{"id", "cur", "ts:integer", "amount:integer"}
  :assign_timestamps_and_watermarks(by_time)
local rates = env:read_lines(here .. "/data/rates.csv")
  :parse_csv{"cur", "ts:integer", "rate:number"}
  :assign_timestamps_and_watermarks(by_time)

orders:key_by("cur"):connect(rates:key_by("cur")):process{
  -- an order waits for the watermark to pass its time: a rate with an earlier time may
  -- still be on its way
  process_element1 = function(o, ctx)
    local waiting = ctx.state.waiting or {}
    waiting[#waiting + 1] = {id = o.id, ts = o.ts, amount = o.amount}
    ctx.state.waiting = waiting
    ctx.timer_service:register_event_time_timer(o.ts)
  end,
  -- the currency's rates, in time order (both inputs share ctx.state for the key)
  process_element2 = function(r, ctx)
    local versions = ctx.state.versions or {}
    versions[#versions + 1] = {ts = r.ts, rate = r.rate}
    ctx.state.versions = versions
  end,
  on_timer = function(t, ctx, out)
    local still = {}
    for _, o in ipairs(ctx.state.waiting) do
      if o.ts <= t then
        local rate
        for _, v in ipairs(ctx.state.versions or {}) do
          if v.ts <= o.ts then rate = v.rate end
        end
        out(string.format("%s %s at %d: %d x %s = %s", o.id, ctx.key, o.ts, o.amount,
          rate and string.format("%.2f", rate) or "?",
          rate and string.format("%.2f", o.amount * rate) or "no rate yet"))
      else
        still[#still + 1] = o
      end
    end
    ctx.state.waiting = still
  end,
}:print()

env:execute("enrich orders with the rate of their time")
