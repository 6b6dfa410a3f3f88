--- Column pruning (issue 33, "Read only what is used"): a view's or a subquery's projection
-- computes only the columns the query reading it uses, and a table scan is told which of its
-- columns its reader uses (the CSV decoder skips the others, connectors.unused). So the rows
-- that reach a keyed stateful operator (a join, Top-N, dedup, OVER) carry no column that no
-- one above it reads, and a view such as Nexmark's `bid` decodes and keeps only the three
-- columns q4 reads instead of seven.
--
-- It works on a copy of the parsed query, before it is planned, one SELECT block at a time:
-- `needed`, the set of the block's output names that its reader uses (nil: all), drops the
-- items that only pass a column or a literal through and that no one uses; the names used
-- in what is left of the block (every identifier and string in its items, WHERE, ON, GROUP
-- BY, HAVING, OVER, window TVF columns, EXISTS/IN subqueries) are then the `needed` of its
-- FROM relations, annotated on them (`f.needed`, false for all) for Planner:scan. It is
-- conservative: names are compared in any case, a name ending in digits (id0, the join's
-- renaming of a second id) also keeps its stem, a `*` or `t.*` anywhere in the block keeps
-- every column of its relations, a block with GROUP BY, DISTINCT, HAVING, an aggregate, OVER
-- or ROW_NUMBER, a UNION ALL branch, a view with a column list, the time attributes
-- (rowtime and proctime columns of any table or view, window_start/_end/_time) and any item
-- that computes something are never pruned, a statement's subquery only once the statement
-- planned whole without error (M.query's `check`), and a relation planned by any other way
-- (a temporal join's table, the Table API) is not pruned at all. WMRUN_SQL_PRUNE=off turns it
-- off (to compare results), WMRUN_SQL_PRUNE=log shows it (M.log).
-- @module wm.sql.plan.prune
local base = require("wm.sql.plan.base")

local M = {}

--- True unless WMRUN_SQL_PRUNE=off.
function M.enabled()
  return os.getenv("WMRUN_SQL_PRUNE") ~= "off"
end

local function copy(x, memo)
  if type(x) ~= "table" then return x end
  local c = memo[x]
  if c then return c end
  c = {}
  memo[x] = c
  for k, v in pairs(x) do c[k] = copy(v, memo) end
  return setmetatable(c, getmetatable(x))
end

local function has_over(e)
  if type(e) ~= "table" then return false end
  if e.tag == "call" and e.over then return true end
  for _, v in pairs(e) do
    if type(v) == "table" and has_over(v) then return true end
  end
  return false
end

-- The names never pruned: the time attributes of every table and view, the window columns.
local function time_names(p)
  local out = {window_start = true, window_end = true, window_time = true}
  for _, t in pairs(p.tables) do
    for _, c in ipairs(t.cols or {}) do
      if c.rowtime or c.proctime then out[c.name:lower()] = true end
    end
    if t.watermark and t.watermark.column then out[t.watermark.column:lower()] = true end
  end
  for _, v in pairs(p.views) do
    for _, c in ipairs(v.schema or {}) do
      if c.rowtime or c.proctime then out[c.name:lower()] = true end
    end
  end
  return out
end

-- True when a query's (first) SELECT has an OVER item (a ROW_NUMBER rank, an OVER aggregate).
local function over_query(q)
  if q.tag == "union" then q = q[1] end
  for _, it in ipairs(q.items or {}) do
    if it.expr and has_over(it.expr) then return true end
  end
  return false
end

-- Whether the items of SELECT q may be pruned: not when it aggregates, ranks, or reads a
-- rank relation (a FROM whose query has ROW_NUMBER: whether q reads the rank decides what
-- the Top-N emits, wm.sql.plan.rank).
local function prunable(p, q)
  if q.group_by or q.distinct or q.having or q.windows or q.tag ~= "select" then return false end
  for _, it in ipairs(q.items) do
    if it.tag == "star" or base.has_agg(it.expr) or has_over(it.expr) then return false end
  end
  local froms = {q.from}
  for _, j in ipairs(q.joins or {}) do froms[#froms + 1] = j.item end
  for _, f in ipairs(froms) do
    if f.tag == "subquery" and over_query(f.query) then return false end
    local v = f.tag == "table" and p.views[f.name]
    if v and over_query(v.query) then return false end
  end
  return true
end

local prune_query

-- Every string in x (lowercased; a name ending in digits also as its stem) into `used`;
-- whether x holds a `*` item; the nested queries of EXISTS and IN into `nested`.
local function walk(x, used, seen, st)
  if type(x) == "string" then
    local w = x:lower()
    used[w] = true
    local stem = w:match("^(.-)%d+$")
    if stem and stem ~= "" then used[stem] = true end
    return
  end
  if type(x) ~= "table" or seen[x] then return end
  seen[x] = true
  if x.tag == "star" then st.star = true end
  if (x.tag == "exists" or x.tag == "in_query") and x.query then st.nested[#st.nested + 1] = x.query end
  for _, v in pairs(x) do walk(v, used, seen, st) end
end

-- `checked`: the query was planned whole before (a view's, at its CREATE VIEW), so an item
-- dropped here hides no error (an unknown column) that planning it would have raised.
local function prune_select(p, q, needed, checked, time, log)
  if needed and checked and prunable(p, q) then
    local names, seen, dup = {}, {}, false
    for i, it in ipairs(q.items) do
      local n = it.alias or (it.expr.tag == "col" and it.expr.name) or ("EXPR$" .. (i - 1))
      if seen[n:lower()] then dup = true end
      seen[n:lower()] = true
      names[i] = n
    end
    if not dup then
      local kept, dropped = {}, {}
      for i, it in ipairs(q.items) do
        local l = names[i]:lower()
        local simple = it.expr.tag == "col" or it.expr.tag == "lit"
        if simple and not needed[l] and not time[l] then
          dropped[#dropped + 1] = i
        else
          kept[#kept + 1] = i
        end
      end
      if #kept == 0 then table.insert(kept, 1, table.remove(dropped, 1)) end -- (a row of one column)
      if #dropped > 0 then
        local items, knames, dnames = {}, {}, {}
        for _, i in ipairs(kept) do
          local it = q.items[i]
          -- an unnamed expression keeps the name its position gave it (EXPR$i)
          if not it.alias and it.expr.tag ~= "col" then it.alias = names[i] end
          items[#items + 1] = it
          knames[#knames + 1] = names[i]
        end
        for _, i in ipairs(dropped) do dnames[#dnames + 1] = names[i] end
        q.items = items
        log[#log + 1] = "project " .. table.concat(knames, ", ") .. " (not " .. table.concat(dnames, ", ") .. ")"
      end
    end
  end
  -- the names the rest of the block uses: its FROM relations' `needed`
  local froms = {q.from}
  for _, j in ipairs(q.joins or {}) do froms[#froms + 1] = j.item end
  local used, seen, st = {}, {}, {star = false, nested = {}}
  for _, f in ipairs(froms) do
    if f.tag == "subquery" then seen[f.query] = true end
    if f.tag == "tvf" then walk(f.column, used, seen, st) end
  end
  walk(q, used, seen, st)
  for _, f in ipairs(froms) do
    local fneed = not st.star and used or false
    if f.tag == "subquery" then
      prune_query(p, f.query, fneed or nil, checked, time, log)
    elseif f.tag == "table" or f.tag == "tvf" then
      f.needed = fneed
    end
  end
  for _, n in ipairs(st.nested) do prune_query(p, n, nil, checked, time, log) end
end

prune_query = function(p, q, needed, checked, time, log)
  if q.tag == "union" then
    for i = 1, #q do prune_select(p, q[i], nil, checked, time, log) end
  else
    prune_select(p, q, needed, checked, time, log)
  end
end

--- With WMRUN_SQL_PRUNE=log, what pruning does is written to stderr, a line each ("prune:
-- project a, b (not c)", "prune: scan t skips c, d"), for specs and for a look at a plan.
function M.log(line)
  if os.getenv("WMRUN_SQL_PRUNE") == "log" then io.stderr:write("prune: ", line, "\n") end
end

--- A copy of the query `q` pruned for a reader that uses the output names in `needed` (a set
-- of lowercase names; nil: every column), its FROM relations annotated with their `needed`.
-- `checked`: q was planned whole before (a view's query, at its CREATE VIEW), so items may be
-- dropped. Otherwise (a statement's query) `check(q)`, when given, is called when the
-- pruning would drop items of its subqueries: it plans q whole and says whether that went
-- without error; if not, the subqueries keep their items (so that the error shows where the
-- statement is planned, as without pruning).
function M.query(p, q, needed, checked, check)
  local time = time_names(p)
  local log = {}
  local c = copy(q, {})
  prune_query(p, c, needed, checked or check ~= nil, time, log)
  if not checked and #log > 0 and not (check and check(q)) then
    log = {}
    c = copy(q, {})
    prune_query(p, c, needed, false, time, log)
  end
  for _, l in ipairs(log) do M.log(l) end
  return c
end

return M
