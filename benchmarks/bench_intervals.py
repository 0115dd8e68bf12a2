"""What the intervals cost a search (issue 40: at most 10% of its time).

Run: python benchmarks/bench_intervals.py [--pairs 8]   (no GPU; single process)
Each search runs as `llm_codesign.pareto` does, in alternating pairs: the search alone, then the search and
its points' intervals (`Frontier.banded`, once per frontier point after the search); CPU seconds of each,
the interval table already loaded (it is read once per process), so the pairs differ by the banding alone.
Prints each case's median ratio (with intervals / without) and its range over the pairs.
"""
from __future__ import annotations

import argparse
import statistics
import time

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.search import SearchSpace, search
from llm_codesign.measure.intervals import bundled
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

CASES = (("llama-3.1-70b", "h200", 8), ("deepseek-r1", "b200", 8), ("qwen3-30b-a3b", "h100", 2))


def one(model: str, gpu: str, n: int, *, banded: bool) -> tuple[float, int]:
    m, g = get_model(model), get_gpu(gpu)
    t = time.process_time()
    f = search(m, g, calibration_for(g), SearchSpace.build(m, g, num_gpus=n), isl=1024, osl=1024, engine=get_engine("trtllm"))
    if banded:
        f = f.banded(m)
    return time.process_time() - t, len(f.points)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    args = ap.parse_args()
    bundled()
    for model, gpu, n in CASES:
        one(model, gpu, n, banded=True)  # warm: imports and caches, as a second search in one process
        ratios, points = [], 0
        for _ in range(args.pairs):
            plain, _ = one(model, gpu, n, banded=False)
            with_bands, points = one(model, gpu, n, banded=True)
            ratios.append(with_bands / plain)
        print(f"{model} on {n}x {gpu} ({points} frontier points): with intervals / without, CPU time: median "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) over {args.pairs} pairs")


if __name__ == "__main__":
    main()
