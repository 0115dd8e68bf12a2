"""design's summary lines, printed by the CLI (cli/design.py) and on design --report's page (render.design_report): what
the FFN-ratio pass priced and where the rows sit against the parameter budget, with design 1's gain at equal parameters.
No imports beyond the standard library: the CLI imports it at start-up."""
from __future__ import annotations


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
