-- Window join and co-group (Flink's JoinedStreams and CoGroupedStreams): page views and ad
-- clicks of the same user.
--   * join: every (view, click) pair of a user in the same minute (tumbling windows);
--   * co_group: each user's sessions (30 s of inactivity ends one; a session merges the views
--     and clicks that come close enough, whichever stream they come from), with the views and
--     clicks it holds, also the sessions with no click or no view.
-- docs/joins.md ("Window join and co-group") works the output out by hand.
--
-- views_clicks.csv, in time order: view,user,time (s),page  or  click,user,time (s),ad
-- (one file split in two, so that the two inputs reach the joins in one fixed order and the
-- output's lines come in the same order on every run)
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{watermark_interval = 0}
local by_time = wm.watermarks.monotonous():with_timestamp_field("ts", 1000)

local lines = env:read_lines(here .. "/data/views_clicks.csv")
local views = lines:filter(function(l) return l:sub(1, 5) == "view," end)
  :parse_csv{"kind", "user", "ts:integer", "page"}
  :assign_timestamps_and_watermarks(by_time)
local clicks = lines:filter(function(l) return l:sub(1, 6) == "click," end)
  :parse_csv{"kind", "user", "ts:integer", "ad"}
  :assign_timestamps_and_watermarks(by_time)

-- every view and click of one user in one minute
views:join(clicks):where("user"):equal_to("user")
  :window(wm.windows.tumbling("1min"))
  :apply(function(v, c)
    return string.format("%s: %s (%ds) -> %s (%ds)", v.user, v.page, v.ts, c.ad, c.ts)
  end)
  :print("minute")

-- each session of a user, with its views and clicks (either list may be empty)
views:co_group(clicks):where("user"):equal_to("user")
  :window(wm.windows.session("30s"))
  :apply(function(user, vs, cs, out)
    local first, last = math.huge, -math.huge
    for _, list in ipairs({vs, cs}) do
      for _, r in ipairs(list) do first, last = math.min(first, r.ts), math.max(last, r.ts) end
    end
    out(string.format("%s %ds..%ds: %d views, %d clicks", user, first, last, #vs, #cs))
  end)
  :print("session")

env:execute("views and clicks")
