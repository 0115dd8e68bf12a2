"""Which fitted GEMM value carries the Hopper -> Blackwell (and Blackwell -> Hopper) kernel-fold error: each
family's GEMM values fitted as benchmarks/crossval_families.py fits them (4,000 rows a family, seed 0, fit_kind
rounds 6, from default.toml), then the held-out family priced with one value at a time replaced by the priced
family's own fit of it. A value whose swap closes most of the gap is the one that does not transfer.

    python benchmarks/crossval_families.py --kinds gemm      # the folds themselves
    python benchmarks/gemm_fold_attribution.py               # this breakdown (a few seconds)

Median APE (signed median) over the held-out family's rows, and by dtype (docs/modelling-notes.md#gemm-fold-attribution).
"""
from __future__ import annotations

import numpy as np
from crossval_families import family_rows

from llm_codesign.cost.calibration import documented
from llm_codesign.measure.calibrate import fit_kind
from llm_codesign.measure.kernel_tables import predict
from llm_codesign.measure.stats import error_stats

PARAMS = ("gemm_eff_bf16", "gemm_overhead_bf16_s", "gemm_k_half_bf16", "gemm_eff_fp8", "gemm_overhead_fp8_s", "gemm_k_half_fp8",
          "gemm_eff_fp8_block", "gemm_overhead_fp8_block_s", "gemm_k_half_fp8_block", "gemm_eff_fp4", "gemm_overhead_fp4_s",
          "gemm_k_half_fp4", "gemm_blend_p", "gemm_max_split_k", "bw_eff")


def fit(rows_by_family: dict, families, train_rows: int = 4000):
    rng, train = np.random.default_rng(0), []  # crossval_families.run's draw for its first table
    for f in families:
        rows = rows_by_family[f]
        pick = rng.choice(len(rows), size=min(train_rows, len(rows)), replace=False)
        train += [rows[i] for i in sorted(pick)]
    return fit_kind("gemm", train, documented(), "+".join(families), rounds=6)[0]


def line(label: str, cal, rows: list[dict]) -> str:
    y = np.array([float(r["latency_ms"]) for r in rows])
    p, dts = predict("gemm", rows, lambda g: cal)[0], np.array([r["gemm_dtype"] for r in rows])
    s = error_stats(p, y)
    by = " ".join(f"{d} {error_stats(p[dts == d], y[dts == d])['median_ape']:.1f} ({error_stats(p[dts == d], y[dts == d])['signed_median_pe']:+.1f})"
                  for d in sorted(set(dts)))
    return f"{label:34s} {s['median_ape']:5.1f} ({s['signed_median_pe']:+5.1f}) | {by}"


def main() -> None:
    rows = family_rows()["gemm"]
    cals = {f: fit(rows, [f]) for f in ("hopper", "blackwell")}
    for train, test in (("hopper", "blackwell"), ("blackwell", "hopper")):
        held, own = cals[train], cals[test]
        print(f"\n{train} -> {test}")
        print(line("as fitted", held, rows[test]))
        for p in PARAMS:
            if held.param(p) != own.param(p):
                print(line(f"{p} {held.param(p):.3g} -> {own.param(p):.3g}", held.with_param(p, own.param(p)), rows[test]))


if __name__ == "__main__":
    main()
