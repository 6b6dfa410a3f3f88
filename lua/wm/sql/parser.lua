--- The SQL parser: an LPeg grammar that turns a script into a list of statement trees.
-- Every node carries `pos` (a byte offset into the script); `wm.sql.errors` turns it into
-- `file:line:column`. Keywords are case-insensitive; identifiers keep their case
-- (backquotes allow any text, as in Flink SQL).
-- @module wm.sql.parser
local lpeg = require("lpeg")
local errors = require("wm.sql.errors")

local P, S, R, V, C, Ct, Cp, Cc, Cmt, Cs = lpeg.P, lpeg.S, lpeg.R, lpeg.V, lpeg.C, lpeg.Ct, lpeg.Cp,
  lpeg.Cc, lpeg.Cmt, lpeg.Cs

local M = {}

-- The farthest position at which a token was tried, and what was expected there: a syntax
-- error says "expected X near 'Y'" from these.
local far, expected = 0, {}
local function expect(what)
  return Cmt(P(true), function(_, i)
    if i > far then
      far, expected = i, {what}
    elseif i == far then
      for _, e in ipairs(expected) do if e == what then return true end end
      expected[#expected + 1] = what
    end
    return true
  end)
end

local ws = (S(" \t\r\n\f") + P("--") * (1 - P("\n")) ^ 0 + P("/*") * (1 - P("*/")) ^ 0 * P("*/")) ^ 0
local idstart = R("az", "AZ") + P("_")
local idchar = idstart + R("09") + P("$")

local function ci(word)
  local p = P(true)
  for ch in word:gmatch(".") do p = p * S(ch:lower() .. ch:upper()) end
  return p
end

-- Words that cannot be unquoted identifiers: the ones this grammar gives a meaning to
-- where an identifier could also stand (a subset of Flink's reserved words).
local reserved = {}
for w in ([[SELECT FROM WHERE GROUP BY HAVING AS AND OR NOT NULL TRUE FALSE CASE WHEN THEN ELSE END
  CAST IS IN LIKE BETWEEN DISTINCT ALL INTERVAL CREATE TABLE VIEW WITH INSERT INTO SET WATERMARK FOR
  ON UNION ORDER LIMIT JOIN TEMPORARY]]):gmatch("%a+") do reserved[w] = true end
M.reserved = reserved

--- A keyword (case-insensitive), then white space.
local function K(word)
  return expect("'" .. word .. "'") * ci(word) * -idchar * ws
end
--- A punctuation symbol, then white space.
local function T(sym)
  return expect("'" .. sym .. "'") * P(sym) * ws
end

-- Constructs of Flink SQL that wmrun does not have yet (docs/sql.md, "Not supported yet"): the
-- grammar recognises where each starts and stops there with `not supported yet: <construct>`
-- at that position, rather than a syntax error further on. The lookaheads below use plain
-- words (W), not K/T: they must not add to what a syntax error says is expected.
local cur_src -- the script being parsed, for these errors
local function W(word) return ci(word) * -idchar * ws end
--- Stops the parse here: `name` is a string, or a function of the captured text.
local function NS(name, patt)
  return Cmt(Cp() * C(patt or P(true)), function(_, _, pos, text)
    errors.raise(cur_src, pos, "not supported yet: %s", type(name) == "function" and name(text) or name)
  end)
end
-- the words of a join before JOIN, normalised: "LEFT OUTER JOIN"
local join_kw = (W("NATURAL") ^ -1 * (W("INNER") + W("CROSS") + (W("LEFT") + W("RIGHT") + W("FULL"))
  * W("OUTER") ^ -1) ^ -1 * W("JOIN"))
local function join_name(text)
  return (text:upper():gsub("%s+", " "):gsub("%s$", ""))
end
-- what may follow a table in FROM and is not supported: a join, a temporal table, pattern
-- recognition, set operations and clauses after the query
-- (the joins of a table function, `CROSS JOIN LATERAL TABLE(...)` and the like, are V"lateral")
local lateral_join = (W("CROSS") + W("INNER") + W("LEFT") * W("OUTER") ^ -1) ^ -1 * W("JOIN") * W("LATERAL")
local temporal = NS("FOR SYSTEM_TIME AS OF (temporal and lookup joins)", W("FOR") * W("SYSTEM_TIME"))
local table_rest = NS("MATCH_RECOGNIZE", W("MATCH_RECOGNIZE") * #P("("))
  + NS("EXCEPT", (W("EXCEPT") + W("MINUS")) * #(W("SELECT") + W("ALL") + W("DISTINCT") + P("(")))
  + NS("INTERSECT", W("INTERSECT") * #(W("SELECT") + W("ALL") + W("DISTINCT") + P("(")))
  + NS("OFFSET / FETCH", W("OFFSET") * #R("09") + W("FETCH") * #(W("FIRST") + W("NEXT")))
  + NS("WINDOW clause without a window (WINDOW w AS (PARTITION BY ... ORDER BY ...))",
    -(W("WINDOW") * (idstart * idchar ^ 0 + P("`") * (1 - P("`")) ^ 1 * P("`")) * ws * W("AS") * P("("))
    * W("WINDOW") * #(idstart + P("`")))
local after_table = -lateral_join * NS(join_name, join_kw) + temporal + table_rest
-- after a table in FROM: `[INNER] JOIN t ON ...` and `, t` are joins of V"join"
-- (wm.sql.plan.join); the other joins stop here
local inner_join = (W("INNER") + W("LEFT") + W("RIGHT") + W("FULL")) ^ -1 * W("OUTER") ^ -1 * W("JOIN")
local after_from = NS(function(t) return join_name(t) .. " LATERAL" end,
    (W("RIGHT") + W("FULL")) * W("OUTER") ^ -1 * W("JOIN") * #W("LATERAL"))
  + -lateral_join * -inner_join * NS(join_name, join_kw) + temporal + table_rest
local after_query = NS("ORDER BY", W("ORDER") * #W("BY"))
  + NS("LIMIT", W("LIMIT"))
  + NS("UNION without ALL (use UNION ALL with SELECT DISTINCT)", W("UNION") * -W("ALL"))
  + after_table
-- unsupported types: `type X`
local bad_type = NS(function(t) return "type " .. t:upper():match("%a+") end,
  (ci("ARRAY") + ci("MAP") + ci("MULTISET") + ci("VARBINARY") + ci("BINARY") + ci("BYTES")
   + ci("DATE") + ci("TIME") + ci("RAW") + ci("INTERVAL") + ci("STRUCTURED")) * -idchar)
-- statements
local unsupported_stmt = NS("CREATE CATALOG", W("CREATE") * W("CATALOG"))
  + NS("CREATE DATABASE", W("CREATE") * W("DATABASE"))
  + NS("DROP", W("DROP")) + NS("ALTER", W("ALTER")) + NS("SHOW", W("SHOW"))
  + NS("DESCRIBE", W("DESCRIBE") + W("DESC")) + NS("USE", W("USE"))
  + NS("LOAD MODULE", (W("LOAD") + W("UNLOAD")) * W("MODULE"))
  + NS("STATEMENT SET (every INSERT of a script runs in one job already)",
    (W("EXECUTE") + W("BEGIN")) * W("STATEMENT") * W("SET"))
  + NS("INSERT OVERWRITE", W("INSERT") * W("OVERWRITE"))
  + NS("WITH (common table expressions: use CREATE VIEW)", W("WITH") * #(idstart + P("`")))
  + NS("VALUES", W("VALUES") * #P("("))

-- (the reserved-word check produces no match-time value: LPeg keeps at most about 32,000
-- such values alive in one match)
local plain_ident = #Cmt(Cp() * idstart * idchar ^ 0, function(s, i, start)
  return not reserved[s:sub(start, i - 1):upper()] and i
end) * C(idstart * idchar ^ 0)
local quoted_ident = P("`") * Cs(((P("``") / "`") + (1 - P("`"))) ^ 0) * P("`")
local ident = expect("identifier") * (plain_ident + quoted_ident) * ws
local string_lit = expect("string") * P("'") * Cs(((P("''") / "'") + (1 - P("'"))) ^ 0) * P("'") * ws

local digits = R("09") ^ 1
local number = expect("number") * C((digits * (P(".") * R("09") ^ 0) ^ -1 + P(".") * digits)
  * (S("eE") * S("+-") ^ -1 * digits) ^ -1) * -idchar * ws

local function num_node(pos, text)
  if text:find("[.eE]") then return {tag = "lit", type = "DOUBLE", value = tonumber(text) + 0.0, pos = pos} end
  local v = math.tointeger(tonumber(text))
  if not v then return {tag = "lit", type = "DOUBLE", value = tonumber(text) + 0.0, pos = pos} end
  local t = (v >= -2147483648 and v <= 2147483647) and "INT" or "BIGINT"
  return {tag = "lit", type = t, value = v, pos = pos}
end

local units = {MILLISECOND = 1, SECOND = 1000, MINUTE = 60000, HOUR = 3600000, DAY = 86400000}
local unit = C(ci("MILLISECOND") + ci("SECOND") + ci("MINUTE") + ci("HOUR") + ci("DAY")) * (ci("S"))^-1
  * -idchar * ws
local function interval_node(pos, text, u)
  local n = tonumber(text)
  return {tag = "interval", pos = pos, text = text, unit = u:upper(), n = n,
          ms = n and math.tointeger(n * units[u:upper()]) or nil}
end

-- Folds `a op b op c` left to right.
local function fold(t)
  local e = t[1]
  for i = 2, #t, 3 do
    e = {tag = "bin", pos = t[i], op = t[i + 1]:upper(), e, t[i + 2]}
  end
  return e
end

local function typ(pos, name, p1, p2)
  return {pos = pos, name = name:upper():gsub("%s+", " "), p1 = tonumber(p1), p2 = tonumber(p2)}
end

local function cmp_tail(pos, kind, ...)
  return {pos = pos, kind = kind, ...}
end
local function apply_tail(e, tail)
  if not tail then return e end
  local k = tail.kind
  if k == "cmp" then return {tag = "bin", pos = tail.pos, op = tail[1], e, tail[2]} end
  if k == "isnull" then return {tag = "isnull", pos = tail.pos, neg = tail[1], e} end
  if k == "isbool" then return {tag = "isbool", pos = tail.pos, neg = tail[1], value = tail[2], e} end
  if k == "like" then return {tag = "like", pos = tail.pos, neg = tail[1], e, tail[2]} end
  if k == "between" then return {tag = "between", pos = tail.pos, neg = tail[1], e, tail[2], tail[3]} end
  if k == "in" then return {tag = "in", pos = tail.pos, neg = tail[1], e, list = tail[2]} end
  if k == "in_query" then return {tag = "in_query", pos = tail.pos, neg = tail[1], e, query = tail[2]} end
  return e
end

local neg = (K("NOT") * Cc(true)) + Cc(false)

-- Nesting. LPeg evaluates nested captures recursively (at most 200 levels: about 17
-- parentheses of this grammar), so every construct that nests expressions (parentheses,
-- CASE, CAST, calls, subqueries) is collapsed into one value when it has matched: the
-- captures inside it are evaluated then, and only its tree goes on. Prefix NOT and unary
-- signs are folded from flat lists. The depth left is that of the grammar's own calls, the
-- backtrack stack, which MAX_NESTING bounds with a clear error.
local function collapse(patt)
  return Cmt(patt, function(_, i, v) return i, v end)
end
M.MAX_NESTING = 1000
-- backtrack entries per nesting level: measured for the deepest case (parentheses inside a
-- chain of every precedence level), with room
local STACK_PER_LEVEL = 24
lpeg.setmaxstack(M.MAX_NESTING * STACK_PER_LEVEL)

local function fold_not(nots, e)
  for i = #nots, 1, -1 do e = {tag = "un", op = "NOT", pos = nots[i], e} end
  return e
end

local function fold_unary(signs, e)
  for i = #signs - 1, 1, -2 do
    local pos, op = signs[i], signs[i + 1]
    if op == "-" then
      if e.tag == "lit" and (e.type == "INT" or e.type == "BIGINT" or e.type == "DOUBLE") and not e.negated then
        e.value = -e.value
        e.pos = pos
        e.negated = true -- one sign folds into the literal: - -1 is the negation of -1
        if e.type == "BIGINT" and e.value >= -2147483648 then e.type = "INT" end
      else
        e = {tag = "un", op = "-", pos = pos, e}
      end
    end
  end
  return e
end

local function Cg_pos(tag)
  return lpeg.Cg(Cc(tag), "tag") * lpeg.Cg(Cp(), "pos")
end

local G = {
  "stmt",
  stmt = unsupported_stmt + V("create_function") + V("create_table") + V("create_view") + V("insert") + V("set")
    + V("reset") + V("explain")
    + V("query_stmt"),

  -- CREATE TABLE
  create_table = Ct(Cg_pos("create_table") * K("CREATE") * (K("TEMPORARY") ^ -1) * K("TABLE")
    * (K("IF") * K("NOT") * K("EXISTS") * lpeg.Cg(Cc(true), "if_not_exists")) ^ -1
    * lpeg.Cg(Cp(), "name_pos") * lpeg.Cg(V("qname"), "name")
    * (NS("CREATE TABLE ... AS SELECT", #(W("WITH") * (1 - P(";") - W("AS") * W("SELECT")) ^ 0 * W("AS")
      * W("SELECT"))) + P(true))
    * T("(") * lpeg.Cg(Ct(V("table_elem") * (T(",") * V("table_elem")) ^ 0), "elems") * T(")")
    * (K("COMMENT") * string_lit) ^ -1
    -- PARTITIONED BY (a, b): the filesystem sink's partition folders (wm.sql.connector_fs_partitioned)
    * (lpeg.Cg(Ct(lpeg.Cg(Cp(), "pos") * W("PARTITIONED") * W("BY") * T("(")
        * Ct(Cp() * ident) * (T(",") * Ct(Cp() * ident)) ^ 0 * T(")")), "partitioned")) ^ -1
    * (K("WITH") * lpeg.Cg(V("props"), "with")) ^ -1
    * (NS("CREATE TABLE ... AS SELECT", W("AS") * #W("SELECT")) + NS("CREATE TABLE ... LIKE", W("LIKE"))
      + P(true))),
  qname = (ident * (T(".") * ident) ^ 0) / function(...) local t = {...}; return t[#t] end,
  table_elem = V("watermark") + V("pkey") + V("computed") + V("physical"),
  watermark = Ct(Cg_pos("watermark") * K("WATERMARK") * K("FOR") * lpeg.Cg(ident, "column")
    * K("AS") * lpeg.Cg(V("expr"), "expr")),
  pkey = Ct(Cg_pos("pkey") * ci("PRIMARY") * ws * ci("KEY") * ws * T("(") * ident * (T(",") * ident) ^ 0 * T(")")
    * ci("NOT") * ws * ci("ENFORCED") * ws),
  computed = Ct(Cg_pos("computed") * lpeg.Cg(ident, "name") * K("AS") * lpeg.Cg(V("expr"), "expr")),
  physical = Ct(Cg_pos("column") * lpeg.Cg(ident, "name") * lpeg.Cg(V("type"), "type")
    * (NS("METADATA columns", W("METADATA")) + P(true))
    * (K("NOT") * K("NULL") * lpeg.Cg(Cc(true), "not_null") + K("NULL")) ^ -1),
  type = ((Cp() * expect("type") * C(ci("TIMESTAMP_LTZ") + ci("TIMESTAMP") + ci("STRING") + ci("VARCHAR")
      + ci("CHAR") + ci("BIGINT") + ci("INTEGER") + ci("INT") + ci("SMALLINT") + ci("TINYINT") + ci("DOUBLE")
      + ci("FLOAT") + ci("BOOLEAN") + ci("DECIMAL")) * -idchar * ws
    * (T("(") * C(digits) * ws * (T(",") * C(digits) * ws) ^ -1 * T(")")) ^ -1) / typ)
    * (ci("PRECISION") * ws) ^ -1
    * (ci("WITH") * ws * ci("LOCAL") * ws * ci("TIME") * ws * ci("ZONE") * ws * Cc(true)
      + ci("WITHOUT") * ws * ci("TIME") * ws * ci("ZONE") * ws * Cc(false) + Cc(false))
    / function(t, ltz)
      if ltz then t.name = "TIMESTAMP_LTZ" end
      return t
    end
    -- ROW<name type, ...> or ROW(name type, ...): a column of named fields (bid.price)
    + (Cp() * ci("ROW") * -idchar * ws * (T("<") * V("row_fields") * T(">") + T("(") * V("row_fields") * T(")")))
      / function(pos, fields) return {pos = pos, name = "ROW", fields = fields} end
    + bad_type,
  row_fields = Ct(V("row_field") * (T(",") * V("row_field")) ^ 0),
  row_field = (Cp() * ident * V("type")) / function(pos, name, t) return {pos = pos, name = name, type = t} end,
  props = T("(") * Ct(V("prop") * (T(",") * V("prop")) ^ 0) * T(")"),
  prop = Ct(Cp() * string_lit * T("=") * string_lit) / function(t)
    return {pos = t[1], key = t[2], value = t[3]}
  end,

  -- CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] f AS 'module.name' LANGUAGE LUA
  create_function = Ct(Cg_pos("create_function") * K("CREATE")
    * (K("TEMPORARY") * (ci("SYSTEM") * -idchar * ws) ^ -1) ^ -1 * ci("FUNCTION") * -idchar * ws
    * (K("IF") * K("NOT") * ci("EXISTS") * -idchar * ws * lpeg.Cg(Cc(true), "if_not_exists")) ^ -1
    * lpeg.Cg(Cp(), "name_pos") * lpeg.Cg(V("qname"), "name")
    * K("AS") * lpeg.Cg(Cp(), "class_pos") * lpeg.Cg(string_lit, "class")
    * (W("LANGUAGE") * (K("LUA") + NS(function(t)
        return "LANGUAGE " .. t:upper():gsub("%s+$", "") .. " (functions are written in Lua: LANGUAGE LUA)"
      end, idstart * idchar ^ 0 * ws))
      + NS("CREATE FUNCTION without LANGUAGE LUA (Java classes; functions are written in Lua)"))
    * (NS("CREATE FUNCTION ... USING JAR", W("USING")) + P(true))),

  -- CREATE VIEW
  create_view = Ct(Cg_pos("create_view") * K("CREATE") * (K("TEMPORARY") ^ -1) * K("VIEW")
    * (K("IF") * K("NOT") * K("EXISTS") * lpeg.Cg(Cc(true), "if_not_exists")) ^ -1
    * lpeg.Cg(Cp(), "name_pos") * lpeg.Cg(V("qname"), "name")
    * (T("(") * lpeg.Cg(Ct(ident * (T(",") * ident) ^ 0), "columns") * T(")")) ^ -1
    * K("AS") * lpeg.Cg(V("query"), "query")),

  -- INSERT INTO
  insert = Ct(Cg_pos("insert") * K("INSERT") * K("INTO") * lpeg.Cg(Cp(), "name_pos") * lpeg.Cg(V("qname"), "name")
    * (T("(") * lpeg.Cg(Ct(ident * (T(",") * ident) ^ 0), "columns") * T(")")) ^ -1
    * lpeg.Cg(V("query"), "query")),

  -- SET 'key' = 'value' / RESET 'key'
  set = Ct(Cg_pos("set") * K("SET") * (lpeg.Cg(Cp(), "key_pos") * lpeg.Cg(string_lit + V("dotted"), "key")
    * T("=") * lpeg.Cg(string_lit + C((1 - S("; \t\r\n")) ^ 1) * ws, "value")) ^ -1),
  reset = Ct(Cg_pos("reset") * ci("RESET") * -idchar * ws
    * (lpeg.Cg(Cp(), "key_pos") * lpeg.Cg(string_lit + V("dotted"), "key")) ^ -1),
  dotted = C(idstart * (idchar + P(".") + P("-")) ^ 0) * ws,

  explain = Ct(Cg_pos("explain") * ci("EXPLAIN") * -idchar * ws * lpeg.Cg(V("query"), "query")),

  query_stmt = V("query") / function(q) return {tag = "select_stmt", pos = q.pos, query = q} end,
  query = Ct(Cp() * V("select") * (K("UNION") * K("ALL") * V("select")) ^ 0 * (after_query + P(true)))
    / function(t)
    if #t == 2 then return t[2] end
    return {tag = "union", pos = t[1], table.unpack(t, 2)}
  end,

  select = Ct(Cg_pos("select") * K("SELECT") * (K("DISTINCT") * lpeg.Cg(Cc(true), "distinct") + K("ALL")) ^ -1
    * lpeg.Cg(Ct(V("item") * (T(",") * V("item")) ^ 0), "items")
    * (NS("SELECT without FROM", #(P(";") + -P(1) + W("UNION"))) + K("FROM")) * lpeg.Cg(V("from_item"), "from")
    * (lpeg.Cg(V("lateral"), "lateral") + lpeg.Cg(Ct(V("join") ^ 1), "joins") + P(true))
    * (K("WHERE") * lpeg.Cg(V("expr"), "where")) ^ -1
    * (K("GROUP") * K("BY") * lpeg.Cg(Ct(V("group_item") * (T(",") * V("group_item")) ^ 0), "group_by")) ^ -1
    * (K("HAVING") * lpeg.Cg(V("expr"), "having")) ^ -1
    -- WINDOW w AS (PARTITION BY ... ORDER BY ... frame), ...: windows that OVER w names
    * (W("WINDOW") * lpeg.Cg(Ct(V("named_window") * (T(",") * V("named_window")) ^ 0), "windows")) ^ -1),
  named_window = Ct(lpeg.Cg(Cp(), "pos") * lpeg.Cg(ident, "name") * K("AS") * lpeg.Cg(V("over_spec"), "spec")),
  item = Ct(Cg_pos("star") * T("*"))
    + Ct(Cg_pos("star") * lpeg.Cg(ident, "qual") * T(".") * T("*"))
    + Ct(Cg_pos("item") * lpeg.Cg(V("expr"), "expr") * ((K("AS") ^ -1) * lpeg.Cg(ident, "alias")) ^ -1),
  group_item = NS("GROUPING SETS", W("GROUPING") * #W("SETS")) + NS("ROLLUP", W("ROLLUP") * #P("("))
    + NS("CUBE", W("CUBE") * #P("(")) + V("expr"),
  from_item = (NS("LATERAL TABLE (table functions)", W("LATERAL")) + NS("UNNEST", W("UNNEST") * #P("("))
      + P("(") * ws * NS("VALUES", W("VALUES"))
      + V("tvf") + V("subquery") + V("table_ref"))
    * (after_from + P(true)) * ((K("AS") ^ -1) * -join_kw * -(W("WINDOW") * ident * W("AS")) * ident) ^ -1
    * (after_from + P(true))
    / function(f, alias) f.alias = alias; return f end,
  -- a join of FROM (wm.sql.plan.join): `, t [AS] x` (its condition in WHERE) or
  -- `[INNER|LEFT|RIGHT|FULL [OUTER]] JOIN t [AS] x ON condition`
  join = Ct(Cg_pos("join") * (T(",") * -W("LATERAL") * lpeg.Cg(Cc("comma"), "kind")
      + (ci("INNER") * -idchar * ws) ^ -1 * K("JOIN") * -W("LATERAL") * lpeg.Cg(Cc("inner"), "kind")
      + lpeg.Cg(C(ci("LEFT") + ci("RIGHT") + ci("FULL")) / string.upper, "kind") * -idchar * ws
        * (ci("OUTER") * -idchar * ws) ^ -1 * K("JOIN") * -W("LATERAL"))
    * lpeg.Cg(V("from_item"), "item")
    * (K("ON") * lpeg.Cg(V("expr"), "on")) ^ -1),
  -- (`t FOR SYSTEM_TIME AS OF x.ts`: a temporal or lookup join's table, wm.sql.plan.temporal_join)
  table_ref = Ct(Cg_pos("table") * lpeg.Cg(V("qname"), "name")
    * (lpeg.Cg(Cp(), "as_of_pos") * ci("FOR") * -idchar * ws * ci("SYSTEM_TIME") * -idchar * ws * K("AS")
      * ci("OF") * -idchar * ws
      * lpeg.Cg(V("expr"), "as_of")) ^ -1),
  -- a table function: `, LATERAL TABLE(f(x)) [AS] T(a, ...)`, `[CROSS|INNER] JOIN LATERAL
  -- TABLE(...) [ON TRUE]`, `LEFT [OUTER] JOIN LATERAL TABLE(...) ... ON TRUE`
  lateral = Ct(Cg_pos("lateral") * (T(",") + (K("CROSS") + ci("INNER") * -idchar * ws) ^ -1 * K("JOIN")
      + ci("LEFT") * -idchar * ws * (ci("OUTER") * -idchar * ws) ^ -1 * K("JOIN") * lpeg.Cg(Cc(true), "left"))
    * ci("LATERAL") * -idchar * ws * K("TABLE") * T("(") * lpeg.Cg(collapse(V("call")), "call") * T(")")
    * ((K("AS") ^ -1) * lpeg.Cg(Cp(), "alias_pos") * lpeg.Cg(ident, "alias")
      * (T("(") * lpeg.Cg(Ct(ident * (T(",") * ident) ^ 0), "columns") * T(")")) ^ -1) ^ -1
    * (K("ON") * lpeg.Cg(Cp(), "on_pos") * lpeg.Cg(V("expr"), "on")) ^ -1),
  subquery = collapse(Ct(Cg_pos("subquery") * T("(") * lpeg.Cg(V("query"), "query") * T(")"))),
  tvf = Ct(Cg_pos("tvf") * K("TABLE") * T("(") * lpeg.Cg(Cp(), "fn_pos") * lpeg.Cg(ident / string.upper, "fn")
    * T("(") * K("TABLE") * lpeg.Cg(Cp(), "table_pos") * lpeg.Cg(V("qname"), "table") * T(",")
    * ci("DESCRIPTOR") * ws * T("(") * lpeg.Cg(Cp(), "column_pos") * lpeg.Cg(ident, "column") * T(")")
    * lpeg.Cg(Ct((T(",") * V("expr")) ^ 1), "args") * T(")") * T(")")),

  -- expressions, loosest first
  expr = V("or_"),
  or_ = Ct(V("and_") * (Cp() * C(ci("OR")) * -idchar * ws * V("and_")) ^ 0) / fold,
  and_ = Ct(V("not_") * (Cp() * C(ci("AND")) * -idchar * ws * V("not_")) ^ 0) / fold,
  not_ = (Ct((Cp() * K("NOT")) ^ 0) * V("cmp")) / fold_not,
  cmp = V("concat") * V("cmp_tail") ^ -1 / apply_tail,
  cmp_tail = (Cp() * Cc("cmp") * expect("operator") * C(P("<>") + P("<=") + P(">=") + P("!=") + S("=<>")) * ws
      * V("concat")) / function(pos, k, op, e) return cmp_tail(pos, k, op == "!=" and "<>" or op, e) end
    + (Cp() * K("IS") * Cc("isnull") * neg * K("NULL")) / cmp_tail
    + (Cp() * K("IS") * Cc("isbool") * neg * (K("TRUE") * Cc(true) + K("FALSE") * Cc(false))) / cmp_tail
    + (Cp() * Cc("like") * neg * K("LIKE") * V("concat")) / cmp_tail
    + (Cp() * Cc("between") * neg * K("BETWEEN") * V("concat") * K("AND") * V("concat")) / cmp_tail
    -- (`x IN (SELECT ...)`: a semi window join's, wm.sql.plan.semi_join)
    + (Cp() * Cc("in_query") * neg * K("IN") * T("(") * #W("SELECT") * collapse(V("query")) * T(")")) / cmp_tail
    + (Cp() * Cc("in") * neg * K("IN") * T("(") * collapse(Ct(V("expr") * (T(",") * V("expr")) ^ 0)) * T(")"))
      / cmp_tail,
  concat = Ct(V("add") * (Cp() * C(P("||")) * ws * V("add")) ^ 0) / fold,
  add = Ct(V("mul") * (Cp() * C(S("+-")) * ws * V("mul")) ^ 0) / fold,
  mul = Ct(V("unary") * (Cp() * C(S("*/%")) * ws * V("unary")) ^ 0) / fold,
  unary = (Ct((Cp() * C(S("-+")) * ws) ^ 0) * V("primary")) / fold_unary,
  -- (`EXISTS (SELECT ...)`: a semi or anti window join's, wm.sql.plan.semi_join)
  primary = collapse(Ct(Cg_pos("exists") * ci("EXISTS") * ws * T("(") * #W("SELECT") * lpeg.Cg(V("query"), "query")
      * T(")")))
    + NS("subqueries in expressions", #(W("SELECT") + P("(") * ws * W("SELECT") + W("EXISTS") * P("(")))
    + V("literal") + collapse(V("case")) + collapse(V("cast")) + collapse(V("call")) + V("column")
    + collapse(T("(") * V("expr") * T(")")),
  literal = (Cp() * number) / num_node
    + (Cp() * string_lit) / function(pos, s) return {tag = "lit", type = "STRING", value = s, pos = pos} end
    + (Cp() * K("TRUE")) / function(pos) return {tag = "lit", type = "BOOLEAN", value = true, pos = pos} end
    + (Cp() * K("FALSE")) / function(pos) return {tag = "lit", type = "BOOLEAN", value = false, pos = pos} end
    + (Cp() * K("NULL")) / function(pos) return {tag = "lit", type = "NULL", pos = pos} end
    + (Cp() * K("INTERVAL") * string_lit * (NS("INTERVAL ... YEAR/MONTH", (ci("YEAR") + ci("MONTH")) * ci("S") ^ -1
      * -idchar) + expect("time unit") * unit)) / interval_node
    + (Cp() * ci("TIMESTAMP") * ws * string_lit) / function(pos, s)
      return {tag = "tslit", text = s, pos = pos}
    end,
  case = (Cp() * K("CASE") * (-K("WHEN") * V("expr") + Cc(false))
      * Ct(Ct(K("WHEN") * V("expr") * K("THEN") * V("expr")) ^ 1)
      * (K("ELSE") * V("expr") + Cc(false)) * K("END"))
    / function(pos, operand, whens, els)
      return {tag = "case", pos = pos, operand = operand or nil, whens = whens, else_ = els or nil}
    end,
  cast = (Cp() * C(ci("TRY_CAST") + ci("CAST")) * ws * T("(") * V("expr") * K("AS") * V("type") * T(")"))
    / function(pos, which, e, t) return {tag = "cast", pos = pos, try = which:upper() == "TRY_CAST", e, type = t} end,
  call = (Cp() * (plain_ident + C(ci("LEFT") + ci("RIGHT"))) * ws * T("(")
      * (T("*") * Cc("star") + K("DISTINCT") * Cc("distinct") + Cc(false))
      * Ct((V("expr") * (T(",") * V("expr")) ^ 0) ^ -1) * T(")")
      * (Cp() * W("FILTER") * T("(") * K("WHERE") * V("expr") * T(")") + Cc(false) * Cc(false))
      * (Cp() * (W("OVER") * Cc("over_spec") * V("over_spec")
          + W("OVER") * Cc("over_name") * Ct(lpeg.Cg(Cp(), "pos") * lpeg.Cg(ident, "name"))
          + W("OVER") * #(P("(") + idstart) * Cc("over"))
        + Cc(false)))
    / function(pos, name, mode, args, fpos, filter, after, what, spec)
      local up = name:upper()
      if what == "over_name" and up ~= "ROW_NUMBER" and up ~= "RANK" and up ~= "DENSE_RANK" then
        -- OVER w: the SELECT's WINDOW w AS (...) (wm.sql.plan.over resolves it)
        spec = {named = spec.name, pos = spec.pos}
        what = "over_spec"
      elseif what == "over_name" then
        what = "over"
      end
      if what == "over_spec" then
        if up == "ROW_NUMBER" then
          if #args > 0 or mode then errors.raise(cur_src, pos, "ROW_NUMBER takes no arguments") end
          if spec.frame then
            errors.raise(cur_src, spec.frame.pos, "not supported yet: ROW_NUMBER() OVER with a frame (it takes "
              .. "(PARTITION BY ... ORDER BY ...))")
          end
          if filter then errors.raise(cur_src, fpos, "ROW_NUMBER takes no FILTER") end
          spec.pos = after
          return {tag = "call", pos = pos, name = up, args = args, over = spec}
        end
        -- an aggregate over a window of rows (wm.sql.plan.over)
        if up == "RANK" or up == "DENSE_RANK" then what = "over" end
      end
      if what == "over_spec" then
        spec.pos = after
        return {tag = "call", pos = pos, name = up, args = args, star = mode == "star" or nil,
                distinct = mode == "distinct" or nil, over = spec, filter = filter or nil,
                filter_pos = fpos or nil}
      end
      if what == "over" then
        local topn = up == "RANK" or up == "DENSE_RANK"
        errors.raise(cur_src, after, "not supported yet: %s",
          topn and up .. "() (Top-N and deduplication take ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...))"
          or up == "ROW_NUMBER" and "ROW_NUMBER() OVER with a frame or a named window (it takes (PARTITION BY "
            .. "... ORDER BY ...))"
          or "named OVER windows (OVER w): write the window in OVER (...)")
      end
      return {tag = "call", pos = pos, name = name:upper(), args = args,
              star = mode == "star" or nil, distinct = mode == "distinct" or nil, filter = filter or nil,
              filter_pos = fpos or nil}
    end,
  -- OVER (PARTITION BY e, ... ORDER BY e [ASC|DESC], ...) of ROW_NUMBER()
  over_spec = T("(") * Ct((ci("PARTITION") * -idchar * ws * K("BY")
      * lpeg.Cg(Ct(V("expr") * (T(",") * V("expr")) ^ 0), "partition")) ^ -1
    * (K("ORDER") * K("BY") * lpeg.Cg(Ct(V("order_item") * (T(",") * V("order_item")) ^ 0), "order")) ^ -1
    * lpeg.Cg(V("frame"), "frame") ^ -1)
    * T(")"),
  -- ROWS|RANGE BETWEEN <start> AND CURRENT ROW, or ROWS|RANGE <start> (wm.sql.plan.over)
  frame = Ct(lpeg.Cg(Cp(), "pos") * lpeg.Cg(C(ci("ROWS") + ci("RANGE")) / string.upper, "unit") * -idchar * ws
    * (K("BETWEEN") * V("frame_start") * K("AND") * (ci("CURRENT") * ws * ci("ROW") * -idchar * ws
        + NS("OVER frames that end after the current row (... FOLLOWING)", P(true)))
      + V("frame_start"))),
  frame_start = lpeg.Cg(Cp(), "start_pos") * (ci("UNBOUNDED") * ws * ci("PRECEDING") * -idchar * ws
      * lpeg.Cg(Cc(true), "unbounded")
    + ci("CURRENT") * ws * ci("ROW") * -idchar * ws * lpeg.Cg(Cc(true), "current")
    + lpeg.Cg(V("literal"), "preceding") * (ci("PRECEDING") * -idchar * ws
      + NS("OVER frames that start after the current row (... FOLLOWING)", P(true)))),
  order_item = Ct(lpeg.Cg(V("expr"), "expr") * (ci("ASC") * -idchar * ws + ci("DESC") * -idchar * ws
      * lpeg.Cg(Cc(true), "desc")) ^ -1
    * (ci("NULLS") * -idchar * ws * lpeg.Cg(C(ci("FIRST") + ci("LAST")) / string.upper, "nulls") * -idchar * ws)
      ^ -1),
  column = (Cp() * ident * (T(".") * ident) ^ -1) / function(pos, a, b)
    if b then return {tag = "col", pos = pos, qual = a, name = b} end
    return {tag = "col", pos = pos, name = a}
  end,
}
local grammar = P(G)
local G_expr = {}
for k, v in pairs(G) do G_expr[k] = v end
G_expr[1] = "expr"
local expr_grammar = P(G_expr)

local statement = ws * grammar * (T(";") + expect("';'") * -P(1)) * Cp()
local expression = ws * expr_grammar * Cp()

-- The text near position `pos`, for a syntax error.
local function near(text, pos)
  if pos > #text then return "end of input" end
  local tok = text:match("^[%w_$]+", pos) or text:match("^'[^']*'?", pos) or text:match("^%S%S?", pos)
  if tok and #tok > 30 then tok = tok:sub(1, 30) .. "..." end
  return "'" .. (tok or text:sub(pos, pos)) .. "'"
end

-- Tokens that could always continue an expression: left out of the message when something
-- else was expected too, so that it names what is missing ("expected ')'").
local continuation = {["operator"] = true, ["'.'"] = true, ["'('"] = true, ["'IS'"] = true, ["'NOT'"] = true,
  ["'LIKE'"] = true, ["'BETWEEN'"] = true, ["'IN'"] = true, ["'AND'"] = true, ["'OR'"] = true}

local function expected_text(list)
  local kept, closing = {}, false
  for _, e in ipairs(list) do if e == "')'" then closing = true end end
  for _, e in ipairs(list) do
    if not continuation[e] and not (closing and e == "','") then kept[#kept + 1] = e end
  end
  if #kept > 0 then list = kept end
  if #list == 1 then return list[1] end
  local t = {table.unpack(list, 1, #list - 1)}
  return table.concat(t, ", ") .. " or " .. list[#list]
end

-- Matches `patt` at `pos`; LPeg's limits become errors at `pos` (the statement's start).
local function match(patt, text, pos, src)
  local ok, a, b = pcall(patt.match, patt, text, pos)
  if ok then return a, b end
  local msg = tostring(a)
  if msg:find("backtrack stack overflow", 1, true) or msg:find("subcapture nesting too deep", 1, true) then
    errors.raise(src, pos, "this statement nests too deeply for the parser (it takes at least %d levels of "
      .. "parentheses, CASE, CAST, function calls, IN lists and subqueries)", M.MAX_NESTING)
  end
  if msg:find("too many results in match-time capture", 1, true) then
    errors.raise(src, pos, "this statement is too long: at most about 30000 parenthesized expressions, CASE, "
      .. "CAST and function calls side by side (in one list of operands or arguments)")
  end
  error(a, 0)
end

--- Parses a script of `;`-separated statements.
-- @tparam string text the script
-- @tparam[opt] table src {name = "job.sql"} for error messages
-- @treturn table a list of statements; each has `tag`, `pos` and `end_pos`
function M.parse(text, src)
  src = src or {name = "sql"}
  src.text = text
  cur_src = src
  local out, pos = {}, 1
  while true do
    local rest = ws:match(text, pos)
    if rest > #text then break end
    far, expected = 0, {}
    local stmt, next_pos = match(statement, text, rest, src)
    if not stmt then
      errors.raise(src, far, "expected %s near %s", expected_text(expected), near(text, far))
    end
    stmt.end_pos = next_pos
    out[#out + 1] = stmt
    pos = next_pos
  end
  return out
end

--- Parses one expression (for the Table API and tests).
-- @tparam string text the expression
-- @treturn table the expression tree
function M.parse_expr(text, src)
  src = src or {name = "expr"}
  src.text = text
  cur_src = src
  far, expected = 0, {}
  local e, p = match(expression, text, 1, src)
  local ok = e and p > #text
  if not ok then
    errors.raise(src, far, "expected %s near %s", expected_text(expected), near(text, far))
  end
  return e
end

return M
