--- The timeline picture's text and constants: sizes, colours, how times, windows, keys
-- and values are written (wm.timeline draws with them).
-- @module wm.timeline.text

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

local function fmt_bytes(n)
  if n < 1024 then return fmt("%d bytes", n) end
  if n < 1024 * 1024 then return fmt("%d bytes (%.1f KiB)", n, n / 1024) end
  return fmt("%d bytes (%.1f MiB)", n, n / (1024 * 1024))
end

return {
  series_class = series_class,
  KEY_COLOURS = KEY_COLOURS,
  ASSIGNER_COLOURS = ASSIGNER_COLOURS,
  WINDOW_COLOURS = WINDOW_COLOURS,
  NCOLOURS = NCOLOURS,
  PIC_W = PIC_W,
  PAN_L = PAN_L,
  PAN_R = PAN_R,
  HEAD = HEAD,
  LANES_GAP = LANES_GAP,
  AXIS_B = AXIS_B,
  LABEL_CHARS = LABEL_CHARS,
  VALUE_CHARS = VALUE_CHARS,
  CHAR_W = CHAR_W,
  esc = esc,
  cut = cut,
  cut_middle = cut_middle,
  epoch_like = epoch_like,
  clock = clock,
  fmt_ts = fmt_ts,
  fmt_win = fmt_win,
  fmt_dur = fmt_dur,
  nice_step = nice_step,
  tick_label = tick_label,
  key_colour_class = key_colour_class,
  key_name = key_name,
  key_suffix = key_suffix,
  short_value = short_value,
  merge_marks = merge_marks,
  keys_text = keys_text,
  fmt_bytes = fmt_bytes,
}
