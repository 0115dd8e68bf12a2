"""benchmarks/perf_overview_attrib.py: the perf overview's Hopper MoE errors split over the parts of the decode step
(issue 39; docs/modelling-notes.md#moeh100-attribution)."""
import importlib.util
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports perf_overview_batch beside it
spec = importlib.util.spec_from_file_location("perf_overview_attrib", ROOT / "benchmarks" / "perf_overview_attrib.py")
pat = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pat)


def test_need_by_hand():
    # Maverick H100 v1.0 128/2048 as converted: predicted 3,019, measured 1,354 tok/s/GPU, a 44.5 ms step of which the
    # experts are 18.5 ms. The step must reach 44.5 x 3,019 / 1,354 = 99.22 ms, i.e. 54.72 ms more, all in the experts:
    # (18.5 + 54.72) / 18.5 = 3.958
    assert pat.need(3019.0, 1354.0, 44.5, 18.5) == pytest.approx(1.0 + 44.5 * (3019.0 / 1354.0 - 1.0) / 18.5, rel=1e-12)
    assert pat.need(3019.0, 1354.0, 44.5, 18.5) == pytest.approx(3.958, abs=1e-3)
    # a slow row (predicted 1,022, measured 1,862; 52.0 ms step, 13.1 ms of attention): 52 x (1,022 / 1,862 - 1) = -23.46 ms,
    # more than the part holds: 1 - 23.46 / 13.1 = -0.79 (no factor of that part alone can do it)
    assert pat.need(1022.0, 1862.0, 52.0, 13.1) == pytest.approx(-0.791, abs=1e-3)
    assert pat.need(1.0, 1.0, 30.0, 5.0) == 1.0      # a row the model gets right needs nothing
    assert math.isinf(pat.need(2.0, 1.0, 30.0, 0.0))  # a part the step does not have cannot carry the error


@pytest.mark.parametrize(("kind", "role", "part"), [
    ("attention", "core_decode", "attention"), ("comm", "all_reduce", "comm"), ("gemm", "experts_gate_up", "experts"),
    ("gemm", "experts_down", "experts"), ("gemm", "shared_gate_up", "gemm"), ("gemm", "qkv", "gemm"),
    ("elementwise", "topk", "rest"), ("fitted", "per_sequence", "rest")])
def test_part_of(kind, role, part):
    assert pat.part_of(SimpleNamespace(kind=kind, role=role)) == part


def test_summary_by_hand():
    rows = [{"gpu": "h100", "model": "m", "output_tok_s_per_gpu": "1000"}, {"gpu": "h100", "model": "m", "output_tok_s_per_gpu": "2000"},
            {"gpu": "h100", "model": "m", "output_tok_s_per_gpu": "500"}, {"gpu": "h200", "model": "m", "output_tok_s_per_gpu": "400"}]
    preds = [{"output_tok_s_per_gpu": 1300.0}, {"output_tok_s_per_gpu": 1800.0}, {}, {"output_tok_s_per_gpu": 300.0}]
    # by hand: 1300 / 1000 = +30 %, 1800 / 2000 = -10 %, the third unpriced: median |e| (30 + 10) / 2 = 20, signed (30 - 10) / 2 = +10;
    # H200: 300 / 400 = -25 %
    got = pat.summary(rows, preds)
    assert got[("h100", "m")] == pytest.approx((2, 20.0, 10.0))
    assert got[("h200", "m")] == pytest.approx((1, 25.0, -25.0))


def test_variants_read_the_unsettled_columns():
    names = [v[0] for v in pat.VARIANTS]
    assert names[0] == "as priced" and pat.VARIANTS[0][1] == {} and not pat.VARIANTS[0][2]
    assert sum(v[2] for v in pat.VARIANTS) == 1  # one reading on the masked MHA kernel
    assert pat.VARIANTS[3][1]["qwen3-235b-a22b"] == {"weight_dtype": "fp8_block", "kv_dtype": "bf16"}
