// The timeline page's script (lua/wm/timeline/init.lua puts it into every HTML page it draws,
// without these leading comment lines). Zoom (wheel) and pan (drag) along x, double click to
// reset: every element under a .zx group is moved by rewriting its x coordinates; the denser
// x ticks and the value labels that have room are shown (the value labels as
// wm.timeline.lanes' place_values places them at first).
window.onerror=function(m){var d=document.documentElement;d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+m+';');};
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
document.documentElement.setAttribute('data-ready','1');
