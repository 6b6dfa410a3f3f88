-- Functions for examples/sql/n_sql_udf.sql, declared there with
-- CREATE FUNCTION name AS 'n_sql_udf_fns.name' LANGUAGE LUA (docs/sql.md, "User functions").
local M = {}

-- a scalar function: cents as dollars, '1.20'
M.dollars = {args = {"INT"}, returns = "STRING", eval = function(cents)
  if cents == nil then return nil end
  return string.format("%d.%02d", cents // 100, cents % 100)
end}

-- an aggregate function: the largest value minus the smallest (its accumulator is
-- checkpointed with the window: a plain table)
M.spread = {args = {"INT"}, returns = "INT",
  create_accumulator = function() return {} end,
  accumulate = function(acc, v)
    if v == nil then return end
    if acc.lo == nil or v < acc.lo then acc.lo = v end
    if acc.hi == nil or v > acc.hi then acc.hi = v end
  end,
  merge = function(acc, other)
    if other.lo ~= nil then
      M.spread.accumulate(acc, other.lo)
      M.spread.accumulate(acc, other.hi)
    end
  end,
  get_value = function(acc) if acc.lo ~= nil then return acc.hi - acc.lo end end,
}

-- a table function: every letter of a name with its position, one row each
M.letters = {args = {"STRING"}, returns = {"letter STRING", "pos INT"}, eval = function(emit, s)
  for i = 1, #s do emit({s:sub(i, i), i}) end
end}

return M
