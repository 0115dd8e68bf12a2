"""benchmarks/perf_overview_batch.py: the perf overview's rows with trtllm-bench's limits, the KV cache and B*, the batch
at which the model's own times give the measured throughput (issue 39; docs/modelling-notes.md#perf-overview-batch)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from llm_codesign.measure.validate import read_rows

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("perf_overview_batch", ROOT / "benchmarks" / "perf_overview_batch.py")
pob = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pob)


def _row(model: str, gpu: str, table: str, isl: int, osl: int) -> dict:
    rows = [r for r in read_rows(pob.ROWS) if r["model"] == model and r["gpu"] == gpu and f"_{table}_" in r["source"]
            and (int(r["isl"]), int(r["osl"])) == (isl, osl)]
    assert len(rows) == 1
    return rows[0]


def test_replan_moves_only_v1_moe_rows_with_tp():
    v1 = _row("llama-4-maverick", "h100", "v1_0", 128, 4096)
    assert {k: pob.replan(v1, "adp-ep")[k] for k in ("tp", "attention_dp", "ep", "moe_tp")} == {"tp": "1", "attention_dp": "8", "ep": "8",
                                                                                                   "moe_tp": "1"}
    assert {k: pob.replan(v1, "tp-ep")[k] for k in ("tp", "attention_dp", "ep", "moe_tp")} == {"tp": "8", "attention_dp": "1", "ep": "8",
                                                                                                  "moe_tp": "1"}
    assert pob.replan(v1, "converted") is v1
    v20 = _row("llama-4-maverick", "h100", "v0_20", 128, 4096)  # v0.20's page runs no --ep, no attention DP
    assert pob.replan(v20, "adp-ep") is v20
    tp1 = _row("llama-4-scout", "b200", "v1_0", 128, 4096)
    assert pob.replan(tp1, "adp-ep") is tp1


def test_maverick_h100_runs_far_fewer_requests_than_its_cache_holds():
    d, = pob.diagnose([_row("llama-4-maverick", "h100", "v1_0", 128, 4096)])
    assert d["measured"] == 843.0
    # trtllm-bench's estimate by hand: 400.71e9 FP8 parameters = 373.2 GiB of 8 x 79.65 GiB, 264.0 GiB left x 0.95 over
    # 2 x 48 layers x 8 heads x 128 x 1 B x 4224 tokens = 0.3867 GiB a request: 648.6 -> 768; 2048 tokens (>= 128 + 768)
    assert (d["bench_batch"], d["bench_tokens"]) == (768, 2048)
    # a GPU holds 1 of the 8 KV heads at TP8: 48 x 2 x 128 x 1 B = 12,288 B a token, 4,224 tokens a request
    assert d["kv_at_b_star_gb"] == pytest.approx(d["b_star"] * 4224 * 12288 / 1e9)
    # the finding: the measurement needs under a fifth of the requests the model runs at the cache's limit
    assert d["predicted"] > d["measured"] and d["b_star"] < d["running"] / 5


def test_qwen3_h200_is_out_of_reach_at_any_batch():
    d, = pob.diagnose([_row("qwen3-235b-a22b", "h200", "v1_0", 128, 2048)])
    assert d["b_star"] == np.inf and d["unbounded_max"] < d["measured"] == 5352.62
