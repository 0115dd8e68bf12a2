"""Snapshot of the tool's answers, to prove a refactor moved none of them.

    python tools/answer_snapshot.py write before.json     # on the tree before the change
    python tools/answer_snapshot.py write after.json      # on the tree after it
    python tools/answer_snapshot.py compare before.json after.json   # exit 1 on any difference

Each entry is one CLI command's `--json` output (estimates with their breakdowns, frontiers, disaggregated
serving, lint findings, design rows, roofline, validation reports), run in-process through Typer's
CliRunner. `compare` matches every string and integer exactly and every float to 1e-9 relative; wall times
(`seconds`) are left out. The commands cover each engine, each mixer kind the bundled models use (GQA,
sliding windows, MLA, gated DeltaNet), dense and MoE, speculative decoding, Helix and disaggregation.
"""
from __future__ import annotations

import json
import math
import sys

L70 = ["llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--weight-dtype", "fp8", "--kv-dtype", "fp8"]
COMMANDS: dict[str, list[str]] = {
    # estimates: every engine, dense and MoE, each mixer kind, speculation, Helix, AMD
    **{f"estimate/llama70b/{e}": ["estimate", *L70, "--concurrency", "64", "--backend", e, "--breakdown"]
       for e in ("trtllm", "vllm", "sglang")},
    "estimate/llama70b/offline": ["estimate", *L70],
    "estimate/llama8b/h100/bf16/1": ["estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1", "--breakdown"],
    "estimate/dsr1/b200/adp-mtp": ["estimate", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--attention-dp", "8", "--ep", "8",
                                   "--spec", "mtp", "--draft-len", "3", "--acceptance-rates", "0.85,0.7,0.6", "--concurrency", "256",
                                   "--breakdown"],
    "estimate/dsr1/h200/sglang": ["estimate", "deepseek-r1", "--gpu", "h200", "--gpus", "8", "--tp", "8", "--ep", "8",
                                  "--backend", "sglang", "--concurrency", "32", "--breakdown"],
    "estimate/dsr1/mi300x/sglang": ["estimate", "deepseek-r1", "--gpu", "mi300x", "--gpus", "8", "--tp", "8",
                                    "--backend", "sglang", "--concurrency", "16"],
    "estimate/dsr1/gb200/helix": ["estimate", "deepseek-r1", "--gpu", "gb200", "--gpus", "16", "--tp", "4", "--kvp", "4",
                                  "--ep", "16", "--isl", "131072", "--osl", "1024", "--concurrency", "4"],
    "estimate/qwen3-30b/h100/vllm": ["estimate", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--backend", "vllm",
                                     "--concurrency", "32", "--breakdown"],
    "estimate/gpt-oss/b200": ["estimate", "openai/gpt-oss-120b", "--gpu", "b200", "--gpus", "4", "--tp", "4", "--concurrency", "64",
                              "--breakdown"],
    "estimate/qwen3.5/b200": ["estimate", "qwen3.5-397b-a17b", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--ep", "8",
                              "--concurrency", "32", "--breakdown"],
    "estimate/gemma4/h200": ["estimate", "google/gemma-4-26B-A4B", "--gpu", "h200", "--concurrency", "16", "--breakdown"],
    "estimate/llama4-maverick/b200/eagle": ["estimate", "llama-4-maverick", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--ep", "8",
                                            "--weight-dtype", "fp8", "--spec", "eagle3", "--acceptance-rates", "0.8,0.6,0.4",
                                            "--concurrency", "8"],
    "estimate/llama70b/pp": ["estimate", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "4",
                             "--concurrency", "64", "--breakdown"],
    "roofline/llama8b": ["roofline", "llama-3.1-8b", "--gpu", "h100", "--phase", "decode", "--batch", "1", "--context", "4096"],
    # frontiers
    "pareto/llama70b/h200": ["pareto", *L70[:5], "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--isl", "1024", "--osl", "1024"],
    **{f"pareto/qwen3-30b/h100/{e}": ["pareto", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "2", "--backend", e]
       for e in ("trtllm", "vllm", "sglang")},
    "pareto/dsr1/gb200-mtp": ["pareto", "deepseek-r1", "--gpu", "gb200", "--gpus", "16", "--spec", "mtp",
                              "--acceptance-rates", "0.85,0.7,0.6"],
    "pareto/dsr1/disagg": ["pareto", "deepseek-r1", "--gpu", "b200", "--gpus", "16", "--disagg"],
    "disagg/dsr1/b200": ["disagg", "deepseek-r1", "--gpu", "b200", "--prefill", "tp=8,ep=8", "--decode", "attention_dp=8,ep=8",
                         "--decode-instances", "2"],
    # lint and design
    **{f"lint/{m}/{g}/{r}": ["lint", m, "--gpu", g, "--regime", r]
       for m, g in (("llama-3.1-70b", "b200"), ("deepseek-r1", "b200"), ("openai/gpt-oss-120b", "h100"),
                    ("qwen3.5-397b-a17b", "gb200"), ("llama-3.1-8b", "mi300x"))
       for r in ("throughput", "latency")},
    "design/dense70b": ["design", "--params", "70e9", "--gpu", "b200", "--gpus", "8", "--regime", "latency",
                        "--baseline", "llama-3.1-70b", "--max-candidates", "300"],
    "design/moe235b": ["design", "--params", "235e9", "--gpu", "b200", "--gpus", "8", "--moe", "--baseline", "qwen3-235b-a22b",
                       "--max-candidates", "300"],
    # the validation report's inputs
    "validate/serving": ["validate", "--serving", "src/llm_codesign/data/measurements/serving_measured_blackwell_clean.csv"],
    **{f"validate/kernels/{k}": ["validate", "--kernels", k] for k in ("gemm", "moe", "decode_attention", "prefill_attention", "collectives")},
    **{f"validate/{f}": ["validate", "--serving", f"src/llm_codesign/data/measurements/{f}.csv"]
       for f in ("serving_inferencex_blackwell", "serving_disagg_blackwell", "trtllm_perf_overview")},
}


def _plain(obj):
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items() if k != "seconds"}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def run(names: list[str] | None = None) -> dict:
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    out = {}
    for name, args in COMMANDS.items():
        if names and not any(name.startswith(n) for n in names):
            continue
        r = CliRunner().invoke(app, [*args, "--json"])
        try:
            out[name] = _plain(json.loads(r.stdout)) if r.exit_code == 0 else {"exit": r.exit_code, "output": r.output}
        except json.JSONDecodeError:
            out[name] = {"exit": r.exit_code, "output": r.output}
        print(f"{name}: exit {r.exit_code}", file=sys.stderr)
    return out


def diff(a, b, path="", tol=1e-9, found=None):
    found = [] if found is None else found
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                found.append(f"{path}/{k}: only in {'after' if k in b else 'before'}")
            else:
                diff(a[k], b[k], f"{path}/{k}", tol, found)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            found.append(f"{path}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff(x, y, f"{path}[{i}]", tol, found)
    elif isinstance(a, float) or isinstance(b, float):
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float))) or not math.isclose(a, b, rel_tol=tol, abs_tol=1e-12):
            found.append(f"{path}: {a!r} before, {b!r} after")
    elif a != b:
        found.append(f"{path}: {a!r} before, {b!r} after")
    return found


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "write":
        with open(argv[1], "w") as f:
            json.dump(run(argv[2:]), f, indent=1, sort_keys=True)
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        a, b = (json.load(open(p)) for p in argv[1:])
        found = diff(a, b)
        for line in found[:60]:
            print(line)
        print(f"{len(found)} differences over {len(a)} commands" if found else f"identical: {len(a)} commands")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
