"""What an engine's per-request TTFT cost (`ttft_overhead_s`) can stand for in the serving runs: paid on top of the
wait for the engine's next step (additive) or overlapping its phase part (the front end works while the engine runs
the rest of the running step, serve.aggregated.front_end_wait).

Each campaign's rows of one engine are priced on the bundled profile with that engine's request cost at 0 (both forms
agree there) and again with its wait steps at 0 too (the difference: the wait, t_wait's ttft_wait_steps part); then a
request cost c per request, paid (q + 1) / 2 times, is added either way, and per 1,000 prompt tokens (tokenising) likewise.
(q + 1) / 2 is read as the slope of TTFT between costs of 1 and 2 s (beyond any slack, so the same for an engine whose cost
overlaps the wait), and the slack (the running step's rest, EngineCosts.phase_steps) as what the 1 s cost does not add:

- additive: TTFT(0) + c (q + 1) / 2
- overlapped: TTFT(0) + max(c (q + 1) / 2 - slack, 0)

The table gives TTFT median APE (signed median) over the rows and over those at 1-4 requests, and the TTFT by
concurrency band at the bundled value. docs/modelling-notes.md#request-overhead-overlap holds the figures.

    python benchmarks/request_overhead.py --rows A:trtllm A:vllm B:trtllm
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crossval_campaigns import CAMPAIGNS, campaign_rows  # noqa: E402

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.errors import InputError  # noqa: E402
from llm_codesign.measure.validate import predict_serving  # noqa: E402
from llm_codesign.spec.engines import get_engine  # noqa: E402

BANDS = ((1, 4), (5, 32), (33, 128), (129, np.inf))


def _with(cal, engine: str, **values):
    """`cal` with `engine`'s value of each per-engine field given."""
    return replace(cal, **{k: tuple(sorted((dict(getattr(cal, k)) | {engine: v}).items())) for k, v in values.items()})


def _ttft(rows: list[dict], engine: str, **values) -> np.ndarray:
    """Each row's predicted TTFT (ms) at `engine`'s given values (none: the bundled profile); NaN where not priced."""
    cal_of = (lambda g: _with(calibration_for(g), engine, **values)) if values else None
    preds, _ = predict_serving(rows, cal_override=cal_of)
    return np.array([p["ttft_ms"] if p else np.nan for p in preds])


def parts(campaign: str, engine: str) -> dict:
    """A campaign's rows of `engine`: measured, bundled, at no request cost, its wait, the wait's phase part (slack, ms),
    (q + 1) / 2, kilotokens, concurrency."""
    rows = [r for r in campaign_rows(campaign) if r["backend"] == engine]
    at0, at1 = _ttft(rows, engine, ttft_overhead_s=0.0), _ttft(rows, engine, ttft_overhead_s=1.0)
    # (q + 1) / 2: the slope past the slack (a slack under 1 s is covered at 1 s), whether the engine's cost overlaps or not
    serial = (_ttft(rows, engine, ttft_overhead_s=2.0) - at1) / 1e3
    out = {"measured": np.array([float(r["ttft_ms"]) for r in rows]), "bundled": _ttft(rows, engine), "at0": at0,
           "wait": at0 - _ttft(rows, engine, ttft_overhead_s=0.0, ttft_wait_steps=0.0),
           "slack": at0 + serial * 1e3 - at1, "serial": serial,
           "kt": np.array([float(r["isl"]) / 1e3 for r in rows]), "conc": np.array([float(r["concurrency"]) for r in rows])}
    ok = np.isfinite(out["at0"]) & np.isfinite(out["bundled"])
    return {k: v[ok] for k, v in out.items()}


def err(pred, measured, sel=None) -> str:
    e = pred / measured - 1.0
    e = e if sel is None else e[sel]
    return f"{np.median(np.abs(e)) * 100:5.1f}% ({np.median(e) * 100:+5.1f})" if e.size else "  -"


def report(campaign: str, engine: str, costs_ms, per_kt_ms) -> None:
    p = parts(campaign, engine)
    m, low = p["measured"], p["conc"] <= 4
    print(f"{campaign} {engine}: {m.size} rows, wait median {np.median(p['wait']):.1f} ms; bundled {err(p['bundled'], m)}, "
          + ", ".join(f"{lo}-{hi if np.isfinite(hi) else ''} requests {err(p['bundled'], m, (p['conc'] >= lo) & (p['conc'] <= hi))}"
                      for lo, hi in BANDS))
    cost = [(f"{c:g} ms", c * p["serial"]) for c in costs_ms] + [(f"{c:g} ms/1k tokens", c * p["kt"] * p["serial"]) for c in per_kt_ms]
    for name, front in cost:
        add, over = p["at0"] + front, p["at0"] + np.maximum(front - p["slack"], 0.0)
        print(f"  {name:16s} additive {err(add, m)}, 1-4 requests {err(add, m, low)} | overlapped {err(over, m)}, 1-4 {err(over, m, low)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", default=["A:trtllm", "A:vllm", "B:trtllm"], help="CAMPAIGN:ENGINE pairs")
    ap.add_argument("--costs", type=float, nargs="+", default=[0.0, 0.3, 1.0, 3.0, 10.0, 20.0], help="request costs (ms)")
    ap.add_argument("--per-kt", type=float, nargs="+", default=[1.0, 2.2], help="request costs per 1,000 prompt tokens (ms)")
    args = ap.parse_args()
    pairs = []
    for pair in args.rows:
        campaign, _, engine = pair.partition(":")
        if not engine or campaign not in CAMPAIGNS or len(campaign) != 1:
            print(f"--rows: {pair!r} is not valid; CAMPAIGN:ENGINE with CAMPAIGN one of {', '.join(k for k in CAMPAIGNS if len(k) == 1)}",
                  file=sys.stderr)
            sys.exit(2)
        try:
            pairs.append((campaign, get_engine(engine).name))
        except InputError as e:
            print(f"--rows: {pair!r}: {e}", file=sys.stderr)
            sys.exit(2)
    for campaign, engine in pairs:
        report(campaign, engine, args.costs, args.per_kt)


if __name__ == "__main__":
    main()
