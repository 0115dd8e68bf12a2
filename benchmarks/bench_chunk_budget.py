"""The step token budget (max_num_tokens, the chunked-prefill size) fixed at the engine's default against
searched: the most output tok/s/GPU the pareto search finds, with and without TTFT <= 2 s.

Issue 25 quotes a peer that searches the chunk budget and finds up to 15-40% more tok/s/GPU at the
throughput end on Llama-3.1-70B 8xH200 and DeepSeek-R1 16xB200 under TTFT <= 2 s. This runs the same
search as `pareto` (explore/search.py: every plan of every instance size, 55 batch sizes, the
checkpoint's and the GPU's native lower precisions, the bundled calibration) three ways: the budget
fixed at the engine's default on that GPU (Engine.step_tokens, spec/engines/), searched over `--max-num-tokens-grid
auto` (1,024-16,384, AUTO_BUDGETS), and over a wide grid (512-65,536) that shows how far the mechanism
goes. Searching a grid that holds the default can only add points, so every gain is >= 0; the figure
is the top of the frontier (its highest tok/s/GPU point), each budget's best batch and plan included.

    nice python benchmarks/bench_chunk_budget.py                       # the table (2-4 minutes on 2 shared cores)
    nice python benchmarks/bench_chunk_budget.py --json cb.json        # and every best point's details
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.search import AUTO_BUDGETS, SearchSpace, search
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

CASES = (("llama-3.1-70b", "h200", 8), ("deepseek-r1", "b200", 16))  # the two deployments
BACKENDS = ("trtllm", "vllm", "sglang")
WORKLOADS = ((1024, 1024), (4096, 1024), (8192, 1024), (1024, 8192))
WIDE = tuple(1 << i for i in range(9, 17))  # 512 ... 65,536
TTFT_CAPS = (None, 2000.0)


def best(model, gpu, cal, n, isl, osl, backend, budgets, ttft):
    """The highest tok/s/GPU point of the frontier (None where no deployment meets the cap)."""
    r = search(model, gpu, cal, SearchSpace(n, step_tokens=budgets), isl=isl, osl=osl, engine=get_engine(backend), max_ttft_ms=ttft)
    if not r.points:
        return None
    p = max(r.points, key=lambda q: q.output_tok_s_per_gpu).to_dict()
    d = p["deployment"]
    return {"tok_s_gpu": p["output_tok_s_per_gpu"], "tok_s_user": p["tok_s_per_user"], "ttft_ms": p["ttft_ms"], "tpot_ms": p["tpot_ms"],
            "budget": d["max_num_tokens"], "plan": d["plan"], "instance_gpus": d["instance_gpus"],
            "concurrency": d["concurrency_per_instance"], "precision": d["weight_dtype"]}


def run() -> list[dict]:
    rows = []
    for mname, gname, n in CASES:
        m, g = get_model(mname), get_gpu(gname)
        cal = calibration_for(g)
        for backend, (isl, osl), ttft in ((b, w, t) for b in BACKENDS for w in WORKLOADS for t in TTFT_CAPS):
            default = get_engine(backend).step_tokens(g)
            pts = {k: best(m, g, cal, n, isl, osl, backend, grid, ttft) for k, grid in (("default", ()), ("auto", AUTO_BUDGETS), ("wide", WIDE))}
            assert pts["default"] is None or pts["default"]["budget"] == default
            rows.append({"model": mname, "gpu": gname, "num_gpus": n, "backend": backend, "isl": isl, "osl": osl, "max_ttft_ms": ttft,
                         "default_budget": default, **pts})
    return rows


def gain(r: dict, k: str) -> float | None:
    return None if not (r["default"] and r[k]) else 100.0 * (r[k]["tok_s_gpu"] / r["default"]["tok_s_gpu"] - 1.0)


def _point(p: dict | None, budget: bool = True) -> str:
    return "–" if p is None else f"{p['tok_s_gpu']:,.0f}" + (f" ({p['budget']:,})" if budget else "")


def _gain(r: dict, k: str) -> str:
    g = gain(r, k)
    return "–" if g is None else f"{g:+.1f}%"


def markdown(rows: list[dict], secs: float) -> str:
    lines = ["| deployment | engine | ISL/OSL | TTFT cap | default budget: tok/s/GPU | searched 1k-16k: tok/s/GPU (budget) | gain | "
             "512-64k: tok/s/GPU (budget) | gain |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} {r['num_gpus']}x{r['gpu'].upper()} | {r['backend']} | {r['isl']}/{r['osl']} | "
                     f"{'2 s' if r['max_ttft_ms'] else 'none'} | {r['default_budget']:,}: {_point(r['default'], False)} | "
                     f"{_point(r['auto'])} | {_gain(r, 'auto')} | {_point(r['wide'])} | {_gain(r, 'wide')} |")
    for cap in TTFT_CAPS:
        for k, label in (("auto", "1k-16k"), ("wide", "512-64k")):
            gs = [gain(r, k) for r in rows if r["max_ttft_ms"] == cap and gain(r, k) is not None]
            if not gs:
                continue
            lines.append("")
            lines.append(f"TTFT cap {'2 s' if cap else 'none'}, grid {label}: gain {min(gs):+.1f}% to {max(gs):+.1f}%, "
                         f"median {statistics.median(gs):+.1f}% over {len(gs)} cases")
    lines += ["", f"({len(rows) * 3} searches in {secs:.0f} s on this machine.)"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every case's best points here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = run()
    secs = time.perf_counter() - t0
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(markdown(rows, secs))


if __name__ == "__main__":
    main()
