--- The statements that run: SELECT, INSERT INTO, EXPLAIN, and the dispatch of every statement.
-- @module wm.sql.plan.statements
local expr = require("wm.sql.expr")
local connectors = require("wm.sql.connectors")
local lower = require("wm.sql.plan.lower")
local prune = require("wm.sql.plan.prune")
local Planner = require("wm.sql.plan.base").Planner

-- The statement's query, pruned (wm.sql.plan.prune) unless WMRUN_SQL_PRUNE=off. Before items
-- of its subqueries are dropped, it is planned whole once in a scratch environment (as CREATE
-- VIEW plans a view's query), so that pruning hides no error.
local function pruned(self, q)
  if not prune.enabled() then return q end
  return prune.query(self, q, nil, false, function(orig)
    local saved, saved_checking = self.env, self.checking
    self.env, self.checking = self:scratch_env(), true
    local ok = pcall(self.plan_query, self, orig)
    self.env, self.checking = saved, saved_checking
    return ok
  end)
end

function Planner:select_stmt(st)
  local env = self:get_env(st.pos)
  local mark = #env.nodes
  self.current_query = st.query -- its sources decode only what it uses (connectors.unused)
  local rel = self:plan_query(pruned(self, st.query))
  self.current_query = nil
  lower.print_changelog(rel, nil)
  self:tag_nodes(mark, st.pos)
  self.queries = self.queries + 1
  return rel
end

function Planner:insert(st)
  local t = self.tables[st.name]
  if not t then
    if self.views[st.name] then self:err(st.name_pos, "cannot INSERT INTO the view '%s'", st.name) end
    self:err(st.name_pos, "unknown table '%s'", st.name)
  end
  local env = self:get_env(st.pos)
  local mark = #env.nodes
  self.current_query = st.query -- its sources decode only what it uses (connectors.unused)
  local rel = self:plan_query(pruned(self, st.query))
  self.current_query = nil
  local targets = {}
  if st.columns then
    for i, n in ipairs(st.columns) do
      if not t.byname[n] then self:err(st.name_pos, "table '%s' has no column '%s'", st.name, n) end
      targets[i] = t.byname[n]
    end
  else
    for _, c in ipairs(t.physical) do targets[#targets + 1] = c end
  end
  if #targets ~= #rel.cols then
    self:err(st.query.pos, "INSERT INTO %s: the query gives %d columns, the table takes %d", st.name, #rel.cols,
      #targets)
  end
  local ren = {}
  for i, c in ipairs(rel.cols) do
    local want = targets[i].type
    local widens = expr.NUMERIC[c.type] and expr.NUMERIC[want] and expr.NUMERIC[c.type] <= expr.NUMERIC[want]
    local both_timestamps = want:match("^TIMESTAMP") and c.type:match("^TIMESTAMP")
    if c.type ~= want and c.type ~= "NULL" and not widens and not both_timestamps then
      self:err(st.query.pos, "INSERT INTO %s: column '%s' is %s but the query gives %s", st.name, targets[i].name,
        expr.show(want), expr.show(c.type))
    end
    ren[i] = {from = c.name, to = targets[i].name}
  end
  local out = self:rename(rel, ren)
  out.cols = {}
  for i, c in ipairs(targets) do out.cols[i] = {name = c.name, type = c.type} end
  connectors.sink(self, t, out, st, lower.print_changelog)
  self:tag_nodes(mark, st.pos)
  self.queries = self.queries + 1
end

--- Runs (plans) one statement.
function Planner:statement(st)
  expr.user_functions = self.udfs -- its aggregate functions are aggregates
  local tag = st.tag
  if tag == "create_function" then return self:create_function(st) end
  if tag == "create_table" then return self:create_table(st) end
  if tag == "create_view" then return self:create_view(st) end
  if tag == "set" then return self:set(st) end
  if tag == "reset" then return self:reset(st) end
  if tag == "select_stmt" then return self:select_stmt(st) end
  if tag == "insert" then return self:insert(st) end
  if tag == "explain" then
    local env = self:get_env(st.pos)
    local mark = #env.nodes
    self:plan_query(pruned(self, st.query))
    local lines = {}
    for i = mark + 1, #env.nodes do lines[#lines + 1] = env.nodes[i].kind .. " " .. (env.nodes[i].name or "") end
    self.explained = table.concat(lines, "\n")
    -- the plan is not run: drop its nodes
    for i = #env.nodes, mark + 1, -1 do env.nodes[i] = nil end
    io.stdout:write(self.explained, "\n")
    return
  end
  self:err(st.pos, "unsupported statement")
end
