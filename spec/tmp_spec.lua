-- The suite's temporary files (issue 12, defect 8): they all go into one directory of the
-- suite's own, which spec/run_all.sh removes at exit; nothing is left in /tmp.
local h = require("helper")

local function entries(dir)
  return h.lines("ls -A " .. h.shell_quote(dir))
end

describe("temporary files of the specs", function()
  it("are made inside the suite's own directory", function()
    local base = h.tmp_base()
    assert.are.equal("/" .. h.TMP_PREFIX, base:match("/[^/]+$"):sub(1, #h.TMP_PREFIX + 1))
    local env = os.getenv("WM_TEST_TMP")
    if env then assert.are.equal(env, base) end
    local f, d, w = h.tmpname(), h.tmpdir(), h.write_tmp("x", ".csv")
    for _, p in ipairs({f, d, w}) do
      assert.are.equal(base .. "/", p:sub(1, #base + 1))
    end
    assert.are_not.equal(f, h.tmpname())
    assert.are.equal("x", h.read(w))
    assert.is_true(os.execute("test -d " .. h.shell_quote(d)))
    os.remove(f)
    os.remove(w)
    os.execute("rm -rf " .. h.shell_quote(d))
  end)

  it("sh and run_job remove the files they use", function()
    local before = #entries(h.tmp_base())
    local out, err, code = h.sh("sh -c 'cat; echo e >&2'", "in\n")
    assert.are.same({"in\n", "e\n", 0}, {out, err, code})
    local _, _, c2 = h.run_job("print(1)")
    assert.are.equal(0, c2)
    assert.are.equal(before, #entries(h.tmp_base()))
  end)

  it("no spec makes temporary files past the helper (os.tmpname always writes /tmp/lua_*)", function()
    local bad = {}
    local p = assert(io.popen("ls " .. h.shell_quote(h.root .. "/spec") .. "/*.lua"))
    for path in p:lines() do
      if not path:match("/helper%.lua$") and not path:match("/tmp_spec%.lua$") then
        local n = 0
        for line in io.lines(path) do
          n = n + 1
          if line:match("os%.tmpname") or line:match("io%.tmpfile") or line:match("mktemp") then
            bad[#bad + 1] = path:match("[^/]+$") .. ":" .. n
          end
        end
      end
    end
    p:close()
    assert.are.same({}, bad)
  end)
end)
