-- Broadcast state: alert rules that change while the job runs reach every instance of a
-- keyed stream of payments. Each instance keeps every rule in ctx.broadcast_state and checks
-- each payment of its keys against them; ctx.state counts each user's payments. The
-- activity file interleaves rules and events, one source split in two. docs/joins.md.
--
-- rule,NAME,FIELD OP NUMBER        event,USER,AMOUNT[,HOUR]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{}

local lines = env:read_lines(here .. "/data/activity.csv")
local rules = lines:filter(function(l) return l:sub(1, 5) == "rule," end)
  :map(function(l)
    local name, field, op, n = l:match("^rule,([^,]+),(%a+) ([<>]=?) (%d+)$")
    return {name = name, field = field, op = op, n = tonumber(n)}
  end)
local payments = lines:filter(function(l) return l:sub(1, 6) == "event," end)
  :map(function(l)
    local user, amount, hour = l:match("^event,([^,]+),(%d+),?(%d*)$")
    return {user = user, amount = tonumber(amount), hour = tonumber(hour) or 12}
  end)

local tests = {
  ["<"] = function(a, b) return a < b end, ["<="] = function(a, b) return a <= b end,
  [">"] = function(a, b) return a > b end, [">="] = function(a, b) return a >= b end,
}

payments:key_by("user"):connect(rules:broadcast()):process{
  process_element = function(p, ctx, out)
    ctx.state.count = (ctx.state.count or 0) + 1
    local names = {}
    for name in pairs(ctx.broadcast_state) do names[#names + 1] = name end
    table.sort(names) -- the rules in a fixed order
    for _, name in ipairs(names) do
      local r = ctx.broadcast_state[name]
      if tests[r.op](p[r.field], r.n) then
        out(string.format("%s's payment #%d (%d at %02d h) breaks rule '%s'", p.user,
          ctx.state.count, p.amount, p.hour, name))
      end
    end
  end,
  process_broadcast_element = function(r, ctx)
    ctx.broadcast_state[r.name] = r -- every instance gets this record: all hold the same rules
  end,
}:print()

env:execute("alert on payments with broadcast rules")
