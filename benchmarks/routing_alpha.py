"""The MoE routing skew (`moe_routing_alpha`) that published per-expert load statistics imply.

`cost.ffns.routed_load` prices the busiest EP rank and its busiest expert under per-expert loads drawn from a
power law x^-alpha (aiconfigurator's law). Published load statistics give the busiest rank's and the busiest
expert's excess over the mean, (max - mean) / mean, at a known expert count, top-k, EP size and token count;
this finds the alpha at which routed_load gives each (bisection: both grow with alpha up to where the busiest
expert holds every token).

Source: TensorRT-LLM tech blog 4, "Scaling Expert Parallelism in TensorRT-LLM (Part 1)", Table 1 and the
`report_load_statistics.py` output beside it (NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/
blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md): DeepSeek-R1 (256 experts, top-8) on 32 GB200 at EP32,
a machine-translation dataset, no load balancer; per rank a mean 1,024 routed tokens (so 4,096 tokens a step),
per expert 128; averaged over layers and decode iterations, the busiest rank 1.564 above the mean and the
busiest expert 10.948; per layer the rank's excess runs from 0.459 (layer 5) to 2.461 (layer 58) among the
layers it prints.

    python benchmarks/routing_alpha.py
"""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.ffns import routed_load

E, K, EP = 256, 8, 32
TOKENS = 1024.0 * EP / K  # a rank's mean routed tokens x ranks / top-k
# (what, "rank" or "expert", (max - mean) / mean)
PUBLISHED = (("mean over layers, busiest rank", "rank", 1.564), ("mean over layers, busiest expert", "expert", 10.948),
             ("least skewed layer printed (5), busiest rank", "rank", 0.459), ("most skewed layer printed (58), busiest rank", "rank", 2.461))


def excess(alpha: float, what: str) -> float:
    """(max - mean) / mean of the busiest rank's or expert's tokens routed_load gives at `alpha`."""
    _, top, rank = routed_load(E, K, TOKENS, EP, alpha)
    return float(rank) / (TOKENS * K / EP) - 1.0 if what == "rank" else float(top) / (TOKENS * K / E) - 1.0


def alpha_for(what: str, target: float, lo: float = 0.0, hi: float = 1.35) -> float:
    """The alpha at which `excess` meets `target` (bisection over [lo, hi], where it rises with alpha)."""
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid, what) < target else (lo, mid)
    return 0.5 * (lo + hi)


def table() -> list[tuple[str, float, float]]:
    """(statistic, published excess, alpha it implies) for each PUBLISHED statistic."""
    return [(label, value, alpha_for(what, value)) for label, what, value in PUBLISHED]


if __name__ == "__main__":
    rows = table()
    print("| statistic (DeepSeek-R1, EP32, 4,096 tokens) | (max - mean) / mean | alpha |\n|---|---|---|")
    for label, value, a in rows:
        print(f"| {label} | {value:.3f} | {a:.3f} |")
    print(f"\nmean-based alphas {np.mean([a for _, _, a in rows[:2]]):.2f}; per-layer span {rows[2][2]:.2f}-{rows[3][2]:.2f}")
