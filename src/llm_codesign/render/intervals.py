"""A prediction's intervals (measure.intervals.band) as text: the CLI's rows and lines."""
from __future__ import annotations

UNITS = {"ttft_ms": " ms", "tpot_ms": " ms", "tok_s_per_user": "", "output_tok_s_per_gpu": ""}


def interval_text(b: dict, metric: str) -> str:
    """'80%: 95-160 ms, 95%: 80-210 ms': a metric's intervals (measure.intervals.band) at a precision that reads."""
    f = (lambda x: f"{x:.2f}") if metric == "tpot_ms" else (lambda x: f"{x:.1f}" if x < 100 else f"{x:.0f}")
    return f"80%: {f(b['lo80'])}-{f(b['hi80'])}{UNITS[metric]}, 95%: {f(b['lo95'])}-{f(b['hi95'])}{UNITS[metric]}"


def inline(result: dict, metric: str) -> str:
    """'; 80%: 95-160 ms, 95%: 80-210 ms' after a metric's value, where the result carries its intervals."""
    b = (result.get("intervals") or {}).get(metric)
    return f"; {interval_text(b, metric)}" if b else ""


def basis_rows(bands: dict) -> list[tuple[str, str]]:
    """The runs the intervals come from (named per metric where the metrics' differ) and each reason
    they were widened, each said once."""
    from llm_codesign.measure.intervals import LABELS

    sources: dict[str, list[str]] = {}
    reasons: list[str] = []
    for m, b in bands.items():
        sources.setdefault(f"from {b['source']}", []).append(LABELS[m])
        reasons += [x for x in b["widened"] if x not in reasons]
    one = len(sources) == 1
    return ([("interval basis" if one else f"basis: {', '.join(ms)}", src) for src, ms in sources.items()]
            + [("beyond the runs", f"[yellow]{x}[/yellow]") for x in reasons])
