"""Serving metrics of aggregated in-flight batching with chunked prefill, array-valued.

With `concurrency` requests in flight (capped by the paged KV cache; the rest queue), each request
needs its ISL prefill in chunks of the step token budget and (OSL-1)/accepted decode iterations.
A request shares its prefill steps with those arriving with it, as the harness sends them (_own_prefill,
spec.harness): the cohorts a burst's prefill made ("waves"), lockstep waves ("burst"), or arrivals spread
over a closed loop ("closed_loop"); the other requests' prefill chunks land in its decode steps. TTFT =
the decode iterations it waits to be scheduled + the steps carrying its prefill + a per-engine request
overhead; TPOT = the decode iteration (kernels plus the engine's host cost per step and per running
sequence) over the pipeline / tokens accepted + prefill stalls; throughput conserves work: the running
requests' output over their prefill plus decode time.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from llm_codesign.cost import memory
from llm_codesign.cost.calibration import BACKEND_KEYED, Calibration
from llm_codesign.cost.gemm import reuse_gemm_prices
from llm_codesign.cost.kernels import elementwise_time
from llm_codesign.cost.ops import Batch, forward_ops, launches, mtp_module_ops, spec_worker_ops, step_time
from llm_codesign.cost.reuse import PriceMemo, array_key, reusing
from llm_codesign.errors import InputError
from llm_codesign.serve.broadcast import once_along_last, once_at_cap
from llm_codesign.spec.engines import TRTLLM, Engine, EngineCosts
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, DEFAULT_FLAGS, SchedulerFlags
from llm_codesign.spec.kinds import DSA, GQA, Attention, DenseFfn
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding, Workload, accepted_within, cached_tokens, prompt_schedules
from llm_codesign.spec.precision import Precision


def draft_model(model: ModelSpec, spec: SpecDecoding) -> ModelSpec | None:
    """The model a draft pass runs: DeepSeek MTP module, an EAGLE-3 head, or a separate draft model; None for prompt
    lookup (ngram), which loads no weights and holds no KV cache of its own (SGLang: uses_draft_model is False for NGRAM,
    arg_groups/kv_cache_hook.py:204@0.5.23; vLLM's default runner's NgramGPUSpeculator loads no model, only a scratch of
    max_num_seqs x max_model_len / 256 int64 and its drafts, v1/worker/gpu/spec_decode/ngram/speculator.py:157-207@0.33.0)."""
    if not spec.on_gpu:
        return None
    if spec.method == "mtp":
        # DeepSeek-V3 MTP: one more transformer block of the model's own (last) layer type and the
        # shared LM head (DeepSeek-V3 report, sec. 2.2)
        last = model.groups[-1][0]
        return replace(model, name=f"{model.name}-mtp", groups=((last, 1),))
    if spec.method == "eagle3":
        # EAGLE-3 (Li et al. 2025): one decoder layer at the target's hidden size with a 32k draft
        # vocabulary; FFN width 3.5x hidden as in the published Llama drafts (14336 for hidden 4096)
        h = model.hidden
        heads = max(h // 128, 1)
        attn = GQA(heads=heads, kv_heads=min(8, heads), head_dim=128, v_head_dim=128)
        ffn = DenseFfn(inter=int(np.ceil(3.5 * h / 256) * 256))
        return ModelSpec(name=f"{model.name}-eagle3", hidden=h, vocab=32000, groups=((Layer(attn, ffn), 1),))
    from llm_codesign.spec.registry import get_model  # a separate draft model

    if not spec.draft_model:
        raise InputError("draft_model", None, "a model name for --spec draft (e.g. llama-3.1-8b)")
    return get_model(spec.draft_model)


def whole_seqs(model: ModelSpec, prec: Precision, gpu: Gpu, plan: Plan, spec: SpecDecoding | None, *, k, seq_len, free) -> int:
    """The sequences of `seq_len` (ISL+OSL) tokens that `free` KV bytes a rank (memory.fit's free_for_kv; the first of an
    array) hold over the plan's attention-DP ranks: the count at the full length beside the engine's at a mean context
    (Engine.kv_budget's occupancy: vLLM, SGLang and ATOM size their batch at ISL + OSL/2, newc8 #7's 91 read as "91 of
    2048+512"). estimate's over-capacity line and disagg's decode-pool line say it (seqs_text)."""
    from llm_codesign.spec.precision import executable

    _, per_seq, _ = memory.seq_bytes(model, executable(prec, gpu)[0], plan.broadcast(), float(seq_len), spec=spec,
                                     draft=draft_model(model, spec) if spec is not None else None, k=k)
    room = max(float(np.ravel(free)[0]), 0.0)
    return int(np.floor(room / max(float(np.ravel(per_seq)[0]), 1e-9))) * int(np.max(plan.adp))


def seqs_text(n: int, isl: int, osl: int, share: float, full: int | None = None) -> str:
    """'N sequences at their mean context (I+share x O tokens), M of the full I+O' where the engine sizes its KV cache at a
    mean context (`share` < 1 of the OSL; `full`: whole_seqs), else 'N sequences of I+O tokens'."""
    seqs = f"{n} sequence{'s' if n != 1 else ''}"
    if share >= 1.0:
        return f"{seqs} of {isl}+{osl} tokens"
    return f"{seqs} at their mean context ({isl}+{share * osl:.10g} tokens)" + (f", {full} of the full {isl}+{osl}" if full is not None else "")


def engine_budget(gpu: Gpu, *, engine: Engine, max_num_tokens=None, plan: Plan | None = None, spec: SpecDecoding | None = None,
                  draft_len=None, chunked_prefill=None):
    """The step token budget of one attention-DP rank (the engine's own on this GPU unless given, split over the plan's
    ranks where the engine splits the server's figure: Engine.rank_step_tokens) and how the engine sizes and
    fills its KV cache: (budget, usable fraction, OSL share a running sequence holds), Engine.kv_budget,
    the fraction the engine's for the plan where one is given (Engine.kv_fraction: SGLang's follows the
    plan, reserving room for the server's chunk, and reserves a draft's room only where one runs, `draft_len` > 0: a
    sweep's k = 0 points run none). A run or deployment that states its own fraction has it in its flags (run_flags,
    kv_fraction_of). `chunked_prefill`: the launch's option (Engine.launch_step_tokens: SGLang's budget with chunking off)."""
    mnt = np.asarray(engine.launch_step_tokens(gpu, chunked_prefill) if max_num_tokens is None else max_num_tokens, float)
    budget, fraction, occupancy = engine.kv_budget
    if plan is None:
        return mnt, (budget, fraction, occupancy)
    # SGLang sizes its memory on the server's chunk before it splits it (_handle_gpu_memory_settings runs before
    # _handle_data_parallelism: server_args.py:710, :727@0.5.8.post1)
    fraction = engine.kv_fraction(gpu, plan, chunk=mnt, spec_method=spec.method if spec else None, draft_len=draft_len)
    return engine.rank_step_tokens(mnt, np.asarray(plan.adp, float)), (budget, fraction, occupancy)


def kv_fraction_of(fl: SchedulerFlags, own):
    """The KV fraction a run holds: the one its flags state (the run's, else the deployment's launch option: run_flags),
    else the engine's `own` (engine_budget)."""
    return own if np.all(np.isnan(fl.kv_fraction)) else np.where(np.isnan(fl.kv_fraction), own, fl.kv_fraction)


def draft_lengths(spec: SpecDecoding | None, spec_k=None, osl=None):
    """Draft length k and tokens accepted per step; k = 0 (speculation off in a sweep) accepts 1. With `osl`, the
    tokens a step credits a request, no more than it has left to decode (spec.plan.accepted_within)."""
    if spec is None:  # 0-d, as a SpecDecoding's scalar k gives: a scalar load's metrics 0-d with speculation or without
        return np.zeros(()), np.ones(())
    k = np.asarray(spec.k if spec_k is None else spec_k, float)
    acc = spec.accepted(k.astype(np.int64))
    return k, acc if osl is None else accepted_within(acc, osl)


# The fields of a profile a step's kernels read: all but the per-engine ones (BACKEND_KEYED), which only
# Engine.costs reads, for the host costs the step adds to its kernels; the steps' kernel prices kept
# within reuse_step_kernels() (cost.reuse), None elsewhere.
_KERNEL_FIELDS = tuple(f.name for f in dataclasses.fields(Calibration) if f.name not in BACKEND_KEYED)
_STEP_KERNELS: ContextVar[PriceMemo | None] = ContextVar("step_kernels", default=None)


@contextmanager
def reuse_step_kernels() -> Iterator[None]:
    """Within the block a step's kernels (decode_step's and prefill_step's: operators, their time and
    launches, the draft passes) are priced once per distinct input and reused, and GEMMs too
    (cost.gemm.reuse_gemm_prices). A serving fit (measure.calibrate) re-prices its rows ~1,300 times,
    most of them changing only an engine's host costs, which no kernel reads, and some the collectives'
    latencies, which no GEMM reads. Off elsewhere: a search prices each input once."""
    # up to 4,096 steps, each with its operators: a fit's steps at the accepted parameters, several times over
    with reusing(_STEP_KERNELS, _KERNEL_FIELDS, 4096), reuse_gemm_prices():
        yield


def _reused(price, *, what: tuple, model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, costs: EngineCosts, arrays: tuple):
    """price() within reuse_step_kernels() where the same inputs were priced before (the profile
    compared on _KERNEL_FIELDS, the engine by name, fusions and MoE exchange: Engine.without's and with_moe_a2a's builds
    share a name); price() elsewhere."""
    memo = _STEP_KERNELS.get()
    if memo is None:
        return price()
    key = (*what, model, gpu, prec, costs.engine.name, costs.engine.fusions, costs.engine.moe_a2a, memo.cal_key(costs.cal),
           *(array_key(getattr(sh, f.name)) for f in dataclasses.fields(Plan)), *(array_key(x) for x in arrays))
    return memo.get(key, price)


class StepParts(NamedTuple):
    """One pipeline stage's decode step as its time is summed (seconds, arrays over the deployments): the kernels, the
    engine's host cost per step (step_overhead_s) and per running sequence (seq_overhead_s x b), the draft passes' share of
    the stage (t_draft / pp) and the host launches of a batch above the largest captured CUDA graph (_eager_misses, _decode_stage). What
    decode_step returns and an estimate's breakdown prints (serve.estimate.step_rows) are the same sum."""
    kernels: object
    host_step: object
    host_seq: object
    draft: object = 0.0
    eager: object = 0.0
    kernels_all: object = None  # the kernels of every stage in turn (forward_ops all_stages); None: one stage (PP1)
    eager_all: object = 0.0  # every stage's eager launches in turn (their exact count, as PrefillParts.eager_all)
    eager_ring: object = None  # the eager launches one micro-batch's ring waits on; None: one stage's share, eager_all / pp
    eager_host: object = 0.0  # the host's launches of a step the graphs miss (0 elsewhere), at DECODE_LAUNCH_S (eager_tpot_moves)
    eager_n: object = 0.0  # their count, the draft passes' included (0 where the graphs capture the step)
    eager_host_all: object = 0.0  # every stage's launches in turn, at DECODE_LAUNCH_S, where the step misses (PP > 1)
    eager_n_all: object = 0.0  # their count
    # where the step replays vLLM's piecewise graphs (Deployment.piecewise_graphs, within the capture): eager, eager_host and
    # eager_n (and eager_host_all, eager_n_all) are then its attention ops' host launches and the pieces' replays
    # (piecewise_launches), not a whole eager step; at_launch moves the ops' launches, not the replays
    piecewise: object = False
    # vLLM's default mode (FULL_AND_PIECEWISE): its drafter's PIECEWISE piece launches beyond the step's kernels, where a
    # captured step's full graph leaves them exposed (_drafter_pieces_stage); 0 elsewhere
    draft_host: object = 0.0

    @property
    def stage(self):
        # in this order: the sum decode_step and evaluate made before the parts were kept (the same values bit for bit)
        return self.kernels + self.host_step + self.host_seq + self.draft + self.eager + self.draft_host

    def iteration(self, pp, running, *, together=False):
        """A decode iteration: the time between a sequence's successive steps through the pipeline of `pp` stages with
        `running` sequences on it, spread over micro_batches(running, pp, together=...) micro-batches. Each micro-batch
        crosses the stages in turn (its next step needs its sampled token) and each stage serves one micro-batch at a time,
        so in steady state a micro-batch comes round every max(the ring, m x the slowest stage), whichever binds (a cyclic
        pipeline's period, docs/modelling-notes.md#pp-stage-sum). A full pipeline (m = pp) is bound by its slowest stage:
        pp x stage, as before; one micro-batch by the ring: each layer once, the head once, each stage's host cost per step
        and per sequence and its draft share, and the eager launches once (iteration_parts)."""
        pp = np.asarray(pp, float)
        if self.kernels_all is None:
            return pp * self.stage
        by_ring, times = self._binding(pp, running, together=together)
        return np.where(by_ring, self._ring(pp), times * self.stage)

    def _binding(self, pp, running, *, together):
        # the one selection iteration and iteration_parts share: (the ring binds, the stage's multiple where it does not:
        # m below the depth, pp at it); the ring binds below the depth where it is the longer (ties to the ring)
        m = micro_batches(running, pp, together=together)
        return (m < pp) & (self._ring(pp) >= m * self.stage), np.where(m < pp, m, pp)

    def _ring(self, pp):
        return self.kernels_all + self._eager_ring(pp) + pp * (self.host_step + self.host_seq + self.draft + self.draft_host)

    def _eager_ring(self, pp):
        # by default the eager launches once on the critical path: every PP rank runs its own executor loop and launches
        # its micro-batch's kernels as soon as the schedule reaches it, its NCCL recv queued on the stream, so stages
        # 1..pp-1 launch under the upstream stages' compute (docs/modelling-notes.md#pp-stage-sum); one stage's share of
        # the exact count over all stages (eager_all / pp). An engine whose stages launch one after another sets its own
        # (_decode_stage, PP_HOSTS_TOGETHER)
        return np.asarray(self.eager_all, float) / pp if self.eager_ring is None else np.asarray(self.eager_ring, float)

    def iteration_parts(self, pp, running, *, together=False) -> dict:
        """iteration's time by part (kernels, host_step, host_seq, draft, eager; seconds), summing to it: the ring's parts
        where it binds (every stage's kernels, the eager launches once, the rest pp times), else m or pp x the stage's.
        What an estimate's breakdown (serve.estimate.step_rows) and disagg's eager note read, so they agree."""
        pp = np.asarray(pp, float)
        names = ("kernels", "host_step", "host_seq", "draft", "eager", "draft_host")
        own = {n: np.asarray(getattr(self, n), float) for n in names}
        if self.kernels_all is None:
            return {n: pp * v for n, v in own.items()}
        ring = {"kernels": np.asarray(self.kernels_all, float), "host_step": pp * own["host_step"], "host_seq": pp * own["host_seq"],
                "draft": pp * own["draft"], "eager": self._eager_ring(pp), "draft_host": pp * own["draft_host"]}
        by_ring, times = self._binding(pp, running, together=together)
        return {n: np.where(by_ring, ring[n], times * own[n]) for n in names}

    def at_launch(self, launch_s, pp, *, hosts_in_turn: bool):
        """These parts with a missed step's launches priced at `launch_s` a launch instead of DECODE_LAUNCH_S (the jitter
        term does not scale with it): per stage first, the stage's host moved by its launches x the difference and its
        eager part max(host - kernels, 0) as _decode_stage takes it; then every stage's in turn (eager_all, where the stage's
        is priced, as there) and what the ring waits on (eager_ring: every stage's where the hosts launch one after
        another, `hosts_in_turn`, else one stage's share), so that iteration(pp, ...) of the result is the row's iteration
        at that cost (review rev12c #7: the moves mixed one stage's host with the row's TPOT)."""
        d, pp = launch_s - DECODE_LAUNCH_S, np.asarray(pp, float)
        host = np.asarray(self.eager_host, float) + np.asarray(self.eager_n, float) * d
        eager = np.where(np.asarray(self.eager_n, float) > 0, np.maximum(host - (self.kernels + self.draft), 0.0), 0.0)
        if self.kernels_all is None:
            return self._replace(eager=eager)
        host_all = np.asarray(self.eager_host_all, float) + np.asarray(self.eager_n_all, float) * d
        every = np.where(eager > 0, np.maximum(host_all - self.kernels_all - pp * self.draft, 0.0), 0.0)
        return self._replace(eager=eager, eager_all=every, eager_ring=every if hosts_in_turn else every / pp)


def micro_batches(running, pp, *, together=False):
    """The micro-batches `running` sequences fill on a pipeline of `pp` stages. TensorRT-LLM's PP loop forms one
    micro-batch a turn of its num_micro_batches = pp_size slots from every active request not already in flight
    (_executor_loop_pp, _schedule: scheduler.schedule_request(active_requests, inflight_req_ids); a slot with nothing to
    schedule is left empty, can_queue; tensorrt_llm/_torch/pyexecutor/py_executor.py@9521caf4), vLLM v1's batch queue of
    max_concurrent_batches = pipeline_parallel_size likewise. So fewer requests than stages that arrive together
    (`together`: a waves or burst run's wave) fall into one micro-batch and stay there: 1. A closed loop's requests
    arrive one by one as others finish, each joining the micro-batch forming when it comes, so they spread, one per
    sequence up to pp. At pp or more, as evenly as they go, as before (the step budget spreads a wave's prompts)."""
    running, pp = np.asarray(running, float), np.asarray(pp, float)
    spread = np.minimum(np.maximum(running, 1.0), pp)
    return np.where(np.asarray(together, bool) & (running < pp), 1.0, spread)


def decode_step(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec):
    """One pipeline stage's decode-only step for `b` sequences at context `ctx` verifying k drafts:
    kernels (priced with costs.cal, the engine's in-step calibration), the engine's host cost per step
    and per running sequence, and the draft passes' share. Returns (stage time, draft time, operators)."""
    parts, t_draft, ops = decode_step_parts(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec)
    return parts.stage, t_draft, ops


def decode_step_parts(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec):
    """decode_step's (StepParts, draft time, operators): its stage time's parts, which it sums, and every stage's kernels
    (StepParts.kernels_all, for StepParts.iteration) where the pipeline has more than one."""
    parts, t_draft, ops, _ = _step_parts(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec)
    return parts, t_draft, ops


def _step_parts(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec):
    """decode_step_parts and every stage's (kernel launches, collectives) (None at one stage)."""
    t_kernels, t_draft, ops, t_all, n_all = _reused(lambda: _decode_kernels(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec),
                                                    what=("decode", spec), model=model, gpu=gpu, prec=prec, sh=sh, costs=costs, arrays=(b, ctx, k))
    draft = 0.0 if spec is None else t_draft / np.asarray(sh.pp, float)
    return StepParts(t_kernels, costs.step_overhead, costs.seq_overhead * b, draft, kernels_all=t_all), t_draft, ops, n_all


def _decode_stage(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec, flags: SchedulerFlags,
                  piecewise: bool = False):
    """evaluate's decode step: decode_step_parts with the host launches of a batch above the largest captured CUDA graph
    that its kernels do not hide (_eager_misses), the slowest stage's (eager), every stage's in turn (eager_all) and what
    one micro-batch's pass through the stages waits on (eager_ring, PP_HOSTS_TOGETHER). `piecewise`: the captured batches
    replay vLLM's graph pieces, each layer's attention ops launched from the host between them (_piecewise_stage)."""
    parts, t_draft, ops, every = _step_parts(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec)
    own = default_capture(costs.engine, gpu, sh, k=k, flags=flags)
    ranks = stage_ranks(sh)
    miss = _eager_misses(b, flags, default=own)
    pp = np.asarray(sh.pp, float)
    # the draft passes launch from the same eager step (review rev12a #8): their launches join the host's, their kernels
    # (the stage's share, parts.draft) the kernels it runs under; counted only where a step misses the graphs (hot path)
    n_draft = _draft_launches(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec) \
        if spec is not None and np.any(miss) else 0.0
    n = launches(ops) + n_draft / pp
    host = decode_launch_host(n, launches(_collectives(ops)), ranks)
    # the draft passes' kernels hide the host's launches as the target's do; prompt lookup's time (ngram: SGLang's host match,
    # vLLM's two-kernel GPU scan, ngram_propose_time / ngram_scan_time) is counted as hiding none
    on_gpu = spec is not None and spec.on_gpu
    kernels = parts.kernels + (parts.draft if on_gpu else 0.0)
    eager = _eager_decode(b, flags, default=own, host=host, kernels=kernels)
    # the host and its launches where the step misses the graphs (0 elsewhere): what eager_tpot_moves reprices
    parts = parts._replace(eager=eager, eager_host=np.where(miss, host, 0.0), eager_n=np.where(miss, n, 0.0))
    host_all, n_all = (None, None) if every is None else (decode_launch_host(every[0] + n_draft, every[1], ranks), every[0] + n_draft)
    if piecewise:
        # the drafter replays its own PIECEWISE graphs (draft_pieces): its ops and pieces, the stage's share as n_draft's
        drafted = (0.0, 0.0) if spec is None else draft_pieces(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec)
        parts, host_all, n_all = _piecewise_stage(model, parts, ops, every, miss=miss, ranks=ranks, kernels=kernels,
                                                  host_all=host_all, n_all=n_all, drafted=drafted, pp=pp)
    elif on_gpu and costs.engine.name in DRAFTER_PIECEWISE and not np.all(miss):
        parts = _drafter_pieces_stage(model, gpu, prec, sh, parts, costs=costs, b=b, ctx=ctx, k=k, spec=spec, miss=miss,
                                      ranks=ranks, kernels=kernels)
    if every is None:
        return parts, t_draft, ops
    eager_all = np.where(np.asarray(parts.eager) > 0, np.maximum(host_all - parts.kernels_all - (t_draft if on_gpu else 0.0), 0.0), 0.0)
    ring = eager_all / pp if costs.engine.name in PP_HOSTS_TOGETHER else eager_all
    held = np.asarray(miss, bool) | np.asarray(parts.piecewise, bool)  # what at_launch reprices: a missed step, a piecewise one
    return parts._replace(eager_all=eager_all, eager_ring=ring, eager_host_all=np.where(held, host_all, 0.0),
                          eager_n_all=np.where(held, n_all, 0.0)), t_draft, ops


def _piecewise_stage(model: ModelSpec, parts: StepParts, ops, every, *, miss, ranks, kernels, host_all, n_all, drafted=(0.0, 0.0),
                     pp=1.0):
    """_decode_stage's parts where vLLM replays its piecewise graphs (cudagraph_mode PIECEWISE): a captured batch (not
    `miss`) launches each piece and, between them, each layer's attention ops from the host (piecewise_launches), which
    the kernels hide where they are the longer, as an eager step's launches (max(host, kernels), _eager_misses); a batch
    the capture misses runs eager as in every mode. Returns (the parts, every stage's host launches and their count, for
    eager_all and at_launch's repricing, `host_all` and `n_all` where the capture misses). `drafted`: the draft passes'
    (host ops, pieces) (draft_pieces), each stage's share 1 / `pp` as the eager draft launches (_decode_stage), every one
    in turn at PP; their kernels are in `kernels`."""
    d_ops, d_pieces = (np.asarray(x, float) for x in drafted)
    n, pieces = piecewise_launches(model, ops)
    n, pieces = n + d_ops / pp, pieces + d_pieces / pp
    host = decode_launch_host(n, launches(_collectives(ops)), ranks) + pieces * GRAPH_PIECE_S
    pw = ~np.asarray(miss, bool)
    parts = parts._replace(eager=np.where(pw, np.maximum(host - kernels, 0.0), parts.eager), eager_host=np.where(pw, host, parts.eager_host),
                           eager_n=np.where(pw, n, parts.eager_n), piecewise=pw)
    if every is None:
        return parts, None, None
    ops_all, pieces_all = piecewise_launches(model, every[2])
    ops_all, pieces_all = ops_all + d_ops, pieces_all + d_pieces
    return (parts, np.where(pw, decode_launch_host(ops_all, every[1], ranks) + pieces_all * GRAPH_PIECE_S, host_all),
            np.where(pw, ops_all, n_all))


# vLLM's splitting ops (CompilationConfig._attention_ops, vllm/config/compilation.py:766-788@0.33.0 wheel): under
# cudagraph_mode PIECEWISE the compiled forward is split at them (split_graph, vllm/compilation/backends.py:576-616) and
# every piece between two replays as a CUDA graph of its own (CUDAGraphWrapper.__call__, compilation/cuda_graph.py:235-361),
# while the ops run from the host. Where splitting_ops is left unset vLLM adds the KV-cache write ops too
# (unified_kv_cache_update, unified_mla_kv_cache_update, compilation.py:1174-1213: backends whose forward does not write the
# cache, FlashAttention's and FlashInfer's, forward_includes_kv_cache_update False, v1/attention/backends/flash_attn.py:369,
# flashinfer.py:737), kept beside the attention op in one eager piece (split_graph, backends.py:606-612) but each its own
# Python custom op launching its own kernel (model_executor/layers/attention/attention.py:546-585). So an attention layer
# runs 2 host ops (the write, the attention), DeepSeek-V3.2's sparse MLA 3 (its indexer, sparse_attn_indexer, is one of
# them), a recurrent or linear mixer 1 (mamba_mixer2, qwen_gdn_attention_core, linear_attention), each at DECODE_LAUNCH_S
PIECEWISE_HOST_OPS = {"attention": 2.0, "dsa": 3.0, "other": 1.0}
# The host's cost of replaying one graph piece: vLLM's piecewise toy model (2 layers, a trivial custom op as attention) ran
# a batch-1 step in 91.3 us against 71.8 us as one full graph (vllm-project/vllm PR #9715, tests/compile/piecewise/
# test_toy_llama.py benchmark(), 2024-10-28): 19.5 us for 2 more replays and 2 trivial ops, ~5 us each. Range 3-10 us: 3.5 us
# the CPU time of launching an 80-kernel graph (cuda.juliagpu.org, "Graphs"), 9.75 us the PR's whole 19.5 us on the replays.
# Documented, not fitted (no campaign row runs PIECEWISE); the intervals widen by the attention ops' launch range only
GRAPH_PIECE_S = 5e-6
GRAPH_PIECE_RANGE_S = (3e-6, 10e-6)


def piecewise_launches(model: ModelSpec, ops):
    """(host ops, graph pieces) of one stage's decode step under vLLM's piecewise graphs: each layer's mixer's splitting
    ops (PIECEWISE_HOST_OPS by the mixer of its decode op, role core_decode) and the pieces around them, one more than the
    layers split (the first before any attention, the last after)."""
    n, layers = 0.0, 0.0
    for op in ops:
        if op.role != "core_decode":
            continue
        mixer = model.groups[op.group][0].attn
        per = PIECEWISE_HOST_OPS["dsa" if isinstance(mixer, DSA) else "attention" if isinstance(mixer, Attention) else "other"]
        n, layers = n + per * np.asarray(op.count, float), layers + np.asarray(op.count, float)
    return n, layers + 1.0


# Engines whose drafter replays PIECEWISE graphs of its own beside a full-graph target step (vLLM's default
# FULL_AND_PIECEWISE: its mixed mode is PIECEWISE, so SpecDecodeBaseProposer.initialize_cudagraph_keys gives the drafter
# PIECEWISE, vllm/v1/spec_decode/llm_base_proposer.py:420-435@0.33.0 wheel)
DRAFTER_PIECEWISE = ("vllm",)


def _drafter_pieces_stage(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, parts: StepParts, *, costs: EngineCosts, b, ctx, k,
                          spec: SpecDecoding, miss, ranks, kernels) -> StepParts:
    """_decode_stage's parts in vLLM's default mode (FULL_AND_PIECEWISE) where the step is captured (not `miss`): the
    target replays one full graph, its drafter PIECEWISE graphs of its own (draft_pieces). The draft passes take the GPU
    sampled tokens with no sync after the target (EAGLE / draft model with the padded drafter batch, the default: "does not
    need to wait for bookkeeping", gpu_model_runner.py:4358-4375@0.33.0 wheel; prepare_inputs_padded builds their metadata
    from host-side lengths, llm_base_proposer.py:1098-1155, no sync), so the host launches the k passes' ops and pieces while the GPU runs the
    target's graph: they add only what outlasts the step's kernels, max(host - kernels, 0) (`kernels`: the target's and
    the stage's draft share), as a piecewise step's launches (_piecewise_stage). Each stage's share 1 / pp of the passes,
    their ops at DECODE_LAUNCH_S with the ranks' jitter at the draft's collectives, each piece's replay at GRAPH_PIECE_S."""
    dm, dops = _draft_ops(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, spec=spec)
    n, pieces = piecewise_launches(dm, dops)
    pp, k = np.asarray(sh.pp, float), np.asarray(k, float)
    host = decode_launch_host(k * n / pp, k * launches(_collectives(dops)) / pp, ranks) + k * pieces / pp * GRAPH_PIECE_S
    return parts._replace(draft_host=np.where(np.asarray(miss, bool), 0.0, np.maximum(host - kernels, 0.0)))


def ngram_propose_time(engine: Engine, b, ctx, k):
    """Seconds the host's prompt-lookup proposer (--spec ngram) adds to a step of `b` decoding sequences (per attention-DP
    rank: each rank's worker proposes for its own) at context `ctx`, where k > 0: Engine.ngram_host's fixed cost, per request,
    per request squared and per context token scanned (SGLang matches its trie's last 18 tokens). SGLang runs it between
    the target's steps, the GPU idle (its module cites where), so it is the step's draft time as a draft model's passes
    are; no draft kernels, launches or graph pieces. vLLM's default runner proposes on the GPU with no host matcher: 0
    (VLLMEngine.ngram_host)."""
    fixed, per_req, per_req2, per_tok = engine.ngram_host
    b, ctx = np.asarray(b, float), np.asarray(ctx, float)
    return np.where((np.asarray(k) > 0) & (b > 0), fixed + b * (per_req + per_req2 * b + per_tok * ctx), 0.0)


def ngram_scan_time(engine: Engine, gpu: Gpu, cal: Calibration, *, b, ctx, k):
    """Seconds the GPU's prompt-lookup scan (--spec ngram where Engine.ngram_gpu_scan: vLLM's default runner) adds to a step
    of `b` decoding sequences at context `ctx`, where k > 0: NgramGPUSpeculator.propose's two kernels, _ngram_scan_kernel
    over a grid of requests x max_model_len / 256 blocks, each block loading its 256 positions' tokens and the 5-token
    suffix, then _ngram_finalize_kernel over the blocks' scores (vllm/v1/worker/gpu/spec_decode/ngram/speculator.py:20-150,
    216-279@0.33.0 wheel): a memory-bound pass over each request's int32 token ids, 4 x ctx bytes a request, in 2 launches
    (cost.kernels.elementwise_time, the step's other memory-bound kernels' path); 0 elsewhere."""
    b, ctx = np.asarray(b, float), np.asarray(ctx, float)
    if not engine.ngram_gpu_scan:
        return 0.0 * b * ctx
    t, _, _ = elementwise_time(4.0 * b * ctx, 2.0, gpu, cal)
    return np.where((np.asarray(k) > 0) & (b > 0), t, 0.0)


def _draft_ops(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, spec: SpecDecoding):
    """(the draft model, one draft pass's operators) at `b` sequences of context `ctx`: a separate draft model on one
    pipeline stage, an MTP module or EAGLE-3 head on the target's plan."""
    dm = draft_model(model, spec)
    dsh = sh if spec.method != "draft" else replace(sh, pp=np.ones_like(np.asarray(sh.pp, float)))
    return dm, forward_ops(dm, gpu, costs.cal, spec.draft_precision(prec), dsh, b=Batch(dec_seqs=b, dec_ctx=ctx), engine=costs.engine)


def draft_pieces(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec: SpecDecoding):
    """(host ops, graph pieces) of a step's k draft passes as vLLM runs its drafter: PIECEWISE graphs of its own wherever
    the target's mixed mode has graphs (SpecDecodeBaseProposer.initialize_cudagraph_keys, "Only supports PIECEWISE
    cudagraphs", vllm/v1/spec_decode/llm_base_proposer.py:420-435@0.33.0 wheel; called for EAGLE / MTP and a draft
    model alike, v1/worker/gpu_model_runner.py:6801-6815), each pass dispatched as one (_determine_batch_execution_and_padding,
    :1773-1815; the first pass :570-596, the rest :668-754), so each pass launches the draft model's splitting ops
    between its pieces as the target's step does (piecewise_launches of the draft model): k x (ops, pieces). The
    proposer's Python between the passes (metadata, argmax) is not counted: vLLM's spec_worker_kernels are 0. Prompt lookup
    (ngram) runs no pass: (0, 0)."""
    if not spec.on_gpu:
        return 0.0, 0.0
    dm, dops = _draft_ops(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, spec=spec)
    n, pieces = piecewise_launches(dm, dops)
    k = np.asarray(k, float)
    return k * n, k * pieces


def _draft_launches(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec: SpecDecoding):
    """The kernel launches of a step's draft passes (_draft_passes' operators, counted as ops.launches counts the
    target's): k passes of the draft (an MTP pass with its module's input path), the first over the verified positions
    running the same operators as the rest, and the speculative worker's own kernels (ops.spec_worker_ops) for EAGLE-style
    drafting (MTP, EAGLE-3). Prompt lookup (ngram) launches none."""
    if not spec.on_gpu:
        return 0.0
    dm = draft_model(model, spec)
    dsh = sh if spec.method != "draft" else replace(sh, pp=np.ones_like(np.asarray(sh.pp, float)))
    dops = forward_ops(dm, gpu, costs.cal, spec.draft_precision(prec), dsh, b=Batch(dec_seqs=b, dec_ctx=ctx), engine=costs.engine)
    one = launches(dops)
    if spec.method == "mtp":
        one = one + launches(mtp_module_ops(dm, gpu, costs.cal, dsh, tokens=b, seqs=b, engine=costs.engine))
    k = np.asarray(k, float)
    if spec.method not in ("mtp", "eagle3"):
        return k * one
    worker = launches(spec_worker_ops(gpu, costs.cal, sh, engine=costs.engine, method=spec.method, k=k))
    return np.where(k > 0, k * one + worker, 0.0)


# Engines whose PP stages start a decode step's launches together: TensorRT-LLM's ranks each take the step's sampled
# tokens from a chain of small host messages (last -> 0 -> 1 ..., recv_object / isend_object) and launch the forward
# asynchronously, the activations' recv on the stream (_executor_loop_pp, _forward_step_inter_pp, tensorrt_llm/_torch/
# pyexecutor/py_executor.py@9521caf4), so a stage's launches run under the stages upstream and one micro-batch's pass pays
# one stage's excess over its kernels (eager_all / pp). vLLM's worker receives the previous stage's tensor dict before it
# launches its own forward, the dict's metadata over the CPU group, sent once that stage's host has launched its forward
# (get_pp_group().recv_tensor_dict, then send_tensor_dict after execute_model, vllm/v1/worker/gpu_worker.py@35d5cda1
# execute_model; SGLang's event_loop_pp receives its proxy tensors the same way before it launches, _pp_recv_proxy_tensors,
# managers/scheduler_pp_mixin.py, read through the search index, unpinned): the stages' hosts run one after another, so a
# host-bound pass pays every stage's excess, max(the hosts' sum, the kernels' sum) (eager_all)
PP_HOSTS_TOGETHER = frozenset({"trtllm"})


def _decode_kernels(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec):
    """decode_step's kernels: (the target's kernels' time, the draft passes' time, the target's operators, the kernels of
    every stage in turn and (their launches, the collectives among them): None where no plan has more than one stage)."""
    staged = bool(np.any(np.asarray(sh.pp) > 1))
    ops = forward_ops(model, gpu, costs.cal, prec, sh, b=Batch(dec_seqs=b, dec_ctx=ctx, dec_tokens_per_seq=1.0 + k), engine=costs.engine,
                      sample=True, all_stages=staged)
    ops, every = ops if staged else (ops, None)
    t_draft = 0.0 if spec is None else _draft_passes(model, gpu, prec, sh, costs=costs, b=b, ctx=ctx, k=k, spec=spec, ops=ops)
    return (kernels_time(ops, gpu, costs), t_draft, ops, None if every is None else kernels_time(every, gpu, costs),
            None if every is None else (launches(every), launches(_collectives(every)), every))


def _draft_passes(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, b, ctx, k, spec: SpecDecoding, ops=None):
    """The draft passes that propose k tokens for each of `b` decoding sequences at `ctx` (a decode step's, and a mixed
    step's for its decodes): their kernels' time. `ops`: the target's operators at this very decode batch (1 + k tokens
    a sequence) where the caller priced them (decode_step); else, for an MTP block in the target's precision, which is one of
    their layers, priced here (a mixed step's). Prompt lookup (ngram): its host proposer's time (ngram_propose_time) and
    its GPU scan's (ngram_scan_time), each 0 where the engine does not run one."""
    if not spec.on_gpu:
        return ngram_propose_time(costs.engine, b, ctx, k) + ngram_scan_time(costs.engine, gpu, costs.cal, b=b, ctx=ctx, k=k)
    cal = costs.cal
    dm = draft_model(model, spec)
    dsh = sh if spec.method != "draft" else replace(sh, pp=np.ones_like(np.asarray(sh.pp, float)))
    dprec = spec.draft_precision(prec)

    def draft_pass(sh_, b_, ctx_):
        # one draft pass over one token per sequence (an MTP pass with the module's input path,
        # ops.mtp_module_ops), and its LM head alone
        dops = forward_ops(dm, gpu, cal, dprec, sh_, b=Batch(dec_seqs=b_, dec_ctx=ctx_), engine=costs.engine)
        t_pass = kernels_time(dops, gpu, costs)
        if spec.method == "mtp":
            t_pass = t_pass + kernels_time(mtp_module_ops(dm, gpu, cal, sh_, tokens=b_, seqs=b_, engine=costs.engine), gpu, costs)
        return t_pass, kernels_time([op for op in dops if op.part == "lm_head"], gpu, costs)

    # a draft pass has no k in it: over a search's (plans, batches, k) grid it is priced once per
    # (plan, batch) wherever the sequences running are the same at every k (once_along_last)
    t_rest, head = draft_pass(dsh, b, ctx) if np.ndim(model.hidden) else once_along_last(draft_pass, dsh, b, ctx)
    if spec.method not in ("mtp", "eagle3"):
        return k * t_rest
    # EAGLE-style drafting (TensorRT-LLM's MTP in Eagle mode, its default for DeepSeek,
    # _torch/speculative/mtp.py; EAGLE-3 in TensorRT-LLM and vLLM): the first pass runs the draft
    # layer over every position the verify step checked (1 + k tokens per sequence), its LM head
    # over the one it samples; an MTP pass adds the module's input path and greedy sampling
    # (ops.mtp_module_ops)
    verify = Batch(dec_seqs=b, dec_ctx=ctx, dec_tokens_per_seq=1.0 + k)
    if spec.method == "mtp":
        if dprec is prec:  # the MTP block is the target's last layer type, priced in the target's operators at this very batch
            ops = forward_ops(model, gpu, cal, prec, sh, b=verify, engine=costs.engine) if ops is None else ops
            t_first = _last_layer_time(model, ops, gpu, costs) + head
        else:  # in a precision of its own (SpecDecoding.draft_precision): priced apart at this batch
            first = forward_ops(dm, gpu, cal, dprec, dsh, b=verify, engine=costs.engine)
            t_first = kernels_time([op for op in first if op.part != "lm_head"], gpu, costs) + head
        t_first = t_first + kernels_time(mtp_module_ops(dm, gpu, cal, dsh, tokens=b * (1.0 + k), seqs=b, engine=costs.engine), gpu, costs)
    else:
        first = forward_ops(dm, gpu, cal, dprec, dsh, b=verify, engine=costs.engine)
        t_first = kernels_time([op for op in first if op.part != "lm_head"], gpu, costs) + head
    # and the speculative worker's own small kernels around the passes (ops.spec_worker_ops: acceptance, gather indices,
    # metadata updates), none PDL-launched, so step_time, not kernels_time
    worker = step_time(spec_worker_ops(gpu, cal, sh, engine=costs.engine, method=spec.method, k=k))
    return np.where(k > 0, t_first + (k - 1.0) * t_rest + worker, 0.0)


def kernels_time(ops, gpu: Gpu, costs: EngineCosts, *, n_launches=None):
    """A step's kernels (ops.step_time) less what programmatic dependent launch overlaps at each
    boundary the engine PDL-launches: the sum of op_step_time's, taken whole (a search's hot path).
    `n_launches`: ops.launches(ops, pdl=True) where the caller has it already."""
    per = pdl_per_launch(gpu, costs)
    if not per:
        return step_time(ops)
    return np.maximum(step_time(ops) - per * (launches(ops, pdl=True) if n_launches is None else n_launches), 0.0)


def pdl_per_launch(gpu: Gpu, costs: EngineCosts) -> float:
    """Seconds programmatic dependent launch saves per kernel launch of this engine's steps on this GPU,
    on average over its boundaries (Engine.pdl_share x the profile's pdl_credit_s)."""
    return costs.engine.pdl_share(gpu.family) * costs.pdl_credit


def op_step_time(op, pdl_per_launch: float = 0.0, *, one_layer: bool = False):
    """An operator's time in a step (Op.total_time, over the layers of the stage that run it; with
    `one_layer`, one of them) less what PDL saves on its launches, never below zero: what a step, a
    breakdown and a bottleneck all read."""
    t = op.time if one_layer else op.total_time
    if not pdl_per_launch:
        return t
    # the launches PDL overlaps: those without its attribute (Op.no_pdl) get no credit
    pdl_kernels = np.asarray(op.kernels, float) - np.asarray(op.no_pdl, float)
    launches_ = pdl_kernels if one_layer else op.count * pdl_kernels
    time = np.asarray(op.time)
    if time.size and time.min() > 0:  # it runs at every element (a search's chunk): no mask, the same values
        # (a float64 array, not a Python float: a float32 time is promoted as the masked path's is)
        return np.maximum(t - np.asarray(pdl_per_launch * launches_, float), 0.0)
    return np.maximum(t - pdl_per_launch * np.where(time > 0, launches_, 0.0), 0.0)


def _last_layer_time(model: ModelSpec, ops, gpu: Gpu, costs: EngineCosts) -> object:
    """One layer of the model's last layer type in a step's operators (ops.forward_ops: per-layer times,
    shared halves priced once under the first group that has them), PDL's overlap off its launches:
    what one more such layer costs at that step's batch, as DeepSeek's MTP block does in the first
    draft pass."""
    last = model.groups[-1][0]
    ia = next(i for i, (layer, _) in enumerate(model.groups) if layer.attn == last.attn)
    jf = next(i for i, (layer, _) in enumerate(model.groups) if layer.ffn == last.ffn)
    per = pdl_per_launch(gpu, costs)
    # its attention half's operators, priced under group ia, and its FFN half's and elementwise work, under jf
    return sum(op_step_time(op, per, one_layer=True) for op in ops if op.group == (ia if op.part == "attention" else jf))


def prefill_step(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, tokens, isl, chunk,
                 dec_seqs=0.0, dec_ctx=0.0, cached=0.0, k=0.0, spec: SpecDecoding | None = None, idle: bool = False,
                 flags: SchedulerFlags | None = None):
    """One pipeline stage's step carrying `tokens` of prefill (whole prompts of `isl`, or chunks of
    `chunk` over the earlier ones) and `dec_seqs` decoding sequences at `dec_ctx`, each verifying its `k`
    drafts under `spec` and drafting the next k (decode_step's passes, their share of the stage as there): kernels, the
    engine's host cost per step and per running sequence (scheduling, sampling, detokenising and
    streaming each request's token), and a host cost per kernel launch at the pace of the stage's slowest
    rank (EngineCosts.eager_per_launch), as steps that carry prefill run eagerly (SGLang and TensorRT-LLM
    capture CUDA graphs for decode-only batches; vLLM's
    piecewise graphs leave attention outside). `isl` counts the prompt tokens computed; `cached` those
    of its prefix found in the prefix cache, which the computed ones attend to but nothing recomputes.
    Kernels are priced with costs.cal, the engine's in-step calibration. `idle`: the step runs on an idle engine (a
    lone request, a disaggregated prefill server between requests), where no earlier step's execution hides the host's
    dispatch of its launches (what an overlap scheduler does under load): the kernels and eager launches take at least
    n x idle_launch_s (EngineCosts.idle_launch; docs/modelling-notes.md#hostp-idle-prefill). `flags`: the run's (None: the
    engine's defaults), whose CUDA graphs say whether vLLM runs the step as graph pieces (mixed_piecewise)."""
    return prefill_step_parts(model, gpu, prec, sh, costs=costs, tokens=tokens, isl=isl, chunk=chunk, dec_seqs=dec_seqs, dec_ctx=dec_ctx,
                              cached=cached, k=k, spec=spec, idle=idle, flags=flags).step


class PrefillParts(NamedTuple):
    """One pipeline stage's step carrying prefill as prefill_step sums it (seconds, arrays over the deployments): the kernels,
    the host's cost per step and per running sequence, the eager launches, what an idle engine's dispatch adds beyond
    them, the draft passes of the decodes beside (their share of the stage)."""
    kernels: object
    host_step: object
    host_seq: object
    eager: object
    idle: object = 0.0
    draft: object = 0.0
    kernels_all: object = None  # every stage's kernels in turn (forward_ops all_stages); None: one stage (PP1)
    eager_all: object = 0.0  # every stage's eager launches in turn

    @property
    def step(self):
        # in this order: prefill_step's sum before its parts were kept (the same values bit for bit)
        return self.kernels + self.host_step + self.host_seq + self.eager + self.idle + self.draft

    def through(self, pp):
        """The step crossing every one of `pp` stages alone (one request's chunk, nothing beside it in the pipeline), in
        slowest-stage steps: the stages' sum (each layer once, the head once, each stage's host cost per step and per
        sequence, an idle engine's dispatch) over the slowest stage's step; pp where there is one stage
        (docs/modelling-notes.md#pp-stage-sum). The eager launches count once, one stage's share of eager_all, as in a
        decode iteration (StepParts._ring): each stage's host launches its layers before the activations reach its GPU,
        under the upstream stages' compute, whether the hosts start together (TensorRT-LLM) or one after another (vLLM,
        SGLang: PP_HOSTS_TOGETHER), since a stage's dispatch is shorter than the prefill kernels upstream of it
        (docs/modelling-notes.md#ppeager-eager). The idle dispatch (SGLang's alone, idle_launch_s) paces each stage where
        it binds, and SGLang's stages dispatch one after another: pp times."""
        pp = np.asarray(pp, float)
        if self.kernels_all is None:
            return pp
        ring = self.kernels_all + self.eager_all / pp + pp * (self.host_step + self.host_seq + self.idle + self.draft)
        return np.where(pp > 1, ring / np.maximum(self.step, 1e-30), pp)


def prefill_step_parts(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, tokens, isl, chunk,
                       dec_seqs=0.0, dec_ctx=0.0, cached=0.0, k=0.0, spec: SpecDecoding | None = None, idle: bool = False,
                       flags: SchedulerFlags | None = None) -> PrefillParts:
    """prefill_step's time in its parts (PrefillParts), which it sums."""
    b = prefill_batch(tokens=tokens, isl=isl, chunk=chunk, dec_seqs=dec_seqs, dec_ctx=dec_ctx, cached=cached, k=k)

    staged = bool(np.any(np.asarray(sh.pp) > 1))

    def kernels():
        ops = forward_ops(model, gpu, costs.cal, prec, sh, b=b, engine=costs.engine, sample=True, all_stages=staged)
        ops, every = ops if staged else (ops, None)
        # each launch pays its host cost; PDL's share of a boundary comes off those it may overlap (Op.no_pdl); under vLLM's
        # piecewise graphs the host launches the splitting ops and the pieces alone (mixed_piecewise)
        n, pw = launches(ops), sum(piecewise_launches(model, ops))
        if every is None:
            return kernels_time(ops, gpu, costs, n_launches=launches(ops, pdl=True)), n, None, None, pw, None
        n_all = launches(every)
        return (kernels_time(ops, gpu, costs, n_launches=launches(ops, pdl=True)), n,
                kernels_time(every, gpu, costs, n_launches=launches(every, pdl=True)), n_all, pw, sum(piecewise_launches(model, every)))

    t_kernels, n, t_all, n_all, pw, pw_all = _reused(kernels, what=("prefill",), model=model, gpu=gpu, prec=prec, sh=sh, costs=costs,
                                                     arrays=(b.pf_tokens, b.pf_seqs, b.pf_ctx, b.dec_seqs, b.dec_ctx, b.dec_tokens_per_seq))
    pieces = mixed_piecewise(costs.engine, gpu, sh, b, k=k, flags=flags)
    if np.any(pieces):  # the step's tokens within vLLM's capture: its splitting ops and pieces launched, not every kernel
        n, n_all = np.where(pieces, pw, n), (None if n_all is None else np.where(pieces, pw_all, n_all))
    per_launch = costs.eager_per_launch(stage_ranks(sh))
    eager = per_launch * n
    parts = PrefillParts(t_kernels, costs.step_overhead, costs.seq_overhead * (b.pf_seqs + dec_seqs), eager, kernels_all=t_all,
                         eager_all=0.0 if n_all is None else per_launch * n_all)
    if idle and costs.idle_launch:  # launches are asynchronous: the GPU waits on the host's dispatch where that is the longer
        parts = parts._replace(idle=np.maximum(costs.idle_launch * n - (t_kernels + eager), 0.0))
    decoding = np.asarray(dec_seqs) > 0
    if spec is None or not np.any(decoding):
        return parts
    # the step's decodes draft their next tokens as a decode step's do (vLLM runs its drafter on every step,
    # v1/spec_decode/eagle.py:384-560@0.19.0); its first pass over the prompt tokens too is not priced
    # (docs/modelling-notes.md#speculative-mixed-step)
    t_draft = _reused(lambda: _draft_passes(model, gpu, prec, sh, costs=costs, b=dec_seqs, ctx=dec_ctx, k=k, spec=spec),
                      what=("draft", spec), model=model, gpu=gpu, prec=prec, sh=sh, costs=costs, arrays=(dec_seqs, dec_ctx, k))
    return parts._replace(draft=np.where(decoding, t_draft, 0.0) / np.asarray(sh.pp, float))



def mixed_piecewise(engine: Engine, gpu: Gpu, sh: Plan, b: Batch, *, k, flags: SchedulerFlags | None = None):
    """Whether a step carrying prefill (`b`, prefill_batch's) runs vLLM's piecewise graphs: under its default
    FULL_AND_PIECEWISE (and PIECEWISE) a mixed or prefill batch, never a uniform decode one, dispatches to the PIECEWISE
    graphs captured for every size up to max_cudagraph_capture_size tokens and runs eagerly above it (CudagraphDispatcher.
    dispatch, vllm/v1/cudagraph_dispatcher.py:270-318@0.33.0 wheel: num_tokens > max_size -> NONE, the FULL keys only for
    uniform decode, the relaxed PIECEWISE key for the rest; keys :187-201; called for every step,
    v1/worker/gpu_model_runner.py:3684-3745). The capture in tokens: the run's padded cuda_graph_max_bs x (1 + k) where it
    sets one (0: graphs off), else the engine's default (default_capture, Engine.graphs_default: min(2 x max_num_seqs x
    (1 + k), 512, 1,024 on Blackwell) tokens); the step's tokens its prompt tokens and its decodes' 1 + k each. False on
    other engines (SGLang's piecewise prefill graphs are an experimental opt-in, --enable-piecewise-cuda-graph, not read
    here; TensorRT-LLM's PyTorch path runs a step carrying prefill eagerly)."""
    if engine.name != "vllm":
        return False
    fl = DEFAULT_FLAGS if flags is None else flags
    q = 1.0 + np.asarray(k, float)
    top, _ = default_capture(engine, gpu, sh, k=k, flags=fl)
    # a search's points (SEARCH_GRAPHS, inf: padded to each point's batch) as the engine's default, which their exports keep
    # where it covers the batch (point_graphs)
    g = np.asarray(fl.cuda_graph_max_bs, float)
    g = np.where(np.isinf(g), np.nan, g)
    tokens = np.asarray(b.pf_tokens, float) + np.asarray(b.dec_seqs, float) * np.asarray(b.dec_tokens_per_seq, float)
    return tokens <= np.where(np.isnan(g), top, g) * q


def idle_extra(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, pp, t_busy, **step):
    """What a step on an idle engine adds over the same step under load (`t_busy`, prefill_step's without `idle`), on each
    of `pp` pipeline stages, whose hosts dispatch one after another (docs/modelling-notes.md#hostp-idle-prefill): the
    one rule a cohort that finds the engine idle (idle_share: a lone request, a waves run's whole wave), a burst's wave and a
    disaggregated prefill server's lone prompt pay."""
    return pp * (prefill_step(model, gpu, prec, sh, costs=costs, idle=True, **step) - t_busy)

def prefill_batch(*, tokens, isl, chunk, dec_seqs=0.0, dec_ctx=0.0, cached=0.0, k=0.0) -> Batch:
    """The batch of prefill_step's step: `tokens` of prompts of `isl` (whole, or chunks of `chunk`
    over the earlier ones, half of them on average) after `cached` tokens, beside `dec_seqs` decodes of
    1 + `k` tokens each, a token and its k drafts verified as in a decode step (vLLM schedules a running request's
    draft tokens with it, num_tokens_with_spec, v1/core/sched/scheduler.py:404-411, 521-532@0.19.0; aiconfigurator's mixed
    step, decode_query_tokens, aic-core/.../sdk/backends/base_backend.py:1073@095f58a5)."""
    return Batch(pf_tokens=tokens, pf_seqs=np.maximum(tokens / isl, 1.0), pf_ctx=cached + np.maximum(isl - chunk, 0.0) / 2.0,
                 dec_seqs=dec_seqs, dec_ctx=dec_ctx, dec_tokens_per_seq=1.0 + k)


class _Rank(NamedTuple):
    """One attention-DP rank's requests, arrays over the deployments."""
    isl: object
    osl: object
    new: object  # prompt tokens each request prefills (its ISL less the cached prefix)
    cached: object
    budget: object  # the step token budget, the decodes' tokens included where the engine mixes them in
    k: object  # draft tokens a decoding request verifies: it takes 1 + k of a step's budget
    running: object  # sequences running at once
    pp: object
    # chunks of different requests pipeline over PP stages (running >= pp); one request's where the deployment states cpp
    # or the engine's scheduler does by default (Engine.pipelines_request_chunks: SGLang's)
    pipelined: object
    scheduler: tuple  # (the engine, the run's SchedulerFlags): how a step's budget goes to prompts (prompt_budget)
    inflight: object = 1.0  # requests in flight on the whole engine (the run's concurrency, every attention-DP rank's)
    ranks: object = 1.0  # attention-DP ranks

    def beside(self, decodes=0.0):
        """The prompt tokens a step takes beside `decodes` decoding requests: what their 1 + k tokens each leave (prompt_budget)."""
        engine, fl = self.scheduler
        return prompt_budget(self.budget, self.new, engine=engine, flags=fl, decode_tokens=decodes * (1.0 + self.k), cached=self.cached)

    @property
    def mnt(self):
        """The prompt tokens a step takes with no decode beside."""
        return self.beside()

    @property
    def chunk(self):
        """A request's prefill chunk."""
        return np.minimum(self.new, self.mnt)


@dataclass(frozen=True, kw_only=True)
class Serving:
    """What `evaluate` prices, as the serving model reads a deployment: one, or a search's many whose
    plan sizes, step budgets and draft lengths are arrays that broadcast. The engine is the object
    (its fitted costs read from the calibration evaluate is given); `max_num_tokens` is the step token
    budget (None: the engine's own on this GPU, Engine.step_tokens); `spec_k` the draft lengths to
    price (None: spec.k). `Serving.of` reads a Deployment."""
    gpu: Gpu
    prec: Precision
    plan: Plan
    engine: Engine = TRTLLM
    spec: SpecDecoding | None = None
    spec_k: object = None
    max_num_tokens: object = None
    cpp: object = False  # chunked pipeline parallelism for long-context prefill
    chunked_prefill: bool | None = None  # the deployment's launch option (Deployment.chunked_prefill); None: the engine's default
    kv_fraction: float | None = None  # the deployment's launch option (Deployment.kv_fraction); None: the engine's own
    cuda_graph_max_bs: int | None = None  # the deployment's CUDA graphs (Deployment.cuda_graph_max_bs); None: the engine's default
    piecewise_graphs: bool = False  # vLLM's piecewise decode graphs (Deployment.piecewise_graphs); False: one full graph
    # the launch's batch cap per attention-DP rank (Deployment.max_batch; a search's per batch, explore.search.file_capture,
    # inf where none); None: the engine's own
    max_batch: object = None

    @classmethod
    def of(cls, dep: Deployment) -> Serving:
        return cls(gpu=dep.gpu, prec=dep.precision, plan=dep.plan, engine=dep.engine, spec=dep.spec, max_num_tokens=dep.max_num_tokens,
                   cpp=dep.cpp, chunked_prefill=dep.chunked_prefill, kv_fraction=dep.kv_fraction, cuda_graph_max_bs=dep.cuda_graph_max_bs,
                   piecewise_graphs=dep.piecewise_graphs, max_batch=dep.max_batch)

    def flags(self, flags: SchedulerFlags | None) -> SchedulerFlags:
        """A run's flags with its deployment's launch options where it sets none (run_flags); under prompt lookup on an
        engine whose loop drops its overlap for it (Engine.ngram_overlap False: TensorRT-LLM's), no step queued ahead
        (queued_steps 0) where the run states none, on the rows that draft (k > 0): a search's k = 0 rows launch
        without speculation and keep the overlap loop (their own estimate's)."""
        fl = run_flags(flags, chunked_prefill=self.chunked_prefill, kv_fraction=self.kv_fraction, cuda_graph_max_bs=self.cuda_graph_max_bs,
                       max_batch=self.max_batch)
        if self.spec is not None and not self.spec.on_gpu and not self.engine.ngram_overlap:
            q, k = np.asarray(fl.queued_steps, float), draft_lengths(self.spec, self.spec_k)[0]
            fl = replace(fl, queued_steps=np.where(np.isnan(q) & (k > 0), 0.0, q))
        return fl


def evaluate(model: ModelSpec, at: Serving, *, cal: Calibration, concurrency, isl, osl, with_ops: bool = False, prefix_hit=0.0, arrival: str = DEFAULT_ARRIVAL, flags: SchedulerFlags | None = None,
             offline: bool = False) -> dict:
    """Metrics for every deployment in the broadcast of `at`'s arrays, concurrency (requests in flight over
    all its GPUs), ISL/OSL and k; the engine's fitted costs read from `cal` once (Engine.costs). `prefix_hit`:
    the share of each prompt in the prefix cache, not prefilled (each sequence still holds its whole ISL of KV
    cache). `arrival`: how requests reach the engine (spec.harness.ARRIVALS); `flags`: a run's scheduler flags; `offline`:
    every request queued at once (no front end, throughput over the batch's life), else a closed loop of C slots."""
    gpu, prec, plan, engine, spec = at.gpu, at.prec, at.plan, at.engine, at.spec
    sh, fl, costs = plan.broadcast(), at.flags(flags), engine.costs(cal)
    tp, pp, ep, moe_tp, adp, kvp = (np.asarray(x, float) for x in plan.arrays())
    gpus = tp * adp * kvp * pp
    C, isl, osl = (np.asarray(x, float) for x in (concurrency, isl, osl))
    cached = cached_tokens(isl, prefix_hit)
    new = isl - cached  # prompt tokens each request prefills
    k, acc = draft_lengths(spec, at.spec_k, osl)  # a step credits no more than a request has left (accepted_within)
    mnt, kv_budget = engine_budget(at.gpu, engine=at.engine, max_num_tokens=at.max_num_tokens, plan=at.plan, spec=at.spec, draft_len=k, chunked_prefill=at.chunked_prefill)
    mnt = mnt if flags is None else np.minimum(mnt, fl.max_prefill_tokens)  # SGLang's PrefillAdder: the smaller budget
    mem, cap, c_rank, running, admitted, unrounded = _running(model, gpu, prec, sh, C, adp=adp, engine=engine, lengths=(isl, osl), mnt=mnt, flags=fl, kv_budget=kv_budget, spec=spec, draft_len=k)
    mix = mixes(engine, fl, k) & (arrival != "burst")  # a burst prefills its wave before any decode: no prompt beside them
    # the arriving prompts at what they take off the budget (budget_charge, prompt_budget's rule)
    fill = budget_fill(mnt, new=budget_charge(new, cached, mnt, engine=engine), osl=osl, k=k, acc=acc, pp=pp, mixes=mix)
    running, admitted, unrounded = np.minimum(running, fill), np.minimum(admitted, fill), tuple(np.minimum(x, fill) for x in unrounded)
    time_share = admitted / np.maximum(running, 1.0)
    r = _Rank(isl, osl, new, cached, mnt, k, running, pp, np.asarray(at.cpp) | engine.pipelines_request_chunks | (running >= pp), (engine, fl), C, adp)
    wave_tok, t_wave_step, pf_span, wave_through = _prefill_wave(model, gpu, prec, sh, r=r, costs=costs, arrival=arrival)
    # a micro-batch's decodes (k + 1 tokens each), below pp a wave's all in one (micro_batches); ops kept only with_ops
    per_mb = running / micro_batches(running, pp, together=(together := offline or arrival != "closed_loop"))
    parts, t_draft, ops = _decode_stage(model, gpu, prec, sh, costs=costs, b=per_mb, ctx=isl + osl / 2.0, k=k, spec=spec, flags=fl,
                                        piecewise=at.piecewise_graphs)
    t_stage, ops, t_iter = parts.stage, ops if with_ops else None, parts.iteration(pp, running, together=together)
    t_wait = _first_wait(costs, fl, adp=adp, C=C, arrival=arrival, t_iter=t_iter)
    closed = arrival == "closed_loop" and not offline  # else in step: the time share whole, _in_step_priced's
    request = partial(_request_times, model, gpu, prec, sh, r=r, costs=costs, arrival=arrival,
                      steps=(t_stage, acc, time_share if closed else 1.0, t_wait, t_iter), wave=(wave_tok, t_wave_step, pf_span, wave_through), spec=spec)
    # a closed loop's cohort from the slot cycle its throughput uses, in its steps; offline, both take the wave's life (_cohort)
    work = partial(_work_cycle, admitted=admitted, osl=osl, t_iter=t_iter, acc=acc)
    q, t_pf_stage, ttft, tpot, life, said, t_req_pf = request(q=_closed_loop_cohort(request, r.running, osl, t_iter=t_iter, window=np.maximum(
        fl.recv_interval, 1.0), per_step=np.where(mix, acc / np.maximum(time_share, 1e-30), 0.0), work=work) if closed else None)
    ttft, tpot, life, ev = _in_step_priced(model, at, r, costs=costs, free=mem["free_for_kv"], times=(ttft, tpot, life, t_iter, acc, pf_span), arrival=arrival, offline=offline, admitted=admitted, unrounded=unrounded)
    time_share = (admitted := ev["admitted"]) / np.maximum(running, 1.0)  # kept in step past the cap, unrounded (_in_step_priced)
    life, ttft, behind, fronted = _cycle_bounds(life, ttft, tpot, osl, work=work(t_req_pf) if closed else None, front=None if offline or arrival == "burst" else admitted * costs.ttft_overhead)
    queued, served = _slot_queue(C, c_rank, admitted, adp=adp, life=life)
    ttft, out_per_gpu = ttft + queued, served * osl / life / gpus
    res = {
        "ttft_s": ttft, "tpot_s": tpot, "tok_s_per_user": 1.0 / tpot,
        # TTFT's wait for a slot (in ttft_s): what intervals.queued adds to the runs' band, none of which queued (a mix's, price_mix)
        "slot_queue_s": queued + 0.0 * ttft,
        "output_tok_s_per_gpu": out_per_gpu, "io_tok_s_per_gpu": served * (isl + osl) / life / gpus,
        "tokens_per_joule_at_tdp": out_per_gpu / gpu.tdp_w, "accepted_per_step": acc + 0.0 * tpot,
        "step_s": t_stage, "prefill_step_s": t_pf_stage, "draft_s": t_draft + 0.0 * t_stage, "gpus": gpus,
        **_memory_metrics(mem, running), **_budget_batch(engine, mnt, fill=fill, cap=cap, k=k, pp=pp, adp=adp),
        "max_concurrency": cap * adp, "kv_seqs": mem["max_seqs_per_rank"] * adp,  # what runs at once; what the KV cache alone holds
        # a rank given no token of the server's figure (Engine.rank_step_tokens) never prefills, nor one whose engine schedules
        # prompts whole a prompt over it: refused for one deployment (spec.plan.check_step_budget, check_whole_prompt), unfit here
        "fits": (mem["free_for_kv"] > 0) & (c_rank <= cap) & (mnt >= 1) & prompt_schedules(engine, fl.chunked_prefill, isl, mnt, stated=at.max_num_tokens is not None, osl=osl, kvp=kvp),
    }
    if with_ops:  # and the sums TTFT and TPOT were made of, as made (serve.estimate.step_rows, a breakdown's rows)
        res |= _phase_parts(model, gpu, prec, sh, costs=costs, r=r, steps=(wave_tok, t_wave_step, t_stage, t_draft, ops), share=pf_span / life) | {
            "step_parts": parts, "time_parts": said | {"pp": pp, "stages_per_iteration": t_iter / np.maximum(t_stage, 1e-30), "iteration": t_iter, "life": life, "iteration_ends": eager_iterations(parts, pp, running, together=together, hosts_in_turn=engine.name not in PP_HOSTS_TOGETHER), "iteration_parts": parts.iteration_parts(pp, running, together=together), "accepted": acc, "time_share": time_share, "slot_queue": queued, "prompt_queue": behind, "front_queue": fronted, "adp_hold": costs.adp_hold_steps(adp, C) * t_iter, "batch": per_mb, "queued_steps": fl.queued_steps, "evicted_ttft": ev["evicted_ttft"], "evicted_tpot": ev["evicted_tpot"], "shared_ttft": ev["shared_ttft"]}}
    return res


def _slot_queue(C, c_rank, admitted, *, adp, life):
    """(the wait for a slot: beyond what the engine admits a request waits whole waves; the requests served over the
    ranks: all C unless every rank is full, the busiest rank's counts over-counting where adp does not divide C)."""
    return np.maximum(c_rank / np.maximum(admitted, 1.0) - 1.0, 0.0) * life, np.minimum(C, admitted * adp)


def _first_wait(costs, fl: SchedulerFlags, *, adp, C, arrival: str, t_iter):
    """The decode iterations a new request first waits for: the running one's rest as its arrival sets it (a closed
    loop's whole step, a burst's none), the one an overlap scheduler queued ahead (EngineCosts.wait_steps), the
    attention-DP hold (AttentionDpConfig; none with fewer requests than ranks), and half the interval less one where the
    scheduler polls every recv_interval (its front end's work: _request_times)."""
    return (costs.wait_steps(adp, C, arrival, queued=fl.queued_steps, rounds=fl.rounds) + (np.maximum(fl.recv_interval, 1.0) - 1.0) / 2.0) * t_iter


def _cycle_bounds(life, ttft, tpot, osl, *, work, front):
    """The slot cycle held at the rank's `work` (_work_bound; None: not a closed loop) and then at the front end's
    `front` (_front_bound; None: a burst or offline). (cycle, TTFT, the prompt queue's wait, the front end queue's)."""
    life, ttft, behind = (life, ttft, 0.0 * ttft) if work is None else _work_bound(life, ttft, tpot, osl, work)
    life, ttft, fronted = (life, ttft, 0.0 * ttft) if front is None else _front_bound(life, ttft, front)
    return life, ttft, behind, fronted


def _front_bound(life, ttft, front):
    """A slot cycle held at the per-request cost's: each attention-DP rank serves its requests' cost (ttft_overhead) one
    at a time (_request_times prices (q + 1) / 2 of it for the rank's q arriving together; SGLang runs one scheduler
    process a rank, the DP controller sending each request to one, sglang 0.5.12 data_parallel_controller.py:571-606), so a
    rank admits at most 1 / ttft_overhead requests a second and the requests it runs at once (C / adp up to its admission
    cap; those beyond wait whole waves, evaluate's slot queue) cycle no faster than `front` = that many x ttft_overhead
    (Little's law); what the cycle grows by is a wait in that queue, added to the first token. (cycle, TTFT,
    that wait.) The rule is per rank, not per server: InferenceX's disaggregated SGLang prefill instances serve up to 78
    requests a second (8 ranks, ~10 each; 24.9 ms a request caps one queue at 40). A burst's one wave and an offline
    batch have no steady rate: their (q + 1) / 2 already serves the wave one at a time."""
    grown = np.maximum(np.asarray(front, float) - life, 0.0)
    return life + grown, ttft + grown, grown


def _work_bound(life, ttft, tpot, osl, work):
    """A closed loop's slot cycle held at its rank's work (`work`, _work_cycle's): the rank cannot refill its slots faster
    than it does their work, so Little's law sets the first token. (cycle, TTFT, the wait behind the other cohorts'
    prompts that adds to it)."""
    life = np.maximum(life, work)
    behind = np.maximum(life - np.maximum(osl - 1.0, 0.0) * tpot - ttft, 0.0)
    return life, ttft + behind, behind


def evaluate_for(model: ModelSpec, at: Serving, workload: Workload, *, cal: Calibration, concurrency) -> dict:
    """evaluate(with_ops=True) of `at` serving `workload` at `concurrency` requests in flight (an int or an
    array), as its metrics are priced (its prefix hits, the arrival it is priced at, offline where it
    names no load): the one call behind estimate's energy and bottlenecks (deployment_ops) and a
    frontier's energy and breakdowns (explore.search._frontier_priced)."""
    return evaluate(model, at, cal=cal, concurrency=np.asarray(concurrency, dtype=np.int64), isl=workload.isl, osl=workload.osl,
                    with_ops=True, prefix_hit=workload.prefix_hit, arrival=workload.priced_arrival, offline=workload.concurrency is None)


def read_only(r: dict) -> MappingProxyType:
    """A priced dict held by a cache, shared by whoever asks: read-only views of its arrays, its operator
    lists as tuples of operators whose arrays are read-only views (a lazy work/split is computed again
    when asked), the dict itself a MappingProxyType. A caller that wrote into one would change every later answer."""
    def ro(v):
        if isinstance(v, np.ndarray):
            v = v.view()
            v.flags.writeable = False
        return v

    def held(v):  # an operator's value, or its (work) or (split) pair; a function computing them is left to compute
        return tuple(ro(x) for x in v) if isinstance(v, tuple) else ro(v)

    def ops(seq):
        return tuple(op.replace(**{f: held(getattr(op, f)) for f in ("time", "count", "work", "split", "kernels")}) for op in seq)

    return MappingProxyType({k: ops(v) if k in ("ops", "prefill_ops") else ro(v) for k, v in r.items()})


def deployment_ops(model: ModelSpec, dep: Deployment, workload: Workload, *, cal: Calibration, concurrency) -> MappingProxyType:
    """evaluate_for of one deployment at `concurrency` (an int or an array), read only (read_only), the
    last _OPS_KEPT kept by their inputs: estimate prices its energy (serve.energy.energy) and its
    operators (serve.metrics.decode_operators) from the same evaluation. A deployment whose plan sizes
    are numpy arrays (Deployment takes them; estimate gives ints, serve.estimate._one_plan) is
    unhashable: priced without the cache, as before it."""
    c = np.asarray(concurrency, dtype=np.int64)
    try:
        hash((dep, workload))
    except TypeError:
        return read_only(evaluate_for(model, Serving.of(dep), workload, cal=cal, concurrency=c))
    return _deployment_ops(model, dep, workload, cal, shape=c.shape, raw=c.tobytes())


_OPS_KEPT = 8  # one reuse per estimate (its energy, then its operators), ~50 KB each (Llama-70B TP8, tracemalloc): a few estimates


@lru_cache(maxsize=_OPS_KEPT)
def _deployment_ops(model, dep, workload, cal, *, shape, raw) -> MappingProxyType:
    c = np.frombuffer(raw, dtype=np.int64).reshape(shape).copy()
    return read_only(evaluate_for(model, Serving.of(dep), workload, cal=cal, concurrency=c))


def _budget_batch(engine: Engine, mnt, *, fill, cap, k, pp, adp) -> dict:
    """Metrics.max_batch, the most requests that run at once: what the KV cache and the batch limit hold per rank (`cap`)
    and what a step decodes under its token budget `mnt`, its decode tokens (Engine.budget_batch, in `cap` too) and what
    the prompts arriving leave them (`fill`: budget_fill, inf where it bounds none); and whether the budget binds it."""
    sched = np.minimum(engine.budget_batch(mnt, k, pp), fill)
    return {"max_batch": np.minimum(cap, sched) * adp, "budget_binds": sched <= cap}


def run_flags(flags: SchedulerFlags | None, *, chunked_prefill: bool | None, kv_fraction: float | None = None,
              cuda_graph_max_bs: int | None = None, max_batch: int | None = None) -> SchedulerFlags:
    """The run's scheduler flags (None: the engine's defaults), the deployment's own launch options where the run
    sets none: its chunked prefill (Deployment.chunked_prefill), KV fraction (Deployment.kv_fraction; a run's
    rows may set theirs one by one, NaN where not), CUDA graphs (Deployment.cuda_graph_max_bs, likewise) and batch cap
    (Deployment.max_batch as max_running_requests, inf where a row sets none): what an aggregated and a disaggregated
    pool read alike."""
    fl = DEFAULT_FLAGS if flags is None else flags
    if fl.chunked_prefill is None and chunked_prefill is not None:
        fl = replace(fl, chunked_prefill=chunked_prefill)
    if kv_fraction is not None:
        fl = replace(fl, kv_fraction=np.where(np.isnan(fl.kv_fraction), float(kv_fraction), fl.kv_fraction))
    if cuda_graph_max_bs is not None:
        g = np.asarray(fl.cuda_graph_max_bs, float)
        fl = replace(fl, cuda_graph_max_bs=np.where(np.isnan(g), np.asarray(cuda_graph_max_bs, float), g))
    if max_batch is not None:
        b = np.asarray(fl.max_running_requests, float)
        fl = replace(fl, max_running_requests=np.where(np.isinf(b), np.asarray(max_batch, float), b))
    return fl


def mixes(engine: Engine, fl: SchedulerFlags, k):
    """Whether a step mixes prefill chunks into the running decodes, along the draft lengths `k`: the run's
    --enable-mixed-chunk where it sets one, else the engine's default (Engine.mixes_prefill), and never where a draft
    runs (k > 0) on an engine that turns mixing off under speculation (Engine.mixes_while_speculating: SGLang's)."""
    mix = np.asarray(engine.mixes_prefill if fl.mixed_chunk is None else fl.mixed_chunk, bool)
    return mix if engine.mixes_while_speculating else mix & (np.asarray(k) <= 0)


def budget_fill(mnt, *, new, osl, k, acc, pp, mixes):
    """The most requests per rank that decode under a step budget of `mnt` where the engine mixes prompts into the
    decodes' steps (inf where it does not): in steady state the decodes' 1 + k tokens each and the prompts arriving take
    the budget together. A micro-batch of d decodes completes d x acc / (OSL - 1) requests a step, and as many arrive,
    each with `new` prompt tokens (what each takes off the budget: its ISL where the engine counts the cached prefix,
    Engine.budget_counts_cached), so d (1 + k + acc new / (OSL - 1)) <= budget. vLLM schedules the running requests
    first and a waiting request's prompt gets min(its tokens, what they leave) (v1/core/sched/scheduler.py:383-517, 567,
    680@0.19.0; TensorRT-LLM's MicroBatchScheduler alike, docs/modelling-notes.md#budget-decode-batch); more decoding
    than this leaves the prompts a few tokens a step, which the steady state cannot keep up with: the arriving requests
    wait for decodes to end instead, as requests past the batch limit do (evaluate's waves ahead), never one-token steps
    (docs/modelling-notes.md#budget-fill)."""
    per = 1.0 + np.asarray(k, float) + np.asarray(acc, float) * np.asarray(new, float) / np.maximum(np.asarray(osl, float) - 1.0, 1.0)
    fill = np.asarray(pp, float) * np.maximum(np.floor(np.asarray(mnt, float) / per), 1.0)
    return np.where(mixes, fill, np.inf)


def _slot_cycle(ttft, tpot, osl):
    """A closed loop's request life (waves and closed_loop alike), what its throughput and a request queued for a slot
    see: each slot is refilled the moment its request ends, so a slot completes one request per first token and decode
    (Little's law; InferenceX's measured rows keep it within 3%): the first token's waits and the other requests'
    prefills in its decode steps (TPOT) take their share, where the wave's life counts only its prefill span and decode
    steps. Not a burst's (its slots idle until the wave's last request ends) nor an offline run's (every request queued,
    no front end: the batch's life)."""
    return ttft + np.maximum(osl - 1.0, 0.0) * tpot


def _work_cycle(t_req_pf, *, admitted, osl, t_iter, acc):
    """The shortest slot cycle a closed loop's rank can keep: the work its `admitted` requests need each cycle, done one
    after another on its GPUs: each one's prefill (`t_req_pf`: its prompt's share of its prefill steps, less the decode step
    it stands in for where the engine mixes, _own_prefill) and the (OSL - 1) / accepted decode iterations they share
    (`t_iter`). The cycle _slot_cycle makes of one request's first token and TPOT counts only its own cohort's prefill in
    the first token and the others' in its decode steps; at short outputs (OSL 1: no decode step at all) the other
    cohorts' prompts fall between the two, and a loop of 1,039 one-token requests on an MI300X came out 618k prefill
    tokens/s, ~7x its BF16 peak (review rev12b #1; docs/modelling-notes.md#osl1cl-work-cycle)."""
    return np.asarray(admitted, float) * t_req_pf + np.maximum(np.asarray(osl, float) - 1.0, 0.0) / acc * t_iter


def budget_charge(new, cached, budget, *, engine: Engine):
    """The tokens a prompt of `new` tokens past a `cached` prefix takes off a step budget of `budget`: its new tokens, or
    where the engine counts the cached prefix (Engine.budget_counts_cached: TensorRT-LLM) its whole prompt but no more
    than the budget, max(new, min(new + cached, budget)): a prompt counted past the budget is charged all of it and
    computes its new tokens in that chunk (setPrepopulatedPromptLen advances the chunk's start past the prefix, not its
    end), so a 32,768-token prompt 95% cached under an 8,192-token budget takes 8,192, not 32,768 (frev13). The one rule
    for prompt_budget (a step's prompts) and budget_fill (the prompts arriving in steady state)."""
    new = np.asarray(new, float)
    if not engine.budget_counts_cached:
        return new
    return np.maximum(new, np.minimum(new + np.asarray(cached, float), np.asarray(budget, float)))


def prompt_budget(mnt, new, *, engine: Engine, flags: SchedulerFlags = DEFAULT_FLAGS, decode_tokens=0.0, cached=0.0):
    """The prompt tokens one step takes under a step budget of `mnt` (per attention-DP rank) for prompts of `new` tokens,
    beside decodes taking `decode_tokens` of it: the budget they leave, never below zero, where the engine splits prompts
    into chunks (Engine.chunks_prefill, or the run's chunked_prefill flag), else the whole prompts that fit it,
    floor(left / new) x new: TensorRT-LLM without chunked prefill schedules a context request whole or stops, so a
    2,524-token budget takes two 1,024-token prompts, not 2.46, and a 9,692-token one a single 8,192-token prompt. A
    prompt longer than what the decodes leave is priced chunked into what they leave (so it was before); one longer
    than the whole budget TensorRT-LLM refuses: estimate refuses it (spec.plan.check_whole_prompt), a search drops it (`fits`);
    SGLang with chunking off (Engine.whole_prompt_refusal None) prices it whole, alone in its step (crev9 #9).

    The decodes come first: vLLM's Scheduler.schedule takes its RUNNING requests, 1 + draft tokens each, off
    token_budget before any waiting request's prompt, which gets what is left (v1/core/sched/scheduler.py:383-517, 567,
    680@0.19.0), and TensorRT-LLM's MicroBatchScheduler charges the generation requests ahead of the new context ones
    in its request order (docs/modelling-notes.md#budget-decode-batch); SGLang's PrefillAdder takes the running batch's
    size off both max_prefill_tokens and the chunk where it mixes (--enable-mixed-chunk: managers/scheduler.py:2038,
    schedule_policy.py:393-401@0.5.9; mixing is off under speculative decoding, server_args.py:2390). Where the decodes
    fill the budget no prompt token fits that step (0), as in the engines.

    A prompt's `cached` prefix (prefix-cache hits) takes budget where the engine counts it (Engine.budget_counts_cached:
    TensorRT-LLM charges the whole prompt before it finds the reused blocks): the prompts that fit are counted at
    new + cached and each computes its new tokens, so 8,129 left at ISL 1,024 half cached take 7 prompts, 3,584 tokens
    (vLLM, SGLang: 15 prompts, 7,680). A prompt counted past the budget left is charged all of it and computes at most its
    new tokens: its first chunk keeps its size past the prefix (setPrepopulatedPromptLen advances the start, not the end)."""
    chunks = engine.chunks_prefill if flags.chunked_prefill is None else np.asarray(flags.chunked_prefill, bool)
    mnt = np.maximum(np.asarray(mnt, float) - np.asarray(decode_tokens, float), 0.0)
    computed = np.asarray(new, float)
    # what a prompt takes off the budget: its new tokens, or its whole prompt where the engine counts the cached prefix,
    # at most the budget left (budget_charge)
    new = budget_charge(computed, cached, mnt, engine=engine)
    whole = np.floor(mnt / np.maximum(new, 1.0)) * new
    # an engine that serves a longer prompt unchunked, whole (no refusal: SGLang, whose PrefillAdder.add_one_req always
    # admits a prefill batch's first request, `if the can_run_list is empty, always accept the first prefill request`,
    # python/sglang/srt/managers/schedule_policy.py@00550cd; chunked prefill off: rem_chunk_tokens None), runs it alone
    # in its step: priced so where its chunked prefill is turned off, not in chunks of the budget (crev9 #9)
    alone = (~np.asarray(chunks, bool)) & (engine.whole_prompt_refusal is None) & (whole < np.maximum(new, 1.0))
    took = np.where(alone, np.maximum(new, 1.0), np.where(chunks | (whole < np.maximum(new, 1.0)), mnt, whole))
    # the prompts that fit compute their new tokens only; one that does not (its chunk, or its fallback above) computes at
    # most its new tokens, the step's budget spent on it (where nothing cached is counted, `took` as it was, bit for bit)
    return np.where(new == computed, took, np.where(new <= mnt, took * computed / np.maximum(new, 1.0), np.minimum(took, computed)))


def stage_ranks(sh: Plan):
    """The GPUs of a pipeline stage, which meet at every layer's collectives (TP, attention-DP and KV-parallel
    ranks): what an eager step's launches wait on (EngineCosts.eager_per_launch)."""
    return np.asarray(sh.tp, float) * np.asarray(sh.adp, float) * np.asarray(sh.kvp, float)


def default_capture(engine: Engine, gpu: Gpu, sh: Plan, *, k=0.0, flags: SchedulerFlags = DEFAULT_FLAGS, exported: bool = False):
    """The decode CUDA graphs `engine` captures where the run sets none (Engine.graphs_default: TensorRT-LLM's 1-32, 64
    and 128 unpadded; SGLang's by GPU memory and its tp_size, the stage's attention TP x attention-DP ranks; vLLM's
    max_cudagraph_capture_size from max_num_seqs, the run's max_running_requests where it sets one): (largest batch per
    rank, padded); `exported`: the export's release's (Engine.export_graphs_default)."""
    tp_size = np.asarray(sh.tp, float) * np.asarray(sh.adp, float)
    rule = engine.export_graphs_default if exported else engine.graphs_default
    return rule(gpu, tp_size, k=k, max_running=flags.max_running_requests)


def graph_misses(batch, fl: SchedulerFlags, default):
    """Whether a decode batch of `batch` sequences per rank runs eagerly: above the largest captured CUDA graph, or, where
    the capture does not pad, at a batch it did not capture. The run's cuda_graph_max_bs pads every batch up to it;
    where the run sets none (NaN) the engine's default capture applies (`default`, default_capture's). An unpadded capture
    holds TensorRT-LLM's generated sizes for its max m: 1-32, the powers of 2 from 64 below m, and m
    (CudaGraphConfig._generate_cuda_graph_batch_sizes, tensorrt_llm/llmapi/llm_args.py:236-255@00043967); a batch of
    fractional mean (a pipeline's micro-batches) is taken at its ceiling."""
    unset = np.isnan(np.asarray(fl.cuda_graph_max_bs, float))
    top, padded = default
    m = np.where(unset, top, fl.cuda_graph_max_bs)
    b = np.ceil(np.asarray(batch, float) - 1e-9)
    pow2 = (b >= 64.0) & (np.exp2(np.round(np.log2(np.maximum(b, 1.0)))) == b)
    listed = (b <= 32.0) | (b == m) | pow2
    return (b > m) | (unset & (not padded) & ~listed)


def _eager_misses(batch, fl: SchedulerFlags, *, default):
    """Where a decode batch runs outside the CUDA graphs (graph_misses, the engine's `default` capture where the run sets
    none). There the step adds the host's launches of its kernels (decode_launch_host) beyond the kernels' own time, which
    they run under. Every engine here launches a decode step while the GPU still runs the one before (TensorRT-LLM's
    _executor_loop_overlap, PyExecutor.__init__, tensorrt_llm/_torch/pyexecutor/py_executor.py@9521caf4; SGLang's overlap
    scheduler) and each launch returns before its kernel ends, so the step takes the longer of the two: max(host, kernels)
    = kernels + max(host - kernels, 0) (_decode_stage, docs/modelling-notes.md#ppeager-eager)."""
    top, padded = default
    if padded and np.all(np.isinf(top)) and not np.any(np.isfinite(fl.cuda_graph_max_bs)):  # every batch captured
        return np.zeros(np.shape(batch), bool)
    return np.asarray(graph_misses(batch, fl, default), bool)


def _eager_decode(batch, fl: SchedulerFlags, *, default, host, kernels):
    """What a decode batch the CUDA graphs miss (_eager_misses) adds to its stage's step: the host's launches (`host`,
    decode_launch_host) beyond the kernels (`kernels`) they run under, max(host - kernels, 0); 0 where captured."""
    return np.where(_eager_misses(batch, fl, default=default), np.maximum(host - kernels, 0.0), 0.0)


# A decode step's kernels launched one by one from Python (docs/modelling-notes.md#ppeager-eager): documented, not
# fitted (no campaign row decodes outside its graphs). The host's interval a launch in an eager PyTorch forward: ~35 us
# measured on TensorRT-LLM's PyTorch path (its kernels of ~24 us "shorter than CPU dispatch interval (~35us)",
# NVIDIA/TensorRT-LLM PR #12653, 2026-04-01). It is counted once per fused operator of ops.launches (the host's time a
# fused operator, standing for the unfused elementwise kernels an eager forward runs beside it too), not per kernel the
# graphs replay. Range 8-40 us: 8 the least a Python-launched kernel costs (Inductor's per-kernel launcher 7-9 us against
# the driver's 3, meta-pytorch/tritonbench PR #1017; Triton's JIT dispatch 8.68 us a call on GB200, vllm-project/vllm
# PR #34838); 40 has no source of its own: the PR's ~35 us rounded up (+14%), standing for a slower host than the PR's
# (searched 2026-12-06: the nearest measured host cost a launch, nvFuser's KernelExecutor::runFusion at 28.6-36.4 us a
# fusion on H200, NVIDIA/Fuser PR #3813, lies inside the range; none read above 40, docs/modelling-notes.md#eagerfix-eager-sides).
# SGLang's own eager reading (+0.9 ms a step at 8B TP1, sgl-project/sglang PR #1401) lies below the +3.3 ms this prices.
# Engine-independent: SGLang, vLLM (--enforce-eager) and ATOM run the same PyTorch eager forward outside their graphs.
DECODE_LAUNCH_S = 35e-6
DECODE_LAUNCH_RANGE_S = (8e-6, 40e-6)  # its documented range, as above (serve.eager's note, measure.intervals' eager term)
# The spread of that interval from launch to launch: ~2 us ("CPU jitter (~2us/launch)", the same PR); range 0-5 us
LAUNCH_JITTER_S = 2e-6
LAUNCH_JITTER_RANGE_S = (0.0, 5e-6)
def eager_iterations(parts: StepParts, pp, running, *, together, hosts_in_turn: bool) -> tuple:
    """The decode iteration (StepParts.iteration) with a missed step's launches priced at DECODE_LAUNCH_RANGE_S's ends
    (StepParts.at_launch: per stage, then the pipeline's ring or its stages' multiple, whichever binds there): (at 8 us, at
    40 us). Equal to the iteration where the graphs capture the step."""
    return tuple(parts.at_launch(end, pp, hosts_in_turn=hosts_in_turn).iteration(pp, running, together=together)
                 for end in DECODE_LAUNCH_RANGE_S)


def log_moves(now, ends) -> tuple:
    """(down, up): the log moves of a metric priced `now` that reads `ends` (lower, upper) at the launch cost's range's
    ends: ln(now / lower), ln(upper / now), each at least 0."""
    now = np.asarray(now, float)
    return np.maximum(np.log(now / np.asarray(ends[0], float)), 0.0), np.maximum(np.log(np.asarray(ends[1], float) / now), 0.0)


def eager_tpot_moves(tp: dict, *, tpot_s) -> tuple:
    """(down, up): TPOT's log moves with a missed decode step's launches at DECODE_LAUNCH_RANGE_S's ends, from evaluate's
    time_parts `tp`: TPOT = (iteration / accepted + the prompts' stall) x the decode slots' share (_decode_times), so
    TPOT(L) = TPOT + (iteration(L) - iteration) x share / accepted (eager_iterations). Both 0 where the kernels hide the
    launches at both ends."""
    per = np.asarray(tp["time_share"], float) / np.asarray(tp["accepted"], float)
    it = np.asarray(tp["iteration"], float)
    return log_moves(tpot_s, tuple(tpot_s + (e - it) * per for e in tp["iteration_ends"]))


def eager_ttft_moves(tp: dict, *, ttft_s, tpot_s, osl) -> tuple:
    """(down, up): TTFT's log moves with a missed decode step's launches at the range's ends. A prefill is not a decode
    step: its launches are priced at the prefill fit (eager_launch_s), so its span does not move. What does is the part of
    TTFT that waits out decode steps (the breakdown's first/wait_steps: the harness's arrival phase and the steps the
    scheduler queued ahead, in decode iterations, _first_wait), x iteration(L) / iteration, and the wait for a slot (first/slot_queue: whole
    requests finishing, queued / life of them), whose decode part moves by (OSL - 1) x TPOT's move. Left out: the front
    end's work hiding under a longer wait (an overstatement of both moves) and a closed loop's work bound (_work_bound)."""
    it, wait = np.asarray(tp["iteration"], float), np.asarray(tp["wait"], float)
    per = np.asarray(tp["time_share"], float) / np.asarray(tp["accepted"], float)
    queue = np.asarray(tp["slot_queue"], float) / np.maximum(np.asarray(tp["life"], float), 1e-30)
    moved = [ttft_s + wait * (e / it - 1.0) + queue * np.maximum(np.asarray(osl, float) - 1.0, 0.0) * (e - it) * per
             for e in tp["iteration_ends"]]
    return log_moves(ttft_s, tuple(moved))


def launch_range() -> str:
    """The per-launch host cost an eager decode step is priced at, with its documented range, in words (DECODE_LAUNCH_S,
    DECODE_LAUNCH_RANGE_S): the eager widening's and serve.eager's note's one wording."""
    lo, hi = (x * 1e6 for x in DECODE_LAUNCH_RANGE_S)
    return f"{DECODE_LAUNCH_S * 1e6:.3g} us a launch (documented, range {lo:.3g}-{hi:.3g} us)"


def _collectives(ops):
    """The operators of a stage's step that every rank of the stage meets at (TP / attention-DP collectives, the logits
    gather): its kind-"comm" operators but the pipeline's point-to-point hops, which join two stages."""
    return [op for op in ops if op.kind == "comm" and op.part != "pipeline"]


_Z = np.linspace(-9.0, 9.0, 3601)
_PHI = np.exp(-0.5 * _Z ** 2) / np.sqrt(2.0 * np.pi)
_CDF = np.array([0.5 * (1.0 + math.erf(z / math.sqrt(2.0))) for z in _Z])


def expected_max_normal(n):
    """E[max of n standard normal draws] (0 for n <= 1): the integral of z n phi(z) Phi(z)^(n-1), on a grid of 0.005
    (0.5642, 1.0294, 1.4236 for 2, 4, 8 to 1e-4), for every distinct n once."""
    n = np.maximum(np.asarray(n, float), 1.0)
    u, inv = np.unique(n, return_inverse=True)
    dens = u[:, None] * _PHI * _CDF ** (u[:, None] - 1.0)
    e = np.sum(_Z * dens, axis=1) * (_Z[1] - _Z[0])
    return np.where(u > 1.0, e, 0.0)[inv].reshape(n.shape)


def decode_launch_host(n, collectives, ranks):
    """The host's time to launch a decode step's `n` kernels on the slowest of a stage's `ranks`, which meet at each of
    its `collectives`. Each rank's process launches its own kernels at DECODE_LAUNCH_S a launch, each launch's interval
    varying by LAUNCH_JITTER_S, independently by rank; a collective completes only once its last rank has launched it, so
    each stretch between two collectives (n / c launches, spread sqrt(n / c) x the jitter) runs at its slowest rank's:
    c x sqrt(n / c) x jitter x E[max of N normal draws] = sqrt(n c) x jitter x e_N beyond n x the launch (e_1 = 0)."""
    n, c = np.asarray(n, float), np.asarray(collectives, float)
    return n * DECODE_LAUNCH_S + np.sqrt(n * c) * LAUNCH_JITTER_S * expected_max_normal(ranks)


def _request_times(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, r: _Rank, costs: EngineCosts, arrival: str, steps, wave,
                   spec: SpecDecoding | None = None, q=None):
    """A request's (q, prefill step, first token, TPOT, life, the parts they sum): its prefill (its step, and the steps' span before its
    first token, _own_prefill, after `steps`' wait in decode iterations and its front end's work) and decode (TPOT and
    life, _decode_times) as the harness delivers it: its `arrival` pattern, and the rank's engine and SchedulerFlags
    (_Rank.scheduler), whether the engine mixes prefill chunks into decodes (mixes); `spec`, the speculation its decodes run in
    a mixed step too; `q`, its cohort where the caller sized it (_closed_loop_cohort), else _cohort's."""
    engine, fl = r.scheduler
    t_stage, acc, time_share, t_wait, t_iter = steps  # t_iter: the decode iteration (StepParts.iteration)
    mix = mixes(engine, fl, r.k)
    q, t_pf_stage, span, t_req_pf, rest, parts = _own_prefill(model, gpu, prec, sh, r=r, costs=costs, n_span=np.maximum(wave[2] / t_iter, 1.0),
                                                       arrival=arrival, window=np.maximum(fl.recv_interval, 1.0), acc=acc, mixes=mix,
                                                       t_stage=t_stage, wave=wave[:2], rounds=fl.rounds, spec=spec, q=q,
                                                       wave_through=wave[3])
    tpot, life, others = _decode_times(r, q=q, t_stage=t_stage, t_iter=t_iter / acc, time_share=time_share, wave=wave, t_req_pf=t_req_pf,
                                       mixes=mix, rest=rest)
    # the per-request work outside the steps, paid (q + 1) / 2 times as if the q requests arriving together were served
    # one at a time (SGLang's server tokenises in one process, sglang 0.5.12 server_args.py:372, tokenizer_manager.py:708;
    # SGLang's fitted cost, data/calibration/fitted.toml [default.ttft_overhead_s], is not that: the clean sample's workers
    # skip it, ai-dynamo 0.9.0 dynamo/sglang/args.py:525-534, and it does not grow with the prompt; what it stands for is
    # open, docs/modelling-notes.md#sglang-request-cost: at its 24.9 ms 4,096 one-token requests together wait
    # 4,097 / 2 x 24.9 ms = 51 s on a B200). Served so, it also caps each attention-DP rank at 1 / cost requests a second
    # (_front_bound). In a closed loop (waves, closed_loop) a request is sent as its slot's last one returns, at a step's end, so its front end's work runs while the engine runs the steps it waits out
    # anyway and shows only beyond them; arrivals out of phase with the steps (burst) pay both
    # (docs/modelling-notes.md#request-overhead-overlap): only the phase part of t_wait (EngineCosts.phase_steps, the
    # arrival's: the running step's rest, and the poll interval's) hides it; the steps queued ahead and the attention-DP
    # hold start only once the request is in the engine's queue
    front = serial_front(costs.ttft_overhead, q)
    slack = (costs.phase_steps(arrival, fl.rounds) + (np.maximum(fl.recv_interval, 1.0) - 1.0) / 2.0) * t_iter
    before = front_end_wait(t_wait, front, slack=slack, overlaps=cost_overlaps(engine, arrival))
    # what the first token and TPOT sum, kept for a breakdown (evaluate's time_parts): the wait in decode steps, the front
    # end's work beyond what hides under it, the prefill steps' span; a token's share of the others' prompt steps and of
    # its cohort's prompts behind its own
    said = parts | {"prefill_span": span, "wait": t_wait + 0.0 * span, "front_end": before - t_wait, "prompt_stall": others[0],
                    "cohort_stall": others[1]}
    return q, t_pf_stage, span + before, tpot, life, said, t_req_pf


def serial_front(cost, q):
    """A request's share of the per-request work `cost` (ttft_overhead) at a rank that serves it one request at a time
    (SGLang runs one scheduler process a rank, sglang 0.5.12 data_parallel_controller.py:571-606), `q` the requests the
    request finds at its rank in the same burst or receive window, itself included: served in turn, the k-th waits k x
    cost, (q + 1) / 2 x cost on average (1, 2.5, 32.5 x cost at q = 1, 4, 64). The one queue _request_times (a rank's
    cohort) and serve.disagg.first_token (a burst at a prefill rank, serve.disagg.burst_at_rank) price. A q under one
    is a rank's mean load where a burst has fewer requests than ranks: a request reaching a rank is still there itself,
    and with nobody ahead pays its own cost once, never less: q is taken at 1 at least (docs/modelling-notes.md#disaggU-one-queue)."""
    return np.asarray(cost, float) * (np.maximum(np.asarray(q, float), 1.0) + 1.0) / 2.0


def cost_overlaps(engine: Engine, arrival: str) -> bool:
    """Whether `engine`'s per-request cost is front-end work that runs while the request's wait's phase runs:
    a closed loop (waves, closed_loop) sends a request as its slot's last one returns, at a step's end; a burst
    arrives out of phase with the steps and pays the cost on top."""
    return bool(engine.request_cost_overlaps_wait) and arrival in ("waves", "closed_loop")


def front_end_wait(wait, cost, *, slack, overlaps: bool):
    """A request's `wait` before its prefill and its front end's work `cost` (ttft_overhead): the request reaches
    the engine's queue after the work, then waits for the next batch formation and what follows, so the work hides
    only under `slack`, the phase part of the wait before the scheduler next forms a batch (the running step's rest):
    wait + max(cost - slack, 0) where it `overlaps` (cost_overlaps), else wait + cost. The one rule serve.aggregated
    and serve.disagg share."""
    cost = np.asarray(cost, float)
    return np.asarray(wait, float) + (np.maximum(cost - np.asarray(slack, float), 0.0) if overlaps else cost)


def _phase_parts(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, r: _Rank, steps, share) -> dict:
    """The decode step's operators (`ops`) and what the energy model (serve.energy) reads of a
    request's life: the operators of its wave's prefill step too, the share of each step its kernels
    fill (the rest is the host's: scheduling, launches), and the share of the life in prefill steps."""
    wave_tok, t_wave_step, t_stage, t_draft, ops = steps
    pf_ops = forward_ops(model, gpu, costs.cal, prec, sh, engine=costs.engine,
                         b=prefill_batch(tokens=wave_tok, isl=r.new, chunk=r.chunk, cached=r.cached))
    kernels_pf = kernels_time(pf_ops, gpu, costs)
    kernels_dec = kernels_time(ops, gpu, costs) + t_draft / r.pp  # draft passes: kernels too
    return {"ops": ops, "prefill_ops": pf_ops, "prefill_kernel_share": kernels_pf / np.maximum(t_wave_step, 1e-30),
            "decode_kernel_share": kernels_dec / np.maximum(t_stage, 1e-30), "prefill_time_share": share}


def max_running(model: ModelSpec, at: Serving, *, isl, osl) -> np.ndarray:
    """The most requests an attention-DP rank runs at once (the KV cache's or the engine's limit; 0
    where the cache has no room), as `evaluate` sizes them: a deployment whose busiest rank is given
    more does not fit (its `fits`). A search skips the batches no plan of a chunk holds."""
    plan, spec = at.plan, at.spec
    k, _ = draft_lengths(spec, at.spec_k)
    mnt, kv_budget = engine_budget(at.gpu, engine=at.engine, max_num_tokens=at.max_num_tokens, plan=at.plan, spec=at.spec, draft_len=k, chunked_prefill=at.chunked_prefill)
    mem, cap, *_ = _running(model, at.gpu, at.prec, plan.broadcast(), np.ones(1), adp=np.asarray(plan.adp, float), engine=at.engine,
                            lengths=(np.asarray(isl, float), np.asarray(osl, float)), mnt=mnt, kv_budget=kv_budget, spec=spec,
                            draft_len=k, flags=at.flags(None))
    return np.where((mem["free_for_kv"] > 0) & (mnt >= 1), cap, 0.0)  # (evaluate's fits)


def _running(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, C, *, adp, engine: Engine, lengths, mnt, kv_budget,
             spec: SpecDecoding | None = None, draft_len=None, flags: SchedulerFlags = DEFAULT_FLAGS):
    """The KV cache's fit (memory.fit, with the draft's weights and cache under `spec`) and the
    sequences per rank: the most that run at once (the cache or the engine's batch limit), those in
    flight on the busiest rank of the `C` requests, those running, and those admitted past their
    first token."""
    # the busiest attention-DP rank sets the step: requests spread over the ranks as evenly as they
    # go, so it holds ceil(C / adp), and a rank with none still runs the step on a dummy request to
    # join the MoE collectives (TensorRT-LLM PyExecutor._pad_attention_dp_dummy_request; SGLang runs
    # an idle forward): idle ranks never make a request faster
    c_rank = np.ceil(C / adp - 1e-9)
    isl, osl = lengths
    budget, own, occupancy = kv_budget
    fraction = kv_fraction_of(flags, own)
    # the batch cap the launch states (vLLM's --max-num-seqs, which also sizes its profile run's sampler warm-up: memory.
    # activation_bytes), else the engine's own (Engine.batch_limit)
    stated = flags.max_running_requests
    draft = {"spec": spec, "draft": draft_model(model, spec) if spec is not None else None, "max_seqs": engine.batch_limit(gpu, stated),
             "draft_len": draft_len, "engine": engine,  # a sweep's k = 0 loads no draft
             # the graph pool the run's capture holds (memory.activation_bytes); a capture padded up to whatever batch runs (a
             # search's, SEARCH_GRAPHS) is its export's, max_batch_size = the rank's requests (export_engines/trtllm.py)
             "graph_batch": np.where(np.isinf(np.asarray(flags.cuda_graph_max_bs, float)), c_rank, flags.cuda_graph_max_bs)}
    mem = memory.fit(model, gpu, prec, sh, isl, osl=osl, max_num_tokens=mnt, usable_fraction=fraction, osl_occupancy=occupancy, budget=budget,
                     **draft)
    # sequences that run at once per rank: what is in flight, capped by the KV cache, by the engine's
    # batch limit as the launch states it (Engine.batch_limit; requests beyond it wait, as beyond the cache) and by the
    # step token budget where it counts the decodes (Engine.budget_batch: 1 + draft tokens each)
    bcap = engine.batch_limit(gpu, stated, mem["free_for_kv"] / np.maximum(mem["kv_per_token"], 1e-9), model.max_context)
    bcap = np.minimum(bcap, engine.budget_batch(mnt, 0.0 if draft_len is None else draft_len, sh.pp))
    cap = np.where(mem["max_seqs_per_rank"] >= 1, np.minimum(mem["max_seqs_per_rank"], bcap), mem["max_seqs_per_rank"])
    running = np.where(cap >= 1, np.minimum(c_rank, cap), c_rank)
    # `runs` and `admits`: the running and the admitted unrounded (the cache's bytes over a sequence's, over a reservation's),
    # for requests kept in step past the cap (_in_step_priced): one prompt's blocks more or less move them by as much
    whole = partial(np.minimum, c_rank)
    runs = np.where(cap >= 1, whole(np.minimum(np.maximum(mem["free_for_kv"], 0.0) / np.maximum(mem["kv_per_seq"], 1e-9), bcap)), c_rank)
    # requests past their first token: engines that admit on less than a request's whole KV footprint
    # (Engine.admission) take in up to what fits with that reservation, and the admitted requests then
    # share the decode slots (preempted and resumed); the rest queue for whole requests to finish
    rule = engine.admission
    admitted = admits = running
    if rule is not None:
        share, clip = rule
        adm_occ = share * np.minimum(osl, clip) / np.maximum(osl, 1.0)
        adm = memory.fit(model, gpu, prec, sh, isl, osl=osl, max_num_tokens=mnt, usable_fraction=fraction, osl_occupancy=adm_occ,
                         budget=budget, **draft)
        admitted, admits = (np.where(cap >= 1, whole(np.minimum(np.maximum(a, cap), bcap)), c_rank) for a in (
            adm["max_seqs_per_rank"], np.maximum(adm["free_for_kv"], 0.0) / np.maximum(adm["kv_per_seq"], 1e-9)))
        # requests that ignore EOS are admitted with their whole output reserved
        ignoring = np.asarray(flags.ignore_eos, bool) & engine.reserves_all_ignoring_eos
        admitted, admits = (np.where(ignoring, running, a) for a in (admitted, admits))
    return mem, cap, c_rank, running, admitted, (runs, admits)


def _wave_idle(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, r: _Rank, costs: EngineCosts, arrival, wave) -> object:
    """What a burst's wave pays for reaching an idle engine: its first step, on every stage (serve.disagg.prefill_pool's
    rule), has no step to launch under (prefill_step's `idle`), and every request of the wave waits behind it, so the
    wave's life (throughput, _prefill_wave) and each request's first token (_own_prefill) take it alike
    (docs/modelling-notes.md#revfix7-idle). 0 for other arrivals and engines without the figure."""
    if arrival != "burst" or not costs.idle_launch:
        return 0.0
    wave_tok, t_wave_step = wave
    return idle_extra(model, gpu, prec, sh, costs=costs, pp=r.pp, t_busy=t_wave_step, tokens=wave_tok, isl=r.new, chunk=r.chunk,
                      cached=r.cached, flags=r.scheduler[1])


def _prefill_wave(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, r: _Rank, costs: EngineCosts, arrival=DEFAULT_ARRIVAL):
    """A wave's prefill phase: every running sequence's prompt in chunks of the step budget; returns
    (tokens per step, the step's time, the phase's span over the pipeline, a burst's idle first step in it, _wave_idle;
    the step through every stage alone in slowest-stage steps, PrefillParts.through, pp where the steps stream)."""
    wave_tok = np.minimum(r.mnt, r.running * r.new)
    n_wave = r.running * r.new / np.maximum(wave_tok, 1.0)

    def price(sh_, tokens, isl, chunk, cached):
        return prefill_step(model, gpu, prec, sh_, costs=costs, tokens=tokens, isl=isl, chunk=chunk, cached=cached, flags=r.scheduler[1])

    def below_cap(sh_, tokens, cap, *args):  # once_at_cap as once_along_last prices: a tuple
        return (once_at_cap(price, sh_, tokens, cap, *args),)

    if np.ndim(model.hidden):  # a design's array of shapes: the price varies along their axes too
        t_wave_step = price(sh, wave_tok, r.new, r.chunk, r.cached)
    else:
        # a wave's prefill has no k in it: priced at k's first column and again only where the
        # sequences running differ along k (once_along_last), each column once per plan where it
        # fills the budget (once_at_cap)
        t_wave_step, = once_along_last(below_cap, sh, wave_tok, r.mnt, r.new, r.chunk, r.cached)
    through = r.pp
    if np.any(~np.asarray(r.pipelined, bool) & (np.asarray(r.pp) > 1)):  # steps that cross the stages alone: their sum
        through = prefill_step_parts(model, gpu, prec, sh, costs=costs, tokens=wave_tok, isl=r.new, chunk=r.chunk,
                                     cached=r.cached, flags=r.scheduler[1]).through(r.pp)
    span = _over_pipeline(r, n_wave, through) * t_wave_step
    return (wave_tok, t_wave_step, span + _wave_idle(model, gpu, prec, sh, r=r, costs=costs, arrival=arrival, wave=(wave_tok, t_wave_step)),
            through)


def over_pipeline(n, *, pp, pipelined, through=None):
    """Stage times n steps take through `pp` pipeline stages: n + pp - 1 where they stream through the stages (`pipelined`:
    different requests' chunks, or one request's where the engine's scheduler or the deployment's cpp pipelines them,
    _Rank.pipelined), n x `through` where each step crosses every stage alone (PrefillParts.through: the stages' sum over the
    slowest stage's step; None: pp, every stage as slow as the slowest). An aggregated rank's prefill and a disaggregated
    prefill pool's (serve.disagg.prefill_pool) read it alike."""
    return np.where(pipelined, n + pp - 1.0, n * (pp if through is None else through))


def _over_pipeline(r: _Rank, n, through=None):
    """over_pipeline on the rank's stages and its pipelining."""
    return over_pipeline(n, pp=r.pp, pipelined=r.pipelined, through=through)


def pipeline_note(dep: Deployment, isl: int, *, prefix_hit: float = 0.0) -> str | None:
    """How one request's prefill chunks cross a pipeline-parallel instance, as priced (over_pipeline, _Rank.pipelined and
    serve.disagg.prefill_pool's): pipelined over the stages where the deployment states cpp or the engine's scheduler does
    so by default (Engine.pipelines_request_chunks: SGLang's), else one after another. None without PP, with chunked
    prefill off, or where the prompt's computed tokens take one chunk."""
    pp = int(np.asarray(dep.plan.pp).reshape(-1)[0])
    if pp <= 1 or dep.chunked_prefill is False or (dep.chunked_prefill is None and not dep.engine.chunks_prefill):
        return None  # prompts scheduled whole
    chunk = int(np.asarray(dep.rank_step_tokens).reshape(-1)[0])
    n = int(np.ceil(isl * (1.0 - prefix_hit) / max(chunk, 1)))
    if n <= 1:
        return None
    head = f"one request's {n:,} prefill chunks of {chunk:,} tokens"
    if dep.engine.pipelines_request_chunks:
        return (f"{head} pipelined over its {pp} PP stages: {dep.engine.title}'s scheduler does so by default (chunked pipeline "
                "parallelism, no flag); no bundled run measures it")
    if dep.cpp:
        return f"{head} pipelined over its {pp} PP stages, as --cpp states (no {dep.engine.title} launch option runs it)"
    return (f"{head} cross its {pp} PP stages one after another: {dep.engine.title} pipelines only different requests' "
            "chunks (SGLang's scheduler pipelines one request's by default)")



def closed_loop_batch(running, *, life, window=1.0):
    """The requests one prefill batch carries in a closed loop's steady state: the request and those
    arriving in the same receive window. Each of the `running` slots is refilled once per request life
    (`life` decode iterations), so running / life arrive per iteration, window x running / life beside
    it (Poisson-like arrivals: the expected others in the window); never more than are running."""
    return np.minimum(1.0 + window * np.asarray(running, float) / np.maximum(life, 1.0), np.maximum(running, 1.0))


# bisection passes on log q (_closed_loop_cohort): q within running^(2^-11) of where the cycle's arrivals meet it, 0.3% at 256
COHORT_PASSES = 10


def _closed_loop_cohort(request, running, osl, *, t_iter, window, per_step, work=None):
    """A closed loop's cohort in steady state, sized from the slot cycle its throughput uses (_slot_cycle: Little's law,
    each slot refilled once per first token and decode): the q whose cycle, in decode iterations of `t_iter`, has
    closed_loop_batch give q back (`request(q=...)`: _request_times at a cohort of q). The wave's life (_cohort, offline) leaves
    the first token's waits (the front end's (q + 1) / 2 requests, the scheduler's wait steps, its own prefill) out of the
    cycle, which at short outputs are most of it: arrivals counted too close, a cohort too large (Llama-3.1-70B TP8 H200,
    TensorRT-LLM, 256 requests of 128 in / 16 out: TPOT 62% apart). A cohort of 1 implies at least 1 arriving and one of
    `running` at most `running`, so bisection on log q between them finds where they meet.

    The cycle counts in its steps' mean time, not `t_iter`'s: where the engine mixes (`per_step`: the tokens a request gets
    a step, accepted / time share, its decode steps a TPOT x per_step each), nearly every step of the cycle carries
    others' prompts and is longer than a decode-only one, so counted in decode iterations the arrivals a step came out
    too few (TensorRT-LLM's 70B case above: 1.46 a step rather than ~1.9), cohorts too small and prefill steps too many.
    Where it does not (`per_step` 0), its prefill steps are steps of their own beside the decode iterations, which `t_iter`
    counts."""
    lo, hi = np.ones(np.shape(running)), np.maximum(running, 1.0)
    for _ in range(COHORT_PASSES):
        mid = np.sqrt(lo * hi)
        got = request(q=mid)
        ttft, tpot = got[2:4]
        step = np.where(per_step > 0, np.maximum(tpot * per_step, t_iter), t_iter)
        # the cycle no shorter than its rank's work (_work_cycle): else a one-token loop counts arrivals too close
        cycle = _slot_cycle(ttft, tpot, osl) if work is None else np.maximum(_slot_cycle(ttft, tpot, osl), work(got[6]))
        up = closed_loop_batch(running, life=cycle / step, window=window) > mid
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return np.sqrt(lo * hi)


def _cohort(r: _Rank, *, arrival: str, mixes, share, n_span, step_tok, acc=1.0, window=1.0):
    """The requests whose prefills share steps with a request's, itself included (q), by the arrival pattern
    (spec.harness.ARRIVALS):
    - "waves": a closed loop of identical requests (one ISL, one OSL, ignore-EOS) that starts as a burst
      (aiperf as aiconfigurator runs it: data/measurements/campaigns.toml). The first wave's prefill sets
      the cohorts: a request's first token and, with identical lengths, its last come in the step its
      prompt completes, so those completing together refill their slots together, round after round. An
      engine that mixes prefill chunks into decode steps (`mixes`) streams the burst through at the step
      budget, the first wave's decodes starting a step apart: a cohort is the prompts one step completes beside
      the rest of the wave's decodes, q_c = `step_tok` / new (`step_tok`: the prompt tokens such a step takes,
      prompt_budget; at least one; a longer prompt alone over several steps). One that runs prefill
      batches first and decodes only when none is waiting (SGLang, ATOM by default) prefills the whole
      wave before any decode, so it stays one cohort: q_c = running. The measured runs bunch more than
      the cohorts alone: a `share` d of the rest of the wave (prefill_queue_fraction, fitted per engine,
      0-1; 0: the cohorts kept exactly, 1: the whole wave in lockstep) re-arrives with a cohort, q = q_c +
      d (running - q_c), the drift of arrivals the harness's and front end's timing does not pin (what
      merges cohorts was not found in the engines' or aiperf's source; docs/accuracy.md#assumptions).
    - "burst": every wave sent at once and kept in lockstep: q = running.
    - "closed_loop": arrivals spread out in steady state, running / life per decode iteration (life: the
      prefill span `n_span` and the decode iterations of a request, (OSL - 1) / `acc`: an offline run's, whose
      throughput takes the same life; evaluate sizes the served loop's from its slot cycle, _closed_loop_cohort), and
      those arriving within the scheduler's receive window (`window` iterations: 1, or SGLang's recv_interval) share one
      prefill batch: q = 1 + window x running / life."""
    if arrival == "closed_loop":
        return closed_loop_batch(r.running, life=n_span + np.maximum(r.osl - 1.0, 0.0) / acc, window=window)
    whole = np.maximum(r.running, 1.0)
    if arrival == "burst":
        return whole
    q = np.where(mixes, np.clip(step_tok / np.maximum(r.new, 1.0), 1.0, whole), whole)
    return q + share * (whole - q)


def idle_share(q, *, inflight, ranks, arrival: str):
    """The share of a request's arrivals that find the engine idle, so that its cohort's first prefill step has no step
    before it to launch under (prefill_step's `idle`): 1 - the requests in flight outside its cohort, within 0-1 (1 where
    none is, 0 where one or more always is: the mean of those outside the cohort, read as the chance one is). Under "waves"
    a cohort re-arrives together on every attention-DP rank (identical requests on ranks that step together: _cohort), so
    the engine's others are the `inflight` requests less q on each of the `ranks`; under "closed_loop" the ranks' arrivals
    are spread, so they are inflight - q. A burst's wave is priced on its own (_wave_idle): 0. One rule from one request
    (a cohort of 1, nothing else in flight: 1) to a whole wave, so that a second request in the wave never takes the idle
    step away from the first (docs/modelling-notes.md#mono2-idle-cohort)."""
    if arrival == "burst":
        return np.zeros(np.shape(q))
    q = np.asarray(q, float)
    cohort = q * np.asarray(ranks, float) if arrival == "waves" else q
    return np.clip(1.0 - (np.asarray(inflight, float) - cohort), 0.0, 1.0)


def _steps_to_first_token(q, new, step_tok):
    """The prefill steps (of `step_tok` tokens) a request waits for its first token, on average over the q prompts
    of `new` tokens served first come first served: prompt i ends in step ceil(i new / step_tok) and gets its first
    token when that step ends, (q + 1) / 2 x new / step_tok + 1/2 steps on average, never more than the q prompts'
    whole work (the last step partial, counted at its share) and at least one step. Without the half step a prompt
    that shares its step with those ahead of it would seem to finish where its own tokens do, so shorter prompts
    (prefix hits) could come out slower than longer ones."""
    per = new / np.maximum(step_tok, 1.0)
    return np.maximum(np.minimum((q + 1.0) / 2.0 * per + 0.5, q * per), 1.0)


def _own_prefill(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, r: _Rank, costs: EngineCosts, n_span, arrival, window, acc,
                 mixes, t_stage, wave, rounds, spec: SpecDecoding | None = None, q=None, wave_through=None):
    """A request's prefill: (q, the step's time, the steps' span over the pipeline before its first
    token, the time one request's prefill adds to the steps of the requests decoding, the time it waits
    after its first token for the rest of its cohort's prefill, the span's parts). Its chunks share steps with the prefills
    of the q - 1 requests arriving with it (`q` where the caller sized it, else _cohort), served first come first served in steps of
    min(budget, q x new) tokens: one step where they fit, else until the end of the step its prompt ends in
    (_steps_to_first_token). Steps count fractionally: a partial chunk costs its share of a full one. An engine that mixes
    runs the running - q other requests' decodes in those steps, their 1 + k tokens each off the step's budget before the
    prompts' (_Rank.beside) and verified and drafted in the step as in
    a decode step (prefill_step, under `spec`); one that does not leaves them, and the
    cohort's requests already prefilled, waiting until the cohort's last prompt is done. Under "waves" the
    first wave (a share 1 / `rounds` of the requests: SchedulerFlags.rounds) is the burst itself, every
    request behind the prompts queued ahead of it at the wave's step (`wave`: its tokens and time)."""
    closed = arrival == "closed_loop"
    beside = r.beside  # the prompt tokens a step takes beside a micro-batch's decodes: what their tokens leave
    if q is None:  # a cohort: the prompts one step completes beside the others' decodes (the wave's but its own)
        q = _cohort(r, arrival=arrival, mixes=mixes, share=costs.queue_fraction, n_span=n_span, acc=acc, window=window,
                    step_tok=np.where(mixes, beside(np.maximum(r.running - 1.0, 0.0) / r.pp), r.mnt))
    # the running - q requests that arrived out of step decode inside those prefill steps where the engine mixes them
    dec = np.where(mixes, np.maximum(r.running - q, 0.0) / r.pp, 0.0)
    step_tok = beside(dec)
    pf_step_tok = np.minimum(step_tok, q * r.new)
    n_pf = _steps_to_first_token(q, r.new, pf_step_tok)
    pf = prefill_step_parts(model, gpu, prec, sh, costs=costs, tokens=pf_step_tok, isl=r.new, chunk=np.minimum(r.new, step_tok),
                            dec_seqs=dec, dec_ctx=r.isl + r.osl / 2.0, cached=r.cached, k=r.k, spec=spec, flags=r.scheduler[1])
    t_pf_stage = pf.step

    through = pf.through(r.pp)  # a step crossing the stages alone: their sum, in slowest-stage steps
    own = _over_pipeline(r, n_pf, through)  # its own steps' stage times
    # a burst's wave pays its idle first step for every request of it (_wave_idle)
    idle = _wave_idle(model, gpu, prec, sh, r=r, costs=costs, arrival=arrival, wave=wave)
    share = idle_share(q, inflight=r.inflight, ranks=r.ranks, arrival=arrival)
    if costs.idle_launch and np.any(share > 0):
        # a cohort that finds the engine idle (idle_share) has no step before its first one to launch under (prefill_step's
        # `idle`), on every pipeline stage, whose hosts dispatch one after another (serve.disagg.prefill_pool); its later
        # chunks launch under the one before, as under load (docs/modelling-notes.md#hostp-idle-prefill, #revfix7-idle,
        # #mono2-idle-cohort)
        extra = idle_extra(model, gpu, prec, sh, costs=costs, pp=r.pp, t_busy=t_pf_stage, tokens=pf_step_tok, isl=r.new, flags=r.scheduler[1],
                           chunk=np.minimum(r.new, step_tok), dec_seqs=dec, dec_ctx=r.isl + r.osl / 2.0, cached=r.cached, k=r.k, spec=spec)
        idle = idle + share * extra  # (a burst's wave idle, else 0: the one of the two that is paid)
    span = own * t_pf_stage + idle
    # after its first token a request of a cohort prefilled on its own waits for the cohort's prompts behind it: the
    # steps after its own, through the pipeline as the cohort's steps stream (one stage time each where they stream)
    whole = np.maximum(q * r.new / np.maximum(pf_step_tok, 1.0), n_pf)
    rest = np.where(mixes, 0.0, (_over_pipeline(r, whole, through) - _over_pipeline(r, n_pf, through)) * t_pf_stage)
    burst = 0.0
    if arrival == "waves":
        # the first wave: all running requests at once, prefilled at the wave's step (every one of them, no decode
        # beside), each behind the (running + 1) / 2 prompts ahead of it on average; 1 / rounds of the requests
        wave_tok, t_wave_step = wave
        n_burst = _steps_to_first_token(np.maximum(r.running, 1.0), r.new, wave_tok)
        first = 1.0 / np.maximum(rounds, 1.0)
        span = (1.0 - first) * span + first * _over_pipeline(r, n_burst, wave_through) * t_wave_step
        q = (1.0 - first) * q + first * np.maximum(r.running, 1.0)
        own, idle, burst = (1.0 - first) * own, (1.0 - first) * idle, first * _over_pipeline(r, n_burst, wave_through) * t_wave_step
    # what one request's prefill adds to the others' decode (closed loop: its own batch's step, less the decode
    # step it stands in for where the engine mixes; otherwise the wave's step, _decode_times)
    t_req_pf = (np.maximum(t_pf_stage - np.where(mixes, t_stage, 0.0), 0.0) * r.new / np.maximum(pf_step_tok, 1.0)) if closed else None
    return q, t_pf_stage, span, t_req_pf, rest, _span_parts(pf, own=own, idle=idle, burst=burst, span=span, r=r, through=through)


def _span_parts(pf: PrefillParts, *, own, idle, burst, span, r: _Rank, through) -> dict:
    """A first token's prefill span in its parts (evaluate's time_parts; they sum to `span`): its `own` steps' kernels, host
    (step and per sequence), eager launches and the decodes' drafts beside, what an idle engine's dispatch adds, the first
    wave's steps (`burst`). Where its steps cross the rank's stages alone (not pipelined, pp > 1), `own` / `through` steps
    of the ring's own parts: every stage's kernels, its eager launches once, the rest pp times (PrefillParts.through), which
    sum to own x the slowest stage's step as the stage's parts do (its step here is priced busy: no idle part)."""
    stage = {"kernels": pf.kernels, "host": pf.host_step + pf.host_seq, "eager": pf.eager, "draft": pf.draft}
    parts = {k: own * v for k, v in stage.items()}
    # `through` is None where no step crosses the stages alone (an object array np.isfinite refuses: the fuzzer's sweep)
    alone = np.where(~np.asarray(r.pipelined, bool) & (np.asarray(r.pp, float) > 1), np.nan if through is None else through, np.nan)
    alone = np.asarray(alone, float)
    if pf.kernels_all is not None and np.any(np.isfinite(alone)):
        steps, pp = own / np.where(np.isfinite(alone), alone, 1.0), np.asarray(r.pp, float)
        ring = {"kernels": pf.kernels_all, "host": pp * stage["host"], "eager": pf.eager_all / pp, "draft": pp * pf.draft}
        parts = {k: np.where(np.isfinite(alone), steps * ring[k], parts[k]) for k in parts}
    return {"prefill_kernels": parts["kernels"], "prefill_host": parts["host"], "prefill_eager": parts["eager"],
            "prefill_draft": parts["draft"], "prefill_idle": idle + 0.0 * span, "first_wave": burst + 0.0 * span}


def _decode_times(r: _Rank, *, q, t_stage, t_iter, time_share, wave, t_req_pf=None, mixes=True, rest=0.0) -> tuple:
    """(TPOT, a request's life: its wave's prefill span and its decode, the stall's (prompts, cohort) parts per token), `t_iter` the decode
    iteration per accepted token. The running - q requests that arrive out of step put their prefill
    chunks into this request's decode steps, spread over its OSL - 1 steps. A step mixing a chunk
    into the decodes reads the weights once, so each chunk step lengthens the decode step only by
    what it adds beyond it; an engine that runs prefill on its own (`mixes` false) stalls the decodes
    for the whole step. `t_req_pf`: one request's share where the caller priced it (closed loop); `rest`: the
    wait after its first token for its cohort's prompts behind it (_own_prefill), over its OSL - 1 tokens."""
    wave_tok, t_wave_step, pf_span = wave[:3]
    if t_req_pf is None:
        t_req_pf = r.new / np.maximum(wave_tok, 1.0) * np.maximum(t_wave_step - np.where(mixes, t_stage, 0.0), 0.0)
    stall = (np.maximum(r.running - q, 0.0) * t_req_pf + rest) / np.maximum(r.osl - 1.0, 1.0)
    # the stall's two parts, the others' prompt chunks and the cohort's prompts behind (a breakdown's rows; the sum as before)
    prompts = np.maximum(r.running - q, 0.0) * t_req_pf / np.maximum(r.osl - 1.0, 1.0)
    return (t_iter + stall) * time_share, pf_span + np.maximum(r.osl - 1.0, 0.0) * t_iter * time_share, (prompts, stall - prompts)


# the arrivals that keep a closed loop's identical requests in step (spec.harness.ARRIVAL_TEXT): every request reaches
# ISL + OSL tokens at once, so an engine that sizes its batch at a mean context runs out of KV blocks at each wave's end
IN_STEP = ("waves", "burst")


def full_context_seqs(model: ModelSpec, prec: Precision, gpu: Gpu, sh: Plan, spec: SpecDecoding | None, *, k, seq_len, free):
    """The sequences of `seq_len` (ISL+OSL) tokens `free` KV bytes a rank hold, unrounded (memory.seq_bytes; whole_seqs
    rounds it and sums the ranks), as an array over the deployments."""
    from llm_codesign.spec.precision import executable

    _, per_seq, _ = memory.seq_bytes(model, executable(prec, gpu)[0], sh, np.asarray(seq_len, float), spec=spec,
                                     draft=draft_model(model, spec) if spec is not None else None, k=k)
    return np.maximum(np.asarray(free, float), 0.0) / np.maximum(per_seq, 1e-9)


def in_step_evictions(running, full, *, isl, osl) -> tuple:
    """What a wave of `running` requests kept in step costs an engine that evicts and recomputes (Engine.recomputes_evicted)
    where its cache holds `full` (>= 1, unrounded: full_context_seqs) of them at ISL + OSL = L + O tokens, per rank:
    (evicted P, recomputed tokens R, decode tokens the evicted have left D, the output token t_fill at which the cache
    fills). The cache holds K = full x (L + O) tokens; with every request at L + t tokens the engine keeps
    n(t) = min(running, K / (L + t)) running, evicting the newest as blocks run out (vLLM's `self.running.pop()`), so it
    fills at t_fill = K / running - L and the evicted at t hold L + t tokens, dn = K / (L + t)^2 dt of them:
    R = integral of (L + t) dn over [t_fill, O] = K ln(running / full), P = running - full, D = P (L + O) - R (their
    O - t each). The evicted wait in the queue's front until the wave's survivors finish (no block frees before; vLLM
    schedules no waiting request in a step that preempted, and the freed blocks the survivors take back, so a prefix
    cache keeps none of them) and then prefill their L + t tokens again. running <= full: no eviction (all zero)."""
    isl, osl = (np.asarray(x, float) for x in (isl, osl))
    n, full = np.asarray(running, float), np.maximum(np.asarray(full, float), 1e-9)
    x = np.maximum(n / full, 1.0)
    recomputed = full * (isl + osl) * np.log(x)
    evicted = np.maximum(n - full, 0.0)
    left = np.maximum(evicted * (isl + osl) - recomputed, 0.0)
    return evicted, recomputed, left, np.minimum((isl + osl) / x - isl, osl)


def _evicted_times(r: _Rank, evictions: tuple, *, pf_span, t_token, burst: bool, share=1.0, beyond=0.0, wave=None) -> dict:
    """What a wave's `evictions` (in_step_evictions': evicted P, recomputed R, decode tokens left D, t_fill) add to its
    requests, over a `share` of the run's requests (a burst's wave: 1; in waves and an offline batch the first wave's, 1 /
    rounds: the evictions put the slots out of step). The recompute runs at the wave's prefill rate (`pf_span` over its
    running x new prompt tokens): t_re = R x that. An evicted request finishes t_re and its O - t tokens later than it
    would, at `t_token` a token (a burst's: its evicted decoding alone, the tail's step; in waves beside the next wave);
    its first token came long before (t_fill >= O/2 wherever the mean-context count admits the wave, C <= K / (L + O/2)),
    so TPOT, the mean over the wave, grows by (P t_re + D t_token) / (running (O - 1)). In waves the survivors' slots send
    their next requests behind the recompute (prepended to the waiting queue), the first token of full / running of them
    t_re later; a burst has no next wave, and its makespan (its life) grows by t_re and the O - t_fill tokens the first
    evicted has left (an offline batch's by its first wave's share of that). `beyond`: the tokens the admitted past the
    running recompute (_in_step_priced), at the same rate: t_x, which stalls every request's decode steps (a resumed
    request's prompt runs in them) and the makespan alike. `wave`: the running wave's count, unrounded (default
    r.running), over which TPOT's and the next first tokens' means run; the prefill rate stays the priced wave's (r.running
    prompts). Returns the first token's and TPOT's additions, the life's, t_x's share, and P and R."""
    evicted, recomputed, left, t_fill = evictions
    running = np.maximum(np.asarray(r.running, float), 1.0)
    n = running if wave is None else np.maximum(np.asarray(wave, float), 1.0)
    rate = np.asarray(pf_span, float) / np.maximum(running * r.new, 1.0)
    t_re, t_x = rate * recomputed, share * rate * beyond
    tpot = share * (evicted * t_re + left * t_token) / n / np.maximum(r.osl - 1.0, 1.0)
    ttft = 0.0 * tpot if burst else share * (n - evicted) / n * t_re
    tail = share * np.where(evicted > 0, t_re + (r.osl - t_fill) * t_token, 0.0)
    return {"evicted_ttft": ttft, "evicted_tpot": tpot, "evicted_tail": tail, "beyond": t_x + 0.0 * tpot, "evicted": evicted + 0.0 * tpot,
            "recomputed": recomputed + 0.0 * tpot}


def _in_step_priced(model: ModelSpec, at: Serving, r: _Rank, *, costs: EngineCosts, free, times, arrival: str, offline: bool, admitted,
                    unrounded):
    """evaluate's first token, TPOT and life (`times`: those, the decode iteration, the tokens it accepts, the wave's
    prefill span) for requests kept in step (IN_STEP, or an offline batch): one account of the running wave and the
    `admitted` past it. The running (r.running, min(C, cap)) run out of blocks past what the rank's `free` KV bytes hold at
    ISL + OSL where the engine recomputes them (Engine.recomputes_evicted; none where SGLang's ignore-EOS admission
    reserves every output): in_step_evictions, _evicted_times. An engine that admits past the cap (Engine.admission) holds
    admitted / running requests for each running slot: vLLM takes a waiting request once its prompt's blocks fit
    (allocate_slots for its new tokens, vllm/v1/core/sched/scheduler.py:423-480@0.11.0), and out of blocks pops the newest
    running one (:271), frees its blocks and zeroes its computed tokens (:273-276) and prepends it to the waiting queue
    (:281), where it waits for a slot the others free. Each request so holds a slot running / admitted of the time: its
    first token, decode and the wave's evicted tail are the running wave's times the time share (the r slots do the same
    work, so tok/s/GPU is flat past the cap). What they recompute is the wave's own: a burst's wave starts at the admitted
    (their prompts fit) and is evicted down to the full-context count, K ln(admitted / full) tokens, K ln(admitted /
    running) of them beyond the running wave's, priced at its prefill rate (_evicted_times' beyond) in the evictions'
    share: the makespan and every decode step grow by it, so tok/s/GPU falls past the cap. A closed loop (out of step)
    keeps its time share in its decode steps alone (_decode_times). A burst's evicted decode their rest alone once
    recomputed, at their batch's step; the life is the slot cycle's in a closed loop and in waves, the wave's in a burst or
    an offline batch. The counts that decide what is evicted and shared are unrounded (fixP13; `unrounded`, _running's
    running and admitted as the cache's bytes over a sequence's and a reservation's), as the full-context count is: the
    running wave is evicted from min(C, K / (L + O/2)) and the admitted are min(C, K / L) for vLLM, so a prompt a block
    longer moves them by a block's worth, where the floors stepped them by a whole request (at the mean-context count's
    step TTFT fell and tok/s/GPU rose 4.7%); the floor, r.running, is still the batch priced and the slots shared.
    Returns them and _evicted_times' figures, with the first token's share wait (shared_ttft) and the admitted."""
    ttft, tpot, life, t_iter, acc, pf_span = times
    engine, fl = r.scheduler
    sh, full, t_token = at.plan.broadcast(), r.running, t_iter / acc
    in_step, admitted = offline or arrival in IN_STEP, np.asarray(admitted, float)
    wave, (runs, admits) = r.running, unrounded
    # kept in step, the admitted past the cap unrounded (their reservations' bytes), as `held` is (fixP13): one prompt's
    # blocks more or less move the share by as much, not by a whole request at the admission's floor
    admitted = np.asarray(admits, float) if in_step else admitted
    beyond = 0.0
    if in_step and engine.recomputes_evicted:
        held = full_context_seqs(model, at.prec, at.gpu, sh, at.spec, k=r.k, seq_len=r.isl + r.osl, free=free)
        evicts = (held >= 1.0) & ~(np.asarray(fl.ignore_eos, bool) & engine.reserves_all_ignoring_eos)
        # the running wave's evictions from the mean-context count unrounded (fixP13), so neither floor steps them as ISL
        # grows; its floor (r.running) still sets the batch priced and the slots shared
        wave = np.where(evicts, np.asarray(runs, float), r.running)
        full = np.where(evicts, np.minimum(held, wave), wave)
        beyond = np.where(evicts, in_step_evictions(np.maximum(admitted, wave), full, isl=r.isl, osl=r.osl)[1]
                          - in_step_evictions(wave, full, isl=r.isl, osl=r.osl)[1], 0.0)
    evictions = in_step_evictions(wave, full, isl=r.isl, osl=r.osl)
    one_wave = arrival == "burst" and not offline  # an offline batch is in step in its first batch alone, as waves
    if one_wave and np.any(evictions[0] > 0):
        tail, _, _ = _decode_stage(model, at.gpu, at.prec, sh, costs=costs, b=np.maximum(evictions[0], 1.0), k=r.k, spec=at.spec,
                                   ctx=r.isl + (r.osl + evictions[3]) / 2.0, flags=fl, piecewise=at.piecewise_graphs)
        t_token = np.where(evictions[0] > 0, tail.iteration(r.pp, evictions[0], together=True) / acc, t_token)
    ev = _evicted_times(r, evictions, pf_span=pf_span, t_token=t_token, burst=one_wave,
                        share=1.0 if one_wave else 1.0 / np.maximum(fl.rounds, 1.0), beyond=beyond, wave=wave)
    shared = admitted / np.maximum(np.asarray(r.running, float), 1.0) if in_step else 1.0
    ttft, life = ttft + ev["evicted_ttft"], life + ev["evicted_tail"]
    ev = ev | {"shared_ttft": (shared - 1.0) * ttft, "evicted_tpot": shared * ev["evicted_tpot"] + ev["beyond"] / np.maximum(r.osl - 1.0, 1.0),
               "admitted": admitted + 0.0 * ttft}
    ttft, tpot = shared * ttft, shared * tpot + ev["evicted_tpot"]
    life = shared * life + ev["beyond"] if offline or arrival == "burst" else _slot_cycle(ttft, tpot, r.osl)
    return ttft, tpot, life, ev


def _memory_metrics(mem: dict, running) -> dict:
    """The memory a rank holds with `running` sequences (memory.fit's figures)."""
    return {"weights_bytes": mem["weights"], "kv_bytes_per_seq": mem["kv_per_seq"],
            "kv_bytes": mem["kv_per_seq"] * running, "state_bytes": mem["state_per_seq"] * running, "activation_bytes": mem["activations"],
            "free_bytes": mem["free_for_kv"] - mem["kv_per_seq"] * running}


def binding_resource(ops, pdl_per_launch: float = 0.0) -> str:
    """Which resource the step spends most time on: compute, memory or communication (each operator's
    time as the step prices it, op_step_time)."""
    tot = resource_times(ops, pdl_per_launch)
    return max(tot, key=tot.get)


def resource_times(ops, pdl_per_launch: float = 0.0) -> dict[str, float]:
    """Seconds of the step's operators by the resource each spends most time on (binding_resource's sums; serve.estimate
    sets the host's time beside them)."""
    tot = {"compute": 0.0, "memory": 0.0, "communication": 0.0}
    for op in ops:
        t = float(np.sum(op_step_time(op, pdl_per_launch)))
        if op.kind == "comm":
            tot["communication"] += t
        elif float(np.sum(op.t_compute)) >= float(np.sum(op.t_memory)):
            tot["compute"] += t
        else:
            tot["memory"] += t
    return tot
