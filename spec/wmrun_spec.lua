-- The command line: options, exit statuses, and how errors are reported.
local h = require("helper")

describe("wmrun", function()
  it("-h prints usage and exits 0", function()
    local out, _, code = h.wmrun("-h")
    assert.are.equal(0, code)
    assert.matches("usage: wmrun %[options%] job.lua %[args...%]", out)
  end)

  it("-v names wmrun, Lua and libuv versions", function()
    local out, _, code = h.wmrun("--version")
    assert.are.equal(0, code)
    assert.matches("^wmrun %d+%.%d+%.%d+ %(Lua 5%.4%.%d+, libuv %d+%.%d+%.%d+%)", out)
  end)

  it("an unknown option or a missing script is bad usage: exit 2", function()
    local _, err, code = h.wmrun("--frobnicate job.lua")
    assert.are.equal(2, code)
    -- one line that says what is wrong and a hint, not the whole usage (issue 19)
    assert.are.equal("wmrun: unknown option '--frobnicate'\nTry 'wmrun --help' for more information.\n", err)
    for _, args in ipairs({"-p 0 job.lua", "--threads x job.lua", "--watermark-interval", ""}) do
      _, err, code = h.wmrun(args)
      assert.are.equal(2, code, args)
      assert.matches("^wmrun: [^\n]+\nTry 'wmrun %-%-help' for more information%.\n$", err)
    end
    _, err, code = h.wmrun("")
    assert.are.equal(2, code)
    assert.matches("no job script given", err)
    _, err, code = h.wmrun("--watermark-interval 3parsecs x.lua")
    assert.are.equal(2, code)
    assert.matches("bad duration '3parsecs'", err)
  end)

  it("wmrun - reads the job from standard input, as lua - does", function()
    local job = [[
local wm = require("wm")
local env = wm.env()
env:from_elements(...):map(function(x) return x .. "!" end):print()
env:execute()
print(arg[0])
]]
    local out, err, code = h.wmrun("- a b", job)
    assert.are.equal(0, code, err)
    assert.are.equal("a!\nb!\n-\n", out)
    -- its errors are named as lua names them
    err, code = select(2, h.wmrun("-", "local x = 1\nerror('boom')\n"))
    assert.are.equal(1, code)
    assert.matches("^wmrun: stdin:2: boom\n", err)
    -- every thread runs the same script, read once
    out, err, code = h.wmrun("--threads 2 -p 2 -", [[
local wm = require("wm")
local env = wm.env()
env:from_elements(1, 2):rebalance():map(function(x) return x * 10 end):collect()
env:execute()
print("done")
]])
    assert.are.equal(0, code, err)
    assert.are.equal("done\n", out)
  end)

  it("wmrun --sql - reads the SQL script from standard input", function()
    local dir = h.root .. "/examples/sql"
    local out, err, code = h.sh("cd '" .. dir .. "' && " .. h.wmrun_path() .. " --sql -",
      h.read(dir .. "/k_sql_tumble_count.sql"))
    assert.are.equal(0, code, err)
    assert.are.equal(h.read(dir .. "/k_sql_tumble_count.expected"), out)
  end)

  it("passes arguments in arg, as lua does", function()
    local out, err, code = h.run_job('print(arg[1], arg[2], #arg, select("#", ...))', "", nil)
    assert.are.equal(0, code, err)
    assert.are.equal("nil\tnil\t0\t0\n", out)
    local p = h.write_tmp('print(arg[1], arg[2], #arg, ...)', ".lua")
    out = h.wmrun(p .. " one two")
    os.remove(p)
    assert.are.equal("one\ttwo\t2\tone\ttwo\n", out)
  end)

  it("a runtime error in a user function: wmrun: job.lua:LINE: message, traceback, exit 1", function()
    local out, err, code, path = h.run_job([[
local wm = require("wm")
local env = wm.env()
env:from_elements(1, 2)
  :map(function(x)
    return x + nil
  end)
  :print()
env:execute()
]])
    assert.are.equal(1, code)
    assert.are.equal("", out)
    local name = path:match("[^/]+$")
    assert.matches("^wmrun: [^\n]*" .. name:gsub("%p", "%%%0") .. ":5: attempt to perform arithmetic on a nil value",
      err)
    assert.matches("in operator 'map %(", err)
    assert.matches("on record 1", err, 1, true)
    assert.matches("stack traceback:", err, 1, true)
  end)

  it("a syntax error: the Lua message with file and line, exit 1", function()
    local _, err, code = h.run_job("local x = = 1\n")
    assert.are.equal(1, code)
    assert.matches("^wmrun: .-:1: unexpected symbol near '='", err)
  end)

  it("job scripts run with strict globals", function()
    local _, err, code = h.run_job("local y = undefined_name\n")
    assert.are.equal(1, code)
    assert.matches("undefined global 'undefined_name'", err)
  end)

  it("a missing data file: cannot open, exit 1", function()
    local _, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env()
env:read_lines("/nonexistent/x.csv"):print()
env:execute()
]])
    assert.are.equal(1, code)
    assert.matches("wmrun: cannot open '/nonexistent/x.csv': No such file or directory", err, 1, true)
    -- a data error names where it happened: no traceback of the execute call after it
    assert.is_nil(err:find("stack traceback", 1, true))
  end)

  it("a bad record stops the job naming the field, the record and the operator, without a traceback", function()
    local _, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({id = "a", ts = 1}, {id = "b"})
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :print()
env:execute()
]])
    assert.are.equal(1, code)
    assert.matches("timestamp field 'ts' is missing in record {\"id\":\"b\"}", err, 1, true)
    assert.matches("in operator 'timestamps/watermarks (", err, 1, true)
    assert.matches("while reading element 2 of from_elements", err, 1, true)
    assert.is_nil(err:find("stack traceback", 1, true))
  end)

  it("--watermark-interval overrides the job's setting", function()
    local job = 'local wm = require("wm"); print(wm.env{watermark_interval = "1s"}.watermark_interval)'
    local out = h.run_job(job, "--watermark-interval 0")
    assert.are.equal("0\n", out)
    out = h.run_job(job)
    assert.are.equal("1000\n", out)
  end)

  it("finds its library from any directory", function()
    local out, err, code = h.sh("cd / && " .. h.wmrun_path() .. " " .. h.root .. "/examples/a_tumbling_in_order.lua")
    assert.are.equal(0, code, err)
    assert.are.equal(h.read(h.root .. "/examples/expected/a_tumbling_in_order.expected"), out)
  end)

  it("--lua-path lets plain lua5.4 require the same library", function()
    local exports = h.wmrun("--lua-path")
    local out, err, code = h.sh(exports:gsub("\n", "; ") .. ' lua5.4 -e \'print(require("wm").version)\'')
    assert.are.equal(0, code, err)
    assert.matches("^%d+%.%d+%.%d+\n$", out)
  end)

  -- defect 12.6: the installed binary printed LUA_CPATH='PREFIX/bin/?.so'. The paths are
  -- taken from what the installed wmrun prints, not from where make install puts things.
  it("after make install PREFIX=..., the installed wmrun runs jobs and its --lua-path works", function()
    local tmp = h.tmpdir()
    local build = os.getenv("WM_BUILD") or "build"
    -- -o all: install what this test run uses, never rebuild it (with other flags); make and
    -- install run without the sanitizer runtime that `make asan` preloads for lua5.4
    local _, err, code = h.sh("env -u LD_PRELOAD make -s -o all -C '" .. h.root .. "' install PREFIX='" .. tmp
      .. "' BUILD=" .. build)
    assert.are.equal(0, code, err)
    local wmrun = tmp .. "/bin/wmrun"
    local exports, perr, pcode = h.sh("cd / && '" .. wmrun .. "' --lua-path")
    local out, jerr, jcode = h.sh("cd / && '" .. wmrun .. "' '" .. h.root .. "/examples/a_tumbling_in_order.lua'")
    local lout, lerr, lcode = h.sh("unset LUA_PATH LUA_CPATH; " .. exports:gsub("\n", "; ")
      .. " cd / && lua5.4 -e 'local wm = require(\"wm\"); print(wm.version); "
      .. "print(package.searchpath(\"wm.core\", package.cpath)); print(package.searchpath(\"wm\", package.path))'")
    h.sh("rm -rf '" .. tmp .. "'")
    assert.are.equal(0, pcode, perr)
    assert.are.equal(0, jcode, jerr)
    assert.are.equal(h.read(h.root .. "/examples/expected/a_tumbling_in_order.expected"), out)
    assert.are.equal(0, lcode, lerr)
    local version, core, lua = lout:match("^(%S+)\n(%S+)\n(%S+)\n$")
    assert.matches("^%d+%.%d+%.%d+$", version, 1, false, lout)
    -- both halves of the library come from the installed prefix, not from this tree
    assert.are.equal(tmp, core:sub(1, #tmp))
    assert.are.equal(tmp, lua:sub(1, #tmp))
  end)

  it("reads standard input with read_lines('-')", function()
    local out, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env()
env:read_lines("-"):map(function(l) return l:upper() end):print("up")
env:execute()
]], nil, "a\nb\r\nc")
    assert.are.equal(0, code, err)
    assert.are.equal("up> A\nup> B\nup> C\n", out)
  end)
end)
