"""H100's MLA generation-kernel rows priced as the model prices that kernel: the decode core and its RoPE pass
(`mla_rope`), DeepSeek-R1's absorbed MLA at each row's heads (TP = 128 / heads), batch and cached keys.

    python benchmarks/mla_decode_hopper.py VALIDATION_DIR

VALIDATION_DIR: the kernel measurements as published (kernels_hopper/mla.csv.gz, aiconfigurator 0.12.0's H100 tables,
which the package does not ship). Rows: TensorRT-LLM 1.3.0rc20's generation_mla_perf (FlashMLA on SM90) and SGLang
0.5.14's (`flash_attention`: its fa3 backend), BF16 and FP8 caches; each engine priced with its own kernel factors.
Prints the median absolute and signed error per engine and cache dtype, per batch band at 128 heads, per head count.
"""
from __future__ import annotations

import csv
import gzip
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

BANDS = ((1, 8, "1-8"), (16, 64, "16-64"), (128, 128, "128"), (256, 1024, "256+"))


def priced(rows):
    """(engine, cache dtype, heads, batch, error) of each row: the model's core_decode + mla_rope of layer 0 against it."""
    model, gpu = get_model("deepseek-r1"), get_gpu("h100")
    groups = defaultdict(list)
    for r in rows:
        groups[r["framework"], r["kv_cache_dtype"], int(r["num_heads"])].append(r)
    out = []
    for (fw, kv, heads), g in sorted(groups.items()):
        engine = get_engine(fw)
        prec = Precision.of("fp8_block", kv="fp8" if kv == "fp8" else "bf16")
        seqs = np.array([float(r["batch_size"]) for r in g])
        ops = forward_ops(model, gpu, engine.costs(calibration_for(gpu)).cal, prec, Plan.parse(f"tp={128 // heads}", model, "decode"),
                          b=Batch(dec_seqs=seqs, dec_ctx=np.array([float(r["step"]) for r in g])), engine=engine)
        t = sum(np.broadcast_to(np.asarray(o.time, float), seqs.shape) for o in ops
                if o.name.startswith("layer0/") and (o.role == "core_decode" or o.name.endswith("mla_rope")))
        out += [(fw, kv, heads, b, t_i * 1e3 / float(r["latency_ms"]) - 1) for r, b, t_i in zip(g, seqs, t, strict=True)]
    return out


def _line(label, errs):
    e = np.array(errs) * 100
    return f"{label:<34} {len(e):>5} {np.median(np.abs(e)):>8.1f} {np.median(e):>+8.1f}"


def main(shared: Path):
    with gzip.open(shared / "kernels_hopper" / "mla.csv.gz", "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["op_name"] == "mla_generation" and float(r["step"]) > 0]
    res = priced(rows)
    print(f"{'H100 MLA generation kernel':<34} {'rows':>5} {'APE %':>8} {'signed':>8}")
    for key in sorted({(fw, kv) for fw, kv, *_ in res}):
        print(_line(f"{key[0]} {key[1]} KV", [e for fw, kv, _, _, e in res if (fw, kv) == key]))
        for lo, hi, name in BANDS:
            print(_line(f"  128 heads, {name} sequences", [e for fw, kv, h, b, e in res if (fw, kv) == key and h == 128 and lo <= b <= hi]))
        for h in sorted({h for _, _, h, _, _ in res}):
            print(_line(f"  {h} heads", [e for fw, kv, hh, _, e in res if (fw, kv) == key and hh == h]))


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "kernels_hopper" / "mla.csv.gz").is_file():
        sys.exit("usage: python benchmarks/mla_decode_hopper.py VALIDATION_DIR (a directory holding kernels_hopper/mla.csv.gz)")
    main(Path(sys.argv[1]))
