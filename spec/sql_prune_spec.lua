-- Column pruning (issue 33, "Read only what is used", wm.sql.plan.prune): a view's projection
-- computes only the columns the query reads, and a CSV table under it decodes only those.
-- WMRUN_SQL_PRUNE=log shows what is pruned; every query here gives the same output as with
-- WMRUN_SQL_PRUNE=off (no pruning), and the outputs of some are worked out by hand.
local h = require("helper")

-- Runs job.sql (and `files`) with WMRUN_SQL_PRUNE=`mode`: stdout, stderr, exit code.
local function run(mode, sql, files)
  local dir = h.tmpdir()
  files = files or {}
  files["job.sql"] = sql
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  local out, err, code = h.sh("cd '" .. dir .. "' && WMRUN_SQL_PRUNE=" .. mode .. " " .. h.wmrun_path()
    .. " --watermark-interval 0 --sql job.sql")
  os.execute("rm -rf '" .. dir .. "'")
  return out, err, code
end

-- The lines of s in sorted order: the rows of a join of two scans, which run side by side and
-- whose rows reach the join in an order that depends on timing, with or without pruning.
local function sorted(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  table.sort(t)
  return table.concat(t, "\n")
end

local function lines_of(s, pat)
  local out = {}
  for l in s:gmatch("[^\n]+") do if l:find(pat) then out[#out + 1] = l end end
  return out
end

local T = [[
CREATE TABLE t (k STRING, a BIGINT, b STRING, c BIGINT, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
CREATE VIEW v AS SELECT k, a, b, c, rt FROM t;
]]
local IN = {["in.csv"] = "x,1,p,10,1000\ny,2,q,20,2000\nx,3,r,30,3000\ny,4,p,40,7000\nx,5,q,50,8000\n"}

describe("SQL column pruning", function()
  it("a query through a view: the view projects, the CSV decodes only the columns the query reads", function()
    local sql = T .. "SELECT k, a FROM v WHERE a > 2;\n"
    local out, err, code = run("log", sql, IN)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[x, 3]\n+I[y, 4]\n+I[x, 5]\n", out)
    -- (rt, the time attribute, is always kept; ts is the column it is computed from)
    assert.are.same({"prune: project k, a, rt (not b, c)", "prune: scan t skips b, c"}, lines_of(err, "^prune: "))
    -- b and c are not decoded: text in c that BIGINT rejects is no error (with pruning off,
    -- the view names c, so it is decoded and the line fails)
    local bad = {["in.csv"] = "x,1,p,zz,1000\ny,4,q,40,2000\n"}
    out, err, code = run("on", sql, bad)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[y, 4]\n", out)
    out, err, code = run("off", sql, bad)
    assert.are.equal(1, code, out)
    assert.matches("field 'c': 'zz' is not an integer", err, 1, true)
  end)

  it("a JSON table, and a CSV table read by the Lua decoder ('csv.null-literal'): rows without what is not used",
    function()
    -- these decoders still check a column no one reads (a wrong value is an error, as
    -- unpruned); they leave it out of the rows
    local J = [[
CREATE TABLE j (k STRING, a BIGINT, c BIGINT NOT NULL)
  WITH ('connector' = 'filesystem', 'path' = 'in.json', 'format' = 'json');
CREATE VIEW jv AS SELECT k, a, c FROM j;
SELECT k, a FROM jv;
]]
    local files = {["in.json"] = '{"k": "x", "a": 1, "c": 7}\n{"k": "y", "a": 2, "c": 8}\n'}
    local out, err, code = run("log", J, files)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[x, 1]\n+I[y, 2]\n", out)
    assert.are.same({"prune: project k, a (not c)", "prune: scan j skips c"}, lines_of(err, "^prune: "))
    files = {["in.json"] = '{"k": "x", "a": 1, "c": 7}\n{"k": "y", "a": 2}\n'}
    for _, mode in ipairs({"on", "off"}) do
      out, err, code = run(mode, J, files)
      assert.are.equal(1, code, out)
      assert.are.equal("+I[x, 1]\n", out)
      assert.matches("field 'c' is NOT NULL but missing", err, 1, true)
    end
    local C = [[
CREATE TABLE n (k STRING, a BIGINT, c BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv', 'csv.null-literal' = 'NULL');
CREATE VIEW nv AS SELECT k, a, c FROM n;
SELECT a, k FROM nv;
]]
    files = {["in.csv"] = "x,NULL,3\ny,2,4\n"}
    out, err, code = run("log", C, files)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[<NULL>, x]\n+I[2, y]\n", out)
    assert.are.same({"prune: project k, a (not c)", "prune: scan n skips c"}, lines_of(err, "^prune: "))
    files = {["in.csv"] = "x,NULL,3\ny,2,zz\n"}
    for _, mode in ipairs({"on", "off"}) do
      out, err, code = run(mode, C, files)
      assert.are.equal(1, code, out)
      assert.are.equal("+I[<NULL>, x]\n", out)
      assert.matches("column 'c' (BIGINT): 'zz' is", err, 1, true)
    end
  end)

  it("nested views, a view used twice with different columns, a subquery: each prunes to its use", function()
    local sql = T .. [[
CREATE VIEW v2 AS SELECT k, a, b, c FROM v WHERE a > 1;
CREATE VIEW v3 AS SELECT k, c, b FROM v2;
SELECT c FROM v3;
SELECT k, a FROM v UNION ALL SELECT b, c FROM v;
SELECT k FROM (SELECT k, b FROM v) s WHERE b <> 'p';
]]
    local out, err, code = run("log", sql, IN)
    assert.are.equal(0, code, err)
    local want = "+I[20]\n+I[30]\n+I[40]\n+I[50]\n"
      .. "+I[x, 1]\n+I[y, 2]\n+I[x, 3]\n+I[y, 4]\n+I[x, 5]\n+I[p, 10]\n+I[q, 20]\n+I[r, 30]\n+I[p, 40]\n+I[q, 50]\n"
      .. "+I[y]\n+I[x]\n+I[x]\n"
    assert.are.equal(sorted(want), sorted(out)) -- (three statements: their sinks' lines interleave)
    assert.are.same({
      -- SELECT c FROM v3: v3 keeps c, v2 keeps c and what its WHERE reads, v the same
      -- (v2's WHERE reads a, which v3 does not: v2 drops it, v keeps it)
      "prune: project c (not k, b)", "prune: project c (not k, a, b)", "prune: project a, c, rt (not k, b)",
      "prune: scan t skips k, b",
      -- the UNION's two reads of v
      "prune: project k, a, rt (not b, c)", "prune: scan t skips b, c",
      "prune: project b, c, rt (not k, a)", "prune: scan t skips k, a",
      -- the subquery (it uses k and b: nothing to drop), the view under it
      "prune: project k, b, rt (not a, c)", "prune: scan t skips a, c",
    }, lines_of(err, "^prune: "))
  end)

  -- queries whose output is compared with the same query unpruned (those of two scans, a
  -- join's, as sorted lines)
  local two_scans = {["t.*"] = true, ["a column only in ON (a self-join)"] = true, ["an interval join"] = true,
    ["a join's renamed column (a0)"] = true, EXISTS = true}
  local same = {
    ["*"] = "SELECT * FROM v;",
    ["t.*"] = "SELECT x.*, y.a FROM v x JOIN v y ON x.k = y.k AND x.a = y.a;",
    ["a column only in WHERE"] = "SELECT k FROM v WHERE c > 20;",
    ["a column only in ON (a self-join)"] = "SELECT x.k, y.a FROM v x JOIN v y ON x.b = y.b;",
    ["columns only in GROUP BY and HAVING"] = "SELECT COUNT(*) FROM v GROUP BY b HAVING SUM(c) > 20;",
    ["no column"] = "SELECT COUNT(*) FROM v;",
    ["OVER"] = "SELECT k, SUM(a) OVER (PARTITION BY b ORDER BY rt ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
      .. "FROM v;",
    ["Top-N"] = "SELECT k, a FROM (SELECT k, a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c DESC) AS rn FROM v) "
      .. "WHERE rn <= 1;",
    ["Top-N through a view"] = "CREATE VIEW top AS SELECT k, a, rn FROM (SELECT k, a, ROW_NUMBER() OVER "
      .. "(PARTITION BY b ORDER BY c DESC) AS rn FROM v) WHERE rn <= 2;\nSELECT k FROM top;",
    ["deduplication"] = "SELECT k, a FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY b ORDER BY rt) AS rn FROM v) "
      .. "WHERE rn = 1;",
    ["a window TVF"] = "SELECT b, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE v, DESCRIPTOR(rt), "
      .. "INTERVAL '5' SECOND)) GROUP BY b, window_start, window_end;",
    ["an interval join"] = "SELECT x.k, y.c FROM v x, v y WHERE x.b = y.b AND x.rt BETWEEN y.rt - INTERVAL '1' "
      .. "SECOND AND y.rt + INTERVAL '5' SECOND;",
    ["an unnamed expression (EXPR$1)"] = "CREATE VIEW ve AS SELECT k, a + 1, c FROM t;\nSELECT EXPR$1 FROM ve;",
    ["a join's renamed column (a0)"] = "CREATE VIEW w AS SELECT b, a FROM t;\n"
      .. "SELECT a0 FROM v x JOIN w y ON x.b = y.b;",
    ["EXISTS"] = "SELECT L.k, L.window_start FROM TABLE(TUMBLE(TABLE v, DESCRIPTOR(rt), INTERVAL '5' SECOND)) L "
      .. "WHERE EXISTS (SELECT R.b FROM TABLE(TUMBLE(TABLE v, DESCRIPTOR(rt), INTERVAL '5' SECOND)) R WHERE "
      .. "L.window_start = R.window_start AND L.window_end = R.window_end AND L.b = R.b AND R.c >= 40);",
  }
  local names = {}
  for name in pairs(same) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    it("gives the output of the unpruned query: " .. name, function()
      local sql = T .. same[name] .. "\n"
      local off, eoff, coff = run("off", sql, IN)
      local on, eon, con = run("on", sql, IN)
      assert.are.equal(coff, con, eon)
      assert.are.equal(eoff, eon)
      if two_scans[name] then
        assert.are.equal(sorted(off), sorted(on))
      else
        assert.are.equal(off, on)
      end
      assert.is_true(coff == 0 and #on > 0, "no output")
    end)
  end

  it("a statement's subquery is pruned once the statement plans; an unknown column in it is still an error",
    function()
    local out, err, code = run("log", T .. "SELECT k FROM (SELECT k, a, c FROM v) s WHERE k = 'y';\n", IN)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[y]\n+I[y]\n", out)
    assert.are.same({"prune: project k (not a, c)", "prune: project k, rt (not a, b, c)",
      "prune: scan t skips a, b, c"}, lines_of(err, "^prune: "))
    out, err, code = run("log", T .. "SELECT k FROM (SELECT k, nope FROM v) s;\n", IN)
    assert.are.equal("", out)
    assert.are.equal(1, code)
    assert.matches("unknown column 'nope'", err, 1, true)
    assert.are.same({}, lines_of(err, "^prune: project k "))
  end)

  it("Nexmark q4: the bid view gives the join only the 3 columns q4 reads", function()
    local out, err, code = h.sh("WMRUN_SQL_PRUNE=log " .. h.wmrun_path() .. " --sql examples/nexmark/q4.sql")
    assert.are.equal(0, code, err)
    assert.are.same({
      "prune: project id, dateTime, expires, category (not itemName, description, initialBid, reserve, seller, extra)",
      -- (the generator makes only what each scan reads: no person rows, no bid rows here)
      "prune: scan datagen omits person, auction.itemName/description/initialBid/reserve/seller/extra, bid",
      "prune: project auction, price, dateTime (not bidder, channel, url, extra)",
      "prune: scan datagen omits person, auction.id/itemName/description/initialBid/reserve/expires/seller/category/"
        .. "extra, bid.bidder/channel/url/extra",
    }, lines_of(err, "^prune: "))
    local off, eoff, coff = h.sh("WMRUN_SQL_PRUNE=off " .. h.wmrun_path() .. " --sql examples/nexmark/q4.sql")
    assert.are.equal(0, coff, eoff)
    assert.are.equal("", eoff) -- (nothing pruned, nothing logged)
    assert.is_true(#off > 0)
    assert.are.equal(sorted(off), sorted(out)) -- (a join of two scans of the generator)
  end)
end)
