#include "tools/vsynth/report/page_assets.h"

namespace vsynth::cli::report {

const char* const kPageStyle = R"CSS(
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 2rem 3rem; color: #1d2330; }
h1 { font-size: 1.5rem; margin: 1.2rem 0 0.2rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 0.6rem; border-bottom: 1px solid #d5d9e0; }
.inputs { color: #5b6475; font-size: 0.9rem; }
.warn { background: #fff4d6; border: 1px solid #e8c766; padding: 0.5rem 0.8rem; margin: 0.6rem 0; }
.warn pre { margin: 0.3rem 0 0; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 0.4rem 0 1rem; }
th, td { border-bottom: 1px solid #e3e6eb; padding: 0.2rem 0.7rem; text-align: left; vertical-align: top; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; }
.graph svg { max-width: 100%; height: auto; }
.pass { color: #17693a; } .fail { color: #a3261c; } .oracle { color: #6a3fa0; }
#tasks-controls { display: flex; gap: 0.8rem; align-items: center; margin: 0.5rem 0; }
#tasks-controls input { width: 22rem; padding: 0.2rem 0.4rem; }
#task-table tr.task { cursor: pointer; }
#task-table tr.task:hover { background: #f6f8fb; }
.detail { background: #fafbfc; }
.detail pre { background: #f1f3f6; padding: 0.4rem; max-height: 24rem; overflow: auto; white-space: pre-wrap; }
.attempt { margin: 0.4rem 0 0.8rem; padding-left: 0.8rem; border-left: 3px solid #c9d2e0; }
.candidate { margin: 0.3rem 0 0.6rem; }
)CSS";

const char* const kPageScript = R"JS(
(function () {
  'use strict';
  function island(id) { return JSON.parse(document.getElementById(id).textContent); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  // Charts: each <div data-chart=NAME> drawn by Vega from its spec.
  function drawCharts() {
    var specs = island('vsynth-charts');
    var divs = document.querySelectorAll('div[data-chart]');
    var pending = divs.length, drawn = 0;
    document.body.setAttribute('data-charts', String(pending));
    divs.forEach(function (div) {
      var spec = specs[div.getAttribute('data-chart')];
      new vega.View(vega.parse(spec), {renderer: 'svg', container: div, hover: true})
        .runAsync().then(function () {
          drawn += 1;
          document.body.setAttribute('data-charts-drawn', String(drawn));
        });
    });
  }

  // The task table.
  var rows = [], shown = [], page = 0, pageSize = 50;
  function rowStatus(r) { return r.record.status || ''; }
  function matches(r, query, filter) {
    var rec = r.record;
    if (filter === 'failed' && rec.passed) return false;
    if (filter === 'passed' && !rec.passed) return false;
    if (filter === 'oracle' && !r.oracle) return false;
    if (filter.indexOf('status:') === 0 && rowStatus(r) !== filter.slice(7)) return false;
    if (!query) return true;
    if (r.text === undefined) r.text = JSON.stringify(rec).toLowerCase();
    return r.text.indexOf(query) >= 0;
  }
  function checkLine(c) {
    var parts = [c.check + ': ' + c.status];
    if (c.oracle) parts.push('(hidden tests)');
    if (c.tests !== undefined) parts.push(c.tests + ' tests');
    if (c.kind) parts.push(c.kind);
    if (c.exit !== undefined) parts.push('exit ' + c.exit);
    if (c.signal) parts.push('signal ' + c.signal);
    if (c.timed_out) parts.push('timed out');
    if (c.killed) parts.push('killed: ' + c.killed);
    if (c.ms !== undefined) parts.push(c.ms + ' ms');
    if (c.stdout_truncated || c.stderr_truncated) parts.push('output truncated');
    return parts.join(' \u00b7 ');
  }
  // One attempt's facets: its candidates with their code, checks and proof.
  function renderAttempt(box, title, facets) {
    var a = el('div', null, 'attempt');
    a.appendChild(el('h4', title));
    var cands = (facets.candidates && facets.candidates.candidates) || [];
    var verdicts = (facets.verdicts && facets.verdicts.candidates) || [];
    var proofs = (facets.proof && facets.proof.candidates) || [];
    if (facets.verdicts && facets.verdicts.outcome) a.appendChild(el('div', 'outcome: ' + facets.verdicts.outcome));
    cands.forEach(function (c, i) {
      var d = el('div', null, 'candidate');
      if (typeof c === 'string') { d.appendChild(el('div', c)); a.appendChild(d); return; }
      d.appendChild(el('strong', 'candidate ' + i + (c.finish ? ' (' + c.tokens + ' tokens, ' + c.finish + ')' : '')));
      d.appendChild(el('pre', c.code || c.text || ''));
      var v = verdicts.filter(function (x) { return x.index === i; })[0];
      if (v) (v.checks || []).forEach(function (chk) {
        d.appendChild(el('div', checkLine(chk), chk.status === 'pass' ? 'pass' : (chk.status === 'skipped' ? '' : 'fail')));
        if (chk.message) d.appendChild(el('pre', chk.message));
        if (chk.stdout) d.appendChild(el('pre', 'stdout:\n' + chk.stdout));
        if (chk.stderr) d.appendChild(el('pre', 'stderr:\n' + chk.stderr));
      });
      var p = proofs.filter(function (x) { return x.index === i; })[0];
      if (p) {
        d.appendChild(el('div', 'proof: ' + (p.verdict || '') + (p.decided ? ' (' + p.decided + ')' : '')));
        if (p.counterexample) d.appendChild(el('pre', 'counterexample: ' + p.counterexample));
      }
      a.appendChild(d);
    });
    if (!cands.length) {
      var names = Object.keys(facets);
      a.appendChild(el('div', names.length ? 'facets: ' + names.join(', ') : 'no facets'));
      if (facets.anchor) a.appendChild(el('pre', JSON.stringify(facets.anchor, null, 1)));
    }
    box.appendChild(a);
  }
  function renderDetail(r) {
    var rec = r.record, box = el('div');
    box.appendChild(el('div', 'results line ' + r.line + (rec.exit ? ' \u00b7 left at ' + rec.exit : '')));
    if (rec.error) box.appendChild(el('pre', rec.error, 'fail'));
    (rec.feedback || []).forEach(function (f) {
      box.appendChild(el('div', 'feedback after attempt ' + f.attempt + ' from ' + f.from + ':'));
      box.appendChild(el('pre', f.message));
    });
    // Earlier attempts keep only the facets that differ from the final ones.
    (rec.history || []).forEach(function (h) {
      renderAttempt(box, 'attempt ' + h.attempt + ': ' + h.status, h.facets || {});
    });
    renderAttempt(box, 'attempt ' + (rec.attempts || 1) + ' (final): ' + rec.status, rec.facets || {});
    return box;
  }
  function renderPage() {
    var body = document.querySelector('#task-table tbody');
    body.textContent = '';
    var pages = Math.max(1, Math.ceil(shown.length / pageSize));
    page = Math.min(page, pages - 1);
    shown.slice(page * pageSize, (page + 1) * pageSize).forEach(function (r) {
      var rec = r.record, tr = el('tr', null, 'task');
      tr.appendChild(el('td', rec.id));
      tr.appendChild(el('td', rec.status, rec.passed ? 'pass' : 'fail'));
      tr.appendChild(el('td', r.oracle ? 'oracle' : 'visible', r.oracle ? 'oracle' : ''));
      tr.appendChild(el('td', rec.attempts, 'num'));
      tr.appendChild(el('td', rec.exit || ''));
      tr.addEventListener('click', function () {
        var next = tr.nextSibling;
        if (next && next.className === 'detail') { body.removeChild(next); return; }
        var d = el('tr', null, 'detail'), td = el('td');
        td.colSpan = 5;
        td.appendChild(renderDetail(r));
        d.appendChild(td);
        body.insertBefore(d, tr.nextSibling);
      });
      body.appendChild(tr);
    });
    document.getElementById('tasks-page').textContent =
      'page ' + (page + 1) + ' of ' + pages + ' \u00b7 ' + shown.length + ' of ' + rows.length + ' rows';
  }
  function refilter() {
    var q = document.getElementById('tasks-search').value.toLowerCase();
    var f = document.getElementById('tasks-filter').value;
    shown = rows.filter(function (r) { return matches(r, q, f); });
    page = 0;
    renderPage();
  }
  function setupTable() {
    rows = island('vsynth-tasks');
    var filter = document.getElementById('tasks-filter');
    var statuses = {};
    rows.forEach(function (r) { statuses[rowStatus(r)] = true; });
    Object.keys(statuses).sort().forEach(function (s) {
      var o = el('option', 'status ' + s);
      o.value = 'status:' + s;
      filter.appendChild(o);
    });
    document.getElementById('tasks-search').addEventListener('input', refilter);
    filter.addEventListener('change', refilter);
    document.getElementById('tasks-prev').addEventListener('click', function () { page = Math.max(0, page - 1); renderPage(); });
    document.getElementById('tasks-next').addEventListener('click', function () { page += 1; renderPage(); });
    refilter();
  }

  // A link to one task (report.html#task=ID) opens it: the table searched for it, its details
  // shown.
  function openLinkedTask() {
    var m = /^#task=(.+)$/.exec(location.hash);
    if (!m) return;
    var id = decodeURIComponent(m[1]);
    document.getElementById('tasks-search').value = id;
    refilter();
    var first = document.querySelector('#task-table tr.task');
    if (first && first.firstChild.textContent === id) first.click();
  }

  setupTable();
  openLinkedTask();
  if (window.vega) drawCharts();
})();
)JS";

}  // namespace vsynth::cli::report
