-- Loads wmrun's Lua modules in a given order, in a fresh Lua state, and prints where every
-- method of every class (and every function of every module table) is defined, and every
-- assignment of a method that another module had already defined. Run by
-- spec/methods_spec.lua, once per order:
--
--   lua5.4 spec/methods_check.lua ROOT MODULE...
--
-- requires the MODULEs in that order, then every other module under ROOT/lua/wm (sorted).
-- Output, one line each:
--   def NAME KEY SOURCE:LINE    KEY of the class or module table NAME is that function
--   owner NAME KEY MODULE       ... set while MODULE was loading
--   again NAME KEY MODULE OWNER MODULE assigned KEY of NAME, which OWNER had defined
--   fail MODULE MESSAGE         MODULE failed to load
--
-- A class is a table whose __index is itself, found from the module tables through their
-- fields and their functions' upvalues; NAME is the first path that reaches it.
local root = assert(arg[1], "usage: methods_check.lua ROOT MODULE...")

local modules = {} -- every module under lua/wm, sorted
do
  local p = io.popen("cd '" .. root .. "/lua' && find wm -name '*.lua' | sort")
  for f in p:lines() do
    local m = f:gsub("/init%.lua$", ""):gsub("%.lua$", ""):gsub("/", ".")
    modules[#modules + 1] = m
  end
  p:close()
  table.sort(modules)
end

local skip = {[_G] = true, [package] = true, [package.loaded] = true, [string] = true, [table] = true,
  [math] = true, [io] = true, [os] = true, [debug] = true, [coroutine] = true, [utf8] = true}

-- The tables that hold methods: every class and every module table, by name.
local function tables()
  local names, order = {}, {}
  local seen = {}
  local queue = {}
  local loaded = {}
  for name, v in pairs(package.loaded) do
    if name:match("^wm") and name ~= "wm.core" and type(v) == "table" then loaded[#loaded + 1] = name end
  end
  table.sort(loaded)
  for _, name in ipairs(loaded) do
    local t = package.loaded[name]
    if not seen[t] then
      seen[t] = true
      queue[#queue + 1] = {t, name, 0}
      names[t] = name
      order[#order + 1] = t
    end
  end
  local i = 1
  while queue[i] do
    local v, path, depth = queue[i][1], queue[i][2], queue[i][3]
    i = i + 1
    if depth < 5 then
      local kids = {}
      if type(v) == "table" then
        for k, x in pairs(v) do
          if type(k) == "string" and (type(x) == "table" or type(x) == "function") then
            kids[#kids + 1] = {k, x}
          end
        end
        table.sort(kids, function(a, b) return a[1] < b[1] end)
        for j, kid in ipairs(kids) do kids[j] = {kid[2], path .. "." .. kid[1]} end
      else
        for u = 1, math.huge do
          local un, x = debug.getupvalue(v, u)
          if not un then break end
          if un ~= "_ENV" and (type(x) == "table" or type(x) == "function") then
            kids[#kids + 1] = {x, path .. "^" .. un}
          end
        end
      end
      for _, kid in ipairs(kids) do
        local x, p = kid[1], kid[2]
        if not seen[x] and not skip[x] then
          seen[x] = true
          queue[#queue + 1] = {x, p, depth + 1}
          if type(x) == "table" and rawget(x, "__index") == x then
            names[x] = p
            order[#order + 1] = x
          end
        end
      end
    end
  end
  return order, names
end

-- The same tables as tables() finds (a breadth-first walk reaches each value at its least
-- depth whatever order it takes the fields in), without their names: scan runs twice per
-- require, and neither sorting fields nor making paths is needed there.
local function method_tables()
  local order, seen, queue, depths = {}, {}, {}, {}
  for name, t in pairs(package.loaded) do
    if type(t) == "table" and name:match("^wm") and name ~= "wm.core" and not seen[t] then
      seen[t] = true
      queue[#queue + 1] = t
      depths[#depths + 1] = 0
      order[#order + 1] = t
    end
  end
  local i = 1
  while queue[i] do
    local v, depth = queue[i], depths[i]
    i = i + 1
    if depth < 5 then
      local kids, n = {}, 0
      if type(v) == "table" then
        for k, x in pairs(v) do
          if type(k) == "string" then n = n + 1; kids[n] = x end
        end
      else
        for u = 1, math.huge do
          local un, x = debug.getupvalue(v, u)
          if not un then break end
          if un ~= "_ENV" then n = n + 1; kids[n] = x end
        end
      end
      for j = 1, n do
        local x = kids[j]
        local tx = type(x)
        if (tx == "table" or tx == "function") and not seen[x] and not skip[x] then
          seen[x] = true
          queue[#queue + 1] = x
          depths[#depths + 1] = depth + 1
          if tx == "table" and rawget(x, "__index") == x then order[#order + 1] = x end
        end
      end
    end
  end
  return order
end

local snap, owner = {}, {}
local out, again = {}, {}

-- Attributes every function set in a method table since the last scan to module `by`.
local function scan(by)
  for _, t in ipairs(method_tables()) do
    local s = snap[t] or {}
    snap[t] = s
    owner[t] = owner[t] or {}
    for k, v in pairs(t) do
      if type(v) == "function" and type(k) == "string" then
        if s[k] == nil then
          owner[t][k] = by
        elseif s[k] ~= v then
          again[#again + 1] = {t, k, by, owner[t][k]}
          owner[t][k] = by
        end
        s[k] = v
      end
    end
  end
end

local stack = {}
local real_require = require
function require(name) -- luacheck: ignore 121 (the modules' require goes through this one)
  if package.loaded[name] ~= nil then return package.loaded[name] end
  scan(stack[#stack] or "(script)")
  stack[#stack + 1] = name
  local ok, r = pcall(real_require, name)
  scan(name)
  stack[#stack] = nil
  if not ok then error(r, 0) end
  return r
end

local function load(name)
  local ok, err = pcall(require, name)
  if not ok then out[#out + 1] = "fail " .. name .. " " .. tostring(err):gsub("\n", " ") end
end

for i = 2, #arg do load(arg[i]) end
for _, m in ipairs(modules) do load(m) end
scan("(script)")

-- named once every module is loaded: the same names whatever the order was
local order, names_of = tables()
for _, a in ipairs(again) do
  out[#out + 1] = string.format("again %s %s %s %s", names_of[a[1]] or "?", a[2], a[3], a[4])
end
for _, t in ipairs(order) do
  for k, v in pairs(t) do
    if type(v) == "function" and type(k) == "string" then
      local info = debug.getinfo(v, "S")
      local src = info.what == "C" and "C" or (info.short_src:gsub("^.*/lua/wm/", "wm/") .. ":" .. info.linedefined)
      out[#out + 1] = string.format("def %s %s %s", names_of[t], k, src)
      out[#out + 1] = string.format("owner %s %s %s", names_of[t], k, owner[t][k])
    end
  end
end
table.sort(out)
io.write(table.concat(out, "\n"), "\n")
