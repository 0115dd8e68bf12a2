"""Disaggregated serving: prefill instances and decode instances, array-valued.

Prefill instances run prefill-only steps: a request waits in their queue and for the step running
when it arrives (step_residual: engines admit between steps, and under attention DP a step lasts a
whole prompt), its prompt runs in steps of up to the step token budget (batched with other prompts
under load), and its KV cache is sent to a decode instance (NVLink inside the scale-up domain, the NICs
beyond it), which takes it in at its own step boundaries and sends the first token when it schedules
it, or, where it pre-allocated the cache before the prefill (SGLang), as soon as it sees the cache
arrive (decode_admission). Decode instances run decode-only steps, so no prefill chunk ever stalls a token.
With `concurrency` requests in flight in a closed loop, the request rate is concurrency / (TTFT +
(OSL-1) x TPOT); the prefill pool serves it with queueing (M/D/1 per instance), and when the rate would
exceed what the prefill pool can serve, requests queue until it does not (TTFT = concurrency / capacity
- (OSL-1) x TPOT); likewise past the decode pool's slots (its KV cache, the engine's max batch), where a
prefilled request waits for a decoding one to finish.
Throughput per GPU counts both pools. The engine parameters are those fitted on aggregated serving;
`validate --serving` prices the shipped disaggregated runs (data/measurements/serving_disagg_blackwell.csv,
measure.validate.predict_disagg) with evaluate_disagg: docs/validation_report.md has the errors.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

import numpy as np

from llm_codesign.cost import memory
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ffns import EXPERT_GEMMS
from llm_codesign.cost.kernels import collective_time
from llm_codesign.cost.ops import forward_ops
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import (
    PP_HOSTS_TOGETHER,
    _decode_stage,
    cost_overlaps,
    draft_lengths,
    draft_model,
    eager_iterations,
    engine_budget,
    front_end_wait,
    idle_extra,
    kernels_time,
    kv_fraction_of,
    log_moves,
    micro_batches,
    over_pipeline,
    pipeline_note,
    prefill_batch,
    prefill_step,
    prompt_budget,
    run_flags,
    seqs_text,
    serial_front,
    whole_seqs,
)
from llm_codesign.serve.eager import eager_note
from llm_codesign.serve.metrics import interval_columns
from llm_codesign.spec.engines import EngineCosts, check_kv_format, check_pool_vendors
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, check_arrival
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding, attention_dp_note, check_whole_prompt
from llm_codesign.spec.precision import Precision

# how a prefill instance under attention DP hands requests to its ranks: "balanced" (the instance queues as one:
# TensorRT-LLM; SGLang with --load-balance-method round_robin, which every InferenceX SGLang recipe sets) or "random"
# (SGLang's PD default, follow_bootstrap_room: each rank queues its own prompts)
PREFILL_ROUTINGS = ("balanced", "random")


def routing_of(engine, routing: str | None) -> str:
    """The routing a prefill instance runs: `routing` (PREFILL_ROUTINGS), or where None the engine's
    (Engine.routes_prefill_dp_at_random). A value outside PREFILL_ROUTINGS is refused, not read as balanced."""
    if routing is None:
        return "random" if engine.routes_prefill_dp_at_random else "balanced"
    if routing not in PREFILL_ROUTINGS:
        raise InputError("prefill_routing", routing, " or ".join(PREFILL_ROUTINGS))
    return routing


def _notes(prefill: Deployment, prefill_routing: str | None, decode_plan: Plan | None = None, *, isl: int = 0) -> list[str]:
    """What was asked and changes nothing: a routing named for a prefill plan of one attention-DP rank, where every
    request goes to that rank and balanced and random price alike (prefill_pool's queue_s); and a pool whose GPUs are
    tp x attention_dp with TP > 1, SGLang's spelling of what a copied launch meant beside it (spec.plan.attention_dp_note:
    a pool's GPUs are always read off its plan, newc8 #9). Then how an `isl`-token prompt's chunks cross the prefill pool's
    PP stages, as priced (serve.aggregated.pipeline_note, estimate's PP prefill row)."""
    out, prefill_plan = [], prefill.plan
    if prefill_routing is not None and int(prefill_plan.adp) == 1:
        out.append(f"prefill_routing {prefill_routing}: no effect, the prefill plan {prefill_plan.label()} has no attention-DP ranks")
    return out + [f"{pool} pool: {note}" for pool, note in (("prefill", attention_dp_note(prefill_plan)), ("decode", None if decode_plan is None
                  else attention_dp_note(decode_plan)), ("prefill", pipeline_note(prefill, isl))) if note]


def prefill_pool(model: ModelSpec, gpu: Gpu, prec: Precision, plan: Plan, *, costs: EngineCosts, isl, max_num_tokens=None,
                 routing: str | None = None, chunked_prefill: bool | None = None, kv_fraction: float | None = None, cpp=False) -> dict:
    """One prefill instance (`costs`: its engine's fitted costs and in-step calibration): a lone
    prompt's time (chunks of a rank's step budget, Engine.rank_step_tokens, its MoE carrying that prompt's tokens alone:
    _lone_prompt_credit; its chunks over the PP stages as an aggregated rank's, serve.aggregated.over_pipeline: pipelined
    where the engine's scheduler pipelines one request's chunks, Engine.pipelines_request_chunks, or the deployment states
    `cpp`, else one after another; `t_loaded`, the same with a prompt on every attention-DP rank, and `adp`,
    for shared_steps), the requests per second it serves when loaded (whole steps; each
    attention-DP rank runs its own prompts, pipeline stages overlap different prompts' steps), the
    service time of the queue a request joins (`queue_s`: the instance's, 1 / per_instance,
    where its attention-DP ranks are kept balanced; one rank's, adp times that, where each request goes to
    a rank at random: `routing`, PREFILL_ROUTINGS, by default the engine's, Engine.routes_prefill_dp_at_random),
    and whether the weights fit (`chunked_prefill`, `kv_fraction`: the deployment's launch options, run_flags).
    Round-robin routing counts as balanced: a rank then sees every adp-th arrival, Erlang-adp gaps (squared coefficient of variation 1/adp), and Kingman's G/D/1 wait on its service
    adp s, (1/adp) / 2 x rho / (1 - rho) x adp s, is the pooled queue's M/D/1 wait on s."""
    at_random = routing_of(costs.engine, routing) == "random"
    sh = plan.broadcast()
    isl = np.asarray(isl, float)
    fl = run_flags(None, chunked_prefill=chunked_prefill, kv_fraction=kv_fraction)
    # a rank's chunk: the server's figure, split over the attention-DP ranks where the engine does (Engine.rank_step_tokens)
    mnt, (budget, own, _) = engine_budget(gpu, engine=costs.engine, max_num_tokens=max_num_tokens, plan=plan, chunked_prefill=chunked_prefill)
    _, pp, _, _, adp, _ = (np.asarray(x, float) for x in plan.arrays())
    chunk = np.minimum(isl, mnt)
    # one stage's step of a chunk on every attention-DP rank (the step a request arriving under load waits for), and a lone one's
    t_step = prefill_step(model, gpu, prec, sh, costs=costs, tokens=chunk, isl=isl, chunk=chunk, flags=fl)
    # the prompt's chunks' stage times through the stages (SGLang's scheduler pipelines one request's chunks:
    # srt/managers/scheduler.py:2463-2466@0.5.11, spec.engines.sglang pipelines_request_chunks)
    span = over_pipeline(isl / chunk, pp=pp, pipelined=np.asarray(cpp) | costs.engine.pipelines_request_chunks)
    t_loaded = span * t_step
    t_alone = t_loaded - span * _lone_prompt_credit(model, gpu, prec, sh, costs=costs, chunk=chunk, isl=isl, adp=adp)
    # a lone prompt reaches an idle server: its first chunk's step has no earlier step to launch under, so its host dispatch
    # shows where it outlasts the GPU (prefill_step's `idle`); later chunks launch under the one before (the overlap loop)
    # (every stage's: SGLang's PP stage receives the previous stage's activations with a synchronous recv, sent only after
    # that stage's launch returns, so the stages' host dispatches run one after another, event_loop_pp "async send but
    # sync recv", python/sglang/srt/managers/scheduler_pp_mixin.py@00ff98d3; serve.aggregated._own_prefill the same).
    # first_token pays it only where an arrival finds the pool idle
    t_idle = idle_extra(model, gpu, prec, sh, costs=costs, pp=pp, t_busy=t_step, tokens=chunk, isl=isl, chunk=chunk, flags=fl)
    t_alone = t_alone + t_idle
    # a full step: the prompt tokens the budget takes (whole prompts where the engine does not chunk, prompt_budget), or one
    # whole chunk if larger
    full = np.maximum(prompt_budget(mnt, isl, engine=costs.engine, flags=fl), chunk)
    per_inst = adp * full / isl / prefill_step(model, gpu, prec, sh, costs=costs, tokens=full, isl=isl, chunk=chunk, flags=fl)
    mem = memory.fit(model, gpu, prec, sh, isl, osl=0.0, max_num_tokens=mnt, usable_fraction=kv_fraction_of(fl, own), osl_occupancy=0.0, budget=budget,
                     max_seqs=costs.engine.max_batch(gpu), engine=costs.engine)
    queue_s = (adp if at_random else 1.0) / per_inst
    return {"t_alone": t_alone, "t_loaded": t_loaded, "t_idle": t_idle, "adp": adp, "t_step": t_step, "per_instance": per_inst, "queue_s": queue_s,
            "at_random": np.full(np.shape(adp), float(at_random)), "fits": mem["max_seqs_per_rank"] >= 1}


# the MoE operators whose work is the whole instance's tokens, gathered from every attention-DP rank (the routed experts
# and the token exchange around them), where the router, top-k and shared expert run on each rank's own
_INSTANCE_ROLES = (*EXPERT_GEMMS, "dispatch", "combine", "permute", "all_gather", "reduce_scatter")


def _lone_prompt_credit(model: ModelSpec, gpu: Gpu, prec: Precision, sh: Plan, *, costs: EngineCosts, chunk, isl, adp):
    """What a lone prompt's prefill step costs less than prefill_step's, which gives every attention-DP
    rank a `chunk`: its MoE's routed experts and token exchange (_INSTANCE_ROLES) carry one chunk, not
    adp of them, while the other ranks run a dummy request to join the collectives (TensorRT-LLM
    PyExecutor._pad_attention_dp_dummy_request; SGLang's idle batch). 0 without attention DP."""
    adp = np.asarray(adp, float)
    if not np.any(adp > 1):
        return 0.0

    def moe(tokens):
        ops = forward_ops(model, gpu, costs.cal, prec, sh, b=prefill_batch(tokens=tokens, isl=isl, chunk=chunk), engine=costs.engine)
        return kernels_time([op for op in ops if op.part == "moe" and op.role in _INSTANCE_ROLES], gpu, costs)

    return np.where(adp > 1, moe(chunk) - moe(chunk / adp), 0.0)


def decode_pool(model: ModelSpec, gpu: Gpu, prec: Precision, plan: Plan, *, costs: EngineCosts, per_instance, isl, osl,
                spec: SpecDecoding | None = None, spec_k=None, max_num_tokens=None, kv_fraction: float | None = None,
                cuda_graph_max_bs=None, max_batch=None, together=True, piecewise: bool = False) -> dict:
    """One decode instance (`costs`: its engine's fitted costs and in-step calibration) holding
    `per_instance` requests: decode-only steps, so no prefill chunk stalls a token; the KV cache (the
    engine's fraction, or the deployment's `kv_fraction`, run_flags) and the step token budget
    (Engine.budget_batch) bound what it holds. Its step is the aggregated decode's (serve.aggregated._decode_stage): a
    batch per rank above the decode workers' CUDA graphs (`cuda_graph_max_bs`, padded, per rank; NaN or None: the
    engine's default capture on this GPU and plan, serve.aggregated.default_capture, vLLM's from `max_batch`, the
    workers' max_num_seqs) pays every kernel's eager launch (`eager`, in t_stage). `together`: fewer requests than stages
    arrive together and share one micro-batch (serve.aggregated.micro_batches; a closed loop's spread: False). `piecewise`:
    the decode workers replay vLLM's piecewise graphs (Deployment.piecewise_graphs), priced as the aggregated step prices
    them (serve.aggregated._piecewise_stage: each layer's attention ops from the host between the pieces). Returns the
    step's StepParts (`parts`), operators (`ops`), micro-batches (`micro_batches`) and iteration (`iteration`) with its
    parts (`iteration_parts`): what serve.energy.disagg_energy and disagg's eager note read."""
    sh = plan.broadcast()
    isl, osl = np.asarray(isl, float), np.asarray(osl, float)
    k, acc = draft_lengths(spec, spec_k, osl)  # no more than a request has left (spec.plan.accepted_within)
    mnt, (budget, own, occupancy) = engine_budget(gpu, engine=costs.engine, max_num_tokens=max_num_tokens, plan=plan, spec=spec,
                                                       draft_len=k)
    _, pp, _, _, adp, _ = (np.asarray(x, float) for x in plan.arrays())
    c_rank = np.ceil(np.asarray(per_instance, float) / adp - 1e-9)  # the busiest rank (serve.aggregated.evaluate)
    fl = run_flags(None, chunked_prefill=None, cuda_graph_max_bs=cuda_graph_max_bs)
    if max_batch is not None:
        fl = replace(fl, max_running_requests=np.asarray(max_batch, float))
    # fewer in flight than stages leave micro-batches empty (StepParts.iteration): one each in a closed loop, one in all else
    m = micro_batches(c_rank, pp, together=together)
    per_mb = c_rank / m
    parts, t_draft, ops = _decode_stage(model, gpu, prec, sh, costs=costs, b=per_mb, ctx=isl + osl / 2.0, k=k, spec=spec, flags=fl,
                                        piecewise=piecewise)
    t_stage = parts.stage
    fraction = own if kv_fraction is None else kv_fraction
    mem = memory.fit(model, gpu, prec, sh, isl, osl=osl, max_num_tokens=mnt, usable_fraction=fraction, osl_occupancy=occupancy, budget=budget,
                     spec=spec, draft=draft_model(model, spec) if spec is not None else None, draft_len=k,
                     max_seqs=costs.engine.batch_limit(gpu, fl.max_running_requests),  # the workers' cap (vLLM's sampler warm-up)
                     engine=costs.engine)
    # what a rank decodes at once: what its KV cache holds, and no more than its step budget schedules where that counts
    # the decodes (Engine.budget_batch; the rest wait for a slot); a cache that holds none keeps its figure
    held = np.where(mem["max_seqs_per_rank"] >= 1, np.minimum(mem["max_seqs_per_rank"], costs.engine.budget_batch(mnt, k, pp)),
                    mem["max_seqs_per_rank"])
    t_iter = parts.iteration(pp, c_rank, together=together)
    return {"tpot": t_iter / acc, "t_stage": t_stage, "t_draft": t_draft, "acc": acc,
            "fits": (mem["free_for_kv"] > 0) & (c_rank <= held), "max_per_instance": held * adp,
            "kv_per_instance": mem["max_seqs_per_rank"] * adp, "free_for_kv": mem["free_for_kv"],
            "eager": parts.eager + 0.0 * t_stage, "batch": per_mb,
            "parts": parts, "ops": ops, "micro_batches": m, "iteration": t_iter,
            "iteration_parts": parts.iteration_parts(pp, c_rank, together=together),
            # the iteration with a missed step's launches at the launch cost's range's ends (the eager intervals' terms)
            "iteration_ends": eager_iterations(parts, pp, c_rank, together=together, hosts_in_turn=costs.engine.name not in PP_HOSTS_TOGETHER)}


def kv_hand_off(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, isl, *, prefill_gpus, total_gpus,
                decode_plan: Plan | None = None, decode_gpu: Gpu | None = None, decode_cal: Calibration | None = None):
    """The prompt's cache (and recurrent state) moves from the prefill instance to one decode rank;
    the slower end sets the time, bytes over min(sender aggregate, receiver aggregate). Senders: the
    prefill instance's GPUs in parallel, each its share of what must arrive. Receivers: the GPUs of
    the one attention-DP rank that will decode the request (its TP x Helix x PP GPUs), each taking
    what it holds of that sequence (GQA heads split by TP; the MLA latent replicated on every TP
    rank, so it arrives once per TP GPU), each on its own link. NVLink inside the scale-up domain,
    the NICs beyond it. Without a decode plan, one copy arrives at as many GPUs as send it. Pools of
    two GPU types sit in different servers: the cache leaves on the prefill GPUs' NICs and arrives on
    the decode GPUs' NICs, each end priced on its own GPU. On a mesh each end's links to its counterparts alone carry
    it (collective_time's `peers`)."""
    one = Plan()
    isl = np.asarray(isl, float)
    kv = memory.kv_bytes_per_token(model, prec, one, isl) * isl + memory.state_bytes_per_seq(model, one)
    senders = receivers = np.asarray(prefill_gpus, float)
    if decode_plan is None:
        send, recv = kv / senders, kv / senders
    else:
        sh = decode_plan.broadcast()
        tp, pp, _, _, _, kvp = (np.asarray(x, float) for x in decode_plan.arrays())
        recv = memory.kv_bytes_per_token(model, prec, sh, isl) * isl + memory.state_bytes_per_seq(model, sh)
        send = recv * tp * pp * kvp / senders
        receivers = tp * pp * kvp
    if decode_gpu is not None and decode_gpu.id != gpu.id:  # beyond either scale-up domain: NIC to NIC
        return np.maximum(collective_time("p2p", send, gpu.scale_up_domain + 1.0, gpu, cal),
                          collective_time("p2p", recv, decode_gpu.scale_up_domain + 1.0, decode_gpu, decode_cal or cal))
    n = np.maximum(total_gpus, 2.0)
    # the shards map rank to rank (heads by TP, layers by PP on either side), so a sender reaches ceil(R / S) receivers
    # and a receiver hears from ceil(S / R) senders: on a mesh (Gpu.scale_up_topology) those links alone carry them
    return np.maximum(collective_time("p2p", send, n, gpu, cal, peers=np.ceil(receivers / senders)),
                      collective_time("p2p", recv, n, gpu, cal, peers=np.ceil(senders / receivers)))


def step_residual(rate, n_p, t_step, per_instance, queue_s=None):
    """Mean wait, beyond M/D/1's, of a request for the prefill step running when it arrives.

    An engine admits new requests only between steps (TensorRT-LLM PyExecutor._executor_loop fetches
    them at the top of each iteration, and the disaggregation recipes run context servers with
    disable_overlap_scheduler; SGLang's event loop likewise), so an arrival during a step waits for
    it to end: t_step / 2 on average. With arrivals at rate lam per instance and steps of t_step run
    back to back while work arrived during the last one (a gated batch server), a busy period holds
    e^x steps, x = lam t_step, and an idle one lasts 1 / lam, so the instance is busy a fraction
    U = x e^x / (1 + x e^x) of the time. M/D/1 on the queue's service q (prefill_pool's queue_s:
    the instance's s = 1 / per_instance, or one attention-DP rank's adp s) already counts a residual
    rho q / 2, rho = lam s; under attention DP every rank joins the same step (the MoE collectives), so
    a step lasts a whole prompt's t_step while s is its 1/adp share, and the wait is U t_step / 2 -
    rho q / 2 more (0 for one prompt per step, where t_step = q)."""
    lam = np.asarray(rate, float) / np.asarray(n_p, float)
    s = 1.0 / np.asarray(per_instance, float)
    q = s if queue_s is None else np.asarray(queue_s, float)
    rho = np.minimum(lam * s, 1.0)
    return np.maximum(running_rest(rate, n_p, t_step) - rho * q / 2.0, 0.0)


def running_rest(rate, n_p, t_step):
    """Mean rest of the prefill step running when a request arrives, U t_step / 2 (step_residual's U): the phase
    part of its wait before the instance next forms a batch, the only part its front end's work hides under
    (serve.aggregated.front_end_wait)."""
    lam = np.asarray(rate, float) / np.asarray(n_p, float)
    t = np.asarray(t_step, float)
    x = np.minimum(lam * t, 30.0)  # e^30: always busy
    return x * np.exp(x) / (1.0 + x * np.exp(x)) * t / 2.0


def shared_steps(others, prefill: dict):
    """What a request's own prefill pays for the prompts other attention-DP ranks run in its steps:
    the routed MoE grows with the instance's tokens, so its time goes from the lone prompt's (t_alone)
    to a prompt on every rank's (t_loaded) in proportion to the `others` (at most adp - 1 ranks'
    worth). 0 without attention DP, where the two are one."""
    adp = np.asarray(prefill["adp"], float)
    share = np.minimum(np.asarray(others, float), adp - 1.0) / np.maximum(adp - 1.0, 1.0)
    return share * (prefill["t_loaded"] - (prefill["t_alone"] - prefill["t_idle"]))  # the steps' kernels, not the idle host's


def decode_admission(t_decode_step, t_kv, *, on_arrival: bool = False, hidden=0.0, recv_interval=1.0, busy=1.0, next_loop=False):
    """What the decode worker adds to the first token, t = one decode iteration, t_kv = the hand-off's
    transfer, `recv_interval` R the decode iterations between its scheduler's polls for new requests
    (SGLang --scheduler-recv-interval: SchedulerRecvSkipper weighs a decode step 1, so a busy decode worker
    reads its socket every R-th step, sglang 0.5.8.post1 managers/scheduler_recv_skipper.py:26-38,
    environ.py:222-225, managers/scheduler.py:1182-1187; 1 reads it every loop, every other engine's case):
    a request reaches it R t / 2 after it arrives on average, in place of t / 2, where the worker is decoding (`busy`: the
    probability that it is; an idle worker's loops count 1 each too, but take microseconds, so R - 1 of them cost nothing).
    The prefill server's own interval costs nothing: a prefill step weighs 1000 (a poll after every step), its idle loops
    take microseconds.
    `next_loop` (where the worker streams the first token on the cache's arrival: SGLang builds before 0.5.10, whose
    overlap loop runs the arrived request as that loop's prebuilt batch and processes its result, the first token, only
    in the next loop, after the decode step in flight ends: decode.py:860-945@0.5.8.post1): t more while it decodes (`busy`).
    Where it takes the request after the prefill (TensorRT-LLM: the disaggregated server sends
    the generation request once the context phase answers): at a step boundary (t / 2 on average), then
    it pulls the cache and sees the transfer done at the first boundary after it completes (t_kv + t / 2
    on average, one step at least), answering at the top of that iteration (PyExecutor
    _check_disagg_gen_transfer_status, _handle_first_token_response). Where it pre-allocates the cache
    before the prefill and streams the first token when the cache arrives (`on_arrival`,
    Engine.first_token_on_kv_arrival: SGLang's bootstrap): the prefill cannot start before the decode
    worker's next loop top (t / 2, less the `hidden` wait the request spends anyway before its prefill
    starts: the step running and the queue), and the token leaves at the first loop top after the
    transfer, t_kv + t / 2, with no step of its own."""
    t, t_kv = np.asarray(t_decode_step, float), np.asarray(t_kv, float)
    # the request read at the worker's next poll: the skipped iterations are decode steps only while it decodes
    reach = 0.5 * t * (1.0 + (np.maximum(np.asarray(recv_interval, float), 1.0) - 1.0) * np.asarray(busy, float))
    if on_arrival:  # SGLang: the poll gates the pre-allocation, so the prefill's start (decode.py:834-858@0.5.8.post1)
        late = np.where(np.asarray(next_loop, bool), t * np.asarray(busy, float), 0.0)  # the step in flight, then its loop
        return np.maximum(reach - np.asarray(hidden, float), 0.0) + t_kv + 0.5 * t + late
    return reach + np.maximum(t, t_kv + 0.5 * t)


def decode_busy(f, others_each):
    """The probability that the decode instance a request reaches is decoding one of the other requests in flight, each
    decoding a share `f` of its cycle, where `others_each` = (C - 1) / n_d of them sit on each instance on average.
    Dynamo's frontend, which the InferenceX disaggregated recipes run with no --router-mode, routes round-robin
    (ai-dynamo/dynamo components/src/dynamo/frontend/main.py parse_args, --router-mode default "round-robin",
    @0179043a): the instance holds floor or ceil of
    (C - 1) / n_d others, m = floor with weight 1 - phi and m + 1 with weight phi, so busy = 1 - (1 - f)^m (1 - phi f)
    (n_d = 8, C = 2: f / 8, where 1 - (1 - f)^(1/8) overstated it three times at f = 0.98)."""
    k = np.maximum(np.asarray(others_each, float), 0.0)
    m = np.floor(k)
    f = np.clip(np.asarray(f, float), 0.0, 1.0)
    return 1.0 - (1.0 - f) ** m * (1.0 - (k - m) * f)


def first_token(C, base, t_kv, *, t_decode_step, decode_time, prefill: dict, n_p, arrival: str = DEFAULT_ARRIVAL,
                on_arrival: bool = False, front=0.0, overlaps: bool = False, recv_interval=1.0, n_d=1.0, next_loop=False,
                rate_cap=np.inf, iterations: int = 6) -> tuple:
    """Request rate, TTFT and the waits in it for C requests cycling through a prefill pool (prefill:
    prefill_pool's dict; base: the lone prefill without its idle host's extra, prefill["t_idle"]) and decode: the decode
    worker's admission (decode_admission; `on_arrival`, Engine.first_token_on_kv_arrival: its bootstrap
    hidden under the wait before the prefill), then as the requests arrive (spec.harness.ARRIVALS):
    "closed_loop" or "waves", the wait for the running prefill step (step_residual, which grows with the rate of the
    other C - 1 requests, the arrival theorem: a fixed point, `iterations` passes from none) and closed_loop's
    queueing; "burst", lockstep_waves. Identical requests started together
    ("waves") leave the prefill pool one service apart and keep that spacing, wave after wave, as their decodes end in
    the same order: spread arrivals, priced as the closed loop's (an upper bound: evenly spaced ones queue less than M/D/1).
    Under attention DP a request's steps also carry the prompts other ranks run (shared_steps): the
    x = lam t_step arriving during a step in a closed loop, the wave's others in a burst.
    The front end's work `front` (ttft_overhead) is paid before the prefill pool's queue, by serve.aggregated.
    front_end_wait's rule: in a closed loop where it `overlaps` (serve.aggregated.cost_overlaps) only beyond the running
    step's rest (running_rest), in a burst (the pool idle, no step to wait for) whole.
    `recv_interval`: the decode worker's polls for new requests (decode_admission), whose skipped steps count where the
    decode instance the request goes to (one of `n_d`) is decoding one of the other C - 1 requests when it arrives (the
    arrival theorem again; its polls come at least after each admission there, so every min(R, the decode steps between the
    others' admissions) steps): each decodes a share f = rate x decode time / C of its cycle (decode_busy, the others spread
    evenly over the n_d instances); 0 in a burst, whose wave finds both pools idle; the same busy prices `next_loop`.
    The idle host's extra (prefill_pool's t_idle) where an arrival finds its instance idle (_idle_paid). `rate_cap`: the
    decode pool's slots / decode time, the rate the prefill pool then sees (closed_loop; the slot wait is the caller's).
    Returns (rate, ttft, admission, step wait and shared steps, the front end's work paid, the idle extra paid)."""
    def admission(hidden, busy, interval=recv_interval):
        return decode_admission(t_decode_step, t_kv, on_arrival=on_arrival, hidden=hidden, recv_interval=interval, busy=busy,
                                next_loop=next_loop)

    others_each = np.maximum(np.asarray(C, float) - 1.0, 0.0) / np.asarray(n_d, float)
    busy = decode_busy(1.0, others_each)  # before the first rate: a decoding worker wherever another request is on it
    admit = admission(0.0, 0.0 if arrival == "burst" else busy)
    if arrival == "burst":
        shared = shared_steps(np.asarray(C, float) / np.asarray(n_p, float) - 1.0, prefill)
        paid = serial_front(front, burst_at_rank(C / np.asarray(n_p, float), prefill["adp"], prefill["at_random"]))  # nothing hides it
        base = base + _idle_paid(prefill, None, n_p)
        rate, ttft = lockstep_waves(C, base + paid + admit + shared, decode_time, prefill["per_instance"], n_p)
        if on_arrival:  # the bootstrap overlaps the wave's queue at the prefill pool
            admit = admission(ttft - (base + paid + admit + shared), 0.0)
            rate, ttft = lockstep_waves(C, base + paid + admit + shared, decode_time, prefill["per_instance"], n_p)
        return rate, ttft, admit, shared, paid + 0.0 * ttft, _idle_paid(prefill, None, n_p) + 0.0 * ttft
    extra, paid, idle = np.zeros(1), np.asarray(front, float), _idle_paid(prefill, 0.0, n_p)  # no running step known yet
    queue = dict(per_instance=prefill["per_instance"], n_p=n_p, queue_s=prefill["queue_s"], rate_cap=rate_cap)
    for _ in range(iterations):
        rate, ttft = closed_loop(C, base + idle + paid + admit + extra, decode_time, **queue)
        # the arrival theorem of a closed loop: an arriving request sees the other C - 1 at their rate, never its own step
        others = rate * (C - 1.0) / C
        wait = step_residual(others, n_p, prefill["t_step"], prefill["per_instance"], prefill["queue_s"])
        hidden = wait + np.maximum(ttft - (base + idle + paid + admit + extra), 0.0)  # the step running, then the queue
        idle = _idle_paid(prefill, others, n_p)
        extra = wait + shared_steps(others / n_p * prefill["t_step"], prefill)
        paid = front_end_wait(0.0, front, slack=running_rest(others, n_p, prefill["t_step"]), overlaps=overlaps)
        f = np.clip(rate * np.asarray(decode_time, float) / np.asarray(C, float), 0.0, 1.0)
        # an arrived request's prebuilt batch weighs 1000 in SGLang's recv skipper (ForwardMode.PREBUILT takes the default
        # weight, environ.py:222@0.5.8.post1, scheduler_recv_skipper.py:29-36), so the loop after each admission polls at
        # once: the polls come every min(R, decode steps between the instance's admissions) steps
        gap = np.asarray(n_d, float) / np.maximum(others * np.asarray(t_decode_step, float), 1e-30)
        admit = admission(hidden, decode_busy(f, others_each), np.minimum(recv_interval, np.maximum(gap, 1.0)))
    rate, ttft = closed_loop(C, base + idle + paid + admit + extra, decode_time, **queue)
    return rate, ttft, admit, extra, paid + 0.0 * ttft, idle + 0.0 * ttft


def _idle_paid(prefill: dict, others, n_p):
    """The idle host's extra (prefill_pool's t_idle) an arrival pays where it finds its prefill instance idle: (1 - rho)
    t_idle, rho = `others` (the rate of the other requests it sees: the arrival theorem of a closed loop, Reiser and
    Lavenberg 1980; PASTA for Poisson arrivals, Wolff 1982) over the pool's capacity, so a loop of one pays all of it;
    `others` None: a burst's wave, which reaches an idle pool and queues behind its first prompt's idle step: all of it."""
    t_idle = np.asarray(prefill["t_idle"], float)
    if others is None:
        return t_idle
    rho = np.asarray(others, float) / (np.asarray(n_p, float) * np.asarray(prefill["per_instance"], float))
    return (1.0 - np.clip(rho, 0.0, 1.0)) * t_idle


def burst_at_rank(per_instance, adp, at_random):
    """The requests a burst's request finds at its prefill rank, itself included (serve.aggregated.serial_front's q), where
    `per_instance` = C / n_p reach each instance (the router spreads them, lockstep_waves) and its `adp` attention-DP ranks
    take them balanced (`at_random` 0: every rank gets N / adp, the rank's load, at most one each where N <= adp) or at
    random (1: prefill_pool's "random", SGLang's bootstrap_room % dp_size: each of the N - 1 others lands on the request's
    rank with chance 1 / adp, so 1 + (N - 1) / adp, above one however few the burst)."""
    n, adp = np.asarray(per_instance, float), np.asarray(adp, float)
    return np.where(np.asarray(at_random, float) > 0, 1.0 + np.maximum(n - 1.0, 0.0) / adp, n / adp)


def lockstep_waves(C, base, decode_time, per_instance, n_p) -> tuple:
    """Request rate and mean TTFT of C requests sent together and kept in lockstep waves (a harness's
    "burst"). A wave reaches the prefill pool while it is idle (no step to wait for), N = C / n_p
    requests at each instance (the router spreads them), each instance finishing one every s =
    1/per_instance: the k-th waits (k - 1) s, (N - 1) s / 2 on average. The same with random routing
    to attention-DP ranks: a request's rank holds (N - 1) / adp others on average, each adp s. The
    wave ends with its last request's first token, (N - 1) s after the first, and its decode:
    rate = C / (base + (N - 1) s + decode_time)."""
    C = np.asarray(C, float)
    ahead = np.maximum(C / np.asarray(n_p, float), 1.0) - 1.0
    s = 1.0 / np.asarray(per_instance, float)
    base = np.asarray(base, float)
    return C / (base + ahead * s + decode_time), base + ahead * s / 2.0


def closed_loop(C, base, decode_time, per_instance, n_p, *, queue_s=None, rate_cap=np.inf) -> tuple:
    """Request rate and TTFT of C requests cycling through prefill (base: alone + hand-off +
    overhead, plus an M/D/1 wait in the queue a request joins) and decode. With service s =
    1/per_instance, pool capacity cap = n_p/s and the queue's service q (queue_s: s where an instance
    queues as one, adp s where each attention-DP rank queues its own, prefill_pool), rate r solves
    r (a + W(r)) = C, a = base + decode_time, W = rho q / (2 (1 - rho)), rho = r / cap: the quadratic
    (q/2 - a)/cap r^2 + (a + C/cap) r - C = 0, whose root below cap is taken. As C grows, r -> cap and
    TTFT -> C/cap - decode_time. `rate_cap` (the decode pool's slots / decode time, _within_slots) bounds the loop's rate
    where the decode slots bind: the requests then reach the prefill pool at that rate, so its queue is W(rate_cap) and
    the TTFT returned base + W; r (a + W(r)) grows with r, so below the root base + W < C / rate_cap - decode_time, the
    rest of the cycle being the wait for a slot (the caller's)."""
    C, a = np.asarray(C, float), np.asarray(base, float) + decode_time
    s = 1.0 / np.asarray(per_instance, float)
    q = s if queue_s is None else np.asarray(queue_s, float)
    cap = np.asarray(n_p, float) / s
    A = (q / 2.0 - a) / cap
    B = a + C / cap
    disc = np.sqrt(np.maximum(B * B + 4.0 * A * C, 0.0))
    # the smaller positive root, written to stay exact as A -> 0 (then r = C / B)
    rate = np.minimum(2.0 * C / (B + disc), cap)
    capped = np.minimum(rate, rate_cap)
    rho = np.minimum(capped / cap, 1.0 - 1e-12)  # < 1 wherever it is read: capped < rate <= cap there
    ttft = np.where(capped < rate, np.asarray(base, float) + rho * q / (2.0 * (1.0 - rho)), C / capped - decode_time)
    return capped, np.maximum(ttft, base)


def evaluate_disagg(model: ModelSpec, prefill: Deployment, decode: Deployment, *, calibration: Calibration,
                    decode_calibration: Calibration | None = None, prefill_instances, decode_instances, concurrency, isl, osl,
                    spec_k=None, decode_max_batch=None, arrival: str = DEFAULT_ARRIVAL, prefill_routing: str | None = None,
                    decode_recv_interval=1.0, first_token_next_loop=False, decode_moe_a2a: str = "", decode_cuda_graph_max_bs=None) -> dict:
    """Metrics for every deployment in the broadcast of both pools' plans, instance counts, concurrency, ISL/OSL and k; the same
    keys as serving.evaluate where they mean the same thing. `prefill` and `decode` are one instance of each pool: its GPU,
    plan, precision, engine and step token budget (the decode one's speculation; num_gpus is not read, the plans' sizes are),
    each priced with its engine's costs (Engine.costs) in its calibration (`decode_calibration` where the decode GPU's profile
    differs; by default `calibration`). The front end's request overhead is the prefill engine's. Every request in flight is
    counted in the decode batch (those in prefill or hand-off too: a slight overestimate of the decode batch), up to the
    decode pool's slots when the decode engine's batch limit is given (decode_max_batch per attention-DP rank: TensorRT-LLM
    max_batch_size, SGLang max-running-requests over its DP ranks). Past the slots, a request whose prefill is done waits for
    a decoding one to finish (the decode engine admits a transfer only into a free slot), the pool completes at most slots /
    decode time requests a second, and TTFT is what is left of the cycle: C / rate - decode time. A decode GPU other than the
    prefill one puts the KV hand-off on the NICs. `arrival` (spec.harness.ARRIVALS): how the requests reach the prefill pool,
    a closed loop of C slots (the default; "waves" the same, first_token) or C sent together in lockstep waves ("burst"); in a
    burst, past the decode slots a wave is what they hold and the rest wait whole waves, as serve.aggregated prices them.
    `prefill_routing`: PREFILL_ROUTINGS (None: the engine's). `decode_recv_interval` (SGLang's --scheduler-recv-interval),
    `first_token_next_loop` (SGLang < 0.5.10): decode_admission's. `decode_moe_a2a`: the MoE exchange the decode servers' launch
    flags name (Engine.with_moe_a2a; "" the engine's default). `decode_cuda_graph_max_bs`: the decode workers' CUDA graphs
    (decode_graphs); a decode batch above them runs eagerly (decode_pool: `decode_eager_s` a step, at `decode_batch` a rank).
    TTFT = prefill_alone_s + front_end_s (the front end's overhead, beyond the running step's rest where it
    overlaps: first_token) + decode_admission_s (kv_transfer_s in it) + prefill_step_wait_s + prefill_wait_s (the prefill pool's queue) + decode_slot_wait_s (past the slots)."""
    gpu, dg, prefill_plan, decode_plan = prefill.gpu, decode.gpu, prefill.plan, decode.plan
    dcost = decode.engine.with_moe_a2a(decode_moe_a2a).costs(decode_calibration or calibration)
    pcost = prefill.engine.costs(calibration)
    g_p, g_d = np.asarray(prefill_plan.gpus, float), np.asarray(decode_plan.gpus, float)
    n_p, n_d = np.asarray(prefill_instances, float), np.asarray(decode_instances, float)
    C, osl = np.asarray(concurrency, float), np.asarray(osl, float)
    gpus = n_p * g_p + n_d * g_d
    p = prefill_pool(model, gpu, prefill.precision, prefill_plan, costs=pcost, isl=isl, max_num_tokens=prefill.max_num_tokens,
                     routing=prefill_routing, chunked_prefill=prefill.chunked_prefill, kv_fraction=prefill.kv_fraction, cpp=prefill.cpp)
    pool = dict(costs=dcost, isl=isl, osl=osl, spec=decode.spec, spec_k=spec_k, max_num_tokens=decode.max_num_tokens, piecewise=decode.piecewise_graphs,
                kv_fraction=decode.kv_fraction, cuda_graph_max_bs=decode_graphs(decode, decode_cuda_graph_max_bs), max_batch=decode_max_batch, together=arrival != "closed_loop")
    d = decode_pool(model, dg, decode.precision, decode_plan, per_instance=C / n_d, **pool)
    slots, held = _decode_slots(d, decode_plan, n_d, decode_max_batch)
    # estimate's rule (serve.aggregated.evaluate: fits = concurrency <= what runs at once): a load past the slots is priced,
    # its surplus waiting for a slot (decode_slot_wait_s), and does not fit; read before the pool is re-priced at its slots
    fits, kv_slots = d["fits"] & (C <= slots) & p["fits"], d["kv_per_instance"] * n_d
    if np.any(slots < C):
        d = decode_pool(model, dg, decode.precision, decode_plan, per_instance=np.minimum(C, slots) / n_d, **pool)
    # the cache leaves in the prefill pool's format (the engines hand over KV only between pools that agree on it)
    t_kv = kv_hand_off(model, gpu, pcost.cal, prefill.precision, isl, prefill_gpus=g_p, total_gpus=gpus, decode_plan=decode_plan,
                       decode_gpu=dg, decode_cal=dcost.cal)
    base, decode_time, pp_d = p["t_alone"] - p["t_idle"], np.maximum(osl - 1.0, 0.0) * d["tpot"], np.asarray(decode_plan.arrays()[1], float)
    rate, ttft, admit, step_wait, slot_wait, front, idle = _within_slots(
        C, base, t_kv, slots, t_decode_step=pp_d * d["t_stage"], decode_time=decode_time, prefill=p, n_p=n_p, arrival=arrival,
        on_arrival=dcost.engine.first_token_on_kv_arrival, front=pcost.ttft_overhead, overlaps=cost_overlaps(prefill.engine, arrival),
        recv_interval=decode_recv_interval, n_d=n_d, next_loop=first_token_next_loop)
    alone = base + idle  # the lone prefill as an arrival finds the pool: its idle extra where the pool is idle (first_token)
    base = alone + front + admit + step_wait
    return {
        "ttft_s": ttft, "tpot_s": d["tpot"], "tok_s_per_user": 1.0 / d["tpot"], "output_tok_s_per_gpu": rate * osl / gpus,
        "io_tok_s_per_gpu": rate * (np.asarray(isl, float) + osl) / gpus, "accepted_per_step": d["acc"] + 0.0 * d["tpot"],
        "step_s": d["t_stage"], "draft_s": d["t_draft"] + 0.0 * d["t_stage"], "prefill_alone_s": alone + 0.0 * ttft, "kv_transfer_s": t_kv,
        "decode_admission_s": admit + 0.0 * ttft, "prefill_step_wait_s": step_wait + 0.0 * ttft, "prefill_wait_s": ttft - base - slot_wait,
        "decode_slot_wait_s": slot_wait + 0.0 * ttft, "front_end_s": front + 0.0 * ttft, "prefill_capacity_req_s": n_p * p["per_instance"], "request_rate": rate, "gpus": gpus,
        "fits": fits, "prefill_fits": p["fits"], "max_concurrency": held, "decode_kv_slots": kv_slots, **_decode_eager(d),
        "decode_free_for_kv": d["free_for_kv"] + 0.0 * d["tpot"],  # a decode rank's KV bytes: whole_seqs' room (estimate_disagg)
        "decode_instance_batch": np.minimum(C, slots) / n_d + 0.0 * d["tpot"]}  # a decode instance's requests as priced


def _decode_eager(d: dict) -> dict:
    """evaluate_disagg's keys of a decode step the workers' graphs miss (decode_pool's `d`): its launches beyond the
    kernels a step, the batch a rank, that part of TPOT, the launches (0: captured), and TPOT (iteration / accepted) with
    the launches at the launch cost's range's ends (decode_pool's iteration_ends), which _eager_rows reads."""
    return {"decode_eager_s": d["eager"], "decode_batch": d["batch"], "decode_eager_tpot_s": d["iteration_parts"]["eager"] / d["acc"],
            "decode_eager_n": d["parts"].eager_n + 0.0 * d["tpot"], "decode_piecewise": np.asarray(d["parts"].piecewise, float) + 0.0 * d["tpot"],
            "decode_tpot_lo_s": d["iteration_ends"][0] / d["acc"], "decode_tpot_hi_s": d["iteration_ends"][1] / d["acc"]}


def decode_graphs(decode: Deployment, given):
    """The decode workers' CUDA graphs (largest batch per rank, padded): `given` per deployment (evaluate_disagg's
    decode_cuda_graph_max_bs), where it is NaN or None the decode Deployment's cuda_graph_max_bs, else NaN (the engine's
    default capture, serve.aggregated.default_capture, applies: decode_pool)."""
    own = np.nan if decode.cuda_graph_max_bs is None else float(decode.cuda_graph_max_bs)
    return own if given is None else np.where(np.isnan(np.asarray(given, float)), own, given)


def _decode_slots(d: dict, decode_plan: Plan, n_d, decode_max_batch) -> tuple:
    """The decode pool's slots, what its KV cache holds (as the engine reserves it, Engine.kv_budget) and its step budget
    schedules (decode_pool's `d`), and the engine's batch limit per attention-DP rank where given; a pool that holds no
    sequence has infinite slots (C is priced; its fits is False). Returns (slots, what runs at once: the slots, or where
    none holds a sequence its figure)."""
    adp = np.asarray(decode_plan.arrays()[4], float)
    per_rank = np.where(d["max_per_instance"] >= 1, d["max_per_instance"], np.inf) / adp
    if decode_max_batch is not None:
        per_rank = np.minimum(per_rank, np.asarray(decode_max_batch, float))
    slots = n_d * adp * per_rank
    return slots, np.where(d["max_per_instance"] >= 1, slots, d["max_per_instance"] * n_d)


def _within_slots(C, base, t_kv, slots, *, decode_time, arrival, **pools) -> tuple:
    """first_token's (rate, ttft, admission, step wait), the wait for a decode slot where the decode
    pool holds `slots` requests, and first_token's front end's work paid: in a closed loop it completes at most
    slots / decode time a second and TTFT is what is left of the cycle, C / rate - decode time; in a burst a wave
    is what the slots hold and the rest wait whole waves, each one cycle, as serve.aggregated prices them."""
    if arrival != "burst":
        # past the slots the loop runs at what the decode pool completes, and a prefilled request waits for a slot: the
        # prefill pool sees that rate (a request reaches it only after its last one left a slot), so its queue is priced at
        # it and the rest of the cycle is the slot wait (first_token's rate_cap). Each prefill rank serves its requests'
        # per-request cost one at a time (serve.aggregated._front_bound): n_p x adp / ttft_overhead a second at most, and
        # where that binds first the rest of the cycle is a wait in that queue, not for a slot
        cap = slots / np.maximum(decode_time, 1e-12)
        fronts = np.asarray(pools["n_p"], float) * pools["prefill"]["adp"] / np.maximum(np.asarray(pools.get("front", 0.0), float), 1e-30)
        rate, ttft, admit, step_wait, front, idle = first_token(C, base, t_kv, decode_time=decode_time, arrival=arrival,
                                                                rate_cap=np.minimum(cap, fronts), **pools)
        wait = np.maximum(C / rate - decode_time - ttft, 0.0)
        queued = np.where(fronts < cap, wait, 0.0)
        return rate, ttft + wait, admit, step_wait, wait - queued, front + queued, idle
    held = np.minimum(C, slots)
    rate, ttft, admit, step_wait, front, idle = first_token(held, base, t_kv, decode_time=decode_time, arrival=arrival, **pools)
    slot_wait = np.maximum(C / held - 1.0, 0.0) * held / rate
    return rate, ttft + slot_wait, admit, step_wait, slot_wait, front, idle


def _check_pools(model: ModelSpec, prefill: Deployment, decode: Deployment, recv_interval=1, moe_a2a: str = "") -> None:
    """Each pool's KV-cache format (one its engine holds for the model's attention, as serve.estimate.check's) and plan
    (one its GPUs run), refused in one line naming the pool; the decode pool's receive interval (check_recv_interval) and
    MoE exchange (check_moe_a2a)."""
    check_recv_interval(decode, recv_interval)
    check_moe_a2a(model, decode, moe_a2a)
    from llm_codesign.spec.plan import reason_text, validity

    for field, d in (("prefill", prefill), ("decode", decode)):
        check_kv_format(d.engine, d.gpu, d.precision.kv.name, model)
        code = int(np.asarray(validity(model, d.gpu, d.plan, d.plan.gpus)).reshape(-1)[0])
        if code >= 0:
            raise InputError(field, d.plan.label(), reason_text(model, d.gpu, code))


def check_recv_interval(decode: Deployment, interval) -> None:
    """A decode receive interval past 1 only where the decode engine has one: SGLang's --scheduler-recv-interval (no other
    engine skips polls: TensorRT-LLM's and vLLM's loops read new requests every iteration), and only on a decode pool
    without attention DP, which SGLang refuses (SchedulerRecvSkipper: `assert not server_args.enable_dp_attention`,
    managers/scheduler_recv_skipper.py:15@0.5.8.post1, still there @0.5.12.post1)."""
    from llm_codesign.spec.engines.sglang import SGLANG

    if interval == 1:
        return
    if decode.engine.name != SGLANG.name:
        raise InputError("decode_recv_interval", interval, f"1 with {decode.engine.name} decode servers "
                         "(SGLang only: --scheduler-recv-interval)")
    adp = int(np.max(np.asarray(decode.plan.arrays()[4])))
    if adp > 1:
        raise InputError("decode_recv_interval", interval, f"1 with an attention-DP decode pool ({decode.plan.label()}: "
                         "SGLang refuses --scheduler-recv-interval under --enable-dp-attention)")


def check_moe_a2a(model: ModelSpec, decode: Deployment, backend) -> None:
    """A decode MoE exchange other than the engine's own only where it is priced: SGLang's (`--moe-a2a-backend deepep
    --deepep-mode low_latency`, the InferenceX wide-EP decode recipes'; TensorRT-LLM and vLLM name their exchanges
    otherwise) on a MoE model's decode pool with attention DP and EP > 1. DeepEP needs EP > 1 (SGLang forces ep_size =
    tp_size under deepep, server_args.py `_handle_a2a_moe`); under TP attention SGLang would scatter the tokens and
    dispatch them too, which cost.ffns.moe_ops does not price (it keeps the all-reduce there), so that is refused rather
    than answered as if the flag were absent."""
    from llm_codesign.spec.engines import MOE_A2A_BACKENDS
    from llm_codesign.spec.engines.sglang import SGLANG

    if backend == "":
        return
    if not isinstance(backend, str) or backend not in MOE_A2A_BACKENDS:
        raise InputError("decode_moe_a2a", backend, "one of: " + ", ".join(repr(b) for b in MOE_A2A_BACKENDS)
                         + " ('' the engine's own exchange)")
    if decode.engine.name != SGLANG.name:
        raise InputError("decode_moe_a2a", backend, f"the engine's own ('') with {decode.engine.name} decode servers "
                         "(SGLang only: --moe-a2a-backend deepep --deepep-mode low_latency)")
    _, _, ep, _, adp, _ = (int(np.max(x)) for x in decode.plan.arrays())
    if not model.is_moe or adp < 2 or ep < 2:
        raise InputError("decode_moe_a2a", backend, f"the engine's own ('') with a decode pool of {decode.plan.label()} "
                         "(DeepEP's exchange is priced on a MoE model's decode pool with attention DP and EP > 1, "
                         "e.g. attention_dp=8,ep=8)")


def _capacity_note(prefill: Deployment, isl: int) -> str:
    """What the prefill pool's req/s is (prefill_pool's per_instance): its steps filled with prompts up to a rank's step
    budget, so above 1 / the prefill time of a request alone."""
    n = int(np.asarray(prefill.rank_step_tokens).reshape(-1)[0])
    return (f"the prefill pool's capacity, its steps filled with prompts up to the step budget ({n:,} tokens a rank: "
            f"{n / isl:.3g} prompts of {isl:,}); the prefill column is one request's alone, so 1 / it is less")


def _check_counts(concurrencies, **counts) -> None:
    """estimate_disagg's counts: each a positive integer, the loads positive."""
    for name, v in counts.items():
        if v is None or isinstance(v, bool) or v < 1 or v != int(v):
            raise InputError(name, v, "a positive integer")
    if not len(concurrencies) or min(concurrencies) < 1:
        raise InputError("concurrency", concurrencies, "positive integers")


def estimate_disagg(model: ModelSpec, prefill: Deployment, decode: Deployment, *, calibration: Calibration,
                    decode_calibration: Calibration | None = None, prefill_instances: int, decode_instances: int, concurrencies,
                    isl: int, osl: int, decode_max_batch: int | None = None, arrival: str = DEFAULT_ARRIVAL,
                    prefill_routing: str | None = None, decode_recv_interval: int = 1, decode_moe_a2a: str = "") -> dict:
    """One disaggregated deployment (one instance of each pool, as evaluate_disagg takes them) at each concurrency, after
    checking both plans on their GPUs; `decode_max_batch` caps the sequences each decode attention-DP rank runs (the engine's
    max batch size), the rest waiting for a slot; `arrival` how the requests come, `prefill_routing` how a prefill instance
    spreads them over its ranks (evaluate_disagg; _notes), `decode_recv_interval` the decode iterations between the decode
    workers' polls (decode_admission), `decode_moe_a2a` their MoE exchange ("" the engine's own; check_moe_a2a)."""
    gpu, dg, prefill_plan, decode_plan = prefill.gpu, decode.gpu, prefill.plan, decode.plan
    from llm_codesign.spec.plan import check_step_budget

    check_arrival(arrival)
    check_pool_vendors(gpu, dg)  # one engine build on both pools (a Deployment pair built by hand too)
    check_step_budget(decode, "max_num_tokens" if decode.max_num_tokens == prefill.max_num_tokens else "decode_max_num_tokens")
    check_step_budget(prefill)
    routing = routing_of(prefill.engine, prefill_routing)

    _check_counts(concurrencies, isl=isl, osl=osl, prefill_instances=prefill_instances, decode_instances=decode_instances,
                  decode_max_batch=1 if decode_max_batch is None else decode_max_batch, decode_recv_interval=decode_recv_interval)
    _check_pools(model, prefill, decode, decode_recv_interval, decode_moe_a2a)
    model.check_context(isl, osl)
    # the prefill pool's engine refuses a prompt over its budget unchunked; the decode pool's requests are generation-only,
    # which TensorRT-LLM does not check (spec.plan.check_whole_prompt)
    check_whole_prompt(prefill, isl, osl=osl)
    C = np.asarray(concurrencies, float)
    r = evaluate_disagg(model, prefill, decode, calibration=calibration, decode_calibration=decode_calibration,
                        prefill_instances=prefill_instances, decode_instances=decode_instances, concurrency=C, isl=isl, osl=osl,
                        decode_max_batch=decode_max_batch, arrival=arrival, prefill_routing=prefill_routing,
                        decode_recv_interval=decode_recv_interval, decode_moe_a2a=decode_moe_a2a)
    if not bool(np.all(r["prefill_fits"])):
        raise InputError("prefill", prefill_plan.label(), f"a plan whose {int(prefill_plan.gpus)} GPUs hold the model and one {isl}-token prompt")
    if float(np.max(r["max_concurrency"])) < 1:
        raise InputError("decode", decode_plan.label(), f"a plan whose GPUs hold the model and one sequence of "
                                                        f"{_seq_text(isl, osl, decode.engine.kv_budget[2])}")

    held = dict(decode_instances=decode_instances, adp=int(np.max(decode_plan.arrays()[4])), max_batch=decode_max_batch, isl=isl, osl=osl,
                share=decode.engine.kv_budget[2], full=whole_seqs(model, decode.precision, dg, decode_plan, decode.spec, k=draft_lengths(
                    decode.spec, None, osl)[0], seq_len=isl + osl, free=r["decode_free_for_kv"]) * decode_instances)  # at ISL+OSL (_holds)
    rows = _rows(r, C, **held)
    if osl > 1:  # at OSL 1 the one output token comes from the prefill: no decode step to miss a CUDA graph
        _eager_rows(rows, r, C, decode)
    return {"model": model.name, "gpu": gpu.id, "decode_gpu": dg.id, "precision": prefill.precision.label(), "backend": prefill.backend,
            "isl": isl, "osl": osl, "arrival": arrival,
            # each pool's own engine and precision (the top-level keys are the prefill pool's)
            "prefill": {"plan": prefill_plan.label(), "backend": prefill.backend, "precision": prefill.precision.label(),
                        "instances": prefill_instances, "gpus_each": int(prefill_plan.gpus),
                        "routing": routing,
                        "capacity_req_s": float(np.asarray(r["prefill_capacity_req_s"]).reshape(-1)[0]),
                        # newc9 #18: 3.34 req/s beside a 315 ms prefill (1 / 0.315 = 3.17) read as an error: prefill_pool's
                        # per_instance is whole steps of prompts up to the budget, a lone request's prefill runs one
                        "capacity_note": _capacity_note(prefill, isl)},
            "decode": {"plan": decode_plan.label(), "backend": decode.backend, "precision": decode.precision.label(),
                       "instances": decode_instances, "gpus_each": int(decode_plan.gpus),
                       "max_concurrency": int(np.asarray(r["max_concurrency"]).reshape(-1)[0]),
                       **({"max_batch": int(decode_max_batch)} if decode_max_batch is not None else {}),
                       **({"recv_interval": int(decode_recv_interval)} if decode_recv_interval != 1 else {}),
                       **({"moe_a2a": decode_moe_a2a} if decode_moe_a2a else {})},
            "num_gpus": int(np.asarray(r["gpus"]).reshape(-1)[0]), "notes": _slot_note(rows, r, **held) + _eager_note(rows) + _notes(prefill, prefill_routing, decode_plan, isl=isl),
            "rows": rows}


def _rows(r: dict, C, **over) -> list[dict]:
    """estimate_disagg's rows from evaluate_disagg's `r` over the loads `C`: TTFT's parts as the CLI lists them (hand-off =
    transfer + decode admission; the prefill side's wait = its running step + its queue; the decode-slot wait its own part,
    past the decode pool's slots; the front end's overhead paid, the table's "request overhead": the parts add up to TTFT), and where a row does not fit, why (_over_slots, given `over`'s pool)."""
    def col(key, scale=1.0):
        return [float(x) * scale for x in np.broadcast_to(r[key], C.shape)]

    r = {**r, "hand_off_s": r["decode_admission_s"], "waits_s": r["prefill_step_wait_s"] + r["prefill_wait_s"]}
    # decode_batch: the requests a decode instance runs at once (evaluate_disagg's decode_instance_batch), which the row's
    # intervals' ideal step reads (measure.intervals.band_disagg_rows)
    rows = [dict(zip(("concurrency", "ttft_ms", "prefill_ms", "kv_transfer_ms", "prefill_wait_ms", "decode_slot_wait_ms", "front_end_ms",
                      "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu", "fits", "decode_batch"), vals, strict=True))
            for vals in zip([int(c) for c in C], col("ttft_s", 1e3), col("prefill_alone_s", 1e3), col("hand_off_s", 1e3),
                            col("waits_s", 1e3), col("decode_slot_wait_s", 1e3), col("front_end_s", 1e3), col("tpot_s", 1e3), col("tok_s_per_user"),
                            col("output_tok_s_per_gpu"), [bool(x) for x in np.broadcast_to(r["fits"], C.shape)], col("decode_instance_batch"),
                            strict=True)]
    held, kv = _slots(r)
    for row in rows:  # as estimate's over_capacity says it (serve.estimate._over_capacity)
        if not row["fits"]:
            row["over_capacity"] = _over_slots(row["concurrency"], held, **kv, **over)
    return rows


def _eager_rows(rows: list[dict], r: dict, C, decode: Deployment) -> None:
    """Each row whose decode step misses the decode workers' CUDA graphs (evaluate_disagg's decode_eager_n > 0) and whose
    launches show, beyond its kernels (decode_eager_s > 0) or only at the launch cost's upper end, gets `eager_decode`,
    the note an aggregated estimate carries (serve.eager.eager_note: the batch, the capture, the extra a step and its TPOT
    share as the iteration counts it, decode_eager_tpot_s, the flag that avoids it), with TPOT's log moves from the pool's
    iteration at the range's ends (decode_tpot_lo_s / hi_s, as serve.aggregated.eager_tpot_moves) and TTFT's: the
    wait for a decode slot (decode_slot_wait_s: whole requests decoding) moves as TPOT; the prefill, the hand-off and
    the admission do not wait out decode iterations (their step wait is left out)."""
    get = {key: np.broadcast_to(np.asarray(r[key], float), C.shape) for key in (
        "decode_eager_s", "decode_batch", "decode_eager_tpot_s", "tpot_s", "ttft_s", "decode_eager_n", "decode_tpot_lo_s",
        "decode_tpot_hi_s", "decode_slot_wait_s", "decode_piecewise")}
    for j, row in enumerate(rows):
        v = {key: float(x[j]) for key, x in get.items()}
        down, up = (float(x) for x in log_moves(v["tpot_s"], (v["decode_tpot_lo_s"], v["decode_tpot_hi_s"])))
        if v["decode_eager_n"] <= 0 or (v["decode_eager_s"] <= 0 and up <= 0):
            continue
        wait = v["decode_slot_wait_s"]
        ttft = log_moves(v["ttft_s"], tuple(v["ttft_s"] + wait * (t / v["tpot_s"] - 1.0) for t in (v["decode_tpot_lo_s"], v["decode_tpot_hi_s"])))
        row["eager_decode"] = eager_note(decode, batch=v["decode_batch"], extra_s=v["decode_eager_s"], part_s=v["decode_eager_tpot_s"],
                                         tpot_s=v["tpot_s"], moves=(down, up), ttft_moves=tuple(float(x) for x in ttft),
                                         here="--decode-cuda-graph-max-bs", piecewise=v["decode_piecewise"] > 0).to_dict()


def _slots(r: dict) -> tuple[int, dict]:
    """(requests the decode pool holds at once, {"kv": sequences its KV cache holds as the engine sizes them}), of
    evaluate_disagg's `r`."""
    one = [int(np.asarray(r[k]).reshape(-1)[0]) for k in ("max_concurrency", "decode_kv_slots")]
    return one[0], {"kv": one[1]}


def _eager_note(rows: list[dict]) -> list[str]:
    """One line under disagg's table (`notes`: the CLI's and the page's) for the loads whose decode step runs without CUDA
    graphs (the rows' `eager_decode`): the loads, each one's batch per rank, extra a step and TPOT share, then the capture
    that avoids them all (the largest load's) and what the eager cost rests on, once (it printed the whole paragraph per
    load, "CUDA graphs at 1 requests", review 2026-12-06)."""
    e = [(row["concurrency"], row["eager_decode"]) for row in rows if "eager_decode" in row and row["eager_decode"]["extra_ms_per_step"] > 0]
    hidden = [(row["concurrency"], row["eager_decode"]) for row in rows if "eager_decode" in row and row["eager_decode"]["extra_ms_per_step"] <= 0]
    if hidden and not e:  # hidden under the kernels at 35 us at every such load: the first one's one line
        return [f"CUDA graphs at {hidden[0][0]} request{'s' if hidden[0][0] != 1 else ''}: {hidden[0][1]['note']}"]
    if not e:
        return []
    if any(x.get("piecewise") for _, x in e):  # vLLM's piecewise decode graphs: every captured load replays its pieces
        return [_piecewise_line(e)]
    last = max((x for _, x in e), key=lambda x: x["cuda_graph_max_bs"])  # its capture covers every load's batch
    tail = last["note"].split(f"Avoid it with {last['avoid']}. ", 1)[-1]  # how the launches are priced, and that it is unmeasured
    tail = re.sub(r"TPOT x[0-9.]+-x[0-9.]+ with the launches at the range's ends; each", "each", tail)  # one load's moves, not all's
    loads = ", ".join(str(c) for c, _ in e)
    each = "; ".join(f"{x['batch_per_rank']:.4g} per rank at {c}: +{x['extra_ms_per_step']:.3g} ms a step, {x['share_of_tpot']:.0%} of TPOT" for c, x in e)
    return [f"CUDA graphs: decode runs without them at {loads} request{'s' if loads != '1' else ''} (captured: {last['captured']}), "
            f"so each step launches every kernel from the host (host/eager_launches): {each}. Avoid it with {last['avoid']}. {tail}"]


def _piecewise_line(e: list) -> str:
    """_eager_note's line where the decode workers replay vLLM's piecewise graphs (the rows' eager_decode piecewise): the
    loads whose attention ops' launches outlast the kernels, each one's extra a step and TPOT share, the advice and how the
    launches are priced, once (the last load's note's tail)."""
    loads = ", ".join(str(c) for c, _ in e)
    each = "; ".join(f"{x['batch_per_rank']:.4g} per rank at {c}: +{x['extra_ms_per_step']:.3g} ms a step, {x['share_of_tpot']:.0%} of TPOT" for c, x in e)
    last = e[-1][1]
    tail = last["note"].split(f"Avoid it with {last['avoid']}. ", 1)[-1]
    tail = re.sub(r"TPOT x[0-9.]+-x[0-9.]+ with the launches at the range's ends; each", "each", tail)  # one load's moves, not all's
    return (f"Piecewise CUDA graphs: the decode workers launch each layer's attention ops from the host between the graph pieces "
            f"(host/eager_launches) at {loads} request{'s' if loads != '1' else ''}: {each}. Avoid it with {last['avoid']}. {tail}")


def _slot_note(rows: list[dict], r: dict, **over) -> list[str]:
    """The line under disagg's table (the CLI's, the page's, lc.disagg's `notes`) where loads pass what the decode pool
    holds: the limit once (_holds), the loads it turns away (the rows' `fits` false), where their wait is."""
    loads = [str(row["concurrency"]) for row in rows if not row["fits"]]
    if not loads:
        return []
    held, kv = _slots(r)
    return [f"fits no at {', '.join(loads)} requests: {_holds(held, **kv, **over)}; the rest wait for a decode slot (slot wait, in TTFT)"]


def _over_slots(concurrency: int, held: int, **pool) -> str:
    """One line on why `concurrency` requests do not fit a decode pool that runs `held` at once (_holds), and what the rest do."""
    return f"{_holds(held, **pool)}: {concurrency - held} of {concurrency} wait for a decode slot (decode_slot_wait_ms, in TTFT)"


def _seq_text(isl: int, osl: int, share: float) -> str:
    """A sequence's tokens as the decode engine sizes its KV cache (memory.fit's occupancy, Engine.kv_budget): ISL+OSL
    where it reserves the whole (TensorRT-LLM), else its mean context during decode, ISL + share x OSL."""
    return f"{isl}+{osl} tokens" if share >= 1.0 else f"{isl}+{share * osl:.10g} tokens (its mean context)"


def _holds(held: int, *, kv: int, full: int, decode_instances: int, adp: int, max_batch, isl: int, osl: int, share: float) -> str:
    """'decode pool holds 7 requests (why)': the limit that binds a decode pool that runs `held` at once (the engine's max
    batch per attention-DP rank, the KV cache's `kv` sequences as the engine sizes them, or else the step budget). Where
    the engine sizes its cache at a mean context (`share` < 1 of the OSL), the sequences at it and the `full` ISL+OSL
    ones, as estimate's over-capacity line says (serve.estimate._over_capacity)."""
    n = f"{decode_instances} instance{'s' if decode_instances != 1 else ''}"
    seqs = seqs_text(kv, isl, osl, share, full)
    if max_batch is not None and held == decode_instances * adp * int(max_batch) and held < kv:
        why = f"{n} x {adp} attention-DP rank{'s' if adp != 1 else ''} x max batch {int(max_batch)}"
    elif held >= kv:
        why = f"the KV cache of {n} holds {seqs}"
    else:
        why = f"the KV cache of {n} holds {seqs}, the step budget schedules {held}"
    return f"decode pool holds {held} request{'s' if held != 1 else ''} ({why})"


@dataclass(frozen=True)
class DisaggEstimate:
    """One disaggregated deployment over its loads (estimate_disagg's answer, typed): the prefill pool's GPU and the
    decode pool's, the precision and engine both run, each pool's plan, instances and figures (`prefill`, `decode`),
    the GPUs in all, and per concurrency a row (`rows`: TTFT and its parts, TPOT, tok/s/user, tok/s/GPU, whether the
    decode pool holds every request at once (`fits`; where not, `over_capacity` says what holds how many, and the
    rest's wait is `decode_slot_wait_ms`), and the metrics' 80% and 95% `intervals`), and `notes`, the lines disagg prints
    under its table (and the page under its own: _slot_note's "fits no at ...", _eager_note's "CUDA graphs: ...", the engine both pools run, what was asked
    and changed nothing). Times in ms, as `disagg --json`
    prints them: `to_dict()` is that JSON, `to_records()`/`to_pandas()` one flat row per concurrency."""
    model: str
    gpu: str
    decode_gpu: str
    precision: str
    backend: str
    isl: int
    osl: int
    arrival: str
    prefill: dict
    decode: dict
    num_gpus: int
    notes: tuple
    rows: tuple
    # the bundled profile's measured error on the shipped disaggregated runs, the sentence ending disagg's caption and shown
    # on the page (measure.accuracy.disagg_measured); "" with a profile of one's own
    measured: str = ""

    def to_dict(self) -> dict:
        """What `llm-codesign disagg --json` prints."""
        return {f.name: list(getattr(self, f.name)) if isinstance(getattr(self, f.name), tuple) else getattr(self, f.name)
                for f in fields(self)}

    def to_records(self) -> list[dict]:
        """One flat dict of plain values per concurrency, no pandas needed: the deployment (`prefill_plan`,
        `decode_instances`, ...), the row's metrics (ms) and each metric's 80% and 95% bounds (`ttft_ms_lo80` ...,
        `interval_widened`: serve.metrics.interval_columns)."""
        head = {"model": self.model, "gpu": self.gpu, "decode_gpu": self.decode_gpu, "precision": self.precision, "backend": self.backend,
                "isl": self.isl, "osl": self.osl, "arrival": self.arrival, "num_gpus": self.num_gpus,
                **{f"{pool}_{k}": v for pool in ("prefill", "decode") for k, v in getattr(self, pool).items()}}
        return [head | {k: v for k, v in r.items() if k != "intervals"} | interval_columns(r.get("intervals")) for r in self.rows]

    def to_pandas(self):
        """`to_records()` as a DataFrame, one row per concurrency (pandas is an optional dependency)."""
        from llm_codesign.serve.metrics import records_frame  # a None stays None, as in to_records and the JSON

        return records_frame(self.to_records())
