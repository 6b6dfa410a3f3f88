--- The watermark trace as a page (`wmrun --timeline OUT.html --from-trace TRACE.jsonl`): the
-- JSON lines of `--trace-watermarks=json` read back and drawn, one step line and one mark per
-- event, each operator a colour, with a filter by operator on the page (a select, and
-- `?op=NAME` in the address: the full name, or the name without its "(job.lua:LINE)").
-- A trace of `--trace-watermarks=json,records` adds the keyed events (records at their
-- timestamp, late records, window firings with their window, timers) and a filter by key
-- (a text field with the keys as suggestions, and `?key=KEY`: the key as `print` shows it);
-- the watermark events have no key and stay under a key filter.
-- Checkpoint events are drawn as vertical lines; lines that are not JSON objects (errors,
-- --metrics) are skipped, so the whole stderr of a run may be given.
-- @module wm.timeline.trace
local M = {}

local fmt, concat = string.format, table.concat
local cjson = require("cjson")

local function esc(s)
  return (tostring(s):gsub("[&<>\"']", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
    ['"'] = "&quot;", ["'"] = "&#39;"}))
end

--- The events of a trace file: a list of the decoded objects, in the file's order.
-- Raises "LINE N: ..." for a line that starts with `{` and is not JSON.
-- @tparam string path
function M.read(path)
  local f, err = io.open(path, "r")
  if not f then error("cannot read the trace: " .. tostring(err), 0) end
  local ev, n = {}, 0
  for line in f:lines() do
    n = n + 1
    if line:sub(1, 1) == "{" then
      local ok, e = pcall(cjson.decode, line)
      if not ok or type(e) ~= "table" then
        f:close()
        error(fmt("%s:%d: not a JSON object: %s", path, n, tostring(e)), 0)
      end
      ev[#ev + 1] = e
    end
  end
  f:close()
  return ev
end

local COLOURS = {"#1f77b4", "#2ca02c", "#9467bd", "#d62728", "#ff7f0e", "#17becf", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22"}

local SCRIPT = [[
window.onerror=function(m){var d=document.documentElement;
d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+m+';');};
(function(){
var sel=document.getElementById('op'),kin=document.getElementById('key'),
q=new URLSearchParams(location.search),want=q.get('op')||'';
function match(name,w){return !w||name===w||name.indexOf(w+' (')===0;}
function apply(){var w=sel.value,k=kin?kin.value:'',n=0;
document.querySelectorAll('[data-op]').forEach(function(e){var on=match(e.getAttribute('data-op'),w)&&
(!k||!e.hasAttribute('data-key')||e.getAttribute('data-key')===k);
if(on){e.removeAttribute('data-off');e.style.display='';if(e.tagName=='circle')n++;}
else{e.setAttribute('data-off','1');e.style.display='none';}});
document.getElementById('shown').textContent=n;document.documentElement.setAttribute('data-shown',n);}
function keep(name,v){var u=new URL(location.href);
if(v)u.searchParams.set(name,v);else u.searchParams.delete(name);
try{history.replaceState(null,'',u.toString());}catch(e){}}
if(want){var o=[].slice.call(sel.options).filter(function(o){return match(o.value,want);})[0];
if(o)sel.value=o.value;else{var x=document.createElement('option');x.value=want;
x.textContent=want+' (no such operator)';sel.appendChild(x);sel.value=want;}}
if(kin&&q.has('key'))kin.value=q.get('key');
sel.addEventListener('change',function(){keep('op',sel.value);apply();});
if(kin)kin.addEventListener('input',function(){keep('key',kin.value);apply();});
apply();})();
document.documentElement.setAttribute('data-ready','1');
]]

-- the keyed events of `--trace-watermarks=json,records` (each has a key)
local KEYED = {record = true, late = true, firing = true, timer = true}
local MAX_KEYS = 1000 -- keys offered in the key field's list (any key can be typed)

-- the time a keyed event is drawn at
local function keyed_y(e)
  if e.kind == "firing" then return e["end"] end
  if e.kind == "timer" then return e.time end
  return e.timestamp
end

-- the text of a keyed event's hover
local function keyed_title(e)
  local function t(v) return tostring(type(v) == "number" and math.tointeger(v) or v) end
  local head = fmt("%s: key %s: ", e.operator, e.key)
  if e.kind == "record" then
    return head .. fmt("record at %s (watermark %s)", t(e.timestamp), t(e.watermark))
  elseif e.kind == "late" then
    return head .. fmt("late record at %s, %s behind the watermark %s, %s", t(e.timestamp),
      t(e.late_by), t(e.watermark), e.dropped and "dropped" or ("to " .. tostring(e.side_output)))
  elseif e.kind == "firing" then
    return head .. fmt("%sfiring of [%s, %s) (watermark %s)", e.late and "late " or "",
      t(e.start), t(e["end"]), t(e.watermark))
  end
  return head .. fmt("%s-time timer at %s (watermark %s)", tostring(e.domain), t(e.time),
    t(e.watermark))
end

--- The page of a list of events (M.read).
-- @tparam table ev events
-- @tparam string title
function M.render(ev, title)
  local ops, idx, lo, hi = {}, {}, math.huge, -math.huge
  local keys, kseen = {}, {}
  local function num(v) return type(v) == "number" and v or nil end
  for _, e in ipairs(ev) do
    if e.kind ~= "checkpoint" and type(e.operator) == "string" and not idx[e.operator] then
      ops[#ops + 1] = e.operator
      idx[e.operator] = #ops
    end
    if KEYED[e.kind] then
      e.key = e.key == cjson.null and "nil" or tostring(e.key)
      if not kseen[e.key] then
        kseen[e.key] = true
        keys[#keys + 1] = e.key
      end
    end
    for _, f in ipairs({"from", "to", "watermark", "timestamp", "start", "end", "time"}) do
      local v = num(e[f])
      if v and v < lo then lo = v end
      if v and v > hi then hi = v end
    end
  end
  if lo == math.huge then lo, hi = 0, 1 end
  if hi == lo then hi = lo + 1 end
  local W, H, L, T, PW, PH = 1100, 460, 110, 20, 960, 380
  local n = math.max(#ev, 1)
  local function X(i) return L + PW * (i - 0.5) / n end
  -- MIN at the bottom edge, MAX at the top edge, the finite times in between
  local function Y(v)
    if v == "MIN" or v == cjson.null or v == nil then return T + PH end
    if v == "MAX" then return T end
    return T + PH - 10 - (PH - 20) * (v - lo) / (hi - lo)
  end
  local out = {}
  out[#out + 1] = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>wmrun ' ..
    "trace: " .. esc(title) .. "</title><style>body{margin:16px;font-family:sans-serif;" ..
    "background:#f6f6f6}svg{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}" ..
    "text{font-size:11px;fill:#444}.ck{stroke:#6a3d9a;stroke-dasharray:4 3}" ..
    ".late{fill:none;stroke:#d62728;stroke-width:2}.firing{stroke:#000;stroke-width:1}" ..
    ".late_firing{stroke:#d62728}.timer{fill:#fff;stroke-width:2}</style></head><body>\n"
  out[#out + 1] = '<p><label>operator <select id="op"><option value="">(all)</option>'
  for _, o in ipairs(ops) do out[#out + 1] = fmt('<option value="%s">%s</option>', esc(o), esc(o)) end
  out[#out + 1] = "</select></label>"
  if #keys > 0 then
    out[#out + 1] = ' <label>key <input id="key" list="keys" placeholder="(all keys)" size="16">' ..
      '</label><datalist id="keys">'
    for k = 1, math.min(#keys, MAX_KEYS) do out[#out + 1] = fmt('<option value="%s">', esc(keys[k])) end
    out[#out + 1] = "</datalist>"
  end
  out[#out + 1] = fmt(' <span id="shown">%d</span> of %d events shown</p>\n', #ev, #ev)
  if #keys > 0 then
    out[#out + 1] = '<p style="font-size:12px">marks: small dot, a record at its timestamp; red ' ..
      'ring, a late record; ringed dot, a window firing at its window\'s end with the window as a ' ..
      'bar (red ring: a late firing); white dot, a timer; the rest, watermark events</p>\n'
  end
  out[#out + 1] = fmt('<svg id="trace" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" ' ..
    'viewBox="0 0 %d %d"><rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>',
    W, H, W, H, L, T, PW, PH)
  out[#out + 1] = fmt('<text x="%d" y="%d" text-anchor="end">MAX</text><text x="%d" y="%d" ' ..
    'text-anchor="end">%s</text><text x="%d" y="%d" text-anchor="end">%s</text><text x="%d" ' ..
    'y="%d" text-anchor="end">MIN</text><text x="%d" y="%d">event (trace order); y: %s</text>',
    L - 6, T + 4, L - 6, math.floor(Y(hi)) + 4, esc(fmt("%.0f", hi)), L - 6,
    math.floor(Y(lo)) + 4, esc(fmt("%.0f", lo)), L - 6, T + PH + 4, L, T + PH + 16,
    #keys > 0 and "watermark; a record's timestamp, a firing's window (end at the mark), a timer's time"
      or "watermark")
  -- one step line per operator and source (the watermark each one held, event after event)
  local paths, last = {}, {}
  for i, e in ipairs(ev) do
    if e.kind == "watermark" or e.kind == "input_watermark" then
      local s = e.operator .. "\0" .. tostring(e.source) .. tostring(e.input)
      local x, y = X(i), Y(e.to)
      if not paths[s] then
        paths[s] = {op = e.operator, d = {fmt("M%.1f %.1f", x, Y(e.from))}}
        last[#last + 1] = s
      end
      local d = paths[s].d
      d[#d + 1] = fmt("H%.1f V%.1f", x, y)
    end
  end
  for _, s in ipairs(last) do
    local p = paths[s]
    out[#out + 1] = fmt('<path data-op="%s" d="%s" fill="none" stroke="%s" stroke-width="1.5" ' ..
      'stroke-opacity=".6"/>', esc(p.op), concat(p.d, " "), COLOURS[(idx[p.op] - 1) % #COLOURS + 1])
  end
  for i, e in ipairs(ev) do
    if e.kind == "checkpoint" then
      out[#out + 1] = fmt('<line class="ck" x1="%.1f" x2="%.1f" y1="%d" y2="%d"><title>checkpoint %s' ..
        '</title></line>', X(i), X(i), T, T + PH, esc(tostring(e.id)))
    elseif idx[e.operator] and KEYED[e.kind] then
      local colour = COLOURS[(idx[e.operator] - 1) % #COLOURS + 1]
      local attrs = fmt('data-op="%s" data-key="%s"', esc(e.operator), esc(e.key))
      if e.kind == "firing" then -- the window as a bar from its start to its end
        out[#out + 1] = fmt('<line %s x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" ' ..
          'stroke-width="3" stroke-opacity=".35"/>', attrs, X(i), X(i), Y(e.start), Y(e["end"]), colour)
      end
      local cls = e.kind == "firing" and e.late and "firing late_firing" or e.kind
      out[#out + 1] = fmt('<circle class="ev %s" %s cx="%.1f" cy="%.1f" r="%s" fill="%s">' ..
        '<title>%s</title></circle>', cls, attrs, X(i), Y(keyed_y(e)),
        e.kind == "record" and "2.5" or "3.5", colour, esc(keyed_title(e)))
    elseif idx[e.operator] then
      local v = e.to ~= nil and e.to or e.watermark
      local what = e.to ~= nil and (tostring(e.from) .. " -> " .. tostring(e.to))
        or ("watermark " .. tostring(e.watermark))
      out[#out + 1] = fmt('<circle class="ev %s" data-op="%s" cx="%.1f" cy="%.1f" r="3" fill="%s">' ..
        '<title>%s: %s %s %s</title></circle>', esc(e.kind), esc(e.operator), X(i), Y(v),
        COLOURS[(idx[e.operator] - 1) % #COLOURS + 1], esc(e.operator), esc(e.source or ""),
        esc(e.kind), esc(what))
    end
  end
  out[#out + 1] = "</svg>\n<p>Written by wmrun --timeline --from-trace. Choose an operator" ..
    (#keys > 0 and " and a key (watermarks, which have no key, stay)" or "") ..
    ", or open the page with ?op=NAME" .. (#keys > 0 and "&amp;key=KEY" or "") ..
    ".</p>\n<script>" .. SCRIPT .. "</script>\n</body></html>\n"
  return concat(out)
end

--- Reads the trace at `trace` and writes its page to `path` (an .html file).
-- @tparam string path
-- @tparam string trace
function M.save(path, trace)
  if not path:lower():match("%.html?$") then
    error("--from-trace draws a page: expected a file name ending in .html", 0)
  end
  local text = M.render(M.read(trace), trace:match("[^/]*$"))
  local f, err = io.open(path, "w")
  if not f then error("cannot write there: " .. tostring(err), 0) end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then error("write error: " .. tostring(werr or cerr), 0) end
end

return M
