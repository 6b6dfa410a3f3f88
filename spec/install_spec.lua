-- make install / uninstall (docs/install.md): each thing once, where wmrun and lua5.4 find it,
-- plus the man page, the docs and the examples; uninstall removes all of it.
local h = require("helper")
local q = h.shell_quote

local function make(args)
  local build = os.getenv("WM_BUILD") or "build"
  return h.sh_plain("make -s --no-print-directory -C " .. q(h.root) .. " BUILD=" .. q(build) .. " " .. args)
end

local function files(dir)
  return h.lines("cd " .. q(dir) .. " && find . -type f | sed 's|^\\./||' | sort")
end

describe("make install", function()
  local prefix, installed

  setup(function()
    prefix = h.tmpdir() .. "/prefix"
    local _, err, code = make("install PREFIX=" .. q(prefix))
    assert.are.equal(0, code, err)
    installed = files(prefix)
  end)

  teardown(function()
    os.execute("rm -rf " .. q(prefix))
  end)

  it("installs each Lua file once, in share/lua/5.4/wm, and the C module in lib/lua/5.4/wm", function()
    local expect = {}
    for _, f in ipairs(files(h.root .. "/lua")) do
      if f:match("%.lua$") then expect[#expect + 1] = "share/lua/5.4/" .. f end
    end
    local lua_files, seen = {}, {}
    for _, f in ipairs(installed) do
      if f:match("%.lua$") and not f:match("^share/doc/") then lua_files[#lua_files + 1] = f end
      local base = f:match("^share/lua/5%.4/(.*)$")
      if base then
        assert.is_nil(seen[base], base)
        seen[base] = true
      end
    end
    table.sort(expect)
    table.sort(lua_files)
    assert.are.same(expect, lua_files)
    local has = {}
    for _, f in ipairs(installed) do has[f] = true end
    assert.is_true(has["bin/wmrun"])
    assert.is_true(has["lib/lua/5.4/wm/core.so"])
    assert.is_true(has["share/man/man1/wmrun.1"])
    assert.is_true(has["share/doc/wmrun/README.md"])
    assert.is_true(has["share/doc/wmrun/docs/api.md"])
    assert.is_true(has["share/doc/wmrun/examples/a_tumbling_in_order.lua"])
    assert.is_true(has["share/doc/wmrun/examples/data/a_tumbling_in_order.csv"])
    for _, f in ipairs(installed) do assert.is_nil(f:match("^share/wmrun/"), f) end
  end)

  it("the installed wmrun runs an installed example with the installed library", function()
    local ex = prefix .. "/share/doc/wmrun/examples"
    local out, err, code = h.sh("cd " .. q(ex) .. " && " .. q(prefix .. "/bin/wmrun")
      .. " a_tumbling_in_order.lua")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(h.read(h.root .. "/examples/expected/a_tumbling_in_order.expected"), out)
  end)

  -- the timeline page's script is a file beside wm/timeline/init.lua (not a Lua module): it is
  -- installed, and the installed wmrun reads it from there into the page it draws
  it("installs the timeline page's script and the installed wmrun puts it into a page", function()
    local has = {}
    for _, f in ipairs(installed) do has[f] = true end
    assert.is_true(has["share/lua/5.4/wm/timeline/page.js"])
    local ex = prefix .. "/share/doc/wmrun/examples"
    local page = h.tmpdir() .. "/t.html"
    -- without LUA_PATH (make exports the source tree's): the installed library only
    local _, err, code = h.sh("cd " .. q(ex) .. " && env -u LUA_PATH -u LUA_CPATH "
      .. q(prefix .. "/bin/wmrun") .. " --timeline " .. q(page) .. " a_tumbling_in_order.lua")
    assert.are.equal(0, code, err)
    local js = h.read(h.root .. "/lua/wm/timeline/page.js")
    while js:match("^//") do js = js:gsub("^//[^\n]*\n", "", 1) end
    assert.is_truthy(h.read(page):find("<script>" .. js .. "</script>", 1, true))
    -- and it is the installed copy that is read: without it, no page
    os.remove(prefix .. "/share/lua/5.4/wm/timeline/page.js")
    local _, err2, code2 = h.sh("cd " .. q(ex) .. " && env -u LUA_PATH -u LUA_CPATH "
      .. q(prefix .. "/bin/wmrun") .. " --timeline " .. q(page) .. " a_tumbling_in_order.lua")
    assert.are_not.equal(0, code2)
    assert.is_truthy(err2:find("page.js", 1, true), err2)
    installed = files(prefix)
  end)

  it("lua5.4 requires wm from the installed tree", function()
    local lp = prefix .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua"
    local cp = prefix .. "/lib/lua/5.4/?.so"
    local out, err, code = h.sh("env LUA_PATH=" .. q(lp) .. " LUA_CPATH=" .. q(cp)
      .. " lua5.4 -e "
      .. q('local wm = require("wm"); print(wm.version, package.searchpath("wm.core", package.cpath))'))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(h.wmrun("--version"):match("^wmrun (%S+)") .. "\t" .. cp:gsub("%?", "wm/core") .. "\n", out)
  end)

  it("make uninstall removes every file it installed", function()
    local _, err, code = make("uninstall PREFIX=" .. q(prefix))
    assert.are.equal(0, code, err)
    assert.are.same({}, files(prefix))
  end)
end)
