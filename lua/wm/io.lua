--- Sources, parsers and sinks (api.md: Environment, Streams, Sinks). Methods of the
-- classes of wm.base. See docs/io.md.
-- @module wm.io
local base = require("wm.base")
local duration = require("wm.duration")

local Env, Stream = base.Env, base.Stream
local stream, one_input, sink, check_fn = base.stream, base.one_input, base.sink, base.check_fn
local opt_table, positive_int = base.opt_table, base.positive_int
local check_on_error, check_host_port = base.check_on_error, base.check_host_port

local M = {}

-- The range of `generate`'s rate (records per second): below, the due time of a record
-- leaves the 64-bit range of ms; above, a rate means nothing more than "as fast as possible".
M.MIN_RATE, M.MAX_RATE = 1e-6, 1e9

local csv_types = {string = true, integer = true, number = true, boolean = true}

--- A bounded source of the given values, in order (parallelism 1).
-- @param ... the values, or one list of them
-- @treturn Stream
-- @usage env:from_elements({1, 2, 3}) -- or env:from_elements(1, 2, 3)
function Env:from_elements(...)
  local list
  if select("#", ...) == 1 and type((...)) == "table" and getmetatable((...)) == nil and #(...) > 0 then
    list = ...
  else
    list = table.pack(...)
    list.n = nil
  end
  local n = #list
  return stream(self, self:_node("from_elements", {}, {list = list, count = n, name = "from_elements",
    max_parallelism = 1, one_instance = "one list of elements"}))
end

--- A source of the lines of a file ("-" for standard input), bounded unless followed.
-- Lines come without their "\n" or "\r\n"; a last line without "\n" counts.
-- @tparam string path the file, or "-" for standard input
-- @tparam[opt] table opts `follow` (boolean: keep reading as the file grows, like
--   `tail -f`; the job then runs until it is stopped), `max_line` (bytes, default 1 MiB:
--   a longer line is an error naming its number), `poll` (follow: how often to look for
--   growth besides inotify, a duration, default "1s"), `chunk` (read size in bytes, default
--   256 KiB, at most 64 MiB), `arrival` (a recorded file: the parse_csv column, or a
--   function(line, n), giving each line's arrival time in ms; the job then runs on a clock
--   that jumps to each arrival, docs/lab.md), `speed` ("max", the default: that virtual
--   clock; a number x: the real clock, x times the recorded pace), `parallel` (true: at
--   parallelism n, n instances each read the lines that start in their n-th of the file's
--   bytes, with exact line numbers; each part has its own watermark, as Flink's file
--   splits do: see docs/parallelism.md)
-- @treturn Stream the lines, as strings
-- @usage env:read_lines("data.csv"):parse_csv{"id", "ts:integer", "vc:integer"}
function Env:read_lines(path, opts)
  if type(path) ~= "string" then error("read_lines: expected a path, got " .. type(path), 2) end
  opts = opt_table(opts, "read_lines", {follow = true, max_line = true, poll = true, chunk = true,
    arrival = true, speed = true, parallel = true}, 2)
  if opts.parallel and (path == "-" or opts.follow or opts.arrival ~= nil) then
    error("read_lines: parallel reads a file in parts, not " .. (path == "-" and "standard input"
      or opts.follow and "a followed file" or "a replay in arrival order"), 2)
  end
  if opts.arrival ~= nil and type(opts.arrival) ~= "string" and type(opts.arrival) ~= "function" then
    error("read_lines: arrival must be a column name or a function(line, n) -> ms, got " .. type(opts.arrival), 2)
  end
  if opts.speed ~= nil and opts.speed ~= "max" and not (type(opts.speed) == "number" and opts.speed > 0) then
    error("read_lines: speed must be 'max' or a positive number, got " .. tostring(opts.speed), 2)
  end
  return stream(self, self:_node("read_lines", {}, {path = path, follow = opts.follow and true or nil,
    arrival = opts.arrival, speed = opts.speed, -- arrival replay (docs/lab.md, wm.lab.replay)
    max_line = positive_int(opts.max_line, "read_lines", "max_line", 2),
    chunk = positive_int(opts.chunk, "read_lines", "chunk", 2, base.MAX_CHUNK),
    poll = opts.poll and duration.ms(opts.poll, "read_lines poll", 2) or nil,
    name = "read_lines(" .. path .. ")", parallel = opts.parallel and true or nil,
    -- parallel: the file is read in parts, one per instance (docs/parallelism.md)
    max_parallelism = not opts.parallel and 1 or nil,
    one_instance = not opts.parallel and (path == "-" and "standard input" or opts.follow and "a followed file"
      or opts.arrival ~= nil and "a replay in arrival order"
      or "one reader of one file; parallel = true reads it in parts") or nil}))
end

--- Lines to records in C: a typed row per line, with no Lua call per line.
-- Columns are named in order as "name" or "name:type" with type `string` (default),
-- `integer`, `number` or `boolean`; a trailing "?" ("vc:integer?") makes an empty field
-- nil instead of an error. Fields may be quoted as in RFC 4180 (`"a,b"`, `""` for a quote).
-- @tparam table spec the columns, and `skip` (names of columns that are not decoded: always
--   nil in the rows, their text unchecked; SQL passes the columns a query does not use),
--   `sep` (one character, default ","), `header`
--   (true: skip the first line of each source), `on_error` ("fail" (default) stops the
--   job naming the source, line and field; "skip" counts the line in the parse_errors
--   metric; "side_output" sends `{line = n, text = "...", error = "..."}` to the
--   "parse_errors" side output)
-- @treturn Stream the rows
-- @usage env:read_lines("s.csv"):parse_csv{"id", "ts:integer", "vc:integer", on_error = "skip"}
function Stream:parse_csv(spec)
  if type(spec) ~= "table" then error("parse_csv: expected a table of columns, got " .. type(spec), 2) end
  local fields, seen = {}, {}
  for k in pairs(spec) do
    if math.type(k) ~= "integer" and k ~= "sep" and k ~= "header" and k ~= "on_error" and k ~= "skip" then
      error("parse_csv: unknown option '" .. tostring(k) .. "' (sep, header, on_error, skip)", 2)
    end
  end
  for i, f in ipairs(spec) do
    if type(f) ~= "string" then error("parse_csv: column " .. i .. " is not a string", 2) end
    local name, ty = f:match("^([^:]+):(.+)$")
    name = name or f
    ty = ty or "string"
    local optional = false
    if ty:sub(-1) == "?" then optional, ty = true, ty:sub(1, -2) end
    if name == "" then error("parse_csv: column " .. i .. " has no name", 2) end
    if not csv_types[ty] then
      error(string.format("parse_csv: column '%s' has unknown type '%s' (string, integer, number, boolean)",
        name, ty), 2)
    end
    if seen[name] then error("parse_csv: column '" .. name .. "' is named twice", 2) end
    seen[name] = true
    fields[i] = {name = name, type = ty, optional = optional}
  end
  if #fields == 0 then error("parse_csv: name at least one column", 2) end
  if spec.skip ~= nil then
    if type(spec.skip) ~= "table" then error("parse_csv: skip must be a list of column names", 2) end
    local at = {}
    for i, f in ipairs(fields) do at[f.name] = i end
    for _, name in ipairs(spec.skip) do
      if not at[name] then error("parse_csv: skip names '" .. tostring(name) .. "', which is no column", 2) end
      fields[at[name]].skip = true
    end
  end
  local sep = spec.sep or ","
  if type(sep) ~= "string" or #sep ~= 1 or sep == '"' or sep == "\n" or sep == "\r" then
    error("parse_csv: sep must be one character (not a quote or a line break), got " .. tostring(sep), 2)
  end
  return one_input(self, "parse_csv", {fields = fields, sep = sep, header = spec.header and true or false,
    on_error = check_on_error(spec.on_error, "parse_csv", 2)}, "parse_csv")
end

--- JSON lines to records, with lua-cjson (one table per line).
-- @tparam[opt] table opts `on_error` as for parse_csv
-- @treturn Stream the decoded values
-- @usage env:read_lines("events.jsonl"):parse_json{on_error = "skip"}
function Stream:parse_json(opts)
  opts = opt_table(opts, "parse_json", {on_error = true}, 2)
  return one_input(self, "parse_json", {on_error = check_on_error(opts.on_error, "parse_json", 2)},
    "parse_json")
end


--- A TCP client source: the lines a server sends until it closes the connection
-- (like Flink's socketTextStream). A refused connection fails the job naming host:port.
-- @tparam string host a name or an address
-- @tparam integer port the server's port
-- @tparam[opt] table opts `max_line` (bytes, default 1 MiB), `chunk` (read size, default 64 KiB,
--   at most 64 MiB)
-- @treturn Stream the lines, as strings
-- @usage env:socket_lines("127.0.0.1", 9999)   -- with `nc -lk 9999` on the other side
function Env:socket_lines(host, port, opts)
  check_host_port(host, port, "socket_lines", 2)
  opts = opt_table(opts, "socket_lines", {max_line = true, chunk = true}, 2)
  return stream(self, self:_node("socket_lines", {}, {host = host, port = port,
    max_line = positive_int(opts.max_line, "socket_lines", "max_line", 2),
    chunk = positive_int(opts.chunk, "socket_lines", "chunk", 2, base.MAX_CHUNK),
    name = "socket_lines(" .. host .. ":" .. port .. ")",
    -- one connection: n instances would each connect and read the stream n times
    max_parallelism = 1, one_instance = "one connection"}))
end

--- A TCP server source: lines from every client that connects (`nc host port < file`).
-- Port 0 picks a free port; the server announces "wmrun: listening on host:port" on stderr.
-- @tparam string host the address to listen on ("127.0.0.1", "0.0.0.0", "::")
-- @tparam integer port the port (0: any free one)
-- @tparam[opt] table opts `max_clients` (end once that many clients have come and gone;
--   default: accept forever), `max_line`, `chunk` (as for socket_lines), `quiet` (no
--   announcement)
-- @treturn Stream the lines, as strings
-- @usage env:listen_lines("127.0.0.1", 9000, {max_clients = 1}):print()
function Env:listen_lines(host, port, opts)
  check_host_port(host, port, "listen_lines", 2)
  opts = opt_table(opts, "listen_lines", {max_line = true, chunk = true, max_clients = true, quiet = true}, 2)
  return stream(self, self:_node("listen_lines", {}, {host = host, port = port,
    max_line = positive_int(opts.max_line, "listen_lines", "max_line", 2),
    chunk = positive_int(opts.chunk, "listen_lines", "chunk", 2, base.MAX_CHUNK),
    max_clients = positive_int(opts.max_clients, "listen_lines", "max_clients", 2),
    quiet = opts.quiet and true or nil,
    name = "listen_lines(" .. host .. ":" .. port .. ")",
    -- one socket listens on host:port: a second would find the address in use
    max_parallelism = 1, one_instance = "one listening socket"}))
end

--- A source of generated records: `fn(i)` returns the i-th record (i from 1), or nil to end.
-- @tparam function fn `fn(i) -> record`
-- @tparam[opt] table opts `count` (stop after that many), `rate` (records per second,
--   from 1e-6 to 1e9, paced by a libuv timer; default, and with `math.huge`: as fast as the
--   pipeline takes them)
-- @treturn Stream
-- @usage env:generate(function(i) return {id = "k" .. i % 10, ts = i} end, {count = 1000, rate = 100})
function Env:generate(fn, opts)
  check_fn(fn, "generate")
  opts = opt_table(opts, "generate", {count = true, rate = true}, 2)
  local count = opts.count
  if count ~= nil and (math.type(count) ~= "integer" or count < 0) then
    error("generate: count must be a non-negative integer, got " .. tostring(count), 2)
  end
  local rate = opts.rate
  if rate == math.huge then
    rate = nil -- as fast as the pipeline takes them, as without a rate
  elseif rate ~= nil and (type(rate) ~= "number" or not (rate >= M.MIN_RATE and rate <= M.MAX_RATE)) then
    error(string.format("generate: rate must be a number of records per second from %g to %g "
      .. "(or math.huge: as fast as possible), got %s", M.MIN_RATE, M.MAX_RATE, tostring(rate)), 2)
  end
  if count == 0 then fn = function() return nil end end
  -- one sequence fn(1), fn(2), ...: n instances would each emit all of it
  return stream(self, self:_node("generate", {}, {fn = fn, count = count, rate = rate, name = "generate",
    max_parallelism = 1, one_instance = "one sequence fn(1), fn(2), ..."}))
end

local source_fields = {open = true, poll = true, close = true, name = true, snapshot = true,
                       restore = true, parallel = true}

--- A custom source written in Lua.
-- `open(ctx)` once, then `poll(ctx)` repeatedly: it emits with `ctx:emit(record[, ts])`,
-- may `ctx:emit_watermark(t)` and `ctx:mark_idle()`, and returns true (poll again),
-- false or nil (the end), or a number of ms to wait before the next poll. `close(ctx)`
-- runs at the end (and when the job is stopped). The source runs one instance, whatever the
-- parallelism, unless it says `parallel = true`: then every instance runs it with a ctx of
-- its own, `ctx.subtask` (1..n) and `ctx.parallelism` (n), and reads its own share.
--
-- Checkpoints (docs/checkpoints.md): a source's position is its own, so with checkpointing
-- on it needs `snapshot(ctx)`, which returns a plain table (e.g. `{offset = ctx.offset}`),
-- and `restore(ctx, t)`, which runs before `open(ctx)` when the job resumes.
-- @tparam table spec `{open = fn, poll = fn, close = fn, snapshot = fn, restore = fn,
--   name = string, parallel = boolean}` (only poll is required)
-- @treturn Stream
-- @usage local i = 0
-- env:source{poll = function(ctx)
--   i = i + 1
--   ctx:emit({n = i}, i * 1000)
--   return i < 10
-- end}
function Env:source(spec)
  if type(spec) ~= "table" then error("source: expected a table {open, poll, close}, got " .. type(spec), 2) end
  for k, v in pairs(spec) do
    if not source_fields[k] then
      error("source: unknown field '" .. tostring(k) .. "' (open, poll, close, snapshot, restore, name, parallel)", 2)
    end
    if k == "parallel" then
      if type(v) ~= "boolean" then error("source: 'parallel' must be a boolean, got " .. type(v), 2) end
    elseif k == "name" then
      if type(v) ~= "string" then error("source: 'name' must be a string, got " .. type(v), 2) end
    elseif type(v) ~= "function" then
      error("source: '" .. k .. "' must be a function", 2)
    end
  end
  if not spec.poll then error("source: 'poll' is required", 2) end
  base.check_hooks(spec, "source")
  return stream(self, self:_node("source", {}, {open = spec.open, poll = spec.poll, close = spec.close,
    snapshot = spec.snapshot, restore = spec.restore, ctx = {}, name = spec.name or "source",
    -- without parallel = true, one instance: a source that does not share by ctx.subtask
    -- would emit everything once per instance
    parallel = spec.parallel or nil, max_parallelism = not spec.parallel and 1 or nil,
    one_instance = not spec.parallel and "a user source; parallel = true runs one per instance" or nil}))
end

local function check_format(format, call)
  if format == nil then return "json" end
  if format == "json" or format == "text" or type(format) == "function" then return format end
  error(call .. ": format must be 'json', 'text' or a function returning a line, got " .. tostring(format), 3)
end

--- Writes one line per record to a file (created or truncated), buffered and flushed at
-- the end of input (also after SIGINT). Default format: compact JSON with sorted keys
-- (JSON lines); "text" writes records as print shows them; a function returns the line.
-- @tparam string path the file
-- @tparam[opt="json"] string|function format "json", "text" or `fn(record) -> line`
-- @treturn Sink
-- @usage sums:write_lines("sums.jsonl")
-- sums:write_lines("sums.txt", function(r) return r.id .. "\t" .. r.vc end)
function Stream:write_lines(path, format)
  if type(path) ~= "string" then error("write_lines: expected a path, got " .. type(path), 2) end
  -- one file has one writer: at parallelism n the n instances upstream all send to it (two
  -- writers of one file would overwrite each other's lines)
  return sink(self, "write_lines", {path = path, format = check_format(format, "write_lines"),
    name = "write_lines(" .. path .. ")", max_parallelism = 1})
end

--- Writes one line per record to a TCP server (format as write_lines). Lines wait in a
-- buffer until the connection is up; a slow server slows the sources down (backpressure).
-- @tparam string host the server's name or address
-- @tparam integer port the server's port
-- @tparam[opt="json"] string|function format as for write_lines
-- @treturn Sink
-- @usage sums:write_socket("127.0.0.1", 9001)
function Stream:write_socket(host, port, format)
  check_host_port(host, port, "write_socket", 2)
  return sink(self, "write_socket", {host = host, port = port, format = check_format(format, "write_socket"),
    name = "write_socket(" .. host .. ":" .. port .. ")"})
end

--- Prints every record on standard output in Flink's format: `value` or `prefix> value`
-- (with parallelism > 1: `i> value`, `prefix:i> value`), as `wm.format.tostring` shows it.
-- @tparam[opt] string prefix
-- @treturn Sink
-- @usage s:print("sums")
function Stream:print(prefix)
  if prefix ~= nil and type(prefix) ~= "string" then
    error("print: the prefix must be a string, got " .. type(prefix), 2)
  end
  return sink(self, "print", {prefix = prefix, name = prefix and ("print(" .. prefix .. ")") or "print"})
end

--- Collects the records into a table that fills as the job runs (for tests).
-- @treturn table the list of records (filled by `env:execute()`)
-- @usage local out = s:collect()
-- env:execute()
-- assert(#out == 3)
function Stream:collect()
  local t = {}
  sink(self, "collect", {target = t, name = "collect"})
  return t
end

--- Drops every record (Flink's `DiscardingSink`; SQL's 'blackhole' connector), in C: each
-- instance on its own thread, with no Lua call per record. The records still count in
-- `--metrics` ("records in").
-- @treturn Sink
-- @usage s:discard()
function Stream:discard()
  return sink(self, "discard", {name = "discard"})
end

--- A sink written in Lua: calls `fn(record, ctx)` for every record.
-- @tparam function fn `fn(record, ctx)`
-- @treturn Sink
-- @usage local total = 0
-- s:sink(function(r) total = total + r.vc end)
function Stream:sink(fn)
  return sink(self, "sink", {fn = check_fn(fn, "sink"), name = "sink"})
end

return M
