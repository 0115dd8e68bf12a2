"""`design --report`: a self-contained HTML page an architect can forward. The reference (the baseline, or the
published model design compared against) and the top designs side by side (explore.design_report.side_by_side):
their frontiers on one log-log plot with the 80% bands and each shape's best deployment at the SLO ringed, a table
of the three dimensions (speed at the SLO, quality with its band, trust: envelope and lint), what binds the winner,
and every lint finding with its predicted cost. Tables are built here with every value escaped; the plot is the
pareto report's script (render.report._PLOT_JS)."""
from __future__ import annotations

import html
import json
from pathlib import Path

from llm_codesign.explore.lint import COST_KEY, COST_MEASURE, OBJECTIVE_KEY
from llm_codesign.render.design_lines import bind_text, ffn_pass_line, graphs_said, params_line, quality_rule_line, resolved_line
from llm_codesign.render.intervals import UNINFORMATIVE_TEXT, span_text
from llm_codesign.render.plot import data_limits, gpus_text
from llm_codesign.render.report import _PLOT_JS, BAND_TEXT

_METRIC = {"tok_s_per_user": "tok/s/user", "output_tok_s_per_gpu": "tok/s/GPU", "ttft_ms": "TTFT ms", "tpot_ms": "TPOT ms"}
_FLOOR = {"min_tps_user": ("x", "tok/s/user"), "min_tps_gpu": ("y", "tok/s/GPU")}

# the design page's hover lines and click: a frontier point's deployment, metrics and intervals (no precision or
# accuracy: every shape runs at the design's one precision, and its quality is the table's)
_DESIGN_JS = r"""
function describe(p) {
  const d = p.deployment;
  return [`${d.plan} x${d.replicas}, batch ${d.concurrency_per_instance}`,
          `${p.tok_s_per_user.toFixed(1)} tok/s/user, ${p.output_tok_s_per_gpu.toFixed(0)} tok/s/GPU`,
          `TTFT ${p.ttft_ms.toFixed(0)} ms, TPOT ${p.tpot_ms.toFixed(2)} ms`, ...intervals(p)];
}
function show(i, j) {
  const r = D.results[i], p = r.frontier[j];
  if (chosen) chosen.setAttribute('r', 4);
  chosen = document.querySelector(`circle.pt[data-i="${i}"][data-j="${j}"]`);
  chosen.setAttribute('r', 7);
  document.getElementById('point').replaceChildren(E('p', `${r.label}, frontier point ${j + 1}: ` + describe(p).join('; ')));
}
"""


def _n(x: float) -> str:
    """A rate or a time at a precision that reads: 3,237 / 194.7 / 5.12."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f}%"


def plot_data(sbs: dict) -> dict:
    """What the page's script draws: each column's frontier (with its intervals) and its best deployment at the
    SLO, no cloud or bound (four shapes' clouds hide one another), the SLO's floor, and the axes' limits around
    the frontiers and those deployments (render.plot.data_limits)."""
    results = []
    for c in sbs["columns"]:
        at = c["at_slo"]
        results.append({"model": c["name"], "label": _label(c), "frontier": c["frontier"], "evaluated": c["evaluated"], "bound": None,
                        "empty": "" if c["frontier"] else "no deployment fits",
                        "at": {k: at[k] for k in ("tok_s_per_user", "output_tok_s_per_gpu")} if at else None,
                        # the limits take in the ringed deployments too (below the frontier where the floor binds)
                        "cloud": {k: [at[k]] if at else [] for k in ("tok_s_per_user", "output_tok_s_per_gpu")}})
    (x0, x1), (y0, y1) = data_limits(results)
    (cons, value), = sbs["constraint"].items()
    axis, unit = _FLOOR[cons]
    for r in results:
        r["cloud"] = {"tok_s_per_user": [], "output_tok_s_per_gpu": []}
    return {"results": results, "limits": {"x": [x0, x1], "y": [y0, y1]},
            "floor": {"axis": axis, "value": value, "label": f"the SLO's floor: {value:g} {unit}"} if value > 0 else None}


def _label(c: dict) -> str:
    return c["name"] if c["role"] == "design" else f"{c['name']} ({c['role']})"


def _shape_rows(cols: list[dict]) -> list[tuple[str, list[str]]]:
    keys = [("layers", "layers"), ("hidden", "hidden size"), ("heads", "query heads"), ("kv_heads", "KV heads"), ("head_dim", "head size"),
            ("q_ratio", "query width / hidden"),
            ("inter", "FFN width"), ("experts", "experts"), ("top_k", "active experts (top-k)"), ("expert_inter", "expert width"),
            ("shared_inter", "shared expert width"), ("vocab", "vocabulary")]
    # the query width only where a column's is not 1 (a Llama search's report keeps its rows)
    rows = [(label, [f"{c['shape'][k]:,}" if k in c["shape"] else "-" for c in cols]) for k, label in keys
            if any(k in c["shape"] for c in cols) and (k != "q_ratio" or any(c["shape"].get(k, 1) != 1 for c in cols))]
    return rows + [("total parameters", [f"{c['total_params'] / 1e9:.1f}B" for c in cols]),
                   ("active parameters", [f"{c['active_params'] / 1e9:.1f}B" for c in cols])]


def _speed_rows(cols: list[dict], objective: str) -> list[tuple[str, list[str]]]:
    def at(c, k, band=False):
        a = c["at_slo"]
        if not a:
            return "none meets the SLO"
        b, own = a["intervals"].get(k) if band else None, a["intervals"].get(k) or {}
        # a value whose 95% interval spans more than x20 said so, as estimate says it (render.intervals)
        lost = UNINFORMATIVE_TEXT.format(span=span_text(own["span95"])) if own.get("predictable") is False else ""
        return _n(a[k]) + (f" (80%: {_n(b['lo80'])}-{_n(b['hi80'])})" if b else "") + lost

    return [(f"{_METRIC[objective]} at the SLO (the objective)", [at(c, objective, band=True) for c in cols]),
            ("gain over the reference (its own 80% band)", [_gain(c) if c["role"] == "design" else "-" for c in cols]),
            *((_METRIC[k] + " there", [at(c, k) for c in cols]) for k in _METRIC if k != objective),
            ("best deployment", [f"{c['at_slo']['deployment']['plan']}, batch {c['at_slo']['deployment']['concurrency_per_instance']}"
                                 + (f", {cg}" if (cg := graphs_said(c["at_slo"]["deployment"])) else "") if c["at_slo"] else "-" for c in cols]),
            ("the next batch up the grid", [_next_batch(c["at_slo"]["deployment"]["batch"]) if c["at_slo"] else "-" for c in cols])]


def _gain(c: dict) -> str:
    """The gain with its own 80% band (explore.design_report.gain_band) and whether it is beyond model error."""
    g, b = _pct(c["gain_pct"]), c.get("gain_band")
    if not b or c["gain_pct"] is None:
        return g
    return (f"{g} ({b['gain_lo80']:+.1f}% to {b['gain_hi80']:+.1f}%: " + ("within" if b["within_model_error"] else "beyond")
            + " model error" + (", an upper bound: one engine and GPU family" if b["shared_error"] else "") + ")")


def _next_batch(b: dict) -> str:
    """What stops a deployment's batch one step up the search's grid (explore.design.batch_binds), as design's line says."""
    if b["binds"] == "grid":
        return "none: the search's largest batch"
    why = {"floor": "misses the SLO's floor", "memory": f"outgrows the KV cache or batch limit ({b['max_concurrency']:,} requests)",
           None: "meets the floor and fits but scores less"}[b["binds"]]
    return f"{b['next_batch']:,} {why}"


def _quality_rows(cols: list[dict]) -> list[tuple[str, list[str]]]:
    def delta(c):
        q = c["quality"]
        lo, hi = q["delta_band_pct"]
        if c["role"] != "design":
            return "0 (the reference)"
        if q.get("test_band_na"):  # no test band (explore.design.nil_band_why): never "± 0.00%", the model error beneath is its band
            return f"{q['delta_pct']:+.2f}% ± n/a ({q['test_band_na']})"
        return f"{q['delta_pct']:+.2f}% ± {q['sigma_delta_pct']:.2f}% ({lo:+.2f}% to {hi:+.2f}%)"

    def terms(c):
        q = c["quality"]
        if c["role"] != "design":
            return "-"
        out = ", ".join(f"{t['term']} {t['delta_pct']:+.2f}%" for t in q.get("terms", [])) or "no term differs"
        flat = "; ".join(f"{x['term']} {x['value']:.4g} vs {x['reference']:.4g} is flat to the proxy (" + (
            f"{x['flat_range'][0]:g}-{x['flat_range'][1]:g}" if x.get("flat_range") else "no term prices it") + "): it cannot tell them apart"
            for x in q.get("flat", []))
        return out + (f"; {flat}" if flat else "")

    def versus(c):
        v = c.get("versus_reference")
        return "-" if not v else (f"params {v['total_params_change_pct']:+.1f}%, active {v['active_params_change_pct']:+.1f}%, "
                                  f"KV {v['kv_bytes_per_token'] / 1024:,.0f} KiB/token ({v['kv_change_pct']:+.0f}%)")

    return [("proxy loss (nats)", [f"{c['quality']['loss']:.4f}" for c in cols]),
            ("loss against the reference ± sigma_delta (the equal-quality test's band)", [delta(c) for c in cols]),
            ("the loss delta by term (% of the reference's loss)", [terms(c) for c in cols]),
            ("model error of the delta (adds flat terms' spread, extrapolation)",
             [f"± {c['quality']['uncertainty_pct']:.2f}%" if c["role"] == "design" else "-" for c in cols]),
            ("against the reference", [versus(c) for c in cols]),
            # passing the test is not knowing: a row whose error is wider than its delta and band is said as such
            ("equal quality", ["no" if not c["quality"]["passes"] else "yes" if c["quality"].get("resolved", True)
                               else "not resolved (error wider than delta + band)" for c in cols]),
            ("terms beyond their studied range", [", ".join(c["quality"]["extrapolated"]) or "none" for c in cols])]


def _envelope_text(e: dict) -> str:
    if e["inside"]:
        c = e["closest"]
        out = (f"inside{' AT THE EDGE' if e.get('at_edge') else ''} (nearest bound {c['bound']}: {c['value']:.4g} against "
               f"{c['limit']:.4g}, headroom x{c['headroom']:.2f}" + (f"; the published {c['published']:.4g}, {', '.join(c['set_by'])}"
                                                                      if c.get("set_by") else "") + ")")
        # the set the bound is drawn from, counted, and a bundled model beyond it that is no row of it (newc9 #11)
        beyond = "; ".join(f"{v['bound']} {v['value']:.4g} beyond every model the envelope draws it from"
                           + (f" ({len(v['drawn_over'])})" if v.get("drawn_over") else "") + f": {v['published']:.4g} ({', '.join(v['set_by'])})"
                           + "".join(f"; bundled but not an envelope row: {b['name']} at {b['value']:.4g}" for b in v.get("bundled_beyond", ()))
                           for v in e.get("beyond_published", []))
        return out + (f"; inside only by the margin: {beyond}" if beyond else "")
    return "outside: " + "; ".join(f"{v['bound']} {v['value']:.4g} against {v['limit']:.4g} (x{v['by']:.2f})" for v in e["outside"])


def _trust_rows(cols: list[dict]) -> list[tuple[str, list[str]]]:
    def count(fs):
        return ", ".join(f"{sum(f['severity'] == s for f in fs)} {s}" for s in ("error", "warning", "info"))

    def worst(fs):
        f = max(fs, key=lambda f: f["cost_pct"], default=None)
        return f"{f['cost_pct']:.1f}% ({f['rule']} {f['rule_name']}: {COST_MEASURE[f['rule']]})" if f else "-"

    return [("published envelope at its scale", [_envelope_text(c["envelope"]) for c in cols]),
            ("lint findings", [count(c["lint"]) for c in cols]),
            ("largest predicted lint cost", [worst(c["lint"]) for c in cols])]


def _table(tid: str, head: list[str], sections: list[tuple[str, list[tuple[str, list[str]]]]]) -> str:
    e = html.escape
    out = [f'<table id="{tid}"><thead><tr><th></th>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for title, rows in sections:
        out.append(f'<tr class="section"><th colspan="{len(head) + 1}">{e(title)}</th></tr>')
        out += [f"<tr><th>{e(label)}</th>" + "".join(f"<td>{e(v)}</td>" for v in vals) + "</tr>" for label, vals in rows]
    return "".join(out) + "</tbody></table>"


def _binds_html(sbs: dict) -> str:
    items = []
    for x in sbs["extended"]:
        items.append(f"grid extended: {x['axis']} to {x['to']} (one of the 10 best sat on its {x['side']} edge; {x['admitted']} shapes admitted)")
    items += [bind_text(x) for x in sbs["binds"]]
    body = "".join(f"<li>{html.escape(t)}</li>" for t in items) or "<li>nothing: the winner is interior to the grid and every neighbour was priced</li>"
    return f'<h2>What binds design 1</h2><ul id="binds">{body}</ul>'


def _lint_cost(f: dict) -> str:
    """A finding's cost % and, where R2 or R6 priced it in the regime's objective, the rate lost (the CLI's and page's)."""
    oc = f.get("objective_cost")
    return f"{f['cost_pct']:.1f}" + (f" (-{oc['lost']:,.1f} {oc['unit']})" if oc else "")


def _lint_html(cols: list[dict]) -> str:
    e = html.escape
    rows = "".join(f"<tr><td>{e(_label(c))}</td><td>{e(f['rule'])} {e(f['rule_name'])}</td><td>{e(f['severity'])}</td><td>{e(f['where'])}</td>"
                   f"<td>{e(_lint_cost(f))}</td><td>{e(f['message'])}</td><td>{e(f['fix'])}</td></tr>" for c in cols for f in c["lint"])
    return (f'<h2>Lint findings</h2><p class="hint">{e(COST_KEY)} {e(OBJECTIVE_KEY)}</p><table id="lint-findings"><thead><tr><th>shape</th>'
            '<th>rule</th><th>severity</th><th>where</th><th>cost %</th><th>finding</th><th>fix</th></tr></thead><tbody>'
            + (rows or '<tr><td colspan="7">no finding on any shape</td></tr>') + "</tbody></table>")


def _basis_html(cols: list[dict]) -> str:
    items = [f"{_label(c)}: from {c['at_slo']['interval_basis']['source']}"
             + "".join(f"; {w}" for w in c["at_slo"]["interval_basis"]["widened"]) for c in cols if c["at_slo"]]
    return '<ul id="basis" class="hint">' + "".join(f"<li>{html.escape(t)}</li>" for t in items) + "</ul>"


def _search_html(r: dict, objective: str) -> str:
    """design's lines on where its rows sit against the parameter budget, with design 1's gain at equal parameters, on
    what its FFN-ratio pass priced, on the --quality-sigmas values that admit the same shapes and on the rows whose quality
    the proxy resolves, as the CLI prints them beneath its table (render.design_lines); none where none is."""
    lines = [x for x in (params_line(r, _METRIC[objective]), ffn_pass_line(r.get("grid", {}).get("ffn_pass")),
                         quality_rule_line(r) if (r.get("screened") or {}).get("quality_limit") else None, resolved_line(r)) if x]
    return '<ul id="search" class="hint">' + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>" if lines else ""


def design_html(r: dict) -> str:
    """The page for a `design` result carrying its side_by_side record (design --json's)."""
    sbs, ref = r["side_by_side"], r["reference"]
    cols = sbs["columns"]
    e = html.escape
    (cons, value), = sbs["constraint"].items()
    isl, osl = sbs["isl_osl"]
    head = [_label(c) for c in cols]
    table = _table("side-by-side", head, [("Shape", _shape_rows(cols)), ("Speed at the SLO", _speed_rows(cols, sbs["objective"])),
                                          ("Quality", _quality_rows(cols)), ("Trust", _trust_rows(cols))])
    data = json.dumps(plot_data(sbs), allow_nan=False, separators=(",", ":"))
    safe = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")  # no markup can start inside the JSON
    title = f"Design report: {r['params'] / 1e9:,.4g}B parameters on {gpus_text(r['num_gpus'])} {r['gpu']}, {r['regime']} regime"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em;color:#222;max-width:1400px}} table{{border-collapse:collapse;font-size:12px;margin:0.5em 0}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}} tr.section th{{background:#eef2f7}}
#side-by-side td{{text-align:right}} #plot svg{{max-width:100%;height:auto;font-size:12px}} circle.pt{{cursor:pointer}}
.hint{{color:#666;font-size:12px}} #legend div{{margin:2px 0;font-size:13px}} #legend svg{{vertical-align:middle;margin-right:4px}}
.empty{{color:#a00}} #tip{{position:absolute;display:none;background:#fff;border:1px solid #999;padding:4px 8px;font-size:12px;pointer-events:none}}</style></head>
<body><h1>{e(title)}</h1>
<p id="summary">Objective: {e(_METRIC[sbs['objective']])} at each shape's best deployment with at least {value:g} {e(_FLOOR[cons][1])}
(ISL/OSL {isl}/{osl}, {e(sbs['precision'])}, {e(sbs['engine'])}). Reference: {e(ref['name'])} ({e(ref['basis'])}); equal quality:
{e(sbs['rule'])}. {r['candidates']:,} shapes searched, {r['evaluated']:,} deployments priced in {r['seconds']:.1f} s.</p>
{_search_html(r, sbs['objective'])}
<h2>Frontiers</h2><p class="hint">Rings: each shape's best deployment at the SLO. Hover a point for its deployment and intervals; click it to keep them below.</p>
<p id="band-note" class="hint">{e(BAND_TEXT)}</p>
<div id="plot"></div><div id="legend"></div><div id="tip"></div><div id="point"></div>
<h2>Side by side</h2>{table}
<p class="hint">Intervals: 80% (the range that held 80% of measured runs like it).</p>{_basis_html(cols)}
{_binds_html(sbs)}
{_lint_html(cols)}
<script type="application/json" id="frontier-data">{safe}</script>
<script>{_PLOT_JS}{_DESIGN_JS}</script></body></html>
"""


def write_design_html(r: dict, path: str | Path) -> None:
    Path(path).write_text(design_html(r))  # the caller's write_all makes it whole or nothing
