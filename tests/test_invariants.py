"""Physical invariants of every answer (issue 20): what no deployment, model or workload may break,
and the impossible answers that broke them."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.aggregated import evaluate
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model


def test_attention_dp_with_fewer_requests_than_ranks_is_as_slow_as_one_full_rank():
    # DeepSeek-R1 on 8x B200, attention DP 8 + EP 8: one request reported TPOT 0.94 ms (the step
    # divided by ranks/requests) while the eight-request step, one per rank, took 10.4 ms
    m, g = get_model("deepseek-r1"), get_gpu("b200")
    cal = calibration_for(g)
    plan = Plan(tp=1, ep=8, moe_tp=1, adp=8)
    r = evaluate(m, g, cal, m.default_precision, plan, np.array([1, 4, 8, 9, 16]), 1024, 1024)
    tpot = r["tpot_s"]
    # 1, 4 and 8 requests: each rank runs one sequence (or a dummy), the same step
    assert tpot[0] == pytest.approx(tpot[2], rel=1e-9) and tpot[1] == pytest.approx(tpot[2], rel=1e-9)
    assert tpot[0] > 5e-3
    # 9 requests: the busiest rank holds 2, as slow as 16 requests (2 per rank)
    assert tpot[3] == pytest.approx(tpot[4], rel=1e-9)
    # throughput counts the requests served, not the busiest rank's count times the ranks
    out = r["output_tok_s_per_gpu"]
    assert out[0] * 8 == pytest.approx(out[2], rel=1e-9)
    assert out[3] * 16 == pytest.approx(out[4] * 9, rel=1e-9)
