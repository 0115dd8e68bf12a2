"""The engine build each run of the aiconfigurator silicon sample recorded (its `backend_version` column), TensorRT-LLM's, for the rows of
data/measurements/serving_measured_blackwell.csv: data/measurements/serving_measured_blackwell.builds.csv (source, build).
The sample's serving CSV here does not carry the column; campaigns.build reads this file (TensorRT-LLM's PDL default by
build: measure.campaigns.pdl_off). Run by hand when the sample changes; output is committed:

    python tools/silicon_builds.py SILICON_SAMPLE_CSV

(aiconfigurator@095f58a5 aic-core/src/aiconfigurator_core/systems/silicon_sample.csv; `git show` it from a mirror.)
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements"
PREFIX = "aiconfigurator-core-0.12.0-silicon-sample:"


def main(sample: Path) -> None:
    # TensorRT-LLM's runs only: the one engine whose build the model reads from here (its PDL default)
    builds = {r["id"]: r["backend_version"].strip() for r in csv.DictReader(sample.open(newline="")) if r["backend"] == "trtllm"}
    with (OUT / "serving_measured_blackwell.csv").open(newline="") as f:
        sources = [r["source"] for r in csv.DictReader(f)]
    rows = [(s, builds[s.removeprefix(PREFIX)]) for s in sources if builds.get(s.removeprefix(PREFIX))]
    with (OUT / "serving_measured_blackwell.builds.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("source", "build"))
        w.writerows(rows)
    print(len(rows), "of", len(sources), "rows name their build")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        sys.exit("usage: python tools/silicon_builds.py SILICON_SAMPLE_CSV")
    main(Path(sys.argv[1]))
