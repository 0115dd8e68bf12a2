"""Copy the H100 per-engine kernel tables into the package (data/measurements/kernels_hopper/).

Source: the project's validation data, shared/data/validation/kernels_hopper/ beside the repository
(aiconfigurator-core 0.12.0, H100 SXM; TensorRT-LLM, SGLang and vLLM collectors; its README gives the
provenance, condensed in data/measurements/SOURCES.md).
Every row and column is kept. Two changes, so that the tables read like the other bundled ones: a first
column `system` = h100_sxm (the source dropped its one-valued `device` column, NVIDIA H100 80GB HBM3), and
attention.csv.gz split by op_name into prefill_attention.csv.gz (context_attention) and
decode_attention.csv.gz (generation_attention), the prefill one without `step` (0 on every context row,
the column that tells a decode table's rows from a prefill one's); comm.csv.gz keeps its all-reduce rows (each engine's own
and NCCL's) and NCCL's other collectives, not the MoE all-to-all rows (DeepEP, moe_a2a: no op of the model is priced
against them), and drops the columns only those rows fill. Written with gzip level 9 and no timestamp, so a re-run is
byte for byte the same.

    python tools/bundle_kernels_hopper.py --src <shared>/data/validation/kernels_hopper
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "llm_codesign" / "data" / "measurements" / "kernels_hopper"
# output file <- (source file, op_names kept (None: every row), a column dropped)
FILES = {"gemm.csv.gz": ("gemm.csv.gz", None, None), "moe.csv.gz": ("moe.csv.gz", None, None),
         "prefill_attention.csv.gz": ("attention.csv.gz", ("context_attention",), "step"),
         "decode_attention.csv.gz": ("attention.csv.gz", ("generation_attention",), None),
         "comm.csv.gz": ("comm.csv.gz", ("all_reduce", "all_gather", "reduce_scatter", "alltoall"), None)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="the folder holding the source gemm.csv.gz, moe.csv.gz, attention.csv.gz and comm.csv.gz")
    src = Path(ap.parse_args().src)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (source, op, drop) in FILES.items():
        with gzip.open(src / source, "rt", newline="") as f:
            reader = csv.DictReader(f)
            rows = [r for r in reader if op is None or r["op_name"] in op]
            columns = ["system", *(c for c in reader.fieldnames if c != drop)]
        if name == "comm.csv.gz":  # the all-to-all rows' own columns, empty on every row kept
            columns = [c for c in columns if c == "system" or any(r[c] for r in rows)]
            rows = [{c: r[c] for c in columns[1:]} for r in rows]
        assert drop is None or {r.pop(drop) for r in rows} == {"0"}
        buf = io.StringIO()
        w = csv.DictWriter(buf, columns, lineterminator="\n")
        w.writeheader()
        w.writerows({"system": "h100_sxm", **r} for r in rows)
        with (OUT / name).open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as gz:
            gz.write(buf.getvalue().encode())
        print(f"{name}: {len(rows)} rows, {(OUT / name).stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
