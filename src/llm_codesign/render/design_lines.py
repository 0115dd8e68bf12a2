"""design's summary lines, printed by the CLI (cli/design.py), on design --report's page (render.design_report) and on the
local page (POST /api/design's baseline_lines and versus_line): what the rows are measured against (the baseline's own row,
else the reference's), what the FFN-ratio pass priced, where the rows sit against the parameter budget, with design 1's
gain at equal parameters, and why design 1 differs from the baseline. No module-level imports beyond the standard
library: the CLI imports it at start-up."""
from __future__ import annotations

OBJECTIVE_SHORT = {"output_tok_s_per_gpu": "tok/s/GPU", "tok_s_per_user": "tok/s/user"}
_TERM_NAMES = {"params": "active params", "moe_rule": "total/active", "kv_sharing": "KV heads", "head_dim": "head size",
               "granularity": "expert granularity", "aspect": "aspect penalty", "mla": "MLA", "hybrid": "recurrent", "window": "window"}
_FLAT_NAMES = {"aspect": "aspect ratio (depth)", "head_dim": "head size", "q_width": "query width (heads x head size / hidden)"}


def flat_said(x: dict) -> str:
    """One axis the proxy is flat on (explore.design._quality_row's "flat"): where its term reads 0, or, for the query
    width, that no term prices it (proxy.toml [query_heads])."""
    if x["flat_range"] is None:
        return (f"{_FLAT_NAMES[x['term']]} {x['value']:.4g} vs {x['reference']:.4g} is not priced (KV sharing is measured at "
                "fixed query heads: read at the reference's; extrapolated)")
    return (f"{_FLAT_NAMES[x['term']]} {x['value']:.4g} vs {x['reference']:.4g} is invisible to the proxy "
            f"(flat on {x['flat_range'][0]:g}-{x['flat_range'][1]:g})")


def wins_by(d: dict, against: str, short: str) -> str:
    """One line: why design 1 differs from what it is measured against, in loss (the proxy's terms, largest first;
    the flat axes said as such, never as a measured 0), in parameters and KV bytes per token, and in speed with
    the gain's own 80% band."""
    q, v = d["quality"], d.get("versus_reference") or {}
    terms = ", ".join(f"{_TERM_NAMES.get(t['term'], t['term'])} {t['delta_pct']:+.2f}%" for t in q["terms"][:3]) or "no term differs"
    flat = "; ".join(flat_said(x) for x in q.get("flat", []))
    out = f"design 1 vs {against}: loss {q['delta_pct']:+.2f}% = {terms} of the loss" + (f" ({flat})" if flat else "")
    # the test's band and the model's error, said apart: sigma_delta is often a tenth of the error (explore.design._quality_row)
    band = (f"with no test band (sigma_delta 0: {q['test_band_na']})" if q.get("test_band_na")
            else f"at {q['k']:g} x sigma_delta ±{q['sigma_delta_pct']:.2f}% (the terms' band)")
    out += (f"; {'passes' if q['passes'] else 'fails'} {band}, "
            f"model error ±{q['uncertainty_pct']:.2f}%" + ("" if q.get("resolved", True) else " (quality not resolved)"))
    if v:
        out += (f"; params {v['total_params_change_pct']:+.1f}%, KV {v['kv_bytes_per_token'] / 1024:,.0f} KiB/token "
                f"({v['kv_change_pct']:+.0f}%)")
    if d.get("gain_pct") is not None:
        out += f"; {short} {d['gain_pct']:+.1f}%"
        if gb := d.get("gain_band"):
            out += (f" (80% {gb['gain_lo80']:+.1f} to {gb['gain_hi80']:+.1f}%" + (", an upper bound" if gb.get("shared_error") else "")
                    + ": " + ("within model error" if gb["within_model_error"] else "beyond model error") + ")")
    return out  # a row inside the envelope only by its margin is said once, in envelope_lines


def _params(n: float) -> str:
    return f"{n / 1e9:.3g}B" if n >= 1e9 else f"{n / 1e6:.3g}M"


def ffn_pass_line(p: dict | None) -> str | None:
    """What design's FFN-ratio pass priced (explore.design._ffn_pass): the envelope's window, the coarse ratios and the
    fine ones around the fastest shape then (of any quality, before the grid's extensions), with the shapes priced at each;
    and design 1's ratio, which need not be that shape's (resolved quality ranks first)."""
    if not p:
        return None
    ratios = lambda x: ", ".join(f"{v:g}" for v in x["ffn_ratio"]) or "none"  # noqa: E731
    return (f"FFN ratio: the envelope's window {p['window'][0]:g}-{p['window'][1]:g} priced every {p['step']:g} ({ratios(p['coarse'])}: "
            f"{p['coarse']['priced']} shapes), then the grid's step around the best ({ratios(p['fine'])}: {p['fine']['priced']}); "
            f"the fastest then {p['best']:g} (any quality)" + (f"; design 1's {p['design_1']:g}" if "design_1" in p else ""))


def params_line(r: dict, short: str) -> str | None:
    """One line: how far the rows sit below (or above) the budget (explore.design_report.budget), and design 1's gain
    at equal parameters (first order: weight streaming sets decode's speed, so a smaller model is faster by its size
    alone; the proxy loss already prices its quality)."""
    bu, ds = r.get("budget"), r["designs"]
    if not ds or not bu:
        return None
    who, (lo, hi), params = r["baseline"] or r["reference"], bu["rows"], bu["params"]
    out = (f"params: rows {_params(lo)}-{_params(hi)}, {100 * (lo / params - 1):+.1f} to {100 * (hi / params - 1):+.1f}% of the "
           f"{_params(params)} budget (±{100 * bu['tol']:g}%); {who['name']} {_params(who['total_params'])}")
    if (eq := ds[0].get("gain_equal_params_pct")) is not None:
        out += (f"; design 1 at equal params {short} {eq:+.1f}% (its {short} x {_params(ds[0]['total_params'])} / "
                f"{_params(who['total_params'])}, as if weights set the speed)")
    return out


def bind_text(x: dict) -> str:
    """One constraint that holds design 1 back (explore.design._binds), as design's line and the report say it: a grid
    edge it sits on, or its neighbour one step along an axis, from design 1's value ("head_dim 128 -> 64")."""
    if x["kind"] == "grid edge":
        return f"{x['axis']} {x['side']} {x['value']} is a real limit, {x['why']}" + (f" ({', '.join(x['bounds'])})" if x.get("bounds") else "")
    return f"{x['kind']}: {x['axis']} {x['from']} -> {x['to']} would gain {x['gain_pct']:+.1f}% but {x['why']}"


def graphs_said(dep: dict) -> str:
    """'graphs ≤241': the decode CUDA graphs a design row's deployment was priced with (its cuda_graph_max_bs, padded up
    to its batch a rank where the engine's default capture misses it: explore.design._dep), so that `estimate
    --cuda-graph-max-bs 241` prices the row again; "" where the engine's default captures it (None)."""
    n = dep.get("cuda_graph_max_bs")
    return "" if n is None else f"graphs ≤{n}"


# the table's and the page's words for graphs_said
GRAPHS_LEGEND = ("graphs ≤n: the decode CUDA graphs it was priced with, padded up to its batch a rank where the engine's "
                 "default capture misses it (estimate --cuda-graph-max-bs n prices it again; none shown: the default's)")


def graphs_line(r: dict) -> str | None:
    """GRAPHS_LEGEND where a row states its capture (the page's note beneath its table; the CLI's caption says it), else None."""
    return GRAPHS_LEGEND if any(graphs_said(d["deployment"]) for d in r["designs"]) else None


def objective_short(objective: str) -> str:
    """The objective as design's lines name it ("tok/s/GPU")."""
    return OBJECTIVE_SHORT.get(objective, objective)


def baseline_lines(r: dict) -> list[str]:
    """What design says above its table of what the rows are measured against (explore.design._result's baseline and
    reference): that no row beats it, where none does (with the baseline's traits no row can take, explore.design.grid_said),
    then the baseline's own row (its size, proxy loss and objective at its best deployment) and its MoE hint, else the
    reference's size and proxy loss. The CLI prints these lines; the page shows them from POST /api/design."""
    from llm_codesign.explore.design import grid_said  # explore.design's numpy: not at the CLI's start-up

    b, ref, short, out = r.get("baseline"), r["reference"], objective_short(r["objective"]), []
    if r["designs"] and not r.get("beats_reference", True):  # said first: the rows below are all slower
        best = max((d["gain_pct"] for d in r["designs"] if d["gain_pct"] is not None), default=None)
        out.append(f"no design beats {(b or ref)['name']} at equal quality proxy: the best is {best:+.1f}% {short} "
                   "(the rows below are the least slow)" if best is not None else f"no design beats {(b or ref)['name']}")
        if b and b.get("outside_grid"):
            out.append(grid_said(b["name"], b["outside_grid"]))
    if b:
        out.append(f"baseline {b['name']}: {b['total_params'] / 1e9:.1f}B params, quality proxy {b['quality_proxy']:.4f} nats/token, "
                   f"{short} {b['objective'] or 0:.1f} ({b['deployment']['plan']}, batch {b['deployment']['concurrency_per_instance']}"
                   + (f", {cg}" if (cg := graphs_said(b["deployment"])) else "") + ")")
        if b.get("hint"):  # a MoE baseline in a dense search (explore.design.moe_hint)
            out.append(b["hint"])
    else:
        out.append(f"reference {ref['name']} ({ref['basis']}): {ref['total_params'] / 1e9:.1f}B params, "
                   f"quality proxy {ref['quality_proxy']:.4f} nats/token")
    return out


def versus_line(r: dict) -> str | None:
    """wins_by for design 1 against the baseline, else the reference, as design prints it beneath its table; None
    without a row."""
    if not r["designs"]:
        return None
    return wins_by(r["designs"][0], (r.get("baseline") or r["reference"])["name"], objective_short(r["objective"]))


def shape_label(s: dict) -> str:
    """A shape as design's table names it: "h4096 L32 H32/8 ffn14336", a MoE's "... E128 k8 w768 +sh2048"."""
    # the query width where it is not hidden's (explore.design's q_ratio axis: qwen3-32b's H64 x 128 at 5120, "q1.6")
    q = s.get("q_ratio", 1)
    head = f"h{s['hidden']} L{s['layers']} H{s['heads']}/{s['kv_heads']} " + (f"q{q:.3g} " if abs(q - 1) > 1e-6 else "")
    if s.get("experts"):
        return head + f"E{s['experts']} k{s['top_k']} w{s['expert_inter']}" + (f" +sh{s['shared_inter']}" if s.get("shared_inter") else "")
    return head + f"ffn{s['inter']}"


def _rows(rows: list[int]) -> str:
    """1-based row numbers as runs: [1, 2, 3, 5] -> "1-3, 5"."""
    runs: list[list[int]] = []
    for n in rows:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{x[0]}-{x[-1]}" if len(x) > 1 else f"{x[0]}" for x in runs)


def quality_rule_line(r: dict) -> str:
    """The equal-quality rule beneath design's table, and the --quality-sigmas values that admit the same shapes
    (explore.design.quality_window): at 8B none of 0 to 1.12 moves the answer, and the line says why rather than leave
    a limit that seems not to apply (designG)."""
    out = f"equal quality: {r['reference']['rule']} (--quality-sigmas, --quality-tol)"
    w = (r.get("screened") or {}).get("quality_limit")
    if not w:
        return out
    who = (r.get("baseline") or r["reference"])["name"]
    # 1.121; 0; 2.001 beside a k of 2: as many decimals (3 to 6) as keep the window's two ends apart
    digits = next((n for n in range(3, 7) if w["to"] is None or f"{w['from']:.{n}f}" != f"{w['to']:.{n}f}"), 6)
    z = lambda x: f"{x:.{digits}f}".rstrip("0").rstrip(".")  # noqa: E731
    span = f"from {z(w['from'])} to {z(w['to'])}" if w["to"] is not None else f"from {z(w['from'])} up"
    where = "in budget and envelope" if (r.get("envelope") or {}).get("applied", True) else "in budget (--outside-envelope)"
    said = [f"{w['no_band']:,} differ from {who} only where the proxy states no uncertainty (no test band: {w['no_band_admitted']:,} "
            "pass, at a loss no worse than its, whatever the value)"] if w["no_band"] else []
    if w["next"]:  # a MoE search against qwen3-30b-a3b: every shape has a band
        which = f"of the {w['banded']:,} others" if w["no_band"] else "beyond it"
        said.append(f"the nearest {which}, {shape_label(w['next'])}, needs {z(w['next']['z'])}")
    return out + f"; --quality-sigmas {span} admits the same {w['admitted']:,} of the {w['shapes']:,} grid shapes {where}" + (
        ": " + ", and ".join(said) if said else "")


def resolved_line(r: dict) -> str | None:
    """One line beneath design's table where the proxy cannot resolve every priced shape's quality (explore.design._resolved):
    how many it resolves and which rows shown, the best of them (its row, or its shape where --rank-all shows it on none),
    and what the best unresolved gain means: a shape the proxy cannot tell from the reference, unproven until trained.
    None where every shape is resolved. The CLI prints it and the page shows it (POST /api/design's resolved_line)."""
    rs = r.get("resolved")
    if not rs or rs["shapes"] >= rs["of"]:
        return None
    who, short = (r.get("baseline") or r["reference"])["name"], objective_short(r["objective"])
    out = f"quality resolved (err ± <= |loss| + ±test) for {rs['shapes']:,} of {rs['of']:,} priced shapes"
    shown = rs.get("rows", [])
    if not rs["shapes"]:
        out += f": no gain above is at a quality the proxy can tell from {who}'s"
    elif not rs["beats_reference"]:
        out += f": none of them beats {who}, so no shape is faster at a quality the proxy can tell at this budget"
    elif (g := rs.get("best_resolved_gain_pct")) is not None:
        where = (f"row {rs['best_resolved_row']}" if rs.get("best_resolved_row")
                 else f"{shape_label(rs['best_resolved_shape'])}, on none of the rows above" + (": design 1 without --rank-all" if r.get("rank_all") else ""))
        out += (f" (rows {_rows(shown)})" if shown else "") + f": the best of them {g:+.1f}% {short}, {where}"
    if (u := rs.get("best_unresolved_gain_pct")) is not None:
        out += f"; the best shape whose quality it cannot resolve: {u:+.1f}% {short}"
        b = rs.get("best_resolved_gain_pct")
        if b is None or u > b:  # what a faster unresolved row means, said where it outruns every resolved one
            out += (f", at a quality the proxy cannot tell from {who}'s (its error wider than its loss and the test band together): "
                    "unproven until such a shape is trained and measured")
    return out
