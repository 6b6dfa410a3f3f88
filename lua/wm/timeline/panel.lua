--- One panel of the timeline picture: a recording's title and counts, its plot (windows,
-- records, watermark lines, firings, late records), its lanes and its legend.
-- @module wm.timeline.panel

local MAXI, MINI = math.maxinteger, math.mininteger
local fmt, concat = string.format, table.concat

local T = require("wm.timeline.text")
local series_class = T.series_class
local ASSIGNER_COLOURS = T.ASSIGNER_COLOURS
local WINDOW_COLOURS = T.WINDOW_COLOURS
local LANES_GAP = T.LANES_GAP
local esc = T.esc
local fmt_ts = T.fmt_ts
local fmt_win = T.fmt_win
local key_colour_class = T.key_colour_class
local key_suffix = T.key_suffix
local merge_marks = T.merge_marks
local keys_text = T.keys_text
local fmt_bytes = T.fmt_bytes
local S = require("wm.timeline.scales")
local px = S.px
local py = S.py
local axes = S.axes
local lanes_mod = require("wm.timeline.lanes")
local legend = require("wm.timeline.legend")
local lanes_of, lane_height = lanes_mod.lanes_of, lanes_mod.lane_height

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

-- The plot's contents, clipped to it, each part a function: checkpoints, window bands,
-- records, watermark lines, firings and cleanups, late records.

-- The keys of every window (from its firings and cleanups), for the bands' hovers.
local function band_keys_of(tl)
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
  return band_keys
end

local function bands(w, tl, p, right)
  local band_keys = band_keys_of(tl)
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
end

local function records(w, tl, p)
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
end

local function watermarks(w, tl, p, right)
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
end

local function marks_of(w, tl, p)
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
end

local function lates(w, tl, p)
  w('<g class="lates">\n')
  local terse = #tl.lates > 300
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
end

-- The panel's group, its clip paths, its title and counts.
local function head(w, tl, p, top, height)
  local st = tl.stats
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
end

-- Draws recording tl as the panel at top (its height) into out, on scales p.
local function draw(out, tl, p, top, height)
  local function w(...) out[#out + 1] = fmt(...) end
  local lanes, lane_index = lanes_of(tl)
  local lh = lane_height(#lanes)
  local lanes_top = p.T + p.H + LANES_GAP
  local bottom = lanes_top + #lanes * lh
  p.clip = p.id .. "-clip"
  head(w, tl, p, top, height)
  axes(w, p, tl, bottom)
  local right = p.L + p.W
  w('<g class="zx" clip-path="url(#%s)">\n', p.clip)
  checkpoint_marks(w, tl, p)
  bands(w, tl, p, right)
  records(w, tl, p)
  watermarks(w, tl, p, right)
  marks_of(w, tl, p)
  lates(w, tl, p)
  lanes_mod.draw(w, tl, p, {lanes = lanes, lane_index = lane_index, lh = lh, lanes_top = lanes_top})
  legend.draw(w, tl, p, top, height)
end

return {
  draw = draw,
}
