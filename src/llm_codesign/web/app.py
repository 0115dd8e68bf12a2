"""The local web page's server: a FastAPI app over the public API (`llm_codesign.api`).

The JSON API exists for the page (static/index.html, static/app.js) and nothing else; every response
is what the CLI's `--json` prints for the same inputs, computed by the same functions. Every error is
`{"error": one line naming the field, "field": its JSON path}` (`body` for the body itself; null where
no field is at fault): bad input is a 422 (pydantic's check, or the core's InputError), a body that is
not JSON a 422 naming its line and column, one over MAX_BODY bytes a 413, a search while `max_busy`
run a 429 with Retry-After, a search past its time budget a 503; a bug is a 500 in the same shape,
answered rather than raised, so the connection stays open.
FastAPI and uvicorn are the optional extra `serve`; the page draws its plot itself (SVG, as the HTML
report does), so it loads no library and needs no network.

What a request can reach, audited field by field (issue 36): no request opens a file outside the
package or a socket.

- `model`, `baseline`: the registry's index (spec.registry._index) or a pasted `config`; with
  `serve --hub-cache`, also an `org/name[@revision]` already in the local Hugging Face cache
  (spec.hub.get_hub_model local_only: no download). Never registry.get_model's path branch, nor
  hub.looks_like_repo (it stats the path).
- `config`: a dict checked by spec.model.from_hf_config; nothing in it is a path that is read.
- `draft_model`, `deployment.draft_model`: the registry only: the cost model resolves the draft again by its name
  (serve.aggregated.draft_model -> registry.get_model), which reads a path or fetches from the Hub.
- `gpu`, `gpus[]`, `decode_gpu`, `what_if.base`: catalog ids; a `.toml` name (hardware.get_gpu reads a file for one)
  is refused first. `deployment.gpu` is replaced by the request's `gpu`.
- `engine`, `deployment.backend`: a registered engine's name that runs on the GPU (spec.engines.engine_for), omitted:
  the GPU vendor's; dtypes, `regime`,
  `spec`, `deployment.spec`: names looked up in fixed tables.
- nothing else reaches a reader: the calibration is the GPU family's bundled profile, the quality and
  accuracy-proxy constants the bundled ones. DASK_SCHEDULER_ADDRESS, the operator's environment and
  no request's, is the one thing that sends a design's chunks over a socket.
"""

import asyncio
import json
import logging
import re
import sys
import threading
import time
import types
import typing
from dataclasses import replace
from importlib import resources
from typing import Annotated, Any, Literal, Optional, Union

import annotated_types
from pydantic import AliasChoices, AllowInfNan, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_serializer
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from llm_codesign.errors import InputError
from llm_codesign.explore import DESIGN_GPU, DESIGN_TOP
from llm_codesign.serve.metrics import NO_DECODE_WHY
from llm_codesign.spec.engines import engine_for, engine_for_pools, engine_names
from llm_codesign.spec.hardware import WHAT_IF_FIELDS  # also a GPU file's with `base`: spec.hardware.what_if
from llm_codesign.spec.harness import ARRIVALS, DEFAULT_ARRIVAL, MAX_RECV_INTERVAL, check_arrival
from llm_codesign.spec.plan import K_TEXT, MAX_CONCURRENCY, MAX_STEP_TOKENS, read_tokens

STATIC = resources.files("llm_codesign.web") / "static"
# at most one NVL72 rack: any count up to 72 has at most 12 divisors, so a search visits < 0.4 M plans
# (the CLI's bound is 4 M, cli/common.py check_search_size) and the page answers in seconds
MAX_SERVE_GPUS = 72
MAX_TOKENS = MAX_STEP_TOKENS  # the CLI's and the API's bound on a request's and a step's tokens
# a pasted config.json is kilobytes (DeepSeek-R1's 1.7 kB; the largest bundled, Nemotron Super 49B's, 37 kB):
# past 1 MiB a body is no request of the page's
MAX_BODY = 1 << 20
# searches at once, and the seconds one may run (`serve --max-busy`, `--time-budget`): a 5,000-candidate
# design takes 10-20 s alone on two vCPUs, and four at once ran 69 s each in 1.38 GB (issue 36)
MAX_BUSY = 3
TIME_BUDGET_S = 60.0
RETRY_AFTER_S = 5
Engine = Literal[engine_names()]  # the registry's engines (spec/engines/)
Regime = Literal["latency", "throughput", "long-context"]


def _not_bool(v):
    """JSON's true and false are no numbers: pydantic's lax mode reads true as 1 (issue 36)."""
    if isinstance(v, bool):
        raise PydanticCustomError("bool_not_number", "Input should be a number, not true or false")
    return v


Int = Annotated[int, BeforeValidator(_not_bool)]


def _tokens(v):
    """A request's isl/osl as the CLI's --isl/--osl take them (spec.plan.read_tokens): an integer or a whole number of k
    ("1k", InferenceX's), else the CLI's one line with the range (newc12 #6: "1k" was refused in pydantic's words)."""
    try:
        return read_tokens(v, 1, MAX_TOKENS)[0]
    except ValueError:
        raise PydanticCustomError("token_count", f"an integer from 1 to {MAX_TOKENS:,}, {K_TEXT}") from None


Tokens = Annotated[int, BeforeValidator(_tokens)]
Float = Annotated[float, AllowInfNan(allow_inf_nan=False), BeforeValidator(_not_bool)]  # json.loads reads NaN and Infinity


# the engine's names in a request: `engine`, or `backend` as the CLI (--backend), lc's keywords and every answer name it, so
# an answer's fields can be sent back (a 422 "Extra inputs are not permitted" refused `backend`, newc5 #1)
ENGINE_NAMES = AliasChoices("engine", "backend")


def _price_form(v):
    """`gpu_hour_price`: a number or `bundled`; a price file's path (estimate --gpu-hour-price FILE) is not read by a server."""
    if isinstance(v, str) and v != "bundled":
        try:
            float(v)
        except ValueError:
            raise PydanticCustomError("price_form", "Input should be dollars per GPU-hour or `bundled` (a price file's path is not "
                                      "read by the server)") from None
    return v


GPU_RANGE = re.compile(r"^\s*(\d{1,7})\s*-\s*(\d{1,7})\s*$")


def _gpu_count(v):
    """/api/pareto's `num_gpus` as pareto's --gpus takes it: a count, or a range of instance sizes "8-72" (kept as that
    text; _pareto reads it as the CLI does: num_gpus the top, instance_gpus each size), newc6 #22."""
    if isinstance(v, str):
        m = GPU_RANGE.match(v)
        if m and 1 <= int(m[1]) <= int(m[2]) <= MAX_SERVE_GPUS:
            return f"{int(m[1])}-{int(m[2])}"
        v = int(v) if v.strip().isdigit() else v
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_SERVE_GPUS:
        return v
    raise PydanticCustomError("gpu_count", f"a whole number of GPUs from 1 to {MAX_SERVE_GPUS}, or a range of instance sizes "
                              f"as pareto --gpus takes it ('8-{MAX_SERVE_GPUS}')")


def _one_gpu(v):
    """/api/pareto's `gpus` given as one id (its `gpu` alias, as /api/estimate takes it): a list of that one."""
    return [v] if isinstance(v, str) else v


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


class PointDeployment(_Req):
    """A frontier point's `deployment` record, as /api/pareto returns it (explore.frontier.FrontierPoint.record: every key
    Deployment.to_dict writes, the launch options included); any other key is refused, a typo a 422 naming it (review crev #10)."""
    gpu: Optional[str] = Field(None, max_length=100, description="Replaced by the request's `gpu`.")
    num_gpus: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS,
                                    description="GPUs of one instance (else `instance_gpus`, else the plan's).")
    plan: Optional[str] = Field(None, max_length=100, description="The plan's label (not read: the sizes are).")
    tp: Int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    pp: Int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    ep: Int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    moe_tp: Int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    attention_dp: Int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    kvp: Int = Field(..., ge=1, le=MAX_SERVE_GPUS)
    weight_dtype: str = Field(..., max_length=40)
    activation_dtype: str = Field(..., max_length=40)
    kv_dtype: str = Field(..., max_length=40)
    attn_weight_dtype: Optional[str] = Field(None, max_length=40)
    backend: Optional[Engine] = Field(None, validation_alias=AliasChoices("backend", "engine"), description="Omitted: the GPU vendor's engine.")
    spec: Optional[str] = Field(None, max_length=40)
    draft_len: Int = Field(0, ge=0, le=16)
    acceptance: Optional[Float] = Field(None, ge=1, le=17)
    acceptance_rates: list[Float] = Field(default_factory=list, max_length=16)
    draft_model: Optional[str] = Field(None, max_length=300, description="A bundled model (or one of its Hugging Face ids).")
    max_num_tokens: Optional[Int] = Field(None, ge=1, le=MAX_TOKENS)
    cpp: StrictBool = False
    instance_gpus: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    replicas: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    concurrency_per_instance: Optional[Int] = Field(None, ge=1, le=MAX_CONCURRENCY,
                                                    description="The point's batch (else the request's `concurrency`).")
    # the launch options a record carries where its deployment states them (Deployment.to_dict; absent: the engine's own)
    chunked_prefill: Optional[StrictBool] = Field(None, description="Prompts split over steps (absent: the engine's default).")
    kv_fraction: Optional[Float] = Field(None, gt=0, le=1, description="The share of memory the KV budget takes (absent: the engine's).")
    cuda_graph_max_bs: Optional[Int] = Field(None, ge=0, le=MAX_CONCURRENCY, description="The largest captured decode batch; 0: eager.")
    piecewise_graphs: StrictBool = Field(default=False, description="vLLM's piecewise decode graphs.")
    max_batch: Optional[Int] = Field(None, ge=1, le=MAX_CONCURRENCY, description="The engine's batch cap per attention-DP rank.")
    weight_groups: Optional[dict[str, Int]] = Field(None, description="A checkpoint's own INT4 groups (group_size, scale_bits), "
                                                    "where not int4's default 32 and 16.")


class WhatIfGpu(_Req):
    """A what-if GPU: a catalog GPU with some of its figures changed, checked by the edge checks a GPU
    TOML gets (spec.validation.check_gpu). Figures left out keep the base's; it keeps the base's
    family (so its calibration), SMs, tiles, caches and NIC."""
    base: str = Field("h200", max_length=100, description="The catalog GPU it starts from.")
    id: str = Field("what-if", max_length=40, description="Its name in the results; none of the catalog's GPUs.")
    hbm_tb_s: Optional[Float] = Field(None, description="HBM bandwidth, TB/s.")
    memory_gb: Optional[Float] = Field(None, description="Memory the driver reports, in GB of 1e9 bytes, not the GiB `gpus` prints "
                                             "(the H200's 140.4 GiB is 150.75).")
    bf16_tflops: Optional[Float] = Field(None, description="Dense BF16 TFLOP/s.")
    fp8_tflops: Optional[Float] = Field(None, description="Dense FP8 TFLOP/s (0: none).")
    fp4_tflops: Optional[Float] = Field(None, description="Dense FP4 TFLOP/s (0: none).")
    scale_up_gb_s: Optional[Float] = Field(None, description="Scale-up (NVLink, AMD's Infinity Fabric) bandwidth per GPU, one direction, GB/s.")
    scale_up_domain: Optional[Int] = Field(None, description="GPUs in one scale-up domain (on a mesh base, MI300X, a domain other than its own is priced switched).")


class WhatIf(_Req):
    what_if: Optional[WhatIfGpu] = Field(None, description="A what-if GPU, named by its `id` wherever a GPU is.")


SpecMethod = Literal["none", "mtp", "eagle3", "draft", "ngram"]
# how requests arrive, as every pricing command's --arrival (spec.harness: checked there, its one line a 422 naming `arrival`)
ARRIVAL_HELP = (f"How requests arrive, one of {', '.join(ARRIVALS)} (--arrival): {DEFAULT_ARRIVAL}, identical requests kept in step "
                "by a closed loop; closed_loop, one request per freed slot (bench_serving --max-concurrency); burst, all at once. "
                "The TTFT turns on it.")


class Speculation(_Req):
    """Speculative decoding, as estimate's, disagg's and pareto's --spec, --draft-len, --acceptance,
    --acceptance-rates and --draft-model take it."""
    spec: Optional[SpecMethod] = Field(None, description="The drafter: mtp, eagle3, draft (a separate draft model) or ngram (prompt lookup, no draft model; "
                                                         "vllm, sglang or trtllm, its acceptance required); none or omitted: none.")
    draft_len: Optional[Int] = Field(None, ge=1, le=16, description="Draft tokens per step (default 3, or one per acceptance rate).")
    acceptance: Optional[Float] = Field(None, ge=1, le=17, description="Mean tokens a step emits, 1 to draft_len + 1.")
    acceptance_rates: Optional[list[Annotated[Float, Field(ge=0, le=1)]]] = Field(
        None, min_length=1, max_length=16, description="Per-position acceptance probabilities, one per draft token (instead of `acceptance`).")
    draft_model: Optional[str] = Field(None, max_length=300, description="With spec draft: a bundled model (or one of its Hugging Face ids).")


class EstimateRequest(ModelRef, Precisions, WhatIf, Speculation):
    gpu: str = Field(..., max_length=100)
    num_gpus: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    tp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    pp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    ep: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    moe_tp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    attention_dp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    kvp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    engine: Optional[Engine] = Field(None, validation_alias=ENGINE_NAMES, description="Omitted: the GPU vendor's (TensorRT-LLM on NVIDIA's, SGLang on AMD's).")
    isl: Tokens = Field(1024)
    osl: Tokens = Field(1024)
    concurrency: Optional[Int] = Field(None, ge=1, le=MAX_CONCURRENCY, description="Requests in flight; omit for offline max throughput.")
    arrival: str = Field(DEFAULT_ARRIVAL, max_length=40, description=ARRIVAL_HELP)
    breakdown: StrictBool = False
    deployment: Optional[PointDeployment] = Field(
        None, description="A frontier point's `deployment` record: priced at its batch, with the point's per-operator breakdown.")
    cuda_graph_max_bs: Optional[Int] = Field(None, ge=0, le=MAX_CONCURRENCY, description=(
        "Largest decode batch per rank replayed from a CUDA graph, smaller ones padded up; 0: none, every decode step eager "
        "(estimate --cuda-graph-max-bs); "
        "omitted: the engine's default (TensorRT-LLM's: 1-32, 64 and 128 unpadded)."))
    export: StrictBool = Field(default=False, description="Also the engine's launch configuration (`export`), as a frontier point's has it.")
    # the rest of `estimate --help` (newc6 #19; tests/test_web.py checks each CLI option is a field here or named display-only)
    replicas: Int = Field(1, ge=1, le=MAX_SERVE_GPUS, description="Copies of the instance behind a load balancer (estimate --replicas): "
                          "priced once, the GPUs, requests in flight and total tok/s said for all (`replicas` in the answer).")
    max_num_tokens: Optional[Int] = Field(None, ge=1, le=MAX_TOKENS, description="The engine's token budget per step (--max-num-tokens).")
    cpp: StrictBool = Field(default=False, description="Chunked pipeline parallelism for prefill (--cpp).")
    max_batch: Optional[Int] = Field(None, ge=1, le=MAX_CONCURRENCY, description="The engine's batch cap per attention-DP rank (--max-batch).")
    chunked_prefill: Optional[StrictBool] = Field(None, description=(
        "Whether the engine splits a prompt over steps (--chunked-prefill); omitted: the engine's default (TensorRT-LLM off: "
        "a prompt over a max_num_tokens given is refused, as the engine refuses it)."))
    prefix_hit: Float = Field(0.0, ge=0, lt=1, description="Share of each prompt already in the prefix cache, 0 to <1 (--prefix-hit).")
    gpu_hour_price: Annotated[Optional[Union[Annotated[Float, Field(gt=0)], Literal["bundled"]]], BeforeValidator(_price_form)] = Field(
        None, description="Dollars per GPU-hour, or `bundled` (the cited data/prices.toml): adds $ per million tokens (`cost`). "
        "A price file's path is not read by the server.")
    calibration: Optional[str] = Field(None, max_length=MAX_BODY, description="A calibration profile's content, the TOML text "
                                       "(--calibration's file); a path is not read by the server.")


class PoolPlan(_Req):
    """One pool's instance plan (disagg's --prefill/--decode sizes) and how many instances run it."""
    tp: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    pp: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    ep: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    moe_tp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS, description="Default: what EP leaves of a stage's GPUs (MoE models).")
    attention_dp: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    kvp: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)
    instances: Int = Field(1, ge=1, le=MAX_SERVE_GPUS)


# a pool's plan in either form the project takes: the CLI's and lc.disagg's text, or the page's object
POOL_OBJECT = 'an object ({"tp": 4, "instances": 1})'
POOL_FORMS = f'a plan as text, as disagg --prefill/--decode and lc.disagg take it ("tp=4", "attention_dp=8,ep=8"), or {POOL_OBJECT}'


def _pool_form(v, info):
    """A pool given as the CLI's text is parsed by the CLI's parser (spec.plan.Plan.parse: its one-line refusal names the
    field) into the object's sizes; moe_tp only where the text names it (else what EP leaves, as the CLI's default).
    Neither text nor an object: one line naming both forms (pydantic's own said only "a valid dictionary")."""
    from types import SimpleNamespace

    from llm_codesign.spec.plan import PLAN_KEYS, Plan

    if isinstance(v, dict):
        return v
    if not isinstance(v, str) or len(v) > 200:
        raise PydanticCustomError("pool_form", f"Input should be {POOL_FORMS}")
    try:  # the sizes' grammar and bounds: the model only sets moe_tp's default, left to the pricing here
        p = Plan.parse(v, SimpleNamespace(is_moe=False), info.field_name)
    except InputError as e:
        raise PydanticCustomError("pool_form", f"{e.valid}, or {POOL_OBJECT}") from None
    named = {PLAN_KEYS.get(part.partition("=")[0].strip().lower()) for part in v.split(",")}
    sizes = {"tp": p.tp, "pp": p.pp, "ep": p.ep, "attention_dp": p.adp, "kvp": p.kvp}
    return sizes | ({"moe_tp": p.moe_tp} if "moe_tp" in named else {})


PoolForm = Annotated[PoolPlan, BeforeValidator(_pool_form)]


class DisaggRequest(ModelRef, Precisions, WhatIf, Speculation):
    """What `disagg` takes: prefill instances hand each prompt's KV cache to decode instances."""
    gpu: str = Field(..., max_length=100, description="The prefill instances' GPU (and the decode ones' unless `decode_gpu`).")
    decode_gpu: Optional[str] = Field(None, max_length=100, description="The decode instances' GPU where it differs: the same vendor's as `gpu` (one engine build runs both pools).")
    prefill: PoolForm = Field(..., description="The prefill instance's plan: " + POOL_FORMS + ".")
    decode: PoolForm = Field(..., description="The decode instance's plan: " + POOL_FORMS + ".")
    prefill_instances: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS, description="Prefill instances, as disagg "
                                             "--prefill-instances (or the object's `instances`; default 1).")
    decode_instances: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS, description="Decode instances, as disagg "
                                            "--decode-instances (or the object's `instances`; default 1).")
    concurrency: list[Annotated[Int, Field(ge=1, le=MAX_CONCURRENCY)]] = Field(
        [1, 8, 32, 128, 512], min_length=1, max_length=32, description="Requests in flight, one row each.")
    arrival: str = Field(DEFAULT_ARRIVAL, max_length=40, description=ARRIVAL_HELP)
    engine: Optional[Engine] = Field(None, validation_alias=ENGINE_NAMES, description="Omitted: the GPU vendor's (TensorRT-LLM on NVIDIA's, SGLang on AMD's).")
    isl: Tokens = Field(1024)
    osl: Tokens = Field(1024)
    max_num_tokens: Optional[Int] = Field(None, ge=1, le=MAX_TOKENS)
    decode_max_num_tokens: Optional[Int] = Field(None, ge=1, le=MAX_TOKENS,
                                                 description="The decode instances' token budget per step where it differs from max_num_tokens.")
    decode_max_batch: Optional[Int] = Field(None, ge=1, le=MAX_CONCURRENCY, description="The decode instances' max batch per attention-DP rank.")
    # checked by serve.disagg (PREFILL_ROUTINGS), as `disagg --prefill-routing` is
    prefill_routing: Optional[str] = Field(None, max_length=100, description="How a prefill instance under attention DP spreads "
                                           "requests over its ranks: balanced or random; default: the engine's.")
    decode_recv_interval: Int = Field(1, ge=1, le=MAX_RECV_INTERVAL, description="Decode iterations between the decode workers' "
                                      "polls for new requests (SGLang only: --scheduler-recv-interval on the decode servers, "
                                      "refused under attention DP; 1 elsewhere).")
    # checked by serve.disagg (check_moe_a2a), as `disagg --decode-moe-a2a` is
    decode_moe_a2a: str = Field("", max_length=100, description="The decode servers' MoE token exchange: deepep_low_latency "
                                "(SGLang's --moe-a2a-backend deepep --deepep-mode low_latency: each token's expert copies sent "
                                "to their ranks in place of the all-gather and reduce-scatter; SGLang only, on a decode pool "
                                "with attention DP and EP > 1); empty: the engine's own.")
    decode_cuda_graph_max_bs: Optional[Int] = Field(None, ge=0, le=MAX_CONCURRENCY, description=(
        "The decode instances' CUDA graphs, padded up to this batch per rank (disagg --decode-cuda-graph-max-bs; 0: off); "
        "omitted: the engine's own capture, a batch above it decoding without graphs (the `CUDA graphs: ...` note)."))
    # disagg's --decode-compilation-config / --decode-O read as cli/disagg.py _decode_mode reads them: PIECEWISE is this flag
    # (NONE is decode_cuda_graph_max_bs 0, the FULL modes the default); lc.disagg's keyword, refused off vLLM in its name
    decode_piecewise_graphs: StrictBool = Field(default=False, description=(
        "The decode workers replay vLLM's piecewise CUDA graphs (cudagraph_mode PIECEWISE, or -O1: disagg "
        "--decode-compilation-config / --decode-O): each layer's attention ops launched from the host between the graph pieces. "
        "vLLM only; false: one full decode graph, vLLM's default."))


class ParetoRequest(ModelRef, Precisions, WhatIf, Speculation):
    """What `pareto` takes; with `spec`, draft lengths 1..5 are searched beside none (`draft_len` fixes one)."""
    # `gpu` (one id, as /api/estimate names it) is a one-element `gpus` (newc5 #1)
    gpus: Annotated[list[str], BeforeValidator(_one_gpu)] = Field(..., min_length=1, max_length=8, validation_alias=AliasChoices("gpus", "gpu"),
                                                                  description="One series per GPU id (or `gpu`: one id).")
    num_gpus: Annotated[Union[int, str], BeforeValidator(_gpu_count)] = Field(8, description=(
        "GPUs (replicas of smaller instances fill them), or a range of instance sizes, \"8-72\" (pareto --gpus)."))
    # a size given fixes it, as `pareto --tp ...` does (SearchSpace.build)
    tp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    pp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    ep: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    moe_tp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    attention_dp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    kvp: Optional[Int] = Field(None, ge=1, le=MAX_SERVE_GPUS)
    engine: Optional[Engine] = Field(None, validation_alias=ENGINE_NAMES, description="Omitted: the GPU vendor's (TensorRT-LLM on NVIDIA's, SGLang on AMD's).")
    isl: Tokens = Field(1024)
    osl: Tokens = Field(1024)
    min_tps_user: Optional[Float] = Field(None, ge=0, le=1e7)
    max_ttft_ms: Optional[Float] = Field(None, gt=0, le=1e9)
    arrival: str = Field(DEFAULT_ARRIVAL, max_length=40, description=ARRIVAL_HELP)
    # pareto's --prefix-hit and --max-num-tokens, as lc.pareto takes them (crev12 #6: a 422 unknown field here)
    prefix_hit: Float = Field(0.0, ge=0, lt=1, description="Share of each prompt already in the prefix cache, 0 to <1 (--prefix-hit).")
    max_num_tokens: Optional[Int] = Field(None, ge=1, le=MAX_TOKENS, description="The engine's token budget per step (--max-num-tokens).")
    plot: StrictBool = Field(default=False, description="Also what the HTML report draws (`plot`) and the CSV `pareto --csv` writes (`csv`).")


class LintRequest(ModelRef, Precisions, WhatIf):
    gpu: str = Field(..., max_length=100)
    regime: Regime = "throughput"
    engine: Optional[Engine] = Field(None, validation_alias=ENGINE_NAMES, description="The engine the findings are priced on; omitted: the GPU vendor's.")


class DesignRequest(Precisions, WhatIf):
    params: Float = Field(..., ge=1e6, le=1e14, description="Total-parameter budget, e.g. 8e9.")
    gpu: str = Field(DESIGN_GPU, max_length=100)  # design's defaults are the CLI's and the API's (explore.DESIGN_GPU, DESIGN_TOP)
    num_gpus: Int = Field(8, ge=1, le=MAX_SERVE_GPUS)
    regime: Regime = "throughput"
    moe: StrictBool = False
    active_params: Optional[Float] = Field(None, description="With moe: the active-parameter budget, e.g. 3e9 (design's --active-params; "
                                           "omitted: any).")
    # a bundled name, or a pasted config.json as the model forms take it (docs/bring-your-config.md: "the page takes it where
    # it takes a bundled name"; a dict was a 422 "Input should be a valid string", newc4 #6)
    baseline: Optional[Union[Annotated[str, Field(max_length=300)], dict[str, Any]]] = Field(
        None, description="The model the shapes must match in quality: a registry name, or a pasted config.json (an object).")
    quality_sigmas: Float = Field(1.0, ge=0, le=10, description="Equal quality: a shape's proxy loss at most this many sigma of the "
                                  "difference above the baseline's (design's --quality-sigmas).")
    engine: Optional[Engine] = Field(None, validation_alias=ENGINE_NAMES, description="Omitted: the GPU vendor's (TensorRT-LLM on NVIDIA's, SGLang on AMD's).")
    min_tps_user: Float = Field(20.0, ge=0, le=1e7)
    # the CLI's default (design --max-candidates): the page's #1 is the CLI's for one question (200 thinned 500 admitted
    # 70B shapes to another #1); a search's time goes with the shapes admitted, and check_size bounds it
    max_candidates: Int = Field(20000, ge=1, le=20000, description="At most this many shapes priced, an even spread over the admitted "
                                "ones (design's --max-candidates); the answer's screened.priced below screened.admitted says it thinned.")
    top: Int = Field(DESIGN_TOP, ge=1, le=20)
    rank_all: StrictBool = Field(default=False, description="Rank by the objective alone (design --rank-all); false: rows whose quality "
                                 "the proxy resolves (err ± <= |loss| + ±test) first, the answer's `resolved` counting them.")


# ---- responses: the fields the page reads are typed; the rest of the CLI's record passes through
# each POST path's request model: an unknown key's nearest field is looked up in its own (_unknown_line)
REQUESTS = {"/api/estimate": EstimateRequest, "/api/disagg": DisaggRequest, "/api/pareto": ParetoRequest,
            "/api/lint": LintRequest, "/api/design": DesignRequest}


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
    engines: list[str] = Field(..., description="The engines that run on it (spec.engines.engines_on), the page's engine menu.")
    engine: str = Field(..., description="Its vendor's engine, the one priced where a request names none.")


class Operator(_Open):
    name: str
    kind: str
    time_ms: float
    tpot_ms: Optional[float] = Field(None, description="The row's share of TPOT (ms): a breakdown's rows sum to it.")
    what: Optional[str] = Field(None, description="What a row beyond the step's operators is (host, draft, prompts' stalls).")


class Export(BaseModel):
    engine: str
    file_name: str
    text: Optional[str] = Field(None, description="The file `export-point` writes for this point.")
    error: Optional[str] = Field(None, description="Why the engine cannot run this plan, when it cannot.")


# serve.metrics.without_decode: what an answer at OSL 1 says of TPOT and tok/s/user
_NO_DECODE = f"null at OSL 1 ({NO_DECODE_WHY}; its intervals left out too)."


class Estimate(_Open):
    # estimate --json leaves its notes, knee and queue out where they do not apply: so does the answer (not null)
    @model_serializer(mode="wrap")
    def _absent(self, handler):
        d = handler(self)
        return {k: v for k, v in d.items() if v is not None or k not in ESTIMATE_ABSENT}

    model: str
    gpu: str
    plan: str
    precision: str
    ttft_ms: float
    tpot_ms: Optional[float] = Field(..., description=_NO_DECODE)
    tok_s_per_user: Optional[float] = Field(..., description=_NO_DECODE)
    output_tok_s_per_gpu: float
    point_breakdown: Optional[list[Operator]] = Field(None, description="The frontier point's per-operator times (with `deployment`) "
                                                      "and the rest of its decode step and TPOT; their `tpot_ms` sum to TPOT.")
    export: Optional[Export] = Field(None, description="The frontier point's engine launch configuration (with `deployment`).")
    request_cost_note: Optional[str] = Field(None, description="Where an engine's fitted per-request cost (SGLang's) is a tenth of "
                                             "TTFT or more: how much of TTFT it is and what it was fitted on (estimate's `fitted "
                                             "request cost` row); absent elsewhere.")
    adp_hold_note: Optional[str] = Field(None, description="Where a fitted attention-DP wait is priced in TTFT (TensorRT-LLM's "
                                         "adp_wait_steps, 60 decode iterations, with more requests than ranks): its ms, what it was "
                                         "fitted on and that its cause is not read (estimate's `fitted attention-DP wait` row); absent elsewhere.")
    offline_knee: Optional[dict[str, Any]] = Field(None, description="Offline (no concurrency): the batch priced, the smallest "
                                                   "within `fraction` of the most tok/s/GPU, and the maximum's batch, gain and "
                                                   "TPOT (TTFT) ratio it leaves (estimate's concurrency row).")
    rank_skew_note: Optional[str] = Field(None, description="Where TensorRT-LLM's fitted rank skew is a tenth of TTFT or more: how "
                                          "much of TTFT it is (estimate's `fitted rank skew` row); absent elsewhere.")
    queued: Optional[int] = Field(None, description="The requests beyond the most that run at once (max_batch): they wait for a "
                                  "slot; `fits` says whether the memory holds the load.")
    queue: Optional[dict[str, Any]] = Field(None, description="Where requests wait for a slot: TTFT's share of it (`ttft_ms`), "
                                            "the cohorts ahead and their cycle (`cycle_ms`); absent where every request runs at once. TTFT's "
                                            "intervals then cover the TTFT as quoted, queue included (their `queue_ms`).")
    engine_release: Optional[str] = Field(None, description="The engine releases whose defaults the answer prices.")
    max_batch_by: Optional[str] = Field(None, description="What sets max_batch: 'step budget', 'launch cap', 'KV cache' or "
                                        "'engine limit' (serve.estimate.batch_limit).")
    max_batch_text: Optional[str] = Field(None, description="max_batch and what sets it, in estimate's `largest batch` row's "
                                          "words (the KV cache's sequences beside it where another limit binds).")


ESTIMATE_ABSENT = ("request_cost_note", "adp_hold_note", "offline_knee", "rank_skew_note", "queued", "queue", "engine_release")


class Point(_Open):
    tok_s_per_user: float
    output_tok_s_per_gpu: float
    ttft_ms: float
    tpot_ms: float
    deployment: dict[str, Any]


class Series(_Open):
    # pareto --json leaves not_searched out where no default format was left out: so does the answer (not null)
    @model_serializer(mode="wrap")
    def _absent(self, handler):
        d = handler(self)
        return {k: v for k, v in d.items() if v is not None or k != "not_searched"}

    model: str
    gpu: str
    num_gpus: int
    evaluated: int
    seconds: float
    frontier: list[Point]
    not_searched: Optional[list[str]] = Field(None, description="The default formats left out of the search, one line each: a "
                                              "format whose accuracy on this checkpoint nothing measures (per-tensor FP8 of "
                                              "DeepSeek-R1's block FP8); naming its weight_dtype searches it. Absent where none.")


class Curve(BaseModel):
    tok_s_per_user: list[float]
    output_tok_s_per_gpu: list[float]


class Bound(Curve):
    label: str = Field(..., description="Its legend entry, saying where it peaks.")


class PlotSeries(BaseModel):
    label: str
    empty: str = Field(..., description="Why the series has no frontier point; empty where it has.")
    cloud: Curve = Field(..., description="The evaluated deployments that fit (a fixed-seed sample of at most 4,000), in four figures.")
    bound: Optional[Bound] = Field(..., description="The roofline-ideal bound; null where it misses the axes (or the series is disaggregated).")


class Limits(BaseModel):
    x: list[float] = Field(..., min_length=2, max_length=2, description="tok/s/user, low and high (log axis).")
    y: list[float] = Field(..., min_length=2, max_length=2, description="Output tok/s/GPU, low and high (log axis).")


class PlotData(BaseModel):
    limits: Limits
    series: list[PlotSeries]


class ParetoResponse(BaseModel):
    series: list[Series] = Field(..., description="One frontier per GPU, each what `pareto --json` prints.")
    plot: Optional[PlotData] = Field(None, description="With `plot`: what the HTML report draws for these series (render.report.report_data).")
    csv: Optional[str] = Field(None, description="With `plot`: the file `pareto --csv` writes for these series.")


class DisaggRow(_Open):
    concurrency: int
    ttft_ms: float
    prefill_ms: float
    kv_transfer_ms: float
    prefill_wait_ms: float
    decode_slot_wait_ms: float
    front_end_ms: float = Field(..., description="The front end's overhead paid (ms): with prefill_ms, kv_transfer_ms, prefill_wait_ms "
                                "and decode_slot_wait_ms it adds up to ttft_ms.")
    tpot_ms: Optional[float] = Field(..., description=_NO_DECODE)
    tok_s_per_user: Optional[float] = Field(..., description=_NO_DECODE)
    output_tok_s_per_gpu: float
    fits: bool  # where false, the row's `over_capacity` says what the decode pool holds and why (an open field: absent where it fits)


class DisaggResponse(_Open):
    model: str
    gpu: str
    decode_gpu: str
    precision: str
    num_gpus: int
    prefill: dict[str, Any]
    decode: dict[str, Any]
    rows: list[DisaggRow]
    notes: list[str] = Field(..., description="The lines `disagg` prints under its table: the loads past what the decode pool "
                             "holds (\"fits no at ...\"), the engine both pools run, what was asked and changes nothing.")
    measured: str = Field(..., description="The bundled profile's error on the shipped disaggregated runs, the sentence `disagg` "
                          "ends its table's caption with (\"Measured on the shipped disaggregated runs ...\"); empty where none.")


class Finding(_Open):
    rule: str
    rule_name: str
    severity: str
    where: str
    message: str
    cost_pct: float
    fix: str
    measure: str = Field(description="What the rule's cost_pct measures (explore.lint.COST_MEASURE).")
    objective_cost: Optional[dict[str, Any]] = Field(None, description="R2's and R6's cost as the rate the shape loses: lost "
                                                     "and unit (tok/s/GPU, or tok/s/user outside the throughput regime).")


class LintResponse(BaseModel):
    model: str
    gpu: str
    regime: str
    engine: Optional[str] = Field(description="The engine R2, R3, R6, R7's Helix and R9 were priced on (explore.lint.pricing_engine); "
                                  "null where the engine named runs none of the shape's head sizes and they priced nothing.")
    priced_at: Optional[dict[str, Any]] = Field(description="The deployment they were priced at on `gpu`: the plan, its sizes, the "
                                                "requests, ISL/OSL and its source; null where no deployment holds the model.")
    caption: str = Field(description="Where they were priced, in words: the line above the CLI's lint table.")
    findings: list[Finding]


class DesignResponse(_Open):
    regime: str
    objective: str
    candidates: int
    evaluated: int
    designs: list[dict[str, Any]]
    resolved: Optional[dict[str, Any]] = Field(None, description="How many priced shapes' quality the proxy resolves (`shapes` of "
                                               "`of`), the rows shown among them (`rows`), whether one of them beats the reference, "
                                               "the best of them (gain, shape, row) and the best unresolved gain: resolved_line says it.")
    baseline_lines: list[str] = Field(default_factory=list, description="The lines `design` prints above its table "
                                      "(render.design_lines.baseline_lines): no row beating the baseline where none does, "
                                      "the baseline's own row (size, proxy loss, objective at its best deployment) and its "
                                      "MoE hint, else the reference's size and proxy loss.")
    versus_line: Optional[str] = Field(None, description="The line `design` prints of design 1 against the baseline (else "
                                       "the reference): loss by term, its bands, params and KV, and the gain with its band.")
    quality_line: Optional[str] = Field(None, description="The line `design` prints beneath its table of the equal-quality "
                                        "rule and the quality_sigmas values that admit the same shapes (render.design_lines.quality_rule_line).")
    resolved_line: Optional[str] = Field(None, description="The line `design` prints beneath its table where the proxy cannot "
                                         "resolve every priced shape's quality: which rows it resolves, the best of them and what "
                                         "the best unresolved gain means (render.design_lines.resolved_line).")
    graphs_line: Optional[str] = Field(None, description="What a row's 'graphs ≤n' says (render.design_lines.graphs_line: the "
                                       "decode CUDA graphs it was priced with, deployment.cuda_graph_max_bs), where a row states one.")
    side_by_side: Optional[dict[str, Any]] = Field(None, description="The reference and the top three designs side by side "
                                                   "(explore.design_report): frontiers, speed at the SLO, quality with its band, "
                                                   "envelope, lint findings.")


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


def _what_if_named(req) -> None:
    """A request's what-if GPU, checked whether or not a GPU field names it (its fields refused in one line as where it is
    used), then refused where none does (`gpu`, `gpus`, `decode_gpu`): the catalog GPU's answer would come back with no
    word of the what-if (newc10 #8)."""
    w = getattr(req, "what_if", None)
    if w is None:
        return
    _what_if(w)
    refs = [getattr(req, "gpu", None), getattr(req, "decode_gpu", None), *(getattr(req, "gpus", None) or ())]
    if not any(isinstance(r, str) and r.strip().lower() == w.id.strip().lower() for r in refs):
        fields = " or ".join(f for f in ("gpu", "gpus", "decode_gpu") if f in type(req).model_fields)
        do = f"add {w.id!r} to gpus" if fields == "gpus" else f"set gpu to {w.id!r}"
        raise InputError("what_if", w.id, f"a what-if GPU a GPU field names: its id {w.id!r} is named by no {fields} (the answer "
                                          f"would be the catalog GPU's); {do}, or leave what_if out")


def _gpu(ref: str, field: str = "gpu", what_if: WhatIfGpu | None = None):
    """A catalog GPU, or the request's what-if GPU by its id: the page never names a file on the
    server (the CLI takes a GPU .toml path)."""
    import llm_codesign as lc
    from llm_codesign.spec.hardware import catalog

    if what_if is not None and ref.strip().lower() == what_if.id.strip().lower():
        return _what_if(what_if)
    valid = "a GPU id of the catalog: " + ", ".join(catalog()) + NO_TOML
    if ref.strip().lower().endswith(".toml"):
        raise InputError(field, ref, valid)
    try:
        return lc.get_gpu(ref)
    except InputError as e:
        if (known := _known_gpu(ref)) is not None:  # the CLI's line, with what the server takes for its .toml advice
            raise InputError(field, ref, _not_served(known)) from None
        if field == "gpu" and e.field == "gpu":  # the CLI's own line (its did-you-mean), less the path the server refuses
            raise InputError(field, ref, e.valid.replace(" (or a path to a GPU .toml)", NO_TOML)) from None
        raise InputError(field, ref, valid) from None


# what the server takes in place of the CLI's GPU .toml (issue 36: no request opens a file)
NO_TOML = "; the server reads no GPU .toml: a GPU of one's own is a what-if GPU (`what_if`, the page's What-if GPU)"


def _known_gpu(ref: str) -> dict | None:
    """A GPU the catalog lacks but data/gpus_not_in_catalog.toml knows (H100 PCIe, RTX 6000 Ada ...), else None."""
    from llm_codesign.spec.hardware import _norm, _not_in_catalog

    return _not_in_catalog().get(_norm(ref))


def _not_served(known: dict) -> str:
    """The CLI's not-in-catalog line (spec.hardware.not_in_catalog) with the page's advice for its .toml one: the what-if GPU
    from its nearest catalog GPU with the data-sheet figures a what-if takes (memory and bandwidth; it keeps the base's
    SMs, TDP and TFLOP/s unless given), or the CLI with a GPU .toml. Its memory is given as the driver reports it, the
    base's driver/headline ratio (the what-if keeps that ratio, _what_if)."""
    from llm_codesign.spec.hardware import catalog, not_in_catalog

    near = catalog()[known["nearest"]]
    w = {"base": near.id, "id": known["aliases"][0]}
    mem_gb, tb_s = known["hbm_gb"] * near.memory_bytes / near.hbm_bytes, known["bandwidth_tb_s"]
    if abs(known["hbm_gb"] * 1e9 - near.hbm_bytes) > 1e-9 * near.hbm_bytes:
        w["memory_gb"] = float(f"{mem_gb:.4g}")
    if abs(tb_s * 1e12 - near.hbm_bandwidth_bytes_per_s) > 1e-9 * near.hbm_bandwidth_bytes_per_s:
        w["hbm_tb_s"] = tb_s
    return not_in_catalog(known, advice=(
        f"the server reads no GPU .toml: send a what-if GPU from {near.id} with these figures, \"what_if\": {json.dumps(w)} and "
        f"{w['id']!r} as the GPU (the page's What-if GPU; its {'SMs' if near.vendor == 'nvidia' else 'CUs'}, TDP and TFLOP/s stay {near.id}'s unless given), or price "
        f"it with the CLI and a GPU .toml (docs/howto/compare-gpus.md#a-gpu-that-is-not-in-the-catalog)"))




def _what_if(w: WhatIfGpu):
    """The what-if GPU: its base's figures with the form's (spec.hardware.what_if), checked as a GPU TOML is; a figure the
    check refuses is named by its form field, in the form's unit."""
    from llm_codesign.spec.hardware import _alias_table, _norm, what_if

    base = _gpu(w.base, "what_if.base")
    name = w.id.strip().lower()
    if not name or _norm(name) in _alias_table():
        raise InputError("what_if.id", w.id, "a name that is none of the catalog's GPUs, e.g. what-if")
    return what_if(base, name, {f: getattr(w, f) for f in WHAT_IF_FIELDS if getattr(w, f) is not None})


def _registry_valid() -> str:
    from llm_codesign.spec.registry import entries

    return "a bundled model (" + ", ".join(e["name"] for e in entries()) + ") or one of their Hugging Face ids"


# a revision as the Hub names one (a branch, a tag or a commit): one path component, so the cache's
# refs/<revision> file it names is under the cache
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def _model(req: ModelRef, *, field: str = "model", hub_cache: bool = False):
    """A bundled model by name or Hugging Face id, or the pasted config.json; with `hub_cache`, also a
    repository already in the local Hugging Face cache. Never a path on the server nor a download."""
    import llm_codesign as lc
    from llm_codesign.spec.registry import _index

    if (req.model is None) == (req.config is None):
        raise InputError(field, req.model, "either a model name or a pasted config.json, not both or neither")
    if req.config is not None:
        from llm_codesign.spec.model import from_hf_config, pasted_name

        try:
            return from_hf_config(req.config, pasted_name(req.config))
        except InputError as e:  # the loader names the config's keys `config.KEY`: the request's field is `field`
            if field == "model" or not (e.field == "config" or e.field.startswith("config.")):
                raise
            e.field, e.args = field + e.field[len("config"):], (field + str(e)[len("config"):],)
            raise
    if req.model.strip().lower() in _index():
        return lc.get_model(req.model)
    if req.model.strip().endswith(".json") or req.model.strip().startswith(("/", ".", "~")) or "\\" in req.model:
        where = "`config`" if field == "model" else f"`{field}` (an object)"  # design's baseline takes the pasted config itself
        raise InputError(field, req.model, f"a path is not read by the server; send the config.json's content as {where}")
    if hub_cache:
        from llm_codesign.spec.hub import REPO_ID

        repo, at, revision = req.model.strip().partition("@")
        if REPO_ID.match(repo) and ".." not in repo and (not at or (REVISION.match(revision) and ".." not in revision)):
            return _hub_model(req.model.strip(), field)
    raise InputError(field, req.model, _registry_valid() + (", a Hugging Face id in this machine's cache" if hub_cache else "")
                     + ", or a pasted config.json")


def _hub_model(ref: str, field: str):
    """A repository's config.json from the local Hugging Face cache only (serve --hub-cache)."""
    from llm_codesign.spec.hub import get_hub_model

    try:
        return get_hub_model(ref, local_only=True)
    except InputError as e:
        raise InputError(field, ref, e.valid) from None
    except ValueError as e:  # huggingface_hub's HFValidationError: an id its own check refuses
        raise InputError(field, ref, f"a Hugging Face repository id ({' '.join(str(e).split())})") from None


# the EstimateRequest fields a frontier point's `deployment` record carries itself (PointDeployment): refused beside it
POINT_OWN = ("replicas", "max_num_tokens", "cpp", "max_batch", "chunked_prefill")


def _estimate(req: EstimateRequest, *, hub_cache: bool = False) -> dict:
    import llm_codesign as lc

    _what_if_named(req)
    m = _model(req, hub_cache=hub_cache)
    profile = _profile(req.calibration)
    wl = lc.Workload(req.isl, req.osl, req.concurrency, prefix_hit=req.prefix_hit, arrival=req.arrival)
    if req.deployment is not None:
        return _point_estimate(m, req, replace(wl, concurrency=req.deployment.concurrency_per_instance or req.concurrency), profile)
    g = _gpu(req.gpu, what_if=req.what_if)
    dep = lc.deployment(m, gpu=g, num_gpus=req.num_gpus, tp=req.tp, pp=req.pp, ep=req.ep, moe_tp=req.moe_tp,
                        attention_dp=req.attention_dp, kvp=req.kvp, weight_dtype=req.weight_dtype,
                        activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype, engine=_engine(g, req.engine), spec=_speculation(req, m),
                        max_num_tokens=req.max_num_tokens, cpp=req.cpp, max_batch=req.max_batch, chunked_prefill=req.chunked_prefill)
    if req.cuda_graph_max_bs is not None:
        dep = replace(dep, cuda_graph_max_bs=req.cuda_graph_max_bs)
    r = _priced(m, dep, wl, req, profile, breakdown=req.breakdown, replicas=req.replicas)
    if req.export:  # the plan at the batch priced (offline: the batch of the most tok/s/GPU)
        r["export"] = _priced_export(m, dep, req, r, wl=replace(wl, concurrency=r["concurrency"]), profile=profile, replicas=req.replicas)
    return _plain(r)


def _priced_export(m, dep, req: EstimateRequest, r: dict, *, wl, profile: str | None, replicas: int) -> dict:
    """The launch file of `dep` at the batch `r` priced, its header's figures priced with the capture the file writes, as CLI
    export prices it (explore.search.with_capture, capture_line): the header quoted the answer's eager TPOT, 29.32 ms and
    655.5 tok/s/GPU, for a file padded to 78 that runs and re-imports at 14.52 ms and 1306 (crev10 #2)."""
    from llm_codesign.explore.search import capture_line, with_capture

    keys = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")
    written = with_capture(dep, int(r["concurrency"]))
    x = r if written == dep else _priced(m, written, wl, req, profile, breakdown=False, replicas=replicas)
    out = _export(m, written, req, conc=r["concurrency"], replicas=replicas, predicted={k: x[k] for k in keys})
    out["predicted"] = {k: x[k] for k in keys}
    out["capture"] = None if written == dep else capture_line(written, r, x)
    return out


def _point_estimate(m, req: EstimateRequest, wl, profile: str | None) -> dict:
    """A frontier point: one instance of its plan at its batch, with the point's per-operator breakdown."""
    import llm_codesign as lc
    from llm_codesign.serve.estimate import decode_rows

    given = next((f for f in Speculation.model_fields if getattr(req, f) is not None), None) or next(
        (f for f in POINT_OWN if f in req.model_fields_set), None)
    if given is not None:
        what = "names its speculation" if given in Speculation.model_fields else "carries it"
        raise InputError(given, getattr(req, given), f"left out with `deployment` (a frontier point's record {what})")
    d = req.deployment
    if d.draft_model is not None:
        _registry_model(d.draft_model, "deployment.draft_model")
    if wl.concurrency is None:
        raise InputError("deployment.concurrency_per_instance", None, "the point's requests in flight per instance, "
                         "as a frontier point's record carries (or `concurrency`)")
    g = _gpu(req.gpu, what_if=req.what_if)
    # typed by PointDeployment: a bad field is a 422 naming it
    rec = {**d.model_dump(), "gpu": g.id, "backend": _engine(g, d.backend, "deployment.backend"), "concurrency_per_instance": wl.concurrency}
    try:
        dep = lc.Deployment.from_dict(rec, g)
    except InputError as e:  # a field of the record, named by its path in the request as pydantic's checks name one
        if e.field not in PointDeployment.model_fields:
            raise
        raise InputError(f"deployment.{e.field}", e.value, e.valid) from None
    # one pricing path at one concurrency, the point's own: its breakdown is the estimate's decode rows in estimate
    # --breakdown's order (serve.estimate.decode_rows: the operators slowest first, then the rest of the step and of TPOT)
    r = _priced(m, dep, wl, req, profile, breakdown=True, replicas=rec["replicas"])
    keep = ("name", "kind", "time_ms", "tpot_ms", "what")
    # at OSL 1 no decode step runs: no operator has a share of a TPOT (estimate --breakdown prints none either)
    r["point_breakdown"] = [] if r["tpot_ms"] is None else [{k: o[k] for k in keep if k in o} for o in decode_rows(r["breakdown"])]
    if not req.breakdown:
        r.pop("breakdown")
    r["export"] = _priced_export(m, dep, req, r, wl=wl, profile=profile, replicas=rec["replicas"])
    return _plain(r)


def _priced(m, dep, wl, req: EstimateRequest, profile: str | None, *, breakdown: bool, replicas: int) -> dict:
    """estimate --json's record: priced under the request's profile, with its $ per token (explore.pricing.cost_of) and its
    replicas (serve.estimate.replicas_record) as the CLI adds them."""
    import llm_codesign as lc
    from llm_codesign.explore.pricing import cost_of
    from llm_codesign.serve.estimate import replicas_record

    est = lc.estimate(m, dep, wl, calibration=profile, breakdown=breakdown)
    if req.gpu_hour_price is not None:
        est = replace(est, cost=cost_of(dep.gpu, req.gpu_hour_price, est.output_tok_s_per_gpu, req.isl, req.osl))
    r = est.to_dict()
    if replicas > 1:
        r["replicas"] = replicas_record(r, dep.num_gpus, replicas)
    return r


def _profile(text: str | None) -> str | None:
    """`calibration`: a profile's TOML text, priced from a private file as an unwritten Profile is (measure.calibrate._temporary,
    its checks those of --calibration's file); the server reads no path it is sent."""
    import tomllib

    if text is None:
        return None
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError("calibration", text[:80], "a calibration profile's content as TOML text (a path is not read by the "
                         f"server; send the file's content): {e}") from None
    from llm_codesign.measure.calibrate import _temporary

    return _temporary(text)


def _pools_engine(gpu, decode_gpu, name: str | None) -> str:
    """The one engine both disaggregated pools run (spec.engines.engine_for_pools), a refusal naming the request's field."""
    try:
        return engine_for_pools(gpu, decode_gpu, name).name
    except InputError as e:
        raise InputError("engine" if e.field == "backend" else e.field, e.value, e.valid) from None


def _engine(gpu, name: str | None, field: str = "engine") -> str:
    """The engine priced on `gpu` (spec.engines.engine_for: the GPU vendor's where `name` is None), a refusal naming the
    request's own field."""
    try:
        return engine_for(gpu, name).name
    except InputError as e:
        raise InputError(field, e.value, e.valid) from None


def _speculation(req: Speculation, model=None):
    """The request's speculative decoding (spec.plan.spec_decoding: its checks name these fields), or None; with no
    acceptance, `model`'s published one where one is bundled, as the CLI's (one rule everywhere)."""
    from llm_codesign.spec.plan import spec_decoding

    if req.draft_model is not None and req.spec == "eagle3":  # the head's repository, written in the launch file only: the
        # cost model prices EAGLE-3's one layer from the target's shape (serve.aggregated.draft_model), and an export without
        # it is refused (explore.export.refuse_headless_draft)
        from llm_codesign.spec.hub import REPO_ID

        if not REPO_ID.match(req.draft_model.strip()):
            raise InputError("draft_model", req.draft_model, "the EAGLE-3 head's Hugging Face repository with spec eagle3 (owner/name, "
                                                             "e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), which the launch file names")
    elif req.draft_model is not None and req.spec == "draft":  # resolved again by name in the cost model: the registry's only
        _registry_model(req.draft_model, "draft_model")
    # a drafter with another method: spec_decoding's refusal (spec.plan.check_draft_model), the CLI's line
    return spec_decoding(req.spec, draft_len=req.draft_len, acceptance=req.acceptance,
                         acceptance_rates=tuple(req.acceptance_rates) if req.acceptance_rates else None, draft_model=req.draft_model,
                         model=model)


def _registry_model(name: str, field: str) -> None:
    """Refuses a name the registry lacks: the cost model resolves a draft by its name
    (serve.aggregated.draft_model -> registry.get_model), which reads a path or fetches from the Hub."""
    from llm_codesign.spec.registry import _index

    if name.strip().lower() not in _index():
        raise InputError(field, name, _registry_valid())


def _disagg(req: DisaggRequest, *, hub_cache: bool = False) -> dict:
    """What `disagg --json` prints: one instance of each pool, built and priced as the CLI and lc.disagg do
    (explore.disagg_search.price_pools)."""
    from llm_codesign.api import _named
    from llm_codesign.explore.disagg_search import price_pools
    from llm_codesign.spec.plan import precision_for

    _what_if_named(req)
    m = _model(req, hub_cache=hub_cache)
    g = _gpu(req.gpu, what_if=req.what_if)
    dg = _gpu(req.decode_gpu, "decode_gpu", req.what_if) if req.decode_gpu else g
    prec = precision_for(m, req.weight_dtype, req.activation_dtype, req.kv_dtype, gpu=g)
    engine = _pools_engine(g, dg, req.engine)  # one engine on both pools' GPUs, a refusal naming the form's field
    # disagg's --prefill/--decode text of each pool's sizes
    plans_ = {name: ",".join(f"{k}={getattr(pool, k)}" for k in ("tp", "pp", "ep", "moe_tp", "attention_dp", "kvp") if getattr(pool, k) is not None)
              for name, pool in (("prefill", req.prefill), ("decode", req.decode))}
    count = {}  # each pool's instances, given once: the object's `instances` or the CLI's --prefill/--decode-instances
    for name, pool in (("prefill", req.prefill), ("decode", req.decode)):
        top = getattr(req, f"{name}_instances")
        if top is not None and "instances" in pool.model_fields_set and top != pool.instances:
            raise InputError(f"{name}_instances", top, f"the {name} object's instances ({pool.instances}), or either one alone")
        count[name] = pool.instances if top is None else top
    # no engine asked: price_pools picks the pools' (the same as _pools_engine's) and says where it is not the prefill GPU's own
    with _named("piecewise_graphs", "decode_piecewise_graphs"):  # the decode pool's Deployment refuses it off vLLM (spec.plan)
        r = price_pools(m, g, decode_gpu=dg, precision=prec, engine=engine if req.engine else None, spec=_speculation(req, m),
                        max_num_tokens=req.max_num_tokens, decode_max_num_tokens=req.decode_max_num_tokens, prefill_instances=count["prefill"],
                        decode_instances=count["decode"], concurrencies=list(req.concurrency), isl=req.isl, osl=req.osl,
                        decode_max_batch=req.decode_max_batch, prefill_routing=req.prefill_routing,
                        decode_recv_interval=req.decode_recv_interval, decode_moe_a2a=req.decode_moe_a2a,
                        decode_cuda_graph_max_bs=req.decode_cuda_graph_max_bs, arrival=check_arrival(req.arrival),
                        decode_piecewise_graphs=req.decode_piecewise_graphs, **plans_)
    return _plain(r.to_dict())


def _export(m, dep, req: EstimateRequest, *, conc: int | None, replicas: int, predicted: dict) -> dict:
    """The engine's launch configuration of a frontier point, as `export-point` writes it (`predicted`:
    the point's metrics, priced again); a plan the engine cannot express is its one-line reason instead."""
    from llm_codesign.explore.export import EXPORTERS, point_config

    name = EXPORTERS[dep.backend].file_name if dep.backend in EXPORTERS else "config.yaml"
    try:  # as export-point and lc.export_point write it (explore.export.point_config)
        name, text = point_config(m, dep, concurrency=conc or 1, replicas=replicas, isl=req.isl, osl=req.osl, predicted=predicted,
                                  file_name=name, arrival=req.arrival, prefix_hit=req.prefix_hit)  # the workload priced (crev11 #1)
    except InputError as e:
        return {"engine": dep.backend, "file_name": name, "text": None, "error": " ".join(str(e).split())}
    return {"engine": dep.backend, "file_name": name, "text": text, "error": None}


def _pareto(req: ParetoRequest, job: "_Job", *, hub_cache: bool = False) -> dict:
    import llm_codesign as lc
    from llm_codesign.explore.search import check_search_size

    _what_if_named(req)
    m = _model(req, hub_cache=hub_cache)
    spec = _speculation(req, m)
    lo, _, hi = str(req.num_gpus).partition("-")  # a range: instances of each size from lo to hi, as pareto --gpus 8-72
    n_gpus, inst = (int(hi), tuple(range(int(lo), int(hi) + 1))) if hi else (int(lo), None)
    # the CLI's bound on the plans a search visits, refused in one line before it starts rather than at the time budget
    # (within MAX_SERVE_GPUS at most 1.05 M of its 4 M: 1-72 with EP searched, sum of d(n)^5)
    check_search_size(req.num_gpus, inst, n_gpus, fixed=sum(x is not None for x in (req.tp, req.pp, req.attention_dp, req.kvp)),
                      free_ep=req.ep is None and req.moe_tp is None, field="num_gpus", narrow="fix tp, pp or ep")
    series = []
    for gpu in req.gpus:  # each GPU on its vendor's engine where none is named, as `pareto` runs them
        job.check()
        g = _gpu(gpu, "gpus", req.what_if)
        f = lc.pareto(m, g, num_gpus=n_gpus, instance_gpus=inst, engine=_engine(g, req.engine), max_num_tokens=req.max_num_tokens,
                      workload=lc.Workload(req.isl, req.osl, prefix_hit=req.prefix_hit, arrival=req.arrival),
                      weight_dtype=req.weight_dtype, activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype,
                      tp=req.tp, pp=req.pp, ep=req.ep, moe_tp=req.moe_tp, attention_dp=req.attention_dp, kvp=req.kvp,
                      min_tps_user=req.min_tps_user, max_ttft_ms=req.max_ttft_ms, spec=spec, draft_len=req.draft_len,
                      progress=job.check)
        series.append(f)
    out = {"series": _plain([f.to_dict() for f in series])}
    if req.plot:  # the report's drawing data and CSV: the same functions as `pareto --html/--csv`
        from llm_codesign.render.report import csv_text, report_data

        d = report_data([f.to_dict(plot=True) for f in series], {})
        out["plot"] = _plain({"limits": d["limits"], "series": [{k: r[k] for k in ("label", "empty", "cloud", "bound")} for r in d["results"]]})
        out["csv"] = csv_text(series)
    return out


def _lint(req: LintRequest, *, hub_cache: bool = False) -> dict:
    import llm_codesign as lc

    _what_if_named(req)
    m, g = _model(req, hub_cache=hub_cache), _gpu(req.gpu, what_if=req.what_if)
    fs = lc.lint(m, g, regime=req.regime, weight_dtype=req.weight_dtype, activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype,
                 engine=_engine(g, req.engine) if req.engine else None)
    return _plain(fs.to_dict())  # lint --json's answer: the engine and point priced at beside the findings (explore.lint.Lint)


def _design_inputs(req: DesignRequest, *, hub_cache: bool = False):
    """The GPU and the baseline, resolved before a (streamed) search starts, so a bad one is a 422."""
    _what_if_named(req)
    ref = None if req.baseline is None else ModelRef(config=req.baseline) if isinstance(req.baseline, dict) else ModelRef(model=req.baseline)
    base = None if ref is None else _model(ref, field="baseline", hub_cache=hub_cache)
    return _gpu(req.gpu, what_if=req.what_if), base


def _design(req: DesignRequest, job: "_Job", *, inputs, progress=None) -> dict:
    import llm_codesign as lc

    def step(done, total):
        job.check()
        if progress:
            progress(done, total)

    from llm_codesign.render.design_lines import baseline_lines, graphs_line, quality_rule_line, resolved_line, versus_line

    g, base = inputs
    r = _plain(lc.design(req.params, g, num_gpus=req.num_gpus, regime=req.regime, moe=req.moe, baseline=base,
                         weight_dtype=req.weight_dtype, activation_dtype=req.activation_dtype, kv_dtype=req.kv_dtype,
                         engine=_engine(g, req.engine), min_tps_user=req.min_tps_user, quality_sigmas=req.quality_sigmas,
                         max_candidates=req.max_candidates, top=req.top, active_params=req.active_params,
                         progress=step, rank_all=req.rank_all))
    # the lines `design` prints of the baseline (else the reference) and of design 1 against it: the CLI's own functions
    return r | {"baseline_lines": baseline_lines(r), "versus_line": versus_line(r), "quality_line": quality_rule_line(r),
                "resolved_line": resolved_line(r), "graphs_line": graphs_line(r)}


NDJSON = "application/x-ndjson"


def _design_stream(req: DesignRequest, job: "_Job", inputs, done):
    """The design run as NDJSON lines: {"progress": [shapes done, shapes]} as the search goes, then
    {"result": ...} (what the plain POST returns) or {"error": one line, "field": ...}. The search
    runs on its own thread, which calls `done` when it ends; the stream's end (the client gone
    included) stops it at its next progress call."""
    loop = asyncio.get_running_loop()
    q: asyncio.Queue = asyncio.Queue()

    def put(item):
        try:
            loop.call_soon_threadsafe(q.put_nowait, item)
        except RuntimeError:  # the loop is closed: no one reads the stream any more
            pass

    def work():
        try:
            put({"result": _design(req, job, inputs=inputs, progress=lambda d, t: put({"progress": [int(d), int(t)]}))})
        except Exception as e:
            put(_error_body(e)[1])
        finally:
            done()

    async def lines():
        try:
            while True:
                item = await q.get()
                yield json.dumps(item, allow_nan=False) + "\n"
                if "progress" not in item:
                    return
        finally:
            job.gone.set()

    threading.Thread(target=work, daemon=True, name="llm-codesign-design").start()
    return lines()


def _accuracy() -> dict:
    """The validation report's pooled errors by engine and load (measure.accuracy.bundled: the shipped
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


def _field_line(err: dict, model=None) -> tuple[str, str]:
    """pydantic's first complaint as (field, one line): `body.gpus.0` -> `gpus.0`; a bound passed said with the field's
    whole range, as the CLI says it (_range_words; `model`, the request's, where known)."""
    # a Union's member is pydantic's tag in loc (`baseline.constrained-str`, `baseline.dict[str,any]`): the field is its parent
    loc = [str(x) for x in err.get("loc", ()) if x != "body" and not _UNION_TAG.fullmatch(str(x))]
    name = ".".join(loc) or "body"
    value = err.get("input")
    if not loc and isinstance(value, bytes):  # FastAPI passes a body of another content type on as bytes
        return name, "body: not valid; a JSON object sent as Content-Type: application/json"
    # a null where a value belongs reads as JSON's null ("num_gpus; Input should be ..." had no value)
    shown = "null" if value is None and "input" in err and loc else "" if value is None or isinstance(value, (dict, list)) else repr(value)
    if loc == ["baseline"] and isinstance(value, list):  # neither a name nor a config: the list itself is what is wrong
        shown = json.dumps(value)
    shown = f": {shown[:80] + '...' if len(shown) > 80 else shown} is not valid" if shown else ""  # a 1 MB string is no line
    msg = err.get("msg", "invalid")
    if loc and loc[-1] == "num_gpus" and err.get("type") in _GPU_COUNT_ERRORS:  # in the project's words, as the CLI says --gpus
        msg = f"a whole number of GPUs from 1 to {MAX_SERVE_GPUS}"
    elif loc == ["baseline"] and err.get("type") == "string_type":  # neither member: "a valid string" named half of it
        msg = "a registry name (a string) or a pasted config.json (an object)"
    elif err.get("type") in _BOUNDS and (words := _range_words(model, loc, err)):
        msg = words
    return name, " ".join(f"{name}{shown}; {msg}".split())


# pydantic's complaints of a bound passed, each by its constraint: said as the CLI says a range (cli.common._valid), not
# pydantic's "Input should be greater than or equal to 1", which gave neither the field's other bound nor its kind
_BOUNDS = {"greater_than_equal": "ge", "greater_than": "gt", "less_than_equal": "le", "less_than": "lt"}


def _annotation_at(model, loc: list[str]):
    """(annotation, field metadata) of the field `loc` names in request model `model`, through nested objects (what_if,
    decode) and a list's items (acceptance_rates.1); (None, []) where it names none."""
    ann, meta = model, []
    for part in loc:
        sub = _submodel(ann)
        if sub is not None and part in sub.model_fields:
            f = sub.model_fields[part]
            ann, meta = f.annotation, list(f.metadata)
        elif part.isdigit():  # a list's item: its element's type, through Optional
            items = [typing.get_args(a) for a in (ann, *typing.get_args(ann)) if typing.get_origin(a) is list]
            ann, meta = (items[0][0] if items and items[0] else None), []
        else:
            return None, []
    return ann, meta


def _range_words(model, loc: list[str], err: dict) -> str | None:
    """The range the field at `loc` takes, in the CLI's words: `an integer from 1 to 1,048,576`, `a number from 0 up to
    (not including) 1`; from its annotation's constraints, through Optional and Annotated layers (Int, Float, a list's
    Annotated item), else the bound pydantic names alone, and any word it takes instead (`, or bundled`). None where the
    field takes no number."""
    ann, meta = _annotation_at(model, loc) if model is not None else (None, [])
    bounds, kinds, words, todo = {}, set(), [], [ann, *meta]
    while todo:
        a = todo.pop()
        if a is int or a is float:
            kinds.add(a)
        elif typing.get_origin(a) is Literal:  # a word the field takes besides the number (gpu_hour_price's `bundled`)
            words += [str(x) for x in typing.get_args(a)]
        elif typing.get_origin(a) is Annotated:
            todo += typing.get_args(a)
        elif typing.get_origin(a) in (Union, types.UnionType):
            todo += [x for x in typing.get_args(a) if typing.get_origin(x) is not list]
        elif isinstance(a, FieldInfo):
            todo += a.metadata
        elif isinstance(a, (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt)):
            k = type(a).__name__.lower()
            bounds[k] = getattr(a, k)
    bounds = bounds or {_BOUNDS[err["type"]]: (err.get("ctx") or {}).get(_BOUNDS[err["type"]])}
    if any(v is None for v in bounds.values()):
        return None
    whole = int in kinds or (not kinds and all(isinstance(v, int) for v in bounds.values()))
    fmt = (lambda v: f"{v:,}") if whole else (lambda v: f"{v:g}")  # noqa: E731
    lo = f"from {fmt(bounds['ge'])}" if "ge" in bounds else f"above {fmt(bounds['gt'])}" if "gt" in bounds else ""
    hi = (f"to {fmt(bounds['le'])}" if "le" in bounds else f"up to (not including) {fmt(bounds['lt'])}") if "le" in bounds or "lt" in bounds else ""
    if not lo:
        hi = f"of at most {fmt(bounds['le'])}" if "le" in bounds else f"below {fmt(bounds['lt'])}"
    elif not hi and "ge" in bounds:
        lo = f"of at least {fmt(bounds['ge'])}"
    return f"{'an integer' if whole else 'a number'} {lo} {hi}".strip() + "".join(f", or {w}" for w in words)


def _names(model) -> dict[str, str]:
    """A request model's keys, each to its field: the fields' names and their aliases (`backend` -> engine)."""
    out = {}
    for name, f in model.model_fields.items():
        choices = f.validation_alias.choices if isinstance(f.validation_alias, AliasChoices) else [name]
        out |= {str(c): name for c in choices} | {name: name}
    return out


def _submodel(annotation):
    """The request model a field holds (Optional[WhatIfGpu] -> WhatIfGpu, a pool's PoolPlan), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for a in getattr(annotation, "__args__", ()) if (m := _submodel(a)) is not None), None)


def _unknown_line(model, loc: list[str]) -> str:
    """A key no field of the request takes, in one line with the nearest field's name (difflib over the fields and their
    aliases of the object it sits in: `backnd` -> 'backend'); an alias sent beside its field is said as such (newc5 #1)."""
    import difflib

    for part in loc[:-1]:  # the nested object the key sits in (what_if, decode, ...)
        f = model.model_fields.get(part) if model is not None else None
        model = _submodel(f.annotation) if f is not None else None
    name, key = ".".join(loc), loc[-1]
    names = _names(model) if model is not None else {}
    if key in names:  # `backend` beside `engine`: both name the one field
        other = sorted(k for k, v in names.items() if v == names[key] and k != key)
        return f"{name}: not valid beside {' or '.join(map(repr, other))}: both name the one field; send one"
    near = difflib.get_close_matches(key, list(names), n=1, cutoff=0.6)
    if near:
        return f"{name}: unknown field; did you mean {near[0]!r}?"
    listed = sorted(names) if len(names) <= 12 else None
    return f"{name}: unknown field; " + (f"one of: {', '.join(listed)}" if listed else "GET /openapi.json lists the request's fields")


# pydantic's tags of a Union's members in an error's loc (str, constrained-str, dict[str,any], function-after[...]): no field
# of the API is spelled so (fields are snake_case)
_UNION_TAG = re.compile(r"str|int|float|bool|constrained-[a-z]+|(function|lax|strict)-[a-z-]+(\[.*\])?"
                        r"|(dict|list|set|tuple|nullable|literal|json-or-python|tagged-union)\[.*\]")


# pydantic's complaints of a GPU count that is not a whole number in range (true/false keeps its own: Int, _not_bool)
_GPU_COUNT_ERRORS = frozenset({"int_parsing", "int_type", "int_from_float", "greater_than_equal", "less_than_equal"})


def _json_line(err: dict, doc) -> str:
    """A body json.loads refused, in words: what is wrong and where (line and column, from 1)."""
    pos = err["loc"][-1] if isinstance(err["loc"][-1], int) else None
    where = ""
    if isinstance(doc, str) and pos is not None:
        where = f" at line {doc.count(chr(10), 0, pos) + 1}, column {pos - doc.rfind(chr(10), 0, pos)}"
    elif pos is not None:
        where = f" at character {pos}"
    return f"body: not valid JSON: {(err.get('ctx') or {}).get('error', 'JSON decode error')}{where}"


class _Stopped(Exception):
    """Raised from a search's progress callback to stop the search (a client gone, a budget spent)."""

    def __init__(self, field: str | None, line: str):
        super().__init__(line)
        self.field, self.line = field, line


class _Job:
    """One search's stop conditions, checked from its progress callbacks (explore.search and
    explore.design call `progress` after each chunk of deployments or shapes): `gone` is set when its
    client leaves, and it may run `budget_s` seconds."""

    def __init__(self, budget_s: float, field: str, advice: str | None = None):
        self.budget_s, self.field = budget_s, field
        self.advice = advice or f"a smaller {field} (or serve --time-budget)"
        self.deadline = time.monotonic() + budget_s
        self.gone = threading.Event()

    def check(self, *_) -> None:
        if self.gone.is_set():
            raise _Stopped(None, "the client went away: the search was stopped")
        if time.monotonic() > self.deadline:
            what = "a search this large" if self.advice.startswith("a smaller") else "this pricing"
            raise _Stopped(self.field, f"{self.field}: {what} ran past this server's time budget of "
                           f"{self.budget_s:g} s and was stopped; {self.advice}")


# estimate and disagg price one plan (disagg at most 32 concurrency rows): no progress calls inside to stop them at, so
# their budget is checked as they start (a client gone while queued) and as they end (an answer past the budget is a
# 503, as a search's). Measured on this repo's 2-core machine: 1.3 s for the first estimate (its tables load), 0.07-0.3 s
# after, disagg's 32 rows 0.11 s: only a budget under about a second stops one (review crev #8)
PRICED_ADVICE = "serve --time-budget (an estimate's first call loads its tables: about a second)"


def _within_budget(job: _Job, work):
    """`work()`'s answer, `job` checked before and after it (PRICED_ADVICE)."""
    job.check()
    out = work()
    job.check()
    return out


class _Slots:
    """At most `n` searches under way at once."""

    def __init__(self, n: int):
        self.n, self.busy = n, 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.busy >= self.n:
                return False
            self.busy += 1
            return True

    def give(self) -> None:
        with self._lock:
            self.busy -= 1


log = logging.getLogger(__name__)


def _error_body(e: Exception) -> tuple[int, dict]:
    """An exception the work raised as (HTTP status, the {error, field} body)."""
    if isinstance(e, InputError):
        return 422, {"error": " ".join(str(e).split()), "field": e.field}
    if isinstance(e, _Stopped):
        return 503, {"error": e.line, "field": e.field}
    log.error("internal error: %s: %s", type(e).__name__, " ".join(str(e).split()))  # a bug: one line in the log
    return 500, {"error": " ".join(f"internal error: {type(e).__name__}: {e}".split()), "field": None}


def _host_name(host: str) -> str:
    """A Host header's name without its port: `localhost:8000` -> `localhost`, `[::1]:8000` -> `[::1]`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[:host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _edge(app, *, allowed_hosts: list[str] | None):
    """The ASGI app behind the edge checks: the Host header (DNS rebinding: another site's page
    reaching the API through a name it controls), the body's size, and an exception no handler
    answered (a bug) as a 500 in the {error, field} shape, answered rather than raised so that the
    server keeps the connection."""
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    allowed = None if not allowed_hosts or "*" in allowed_hosts else {
        _host_name(f"[{h}]" if ":" in h and not h.startswith("[") else h) for h in allowed_hosts}

    async def edge(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        if allowed is not None:
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if _host_name(host) not in allowed:
                body = {"error": f"host: {host[:100]!r} is not valid; one of: {', '.join(sorted(allowed))} "
                                 "(serve --allowed-host adds a name)", "field": "host"}
                return await JSONResponse(body, status_code=400)(scope, receive, send)
        seen = 0
        started = False

        async def bounded():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:  # raised inside FastAPI's body read, which passes an HTTPException on
                raise HTTPException(413, f"body: over {MAX_BODY:,} bytes is not valid; a request of the page's "
                                         "(a pasted config.json is kilobytes)")
            return message

        async def sending(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, bounded, sending)
        except Exception as e:
            status, body = _error_body(e)
            if not started:
                await JSONResponse(body, status_code=status)(scope, receive, send)

    return edge


def create_app(allowed_hosts: list[str] | None = None, *, hub_cache: bool = False, max_busy: int = MAX_BUSY,
               time_budget_s: float = TIME_BUDGET_S):
    """The FastAPI application: the page at / (its scripts under /static), the API under /api.
    `allowed_hosts`: the Host headers answered (`serve` passes the names it binds, the loopback ones
    for loopback, so another site's page cannot reach the API through DNS rebinding; `*` answers
    any); None answers any. `hub_cache`: models the registry lacks are read from the local Hugging
    Face cache (never downloaded). At most `max_busy` searches (pareto, design, estimate, disagg) run at
    once, a further one a 429; each is stopped past `time_budget_s` seconds, or when its client leaves (a search at
    its next progress call, estimate and disagg as they start and end: _within_budget), a 503."""
    from fastapi import FastAPI, Header, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
    from fastapi.staticfiles import StaticFiles
    from starlette.background import BackgroundTask
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    from llm_codesign import __version__

    # the CDN-hosted docs UIs are off: the page works offline, and /openapi.json is the schema
    app = FastAPI(title="llm-codesign", version=__version__, docs_url=None, redoc_url=None,
                  description="The JSON API of `llm-codesign serve`'s page: the CLI's --json results.")
    app.add_middleware(_edge, allowed_hosts=allowed_hosts)
    shape = {"model": ErrorResponse}
    err = {422: {**shape, "description": "Bad input: one line naming the field."},
           413: {**shape, "description": f"A body over {MAX_BODY:,} bytes."}}
    searched = {**err,
                429: {**shape, "description": f"{max_busy} searches under way; the Retry-After header says when to ask again."},
                503: {**shape, "description": f"The search ran past the server's time budget ({time_budget_s:g} s) and was stopped."}}
    slots = _Slots(max_busy)

    def busy() -> JSONResponse:
        return JSONResponse({"error": f"busy: this server runs {max_busy} searches at once, all under way (serve --max-busy); "
                                      f"retry in {RETRY_AFTER_S} s", "field": None},
                            status_code=429, headers={"Retry-After": str(RETRY_AFTER_S)})

    async def guarded(request: Request, field: str, work, advice: str | None = None):
        """`work(job)` on a worker thread, counted against max_busy, stopped (at its next progress
        call) when its client leaves or past the time budget (`advice`: what the 503 suggests)."""
        if not slots.take():
            return busy()
        job = _Job(time_budget_s, field, advice)

        async def watch():  # the request's channel carries http.disconnect once the client is gone
            while (await request.receive())["type"] != "http.disconnect":
                pass
            job.gone.set()

        watcher = asyncio.ensure_future(watch())
        try:
            return await run_in_threadpool(work, job)
        finally:
            watcher.cancel()
            slots.give()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError):
        errs = e.errors()
        if errs and errs[0].get("type") == "json_invalid":
            return JSONResponse({"error": _json_line(errs[0], getattr(e, "body", None)), "field": "body"}, status_code=422)
        field, line = _field_line(errs[0], REQUESTS.get(request.url.path)) if errs else ("body", "body: not valid")
        if errs and errs[0].get("type") == "extra_forbidden":  # a key no field takes: the nearest field's name
            line = _unknown_line(REQUESTS.get(request.url.path), field.split("."))
        return JSONResponse({"error": line, "field": field}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, e: HTTPException):
        cause = e.__cause__
        if e.status_code == 400 and cause is not None:  # FastAPI's "There was an error parsing the body": json.loads raised
            # json.loads' int() refuses a number of over sys.get_int_max_str_digits() digits (4300) with a ValueError
            why = ("nested deeper than the parser reads" if isinstance(cause, RecursionError) else
                   f"not UTF-8 text (byte {cause.object[cause.start:cause.start + 1]!r} at {cause.start})"
                   if isinstance(cause, UnicodeDecodeError) else
                   f"a number of more than {sys.get_int_max_str_digits():,} digits" if "digits" in str(cause) else type(cause).__name__)
            return JSONResponse({"error": f"body: not valid JSON: {why}", "field": "body"}, status_code=422)
        if e.status_code == 413:
            body = {"error": e.detail, "field": "body"}
        elif e.status_code == 404:
            body = {"error": f"path: {request.url.path[:100]!r} is not valid; one of the API's (GET /openapi.json lists them)",
                    "field": None}
        elif e.status_code == 405:
            allow = {k.lower(): v for k, v in (e.headers or {}).items()}.get("allow", "")
            body = {"error": f"method: {request.method!r} is not valid for {request.url.path}; {allow}", "field": None}
        else:
            body = {"error": " ".join(str(e.detail).split()), "field": None}
        return JSONResponse(body, status_code=e.status_code, headers=e.headers)

    @app.exception_handler(InputError)
    async def _input(_: Request, e: InputError):
        return JSONResponse(_error_body(e)[1], status_code=422)

    @app.exception_handler(_Stopped)
    async def _stopped(_: Request, e: _Stopped):
        return JSONResponse(_error_body(e)[1], status_code=503)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index():
        return HTMLResponse(STATIC.joinpath("index.html").read_text())

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
        from llm_codesign.spec.engines import engine_choices
        from llm_codesign.spec.hardware import catalog

        return _plain([g.to_dict() | engine_choices(g) for g in catalog().values()])

    @app.get("/api/accuracy", response_model=AccuracyReport)
    def accuracy():
        return _accuracy()

    # the searches are `async` only to count and watch them: their work runs in the thread pool, so a
    # search does not block the page's other calls
    @app.post("/api/estimate", response_model=Estimate, responses=searched)
    async def estimate(req: EstimateRequest, request: Request):
        return await guarded(request, "body", lambda job: _within_budget(job, lambda: _estimate(req, hub_cache=hub_cache)),
                             advice=PRICED_ADVICE)

    @app.post("/api/disagg", response_model=DisaggResponse, responses=searched)
    async def disagg(req: DisaggRequest, request: Request):
        return await guarded(request, "body", lambda job: _within_budget(job, lambda: _disagg(req, hub_cache=hub_cache)),
                             advice=PRICED_ADVICE)

    @app.post("/api/pareto", response_model=ParetoResponse, responses=searched)
    async def pareto(req: ParetoRequest, request: Request):
        return await guarded(request, "num_gpus", lambda job: _pareto(req, job, hub_cache=hub_cache))

    @app.post("/api/lint", response_model=LintResponse, responses=err)
    def lint(req: LintRequest):
        return _lint(req, hub_cache=hub_cache)

    @app.post("/api/design", response_model=DesignResponse, responses={
        **searched, 200: {"content": {NDJSON: {}}, "description": f"With `Accept: {NDJSON}`: progress lines, then the result line."}})
    async def design(req: DesignRequest, request: Request, accept: str = Header("", include_in_schema=False)):
        # a bad GPU or baseline is a 422, before a stream starts
        inputs = await run_in_threadpool(lambda: _design_inputs(req, hub_cache=hub_cache))
        if NDJSON not in accept:
            return await guarded(request, "max_candidates", lambda job: _design(req, job, inputs=inputs))
        if not slots.take():
            return busy()
        job = _Job(time_budget_s, "max_candidates")
        # the stream's end sets job.gone; the background task too, for a client gone before the stream started
        return StreamingResponse(_design_stream(req, job, inputs, slots.give), media_type=NDJSON,
                                 background=BackgroundTask(job.gone.set))

    return app
