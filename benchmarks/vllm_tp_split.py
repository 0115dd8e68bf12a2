"""vLLM's first token against TP on the clean sample: each series' TTFT as a + b / TP, measured and priced.

Campaign A's vLLM rows (serving_measured_blackwell_clean.csv) are priced as the B -> A fold prices them (every serving
value documented: crossval_campaigns.start_families) or, with --bundled, on the bundled profile. For every series that ran
at three TP sizes or more (model, GPU, weights, ISL/OSL, requests; no EP) the median TTFT per TP is fitted as
a + b / TP (least squares), the measured and the priced series apart: `a` is the part of the first token that does not
shrink with the GPUs (host work, waits in fixed-cost steps, replicated elementwise work, the all-reduces), `b` the part that
divides over them (the per-GPU GEMMs and attention of the prefill and of the decode steps waited out). A third fit adds
c x [TP > 1]: a cost only the multi-GPU runs pay (vLLM's multiproc executor and its shared-memory broadcast, the
all-reduces, the logits gather). No parameter is fitted into the model; docs/modelling-notes.md#vtp-first-token.

    python benchmarks/vllm_tp_split.py              # the fold's pricing (documented values)
    python benchmarks/vllm_tp_split.py --bundled    # the bundled profile's
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_campaigns import campaign_rows, start_families  # noqa: E402

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.measure.validate import predict_serving  # noqa: E402

SERIES = ["model", "gpu", "w", "isl", "osl", "c"]


def priced(bundled: bool) -> pd.DataFrame:
    """Campaign A's vLLM rows that price, measured (m) and priced (p) TTFT in ms."""
    fams = start_families()
    cal = None if bundled else (lambda g: fams.get(g.family) or calibration_for(g))
    rows = [r for r in campaign_rows("A") if (r.get("backend") or "").strip().lower() == "vllm"]
    preds, _ = predict_serving(rows, cal_override=cal)
    out = [dict(model=r["model"].split("/")[-1], gpu=r["gpu"], w=r["weight_dtype"], tp=int(r["tp"]), ep=int(r.get("ep") or 1),
                isl=int(r["isl"]), osl=int(r["osl"]), c=float(r["concurrency"]), m=float(r["ttft_ms"]), p=p["ttft_ms"])
           for r, p in zip(rows, preds, strict=True) if "ttft_ms" in p]
    return pd.DataFrame(out)


def fits(d: pd.DataFrame) -> pd.DataFrame:
    """Per series with >= 3 TP sizes: (a, b) of a + b / TP for measured and priced, and c of a + b / TP + c [TP > 1]
    where TP 1 and three other sizes ran (else NaN)."""
    g = d[d.ep == 1].groupby([*SERIES, "tp"])[["m", "p"]].median().reset_index()
    out = []
    for key, s in g.groupby(SERIES):
        tp = s.tp.to_numpy(float)
        if len(tp) < 3:
            continue
        X = np.c_[np.ones_like(tp), 1.0 / tp]
        (am, bm), (ap, bp) = (np.linalg.lstsq(X, s[k].to_numpy(), rcond=None)[0] for k in ("m", "p"))
        row = dict(zip(SERIES, key, strict=True), tps=",".join(str(int(t)) for t in tp), a_m=am, a_p=ap, b_m=bm, b_p=bp,
                   resid_m=np.abs(X @ [am, bm] - s.m.to_numpy()).max(), c_m=np.nan, c_p=np.nan)
        if len(tp) >= 4 and 1 in tp:
            X3 = np.c_[X, (tp > 1).astype(float)]
            row["c_m"], row["c_p"] = (np.linalg.lstsq(X3, s[k].to_numpy(), rcond=None)[0][2] for k in ("m", "p"))
        out.append(row)
    o = pd.DataFrame(out)
    o["da"], o["b_ratio"] = o.a_m - o.a_p, o.b_m / o.b_p
    return o


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundled", action="store_true", help="price on the bundled profile, not the fold's documented values")
    args = ap.parse_args()
    d = priced(args.bundled)
    e = 100.0 * (d.p / d.m - 1.0)
    print(f"vLLM rows priced: {len(d)}; TTFT median APE {e.abs().median():.1f}%, signed {e.median():+.1f}%")
    print("signed TTFT by TP:", ", ".join(f"TP{t} {v:+.1f}%" for t, v in e.groupby(d.tp).median().items()))
    o = fits(d)
    pd.set_option("display.width", 200)
    print(o.assign(model=o.model.str[:14]).round(1).to_string())
    print(f"\n{len(o)} series: a measured - priced median {o.da.median():.1f} ms; b measured / priced median {o.b_ratio.median():.2f}; "
          f"fit's worst residual median {o.resid_m.median():.1f} ms")
    print(o.groupby("c").agg(da=("da", "median"), b_ratio=("b_ratio", "median"), n=("da", "size")).round(2).to_string())
    print(o.groupby("isl").agg(da=("da", "median"), b_ratio=("b_ratio", "median"), n=("da", "size")).round(2).to_string())
    c = o.dropna(subset=["c_m"])
    print(f"\nc x [TP > 1] over {len(c)} series with TP 1 and three more sizes: measured median {c.c_m.median():+.1f} ms "
          f"(quartiles {c.c_m.quantile(0.25):+.1f} / {c.c_m.quantile(0.75):+.1f}), priced {c.c_p.median():+.1f} ms "
          f"({c.c_p.quantile(0.25):+.1f} / {c.c_p.quantile(0.75):+.1f})")


if __name__ == "__main__":
    main()
