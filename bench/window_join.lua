-- bench/window_join.sh's job: a window join (or co-group, or the plain window it is built on)
-- of two CSV files `id,ts,vc`.
--   wmrun bench/window_join.lua LEFT RIGHT WHAT WINDOW OUT [tables]
-- WHAT: join | co_group | window (both files united, key_by("id"), a process window that
-- counts: the window operator alone, for comparison). WINDOW: a tumbling window size ("1s";
-- "1h" keeps every record buffered until the end of input). "tables": records as Lua tables
-- (a map after parse_csv) instead of C rows.
local wm = require("wm")
local left, right, what, size, out, tables = arg[1], arg[2], arg[3], arg[4], arg[5], arg[6] == "tables"
local env = wm.env{}
local st = wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts")
local function side(f)
  local s = env:read_lines(f):parse_csv{"id", "ts:integer", "vc:integer"}
  if tables then s = s:map(function(r) return {id = r.id, ts = r.ts, vc = r.vc} end) end
  return s:assign_timestamps_and_watermarks(st)
end
local w = wm.windows.tumbling(size)
local res
if what == "join" then
  res = side(left):join(side(right)):where("id"):equal_to("id"):window(w)
    :apply(function(l, r) return l.vc + r.vc end)
elseif what == "co_group" then
  res = side(left):co_group(side(right)):where("id"):equal_to("id"):window(w)
    :apply(function(_, ls, rs, o) o(#ls * #rs) end)
else
  res = side(left):union(side(right)):key_by("id"):window(w)
    :process(function(_, _, rs, o) o(#rs) end)
end
res:write_lines(out)
env:execute("window join bench")
