--- The picture of a lab run (`wmrun lab LAB.lua --plot out.html`): one self-contained HTML
-- page with two SVG charts and the table.
--
-- Left: every candidate on a latency-versus-completeness chart (x: result latency p50 with a
-- whisker to p99; y: the share of records that were not late), the Pareto front marked.
-- Right: each candidate's watermark minus the perfect watermark over processing time (0 is
-- the perfect watermark; below it the watermark lags, above it it runs ahead and records
-- come late), the late records marked on their candidate's curve. A click on a legend entry
-- hides or shows a candidate.
-- @module wm.lab.plot
local M = {}

local COLORS = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                "#bcbd22", "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94"}

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

-- Round ticks (1, 2, 5 times a power of ten) covering [lo, hi].
local function ticks(lo, hi, n)
  if hi <= lo then hi = lo + 1 end
  local raw = (hi - lo) / (n or 6)
  local p = 10 ^ math.floor(math.log(raw, 10))
  local step = p
  for _, m in ipairs({1, 2, 5, 10}) do
    if m * p >= raw then step = m * p break end
  end
  local out = {}
  local t = math.ceil(lo / step) * step
  while t <= hi + step * 1e-9 do
    out[#out + 1] = t
    t = t + step
  end
  return out, step
end

-- A number as a tick shows it: at most 3 decimals, no trailing zeros.
local function num(x)
  if x == math.floor(x) then return string.format("%d", math.floor(x)) end
  return (string.format("%.3f", x):gsub("0+$", ""):gsub("%.$", ""))
end

--- The one unit of an axis whose largest value (in ms, absolute) is amax: ms below 1 s, s
-- below 2 min, min from there; returns a tick label function (ms -> "0.5s") and the unit.
-- @tparam number amax
-- @treturn function,string
function M.unit_label(amax)
  local div, suffix = 1, "ms"
  if amax >= 120000 then div, suffix = 60000, "min" elseif amax >= 1000 then div, suffix = 1000, "s" end
  return function(v) return num(v / div) .. suffix end, suffix, div
end

-- Round ticks covering [lo, hi] (ms) that are round in the axis's one unit (unit_label):
-- 0, 2, 4 min rather than 0, 100, 200 s shown in minutes.
local function unit_ticks(lo, hi, n)
  local _, _, div = M.unit_label(math.max(math.abs(lo), math.abs(hi)))
  local t = ticks(lo / div, hi / div, n)
  for i, v in ipairs(t) do t[i] = v * div end
  return t
end

local function amax_of(list)
  local a = 0
  for _, v in ipairs(list) do a = math.max(a, math.abs(v)) end
  return a
end

local function fmt(v) return v == nil and "-" or tostring(v) end

local function completeness(r) return r.records > 0 and 100 * (r.records - r.late) / r.records or 100 end

-- The candidates on the Pareto front of (low latency p50, high completeness).
local function pareto(results)
  local pts = {}
  for i, r in ipairs(results) do
    if r.latency_p50 then pts[#pts + 1] = {i = i, x = r.latency_p50, y = completeness(r)} end
  end
  table.sort(pts, function(a, b)
    if a.x ~= b.x then return a.x < b.x end
    return a.y > b.y
  end)
  local front, best, last = {}, -math.huge, nil
  for _, p in ipairs(pts) do
    if p.y > best or (last and p.x == last.x and p.y == last.y) then
      front[#front + 1] = p
      best = math.max(best, p.y)
      last = p
    end
  end
  return front
end

local function tooltip(r)
  return string.format("%s\nrecords %d, late %d (%.2f%% complete), dropped %d, late firings %d\n" ..
    "lag p50/p99/max %s / %s / %s ms\nlatency p50/p99/max %s / %s / %s ms (%d windows)%s",
    r.name, r.records, r.late, completeness(r), r.dropped, r.late_firings, fmt(r.lag_p50),
    fmt(r.lag_p99), fmt(r.lag_max), fmt(r.latency_p50), fmt(r.latency_p99), fmt(r.latency_max),
    r.latency_windows or 0, r.top_late_key and string.format(
      "\nmost late records: %s; allowed lateness admitting 99%% / all: %s / %s ms",
      r.top_late_key, fmt(r.admit_p99), fmt(r.admit_max)) or "")
end

-- A frame: plot area inside w x h with margins; returns sx, sy (data -> pixels) helpers.
local function frame(w, h, m, xlo, xhi, ylo, yhi)
  local pw, ph = w - m.l - m.r, h - m.t - m.b
  local function sx(x) return m.l + (x - xlo) / (xhi - xlo) * pw end
  local function sy(y) return m.t + ph - (y - ylo) / (yhi - ylo) * ph end
  return sx, sy, pw, ph
end

local function axes(out, w, h, m, xt, yt, sx, sy, xlab, ylab, xfmt, yfmt)
  local x0, x1, y0, y1 = m.l, w - m.r, m.t, h - m.b
  out[#out + 1] = string.format('<rect x="%d" y="%d" width="%d" height="%d" class="area"/>', x0, y0, x1 - x0, y1 - y0)
  -- x tick labels never overlap: a tick whose label would touch the previous one is left out
  local kept, right = {}, -math.huge
  for _, t in ipairs(xt) do
    local x, tw = sx(t), #xfmt(t) * 6.6
    if x - tw / 2 >= right + 6 then kept[#kept + 1] = t; right = x + tw / 2 end
  end
  xt = kept
  for _, t in ipairs(xt) do
    local x = sx(t)
    out[#out + 1] = string.format('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="grid"/>' ..
      '<text x="%.1f" y="%d" class="tick xtick" text-anchor="middle" data-v="%.17g">%s</text>', x, y0, x, y1, x,
      y1 + 16, t, esc(xfmt(t)))
  end
  -- y tick labels never overlap: 0 first, then the largest, each kept when 13 px from the others
  local order = {table.unpack(yt)}
  table.sort(order, function(a, b)
    if (a == 0) ~= (b == 0) then return a == 0 end
    return math.abs(a) > math.abs(b)
  end)
  local ykept = {}
  for _, t in ipairs(order) do
    local ok = true
    for _, k in ipairs(ykept) do if math.abs(sy(k) - sy(t)) < 13 then ok = false end end
    if ok then ykept[#ykept + 1] = t end
  end
  table.sort(ykept)
  yt = ykept
  for _, t in ipairs(yt) do
    local y = sy(t)
    out[#out + 1] = string.format('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/>' ..
      '<text x="%d" y="%.1f" class="tick ytick" text-anchor="end" data-v="%.17g">%s</text>', x0, y, x1, y, x0 - 6,
      y + 4, t, esc(yfmt(t)))
  end
  out[#out + 1] = string.format('<text x="%.1f" y="%d" class="label" text-anchor="middle">%s</text>',
    (x0 + x1) / 2, h - 8, esc(xlab))
  out[#out + 1] = string.format('<text transform="translate(14,%.1f) rotate(-90)" class="label" '
    .. 'text-anchor="middle">%s</text>',
    (y0 + y1) / 2, esc(ylab))
end

-- Log-scale ticks (1, 2, 5 times powers of ten) within [lo, hi], lo > 0.
local function log_ticks(lo, hi)
  local out = {}
  local p = 10 ^ math.floor(math.log(lo, 10))
  while p <= hi do
    for _, m in ipairs({1, 2, 5}) do
      local t = m * p
      if t >= lo and t <= hi then out[#out + 1] = t end
    end
    p = p * 10
  end
  return out
end

local function pareto_svg(results, colors)
  local w, h, m = 560, 460, {l = 64, r = 20, t = 34, b = 46}
  local out = {string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" id="pareto">', w, h),
    '<text x="12" y="20" class="title">Latency against completeness (Pareto front marked)</text>'}
  local xs, ys = {}, {}
  for _, r in ipairs(results) do
    if r.latency_p50 then
      xs[#xs + 1] = math.max(1, r.latency_p50)
      xs[#xs + 1] = math.max(1, r.latency_p99)
      ys[#ys + 1] = completeness(r)
    end
  end
  if #xs == 0 then
    out[#out + 1] = '<text x="40" y="200">no candidate fired a window before the end of the input</text></svg>'
    return table.concat(out, "\n")
  end
  local xmin, xmax = math.min(table.unpack(xs)), math.max(table.unpack(xs))
  -- latencies spread over decades read better on a log scale
  local log = xmax / xmin > 8
  local fx = log and function(v) return math.log(math.max(1, v), 10) end or function(v) return v end
  local xlo, xhi, xt
  if log then
    xlo, xhi = fx(xmin) - 0.08, fx(xmax) + 0.12
    xt = log_ticks(10 ^ xlo, 10 ^ xhi)
    if xhi - xlo > 2.5 then -- many decades: one tick per decade
      local d = {}
      for _, t in ipairs(xt) do
        local e = math.log(t, 10)
        if math.abs(e - math.floor(e + 0.5)) < 1e-9 then d[#d + 1] = t end
      end
      xt = d
    end
  else
    xlo, xhi = 0, xmax > 0 and xmax * 1.1 or 1
    xt = unit_ticks(xlo, xhi, 6)
  end
  local ylo = math.min(table.unpack(ys))
  ylo = math.max(0, ylo - math.max(0.05, (100 - ylo) * 0.15))
  local yhi = 100 + (100 - ylo) * 0.08
  local sx0, sy = frame(w, h, m, xlo, xhi, ylo, yhi)
  local function sx(v) return sx0(fx(v)) end
  local yt = ticks(ylo, 100, 6)
  local xfmt, xunit
  if log then -- the unit of the middle tick: 0.01s to 100s rather than 0.003min
    xfmt, xunit = M.unit_label(xt[math.max(1, (#xt + 1) // 2)] or 1)
  else
    xfmt, xunit = M.unit_label(amax_of(xt))
  end
  axes(out, w, h, m, xt, yt, sx, sy,
    "result latency p50, " .. xunit .. " (whisker to p99)" .. (log and ", log scale" or ""),
    "records on time (%)", xfmt,
    function(v) return (string.format("%.2f", v):gsub("%.?0+$", "")) .. "%" end)
  local front = pareto(results)
  local pts = {}
  for _, p in ipairs(front) do pts[#pts + 1] = string.format("%.1f,%.1f", sx(p.x), sy(p.y)) end
  out[#out + 1] = string.format('<polyline points="%s" class="front"/>', table.concat(pts, " "))
  local on_front = {}
  for _, p in ipairs(front) do on_front[p.i] = true end
  -- candidates at the same point share one label; labels are pushed down when they collide
  local order = {}
  for i, r in ipairs(results) do
    if r.latency_p50 then
      local x, y = sx(r.latency_p50), sy(completeness(r))
      local g
      for _, o in ipairs(order) do -- points a few pixels apart share a label
        if math.abs(o.x - x) < 6 and math.abs(o.y - y) < 6 then g = o end
      end
      if not g then
        g = {x = x, y = y, names = {}, color = colors[i]}
        order[#order + 1] = g
      end
      g.names[#g.names + 1] = r.name
      local x99 = sx(r.latency_p99)
      out[#out + 1] = string.format('<g class="cand c%d"><title>%s</title>' ..
        '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3" opacity="0.45"/>' ..
        '%s<circle cx="%.1f" cy="%.1f" r="5" fill="%s" class="dot" data-name="%s" data-ms="%d" '
        .. 'data-pct="%.6f"/></g>',
        i, esc(tooltip(r)), x, y, x99, y, colors[i],
        on_front[i] and string.format('<circle cx="%.1f" cy="%.1f" r="9" class="ring"/>', x, y) or "",
        x, y, colors[i], esc(r.name), r.latency_p50, completeness(r))
    end
  end
  table.sort(order, function(a, b) return a.y < b.y end)
  local placed = {}
  for _, g in ipairs(order) do
    local text = g.names[1]
    if #g.names > 1 then -- "bounded 0ms, 50ms, 100ms": the shared prefix once
      local prefix = g.names[1]:match("^(.* )") or ""
      local same = true
      for _, n in ipairs(g.names) do if n:sub(1, #prefix) ~= prefix then same = false end end
      local parts = {}
      for k, n in ipairs(g.names) do parts[k] = (same and k > 1) and n:sub(#prefix + 1) or n end
      text = table.concat(parts, ", ")
    end
    local tw = (utf8.len(text) or #text) * 6.6
    -- the first free place near the point: right or left, above or below, then farther
    local function free(lx, ly)
      if lx < m.l or lx + tw > w - m.r or ly - 10 < m.t or ly > h - m.b then return false end
      for _, p in ipairs(placed) do
        if lx < p.x + p.w + 5 and p.x < lx + tw + 5 and ly - 13 < p.y and p.y - 13 < ly then return false end
      end
      for _, o in ipairs(order) do
        if o.x + 6 > lx and o.x - 6 < lx + tw and o.y + 6 > ly - 11 and o.y - 6 < ly then return false end
      end
      return true
    end
    local lx, ly
    local dys = {-8, 16}
    for k = 1, 40 do dys[#dys + 1] = -8 - 13 * k; dys[#dys + 1] = 16 + 13 * k end
    for _, dy in ipairs(dys) do
      for _, dx in ipairs({12, -12 - tw, 40, -40 - tw, 80, -80 - tw}) do
        if not lx and free(g.x + dx, g.y + dy) then lx, ly = g.x + dx, g.y + dy end
      end
      if lx then break end
    end
    if not lx then -- anywhere free in the plot area, the nearest first
      local best
      for yy = m.t + 12, h - m.b, 13 do
        for xx = m.l + 2, w - m.r - tw, 10 do
          if free(xx, yy) then
            local d = (xx - g.x) ^ 2 + (yy - g.y) ^ 2
            if not best or d < best then best, lx, ly = d, xx, yy end
          end
        end
      end
    end
    if not lx then lx, ly = g.x + 12, g.y - 8 end
    placed[#placed + 1] = {x = lx, y = ly, w = tw}
    if math.abs(ly - g.y) > 20 or lx > g.x + 30 or lx + tw < g.x - 30 then -- a leader line to a label set apart
      out[#out + 1] = string.format('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="leader"/>',
        g.x, g.y, lx < g.x and lx + tw or lx, ly - 4)
    end
    out[#out + 1] = string.format('<text x="%.1f" y="%.1f" class="pt"%s>%s</text>', lx, ly,
      #g.names == 1 and string.format(' style="fill:%s"', g.color) or "", esc(text))
  end
  out[#out + 1] = string.format('<text x="%d" y="%d" class="note" text-anchor="end">ring: on the Pareto front ' ..
    '(no other candidate is both faster and more complete)</text>', w - m.r - 6, h - m.b - 8)
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

-- The median of a list of numbers (the lower middle one).
local function median(list)
  local s = {table.unpack(list)}
  table.sort(s)
  return s[math.max(1, (#s + 1) // 2)]
end

-- The curve chart's reference, and the y values to draw: W - P (the perfect watermark), or,
-- when a long tail holds P so far back that every candidate runs minutes ahead of it and the
-- curves coincide, W - the median candidate's W at that instant ("relative"), with P drawn
-- as a curve of its own. Returns mode, val(i, k) (row i's value at sample k), pval(k) (P's
-- value: nil in "perfect" mode, where P is 0), ref_at(t, w) (a watermark w at time t as a
-- value).
local function curve_values(results)
  local fired, aheads, lags = {}, {}, {}
  for i, r in ipairs(results) do
    if i > 1 and r.latency_p50 and r.curve and #r.curve.t > 0 then
      fired[#fired + 1] = i
      aheads[#aheads + 1] = -r.lag_p50
      lags[#lags + 1] = r.lag_p50
    end
  end
  -- the curves coincide when the candidates' typical distances from the median one are
  -- under 2 % of the chart's range (a few pixels)
  local relative = false
  if #fired >= 2 then
    local range, mid, devs = 0, median(lags), {}
    for j, i in ipairs(fired) do
      local c = results[i].curve
      for k = 1, #c.t do range = math.max(range, math.abs(c.wm[k] - c.perfect[k])) end
      devs[j] = math.abs(lags[j] - mid)
    end
    relative = median(aheads) > 0 and median(devs) < 0.02 * range
  end
  if not relative then
    return "perfect", function(i, k) local c = results[i].curve return c.wm[k] - c.perfect[k] end, nil,
      function(_, wmv, perfect) return wmv - perfect end
  end
  local c1 = results[fired[1]].curve
  local ref = {}
  for k = 1, #c1.t do
    local ws = {}
    for j, i in ipairs(fired) do ws[j] = results[i].curve.wm[k] end
    ref[k] = median(ws)
  end
  local function ref_at(t) -- the reference at the last sample at or before t
    local lo, hi = 1, #c1.t
    while lo < hi do
      local mid = (lo + hi + 1) // 2
      if c1.t[mid] <= t then lo = mid else hi = mid - 1 end
    end
    return ref[lo]
  end
  return "relative", function(i, k) return results[i].curve.wm[k] - ref[k] end,
    function(k) return c1.perfect[k] - ref[k] end,
    function(t, wmv) return wmv - ref_at(t) end
end

local function curves_svg(results, colors)
  local w, h, m = 800, 460, {l = 70, r = 20, t = 34, b = 46}
  local mode, val, pval, mark_val = curve_values(results)
  local out = {string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" id="curves" '
    .. 'data-mode="%s">', w, h, mode),
    mode == "perfect" and '<text x="12" y="20" class="title">Watermark minus the perfect watermark, over '
      .. 'processing time (late records: red)</text>'
    or '<text x="12" y="20" class="title">Watermark minus the median candidate\'s, over processing time '
      .. '(perfect: black)</text>'}
  local tlo, thi = math.huge, -math.huge
  local ys = {}
  for i, r in ipairs(results) do
    local c = r.curve
    if c and #c.t > 0 then
      tlo = math.min(tlo, c.t[1])
      thi = math.max(thi, c.t[#c.t])
    end
    if r.latency_p50 and mode == "perfect" then -- one that fires nothing before the end would squash the rest
      ys[#ys + 1] = -r.lag_p99
      ys[#ys + 1] = -r.lag_p50
    end
    if i > 1 then
      for _, mk in ipairs(r.marks or {}) do ys[#ys + 1] = mark_val(mk.t, mk.wm, mk.perfect) end
    end
  end
  if tlo == math.huge then
    out[#out + 1] = "</svg>"
    return table.concat(out, "\n")
  end
  -- the y range: the typical lag (p99) of every candidate that fired before the end of the
  -- input, and everything ahead; larger lags (no watermarks, a stall) run off the bottom
  local ylo, yhi = 0, 0
  for _, y in ipairs(ys) do
    ylo = math.min(ylo, y)
    yhi = math.max(yhi, y)
  end
  -- a long tail (a straggler that holds the perfect watermark back minutes, a stall) puts
  -- some curves far from 0 and squashes the others onto one line: then the y axis is a
  -- symmetric log scale (linear within 10 ms of 0, a decade per step beyond), spanning
  -- every curve of the candidates that fired before the end (and P's, in relative mode)
  local scales, all_lo, all_hi = {}, 0, 0
  for i, r in ipairs(results) do
    if r.latency_p50 and i > 1 and r.curve then
      scales[#scales + 1] = math.max(math.abs(r.lag_p50), math.abs(r.lag_p99), 1)
      for k = 1, #r.curve.t do
        local v = val(i, k)
        all_lo, all_hi = math.min(all_lo, v), math.max(all_hi, v)
        if mode == "relative" then ys[#ys + 1] = v end
      end
    end
  end
  if pval then
    for k = 1, #results[1].curve.t do
      all_lo, all_hi = math.min(all_lo, pval(k)), math.max(all_hi, pval(k))
    end
  end
  local typical = mode == "relative" and 10 or (#scales > 0 and median(scales) or 1)
  local symlog = math.max(-all_lo, all_hi) > 20 * math.max(typical, 10)
  local C = 10
  local function ty(y)
    if not symlog then return y end
    local a = math.log(1 + math.abs(y) / C, 10)
    return y < 0 and -a or a
  end
  local pad, yt
  if symlog then
    ylo, yhi = math.min(ylo, all_lo), math.max(yhi, all_hi)
    pad = 0
    yt = {0}
    local d = C
    while d <= math.max(-ylo, yhi) * 1.0001 do
      if d <= yhi * 1.0001 then yt[#yt + 1] = d end
      if d <= -ylo * 1.0001 then table.insert(yt, 1, -d) end
      d = d * 10
    end
  else
    for _, y in ipairs(ys) do
      ylo, yhi = math.min(ylo, y), math.max(yhi, y)
    end
    pad = (yhi - ylo) * 0.08 + 1
    ylo, yhi = ylo - pad, yhi + pad
    yt = unit_ticks(ylo, yhi, 7)
  end
  local tpad = symlog and 0.15 or 0
  local sx, sy0 = frame(w, h, m, 0, math.max(1, thi - tlo), ty(ylo) - tpad, ty(yhi) + tpad)
  local function sy(y) return sy0(ty(y)) end
  local xt = unit_ticks(0, thi - tlo, 8)
  local xfmt, xunit = M.unit_label(amax_of(xt))
  local yfmt, yunit = M.unit_label(amax_of(yt))
  axes(out, w, h, m, xt, yt, sx, sy, "processing time since the first arrival, " .. xunit,
    (mode == "perfect" and "watermark - perfect watermark, " or "watermark - median candidate's, ") .. yunit
      .. (symlog and " (symmetric log scale)" or ""), xfmt, yfmt)
  out[#out + 1] = string.format('<g class="yscale" data-scale="%s" data-c="%d"></g>',
    symlog and "symlog" or "linear", C)
  out[#out + 1] = string.format('<defs><clipPath id="plotarea"><rect x="%d" y="%d" width="%d" height="%d"/>'
    .. '</clipPath></defs>',
    m.l, m.t, w - m.l - m.r, h - m.t - m.b)
  out[#out + 1] = '<g clip-path="url(#plotarea)">'
  out[#out + 1] = string.format('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="zero"/>', m.l, sy(0), w - m.r, sy(0))
  local function clampy(y) return math.max(ylo - pad, math.min(yhi + pad, y)) end
  local function steps(c, f)
    local pts, prev = {}, nil
    for k = 1, #c.t do
      local x, y = sx(c.t[k] - tlo), sy(clampy(f(k)))
      if prev then pts[#pts + 1] = string.format("%.1f,%.1f", x, prev) end -- a step
      pts[#pts + 1] = string.format("%.1f,%.1f", x, y)
      prev = y
    end
    return table.concat(pts, " ")
  end
  if pval then
    out[#out + 1] = string.format('<g class="cand c1"><title>perfect</title><polyline points="%s" fill="none" '
      .. 'stroke="#000" stroke-width="1.6" stroke-dasharray="5 3"/></g>', steps(results[1].curve, pval))
  end
  for i, r in ipairs(results) do
    local c = r.curve
    if c and #c.t > 0 and i > 1 then
      out[#out + 1] = string.format('<g class="cand c%d"><title>%s</title><polyline points="%s" fill="none" '
        .. 'stroke="%s" stroke-width="1.4"/>',
        i, esc(r.name), steps(c, function(k) return val(i, k) end), colors[i])
      local marks = {}
      for _, mk in ipairs(r.marks or {}) do
        local v = mark_val(mk.t, mk.wm, mk.perfect)
        local x, y = sx(mk.t - tlo), sy(clampy(v))
        marks[#marks + 1] = string.format('<path d="M%.1f %.1fl3 3m-3 -3l-3 3m3 -3l3 -3m-3 3l-3 -3" class="late" '
          .. 'data-t="%d" data-d="%d"/>', x, y, mk.t - tlo, v)
      end
      out[#out + 1] = table.concat(marks) .. "</g>"
    end
  end
  out[#out + 1] = "</g>"
  out[#out + 1] = string.format('<text x="%d" y="%.1f" class="note" text-anchor="end">%s</text>', w - m.r - 6,
    sy(0) + 15, mode == "perfect" and "0: the perfect watermark (above: ahead of it, records come late; below: "
      .. "behind it, results wait)" or "0: the median candidate (above: ahead of it; below: behind it)")
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

--- The page's HTML.
-- @tparam table lab the lab (wm.lab)
-- @tparam table results from `lab:run{curve = n, marks = n}`
-- @tparam string title
-- @treturn string
function M.html(lab, results, title)
  local colors = {"#000000"}
  for i = 2, #results do colors[i] = COLORS[(i - 2) % #COLORS + 1] end
  local rows = {}
  local cols = {"records", "late", "dropped", "late_firings", "lag_p50", "lag_p99", "lag_max",
                "latency_p50", "latency_p99", "latency_max", "first_final", "admit_p99", "admit_p999",
                "admit_max", "top_late_key"}
  local front = {}
  for _, p in ipairs(pareto(results)) do front[p.i] = true end
  for i, r in ipairs(results) do
    local cells = {string.format('<td class="name"><span class="sw" style="background:%s"></span>%s%s</td>',
      colors[i], esc(r.name), front[i] and " &#9675;" or "")}
    for _, c in ipairs(cols) do
      local v = r[c]
      if c == "first_final" and v then v = string.format("%.2f%%", 100 * v) end
      cells[#cells + 1] = "<td>" .. esc(fmt(v)) .. "</td>"
    end
    rows[#rows + 1] = string.format('<tr class="cand c%d" data-c="%d">%s</tr>', i, i, table.concat(cells))
  end
  local summary = lab:table(results):match("^[^\n]*")
  return table.concat({
    '<!DOCTYPE html>',
    '<html><head><meta charset="utf-8"><title>' .. esc(title) .. '</title>',
    '<style>',
    'body{font:13px/1.35 system-ui,sans-serif;margin:14px 18px;color:#222}',
    'h1{font-size:17px;margin:0 0 2px}',
    '.sub{color:#555;margin:0 0 8px}',
    '.row{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start}.row svg{flex:none}',
    'svg{background:#fff;border:1px solid #ddd}',
    '.area{fill:#fcfcfc;stroke:#bbb}.grid{stroke:#eee}.zero{stroke:#000;stroke-width:1.6;stroke-dasharray:5 3}',
    '.tick{font-size:11px;fill:#555}.label{font-size:12px;fill:#333}.title{font-size:13px;font-weight:600}',
    '.note,.pt{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}',
    '.note{font-size:11px;fill:#444}.pt{font-size:11px}',
    '.front{fill:none;stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}'
      .. '.ring{fill:none;stroke:#d62728;stroke-width:2}',
    '.late{stroke:#d62728;stroke-width:1;fill:none;opacity:.75}.leader{stroke:#999;stroke-width:0.8}',
    'table{border-collapse:collapse;margin-top:10px}'
      .. 'td,th{padding:2px 9px;text-align:right;border-bottom:1px solid #eee}',
    'th{font-weight:600;background:#f4f4f4}td.name{text-align:left;cursor:pointer}',
    '.sw{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}',
    'tr.off td{color:#bbb}.hidden{display:none}',
    '</style></head><body>',
    '<h1>' .. esc(title) .. '</h1>',
    '<p class="sub">' .. esc(summary) .. '. Click a row to hide or show its candidate. Hover for figures.</p>',
    '<div class="row">', pareto_svg(results, colors), curves_svg(results, colors), '</div>',
    '<table><tr><th style="text-align:left">candidate (&#9675; Pareto front)</th><th>records</th><th>late</th>' ..
      '<th>dropped</th><th>late firings</th><th>lag p50</th><th>lag p99</th><th>lag max</th>' ..
      '<th>latency p50</th><th>latency p99</th><th>latency max</th><th>first final</th>' ..
      '<th>admit p99</th><th>admit p99.9</th><th>admit all</th><th>top late key</th></tr>',
    table.concat(rows, "\n"),
    '</table>',
    '<p class="sub">Times in ms. lag = perfect watermark - watermark, sampled at every arrival; ' ..
      'latency = firing time - arrival of the window\'s last on-time record (docs/lab.md).</p>',
    '<script>',
    -- what the page shows, measured by the browser (spec/lab_spec.lua reads these): the
    -- labels of the Pareto chart that overlap another or leave the chart, script errors
    'window.onerror=function(m){var b=document.body;',
    '  b.setAttribute("data-errors",(b.getAttribute("data-errors")||"")+m+";");};',
    'window.addEventListener("load",function(){var svg=document.getElementById("pareto"),',
    '  b=svg.getBoundingClientRect(),',
    '  r=[].map.call(svg.querySelectorAll("text.pt"),function(t){return t.getBoundingClientRect();}),n=0,out=0;',
    '  r.forEach(function(a,i){if(a.left<b.left||a.right>b.right||a.top<b.top||a.bottom>b.bottom)out++;',
    '    r.forEach(function(c,j){if(j>i&&a.left<c.right&&c.left<a.right&&a.top<c.bottom&&c.top<a.bottom)n++;});});',
    '  document.body.setAttribute("data-label-overlaps",n);document.body.setAttribute("data-labels-outside",out);',
    '  document.body.setAttribute("data-labels",r.length);});',
    'document.querySelectorAll("tr.cand").forEach(function(tr){tr.addEventListener("click",function(){',
    '  var c="c"+tr.dataset.c,off=tr.classList.toggle("off");',
    '  document.querySelectorAll("svg .cand."+c).forEach(function(g){g.classList.toggle("hidden",off)});});});',
    '</script>',
    '</body></html>', ""}, "\n")
end

--- Writes the page to path.
function M.write(path, lab, results, title)
  local f, err = io.open(path, "wb")
  if not f then error("wm.lab: --plot: " .. tostring(err), 0) end
  f:write(M.html(lab, results, title or "watermark lab"))
  f:close()
end

return M
