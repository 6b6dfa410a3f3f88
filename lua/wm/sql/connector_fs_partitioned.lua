--- The filesystem sink of a table `PARTITIONED BY (a, b)` (Flink's filesystem connector, as
-- Nexmark q10 uses it): each row goes to `<path>/a=<value>/b=<value>/part-0-<n>` (partition
-- values escaped as Flink's PartitionPathUtils does: `00:01` is `00%3A01`); the files have the
-- other columns, in the table's format.
--
-- A part file's rows are kept in the sink's state (checkpointed) until the file is rolled,
-- then written whole (into a hidden `.part-0-<n>.inprogress`, renamed). A file rolls when its
-- partition commits, when it has been open 'sink.rolling-policy.rollover-interval' (checked
-- every 'sink.rolling-policy.check-interval' of processing time; default 30 min and 1 min, as
-- Flink's) and at the end of the input. A partition commits (with
-- 'sink.partition-commit.policy.kind' = 'success-file': an empty `_SUCCESS` in its folder)
-- with 'sink.partition-commit.trigger' = 'partition-time' when the watermark passes its time
-- (the partition values put into 'partition.time-extractor.timestamp-pattern', `$dt $hm:00`)
-- plus 'sink.partition-commit.delay', with 'process-time' when the processing time passes its
-- first row's plus the delay; rows that come after the commit go to a new file, and the
-- partition commits again. Part files are numbered per partition from the state, so that a job
-- resumed from a checkpoint writes the files it had written after the checkpoint again, under
-- the same names: no row is lost, none doubled when the rolls fall at the same rows again (the
-- end of input; commits by a per-row watermark); a roll at another row (a periodic watermark,
-- the rollover interval) may leave a file of the first run beside them (docs/sql.md).
--
-- A 'csv' table whose columns are of the types in C_KIND is written by the C operator
-- core/ops/wm_sqlfspart.c instead (`M.c_sink`), which writes the same files; `M.sink` below
-- stays the reference, and writes every table with WMRUN_SQL_FS_SINK=lua.
-- @module wm.sql.connector_fs_partitioned
local base = require("wm.base")

local M = {}

--- The options this sink takes, with their checks (called by wm.sql.connectors).
M.OPTIONS = {
  ["sink.partition-commit.trigger"] = true, ["sink.partition-commit.delay"] = true,
  ["sink.partition-commit.policy.kind"] = true, ["partition.time-extractor.timestamp-pattern"] = true,
  ["sink.rolling-policy.rollover-interval"] = true, ["sink.rolling-policy.check-interval"] = true,
}

-- Flink's PartitionPathUtils.escapePathName: these characters (and control characters) as %XX
local ESCAPED = {}
for ch in ("\"#%'*/:=?\\\127{[]^"):gmatch(".") do ESCAPED[ch] = true end
local function escape(v)
  return (v:gsub(".", function(ch)
    if ESCAPED[ch] or ch:byte() < 32 then return string.format("%%%02X", ch:byte()) end
    return nil
  end))
end
M.escape = escape

--- Checks the options of a table `t` with `t.partitioned` (a list of column names, with their
-- positions) at CREATE TABLE; `p` is the planner. Sets `t.fs_partition`.
function M.check(p, t, parse_ms)
  local props, pos = t.props, t.props_pos
  if props.connector ~= "filesystem" then
    p:err(t.partitioned.pos, "PARTITIONED BY is for the filesystem connector (this table's is '%s')",
      tostring(props.connector))
  end
  local cfg = {cols = {}}
  for i, c in ipairs(t.partitioned) do
    local col = t.byname[c.name]
    if not col then p:err(c.pos, "PARTITIONED BY: the table has no column '%s'", c.name) end
    if col.expr then p:err(c.pos, "PARTITIONED BY: '%s' is a computed column", c.name) end
    cfg.cols[i] = c.name
  end
  if #cfg.cols == #t.physical then p:err(t.partitioned.pos, "PARTITIONED BY: every column is a partition column") end
  local trig = props["sink.partition-commit.trigger"] or "process-time"
  if trig ~= "partition-time" and trig ~= "process-time" then
    p:err(pos["sink.partition-commit.trigger"], "option 'sink.partition-commit.trigger' must be 'partition-time' or "
      .. "'process-time', got '%s'", trig)
  end
  cfg.trigger = trig
  local policy = props["sink.partition-commit.policy.kind"]
  if policy and policy ~= "success-file" then
    p:err(pos["sink.partition-commit.policy.kind"], "not supported yet: 'sink.partition-commit.policy.kind' = '%s' "
      .. "(wmrun has 'success-file')", policy)
  end
  cfg.success = policy == "success-file"
  cfg.delay = 0
  local function dur(key, default)
    if props[key] == nil then return default end
    return parse_ms(key, props[key], pos[key])
  end
  cfg.delay = dur("sink.partition-commit.delay", 0)
  cfg.rollover = dur("sink.rolling-policy.rollover-interval", 30 * 60000)
  cfg.check = dur("sink.rolling-policy.check-interval", 60000)
  if cfg.check <= 0 then
    p:err(pos["sink.rolling-policy.check-interval"], "'sink.rolling-policy.check-interval' must be more than 0")
  end
  local pat = props["partition.time-extractor.timestamp-pattern"]
  if trig == "partition-time" then
    if not pat then
      p:err(pos["sink.partition-commit.trigger"], "'sink.partition-commit.trigger' = 'partition-time' needs "
        .. "'partition.time-extractor.timestamp-pattern' (such as '$dt $hm:00')")
    end
    for name in pat:gmatch("%$([%a_][%w_]*)") do
      local known = false
      for _, c in ipairs(cfg.cols) do if c == name then known = true end end
      if not known then
        p:err(pos["partition.time-extractor.timestamp-pattern"], "'partition.time-extractor.timestamp-pattern' "
          .. "names '$%s', which is no partition column", name)
      end
    end
  end
  cfg.pattern = pat
  t.fs_partition = cfg
end

-- how the C sink writes a column of each type (core/ops/wm_sqlfspart.h, wm_fsp_kind): the
-- types whose values it formats as values.to_string does; a table with others is the Lua sink's
local C_KIND = {STRING = 3, INT = 0, BIGINT = 0, DOUBLE = 0, BOOLEAN = 1, TIMESTAMP = 2, TIMESTAMP_LTZ = 2}

--- The sink in C (core/ops/wm_sqlfspart.h), writing the files `M.sink` writes: for a 'csv'
-- table of the types in C_KIND, unless WMRUN_SQL_FS_SINK=lua. `t` is the table, `cols` the
-- columns of the lines, `types` every column's type by name, `what` the errors' start.
-- Returns the sink, or nil (then M.sink writes the table).
function M.c_sink(stream, path, cfg, t, cols, types, what)
  if os.getenv("WMRUN_SQL_FS_SINK") == "lua" or t.props.format == "json" then return nil end
  local node = {path = path, cols = {}, col_kinds = {}, fields = {}, kinds = {}, delim = t.delimiter or ",",
    null_literal = t.props["csv.null-literal"] or "", partition_time = cfg.trigger == "partition-time",
    success = cfg.success, delay = cfg.delay, rollover = cfg.rollover, check = cfg.check, pattern = cfg.pattern,
    what = what, name = "write partitions (" .. path .. ")", parallelism = 1}
  for i, c in ipairs(cfg.cols) do
    node.cols[i], node.col_kinds[i] = c, C_KIND[types[c]]
    if not node.col_kinds[i] then return nil end
  end
  for i, c in ipairs(cols) do
    node.fields[i], node.kinds[i] = c.name, C_KIND[c.type]
    if not node.kinds[i] then return nil end
  end
  return base.sink(stream, "sql_fs_partitioned", node)
end

--- Writes `stream` (rows) into the partitioned folder `path`: `fmt(row)` is a row's line (the
-- columns that are not partition columns), `to_string(v, col)` a partition value's text,
-- `parse_ts(s)` a timestamp's epoch ms (or nil), `fail(msg)` stops the job. Returns the sink.
function M.sink(stream, path, cfg, fmt, to_string, parse_ts, fail)
  local cols = cfg.cols
  local function shell(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
  local function write_file(dir, name, lines)
    local tmp = dir .. "/." .. name .. ".inprogress"
    local f = io.open(tmp, "w")
    if not f then
      if not os.execute("mkdir -p " .. shell(dir)) then fail("cannot make the folder '" .. dir .. "'") end
      local err
      f, err = io.open(tmp, "w")
      if not f then fail("cannot write '" .. tmp .. "': " .. tostring(err)) end
    end
    if #lines > 0 then f:write(table.concat(lines, "\n"), "\n") end
    f:close()
    local ok, rerr = os.rename(tmp, dir .. "/" .. name)
    if not ok then fail("cannot rename '" .. tmp .. "': " .. tostring(rerr)) end
  end
  local function roll(part)
    if #part.lines == 0 then return end
    write_file(part.dir, "part-0-" .. part.n, part.lines)
    part.n, part.lines, part.opened = part.n + 1, {}, nil
  end
  local function commit(part)
    roll(part)
    if cfg.success then write_file(part.dir, "_SUCCESS", {}) end
    part.committed = true
  end
  -- the partition's time: the pattern with each $column replaced by the row's value
  local function partition_time(values)
    local s = cfg.pattern:gsub("%$([%a_][%w_]*)", values)
    local t = parse_ts(s)
    if not t then
      fail("the partition time '" .. s .. "' (from 'partition.time-extractor.timestamp-pattern' = '" .. cfg.pattern
        .. "') is no timestamp (yyyy-MM-dd HH:mm:ss)")
    end
    return t
  end
  local MAXT = math.maxinteger
  local function at(st, t, dir)
    local k = tostring(t)
    st.timers = st.timers or {}
    local list = st.timers[k]
    if not list then
      list = {}
      st.timers[k] = list
    end
    list[#list + 1] = dir
  end
  return stream:key_by(function() return 0 end):process{
    process_element = function(r, ctx)
      local st = ctx.state
      local ts = ctx.timer_service
      local values, segs = {}, {}
      for i, c in ipairs(cols) do
        local v = r[c]
        local s = v == nil and "__DEFAULT_PARTITION__" or to_string(v, c)
        values[c] = s
        segs[i] = c .. "=" .. escape(s)
      end
      local dir = path .. "/" .. table.concat(segs, "/")
      st.parts = st.parts or {}
      local part = st.parts[dir]
      local now = ts:current_processing_time()
      if not part then
        part = {dir = dir, n = 0, lines = {}}
        st.parts[dir] = part
        if cfg.trigger == "partition-time" then part.time = partition_time(values) end
      end
      if #part.lines == 0 then
        part.opened = now
        -- when it commits (or, without a commit, at the end of the input)
        local t
        if cfg.trigger == "partition-time" then
          t = math.max(part.time + cfg.delay, ts:current_watermark() + 1)
          ts:register_event_time_timer(t)
          at(st, t, dir)
        else
          ts:register_processing_time_timer(now + cfg.delay)
          ts:register_event_time_timer(MAXT)
          at(st, "p" .. (now + cfg.delay), dir)
          at(st, MAXT, dir)
        end
        if not st.check then
          st.check = now + cfg.check
          ts:register_processing_time_timer(st.check)
        end
      end
      part.lines[#part.lines + 1] = fmt(r)
    end,
    on_timer = function(t, ctx)
      local st = ctx.state
      local ts = ctx.timer_service
      local processing = ctx.time_domain == "processing_time"
      if processing and t == st.check then
        st.check = nil
        local open = false
        for _, part in pairs(st.parts or {}) do
          if part.opened and t - part.opened >= cfg.rollover then roll(part) end
          if #part.lines > 0 then open = true end
        end
        if open then
          st.check = t + cfg.check
          ts:register_processing_time_timer(st.check)
        end
      end
      local k = processing and "p" .. t or tostring(t)
      local dirs = st.timers and st.timers[k]
      if not dirs then return end
      st.timers[k] = nil
      for _, dir in ipairs(dirs) do
        local part = st.parts[dir]
        if t == MAXT and not processing then roll(part) else commit(part) end
      end
    end,
  }:name("write partitions (" .. path .. ")"):set_parallelism(1)
end

return M
