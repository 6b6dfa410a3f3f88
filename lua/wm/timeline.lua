--- The timeline picture: draws what the core's recorder (core/timeline) recorded, as a
-- self-contained SVG file or an HTML page holding it (`wmrun --timeline`, `h:timeline`).
--
-- A recording is the table bindings/lwm_timeline.c builds:
--   title, arrivals (records seen at the assigners), keys (texts), other_keys (boolean),
--   stats {records, late_dropped, late_side, firings, late_firings, cleanups,
--          records_shown, mean_firing_delay, delay_samples, oom},
--   records {x, t, ts, key, late}, lates {x, t, ts, wm, lateness, key, series, side, tag},
--   marks {kind = "fire" | "late_fire" | "cleanup", x, t, wm, start, stop, series, key},
--   windows {start, stop, series, x0, t0, x1, t1, fired},
--   series {name, window (boolean), advances, steps {x, t, v}}.
-- x is the arrival order of the records at the assigners, t the processing time (ms), key
-- an index into keys (0: one of the other keys; nil: unknown), series an index into series.
-- @module wm.timeline
local M = {}

local MAXI, MINI = math.maxinteger, math.mininteger
local fmt, concat = string.format, table.concat

local KEY_COLOURS = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                     "#edc948", "#9c755f", "#17becf", "#bcbd22", "#1f3b73"}
local LINE_COLOURS = {"#1f5fbf", "#7b3fa0", "#0b8a7a", "#b8860b", "#444444", "#8b4513"}
local LEGEND_KEYS = #KEY_COLOURS

local PIC_W = 1400
local PAN_L, PAN_R, PAN_T, PAN_B = 96, 270, 58, 44

local function esc(s)
  return (tostring(s):gsub("[%c<>&\"]", function(c)
    if c == "<" then return "&lt;" elseif c == ">" then return "&gt;"
    elseif c == "&" then return "&amp;" elseif c == '"' then return "&quot;"
    elseif c == "\n" or c == "\t" then return c end
    return ""
  end))
end

-- An event time as text: raw ms, with the UTC time of day for epoch-like values.
local function fmt_ts(v, epoch)
  if v == MAXI then return "MAX (end of input)" end
  if v == MINI then return "MIN" end
  if epoch then
    local s = v // 1000
    local d = os.date("!*t", s)
    return fmt("%d (%02d:%02d:%02d.%03d UTC)", v, d.hour, d.min, d.sec, v - s * 1000)
  end
  return fmt("%d", v)
end

local function fmt_win(start, stop, epoch)
  if start == MINI then return "global window" end
  return fmt("window [%s, %s)", fmt_ts(start, epoch), fmt_ts(stop, epoch))
end

local function nice_step(range, ticks)
  local raw = range / ticks
  if raw <= 0 then return 1 end
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local f = raw / mag
  return (f <= 1 and 1 or f <= 2 and 2 or f <= 5 and 5 or 10) * mag
end

local function tick_label(v, step, epoch)
  if math.abs(v) < 0.5 then v = 0 end -- no "-0"
  local i = math.floor(v + 0.5)
  if epoch then
    local s = i // 1000
    local d = os.date("!*t", s)
    if step < 1000 then
      return fmt("%02d:%02d:%02d.%03d", d.hour, d.min, d.sec, i - s * 1000)
    end
    return fmt("%02d:%02d:%02d", d.hour, d.min, d.sec)
  elseif step >= 1000 and math.fmod(step, 1000) == 0 then
    return fmt("%g s", v / 1000)
  end
  return fmt("%g ms", v)
end

-- The scales shared by every panel.
local function scales(recs, xmode)
  local ylo, yhi, xlo, xhi = math.huge, -math.huge, math.huge, -math.huge
  local function y(v)
    if v == MINI or v == MAXI then return end
    if v < ylo then ylo = v end
    if v > yhi then yhi = v end
  end
  local function x(e, xv, tv)
    local v = xmode == "time" and (tv or e.t) or (xv or e.x)
    if v < xlo then xlo = v end
    if v > xhi then xhi = v end
  end
  for _, tl in ipairs(recs) do
    for _, r in ipairs(tl.records) do y(r.ts); x(r) end
    for _, l in ipairs(tl.lates) do y(l.ts); x(l) end
    for _, m in ipairs(tl.marks) do
      if m.start ~= MINI then y(m.start); y(m.stop) end
      x(m)
    end
    for _, w in ipairs(tl.windows) do y(w.start); y(w.stop) end
    for _, s in ipairs(tl.series) do
      for _, p in ipairs(s.steps) do y(p.v); x(p) end
    end
    if xmode ~= "time" then x(nil, tl.arrivals, 0) end
  end
  if ylo > yhi then ylo, yhi = 0, 1000 end
  if xlo > xhi then xlo, xhi = 0, 1 end
  if xmode ~= "time" then xlo = 0 end
  ylo, yhi, xlo, xhi = ylo + 0.0, yhi + 0.0, xlo + 0.0, xhi + 0.0
  if yhi - ylo < 1 then yhi = ylo + 1 end
  if xhi - xlo < 1 then xhi = xlo + 1 end
  local pad, xpad = (yhi - ylo) * 0.04, (xhi - xlo) * 0.015
  return {y0 = ylo - pad, y1 = yhi + pad, x0 = xlo - xpad, x1 = xhi + xpad, xmode = xmode,
          epoch = math.abs(ylo) >= 1e11}
end

local function px(p, x, t)
  local v = p.xmode == "time" and t or x
  local r = p.L + (v - p.x0) / (p.x1 - p.x0) * p.W
  if r < p.L then r = p.L end
  if r > p.L + p.W then r = p.L + p.W end
  return r
end

local function py(p, v)
  if v == MAXI then return p.T end
  if v == MINI then return p.T + p.H end
  local r = p.T + p.H - (v - p.y0) / (p.y1 - p.y0) * p.H
  if r < p.T then r = p.T end
  if r > p.T + p.H then r = p.T + p.H end
  return r
end

local function axes(out, p)
  out[#out + 1] = fmt('<g class="axes">\n<rect class="frame" x="%.1f" y="%.1f" width="%.1f" ' ..
    'height="%.1f"/>\n', p.L, p.T, p.W, p.H)
  local step = nice_step(p.y1 - p.y0, 8)
  local v = math.ceil(p.y0 / step) * step
  while v <= p.y1 do
    local y = py(p, math.floor(v + 0.5))
    out[#out + 1] = fmt('<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>' ..
      '<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>\n',
      p.L, y, p.L + p.W, y, p.L - 6, y + 4, tick_label(v, step, p.epoch))
    v = v + step
  end
  local xs = nice_step(p.x1 - p.x0, 10)
  if p.xmode ~= "time" and xs < 1 then xs = 1 end
  v = math.ceil(p.x0 / xs) * xs
  while v <= p.x1 do
    local x = p.L + (v - p.x0) / (p.x1 - p.x0) * p.W
    local b
    if p.xmode ~= "time" then b = fmt("%.0f", math.abs(v) < 0.5 and 0.0 or v)
    else b = tick_label(v - p.x0, xs, false) end
    out[#out + 1] = fmt('<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>' ..
      '<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>\n',
      x, p.T, x, p.T + p.H, x, p.T + p.H + 16, b)
    v = v + xs
  end
  out[#out + 1] = fmt('<text class="axis" x="%.1f" y="%.1f" text-anchor="middle">%s</text>\n',
    p.L + p.W / 2, p.T + p.H + 34, p.xmode ~= "time" and
    "arrival order of the records at the assigners" or "processing time since the first event")
  out[#out + 1] = fmt('<text class="axis" transform="translate(%.1f %.1f) rotate(-90)" ' ..
    'text-anchor="middle">event time%s</text>\n</g>\n', p.L - 80, p.T + p.H / 2,
    p.epoch and " (UTC)" or "")
end

local function key_class(k)
  if k == nil then return "kn" end
  if k == 0 or k > LEGEND_KEYS then return "ko" end
  return "k" .. (k - 1)
end

local function key_name(tl, k)
  if k and k >= 1 and k <= LEGEND_KEYS then return tl.keys[k] end
end

-- The firings and cleanups of one window at one x make one mark (data-n: how many keys).
local function merge_marks(marks)
  local out = {}
  for _, m in ipairs(marks) do
    local last = out[#out]
    if last and last.x == m.x and last.kind == m.kind and last.series == m.series and
        last.start == m.start and last.stop == m.stop then
      last.count = last.count + 1
      if last.key ~= m.key then last.key = nil end
    else
      out[#out + 1] = {kind = m.kind, x = m.x, t = m.t, wm = m.wm, start = m.start,
                       stop = m.stop, series = m.series, key = m.key, count = 1}
    end
  end
  return out
end

local function panel(out, tl, p, top)
  local st = tl.stats
  local function w(...) out[#out + 1] = fmt(...) end
  w('<g class="panel" data-title="%s" data-records="%d" data-late="%d" data-firings="%d" ' ..
    'data-late-firings="%d" data-mean-firing-delay="%.1f">\n', esc(tl.title), st.records,
    st.late_dropped + st.late_side, st.firings, st.late_firings, st.mean_firing_delay)
  w('<text class="title" x="%.1f" y="%.1f">%s</text>\n', p.L, top + 22, esc(tl.title))
  w('<text class="stats" x="%.1f" y="%.1f">%d records', p.L, top + 42, st.records)
  if st.records_shown + #tl.lates < st.records then
    w(" (%d drawn)", st.records_shown + #tl.lates)
  end
  w(' · <tspan class="bad">%d late records</tspan> (%d dropped, %d to a side output)',
    st.late_dropped + st.late_side, st.late_dropped, st.late_side)
  if #tl.lates < st.late_dropped + st.late_side then w(" (%d drawn)", #tl.lates) end
  w(" · %d firings, %d of them late · mean firing delay ", st.firings, st.late_firings)
  if st.delay_samples > 0 then w("%.0f ms", st.mean_firing_delay) else w("-") end
  if st.oom then w(" · OUT OF MEMORY: partial picture") end
  w("</text>\n")
  axes(out, p)
  -- window bands
  w('<g class="bands">\n')
  local right = p.L + p.W
  for _, b in ipairs(tl.windows) do
    local x0 = px(p, b.x0, b.t0)
    local x1 = b.x1 and px(p, b.x1, b.t1) or right
    local y0, y1 = py(p, b.stop), py(p, b.start)
    if x1 - x0 < 2 then x1 = x0 + 2 end
    w('<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s of %s',
      x0, y0, x1 - x0, y1 - y0, fmt_win(b.start, b.stop, p.epoch and #tl.windows <= 300),
      esc(tl.series[b.series].name))
    if b.x1 then
      w(": from record #%d until its cleanup at #%d</title></rect>\n", b.x0, b.x1)
    else
      w(": from record #%d, never cleaned up</title></rect>\n", b.x0)
    end
  end
  w("</g>\n")
  -- records
  local recs = tl.records
  local titles, radius = #recs <= 3000, #recs <= 300 and "3.4" or "2"
  w('<g class="records">\n')
  for _, r in ipairs(recs) do
    if not r.late then -- drawn with the late records
      w('<circle class="rec %s" cx="%.1f" cy="%.1f" r="%s"', key_class(r.key),
        px(p, r.x, r.t), py(p, r.ts), radius)
      if titles then
        w("><title>record #%d: ts %s", r.x, fmt_ts(r.ts, p.epoch))
        local k = key_name(tl, r.key)
        if k then w(", key %s", esc(k)) end
        w("</title></circle>\n")
      else
        w("/>\n")
      end
    end
  end
  w("</g>\n")
  -- watermark lines
  w('<g class="watermarks">\n')
  for s, se in ipairs(tl.series) do
    local n = #se.steps
    if n > 0 then
      local col = LINE_COLOURS[se.window and 5 + (s - 1) % 2 or 1 + (s - 1) % 4]
      local d = {fmt("M%.1f %.1f", px(p, se.steps[1].x, se.steps[1].t), py(p, se.steps[1].v))}
      for i = 2, n do
        local q = se.steps[i]
        d[#d + 1] = fmt("H%.1fV%.1f", px(p, q.x, q.t), py(p, q.v))
      end
      if se.steps[n].v ~= MAXI then d[#d + 1] = fmt("H%.1f", right) end
      w('<path class="wm %s" stroke="%s" data-op="%s" data-steps="%d" d="%s"><title>%s ' ..
        'watermark of %s: %d advances, last %s</title></path>\n',
        se.window and "window" or "assigner", col, esc(se.name), n, concat(d),
        se.window and "combined input" or "generated", esc(se.name), se.advances,
        fmt_ts(se.steps[n].v, p.epoch))
    end
  end
  w("</g>\n")
  -- firings and cleanups
  w('<g class="marks">\n')
  local marks = merge_marks(tl.marks)
  local terse = #marks > 500 -- big runs: shorter titles keep the page small
  for _, m in ipairs(marks) do
    local x = px(p, m.x, m.t)
    local y = m.start == MINI and p.T or py(p, m.stop - 1)
    local b, c = fmt_win(m.start, m.stop, p.epoch and not terse), fmt_ts(m.wm, p.epoch and not terse)
    if m.kind == "fire" then
      w('<path class="fire ontime" data-n="%d" d="M%.1f %.1fl-5.5 -9h11z">' ..
        "<title>%s fired on time: the watermark reached %s", m.count, x, y, b, c)
    elseif m.kind == "late_fire" then
      w('<path class="fire late" data-n="%d" d="M%.1f %.1fl6 6l-6 6l-6 -6z">' ..
        "<title>late firing of %s%s(watermark %s)", m.count, x, y - 6, b,
        terse and " " or ": a late record arrived within the allowed lateness ", c)
    else
      w('<path class="cleanup" data-n="%d" d="M%.1f %.1fl8 8m0 -8l-8 8">' ..
        "<title>%s cleaned up (state deleted) at watermark %s", m.count, x - 4,
        (m.start == MINI and p.T or py(p, m.start)) - 4, b, c)
    end
    if m.count > 1 then w(", %d keys", m.count)
    elseif key_name(tl, m.key) then w(", key %s", esc(key_name(tl, m.key))) end
    w("</title></path>\n")
  end
  w("</g>\n")
  -- late records
  w('<g class="lates">\n')
  terse = #tl.lates > 300
  for _, l in ipairs(tl.lates) do
    local b, c = fmt_ts(l.ts, p.epoch and not terse), fmt_ts(l.wm, p.epoch and not terse)
    w('<circle class="late %s" cx="%.1f" cy="%.1f" r="4.5"><title>late record #%d: ts %s',
      l.side and "side" or "dropped", px(p, l.x, l.t), py(p, l.ts), l.x, b)
    if key_name(tl, l.key) then w(", key %s", esc(key_name(tl, l.key))) end
    if terse then
      w(": ts + %d &lt;= watermark %s. ", l.lateness, c)
    else
      w(". Reason: ts + allowed lateness (%d ms) &lt;= watermark %s of ", l.lateness, c)
      if l.series then w("%s", esc(tl.series[l.series].name)) end
      w(": every window it belongs to is already cleaned up. ")
    end
    if l.side then
      w("Sent to side output '%s'.</title></circle>\n", esc(l.tag or ""))
    else
      w("Dropped%s.</title></circle>\n", terse and "" or " (counted in late_records_dropped)")
    end
  end
  w("</g>\n")
  -- legend
  local lx, ly = p.L + p.W + 22, p.T + 6
  w('<g class="legend">\n')
  w('<text class="lh" x="%.1f" y="%.1f">keys</text>\n', lx, ly)
  local nk = math.min(#tl.keys, LEGEND_KEYS)
  local other = tl.other_keys or #tl.keys > LEGEND_KEYS
  for k = 1, nk + (other and 1 or 0) do
    ly = ly + 16
    w('<circle class="%s" cx="%.1f" cy="%.1f" r="4"/><text x="%.1f" y="%.1f">%s</text>\n',
      key_class(k <= nk and k or 0), lx + 5, ly - 4, lx + 15, ly,
      k <= nk and esc(tl.keys[k]) or "other keys")
  end
  ly = ly + 26
  w('<text class="lh" x="%.1f" y="%.1f">marks</text>\n', lx, ly)
  ly = ly + 18
  w('<circle class="late side" cx="%.1f" cy="%.1f" r="4.5"/><text x="%.1f" y="%.1f">late ' ..
    "record, to side output</text>\n", lx + 5, ly - 4, lx + 15, ly)
  ly = ly + 18
  w('<circle class="late dropped" cx="%.1f" cy="%.1f" r="4.5"/><text x="%.1f" y="%.1f">late ' ..
    "record, dropped</text>\n", lx + 5, ly - 4, lx + 15, ly)
  ly = ly + 18
  w('<path class="fire ontime" d="M%.1f %.1fl-5.5 -9h11z"/><text x="%.1f" y="%.1f">window ' ..
    "fired (watermark)</text>\n", lx + 5, ly, lx + 15, ly)
  ly = ly + 18
  w('<path class="fire late" d="M%.1f %.1fl6 6l-6 6l-6 -6z"/><text x="%.1f" y="%.1f">late ' ..
    "firing</text>\n", lx + 5, ly - 10, lx + 15, ly)
  ly = ly + 18
  w('<path class="cleanup" d="M%.1f %.1fl8 8m0 -8l-8 8"/><text x="%.1f" y="%.1f">window ' ..
    "cleaned up</text>\n", lx + 1, ly - 8, lx + 15, ly)
  ly = ly + 18
  w('<rect class="band" x="%.1f" y="%.1f" width="10" height="10"/><text x="%.1f" y="%.1f">' ..
    "window [start, end) while open</text>\n", lx, ly - 9, lx + 15, ly)
  ly = ly + 26
  w('<text class="lh" x="%.1f" y="%.1f">watermarks</text>\n', lx, ly)
  for s, se in ipairs(tl.series) do
    if #se.steps > 0 then
      ly = ly + 16
      -- the name fits the legend's margin; the whole name is in the title (hover)
      local name = #se.name >= 24 and se.name:sub(1, 20) .. "..." or se.name
      w('<path class="wm %s" stroke="%s" d="M%.1f %.1fh14"/><text x="%.1f" y="%.1f">%s %s' ..
        "<title>%s</title></text>\n", se.window and "window" or "assigner",
        LINE_COLOURS[se.window and 5 + (s - 1) % 2 or 1 + (s - 1) % 4], lx, ly - 4, lx + 19, ly,
        se.window and "window input:" or "assigner:", esc(name), esc(se.name))
    end
  end
  w("</g>\n</g>\n")
end

local CSS = "text{font-family:sans-serif;font-size:12px;fill:#222}" ..
  ".title{font-size:15px;font-weight:bold}.stats{font-size:12.5px}.bad{fill:#c81e1e}" ..
  ".lh{font-weight:bold}.tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}" ..
  ".frame{fill:none;stroke:#999}.grid{stroke:#eee}" ..
  ".band{fill:#8a94a6;fill-opacity:.13;stroke:#8a94a6;stroke-opacity:.45}" ..
  ".rec{stroke:none}.kn{fill:#777}.ko{fill:#aaa}" ..
  ".wm{fill:none;stroke-width:1.6}.wm.assigner{stroke-dasharray:6 3;stroke-width:2}" ..
  ".fire.ontime{fill:#2a9d3a;stroke:#145a1e}.fire.late{fill:#f39c12;stroke:#9a5b00}" ..
  ".cleanup{fill:none;stroke:#555;stroke-width:1.6}" ..
  ".late.side{fill:#fff;stroke:#d62020;stroke-width:2.4}" ..
  ".late.dropped{fill:#d62020;stroke:#7a0000}"

--- The picture of recordings drawn one above the other on the same scales, as text.
-- @tparam {table,...} recs recordings (one: one run; two: a comparison)
-- @tparam[opt] table opts `x = "order"` (default) or `"time"`; `html = true` for a page
-- @treturn string the SVG document or the HTML page
function M.render(recs, opts)
  opts = opts or {}
  local xmode = opts.x or "order"
  assert(#recs >= 1, "nothing to draw")
  local p = scales(recs, xmode)
  local ph = #recs == 1 and 620 or 500
  local height = ph * #recs
  local out = {}
  if opts.html then
    out[#out + 1] = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' ..
      "<title>wmrun timeline: " .. esc(recs[1].title) .. "</title><style>body{margin:16px;" ..
      "background:#f6f6f6;font-family:sans-serif}svg{background:#fff;border:1px solid #ddd;" ..
      "max-width:100%;height:auto}p{color:#444;font-size:13px}</style></head><body>\n"
  else
    out[#out + 1] = '<?xml version="1.0" encoding="UTF-8"?>\n'
  end
  out[#out + 1] = fmt('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" ' ..
    'viewBox="0 0 %d %d">\n<style>%s', PIC_W, height, PIC_W, height, CSS)
  for k = 1, LEGEND_KEYS do out[#out + 1] = fmt(".k%d{fill:%s}", k - 1, KEY_COLOURS[k]) end
  out[#out + 1] = fmt('</style>\n<rect width="%d" height="%d" fill="#fff"/>\n', PIC_W, height)
  for k, tl in ipairs(recs) do
    local top = ph * (k - 1)
    p.L, p.T, p.W, p.H = PAN_L, top + PAN_T, PIC_W - PAN_L - PAN_R, ph - PAN_T - PAN_B - 8
    panel(out, tl, p, top)
  end
  out[#out + 1] = "</svg>\n"
  if opts.html then
    out[#out + 1] = fmt("<p>Hover over a mark for details. x: %s; y: event time. Written by " ..
      "wmrun --timeline.</p>\n</body></html>\n",
      xmode == "time" and "processing time" or "arrival order")
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

return M
