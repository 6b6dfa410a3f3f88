-- The demo's job: sums per sensor in 5 s windows of event time, on every partition of the
-- topic `events`, shared by the processes of the group `demo` (docs/scaleout.md).
--   wmrun --checkpoint-dir CK job.lua BROKERS OUT [CUE_DIR]   (one of several processes)
--   wmrun job.lua BROKERS OUT - single                         (one process, no scale-out)
-- CUE_DIR: the task that meets the cue record first stops itself there (once), writing its
-- pid into CUE_DIR/<task>, so that run.sh can kill its process at a known point.
local wm = require("wm")
local brokers, out, cues, mode = arg[1], arg[2], arg[3], arg[4]
local task = os.getenv("WM_TASK")

local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = brokers, topic = "events", group = "demo", bounded = "latest",
    scale_out = mode ~= "single",
    -- a dead process's partitions move after 3 s (librdkafka's default: 45 s)
    properties = {["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 300}}
  :parse_json()
  :filter(function(r)
    if not r.cue then return true end
    if task and cues and cues ~= "-" then
      local flag = cues .. "/" .. task:match("(%S+)$")
      local f = io.open(flag)
      if f then
        f:close()
      else -- $PPID: this task's process
        os.execute("echo $PPID > " .. flag .. ".tmp && mv " .. flag .. ".tmp " .. flag .. " && kill -STOP $PPID")
      end
    end
    return false
  end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("v")
  :write_lines(out)
env:execute("scale-out demo")
