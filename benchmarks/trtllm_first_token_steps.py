"""TensorRT-LLM's first tokens on the clean sample in decode iterations (issue 39, mechanism 2; a map, nothing priced).

    python benchmarks/trtllm_first_token_steps.py

Two tables, the rows priced by `validate`'s own path (measure.validate.predict_serving, the bundled profile):

- the 1024-token-prompt runs' first token at 1,024 outputs less that at 8,192 outputs, same engine, model, GPU, weights,
  TP and concurrency, in the 1,024-output run's decode iterations (its TPOT): what the output length adds to a first
  token, which nothing in how an engine schedules a 1k prompt at these loads depends on;
- the TensorRT-LLM DeepSeek rows' first token, measured less priced, in their own decode iterations, per build
  (serving_measured_blackwell.builds.csv) x weights x ISL/OSL x concurrency.

docs/modelling-notes.md#trtllm-first-token-steps holds the figures and what was read against them.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from llm_codesign.measure import campaigns
from llm_codesign.measure.validate import predict_serving, read_rows

RUNS = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements" / "serving_measured_blackwell_clean.csv"


def output_length_steps(rows: list[dict]) -> dict:
    """(backend, model, gpu, weights, tp) -> {concurrency: (TTFT at OSL 1024 - TTFT at OSL 8192) / TPOT at 1024}."""
    by = {}
    for r in rows:
        if int(r["isl"]) == 1024 and int(r["osl"]) in (1024, 8192):
            key = (r["backend"], r["model"], r["gpu"], r["weight_dtype"], int(r["tp"] or 1), int(r["attention_dp"] or 1),
                   int(float(r["concurrency"])))
            by[key, int(r["osl"])] = (float(r["ttft_ms"]), float(r["tpot_ms"]))
    out = defaultdict(dict)
    for (key, osl), (ttft, tpot) in by.items():
        if osl == 1024 and (key, 8192) in by:
            out[key[:-1]][key[-1]] = (ttft - by[key, 8192][0]) / tpot
    return out


def main() -> None:
    rows = read_rows(RUNS)
    preds, _ = predict_serving(rows)
    steps = output_length_steps(rows)
    concs = sorted({c for v in steps.values() for c in v})
    print("(TTFT at 1k/1k - TTFT at 1k/8k) / TPOT at 1k/1k, in decode iterations")
    print(f"{'backend / model / gpu / weights / tp / adp':62s}" + "".join(f"{c:>7d}" for c in concs))
    for key in sorted(steps):
        cells = "".join(f"{steps[key][c]:7.1f}" if c in steps[key] else "      -" for c in concs)
        print(f"{' / '.join(map(str, key)):62s}{cells}")

    print("\nTensorRT-LLM DeepSeek: (measured - priced TTFT) / measured TPOT, median over plans, per build")
    cells = defaultdict(list)
    for r, p in zip(rows, preds, strict=True):
        if p and r["backend"] == "trtllm" and "DeepSeek" in r["model"]:
            build = campaigns._sample_builds().get(r["source"], ("", ""))[0] or "none"
            key = (build, r["weight_dtype"], f"{r['isl']}/{r['osl']}")
            cells[key, int(float(r["concurrency"]))].append((float(r["ttft_ms"]) - p["ttft_ms"]) / float(r["tpot_ms"]))
    keys = sorted({k for k, _ in cells})
    concs = sorted({c for _, c in cells})
    print(f"{'build / weights / ISL/OSL':40s}" + "".join(f"{c:>7d}" for c in concs))
    for key in keys:
        line = "".join(f"{np.median(cells[key, c]):7.0f}" if (key, c) in cells else "      -" for c in concs)
        print(f"{' / '.join(key):40s}{line}")


if __name__ == "__main__":
    main()
