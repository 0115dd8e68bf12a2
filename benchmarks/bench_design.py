"""Speed of the shape search: >= 10,000 candidate shapes, each with its full deployment sweep.

Run: python benchmarks/bench_design.py
"""
from __future__ import annotations

import time

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.design import Slo, candidates, design
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import Precision


def main() -> None:
    g = get_gpu("b200")
    n = len(candidates(70e9, moe=False, tol=0.3, max_candidates=10**9)["hidden"])
    print(f"dense candidates within +-30% of 70B: {n:,}")
    t = time.perf_counter()
    r = design(70e9, g, calibration_for(g), 8, Slo("throughput"), prec=Precision.of("fp8", kv="fp8"), budget_tol=0.3, max_candidates=12000)
    dt = time.perf_counter() - t
    print(f"dense: {r['candidates']:,} shapes x full deployment sweep = {r['evaluated']:,} deployments in {dt:.1f} s "
          f"({r['evaluated'] / dt:,.0f} deployments/s, {r['candidates'] / dt:,.0f} shapes/s)")
    t = time.perf_counter()
    r = design(100e9, g, calibration_for(g), 8, Slo("throughput"), moe=True, prec=Precision.of("fp8", kv="fp8"), budget_tol=0.3,
               max_candidates=10000)
    dt = time.perf_counter() - t
    print(f"MoE: {r['candidates']:,} shapes x full deployment sweep = {r['evaluated']:,} deployments in {dt:.1f} s "
          f"({r['evaluated'] / dt:,.0f} deployments/s)")


if __name__ == "__main__":
    main()
