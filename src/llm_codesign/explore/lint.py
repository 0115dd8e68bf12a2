"""Check a model shape against the hardware guidelines; every finding carries its cost as predicted
by the same cost model `estimate` uses (no separate heuristics), so a fix's gain is the tool's own
prediction."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ffns import EXPERT_GEMMS, distinct_experts, expert_scale, moe_rates
from llm_codesign.cost.ops import Batch, layer_ops, step_time
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import Serving, decode_step, evaluate
from llm_codesign.spec.engines import Engine, check_kv_format, check_runs, engine_for, get_engine
from llm_codesign.spec.engines.head_dims import FAST_HEAD_DIMS, head_dim_refusal, head_dim_support
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.kinds import GQA, MLA, DenseFfn, GatedDeltaNet, Mamba2, MoE, NoMixer
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import REASONS, Plan, group_widths, quant_group, reason_text, validity
from llm_codesign.spec.precision import Precision, executable, gemm_math

RULES = {
    "R1": ("memory-bound-gemm", "A GEMM whose small reduction or output dimension (or tokens per expert) keeps it below the GPU's ridge point"),
    "R2": ("tile-alignment", "Dimensions in multiples of 128, or of 256 where the GPU's tiles need it (B300 FP4), the padded tail priced at equal FLOPs"),
    "R3": ("width-vs-depth", "Depth sets a sequential latency floor; at equal parameters wider is faster"),
    "R4": ("quantization-readiness", "Dimensions divisible by NVFP4 (16), MXFP4 (32) and FP8-block (128) scales; fast head_dim"),
    "R5": ("moe-shape", "Experts divisible by EP sizes; expert width vs hidden; distinct experts read in decode"),
    "R6": ("pipeline-regularity", "Layer count divisible by PP stages; homogeneous blocks keep stages balanced"),
    "R7": ("parallel-readiness", "Heads and KV heads vs TP sizes; Helix for long-context decode"),
    "R8": ("trust-region", "A shape outside the published models' envelope at its scale: its accuracy is an extrapolation"),
    "R9": ("kv-heads", "KV bytes per token: the shape's KV heads against GQA's 8 and 4, the KV-cache lever"),
}
# what each rule's cost_pct measures: R2 and R6 re-price the fixed shape in the regime's objective, the others measure
# what their finding names (R1's and R5's are a kernel's or a layer's time, not the deployment's), so a cost is read
# with its rule's measure, never against another rule's
COST_MEASURE = {
    "R1": "the GEMM's time over its compute roofline",
    "R2": "the regime's objective re-priced aligned (vocab: its padding)",
    "R3": ("how much faster a shallower shape of no fewer parameters runs, built as design builds its shapes (3/4 of the layers "
           "on design's grid, wider or as wide, its FFN widened on design's grid to hold the parameters: the fix names its "
           "count), each shape at its own best deployment, in the regime's objective, whether or not design would propose it "
           "(the fix says)"),
    "R4": "the scale blocks' padding width (head_dim: 0, its padding width in the message: no time priced)",
    "R5": "the MoE layer's extra time at batch 8 against batch 1 (R1 and R5 on lint's widest TP, named where not the point's)",
    "R6": ("the regime's objective per layer against the nearest layer count the PP divides, or the same layers balanced per "
           "stage, on a TP x PP within the GPU budget (blocks: the slowest kind of layer over the mean)"),
    "R7": ("the KV heads' extra copies at the TP the finding names, paid only where the reported point runs attention at "
           "that TP (else 0), or Helix's output tok/s/GPU gain over the better of TP8 and attention DP8, each serving ISL/OSL "
           "(the message states them) in a closed loop at the requests its cache holds"),
    "R8": "the proxy loss against the nearest published model",
    "R9": ("how much faster the shape runs with 8 or 4 KV heads (the faster), each shape at its own best deployment, in the "
           "regime's objective"),
}
COST_KEY = ("cost %, each rule its own measure: " + "; ".join(f"{r} {m}" for r, m in COST_MEASURE.items()) + ". Ranked by "
            "severity, then what the reported point pays, then costs on other plans, then findings at no cost.")
# R2's and R6's costs are in the regime's objective: beneath the %, the rate it changes (Finding.objective_cost)
OBJECTIVE_KEY = ("Beneath R2's and R6's %: the same cost as tok/s/GPU (throughput and long-context; tok/s/user in the latency regime), "
                 "the shape's against its neighbour's.")
SEVERITY_ORDER = {"info": 0, "warning": 1, "error": 2}
# regime: (decode sequences, decode context, prefill tokens) per attention rank; TP 8 where valid
REGIMES = {"latency": (1, 4096, 0), "throughput": (256, 2048, 8192), "long-context": (1, 131072, 0)}
# R4's head dims: the engines' fused attention kernels and what runs instead, one rule with estimate and export
# (spec.engines.head_dims, each engine's kernel lists cited there)
@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    where: str
    message: str
    cost_pct: float
    fix: str
    # the figures the message prints, unrounded (JSON and SARIF carry them): what the cost was computed from
    figures: dict = field(default_factory=dict)
    # False: the cost is priced on plans other than the reported point's, which the message names (R7's Helix)
    at_point: bool = True
    # the shape the fix proposes (R2, R3, R4, R5, R6; None where the fix is no shape): linted, it brings no error the
    # shape has not (test_lint: test_a_fix_brings_no_new_error); not in to_dict (the fix names it)
    shape: ModelSpec | None = field(default=None, compare=False, repr=False)

    def objective_cost(self) -> dict | None:
        """A cost R2 or R6 priced in the regime's objective, in its rate's unit: the rate the shape loses against the aligned
        or evenly staged neighbour it was priced against (1 / its time: tok/s/GPU in the throughput regime, tok/s/user
        in the others), per token of the whole shape where R6 compared per layer (the neighbour's per-layer time x the
        shape's layers). None for the other rules' measures, and where the cost is nil."""
        f = self.figures
        if self.cost_pct <= 0 or self.rule not in ("R2", "R6") or "time_ms" not in f:
            return None
        ref = f["aligned_time_ms"] if self.rule == "R2" else f["neighbour_time_ms"] * (f["layers"] / f["neighbour_layers"] if f["per_layer"] else 1.0)
        unit = "tok/s/GPU" if f["objective"] == "GPU time per output token" else "tok/s/user"
        return {"lost": 1e3 / ref - 1e3 / f["time_ms"], "unit": unit}

    def to_dict(self) -> dict:
        own = {k: v for k, v in asdict(replace(self, shape=None)).items() if k != "shape"}  # the fix names the shape
        return {**own, "rule_name": RULES[self.rule][0], "measure": COST_MEASURE[self.rule], "objective_cost": self.objective_cost()}


def _tp_for(model: ModelSpec, gpu: Gpu, gpus: int) -> int:
    """The widest TP of 8, 4, 2 within `gpus` and the scale-up domain at which the shape fits (1 where none does)."""
    for tp in (8, 4, 2, 1):
        if tp <= min(max(gpu.scale_up_domain, 1), gpus) and int(validity(model, gpu, Plan(tp=tp, ep=1, moe_tp=tp if model.is_moe else 1), tp)) < 0:
            return tp
    return 1


def _batch(regime: str) -> Batch:
    seqs, ctx, pf = REGIMES[regime]
    return Batch(dec_seqs=seqs, dec_ctx=ctx, pf_tokens=pf, pf_seqs=pf / 2048 if pf else 0, pf_ctx=0)


OPERATING_GPUS = 8  # the GPUs the operating point is chosen on where lint is given no budget: design's default --gpus


@dataclass(frozen=True)
class Point:
    """Where R2, R3 and R6 price a shape: a plan, the requests in flight on one instance of it and the lengths, with
    where it came from (`source`): design's best deployment of the shape at the regime's SLO (explore.design.at_best,
    the deployment `design` ranks the shape by), or lint's fixed point where no deployment meets the SLO."""
    plan: Plan
    concurrency: int
    isl: int
    osl: int
    source: str
    chosen: bool = True  # design's best deployment (False: lint's fixed point)
    holds: bool = True  # a deployment on the budget holds the model (False: R2, R3 and R6 price nothing)
    # where the engine priced is not the GPU's own (pricing_engine: its kernels take no head size of the shape), what the
    # caption says first: "Priced on vLLM: TensorRT-LLM ... (R4)"
    engine_note: str = ""

    def text(self, plan: Plan | None = None) -> str:
        """The deployment in `estimate`'s terms, for a finding's message (at `plan` where a rule varies the point's)."""
        return f"{(plan or self.plan).label()}, {_count(self.concurrency, 'request')}, {self.isl}/{self.osl} tokens"

    def to_dict(self) -> dict:
        return {**self.plan.to_dict(), "concurrency": self.concurrency, "isl": self.isl, "osl": self.osl, "source": self.source}

    def caption(self, gpus: int | None = None) -> str:
        """Where R2, R3 and R6 were priced, for lint's table: or that they were not, where nothing on the budget holds the model;
        and where no PP fits `gpus` (None: OPERATING_GPUS) beside this plan's stage, that R6 priced nothing and the budget
        that lets it (lint's default --gpus 8 dropped R6 on 405B at TP8 without a word, review 2026-12-06)."""
        lead = f"{self.engine_note}. " if self.engine_note else ""
        if not self.holds:
            return f"{lead}R2, R3 and R6 not priced: {self.source}"
        if not r6_pps(self, OPERATING_GPUS if gpus is None else gpus):
            stage = int(np.ravel(self.plan.gpus)[0]) // int(np.asarray(self.plan.pp))
            return (f"{lead}R2 and R3 priced at {self.text()} ({self.source}); R3's shallower shape at its own best deployment. R6 not "
                    f"priced: PP2 on {replace(self.plan, pp=1).label()} needs {2 * stage} GPUs (--gpus {2 * stage})")
        # what each rule actually prices there: R3's shallower shape at its own best deployment, R6's PP on this plan's stage
        return (f"{lead}R2, R3 and R6 priced at {self.text()} ({self.source}); R3's shallower shape at its own best deployment, R6 with PP "
                "added to this plan within the budget")


def r6_pps(point: Point, gpus: int) -> list[int]:
    """The PPs R6 prices on `point`'s plan within `gpus`: 2, 4 and 8 where a stage of the plan's GPUs each fits, and the
    plan's own PP."""
    pp0 = int(np.asarray(point.plan.pp))
    per_stage = int(np.ravel(point.plan.gpus)[0]) // pp0  # the point's GPUs a stage
    return sorted({p for p in (2, 4, 8) if p * per_stage <= gpus} | ({pp0} if pp0 > 1 else set()))


def _chosen(slo, n: int, gpu: Gpu) -> str:
    """A chosen point's source: design's best deployment on `n` GPUs at the SLO's floor."""
    floor = f"{slo.min_tps_gpu:g} tok/s/GPU" if slo.regime == "latency" else f"{slo.min_tps_user:g} tok/s/user"
    return f"design's best deployment on {n} {gpu.name} at {floor}"


def design_point(deployment: dict, *, slo, gpu: Gpu, num_gpus: int) -> Point:
    """The Point of a deployment design picked (explore.design._dep's record: a design row's "deployment", at_best's),
    at the SLO's lengths it was priced at: where `design`'s report lints a shape, so that its findings are priced where
    design deployed it (no second search)."""
    d = deployment
    plan = Plan(tp=d["tp"], pp=d["pp"], ep=d["ep"], moe_tp=d["moe_tp"], adp=d["attention_dp"], kvp=d["kvp"])
    isl, osl = slo.lengths()
    return Point(plan, int(d["concurrency_per_instance"]), isl, osl, _chosen(slo, num_gpus, gpu))


def operating_point(model: ModelSpec, gpu: Gpu, cal, prec: Precision, regime: str, *, gpus: int | None, engine: Engine,
                    slo=None) -> Point:
    """The regime's operating point for `model` on `gpus` GPUs (None: OPERATING_GPUS): the deployment `design` would
    give the shape (explore.design.at_best: every plan of the budget and every batch, the best objective meeting the
    SLO's floor; `slo`, a design.Slo, else the regime's defaults), at the regime's lengths (design.REGIMES: 1,024/1,024,
    long-context 32,768/1,024) within the model's context. Where no deployment meets the floor: TP as _tp_for picks it,
    EP over the experts where they split, lint's fixed load (REGIMES) at those lengths (`holds` False where not even
    one request fits there)."""
    return operating_points([model], gpu, cal, prec, regime, gpus=gpus, engine=engine, slo=slo)[0]


def _stacked(models: list[ModelSpec]) -> ModelSpec | None:
    """`models` as one shape array (axis 0, as explore.design prices its candidates) where they are design's kind of
    shape, one group of GQA layers with a dense FFN or experts of one top-k, differing only in the widths, heads and
    depth R3 varies; None otherwise (each is then placed on its own)."""
    def one(m):
        if len(m.groups) != 1 or set(m.layout) - {0}:  # one group: a layout (from_hf_config's all-0) orders nothing
            return None
        layer, n = m.groups[0]
        return (layer.attn, layer.ffn, n) if isinstance(layer.attn, GQA) and isinstance(layer.ffn, (DenseFfn, MoE)) else None

    parts = [one(m) for m in models]
    if len(models) < 2 or any(p is None for p in parts):
        return None
    a0, f0, _ = parts[0]
    akeys = ("heads", "kv_heads", "head_dim", "v_head_dim")
    fkeys = ("experts", "expert_inter", "shared_inter") if isinstance(f0, MoE) else ("inter",)
    same = all(type(f) is type(f0) and replace(a, **{k: getattr(a0, k) for k in akeys}) == a0
               and replace(f, **{k: getattr(f0, k) for k in fkeys}) == f0
               and replace(m, hidden=models[0].hidden, groups=models[0].groups, layout=()) == replace(models[0], layout=())
               for m, (a, f, _) in zip(models, parts, strict=True))
    if not same:
        return None
    col = lambda get: np.asarray([get(p) for p in parts])[:, None, None]  # noqa: E731  shape axis first
    attn = replace(a0, **{k: col(lambda p, k=k: getattr(p[0], k)) for k in akeys})
    ffn = replace(f0, **{k: col(lambda p, k=k: getattr(p[1], k)) for k in fkeys})
    hidden = np.asarray([m.hidden for m in models])[:, None, None]
    return replace(models[0], hidden=hidden, groups=((Layer(attn, ffn), col(lambda p: p[2])),), layout=())


def operating_points(models: list[ModelSpec], gpu: Gpu, cal, prec: Precision, regime: str, *, gpus: int | None, engine: Engine,
                     slo=None) -> list[Point]:
    """operating_point of each of `models` (of one kind, dense or MoE, and one context), searched in one objective() call
    over them where they stack (_stacked: R3's variants), each one's best deployment its own argmax."""
    from llm_codesign.explore.design import Slo, objective, plans_for
    from llm_codesign.explore.search import BATCHES

    model = models[0]
    slo = slo or Slo(regime)
    isl, osl = slo.lengths()
    if model.max_context and isl + osl > model.max_context:
        isl = max(model.max_context - osl, 1)
    slo = replace(slo, isl=isl, osl=osl)
    n = OPERATING_GPUS if gpus is None else gpus
    # at_best's choice (design's plans of a search of the shape's kind, every batch of its grid), without its
    # batch_binds, which re-prices the next batch to say what binds: a fifth of a lint's time, for nothing lint says
    plans, inst = plans_for(n, gpu, moe=model.is_moe, long_context=slo.regime == "long-context")
    stacked = _stacked(models)
    if stacked is not None:
        best, ip, ib, _ = objective(stacked, gpu, cal, prec, plans, inst=inst, slo=slo, engine=engine)
    else:
        found = [objective(m, gpu, cal, prec, plans, inst=inst, slo=slo, engine=engine) for m in models]
        best, ip, ib = (np.concatenate([np.ravel(f[j]) for f in found]) for j in range(3))
    out = []
    for i, m in enumerate(models):
        if np.isfinite(best[i]):
            p = plans.at(int(ip[i]))
            out.append(Point(p, int(BATCHES[int(ib[i])] * p.adp), isl, osl, _chosen(slo, n, gpu)))
        else:
            out.append(_fixed_point(m, gpu, cal, prec, regime, n=n, isl=isl, osl=osl, engine=engine))
    return out


def pricing_engine(model: ModelSpec, gpu: Gpu, prec: Precision, engine: Engine | None) -> tuple[Engine | None, str]:
    """The engine lint prices the shape on (R2, R3, R6, R7's Helix, R9 and the operating point), and what it says of that
    ('' where nothing): `engine`, or the GPU's own (engine_for) where None, where its attention kernels take the shape's
    head sizes (spec.engines.head_dims, the rule estimate refuses by); where the GPU's own takes none, the first engine
    its refusal names that runs the shape on the GPU; where a named one takes none, None: those rules price nothing and
    the text says why (newc12 #2: a head_dim 100 priced on TensorRT-LLM, whose estimate refuses it, R4 saying "not run")."""
    own = engine or engine_for(gpu)
    refused = head_dim_refusal(model, own.name, gpu, prec.kv.name)
    if refused is None:
        return own, ""
    hd, _, others = refused
    for alt in ([] if engine is not None else [get_engine(e) for e in others]):
        try:  # an engine that also holds the KV format and has the weights' kernels here, as estimate checks them
            check_kv_format(alt, gpu, prec.kv.name, model)
            check_runs(alt, gpu, prec=prec, moe=model.is_moe)
        except InputError:
            continue
        return alt, f"Priced on {alt.title}: {own.title}, {gpu.name}'s default engine, does not run head_dim {hd} (R4)"
    runs = f"; --backend {' or '.join(others)} prices them" if others else ""
    return None, f"{own.title} does not run head_dim {hd} (R4), so R7's Helix and R9 are not priced either{runs}"


def lint_point(model: ModelSpec, gpu: Gpu, cal, prec: Precision, regime: str, *, gpus: int | None, engine: Engine | None,
               slo=None, point: Point | None = None) -> tuple[Point, Engine | None]:
    """Where lint prices the shape and on which engine (pricing_engine): `point` (design's) or operating_point's, its caption
    naming the engine where it is not the GPU's own; where the engine named runs none of the shape's head sizes, a point
    that holds nothing, saying why, and None for the engine. The one choice lint's rules and its table's caption read."""
    priced, said = pricing_engine(model, gpu, prec, engine)
    if priced is None:
        return Point(Plan(), 1, 0, 0, said, chosen=False, holds=False), None
    point = point or operating_point(model, gpu, cal, prec, regime, gpus=gpus, engine=priced, slo=slo)
    return replace(point, engine_note=said), priced


def _fixed_point(model: ModelSpec, gpu: Gpu, cal, prec: Precision, regime: str, *, n: int, isl: int, osl: int, engine: Engine) -> Point:
    """Lint's fixed point where no deployment on `n` GPUs meets the floor (operating_point)."""
    tp = _tp_for(model, gpu, n)
    moe = next((layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)), None)
    ep = tp if moe and moe.experts % tp == 0 else 1  # experts whole on one GPU where they split
    pt = Point(Plan(tp=tp, ep=ep, moe_tp=(tp // ep) if moe else 1), REGIMES[regime][0], isl, osl,
               f"lint's fixed point: no deployment on {n} {gpu.name} meets the {regime} regime's floor", chosen=False)
    # where even one request does not fit (the weights, or one sequence's KV cache, beyond the budget), the rules
    # would price nothing: say so rather than name a point they were never priced at
    one = replace(pt, concurrency=1)
    if math.isfinite(_time(model, gpu, cal, prec, pt.plan, regime=regime, engine=engine, point=one)):
        return pt
    return replace(pt, holds=False, source=f"no deployment on {_count(n, 'GPU')} ({gpu.name}) holds the model at one request of "
                   f"{isl}/{osl} tokens")


def _time(model: ModelSpec, gpu, cal, prec, plan: Plan, *, regime: str, engine: Engine, point: Point) -> float:
    """The regime's objective as a time, in seconds, of `model` at `plan` under the operating point's load and lengths,
    from the figures `estimate` prints: GPU time per output token (1 / output tokens/s per GPU) in the throughput and
    long-context regimes (design's objective there), TPOT in the latency regime; inf where the deployment serves
    nothing or its KV cache does not hold the point's requests (the rules then say nothing). With CUDA graphs at its batch
    (explore.search.SEARCH_GRAPHS, as a search prices its points), so that the shape's cost is not diluted by eager launches
    a tuned deployment does not pay."""
    from llm_codesign.explore.search import SEARCH_GRAPHS

    r = evaluate(model, Serving(gpu=gpu, prec=prec, plan=plan, engine=engine, cuda_graph_max_bs=SEARCH_GRAPHS), cal=cal, concurrency=point.concurrency, isl=point.isl,
                 osl=point.osl)
    x = float(np.ravel(r["output_tok_s_per_gpu"])[0]) if regime != "latency" else 1.0 / float(np.ravel(r["tpot_s"])[0])
    ok = bool(np.all(r["fits"])) and int(validity(model, gpu, plan, int(np.ravel(plan.gpus)[0]))) < 0
    return 1.0 / x if ok and math.isfinite(x) and x > 0 else math.inf


def _objective(regime: str) -> str:
    return "GPU time per output token" if regime != "latency" else "TPOT"


def _more_time(pct: float, than: str) -> str:
    """A change in time as what it is: "4.7% less time than X", "the same time as X" where it rounds to 0.0%."""
    r = round(pct, 1)
    return f"the same time as {than}" if r == 0 else f"{abs(r):.1f}% {'more' if r > 0 else 'less'} time than {than}"


def _count(n: int, noun: str) -> str:
    """'1 expert', '52 experts'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _faster(gain: float) -> str:
    """A speed change as what it is: "9.5% faster", "2.0% slower", "as fast" where it rounds to 0.0%."""
    r = round(gain, 1)
    return "as fast" if r == 0 else f"{abs(r):.1f}% {'faster' if r > 0 else 'slower'}"


def _signed(x: float, digits: int) -> str:
    """A signed figure that never reads -0.000 (a change that rounds to nothing is +0)."""
    return f"{round(x, digits) + 0.0:+.{digits}f}"


def lint(model: ModelSpec, gpu: Gpu, cal: Calibration, regime: str = "throughput", **kw) -> list[Finding]:
    """The shape's findings at `regime` (lint_priced's, without where they were priced)."""
    return lint_priced(model, gpu, cal, regime, **kw)[0]


class Lint(list):
    """A lint answer: its findings as dicts (a list, what `lint --json` carries as `findings`), and where they were
    priced (lint_point), the same keys for `lint --json`, POST /api/lint, lc.lint and the page's lint view (fixN5b's left-over:
    the engine was said only inside R4's message): `engine` (its name; None where the one named runs none of the shape's
    head sizes and nothing was priced), `priced_at` (the plan's sizes, requests, lengths and source; None where no
    deployment holds the model) and `caption` (the CLI table's line). `to_dict()` is `lint --json`."""

    def __init__(self, model: ModelSpec, gpu: Gpu, regime: str, priced: tuple[list[Finding], Point, Engine | None], *,
                 gpus: int | None = None):
        findings, point, engine = priced  # lint_priced's answer
        super().__init__(f.to_dict() for f in findings)
        self.model, self.gpu, self.regime = model.name, gpu.id, regime
        self.engine = None if engine is None else engine.name
        # the plan as estimate's options name it, on the answer's GPU (`gpu`): the engine may differ from the GPU's own, the GPU not
        self.priced_at = {"plan": point.plan.label(), "num_gpus": int(np.ravel(point.plan.gpus)[0]), **point.to_dict()} if point.holds else None
        self.caption = point.caption(gpus)

    def to_dict(self) -> dict:
        return {"model": self.model, "gpu": self.gpu, "regime": self.regime, "engine": self.engine, "priced_at": self.priced_at,
                "caption": self.caption, "findings": list(self)}


def lint_priced(model: ModelSpec, gpu: Gpu, cal: Calibration, regime: str = "throughput", *, prec: Precision | None = None,
                proxy_file: str | None = None, gpus: int | None = None, engine: Engine | None = None, slo=None,
                point: Point | None = None) -> tuple[list[Finding], Point, Engine | None]:
    """The shape's findings at `regime`, the point they were priced at and the engine they were priced on (lint_point;
    None where the engine named runs none of the shape's head sizes). R2, R3 and R6 price the shape at the regime's operating point (operating_point:
    the deployment design would give it on `gpus` GPUs, None: OPERATING_GPUS, at `slo`, a design.Slo, else the
    regime's), R6 with PP 2, 4 and 8 added to that point's plan within `gpus` (None: OPERATING_GPUS, the point's own
    budget), R7 on TP up to 8 within it. `engine` serves them; None: the GPU vendor's
    (spec.engines.engine_for), so an MI355X's findings are SGLang's, not TensorRT-LLM's. `point`: where design already
    deployed the shape (design_point), in place of operating_point's search; R3's variants are still placed at `slo`."""
    if regime not in REGIMES:
        raise InputError("regime", regime, "one of: " + ", ".join(REGIMES))
    prec, own = prec or model.default_precision, engine or engine_for(gpu)
    check_kv_format(own, gpu, prec.kv.name, model)  # a KV-cache format the engine holds on this GPU, as estimate's
    check_runs(own, gpu, prec=prec, moe=model.is_moe)  # and weights the engine has a kernel for here (TensorRT-LLM: no FP4 before SM100)
    # the larger plans R6 and R7 price stay within the budget the point was chosen on (the key names it): no TP8 PP4 on 8
    most = OPERATING_GPUS if gpus is None else gpus
    # priced on an engine that runs the shape's head sizes (None: the one named runs none; those rules price nothing)
    point, engine = lint_point(model, gpu, cal, prec, regime, gpus=gpus, engine=engine, slo=slo, point=point)
    # R1 and R5 read kernels at fixed batches (their messages say which) on lint's widest TP, as before
    tp = _tp_for(model, gpu, most)
    moe = next((layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)), None)
    ep = tp if moe and moe.experts % tp == 0 else 1  # MoE models deploy experts with EP when the experts split
    sh = Plan(tp=tp, ep=ep, moe_tp=(tp // ep) if moe else 1)
    b = _batch(regime)
    out: list[Finding] = []
    # R1 and R5 on another plan than the point's say so (and rank after what the point pays)
    other = "" if sh == point.plan else sh.label()
    out += _memory_bound_gemm(model, gpu, cal, prec, sh, b=b, regime=regime, other=other)
    place = lambda ms: operating_points(ms, gpu, cal, prec, regime, gpus=gpus, engine=engine, slo=slo)  # noqa: E731
    if engine is not None:
        out += _tile_alignment(model, gpu, cal, prec, point, regime=regime, engine=engine)
        out += _width_vs_depth(model, gpu, cal, prec, point, regime=regime, proxy_file=proxy_file, engine=engine, gpus=most, slo=slo,
                               place=place)
    out += _vocab(model)
    out += _quantization_readiness(model, _shards(model, point.plan), gpu, own, kv=prec.kv.name, instead=engine)
    out += _moe_shape(model, gpu, cal, prec, sh, other=other)
    out += _pipeline_regularity(model, gpu, cal, prec, point, b=b, regime=regime, gpus=most, engine=engine, sh=sh)
    out += _parallel_readiness(model, gpu, cal, prec, point, gpus=most, engine=engine)
    out += _trust_region(model, prec, proxy_file=proxy_file)
    out += _kv_heads(model, gpu, cal, prec, regime=regime, engine=engine, place=place) if engine is not None else []
    # within a severity: what the reported point pays first, then costs priced on other plans (named in their messages),
    # then findings that cost nothing (newcomer review 4, item 10: R7's TP8 copies ranked first on a DP4xTP1 point)
    return sorted(out, key=lambda f: (-SEVERITY_ORDER[f.severity], rank_tier(f), -f.cost_pct)), point, engine


def rank_tier(f: Finding) -> int:
    """Where a finding ranks within its severity: 0 a cost the reported point pays, 1 a cost on another plan, 2 none."""
    return 2 if round(f.cost_pct, 1) <= 0 else (0 if f.at_point else 1)


def _memory_bound_gemm(model, gpu, cal, prec, sh, *, b, regime, other=""):
    """R1: the layer GEMMs below half the ridge point at the throughput regime's batch, with what their memory time costs;
    on `sh`, named where it is `other` than the reported point's plan."""
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
            math_ = str(np.ravel(op.math)[0])  # the math and weight format the operator was priced with (its first load's)
            kern = gemm.gemm_kernel(math_, op.weight, fp4_math=gpu.supports("fp4"))
            # the ridge of the rate the operator was priced at (gemm.peak_rate): an expert GEMM's is its grouped kernel's,
            # the kernel tables' MoE family (layer_ops without an engine) at its share of the dense rate (moe_eff: B200's
            # BF16 experts at 0.53 of the dense 292 FLOP/B, notes #pin-mtf), a dense GEMM's with its main loop's share
            # (Hopper's block-scaled FP8)
            scale = 1.0
            if op.role in EXPERT_GEMMS:
                kern, kept = moe_rates(gpu.family, kern, tables=True)
                scale = expert_scale(cal, gpu, None, kern, kept)
            ridge = float(gemm.ridge(gpu, cal, math_, kern, scale))
            inten = f / by
            if inten < 0.5 * ridge and float(np.sum(op.t_memory)) > float(np.sum(op.t_compute)):
                seen.add(key)
                t, tc = float(np.sum(op.time)), float(np.sum(op.t_compute))
                pct = 100.0 * (t / max(tc, 1e-15) - 1.0)
                thin = op.role in EXPERT_GEMMS
                out.append(Finding("R1", "warning", op.name,
                                   f"{inten:.0f} FLOP/B at {REGIMES['throughput'][0]} decode + {REGIMES['throughput'][2]} prefill tokens, "
                                   f"ridge point {ridge:.0f} FLOP/B on {gpu.name}: memory-bound, {pct:.0f}% slower than at its compute roofline"
                                   + (f" (priced on {other}, not the reported point's plan)" if other else ""),
                                   pct, "fewer, wider experts (more tokens per expert) or larger expert-parallel batches" if thin
                                   else "widen the narrow dimension or batch more tokens per step",
                                   {"flop_per_byte": inten, "ridge_flop_per_byte": ridge, "time_s": t, "compute_time_s": tc, "plan": sh.label()},
                                   at_point=not other))
    return out


def _with_dim(model: ModelSpec, what: str, value: int) -> ModelSpec:
    groups = []
    for layer, n in model.groups:
        a, f = layer.attn, layer.ffn
        if what == "inter" and isinstance(f, DenseFfn):
            f = replace(f, inter=value)
        elif what == "expert_inter" and isinstance(f, MoE):
            f = replace(f, expert_inter=value)
        elif what == "shared_inter" and isinstance(f, MoE) and f.shared_inter:
            f = replace(f, shared_inter=value)
        elif what == "head_dim" and isinstance(a, GQA):
            a = replace(a, head_dim=value, v_head_dim=value)
        groups.append((Layer(a, f), n))
    if what == "hidden":
        return replace(model, hidden=value, groups=tuple(groups))
    return replace(model, groups=tuple(groups))


def full_rate_width(gpu: Gpu, prec: Precision) -> tuple[int, tuple[int, int, int], str]:
    """The narrowest tile N (a weight width's side of the output) that runs at the best rate shared memory
    feeds any of the GPU's tiles (cost.gemm.tile_feed) in the GEMM math `prec` runs, that tile and the math: widths
    aligned beyond it gain nothing but wave quantisation. B200 at every precision and B300 at BF16/FP8: 128
    (the 128x128 1-CTA UMMA is fed at the full rate, and at FP4 on B200 so is the 2-CTA 256x128); B300/GB300
    at FP4: 256 (at 13.5 PFLOPS only the 2-CTA 256x256 tile is fed); CDNA: 128 (64x128); Hopper, Ada, Ampere:
    64 (their GPU files write no shared-memory bound, so every tile, 64x64 included, runs at the full rate)."""
    run, _ = executable(prec, gpu)
    mm = gemm_math(run.weight, run.activation, gpu)
    a, w = run.activation.bytes_per_value(), run.weight.bytes_per_weight()
    feed = {t: gemm.tile_feed(t[0], t[1], gpu, math=mm, a_bytes=a, w_bytes=w) for t in gpu.tiles}
    best = max(feed.values())
    tile = min((t for t in gpu.tiles if feed[t] >= best - 1e-9), key=lambda t: (t[1], t[0]))
    return tile[1], tile, mm


def _grid_unit(d: int, shard: int) -> int | None:
    """R2's grid: the finest the width per GPU misses, 128 then 256 (Blackwell's 2-CTA UMMA tiles are 256x128 and
    256x256 and Hopper's widest wgmma CTA tile 128x256; no bundled GPU's tile is wider than 256, so 512 pads nothing)."""
    return next((u for u in (128, 256) if d % (u * shard)), None)


def _shards(model: ModelSpec, sh: Plan) -> dict:
    """The GPUs each width R2 checks is split over (hidden whole; the dense FFN over TP; the experts over MoE-TP)."""
    return {"hidden": 1, "inter": int(np.asarray(sh.tp)), "expert_inter": int(np.asarray(sh.moe_tp))}


def _tile_alignment(model, gpu, cal, prec, point, *, regime, engine):
    """R2: widths per GPU off the 128 and 256 grids, each priced at the operating point in the regime's objective (_time,
    as `estimate` prints it) against its aligned neighbours at equal FLOPs: their times interpolated to its width,
    so what the neighbours' own sizes and waves cost stays out of the figure and only the padded tail's is left (the
    vocabulary: _vocab)."""
    out = []
    sh = point.plan
    tp = int(np.asarray(sh.tp))
    dims = [("hidden", model.hidden, 1)]
    inter = sorted({layer.ffn.inter for layer, _ in model.groups if isinstance(layer.ffn, DenseFfn)})
    eint = sorted({layer.ffn.expert_inter for layer, _ in model.groups if isinstance(layer.ffn, MoE)})
    dims += [("inter", d, tp) for d in inter[:1]] + [("expert_inter", d, int(np.asarray(sh.moe_tp))) for d in eint[:1]]
    t0 = _time(model, gpu, cal, prec, sh, regime=regime, engine=engine, point=point)
    width, tile, mm = full_rate_width(gpu, prec)
    rate = f"{gpu.name}'s {mm.upper()} tiles run at their full rate from {width} wide ({tile[0]}x{tile[1]}" + (", 2-CTA)" if tile[2] > 1 else ")")
    for what, d, shard in dims:
        unit = _grid_unit(d, shard)
        if unit is None or d < unit * shard:
            continue
        step = unit * shard
        lo, hi = d // step * step, (d // step + 1) * step
        t_lo, t_hi = (_time(_with_dim(model, what, x), gpu, cal, prec, sh, regime=regime, engine=engine, point=point) for x in (lo, hi))
        if not math.isfinite(t0 + t_lo + t_hi):
            continue
        t_eq = t_lo + (t_hi - t_lo) * (d - lo) / (hi - lo)  # an aligned width of d's FLOPs
        pct = 100.0 * (t0 / t_eq - 1.0)
        local = f" ({d / shard:g} per GPU at TP{shard})" if shard > 1 else ""
        head = (f"{what} {d}{local} is not a multiple of {unit}: at {point.text()} on "
                f"{gpu.name}, {_objective(regime)} {t0 * 1e3:.4f} ms against {t_eq * 1e3:.4f} ms for the aligned {lo} and {hi} "
                f"({t_lo * 1e3:.4f}, {t_hi * 1e3:.4f} ms) interpolated to its FLOPs")
        nearer = lo if d - lo <= hi - d else hi
        dp = _with_dim(model, what, nearer).total_params - model.total_params
        figures = {"objective": _objective(regime), "time_ms": t0 * 1e3, "aligned_time_ms": t_eq * 1e3, "neighbours": [lo, hi],
                   "neighbour_time_ms": [t_lo * 1e3, t_hi * 1e3],
                   "unit": unit, "full_rate_width": width, "point": point.to_dict()}
        if round(pct, 1) > 0:
            out.append(Finding("R2", "warning" if pct >= 1.0 else "info", what, f"{head}: its padded tail costs {pct:.1f}%; {rate}",
                               pct, f"{what} {d} -> {nearer} ({dp / 1e9:+.2f}B parameters)", figures,
                               shape=_with_dim(model, what, nearer)))
        else:
            why = (f"on {gpu.name} alignment beyond 128 does not matter: {rate}" if unit == 256 and width <= 128
                   else f"the padded tail costs nothing at this deployment; {rate}")
            out.append(Finding("R2", "info", what, f"{head}: {_more_time(pct, 'them')}; {why}", 0.0, "nothing to fix", figures))
    return out


def _vocab(model) -> list[Finding]:
    """R2's vocabulary: its padding to the LM head's tiles (a width, no engine priced)."""
    v = model.vocab
    if not v % 128:
        return []
    pad = int(math.ceil(v / 128) * 128)
    return [Finding("R2", "info", "vocab", f"vocab {v} is not a multiple of 128 (LM-head tiles pad to {pad})",
                    100.0 * (pad / v - 1), f"pad the vocabulary to {pad}")]


def _shallower_layers(layers: int, *, moe: bool) -> int:
    """R3's depth: the count on design's layer grid (explore.design.axis_step: 2, MoE 4) nearest 3/4 of `layers`, the
    deeper of two as near (MoE 40 -> 32, not 28)."""
    from llm_codesign.explore.design import axis_step

    step = int(axis_step("layers", moe=moe))
    return max(int(math.floor(0.75 * layers / step + 0.5)), 1) * step


def r7_tp(gpus: int) -> int:
    """The widest TP R7 checks heads against within `gpus` (of 2, 4, 8; 1 where none fits): a count that splits over it
    splits over the narrower ones, each a divisor of it."""
    return max([1] + [p for p in (2, 4, 8) if p <= gpus])


def kv_splits(kv: int, tp: int) -> bool:
    """Whether `kv` KV heads pass R7 at TP `tp` (_kv_splits): they divide it (copies) or it divides them."""
    return kv % tp == 0 or tp % kv == 0


def _kv_at(a: GQA, tp: int) -> int:
    """R3's KV heads for a group: the shape's where they pass R7 at `tp`; else the nearest count that does (a divisor or a
    multiple of tp, the larger of two as near: 12 -> 16 at TP8), so that R3 offers no shape R7 flags. MHA (KV heads =
    query heads) is marked 0: the variant's KV heads follow its query heads."""
    if kv_splits(a.kv_heads, tp):
        return a.kv_heads
    if a.kv_heads == a.heads:
        return 0
    ok = [d for d in range(1, tp + 1) if tp % d == 0] + [tp * k for k in range(1, a.kv_heads // tp + 2)]
    return min(ok, key=lambda d: (abs(d - a.kv_heads), -d))


def _heads_at(model: ModelSpec, hidden: int, *, exact: bool = True, tp: int = 1) -> dict | None:
    """Each GQA group's (query heads, KV heads) scaled with the width (heads x hidden / the shape's: design's heads =
    hidden / head_dim where the shape has it), where that is a whole count its KV heads divide that splits over R7's
    widest TP `tp` (r7_tp: newcomer review 5, item 11, R3 kept 52 heads that R7 flags at TP8) and, as design's rows
    (explore.design._well_formed), a multiple of 8 where the shape's is; the KV heads the shape's where they pass R7 at
    `tp`, else _kv_at's. None where no such count is. Not `exact`: rounded to the nearest such count."""
    out = {}
    for j, (layer, _) in enumerate(model.groups):
        a = layer.attn
        if isinstance(a, GQA):
            kv = _kv_at(a, tp)
            unit = math.lcm(kv or 1, tp, 8 if a.heads % 8 == 0 else 1)
            x = a.heads * hidden / model.hidden
            q = max(int(round(x / unit)) * unit, unit)
            if exact and q != x:
                return None
            out[j] = (q, kv or q)
    return out


def _kept_heads(model: ModelSpec, tp: int) -> dict | None:
    """The shape's own (query heads, KV heads) per GQA group, for R3's variants that keep them; None where R7 flags them
    at `tp` (a variant keeping them would carry R7's error: none is offered)."""
    out = {}
    for j, (layer, _) in enumerate(model.groups):
        a = layer.attn
        if isinstance(a, GQA):
            if a.heads % tp or not kv_splits(a.kv_heads, tp):
                return None
            out[j] = (a.heads, a.kv_heads)
    return out


def _design_kind(model: ModelSpec) -> bool:
    """A shape design's grid could hold: GQA whose query heads span the width (heads x head_dim = hidden), one dense or
    MoE FFN kind (explore.design.shapes)."""
    return all(isinstance(layer.attn, GQA) and layer.attn.heads * layer.attn.head_dim == model.hidden
               and isinstance(layer.ffn, (DenseFfn, MoE)) for layer, _ in model.groups)


def _shallower(model: ModelSpec, *, hidden: int, layers: int, width: int, heads: dict, tp: int) -> ModelSpec:
    """R3's variant: `layers` layers (each group's share kept) at `hidden`, the GQA groups' (query, KV) heads `heads`
    (_heads_at), other mixers' heads scaled with the width and kept divisible by TP, and the FFN of the shape's kind
    (the experts' where it has any, else the dense one) `width` wide; another kind of FFN scales with the width on
    its grid (256)."""
    L, scale = model.num_layers, hidden / model.hidden
    groups = []
    for j, (layer, n) in enumerate(model.groups):
        a, f = layer.attn, layer.ffn
        if isinstance(a, GQA):
            a = replace(a, heads=heads[j][0], kv_heads=heads[j][1])
        elif isinstance(a, Mamba2) and scale != 1:  # heads x head_dim tracks the width (Mamba-2 expand x hidden)
            a = replace(a, heads=max(int(round(a.heads * scale / tp)) * tp, tp))
        elif isinstance(a, GatedDeltaNet) and scale != 1:  # key heads scale, each keeping its value heads
            nk = max(int(round(a.kv_heads * scale / tp)) * tp, tp)
            a = replace(a, kv_heads=nk, heads=nk * (a.heads // a.kv_heads))
        if isinstance(f, MoE):
            f = replace(f, expert_inter=width)
        elif isinstance(f, DenseFfn):
            f = replace(f, inter=width if not model.is_moe else max(int(round(f.inter * scale / 256) * 256), 256))
        groups.append((Layer(a, f), max(int(round(n * layers / L)), 1)))
    return replace(model, hidden=hidden, groups=tuple(groups))


def _variants(model: ModelSpec, *, tp: int, r7: int = 1) -> list[ModelSpec]:
    """R3's shallower variants, built as design builds its shapes (explore.design: its layer and width grids, one
    FFN width filled in by design.widened_to at no fewer parameters than the shape: a variant with fewer never passes
    design's quality test where the terms the shapes share are all that differ, its parameter term having no band):
    3/4 of the layers (_shallower_layers) at the width on design's hidden grid nearest sqrt(4/3) x the shape's whose
    scaled heads are well formed (_heads_at), and at the shape's own width (the FFN takes the parameters: design's
    first proposal for a 64 x 6144 shape, 48 x 6144 with its FFN 20,480 -> 29,184). Every variant's heads pass R7 at
    its widest TP `r7` (r7_tp): the shape's own heads are kept only where they do. Empty where no wider width is on the
    grid (a toy width)."""
    from llm_codesign.explore.design import axis_step, widened_to

    moe, L, h = model.is_moe, model.num_layers, model.hidden
    L2 = _shallower_layers(L, moe=moe)
    if L2 >= L:
        return []
    step = int(axis_step("hidden", moe=moe))
    target = h * math.sqrt(L / L2)
    if round(target / step) * step <= h:  # no wider width on the grid (a toy width): nothing to compare
        return []
    # the grid's widths above the shape's, nearest the target first; the first whose heads scale whole
    near = sorted((k * step for k in range(int(target // step) - 16, int(target // step) + 18) if k * step > h),
                  key=lambda x: (abs(x - target), x))
    # the nearest width whose heads scale whole, else the nearest width with its heads rounded to a well-formed count
    wide = next(((x, hd) for x in near if (hd := _heads_at(model, x, tp=r7)) is not None),
                (near[0], _heads_at(model, near[0], exact=False, tp=r7)))
    kept = _kept_heads(model, r7)
    out = []
    # a shape design's grid cannot hold (its heads do not span the width: Qwen3's 64 x 128 on 4096) may keep its heads
    # at the wider width too, its query heads per KV head (the proxy's KV-sharing term) unchanged; a design-kind shape
    # keeps design's rule, heads = width / head_dim, so that R3 offers no shape design could not build
    for hidden, heads in [wide] + ([] if _design_kind(model) else [(wide[0], kept)]) + [(h, kept)]:
        if heads is None:
            continue
        w = widened_to(model.total_params, hidden, lambda w, x=hidden, hd=heads: _shallower(
            model, hidden=x, layers=L2, width=w, heads=hd, tp=tp).total_params, moe=moe)
        if w is not None:
            v = _shallower(model, hidden=hidden, layers=L2, width=w, heads=heads, tp=tp)
            out += [v] if v not in out else []
    return out


def _ffn_width(m: ModelSpec) -> int:
    """The width R3 fills in: the experts' where the shape has any, else the dense FFN's."""
    return next((int(layer.ffn.expert_inter) if isinstance(layer.ffn, MoE) else int(layer.ffn.inter) for layer, _ in m.groups
                 if isinstance(layer.ffn, MoE if m.is_moe else DenseFfn)), 0)


def _width_vs_depth(model, gpu, cal, prec, point, *, regime, proxy_file=None, engine, place, gpus=OPERATING_GPUS, slo=None):
    """R3: what depth costs and a shallower variant at no fewer parameters (_variants: design's grid), each priced at its
    own operating point (`place`: the deployment design would give it, as design ranks shapes; the shape's where neither
    has one) in the regime's objective (_time), judged as design would: the fastest design would propose, else the
    fastest with why design would not. cost %: the variant's gain in the regime's objective either way (the fix says
    whether design would propose it)."""
    L, h = model.num_layers, model.hidden
    aspect = h / L
    if L < 16:
        return []
    plan = point.plan
    variants = _variants(model, tp=int(np.asarray(plan.tp)), r7=r7_tp(gpus))
    if not variants:
        return []
    t0 = _time(model, gpu, cal, prec, plan, regime=regime, engine=engine, point=point)
    if not math.isfinite(t0):
        return []
    priced = _wider_priced(model, gpu, cal, prec, point, regime=regime, engine=engine, place=place, proxy_file=proxy_file,
                           variants=variants)
    if not priced:
        return []
    wide, t1, pw, why, acc, q, held = min([x for x in priced if not x[3]] or priced, key=lambda x: x[1])
    one = replace(plan, pp=1)  # a token's path through every stage: the whole stack on one stage
    floor, lone = _depth_floor(model, gpu, cal, prec, one, point=point, engine=engine)
    gain = 100.0 * (t0 / t1 - 1.0)
    obj = _objective(regime)
    n2, params, h2, w2 = wide.num_layers, wide.total_params, wide.hidden, _ffn_width(wide)
    heads = sorted({layer.attn.heads for layer, _ in wide.groups if isinstance(layer.attn, GQA)})
    figures = {"objective": obj, "time_ms": t0 * 1e3, "wider_time_ms": t1 * 1e3, "speed_gain_pct": gain, "wider_layers": n2,
               "wider_hidden": h2, "wider_heads": heads, "wider_ffn": w2, "wider_params": params, "params": model.total_params,
               "depth_floor_ms": floor * 1e3, "one_request_tpot_ms": lone * 1e3,
               "point": point.to_dict(), "wider_point": pw.to_dict(), **q}
    if held:  # the variant's own best deployment, a TP the shape's heads block (R7's cost): said, not counted
        figures |= {"wider_own_point": held[0].to_dict(), "wider_own_time_ms": held[1] * 1e3,
                    "speed_gain_at_own_point_pct": 100.0 * (t0 / held[1] - 1.0)}
    quality = (f"proxy loss {_signed(q['quality_delta_pct'], 3)}% +- {q['quality_band_pct']:.3f}%, design's test at most "
               f"+{q['quality_test_pct']:.3f}%") + (f" (extrapolated: {', '.join(q['extrapolated'])})" if q["extrapolated"] else "")
    at = f"at {point.text()} on {gpu.name}"
    variant, at_w = _r3_variant_text(model, wide, heads, point=point, pw=pw, held=held, obj=obj, figures=figures)
    count = f"{params / 1e9:.1f}B vs {model.total_params / 1e9:.1f}B params"
    if why:
        if gain <= 0:
            return []
        short = ("outside the published envelope" if not q["wider_inside_envelope"] else "beyond its budget" if "budget" in why
                 else "fails its quality test")
        return [Finding("R3", "info", "layers", f"{L} layers x hidden {h} (aspect {aspect:.0f}): {variant} ({count}) would be "
                        f"{gain:.1f}% faster {at}{' (the variant' + at_w + ')' if at_w and not held else at_w} but {why}", gain,
                        f"keep the depth: design would not propose the variant ({short}); {quality}", figures)]
    sev = "warning" if gain > 10 else "info"
    # design prices the same variant the same: at --params the shape's count with the shape as its baseline it is one
    # of design's rows, its gain % this one (test_lint: test_r3_variant_is_designs_row)
    hint = _design_hint(model, wide, gpu, regime=regime, gpus=gpus, slo=slo)
    return [Finding("R3", sev, "layers", f"{L} layers x hidden {h} (aspect {aspect:.0f}): depth alone costs ~{floor * 1e3:.2f} ms per token "
                    f"of one request's {lone * 1e3:.2f} ms TPOT on {one.label()} (fixed kernel costs and collectives); {at} {obj} {t0 * 1e3:.3f} ms",
                    gain, f"{variant} ({count}){at_w}: {obj} {t1 * 1e3:.3f} ms, "
                    f"{_faster(gain)}; accuracy: {quality}"
                    # the aspect term alone where it moves (on Kaplan's flat band it changes by nothing: no figure)
                    + (f"; {acc}" if round(q["aspect_delta_pct"], 3) or round(q["aspect_band_pct"], 3) else "")
                    + (hint if gain > 0 else ""), figures, shape=wide)]


def _r3_variant_text(model, wide, heads, *, point, pw, held, obj, figures) -> tuple[str, str]:
    """(R3's variant as its layers, hidden, heads and FFN width; where it is priced: its own operating point `pw`, or both
    at the shape's where the variant's own (`held`) needs a TP the shape's heads block)."""
    ffn = "experts" if model.is_moe else "FFN"
    variant = (f"{wide.num_layers} layers x hidden {wide.hidden}" + (f" with {'/'.join(map(str, heads))} heads" if heads else "")
               + f", {ffn} {_ffn_width(model)} -> {_ffn_width(wide)}")
    at_w = "" if pw == point else f" at {pw.text()}"  # the variant at its own operating point
    if held:  # both at the shape's point: the TP the variant's own needs is R7's, not depth's
        at_w = (f" (both at the shape's deployment; the variant's own, {held[0].text()}, {obj} {held[1] * 1e3:.3f} ms, "
                f"{_faster(figures['speed_gain_at_own_point_pct'])}, needs a TP the shape's {held[2]} do not split over: "
                "R7's cost, not depth's)")
    return variant, at_w


def _design_hint(model, wide, gpu, *, regime, gpus, slo) -> str:
    """The `design` command that searches shapes like R3's variant `wide` with the shape as baseline, on the same GPUs and
    SLO; MODEL the model as lint was given it (a name, an id or a path: the finding does not depend on which). design's
    grid holds query widths 1 and the reference's (design.grid_axes' q_ratio): a variant at another width is not its row."""
    from llm_codesign.explore.accuracy_model import query_width

    slo_flag = "" if slo is None else (f" --min-tps-gpu {slo.min_tps_gpu:g}" if regime == "latency" else f" --min-tps-user {slo.min_tps_user:g}")
    w, ref = query_width(wide), query_width(model)
    said = ("design ranks it with shapes like it" if w is None or ref is None or any(math.isclose(w, x, rel_tol=1e-6) for x in (1.0, ref))
            else f"design ranks shapes like it at query widths 1 and the shape's {ref:.3g} (this variant's {w:.3g} is not on its grid)")
    return (f"; {said}: llm-codesign design --params {model.total_params / 1e9:.4g}e9 --baseline MODEL"
            f"{' --moe' if model.is_moe else ''} --gpu {gpu.id} --gpus {gpus} --regime {regime}{slo_flag}")


def _valid(model: ModelSpec, gpu: Gpu, plan: Plan) -> int:
    """validity's reason code of `model` on `plan` (-1: it runs there)."""
    return int(validity(model, gpu, plan, int(np.ravel(plan.gpus)[0])))


def _wider_priced(model, gpu, cal, prec, point, *, regime, engine, place, proxy_file, variants) -> list[tuple]:
    """R3's variants, placed by one search over them at their own operating points (`place`, of a list of variants; the
    shape's fixed point where the shape has no chosen one) and judged (_judge_wider): (variant, time, point, why not,
    aspect text, quality figures, held). `held`: where the shape's heads or KV heads do not split over the variant's own
    TP (R7), the variant is priced at the shape's point instead, so that R3's gain is depth's and not the TPs R7 prices
    (newc12 #2: 5 KV heads hold the shape at TP1, and its variant at TP8 was "250% faster"); `held` is then (the variant's
    own point, its time there, the shape's count that blocks it), else None."""
    priced = []
    # every variant placed by one search over them (operating_points), as design prices its shapes
    placed = place(variants) if point.chosen else [point] * len(variants)
    for wide, pw in zip(variants, placed, strict=True):
        pw = pw if pw.chosen or not point.chosen else point  # neither chosen: both at the shape's fixed point
        if _valid(wide, gpu, pw.plan) >= 0:
            continue
        t1 = _time(wide, gpu, cal, prec, pw.plan, regime=regime, engine=engine, point=pw)
        held, why = None, REASONS[max(_valid(model, gpu, pw.plan), 0)]
        if pw != point and why in ("heads", "kv_heads") and _valid(model, gpu, pw.plan) >= 0:
            counts = sorted({getattr(lay.attn, why) for lay, _ in model.groups if isinstance(lay.attn, (GQA, MLA))})
            held = (pw, t1, f"{'/'.join(map(str, counts))} {'KV heads' if why == 'kv_heads' else 'attention heads'}")
            pw = point
            t1 = _time(wide, gpu, cal, prec, pw.plan, regime=regime, engine=engine, point=pw) if _valid(wide, gpu, pw.plan) < 0 else math.inf
        if math.isfinite(t1):
            priced.append((wide, t1, pw, *_judge_wider(model, wide, prec, proxy_file=proxy_file), held))
    return priced


def _depth_floor(model, gpu, cal, prec, one: Plan, *, point, engine) -> tuple[float, float]:
    """What depth costs, read off the decode step of one request on `one` (the point's plan on one stage; same
    calibration, the point's context): each layer operator's fixed part (its time beyond the larger of its compute and
    memory times: launch and prologue costs) and its collectives whole (latency-bound at one token); the LM head and
    pipeline hand-offs do not grow with depth. A part of the step, so never above one request's TPOT, returned beside it."""
    _, _, ops = decode_step(model, gpu, prec, one.broadcast(), costs=engine.costs(cal), b=1.0, ctx=point.isl + point.osl / 2.0, k=0.0,
                            spec=None)
    floor = sum(float(np.sum((op.time if op.kind == "comm" else op.time - np.maximum(op.t_compute, op.t_memory)) * op.count))
                for op in ops if op.part not in ("lm_head", "pipeline"))
    lone = float(np.ravel(evaluate(model, Serving(gpu=gpu, prec=prec, plan=one, engine=engine), cal=cal, concurrency=1, isl=point.isl,
                                   osl=point.osl)["tpot_s"])[0])
    return floor, lone


def _judge_wider(model, wide, prec, *, proxy_file) -> tuple[str, str, dict]:
    """Why design would not propose `wide` in place of `model` ('' when it would), the aspect term's change,
    and the proxy's whole quality delta of `wide` against `model` (percent of the loss), its band, design's test of it
    (explore.accuracy_model.quality_delta at design's default k = 1, tol = 0: delta at most sigma_test) and the terms
    it extrapolates (explore.accuracy_model, as design's rows carry them)."""
    from llm_codesign.explore.accuracy_model import model_terms, proxy_constants, quality_delta, query_heads
    from llm_codesign.explore.design import BUDGET_TOL
    from llm_codesign.explore.envelope import envelope_at, features, position, row_of

    pc = proxy_constants(proxy_file)
    # the wider shape's KV heads read at the shape's query heads, as design reads a row's at its reference's (accuracy_model)
    a, b = model_terms(model, prec.weight.name, pc=pc), model_terms(wide, prec.weight.name, pc=pc, ref_heads=query_heads(model))
    loss = float(a["loss"])
    qd = quality_delta(b, a)
    whole = {k: float(np.ravel(v)[0]) for k, v in qd.items() if k not in ("beyond", "beyond_scale")}
    # the terms past their studied ranges as design's rows carry them (design.py's qx_, its `extrapolated`): the query
    # width's distance from the reference's among them
    beyond = sorted(k for k, v in qd["beyond"].items() if float(np.ravel(v)[0]) > 0)
    only = [{"loss": t["nats"]["aspect"][0], "slope": t["slope"], "ln": {}, "nats": {"aspect": t["nats"]["aspect"]}} for t in (a, b)]
    q = {k: float(np.ravel(v)[0]) for k, v in quality_delta(only[1], only[0]).items() if k not in ("beyond", "beyond_scale")}
    acc = f"aspect-ratio term {_signed(100 * q['delta'] / loss, 3)}% +- {100 * q['sigma'] / loss:.3f}% of the proxy loss"
    # a dense shape against the dense models' envelope, as design judges its shapes (design_report._envelope)
    # at the shape's count, as design judges its rows at its budget (--params the shape's: test_r3_variant_is_designs_row)
    pos = position(envelope_at(float(model.total_params), dense=not wide.is_moe), features(row_of(wide)) | {"hidden": float(wide.hidden)})
    here = position(envelope_at(float(model.total_params), dense=not model.is_moe), features(row_of(model)) | {"hidden": float(model.hidden)})
    figures = {"quality_delta_pct": 100 * whole["delta"] / loss, "quality_band_pct": 100 * whole["sigma"] / loss,
               "quality_test_pct": 100 * whole["sigma_test"] / loss,
               "quality_passes": bool(whole["passes"]), "extrapolated": beyond, "wider_inside_envelope": bool(pos["inside"]),
               "aspect_delta_pct": 100 * q["delta"] / loss, "aspect_band_pct": 100 * q["sigma"] / loss}
    if not pos["inside"]:  # design proposes no shape outside the envelope, whether or not this one is (R8 says so)
        where = "leaves" if here["inside"] else "lies outside"
        return f"it {where} the published envelope ({', '.join(v['bound'] for v in pos['outside'])})", acc, figures
    over = wide.total_params / model.total_params - 1.0
    if over > BUDGET_TOL:  # design at the shape's count ranks no shape beyond its budget (the experts' grid is coarse)
        return (f"it holds {over:.0%} more parameters than the shape ({wide.total_params / 1e9:.1f}B: no narrower width on design's "
                f"grid holds as many), beyond design's budget of +-{BUDGET_TOL:.0%}"), acc, figures
    if not q["passes"]:
        return f"its aspect ratio costs accuracy beyond the term's band ({acc})", acc, figures
    if not whole["passes"]:  # design admits a shape only where its whole proxy loss passes (explore.design, quality_delta)
        return (f"it fails design's quality test: proxy loss {_signed(figures['quality_delta_pct'], 3)}% against at most "
                f"+{figures['quality_test_pct']:.3f}%"), acc, figures
    return "", acc, figures


def _trust_region(model, prec, *, proxy_file=None):
    """R8: the shape outside the envelope at its scale (explore.envelope), with its accuracy cost against the published
    model of its kind nearest its size (as design's reference without a baseline) and that cost's band."""
    from llm_codesign.explore import accuracy_model
    from llm_codesign.explore.envelope import describe, envelope_at

    j = accuracy_model.envelope_judgement(model, prec.weight.name, pc=accuracy_model.proxy_constants(proxy_file))
    if j is None:
        return []
    N = float(model.total_params)
    # what the envelope is (newcomer review 6, item 6: MHA called "outside the published envelope" though Llama-2 is MHA):
    # the bundled checkpoints near the size (envelope.toml), KV-head bounds over the GQA ones only
    env = envelope_at(N, dense=not model.is_moe)
    kv = any(v["bound"].split(".")[0] in ("kv_heads", "q_per_kv") for v in j["outside"])
    built = (f" (the envelope at {N / 1e9:.3g}B is built from the bundled checkpoints {', '.join(env.models)}"
             + (": KV-head bounds over its GQA models, none MHA; published MHA models such as Llama-2 (2023) are not "
                "bundled" if kv else "") + ")")
    d, sd, ex = 100 * j["delta"] / j["reference_loss"], 100 * j["sigma"] / j["reference_loss"], j["extrapolated"]
    worst = j["outside"][0]
    return [Finding("R8", "warning", worst["bound"].split(".")[0],
                    f"{model.num_layers} layers x hidden {model.hidden} at {N / 1e9:.1f}B params is outside the published envelope: "
                    + "; ".join(describe(v) for v in j["outside"]) + built
                    + f". Proxy loss {d:+.2f}% +- {sd:.2f}% against {j['reference']}" + (f" (extrapolated: {', '.join(ex)})" if ex else ""),
                    max(d, 0.0), f"a shape inside the envelope at {N / 1e9:.3g}B (llm-codesign design --params {N:.3g}), or "
                    "accept an accuracy no published model vouches for",
                    {"quality_delta_pct": d, "quality_band_pct": sd, "extrapolated": ex, "reference": j["reference"],
                     "outside": [v["bound"] for v in j["outside"]]})]


# the block-scaled weight formats' scale blocks along K (NVFP4 16, MXFP4 32 elements, FP8-block 128x128), with R4's
# severity: a format whose blocks do not divide a width cannot quantise it whole
SCALE_BLOCKS = ((16, "NVFP4", "error", "nvfp4"), (32, "MXFP4", "warning", "mxfp4"), (128, "FP8-block", "info", "fp8_block"))


def _widths(model: ModelSpec) -> dict:
    """The widths a scale block runs along: hidden, the dense FFN, the experts and the shared expert."""
    dims = {"hidden": model.hidden}
    for layer, _ in model.groups:
        if isinstance(layer.ffn, DenseFfn):
            dims["inter"] = layer.ffn.inter
        if isinstance(layer.ffn, MoE):
            dims["expert_inter"] = layer.ffn.expert_inter
            if layer.ffn.shared_inter:
                dims["shared_inter"] = layer.ffn.shared_inter
    return dims


def scale_block_notes(model: ModelSpec, prec: Precision) -> list[str]:
    """What R4 says of the weight format a deployment runs: each width its scale blocks do not divide (estimate's note;
    the cost model prices the width as given)."""
    out = []
    for block, fmt, sev, name in SCALE_BLOCKS:
        if prec.weight.name == name:
            out += [f"{what} {d} is not divisible by {block} ({fmt} scale blocks; lint R4 {sev}): priced as given, though an "
                    f"engine cannot quantise it whole in {fmt}" for what, d in _widths(model).items() if d % block]
    return out


def runs_format(gpu: Gpu, fmt: str) -> bool:
    """Whether `gpu` runs the block-scaled weight format `fmt` (SCALE_BLOCKS' names) in its own math: the format is
    the one the GPU executes (spec.precision.executable: MI355X runs an NVFP4 checkpoint as MXFP4) and its tensor cores
    have that math (FP4 for NVFP4 and MXFP4: Blackwell, CDNA4; FP8 for FP8-block: Hopper on)."""
    run, _ = executable(Precision.of(fmt), gpu)
    return run.weight.name == fmt and gpu.supports("fp8" if fmt == "fp8_block" else "fp4")


def _quantization_readiness(model, shards: dict, gpu: Gpu, engine: Engine | None = None, *, kv: str | None = None,
                            instead: Engine | None = None):
    """R4: widths the FP4 and FP8-block scale blocks do not divide, of the formats `gpu` runs (runs_format: NVFP4's
    blocks are no finding on H100, which has no FP4 math), each proposed at the nearest multiple of every block
    and of R2's grid on its GPUs (`shards`: a width R2 checks per GPU), so R2 and R4 propose one width; head dims
    outside the fast attention kernels."""
    out = []
    blocks = [x for x in SCALE_BLOCKS if runs_format(gpu, x[3])]
    for name, d in _widths(model).items():
        for block, fmt, sev, _ in blocks:
            if d % block:
                pad = math.ceil(d / block) * block
                # a width the blocks miss is off 128 too: R2's unit is 128, a multiple of every block
                step = 128 * shards.get(name, 1)
                lo = d // step * step
                to = lo if lo and d - lo <= lo + step - d else lo + step
                on = f" over {shards[name]} GPUs" if shards.get(name, 1) > 1 else ""
                out.append(Finding("R4", sev, name, f"{name} {d} is not divisible by {block} ({fmt} scale blocks, a format {gpu.name} runs)",
                                   100.0 * (pad / d - 1), f"{name} -> {to} (the nearest multiple of {step}: every scale block "
                                   f"and R2's tile grid{on}; or keep this tensor in a wider format)", shape=_with_dim(model, name, to)))
                break
    return out + _head_dims(model, engine, gpu, kv, instead=instead) + _group_split(model, gpu)


def _group_split(model: ModelSpec, gpu: Gpu) -> list[Finding]:
    """R4's quantization groups: an error where an INT checkpoint's row-parallel widths (spec.plan.group_widths) split its
    groups at a TP up to the GPU's scale-up domain (8 at most), the plans estimate, pareto and export refuse (validity's
    quant_groups: vLLM's AWQ/GPTQ linear methods raise at load); the fix widens the widths that split to whole groups at TP8
    (the dense FFN's as a shape; o_proj's heads x head_dim said only), or serves at a TP that holds whole groups."""
    g = quant_group(model)
    if not g:
        return []
    top = min(max(int(gpu.scale_up_domain), 1), 8)
    bad = [t for t in (2, 4, 8) if t <= top and int(validity(model, gpu, Plan(tp=t), t)) >= 0
           and REASONS[int(validity(model, gpu, Plan(tp=t), t))] == "quant_groups"]
    if not bad:
        return []
    step = g * top
    # widen only the widths that split at TP`top` (fixR11: an o_proj of 32 x 80 = 2560 = 20 groups splits at TP8 while
    # inter 10240 does not, and "inter 10240 -> 10240" changed nothing)
    split = [(int(w), over) for w, over in group_widths(model) if int(w) % step]
    inter = next((w for w, over in split if over == "tp*kvp"), 0)
    to = math.ceil(inter / step) * step if inter else 0
    fix = [f"inter {inter} -> {to}"] if to else []
    fix += [f"o_proj's heads x head_dim {w} -> a multiple of {step}" for w, over in split if over == "tp"]
    said = reason_text(model, gpu, REASONS.index("quant_groups"))
    return [Finding("R4", "error", "inter" if to else "o_proj", f"tp {', '.join(map(str, bad))}: {said}", 0.0,
                    f"{'; '.join(fix)} (whole groups of {g} at TP{top}), or serve at a TP that holds whole groups" if fix else
                    "serve at a TP that holds whole groups", {"group_size": g, "tp_refused": bad},
                    shape=_with_dim(model, "inter", to) if to else None)]


def _head_dims(model: ModelSpec, engine: Engine | None, gpu, kv: str | None = None, *, instead: Engine | None = None) -> list[Finding]:
    """R4's head dims: an error where no fused attention kernel of the engine on `gpu` takes it (spec.engines.head_dims,
    the rule estimate and export say it by), naming the engine and what runs instead; a warning where it is outside the
    fast sizes. Neither is priced: the padding to the next fast size is a width, not a time, so the cost is 0 and the
    width is in the message and figures (newcomer review 6, item 11: head_dim 125 read as costing 2.4%). Where the engine
    runs no kernel for it, the error says where the other rules were priced: on `instead` (lint_point), or nowhere."""
    out = []
    name = engine.name if engine else "vllm"
    for hd in sorted({layer.attn.head_dim for layer, _ in model.groups if isinstance(layer.attn, GQA)}):
        if hd in FAST_HEAD_DIMS:
            continue
        up = min([x for x in FAST_HEAD_DIMS if x >= hd] or [hd])
        figures = {"head_dim": hd, "padded_to": up, "padding_pct": 100.0 * (up / hd - 1), "engine": name}
        said = head_dim_support(name, gpu, hd, kv)  # with the KV format priced: SGLang's FA3 takes 16s on FP8
        fix = f"head_dim {hd} -> {up}" if up != hd else f"head_dim {hd} -> 256 (the largest size every engine's kernels take)"
        to = up if up != hd else 256
        if said:  # an error where the engine as launched does not run it; where it picks a slower kernel itself, a warning
            other = "" if said[0] != "none" else (f"; R2, R3, R6, R7's Helix and R9 priced on {instead.title}, which runs it"
                                                  if instead is not None else ", nor are R2, R3, R6, R7's Helix and R9")
            out.append(Finding("R4", "warning" if said[0] == "slower" else "error", "head_dim", f"head_dim {hd}: {said[1]}: {said[2]}; not priced{other}", 0.0, fix,
                               figures | {"kind": said[0]}, shape=_with_dim(model, "head_dim", to)))
        else:
            out.append(Finding("R4", "warning", "head_dim", f"head_dim {hd} is outside the fast attention kernels' sizes "
                               f"{FAST_HEAD_DIMS} (padding to {up} is {figures['padding_pct']:.1f}% wider; not priced)", 0.0,
                               fix, figures, shape=_with_dim(model, "head_dim", to)))
    return out


def _moe_shape(model, gpu, cal, prec, sh, *, other=""):
    """R5: experts that do not split over EP, and the experts a decode batch reads, priced on `sh` (named where it is
    `other` than the reported point's plan)."""
    out = []
    for layer, _ in model.groups:
        f = layer.ffn
        if not isinstance(f, MoE):
            continue
        bad_ep = [ep for ep in (8, 16, 32, 64) if f.experts % ep]
        if f.experts % 8:
            out.append(Finding("R5", "warning", "experts", f"{_count(f.experts, 'expert')} {'does' if f.experts == 1 else 'do'} not split "
                               f"over EP {', '.join(map(str, bad_ep))}",
                               0.0, f"use a multiple of 8 experts (e.g. {int(math.ceil(f.experts / 8) * 8)})",
                               shape=_with_experts(model, int(math.ceil(f.experts / 8) * 8))))
        ratio = f.expert_inter / model.hidden
        B = 8
        dist = float(distinct_experts(f.experts, f.top_k, B))
        # decode at batch 8: weights of `dist` experts are read for B*top_k expert-token pairs
        lay = Layer(NoMixer(), f)
        t8 = float(step_time(layer_ops(model, lay, 1.0, gpu, cal, prec=prec, sh=sh, b=Batch(dec_seqs=B, dec_ctx=1), prefix="x")))
        t1 = float(step_time(layer_ops(model, lay, 1.0, gpu, cal, prec=prec, sh=sh, b=Batch(dec_seqs=1, dec_ctx=1), prefix="x")))
        pct = 100.0 * (t8 / t1 - 1.0) if t1 > 0 else 0.0  # extra MoE time per step of batch 8 over batch 1
        out.append(Finding("R5", "info", "moe", f"{_count(f.experts, 'expert')}, top-{f.top_k}, width {f.expert_inter} ({ratio:.2f}x hidden): "
                           f"decode at batch {B} reads {_count(round(dist), 'expert')} per layer; the MoE layer costs {t8 / t1:.1f}x batch 1"
                           + (f" on {other} (not the reported point's plan)" if other else ""),
                           pct, "expert parallelism with attention DP amortises expert reads; wider experts raise intensity",
                           {"plan": sh.label()}, at_point=not other))
        break
    return out


def _with_experts(model: ModelSpec, experts: int) -> ModelSpec:
    """`model` with `experts` experts in every MoE layer (R5's fix)."""
    return replace(model, groups=tuple((Layer(lay.attn, replace(lay.ffn, experts=experts) if isinstance(lay.ffn, MoE) else lay.ffn), n)
                                       for lay, n in model.groups))


def _period(layout: tuple) -> int:
    """The shortest run of groups whose repeats make `layout` (its length where none does: an irregular stack)."""
    return next(p for p in range(1, len(layout) + 1) if all(g == layout[k % p] for k, g in enumerate(layout)))


def _with_layers(model: ModelSpec, layers: int) -> ModelSpec:
    """`model` with `layers` layers. A stack that repeats a pattern (gpt-oss's sliding and full layers in turn) keeps
    repeating it, cut or extended at the end, so each kind keeps its share and stages keep their mix (36 alternating
    layers -> 32 alternating, not 14 sliding + 18 full with the last stage all full); else its most numerous kind of
    layer gains or loses the difference, at the end of the stack (the layout, where one is given, keeps every other
    layer where it was)."""
    layout = model.layout
    if layout and len(layout) == model.num_layers:
        p = _period(layout)
        if p < len(layout) and layers >= p:  # a repeated pattern, each of its groups kept
            new = tuple(layout[k % p] for k in range(layers))
            groups = tuple((lay, new.count(j)) for j, (lay, _) in enumerate(model.groups))
            return replace(model, groups=groups, layout=new)
    i = max(range(len(model.groups)), key=lambda j: model.groups[j][1])
    d = layers - model.num_layers
    groups = tuple((lay, n + d if j == i else n) for j, (lay, n) in enumerate(model.groups))
    if layout and d < 0:
        drop = [k for k, g in enumerate(layout) if g == i][d:]
        layout = tuple(g for k, g in enumerate(layout) if k not in drop)
    elif layout:
        layout = layout + (i,) * d
    return replace(model, groups=groups, layout=layout)


def _balanced(model: ModelSpec, pp: int) -> ModelSpec | None:
    """`model` with its layers reordered so that each of `pp` stages holds the same layers of each kind (None
    where a kind's count does not divide by pp, or where the stages already do)."""
    counts = [int(n) for _, n in model.groups]
    if any(n % pp for n in counts) or len(set(model.stage_counts(pp))) == 1:
        return None
    stage = tuple(g for g, n in enumerate(counts) for _ in range(n // pp))
    return replace(model, layout=stage * pp)


def _stage_costs(model, gpu, cal, prec, base: Plan, *, regime, pps, engine, point) -> list[tuple]:
    """R6's comparisons, one per PP of `pps` that has one, on the point's plan `base` with that PP: (cost %, pp, the
    shape's time, the neighbour's layers, its time, every neighbour priced as (layers, time))."""
    L = model.num_layers
    costs = []
    for pp in pps:
        if pp > L:
            continue
        plan = replace(base, pp=pp)
        even = None if L % pp else _balanced(model, pp)
        if L % pp == 0 and even is None:
            continue  # every stage holds the same layers: nothing to compare
        t = _time(model, gpu, cal, prec, plan, regime=regime, engine=engine, point=point)
        if L % pp:
            # the nearest count PP divides (the cheaper per layer of two as near), compared per layer: the shapes differ in depth
            near = [n for n in (L // pp * pp, (L // pp + 1) * pp) if n >= pp]
            priced = [(n, _time(_with_layers(model, n), gpu, cal, prec, plan, regime=regime, engine=engine, point=point)) for n in near]
            priced = [(n, x) for n, x in priced if math.isfinite(x)]
            if not (priced and math.isfinite(t)):
                continue
            n, tn = min(priced, key=lambda x: (abs(x[0] - L), (t / L) / (x[1] / x[0])))
            costs.append((100.0 * ((t / L) / (tn / n) - 1.0), pp, t, n, tn, priced))
        else:
            tn = _time(even, gpu, cal, prec, plan, regime=regime, engine=engine, point=point)
            if not math.isfinite(t + tn):
                continue
            costs.append((100.0 * (t / tn - 1.0), pp, t, L, tn, [(L, tn)]))
    return costs


def _pipeline_regularity(model, gpu, cal, prec, point, *, b, regime, gpus, engine, sh):
    """R6: a layer count PP does not divide, and kinds of layer stages do not share evenly, priced as `estimate`
    prices the deployment (the stage split, the slowest stage, the micro-batches) at the operating point with PP 2, 4
    and 8 (and the point's own) in place of its PP within `gpus`: the regime's objective (_time) per layer against the
    nearest layer count PP divides, or against the same layers balanced per stage. The spread of layer kinds' times is
    read at lint's fixed batch `b` on `sh`."""
    out = []
    L = model.num_layers
    base = point.plan
    pps = r6_pps(point, gpus)
    costs = _stage_costs(model, gpu, cal, prec, base, regime=regime, pps=pps, engine=engine, point=point) if pps and engine else []
    uneven = [p for p in pps if L % p and p <= L]
    if costs:
        pct, pp, t, n, tn, priced = max(costs, key=lambda c: c[0])
        sizes = "/".join(str(sum(st)) for st in model.stage_counts(pp))
        what = (f"{L} layers do not split evenly over PP {', '.join(map(str, uneven))}" if uneven
                else f"{L} layers split evenly over PP {', '.join(map(str, pps))} but their kinds do not")
        at = point.text(replace(base, pp=pp))
        other = "the same layers balanced per stage" if n == L else f"{n} layers"
        figures = {"pp": pp, "objective": _objective(regime), "time_ms": t * 1e3, "layers": L, "neighbour_layers": n,
                   "neighbour_time_ms": tn * 1e3, "per_layer": n != L, "time_ms_by_layers": {str(k): x * 1e3 for k, x in priced},
                   "stages": [sum(st) for st in model.stage_counts(pp)], "point": point.to_dict()}
        if round(pct, 1) > 0:
            alts = ", ".join(f"{k} layers {x * 1e3:.3f} ms ({_more_time(100 * (x / t - 1), str(L))})" for k, x in priced if k != L)
            out.append(Finding("R6", "warning" if pct >= 1.0 else "info", "layers",
                               f"{what}: at PP{pp} (stages of {sizes} layers; {at}) {_objective(regime)} {t * 1e3:.3f} ms against "
                               f"{tn * 1e3:.3f} ms with {other}: {pct:.1f}% more time per {'layer' if n != L else 'token'}, "
                               "the slowest stage setting every micro-batch's pace",
                               pct, (f"{alts} at PP{pp}" if n != L else "keep the layer pattern regular per stage"), figures,
                               shape=_with_layers(model, n) if n != L else None))
        elif uneven:
            # the whole figure first: per layer a shape of more layers can be cheaper (the head and host once) and still slower
            than = f"at {n} layers ({tn * 1e3:.3f} ms), which PP{pp} divides" if n != L else other
            whole = f"{_more_time(100.0 * (t / tn - 1.0), than)}; per layer {_more_time(pct, f'at {n} layers')}" if n != L else (
                f"per token {_more_time(pct, than)}")
            out.append(Finding("R6", "info", "layers", f"{what}; at PP{pp} (stages of {sizes} layers; {at}) {_objective(regime)} "
                               f"{t * 1e3:.3f} ms, {whole}", 0.0, "nothing to fix", figures))
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


def _gqa(model) -> list:
    """The model's GQA attention blocks, one per kind of layer."""
    return [layer.attn for layer, _ in model.groups if isinstance(layer.attn, GQA)]


def _kv_repair(kv: int, heads: int, tps) -> int:
    """R7's KV-head count for `kv` heads no TP of `tps` shards: of the counts that divide the `heads` query heads and that
    every TP divides or is divided by (TP takes whole KV heads, or copies of one), the nearest at or above `kv` (more
    KV heads keep the attention's quality; fewer is a GQA cut, which R9 prices where it pays), else the nearest below.
    5 KV heads, 40 query heads, TP 2-8: 8 (5 query heads each), not 2 or 4 (newc8 #12); 1 always qualifies."""
    ok = [n for n in range(1, heads + 1) if not heads % n and all(not n % tp or not tp % n for tp in tps)]
    above = [n for n in ok if n >= kv]
    return min(above) if above else max(ok)


def _with_kv_count(model: ModelSpec, kv: int, to: int) -> ModelSpec:
    """`model` with its GQA layers of `kv` KV heads given `to` (R7's fix)."""
    return replace(model, groups=tuple((Layer(replace(lay.attn, kv_heads=to), lay.ffn) if isinstance(lay.attn, GQA)
                                        and lay.attn.kv_heads == kv else lay, n) for lay, n in model.groups))


def _kv_splits(model, point, *, gpus) -> list[Finding]:
    """R7's heads and KV heads against TP 2, 4, 8 within `gpus`: an error where they do not split; where TP exceeds the
    KV heads, their copies priced at the reported point (`point`: nothing where it runs attention at another TP, which
    the message names)."""
    out = []
    at_tp = int(np.ravel(point.plan.tp)[0])  # the point's attention TP (under attention DP, each rank's)
    kvh = sorted({layer.attn.kv_heads for layer, _ in model.groups if isinstance(layer.attn, GQA)})
    heads = sorted({layer.attn.heads for layer, _ in model.groups if isinstance(layer.attn, (GQA, MLA))})
    tps = [p for p in (2, 4, 8) if p <= gpus]
    for tp in tps:
        for h in heads:
            if h % tp:
                out.append(Finding("R7", "error", f"heads@TP{tp}", f"{h} attention heads do not split over TP{tp}", 0.0,
                                   f"use a multiple of {tp} heads"))
    for k in kvh:  # one finding for every TP the KV heads do not split over, with one count every TP takes (_kv_repair)
        if bad := [tp for tp in tps if k % tp and tp % k]:
            h = max(a.heads for a in _gqa(model) if a.kv_heads == k)
            to = _kv_repair(k, h, tps)
            tps_said = ", ".join(f"TP{tp}" for tp in bad)
            out.append(Finding("R7", "error", "kv_heads@" + ",".join(f"TP{tp}" for tp in bad), f"{k} KV heads neither divide nor "
                               f"are divided by {tps_said}", 0.0, f"{k} -> {to} KV heads ({h // to} query heads each): TP 1-{max(tps)} "
                               "all shard it", {"kv_heads": k, "heads": h, "tps": bad, "proposed": to}, shape=_with_kv_count(model, k, to)))
    for tp in tps:
        for k in kvh:
            if k < tp and not tp % k:
                # the copies' cost is the KV cache a GPU holds beyond its share, paid only where attention runs at this TP
                copies, here = 100.0 * (tp / k - 1), tp == at_tp
                where = (f": at the reported point ({point.plan.label()}) too" if here else
                         f" (+{copies:.0f}% KV cache a GPU) if deployed at TP{tp}; the reported point, {point.plan.label()}, runs "
                         f"attention at TP{at_tp}: " + ("no copy there" if at_tp <= k else f"{at_tp // k}x there (kv_heads@TP{at_tp})"))
                out.append(Finding("R7", "info", f"kv_heads@TP{tp}", f"{k} KV heads under TP{tp}: each KV head is replicated {tp // k}x{where}",
                                   copies if here else 0.0, f"{tp} KV heads, or Helix (KV parallel along the sequence) instead of TP beyond {k}",
                                   {"tp": tp, "copies": tp // k, "copies_pct_at_tp": copies, "point": point.to_dict()}))
    return out


def _parallel_readiness(model, gpu, cal, prec, point, *, gpus, engine):
    """R7: heads and KV heads TP (of 2, 4, 8 within `gpus`) does not split, each KV-head copy priced at the reported
    point (`point`: a TP it does not run costs nothing there, and the message names both), and Helix against TP8 for
    long-context decode where `gpus` holds 8 (priced on those plans, which the message names: ranked after the findings
    priced at the point)."""
    out = _kv_splits(model, point, gpus=gpus)
    kvh = sorted({layer.attn.kv_heads for layer, _ in model.groups if isinstance(layer.attn, GQA)})
    # Helix for long-context decode: TP limited to the KV heads, the rest of the GPUs shard the sequence
    # MLA keeps one latent KV head that every TP rank holds whole (DeepSeek-V2 sec. 2.1; the Helix
    # paper's own case, arXiv:2507.07120): TP shards none of its cache, so Helix runs it at TP1 x KVP8
    mla = any(isinstance(layer.attn, MLA) for layer, _ in model.groups)
    if (mla or (kvh and min(kvh) < 8)) and gpu.scale_up_domain >= 8 and gpus >= 8 and engine is not None:
        out += _helix(model, gpu, cal, prec, engine, k=1 if mla else min(kvh), mla=mla)
    return out


# R7's Helix workload: a 128k context of which HELIX_OSL tokens are output (newcomer review 6, item 7: the decode-only
# figure, 261.7% on DeepSeek-R1, left out the other requests' 128k prefills that the decode steps share)
HELIX_OSL = 8192


def _served(model, gpu, cal, prec, engine, *, plan: Plan, isl: int, osl: int) -> tuple[float, int, float] | None:
    """`plan` serving ISL/OSL in a closed loop at the requests its KV cache holds, as estimate prices it (the others'
    prefills and eager launches in): (output tok/s/GPU, requests, TPOT s); None where it does not deploy or fit."""
    if int(validity(model, gpu, plan, 8)) >= 0:
        return None
    at = Serving(gpu=gpu, prec=prec, plan=plan, engine=engine)
    cap = int(np.ravel(evaluate(model, at, cal=cal, concurrency=1, isl=isl, osl=osl)["max_concurrency"])[0])
    if cap < 1:
        return None
    r = evaluate(model, at, cal=cal, concurrency=cap, isl=isl, osl=osl, arrival="closed_loop")
    if not bool(np.all(r["fits"])):
        return None
    return float(np.ravel(r["output_tok_s_per_gpu"])[0]), cap, float(np.ravel(r["tpot_s"])[0])


def _helix(model, gpu, cal, prec, engine, *, k: int, mla: bool) -> list[Finding]:
    """R7's Helix (TP`k` x KVP 8/k) on 8 GPUs against the better of TP8 and attention DP 8, each serving a 128k
    context (HELIX_OSL of it output) in a closed loop at the requests its cache holds (_served): the cost is Helix's
    output tok/s/GPU gain over that best plan, priced on plans other than the point's (the message names them)."""
    moe = next((layer.ffn for layer, _ in model.groups if isinstance(layer.ffn, MoE)), None)
    ep = 8 if moe and moe.experts % 8 == 0 else 1  # experts whole on one GPU where they split, as lint's plan
    moe_tp = 8 // ep if moe else 1
    ctx = 131072 if not model.max_context else min(131072, model.max_context - 256)
    # a context not above twice HELIX_OSL (falcon-7b's 2,048) serves a sixteenth of it as output, 128k/8k's ratio
    osl = HELIX_OSL if ctx > 2 * HELIX_OSL else max(1, ctx // 16)
    isl = ctx - osl
    helix = Plan(tp=k, kvp=8 // k, ep=ep, moe_tp=moe_tp)
    rivals = {"TP8": Plan(tp=8, ep=ep, moe_tp=moe_tp), "attention DP8": Plan(tp=1, adp=8, ep=ep, moe_tp=moe_tp)}
    h = _served(model, gpu, cal, prec, engine, plan=helix, isl=isl, osl=osl)
    priced = {n: x for n, p in rivals.items() if (x := _served(model, gpu, cal, prec, engine, plan=p, isl=isl, osl=osl))}
    if h is None or not priced:
        return []
    best = max(priced, key=lambda n: priced[n][0])
    (xb, _, _), (xh, ch, th) = priced[best], h
    what = "MLA's latent cache (whole on every TP rank)" if mla else f"{k} KV heads"
    others = "; ".join(f"{n} {x:.1f} tok/s/GPU at {c} requests" for n, (x, c, _) in priced.items())
    figures = {"isl": isl, "osl": osl, "best": best, "helix_requests": ch, "helix_tok_s_per_gpu": xh, "helix_tpot_ms": th * 1e3,
               **{f"{n.replace(' ', '_').lower()}_tok_s_per_gpu": x for n, (x, _, _) in priced.items()}}
    gain = 100.0 * (xh / xb - 1.0)
    msg = (f"at ISL {isl:,} / OSL {osl:,} on 8 GPUs with {what}, served in a closed loop at the requests each cache holds "
           f"(prefills and decode steps): Helix (TP{k} x KVP{8 // k}) {xh:.1f} tok/s/GPU at {ch} requests, TPOT {th * 1e3:.1f} ms; "
           f"{others}")
    flags = {"TP8": "--tp 8", "attention DP8": "--tp 1 --attention-dp 8"}
    if round(gain, 1) > 0:
        return [Finding("R7", "info", "long-context", msg, gain, f"deploy long-context serving with --tp {k} --kvp {8 // k} "
                        f"(+{gain:.1f}% over {best})", figures, at_point=False)]
    return [Finding("R7", "info", "long-context", msg + f": Helix {gain:+.1f}% against {best}, the better of the two", 0.0,
                    f"deploy long-context serving as {best} ({flags[best]} --ep {ep})" if ep > 1 else
                    f"deploy long-context serving as {best} ({flags[best]})", figures, at_point=False)]


# R9's KV-head counts: 8 and 4 split over TP 8 and 4 without a copy beyond 4 (R7), the counts GQA models publish.
# Quality: GQA with 8 groups uptrained from MHA (5% of pre-training compute) scored 47.1 against MHA's 47.2 averaged over
# its tasks on T5-XXL, MQA 46.6 (Ainslie et al. 2023, arXiv:2305.13245, Table 1): a loss of that order, not priced here
R9_KV = (8, 4)


def _with_kv(model: ModelSpec, kv: int) -> ModelSpec:
    """`model` with at most `kv` KV heads in its GQA layers (R9's variants)."""
    return replace(model, groups=tuple((Layer(replace(lay.attn, kv_heads=kv), lay.ffn) if isinstance(lay.attn, GQA)
                                        and lay.attn.kv_heads > kv else lay, n) for lay, n in model.groups))


def _kv_heads(model, gpu, cal, prec, *, regime, engine, place) -> list[Finding]:
    """R9: a shape of more than 8 KV heads re-priced with 8 and 4 (where its query heads divide by them), each shape at
    its own best deployment (`place`: operating_points), in the regime's objective (_time): the KV cache a token holds
    sets the requests a GPU serves (newcomer review 6, item 6: 40 -> 8 KV heads was 3.5x tok/s/GPU by compare, and lint
    said nothing). The cost is the faster variant's gain; GQA's quality cost is cited (R9_KV), not priced."""
    gqa = [lay.attn for lay, _ in model.groups if isinstance(lay.attn, GQA)]
    kv = max((a.kv_heads for a in gqa), default=0)
    if kv <= max(R9_KV):  # GQA's 8 or fewer already: the published counts (R9_KV), nothing to price
        return []
    counts = [k for k in R9_KV if k < kv and all(a.heads % k == 0 for a in gqa if a.kv_heads > k)]
    if not counts:
        return []
    shapes = [model] + [_with_kv(model, k) for k in counts]
    pts = place(shapes)
    t = [_time(m, gpu, cal, prec, p.plan, regime=regime, engine=engine, point=p) if p.holds else math.inf for m, p in zip(shapes, pts, strict=True)]
    if not all(math.isfinite(x) for x in t):
        return []
    i = min(range(1, len(t)), key=lambda j: t[j])
    gain = 100.0 * (t[0] / t[i] - 1.0)
    k = counts[i - 1]
    priced = "; ".join(f"{c} KV heads {x * 1e3:.3f} ms ({p.text(p.plan)})" for c, x, p in zip(counts, t[1:], pts[1:], strict=True))
    figures = {"kv_heads": kv, "objective": _objective(regime), "time_ms": t[0] * 1e3, "point": pts[0].to_dict(),
               **{f"time_ms_kv{c}": x * 1e3 for c, x in zip(counts, t[1:], strict=True)}}
    msg = (f"{kv} KV heads: {_objective(regime)} {t[0] * 1e3:.3f} ms ({pts[0].text(pts[0].plan)}) against {priced}, each at "
           f"its own best deployment; quality: GQA-8 47.1, MQA 46.6 vs MHA 47.2 (T5-XXL uptrained, Ainslie et al. 2023)")
    if round(gain, 1) <= 0:
        return [Finding("R9", "info", "kv_heads", msg + ": fewer KV heads do not pay here", 0.0, "nothing to fix", figures)]
    return [Finding("R9", "warning" if gain >= 10.0 else "info", "kv_heads", msg, gain,
                    f"{k} KV heads ({_faster(gain)})", figures, shape=_with_kv(model, k))]


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
                               "properties": {"cost_pct": f.cost_pct, **f.figures}} for f in findings]}],
    }
