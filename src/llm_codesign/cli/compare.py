"""`compare`: a few models x precisions x GPUs at one SLO, side by side on accuracy, throughput and interactivity."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import typer

from llm_codesign.cli.common import O_BACKEND, O_CAL, O_ISL, O_OSL, _console, _dump, _gpu, _model, _table, app
from llm_codesign.errors import InputError

MAX_COMBINATIONS = 48  # each combination is one whole deployment search


def compare_rows(model_refs: list[str], gpu_refs: list[str], weight_formats: list[str] | None, *, num_gpus: int, isl: int,
                 osl: int, backend: str = "trtllm", min_tps_user: float | None = None, max_ttft_ms: float | None = None,
                 calibration: str | None = None) -> list[dict]:
    """For each model x precision x GPU, the deployment with the most output tok/s/GPU that meets the SLO
    (None where none does), with its tok/s/user, TTFT, their intervals and the model's accuracy at that precision."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.accuracy_model import accuracy_of
    from llm_codesign.explore.search import SearchSpace, default_precisions, search
    from llm_codesign.measure.intervals import table_for
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.precision import Precision

    rows = []
    for mref in model_refs:
        m = _model(mref)
        for gref in gpu_refs:
            g = _gpu(gref)
            cal, table = calibration_for(g, calibration), table_for(calibration, gpu=g)
            if weight_formats:
                precs = [m.default_precision if w == m.default_precision.weight.name
                         else Precision.of(w, kv="fp8" if g.supports("fp8") else None) for w in weight_formats]
            else:
                precs = list(default_precisions(m, g))
            for p in precs:
                acc = accuracy_of(m, p)
                row = {"model": m.name, "gpu": g.id, "num_gpus": num_gpus, "precision": p.label(), "weight_dtype": p.weight.name,
                       "accuracy": acc, "best": None}
                try:
                    r = search(m, g, cal, SearchSpace(num_gpus, precisions=(p,)), isl=isl, osl=osl, engine=get_engine(backend),
                               min_tps_user=min_tps_user, max_ttft_ms=max_ttft_ms)
                except InputError as e:  # no valid plan for this model on these GPUs: say so in the row
                    row["why_none"] = str(e)
                    rows.append(row)
                    continue
                if r.points:  # the best point, with its metrics' intervals
                    top = replace(r, points=(max(r.points, key=lambda q: q.output_tok_s_per_gpu),)).banded(m, table=table)
                    best = top.points[0].to_dict()
                    row["best"] = {k: best[k] for k in ("output_tok_s_per_gpu", "tok_s_per_user", "ttft_ms", "tpot_ms", "deployment", "intervals")}
                else:
                    row["why_none"] = "no deployment meets the SLO"
                rows.append(row)
    return rows


def _lo_hi(b: dict) -> str:
    return f"{b['lo80']:.0f}-{b['hi80']:.0f}"


@app.command()
def compare(
    model: str = typer.Argument(..., help="Models, comma-separated."),
    gpu: str = typer.Option("h200", "--gpu", help="GPU ids, comma-separated."),
    gpus_: int = typer.Option(8, "--gpus", min=1, max=1 << 16, help="GPUs per deployment (replicas fill them)."),
    weight_dtype: Optional[str] = typer.Option(None, "--weight-dtype",
                                               help="Weight formats, comma-separated (default: the checkpoint's and what each GPU runs natively)."),
    isl: int = O_ISL, osl: int = O_OSL, backend: str = O_BACKEND,
    min_tps_user: Optional[float] = typer.Option(None, "--min-tps-user", help="SLO: minimum tokens/s per user."),
    max_ttft_ms: Optional[float] = typer.Option(None, "--max-ttft-ms", help="SLO: maximum TTFT in ms."),
    calibration: Optional[str] = O_CAL, as_json: bool = typer.Option(False, "--json"),
):
    """Models x precisions x GPUs at one SLO, side by side: accuracy, tok/s/GPU, tok/s/user."""
    from llm_codesign.spec.precision import get_dtype

    for name, v in (("min_tps_user", min_tps_user), ("max_ttft_ms", max_ttft_ms)):
        if v is not None and not (0 < v < float("inf")):
            raise InputError(name, v, "a positive finite number")
    models = [x.strip() for x in model.split(",") if x.strip()]
    gpus = [x.strip() for x in gpu.split(",") if x.strip()]
    formats = [get_dtype(x.strip(), "weight_dtype").name for x in weight_dtype.split(",") if x.strip()] if weight_dtype else None
    if not models or not gpus:
        raise InputError("model" if not models else "gpu", model if not models else gpu, "at least one name")
    n = len(models) * len(gpus) * (len(formats) if formats else 3)
    if n > MAX_COMBINATIONS:
        raise InputError("model", model, f"at most {MAX_COMBINATIONS} model x GPU x precision combinations ({n} asked)")
    rows = compare_rows(models, gpus, formats, num_gpus=gpus_, isl=isl, osl=osl, backend=backend, min_tps_user=min_tps_user,
                        max_ttft_ms=max_ttft_ms, calibration=calibration)
    if as_json:
        return _dump({"isl": isl, "osl": osl, "num_gpus": gpus_, "min_tps_user": min_tps_user, "max_ttft_ms": max_ttft_ms, "rows": rows})
    slo = ", ".join(x for x in (f">= {min_tps_user:g} tok/s/user" if min_tps_user else "",
                                f"TTFT <= {max_ttft_ms:g} ms" if max_ttft_ms else "") if x) or "none"
    t = _table(f"compare at ISL/OSL {isl}/{osl} on {gpus_} GPU{'' if gpus_ == 1 else 's'}, SLO {slo}",
               "model:t gpu:k W:t accuracy:t source:k tok/s/GPU:n tok/s/user:n TTFT:n plan:t",
               "accuracy: a published score (and the drop against the model's best precision), or the proxy's drop ± 1 sigma, "
               "or none. tok/s/GPU: the best deployment meeting the SLO, its 80% interval beneath; TTFT in ms.")
    for r in rows:
        a, b = r["accuracy"], r["best"]
        t.add_row(r["model"], r["gpu"], r["weight_dtype"], a["short"], a["source"],
                  *((f"{b['output_tok_s_per_gpu']:.0f}\n{_lo_hi(b['intervals']['output_tok_s_per_gpu'])}", f"{b['tok_s_per_user']:.1f}",
                     f"{b['ttft_ms']:.0f}", b["deployment"]["plan"])
                    if b else ("-", "-", "-", r.get("why_none", "-"))))
    _console().print(t)
