--- Window join and co-group (api.md "Two inputs"; semantics.md §10): Flink's `JoinedStreams`
-- and `CoGroupedStreams`. `a:join(b):where(ka):equal_to(kb):window(assigner):apply(fn)` runs
-- `fn(left, right)` for every pair of records of one key and one window; `a:co_group(b)...`
-- runs `fn(key, lefts, rights, out)` once per key and window holding a record of either side.
--
-- Built as Flink builds it (its TaggedUnion): each input's records are tagged in C with their
-- side and key (a row {s, k, r} that refers to the record, never a copy of it; the keys of
-- both inputs are checked to be of one type there), the two tagged streams are united, keyed
-- by the key and windowed by the window operator, whose window function (C, then one Lua call
-- per pair or per co-group) splits a window's records by side (bindings/lwm_wjoin.c). So every
-- assigner (sessions merge across both sides), allowed lateness (a late firing joins the
-- window's whole contents again), triggers, checkpoints, parallelism and threads work as for
-- any window. See docs/joins.md.
-- @module wm.window_join
local base = require("wm.base")

local Stream, KeyedStream, WindowedStream = base.Stream, base.KeyedStream, base.WindowedStream

local M = {}

--- Two streams to join or co-group (`a:join(b)`, `a:co_group(b)`), then `:where(key_a)`,
-- `:equal_to(key_b)`, `:window(assigner)`, optionally `:allowed_lateness(d)` and
-- `:trigger(t)`, and `:apply(fn)`.
-- @type JoinedStreams
local JoinedStreams = {}
JoinedStreams.__index = JoinedStreams
M.JoinedStreams = JoinedStreams

local function start(self, other, what)
  local mt = getmetatable(other)
  if mt == KeyedStream then
    error(what .. ": expected a stream that is not keyed (the keys come from :where and :equal_to), "
      .. "got a keyed stream", 3)
  end
  if mt ~= Stream then
    error(what .. ": expected a stream, got " .. (mt and "another object" or type(other)), 3)
  end
  if other.env ~= self.env then
    error(what .. ": the other stream belongs to another environment (made by another wm.env); "
      .. "streams of one job come from one env", 3)
  end
  return setmetatable({env = self.env, a = self, b = other, what = what, at = base.where()}, JoinedStreams)
end

--- Joins this stream with `other` in windows (Flink's `DataStream.join`): an inner join,
-- `fn(left, right)` for every pair of records of one key in one window.
-- @tparam Stream other the second input
-- @treturn JoinedStreams
-- @usage orders:join(payments):where("id"):equal_to("order")
--   :window(wm.windows.tumbling("1min")):apply(function(o, p) return {id = o.id, paid = p.amount} end)
function Stream:join(other) return start(self, other, "join") end

--- Co-groups this stream with `other` in windows (Flink's `DataStream.coGroup`):
-- `fn(key, lefts, rights, out)` once per key and window holding a record of either input.
-- @tparam Stream other the second input
-- @treturn JoinedStreams
-- @usage orders:co_group(payments):where("id"):equal_to("order"):window(wm.windows.tumbling("1min"))
--   :apply(function(key, os, ps, out) if #ps == 0 then out({unpaid = key}) end end)
function Stream:co_group(other) return start(self, other, "co_group") end

-- A key argument: {fields = {...}} or {fn = f}, as key_by takes it.
local function key_spec(k, call)
  if type(k) == "function" then return {fn = k} end
  if type(k) == "string" then return {fields = {k}} end
  if type(k) == "table" and getmetatable(k) == nil and #k > 0 then
    for i, f in ipairs(k) do
      if type(f) ~= "string" then error(call .. ": field " .. i .. " of the key list is not a string", 3) end
    end
    return {fields = {table.unpack(k)}}
  end
  error(call .. ": expected a function, a field name or a list of field names, got " .. type(k), 3)
end

--- The first input's key (Flink's `where`): a field name, a list of field names (a
-- composite key) or a function `fn(record) -> key`, as `key_by` takes.
-- @param k the key
-- @treturn JoinedStreams this object
-- @usage a:join(b):where("id")
function JoinedStreams:where(k)
  if self.ka then error("where: this " .. self.what .. " has its first key already", 2) end
  self.ka = key_spec(k, "where")
  return self
end

--- The second input's key (Flink's `equalTo`), as `where` takes it. A record of the first
-- input meets the records of the second whose key is equal to its own.
-- @param k the key
-- @treturn JoinedStreams this object
-- @usage a:join(b):where("id"):equal_to("order_id")
function JoinedStreams:equal_to(k)
  if not self.ka then error("equal_to: call :where(key) first (" .. self.what .. "(b):where(k1):equal_to(k2))", 2) end
  if self.kb then error("equal_to: this " .. self.what .. " has its second key already", 2) end
  local kb = key_spec(k, "equal_to")
  local na, nb = self.ka.fields and #self.ka.fields, kb.fields and #kb.fields
  if na and nb and (na > 1 or nb > 1) and na ~= nb then
    error("equal_to: the keys of the two inputs have different types: a composite key of " .. na
      .. " field(s) in :where and of " .. nb .. " in :equal_to", 2)
  end
  local ca, cb = (na or 1) > 1, (nb or 1) > 1
  if ca ~= cb then
    error("equal_to: the keys of the two inputs have different types: a composite key (a list of "
      .. "fields) in " .. (ca and ":where" or ":equal_to") .. ", a single value in "
      .. (ca and ":equal_to" or ":where"), 2)
  end
  self.kb = kb
  return self
end

local function strip(msg) return (tostring(msg):gsub("^[^:\n]*:%d+: ", "")) end

--- The window assigner both inputs' records are assigned with (any of wm.windows; session
-- windows merge across both inputs).
-- @tparam table assigner e.g. `wm.windows.tumbling("5s")`
-- @treturn JoinedStreams this object
-- @usage a:join(b):where("id"):equal_to("id"):window(wm.windows.session("30s"))
function JoinedStreams:window(assigner)
  if not self.kb then
    error("window: call :where(key_a):equal_to(key_b) first (" .. self.what
      .. "(b):where(k1):equal_to(k2):window(assigner))", 2)
  end
  if self.ws then error("window: this " .. self.what .. " has its window already", 2) end
  if type(assigner) ~= "table" or not assigner.kind or getmetatable(assigner) == WindowedStream then
    error("window: expected a window assigner from wm.windows, got " .. type(assigner), 2)
  end
  if assigner.kind == "count" then
    error("window: count windows count the records of one stream; a " .. self.what
      .. " takes a time window (tumbling, sliding, session) or global() with a trigger", 2)
  end
  -- a windowed stream that holds the settings (its checks are the window's)
  self.ws = setmetatable({assigner = assigner, lateness = 0}, WindowedStream)
  return self
end

local function setting(self, method, call, ...)
  if not self.ws then
    error(call .. ": call :window(assigner) first (" .. self.what .. "(b):where(k1):equal_to(k2):window(w):"
      .. call .. "(...))", 3)
  end
  local ok, err = pcall(WindowedStream[method], self.ws, ...)
  if not ok then error(strip(err), 3) end
  return self
end

--- Allowed lateness: a window is kept until the watermark passes its end plus `d`; a record
-- that comes late but within it fires the window again, joining everything it holds (as
-- Flink). Records later still are dropped and counted (`late_records_dropped`; no side
-- output, as Flink's joins have none).
-- @tparam integer|string d a duration (>= 0)
-- @treturn JoinedStreams this object
-- @usage a:join(b):where("id"):equal_to("id"):window(w):allowed_lateness("2s")
function JoinedStreams:allowed_lateness(d) return setting(self, "allowed_lateness", "allowed_lateness", d) end

--- Replaces the window's default trigger with one from wm.triggers (it sees the records of
-- both inputs: `count(n)` counts both).
-- @tparam table t a trigger
-- @treturn JoinedStreams this object
-- @usage a:join(b):where("id"):equal_to("id"):window(wm.windows.global()):trigger(wm.triggers.count(4))
function JoinedStreams:trigger(t) return setting(self, "trigger", "trigger", t) end

--- Adds an evictor from wm.evictors (Flink's `evictor`): `count(n)` or `time(d)`, which count
-- and keep the records of both inputs alike. (A custom evictor would see the tagged records:
-- not offered.)
-- @tparam table e an evictor
-- @treturn JoinedStreams this object
-- @usage a:join(b):where("id"):equal_to("id"):window(wm.windows.global())
--   :trigger(wm.triggers.count(10)):evictor(wm.evictors.count(4))
function JoinedStreams:evictor(e)
  if type(e) == "table" and e.kind == "custom" then
    error("evictor: a " .. self.what .. " takes wm.evictors.count or wm.evictors.time (a custom "
      .. "evictor would see the join's tagged records)", 2)
  end
  return setting(self, "evictor", "evictor", e)
end

--- The function the windows' records meet in. A join: `fn(left, right) -> value` for every
-- pair of one key in one window (a `nil` result emits nothing); a co-group:
-- `fn(key, lefts, rights, out, window)` once per key and window, `out(value)` any number of
-- times, `window` the window fired (`start`, `stop`, `max_timestamp`).
-- Results carry the window's max timestamp. The order: a window's records of each input in
-- the order they came (semantics.md §10; a session window that merged holds the earlier
-- session's records first).
-- @tparam function fn the join or co-group function
-- @treturn Stream the results
-- @usage a:join(b):where("id"):equal_to("id"):window(wm.windows.tumbling("5s"))
--   :apply(function(l, r) return {id = l.id, l = l.v, r = r.v} end)
function JoinedStreams:apply(fn)
  if not self.ws then
    error("apply: a " .. self.what .. " needs its keys and a window first: "
      .. self.what .. "(b):where(key_a):equal_to(key_b):window(assigner):apply(fn)"
      .. (self.kb and "" or self.ka and " (:equal_to is missing)" or " (:where and :equal_to are missing)")
      .. " (Flink's JoinedStreams has no default window)", 2)
  end
  base.check_fn(fn, "apply")
  if self.applied then error("apply: this " .. self.what .. " has its function already", 2) end
  self.applied = true
  local env, where, what = self.env, self.at, self.what
  local a = self.ws.assigner
  if a.gap_fn then -- a dynamic session gap reads the record, not its tag {s, k, r}
    local gap_fn, copy = a.gap_fn, {}
    for k, v in pairs(a) do copy[k] = v end
    copy.gap_fn = function(t) return gap_fn(t.r) end
    a = setmetatable(copy, getmetatable(a))
  end
  local check = {} -- both inputs' tag operators check their keys against one first key (C)
  local function tag(s, key, side)
    local node = env:_node("join_tag", {s.node}, {key = key, side = side, what = what, at = where,
      check = check, needs_ts = (a.kind ~= "global" and not a.processing_time) and 1 or 0,
      name = what .. " (" .. (side == 1 and "first" or "second") .. " input)"})
    node.where = where
    return base.stream(env, node)
  end
  local u = tag(self.a, self.ka, 1):union(tag(self.b, self.kb, 2))
  u.node.where = where
  local node = env:_node("window", {u.node}, {
    key = {fields = {"k"}}, assigner = a, lateness = self.ws.lateness, trigger = self.ws.trigger_spec,
    evictor = self.ws.evictor_spec,
    fn_kind = what, fn = fn,
    name = a.kind .. (a.processing_time and "_processing" or "") .. " window " .. what})
  node.where = where
  return base.stream(env, node)
end

return M
