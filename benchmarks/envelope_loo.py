"""Leave-one-out check of the dense trunk envelope (explore/envelope.py, data/accuracy/envelope.toml): each bundled dense
trunk (a row without `trunk` and without experts) is dropped, the dense envelope is drawn at its own total parameters from
the rest, and its aspect ratio and depth are judged there: inside the published range, inside only by the margin, or out.
`--without NAME ...` drops rows from the sample first (the envelope as it was before they were bundled).

    PYTHONPATH=src python benchmarks/envelope_loo.py [--without deepseek-llm-67b qwen2-72b] [--min 20e9 --max 250e9]
"""
from __future__ import annotations

import argparse

from llm_codesign.explore import envelope as E


def loo(without: tuple[str, ...], lo: float, hi: float) -> list[dict]:
    orig = E.data
    full = orig()
    rows = [r for r in full["model"] if r["name"] not in without]
    out = []
    try:
        for r in rows:
            if "trunk" in r or r.get("experts") or not lo <= r["total_params"] <= hi:
                continue
            E.data = lambda r=r: {**full, "model": [x for x in rows if x["name"] != r["name"]]}  # noqa: E731
            E._bounds.cache_clear()
            env = E.envelope_at(r["total_params"], dense=True)
            f = E.features(r)
            res = {"name": r["name"], "params_b": r["total_params"] / 1e9, "trunks": [n for n in env.models if n in
                   {x["name"] for x in rows if "trunk" not in x and not x.get("experts")}]}
            for var in ("aspect_ratio", "layers"):
                b, x = env.bounds[var], f[var]
                res[var] = (x, b.lo_value, b.hi_value, b.lo, b.hi,
                            "inside" if b.lo_value <= x <= b.hi_value else "margin" if b.lo <= x <= b.hi else "OUT")
            out.append(res)
    finally:
        E.data = orig  # the module's own reader back, and no bounds cached from a reduced sample
        E._bounds.cache_clear()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--without", nargs="*", default=[])
    ap.add_argument("--min", type=float, default=20e9)
    ap.add_argument("--max", type=float, default=250e9)
    a = ap.parse_args(argv)
    res = loo(tuple(a.without), a.min, a.max)
    print(f"dense trunks {a.min / 1e9:g}-{a.max / 1e9:g}B, each held out" + (f" (sample without {', '.join(a.without)})" if a.without else ""))
    for r in res:
        asp, lay = r["aspect_ratio"], r["layers"]
        print(f"  {r['name']:<18} {r['params_b']:6.1f}B  aspect {asp[0]:6.1f} in published {asp[1]:.1f}-{asp[2]:.1f} "
              f"(limits {asp[3]:.1f}-{asp[4]:.1f}): {asp[5]:<6}  layers {lay[0]:4.0f} in {lay[1]:.0f}-{lay[2]:.0f} "
              f"({lay[3]:.2f}-{lay[4]:.2f}): {lay[5]:<6}  trunks {', '.join(r['trunks'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
