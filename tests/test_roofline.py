"""cost/roofline.py: the per-operator roofline of one step against hand-derived FLOPs, bytes and ridges."""
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.roofline import roofline
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_llama_8b_decode_batch_1_on_h100():
    g, m = get_gpu("h100"), get_model("llama-3.1-8b")
    r = roofline(m, g, calibration_for(g), Precision.of("bf16"), "decode", batch=1, context=4096, tp=1)
    qkv = next(o for o in r["ops"] if o["name"] == "layer/attn/qkv")
    # one token: 2 x (4096 + 2 x 1024) x 4096 FLOPs per layer, 32 layers; bytes = the weights + 1 token in and out
    assert qkv["flops"] == 2 * 6144 * 4096 * 32
    assert qkv["bytes"] == 32 * (6144 * 4096 * 2 + 4096 * 2 + 6144 * 2)
    assert qkv["ridge_point"] == pytest.approx(989.4e12 / 3.35e12)  # BF16 peak over HBM bandwidth
    assert qkv["bound"] == "memory" and qkv["math"] == "bf16"
    # a step reads every weight but the embedding table once, plus the 4096-token KV cache
    # (32 layers x 8 KV heads x 128 x K,V x 2 bytes = 131,072 B per token)
    weights = 2 * (m.total_params - m.vocab * m.hidden)
    assert r["totals"]["bytes"] == pytest.approx(weights + 4096 * 131_072, rel=2e-3)
    assert all(o["bound"] in ("memory", "memory*", "comm") for o in r["ops"] if o["kind"] == "gemm")
