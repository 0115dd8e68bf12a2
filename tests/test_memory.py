"""cost/memory.py: KV cache per token, weights per GPU and the batch that fits, against hand-derived figures."""
import pytest

from llm_codesign.cost.memory import kv_bytes_per_token, weight_bytes_per_gpu
from llm_codesign.cost.ops import Sharding
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_gqa_kv_bytes_per_token():
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 x (K + V) x 2 bytes = 327,680 B per token (BF16)
    m = get_model("llama-3.1-70b")
    assert float(kv_bytes_per_token(m, Precision.of("bf16"), Sharding())) == 327_680
    # TP8 leaves one KV head per GPU; FP8 halves the bytes
    assert float(kv_bytes_per_token(m, Precision.of("bf16"), Sharding(tp=8))) == 327_680 / 8
    assert float(kv_bytes_per_token(m, Precision.of("bf16", kv="fp8"), Sharding(tp=8))) == 327_680 / 16


def test_mla_latent_is_replicated_over_tp():
    # DeepSeek-R1: 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes = 70,272 B per token, on every TP rank
    m = get_model("deepseek-r1")
    for tp in (1, 8):
        assert float(kv_bytes_per_token(m, Precision.of("bf16"), Sharding(tp=tp))) == 61 * 576 * 2


def test_weights_per_gpu_shard_by_tp():
    m = get_model("llama-3.1-70b")
    one = float(weight_bytes_per_gpu(m, Precision.of("bf16"), Sharding()))
    assert one == pytest.approx(2 * m.total_params, rel=1e-9)  # every parameter once, 2 bytes
    eight = float(weight_bytes_per_gpu(m, Precision.of("bf16"), Sharding(tp=8)))
    # everything shards over TP except the norms (replicated): within 0.01% of a clean eighth
    assert eight == pytest.approx(one / 8, rel=1e-4) and eight >= one / 8
