--- Table connectors and formats: where a table's rows come from and go to.
-- Sources: 'filesystem' (a file; 'path' relative to the script's folder), 'stdin', 'socket'
-- ('hostname', 'port'). Sinks: 'print' ('print-identifier'), 'filesystem', 'blackhole'.
-- Both: 'kafka' and 'nats' (wm.sql.connector_logs).
-- Formats: 'csv' ('csv.field-delimiter', 'csv.ignore-parse-errors', 'csv.null-literal',
-- 'csv.allow-comments') and 'json' ('json.ignore-parse-errors').
--
-- A source is read_lines + a flat_map that parses each line into a row (and computes the
-- computed columns), then assign_timestamps_and_watermarks when the table has a WATERMARK.
-- @module wm.sql.connectors
local wm = require("wm.datastream") -- not the facade `wm`, which loads the Table API
local expr = require("wm.sql.expr")
local values = require("wm.sql.values")
local errors = require("wm.sql.errors")
local cexpr = require("wm.sql.cexpr")
local prune = require("wm.sql.plan.prune")
-- Connectors defined in other modules: name -> {options = fn(key) -> bool, check = fn(p, t),
-- source = fn(p, t, env) -> lines, label, sink = fn(p, t, lines)} (the formats stay here).
local EXTRA = {kafka = require("wm.sql.connector_logs").kafka, nats = require("wm.sql.connector_logs").nats}
-- 'nexmark': a generator in C whose rows need no format (wm.sql.connector_nexmark)
local NEXMARK = require("wm.sql.connector_nexmark")

local M = {}
local check_writable, base_watermark_strategy
local FS_PARTITIONED = require("wm.sql.connector_fs_partitioned")

local KNOWN = {
  connector = true, path = true, format = true, hostname = true, port = true,
  ["csv.field-delimiter"] = true, ["csv.ignore-parse-errors"] = true, ["csv.null-literal"] = true,
  ["csv.allow-comments"] = true, ["json.ignore-parse-errors"] = true, ["print-identifier"] = true,
  ["source.monitor-interval"] = true, ["scan.watermark.idle-timeout"] = true,
  ["lookup.join.cache.ttl"] = true, -- (a lookup join's table: wm.sql.plan.temporal_join)
  ["source.split-by-bytes"] = true, -- wmrun's: the filesystem source read in byte ranges
}
local SOURCES = {filesystem = true, stdin = true, socket = true}
local SINKS = {filesystem = true, print = true, blackhole = true, stdout = true}

local function bool_opt(p, t, key)
  local v = t.props[key]
  if v == nil then return false end
  if v:lower() == "true" then return true end
  if v:lower() == "false" then return false end
  p:err(t.props_pos[key], "option '%s' must be 'true' or 'false', got '%s'", key, v)
end

--- Checks a table's WITH options at CREATE TABLE.
function M.check(p, t)
  local props, pos = t.props, t.props_pos
  local c = props.connector
  if c == "nexmark" then return NEXMARK.check(p, t) end
  local ext = EXTRA[c]
  for k in pairs(props) do
    if not KNOWN[k] and not (ext and ext.options(k)) and not (t.partitioned and FS_PARTITIONED.OPTIONS[k]) then
      p:err(pos[k], "unknown option '%s' for a table%s", k, FS_PARTITIONED.OPTIONS[k]
        and " (it is an option of a table PARTITIONED BY (...))" or "")
    end
  end
  if not c then p:err(t.pos, "table '%s' needs 'connector' in its WITH options", t.name) end
  if not SOURCES[c] and not SINKS[c] and not ext then
    p:err(pos.connector, "unknown connector '%s' (filesystem, stdin, socket, kafka, nats, nexmark, print, "
      .. "blackhole)", c)
  end
  if ext then ext.check(p, t) end
  t.sink_only = not SOURCES[c] and not ext
  if c == "filesystem" and not props.path then p:err(pos.connector, "the filesystem connector needs 'path'") end
  if t.partitioned then
    FS_PARTITIONED.check(p, t, function(key, value, vpos) return p:duration_option(key, value, vpos) end)
  end
  if c == "socket" and (not props.hostname or not props.port) then
    p:err(pos.connector, "the socket connector needs 'hostname' and 'port'")
  end
  local needs_format = c == "filesystem" or c == "stdin" or c == "socket" or ext
  if needs_format then
    local f = props.format
    if not f then p:err(pos.connector, "connector '%s' needs 'format' ('csv' or 'json')", c) end
    if f ~= "csv" and f ~= "json" then p:err(pos.format, "unknown format '%s' ('csv' or 'json')", f) end
  end
  local d = props["csv.field-delimiter"]
  if d then
    if d == "\\t" then d = "\t" end
    if #d ~= 1 then p:err(pos["csv.field-delimiter"], "'csv.field-delimiter' must be one character, got '%s'", d) end
    t.delimiter = d
  end
  local idle = props["scan.watermark.idle-timeout"]
  if idle then
    if not SOURCES[c] and not ext then
      p:err(pos["scan.watermark.idle-timeout"], "'scan.watermark.idle-timeout' is an option of a source table, "
        .. "and connector '%s' only writes", c)
    end
    t.idle_ms = p:duration_option("scan.watermark.idle-timeout", idle, pos["scan.watermark.idle-timeout"])
  end
  t.ignore_errors = bool_opt(p, t, "csv.ignore-parse-errors") or bool_opt(p, t, "json.ignore-parse-errors")
  t.allow_comments = bool_opt(p, t, "csv.allow-comments")
  t.split_bytes = bool_opt(p, t, "source.split-by-bytes")
  if t.split_bytes and c ~= "filesystem" then
    p:err(pos["source.split-by-bytes"], "'source.split-by-bytes' is an option of a filesystem source, not of "
      .. "connector '%s'", c)
  end
  if SOURCES[c] or ext then M.fast_path(t) end
end

-- parse_csv's type for each SQL column type it can parse in C.
local CSV_TYPES = {STRING = "string", INT = "integer", BIGINT = "integer", DOUBLE = "number", BOOLEAN = "boolean"}

-- A computed column that is only another name for a physical column: `c AS col` or
-- `c AS TO_TIMESTAMP_LTZ(col, 3)` over an INT/BIGINT column (epoch ms are the timestamp's value).
local function alias_of(t, e)
  local target
  if e.tag == "col" and not e.qual then
    target = e.name
  elseif e.tag == "call" and e.name == "TO_TIMESTAMP_LTZ" and #e.args == 2 and e.args[1].tag == "col"
      and not e.args[1].qual and e.args[2].tag == "lit" and e.args[2].value == 3 then
    target = e.args[1].name
    local c = t.byname[target]
    if not c or (c.type ~= "INT" and c.type ~= "BIGINT") then return nil end
  else
    return nil
  end
  local c = t.byname[target]
  if c and c.expr == nil then return c end
  return nil
end

--- Decides whether a CSV table is read by parse_csv in C (typed C rows, no Lua per line):
-- format csv without 'csv.null-literal' or 'csv.allow-comments', every physical column of a
-- type parse_csv has. Sets `t.csv_spec` (parse_csv's columns), `t.post` (true when a Lua map
-- must still compute columns or turn DOUBLE values into floats), and on the columns
-- `field` (the row field holding a column that is an alias) and `nonnull` (never NULL:
-- STRING columns, where an empty field is '', and NOT NULL ones).
function M.fast_path(t)
  local props = t.props
  if props.format ~= "csv" or props["csv.null-literal"] or t.allow_comments then return end
  local spec = {}
  for i, c in ipairs(t.physical) do
    local ty = CSV_TYPES[c.type]
    if not ty then return end
    local optional = not c.not_null and ty ~= "string"
    spec[i] = c.name .. ":" .. ty .. (optional and "?" or "")
    if c.type == "DOUBLE" then t.post = true end
  end
  for _, c in ipairs(t.physical) do c.nonnull = c.not_null or c.type == "STRING" end
  for _, c in ipairs(t.computed) do
    local a = alias_of(t, c.expr)
    if a then
      c.field, c.nonnull = a.name, a.nonnull
    else
      t.post = true
    end
  end
  t.csv_spec = spec
end

--- Projection pushdown: the physical columns of table t that the statement being planned
-- (p.current_query) cannot use, for the CSV decoder to skip (parse_csv's `skip`); nil when
-- every column may be used or no statement is being planned. `needed`, when the scan's
-- reader was pruned (wm.sql.plan.prune), is the set of names (lowercase) that reader uses,
-- false for all; without it, conservative: a column counts as used when its name (any case)
-- is any identifier or string anywhere in the statement, in a view whose name is such a
-- string (and the views that one names); a `*` anywhere keeps every column. Either way the
-- table's WATERMARK, its primary key, and the computed columns that count as used bring the
-- columns they read.
-- The names (lowercase) a scan's reader can use, as M.unused finds them; nil for all.
-- `read_fields`: a computed column read as a field of the rows (`c.field`, the nexmark
-- connector's dateTime) brings nothing else.
local function used_names(p, t, needed, read_fields)
  if needed == false then return nil end
  local q = p.current_query
  if not q and not needed then return nil end
  local views = {}
  for name, v in pairs(p.views or {}) do views[name:lower()] = v end
  local words, seen, star = {}, {}, false
  local function walk(x)
    if type(x) == "string" then
      local w = x:lower()
      words[w] = true
      local v = views[w]
      if v and not seen[v] then
        seen[v] = true
        walk(v.query)
      end
    elseif type(x) == "table" and not seen[x] then
      seen[x] = true
      if x.tag == "star" then star = true end
      for k, v in pairs(x) do
        walk(k)
        walk(v)
      end
    end
  end
  if needed then
    for w in pairs(needed) do words[w] = true end
    views = {} -- (the reader's names are columns: its views were pruned on their own)
  else
    walk(q)
    if star then return nil end
  end
  if t.watermark then walk(t.watermark) end
  for _, k in ipairs(t.pkey or {}) do walk(k) end
  local grew = true
  while grew do -- computed columns that are used bring the columns they read
    grew = false
    for _, c in ipairs(t.computed) do
      if words[c.name:lower()] and not seen[c] and not (read_fields and c.field) then
        seen[c] = true
        walk(c.expr)
        grew = true
      end
    end
  end
  return words
end

function M.unused(p, t, needed)
  local words = used_names(p, t, needed)
  if not words then return nil end
  local skip = {}
  for _, c in ipairs(t.physical) do
    if not words[c.name:lower()] then skip[#skip + 1] = c.name end
  end
  if #skip == 0 then return nil end
  return skip
end

--- Projection pushdown into the nexmark generator: env:nexmark's `omit` (the fields of the
-- person, auction and bid rows that the reader of a scan cannot use, by the same rule as
-- M.unused, a field counting as used when its name is), or nil. Only a scan whose reader
-- was pruned (`needed`) omits anything.
function M.nexmark_omit(p, t, needed)
  if needed == nil then return nil end
  local words = used_names(p, t, needed, true)
  if not words then return nil end
  local omit, any = {}, false
  for _, kind in ipairs({"person", "auction", "bid"}) do
    if not words[kind] then
      omit[kind], any = true, true
    else
      local list = {}
      for _, f in ipairs(NEXMARK.FIELDS[kind]) do
        if not words[f:lower()] then list[#list + 1] = f end
      end
      if #list > 0 then omit[kind], any = list, true end
    end
  end
  return any and omit or nil
end

local function resolve_path(p, path)
  if path == "-" or path:sub(1, 1) == "/" then return path end
  local dir = p.src.dir
  if not dir or dir == "" or dir == "." then return path end
  return dir .. "/" .. path
end

-- Splits a CSV line (RFC 4180 quoting with '"').
local function split_csv(line, delim)
  if not line:find('"', 1, true) then
    local out, start = {}, 1
    while true do
      local i = line:find(delim, start, true)
      if not i then out[#out + 1] = line:sub(start) break end
      out[#out + 1] = line:sub(start, i - 1)
      start = i + 1
    end
    return out
  end
  local out, i, n = {}, 1, #line
  while true do
    if line:sub(i, i) == '"' then
      local buf, j = {}, i + 1
      while true do
        local q = line:find('"', j, true)
        if not q then return nil, "unterminated quote" end
        buf[#buf + 1] = line:sub(j, q - 1)
        if line:sub(q + 1, q + 1) == '"' then
          buf[#buf + 1] = '"'
          j = q + 2
        else
          j = q + 1
          break
        end
      end
      out[#out + 1] = table.concat(buf)
      if j > n then return out end
      if line:sub(j, j) ~= delim then return nil, "text after a closing quote" end
      i = j + 1
    else
      local k = line:find(delim, i, true)
      if not k then out[#out + 1] = line:sub(i) return out end
      out[#out + 1] = line:sub(i, k - 1)
      i = k + 1
    end
    if i > n then out[#out + 1] = "" return out end
  end
end
M.split_csv = split_csv

-- The function that parses one line into a row: returns the row, or nil and a message.
-- `skip`: the names of columns no one reads (connectors.unused): absent from the rows, so
-- that what keeps rows (a join's state) keeps less; they are still checked (a value of the
-- wrong type is an error, as without pruning; the C CSV decoder, parse_csv, does not decode them).
local function line_parser(t, skip)
  local phys = t.physical
  local n = #phys
  local skipped = {}
  for _, name in ipairs(skip or {}) do skipped[name] = true end
  local null_literal = t.props["csv.null-literal"]
  if t.props.format == "json" then
    local cjson = require("cjson")
    local jnull = cjson.null
    return function(line)
      local ok, obj = pcall(cjson.decode, line)
      if not ok or type(obj) ~= "table" then return nil, "not a JSON object" end
      local r = {}
      for i = 1, n do
        local c = phys[i]
        local v = obj[c.name]
        if v ~= nil and v ~= jnull then
          local ty = c.type
          if ty == "STRING" then
            if type(v) == "table" then v = cjson.encode(v) else v = tostring(v) end
          elseif type(v) == "string" then
            local x, why = values.parse(v, ty)
            if x == nil then return nil, string.format("field '%s' (%s): '%s' is %s", c.name, expr.show(ty), v, why) end
            v = x
          elseif ty == "INT" or ty == "BIGINT" then
            if math.type(v) ~= "integer" then
              v = math.tointeger(v)
              if not v then return nil, string.format("field '%s' (%s) is not an integer", c.name, ty) end
            end
          elseif ty == "DOUBLE" then
            if type(v) ~= "number" then return nil, string.format("field '%s' (DOUBLE) is not a number", c.name) end
            v = v + 0.0
          elseif ty == "BOOLEAN" then
            if type(v) ~= "boolean" then return nil, string.format("field '%s' (BOOLEAN) is not a boolean", c.name) end
          elseif type(v) ~= "number" then
            return nil, string.format("field '%s' (%s) has the wrong type", c.name, expr.show(ty))
          end
          if not skipped[c.name] then r[c.name] = v end
        elseif c.not_null then
          return nil, string.format("field '%s' is NOT NULL but missing", c.name)
        end
      end
      return r
    end
  end
  local delim = t.delimiter or ","
  local parse = values.parse
  return function(line)
    local f, why = split_csv(line, delim)
    if not f then return nil, why end
    if #f ~= n then return nil, string.format("%d fields, the table has %d columns", #f, n) end
    local r = {}
    for i = 1, n do
      local c, text = phys[i], f[i]
      if text == null_literal or (text == "" and c.type ~= "STRING") then
        if c.not_null then return nil, string.format("column '%s' is NOT NULL but empty", c.name) end
      else
        local v, err = parse(text, c.type)
        if v == nil then
          return nil, string.format("column '%s' (%s): '%s' is %s", c.name, expr.show(c.type), text, err)
        end
        if not skipped[c.name] then r[c.name] = v end
      end
    end
    return r
  end
end

-- Computed columns: one compiled function that adds them to a row.
local function computed_fn(p, t, skip_aliases)
  if #t.computed == 0 then return nil end
  local scope = p:row_scope(t.cols)
  scope.proctime_ok = true -- `pt AS PROCTIME()`: the wall clock (values.runtime.proctime)
  local lines = {}
  for _, c in ipairs(t.computed) do
    if not (skip_aliases and c.field) then
      local s = expr.compile(c.expr, scope)
      lines[#lines + 1] = string.format("r[%q] = %s", c.name, s)
    end
  end
  if #lines == 0 then return nil end
  local l = errors.line_col(p.src.text, t.pos)
  return expr.load("function(r) " .. table.concat(lines, "; ") .. " return r end", p.src.name .. ":" .. l)
end

-- The watermark strategy for `WATERMARK FOR rt AS <expr>`. Flink SQL emits the expression's
-- value itself (no "- 1"): for `rt - INTERVAL 'd'` that is the built-in bounded generator in
-- C with a bound of d - 1 ms (it emits max - bound - 1 = max - d); any other expression runs
-- as a Lua generator that emits the largest value of the expression seen so far.
local function watermark_strategy(p, t)
  local s = base_watermark_strategy(p, t)
  -- idleness (Flink's 'scan.watermark.idle-timeout' of the table, else the job's
  -- 'table.exec.source.idle-timeout'; 0 or unset: never idle): a source (or a partition of a
  -- Kafka/NATS table) without rows for that long stops holding back the watermark
  local ms = t.idle_ms
  if ms == nil then
    local v = p.settings["table.exec.source.idle-timeout"]
    if v then ms = p:duration_option("table.exec.source.idle-timeout", v, p.settings._pos[
      "table.exec.source.idle-timeout"]) end
  end
  if ms and ms > 0 then s = s:with_idleness(ms) end
  return s
end

function base_watermark_strategy(p, t)
  local w = t.watermark
  local e = w.expr
  local rt = w.column
  local field = t.byname[rt].field or rt   -- the row field that holds the rowtime
  if e.tag == "bin" and e.op == "-" and e[1].tag == "col" and e[1].name == rt and e[2].tag == "interval"
      and e[2].ms and e[2].ms >= 1 then
    return wm.watermarks.bounded_out_of_orderness(e[2].ms - 1):with_timestamp_field(field)
  end
  local scope = p:row_scope(t.cols)
  local s = expr.compile(e, scope)
  local l = errors.line_col(p.src.text, w.pos)
  local f = expr.load("function(r) return " .. s .. " end", p.src.name .. ":" .. l)
  -- its state (the largest value, the last watermark) is in fields of the generator, which
  -- its snapshot and restore methods checkpoint
  return wm.watermarks.for_generator(function()
    return {
      cur = math.mininteger, last = math.mininteger,
      on_event = function(self, r)
        local v = f(r)
        if v ~= nil and v > self.cur then self.cur = v end
      end,
      on_periodic_emit = function(self, out)
        if self.cur > self.last then
          self.last = self.cur
          out:emit_watermark(self.cur)
        end
      end,
      snapshot = function(self) return {cur = self.cur, last = self.last} end,
      restore = function(self, saved) self.cur, self.last = saved.cur, saved.last end,
    }
  end):with_timestamp_field(field)
end

-- The Lua step after parse_csv, when one is needed: DOUBLE values as floats, and the
-- computed columns that are not aliases.
local function post_fn(p, t)
  local doubles = {}
  for _, c in ipairs(t.physical) do
    if c.type == "DOUBLE" then
      doubles[#doubles + 1] = string.format("local v = r[%q] if v then r[%q] = v + 0.0 end", c.name, c.name)
    end
  end
  local lines = {}
  local scope = p:row_scope(t.cols)
  scope.proctime_ok = true -- `pt AS PROCTIME()`: the wall clock (values.runtime.proctime)
  for _, c in ipairs(t.computed) do
    if not c.field then
      lines[#lines + 1] = string.format("r[%q] = %s", c.name, (expr.compile(c.expr, scope)))
    end
  end
  local l = errors.line_col(p.src.text, t.pos)
  return expr.load("function(r) " .. table.concat(doubles, " ") .. " " .. table.concat(lines, "; ")
    .. " return r end", p.src.name .. ":" .. l)
end

--- The stream of rows of a source table.
function M.source(p, t, env, needed)
  local props = t.props
  local c = props.connector
  local lines
  if c == "nexmark" then
    local omit = M.nexmark_omit(p, t, needed)
    if needed ~= nil then
      local said = {}
      for _, kind in ipairs({"person", "auction", "bid"}) do
        local o = omit and omit[kind]
        if o then said[#said + 1] = kind .. (o == true and "" or "." .. table.concat(o, "/")) end
      end
      prune.log("scan " .. t.name .. " omits " .. table.concat(said, ", "))
    end
    local rows = NEXMARK.source(p, t, env, omit)
    -- the computed columns that are not aliases of a field of the rows (Flink's dateTime is one)
    local computed = computed_fn(p, t, true)
    if computed then rows = rows:map(computed):name("computed columns (" .. t.name .. ")") end
    if t.watermark then
      rows = rows:assign_timestamps_and_watermarks(watermark_strategy(p, t)):name("watermarks (" .. t.name .. ")")
    end
    return rows
  end
  if c == "filesystem" then
    local path = resolve_path(p, props.path)
    local f = io.open(path, "r")
    if not f then p:err(t.props_pos.path, "cannot open '%s' (table '%s')", path, t.name) end
    f:close()
    -- 'source.split-by-bytes': at parallelism n, n readers of the file's byte ranges, every
    -- line read once, each part parsed on its own thread (docs/parallelism.md "A file read in
    -- parts"); the parts' rows arrive in any interleaving. Without it one reader, in file
    -- order (as Flink's CSV format, which does not split a file)
    lines = env:read_lines(path, t.split_bytes and {parallel = true} or nil)
  elseif c == "stdin" then
    lines = env:read_lines("-")
  elseif c == "socket" then
    if not env.socket_lines then
      p:err(t.props_pos.connector, "the socket connector needs env:socket_lines, which this build does not have yet")
    end
    lines = env:socket_lines(props.hostname, math.tointeger(tonumber(props.port)))
  elseif EXTRA[c] then
    lines = EXTRA[c].source(p, t, env)
  end
  local rows
  if t.csv_spec then
    local spec = {table.unpack(t.csv_spec)}
    spec.sep = t.delimiter or ","
    spec.on_error = t.ignore_errors and "skip" or "fail"
    spec.skip = M.unused(p, t, needed)
    if needed ~= nil then
      prune.log("scan " .. t.name .. " skips " .. table.concat(spec.skip or {}, ", "))
    end
    rows = lines:parse_csv(spec):name("parse csv (" .. t.name .. ")")
    if t.post then
      rows = cexpr.try_post(rows, p, t, spec.skip)
        or rows:map(post_fn(p, t)):name("computed columns (" .. t.name .. ")")
    end
    if t.watermark then
      rows = rows:assign_timestamps_and_watermarks(watermark_strategy(p, t)):name("watermarks (" .. t.name .. ")")
    end
    return rows
  end
  -- (a scan whose reader was pruned decodes only what it uses, wm.sql.plan.prune)
  local skip = needed ~= nil and M.unused(p, t, needed) or nil
  if needed ~= nil then prune.log("scan " .. t.name .. " skips " .. table.concat(skip or {}, ", ")) end
  local parse = line_parser(t, skip)
  local computed = computed_fn(p, t)
  local ignore, comments = t.ignore_errors, t.allow_comments
  -- the line's position (file and line, a Kafka partition and offset) is the engine's: it
  -- follows the record to any instance and is checkpointed with the source, so a message
  -- names it as "while reading f.csv:2" (a count kept here would restart at a restore)
  local tname = t.name
  local ddl = p.src.name .. ":" .. errors.line_col(p.src.text, t.pos)
  local fail = values.fail
  rows = lines:flat_map(function(line, emit)
    if line == "" or (comments and line:sub(1, 1) == "#") then return end
    local r, why = parse(line)
    if r == nil then
      if ignore then return end
      fail(ddl, string.format("cannot parse the line for table '%s': %s (set "
        .. "'%s.ignore-parse-errors' = 'true' to skip such lines)", tname, why, props.format))
    end
    if computed then r = computed(r) end
    emit(r)
  end):name("parse " .. props.format .. " (" .. t.name .. ")")
  if t.watermark then
    rows = rows:assign_timestamps_and_watermarks(watermark_strategy(p, t)):name("watermarks (" .. t.name .. ")")
  end
  return rows
end

--- A filesystem table read whole, as a lookup join reads it (wm.sql.plan.temporal_join):
-- a function that reads the file now and gives its rows (computed columns included); a line
-- it cannot parse stops the job with the file and line, unless the format ignores parse errors.
function M.read_all(p, t)
  local path = resolve_path(p, t.props.path)
  local parse, computed = line_parser(t), computed_fn(p, t)
  local ignore, comments, fmt = t.ignore_errors, t.allow_comments, t.props.format
  local ddl = p.src.name .. ":" .. errors.line_col(p.src.text, t.pos)
  return function()
    local f, why = io.open(path, "r")
    if not f then
      values.fail(ddl, string.format("lookup join: cannot read '%s' (table '%s'): %s", path, t.name, why))
    end
    local rows, n = {}, 0
    for line in f:lines() do
      n = n + 1
      if line ~= "" and not (comments and line:sub(1, 1) == "#") then
        local r, err = parse(line)
        if r == nil then
          if not ignore then
            f:close()
            values.fail(ddl, string.format("cannot parse %s:%d for table '%s': %s (set '%s.ignore-parse-errors' = "
              .. "'true' to skip such lines)", path, n, t.name, err, fmt))
          end
        else
          if computed then r = computed(r) end
          rows[#rows + 1] = r
        end
      end
    end
    f:close()
    return rows
  end
end

local function json_value(v, ty)
  if v == nil then return "null" end
  if ty == "STRING" or ty == "TIMESTAMP" or ty == "TIMESTAMP_LTZ" then
    return wm.format.json(values.to_string(v, ty)) -- escaped, invalid UTF-8 as U+FFFD (docs/io.md)
  end
  if ty == "BOOLEAN" then return v and "true" or "false" end
  return values.to_string(v, ty)
end

-- Checks before the job starts that the file of a filesystem sink can be written (its folder
-- exists, it is not a folder, it is writable), without changing it: an existing file is
-- opened for appending, a missing one created and removed again.
function check_writable(p, t, path, st)
  local existed = io.open(path, "r")
  if existed then existed:close() end
  local f, err = io.open(path, "a")
  if f then
    f:close()
    if not existed then os.remove(path) end
    return
  end
  err = tostring(err):gsub("^.-: ([^:]*)$", "%1")
  local folder = t.props.path:match("^(.*)/[^/]*$")
  if err == "No such file or directory" and folder then
    err = err .. " (the folder '" .. folder .. "' does not exist)"
  end
  p:err(t.props_pos.path, "table '%s' cannot be written to '%s': %s (INSERT INTO at %s)", t.name, t.props.path, err,
    p.src.name .. ":" .. errors.line_col(p.src.text, st.pos))
end

--- Writes a relation into a sink table. `print_changelog(rel, prefix)` is the planner's
-- (passed in: this module does not require the planner, which requires it).
function M.sink(p, t, rel, st, print_changelog)
  local c = t.props.connector
  if c == "print" or c == "stdout" then
    print_changelog(rel, t.props["print-identifier"])
    return
  end
  if c == "blackhole" then
    rel.stream:discard() -- in C, one per instance: nothing crosses threads to a sink
    return
  end
  if rel.updating then
    p:err(st.query.pos, "table '%s' (connector '%s') only takes appended rows, but the query produces updates "
      .. "(a GROUP BY without a window): write it to a 'print' table", t.name, c)
  end
  if c == "stdin" or c == "socket" then p:err(st.name_pos, "connector '%s' cannot be written to", c) end
  local cols = rel.cols
  local part = t.fs_partition
  if part then -- (the partition columns are in the folders' names, not in the files)
    local pcols = {}
    for _, name in ipairs(part.cols) do pcols[name] = true end
    cols = {}
    for _, col in ipairs(rel.cols) do if not pcols[col.name] then cols[#cols + 1] = col end end
  end
  local fmt
  if t.props.format == "json" then
    fmt = function(r)
      local parts = {}
      for i, col in ipairs(cols) do parts[i] = wm.format.json(col.name) .. ":" .. json_value(r[col.name], col.type) end
      return "{" .. table.concat(parts, ",") .. "}"
    end
  else
    local d = t.delimiter or ","
    local null = t.props["csv.null-literal"] or ""
    fmt = function(r)
      local parts = {}
      for i, col in ipairs(cols) do
        local v = r[col.name]
        local s = v == nil and null or values.to_string(v, col.type)
        if s:find('[\n\r"' .. (d == "%" and "%%" or d) .. ']') then s = '"' .. s:gsub('"', '""') .. '"' end
        parts[i] = s
      end
      return table.concat(parts, d)
    end
  end
  if EXTRA[c] then
    EXTRA[c].sink(p, t, rel.stream:map(fmt))
    return
  end
  if part then
    local types = {}
    for _, col in ipairs(rel.cols) do types[col.name] = col.type end
    local where = p.src.name .. ":" .. errors.line_col(p.src.text, st.pos)
    local path = resolve_path(p, (t.props.path:gsub("^file://", ""):gsub("(.)/+$", "%1")))
    local what = "table '" .. t.name .. "' (INSERT INTO at " .. where .. ")"
    if FS_PARTITIONED.c_sink(rel.stream, path, part, t, cols, types, what) then return end
    FS_PARTITIONED.sink(rel.stream, path, part, fmt, function(v, name) return values.to_string(v, types[name]) end,
      values.parse_timestamp, function(msg) error(what .. ": " .. msg, 0) end)
    return
  end
  local path = resolve_path(p, t.props.path)
  check_writable(p, t, path, st)
  -- write_lines: buffered, and exactly-once with checkpoints (docs/checkpoints.md)
  -- one instance: two would write the same file
  rel.stream:write_lines(path, fmt):name("write " .. t.name .. " (" .. t.props.path .. ")"):set_parallelism(1)
end

return M
