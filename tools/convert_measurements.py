"""Convert the published tables to the canonical serving-measurement CSV (src/llm_codesign/data/measurements/).
Run by hand when the sources change; output is committed:

    python tools/convert_measurements.py PUBLISHED_DIR

PUBLISHED_DIR holds the tables as published (trtllm_perf_overview_v0_17/v0_20/v1_0_total.csv and the
aiconfigurator silicon sample as serving_measured_blackwell.csv; their sources are in SOURCES.md there).

TensorRT-LLM perf-overview tables: offline max throughput (trtllm-bench, infinite request rate) with
uniform ISL/OSL, so `concurrency` is empty; output tokens/s of the TPxPP group divided by its GPUs.
MoE rows give only TP/PP: TensorRT-LLM's default then shards experts by TP (moe_tp = tp, ep = 1). The
v1.0 page's reproduction commands pass `--ep $ep_size` and attention DP for MoE models without tabling
the EP size, so for those rows this is an assumption (see data/measurements/SOURCES.md).
FP8 rows use FP8 KV cache (trtllm-bench quantises the KV cache with FP8 checkpoints); FP4 rows NVFP4
weights with FP8 KV. MLPerf rows are not converted: they use real datasets without a stated mean
input length, which the canonical format needs.

The measured-serving sample is copied verbatim, and next to it its clean form (llm_codesign.measure.audit:
plans re-derived from the run names that state them, each measurement once) with the list of changes.
SOURCES.md in that folder is kept by hand.
"""
from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

from llm_codesign.measure.audit import clean, summary
from llm_codesign.measure.validate import read_rows
from llm_codesign.outputs import write_rows

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "llm_codesign" / "data" / "measurements"
COLUMNS = ["source", "model", "gpu", "num_gpus", "backend", "weight_dtype", "kv_dtype", "isl", "osl", "concurrency", "tp", "pp",
           "ep", "moe_tp", "attention_dp", "spec_method", "spec_draft_len", "spec_acceptance", "ttft_ms", "tpot_ms",
           "output_tok_s_per_gpu", "output_tok_s_per_user"]
MODELS = {"LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 70B": "llama-3.1-70b", "LLaMA v3.1 405B": "llama-3.1-405b",
          "Llama 3.1 8B": "llama-3.1-8b", "Llama 3.3 70B": "llama-3.3-70b", "Llama 3.1 405B": "llama-3.1-405b",
          "Mixtral 8x7B": "mixtral-8x7b", "Mixtral 8x22B": "mixtral-8x22b", "Mistral 7B": "mistral-7b",
          "Llama 4 Maverick": "llama-4-maverick", "Llama 4 Scout": "llama-4-scout",
          "Qwen3-235B-A22B": "qwen3-235b-a22b", "Qwen3-30B-A3B": "qwen3-30b-a3b"}
GPUS = {"H200": "h200", "H100": "h100", "A100-SXM4-80GB": "a100", "L40S": "l40s", "GH200": "gh200", "B200": "b200",
        "GB200": "gb200", "RTX PRO 6000 Blackwell Server": "rtx-pro-6000"}
PREC = {"FP8": ("fp8", "fp8"), "FP16": ("bf16", "bf16"), "FP4": ("nvfp4", "fp8")}


def convert(path: Path, writer) -> int:
    n = 0
    with path.open(newline="") as f:
        for i, r in enumerate(csv.DictReader(f)):
            model = r["model"].split(" - ")[0].strip()
            prec = r.get("precision") or r.get("checkpoint_precision")
            w, kv = PREC[prec]
            tp = pp = 1
            for part in r["parallelism"].split(","):
                part = part.strip()
                if part.startswith("TP"):
                    tp = int(part[2:])
                elif part.startswith("PP"):
                    pp = int(part[2:])
            gpus = int(r["num_gpus"])
            writer.writerow({
                "source": f"{path.name}:{i + 2} ({r['source'][:60]}; {r['trtllm_version'][:40]})",
                "model": MODELS.get(model, model), "gpu": GPUS.get(r["gpu"], r["gpu"]), "num_gpus": gpus, "backend": "trtllm",
                "weight_dtype": w, "kv_dtype": kv, "isl": r["isl"], "osl": r["osl"], "concurrency": "", "tp": tp, "pp": pp,
                "ep": 1, "moe_tp": tp, "attention_dp": 1, "spec_method": "", "spec_draft_len": "", "spec_acceptance": "",
                "ttft_ms": "", "tpot_ms": "", "output_tok_s_per_gpu": f"{float(r['total_output_tok_s']) / gpus:.2f}",
                "output_tok_s_per_user": ""})
            n += 1
    return n


def main(src: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "trtllm_perf_overview.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        total = sum(convert(src / n, w) for n in ("trtllm_perf_overview_v0_17_total.csv", "trtllm_perf_overview_v0_20_total.csv",
                                            "trtllm_perf_overview_v1_0_total.csv"))
    shutil.copy(src / "serving_measured_blackwell.csv", OUT / "serving_measured_blackwell.csv")
    rows = read_rows(OUT / "serving_measured_blackwell.csv")
    kept, changes = clean(rows)
    write_rows(OUT / "serving_measured_blackwell_clean.csv", COLUMNS, kept)
    write_rows(OUT / "serving_measured_blackwell_clean.changes.csv", ("row", "source", "action", "detail"), changes)
    print(len(kept), "of", len(rows), "measured-serving rows kept;", summary(changes))
    print(total, "perf-overview rows")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python tools/convert_measurements.py PUBLISHED_DIR (a folder of the published tables)")
    main(Path(sys.argv[1]))
