"""Operator builders of the token mixers (spec.kinds), one registered per type (ops.op_builder):
GQA and MLA (with DeepSeek's sparse attention) over the KV cache, the recurrent mixers, a linear map
and none. Each returns the mixer's operators per GPU for one step (ops.layer_ops tags and counts them)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.arrays import Tokens
from llm_codesign.cost.ops import _BF16, Batch, Op, Site, _At, _attention, _comm, _comm_of, _elementwise, _gemm, _Step, op_builder
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import DSA, GQA, MLA, Attention, GatedDeltaNet, LinearMixer, Mamba2, NoMixer, Recurrent, causal_keys
from llm_codesign.spec.precision import Precision


@op_builder(GQA, part="attention")
def gqa_ops(a: GQA, P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """GQA's fused QKV projection (and Qwen3.5's cross-head QK norm), then the attention (_attend)."""
    kv_l = np.ceil(a.kv_heads / s.tp)  # KV heads replicate when TP exceeds them
    q_out = a.heads / s.tp * a.head_dim * (2 if a.out_gate else 1)  # plus the output gate
    ops = [_gemm(P / "qkv", s.M, q_out + kv_l * a.kv_width, s.h, at, **s.fq)]
    if a.qk_norm_across_heads:  # fp32 sums of squares of Q and K per token, reduced over TP
        ops.append(_comm(P / "qk_norm_all_reduce", "all_reduce", s.T * 2.0 * 4.0, s.tp, at, norm=False))
        # which splits the norm in two: the sums of squares, a pass over Q and K (BF16) before it, and the scaling after,
        # fused with RoPE as the whole norm is on one GPU (vLLM's MiniMaxText01RMSNormTP.forward_qk, torch.compiled: its
        # all-reduce is an opaque op, so Inductor ends a kernel at it; layers/mamba/linear_attn.py:82-101, models/minimax_m2.py:235@0.17.0)
        qk_bytes = s.T * (a.heads / s.tp + kv_l) * a.head_dim * 2.0
        ops.append(_elementwise(P / "qk_norm_sums", np.where(s.tp > 1, qk_bytes, 0.0), 1.0, at))
    heads_l = a.heads / s.tp
    # decode: FLOPs per key of the query-key and value widths, query heads per KV head; its kernel's work items (GqaDecode)
    return _attend(a, ops, P, at=at, s=s, b=b, prec=prec, per_tok_kv=a.kv_values_per_gpu(s.tp) * prec.kv.bytes_per_value(),
                   qk_d=a.head_dim, v_d=a.v_head_dim, decode=(a.head_dim + a.v_head_dim, None, heads_l / kv_l, at.cal, kv_l))


@op_builder(MLA, part="attention")
def mla_ops(a: MLA, P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """MLA: its projections (_mla_proj), then the attention over the latent cache (_attend)."""
    return _mla(a, _mla_proj(a, b, at, P, s=s), P, at=at, s=s, b=b, prec=prec)


@op_builder(DSA, part="attention")
def dsa_ops(a: DSA, P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """DeepSeek Sparse Attention: MLA's projections, the lightning indexer over the whole context
    (_dsa_indexer), then MLA over the selected tokens."""
    ops = _mla_proj(a, b, at, P, s=s)
    ops.extend(_dsa_indexer(a, b, at, P, s=s))
    return _mla(a, ops, P, at=at, s=s, b=b, prec=prec)


def _mla(a: MLA, ops: list[Op], P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """MLA's attention after its projections: decode in the latent space, every head reading the one
    replicated latent (2 x kv_lora_rank + rope_dim FLOPs per key, its own decode efficiency)."""
    heads_l = a.heads / s.tp
    dcal = replace(at.cal, attn_decode_flops_eff=at.cal.mla_decode_flops_eff, attn_decode_head_s=at.cal.decode_item_s)
    # the dense kernel's CTAs (mla_decode_work_items); DSA's sparse kernel one item per token and head (its head tiles,
    # selectSparseMlaGenerationKernel fmhaKernels.cuh:776-851@fb28d72, are not priced yet)
    items = s.dec_tok * heads_l if a.kernel != "mla" else \
        cost.mla_decode_work_items(s.dec_tok, heads_l, a.decode_keys(np.asarray(b.dec_ctx, float)) / s.kvp, at.gpu,
                                   seqs=b.dec_seqs)
    # the preprocessing kernel before it (TensorRT-LLM's mla_rope_generation, timed with the kernel in the MLA tables:
    # aiconfigurator collector/trtllm/collect_mla.py:589-625@095f58a5): RoPE on the query's rope part (BF16 read and
    # written), the token's latent written to the cache and, on an FP8 cache, the whole latent query quantised to FP8
    # for the kernel's FP8 math (its quant_q_buffer, read BF16 and written FP8). Its launch is in attn_overhead_s.
    latent = a.kv_lora_rank + a.rope_dim
    kv_b = prec.kv.bytes_per_value()
    q_fp8 = prec.kv.math == "fp8"
    rope_b = heads_l * a.rope_dim * 4.0 + latent * (2.0 + kv_b) + (heads_l * latent * 3.0 if q_fp8 else 0.0)
    ops.append(_elementwise(P / "mla_rope", s.dec_tok * rope_b, 0.0, at))
    # absorbed MLA attends in the latent space: each head's partial output Helix exchanges is kv_lora_rank wide
    # (TensorRT-LLM helixAllToAll: [..., cp_size, kv_lora_rank]), up-projected to v_head_dim only after it
    return _attend(a, ops, P, at=at, s=s, b=b, prec=prec, per_tok_kv=a.kv_values_per_gpu(s.tp) * prec.kv.bytes_per_value(),
                   qk_d=a.head_dim, v_d=a.v_head_dim, decode=(2 * a.kv_lora_rank + a.rope_dim, items, 1.0, dcal, None),
                   x_d=a.kv_lora_rank, qo_b=latent * (1.0 if q_fp8 else 2.0) + a.kv_lora_rank * 2.0)


def _attend(a: Attention, ops: list[Op], P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision, per_tok_kv, qk_d, v_d, decode,
            x_d=None, qo_b=None) -> list[Op]:
    """After a softmax attention's projections (`ops`): the attention core over the cache (decode)
    and the chunk (prefill), Helix's exchange, the output projection and its all-reduce. `per_tok_kv`:
    cached bytes per token on this GPU; `qk_d`, `v_d`: a head's query-key and value widths; `decode`:
    the decode core's (FLOPs width per key, work items (None for GQA: its kernel's, GqaDecode), query heads per KV
    head, calibration, KV heads per GPU whose keys GQA's kernel splits and reads in tiles, None for MLA's latent
    kernels, priced unsplit); `x_d`: the width of a head's partial output Helix exchanges (v_d where None); `qo_b`: bytes
    of a decode head's query read and output written (BF16 at qk_d and v_d where None)."""
    h, T, tp, kvp = s.h, s.T, s.tp, s.kvp
    heads_l = a.heads / tp
    ops.append(_core_decode(a, b, at, P, s=s, prec=prec, per_tok_kv=per_tok_kv, qo_b=(qk_d + v_d) * 2.0 if qo_b is None else qo_b,
                            decode=decode))
    ops.append(_core_prefill(a, b, at, P, s=s, prec=prec, per_tok_kv=per_tok_kv, qkv_d=qk_d + v_d))
    if np.any(kvp > 1):
        # Helix: partial outputs (16-bit) and each head's two FP32 softmax statistics exchanged across
        # KV-parallel ranks (TensorRT-LLM helixAllToAll)
        x_d = v_d if x_d is None else x_d
        ops.append(_helix_exchange(ops[-2:], b, at, P, nbytes=T * heads_l * (x_d * 2.0 + 8.0), kvp=kvp))
    dense_tp = tp * kvp
    # the attention output is quantised inside the attention kernel only where the engine fuses it (attn_out)
    ops.append(_gemm(P / "o", s.M, h, a.heads * v_d / dense_tp, at, **s.fa, fused_quant=at.engine is not None and at.engine.fuses("attn_out")))
    ops.append(_comm(P / "all_reduce", "all_reduce", T * h * 2.0, dense_tp, at))
    return ops


def _helix_exchange(core: list[Op], b: Batch, at: _At, P: Site, *, nbytes, kvp) -> Op:
    """Helix's all-to-all of partial attention outputs: one exchange after all the attention (C). Where
    the engine runs HOP-B (Bhatia et al. 2025, arXiv:2507.07120; Engine.fusions "hop_b") it sends each
    request's exchange while the next request's attention runs: over the step's B requests a two-stage
    pipeline exposes c + (B-1) * max(c - a, 0), c one request's message (each pays the collective's fixed
    latency) and a its attention (`core`: this layer's attention kernels over B), and the better of that
    and C runs; one request exposes C."""
    whole = cost.collective_time("all_to_all", nbytes, kvp, at.gpu, at.cal, engine=at.engine)
    if at.engine is None or not at.engine.fuses("hop_b"):
        return _comm_of(P / "helix_all_to_all", whole, nbytes, at)
    B = np.maximum(np.asarray(b.dec_seqs, float) + np.asarray(b.pf_seqs, float), 1.0)
    a = sum(o.time for o in core) / B
    c = cost.collective_time("all_to_all", np.asarray(nbytes, float) / B, kvp, at.gpu, at.cal, engine=at.engine)
    return _comm_of(P / "helix_all_to_all", np.minimum(whole, c + (B - 1.0) * np.maximum(c - a, 0.0)), nbytes, at)


def _mla_proj(a: MLA, b: Batch, at: _At, P: Site, *, s: _Step) -> list[Op]:
    """MLA's low-rank projections, the absorbed decode products and the prefill's up-projection of
    the latent, at the input projections' format (_Step.fq: q_a, q_b, kv_a, kv_b; o_proj's is _attend's)."""
    M, h, fa, dec_tok = s.M, s.h, s.fq, s.dec_tok
    heads_l = a.heads / s.tp
    ops = []
    latent = a.kv_lora_rank + a.rope_dim
    if a.q_lora_rank and at.engine is not None:
        # the engines run both down-projections as one GEMM over the replicated hidden state
        # (TensorRT-LLM _torch/modules/attention.py MLA `kv_a_proj_with_mqa`, q_lora + kv_lora + rope
        # outputs; vLLM models/deepseek_v2.py `fused_qkv_a_proj`; SGLang models/deepseek_v2.py
        # `fused_qkv_a_proj_with_mqa`): one launch and one fixed cost, not two
        ops.append(_gemm(P / "qkv_a", M, a.q_lora_rank + latent, h, at, **fa))
        ops.append(_gemm(P / "q_b", M, heads_l * a.head_dim, a.q_lora_rank, at, **fa))
    elif a.q_lora_rank:
        ops.append(_gemm(P / "q_a", M, a.q_lora_rank, h, at, **fa))
        ops.append(_gemm(P / "q_b", M, heads_l * a.head_dim, a.q_lora_rank, at, **fa))
    else:
        ops.append(_gemm(P / "q", M, heads_l * a.head_dim, h, at, **fa))
    if at.engine is None or not a.q_lora_rank:
        ops.append(_gemm(P / "kv_a", M, latent, h, at, **fa))
    if at.engine is not None:
        # the RMSNorms of the two latents (q_a_layernorm, kv_a_layernorm: a layer's norms beyond the
        # two elementwise_kernels_per_layer counts), each its own kernel in every engine's MLA
        # (TensorRT-LLM MLA.forward_impl, vLLM and SGLang DeepseekV2AttentionMLA); BF16 read and written
        norm_b = s.T * (a.q_lora_rank + a.kv_lora_rank) * 2.0 * 2.0
        ops.append(_elementwise(P / "latent_norms", norm_b, 2.0 if a.q_lora_rank else 1.0, at))
    # decode: weight absorption, attention runs in the latent space (DeepSeek-V2 sec. 2.1.2)
    dec = Tokens(dec_tok)
    quantised = at.engine is not None and fa["weight"] == "fp8_block" and at.engine.mla_bmm_quantised(at.gpu.family)
    # where the build quantises the products' input (mla_bmm_quant below), fp8_block_scaling_bmm_out is a block-FP8 BMM over
    # the FP8 input and the 1-byte weights: the attention GEMMs' block-FP8 format, its quantise priced once, by that op
    # ("epilogue": the input arrives quantised; gemm.quantise_kernel); elsewhere BF16 maths on BF16 weights
    bmm = {**fa, "fused_quant": "epilogue"} if quantised else _BF16
    ops.append(_gemm(P / "mla_q_absorb", dec, a.kv_lora_rank, a.nope_dim, at, groups=heads_l, **bmm))
    ops.append(_gemm(P / "mla_v_up", dec, a.v_head_dim, a.kv_lora_rank, at, groups=heads_l, **bmm))
    if quantised:
        # each product's BF16 input (q_nope, heads x nope_dim a token; the attention's latent output, heads x kv_lora_rank)
        # quantised per 1x128 group to FP8 by a kernel of its own before the FP8 BMM (Engine.mla_bmm_quantised): BF16 read,
        # FP8 written, one FP32 scale per 128 values
        q_b = np.asarray(dec_tok, float) * heads_l * (a.nope_dim + a.kv_lora_rank) * (2.0 + 1.0 + 4.0 / 128.0)
        ops.append(_elementwise(P / "mla_bmm_quant", q_b, 2.0, at))
    products = at.engine.dequantised_mla_products(at.gpu.family) if at.engine is not None else ()
    if products and fa["weight"] in ("fp8", "fp8_block"):
        # a build with no FP8 bmm (SGLang 0.5.2 on ROCm, "TODO(haishaw): add bmm_fp8 to ROCm") runs each absorbed product
        # as torch.bmm(x, w.to(torch.bfloat16) * w_scale) over its per-tensor FP8 copy of kv_b_proj (sglang 0.5.2
        # models/deepseek_v2.py:1377-1399, 1485-1510; requantised per tensor at load, :2545-2551): per product and
        # decode step a cast (FP8 read, BF16 written) and a scale (BF16 read and written) of the rank's whole weight
        n_w = heads_l * sum({"uk": a.nope_dim, "uv": a.v_head_dim}[p] for p in products) * a.kv_lora_rank
        ops.append(_elementwise(P / "mla_bmm_dequant", np.where(np.asarray(dec_tok) > 0, n_w * (1.0 + 2.0 + 2.0 + 2.0), 0.0),
                                2.0 * len(products), at))
    # prefill: latent up-projected to per-head K and V for the chunk and its cached context
    kv_rows = np.asarray(b.pf_tokens, float) + np.asarray(b.pf_seqs, float) * b.pf_ctx
    ops.append(_gemm(P / "mla_kv_up", kv_rows, heads_l * (a.nope_dim + a.v_head_dim), a.kv_lora_rank, at, **fa))
    return ops


def _dsa_indexer(a: DSA, b: Batch, at: _At, P: Site, *, s: _Step) -> list[Op]:
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2-Exp report, sec. 2.1): its own
    projections (replicated on every TP rank, as vLLM and SGLang run them), FP8 scores of every
    query token against every cached index key, and a top-k selection over those scores."""
    gpu, cal = at.gpu, at.cal
    h, T, M, dec_tok, kvp, fa = s.h, s.T, s.M, s.dec_tok, s.kvp, s.fq
    hi, di = a.index_heads, a.index_head_dim
    ops = [_gemm(P / "dsa_q", M, hi * di, a.q_lora_rank or h, at, **fa),
           _gemm(P / "dsa_k_weights", M, di + hi, h, at, **fa)]
    # the elementwise chain between the projections and the scores, as the open engines run it
    # (SGLang nsa_indexer.py _get_q_k_bf16 and the FP8 quantisation after it): LayerNorm of K, RoPE
    # and its write-back into Q and K, a Hadamard rotation of Q and of K, FP8 quantisation of Q and
    # of K with the K-cache store: 8 kernels, each pass over Q (hi x di) or K (di) in BF16
    prep = T * (hi * di * (2.0 + 2.0 + 4.0 + 3.0) + di * (4.0 + 2.0 + 2.0 + 4.0 + 2.0))
    ops.append(_elementwise(P / "dsa_prep", prep, 8.0, at))
    key_b = a.index_key_bytes
    ctx_l = np.asarray(b.dec_ctx, float) / kvp  # every cached key is scored
    flops = 2.0 * dec_tok * hi * di * ctx_l
    nbytes = np.asarray(b.dec_seqs, float) * ctx_l * key_b + dec_tok * hi * di
    ops.append(_attention(P / "dsa_scores_decode", flops, nbytes,
                          cost.attention_decode_time(flops, nbytes, gpu, replace(cal, attn_decode_head_s=cal.decode_item_s), seq_heads=dec_tok,
                                                     kv_fp8=True), at))
    tp_tok = np.asarray(b.pf_tokens, float)
    seqs = np.maximum(np.asarray(b.pf_seqs, float), 1.0)
    keys = causal_keys(np.asarray(b.pf_ctx, float), tp_tok / seqs) / kvp
    pf_flops = 2.0 * tp_tok * hi * di * keys
    pf_bytes = seqs * (np.asarray(b.pf_ctx, float) + tp_tok / seqs) / kvp * key_b + tp_tok * hi * di
    pmath = "fp8" if gpu.supports("fp8") else "bf16"
    ops.append(_attention(P / "dsa_scores_prefill", pf_flops, pf_bytes,
                          cost.attention_prefill_time(np.where(tp_tok > 0, pf_flops, 0.0), pf_bytes, gpu, cal, math=pmath,
                                                      seq_heads=seqs * hi, keys=keys), at))
    # top-k: FP32 scores written by the score kernel and read back by the selection
    ops.append(_elementwise(P / "dsa_topk", (dec_tok * ctx_l + tp_tok * keys) * 8.0, 1.0, at))
    return ops


class GqaDecode:
    """The GQA decode kernel an engine runs on a shape and how it splits and reads the keys, for a serving step's
    attention (_core_decode) and the kernel tables' decode rows (measure.kernel_tables) alike: TensorRT-LLM's op
    (cost.kernels.runs_trtllm_decode: XQA or TRTLLM-Gen, their masked MHA kernel by query group, decode_mmha; the
    kernel other engines run off Hopper is priced as it, times their factor) or FlashAttention-3's
    (runs_fa3_decode: its tile, fa3_tile, a CTA per query tile and split, fa3_split, the combine by the launch's
    count, fa3_launch_splits). Array-valued, one element per shape; what a calibration decides (the masked MHA
    kernel, so the keys read, XQA's work items, the FP8 math) comes from `priced`, the rest is built once (a fit
    prices the same rows hundreds of times).

    `engine`: the engine (None: the kernel tables' own, TensorRT-LLM's), or a list of one per element (the per-engine
    tables' rows); `tokens`: decode tokens (sequences x tokens each); `seqs`: sequences; `kv_heads`, `heads`: KV and
    query heads on this GPU; `keys`: keys each query reads on it (its window, chunk or Helix share applied); `ctx`,
    `window`: each sequence's context and its sliding window (0: none), which decide FlashAttention-3's tile;
    `kv_fp8`: an FP8 cache; `triton`: SGLang's Triton kernel runs it (a bool or one per element: Engine.triton_attention,
    a table row's kernel_source): priced as the engine's kernel on the GPU (FlashAttention-3's on Hopper: the table's
    Triton rows run 0.84x its price at head dim 256, 1.03x at 512 where its splits fill the GPU), reading the keys
    themselves (its tile loads are masked, no whole tiles), under the floor of its longest split's loop
    (triton_decode_floor over triton_decode_split's count, at most 8 splits) and of its grids' CTAs and bytes
    (triton_decode_grid: 8 stage-1 CTAs per sequence and head block, the live splits' partials written and read back)."""

    def __init__(self, gpu: Gpu, engine, *, tokens, seqs, kv_heads, heads, head_dim, keys, ctx, window, kv_fp8, triton=False):
        def each(f):  # an engine's fact, one per element where the caller gives an engine per element
            return np.array([f(e) for e in engine]) if isinstance(engine, list) else f(engine)

        self.gpu, self.tokens, self.kv_heads, self.heads, self.head_dim, self.keys = gpu, tokens, kv_heads, heads, head_dim, keys
        self.group = heads / kv_heads
        self.kv_fp8 = kv_fp8
        self.trtllm = each(cost.runs_trtllm_decode)
        self.rope_fused = np.asarray(kv_fp8, bool) & each(lambda e: cost.decode_rope_fused(gpu, kv_fp8=True, engine=e))
        self.triton = triton = np.asarray(triton, bool)
        self.fa3 = fa3 = each(lambda e: cost.runs_fa3_decode(e, gpu))
        # CTAs each (sequence, KV head)'s keys are split over, keys per tile, the split the merge is priced from
        split = tile = merge = items = None
        if not np.all(fa3):
            split, tile = cost.decode_split(seqs, kv_heads, keys, gpu), cost.decode_tile(gpu)
            merge = split
        if np.any(fa3):
            # FlashAttention-3 runs its local tile (fa3_tile) where the window caps the keys read: it drops a window
            # with window_size_left >= seqlen_k - 1 (hopper/flash_api.cpp:795@07602ad), and SGLang passes
            # sliding_window - 1 (models/gpt_oss.py:122, layers/attention/flashattention_backend.py:1362@0.5.14), so a
            # window of w keys is local over more than w. A Helix rank holds its share of the context and reads that
            # share of the window's keys: the same test, whatever the ranks
            local = (np.asarray(window, float) > 0) & (np.asarray(ctx, float) > window)
            m_blocks, f_tile = cost.fa3_tile(head_dim, self.group, kv_fp8, local)
            # the query rows a KV head's CTA packs: its group of every query token of the sequence (pack_gqa)
            m_blocks = np.ceil(np.maximum(np.asarray(tokens, float) / np.maximum(seqs, 1.0), 1.0) * self.group / m_blocks - 1e-9)
            cap = each(lambda e: 0 if e is None else e.fa3_max_splits)
            f_split = cost.fa3_split(seqs, kv_heads, keys, gpu, m_blocks=m_blocks, tile=f_tile, cap=cap)
            f_merge = cost.fa3_launch_splits(kv_heads, keys, gpu, m_blocks=m_blocks, tile=f_tile, cap=cap)
            f_items = seqs * kv_heads * m_blocks * f_split
            if split is None:
                split, tile, merge, items = f_split, f_tile, f_merge, f_items
            else:
                split, tile, merge = np.where(fa3, f_split, split), np.where(fa3, f_tile, tile), np.where(fa3, f_merge, merge)
                items = np.where(fa3, f_items, np.nan)
        self.floor, self.grid = 0.0, (0.0, 0.0)
        if np.any(triton):
            self.floor = np.where(triton, cost.triton_decode_floor(keys, cost.triton_decode_split(seqs, heads, kv_heads, keys, gpu),
                                                                   head_dim), 0.0)
            self.grid = tuple(np.where(triton, x, 0.0) for x in cost.triton_decode_grid(seqs, heads, kv_heads, keys, gpu, head_dim=head_dim))
            # its tile loads are masked past the split's end (decode_attention.py:_fwd_grouped_kernel_stage1's
            # tl.load(mask=offs_n < split_kv_end)@0.5.14): the keys themselves are read, no whole tiles
            tile = np.where(triton, 1.0, tile)
        self.split, self.tile, self.merge, self._items = split, tile, merge, items  # items: FlashAttention-3's CTAs

    def priced(self, cal):
        """(masked MHA kernel, keys read per sequence and KV head, work items, FP8 math) under `cal`."""
        gpu, fa3 = self.gpu, self.fa3
        mmha = cost.decode_mmha(gpu, self.group, cal, trtllm=self.trtllm)  # never FlashAttention-3's (trtllm False)
        read = cost.decode_keys_read(self.keys, self.split, gpu, mmha, tile=self.tile)
        items = self._items
        if not np.all(fa3):
            fp8 = np.asarray(self.kv_fp8, bool) & gpu.supports("fp8")
            # the query group in slices as wide as the cache dtype's (each row's own, in the tables)
            xqa = cost.decode_work_items(self.tokens, self.kv_heads, self.heads, cal, kv_fp8=fp8)
            items = xqa if items is None else np.where(fa3, items, xqa)
        fp8_math = cost.decode_fp8_math(gpu, self.kv_fp8, self.group, self.head_dim, cal, trtllm=self.trtllm)
        return mmha, read, items, fp8_math


def _core_decode(a: Attention, b: Batch, at: _At, P: Site, *, s: _Step, prec: Precision, per_tok_kv, qo_b, decode) -> Op:
    """Decode attention: every decode token reads its sequence's cache, the keys the mixer reads
    (Attention.decode_keys: a window, chunk or sparse selection) sharded by Helix, GQA's through its
    kernel's splits and tiles (GqaDecode). `per_tok_kv`: cached bytes per token; `qo_b`: bytes of a head's query
    read and output written; `decode`: see _attend."""
    gpu = at.gpu
    width, items, group, dcal, kv_l = decode
    dec_tok, heads_l = s.dec_tok, a.heads / s.tp
    dec_ctx = np.asarray(b.dec_ctx, float)
    ctx_l = a.decode_keys(dec_ctx) / s.kvp
    dec_flops = 2.0 * dec_tok * heads_l * ctx_l * width
    seqs = np.asarray(b.dec_seqs, float)
    kv_fp8 = prec.kv.math == "fp8"
    blocks = 1.0  # the kernel's work in keys a sequence over the keys it attends
    serial = 0.0  # FlashMLA's FP8 V transpose (flashmla_fp8_transpose_time)
    floor, grid = 0.0, (0.0, 0.0)  # Triton's longest split; its grids' CTAs and bytes (triton_decode_floor, triton_decode_grid)
    extra = 0.0  # FlashMLA's combine and metadata launches (flashmla_extra_launches)
    if kv_l is None:  # MLA's latent kernels: unsplit, every key read once, FP8 math on an FP8 cache
        read, merge, rope_fused, mmha, fa3, fp8_math = ctx_l, 1.0, False, False, False, True
        eng = at.engine
        flashmla = np.array([cost.runs_flashmla_decode(e, gpu) for e in eng]) if isinstance(eng, list) else \
            cost.runs_flashmla_decode(eng, gpu)
        if isinstance(a, MLA) and a.kernel == "mla" and np.any(flashmla):
            blocks = np.where(flashmla & (ctx_l > 0), cost.flashmla_keys(ctx_l) / np.maximum(ctx_l, 1.0), 1.0)
            n = np.array([cost.flashmla_extra_launches(e) for e in eng]) if isinstance(eng, list) else cost.flashmla_extra_launches(eng)
            extra = np.where(flashmla, n, 0.0)
            if kv_fp8 and gpu.supports("fp8"):
                serial = np.where(flashmla, cost.flashmla_fp8_transpose_time(items, ctx_l, a.kv_lora_rank, gpu), 0.0)
        elif isinstance(a, MLA) and a.kernel == "mla":
            extra = cost.aiter_mla_extra_launches(gpu)  # AITER's split merge on CDNA, 0 elsewhere
    else:
        k = GqaDecode(gpu, at.engine, tokens=dec_tok, seqs=seqs, kv_heads=kv_l, heads=heads_l, head_dim=a.head_dim, keys=ctx_l,
                      ctx=dec_ctx, window=a.window, kv_fp8=kv_fp8, triton=at.triton)
        mmha, read, items, fp8_math = k.priced(dcal)
        merge, rope_fused, fa3, floor, grid = k.merge, k.rope_fused, k.fa3, k.floor, k.grid
    dec_bytes = seqs * read * per_tok_kv + dec_tok * heads_l * qo_b
    # FlashMLA's per-sequence overhead (flashmla_keys) as blocks of its per-block math and key stream
    t_flops, t_bytes = dec_flops * blocks, seqs * read * per_tok_kv * blocks + dec_tok * heads_l * qo_b
    times = cost.attention_decode_time(t_flops, t_bytes, gpu, dcal, seq_heads=items, kv_fp8=kv_fp8, group=group, split=merge,
                                       rope_fused=rope_fused, mmha=mmha, fa3=fa3, fp8_math=fp8_math, serial_s=serial, floor_s=floor,
                                       grid=grid)
    f = _attention_factor(at, a, "decode", kv_fp8=kv_fp8, dec_tokens=dec_tok)
    t, tc, tm = (x * f for x in times)
    # launches beside the decode kernel, at the elementwise fixed cost each, not scaled by the kernel's factor
    t = t + np.where(dec_flops > 0, extra, 0.0) * at.cal.kernel_overhead_s
    # the combine, launched after every SM90 decode call with a plain <<<>>> (run_flash_splitkv_fwd_mla,
    # flash_fwd_mla_kernel.h@08f1ea31): no PDL overlap on it; the metadata kernel's launch is not read, so it keeps the credit
    combine = np.where((dec_flops > 0) & (np.asarray(extra) > 0), 1.0, 0.0)
    return _attention(P / "core_decode", dec_flops, dec_bytes, (t, tc, tm), at, kernels=1.0 + np.where(dec_flops > 0, extra, 0.0),
                      no_pdl=combine)


def _core_prefill(a: Attention, b: Batch, at: _At, P: Site, *, s: _Step, prec: Precision, per_tok_kv, qkv_d) -> Op:
    """Prefill attention, causal: a chunk of T_p tokens from s sequences over c cached tokens each,
    reading the keys the mixer reads (Attention.prefill_keys); `per_tok_kv` as _core_decode's, `qkv_d` a head's query-key
    plus value width. GQA's
    runs FlashAttention-3's kernel at its own rates where the engine does (cost.kernels.runs_fa3_prefill), SGLang's Triton
    kernel at its own where it runs that (`at.triton`)."""
    heads_l = a.heads / s.tp
    tp_tok = np.asarray(b.pf_tokens, float)
    seqs = np.maximum(np.asarray(b.pf_seqs, float), 1.0)
    keys, held = a.prefill_keys(np.asarray(b.pf_ctx, float), tp_tok / seqs)  # held: cached keys the chunk's queries read
    keys = keys / s.kvp
    pf_flops = 2.0 * tp_tok * heads_l * keys * qkv_d
    pf_bytes = seqs * (held + tp_tok / seqs) / s.kvp * per_tok_kv + tp_tok * heads_l * qkv_d * 2.0
    pmath = "fp8" if (prec.kv.math == "fp8" and at.gpu.supports("fp8")) else "bf16"
    triton = (a.kernel == "gqa") & np.asarray(at.triton, bool)
    tri_s = None  # its whole tiles and the window's skipped ones: the chunk after its cached keys (NaN: not Triton)
    if np.any(triton):
        tri_s = cost.triton_prefill_compute(tp_tok / seqs, np.asarray(b.pf_ctx, float), getattr(a, "window", 0), a.head_dim, at.gpu,
                                            qkv_d=qkv_d, seq_heads=seqs * heads_l, fp8=pmath == "fp8")
        tri_s = np.where(triton, tri_s, np.nan)
    times = cost.attention_prefill_time(np.where(tp_tok > 0, pf_flops, 0.0), pf_bytes, at.gpu, at.cal, math=pmath,
                                        seq_heads=seqs * heads_l, keys=keys, scores=tp_tok * heads_l * keys,
                                        fa3=(a.kernel == "gqa" and cost.runs_fa3_prefill(at.engine, at.gpu)) & ~triton,
                                        triton_s=tri_s)
    f = _attention_factor(at, a, "prefill", kv_fp8=prec.kv.math == "fp8")
    return _attention(P / "core_prefill", pf_flops, pf_bytes, tuple(x * f for x in times), at)


def _attention_factor(at: _At, a: Attention, phase: str, *, kv_fp8: bool, dec_tokens=None):
    """Time of the attention kernel the engine picks relative to the kernel tables' on the same shape
    (Engine.attention_kernels), by kernel kind (Attention.kernel: gqa, mla or dsa); 1 for the tables."""
    if at.engine is None:
        return 1.0
    return at.engine.attention_time_factor(at.gpu.family, a.kernel, phase, kv_fp8=kv_fp8, dec_tokens=dec_tokens)


@op_builder(GatedDeltaNet, part="attention")
@op_builder(Mamba2, part="attention")
def recurrent_ops(a: Recurrent, P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """A recurrent mixer (Gated DeltaNet, Mamba-2) as vLLM runs it (Qwen3NextGatedDeltaNet,
    MambaMixer2), heads split by TP: the input projection, a short causal conv, the recurrent core
    (a per-token update in decode, a chunked scan in prefill), the gated RMSNorm and the output
    projection. The state is a fixed matrix per head, so decode cost does not grow with context.
    There is no KV cache to shard along the sequence, so Helix's KV-parallel GPUs act as TP here."""
    gpu, cal = at.gpu, at.cal
    h, T, M, dec_tok, fa = s.h, s.T, s.M, s.dec_tok, s.fa
    tp = s.tp * s.kvp
    conv, width = a.conv_dim_per_gpu(tp), a.value_width / tp
    dec_seqs = np.asarray(b.dec_seqs, float)
    pf_tok = np.asarray(b.pf_tokens, float)
    pf_seqs = np.asarray(b.pf_seqs, float)
    state = a.state_values / tp * a.state_bytes
    ops = [_gemm(P / "in_proj", M, (a.in_proj_width - a.conv_dim) / tp + conv, h, at, **fa)]
    # causal conv (read, write) plus each sequence's (kernel-1)-row conv state
    conv_b = T * conv * 2.0 * 2.0 + (dec_seqs + pf_seqs) * (a.conv_kernel - 1) * conv * 2.0 * 2.0
    ops.append(_elementwise(P / "conv", conv_b, 1.0, at))
    io = (conv + width) * 2.0  # the conv channels in and the output out, BF16, per token
    # decode: each sequence's state read once and written per token (vLLM keeps one state per
    # speculative position); the update runs on CUDA cores and is memory-bound at any batch
    d_flops = dec_tok * a.decode_flops_per_token / tp
    d_bytes = dec_seqs * state + dec_tok * state + dec_tok * io
    ops.append(_attention(P / "core_decode", d_flops, d_bytes,
                          cost.attention_decode_time(d_flops, d_bytes, gpu, replace(cal, attn_decode_head_s=cal.decode_item_s),
                                                     seq_heads=dec_tok * a.heads / tp), at))
    # prefill: chunk states written and read back in BF16, each sequence's initial and final state
    # in the state dtype; rows span one chunk, the short-row regime of the fitted prefill ramp
    p_flops = pf_tok * a.prefill_flops_per_token / tp
    p_bytes = pf_tok * io + pf_tok / a.chunk * a.state_values / tp * 2.0 * 2.0 + pf_seqs * state * 2.0
    ops.append(_attention(P / "core_prefill", p_flops, p_bytes,
                          cost.attention_prefill_time(np.where(pf_tok > 0, p_flops, 0.0), p_bytes, gpu, cal, math="bf16",
                                                      seq_heads=np.maximum(pf_seqs, 1.0) * a.heads / tp, keys=a.chunk), at))
    # gating (GDN's fused_gdn_gating) and the gated RMSNorm of the output: passes over its rows
    ops.append(_elementwise(P / "gate_norm", T * width * 2.0 * 3.0, 2.0, at))
    ops.append(_gemm(P / "out_proj", M, h, width, at, **fa))
    ops.append(_comm(P / "all_reduce", "all_reduce", T * h * 2.0, tp, at))
    return ops


@op_builder(LinearMixer, part="attention")
def linear_ops(a: LinearMixer, P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """One hidden x hidden GEMM, sharded by TP (and Helix's KV-parallel GPUs), and its all-reduce."""
    dense_tp = s.tp * s.kvp
    return [_gemm(P / "linear", s.M, s.h / dense_tp, s.h, at, **s.fa),
            _comm(P / "all_reduce", "all_reduce", s.T * s.h * 2.0, dense_tp, at)]


@op_builder(NoMixer, part="attention")
def no_ops(a: NoMixer, P: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    return []
