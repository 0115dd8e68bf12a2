"""Layer kinds: one type per token mixer and per FFN.

Each type owns what the cost model reads of it: its parameters and how a GPU holds them, the KV cache
it keeps per token or the state it keeps per sequence, and (attention) the keys a query reads and the
cache a sequence holds under its window, chunk or sparse selection. cost/ prices each type with the
operator builder registered for it (cost.ops.op_builder); a type without one refuses to be priced.
Adding a kind: its type here (or anywhere, subclassing Mixer or Ffn) and its builder in cost/.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


class Mixer(ABC):
    """A layer's token mixer. Subclasses are frozen keyword-only dataclasses naming their `kind`."""

    kind: ClassVar[str]  # the name shown in listings and JSON ("gqa", "mla", "gdn", ...)

    @abstractmethod
    def params(self, hidden: int) -> int:
        """Weights of this mixer in a model of width `hidden`."""

    @abstractmethod
    def kv_values_per_token(self) -> int:
        """Values the KV cache holds per token for this layer (all KV heads, unsharded)."""

    @abstractmethod
    def kv_values_per_gpu(self, tp):
        """KV-cache values one tensor-parallel rank holds per token (arrays broadcast over `tp`)."""

    @abstractmethod
    def state_bytes_per_seq(self) -> float:
        """Fixed-size state one sequence holds in this layer, all heads, whatever its length."""

    def held_fraction(self, context):
        """Share of a `context`-token sequence's KV cache this layer keeps: all of it."""
        return 1.0

    def kv_bytes_per_gpu(self, tp, kv_bytes: float, context=None):
        """KV-cache bytes one tensor-parallel rank holds per token of a sequence, at `kv_bytes` a
        value; with `context`, per token of a sequence that long (held_fraction)."""
        return self.kv_values_per_gpu(tp) * kv_bytes

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, tp, kvp):
        """Weights one GPU holds at `w_bytes` a weight: split by TP, replicated over Helix's
        KV-parallel ranks (`kvp`)."""
        return self.params(hidden) * w_bytes / tp

    @property
    def tp_heads(self) -> tuple:
        """Head counts tensor parallelism must divide (none)."""
        return ()

    @property
    def tp_kv_heads(self) -> tuple:
        """KV heads tensor parallelism must divide or be divided by, replicating them (none)."""
        return ()


# ---------------------------------------------------------------------------------------------
# Softmax attention over a KV cache


def _o_bytes_per_gpu(a, hidden: int, w_bytes: float, tp, kvp):
    """An attention's output projection on one GPU: row-parallel over TP x Helix's KV-parallel ranks, as the
    operators read it (cost.mixers' dense_tp): after Helix's all-to-all each GPU holds 1 / (TP x KVP) of the
    heads' outputs (Helix, arXiv:2507.07120 sec. 2; TensorRT-LLM's Attention and MLA build o_proj on mapping_o,
    tp_size = tp_size * cp_size, "For Helix CP, combine TP and CP for the output projection",
    tensorrt_llm/_torch/modules/attention.py). Q, K and V stay split by TP alone."""
    return a.heads * a.v_head_dim * hidden * w_bytes / (np.asarray(tp, float) * np.asarray(kvp, float))


def causal_keys(cached, span):
    """Mean keys a query of a causal chunk reads: the `cached` tokens and, on average, half of the
    chunk's own `span` tokens (counting itself)."""
    return cached + (span + 1.0) / 2.0


def _chunk_offsets(x, chunk):
    """Sum over positions p < x of p mod chunk: the keys before each query within its chunk."""
    x = np.asarray(x, float)
    q = np.floor(x / chunk)
    r = x - q * chunk
    return q * chunk * (chunk - 1.0) / 2.0 + r * (r - 1.0) / 2.0


def chunk_keys(ctx, chunk):
    """Keys a decode token reads under chunked local attention (Llama 4 attention_chunk_size; vLLM
    ChunkedLocalAttention splits each sequence into virtual batches of one chunk,
    make_local_attention_virtual_batches): its whole context up to one chunk, then its offset in the
    current chunk, which over a sequence longer than a chunk averages the mean of p mod chunk over
    its positions (about chunk / 2)."""
    ctx = np.asarray(ctx, float)
    return np.where(ctx <= chunk, ctx, _chunk_offsets(ctx, chunk) / np.maximum(ctx, 1.0))


class Attention(Mixer):
    """Softmax attention over a KV cache. `kernel` names the attention kernel kind engines pick a
    kernel for (engines.ATTENTION_KERNELS)."""

    kernel: ClassVar[str]

    def decode_keys(self, ctx):
        """Keys a decode token with `ctx` cached tokens reads: all of them."""
        return ctx

    def prefill_keys(self, cached, span):
        """(mean keys a query reads, cached keys the chunk reads) for a prefill chunk of `span` tokens
        per sequence over `cached` tokens: causal attention over all of them."""
        return causal_keys(cached, span), cached

    @property
    def tp_heads(self) -> tuple:
        return (self.heads,)

    def o_bytes_per_gpu(self, hidden: int, w_bytes: float, tp, kvp):
        """The output projection's part of weight_bytes_per_gpu (_o_bytes_per_gpu), for a checkpoint that stores it in
        another format than the input projections (Precision.attn_in)."""
        return _o_bytes_per_gpu(self, hidden, w_bytes, tp, kvp)


@dataclass(frozen=True, kw_only=True)
class GQA(Attention):
    """Grouped-query attention (MHA and MQA at the ends), optionally within a sliding `window` (0:
    full causal attention) or within chunks of `attn_chunk` positions (Llama 4 attention_chunk_size: a
    token attends only to the earlier tokens of its own chunk; HF Llama4TextAttention, vLLM
    ChunkedLocalAttention)."""

    kind: ClassVar[str] = "gqa"
    kernel: ClassVar[str] = "gqa"
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    window: int = 0
    attn_chunk: int = 0
    k_eq_v: bool = False  # one tensor serves as K and V (Gemma 4 global layers)
    # RMSNorm of Q and K over all heads at once (MiniMax-M2 qk_norm_type "per_layer"): under TP the
    # engines all-reduce the sums of squares across ranks (vLLM/SGLang MiniMaxText01RMSNormTP)
    qk_norm_across_heads: bool = False
    # Gated attention (Qwen3-Next/Qwen3.5 attn_output_gate): q_proj also emits a per-channel sigmoid
    # gate for the attention output, doubling the query projection's width
    out_gate: bool = False

    @property
    def kv_width(self) -> int:
        """Cached values per KV head and token: K and V, or the one tensor serving as both."""
        return self.head_dim + (0 if self.k_eq_v else self.v_head_dim)

    def params(self, hidden: int) -> int:
        h = hidden
        q = self.heads * self.head_dim * (2 if self.out_gate else 1)
        return h * q + h * (self.kv_heads * self.kv_width) + self.heads * self.v_head_dim * h

    def kv_values_per_token(self) -> int:
        return self.kv_heads * self.kv_width

    def kv_values_per_gpu(self, tp):
        return np.ceil(self.kv_heads / tp) * self.kv_width  # KV heads replicate when TP exceeds them

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, tp, kvp):
        """Q (with its gate) and O split by TP; K and V by whole heads, ceil(kv_heads / tp) a rank, so where TP exceeds
        the KV heads each rank holds a replica of one head's K and V rows, as it holds that head's cache (vLLM
        QKVParallelLinear.__init__: num_kv_heads = 1, num_kv_head_replicas = tp / total_num_kv_heads where tp >= the KV
        heads, vllm/model_executor/layers/linear.py@0036d38; SGLang's QKVParallelLinear, python/sglang/srt/layers/
        linear.py, the same rule; TensorRT-LLM's Attention.__init__, num_key_value_heads = (kv + tp - 1) // tp,
        tensorrt_llm/_torch/modules/attention.py). O split over TP x Helix's ranks (_o_bytes_per_gpu)."""
        h = hidden
        q = h * self.heads * self.head_dim * (2 if self.out_gate else 1)
        return (q / tp + h * self.kv_values_per_gpu(tp)) * w_bytes + _o_bytes_per_gpu(self, h, w_bytes, tp, kvp)

    def state_bytes_per_seq(self) -> float:
        return 0.0

    def held_fraction(self, context):
        """A sliding window keeps at most `window` of a sequence's tokens. Chunked local attention keeps
        its whole context: vLLM turns the hybrid KV cache manager off for it by default ("latency
        regression when using chunked local attention with the hybrid KV cache manager";
        VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 would keep only the current chunk's blocks,
        docs/design/hybrid_kv_cache_manager.md)."""
        if not self.window:
            return 1.0
        return np.minimum(1.0, self.window / np.maximum(np.asarray(context, float), 1.0))

    def kv_bytes_per_gpu(self, tp, kv_bytes: float, context=None):
        per = self.kv_values_per_gpu(tp)
        if self.window and context is not None:
            per = per * self.held_fraction(context)
        return per * kv_bytes

    @property
    def tp_kv_heads(self) -> tuple:
        return (self.kv_heads,)

    def decode_keys(self, ctx):
        if self.window:
            ctx = np.minimum(ctx, self.window)
        if self.attn_chunk:
            ctx = chunk_keys(ctx, self.attn_chunk)
        return ctx

    def prefill_keys(self, cached, span):
        if self.attn_chunk:
            # the chunk's queries at positions [c, c + t) attend within their own attention chunk
            c = self.attn_chunk
            keys = (_chunk_offsets(cached + span, c) - _chunk_offsets(cached, c)) / np.maximum(span, 1.0) + 1.0
            return keys, np.mod(cached, c)
        keys = causal_keys(cached, span)
        return (np.minimum(keys, self.window) if self.window else keys), cached


@dataclass(frozen=True, kw_only=True)
class MLA(Attention):
    """Multi-head latent attention (DeepSeek-V2, sec. 2.1): queries through an optional low-rank
    `q_lora_rank`, keys and values from one cached latent of `kv_lora_rank` plus a shared RoPE key of
    `rope_dim`, each head's query-key `nope_dim` + `rope_dim` wide and its value `v_head_dim`."""

    kind: ClassVar[str] = "mla"
    kernel: ClassVar[str] = "mla"
    heads: int
    v_head_dim: int
    q_lora_rank: int
    kv_lora_rank: int
    rope_dim: int
    nope_dim: int

    @property
    def head_dim(self) -> int:
        return self.nope_dim + self.rope_dim

    @property
    def down_params_per_hidden(self) -> int:
        """Outputs of the low-rank down-projections (q_a, kv_a) per hidden unit."""
        return self.q_lora_rank + self.kv_lora_rank + self.rope_dim

    def params(self, hidden: int) -> int:
        h, qk = hidden, self.head_dim
        q = (h * self.q_lora_rank + self.q_lora_rank * self.heads * qk) if self.q_lora_rank else h * self.heads * qk
        kv = h * (self.kv_lora_rank + self.rope_dim) + self.kv_lora_rank * self.heads * (self.nope_dim + self.v_head_dim)
        return q + kv + self.heads * self.v_head_dim * h

    def kv_values_per_token(self) -> int:
        return self.kv_lora_rank + self.rope_dim

    def kv_values_per_gpu(self, tp):
        return (self.kv_lora_rank + self.rope_dim) + 0.0 * tp  # the latent is replicated on every TP rank

    def state_bytes_per_seq(self) -> float:
        return 0.0

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, tp, kvp):
        # the low-rank down-projections (q_a, kv_a) are small and replicated on every TP rank
        down, o = hidden * self.down_params_per_hidden, self.heads * self.v_head_dim * hidden
        return (self.params(hidden) - down - o) * w_bytes / tp + down * w_bytes + _o_bytes_per_gpu(self, hidden, w_bytes, tp, kvp)


@dataclass(frozen=True, kw_only=True)
class DSA(MLA):
    """DeepSeek Sparse Attention (DeepSeek-V3.2-Exp report, sec. 2.1): MLA attending to the top
    `index_topk` cached tokens a lightning indexer of `index_heads` x `index_head_dim` FP8 scores
    picks. Listed as MLA; its own attention kernel kind."""

    kernel: ClassVar[str] = "dsa"
    index_heads: int
    index_head_dim: int
    index_topk: int

    @property
    def index_key_bytes(self) -> float:
        """Bytes of one cached index key: FP8 with one FP32 scale per 128 values."""
        return self.index_head_dim * (1.0 + 4.0 / 128.0)

    def params(self, hidden: int) -> int:
        # the indexer: wq_b from the compressed query, wk and the per-head weights from the hidden state
        h = hidden
        return super().params(h) + ((self.q_lora_rank or h) * self.index_heads * self.index_head_dim + h * self.index_head_dim
                                    + h * self.index_heads)

    def kv_bytes_per_gpu(self, tp, kv_bytes: float, context=None):
        return self.index_key_bytes + super().kv_bytes_per_gpu(tp, kv_bytes, context)

    def decode_keys(self, ctx):
        return np.minimum(ctx, self.index_topk)  # MLA reads only the selected tokens

    def prefill_keys(self, cached, span):
        keys, held = super().prefill_keys(cached, span)
        return np.minimum(keys, self.index_topk), held


# ---------------------------------------------------------------------------------------------
# Recurrent mixers: a fixed-size state per sequence instead of a KV cache


class Recurrent(Mixer):
    """A recurrent mixer. Each runs a causal depthwise conv of `conv_kernel` taps first, keeps its
    state in `state_bytes` per value (config mamba_ssm_dtype) and its conv state in BF16, and runs
    prefill in chunks of `chunk` tokens. Subclasses give the widths below."""

    heads: int
    conv_kernel: int
    state_bytes: int
    chunk: int

    @property
    @abstractmethod
    def conv_dim(self) -> int:
        """Channels of the short convolution."""

    @property
    @abstractmethod
    def value_width(self) -> int:
        """Width of the mixer's output (gated norm and out_proj input)."""

    @property
    @abstractmethod
    def in_proj_width(self) -> int:
        """Outputs of the input projection."""

    @property
    @abstractmethod
    def state_values(self) -> int:
        """Recurrent-state values per sequence (vLLM MambaStateShapeCalculator temporal state)."""

    @property
    @abstractmethod
    def decode_flops_per_token(self) -> float:
        """Recurrent update per token, all heads, on CUDA cores."""

    @property
    @abstractmethod
    def prefill_flops_per_token(self) -> float:
        """Chunked prefill per token, all heads."""

    def conv_dim_per_gpu(self, tp):
        """Conv channels one TP rank holds: all split by TP."""
        return self.conv_dim / np.asarray(tp, float)

    def params(self, hidden: int) -> int:
        # input projection, conv weights, out_proj; A_log, dt_bias, D and the norm are negligible
        return hidden * self.in_proj_width + self.conv_dim * self.conv_kernel + self.value_width * hidden

    def kv_values_per_token(self) -> int:
        return 0

    def kv_values_per_gpu(self, tp):
        return 0.0

    def state_bytes_per_seq(self) -> float:
        """The (conv_kernel-1)-row conv state in BF16 and the recurrent state in state_bytes per value."""
        return self.conv_dim * (self.conv_kernel - 1) * 2.0 + self.state_values * self.state_bytes

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, tp, kvp):
        # Helix GPUs act as TP here: there is no KV cache to shard along the sequence
        return self.params(hidden) * w_bytes / (tp * kvp)


@dataclass(frozen=True, kw_only=True)
class GatedDeltaNet(Recurrent):
    """Gated DeltaNet (Yang et al. 2024, arXiv:2412.06464; Qwen3-Next/Qwen3.5 linear_attention layers):
    `heads` value heads of `v_head_dim` and `kv_heads` key heads of `head_dim`, each value head keeping a
    v_head_dim x head_dim delta-rule state."""

    kind: ClassVar[str] = "gdn"
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    conv_kernel: int
    state_bytes: int = 2
    chunk: int

    @property
    def conv_dim(self) -> int:
        """Q, K (key heads) and V."""
        return 2 * self.kv_heads * self.head_dim + self.heads * self.v_head_dim

    @property
    def value_width(self) -> int:
        return self.heads * self.v_head_dim

    @property
    def in_proj_width(self) -> int:
        """The conv channels, the output gate z, and per head beta and the decay (vLLM Qwen3NextGatedDeltaNet)."""
        return self.conv_dim + self.value_width + 2 * self.heads

    @property
    def state_values(self) -> int:
        return self.heads * self.v_head_dim * self.head_dim

    @property
    def decode_flops_per_token(self) -> float:
        """Decay, S^T k, rank-1 update, S^T q: ~7 dk dv per value head."""
        return 7.0 * self.state_values

    @property
    def prefill_flops_per_token(self) -> float:
        """FLA chunk_gated_delta_rule with chunk C, per value head: the inter-chunk state terms (w S,
        K^T v_new, q S: 6 dk dv) and the intra-chunk C x C products (K K^T, the WY representation, the
        masked attention: 6 C dk + 4 C dv)."""
        C, dk, dv = self.chunk, self.head_dim, self.v_head_dim
        return self.heads * (6.0 * dk * dv + 6.0 * C * dk + 4.0 * C * dv)

    @property
    def tp_heads(self) -> tuple:
        # the key heads split by TP as well (vLLM divide(num_k_heads, tp))
        return (self.heads, self.kv_heads)


@dataclass(frozen=True, kw_only=True)
class Mamba2(Recurrent):
    """Mamba-2 SSD (Dao & Gu 2024, arXiv:2405.21060; Nemotron-H "M" layers): `heads` heads of
    `head_dim` channels and `groups` B/C groups, each head keeping a head_dim x state_dim state."""

    kind: ClassVar[str] = "mamba2"
    heads: int
    groups: int
    head_dim: int
    state_dim: int
    conv_kernel: int
    state_bytes: int = 2
    chunk: int

    @property
    def conv_dim(self) -> int:
        """x, B and C."""
        return self.heads * self.head_dim + 2 * self.groups * self.state_dim

    def conv_dim_per_gpu(self, tp):
        """The B/C groups are replicated up to one per rank when TP exceeds them (vLLM
        extra_groups_for_head_shards)."""
        tp = np.asarray(tp, float)
        return self.heads * self.head_dim / tp + 2.0 * self.state_dim * np.maximum(self.groups / tp, 1.0)

    @property
    def value_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def in_proj_width(self) -> int:
        """The conv channels, the output gate z, and per head dt (vLLM MambaMixer2)."""
        return self.conv_dim + self.value_width + self.heads

    @property
    def state_values(self) -> int:
        return self.heads * self.head_dim * self.state_dim

    @property
    def decode_flops_per_token(self) -> float:
        """Decay, x B^T update, h C: ~5 P N per head."""
        return 5.0 * self.state_values

    @property
    def prefill_flops_per_token(self) -> float:
        """SSD (Dao & Gu 2024, sec. 6) with chunk C: C B^T per group (2 C N), the masked product per
        head (2 C P), the chunk states and their output (4 P N per head)."""
        C, P, N = self.chunk, self.head_dim, self.state_dim
        return self.groups * 2.0 * C * N + self.heads * (2.0 * C * P + 4.0 * P * N)

    @property
    def tp_heads(self) -> tuple:
        return (self.heads,)  # the B/C groups replicate up to TP instead (MambaStateShapeCalculator)


# ---------------------------------------------------------------------------------------------
# Other mixers


@dataclass(frozen=True)
class LinearMixer(Mixer):
    """The mixer replaced by one hidden x hidden GEMM (Nemotron-NAS replace_with_linear)."""

    kind: ClassVar[str] = "linear"

    def params(self, hidden: int) -> int:
        return hidden * hidden

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, tp, kvp):
        # no cache to shard: Helix's GPUs act as TP, as cost.mixers.linear_ops runs it
        return self.params(hidden) * w_bytes / (tp * kvp)

    def kv_values_per_token(self) -> int:
        return 0

    def kv_values_per_gpu(self, tp):
        return 0.0

    def state_bytes_per_seq(self) -> float:
        return 0.0


@dataclass(frozen=True)
class NoMixer(Mixer):
    """No mixer (Nemotron-NAS no-op blocks, Nemotron-H MLP and MoE layers)."""

    kind: ClassVar[str] = "none"

    def params(self, hidden: int) -> int:
        return 0

    def kv_values_per_token(self) -> int:
        return 0

    def kv_values_per_gpu(self, tp):
        return 0.0

    def state_bytes_per_seq(self) -> float:
        return 0.0


# ---------------------------------------------------------------------------------------------
# FFNs


class Ffn(ABC):
    """A layer's FFN. Subclasses are frozen keyword-only dataclasses naming their `kind`."""

    kind: ClassVar[str]  # the name shown in listings ("dense", "moe", ...)

    @abstractmethod
    def params(self, hidden: int) -> tuple[int, int]:
        """(total, active per token) parameters of this FFN."""

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, *, tp, kvp, ep, moe_tp, expert_bytes=None):
        """Weights one GPU holds at `w_bytes` a weight: split by TP and Helix's KV-parallel GPUs (which act
        as TP after attention). `expert_bytes`: a MoE's routed experts' bytes a weight where not `w_bytes`."""
        return self.params(hidden)[0] * w_bytes / (tp * kvp)

    @property
    def act_width(self) -> int:
        """Width of the activation the layer's elementwise pass streams per token (none)."""
        return 0

    @property
    def peak_width(self):
        """The widest intermediate a token holds in a forward (none)."""
        return 0


@dataclass(frozen=True, kw_only=True)
class DenseFfn(Ffn):
    """A dense MLP of width `inter`, gated (SwiGLU-style: 3 matrices) or not (2)."""

    kind: ClassVar[str] = "dense"
    inter: int
    gated: bool = True

    @property
    def mats(self) -> int:
        return 3 if self.gated else 2

    def params(self, hidden: int) -> tuple[int, int]:
        p = self.mats * hidden * self.inter
        return p, p

    @property
    def act_width(self) -> int:
        return self.inter

    @property
    def peak_width(self):
        return self.inter


@dataclass(frozen=True, kw_only=True)
class MoE(Ffn):
    """A mixture of `experts` experts of width `expert_inter`, `top_k` per token, a router, and
    always-on shared experts of total width `shared_inter` (0: none). `activation`: the experts' gated
    activation, "silu" (SwiGLU) or "swiglu_clamped" (gpt-oss's clamped SwiGLU, config `swiglu_limit`), which
    AITER's fused MoE runs on another path (cost.ffns.aiter_quantised_activation)."""

    kind: ClassVar[str] = "moe"
    experts: int
    top_k: int
    expert_inter: int
    shared_inter: int = 0
    gated: bool = True
    activation: str = "silu"

    @property
    def mats(self) -> int:
        return 3 if self.gated else 2

    def params(self, hidden: int) -> tuple[int, int]:
        h = hidden
        one = self.mats * h * self.expert_inter
        shared = self.mats * h * self.shared_inter
        router = h * self.experts
        return self.experts * one + shared + router, self.top_k * one + shared + router

    def weight_bytes_per_gpu(self, hidden: int, w_bytes: float, *, tp, kvp, ep, moe_tp, expert_bytes=None):
        """Experts split by EP and MoE-TP (at `expert_bytes` a weight where the engine holds them so), shared experts
        by TP, the router (BF16) on every GPU."""
        h = hidden
        expert = self.mats * h * self.expert_inter
        return self.experts * expert * (w_bytes if expert_bytes is None else expert_bytes) / (ep * moe_tp) + self.mats * h * self.shared_inter * w_bytes / (tp * kvp) + h * self.experts * 2.0

    @property
    def act_width(self) -> int:
        """The shared experts' (the routed experts' activation is an operator of the MoE's own)."""
        return self.shared_inter

    @property
    def peak_width(self):
        return self.expert_inter * max(self.top_k, 1)


@dataclass(frozen=True)
class LinearFfn(Ffn):
    """The FFN replaced by one hidden x hidden GEMM (Nemotron-NAS replace_with_linear)."""

    kind: ClassVar[str] = "linear"

    def params(self, hidden: int) -> tuple[int, int]:
        return hidden * hidden, hidden * hidden


@dataclass(frozen=True)
class NoFfn(Ffn):
    """No FFN (Nemotron-NAS no-op blocks, Nemotron-H mixer layers)."""

    kind: ClassVar[str] = "none"

    def params(self, hidden: int) -> tuple[int, int]:
        return 0, 0
