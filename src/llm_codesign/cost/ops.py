"""The operator graph: a flat, slash-named list of one forward pass, priced per GPU.

For a step holding decode tokens (B sequences at their contexts, k+1 tokens each when verifying
speculation) and a prefill chunk (T new tokens over c cached), every operator's FLOPs, bytes and
time are numpy arrays broadcast over the deployments being evaluated. Quantities are per GPU and per
layer; `count` is how many layers of one pipeline stage run the op.

Each layer kind (spec.kinds: a mixer or an FFN type) is priced by the builder registered for its
type with `op_builder` (cost.mixers, cost.ffns); a kind without one refuses to be priced.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost import kernels as cost
from llm_codesign.cost.arrays import Tokens, add
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.pipeline import slowest_stage
from llm_codesign.spec.engines import AR_NORM_KERNELS, Engine
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import GQA, Attention, DenseFfn, Ffn, Mixer, MoE, NoFfn, NoMixer
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import DTYPES, Precision, executable, gemm_math


@dataclass(frozen=True)
class Batch:
    """Work of one step on one attention-DP rank (one micro-batch)."""
    dec_seqs: object = 0.0
    dec_ctx: object = 0.0  # average context of decoding sequences (tokens already cached)
    dec_tokens_per_seq: object = 1.0  # 1 + draft length when verifying speculation
    pf_tokens: object = 0.0
    pf_seqs: object = 0.0
    pf_ctx: object = 0.0  # average cached context before the prefill chunk


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class Op:
    """One operator of a step, built with its final values (a copy with others: `replace`): FLOPs and
    bytes per GPU per layer, its time and the time's compute and memory parts, and `count`, the
    layers per stage that run it. What callers select operators by is typed: `part`, `group`, `role`
    (the name is for display). FLOPs and bytes, and the time's parts, may be given as a function
    returning both: a search reads neither, so they are computed (and held) only when asked."""
    name: str  # for display and breakdowns: layer/attn/qkv, layer3/moe/experts_down, lm_head, pp/send_recv
    kind: str  # gemm, attention, elementwise, comm
    time: object
    count: object
    work: object  # (FLOPs, bytes), or a function returning them
    split: object  # the time's (compute, memory) parts, or a function returning them
    part: str = "layer"  # attention, ffn, moe, lm_head, layer (norms, residuals) or pipeline
    group: int | None = None  # the layer group (ModelSpec.groups) it is priced under; None outside the layers
    role: str = ""  # what it is in its part: qkv, core_decode, router, experts_down, all_reduce, send_recv, ...
    math: str | None = None  # the tensor-core math a GEMM runs (bf16, fp8, fp4)
    weight: str | None = None  # the number format of the weights a GEMM reads
    kernels: object = 1.0  # launches per layer (an elementwise operator may stand for several)
    # of those, launches PDL does not overlap (no programmatic-dependent-launch attribute): a PyTorch elementwise
    # kernel's plain <<<grid, block, 0, stream>>> (aten/src/ATen/native/cuda/CUDALoops.cuh launch_legacy_kernel /
    # launch_vectorized_kernel@9b79ae91), FlashMLA's split-KV combine (flash_fwd_mla_kernel.h@08f1ea31)
    no_pdl: object = 0.0
    _asked: dict = field(default_factory=dict, init=False, repr=False)  # work and split, once computed

    def _value(self, what: str):
        v = getattr(self, what)
        if not callable(v):
            return v
        if what not in self._asked:
            self._asked[what] = v()
        return self._asked[what]

    @property
    def flops(self):
        return self._value("work")[0]

    @property
    def bytes(self):
        return self._value("work")[1]

    @property
    def t_compute(self):
        return self._value("split")[0]

    @property
    def t_memory(self):
        return self._value("split")[1]

    @property
    def total_time(self):
        return self.time * self.count

    def replace(self, **changes) -> Op:
        """This operator with `changes` (dataclasses.replace): what it computed when asked is computed again."""
        return replace(self, **changes)


class _At(NamedTuple):
    """Where one layer's operators are priced: the layers per stage that run them, the GPU, its
    calibration and the engine whose step runs them (None: the kernel tables' isolated kernels, NCCL
    collectives and nothing fused)."""
    count: object
    gpu: Gpu
    cal: Calibration
    engine: Engine | None = None
    moe: str | None = None  # without an engine, the MoE kernel family a kernel table's row names (None: the tables')
    # where the engine runs the layer's output all-reduces inside its all-reduce + RMSNorm kernel (Engine.ar_norm_fused)
    norm_fused: object = False
    # where the engine runs SGLang's Triton attention backend for the model's GQA layers (Engine.triton_attention; one per
    # element where the shapes' head sizes are arrays)
    triton: object = False


class Site(NamedTuple):
    """Where a builder's operators sit: the prefix their names are displayed under (layer/attn), the
    part of the layer they are (Op.part) and the layer group they are priced under (None: outside the
    layers). `site / "qkv"` is one operator's label: its name, part, group and role."""
    prefix: str
    part: str
    group: int | None = None

    def __truediv__(self, role: str) -> _Label:
        return _Label(f"{self.prefix}/{role}" if self.prefix else role, self.part, self.group, role)


class _Label(NamedTuple):
    name: str
    part: str
    group: int | None
    role: str


def _op(label: _Label, kind: str, at: _At, **fields) -> Op:
    """An operator of `kind` under `label`, run by the layers `at` counts."""
    return Op(name=label.name, kind=kind, part=label.part, group=label.group, role=label.role, count=at.count, **fields)


# a GEMM on BF16 activations and BF16 weights whatever the deployment's precision (MLA's absorbed
# decode products, the MoE router, the LM head)
_BF16 = {"math": "bf16", "a_b": 2.0, "w_b": 2.0, "weight": "bf16"}


def _gemm(label: _Label, m, n, k, at: _At, *, math, a_b, w_b, groups=1.0, distinct=None, eff_scale=1.0, kernel=None, swap_ab=None,
          overhead_s=None, weight=None, fused_quant=None, quant_rows=None, token_tile=None, even_grid=False, tuned=False, c_time_bytes=2.0):
    """A GEMM operator (gemm.gemm_time); `c_time_bytes`: the HBM time its output costs per value, as bytes at the streaming
    rate (2 for a BF16 store; more for an atomic accumulate, ffns.AITER_COMBINE_BPS), its work still 2 bytes a value."""
    def price():
        return gemm.gemm_time(m, n, k, at.gpu, at.cal, math=math, a_bytes=a_b, w_bytes=w_b, c_bytes=c_time_bytes, groups=groups, distinct_groups=distinct,
                              eff_scale=eff_scale, kernel=kernel, swap_ab=swap_ab, overhead_s=overhead_s, fused_quant=fused_quant,
                              engine=at.engine, quant_rows=quant_rows, token_tile=token_tile, even_grid=even_grid, tuned=tuned)

    # the time's compute and memory parts are priced again where asked (a breakdown, the roofline), not
    # held beside every GEMM of a search's chunk
    rows = m.m if isinstance(m, Tokens) else m
    return _op(label, "gemm", at, time=price()[0], split=lambda: price()[1:],
               work=lambda: gemm.gemm_flops_bytes(rows, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=groups,
                                                  distinct_groups=distinct),
               math=math, weight=weight)


def _comm(label: _Label, op, nbytes, n, at: _At, *, norm: bool = True):
    """A collective: no FLOPs, no HBM time of its own (its bytes, where it runs, computed when asked). `norm`: a
    layer's output all-reduce, which the residual add + RMSNorm follows (at.norm_fused says where the engine fuses
    them); an all-reduce of anything else (QK-norm statistics) says False."""
    t = cost.collective_time(op, nbytes, n, at.gpu, at.cal, engine=at.engine, norm_fused=at.norm_fused if norm else False)
    return _comm_of(label, t, nbytes, at)


def _comm_of(label: _Label, t, nbytes, at: _At):
    """A collective of `nbytes` that takes `t` (a caller's own pricing of it: Helix's overlapped exchange)."""
    return _op(label, "comm", at, time=t, split=(0.0, 0.0),
               work=lambda: (np.zeros_like(t), np.where(t > 0, np.asarray(nbytes, float), 0.0)))


def _elementwise(label: _Label, nbytes, kernels, at: _At, *, no_pdl=0.0):
    """A memory-bound pass of `nbytes` in `kernels` launches, `no_pdl` of them launched without PDL (Op.no_pdl)."""
    t, tc, tm = cost.elementwise_time(nbytes, kernels, at.gpu, at.cal)
    return _op(label, "elementwise", at, time=t, split=(tc, tm), work=(0.0, nbytes), kernels=kernels, no_pdl=no_pdl)


def _attention(label: _Label, flops, nbytes, times, at: _At, *, kernels=1.0, no_pdl=0.0):
    """An attention-core operator of the (time, compute, memory) an attention kernel model priced, in `kernels` launches,
    `no_pdl` of them launched without PDL (Op.no_pdl)."""
    t, tc, tm = times
    return _op(label, "attention", at, time=t, split=(tc, tm), work=(flops, nbytes), kernels=kernels, no_pdl=no_pdl)


class _Step(NamedTuple):
    """What one layer's operators share: tokens of the step on this rank, the parallel sizes as
    arrays, and the GEMM formats of the attention and FFN halves (`_gemm` keywords)."""
    h: int
    dec_tok: object  # decode tokens (sequences x tokens per sequence)
    T: object  # every token of this rank's step
    M: Tokens  # T as its GEMMs share it
    tp: object
    kvp: object
    adp: object
    ep: object
    moe_tp: object
    fa: dict  # attention GEMMs (the output projection's; all where fq is fa's): math, activation and weight bytes, kernel, weight format
    ff: dict  # FFN and expert GEMMs
    shared_quant: bool | None = None  # the shared expert's first GEMM's `fused_quant` (Engine.moe_input_quant_fused)
    sf: dict | None = None  # the shared experts' GEMMs where not `ff` (emulated BF16 linears: _shared_emulated)
    fq: dict | None = None  # the attention's input projections' GEMMs (Precision.attn_in): q/k/v, MLA's q_a, q_b, kv_a, kv_b


def _step(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, b: Batch, *, engine: Engine | None) -> _Step:
    dec_tok = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq
    fa, ff = (_gemm_format(w, prec.activation, gpu, engine) for w in (prec.attn, prec.weight))
    fq = _gemm_format(prec.attn_in, prec.activation, gpu, engine, excluded=prec.attn_in != prec.attn)
    T = dec_tok + np.asarray(b.pf_tokens, float)
    return _Step(model.hidden, dec_tok, T, Tokens(T), *(np.asarray(x, float) for x in (sh.tp, sh.kvp, sh.adp, sh.ep, sh.moe_tp)),
                 fa, ff, None if engine is None else engine.moe_input_quant_fused(model.architecture), fq=fq)


def _gemm_format(weight, activation, gpu: Gpu, engine: Engine | None, *, excluded: bool = False) -> dict:
    """The `_gemm` keywords of a linear whose weights are `weight` on the step's `activation`: its math, the kernel (the
    engine's where not the kernel tables', DeepGEMM's), and the bytes a value of each operand. `excluded`: a 16-bit part
    of the attention a checkpoint leaves beside quantised ones (Precision.attn_in), which the engine builds as an
    unquantised linear (TensorRT-LLM: a QuantConfig with no quant_algo for each module is_module_excluded_from_quantization
    names, tensorrt_llm/_torch/models/modeling_utils.py@000a01de DecoderModelForCausalLM.__post_init__; vLLM's
    UnquantizedLinearMethod where is_layer_skipped): it takes the BF16 hidden state as it is, 2 bytes a value and no
    quantise. A whole attention left BF16 (Maverick FP8, AMD Quark's MXFP4 R1) keeps the step's activation bytes, as
    fitted: read as BF16 it moved MI355X's MXFP4 TPOT 9.6 -> 11.8% (docs/modelling-notes.md#attnproj-per-projection)."""
    math = gemm_math(weight, activation, gpu)
    kernel = gemm.gemm_kernel(math, weight.name, fp4_math=gpu.supports("fp4"))
    if engine is not None:
        kernel = engine.gemm_kernel(gpu.family, kernel)
    a_b = 2.0 if excluded and weight.bits >= 16 else activation.bytes_per_value()
    return {"math": math, "a_b": a_b, "w_b": weight.bytes_per_weight(), "kernel": kernel, "weight": weight.name}


class _Builder(NamedTuple):
    build: Callable  # (layer half, Site, *, at, s, b, prec) -> list[Op]
    part: str  # the part its operators are (Op.part; an FFN's names are under it too)


_BUILDERS: dict[type, _Builder] = {}


def op_builder(kind: type, *, part: str):
    """Register the decorated function as the operators of a layer kind, `kind` a Mixer or Ffn type
    (spec.kinds): called as fn(mixer_or_ffn, site, at=_At, s=_Step, b=Batch, prec=Precision), it
    returns the kind's operators per GPU and layer, each labelled `site / "its role"` (Site). `part`
    is their Op.part ("attention", "ffn", "moe"). One builder per type, its subclasses included: a
    subclass registers its own."""
    if not (isinstance(kind, type) and issubclass(kind, (Mixer, Ffn))):
        raise TypeError(f"op_builder takes a Mixer or Ffn type (spec.kinds), not {kind!r}")

    def register(fn):
        if kind in _BUILDERS:
            raise ValueError(f"{kind.__name__} already has an op builder ({_BUILDERS[kind].build.__qualname__})")
        _BUILDERS[kind] = _Builder(fn, part)
        return fn
    return register


def builder(x: Mixer | Ffn) -> _Builder:
    """The builder registered for the type of `x`; a type without one raises, never prices 0."""
    try:
        return _BUILDERS[type(x)]
    except KeyError:
        raise NotImplementedError(f"no op builder for {type(x).__name__} (kind {x.kind!r}): register one with "
                                  "cost.ops.op_builder") from None


def layer_ops(model: ModelSpec, layer: Layer, count, gpu: Gpu, cal: Calibration, *, prec: Precision,
              sh: Plan, b: Batch, prefix: str, parts: tuple[str, ...] = ("attn", "ffn"), engine: Engine | None = None,
              group: int = 0, moe_kernel: str | None = None) -> list[Op]:
    """Operators of one layer in `engine`'s step (None: the kernel tables' kernels, the MoE's those of
    `moe_kernel`, a family of spec.engines.MOE_KERNELS); `parts` selects the attention half, the FFN half
    (with the layer's elementwise work) or both, so layers that share one half can be priced once. Their
    names start with `prefix` (none: "attn/qkv"); `group` is the layer group (ModelSpec.groups) they are
    priced under (Op.group)."""
    a = layer.attn if "attn" in parts else NoMixer()
    f = layer.ffn if "ffn" in parts else NoFfn()
    triton = engine is not None and engine.triton_attention(model, gpu, prec.kv.name)  # the format the launch names
    # an engine that emulates a 4-bit format (Engine.mxfp4_emulation, asked of the checkpoint's: vLLM's NVFP4 on AMD, which
    # executable maps to the GPU's MXFP4) runs BF16 GEMMs on the weights dequantised; the rest as engines map it
    emulated = engine is not None and engine.mxfp4_emulation(prec, gpu, moe=model.is_moe) is not None
    held, prec = _emulated_precisions(layer.ffn, prec, executable(prec, gpu)[0]) if emulated else (None, executable(prec, gpu)[0])
    s = _step(model, gpu, prec, sh, b, engine=engine)
    if emulated and _shared_emulated(f, prec):  # the shared experts run vLLM's emulated linear: BF16 GEMMs (_emulated_precisions)
        s = s._replace(sf=_step(model, gpu, replace(prec, weight=DTYPES["bf16"]), sh, b, engine=engine).ff)
    dense_tp = s.tp * s.kvp  # Helix re-uses the KV-parallel GPUs as TP for everything after attention
    fused = False
    if engine is not None:
        # the engine's own all-reduce, which carries the norms, runs inside one scale-up domain only (collective_time)
        fused = engine.ar_norm_fused(model.architecture, adp=s.adp, nbytes=s.T * s.h * 2.0, n=dense_tp, family=gpu.family) & (
            dense_tp <= gpu.scale_up_domain)
    at = _At(count, gpu, cal, engine, moe_kernel, fused, triton)
    mixer, ffn = builder(a), builder(f)
    ops = mixer.build(a, Site(f"{prefix}/attn" if prefix else "attn", mixer.part, group), at=at, s=s, b=b, prec=prec)
    ops += ffn.build(f, Site(f"{prefix}/{ffn.part}" if prefix else ffn.part, ffn.part, group), at=at, s=s, b=b, prec=prec)
    if emulated:
        ops += [_mxfp4_dequant(a, f, held, s, site=Site(prefix, "layer", group), at=at),
                _mxfp4_input_qdq(a, f, held, s, site=Site(prefix, "layer", group), at=at)]
        if isinstance(f, MoE) and prec.weight.name == "nvfp4":  # the emulated experts' own QDQs (_emulated_precisions)
            ops.append(_nvfp4_experts_qdq(f, s, site=Site(prefix, "layer", group), at=at))
    if "ffn" not in parts:
        return ops
    # norms, residual adds, activation, RoPE: streamed once each
    ew_bytes = s.T * (6.0 * s.h + 3.0 * f.act_width / np.maximum(dense_tp, 1.0)) * 2.0
    kernels = cal.elementwise_kernels_per_layer
    if engine is not None:
        kernels = np.where(fused, np.maximum(kernels - AR_NORM_KERNELS, 0.0), kernels)  # the norms run in the all-reduces
    ops.append(_elementwise(Site(prefix, "layer", group) / "elementwise", ew_bytes, kernels, at))
    return ops


# the 4-bit formats an engine emulates (Engine.mxfp4_emulation): each forward dequantises them to BF16 for a BF16 GEMM
EMULATED_FP4 = ("mxfp4", "nvfp4")


def _bf16_if_fp4(d):
    return DTYPES["bf16"] if d is not None and d.name in EMULATED_FP4 else d


def _shared_emulated(f: Ffn, gemms: Precision) -> bool:
    """Whether `f` has shared experts beside NVFP4 routed experts run W4A16 (_emulated_precisions): those are linears,
    emulated like a dense FFN's (dequantised to BF16, a BF16 GEMM: _mxfp4_dequant, _mxfp4_input_qdq)."""
    return isinstance(f, MoE) and bool(np.any(f.shared_inter)) and gemms.weight.name == "nvfp4"


def _emulated_precisions(ffn: Ffn, asked: Precision, run: Precision) -> tuple[Precision, Precision]:
    """(what the emulated linears hold, what the GEMMs run) where the engine emulates the checkpoint's 4-bit format: its
    linears as BF16 GEMMs at BF16 activations on the weights dequantised each forward (`held` names the halves emulated, in
    their 4-bit format). A MoE's NVFP4 experts are not: vLLM's Nvfp4QuantizationEmulationTritonExperts dequantises each
    tile of 4-bit weights inside its Triton GEMM (fused_moe/experts/nvfp4_emulation_moe.py:88-110, 494-530@0.33.0), priced
    weight-only (W4A16), its attention linears emulated. Only the routed experts: decided per layer's FFN (`ffn`), a
    MoE model's dense-FFN layers are emulated linears, and so are its shared experts (_shared_emulated)."""
    bf16 = DTYPES["bf16"]
    experts = isinstance(ffn, MoE) and asked.weight.name == "nvfp4"
    held = Precision(bf16 if experts else asked.weight, bf16, asked.kv, asked.attn, asked.attn_in_weight)
    gemms = Precision(asked.weight if experts else _bf16_if_fp4(run.weight), bf16, run.kv, _bf16_if_fp4(asked.attn),
                      _bf16_if_fp4(asked.attn_in_weight))
    return held, gemms


def _mxfp4_dequant(a: Mixer, f: Ffn, held: Precision, s: _Step, *, site: Site, at: _At) -> Op:
    """An emulated MXFP4 layer's dequantisation (Engine.mxfp4_emulation: vLLM's Quark on CDNA3): each forward, one kernel
    a linear (amd-quark's dq_mxfp4; two a half: QKV and output, gate/up and down) reads every MXFP4 weight this GPU holds,
    packed with its E8M0 scales (0.53125 bytes a weight), and writes it in BF16 (2 bytes), which the BF16 GEMM then reads
    (priced there); an attention's input projections and its output each where emulated (Precision.attn_in: a
    checkpoint's BF16 q/kv run as they are). The input's quantise-dequantise: _mxfp4_input_qdq."""
    at_in, at_o, at_f = (d.name in EMULATED_FP4 for d in (held.attn_in, held.attn, held.weight))
    n_o = a.o_bytes_per_gpu(s.h, 1.0, s.tp, s.kvp) if isinstance(a, Attention) else 0.0
    n_in = a.weight_bytes_per_gpu(s.h, 1.0, s.tp, s.kvp) - n_o
    n_attn = n_in * (held.attn_in.bytes_per_weight() + 2.0) * at_in + n_o * (held.attn.bytes_per_weight() + 2.0) * at_o
    n_ffn = (f.weight_bytes_per_gpu(s.h, 1.0, tp=s.tp, kvp=s.kvp, ep=s.ep, moe_tp=s.moe_tp, expert_bytes=0.0)
             * (held.weight.bytes_per_weight() + 2.0) if at_f else 0.0)
    # a kernel a linear: the attention's two (inputs, output) each where emulated, the FFN's two a half
    halves = (at_in + at_o) / 2.0 * float(not isinstance(a, NoMixer)) + at_f * float(not isinstance(f, NoFfn))
    if s.sf is not None:  # the shared experts' two linears (_shared_emulated), sharded like a dense FFN
        n_ffn = n_ffn + f.mats * s.h * f.shared_inter / (s.tp * s.kvp) * (DTYPES["nvfp4"].bytes_per_weight() + 2.0)
        halves = halves + 1.0
    return _elementwise(site / "mxfp4_dequant", n_attn + n_ffn, 2.0 * halves, at)


def _mxfp4_input_qdq(a: Mixer, f: Ffn, held: Precision, s: _Step, *, site: Site, at: _At) -> Op:
    """An emulated MXFP4 layer's activation quantise-dequantise: QuarkOCP_MX.apply_weights runs `qdq_x =
    self.quant_dequant_func(x)` before each F.linear (quark_ocp_mx.py@039541c7), amd-quark's mx.qdq_mxfp4, one kernel
    returning a tensor of x's shape and dtype (mxfp4_utils.py _quant_dequant_mxfp4 and its fake, torch.empty_like(x)
    @01b817db): each linear's input, T tokens x K values, read and written in BF16, 4 bytes a value, one launch a linear.
    K a token: QKV's h and O's heads x v_head_dim / (tp x kvp); gate/up's h and down's inter / (tp x kvp), as the weights
    shard (O's over TP x Helix's ranks: spec.kinds._o_bytes_per_gpu)
    (a mixer other than GQA, none of which an emulated MXFP4 checkpoint has, read as two linears of h)."""
    width, kernels = 0.0, 0.0
    if not isinstance(a, NoMixer):  # the input projections' and the output's, each where emulated (Precision.attn_in)
        at_in, at_o = held.attn_in.name in EMULATED_FP4, held.attn.name in EMULATED_FP4
        width, kernels = s.h * at_in + (a.heads * a.v_head_dim / (s.tp * s.kvp) if isinstance(a, GQA) else s.h) * at_o, at_in + at_o
    if held.weight.name in EMULATED_FP4 and not isinstance(f, NoFfn):
        width, kernels = width + s.h + (f.inter / (s.tp * s.kvp) if isinstance(f, DenseFfn) else s.h), kernels + 2.0
    if s.sf is not None:  # the shared experts' gate/up (h) and down (shared_inter / TP) inputs (_shared_emulated)
        width, kernels = width + s.h + f.shared_inter / (s.tp * s.kvp), kernels + 2.0
    return _elementwise(site / "mxfp4_act_qdq", s.T * width * 4.0, kernels, at)


def _nvfp4_experts_qdq(f: MoE, s: _Step, *, site: Site, at: _At) -> Op:
    """vLLM's emulated NVFP4 experts quantise-dequantise their inputs before each of their two GEMMs
    (moe_kernel_quantize_input(..., quantization_emulation=True) on hidden_states and on the activation's output,
    fused_moe/experts/nvfp4_emulation_moe.py:486-492, 517-523@0.33.0): BF16 in and out, 4 bytes a value, one launch each.
    Values: the rank's T tokens x h, then its (token, expert) pairs, T x top_k / EP, x expert_inter / MoE-TP."""
    width = s.h + f.top_k * f.expert_inter / (np.asarray(s.ep, float) * np.asarray(s.moe_tp, float))
    return _elementwise(site / "nvfp4_experts_qdq", s.T * width * 4.0, 2.0, at)


def forward_ops(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, sh: Plan, *, b: Batch,
                engine: Engine | None = None, sample: bool = False, all_stages: bool = False):
    """All operators of one step on one GPU of the slowest pipeline stage (the LM head, and with `sample`
    the logits gather and sampler, counted where that stage is the last, which runs them, and weighed in
    choosing it), in `engine`'s step (None: the kernel tables' kernels);
    with `sample`, the engine's sampler after the head (a target step's, not a draft pass's: those
    sample apart, mtp_module_ops). With `all_stages`, (those, the same over every stage in turn: each layer and
    the last stage's operators once, a send/recv per stage, the pp - 1 activation hops and the sampled tokens' hop
    back to stage 0, latency-bound, priced as one more; docs/modelling-notes.md#pp-stage-sum)."""
    pp = np.asarray(sh.pp, float)
    parts: list[tuple[list[Op], tuple[int, ...]]] = []  # operators priced per layer, and the groups they serve
    multi = len(model.groups) > 1
    if not multi:
        layer, n = model.groups[0]
        parts.append((layer_ops(model, layer, 1.0, gpu, cal, prec=prec, sh=sh, b=b, prefix="layer", engine=engine), (0,)))
    else:
        # layers that share an attention (or FFN) half are priced once, with the summed layer count
        # (DeepSeek's dense and MoE layers share MLA; gpt-oss's sliding and full layers share experts)
        for part, key in (("attn", lambda layer: layer.attn), ("ffn", lambda layer: layer.ffn)):
            seen: dict = {}
            for i, (layer, _) in enumerate(model.groups):
                seen.setdefault(key(layer), [i, layer, []])[2].append(i)
            for i, layer, members in seen.values():
                half = layer_ops(model, layer, 1.0, gpu, cal, prec=prec, sh=sh, b=b, prefix=f"layer{i}", parts=(part,), engine=engine,
                                 group=i)
                parts.append((half, tuple(members)))
    # LM head: the sampled positions only (every decode token, one per prefilled sequence)
    logits = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq + np.asarray(b.pf_seqs, float)
    dense_tp = np.asarray(sh.tp, float) * np.asarray(sh.kvp, float)
    once = _At(np.ones_like(pp), gpu, cal, engine)  # priced once per step on the stage that runs it
    last = [_gemm(Site("", "lm_head") / "lm_head", logits, model.vocab / dense_tp, model.hidden, once, **_BF16)]
    if sample and engine is not None:
        # the vocabulary-parallel head's logits gathered on every TP rank (TensorRT-LLM LMHead with
        # gather_output; SGLang LogitsProcessor._get_logits, tensor_model_parallel_all_gather; vLLM
        # LogitsProcessor._gather_logits), then one pass of the sampler over them (greedy argmax or
        # top-k / top-p: TensorRT-LLM's sampler, SGLang's and vLLM's Sampler), both in BF16; all of it on
        # the last pipeline stage alone (TensorRT-LLM _torch/pyexecutor/py_executor.py@9521caf
        # _executor_loop_pp: forward on all ranks, _sample_async on the last; SGLang models/llama.py@bf7a0e2
        # LlamaForCausalLM.forward: logits_processor only where pp_group.is_last_rank; vLLM
        # v1/worker/gpu/pp_utils.py@eee051a: the last rank samples and broadcasts the tokens)
        nbytes = logits * model.vocab * 2.0
        S = Site("sampler", "lm_head")
        last += [_comm(S / "logits_gather", "all_gather", nbytes, dense_tp, once), _elementwise(S / "sample", nbytes, 1.0, once)]
    # the last stage weighs its layers plus every operator it alone runs (head, gather, sampler): the
    # same operators, at the same per-step times, that the step sums below
    counts, head_on = slowest_stage(model, pp, [m for _, m in parts], part_time=lambda j: step_time(parts[j][0]),
                                    head_time=sum(op.time for op in last))
    # each part's operators counted by the layers of the slowest stage that run them (one count object
    # per part, as step_time sums them)
    ops = [op.replace(count=c) for (p_ops, _), c in zip(parts, counts, strict=True) for op in p_ops]
    ops += [op.replace(count=head_on) for op in last]
    send = []
    if np.any(pp > 1):
        T = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq + np.asarray(b.pf_tokens, float)
        send = [_comm(Site("pp", "pipeline") / "send_recv", "p2p", np.where(pp > 1, T * model.hidden * 2.0, 0.0),
                      np.where(pp > 1, 2.0, 1.0), once)]
    return (ops + send, _every_stage(model, parts, last + send, pp)) if all_stages else ops + send


def _every_stage(model: ModelSpec, parts, last: list[Op], pp) -> list[Op]:
    """forward_ops's operators over every stage in turn: each part's layers all counted once (one count object per part,
    as step_time sums them), the last stage's own operators once, the send/recv once per stage."""
    totals = [sum(np.asarray(model.groups[g][1], float) for g in m) + 0.0 * pp for _, m in parts]
    every = [op.replace(count=c) for (p_ops, _), c in zip(parts, totals, strict=True) for op in p_ops]
    return every + [op.replace(count=pp) if op.part == "pipeline" else op for op in last]


def mtp_module_ops(model: ModelSpec, gpu: Gpu, cal: Calibration, sh: Plan, *, tokens, seqs, engine: Engine) -> list[Op]:
    """What one DeepSeek MTP pass over `tokens` of `seqs` sequences runs beside its decoder layer and
    the shared LM head (DeepSeek-V3 report, sec. 2.2): RMSNorms of the previous hidden state and of the
    token's embedding, their concatenation projected back to the hidden size by eh_proj (BF16 [2h, h],
    split over TP with one more all-reduce where `engine` splits it, Engine.mtp_eh_proj_split), and greedy sampling of one token per sequence (TensorRT-LLM
    _torch/speculative/mtp.py draft_sampler: an argmax over each rank's vocabulary slice, then the
    (index, value) pairs gathered)."""
    at = _At(np.ones_like(np.asarray(sh.pp, float)), gpu, cal, engine)
    h, tp = model.hidden, np.asarray(sh.tp, float) * np.asarray(sh.kvp, float)
    tokens, seqs = np.asarray(tokens, float), np.asarray(seqs, float)
    split = engine.mtp_eh_proj_split(sh.adp)
    P = Site("mtp", "lm_head")
    return [_elementwise(P / "norms", tokens * h * 2.0 * 4.0, 2.0, at),  # two vectors read and written in BF16
            _gemm(P / "eh_proj", tokens, h, np.where(split, 2.0 * h / tp, 2.0 * h), at, **_BF16),
            _comm(P / "eh_proj_all_reduce", "all_reduce", np.where(split, tokens * h * 2.0, 0.0), tp, at),
            _elementwise(P / "argmax", seqs * model.vocab / tp * 4.0, 1.0, at),  # this rank's FP32 logits
            _comm(P / "argmax_gather", "all_gather", seqs * 8.0 * tp, tp, at)]


def spec_worker_ops(gpu: Gpu, cal: Calibration, sh: Plan, *, engine: Engine, method: str, k) -> list[Op]:
    """The speculative worker's own small kernels in one step at draft length `k` (acceptance, gather indices, casts,
    metadata updates: Engine.spec_worker_kernels), as one elementwise operator, mtp/worker, each launch at the
    elementwise fixed cost and no bytes counted; none where the engine counts none. Its kernels are PyTorch's own,
    none PDL-launched: price it with step_time, not kernels_time, which credits PDL at every launch."""
    n = np.asarray(engine.spec_worker_kernels(method, k), float)
    if not np.any(n > 0):
        return []
    at = _At(np.ones_like(np.asarray(sh.pp, float)), gpu, cal, engine)
    return [_op(Site("mtp", "lm_head") / "worker", "elementwise", at, time=n * cal.kernel_overhead_s, split=(0.0, 0.0), work=(0.0, 0.0),
                kernels=n)]


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
        t = add(np.float64(0.0), (op.time for op in ops[i:j])) * c if j - i > 1 else ops[i].time * c
        total = add(total, (t,))
        i = j
    return total


def launches(ops: list[Op], *, pdl: bool = False):
    """Kernel launches of one step: each operator's own (one, or an elementwise operator's count, less
    what the engine fused away) wherever it runs; with `pdl`, those PDL may overlap (less Op.no_pdl's)."""
    shape = np.broadcast_shapes(*(np.shape(op.time) for op in ops), *(np.shape(op.count) for op in ops))
    n = np.zeros(shape)
    everywhere = 0.0  # the operators that run at every element, at their counts' own (per-plan) shape
    for op in ops:  # in place: a search's whole chunk per operator
        t = np.asarray(op.time)
        own = op.count * (np.asarray(op.kernels, float) - np.asarray(op.no_pdl, float) if pdl else op.kernels)
        if t.size and t.min() > 0:
            everywhere = everywhere + own
        else:
            np.add(n, own, out=n, where=t > 0)
    return n + everywhere
