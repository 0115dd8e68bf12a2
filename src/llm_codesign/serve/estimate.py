"""One deployment end to end: metrics, memory, bottlenecks, breakdown, speculation break-even, as
a typed `Estimate` in SI units whose `to_dict()` is what `estimate --json` prints."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import partial

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ffns import moe_step_activation
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.cost.roofline import op_side
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import (
    IN_STEP,
    binding_resource,
    budget_charge,
    deployment_ops,
    eager_tpot_moves,
    eager_ttft_moves,
    engine_budget,
    full_context_seqs,
    op_step_time,
    pdl_per_launch,
    pipeline_note,
    resource_times,
    seqs_text,
    stage_ranks,
    whole_seqs,
)
from llm_codesign.serve.eager import EagerDecode, captured_text, eager_note
from llm_codesign.serve.energy import energy
from llm_codesign.serve.invariants import check_estimate
from llm_codesign.serve.metrics import BATCH_GRID, FRACTION_OPTION, GB, evaluate, interval_columns, no_decode, without_decode
from llm_codesign.spec.engines import check_kv_format
from llm_codesign.spec.engines.base import GIB
from llm_codesign.spec.engines.head_dims import head_dim_note
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import (
    REASONS,
    Deployment,
    Plan,
    Workload,
    check_step_budget,
    check_whole_prompt,
    divisors,
    precision_notes,
    reason_text,
    validity,
)
from llm_codesign.spec.precision import executable, gemm_math


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU at the estimate's load: weights, the running sequences' KV cache (less the
    recurrent state) and recurrent state, activations, what is left free, and the GPU's capacity; the rest of it
    (`reserve`) is what the engine's memory fraction keeps from its KV pool (Engine.kv_budget, cost.memory.fit)."""
    weights: float
    kv: float
    state: float
    activations: float
    free: float
    capacity: float

    def to_dict(self) -> dict:
        return {"weights_gb": self.weights / GB, "kv_gb": self.kv / GB, "state_gb": self.state / GB, "activations_gb": self.activations / GB,
                "free_gb": self.free / GB, "capacity_gb": self.capacity / GB, "reserve_gb": self.reserve / GB}

    @property
    def reserve(self) -> float:
        return self.capacity - self.weights - self.kv - self.state - self.activations - self.free


@dataclass(frozen=True)
class OperatorTime:
    """One row of a breakdown. An operator of the decode step on one GPU: seconds per step (its layers of the stage, less
    what PDL saves), FLOPs and bytes. Or (kind "fitted", "host", "draft", "per token", "first token": FLOPs and bytes 0) a part of
    the step beyond its kernels, or of the metric beyond the step, said in `what` (step_rows). `phase` "decode": rows whose
    `tpot_s`, the row's share of TPOT (a step's part x pp / tokens accepted x the decode slots' share; a part per token x
    that share), sum to TPOT; "first token": rows whose `time_s` sum to TTFT."""
    name: str
    kind: str
    time_s: float
    flops: float
    bytes: float
    phase: str = "decode"
    what: str = ""
    tpot_s: float | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "time_ms": self.time_s * 1e3, "flops": self.flops, "bytes": self.bytes,
                "phase": self.phase, **({"tpot_ms": self.tpot_s * 1e3} if self.tpot_s is not None else {}),
                **({"what": self.what} if self.what else {})}


@dataclass(frozen=True)
class SpecPayoff:
    """Speculation's TPOT speed-up over the same deployment without it: at the estimate's load, at one
    request, and the first load at which it stops paying (None: never within what fits)."""
    method: str
    draft_len: int
    speedup_at_concurrency: float
    speedup_at_1: float
    stops_paying_at_concurrency: int | None
    # every run of loads (first, last) at which it does not pay, up to the largest batch that runs at once: a decode CUDA
    # graph captured without speculation and missed with it makes one load lose amid paying ones (TensorRT-LLM's unpadded
    # 128 on 70B H200 TP8: (128, 128), (421, 488), (537, 1259))
    losing_loads: tuple = ()
    acceptance_source: str = ""  # the published acceptance used where none was given (spec.plan.published_acceptance)


@dataclass(frozen=True)
class Estimate:
    """What one deployment delivers on a workload, in SI units: the metrics at `concurrency` requests
    in flight (the workload's, or the offline maximum throughput's: `mode`), memory per GPU, the
    binding resource of each phase, speculation's payoff and, where asked, the decode step's
    operators. `intervals` and `accuracy` are filled by the public API (llm_codesign.estimate); `cost`
    where a GPU-hour price is given. `intervals` holds, per metric of `to_dict()` (ms for times), its 80% and
    95% intervals and the runs they come from (measure.intervals.band): the answer's one statement of its error. Its
    `centre` is not the prediction but the prediction times those runs' median measured / predicted (the model's signed
    bias on them, taken out), the point the bounds sit about: a prediction may lie off-centre, even outside its 80%."""
    model: str
    deployment: Deployment
    workload: Workload
    mode: str  # "concurrency" or "offline-max-throughput"
    concurrency: int
    ttft_s: float
    tpot_s: float
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    io_tok_s_per_gpu: float
    tokens_per_joule_at_tdp: float
    max_batch: int  # the most requests that run at once
    memory: Memory
    energy: dict  # serve.energy.Energy.at: tokens per joule (GPU alone, with the node's share) and the power model's figures
    decode_bound: str  # compute, memory, communication or host; starred where the kernel's rates bind past the ridge (bound_why)
    prefill_bound: str
    accepted_per_step: float
    precision_notes: tuple[str, ...]  # a format this GPU cannot execute, priced as the engines map it
    over_capacity: str | None = None  # what the engine does with the requests its KV cache cannot hold
    in_step: str | None = None  # requests in step past the full-context count: the engine's preemption, said and where priced (_in_step)
    spec: SpecPayoff | None = None
    breakdown: tuple[OperatorTime, ...] | None = None
    accuracy: dict | None = None
    cost: dict | None = None
    intervals: dict | None = None
    bound_why: dict | None = None  # {"decode"/"prefill": why its bound is starred} (_starred), where one is
    moe_activation: str | None = None  # the format the MoE runs on at this load where AITER's switch takes it off A:'s
    eager_decode: EagerDecode | None = None  # where a decode step runs outside the CUDA graphs captured
    request_cost: str | None = None  # where a fitted per-request cost is a material share of TTFT (request_cost_note)
    rank_skew: str | None = None  # where the fitted rank skew is a material share of TTFT (rank_skew_note)
    adp_hold: str | None = None  # where a fitted attention-DP hold is priced in TTFT: its ms and what it was fitted on (adp_hold_note)
    knee: dict | None = None  # offline: the batch chosen and the maximum it leaves (offline_knee)
    kv_seqs: int | None = None  # the requests the KV cache holds whole (Metrics.kv_seqs); None: max_batch's
    queue: dict | None = None  # where requests wait for a slot: TTFT's share of it (slot_queue), its cohorts and their cycle
    # where no fast attention kernel of the engine takes the model's head size (spec.engines.head_dims, lint R4's rule)
    attention_note: str | None = None
    batch_limit: dict | None = None  # what sets max_batch: the step budget, a launch cap, the KV cache or the engine's limit
    offline_note: str | None = None  # offline: how its tok/s/GPU is counted, and the served load's at its batch (offline_note)

    @property
    def fits(self) -> bool:
        """The memory holds the load: the KV cache every request in flight, whole. Not that all of them run at once: a
        launch cap (--max-batch, an imported --max-num-seqs) or the step budget queues the rest (`queued`), priced, not
        refused (newc7 #7: `fits: false` read as "does not run")."""
        return self.concurrency <= (self.max_batch if self.kv_seqs is None else self.kv_seqs)

    @property
    def queued(self) -> int:
        """The requests beyond the most that run at once (max_batch): they wait for whole requests to finish, or, on an
        engine admitting before the whole KV cache fits, share the decode slots (over_capacity says which)."""
        return max(self.concurrency - self.max_batch, 0)

    def to_dict(self) -> dict:
        """What `llm-codesign estimate --json` prints (times in ms, memory in GB)."""
        dep, w = self.deployment, self.workload
        out = {
            "model": self.model, "gpu": dep.gpu.id, "num_gpus": dep.num_gpus, "plan": dep.plan.label(),
            "precision": dep.precision.label(self.moe_activation), "backend": dep.backend,
            # the releases whose defaults the answer prices (Engine.release), not necessarily the one an export writes for
            "engine_release": dep.engine.release, "mode": self.mode,
            "isl": w.isl, "osl": w.osl, "concurrency": self.concurrency, "max_num_tokens": dep.step_tokens,
            # a rank's share where the engine splits the server's figure over its attention-DP ranks (Deployment.rank_step_tokens)
            "rank_step_tokens": dep.rank_step_tokens,
            "ttft_ms": self.ttft_s * 1e3, "tpot_ms": self.tpot_s * 1e3, "tok_s_per_user": self.tok_s_per_user,
            "output_tok_s_per_gpu": self.output_tok_s_per_gpu, "io_tok_s_per_gpu": self.io_tok_s_per_gpu,
            **_per_joule(self.energy), "tokens_per_joule_at_tdp": self.tokens_per_joule_at_tdp, "max_batch": self.max_batch,
            "memory": self.memory.to_dict(), "power": _power(self.energy),
            "decode_bound": self.decode_bound, "prefill_bound": self.prefill_bound, "accepted_per_step": self.accepted_per_step,
            # fits: the memory holds the load (fits_memory, the same); queued: those past what runs at once (Estimate.queued)
            "fits": self.fits, "fits_memory": self.fits, "queued": self.queued, "precision_notes": list(self.precision_notes),
            # the formats the model prices (spec.precision.executable), as the CLI's title and the web page's say them:
            # "W:nvfp4 A:nvfp4" on an H100 read as FP4 math beside the note that it runs W4A16
            "precision_as_run": as_run(dep, self.moe_activation),
            # the arrival the TTFT turns on, in words (spec.harness.ARRIVAL_TEXT); None offline (every request queued)
            "arrival_text": _arrival_text(w, dep),
        }
        if dep.plan_note is not None:  # GPUs read off tp x attention_dp, none given (spec.plan.attention_dp_note)
            out["plan_note"] = dep.plan_note
        if self.batch_limit is not None:  # what sets max_batch, and its row's words (CLI and page alike)
            out["max_batch_by"], out["max_batch_text"] = self.batch_limit["by"], self.batch_limit["text"]
        if self.over_capacity is not None:
            out["over_capacity"] = self.over_capacity
        out |= {k: v for k, v in (("bound_why", self.bound_why), ("in_step", self.in_step)) if v}  # where starred / in step past the cache
        if self.queue is not None:  # absent where every request runs at once
            out["queue"] = self.queue
        if self.eager_decode is not None:  # absent where every decode step replays a CUDA graph
            out["eager_decode"] = self.eager_decode.to_dict()
        if self.knee is not None:  # offline: the knee chosen, and the most tok/s/GPU's batch it leaves (offline_knee)
            out["offline_knee"] = self.knee
        # each absent where it says nothing: no fitted per-request cost or rank skew a material share of TTFT, no
        # attention-DP hold priced, the engine's fast attention kernels taking the head size, prompts chunked (or refused
        # past the budget), no PP or a prompt of one chunk
        for key, note in (("request_cost_note", self.request_cost), ("rank_skew_note", self.rank_skew),
                          ("adp_hold_note", self.adp_hold), ("attention_note", self.attention_note), ("offline_note", self.offline_note),
                          ("chunking_note", chunking_note(dep, w.isl)), ("pipeline_note", pipeline_note(dep, w.isl, prefix_hit=w.prefix_hit))):
            if note is not None:
                out[key] = note
        if self.spec is not None:
            out["spec"] = asdict(self.spec)
        if self.breakdown is not None:
            out["breakdown"] = [o.to_dict() for o in self.breakdown]
        out["accuracy"] = self.accuracy
        if self.intervals is not None:
            out["intervals"] = self.intervals
        if w.prefix_hit:
            out["prefix_hit"] = w.prefix_hit
        # always: TTFT depends on it (the wait's phase, the intervals' basis), the default included
        out["arrival"] = w.arrival
        if self.cost is not None:
            out["cost"] = self.cost
        # one output token: no decode step, so no TPOT nor tok/s/user (null) and nothing of theirs (serve.metrics)
        return without_decode(out) if no_decode(w.osl) else out

    def to_pandas(self):
        """One row: the scalar figures of `to_dict()`, the memory's (`memory_*`) and the intervals' (`interval_columns`)
        (pandas is an optional dependency)."""
        import pandas as pd

        d = self.to_dict()
        return pd.DataFrame([{**{k: v for k, v in d.items() if not isinstance(v, (dict, list))},
                              **{f"memory_{k}": v for k, v in d["memory"].items()}, **interval_columns(d.get("intervals"))}])


def as_run(dep, moe_activation=None) -> str:
    """The precision's label where the GPU runs it as given, else the executable one's with " as run"."""
    from llm_codesign.spec.precision import executable

    given, ran = dep.precision.label(moe_activation), executable(dep.precision, dep.gpu)[0].label(moe_activation)
    return given if ran == given else f"{ran} as run"


def chunking_note(dep: Deployment, isl: int) -> str | None:
    """What an engine that runs a prompt over its step budget whole, alone (Engine.whole_prompt_refusal None: SGLang's
    PrefillAdder admits a batch's first request whole, serve.aggregated.prompt_budget) says where its chunked prefill is off:
    the budget, and where the prompt passes it, that it is one. The one rule of estimate's and import's line (crev10 #10:
    estimate priced a 20,000-token prompt whole past the 16,384 it printed and said nothing; import said it)."""
    if dep.chunked_prefill is not False or dep.engine.whole_prompt_refusal is not None:
        return None
    budget = int(dep.step_tokens)
    past = f"; each {int(isl):,}-token prompt is one: its prefill runs as one {int(isl):,}-token step" if int(isl) > budget else ""
    return ("chunked prefill off (--chunked-prefill-size -1, or any value <= 0): prefill batches of up to "
            f"{budget:,} tokens (--max-prefill-tokens), a longer prompt run whole, alone{past}")


def _arrival_text(w, dep: Deployment) -> str | None:
    """ARRIVAL_TEXT's words for the arrival, and under waves with prefix hits what a hit does to its cohorts: an engine
    counting new tokens only against its step budget (vLLM; not TensorRT-LLM, Engine.budget_counts_cached) that mixes
    prompts into decode steps fits more of the shorter prompts in a step, so its cohorts grow, its step stays full and its
    front end serves more at once: TTFT need not fall with the hit (docs/modelling-notes.md#fixW13-prefix-waves)."""
    from llm_codesign.spec.harness import ARRIVAL_TEXT

    if w.concurrency is None:
        return None
    grows = w.arrival == "waves" and w.prefix_hit > 0 and dep.engine.mixes_prefill and not dep.engine.budget_counts_cached
    return ARRIVAL_TEXT[w.arrival] + (f"; with prefix hits {dep.backend} counts only new tokens against its step budget, so "
                                      "more prompts share a step and the cohorts grow: TTFT need not fall as hits rise"
                                      if grows else "")


def _per_joule(e: dict) -> dict:
    """Output tokens per joule: of the GPU alone at the power it draws, and with the node's share
    (None where no system rating is bundled for the GPU)."""
    return {"tokens_per_joule": e["tokens_per_joule"], "tokens_per_joule_node": e["tokens_per_joule_node"]}


def _power(e: dict) -> dict:
    """The power model's figures behind them (watts per GPU, activities, sources)."""
    return {k: v for k, v in e.items() if not k.startswith("tokens_per_joule")}


def replicas_record(r: dict, instance_gpus: int, replicas: int) -> dict:
    """estimate --replicas and /api/estimate's `replicas`: `replicas` copies of the one instance priced, each serving its own requests behind a load
    balancer (export's --replicas, import's "x2 replicas"): per-GPU and per-user figures are the instance's; the GPUs, the
    requests in flight and the tok/s add up over the copies (newc5 #7)."""
    return {"count": replicas, "instance_gpus": instance_gpus, "gpus": instance_gpus * replicas,
            "concurrency": r["concurrency"] * replicas, "output_tok_s": r["output_tok_s_per_gpu"] * instance_gpus * replicas}


def check(model: ModelSpec, dep: Deployment) -> None:
    """Refuses in one line a deployment `model` cannot be priced on: a KV-cache format its engine does not hold for the
    model's attention (check_kv_format; vLLM's NVFP4 cache, not for MLA), a plan that does not fit its GPUs, a step
    budget the engine refuses. The one check estimate, mix and (each pool) disagg run."""
    check_kv_format(dep.engine, dep.gpu, dep.precision.kv.name, model)
    code = int(validity(model, dep.gpu, dep.plan, dep.num_gpus).reshape(-1)[0])
    if code >= 0:
        why, own = reason_text(model, dep.gpu, code), int(np.asarray(dep.plan.gpus).reshape(-1)[0])
        # `--gpus 8 --tp 4` (num_gpus=8, tp=4) read as two TP4 copies: one instance is priced; worded for the CLI, the API
        # and the page alike (each names the GPU count and the replicas its own way: --replicas, `replicas`)
        moe_own = int(np.asarray(dep.plan.moe_gpus).reshape(-1)[0]) if model.is_moe else own
        if REASONS[code] == "gpus_mismatch" and moe_own != own:
            why += _sides_advice(model, dep)
        elif REASONS[code] == "gpus_mismatch" and dep.num_gpus % own == 0 and dep.num_gpus > own:
            k = dep.num_gpus // own
            why += (f"; these sizes make an instance of {own} GPU{'s' if own != 1 else ''}: ask for {own}, and {k} replicas of it "
                    "(estimate and export take replicas; pareto searches copies)")
        elif REASONS[code] == "gpus_mismatch":  # more GPUs than given, or a count they do not divide: a fix too (newc8 #16)
            why += _count_advice(model, dep, own)
        elif REASONS[code] == "scale_up":  # TP16 over two nodes: the plans priced on those GPUs (newc9 #7)
            why += _domain_advice(model, dep, own)
        raise InputError("deployment", dep.plan.label() + f" on {dep.num_gpus} GPU{'s' if dep.num_gpus != 1 else ''}", why)
    check_step_budget(dep)  # a deployment read from a file, not built by spec.plan.deployment


def _sides_advice(model: ModelSpec, dep: Deployment) -> str:
    """Where a MoE plan's two sides disagree (attention tp*attention_dp*kvp*pp GPUs, experts ep*moe_tp*pp: `--tp 2 --ep 4`),
    both named and the two nearest plans that agree, where valid: the experts spread over the attention's GPUs (ep
    changed), or the attention replicated over the experts' by attention DP (vLLM's --data-parallel-size with
    --enable-expert-parallel, SGLang's --enable-dp-attention): newc7 #12."""
    tp, pp, ep, moe_tp, adp, kvp = dep.plan.at(0).sizes
    attn, moe = tp * adp * kvp * pp, ep * moe_tp * pp
    out = f"; the attention side makes {attn} GPUs (tp*attention_dp*kvp*pp) and the MoE side {moe} (ep*moe_tp*pp)"
    cands = []
    if attn % (moe_tp * pp) == 0:  # the experts over the attention's GPUs
        cands.append((Plan(tp, pp, attn // (moe_tp * pp), moe_tp, adp, kvp), attn, f"ep {attn // (moe_tp * pp)}"))
    if moe % (tp * kvp * pp) == 0:  # the attention replicated over the experts' GPUs
        cands.append((Plan(tp, pp, ep, moe_tp, moe // (tp * kvp * pp), kvp), moe, f"attention_dp {moe // (tp * kvp * pp)}"))
    # only plans this engine launches too (Engine.runs_plans: TensorRT-LLM's attention DP is TP 1)
    said = [f"{p.label()} on {n} GPU{'s' if n != 1 else ''} ({what})" for p, n, what in cands
            if int(validity(model, dep.gpu, p, n).reshape(-1)[0]) < 0 and bool(np.all(dep.engine.runs_plans(p, moe=model.is_moe)))]
    return out + (f"; plans that agree: {' or '.join(said)}" if said else "")


def _count_advice(model: ModelSpec, dep: Deployment, own: int) -> str:
    """Where a plan's sizes make `own` GPUs (both sides agreeing) that the GPU count given is not a whole number of: the
    count they make, and the plans on the count given that keep the most of what was asked, where valid and this engine
    launches them: SGLang's reading where attention DP splits a TP > 1 group (spec.plan.attention_dp_note), TP taking what
    the other sizes leave, TP alone. `--gpus 2 --tp 2 --pp 2`: "--gpus 4 (TP2 PP2), or on 2 GPUs: TP1 PP2 or TP2" (newc8 #16)."""
    n = dep.num_gpus
    tp, pp, ep, moe_tp, adp, kvp = dep.plan.at(0).sizes

    def runs(plan, gpus) -> bool:
        return int(validity(model, dep.gpu, plan, gpus).reshape(-1)[0]) < 0 and bool(np.all(dep.engine.runs_plans(plan, moe=model.is_moe)))

    shapes = [(tp // adp, pp, adp, kvp)] if adp > 1 and tp % adp == 0 else []  # SGLang's --tp T --dp D: TP T/D per rank
    shapes += [(n // (pp * adp * kvp), pp, adp, kvp), (n, 1, 1, 1)]
    said = []
    for t, p, a, k in shapes:
        if t < 1 or t * p * a * k != n:
            continue
        e = ep if n % (ep * p) == 0 else 1  # the experts as asked where the count holds them, else MoE TP alone
        plan = Plan(t, p, e, n // (e * p), a, k) if model.is_moe else Plan(t, p, 1, 1, a, k)
        if runs(plan, n) and plan.label() not in said:
            said.append(plan.label())
    on_n = f"on {n} GPU{'s' if n != 1 else ''}: {' or '.join(said)}" if said else ""
    if runs(dep.plan, own):  # the count they make, where the plan runs on it (TP3 of 64 heads does not)
        return f"; these sizes make {own} GPUs: --gpus {own} ({dep.plan.label()})" + (f", or {on_n}" if on_n else "")
    return f"; these sizes make {own} GPUs; plans {on_n}" if on_n else ""


def _domain_advice(model: ModelSpec, dep: Deployment, own: int) -> str:
    """Where a tensor-parallel (or Helix) group outgrows the scale-up domain: the plans on the same `own` GPUs that keep it
    inside, widest TP first, with the stages (PP) or, for a MoE model, attention-DP ranks making up the rest, where valid
    and this engine launches them: TP16 of DeepSeek-R1 on 16 H100s, "plans on 16 GPUs: TP8 PP2 or TP8 ..." (newc9 #7;
    the cross-node all-reduce itself is not priced). The experts keep the EP asked as far as a stage's GPUs divide it
    (gcd), else MoE TP; under attention DP, EP over the stage first (SGLang's DeepSeek recipes)."""
    from math import gcd

    tp, pp, ep, moe_tp, adp, kvp = dep.plan.at(0).sizes

    def runs(plan) -> bool:
        return int(validity(model, dep.gpu, plan, own).reshape(-1)[0]) < 0 and bool(np.all(dep.engine.runs_plans(plan, moe=model.is_moe)))

    said = []
    for t in sorted((t for t in divisors(dep.gpu.scale_up_domain) if t * kvp <= dep.gpu.scale_up_domain and t < tp), reverse=True):
        for p, a in ((own // (t * adp * kvp), adp), (pp, own // (t * pp * kvp))):
            if p < 1 or a < 1 or t * p * a * kvp != own or (a > 1 and not model.is_moe):
                continue
            stage = own // p
            sides = [(e, stage // e) for e in ([stage] if a > 1 else []) + [gcd(ep, stage)]] if model.is_moe else [(1, 1)]
            plan = next((q for e, m in sides if runs(q := Plan(t, p, e, m, a, kvp))), None)
            if plan is not None and plan.label() not in said:
                said.append(plan.label())
        if said:  # the widest TP that gives any
            break
    return f"; plans priced on {own} GPUs: {' or '.join(said)}" if said else ""


# the largest instance the out-of-memory advice looks within (GPUs): eight 8-GPU nodes; past it the advice is a
# narrower precision rather than more nodes
HINT_MAX_GPUS = 64


def _hint_plans(model: ModelSpec, dep: Deployment):
    """The plans the advice tries, fewest GPUs first (then widest TP): TP within the scale-up domain times PP, no attention
    DP or Helix; a MoE model's experts under EP across the TP group where the deployment ran EP, else MoE TP."""
    own = int(np.asarray(dep.plan.gpus).reshape(-1)[0])
    ep_asked = int(np.asarray(dep.plan.ep).reshape(-1)[0]) > 1
    sizes = [(tp * pp, -tp, pp) for pp in divisors(HINT_MAX_GPUS) for tp in divisors(min(dep.gpu.scale_up_domain, HINT_MAX_GPUS))
             if own <= tp * pp <= HINT_MAX_GPUS]
    for n, neg_tp, pp in sorted(sizes):
        tp = -neg_tp
        ep, moe_tp = ((tp, 1) if ep_asked else (1, tp)) if model.is_moe else (1, 1)
        plan = Plan(tp, pp, ep, moe_tp, 1, 1)
        if plan != dep.plan and int(validity(model, dep.gpu, plan, n).reshape(-1)[0]) < 0:
            yield replace(dep, num_gpus=n, plan=plan)


def _least_fit(model: ModelSpec, dep: Deployment, workload: Workload, calibration: Calibration) -> str:
    """The advice of an unfit deployment: the fewest GPUs and a valid plan on them that hold one sequence of `workload`,
    priced to check (evaluated at concurrency 1 on the same GPU, precision and engine: newc5 #22, where "raise EP/PP" on a
    fixed 8 GPUs changed nothing per GPU); where none of up to HINT_MAX_GPUS does, a narrower precision."""
    one, tried = replace(workload, concurrency=1), set()
    for cand in _hint_plans(model, dep):
        if cand.num_gpus in tried:  # the widest valid TP of a count tried: the others split the same weights over as many GPUs
            continue
        tried.add(cand.num_gpus)
        if int(np.asarray(evaluate(model, cand, one, calibration=calibration, concurrency=1).max_concurrency).reshape(-1)[0]) >= 1:
            return f"at least {cand.num_gpus} GPUs hold it, e.g. {cand.plan.label()} (priced: one sequence fits), or lower the precision"
    return f"no valid plan of up to {HINT_MAX_GPUS} {dep.gpu.name} holds one sequence: lower the precision"


def _refuse_unfit(dep: Deployment, m, model: ModelSpec, workload: Workload, calibration: Calibration) -> None:
    """One line on why not even one sequence fits, with what it needs and what the engine leaves: where the deployment
    states its KV fraction (Deployment.kv_fraction) and the whole GPU would hold the sequence, that launch option; else
    the fewest GPUs and a plan that hold one (_least_fit); where the engine holds the experts wider under EP than without
    (_ep_upcast), that too."""
    mem = dep.gpu.memory_bytes
    budget, own, _ = engine_budget(dep.gpu, engine=dep.engine, max_num_tokens=dep.max_num_tokens, plan=dep.plan, spec=dep.spec,
                                  chunked_prefill=dep.chunked_prefill)[1]
    stated = float(np.asarray(own if dep.kv_fraction is None else dep.kv_fraction).reshape(-1)[0])
    # TensorRT-LLM's fraction is of what weights and activations leave; the others cap the whole
    frac = 1.0 if budget == "free" else stated
    # SGLang's fraction holds the weights and the KV cache, its activations reserved outside it (memory.fit "static"):
    # their need is weights and one sequence, against the fraction
    act = 0.0 if budget == "static" else float(m.activation_bytes.reshape(-1)[0])
    need = float(m.weights_bytes.reshape(-1)[0] + m.kv_bytes_per_seq.reshape(-1)[0]) + act
    option = FRACTION_OPTION.get(dep.engine.name, "kv_fraction")
    advice = (f"raise {option} (the deployment states {stated:g})" if dep.kv_fraction is not None and need <= mem
              else _least_fit(model, dep, workload, calibration) + _ep_upcast(model, dep))
    if dep.kv_fraction is None and budget == "static" and need + float(m.activation_bytes.reshape(-1)[0]) <= mem:
        # SGLang's own fraction (spec.engines.sglang static_fraction) reserves more than this plan's activations need: the
        # launch can raise it (DeepSeek-R1 FP8 on 4 B200s ran at 8k/1k where the default 0.855 holds no sequence)
        advice = f"raise {option} to {np.ceil(need / mem * 1000) / 1000:.3f} or more (SGLang's own for this plan is {stated:g}), or " + advice
    # in GiB, the unit nvidia-smi reports the capacity in, the data sheet's GB beside it (newc5 #10: "reports 86 GB" of an
    # H100 sold as 80 GB read as a figure found nowhere)
    usable = f"; {frac * mem / GIB:.1f} GiB usable by {dep.backend}" if frac < 1 else ""
    if frac <= 0:  # SGLang's own fraction reserves 1.5 MiB per chunk token (static_fraction): a huge step budget leaves none
        usable, advice = f"; {dep.backend}'s own {option} for a step of {dep.step_tokens:g} tokens is {stated:g}", "a smaller step budget"
    raise InputError("deployment", dep.plan.label() + f" on {dep.num_gpus}x{dep.gpu.id}",
                     f"needs {need / GIB:.1f} GiB per GPU for one sequence, {dep.gpu.name} reports {mem / GIB:.1f} GiB "
                     f"({dep.gpu.hbm_bytes / GB:.0f} GB on the data sheet{usable}): {advice}")


# the breakdown's wait row. The phase is the harness's (spec.harness.ARRIVAL_PHASE_STEPS), there at one request too: an
# overlap loop launches the next step before it processes the last token's, so the next request lands while that step
# runs (docs/modelling-notes.md#newfixc-answers, newc5 #19)
WAIT_WHAT = ("the decode steps it waits before its prefill: the harness's arrival phase (a closed loop's request lands while "
             "the step the engine launched before it saw the last one end still runs, and waits it out, even alone; a burst "
             "none), then the steps the scheduler queued ahead of it")


def prefill_ops(model: ModelSpec, dep: Deployment, cal: Calibration, workload: Workload):
    """The operators of one prefill chunk of one request, priced with the calibration the serving
    metrics use inside a step (the engine's in-step calibration, Engine.costs)."""
    chunk = Batch(pf_tokens=min(workload.isl, dep.rank_step_tokens), pf_seqs=1, pf_ctx=0)
    return forward_ops(model, dep.gpu, dep.engine.costs(cal).cal, dep.precision, dep.plan.broadcast(), b=chunk, engine=dep.engine)


def _one_plan(dep: Deployment) -> Deployment:
    """`dep` with its plan's sizes as ints where they are numpy values of one element each (Deployment
    takes them: a notebook's np.array(8)), so that it is priced, and kept (serve.aggregated.deployment_ops),
    as the same plan of ints is; sizes of several elements are a sweep's, refused."""
    if not any(isinstance(v, np.ndarray) for v in dep.plan.sizes):
        return dep
    for name, v in zip(("tp", "pp", "ep", "moe_tp", "adp", "kvp"), dep.plan.sizes, strict=True):
        if np.size(v) != 1:
            raise InputError(f"plan.{name}", np.asarray(v).reshape(-1)[:6].tolist(),
                             "one size for an estimate (an array of several is a sweep's: lc.pareto, or serve.aggregated.evaluate)")
    return replace(dep, plan=dep.plan.at(0))


def estimate(model: ModelSpec, dep: Deployment, workload: Workload, *, calibration: Calibration, breakdown: bool = False) -> Estimate:
    """What `dep` delivers on `workload`: the metrics at its concurrency (or at the offline maximum
    throughput), memory per GPU, the binding resource of each phase, speculation's break-even and,
    with `breakdown`, per-operator times of the decode step."""
    dep = _one_plan(dep)
    check(model, dep)
    model.check_context(workload.isl, workload.osl)
    check_whole_prompt(dep, workload.isl, osl=workload.osl)  # an engine that schedules prompts whole refuses one over its budget
    cal = calibration
    adp = int(np.asarray(dep.plan.adp))
    grid = BATCH_GRID * adp
    off = workload.concurrency is None  # no load given: every load tried priced as the offline benchmark runs (the knee's)
    r = evaluate(model, dep, workload, calibration=cal, concurrency=grid, offline=off)
    max_conc = int(r.max_concurrency.reshape(-1)[0])
    if max_conc < 1:
        _refuse_unfit(dep, r, model, workload, cal)
    max_batch = int(r.max_batch.reshape(-1)[0])  # what the KV cache holds and the step budget decodes (Metrics.max_batch)
    concurrency, knee = workload.concurrency, None
    if concurrency is None:
        if max_batch not in grid:  # the knee's maximum at the largest batch itself, not at the grid's point beside it (newc9 #1)
            grid = np.union1d(grid, [max_batch])
            r = evaluate(model, dep, workload, calibration=cal, concurrency=grid, offline=True)
        concurrency, knee = offline_knee(r, grid, max_batch=max_batch)
        mode = "offline-max-throughput"
        offline_text = offline_note(model, dep, workload, cal, batch=concurrency)
    else:
        mode, offline_text = "concurrency", None
    one = evaluate(model, dep, workload, calibration=cal, concurrency=concurrency, offline=off)
    s = lambda k: float(np.asarray(getattr(one, k)).reshape(-1)[0])  # noqa: E731
    # the bottlenecks are read from the very steps the metrics time (decode: the step at this load)
    priced = deployment_ops(model, dep, workload, cal=cal, concurrency=concurrency)  # the evaluation the metrics above are
    dec_ops = list(priced["ops"])
    pf_ops = prefill_ops(model, dep, cal, workload)
    per = pdl_per_launch(dep.gpu, dep.engine.costs(cal))  # each operator as the step prices it
    rows = _with_steps(_breakdown(dec_ops, per), priced, dep, cal)  # the breakdown's rows, summing to TPOT and TTFT
    est = Estimate(
        model=model.name, deployment=dep, workload=workload, mode=mode, concurrency=concurrency,
        ttft_s=s("ttft_s"), tpot_s=s("tpot_s"), tok_s_per_user=s("tok_s_per_user"), output_tok_s_per_gpu=s("output_tok_s_per_gpu"),
        io_tok_s_per_gpu=s("io_tok_s_per_gpu"), tokens_per_joule_at_tdp=s("tokens_per_joule_at_tdp"), max_batch=max_batch,
        memory=Memory(weights=s("weights_bytes"), kv=s("kv_bytes") - s("state_bytes"), state=s("state_bytes"), activations=s("activation_bytes"),
                      free=s("free_bytes"), capacity=dep.gpu.memory_bytes),
        energy=energy(model, dep, workload, concurrency, calibration=cal).at(),
        **_bounds(dec_ops, pf_ops, per, rows, dep.gpu), accepted_per_step=s("accepted_per_step"),
        # a format this GPU cannot execute is priced as the engines map it, and the answer says so
        precision_notes=precision_notes(model, dep) + _expert_notes(model, dep),
        **_capacity(model, dep, workload, concurrency=concurrency, max_batch=max_batch, budget_binds=bool(r.budget_binds.reshape(-1)[0]),
                    free=s("kv_bytes") + s("free_bytes")),
        spec=_spec_break_even(model, dep, workload, cal, max_batch=max_batch, concurrency=concurrency, tpot_s=s("tpot_s")) if dep.spec is not None else None,
        breakdown=rows if breakdown else None,
        moe_activation=getattr(moe_step_activation(model, dep.gpu, executable(dep.precision, dep.gpu)[0], dep.engine, concurrency), "name", None),
        eager_decode=_eager_decode(dep, rows, priced["step_parts"], priced["time_parts"], batch=float(np.asarray(priced["time_parts"]["batch"], float).reshape(-1)[0]),
                                   tpot_s=s("tpot_s"), ttft_s=s("ttft_s"), osl=float(workload.osl)),
        request_cost=request_cost_note(dep, cal, rows, ttft_s=s("ttft_s"), moe=model.is_moe),
        rank_skew=rank_skew_note(dep, cal, rows, ttft_s=s("ttft_s")), knee=knee,
        adp_hold=adp_hold_note(dep, cal, priced["time_parts"], ttft_s=s("ttft_s")),
        kv_seqs=int(r.kv_seqs.reshape(-1)[0]), queue=_queue(priced["time_parts"]),
        batch_limit=batch_limit(dep, workload, max_batch=max_batch, budget_binds=bool(r.budget_binds.reshape(-1)[0]),
                                kv_seqs=int(r.kv_seqs.reshape(-1)[0]), accepted=s("accepted_per_step")),
        attention_note=head_dim_note(model, dep.engine.name, dep.gpu, dep.precision.kv.name), offline_note=offline_text)
    return check_estimate(model, est)


def offline_note(model: ModelSpec, dep: Deployment, workload: Workload, cal: Calibration, *, batch: int) -> str:
    """How an offline estimate's tok/s/GPU is counted: over each batch's whole life, its prompts prefilled and then
    decoded together, as an offline benchmark runs every request queued at once (OFFLINE_ARRIVAL, trtllm-bench's
    throughput; serve.aggregated._cohort), not a served loop's slot cycle (_slot_cycle: TTFT + (OSL - 1) x TPOT, each
    slot refilled as its request ends), whose figure at the same `batch` it quotes beside (fixA13: 8B H100 FP8 offline
    14,072.8 against --concurrency 372's 14,571.3, the same TTFT and TPOT, and no row said why)."""
    served = evaluate(model, dep, workload, calibration=cal, concurrency=batch, offline=False).output_tok_s_per_gpu
    served = float(np.asarray(served).reshape(-1)[0])
    return (f"counted over each batch's life, its prompts prefilled then decoded together (every request queued at once, "
            f"as an offline benchmark runs them); served at --concurrency {batch}, each slot refilled as its request ends, "
            f"{served:,.1f}")


def _queue(tp: dict) -> dict | None:
    """TTFT's wait for a slot (serve.aggregated: whole cohorts of the admitted requests, each a slot cycle, before a
    request beyond them starts), where there is one: its ms, the cohorts ahead and their cycle (64 requests on 16 slots:
    3 cohorts ahead). None where every request runs at once."""
    q, life = (float(np.asarray(tp[k], float).reshape(-1)[0]) for k in ("slot_queue", "life"))
    if q <= 0.0:
        return None
    return {"ttft_ms": q * 1e3, "cohorts": q / life, "cycle_ms": life * 1e3}


# offline's operating point: the smallest batch within KNEE_FRACTION of the most tok/s/GPU any batch that fits gives
# (newc6 #9: MI300X 70B on SGLang took the KV-full 2,453 requests, TTFT 87.6 s, TPOT 270 ms, for +14% over 512). 3%: under
# half the tool's median tok/s/GPU-setting error (TPOT median APE 6.4-7.9%, README), so a larger batch's gain past it is
# one the model cannot tell from its own error, while every latency grows with the batch; the 80% band of the maximum
# (678-1268 tok/s/GPU there) would take a batch far down the curve. The engine's default running-batch cap bounds "fits"
# already (Engine.max_batch: vLLM's max_num_seqs 1024/256, SGLang's request pool 2048-4096, ATOM's 512, TensorRT-LLM's 4096)
KNEE_FRACTION = 0.03


def offline_knee(r, grid, *, max_batch: int | None = None) -> tuple[int, dict]:
    """(batch, what it leaves): the smallest batch of `grid` whose tok/s/GPU is within KNEE_FRACTION of the largest of
    those that fit (`r`, evaluate's over the grid) and run at once (at most `max_batch`, Metrics.max_batch: past it the
    rest queue, no faster), with the maximum's batch, its gain over the knee and its TPOT over the knee's; `at_max_batch`
    whether the maximum's batch is the largest that runs (the KV cache's, the engine's or the step budget's limit:
    Estimate.batch_limit says which). newc9 #1: the budget's 2451 beside the grid's 2453 read as two limits."""
    ok = np.asarray(r.fits).reshape(-1) & (np.asarray(grid) <= (np.inf if max_batch is None else max_batch))
    tok = np.where(ok, np.asarray(r.output_tok_s_per_gpu).reshape(-1), -1.0)
    top = int(np.argmax(tok))
    knee = int(np.flatnonzero(tok >= (1.0 - KNEE_FRACTION) * tok[top])[0])
    tpot, ttft = (np.asarray(x, float).reshape(-1) for x in (r.tpot_s, r.ttft_s))
    fits = np.flatnonzero(ok)
    return int(grid[knee]), {"batch": int(grid[knee]), "max_batch": int(grid[top]), "gain": float(tok[top] / tok[knee] - 1.0),
                             "tpot_ratio": float(tpot[top] / tpot[knee]), "ttft_ratio": float(ttft[top] / ttft[knee]),
                             "fraction": KNEE_FRACTION, "at_max_batch": bool(fits.size and top == fits[-1])}


# the share of TTFT from which an engine's fitted per-request cost is said on the answer (a reading choice, no measured
# quantity: a tenth of TTFT is past every between-group term but the load's at 80%, intervals.toml [between])
MATERIAL_SHARE = 0.10


# an answer's notes of a fitted TTFT share whose mechanism is open (Estimate.to_dict's keys), each surface quoting a TTFT
# says them in these words (fitted_ttft_notes): estimate's rows, export's and compare's notes (newc11 #9)
FITTED_TTFT_NOTES = ("request_cost_note", "adp_hold_note")


def fitted_ttft_notes(answer: dict) -> list[str]:
    """The notes of `answer` (Estimate.to_dict) naming a fitted share of its TTFT whose mechanism is open: SGLang's
    per-request cost (request_cost_note), TensorRT-LLM's attention-DP hold (adp_hold_note); [] where neither is."""
    return [answer[k] for k in FITTED_TTFT_NOTES if answer.get(k)]


def request_cost_note(dep: Deployment, cal: Calibration, rows, *, ttft_s: float, moe: bool) -> str | None:
    """Where an engine's fitted per-request cost (Engine.request_cost_fitted_on: SGLang's 24.9 ms) is MATERIAL_SHARE of
    TTFT or more (its breakdown row, first/front_end), a line naming the cost, what it was fitted on and that its
    mechanism is open (newc6 #1: a dense 8B on one H100 priced with the cost fitted on large-MoE runs); else None."""
    fitted_on = dep.engine.request_cost_fitted_on
    queue = sum(o.time_s for o in rows if o.name == "first/front_end_queue")
    front = sum(o.time_s for o in rows if o.name == "first/front_end") + queue
    if not fitted_on or ttft_s <= 0 or front < MATERIAL_SHARE * ttft_s:
        return None
    per = cal.ttft_overhead(dep.engine.name)
    outside = ("" if ("moe" if moe else "dense") in fitted_on else
               f"; this {'MoE' if moe else 'dense'} model lies outside them: beyond the runs says what its intervals took of it")
    # served one at a time, the cost caps each attention-DP rank's rate (serve.aggregated._front_bound): said wherever it binds
    capped = (f"; served one at a time it caps each rank at 1 / {per * 1e3:.1f} ms = {1.0 / per:.1f} requests a second, and "
              f"{queue * 1e3:.0f} ms of it is the queue for that") if queue > 0 else ""
    return (f"{front * 1e3:.0f} ms of TTFT ({front / ttft_s:.0%}) is {dep.engine.title}'s fitted per-request cost "
            f"(ttft_overhead_s, {per * 1e3:.1f} ms a request, (q + 1) / 2 of it for q arriving together){capped}, fitted on "
            f"{' and '.join({'moe': 'MoE', 'dense': 'dense'}[c] for c in fitted_on)} runs only ({dep.engine.request_cost_runs}); its mechanism is open (docs/modelling-notes.md#sglang-request-cost)"
            + outside)


def adp_hold_note(dep: Deployment, cal: Calibration, tp: dict, *, ttft_s: float) -> str | None:
    """Where the fitted attention-DP hold (adp_wait_steps, EngineCosts.adp_hold_steps: TensorRT-LLM's 60 iterations with
    more requests than ranks) is priced in TTFT, a line naming it as fitted, what it was fitted on and that its cause is
    not read (Engine.adp_hold_runs); else None. Its ms: the hold's iterations x the decode iteration (time_parts' adp_hold,
    part of the breakdown's first/wait_steps)."""
    held = float(np.asarray(tp.get("adp_hold", 0.0), float).reshape(-1)[0])
    if held <= 0 or ttft_s <= 0:
        return None
    steps = dep.engine.costs(cal).adp_wait_steps
    runs = dep.engine.adp_hold_runs or "the profile's value; no campaign informs it"
    return (f"{held * 1e3:.0f} ms of TTFT ({held / ttft_s:.0%}) is a fitted attention-DP wait (adp_wait_steps {steps:.0f} "
            f"steps of the {held / max(steps, 1e-30) * 1e3:.1f} ms decode iteration, {runs}; docs/modelling-notes.md#fixA2-request-cap)")


def rank_skew_note(dep: Deployment, cal: Calibration, rows, *, ttft_s: float) -> str | None:
    """Where the engine's fitted spread of the eager launch cost over a stage's ranks (eager_skew_s, EngineCosts.
    eager_per_launch) is MATERIAL_SHARE of TTFT or more, a line naming it and saying it is a fitted scale whose mechanism
    is open (newc7 #4); else None. Its share: the first token's eager row (first/prefill_eager: the launches x the per-launch
    cost, added to the kernels) x eager_skew_s sqrt(2 ln N) / that cost (docs/modelling-notes.md#skew-overlap)."""
    costs = dep.engine.costs(cal)
    ranks = float(np.asarray(stage_ranks(dep.plan.broadcast()), float).reshape(-1)[0])
    per = float(costs.eager_per_launch(ranks))
    eager = sum(o.time_s for o in rows if o.name == "first/prefill_eager")
    if costs.eager_skew <= 0 or ranks <= 1 or eager <= 0 or ttft_s <= 0:
        return None
    skew = eager * (per - costs.eager_launch) / per
    if skew < MATERIAL_SHARE * ttft_s:
        return None
    return (f"{skew * 1e3:.0f} ms of TTFT ({skew / ttft_s:.0%}) is {dep.engine.title}'s fitted rank skew (eager_skew_s "
            f"{costs.eager_skew * 1e6:.1f} us x sqrt(2 ln {ranks:.0f}) a launch), its mechanism open (docs/modelling-notes.md#skew-overlap)")


def _bounds(dec_ops, pf_ops, per: float, rows, gpu) -> dict:
    """Estimate's decode_bound and prefill_bound, each with why where starred (bound_why): _decode_bound, _starred."""
    dec, dec_why = _decode_bound(dec_ops, per, rows, gpu)
    tot = resource_times(pf_ops, per)
    pf, pf_why = _starred(binding_resource(pf_ops, per), tot, pf_ops, per, gpu)
    return {"decode_bound": dec, "prefill_bound": pf, "bound_why": {k: v for k, v in (("decode", dec_why), ("prefill", pf_why)) if v}}


def _decode_bound(ops, per: float, rows: tuple[OperatorTime, ...], gpu) -> tuple[str, str | None]:
    """What the decode step spends most time on (and why, where starred: _starred): its operators by resource
    (serve.aggregated.resource_times, as binding_resource sums them), or the host, its rows of the breakdown (step,
    sequences, eager launches) together, where they exceed each. An eager step's row is its launches beyond its kernels
    (serve.aggregated._eager_decode: the step takes the longer of the two), so where it is priced the host's launches
    outlast every kernel together: host."""
    host = [o.time_s for o in rows if o.phase == "decode" and o.kind == "host"]
    if any(o.time_s > 0 for o in rows if o.name in ("host/eager_launches", "host/draft_pieces")):
        return "host", None
    tot = resource_times(ops, per) | {"host": sum(host)}
    return _starred(max(tot, key=tot.get), tot, ops, per, gpu)


def _starred(bound: str, tot: dict, ops, per: float, gpu) -> tuple[str, str | None]:
    """`bound` starred as roofline stars an operator (cost.roofline.op_side, one function for both: newc11 #12) where most
    of its time is operators whose kernel's own rates bind the other side of the GPU's ridge, with why: the longest of them,
    its FLOP/B against the GPU's ridge and the kernel's. A MoE W4A16 decode on an MI355X is 'compute*': its expert GEMMs
    at 5.9 FLOP/B read as compute only through the dequantising kernel's rate, which no CDNA4 table times."""
    if bound not in ("compute", "memory"):
        return bound, None
    side = {id(op): op_side(op, gpu) for op in ops if op.kind != "comm"}
    off = [(float(np.sum(op_step_time(op, per))), op) for op in ops
           if id(op) in side and side[id(op)].modelled == bound and side[id(op)].kernel_ridge is not None]
    if sum(t for t, _ in off) <= tot[bound] / 2:
        return bound, None
    _, op = max(off, key=lambda x: x[0])
    s = side[id(op)]
    return f"{bound}*", (f"{op.name.split('/', 1)[-1]} at {s.intensity:.1f} FLOP/B against the GPU's ridge of {s.ridge:.0f}: its kernel's own "
                         f"rates (tiles, waves, efficiency) put the ridge at {s.kernel_ridge:.1f}, roofline's *")


def _eager_decode(dep: Deployment, rows: tuple[OperatorTime, ...], sp, tp: dict, *, batch: float, tpot_s: float, ttft_s: float,
                  osl: float) -> EagerDecode | None:
    """EagerDecode where the decode step misses the CUDA graphs or replays vLLM's piecewise ones (`sp`'s eager_n) and its launches show: beyond its kernels
    at DECODE_LAUNCH_S (the breakdown's host/eager_launches row), or only at the range's upper end (hidden at 35 us: the
    row 0, a one-line note and an up-side term alone); else None. With TPOT's and TTFT's moves at the range's ends from
    evaluate's time_parts `tp` (eager_tpot_moves, eager_ttft_moves: the stage repriced, then the row's iteration)."""
    one = lambda x: float(np.asarray(x, float).reshape(-1)[0])  # noqa: E731
    if one(sp.eager_n) <= 0:
        return None
    moves = tuple(one(m) for m in eager_tpot_moves(tp, tpot_s=tpot_s))
    ttft = tuple(one(m) for m in eager_ttft_moves(tp, ttft_s=ttft_s, tpot_s=tpot_s, osl=osl))
    row = next((o for o in rows if o.name == "host/eager_launches" and o.time_s > 0), None)
    if row is None and moves[1] <= 0:  # hidden under the kernels at both ends: nothing to say or widen by
        return None
    extra, part = (0.0, 0.0) if row is None else (row.time_s, row.tpot_s)
    return eager_note(dep, batch=batch, extra_s=extra, part_s=part, tpot_s=tpot_s, moves=moves, ttft_moves=ttft,
                      piecewise=bool(np.asarray(sp.piecewise).reshape(-1)[0]))


def _with_steps(ops: tuple[OperatorTime, ...], priced, dep: Deployment, cal: Calibration) -> tuple[OperatorTime, ...]:
    """The operator rows, each with its share of TPOT, and the rest of the step and metrics (step_rows)."""
    per_token, rest = step_rows(priced, dep, dep.engine.costs(cal), op_sum=sum(o.time_s for o in ops))
    return tuple(replace(o, tpot_s=o.time_s * per_token) for o in ops) + rest


def _breakdown(ops, per: float) -> tuple[OperatorTime, ...]:
    """The operators that take time in a step, each as the step prices it (PDL's `per` launch off)."""
    out = []
    for op in ops:
        t = float(np.sum(op_step_time(op, per)))
        if t > 0:
            out.append(OperatorTime(op.name, op.kind, t, float(np.sum(op.flops * op.count)), float(np.sum(op.bytes * op.count))))
    return tuple(out)


def decode_rows(breakdown: list[dict]) -> list[dict]:
    """A breakdown's decode rows (Estimate.to_dict's `breakdown`) in the order estimate --breakdown and the page's point
    breakdown list them: the step's operators slowest first, then the rest of the step and of TPOT (step_rows', each
    with its `what`) in step_rows' order. Their `tpot_ms` sum to TPOT."""
    dec = [o for o in breakdown if o["phase"] == "decode"]
    return sorted((o for o in dec if "what" not in o), key=lambda o: -o["time_ms"]) + [o for o in dec if "what" in o]


def _overlap_said(costs, queued: float) -> str:
    """What the loop does with the rest of the host's work: an overlap loop (a step queued ahead: the run's
    SchedulerFlags.queued_steps, NaN: the engine's ttft_wait_steps) hides it under the step before (accuracy.md);
    vLLM 0.11's loop is synchronous (queued_steps 0, campaigns.toml:80)."""
    if (costs.ttft_wait_steps if np.isnan(queued) else queued) >= 1:
        return "; the engine's overlap scheduler runs the rest of its host work under the step before, not in TPOT"
    return "; the build's loop is synchronous (no step queued ahead): its host work runs in series"


def _times(sp, it: dict, part: str, *, one, stages: float) -> float:
    """How many times the decode iteration counts the step's `part` (StepParts.iteration_parts `it` over the step's own: below
    the depth the ring's every stage's kernels, the host pp times, the eager launches once), else `stages`."""
    own = one(getattr(sp, part))
    return one(it[part]) / own if part in it and abs(own) > 1e-30 else stages


def drafting(dep: Deployment) -> str:
    """What drafts a step's next tokens, as a breakdown row says it: the draft passes, or prompt lookup (ngram): the GPU's
    scan where the engine matches there (serve.aggregated.ngram_scan_time), else its host match, the GPU idle meanwhile
    (serve.aggregated.ngram_propose_time)."""
    if dep.spec is not None and not dep.spec.on_gpu:
        if dep.engine.ngram_gpu_scan:
            return "the GPU's prompt-lookup scan of each request's tokens (two kernels: serve.aggregated.ngram_scan_time)"
        return "the host's prompt-lookup match (the GPU idle: serve.aggregated.ngram_propose_time)"
    return "the draft passes"


def _host_rows(add, one, sp, costs, dep: Deployment, *, b: float, hidden: str, scale_of) -> None:
    """step_rows' rows of the step beyond its operators (the fitted costs per step and per sequence, the eager launches, the
    draft passes), each counted as the iteration counts its part (`scale_of`: TPOT seconds per second of it)."""
    # fitted serving values, not measured host work: what the step costs beyond its priced kernels, each within its
    # bounds (measure/calibrate.py SERVING_BOUNDS); default.toml documents each one's physical range
    add("fitted/per_step", "fitted", one(sp.host_step),
        f"the fitted cost a step beyond the kernels (step_overhead_s {costs.step_overhead * 1e3:.3g} ms){hidden}", always=True,
        scale=scale_of("host_step"))
    add("fitted/per_sequence", "fitted", one(sp.host_seq),
        f"the fitted cost a running sequence beyond the kernels: {b:.4g} running sequences x {costs.seq_overhead * 1e6:.3g} us "
        "(seq_overhead_s)", always=True, scale=scale_of("host_seq"))
    pieces = bool(np.asarray(sp.piecewise).reshape(-1)[0])  # vLLM's piecewise graphs: the attention ops launched between them
    add("host/eager_launches", "host", one(sp.eager),
        f"a batch of {b:.4g} per rank in vLLM's piecewise CUDA graphs: each layer's attention ops launched from the host "
        "between the graph pieces (serve.aggregated.piecewise_launches)" if pieces else
        f"a batch of {b:.4g} per rank the CUDA graphs miss ({captured_text(dep)}): every kernel's host launch, as eager",
        scale=scale_of("eager"))
    add("spec/draft_passes", "draft", one(sp.draft), f"{drafting(dep)} proposing the next tokens, their share of the stage",
        scale=scale_of("draft"))
    add("host/draft_pieces", "host", one(sp.draft_host),
        "the drafter's PIECEWISE graphs in vLLM's default mode (FULL_AND_PIECEWISE): its passes' attention ops launched from the "
        "host between their pieces, beyond the step's kernels (serve.aggregated._drafter_pieces_stage)", scale=scale_of("draft_host"))


def _wait_rows(add, one, tp, first: dict) -> None:
    """step_rows' rows of the waits: behind the other cohorts' prompts, in the per-request cost's queue, behind the evicted
    requests' recompute (and that recompute's share of TPOT), for a slot."""
    add("first/prompt_queue", "first token", one(tp["prompt_queue"]),
        "the wait behind the other cohorts' prompts where the rank's work sets a closed loop's cycle (Little's law, "
        "serve.aggregated._work_cycle: short outputs)", phase="first token")
    add("first/front_end_queue", "first token", one(tp.get("front_queue", 0.0)),
        "the wait in the per-request cost's queue where it, served one at a time (ttft_overhead_s x a rank's C / adp requests), "
        "outlasts the slot cycle: a rank admits at most 1 / ttft_overhead_s requests a second (serve.aggregated._front_bound)", phase="first token")
    add("first/recompute_queue", "first token", one(tp.get("evicted_ttft", 0.0)),
        "the next wave's wait behind the evicted requests' recompute (prepended to the waiting queue; in waves the first "
        "wave's, serve.aggregated.in_step_evictions)", phase="first token")
    add("preempt/recompute", "per token", one(tp.get("evicted_tpot", 0.0)),
        "requests kept in step past the full context's KV count: the evicted ones' wait for the others to finish and their "
        "prompt and output so far prefilled again, over the wave's OSL - 1 tokens (serve.aggregated.in_step_evictions)", scale=1.0)
    add("first/shared_slots", "first token", one(tp.get("shared_ttft", 0.0)),
        "requests kept in step past the largest batch the KV cache holds: the engine admits more (their prompts fit) and "
        "each holds a running slot running / admitted of the time, its first token's wait among them "
        "(serve.aggregated._in_step_priced)", phase="first token")
    add("first/slot_queue", "first token", one(tp["slot_queue"]),
        "the wait for a slot: requests beyond those the engine admits wait for whole requests to finish", **first)


def step_rows(priced, dep: Deployment, costs, *, op_sum: float, at: int = 0, n: int | tuple = 1) -> tuple[float, tuple[OperatorTime, ...]]:
    """(TPOT per second of a decode step, the rows of a breakdown beyond the step's operator rows): read off the evaluation
    the metrics come from (serve.aggregated.evaluate's step_parts and time_parts, `priced`; `costs`: the engine's
    EngineCosts), so that the decode rows' shares of TPOT sum to it and the first-token rows to TTFT. TPOT = (iteration /
    tokens accepted + the prompts' stalls per token) x the decode slots' share (serve.aggregated._decode_times), the
    iteration `stages_per_iteration` x step (pp where the pipeline is full, StepParts.iteration), so a step's part counts
    stages_per_iteration x share / accepted times. The step: its kernels beyond the operator rows (`op_sum` s: PDL's
    credit taken off the step whole where it exceeds an operator's own time), the host's cost per step and per running
    sequence, the host launches of a batch above the largest captured CUDA graph, the draft passes' share of the stage;
    per token, the others' prompt chunks and the cohort's prompts behind, spread over a request's tokens. TTFT: the
    prefill steps' span, the wait in decode steps, the front end's work beyond what hides under that wait, the wait for a
    slot. The first token's compute part is in the parts of its prefill steps (kernels, host, eager launches, the
    decodes' drafts beside), what an idle engine adds and the first wave's share. `at`: the point's flat index where `priced` holds `n` points (a frontier's, explore.search.point_breakdowns)."""
    one = lambda x: float(np.broadcast_to(np.asarray(x, float), n).reshape(-1)[at])  # noqa: E731
    sp, tp = priced["step_parts"], priced["time_parts"]
    # a decode iteration in stage times: pp where the pipeline is full, the stages' sum over one below (StepParts.iteration)
    stages, acc, share = one(tp["stages_per_iteration"]), one(tp["accepted"]), one(tp["time_share"])
    times = partial(_times, sp, tp.get("iteration_parts", {}), one=one, stages=stages)
    per_token = times("kernels") * share / acc
    rows: list[OperatorTime] = []

    def add(name, kind, t, what, *, scale=per_token, phase="decode", always=False):
        if always or abs(t) > 1e-12:  # a part the step or metric does not have (no draft, one stage) is left out
            rows.append(OperatorTime(name, kind, t, 0.0, 0.0, phase, what, None if phase != "decode" else t * scale))

    b, hidden = one(tp["batch"]), _overlap_said(costs, one(tp.get("queued_steps", np.nan)))
    _host_rows(add, one, sp, costs, dep, b=b, hidden=hidden, scale_of=lambda part: times(part) * share / acc)
    add("prefill/others_prompts", "per token", one(tp["prompt_stall"]),
        "the prompt chunks of requests arriving later, run in this request's decode steps, spread over its OSL - 1 tokens",
        scale=share)
    add("prefill/cohort_behind", "per token", one(tp["cohort_stall"]),
        "the wait after its first token for the prompts of its cohort behind it, spread over its OSL - 1 tokens", scale=share)
    first = {"phase": "first token", "always": True}
    # the compute part: the prefill steps to its first token (its prompt's chunks and those sharing its steps, through the
    # pipeline: serve.aggregated._own_prefill), by what each step is made of
    steps = "in the prefill steps to its first token (its prompt's and those sharing them, through the pipeline)"
    add("first/prefill_kernels", "first token", one(tp["prefill_kernels"]), f"the kernels {steps}", **first)
    add("first/prefill_host", "first token", one(tp["prefill_host"]), f"the host's cost per step and per sequence {steps}", **first)
    add("first/prefill_eager", "first token", one(tp["prefill_eager"]),
        f"the host launches of those eager steps (eager_launch_s, at the stage's slowest rank) {steps}", **first)
    add("first/prefill_draft", "first token", one(tp["prefill_draft"]), f"{drafting(dep)} of the decodes beside {steps}", phase="first token")
    add("first/idle_engine", "first token", one(tp["prefill_idle"]),
        "what the host's dispatch adds where the request finds the engine idle (idle_launch_s)", phase="first token")
    add("first/first_wave", "first token", one(tp["first_wave"]),
        "the first wave's share: it arrives as a burst and waits behind the whole wave's prompts", phase="first token")
    add("first/wait_steps", "first token", one(tp["wait"]), WAIT_WHAT, **first)
    add("first/front_end", "first token", one(tp["front_end"]),
        # not per-request work alone: (q + 1) / 2 x the fitted cost for q requests arriving together (serve.aggregated._request_times;
        # what the cost stands for is open, docs/modelling-notes.md#sglang-request-cost), so it grows with a wave (newc4 #11)
        "the engine's fitted cost per request (ttft_overhead_s) x (q + 1) / 2 for the q requests arriving together, "
        "served one at a time; what hides under that wait left out", **first)
    _wait_rows(add, one, tp, first)
    return per_token, tuple(rows)


def _expert_notes(model: ModelSpec, dep: Deployment) -> tuple[str, ...]:
    """One note where the engine holds the routed experts in another format than the checkpoint's (Engine.moe_weight:
    SGLang's MXFP4 experts on its Triton MoE, upcast to BF16 at load), priced and held so (cost.ffns, cost.memory)."""
    if not model.is_moe:
        return ()
    prec, gpu = executable(dep.precision, dep.gpu)[0], dep.gpu
    ep = bool(np.asarray(dep.plan.ep).reshape(-1)[0] > 1)
    run = gemm.expert_formats(dep.engine, gpu, prec, gated=model.moe_gated)[ep]
    if run == prec.weight.name:
        return ()
    kernel = gemm.gemm_kernel(gemm_math(prec.weight, prec.activation, gpu), prec.weight.name, fp4_math=gpu.supports("fp4"))
    fam = dep.engine.moe_kernel(gpu.family, kernel, weight=prec.weight.name, ep=ep, gated=model.moe_gated)
    return (f"{dep.engine.title} runs these {prec.weight.name} experts on its {fam} MoE kernel on {gpu.name}"
            f"{' under EP' if ep else ''}, which converts them to {run} at load: held, read and priced as {run}",)


def _ep_upcast(model: ModelSpec, dep: Deployment) -> str:
    """The advice's clause where the engine converts the experts to a wider format under EP only (Engine.moe_weight with
    ep: SGLang's MXFP4 experts on its Triton MoE, upcast to BF16, sglang quantization/mxfp4.py; docs/modelling-notes.md
    #sgmx), else ""."""
    if not model.is_moe or int(np.asarray(dep.plan.ep).reshape(-1)[0]) <= 1:
        return ""
    prec = executable(dep.precision, dep.gpu)[0]
    held = dict(zip((False, True), gemm.expert_formats(dep.engine, dep.gpu, prec, gated=model.moe_gated), strict=True))
    if held[True] == held[False] or held[True] == prec.weight.name:
        return ""
    return (f"; {dep.engine.title} holds these {prec.weight.name} experts as {held[True]} under EP (converted at load): "
            f"EP=1 or another engine keeps {prec.weight.name}")


def _capacity(model: ModelSpec, dep: Deployment, workload: Workload, *, concurrency: int, max_batch: int, budget_binds: bool,
              free: float) -> dict:
    """Estimate's over_capacity (past max_batch: _over_capacity) and in_step (the min(concurrency, max_batch) running, past
    what the cache holds at the full context where requests run in step: _in_step), from the sequences of ISL+OSL the KV bytes `free` hold (whole_seqs)."""
    k, seq_len = dep.spec.k if dep.spec is not None else 0.0, workload.isl + workload.osl
    whole = whole_seqs(model, dep.precision, dep.gpu, dep.plan, dep.spec, k=k, seq_len=seq_len, free=free)
    over = _over_capacity(dep, workload, max_batch=max_batch, budget_binds=budget_binds, whole=whole) if concurrency > max_batch else None
    if whole < 1 and dep.engine.kv_budget[2] < 1.0 and workload.osl > 1:
        # not one sequence at ISL+OSL: no eviction brings it to its end (the pricing's gate, serve.aggregated._in_step_priced)
        held = float(np.ravel(full_context_seqs(model, dep.precision, dep.gpu, dep.plan.broadcast(), dep.spec, k=k, seq_len=seq_len, free=free))[0])
        return {"over_capacity": over, "in_step": _short_context(dep, workload, tokens=held * seq_len)}
    # past max_batch the engine still runs max_batch in step, and they still run out of blocks (the rest wait for a slot)
    return {"over_capacity": over, "in_step": None if budget_binds else _in_step(dep, workload, min(concurrency, max_batch), whole)}


def _short_context(dep: Deployment, workload: Workload, *, tokens: float) -> str:
    """What an engine sizing its KV cache at the mean context (Engine.kv_budget's share < 1) does where its cache (`tokens`
    a rank) holds less than one request at ISL+OSL: the mean sizing admits it, and no preemption lets it finish (one
    running, nothing to evict but itself), so nothing is priced for it, whatever the arrival. vLLM does not start with a
    max_model_len its KV cache cannot hold ("To serve at least one request with the model's max seq len ...",
    _check_enough_kv_cache_memory, vllm/v1/core/kv_cache_utils.py, read in the code index), and refuses a request whose
    prompt and max_tokens pass a shorter one: review fixW13 #2, where the eviction line said "priced" of nothing priced."""
    isl, osl = workload.isl, workload.osl
    why = (" (vLLM starts only with a --max-model-len its KV cache holds, _check_enough_kv_cache_memory, and refuses a "
           "request past it)" if dep.backend == "vllm" else "")
    return (f"one request reaches {isl}+{osl} tokens and the KV cache holds {int(tokens):,} tokens{' a rank' if int(np.asarray(dep.plan.adp)) > 1 else ''}: "
            f"{dep.backend} sizes its batch at the mean context ({isl}+{dep.engine.kv_budget[2] * osl:.10g}) but cannot run one "
            f"request to its end{why}; not priced (TTFT, TPOT and tok/s/GPU are the mean sizing's): a shorter ISL or OSL, "
            "more GPUs or a narrower KV cache fit it")


def _in_step(dep: Deployment, workload: Workload, concurrency: int, whole: int) -> str | None:
    """What an engine sizing its KV cache at the mean context (Engine.kv_budget's share < 1: vLLM, SGLang, ATOM) does with
    requests kept in step (IN_STEP) past the `whole` sequences of ISL+OSL its cache holds: none of them admits at the
    mean, each admits a request whose prompt's blocks fit and grows it a block at a time. vLLM, out of blocks for a running
    request's next token, preempts the newest running request, frees its blocks and requeues it at the front to recompute
    its prompt and output so far (vllm/v1/core/sched/scheduler.py:271-281@0.11.0: `preempted_req = self.running.pop()`,
    num_computed_tokens = 0, waiting.prepend_request); SGLang retracts decoding requests, the fewest outputs and longest
    prompts first, just enough for the next step, their cache released without inserting it into the radix tree
    (srt/managers/schedule_batch.py:1751-1827@0.5.7 retract_decode, release_req's is_insert=False), re-queues them at the
    waiting queue's back and sets its new-token ratio to (decoded + 20 a request) / the batch's max new tokens
    (scheduler.py:2082-2139@0.5.7). Staggered (closed_loop) a sequence holds
    ISL + OSL/2 on average, the mean sizing's premise; in step all hold ISL + OSL at the wave's end, so past `whole` the
    engine preempts: newc11 #7 (290 Llama-3.1-8B requests, 1024/1024, on an H100: 72.5 GiB at the full context against a
    55.4 GiB pool). Priced where the engine recomputes the evicted (Engine.recomputes_evicted: vLLM, ATOM;
    serve.aggregated.in_step_evictions): a burst's wave whole, in waves (an offline batch too) the first wave's (1 / rounds of
    a run's requests; the evictions put the slots out of step, and the later waves' are not priced, nor any at estimate's
    steady state). SGLang's retraction is said, not priced. None where it does not arise."""
    share = dep.engine.kv_budget[2]
    arrival = workload.priced_arrival
    if share >= 1.0 or arrival not in IN_STEP or concurrency <= whole or workload.osl <= 1:
        return None
    isl, osl = workload.isl, workload.osl
    many = concurrency != 1
    said = (f"in step ({arrival}), " + (f"the {concurrency} requests reach" if many else "the 1 request reaches")
            + f" {isl}+{osl} tokens" + (" together" if many else "") + " and the KV cache holds "
            f"{whole} of them at that length: {dep.backend} sizes its batch at the mean context ({isl}+{share * osl:.10g}) and, out of "
            f"blocks near each wave's end, preempts about {concurrency - whole} of them to recompute later")
    if not dep.engine.recomputes_evicted:
        return said + " (not priced: TPOT and tok/s/GPU are the mean sizing's; --arrival closed_loop staggers them, or fewer requests fit)"
    if arrival == "burst":
        return said + (" (priced: they re-prefill their prompt and output so far once the others finish, which TPOT and "
                       "tok/s/GPU include)")
    return said + (" (priced in a run's first wave alone, its burst: the evictions put the slots out of step, and the steady "
                   "state priced here has no first wave; --arrival burst at a --concurrency prices the wave)")


def _over_capacity(dep: Deployment, workload: Workload, *, max_batch: int, budget_binds: bool, whole: int | None = None) -> str:
    """Priced, not refused: what the engine does with requests its KV cache cannot hold (Engine.admission), or
    its step token budget does not schedule beside the prompts arriving (Metrics.budget_binds). `whole`: the sequences
    of ISL+OSL the cache holds (serve.aggregated.whole_seqs), said beside `max_batch` where the engine counts at a mean context."""
    isl, osl = workload.isl, workload.osl
    if budget_binds:
        rank = (" per attention-DP rank" if int(np.asarray(dep.plan.adp)) > 1 else "") + \
            (" per pipeline micro-batch" if int(np.asarray(dep.plan.pp)) > 1 else "")
        plural = "s" if max_batch != 1 else ""
        budget = dep.rank_step_tokens
        if osl == 1:  # a request's one output token comes from its prefill: the prompts take the budget (budget_fill)
            return (f"a step of {dep.backend} schedules at most {budget} tokens{rank} and at OSL 1 nothing decodes: "
                    f"the prompts arriving take them ({_budget_tokens(dep, workload)} tokens{_cached_counted(dep, workload)} and 1 output token each), so {max_batch} request{plural} "
                    f"run{'s' if max_batch == 1 else ''} at once and the rest wait for them to finish (longer TTFT)")
        per = 1 + (dep.spec.k if dep.spec is not None else 0)
        return (f"a step of {dep.backend} schedules at most {budget} tokens{rank} ({per} per decoding request and "
                f"the prompts arriving), so {max_batch} request{plural} decode{'s' if max_batch == 1 else ''} and the rest wait "
                "for whole requests to finish (longer TTFT)")
    if dep.max_batch is not None and max_batch >= dep.max_batch * int(np.asarray(dep.plan.adp)):  # the launch's cap binds, not the cache
        rank = " per attention-DP rank" if int(np.asarray(dep.plan.adp)) > 1 else ""
        return (f"the launch caps the batch at {dep.max_batch} request{'s' if dep.max_batch != 1 else ''}{rank} (max_batch: "
                f"TensorRT-LLM max_batch_size, vLLM --max-num-seqs, SGLang --max-running-requests), so {max_batch} "
                f"run{'s' if max_batch == 1 else ''} at once and the rest wait for whole requests "
                "to finish (longer TTFT)")
    share = dep.engine.kv_budget[2]  # the share of the OSL a sequence holds as the engine sizes its batch (memory.fit's occupancy)
    held = f"the KV cache holds {seqs_text(max_batch, isl, osl, share, whole)}"
    if dep.engine.admission is not None:
        return (f"{held}; {dep.backend} admits requests before their whole KV cache fits and preempts when "
                "blocks run out, so the admitted requests share the decode slots (longer TPOT; kept in step, waves or a burst, "
                "the first token's too)")
    return f"{held}; {dep.backend} reserves ISL+OSL per request, so the rest wait for whole requests to finish (longer TTFT)"


def _budget_tokens(dep: Deployment, workload: Workload) -> int:
    """The tokens an arriving prompt takes off the step budget: its new tokens, or its whole ISL, at most the budget, where
    the engine counts the cached prefix (serve.aggregated.budget_charge, budget_fill's)."""
    return int(budget_charge(workload.new_tokens, workload.isl - workload.new_tokens, dep.rank_step_tokens, engine=dep.engine))


def _cached_counted(dep: Deployment, workload: Workload) -> str:
    """", cached prefix included," where the budget counts a prefix the prompt has (_budget_tokens), else ""."""
    return ", cached prefix included," if _budget_tokens(dep, workload) != workload.new_tokens else ""


# each engine's own running-batch limit as its launch names it (Engine.max_batch's sources)
BATCH_LIMIT_FLAG = {"trtllm": "max_batch_size", "vllm": "--max-num-seqs", "sglang": "--max-running-requests", "atom": "max_num_seqs"}


def batch_limit(dep: Deployment, workload: Workload, *, max_batch: int, budget_binds: bool, kv_seqs: int, accepted: float) -> dict:
    """What sets max_batch (Metrics.max_batch = min(KV cache, engine limit, launch cap, step budget)), as {"by", "text"}:
    estimate's "largest batch" row. newc9 #1: TensorRT-LLM's 8192-token budget over (1 + ISL/(OSL-1)) gave the same 2451
    on H100, H200 and B200 under "largest batch that fits", read as memory; the budget (budget_fill: a step's decodes, 1 +
    k tokens each, beside the prompts arriving as acc / (OSL-1) of them end a step) is named, with the KV cache's figure."""
    adp, pp = int(np.asarray(dep.plan.adp)), int(np.asarray(dep.plan.pp))
    held = f"; the KV cache holds {kv_seqs:,}" if kv_seqs > max_batch else ""
    if budget_binds:
        k, new, out = dep.spec.k if dep.spec is not None else 0, _budget_tokens(dep, workload), max(workload.osl - 1, 1)
        per = f"1 + {k}" if k else "1"
        arriving = f"{new}/{out}" if accepted == 1.0 else f"{accepted:.2f} x {new}/{out}"
        mixed = np.floor(dep.rank_step_tokens / (1 + k + accepted * new / out)) * pp * adp
        split = "".join(f" x {n} {w}" for n, w in ((pp, "micro-batches"), (adp, "attention-DP ranks")) if n > 1)
        why = (f"max_num_tokens {dep.rank_step_tokens:g} / ({per} + {arriving}){split}: each decoding request's "
               f"{'tokens' if k else 'token'} and the prompt tokens arriving" if mixed == max_batch else
               f"max_num_tokens {dep.rank_step_tokens:g} / ({per}){split}: each decoding request's {'tokens' if k else 'token'}")
        return {"by": "step budget", "text": f"{max_batch:,}, by the step budget ({why}){held}; --max-num-tokens raises it"}
    if dep.max_batch is not None and max_batch >= dep.max_batch * adp:
        return {"by": "launch cap", "text": f"{max_batch:,}, by the launch's cap (--max-batch {dep.max_batch}"
                + (f" x {adp} attention-DP ranks" if adp > 1 else "") + f"){held}"}
    if not held:
        return {"by": "KV cache", "text": f"{max_batch:,}, by the KV cache"}
    flag = BATCH_LIMIT_FLAG.get(dep.backend, "its batch limit")
    return {"by": "engine limit", "text": f"{max_batch:,}, by {dep.backend}'s own batch limit ({flag}"
            + (", per attention-DP rank" if adp > 1 else "") + f"){held}"}


def _spec_break_even(model: ModelSpec, dep: Deployment, workload: Workload, cal: Calibration, *, max_batch: int, concurrency: int,
                     tpot_s: float) -> SpecPayoff:
    """Speculation's TPOT speedup over the same deployment without it at this concurrency (`tpot_s`: the estimate's TPOT
    there, so the speed-up is the ratio of the two estimates), at one request (a rank), and the first concurrency at which
    it stops paying, with every run of loads at which it does not (SpecPayoff.losing_loads). Both are priced at every
    batch of a rank up to `max_batch` (the largest that runs at once): a decode CUDA graph captured at one batch and
    missed at the next (serve.aggregated.graph_misses: TensorRT-LLM's 1-32, 64, 128 unpadded) makes TPOT jump between
    neighbours, and a ratio interpolated across a jump is neither's (fixA13: "1.83x here" at 128, the estimates' 0.95x)."""
    adp = int(np.asarray(dep.plan.adp))
    grid = np.union1d(adp * np.arange(1, max(max_batch // adp, 1) + 1, dtype=np.int64), [concurrency])
    off = workload.concurrency is None  # an offline estimate's, priced as its own figures are
    spec, base = (evaluate(model, d, workload, calibration=cal, concurrency=grid, offline=off) for d in (dep, replace(dep, spec=None)))
    speedup = base.tpot_s / spec.tpot_s
    here = float(base.tpot_s[np.searchsorted(grid, concurrency)]) / tpot_s
    loses = (speedup < 1.0) & spec.fits & (grid <= max_batch)
    edges = np.flatnonzero(np.diff(np.r_[0, loses.astype(np.int8), 0]))  # each run of losing loads: [start, end)
    runs = tuple((int(grid[a]), int(grid[e - 1])) for a, e in zip(edges[::2], edges[1::2], strict=True))
    return SpecPayoff(dep.spec.method, dep.spec.k, speedup_at_concurrency=here, speedup_at_1=float(speedup[0]),
                      stops_paying_at_concurrency=runs[0][0] if runs else None, losing_loads=runs,
                      acceptance_source=dep.spec.source)
