"""Where the InferenceX fit misses the clean sample's SGLang first tokens (issue 39, branch sgab).

Prices the clean sample's SGLang rows (campaign A) at the serving values of a B -> A fold (crossval_campaigns.py
--direction B-A --json) and of the A -> B fold (docs/crossval.md's first "Fitted values" line), and at the B fit with
SGLang's re-bunching share (prefill_queue_fraction, which B's closed loop cannot inform) at each of --shares; splits the
TTFT error (median APE, signed median in brackets) by model, concurrency, ISL, plan, measured size and the sample's own
sub-runs (build and measurement date: aiconfigurator@095f58a5 aic-core/src/aiconfigurator_core/systems/silicon_sample.csv,
`backend_version` and `measured=`; pass its path as --silicon).

    python benchmarks/crossval_campaigns.py --direction B-A --json /tmp/b-a.json
    git -C /work/.mirror/ai-dynamo+aiconfigurator/repo show HEAD:aic-core/src/aiconfigurator_core/systems/silicon_sample.csv > /tmp/s.csv
    python benchmarks/sglang_clean_ttft_split.py /tmp/b-a.json --silicon /tmp/s.csv
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_campaigns import campaign_rows, start_families  # noqa: E402

from llm_codesign.cost.calibration import BACKEND_KEYED  # noqa: E402
from llm_codesign.measure.validate import predict_serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def fitted(params: dict, fams: dict, **sglang):
    """The calibration of each GPU family at `params` (a fold's fitted values), SGLang's fields in `sglang` over them."""
    def of(g):
        cal = fams[g.family]
        cal = replace(cal, **{k: (tuple(sorted((dict(getattr(cal, k)) | v).items())) if k in BACKEND_KEYED else v)
                              for k, v in params.items() if v is not None and hasattr(cal, k)})
        return replace(cal, **{k: tuple(sorted((dict(getattr(cal, k)) | {"sglang": v}).items())) for k, v in sglang.items()})
    return of


def cell(pred, meas) -> str:
    e = np.asarray(pred) / np.asarray(meas) - 1.0
    return f"{np.median(np.abs(e)) * 100:5.1f} ({np.median(e) * 100:+6.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ba_json")
    ap.add_argument("--silicon", help="aiconfigurator's silicon_sample.csv: split by its sub-runs too")
    ap.add_argument("--shares", type=float, nargs="+", default=[0.25])
    args = ap.parse_args()
    fams = start_families()
    p_b = json.loads(Path(args.ba_json).read_text())
    p_b = (p_b[0] if isinstance(p_b, list) else p_b)["params"]
    lines = [x for x in (ROOT / "docs" / "crossval.md").read_text().splitlines() if x.startswith("Fitted values:")]
    p_a = json.loads(lines[0].split("`")[1])
    rows = [r for r in campaign_rows("A") if r["backend"] == "sglang"]
    variants = {"B": fitted(p_b, fams), "A": fitted(p_a, fams)} | {f"B d={d:g}": fitted(p_b, fams, prefill_queue_fraction=d)
                                                                   for d in args.shares}
    pred = {k: [p["ttft_ms"] if p else None for p in predict_serving(rows, cal_override=f)[0]] for k, f in variants.items()}
    keep = [i for i in range(len(rows)) if all(pred[k][i] for k in pred)]
    sub = {}
    if args.silicon:
        sample = {r["id"]: r for r in csv.DictReader(open(args.silicon))}
        for i in keep:
            s = sample[rows[i]["source"].split(":")[1]]
            m = re.search(r"measured=(\d{4}-\d\d-\d\d)", s["silicon_data_source"])
            sub[i] = f'{s["backend_version"] or "-"} {m.group(1) if m else "-"}'
    size = ((100, "<100"), (300, "100-300"), (1000, "300-1000"), (3000, "1-3 s"), (np.inf, ">3 s"))
    splits = {"all": lambda r: "all", "model": lambda r: r["model"].split("/")[1],
              "concurrency": lambda r: next(k for c, k in ((4, "1-4"), (32, "5-32"), (128, "33-128"), (np.inf, "129+"))
                                            if float(r["concurrency"]) <= c),
              "ISL": lambda r: r["isl"], "TP/EP/attention DP": lambda r: f'{r["tp"]}/{r["ep"]}/{r["attention_dp"]}',
              "measured TTFT": lambda r: next(k for c, k in size if float(r["ttft_ms"]) < c)}
    print(f"clean-sample SGLang rows priced: {len(keep)}; TTFT median APE (signed median), by fold's values: {', '.join(pred)}")
    for name, key in splits.items():
        print(f"== {name}")
        groups = defaultdict(list)
        for i in keep:
            groups[key(rows[i])].append(i)
        for g in sorted(groups):
            ix = groups[g]
            meas = [float(rows[i]["ttft_ms"]) for i in ix]
            print(f"  {g:18s} n={len(ix):3d} measured {np.median(meas):7.0f} ms | " + " | ".join(
                f"{k}: {cell([pred[k][i] for i in ix], meas)}" for k in pred))
    if sub:
        print("== sub-run (build, measured)")
        groups = defaultdict(list)
        for i in keep:
            groups[(rows[i]["model"].split("/")[1], rows[i]["gpu"], sub[i])].append(i)
        for g in sorted(groups):
            ix = groups[g]
            meas = [float(rows[i]["ttft_ms"]) for i in ix]
            print(f"  {' '.join(g):40s} n={len(ix):3d} measured {np.median(meas):7.0f} ms | " + " | ".join(
                f"{k}: {cell([pred[k][i] for i in ix], meas)}" for k in pred))


if __name__ == "__main__":
    main()
