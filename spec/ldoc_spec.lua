-- The API reference (config.ld, `make ldoc`): LDoc builds it without a warning, and every public
-- function of wm (with wm.lab), wm.testing and wm.sql (the classes' methods found by walking
-- their tables) has an entry in it, so a function added without its `---` comment fails here.
local h = require("helper")
local wm = require("wm")

-- The entries of the generated pages, each with its HTML up to the next entry:
-- {["wm.windows"] = {tumbling = "<a name = ...", ...}, ...}.
local function entries(dir)
  local pages = {}
  local p = io.popen("ls " .. dir .. "/modules")
  for file in p:lines() do
    local mod = file:match("^(.*)%.html$")
    if mod then
      local names = {}
      local html = h.read(dir .. "/modules/" .. file)
      for start, name in html:gmatch('()<a name = "([^"]+)"') do
        local stop = html:find("<dt>", start, true) or #html
        names[name] = html:sub(start, stop)
      end
      pages[mod] = names
    end
  end
  p:close()
  return pages
end

-- The public functions of a table: string keys not starting with "_" (internal) or "__"
-- (metamethods), sorted.
local function public_functions(t)
  local names = {}
  for k, v in pairs(t) do
    if type(k) == "string" and type(v) == "function" and k:sub(1, 1) ~= "_" then names[#names + 1] = k end
  end
  table.sort(names)
  return names
end

describe("the API reference (LDoc)", function()
  local dir, out, err, code, pages

  setup(function()
    dir = h.tmpname() -- a fresh name in the suite's temporary space, made a directory
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    -- (not under make asan's LD_PRELOAD: the sanitizer would report the tools' own leaks)
    out, err, code = h.sh("cd " .. h.root .. " && env -u LD_PRELOAD ldoc --fatalwarnings -d " .. dir .. " .")
    pages = entries(dir)
  end)

  teardown(function()
    os.execute("rm -rf " .. dir)
  end)

  it("builds without a warning", function()
    assert.are.equal(0, code, out .. err)
    assert.are.equal("", err)
    for line in out:gmatch("[^\n]+") do
      assert.truthy(line:find("^reading configuration from ") or line:find("^output written to "), line)
    end
  end)

  -- Every name a class or module has that is missing from the reference ("Stream:foo",
  -- "wm.windows.bar"), or whose entry has no usage example ("... (no @usage)").
  local function missing(checks)
    local all = {}
    for _, names in pairs(pages) do for n, entry in pairs(names) do all[n] = entry end end
    local miss = {}
    for _, c in ipairs(checks) do
      for _, name in ipairs(public_functions(c.t)) do
        local entry
        if c.class then -- a method, or one declared Class.name(_self, ...) as its self is unused
          entry = all[c.class .. ":" .. name] or all[c.class .. "." .. name]
        else
          local page = pages[c.page] or {}
          entry = page[c.prefix and (c.prefix .. "." .. name) or name]
        end
        local full = (c.class and (c.class .. ":") or (c.page .. ".")) .. name
        if not entry then
          miss[#miss + 1] = full
        elseif not entry:find("<h3>Usage:</h3>", 1, true) then
          miss[#miss + 1] = full .. " (no @usage)"
        end
      end
    end
    return miss
  end

  it("has every public method of the classes of wm", function()
    local harness = wm.testing.harness(function(input) return input end)
    local tableapi = require("wm.sql.tableapi")
    local miss = missing{
      {class = "Env", t = wm.Env}, {class = "Stream", t = wm.Stream},
      {class = "KeyedStream", t = wm.KeyedStream}, {class = "WindowedStream", t = wm.WindowedStream},
      {class = "Sink", t = wm.Sink}, {class = "Strategy", t = wm.watermarks.Strategy},
      {class = "Harness", t = getmetatable(harness).__index}, {class = "Lab", t = wm.lab.Lab},
      {class = "Table", t = tableapi.Table}, {class = "GroupedTable", t = tableapi.GroupedTable},
      {class = "WindowedTable", t = tableapi.WindowedTable}, {class = "Window", t = tableapi.Window},
    }
    harness:close()
    assert.are.same({}, miss)
  end)

  it("has every public function of the modules of wm, wm.testing and wm.sql", function()
    local top = {}
    for k, v in pairs(wm) do if k ~= "core" then top[k] = v end end
    local miss = missing{
      {page = "wm.datastream", t = {thread = wm.thread, partition = wm.partition}},
      {page = "wm.base", t = {env = wm.env}},
      {page = "wm.watermarks", t = wm.watermarks}, {page = "wm.windows", t = wm.windows},
      {page = "wm.triggers", t = wm.triggers}, {page = "wm.evictors", t = wm.evictors},
      {page = "wm.format", t = wm.format}, {page = "wm.duration", t = wm.duration},
      {page = "wm.testing", t = wm.testing}, {page = "wm.sql", t = require("wm.sql")},
      {page = "wm.lab", t = wm.lab},
      {page = "wm.sql.tableapi", t = wm.table, prefix = "table"},
    }
    assert.are.same({}, miss)
    -- and nothing public at the top of wm beyond those
    local known = {env = true, thread = true, partition = true}
    local extra = {}
    for _, name in ipairs(public_functions(top)) do
      if not known[name] then extra[#extra + 1] = name end
    end
    assert.are.same({}, extra)
  end)
end)
