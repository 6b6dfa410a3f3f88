--- Aggregate functions of the SQL layer: COUNT(*), COUNT(x), SUM, MIN, MAX, AVG and their
-- DISTINCT forms, each as {init, add, retract, merge, result} over a state value.
-- `retract` makes them exact on updating (retracting) input: MIN and MAX then keep a
-- multiset of values, as Flink's MinWithRetract/MaxWithRetract do.
-- @module wm.sql.aggs
local M = {}

-- Result type of an aggregate over an argument type (Flink's rules: SUM and AVG keep the
-- argument's type, so AVG of an INT column is an INT).
function M.result_type(name, arg_type)
  if name == "COUNT" then return "BIGINT" end
  return arg_type
end

local function multiset_add(m, v, d)
  local c = (m[v] or 0) + d
  if c <= 0 then m[v] = nil else m[v] = c end
end

--- Makes an aggregate.
-- @tparam string name COUNT, SUM, MIN, MAX or AVG
-- @tparam table opts `star` (COUNT(*)), `distinct`, `retract` (needs retraction), `type` (argument type)
-- @treturn table {init, add, retract, merge, result}
function M.make(name, opts)
  local integer = opts.type == "INT" or opts.type == "BIGINT"
  if opts.distinct and name == "COUNT" then
    -- COUNT(DISTINCT x): the multiset of the values and the number of its keys, kept as they
    -- change (a result per row must not walk the set: Nexmark q15 has thousands of bidders)
    return {
      init = function() return {m = {}, n = 0} end,
      add = function(s, v)
        if v ~= nil then
          local c = s.m[v]
          if c then s.m[v] = c + 1 else s.m[v], s.n = 1, s.n + 1 end
        end
        return s
      end,
      retract = function(s, v)
        local c = v ~= nil and s.m[v]
        if c then
          if c <= 1 then s.m[v], s.n = nil, s.n - 1 else s.m[v] = c - 1 end
        end
        return s
      end,
      merge = function(a, b)
        for v, c in pairs(b.m) do
          local x = a.m[v]
          if x then a.m[v] = x + c else a.m[v], a.n = c, a.n + 1 end
        end
        return a
      end,
      result = function(s) return s.n end,
    }
  end
  if opts.distinct then
    -- a multiset of the distinct values; the result applies the plain aggregate to its keys
    local base = M.make(name, {type = opts.type})
    return {
      init = function() return {} end,
      add = function(s, v) if v ~= nil then multiset_add(s, v, 1) end return s end,
      retract = function(s, v) if v ~= nil then multiset_add(s, v, -1) end return s end,
      merge = function(a, b) for v, c in pairs(b) do multiset_add(a, v, c) end return a end,
      result = function(s)
        local st = base.init()
        for v in pairs(s) do st = base.add(st, v) end
        return base.result(st)
      end,
    }
  end
  if name == "COUNT" then
    local star = opts.star
    return {
      init = function() return 0 end,
      add = function(s, v) if star or v ~= nil then return s + 1 end return s end,
      retract = function(s, v) if star or v ~= nil then return s - 1 end return s end,
      merge = function(a, b) return a + b end,
      result = function(s) return s end,
    }
  end
  if name == "SUM" or name == "AVG" then
    local avg = name == "AVG"
    return {
      init = function() return {sum = integer and 0 or 0.0, n = 0} end,
      add = function(s, v) if v ~= nil then s.sum, s.n = s.sum + v, s.n + 1 end return s end,
      retract = function(s, v) if v ~= nil then s.sum, s.n = s.sum - v, s.n - 1 end return s end,
      merge = function(a, b) a.sum, a.n = a.sum + b.sum, a.n + b.n return a end,
      result = function(s)
        if s.n == 0 then return nil end
        if not avg then return s.sum end
        if integer then -- integer division truncating toward zero, as Java's long division
          local q = s.sum // s.n
          if q < 0 and q * s.n ~= s.sum then q = q + 1 end
          return q
        end
        return s.sum / s.n
      end,
    }
  end
  if name == "MIN" or name == "MAX" then
    local better = name == "MIN" and function(a, b) return a < b end or function(a, b) return a > b end
    if opts.retract then
      local float = opts.type == "DOUBLE"
      return {
        init = function() return {} end,
        add = function(s, v) if v ~= nil then multiset_add(s, v, 1) end return s end,
        retract = function(s, v) if v ~= nil then multiset_add(s, v, -1) end return s end,
        merge = function(a, b) for v, c in pairs(b) do multiset_add(a, v, c) end return a end,
        result = function(s)
          local best
          for v in pairs(s) do if best == nil or better(v, best) then best = v end end
          -- (a table key that was an integral float is an integer: a DOUBLE's value is a float)
          if float and math.type(best) == "integer" then best = best + 0.0 end
          return best
        end,
      }
    end
    -- append-only: the state is the value itself, boxed so that nil means "none yet"
    return {
      init = function() return {} end,
      add = function(s, v) if v ~= nil and (s.v == nil or better(v, s.v)) then s.v = v end return s end,
      retract = function() error(name .. " cannot retract without the retract form", 0) end,
      merge = function(a, b) if b.v ~= nil and (a.v == nil or better(b.v, a.v)) then a.v = b.v end return a end,
      result = function(s) return s.v end,
    }
  end
  error("unknown aggregate " .. tostring(name), 0)
end

--- The value an argument function gives for a row that an aggregate's FILTER (WHERE ...)
-- leaves out: `filtered` makes an aggregate skip it.
M.SKIP = setmetatable({}, {__tostring = function() return "SKIP" end})

--- `agg` with FILTER (WHERE ...): rows whose argument is M.SKIP are not added (nor retracted).
function M.filtered(agg)
  local SKIP, add, retract = M.SKIP, agg.add, agg.retract
  return {
    init = agg.init, merge = agg.merge, result = agg.result,
    add = function(s, v) if v == SKIP then return s end return add(s, v) end,
    retract = function(s, v) if v == SKIP then return s end return retract(s, v) end,
  }
end

--- The argument function of an aggregate with FILTER (WHERE cond): M.SKIP when `cond(r)` is
-- not TRUE, else `argfn(r)`.
function M.filter_arg(argfn, cond)
  local SKIP = M.SKIP
  return function(r)
    if cond(r) ~= true then return SKIP end
    return argfn(r)
  end
end

return M
