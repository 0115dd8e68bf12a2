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

What the skew costs depends on the deployment (`deployments`): the busiest rank's excess needs expert
parallelism (at EP 1, or with the experts split by TP, every rank holds its share of every expert and gets the
mean), while a step's distinct experts read per rank, fewer under a skew at decode batches, change at every EP.

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


def deployments(alpha: float = 1.1, eps=(1, 8, 32), tokens=(64.0, 512.0, 4096.0)) -> list[tuple[int, float, float, float, float]]:
    """(EP, tokens a step, busiest rank's routed tokens over the mean, experts a rank reads at `alpha`, at
    uniform routing) for DeepSeek-R1's routing (E, K) at each EP size and step."""
    out = []
    for ep in eps:
        for t in tokens:
            active, _, rank = routed_load(E, K, t, ep, alpha)
            uniform = routed_load(E, K, t, ep, 0.0)[0]
            out.append((ep, t, float(rank) / (t * K / ep), float(active), float(uniform)))
    return out


if __name__ == "__main__":
    rows = table()
    print("| statistic (DeepSeek-R1, EP32, 4,096 tokens) | (max - mean) / mean | alpha |\n|---|---|---|")
    for label, value, a in rows:
        print(f"| {label} | {value:.3f} | {a:.3f} |")
    print(f"\nmean-based alphas {np.mean([a for _, _, a in rows[:2]]):.2f}; per-layer span {rows[2][2]:.2f}-{rows[3][2]:.2f}")
    print("\n| EP | tokens a step | busiest rank / mean at 1.1 | experts a rank reads at 1.1 | uniform |\n|---|---|---|---|---|")
    for ep, t, rank, active, uniform in deployments():
        print(f"| {ep} | {t:,.0f} | {rank:.3f} | {active:.1f} | {uniform:.1f} |")
