-- Scale-out on NATS (issue 16, docs/connectors.md "Partitions", docs/scaleout.md): wm.partition
-- (NATS's partition() mapping function), read_nats on partition subjects (`subject = "ev.*.>"`,
-- `partition_count`, `partitions`), each test on a nats-server it starts (spec/services.lua).
local helper = require("helper")
local services = require("services")
local wm = require("wm")

local q = services.quote

-- Runs a job script given as text: wmrun [opts] script args; stdout, stderr, exit code.
local function job(text, args, opts)
  local p = helper.write_tmp(text, ".lua")
  local out, err, code = helper.wmrun((opts or "") .. " " .. q(p) .. " " .. (args or ""))
  os.remove(p)
  return out, err, code
end

local function sorted_lines(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  table.sort(t)
  return t
end

-- FNV-1a 32 written here from its definition (offset basis 2166136261, prime 16777619),
-- independently of the C code under test.
local function fnv1a32(s)
  local h = 2166136261
  for i = 1, #s do
    h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff
  end
  return h
end

describe("wm.partition", function()
  it("the FNV-1a written in this spec gives the published test vectors", function()
    assert.are.equal(0x811c9dc5, fnv1a32(""))
    assert.are.equal(0xe40c292c, fnv1a32("a"))
    assert.are.equal(0xbf9cf968, fnv1a32("foobar"))
  end)

  it("is FNV-1a 32 of the key's bytes modulo n", function()
    local keys = {"", "a", "k1", "k2", "hello", "sensor-17", "ünïcödé", "a\0b", string.rep("x", 300)}
    for i = 0, 255 do keys[#keys + 1] = string.char(i) .. "key" .. i end
    for _, n in ipairs{1, 2, 3, 6, 7, 64, 1000, 0x7fffffff} do
      for _, k in ipairs(keys) do
        assert.are.equal(fnv1a32(k) % n, wm.partition(k, n), string.format("key %q, n %d", k, n))
      end
    end
  end)

  it("takes a number as its text, as tostring gives it", function()
    assert.are.equal(fnv1a32("42") % 6, wm.partition(42, 6))
    assert.are.equal(fnv1a32("1.5") % 6, wm.partition(1.5, 6))
    assert.are.equal(fnv1a32("-7") % 10, wm.partition(-7, 10))
  end)

  it("names a bad argument as lauxlib does, at the caller's line", function()
    local ok, err = pcall(wm.partition, {}, 6)
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'partition' %(string or number expected, got table%)", err)
    for _, n in ipairs{0, -1, 1.5, "6", 0x80000000} do
      ok, err = pcall(wm.partition, "k", n)
      assert.is_false(ok)
      assert.matches("bad argument #2 to 'partition' %(the number of partitions must be an integer", err)
    end
    local _, e, code = job([[
local wm = require("wm")
print(wm.partition(nil, 3))]])
    assert.are_not.equal(0, code)
    assert.matches("%.lua:2: bad argument #1 to 'partition' %(string or number expected, got nil%)", e)
  end)

  it("agrees with a nats-server's own partition() subject mapping", function()
    local n = services.nats{config = 'mappings = { "in.*": "ev.{{partition(6,1)}}.{{wildcard(1)}}" }\n'}
    finally(function() n:stop() end)
    local keys = {}
    for i = 1, 200 do keys[i] = "key" .. i end
    keys[#keys + 1] = "ünïcödé"
    -- published on in.<key>: the server maps each to ev.<partition>.<key>, into the stream
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
local keys = {}
for k in arg[2]:gmatch("%S+") do keys[#keys + 1] = k end
env:from_elements(table.unpack(keys))
  :write_nats{url = arg[1], stream = "EV", subjects = {"ev.>"}, format = "text",
              subject = function(k) return "in." .. k end}
env:execute()]], q(n.url) .. " " .. q(table.concat(keys, " ")))
    assert.are.equal(0, code, err)
    local out
    out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = arg[1], stream = "EV", bounded = "latest", metadata = true}
  :map(function(m) return m.value .. " " .. m.subject end):print()
env:execute()]], q(n.url))
    assert.are.equal(0, code, err)
    local expected = {}
    for i, k in ipairs(keys) do expected[i] = k .. " ev." .. wm.partition(k, 6) .. "." .. k end
    table.sort(expected)
    assert.are.same(expected, sorted_lines(out))
    local seen = {}
    for _, k in ipairs(keys) do seen[wm.partition(k, 6)] = true end
    for p = 0, 5 do assert.is_true(seen[p], "partition " .. p .. " used") end
  end)
end)
