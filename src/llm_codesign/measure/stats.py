"""Error statistics over predictions and the concurrency bands that serving errors are reported and
fitted by (shared by validate, calibrate and the expected-error table)."""
from __future__ import annotations

import numpy as np

# the polish weighs three concurrency bands equally (1-4 requests: the interactive end; 5-32; more, and
# offline runs), each by its own median: one median over all rows let the search trade the interactive
# end, a sixth of the sample, for the bulk (SGLang's first tokens 38% late at 1-4 requests, TTFT p90 70%)
CONCURRENCY_BANDS = (4.5, 32.5)
BAND_NAMES = ("1-4", "5-32", "33+")
MIN_BAND_ROWS = 20  # a band with fewer rows joins its neighbour: a median of a handful is noise


def _band(row: dict) -> int:
    """Index into BAND_NAMES of a row's concurrency; offline rows (no concurrency) count with the highest."""
    return int(np.digitize(float((row.get("concurrency") or "").strip() or "inf"), CONCURRENCY_BANDS))


def polish_bands(rows: list[dict]) -> np.ndarray:
    """Band index per row for the polish (_band), a band of fewer than MIN_BAND_ROWS rows merged into
    its more populous neighbour."""
    band = np.array([_band(r) for r in rows], dtype=int)
    while len(np.unique(band)) > 1:
        labels, counts = np.unique(band, return_counts=True)
        if counts.min() >= MIN_BAND_ROWS:
            break
        i = int(np.argmin(counts))
        near = [j for j in (i - 1, i + 1) if 0 <= j < len(labels)]
        band[band == labels[i]] = labels[max(near, key=lambda j: counts[j])]
    return band


def concurrency_band(row: dict) -> str:
    """The concurrency band of a serving row, as the polish weighs it ("offline" rows count with 33+)."""
    return BAND_NAMES[_band(row)] if (row.get("concurrency") or "").strip() else "offline"


def error_stats(pred, y) -> dict:
    ok = np.isfinite(pred)
    if not ok.any():
        return {"median_ape": None, "p90_ape": None, "signed_median_pe": None, "n": 0}
    pe = (pred[ok] / y[ok] - 1) * 100
    return {"median_ape": float(np.median(np.abs(pe))), "p90_ape": float(np.percentile(np.abs(pe), 90)),
            "signed_median_pe": float(np.median(pe)), "n": int(ok.sum())}
