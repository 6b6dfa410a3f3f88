-- The docs say what the code does (issue 26, item 10; docs/testing.md, "Runnable docs"): every
-- fenced block of docs/*.md (and README.md) marked `<!-- runnable -->` on the line before it
-- is run or checked, and every link to a section names a heading that exists.
--
-- A marked block's lines that start with `$ ` are commands, run with `sh` from the repository's
-- root (`build/wmrun` is the wmrun under test); the lines after a command, up to the next, are
-- its output (standard output, then standard error): a line `...` stands for any number of
-- lines, `...` inside a line for any text, everything else must match exactly. The command must
-- exit 0, or N with `<!-- runnable: exit N -->`. A marked block whose first line is
-- `-- path` (SQL, Lua) is an excerpt: its other lines stand in that file, one after another.
local h = require("helper")

local root = h.root

local function read_lines(text)
  local t = {}
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do t[#t + 1] = l end
  if t[#t] == "" then t[#t] = nil end
  return t
end

local function doc_files()
  local t = {}
  for _, l in ipairs(h.lines("cd " .. root .. " && ls docs/*.md README.md 2>/dev/null")) do t[#t + 1] = l end
  return t
end

-- The marked blocks of a file: {file, line (of the marker), exit, lines}.
local function marked_blocks(file)
  local lines = read_lines(h.read(root .. "/" .. file))
  local out, i = {}, 1
  while i <= #lines do
    local exit = lines[i]:match("^<!%-%- runnable%s*%-%->%s*$") and 0
    local n = lines[i]:match("^<!%-%- runnable: exit (%d+) %-%->%s*$")
    if n then exit = tonumber(n) end
    if exit then
      local fence = lines[i + 1] and lines[i + 1]:match("^(```+)")
      assert(fence, file .. ":" .. i .. ": the runnable marker is not followed by a fenced block")
      local b = {file = file, line = i, exit = exit, lines = {}}
      local j = i + 2
      while lines[j] and lines[j] ~= fence do
        b.lines[#b.lines + 1] = lines[j]
        j = j + 1
      end
      assert(lines[j], file .. ":" .. i .. ": the fenced block does not end")
      out[#out + 1] = b
      i = j + 1
    else
      i = i + 1
    end
  end
  return out
end

-- A line of expected output as a Lua pattern: `...` is any text.
local function line_pattern(l)
  local parts = {}
  for piece in (l .. "..."):gmatch("(.-)%.%.%.") do parts[#parts + 1] = piece:gsub("%p", "%%%0") end
  return "^" .. table.concat(parts, ".-") .. "$"
end

-- Whether lines got[gi..] match the patterns want[wi..] (`...` lines match any number).
local function match_lines(want, wi, got, gi, memo)
  local key = wi * 100003 + gi
  if memo[key] ~= nil then return memo[key] end
  local r
  if wi > #want then
    r = gi > #got
  elseif want[wi] == "..." then
    r = match_lines(want, wi + 1, got, gi, memo) or (gi <= #got and match_lines(want, wi, got, gi + 1, memo))
  else
    r = gi <= #got and got[gi]:match(line_pattern(want[wi])) ~= nil and match_lines(want, wi + 1, got, gi + 1, memo)
  end
  memo[key] = r
  return r
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs a block's commands, or checks an excerpt; returns nil or what is wrong.
local function check_block(b)
  local where = b.file .. ":" .. b.line
  local file = b.lines[1] and b.lines[1]:match("^%-%- (%S+%.%a+)$")
  if file and not b.lines[1]:match("^%$") then
    local text = h.read_or_empty(root .. "/" .. file)
    if text == "" then return where .. ": the excerpt names " .. file .. ", which does not exist" end
    local got = read_lines(text)
    local want = {table.unpack(b.lines, 2)}
    for s = 1, #got - #want + 1 do
      local all = true
      for k = 1, #want do if got[s + k - 1] ~= want[k] then all = false break end end
      if all then return nil end
    end
    return where .. ": the excerpt is not in " .. file
  end
  local cmds, cur = {}, nil
  for _, l in ipairs(b.lines) do
    local c = l:match("^%$ (.*)$")
    if c then
      cur = {cmd = c, want = {}}
      cmds[#cmds + 1] = cur
    elseif cur then
      cur.want[#cur.want + 1] = l
    else
      return where .. ": output before the first `$ ` command"
    end
  end
  if #cmds == 0 then return where .. ": a runnable block with neither a `$ ` command nor an excerpt" end
  for _, c in ipairs(cmds) do
    local cmd = c.cmd:gsub("^build/wmrun", h.wmrun_path()):gsub("([;&|] *)build/wmrun", "%1" .. h.wmrun_path())
    local out, err, code = h.sh("sh -c " .. q("cd " .. q(root) .. " && " .. cmd))
    if code ~= b.exit then
      return string.format("%s: `%s` exited %d (expected %d):\n%s%s", where, c.cmd, code, b.exit, out, err)
    end
    local got = read_lines(out)
    for _, l in ipairs(read_lines(err)) do got[#got + 1] = l end
    if #c.want > 0 and not match_lines(c.want, 1, got, 1, {}) then
      return string.format("%s: `%s` printed\n%s\nwhich does not match the block's\n%s", where, c.cmd,
        table.concat(got, "\n"), table.concat(c.want, "\n"))
    end
  end
  return nil
end

-- The anchor GitHub gives a heading.
local function anchor(heading)
  return (heading:lower():gsub("`", ""):gsub("[^%w%- _]", ""):gsub(" ", "-"))
end

describe("docs", function()
  local files = doc_files()

  it("finds the documents and their runnable blocks", function()
    assert.is_true(#files >= 10, table.concat(files, " "))
    local n = 0
    for _, f in ipairs(files) do n = n + #marked_blocks(f) end
    assert.is_true(n >= 4, "runnable blocks: " .. n)
  end)

  for _, f in ipairs(files) do
    for _, b in ipairs(marked_blocks(f)) do
      it("runnable block at " .. f .. ":" .. b.line .. " does what it says", function()
        local wrong = check_block(b)
        assert.is_nil(wrong, wrong)
      end)
    end
  end

  it("every link to a section names a heading of its page", function()
    local heads = {}
    for _, f in ipairs(files) do
      local set = {}
      local fenced = false
      for _, l in ipairs(read_lines(h.read(root .. "/" .. f))) do
        if l:match("^```") then fenced = not fenced end
        local hd = not fenced and l:match("^#+%s+(.-)%s*$")
        if hd then set[anchor(hd)] = true end
      end
      heads[f:match("[^/]+$")] = set
    end
    local bad = {}
    for _, f in ipairs(files) do
      local name = f:match("[^/]+$")
      for i, l in ipairs(read_lines(h.read(root .. "/" .. f))) do
        for target, a in l:gmatch("%]%(([%w_.%-]*)#([%w_%-]+)%)") do
          local page = target == "" and name or target:match("[^/]+$")
          if heads[page] and not heads[page][a] then bad[#bad + 1] = f .. ":" .. i .. ": #" .. a .. " in " .. page end
        end
      end
    end
    assert.are.same({}, bad)
  end)

  it('every `see "Section"` names a heading (of its page or another; a part of its text)', function()
    local all = {}
    for _, f in ipairs(files) do
      local fenced = false
      for _, l in ipairs(read_lines(h.read(root .. "/" .. f))) do
        if l:match("^```") then fenced = not fenced end
        local hd = not fenced and l:match("^#+%s+(.-)%s*$")
        if hd then all[hd:lower():gsub("`", "")] = true end
      end
    end
    local bad = {}
    for _, f in ipairs(files) do
      for i, l in ipairs(read_lines(h.read(root .. "/" .. f))) do
        for ref in l:gsub("`[^`]*`", ""):gmatch('[Ss]ee "([^"]+)"') do -- (not in inline code)
          local r, found = ref:lower():gsub("`", ""), false
          for hd in pairs(all) do if hd:find(r, 1, true) then found = true break end end
          if not found then bad[#bad + 1] = f .. ":" .. i .. ': see "' .. ref .. '"' end
        end
      end
    end
    assert.are.same({}, bad)
  end)

  -- The README's table of packages is what `make deps` installs: every package of the
  -- Makefile's DEBIAN_PKGS, and no other.
  it("README.md lists every Debian package make deps installs", function()
    local mk = h.read(root .. "/Makefile")
    local want, listed = {}, {}
    for line in mk:gmatch("[^\n]+") do
      local rest = line:match("^DEBIAN_PKGS%s*%+?=%s*(.*)$")
      if rest then
        for p in rest:gsub("\\$", ""):gmatch("%S+") do want[p] = true end
      end
    end
    -- continuation lines of the first assignment
    local first = mk:match("DEBIAN_PKGS%s*=%s*(.-[^\\])\n")
    for p in first:gsub("\\\n", " "):gmatch("[%w%.%-%+]+") do want[p] = true end
    local readme = h.read(root .. "/README.md")
    for row in readme:gmatch("\n| [^|]+ | (`[^\n]+`) |") do
      for p in row:gmatch("[%w%.%-%+]+") do listed[p] = true end
    end
    assert.is_true(next(want) ~= nil)
    local missing, extra = {}, {}
    for p in pairs(want) do if not listed[p] then missing[#missing + 1] = p end end
    for p in pairs(listed) do if not want[p] then extra[#extra + 1] = p end end
    table.sort(missing)
    table.sort(extra)
    assert.are.same({}, missing)
    assert.are.same({}, extra)
  end)

  it("the rockspec's licence is the one of LICENSE", function()
    local lic = h.read(root .. "/LICENSE")
    local rs = h.read(root .. "/wmrun-0.1.0-1.rockspec")
    assert.matches("^MIT License", lic)
    assert.matches('license = "MIT"', rs, 1, true)
  end)

  it("the matcher: `...` lines and `...` inside lines", function()
    assert.is_true(match_lines({"a", "...", "d"}, 1, {"a", "b", "c", "d"}, 1, {}))
    assert.is_true(match_lines({"...", "x (...) 2"}, 1, {"q", "x (job.lua:3) 2"}, 1, {}))
    assert.is_false(match_lines({"a", "d"}, 1, {"a", "b", "d"}, 1, {}))
    assert.is_false(match_lines({"a%"}, 1, {"ab"}, 1, {}))
    assert.is_false(match_lines({"a"}, 1, {"a", "extra"}, 1, {}))
  end)
end)
