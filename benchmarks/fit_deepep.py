"""DeepEP's dispatch and combine on H100 (issue 39): the deepep_* parameters fitted on SGLang 0.5.12's raw DeepEP rows of
kernels_hopper/ep_comm.csv.gz, checked out of sample, against the generic NCCL all-to-all the model prices an all-to-all
exchange with (cost.ffns.moe_ops: where an engine's moe_exchange says "all_to_all", TensorRT-LLM on NVL72 and ATOM; SGLang
and vLLM gather by default, and no engine runs DeepEP by default, so serving does not price it).

1. Before: each row priced as cost.ffns.moe_ops prices an all-to-all exchange, a generic all-to-all
   (cost.kernels.collective_time, "all_to_all") of every (token, expert) copy at the row's payload over ep GPUs.
2. The DeepEP family (cost.ffns.deepep_time) fitted per mode through measure.calibrate.fit_kind on SGLang's rows (the
   DeepEP kernels alone, DeepEP's own benchmarks), each parameter in the range default.toml states.
3. Out of sample: a fit on half the token counts (every other one) priced on the other half; the SGLang fit priced on
   TensorRT-LLM's and vLLM's rows (their collectors time the engine's dispatch module around the same kernels).

    python benchmarks/fit_deepep.py        # ~1 min; prints the figures and the default.toml lines
"""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.kernels import collective_time
from llm_codesign.measure.calibrate import PARAMS as KIND_PARAMS
from llm_codesign.measure.calibrate import fit_kind
from llm_codesign.measure.kernel_tables import EP_PAYLOAD, predict, read_csv
from llm_codesign.measure.stats import error_stats
from llm_codesign.spec.hardware import get_gpu

# each mode's parameters (measure.calibrate's, which `calibrate --kernels` fits on every row together), fitted on its own rows
PARAMS = {"low_latency": {p: b for p, b in KIND_PARAMS["ep_comm"].items() if p.startswith("deepep_ll_")},
          "normal": {p: b for p, b in KIND_PARAMS["ep_comm"].items() if not p.startswith("deepep_ll_")}}
GPU = get_gpu("h100_sxm")


def _key(r: dict) -> str:
    return f"{r['framework']} {r['mode']} {r['phase']}"


def _table(title: str, rows: list[dict], pred: np.ndarray) -> None:
    y = np.array([float(r["latency_ms"]) for r in rows])
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(_key(r), []).append(i)
    print(f"\n{title}\n{'engine mode phase':36} {'rows':>5} {'median APE %':>13} {'p90 APE %':>10} {'signed %':>9}")
    for k, idx in sorted(groups.items()):
        s = error_stats(pred[idx], y[idx])
        print(f"{k:36} {len(idx):5d} {s['median_ape']:13.1f} {s['p90_ape']:10.1f} {s['signed_median_pe']:9.1f}")


def generic(rows: list[dict], cal) -> np.ndarray:
    """ms per row as moe_ops prices an all-to-all exchange: an NCCL all-to-all of tokens x top-k x hidden x payload over ep."""
    out = []
    for r in rows:
        b = EP_PAYLOAD[r["comm_dtype"]] if r["phase"] == "dispatch" else 2.0
        nbytes = float(r["num_tokens"]) * float(r["topk"]) * float(r["hidden_size"]) * b
        out.append(float(collective_time("all_to_all", nbytes, float(r["ep_size"]), GPU, cal)) * 1e3)
    return np.array(out)


def main() -> None:
    _, rows = read_csv("hopper/ep_comm")
    rows = [r for r in rows if r["mode"] in PARAMS]
    base = calibration_for(GPU)
    _table("1. before: the generic NCCL all-to-all (comm_a2a_*)", rows, generic(rows, base))
    cal = base
    for mode, params in PARAMS.items():
        own = [r for r in rows if r["framework"] == "sglang" and r["mode"] == mode]
        cal, rep = fit_kind("ep_comm", own, cal, "hopper", params=params)
        bounds = f"; ON A BOUND: {', '.join(rep['at_bounds'])}" if rep["at_bounds"] else ""
        print(f"\nfit {mode} on {len(own)} SGLang rows: median APE {rep['median_ape']:.1f}% (start {rep['start_median_ape']:.1f}%){bounds}")
        for p in params:
            print(f"  {p} = {cal.param(p):.4g}")
        # out of sample: every other token count -> the rest
        counts = sorted({int(r["num_tokens"]) for r in own})
        half = set(counts[::2])
        fit_half, _ = fit_kind("ep_comm", [r for r in own if int(r["num_tokens"]) in half], base, "hopper", params=params)
        rest = [r for r in own if int(r["num_tokens"]) not in half]
        y = np.array([float(r["latency_ms"]) for r in rest])
        for label, c in (("half-fit", fit_half), ("full fit", cal)):
            s = error_stats(predict("ep_comm", rest, lambda g, c=c: c)[0], y)
            print(f"  {label} on the other {len(rest)} rows ({len(counts) - len(half)} token counts): median APE {s['median_ape']:.1f}%")
    _table("2. after: DeepEP's kernels (deepep_*), fitted on SGLang's rows; TensorRT-LLM's and vLLM's out of sample",
           rows, predict("ep_comm", rows, lambda g: cal)[0])
    print("\n# default.toml")
    for params in PARAMS.values():
        for p in params:
            print(f"{p} = {cal.param(p):.3g}")


if __name__ == "__main__":
    main()
