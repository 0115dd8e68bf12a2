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
    """The runs the intervals come from and each reason they were widened, each said once."""
    said: list[str] = []
    for b in bands.values():
        for line in [f"from {b['source']}", *b["widened"]]:
            if line not in said:
                said.append(line)
    return [("interval basis" if x.startswith("from ") else "beyond the runs", x if x.startswith("from ") else f"[yellow]{x}[/yellow]")
            for x in said]
