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

local MAXI, MINI = math.maxinteger, math.mininteger
local fmt, concat = string.format, table.concat

-- The class of a watermark line: an assigner's, a window operator's input, or input 1 or 2
-- of a two-input operator (input 2 dashed).
local function series_class(se)
  if se.input then return "window input" .. se.input end
  return se.window and "window" or "assigner"
end

local KEY_COLOURS = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                     "#edc948", "#9c755f", "#17becf", "#bcbd22", "#1f3b73"}
-- assigners: dark, dashed, on top; window inputs: wide, light, underneath (so that a window
-- input equal to its assigner's watermark still shows both)
local ASSIGNER_COLOURS = {"#1f5fbf", "#7b3fa0", "#0b8a7a", "#b8860b"}
local WINDOW_COLOURS = {"#f0a030", "#e06666", "#7fc97f"}
local NCOLOURS = #KEY_COLOURS

local PIC_W = 1400
local PAN_L, PAN_R = 120, 262 -- left: event-time axis and lane names; right: the legend
local HEAD = 58                -- title and counts
local LANES_GAP = 30           -- between the plot and the lanes (their heading)
local AXIS_B = 58              -- the x axis: two rows of labels and its name
local LABEL_CHARS = 17         -- lane and legend names are cut to this (whole in the hover)
local VALUE_CHARS = 18         -- firing values next to their mark
local CHAR_W = 5.6             -- a 10 px character, roughly: for the overlap of value labels

local function esc(s)
  return (tostring(s):gsub("[%c<>&\"]", function(c)
    if c == "<" then return "&lt;" elseif c == ">" then return "&gt;"
    elseif c == "&" then return "&amp;" elseif c == '"' then return "&quot;"
    elseif c == "\n" or c == "\t" then return c end
    return ""
  end))
end

-- At most n characters of s (UTF-8 aware), "..." marking a cut.
local function cut(s, n)
  s = tostring(s)
  local len = utf8.len(s)
  if not len then -- not UTF-8: bytes
    return #s > n and s:sub(1, n - 1) .. "..." or s
  end
  if len <= n then return s end
  return s:sub(1, utf8.offset(s, n - 1) - 1) .. "..."
end

-- At most n characters of s, the middle cut out (an operator's name ends with its line).
local function cut_middle(s, n)
  local len = utf8.len(s)
  if not len or len <= n then return cut(s, n) end
  local head, tail = (n - 3) // 2, n - 3 - (n - 3) // 2
  return s:sub(1, utf8.offset(s, head + 1) - 1) .. "..." .. s:sub(utf8.offset(s, len - tail + 1))
end

local function epoch_like(v) return math.abs(v) >= 1e11 end

local function clock(v, ms)
  local s = v // 1000
  local d = os.date("!*t", s)
  if ms then return fmt("%02d:%02d:%02d.%03d", d.hour, d.min, d.sec, v - s * 1000) end
  return fmt("%02d:%02d:%02d", d.hour, d.min, d.sec)
end

-- An event time as text: raw ms, with the UTC time of day for epoch-like values.
local function fmt_ts(v, epoch)
  if v == MAXI then return "MAX (end of input)" end
  if v == MINI then return "MIN" end
  if epoch then return fmt("%d (%s UTC)", v, clock(v, true)) end
  return fmt("%d", v)
end

local function fmt_win(start, stop, epoch)
  if start == MINI then return "global window" end
  return fmt("window [%s, %s)", fmt_ts(start, epoch), fmt_ts(stop, epoch))
end

-- A duration as a tick label: "250 ms", "1.5 s", "2 min".
local function fmt_dur(v, step)
  if math.abs(v) < 0.5 then return "0" end
  if step >= 60000 and math.fmod(step, 60000) == 0 then return fmt("%g min", v / 60000) end
  if step >= 100 then return fmt("%g s", v / 1000) end
  return fmt("%g ms", v)
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
  if epoch then return clock(math.floor(v + 0.5), step < 1000) end
  if step >= 1000 and math.fmod(step, 1000) == 0 then return fmt("%g s", v / 1000) end
  return fmt("%g ms", v)
end

-- The scales shared by every panel.
local function scales(recs, xmode)
  local ylo, yhi, xlo, xhi = math.huge, -math.huge, math.huge, -math.huge
  local tlo = math.huge
  local function y(v)
    if v == MINI or v == MAXI then return end
    if v < ylo then ylo = v end
    if v > yhi then yhi = v end
  end
  local function x(e, xv, tv)
    tv = tv or e.t
    local v = xmode == "time" and tv or (xv or e.x)
    if v < xlo then xlo = v end
    if v > xhi then xhi = v end
  end
  for _, tl in ipairs(recs) do
    for _, r in ipairs(tl.records) do
      y(r.ts); x(r)
      if r.t < tlo then tlo = r.t end
    end
    for _, l in ipairs(tl.lates) do y(l.ts); x(l) end
    for _, m in ipairs(tl.marks) do
      if m.start ~= MINI then y(m.start); y(m.stop) end
      x(m)
    end
    for _, w in ipairs(tl.windows) do y(w.start); y(w.stop) end
    for _, c in ipairs(tl.checkpoints or {}) do x(c) end
    for _, s in ipairs(tl.series) do
      for _, p in ipairs(s.steps) do y(p.v); x(p) end
    end
    if xmode ~= "time" then x(nil, tl.arrivals, 0) end
  end
  if ylo > yhi then ylo, yhi = 0, 1000 end
  if xlo > xhi then xlo, xhi = 0, 1 end
  if xmode ~= "time" then xlo = 0 end
  if tlo == math.huge then tlo = xlo end
  ylo, yhi, xlo, xhi = ylo + 0.0, yhi + 0.0, xlo + 0.0, xhi + 0.0
  if yhi - ylo < 1 then yhi = ylo + 1 end
  if xhi - xlo < 1 then xhi = xlo + 1 end
  local pad, xpad = (yhi - ylo) * 0.04, (xhi - xlo) * 0.015
  return {y0 = ylo - pad, y1 = yhi + pad, x0 = xlo - xpad, x1 = xhi + xpad, xmode = xmode,
          epoch = epoch_like(ylo), first = xmode == "time" and tlo or nil}
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

-- The processing time at arrival x (the nearest recorded record at or before it).
local function time_at(tl, x)
  local r = tl.records
  local lo, hi = 1, #r
  if hi == 0 or r[1].x > x then return nil end
  while lo < hi do
    local mid = (lo + hi + 1) // 2
    if r[mid].x <= x then lo = mid else hi = mid - 1 end
  end
  return r[lo].t
end

-- x ticks at three densities (about 10, 50 and 250 over the width): the page's script
-- shows the denser ones as the view is zoomed in (data-n: ticks of that density).
local function x_ticks(p, tl)
  local out, seen = {}, {}
  local tspan
  if p.xmode ~= "time" and #tl.records > 0 then
    tspan = tl.records[#tl.records].t - tl.records[1].t
  end
  -- (a file read in a few milliseconds has no processing time worth a label)
  local tstep = tspan and tspan >= 100 and nice_step(tspan, 10)
  for lv, n in ipairs({10, 50, 250}) do
    local xs = nice_step(p.x1 - p.x0, n)
    if p.xmode ~= "time" and xs < 1 then break end
    local v = math.ceil(p.x0 / xs) * xs
    while v <= p.x1 do
      local key = fmt("%.6g", v)
      if not seen[key] then
        seen[key] = true
        local label, sub
        if p.xmode ~= "time" then
          label = fmt("%.0f", math.abs(v) < 0.5 and 0.0 or v)
          local t = tstep and time_at(tl, v)
          if t then
            local d = t - tl.records[1].t
            sub = d < 0.5 and "0" or "+" .. fmt_dur(d, tstep)
          end
        elseif epoch_like(p.first) then
          label = clock(math.floor(v + 0.5), xs < 1000)
        else
          label = math.abs(v - p.first) < 0.5 and "0" or "+" .. fmt_dur(v - p.first, xs)
        end
        out[#out + 1] = {v = v, lv = lv - 1, n = n, label = label, sub = sub}
      end
      v = v + xs
    end
  end
  return out, tstep ~= nil and tstep ~= false
end

local function axes(w, p, tl, bottom)
  w('<g class="axes">\n<rect class="frame" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>\n',
    p.L, p.T, p.W, p.H)
  local step = nice_step(p.y1 - p.y0, 8)
  local v = math.ceil(p.y0 / step) * step
  while v <= p.y1 do
    local y = py(p, math.floor(v + 0.5))
    w('<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>' ..
      '<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>\n',
      p.L, y, p.L + p.W, y, p.L - 6, y + 4, tick_label(v, step, p.epoch))
    v = v + step
  end
  w('<text class="axis" transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">' ..
    "event time%s</text>\n</g>\n", p.L - 100, p.T + p.H / 2, p.epoch and " (UTC)" or "")
  -- the x axis: zoomed with the data
  local ticks, has_sub = x_ticks(p, tl)
  for pass = 1, 2 do -- the grid inside the plot, the labels a little beyond its edges
    w('<g class="zx xaxis" clip-path="url(#%s%s)">\n', p.clip, pass == 1 and "" or "-axis")
    for _, t in ipairs(ticks) do
      local x = p.L + (t.v - p.x0) / (p.x1 - p.x0) * p.W
      local attrs = fmt('data-lv="%d" data-n="%d"%s', t.lv, t.n,
        t.lv > 0 and ' style="display:none"' or "")
      if pass == 1 then
        w('<line class="xt grid%s" %s x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>\n',
          t.lv > 0 and " fine" or "", attrs, x, p.T, x, bottom)
      else
        w('<g class="xt" %s><text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>', attrs, x,
          bottom + 15, esc(t.label))
        if t.sub then
          w('<text class="tick sub" x="%.1f" y="%.1f" text-anchor="middle">%s</text>', x,
            bottom + 28, esc(t.sub))
        end
        w("</g>\n")
      end
    end
    w("</g>\n")
  end
  local name
  if p.xmode ~= "time" then
    name = "arrival order of the records at the assigners" ..
      (has_sub and " (below: processing time since the first record)" or "")
  else
    name = epoch_like(p.first) and "processing time (UTC)" or
      "processing time since the first event"
  end
  w('<text class="axis" x="%.1f" y="%.1f" text-anchor="middle">%s</text>\n',
    p.L + p.W / 2, bottom + (has_sub and 46 or 33), name)
end

local function key_colour_class(k)
  if k == nil then return "kn" end
  if k == 0 then return "ko" end
  return "k" .. ((k - 1) % NCOLOURS)
end

local function key_name(tl, k)
  if k == nil then return nil end
  if k == 0 then return "(one of the other keys)" end
  return tl.keys[k]
end

local function key_suffix(tl, k)
  local n = key_name(tl, k)
  return n and ", key " .. esc(n) or ""
end

local TIME_FIELDS = {ts = true, time = true, timestamp = true, event_time = true, rowtime = true}

-- A firing's value, short: compact text without the braces, the key's own field and the
-- timestamps (fields named ts, time, timestamp, event_time, rowtime, and epoch-like
-- numbers): the hover has the whole value.
local function short_value(v, key)
  if not v then return nil end
  local body = v:match("^{(.*)}$")
  if body then
    local parts = {}
    for name, val in body:gmatch('"([^"]*)":("?[^,]*"?)') do
      local plain = val:match('^"(.*)"$') or val
      local num = tonumber(plain)
      if plain ~= key and not TIME_FIELDS[name] and not (num and epoch_like(num)) then
        parts[#parts + 1] = name .. "=" .. plain
      end
    end
    if #parts > 0 then v = concat(parts, " ") end
  end
  return cut(v, VALUE_CHARS)
end

-- The firings and cleanups of one window at one x make one mark (data-n: how many keys).
local function merge_marks(marks)
  local out, at = {}, {}
  for _, m in ipairs(marks) do
    local id = fmt("%d|%s|%d|%d|%d", m.x, m.kind, m.series, m.start, m.stop)
    local same = at[id]
    if same then
      same.keys[#same.keys + 1] = m.key
    else
      same = {kind = m.kind, x = m.x, t = m.t, wm = m.wm, start = m.start, stop = m.stop,
              series = m.series, keys = {m.key}}
      out[#out + 1] = same
      at[id] = same
    end
  end
  return out
end

local function keys_text(tl, keys, limit)
  local names, seen = {}, {}
  for _, k in ipairs(keys) do
    local n = key_name(tl, k)
    if n and not seen[n] then
      seen[n] = true
      names[#names + 1] = n
    end
  end
  if #names == 0 then return "" end
  if #names == 1 and #keys == 1 then return ", key " .. esc(names[1]) end
  local shown = {}
  for i = 1, math.min(#names, limit) do shown[i] = esc(names[i]) end
  return fmt(", %d keys: %s%s", #keys, concat(shown, ", "), #names > limit and ", ..." or "")
end

-- The lanes: one per key (in the order keys appeared), then the other keys, then the
-- firings and late records whose key is unknown.
local function lanes_of(tl)
  local used = {}
  for _, m in ipairs(tl.marks) do if m.kind ~= "cleanup" then used[m.key or -1] = true end end
  for _, l in ipairs(tl.lates) do used[l.key or -1] = true end
  local lanes, index = {}, {}
  for k = 1, #tl.keys do
    if used[k] then lanes[#lanes + 1] = {key = k, name = tl.keys[k]}; index[k] = #lanes end
  end
  if used[0] then lanes[#lanes + 1] = {key = 0, name = "other keys"}; index[0] = #lanes end
  if used[-1] then lanes[#lanes + 1] = {key = nil, name = "(no key)"}; index[-1] = #lanes end
  return lanes, index
end

local function lane_height(n) return n <= 16 and 20 or 14 end

-- Hides value labels that would overlap the previous shown one of their lane or a mark
-- (the page's script does the same again after every zoom). xs: the marks' x, sorted.
local function place_values(vals, xs, limit)
  for _, v in ipairs(vals) do
    if v.x + v.w > limit then -- no room on the right (the end of input): on the left
      v.x, v.dx = v.x - 16 - v.w, v.dx - 16 - v.w
    end
  end
  table.sort(vals, function(a, b) return a.x < b.x end)
  local right, j = -math.huge, 1
  for _, v in ipairs(vals) do
    while xs[j] and xs[j] <= v.x do j = j + 1 end
    v.shown = v.x >= right and not (xs[j] and xs[j] - 8 < v.x + v.w)
    if v.shown then right = v.x + v.w + 6 end
  end
end

-- The legend's marks: the shape (at x, y), its offset from the text's start, the text.
local LEGEND_MARKS = {
  {'<circle class="late side" cx="%.1f" cy="%.1f" r="4.5"/>', 5, -4, "late record, to side output"},
  {'<circle class="late dropped" cx="%.1f" cy="%.1f" r="4.5"/>', 5, -4, "late record, dropped"},
  {'<path class="fire ontime" d="M%.1f %.1fl-5.5 -9h11z"/>', 5, 0, "window fired (watermark)"},
  {'<path class="fire late" d="M%.1f %.1fl6 6l-6 6l-6 -6z"/>', 5, -10, "late firing"},
  {'<path class="cleanup" d="M%.1f %.1fl8 8m0 -8l-8 8"/>', 1, -8, "window cleaned up"},
  {'<rect class="band" x="%.1f" y="%.1f" width="10" height="10"/>', 0, -9,
   "window [start, end) while open"},
}
local LEGEND_CKPT = {'<path class="ckpt" d="M%.1f %.1fv12"/>', 5, -11, "checkpoint completed"}

local function fmt_bytes(n)
  if n < 1024 then return fmt("%d bytes", n) end
  if n < 1024 * 1024 then return fmt("%d bytes (%.1f KiB)", n, n / 1024) end
  return fmt("%d bytes (%.1f MiB)", n, n / (1024 * 1024))
end

-- The completed checkpoints: a vertical line at the moment each was committed, its number
-- at the top; the hover says its size and how long it took.
local function checkpoint_marks(w, tl, p)
  if #(tl.checkpoints or {}) == 0 then return end
  w('<g class="checkpoints">\n')
  for _, c in ipairs(tl.checkpoints or {}) do
    local x = px(p, c.x, c.t)
    local title = fmt("checkpoint %d%s: %s in %.1f ms, %s", c.id,
      c.final and " (final: the end of the input)" or "", fmt_bytes(c.bytes), c.ms,
      c.x == 0 and "before the first record" or fmt("after %d records", c.x))
    w('<path class="ckpt" data-id="%d" d="M%.1f %.1fV%.1f"><title>%s</title></path>' ..
      '<text class="ckpt-n" x="%.1f" y="%.1f">%d<title>%s</title></text>\n', c.id, x, p.T,
      p.T + p.H, title, x + 2, p.T + 10, c.id, title)
  end
  w("</g>\n")
end

local function panel(out, tl, p, top, height)
  local st = tl.stats
  local function w(...) out[#out + 1] = fmt(...) end
  local lanes, lane_index = lanes_of(tl)
  local lh = lane_height(#lanes)
  local lanes_top = p.T + p.H + LANES_GAP
  local bottom = lanes_top + #lanes * lh
  p.clip = p.id .. "-clip"
  w('<g class="panel" data-title="%s" data-records="%d" data-late="%d" data-firings="%d" ' ..
    'data-late-firings="%d" data-mean-firing-delay="%.1f" data-l="%.1f" data-w="%.1f">\n',
    esc(tl.title), st.records, st.late_dropped + st.late_side, st.firings, st.late_firings,
    st.mean_firing_delay, p.L, p.W)
  w('<clipPath id="%s"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>' ..
    '<clipPath id="%s-axis"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>\n',
    p.clip, p.L - 0.5, top, p.W + 1, height, p.clip, p.L - 40, top, p.W + 80, height)
  w('<text class="title" x="%.1f" y="%.1f">%s</text>\n', p.L, top + 22, esc(tl.title))
  w('<text class="stats" x="%.1f" y="%.1f">%d records', p.L, top + 42, st.records)
  if st.records_shown + #tl.lates < st.records then
    w(" (%d drawn)", st.records_shown + #tl.lates)
  end
  w(' · <tspan class="bad">%d late records</tspan> (%d dropped, %d to a side output)',
    st.late_dropped + st.late_side, st.late_dropped, st.late_side)
  if #tl.lates < st.late_dropped + st.late_side then w(" (%d drawn)", #tl.lates) end
  w(" · %d firings, %d of them late", st.firings, st.late_firings)
  local fired = 0
  for _, m in ipairs(tl.marks) do if m.kind ~= "cleanup" then fired = fired + 1 end end
  if fired < st.firings then w(" (%d drawn)", fired) end
  w(" · mean firing delay ")
  if st.delay_samples > 0 then w("%.0f ms", st.mean_firing_delay) else w("-") end
  local ncp = st.checkpoints or 0
  if ncp > 0 then
    w(" · %d checkpoint%s", ncp, ncp == 1 and "" or "s")
    if #tl.checkpoints < ncp then w(" (%d drawn)", #tl.checkpoints) end
  end
  if st.oom then w(" · OUT OF MEMORY: partial picture") end
  w("</text>\n")
  axes(w, p, tl, bottom)
  local right = p.L + p.W
  -- the keys of every window (from its firings and cleanups), for the bands' hovers
  local band_keys = {}
  for _, m in ipairs(tl.marks) do
    local id = m.series .. ":" .. m.start .. ":" .. m.stop
    local ks = band_keys[id] or {seen = {}}
    band_keys[id] = ks
    if not ks.seen[m.key or -1] then
      ks.seen[m.key or -1] = true
      ks[#ks + 1] = m.key
    end
  end
  w('<g class="zx" clip-path="url(#%s)">\n', p.clip)
  checkpoint_marks(w, tl, p)
  -- window bands
  w('<g class="bands">\n')
  for _, b in ipairs(tl.windows) do
    local x0 = px(p, b.x0, b.t0)
    local x1 = b.x1 and px(p, b.x1, b.t1) or right
    local y0, y1 = py(p, b.stop), py(p, b.start)
    if x1 - x0 < 2 then x1 = x0 + 2 end
    w('<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s of %s',
      x0, y0, x1 - x0, y1 - y0, fmt_win(b.start, b.stop, p.epoch and #tl.windows <= 300),
      esc(tl.series[b.series].name))
    if b.x1 then
      w(": from record #%d until its cleanup at #%d", b.x0, b.x1)
    else
      w(": from record #%d, never cleaned up", b.x0)
    end
    w("%s</title></rect>\n", keys_text(tl, band_keys[b.series .. ":" .. b.start .. ":" ..
      b.stop] or {}, 8))
  end
  w("</g>\n")
  -- records
  local recs = tl.records
  local titles, radius = #recs <= 3000, #recs <= 300 and "3.4" or "2"
  w('<g class="records">\n')
  for _, r in ipairs(recs) do
    if not r.late then -- drawn with the late records
      w('<circle class="rec %s" cx="%.1f" cy="%.1f" r="%s"', key_colour_class(r.key),
        px(p, r.x, r.t), py(p, r.ts), radius)
      if titles then
        w("><title>record #%d: ts %s%s</title></circle>\n", r.x, fmt_ts(r.ts, p.epoch),
          key_suffix(tl, r.key))
      else
        w("/>\n")
      end
    end
  end
  w("</g>\n")
  -- watermark lines: window inputs underneath, assigners on top
  w('<g class="watermarks">\n')
  local na, nw = 0, 0
  for _, pass in ipairs({true, false}) do
    for _, se in ipairs(tl.series) do
      local n = #se.steps
      if se.window == pass and n > 0 then
        local col
        if se.window then nw = nw + 1; col = WINDOW_COLOURS[1 + (nw - 1) % #WINDOW_COLOURS]
        else na = na + 1; col = ASSIGNER_COLOURS[1 + (na - 1) % #ASSIGNER_COLOURS] end
        se.colour = col
        local d = {fmt("M%.1f %.1f", px(p, se.steps[1].x, se.steps[1].t), py(p, se.steps[1].v))}
        for i = 2, n do
          local q = se.steps[i]
          d[#d + 1] = fmt("H%.1fV%.1f", px(p, q.x, q.t), py(p, q.v))
        end
        if se.steps[n].v ~= MAXI then d[#d + 1] = fmt("H%.1f", right) end
        w('<path class="wm %s" stroke="%s" data-op="%s" data-steps="%d" d="%s"><title>%s of ' ..
          "%s: %d advances, last %s</title></path>\n", series_class(se),
          col, esc(se.name), n, concat(d), se.input and fmt("the own watermark of input %d (the " ..
          "operator's is the minimum of both inputs)", se.input) or se.window and
          "the combined input watermark (what the windows see)" or
          "the generated watermark", esc(se.name), se.advances, fmt_ts(se.steps[n].v, p.epoch))
      end
    end
  end
  w("</g>\n")
  -- firings and cleanups, at the end of their window: one mark per window and moment
  w('<g class="marks">\n')
  local marks = merge_marks(tl.marks)
  local terse = #marks > 500 -- big runs: shorter titles keep the page small
  for _, m in ipairs(marks) do
    local x = px(p, m.x, m.t)
    local y = m.start == MINI and p.T or py(p, m.stop - 1)
    local b, c = fmt_win(m.start, m.stop, p.epoch and not terse), fmt_ts(m.wm, p.epoch and not terse)
    if m.kind == "fire" then
      w('<path class="fire ontime" data-n="%d" d="M%.1f %.1fl-5.5 -9h11z">' ..
        "<title>%s fired on time: the watermark reached %s", #m.keys, x, y, b, c)
    elseif m.kind == "late_fire" then
      w('<path class="fire late" data-n="%d" d="M%.1f %.1fl6 6l-6 6l-6 -6z">' ..
        "<title>late firing of %s%s(watermark %s)", #m.keys, x, y - 6, b,
        terse and " " or ": a late record arrived within the allowed lateness ", c)
    else
      w('<path class="cleanup" data-n="%d" d="M%.1f %.1fl8 8m0 -8l-8 8">' ..
        "<title>%s cleaned up (state deleted) at watermark %s", #m.keys, x - 4,
        (m.start == MINI and p.T or py(p, m.start)) - 4, b, c)
    end
    w("%s</title></path>\n", keys_text(tl, m.keys, terse and 3 or 12))
  end
  w("</g>\n")
  -- late records
  w('<g class="lates">\n')
  terse = #tl.lates > 300
  local function late_title(l)
    local b, c = fmt_ts(l.ts, p.epoch and not terse), fmt_ts(l.wm, p.epoch and not terse)
    local t = {fmt("late record #%d: ts %s%s", l.x, b, key_suffix(tl, l.key))}
    if l.input then -- a two-input operator's (a join's): late on one of its inputs
      t[#t + 1] = fmt(" on input %d: behind the watermark %s of %s. ", l.input, c,
        l.series and esc(tl.series[l.series].name) or "")
    elseif terse then
      t[#t + 1] = fmt(": ts + %d &lt;= watermark %s. ", l.lateness, c)
    else
      t[#t + 1] = fmt(". Reason: ts + allowed lateness (%d ms) &lt;= watermark %s of %s: " ..
        "every window it belongs to is already cleaned up. ", l.lateness, c,
        l.series and esc(tl.series[l.series].name) or "")
    end
    if l.side then t[#t + 1] = fmt("Sent to side output '%s'.", esc(l.tag or ""))
    else t[#t + 1] = "Dropped" .. (terse and "." or " (counted in late_records_dropped).") end
    return concat(t)
  end
  for _, l in ipairs(tl.lates) do
    l.title = late_title(l)
    w('<circle class="late %s" cx="%.1f" cy="%.1f" r="4.5"><title>%s</title></circle>\n',
      l.side and "side" or "dropped", px(p, l.x, l.t), py(p, l.ts), l.title)
  end
  w("</g>\n</g>\n") -- lates, zx
  -- the lanes: every firing of every key, with its value, and the late records
  w('<g class="lanes">\n')
  local lane_items = {}
  for i = 1, #lanes do lane_items[i] = {} end
  for _, m in ipairs(tl.marks) do
    if m.kind ~= "cleanup" then
      local items = lane_items[lane_index[m.key or -1]]
      items[#items + 1] = {m = m}
    end
  end
  for _, l in ipairs(tl.lates) do
    local items = lane_items[lane_index[l.key or -1]]
    items[#items + 1] = {l = l}
  end
  for i, lane in ipairs(lanes) do
    local y = lanes_top + (i - 1) * lh + lh / 2
    local title = lane.key and key_name(tl, lane.key) or "firings whose key is unknown"
    w('<g class="lane" data-key="%s">\n', esc(lane.name))
    w('<rect class="lane-bg%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>', i % 2 == 0
      and " even" or "", p.L, y - lh / 2, p.W, lh)
    w('<circle class="%s" cx="%.1f" cy="%.1f" r="3.5"/><text class="lane-label" x="%.1f" ' ..
      'y="%.1f" text-anchor="end">%s<title>key %s</title></text>\n', key_colour_class(lane.key),
      p.L - 8, y, p.L - 15, y + 4, esc(cut(lane.name, LABEL_CHARS - 3)), esc(title))
    -- several items at one x (a watermark that closes many windows) sit side by side
    local items = lane_items[i]
    table.sort(items, function(a, b)
      local ea, eb = a.m or a.l, b.m or b.l
      local xa, xb = px(p, ea.x, ea.t), px(p, eb.x, eb.t)
      if xa ~= xb then return xa < xb end
      return (ea.stop or ea.ts) < (eb.stop or eb.ts)
    end)
    local vals, xs, lastx, dodge = {}, {}, nil, 0
    w('<g class="zx" clip-path="url(#%s)">\n', p.clip)
    for _, it in ipairs(items) do
      local e = it.m or it.l
      local x = px(p, e.x, e.t)
      if lastx and x - lastx < 0.05 then dodge = dodge + 9 else dodge = 0 end
      lastx = x
      xs[#xs + 1] = x + dodge
      local dx = dodge > 0 and fmt(' data-dx="%d"', dodge) or ""
      if it.l then
        w('<circle class="late %s"%s cx="%.1f" cy="%.1f" r="4"><title>%s</title></circle>\n',
          e.side and "side" or "dropped", dx, x + dodge, y, e.title)
      else
        local m = e
        local head = fmt("key %s: %s", esc(key_name(tl, m.key) or "unknown"),
          fmt_win(m.start, m.stop, p.epoch))
        local what = m.kind == "fire" and
          fmt("fired on time: the watermark reached %s", fmt_ts(m.wm, p.epoch)) or
          fmt("fired late (a late record within the allowed lateness; watermark %s)",
            fmt_ts(m.wm, p.epoch))
        local value = m.value and fmt(". Result: %s", esc(m.value)) or ""
        if m.kind == "fire" then
          w('<path class="fire ontime"%s d="M%.1f %.1fl-5 -8.5h10z"><title>%s %s%s</title></path>\n',
            dx, x + dodge, y + 4.5, head, what, value)
        else
          w('<path class="fire late"%s d="M%.1f %.1fl5 5l-5 5l-5 -5z"><title>%s %s%s</title></path>\n',
            dx, x + dodge, y - 5, head, what, value)
        end
        local sv = short_value(m.value, key_name(tl, m.key))
        if sv then
          vals[#vals + 1] = {x = x + dodge + 7, w = (utf8.len(sv) or #sv) * CHAR_W, text = sv,
            dx = dodge + 7}
        end
      end
    end
    table.sort(xs)
    place_values(vals, xs, p.L + p.W)
    for _, v in ipairs(vals) do
      w('<text class="val" data-dx="%.1f" data-w="%.0f" x="%.1f" y="%.1f"%s>%s</text>\n', v.dx,
        v.w, v.x, y + 3.5, v.shown and "" or ' style="display:none"', esc(v.text))
    end
    w("</g>\n</g>\n")
  end
  if #lanes > 0 then
    w('<text class="lh" x="%.1f" y="%.1f">firings and late records by key%s</text>\n',
      p.L, lanes_top - 8, #tl.keys > 0 and " (hover for the window and the result)" or "")
  end
  w("</g>\n") -- lanes
  -- legend
  local lx, ly = p.L + p.W + 22, p.T + 6
  local legend_bottom = top + height - 8
  w('<g class="legend">\n')
  w('<text class="lh" x="%.1f" y="%.1f">marks</text>\n', lx, ly)
  local entries = LEGEND_MARKS
  if #(tl.checkpoints or {}) > 0 then
    entries = {table.unpack(LEGEND_MARKS)}
    entries[#entries + 1] = LEGEND_CKPT
  end
  for _, e in ipairs(entries) do
    ly = ly + 18
    w(e[1], lx + e[2], ly + e[3])
    w('<text x="%.1f" y="%.1f">%s</text>\n', lx + 15, ly, e[4])
  end
  ly = ly + 26
  w('<text class="lh" x="%.1f" y="%.1f">watermarks</text>\n', lx, ly)
  local shown = 0
  for _, pass in ipairs({false, true}) do
    for _, se in ipairs(tl.series) do
      if se.window == pass and #se.steps > 0 and ly + 50 < legend_bottom - 60 then
        ly = ly + 17
        shown = shown + 1
        w('<path class="wm %s" stroke="%s" d="M%.1f %.1fh18"/><text x="%.1f" y="%.1f">%s</text>' ..
          '<text class="lname" x="%.1f" y="%.1f">%s<title>%s</title></text>\n',
          series_class(se), se.colour, lx, ly - 4, lx + 24, ly, se.input and
          fmt("input %d of the two-input operator", se.input) or se.window and
          "input of the window operator" or "generated by the assigner", lx + 24, ly + 14,
          esc(cut_middle(se.name, 40)), esc(se.name))
        ly = ly + 14
      end
    end
  end
  local nseries = 0
  for _, se in ipairs(tl.series) do if #se.steps > 0 then nseries = nseries + 1 end end
  if shown < nseries then
    ly = ly + 16
    w('<text x="%.1f" y="%.1f">and %d more (hover the lines)</text>\n', lx, ly, nseries - shown)
  end
  ly = ly + 26
  w('<text class="lh" x="%.1f" y="%.1f">keys</text>\n', lx, ly)
  local nk, room = #tl.keys, math.max(0, math.floor((legend_bottom - ly - 16) / 16))
  local listed = math.min(nk, NCOLOURS, room)
  if nk > listed then listed = math.max(0, math.min(listed, room - 1)) end
  for k = 1, listed do
    ly = ly + 16
    w('<circle class="%s" cx="%.1f" cy="%.1f" r="4"/><text x="%.1f" y="%.1f">%s<title>%s' ..
      "</title></text>\n", key_colour_class(k), lx + 5, ly - 4, lx + 15, ly,
      esc(cut(tl.keys[k], LABEL_CHARS + 8)), esc(tl.keys[k]))
  end
  if nk > listed or tl.other_keys then
    ly = ly + 16
    w('<circle class="ko" cx="%.1f" cy="%.1f" r="4"/><text x="%.1f" y="%.1f">%s</text>\n',
      lx + 5, ly - 4, lx + 15, ly, nk > listed and
      fmt("%d more%s (colours repeat: see the lanes)", nk - listed,
        tl.other_keys and "+" or "") or "other keys")
  end
  w("</g>\n</g>\n")
end

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
  ".lane-bg{fill:#fafafa}.lane-bg.even{fill:#f1f3f6}.lane-label{font-size:11px}" ..
  ".val{font-size:10px;fill:#333}.lname{font-size:10.5px;fill:#555}"

-- Zoom (wheel) and pan (drag) along x, double click to reset: every element under a .zx
-- group is moved by rewriting its x coordinates; the denser x ticks and the value labels
-- that have room are shown.
local SCRIPT = [[
(function(){
document.querySelectorAll('g.panel').forEach(function(p){
var svg=p.ownerSVGElement,L=+p.getAttribute('data-l'),W=+p.getAttribute('data-w'),k=1,tx=0,els=[],drag=null;
p.querySelectorAll('.zx [cx],.zx [x],.zx [x1],.zx path').forEach(function(e){
var o={e:e,dx:+(e.getAttribute('data-dx')||0)};
['cx','x','x1','x2','width','d'].forEach(function(n){var v=e.getAttribute(n);if(v!==null)o[n]=+v||v;});
els.push(o);});
function X(v,dx){return (L+(v-dx-L)*k+tx+dx).toFixed(1);}
function apply(){
els.forEach(function(o){var e=o.e,dx=o.dx;
if(o.cx!==undefined)e.setAttribute('cx',X(o.cx,dx));
if(o.x1!==undefined){e.setAttribute('x1',X(o.x1,dx));e.setAttribute('x2',X(o.x2,dx));}
if(o.x!==undefined){e.setAttribute('x',X(o.x,dx));
if(o.width!==undefined&&e.tagName=='rect'&&!e.classList.contains('lane-bg'))
e.setAttribute('width',Math.max(2,o.width*k).toFixed(1));}
if(o.d!==undefined)e.setAttribute('d',o.d.replace(/([MH])(-?[\d.]+)/g,function(_,c,v){return c+X(+v,dx);}));});
p.querySelectorAll('.xt').forEach(function(t){t.style.display=(W/+t.getAttribute('data-n')*k>=60)?'':'none';});
p.querySelectorAll('.lane').forEach(function(l){var r=-1e9,j=0,v=[].slice.call(l.querySelectorAll('.val')),m=[];
l.querySelectorAll('.zx path,.zx circle').forEach(function(e){
m.push(e.tagName=='circle'?+e.getAttribute('cx'):+e.getAttribute('d').slice(1).split(' ')[0]);});
m.sort(function(a,b){return a-b;});v.sort(function(a,b){return a.getAttribute('x')-b.getAttribute('x');});
v.forEach(function(t){var x=+t.getAttribute('x'),w=+t.getAttribute('data-w'),mx=x-(+t.getAttribute('data-dx'));
while(j<m.length&&m[j]<=x)j++;
var ok=x>=r&&x>=L&&x+w<=L+W+2&&mx>=L&&mx<=L+W&&!(j<m.length&&m[j]-8<x+w);
t.style.display=ok?'':'none';if(ok)r=x+w+6;});});}
function sx(ev){var r=svg.getBoundingClientRect();return (ev.clientX-r.left)*svg.viewBox.baseVal.width/r.width;}
function clamp(){if(k<1)k=1;if(k>400)k=400;if(tx>0)tx=0;if(tx<W*(1-k))tx=W*(1-k);}
p.addEventListener('wheel',function(ev){ev.preventDefault();var m=sx(ev),d=L+(m-L-tx)/k;
k*=ev.deltaY<0?1.25:0.8;clamp();tx=m-L-(d-L)*k;clamp();apply();},{passive:false});
p.addEventListener('mousedown',function(ev){drag={x:sx(ev),tx:tx};ev.preventDefault();});
window.addEventListener('mousemove',function(ev){if(!drag)return;tx=drag.tx+sx(ev)-drag.x;clamp();apply();});
window.addEventListener('mouseup',function(){drag=null;});
p.addEventListener('dblclick',function(){k=1;tx=0;apply();});});})();
]]

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
      xmode == "time" and "processing time" or "arrival order", SCRIPT)
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
