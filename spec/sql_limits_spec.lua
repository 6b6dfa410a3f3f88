-- SQL limits (issue 13.13): deep nesting, long chains, long IN lists and argument lists work;
-- past the parser's nesting limit the error is `job.sql:L:C: message`, never a Lua traceback.
-- Expected values are worked out by hand from the expression's form.
local sql_run = require("sql_run")
local parser = require("wm.sql.parser")
local expr = require("wm.sql.expr")

-- Compiles an expression over rows with INT columns and evaluates it on `row`.
local function eval(text, row)
  local src = {name = "e"}
  local e = parser.parse_expr(text, src)
  local scope = {src = src, column = function(n) return string.format("r[%q]", n.name), "INT" end}
  local s, t = expr.compile(e, scope)
  return expr.load("function(r) return " .. s .. " end", "e")(row or {v = 2}), t
end

local function rep_list(n, f, sep)
  local t = {}
  for i = 1, n do t[i] = f(i) end
  return table.concat(t, sep)
end

-- Runs a query over a two-row table t(id STRING, v INT).
local function run_sql(query)
  return sql_run.run("CREATE TABLE t (id STRING, v INT) WITH ('connector' = 'filesystem', 'path' = 'd.csv', "
    .. "'format' = 'csv');\n" .. query .. ";\n", {["d.csv"] = "a,1\nb,2\n"})
end

describe("SQL limits", function()
  it("nested parentheses: 17, 100, 2000 levels", function()
    for _, n in ipairs({17, 100, 2000}) do
      assert.are.equal(2, eval(string.rep("(", n) .. "v" .. string.rep(")", n)))
      -- each level adds 1: (1 + (1 + ... v))
      assert.are.equal(n + 2, eval(string.rep("(1 + ", n) .. "v" .. string.rep(")", n)))
    end
  end)

  it("nested CASE: 20 and 500 levels", function()
    for _, n in ipairs({20, 500}) do
      -- CASE WHEN v > 0 THEN (the next level) + 1 ELSE 0 END, innermost v: v + n
      local e = "v"
      for _ = 1, n do e = "CASE WHEN v > 0 THEN " .. e .. " + 1 ELSE 0 END" end
      assert.are.equal(2 + n, eval(e))
      assert.are.equal(0, eval(e, {v = -1}))
    end
  end)

  it("200 and 201 NOTs, unary minus 300 times, NOT (...) 1000 levels", function()
    assert.is_true(eval(string.rep("NOT ", 200) .. "v > 1"))
    assert.is_false(eval(string.rep("NOT ", 201) .. "v > 1"))
    assert.are.equal(2, eval(string.rep("- ", 300) .. "v"))
    assert.are.equal(-2, eval(string.rep("- ", 301) .. "v"))
    assert.are.equal(-2, eval("- - -2"))
    assert.is_true(eval(string.rep("NOT (", 1000) .. "v > 1" .. string.rep(")", 1000)))
  end)

  it("50000 ANDs, 5000 ORs, 200 and 5000 + terms, a long - chain keeps its order", function()
    local t = eval(rep_list(50000, function() return "v > 0" end, " AND "))
    assert.is_true(t)
    assert.is_false(eval(rep_list(50000, function(i) return i == 49999 and "v < 0" or "v > 0" end, " AND ")))
    assert.is_true(eval(rep_list(5000, function(i) return "v = " .. i end, " OR ")))
    assert.are.equal(400, eval(rep_list(200, function() return "v" end, " + ")))
    assert.are.equal(10000, eval(rep_list(5000, function() return "v" end, " + ")))
    -- 100 - 1 - 1 - ... (99 times) = 1: left to right
    assert.are.equal(1, eval("100" .. string.rep(" - 1", 99)))
    -- a NULL anywhere in a long sum gives NULL
    assert.is_nil(eval(rep_list(300, function(i) return i == 150 and "x" or "v" end, " + ")))
  end)

  it("IN with 300 literals, with NULL, with 1000 expressions", function()
    local lits = rep_list(300, function(i) return tostring(i) end, ", ")
    assert.is_true(eval("v IN (" .. lits .. ")"))
    assert.is_false(eval("v IN (" .. lits .. ")", {v = 301}))
    assert.is_true(eval("v NOT IN (" .. lits .. ")", {v = 301}))
    assert.is_nil(eval("v IN (" .. lits .. ")", {}))
    -- not found but a NULL in the list: NULL; found: TRUE
    assert.is_nil(eval("v IN (" .. lits .. ", NULL)", {v = 301}))
    assert.is_true(eval("v IN (" .. lits .. ", NULL)", {v = 300}))
    -- 1 and 1.0 are one value, as with =
    assert.is_true(eval("v IN (7.0, 8.5)", {v = 7}))
    -- v + 1, v + 2, ... v + 1000: v = 2 is none of them; v - 998 + 999 is the 999th... (v + 1000 - 1000)
    local exprs = rep_list(1000, function(i) return "v + " .. i end, ", ")
    assert.is_false(eval("v IN (" .. exprs .. ")"))
    assert.is_true(eval("v + 999 IN (" .. exprs .. ")"))
    assert.is_nil(eval("v IN (" .. exprs .. ", x)"))
  end)

  it("CONCAT and COALESCE with 254 arguments", function()
    local src = {name = "e"}
    local e = parser.parse_expr("CONCAT(" .. rep_list(254, function() return "s" end, ", ") .. ")", src)
    local scope = {src = src, column = function(n) return string.format("r[%q]", n.name), "STRING" end}
    local s = expr.compile(e, scope)
    assert.are.equal(string.rep("ab", 254), expr.load("function(r) return " .. s .. " end", "e")({s = "ab"}))
    assert.are.equal(2, eval("COALESCE(" .. rep_list(253, function() return "x" end, ", ") .. ", v)"))
  end)

  it("past the nesting limit: job.sql:L:C and a message, no traceback", function()
    local deep = string.rep("(", 5000) .. "v" .. string.rep(")", 5000)
    local out, err, code = run_sql("SELECT id,\n  " .. deep .. " FROM t")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.matches("^job%.sql:2:1: this statement nests too deeply for the parser %(it takes at least 1000 levels", err)
    assert.is_nil(err:find("traceback", 1, true))
    assert.is_nil(err:find("%.lua:%d"))
    -- 40000 function calls in one sum: LPeg keeps each call's tree until the sum ends
    out, err, code = run_sql("SELECT " .. rep_list(40000, function() return "ABS(v)" end, " + ") .. " FROM t")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.matches("^job%.sql:2:1: this statement is too long", err)
  end)

  it("end to end: the issue's cases run and print", function()
    local out, err, code = run_sql("SELECT id, " .. string.rep("(", 17) .. "v" .. string.rep(")", 17) .. ", "
      .. rep_list(200, function() return "v" end, " + ") .. ", v IN (" .. rep_list(255, tostring, ", ") .. ") FROM t")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("+I[a, 1, 200, TRUE]\n+I[b, 2, 400, TRUE]\n", out)
  end)
end)
