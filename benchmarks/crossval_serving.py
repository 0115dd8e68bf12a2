"""Out-of-sample check of the serving fit: two-fold cross-validation on serving_measured_blackwell_clean.csv.

The serving-software parameters (33, most of them per engine) are fitted on one half of the measured
deployments and judged on the other. Rows are split by deployment (model architecture, GPU, engine,
precision, plan, ISL/OSL, concurrency), so settings measured more than once never sit on both sides;
the clean file (llm_codesign.measure.audit) lists each measurement once, under the plan its run name states.
The kernel efficiencies stay as bundled (they come from kernel tables, not from these runs); the
per-engine scales on them are serving parameters and are fitted with the rest. Qwen3.5's rows
are held out of both sides, as they are held out of the bundled fit (`--hold-out` in the
re-fit command of docs/accuracy.md): they judge the Gated DeltaNet layer, and `validate` reports them.

    python benchmarks/crossval_serving.py            # both folds, one after the other (~5 min each, 2 cores)
    python benchmarks/crossval_serving.py --fold 0   # one fold
    python benchmarks/crossval_serving.py --scheduler local   # the folds side by side on a Dask LocalCluster

The folds are tasks of the sweep executor (llm_codesign.explore.sweep.execute), as `sweep` and `design` run
theirs: in-process by default, on Dask with --scheduler local or tcp://HOST:PORT (or DASK_SCHEDULER_ADDRESS).
"""
from __future__ import annotations

import argparse
import json
import zlib
from functools import partial
from pathlib import Path

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.sweep import execute
from llm_codesign.measure.calibrate import fit_serving, held_out
from llm_codesign.measure.validate import predict_serving, read_rows, serving_report
from llm_codesign.spec.hardware import catalog

DATA = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements" / "serving_measured_blackwell_clean.csv"
HELD_OUT = ["qwen3.5-397b"]  # as in the bundled fit
PLAN = ("gpu", "backend", "weight_dtype", "kv_dtype", "tp", "pp", "ep", "moe_tp", "attention_dp", "isl", "osl", "concurrency")


def fold_of(row: dict) -> int:
    # re-packagings of one architecture (DeepSeek-V3 / R1, NVFP4 checkpoints) count as one model
    arch = row["model"].split("/")[-1].replace("-NVFP4", "").replace("DeepSeek-V3", "DeepSeek-R1")
    key = "|".join([arch] + [str(row.get(k, "")).strip() for k in PLAN])
    return zlib.crc32(key.encode()) % 2


def run_fold(rows: list[dict], k: int) -> dict:
    train = [r for r in rows if fold_of(r) != k]
    test = [r for r in rows if fold_of(r) == k]
    fams = {g.family: calibration_for(g) for g in catalog().values()}
    fitted, _ = fit_serving(train, fams)
    cal = lambda g: fitted.get(g.family) or calibration_for(g)  # noqa: E731
    out = {"fold": k, "train_rows": len(train), "test_rows": len(test)}
    for name, part in (("train", train), ("test", test)):
        o = serving_report(part, *predict_serving(part, cal_override=cal))["overall"]
        out[name] = {m: {"median_ape": round(o[m]["median_ape"], 1), "p90_ape": round(o[m]["p90_ape"], 1), "n": o[m]["n"]}
                     for m in ("ttft_ms", "tpot_ms")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fold", type=int, choices=(0, 1), help="run one fold only")
    ap.add_argument("--scheduler", help="local (a Dask LocalCluster) or tcp://HOST:PORT; default: in-process")
    ap.add_argument("--workers", type=int, help="threads of the local cluster")
    args = ap.parse_args()
    rows = held_out(read_rows(DATA), HELD_OUT)
    folds = [args.fold] if args.fold is not None else [0, 1]
    for out in execute(folds, scheduler=args.scheduler, workers=args.workers, fn=partial(run_fold, rows)):
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
