"""benchmarks/perf_overview_plans.py: which plan the perf overview's v1.0 MoE rows ran, read from the H100 / H200 ratio
of one setting, where a level error common to both GPUs cancels (issue 39; docs/modelling-notes.md#perf-overview-plans)."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports perf_overview_batch beside it
spec = importlib.util.spec_from_file_location("perf_overview_plans", ROOT / "benchmarks" / "perf_overview_plans.py")
pop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pop)


def _r(model, gpu, isl, osl):
    return {"model": model, "gpu": gpu, "isl": str(isl), "osl": str(osl)}


def test_gpu_ratio_pairs_a_setting_across_gpus_and_drops_the_unpaired():
    rows = [_r("m", "h100", 128, 4096), _r("m", "h200", 128, 4096), _r("m", "h200", 128, 128), _r("n", "h100", 128, 4096)]
    # by hand: 843 / 3077 (Maverick's v1.0 measurements at 128/4096); 128/128 has no H100 row, n no H200 row
    assert pop.gpu_ratio(rows, [843.0, 3077.0, 7999.0, 1.0]) == {("m", 128, 4096): pytest.approx(0.27397, abs=1e-5)}
    assert pop.gpu_ratio(rows, [843.0, 3077.0, 7999.0, 1.0], num="h200", den="h100") == {("m", 128, 4096): pytest.approx(3.65006, abs=1e-5)}


def test_gpu_ratio_on_the_shipped_rows():
    rows = [r for r in pop.read_rows(pop.ROWS) if "_v1_0_" in r["source"] and r["model"] == "llama-4-maverick"]
    got = pop.gpu_ratio(rows, [float(r["output_tok_s_per_gpu"]) for r in rows])
    # H100 rows exist for 7 of the 10 lengths (128/128, 2048/128, 20000/2000 have none); 843.00 / 3077.00 from the CSV
    assert len(got) == 7 and got[("llama-4-maverick", 128, 4096)] == pytest.approx(843.0 / 3077.0)
