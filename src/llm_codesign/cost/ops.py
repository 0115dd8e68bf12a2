"""The operator graph: a flat, slash-named list of one forward pass, priced per GPU.

For a step holding decode tokens (B sequences at their contexts, k+1 tokens each when verifying
speculation) and a prefill chunk (T new tokens over c cached), every operator's FLOPs, bytes and
time are numpy arrays broadcast over the deployments being evaluated. Quantities are per GPU and per
layer; `count` is how many layers of one pipeline stage run the op.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.calibration import Calibration
from llm_codesign.spec.engines import (
    AR_NORM_KERNELS,
    ar_norm_fused,
    attention_time_factor,
    block_fp8_kernel,
    fuses,
    mtp_eh_proj_split,
)
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.model import Attention, Ffn, Layer, ModelSpec, stage_split
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision, executable, gemm_math


@dataclass(frozen=True)
class Batch:
    """Work of one step on one attention-DP rank (one micro-batch)."""
    dec_seqs: object = 0.0
    dec_ctx: object = 0.0  # average context of decoding sequences (tokens already cached)
    dec_tokens_per_seq: object = 1.0  # 1 + draft length when verifying speculation
    pf_tokens: object = 0.0
    pf_seqs: object = 0.0
    pf_ctx: object = 0.0  # average cached context before the prefill chunk


class Op:
    """One operator: FLOPs and bytes per GPU per layer, its time and the time's compute and memory
    parts, and `count`, the layers per stage that run it. FLOPs and bytes, and the time's parts, may
    be given as functions returning both: a search reads neither, so they are computed (and held in
    memory) only when asked."""

    __slots__ = ("name", "kind", "_flops", "_bytes", "_fb", "time", "_t_compute", "_t_memory", "_parts", "count", "part", "math", "weight",
                 "kernels")

    def __init__(self, name, kind, flops, nbytes, *, time, t_compute, t_memory, count, fb=None, parts=None, math=None, weight=None):
        self.name, self.kind = name, kind  # kind: gemm, attention, elementwise, comm
        # part: attention, ffn, moe, lm_head, layer (norms, residuals) or pipeline; math: the tensor-core
        # math a GEMM runs (bf16, fp8, fp4); weight: the number format of the weights it reads
        self.part, self.math, self.weight = "layer", math, weight
        self.kernels = 1.0  # launches per layer (an elementwise operator may stand for several)
        self._flops, self._bytes, self._fb = flops, nbytes, fb
        self.time, self._t_compute, self._t_memory, self._parts, self.count = time, t_compute, t_memory, parts, count

    def _resolve(self):
        if self._fb is not None:
            self._flops, self._bytes = self._fb()
            self._fb = None

    def _resolve_parts(self):
        if self._parts is not None:
            self._t_compute, self._t_memory = self._parts()
            self._parts = None

    @property
    def flops(self):
        self._resolve()
        return self._flops

    @property
    def bytes(self):
        self._resolve()
        return self._bytes

    @property
    def t_compute(self):
        self._resolve_parts()
        return self._t_compute

    @property
    def t_memory(self):
        self._resolve_parts()
        return self._t_memory

    @property
    def total_time(self):
        return self.time * self.count


def distinct_experts(E, k, tokens):
    """E * (1 - (1 - k/E)^tokens): experts whose weights a batch of `tokens` actually reads."""
    tokens = np.asarray(tokens, float)
    x = 1.0 - k / E
    if np.ndim(x) == 0 and 0.0 < x < 1.0:  # (a design sweep's array of expert counts: as it is)
        # past 60 / log2(1 / x) tokens x^tokens < 2^-60 and 1 - x^tokens rounds to 1: the same value at
        # that count, where a power that underflows takes libm's slow path (18x at a prefill's 1e5 tokens)
        tokens = np.minimum(tokens, 60.0 / np.log2(1.0 / x))
    return E * (1.0 - np.power(x, tokens))


def routed_load(E, k, tokens, ep, alpha):
    """Routing as the busiest EP rank sees it: (experts it reads, tokens of its busiest expert,
    tokens routed to it). alpha = 0 is uniform random routing, every rank its mean share (the
    experts read from `distinct_experts`). alpha > 0 draws per-expert loads from a power law x^-alpha,
    as NVIDIA's aiconfigurator draws them for its MoE kernel tables and assumes in its serving
    estimates (collector/helper.py `_generate_power_law_distribution`: E draws on [1, 0.8 T] when
    T k > E, else on [0.01, 2], scaled to T k tokens, an expert capped at T; the busiest rank is the
    one measured). Here at expected quantiles, not draws: the busiest expert at the median of the
    largest of E draws; the busiest rank the larger of the one holding it (with average experts
    besides) and the largest of `ep` normal rank sums (Blom's expected maximum). Both within ~12% of
    the collector's own draws (tests/test_ops.py simulates them)."""
    T = np.asarray(tokens, float)
    S = T * k
    n_loc = E / np.asarray(ep, float)
    if alpha <= 0.0:
        active = np.minimum(n_loc, np.maximum(distinct_experts(E, k, T) / ep, 1.0))
        m_e = np.minimum(S / ep / active, T)
        return active, m_e, m_e * active
    q = 1.0 - (alpha if abs(alpha - 1.0) > 1e-6 else 1.0 + 1e-6)
    dense = S > E
    a = np.where(dense, 1.0, 0.01)
    b = np.where(dense, np.maximum(0.8 * T, 1.001), 2.0)
    A, B = a ** q, b ** q
    mean = q / (q + 1.0) * (b ** (q + 1.0) - a ** (q + 1.0)) / (B - A) if abs(q + 1.0) > 1e-6 else q * np.log(b / a) / (B - A)
    second = q / (q + 2.0) * (b ** (q + 2.0) - a ** (q + 2.0)) / (B - A) if abs(q + 2.0) > 1e-6 else q * np.log(b / a) / (B - A)
    scale = S / (E * mean)
    sd = np.sqrt(np.maximum(second - mean * mean, 0.0)) * scale  # of one expert's tokens
    top = np.minimum(((B - A) * 0.5 ** (1.0 / E) + A) ** (1.0 / q) * scale, T)
    rest = (S - top) / max(E - 1.0, 1.0)
    # experts whose scaled draw rounds to at least one token (the collector rounds counts)
    cut = np.maximum(0.5 / np.maximum(scale, 1e-30), a)
    p_read = np.clip(1.0 - (cut ** q - A) / (B - A), 0.0, 1.0)
    active = np.clip(1.0 + (n_loc - 1.0) * p_read, 1.0, n_loc)
    spread = S / ep + np.sqrt(n_loc) * sd * _blom(ep)
    rank = np.minimum(np.maximum(top + (n_loc - 1.0) * rest, spread), T * np.minimum(k, n_loc))
    return active, top, np.maximum(rank, top)


@lru_cache(maxsize=1)
def _blom_table(n: int = 4096) -> np.ndarray:
    nd = NormalDist()
    return np.array([0.0, 0.0] + [nd.inv_cdf((i - 0.375) / (i + 0.25)) for i in range(2, n)])


def _blom(n):
    """Expected largest of n standard normal draws, Blom's approximation (0 for one draw)."""
    t = _blom_table()
    return t[np.clip(np.rint(np.asarray(n, float)).astype(int), 0, len(t) - 1)]


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


class _At(NamedTuple):
    """Where one layer's operators are priced: the layers per stage that run them, the GPU and its
    calibration."""
    count: object
    gpu: Gpu
    cal: Calibration


# a GEMM on BF16 activations and BF16 weights whatever the deployment's precision (MLA's absorbed
# decode products, the MoE router, the LM head)
_BF16 = {"math": "bf16", "a_b": 2.0, "w_b": 2.0, "weight": "bf16"}


def _gemm(name, m, n, k, at: _At, *, math, a_b, w_b, groups=1.0, distinct=None, eff_scale=1.0, kernel=None, swap_ab=None,
          overhead_s=None, weight=None, fused_quant=None):
    def price():
        return cost.gemm_time(m, n, k, at.gpu, at.cal, math=math, a_bytes=a_b, w_bytes=w_b, groups=groups, distinct_groups=distinct,
                              eff_scale=eff_scale, kernel=kernel, swap_ab=swap_ab, overhead_s=overhead_s, fused_quant=fused_quant)

    # the time's compute and memory parts are priced again where asked (a breakdown, the roofline), not
    # held beside every GEMM of a search's chunk
    rows = m.m if isinstance(m, cost.Tokens) else m
    return Op(name, "gemm", None, None, time=price()[0], t_compute=None, t_memory=None, count=at.count, parts=lambda: price()[1:],
              fb=lambda: cost.gemm_flops_bytes(rows, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=groups, distinct_groups=distinct),
              math=math, weight=weight)


def _expert_gemm(name, n, k, at: _At, *, load, math, a_b, w_b, kernel):
    """The busiest rank's grouped expert GEMM; `load` is routed_load's (experts read, busiest
    expert's rows, the rank's rows) and the routing skew alpha. Grouped GEMMs have their own fixed
    cost (moe_overhead_s, fitted on MoE kernels), not a dense GEMM's. Uniform routing: `active`
    groups of equal rows. Skewed: the busiest expert's rows and the other active experts' mean rows,
    in one launch (one fixed cost), their tiles quantised per expert as the grouped kernel tiles them."""
    active, top, on_rank, alpha = load
    cal = at.cal
    kw = dict(eff_scale=cal.moe_eff_of(kernel), kernel=kernel, swap_ab=True, overhead_s=cal.moe_overhead_s)
    if alpha <= 0.0:
        return _gemm(name, top, n, k, at, math=math, a_b=a_b, w_b=w_b, groups=active, distinct=active, **kw)
    rest_groups = active - 1.0
    m_rest = np.where(rest_groups > 0, (on_rank - top) / np.maximum(rest_groups, 1e-30), 0.0)
    th, ch, mh = cost.gemm_time(top, n, k, at.gpu, cal, math=math, a_bytes=a_b, w_bytes=w_b, **kw)
    tr, cr, mr = cost.gemm_time(m_rest, n, k, at.gpu, cal, math=math, a_bytes=a_b, w_bytes=w_b, groups=rest_groups,
                                distinct_groups=rest_groups, **kw)
    # one launch: the second call's fixed costs (its own, an FP8/FP4 activation quantisation's and a
    # TMA-padded copy's) go
    padded = np.asarray(cost.tma_padded(k, a_b, w_b)) > np.asarray(k)
    fixed = cal.moe_overhead_s + (cal.kernel_overhead_s if cost.quantise_kernel(cal, a_b, kernel=kernel) else 0.0) + np.where(padded, cal.kernel_overhead_s, 0.0)
    t = th + np.where(tr > 0, tr - fixed, 0.0)

    def fb():
        f1, b1 = cost.gemm_flops_bytes(top, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=1.0, distinct_groups=1.0)
        f2, b2 = cost.gemm_flops_bytes(m_rest, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=rest_groups, distinct_groups=rest_groups)
        return f1 + f2, b1 + b2
    return Op(name, "gemm", None, None, time=t, t_compute=ch + cr, t_memory=mh + mr, count=at.count, fb=fb, math=math)


def _tag(ops, part: str, weight: str) -> list:
    """Mark operators with the part of the layer they belong to, and the weight format of GEMMs that
    read the layer's weights (those built on BF16 activations-by-activations or BF16 weights name
    their own, `_gemm(weight=...)`)."""
    for op in ops:
        op.part = part
        if op.kind == "gemm" and op.weight is None:
            op.weight = weight
    return ops


def _comm(name, op, nbytes, n, at: _At):
    """A collective: no FLOPs, no HBM time of its own (its bytes, where it runs, computed when asked)."""
    t = cost.collective_time(op, nbytes, n, at.gpu, at.cal)
    return Op(name, "comm", None, None, time=t, t_compute=0.0, t_memory=0.0, count=at.count,
              fb=lambda: (np.zeros_like(t), np.where(t > 0, np.asarray(nbytes, float), 0.0)))


def _elementwise(name, nbytes, kernels, at: _At):
    """A memory-bound pass of `nbytes` in `kernels` launches."""
    t, tc, tm = cost.elementwise_time(nbytes, kernels, at.gpu, at.cal)
    op = Op(name, "elementwise", 0.0, nbytes, time=t, t_compute=tc, t_memory=tm, count=at.count)
    op.kernels = kernels
    return op


def _attention(name, flops, nbytes, times, at: _At):
    """An attention-core operator of the (time, compute, memory) an attention kernel model priced."""
    t, tc, tm = times
    return Op(name, "attention", flops, nbytes, time=t, t_compute=tc, t_memory=tm, count=at.count)


def _dsa_indexer(a: Attention, b: Batch, at: _At, P: str, *, h, ctx, dec_tok, T, M, kvp, fa: dict) -> list[Op]:
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2-Exp report, sec. 2.1): its own
    projections (replicated on every TP rank, as vLLM and SGLang run them), FP8 scores of every
    query token against every cached index key, and a top-k selection over those scores. `fa`: the
    attention GEMMs' math, byte widths and kernel."""
    gpu, cal = at.gpu, at.cal
    hi, di = a.index_heads, a.index_head_dim
    ops = [_gemm(f"{P}/dsa_q", M, hi * di, a.q_lora_rank or h, at, **fa),
           _gemm(f"{P}/dsa_k_weights", M, di + hi, h, at, **fa)]
    # the elementwise chain between the projections and the scores, as the open engines run it
    # (SGLang nsa_indexer.py _get_q_k_bf16 and the FP8 quantisation after it): LayerNorm of K, RoPE
    # and its write-back into Q and K, a Hadamard rotation of Q and of K, FP8 quantisation of Q and
    # of K with the K-cache store: 8 kernels, each pass over Q (hi x di) or K (di) in BF16
    prep = T * (hi * di * (2.0 + 2.0 + 4.0 + 3.0) + di * (4.0 + 2.0 + 2.0 + 4.0 + 2.0))
    ops.append(_elementwise(f"{P}/dsa_prep", prep, 8.0, at))
    key_b = di * (1.0 + 4.0 / 128.0)
    ctx_l = ctx / kvp
    flops = 2.0 * dec_tok * hi * di * ctx_l
    nbytes = np.asarray(b.dec_seqs, float) * ctx_l * key_b + dec_tok * hi * di
    ops.append(_attention(f"{P}/dsa_scores_decode", flops, nbytes,
                          cost.attention_decode_time(flops, nbytes, gpu, cal, seq_heads=dec_tok, kv_fp8=True), at))
    tp_tok = np.asarray(b.pf_tokens, float)
    seqs = np.maximum(np.asarray(b.pf_seqs, float), 1.0)
    keys = (np.asarray(b.pf_ctx, float) + (tp_tok / seqs + 1.0) / 2.0) / kvp
    pf_flops = 2.0 * tp_tok * hi * di * keys
    pf_bytes = seqs * (np.asarray(b.pf_ctx, float) + tp_tok / seqs) / kvp * key_b + tp_tok * hi * di
    pmath = "fp8" if gpu.supports("fp8") else "bf16"
    ops.append(_attention(f"{P}/dsa_scores_prefill", pf_flops, pf_bytes,
                          cost.attention_prefill_time(np.where(tp_tok > 0, pf_flops, 0.0), pf_bytes, gpu, cal, math=pmath,
                                                      seq_heads=seqs * hi, keys=keys), at))
    # top-k: FP32 scores written by the score kernel and read back by the selection
    ops.append(_elementwise(f"{P}/dsa_topk", (dec_tok * ctx_l + tp_tok * keys) * 8.0, 1.0, at))
    return ops


def _recurrent_mixer(a: Attention, b: Batch, at: _At, P: str, *, h, T, M, dec_tok, tp, fa: dict) -> list[Op]:
    """A recurrent mixer (Gated DeltaNet, Mamba-2) as vLLM runs it (Qwen3NextGatedDeltaNet,
    MambaMixer2), heads split by TP: the input projection, a short causal conv, the recurrent core
    (a per-token update in decode, a chunked scan in prefill), the gated RMSNorm and the output
    projection. The state is a fixed matrix per head, so decode cost does not grow with context.
    There is no KV cache to shard along the sequence, so Helix's KV-parallel GPUs act as TP here
    (`tp` is tp x kvp)."""
    gpu, cal = at.gpu, at.cal
    conv, width = a.conv_dim_per_gpu(tp), a.value_width / tp
    dec_seqs = np.asarray(b.dec_seqs, float)
    pf_tok = np.asarray(b.pf_tokens, float)
    pf_seqs = np.asarray(b.pf_seqs, float)
    state = a.state_values / tp * a.state_bytes
    ops = [_gemm(f"{P}/in_proj", M, (a.in_proj_width - a.conv_dim) / tp + conv, h, at, **fa)]
    # causal conv (read, write) plus each sequence's (kernel-1)-row conv state
    conv_b = T * conv * 2.0 * 2.0 + (dec_seqs + pf_seqs) * (a.conv_kernel - 1) * conv * 2.0 * 2.0
    ops.append(_elementwise(f"{P}/conv", conv_b, 1.0, at))
    io = (conv + width) * 2.0  # the conv channels in and the output out, BF16, per token
    # decode: each sequence's state read once and written per token (vLLM keeps one state per
    # speculative position); the update runs on CUDA cores and is memory-bound at any batch
    d_flops = dec_tok * a.decode_flops_per_token / tp
    d_bytes = dec_seqs * state + dec_tok * state + dec_tok * io
    ops.append(_attention(f"{P}/core_decode", d_flops, d_bytes,
                          cost.attention_decode_time(d_flops, d_bytes, gpu, cal, seq_heads=dec_tok * a.heads / tp), at))
    # prefill: chunk states written and read back in BF16, each sequence's initial and final state
    # in the state dtype; rows span one chunk, the short-row regime of the fitted prefill ramp
    p_flops = pf_tok * a.prefill_flops_per_token / tp
    p_bytes = pf_tok * io + pf_tok / a.chunk * a.state_values / tp * 2.0 * 2.0 + pf_seqs * state * 2.0
    ops.append(_attention(f"{P}/core_prefill", p_flops, p_bytes,
                          cost.attention_prefill_time(np.where(pf_tok > 0, p_flops, 0.0), p_bytes, gpu, cal, math="bf16",
                                                      seq_heads=np.maximum(pf_seqs, 1.0) * a.heads / tp, keys=a.chunk), at))
    # gating (GDN's fused_gdn_gating) and the gated RMSNorm of the output: passes over its rows
    ops.append(_elementwise(f"{P}/gate_norm", T * width * 2.0 * 3.0, 2.0, at))
    ops.append(_gemm(f"{P}/out_proj", M, h, width, at, **fa))
    ops.append(_comm(f"{P}/all_reduce", "all_reduce", T * h * 2.0, tp, at))
    return ops


class _Step(NamedTuple):
    """What one layer's operators share: tokens of the step on this rank, the parallel sizes as
    arrays, and the GEMM formats of the attention and FFN halves (`_gemm` keywords)."""
    h: int
    dec_tok: object  # decode tokens (sequences x tokens per sequence)
    T: object  # every token of this rank's step
    M: cost.Tokens  # T as its GEMMs share it
    tp: object
    kvp: object
    adp: object
    ep: object
    moe_tp: object
    fa: dict  # attention GEMMs: math, activation and weight bytes, kernel
    ff: dict  # FFN and expert GEMMs


def _step(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, b: Batch, *, engine: str = "") -> _Step:
    dec_tok = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq
    act_b = prec.activation.bytes_per_value()
    math_attn = gemm_math(prec.attn, prec.activation, gpu)
    math_ffn = gemm_math(prec.weight, prec.activation, gpu)
    fp4 = gpu.supports("fp4")
    fa = {"math": math_attn, "a_b": act_b, "w_b": prec.attn.bytes_per_weight(),
          "kernel": block_fp8_kernel(engine, gpu.family, cost.gemm_kernel(math_attn, prec.attn.name, fp4_math=fp4))}
    ff = {"math": math_ffn, "a_b": act_b, "w_b": prec.weight.bytes_per_weight(),
          "kernel": block_fp8_kernel(engine, gpu.family, cost.gemm_kernel(math_ffn, prec.weight.name, fp4_math=fp4))}
    T = dec_tok + np.asarray(b.pf_tokens, float)
    return _Step(model.hidden, dec_tok, T, cost.Tokens(T), *(np.asarray(x, float) for x in (sh.tp, sh.kvp, sh.adp, sh.ep, sh.moe_tp)),
                 fa, ff)


def layer_ops(model: ModelSpec, layer: Layer, count, gpu: Gpu, cal: Calibration, *, prec: Precision,
              sh: Plan, b: Batch, prefix: str, parts: tuple[str, ...] = ("attn", "ffn")) -> list[Op]:
    """Operators of one layer; `parts` selects the attention half, the FFN half (with the layer's
    elementwise work) or both, so layers that share one half can be priced once."""
    a = layer.attn if "attn" in parts else Attention("none")
    f = layer.ffn if "ffn" in parts else Ffn("none")
    prec = executable(prec, gpu)[0]  # a format the GPU cannot run is priced as engines map it
    s, at = _step(model, gpu, prec, sh, b, engine=cal.allreduce_engine), _At(count, gpu, cal)
    dense_tp = s.tp * s.kvp  # Helix re-uses the KV-parallel GPUs as TP for everything after attention
    P = f"{prefix}/attn"
    ops: list[Op] = []
    if a.kind in ("gqa", "mla"):
        ops = _softmax_attention(a, b, at, P, s=s, prec=prec)
    elif a.recurrent:
        ops = _recurrent_mixer(a, b, at, P, h=s.h, T=s.T, M=s.M, dec_tok=s.dec_tok, tp=dense_tp, fa=s.fa)
    elif a.kind == "linear":
        ops = [_gemm(f"{P}/linear", s.M, s.h / dense_tp, s.h, at, **s.fa),
               _comm(f"{P}/all_reduce", "all_reduce", s.T * s.h * 2.0, dense_tp, at)]
    _tag(ops, "attention", prec.attn.name)
    F = f"{prefix}/ffn"
    width = 0
    if f.kind in ("dense", "linear"):
        width = f.inter if f.kind == "dense" else 0
        ops += _tag(_dense_ffn(f, F, at, s), "ffn", prec.weight.name)
    elif f.kind == "moe":
        width = f.expert_inter
        ops += _tag(_moe(f, f"{prefix}/moe", at, s), "moe", prec.weight.name)
    if "ffn" not in parts:
        return ops
    # norms, residual adds, activation, RoPE: streamed once each
    ew_bytes = s.T * (6.0 * s.h + 3.0 * width / np.maximum(dense_tp, 1.0)) * 2.0
    kernels = cal.elementwise_kernels_per_layer
    fused = ar_norm_fused(cal.allreduce_engine, model.architecture, adp=s.adp, nbytes=s.T * s.h * 2.0, n=dense_tp, family=gpu.family)
    kernels = np.where(fused, np.maximum(kernels - AR_NORM_KERNELS, 0.0), kernels)  # the norms run in the all-reduces
    ops.append(_elementwise(f"{prefix}/elementwise", ew_bytes, kernels, at))
    return ops


def _softmax_attention(a: Attention, b: Batch, at: _At, P: str, *, s: _Step, prec: Precision) -> list[Op]:
    """GQA or MLA: the projections, the attention core over the cache (decode) and the chunk
    (prefill), Helix's exchange, the output projection and its all-reduce."""
    h, T, tp, kvp = s.h, s.T, s.tp, s.kvp
    heads_l = a.heads / tp
    kv_l = np.ceil(a.kv_heads / tp)  # KV heads replicate when TP exceeds them
    kv_b = prec.kv.bytes_per_value()
    ops, per_tok_kv, qk_d, v_d = (_gqa_proj if a.kind == "gqa" else _mla_proj)(a, b, at, P, s=s, kv_b=kv_b)
    # attention core, decode part: every decode token reads its sequence's cache (sharded by Helix)
    ctx = np.asarray(b.dec_ctx, float)
    if a.index_topk:
        ops.extend(_dsa_indexer(a, b, at, P, h=h, ctx=ctx, dec_tok=s.dec_tok, T=T, M=s.M, kvp=kvp, fa=s.fa))
        ctx = np.minimum(ctx, a.index_topk)  # MLA then reads only the selected tokens
    ops.append(_core_decode(a, b, at, P, s=s, ctx=ctx, prec=prec, kv=(kv_l, per_tok_kv, qk_d + v_d)))
    ops.append(_core_prefill(a, b, at, P, s=s, prec=prec, kv=(per_tok_kv, qk_d + v_d)))
    if np.any(kvp > 1):
        # Helix: partial outputs and softmax statistics exchanged across KV-parallel ranks
        ops.append(_helix_exchange(ops[-2:], b, at, P, nbytes=T * heads_l * (v_d + 1) * 2.0, kvp=kvp))
    dense_tp = tp * kvp
    # the attention output is quantised inside the attention kernel only where the engine fuses it (attn_out)
    ops.append(_gemm(f"{P}/o", s.M, h, a.heads * v_d / dense_tp, at, **s.fa, fused_quant=fuses(at.cal.allreduce_engine, "attn_out")))
    ops.append(_comm(f"{P}/all_reduce", "all_reduce", T * h * 2.0, dense_tp, at))
    return ops


def _helix_exchange(core: list[Op], b: Batch, at: _At, P: str, *, nbytes, kvp) -> Op:
    """Helix's all-to-all of partial attention outputs. HOP-B (Bhatia et al. 2025, arXiv:2507.07120)
    sends each request's exchange while the next request's attention runs: over the step's B requests a
    two-stage pipeline exposes c + (B-1) * max(c - a, 0), c one request's message (each pays the
    collective's fixed latency) and a its attention (`core`: this layer's attention kernels over B). The
    better of that and one exchange after all the attention (C) is what runs; one request exposes C."""
    op = _comm(f"{P}/helix_all_to_all", "all_to_all", nbytes, kvp, at)
    B = np.maximum(np.asarray(b.dec_seqs, float) + np.asarray(b.pf_seqs, float), 1.0)
    a = sum(o.time for o in core) / B
    c = cost.collective_time("all_to_all", np.asarray(nbytes, float) / B, kvp, at.gpu, at.cal)
    op.time = np.minimum(op.time, c + (B - 1.0) * np.maximum(c - a, 0.0))
    return op


def _gqa_proj(a: Attention, b: Batch, at: _At, P: str, *, s: _Step, kv_b):
    """GQA's fused QKV projection (and Qwen3.5's cross-head QK norm): the operators, KV bytes per
    cached token on this GPU, and the query-key and value widths of a head."""
    kv_l = np.ceil(a.kv_heads / s.tp)
    kv_out = kv_l * (a.head_dim + (0 if a.k_eq_v else a.v_head_dim))
    q_out = a.heads / s.tp * a.head_dim * (2 if a.out_gate else 1)  # plus the output gate
    ops = [_gemm(f"{P}/qkv", s.M, q_out + kv_out, s.h, at, **s.fa)]
    if a.qk_norm_across_heads:  # fp32 sums of squares of Q and K per token, reduced over TP
        ops.append(_comm(f"{P}/qk_norm_all_reduce", "all_reduce", s.T * 2.0 * 4.0, s.tp, at))
    return ops, kv_l * (a.head_dim + (0 if a.k_eq_v else a.v_head_dim)) * kv_b, a.head_dim, a.v_head_dim


def _mla_proj(a: Attention, b: Batch, at: _At, P: str, *, s: _Step, kv_b):
    """MLA's low-rank projections, the absorbed decode products and the prefill's up-projection of
    the latent: the operators, latent bytes per cached token, and the query-key and value widths."""
    M, h, fa, dec_tok = s.M, s.h, s.fa, s.dec_tok
    heads_l = a.heads / s.tp
    qk = a.nope_dim + a.rope_dim
    ops = []
    if a.q_lora_rank:
        ops.append(_gemm(f"{P}/q_a", M, a.q_lora_rank, h, at, **fa))
        ops.append(_gemm(f"{P}/q_b", M, heads_l * qk, a.q_lora_rank, at, **fa))
    else:
        ops.append(_gemm(f"{P}/q", M, heads_l * qk, h, at, **fa))
    ops.append(_gemm(f"{P}/kv_a", M, a.kv_lora_rank + a.rope_dim, h, at, **fa))
    # decode: weight absorption, attention runs in the latent space (DeepSeek-V2 sec. 2.1.2)
    dec = cost.Tokens(dec_tok)
    ops.append(_gemm(f"{P}/mla_q_absorb", dec, a.kv_lora_rank, a.nope_dim, at, groups=heads_l, **_BF16))
    ops.append(_gemm(f"{P}/mla_v_up", dec, a.v_head_dim, a.kv_lora_rank, at, groups=heads_l, **_BF16))
    # prefill: latent up-projected to per-head K and V for the chunk and its cached context
    kv_rows = np.asarray(b.pf_tokens, float) + np.asarray(b.pf_seqs, float) * b.pf_ctx
    ops.append(_gemm(f"{P}/mla_kv_up", kv_rows, heads_l * (a.nope_dim + a.v_head_dim), a.kv_lora_rank, at, **fa))
    per_tok_kv = (a.kv_lora_rank + a.rope_dim) * kv_b + 0 * s.tp  # latent is replicated across TP
    return ops, per_tok_kv, qk, a.v_head_dim


def _core_decode(a: Attention, b: Batch, at: _At, P: str, *, s: _Step, ctx, prec: Precision, kv) -> Op:
    """Decode attention: every decode token reads its sequence's cache, `ctx` keys (after a sparse
    selection) cut to the window or attention chunk and sharded by Helix; `kv` is (KV heads per
    GPU, cached bytes per token, query-key plus value width of a head)."""
    gpu, cal = at.gpu, at.cal
    kv_l, per_tok_kv, qkv_d = kv
    dec_tok, heads_l = s.dec_tok, a.heads / s.tp
    if a.window:
        ctx = np.minimum(ctx, a.window)
    if a.attn_chunk:
        ctx = chunk_keys(ctx, a.attn_chunk)
    ctx_l = ctx / s.kvp
    if a.kind == "mla":
        dec_flops = 2.0 * dec_tok * heads_l * ctx_l * (2 * a.kv_lora_rank + a.rope_dim)
    else:
        dec_flops = 2.0 * dec_tok * heads_l * ctx_l * qkv_d
    dec_bytes = np.asarray(b.dec_seqs, float) * ctx_l * per_tok_kv + dec_tok * heads_l * qkv_d * 2.0
    dcal = replace(cal, attn_decode_flops_eff=cal.mla_decode_flops_eff) if a.kind == "mla" else cal
    kv_fp8 = prec.kv.math == "fp8"
    items = (cost.decode_work_items(dec_tok, kv_l, heads_l, cal, kv_fp8 and gpu.supports("fp8")) if a.kind == "gqa"
             else dec_tok * heads_l)
    times = cost.attention_decode_time(dec_flops, dec_bytes, gpu, dcal, seq_heads=items, kv_fp8=kv_fp8,
                                       group=heads_l / kv_l if a.kind == "gqa" else 1.0)
    f = attention_time_factor(cal.allreduce_engine, gpu.family, _attn_kind(a), "decode", kv_fp8=kv_fp8, dec_tokens=dec_tok)
    return _attention(f"{P}/core_decode", dec_flops, dec_bytes, tuple(x * f for x in times), at)


def _core_prefill(a: Attention, b: Batch, at: _At, P: str, *, s: _Step, prec: Precision, kv) -> Op:
    """Prefill attention, causal: a chunk of T_p tokens from s sequences over c cached tokens each;
    `kv` is (cached bytes per token, query-key plus value width of a head)."""
    per_tok_kv, qkv_d = kv
    heads_l = a.heads / s.tp
    tp_tok = np.asarray(b.pf_tokens, float)
    seqs = np.maximum(np.asarray(b.pf_seqs, float), 1.0)
    keys = np.asarray(b.pf_ctx, float) + (tp_tok / seqs + 1.0) / 2.0
    if a.index_topk:
        keys = np.minimum(keys, a.index_topk)
    if a.window:
        keys = np.minimum(keys, a.window)
    held = np.asarray(b.pf_ctx, float)  # cached keys the chunk's queries read
    if a.attn_chunk:
        # the chunk's queries at positions [c, c + t) attend within their own attention chunk
        c0, span = np.asarray(b.pf_ctx, float), tp_tok / seqs
        keys = (_chunk_offsets(c0 + span, a.attn_chunk) - _chunk_offsets(c0, a.attn_chunk)) / np.maximum(span, 1.0) + 1.0
        held = np.mod(c0, a.attn_chunk)
    keys = keys / s.kvp
    pf_flops = 2.0 * tp_tok * heads_l * keys * qkv_d
    pf_bytes = seqs * (held + tp_tok / seqs) / s.kvp * per_tok_kv + tp_tok * heads_l * qkv_d * 2.0
    pmath = "fp8" if (prec.kv.math == "fp8" and at.gpu.supports("fp8")) else "bf16"
    times = cost.attention_prefill_time(np.where(tp_tok > 0, pf_flops, 0.0), pf_bytes, at.gpu, at.cal, math=pmath,
                                        seq_heads=seqs * heads_l, keys=keys, scores=tp_tok * heads_l * keys)
    f = attention_time_factor(at.cal.allreduce_engine, at.gpu.family, _attn_kind(a), "prefill", kv_fp8=prec.kv.math == "fp8")
    return _attention(f"{P}/core_prefill", pf_flops, pf_bytes, tuple(x * f for x in times), at)


def _attn_kind(a: Attention) -> str:
    """The attention kernel kind engines pick a kernel for (engines.ATTENTION_KERNELS)."""
    return "dsa" if a.index_topk else a.kind


def _dense_ffn(f: Ffn, F: str, at: _At, s: _Step) -> list[Op]:
    """A dense (gated) MLP or a single linear map, sharded by TP (and Helix's KV-parallel GPUs)."""
    dense_tp = s.tp * s.kvp
    if f.kind == "dense":
        ops = [_gemm(f"{F}/gate_up", s.M, (f.mats - 1) * f.inter / dense_tp, s.h, at, **s.ff),
               _gemm(f"{F}/down", s.M, s.h, f.inter / dense_tp, at, **s.ff)]
    else:
        ops = [_gemm(f"{F}/linear", s.M, s.h / dense_tp, s.h, at, **s.ff)]
    ops.append(_comm(f"{F}/all_reduce", "all_reduce", s.T * s.h * 2.0, dense_tp, at))
    return ops


def _moe(f: Ffn, M: str, at: _At, s: _Step) -> list[Op]:
    """A mixture of experts: the router, shared experts, the busiest EP rank's grouped expert GEMMs,
    token permutation and the token exchange (all-to-all under EP / attention-DP, else all-reduce)."""
    T, h, ff, ep = s.T, s.h, s.ff, s.ep
    dense_tp, stage_gpus = s.tp * s.kvp, s.tp * s.adp * s.kvp
    T_all = T * s.adp  # the MoE group sees every attention-DP rank's tokens
    ops = [_gemm(f"{M}/router", s.M, f.experts, h, at, **_BF16)]
    # the top-k selection over the router's logits, a kernel of its own in every engine (TensorRT-LLM's
    # routing / noaux_tc kernels, vLLM's fused_topk and grouped_topk, SGLang's biased_grouped_topk): it
    # reads each token's FP32 expert scores and writes top_k ids and weights
    ops.append(_elementwise(f"{M}/topk", np.where(T > 0, T * (f.experts + 2.0 * f.top_k) * 4.0, 0.0), 1.0, at))
    if np.any(f.shared_inter):
        ops.append(_gemm(f"{M}/shared_gate_up", s.M, (f.mats - 1) * f.shared_inter / dense_tp, h, at, **ff))
        ops.append(_gemm(f"{M}/shared_down", s.M, h, f.shared_inter / dense_tp, at, **ff))
    # the busiest EP rank sets the step: the experts it reads, its busiest expert's tokens and its
    # own (routed_load; cal.moe_routing_alpha is the routing skew, 0 uniform)
    alpha = at.cal.moe_routing_alpha
    active, top, on_rank = routed_load(f.experts, f.top_k, T_all, ep, alpha)
    skew = 1.0 if alpha <= 0.0 else on_rank / np.maximum(T_all * f.top_k / ep, 1e-30)  # busiest rank over the mean
    for name, n_dim, k_dim in (("experts_gate_up", (f.mats - 1) * f.expert_inter / s.moe_tp, h), ("experts_down", h, f.expert_inter / s.moe_tp)):
        ops.append(_expert_gemm(f"{M}/{name}", n_dim, k_dim, at, load=(active, top, on_rank, alpha), **ff))
    # token permutation into expert order and back (gather/scatter), one launch each way
    perm = np.where(T_all > 0, skew * (T_all / ep * f.top_k * h * (ff["a_b"] + 2.0)), 0.0)
    ops.append(_elementwise(f"{M}/permute", perm, 2.0, at))
    # token exchange. Without attention DP every rank already holds every token (the attention
    # all-reduce): expert-parallel ranks run their experts on them and one all-reduce sums the outputs.
    # Under attention DP with EP the tokens go to their experts' ranks and back (all-to-all dispatch and
    # combine: vLLM's use_all2all_kernels, dp_size > 1 and use_ep; TensorRT-LLM's NVLink one-sided
    # all-to-all); attention DP over a tensor-parallel MoE gathers every rank's tokens and reduce-scatters
    # the outputs (TensorRT-LLM's allgather / reducescatter path)
    a2a = (s.adp > 1) & (ep > 1)
    gather = (s.adp > 1) & (ep <= 1)
    sent = skew * (T / dense_tp * f.top_k * h)  # what the busiest rank receives
    ops.append(_comm(f"{M}/dispatch", "all_to_all", np.where(a2a, sent * ff["a_b"], 0.0), stage_gpus, at))
    ops.append(_comm(f"{M}/combine", "all_to_all", np.where(a2a, sent * 2.0, 0.0), stage_gpus, at))
    ops.append(_comm(f"{M}/all_gather", "all_gather", np.where(gather, T_all * h * ff["a_b"], 0.0), stage_gpus, at))
    ops.append(_comm(f"{M}/reduce_scatter", "reduce_scatter", np.where(gather, T_all * h * 2.0, 0.0), stage_gpus, at))
    ops.append(_comm(f"{M}/all_reduce", "all_reduce", np.where(s.adp > 1, 0.0, T * h * 2.0), stage_gpus, at))
    return ops


def forward_ops(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, sh: Plan, *, b: Batch) -> list[Op]:
    """All operators of one step on one GPU of the slowest pipeline stage (the LM head counted where
    that stage is the last, which holds it)."""
    pp = np.asarray(sh.pp, float)
    parts: list[tuple[list[Op], tuple[int, ...]]] = []  # operators priced per layer, and the groups they serve
    multi = len(model.groups) > 1
    if not multi:
        layer, n = model.groups[0]
        parts.append((layer_ops(model, layer, 1.0, gpu, cal, prec=prec, sh=sh, b=b, prefix="layer"), (0,)))
    else:
        # layers that share an attention (or FFN) half are priced once, with the summed layer count
        # (DeepSeek's dense and MoE layers share MLA; gpt-oss's sliding and full layers share experts)
        for part, key in (("attn", lambda layer: layer.attn), ("ffn", lambda layer: layer.ffn)):
            seen: dict = {}
            for i, (layer, _) in enumerate(model.groups):
                seen.setdefault(key(layer), [i, layer, []])[2].append(i)
            for i, layer, members in seen.values():
                parts.append((layer_ops(model, layer, 1.0, gpu, cal, prec=prec, sh=sh, b=b, prefix=f"layer{i}", parts=(part,)), tuple(members)))
    # LM head: the sampled positions only (every decode token, one per prefilled sequence)
    logits = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq + np.asarray(b.pf_seqs, float)
    dense_tp = np.asarray(sh.tp, float) * np.asarray(sh.kvp, float)
    head = _tag([_gemm("lm_head", logits, model.vocab / dense_tp, model.hidden, _At(np.ones_like(pp), gpu, cal), **_BF16)], "lm_head", "bf16")
    counts, head_on = _slowest_stage(model, pp, parts, head[0])
    ops: list[Op] = []
    for (p_ops, _), c in zip(parts, counts, strict=True):
        for op in p_ops:
            op.count = c
        ops += p_ops
    head[0].count = head_on
    ops += head
    if np.any(pp > 1):
        T = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq + np.asarray(b.pf_tokens, float)
        ops += _tag([_comm("pp/send_recv", "p2p", np.where(pp > 1, T * model.hidden * 2.0, 0.0), np.where(pp > 1, 2.0, 1.0),
                           _At(np.ones_like(pp), gpu, cal))], "pipeline", "bf16")
    return ops


def _slowest_stage(model: ModelSpec, pp, parts, head: Op):
    """Layers per part (and 0/1 for the LM head) of the stage that sets the pipeline's pace. Engines
    split consecutive layers (ModelSpec.stage_counts); a stage is as slow as its layers plus, on the
    last, the LM head, and every micro-batch waits for the slowest (GPipe-style 1F1B schedules run
    at the slowest stage's rate). Where every stage holds the same layers (pp dividing a regular
    stack) that is the last, with n / pp layers of each group, as before uneven stages were priced."""
    if len(model.groups) == 1:  # a regular stack (layer counts may be arrays in a shape sweep)
        n = np.asarray(model.groups[0][1], float)
        # pp dividing L, and a one-layer draft (MTP, EAGLE) spread over the target's stages as before
        even = (n % pp == 0) | (n < pp)
        hi, lo = np.ceil(n / pp), np.floor(n / pp)
        t = step_time(parts[0][0])
        last = even | (lo * t + head.time > hi * t)  # the last stage: floor(L / pp) layers and the LM head
        return [np.where(even, n / pp, np.where(last, lo, hi))], last.astype(float)
    values, inv = np.unique(pp, return_inverse=True)
    inv = inv.reshape(pp.shape)
    members = [m for _, m in parts]
    cands = [_stage_candidates(model, int(v), members) for v in values]
    # where one candidate stands (every stage alike, or a draft spread over the stages) it is the count
    counts = [np.array([c[-1][j] for c in cands], float)[inv] for j in range(len(parts))]
    head_on = np.ones_like(pp)
    uneven = [i for i, c in enumerate(cands) if len(c) > 1]
    if not uneven:
        return counts, head_on
    return _slowest_of(pp, inv=inv, cands=cands, uneven=uneven, parts=parts, head=head, counts=counts)


def _slowest_of(pp, *, inv, cands, uneven, parts, head: Op, counts):
    """_slowest_stage where some pp (`uneven`, indices into `cands`, each pp's candidates; `inv`, each
    element's pp among them) splits the layers unevenly: each of those elements' slowest candidate,
    priced at this step's per-layer time of each part."""
    # per-layer time of each part, at this step's batch, on one flat grid
    t_part = [step_time(p_ops) for p_ops, _ in parts]
    shape = np.broadcast_shapes(pp.shape, np.shape(head.time), *(np.shape(t) for t in t_part))
    t_part = [np.broadcast_to(t, shape) for t in t_part]
    counts = [np.broadcast_to(c, shape).copy() for c in counts]
    head_on = np.ones(shape)
    # each uneven pp's candidates in one table, padded to the most with copies of its first (the
    # first of equal times wins below, so a copy never does) and its last stage, the one with the LM
    # head, last
    n_c = max(len(cands[i]) for i in uneven)
    table = np.zeros((len(cands), n_c, len(parts)))
    for i in uneven:
        c = cands[i]
        table[i] = [*c[:-1], *[c[0]] * (n_c - len(c)), c[-1]]
    # the elements at those pp: whole rows where pp varies along the first axis only (a search's
    # plans), a copy of those rows cheaper than a boolean gather of the flat grid
    sel = np.isin(inv, uneven)
    if 0 < pp.ndim == len(shape) and pp.shape[0] == shape[0] and all(d == 1 for d in pp.shape[1:]):
        at = np.nonzero(sel.reshape(-1))[0]
        row = inv.reshape(-1)[at].reshape((-1,) + (1,) * (len(shape) - 1))
    else:
        at = np.broadcast_to(sel, shape)
        row = np.broadcast_to(inv, shape)[at]
    tm = [t[at] for t in t_part]
    # the slowest candidate, the first of equal times (a running maximum: cheaper than argmax across
    # a stack of the candidates)
    slowest, idx = None, None
    for c in range(n_c):
        t = sum(table[row, c, j] * t for j, t in enumerate(tm))
        if c == n_c - 1:
            t = t + np.broadcast_to(head.time, shape)[at]
        if slowest is None:
            slowest, idx = t, np.zeros(t.shape, np.intp)
        else:
            idx[t > slowest] = c
            slowest = np.maximum(slowest, t)
    for j in range(len(parts)):
        counts[j][at] = table[row, idx, j]
    head_on[at] = idx == n_c - 1
    return counts, head_on


def _stage_candidates(model: ModelSpec, pp: int, members: list[tuple[int, ...]]) -> tuple[tuple, ...]:
    """Layers per part of the stages that may set a pipeline of `pp` stages' pace: each distinct
    composition at its first stage, then the last stage (which adds the LM head); one, the count
    itself, where every stage holds the same layers or a one-layer draft (MTP, EAGLE) is spread over
    the target's stages."""
    return _candidates(tuple(int(n) for _, n in model.groups), model.layout, pp, tuple(members))


@lru_cache(maxsize=1024)  # a search asks for every pp of every chunk
def _candidates(counts: tuple[int, ...], layout: tuple[int, ...], pp: int, members: tuple[tuple[int, ...], ...]) -> tuple[tuple, ...]:
    if pp > sum(counts):
        return (tuple(sum(counts[g] for g in m) / pp for m in members),)
    stages = stage_split(counts, layout, pp)
    per = [tuple(sum(st[g] for g in m) for m in members) for st in (*dict.fromkeys(stages[:-1]), stages[-1])]
    if all(p == per[-1] for p in per):
        return (tuple(float(x) for x in per[-1]),)
    return (*dict.fromkeys(per[:-1]), per[-1])


def mtp_module_ops(model: ModelSpec, gpu: Gpu, cal: Calibration, sh: Plan, *, tokens, seqs) -> list[Op]:
    """What one DeepSeek MTP pass over `tokens` of `seqs` sequences runs beside its decoder layer and
    the shared LM head (DeepSeek-V3 report, sec. 2.2): RMSNorms of the previous hidden state and of the
    token's embedding, their concatenation projected back to the hidden size by eh_proj (BF16 [2h, h],
    split over TP with one more all-reduce where engines.mtp_eh_proj_split), and greedy sampling of one token per sequence (TensorRT-LLM
    _torch/speculative/mtp.py draft_sampler: an argmax over each rank's vocabulary slice, then the
    (index, value) pairs gathered)."""
    at = _At(np.ones_like(np.asarray(sh.pp, float)), gpu, cal)
    h, tp = model.hidden, np.asarray(sh.tp, float) * np.asarray(sh.kvp, float)
    tokens, seqs = np.asarray(tokens, float), np.asarray(seqs, float)
    split = mtp_eh_proj_split(cal.allreduce_engine, sh.adp)
    return _tag([_elementwise("mtp/norms", tokens * h * 2.0 * 4.0, 2.0, at),  # two vectors read and written in BF16
                 _gemm("mtp/eh_proj", tokens, h, np.where(split, 2.0 * h / tp, 2.0 * h), at, **_BF16),
                 _comm("mtp/eh_proj_all_reduce", "all_reduce", np.where(split, tokens * h * 2.0, 0.0), tp, at),
                 _elementwise("mtp/argmax", seqs * model.vocab / tp * 4.0, 1.0, at),  # this rank's FP32 logits
                 _comm("mtp/argmax_gather", "all_gather", seqs * 8.0 * tp, tp, at)], "lm_head", "bf16")


def step_time(ops: list[Op]):
    """The operators' times over the layers that run them, summed in order: consecutive operators
    that share one `count` (forward_ops gives each part's operators the same array) summed first and
    multiplied once, in float64 (a search's chunk: one full-size multiply per part, not per operator;
    within ~1e-16 of multiplying each). In place where the sum already has the whole shape and dtype."""
    total = 0
    i = 0
    while i < len(ops):
        c, j = ops[i].count, i + 1
        while j < len(ops) and ops[j].count is c:
            j += 1
        t = _add(np.float64(0.0), (op.time for op in ops[i:j])) * c if j - i > 1 else ops[i].time * c
        total = _add(total, (t,))
        i = j
    return total


def _add(total, terms):
    """total + each term, in place where total already has the sum's shape and dtype."""
    for t in terms:
        if isinstance(total, np.ndarray) and total.shape == np.broadcast_shapes(total.shape, np.shape(t)) and np.result_type(total, t) == total.dtype:
            np.add(total, t, out=total)
        else:
            total = total + t
    return total


def launches(ops: list[Op]):
    """Kernel launches of one step: each operator's own (one, or an elementwise operator's count, less
    what the engine fused away) wherever it runs."""
    shape = np.broadcast_shapes(*(np.shape(op.time) for op in ops), *(np.shape(op.count) for op in ops))
    n = np.zeros(shape)
    everywhere = 0.0  # the operators that run at every element, at their counts' own (per-plan) shape
    for op in ops:  # in place: a search's whole chunk per operator
        t = np.asarray(op.time)
        if t.size and t.min() > 0:
            everywhere = everywhere + op.count * op.kernels
        else:
            np.add(n, op.count * op.kernels, out=n, where=t > 0)
    return n + everywhere
