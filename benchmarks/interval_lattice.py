"""The intervals' slice lattice against the chain before it (issue 40, docs/modelling-notes.md#interval-lattice).

Run: python benchmarks/interval_lattice.py   (no GPU, about a minute on 2 cores)
One residual computation (interval_folds.residual_sets), then interval_folds.section with main 3829fda's HIERARCHY (an
engine with no slice falls to the mode's runs) and with the shipped lattice (its family's runs across engines first):
per variant, the fold x metric cells meeting both targets (campaign/family, of 20; the others, of 66), the median 80%
width over the prediction and the three serving campaigns' TTFT and TPOT inside the 80% / 95% interval in sample.
"""
from __future__ import annotations

import statistics
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import interval_folds as F  # noqa: E402

from llm_codesign.measure import intervals as iv  # noqa: E402

LATTICE = iv.HIERARCHY
CHAIN = tuple(lv for lv in LATTICE if "engine" in lv) + (("mode",),)  # 3829fda's


def cells(lines: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """The two fold tables' rows (campaign/family, then the others) of a section's markdown."""
    out, part = ([], []), -1
    for line in lines:
        part += line.startswith("### ")
        if line.startswith("| ") and not line.startswith("| fold") and line.count("|") == 10 and part in (0, 1):
            out[part].append([x.strip() for x in line.split("|")[1:-1]])
    return out


if __name__ == "__main__":
    sets = F.residual_sets()
    for name, h in (("chain (3829fda)", CHAIN), ("lattice", LATTICE)):
        iv.HIERARCHY = h
        lines, _, table = F.section(sets)
        shipped = tomllib.loads(iv.to_toml(table, []))
        recs = [(c, {m: r for m, r in res.items() if m in ("ttft_ms", "tpot_ms")}) for k in F.SERVING for c, res in sets[k]]
        s = iv.scores(recs, shipped)
        n = sum(len(d["inside80"]) for d in s.values())
        t20, t66 = cells(lines)
        print(f"{name}: both {sum(r[8] == 'both' for r in t20)} of {len(t20)}, {sum(r[8] == 'both' for r in t66)} of {len(t66)}; "
              f"median 80% width {statistics.median(float(r[5]) for r in t20):.3f} / {statistics.median(float(r[5]) for r in t20 + t66):.3f}; "
              f"in sample {100 * sum(d['inside80'].sum() for d in s.values()) / n:.1f} / {100 * sum(d['inside95'].sum() for d in s.values()) / n:.1f}%")
