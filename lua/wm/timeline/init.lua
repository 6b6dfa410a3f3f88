--- The timeline picture: draws what the core's recorder (core/timeline) recorded, as a
-- self-contained SVG file or an HTML page holding it (`wmrun --timeline`, `h:timeline`).
--
-- A recording is the table bindings/lwm_timeline.c builds:
--   title, arrivals (records seen at the assigners), keys (texts), other_keys (boolean),
--   stats {records, late_dropped, late_side, firings, late_firings, cleanups, checkpoints,
--          records_shown, mean_firing_delay, delay_samples, oom},
--   records {x, t, ts, key, late}, lates {x, t, ts, wm, lateness, key, series, side, tag,
--          input (a two-input operator's late record: 1 or 2)},
--   marks {kind = "fire" | "late_fire" | "cleanup", x, t, wm, start, stop, series, key},
--   windows {start, stop, series, x0, t0, x1, t1, fired},
--   checkpoints {x, t, id, bytes, ms, final} (completed checkpoints, --checkpoint-dir),
--   series {name, window (boolean: an operator's input, not an assigner), input (1 or 2: the
--          own watermark of that input of a two-input operator), advances, steps {x, t, v}}.
-- x is the arrival order of the records at the assigners, t the processing time (ms), key
-- an index into keys (0: one of the other keys; nil: unknown), series an index into series.
-- @module wm.timeline
local M = {}

local fmt, concat = string.format, table.concat

local T = require("wm.timeline.text")
local S = require("wm.timeline.scales")
local panel = require("wm.timeline.panel").draw
local lanes_mod = require("wm.timeline.lanes")
local esc, PIC_W, PAN_L, PAN_R, HEAD, LANES_GAP, AXIS_B, NCOLOURS, KEY_COLOURS =
  T.esc, T.PIC_W, T.PAN_L, T.PAN_R, T.HEAD, T.LANES_GAP, T.AXIS_B, T.NCOLOURS, T.KEY_COLOURS
local scales, lanes_of, lane_height = S.scales, lanes_mod.lanes_of, lanes_mod.lane_height

local CSS = "text{font-family:sans-serif;font-size:12px;fill:#222}" ..
  ".title{font-size:15px;font-weight:bold}.stats{font-size:12.5px}.bad{fill:#c81e1e}" ..
  ".lh{font-weight:bold}.tick{font-size:11px;fill:#555}.tick.sub{fill:#888;font-size:10px}" ..
  ".axis{font-size:12px;fill:#333}.frame{fill:none;stroke:#999}.grid{stroke:#eee}" ..
  ".grid.fine{stroke:#f3f3f3}" ..
  ".band{fill:#8a94a6;fill-opacity:.13;stroke:#8a94a6;stroke-opacity:.45}" ..
  ".rec{stroke:none}.kn{fill:#777}.ko{fill:#aaa}" ..
  ".wm{fill:none;stroke-linejoin:round}.wm.assigner{stroke-dasharray:7 3;stroke-width:2}" ..
  ".wm.window{stroke-width:6;stroke-opacity:.55}.wm.input2{stroke-dasharray:10 5}" ..
  ".fire.ontime{fill:#2a9d3a;stroke:#145a1e}.fire.late{fill:#f39c12;stroke:#9a5b00}" ..
  ".cleanup{fill:none;stroke:#555;stroke-width:1.6}" ..
  ".ckpt{fill:none;stroke:#6a3d9a;stroke-width:1.5;stroke-dasharray:4 3}" ..
  ".ckpt-n{font-size:10px;fill:#6a3d9a}" ..
  ".late.side{fill:#fff;stroke:#d62020;stroke-width:2.4}" ..
  ".late.dropped{fill:#d62020;stroke:#7a0000}" ..
  ".count{fill:#fff;stroke:#555;stroke-width:1.5}.count.has-late{stroke:#d62020;stroke-width:2}" ..
  ".count-n{font-size:8.5px;font-weight:bold;fill:#222;pointer-events:none}" ..
  ".lane-bg{fill:#fafafa}.lane-bg.even{fill:#f1f3f6}.lane-label{font-size:11px}" ..
  ".val{font-size:10px;fill:#333}.lname{font-size:10.5px;fill:#555}"

-- The page's script (zoom and pan: page.js), a file next to this one: found where this module
-- was loaded from, else beside wm/timeline/init.lua on package.path (an installed prefix has
-- it there: make install and the rockspec put it beside the Lua files). Read once, when the
-- first page is drawn; its leading // lines are for the reader of the file, not the page.
local page_js
local function page_script()
  if page_js then return page_js end
  local src = debug.getinfo(1, "S").source
  local tried = {}
  local dirs = {src:sub(1, 1) == "@" and src:match("^@(.*)[/\\]") or nil}
  local init = package.searchpath("wm.timeline", package.path)
  dirs[#dirs + 1] = init and init:match("^(.*)[/\\]") or nil
  for _, dir in ipairs(dirs) do
    local path = dir .. "/page.js"
    local f = io.open(path, "rb")
    if f then
      local text = f:read("a")
      f:close()
      while text:match("^//") do text = text:gsub("^//[^\n]*\n", "", 1) end
      page_js = text
      return text
    end
    tried[#tried + 1] = path
  end
  error("wm.timeline: cannot find the page's script page.js (looked at " ..
    (#tried > 0 and concat(tried, ", ") or "nothing: wm.timeline was not loaded from a file") ..
    ")", 0)
end


--- The picture of recordings drawn one above the other on the same scales, as text.
-- @tparam {table,...} recs recordings (one: one run; two: a comparison)
-- @tparam[opt] table opts `x = "order"` (default) or `"time"`; `html = true` for a page
-- (with a few lines of script for zoom and pan)
-- @treturn string the SVG document or the HTML page
function M.render(recs, opts)
  opts = opts or {}
  local xmode = opts.x or "order"
  assert(#recs >= 1, "nothing to draw")
  local p = scales(recs, xmode)
  local plot_h = #recs == 1 and 420 or 330
  local heights, total = {}, 0
  for k, tl in ipairs(recs) do
    local n = #(lanes_of(tl))
    heights[k] = HEAD + plot_h + (n > 0 and LANES_GAP or 0) + n * lane_height(n) + AXIS_B + 4
    total = total + heights[k]
  end
  local out = {}
  if opts.html then
    out[#out + 1] = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' ..
      "<title>wmrun timeline: " .. esc(recs[1].title) .. "</title><style>body{margin:16px;" ..
      "background:#f6f6f6;font-family:sans-serif}svg{background:#fff;border:1px solid #ddd;" ..
      "max-width:100%;height:auto;user-select:none}p{color:#444;font-size:13px}</style>" ..
      "</head><body>\n"
  else
    out[#out + 1] = '<?xml version="1.0" encoding="UTF-8"?>\n'
  end
  out[#out + 1] = fmt('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" ' ..
    'viewBox="0 0 %d %d">\n<style>%s', PIC_W, total, PIC_W, total, CSS)
  for k = 1, NCOLOURS do out[#out + 1] = fmt(".k%d{fill:%s}", k - 1, KEY_COLOURS[k]) end
  out[#out + 1] = fmt('</style>\n<rect width="%d" height="%d" fill="#fff"/>\n', PIC_W, total)
  local top = 0
  for k, tl in ipairs(recs) do
    p.L, p.T, p.W, p.H = PAN_L, top + HEAD, PIC_W - PAN_L - PAN_R, plot_h
    p.id = "p" .. k
    panel(out, tl, p, top, heights[k])
    top = top + heights[k]
  end
  out[#out + 1] = "</svg>\n"
  if opts.html then
    out[#out + 1] = fmt("<p>Hover over a mark for details; wheel to zoom along x, drag to " ..
      "pan, double click to reset. x: %s; y: event time. Written by wmrun --timeline.</p>\n" ..
      "<script>%s</script>\n</body></html>\n",
      xmode == "time" and "processing time" or "arrival order", page_script())
  end
  return concat(out)
end

local function kind_of(path)
  local ext = type(path) == "string" and path:match("%.(%w+)$")
  ext = ext and ext:lower()
  if ext == "html" or ext == "htm" then return "html" end
  if ext == "svg" then return "svg" end
end

local function cannot(err, path)
  -- io.open's message starts with the path: the caller names the file already
  local reason = tostring(err)
  if reason:sub(1, #path + 2) == path .. ": " then reason = reason:sub(#path + 3) end
  error("cannot write there: " .. reason, 0)
end

--- Checks, before a run, that path is an output the timeline can write: a name ending in
-- .html (a page) or .svg, in a place where a file can be created. Raises an error (without
-- the file name: the caller names it with its option) otherwise. Creates nothing (a file
-- made to try is removed again).
-- @tparam string path
function M.check_output(path)
  if type(path) ~= "string" then error("expected a file name, got " .. type(path), 0) end
  if not kind_of(path) then
    local ext = path:match("%.[^./]*$")
    error(fmt("expected a file name ending in .html (a page) or .svg, got %s",
      ext and "'" .. ext .. "'" or "no extension"), 0)
  end
  local existing = io.open(path, "r")
  if existing then
    existing:close()
    local f, err = io.open(path, "r+")
    if not f then cannot(err, path) end
    f:close()
    return
  end
  local f, err = io.open(path, "w")
  if not f then cannot(err, path) end
  f:close()
  os.remove(path)
end

--- Draws recordings into path: an HTML page when it ends in .html, else an SVG file.
-- @tparam string path
-- @tparam {table,...} recs recordings
-- @tparam[opt] table opts `x = "order"` or `"time"`
function M.save(path, recs, opts)
  local kind = kind_of(path)
  if not kind then M.check_output(path) end
  local text = M.render(recs, {x = opts and opts.x, html = kind == "html"})
  local f, err = io.open(path, "w")
  if not f then cannot(err, path) end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then error("write error: " .. tostring(werr or cerr), 0) end
end

--- Draws the JSON lines of `--trace-watermarks=json` in trace into path, a page with a
-- filter by operator (wm.timeline.trace; `wmrun --timeline OUT.html --from-trace TRACE`).
-- @tparam string path
-- @tparam string trace
function M.from_trace(path, trace) require("wm.timeline.trace").save(path, trace) end

return M
