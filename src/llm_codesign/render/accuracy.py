"""A precision's accuracy (explore.accuracy_model.point_accuracy) as text, in one wording for the CLI's tables and lines
and the HTML report's paragraph (the page read "-0.1±0.1% (proxy) against bf16" where the terminal read "drop 0.1±0.1% (proxy)")."""
from __future__ import annotations

# a frontier point's accuracy where explore.accuracy_model finds no source (its note in `estimate`)
NO_ACCURACY = "no published score nor precision delta at this precision"


def drop_pct(value: float, sigma: float | None = None) -> str:
    """An accuracy change in percent, with its 1-sigma band where given, at the one rounding every command uses: two
    decimals, as estimate's drop and design's loss % print (compare and pareto read "0.1±0.1%" where estimate said
    "0.10% ± 0.05%")."""
    return f"{value:.2f}" + (f"±{sigma:.2f}%" if sigma is not None else "%")


def drop_text(acc: dict | None) -> str:
    """A frontier row's accuracy in a few characters: the drop against the model's best precision, with the proxy's
    sigma; 'best' where there is none, 'n/a' unknown (compare's word: "drop none" read as no drop). Unsigned: the column
    and the line beneath say "drop" ("drop -0.2%" would read as a gain)."""
    drop = (acc or {}).get("relative_drop_pct")
    if drop is None:
        return "n/a"
    sigma = acc.get("drop_uncertainty_pct") or 0.0
    if not drop and not sigma:
        return "best"
    if acc.get("drop_band"):  # a proxy band, no published pair: its 1-sigma range, not a centre read as measured (newc5 #6)
        return f"{max(drop - sigma, 0.0):.0f}% to {drop + sigma:.0f}%"
    return drop_pct(drop, sigma if acc.get("source") == "proxy" else None)


def accuracy_said(acc: dict | None) -> str:
    """A precision's accuracy in the drop column's one form and against what ("drop 0.10±0.05% against bf16 (proxy)", the
    published score then "drop 0.15% against bf16"; it read "-0.1±0.1%" a line below "drop 0.1±0.1%", and the line named no
    reference where every point shared one and the column's key was not printed); explore.accuracy_model's "none" (no
    source at all, not no drop) as n/a."""
    acc = acc or {}
    source, drop = acc.get("source", "none"), drop_text(acc)
    if source == "none":  # a re-quantisation nothing measures says which (explore.accuracy_model._requantised)
        return f"n/a: unmeasured, {acc['drop_unmeasured']}" if acc.get("drop_unmeasured") else f"n/a ({NO_ACCURACY})"
    ref = acc.get("reference_precision")
    said = "best precision" if drop == "best" else f"drop {drop}" + (f" against {ref}" if ref else "")
    if acc.get("drop_band"):  # no published pair behind it (post-training MXFP4): said as the band it is
        return f"{said} (proxy band, unmeasured)"
    return f"{acc['benchmark']} {acc['score']:g}, {said}" if source == "published" else f"{said} ({source})"
