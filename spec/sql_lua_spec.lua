-- SQL and the Table API from Lua (lua/wm/sql/tableapi.lua), and CURRENT_WATERMARK.
-- Expected outputs are worked out by hand: watermarks with interval 0 follow every record.
local h = require("helper")
local wm = require("wm")

-- word,ms lines: windows [20, 25) s and [30, 35) s of 2016-04-27 11:34
local WORDS = "hadoop,1461756862000\nflink,1461756863000\nhadoop,1461756864000\nflink,1461756870000\n"

local function words_env()
  local env = wm.env{watermark_interval = 0}
  local s = env:from_elements(
    {word = "hadoop", ts = 1461756862000}, {word = "flink", ts = 1461756863000},
    {word = "hadoop", ts = 1461756864000}, {word = "flink", ts = 1461756870000})
    :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("5s"):with_timestamp_field("ts"))
  return env, s
end

describe("SQL from Lua", function()
  it("from_data_stream makes the stream's timestamps a rowtime; sql_query windows over it", function()
    local env, s = words_env()
    env:create_temporary_view("words", s, {"word", "rt:rowtime"})
    local out = env:sql_query("SELECT word, COUNT(*) AS cnt, TUMBLE_END(rt, INTERVAL '5' SECOND) AS we "
      .. "FROM words GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), word"):to_append_stream():collect()
    env:execute()
    assert.are.same({{word = "hadoop", cnt = 2, we = 1461756865000}, {word = "flink", cnt = 1, we = 1461756865000},
      {word = "flink", cnt = 1, we = 1461756875000}}, out)
  end)

  it("the Table API: filter, select, window/group_by/select with w.start and w.end", function()
    local env, s = words_env()
    local t = env:from_data_stream(s, {"word", "ts:BIGINT", "rt:rowtime"})
    local f = t:filter("word LIKE 'h%'"):select("word, ts / 1000 AS sec"):to_append_stream():collect()
    local w = t:window(wm.table.tumble("5s"):on("rt"):as("w")):group_by("w, word")
      :select("word, w.start AS ws, w.end AS we, COUNT(*) AS n"):to_append_stream():collect()
    env:execute()
    assert.are.same({{word = "hadoop", sec = 1461756862}, {word = "hadoop", sec = 1461756864}}, f)
    assert.are.same({{word = "hadoop", ws = 1461756860000, we = 1461756865000, n = 2},
      {word = "flink", ws = 1461756860000, we = 1461756865000, n = 1},
      {word = "flink", ws = 1461756870000, we = 1461756875000, n = 1}}, w)
  end)

  it("to_append_stream refuses an updating query; to_retract_stream gives {true|false, row}", function()
    local env, s = words_env()
    local t = env:from_data_stream(s, {"word"})
    local counts = t:group_by("word"):select("word, COUNT(*) AS c")
    local ok, err = pcall(counts.to_append_stream, counts)
    assert.is_false(ok)
    assert.matches("produces updates.*use to_retract_stream", err)
    local out = counts:to_retract_stream():collect()
    env:execute()
    assert.are.same({{true, {word = "hadoop", c = 1}}, {true, {word = "flink", c = 1}},
      {false, {word = "hadoop", c = 1}}, {true, {word = "hadoop", c = 2}},
      {false, {word = "flink", c = 1}}, {true, {word = "flink", c = 2}}}, out)
  end)

  it("create_function: a Lua scalar function in SQL; errors name the Lua line", function()
    local env, s = words_env()
    env:create_temporary_view("words", s, {"word", "ts:integer"})
    env:create_function("score", function(w, n) return #w * 10 + n end, {returns = "BIGINT"})
    local out = env:sql_query("SELECT word, score(word, 1) AS sc FROM words WHERE score(word, 0) > 50")
      :to_append_stream():collect()
    local ok, err = pcall(env.sql_query, env, "SELECT wrod FROM words")
    assert.is_false(ok)
    assert.matches("sql_lua_spec%.lua:%d+: SQL:1:8: unknown column 'wrod'", err)
    env:execute()
    assert.are.same({{word = "hadoop", sc = 61}, {word = "hadoop", sc = 61}}, out)
  end)

  it("execute_sql runs CREATE TABLE and INSERT INTO; execute_insert writes a Table into a sink", function()
    local dir = h.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local f = assert(io.open(dir .. "/w.csv", "w"))
    f:write(WORDS)
    f:close()
    local env = wm.env{watermark_interval = 0}
    env:execute_sql(string.format([[
      CREATE TABLE w (word STRING, ts BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s/w.csv', 'format' = 'csv');
      CREATE TABLE o (word STRING, ts BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s/o.csv', 'format' = 'csv');
      CREATE TABLE o2 (word STRING) WITH ('connector' = 'filesystem', 'path' = '%s/o2.csv', 'format' = 'csv');
      INSERT INTO o SELECT word, ts FROM w WHERE word = 'flink';]], dir, dir, dir))
    env:sql_query("SELECT UPPER(word) FROM w WHERE word = 'hadoop'"):execute_insert("o2")
    env:execute()
    assert.are.equal("flink,1461756863000\nflink,1461756870000\n", h.read(dir .. "/o.csv"))
    assert.are.equal("HADOOP\nHADOOP\n", h.read(dir .. "/o2.csv"))
  end)

  it("from_data_stream with a rowtime needs event timestamps", function()
    local env = wm.env{}
    local t = env:from_data_stream(env:from_elements({word = "a"}), {"word", "rt:rowtime"})
    t:to_append_stream():collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("has no event timestamp", err)
  end)
end)

describe("CURRENT_WATERMARK", function()
  -- rows at 1, 10, 3, 12 s; watermark = max(rt) - 5 s after each row: none, -4 s, 5 s, 5 s
  local DATA = "a,1000\na,10000\na,3000\nb,12000\n"
  local DDL = [[SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE words (word STRING, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'w.csv', 'format' = 'csv');
]]
  local function run(q)
    local dir = h.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local f = assert(io.open(dir .. "/w.csv", "w"))
    f:write(DATA)
    f:close()
    f = assert(io.open(dir .. "/job.sql", "w"))
    f:write(DDL .. q)
    f:close()
    return h.wmrun('--sql "' .. dir .. '/job.sql"')
  end

  it("is NULL before the first watermark, then the watermark each row sees", function()
    local out, err = run("SELECT word, ts, CURRENT_WATERMARK(rt) AS wm FROM words;")
    assert.are.equal("", err)
    assert.are.equal("+I[a, 1000, <NULL>]\n+I[a, 10000, 1969-12-31 23:59:56.000]\n"
      .. "+I[a, 3000, 1970-01-01 00:00:05.000]\n+I[b, 12000, 1970-01-01 00:00:05.000]\n", out)
  end)

  it("routes late rows", function()
    local out = run("SELECT word, ts FROM words WHERE CURRENT_WATERMARK(rt) IS NULL OR rt > CURRENT_WATERMARK(rt);")
    assert.are.equal("+I[a, 1000]\n+I[a, 10000]\n+I[b, 12000]\n", out)
    out = run("SELECT word, ts FROM words WHERE rt <= CURRENT_WATERMARK(rt);")
    assert.are.equal("+I[a, 3000]\n", out)
  end)

  it("needs a time attribute", function()
    local _, err, code = run("SELECT CURRENT_WATERMARK(ts) FROM words;")
    assert.are.equal(1, code)
    assert.matches("job%.sql:4:26: CURRENT_WATERMARK needs a time attribute", err)
  end)
end)

describe("examples/sql/table_api.lua", function()
  it("prints scenario k's windows through the Table API and a Lua function", function()
    local out, err, code = h.wmrun('"' .. h.root .. '/examples/sql/table_api.lua"')
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(h.read(h.root .. "/examples/sql/table_api.out"), out)
  end)
end)
