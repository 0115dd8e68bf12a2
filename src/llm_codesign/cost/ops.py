"""The operator graph: a flat, slash-named list of one forward pass, priced per GPU.

For a step holding decode tokens (B sequences at their contexts, k+1 tokens each when verifying
speculation) and a prefill chunk (T new tokens over c cached), every operator's FLOPs, bytes and
time are numpy arrays broadcast over the deployments being evaluated. Quantities are per GPU and per
layer; `count` is how many layers of one pipeline stage run the op.

Each layer kind (spec.kinds: a mixer or an FFN type) is priced by the builder registered for its
type with `op_builder` (cost.mixers, cost.ffns); a kind without one refuses to be priced.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, NamedTuple

import numpy as np

from llm_codesign.cost import kernels as cost
from llm_codesign.cost.calibration import Calibration
from llm_codesign.spec.engines import AR_NORM_KERNELS, Engine
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import Ffn, Mixer, NoFfn, NoMixer
from llm_codesign.spec.model import Layer, ModelSpec, stage_split
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


class _At(NamedTuple):
    """Where one layer's operators are priced: the layers per stage that run them, the GPU, its
    calibration and the engine whose step runs them (None: the kernel tables' isolated kernels, NCCL
    collectives and nothing fused)."""
    count: object
    gpu: Gpu
    cal: Calibration
    engine: Engine | None = None
    moe: str | None = None  # without an engine, the MoE kernel family a kernel table's row names (None: the tables')


# a GEMM on BF16 activations and BF16 weights whatever the deployment's precision (MLA's absorbed
# decode products, the MoE router, the LM head)
_BF16 = {"math": "bf16", "a_b": 2.0, "w_b": 2.0, "weight": "bf16"}


def _gemm(name, m, n, k, at: _At, *, math, a_b, w_b, groups=1.0, distinct=None, eff_scale=1.0, kernel=None, swap_ab=None,
          overhead_s=None, weight=None, fused_quant=None):
    def price():
        return cost.gemm_time(m, n, k, at.gpu, at.cal, math=math, a_bytes=a_b, w_bytes=w_b, groups=groups, distinct_groups=distinct,
                              eff_scale=eff_scale, kernel=kernel, swap_ab=swap_ab, overhead_s=overhead_s, fused_quant=fused_quant,
                              engine=at.engine)

    # the time's compute and memory parts are priced again where asked (a breakdown, the roofline), not
    # held beside every GEMM of a search's chunk
    rows = m.m if isinstance(m, cost.Tokens) else m
    return Op(name, "gemm", None, None, time=price()[0], t_compute=None, t_memory=None, count=at.count, parts=lambda: price()[1:],
              fb=lambda: cost.gemm_flops_bytes(rows, n, k, a_bytes=a_b, w_bytes=w_b, c_bytes=2.0, groups=groups, distinct_groups=distinct),
              math=math, weight=weight)


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
    t = cost.collective_time(op, nbytes, n, at.gpu, at.cal, engine=at.engine)
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


def _step(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, b: Batch, *, engine: Engine | None) -> _Step:
    dec_tok = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq
    act_b = prec.activation.bytes_per_value()
    math_attn = gemm_math(prec.attn, prec.activation, gpu)
    math_ffn = gemm_math(prec.weight, prec.activation, gpu)
    fp4 = gpu.supports("fp4")
    kernels = [cost.gemm_kernel(math_attn, prec.attn.name, fp4_math=fp4), cost.gemm_kernel(math_ffn, prec.weight.name, fp4_math=fp4)]
    if engine is not None:  # the kernel the engine runs where it is not the kernel tables' (DeepGEMM's)
        kernels = [engine.gemm_kernel(gpu.family, k) for k in kernels]
    fa = {"math": math_attn, "a_b": act_b, "w_b": prec.attn.bytes_per_weight(), "kernel": kernels[0]}
    ff = {"math": math_ffn, "a_b": act_b, "w_b": prec.weight.bytes_per_weight(), "kernel": kernels[1]}
    T = dec_tok + np.asarray(b.pf_tokens, float)
    return _Step(model.hidden, dec_tok, T, cost.Tokens(T), *(np.asarray(x, float) for x in (sh.tp, sh.kvp, sh.adp, sh.ep, sh.moe_tp)),
                 fa, ff)


class _Builder(NamedTuple):
    build: Callable  # (layer half, name prefix, *, at, s, b, prec) -> list[Op]
    part: str  # the part its operators are tagged with (and, for an FFN, named by)


_BUILDERS: dict[type, _Builder] = {}


def op_builder(kind: type, *, part: str):
    """Register the decorated function as the operators of a layer kind, `kind` a Mixer or Ffn type
    (spec.kinds): called as fn(mixer_or_ffn, name_prefix, at=_At, s=_Step, b=Batch, prec=Precision),
    it returns the kind's operators per GPU and layer. `part` tags them (Op.part: "attention", "ffn",
    "moe"). One builder per type, its subclasses included: a subclass registers its own."""
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
              moe_kernel: str | None = None) -> list[Op]:
    """Operators of one layer in `engine`'s step (None: the kernel tables' kernels, the MoE's those of
    `moe_kernel`, a family of spec.engines.MOE_KERNELS); `parts` selects the attention half, the FFN half
    (with the layer's elementwise work) or both, so layers that share one half can be priced once."""
    a = layer.attn if "attn" in parts else NoMixer()
    f = layer.ffn if "ffn" in parts else NoFfn()
    prec = executable(prec, gpu)[0]  # a format the GPU cannot run is priced as engines map it
    s, at = _step(model, gpu, prec, sh, b, engine=engine), _At(count, gpu, cal, engine, moe_kernel)
    dense_tp = s.tp * s.kvp  # Helix re-uses the KV-parallel GPUs as TP for everything after attention
    mixer, ffn = builder(a), builder(f)
    ops = _tag(mixer.build(a, f"{prefix}/attn", at=at, s=s, b=b, prec=prec), mixer.part, prec.attn.name)
    ops += _tag(ffn.build(f, f"{prefix}/{ffn.part}", at=at, s=s, b=b, prec=prec), ffn.part, prec.weight.name)
    if "ffn" not in parts:
        return ops
    # norms, residual adds, activation, RoPE: streamed once each
    ew_bytes = s.T * (6.0 * s.h + 3.0 * f.act_width / np.maximum(dense_tp, 1.0)) * 2.0
    kernels = cal.elementwise_kernels_per_layer
    if engine is not None:
        fused = engine.ar_norm_fused(model.architecture, adp=s.adp, nbytes=s.T * s.h * 2.0, n=dense_tp, family=gpu.family)
        kernels = np.where(fused, np.maximum(kernels - AR_NORM_KERNELS, 0.0), kernels)  # the norms run in the all-reduces
    ops.append(_elementwise(f"{prefix}/elementwise", ew_bytes, kernels, at))
    return ops


def forward_ops(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, sh: Plan, *, b: Batch,
                engine: Engine | None = None) -> list[Op]:
    """All operators of one step on one GPU of the slowest pipeline stage (the LM head counted where
    that stage is the last, which holds it), in `engine`'s step (None: the kernel tables' kernels)."""
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
                parts.append((layer_ops(model, layer, 1.0, gpu, cal, prec=prec, sh=sh, b=b, prefix=f"layer{i}", parts=(part,), engine=engine),
                              tuple(members)))
    # LM head: the sampled positions only (every decode token, one per prefilled sequence)
    logits = np.asarray(b.dec_seqs, float) * b.dec_tokens_per_seq + np.asarray(b.pf_seqs, float)
    dense_tp = np.asarray(sh.tp, float) * np.asarray(sh.kvp, float)
    once = _At(np.ones_like(pp), gpu, cal, engine)  # priced once per step on the stage that runs it
    head = _tag([_gemm("lm_head", logits, model.vocab / dense_tp, model.hidden, once, **_BF16)], "lm_head", "bf16")
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
                           once)], "pipeline", "bf16")
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
