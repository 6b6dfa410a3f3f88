--- PROCTIME(): processing-time attributes (Flink's `SELECT *, PROCTIME() AS pt FROM t`). The
-- SELECT list that calls it is computed in C when it can be (`try_c`: one `sql_rows` operator,
-- PROCTIME() read from the operator's clock, wm_ctx_now: the wall clock, or the test
-- harness's virtual clock), with no Lua call per row; otherwise (an item the C expressions do
-- not do, WMRUN_SQL_PROCTIME=lua, WMRUN_SQL_EXPR=lua) it is evaluated in a keyed process
-- function (one key) that sets `R.wm.proc` to the operator's processing time
-- (`ctx.timer_service:current_processing_time()`, the same clock) before each row. The column
-- it gives is a processing-time attribute: window TVFs and group windows over it are
-- processing-time windows (wm.windows.tumbling_processing and friends), which fire on the
-- clock, not on the watermark. Results depend on when rows arrive: docs/sql.md, "Processing
-- time".
-- @module wm.sql.plan.proctime
local values = require("wm.sql.values")
local cexpr = require("wm.sql.cexpr")

local M = {}

--- Set to true to force the Lua path in this process (the specs compare both paths).
M.force_lua = false

--- Whether the SELECT lists with PROCTIME() may be computed in C (WMRUN_SQL_PROCTIME=lua, or
-- `force_lua`, forces the Lua process function).
function M.c_enabled()
  return not M.force_lua and os.getenv("WMRUN_SQL_PROCTIME") ~= "lua" and cexpr.enabled()
end

--- The projection `items` (into `cols`) of `stream`'s rows computed in C with PROCTIME() the
-- operator's clock, or nil when an item is not for C (wm.sql.cexpr.try_project).
function M.try_c(stream, items, cols, scope, src)
  scope.proctime_c = true
  local s = cexpr.try_project(stream, items, cols, scope, src)
  scope.proctime_c = nil
  if s then s:name("map (PROCTIME)") end
  return s
end

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
