"""How long `llm-codesign calibrate` takes: a kernel fit on 10^6 GEMM rows, and the serving fit on the
bundled 7-row published_runs.csv.

The kernel rows are synthetic, in the bundled table's format (data/measurements/kernels/gemm.csv.gz:
system, trtllm_version, gemm_dtype, m, n, k, latency_ms): bundled rows drawn at random with replacement
(seed 0), each latency scattered by a log-normal factor (sigma 0.1) so that no two rows repeat. They
are written gzipped to a temporary directory and fitted as the command fits them (read_csv, then
measure.calibrate.fit_kernels); the serving fit is measure.calibrate.fit_serving from the bundled
profile. Each phase is timed on the wall clock and in CPU seconds (the machine may be shared).

    nice python benchmarks/bench_calibrate.py                  # 10^6 GEMM rows and the 7 serving rows
    nice python benchmarks/bench_calibrate.py --rows 100000    # a smaller kernel table
    nice python benchmarks/bench_calibrate.py --rows 0         # the serving fit alone
"""
from __future__ import annotations

import argparse
import csv
import gzip
import tempfile
import time
from pathlib import Path

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.measure.calibrate import fit_kernels, fit_serving
from llm_codesign.measure.kernel_tables import bundled_path, read_csv
from llm_codesign.measure.validate import read_rows
from llm_codesign.spec.hardware import catalog


def synthetic_gemm(path: Path, n: int, seed: int = 0) -> None:
    """`n` GEMM rows in the bundled table's columns: bundled rows resampled, latencies scattered."""
    _, rows = read_csv(bundled_path("gemm"))
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(rows), n)
    scatter = np.exp(rng.normal(0.0, 0.1, n))
    cols = list(rows[0])
    with gzip.open(path, "wt", newline="", compresslevel=1) as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i, s in zip(pick, scatter, strict=True):
            r = rows[i]
            w.writerow([f"{float(r[c]) * s:.6g}" if c == "latency_ms" else r[c] for c in cols])


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def kernel_fit(n: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "gemm.csv.gz"
        _, w, c = timed(lambda: synthetic_gemm(path, n))
        print(f"wrote {n:,} synthetic GEMM rows in {w:.1f} s")
        (kind, rows), w_read, c_read = timed(lambda: read_csv(path))
        print(f"read_csv: {w_read:.1f} s wall, {c_read:.1f} s CPU")
        trials = [0]
        (fams, report), w_fit, c_fit = timed(lambda: fit_kernels({kind: rows}, progress=lambda done, total: trials.__setitem__(0, total)))
        print(f"fit_kernels: {w_fit:.1f} s wall, {c_fit:.1f} s CPU ({len(report)} families, {trials[0]} calibrations priced, "
              "each on its family's rows)")
        for r in report:
            print(f"  {r['family']:10s} {r['rows']:8,d} rows  median APE {r['median_ape']:.1f}% (start {r['start_median_ape']:.1f}%)")
        print(f"calibrate --kernels on {n:,} rows: {w_read + w_fit:.1f} s wall, {c_read + c_fit:.1f} s CPU")


def serving_fit() -> None:
    rows = read_rows(bundled_path("gemm").parent.parent / "published_runs.csv")
    fams = {g.family: calibration_for(g) for g in catalog().values()}
    rep: dict = {}
    _, w, c = timed(lambda: fit_serving(rows, fams, report=rep))
    print(f"calibrate --serving published_runs.csv ({len(rows)} rows): {w:.1f} s wall, {c:.1f} s CPU; "
          f"error {rep['median_ape']:.2f}% (start {rep['start_median_ape']:.2f}%), loss {rep['loss']:.10g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="synthetic GEMM rows to fit (0: none)")
    ap.add_argument("--no-serving", action="store_true", help="skip the serving fit")
    a = ap.parse_args()
    if a.rows:
        kernel_fit(a.rows)
    if not a.no_serving:
        serving_fit()


if __name__ == "__main__":
    main()
