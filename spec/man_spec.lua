-- The man page (docs/wmrun.1.scd, built by make into build/wmrun.1): it renders without
-- warnings, and it documents every option `wmrun --help` lists.
local h = require("helper")
local q = h.shell_quote

local page = h.root .. "/" .. (os.getenv("WM_BUILD") or "build") .. "/wmrun.1"

local function render(extra)
  return h.sh_plain("env LC_ALL=C MANWIDTH=80 man " .. (extra or "") .. " -l " .. q(page))
end

describe("man wmrun", function()
  it("is built from docs/wmrun.1.scd and renders without warnings", function()
    local out, err, code = render("--warnings")
    assert.are.equal(0, code)
    assert.are.equal("", err)
    assert.matches("wmrun %- run event%-time stream%-processing jobs", out)
  end)

  it("documents every option of wmrun --help", function()
    local help, _, code = h.wmrun("--help")
    assert.are.equal(0, code)
    local text = render()
    local opts = {}
    for line in help:gmatch("[^\n]+") do
      local first = line:match("^%s+(%-%-?[%w][%w-]*)")
      if first then opts[#opts + 1] = first end
      for o in line:gmatch(",%s+(%-%-[%w][%w-]*)") do opts[#opts + 1] = o end
    end
    assert.is_true(#opts >= 10)
    local missing = {}
    for _, o in ipairs(opts) do
      -- an option heads its entry in OPTIONS, or stands in the synopsis
      local e = o:gsub("%-", "%%-")
      if not (text:find("\n       " .. e .. "[%s,]") or text:find(", " .. e .. "[%s\n]")) then
        missing[#missing + 1] = o
      end
    end
    assert.are.same({}, missing)
  end)
end)
