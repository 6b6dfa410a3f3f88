--- PROCTIME(): processing-time attributes (Flink's `SELECT *, PROCTIME() AS pt FROM t`). The
-- SELECT list that calls it is evaluated in a keyed process function (one key) that sets
-- `R.wm.proc` to the operator's processing time (`ctx.timer_service:current_processing_time()`,
-- the wall clock, or the test harness's virtual clock) before each row; the column it gives is
-- a processing-time attribute: window TVFs and group windows over it are processing-time
-- windows (wm.windows.tumbling_processing and friends), which fire on the clock, not on the
-- watermark. Results depend on when rows arrive: docs/sql.md, "Processing time".
-- @module wm.sql.plan.proctime
local values = require("wm.sql.values")

local M = {}

--- The stream of `fn(row)` for every row, with `R.wm.proc` set to the processing time.
function M.with_proctime(stream, fn)
  local box = values.runtime.wm
  return stream:key_by(function() return 0 end):process(function(r, ctx, out)
    box.proc = ctx.timer_service:current_processing_time()
    local ok, v = pcall(fn, r)
    box.proc = nil
    if not ok then error(v, 0) end
    out(v)
  end):name("map (PROCTIME)")
end

return M
