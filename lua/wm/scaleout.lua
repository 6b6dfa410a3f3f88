--- Scale-out (docs/scaleout.md): a job whose partitioned source says `scale_out = true`
-- runs as a supervisor that joins the source's group and runs one child process per
-- partition it owns (core/exec/wm_super.c); the child, told its task by `WM_TASK`, runs the
-- plan restricted to that one partition, with its checkpoints in
-- `<checkpoint dir>/task-<name>/` (a folder of the folder, or the path of a store's URL:
-- `nats://HOST:PORT/BUCKET/task-<name>`).
--
-- `WM_TASK="<execute index> <source node> <source> <partition> <task name>"`: in the child,
-- the script's execute() calls before the index return at once without running, the one at
-- the index runs the task, and the process exits after it.
-- @module wm.scaleout
local core = require("wm.core")
local base = require("wm.base")
local through = require("wm.through")

local M = {}

local calls = 0 -- the execute() calls of this script so far (one Lua state per process)

--- The task this process runs, from `WM_TASK`, or nil (not a task's child).
-- @treturn[opt] table `{index, node, source, partition, name}`
function M.task()
  local v = os.getenv("WM_TASK")
  if not v or v == "" then return nil end
  local index, node, source, partition, name = v:match("^(%d+) (%d+) (%S+) (%d+) (%S+)$")
  if not index then error("wmrun: bad WM_TASK '" .. v .. "' (expected 'INDEX NODE SOURCE PARTITION NAME')", 0) end
  return {index = tonumber(index), node = tonumber(node), source = source, partition = tonumber(partition),
    name = name}
end

--- The scale-out source node of env's plan, or nil.
-- @local
function M.source(env)
  for _, n in ipairs(env.nodes) do
    if n.scale_out then return n end
  end
  return nil
end

--- The repartitioning (`key_by(k, {through = ...})`) of env's plan, its write node; or nil.
-- (One at most in a scale-out job: the supervisor refuses more.)
-- @local
function M.through(env)
  local th = env._throughs
  return th and th[1] or nil
end

--- Where a task's file sink writes: `{task}` in the path replaced by the task's name, or
-- `path .. "." .. name` when the path has no `{task}`.
-- @tparam string path
-- @tparam string name
-- @treturn string
function M.task_path(path, name)
  if path:find("{task}", 1, true) then
    return (path:gsub("{task}", (name:gsub("%%", "%%%%"))))
  end
  return path .. "." .. name
end

local function file_sink(n)
  return n.kind == "write_lines" and type(n.path) == "string" and n.path ~= "-"
    and not n.path:match("^/dev/")
end

-- Keeps only partition `keep` of the source `src` in the plan: the other partitions' own
-- nodes (their chains up to their assigners) read nothing any more and the union of the
-- partitions reads only `keep`'s.
local function restrict(src, keep)
  if src.union then
    local kept = keep.nodes[#keep.nodes]
    for _, p in ipairs(src.parts) do
      if p ~= keep then
        for _, n in ipairs(p.nodes) do n.kind, n.tag = "side_output", "\1retired " .. n.id end
      end
    end
    src.union.inputs = {kept}
  end
  src.parts = {keep}
end

-- The child: runs the task of `task` on env (its execute() call). Exits the process.
local function run_task(env, name, task)
  local src = env.nodes[task.node]
  if not (src and src.scale_out) then
    error("wmrun: WM_TASK names plan node " .. task.node .. ", which is not a scale_out source of this job", 0)
  end
  local th = M.through(env)
  local side, writer = nil, nil
  if th and th.target.topic == task.source then -- a partition of the intermediate topic
    side = "read"
  end
  local keep
  for i, p in ipairs(src.parts) do
    if (p.topic or p.stream) == task.source and p.partition == task.partition then keep, writer = p, i - 1 end
  end
  if th and not side then side = "write" end
  if not keep and side ~= "read" then
    error(string.format("wmrun: WM_TASK names partition %s/%d, which %s (%s) does not have", task.source,
      task.partition, src.name, src.where), 0)
  end
  local writers = #src.parts
  if side == "read" then
    -- the reading side of the repartitioning: intermediate partition task.partition, its
    -- writers the tasks of the source's partitions (the cut of lua/wm/through.lua)
    through.cut(env, "read", task.partition, writers)
  else
    restrict(src, keep)
    if side == "write" then through.cut(env, "write", writer, writers) end
  end
  -- the task's consumer is no member of the group (the supervisor is): it commits its
  -- offsets, after each checkpoint, to a group of its own that has no members
  if side == "read" then
    local r = th.reader
    r.group = src.group .. ".task-" .. task.name
  else
    src.group = src.group .. ".task-" .. task.name
  end
  local ck = env.checkpoint
  local dir = ck.dir .. "/task-" .. task.name
  env.checkpoint = {dir = dir, interval = ck.interval, fresh = false, allow_state_change = ck.allow_state_change}
  env.metrics_http = nil -- every task on its own port would collide
  env.ui_http = nil
  env.progress = false -- its stderr is the supervisor's pipe
  for _, n in ipairs(env.nodes) do
    if file_sink(n) then n.path = M.task_path(n.path, task.name) end
    -- every task numbers its messages from 0: its Nats-Msg-Ids must be its own
    if n.kind == "write_nats" then n.id_prefix = n.id_prefix .. "/" .. task.name end
  end
  core.task_guard()
  core.execute(env, name)
  if not env.stopped then -- the input ended: the task is done, whoever runs it next
    -- (its mark ENDED: the file task-<name>/ENDED of a folder, a key of a store)
    local ok, err = core.task_mark(ck.dir, "task-" .. task.name, "ENDED")
    if not ok then error("wmrun: task " .. task.name .. ": " .. err, 0) end
  end
  io.stdout:flush()
  os.exit(0)
end

-- The child's command line: wmrun's own arguments, as the script's `arg` has them.
local function command()
  local args, lo = {}, 0
  while arg[lo - 1] ~= nil do lo = lo - 1 end
  for i = lo + 1, #arg do args[#args + 1] = arg[i] end -- arg[lo] is the program itself
  return args
end

-- The supervisor (wm_super.h), for execute() call `index`.
local function supervise(env, name, index, src)
  local where = src.name .. " (" .. src.where .. ")"
  if not env.checkpoint then
    error("scale_out: " .. where .. " needs --checkpoint-dir (or wm.env{checkpoint = {dir = ...}}): a folder "
      .. "every process reaches, or a NATS store nats://HOST:PORT/BUCKET", 0)
  end
  if env.checkpoint.fresh then
    local dir = env.checkpoint.dir
    local bucket = dir:match("^nats://[^/]+/([%w_-]+)")
    error("scale_out: --fresh cannot be used with scale_out (the checkpoints are shared by every process of "
      .. "the group): " .. (bucket and ("remove the task-* keys of KV bucket '" .. bucket .. "' (or the bucket and "
      .. "its stream WMCK_" .. bucket .. ") before starting them") or ("remove " .. dir .. " before starting them")),
      0)
  end
  if arg == nil or arg[0] == nil or arg[0] == "-" then
    error("scale_out: the job must be a script file (each partition runs it again in a process of its own)", 0)
  end
  local th = env._throughs or {}
  if #th > 1 then
    error("scale_out: " .. where .. ": a scale-out job can repartition once (key_by with through), this one does "
      .. #th .. " times", 0)
  end
  th = th[1]
  if th and (src.kind ~= "read_kafka" or th.target.kind ~= "kafka") then
    error("scale_out: " .. where .. ": a scale-out job repartitions through Kafka from a read_kafka source "
      .. "(through NATS, or from read_nats, is not supported yet: docs/scaleout.md)", 0)
  end
  local ok, err
  if src.kind == "read_nats" then -- one stream; static share (partitions) or leases (docs/connectors.md)
    ok, err = core.supervise{kind = "nats", group = src.group, ckdir = env.checkpoint.dir, index = index,
      node = src.id, sources = {src.stream}, counts = {src.partition_count}, partitions = {src.partitions},
      subjects = {src.subject}, url = src.url, lease_ms = src.lease, args = command(), metrics = env.metrics,
      name = name, backoff_ms = env.restart_backoff}
  else
    if src.kind ~= "read_kafka" then error("scale_out: " .. src.kind .. " is not supported yet", 0) end
    local sources, counts, seen = {}, {}, {}
    for _, p in ipairs(src.parts) do
      if not seen[p.topic] then
        sources[#sources + 1] = p.topic
        seen[p.topic] = #sources
        counts[#sources] = 0
      end
      counts[seen[p.topic]] = counts[seen[p.topic]] + 1
    end
    if th then -- the intermediate topic's partitions are tasks too: the group shares them
      if seen[th.target.topic] then
        error("scale_out: " .. where .. ": the repartitioning's topic '" .. th.target.topic
          .. "' is also the source's", 0)
      end
      sources[#sources + 1] = th.target.topic
      counts[#sources] = th.target.partitions
    end
    ok, err = core.supervise{kind = "kafka", group = src.group, ckdir = env.checkpoint.dir, index = index,
      node = src.id, sources = sources, counts = counts, args = command(), brokers = src.brokers,
      props = src.props, metrics = env.metrics, name = name, backoff_ms = env.restart_backoff}
  end
  -- at the script's execute() line (this, M.execute, Env:execute, the script)
  if not ok then error(err, 4) end
end

--- Env:execute's hook (wm.base, "run"): counts the script's execute() calls and, in
-- scale-out mode, takes the call over. Returns true when it did (then the call runs no job
-- of its own here).
-- @local
function M.execute(env, name)
  name = name or "wmrun job"
  calls = calls + 1
  local task = M.task()
  if task then
    if calls < task.index then return true end -- an earlier execute(): the task's is later
    if calls == task.index then run_task(env, name, task) end
    return true -- after the task's execute() the child has exited
  end
  local src = M.source(env)
  if not src then return false end
  supervise(env, name, calls, src)
  return true
end
-- before any other hook of the run (rank -1): every execute() call counts, and a task's
-- child runs its task, whatever else the job does
base.extend("run", "scaleout", M.execute, -1)

return M
