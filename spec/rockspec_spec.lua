-- The rockspec (wmrun-<version>-1.rockspec): its version is wmrun's, it lists every C and Lua
-- file of the library, `luarocks lint` accepts it, and `luarocks make` into a tree of its own
-- gives a library that plain lua5.4 requires and runs a job with.
local h = require("helper")
local q = h.shell_quote

local version = (h.wmrun("--version")):match("^wmrun (%S+)")
local name = "wmrun-" .. tostring(version) .. "-1.rockspec"
local path = h.root .. "/" .. name

-- luarocks runs without the sanitizer preload of `make asan` (h.sh_plain; it is not what is
-- tested) and with a HOME of its own (its caches stay in the temporary directory), in the
-- folder `cwd` (default: the temporary HOME)
local function luarocks(home, args, cwd)
  return h.sh_plain("cd " .. q(cwd or home) .. " && HOME=" .. q(home) .. " luarocks --lua-version=5.4 " .. args)
end

local function ls(pattern)
  return h.lines("cd " .. q(h.root) .. " && ls " .. pattern)
end

describe("the rockspec", function()
  it("is named after the version wmrun --version prints", function()
    assert.is_string(version)
    local spec = {}
    assert(loadfile(path, "t", spec))()
    assert.are.equal("wmrun", spec.package)
    assert.are.equal(version .. "-1", spec.version)
  end)

  it("lists every C file of wm.core and every Lua module", function()
    local spec = {}
    assert(loadfile(path, "t", spec))()
    local mods = spec.build.modules
    local srcs = {}
    for _, f in ipairs(ls("core/*/*.c bindings/*.c")) do
      if f ~= "bindings/wmrun.c" then srcs[#srcs + 1] = f end
    end
    local listed = {table.unpack(mods["wm.core"].sources)}
    table.sort(srcs)
    table.sort(listed)
    assert.are.same(srcs, listed)
    local want, got = {}, {}
    for _, f in ipairs(h.lines("cd " .. q(h.root) .. " && find lua/wm -name '*.lua' | sort")) do
      want[f:sub(5, -5):gsub("/init$", ""):gsub("/", ".")] = f
    end
    for m, f in pairs(mods) do
      if m ~= "wm.core" then got[m] = f end
    end
    assert.are.same(want, got)
  end)

  it("passes luarocks lint", function()
    local out, err, code = luarocks(h.tmpdir(), "lint " .. q(path))
    assert.are.equal(0, code, out .. err)
  end)

  it("builds with luarocks make into a tree that lua5.4 requires wm from", function()
    local dir = h.tmpdir()
    -- a copy of the sources: luarocks' builtin backend writes objects next to them, in the
    -- folder it runs in (not the rockspec's): it runs in the copy, and the source tree gets
    -- no object file
    local _, err, code = h.sh_plain("cd " .. q(h.root) .. " && cp -R core bindings lua " .. q(name)
      .. " " .. q(dir))
    assert.are.equal(0, code, err)
    local objects = "ls core/*/*.o bindings/*.o 2>/dev/null"
    local before = h.lines("cd " .. q(h.root) .. " && " .. objects)
    local tree = dir .. "/tree"
    local out
    -- CFLAGS without -O2: the rockspec's sources, defines, libraries and modules are what is
    -- checked, not the compiler's optimizer (the Makefile builds the optimized library), and
    -- compiling every file unoptimized takes a third of the CPU time
    out, err, code = luarocks(dir, "make --deps-mode=none --tree " .. q(tree) .. " " .. q(name)
      .. " CFLAGS='-O0 -fPIC' 2>&1")
    assert.are.equal(0, code, out .. err)
    assert.are.same(before, h.lines("cd " .. q(h.root) .. " && " .. objects))
    assert.is_true(#h.lines("cd " .. q(dir) .. " && " .. objects) > 0, "the objects are in the copy")
    local script = string.format([[
package.path = %q .. "/share/lua/5.4/?.lua;" .. %q .. "/share/lua/5.4/?/init.lua;" .. package.path
package.cpath = %q .. "/lib/lua/5.4/?.so;" .. package.cpath
local wm = require("wm")
assert(package.searchpath("wm.core", package.cpath):find(%q, 1, true) == 1)
local env = wm.env{watermark_interval = 0}
local out = env:from_elements(1, 2, 3):map(function(x) return x * 10 end):collect()
env:execute()
-- the timeline's page script is installed beside wm.timeline and found there
local page = require("wm.timeline").render({{title = "t", arrivals = 0, keys = {}, records = {},
  lates = {}, marks = {}, windows = {}, series = {}, stats = {records = 0, late_dropped = 0,
  late_side = 0, firings = 0, late_firings = 0, cleanups = 0, records_shown = 0,
  mean_firing_delay = 0, delay_samples = 0}}}, {html = true})
assert(page:find("<script>window.onerror=", 1, true) and page:find("(function(){", 1, true), "no page script")
print(wm.version, table.concat(out, ","))
]], tree, tree, tree, tree)
    local f = assert(io.open(dir .. "/check.lua", "w"))
    f:write(script)
    f:close()
    out, err, code = h.sh_plain("cd " .. q(dir) .. " && env -u LUA_PATH -u LUA_CPATH lua5.4 check.lua")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(version .. "\t10,20,30\n", out)
    os.execute("rm -rf " .. q(dir))
  end)
end)
