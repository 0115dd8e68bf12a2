"""measure.serving_check: one serving validation for the CLI and the API (the runs priced, each with its 80% interval)."""
from __future__ import annotations

from pathlib import Path

import pytest

import llm_codesign
from llm_codesign.errors import InputError
from llm_codesign.measure.serving_check import validate_serving

DATA = Path(llm_codesign.__file__).parent / "data"
MI355X = str(DATA / "measurements" / "serving_inferencex_mi355x.csv")  # the package's copy, wherever pytest runs from


def test_each_priced_run_carries_its_interval_and_the_coverage_counts_them():
    rows, preds, rep = validate_serving(MI355X)
    # 326 runs, 69 of them speculative with no acceptance recorded: 257 priced (data/measurements/SOURCES.md)
    assert (len(rows), rep["modeled"], len(preds)) == (326, 257, 326)
    inside = 0
    for r, p in zip(rows, preds, strict=True):
        if "ttft_ms" not in p:
            continue
        lo, hi = p["predicted_ttft_ms_lo"], p["predicted_ttft_ms_hi"]
        assert 0 < lo < p["ttft_ms"] < hi
        inside += lo <= float(r["ttft_ms"]) <= hi
    # the report's coverage is the share of these very bounds holding the measured first token
    assert rep["interval_coverage"]["ttft_ms"]["n"] == 257 and rep["interval_coverage"]["ttft_ms"]["inside80"] == inside


def test_a_file_with_no_run_it_can_price_is_refused_in_one_line(tmp_path):
    p = tmp_path / "none.csv"
    with open(MI355X) as f:
        head = f.readline()
        spec = next(line for line in f if ",mtp," in line.lower())  # a speculative run with no acceptance
    p.write_text(head + spec)
    with pytest.raises(InputError, match=r"^serving: '.*none.csv' is not valid; a file with at least one row the model can price"):
        validate_serving(str(p))
