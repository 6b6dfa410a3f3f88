--- Sources, parsers and sinks (api.md: Environment, Streams, Sinks).
-- Installed into the classes of wm by wm/init.lua. See docs/io.md.
-- @module wm.io
local M = {}

local duration = require("wm.duration")

local function opt_table(opts, call, known, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error(string.format("%s: expected a table of options, got %s", call, type(opts)), level + 1)
  end
  for k in pairs(opts) do
    if not known[k] then
      local names = {}
      for n in pairs(known) do names[#names + 1] = n end
      table.sort(names)
      error(string.format("%s: unknown option '%s' (%s)", call, tostring(k), table.concat(names, ", ")),
        level + 1)
    end
  end
  return opts
end

local function positive_int(v, call, what, level)
  if v == nil then return nil end
  if math.type(v) ~= "integer" or v < 1 then
    error(string.format("%s: %s must be a positive integer, got %s", call, what, tostring(v)), level + 1)
  end
  return v
end

local function check_on_error(v, call, level)
  if v == nil then return "fail" end
  if v ~= "fail" and v ~= "skip" and v ~= "side_output" then
    error(string.format("%s: on_error must be 'fail', 'skip' or 'side_output', got %s", call, tostring(v)),
      level + 1)
  end
  return v
end

local function check_host_port(host, port, call, level)
  if type(host) ~= "string" or host == "" then
    error(string.format("%s: expected a host name or address, got %s", call, type(host)), level + 1)
  end
  if math.type(port) ~= "integer" or port < 0 or port > 65535 then
    error(string.format("%s: expected a port number (0 to 65535), got %s", call, tostring(port)), level + 1)
  end
end

local csv_types = {string = true, integer = true, number = true, boolean = true}

function M.install(wm, c)
  local Env, Stream = c.Env, c.Stream

  --- A source of the lines of a file ("-" for standard input), bounded unless followed.
  -- Lines come without their "\n" or "\r\n"; a last line without "\n" counts.
  -- @tparam string path the file, or "-" for standard input
  -- @tparam[opt] table opts `follow` (boolean: keep reading as the file grows, like
  --   `tail -f`; the job then runs until it is stopped), `max_line` (bytes, default 1 MiB:
  --   a longer line is an error naming its number), `poll` (follow: how often to look for
  --   growth besides inotify, a duration, default "1s")
  -- @usage env:read_lines("data.csv"):parse_csv{"id", "ts:integer", "vc:integer"}
  function Env:read_lines(path, opts)
    if type(path) ~= "string" then error("read_lines: expected a path, got " .. type(path), 2) end
    opts = opt_table(opts, "read_lines", {follow = true, max_line = true, poll = true, chunk = true}, 2)
    return c.stream(self, self:_node("read_lines", {}, {path = path, follow = opts.follow and true or nil,
      max_line = positive_int(opts.max_line, "read_lines", "max_line", 2),
      chunk = positive_int(opts.chunk, "read_lines", "chunk", 2),
      poll = opts.poll and duration.ms(opts.poll, "read_lines poll", 2) or nil,
      name = "read_lines(" .. path .. ")"}))
  end

  --- Lines to records in C: a typed row per line, with no Lua call per line.
  -- Columns are named in order as "name" or "name:type" with type `string` (default),
  -- `integer`, `number` or `boolean`; a trailing "?" ("vc:integer?") makes an empty field
  -- nil instead of an error. Fields may be quoted as in RFC 4180 (`"a,b"`, `""` for a quote).
  -- @tparam table spec the columns, and `sep` (one character, default ","), `header`
  --   (true: skip the first line of each source), `on_error` ("fail" (default) stops the
  --   job naming the source, line and field; "skip" counts the line in the parse_errors
  --   metric; "side_output" sends `{line = n, text = "...", error = "..."}` to the
  --   "parse_errors" side output)
  -- @usage env:read_lines("s.csv"):parse_csv{"id", "ts:integer", "vc:integer", on_error = "skip"}
  function Stream:parse_csv(spec)
    if type(spec) ~= "table" then error("parse_csv: expected a table of columns, got " .. type(spec), 2) end
    local fields, seen = {}, {}
    for k in pairs(spec) do
      if math.type(k) ~= "integer" and k ~= "sep" and k ~= "header" and k ~= "on_error" then
        error("parse_csv: unknown option '" .. tostring(k) .. "' (sep, header, on_error)", 2)
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
    local sep = spec.sep or ","
    if type(sep) ~= "string" or #sep ~= 1 or sep == '"' or sep == "\n" or sep == "\r" then
      error("parse_csv: sep must be one character (not a quote or a line break), got " .. tostring(sep), 2)
    end
    return c.one_input(self, "parse_csv", {fields = fields, sep = sep, header = spec.header and true or false,
      on_error = check_on_error(spec.on_error, "parse_csv", 2)}, "parse_csv")
  end

  --- JSON lines to records, with lua-cjson (one table per line).
  -- @tparam[opt] table opts `on_error` as for parse_csv
  function Stream:parse_json(opts)
    opts = opt_table(opts, "parse_json", {on_error = true}, 2)
    return c.one_input(self, "parse_json", {on_error = check_on_error(opts.on_error, "parse_json", 2)},
      "parse_json")
  end

  M._helpers = {opt_table = opt_table, positive_int = positive_int, check_host_port = check_host_port}
  return wm
end

return M
