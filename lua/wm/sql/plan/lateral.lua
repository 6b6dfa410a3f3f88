--- Table functions in FROM (Flink's correlate): `FROM t, LATERAL TABLE(f(args)) [AS] T(a, ...)`,
-- `t CROSS JOIN LATERAL TABLE(...)` (each row of t joined with every row f emits for it; a
-- row for which f emits nothing is dropped) and `t LEFT JOIN LATERAL TABLE(...) ON TRUE` (such
-- a row is kept, the function's columns NULL). One Lua flat_map: the rows keep their
-- timestamps, a rowtime column of t stays one.
-- @module wm.sql.plan.lateral
local expr = require("wm.sql.expr")
local errors = require("wm.sql.errors")
local functions = require("wm.sql.functions")
local base = require("wm.sql.plan.base")
local from = require("wm.sql.plan.from")

local Planner, rel_of, compile_fn = base.Planner, base.rel_of, base.compile_fn

function Planner:plan_lateral(rel, lat, aliases)
  local call = lat.call
  local def = self.udfs[call.name]
  if not def or def.kind ~= "table" then
    if def or expr.FUNCS[call.name] or expr.is_agg_call(call) then
      self:err(call.pos, "'%s' is not a table function (LATERAL TABLE takes one registered with "
        .. "register_table_function or CREATE FUNCTION)", def and def.name or call.name)
    end
    self:err(call.pos, "unknown table function '%s'", call.name)
  end
  if rel.updating then self:err(lat.pos, "not supported yet: LATERAL TABLE over an updating input") end
  local on = lat.on
  local on_true = on and on.tag == "lit" and on.type == "BOOLEAN" and on.value == true
  if lat.left and not on_true then
    self:err(lat.on_pos or lat.pos, "LEFT JOIN LATERAL TABLE(...) takes ON TRUE")
  elseif on and not on_true then
    self:err(lat.on_pos, "not supported yet: a join condition on LATERAL TABLE (only ON TRUE; filter in WHERE)")
  end
  if rel.tvf then rel = from.materialize_tvf(rel) end
  local scope = self:row_scope(rel.cols, nil, aliases)
  local fns, types = {}, {}
  for i, a in ipairs(call.args) do fns[i], types[i] = compile_fn(self, a, scope) end
  if scope.uses_watermark then self:err(call.pos, "not supported yet: CURRENT_WATERMARK in LATERAL TABLE") end
  functions.check_call(self.src, def, call, types)
  -- the columns: the row's, then the function's (named by the alias's list, if any)
  local names = {}
  if lat.columns and #lat.columns ~= #def.columns then
    self:err(lat.alias_pos, "%s names %d column%s, but function '%s' gives %d", lat.alias, #lat.columns,
      #lat.columns == 1 and "" or "s", def.name, #def.columns)
  end
  local cols, fields, taken = {}, {}, {}
  for i, c in ipairs(rel.cols) do
    cols[i] = c
    fields[#fields + 1] = c.field or c.name
    taken[c.name] = true
  end
  for i, c in ipairs(def.columns) do
    names[i] = lat.columns and lat.columns[i] or c.name
    if taken[names[i]] then
      self:err(lat.alias_pos or call.pos, "column '%s' of function '%s' is also a column of the table: rename it "
        .. "(AS T(a, ...))", names[i], def.name)
    end
    taken[names[i]] = true
    cols[#cols + 1] = {name = names[i], type = c.type}
  end
  local l, c = errors.line_col(self.src.text, call.pos)
  local where = self.src.name .. ":" .. l .. ":" .. c
  local n, left = #fns, lat.left
  local stream = rel.stream:flat_map(function(r, emit)
    local args = {}
    for i = 1, n do args[i] = fns[i](r) end
    local any = false
    functions.call_table(def, where, args, n, function(vals)
      any = true
      local o = {}
      for _, f in ipairs(fields) do o[f] = r[f] end
      for i, nm in ipairs(names) do o[nm] = vals[i] end
      emit(o)
    end)
    if left and not any then
      local o = {}
      for _, f in ipairs(fields) do o[f] = r[f] end
      emit(o)
    end
  end):name("table function " .. def.name)
  local out = rel_of(stream, cols, false)
  out.alias = rel.alias
  if lat.alias then aliases[lat.alias] = true end
  return out
end
