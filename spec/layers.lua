-- The dependency rules of docs/architecture.md, checked from the sources themselves.
--
--   lua5.4 spec/layers.lua [ROOT [BUILD]]   prints every violation, exits 1 if there is one
--   require("layers").check(root, build)    returns the list of violations (for the spec)
-- BUILD (default build) holds the object files, read with nm for the call graph.
--
-- A module is a C file pair (core/time/wm_timer.c + .h is one module) or a Lua module.
-- Rules:
--   1. no two modules depend on each other in a loop (C #include "..." between our own files,
--      Lua require between our own modules);
--   2. a core/ file includes only files of its own layer or of a layer below it
--      (LAYERS lists them bottom first), and never a bindings/ file or a Lua header;
--   3. a bindings/ file includes and calls only files of its own layer or below
--      (BINDING_LAYERS), and a Lua module requires only modules of its own layer or below
--      (LUA_LAYERS); a file or module in no layer is a problem too.
local M = {}

M.LAYERS = { "base", "time", "graph", "ops", "io", "state", "exec", "timeline" }

-- The bindings' order (docs/architecture.md), bottom first: a binding file includes or calls
-- only files of its own layer or below. `lwm` is lwm.h, the bridge's header.
M.BINDING_LAYERS = {
  {"states", {"lwm_state", "lwm_alloc", "lwm_testenv"}},
  {"bridge", {"lwm", "lwm_bridge", "lwm_escape"}},
  {"readers", {"lwm_codec", "lwm_report", "lwm_timeline"}},
  {"ops", {"lwm_ops"}},
  {"plan", {"lwm_plan"}},
  {"builders", {"lwm_io", "lwm_window", "lwm_sqlagg", "lwm_sqlrank", "lwm_wjoin", "lwm_join", "lwm_time", "lwm_keyed",
                "lwm_conn", "lwm_through", "lwm_rexpr", "lwm_sqllookup"}},
  {"graph", {"lwm_graph"}},
  {"runs", {"lwm_ckpt", "lwm_harness", "lwm_replay", "lwm_mt", "lwm_metrics", "lwm_task", "lwm_sigwatch",
            "lwm_replay_data", "lwm_lab_measure"}},
  {"top", {"lwm_core", "wmrun"}},
}

-- The Lua modules' order (docs/architecture.md), bottom first, as patterns on module names
-- (the first that matches places a module): a module requires only modules of its own layer
-- or below.
M.LUA_LAYERS = {
  {"leaves", {"^wm%.duration$", "^wm%.format$", "^wm%.json$", "^wm%.timeline$", "^wm%.timeline%.", "^wm%.lab%.plot$",
              "^wm%.windows$", "^wm%.watermarks$", "^wm%.evictors$", "^wm%.uipage$"}},
  {"base", {"^wm%.base$"}},
  {"areas", {"^wm%.stream$", "^wm%.io$", "^wm%.keyed$", "^wm%.windowed$", "^wm%.triggers$",
             "^wm%.connect$", "^wm%.window_join$",
             "^wm%.interval_join$", "^wm%.nexmark$"}},
  {"extensions", {"^wm%.connectors$", "^wm%.through$", "^wm%.scaleout$", "^wm%.lab%.replay$"}},
  {"datastream", {"^wm%.datastream$"}},
  {"sql", {"^wm%.sql$", "^wm%.sql%."}},
  {"tools", {"^wm%.testing$", "^wm%.lab$"}},
  {"facade", {"^wm$"}},
}

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

local function binding_rank()
  local rank = {}
  for i, l in ipairs(M.BINDING_LAYERS) do
    for _, f in ipairs(l[2]) do rank["bindings/" .. f] = i end
  end
  return rank
end

local function lua_rank(mod)
  for i, l in ipairs(M.LUA_LAYERS) do
    for _, pat in ipairs(l[2]) do
      if mod:match(pat) then return i end
    end
  end
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function list(root, pattern)
  local p = io.popen("cd '" .. root .. "' && find " .. pattern .. " -type f 2>/dev/null | sort")
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

-- C: node = path without extension; edges from #include "x" resolved against -Icore and the
-- including file's folder.
local function c_graph(root)
  local files = {}
  for _, dir in ipairs({ "core", "bindings" }) do
    for _, f in ipairs(list(root, dir .. " -name '*.[ch]'")) do files[#files + 1] = f end
  end
  local exists = {}
  for _, f in ipairs(files) do exists[f] = true end
  local edges, lua_headers = {}, {}
  for _, f in ipairs(files) do
    local node = f:gsub("%.[ch]$", "")
    edges[node] = edges[node] or {}
    local src = read(root .. "/" .. f) or ""
    local folder = f:match("^(.*)/[^/]*$")
    for inc in src:gmatch('#%s*include%s*"([^"]+)"') do
      local target
      for _, cand in ipairs({ folder .. "/" .. inc, "core/" .. inc }) do
        local norm = cand
        repeat
          local n
          norm, n = norm:gsub("[^/]+/%.%./", "", 1)
        until n == 0
        if exists[norm] then target = norm break end
      end
      if target then
        local tnode = target:gsub("%.[ch]$", "")
        if tnode ~= node then edges[node][tnode] = f end
      end
    end
    if f:match("^core/") then
      for inc in src:gmatch('#%s*include%s*[<"]([^>"]+)[>"]') do
        if inc:match("^lua") or inc:match("lauxlib") then lua_headers[#lua_headers + 1] = f .. " includes " .. inc end
      end
    end
  end
  return edges, lua_headers
end

-- Calls: node = object file; an edge from A to B when A uses a symbol B defines (nm). This sees
-- the dependencies that a header does not show (a declaration repeated, an extern).
local function link_graph(root, build)
  local defs, uses = {}, {}
  local objects, node_of = {}, {}
  for _, o in ipairs(list(root, build .. "/core " .. build .. "/bindings -name '*.o'")) do
    local node = o:gsub("^" .. build:gsub("%p", "%%%0") .. "/", ""):gsub("%.o$", "")
    if read(root .. "/" .. node .. ".c") then -- (else stale: its source is gone)
      uses[node] = {}
      objects[#objects + 1] = "'" .. o .. "'"
      node_of[o] = node
    end
  end
  -- one nm for all of them (a process per object costs some 40 ms of CPU each); -A starts
  -- each line with the object's name, in the order given
  if #objects > 0 then
    local p = io.popen("cd '" .. root .. "' && nm -A " .. table.concat(objects, " ") .. " 2>/dev/null")
    for line in p:lines() do
      local o, rest = line:match("^(.-%.o):(.*)$")
      local node = o and node_of[o]
      local kind, sym
      if node then kind, sym = rest:match("^%s*%x*%s+(%a)%s+(%S+)$") end
      if kind == "U" then uses[node][sym] = true
      elseif kind and kind:match("[TDBR]") then defs[sym] = node end
    end
    p:close()
  end
  local edges = {}
  for node, syms in pairs(uses) do
    edges[node] = {}
    for sym in pairs(syms) do -- keeps the smallest symbol name per edge, for stable messages
      local d = defs[sym]
      if d and d ~= node and (not edges[node][d] or sym < edges[node][d]) then edges[node][d] = sym end
    end
  end
  for node, ts in pairs(edges) do
    for d, sym in pairs(ts) do ts[d] = node .. ".c uses " .. sym end
  end
  return edges
end

local function lua_graph(root)
  local edges = {}
  for _, f in ipairs(list(root, "lua -name '*.lua'")) do
    local mod = f:gsub("^lua/", ""):gsub("/init%.lua$", ""):gsub("%.lua$", ""):gsub("/", ".")
    edges[mod] = edges[mod] or {}
    local src = read(root .. "/" .. f) or ""
    for req in src:gmatch('require%s*%(?%s*["\']([%w_%.]+)["\']') do
      if req:match("^wm") and req ~= mod and req ~= "wm.core" then edges[mod][req] = f end
    end
  end
  return edges
end

-- Tarjan's strongly connected components: every component of more than one node is a loop.
local function loops(edges)
  local index, low, onstack, stack, out, n = {}, {}, {}, {}, {}, 0
  local names = {}
  for k in pairs(edges) do names[#names + 1] = k end
  table.sort(names)
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1] = v
    onstack[v] = true
    local succ = {}
    for w in pairs(edges[v] or {}) do succ[#succ + 1] = w end
    table.sort(succ)
    for _, w in ipairs(succ) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif onstack[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        onstack[w] = nil
        comp[#comp + 1] = w
      until w == v
      if #comp > 1 then
        table.sort(comp)
        out[#out + 1] = comp
      end
    end
  end
  for _, v in ipairs(names) do if not index[v] then visit(v) end end
  return out
end

function M.check(root, build)
  root = root or "."
  build = build or "build"
  local problems = {}
  local cedges, lua_headers = c_graph(root)
  for _, p in ipairs(lua_headers) do problems[#problems + 1] = "Lua header in core/: " .. p end
  for _, comp in ipairs(loops(cedges)) do
    problems[#problems + 1] = "C include loop: " .. table.concat(comp, " <-> ")
  end
  local rank = {}
  for i, l in ipairs(M.LAYERS) do rank[l] = i end
  local nodes = {}
  for node in pairs(cedges) do nodes[#nodes + 1] = node end
  table.sort(nodes)
  for _, node in ipairs(nodes) do
    local layer = node:match("^core/([^/]+)/")
    if node:match("^core/") and not (layer and rank[layer]) then
      problems[#problems + 1] = node .. ": core/ files live in a layer folder (" ..
        table.concat(M.LAYERS, ", ") .. ")"
    elseif layer then
      local targets = {}
      for t in pairs(cedges[node]) do targets[#targets + 1] = t end
      table.sort(targets)
      for _, t in ipairs(targets) do
        local tl = t:match("^core/([^/]+)/")
        if not tl then
          problems[#problems + 1] = cedges[node][t] .. " includes " .. t .. " from outside core/"
        elseif rank[tl] and rank[tl] > rank[layer] then
          problems[#problems + 1] = cedges[node][t] .. " (layer " .. layer .. ") includes " .. t ..
            " (layer " .. tl .. ", above it)"
        end
      end
    end
  end
  local ledges = link_graph(root, build)
  for _, comp in ipairs(loops(ledges)) do
    problems[#problems + 1] = "C call loop: " .. table.concat(comp, " <-> ")
  end
  for node, ts in pairs(ledges) do
    local layer = node:match("^core/([^/]+)/")
    for t, why in pairs(ts) do
      local tl = t:match("^core/([^/]+)/")
      if layer and not tl then
        problems[#problems + 1] = why .. ", defined outside core/ (" .. t .. ")"
      elseif layer and rank[tl] and rank[layer] and rank[tl] > rank[layer] then
        problems[#problems + 1] = why .. " (layer " .. layer .. "), defined in " .. t
          .. " (layer " .. tl .. ", above it)"
      end
    end
  end
  -- the bindings' order, over includes and calls alike
  local brank = binding_rank()
  local function bname(n) return M.BINDING_LAYERS[brank[n]][1] end
  for _, g in ipairs({cedges, ledges}) do
    for _, node in ipairs(sorted_keys(g)) do
      local binding = node:match("^bindings/") ~= nil -- (core/ is checked above)
      if binding and not brank[node] then
        problems[#problems + 1] = node .. ": a binding file in no layer of spec/layers.lua's BINDING_LAYERS"
      elseif binding then
        for _, t in ipairs(sorted_keys(g[node])) do
          if brank[t] and brank[t] > brank[node] then
            local why = g[node][t]
            if not why:find(" uses ", 1, true) then why = why .. " includes " .. t end
            problems[#problems + 1] = why .. " (bindings layer " .. bname(node) .. "): " .. t
              .. " is in layer " .. bname(t) .. ", above it"
          end
        end
      end
    end
  end
  local lg = lua_graph(root)
  for _, comp in ipairs(loops(lg)) do
    problems[#problems + 1] = "Lua require loop: " .. table.concat(comp, " <-> ")
  end
  for _, m in ipairs(sorted_keys(lg)) do
    local r = lua_rank(m)
    if not r then
      problems[#problems + 1] = m .. ": a Lua module in no layer of spec/layers.lua's LUA_LAYERS"
    else
      for _, t in ipairs(sorted_keys(lg[m])) do
        local tr = lua_rank(t)
        if tr and tr > r then
          problems[#problems + 1] = lg[m][t] .. " (" .. m .. ", layer " .. M.LUA_LAYERS[r][1] .. ") requires "
            .. t .. " (layer " .. M.LUA_LAYERS[tr][1] .. ", above it)"
        end
      end
    end
  end
  return problems
end

if not pcall(debug.getlocal, 4, 1) then -- run as a script
  local problems = M.check(arg and arg[1] or ".", arg and arg[2] or "build")
  for _, p in ipairs(problems) do print(p) end
  os.exit(#problems == 0 and 0 or 1)
end

return M
