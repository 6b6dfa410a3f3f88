-- Timestamps before 0000-03-01 (the proleptic Gregorian calendar with astronomical years:
-- year 0 is a leap year, -1 the year before it, printed as %04d prints it: -001), formatted
-- and parsed by wm.sql.values and by the C path (core/ops/wm_sqlfmt.c, wm_rexpr.c). The
-- expected dates are worked out by hand (days since 1970-01-01: 0001-01-01 is day -719162,
-- Python's date(1, 1, 1).toordinal() - 719163; year 0 has 366 days, year -1 365) and, for
-- every day of a range, taken from os.date("!*t"): the C library's gmtime, another
-- implementation.
local values = require("wm.sql.values")
local sql_run = require("sql_run")
local h = require("helper")

local HAND = {
  {-719162, "0001-01-01"}, {-719163, "0000-12-31"}, {-719468, "0000-03-01"}, {-719469, "0000-02-29"},
  {-719497, "0000-02-01"}, {-719498, "0000-01-31"}, {-719528, "0000-01-01"}, {-719529, "-001-12-31"},
  {-719893, "-001-01-01"}, {-719894, "-002-12-31"}, {-865565, "-400-03-01"}, {-865566, "-400-02-29"},
}

local function gmtime_text(day)
  local t = os.date("!*t", day * 86400)
  return string.format("%04d-%02d-%02d", t.year, t.month, t.day)
end

describe("timestamps before 0000-03-01", function()
  it("format as the hand-worked dates (wm.sql.values)", function()
    for _, c in ipairs(HAND) do
      assert.are.equal(c[2] .. " 00:00:00.000", values.format_timestamp(c[1] * 86400000))
      assert.are.equal(c[2] .. " 23:59:59.999", values.format_timestamp(c[1] * 86400000 + 86399999))
    end
  end)

  it("format as gmtime does, every day from -0003-01-01 to 0003-01-01, and parse back", function()
    assert.are.equal("-001-01-01", gmtime_text(-719893)) -- (the reference agrees with the hand)
    for day = -720623, -718432 do
      local want = gmtime_text(day)
      local ms = day * 86400000 + 45296789 -- 12:34:56.789
      local text = values.format_timestamp(ms)
      assert.are.equal(want .. " 12:34:56.789", text)
      if not want:find("^%-") then assert.are.equal(ms, values.parse_timestamp(text)) end
    end
    -- days_from_civil's years before 0 (parse reads four digits: through the month shift of
    -- January and February only): 0000-01-01 and 0000-02-29
    assert.are.equal(-719528 * 86400000, values.parse_timestamp("0000-01-01"))
    assert.are.equal(-719469 * 86400000, values.parse_timestamp("0000-02-29 00:00"))
  end)

  it("print, CAST AS STRING and DATE_FORMAT give the same dates on the C and Lua paths", function()
    local csv, want = {}, {}
    for i, c in ipairs(HAND) do
      local ms = c[1] * 86400000 + 3600000
      csv[i] = i .. "," .. ms
      want[i] = string.format("+I[%d, %s 01:00:00.000, %s 01:00:00.000, %s 01]", i, c[2], c[2], c[2])
    end
    local q = "CREATE TABLE t (i INT, ms BIGINT) WITH ('connector' = 'filesystem', 'path' = 't.csv', "
      .. "'format' = 'csv');\n"
      .. "SELECT i, TO_TIMESTAMP_LTZ(ms, 3) AS ts, CAST(TO_TIMESTAMP_LTZ(ms, 3) AS STRING) AS s,\n"
      .. "  DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'yyyy-MM-dd HH') AS f FROM t;\n"
    local files = {["t.csv"] = table.concat(csv, "\n") .. "\n"}
    local out, err, code = sql_run.run(q, files)
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat(want, "\n") .. "\n", out)
    local dir = h.tmpdir()
    for name, text in pairs(files) do
      local f = assert(io.open(dir .. "/" .. name, "w"))
      f:write(text)
      f:close()
    end
    local f = assert(io.open(dir .. "/job.sql", "w"))
    f:write(q)
    f:close()
    out, err, code = h.sh("cd '" .. dir .. "' && WMRUN_SQL_EXPR=lua " .. h.wmrun_path() .. " --sql job.sql")
    h.rmdir(dir)
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat(want, "\n") .. "\n", out)
  end)
end)
