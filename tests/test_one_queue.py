"""The per-request queue estimate and disagg share (serve.aggregated.serial_front): its golden values by hand, the
request's view of a disaggregated burst at its prefill rank (serve.disagg.burst_at_rank), and the two layers pricing the
same front-end question alike (docs/modelling-notes.md#disaggU-one-queue)."""
import numpy as np
import pytest
from conftest import disagg_pair

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.aggregated import Serving, evaluate, serial_front
from llm_codesign.serve.disagg import burst_at_rank, evaluate_disagg
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model

COST = 0.0248903  # SGLang's fitted ttft_overhead_s (fitted.toml [default.ttft_overhead_s])


def test_serial_front_golden_values():
    # served one at a time the k-th of q waits k x cost: (q + 1) / 2 x cost on average
    assert serial_front(COST, 1.0) == pytest.approx(COST, rel=1e-12)  # (1 + 1) / 2 = 1
    assert serial_front(COST, 4.0) == pytest.approx(0.06222575, rel=1e-12)  # (4 + 1) / 2 = 2.5; 2.5 x 24.8903 ms
    assert serial_front(COST, 64.0) == pytest.approx(0.80893475, rel=1e-12)  # (64 + 1) / 2 = 32.5; 32.5 x 24.8903 ms
    # under one request a rank the request is still there itself, nobody ahead: its own cost once, never less
    for q in (0.0, 0.125, 0.5, 0.999):
        assert serial_front(COST, q) == pytest.approx(COST, rel=1e-12)
    # elementwise over arrays, as evaluate broadcasts: 1, 1, 2.5, 32.5 costs
    got = serial_front(np.array([COST]), np.array([0.5, 1.0, 4.0, 64.0]))
    assert got == pytest.approx(COST * np.array([1.0, 1.0, 2.5, 32.5]), rel=1e-12)


def test_burst_at_rank_by_routing():
    # balanced (round robin, TensorRT-LLM's balancing): N / adp, the rank's load; 4 on 8 ranks: 0.5, each alone
    assert burst_at_rank(4.0, 8.0, 0.0) == pytest.approx(0.5)
    assert serial_front(COST, burst_at_rank(4.0, 8.0, 0.0)) == pytest.approx(COST)
    assert burst_at_rank(64.0, 8.0, 0.0) == pytest.approx(8.0)  # 4.5 costs
    # random (SGLang's bootstrap_room % dp_size): 1 + (N - 1) / adp; 4 on 8: 1 + 3 / 8 = 1.375 -> 1.1875 costs = 29.5572 ms
    assert burst_at_rank(4.0, 8.0, 1.0) == pytest.approx(1.375)
    assert serial_front(COST, burst_at_rank(4.0, 8.0, 1.0)) == pytest.approx(0.029557231, rel=1e-7)
    # 64 on 8: 1 + 63 / 8 = 8.875 -> 4.9375 costs = 122.8959 ms
    assert serial_front(COST, burst_at_rank(64.0, 8.0, 1.0)) == pytest.approx(0.122895856, rel=1e-7)
    # one rank: both routings alike, N itself; one request: 1 either way
    assert burst_at_rank(64.0, 1.0, 1.0) == burst_at_rank(64.0, 1.0, 0.0) == 64.0
    assert burst_at_rank(1.0, 8.0, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize("C, plan", [(64, Plan(tp=8, ep=8, moe_tp=1)), (4, Plan(adp=8, ep=8, moe_tp=1))])
def test_disagg_and_aggregated_price_the_same_front_end_alike(C, plan):
    # SGLang's DeepSeek-R1 on 8 B200s, a burst of C: aggregated (the rank's cohort) and a disaggregated prefill instance
    # of the same plan, balanced, one instance, each rank receiving the same requests, pay the same front end:
    # one rank and 64: 32.5 x 24.8903 = 808.93475 ms; 8 ranks and 4 (at most one a rank): 1 x 24.8903 ms
    g, m = get_gpu("b200"), get_model("deepseek-r1")
    cal, prec = calibration_for(g), m.default_precision
    agg = evaluate(m, Serving(gpu=g, prec=prec, plan=plan, engine=get_engine("sglang")), cal=cal, concurrency=np.array([C]),
                   isl=1024, osl=64, arrival="burst", with_ops=True)
    dis = evaluate_disagg(m, *disagg_pair(g, prec, plan, plan, backend="sglang"), calibration=cal, prefill_instances=1,
                          decode_instances=1, concurrency=np.array([C]), isl=1024, osl=64, arrival="burst", prefill_routing="balanced")
    want = COST * (65.0 / 2.0 if C == 64 else 1.0)
    assert float(np.ravel(agg["time_parts"]["front_end"])[0]) == pytest.approx(want, rel=1e-9)
    assert float(np.ravel(dis["front_end_s"])[0]) == pytest.approx(want, rel=1e-9)


def test_sglang_random_routing_queues_a_sub_one_burst():
    # SGLang's own routing (random): 4 requests on 8 prefill ranks, each other request on the same rank with chance 1/8:
    # 1.375 requests seen, 1.1875 x 24.8903 = 29.5572 ms (main clamped the rank's 0.5 to 1: 24.8903 ms)
    g, m = get_gpu("b200"), get_model("deepseek-r1")
    plan = Plan(adp=8, ep=8, moe_tp=1)
    dis = evaluate_disagg(m, *disagg_pair(g, m.default_precision, plan, plan, backend="sglang"), calibration=calibration_for(g),
                          prefill_instances=1, decode_instances=1, concurrency=np.array([4]), isl=1024, osl=64, arrival="burst")
    assert float(np.ravel(dis["front_end_s"])[0]) == pytest.approx(1.1875 * COST, rel=1e-9)
