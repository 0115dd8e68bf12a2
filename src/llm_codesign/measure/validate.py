"""Predict published measurements and report errors: kernels (per call) and serving (per deployment).

Serving rows use the canonical columns (see data/measurements/SOURCES.md). Rows the model cannot
represent are listed with the reason, never dropped silently. A file with both pools' columns
(POOL_COLUMNS: data/measurements/serving_disagg_blackwell.csv) holds disaggregated runs, priced with serve.disagg.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.measure import audit, campaigns
from llm_codesign.measure import kernel_tables as kernels
from llm_codesign.measure.stats import BAND_NAMES, concurrency_band, error_stats
from llm_codesign.serve.aggregated import Serving, evaluate
from llm_codesign.serve.disagg import evaluate_disagg
from llm_codesign.serve.metrics import BATCH_GRID
from llm_codesign.spec.engines import TRTLLM, check_runs, get_engine, trtllm_bench
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.harness import OFFLINE_ARRIVAL, SchedulerFlags
from llm_codesign.spec.plan import (
    MAX_CONCURRENCY,
    MAX_TOKENS,
    REASONS,
    Deployment,
    Plan,
    SpecDecoding,
    checkpoint_precision,
    default_moe_tp,
    reason_text,
    validity,
)
from llm_codesign.spec.precision import Precision, get_dtype
from llm_codesign.spec.registry import get_model

SERVING_COLUMNS = ("source", "model", "gpu", "num_gpus", "backend", "weight_dtype", "kv_dtype", "isl", "osl", "concurrency",
                   "tp", "pp", "ep", "moe_tp", "attention_dp", "spec_method", "spec_draft_len", "spec_acceptance",
                   "ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "output_tok_s_per_user")
# optional: the step token budget the run set (trtllm-bench --max_num_tokens, vLLM --max-num-batched-tokens,
# SGLang --chunked-prefill-size); blank: the engine's own default on that GPU (Engine.step_tokens)
# (disaggregated files: decode_max_batch, the decode worker's max batch per attention-DP rank)
# and the harness's arrival pattern and scheduler flags (measure.campaigns.FLAG_COLUMNS; blank: the campaign's,
# data/measurements/campaigns.toml, else the engine's defaults)
OPTIONAL_COLUMNS = ("max_num_tokens", *campaigns.FLAG_COLUMNS)
METRICS = ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "output_tok_s_per_user")
# whole, >= 1 (blank: 1 for the plan sizes; no concurrency: an offline max-throughput run)
_POSITIVE = ("num_gpus", "isl", "osl", "tp", "pp", "ep", "moe_tp", "attention_dp", "concurrency", "max_num_tokens", "decode_max_batch")
_REAL = ("spec_acceptance", "ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "output_tok_s_per_user")
# a measured metric's least value (0 or blank: not measured): a time of 1 us, below one kernel launch's few
# microseconds, and a rate of 0.001 tok/s (the shipped runs' least is 3.9 tok/s/user); a 1e-300 ms TTFT put an
# error of 1.8e304 % in the report
_LEAST = {"ttft_ms": 1e-3, "tpot_ms": 1e-3, "output_tok_s_per_gpu": 1e-3, "output_tok_s_per_user": 1e-3}
# the most a row's lengths and loads may be, the core's own bounds (spec.plan: a Workload's); a concurrency of 1e12 was
# priced (an error of 2.6e14 %)
_MOST = {"isl": MAX_TOKENS, "osl": MAX_TOKENS, "max_num_tokens": MAX_TOKENS, "concurrency": MAX_CONCURRENCY, "decode_max_batch": MAX_CONCURRENCY}
_DTYPE = {"int4_wo": "int4", "fp4": "nvfp4", "w4a16_mxfp4": "mxfp4"}


def serving_file(path: str | Path) -> str:
    """A serving CSV here, else the name of one the package ships (data/measurements/, inside the installed package
    where a pip install leaves no source tree to point at); neither is one line listing the bundled ones. What
    `validate --serving`, `calibrate --serving` and the API's validate_serving take."""
    from importlib import resources

    if Path(path).is_file():
        return str(path)
    here = resources.files("llm_codesign").joinpath("data/measurements")
    bundled = sorted(f.name for f in here.iterdir() if f.name.endswith(".csv") and "model" in f.open().readline().split(","))
    if str(path) in bundled:
        return str(here.joinpath(str(path)))
    raise InputError("serving", str(path), "an existing CSV file (.csv or .csv.gz) with the canonical serving columns, or a bundled one: "
                     + ", ".join(bundled))


def read_rows(path: str | Path) -> list[dict]:
    """The rows of a serving CSV (`serving_file`: a path, or a bundled file's name), checked."""
    p = Path(serving_file(path))
    rows = kernels.read_dicts(p, "serving", "a readable CSV file, plain or gzipped")
    missing = [c for c in ("model", "gpu", "num_gpus", "isl", "osl") if rows and c not in rows[0]]
    if not rows or missing:
        raise InputError("serving", str(path), "a CSV with columns " + ", ".join(SERVING_COLUMNS) + " (optional: "
                         + ", ".join(OPTIONAL_COLUMNS) + ")" + (f" (missing {missing})" if missing else ""))
    return rows


def row_problem(r: dict, line: int) -> str | None:
    """Why a serving row cannot be priced (a malformed number, named with its line and column), or
    None; predict_serving skips such rows and lists them with this reason."""
    short = [k for k, v in r.items() if v is None]  # csv.DictReader fills a line shorter than the header with None
    if short:
        return f"line {line}: {len(r) - len(short)} fields where the header has {len(r)} (no {short[0]})"
    for col in (*_POSITIVE, "spec_draft_len", *_REAL):
        v = (r.get(col) or "").strip()
        if not v:
            continue
        try:
            x = float(v)
        except ValueError:
            x = float("nan")
        whole = col in _POSITIVE or col == "spec_draft_len"
        low = 1.0 if col in _POSITIVE else 0.0
        if not (math.isfinite(x) and x >= low and (not whole or x.is_integer()) and x <= 1e15):
            what = ("a whole number" if whole else "a finite number") + (" of at least 1" if low else ", 0 or more")
            return f"line {line} {col}: {v!r} is not valid; {what} or empty"
        if 0 < x < _LEAST.get(col, 0):
            return f"line {line} {col}: {v!r} is not valid; 0 or empty (not measured), or at least {_LEAST[col]:g}"
        if x > _MOST.get(col, math.inf):
            return f"line {line} {col}: {v!r} is not valid; a whole number from 1 to {_MOST[col]:,} or empty"
    return _framework_problem(r, line) or campaigns.problem(r, line)


# a `framework` column, as InferenceX's results name the serving stack (its disaggregated ones `dynamo-trt` and
# `dynamo-sglang`: Dynamo with TensorRT-LLM or SGLang workers; AMD's `sglang-disagg`, since relabelled `mori-sglang`:
# SGLang moving KV over MoRI, SemiAnalysisAI/InferenceX .github/codeowner-signoff-verify-prompt.md:131-132 and
# .github/workflows/benchmark-multinode-tmpl.yml:313@843c6254), says again what `backend` says: read to check the two agree
FRAMEWORK_ENGINES = {"trt": "trtllm"}


def _framework_problem(r: dict, line: int) -> str | None:
    """Why a row's `framework` contradicts its `backend` (which is what prices it), or None: a framework names the engine
    as one of its `-`-separated parts, the others the stack around it (dynamo-trt, mori-sglang, sglang-disagg)."""
    given = (r.get("framework") or "").strip()
    engine = (r.get("backend") or "trtllm").strip().lower()
    if given and engine not in {FRAMEWORK_ENGINES.get(p, p) for p in given.lower().split("-")}:
        own = [f for f, e in FRAMEWORK_ENGINES.items() if e == engine] or [engine]
        return f"line {line} framework: {given!r} is not valid; one naming its backend column's engine, {engine} (e.g. dynamo-{own[0]}), or empty"
    return None


def _int(r, k, default=1):
    v = (r.get(k) or "").strip()
    return int(float(v)) if v else default


def _precision(model, r) -> Precision:
    w = _DTYPE.get(r.get("weight_dtype", "").strip().lower(), r.get("weight_dtype", "").strip().lower()) or model.default_precision.weight.name
    d = model.default_precision
    base = get_dtype(w, "weight_dtype")
    if base.math == d.weight.math and base.bits == d.weight.bits:
        p = d  # the checkpoint's own format (e.g. "fp8" for DeepSeek's block-scaled FP8)
    else:
        try:  # a re-quantised checkpoint's attention format, as an answer prices it: NVIDIA's NVFP4 R1, AMD's Quark on CDNA
            gpu = get_gpu((r.get("gpu") or "").strip())
        except InputError:
            gpu = None
        p = checkpoint_precision(model, Precision.of(base.name), gpu)
    # the row's own, else its campaign's: the KV cache its scripts pass (data/measurements/campaigns.toml)
    kv = (r.get("kv_dtype") or "").strip() or (campaigns.campaign_of(r) or {}).get("kv_dtype", "")
    if kv:
        p = replace(p, kv=get_dtype(kv, "kv_dtype"))
    elif base.name == "nvfp4" or base.math == "fp8":
        # a blank kv_dtype with FP8 or NVFP4 weights reads as an FP8 KV cache: NVIDIA's NVFP4 checkpoints
        # carry an FP8 KV-cache scheme (hf_quant_config kv_cache_quant_algo), TensorRT-LLM quantises the
        # KV cache to FP8 with FP8 checkpoints, and the sample's FP8 runs on vLLM and SGLang queue where an
        # FP8 cache fills, not a BF16 one (20 of its runs that a BF16 cache could not hold show no
        # queueing: MiniMax-M2.5 TP2 8k/1k at 64 requests, 0.8-0.9 s to a first token; data/measurements/
        # SOURCES.md). Other weights keep the checkpoint's own KV format ("auto" in vLLM and SGLang).
        p = replace(p, kv=get_dtype("fp8"))
    return p


def _spec(r):
    m = (r.get("spec_method") or "").strip().lower()
    if not m:
        # the campaign's speculation for rows that record none (campaigns.toml: e.g. the dates a workflow ran MTP-1), its
        # draft length and documented acceptance with it; a row's own `none` keeps it off
        camp = campaigns.campaign_of(r) or {}
        if camp.get("spec_method"):
            r = {**r, **{c: str(camp.get(c, "")) for c in ("spec_method", "spec_draft_len", "spec_acceptance")}}
            m = r["spec_method"]
    if not m or m == "none":
        return None
    # an acceptance rate is a measurement; the row cannot be modelled without it. Said as what the row lacks, not as bad
    # input: the bundled MI355X and disaggregated files record none for their MTP runs (InferenceX publishes none)
    for col, what in (("spec_acceptance", "mean accepted length"), ("spec_draft_len", "draft length")):
        if not (r.get(col) or "").strip():
            raise ValueError(f"speculative decoding with no {what} recorded ({col}: the model needs it to price a speculative run)")
    return SpecDecoding(m, _int(r, "spec_draft_len"), float(r["spec_acceptance"]))


def _resolve(r: dict, profile, cal_override):
    """A serving row's model, GPU, precision, speculation, engine and calibration (InputError,
    KeyError or ValueError when the row names something the model cannot price)."""
    model = get_model(r["model"])
    model.check_context(_int(r, "isl"), _int(r, "osl"))  # a request longer than the model's context (a 1e9-token prompt was priced)
    gpu = get_gpu(r["gpu"])
    prec = _precision(model, r)
    spec = _spec(r)
    engine = get_engine(r.get("backend") or "trtllm")  # resolved here, once per row
    cal = cal_override(gpu) if cal_override else calibration_for(gpu, profile)
    cal.step_overhead(engine.name)
    return model, gpu, prec, spec, engine, cal


def _grouped(rows: list[dict], profile, cal_override, problem) -> tuple[list[tuple], list[dict]]:
    """The rows that can be priced, grouped by what they share (model, GPU, precision, engine,
    speculation, calibration) so that a group prices in one vectorised pass, as [(those objects, row
    indices)]; and the others with their reasons (`problem(row, line)` first, then what the row names)."""
    unmodeled = []
    groups: dict[tuple, tuple] = {}
    for i, r in enumerate(rows):
        why = problem(r, i + 2)
        if why:  # skipped and listed, not the end of the run
            unmodeled.append({"row": i, "source": r.get("source", ""), "reason": why})
            continue
        try:
            model, gpu, prec, spec, engine, cal = _resolve(r, profile, cal_override)
        except (InputError, KeyError, ValueError) as e:
            unmodeled.append({"row": i, "source": r.get("source", ""), "reason": str(e)})
            continue
        sets = campaigns.settings(r)
        arrival = sets["arrival"]  # rows priced together share their arrival pattern
        for fusion in campaigns.fusions_off(sets):  # a build of the engine that does not make it (ar_norm: all-reduce + norm)
            engine = engine.without(fusion)
        groups.setdefault((model.name, gpu.id, prec, engine, spec, id(cal), arrival, bool(sets.get("offline"))),
                          ((model, gpu, prec, engine, spec, cal), []))[1].append(i)
    return list(groups.values()), unmodeled


def unpriced(rows: list[dict], unmodeled: list[dict]) -> str:
    """What a serving file none of whose rows the model prices should be (an InputError's `valid`),
    with the first reasons predict_serving gave."""
    reasons = sorted({u["reason"] for u in unmodeled})
    return (f"a file with at least one row the model can price; none of its {len(rows)} rows is "
            f"({'; '.join(reasons[:2])}{'; ...' if len(reasons) > 2 else ''})")


def clean_form(rows: list[dict], path: str) -> list[dict]:
    """--clean: the serving rows' clean form (measure.audit.clean); an error naming what it dropped where it keeps none
    (every run of a file can contradict its series or record no concurrency)."""
    from collections import Counter

    kept, changes = audit.clean(rows)
    if rows and not kept:
        why = ", ".join(f"{n} {a}" for a, n in sorted(Counter(c["action"] for c in changes if c["action"] in audit.DROPPED).items()))
        raise InputError("clean", path, f"a serving file whose clean form keeps a row; it drops all {len(rows)} ({why}; "
                         "`llm-codesign validate --serving FILE --json` lists each one's reason)")
    return kept


def predicted_rows(rows: list[dict], preds: list[dict]) -> list[dict]:
    """Each input row with its predictions beside it as `predicted_<metric>` (and its 80% `_lo`, `_hi` and 95% `_lo95`, `_hi95`): `validate --out`'s rows."""
    def name(k: str) -> str:
        return k if k.startswith("predicted") else f"predicted_{k}"

    return [{**r, **{name(k): v for k, v in p.items()}} for r, p in zip(rows, preds, strict=True)]


def typed_row(row: dict) -> dict:
    """A read row with its numeric columns as numbers (None where blank; a cell that is no number, on a row not priced,
    as read): what a table of runs needs, where the CSV gave strings."""
    def num(k: str, v):
        if not isinstance(v, str) or k not in (*_POSITIVE, *_REAL, "spec_draft_len"):
            return v
        try:
            x = float(v) if v.strip() else None
        except ValueError:
            return v
        return int(x) if x is not None and k not in _REAL and x.is_integer() else x

    return {k: num(k, v) for k, v in row.items()}


def predict_serving(rows: list[dict], profile: str | None = None, cal_override=None) -> tuple[list[dict], list[dict]]:
    """Per row: predictions (same metric names) or an `unmodeled` reason. A file with both pools'
    columns (POOL_COLUMNS) is disaggregated: predict_disagg prices it."""
    if is_disagg(rows):
        return predict_disagg(rows, profile, cal_override)
    preds: list[dict] = [{} for _ in rows]
    groups, unmodeled = _grouped(rows, profile, cal_override, row_problem)
    for objs, idx in groups:
        model, gpu, prec, engine, spec, cal = objs
        sub = [rows[i] for i in idx]
        sets = [campaigns.settings(r) for r in sub]
        a = _plan_arrays(model, sub, sets)
        plan = Plan(a["tp"], a["pp"], a["ep"], a["moe_tp"], a["attention_dp"], np.ones(len(idx), dtype=np.int64))
        code = validity(model, gpu, plan, a["num_gpus"])
        # multi-node TP is unusual but measured: price it over the network instead of rejecting it
        code = np.where(code == REASONS.index("scale_up"), -1, code)
        isl = np.array([_int(r, "isl") for r in sub], float)
        osl = np.array([_int(r, "osl") for r in sub], float)
        conc = np.array([float(r["concurrency"]) if (r.get("concurrency") or "").strip() else np.nan for r in sub])
        offline = np.isnan(conc)
        mnt = np.array([s["max_num_tokens"] or engine.step_tokens(gpu) for s in sets], float)
        harness = {"arrival": sets[0]["arrival"], "flags": campaigns.group_flags(sets, engine), "offline": bool(sets[0].get("offline"))}
        # concurrency rows: one vectorised pass; offline rows: best fitting batch over the grid
        c1 = np.where(offline, 1.0, conc)
        res = evaluate(model, Serving(gpu=gpu, prec=prec, plan=plan, engine=engine, spec=spec, max_num_tokens=mnt), cal=cal, concurrency=c1,
                       isl=isl, osl=osl, **harness)
        out = {"ttft_ms": res["ttft_s"] * 1e3, "tpot_ms": res["tpot_s"] * 1e3,
               "output_tok_s_per_gpu": res["output_tok_s_per_gpu"], "output_tok_s_per_user": res["tok_s_per_user"]}
        out = {k: np.broadcast_to(v, (len(idx),)).copy() for k, v in out.items()}
        if offline.any():
            _offline_best(objs, a, out=out, offline=offline, lengths=(isl, osl, mnt), sub=sub)
        fits = np.broadcast_to(res["fits"], (len(idx),)) | offline
        holds = (np.broadcast_to(res["max_concurrency"], (len(idx),)) >= 1) | offline
        # a run the memory model says holds no sequence ran all the same: evidence against it, priced and counted (_bypass_memory)
        bypassed, short, holds = _bypass_memory(model, objs, res, code=code, sets=sets, plan=plan, lengths=(c1, isl, osl, mnt), out=out, holds=holds)
        fits = fits & ~bypassed
        out["output_tok_s_per_user"] = _per_user_as_measured(out, osl, sets)
        for j, i in enumerate(idx):
            why = _unpriced(model, gpu, prec, engine, a=a, plan=plan, code=int(code[j]), j=j, line=i + 2)
            if why:
                unmodeled.append({"row": i, "source": rows[i].get("source", ""), "reason": why})
                preds[i] = {}
            elif not holds[j] or not np.isfinite(out["output_tok_s_per_gpu"][j]):
                why = _cannot_run(model, gpu, prec, engine, spec, plan=plan.at(j), num_gpus=int(a["num_gpus"][j]), isl=int(isl[j]),
                                  osl=int(osl[j]), max_num_tokens=int(mnt[j]), kv_fraction=sets[j].get("kv_fraction"), cal=cal)
                unmodeled.append({"row": i, "source": rows[i].get("source", ""), "reason": why})
                preds[i] = {}
            else:
                preds[i] = {k: float(out[k][j]) for k in METRICS}
                preds[i]["fits"] = bool(fits[j])
                if bypassed[j]:  # listed apart with estimate's refusal and the shortfall (serving_report's memory_refused)
                    preds[i] |= _refusal(model, objs, plan.at(j), num_gpus=int(a["num_gpus"][j]), row=(isl[j], osl[j], mnt[j]), sets=sets[j], short=short[j])
    return preds, unmodeled


def _plan_arrays(model, sub: list[dict], sets: list[dict]) -> dict:
    """The rows' plan columns as arrays (tp, pp, ep, moe_tp, attention_dp, num_gpus): a dense model's EP and MoE TP 1; a
    blank MoE TP what EP and PP leave of the GPUs, as lc.deployment fills it (a TP2 row read MoE-TP 1: not priced); where
    the row's campaign says its launch ran EP = TP (`ep_is_tp`, campaigns.CAMPAIGN_KEYS), EP its TP and MoE TP 1, whatever
    its columns recorded."""
    a = {k: np.array([_int(r, k) for r in sub]) for k in ("tp", "pp", "ep", "moe_tp", "attention_dp", "num_gpus")}
    if not model.is_moe:
        a["ep"][:] = 1
        a["moe_tp"][:] = 1
        return a
    blank = np.array([not (r.get("moe_tp") or "").strip() for r in sub])
    a["moe_tp"] = np.where(blank, default_moe_tp(a["num_gpus"], a["ep"], a["pp"]), a["moe_tp"])
    ep_tp = np.array([bool(s.get("ep_is_tp")) for s in sets])
    a["ep"], a["moe_tp"] = np.where(ep_tp, a["tp"], a["ep"]), np.where(ep_tp, 1, a["moe_tp"])
    return a


def per_user_with_ctx(ttft_ms, tpot_ms, osl):
    """tok/s/user as trtllm-bench reports it: a request's output tokens over its whole latency, the first token's
    included, OSL / (TTFT + (OSL - 1) x TPOT), not 1 / TPOT. Its "Per User Output Throughput" is the mean of a figure per
    request (tensorrt_llm/bench/dataclasses/reporting.py generate_statistics_summary@0249976), printed as "Per User Output
    Throughput [w/ ctx]" in its later versions (the B200 max-throughput output in
    Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md@01c4ece9); the same page's one-request runs show the prefill inside
    it: 158.12 tok/s per user against 158.07 in all on H200, 274.72 against 274.42 on B200 (one request at a time, so the
    two differ only by the requests' spread), where leaving out the prefill (0.13 s of a 12.9 s request as the model prices
    H200's, 0.09 of 7.5 s B200's) would put the per-user figure 1.0-1.3% above (data/measurements/campaigns.toml
    `per_user_with_ctx`)."""
    ttft_ms, tpot_ms, osl = (np.asarray(x, float) for x in (ttft_ms, tpot_ms, osl))
    return 1e3 * osl / (ttft_ms + (osl - 1.0) * tpot_ms)


def _per_user_as_measured(out: dict, osl, sets: list[dict]):
    """A group's tok/s/user as its rows' harness reports it: per_user_with_ctx where the row's campaign says so
    (campaigns.toml `per_user_with_ctx`, trtllm-bench's runs), else `out`'s own (1 / TPOT)."""
    with_ctx = np.array([bool(s.get("per_user_with_ctx")) for s in sets])
    if not with_ctx.any():
        return out["output_tok_s_per_user"]
    return np.where(with_ctx, per_user_with_ctx(out["ttft_ms"], out["tpot_ms"], osl), out["output_tok_s_per_user"])


def _refusal(model, objs, plan: Plan, *, num_gpus: int, row, sets: dict, short: float) -> dict:
    """A bypassed row's flag: estimate's refusal of its deployment (_cannot_run) and the bytes one sequence lacks, in GB."""
    _, gpu, prec, engine, spec, cal = objs
    isl, osl, mnt = (int(x) for x in row)
    why = _cannot_run(model, gpu, prec, engine, spec, plan=plan, num_gpus=num_gpus, isl=isl, osl=osl, max_num_tokens=mnt,
                      kv_fraction=sets.get("kv_fraction"), cal=cal)
    return {"memory_refused": why, "memory_short_gb": float(short) / 1e9}


def _bypass_memory(model, objs, res: dict, *, code, sets, plan, lengths, out: dict, holds):
    """The rows of a group (`res`, evaluate's) that ran where the memory model holds no sequence (estimate refuses them),
    re-priced with the memory check bypassed: the engine's memory fraction raised to the whole GPU (kv_fraction 1.0, each
    engine's own reading of it: SGLang's weights and KV cache, vLLM's everything, TensorRT-LLM's KV share of what is
    left), so that they queue no more than the GPU's memory makes them. Writes their metrics into `out`; returns which rows
    were bypassed, the bytes one sequence lacks per row (memory.fit's free_for_kv short of a sequence), and `holds` with
    those that now hold a sequence (a row whose weights exceed the whole GPU still holds none, and stays unpriced)."""
    short = np.broadcast_to(res["kv_bytes_per_seq"] - res["free_bytes"] - res["kv_bytes"], holds.shape)
    bypassed = (code < 0) & ~holds & np.isfinite(short)
    if not bypassed.any():
        return bypassed, short, holds
    _, gpu, prec, engine, spec, cal = objs
    c1, isl, osl, mnt = lengths
    sets2 = [dict(s, kv_fraction=1.0) if b else s for s, b in zip(sets, bypassed, strict=True)]
    harness = {"arrival": sets2[0]["arrival"], "flags": campaigns.group_flags(sets2, engine), "offline": bool(sets2[0].get("offline"))}
    res = evaluate(model, Serving(gpu=gpu, prec=prec, plan=plan, engine=engine, spec=spec, max_num_tokens=mnt), cal=cal, concurrency=c1,
                   isl=isl, osl=osl, **harness)
    now = bypassed & (np.broadcast_to(res["max_concurrency"], bypassed.shape) >= 1)
    for k, src in (("ttft_ms", res["ttft_s"] * 1e3), ("tpot_ms", res["tpot_s"] * 1e3), ("output_tok_s_per_gpu", res["output_tok_s_per_gpu"]),
                   ("output_tok_s_per_user", res["tok_s_per_user"])):
        out[k] = np.where(now, np.broadcast_to(src, bypassed.shape), out[k])
    return now, short, holds | now


def _unpriced(model, gpu, prec, engine, *, a: dict, plan: Plan, code: int, j: int, line: int) -> str | None:
    """Why row `j` of a group is not priced: sizes that do not divide (validity's `code`), or a plan or format its engine
    does not run (check_runs, as estimate refuses them: no bundled campaign's row, tests/test_engine_runs.py); None else."""
    if code >= 0:
        return _sizes_off(a, j, line, model.is_moe) if REASONS[code] == "gpus_mismatch" else reason_text(model, gpu, code)
    try:
        check_runs(engine, gpu, plan.at(j), prec, moe=model.is_moe)
    except InputError as e:
        return f"line {line} {e}"
    return None


def _cannot_run(model, gpu, prec, engine, spec, *, plan: Plan, num_gpus: int, isl: int, osl: int, max_num_tokens: int, kv_fraction,
                cal) -> str:
    """Why a row's deployment cannot run, in estimate's words (serve.estimate._refuse_unfit: what one sequence needs per
    GPU against what the engine leaves, and what to change), as `estimate` refuses the same deployment; its generic
    line where estimate prices it after all (a file's scheduler flags it does not take)."""
    from llm_codesign.serve.estimate import estimate
    from llm_codesign.spec.plan import Workload

    # once per deployment and lengths: a memory fit, which no calibration moves (calibrate re-prices the rows every pass)
    key = (model.name, gpu.id, prec, engine.name, spec, tuple(int(x) for x in plan.sizes), num_gpus, isl, osl, max_num_tokens, kv_fraction)
    if key not in _CANNOT_RUN:
        _CANNOT_RUN[key] = "the model and one sequence do not fit in this plan's GPU memory"
        try:
            dep = Deployment(gpu=gpu, num_gpus=num_gpus, plan=plan, precision=prec, backend=engine.name, spec=spec,
                             max_num_tokens=max_num_tokens, kv_fraction=kv_fraction)
            estimate(model, dep, Workload(isl=isl, osl=osl, concurrency=1), calibration=cal)
        except InputError as e:
            _CANNOT_RUN[key] = f"{e.value} cannot run: {e.valid}"
    return _CANNOT_RUN[key]


_CANNOT_RUN: dict[tuple, str] = {}


def _sizes_off(a: dict, j: int, line: int, is_moe: bool) -> str:
    """A row whose parallel sizes (`a`, column -> array over a group's rows; row `j`, the file's `line`) do not
    multiply to its num_gpus, with its own sizes: spec.plan.validity's products (Plan.gpus, Plan.moe_gpus), kvp 1 (a
    serving file states none)."""
    p = Plan(*(int(a[k][j]) for k in ("tp", "pp", "ep", "moe_tp", "attention_dp")), 1)
    n, attn, moe = int(a["num_gpus"][j]), int(p.gpus), int(p.moe_gpus)
    off = [f"tp {p.tp} x attention_dp {p.adp} x pp {p.pp} = {attn} GPUs"] if attn != n else []
    off += [f"ep {p.ep} x moe_tp {p.moe_tp} x pp {p.pp} = {moe} GPUs"] if is_moe and moe != n else []
    return f"line {line}: {' and '.join(off)}, num_gpus {n} (the parallel sizes must multiply to the GPU count)"


def _offline_best(objs: tuple, a: dict, *, out: dict, offline, lengths, sub: list[dict]) -> None:
    """Offline rows (no concurrency) take, in `out`, the metrics of the batch that gives the most
    output tok/s/GPU among those that fit, over the batch grid. On TensorRT-LLM they are trtllm-bench runs
    (the perf-overview tables: data/measurements/SOURCES.md), priced at the batch and token limits the
    tool picks itself (bench_limits)."""
    model, gpu, prec, engine, spec, cal = objs
    isl, osl, mnt = lengths
    oi = np.nonzero(offline)[0]
    op = Plan(*(x[oi, None] for x in (a["tp"], a["pp"], a["ep"], a["moe_tp"], a["attention_dp"], np.ones(len(offline), dtype=np.int64))))
    grid = BATCH_GRID[None, :] * a["attention_dp"][oi, None]
    flags = None
    if engine.name == TRTLLM.name:  # any build of it (Engine.without keeps the name, not the object)
        per_rank, tokens, flags = bench_limits(model, gpu, prec, a, oi, isl=isl[oi], osl=osl[oi], sub=[sub[i] for i in oi])
        mnt = mnt.copy()
        mnt[oi] = np.where([bool((sub[i].get("max_num_tokens") or "").strip()) for i in oi], mnt[oi], tokens)
        # the tool's own limit is one of the loads tried: the grid steps 7% apart
        grid = np.concatenate([grid, (per_rank * a["attention_dp"][oi])[:, None]], axis=1)
    g = evaluate(model, Serving(gpu=gpu, prec=prec, plan=op, engine=engine, spec=spec, max_num_tokens=mnt[oi, None]), cal=cal,
                 concurrency=grid, isl=isl[oi, None], osl=osl[oi, None], flags=flags, arrival=OFFLINE_ARRIVAL, offline=True)
    thr = np.where(g["fits"], g["output_tok_s_per_gpu"], -1.0)
    best = np.argmax(thr, axis=1)[:, None]
    out["ttft_ms"][oi] = np.take_along_axis(np.broadcast_to(g["ttft_s"], thr.shape), best, 1)[:, 0] * 1e3
    out["tpot_ms"][oi] = np.take_along_axis(np.broadcast_to(g["tpot_s"], thr.shape), best, 1)[:, 0] * 1e3
    out["output_tok_s_per_gpu"][oi] = np.where(thr.max(axis=1) > 0, thr.max(axis=1), np.nan)
    out["output_tok_s_per_user"][oi] = 1e3 / out["tpot_ms"][oi]


def bench_limits(model, gpu, prec, a: dict, oi, *, isl, osl, sub: list[dict]) -> tuple[np.ndarray, np.ndarray, SchedulerFlags]:
    """trtllm-bench's limits for offline rows `oi` (spec.engines.trtllm_bench): the running requests per
    attention-DP rank (max_batch_size, which each rank's scheduler applies, per pipeline micro-batch, times the
    stages: the model's running batch counts every micro-batch in flight), max_num_tokens, and the SchedulerFlags that hold the running batch
    to it with the KV fraction the pages ran (trtllm_bench.KV_FRACTION). The v0.17 tables ran the TensorRT
    engine flow (`trtllm-bench build`), which builds the estimate as it is and chunks prompts; v0.20 and v1.0 the
    PyTorch flow, whose chunked prefill is off (whole prompts a step: serve.aggregated.prompt_budget). The running
    batch is still what the KV cache holds where that is less."""
    engine_flow = np.array(["tensorrt engine backend" in (r.get("source") or "").lower() for r in sub])
    # --tp counts the attention-DP ranks too (its TP group runs attention data-parallel: enable_attention_dp)
    tool_tp = a["tp"][oi] * a["attention_dp"][oi]
    bs, tokens = trtllm_bench.settings(model, gpu, prec, tp=tool_tp, pp=a["pp"][oi], isl=isl, osl=osl, chunked_prefill=engine_flow)
    per_rank = bs * a["pp"][oi]
    # its CUDA graphs pad every batch up to its max_batch_size (get_settings: cuda_graph_config enable_padding, max_batch_size,
    # tensorrt_llm/bench/benchmark/utils/general.py@0171265e, @c0b2ee6e), not the LLM API's default capture
    flags = SchedulerFlags(max_running_requests=per_rank[:, None], kv_fraction=np.full((len(oi), 1), trtllm_bench.KV_FRACTION),
                           chunked_prefill=engine_flow[:, None], cuda_graph_max_bs=bs[:, None])
    return per_rank, tokens, flags


def columns_read(rows: list[dict]) -> dict:
    """A serving file's columns that nothing reads (`not_read`: a misspelt `tpot_msec` was ignored without a word) and
    the measured metrics it has no column for (`absent_metrics`: those are not compared)."""
    head = list(rows[0]) if rows else []
    return {"not_read": [c for c in head if c not in (*SERVING_COLUMNS, *OPTIONAL_COLUMNS, *POOL_COLUMNS, "decode_max_batch", "framework")],
            "absent_metrics": [m for m in METRICS if m not in head]}


def serving_report(rows: list[dict], preds: list[dict], unmodeled: list[dict]) -> dict:
    def stats(sel):
        out = {}
        for m in METRICS:
            y = np.array([float(rows[i][m]) if (rows[i].get(m) or "").strip() and preds[i] else np.nan for i in sel])
            p = np.array([preds[i].get(m, np.nan) if preds[i] else np.nan for i in sel])
            ok = np.isfinite(y) & np.isfinite(p) & (y > 0)
            if ok.any():
                out[m] = error_stats(p[ok], y[ok])
        return out

    idx = list(range(len(rows)))
    rep = {"rows": len(rows), "modeled": len(rows) - len(unmodeled), "overall": stats(idx), "by": {}}
    names: dict[tuple[str, str], str] = {}

    def resolved(key: str, text: str) -> str:
        """A priced row's model, GPU and engine by what they resolve to ("meta-llama/Llama-3.1-70B" and "llama-3.1-70b" are
        one model, as predict_serving priced them), once per name."""
        if (key, text) not in names:
            get = {"model": lambda x: get_model(x).name, "gpu": lambda x: get_gpu(x).id, "backend": lambda x: get_engine(x or "trtllm").name}
            try:
                names[key, text] = get[key](text)
            except (InputError, KeyError, ValueError):
                names[key, text] = text
        return names[key, text]

    def group(r: dict, key: str) -> str:
        if key == "concurrency":
            return concurrency_band(r)
        if key == "lengths":  # the workload shape, ISL/OSL as priced: some miss by it (docs/accuracy.md, known limits)
            return f"{_int(r, 'isl')}/{_int(r, 'osl')}"
        if key in ("model", "gpu", "backend"):
            return resolved(key, (r.get(key) or "").strip())
        return r.get(key, "")

    for key in ("gpu", "weight_dtype", "model", "backend", "concurrency", "lengths"):
        groups: dict[str, list[int]] = {}
        for i in idx:
            if preds[i]:
                groups.setdefault(group(rows[i], key), []).append(i)
        order = ((*BAND_NAMES, "offline") if key == "concurrency" else
                 sorted(groups, key=lambda g: tuple(int(x) for x in g.split("/"))) if key == "lengths" else sorted(groups))
        rep["by"][key] = {g: stats(groups[g]) for g in order if g in groups}
    rep["unmodeled"] = unmodeled
    # runs the memory model says cannot run, priced and counted with its check bypassed (predict_serving): evidence against it
    rep["memory_refused"] = [{"row": i, "source": rows[i].get("source", ""), "reason": p["memory_refused"], "short_gb": p["memory_short_gb"]}
                             for i, p in enumerate(preds) if p and p.get("memory_refused")]
    rep["columns"] = columns_read(rows)
    cleaned = audit.clean(rows)
    rep["data_checks"] = {**audit.summary(cleaned[1]), "changes": cleaned[1], "repeatability": audit.repeatability(rows, preds, cleaned)}
    # the sample's recorded TensorRT-LLM builds no known release format reads (priced as no build): said only where any
    if unparsed := campaigns.unparsed_builds():
        rep["data_checks"]["unparsed_builds"] = unparsed
    return rep


def kernel_report(path: str | Path, profile: str | None = None) -> tuple[dict, list[dict], np.ndarray]:
    kind, rows = kernels.read_csv(path)
    pred, label = kernels.predict(kind, rows, lambda g: calibration_for(g, profile))
    y = np.array([float(r["latency_ms"]) if not lab.startswith("unmodeled: line") else np.nan for r, lab in zip(rows, label, strict=True)])
    unmodeled = [{"row": i, "reason": lab.removeprefix("unmodeled: ")} for i, lab in enumerate(label) if lab.startswith("unmodeled")]
    ok = np.isfinite(pred)
    if not ok.any():  # nothing to report on: an error, not an empty table
        reasons = sorted({u["reason"] for u in unmodeled})
        raise InputError("kernels", str(path), f"a table with at least one row the model can price; none of its {len(rows)} rows is "
                         f"({'; '.join(reasons[:2])}{'; ...' if len(reasons) > 2 else ''})")
    groups: dict[str, list[int]] = {}
    for i, lab in enumerate(label):
        if ok[i]:
            groups.setdefault(lab, []).append(i)
    rep = {"kind": kind, "rows": len(rows), "modeled": int(ok.sum()),
           "overall": {"latency_ms": error_stats(pred[ok], y[ok])},
           "by": {g: {"latency_ms": error_stats(pred[s], y[s])} for g, s in sorted(groups.items())},
           "unmodeled": unmodeled}
    return rep, rows, pred


# disaggregated runs: a prefill pool and a decode pool, each with its own plan
POOL_COLUMNS = audit.POOL_FIELDS  # per pool: instances, GPUs per instance, attention TP, attention-DP ranks, EP
POOLS = ("prefill", "decode")


def is_disagg(rows: list[dict]) -> bool:
    return bool(rows) and all(c in rows[0] for c in POOL_COLUMNS)


def _pool_problem(r: dict, line: int) -> str | None:
    """Why a row's pools cannot be priced as recorded (sizes that do not add up), or None."""
    for c in POOL_COLUMNS:
        v = (r.get(c) or "").strip()
        if not v or not v.replace(".", "", 1).isdigit() or float(v) < 1 or not float(v).is_integer():
            return f"line {line} {c}: {v!r} is not valid; a whole number of at least 1"
    for pool in POOLS:
        g = _int(r, f"{pool}_gpus_per_instance")
        if _int(r, f"{pool}_tp") * _int(r, f"{pool}_attention_dp") != g:
            return (f"{pool}_gpus_per_instance {g} is not {pool}_tp x {pool}_attention_dp "
                    f"({_int(r, f'{pool}_tp')} x {_int(r, f'{pool}_attention_dp')}): the pool's plan is not recorded")
    pools = sum(_int(r, f"{p}_instances") * _int(r, f"{p}_gpus_per_instance") for p in POOLS)
    if pools != _int(r, "num_gpus"):
        # one reason for every such row, so that a report counts them together
        return "num_gpus is not the pools' GPUs (instances x GPUs per instance, both pools): the instances' plans are not recorded"
    return None


def _plan(rows: list[dict], pool: str, is_moe: bool) -> Plan:
    tp = np.array([_int(r, f"{pool}_tp") for r in rows])
    adp = np.array([_int(r, f"{pool}_attention_dp") for r in rows])
    ep = np.array([_int(r, f"{pool}_ep") for r in rows]) if is_moe else np.ones(len(rows), dtype=np.int64)
    # the experts' tensor split is what EP leaves of the instance's GPUs (Plan.parse)
    moe_tp = np.maximum(tp * adp // ep, 1) if is_moe else np.ones(len(rows), dtype=np.int64)
    return Plan(tp, np.ones(len(rows), dtype=np.int64), ep, moe_tp, adp, np.ones(len(rows), dtype=np.int64))


def pool_deployment(gpu, plan: Plan, prec: Precision, *, engine, spec=None, max_num_tokens=None) -> Deployment:
    """One instance of a disaggregated pool as serve.disagg.evaluate_disagg takes it; the plan's sizes
    (and the step budget) may be arrays over rows, and so then is num_gpus."""
    return Deployment(gpu=gpu, num_gpus=plan.gpus, plan=plan, precision=prec, backend=engine.name, spec=spec, max_num_tokens=max_num_tokens)


def _pool_unlaunched(r: dict, line: int) -> str | None:
    """A pool plan the row's engine has no launch for (Engine.plan_refusal: TensorRT-LLM's attention DP x TP), as a row's
    reason, where an array Deployment of every row's pools would refuse them all: the plan _plan prices, for the row's
    model's experts or none."""
    try:
        engine, moe = get_engine(r.get("backend") or TRTLLM.name), get_model(r["model"]).is_moe
    except (InputError, KeyError):
        return None  # row_problem or _resolve names it
    for pool in POOLS:
        try:
            check_runs(engine, None, _plan([r], pool, moe), moe=moe)
        except InputError as e:
            return f"line {line} {pool} {e}"
    return None


def _disagg_problem(r: dict, line: int) -> str | None:
    why = row_problem(r, line) or _pool_problem(r, line) or _pool_unlaunched(r, line)
    if not why and not (r.get("concurrency") or "").strip():
        why = f"line {line} concurrency: '' is not valid; disaggregated rows are priced at a stated concurrency"
    return why


def _decode_graphs(setting: dict, max_batch: float) -> float:
    """A disaggregated row's decode capture (largest batch per rank, padded) from its campaign's settings: the recipe's
    number, or its workers' max batch size where the recipe captures up to it (inf where the row records none: no batch
    the workers run is above it); NaN where the campaign names none (the engine's default, serve.disagg.decode_pool)."""
    if "decode_cuda_graph_max_bs" in setting:
        return float(setting["decode_cuda_graph_max_bs"])
    return float(max_batch) if setting.get("decode_graphs_to_max_batch") else float("nan")


def predict_disagg(rows: list[dict], profile: str | None = None, cal_override=None) -> tuple[list[dict], list[dict]]:
    """Disaggregated rows (is_disagg): per row, predictions (METRICS, plus `fits`) or an `unmodeled`
    reason, as predict_serving. Both pools' plans (attention TP or attention-DP ranks x TP, EP, MoE TP
    what EP leaves), the instance counts, concurrency and ISL/OSL (as recorded) go to
    serve.disagg.evaluate_disagg, with the decode worker's max batch per attention-DP rank where the row
    records it (decode_max_batch), and the harness's arrival pattern and prefill routing (the campaign's; a
    group takes its first row's). A row whose num_gpus is not the two pools' GPUs, or whose GPUs per instance are not
    its plan's, lists its reason instead of a guess."""
    preds: list[dict] = [{} for _ in rows]
    groups, unmodeled = _grouped(rows, profile, cal_override, _disagg_problem)
    for (model, gpu, prec, engine, spec, cal), idx in groups:
        sub = [rows[i] for i in idx]
        plans = {p: _plan(sub, p, model.is_moe) for p in POOLS}
        codes = []
        for p in POOLS:
            c = np.asarray(validity(model, gpu, plans[p], plans[p].gpus)).reshape(-1)
            # a pool spanning nodes over TP is unusual but priced over the network, as in aggregated rows
            codes.append(np.where(c == REASONS.index("scale_up"), -1, c))
        col = {k: np.array([float(_int(r, k)) for r in sub]) for k in ("isl", "osl", "concurrency", "prefill_instances", "decode_instances")}
        mnt = np.array([float(_int(r, "max_num_tokens") if (r.get("max_num_tokens") or "").strip()
                              else engine.step_tokens(gpu)) for r in sub])
        # the decode engine's batch limit per attention-DP rank (TensorRT-LLM max_batch_size, SGLang
        # max-running-requests over its DP ranks) where the run recorded it; blank: only the KV cache limits it
        dmb = np.array([float(_int(r, "decode_max_batch", 0)) or np.inf for r in sub])
        pools = [pool_deployment(gpu, plans[p], prec, engine=engine, spec=spec, max_num_tokens=mnt) for p in POOLS]
        # the harness's arrival pattern, the campaign's (data/measurements/campaigns.toml) or the row's own, as for aggregated rows
        # and how its prefill instances route requests to their attention-DP ranks, where the campaign says
        setting = campaigns.settings(sub[0])
        # the decode server's polls for new requests, per row: a campaign's entries name it by the row's pools (its recipe)
        recv = np.array([float(campaigns.settings(r).get("decode_recv_interval", 1.0)) for r in sub])
        # an SGLang build before 0.5.10 streams the first token a loop after its decode server sees the cache
        late = np.array([campaigns.first_token_next_loop(r) for r in sub])
        # the decode servers' MoE exchange where the recipe names one (the group's GPU and engine's: a campaign's entries name it by both)
        a2a = setting.get("decode_moe_a2a", "")

        with np.errstate(divide="ignore", invalid="ignore"):
            res = evaluate_disagg(model, *pools, calibration=cal, prefill_instances=col["prefill_instances"],
                                  decode_instances=col["decode_instances"], concurrency=col["concurrency"], isl=col["isl"], osl=col["osl"],
                                  decode_max_batch=dmb, arrival=setting["arrival"], prefill_routing=setting.get("prefill_routing"),
                                  decode_recv_interval=recv, first_token_next_loop=late, decode_moe_a2a=a2a,
                                  decode_cuda_graph_max_bs=np.array([_decode_graphs(campaigns.settings(r), dmb[j]) for j, r in enumerate(sub)]))
        out = {"ttft_ms": res["ttft_s"] * 1e3, "tpot_ms": res["tpot_s"] * 1e3,
               "output_tok_s_per_gpu": res["output_tok_s_per_gpu"], "output_tok_s_per_user": res["tok_s_per_user"]}
        out = {k: np.broadcast_to(v, (len(idx),)).astype(float) for k, v in out.items()}
        fits = np.broadcast_to(res["fits"], (len(idx),))
        holds = np.broadcast_to(res["prefill_fits"], (len(idx),)) & (np.broadcast_to(res["max_concurrency"], (len(idx),)) >= 1)
        for j, i in enumerate(idx):
            bad = [(p, int(c[j])) for p, c in zip(POOLS, codes, strict=True) if c[j] >= 0]
            if bad:
                p, c = bad[0]
                unmodeled.append({"row": i, "source": rows[i].get("source", ""), "reason": f"{p} pool: {reason_text(model, gpu, c)}"})
                preds[i] = {}
            elif not holds[j] or not all(np.isfinite(out[k][j]) and out[k][j] > 0 for k in METRICS):
                unmodeled.append({"row": i, "source": rows[i].get("source", ""),
                                  "reason": "the model does not fit in a pool's GPU memory (weights and one sequence)"})
                preds[i] = {}
            else:
                preds[i] = {k: float(out[k][j]) for k in METRICS}
                preds[i]["fits"] = bool(fits[j])
    return preds, unmodeled
