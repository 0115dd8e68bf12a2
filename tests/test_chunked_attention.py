"""Llama 4 chunked local attention (issue 20): attention_chunk_size read per layer, and a token's
attention priced within its chunk."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.kinds import chunk_keys
from llm_codesign.spec.model import from_hf_config
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model


def test_three_of_four_llama4_layers_attend_within_8192_token_chunks():
    for name in ("llama-4-maverick", "llama-4-scout"):
        m = get_model(name)
        chunked = sum(n for layer, n in m.groups if layer.attn.attn_chunk == 8192)
        glob = sum(n for layer, n in m.groups if layer.attn.kind == "gqa" and layer.attn.attn_chunk == 0)
        assert (chunked, glob) == (36, 12)  # NoPE layers (every 4th, HF no_rope_layers) attend globally
        order = [m.groups[g][0].attn.attn_chunk for g in m.layout]
        assert order[:4] == [8192, 8192, 8192, 0] and order[-1] == 0
    # an explicit no_rope_layers list is followed
    cfg = {"model_type": "llama4_text", "hidden_size": 1024, "num_hidden_layers": 4, "vocab_size": 1000, "num_attention_heads": 8,
           "num_key_value_heads": 2, "intermediate_size": 2048, "attention_chunk_size": 4096, "no_rope_layers": [0, 1, 1, 1]}
    assert [from_hf_config(cfg).groups[g][0].attn.attn_chunk for g in from_hf_config(cfg).layout] == [0, 4096, 4096, 4096]


def test_keys_within_the_chunk():
    assert float(chunk_keys(4096, 8192)) == 4096  # inside the first chunk: the whole context
    # 131,072 = 16 chunks: positions average (8192 - 1) / 2 keys before them in their chunk
    assert float(chunk_keys(131072, 8192)) == pytest.approx(4095.5, rel=1e-12)
    # 12,288 = one chunk + half: (8192 x 8191 / 2 + 4096 x 4095 / 2) / 12288
    assert float(chunk_keys(12288, 8192)) == pytest.approx((8192 * 8191 / 2 + 4096 * 4095 / 2) / 12288, rel=1e-12)


def test_long_context_attention_reads_the_chunk_not_the_context():
    # Maverick TP8 decode of 4 sequences at 131,072: a chunked layer reads 4095.5 cached tokens of
    # 1 KV head x (128 + 128) x 2 bytes per GPU, a global (NoPE) layer all 131,072; each in XQA's splits of whole
    # 64-key tiles (cost.kernels: sqrt(8 x keys / 128) splits on H200 here): 4 tiles a split over 4,095.5 keys, 23
    # over 131,072
    m, g = get_model("llama-4-maverick"), get_gpu("h200")
    ops = forward_ops(m, g, calibration_for(g), m.default_precision, Plan(tp=8, ep=8), b=Batch(dec_seqs=4, dec_ctx=131072))
    dec = {op.group: op for op in ops if op.role == "core_decode"}
    chunk_l = [i for i, (layer, _) in enumerate(m.groups) if layer.attn.attn_chunk][0]
    glob_l = [i for i, (layer, _) in enumerate(m.groups) if not layer.attn.attn_chunk][0]
    q = 4 * (40 / 8) * 256 * 2.0  # queries and outputs: 40 heads / TP8 x (128 + 128) x BF16
    assert float(np.ravel(dec[chunk_l].bytes)[0]) == pytest.approx(4 * (8 * 4095.5 / 128) ** 0.5 * 4 * 64 * 512 + q, rel=1e-9)
    assert float(np.ravel(dec[glob_l].bytes)[0]) == pytest.approx(4 * (8 * 131072 / 128) ** 0.5 * 23 * 64 * 512 + q, rel=1e-9)
    # prefill: a second 8192-token chunk attends 4096.5 keys per query, not 8192 + 4096.5
    pf = forward_ops(m, g, calibration_for(g), m.default_precision, Plan(tp=8, ep=8), b=Batch(pf_tokens=8192, pf_seqs=1, pf_ctx=8192))
    p = {op.group: op for op in pf if op.role == "core_prefill"}
    per_key = 2.0 * 8192 * 5 * 256  # FLOPs per key: tokens x heads per GPU x (qk + v)
    assert float(np.ravel(p[chunk_l].flops)[0]) == pytest.approx(per_key * 4096.5, rel=1e-9)
    assert float(np.ravel(p[glob_l].flops)[0]) == pytest.approx(per_key * 12288.5, rel=1e-9)
