--- The timeline picture's lanes under the plot: one per key, with its firings (and their
-- values) and its late records.
-- @module wm.timeline.lanes

local fmt = string.format

local T = require("wm.timeline.text")
local LABEL_CHARS = T.LABEL_CHARS
local CHAR_W = T.CHAR_W
local esc = T.esc
local cut = T.cut
local fmt_ts = T.fmt_ts
local fmt_win = T.fmt_win
local key_colour_class = T.key_colour_class
local key_name = T.key_name
local short_value = T.short_value
local S = require("wm.timeline.scales")
local px = S.px

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

-- Draws the lanes of panel p (layout: lanes, lane_index, lh, lanes_top, from the panel).
local function draw(w, tl, p, layout)
  local lanes, lane_index, lh, lanes_top = layout.lanes, layout.lane_index, layout.lh, layout.lanes_top
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
    local items = lane_items[i]
    table.sort(items, function(a, b)
      local ea, eb = a.m or a.l, b.m or b.l
      local xa, xb = px(p, ea.x, ea.t), px(p, eb.x, eb.t)
      if xa ~= xb then return xa < xb end
      return (ea.stop or ea.ts) < (eb.stop or eb.ts)
    end)
    -- items at their true x. Within 16 px: up to 3 items are drawn each (those within 4 px of
    -- each other stacked vertically), more are one count mark (the number, at the middle
    -- one's x, at least 15 px after the previous count mark; its tooltip tells what they are)
    local vals, xs = {}, {}
    w('<g class="zx" clip-path="url(#%s)">\n', p.clip)
    local groups, g = {}, nil
    for _, it in ipairs(items) do
      local e = it.m or it.l
      local x = px(p, e.x, e.t)
      if not g or x - g.x0 >= 16 then
        g = {x0 = x}
        groups[#groups + 1] = g
      end
      g[#g + 1] = {it = it, x = x}
    end
    local split = {}
    for _, grp in ipairs(groups) do -- a few items: each drawn, stacked within 4 px
      if #grp > 3 then
        split[#split + 1] = grp
      else
        local sub
        for _, o in ipairs(grp) do
          if not sub or o.x - sub.x0 >= 4 then
            sub = {x0 = o.x, few = true}
            split[#split + 1] = sub
          end
          sub[#sub + 1] = o
        end
      end
    end
    groups = split
    local STACK = {0, -6, 6}
    local last_count = -math.huge
    for _, grp in ipairs(groups) do
      if not grp.few then
        local mid = math.max(grp[(#grp + 1) // 2].x, last_count + 15)
        last_count = mid
        local n_late, n_side, n_fire, n_lfire = 0, 0, 0, 0
        for _, o in ipairs(grp) do
          local e = o.it.m or o.it.l
          if o.it.l then
            if e.side then n_side = n_side + 1 else n_late = n_late + 1 end
          elseif e.kind == "fire" then n_fire = n_fire + 1 else n_lfire = n_lfire + 1 end
        end
        local parts = {}
        if n_late > 0 then parts[#parts + 1] = fmt("%d late records dropped", n_late) end
        if n_side > 0 then parts[#parts + 1] = fmt("%d late records to the side output", n_side) end
        if n_fire > 0 then parts[#parts + 1] = fmt("%d firings on time", n_fire) end
        if n_lfire > 0 then parts[#parts + 1] = fmt("%d late firings", n_lfire) end
        xs[#xs + 1] = mid
        w('<circle class="count%s" data-n="%d" cx="%.1f" cy="%.1f" r="6.5"><title>%d here (zoom in to see '
          .. 'them apart): %s</title></circle><text class="count-n" x="%.1f" y="%.1f" text-anchor="middle">'
          .. '%s</text>\n', n_late + n_side > 0 and " has-late" or "", #grp, mid, y, #grp,
          table.concat(parts, ", "), mid, y + 3, #grp > 99 and "99+" or tostring(#grp))
      else
        for j, o in ipairs(grp) do
          local it, x, yy = o.it, o.x, y + STACK[j]
          local e = it.m or it.l
          xs[#xs + 1] = x
          if it.l then
            w('<circle class="late %s" cx="%.1f" cy="%.1f" r="4"><title>%s</title></circle>\n',
              e.side and "side" or "dropped", x, yy, e.title)
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
              w('<path class="fire ontime" d="M%.1f %.1fl-5 -8.5h10z"><title>%s %s%s</title></path>\n',
                x, yy + 4.5, head, what, value)
            else
              w('<path class="fire late" d="M%.1f %.1fl5 5l-5 5l-5 -5z"><title>%s %s%s</title></path>\n',
                x, yy - 5, head, what, value)
            end
            local sv = #grp == 1 and short_value(m.value, key_name(tl, m.key))
            if sv then
              vals[#vals + 1] = {x = x + 7, w = (utf8.len(sv) or #sv) * CHAR_W, text = sv, dx = 7}
            end
          end
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
end

return {
  lanes_of = lanes_of,
  lane_height = lane_height,
  place_values = place_values,
  draw = draw,
}
