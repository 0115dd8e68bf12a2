"""Fit the named efficiency parameters per GPU family on measured kernels (and serving runs).

Coordinate descent in log-parameter space minimising the mean absolute log error (a smooth stand-in
for the median APE the targets are stated in); each step re-prices every row through the same array
formulas the cost model uses, so a fitted parameter means the same thing everywhere. Never per row.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

import numpy as np

from llm_codesign.cost.calibration import (
    BACKEND_KEYED,
    KERNEL_KEYED,
    Calibration,
    calibration_for,
    documented,
)
from llm_codesign.cost.gemm import main_loop_rate
from llm_codesign.errors import InputError, UnsupportedModelError, read_toml
from llm_codesign.measure.kernel_tables import (
    Table,
    engine_of,
    gemm_row_kernel,
    moe_row_kernel,
    moe_row_problem,
    own_ar_mode,
    row_problem,
)
from llm_codesign.measure.stats import BAND_NAMES, concurrency_band, error_stats, polish_bands
from llm_codesign.spec.engines import ENGINES
from llm_codesign.spec.hardware import get_gpu

# which parameters each kernel table informs, with bounds
PARAMS = {
    "gemm": {"gemm_eff_bf16": (0.2, 1.0), "gemm_eff_fp8": (0.2, 1.0), "gemm_eff_fp8_block": (0.2, 1.0), "gemm_eff_fp4": (0.2, 1.0),
             "gemm_overhead_bf16_s": (1e-7, 1e-4), "gemm_overhead_fp8_s": (1e-7, 1e-4),
             "gemm_overhead_fp8_block_s": (1e-7, 1e-4), "gemm_overhead_fp4_s": (1e-7, 1e-4),
             "gemm_k_half_bf16": (1.0, 4096.0), "gemm_k_half_fp8": (1.0, 4096.0), "gemm_k_half_fp8_block": (1.0, 4096.0),
             "gemm_k_half_fp4": (1.0, 4096.0), "bw_eff": (0.3, 1.0), "gemm_blend_p": (1.0, 16.0), "gemm_max_split_k": (1.0, 64.0),
             # DeepGEMM's block-scaled FP8 (SGLang's dense GEMMs on Hopper; rows that name it, kernel_tables.GEMM_SOURCES)
             "gemm_eff_fp8_deepgemm": (0.2, 1.0), "gemm_overhead_fp8_deepgemm_s": (1e-7, 1e-4), "gemm_k_half_fp8_deepgemm": (1.0, 4096.0),
             # CUTLASS's per-tensor FP8 scaled-mm (SGLang's and vLLM's per-tensor FP8 GEMMs on Hopper; GEMM_SOURCES)
             "gemm_eff_fp8_cutlass": (0.2, 1.0), "gemm_overhead_fp8_cutlass_s": (1e-7, 1e-4), "gemm_k_half_fp8_cutlass": (1.0, 4096.0)},
    "prefill_attention": {"attn_prefill_eff": (0.05, 1.0), "attn_prefill_eff_fp8": (0.05, 1.0), "attn_prefill_score_s": (1e-16, 1e-11), "attn_prefill_overhead_s": (1e-7, 1e-3), "attn_prefill_head_s": (1e-12, 1e-6),
                          "attn_prefill_s_half": (1.0, 8192.0)},
    "decode_attention": {"attn_decode_bw_eff": (0.05, 1.0), "attn_decode_bw_eff_fp8": (0.05, 1.0), "attn_overhead_s": (1e-7, 1e-3), "attn_decode_head_s": (1e-12, 1e-6),
                         "attn_decode_flops_eff": (1e-3, 1.0), "attn_decode_group_bf16": (1.0, 128.0),
                         "attn_decode_group_fp8": (1.0, 128.0), "attn_decode_wide_flop_clk": (1.0, 256.0),
                         "attn_decode_max_group": (1.0, 1024.0), "attn_decode_split_s": (1e-7, 2e-5),
                         "attn_decode_mmha_s": (1e-9, 1e-7)},
    "collectives": {"comm_latency_s": (1e-7, 1e-3), "comm_latency_slope_s": (1e-9, 1e-4), "comm_gather_latency_s": (1e-7, 1e-3),
                    "comm_gather_latency_slope_s": (1e-9, 1e-4), "comm_a2a_latency_s": (1e-7, 1e-3),
                    "comm_a2a_latency_slope_s": (1e-9, 1e-4), "comm_bw_eff": (0.05, 1.0), "comm_bw_half_bytes": (1e2, 1e8),
                    "comm_large_latency_s": (1e-6, 1e-2), "comm_large_bw_eff": (0.05, 1.0),
                    # the engines' own all-reduce (cost.kernels._custom_all_reduce), the ranges default.toml states: fitted
                    # only on rows that run it under a CUDA graph (_fitted; benchmarks/fit_hopper_allreduce.py)
                    "custom_ar_latency_s": (1e-6, 15e-6), "custom_ar_twoshot_latency_s": (3e-6, 20e-6), "custom_ar_bw_eff": (0.3, 0.9),
                    "custom_ar_barrier_s": (0.5e-6, 1.5e-6), "custom_ar_peer_s": (0.0, 0.5e-6)},
    "moe": {"moe_eff": (0.05, 1.5), "moe_overhead_s": (1e-7, 1e-3), "moe_route_s": (1e-12, 1e-7)},
    # DeepEP's dispatch and combine (cost.ffns.deepep_time), the ranges default.toml states
    "ep_comm": {"deepep_ll_latency_s": (5e-6, 30e-6), "deepep_ll_expert_s": (1e-10, 1e-7), "deepep_ll_bw_eff": (0.2, 1.0),
                "deepep_ht_latency_s": (10e-6, 60e-6), "deepep_ht_combine_latency_s": (10e-6, 80e-6), "deepep_sm_bw": (5e9, 40e9),
                "deepep_ht_row_s": (1e-8, 5e-7), "deepep_ht_bw_eff": (0.3, 1.0)},
}
# a MoE kernel family's own three (Calibration.moe_kernel), fitted on the per-engine tables' rows of that
# family and GEMM kernel family (moe_parts): its share of the dense peak, its fixed cost per launch and its
# time per assignment to another rank's expert. The share at most 1.1x its dense kernel's (DeepGEMM's grouped
# GEMMs run at 0.95-1.04x its dense ones; 4-bit weights on BF16 math at the BF16 kernel's): moe_parts caps it
KERNEL_PARAMS = {"moe_kernel_eff": (0.02, 1.0), "moe_kernel_overhead_s": (1e-6, 1e-4), "moe_kernel_route_s": (1e-12, 1e-7)}
# and, for the MoE kernel families whose launch sets up every expert a rank holds (TensorRT-LLM's CUTLASS MoE
# runner, and FlashInfer's CUTLASS MoE, which runs its kernels), its time per such expert and launch
# (Calibration.moe_kernel_expert): 1 ns-1 us
EXPERT_SETUP = {"moe_kernel_expert_s": (1e-9, 1e-6)}
EXPERT_SETUP_FAMILIES = ("cutlass", "flashinfer_cutlass")
GROUPED_OVER_DENSE = 1.1
# parameters the local search cannot reach from any start: query-group sizes act through thresholds and
# ceil(); the grouped-GEMM fixed cost and the per-head fallback rate span decades between GPUs
GRID = {"attn_decode_max_group": (8, 16, 24, 32, 48, 64, 1024), "attn_decode_wide_flop_clk": (8, 16, 32, 64, 128),
        "attn_decode_group_bf16": (1, 2, 4, 8, 16, 32, 64, 128), "attn_decode_group_fp8": (1, 2, 4, 8, 16, 32, 64, 128),
        "gemm_max_split_k": (1, 2, 4, 8, 16, 64), "moe_overhead_s": (1e-6, 2e-6, 4e-6, 8e-6, 16e-6, 32e-6, 64e-6),
        "moe_eff": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2), "moe_route_s": (0.1e-9, 0.3e-9, 1e-9, 3e-9, 10e-9, 30e-9)}
GRID.update({"moe_kernel_eff": (0.1, 0.2, 0.3, 0.45, 0.6, 0.8), "moe_kernel_overhead_s": GRID["moe_overhead_s"],
             "moe_kernel_route_s": GRID["moe_route_s"], "moe_kernel_expert_s": (0.01e-6, 0.03e-6, 0.1e-6, 0.3e-6),
             # a profile written before the cost per further peer existed reads it as 0 (calibration._before_peer), which
             # the local search's steps, multiples of the current value, never leave
             "custom_ar_peer_s": (0.05e-6, 0.1e-6, 0.2e-6)})
# serving-software parameters fitted on serving runs: (field, start, lower, upper); per engine where
# the field is in BACKEND_KEYED. Eager launch: PyTorch eager dispatch costs a few to ~30 us per op, none where an overlap
# scheduler hides it (SERVING_NATURAL_LIMITS); its spread
# over the ranks of a stage (eager_skew_s) from none (0: every rank alike) up to 50 us. A limit of none is 0 itself,
# which the search reaches (`moved`).
# The share of a "waves" run's wave re-arriving with a request's cohort (serve.aggregated._own_prefill): 0-1, from 0.1.
# Wait steps: the steps an engine's loop queues ahead of a new request, 0 (synchronous) to 1 (overlapped); the running
# step's rest is the arrival's, not searched (EngineCosts.phase_steps). Attention-DP balancing holds context
# requests for batching_wait_iters = 10, at most timeout_iters = 50 iterations (AttentionDpConfig
# defaults when balancing is on); the search starts at the former.
# Host cost per running sequence: from none up to 100 us (Python per-request work per step).
# Scale-out latency per level of a collective across nodes: from NCCL's own network hop latency, 2.7 us (its tuning
# model's NET Ring LL; Tree LL 5.0, LL128 4.0-8.5, Simple 14: NVIDIA/nccl src/graph/tuning.cc hwLat), up to 100 us.
# The engines' one-shot all-reduce fixed cost is not among them: measured on the H100 per-engine all-reduce rows
# and derived for Blackwell from them (default.toml custom_ar_*; docs/modelling-notes.md#own-allreduce-measured).
class ServingBound(NamedTuple):
    """One serving parameter's search: its start and range, and its words as `calibrate` lists the fitted values and
    names one on a bound (serving_words): label, the scale to its unit, format and unit."""
    name: str
    start: float
    lo: float
    hi: float
    label: str
    scale: float
    fmt: str
    unit: str


SERVING_BOUNDS = (
    ServingBound("step_overhead_s", 2e-3, 1e-5, 0.05, "step overhead", 1e3, ".2f", " ms"),
    ServingBound("ttft_overhead_s", 20e-3, 1e-4, 0.5, "request overhead", 1e3, ".1f", " ms"),
    ServingBound("prefill_queue_fraction", 0.1, 0.0, 1.0, "waves' re-bunching share", 1.0, ".2f", ""),
    ServingBound("eager_launch_s", 1e-5, 0.0, 3e-5, "eager launch", 1e6, ".1f", " us"),
    ServingBound("eager_skew_s", 5e-6, 0.0, 5e-5, "eager launch's spread over a stage's ranks", 1e6, ".1f", " us"),
    ServingBound("scale_out_latency_s", 25e-6, 2.7e-6, 1e-4, "scale-out latency per level", 1e6, ".1f", " us"),
    ServingBound("ttft_wait_steps", 1.0, 0.0, 1.0, "steps queued ahead of a new request", 1.0, ".2f", ""),
    ServingBound("adp_wait_steps", 10.0, 0.0, 60.0, "attention-DP wait steps", 1.0, ".1f", ""),
    ServingBound("seq_overhead_s", 5e-6, 0.0, 1e-4, "host cost per running sequence", 1e6, ".1f", " us"))
SERVING_FIELDS = {b.name for b in SERVING_BOUNDS}
# (field, engine) pairs whose mechanism the engine does not have: kept at default.toml's zero, never fitted
# (an engine that never holds a request under attention DP, Engine.holds_adp_requests, has no adp_wait_steps)
STRUCTURAL_ZEROS = {("adp_wait_steps", name) for name, e in ENGINES.items() if not e.holds_adp_requests}
# (field, engine) pairs the serving runs cannot place: kept at default.toml's documented value (cited there), never fitted.
# ATOM's eager launch and its spread over ranks: re-fitting ATOM's other host costs on its 36 MI355X runs with either held,
# the loss is flat (0.065-0.066) from 0.1 to 5 us and from 0 to 2 us, its request overhead trading 8.3 -> 3.5 ms against them
# Every engine's wait before a prefill: the steps its overlap loop has queued ahead of a new request (1, read in each
# engine's loop: default.toml [default.ttft_wait_steps]); the running step's rest is the arrival's (EngineCosts.phase_steps).
# Fitted, it stood for what the model lacks: TensorRT-LLM's went to the search's top with its prompts scheduled whole
# (the clean sample's DeepSeek-R1 queue, docs/modelling-notes.md#trtllm-dsr1-queue), vLLM's and SGLang's to its floor
# once prompts got only the budget their decodes leave, ATOM's to the top once the front end's work hid only under the
# running step's rest (2026-12-05/06); held at the loops' count instead (docs/modelling-notes.md#wait-arrival-phase)
# TensorRT-LLM's and vLLM's request cost (2026-12-06): their front end's work overlaps the wait in a closed loop
# (Engine.request_cost_overlaps_wait), so the clean sample prices alike from 0 to ~3 ms and InferenceX's 35 TensorRT-LLM
# rows cannot place it either; held at the documented tokenising and JSON (docs/modelling-notes.md#request-overhead-overlap)
DOCUMENTED = {("eager_launch_s", "atom"), ("eager_skew_s", "atom"), ("ttft_wait_steps", "trtllm"), ("ttft_wait_steps", "vllm"),
              ("ttft_wait_steps", "atom"),
              ("ttft_wait_steps", "sglang"), ("ttft_overhead_s", "trtllm"), ("ttft_overhead_s", "vllm"), ("ttft_overhead_s", "atom")}
NOT_FITTED = STRUCTURAL_ZEROS | DOCUMENTED


def serving_words(name: str, value: float | dict[str, float]) -> str:
    """A serving parameter (SERVING_BOUNDS) in words: its label, then its value in its unit, per engine where
    `value` is engine -> value ("request overhead sglang 0.1 ms, trtllm 20.0 ms")."""
    w = next(b for b in SERVING_BOUNDS if b.name == name)
    vals = value.items() if isinstance(value, dict) else [("", value)]
    return f"{w.label} " + ", ".join(f"{b} {v * w.scale:{w.fmt}}{w.unit}".lstrip() for b, v in vals)


# serving search: two cycles on the smooth loss from log steps of 1 and 0.5, then median cycles from a step of
# 0.5 until one gains under POLISH_GAIN (at most POLISH_CYCLES); see fit_serving
POLISH_CYCLES, POLISH_GAIN = 4, 1e-4
ORDER = ("gemm", "prefill_attention", "decode_attention", "collectives", "moe", "ep_comm")  # later kinds reuse earlier fits


def _loss(pred, y):
    ok = np.isfinite(pred) & (pred > 0)
    return float(np.mean(np.abs(np.log(pred[ok] / y[ok])))) if ok.any() else np.inf


def kind_trials(kind: str, rows: list[dict], rounds: int = 6, *, params: dict | None = None) -> int:
    """How many calibrations fit_kind prices: the grid twice over, four log steps per parameter a round."""
    names = _fitted(rows, params or PARAMS[kind])
    return sum(2 * len(GRID[p.partition(".")[0]]) for p in names if p.partition(".")[0] in GRID) + 4 * rounds * len(names)


def _fitted(rows: list[dict], bounds: dict) -> list[str]:
    """The parameters of `bounds` the rows inform (a GEMM kernel family's only where rows run it; the engines' own
    all-reduce's only where rows run it under a CUDA graph, its barrier only where that engine's kernel has one:
    Engine.own_ar_barriers, its cost per further peer only where they run it on more than two GPUs)."""
    kernels = {gemm_row_kernel(r) for r in rows} if any(_kernel_of(p) for p in bounds) else set()  # one pass over the rows
    graph = [r for r in rows if own_ar_mode(r) == "graph"] if any(p.startswith("custom_ar_") for p in bounds) else []
    own = {engine_of(r) for r in graph}
    barriers = any(ENGINES[e].own_ar_barriers for e in own if e in ENGINES)
    # cost.kernels._custom_all_reduce prices custom_ar_peer_s times the peers past the second: nothing at two GPUs
    peers = any(float(r["num_gpus"]) > 2 for r in graph)
    return [p for p in bounds if not (p.startswith("gemm_") and _kernel_of(p) and _kernel_of(p) not in kernels)
            and not (p.startswith("custom_ar_") and not own) and not (p == "custom_ar_barrier_s" and not barriers)
            and not (p == "custom_ar_peer_s" and not peers)]


def _own_start(cal: Calibration, bounds: dict, gpu) -> Calibration:
    """`cal` with each MoE kernel family's share in `bounds` that has no value of its own set to the one it falls
    back to as `gpu` runs it (Calibration.moe_kernel divides an own share by the dense rate times main_loop_rate,
    the fallback's scale does not), so the search starts where the family is priced."""
    for p in bounds:
        table, _, key = p.partition(".")
        if table == "moe_kernel_eff" and key not in dict(cal.moe_kernel_eff):
            kernel = key.partition(".")[2]
            cal = cal.with_param(p, cal.moe_eff_of(kernel) * cal.gemm_eff(kernel) * main_loop_rate(kernel, gpu))
    return cal


def fit_kind(kind: str, rows: list[dict], base: Calibration, family: str, rounds: int = 6, *,
             params: dict | None = None, progress=None, checked: bool = False) -> tuple[Calibration, dict]:
    """Fit one table's parameters for one family, starting from `base`: PARAMS[kind], or `params` (name ->
    bounds; a MoE kernel family's three, "moe_kernel_eff.<family>.<kernel>", Calibration.param).
    `progress(done)`, where given, is called after each calibration priced (kind_trials in all);
    `checked`: row_problem has passed every row already."""
    y = np.array([float(r["latency_ms"]) for r in rows])
    table = Table(kind, rows, checked=checked)  # the rows read once, priced under each calibration the search tries
    cal = _own_start(base, params or PARAMS[kind], get_gpu(rows[0]["system"])) if rows else base
    tried = [0]
    bounds = params or PARAMS[kind]

    def loss(c):
        return _loss(table.predict(lambda g: c)[0], y)

    def trial(c):
        tried[0] += 1
        if progress:
            progress(tried[0])
        return loss(c)

    names = _fitted(rows, bounds)
    best = loss(cal)
    for g, values in list(GRID.items()) * 2:  # stepwise parameters: a grid first, the local search refines
        for p in (p for p in names if p.partition(".")[0] == g):
            for v in values:
                c = cal.with_param(p, float(v))
                val = trial(c)
                if val < best - 1e-6:
                    best, cal = val, c
    step = 0.6  # log-space step, halved each round
    for _ in range(rounds):
        for p in names:
            lo, hi = bounds[p]
            cur = cal.param(p)
            for f in (np.exp(-step), np.exp(-step / 2), np.exp(step / 2), np.exp(step)):
                v = float(np.clip(cur * f, lo, hi))
                c = cal.with_param(p, v)
                val = trial(c)
                if val < best - 1e-6:
                    best, cal, cur = val, c, v
        step /= 2
    pred = table.predict(lambda g: cal)[0]
    # what the fit is worth: the starting profile's error on the same rows, and the efficiencies the
    # search pushed onto a bound (a physical fraction at its limit stands for a missing mechanism or
    # unusable rows, not for the hardware)
    start = error_stats(table.predict(lambda g: base)[0], y)
    at_bounds = []
    for p in names:
        lo, hi = bounds[p]
        v = cal.param(p)
        if ("_eff" in p or p.startswith("moe_kernel_")) and not lo * (1 + 1e-6) < v < hi * (1 - 1e-6):
            # only where the rows inform it: moved 10% inward, the error changes (compute-bound rows leave bw_eff free)
            if abs(loss(cal.with_param(p, v * (1.1 if v <= lo * (1 + 1e-6) else 1 / 1.1))) - best) > 1e-6:
                at_bounds.append(p)
    what = kind if params is None else f"{kind} {names[0].partition('.')[2]}"
    return cal, {"kind": what, "family": family, "rows": len(rows), **error_stats(pred, y),
                 "start_median_ape": start.get("median_ape"), "at_bounds": at_bounds}


def unfit(report: list[dict]) -> list[str]:
    """One phrase per fitted table whose error is not a finite figure (none of its rows priced): nothing
    was fitted, and `calibrate` writes no profile from it, --force or not."""
    return [f"{r['family']} {r['kind']}: " + (f"none of its {r['rows']} rows could be priced" if r.get("median_ape") is None
                                              else f"its error on its {r['rows']} rows is {r['median_ape']}%, not a finite figure")
            for r in report if r.get("median_ape") is None or not np.isfinite(r["median_ape"])]


def doubtful(report: list[dict]) -> list[str]:
    """One phrase per fitted table whose fit is worse than its starting profile on the same rows, lands
    an efficiency on its bound, or (the serving search) stopped still gaining, made a figure validate prints on its
    own runs worse (own_worse: fit_profile's own_check) or fitted more parameters than its runs' measured TTFTs and
    TPOTs (measurements); `calibrate` refuses to write such a profile without --force."""
    out, over = [], []
    for r in report:
        med, start = r.get("median_ape"), r.get("start_median_ape")
        if med is None:  # unfit's, not a judgement call
            continue
        if start is not None and med > start + 1e-9:
            out.append(f"{r['family']} {r['kind']}: median error {med:.1f}% against the starting profile's {start:.1f}% on the same rows")
        if r.get("at_bounds"):
            out.append(f"{r['family']} {r['kind']}: {', '.join(r['at_bounds'])} on the bound of its range (median error {med:.1f}%)")
        if said := underdetermined(r):
            over.append(f"{r['family']} {r['kind']}: {said}")
        out += [f"{r['family']} {r['kind']}: {x}" for x in r.get("limits", []) if x.startswith(FLOORED)]
        if r.get("converged") is False:
            out.append(f"{r['family']} {r['kind']}: the search had not converged after {POLISH_CYCLES} polish cycles (the last gained "
                       f"{r['gain']:.2g} in loss, more than {POLISH_GAIN:g})")
        if r.get("own_worse"):  # validate's figures on the fitted runs (own_check): a lower banded median can hide a worse p90
            out.append(f"{r['family']} {r['kind']}: worse than the starting profile on its own runs as validate measures them: "
                       + "; ".join(r["own_worse"]))
    # the cause first where a serving fit is doubtful: what the starting profile gets wrong on the runs (bias_cause); too
    # few runs (`over`) first of all, whose cause is themselves
    cause = [c for r in report if r.get("kind") == "serving" for c in [bias_cause(r.get("start_bias") or {}, r.get("fitted", []))] if c]
    return over + (cause + out if out else out)


def _kernel_of(param: str) -> str | None:
    for k in ("fp8_block", "bf16", "fp8", "fp4", "fp8_deepgemm", "fp8_cutlass"):
        if param in (f"gemm_eff_{k}", f"gemm_overhead_{k}_s", f"gemm_k_half_{k}"):
            return k
    return None




def fit_kernels(tables: dict[str, list[dict]], profile: str | None = None, *,
                progress=None) -> tuple[dict[str, Calibration], list[dict]]:
    """Fit every family present in the tables ({kind: rows}); returns {family: Calibration} and a report.
    `progress(done, total)`, where given, is called after each calibration priced (fit_kind's trials)."""
    fams: dict[str, Calibration] = {}
    report = []
    work = []  # (kind, family, rows), in ORDER: later kinds start from earlier kinds' fits
    gpus: dict[str, object] = {}  # by system name, looked up once
    for kind in ORDER:
        by_family: dict[str, list[dict]] = {}
        for r in tables.get(kind) or []:
            if row_problem(kind, r):  # listed by validate; the fit uses the rows it can price
                continue
            system = r.get("system", "")
            if system not in gpus:
                try:
                    gpus[system] = get_gpu(system)
                except Exception:  # unknown systems are reported by validate, not fitted
                    gpus[system] = None
            if gpus[system] is not None:
                by_family.setdefault(gpus[system].family, []).append(r)
        # a MoE table's rows by the parameters they inform (moe_groups), fitted apart, one after another
        work += [(kind, fam, key, part) for fam, sub in by_family.items()
                 for key, part in (moe_groups(sub) if kind == "moe" else [(None, sub)])]
    sizes = [kind_trials(kind, part, params=_kernel_bounds(key, None)) for kind, _, key, part in work]
    done, total = 0, sum(sizes)
    for (kind, fam, key, part), n in zip(work, sizes, strict=True):
        base = fams.get(fam) or calibration_for(gpus[part[0].get("system", "")], profile)
        fams[fam], rep = fit_kind(kind, part, base, fam, params=_kernel_bounds(key, base), checked=True,
                                  progress=(lambda d, off=done: progress(off + d, total)) if progress else None)
        report.append(rep)
        done += n
    return fams, report


def moe_groups(rows: list[dict]) -> list[tuple[tuple[str, str] | None, list[dict]]]:
    """One GPU family's MoE rows by the parameters they inform (kernel_tables.moe_row_kernel): the kernel
    tables' own rows the generic three (key None: PARAMS["moe"]), each MoE kernel family's (and GEMM kernel
    family's) rows its own (key (family, kernel): KERNEL_PARAMS), fitted apart (no row responds to another
    family's)."""
    parts: dict[tuple, list[dict]] = {}
    for r in rows:
        if not moe_row_problem(r):
            fam, kern = moe_row_kernel(r, get_gpu(r["system"]))
            parts.setdefault((fam, kern if fam else ""), []).append(r)
    return [(None if fam is None else (fam, kern), part) for (fam, kern), part in sorted(parts.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))]


def _kernel_bounds(key: tuple[str, str] | None, cal: Calibration | None, rate: float = 1.0) -> dict | None:
    """A MoE kernel family's three (and its time per local expert where it sets them all up, EXPERT_SETUP_FAMILIES)
    and their ranges (None for the tables' own rows: PARAMS["moe"]), the share capped at GROUPED_OVER_DENSE x
    `cal`'s dense kernel as the GPU runs it (`rate`: cost.gemm.main_loop_rate; cal None: uncapped, for counting them)."""
    if key is None:
        return None
    fam, kern = key

    def bounds(t):
        lo, hi = KERNEL_PARAMS[t]
        if t != "moe_kernel_eff" or cal is None:
            return lo, hi
        return lo, min(hi, GROUPED_OVER_DENSE * cal.gemm_eff("bf16" if kern == "w4a16" else kern) * rate)
    params = {**KERNEL_PARAMS, **(EXPERT_SETUP if fam in EXPERT_SETUP_FAMILIES else {})}
    return {f"{t}.{fam}.{kern}": params[t] if t in EXPERT_SETUP else bounds(t) for t in params}


def moe_parts(rows: list[dict], cal: Calibration) -> list[tuple[dict | None, list[dict]]]:
    """moe_groups' parts with the parameters each fits and their ranges at `cal` (_kernel_bounds)."""
    return [(_kernel_bounds(key, cal, 1.0 if key is None else main_loop_rate(key[1], get_gpu(part[0]["system"]))), part)
            for key, part in moe_groups(rows)]


def to_toml(fams: dict[str, Calibration], report: list[dict], header: str, serving: dict | None = None, *,
            scope: dict | None = None, start: dict | None = None) -> str:
    """A profile's text: `start` (a starting profile's sections as read, without its [intervals]) carried over as it
    scoped them; each family's of `fams` (the kernel-fitted ones) parameters in full under [<family>]; each fitted serving value
    (`serving`, fit_serving's, for the keys of `scope`: key -> families, GPUs and runs, _ServingFit.scope) under each GPU
    family its runs were on only ([cdna3.step_overhead_s] sglang = ...; cost.calibration reads it after [default], for
    that family's GPUs alone). A value held at its start (no run responds to it) is not written: it reads back as the
    start's, bundled or carried."""
    doc: dict[str, dict] = {k: {n: dict(v) if isinstance(v, dict) else v for n, v in sec.items()}
                            for k, sec in (start or {}).items() if k != "intervals" and isinstance(sec, dict)}
    for fam in sorted(fams):
        cal, sec = fams[fam], doc.setdefault(fam, {})
        for f in fields(Calibration):
            if f.name in SERVING_FIELDS or f.name in BACKEND_KEYED:
                continue  # serving-software parameters: the serving fit's, or the start's as it scoped them
            v = getattr(cal, f.name)
            if f.name in KERNEL_KEYED:
                per: dict[str, dict] = {}
                for key, x in v:
                    moe_fam, _, kern = key.partition(".")
                    per.setdefault(moe_fam, {})[kern] = x
                sec[f.name] = per
            else:
                sec[f.name] = v
    for key, where in (scope or {}).items():
        name, _, b = key.partition(":")
        v = serving[name][b] if b else serving[name]
        for fam in where["families"]:
            sec = doc.setdefault(fam, {})
            if b:
                sec.setdefault(name, {})[b] = v
            else:
                sec[name] = v
    lines = [f"# {line}" for line in header.splitlines()]
    for sec_name in ["default", *sorted(k for k in doc if k != "default")]:
        sec = doc.get(sec_name)
        if sec is None:
            continue
        lines += ["", f"[{sec_name}]"] + [f"{k} = {v:.6g}" for k, v in sec.items() if not isinstance(v, dict)]
        for r in report:
            if r["family"] == sec_name and r.get("median_ape") is not None:
                lines.append(f"# {r['kind']}: {r['rows']} rows, median APE {r['median_ape']:.1f}%, p90 {r['p90_ape']:.1f}%, "
                             f"signed median {r['signed_median_pe']:+.1f}%")
        for k, v in sec.items():
            if not isinstance(v, dict):
                continue
            if k in KERNEL_KEYED:  # [<family>.<table>.<MoE kernel family>] GEMM kernel family = value
                for moe_fam, per in v.items():
                    lines += [f"[{sec_name}.{k}.{moe_fam}]", *(f"{kern} = {x:.6g}" for kern, x in per.items())]
            else:  # [<section>.<table>] engine = value
                lines += [f"[{sec_name}.{k}]", *(f"{e} = {x:.6g}" for e, x in sorted(v.items()))]
    return "\n".join(lines) + "\n"


def scope_words(scope: dict, serving: dict) -> list[str]:
    """calibrate's statement of where each fitted serving value applies (`scope`: _ServingFit.scope's, the fitted keys'),
    one line per engine (and one for the global values): "SGLang on CDNA3 GPUs only, from 10 runs on MI300X: step overhead
    1.28 ms; ...". Every other engine and GPU family keeps the starting profile's values."""
    from llm_codesign.measure.intervals import engine_title, family_name

    groups: dict[tuple, list[str]] = {}
    for key, where in scope.items():
        name, _, b = key.partition(":")
        head = (b, tuple(where["families"]), tuple(where["gpus"]), where["runs"])
        groups.setdefault(head, []).append(serving_words(name, serving[name][b] if b else serving[name]))
    out = []
    for (b, fam, gpus, runs), said in groups.items():
        fams = " and ".join(family_name(f) for f in fam)
        who = f"{engine_title(b)} on {fams} GPUs only" if b else f"every engine on {fams} GPUs only"
        out.append(f"{who}, from {runs} run{'s' if runs != 1 else ''} on {', '.join(gpus)}: {'; '.join(said)}")
    return out


def held_out(rows: list[dict], models: list[str]) -> list[dict]:
    """The rows left once every row of the named models (registry names or Hugging Face ids, matched
    through the registry) is taken out; a name that matches no row is an error, not a silent no-op."""
    from functools import cache

    from llm_codesign.spec.registry import get_model

    @cache
    def key(ref: str) -> str:
        try:
            return get_model(ref).name
        except (InputError, UnsupportedModelError):
            return ref.strip().lower()

    drop = {key(m): m for m in models}
    keys = [key(r.get("model") or "") for r in rows]
    for k, m in drop.items():
        if k not in keys:
            raise InputError("hold-out", m, f"a model with rows in the serving file ({', '.join(sorted(set(keys)))})")
    return [r for r, k in zip(rows, keys, strict=True) if k not in drop]


# bounds of SERVING_BOUNDS that are the quantity's own limit rather than the search's, where a fit may rest:
# no attention-DP wait, a "waves" run's cohorts kept exactly or the whole wave in lockstep (prefill_queue_fraction 0 or 1),
# no host cost per running sequence ("from none"). Any other bound a fit lands on stands for a missing mechanism or unusable
# rows, and `calibrate` refuses it as it refuses a kernel efficiency on its bound.
# The host step's lower end too: an engine whose overlap scheduler hides its host work (SGLang's) leaves the GPU none
# to wait for, and the search's 10 us stands for that. The eager launch's lower end likewise: an overlap scheduler launches
# step n+1's kernels while step n runs (TensorRT-LLM's PyTorch executor, default.toml [default.ttft_wait_steps]), so its
# prefill steps' launches can be all hidden: none (TensorRT-LLM's fit went to the search's old 0.1 us floor in the
# 2026-12-06 re-fit after vdoc, 0.28 us before). No spread of the eager launch over a stage's ranks (every rank alike).
# TensorRT-LLM's attention-DP hold at its top (a "name:engine" entry: that engine's only): it holds a context request at most
# timeout_iters iterations, 60 in the InferenceX scripts that turn the balancing on (default.toml [default.adp_wait_steps]).
SERVING_NATURAL_LIMITS = {("adp_wait_steps", "lo"), ("adp_wait_steps:trtllm", "hi"), ("prefill_queue_fraction", "lo"), ("prefill_queue_fraction", "hi"), ("seq_overhead_s", "lo"),
                          ("step_overhead_s", "lo"), ("eager_launch_s", "lo"),
                          ("eager_skew_s", "lo")}


_SERVING_METRICS = ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu")  # the metrics a serving fit's loss reads


def _measured(r: dict, m: str) -> float:
    """A row's measured metric; NaN where blank or not a number (predict_serving lists such rows)."""
    try:
        return float((r.get(m) or "").strip() or "nan")
    except ValueError:
        return np.nan


_METRIC_WORDS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "output_tok_s_per_gpu": "tok/s/GPU"}


def signed_bias(ys: dict[str, np.ndarray], pred: np.ndarray) -> dict[str, tuple[float, int, int]]:
    """Per metric the fit reads (_SERVING_METRICS, `pred` metric x row): the signed median error of `pred` against the
    measured `ys`, 100 (pred / measured - 1) (validate's "signed %"), the runs on its side of zero and the runs priced."""
    out = {}
    for m, pm in zip(_SERVING_METRICS, pred, strict=True):
        y = ys[m]
        ok = np.isfinite(pm) & np.isfinite(y) & (y > 0) & (pm > 0)
        if ok.any():
            e = 100.0 * (pm[ok] / y[ok] - 1.0)
            med = float(np.median(e))
            out[m] = (med, int(np.sum(np.sign(e) == np.sign(med))), int(ok.sum()))
    return out


def bias_cause(bias: dict[str, tuple[float, int, int]], fitted: list[str]) -> str | None:
    """calibrate's cause of a doubtful serving fit (newcomer review 2026-12-06, finding #2: it named only the symptoms, a
    parameter on its bound): the starting profile's signed bias per metric on the user's runs, and, where TTFT's is the
    largest and no fitted parameter prices TTFT alone (every engine's request overhead, ttft_overhead_s, held at its
    documented value: DOCUMENTED), that the others are being pushed to absorb it, and what to try. None under 0.5% bias."""
    if not any(abs(b) >= 0.5 for b, _, _ in bias.values()):  # a start with no error on the runs has no bias to blame
        return None
    said = ", ".join(f"{_METRIC_WORDS[m]} {'under' if b < 0 else 'over'}-predicted {abs(b):.0f}% on {k} of {n} runs"
                     for m, (b, k, n) in bias.items())
    ttft = abs(bias.get("ttft_ms", (0.0, 0, 0))[0])
    others = max([abs(b) for m, (b, _, _) in bias.items() if m != "ttft_ms"], default=0.0)
    if ttft > others and not any(k.startswith("ttft_overhead_s:") for k in fitted):
        said += ("; no fitted parameter moves TTFT alone (the engines' request overhead is documented, not fitted), so the "
                 "step costs are pushed to absorb it (TPOT may suffer): check what your TTFT includes (the harness's HTTP, tokenising, a "
                 "queue before the engine), or fit TPOT and tok/s/GPU alone with the ttft_ms column left blank")
    return CAUSE + said


CAUSE = "the starting profile's median error on these runs: "  # bias_cause's opening: refuse puts it first
FLOORED = "every host cost fitted for "  # limit_notes' opening where a fit zeroed an engine's host costs: doubtful refuses it


def _limit_words(key: str, side: str, value: float) -> str:
    """'eager launch vllm 0.0 us (its floor)': a serving parameter on a limit of its range, in its unit."""
    name, _, b = key.partition(":")
    return f"{serving_words(name, {b: value} if b else value)} (its {'floor' if side == 'lo' else 'ceiling'})"


def limit_notes(report: dict) -> list[str]:
    """What a serving fit's parameters on a limit of their range (report's on_limits: one they may rest at; at_bounds'
    others are refused) mean, one line per engine (newc7 #6: six H100 vLLM runs took vLLM's step overhead to the search's
    10 us, its eager launch and its host cost per sequence to none, and calibrate reported TPOT 20.7 -> 9.1% as a success).
    Where every parameter fitted for an engine ends at its floor, the runs are faster than the kernels priced and the fit
    removed the host costs to absorb it: the error left is in what a serving fit cannot move (FLOORED; doubtful refuses
    it). With the signed error left per load band (band_bias), so that a residual growing with the batch shows."""
    vals, out = report.get("values", {}), []
    for eng in dict.fromkeys(k.partition(":")[2] for k, _ in report.get("on_limits") or []):
        keys = [(k, side) for k, side in report["on_limits"] if k.partition(":")[2] == eng]
        said = "; ".join(_limit_words(k, side, vals[k]) for k, side in keys)
        if eng and {k for k, side in keys if side == "lo"} == {k for k in report.get("fitted", []) if k.partition(":")[2] == eng}:
            said = ", ".join(serving_words(k.partition(":")[0], {eng: vals[k]}) for k, _ in keys)
            out.append(f"{FLOORED}{eng} ended at the floor of its range ({said}): its runs are faster than the kernels priced and the fit "
                       "removed the host costs to absorb that, so the error left is not host cost but in what a serving fit cannot move "
                       f"(the kernels' and attention's efficiencies){_left(report)}: fit those (`calibrate --kernels` with tables measured "
                       "on the runs' GPU), or read this profile's answers as corrected for a bias, not as measured host costs")
        else:
            out.append(f"on a limit of its range, where the quantity may rest: {said}; the runs would take it further if they could, "
                       f"so what they ask beyond it lies in something the fit does not move{_left(report)}")
    return out


def _left(report: dict) -> str:
    """'; after the fit TPOT is +3% at 1-4 requests (2 runs), +11% at 33+ (2)': the fitted profile's signed error per load
    band of TTFT and TPOT (band_bias), where the runs span more than one band."""
    parts = [f"{_METRIC_WORDS[m]} " + ", ".join(f"{b:+.0f}% at {n}{' requests' if i == 0 and n != 'offline' else ''} ({k}{' runs' if i == 0 else ''})"
                                                 for i, (n, (b, k)) in enumerate(bb.items()))
             for m, bb in (report.get("band_bias") or {}).items() if m in ("ttft_ms", "tpot_ms") and len(bb) > 1]
    return f"; after the fit, the signed error by load: {'; '.join(parts)}" if parts else ""


def unfittable(rows: list[dict], preds: list[dict], unmodeled: list[dict]) -> str | None:
    """Why a serving fit has nothing to fit on `rows` (predict_serving's `preds` and `unmodeled` for
    them), as an InputError's `valid`; None where some row the model prices measures a metric the
    fit's loss reads (_SERVING_METRICS) as a positive finite figure."""
    from llm_codesign.measure.validate import unpriced

    if len(unmodeled) == len(rows):
        return unpriced(rows, unmodeled)
    usable = False
    for i, (r, p) in enumerate(zip(rows, preds, strict=True)):
        for m in _SERVING_METRICS if p else ():
            y = _measured(r, m)
            if np.isfinite(y) and y > 0:
                with np.errstate(over="ignore", divide="ignore"):
                    if not np.isfinite(np.log(p[m] / y)):  # 1e-306 tok/s measured: the error is inf%
                        return (f"measurements the model's predictions can be compared with; row {i + 1} ({r.get('source') or r.get('model')}) "
                                f"measures {m} = {y:g} against {p[m]:.4g} predicted, a ratio beyond a float's range")
                usable = True
    if usable:
        return None
    return (f"a file with at least one row the model can price that measures {', '.join(_SERVING_METRICS)} (what the serving fit "
            f"reads); none of its {len(rows)} rows does ({len(rows) - len(unmodeled)} priced rows measure none of them)")


# A quantity whose lower limit is none (SERVING_BOUNDS' 0: no attention-DP hold, no wave re-arriving) moves in log steps,
# which never reach 0: a step landing under ZERO_SNAP of its range tries the limit itself, and from 0 the search steps
# back in from ZERO_RESTART of the range (0.05 of a fraction, 3 of adp_wait_steps' 60 iterations).
ZERO_SNAP, ZERO_RESTART = 1e-3, 0.05


def moved(cur: float, f: float, lo: float, hi: float) -> float:
    """A parameter at `cur` in [lo, hi] moved by the log-step factor `f`."""
    if lo == 0:
        x = cur * f if cur > 0 else ZERO_RESTART * hi * f
        # only a step down snaps: one up from a value under the snap (a start profile's old 1e-8 floor) moves up
        return float(np.clip(0.0 if f < 1.0 and x < ZERO_SNAP * hi else x, lo, hi))
    return float(np.clip(cur * f, lo, hi))


def descend(state: dict, price, best: float, step: float, *, rounds: int, tried=None) -> tuple[float, object]:
    """Coordinate search: `rounds` passes over `state` (key -> [value, lower, upper]), each trying four log steps
    (`moved`; halved every pass) and keeping what lowers the loss. `price(key)` -> (loss, payload) at the state
    as it stands, `key` the parameter just moved; `best`, the loss at the start. Returns the loss reached and the
    payload of the last step kept (None if none was). `tried()`, where given, is called after each step tried."""
    accepted = None
    for _ in range(rounds):
        for key, v in state.items():
            cur, last = v[0], None
            for f in (np.exp(-step), np.exp(-step / 2), np.exp(step / 2), np.exp(step)):
                v[0] = moved(cur, f, v[1], v[2])
                # a step clipped or snapped onto where it stands, or onto the value just tried, prices nothing new
                if v[0] != cur and v[0] != last:
                    last = v[0]
                    val, payload = price(key)
                    if val < best - 1e-6:
                        best, cur, accepted = val, v[0], payload
                if tried:
                    tried()
            v[0] = cur
        step /= 2
    return best, accepted


class _ServingFit:
    """One serving fit's state: each parameter ("field" or "field:backend" -> [value, lower, upper], in
    SERVING_BOUNDS order, the search order), the rows with their measured metrics, concurrency bands and
    engines, and the predictions at the last accepted state. Rows that measure none of the metrics the
    loss reads (_SERVING_METRICS) are not priced: nothing they predict could move it."""

    def __init__(self, rows: list[dict], fams: dict[str, Calibration], start: Calibration | None):
        from llm_codesign.measure.validate import METRICS
        from llm_codesign.measure.validate import row_problem as serving_row_problem  # not kernel_tables' (a kernel row's)

        self.fams = fams
        backends = sorted({(r.get("backend") or "trtllm").strip().lower() for r in rows})
        ys = {m: np.array([_measured(r, m) for r in rows]) for m in METRICS}
        # a row validate rejects (its row_problem: concurrency 'abc') is never priced, and its fields are not numbers to band
        parsed = np.array([serving_row_problem(r, i + 2) is None for i, r in enumerate(rows)], dtype=bool)
        with np.errstate(invalid="ignore"):
            kept = np.nonzero(parsed & np.any([np.isfinite(ys[m]) & (ys[m] > 0) for m in _SERVING_METRICS], axis=0))[0]
        self.rows = [rows[i] for i in kept]
        self.ys = {m: y[kept] for m, y in ys.items()}
        self.state = {}
        for name, init, lo, hi in ((b.name, b.start, b.lo, b.hi) for b in SERVING_BOUNDS):
            for key in ([f"{name}:{b}" for b in backends if (name, b) not in NOT_FITTED] if name in BACKEND_KEYED else [name]):
                v = init
                if start is not None:
                    b = key.partition(":")[2]
                    v = dict(getattr(start, name)).get(b, init) if b else getattr(start, name)
                self.state[key] = [float(np.clip(v, lo, hi)), lo, hi]
        self.held: dict[str, float] = {}  # parameters no row responds to (hold_unexercised): kept at their start
        self.band = polish_bands(self.rows)  # the kept rows' bands (on the bundled campaigns every row is kept)
        self.engines = np.array([(r.get("backend") or "trtllm").strip().lower() for r in self.rows])
        self.by_engine = {b: np.nonzero(self.engines == b)[0] for b in backends}
        self.accepted = self.predicted()

    def scope(self) -> dict[str, dict]:
        """Each searched parameter's evidence (its key -> families, GPUs and runs): the rows the model priced (a
        finite prediction), of its engine for a per-engine one, of every engine for a global one. A profile writes a
        fitted value for those GPU families only (to_toml): runs on one family say nothing of another's host CPU,
        engine build (SGLang on MI300X runs lmsysorg/sglang:v0.5.12-rocm700-mi30x, on NVIDIA GPUs -cu130 images:
        SemiAnalysisAI/InferenceX@843c6254 configs/amd-master.yaml:66, configs/nvidia-master.yaml:863) or network
        (newcomer review 2026-12-06: SGLang's costs fitted on 10 MI300X runs took B200's SGLang answers from 5961 to
        3133 tok/s/GPU)."""
        priced = np.isfinite(self.accepted).any(axis=0)
        gpus = np.array([get_gpu((r.get("gpu") or "").strip()).name if p else "" for r, p in zip(self.rows, priced, strict=True)], dtype=object)
        fams = np.array([get_gpu((r.get("gpu") or "").strip()).family if p else "" for r, p in zip(self.rows, priced, strict=True)], dtype=object)
        out = {}
        for key in self.state:
            b = key.partition(":")[2]
            on = priced & (self.engines == b) if b else priced
            out[key] = {"families": sorted(set(fams[on])), "gpus": sorted(set(gpus[on])), "runs": int(on.sum())}
        return out

    def fitted(self) -> dict:
        out = {n: {} for n in BACKEND_KEYED}
        for key, x in [*((k, v[0]) for k, v in self.state.items()), *self.held.items()]:
            name, _, b = key.partition(":")
            if b:
                out[name][b] = x
            else:
                out[name] = x
        return out

    def hold_unexercised(self) -> None:
        """Take out of the search each parameter no row's prediction responds to anywhere in its range (moved to either
        bound, every prediction of its engine's rows, or of all rows for a global one, stays where it was, to 1e-9):
        it keeps its starting value (the profile the fit starts from). The scale-out latency without a run across
        scale-up domains (cost.kernels.collective_time prices no scale-out level inside one), another engine's or an
        attention-DP hold without attention-DP runs: a search from a start it cannot leave wrote the search's start
        (25 us scale-out on 7 single-node vLLM runs, newcomer review 2026-12-06) over the bundled fit's 6.5 us."""
        for key in list(self.state):
            v = self.state[key]
            cur, only, responds = v[0], key.partition(":")[2] or None, False
            for x in (v[1], v[2]):
                if x != cur and not responds:
                    v[0] = x
                    responds = not np.allclose(self.predicted(only), self.accepted, rtol=1e-9, atol=0.0, equal_nan=True)
            v[0] = cur
            if not responds:
                self.held[key] = self.state.pop(key)[0]

    def apply(self, c: Calibration) -> Calibration:
        kw = {}
        for name, v in self.fitted().items():
            kw[name] = tuple(sorted({**dict(getattr(c, name)), **v}.items())) if name in BACKEND_KEYED else v
        return replace(c, **kw)

    def predicted(self, only: str | None = None) -> np.ndarray:
        """Predictions (metric x row) at the current state; with `only` an engine, re-price that engine's
        rows and take the others from the last accepted state (its parameters touch no other row)."""
        from llm_codesign.measure.validate import predict_serving

        cals: dict[str, Calibration] = {}  # one object per family per pass, so rows group and vectorise

        def cal_for(g):
            if g.family not in cals:
                cals[g.family] = self.apply(self.fams.get(g.family) or calibration_for(g))
            return cals[g.family]

        idx = self.by_engine[only] if only else np.arange(len(self.rows))
        preds, _ = predict_serving([self.rows[i] for i in idx], cal_override=cal_for)
        out = self.accepted.copy() if only else np.full((len(_SERVING_METRICS), len(self.rows)), np.nan)
        out[:, idx] = [[pr.get(m, np.nan) if pr else np.nan for pr in preds] for m in _SERVING_METRICS]
        return out

    def loss(self, p: np.ndarray, *, smooth: bool) -> float:
        tot = []
        for m, pm in zip(_SERVING_METRICS, p, strict=True):
            ok = np.isfinite(pm) & np.isfinite(self.ys[m]) & (self.ys[m] > 0) & (pm > 0)
            if ok.any():
                e = np.abs(np.log(pm[ok] / self.ys[m][ok]))
                bb = self.band[ok]
                tot.append(np.mean(np.minimum(e, 1.0)) if smooth else np.mean([np.median(e[bb == k]) for k in np.unique(bb)]))
        return float(np.mean(tot)) if tot else np.inf

    def cycle(self, step: float, *, smooth: bool, rounds: int, tried=None) -> float:
        """`rounds` passes of `descend` over the parameters from a log step of `step`, each engine's
        parameters re-pricing that engine's rows; returns the loss reached."""
        held = [self.loss(self.accepted, smooth=smooth)]

        def price(key: str) -> tuple[float, np.ndarray]:
            p = self.predicted(key.partition(":")[2] or None)
            val = self.loss(p, smooth=smooth)
            if val < held[0] - 1e-6:  # descend keeps this step (its rule): the next engine's re-pricing takes these rows
                held[0], self.accepted = val, p
            return val, p

        best, accepted = descend(self.state, price, held[0], step, rounds=rounds, tried=tried)
        if accepted is not None:
            self.accepted = accepted
        return best

    def keep_documented(self) -> None:
        """A per-engine parameter that no row responds to (the attention-DP wait of an engine measured
        without attention DP) keeps its documented default instead of wherever the search started."""
        ref, cited = self.predicted(), documented()
        for key, v in self.state.items():
            name, _, b = key.partition(":")
            if b and b in dict(getattr(cited, name)):
                cur, v[0] = v[0], dict(getattr(cited, name))[b]
                if not np.array_equal(self.predicted(), ref, equal_nan=True):
                    v[0] = cur

    def at_bounds(self, best: float) -> list[str]:
        """The parameters on a bound they are not naturally at (SERVING_NATURAL_LIMITS), where the rows
        respond to them: moved 10% of the way inward, the error changes."""
        out = []
        for key, v in self.state.items():
            cur, lo, hi = v
            side = _limit_side(cur, lo, hi)
            if side is None or (key, side) in SERVING_NATURAL_LIMITS or (key.partition(":")[0], side) in SERVING_NATURAL_LIMITS:
                continue
            v[0] = cur + 0.1 * (hi - lo) * (1 if side == "lo" else -1) if lo <= 0 else (lo * 1.1 if side == "lo" else hi / 1.1)
            moved = self.loss(self.predicted(), smooth=False)
            v[0] = cur
            if abs(moved - best) > 1e-6:
                name, _, b = key.partition(":")
                out.append(serving_words(name, {b: cur} if b else cur))
        return out

    def on_limits(self) -> list[tuple[str, str]]:
        """Every searched parameter (the rows respond to each somewhere in its range: hold_unexercised) that ended on a
        limit of its range, natural or the search's: (key, "lo" or "hi"); limit_notes reads an engine whose fitted values
        all sit at their floor from them, at_bounds tests which of the search's limits the rows press on."""
        return [(key, side) for key, (cur, lo, hi) in self.state.items() if (side := _limit_side(cur, lo, hi))]

    def band_bias(self) -> dict[str, dict[str, tuple[float, int]]]:
        """Per metric the fit reads, the signed median error (validate's signed %) of the fitted predictions in each load
        band of the runs (stats.concurrency_band): a residual that grows with the batch is a cost the fit cannot move."""
        bands = np.array([concurrency_band(r) for r in self.rows])
        out = {}
        for m, pm in zip(_SERVING_METRICS, self.accepted, strict=True):
            y = self.ys[m]
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(pm) & np.isfinite(y) & (y > 0) & (pm > 0)
            got = {b: (e["signed_median_pe"], e["n"]) for b in (*BAND_NAMES, "offline") for on in [ok & (bands == b)]
                   if on.any() for e in [error_stats(pm[on], y[on])]}
            if got:
                out[m] = got
        return out


def _limit_side(cur: float, lo: float, hi: float) -> str | None:
    """"lo" or "hi" where a fitted value sits on that limit of its range (to 1e-6 of it), else None."""
    return "lo" if cur <= lo + 1e-6 * abs(lo) else "hi" if cur >= hi - 1e-6 * abs(hi) else None


def _serving_report(fit: _ServingFit, best: float, start_loss: float, start_bias: dict, *, converged: bool, gain: float) -> dict:
    """fit_serving's report (as fit_kind's, for `doubtful`): "rows" are those fitted on (fit.rows; a row validate rejects
    is skipped), not the file's; the values on a limit of their range and what they mean (limit_notes)."""
    out = {"kind": "serving", "family": "default", "rows": len(fit.rows), "loss": best, "start_loss": start_loss,
           "median_ape": 100 * float(np.expm1(best)), "start_median_ape": 100 * float(np.expm1(start_loss)),
           "at_bounds": fit.at_bounds(best), "converged": converged, "gain": gain, "fitted": list(fit.state), "held": list(fit.held),
           "scope": fit.scope(), "start_bias": start_bias, "on_limits": fit.on_limits(), "values": {k: v[0] for k, v in fit.state.items()},
           "band_bias": fit.band_bias(), "measurements": measurements(fit.ys)}
    return out | {"limits": limit_notes(out)}


# the measurements a serving fit counts against its fitted parameters: each run's TTFT and its decode rate, its TPOT or,
# where that is blank, its tok/s/GPU (the loss reads both, but where a run has both its tok/s/GPU follows from its TPOT,
# TTFT and requests: no third independent figure of the run)
def measurements(ys: dict[str, np.ndarray]) -> int:
    """The measured TTFTs and decode rates (TPOT, else tok/s/GPU) among a serving fit's rows (`ys`, metric -> the rows'
    values; blank: NaN)."""
    def has(m: str):
        y = ys.get(m)
        return False if y is None else np.isfinite(y) & (y > 0)

    return int(np.sum(has("ttft_ms")) + np.sum(has("tpot_ms") | has("output_tok_s_per_gpu")))


def underdetermined(report: dict) -> str:
    """Where a serving fit (its report) moved more parameters than its runs measure (measurements), what `calibrate` says:
    refused unless forced, a warning then (newc12 #3: 4 fitted on one run, 2 of them on their floors, written unasked):
    any of many settings fits such runs as well, and the profile carries the one found to every answer on the family.
    '' otherwise."""
    n, k = report.get("measurements"), len(report.get("fitted") or [])
    if n is None or k <= n:
        return ""
    return (f"{k} parameters fitted on {n} measurements (each run's TTFT and TPOT, or tok/s/GPU where its TPOT is blank, "
            "count one each): more unknowns than measurements, so the runs do not determine them; add runs at other "
            "concurrencies or lengths")


def serving_trials(rows: list[dict], rounds: int = 8, *, warm: bool = False) -> int:
    """The most steps fit_serving tries on `rows` (its cycles all run: the polish may stop sooner);
    `warm`: from a given start, the median cycles only."""
    engines = {(r.get("backend") or "trtllm").strip().lower() for r in rows}
    params = sum(sum((name, b) not in NOT_FITTED for b in engines) if name in BACKEND_KEYED else 1 for name in (b.name for b in SERVING_BOUNDS))
    return ((0 if warm else 2) + POLISH_CYCLES) * rounds * params * 4


def fit_serving(rows: list[dict], fams: dict[str, Calibration], rounds: int = 8, start: Calibration | None = None, *,
                report: dict | None = None, progress=None, hold: bool = False) -> tuple[dict[str, Calibration], dict]:
    """Fit the serving-software parameters on measured serving runs: per-backend step overheads,
    the prefill queue fraction, the engines' one-shot all-reduce and the scale-out collective
    latency (SERVING_BOUNDS). One set across the families present (calibrate writes each for its runs' families: to_toml).
    With `start` (a profile's values), the search continues from there with the median cycles only:
    a re-fit after a model change polishes the previous optimum instead of searching afresh.
    `report`, where given, is filled as fit_kind's report (for `doubtful`): the fit's error and the starting
    profile's (`fams` as given, its own serving values) on the same rows, in the fit's own measure (the
    banded median log error, as a percentage: exp(loss) - 1), the parameters on a bound they are not
    naturally at (SERVING_NATURAL_LIMITS) where the rows respond to them, and whether the polish
    converged (a cycle gained under POLISH_GAIN within POLISH_CYCLES). `progress(done, total)`, where
    given, is called after each step tried (serving_trials in all). Rows none of which the model prices
    with a measured metric the loss reads are an InputError (`unfittable` says why, file by file). `hold`
    (calibrate's): what no row responds to keeps `start`'s value (hold_unexercised; report's "fitted", "held")."""
    from llm_codesign.measure.validate import predict_serving
    from llm_codesign.serve.aggregated import reuse_step_kernels

    total, done = serving_trials(rows, rounds, warm=start is not None), [0]

    def tried():
        done[0] += 1
        progress(done[0], total)

    step = tried if progress else None
    with reuse_step_kernels():  # most steps of the search change host costs only, which no kernel reads
        fit = _ServingFit(rows, fams, start)
        if not np.isfinite(fit.loss(fit.accepted, smooth=False)):  # nothing to fit: every step would be inf, and every profile as good
            raise InputError("serving", f"{len(rows)} rows", f"rows the model can price that measure {', '.join(_SERVING_METRICS)} "
                             "within a float's range of the predictions (`llm-codesign calibrate --serving FILE` names the rows)")
        fit.hold_unexercised() if hold else None
        if report is not None:  # the profile the fit starts from, priced on the same rows
            start_pred = np.array([[pr.get(m, np.nan) if pr else np.nan for pr in predict_serving(
                fit.rows, cal_override=lambda g: fams.get(g.family) or calibration_for(g))[0]] for m in _SERVING_METRICS])
            start_loss, start_bias = fit.loss(start_pred, smooth=False), signed_bias(fit.ys, start_pred)
        # coordinate search in log space, halving the step each round. The first cycles minimise a smooth
        # stand-in (mean log error, clipped at e-fold so that pathological runs cannot dominate); the median
        # the targets are stated in (taken per concurrency band, CONCURRENCY_BANDS) is flat in places and
        # traps a search started far off, so it only polishes, in cycles from where the previous one ended,
        # each restarting from a wider step, until a cycle stops paying. A given start skips the smooth cycles.
        if start is None:
            # a second smooth cycle from half the step: one cycle leaves early parameters where the later ones
            # have since moved the optimum (on the 1,513-row form of the serving sample, with the polish then
            # on one median over all rows: 0.1449 against 0.1516)
            fit.cycle(1.0, smooth=True, rounds=rounds, tried=step)
            fit.cycle(0.5, smooth=True, rounds=rounds, tried=step)
        best, converged = fit.loss(fit.accepted, smooth=False), False
        for _ in range(POLISH_CYCLES):
            prev, best = best, fit.cycle(0.5, smooth=False, rounds=rounds, tried=step)
            if prev - best < POLISH_GAIN:
                converged = True
                break
        progress(total, total) if progress else None  # the polish cycles it did not need
        fit.keep_documented()
        if report is not None:
            report.update(_serving_report(fit, best, start_loss, start_bias, converged=converged, gain=prev - best if POLISH_CYCLES else 0.0))
    return {fam: fit.apply(c) for fam, c in fams.items()}, {**fit.fitted(), "loss": best}


@dataclass(frozen=True)
class Profile:
    """A calibration profile fitted by `calibrate` (fit_profile): its TOML `text` (what `calibrate -o` writes), each
    fit's `report` (family, kind, rows, error against the starting profile) and the fitted serving parameters
    (`serving`, None without serving runs). `path` is where it was written (None: not written); `as_path()` is the
    path to price with (a profile is read by its path, caches keyed by it and the file's stamp: an unwritten one is
    written once to a private file named by its text, removed at exit, which answers call "this Profile"), which the
    API's `calibration=` takes a Profile through."""
    text: str
    report: tuple
    serving: dict | None = None
    path: str | None = None
    serving_rows: tuple = field(default=(), repr=False)  # the fitted serving runs, for what calibrate says of their columns
    left_out: tuple = ()  # the serving rows not priced or priced past the memory check, in words (_serving_rows)
    checks: dict = field(default_factory=dict, repr=False, compare=False, hash=False)  # own_check's figures "before" (the starting profile) and "after"

    def as_path(self) -> str:
        if self.path is not None:
            return self.path
        return _temporary(self.text)

    def write(self, path: str) -> "Profile":
        """The profile written to `path` (whole or not at all; checked first: outputs.check_writable), as `calibrate -o`."""
        from llm_codesign.cost.calibration import _cached
        from llm_codesign.measure.intervals import _profile_table
        from llm_codesign.outputs import check_writable, write_text

        check_writable("output", path)
        write_text(path, self.text)
        # every profile read so far dropped: a file written twice in one timestamp tick would keep its first read
        # (cost.calibration.file_stamp keys the caches on the file's times, which tick coarser than two writes)
        _cached.cache_clear()
        _profile_table.cache_clear()
        return replace(self, path=str(path))


_TEMPORARY: dict[str, str] = {}  # a profile's text -> its private file, the TEMPORARY_KEPT most recently used
# the web API takes a profile's text per request (up to 1 MiB): a long-running server keeps the last 64 texts' files and
# labels, not every one it was ever sent (the final review: disk and memory grew without bound)
TEMPORARY_KEPT = 64
_TEMPORARY_LOCK = threading.Lock()


def _temporary(text: str) -> str:
    """The private file of an unwritten profile's `text`, named by the text's sha256 (the same text, the same file; two
    threads with two texts, two files), written whole under a temporary name and renamed into place under a lock, in
    one folder removed at exit; answers call it "this Profile" (cost.calibration.LABELS), never by its private name."""
    import atexit
    import contextlib
    import hashlib
    import os
    import shutil
    import tempfile

    from llm_codesign.cost.calibration import LABELS

    with _TEMPORARY_LOCK:
        if text not in _TEMPORARY:
            if not hasattr(_temporary, "folder"):  # one private folder, removed at exit
                _temporary.folder = tempfile.mkdtemp(prefix="llm-codesign-profile-")
                atexit.register(shutil.rmtree, _temporary.folder, ignore_errors=True)
            path = os.path.join(_temporary.folder, f"profile-{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml")
            fd, part = tempfile.mkstemp(dir=_temporary.folder, suffix=".part")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(part, path)
            LABELS[path] = "this Profile"
            _TEMPORARY[text] = path
            while len(_TEMPORARY) > TEMPORARY_KEPT:  # the least recently used (dicts keep insertion order)
                old = _TEMPORARY.pop(next(iter(_TEMPORARY)))
                LABELS.pop(old, None)
                with contextlib.suppress(OSError):
                    os.remove(old)
        else:
            _TEMPORARY[text] = _TEMPORARY.pop(text)  # used again: the most recent
        return _TEMPORARY[text]


class FitRefused(InputError):
    """calibrate's refusal: the fit is what is refused, not the file it would have been written to (it read "'profile.toml'
    is not valid; ... had not converged", newcomer review 2026-12-06). One line: why, that nothing was written, what to do."""

    def __init__(self, output: str | None, why: str, todo: str):
        self.field, self.value, self.valid = "calibrate", output, why
        where = f" to {output}" if output else ""
        ValueError.__init__(self, f"calibrate: the fit is refused: {why}; nothing written{where} ({todo})")


def refuse(broken: list[str], bad: list[str], output: str | None, force: bool, *, force_words: str = "--force",
           skipped: list[str] = ()) -> None:
    """calibrate's refusal (FitRefused), one line, nothing written: of a fit whose error is not a finite figure (unfit),
    always; of a doubtful fit (doubtful), unless `force` (`force_words`: how the caller says it). `skipped`: the rows left
    out of the fit (_serving_rows' notes, each "line N (...): ..."), named by line, since the notes print only on success."""
    if skipped and (broken or (bad and not force)):
        lines = [x.split(" (", 1)[0] for x in skipped]
        bad = [*bad, f"{', '.join(lines)} of the serving file {'was' if len(lines) == 1 else 'were'} not fitted on (not priced: "
                     "`llm-codesign validate` on the file says why)"] if bad else bad
        broken = [*broken, f"{', '.join(lines)} not fitted on"] if broken else broken
    if broken:
        raise FitRefused(output, "its error is not a finite figure: " + broken[0] + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""),
                         "give rows the model can price: `llm-codesign validate` on the same files lists why not")
    if bad and not force:
        # every reason (an "(and 1 more)" hid the second), after what a fit must be: it read "a fit no worse than the
        # starting profile: <a parameter on its bound>", a reason that contradicted its own clause
        cause = [x for x in bad if x.startswith(CAUSE)]  # the cause (bias_cause) before the symptoms it explains
        raise FitRefused(output, "".join(f"{x}. " for x in cause) + ("A" if cause else "a") + " fit must be no worse than the starting profile, with no "
                         "parameter on a bound of its range, no more parameters than measurements and its search converged; this one: "
                         f"{'; '.join(x for x in bad if x not in cause)}", f"{force_words} writes it anyway")


def _serving_rows(serving: str, *, clean: bool, hold_out: list[str] | None, calibration: str | None) -> tuple[list[dict], list[str]]:
    """The serving rows a fit reads (their clean form with `clean`, `hold_out`'s models left out), refused where none can
    be used: priced, with a measured metric the loss reads. The rows are those `validate` counts: a measured run the
    memory model refuses is priced with the check bypassed and fitted on (validate's memory_refused: a run that ran is
    evidence against the memory model, not a row to drop), and said; a row the model cannot price at all (no GPU memory
    holds one sequence: Llama-3.1-70B in BF16 on one H100) is not fitted on, and said, each with its line."""
    from llm_codesign.measure.validate import clean_form, predict_serving, read_rows

    rows = read_rows(serving)
    rows = clean_form(rows, serving) if clean else rows
    line = {id(r): i + 2 for i, r in enumerate(rows)}  # the file's line (its header is line 1); the clean form's own order
    rows = held_out(rows, hold_out or [])
    preds, unmodeled = predict_serving(rows, calibration)

    def at(i: int) -> str:
        r = rows[i]
        return f"line {line[id(r)]} ({r.get('source') or r.get('model')}): {r.get('model')} on {r.get('num_gpus') or 1} {r.get('gpu')}"

    left = [f"{at(u['row'])}: not priced, {u['reason']}" for u in unmodeled]
    left += [f"{at(i)}: priced and fitted on with the memory check bypassed, as validate counts it ({p['memory_refused']}; short by "
             f"{p['memory_short_gb']:.1f} GB per GPU)" for i, p in enumerate(preds) if p and p.get("memory_refused")]
    why = unfittable(rows, preds, unmodeled)
    if why:
        raise InputError("serving", serving, why)
    return rows, left


# the figures `validate --serving` prints, compared before and after a serving fit on its own rows (own_check)
CHECKED = ("median_ape", "p90_ape", "inside80", "inside95")


def own_check(rows: list[dict], profile: str | None) -> dict:
    """What `validate --serving` prints for `rows` priced with `profile` (a path; None: the bundled fit): per metric
    measured, the median and 90th-percentile APE (serving_report's overall) and the share of runs inside the 80% and
    95% intervals (intervals.row_intervals, with the profile's own bands where it has them), in percent."""
    from llm_codesign.measure.intervals import COLUMNS, row_intervals, table_for
    from llm_codesign.measure.validate import predict_serving, serving_report

    preds, unmodeled = predict_serving(rows, profile)
    overall = serving_report(rows, preds, unmodeled)["overall"]
    found = row_intervals(rows, preds, table=table_for(profile))[1]
    out = {}
    for m, f in found.items():
        st = overall.get(COLUMNS[m], {})
        out[m] = {"n": f["n"], "median_ape": st.get("median_ape"), "p90_ape": st.get("p90_ape"),
                  "inside80": 100 * f["inside80"] / f["n"], "inside95": 100 * f["inside95"] / f["n"]}
    return out


def worse(before: dict, after: dict) -> list[str]:
    """Each figure of own_check where `after` is worse than `before`: a larger error, or a smaller share inside a band
    that falls short of the band's stated level (a profile's own bands hold about their level of its runs by
    construction: 100 -> 82% inside the 80% band is the band's doing, 86 -> 71% inside the 95% one is not):
    "TPOT p90 20.5 -> 30.1%"."""
    from llm_codesign.measure.intervals import LABELS

    names = {"median_ape": "median", "p90_ape": "p90", "inside80": "inside 80%", "inside95": "inside 95%"}
    out = []
    for m, a in after.items():
        b = before.get(m, {})
        for k in CHECKED:
            x, y = b.get(k), a.get(k)
            if x is not None and y is not None and (y > x + 0.05 if k.endswith("_ape") else y < min(x - 0.05, float(k[-2:]))):
                out.append(f"{LABELS[m]} {names[k]} {x:.1f} -> {y:.1f}%")
    return out


def _header(kernels: list[str], serving: str | None, *, clean: bool, hold_out: list[str] | None, left_out: list[str],
            fitted: dict | None, given: bool, values: dict | None = None) -> str:
    """A profile's header comments: when and from what it was fitted, the models held out, the rows left out (they cannot
    run), and the serving parameters the fit moved and those it kept at its start's values (`fitted`: its report)."""
    from datetime import date

    header = (f"llm-codesign calibration profile, fitted {date.today().isoformat()} by `llm-codesign calibrate`\n"
              f"kernels: {', '.join(kernels) or 'none'}\nserving: {serving or 'none'}{' (cleaned)' if serving and clean else ''}"
              + (f"\nheld out of the serving fit: {', '.join(hold_out)}" if hold_out else "")
              + "".join(f"\nnote: {x}" for x in left_out))
    if fitted:
        header += (f"\nserving parameters fitted: {', '.join(fitted['fitted']) or 'none'}\nkept at "
                   f"{'the profile given' if given else 'the bundled fit'}'s values (no run responds to them): {', '.join(fitted['held']) or 'none'}")
        header += "".join(f"\nwritten for {x}" for x in scope_words(fitted.get("scope", {}), values or {}))
        header += "".join(f"\n{'warning' if x.startswith(FLOORED) else 'note'}: {x}" for x in fitted.get("limits", []))
        header += f"\nwarning: {said}" if (said := underdetermined(fitted)) else ""
    return header


def _checked(rows: list[dict], text: str, calibration: str | None, report: dict, *, output, force, force_words, skipped) -> dict:
    """What validate prints on the fitted rows with the starting profile and with the new one (`text`): own_check's
    "before" and "after", the new profile refused where any is worse (doubtful's own_worse), as a worse banded median
    is, unless forced (newc9 #15: TPOT p90 51.2 -> 66.3% was a warning above "wrote prof.toml", exit 0)."""
    checks = {"before": own_check(rows, calibration), "after": own_check(rows, _temporary(text))}
    report["own_worse"] = worse(checks["before"], checks["after"])
    refuse([], doubtful([report]), output, force, force_words=force_words, skipped=skipped)
    return checks


def fit_profile(kernels: list[str] | None = None, serving: str | None = None, *, hold_out: list[str] | None = None, clean: bool = False,
                force: bool = False, calibration: str | None = None, output: str | None = None, progress=None,
                force_words: str = "--force") -> Profile:
    """The one code path of `llm-codesign calibrate` and `lc.calibrate`: the kernel tables (CSVs or bundled tables' names)
    and the serving runs (a canonical CSV or a bundled one's name; `clean`: its clean form; `hold_out`: models left
    out) fitted from `calibration` (a profile's path; None: the bundled fit), refused where a fit's error is not a
    finite figure or, unless `force`, where it is doubtful (worse than its start, on a bound, unconverged, or worse on
    a figure validate prints on its own runs). `output`:
    what a refusal names; `progress(done, total)` where given. Nothing is written."""
    from llm_codesign.measure.kernel_tables import read_csv
    from llm_codesign.measure.validate import predict_serving

    # serving rows first: a bad file or hold-out fails before minutes of kernel fitting
    srv_rows, left_out = _serving_rows(serving, clean=clean, hold_out=hold_out, calibration=calibration) if serving else (None, [])
    kernels = list(kernels or [])
    tables: dict[str, list[dict]] = {}
    for k in kernels:
        kind, rows = read_csv(k)
        tables.setdefault(kind, []).extend(rows)
    cb = progress or (lambda done, total: None)
    srv_total, k_total = serving_trials(srv_rows, warm=True) if serving else 0, [0]

    def kernel_progress(done, total):
        k_total[0] = total
        cb(done, total + srv_total)

    fams, report = fit_kernels(tables, calibration, progress=kernel_progress)
    if kernels and not report:
        raise InputError("kernels", ", ".join(kernels), "tables with at least one row the model can price (`llm-codesign validate --kernels` lists why not)")
    refuse(unfit(report), doubtful(report), output, force, force_words=force_words)  # before minutes of serving fit, not after
    srv, srv_report = None, {}
    if serving:
        if not fams:
            from llm_codesign.spec.hardware import catalog

            fams = {g.family: calibration_for(g, calibration) for g in catalog().values()}
        # from the profile given, else the bundled fit, never the search's own starts; what no row responds to is kept
        # (hold). The median cycles only: fitted on 120 dense Llama-3.1-70B vLLM B200 runs, the 635 other (MoE) vLLM runs
        # take TTFT / TPOT 16.0 / 10.8% median out of sample (bundled 13.6 / 10.8; with the smooth cycles too 18.1 / 10.7;
        # before fixcal 15.9 / 10.6, scale-out latency 25 us): docs/modelling-notes.md#fixcal-calibrate
        fams, srv = fit_serving(srv_rows, fams, start=next(iter(fams.values())), report=srv_report, hold=True,
                                progress=lambda done, total: cb(k_total[0] + done, k_total[0] + total))
        # as a kernel fit: refused where worse than the profile it started from, on a bound or unconverged, unless forced
        refuse(unfit([srv_report]), doubtful([srv_report]), output, force, force_words=force_words, skipped=left_out)
    header = _header(kernels, serving, clean=clean, hold_out=hold_out, left_out=left_out, fitted=srv_report if srv else None,
                     given=calibration is not None, values=srv)
    # the starting profile's own sections carried over as it scoped them (its [intervals] were its runs', not these)
    begun = read_toml(calibration, "calibration", "a calibration profile") if calibration else None
    # the kernel-fitted families' parameters only: a serving-only fit prices every family (fams above) but fits none of
    # their kernels, and a copy of the bundled fit's would freeze them against a later re-fit
    fitted_fams = {f: c for f, c in fams.items() if any(r["family"] == f for r in report)}
    text, checks = to_toml(fitted_fams, report, header, srv, scope=srv_report.get("scope") if srv else None, start=begun), {}
    if srv:  # the intervals of the profile's own runs, priced with it: they narrow its answers' bands where they cover them
        from llm_codesign.measure.intervals import profile_section

        own = predict_serving(srv_rows, cal_override=lambda g: fams.get(g.family) or calibration_for(g, calibration))[0]
        text += "\n" + profile_section(srv_rows, own) + "\n"
        checks = _checked(srv_rows, text, calibration, srv_report, output=output, force=force, force_words=force_words, skipped=left_out)
    return Profile(text=text, report=tuple(report + ([srv_report] if srv else [])), serving=srv,
                   serving_rows=tuple(srv_rows) if srv else (), left_out=tuple(left_out), checks=checks)
