"""benchmarks/one_request_step.py: the H200 one-request run's MTP iteration launch by launch (issue 39 item 4), and
the log-log reading of a collective table at a message size between its rows."""
import importlib.util
from pathlib import Path

import pytest

from llm_codesign import api
from llm_codesign.spec.plan import Workload

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("one_request_step", ROOT / "benchmarks" / "one_request_step.py")
ors = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ors)


def test_iteration_is_the_priced_step():
    # every launch the benchmark compares with a table, summed, is the step the model prices: the verify step (its
    # kernels, the host's step and its one sequence) and the three draft passes, i.e. TPOT x the accepted tokens
    its = ors.iteration("h200")
    m = api.get_model("deepseek-ai/DeepSeek-R1")
    dep = api.deployment(m, gpu="h200", num_gpus=8, tp=8, ep=4, moe_tp=2, kv_dtype="bf16", weight_dtype="fp8_block",
                         spec="mtp", draft_len=3, acceptance=2.82)
    est = api.estimate(m, dep, Workload(isl=1024, osl=2048, concurrency=1))
    assert sum(n * us for _, _, n, _, us in its) == pytest.approx(est.tpot_s * est.accepted_per_step * 1e6, rel=1e-9)
    launches = {(where, name): n for where, name, n, _, _ in its}
    # 61 MLA layers and 58 MoE layers in the verify step; the MTP block once in the first draft pass, twice at one token
    assert launches["verify", "layer0/attn/core_decode"] == 61 and launches["verify", "layer1/moe/experts_down"] == 58
    assert launches["draft 1", "layer0/attn/core_decode"] == 1 and launches["drafts 2-3", "mtp1/attn/core_decode"] == 2
    # the first draft pass samples one position: its LM head at one token, its eh_proj over the 4 verified ones
    tokens = {(where, name): t for where, name, _, t, _ in its}
    assert tokens["draft 1", "mtp1/lm_head"] == 1.0 and tokens["draft 1", "mtp4/mtp/eh_proj"] == 4.0


def test_loglog_between_rows():
    # rows at 4,096 and 16,384 elements taking 4 and 16 us lie on latency = size / 1024 us: 7,168 elements read 7 us,
    # and 8,192 (a size with no row) 8 us
    rows = [{"message_size": "16384", "latency_ms": "0.016"}, {"message_size": "4096", "latency_ms": "0.004"}]
    assert ors._loglog(rows, 7168, "message_size") == pytest.approx(7.0, rel=1e-12)
    assert ors._loglog(rows, 8192, "message_size") == pytest.approx(8.0, rel=1e-12)


def test_b200_step_counts_launches_from_the_model_spec():
    # DeepSeek-R1 (config.json: 61 layers, first_k_dense_replace 3): one MLA in all 61, 3 dense FFNs, 58 MoE blocks, one head
    ops, counts, _ = ors._breakdown("nvidia/DeepSeek-R1-FP4", "b200", weight_dtype="nvfp4")
    assert set(ops) <= set(counts)
    assert [counts[k] for k in ("layer0/attn/core_decode", "layer0/ffn/gate_up", "layer1/moe/experts_down", "lm_head")] == [61, 3, 58, 1]
    # Kimi-K2 (61 layers, first_k_dense_replace 1): counts the benchmark once fixed at DeepSeek-R1's 3 + 58 follow the spec
    _, counts, _ = ors._breakdown("moonshotai/Kimi-K2-Instruct", "b200")
    assert [counts[k] for k in ("layer0/attn/core_decode", "layer0/ffn/gate_up", "layer1/moe/experts_down")] == [61, 1, 60]
