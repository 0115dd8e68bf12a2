"""The TensorRT-LLM build and measured date each TensorRT-LLM run of the aiconfigurator silicon sample recorded (its
`backend_version` column; `measured=` in silicon_data_source), and the date alone of its other engines' runs, for the rows
of data/measurements/serving_measured_blackwell.csv: data/measurements/serving_measured_blackwell.builds.csv (source, build,
measured). The sample's serving CSV here does not
carry them; measure.campaigns.trtllm_build reads this file (TensorRT-LLM's PDL default by build: campaigns.settings sets
pdl_fusion off before 1.2). Only TensorRT-LLM versions are kept as builds: a run in a Dynamo runtime image
(ai-dynamo/tensorrtllm-runtime) records Dynamo's version (0.8.1.post2, 0.5.1-rc0.pre3), and a string in no known release
format (measure.campaigns.parse_trtllm_version: gpt-oss-dev, 1.1.0-dev.2) is left blank and counted. Run by hand when the
sample changes; output is committed:

    python tools/silicon_builds.py SILICON_SAMPLE_CSV

(aiconfigurator@095f58a5 aic-core/src/aiconfigurator_core/systems/silicon_sample.csv; `git show` it from a mirror.)
"""
from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from llm_codesign.measure.campaigns import parse_trtllm_version  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "src" / "llm_codesign" / "data" / "measurements"
PREFIX = "aiconfigurator-core-0.12.0-silicon-sample:"


def trtllm_record(row: dict) -> tuple[str, str, str | None]:
    """(build, measured date, the rejected version string or None) of one sample row: the build only where it is a
    TensorRT-LLM release (not a Dynamo runtime image's version, a parse_trtllm_version format)."""
    src = row.get("silicon_data_source") or ""
    m = re.search(r"measured=(\d{4}-\d{2}-\d{2})", src)
    measured = m.group(1) if m else ""
    version = (row.get("backend_version") or "").strip()
    if not version:
        return "", measured, None
    # a Dynamo runtime image's tag or the source's dynamo_version is Dynamo's version, not the engine's (the rows that
    # name both, `tensorrtllm-runtime:0.9.0; dynamo_version=0.9.0` with backend_version 1.3.0rc1, record the engine's)
    dynamo = set(re.findall(r"tensorrtllm-runtime:(\S+?)(?:;|$)", src)) | set(re.findall(r"dynamo_version=([^;\s]+)", src))
    if version in dynamo or parse_trtllm_version(version) is None:
        return "", measured, version
    return version, measured, None


def records(sample_rows, sources) -> tuple[list[tuple[str, str, str]], Counter]:
    """The builds CSV's rows (source, build, measured) for the shipped `sources` the sample has: a TensorRT-LLM run's build
    and date, another engine's date alone (campaigns.toml's `min_measured`: the aiconfigurator workflow's SGLang and vLLM
    CUDA graphs from the date its generator began writing them), and the version strings rejected (not TensorRT-LLM's),
    counted."""
    by_id = {r["id"]: trtllm_record(r) if r["backend"] == "trtllm" else ("", trtllm_record(r)[1], None) for r in sample_rows}
    rows, rejected = [], Counter()
    for s in sources:
        rec = by_id.get(s.removeprefix(PREFIX))
        if rec is not None and rec[2]:
            rejected[rec[2]] += 1
        if rec is not None and (rec[0] or rec[1]):
            rows.append((s, rec[0], rec[1]))
    return rows, rejected


def main(sample: Path) -> None:
    with sample.open(newline="") as f:
        sample_rows = list(csv.DictReader(f))
    with (OUT / "serving_measured_blackwell.csv").open(newline="") as f:
        sources = [r["source"] for r in csv.DictReader(f)]
    rows, rejected = records(sample_rows, sources)
    with (OUT / "serving_measured_blackwell.builds.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("source", "build", "measured"))
        w.writerows(rows)
    print(len(rows), "of", len(sources), "rows recorded;", sum(1 for r in rows if r[1]), "name their TensorRT-LLM build;",
          "not TensorRT-LLM versions:", dict(rejected) or "none")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        sys.exit("usage: python tools/silicon_builds.py SILICON_SAMPLE_CSV")
    main(Path(sys.argv[1]))
