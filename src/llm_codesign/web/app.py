"""The local web page's server: a FastAPI app over the public API (`llm_codesign.api`).

The JSON API exists for the page (static/index.html, static/app.js) and nothing else; every response
is what the CLI's `--json` prints for the same inputs, computed by the same functions. Bad input is a
422 whose `error` is one line naming the field (pydantic's check, or the core's InputError).
FastAPI, uvicorn and plotly are the optional extra `serve`; plotly.js is served from the installed
plotly package, so the page needs no network.
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from llm_codesign.errors import InputError
from llm_codesign.spec.engines import engine_names

STATIC = resources.files("llm_codesign.web") / "static"
# at most one NVL72 rack: any count up to 72 has at most 12 divisors, so a search visits < 0.4 M plans
# (the CLI's bound is 4 M, cli/common.py check_search_size) and the page answers in seconds
MAX_SERVE_GPUS = 72
MAX_TOKENS = 1 << 24
Engine = Literal[engine_names()]  # the registry's engines (spec/engines/)
Regime = Literal["latency", "throughput", "long-context"]


# ---- requests: unknown fields are refused, so a typo is a 422 naming it rather than a silent default
class _Req(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelRef(_Req):
    model: Optional[str] = Field(None, description="Registry name or Hugging Face id the registry knows.", max_length=300)
    config: Optional[dict[str, Any]] = Field(None, description="A pasted Hugging Face config.json (instead of `model`).")


class Precisions(_Req):
    weight_dtype: Optional[str] = Field(None, max_length=40)
    activation_dtype: Optional[str] = Field(None, max_length=40)
    kv_dtype: Optional[str] = Field(None, max_length=40)


class PointDeployment(BaseModel):
    """A frontier point's `deployment` record, as /api/pareto returns it (fields it does not name pass through)."""
    model_config = ConfigDict(extra="allow")
    gpu: Optional[str] = Field(None, max_length=100)
    tp: int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    pp: int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    ep: int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    moe_tp: int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    attention_dp: int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    kvp: int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    weight_dtype: str = Field(..., max_length=40)
    activation_dtype: str = Field(..., max_length=40)
    kv_dtype: str = Field(..., max_length=40)
    attn_weight_dtype: Optional[str] = Field(None, max_length=40)
    backend: Engine = "trtllm"
    spec: Optional[str] = Field(None, max_length=40)
    draft_len: int = Field(0, ge=0, le=16)
    acceptance: Optional[float] = Field(None, ge=1, le=17, allow_inf_nan=False)
    acceptance_rates: list[float] = Field(default_factory=list, max_length=16)
    draft_model: Optional[str] = Field(None, max_length=300)
    max_num_tokens: Optional[int] = Field(None, ge=1, le=MAX_TOKENS)
    cpp: bool = False
    instance_gpus: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    replicas: int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    concurrency_per_instance: Optional[int] = Field(None, ge=1, le=1 << 20)


class WhatIfGpu(_Req):
    """A what-if GPU: a catalog GPU with some of its figures changed, checked by the edge checks a GPU
    TOML gets (spec.validation.check_gpu). Figures left out keep the base's; it keeps the base's
    family (so its calibration), SMs, tiles, caches and NIC."""
    base: str = Field("h200", max_length=100, description="The catalog GPU it starts from.")
    id: str = Field("what-if", max_length=40, description="Its name in the results; none of the catalog's GPUs.")
    hbm_tb_s: Optional[float] = Field(None, allow_inf_nan=False, description="HBM bandwidth, TB/s.")
    memory_gb: Optional[float] = Field(None, allow_inf_nan=False, description="Memory the driver reports, GB (1e9 bytes).")
    bf16_tflops: Optional[float] = Field(None, allow_inf_nan=False, description="Dense BF16 TFLOP/s.")
    fp8_tflops: Optional[float] = Field(None, allow_inf_nan=False, description="Dense FP8 TFLOP/s (0: none).")
    fp4_tflops: Optional[float] = Field(None, allow_inf_nan=False, description="Dense FP4 TFLOP/s (0: none).")
    scale_up_gb_s: Optional[float] = Field(None, allow_inf_nan=False, description="Scale-up (NVLink) bandwidth per GPU, one direction, GB/s.")
    scale_up_domain: Optional[int] = Field(None, description="GPUs in one scale-up domain.")


class WhatIf(_Req):
    what_if: Optional[WhatIfGpu] = Field(None, description="A what-if GPU, named by its `id` wherever a GPU is.")


class EstimateRequest(ModelRef, Precisions, WhatIf):
    gpu: str = Field(..., max_length=100)
    num_gpus: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    tp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    pp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    ep: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    moe_tp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    attention_dp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    kvp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    engine: Engine = "trtllm"
    isl: int = Field(1024, ge=1, le=MAX_TOKENS)
    osl: int = Field(1024, ge=1, le=MAX_TOKENS)
    concurrency: Optional[int] = Field(None, ge=1, le=1 << 20, description="Requests in flight; omit for offline max throughput.")
    breakdown: bool = False
    deployment: Optional[PointDeployment] = Field(
        None, description="A frontier point's `deployment` record: priced at its batch, with the point's per-operator breakdown.")


class ParetoRequest(ModelRef, Precisions, WhatIf):
    gpus: list[str] = Field(..., min_length=1, max_length=8, description="One series per GPU id.")
    num_gpus: int = Field(8, ge=1, le=MAX_SERVE_GPUS)
    # a size given fixes it, as `pareto --tp ...` does (SearchSpace.build)
    tp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    pp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    ep: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    moe_tp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    attention_dp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    kvp: Optional[int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    engine: Engine = "trtllm"
    isl: int = Field(1024, ge=1, le=MAX_TOKENS)
    osl: int = Field(1024, ge=1, le=MAX_TOKENS)
    min_tps_user: Optional[float] = Field(None, ge=0, le=1e7, allow_inf_nan=False)
    max_ttft_ms: Optional[float] = Field(None, gt=0, le=1e9, allow_inf_nan=False)


class LintRequest(ModelRef, Precisions, WhatIf):
    gpu: str = Field(..., max_length=100)
    regime: Regime = "throughput"


class DesignRequest(Precisions, WhatIf):
    params: float = Field(..., ge=1e6, le=1e14, allow_inf_nan=False, description="Total-parameter budget, e.g. 8e9.")
    gpu: str = Field("h200", max_length=100)
    num_gpus: int = Field(8, ge=1, le=MAX_SERVE_GPUS)
    regime: Regime = "throughput"
    moe: bool = False
    baseline: Optional[str] = Field(None, max_length=300)
    engine: Engine = "trtllm"
    min_tps_user: float = Field(20.0, ge=0, le=1e7, allow_inf_nan=False)
    max_candidates: int = Field(500, ge=1, le=5000, description="Kept small: the page waits for the answer.")
    top: int = Field(5, ge=1, le=20)


# ---- responses: the fields the page reads are typed; the rest of the CLI's record passes through
class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Health(BaseModel):
    status: str
    version: str


class ModelInfo(_Open):
    name: str
    hf_ids: list[str]
    total_params: Optional[float]
    active_params: Optional[float]


class GpuInfo(_Open):
    id: str
    name: str
    hbm_gb: float
    hbm_tb_s: float
    peak_tflops: dict[str, float]


class Operator(_Open):
    name: str
    kind: str
    time_ms: float


class Export(BaseModel):
    engine: str
    file_name: str
    text: Optional[str] = Field(None, description="The file `export-point` writes for this point.")
    error: Optional[str] = Field(None, description="Why the engine cannot run this plan, when it cannot.")


class Estimate(_Open):
    model: str
    gpu: str
    plan: str
    precision: str
    ttft_ms: float
    tpot_ms: float
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    point_breakdown: Optional[list[Operator]] = Field(None, description="The frontier point's per-operator times (with `deployment`).")
    export: Optional[Export] = Field(None, description="The frontier point's engine launch configuration (with `deployment`).")


class Point(_Open):
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    ttft_ms: float
    tpot_ms: float
    deployment: dict[str, Any]


class Series(_Open):
    model: str
    gpu: str
    num_gpus: int
    evaluated: int
    seconds: float
    frontier: list[Point]


class ParetoResponse(BaseModel):
    series: list[Series] = Field(..., description="One frontier per GPU, each what `pareto --json` prints.")


class Finding(_Open):
    rule: str
    rule_name: str
    severity: str
    where: str
    message: str
    cost_pct: float
    fix: str


class LintResponse(BaseModel):
    model: str
    gpu: str
    regime: str
    findings: list[Finding]


class DesignResponse(_Open):
    regime: str
    objective: str
    candidates: int
    evaluated: int
    designs: list[dict[str, Any]]


class AccuracyReport(BaseModel):
    notes: list[str] = Field(..., description="Where each part's figures come from (the table's header).")
    table: dict[str, Any] = Field(..., description="data/calibration/accuracy.toml: per cell median and p90 absolute % error, signed median, rows.")


class ErrorResponse(BaseModel):
    error: str = Field(..., description="One line: the field, the value and what is valid.")
    field: Optional[str] = None


# ---- the work: the same calls the CLI makes
def _plain(obj):
    """The result as strict JSON data: the edge check (no NaN, infinity or negative time), then numpy
    numbers as floats, as the CLI's `--json` prints them."""
    from llm_codesign.spec.validation import check_result

    check_result(obj)
    return json.loads(json.dumps(obj, default=float, allow_nan=False))


def _gpu(ref: str, field: str = "gpu", what_if: WhatIfGpu | None = None):
    """A catalog GPU, or the request's what-if GPU by its id: the page never names a file on the
    server (the CLI takes a GPU .toml path)."""
    import llm_codesign as lc
    from llm_codesign.spec.hardware import catalog

    if what_if is not None and ref.strip().lower() == what_if.id.strip().lower():
        return _what_if(what_if)
    if ref.strip().lower().endswith(".toml"):
        raise InputError(field, ref, "a GPU id of the catalog: " + ", ".join(catalog()))
    return lc.get_gpu(ref)


# what-if form field -> (GPU TOML field, the form's unit in the TOML's, the unit's name)
WHAT_IF_FIELDS = {
    "hbm_tb_s": ("hbm_bandwidth_bytes_per_s", 1e12, "TB/s"), "memory_gb": ("memory_bytes", 1e9, "GB"),
    "bf16_tflops": ("peak_flops.bf16", 1e12, "TFLOP/s"), "fp8_tflops": ("peak_flops.fp8", 1e12, "TFLOP/s"),
    "fp4_tflops": ("peak_flops.fp4", 1e12, "TFLOP/s"), "scale_up_gb_s": ("scale_up_bandwidth_bytes_per_s", 1e9, "GB/s"),
    "scale_up_domain": ("scale_up_domain", 1, "GPUs"),
}


def _what_if_valid(form: str) -> str:
    """What check_gpu accepts for a form field, in the form's unit (its ranges: spec.validation)."""
    from llm_codesign.spec.validation import GPU_NUMBERS, PEAK_FLOPS

    toml, scale, unit = WHAT_IF_FIELDS[form]
    if toml.startswith("peak_flops"):
        lo, hi = PEAK_FLOPS[0] / scale, PEAK_FLOPS[1] / scale
        return (f"dense {unit} from {lo:g} to {hi:g}" + ("" if form == "bf16_tflops" else " (0: the tensor cores lack it)"))
    if form == "scale_up_domain":
        return "a whole number of GPUs from 1 to 1048576"
    if form == "scale_up_gb_s":
        return (f"0 (no scale-up link) or from {GPU_NUMBERS['hbm_bandwidth_bytes_per_s'][0] / scale:g} to "
                f"{GPU_NUMBERS[toml][1] / scale:g} {unit} per GPU, one direction; positive where the domain holds more than one GPU")
    lo, hi, _ = GPU_NUMBERS[toml]
    return f"a number from {lo / scale:g} to {hi / scale:g} {unit}"


def _what_if(w: WhatIfGpu):
    """The what-if GPU: its base's figures with the form's, checked as a GPU TOML is; a figure the
    check refuses is named by its form field, in the form's unit."""
    from dataclasses import replace

    from llm_codesign.spec.hardware import _alias_table, _norm
    from llm_codesign.spec.validation import check_gpu

    base = _gpu(w.base, "what_if.base")
    name = w.id.strip().lower()
    if not name or _norm(name) in _alias_table():
        raise InputError("what_if.id", w.id, "a name that is none of the catalog's GPUs, e.g. what-if")
    d = {"id": name, "family": base.family, "sms": base.sms, "hbm_bytes": base.hbm_bytes, "memory_bytes": base.memory_bytes,
         "hbm_bandwidth_bytes_per_s": base.hbm_bandwidth_bytes_per_s, "l2_bytes": base.l2_bytes,
         "scale_up_bandwidth_bytes_per_s": base.scale_up_bandwidth_bytes_per_s, "scale_up_domain": base.scale_up_domain,
         "scale_out_bandwidth_bytes_per_s": base.scale_out_bandwidth_bytes_per_s, "tdp_w": base.tdp_w,
         "peak_flops": dict(base.peak_flops)}
    given = {f: getattr(w, f) for f in WHAT_IF_FIELDS if getattr(w, f) is not None}
    for f, v in given.items():
        toml, scale, _ = WHAT_IF_FIELDS[f]
        if toml.startswith("peak_flops."):
            d["peak_flops"][toml.split(".", 1)[1]] = v * scale
        else:
            d[toml] = v * scale if f != "scale_up_domain" else v
    if "memory_gb" in given and base.memory_bytes > 0:  # the headline capacity keeps its ratio to the driver's
        d["hbm_bytes"] = base.hbm_bytes * d["memory_bytes"] / base.memory_bytes
    try:
        check_gpu(d, f"what-if GPU {name} (from {base.id})")
    except InputError as e:
        # hbm_bytes follows memory_gb; a domain without a link is the bandwidth's fault, as in a TOML
        form = "memory_gb" if e.field == "gpu.hbm_bytes" else next(
            (f for f, (t, _, _) in WHAT_IF_FIELDS.items() if e.field == f"gpu.{t}"), None)
        if form is None:
            raise
        valid = _what_if_valid(form)
        if form == "scale_up_gb_s" and not d["scale_up_bandwidth_bytes_per_s"]:
            valid = f"a positive figure: its scale-up domain holds {d['scale_up_domain']} GPUs (or make that 1)"
        raise InputError(f"what_if.{form}", given.get(form, e.value / WHAT_IF_FIELDS[form][1]), valid) from None
    peaks = {k: float(v) for k, v in d["peak_flops"].items() if v > 0}
    fp4 = base.fp4_formats or ("nvfp4", "mxfp4")  # gpu_from_toml's default where a TOML names none
    changed = ", ".join(f"{f} = {v:g}" for f, v in given.items()) or "nothing"
    return replace(base, id=name, name=f"what-if GPU from {base.name}", aliases=(), hbm_bytes=float(d["hbm_bytes"]),
                   memory_bytes=float(d["memory_bytes"]), hbm_bandwidth_bytes_per_s=float(d["hbm_bandwidth_bytes_per_s"]),
                   scale_up_bandwidth_bytes_per_s=float(d["scale_up_bandwidth_bytes_per_s"]),
                   scale_up_domain=int(d["scale_up_domain"]), peak_flops=tuple(sorted(peaks.items())),
                   fp4_formats=fp4 if "fp4" in peaks else (), sources=(("what_if", f"{base.id} with {changed} (the page's form)"),))


def _model(req: ModelRef):
    """A bundled model by name or Hugging Face id, or the pasted config.json; never a path on the server
    nor a download."""
    import llm_codesign as lc
    from llm_codesign.spec.registry import _index, entries

    if (req.model is None) == (req.config is None):
        raise InputError("model", req.model, "either a model name or a pasted config.json, not both or neither")
    if req.config is not None:
        from llm_codesign.spec.model import from_hf_config

        return from_hf_config(req.config, "custom")
    if req.model.strip().lower() not in _index():
        raise InputError("model", req.model, "a bundled model (" + ", ".join(e["name"] for e in entries())
                         + ") or one of their Hugging Face ids, or a pasted config.json")
    return lc.get_model(req.model)


def _estimate(req: EstimateRequest) -> dict:
    import llm_codesign as lc

    m = _model(req)
    if req.deployment is not None:  # a frontier point: one instance of its plan at its batch
        from llm_codesign.cost.calibration import calibration_for
        from llm_codesign.explore.search import point_breakdown

        g = _gpu(req.gpu, what_if=req.what_if)
        rec = {**req.deployment.model_dump(), "gpu": g.id}  # typed by PointDeployment: a bad field is a 422 naming it
        dep = lc.Deployment.from_dict(rec, g)
        conc = rec["concurrency_per_instance"]
        r = lc.estimate(m, dep, lc.Workload(req.isl, req.osl, req.concurrency or conc), breakdown=req.breakdown).to_dict()
        r["point_breakdown"] = point_breakdown(m, calibration_for(g, None), dep, conc, isl=req.isl, osl=req.osl)
        r["export"] = _export(m, dep, req, conc=conc, replicas=rec["replicas"],
                              predicted={k: r[k] for k in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")})
        return _plain(r)
    dep = lc.deployment(m, gpu=_gpu(req.gpu, what_if=req.what_if), num_gpus=req.num_gpus, tp=req.tp, pp=req.pp, ep=req.ep, moe_tp=req.moe_tp,
                        attention_dp=req.attention_dp, kvp=req.kvp, weight_dtype=req.weight_dtype,
                        activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype, engine=req.engine)
    return _plain(lc.estimate(m, dep, lc.Workload(req.isl, req.osl, req.concurrency), breakdown=req.breakdown).to_dict())


def _export(m, dep, req: EstimateRequest, *, conc: int | None, replicas: int, predicted: dict) -> dict:
    """The engine's launch configuration of a frontier point, as `export-point` writes it (`predicted`:
    the point's metrics, priced again); a plan the engine cannot express is its one-line reason instead."""
    from llm_codesign.explore.export import EXPORTERS, export_config

    name = EXPORTERS[dep.backend].file_name if dep.backend in EXPORTERS else "config.yaml"
    try:
        text = export_config(m, dep, engine=dep.backend, concurrency=conc or 1, replicas=replicas,
                             file_name=name, extra={"isl": req.isl, "osl": req.osl, "predicted": predicted})
    except InputError as e:
        return {"engine": dep.backend, "file_name": name, "text": None, "error": " ".join(str(e).split())}
    return {"engine": dep.backend, "file_name": name, "text": text, "error": None}


def _pareto(req: ParetoRequest) -> dict:
    import llm_codesign as lc

    m = _model(req)
    series = []
    for gpu in req.gpus:
        f = lc.pareto(m, _gpu(gpu, "gpus", req.what_if), num_gpus=req.num_gpus, workload=lc.Workload(req.isl, req.osl), engine=req.engine,
                      weight_dtype=req.weight_dtype, activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype,
                      tp=req.tp, pp=req.pp, ep=req.ep, moe_tp=req.moe_tp, attention_dp=req.attention_dp, kvp=req.kvp,
                      min_tps_user=req.min_tps_user, max_ttft_ms=req.max_ttft_ms)
        series.append(f.to_dict())
    return {"series": _plain(series)}


def _lint(req: LintRequest) -> dict:
    import llm_codesign as lc
    from llm_codesign.explore.lint import RULES

    m, g = _model(req), _gpu(req.gpu, what_if=req.what_if)
    fs = lc.lint(m, g, regime=req.regime, weight_dtype=req.weight_dtype, activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype)
    return _plain({"model": m.name, "gpu": g.id, "regime": req.regime, "findings": [{**f, "rule_name": RULES[f["rule"]][0]} for f in fs]})


def _design_inputs(req: DesignRequest):
    """The GPU and the baseline, resolved before a (streamed) search starts, so a bad one is a 422."""
    base = None
    if req.baseline is not None:
        try:
            base = _model(ModelRef(model=req.baseline))
        except InputError as e:
            raise InputError("baseline", req.baseline, e.valid) from None
    return _gpu(req.gpu, what_if=req.what_if), base


def _design(req: DesignRequest, progress=None, inputs=None) -> dict:
    import llm_codesign as lc

    g, base = inputs or _design_inputs(req)
    return _plain(lc.design(req.params, g, num_gpus=req.num_gpus, regime=req.regime, moe=req.moe, baseline=base,
                            weight_dtype=req.weight_dtype, activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype,
                            engine=req.engine, min_tps_user=req.min_tps_user, max_candidates=req.max_candidates, top=req.top,
                            progress=progress))


NDJSON = "application/x-ndjson"


def _design_stream(req: DesignRequest):
    """The design run as NDJSON lines: {"progress": [shapes done, shapes]} as the search goes, then
    {"result": ...} (what the plain POST returns) or {"error": one line, "field": ...}."""
    import queue
    import threading

    inputs = _design_inputs(req)  # raises here, before the response starts
    q: queue.Queue = queue.Queue()

    def work():
        try:
            q.put({"result": _design(req, lambda done, total: q.put({"progress": [int(done), int(total)]}), inputs)})
        except InputError as e:
            q.put({"error": " ".join(str(e).split()), "field": e.field})
        except Exception as e:  # a bug: one line, as the plain POST answers it
            q.put({"error": f"internal error: {type(e).__name__}: {e}"})

    def lines():
        while True:
            item = q.get()
            yield json.dumps(item, allow_nan=False) + "\n"
            if "progress" not in item:
                return

    threading.Thread(target=work, daemon=True).start()
    return lines()


def _accuracy() -> dict:
    """The validation report's figures the estimates quote (measure.accuracy.bundled: the shipped
    data/calibration/accuracy.toml, what benchmarks/validation_report.py wrote) and its header's
    account of where each part comes from."""
    from llm_codesign.measure.accuracy import bundled

    text = (resources.files("llm_codesign") / "data" / "calibration" / "accuracy.toml").read_text()
    notes = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        if line.startswith("#   ") and notes:  # a wrapped line continues the section's
            notes[-1] += " " + body
        elif body.startswith(("serving:", "offline:", "speculative:")):
            notes.append(body)
    # not _plain: signed errors are negative by design (check_result refuses a negative time)
    return json.loads(json.dumps({"notes": notes, "table": bundled()}, allow_nan=False))


def _field_line(err: dict) -> tuple[str, str]:
    """pydantic's first complaint as (field, one line): `body.gpus.0` -> `gpus.0`."""
    loc = [str(x) for x in err.get("loc", ()) if x != "body"]
    name = ".".join(loc) or "body"
    value = err.get("input")
    shown = "" if value is None or isinstance(value, (dict, list)) else f": {value!r} is not valid"
    return name, f"{name}{shown}; {err.get('msg', 'invalid')}".replace("\n", " ")


def create_app(allowed_hosts: list[str] | None = None):
    """The FastAPI application: the page at /, plotly.js at /static/plotly.min.js, the API under /api.
    `allowed_hosts`: the Host headers answered (`serve` passes the loopback names when it binds
    loopback, so another site's page cannot reach the API through DNS rebinding); None answers any."""
    from fastapi import FastAPI, Header, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles

    from llm_codesign import __version__

    # the CDN-hosted docs UIs are off: the page works offline, and /openapi.json is the schema
    app = FastAPI(title="llm-codesign", version=__version__, docs_url=None, redoc_url=None,
                  description="The JSON API of `llm-codesign serve`'s page: the CLI's --json results.")
    if allowed_hosts:
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    err = {422: {"model": ErrorResponse, "description": "Bad input: one line naming the field."}}

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError):
        errs = e.errors()
        field, line = _field_line(errs[0]) if errs else ("body", "body: not valid")
        return JSONResponse({"error": line, "field": field}, status_code=422)

    @app.exception_handler(InputError)
    async def _input(_: Request, e: InputError):
        return JSONResponse({"error": " ".join(str(e).split()), "field": e.field}, status_code=422)

    @app.exception_handler(Exception)
    async def _bug(_: Request, e: Exception):  # a bug: one line, never a traceback in the page
        return JSONResponse({"error": f"internal error: {type(e).__name__}: {e}"}, status_code=500)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index():
        return HTMLResponse(STATIC.joinpath("index.html").read_text())

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js():
        try:
            path = resources.files("plotly") / "package_data" / "plotly.min.js"
        except ModuleNotFoundError:
            return Response("// plotly is not installed: pip install 'llm-codesign[serve]'\n", status_code=404,
                            media_type="text/javascript")
        return FileResponse(str(path), media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.get("/healthz", response_model=Health)
    def healthz():
        return {"status": "ok", "version": __version__}

    @app.get("/api/models", response_model=list[ModelInfo])
    def models():
        from llm_codesign.spec.registry import list_models

        return _plain(list_models())

    @app.get("/api/gpus", response_model=list[GpuInfo])
    def gpus():
        from llm_codesign.spec.hardware import catalog

        return _plain([g.to_dict() for g in catalog().values()])

    @app.get("/api/accuracy", response_model=AccuracyReport)
    def accuracy():
        return _accuracy()

    # plain `def` handlers: FastAPI runs them in its thread pool, so a search does not block the page's other calls
    @app.post("/api/estimate", response_model=Estimate, responses=err)
    def estimate(req: EstimateRequest):
        return _estimate(req)

    @app.post("/api/pareto", response_model=ParetoResponse, responses=err)
    def pareto(req: ParetoRequest):
        return _pareto(req)

    @app.post("/api/lint", response_model=LintResponse, responses=err)
    def lint(req: LintRequest):
        return _lint(req)

    @app.post("/api/design", response_model=DesignResponse, responses={
        **err, 200: {"content": {NDJSON: {}}, "description": f"With `Accept: {NDJSON}`: progress lines, then the result line."}})
    def design(req: DesignRequest, accept: str = Header("", include_in_schema=False)):
        if NDJSON in accept:
            from fastapi.responses import StreamingResponse

            return StreamingResponse(_design_stream(req), media_type=NDJSON)
        return _design(req)

    return app
