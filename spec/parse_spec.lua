-- parse_csv and parse_json end to end: typed rows built in C, each on_error mode, quoting,
-- CRLF, headers, and the error messages naming file, line and field.
local h = require("helper")

local function job(body)
  return 'local wm = require("wm")\nlocal env = wm.env{ watermark_interval = 0 }\n' .. body ..
    '\nenv:execute()\n'
end

describe("parse_csv", function()
  it("turns lines into typed records (RFC 4180 quoting, CRLF, no final newline)", function()
    local data = h.write_tmp('a,1,2.5,true\r\n"b,c",-3,4,false\n"q""x",5,1e2,0\n" sp ",+7, 8 ,1', ".csv")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q)
  :parse_csv{"id", "n:integer", "x:number", "ok:boolean"}
  :map(function(r) return string.format("%%s|%%s|%%s|%%s|%%s", r.id, math.type(r.n), r.n, r.x, r.ok) end)
  :print()]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(table.concat({
      "a|integer|1|2.5|true",
      "b,c|integer|-3|4|false",
      'q"x|integer|5|100.0|false',
      " sp |integer|7|8|true", ""}, "\n"), out)
    os.remove(data)
  end)

  it("prints rows in C as sorted compact JSON and feeds key_by/sum in C", function()
    local data = h.write_tmp("s1,1,3\ns2,2,4\ns1,3,5\ns1,7,1\n", ".csv")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q)
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    -- [0,5): s1 3+5 = 8 (first record's ts 1), s2 4; [5,10): s1 1
    assert.are.equal('{"id":"s1","ts":1,"vc":8}\n{"id":"s2","ts":2,"vc":4}\n{"id":"s1","ts":7,"vc":1}\n', out)
    os.remove(data)
  end)

  it("reads integers of every length exactly (8 digits at a time, signs and blanks)", function()
    local lines = {
      "12345678", "123456789", "1700000000123", "000000000000000042", "999999999999999999",
      "9223372036854775807", "-9223372036854775808", "+12345678", " 12345678", "12345678 ",
      "0", "7", "00000000", "0000000001",
    }
    local data = h.write_tmp("a," .. table.concat(lines, ",1\na,") .. ",1\r\nb,5,123456789012\n", ".csv")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q)
  :parse_csv{"id", "n:integer", "m:integer"}
  :map(function(r) return string.format("%%s %%s %%s", math.type(r.n), r.n, r.m) end)
  :print()]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(table.concat({
      "integer 12345678 1", "integer 123456789 1", "integer 1700000000123 1",
      "integer 42 1", "integer 999999999999999999 1", "integer 9223372036854775807 1",
      "integer -9223372036854775808 1", "integer 12345678 1", "integer 12345678 1",
      "integer 12345678 1", "integer 0 1", "integer 7 1", "integer 0 1", "integer 1 1",
      "integer 5 123456789012", ""}, "\n"), out)
    os.remove(data)
    for _, bad in ipairs({"1234567x", "12345678x", "123x5678", "9223372036854775808",
                          "92233720368547758070", "12345678.5"}) do
      data = h.write_tmp("a," .. bad .. ",1\n", ".csv")
      local _, err2, code2 = h.run_job(job(([[
env:read_lines(%q):parse_csv{"id", "n:integer", "m:integer"}:print()]]):format(data)))
      assert.are.equal(1, code2)
      assert.truthy(err2:find("field 'n': '" .. bad .. "' is not an integer", 1, true), bad .. " -> " .. err2)
      os.remove(data)
    end
  end)

  it("sums per key and tumbling window in C with records out of order across windows", function()
    -- bounded out-of-orderness 3 s, tumbling 5 s: the watermark is max ts - 3 s - 1 ms
    local data = h.write_tmp("k,1,1\nk,6,10\nk,2,100\nj,7,1000\nk,3,10000\nk,11,5\nk,4,7\nk,12,3\n", ".csv")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q)
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("3s"):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    -- k [0,5): 1+100+10000 (ts 11 s makes the watermark 7.999 s: [0,5) fires; ts 4 is then
    -- late and dropped); k [5,10): 10; j [5,10): 1000; k [10,15): 5+3
    assert.are.equal('{"id":"k","ts":1,"vc":10101}\n{"id":"k","ts":6,"vc":10}\n' ..
      '{"id":"j","ts":7,"vc":1000}\n{"id":"k","ts":11,"vc":8}\n', out)
    os.remove(data)
  end)

  it("fails naming the file, the line and the field", function()
    local data = h.write_tmp("a,1\nb,2\nc,abc\nd,4\n", ".csv")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q):parse_csv{"id", "ts:integer"}:print()]]):format(data)))
    assert.are.equal(1, code)
    assert.truthy(err:find("wmrun: " .. data .. ":3: field 'ts': 'abc' is not an integer", 1, true), err)
    assert.are.equal('{"id":"a","ts":1}\n{"id":"b","ts":2}\n', out)
    os.remove(data)
  end)

  it("names the problem of a malformed line", function()
    local cases = {
      {"a", "expected 2 fields, got 1"},
      {"a,1,2", "expected 2 fields, got 3"},
      {'"a,1', "field 'id': unterminated quoted field"},
      {'"a"x,1', "field 'id': unexpected text after the closing quote"},
      {"a,", "field 'ts' is empty"},
      {"a,99999999999999999999", "is not an integer"},
    }
    for _, c in ipairs(cases) do
      local data = h.write_tmp(c[1] .. "\n", ".csv")
      local _, err, code = h.run_job(job(([[
env:read_lines(%q):parse_csv{"id", "ts:integer"}:print()]]):format(data)))
      assert.are.equal(1, code)
      assert.truthy(err:find(data .. ":1: " , 1, true), err)
      assert.truthy(err:find(c[2], 1, true), c[1] .. " -> " .. err)
      os.remove(data)
    end
  end)

  it("skips malformed lines and counts them in the metrics", function()
    local data = h.write_tmp("a,1\nb,x\nc,3\n,\nd,5\n", ".csv")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q):parse_csv{"id", "ts:integer", on_error = "skip"}:print()]]):format(data)),
      "--metrics")
    assert.are.equal(0, code)
    assert.are.equal('{"id":"a","ts":1}\n{"id":"c","ts":3}\n{"id":"d","ts":5}\n', out)
    assert.truthy(err:find("parse errors: 2 in 'parse_csv", 1, true), err)
    os.remove(data)
  end)

  it("sends malformed lines to the parse_errors side output", function()
    local data = h.write_tmp("a,1\nb,x\nc,3\n", ".csv")
    local out, err, code = h.run_job(job(([[
local parsed = env:read_lines(%q):parse_csv{"id", "ts:integer", on_error = "side_output"}
parsed:print()
parsed:get_side_output("parse_errors")
  :map(function(e) return e.line .. "|" .. e.text .. "|" .. e.error end)
  :print("bad")]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal('{"id":"a","ts":1}\nbad> 2|b,x|field \'ts\': \'x\' is not an integer\n{"id":"c","ts":3}\n', out)
    os.remove(data)
  end)

  it("skips a header line, uses another separator, and makes optional fields nil", function()
    local data = h.write_tmp("id;vc\nx;1\ny;\n", ".csv")
    local out, _, code = h.run_job(job(([[
env:read_lines(%q):parse_csv{"id", "vc:integer?", sep = ";", header = true}:print()]]):format(data)))
    assert.are.equal(0, code)
    assert.are.equal('{"id":"x","vc":1}\n{"id":"y"}\n', out)
    os.remove(data)
  end)

  it("gives a Lua function each row as a table of its own schema's names (many schemas)", function()
    -- 12 schemas of the same names in different orders, more than the bridge caches names
    -- for (8), so the cached lists of names are replaced and must still be each schema's own;
    -- "end" is a Lua keyword, an empty optional field is absent
    local orders = {}
    local names = {"id", "end", "n"}
    for i = 1, 12 do
      local o = {names[(i - 1) % 3 + 1], names[i % 3 + 1], names[(i + 1) % 3 + 1]}
      if i > 6 then o[2], o[3] = o[3], o[2] end
      orders[i] = o
    end
    local body = {}
    for i, o in ipairs(orders) do
      body[#body + 1] = ([[
env:from_elements("a%d,b%d,%d", ",b%d,%d"):parse_csv{"%s:string?", "%s:string?", "%s:string?"}:map(function(r)
  local ks = {}
  for k, v in pairs(r) do ks[#ks + 1] = k .. "=" .. tostring(v) end
  table.sort(ks)
  return "%d " .. table.concat(ks, " ")
end):print()]]):format(i, i, i, i, i, o[1], o[2], o[3], i)
    end
    local out, err, code = h.run_job(job(table.concat(body, "\n")))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local want = {}
    for i, o in ipairs(orders) do
      local row1, row2 = {}, {}
      for c, name in ipairs(o) do
        local v1 = ({"a" .. i, "b" .. i, tostring(i)})[c]
        row1[#row1 + 1] = name .. "=" .. v1
        if c > 1 then row2[#row2 + 1] = name .. "=" .. ({"", "b" .. i, tostring(i)})[c] end
      end
      table.sort(row1)
      table.sort(row2)
      want[#want + 1] = i .. " " .. table.concat(row1, " ")
      want[#want + 1] = i .. " " .. table.concat(row2, " ")
    end
    table.sort(want)
    assert.are.same(want, h.sorted_lines(out))
  end)

  it("rejects bad specifications where the job calls it", function()
    local _, err, code = h.run_job(job('env:from_elements("a"):parse_csv{"id", "ts:int"}:print()'))
    assert.are.equal(1, code)
    assert.truthy(err:find(":3: parse_csv: column 'ts' has unknown type 'int'", 1, true), err)
    _, err = h.run_job(job('env:from_elements("a"):parse_csv{"id", sep = ",,"}:print()'))
    assert.truthy(err:find("sep must be one character", 1, true), err)
    _, err = h.run_job(job('env:from_elements("a"):parse_csv{"id", on_error = "ignore"}:print()'))
    assert.truthy(err:find("on_error must be", 1, true), err)
  end)

  it("keeps rows intact when a later stage holds them (rows are reused only when free)", function()
    local data = h.write_tmp("a,1\nb,2\nc,3\n", ".csv")
    local out, _, code = h.run_job(job(([[
local rows = env:read_lines(%q):parse_csv{"id", "n:integer"}:collect()
env:execute()
for _, r in ipairs(rows) do print(r.id, r.n) end
do return end]]):format(data)))
    assert.are.equal(0, code)
    assert.are.equal("a\t1\nb\t2\nc\t3\n", out)
    os.remove(data)
  end)
end)

describe("parse_json", function()
  it("decodes JSON lines with lua-cjson and handles errors by mode", function()
    local data = h.write_tmp('{"id":"a","n":1}\nnot json\n{"id":"b","n":2}\nnull\n', ".jsonl")
    local out, err, code = h.run_job(job(([[
local s = env:read_lines(%q):parse_json{on_error = "side_output"}
s:map(function(r) return r.id .. "=" .. r.n end):print()
s:get_side_output("parse_errors"):map(function(e) return e.line .. ":" .. e.error end):print("bad")]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("a=1", lines[1])
    assert.truthy(lines[2]:find("^bad> 2:invalid JSON: "), lines[2])
    assert.are.equal("b=2", lines[3])
    assert.are.equal("bad> 4:the line is JSON null, not a record", lines[4])
    err, code = select(2, h.run_job(job(([[env:read_lines(%q):parse_json():print()]]):format(data))))
    assert.are.equal(1, code)
    assert.truthy(err:find(data .. ":2: invalid JSON", 1, true), err)
    os.remove(data)
  end)

  it("keeps integers beyond 2^53 exact, and rejects integers beyond 64 bits naming the field (issue 13.7)", function()
    -- cjson decodes numbers to doubles: 1700000000000000001 would become ...000. The line
    -- also holds -1.25 (the first stand-in value) and a 19-digit string that stays a string.
    local data = h.write_tmp('{"ts":1700000000000000001,"n":-9007199254740993,"f":-1.25,'
      .. '"s":"1234567890123456789","a":[9223372036854775807,{"m":-9223372036854775808}]}\n'
      .. '{"ts":1700000000000000002,"n":12,"f":1.5}\n', ".jsonl")
    local out, err, code = h.run_job(job(([[
env:read_lines(%q):parse_json()
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :key_by(function() return 1 end)
  :process(function(r, ctx, out)
    out(string.format("%%d %%s %%s %%s %%s", ctx.timestamp, math.type(r.n), r.n, r.f, r.s))
    if r.a then out(string.format("%%d %%d", r.a[1], r.a[2].m)) end
  end)
  :print()]]):format(data)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("1700000000000000001 integer -9007199254740993 -1.25 1234567890123456789\n"
      .. "9223372036854775807 -9223372036854775808\n"
      .. "1700000000000000002 integer 12 1.5 nil\n", out)
    local f = assert(io.open(data, "wb"))
    f:write('{"id":"a"}\n{"id":"b","v":{"big":99999999999999999999}}\n')
    f:close()
    err, code = select(2, h.run_job(job(([[env:read_lines(%q):parse_json():print()]]):format(data))))
    assert.are.equal(1, code)
    assert.truthy(err:find(data .. ":2: invalid JSON: field 'big': the integer 99999999999999999999 is beyond "
      .. "the 64-bit range", 1, true), err)
    os.remove(data)
  end)
end)
