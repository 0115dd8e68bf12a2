"""The engines' own all-reduce on Hopper, fitted on the H100 per-engine all-reduce rows (issue 39, mechanism 1).

kernels_hopper/comm.csv.gz times each engine's AllReduce op as serving calls it (aiconfigurator-core 0.12.0: TensorRT-LLM
1.3.0rc20's under a CUDA graph, SGLang 0.5.14's and vLLM 0.24.0's under a graph and eagerly) on 2, 4 and 8 H100s, 128 to
512M BF16 elements a GPU. Its CUDA-graph rows (207) price the custom all-reduce's five quantities (cost.kernels.
_custom_all_reduce, Engine.own_ar_barriers), through measure.calibrate.fit_kind, the code `calibrate --kernels` runs:

- custom_ar_latency_s: the one-shot's fixed cost over two GPUs (one flag exchange and the kernel's floor under CUDA
  graphs), 1-15 us
- custom_ar_twoshot_latency_s: the two-shot's (one more exchange, a pass through the peers' staging buffers), 3-20 us
- custom_ar_bw_eff: the share of the GPU's NVLink bandwidth its peer reads reach, 0.3-0.9
- custom_ar_barrier_s: one flag barrier with every peer, vLLM's two a call (its rows alone inform it), 0.5-1.5 us
- custom_ar_peer_s: what each peer past the first adds to either kernel's fixed cost (a store to its buffer and a polled
  slot per rank), 0-0.5 us

Past each engine's limits the rows run NCCL (Engine.own_allreduce), priced at the [hopper] comm_* values fitted on the
NCCL rows (kernels/collectives.csv.gz) and not moved here. Out of sample: a fit on every other message size priced on
the rest, one on 2 and 4 GPUs priced on 8, and each engine's own fit priced on the other engines' rows.

    python benchmarks/fit_hopper_allreduce.py      # figures and the [hopper] TOML (seconds)
"""
from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from llm_codesign.cost.calibration import calibration_for, documented
from llm_codesign.measure.calibrate import PARAMS, fit_kind
from llm_codesign.measure.kernel_tables import own_ar_mode, predict, read_csv
from llm_codesign.measure.stats import error_stats
from llm_codesign.spec.hardware import get_gpu

# each quantity's range as default.toml states it, as `calibrate --kernels` searches it
BOUNDS = {p: b for p, b in PARAMS["collectives"].items() if p.startswith("custom_ar_")}


def graph_rows() -> list[dict]:
    """The all-reduce rows each engine ran under a CUDA graph (own_ar_mode)."""
    return [r for r in read_csv("hopper/comm")[1] if own_ar_mode(r) == "graph"]


def fit(rows: list[dict], base, params=None):
    """`base` with BOUNDS' parameters (or `params`') fitted on `rows`, and the names that landed on a bound."""
    bounds = {p: BOUNDS[p] for p in (params or BOUNDS)}
    cal, _ = fit_kind("collectives", rows, base, "hopper", rounds=8, params=bounds)
    on_bound = [p for p, (lo, hi) in bounds.items() if np.isclose(cal.param(p), lo, rtol=1e-3) or np.isclose(cal.param(p), hi, rtol=1e-3)]
    return cal, on_bound


def stats(rows: list[dict], cal) -> dict:
    pred, _ = predict("collectives", rows, lambda g: cal)
    y = np.array([float(r["latency_ms"]) for r in rows])
    return error_stats(pred, y)


def _fmt(s: dict) -> str:
    return f"median APE {s['median_ape']:5.1f}%, p90 {s['p90_ape']:5.1f}%, signed {s['signed_median_pe']:+5.1f}% (n={s['n']})"


def _values(cal, params=None) -> str:
    return ", ".join(f"{p} {cal.param(p) * (1e6 if p.endswith('_s') else 1):.3g}{' us' if p.endswith('_s') else ''}" for p in (params or BOUNDS))


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    # every fit starts from default.toml's documented five, not the bundled profile's (fitted here)
    cited = documented("hopper")
    base = replace(calibration_for(get_gpu("h100_sxm")), **{p: cited.param(p) for p in BOUNDS})
    rows = graph_rows()
    engines = sorted({r["framework"] for r in rows})
    print(f"{len(rows)} CUDA-graph all-reduce rows ({', '.join(engines)}); documented values: {_fmt(stats(rows, base))}")
    for e in engines:
        print(f"  {e:7s} {_fmt(stats([r for r in rows if r['framework'] == e], base))}")
    cal, on_bound = fit(rows, base)
    print(f"\nfitted on all: {_values(cal)}{'; ON A BOUND: ' + ', '.join(on_bound) if on_bound else ''}")
    print(f"  all     {_fmt(stats(rows, cal))}")
    for e in engines:
        print(f"  {e:7s} {_fmt(stats([r for r in rows if r['framework'] == e], cal))}")

    print("\nout of sample")
    sizes = sorted({int(r["message_size"]) for r in rows})
    halves = {k: [r for r in rows if sizes.index(int(r["message_size"])) % 2 == k] for k in (0, 1)}
    for k in (0, 1):
        c, b = fit(halves[k], base)
        print(f"  sizes {'even' if k == 0 else 'odd '} -> {'odd ' if k == 0 else 'even'}: {_fmt(stats(halves[1 - k], c))}  ({_values(c)}"
              f"{'; on a bound: ' + ', '.join(b) if b else ''})")
    for train, test in (((2, 4), (8,)), ((4, 8), (2,))):
        c, b = fit([r for r in rows if int(r["num_gpus"]) in train], base)
        print(f"  GPUs {train} -> {test}: {_fmt(stats([r for r in rows if int(r['num_gpus']) in test], c))}  ({_values(c)}"
              f"{'; on a bound: ' + ', '.join(b) if b else ''})")
    for e in engines:
        # one engine's rows fit what they inform: TensorRT-LLM's and SGLang's kernels run no barrier (Engine.own_ar_barriers)
        own = [r for r in rows if r["framework"] == e]
        params = list(BOUNDS) if e == "vllm" else [p for p in BOUNDS if p != "custom_ar_barrier_s"]
        c, b = fit(own, base, params)
        others = {o: _fmt(stats([r for r in rows if r["framework"] == o], c)) for o in engines if o != e}
        print(f"  {e} -> " + "; ".join(f"{o}: {v}" for o, v in others.items()) + f"  ({_values(c, params)}{'; on a bound: ' + ', '.join(b) if b else ''})")

    print("\nTOML ([hopper] of data/calibration/fitted.toml):", *(f"{p} = {cal.param(p):.6g}" for p in BOUNDS), sep="\n")


if __name__ == "__main__":
    main()
