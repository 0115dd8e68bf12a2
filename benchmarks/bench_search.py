"""Speed of the vectorised deployment search (figures for docs/concepts.md, Speed).

Run: python benchmarks/bench_search.py   (no GPU; single process, as the CLI)
Reports deployment evaluations per second, the README's main job and the default `pareto` command
end to end (process start included), a DeepSeek-R1 search on 8..72 GB200 GPUs with MTP, disaggregated searches, and
peak memory.
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.disagg_search import search_disagg
from llm_codesign.explore.search import SearchSpace, search
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import SpecDecoding
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def timed(label, fn, repeat=3):
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    print(f"{label}: {best:.3f} s, {r.evaluated:,} deployments, {r.evaluated / best:,.0f} evaluations/s, {len(r.points)} frontier points")
    return r


def main() -> None:
    g = get_gpu("h200")
    m = get_model("llama-3.1-70b")
    timed("llama-3.1-70b 8xH200 FP8 search", lambda: search(m, g, calibration_for(g), SearchSpace(8, precisions=(Precision.of("fp8", kv="fp8"),)), isl=1024, osl=1024))
    timed("llama-3.1-70b 64xH200 all precisions", lambda: search(m, g, calibration_for(g), SearchSpace(64), isl=1024, osl=1024))
    for backend in ("vllm", "sglang"):  # engines that admit past the KV cache price a second memory fit
        timed(f"llama-3.1-70b 64xH200 all precisions, {backend}", lambda backend=backend: search(
            m, g, calibration_for(g), SearchSpace(64), isl=1024, osl=1024, engine=get_engine(backend)))
    gb = get_gpu("gb200")
    ds = get_model("deepseek-r1")
    spec = SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6, 0.5, 0.45))
    timed("deepseek-r1 on GB200, every instance size 8..72, MTP k=0..5", lambda: search(
        ds, gb, calibration_for(gb), SearchSpace(72, instance_gpus=tuple(range(8, 73)), spec=spec, spec_ks=(0, 1, 2, 3, 4, 5)), isl=1024, osl=1024))
    for n in (8, 16, 32, 64):
        timed(f"deepseek-r1 on {n}xGB200, MTP k=0..5", lambda n=n: search(
            ds, gb, calibration_for(gb), SearchSpace(n, spec=spec, spec_ks=(0, 1, 2, 3, 4, 5)), isl=1024, osl=1024))
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    main_job = [sys.executable, "-m", "llm_codesign.cli", "pareto", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8",
                "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--isl", "1024", "--osl", "1024"]
    # bytecode cached as after a pip install (PYTHONDONTWRITEBYTECODE would recompile every module each run)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as out:
        runs = []
        for _ in range(7):
            t = time.perf_counter()
            subprocess.run([*main_job, "--out", out], check=True, capture_output=True, env=env)
            runs.append(time.perf_counter() - t)
    print(f"main job (README: CSV, PNG and HTML; process start included): {statistics.median(runs):.2f} s median of 7 "
          f"({min(runs):.2f}-{max(runs):.2f})")
    t = time.perf_counter()
    subprocess.run([*main_job, "--json"], check=True, capture_output=True, env=env)
    print(f"default pareto command end to end (process start included, --json): {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "llm_codesign.cli", "pareto", "deepseek-r1", "--gpu", "gb200", "--gpus", "8-72",
                    "--spec", "mtp", "--acceptance-rates", "0.85,0.7,0.6,0.5,0.45", "--json"], check=True, capture_output=True)
    print(f"deepseek-r1 GB200 8-72 GPUs MTP pareto command end to end: {time.perf_counter() - t:.2f} s")
    b2 = get_gpu("b200")
    for n in (8, 16, 32):
        timed(f"deepseek-r1 on {n}xB200 disaggregated (prefill x decode units, FP8)", lambda n=n: search_disagg(
            ds, b2, calibration_for(b2), SearchSpace(n, precisions=(Precision.of("fp8", kv="fp8"),)), isl=8192, osl=1024))


if __name__ == "__main__":
    main()
