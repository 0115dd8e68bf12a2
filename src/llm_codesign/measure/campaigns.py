"""Each serving campaign's harness and scheduler flags, per measurement row: data/measurements/campaigns.toml
(matched by the start of the row's source), then the row's own optional columns (FLAG_COLUMNS), which
override it. validate prices every row with them (spec.harness)."""
from __future__ import annotations

import csv
import math
import re
import tomllib
from functools import lru_cache
from importlib import resources

import numpy as np

from llm_codesign.errors import InputError
from llm_codesign.measure.audit import SETTING_FIELDS
from llm_codesign.serve.disagg import PREFILL_ROUTINGS
from llm_codesign.spec.engines import FUSIONS, MOE_A2A_BACKENDS
from llm_codesign.spec.harness import ARRIVALS, DEFAULT_ARRIVAL, FLAG_NAMES, FRACTION, SchedulerFlags, memory_fraction
from llm_codesign.spec.precision import DTYPES, get_dtype

# optional serving columns beside max_num_tokens: the arrival pattern and SchedulerFlags' fields
FLAG_COLUMNS = ("arrival", *FLAG_NAMES)
# a campaign's settings no row column overrides: how its disaggregated prefill instances spread requests over their
# attention-DP ranks (serve.disagg.PREFILL_ROUTINGS), where the campaign names it; whether its runs are an offline
# benchmark's (every request queued, throughput over the batch's life: serve.aggregated.evaluate's `offline`); the decode
# iterations between a disaggregated decode server's polls for new requests (SGLang --scheduler-recv-interval on its
# decode workers: serve.disagg.evaluate_disagg's `decode_recv_interval`, 1 where not named); the MoE exchange a disaggregated
# decode pool's launch flags name (Engine.with_moe_a2a: evaluate_disagg's `decode_moe_a2a`, the engine's default where not
# named); the SGLang build a row that names no image ran ("X.Y.Z", first_token_next_loop: the shipped runs that name none; a
# row of no such entry is today's); whether its tok/s/user is each request's output tokens over its whole latency, first
# token included (trtllm-bench's "Per User Output Throughput", labelled "[w/ ctx]" in its later versions: measure.validate.
# per_user_with_ctx), rather than 1 / TPOT; the CUDA graphs a disaggregated decode pool's workers capture (padded, per
# rank: evaluate_disagg's `decode_cuda_graph_max_bs`), as a number or, `decode_graphs_to_max_batch = true`, up to the
# workers' own max batch size (the row's decode_max_batch; blank: every batch they run); whether its launch ran the experts
# over EP = TP (MoE TP 1) whatever its ep and moe_tp columns say (`ep_is_tp = true`: a flag such as SGLang's --enable-ep-moe,
# which set ep_size = tp_size, where the harness recorded no EP; measure.validate.predict_serving reads it)
CAMPAIGN_KEYS = ("prefill_routing", "offline", "decode_recv_interval", "decode_moe_a2a", "sglang_build", "per_user_with_ctx",
                 "decode_cuda_graph_max_bs", "decode_graphs_to_max_batch", "ep_is_tp")
_BOOL = ("ignore_eos", "mixed_chunk", "chunked_prefill")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")
# an entry's `NAME_fusion = false`: the run's engine build does not make that fusion (Engine.without)
FUSION_KEYS = tuple(f"{f}_fusion" for f in FUSIONS)
# what an entry's `when` may test: the row's model and the columns saying what ran (measure.audit.SETTING_FIELDS), and
# inclusive bounds on its concurrency and on its InferenceX run id (min_run_id / max_run_id: e.g. a script's flag from the
# first run of the change that set it; a row with no run id matches none); `measured`: the date (YYYY-MM-DD) the silicon
# sample records for the row's run (serving_measured_blackwell.builds.csv; a row it does not list matches none), and
# `min_measured` an inclusive lower bound on it (a harness's setting from the date it began); a misspelt column would
# match no row, quietly
WHEN_KEYS = ("model", *SETTING_FIELDS, "min_concurrency", "max_concurrency", "min_run_id", "max_run_id", "measured", "min_measured")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# a campaign's KV-cache format where its rows leave kv_dtype blank (the engine flag its scripts pass: --kv-cache-dtype);
# validate reads it before its own blank-column rule
# and its speculative decoding where its rows leave spec_method blank (the method, its draft length and the mean accepted
# length a step, the last from a documented source: the rows record none; validate._spec)
ROW_DEFAULTS = ("kv_dtype", "spec_method", "spec_draft_len", "spec_acceptance")
SPEC_METHODS = ("mtp", "eagle3", "draft")
# the keys a campaign, one of its [[campaign.flags]] entries, its `when`, its `set`, its budget rules (`over_isl`,
# `over_isl_and_batch`, `round_up`) and its batch rule (`over_batch`: a flag sized to the row's requests per attention-DP
# rank plus the value, as a harness that sizes the engine's CUDA graphs to its run does) may hold
BUDGET_RULES = ("over_isl", "over_isl_and_batch", "round_up")
BATCH_RULES = ("over_batch",)
_KEYS = {"campaign": ("source", "flags", *FLAG_COLUMNS, *CAMPAIGN_KEYS), "entry": ("when", "set", *BUDGET_RULES, *BATCH_RULES),
         "when": WHEN_KEYS, "set": ("max_num_tokens", *FLAG_COLUMNS, *CAMPAIGN_KEYS, *FUSION_KEYS, *ROW_DEFAULTS),
         **{rule: ("max_num_tokens", "max_prefill_tokens") for rule in BUDGET_RULES}, "over_batch": ("cuda_graph_max_bs",)}
# each budget rule's values: token counts added to a budget (over_*) or the multiple it rounds up to (round_up, of which
# 0 would divide by zero in `settings`); over_batch's: requests added to the batch
_RULE_LEAST = {"over_isl": 0, "over_isl_and_batch": 0, "round_up": 1, "over_batch": 0}


def read_campaigns(text: str, origin: str = "campaigns.toml") -> tuple[dict, ...]:
    """A campaigns table's campaigns, every key checked: one it does not know (a misspelt flag or fusion would
    otherwise be dropped, or price today's build for an older one, quietly) is one line naming where it is."""
    out = tuple(tomllib.loads(text)["campaign"])
    for c in out:
        where = f"{origin} [{c.get('source')}]"
        parts = [("campaign", where, c)]
        for entry in c.get("flags", ()):
            parts.append(("entry", f"{where} flags", entry))
            parts.append(("when", f"{where} flags.when", entry.get("when", {})))
            parts += [(k, f"{where} flags.{k}", entry[k]) for k in ("set", *BUDGET_RULES, *BATCH_RULES) if k in entry]
        for kind, field, keys in parts:
            for key in keys:
                if key not in _KEYS[kind]:
                    raise InputError(field, key, "one of: " + ", ".join(_KEYS[kind]))
        # each setting's value, as the key takes it (a string where a count belongs would reach the pricing as text)
        values = [(f"{where} {k}", k, v) for k, v in c.items() if k in FLAG_COLUMNS or k in CAMPAIGN_KEYS]
        values += [(f"{where} flags.set.{k}", k, v) for entry in c.get("flags", ()) for k, v in entry.get("set", {}).items()]
        for field, key, v in values:
            what = _invalid(key, v)
            if what is not None:
                raise InputError(field, v, what)
        for entry in c.get("flags", ()):
            when = entry.get("when", {})
            for key in ("min_concurrency", "max_concurrency", "min_run_id", "max_run_id"):
                if key in when and not _whole(when[key], 1):
                    raise InputError(f"{where} flags.when.{key}", when[key], "a whole number of at least 1")
            if "min_measured" in when and not (isinstance(when["min_measured"], str) and _DATE.fullmatch(when["min_measured"])):
                raise InputError(f"{where} flags.when.min_measured", when["min_measured"], "a date, YYYY-MM-DD (a quoted string)")
            for lo, hi in (("min_concurrency", "max_concurrency"), ("min_run_id", "max_run_id")):
                if lo in when and hi in when and when[lo] > when[hi]:  # a bound no row meets: the entry would never apply
                    raise InputError(f"{where} flags.when.{lo}", when[lo], f"at most its {hi}, {when[hi]}")
            if "kv_dtype" in entry.get("set", {}):
                _check_kv(f"{where} flags.set.kv_dtype", entry["set"]["kv_dtype"], when)
            for rule, least in _RULE_LEAST.items():
                for key, v in entry.get(rule, {}).items():
                    if not _whole(v, least):
                        unit = "requests" if rule in BATCH_RULES else "tokens"
                        raise InputError(f"{where} flags.{rule}.{key}", v, f"a whole number of {unit}, {least} or more")
    return out


def _check_kv(field: str, kv: str, when: dict) -> None:
    """An entry's KV-cache format, as the CLI takes it (spec.engines.check_kv_format): on each engine and GPU its `when`
    names (every registered one where it names none), one a cache of that engine holds on that GPU; one line naming the
    entry where it is not (get_dtype's names include weight-only formats, int4 and fp8_block, no engine caches KV in)."""
    from llm_codesign.spec.engines import ENGINES, engines_on, get_engine
    from llm_codesign.spec.engines.base import check_kv_format
    from llm_codesign.spec.hardware import catalog, get_gpu

    listed = lambda k: [when[k]] if isinstance(when.get(k), str) else when.get(k)  # noqa: E731
    gpus = [get_gpu(g) for g in listed("gpu") or ()] or list(catalog().values())
    wanted = [get_engine(b).name for b in listed("backend") or ()] or list(ENGINES)
    pairs = [(get_engine(e), g) for g in gpus for e in wanted if e in engines_on(g)]
    try:
        for engine, gpu in pairs:
            check_kv_format(engine, gpu, kv)
    except InputError as e:
        raise InputError(field, kv, e.valid) from None


def _invalid(key: str, v) -> str | None:
    """What the harness setting `key` takes where `v` (a campaigns.toml value, or a row's column as `problem` parses it)
    is not that, else None: SchedulerFlags' fields, the arrival pattern, the step budget and CAMPAIGN_KEYS."""
    if key == "arrival":
        return None if v in ARRIVALS else "one of " + ", ".join(ARRIVALS)
    if key == "prefill_routing":
        return None if v in PREFILL_ROUTINGS else "one of " + ", ".join(PREFILL_ROUTINGS)
    if key == "decode_moe_a2a":
        return None if v in MOE_A2A_BACKENDS else "one of " + ", ".join(repr(b) for b in MOE_A2A_BACKENDS)
    if key == "sglang_build":
        return None if isinstance(v, str) and _SGLANG_VERSION.fullmatch(v) else 'an SGLang version such as "0.5.5.post2"'
    if key in _BOOL or key in ("offline", "per_user_with_ctx", "decode_graphs_to_max_batch", "ep_is_tp") or key in FUSION_KEYS:
        return None if isinstance(v, bool) else "true or false"
    if key == "kv_fraction":
        return None if memory_fraction(v) is not None else FRACTION
    if key == "queued_steps":  # SchedulerFlags.queued_steps: a synchronous loop's none to an overlap loop's one step
        x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")
        return None if 0.0 <= x <= 1.0 else "a number of steps from 0 to 1"
    if key == "spec_method":
        return None if v in SPEC_METHODS else "one of " + ", ".join(SPEC_METHODS)
    if key == "spec_acceptance":  # tokens a verify step keeps on average: its own token and some of its drafts
        x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")
        return None if x >= 1.0 else "a mean accepted length of at least 1"
    if key == "kv_dtype":
        try:
            get_dtype(v if isinstance(v, str) else "", "kv_dtype")
        except InputError:
            return "one of: " + ", ".join(DTYPES)
        return None
    x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")
    if key == "rounds":  # inf: the steady state, no first-wave burst (SchedulerFlags.rounds)
        return None if x >= 1 and (x.is_integer() or math.isinf(x)) else "a whole number of at least 1, or inf"
    return None if math.isfinite(x) and x >= 1 and x.is_integer() else "a whole number of at least 1"


def _whole(v, least: int) -> bool:
    """Whether a table's value is a whole number of at least `least` (TOML's true is no number here)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


@lru_cache(maxsize=1)
def campaigns() -> tuple[dict, ...]:
    """The bundled table's campaigns, as read."""
    return read_campaigns(resources.files("llm_codesign").joinpath("data/measurements/campaigns.toml").read_text())


def fusions_off(sets: dict) -> tuple[str, ...]:
    """The fusions a row's settings (`sets`, as `settings` returns them) say its engine build does not make (`NAME_fusion = false`)."""
    return tuple(key.removesuffix("_fusion") for key in FUSION_KEYS if sets.get(key) is False)


def _matches(when: dict, r: dict) -> bool:
    for key, want in when.items():
        if key in ("min_concurrency", "max_concurrency"):
            c = (r.get("concurrency") or "").strip()
            if not c or (float(c) < want if key == "min_concurrency" else float(c) > want):
                return False
            continue
        if key in ("measured", "min_measured"):
            have = _sample_builds().get((r.get("source") or "").strip(), ("", ""))[1]
            if not have or (have < want if key == "min_measured" else have not in (want if isinstance(want, list) else [want])):
                return False
            continue
        if key in ("min_run_id", "max_run_id"):
            run = inferencex_run_id(r.get("source") or "")
            if run is None or (run < want if key == "min_run_id" else run > want):
                return False
            continue
        have = (r.get(key) or "").strip().lower()
        wants = want if isinstance(want, list) else [want]
        if not any(have == str(w).lower() or (isinstance(w, int) and have and float(have) == w) for w in wants):
            return False
    return True


def campaign_of(r: dict) -> dict | None:
    """What the bundled campaign a row belongs to (the first whose source starts the row's `source`) sets for it: its
    settings and the entries whose `when` the row matches (key -> value, as settings() takes them where the row gives
    none); None where no campaign's source does."""
    source = (r.get("source") or "").strip().lower()
    c = next((c for c in campaigns() if source.startswith(c["source"])), None)
    if c is None:
        return None
    out = {k: v for k, v in c.items() if k in FLAG_COLUMNS or k in CAMPAIGN_KEYS}
    isl = (r.get("isl") or "").strip()
    for entry in c.get("flags", ()):
        if _matches(entry.get("when", {}), r):
            out |= entry.get("set", {})
            if isl:  # a budget the harness sizes from the row's prompt: its ISL + the value
                out |= {k: float(isl) + v for k, v in entry.get("over_isl", {}).items()}
            batch = _batch_per_rank(r)
            if isl and batch:  # ... and from its batch too: ISL + max_batch_size + the value
                out |= {k: float(isl) + batch + v for k, v in entry.get("over_isl_and_batch", {}).items()}
            if batch:  # a flag sized to the run's batch per rank: max_batch_size + the value
                out |= {k: float(batch + v) for k, v in entry.get("over_batch", {}).items()}
            for k, n in entry.get("round_up", {}).items():  # a budget the harness rounds up to a multiple of n
                if out.get(k) is not None:
                    out[k] = float(math.ceil(out[k] / n) * n)
    return out


# TensorRT-LLM launches its kernels with PDL by default from 1.2 (spec/engines/trtllm.py `pdl`); before it only where the
# run exports TRTLLM_ENABLE_PDL=1 (flashinfer_utils.get_env_enable_pdl's default "0" then, "1" after). Any 1.2 pre-release
# counts (1.2.0rc0 on): the data's first 1.2 build is 1.2.0rc2
TRTLLM_PDL_DEFAULT_FROM = (1, 2, 0, 0, 0)
# a TensorRT-LLM release as its images and tables name it: 1.1.0rc2.post2, 1.2.0rc2, 1.3.0rc14, v0.17 (the perf overview's);
# nothing else (a Dynamo version such as 0.5.1-rc0.pre3, a dev tag) is read as one. Parsed to (major, minor, patch, rc, post),
# a final release's rc above any pre-release's, so tuples compare as the releases do
_TRTLLM_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:rc(\d+))?(?:\.post(\d+))?$")
_FINAL = 10**6
# a row's TensorRT-LLM build where its source names it: an InferenceX run's release image (`image=nvcr.io/nvidia/tensorrt-
# llm/release:1.1.0rc2.post2`), a perf-overview table's release (`..._total.csv:2 (...; v0.17 (...`); the silicon sample's
# runs from its backend_version column (serving_measured_blackwell.builds.csv, tools/silicon_builds.py). A Dynamo runtime
# image (`tensorrtllm-runtime:0.8.1`) names Dynamo's version, not the engine's: no build read
_BUILD_IN_SOURCE = re.compile(r"tensorrt-llm/release:(\S+)|_total\.csv:\d+ \(.*; (v\d+\.\d+) \(")
# InferenceX's TensorRT-LLM runs with no image in their source: the release by GitHub Actions run id, from the runs that
# name theirs (data/measurements/serving_inferencex_blackwell.csv: 1.1.0rc2.post2 below run 21484110885, Dec. 2025;
# 1.2.0rc6.post2 from it, Jan. 2026), the one rule benchmarks/crossval_campaigns.py's campaign B and validation_report.py use
TRTLLM_NEW_BUILDS = 21484110885
_INFERENCEX_BUILDS = ("1.1.0rc2.post2", "1.2.0rc6.post2")
# the silicon sample's TensorRT-LLM rows with no build recorded but measured before the data's first 1.2 build
# (1.2.0rc2, measured 2025-12-17: aiconfigurator@095f58a5 systems/silicon_sample.csv, its silicon_data_source
# `measured=`; the builds CSV's `measured` column) ran an older one: priced as < 1.2
TRTLLM_FIRST_1_2_MEASURED = "2025-12-17"


def parse_trtllm_version(text: str) -> tuple[int, int, int, int, int] | None:
    """(major, minor, patch, rc, post) of a TensorRT-LLM release string in a known format (_TRTLLM_VERSION), else None."""
    m = _TRTLLM_VERSION.match((text or "").strip())
    if m is None:
        return None
    major, minor, patch, rc, post = m.groups()
    return int(major), int(minor), int(patch or 0), _FINAL if rc is None else int(rc), int(post or 0)


def inferencex_run_id(source: str) -> int | None:
    """The GitHub Actions run that measured an InferenceX row (its source's URL), None for another source."""
    m = re.search(r"InferenceX/actions/runs/(\d+)", source or "")
    return int(m.group(1)) if m else None


@lru_cache(maxsize=1)
def _sample_builds() -> dict[str, tuple[str, str]]:
    text = resources.files("llm_codesign").joinpath("data/measurements/serving_measured_blackwell.builds.csv").read_text()
    return {r["source"]: (r["build"], r.get("measured") or "") for r in csv.DictReader(text.splitlines())}


def unparsed_builds() -> list[str]:
    """The builds the sample's builds CSV names that parse_trtllm_version does not read (validate's data checks warn)."""
    return sorted({b for b, _ in _sample_builds().values() if b and parse_trtllm_version(b) is None})


# an SGLang row's build where its source names the image (`image=lmsysorg/sglang:v0.5.8.post1-cu130`): (major, minor, patch)
_SGLANG_IMAGE = re.compile(r"lmsysorg/sglang:v(\d+)\.(\d+)\.(\d+)")
# a campaign's `sglang_build` (0.5.5.post2): (major, minor, patch) and an optional suffix
_SGLANG_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.post\d+|rc\d+)?")
# the first SGLang build whose disaggregated decode server streams a prebuilt request's first token in the loop that sees
# its cache (0.5.10 disaggregation/decode.py:1212-1243, get_next_disagg_decode_batch_to_run processes the prebuilt batch's
# result before scheduling the decode step); up to 0.5.9 the prebuilt batch runs as that loop's batch and its result,
# under the overlap scheduler, is processed in the next loop (0.5.5.post2 decode.py:806-884, 0.5.8.post1 :860-945, 0.5.9 :926-1012)
SGLANG_SAME_LOOP_FIRST_TOKEN = (0, 5, 10)


def sglang_build(r: dict) -> tuple[int, int, int] | None:
    """The SGLang build (major, minor, patch) an SGLang row's source names in its image, else its campaign's `sglang_build`
    for it (campaigns.toml: the shipped runs that name none), else None (today's build)."""
    m = _SGLANG_IMAGE.search(r.get("source") or "") or _SGLANG_VERSION.fullmatch(str((campaign_of(r) or {}).get("sglang_build", "")))
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def first_token_next_loop(r: dict) -> bool:
    """Whether a disaggregated SGLang row's decode servers stream the first token a loop after they see the cache (a build
    before SGLANG_SAME_LOOP_FIRST_TOKEN, as the row's image or its campaign's `sglang_build` names it); False for any other
    engine's row, for a later build and for a row naming none, which is read as today's build (serve.disagg.decode_admission's
    `next_loop`)."""
    if (r.get("backend") or "").strip().lower() != "sglang":
        return False
    build = sglang_build(r)
    return build is not None and build < SGLANG_SAME_LOOP_FIRST_TOKEN


def trtllm_build(r: dict) -> tuple[int, int, int, int, int] | None:
    """The TensorRT-LLM build (parse_trtllm_version's tuple) a TensorRT-LLM row ran where its source, its InferenceX run id
    or the sample's record names it; a sample row with none recorded but measured before TRTLLM_FIRST_1_2_MEASURED is
    taken as 1.1 (1.1.0rc2.post2, the sample's one older build); else None."""
    from llm_codesign.spec.engines import get_engine

    backend = (r.get("backend") or "trtllm").strip()
    try:
        if get_engine(backend).name != "trtllm":
            return None
    except InputError:
        return None
    source = (r.get("source") or "").strip()
    m = _BUILD_IN_SOURCE.search(source)
    if m:
        return parse_trtllm_version(m.group(1) or m.group(2))
    run = inferencex_run_id(source)
    # no image named (`image=` blank) on a run of TensorRT-LLM's own server; a Dynamo run (framework dynamo-trt: the
    # disaggregated recipes) ran a runtime image the rule was not read from
    dynamo = "tensorrtllm-runtime" in source or (r.get("framework") or "").strip().lower().startswith("dynamo")
    if run is not None and not dynamo:
        return parse_trtllm_version(_INFERENCEX_BUILDS[run >= TRTLLM_NEW_BUILDS])
    build, measured = _sample_builds().get(source, ("", ""))
    if build:
        return parse_trtllm_version(build)
    if measured and measured < TRTLLM_FIRST_1_2_MEASURED:
        return parse_trtllm_version("1.1.0rc2.post2")
    return None


# SGLang's ROCm releases InferenceX ran for DeepSeek-R1 on MI355X (SemiAnalysisAI/InferenceX .github/configs/amd-master.yaml,
# its history to 843c6254): both formats on rocm/7.0:...sgl-dev-v0.5.2-rocm7.0-mi35x-20250915 from Sept. 2025; MXFP4 on
# lmsysorg/sglang:v0.5.6.post1-rocm700-mi35x from PR #330 (332fec529, 2025-12-16), then v0.5.6.post2, 0.5.7, 0.5.8, ...; FP8
# on v0.5.5.post3-rocm700-mi35x from PR #332 ("Use upstream SGLang images ...", #307; 70c1eceb6, 2026-01-05), v0.5.8 from
# PR #572 (2a796d10e, 2026-01-27: "Disables mla persistent kernel when not using fp8 kv_cache", sglang#17327), then later.
# (PR #247's lmsysorg images of 2025-12-05 were reverted within the day, #295.) The rows name a run, not an image: each
# release's first run is where the runs' time per token steps down at the same settings (data/measurements/
# serving_inferencex_mi355x.csv: FP8 TP8 1k/1k at 4 requests 18.5 -> 14.5 -> 9.2-9.9 ms; MXFP4 TP8 at 16 requests 15.9 ->
# 12.1 ms, as later), and the run ids fall in the dates above (anchors: 21484110885 is a 1.2.0rc6.post2 run, merged
# 2026-01-29 (ec7bafaae); 20621824084 an SGLang v0.5.6 B200 run, merged 2025-12-31 (d27433dff); serving_inferencex_blackwell.csv)
SGLANG_ROCM_FIRST = "0.5.2"
# the campaign (campaigns.toml `source`) whose runs SGLANG_ROCM_BUILDS dates
INFERENCEX = "inferencex"
# weight format -> (first run id, release) from which the runs ran that release or a later one. campaigns.toml's entries
# bounded one below two of these (its 0.5.2 FP8 rows' fp8_bmm_fusion = false, max_run_id 20720630952; the MXFP4 rows'
# BF16 KV cache, max_run_id 20384527242) read the same boundaries: a `when` tests the row's columns and run id, not
# this table, so a boundary moved here is moved there too (tests/test_campaigns.py checks they agree)
SGLANG_ROCM_BUILDS = {"fp8_block": ((20720630953, "0.5.5.post3"), (21407590933, "0.5.8")),
                      "mxfp4": ((20384527243, "0.5.6.post1"),)}


def _campaign_source(r: dict) -> str | None:
    """The bundled campaign's `source` prefix a row's source starts with (campaign_of's match), None where none does."""
    source = (r.get("source") or "").strip().lower()
    return next((c["source"] for c in campaigns() if source.startswith(c["source"])), None)


def sglang_rocm_build(r: dict) -> str | None:
    """The SGLang ROCm release an InferenceX MI355X SGLang row ran (SGLANG_ROCM_BUILDS: the first release of its run's
    image, or the lowest one where later images followed), None for another row (another engine, GPU or source: a
    user's row citing an InferenceX run URL but not of the `inferencex` campaign is today's build)."""
    from llm_codesign.spec.engines import get_engine

    if _campaign_source(r) != INFERENCEX:
        return None
    try:
        if get_engine((r.get("backend") or "").strip() or "-").name != "sglang":
            return None
    except InputError:
        return None
    run = inferencex_run_id(r.get("source") or "")
    weight = (r.get("weight_dtype") or "").strip().lower()
    if run is None or (r.get("gpu") or "").strip().lower() != "mi355x" or weight not in SGLANG_ROCM_BUILDS:
        return None
    out = SGLANG_ROCM_FIRST
    for first, release in SGLANG_ROCM_BUILDS[weight]:
        if run >= first:
            out = release
    return out


def settings(r: dict) -> dict:
    """The row's arrival pattern, step chunk (max_num_tokens, None: the engine's default) and scheduler
    flags (SchedulerFlags field -> value), the campaign's where the row gives none (campaign_of), and the
    campaign's CAMPAIGN_KEYS it names. Values as read:
    `problem` says which of the row's own are not valid."""
    out: dict = {"arrival": DEFAULT_ARRIVAL, "max_num_tokens": None}  # a row of no campaign: the tool's default (Workload)
    build = trtllm_build(r)
    if build is not None and build < TRTLLM_PDL_DEFAULT_FROM:  # PDL off by default; a campaign entry saying more overrides
        out["pdl_fusion"] = False
    out |= campaign_of(r) or {}
    for col in ("max_num_tokens", *FLAG_COLUMNS):
        v = (r.get(col) or "").strip()
        if v:
            out[col] = v.lower() in _TRUE if col in _BOOL else v if col == "arrival" else float(v)
    return out


def _batch_per_rank(r: dict) -> int | None:
    """The requests a row's run held per attention-DP rank, ceil(concurrency / attention_dp): the max_batch_size a harness
    that sizes the engine to its run sets (data/measurements/campaigns.toml), None where the row records no concurrency.
    Both columns as `problem` passes them: whole numbers of at least 1 (blank attention_dp: 1)."""
    c, adp = (r.get("concurrency") or "").strip(), (r.get("attention_dp") or "").strip()
    return -(-int(float(c)) // int(float(adp or 1))) if c else None  # whole numbers: ceil by floor division, no float error


def problem(r: dict, line: int) -> str | None:
    """Why the row's own harness columns, or the ones `settings` sizes budgets from (concurrency, attention_dp), cannot be
    read (one line naming the column and what is valid), or None."""
    for col in ("concurrency", "attention_dp", *FLAG_COLUMNS):
        v = (r.get(col) or "").strip()
        if not v:
            continue
        if col in _BOOL:  # true/false, 1/0, yes/no; anything else stays text, which _invalid refuses
            x = True if v.lower() in _TRUE else False if v.lower() in _FALSE else v
        elif col == "arrival":
            x = v
        else:
            try:
                x = float(v)
            except ValueError:
                x = float("nan")
        what = _invalid(col, x)
        if what is not None:
            return f"line {line} {col}: {v!r} is not valid; {what} or empty"
    return None


def group_flags(sets: list[dict], engine) -> SchedulerFlags | None:
    """SchedulerFlags over a group's rows of one engine (arrays, one value per row; a flag no row sets
    keeps its default, mixed_chunk and chunked_prefill the engine's own), or None where no row sets any."""
    kw = {}
    default = SchedulerFlags()
    for name in FLAG_NAMES:
        vals = [s.get(name) for s in sets]
        if all(v is None for v in vals):
            continue
        d = {"mixed_chunk": engine.mixes_prefill, "chunked_prefill": engine.chunks_prefill}.get(name, getattr(default, name))
        kw[name] = np.array([d if v is None else v for v in vals], bool if name in _BOOL else float)
    return SchedulerFlags(**kw) if kw else None
