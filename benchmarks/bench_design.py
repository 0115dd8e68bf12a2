"""Speed of the shape search: >= 10,000 candidate shapes, each with its full deployment sweep (every shape in the
budget: the envelope opened and the quality test loosened to a 100% tolerance, so the grid is priced whole), and
the default searches (inside the envelope, as good as the reference) the CLI runs, whole (issue 38: within 15 s on two cores).

Run: python benchmarks/bench_design.py
"""
from __future__ import annotations

import time

import llm_codesign as lc
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.design import Slo, candidates, design
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import Precision


def main() -> None:
    g = get_gpu("b200")
    n = len(candidates(70e9, moe=False, tol=0.3, max_candidates=10**9)["hidden"])
    print(f"dense candidates within +-30% of 70B: {n:,}")
    t = time.perf_counter()
    every = dict(outside_envelope=True, quality_tol=1.0)
    r = design(70e9, g, calibration_for(g), 8, Slo("throughput"), prec=Precision.of("fp8", kv="fp8"), budget_tol=0.3, max_candidates=12000,
               **every)
    dt = time.perf_counter() - t
    print(f"dense: {r['candidates']:,} shapes x full deployment sweep = {r['evaluated']:,} deployments in {dt:.1f} s "
          f"({r['evaluated'] / dt:,.0f} deployments/s, {r['candidates'] / dt:,.0f} shapes/s)")
    t = time.perf_counter()
    r = design(100e9, g, calibration_for(g), 8, Slo("throughput"), moe=True, prec=Precision.of("fp8", kv="fp8"), budget_tol=0.3,
               max_candidates=10000, **every)
    dt = time.perf_counter() - t
    print(f"MoE: {r['candidates']:,} shapes x full deployment sweep = {r['evaluated']:,} deployments in {dt:.1f} s "
          f"({r['evaluated'] / dt:,.0f} deployments/s)")
    # the CLI's defaults, whole: the search, each row's lint and intervals, and the side by side (--json, --report)
    for label, kw in (("70B dense, throughput", dict(params=70e9)), ("70B dense, latency", dict(params=70e9, regime="latency")),
                      ("235B MoE, throughput", dict(params=235e9, moe=True))):
        t = time.perf_counter()
        r = lc.design(kw.pop("params"), "b200", num_gpus=8, **kw)
        dt = time.perf_counter() - t
        print(f"default {label}: {r['screened']['in_budget']:,} shapes in the budget, {r['candidates']:,} admitted and priced "
              f"({r['evaluated']:,} deployments with the grid's extensions and the binding check) in {r['seconds']:.1f} s; "
              f"with the rows' lint and intervals and the side by side of {len(r['side_by_side']['columns'])} shapes: {dt:.1f} s")


if __name__ == "__main__":
    main()
