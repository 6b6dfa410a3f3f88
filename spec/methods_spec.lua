-- Methods defined once (issue 27, item 3): whatever the order in which the modules of the
-- library are required, every method of every class is the same function, and no module
-- assigns a method that another module has defined (extensions go through wm.base's hooks,
-- docs/architecture.md "Extensions"). Each order runs in a fresh Lua state
-- (spec/methods_check.lua in a lua5.4 process of its own).
local h = require("helper")
local root = h.root

-- The modules that define or extend methods of a class.
local MODULES = {"wm.stream", "wm.io", "wm.keyed", "wm.windowed", "wm.connectors", "wm.through",
  "wm.scaleout", "wm.lab.replay", "wm.watermarks", "wm.triggers", "wm.evictors", "wm.sql.tableapi",
  "wm.sql.planner", "wm.testing", "wm.lab", "wm.connect", "wm.window_join",
  "wm.interval_join", "wm.nexmark"}

local function run(order, extra_path)
  local cmd = "lua5.4 '" .. root .. "/spec/methods_check.lua' '" .. root .. "' " .. table.concat(order, " ")
  if extra_path then
    cmd = "LUA_PATH='" .. extra_path .. "/?.lua;'\"$LUA_PATH\" " .. cmd
  end
  local p = assert(io.popen(cmd .. " 2>&1"))
  local text = p:read("a")
  local ok, _, code = p:close()
  assert(ok, "methods_check.lua exited with " .. tostring(code) .. ":\n" .. text)
  return text
end

local function lines(text, prefix)
  local out = {}
  for l in text:gmatch("[^\n]+") do
    if l:sub(1, #prefix) == prefix then out[#out + 1] = l end
  end
  return out
end

-- Orders of MODULES in which every three modules come in each of their six orders (a
-- sequence covering array, built greedily from seeded random permutations), and the
-- listed order and its reverse.
local function orders()
  local n = #MODULES
  math.randomseed(27)
  local covered, missing = {}, n * (n - 1) * (n - 2)
  local function triples(p, mark)
    local c = 0
    for a = 1, n do
      for b = a + 1, n do
        for d = b + 1, n do
          local x, y, z = p[a], p[b], p[d]
          local key = x .. " " .. y .. " " .. z
          if not covered[key] then
            c = c + 1
            if mark then covered[key] = true end
          end
        end
      end
    end
    return c
  end
  local list = {}
  local function add(p)
    missing = missing - triples(p, true)
    list[#list + 1] = p
  end
  local ident, rev = {}, {}
  for i, m in ipairs(MODULES) do ident[i], rev[n + 1 - i] = m, m end
  add(ident)
  add(rev)
  while missing > 0 do
    local best, best_c
    for _ = 1, 40 do
      local p = {table.unpack(MODULES)}
      for i = n, 2, -1 do
        local j = math.random(i)
        p[i], p[j] = p[j], p[i]
      end
      local c = triples(p, false)
      if not best or c > best_c then best, best_c = p, c end
    end
    add(best)
  end
  return list, covered
end

describe("methods defined once", function()
  it("covers every order of every three modules", function()
    local list, covered = orders()
    local n = #MODULES
    local count = 0
    for _ in pairs(covered) do count = count + 1 end
    assert.are.equal(n * (n - 1) * (n - 2), count)
    assert.is_true(#list < 60, "too many orders: " .. #list)
  end)

  it("every method is the same function, defined by one module, in every order", function()
    local list = orders()
    local first, first_order
    for _, order in ipairs(list) do
      local text = run(order)
      assert.are.same({}, lines(text, "fail "), "a module failed to load")
      assert.are.same({}, lines(text, "again "),
        "a module assigned a method another module had defined (order: " .. table.concat(order, " ") .. ")")
      local defs = table.concat(lines(text, "def "), "\n") .. "\n" .. table.concat(lines(text, "owner "), "\n")
      if not first then
        first, first_order = defs, order
      elseif defs ~= first then
        -- the first line that differs, for the message
        local a, b = {}, {}
        for l in first:gmatch("[^\n]+") do a[#a + 1] = l end
        for l in defs:gmatch("[^\n]+") do b[#b + 1] = l end
        local i = 1
        while a[i] == b[i] do i = i + 1 end
        error(string.format("order %s gives %s where order %s gives %s", table.concat(order, " "),
          tostring(b[i]), table.concat(first_order, " "), tostring(a[i])))
      end
    end
    -- the classes were found, and their methods where they are defined
    for _, want in ipairs{
      "def wm.Env execute wm/base.lua:", "def wm.Env read_lines wm/io.lua:",
      "def wm.Env read_kafka wm/connectors.lua:", "def wm.Env execute_sql wm/sql/tableapi.lua:",
      "def wm.Stream key_by wm/stream.lua:", "def wm.Stream assign_timestamps_and_watermarks wm/stream.lua:",
      "def wm.Stream map wm/stream.lua:", "def wm.KeyedStream window wm/windowed.lua:",
      "def wm.WindowedStream sum wm/windowed.lua:", "def wm.Sink name wm/stream.lua:",
      "def wm.Stream connect wm/connect.lua:", "def wm.KeyedStream connect wm/connect.lua:",
      "def wm.watermarks.Strategy with_watermark_alignment wm/connectors.lua:",
      "def wm.sql.tableapi.Table select wm/sql/tableapi.lua:", "def wm.testing.Harness active wm/testing.lua:",
      "def wm.lab.Lab run wm/lab.lua:", "def wm.sql.plan.base.Planner ",
      "owner wm.Stream key_by wm.stream", "owner wm.Env execute wm.base",
      "owner wm.Stream assign_timestamps_and_watermarks wm.stream"} do
      assert.is_truthy(first:find("\n" .. want, 1, true) or first:sub(1, #want) == want,
        "missing: " .. want)
    end
  end)

  it("reports a module that assigns a method another module defined", function()
    -- the check itself can fail: a module that replaces Stream:map
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/wm_override.lua", "w"))
    f:write('local base = require("wm.base")\nrequire("wm.stream")\n'
      .. 'function base.Stream:map(fn) return fn end\nreturn {}\n')
    f:close()
    local text = run({"wm_override"}, dir)
    assert.are.same({"again wm.Stream map wm_override wm.stream"}, lines(text, "again "))
    h.rmdir(dir)
  end)
end)
