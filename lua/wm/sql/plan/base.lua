--- The planner's class and what every part of it shares: positions, script lines, relations,
-- scopes (what column names mean while compiling an expression). The parts of the planner
-- (wm.sql.plan.ddl, .from, .select, .aggregate, .statements) add their methods to `Planner`.
-- @module wm.sql.plan.base
local errors = require("wm.sql.errors")
local expr = require("wm.sql.expr")

local M = {}
local raise = errors.raise

local Planner = {}
Planner.__index = Planner
M.Planner = Planner

function Planner:err(pos, fmt, ...) raise(self.src, pos, fmt, ...) end

--- The script position `pos` as `file:line`, for run-time errors.
function M.lineof(self, pos)
  local l = errors.line_col(self.src.text, pos)
  return self.src.name .. ":" .. l
end
local lineof = M.lineof

-- Gives the nodes created since `mark` the script position `pos`, so that run-time errors
-- and metrics name the SQL line.
function Planner:tag_nodes(mark, pos)
  local env = self.env
  if not env then return end
  local w = lineof(self, pos)
  for i = mark + 1, #env.nodes do env.nodes[i].where = w end
end

--- A relation: a stream, its columns, whether it carries a changelog.
function M.rel_of(stream, cols, updating)
  return {stream = stream, cols = cols, updating = updating}
end

--- True when an expression contains an aggregate call.
function M.has_agg(e)
  local found = false
  expr.each_agg(e, function() found = true end)
  return found
end

---------------------------------------------------------------------------------------------
-- Scopes: what column names mean while compiling an expression

-- A scope over rows `r` with the given columns.
function Planner:row_scope(cols, _, alias_names)
  local by = {}
  for _, c in ipairs(cols) do by[c.name] = c end
  local src = self.src
  local scope
  scope = {
    src = src,
    functions = self.functions,
    -- CURRENT_WATERMARK(rt): the watermark of the operator evaluating it (nil before the
    -- first one); the planner then evaluates the expression in an operator that knows it
    current_watermark = function(e)
      local a = e.args[1]
      if #e.args ~= 1 or a.tag ~= "col" then
        raise(src, e.pos, "CURRENT_WATERMARK takes one argument, a time attribute column")
      end
      local c = by[a.name]
      if not c then raise(src, a.pos, "unknown column '%s'", a.name) end
      if not c.rowtime then
        raise(src, a.pos, "CURRENT_WATERMARK needs a time attribute (a rowtime column declared with WATERMARK "
          .. "FOR ...), '%s' is not one", a.name)
      end
      scope.uses_watermark = true
      return "R_cur_wm()", c.type
    end,
    column = function(n)
      local join = alias_names and alias_names["\0join"]
      if join then n = join.resolve(n) end -- a column of a join's table (wm.sql.plan.join)
      -- a field of a ROW column (Flink's nexmark DDL: bid.price) unless a table is so named
      local rc = n.qual and by[n.qual]
      if rc and rc.fields and not (alias_names and alias_names[n.qual]) then
        local f = rc.fields[n.name]
        if not f then
          raise(src, n.pos, "the ROW column '%s' has no field '%s' (it has %s)", n.qual, n.name,
            M.field_list(rc.fields))
        end
        -- a row of another event type has the column nil: its fields are NULL
        return string.format("(r[%q] or R_NOROW)[%q]", rc.field or rc.name, n.name), f.type,
          {rc.field or rc.name, n.name}
      end
      if n.qual and alias_names and not alias_names[n.qual] then
        raise(src, n.pos, "unknown table '%s' (in %s.%s)", n.qual, n.qual, n.name)
      end
      local c = by[n.name]
      if not c then
        local hint = ""
        for name in pairs(by) do
          if name:lower() == n.name:lower() then hint = " (did you mean '" .. name .. "'?)" end
        end
        raise(src, n.pos, "unknown column '%s'%s", n.name, hint)
      end
      if c.type == nil and n.qual then
        -- a qualifier that is neither a table nor a ROW column, on the column being computed
        raise(src, n.pos, "unknown column '%s' (in %s.%s)", n.qual, n.qual, n.name)
      end
      if c.type == nil then raise(src, n.pos, "column '%s' is used before it is defined", n.name) end
      if c.fields then
        raise(src, n.pos, "not supported yet: the ROW column '%s' as a value (use its fields, e.g. %s.%s)",
          n.name, n.name, c.fields[1].name)
      end
      return string.format("r[%q]", c.field or c.name), c.type, {c.field or c.name} -- (and the path, wm.sql.cexpr)
    end,
  }
  return scope
end


--- The names of a ROW column's fields, for messages.
function M.field_list(fields)
  local names = {}
  for i, f in ipairs(fields) do names[i] = f.name end
  return table.concat(names, ", ")
end

--- Compiles an expression into `function(r) return <e> end`; returns it and its type.
function M.compile_fn(self, e, scope, pos)
  local s, t = expr.compile(e, scope)
  return expr.load("function(r) return " .. s .. " end", lineof(self, pos or e.pos)), t
end

-- Helpers of the join planners (wm.sql.plan.join, .semi_join, .temporal_join).

--- The conjuncts of an AND tree, in order (appended to `out`).
function M.conjuncts(e, out)
  if e == nil then return out end
  if e.tag == "bin" and e.op == "AND" then
    M.conjuncts(e[1], out)
    M.conjuncts(e[2], out)
  else
    out[#out + 1] = e
  end
  return out
end

--- The AND of a list of conditions (nil for an empty list).
function M.and_of(list)
  local e = list[1]
  for i = 2, #list do e = {tag = "bin", op = "AND", pos = list[i].pos, e, list[i]} end
  return e
end

--- Where an expression starts in the script (a binary node's own position is its operator's).
function M.start_pos(e)
  while type(e[1]) == "table" and e[1].pos do e = e[1] end
  return e.pos
end

--- The column `name` of a relation, or nil.
function M.find_col(rel, name)
  for _, c in ipairs(rel.cols) do if c.name == name then return c end end
end

return M
