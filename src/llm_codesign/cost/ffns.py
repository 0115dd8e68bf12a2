"""Operator builders of the FFNs (spec.kinds), one registered per type (ops.op_builder): a dense
MLP, a mixture of experts with the routing its busiest expert-parallel rank sees, a linear map and
none."""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache, partial
from statistics import NormalDist

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ops import (
    _BF16,
    Batch,
    Op,
    Site,
    _At,
    _comm,
    _comm_of,
    _elementwise,
    _gemm,
    _Label,
    _op,
    _Step,
    op_builder,
)
from llm_codesign.spec.engines.base import CDNA_FAMILIES, Engine
from llm_codesign.spec.kinds import DenseFfn, LinearFfn, MoE, NoFfn
from llm_codesign.spec.precision import DTYPES, Dtype, Precision, gemm_math


@op_builder(DenseFfn, part="ffn")
def dense_ops(f: DenseFfn, F: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """A dense (gated) MLP sharded by TP (and Helix's KV-parallel GPUs), and its all-reduce."""
    dense_tp = s.tp * s.kvp
    return [_gemm(F / "gate_up", s.M, (f.mats - 1) * f.inter / dense_tp, s.h, at, **s.ff),
            _gemm(F / "down", s.M, s.h, f.inter / dense_tp, at, **s.ff),
            _comm(F / "all_reduce", "all_reduce", s.T * s.h * 2.0, dense_tp, at)]


@op_builder(LinearFfn, part="ffn")
def linear_ops(f: LinearFfn, F: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """One hidden x hidden GEMM sharded like a dense MLP, and its all-reduce."""
    dense_tp = s.tp * s.kvp
    return [_gemm(F / "linear", s.M, s.h / dense_tp, s.h, at, **s.ff),
            _comm(F / "all_reduce", "all_reduce", s.T * s.h * 2.0, dense_tp, at)]


@op_builder(NoFfn, part="ffn")
def no_ops(f: NoFfn, F: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    return []


EXPERT_GEMMS = ("experts_gate_up", "experts_down")  # the roles moe_ops gives its grouped expert GEMMs (Op.role)
# the roles of the MoE block a kernel table's MoE row times: top-k routing, token permutation, the expert
# GEMMs and the activation between them (no router GEMM, no collectives, not the layer's norms)
MOE_BLOCK = ("topk", "permute", *EXPERT_GEMMS, "experts_act")


@op_builder(MoE, part="moe")
def moe_ops(f: MoE, M: Site, *, at: _At, s: _Step, b: Batch, prec: Precision) -> list[Op]:
    """A mixture of experts: the router, shared experts, the busiest EP rank's grouped expert GEMMs,
    token permutation and the token exchange (under attention DP the engine's all-to-all or gather, else all-reduce)."""
    T, h, ff, ep = s.T, s.h, s.ff, s.ep
    dense_tp, stage_gpus = s.tp * s.kvp, s.tp * s.adp * s.kvp
    T_all = T * s.adp  # the MoE group sees every attention-DP rank's tokens
    ops = [_gemm(M / "router", s.M, f.experts, h, at, **_BF16), _topk(f, M, at, T)]
    if np.any(f.shared_inter):
        sf, quant = (ff, s.shared_quant) if s.sf is None else (s.sf, None)  # emulated BF16 linears: no input quantise
        ops.append(_gemm(M / "shared_gate_up", s.M, (f.mats - 1) * f.shared_inter / dense_tp, h, at, fused_quant=quant, **sf))
        ops.append(_gemm(M / "shared_down", s.M, h, f.shared_inter / dense_tp, at, **sf))
    # the busiest EP rank sets the step: the experts it reads, its busiest expert's tokens and its
    # own (routed_load; cal.moe_routing_alpha is the routing skew, 0 uniform)
    alpha = at.cal.moe_routing_alpha
    active, top, on_rank = routed_load(f.experts, f.top_k, T_all, ep, alpha)
    skew = 1.0 if alpha <= 0.0 else on_rank / np.maximum(T_all * f.top_k / ep, 1e-30)  # busiest rank over the mean
    # the exchange the engine runs under attention DP with EP (Engine.moe_exchange); the kernel tables' alone: all-to-all
    exchange = "all_to_all" if at.engine is None else at.engine.moe_exchange(at.gpu, moe_tp=s.moe_tp)
    # or the DeepEP low-latency all-to-all its launch flags name (Engine.moe_a2a), priced by deepep_time below
    ll = (s.adp > 1) & (ep > 1) & (at.engine is not None and at.engine.moe_a2a == "deepep_low_latency")
    a2a = (s.adp > 1) & (ep > 1) & (exchange == "all_to_all") | ll
    gather = (s.adp > 1) & ~a2a
    bf16_in, gathers_quantised, x_b, in_b = _gather_format(f, at, prec, math=ff["math"], a_b=ff["a_b"])
    # the rank's MoE takes in every token of the step unless an all-to-all brought it only its routed rows; TRTLLM-Gen's tile
    # counts the tokens its call receives (rows / top_k under an all-to-all: computeSelectedTileN's num_tokens), its one
    # quantise the rank's own T where they are quantised before the exchange (a dispatch, a quantised gather), else all
    experts, route, gathered = _routed_experts(f, M, at=at, s=s, prec=prec, load=(active, top, on_rank, alpha),
                                               tokens=np.where(a2a, on_rank, T_all), tile_tokens=np.where(a2a, on_rank / f.top_k, T_all),
                                               quant_tokens=np.where(gather & ~gathers_quantised, T_all, T))
    ops += experts
    # token permutation into expert order and back (gather/scatter), one launch each way: the rank's routed
    # rows in and out, and every output row of the tokens it holds written by the un-permute (TensorRT-LLM's
    # finalize, vLLM's and SGLang's moe_sum: a zero row where none of its experts took the token), all the
    # step's tokens unless an all-to-all brought it only its own. Where the up-projection gathers its rows
    # (FC1_FUSED), no permuted copy: one launch, the un-permute's
    routed_in = 0.0 if gathered else np.where(bf16_in, 2.0, in_b)
    perm = np.where(T_all > 0, skew * (T_all / ep * f.top_k * h * (routed_in + 2.0)) + np.where(a2a, T, T_all) * h * 2.0, 0.0)
    permute = _elementwise(M / "permute", perm, 1.0 if gathered else 2.0, at)
    # and, under EP without an all-to-all, the token-expert assignments of the tokens it holds that go to
    # other ranks' experts, each sorted out by its routing (TensorRT-LLM's expert-map and sort kernels) or
    # carried as a zero row through its expert GEMMs and reduction (vLLM's and SGLang's Triton MoE with an
    # expert map): a time per such assignment (Calibration.moe_kernel)
    ops.append(permute.replace(time=permute.time + np.where(a2a, 0.0, np.maximum(T_all * f.top_k - on_rank, 0.0)) * route))
    # token exchange. Without attention DP every rank already holds every token (the attention
    # all-reduce): expert-parallel ranks run their experts on them and one all-reduce sums the outputs.
    # Under attention DP with EP, where the engine runs an all-to-all, the tokens go to their experts' ranks
    # and back (dispatch and combine: TensorRT-LLM's NVLink one-sided all-to-all on NVL72, ATOM's MoRI);
    # otherwise (SGLang's and vLLM's defaults, TensorRT-LLM off NVL72 or with MoE TP) and over a
    # tensor-parallel MoE every rank's tokens are gathered and the outputs reduce-scattered (the permute and
    # route terms above then see all the step's tokens)
    sent = skew * (T / dense_tp * f.top_k * h)  # what the busiest rank receives
    ops += _all_to_all_ops(f, M, at, T=T, h=h, ep=ep, sent=sent, skew=skew, a_b=x_b, a2a=a2a, ll=ll, gpus=stage_gpus)
    g_b = x_b if gathers_quantised else 2.0
    ops.append(_comm(M / "all_gather", "all_gather", np.where(gather, T_all * h * g_b, 0.0), stage_gpus, at))
    ops.append(_comm(M / "reduce_scatter", "reduce_scatter", np.where(gather, T_all * h * 2.0, 0.0), stage_gpus, at))
    ops.append(_comm(M / "all_reduce", "all_reduce", np.where(s.adp > 1, 0.0, T * h * 2.0), stage_gpus, at))
    return ops


def _topk(f: MoE, M: Site, at: _At, T) -> Op:
    """The top-k selection over the router's logits, a kernel of its own in every engine (TensorRT-LLM's routing /
    noaux_tc kernels, vLLM's fused_topk and grouped_topk, SGLang's biased_grouped_topk): it reads each token's FP32 expert
    scores and writes top_k ids and weights. A build without the "routing" fusion (Engine.fusions) runs the score function
    and the bias add before it, two launches each reading and writing the scores, PyTorch elementwise kernels launched
    without PDL (Op.no_pdl); its noaux_tc_op then reads both score tensors, the sigmoid's and the biased
    (`noaux_tc_op(scores, scores_with_bias, ...)`, Deepseekv3RoutingImpl.noaux_tc), 4 B more an expert."""
    unfused = at.engine is not None and not at.engine.fuses("routing")
    route_b = T * (f.experts + 2.0 * f.top_k) * 4.0 + (T * f.experts * (16.0 + 4.0) if unfused else 0.0)
    return _elementwise(M / "topk", np.where(T > 0, route_b, 0.0), 3.0 if unfused else 1.0, at, no_pdl=2.0 if unfused else 0.0)


def _all_to_all_ops(f: MoE, M: Site, at: _At, *, T, h, ep, sent, skew, a_b, a2a, ll, gpus) -> list[Op]:
    """moe_ops' dispatch and combine where `a2a`: `sent` bytes a rank receives over the engine's all-to-all, dispatched in
    the expert GEMMs' activation format (`a_b` bytes an element) and combined in BF16; where `ll`, DeepEP's low-latency
    kernels instead (Engine.moe_a2a): the busiest receiver's top-k copies, `skew` (the routing's busiest rank over the
    mean, as `sent`) times a rank's T tokens' (under attention DP each rank sends its own T tokens' copies and, EP = DP,
    receives T x top_k on the mean), on the DeepEP table's fitted launch, per-expert signal and link share (deepep_time).
    The step waits on the rank that receives most, as the default all-to-all's `sent` reads it: a dispatch ends when the
    copies bound for a rank's experts have landed (deepep_time's per-expert receive signal), so the rank the routing loads
    most sets the time (DeepEP not mirrored here: the receive-side wait is its documented low-latency design, not a line read)."""
    out = []
    recv = skew * np.asarray(T, float)  # the receiving rank's load, in a rank's tokens (1 without routing skew)
    for phase, b_el in (("dispatch", a_b), ("combine", 2.0)):
        op = _comm(M / phase, "all_to_all", np.where(a2a & ~ll, sent * b_el, 0.0), gpus, at)
        if np.any(ll):
            t = deepep_time("low_latency", phase, recv, at.gpu, at.cal, hidden=h, top_k=f.top_k, experts=f.experts, ep=ep, payload_b=b_el)
            op = _comm_of(M / phase, np.where(ll, t, op.time), np.where(ll, recv * f.top_k * h * b_el, 0.0) + op.bytes, at)
        out.append(op)
    return out


# MoE kernel families (Engine.moe_kernel) x GEMM kernel families whose fused op takes the tokens in BF16, permutes them in
# BF16 and quantises the permuted rows itself: TensorRT-LLM's CUTLASS MoE on DeepSeek's block FP8 (Hopper's). Its
# CutlassFusedMoE.forward_chunk quantises x before the op for FP8 per tensor and NVFP4 but for block FP8 only sets
# use_deepseek_fp8_block_scale, so under attention DP it all-gathers the BF16 hidden states (x_sf None)
# (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py forward_chunk@000a01de, the mid-2025
# module the H200 best-perf run's builds ran; the same in 1.3's); the op's block-scale runner quantises the permuted BF16
# rows per 1x128 group in the grouped GEMM's own pass (fp8_grouped_gemm_run's scale_1x128_kernel over problem_m_offsets,
# cpp/tensorrt_llm/kernels/cutlass_kernels/fp8_blockscale_gemm/fp8_blockscale_gemm_kernel.cuh@0249976), which the
# expert GEMM's quantise pass already prices (gemm.quantise_kernel: fp8_block); both read in the code index, not mirrored.
# The same forward_chunk leaves INT4 weights per group unquantised too (has_w4afp8, W4AFP8 whatever the activation: it
# only sets use_w4a8_group_scaling, fused_moe_cutlass.py forward_chunk@000a01de, read in the code index); INT4's GEMMs
# run the w4a16 kernel family (gemm.gemm_kernel: INT4's math is BF16) with FP8 or BF16 activations alike, so the
# key holds the weight format too: (MoE kernel family, GEMM kernel family, weight format).
BF16_IN = (("cutlass", "fp8_block", "fp8_block"), ("cutlass", "w4a16", "int4"))


def _gather_format(f: MoE, at: _At, prec: Precision, *, math: str, a_b) -> tuple[bool, bool, object, object]:
    """(Whether the MoE kernel family the engine runs for these experts of GEMM math `math` (the kernel table row's,
    `at.moe`, without an engine) takes its tokens in BF16 and quantises them itself after its permutation (BF16_IN, by
    the weight format too); whether the attention-DP gather moves them in the GEMMs' format: where the engine quantises first
    (Engine.gathers_quantised; the tables': TensorRT-LLM's) and its MoE kernel does not take them in BF16; the bytes a value
    of what its dispatch or quantised gather moves, and of the rows its MoE op permutes: the GEMMs' `a_b`, or where the engine
    quantises an MXFP4 checkpoint's BF16 hidden states in its MoE op (trtllm_gen_activation) that format's, 1 + 1/32 for
    MXFP8 (TensorRT-LLM quantises before the exchange, "prior to post-communication": its dispatch and all-gather move
    MXFP8 values and scales; SGLang after it, in Mxfp4MoEMethod.apply: BF16 over the gather, gathers_quantised False))."""
    kernel = gemm.gemm_kernel(math, prec.weight.name, fp4_math=at.gpu.supports("fp4"))  # as _routed_experts reads it
    fam = at.moe if at.engine is None else at.engine.moe_kernel(at.gpu.family, kernel, weight=prec.weight.name, ep=True, gated=f.gated)
    bf16_in = (fam, kernel, prec.weight.name) in BF16_IN
    act = trtllm_gen_activation(at.gpu, at.engine, [fam], prec)[0]
    in_b = a_b if act is None else act.bytes_per_value()
    first = (at.engine is None or at.engine.gathers_quantised) and not bf16_in
    return bf16_in, first, in_b if first else a_b, in_b


def _routed_experts(f: MoE, M: Site, *, at: _At, s: _Step, prec: Precision, load, tokens, tile_tokens, quant_tokens) -> tuple[list[Op], object, bool]:
    """The busiest rank's expert GEMMs and the activation between them, in the MoE kernel family the engine runs (Engine.moe_kernel;
    without an engine, `at.moe`, a kernel table row's), chosen per plan where it switches with expert parallelism (vLLM's block-FP8
    MoE on Hopper); and that family's time per assignment to another rank's expert (Calibration.moe_kernel), per plan; and whether
    the up-projection gathers the routed rows (fc1_fused). `load` is routed_load's and the routing skew alpha; `tokens` the rank's
    tokens before routing (AITER's own quantise reads them); `tile_tokens` the tokens TRTLLM-Gen's call receives (token_tile's) and
    `quant_tokens` the tokens its one quantise pass reads. The tables' own family runs some GEMM kernel families at another dense
    family's rates (MOE_RATES), AITER's at the faster of its few- and many-row blocks (_aiter_fastest)."""
    ff, ep, T_all, on_rank = s.ff, s.ep, s.T * s.adp, load[2]
    kernel = gemm.gemm_kernel(ff["math"], prec.weight.name, fp4_math=at.gpu.supports("fp4"))  # the tables', not the engine's dense kernel
    fams = [at.moe] if at.engine is None else [at.engine.moe_kernel(at.gpu.family, kernel, weight=prec.weight.name, ep=x, gated=f.gated)
                                               for x in (False, True)]
    run_as = held_as(at, f, prec, fams, kernel)
    gathered, act_fused = fc1_fused(at.gpu.family, fams, kernel)
    # AITER's fused MoE (the CDNA tables' own) quantises its inputs itself, whatever the engine fuses before it: the tokens before its first
    # stage (each once: its stage-1 call quantises the (token_num, model_dim) input with topk=1, aiter/ops/quant.py:697-699@3c5f0ba) and the
    # activation's routed rows before its second, each a kernel of its own (aiter/fused_moe.py:1520,1637@3c5f0ba: MXFP4's, FP8's quant_func)
    own_quant = all(x is None for x in fams) and at.gpu.family in CDNA_FAMILIES
    # TRTLLM-Gen's MoE (the Blackwell tables' own, TRTLLM_GEN): the tokens quantised once before routing, the down-projection's
    # input written quantised by the up-projection's epilogue, and its grouped GEMMs on their own tile grid (token_tile)
    gen = gathered and at.gpu.family in TRTLLM_GEN

    def gemm_of(name, n_dim, k_dim, *, fam, ff, kernel):
        ff, kernel = _held_gemm(ff, kernel, run_as.get(fam), prec=prec, gpu=at.gpu)
        tile, even, tuned = _moe_tile([fam] if fam in run_as else fams, kernel, ff, gen=gen, tokens=tile_tokens, f=f, local=f.experts / ep)
        rates, kept = moe_rates(at.gpu.family, kernel, tables=all(x is None for x in fams))
        run = partial(_expert_gemm, M / name, n_dim, k_dim, load=load, fam=fam, kernel=rates, kept=kept, quant_kernel=kernel,
                      own_quant=own_quant or gen_quant, local=f.experts / ep, tile=tile, even_grid=even, tuned=tuned,
                      quant_rows=(tokens if own_quant else quant_tokens if gen or gen_quant else None) if name == "experts_gate_up" else None,
                      epilogue_quant=(gen or gen_quant) and name == "experts_down", **{k: ff[k] for k in ("math", "a_b", "w_b", "weight")},
                      c_time_bytes=aiter_combine_bytes(at) if own_quant and name == "experts_down" else 2.0)  # (AITER_COMBINE_BPS)
        return _aiter_fastest(run, at, rates) if own_quant else run(at)

    def gemms(ff, kernel):
        ops = []
        for name, n_dim, k_dim in (("experts_gate_up", (f.mats - 1) * f.expert_inter / s.moe_tp, s.h), ("experts_down", s.h, f.expert_inter / s.moe_tp)):
            by = [gemm_of(name, n_dim, k_dim, fam=fam, ff=ff, kernel=kernel) for fam in dict.fromkeys(fams)]
            ops.append(by[0] if len(by) == 1 else _either(ep > 1, by[1], by[0]))
            if name == "experts_gate_up" and not act_fused:
                # the activation between them, a kernel of its own (TensorRT-LLM's doActivation on Hopper, vLLM's and
                # SGLang's silu_and_mul): the rank's routed rows of the up-projection's BF16 output ((mats - 1)
                # halves) read, the down-projection's input written
                act = on_rank * (f.expert_inter / s.moe_tp) * ((f.mats - 1) * 2.0 + ff["a_b"])
                ops.append(_elementwise(M / "experts_act", np.where(T_all > 0, act, 0.0), 1.0, at))
        return ops

    act = trtllm_gen_activation(at.gpu, at.engine, fams, prec)[0]
    gen_quant = act is not None
    ops = gemms(*(_activation_values(ff, prec, act, at.gpu) if gen_quant else (ff, kernel)))
    high, bound = aiter_quantised_activation(at.gpu, at.engine, fams, prec, f)
    if high is not None:
        # AITER's MXFP4 MoE on BF16 activations: `high`'s activations from `bound` tokens, BF16 below (the SwiGLU one's
        # switch), each step as its tokens fall. AITER compares M, the tokens of its call: under ATOM's MoRI all-to-all the
        # rows of the receive buffer, every DP rank's (graph_bs x dp in a uniform decode, max_tokens x world otherwise:
        # atom/model_ops/fused_moe/modular_kernel.py:369-411@ffdf3bb5), so T_all, not the rank's routed rows (`tokens`,
        # which its own quantise pass reads)
        hi = gemms(*_activation_values(ff, prec, high, at.gpu))
        ops = [_by_tokens(np.asarray(T_all) >= bound, h, _capped(lo, h)) for h, lo in zip(hi, ops, strict=True)]
    route = [at.cal.moe_kernel(fam, _held_gemm(ff, kernel, run_as.get(fam), prec=prec, gpu=at.gpu)[1])[2] for fam in fams]
    return ops, route[0] if len(set(route)) == 1 else np.where(ep > 1, route[1], route[0]), gathered



def _activation_values(ff: dict, prec: Precision, act: Dtype, gpu) -> tuple[dict, str]:
    """The expert GEMMs' values and kernel family on activation format `act` where the engine or its MoE kernel quantises the
    checkpoint's BF16 hidden states for them (quantised_activation: TensorRT-LLM's and SGLang's MXFP8, AITER's switch)."""
    math = gemm_math(prec.weight, act, gpu)
    return {**ff, "math": math, "a_b": act.bytes_per_value()}, gemm.gemm_kernel(math, prec.weight.name, fp4_math=True)


def held_as(at: _At, f: MoE, prec: Precision, fams, kernel: str) -> dict:
    """{MoE kernel family: the format it holds the experts in} for those of `fams` (per plan: EP 1, EP > 1) that convert
    the checkpoint's at load and run that format's GEMMs (Engine.moe_weight, spec.engines.base.MOE_UPCAST: SGLang's MXFP4
    experts on its Triton MoE, BF16); `kernel` the checkpoint's GEMM kernel family, as moe_kernel takes it."""
    if at.engine is None:
        return {}
    runs = gemm.expert_formats(at.engine, at.gpu, prec, gated=f.gated, kernel=kernel)
    return {fam: DTYPES[r] for fam, r in zip(fams, runs, strict=True) if r != prec.weight.name}


def _held_gemm(ff: dict, kernel: str, held: Dtype | None, *, prec: Precision, gpu) -> tuple[dict, str]:
    """The expert GEMMs' values and kernel family for weights held as `held` (held_as; None: as the checkpoint's)."""
    if held is None:
        return ff, kernel
    math = gemm_math(held, prec.activation, gpu)
    return {**ff, "math": math, "w_b": held.bytes_per_weight(), "weight": held.name}, gemm.gemm_kernel(math, held.name, fp4_math=gpu.supports("fp4"))


def _moe_tile(grid, kernel: str, ff: dict, *, gen: bool, tokens, f: MoE, local):
    """The token tile the MoE kernel families `grid` compute each expert's rows in (None: none), whether its blocks
    spread evenly over the kernel's grid and whether an autotuner picks the tile near it: TRTLLM-Gen's (`gen`, token_tile,
    its heuristic tile, the autotuner's window above it: gemm._token_tile_time), Marlin's (marlin_block, on Marlin's own
    even grid: gemm._marlin_grid_time) or SGLang's Triton MoE on BF16 (triton_block); `local` the rank's experts."""
    if gen:
        return token_tile(tokens, f.top_k, local, a_b=ff["a_b"], w_b=ff["w_b"]), False, True
    if all(x in MARLIN for x in grid):
        return marlin_block(tokens, f.top_k, local), True, False
    return (triton_block(tokens, local) if kernel == "bf16" and all(x == "sglang_triton" for x in grid) else None), False, False

# GPU families whose kernel tables' own MoE (fam None) reads its routed rows in the up-projection's GEMM
# (a gather by the sorted indices, no permuted copy: one permutation launch, the un-permute's or its sort's)
# and runs the activation in that GEMM's epilogue, with the GEMM kernel families for which the activation is
# a kernel of its own nonetheless. Blackwell: the TRTLLM-Gen fused MoE (TensorRT-LLM's on SM100, and the
# FlashInfer trtllm_*_moe that vLLM and SGLang run there): routing, PermuteGemm1, Gemm2, finalize; SwiGLU fused
# into FC1 except for DeepSeek's block FP8 ("We do not fuse activation with FC1 for DeepSeek FP8 due to the
# weights shuffling constraint", its runner). CDNA: AITER's fused MoE sorts indices (moe_sorting), gathers
# and activates in its first stage and combines in its second (ck_moe_stage1 / stage2, the asm fmoe_g1u1).
# Keyed on the engine's MoE kernel family, not the GPU's alone: the tables' own only where the engine runs
# them (SGLang and ATOM on AITER); vLLM on ROCm runs its Triton fused MoE (VLLMEngine.moe_kernel), whose
# permuted copy and activation are kernels of their own.
FC1_FUSED = {"blackwell": ("fp8_block",), "cdna3": (), "cdna4": ()}
# GPU families whose FC1_FUSED MoE is TRTLLM-Gen's (the fused runner: routing, PermuteGemm1, Gemm2, finalize,
# flashinfer-ai/flashinfer csrc/trtllm_fused_moe_runner.cu:521-617@fb28d72): the tokens arrive quantised (one pass over
# them before routing, as the kernel tables' TensorRT-LLM quantises the hidden states to MXFP8 before its MoE op),
# FC1's epilogue writes FC2's input quantised with its scales (gemm1_output uint8 for MXFP8/FP4 activations,
# csrc/trtllm_fused_moe_kernel_launcher.cu:3155-3163; DeepSeek FP8's activation kernel writes FP8, trtllm_fused_moe_runner.cu:566-571),
# so no quantise pass before FC2; its grouped GEMMs each CTA one token tile (token_tile) of an expert's routed rows x 128
# weight rows over the whole of K (gemm._token_tile_time), every expert's rows in whole tiles
TRTLLM_GEN = ("blackwell",)
# GPU families on which an engine that names them in its mxfp8_moe_families runs an MXFP4 checkpoint's experts on MXFP8 in a
# CUTLASS MoE instead (trtllm_gen_activation): SM120 (RTX Pro), where TensorRT-LLM's resolve_moe_backend returns CUTLASS for
# GptOssForCausalLM (TRTLLM only for SM 100-119) and get_mxfp4_quant_algo still gives W4A8_MXFP4_MXFP8 (SM >= 100, every
# backend but TRITON; tensorrt_llm/_torch/model_config.py@008e0af8, read in the code index), so CutlassFusedMoE.forward_chunk
# quantises x with mxfp8_quantize before its op (modules/fused_moe/fused_moe_cutlass.py, read in the code index). No
# permute-fused FC1 there (FC1_FUSED): the quantised rows are permuted and the activation is a kernel of its own. No SM120
# MoE kernel table: its GEMMs run at the tables' fallback rates (the intervals' "no ... kernel table" reason says so)
MXFP8_CUTLASS = ("blackwell_sm120",)
# GPU families whose kernel tables' own MoE runs a GEMM kernel family's experts at another dense family's rates, with the
# share of them it keeps. Blackwell: DeepSeek's block-FP8 experts run TRTLLM-Gen's grouped kernels in their DeepSeekFp8
# mode (FlashInfer's trtllm_fp8_block_scale_moe: SGLang's flashinfer_trtllm on SM100, server_args.py:1288-1310@0.5.9;
# TensorRT-LLM's TRTLLM MoE backend, its AUTO choice for block FP8 on SM100 at 1.3.0rc20 as ai-dynamo/aiconfigurator
# collector/trtllm/collect_moe.py:470-474@095f58a reads it), whose FP8-math grouped GEMMs the B200 MoE table times
# (its W4A8 MXFP4 x MXFP8 rows: moe_eff is fitted on them against the per-tensor fp8 family), not at DeepGEMM's dense
# rows' rates (gemm_eff_fp8_block, whose per-tile cost of 979 K steps is DeepGEMM's). They keep DeepSeek's FP32 block
# scales, which SM100's block-scaled MMA does not take (UE8M0 only, why DeepGEMM converts them: deepseek-ai/DeepGEMM
# README.md:67-70@54e2261), so the CUDA cores apply them to each 128-deep K block's partial sums, as on Hopper
# (Gpu.block_scale_rate): 1 / (1 + F / (2 x 128 x 128)) of the MMA's rate where the two do not overlap, F the SM's dense
# FP8 FLOPs per clock, 16,384 on SM100 (twice Hopper's 8,192: B200's 4.5 PFLOPS over 148 SMs at ~1.9 GHz), so 2/3;
# range 2/3-1 (1 where a kernel overlaps them with the next block's MMA). Not measured on Blackwell:
# docs/modelling-notes.md#ds-fp8-prefill-blackwell.
MOE_RATES = {"blackwell": {"fp8_block": ("fp8", 2.0 / 3.0)}}


# AITER's fused MoE (the CDNA tables' own) on many rows per expert: its kernels with 64- and 128-row blocks (the CK two-stage
# block_m 64 from 33 tokens for block-scaled FP8 and get_block_size_M's 32/64/128 by waves, ROCm/aiter aiter/fused_moe.py:1227-1240,
# 2407-2412@e4048607; the tuned tables' block_m 64/128 and asm 64x256 kernels from ~1k tokens, a8w8_blockscale_tuned_fmoe_ds_v3.csv:
# 378-381 on gfx950) run at this share of the dense kernel family's modelled rate (gemm_eff x peak), per (GPU family, GEMM kernel
# family), against the few-row blocks' fitted moe_eff (0.15, fitted on decode steps of 1-16 rows per expert). Read off AITER's tuned
# two-stage rows at 512-2k rows per expert, the first stage (K the model width, long): gfx942 BF16 0.40-0.63 (qwen3_235b_bf16_tuned_fmoe.csv:30-33,46-49,
# 4096x192/384: 21-32% of the BF16 peak over gemm_eff_bf16 0.51); gfx950 BF16 0.41-0.50 (qwen3_235b_bf16, 4096x384: 26-31% over
# 0.62), per-token FP8 0.52 (glm47_fp8_tuned_fmoe.csv:15-17, 5120x1536: 28.5-29% over gemm_eff_fp8 0.55). Range 0.4-0.63; a pair
# not read here 0.5. Not taken (None) for the formats serving runs measure, DeepSeek-R1's block-FP8 and MXFP4 experts on gfx950,
# whose tables read 0.26-0.27 (a8w8_blockscale_tuned_fmoe_qwen3_235b.csv, 4096x1536) and 0.56-0.73 (dsv3_fp4, 7168x2048) at
# e4048607 but whose InferenceX runs (builds before it) put the 8k prefill's experts at the few-row rate (with 0.27 their 8k
# first tokens come out 12% short: docs/modelling-notes.md#amdk-moe-blocks); nor on gfx942, which borrows gfx950's MoE values
# (fitted.toml [cdna3]) though its table reads 0.69 (a8w8_blockscale_tuned_fmoe_ds_v3.csv:392-396, 7168x2048: 45-47% over
# 0.68), so that a GPU is not priced faster for a kernel rate the other's runs did not reach. Below 0.65 a 64-row block
# (64 / share row-times) costs more than a 16-row one (16 / 0.164 = 98) at up to 16 rows per expert, where the fit lies
AITER_LARGE_BLOCK_SHARE = {("cdna3", "bf16"): 0.5, ("cdna4", "bf16"): 0.45, ("cdna4", "fp8"): 0.52,
                           **{(fam, k): None for fam in ("cdna3", "cdna4") for k in ("fp8_block", "fp4")}}
# AITER's second stage (the down-projection) adds each routed row's top-k-weighted output into its token's [token, hidden] BF16
# row atomically (CK DeviceMoeGemm with IsInputGemm false, aiter csrc/ck_gemm_moe_2stages_codegen/gemm_moe_ck2stages_common.cuh:
# 282-298; the tuner's epilogue mode "atomic" by default, gemm_moe_tune.py:863; "Direct-output kids atomically accumulate into
# [token, hidden]", csrc/opus_moe/README.md:59, all @e4048607): bytes/s those adds reach, read off AITER's tuned two-stage rows
# whose second stage's K (the expert width) is short enough that its MMA is a small part: 2 B x routed rows x hidden over the
# stage's time. gfx950: 1.7-2.1 TB/s (MXFP4, K 256, 32k-131k tokens: dsv3_fp4 2.1, minimax_m25_fp4 1.97, qwen3_5_397b_fp4 2.0,
# dsv4_fp8fp4 1.67, kimik3_a4w4 1.72), ~25% of its 8 TB/s; gfx942: 0.8 TB/s (qwen3_235b_bf16, K 192, 16k-32k tokens: 0.80,
# 0.81), 15% of its 5.3 TB/s, the one file with such rows there (range 0.56-0.81, its K 384 rows with their MMA in).
# What makes narrow experts (DeepSeek's 256 a rank at TP8) slow at many rows: their outputs outweigh their MMA
AITER_COMBINE_BPS = {"cdna3": 0.8e12, "cdna4": 1.9e12}


def _aiter_fastest(run, at: _At, rates: str) -> Op:
    """AITER's grouped expert GEMM (`run(at, swap_ab)` prices one at `at`): its tuned kernel per token count, the faster of its
    few-row blocks (moe_eff, fitted on decode steps) and its 64-128-row blocks at AITER_LARGE_BLOCK_SHARE of the dense rate
    (aiter_large_blocks), where that share is read for the GPU family and GEMM kernel family `rates`."""
    small = run(at)
    share = AITER_LARGE_BLOCK_SHARE.get((at.gpu.family, rates), 0.5)
    if share is None or rates in ("w4a16", "fp8_deepgemm"):  # (those two run at their own rates, not moe_eff's: Calibration.moe_eff_of)
        return small
    large = run(at._replace(gpu=aiter_large_blocks(at.gpu), cal=replace(at.cal, moe_eff=share)), swap_ab=False)
    return _either(np.asarray(large.time) < np.asarray(small.time), large, small)


def aiter_combine_bytes(at: _At) -> float:
    """Bytes at the streaming rate (HBM x bw_eff) that AITER's second stage costs per BF16 output value it adds atomically
    into its token's row (AITER_COMBINE_BPS): 2 B at the atomic rate."""
    return 2.0 * at.gpu.hbm_bandwidth_bytes_per_s * at.cal.bw_eff / AITER_COMBINE_BPS[at.gpu.family]


@lru_cache(maxsize=16)
def aiter_large_blocks(gpu):
    """`gpu` with only the tiles of 64 rows and more (AITER's 64- and 128-row MoE blocks, AITER_LARGE_BLOCK_SHARE)."""
    return replace(gpu, tiles=tuple(t for t in gpu.tiles if t[0] >= 64))


# The token count from which AITER's fused MoE runs a SwiGLU MXFP4 MoE (gpt-oss's) on quantised activations on gfx950,
# BF16 below it: M (the tokens the call takes, topk_ids.shape[0]) against AITER_BF16_FP8_MOE_BOUND and
# GPTOSS_SWIGLU_MXFP4_BF16_BOUND, both 256 by default (ROCm/aiter aiter/fused_moe.py:76, 768, 789-795@e4048607)
AITER_SWIGLU_BOUND = 256
# the per-1x32 FP8 AITER quantises to on that path: E4M3 values and one E8M0 scale per 32 (its fused_dynamic_mxfp8_quant_moe_sort,
# aiter/fused_moe.py:21@e4048607), 1 + 1/32 bytes a value
_MXFP8 = Dtype("mxfp8", 8, 8, 32, 32, "fp8")


def trtllm_gen_activation(gpu, engine, fams, prec: Precision) -> tuple[Dtype | None, float]:
    """(the activation format the MoE op runs an MXFP4 checkpoint's experts on, 0: from every token count) where the engine
    quantises the checkpoint's BF16 activations for it (Engine.mxfp8_moe_families: TensorRT-LLM's W4A8_MXFP4_MXFP8 on
    SM100 and SM120, SGLang's flashinfer_mxfp4 default), else (None, inf): MXFP4 weights on BF16 activations in the kernel
    tables' own MoE (`fams` all None) on a TRTLLM_GEN or MXFP8_CUTLASS family. MXFP8 is E4M3 values with one E8M0 scale
    per 32 (_MXFP8), FP8 math, its quantise pass the MoE op's own (_routed_experts' quant_rows)."""
    if not (gpu.family in TRTLLM_GEN + MXFP8_CUTLASS and all(x is None for x in fams) and prec.weight.name == "mxfp4"
            and prec.activation.math == "bf16" and gpu.family in (Engine if engine is None else engine).mxfp8_moe_families):
        return None, float("inf")
    return _MXFP8, 0.0


def quantised_activation(gpu, engine, fams, prec: Precision, f: MoE) -> tuple[Dtype | None, float]:
    """(the activation format an MXFP4 MoE's experts run on where the engine or its MoE kernel quantises the checkpoint's BF16
    activations, the tokens from which it does), or (None, inf): TRTLLM-Gen's on Blackwell (trtllm_gen_activation), AITER's
    on CDNA4 (aiter_quantised_activation)."""
    high, bound = trtllm_gen_activation(gpu, engine, fams, prec)
    return (high, bound) if high is not None else aiter_quantised_activation(gpu, engine, fams, prec, f)


def aiter_quantised_activation(gpu, engine, fams, prec: Precision, f: MoE) -> tuple[Dtype | None, float]:
    """(the activation format AITER's fused MoE quantises an MXFP4 MoE's BF16 activations to on gfx950 (CDNA4), the
    tokens from which it does), or (None, inf) where no such switch applies: MXFP4 weights on BF16 activations in the
    kernel tables' own MoE (`fams` all None: AITER's, cost.ffns.FC1_FUSED). A SwiGLU one (gpt-oss's clamped SwiGLU,
    MoE.activation "swiglu_clamped") runs BF16 below AITER_SWIGLU_BOUND tokens and, from it, the format the engine's
    gate/up layout takes it to (Engine.aiter_swiglu_high: separated MXFP4, interleaved group-32 FP8); a SiLU one is run
    per-1x32 on MXFP4 activations at every M (aiter/fused_moe.py:796-797@e4048607), so from 0 tokens."""
    if not (gpu.family == "cdna4" and all(x is None for x in fams) and prec.weight.name == "mxfp4" and prec.activation.math == "bf16"):
        return None, float("inf")
    if f.activation != "swiglu_clamped":
        return DTYPES["mxfp4"], 0.0
    name = (Engine if engine is None else engine).aiter_swiglu_high  # engine-less: AITER's API default (Engine's)
    return (_MXFP8 if name == "fp8" else DTYPES[name]), float(AITER_SWIGLU_BOUND)


def moe_step_activation(model, gpu, prec: Precision, engine, concurrency) -> Dtype | None:
    """The activation format `model`'s MoE runs on at an instance's decode steps of `concurrency` requests (about as many
    tokens; None: offline, its largest batches) where AITER's switch or the engine's TRTLLM-Gen MXFP8 takes it off BF16
    (quantised_activation), else
    None: what the precision label and the intervals' format say of those points (measure.intervals.context). `prec` is
    as the GPU executes it, `engine` an Engine or None."""
    moes = [layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)]
    if not moes or prec.activation is None:
        return None
    kernel = gemm.gemm_kernel(gemm_math(prec.weight, prec.activation, gpu), prec.weight.name, fp4_math=gpu.supports("fp4"))
    fams = [None] if engine is None else [engine.moe_kernel(gpu.family, kernel, weight=prec.weight.name, ep=x, gated=moes[0].gated)
                                          for x in (False, True)]
    high, bound = quantised_activation(gpu, engine, fams, prec, moes[0])
    return high if high is not None and (concurrency is None or float(concurrency) >= bound) else None


def _capped(lo: Op, hi: Op) -> Op:
    """The BF16-activation path below AITER's bound at no more than the quantised one's price at the same tokens. AITER set
    the bound where the two cost about the same and runs BF16 below it because it is not slower there; our BF16 price (BF16
    peak x the AITER moe_eff fitted on W4A4/FP8 DeepSeek runs, 32-row tile padding) has no run of its own to hold it and
    would put a step below the bound above one at it. The time is capped (each part scaled alike: which of them the
    unpriced A16W4 rate would move is not known); the work and math stay BF16's, what runs."""
    t_lo, t_hi = np.asarray(lo.time, float), np.asarray(hi.time, float)
    t = np.minimum(t_lo, t_hi)
    r = np.where(t_lo > 0, t / np.where(t_lo > 0, t_lo, 1.0), 1.0)
    return lo.replace(time=t, split=lambda: (np.asarray(lo.t_compute) * r, np.asarray(lo.t_memory) * r))


def _by_tokens(sel, a: Op, b: Op) -> Op:
    """`a` where `sel`, `b` elsewhere; one of them whole where `sel` is all one way (its math and breakdown as it runs)."""
    return a if np.all(sel) else b if not np.any(sel) else _either(sel, a, b)


def fc1_fused(gpu_family: str, fams, kernel: str) -> tuple[bool, bool]:
    """(routed rows gathered by the up-projection, activation in its epilogue) for the MoE kernel families
    `fams` (None: the kernel tables' own) on `gpu_family` for weights of GEMM kernel family `kernel` (FC1_FUSED)."""
    gathered = all(f is None for f in fams) and gpu_family in FC1_FUSED
    return gathered, gathered and kernel not in FC1_FUSED[gpu_family]


def _either(sel, a: Op, b: Op) -> Op:
    """One operator: `a` where `sel`, `b` elsewhere, element by element: times, work (FLOPs, bytes) and math (an array of
    names where the two differ: serve.energy takes each element's peak)."""
    math = a.math if a.math == b.math else np.where(sel, a.math, b.math)
    return a.replace(time=np.where(sel, a.time, b.time), math=math,
                     work=lambda: (np.where(sel, a.flops, b.flops), np.where(sel, a.bytes, b.bytes)),
                     split=lambda: (np.where(sel, a.t_compute, b.t_compute), np.where(sel, a.t_memory, b.t_memory)))


def _expert_gemm(label: _Label, n, k, at: _At, *, load, math, a_b, w_b, kernel, weight, fam, local, quant_kernel, kept=1.0, own_quant=False,
                 quant_rows=None, epilogue_quant=False, tile=None, even_grid=False, tuned=False, swap_ab=True, c_time_bytes=2.0):
    """The busiest rank's grouped expert GEMM in MoE kernel family `fam` (Engine.moe_kernel; None: the
    kernel tables') at the rates of dense GEMM kernel family `kernel`, keeping `kept` of them (MOE_RATES), its
    activations quantised as the weights' own family `quant_kernel` has them (gemm.quantise_kernel); `load` is
    routed_load's (experts read, busiest expert's rows, the rank's rows) and the routing skew alpha. Grouped GEMMs
    run at their family's rate against the dense tile model of their GEMM kernel family, with their own fixed cost
    (Calibration.moe_kernel, fitted on MoE kernels), not a dense GEMM's. Uniform routing: `active` groups of equal rows. Skewed: the busiest expert's rows
    and the other active experts' mean rows, in one launch (one fixed cost), their tiles quantised per
    expert as the grouped kernel tiles them; on a token-tile grid (`tile`) their CTAs wave-quantised together, as the
    one launch runs them (elsewhere each part's own tiles, waves and split-K). A family that sets up every expert the
    rank holds (`local`) each launch adds its time per such expert (Calibration.moe_kernel_expert) to the launch's fixed cost. `quant_rows`:
    the rows an activation quantisation of its own reads where they are not the GEMM's routed rows (AITER's stage 1,
    TRTLLM-Gen's FC1: gemm.gemm_time); `epilogue_quant`: the previous GEMM's epilogue wrote them quantised (TRTLLM-Gen's
    FC2, no pass); `tile`: the kernel's token tile (token_tile), each expert's rows computed in whole tiles of it on the
    kernel's own grid (gemm._token_tile_time), or with `even_grid` Marlin's block (marlin_block), its padded blocks spread
    evenly over the SMs (gemm._marlin_grid_time), with `tuned` the fastest of it and the next two rungs above (TRTLLM-Gen's
    autotuner: gemm._token_tile_time); its work (FLOPs, bytes) still its own rows."""
    active, top, on_rank, alpha = load
    cal = at.cal
    eff, overhead = expert_scale(cal, at.gpu, fam, kernel, kept), cal.moe_kernel(fam, kernel)[1]
    # TensorRT-LLM's CUTLASS MoE runner writes each local expert's problem (offsets, strides, TMA descriptors) and
    # its grouped GEMM's scheduler walks them all, busy or not: a cost per launch that grows with the experts per
    # rank, not with the tokens (the H100 table's one-token rows: ~30 us at 1-8 experts per rank, 60-110 us at 64-256)
    overhead = overhead + cal.moe_kernel_expert(fam, kernel) * np.asarray(local, float)
    # at another family's rates (MOE_RATES) the activations are still quantised, or not, as the weights' own family's are;
    # by a kernel of its own where the MoE kernel quantises them itself (`own_quant`: AITER's)
    quant = not epilogue_quant and gemm.quantise_kernel(at.engine, a_b, kernel=quant_kernel, fused=False if own_quant else None)
    kw = dict(eff_scale=eff, kernel=kernel, swap_ab=swap_ab, overhead_s=overhead, c_bytes=c_time_bytes, fused_quant="epilogue" if epilogue_quant else not quant,
              token_tile=tile, even_grid=even_grid, tuned=tuned)
    if alpha <= 0.0:
        return _gemm(label, top, n, k, at, math=math, a_b=a_b, w_b=w_b, groups=active, distinct=active, weight=weight, quant_rows=quant_rows,
                     c_time_bytes=kw.pop("c_bytes"), **kw)
    rest_groups = active - 1.0
    m_rest = np.where(rest_groups > 0, (on_rank - top) / np.maximum(rest_groups, 1e-30), 0.0)

    def fb():
        f1, b1 = gemm.gemm_flops_bytes(top, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=1.0, distinct_groups=1.0)
        f2, b2 = gemm.gemm_flops_bytes(m_rest, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=rest_groups, distinct_groups=rest_groups)
        return f1 + f2, b1 + b2
    if tile is not None:
        # on the token-tile grid (no split-K) the busiest expert's CTAs and the rest's fill one launch's waves together:
        # one call, the rank's rows over its active experts as its work, the two parts' whole tiles as its grid
        t, c, mm = gemm.gemm_time(on_rank / np.maximum(active, 1e-30), n, k, at.gpu, cal, math=math, a_bytes=a_b, w_bytes=w_b,
                                  groups=active, distinct_groups=active, engine=at.engine, quant_rows=quant_rows,
                                  parts=((top, 1.0), (m_rest, rest_groups)), **kw)
        return _op(label, "gemm", at, time=t, split=(c, mm), work=fb, math=math, weight=weight)
    # (a quantise pass over `quant_rows` priced once, with the first)
    th, ch, mh = gemm.gemm_time(top, n, k, at.gpu, cal, math=math, a_bytes=a_b, w_bytes=w_b, engine=at.engine, quant_rows=quant_rows, **kw)
    tr, cr, mr = gemm.gemm_time(m_rest, n, k, at.gpu, cal, math=math, a_bytes=a_b, w_bytes=w_b, groups=rest_groups,
                                distinct_groups=rest_groups, engine=at.engine, quant_rows=None if quant_rows is None else 0.0, **kw)
    # one launch: the second call's fixed costs (its own, an FP8/FP4 activation quantisation's and a
    # TMA-padded copy's) go
    padded = np.asarray(gemm.tma_padded(k, a_b, w_b)) > np.asarray(k)
    fixed = (overhead + (cal.kernel_overhead_s if quant else 0.0)
             + np.where(padded, cal.kernel_overhead_s, 0.0))
    t = th + np.where(tr > 0, tr - fixed, 0.0)
    return _op(label, "gemm", at, time=t, split=(ch + cr, mh + mr), work=fb, math=math, weight=weight)


def moe_rates(family: str, kernel: str, *, tables: bool) -> tuple[str, float]:
    """(the dense GEMM kernel family whose rates a grouped expert GEMM of weight family `kernel` runs at, the share of
    them it keeps): MOE_RATES where the kernel tables' own MoE runs it (`tables`: no engine's MoE kernel family), else
    its own at 1."""
    return MOE_RATES.get(family, {}).get(kernel, (kernel, 1.0)) if tables else (kernel, 1.0)


def expert_scale(cal: Calibration, gpu, fam: str | None, kernel: str, kept: float = 1.0) -> float:
    """The scale on the dense rate (gemm.peak_rate's eff_scale) of a grouped expert GEMM at the rates of dense family
    `kernel` in MoE kernel family `fam` (None: the kernel tables'): Calibration.moe_kernel's, times `kept` (moe_rates)."""
    return cal.moe_kernel(fam, kernel, rate=gemm.main_loop_rate(kernel, gpu))[0] * kept


def token_tile(tokens, top_k, local, *, a_b, w_b):
    """TRTLLM-Gen's token tile (tile_N, the rows of routed tokens one CTA computes for one expert) for `tokens` entering a
    rank that holds `local` experts: the next power of two of tokens x top_k / local experts, within the launcher's
    tiles (8 up to 256 for 4-bit weights on quantised activations, 64 on BF16 ones, 128 for 8- and 16-bit weights).
    It counts every token's top_k assignments as the rank's own, so under EP it is EP times the tile the rank's rows
    would take, and every expert computes whole tiles of it: flashinfer-ai/flashinfer
    csrc/trtllm_fused_moe_kernel_launcher.cu:953-989 (computeSelectedTileN; avg_tokens_per_expert = num_tokens x
    top_k / num_local_experts), :1604,1834,2137-2145,2923-2945 (the tiles per launcher)@fb28d72, and TensorRT-LLM's
    own (cpp/tensorrt_llm/thop/fp8BlockScaleMoe.cpp getValidConfigs: computeSelectedTileN(mSupportedTileN, numTokens,
    totalExpertsPerToken, numTotalLocalExperts)). `tokens`: those the call receives (under an all-to-all the dispatched
    ones, not their routed rows). The centre of the autotuner's candidates (computeSelectedTileN returns it, the ladder's
    next two and its previous one, :972-986: half, two and four times it), of which the tuned tactic is the fastest;
    priced as the fastest of it and the two above (gemm._token_tile_time, `tuned`), the one below left out on the B200
    MoE table's verdict (docs/modelling-notes.md#fixmono-tile-window). The untuned fallback (tactic -1) is
    selectDefaultTileN's *selected.begin(), the smallest candidate (:991-996,1012-1016@fb28d72). Not priced: the 256
    block FP8 also offers under MxFp8 quantisation (:2137-2145) and the 192 of MXFP4 x MXFP8 and NVFP4 x NVFP4
    (:2936-2941), which also makes 192 the previous candidate of 256 there."""
    top = gemm.token_tile_ladder(a_b, w_b)[-1]
    per_expert = np.asarray(tokens, float) * top_k / np.maximum(np.asarray(local, float), 1.0)
    return np.clip(2.0 ** np.ceil(np.log2(np.maximum(per_expert, 1.0))), 8.0, top)


# MoE kernel families that run Marlin's MoE kernel (moe_wna16_marlin_gemm): INT4 weights, and FP4 (E2M1) ones with their
# E8M0 scales per 32 (marlin_fp4)
MARLIN = ("marlin", "marlin_fp4")


def marlin_block(tokens, top_k, local):
    """Marlin's MoE block (moe_block_size: the routed rows of one expert a thread block computes against the whole of
    its weight slice) for `tokens` entering a rank that holds `local` experts: the first of 8, 16, 32, 48, 64 with
    tokens x top_k / local experts / block < 0.9, else 64. Each expert's rows are padded to whole blocks
    (moe_align_block_size) and each block re-reads its expert's weights and computes all its rows, padded ones too:
    vllm-project/vllm vllm/model_executor/layers/fused_moe/fused_marlin_moe.py fused_marlin_moe ("M block size
    selection logic", E = w1.size(0), the rank's experts)@00a130a, the same loop in SGLang's fused_marlin_moe. The
    H100 per-engine MoE table shows it: MXFP4 896 experts top-16 at EP 1, 3,072 tokens (55 rows an expert, one
    64-row block) 14.5 ms, 4,096 (73 rows, two blocks) 27.8 ms."""
    per_expert = np.asarray(tokens, float) * top_k / np.maximum(np.asarray(local, float), 1.0)
    out = np.full(per_expert.shape, 64.0)
    for b in (48.0, 32.0, 16.0, 8.0):  # the smallest block the loop stops at wins
        out = np.where(per_expert / b < 0.9, b, out)
    return out


def triton_block(tokens, local):
    """SGLang's Triton fused MoE block of routed rows (BLOCK_SIZE_M) on BF16 weights: 16 for a call of at most as many
    tokens as the rank's experts, else 64; each expert's rows padded to whole blocks (moe_align_block_size), each block
    against the expert's whole weight slice (sglang 0.5.14 srt/layers/moe/moe_runner/triton_utils/
    fused_moe_triton_config.py:229-243, get_default_config's unquantised branch). A tuned config for the shape (per
    E, N, GPU and Triton version, nearest M: try_get_optimal_moe_config) is not read: most table shapes have none on H100.
    Block FP8 is not on the grid (its default block, 64 at every M, took its rows 10.2 -> 11.9%)."""
    return np.where(np.asarray(tokens, float) <= np.asarray(local, float), 16.0, 64.0)


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
    the collector's own draws (tests/test_ffns.py simulates them)."""
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


# DeepEP (deepseek-ai/DeepEP), the expert-parallel all-to-all SGLang (--moe-a2a-backend deepep; server_args.py:1601-1616@0.5.14,
# default "none"), vLLM (--all2all-backend deepep_high_throughput / deepep_low_latency; config/parallel.py:185@0.24.0, default
# allgather_reducescatter) and TensorRT-LLM (its DeepEP / DeepEPLowLatency MoE communication under attention DP) run in
# place of NCCL. Its own kernels, not a ring: normal (high-throughput) mode sends each token once to every rank holding one
# of its experts, copied by `sms` SMs through per-channel NVLink buffers after a layout notify; low-latency mode puts every
# (token, expert) copy straight into the expert's receive slot, one kernel, no notify, no CUDA-graph break. SGLang's
# --deepep-mode auto runs normal for prefill batches and low-latency for decode (layers/moe/utils.py:159-166@0.5.14).
DEEPEP_MODES = ("normal", "low_latency")
# DeepEP's Buffer.num_sms (deepseek-ai/DeepEP deep_ep/buffer.py), which SGLang keeps unless --deepep-config sets it
# (layers/moe/token_dispatcher/deepep.py:313@0.5.14)
DEEPEP_DEFAULT_SMS = 20.0


def deepep_ranks_hit(experts, top_k, ep):
    """Expected ranks holding at least one of a token's `top_k` distinct experts, of `experts` split evenly over `ep`
    ranks: ep x (1 - C(E - E/ep, k) / C(E, k)), the hypergeometric chance a rank holds none of them."""
    E, k, n = (np.asarray(x, float) for x in (experts, top_k, ep))
    miss = np.ones(np.broadcast(E, k, n).shape)
    for i in range(int(np.max(k))):
        miss = miss * np.where(i < k, np.clip((E - E / n - i) / np.maximum(E - i, 1.0), 0.0, 1.0), 1.0)
    return n * (1.0 - miss)


def deepep_time(mode: str, phase: str, tokens, gpu, cal, *, hidden, top_k, experts, ep, payload_b, sms=0.0):
    """Seconds of one DeepEP `phase` (dispatch or combine) in `mode` (DEEPEP_MODES) on a rank holding `tokens`, each routed
    to `top_k` of `experts` experts spread evenly over `ep` ranks of one NVLink domain, `payload_b` bytes per hidden element
    on the wire (FP8 with its 1x128 scales, BF16, NVFP4); normal mode on `sms` SMs (0: DeepEP's default). `validate` and
    `calibrate` price the DeepEP table with it; serving, low-latency mode only where a run's flags name it (Engine.moe_a2a:
    moe_ops), each engine's default exchange being none of DeepEP's."""
    if mode not in DEEPEP_MODES or phase not in ("dispatch", "combine"):  # a caller's slip, not a user's input
        raise ValueError(f"DeepEP mode {mode!r} phase {phase!r}: one of {DEEPEP_MODES}, dispatch or combine")
    T, h = np.asarray(tokens, float), np.asarray(hidden, float)
    link = gpu.scale_up_link_bytes_per_s(np.maximum(np.asarray(ep, float) - 1.0, 1.0))  # a mesh's links to the other ep - 1 ranks
    if mode == "low_latency":
        # every copy, the rank's own experts' too, at a share of the link; a launch's fixed cost and one signal and poll
        # per expert's receive counter (the 1-token rows: 9.2 us at 8 experts to 16.6 us at 512, H100)
        copies = T * np.asarray(top_k, float) * h * payload_b
        return cal.deepep_ll_latency_s + np.asarray(experts, float) * cal.deepep_ll_expert_s + copies / (link * cal.deepep_ll_bw_eff)
    # normal: one row per (token, rank hit); the SMs copy every row, the link carries the other ranks' ones; a combine sends the
    # same rows back, each rank's sum over its experts. The SMs bound it below ~20 (H100: 15.8 ms at 20 SMs, 72.7 ms at 4, for
    # the same 131k tokens), the link above. A dispatch's SMs also spend a time per row whatever its width (its top-k ids and
    # weights and source index, sent beside it, and the receiver's per-token layout): at 65k tokens on 4 SMs its time is
    # 17.3 ms at hidden 2048 and 36.2 ms at 7168, half of it at 2048 not bytes; a combine's, whose layout the dispatch's
    # handle holds, is bytes (19.1 and 60.3 ms: 3.2x for 3.5x the width)
    hit = deepep_ranks_hit(experts, top_k, ep)
    row = T * h * payload_b
    n_sms = np.where(np.asarray(sms, float) > 0, sms, DEEPEP_DEFAULT_SMS)
    per_row = cal.deepep_ht_row_s if phase == "dispatch" else 0.0
    move = np.maximum(hit * (row / cal.deepep_sm_bw + T * per_row) / n_sms,
                      row * hit * (1.0 - 1.0 / np.asarray(ep, float)) / (link * cal.deepep_ht_bw_eff))
    return (cal.deepep_ht_latency_s if phase == "dispatch" else cal.deepep_ht_combine_latency_s) + move
