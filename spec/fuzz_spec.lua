-- Bugs the fuzz targets found (spec/fuzz/, docs/fuzzing.md), each kept as a test here or in
-- spec/c (the C ones), and the fuzzing setup itself: each target has a seed corpus.
local h = require("helper")

-- The Lua targets' checks are plain Lua functions: every seed (the fuzz finds included) is
-- replayed through them here, without clang.
describe("fuzz seeds through the Lua targets", function()
  for _, name in ipairs({"sql", "json"}) do
    it(name .. ": every seed passes spec/fuzz/" .. name .. ".lua", function()
      local check = dofile(h.root .. "/spec/fuzz/" .. name .. ".lua")
      local p = assert(io.popen("ls " .. h.shell_quote(h.root .. "/spec/fuzz/corpus/" .. name)))
      local n = 0
      for f in p:lines() do
        local ok, err = pcall(check, h.read(h.root .. "/spec/fuzz/corpus/" .. name .. "/" .. f))
        assert(ok, f .. ": " .. tostring(err))
        n = n + 1
      end
      p:close()
      assert.is_true(n > 0)
    end)
  end

  it("sql: the nesting find is an SQL error with a position", function()
    local sql = require("wm.sql")
    local text = h.read(h.root .. "/spec/fuzz/corpus/sql/crash-nested-parens.sql")
    local ok, err = pcall(sql.plan, text, {name = "f.sql"})
    assert.is_false(ok)
    assert.matches("^f%.sql:%d+:%d+: ", tostring(err))
  end)
end)

describe("fuzz targets", function()
  it("each target has its source and a seed corpus", function()
    local mk = h.read(h.root .. "/Makefile")
    local names = {}
    for list in mk:gmatch("\nFUZZ_[CL][UA]*%s*=%s*([^\n]+)") do
      for n in list:gmatch("%S+") do names[#names + 1] = n end
    end
    assert.are.same({"csv", "duration", "codec", "window", "ckpt", "rexpr", "sql", "json"}, names)
    for _, n in ipairs(names) do
      local _, _, code = h.sh("test -f " .. h.root .. "/spec/fuzz/fuzz_" .. n .. ".c -o -f "
        .. h.root .. "/spec/fuzz/" .. n .. ".lua")
      assert.are.equal(0, code, n)
      local p = assert(io.popen("ls " .. h.root .. "/spec/fuzz/corpus/" .. n .. " | wc -l"))
      local count = tonumber(p:read("a"))
      p:close()
      assert.is_true(count > 0, n)
    end
  end)
end)
