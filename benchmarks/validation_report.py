"""Every accuracy figure the README and docs/accuracy.md quote, from one command (bundled profile).

Run: python benchmarks/validation_report.py [--out docs/validation_report.md]   (no GPU; a few seconds)
With --out it also writes the intervals' reliability diagram beside it (reliability.svg); with --intervals PATH
the interval table every prediction quotes (interval_folds.py builds it and measures its coverage).
Kernel tables and serving rows from the shipped measurements (data/measurements): the clean sample
the profile is fitted on (Qwen3.5 held out), the sample as shipped, and, never fitted on, the
TensorRT-LLM perf-overview tables, the published single runs and the disaggregated runs; the InferenceX campaigns on
B200/B300 and MI355X, which the serving values are fitted on since issue 39.

With --folds it first re-fits and writes the folds beside --out (about 25 minutes on 2 cores): the
leave-one-campaign-out serving fits (A-B, B-A, the two Blackwell campaigns priced on MI355X, all three together), as
`crossval_campaigns.py` documents them (crossval.md), and the leave-one-GPU-family-out kernel fits
(`crossval_families.py`, crossval_families.md).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import interval_folds
import numpy as np
from crossval_campaigns import TRTLLM_NEW_BUILDS, newer_build  # the builds each campaign's fit keeps

from llm_codesign.measure import accuracy
from llm_codesign.measure import intervals as accuracy_intervals
from llm_codesign.measure.audit import DISCORDANT_RATIO, clean, summary
from llm_codesign.measure.campaigns import SGLANG_ROCM_BUILDS, SGLANG_ROCM_FIRST, inferencex_run_id, sglang_rocm_build
from llm_codesign.measure.stats import error_stats
from llm_codesign.measure.validate import kernel_report, predict_serving, read_rows, serving_report

ROOT = Path(__file__).resolve().parents[1]
MEAS = ROOT / "src" / "llm_codesign" / "data" / "measurements"
KERNELS = MEAS / "kernels"  # gzipped
SERVING_METRICS = ("ttft_ms", "tpot_ms")


def _fmt(st: dict | None) -> str:
    return "–" if not st else f"{st['median_ape']:.1f} / {st['p90_ape']:.1f} ({st['signed_median_pe']:+.1f}), n={st['n']}"


def _table(title: str, groups: dict, metrics) -> list[str]:
    out = [f"| {title} | " + " | ".join(f"{m}: median / p90 (signed)" for m in metrics) + " |",
           "|---|" + "---|" * len(metrics)]
    out += [f"| {g} | " + " | ".join(_fmt(v.get(m)) for m in metrics) + " |" for g, v in groups.items()]
    return out + [""]


def _campaign(source: str) -> str:
    """The silicon sample's measurement campaign, from its run name."""
    name = source.split(":")[-1]
    if re.search(r"_cfg\d+$", name):
        return "cfg runs"
    m = re.match(r"(\d{4}_\d{2}_\d{2})_", name)
    return f"{m[1]} runs" if m else "other runs"


def _subset(rows, preds, keep, metrics=SERVING_METRICS) -> dict:
    idx = [i for i, r in enumerate(rows) if keep(r) and preds[i]]
    out = {}
    for m in metrics:
        pairs = [(preds[i][m], float(rows[i][m])) for i in idx if (rows[i].get(m) or "").strip() and preds[i].get(m, 0) > 0]
        if pairs:
            p, y = np.array(pairs).T
            out[m] = error_stats(p, y)
    return out


def serving_section(title: str, path: Path) -> tuple[list[str], list[dict], list[dict]]:
    """The section's lines, with the rows and their predictions."""
    rows = read_rows(path)
    preds, unmodeled = predict_serving(rows)
    rep = serving_report(rows, preds, unmodeled)
    checks = {k: v for k, v in rep["data_checks"].items() if k not in ("changes", "repeatability")}
    lines = [f"## {title}", "", f"`{path.relative_to(ROOT)}`: {rep['modeled']} of {rep['rows']} rows modelled; "
             f"data checks {checks}.", ""]
    lines += _table("overall", {"all rows": rep["overall"]}, SERVING_METRICS)
    rp = rep["data_checks"]["repeatability"]
    lines += [f"Repeat runs (`audit.repeatability`): {rp['settings']} settings measured more than once, {rp['rows']} runs "
              f"(each measurement once). Their spread is the error of a model that knew each setting's median run; "
              f"{len(rp['discordant'])} settings' runs differ by over {DISCORDANT_RATIO:g}x.", "",
              "| metric | runs from their setting's median: median / p90 | the model on the same runs: median / p90 |",
              "|---|---|---|"]
    lines += [f"| {m} | {rp[m]['median_ape']:.1f} / {rp[m]['p90_ape']:.1f} | {rp[m]['model_median_ape']:.1f} / "
              f"{rp[m]['model_p90_ape']:.1f} |" for m in SERVING_METRICS] + [""]
    for key in ("backend", "concurrency", "lengths", "gpu", "weight_dtype", "model"):
        lines += _table(key, rep["by"][key], SERVING_METRICS)
    campaigns = sorted({_campaign(r.get("source", "")) for r in rows})
    lines += _table("campaign", {c: _subset(rows, preds, lambda r, c=c: _campaign(r.get("source", "")) == c) for c in campaigns},
                    SERVING_METRICS)
    if unmodeled:
        reasons: dict[str, int] = {}
        for u in unmodeled:
            reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
        lines += ["Not modelled: " + "; ".join(f"{n} rows: {r}" for r, n in reasons.items()), ""]
    return lines, rows, preds


# the clean form's drops that are not another listing of a kept measurement (measure.audit.DROPPED less repeat and conflict)
LEFT_OUT = ("inconsistent", "unrecorded", "unplanned")


def left_out_section(path: Path) -> list[str]:
    """The sample's runs the clean form leaves out because no reading of their columns holds (measure.audit), priced
    as recorded: listed, not silently dropped."""
    rows = read_rows(path)
    out = {c["row"]: c["action"] for c in clean(rows)[1] if c["action"] in LEFT_OUT}
    sel = [{**rows[i], "_action": out[i]} for i in sorted(out)]
    preds = predict_serving(sel)[0]
    groups = {a: _subset(sel, preds, lambda r, a=a: r["_action"] == a) for a in LEFT_OUT}
    return ["Left out of the clean sample, and of its fit and figures above, priced here as recorded: runs whose own series "
            "contradicts every reading of their concurrency (`inconsistent`), runs that record none (`unrecorded`) and runs at a "
            "TP their model's heads divide in a series recorded mostly at TPs they do not, whose plans are not recorded (`unplanned`); "
            "`serving_measured_blackwell_clean.changes.csv` gives each one's reason, data/measurements/SOURCES.md the evidence.",
            "", *_table("left out", groups, SERVING_METRICS)]


def in_sample_coverage(table: dict) -> list[str]:
    """The intervals' in-sample coverage the README quotes: the three serving campaigns' runs (the clean sample, InferenceX
    on Blackwell and on MI355X), each priced with the bundled profile and banded with `table` as shipped (its TOML read
    back: the rounding `estimate` reads), TTFT and TPOT pooled (`validate --serving --json`'s interval_coverage, summed)."""
    shipped = tomllib.loads(accuracy_intervals.to_toml(table, []))
    runs = n = inside80 = inside95 = 0
    for name in ("serving_measured_blackwell_clean.csv", "serving_inferencex_blackwell.csv", "serving_inferencex_mi355x.csv"):
        # the runs the slices hold (interval_folds.residual_sets): MI355X's from the builds campaign C's fit keeps
        rows = [r for r in read_rows(MEAS / name) if newer_build(r)]
        found = accuracy_intervals.row_intervals(rows, predict_serving(rows)[0], table=shipped)[1]
        both = [found[m] for m in ("ttft_ms", "tpot_ms") if m in found]
        runs += max(f["n"] for f in both)
        n += sum(f["n"] for f in both)
        inside80 += sum(f["inside80"] for f in both)
        inside95 += sum(f["inside95"] for f in both)
    return [f"In sample, of the {runs:,} serving runs of the three campaigns (the clean sample and InferenceX on Blackwell and on "
            "MI355X, its SGLang ROCm 0.5.2 and 0.5.5.post3 runs left out as the fit and the slices leave them, priced with the "
            f"bundled profile), {100 * inside80 / n:.1f}% of their {n:,} TTFT and TPOT measurements fall "
            f"inside the 80% interval, {100 * inside95 / n:.1f}% inside the 95% (`validate --serving --json`'s interval_coverage, "
            "pooled over the three files).", ""]


def inferencex_sections() -> list[str]:
    """The InferenceX campaigns (a closed loop of C slots, lengths spread, SGLang's flags from the scripts:
    data/measurements/campaigns.toml) on Blackwell and on MI355X, the latter also by build and engine, and the
    same runs priced as lockstep waves (the arrival the model assumed before issue 39) for comparison."""
    lines, rows, preds = serving_section("Serving, InferenceX on B200/B300 (closed loop, scripts' flags)", MEAS / "serving_inferencex_blackwell.csv")
    trt = {f"trtllm, release {'1.2 on' if n else '1.1'}": _subset(rows, preds, lambda r, n=n: r["backend"] == "trtllm" and ((inferencex_run_id(r["source"]) or 0) >= TRTLLM_NEW_BUILDS) == n)
           for n in (True, False)}
    lines += ["By software build: TensorRT-LLM's release 1.1.0rc2.post2 runs (before run id 21484110885) take 7-16% longer per token "
              "at the same settings and ran FP8 on the DEEPGEMM MoE backend; the serving fit leaves them out "
              "(`docs/modelling-notes.md#trtllm-builds`).", ""]
    lines += _table("build", {k: v for k, v in trt.items() if v}, SERVING_METRICS)
    amd_lines, rows, preds = serving_section("Serving, InferenceX on MI355X (SGLang and ATOM; closed loop, scripts' flags)",
                                             MEAS / "serving_inferencex_mi355x.csv")
    lines += amd_lines
    new = newer_build
    groups = {f"{b}, {'newer' if n else 'earlier'} builds": _subset(rows, preds, lambda r, b=b, n=n: r["backend"] == b and new(r) == n)
              for b in ("sglang", "atom") for n in (True, False)}
    groups["all newer builds (the fit's, `benchmarks/fit_amd_serving.py`)"] = _subset(rows, preds, new)
    # the same SGLang runs by the release their run's image held (measure.campaigns.sglang_rocm_build)
    for w in ("fp8_block", "mxfp4"):
        for release in dict.fromkeys([SGLANG_ROCM_FIRST, *(b for _, b in SGLANG_ROCM_BUILDS[w])]):
            groups[f"sglang {w}, {release}{'' if release == SGLANG_ROCM_FIRST else ' on'}"] = _subset(
                rows, preds, lambda r, w=w, b=release: r["weight_dtype"] == w and sglang_rocm_build(r) == b)
    lines += ["By software build (the release of the run's image, `measure.campaigns.sglang_rocm_build`): SGLang's ROCm 0.5.2 "
              "runs take ~2x as long per token as the later ones at the same settings, and 0.5.5.post3's ran AITER's "
              "persistent MLA decode on a BF16 cache; neither is priced as its build (0.5.2's FP8 MLA products are: "
              "`docs/modelling-notes.md#sglang-rocm-builds`), so both are \"earlier\" and left out of the fit; the runs "
              "from 0.5.6.post1 (MXFP4) and 0.5.8 (FP8) on, and every ATOM run, are \"newer\".", ""]
    lines += _table("build", {k: v for k, v in groups.items() if v}, SERVING_METRICS)
    waves = []
    for path in (MEAS / "serving_inferencex_blackwell.csv", MEAS / "serving_inferencex_mi355x.csv"):
        rs = [{**r, "arrival": "waves"} for r in read_rows(path)]
        waves.append((path.name, _subset(rs, predict_serving(rs)[0], lambda r: True)))
    lines += ["The same runs priced as waves of identical requests (the arrival every run was priced with before issue 39; "
              "the scripts' flags kept):", ""]
    lines += _table("file, as waves", dict(waves), SERVING_METRICS)
    return lines


def disagg_section(path: Path) -> tuple[list[str], list, list]:
    """The disaggregated runs priced with serve.disagg (validate detects the pool columns), and where
    the first tokens' error lies: the request rate the runs sustained (Little's law over the measured
    TTFT and TPOT) against the modelled prefill pool's capacity."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.measure.validate import _plan, _precision, pool_deployment
    from llm_codesign.serve.disagg import evaluate_disagg
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    lines, rows, preds = serving_section("Disaggregated serving, InferenceX Dynamo runs (held out; priced with `disagg`)", path)
    load = {"1-32": [], "33+": []}
    for r, p in zip(rows, preds, strict=True):
        if not p:
            continue
        model, gpu = get_model(r["model"]), get_gpu(r["gpu"])
        x = {k: float(r[k]) for k in ("prefill_instances", "decode_instances", "concurrency", "isl", "osl", "ttft_ms", "tpot_ms")}
        pools = [pool_deployment(gpu, _plan([r], p, model.is_moe), _precision(model, r), engine=get_engine(r["backend"])) for p in ("prefill", "decode")]
        res = evaluate_disagg(model, *pools, calibration=calibration_for(gpu), prefill_instances=x["prefill_instances"],
                              decode_instances=x["decode_instances"], concurrency=x["concurrency"], isl=x["isl"], osl=x["osl"])
        cap = float(np.asarray(res["prefill_capacity_req_s"]).reshape(-1)[0])
        rate = x["concurrency"] / ((x["ttft_ms"] + (x["osl"] - 1) * x["tpot_ms"]) / 1e3)
        load["33+" if x["concurrency"] > 32 else "1-32"].append((rate / cap, x["ttft_ms"] / p["ttft_ms"]))
    lines += ["Where the first tokens go wrong: the request rate each run sustained (concurrency over measured TTFT + "
              "(OSL-1) x TPOT) as a share of the modelled prefill pool's capacity, and measured over predicted TTFT "
              "(medians). Issue 22's target: TTFT <= 30%, TPOT <= 15% median.", "",
              "| requests | rows | measured rate / modelled prefill capacity | measured / predicted TTFT |", "|---|---|---|---|"]
    lines += [f"| {band} | {len(v)} | {np.median([a for a, _ in v]):.2f} | {np.median([b for _, b in v]):.2f} |"
              for band, v in load.items() if v]
    return lines + [""], rows, preds


def accuracy_section(table: dict) -> list[str]:
    """The pooled errors by engine and load (llm_codesign.measure.accuracy: `serve`'s validation report shows them;
    an estimate states its own error as its intervals, below): TTFT and TPOT."""
    lines = ["## Error by engine and load (clean sample)", "",
             "`src/llm_codesign/data/calibration/accuracy.toml`; offline and speculative figures are the held-out ones above.", "",
             "| engine | requests | ttft_ms: median / p90 (signed), n | tpot_ms: median / p90 (signed), n |", "|---|---|---|---|"]
    for backend, bands in table["serving"].items():
        for band, cell in bands.items():
            lines.append(f"| {backend} | {band} | " + " | ".join(
                f"{c['median']:.1f} / {c['p90']:.1f} ({c['signed']:+.1f}), n={c['n']}" for c in cell.values()) + " |")
    return lines + [""]


def moe_plan_section(rows: list[dict]) -> list[str]:
    """The perf overview's v1.0 MoE rows with TP > 1 priced under both plans the page allows: as converted
    (attention TP, experts split by TP) and as its MoE options file suggests (attention DP, EP)."""
    from llm_codesign.spec.registry import get_model

    moe = [r for r in rows if "v1_0" in r["source"] and get_model(r["model"]).is_moe and int(r["tp"]) > 1]
    alt = [{**r, "tp": "1", "attention_dp": r["tp"], "ep": r["tp"], "moe_tp": "1"} for r in moe]
    lines = ["The v1.0 page gives MoE plans as TP only, while its reproduction section runs MoE models with "
             "`--ep` and `enable_attention_dp: true` (data/measurements/SOURCES.md). Its MoE rows with TP > 1, "
             "priced under both readings (the converter keeps the first; neither is chosen by its error):", ""]
    groups = {}
    for name, rs in (("attention TP, experts split by TP (as converted)", moe), ("attention DP, EP (options file)", alt)):
        preds, _ = predict_serving(rs)
        groups[f"{name}, {len(rs)} rows"] = _subset(rs, preds, lambda r: True, ("output_tok_s_per_gpu",))
    return lines + _table("plan", groups, ("output_tok_s_per_gpu",))


def hopper_moe_section(rows: list[dict], preds: list[dict]) -> list[str]:
    """The perf overview's Hopper rows, MoE models apart from dense ones, all versions and v1.0's alone (issue 39:
    MoE at max throughput on Hopper, against the dense rows that must stay within 10%)."""
    from llm_codesign.spec.registry import get_model

    moe_models = {r["model"] for r, p in zip(rows, preds, strict=True) if p and get_model(r["model"]).is_moe}
    groups = {}
    for gpu in ("h100", "h200"):
        for version in ("all", "v1_0"):
            for moe in (True, False):
                groups[f"{gpu} {'MoE' if moe else 'dense'} ({'every version' if version == 'all' else 'v1.0'})"] = _subset(
                    rows, preds, lambda r, g=gpu, v=version, m=moe: r["gpu"] == g and (r["model"] in moe_models) == m
                    and (v == "all" or f"_{v}_" in r["source"]), ("output_tok_s_per_gpu",))
    return ["Hopper, MoE and dense models apart (TensorRT-LLM's MoE on H100/H200 runs its CUTLASS kernel family, "
            "`Engine.moe_kernel`):", ""] + _table("hopper", groups, ("output_tok_s_per_gpu",))


def published_section(path: Path) -> list[str]:
    """One line per published run: each metric it states, the prediction and the signed error."""
    rows = read_rows(path)
    preds, unmodeled = predict_serving(rows)
    lines = ["## Published single-deployment runs (held out)", "",
             f"`{path.relative_to(ROOT)}` (sources and assumptions in `data/measurements/SOURCES.md`): "
             f"{len(rows) - len(unmodeled)} of {len(rows)} rows modelled.", "",
             "| run | plan | metric | published | predicted | error % |", "|---|---|---|---|---|---|"]
    for r, p in zip(rows, preds, strict=True):
        plan = (f"{r['num_gpus']}x{r['gpu']} {r['weight_dtype']} TP{r['tp']} EP{r['ep']} ADP{r['attention_dp']}, "
                f"{r['isl']}/{r['osl']}, c={r['concurrency']}" + (f", {r['spec_method']} k={r['spec_draft_len']} "
                                                                  f"acc={r['spec_acceptance']}" if r["spec_method"] else ""))
        for m in ("output_tok_s_per_gpu", "output_tok_s_per_user"):
            if (r.get(m) or "").strip() and p:
                y = float(r[m])
                lines.append(f"| {r['source']} | {plan} | {m} | {y:,.1f} | {p[m]:,.1f} | {100 * (p[m] / y - 1):+.1f} |")
    return lines + [""]


def mtp_depth_section(path: Path) -> list[str]:
    """A published scan of MTP depths at one request: each row's error, and the speedup over the row
    without MTP, measured and predicted (the draft passes' cost against what they save, whatever the
    target step's own error)."""
    rows = read_rows(path)
    preds, unmodeled = predict_serving(rows)
    m = "output_tok_s_per_user"
    base_y, base_p = float(rows[0][m]), preds[0][m]
    lines = ["## MTP depth at one request, TensorRT-LLM blog 1 (held out)", "",
             f"`{path.relative_to(ROOT)}`: {len(rows) - len(unmodeled)} of {len(rows)} rows modelled (8xb200 nvfp4, attention TP8, "
             "MoE TP2 x EP4, 1024/2048, one request; the acceptance the blog prints per depth).", "",
             "| draft length | acceptance | published tok/s/user | predicted | error % | published speedup | predicted speedup |",
             "|---|---|---|---|---|---|---|"]
    for r, p in zip(rows, preds, strict=True):
        y = float(r[m])
        lines.append(f"| {r['spec_draft_len'] or 0} | {r['spec_acceptance'] or '1.00'} | {y:,.0f} | {p[m]:,.1f} | {100 * (p[m] / y - 1):+.1f} "
                     f"| {y / base_y:.2f} | {p[m] / base_p:.2f} |")
    return lines + [""]


def run_folds(docs: Path) -> None:
    """The folds that re-fit parameters, each as its script documents it: the serving fit on one campaign
    priced on the other (A-B warm from the bundled values, B-A and both from the documented ones), then the
    kernel fit on some GPU families priced on the others."""
    bench = Path(__file__).resolve().parent

    def run(script: str, *args: str) -> None:
        subprocess.run([sys.executable, str(bench / script), *args], check=True)

    start = str(bench / "start_clean_fit.toml")  # the clean sample's own fit: no fold starts from values fitted on its test campaign
    with tempfile.TemporaryDirectory() as tmp:
        fits = {d: str(Path(tmp) / f"{d.lower()}.json") for d in ("A-B", "B-A", "AB-C", "ABC-ABC")}
        run("crossval_campaigns.py", "--direction", "A-B", "--warm", "--start", start, "--rounds", "2", "--json", fits["A-B"])
        run("crossval_campaigns.py", "--direction", "B-A", "--json", fits["B-A"])
        run("crossval_campaigns.py", "--direction", "AB-C", "--warm", "--start", start, "--rounds", "2", "--json", fits["AB-C"])
        # in sample: the bundled values' own polish, which reproduces them (their fixed point)
        run("crossval_campaigns.py", "--direction", "ABC-ABC", "--warm", "--rounds", "2", "--json", fits["ABC-ABC"])
        run("crossval_campaigns.py", "--from-json", *fits.values(), "--out", str(docs / "crossval.md"))
    run("crossval_families.py", "--out", str(docs / "crossval_families.md"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the report here (markdown); default: stdout")
    ap.add_argument("--accuracy", help="also write the pooled error table here (TOML; shipped as "
                    "src/llm_codesign/data/calibration/accuracy.toml)")
    ap.add_argument("--intervals", help="also write the interval table every prediction quotes here (TOML; shipped as "
                    "src/llm_codesign/data/calibration/intervals.toml)")
    ap.add_argument("--folds", action="store_true", help="first re-fit the cross-validation folds and write crossval.md and "
                    "crossval_families.md beside --out (about 25 minutes)")
    args = ap.parse_args()
    if args.folds:
        run_folds(Path(args.out).parent if args.out else ROOT / "docs")
    lines = ["# Validation report (bundled profile)", "",
             "Median / 90th-percentile absolute percentage error, signed median in brackets (positive: "
             "predicted above measured). Generated by `python benchmarks/validation_report.py`.",
             "Folds that re-fit parameters (minutes each) have their own pages: [leave-one-campaign-out](crossval.md) "
             "(`benchmarks/crossval_campaigns.py`) and [leave-one-GPU-family-out](crossval_families.md) on the kernel "
             "tables (`benchmarks/crossval_families.py`).", ""]
    lines += ["## Kernels (calibration data)", ""]
    overall = {}
    for kind in ("gemm", "decode_attention", "prefill_attention", "collectives", "moe"):
        rep, _, _ = kernel_report(KERNELS / f"{kind}.csv.gz")
        overall[f"{kind} ({rep['modeled']} of {rep['rows']})"] = rep["overall"]
    lines += _table("table", overall, ("latency_ms",))
    amd = {}
    for kind in ("gemm", "collectives"):
        rep, _, _ = kernel_report(MEAS / "kernels_amd" / f"{kind}.csv")
        amd[f"amd/{kind} ({rep['modeled']} of {rep['rows']})"] = rep["overall"]
    lines += ["MI300X (`data/measurements/kernels_amd`): cdna3's all-reduce parameters are fitted on collectives.csv; "
              "its GEMMs keep default.toml's values (`python benchmarks/fit_amd_kernels.py`: both, and a fit on half "
              "the shapes judged on the other half).", ""]
    lines += _table("table", amd, ("latency_ms",))
    lines += ["H100 per engine and kernel (`data/measurements/kernels_hopper`, `validate --kernels hopper/<table>`): each row priced "
              "in the kernel family it names (GEMM: DeepGEMM's for SGLang's block FP8; MoE: `Engine.moe_kernel`'s families, "
              "fitted on these rows by `benchmarks/fit_hopper_kernels.py`; attention: the engine's default kernel against "
              "TensorRT-LLM's, `Engine.attention_kernels`, cited, not fitted, but SGLang's and vLLM's GQA prefill and decode, priced as "
              "FlashAttention-3's kernel (`fa3`), its prefill rates and fixed cost and its decode FP8 rate fitted on these rows, "
              "`Engine.fa3_prefill`, `Engine.fa3_decode`; SGLang's Triton backend, what it runs where those take no head size, "
              "by its own rules, `cost.kernels.triton_decode_split`, `triton_decode_grid`, `triton_prefill_tiles` and "
              "`TRITON_PREFILL_EFF`, cited and measured on these rows (not by calibrate); all-reduce: each engine's own, `Engine.own_allreduce`, NCCL past its "
              "limits, its four quantities fitted on the CUDA-graph rows by `benchmarks/fit_hopper_allreduce.py`, eager rows "
              "with the engine's serving-fitted eager launch). Rows not priced are listed with their reason by `validate`.", ""]
    for kind in ("gemm", "moe", "prefill_attention", "decode_attention", "comm"):
        rep, _, _ = kernel_report(f"hopper/{kind}")
        groups = {"all rows": rep["overall"], **{g.removeprefix("h100_sxm "): v for g, v in rep["by"].items()}}
        lines += _table(f"hopper/{kind} ({rep['modeled']} of {rep['rows']})", groups, ("latency_ms",))
    rep, _, _ = kernel_report("hopper/ep_comm")
    lines += ["Expert-parallel dispatch and combine (`validate --kernels hopper/ep_comm`): each row priced as DeepEP's kernels in its "
              "mode (`cost.ffns.deepep_time`), fitted on SGLang's raw DeepEP rows by `benchmarks/fit_deepep.py`; TensorRT-LLM's and "
              "vLLM's rows, which time each engine's dispatch module, out of sample. No engine runs DeepEP on Hopper by default "
              "(serving prices its exchange as before).", ""]
    groups = {"all rows": rep["overall"], **{g.removeprefix("h100_sxm "): v for g, v in rep["by"].items()}}
    lines += _table(f"hopper/ep_comm ({rep['modeled']} of {rep['rows']})", groups, ("latency_ms",))
    clean_lines, clean_rows, clean_preds = serving_section("Serving, clean sample (fitted on; Qwen3.5 held out)",
                                                           MEAS / "serving_measured_blackwell_clean.csv")
    lines += clean_lines
    lines += left_out_section(MEAS / "serving_measured_blackwell.csv")
    lines += serving_section("Serving, sample as shipped (repeats and mislabelled plans in)", MEAS / "serving_measured_blackwell.csv")[0]
    rows = read_rows(MEAS / "trtllm_perf_overview.csv")
    preds, unmodeled = predict_serving(rows)
    rep = serving_report(rows, preds, unmodeled)
    offline = (rows, preds)
    lines += ["## Offline max throughput, TensorRT-LLM perf overview (held out)", ""]
    lines += _table("overall", {"all rows": rep["overall"]}, ("output_tok_s_per_gpu",))
    rp = rep["data_checks"]["repeatability"]["output_tok_s_per_gpu"]
    lines += [f"{rep['data_checks']['repeatability']['settings']} settings appear in more than one version's table "
              f"({rp['n']} rows): a row lies a median {rp['median_ape']:.1f}% (p90 {rp['p90_ape']:.1f}%) from its setting's median, "
              f"the model {rp['model_median_ape']:.1f}% (p90 {rp['model_p90_ape']:.1f}%) on the same rows.", ""]
    lines += _table("gpu", rep["by"]["gpu"], ("output_tok_s_per_gpu",))
    lines += _table("lengths", rep["by"]["lengths"], ("output_tok_s_per_gpu",))
    lines += _table("model", rep["by"]["model"], ("output_tok_s_per_gpu",))
    lines += hopper_moe_section(rows, preds)
    lines += moe_plan_section(rows)
    lines += inferencex_sections()
    lines += published_section(MEAS / "published_runs.csv")
    lines += mtp_depth_section(MEAS / "published_mtp_depth.csv")
    dis_lines, dis_rows, dis_preds = disagg_section(MEAS / "serving_disagg_blackwell.csv")
    lines += dis_lines
    pub_rows = read_rows(MEAS / "published_runs.csv")
    table = accuracy.build((clean_rows, clean_preds), offline, (pub_rows, predict_serving(pub_rows)[0]), (dis_rows, dis_preds))
    lines += accuracy_section(table)
    interval_lines, svg, intervals = interval_folds.section(interval_folds.residual_sets())
    lines += interval_lines
    lines += in_sample_coverage(intervals)
    _, changes = clean(read_rows(MEAS / "serving_measured_blackwell.csv"))
    lines += [f"Data checks on the sample as shipped: {summary(changes)} "
              "(`serving_measured_blackwell_clean.changes.csv` lists each).", ""]
    text = "\n".join(lines)
    if args.accuracy:
        header = ["Measured error of the bundled profile's predictions, pooled: `serve`'s validation report and `disagg` show it (llm_codesign.measure.accuracy).",
                  "Generated by `python benchmarks/validation_report.py --accuracy src/llm_codesign/data/calibration/accuracy.toml`;",
                  "a test fails when it is out of date. Per cell: median and 90th-percentile absolute percentage error,",
                  "signed median (positive: predicted above measured), measured rows.",
                  "serving: TTFT / TPOT by engine and concurrency band, data/measurements/serving_measured_blackwell_clean.csv",
                  "  (fitted on; benchmarks/crossval_serving.py finds held-out halves within 1.2 points of in-sample).",
                  "offline: output tok/s per GPU by GPU family, data/measurements/trtllm_perf_overview.csv (held out).",
                  "speculative: output tok/s per user of data/measurements/published_runs.csv rows with speculation (held out).",
                  "disaggregated: TTFT / TPOT of data/measurements/serving_disagg_blackwell.csv priced with disagg (held out)."]
        Path(args.accuracy).write_text(accuracy.to_toml(table, header) + "\n")
    if args.intervals:
        header = ["Prediction intervals: what every estimate, frontier point and `validate --out` quotes (llm_codesign.measure.intervals).",
                  "Generated by `python benchmarks/validation_report.py --intervals src/llm_codesign/data/calibration/intervals.toml`;",
                  "a test fails when it is out of date. slices: per metric and slice (mode|engine|family|class|load|lengths and its",
                  "parents; TTFT's also with |arrival at the levels naming the engine), n, the split-conformal quantiles of log(measured / predicted) in permille keys (q025: 2.5%, q500: the",
                  "median), mad, the median absolute deviation, the arrival patterns its runs were measured under (arrivals),",
                  "across GPU families their families and across engines their engines. spread: per metric|mode|class|load, the",
                  "quantiles of the runs' scores (r - q500) / mad about their slices: a slice's 80% bounds are q500 + mad x these.",
                  "between: the between-group term T",
                  "(log units, t80/t95) a new campaign (campaign) and each reason a",
                  "question lies outside the runs add to the slice's bounds (beyond them, log units), measured on held-out folds",
                  "(docs/validation_report.md). envelope: what the runs cover; kernel_tables: what the kernel tables cover."]
        Path(args.intervals).write_text(accuracy_intervals.to_toml(intervals, header) + "\n")
    if args.out:
        Path(args.out).write_text(text)
        (Path(args.out).parent / "reliability.svg").write_text(svg)
    else:
        print(text)


if __name__ == "__main__":
    main()
