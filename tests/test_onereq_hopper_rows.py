"""benchmarks/onereq_hopper_rows.py: the measured H100 row each op of the one-request DeepSeek-R1 step is read from
(issue 39 mechanism 4; docs/modelling-notes.md#onereq5-hopper-rows)."""
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("onereq_hopper_rows", ROOT / "benchmarks" / "onereq_hopper_rows.py")
ohr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ohr)


def _moe(rows):
    return {"moe": pd.DataFrame(rows, columns=["distribution", "num_tokens", "latency_ms"])}


def test_moe_row_two_equally_near_counts_take_their_log_log_midpoint():
    # the shipped TP 2 x EP 4 balanced rows are at 2 and 8 tokens (65.6 and 150.7 us); 4 tokens is as near both on a log
    # scale (ln 2 each), so the figure is their geometric mean: sqrt(65.6 x 150.7) = sqrt(9885.92) = 99.43 us
    t = _moe([("balanced", 2, 0.0656), ("balanced", 8, 0.1507), ("power_law_1.2", 4, 0.1136)])
    us, basis = ohr.moe_row(t, 4.0)
    assert us == pytest.approx(99.43, abs=0.01)
    assert "2/8 tokens" in basis
    # one token: the 2-token row is the nearest (ln 2 against ln 8), taken as it is
    assert ohr.moe_row(t, 1.0)[0] == pytest.approx(65.6)


def test_moe_row_skewed_distribution_only_where_timed_at_that_count():
    t = _moe([("balanced", 2, 0.0656), ("balanced", 8, 0.1507), ("power_law_1.2", 4, 0.1136)])
    assert ohr.moe_row(t, 4.0, "power_law_1.2")[0] == pytest.approx(113.6)
    # no power-law row at one token: the balanced 2-token row, not the power-law row at 4 tokens
    assert ohr.moe_row(t, 1.0, "power_law_1.2")[0] == pytest.approx(65.6)


def test_gemm_row_at_the_step_shape_is_the_row_itself():
    # a row at the step's own (n, k) moves by the model's ratio of the shape to itself: 1, so the figure is the row's
    g = pd.DataFrame([(3, 7168, 256, "fp8_block", 0.00498), (3, 4096, 256, "fp8_block", 0.0040), (3, 7168, 256, "bfloat16", 0.0033)],
                     columns=["m", "n", "k", "gemm_dtype", "latency_ms"])
    us, basis = ohr.gemm_row({"gemm": g}, "shared_down", 3.0)
    assert us == pytest.approx(4.98)
    assert "3x7168x256" in basis and "x shape 1.00" in basis


def test_nearest_is_on_a_log_scale():
    df = pd.DataFrame({"x": [1.0, 8.0, 16.0]})
    # 3 is nearer 1 than 8 in absolute terms (2 < 5) but nearer 8 on a log scale (ln 8/3 = 0.98 < ln 3 = 1.10)
    assert float(ohr._nearest(df, "x", 3.0).x) == 8.0
    assert np.isclose(float(ohr._nearest(df, "x", 2.0).x), 1.0)  # ln 2 = 0.69 < ln 4 = 1.39


def test_every_priced_op_has_a_family():
    assert ohr.family("experts_down") == "MoE op (CUTLASS, one row)"
    assert ohr.family("mla_bmm_quant") == "MLA absorbed BMMs + quantise"
    assert ohr.family("lm_head").startswith("BF16 GEMMs")
    assert ohr.family("latent_norms").startswith("no table")
