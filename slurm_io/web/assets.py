"""The web view's stylesheet and its one small script, served by the app itself from
`/static/` (the login node has no internet: no CDN, nothing vendored)."""

from __future__ import annotations

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #0f172a; background: #f8fafc; }
header { background: #0f172a; color: #fff; padding: .4em 1em; display: flex;
         justify-content: space-between; align-items: center; flex-wrap: wrap; }
header a { color: #fff; } header ul { list-style: none; margin: 0; padding: 0; display: flex;
         gap: 1.2em; } .who { margin: 0; }
main { padding: 1em; max-width: 1200px; margin: auto; }
a:focus, button:focus, input:focus, select:focus, summary:focus, main:focus-visible {
  outline: 3px solid #f59e0b; outline-offset: 2px; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1em; top: 1em;
  background: #fff; color: #0f172a; padding: .4em; z-index: 9; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
      white-space: nowrap; }
table { border-collapse: collapse; background: #fff; margin: .6em 0 1.2em; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border-bottom: 1px solid #e2e8f0; padding: .3em .6em; text-align: left;
         vertical-align: top; }
thead th { background: #e2e8f0; } th a { color: inherit; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.risky { color: #991b1b; font-weight: 600; } .mark { color: #b45309; font-weight: 700; }
.live { background: #dcfce7; color: #166534; border-radius: 3px; padding: 0 .3em; }
.pending { color: #64748b; } .range { color: #475569; font-size: 90%; }
.filters { display: flex; flex-wrap: wrap; gap: .4em .8em; align-items: center;
           background: #fff; padding: .6em; border: 1px solid #e2e8f0; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
.facts dt { font-weight: 600; } .facts dd { margin: 0; }
figure { margin: .4em 0 1em; background: #fff; border: 1px solid #e2e8f0; }
figcaption { padding: .2em .6em .4em; color: #334155; font-size: 90%; }
.chart { display: block; max-width: 100%; height: auto; }
.key { display: inline-block; width: .9em; height: .9em; margin: 0 .3em 0 .8em; }
.key.read { background: #2563eb; } .key.write { background: #ea580c; }
.key.meta { background: #7c3aed; }
.choices { list-style: none; display: flex; flex-wrap: wrap; gap: .4em 1.2em; padding: 0;
           margin: .2em 0 .6em; }
.advice { border-left: 4px solid #b45309; background: #fff; padding: .2em 1em; margin: .5em 0; }
"""

# A running job's live region reloads itself; every other page works without script.
JS = """
(function () {
  var live = document.getElementById('live');
  if (!live || !live.dataset.src) { return; }
  var every = Math.max(1, parseInt(live.dataset.refresh || '30', 10)) * 1000;
  function reload() {
    fetch(live.dataset.src, {credentials: 'same-origin', cache: 'no-store'})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) { live.innerHTML = html; live.dataset.updated = Date.now(); })
      .catch(function () {})
      .then(function () { setTimeout(reload, every); });
  }
  setTimeout(reload, every);
})();
"""
