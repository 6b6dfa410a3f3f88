-- docs/architecture.md's dependency rules (spec/layers.lua): no loops between C files or Lua
-- modules, and no core/ file that reaches a layer above its own.
local layers = require("layers")
local helper = require("helper")

-- Violations that the architecture issue is removing, one by one. Each entry must still occur
-- (a fixed one is taken off this list), and nothing else may occur.
local KNOWN = {
}

describe("layers", function()
  local build = os.getenv("WM_BUILD") or "build"

  it("finds no dependency that docs/architecture.md forbids", function()
    local problems = layers.check(helper.root, build)
    local new, seen = {}, {}
    for _, p in ipairs(problems) do
      if KNOWN[p] then seen[p] = true else new[#new + 1] = p end
    end
    assert.are.same({}, new)
    local fixed = {}
    for p in pairs(KNOWN) do if not seen[p] then fixed[#fixed + 1] = p end end
    table.sort(fixed)
    assert.are.same({}, fixed) -- fixed: take it off KNOWN
  end)

  -- The problems layers.check finds in a tree of the given files ({path = text}).
  local function problems_of(files)
    local dir = helper.tmpdir()
    for path, text in pairs(files) do
      assert(os.execute("mkdir -p '" .. dir .. "/" .. path:match("^(.*)/") .. "'"))
      local f = assert(io.open(dir .. "/" .. path, "w"))
      f:write(text)
      f:close()
    end
    local problems = layers.check(dir, "build")
    os.execute("rm -rf '" .. dir .. "'")
    return table.concat(problems, "\n")
  end

  it("sees a loop and an upward include when there is one", function()
    local text = problems_of{
      ["core/base/wm_a.h"] = '#include "exec/wm_b.h"\n',
      ["core/exec/wm_b.h"] = '#include "base/wm_a.h"\n#include <lua.h>\n',
      ["lua/wm/init.lua"] = 'local x = require("wm.x")\n',
      ["lua/wm/x.lua"] = 'local wm = require("wm")\n',
    }
    assert.matches("C include loop: core/base/wm_a <%-> core/exec/wm_b", text)
    assert.matches("core/base/wm_a.h %(layer base%) includes core/exec/wm_b %(layer exec, above it%)", text)
    assert.matches("Lua header in core/: core/exec/wm_b.h includes lua.h", text)
    assert.matches("Lua require loop: wm <%-> wm.x", text)
  end)

  it("sees a binding file that includes one above it, and a Lua module that requires one above it", function()
    local text = problems_of{
      ["bindings/lwm_ops.c"] = '#include "lwm_graph.h"\n',
      ["bindings/lwm_graph.h"] = "\n",
      ["bindings/lwm_new.c"] = "\n",
      ["lua/wm/base.lua"] = 'local ds = require("wm.datastream")\n',
      ["lua/wm/datastream.lua"] = "\n",
      ["lua/wm/nowhere.lua"] = "\n",
    }
    assert.matches("bindings/lwm_ops.c includes bindings/lwm_graph %(bindings layer ops%): "
      .. "bindings/lwm_graph is in layer graph, above it", text)
    assert.matches("bindings/lwm_new: a binding file in no layer", text)
    assert.matches("lua/wm/base.lua %(wm.base, layer base%) requires wm.datastream "
      .. "%(layer datastream, above it%)", text)
    assert.matches("wm.nowhere: a Lua module in no layer", text)
  end)
end)
