"""What SGLang's per-request TTFT cost (`ttft_overhead_s`, paid (q + 1) / 2 times) stands for in the serving runs.

Each campaign's SGLang rows are priced on the bundled profile with SGLang's per-request cost set to 0; the TTFT they
then miss (measured less predicted) is fitted one candidate form at a time, on each campaign alone (a least-squares fit
of the relative error re-weighted towards its median), and each campaign's fitted coefficient is priced on the other:

- flat: one cost per request (a latency)
- serial: (q + 1) / 2 of it (the q requests arriving together served one at a time: the bundled form)
- tokens, serial tokens: per 1,000 prompt tokens, alone or (q + 1) / 2 times (tokenising)
- decode steps: a number of the run's decode steps (the first token a few iterations late)

With --ba-json (crossval_campaigns.py --direction B-A --json), the clean sample's SGLang rows are also priced at the
InferenceX fit's values under several re-bunching shares (`prefill_queue_fraction`, which InferenceX's closed loop
cannot inform): what InferenceX -> clean misses. docs/modelling-notes.md#sglang-request-cost holds the figures.

    python benchmarks/sglang_request_cost.py --ba-json b-a.json
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_campaigns import campaign_rows, start_families  # noqa: E402

from llm_codesign.cost.calibration import BACKEND_KEYED, calibration_for  # noqa: E402
from llm_codesign.measure.validate import predict_serving  # noqa: E402

FORMS = {"flat": ("one",), "serial": ("serial",), "tokens": ("kilotokens",), "serial tokens": ("serial_kilotokens",),
         "flat + tokens": ("one", "kilotokens"), "decode steps": ("step_ms",)}


def _with(cal, **per_engine):
    """`cal` with SGLang's value of each per-engine field given."""
    return replace(cal, **{k: tuple(sorted((dict(getattr(cal, k)) | {"sglang": v}).items())) for k, v in per_engine.items()})


def _priced(rows: list[dict], cal_of) -> list[tuple[dict, dict]]:
    preds, _ = predict_serving(rows, cal_override=cal_of)
    return [(r, p) for r, p in zip(rows, preds, strict=True) if p]


def gaps(campaign: str) -> list[dict]:
    """A campaign's SGLang rows at SGLang's per-request cost 0 and 1 s (which gives q): measured, predicted, q, features."""
    rows = [r for r in campaign_rows(campaign) if r["backend"] == "sglang"]
    at0 = _priced(rows, lambda g: _with(calibration_for(g), ttft_overhead_s=0.0))
    at1 = dict((id(r), p) for r, p in _priced(rows, lambda g: _with(calibration_for(g), ttft_overhead_s=1.0)))
    out = []
    for r, p in at0:
        q = 2.0 * (at1[id(r)]["ttft_ms"] - p["ttft_ms"]) / 1e3 - 1.0  # the (q + 1) / 2 the 1 s cost was paid
        kt = float(r["isl"]) / 1e3
        out.append({"measured": float(r["ttft_ms"]), "predicted": p["ttft_ms"],
                    "one": 1.0, "serial": (q + 1.0) / 2.0, "kilotokens": kt, "serial_kilotokens": (q + 1.0) / 2.0 * kt,
                    "step_ms": p["tpot_ms"]})
    return out


def fit(rows: list[dict], names: tuple) -> np.ndarray:
    """Coefficients (ms per unit of each feature) that bring the predictions nearest the measured, relatively."""
    x = np.array([[r[n] for n in names] for r in rows])
    y = np.array([r["measured"] for r in rows])
    p0 = np.array([r["predicted"] for r in rows])
    w = 1.0 / y
    b = np.linalg.lstsq(x * w[:, None], (y - p0) * w, rcond=None)[0]
    for _ in range(40):  # re-weighted towards the median relative error
        ww = w / np.sqrt(np.abs((p0 + x @ b) / y - 1.0) + 1e-3)
        b = np.linalg.lstsq(x * ww[:, None], (y - p0) * ww, rcond=None)[0]
    return b


def errors(rows: list[dict], names: tuple, b) -> str:
    x = np.array([[r[n] for n in names] for r in rows])
    e = (np.array([r["predicted"] for r in rows]) + x @ b) / np.array([r["measured"] for r in rows]) - 1.0
    return f"{np.median(np.abs(e)) * 100:5.1f}% ({np.median(e) * 100:+5.1f})"


def share_scan(ba_json: str, shares) -> None:
    """The clean sample's SGLang TTFT at the InferenceX fit's serving values under each re-bunching share."""
    params = json.loads(Path(ba_json).read_text())
    params = (params[0] if isinstance(params, list) else params)["params"]
    fams = start_families()

    def fitted(cal):
        kw = {k: (tuple(sorted((dict(getattr(cal, k)) | v).items())) if k in BACKEND_KEYED else v)
              for k, v in params.items() if v is not None and hasattr(cal, k)}
        return replace(cal, **kw)

    rows = [r for r in campaign_rows("A") if r["backend"] == "sglang"]
    for share in shares:
        priced = _priced(rows, lambda g, s=share: _with(fitted(fams[g.family]), prefill_queue_fraction=s))
        e = np.array([p["ttft_ms"] / float(r["ttft_ms"]) - 1.0 for r, p in priced])
        print(f"  share {share:.2f}: clean-sample SGLang TTFT {np.median(np.abs(e)) * 100:.1f}% ({np.median(e) * 100:+.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ba-json", help="crossval_campaigns.py --direction B-A --json output: also scan the re-bunching share")
    ap.add_argument("--shares", type=float, nargs="+", default=[0.0, 0.1, 0.15, 0.22, 0.3, 0.5])
    args = ap.parse_args()
    a, b = gaps("A"), gaps("B")
    print(f"SGLang rows: clean sample {len(a)}, InferenceX {len(b)}; at no per-request cost: clean {errors(a, ('one',), [0.0])}, "
          f"InferenceX {errors(b, ('one',), [0.0])}")
    print("form: coefficient (ms) fitted on the clean sample / on InferenceX | each in its own fit | each priced on the other")
    for form, names in FORMS.items():
        ca, cb = fit(a, names), fit(b, names)
        print(f"  {form:13s} {np.round(ca, 2)} / {np.round(cb, 2)} | clean {errors(a, names, ca)}, InferenceX {errors(b, names, cb)} | "
              f"InferenceX -> clean {errors(a, names, cb)}, clean -> InferenceX {errors(b, names, ca)}")
    if args.ba_json:
        share_scan(args.ba_json, args.shares)


if __name__ == "__main__":
    main()
