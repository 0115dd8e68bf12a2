"""Render search results: CSV, a matplotlib PNG/SVG and a self-contained HTML report (its own SVG plot, no library).

Plot libraries are optional extras imported lazily. The writers take the search's typed results
(explore.frontier.Frontier) and write what their `to_dict(plot=True)` holds.
"""
from __future__ import annotations

import csv
import html
import importlib.util
import io
import json
from pathlib import Path

from llm_codesign.errors import InputError
from llm_codesign.explore.frontier import point_row
from llm_codesign.outputs import bound_columns, predictable_column
from llm_codesign.render.accuracy import accuracy_said
from llm_codesign.render.intervals import CAPPED_TEXT, capped_bounds, frontier_reasons
from llm_codesign.render.plot import (
    PALETTE,
    Drawing,
    PlotProcess,
    bound_in_view,
    bound_label,
    data_limits,
    draw,
    gpus_text,
    series_label,
)

_METRICS = ("tok_s_per_user", "output_tok_s_per_gpu", "ttft_ms", "tpot_ms")
# each point's 80% interval per metric (measure.intervals), and whether its 95% is narrow enough to be a prediction
# (the table's "?": sweep's names, outputs.predictable_column), blank where the search gave none
_BANDS = tuple(c for m in _METRICS for c in (*bound_columns(m, ("lo80", "hi80")).values(), predictable_column(m)))
_DEP_FIELDS = ("plan", "instance_gpus", "replicas", "concurrency_per_instance", "weight_dtype", "activation_dtype", "kv_dtype", "spec",
               "draft_len")
# the series' engine beside its GPU: `pareto --gpu b200,mi355x` prices each on its vendor's (TensorRT-LLM, SGLang), which the
# file did not say
FIELDS = ("model", "gpu", "backend", *_METRICS, *_DEP_FIELDS, "accuracy_source", "accuracy_drop_pct", "accuracy", *_BANDS)


def frontier_rows(results: list[dict]) -> list[dict]:
    """The CSV's rows: each point's explore.frontier.point_row (what Frontier.to_records holds), its FIELDS, blank where a
    point has none, beside its series' model, GPU and engine."""
    rows = []
    for r in results:
        for p in r["frontier"]:
            row = point_row(p) | {"model": r["model"], "gpu": r["gpu"], "backend": r.get("backend", "")}
            drop = row["accuracy_drop_pct"]
            rows.append({k: row.get(k, "") for k in FIELDS} | {"accuracy_drop_pct": "" if drop is None else round(drop, 3)})
    return rows


def _files_view(results) -> list[dict]:
    """The search results (Frontier) as the files hold them: the --json record with the cloud and the ideal bound."""
    return [r.to_dict(plot=True) for r in results]


def csv_text(results: list) -> str:
    """The frontier points of the search results, one CSV row each (FIELDS)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS)
    w.writeheader()
    w.writerows(frontier_rows(_files_view(results)))
    return buf.getvalue()


def write_csv(results: list, path: str | Path) -> None:
    Path(path).write_text(csv_text(results))


def plot_extra(path: str | Path) -> None:
    """Refuses a plot path where matplotlib is not installed; finds the package without importing it
    (a fifth of a second, which PlotProcess's child spends instead)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("plot", str(path), "the plot extra: pip install 'llm-codesign[plot]'")


def write_plot(results: list, path: str | Path, *, process: PlotProcess | None = None) -> Drawing | None:
    """The frontier's PNG or SVG (plot.draw); with a started `process`, drawn there: returns the
    Drawing that completes the file (write_all waits on it before any rename)."""
    plot_extra(path)
    results = _files_view(results)
    if process is not None:
        return process.submit(results, path)
    draw(results, path)
    return None


def _compact(xs) -> list[float]:
    """Plotted coordinates in four significant figures (a pixel is under a thousandth of a decade)."""
    return [float(f"{float(x):.4g}") for x in xs]


def _empty_reason(r: dict) -> str:
    if r["frontier"]:
        return ""
    if not r.get("fitting", 1):
        return (f"none of its {r['evaluated']:,} deployments fits in the memory of "
                f"{gpus_text(r['num_gpus'])} {r['gpu']}")
    return f"{r.get('fitting', 0):,} of its {r['evaluated']:,} deployments fit, but none meets the SLOs given"


def report_data(results: list[dict], breakdowns: dict) -> dict:
    """What the HTML report embeds, once: each result with its cloud and ideal bound in plotted
    precision, the frontier whole, the breakdowns, and the axes' limits (data_limits, as the PNG's)."""
    (x0, x1), (y0, y1) = data_limits(results)
    out = []
    for r in results:
        rb = r.get("roofline_bound") if r.get("mode") != "disaggregated" else None  # the aggregated sibling's bound
        rb = rb if bound_in_view(rb, ((x0, x1), (y0, y1))) else None  # one that misses the axes is not named
        out.append({**{k: v for k, v in r.items() if k not in ("cloud", "roofline_bound")},
                    "label": series_label(r, many=len(results) > 1), "empty": _empty_reason(r),
                    "cloud": {k: _compact(r["cloud"][k]) for k in ("tok_s_per_user", "output_tok_s_per_gpu")},
                    "bound": None if not rb else {"label": bound_label(r, results),
                                                  **{k: _compact(rb[k]) for k in ("tok_s_per_user", "output_tok_s_per_gpu")}}})
    # what each row beyond the operators is (explore.search.point_breakdowns' `what`), once for all points, a row keeping
    # its own only where it differs (the running sequences it counts)
    said: dict[str, str] = {}
    for rows in breakdowns.values():
        for o in rows:
            if o.get("what"):
                said.setdefault(o["name"], o["what"])
    slim = {k: [{f: v for f, v in o.items() if f != "what" or v != said.get(o["name"])} for o in rows] for k, rows in breakdowns.items()}
    return {"results": out, "breakdowns": slim, "parts": said, "limits": {"x": [x0, x1], "y": [y0, y1]}}


# The report's script: a log-log SVG plot drawn from the embedded data (no plotting library: plotly.js
# inlined made one frontier's report 4.9 MB), hover details, a click on a point or a row for its
# per-operator breakdown. Every name from the data goes in through textContent, never innerHTML.
_PLOT_JS = r"""
const D = JSON.parse(document.getElementById('frontier-data').textContent);
const NS = 'http://www.w3.org/2000/svg', W = 960, H = 560, M = {l: 72, r: 16, t: 14, b: 50};
const COLOURS = __PALETTE__;
const DASHES = ['2,3', '8,4', '9,3,2,3', '1,5', '6,2,1,2,1,2'];
const colour = (i) => COLOURS[i % COLOURS.length], dash = (i) => DASHES[i % DASHES.length];
function S(tag, attrs, parent) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function E(tag, text, parent, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  if (parent) parent.appendChild(e);
  return e;
}
const L = D.limits, lx = L.x.map(Math.log10), ly = L.y.map(Math.log10);
const sx = (v) => M.l + (Math.log10(v) - lx[0]) / (lx[1] - lx[0]) * (W - M.l - M.r);
const sy = (v) => H - M.b - (Math.log10(v) - ly[0]) / (ly[1] - ly[0]) * (H - M.t - M.b);
const fmtTick = (v) => v >= 1e6 ? v / 1e6 + 'M' : v >= 1e3 ? v / 1e3 + 'k' : String(+v.toPrecision(3));
function ticks(lo, hi) {  // decades, with 2 and 5 labelled when the axis spans under three decades
  const out = [];
  for (let k = Math.floor(lo) - 1; k <= Math.ceil(hi); k++)
    for (const m of [1, 2, 3, 4, 5, 6, 7, 8, 9]) {
      const v = m * Math.pow(10, k), l = Math.log10(v);
      if (l >= lo && l <= hi) out.push({v, major: m === 1, label: m === 1 || (hi - lo < 3 && (m === 2 || m === 5))});
    }
  return out;
}
function intervals(p) {  // the point's 80% and 95% intervals (measure.intervals), where the search gave them
  const b = p.intervals;
  if (!b) return [];
  const f = (v, k) => k === 'tpot_ms' ? v.toFixed(2) : v.toFixed(v < 100 ? 1 : 0);
  const names = {tok_s_per_user: 'tok/s/user', output_tok_s_per_gpu: 'tok/s/GPU', ttft_ms: 'TTFT ms', tpot_ms: 'TPOT ms'};
  return ['80% (95%) interval: ' + Object.keys(names).filter((k) => b[k]).map((k) =>
    `${names[k]} ${f(b[k].lo80, k)}-${f(b[k].hi80, k)} (${f(b[k].lo95, k)}-${f(b[k].hi95, k)})`).join(', ')];
}
const svg = S('svg', {viewBox: `0 0 ${W} ${H}`, width: W, height: H, id: 'frontier-svg', role: 'img',  // its name for a screen reader
                     'aria-label': 'Pareto frontier, log-log: output tokens/s per GPU against output tokens/s per user, of '
                       + D.results.map((r) => r.gpu ? `${r.model} on ${r.gpu}` : r.label).join(', ')});
document.getElementById('plot').appendChild(svg);
S('clipPath', {id: 'area'}, S('defs', {}, svg)).appendChild(S('rect', {x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b}));
const grid = S('g', {class: 'grid'}, svg);
for (const t of ticks(lx[0], lx[1])) {
  const x = sx(t.v);
  S('line', {x1: x, x2: x, y1: M.t, y2: H - M.b, stroke: t.major ? '#ccc' : '#eee'}, grid);
  if (t.label) S('text', {x, y: H - M.b + 16, 'text-anchor': 'middle'}, grid).textContent = fmtTick(t.v);
}
for (const t of ticks(ly[0], ly[1])) {
  const y = sy(t.v);
  S('line', {x1: M.l, x2: W - M.r, y1: y, y2: y, stroke: t.major ? '#ccc' : '#eee'}, grid);
  if (t.label) S('text', {x: M.l - 6, y: y + 4, 'text-anchor': 'end'}, grid).textContent = fmtTick(t.v);
}
S('rect', {x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b, fill: 'none', stroke: '#888'}, svg);
S('text', {x: (M.l + W - M.r) / 2, y: H - 10, 'text-anchor': 'middle'}, svg).textContent = 'interactivity: output tokens/s per user';
S('text', {x: 16, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', transform: `rotate(-90 16 ${(M.t + H - M.b) / 2})`}, svg)
  .textContent = 'throughput: output tokens/s per GPU';
const area = S('g', {'clip-path': 'url(#area)'}, svg);
const tip = document.getElementById('tip'), legend = document.getElementById('legend');
function swatch(item, attrs, text) {
  const s = S('svg', {width: 28, height: 10}, item);
  S('line', {x1: 1, x2: 27, y1: 5, y2: 5, 'stroke-width': 2, ...attrs}, s);
  E('span', text, item);
}
let chosen = null;
D.results.forEach((r, i) => {
  const c = colour(i), xs = r.cloud.tok_s_per_user, ys = r.cloud.output_tok_s_per_gpu;
  // the cloud: one path of zero-length round-capped segments, a dot each
  S('path', {d: xs.map((x, k) => `M${sx(x).toFixed(1)},${sy(ys[k]).toFixed(1)}h0`).join(''), stroke: c, 'stroke-width': 3,
             'stroke-linecap': 'round', opacity: 0.3, class: 'cloud'}, area);
  if (r.bound) S('polyline', {points: r.bound.tok_s_per_user.map((x, k) => `${sx(x).toFixed(1)},${sy(r.bound.output_tok_s_per_gpu[k]).toFixed(1)}`).join(' '),
                              fill: 'none', stroke: c, 'stroke-width': 1.5, 'stroke-dasharray': dash(i), class: 'bound'}, area);
  const banded = r.frontier.filter((p) => p.intervals);
  if (banded.length) {  // the frontier's band: each point's 80% interval on tok/s/GPU, upper edge then lower
    const edge = (k) => (p) => `${sx(p.tok_s_per_user).toFixed(1)},${sy(p.intervals.output_tok_s_per_gpu[k]).toFixed(1)}`;
    S('polygon', {points: [...banded.map(edge('hi80')), ...banded.slice().reverse().map(edge('lo80'))].join(' '), fill: c,
                  opacity: 0.15, stroke: 'none', class: 'band'}, area);
  }
  S('polyline', {points: r.frontier.map((p) => `${sx(p.tok_s_per_user).toFixed(1)},${sy(p.output_tok_s_per_gpu).toFixed(1)}`).join(' '),
                 fill: 'none', stroke: c, 'stroke-width': 2.5, class: 'frontier'}, area);
  r.frontier.forEach((p, j) => {
    const pt = S('circle', {cx: sx(p.tok_s_per_user), cy: sy(p.output_tok_s_per_gpu), r: 4, fill: c, stroke: '#222', 'stroke-width': 0.6,
                            class: 'pt', 'data-i': i, 'data-j': j}, area);
    pt.addEventListener('mouseenter', (ev) => {
      tip.replaceChildren(E('b', r.label), ...describe(p).map((t) => E('div', t)));
      tip.style.display = 'block';
      tip.style.left = (ev.pageX + 12) + 'px';
      tip.style.top = (ev.pageY + 12) + 'px';
    });
    pt.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
    pt.addEventListener('click', () => show(i, j));
  });
  if (r.at) S('circle', {cx: sx(r.at.tok_s_per_user), cy: sy(r.at.output_tok_s_per_gpu), r: 9, fill: 'none', stroke: c, 'stroke-width': 2.5,
                         'pointer-events': 'none', class: 'at-slo', 'data-i': i}, area);  // the design report: the shape's best deployment at the SLO
  const item = E('div', null, legend);
  swatch(item, {stroke: c}, r.label);
  E('span', xs.length ? ` (${r.frontier.length} frontier points; dots: ${xs.length.toLocaleString()} of ${r.evaluated.toLocaleString()} deployments evaluated)`
    : ` (${r.frontier.length} frontier points of ${r.evaluated.toLocaleString()} deployments evaluated)`, item, 'hint');
  if (banded.length) swatch(E('div', null, legend), {stroke: c, 'stroke-width': 8, opacity: 0.15}, `${r.label}: 80% interval of tok/s/GPU`);
  if (r.bound) swatch(E('div', null, legend), {stroke: c, 'stroke-dasharray': dash(i)}, r.bound.label);
  if (r.empty) E('div', `${r.label}: no deployment on the frontier: ${r.empty}`, legend, 'empty');
});
if (D.floor) {  // the design report: the SLO's floor, a line of tok/s/user (or tok/s/GPU) the rings must clear
  const f = D.floor, v = f.axis === 'x' ? sx(f.value) : sy(f.value), look = {stroke: '#a00', 'stroke-dasharray': '6,4'};
  S('line', {...(f.axis === 'x' ? {x1: v, x2: v, y1: M.t, y2: H - M.b} : {x1: M.l, x2: W - M.r, y1: v, y2: v}), ...look, 'pointer-events': 'none', class: 'floor'}, area);
  swatch(E('div', null, legend), look, f.label);
}
""".replace("__PALETTE__", json.dumps(list(PALETTE)))  # plot.PALETTE: one palette for the PNG and the page
# the pareto report's hover lines: a frontier point's deployment, precisions, metrics, accuracy and intervals
_DESCRIBE_JS = r"""
function describe(p) {
  const d = p.deployment;
  return [`${d.plan} x${d.replicas}, batch ${d.concurrency_per_instance}`,
          `W ${d.weight_dtype} / A ${d.activation_dtype} / KV ${d.kv_dtype}` + (d.spec ? `, ${d.spec} k=${d.draft_len}` : ''),
          `${p.tok_s_per_user.toFixed(1)} tok/s/user, ${p.output_tok_s_per_gpu.toFixed(0)} tok/s/GPU`,
          `TTFT ${p.ttft_ms.toFixed(0)} ms, TPOT ${p.tpot_ms.toFixed(2)} ms`,
          'accuracy ' + (p.accuracy ? p.accuracy.short : 'none'), ...intervals(p)];
}
"""
# the pareto report's frontier table and per-operator breakdowns (a click on a point or a row)
_TABLE_JS = r"""
function cell(tr, tag, text) { return E(tag, text, tr); }
function table(head) { const t = E('table'); const tr = t.createTHead().insertRow(); head.forEach((h) => cell(tr, 'th', h)); t.createTBody(); return t; }
const rows = {};
function show(i, j) {
  const r = D.results[i], p = r.frontier[j], b = D.breakdowns[i + ':' + j] || [];
  if (chosen) { chosen.pt.setAttribute('r', 4); chosen.row.classList.remove('chosen'); }
  chosen = {pt: document.querySelector(`circle.pt[data-i="${i}"][data-j="${j}"]`), row: rows[i + ':' + j]};
  chosen.pt.setAttribute('r', 7);
  chosen.row.classList.add('chosen');
  const box = document.getElementById('breakdown');
  box.replaceChildren(E('p', `${r.label}, point ${j + 1}: ` + describe(p).join('; ')));
  if (!b.length) { E('p', 'no per-operator breakdown was written for this point', box, 'hint'); return; }
  // the rows' shares of TPOT sum to it (explore/search.py point_breakdowns); what a row beyond the operators is, beneath
  const t = table(['part', 'kind', 'ms per step', 'ms of TPOT', 'share']), total = b.reduce((a, o) => a + o.tpot_ms, 0);
  for (const o of b) { const tr = t.tBodies[0].insertRow(); [o.name, o.kind, o.time_ms.toFixed(4), o.tpot_ms.toFixed(4), (100 * o.tpot_ms / total).toFixed(1) + '%'].forEach((x) => cell(tr, 'td', x)); }
  t.id = 'breakdown-table';
  box.appendChild(t);
  for (const o of b) if (o.what || D.parts[o.name]) E('p', `${o.name}: ${o.what || D.parts[o.name]}.`, box, 'hint');
}
const T = table(['model', 'GPU', 'tok/s/user', 'tok/s/GPU', 'TTFT ms', 'TPOT ms', 'plan', 'instances', 'GPUs each', 'batch',
                 'weights', 'activations', 'KV cache', 'speculation', 'accuracy', 'tok/s/GPU 80%']);
T.id = 'frontier-table';
D.results.forEach((r, i) => r.frontier.forEach((p, j) => {
  const d = p.deployment, tr = T.tBodies[0].insertRow();
  tr.onclick = () => show(i, j);
  // reached by Tab, shown on Enter or Space, as a button is
  tr.tabIndex = 0;
  tr.onkeydown = (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); show(i, j); } };
  tr.title = 'click (or Enter) for its per-operator breakdown';
  rows[i + ':' + j] = tr;
  const g = p.intervals && p.intervals.output_tok_s_per_gpu;
  [r.model, r.gpu, p.tok_s_per_user.toFixed(1), p.output_tok_s_per_gpu.toFixed(0), p.ttft_ms.toFixed(0), p.tpot_ms.toFixed(2), d.plan,
   d.replicas, d.instance_gpus, d.concurrency_per_instance, d.weight_dtype, d.activation_dtype, d.kv_dtype,
   d.spec ? `${d.spec} k=${d.draft_len}` : 'none', p.accuracy ? p.accuracy.short : 'none',
   g ? `${g.lo80.toFixed(0)}-${g.hi80.toFixed(0)}${g.hi80 === g.capped || g.lo80 === g.capped ? '*' : ''}` : '-']
    .forEach((x) => cell(tr, 'td', x));
}));
document.getElementById('table').appendChild(T);
"""
_REPORT_JS = _PLOT_JS + _DESCRIBE_JS + _TABLE_JS


# what the shaded band means, in one sentence (measure.intervals; its coverage: docs/validation_report.md)
BAND_TEXT = ("The shaded band is each frontier point's 80% interval on tok/s/GPU: the range around the prediction that held "
             "80% of measured runs like it (wider, and saying why, where no run covers the question); hover a point for its "
             "80% and 95% intervals on every metric.")
_BAND_SENTENCE = f'<p id="band-note">{html.escape(BAND_TEXT)}</p>'


def basis_text(r: dict) -> str:
    """What a result's points were priced at and how far to trust them, said once in words: the precisions, the
    accuracy at each, where the tok/s/GPU intervals come from and each reason they were widened (the hover gave the
    figures only, and the band's 'saying why' was said nowhere on the page)."""
    fr = r["frontier"]
    precs = {f"W {d['weight_dtype']} / A {d['activation_dtype']} / KV {d['kv_dtype']}": accuracy_said(p.get("accuracy"))
             for p in fr for d in (p["deployment"],)}
    src = dict.fromkeys(p["intervals"]["output_tok_s_per_gpu"]["source"] for p in fr if "output_tok_s_per_gpu" in (p.get("intervals") or {}))
    why = frontier_reasons(fr)
    # the table's 80% bounds that stop at the ideal step (marked *), as the CLI's tables say them (capped_footnote)
    caps = sum(bool(capped_bounds(p.get("intervals"), ("output_tok_s_per_gpu",), ("80",))) for p in fr)
    return (f"{series_label(r, many=True)}: {'; '.join(f'{k}, accuracy {v}' for k, v in precs.items())}."
            + (f" tok/s/GPU intervals: {'; '.join(f'from {x}' for x in src)}." if src else "")
            + (f" Widened: {'; '.join(why)}." if why else "")
            + (f" Bounds capped: the 80% tok/s/GPU bound of {caps} point{'s' if caps != 1 else ''} (marked *): {CAPPED_TEXT}." if caps else ""))


def engines_text(results: list[dict]) -> str:
    """'backend trtllm', or each engine with its GPUs where the series' differ: an MI355X beside NVIDIA GPUs is priced on
    SGLang (its vendor's, spec.engines), and the report named the first series' engine for all of them."""
    by: dict[str, list[str]] = {}
    for r in results:
        by.setdefault(str(r["backend"]), []).append(str(r["gpu"]))
    if len(by) == 1:
        return f"backend {next(iter(by))}"
    return "backends " + ", ".join(f"{b} ({', '.join(gs)})" for b, gs in by.items())


def profile_text(profile: str) -> str:
    """What a report priced with a calibration profile of one's own (`profile`, its path) says of its error: the intervals
    name whose runs they come from (basis_text), and where they are the bundled profile's they measure that profile, not
    this one, whose error only the user's own runs can measure."""
    name = Path(profile).name
    return (f"Priced with {name}, a calibration profile of your own: its error is not known unless you measure it "
            f"(`llm-codesign validate --calibration {profile}` on your runs). An interval from {name}'s own runs (`calibrate "
            "--serving` writes them) is measured on this profile; one from the bundled profile's runs states the bundled "
            "profile's error, not this one's.")


def write_html(results: list, breakdowns: dict, path: str | Path, *, profile: str | None = None) -> None:
    """Self-contained HTML with no library and nothing fetched: the data once as JSON, an SVG plot its
    own script draws (report_data, _REPORT_JS), hover details and per-operator breakdowns. How far to trust the
    figures is said on one basis, each point's intervals (basis_text per result; profile_text where `profile`, a
    calibration profile's path, priced them)."""
    results = _files_view(results)
    data = json.dumps(report_data(results, breakdowns), allow_nan=False, separators=(",", ":"))
    # no markup can start inside the JSON (a model named after a file like `<img ...>.json`); the page
    # reads it with textContent and builds every cell with textContent, never innerHTML
    safe = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    r0 = results[0]
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>llm-codesign Pareto report</title>
<style>body{{font-family:sans-serif;margin:1.5em;color:#222}} table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} td:first-child,th:first-child{{text-align:left}}
#table,#breakdown{{max-width:100%;overflow-x:auto}} #frontier-table tbody tr{{cursor:pointer}} #frontier-table tbody tr:hover{{background:#eef4ff}} tr.chosen{{background:#dde8ff}}
#plot svg{{max-width:100%;height:auto;font-size:12px}} circle.pt{{cursor:pointer}} .hint{{color:#666;font-size:12px}}
#legend div{{margin:2px 0;font-size:13px}} #legend svg{{vertical-align:middle;margin-right:4px}} .empty{{color:#a00}}
#tip{{position:absolute;display:none;background:#fff;border:1px solid #999;padding:4px 8px;font-size:12px;pointer-events:none}}</style></head>
<body><h1>Pareto report: {html.escape(', '.join(series_label(r, many=True) for r in results))}</h1>
<p>ISL/OSL {r0['isl']}/{r0['osl']}, {gpus_text(r0['num_gpus'])}, {html.escape(engines_text(results))};
{sum(r['evaluated'] for r in results):,} deployments evaluated. Hover a point for its deployment; click a point or a table row for its per-operator breakdown.</p>
{_BAND_SENTENCE if any(p.get("intervals") for r in results for p in r["frontier"]) else ""}
{"".join(f'<p class="basis">{html.escape(basis_text(r))}</p>' for r in results if r["frontier"])}
{f'<p id="profile-note">{html.escape(profile_text(profile))}</p>' if profile else ""}
<div id="plot"></div><div id="legend"></div><div id="tip"></div>
<h2>Per-operator breakdown of the selected point</h2><div id="breakdown">Click a frontier point or a row below.</div>
<h2>Frontier</h2><p class="hint">Click a row for its per-operator breakdown.</p><div id="table"></div>
<script type="application/json" id="frontier-data">{safe}</script>
<script>{_REPORT_JS}</script></body></html>
"""
    Path(path).write_text(page)  # the caller's write_all makes it whole or nothing
