"""benchmarks/routing_alpha.py: the routing skew published per-expert load statistics imply (TensorRT-LLM tech
blog 4, Table 1: DeepSeek-R1 at EP32 on 32 GB200, no load balancer), through cost.ffns.routed_load."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("routing_alpha", ROOT / "benchmarks" / "routing_alpha.py")
ra = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ra)


def test_the_published_setting():
    # the published setting, 4,096 tokens (a rank's mean 1,024 routed tokens x 32 ranks / top-8) on 256 experts:
    # 128 per expert on average. At alpha 0.5 (q = 1 - alpha) the law's draws on [1, 0.8 x 4096 = 3276.8] have mean
    # q/(q+1) (b^1.5 - 1)/(b^0.5 - 1) = 1111.68, scaled by 32768 / (256 x 1111.68) = 0.11514; the busiest expert, the
    # median of the largest of 256 draws, ((b^0.5 - 1) 0.5^(1/256) + 1)^2 x 0.11514 = 375.29 tokens: 1.932 above the mean
    assert ra.excess(0.5, "expert") == pytest.approx(375.29 / 128 - 1, abs=1e-4)
    # uniform routing (alpha 0) puts every rank and expert at the mean
    assert ra.excess(0.0, "rank") == 0.0 and ra.excess(0.0, "expert") == 0.0


def test_alpha_from_published_imbalance():
    rows = {label: a for label, _, a in ra.table()}
    # both averaged statistics give the same skew: the busiest rank 1.564 above the mean -> 1.116, the busiest
    # expert 10.948 above -> 1.128 (aiconfigurator assumes 1.01 for DeepSeek-style MoE)
    assert rows["mean over layers, busiest rank"] == pytest.approx(1.116, abs=0.002)
    assert rows["mean over layers, busiest expert"] == pytest.approx(1.128, abs=0.002)
    # the layers' spread: 0.459 (layer 5) -> 0.12, 2.461 (layer 58) -> 1.29
    assert rows["least skewed layer printed (5), busiest rank"] == pytest.approx(0.12, abs=0.01)
    assert rows["most skewed layer printed (58), busiest rank"] == pytest.approx(1.29, abs=0.01)
    # and the law meets each statistic at its alpha
    assert ra.excess(rows["mean over layers, busiest rank"], "rank") == pytest.approx(1.564, rel=1e-6)


def test_the_skew_per_deployment():
    rows = {(ep, t): (rank, active, uniform) for ep, t, rank, active, uniform in ra.deployments()}
    # at EP 1 no rank is busier than the mean at any step: the skew prices expert popularity alone
    assert [rows[1, t][0] for t in (64.0, 512.0, 4096.0)] == [1.0, 1.0, 1.0]
    # which reads fewer distinct experts at a decode batch: uniform 256 (1 - (1 - 8/256)^64) = 222.4
    assert rows[1, 64.0][2] == pytest.approx(222.4, abs=0.05) and rows[1, 64.0][1] == pytest.approx(177.7, abs=0.1)
    # under EP the busiest rank grows with the step's tokens: 2.52x the mean at the published EP32 setting (2.564 at 1.116)
    assert rows[8, 512.0][0] == pytest.approx(1.405, abs=0.001) and rows[32, 4096.0][0] == pytest.approx(2.519, abs=0.001)
