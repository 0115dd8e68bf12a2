"""measure/stats.py: error statistics and the concurrency bands."""
import numpy as np
import pytest

from llm_codesign.measure.stats import concurrency_band, error_stats, polish_bands


def test_error_stats_hand_derived():
    pred, y = np.array([110.0, 90.0, 150.0, np.nan]), np.array([100.0, 100.0, 100.0, 100.0])
    s = error_stats(pred, y)  # errors +10%, -10%, +50%; the NaN prediction is not counted
    assert s["n"] == 3 and s["median_ape"] == pytest.approx(10.0) and s["signed_median_pe"] == pytest.approx(10.0)
    assert s["p90_ape"] == pytest.approx(42.0)  # numpy's linear percentile of 10, 10, 50
    assert error_stats(np.array([np.nan]), np.array([1.0]))["n"] == 0


def test_bands():
    assert [concurrency_band({"concurrency": c}) for c in ("1", "4", "5", "32", "33", "")] == ["1-4", "1-4", "5-32", "5-32", "33+", "offline"]
    rows = [{"concurrency": "1"}] * 3 + [{"concurrency": "8"}] * 30 + [{"concurrency": "64"}] * 30
    b = polish_bands(rows)
    assert len(np.unique(b)) == 2 and b[0] == b[3]  # a band of 3 rows joins its neighbour


def test_concurrency_band_edges():
    from llm_codesign.measure.stats import concurrency_band

    got = [concurrency_band({"concurrency": c}) for c in ("1", "4", "5", "32", "33", "4096", "", " ")]
    assert got == ["1-4", "1-4", "5-32", "5-32", "33+", "33+", "offline", "offline"]


def test_polish_bands_merge_thin_bands():
    from llm_codesign.measure.stats import polish_bands

    rows = lambda *cs: [{"concurrency": c} for c in cs]  # noqa: E731
    # 25 rows at 1-4, 30 at 5-32, 22 at 33+ or offline: three bands
    assert list(np.bincount(polish_bands(rows(*["2"] * 25, *["16"] * 30, *["64"] * 12, *[""] * 10)))) == [25, 30, 22]
    # 5 rows at 1-4 join 5-32; then 19 at 33+ join them too: one band
    assert set(polish_bands(rows(*["4"] * 5, *["8"] * 30, *["33"] * 19))) == {1}
    # a thin middle band joins the more populous neighbour
    b = polish_bands(rows(*["1"] * 40, *["10"] * 3, *["100"] * 25))
    assert list(np.bincount(b, minlength=3)) == [43, 0, 25]
