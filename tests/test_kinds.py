"""Layer kinds (spec.kinds): each type's parameters, KV cache or state, and the keys its attention
reads and holds, in one place per kind; a kind missing part of its contract cannot be built."""
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from llm_codesign.cost.memory import kv_bytes_per_token, weight_bytes_per_gpu
from llm_codesign.spec.kinds import DSA, GQA, MLA, DenseFfn, Mixer, MoE, NoFfn, chunk_keys
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision


def test_sliding_window_keys_read_and_held():
    a = GQA(heads=64, kv_heads=8, head_dim=64, v_head_dim=64, window=128)
    # the cache keeps at most the window of a sequence; a sequence shorter than it whole
    assert float(a.held_fraction(1280)) == 0.1 and float(a.held_fraction(64)) == 1.0 and float(a.held_fraction(0)) == 1.0
    np.testing.assert_array_equal(a.decode_keys(np.array([64.0, 1000.0])), [64.0, 128.0])
    # a prefill chunk of 50 tokens over 100 cached: 100 + (50 + 1) / 2 keys on average, capped at the window
    keys, held = a.prefill_keys(np.float64(100.0), 50.0)
    assert (float(keys), float(held)) == (125.5, 100.0)
    full = GQA(heads=64, kv_heads=8, head_dim=64, v_head_dim=64)
    assert full.held_fraction(1280) == 1.0 and float(full.prefill_keys(np.float64(100.0), 50.0)[0]) == 125.5
    assert float(GQA(heads=64, kv_heads=8, head_dim=64, v_head_dim=64, window=100).prefill_keys(np.float64(100.0), 50.0)[0]) == 100.0


def test_chunked_attention_keys_read_and_held():
    a = GQA(heads=8, kv_heads=8, head_dim=64, v_head_dim=64, attn_chunk=8)
    # queries at positions 6..9 with chunks of 8: 6, 7, 0 and 1 earlier keys in their chunk, plus themselves
    keys, held = a.prefill_keys(np.float64(6.0), 4.0)
    assert float(keys) == (7 + 8 + 1 + 2) / 4 and float(held) == 6.0  # the cached 6 tokens all lie in the first chunk
    assert float(a.prefill_keys(np.float64(11.0), 1.0)[1]) == 3.0  # position 11: 3 cached keys of its own chunk
    assert float(a.decode_keys(12.0)) == float(chunk_keys(12.0, 8)) == (8 * 7 / 2 + 4 * 3 / 2) / 12
    assert a.held_fraction(10_000) == 1.0  # engines keep a chunked layer's whole context


def test_sparse_attention_reads_the_selected_keys_and_caches_index_keys():
    a = DSA(heads=128, v_head_dim=128, q_lora_rank=1536, kv_lora_rank=512, rope_dim=64, nope_dim=128,
            index_heads=64, index_head_dim=128, index_topk=2048)
    np.testing.assert_array_equal(a.decode_keys(np.array([1000.0, 100_000.0])), [1000.0, 2048.0])
    assert float(a.prefill_keys(np.float64(8192.0), 1024.0)[0]) == 2048.0
    # per token: the 576-value latent (FP8, 1 B) and a 128-value FP8 index key with one FP32 scale per 128
    assert float(a.kv_bytes_per_gpu(np.float64(8.0), 1.0)) == 576 + 128 + 4
    assert a.kind == "mla" and a.kernel == "dsa"
    mla = MLA(heads=128, v_head_dim=128, q_lora_rank=1536, kv_lora_rank=512, rope_dim=64, nope_dim=128)
    # the indexer's weights: wq_b (1536 x 64 x 128), wk (h x 128) and the head weights (h x 64)
    assert a.params(7168) - mla.params(7168) == 1536 * 64 * 128 + 7168 * 128 + 7168 * 64


def test_kv_and_weights_per_gpu_as_each_kind_shards_them():
    g = GQA(heads=64, kv_heads=8, head_dim=128, v_head_dim=128)
    np.testing.assert_array_equal(g.kv_values_per_gpu(np.array([1.0, 8.0, 16.0])), [8 * 256, 256, 256])  # replicated past 8
    mla = MLA(heads=128, v_head_dim=128, q_lora_rank=1536, kv_lora_rank=512, rope_dim=64, nope_dim=128)
    np.testing.assert_array_equal(mla.kv_values_per_gpu(np.array([1.0, 8.0])), [576, 576])  # the latent on every rank
    # MLA's down-projections (q_a, kv_a: 7168 x (1536 + 512 + 64)) whole on every rank, the rest split by TP
    down = 7168 * (1536 + 512 + 64)
    assert mla.weight_bytes_per_gpu(7168, 1.0, 8.0, 1.0) == (mla.params(7168) - down) / 8 + down
    moe = MoE(experts=64, top_k=6, expert_inter=1024, shared_inter=2048)
    # experts over EP x MoE-TP, shared experts over TP x Helix, the router in BF16 on every GPU
    assert moe.weight_bytes_per_gpu(2048, 1.0, tp=2.0, kvp=1.0, ep=4.0, moe_tp=2.0) == (
        64 * 3 * 2048 * 1024 / 8 + 3 * 2048 * 2048 / 2 + 2048 * 64 * 2.0)


@dataclass(frozen=True, kw_only=True)
class KvToy(Mixer):
    """A toy attention-like kind holding 100 cache values a token on each rank."""

    kind: ClassVar[str] = "kv_toy"

    def params(self, hidden):
        return hidden * hidden

    def kv_values_per_token(self):
        return 100

    def kv_values_per_gpu(self, tp):
        return 100.0

    def state_bytes_per_seq(self):
        return 0.0


def test_memory_reads_a_new_kinds_cache_and_weights_from_its_type():
    # before the kinds were types, a kind the memory model did not name held no KV cache (`else: continue`)
    m = ModelSpec("toy", hidden=1024, vocab=1000, groups=((Layer(KvToy(), NoFfn()), 6),))
    assert float(kv_bytes_per_token(m, Precision.of("bf16", kv="fp8"), Plan(), 4096)) == 6 * 100 * 1.0
    assert m.kv_values_per_token() == 600
    assert float(weight_bytes_per_gpu(m, Precision.of("bf16"), Plan(tp=2))) == 6 * 1024 * 1024 * 2.0 / 2 + 2 * 1000 * 1024 * 2.0 / 2


def test_a_kind_missing_part_of_its_contract_cannot_be_built():
    @dataclass(frozen=True)
    class NoState(Mixer):
        kind: ClassVar[str] = "no_state"

        def params(self, hidden):
            return 0

        def kv_values_per_token(self):
            return 0

        def kv_values_per_gpu(self, tp):
            return 0.0

    with pytest.raises(TypeError, match="state_bytes_per_seq"):
        NoState()


def test_ffn_widths_and_parameters():
    d = DenseFfn(inter=14336)
    assert d.params(4096) == (3 * 4096 * 14336,) * 2 and d.act_width == d.peak_width == 14336
    assert DenseFfn(inter=1000, gated=False).params(10) == (2 * 10 * 1000,) * 2
    moe = MoE(experts=64, top_k=6, expert_inter=1024, shared_inter=2048)
    one = 3 * 2048 * 1024
    assert moe.params(2048) == (64 * one + 3 * 2048 * 2048 + 2048 * 64, 6 * one + 3 * 2048 * 2048 + 2048 * 64)
    # the layer's elementwise pass streams the shared experts' activation; the routed experts' is the MoE's own operator
    assert (moe.act_width, moe.peak_width) == (2048, 6 * 1024)
    assert NoFfn().params(2048) == (0, 0) and NoFfn().peak_width == 0
