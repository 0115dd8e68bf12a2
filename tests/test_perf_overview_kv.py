"""benchmarks/perf_overview_kv.py: the perf overview's rows under three readings of their KV cache (issue 39;
docs/modelling-notes.md#perf-overview-kv)."""
import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports perf_overview_batch beside it
spec = importlib.util.spec_from_file_location("perf_overview_kv", ROOT / "benchmarks" / "perf_overview_kv.py")
pkv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pkv)


def _r(gpu, rel, model, y, weight="fp8"):
    return {"gpu": gpu, "source": f"trtllm_perf_overview_{rel}_total.csv:2 (page)", "model": model, "weight_dtype": weight,
            "output_tok_s_per_gpu": str(y)}


def test_release_is_read_from_the_source_column():
    assert pkv.release("trtllm_perf_overview_v1_0_total.csv:12 (NVIDIA/TensorRT-LLM ...)") == "v1_0"
    assert pkv.release(_r("h100", "v0_17", "mixtral-8x7b", 1)["source"]) == "v0_17"


def test_kept_reads_quantised_pytorch_flow_rows_and_v0_17_mixtral():
    gpus = ("h100", "h200")
    assert pkv.kept(_r("h100", "v1_0", "llama-4-maverick", 1), gpus)
    assert pkv.kept(_r("h200", "v0_17", "mixtral-8x7b", 1), gpus)          # the only FP8 MoE rows before v0.20
    assert not pkv.kept(_r("h200", "v0_17", "llama-3.1-8b", 1), gpus)      # the TensorRT engine flow, dense
    assert not pkv.kept(_r("h100", "v1_0", "llama-3.1-8b", 1, "bf16"), gpus)  # an unquantised checkpoint
    assert not pkv.kept(_r("b200", "v1_0", "llama-4-maverick", 1), gpus)


def test_summarise_by_hand():
    rows = [_r("h100", "v1_0", "m", 1000), _r("h100", "v1_0", "m", 2000), _r("h100", "v1_0", "m", 500), _r("h200", "v1_0", "m", 400)]
    # by hand: 1100 / 1000 = +10 %, 1600 / 2000 = -20 %, the third unpriced; median |e| (10 + 20) / 2 = 15, signed (10 - 20) / 2 = -5;
    # H200: 500 / 400 = +25 %
    got = pkv.summarise(rows, [1100.0, 1600.0, math.nan, 500.0])
    assert got[("h100", "v1_0", "m")] == pytest.approx((2, 15.0, -5.0))
    assert got[("h200", "v1_0", "m")] == pytest.approx((1, 25.0, 25.0))


def test_kv_fraction_scaled_halves_the_fraction_and_restores_it():
    before = pkv.trtllm_bench.KV_FRACTION
    with pkv.kv_fraction_scaled(0.5):
        assert pkv.trtllm_bench.KV_FRACTION == pytest.approx(before / 2)  # 0.95 -> 0.475
    assert pkv.trtllm_bench.KV_FRACTION == before
    with pytest.raises(RuntimeError), pkv.kv_fraction_scaled(0.5):
        raise RuntimeError
    assert pkv.trtllm_bench.KV_FRACTION == before


def test_half_the_fraction_holds_half_the_cache():
    """The "half the cache" reading's premise: under TensorRT-LLM's "free" budget the KV memory is fraction x (HBM - weights -
    activations) (memory.fit), so halving the fraction halves it exactly (Llama 4 Maverick FP8 on H100, TP8, 128/2048)."""
    from llm_codesign.cost import memory
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    model, gpu = get_model("llama-4-maverick"), get_gpu("h100")
    prec = Precision.of("fp8", kv="fp8")
    fits = [memory.fit(model, gpu, prec, Plan(tp=8, ep=1, moe_tp=8), 128, osl=2048, usable_fraction=f, budget="free") for f in (0.95, 0.475)]
    assert fits[1]["free_for_kv"] == pytest.approx(fits[0]["free_for_kv"] / 2, rel=1e-12)
