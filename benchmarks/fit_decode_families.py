"""Decode attention re-fitted per GPU family on the bundled kernel table, as `calibrate` fits it (fit_kind from the
bundled profile on one family's rows of data/measurements/kernels/decode_attention.csv.gz): each family's in-sample
error at its bundled values and after the re-fit, and the values that moved.

    python benchmarks/fit_decode_families.py                 # every family in the table
    python benchmarks/fit_decode_families.py --family hopper

It writes nothing: the bundled values are data/calibration/fitted.toml's (docs/modelling-notes.md says which fit
wrote them); a re-fit that lands within its search's resolution of them leaves them as they are.
"""
from __future__ import annotations

import argparse

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.measure.calibrate import PARAMS, fit_kind
from llm_codesign.measure.kernel_tables import predict, read_csv
from llm_codesign.measure.stats import error_stats
from llm_codesign.spec.hardware import get_gpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    rows: dict[str, list[dict]] = {}
    for r in read_csv("decode_attention")[1]:
        rows.setdefault(get_gpu(r["system"]).family, []).append(r)
    ap.add_argument("--family", action="append", choices=sorted(rows), help="a GPU family to fit (default: each in the table)")
    args = ap.parse_args()
    for fam in args.family or sorted(rows):
        part = rows[fam]
        gpu = get_gpu(part[0]["system"])
        base = calibration_for(gpu)
        y = np.array([float(r["latency_ms"]) for r in part])
        before = error_stats(predict("decode_attention", part, lambda g, c=base: c)[0], y)
        cal, rep = fit_kind("decode_attention", part, base, fam)
        print(f"{fam} ({len(part)} rows): median / p90 APE {before['median_ape']:.2f} / {before['p90_ape']:.2f} bundled -> "
              f"{rep['median_ape']:.2f} / {rep['p90_ape']:.2f} re-fitted; at bounds: {rep['at_bounds'] or 'none'}")
        for p in PARAMS["decode_attention"]:
            a, b = base.param(p), cal.param(p)
            print(f"  {p} = {a:.6g} -> {b:.6g}" + ("" if abs(b - a) <= 1e-3 * abs(a) else "  (moved)"))


if __name__ == "__main__":
    main()
