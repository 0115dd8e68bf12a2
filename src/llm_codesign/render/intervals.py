"""A prediction's intervals (measure.intervals.band) as text: the CLI's rows and lines."""
from __future__ import annotations

UNITS = {"ttft_ms": " ms", "tpot_ms": " ms", "tok_s_per_user": "", "output_tok_s_per_gpu": ""}
# why a centre is shown: the bounds sit about the runs' median shift, not the prediction ("signed where biased")
CENTRE = ("the intervals are centred on the prediction times the median measured / predicted of the runs they come from, "
          "which can put the prediction itself outside them")


def _fmt(metric: str):
    return (lambda x: f"{x:.2f}") if metric == "tpot_ms" else (lambda x: f"{x:.1f}" if x < 100 else f"{x:.0f}")


def off_centre(b: dict, value: float) -> bool:
    """Whether a prediction lies outside its own 80% interval (measure.intervals.band), so that its centre must be shown."""
    return not b["lo80"] <= value <= b["hi80"]


def interval_text(b: dict, metric: str, value: float | None = None) -> str:
    """'80%: 95-160 ms, 95%: 80-210 ms': a metric's intervals (measure.intervals.band) at a precision that reads;
    with ', centred on 120 ms' where the prediction `value` lies outside the 80% one."""
    f = _fmt(metric)
    centre = f", centred on {f(b['centre'])}{UNITS[metric]}" if value is not None and off_centre(b, value) else ""
    return f"80%: {f(b['lo80'])}-{f(b['hi80'])}{UNITS[metric]}, 95%: {f(b['lo95'])}-{f(b['hi95'])}{UNITS[metric]}{centre}"


def short(result: dict, metric: str) -> str:
    """' (80%: 95-160)' after a metric's value in a one-line summary, where the result carries its intervals."""
    b = (result.get("intervals") or {}).get(metric)
    f = _fmt(metric)
    return f" (80%: {f(b['lo80'])}-{f(b['hi80'])})" if b else ""


def inline(result: dict, metric: str) -> str:
    """'; 80%: 95-160 ms, 95%: 80-210 ms' after a metric's value, where the result carries its intervals."""
    b = (result.get("intervals") or {}).get(metric)
    return f"; {interval_text(b, metric, result[metric])}" if b else ""


def basis_rows(bands: dict, values: dict | None = None) -> list[tuple[str, str]]:
    """The runs the intervals come from (named per metric where the metrics' differ), why a centre is shown
    where a prediction in `values` ({metric: value}) lies outside its 80% interval, and each reason they
    were widened, each said once."""
    from llm_codesign.measure.intervals import LABELS

    sources: dict[str, list[str]] = {}
    reasons: list[str] = []
    for m, b in bands.items():
        sources.setdefault(f"from {b['source']}", []).append(LABELS[m])
        reasons += [x for x in b["widened"] if x not in reasons]
    one = len(sources) == 1
    centred = any(m in (values or {}) and off_centre(b, values[m]) for m, b in bands.items())
    return ([("interval basis" if one else f"basis: {', '.join(ms)}", src) for src, ms in sources.items()]
            + ([("centred on", CENTRE)] if centred else [])
            + [("beyond the runs", f"[yellow]{x}[/yellow]") for x in reasons])


def merged(reasons: list) -> list:
    """`reasons` (measure.intervals.Widening) with those differing only in the point's own quantity said once, over the
    range of it the points span ("concurrency 1,184-3,696 above SGLang's largest measured 512 ..."): a frontier's points
    past an engine's measured range each named theirs, the same line twenty times over. Merged by the reasons' fields
    (every caller's frontier holds Widening objects: Frontier.banded, before any JSON)."""
    from dataclasses import replace

    groups: dict[object, list] = {}
    for w in reasons:
        groups.setdefault((w.kind, w.quantity, w.what, w.factors, w.levels), []).append(w)
    return [ws[0] if ws[0].quantity is None else replace(ws[0], span=(min(w.span[0] for w in ws), max(w.span[1] for w in ws)))
            for ws in groups.values()]


def frontier_reasons(frontier: list[dict]) -> list[str]:
    """Every reason a frontier's points' intervals were widened, each said once (merged)."""
    return merged(list(dict.fromkeys(x for p in frontier for b in (p.get("intervals") or {}).values() for x in b["widened"])))
