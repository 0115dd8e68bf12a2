"""How far the bundled profile's predictions lie from measurement, pooled by engine and load: the validation
figures `llm-codesign serve`'s validation report and `disagg` show. An estimate's own error is its intervals
(measure.intervals), on one basis: the runs most like it.

`data/calibration/accuracy.toml` holds, per cell, the median and 90th-percentile absolute percentage
error, the signed median and the number of measured runs behind it:
- serving (TTFT, TPOT) by engine and concurrency band, from the clean serving sample the profile is fitted
  on (its two cross-validated held-out halves lie within 1.2 points of these figures, docs/accuracy.md);
- offline max throughput (output tok/s per GPU) by GPU family, from the TensorRT-LLM perf overview,
  held out of every fit;
- per model with at least MIN_MODEL_ROWS runs in that sample, its own TTFT and TPOT errors over all
  engines (DeepSeek-R1's first tokens, for one, come early);
- speculative decoding, from the published single runs (held out): the serving sample has none;
- disaggregated serving (TTFT, TPOT) over the shipped Dynamo runs priced with `disagg` (held out),
  which `disagg` quotes.
`benchmarks/validation_report.py --accuracy PATH` writes it; a test fails when it is out of date.
A custom calibration profile has its own error: `llm-codesign validate --calibration` measures it.
"""
from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.measure.stats import BAND_NAMES, concurrency_band, error_stats

SERVING_METRICS = ("ttft_ms", "tpot_ms")
OFFLINE_METRIC = "output_tok_s_per_gpu"
SPEC_METRIC = "output_tok_s_per_user"
# short metric labels for terminal tables and reports, narrow enough for an 80-column terminal
LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", OFFLINE_METRIC: "tok/s/GPU", SPEC_METRIC: "tok/s/user", "latency_ms": "latency"}
MIN_MODEL_ROWS = 20  # a model's own median from fewer runs says little


def _cell(pairs: list[tuple[float, float]]) -> dict | None:
    if not pairs:
        return None
    p, y = np.array(pairs, float).T
    st = error_stats(p, y)
    return {"median": round(st["median_ape"], 1), "p90": round(st["p90_ape"], 1),
            "signed": round(st["signed_median_pe"], 1), "n": st["n"]}


def _pairs(rows, preds, metric, keep) -> list[tuple[float, float]]:
    return [(p[metric], float(r[metric])) for r, p in zip(rows, preds, strict=True)
            if p and keep(r) and (r.get(metric) or "").strip() and float(r[metric]) > 0 and p.get(metric, 0) > 0]


def build(serving: tuple[list, list], offline: tuple[list, list], published: tuple[list, list],
          disagg: tuple[list, list] = ([], [])) -> dict:
    """The accuracy table from (rows, predictions) of the serving sample, the offline tables, the
    published runs and the disaggregated runs (validate.predict_serving's output for each)."""
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    rows, preds = serving
    table: dict = {"serving": {}, "offline": {}, "speculative": {}}
    table["serving_gpus"] = sorted({r["gpu"] for r, p in zip(rows, preds, strict=True) if p})
    for backend in sorted({r["backend"] for r in rows}):
        for band in BAND_NAMES:
            keep = lambda r, b=backend, c=band: r["backend"] == b and concurrency_band(r) == c  # noqa: E731
            cell = {m: _cell(_pairs(rows, preds, m, keep)) for m in SERVING_METRICS}
            if all(cell.values()):
                table["serving"].setdefault(backend, {})[band] = cell
    by_model: dict[str, list[int]] = {}
    for i, (r, p) in enumerate(zip(rows, preds, strict=True)):
        if p and (r.get("model") or "").strip():
            by_model.setdefault(get_model(r["model"]).name, []).append(i)
    table["models"] = {}
    for name, idx in sorted(by_model.items()):
        sub = [rows[i] for i in idx], [preds[i] for i in idx]
        cell = {m: _cell(_pairs(*sub, m, lambda r: True)) for m in SERVING_METRICS}
        if all(cell.values()) and min(c["n"] for c in cell.values()) >= MIN_MODEL_ROWS:
            table["models"][name] = cell
    rows, preds = offline
    fam_gpus: dict[str, set] = {}
    for r, p in zip(rows, preds, strict=True):
        if p:
            fam_gpus.setdefault(get_gpu(r["gpu"]).family, set()).add(r["gpu"])
    for fam in sorted(fam_gpus):
        cell = _cell(_pairs(rows, preds, OFFLINE_METRIC, lambda r, f=fam: r["gpu"] in fam_gpus[f]))
        if cell:
            table["offline"][fam] = {OFFLINE_METRIC: cell}
    rows, preds = published
    pairs = _pairs(rows, preds, SPEC_METRIC, lambda r: bool((r.get("spec_method") or "").strip()))
    if pairs:
        pe = [100 * (p / y - 1) for p, y in pairs]
        table["speculative"] = {SPEC_METRIC: {**_cell(pairs), "low": round(min(pe), 1), "high": round(max(pe), 1)}}
    cell = {m: _cell(_pairs(*disagg, m, lambda r: True)) for m in SERVING_METRICS}
    if all(cell.values()):
        table["disaggregated"] = cell
    return table


def _fmt(cell: dict) -> str:
    return "{" + ", ".join(f"{k} = {v}" for k, v in cell.items()) + "}"


def to_toml(table: dict, header: list[str]) -> str:
    """The table as TOML (the few shapes `build` makes), after `header` comment lines."""
    out = [f"# {h}" if h else "#" for h in header] + ["", f"serving_gpus = {table['serving_gpus']!r}".replace("'", '"'), ""]
    for backend, bands in table["serving"].items():
        for band, cell in bands.items():
            out += [f'[serving.{backend}."{band}"]'] + [f"{m} = {_fmt(v)}" for m, v in cell.items()] + [""]
    out += [] if table.get("models") else ["[models]", ""]
    for name, cell in table.get("models", {}).items():
        out += [f'[models."{name}"]'] + [f"{m} = {_fmt(v)}" for m, v in cell.items()] + [""]
    out += [] if table["offline"] else ["[offline]", ""]
    for fam, cell in table["offline"].items():
        out += [f"[offline.{fam}]"] + [f"{m} = {_fmt(v)}" for m, v in cell.items()] + [""]
    out += ["[speculative]"] + [f"{m} = {_fmt(v)}" for m, v in table["speculative"].items()] + [""]
    if table.get("disaggregated"):
        out += ["[disaggregated]"] + [f"{m} = {_fmt(v)}" for m, v in table["disaggregated"].items()] + [""]
    return "\n".join(out)


@lru_cache(maxsize=1)
def bundled() -> dict:
    """The shipped table (empty where the file is absent)."""
    f = resources.files("llm_codesign").joinpath("data/calibration/accuracy.toml")
    return tomllib.loads(f.read_text()) if f.is_file() else {}


def disagg_measured() -> str:
    """The bundled profile's error on the shipped disaggregated runs (the table's `disaggregated` cell), the sentence
    `disagg` prints under its table and the page under its own; "" where the table has none."""
    cell = bundled().get("disaggregated")
    if not cell:
        return ""
    t, d = cell["ttft_ms"], cell["tpot_ms"]
    early = ", first tokens early" if t["signed"] < 0 else ""
    return (f"Measured on the shipped disaggregated runs (data/measurements/serving_disagg_blackwell.csv, {t['n']} priced): "
            f"TPOT {d['median']:.1f}% median error, TTFT {t['median']:.1f}% (signed {t['signed']:+.0f}%{early}).")
