-- The SQL planner: which DSL operators a query becomes (the plan is built, not run).
local sql = require("wm.sql")

local DDL = [[
CREATE TABLE s (id STRING, ms BIGINT, vc INT, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
]]

local function kinds(text)
  local p = sql.plan(DDL .. text, {name = "job.sql"})
  local t = {}
  for _, n in ipairs(p.env.nodes) do t[#t + 1] = n.kind end
  return t, p
end

describe("SQL planner", function()
  it("a filter query: read_lines, parse, watermarks, filter, map, print", function()
    local k, p = kinds("SELECT id FROM s WHERE vc > 1;")
    assert.are.same({"read_lines", "flat_map", "assign", "filter", "map", "map", "print"}, k)
    -- the watermark runs in C: bounded out-of-orderness of 5 s - 1 ms on the rowtime field
    local assign = p.env.nodes[3]
    assert.are.equal("bounded", assign.strategy.kind)
    assert.are.equal(4999, assign.strategy.delay)
    assert.are.equal("rt", assign.strategy.ts_field)
    -- run-time errors name the SQL line
    assert.are.equal("job.sql:4", p.env.nodes[4].where)
  end)

  it("GROUP BY TUMBLE becomes a keyed tumbling window with an aggregate", function()
    local k, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;")
    assert.are.same({"read_lines", "flat_map", "assign", "window", "map", "print"}, k)
    local w = p.env.nodes[4]
    assert.are.equal("tumbling", w.assigner.kind)
    assert.are.equal(5000, w.assigner.size)
    assert.are.equal("aggregate", w.fn_kind)
  end)

  it("GROUP BY HOP becomes a sliding window; SESSION a session window with merge", function()
    local _, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY HOP(rt, INTERVAL '1' SECOND, INTERVAL '3' SECOND), id;")
    local w = p.env.nodes[4]
    assert.are.same({"sliding", 3000, 1000}, {w.assigner.kind, w.assigner.size, w.assigner.slide})
    _, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY SESSION(rt, INTERVAL '2' SECOND), id;")
    w = p.env.nodes[4]
    assert.are.same({"session", 2000}, {w.assigner.kind, w.assigner.gap})
    assert.is_function(w.agg.merge)
  end)

  it("a non-windowed GROUP BY becomes one rolling flat_map that emits a changelog", function()
    local k = kinds("SELECT id, COUNT(*) FROM s GROUP BY id;")
    assert.are.same({"read_lines", "flat_map", "assign", "flat_map", "map", "print"}, k)
  end)

  it("a WATERMARK that is not `rt - INTERVAL` runs as a Lua generator", function()
    local p = sql.plan([[CREATE TABLE s (ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT ms FROM s;]])
    assert.are.equal("custom", p.env.nodes[3].strategy.kind)
  end)
end)
