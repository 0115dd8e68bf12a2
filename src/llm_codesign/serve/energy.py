"""Energy per token: each GPU's board power from what its steps do, between its idle power and its
TDP (data/power.toml, every constant cited there), and the output tokens per joule it buys, for the
GPU alone and with the node's share (CPUs, NICs, switches, fans: the rest of its DGX system's rating).

A board draws P = idle + (TDP - idle) * activity. An operator's activity is min(1, compute * u_c +
memory * u_m): u_c its useful FLOP rate against the GPU's dense peak, u_m the share of its time its
memory traffic takes (Op.t_memory); a step's is its operators' averaged by time, times the share of
the step its kernels fill (the host's share, its scheduling and launches, idles at P0). A request's
life mixes its wave's prefill steps and its decode steps (serve.aggregated._phase_parts): the power
is their time-weighted mean. docs/energy.md states the sources and the error.

Bounds: P never exceeds TDP, so tokens per joule is never below the TDP figure
(`tokens_per_joule_at_tdp`, the least a GPU at its limit delivers), and P never falls under idle,
so it never exceeds output tok/s / idle. Both bounds are of the GPU alone."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ops import forward_ops
from llm_codesign.serve import aggregated as agg
from llm_codesign.serve.disagg import decode_graphs, decode_pool
from llm_codesign.spec.hardware import Gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Workload


@cache
def _table() -> dict:
    return tomllib.loads(resources.files("llm_codesign").joinpath("data/power.toml").read_text())


def _entry(section: dict, gpu: Gpu) -> dict | None:
    # then the catalog GPU it derives from (Gpu.base_id): the page's what-if keeps the base's TDP (the form has no TDP
    # field) and board, which is all the idle reading and the node's share per GPU depend on here (review crev #6)
    for key in (gpu.id.lower(), *(a.lower() for a in gpu.aliases), *((gpu.base_id.lower(),) if gpu.base_id else ())):
        if key in section:
            return section[key]
    return None


@dataclass(frozen=True)
class BoardPower:
    """What the power model knows of one GPU: TDP, idle power (P0, engine resident), the node's share
    per GPU (None where no system rating is bundled), and where each figure comes from."""
    tdp_w: float
    idle_w: float
    idle_source: str
    node_w: float | None
    node_source: str | None

    def at(self, activity):
        """Board watts at `activity` (0 idle .. 1 TDP), arrays broadcast."""
        return self.idle_w + (self.tdp_w - self.idle_w) * np.clip(np.asarray(activity, float), 0.0, 1.0)


def board_power(gpu: Gpu) -> BoardPower:
    """The bundled power figures for `gpu` (data/power.toml): its measured idle power where one is
    listed, else the default share of its TDP; its DGX system's share per GPU where one is listed."""
    t = _table()
    idle = _entry({k: v for k, v in t["idle"].items() if isinstance(v, dict)}, gpu)
    if idle is not None:
        idle_w, idle_src = min(float(idle["w"]), gpu.tdp_w), idle["source"]
    else:
        f = t["idle"]["default_fraction"]
        idle_w, idle_src = f * gpu.tdp_w, f"{f:.0%} of TDP: no reading of this GPU bundled (the median share of the GPUs measured)"
    node = _entry(t["node"], gpu)
    node_w = node_src = None
    if node is not None:
        node_w = (node["system_max_w"] - node["gpus"] * node["gpu_tdp_w"]) / node["gpus"]
        node_src = (f"{node['system']}: ({node['system_max_w'] / 1e3:g} kW max - {node['gpus']} x {node['gpu_tdp_w']} W) / {node['gpus']}"
                    f" ({node['source']})")
    return BoardPower(tdp_w=gpu.tdp_w, idle_w=idle_w, idle_source=idle_src, node_w=node_w, node_source=node_src)


def _peak(gpu: Gpu, math):
    """The GPU's dense peak for a GEMM's math (BF16's where none, or where the GPU has none for it); an array of maths (an
    operator whose loads run two kernels: cost.ffns._either) gives each element its own."""
    if isinstance(math, np.ndarray):
        return np.vectorize(lambda m: _peak(gpu, str(m)), otypes=[float])(math)
    return gpu.peak(math or "bf16") or gpu.peak("bf16")


def kernel_activity(ops, gpu: Gpu, pdl: float = 0.0):
    """The time-weighted activity of a step's operators (0 .. 1), arrays over what they were priced
    for: each operator's min(1, compute * u_c + memory * u_m), weighted by its time in the step
    (op_step_time). u_c: its useful FLOPs over its time at the GPU's dense peak for its math (tile
    padding is not work); u_m: the share of its time its memory traffic takes (Op.t_memory). A
    collective counts as memory traffic (u_m = 1)."""
    w = _table()["activity"]
    num = den = 0.0
    for op in ops:
        t = agg.op_step_time(op, pdl)
        if not np.any(t):
            continue
        time = np.asarray(op.time, float)
        safe = np.where(time > 0, time, 1.0)
        if op.kind == "comm":
            a = np.full(np.shape(time), w["memory"])
        else:
            peak = _peak(gpu, op.math if op.kind == "gemm" else None)
            u_c = np.minimum(np.asarray(op.flops, float) / (safe * peak), 1.0)
            u_m = np.minimum(np.asarray(op.t_memory, float) / safe, 1.0)
            a = np.minimum(w["compute"] * u_c + w["memory"] * u_m, 1.0)
        num = num + t * a
        den = den + t
    return np.where(np.asarray(den) > 0, num / np.where(np.asarray(den) > 0, den, 1.0), 0.0)


@dataclass(frozen=True)
class Energy:
    """Power and output tokens per joule of a deployment at its loads (arrays over them): the board's
    mean watts, tokens per joule of the GPU alone, with the node's share (None where the GPU has none
    bundled) and at TDP (the GPU alone at its limit: never above `tokens_per_joule`), each phase's
    activity and the share of a request's life in prefill steps."""
    power: BoardPower
    gpu_w: np.ndarray
    tokens_per_joule: np.ndarray
    tokens_per_joule_node: np.ndarray | None
    tokens_per_joule_at_tdp: np.ndarray
    prefill_activity: np.ndarray
    decode_activity: np.ndarray
    prefill_time_share: np.ndarray

    def at(self, i: int = 0) -> dict:
        """Load `i`'s figures in plain types: what estimate --json and each frontier point print."""
        def one(a):
            return None if a is None else float(np.asarray(a).reshape(-1)[i])
        p = self.power
        return {"tokens_per_joule": one(self.tokens_per_joule), "tokens_per_joule_node": one(self.tokens_per_joule_node),
                "tokens_per_joule_at_tdp": one(self.tokens_per_joule_at_tdp), "gpu_w": one(self.gpu_w), "idle_w": p.idle_w,
                "tdp_w": p.tdp_w, "node_w": p.node_w, "prefill_activity": one(self.prefill_activity),
                "decode_activity": one(self.decode_activity), "prefill_time_share": one(self.prefill_time_share),
                "idle_source": p.idle_source, "node_source": p.node_source}


def energy_of(parts: dict, gpu: Gpu, pdl: float, output_tok_s_per_gpu) -> Energy:
    """Energy from serve.aggregated.evaluate(with_ops=True)'s parts and the output tok/s per GPU
    it is charged to."""
    bp = board_power(gpu)
    a_pf = kernel_activity(parts["prefill_ops"], gpu, pdl) * np.clip(parts["prefill_kernel_share"], 0.0, 1.0)
    a_dec = kernel_activity(parts["ops"], gpu, pdl) * np.clip(parts["decode_kernel_share"], 0.0, 1.0)
    f = np.clip(np.asarray(parts["prefill_time_share"], float), 0.0, 1.0)
    watts = bp.at(f * a_pf + (1.0 - f) * a_dec)
    out = np.asarray(output_tok_s_per_gpu, float)
    return Energy(bp, gpu_w=watts, tokens_per_joule=out / watts, tokens_per_joule_node=None if bp.node_w is None else out / (watts + bp.node_w),
                  tokens_per_joule_at_tdp=out / bp.tdp_w, prefill_activity=a_pf, decode_activity=a_dec, prefill_time_share=f)


def energy(model: ModelSpec, dep: Deployment, workload: Workload, concurrency, *, calibration: Calibration,
           output_tok_s_per_gpu=None) -> Energy:
    """Energy of `dep` serving `workload` at `concurrency` requests in flight (an int or an array),
    charged to the output tok/s per GPU the same evaluation gives, or to `output_tok_s_per_gpu` where
    the caller holds them already (a search's frontier: the very figures it prints)."""
    r = agg.deployment_ops(model, dep, workload, cal=calibration, concurrency=concurrency)
    out = r["output_tok_s_per_gpu"] if output_tok_s_per_gpu is None else output_tok_s_per_gpu
    return energy_of(r, dep.gpu, agg.pdl_per_launch(dep.gpu, dep.engine.costs(calibration)), out)


def disagg_energy(model: ModelSpec, prefill: Deployment, decode: Deployment, *, calibration: Calibration, prefill_instances: int,
                  decode_instances: int, concurrency: int, isl: int, osl: int, output_tok_s_per_gpu: float,
                  decode_max_batch: int | None = None, decode_cuda_graph_max_bs: int | None = None,
                  arrival: str = DEFAULT_ARRIVAL) -> dict:
    """Energy of a disaggregated unit (serve.disagg) at `concurrency` requests in flight, charged to
    its output tok/s per GPU: each prefill instance runs full prefill steps for the share of the time
    its pool is busy (the request rate over the pool's capacity) and idles for the rest; each decode
    instance runs decode steps all the time. The figures of Energy.at, for the unit's GPUs on average
    (the activities are each pool's; the prefill time share is the prefill GPUs' busy share). `decode_max_batch`,
    `decode_cuda_graph_max_bs`, `arrival`: as serve.disagg.evaluate_disagg takes them."""
    gpu, sh_p = prefill.gpu, prefill.plan.broadcast()
    pc, dc = prefill.engine.costs(calibration), decode.engine.costs(calibration)
    # the prefill pool's loaded step (serve.disagg.prefill_pool): a full step budget of prompts
    mnt = float(np.asarray(agg.engine_budget(gpu, engine=prefill.engine, max_num_tokens=prefill.max_num_tokens, plan=prefill.plan,
                                                 chunked_prefill=prefill.chunked_prefill)[0]))
    chunk = min(float(isl), mnt)
    full = max(mnt, chunk)
    pf_ops = forward_ops(model, gpu, pc.cal, prefill.precision, sh_p, b=agg.prefill_batch(tokens=full, isl=isl, chunk=chunk), engine=pc.engine)
    t_full = agg.prefill_step(model, gpu, prefill.precision, sh_p, costs=pc, tokens=full, isl=isl, chunk=chunk)
    t_full = float(np.asarray(t_full).reshape(-1)[0])
    capacity = prefill_instances * float(np.asarray(prefill.plan.adp).reshape(-1)[0]) * full / isl / t_full
    gpus_p, gpus_d = prefill_instances * prefill.num_gpus, decode_instances * decode.num_gpus
    busy = min(output_tok_s_per_gpu * (gpus_p + gpus_d) / osl / capacity, 1.0)
    # the decode pool's own step and iteration (serve.disagg.decode_pool, as evaluate_disagg prices it: its capture, the
    # workers' max_num_seqs, the arrival's micro-batches); each stage's GPUs run its kernels m times an iteration
    # (StepParts.iteration: below the depth a stage idles while the others run), so the activity is over the iteration
    pp_d = float(np.asarray(decode.plan.pp).reshape(-1)[0])
    d = decode_pool(model, gpu, decode.precision, decode.plan, costs=dc, per_instance=concurrency / decode_instances, isl=isl, osl=osl,
                    spec=decode.spec, max_num_tokens=decode.max_num_tokens, kv_fraction=decode.kv_fraction,
                    cuda_graph_max_bs=decode_graphs(decode, decode_cuda_graph_max_bs), max_batch=decode_max_batch,
                    together=arrival != "closed_loop")
    ops = d["ops"]
    bp = board_power(gpu)
    a_pf = kernel_activity(pf_ops, gpu, agg.pdl_per_launch(gpu, pc)) * np.clip(agg.kernels_time(pf_ops, gpu, pc) / t_full, 0.0, 1.0)
    busy_dec = d["micro_batches"] * (agg.kernels_time(ops, gpu, dc) + d["t_draft"] / pp_d)
    a_dec = kernel_activity(ops, gpu, agg.pdl_per_launch(gpu, dc)) * np.clip(busy_dec / d["iteration"], 0.0, 1.0)
    watts = (gpus_p * bp.at(busy * a_pf) + gpus_d * bp.at(a_dec)) / (gpus_p + gpus_d)
    e = Energy(bp, gpu_w=watts, tokens_per_joule=output_tok_s_per_gpu / watts,
               tokens_per_joule_node=None if bp.node_w is None else output_tok_s_per_gpu / (watts + bp.node_w),
               tokens_per_joule_at_tdp=np.asarray(output_tok_s_per_gpu / bp.tdp_w), prefill_activity=a_pf, decode_activity=a_dec,
               prefill_time_share=np.asarray(busy))
    return e.at()
