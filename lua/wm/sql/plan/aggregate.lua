--- GROUP BY (with or without a window), HAVING, DISTINCT.
-- @module wm.sql.plan.aggregate
local errors = require("wm.sql.errors")
local expr = require("wm.sql.expr")
local aggs = require("wm.sql.aggs")
local functions = require("wm.sql.functions")
local lower = require("wm.sql.plan.lower")
local cexpr = require("wm.sql.cexpr")
local base = require("wm.sql.plan.base")
local from = require("wm.sql.plan.from")

local raise = errors.raise
local Planner, rel_of, lineof, has_agg, compile_fn = base.Planner, base.rel_of, base.lineof, base.has_agg,
  base.compile_fn
local check_rowtime, materialize_tvf = from.check_rowtime, from.materialize_tvf

-- The row column a plain column reference reads, when it is never NULL: {field, type}.
local function nonnull_column(cols, e)
  if e.tag ~= "col" then return nil end
  for _, c in ipairs(cols) do
    if c.name == e.name then
      if c.nonnull then return c.field or c.name, c.type end
      return nil
    end
  end
  return nil
end

-- What of a windowed aggregation can run in C (architecture.md, hot path):
-- * key_fields: the GROUP BY keys as row fields for a field-based key_by, when every key is
--   a plain column that is never NULL (else a Lua key function, which maps NULL to a key);
-- * builtin: the window's C aggregation when the aggregate list allows: `count()` for a
--   single COUNT(*) (or COUNT(col) of a never-NULL column), on any window but CUMULATE;
--   `sum/min/max(field)` for a single SUM/MIN/MAX of a never-NULL numeric column on a
--   TUMBLE window (the result row is the window's first row: its rowtime gives the window).
-- A light Lua map then shapes the final row from the C result, once per window and key.
-- * key_null (with `nullable`: a windowed aggregation): true when key_fields has a plain
--   column that may be NULL (of a type whose values C's key gives back as they are: INT,
--   BIGINT, STRING, TIMESTAMP[_LTZ]); the C key_by then makes a NULL the key NULL_KEY, as the
--   Lua key function does (lower's keyed_of), with no Lua call per row (Nexmark q12's bidder).
local NULLABLE_KEY = {INT = true, BIGINT = true, STRING = true, TIMESTAMP = true, TIMESTAMP_LTZ = true}
local function fast_window_agg(cols, keys, agg_list, window, nullable)
  local key_fields, key_null = {}, nil
  for i, k in ipairs(keys) do
    local f = nonnull_column(cols, k)
    if not f and nullable and k.tag == "col" and os.getenv("WMRUN_SQL_AGG") ~= "lua" then
      for _, c in ipairs(cols) do
        if c.name == k.name and NULLABLE_KEY[c.type] then f, key_null = c.field or c.name, true end
      end
    end
    if not f then key_fields, key_null = nil, nil break end
    key_fields[i] = f
  end
  if key_fields and #key_fields == 0 then key_fields, key_null = nil, nil end
  if #agg_list ~= 1 or window.kind == "cumulate" or os.getenv("WMRUN_SQL_AGG") == "lua" then
    return key_fields, nil, key_null
  end
  local a = agg_list[1]
  if a.distinct or a.filter then return key_fields, nil, key_null end
  local arg = not a.star and a.arg or nil
  local field, ftype
  if arg then field, ftype = nonnull_column(cols, arg) end
  if a.name == "COUNT" and (a.star or field) then return key_fields, {agg = "count"}, key_null end
  if (a.name == "SUM" or a.name == "MIN" or a.name == "MAX") and field and expr.NUMERIC[ftype]
      and window.kind == "tumble" and key_fields then
    for _, kf in ipairs(key_fields) do if kf == field then return key_fields, nil, key_null end end
    return key_fields, {agg = a.name:lower(), field = field}, key_null
  end
  return key_fields, nil, key_null
end

-- SQL aggregates in C (core/ops/wm_sqlagg.h, docs/sql.md "Aggregates in C"). The
-- environment variable WMRUN_SQL_AGG=lua forces the Lua aggregates, these and the single
-- built-ins of fast_window_agg (specs compare both).
local C_KINDS = {COUNT = true, SUM = true, MIN = true, MAX = true, AVG = true}
local INTEGER = {INT = true, BIGINT = true}
local FLIP = {["<"] = ">", ["<="] = ">=", [">"] = "<", [">="] = "<=", ["="] = "=", ["<>"] = "<>"}

-- The column a column reference reads (qualified or not: `B.price` of a join's table, not
-- a field of a ROW column): field, type (nil when e is not one). scope: the row scope the
-- aggregates' arguments were compiled in (it resolved e then: it raises nothing now).
local function column_of(scope, e)
  if e.tag ~= "col" then return nil end
  local _, t, path = scope.column(e)
  if path and #path == 1 then return path[1], t end
  return nil
end

-- An aggregate's argument as C reads it: a column's field. The hook for row expressions:
-- when core/ops/wm_rexpr (h33expr) compiles other expressions, they plug in here (and as
-- wm_sqlagg_def.eval in C); today anything but a column keeps the query on the Lua path.
local function c_arg(scope, e)
  return column_of(scope, e)
end

-- FILTER (WHERE c1 AND c2 ...) with every ci `column op number` (or `number op column`) over
-- a numeric column, as {{field, op, value}}; nil otherwise.
local function c_filter(scope, e, out)
  out = out or {}
  if e.tag == "bin" and e.op == "AND" then
    if not c_filter(scope, e[1], out) or not c_filter(scope, e[2], out) then return nil end
    return out
  end
  if e.tag ~= "bin" or not FLIP[e.op] then return nil end
  local col, lit, op = e[1], e[2], e.op
  if col.tag == "lit" then col, lit, op = e[2], e[1], FLIP[e.op] end
  local field, t = column_of(scope, col)
  if not field or not expr.NUMERIC[t] or lit.tag ~= "lit" or not expr.NUMERIC[lit.type] then return nil end
  -- an integer column against a fractional literal: C would compare as doubles; Lua exactly
  if INTEGER[t] and math.type(lit.value) ~= "integer" then return nil end
  out[#out + 1] = {field = field, op = op, value = lit.value}
  return out
end

-- The C form of a windowed aggregation (wm_sqlagg), or nil when something needs Lua: the keys
-- plain never-NULL columns (the key_by key gives them back), every aggregate a built-in
-- one over a column (or *; without a window over appending rows, an expression the caller's
-- projection computes), numeric but for COUNT and for MIN/MAX of strings over appending rows,
-- DISTINCT only in COUNT(DISTINCT) of a numeric column, its FILTER c_filter's, the window not
-- CUMULATE. The result row is built in C when every SELECT item is a key, an aggregate or a
-- bound of the window and there is no HAVING; else C gives {$k1.., $a1.., $ws, $we} and a
-- Lua step shapes it (csql_shape).
-- Without a window (window nil: an unwindowed GROUP BY, lua_keys true) the keys may be any
-- expressions (a Lua key function gives them to C); the caller takes only a direct result row.
-- scope: the row scope of the aggregates' arguments (their columns).
local function c_window_agg(scope, key_fields, keys, key_sigs, agg_list, agg_sigs, items, window, having, tvf,
                            lua_keys, key_types, updating)
  if os.getenv("WMRUN_SQL_AGG") == "lua" then return nil end
  -- (a DOUBLE key that is an integer, 4.0, would come back from C's key as the integer 4)
  for _, t in ipairs(key_types) do if t == "DOUBLE" then return nil end end
  if not key_fields and #keys > 0 and not lua_keys then return nil end
  if window and window.kind == "cumulate" then return nil end
  local defs, meaning = {}, {}
  for i, a in ipairs(agg_list) do
    if a.udaf or not C_KINDS[a.name] or (a.distinct and a.name ~= "COUNT") then return nil end
    local d = {kind = a.star and "COUNT(*)" or a.distinct and "COUNT(DISTINCT)" or a.name}
    if not a.star then
      local field, t = c_arg(scope, a.arg)
      -- an expression (MAX(DATE_FORMAT(dateTime, 'HH:mm'))): without a window over appending
      -- rows, computed in C by the projection of c_group_keys into the column $ga<i>
      if not field and lua_keys and not updating then field, t, d.expr = "$ga" .. i, a.type, a.arg end
      if not field then return nil end
      -- (COUNT(DISTINCT x) of numbers: C's set holds numbers; MIN and MAX of strings compare
      -- their bytes, over appending rows: an updating input's multiset holds numbers)
      local str_ok = (a.name == "MIN" or a.name == "MAX") and t == "STRING" and not updating
      if (a.name ~= "COUNT" or a.distinct) and not expr.NUMERIC[t] and not str_ok then return nil end
      d.field, d.integer = field, INTEGER[t] or false
      if str_ok then d.string = true end
    end
    if a.filter then
      d.filter = c_filter(scope, a.filter)
      if not d.filter then return nil end
    end
    defs[i] = d
    meaning[i] = d.kind .. (d.field and "(" .. d.field .. ")" or "") .. (d.string and " STRING" or "")
      .. (d.filter and " FILTER" or "")
    for _, c in ipairs(d.filter or {}) do meaning[i] = meaning[i] .. " " .. c.field .. c.op .. tostring(c.value) end
  end
  -- (over appending rows the COUNT(DISTINCT)s of one column share one table in the state, C's
  -- share_tables: a state of another layout than separate tables, named in the meaning)
  local shared, nd = "", {}
  for _, d in ipairs(defs) do
    if d.kind == "COUNT(DISTINCT)" and not updating then
      nd[d.field] = (nd[d.field] or 0) + 1
      if nd[d.field] == 2 then shared = "shared DISTINCT " end
    end
  end
  local spec = {nkeys = #keys, aggs = defs, meaning = ("SQL " .. shared .. table.concat(meaning, ", ")):sub(1, 190)}
  local out, direct = {}, not having
  for j, it in ipairs(items) do
    local e, o = it.expr, nil
    local ks, as = key_sigs[expr.sig(e)], expr.is_agg_call(e) and agg_sigs[expr.sig(e)]
    if ks then o = {src = "key", index = ks}
    elseif as then o = {src = "agg", index = as}
    elseif tvf and e.tag == "col" and e.name == "window_start" then o = {src = "start"}
    elseif tvf and e.tag == "col" and e.name == "window_end" then o = {src = "end"}
    elseif tvf and e.tag == "col" and e.name == "window_time" then o = {src = "time"}
    elseif e.tag == "call" and expr.WINDOW_PROPS[e.name] then
      local prop = e.name:match("_(%u+)$")
      o = ({START = {src = "start"}, END = {src = "end"}, ROWTIME = {src = "time"}})[prop]
    end
    if not o then direct = false break end
    o.name = it.name
    out[j] = o
  end
  if not direct then
    out = {}
    for i = 1, #keys do out[#out + 1] = {name = "$k" .. i, src = "key", index = i} end
    for i = 1, #agg_list do out[#out + 1] = {name = "$a" .. i, src = "agg", index = i} end
    out[#out + 1] = {name = "$ws", src = "start"}
    out[#out + 1] = {name = "$we", src = "end"}
  end
  spec.out = out
  return spec, not direct
end

-- The C form of the Lua step that shapes a window's `count()` result (fast_window_agg's
-- builtin count), or nil: a `sql_rows` projection of the count record {count, key, start,
-- stop} into the result row, when every SELECT item is the key (one never-NULL key column,
-- not DOUBLE: the key_by value is the column's value), the count or a bound of the window, and
-- there is no HAVING. WMRUN_SQL_EXPR=lua (cexpr off) keeps the Lua step.
local FTYPE = {STRING = 0, INT = 1, BIGINT = 1, TIMESTAMP = 1, TIMESTAMP_LTZ = 1, DOUBLE = 2, BOOLEAN = 3}
-- A key column that may be NULL is keyed in C too (the key_by field with NULL_KEY for a
-- NULL, spec.key_null, as the Lua key function's), and the projection gives NULL back for it.
local function count_shape(spec, keys, key_sigs, agg_sigs, items, cols, tvf, key_types, base_cols)
  if not cexpr.enabled() or spec.having or #keys > 1 or key_types[1] == "DOUBLE" then return nil end
  local key_null = false
  if #keys == 1 and not spec.key_fields then
    local k = keys[1]
    if k.tag ~= "col" then return nil end
    for _, c in ipairs(base_cols) do
      if c.name == k.name and c.type ~= "ROW" then key_null = c.field or c.name end
    end
    if not key_null then return nil end
  end
  -- (fast_window_agg may have keyed a NULL-able column in C already: spec.key_null)
  local map_null = key_null or spec.key_null
  local prog, out, names, types = {}, {}, {}, {}
  local function node(n) prog[#prog + 1] = n return #prog end
  local key_node
  local function key()
    if key_node then return key_node end
    key_node = node({op = "col", name = "key"})
    if map_null then -- (NULL_KEY, lower.lua's, back to NULL)
      local lk = node({op = "lit", value = "\0<NULL>"})
      local eq = node({op = "eq", args = {key_node, lk}})
      key_node = node({op = "if", args = {eq, node({op = "lit"}), key_node}})
    end
    return key_node
  end
  for j, it in ipairs(items) do
    local e, i = it.expr, nil
    local ks, as = key_sigs[expr.sig(e)], expr.is_agg_call(e) and agg_sigs[expr.sig(e)]
    local prop = e.tag == "call" and expr.WINDOW_PROPS[e.name] and e.name:match("_(%u+)$")
    if tvf and e.tag == "col" then
      prop = ({window_start = "START", window_end = "END", window_time = "ROWTIME"})[e.name]
    end
    if ks then i = key()
    elseif as then i = node({op = "col", name = "count"})
    elseif prop == "START" then i = node({op = "col", name = "start"})
    elseif prop == "END" then i = node({op = "col", name = "stop"})
    elseif prop == "ROWTIME" then
      local a, b = node({op = "col", name = "stop"}), node({op = "lit", value = 1})
      i = node({op = "sub", args = {a, b}})
    end
    if not i or not FTYPE[cols[j].type] then return nil end
    out[j], names[j], types[j] = i, it.name, FTYPE[cols[j].type]
  end
  if key_null then spec.key_fields, spec.key_null = {key_null}, true end
  return {prog = prog, out = out, names = names, types = types}
end

-- The arguments of a call of a user aggregate function: checked against its declaration,
-- compiled into one function of the row giving nothing (no argument), the value (one) or a
-- list (several).
function Planner:udaf_args(udaf, a, row_scope)
  if a.star then self:err(a.pos, "%s(*) is not allowed; only COUNT(*)", a.name) end
  if a.distinct then self:err(a.pos, "not supported yet: DISTINCT on a user aggregate function (%s)", udaf.name) end
  local fns, types = {}, {}
  for j, x in ipairs(a.args) do fns[j], types[j] = compile_fn(self, x, row_scope) end
  functions.check_call(self.src, udaf, a, types)
  local n = #fns
  if n == 0 then return function() return nil end end
  if n == 1 then return fns[1] end
  return function(r)
    local t = {}
    for j = 1, n do t[j] = fns[j](r) end
    return t
  end
end

-- A user aggregate function as an aggregate of wm.sql.aggs' shape; the methods the plan needs
-- (retract over an updating input, merge for session windows) must be there.
function Planner:udaf_make(a, updating, window)
  local d = a.udaf
  if updating and not d.retract then
    self:err(a.pos, "aggregate function '%s' has no retract method: over an updating input (the result of a "
      .. "GROUP BY) it needs retract(acc, ...)", d.name)
  end
  if window and window.kind == "session" and not d.merge then
    self:err(a.pos, "aggregate function '%s' has no merge method: a SESSION window merges accumulators, it needs "
      .. "merge(acc, other)", d.name)
  end
  return functions.make_aggregate(d, a.nargs, a.where)
end

-- The group keys computed in C (an unwindowed GROUP BY whose aggregates run in C, its keys
-- not all plain never-NULL columns: DATE_FORMAT(dateTime, ...), a nullable column): a
-- `sql_rows` projection of the rows into the keys ($gk1, ...) and the columns the aggregates
-- read, for a C key_by on the $gk fields (a NULL key is NULL_KEY, as the Lua key function
-- gives it: lower's keyed_of). With the C path off (WMRUN_SQL_EXPR=lua) the same projection
-- is a Lua map, so that both paths make the same operators (checkpoints match them by place).
-- nil when a key or a column is not for C (then a Lua key function computes the keys).
local function c_group_keys(p, stream, scope, keys, key_types, keyfns, agg_list, arg_exprs)
  local items, cols, seen, fields = {}, {}, {}, {}
  for i, k in ipairs(keys) do
    items[i], cols[i] = {expr = k, name = "$gk" .. i}, {name = "$gk" .. i, type = key_types[i]}
  end
  local function add_col(e)
    local field, t = column_of(scope, e)
    if not field then return false end
    if not seen[field] then
      seen[field] = true
      fields[#fields + 1] = field
      items[#items + 1], cols[#cols + 1] = {expr = e, name = field}, {name = field, type = t}
    end
    return true
  end
  local function add_cols(e)
    if type(e) ~= "table" then return true end
    if e.tag == "col" then return add_col(e) end
    if e.args then return false end -- (a FILTER for C compares columns with numbers only)
    for _, v in ipairs(e) do if not add_cols(v) then return false end end
    return true
  end
  local argfns = {}
  for i, a in ipairs(agg_list) do
    local e = arg_exprs and arg_exprs[i]
    if e then -- (an expression: its value as the column $ga<i>)
      items[#items + 1], cols[#cols + 1] = {expr = e, name = "$ga" .. i}, {name = "$ga" .. i, type = a.type}
      argfns[#argfns + 1] = {"$ga" .. i, (compile_fn(p, e, scope))}
    elseif a.arg and not add_col(a.arg) then
      return nil
    end
    if a.filter and not add_cols(a.filter) then return nil end
  end
  if cexpr.enabled() then return cexpr.try_project(stream, items, cols, scope, p.src) end
  local exprs = {}
  for i, it in ipairs(items) do exprs[i] = it.expr end
  if not cexpr.compiles(stream, scope, p.src, exprs) then return nil end
  local nk = #keys
  return lower.map_rows(stream, false, function(r)
    local o = {}
    for i = 1, nk do o["$gk" .. i] = keyfns[i](r) end
    for _, f in ipairs(fields) do o[f] = r[f] end
    for _, af in ipairs(argfns) do o[af[1]] = af[2](r) end
    return o
  end)
end

function Planner:plan_aggregate(q, rel, items, aliases)
  local src = self.src
  local group = q.group_by or {}
  if q.distinct then
    if q.group_by then self:err(q.pos, "SELECT DISTINCT with GROUP BY is not supported") end
    group = {}
    for _, it in ipairs(items) do group[#group + 1] = it.expr end
  end
  -- the window: a group-window call in GROUP BY, or window_start/window_end of a TVF
  local window, window_call, keys = nil, nil, {}
  local tvf_props = {}
  for _, g in ipairs(group) do
    if g.tag == "call" and expr.WINDOW_FNS[g.name] then
      if window then self:err(g.pos, "GROUP BY has more than one window") end
      if g.name == "CUMULATE" then
        self:err(g.pos, "CUMULATE is a window table function: "
          .. "FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(rt), step, size))")
      end
      local a1 = g.args[1]
      if not a1 or a1.tag ~= "col" then self:err(g.pos, "%s needs a time column as its first argument", g.name) end
      if rel.tvf then self:err(g.pos, "a group window over a window table function") end
      local rc = check_rowtime(self, rel, a1.name, a1.pos)
      local rest = {table.unpack(g.args, 2)}
      window = self:window_spec(g.name, rest, g.pos)
      window.rowtime, window.rowtime_field = a1.name, rc.field or a1.name
      window.processing = rc.proctime
      window_call = g
    elseif rel.tvf and g.tag == "col" and (g.name == "window_start" or g.name == "window_end") then
      tvf_props[g.name] = true
    else
      if g.tag == "call" and expr.WINDOW_PROPS[g.name] then self:err(g.pos, "%s belongs in the SELECT list", g.name) end
      if has_agg(g) then self:err(g.pos, "aggregate functions are not allowed in GROUP BY") end
      keys[#keys + 1] = g
    end
  end
  if rel.tvf then
    if tvf_props.window_start and tvf_props.window_end then
      window = rel.tvf.window
      window.rowtime, window.rowtime_field = rel.tvf.column, rel.tvf.field
    else
      rel = materialize_tvf(rel)
    end
  end
  local base_cols = window and rel.tvf and rel.base_cols or rel.cols
  local row_scope = self:row_scope(base_cols, nil, aliases)
  row_scope.agg_where = "inside another aggregate"
  -- group keys
  local keyfns, key_sigs, key_types = {}, {}, {}
  for i, k in ipairs(keys) do
    local f, t = compile_fn(self, k, row_scope)
    keyfns[i], key_sigs[expr.sig(k)], key_types[i] = f, i, t
  end
  -- aggregate calls in SELECT and HAVING
  local agg_list, agg_sigs, argfns = {}, {}, {}
  local function collect(e)
    expr.each_agg(e, function(a)
      local sg = expr.sig(a)
      if agg_sigs[sg] then return end
      local argfn, at = function() return true end, nil
      local udaf = expr.user_agg(a.name)
      local i = #agg_list + 1
      if udaf then
        argfns[i] = self:udaf_args(udaf, a, row_scope)
        local l, c = errors.line_col(src.text, a.pos)
        agg_list[i] = {name = a.name, udaf = udaf, nargs = #a.args, pos = a.pos, result_type = udaf.returns,
                       where = src.name .. ":" .. l .. ":" .. c}
      elseif a.star then
        if a.name ~= "COUNT" then self:err(a.pos, "%s(*) is not allowed; only COUNT(*)", a.name) end
      else
        if #a.args ~= 1 then self:err(a.pos, "%s takes one argument", a.name) end
        argfn, at = compile_fn(self, a.args[1], row_scope)
        if (a.name == "SUM" or a.name == "AVG") and not expr.NUMERIC[at] then
          self:err(a.args[1].pos, "%s needs a numeric argument, got %s", a.name, expr.show(at))
        end
      end
      if not udaf then
        agg_list[i] = {name = a.name, distinct = a.distinct, star = a.star, type = at, arg = a.args and a.args[1],
                       result_type = aggs.result_type(a.name, at or "BIGINT")}
        argfns[i] = argfn
      end
      agg_sigs[sg] = i
      -- FILTER (WHERE cond): the argument is aggs.SKIP for the rows it leaves out
      if a.filter then
        local cond, ct = compile_fn(self, a.filter, row_scope, a.filter.pos)
        if ct ~= "BOOLEAN" and ct ~= "NULL" then
          self:err(a.filter_pos, "FILTER needs a BOOLEAN condition, got %s", expr.show(ct))
        end
        agg_list[i].filter = a.filter
        argfns[i] = aggs.filter_arg(argfns[i], cond)
      end
    end)
  end
  for _, it in ipairs(items) do collect(it.expr) end
  if q.having then collect(q.having) end
  -- the scope after aggregation: keys, aggregates, window properties
  local scope = {src = src, functions = self.functions}
  scope.match = function(e)
    local ks = key_sigs[expr.sig(e)]
    if ks then return "k[" .. ks .. "]", key_types[ks] end
    if expr.is_agg_call(e) then
      local i = agg_sigs[expr.sig(e)]
      return "a[" .. i .. "]", agg_list[i].result_type
    end
    if e.tag == "call" and expr.WINDOW_PROPS[e.name] then
      if not window_call then self:err(e.pos, "%s needs GROUP BY %s(...)", e.name, e.name:match("^(%u+)_")) end
      local fn, prop = e.name:match("^(%u+)_(%u+)$")
      local same = fn == window_call.name and #e.args == #window_call.args
      if same then
        for i = 1, #e.args do if expr.sig(e.args[i]) ~= expr.sig(window_call.args[i]) then same = false end end
      end
      if not same then self:err(e.pos, "%s does not match the window in GROUP BY", e.name) end
      local rtt
      for _, c in ipairs(base_cols) do if c.name == window.rowtime then rtt = c.type end end
      if prop == "START" then return "ws", rtt end
      if prop == "END" then return "we", rtt end
      if prop == "ROWTIME" then return "(we - 1)", rtt end
      self:err(e.pos, "%s is not supported (processing time)", e.name)
    end
    if e.tag == "col" and window and rel.tvf then
      if e.name == "window_start" then return "ws", "TIMESTAMP" end
      if e.name == "window_end" then return "we", "TIMESTAMP" end
      if e.name == "window_time" then return "(we - 1)", "TIMESTAMP" end
    end
    return nil
  end
  scope.column = function(n)
    for _, c in ipairs(rel.cols) do
      if c.name == n.name then
        raise(src, n.pos, "column '%s' must appear in GROUP BY or be used in an aggregate function", n.name)
      end
    end
    raise(src, n.pos, "unknown column '%s'", n.name)
  end
  scope.agg_where = "inside another aggregate"
  local body, cols = self:projection(items, scope)
  for i, it in ipairs(items) do
    local e = it.expr
    if e.tag == "call" and e.name:match("_ROWTIME$") then cols[i].rowtime = true end
    if e.tag == "col" and e.name == "window_time" and window then cols[i].rowtime = true end
    -- the window's bounds under any name: a window join may join on them (wm.sql.plan.join)
    local tvf_col = window and rel.tvf and e.tag == "col" and e.name
    local call = window and e.tag == "call" and e.name
    if tvf_col == "window_start" or (call and call:match("_START$")) then
      cols[i].wbound = "start"
    elseif tvf_col == "window_end" or (call and call:match("_END$")) then
      cols[i].wbound = "end"
    end
  end
  local having_src = "true"
  if q.having then
    local s, t = expr.compile(q.having, scope)
    if t ~= "BOOLEAN" and t ~= "NULL" then
      self:err(q.having.pos, "HAVING needs a BOOLEAN condition, got %s", expr.show(t))
    end
    having_src = s .. " == true"
  end
  local out = expr.load(string.format(
    "function(k, a, ws, we) if not (%s) then return false end return %s end", having_src, body),
    lineof(self, q.pos))
  local made = {}
  for i, a in ipairs(agg_list) do
    if a.udaf then
      made[i] = self:udaf_make(a, rel.updating, window)
    else
      made[i] = aggs.make(a.name, {star = a.star, distinct = a.distinct, type = a.type, retract = rel.updating})
    end
    if a.filter then made[i] = aggs.filtered(made[i]) end
  end
  if window then
    if rel.updating then self:err(q.pos, "a windowed GROUP BY cannot consume an updating input") end
    local spec = {kind = window.kind, size = window.size, slide = window.slide, gap = window.gap,
                  rowtime = window.rowtime_field, keyfns = keyfns, aggs = made, argfns = argfns, out = out,
                  having = q.having ~= nil, processing = window.processing}
    spec.key_fields, spec.builtin, spec.key_null = fast_window_agg(base_cols, keys, agg_list, window, true)
    -- (the single C built-ins first: they pre-aggregate before a key exchange, --threads)
    if spec.builtin and spec.builtin.agg == "count" then
      spec.count_shape = count_shape(spec, keys, key_sigs, agg_sigs, items, cols, rel.tvf ~= nil, key_types,
                                       base_cols)
    end
    if not spec.builtin then
      spec.csql, spec.csql_shape = c_window_agg(row_scope, spec.key_fields, keys, key_sigs, agg_list, agg_sigs,
                                                items, window, q.having ~= nil, rel.tvf ~= nil, false, key_types)
    end
    local res = rel_of(lower.window_aggregate(rel.stream, spec), cols, false)
    local has = {}
    for _, c in ipairs(cols) do if c.wbound then has[c.wbound] = true end end
    if has.start and has["end"] and window.kind ~= "session" then
      res.window = {kind = window.kind, size = window.size, slide = window.slide}
    end
    -- the rows carry end - 1: their window_end is a time of theirs 1 ms later (an interval
    -- join may bound by it, as Nexmark q7 does; wm.sql.plan.join)
    for _, c in ipairs(cols) do if c.wbound == "end" then c.ts_offset = 1 end end
    return res
  end
  local spec = {keyfns = keyfns, aggs = made, argfns = argfns, updating_input = rel.updating,
                out = function(k, a) return out(k, a, nil, nil) end, ttl = self:state_ttl()}
  -- in C (core/ops/wm_sqlagg.h, wm_keyedfn_sqlagg) without a state TTL (the keyed operator's
  -- rolling mode keeps no TTL) when the result row is built in C; over an updating input too
  -- (csql.updating: the changes {k, r} retract, as Flink's GroupAggFunction), keyed by a Lua
  -- key function of the change's row
  if not spec.ttl then
    local csql, shape = c_window_agg(row_scope, nil, keys, key_sigs, agg_list, agg_sigs, items, nil,
                                     q.having ~= nil, false, true, key_types, rel.updating)
    -- the aggregates' arguments that are expressions, which the projection computes ($ga<i>)
    local arg_exprs, nexprs = {}, 0
    for i, d in ipairs(csql and not shape and csql.aggs or {}) do
      if d.expr then arg_exprs[i], nexprs, d.expr = d.expr, nexprs + 1, nil end
    end
    if csql and not shape then
      csql.meaning = ("SQL GROUP BY " .. (rel.updating and "(retract) " or "") .. csql.meaning:sub(5)):sub(1, 190)
      spec.csql = csql
      local mb = self:minibatch()
      if mb then csql.minibatch_size, csql.minibatch_latency = mb.size, mb.latency end
      if rel.updating then
        csql.updating = true
        local kfs = {}
        for i, f in ipairs(keyfns) do kfs[i] = function(e) return f(e.r) end end
        spec.keyfns = kfs
      else
        spec.key_fields = fast_window_agg(base_cols, keys, {}, {kind = "group"})
        if (not spec.key_fields and #keys > 0) or nexprs > 0 then
          local stream = c_group_keys(self, rel.stream, row_scope, keys, key_types, keyfns, agg_list, arg_exprs)
          if stream then rel = {stream = stream, cols = rel.cols, updating = rel.updating}
            if #keys > 0 then
              spec.key_fields, spec.key_null = {}, true
              for i = 1, #keys do spec.key_fields[i] = "$gk" .. i end
            end
          elseif nexprs > 0 then
            spec.csql = nil -- (the arguments need the projection: the Lua aggregates)
          end
        end
      end
    end
  end
  return rel_of(lower.group_aggregate(rel.stream, spec), cols, true)
end
