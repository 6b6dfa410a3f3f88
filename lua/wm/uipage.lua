--- The live view's page (wmrun --ui; docs/metrics.md "Live view"): one self-contained HTML
-- page, no external script, style or font. It polls /api/job (core/exec/wm_ui.c) twice a
-- second and draws the job graph, a table of every thread's operator instances, a table of
-- the totals per operator (when an operator has several instances) and the job's
-- backpressure and checkpoints. Rates (records per second) are the difference of two polls
-- over their interval. Each instance's row is `tr[data-op=NAME][data-thread=T]`, each
-- operator's total `tr[data-total=OPERATOR]`, each figure `td[data-f=FIELD]` (a
-- watermark's ms in `data-ms`; a source's lag per partition `small[data-f="lag:PARTITION"]`):
-- the spec (spec/ui_spec.lua) reads them.
-- Loaded only when the view is asked for (base.lua: env.ui_http.page).
-- @module wm.uipage
-- @local
return [==[<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>wmrun live view</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:10px 18px;display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:18px;margin:0}
#status{font-size:12px;padding:2px 8px;border-radius:9px;background:#555}
#status.live{background:#2e7d32}#status.ended{background:#b71c1c}
main{padding:12px 18px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin-bottom:12px;padding:10px 14px}
h2{font-size:14px;margin:0 0 8px;color:#4a5568;text-transform:uppercase;letter-spacing:.04em}
.facts{display:flex;gap:28px;flex-wrap:wrap}.facts b{display:block;font-size:18px}
.note{color:#8a5a00;background:#fff6e0;border:1px solid #f0d9a0;padding:6px 10px;border-radius:4px;margin-bottom:12px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{text-align:right;padding:4px 8px;border-bottom:1px solid #eef0f3;white-space:nowrap}
th{font-size:12px;color:#4a5568}
td.name,th.name{text-align:left;white-space:normal}
td small{color:#6b7280;display:block}
svg text{font:12px system-ui,sans-serif}svg text.band{fill:#6b7280;font-weight:600}
.node rect{fill:#e8f0fe;stroke:#4a6fa5}.node.src rect{fill:#e6f4ea;stroke:#2e7d32}
.node.hot rect{fill:#fdecea;stroke:#b71c1c}
.edge{stroke:#8a94a6;fill:none;marker-end:url(#arrow)}.edge.side{stroke-dasharray:4 3}
</style></head>
<body>
<header><h1 id="job">wmrun</h1><span id="status">connecting</span>
<span id="shape"></span><span id="uptime"></span></header>
<main>
<div id="threadnote" class="note" hidden></div>
<section><h2>Job graph</h2><svg id="graph" width="100%" height="60"></svg></section>
<section><h2>Backpressure and checkpoints</h2><div class="facts">
<div>sources <b id="bp-paused">-</b></div><div>time paused <b id="bp-time">-</b></div>
<div>bytes queued <b id="bp-bytes">-</b></div><div>checkpoints <b id="ck-taken">-</b></div>
<div>last checkpoint <b id="ck-last">-</b></div><div>last size <b id="ck-bytes">-</b></div>
<div>longest <b id="ck-max">-</b></div></div></section>
<section id="totals-section" hidden><h2>Operators, totals over their subtasks</h2><table><thead><tr>
<th class="name">operator</th><th>subtasks</th><th>slowest watermark</th><th>in</th><th>out</th>
<th>late dropped</th><th>late to side output</th><th>keys</th><th>windows</th><th>source lag</th></tr></thead>
<tbody id="totals"></tbody></table></section>
<section><h2>Operator instances</h2><table><thead><tr><th class="name">operator</th>
<th>subtask</th><th>thread</th><th>watermark</th><th>lag</th><th>in</th><th>in/s</th><th>out</th><th>out/s</th>
<th>late dropped</th><th>late to side output</th><th>keys</th><th>windows</th></tr></thead>
<tbody id="ops"></tbody></table></section>
</main>
<script>
"use strict";
var prev = null, polls = 0;
function $(id) { return document.getElementById(id); }
function el(tag, attrs, text) {
  var e = document.createElement(tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function pad(n, w) { n = String(n); while (n.length < w) n = "0" + n; return n; }
function wmText(w) {
  if (w === null) return "none yet";
  if (w === "end") return "end of input";
  var d = new Date(w);
  if (isNaN(d.getTime())) return String(w);
  return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1, 2) + "-" + pad(d.getUTCDate(), 2) +
    " " + pad(d.getUTCHours(), 2) + ":" + pad(d.getUTCMinutes(), 2) + ":" +
    pad(d.getUTCSeconds(), 2) + "." + pad(d.getUTCMilliseconds(), 3);
}
function ms(v) {
  if (v === null || v === undefined) return "-";
  if (v < 1000) return Math.round(v) + " ms";
  if (v < 120000) return (v / 1000).toFixed(1) + " s";
  if (v < 7200000) return (v / 60000).toFixed(1) + " min";
  if (v < 172800000) return (v / 3600000).toFixed(1) + " h";
  return (v / 86400000).toFixed(0) + " days";
}
function bytes(v) {
  if (v < 1024) return v + " B";
  if (v < 1048576) return (v / 1024).toFixed(1) + " KiB";
  return (v / 1048576).toFixed(1) + " MiB";
}
function opKey(op) { return op.thread + "|" + op.name; }
function rate(op, field, dt) {
  if (!prev || dt <= 0) return "-";
  var p = prev.byName[opKey(op)];
  if (!p) return "-";
  return (Math.max(0, op[field] - p[field]) * 1000 / dt).toFixed(0);
}
function cell(tr, f, text, extra) {
  var td = el("td", {"data-f": f}, text);
  if (extra) for (var k in extra) td.setAttribute(k, extra[k]);
  tr.appendChild(td);
  return td;
}
function drawGraph(job) {
  var svg = $("graph"), ops = job.operators, depth = [], i, j;
  for (i = 0; i < ops.length; i++) depth[i] = 0;
  for (j = 0; j < ops.length; j++) /* longest path, bounded: a cycle stops growing */
    job.edges.forEach(function (e) {
      if (depth[e.to] < depth[e.from] + 1 && depth[e.from] + 1 < ops.length) depth[e.to] = depth[e.from] + 1;
    });
  /* a band per thread (its operators' edges stay inside it), columns by depth */
  var pos = [], W = 190, H = 46, gx = 40, gy = 14, lab = job.threads > 1 ? 18 : 0, top = 10, cols = 1;
  var threads = [], bands = [];
  ops.forEach(function (op) { if (threads.indexOf(op.thread) < 0) threads.push(op.thread); });
  threads.forEach(function (t) {
    var rows = [], n = 0;
    for (i = 0; i < ops.length; i++) {
      if (ops[i].thread !== t) continue;
      var d = depth[i];
      rows[d] = (rows[d] || 0) + 1;
      pos[i] = {x: 10 + d * (W + gx), y: top + lab + (rows[d] - 1) * (H + gy)};
      if (rows[d] > n) n = rows[d];
      if (d + 1 > cols) cols = d + 1;
    }
    bands.push({thread: t, y: top});
    top += lab + n * (H + gy) + (lab ? 8 : 0);
  });
  svg.setAttribute("height", top + 10);
  svg.setAttribute("viewBox", "0 0 " + Math.max(400, 20 + cols * (W + gx)) + " " + (top + 10));
  svg.innerHTML = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" ' +
    'markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#8a94a6"/></marker></defs>';
  var NS = "http://www.w3.org/2000/svg", links = job.edges.slice();
  /* records crossing threads: from "to thread k: ..." to "from other threads (thread k)" */
  ops.forEach(function (op, i) {
    var m = /^to thread (\d+): /.exec(op.name);
    if (m) ops.forEach(function (o, j) {
      if (o.name === "from other threads (thread " + m[1] + ")") links.push({from: i, to: j, side: true});
    });
  });
  if (lab) bands.forEach(function (b) {
    var t = document.createElementNS(NS, "text");
    t.setAttribute("x", 10); t.setAttribute("y", b.y + 12); t.setAttribute("class", "band");
    t.textContent = "thread " + b.thread;
    svg.appendChild(t);
  });
  links.forEach(function (e) {
    var a = pos[e.from], b = pos[e.to], p = document.createElementNS(NS, "path");
    var x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    if (x2 <= x1) { x2 = b.x + W / 2; y2 = b.y; }
    p.setAttribute("d", "M" + x1 + "," + y1 + " C" + (x1 + gx / 2) + "," + y1 + " " +
      (x2 - gx / 2) + "," + y2 + " " + x2 + "," + y2);
    p.setAttribute("class", "edge" + (e.side ? " side" : ""));
    svg.appendChild(p);
  });
  ops.forEach(function (op, i) {
    var g = document.createElementNS(NS, "g"), r = document.createElementNS(NS, "rect");
    var hot = op.late_dropped > 0;
    g.setAttribute("class", "node" + (op.channels.length === 0 ? " src" : "") + (hot ? " hot" : ""));
    g.setAttribute("data-node", op.name);
    g.setAttribute("data-thread", op.thread);
    g.setAttribute("transform", "translate(" + pos[i].x + "," + pos[i].y + ")");
    r.setAttribute("width", W); r.setAttribute("height", H); r.setAttribute("rx", 5);
    g.appendChild(r);
    var t1 = document.createElementNS(NS, "text"), t2 = document.createElementNS(NS, "text");
    t1.setAttribute("x", 8); t1.setAttribute("y", 18);
    t1.textContent = op.name.length > 28 ? op.name.slice(0, 27) + "…" : op.name;
    t2.setAttribute("x", 8); t2.setAttribute("y", 36);
    t2.textContent = "in " + op.records_in + " · out " + op.records_out +
      (op.late_dropped ? " · late " + op.late_dropped : "");
    var tip = document.createElementNS(NS, "title");
    tip.textContent = op.name + " (thread " + op.thread + ")\nwatermark " + wmText(op.watermark);
    g.appendChild(tip); g.appendChild(t1); g.appendChild(t2);
    svg.appendChild(g);
  });
}
function render(job, t) {
  var dt = prev ? t - prev.t : 0;
  $("job").textContent = job.name;
  $("shape").textContent = "parallelism " + job.parallelism + " · threads " + job.threads;
  if (job.uptime_ms !== undefined) $("uptime").textContent = "running " + ms(job.uptime_ms);
  var note = $("threadnote");
  if (job.threads > 1) {
    note.hidden = false;
    note.textContent = "This job runs on " + job.threads + " threads: every thread's operators are shown, " +
      "each thread's figures as it last published them (at most 0.1 s old).";
  }
  var bp = job.backpressure;
  if (bp) {
    var tb = job.threads_backpressure;
    $("bp-paused").textContent = (bp.paused ? "paused" : "running") + (tb && bp.paused ? " (thread " +
      tb.filter(function (x) { return x.paused; }).map(function (x) { return x.thread; }).join(", ") + ")" : "");
    $("bp-time").textContent = ms(bp.paused_ms);
    $("bp-bytes").textContent = bytes(bp.queued_bytes);
  }
  var ck = job.checkpoints;
  $("ck-taken").textContent = ck ? ck.taken : "off";
  $("ck-last").textContent = ck && ck.taken ? "#" + ck.last_id + " in " + ms(ck.last_ms) : "-";
  $("ck-bytes").textContent = ck && ck.taken ? bytes(ck.last_bytes) : "-";
  $("ck-max").textContent = ck && ck.taken ? ms(ck.max_ms) : "-";
  drawGraph(job);
  var body = $("ops"), rows = document.createDocumentFragment();
  job.operators.forEach(function (op) {
    var tr = el("tr", {"data-op": op.name, "data-thread": op.thread});
    var name = el("td", {"class": "name", "data-f": "name"}, op.name);
    name.appendChild(el("small", {}, op.kind));
    if (op.inputs) op.inputs.forEach(function (inp, k) {
      name.appendChild(el("small", {"data-f": "input" + (k + 1)}, "input " + (k + 1) + ": " + inp.records +
        " records, watermark " + wmText(inp.watermark) + (inp.idle ? " (idle)" : "") +
        ", late " + inp.late_dropped + " dropped / " + inp.late_side + " to side output"));
    });
    op.side_outputs.forEach(function (s) {
      name.appendChild(el("small", {"data-f": "side:" + s.tag}, "side output " + s.tag + ": " + s.records));
    });
    if (op.source_lag) op.source_lag.forEach(function (l) {
      name.appendChild(el("small", {"data-f": "lag:" + l.partition}, "partition " + l.partition + ": lag " +
        (l.records === null ? "not known yet" : l.records + " records")));
    });
    tr.appendChild(name);
    cell(tr, "subtask", op.subtask);
    cell(tr, "thread", op.thread);
    var w = cell(tr, "watermark", wmText(op.watermark), {"data-ms": op.watermark === null ? "" : op.watermark});
    if (op.channels.length > 1) op.channels.forEach(function (c, k) {
      w.appendChild(el("small", {"data-f": "channel" + k, "data-ms": c.watermark === null ? "" : c.watermark},
        "channel " + k + ": " + wmText(c.watermark) + (c.idle ? " (idle)" : "")));
    });
    cell(tr, "lag_ms", ms(op.lag_ms));
    cell(tr, "records_in", op.records_in);
    cell(tr, "in_rate", rate(op, "records_in", dt));
    cell(tr, "records_out", op.records_out);
    cell(tr, "out_rate", rate(op, "records_out", dt));
    cell(tr, "late_dropped", op.late_dropped);
    cell(tr, "late_side", op.late_side);
    cell(tr, "keys", op.keys === undefined ? "" : op.keys);
    cell(tr, "windows", op.windows === undefined ? "" : op.windows);
    rows.appendChild(tr);
  });
  body.replaceChildren(rows);
  var several = job.totals.some(function (t) { return t.subtasks > 1; }), trows = document.createDocumentFragment();
  $("totals-section").hidden = !several;
  job.totals.forEach(function (t) {
    var tr = el("tr", {"data-total": t.operator});
    tr.appendChild(el("td", {"class": "name", "data-f": "name"}, t.operator));
    cell(tr, "subtasks", t.subtasks);
    cell(tr, "watermark", wmText(t.watermark), {"data-ms": t.watermark === null ? "" : t.watermark});
    cell(tr, "records_in", t.records_in);
    cell(tr, "records_out", t.records_out);
    cell(tr, "late_dropped", t.late_dropped);
    cell(tr, "late_side", t.late_side);
    cell(tr, "keys", t.keys === undefined ? "" : t.keys);
    cell(tr, "windows", t.windows === undefined ? "" : t.windows);
    cell(tr, "source_lag", t.source_lag === undefined ? "" : t.source_lag === null ? "-" : t.source_lag);
    trows.appendChild(tr);
  });
  $("totals").replaceChildren(trows);
  var byName = {};
  job.operators.forEach(function (op) { byName[opKey(op)] = op; });
  prev = {t: t, byName: byName};
}
function poll() {
  fetch("/api/job", {cache: "no-store"}).then(function (r) {
    if (!r.ok) throw new Error("HTTP " + r.status);
    return r.json();
  }).then(function (job) {
    polls++;
    render(job, Date.now());
    var s = $("status");
    s.textContent = "live"; s.className = "live"; s.setAttribute("data-polls", polls);
  }).catch(function () {
    var s = $("status");
    s.textContent = polls ? "job ended (last values shown)" : "no job"; s.className = "ended";
  }).finally(function () { setTimeout(poll, 500); });
}
poll();
</script>
</body></html>
]==]
