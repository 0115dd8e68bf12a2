"""Disaggregated serving: prefill instances and decode instances, array-valued.

Prefill instances run prefill-only steps: a request waits in their queue, its prompt runs in steps
of up to the step token budget (batched with other prompts under load), and its KV cache is sent to
a decode instance (NVLink inside the scale-up domain, the NICs beyond it). Decode instances run
decode-only steps, so no prefill chunk ever stalls a token. With `concurrency` requests in flight in
a closed loop, the request rate is concurrency / (TTFT + (OSL-1) x TPOT); the prefill pool serves
it with queueing (M/D/1 per instance), and when the rate would exceed what the prefill pool can
serve, requests queue until it does not (TTFT = concurrency / capacity - (OSL-1) x TPOT).
Throughput per GPU counts both pools. The engine parameters are those fitted on aggregated serving;
no disaggregated measurement is shipped to check this mode against.
"""
from __future__ import annotations

import numpy as np

from . import engines, memory
from .calibration import Calibration
from .cost import collective_time
from .hardware import Gpu
from .model import ModelSpec
from .ops import Sharding
from .parallel import Plan, SpecDecoding
from .precision import Precision
from .serving import _sharding, decode_step, prefill_step


def evaluate_disagg(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, prefill_plan: Plan, decode_plan: Plan,
                    prefill_instances, decode_instances, concurrency, isl, osl, backend: str = "trtllm",
                    spec: SpecDecoding | None = None, spec_k=None, max_num_tokens=None) -> dict:
    """Metrics for every deployment in the broadcast of both plans, instance counts, concurrency,
    ISL/OSL and k; the same keys as serving.evaluate where they mean the same thing."""
    cal = cal.in_step(backend)
    sh_p, sh_d = _sharding(prefill_plan), _sharding(decode_plan)
    g_p, g_d = np.asarray(prefill_plan.gpus, float), np.asarray(decode_plan.gpus, float)
    n_p, n_d = np.asarray(prefill_instances, float), np.asarray(decode_instances, float)
    C, isl, osl = (np.asarray(x, float) for x in (concurrency, isl, osl))
    gpus = n_p * g_p + n_d * g_d
    mnt = np.asarray(engines.step_tokens(backend, gpu) if max_num_tokens is None else max_num_tokens, float)
    budget, fraction, occupancy = engines.KV_BUDGET.get(backend, ("total", memory.USABLE_FRACTION, 0.5))
    if spec is not None:
        k = np.asarray(spec.k if spec_k is None else spec_k, float)
        acc = spec.accepted(k.astype(np.int64))
    else:
        k, acc = np.zeros(1), np.ones(1)

    # decode pool: every request in flight decodes on one of n_d instances (the few in prefill or in
    # transfer are counted there too: a slight overestimate of the decode batch)
    _, pp_d, _, _, adp_d, _ = (np.asarray(x, float) for x in decode_plan.arrays())
    mem_d = memory.fit(model, gpu, prec, sh_d, isl, osl, mnt, fraction, osl_occupancy=occupancy, budget=budget)
    c_rank = C / n_d / adp_d
    t_stage, t_draft, _ = decode_step(model, gpu, cal, prec, sh_d, c_rank / pp_d, isl + osl / 2.0, k, spec, backend)
    tpot = pp_d * t_stage / acc

    # prefill pool: a lone prompt runs in chunks of the budget; a loaded instance fills whole steps
    _, pp_p, _, _, adp_p, _ = (np.asarray(x, float) for x in prefill_plan.arrays())
    mem_p = memory.fit(model, gpu, prec, sh_p, isl, 0.0, mnt, fraction, osl_occupancy=0.0, budget=budget)
    chunk = np.minimum(isl, mnt)
    t_alone = isl / chunk * pp_p * prefill_step(model, gpu, cal, prec, sh_p, chunk, isl, chunk, backend)
    full = np.maximum(mnt, chunk)  # a full step: the budget, or one whole chunk if larger
    # each attention-DP rank runs its own prompts; pipeline stages overlap different prompts' steps
    per_inst = adp_p * full / isl / prefill_step(model, gpu, cal, prec, sh_p, full, isl, chunk, backend)
    capacity = n_p * per_inst  # requests per second the prefill pool can start decoding

    # KV hand-off: one copy of the prompt's cache (and recurrent state), whatever the prefill plan
    # replicates, leaves the prefill instance's GPUs in parallel, each sending its 1/g_p share
    one = Sharding()
    kv = memory.kv_bytes_per_token(model, prec, one, isl) * isl + memory.state_bytes_per_seq(model, one)
    t_kv = collective_time("p2p", kv / g_p, np.maximum(gpus, 2.0), gpu, cal)

    base = t_alone + t_kv + cal.ttft_overhead(backend)
    decode_time = np.maximum(osl - 1.0, 0.0) * tpot
    # closed loop: rate = C / (TTFT + decode); the M/D/1 wait at each prefill instance depends on it
    lam = C / (base + decode_time)
    wait = np.zeros_like(lam)
    for _ in range(40):
        rho = np.minimum(lam / capacity, 0.999)
        wait = rho / (2.0 * (1.0 - rho)) / np.maximum(per_inst, 1e-12)
        lam = C / (base + wait + decode_time)
    ttft = base + wait
    # the prefill pool cannot start more than its capacity: the rest queue in front of it
    saturated = C / (base + decode_time) >= capacity
    ttft = np.where(saturated, np.maximum(ttft, C / capacity - decode_time), ttft)
    rate = C / (ttft + decode_time)
    out_per_gpu = rate * osl / gpus
    fits = (mem_d["free_for_kv"] > 0) & (c_rank <= mem_d["max_seqs_per_rank"]) & (mem_p["max_seqs_per_rank"] >= 1)
    return {
        "ttft_s": ttft, "tpot_s": tpot, "tok_s_per_user": 1.0 / tpot, "output_tok_s_per_gpu": out_per_gpu,
        "io_tok_s_per_gpu": rate * (isl + osl) / gpus, "accepted_per_step": acc + 0.0 * tpot, "step_s": t_stage,
        "draft_s": t_draft + 0.0 * t_stage, "prefill_alone_s": t_alone, "kv_transfer_s": t_kv, "prefill_wait_s": ttft - base,
        "prefill_capacity_req_s": capacity, "request_rate": rate, "gpus": gpus, "fits": fits,
        "max_concurrency": mem_d["max_seqs_per_rank"] * adp_d * n_d,
    }


PLAN_KEYS = {"tp": "tp", "pp": "pp", "ep": "ep", "moe_tp": "moe_tp", "adp": "adp", "attention_dp": "adp", "kvp": "kvp"}


def parse_plan(field: str, text: str, model: ModelSpec) -> Plan:
    """'tp=4,ep=4' -> Plan; unnamed sizes are 1, and a MoE model's moe_tp defaults to what EP leaves."""
    from .errors import InputError

    kw: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, _, val = part.partition("=")
        if key.strip().lower() not in PLAN_KEYS or not val.strip().isdigit() or int(val) < 1:
            raise InputError(field, text, "comma-separated sizes such as tp=4,ep=4 (keys: tp, pp, ep, moe_tp, attention_dp, kvp)")
        kw[PLAN_KEYS[key.strip().lower()]] = int(val)
    if not kw:
        raise InputError(field, text, "at least one size, e.g. tp=8")
    tp, pp, adp, kvp, ep = (kw.get(k, 1) for k in ("tp", "pp", "adp", "kvp", "ep"))
    mtp = kw.get("moe_tp", max(tp * adp * kvp // ep, 1) if model.is_moe else 1)
    return Plan(tp, pp, ep, mtp, adp, kvp)


def estimate_disagg(model: ModelSpec, gpu: Gpu, cal: Calibration, prec: Precision, prefill_plan: Plan, decode_plan: Plan,
                    prefill_instances: int, decode_instances: int, concurrencies, isl: int, osl: int, backend: str = "trtllm",
                    spec: SpecDecoding | None = None, max_num_tokens=None) -> dict:
    """One disaggregated deployment at each concurrency, after checking both plans."""
    from .errors import InputError
    from .parallel import reason_text, validity

    for name, v in (("isl", isl), ("osl", osl), ("prefill_instances", prefill_instances), ("decode_instances", decode_instances)):
        if v is None or v < 1:
            raise InputError(name, v, "a positive integer")
    if not len(concurrencies) or min(concurrencies) < 1:
        raise InputError("concurrency", concurrencies, "positive integers")
    for field, plan in (("prefill", prefill_plan), ("decode", decode_plan)):
        code = int(np.asarray(validity(model, gpu, plan, plan.gpus)).reshape(-1)[0])
        if code >= 0:
            raise InputError(field, plan.label(), reason_text(model, gpu, code))
    C = np.asarray(concurrencies, float)
    r = evaluate_disagg(model, gpu, cal, prec, prefill_plan, decode_plan, prefill_instances, decode_instances, C, isl, osl,
                        backend, spec, max_num_tokens=max_num_tokens)
    if float(np.max(r["max_concurrency"])) < 1:
        raise InputError("decode", decode_plan.label(), f"a plan whose GPUs hold the model and one {isl}+{osl}-token sequence")

    def col(key, scale=1.0):
        return [float(x) * scale for x in np.broadcast_to(r[key], C.shape)]

    rows = [dict(zip(("concurrency", "ttft_ms", "prefill_ms", "kv_transfer_ms", "prefill_wait_ms", "tpot_ms", "tok_s_per_user",
                      "output_tok_s_per_gpu", "fits"), vals, strict=True))
            for vals in zip([int(c) for c in C], col("ttft_s", 1e3), col("prefill_alone_s", 1e3), col("kv_transfer_s", 1e3),
                            col("prefill_wait_s", 1e3), col("tpot_s", 1e3), col("tok_s_per_user"), col("output_tok_s_per_gpu"),
                            [bool(x) for x in np.broadcast_to(r["fits"], C.shape)], strict=True)]
    return {"model": model.name, "gpu": gpu.id, "precision": prec.label(), "backend": backend, "isl": isl, "osl": osl,
            "prefill": {"plan": prefill_plan.label(), "instances": prefill_instances, "gpus_each": int(prefill_plan.gpus),
                        "capacity_req_s": float(np.asarray(r["prefill_capacity_req_s"]).reshape(-1)[0])},
            "decode": {"plan": decode_plan.label(), "instances": decode_instances, "gpus_each": int(decode_plan.gpus),
                       "max_concurrency": int(np.asarray(r["max_concurrency"]).reshape(-1)[0])},
            "num_gpus": int(np.asarray(r["gpus"]).reshape(-1)[0]), "rows": rows}
