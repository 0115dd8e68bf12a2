"""Check a model shape against the hardware guidelines; every finding carries its cost as predicted
by the same cost model `estimate` uses (no separate heuristics), so a fix's gain is the tool's own
prediction."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ffns import EXPERT_GEMMS, distinct_experts
from llm_codesign.cost.ops import Batch, forward_ops, layer_ops, step_time
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import Serving, decode_step, evaluate
from llm_codesign.spec.engines import TRTLLM
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import GQA, MLA, DenseFfn, GatedDeltaNet, Mamba2, MoE, NoFfn, NoMixer
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan, validity
from llm_codesign.spec.precision import Precision

RULES = {
    "R1": ("memory-bound-gemm", "A GEMM whose small reduction or output dimension (or tokens per expert) keeps it below the GPU's ridge point"),
    "R2": ("tile-alignment", "Dimensions should be multiples of 128, better 256 (2-CTA MMA) or 512, per GPU"),
    "R3": ("width-vs-depth", "Depth sets a sequential latency floor; at equal parameters wider is faster"),
    "R4": ("quantization-readiness", "Dimensions divisible by NVFP4 (16), MXFP4 (32) and FP8-block (128) scales; fast head_dim"),
    "R5": ("moe-shape", "Experts divisible by EP sizes; expert width vs hidden; distinct experts read in decode"),
    "R6": ("pipeline-regularity", "Layer count divisible by PP stages; homogeneous blocks keep stages balanced"),
    "R7": ("parallel-readiness", "Heads and KV heads vs TP sizes; Helix for long-context decode"),
    "R8": ("trust-region", "A shape outside the published models' envelope at its scale: its accuracy is an extrapolation"),
}
SEVERITY_ORDER = {"info": 0, "warning": 1, "error": 2}
# regime: (decode sequences, decode context, prefill tokens) per attention rank; TP 8 where valid
REGIMES = {"latency": (1, 4096, 0), "throughput": (256, 2048, 8192), "long-context": (1, 131072, 0)}
FAST_HEAD_DIMS = (64, 128, 256)  # FlashAttention-3 / TensorRT-LLM FMHA/XQA fast paths; MLA uses 576/512 latent kernels


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    where: str
    message: str
    cost_pct: float
    fix: str

    def to_dict(self) -> dict:
        return {**asdict(self), "rule_name": RULES[self.rule][0]}


def _tp_for(model: ModelSpec, gpu: Gpu, want: int = 8) -> int:
    for tp in (want, 4, 2, 1):
        if tp <= max(gpu.scale_up_domain, 1) and int(validity(model, gpu, Plan(tp=tp, ep=1, moe_tp=tp if model.is_moe else 1), tp)) < 0:
            return tp
    return 1


def _batch(regime: str) -> Batch:
    seqs, ctx, pf = REGIMES[regime]
    return Batch(dec_seqs=seqs, dec_ctx=ctx, pf_tokens=pf, pf_seqs=pf / 2048 if pf else 0, pf_ctx=0)


def _layer_cost(model: ModelSpec, gpu, cal, prec, sh, *, b) -> tuple[float, float]:
    """(time, FLOPs) of the model's layers per step (LM head excluded), one GPU."""
    t = f = 0.0
    for layer, n in model.groups:
        ops = layer_ops(model, layer, float(n), gpu, cal, prec=prec, sh=sh, b=b, prefix="layer")
        t += float(step_time(ops))
        f += float(sum(np.sum(o.flops * o.count) for o in ops))
    return t, f


def _align(d: int, unit: int) -> tuple[int, int]:
    return max(unit, d // unit * unit), int(math.ceil(d / unit) * unit)


def _with_dim(model: ModelSpec, what: str, value: int) -> ModelSpec:
    groups = []
    for layer, n in model.groups:
        a, f = layer.attn, layer.ffn
        if what == "inter" and isinstance(f, DenseFfn):
            f = replace(f, inter=value)
        elif what == "expert_inter" and isinstance(f, MoE):
            f = replace(f, expert_inter=value)
        groups.append((Layer(a, f), n))
    if what == "hidden":
        return replace(model, hidden=value, groups=tuple(groups))
    return replace(model, groups=tuple(groups))


def lint(model: ModelSpec, gpu: Gpu, cal: Calibration, regime: str = "throughput", *, prec: Precision | None = None,
         proxy_file: str | None = None) -> list[Finding]:
    if regime not in REGIMES:
        raise InputError("regime", regime, "one of: " + ", ".join(REGIMES))
    prec = prec or model.default_precision
    tp = _tp_for(model, gpu)
    moe = next((layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)), None)
    # MoE models deploy experts with EP when the experts split (each expert whole on one GPU)
    ep = tp if moe and moe.experts % tp == 0 else 1
    sh = Plan(tp=tp, ep=ep, moe_tp=(tp // ep) if moe else 1)
    b = _batch(regime)
    out: list[Finding] = []
    out += _memory_bound_gemm(model, gpu, cal, prec, sh, b=b, regime=regime)
    out += _tile_alignment(model, gpu, cal, prec, sh, b=b, tp=tp)
    out += _width_vs_depth(model, gpu, cal, prec, tp, proxy_file=proxy_file)
    out += _quantization_readiness(model)
    out += _moe_shape(model, gpu, cal, prec, sh)
    out += _pipeline_regularity(model, gpu, cal, prec, sh, b=b)
    out += _parallel_readiness(model, gpu, cal, prec)
    out += _trust_region(model, prec, proxy_file=proxy_file)
    return sorted(out, key=lambda f: (-SEVERITY_ORDER[f.severity], -f.cost_pct))


def _memory_bound_gemm(model, gpu, cal, prec, sh, *, b, regime):
    """R1: the layer GEMMs below half the ridge point at the throughput regime's batch, with what their memory time costs."""
    out = []
    if regime != "throughput":
        return out  # at latency batches every GEMM is memory-bound by design; the rule is about throughput
    seen = set()
    for layer, n in model.groups:
        # unprefixed: the operators' names (attn/qkv, moe/experts_down) are where the findings point
        for op in layer_ops(model, layer, float(n), gpu, cal, prec=prec, sh=sh, b=b, prefix=""):
            if op.kind != "gemm" or op.role in ("router", "mla_q_absorb", "mla_v_up", "mla_kv_up"):
                continue
            key = op.name
            if key in seen:
                continue
            f, by = float(np.sum(op.flops)), float(np.sum(op.bytes))
            if f <= 0:
                continue
            math_ = op.math  # the math and weight format the operator was priced with
            kern = gemm.gemm_kernel(math_, op.weight, fp4_math=gpu.supports("fp4"))
            ridge = gpu.peak(math_) * cal.gemm_eff(kern) / (gpu.hbm_bandwidth_bytes_per_s * cal.gemm_bw(kern))
            inten = f / by
            if inten < 0.5 * ridge and float(np.sum(op.t_memory)) > float(np.sum(op.t_compute)):
                seen.add(key)
                t, tc = float(np.sum(op.time)), float(np.sum(op.t_compute))
                pct = 100.0 * (t / max(tc, 1e-15) - 1.0)
                thin = op.role in EXPERT_GEMMS
                out.append(Finding("R1", "warning", op.name,
                                   f"{inten:.0f} FLOP/B at {REGIMES['throughput'][0]} decode + {REGIMES['throughput'][2]} prefill tokens, "
                                   f"ridge point {ridge:.0f} FLOP/B on {gpu.name}: memory-bound, {pct:.0f}% slower than at its compute roofline",
                                   pct, "fewer, wider experts (more tokens per expert) or larger expert-parallel batches" if thin
                                   else "widen the narrow dimension or batch more tokens per step"))
    return out


def _tile_alignment(model, gpu, cal, prec, sh, *, b, tp):
    """R2: widths per GPU off the tile grid (256 on Blackwell, else 128), each priced against its aligned
    neighbours; the vocabulary."""
    out = []
    unit = 256 if gpu.family == "blackwell" else 128
    dims = [("hidden", model.hidden, 1)]
    inter = sorted({layer.ffn.inter for layer, _ in model.groups if isinstance(layer.ffn, DenseFfn)})
    eint = sorted({layer.ffn.expert_inter for layer, _ in model.groups if isinstance(layer.ffn, MoE)})
    dims += [("inter", d, tp) for d in inter[:1]] + [("expert_inter", d, int(np.asarray(sh.moe_tp))) for d in eint[:1]]
    base_t, base_f = _layer_cost(model, gpu, cal, prec, sh, b=b)
    for what, d, shard in dims:
        local = d // shard if d % shard == 0 else d / shard
        if isinstance(local, int) and local % unit == 0:
            continue
        best = None
        for cand in _align(d, unit * shard):
            if cand == d or cand <= 0:
                continue
            m2 = _with_dim(model, what, cand)
            t2, f2 = _layer_cost(m2, gpu, cal, prec, sh, b=b)
            gain = 100.0 * ((base_t / base_f) / (t2 / f2) - 1.0)  # per-FLOP efficiency lost by the misaligned size
            if best is None or gain > best[0]:
                best = (gain, cand, t2, m2.total_params - model.total_params)
        if best is None:
            continue
        gain, cand, t2, dp = best
        sev = "warning" if (not isinstance(local, int) or local % 128) else "info"
        out.append(Finding("R2", sev, what, f"{what} {d}" + (f" ({local:g} per GPU at TP{shard})" if shard > 1 else "") + f" is not a multiple of {unit} on {gpu.name}; "
                           f"{cand} runs {gain:+.1f}% per FLOP ({100 * (base_t / t2 - 1):+.1f}% layer time) ",
                           gain, f"{what} {d} -> {cand}: {gain:.1f}% more efficient per FLOP on {gpu.name}, {dp / 1e9:+.2f}B parameters"))
    v = model.vocab
    if v % 128:
        pad = int(math.ceil(v / 128) * 128)
        out.append(Finding("R2", "info", "vocab", f"vocab {v} is not a multiple of 128 (LM-head tiles pad to {pad})",
                           100.0 * (pad / v - 1), f"pad the vocabulary to {pad}"))
    return out


def _wider(model: ModelSpec, *, tp: int, hidden: int, layers: int, scale: float) -> ModelSpec:
    """The equal-parameter wider variant R3 compares: `layers` layers at `hidden`, heads and FFN widths
    scaled by `scale` and kept divisible by TP and the 256 (experts: 128) grid."""
    unit, L = 256, model.num_layers
    groups = []
    for layer, n in model.groups:
        a, f = layer.attn, layer.ffn
        if isinstance(a, GQA):
            heads = max(int(round(a.heads * scale / tp)) * tp, tp)
            a = replace(a, heads=heads)
        elif isinstance(a, Mamba2):  # heads x head_dim tracks the width (Mamba-2 expand x hidden)
            a = replace(a, heads=max(int(round(a.heads * scale / tp)) * tp, tp))
        elif isinstance(a, GatedDeltaNet):  # key heads scale, each keeping its value heads
            nk = max(int(round(a.kv_heads * scale / tp)) * tp, tp)
            a = replace(a, kv_heads=nk, heads=nk * (a.heads // a.kv_heads))
        f2 = replace(f, inter=max(int(round(f.inter * scale / unit) * unit), unit)) if isinstance(f, DenseFfn) else (
            replace(f, expert_inter=max(int(round(f.expert_inter * scale / 128) * 128), 128)) if isinstance(f, MoE) else f)
        groups.append((Layer(a, f2), max(int(round(n * layers / L)), 1)))
    return replace(model, hidden=hidden, groups=tuple(groups))


def _width_vs_depth(model, gpu, cal, prec, tp, *, proxy_file=None):
    """R3: what depth costs at batch 1 and an equal-parameter wider variant, judged as design would."""
    L, h = model.num_layers, model.hidden
    aspect = h / L
    if L < 16:
        return []
    plan = Plan(tp=tp, ep=1, moe_tp=tp if model.is_moe else 1)
    base = evaluate(model, Serving(gpu=gpu, prec=prec, plan=plan), cal=cal, concurrency=1, isl=1024, osl=256)
    # equal-parameter wider variant: 3/4 of the layers, width scaled by sqrt(4/3) and re-aligned
    L2 = max(int(round(L * 0.75)), 1)
    scale = math.sqrt(L / L2)
    unit = 256
    h2 = int(round(h * scale / unit) * unit)
    if h2 <= h:  # no wider shape on the 256 grid (a toy width): nothing to compare
        return []
    wide = _wider(model, tp=tp, hidden=h2, layers=L2, scale=scale)
    if int(validity(wide, gpu, plan, tp)) >= 0:
        return []
    w = evaluate(wide, Serving(gpu=gpu, prec=prec, plan=plan), cal=cal, concurrency=1, isl=1024, osl=256)
    t0, t1 = float(np.ravel(base["tpot_s"])[0]), float(np.ravel(w["tpot_s"])[0])
    # one all-reduce per attention or mixer half and per FFN half (Nemotron-H layers have only one)
    halves = sum(n * ((not isinstance(layer.attn, NoMixer)) + (not isinstance(layer.ffn, NoFfn))) for layer, n in model.groups)
    # what depth costs, read off the very decode step TPOT times (same calibration, batch 1, the same
    # context): each layer operator's fixed part (its time beyond the larger of its compute and memory
    # times: launch and prologue costs) and its collectives whole (latency-bound at one token); the
    # LM head and pipeline hand-offs do not grow with depth. A part of the step, so never above TPOT.
    _, _, ops = decode_step(model, gpu, prec, plan.broadcast(), costs=TRTLLM.costs(cal), b=1.0, ctx=1024 + 256 / 2.0, k=0.0, spec=None)
    floor = sum(float(np.sum((op.time if op.kind == "comm" else op.time - np.maximum(op.t_compute, op.t_memory)) * op.count))
                for op in ops if op.part not in ("lm_head", "pipeline"))
    gain = 100.0 * (t0 / t1 - 1.0)
    # design's judgement of width against depth: the wider variant stays inside the published envelope and its
    # aspect-ratio term (the one term depth and width trade; Kaplan et al. 2020, Levine et al. 2020) is no worse
    # than this shape's beyond that term's band (design's default k = 1). The variant's other differences (heads
    # and widths re-rounded to the grid) are its construction's, not the question's.
    why, acc = _judge_wider(model, wide, prec, proxy_file=proxy_file)
    if why:
        if gain <= 0:
            return []
        return [Finding("R3", "info", "layers", f"{L} layers x hidden {h} (aspect {aspect:.0f}): a wider variant would be {gain:.1f}% faster "
                        f"but {why}", 0.0, "keep the depth: design would not propose the wider shape")]
    sev = "warning" if gain > 10 else "info"
    return [Finding("R3", sev, "layers", f"{L} layers x hidden {h} (aspect {aspect:.0f}): depth alone costs ~{floor * 1e3:.2f} ms per token "
                    f"(fixed kernel costs + {halves} all-reduces at TP{tp}); TPOT at batch 1 {t0 * 1e3:.2f} ms",
                    gain, f"{sum(n for _, n in wide.groups)} layers x hidden {h2} ({wide.total_params / 1e9:.1f}B vs {model.total_params / 1e9:.1f}B params): "
                    f"TPOT {t1 * 1e3:.2f} ms ({gain:+.1f}%) on {gpu.name} TP{tp}; {acc}")]


def _judge_wider(model, wide, prec, *, proxy_file) -> tuple[str, str]:
    """Why design would not propose `wide` in place of `model` ('' when it would), and the aspect term's change."""
    from llm_codesign.explore.accuracy_model import model_terms, proxy_constants, quality_delta
    from llm_codesign.explore.envelope import envelope_at, features, position, row_of

    pc = proxy_constants(proxy_file)
    a, b = (model_terms(m, prec.weight.name, pc=pc) for m in (model, wide))
    loss = float(a["loss"])
    only = [{"loss": t["nats"]["aspect"][0], "slope": t["slope"], "ln": {}, "nats": {"aspect": t["nats"]["aspect"]}} for t in (a, b)]
    q = {k: float(np.ravel(v)[0]) for k, v in quality_delta(only[1], only[0]).items() if k != "beyond"}
    acc = f"aspect-ratio term {100 * q['delta'] / loss:+.3f}% +- {100 * q['sigma'] / loss:.3f}% of the proxy loss"
    pos = position(envelope_at(float(wide.total_params)), features(row_of(wide)) | {"hidden": float(wide.hidden)})
    here = position(envelope_at(float(model.total_params)), features(row_of(model)) | {"hidden": float(model.hidden)})
    if not pos["inside"] and here["inside"]:
        return f"it leaves the published envelope ({', '.join(v['bound'] for v in pos['outside'])})", acc
    if not q["passes"]:
        return f"its aspect ratio costs accuracy beyond the term's band ({acc})", acc
    return "", acc


def _trust_region(model, prec, *, proxy_file=None):
    """R8: the shape outside the envelope at its scale (explore.envelope), with its accuracy cost against the published
    model of its kind nearest its size (as design's reference without a baseline) and that cost's band."""
    from llm_codesign.explore import accuracy_model, quality
    from llm_codesign.explore.design import reference
    from llm_codesign.explore.envelope import describe, envelope_at, features, position, row_of

    N = float(model.total_params)
    pos = position(envelope_at(N), features(row_of(model)) | {"hidden": float(model.hidden)})
    if pos["inside"]:
        return []
    pc = accuracy_model.proxy_constants(proxy_file)
    ref = reference(N, baseline=None, moe=model.is_moe, weight_dtype=prec.weight.name, budget_tol=0.1, qc=quality.constants(), pc=pc)
    t = accuracy_model.model_terms(model, prec.weight.name, pc=pc)
    q = accuracy_model.quality_delta(t, ref.terms)
    loss = float(ref.terms["loss"])
    d, sd = 100 * float(np.ravel(q["delta"])[0]) / loss, 100 * float(np.ravel(q["sigma"])[0]) / loss
    ex = accuracy_model.extrapolated(t)
    worst = pos["outside"][0]
    return [Finding("R8", "warning", worst["bound"].split(".")[0],
                    f"{model.num_layers} layers x hidden {model.hidden} at {N / 1e9:.1f}B params is outside the published envelope: "
                    + "; ".join(describe(v) for v in pos["outside"])
                    + f". Proxy loss {d:+.2f}% +- {sd:.2f}% against {ref.name}" + (f" (extrapolated: {', '.join(ex)})" if ex else ""),
                    max(d, 0.0), f"a shape inside the envelope at {N / 1e9:.3g}B (llm-codesign design --params {N:.3g}), or "
                    "accept an accuracy no published model vouches for")]


def _quantization_readiness(model):
    """R4: widths the FP4 and FP8-block scale blocks do not divide; head dims outside the fast attention kernels."""
    out = []
    dims = {"hidden": model.hidden}
    for layer, _ in model.groups:
        if isinstance(layer.ffn, DenseFfn):
            dims["inter"] = layer.ffn.inter
        if isinstance(layer.ffn, MoE):
            dims["expert_inter"] = layer.ffn.expert_inter
            if layer.ffn.shared_inter:
                dims["shared_inter"] = layer.ffn.shared_inter
    for name, d in dims.items():
        for block, fmt, sev in ((16, "NVFP4", "error"), (32, "MXFP4", "warning"), (128, "FP8-block", "info")):
            if d % block:
                pad = math.ceil(d / block) * block
                out.append(Finding("R4", sev, name, f"{name} {d} is not divisible by {block} ({fmt} scale blocks)",
                                   100.0 * (pad / d - 1), f"{name} -> {pad} (or keep this tensor in a wider format)"))
                break
    hds = sorted({layer.attn.head_dim for layer, _ in model.groups if isinstance(layer.attn, GQA)})
    for hd in hds:
        if hd not in FAST_HEAD_DIMS:
            up = min([x for x in FAST_HEAD_DIMS if x >= hd] or [hd])
            out.append(Finding("R4", "warning", "head_dim", f"head_dim {hd} is outside the fast attention kernels' sizes {FAST_HEAD_DIMS}",
                               100.0 * (up / hd - 1), f"head_dim {hd} -> {up}"))
    return out


def _moe_shape(model, gpu, cal, prec, sh):
    """R5: experts that do not split over EP, and the experts a decode batch reads."""
    out = []
    for layer, _ in model.groups:
        f = layer.ffn
        if not isinstance(f, MoE):
            continue
        bad_ep = [ep for ep in (8, 16, 32, 64) if f.experts % ep]
        if f.experts % 8:
            out.append(Finding("R5", "warning", "experts", f"{f.experts} experts do not split over EP {', '.join(map(str, bad_ep))}",
                               0.0, f"use a multiple of 8 experts (e.g. {int(math.ceil(f.experts / 8) * 8)})"))
        ratio = f.expert_inter / model.hidden
        B = 8
        dist = float(distinct_experts(f.experts, f.top_k, B))
        # decode at batch 8: weights of `dist` experts are read for B*top_k expert-token pairs
        lay = Layer(NoMixer(), f)
        t8 = float(step_time(layer_ops(model, lay, 1.0, gpu, cal, prec=prec, sh=sh, b=Batch(dec_seqs=B, dec_ctx=1), prefix="x")))
        t1 = float(step_time(layer_ops(model, lay, 1.0, gpu, cal, prec=prec, sh=sh, b=Batch(dec_seqs=1, dec_ctx=1), prefix="x")))
        pct = 100.0 * (t8 / t1 - 1.0) if t1 > 0 else 0.0  # extra MoE time per step of batch 8 over batch 1
        out.append(Finding("R5", "info", "moe", f"{f.experts} experts, top-{f.top_k}, width {f.expert_inter} ({ratio:.2f}x hidden): "
                           f"decode at batch {B} reads {dist:.0f} experts per layer; the MoE layer costs {t8 / t1:.1f}x batch 1",
                           pct, "expert parallelism with attention DP amortises expert reads; wider experts raise intensity"))
        break
    return out


def _pipeline_regularity(model, gpu, cal, prec, sh, *, b):
    """R6: the slowest pipeline stage against an even split, and layer kinds of unequal time."""
    out = []
    L = model.num_layers
    # the slowest stage sets a pipeline's pace (cost.ops forward_ops splits layers as engines do):
    # its step against the same layers spread evenly (L / pp of each kind, the LM head on the last)
    one = forward_ops(model, gpu, cal, prec, sh, b=b)
    head = float(sum(np.sum(op.total_time) for op in one if op.part == "lm_head"))
    layers = float(step_time(one)) - head
    costs = []
    for pp in (2, 4, 8):
        if pp > L:
            continue
        ops = forward_ops(model, gpu, cal, prec, replace(sh, pp=pp), b=b)
        stage = float(sum(np.sum(op.total_time) for op in ops if op.part != "pipeline"))
        costs.append((100.0 * (stage / (layers / pp + head) - 1.0), pp, model.stage_counts(pp)))
    if costs:
        pct, pp, stages = max(costs)
        sizes = "/".join(str(sum(st)) for st in stages)
        uneven = [p for p in (2, 4, 8) if L % p]
        what = (f"{L} layers do not split evenly over PP {', '.join(map(str, uneven))}" if uneven
                else f"{L} layers split evenly over PP 2, 4, 8 but their kinds do not")
        if round(pct, 1) > 0:
            out.append(Finding("R6", "warning" if pct >= 1.0 else "info", "layers",
                               f"{what}: at PP{pp} (stages of {sizes} layers) the slowest stage runs {pct:.1f}% longer than "
                               "an even split, and sets every micro-batch's pace",
                               pct, f"{int(math.ceil(L / 8) * 8)} or {L // 8 * 8} layers" if uneven else "keep the layer pattern regular per stage"))
        elif uneven:
            out.append(Finding("R6", "info", "layers", f"{what}; at PP{uneven[-1]} the slowest stage costs ~0% over an even split",
                               0.0, "nothing to fix"))
    if len(model.groups) > 1:
        times = []
        for layer, n in model.groups:
            t = float(step_time(layer_ops(model, layer, 1.0, gpu, cal, prec=prec, sh=sh, b=b, prefix="x")))
            times.append((t, n))
        tot = sum(t * n for t, n in times)
        mean = tot / L
        worst = max(t for t, _ in times)
        if worst > 1.05 * mean:
            out.append(Finding("R6", "info", "blocks", f"{len(model.groups)} kinds of layer with per-layer times from "
                               f"{min(t for t, _ in times) * 1e6:.0f} to {worst * 1e6:.0f} us: pipeline stages need uneven layer counts",
                               100.0 * (worst / mean - 1), "balance stages by time, or keep the layer pattern regular"))
    return out


def _parallel_readiness(model, gpu, cal, prec):
    """R7: heads and KV heads TP does not split, and Helix against TP8 for long-context decode."""
    out = []
    kvh = sorted({layer.attn.kv_heads for layer, _ in model.groups if isinstance(layer.attn, GQA)})
    heads = sorted({layer.attn.heads for layer, _ in model.groups if isinstance(layer.attn, (GQA, MLA))})
    for tp in (2, 4, 8):
        for h in heads:
            if h % tp:
                out.append(Finding("R7", "error", f"heads@TP{tp}", f"{h} attention heads do not split over TP{tp}", 0.0,
                                   f"use a multiple of {tp} heads"))
        for k in kvh:
            if k % tp and tp % k:
                out.append(Finding("R7", "error", f"kv_heads@TP{tp}", f"{k} KV heads neither divide nor are divided by TP{tp}",
                                   0.0, f"use {tp} or a divisor of {tp} KV heads"))
            elif k < tp:
                out.append(Finding("R7", "info", f"kv_heads@TP{tp}", f"{k} KV heads under TP{tp}: each KV head is replicated {tp // k}x",
                                   100.0 * (tp / k - 1), f"{tp} KV heads, or Helix (KV parallel along the sequence) instead of TP beyond {k}"))
    # Helix for long-context decode: TP limited to the KV heads, the rest of the GPUs shard the sequence
    # MLA keeps one latent KV head that every TP rank holds whole (DeepSeek-V2 sec. 2.1; the Helix
    # paper's own case, arXiv:2507.07120): TP shards none of its cache, so Helix runs it at TP1 x KVP8
    mla = any(isinstance(layer.attn, MLA) for layer, _ in model.groups)
    if (mla or (kvh and min(kvh) < 8)) and gpu.scale_up_domain >= 8:
        k = 1 if mla else min(kvh)
        moe = next((layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)), None)
        ep = 8 if moe and moe.experts % 8 == 0 else 1  # experts whole on one GPU where they split, as lint's plan
        moe_tp = 8 // ep if moe else 1
        base_plan = Plan(tp=8, ep=ep, moe_tp=moe_tp)
        helix = Plan(tp=k, kvp=8 // k, ep=ep, moe_tp=moe_tp)
        ctx = 131072 if not model.max_context else min(131072, model.max_context - 256)
        if int(validity(model, gpu, base_plan, 8)) < 0 and int(validity(model, gpu, helix, 8)) < 0:
            # Helix's gain is the cache: each GPU holds 1/KVP of every sequence, so 8 GPUs hold more long
            # sequences and read less per step; its price, the attention weights TP no longer splits.
            # Both priced: one request's TPOT, and decode tokens/s per GPU with each plan's KV cache full
            icl = TRTLLM.costs(cal)
            res = []
            for plan in (base_plan, helix):
                r = evaluate(model, Serving(gpu=gpu, prec=prec, plan=plan), cal=cal, concurrency=1, isl=ctx, osl=256)
                cap = int(np.ravel(r["max_concurrency"])[0])
                step = float(np.ravel(decode_step(model, gpu, prec, plan.broadcast(), costs=icl, b=max(cap, 1), ctx=ctx + 128, k=0.0, spec=None)[0])[0])
                res.append((float(np.ravel(r["tpot_s"])[0]), cap, cap / step / 8.0, bool(np.all(r["fits"]))))
            (a, ca, xa, fa), (h, ch, xh, fh) = res
            what = "MLA's latent cache (whole on every TP rank)" if mla else f"{k} KV heads"
            if fa and fh:
                gain = 100.0 * (xh / xa - 1.0)
                msg = (f"at {ctx // 1024}k context on 8 GPUs with {what}, Helix (TP{k} x KVP{8 // k}) holds {ch} sequences "
                       f"to TP8's {ca}: decode {xh:.0f} vs {xa:.0f} tok/s/GPU with the cache full; one request's TPOT "
                       f"{h * 1e3:.2f} vs {a * 1e3:.2f} ms")
                if round(gain, 1) > 0:
                    out.append(Finding("R7", "info", "long-context", msg, gain, f"deploy long-context decode with --tp {k} --kvp {8 // k}"))
                else:
                    out.append(Finding("R7", "info", "long-context", msg + ": Helix does not pay here (~0%)", 0.0, "keep TP8"))
    return out


def to_sarif(findings: list[Finding], model_ref: str) -> dict:
    level = {"error": "error", "warning": "warning", "info": "note"}
    return {
        "version": "2.1.0", "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{"tool": {"driver": {"name": "llm-codesign", "informationUri": "https://github.com/llm-codesign",
                                      "rules": [{"id": k, "name": v[0], "shortDescription": {"text": v[1]}} for k, v in RULES.items()]}},
                  "results": [{"ruleId": f.rule, "level": level[f.severity],
                               "message": {"text": f"{f.message} Fix: {f.fix} (cost {f.cost_pct:.1f}%)"},
                               "locations": [{"physicalLocation": {"artifactLocation": {"uri": model_ref}},
                                              "logicalLocations": [{"name": f.where}]}],
                               "properties": {"cost_pct": f.cost_pct}} for f in findings]}],
    }
