--- The watermark trace as a page (`wmrun --timeline OUT.html --from-trace TRACE.jsonl`): the
-- JSON lines of `--trace-watermarks=json` read back and drawn, one step line and one mark per
-- event, each operator a colour, with a filter by operator on the page (a select, and
-- `?op=NAME` in the address: the full name, or the name without its "(job.lua:LINE)").
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
var sel=document.getElementById('op'),q=new URLSearchParams(location.search),want=q.get('op')||'';
function match(name,w){return !w||name===w||name.indexOf(w+' (')===0;}
function apply(){var w=sel.value,n=0;
document.querySelectorAll('[data-op]').forEach(function(e){var on=match(e.getAttribute('data-op'),w);
if(on){e.removeAttribute('data-off');e.style.display='';if(e.tagName=='circle')n++;}
else{e.setAttribute('data-off','1');e.style.display='none';}});
document.getElementById('shown').textContent=n;document.documentElement.setAttribute('data-shown',n);}
if(want){var o=[].slice.call(sel.options).filter(function(o){return match(o.value,want);})[0];
if(o)sel.value=o.value;else{var x=document.createElement('option');x.value=want;
x.textContent=want+' (no such operator)';sel.appendChild(x);sel.value=want;}}
sel.addEventListener('change',function(){var u=new URL(location.href);
if(sel.value)u.searchParams.set('op',sel.value);else u.searchParams.delete('op');
try{history.replaceState(null,'',u.toString());}catch(e){}apply();});
apply();})();
document.documentElement.setAttribute('data-ready','1');
]]

--- The page of a list of events (M.read).
-- @tparam table ev events
-- @tparam string title
function M.render(ev, title)
  local ops, idx, lo, hi = {}, {}, math.huge, -math.huge
  local function num(v) return type(v) == "number" and v or nil end
  for _, e in ipairs(ev) do
    if e.kind ~= "checkpoint" and type(e.operator) == "string" and not idx[e.operator] then
      ops[#ops + 1] = e.operator
      idx[e.operator] = #ops
    end
    for _, f in ipairs({"from", "to", "watermark"}) do
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
  -- MIN at the bottom edge, MAX at the top edge, the finite watermarks in between
  local function Y(v)
    if v == "MIN" or v == cjson.null or v == nil then return T + PH end
    if v == "MAX" then return T end
    return T + PH - 10 - (PH - 20) * (v - lo) / (hi - lo)
  end
  local out = {}
  out[#out + 1] = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>wmrun ' ..
    "trace: " .. esc(title) .. "</title><style>body{margin:16px;font-family:sans-serif;" ..
    "background:#f6f6f6}svg{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}" ..
    "text{font-size:11px;fill:#444}.ck{stroke:#6a3d9a;stroke-dasharray:4 3}</style></head><body>\n"
  out[#out + 1] = '<p><label>operator <select id="op"><option value="">(all)</option>'
  for _, o in ipairs(ops) do out[#out + 1] = fmt('<option value="%s">%s</option>', esc(o), esc(o)) end
  out[#out + 1] = fmt('</select></label> <span id="shown">%d</span> of %d events shown</p>\n',
    #ev, #ev)
  out[#out + 1] = fmt('<svg id="trace" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" ' ..
    'viewBox="0 0 %d %d"><rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>',
    W, H, W, H, L, T, PW, PH)
  out[#out + 1] = fmt('<text x="%d" y="%d" text-anchor="end">MAX</text><text x="%d" y="%d" ' ..
    'text-anchor="end">%s</text><text x="%d" y="%d" text-anchor="end">%s</text><text x="%d" ' ..
    'y="%d" text-anchor="end">MIN</text><text x="%d" y="%d">event (trace order); y: watermark</text>',
    L - 6, T + 4, L - 6, math.floor(Y(hi)) + 4, esc(fmt("%.0f", hi)), L - 6,
    math.floor(Y(lo)) + 4, esc(fmt("%.0f", lo)), L - 6, T + PH + 4, L, T + PH + 16)
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
  out[#out + 1] = "</svg>\n<p>Written by wmrun --timeline --from-trace. Choose an operator, or " ..
    "open the page with ?op=NAME.</p>\n<script>" .. SCRIPT .. "</script>\n</body></html>\n"
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
