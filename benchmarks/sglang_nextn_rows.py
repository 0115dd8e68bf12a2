"""Do the clean sample's SGLang DeepSeek rows read as NEXTN (MTP-1) runs? (docs/modelling-notes.md#sgnx-nextn)

aiconfigurator's task defaults set nextn = 1 for DeepSeek from 2025-10-07 to 2026-06-17 (sdk/task.py:343,348 @77374298)
and its sglang.rule writes the NEXTN speculative flags whenever the task sets nextn (rule_plugin/benchmark/sglang.rule
@2fc13d121). Under NEXTN SGLang 0.5.9 runs no mixed chunk and no overlap loop (server_args.py:2354-2395). This prices
the clean sample's SGLang rows (campaign A) as they stand and as MTP-1 runs at the DeepSeek-V3 report's acceptance of
the second token (arXiv 2412.19437 sec. 5.4.3: 85-90%, a mean accepted length of 1.85-1.90; never fitted here), with and
without the synchronous loop's queued step (SchedulerFlags.queued_steps = 0), on the bundled profile and on the values
fitted on campaign B alone (the B -> A fold), and splits the DeepSeek rows by sub-run (build, date: the silicon sample's
record, aiconfigurator@095f58a5 aic-core/src/aiconfigurator_core/systems/silicon_sample.csv).

    python benchmarks/sglang_nextn_rows.py [--fit-cache /tmp/sgnx/b_fit.pkl]
"""
from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_campaigns import _routed, campaign_rows, start_families  # noqa: E402

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.measure.calibrate import fit_serving  # noqa: E402
from llm_codesign.measure.validate import predict_serving  # noqa: E402

AIC = "/work/.mirror/ai-dynamo+aiconfigurator/repo"
SAMPLE = "095f58a51c4ca8e61b66ec108d86f223f8d559ce:aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
NEXTN = {"spec_method": "mtp", "spec_draft_len": "1"}


def sub_runs() -> dict:
    """The silicon sample's (build, measured date) by row id, where the mirror holds it."""
    import csv
    import io
    try:
        text = subprocess.run(["git", "-C", AIC, "show", SAMPLE], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    out = {}
    for r in csv.DictReader(io.StringIO(text)):
        meta = dict(p.strip().split("=", 1) for p in r["silicon_data_source"].split(";") if "=" in p)
        out[r["id"]] = (r["backend_version"], meta.get("measured", "")[:10])
    return out


def _key(r):
    dtype = "fp8" if r["weight_dtype"].startswith("fp8") else r["weight_dtype"]
    return (r["gpu"], dtype, *(int(r[c]) for c in ("tp", "ep", "attention_dp", "isl", "osl", "concurrency")))


def measured_pairs(rows, runs) -> None:
    """Model-free: each SGLang DeepSeek row's TPOT against InferenceX's SGLang runs of the same GPU, format, plan,
    lengths and concurrency (serving_inferencex_blackwell.csv; its MTP runs and its runs without a draft apart), by
    sub-run; and the configurations the clean sample measured twice in one sub-run (TTFT / TPOT ms each)."""
    from statistics import median

    ix = defaultdict(lambda: defaultdict(list))
    for r in campaign_rows("B"):
        if r["backend"] == "sglang":
            ix[_key(r)][r["spec_method"] or "none"].append(float(r["tpot_ms"]))
    ratio, twins, at = defaultdict(list), defaultdict(list), defaultdict(list)
    for i, r in enumerate(rows):
        if r["backend"] != "sglang" or "deepseek" not in r["model"].lower():
            continue
        b, d = runs.get(r["source"].split(":", 1)[1], ("?", "?"))
        sub = (r["model"].split("/")[1], r["weight_dtype"], b, d)
        twins[(*sub, *_key(r))].append((float(r["ttft_ms"]), float(r["tpot_ms"])))
        at[(*sub, *_key(r))].append(i)
        for m, v in ix.get(_key(r), {}).items():
            ratio[(*sub, m)].append(float(r["tpot_ms"]) / median(v))
    print("## clean TPOT / InferenceX's median TPOT at the same configuration (SGLang, measured)")
    print("| sub-run (model, format, build, date) | InferenceX runs | rows | median | range |\n|---|---|---|---|---|")
    for k, v in sorted(ratio.items()):
        print(f"| {' '.join(k[:4])} | {'MTP' if k[4] == 'mtp' else 'no draft'} | {len(v)} | {median(v):.2f} | {min(v):.2f}-{max(v):.2f} |")
    print("\n## configurations measured twice in one sub-run: TTFT ms / TPOT ms (the lower-TPOT run first); InferenceX TPOT")
    print("| config (format, build, TP, EP, ISL/OSL, C) | lower-TPOT run | other run | TPOT ratio | TTFT ratio | InferenceX no draft / MTP |\n|---|---|---|---|---|---|")
    for k, v in sorted(twins.items()):
        if len(v) == 2:
            lo, hi = sorted(v, key=lambda x: x[1])
            ixv = ix.get(k[4:], {})
            f = lambda m, ixv=ixv: f"{median(ixv[m]):.1f}" if m in ixv else "-"  # noqa: E731
            print(f"| {k[1]} {k[2]} TP{k[6]} EP{k[7]} {k[9]}/{k[10]} C{k[11]} | {lo[0]:.0f} / {lo[1]:.1f} | {hi[0]:.0f} / {hi[1]:.1f} | "
                  f"{lo[1] / hi[1]:.2f} | {lo[0] / hi[0]:.2f} | {f('none')} / {f('mtp')} |")
    # each pair's rows by their measured TPOT: a diagnosis of the pricing where a row's mode were known, never a row's fact
    pairs = [sorted(at[k], key=lambda i: float(rows[i]["tpot_ms"])) for k, v in twins.items() if len(v) == 2]
    return {p[0] for p in pairs}, {p[1] for p in pairs}


# (build, measured date) of the clean sample's TensorRT-LLM DeepSeek runs whose TPOT matches InferenceX's TensorRT-LLM MTP
# runs of the same configuration (clean / InferenceX median 0.97), where the other dates match its runs without a draft
# (0.97-1.00): data/measurements/serving_measured_blackwell.builds.csv
# (campaigns.toml's entry for them)
TRTLLM_MTP_DATES = {("1.1.0rc2.post2", "2026-01-14"), ("1.2.0rc6.post3", "2026-02-05"), ("1.2.0rc6.post3", "2026-02-06")}


def trtllm_builds() -> dict:
    import csv

    from crossval_campaigns import MEAS
    with open(MEAS / "serving_measured_blackwell.builds.csv") as f:
        return {r["source"]: (r["build"], r["measured"]) for r in csv.DictReader(f)}


def measured_pairs_trtllm(rows) -> None:
    """As measured_pairs, TensorRT-LLM's DeepSeek rows by (build, measured date) against InferenceX's TensorRT-LLM runs."""
    from statistics import median

    ix = defaultdict(lambda: defaultdict(list))
    from crossval_campaigns import CAMPAIGNS

    from llm_codesign.measure.validate import read_rows

    for r in read_rows(CAMPAIGNS["B"][1]):  # every InferenceX TensorRT-LLM run, its 1.1 builds' too
        if r["backend"] == "trtllm":
            ix[_key(r)][r["spec_method"] or "none"].append(float(r["tpot_ms"]))
    builds, ratio = trtllm_builds(), defaultdict(list)
    for r in rows:
        if r["backend"] == "trtllm" and "deepseek" in r["model"].lower():
            for m, v in ix.get(_key(r), {}).items():
                ratio[(*builds.get(r["source"], ("?", "?")), m)].append(float(r["tpot_ms"]) / median(v))
    print("\n## TensorRT-LLM: clean TPOT / InferenceX's median TPOT at the same configuration (measured)")
    print("| build, measured | InferenceX runs | rows | median | range |\n|---|---|---|---|---|")
    for k, v in sorted(ratio.items()):
        print(f"| {k[0] or '-'} {k[1]} | {'MTP' if k[2] == 'mtp' else 'no draft'} | {len(v)} | {median(v):.2f} | {min(v):.2f}-{max(v):.2f} |")


def trtllm_mtp_rows(rows) -> set:
    builds = trtllm_builds()
    return {i for i, r in enumerate(rows) if r["backend"] == "trtllm" and "deepseek" in r["model"].lower()
            and builds.get(r["source"]) in TRTLLM_MTP_DATES}


def stats(rows, preds, sel):
    out = {}
    for m in ("ttft_ms", "tpot_ms"):
        y = np.array([float(rows[i][m]) for i in sel])
        p = np.array([preds[i].get(m, np.nan) if preds[i] else np.nan for i in sel])
        ok = np.isfinite(p)
        e = (p[ok] - y[ok]) / y[ok] * 100
        out[m] = (np.median(np.abs(e)), np.median(e), int(ok.sum())) if ok.any() else (np.nan, np.nan, 0)
    return out


def fmt(s):
    return " / ".join(f"{s[m][0]:.1f} ({s[m][1]:+.1f})" for m in ("ttft_ms", "tpot_ms"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit-cache", default="/tmp/sgnx/b_fit.pkl")
    ap.add_argument("--rounds", type=int, default=8)
    a = ap.parse_args()
    cache = Path(a.fit_cache)
    if cache.exists():
        fitted = pickle.loads(cache.read_bytes())
    else:
        fitted, _ = fit_serving(campaign_rows("B"), start_families(), rounds=a.rounds)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(fitted))
    profiles = {"B fit": lambda g: fitted.get(g.family) or _routed(calibration_for(g), None), "bundled": None}
    rows = campaign_rows("A")
    runs = sub_runs()
    ds = [i for i, r in enumerate(rows) if r["backend"] == "sglang" and "deepseek" in r["model"].lower()]
    sg = [i for i, r in enumerate(rows) if r["backend"] == "sglang"]
    groups = defaultdict(list)
    for i in ds:
        r = rows[i]
        b, d = runs.get(r["source"].split(":", 1)[1], ("?", "?"))
        groups[(r["model"].split("/")[1], r["gpu"], r["weight_dtype"], b, d)].append(i)
    low, high = measured_pairs(rows, runs)
    measured_pairs_trtllm(rows)
    fp8_059 = {i for k, v in groups.items() if k[2] == "fp8" and k[3] == "0.5.9" for i in v}
    variants = {"as priced (mixed, overlap, no draft)": {},
                "NEXTN-1, acc 1.85": {**NEXTN, "spec_acceptance": "1.85"},
                "NEXTN-1, acc 1.85, no queued step": {**NEXTN, "spec_acceptance": "1.85", "queued_steps": "0"},
                "NEXTN-1, acc 1.90, no queued step": {**NEXTN, "spec_acceptance": "1.90", "queued_steps": "0"},
                "NEXTN-1, acc 1.85, no queued step, 0.5.9 FP8 rows only": {**NEXTN, "spec_acceptance": "1.85", "queued_steps": "0",
                                                                            "only_fp8_059": True}}
    # TensorRT-LLM's DeepSeek rows of the dates whose TPOT sits on InferenceX's MTP runs (measured_pairs_trtllm)
    trt_mtp = trtllm_mtp_rows(rows)
    for pname, cal in profiles.items():
        print(f"\n## {pname}: TTFT / TPOT median APE (signed), %")
        print("| variant | all A | SGLang | SGLang DeepSeek | " + " | ".join(f"{k[0]} {k[1]} {k[2]} {k[3]} {k[4]} ({len(v)})" for k, v in sorted(groups.items())) + " | twins' lower-TPOT run (11) | their other run (11) |")
        if trt_mtp:
            trt = [i for i, r in enumerate(rows) if r["backend"] == "trtllm"]
            # campaigns.toml prices those rows as MTP-1 (the dates' entry); `none` on a row keeps its speculation off, as before
            for vname, sel in (("TensorRT-LLM without the dates' MTP", trt_mtp), ("TensorRT-LLM's MTP-dated DeepSeek rows as MTP-1, acc 1.85", set())):
                mod = [dict(r, spec_method="none") if i in sel else r for i, r in enumerate(rows)]
                preds, _ = predict_serving(mod, cal_override=cal)
                print(f"| {vname} | {fmt(stats(mod, preds, range(len(mod))))} | TensorRT-LLM {fmt(stats(mod, preds, trt))} | "
                      f"its DeepSeek rows of those dates ({len(trt_mtp)}) {fmt(stats(mod, preds, sorted(trt_mtp)))} |", flush=True)
        for vname, cols in variants.items():
            only = fp8_059 if cols.get("only_fp8_059") else set(ds)
            mod = [dict(r, **{k: v for k, v in cols.items() if k != "only_fp8_059"}) if i in only else r for i, r in enumerate(rows)]
            preds, _ = predict_serving(mod, cal_override=cal)
            every = stats(mod, preds, range(len(mod)))
            cells = [fmt(every), fmt(stats(mod, preds, sg)), fmt(stats(mod, preds, ds))]
            cells += [fmt(stats(mod, preds, v)) for _, v in sorted(groups.items())]
            cells += [fmt(stats(mod, preds, sorted(low))), fmt(stats(mod, preds, sorted(high)))]
            print(f"| {vname} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
