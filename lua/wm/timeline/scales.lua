--- The timeline picture's scales: event time up, arrival order or processing time along,
-- shared by every panel, and the axes drawn from them.
-- @module wm.timeline.scales

local MAXI, MINI = math.maxinteger, math.mininteger
local fmt = string.format

local T = require("wm.timeline.text")
local esc = T.esc
local epoch_like = T.epoch_like
local clock = T.clock
local fmt_dur = T.fmt_dur
local nice_step = T.nice_step
local tick_label = T.tick_label

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

-- Durations that make round time ticks (ms).
local TIME_STEPS = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000,
                    120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000}

-- The round duration step that gives about n ticks over span ms.
local function time_step(span, n)
  for _, st in ipairs(TIME_STEPS) do
    if span / st <= n then return st end
  end
  return nice_step(span, n)
end

-- The one unit of a processing-time axis spanning span ms: "ms", "s" or "min", and its ms.
local function time_unit(span)
  if span >= 120000 then return "min", 60000 end
  if span >= 1000 then return "s", 1000 end
  return "ms", 1
end

-- x ticks at three densities (about 10, 50 and 250 over the width): the page's script
-- shows the denser ones as the view is zoomed in (data-n: ticks of that density). On a
-- processing-time axis (--timeline-x time) the ticks are round durations after the first
-- arrival (or round clock times), labelled in one unit for the whole axis.
local function x_ticks(p, tl)
  local out, seen = {}, {}
  local tspan
  if p.xmode ~= "time" and #tl.records > 0 then
    tspan = tl.records[#tl.records].t - tl.records[1].t
  end
  -- (a file read in a few milliseconds has no processing time worth a label)
  local tstep = tspan and tspan >= 100 and nice_step(tspan, 10)
  local unit, udiv = time_unit(p.x1 - p.x0)
  for lv, n in ipairs({10, 50, 250}) do
    local xs = p.xmode == "time" and time_step(p.x1 - p.x0, n) or nice_step(p.x1 - p.x0, n)
    if p.xmode ~= "time" and xs < 1 then break end
    local v = math.ceil(p.x0 / xs) * xs
    if p.xmode == "time" and not epoch_like(p.first) then -- round durations after the first arrival
      v = p.first + math.ceil((p.x0 - p.first) / xs) * xs
    end
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
          label = math.abs(v - p.first) < 0.5 and "0" or fmt("+%s %s", fmt("%.3f", (v - p.first) / udiv)
            :gsub("0+$", ""):gsub("%.$", ""), unit)
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
      local attrs = fmt('data-lv="%d" data-n="%d" data-v="%.17g"%s', t.lv, t.n, t.v,
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

return {
  scales = scales,
  px = px,
  py = py,
  time_at = time_at,
  x_ticks = x_ticks,
  axes = axes,
}
