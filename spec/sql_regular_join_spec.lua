-- Regular joins in SQL (issue 29): INNER, LEFT, RIGHT, FULL joins on equality keys without a
-- time condition, over append-only and updating inputs, with Flink's StreamingJoinOperator
-- changelog (outer rows padded with NULLs, the padding retracted when a match comes and emitted
-- again when the last match goes), `table.exec.state.ttl`, and the join's state in checkpoints.
-- Every expected changelog is worked out by hand in the comments.
local h = require("helper")
local sql_run = require("sql_run")
local wm = require("wm")

-- One source, so that the rows reach the join in this order (-p 1): L and R are filters of it.
--   1 L a (id 1)   2 R x (id 1)   3 L b (id 2)   4 R z (id 3)   5 R y (id 1)
--   6 L n (id NULL)   7 R m (id NULL)
local JOB = [[
local wm = require("wm")
local env = wm.env{}
local s = env:from_elements(
  {s = "L", id = 1, v = "a"}, {s = "R", id = 1, w = "x"}, {s = "L", id = 2, v = "b"},
  {s = "R", id = 3, w = "z"}, {s = "R", id = 1, w = "y"}, {s = "L", v = "n"}, {s = "R", w = "m"})
env:create_temporary_view("L", s:filter(function(r) return r.s == "L" end), {"id:INT", "v:STRING"})
env:create_temporary_view("R", s:filter(function(r) return r.s == "R" end), {"id:INT", "w:STRING"})
env:execute_sql("CREATE VIEW RC AS SELECT id, COUNT(*) AS n FROM R GROUP BY id")
env:execute_sql([==[%s]==])
env:execute()
]]

local function run(query, args)
  local out, err, code = h.run_job(string.format(JOB, query), args)
  assert.are.equal(0, code, err)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- the rows left (a retraction must find its row)
local function final_rows(lines) return (h.apply_changelog(lines)) end

describe("SQL regular joins", function()
  it("INNER JOIN of append-only inputs: each pair once, +I only; NULL keys meet nothing", function()
    -- 2: x meets a; 5: y meets a; b, z, n, m meet nothing
    assert.are.same({"+I[a, x]", "+I[a, y]"}, run("SELECT L.v, R.w FROM L JOIN R ON L.id = R.id"))
  end)

  it("LEFT JOIN pads a left row with NULLs and retracts the padding at its first match", function()
    -- 1: a alone; 2: x is a's first match: -D the padded a, +I the pair; 3: b alone; 4: z has
    -- no left row and R is not kept; 5: a's second match: no padding to retract; 6: n (NULL
    -- key) alone; 7: m (NULL key) goes nowhere
    assert.are.same({"+I[a, <NULL>]", "-D[a, <NULL>]", "+I[a, x]", "+I[b, <NULL>]", "+I[a, y]", "+I[n, <NULL>]"},
      run("SELECT L.v, R.w FROM L LEFT JOIN R ON L.id = R.id"))
  end)

  it("RIGHT JOIN pads the right rows", function()
    -- 2: x meets a; 4: z alone; 5: y meets a; 7: m (NULL key) alone; the left rows alone go nowhere
    assert.are.same({"+I[a, x]", "+I[<NULL>, z]", "+I[a, y]", "+I[<NULL>, m]"},
      run("SELECT L.v, R.w FROM L RIGHT OUTER JOIN R ON L.id = R.id"))
  end)

  it("FULL JOIN pads both sides; two NULL keys do not meet", function()
    assert.are.same({"+I[a, <NULL>]", "-D[a, <NULL>]", "+I[a, x]", "+I[b, <NULL>]", "+I[<NULL>, z]", "+I[a, y]",
                     "+I[n, <NULL>]", "+I[<NULL>, m]"},
      run("SELECT L.v, R.w FROM L FULL JOIN R ON L.id = R.id"))
  end)

  it("an ON condition beyond the keys decides the padding of an outer join; WHERE filters after", function()
    -- ON ... AND R.w <> 'x': at 2, x does not meet a (a stays padded); at 5 y does
    assert.are.same({"+I[a, <NULL>]", "+I[b, <NULL>]", "-D[a, <NULL>]", "+I[a, y]", "+I[n, <NULL>]"},
      run("SELECT L.v, R.w FROM L LEFT JOIN R ON L.id = R.id AND R.w <> 'x'"))
    -- WHERE R.w IS NULL: the padded rows only, with the retraction of a's
    assert.are.same({"+I[a, <NULL>]", "-D[a, <NULL>]", "+I[b, <NULL>]", "+I[n, <NULL>]"},
      run("SELECT L.v, R.w FROM L LEFT JOIN R ON L.id = R.id WHERE R.w IS NULL"))
  end)

  it("an updating input: its -U/+U go through an inner join with their kinds", function()
    -- RC (COUNT per id of R): 2 +I[1, 1]; 4 +I[3, 1]; 5 -U[1, 1] +U[1, 2]; 7 +I[NULL, 1]
    -- the join: 2 a meets [1, 1]; 5 the pair retracted (-U) and the new one (+U)
    assert.are.same({"+I[a, 1]", "-U[a, 1]", "+U[a, 2]"}, run("SELECT L.v, RC.n FROM L JOIN RC ON L.id = RC.id"))
  end)

  it("an updating input of a LEFT JOIN: the padding comes back when the last match is retracted", function()
    -- 1 +I[a, NULL]; 2 [1, 1] is a's first match: -D[a, NULL], +I[a, 1]; 3 +I[b, NULL];
    -- 5 -U[1, 1]: -U[a, 1] and a has no match left: +I[a, NULL]; +U[1, 2]: a's first match
    -- again: -D[a, NULL], +I[a, 2] (+I: Flink's kind when the other side is outer); 6 +I[n, NULL]
    assert.are.same({"+I[a, <NULL>]", "-D[a, <NULL>]", "+I[a, 1]", "+I[b, <NULL>]", "-U[a, 1]", "+I[a, <NULL>]",
                     "-D[a, <NULL>]", "+I[a, 2]", "+I[n, <NULL>]"},
      run("SELECT L.v, RC.n FROM L LEFT JOIN RC ON L.id = RC.id"))
  end)

  it("at -p 2 --threads 2 the rows arrive in another order, and the changelogs end in the same rows", function()
    -- LEFT JOIN of RC: a with [1, 2], b and n padded (the last rows of the test above); FULL
    -- JOIN: the same pairs, and z and m padded
    assert.are.same({"[a, 2]", "[b, <NULL>]", "[n, <NULL>]"},
      final_rows(run("SELECT L.v, RC.n FROM L LEFT JOIN RC ON L.id = RC.id", "-p 2 --threads 2")))
    assert.are.same({"[<NULL>, m]", "[<NULL>, z]", "[a, x]", "[a, y]", "[b, <NULL>]", "[n, <NULL>]"},
      final_rows(run("SELECT L.v, R.w FROM L FULL JOIN R ON L.id = R.id", "-p 2 --threads 2")))
  end)

  it("a GROUP BY over a join's changelog retracts as the join does", function()
    -- the join's changelog: +I[a, NULL] -D[a, NULL] +I[a, x] +I[b, NULL] +I[a, y] +I[n, NULL];
    -- COUNT(R.w) per v (a padded row is a row of the group with w NULL): +I[a, 0]; the group's
    -- only row retracted: -D[a, 0]; +I[a, 1]; +I[b, 0]; -U[a, 1] +U[a, 2]; +I[n, 0]
    assert.are.same({"+I[a, 0]", "-D[a, 0]", "+I[a, 1]", "+I[b, 0]", "-U[a, 1]", "+U[a, 2]", "+I[n, 0]"},
      run("SELECT L.v, COUNT(R.w) AS n FROM L LEFT JOIN R ON L.id = R.id GROUP BY L.v"))
  end)

  it("ROW_NUMBER() over a regular join (Top-N of its rows)", function()
    -- the pairs a-x (2) and a-y (5) of id 1; per id the first by w DESC: a-x, then a-y (y > x):
    -- +I[a, x]; y takes the place: -D[a, x], +I[a, y]
    assert.are.same({"+I[a, x]", "-D[a, x]", "+I[a, y]"}, run([==[
SELECT v, w FROM (SELECT L.v, R.w, ROW_NUMBER() OVER (PARTITION BY L.id ORDER BY R.w DESC) AS rn
  FROM L JOIN R ON L.id = R.id) WHERE rn <= 1]==]))
  end)

  it("a window join of an updating input is not supported yet, at the input", function()
    local _, err, code = sql_run.run([==[
CREATE TABLE A (id INT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = 'a.csv', 'format' = 'csv');
SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE A, DESCRIPTOR(ts), INTERVAL '5' SECOND))) a
JOIN (SELECT id, window_start, window_end, COUNT(*) AS n
      FROM (SELECT * FROM TABLE(TUMBLE(TABLE A, DESCRIPTOR(ts), INTERVAL '5' SECOND)))
      GROUP BY id, window_start, window_end) b
ON a.id = b.id AND a.window_start = b.window_start AND a.window_end = b.window_end;
]==], {["a.csv"] = "1,1000\n"})
    assert.are.equal(1, code)
    assert.matches("job.sql:4:6: not supported yet: window joins of an updating input (the right input", err, 1, true)
  end)

  it("SET of a bad table.exec.state.ttl is an error naming it", function()
    local _, err, code = h.run_job(string.format(JOB, "SET 'table.exec.state.ttl' = 'soon'"))
    assert.are.equal(1, code)
    assert.matches("bad duration 'soon' for 'table.exec.state.ttl'", err, 1, true)
  end)
end)

describe("SQL regular joins: table.exec.state.ttl", function()
  it("a kept row is gone once it was not written for the TTL (processing time); a read does not renew it",
     function()
    local hs = wm.testing.harness(function(input)
      local env = input.env
      env:create_temporary_view("L", input:filter(function(r) return r.s == "L" end), {"id:INT", "v:STRING"})
      env:create_temporary_view("R", input:filter(function(r) return r.s == "R" end), {"id:INT", "w:STRING"})
      env:execute_sql("SET 'table.exec.state.ttl' = '10 s'")
      return env:sql_query("SELECT L.v, R.w FROM L LEFT JOIN R ON L.id = R.id"):to_retract_stream()
        :map(function(e) return (e[1] and "+" or "-") .. "[" .. e[2].v .. ", " .. tostring(e[2].w) .. "]" end)
    end)
    local function at(t, rec)
      hs:advance_processing_time(t - hs:processing_time())
      hs:push(rec, t)
    end
    -- 0 s: a (kept, written at 0 s); 5 s: x meets a: a's match count changes (a written at 5 s),
    -- x written at 5 s
    at(0, {s = "L", id = 1, v = "a"})
    at(5000, {s = "R", id = 1, w = "x"})
    -- 14 s: y meets a (alive until 15 s): a written at 14 s, y at 14 s
    at(14000, {s = "R", id = 1, w = "y"})
    -- 20 s: x (5 s + 10 s <= 20 s) is gone, y (until 24 s) meets b: a read, y is not renewed
    at(20000, {s = "L", id = 1, v = "b"})
    -- 24 s: y is gone (14 s + 10 s <= 24 s): c meets nothing
    at(24000, {s = "L", id = 1, v = "c"})
    -- 29 s: a (written at 14 s) is gone; z meets b (written at 20 s) and c (24 s): b had a
    -- match (y, which no longer counts in its padding: Flink keeps the count), c was padded:
    -- -D of c's padding, then the pairs
    at(29000, {s = "R", id = 1, w = "z"})
    assert.are.same({"+[a, nil]", "-[a, nil]", "+[a, x]", "+[a, y]", "+[b, y]", "+[c, nil]", "-[c, nil]", "+[b, z]",
                     "+[c, z]"}, hs:output())
  end)
end)

describe("table.exec.state.ttl on a GROUP BY and a Top-N (the key's state)", function()
  -- a harness over one table T (k, v); the query's changelog as "+[k, x]" / "-[k, x]"
  local function harness(query, col)
    local hs = wm.testing.harness(function(input)
      local env = input.env
      env:create_temporary_view("T", input, {"k:STRING", "v:INT"})
      env:execute_sql("SET 'table.exec.state.ttl' = '10 s'")
      return env:sql_query(query):to_retract_stream()
        :map(function(e) return (e[1] and "+" or "-") .. "[" .. e[2].k .. ", " .. tostring(e[2][col]) .. "]" end)
    end)
    return hs, function(t, rec)
      hs:advance_processing_time(t - hs:processing_time())
      hs:push(rec, t)
    end
  end

  it("GROUP BY: a group not written for the TTL starts again from nothing", function()
    local hs, at = harness("SELECT k, COUNT(*) AS n FROM T GROUP BY k", "n")
    at(0, {k = "a", v = 1})     -- +[a, 1]
    at(5000, {k = "a", v = 1})  -- -[a, 1] +[a, 2]; a written at 5 s
    at(14000, {k = "b", v = 1}) -- +[b, 1]
    at(15000, {k = "a", v = 1}) -- a gone (5 s + 10 s <= 15 s): +[a, 1]
    at(20000, {k = "b", v = 1}) -- b (14 s) still there: -[b, 1] +[b, 2]
    assert.are.same({"+[a, 1]", "-[a, 1]", "+[a, 2]", "+[b, 1]", "+[a, 1]", "-[b, 1]", "+[b, 2]"}, hs:output())
  end)

  it("Top-N: a row that enters the top renews it, one that does not only reads it", function()
    local hs, at = harness("SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) "
      .. "AS rn FROM T) WHERE rn <= 1", "v")
    at(0, {k = "a", v = 5})      -- +[a, 5], written at 0 s
    at(5000, {k = "a", v = 3})   -- below 5: nothing, not a write
    at(10000, {k = "a", v = 4})  -- the top (0 s + 10 s <= 10 s) is gone: 4 is first: +[a, 4]
    at(12000, {k = "a", v = 6})  -- 6 beats 4: -[a, 4] +[a, 6]; a row that enters writes: 12 s
    at(21000, {k = "a", v = 1})  -- the top is there (12 s + 10 s > 21 s): below 6, nothing
    assert.are.same({"+[a, 5]", "+[a, 4]", "-[a, 4]", "+[a, 6]"}, hs:output())
  end)
end)

describe("SQL regular joins: checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("a LEFT JOIN stopped by SIGTERM and resumed from its checkpoint prints what one run prints", function()
    -- the join's rows of both sides (and their match counts) are in the checkpoint: the resumed
    -- run's rows meet those kept before the stop
    local job = [[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {side = i % 3, id = i % 50, v = i}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("L", s:filter(function(r) return r.side == 0 end), {"id:INT", "v:INT"})
env:create_temporary_view("R", s:filter(function(r) return r.side ~= 0 end), {"id:INT", "v:INT"})
env:execute_sql("SELECT L.v, R.v AS w FROM L LEFT JOIN R ON L.id = R.id AND R.v > L.v")
env:execute()
]]
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    assert.is_true(#rest > 0)
    assert.are.equal(ref, part .. rest)
  end)
end)
