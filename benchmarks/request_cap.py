"""Whether the per-rank request cap (serve.aggregated._front_bound: an attention-DP rank serves its requests' per-request
cost `ttft_overhead_s` one at a time, so at most 1 / cost requests a second) binds on the shipped serving runs, dense
and MoE apart, and whether that cost reads as one quantity across the two classes.

1. Per campaign, engine and class: the engine's bundled cost, each run's requests a second an attention-DP rank served
   (measured output tokens a second over the GPUs / OSL / ranks; a disaggregated run's prefill ranks, instances x
   attention DP), its share of the cap (rate x cost: 1 or more, the run itself refutes a serial cost that large), the
   predicted share (the bundled profile's rate; 1 where the cap binds, which holds the rate at 1 / cost exactly), and the
   share of SGLang's 24.9 ms such runs would take (a run above 1 there serves faster than a 24.9 ms serial cost allows).
2. Where one engine has runs of both classes in a campaign (the clean sample's TensorRT-LLM and vLLM; SGLang's MoE runs
   and InferenceX's TensorRT-LLM ones beside them, no engine there has a dense run): the per-request
   cost each class alone would take, paid as estimate pays it ((q + 1) / 2 times, overlapped with the wait's phase part
   where the engine's cost overlaps it: serve.aggregated.front_end_wait, and capped per rank), the one on a grid of 0-60 ms
   minimising the class's TTFT median APE with every other value bundled, each cost priced in full (request_overhead.py's
   slope between 1 and 2 s reads the cap since fixA2, not (q + 1) / 2), the TTFT at SGLang's 24.9 ms, and at 1-4 requests
   (the front end's cost least hidden by queues) the measured TTFT less the one priced at no cost.

docs/modelling-notes.md#disaggU-one-queue holds the figures.

    python benchmarks/request_cap.py            # both parts
    python benchmarks/request_cap.py --no-fit   # part 1 alone
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_campaigns import campaign_rows  # noqa: E402
from request_overhead import _ttft  # noqa: E402

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.measure.validate import predict_serving, read_rows  # noqa: E402
from llm_codesign.spec.engines import get_engine  # noqa: E402
from llm_codesign.spec.hardware import get_gpu  # noqa: E402
from llm_codesign.spec.registry import get_model  # noqa: E402

# SGLang's fitted per-request cost (fitted.toml [default.ttft_overhead_s], 24.9 ms; no family overrides it), read as rates() reads it
SGLANG_COST = calibration_for(get_gpu("h200")).ttft_overhead("sglang")
DISAGG = Path(__file__).resolve().parents[1] / "src/llm_codesign/data/measurements/serving_disagg_blackwell.csv"
GRID_MS = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 60.0, SGLANG_COST * 1e3])


def _f(r: dict, k: str, default=1.0) -> float:
    v = (r.get(k) or "").strip()
    return float(v) if v else default


def _class(name: str, memo: dict) -> str:
    if name not in memo:
        memo[name] = "moe" if get_model(name).is_moe else "dense"
    return memo[name]


def _ranks(r: dict) -> float:
    """The ranks that serve a run's per-request cost: attention-DP ranks, a disaggregated run's prefill ranks."""
    if (r.get("prefill_instances") or "").strip():
        return _f(r, "prefill_instances") * _f(r, "prefill_attention_dp")
    return _f(r, "attention_dp")


def rates(rows: list[dict], memo: dict) -> list[dict]:
    """Each priced row's class, engine, cost and measured / predicted requests a second a rank."""
    preds, _ = predict_serving(rows)
    out = []
    for r, p in zip(rows, preds, strict=True):
        if not p or not (r.get("concurrency") or "").strip():
            continue
        engine = get_engine(r["backend"].strip().lower()).name
        cost = calibration_for(get_gpu(r["gpu"])).ttft_overhead(engine)
        per = _f(r, "num_gpus") / float(r["osl"]) / _ranks(r)  # output tok/s/GPU -> requests a second a rank
        # a run recording no throughput: Little's law on its latencies, C / (TTFT + (OSL - 1) TPOT)
        life_s = (float(r["ttft_ms"]) + (float(r["osl"]) - 1.0) * float(r["tpot_ms"])) / 1e3
        meas = _f(r, "output_tok_s_per_gpu", np.nan) * per
        meas = float(r["concurrency"]) / life_s / _ranks(r) if np.isnan(meas) else meas
        out.append({"class": _class(r["model"], memo), "engine": engine, "cost": cost, "conc": float(r["concurrency"]),
                    "measured": meas, "predicted": float(p["output_tok_s_per_gpu"]) * per})
    return out


def cap_table(name: str, rows: list[dict]) -> None:
    groups = sorted({(x["class"], x["engine"]) for x in rows})
    for cls, engine in groups:
        sel = [x for x in rows if x["class"] == cls and x["engine"] == engine]
        cost = np.array([x["cost"] for x in sel])
        meas, pred = np.array([x["measured"] for x in sel]), np.array([x["predicted"] for x in sel])
        um, up, us = meas * cost, pred * cost, meas * SGLANG_COST
        print(f"{name:10s} {cls:5s} {engine:6s} {len(sel):4d} runs, cost {np.median(cost) * 1e3:5.2f} ms (cap {1 / np.median(cost):6.1f}/s): "
              f"measured rate a rank median {np.median(meas):6.2f}/s max {meas.max():6.2f}/s, share of cap max {um.max():.3f} "
              f"(>= 1: {int(np.sum(um >= 1.0))}); predicted max {up.max():.3f} (binds: {int(np.sum(up >= 0.999))}); "
              f"at {SGLANG_COST * 1e3:.1f} ms max {us.max():.2f} (>= 1: {int(np.sum(us >= 1.0))})")


def class_fit(campaign: str, engine: str, memo: dict) -> None:
    """Part 2: the cost each class alone would take (see the module's docstring)."""
    rows = [r for r in campaign_rows(campaign) if get_engine(r["backend"].strip().lower()).name == engine]
    priced = np.array([_ttft(rows, engine, ttft_overhead_s=c / 1e3) for c in GRID_MS])  # (costs, rows), ms
    bundled = _ttft(rows, engine)
    measured = np.array([float(r["ttft_ms"]) for r in rows])
    cls = np.array([_class(r["model"], memo) for r in rows])
    ok = np.all(np.isfinite(priced), axis=0)
    low = np.array([float(r["concurrency"]) <= 4.0 for r in rows])
    for c in ("dense", "moe"):
        s = ok & (cls == c)
        if not s.any():
            continue
        err = priced[:, s] / measured[s] - 1.0
        ape = np.median(np.abs(err), axis=1)
        best = int(np.argmin(ape))
        print(f"{campaign} {engine:6s} {c:5s} {int(s.sum()):4d} runs: TTFT median APE (signed) at no cost {ape[0] * 100:5.1f}% "
              f"({np.median(err[0]) * 100:+5.1f}), bundled {np.median(np.abs(bundled[s] / measured[s] - 1.0)) * 100:5.1f}%; best cost "
              f"{GRID_MS[best]:g} ms -> {ape[best] * 100:5.1f}% ({np.median(err[best]) * 100:+5.1f}); at {SGLANG_COST * 1e3:.1f} ms "
              f"{np.median(np.abs(err[-1])) * 100:5.1f}% ({np.median(err[-1]) * 100:+5.1f}); 1-4 requests ({int((s & low).sum())}): "
              f"measured less priced at no cost median {np.median((measured - priced[0])[s & low]) if (s & low).any() else np.nan:+.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-fit", action="store_true", help="part 1 alone (the caps)")
    args = ap.parse_args()
    memo: dict = {}
    for key in ("A", "B", "C"):
        cap_table(f"campaign {key}", rates(campaign_rows(key), memo))
    cap_table("disagg", rates(read_rows(DISAGG), memo))
    if not args.no_fit:
        for campaign, engine in (("A", "trtllm"), ("A", "vllm"), ("A", "sglang"), ("B", "sglang"), ("B", "trtllm")):
            class_fit(campaign, engine, memo)


if __name__ == "__main__":
    main()
