"""vLLM's export: a `vllm serve --config` YAML (each key a long flag without its dashes)."""
from __future__ import annotations

import json
import re
import shlex

from llm_codesign.errors import InputError, parse_nested
from llm_codesign.explore import yaml_io
from llm_codesign.explore.export_engines.base import (
    Exporter,
    Flags,
    code_lines,
    command_words,
    draft_path,
    engine_spec,
    env_words,
    exporter,
    file_beside,
    fraction,
    hf_id,
    kv_option,
    launch_batch,
    nested,
    nested_keys,
    plan_ints,
    read_flags,
    read_spec,
    register_exporter,
    resolve_option,
    weight_option,
    whole,
    written_capture,
)
from llm_codesign.spec.engines import VLLM
from llm_codesign.spec.engines.head_dims import vllm_fallback
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.plan import Deployment, Plan


def vllm_options(model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
    """`vllm serve --config` keys for one instance (vLLM runs experts all-EP or all-TP, attention DP as DP ranks: an EP x
    MoE-TP plan is the engine's refusal, VLLM.runs_plans, applied by explore.export.engine_runs)."""
    tp, pp, ep, _, adp, kvp = plan_ints(dep.plan)
    o = {"model": hf_id(model), "tensor-parallel-size": tp * kvp, "pipeline-parallel-size": pp}
    if adp > 1:
        o["data-parallel-size"] = adp
    if kvp > 1:
        o["decode-context-parallel-size"] = kvp  # DCP shards the KV cache over ranks of the TP group
    if model.is_moe and ep > 1:
        o["enable-expert-parallel"] = True
    if q := weight_option(model, dep.precision, "vllm"):
        o["quantization"] = q
    o["kv-cache-dtype"] = kv_option(dep.precision, "vllm")
    if fallback := vllm_fallback(model, dep.gpu, dep.precision.kv.name):
        # an FP8 cache's head size FA3 refuses, which vLLM's selector picks it for anyway (spec.engines.head_dims): the
        # server needs the backend named (--attention-backend, vllm/engine/arg_utils.py:1114@0.33.0)
        o["attention-backend"] = fallback
    o["max-num-seqs"] = launch_batch(dep, concurrency, adp)  # each DP rank schedules its own batch
    o["max-num-batched-tokens"] = dep.step_tokens
    o["enable-chunked-prefill"] = dep.chunked_prefill is not False
    if dep.chunked_prefill is False:
        # V1 honours it: a waiting prompt over the step's token budget is not scheduled (the loop breaks, so prompts run
        # whole, v1/core/sched/scheduler.py:1335-1344@0.33.0), and SchedulerConfig.verify_max_model_len refuses a launch whose
        # max_num_batched_tokens is under max_model_len (config/scheduler.py:317-329): the context is capped at the budget
        o["max-model-len"] = min(dep.step_tokens, model.max_context or dep.step_tokens)
    o["gpu-memory-utilization"] = exporter("vllm").written_kv_fraction(dep)
    # the deployment's capture where it states one: --max-cudagraph-capture-size counts tokens, a decode request's 1 + k
    # (VllmConfig._set_cudagraph_sizes, uniform_decode_query_len; vllm/config/vllm.py:2398-2470@0.33.0), --enforce-eager none
    # (written_capture: where the default would not hold it)
    graphs = written_capture(dep, o["max-num-seqs"])
    if graphs == 0:
        o["enforce-eager"] = True
    elif graphs is not None:
        o["max-cudagraph-capture-size"] = graphs * (1 + dep.draft_len)
    if dep.piecewise_graphs and graphs != 0:  # the decode graphs as pieces between the attention ops (graph_mode)
        o["compilation-config"] = nested("vllm", "compilation-config", cudagraph_mode="PIECEWISE")
    if dep.spec is not None:
        draft = {"model": draft_path(dep.spec.draft_model)} if dep.spec.method in ("eagle3", "draft") and dep.spec.draft_model else {}
        # prompt lookup's n-gram sizes stated at vLLM's own default, 5 and 5 (SpeculativeConfig.__post_init__,
        # vllm/config/speculative.py:1300-1305@0.33.0): the match's length moves the hit rate, the user's --acceptance
        lookup = {"prompt_lookup_max": NGRAM_LOOKUP, "prompt_lookup_min": NGRAM_LOOKUP} if dep.spec.method == "ngram" else {}
        o["speculative-config"] = nested("vllm", "speculative-config", method=engine_spec("vllm")["spec_method"][dep.spec.method],
                                         num_speculative_tokens=dep.spec.k, **draft, **lookup)
    return o


# the longest request an export's max-model-len admits: the workload's isl + osl rounded up to a multiple of this (vLLM's
# KV block is 16 tokens; a round figure leaves room for a few more tokens a request), within the model's context and,
# with chunked prefill off, the step budget. Unset, vLLM takes the model's whole context (ModelConfig.max_model_len None,
# vllm/config/model.py:249, 824@0.33.0) and refuses to start where the KV cache cannot hold one such request
# (_check_enough_kv_cache_memory, vllm/v1/core/kv_cache_planning.py:50-86, called at :1551-1559@0.33.0): Llama-3.1-70B on
# two H100s holds ~5 GB of KV a GPU where its 131,072 tokens need 21.5 GB
CONTEXT_ROUND = 1024


def model_len(o: dict, model: ModelSpec, tokens: int) -> int:
    """The max-model-len an export writes for requests of up to `tokens` (isl + osl, a closed loop's largest draws:
    spec.harness.longest_request) under options `o` (CONTEXT_ROUND)."""
    return min(x for x in (-(-int(tokens) // CONTEXT_ROUND) * CONTEXT_ROUND, o.get("max-model-len"), model.max_context) if x)


NGRAM_LOOKUP = 5  # vLLM's prompt_lookup_min and _max where neither is given (vllm/config/speculative.py:1302-1305@0.33.0)


# CompilationConfig.cudagraph_mode (vllm/config/compilation.py:53-63@0.33.0 wheel, CUDAGraphMode): a name in any case
# (validate_cudagraph_mode_before upper-cases a string, :873-879) or the enum's value, 0 / 1 / 2 for the three runtime modes.
# What each runs a decode step as (CUDAGraphMode.decode_mode, :65-66): NONE eager; PIECEWISE the graph's pieces between the
# splitting ops, each layer's attention op (and its KV-cache write) launched from the host between them (_attention_ops
# :768-790, set as splitting_ops :1184, unified_kv_cache_update :1186-1213), priced so (Deployment.piecewise_graphs,
# serve.aggregated.piecewise_launches); FULL, FULL_DECODE_ONLY and FULL_AND_PIECEWISE (the default at -O2 / -O3) one full
# graph. They differ only in a mixed step within the capture (full, eager, piecewise), which the step model does not tell
# apart (a step carrying prefill is priced at the fitted eager launch cost, data/calibration/default.toml
# [default.eager_launch_s]); a decode step above the capture runs without graphs in every mode (DECODE_LAUNCH_S)
GRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
# the cudagraph_mode each -O level sets where the run sets none (OPTIMIZATION_LEVEL_00-03, vllm/config/vllm.py:255-345;
# applied only to a field left unset, _apply_optimization_level_defaults :1039-1067): -O0 none, -O1 piecewise
LEVEL_MODES = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}
# compilation-config's fields import reads (the capture and its mode); the others are listed as ignored, each by name
CC_READ = frozenset({"cudagraph_mode", "max_cudagraph_capture_size", "cudagraph_capture_sizes"})


def graph_mode(o: dict) -> str | None:
    """The CUDA-graph mode a vLLM configuration sets, by CUDAGraphMode's name: compilation-config's cudagraph_mode, else the
    one its -O level (--optimization-level) sets, else None (vLLM's default, FULL_AND_PIECEWISE at -O2); anything else one
    line naming the field."""
    cc = o.get("compilation-config")
    mode = cc.get("cudagraph_mode") if isinstance(cc, dict) else None
    if mode is not None:
        name = mode.upper() if isinstance(mode, str) else GRAPH_MODES[mode] if type(mode) is int and 0 <= mode <= 2 else None
        if name not in GRAPH_MODES:
            raise InputError("compilation-config.cudagraph_mode", mode, f"one of {', '.join(GRAPH_MODES)} (in any case), or 0, 1, 2 "
                             "(CUDAGraphMode's values, vllm/config/compilation.py:53-63@0.33.0)")
        return name
    level = o.get("optimization-level")
    if level is None:
        return None
    n = level if type(level) is int else int(level) if isinstance(level, str) and level.strip() in ("0", "1", "2", "3") else None
    if n not in LEVEL_MODES:
        raise InputError("optimization-level", level, "0, 1, 2 or 3 (-O0 to -O3; OptimizationLevel, vllm/config/vllm.py:132-144@0.33.0)")
    return LEVEL_MODES[n]


def draft_tokens(o: dict) -> int:
    """The tokens a vLLM configuration drafts a step (speculative-config's num_speculative_tokens, or --spec-tokens), 0 where
    it drafts none: a decode request's 1 + k tokens are what its capture sizes count."""
    sc = o.get("speculative-config")
    k = (sc.get("num_speculative_tokens") if isinstance(sc, dict) else None) or o.get("spec-tokens")
    return whole("num_speculative_tokens", k, 0, hi=16)


# The flags vLLM 0.33.0 reads with human_readable_int (vllm/engine/arg_utils.py:395-409, _compute_kwargs: an int field
# named in human_readable_int_args), --max-model-len with human_readable_int_or_auto (-1 / auto besides,
# vllm/utils/argparse_utils.py:77-94); every other int flag is argparse's int, which refuses `1k`
HUMAN_INT = ("max-num-batched-tokens", "max-num-scheduled-tokens", "kv-cache-memory-bytes", "safetensors-prefetch-block-size",
             "max-num-queued-tokens", "max-model-len")
# decimal suffixes (decimals allowed) and binary ones (whole numbers only): argparse_utils.py:43-72@0.33.0
_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
SUFFIXES = ("vLLM 0.33.0's suffixes (human_readable_int, vllm/utils/argparse_utils.py:30-74): 8k = 8,000 and 2.5k = 2,500 "
            "(k m g t, powers of 1,000), 8K = 8,192 (K M G T, powers of 1,024, whole numbers only)")
HUMAN_VALID = "a whole number, or one with " + SUFFIXES


def human_int(value: str) -> int:
    """An integer as vLLM's human_readable_int reads it (argparse_utils.py:30-74@0.33.0): `1k` 1,000, `25.6k` 25,600,
    `1K` 1,024, else int(value); ValueError where vLLM's raises (`1.5K`, `8x`, `1e3`)."""
    v = value.strip()
    if m := re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", v, flags=re.ASCII):
        number, suffix = m.groups()
        return int(float(number) * _SUFFIX[suffix]) if suffix.islower() else int(number) * _SUFFIX[suffix]
    return int(v)


def _expand_numbers(text: str) -> str:
    """A JSON config's bare `80k` tokens as numbers, quoted strings left alone, as vLLM expands a dataclass-typed flag's
    JSON before validating it (_expand_json_human_readable_numbers, vllm/engine/arg_utils.py:302-321, :371@0.33.0)."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', text)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b", lambda m: str(human_int(m.group())), parts[i], flags=re.ASCII)
    return "".join(parts)


def human_values(o: Flags) -> Flags:
    """`o` with HUMAN_INT's values read as vLLM reads them (`--max-num-batched-tokens 8k` is 8,000, 8K 8,192; a YAML
    config's values reach vLLM's parser as their text, load_config_file :653-671) and a compilation-config given as JSON
    text with `1k` in it expanded (its dotted keys, optimization_words); anything else vLLM refuses one line naming the
    flag as typed. --speculative-config is plain JSON (arg_utils.py:1864): not expanded."""
    for k in HUMAN_INT:
        v = o.get(k)
        if v is None or type(v) is int:
            continue
        try:
            if not isinstance(v, str):
                raise ValueError(v)  # 8192.0, true: vLLM's parser gets their text, which int() refuses
            o[k] = -1 if k == "max-model-len" and v.strip().lower() in ("-1", "auto") else human_int(v)
        except ValueError:
            raise InputError(o.typed.get(k, k), v, HUMAN_VALID + (", or -1 / auto" if k == "max-model-len" else "")) from None
    cc = o.get("compilation-config")
    if isinstance(cc, str):
        try:
            text = _expand_numbers(cc)
        except ValueError:  # `1.5K` in it: vLLM's ArgumentTypeError
            raise InputError(o.typed.get("compilation-config", "compilation-config"), cc,
                             "JSON whose unquoted numbers take " + SUFFIXES) from None
        try:
            o["compilation-config"] = parse_nested(json.loads, text, "compilation-config", cc)
        except json.JSONDecodeError:  # not JSON even so: listed as not a mapping (VLLMExporter.unread)
            pass
    return o


def optimization_words(words: list[str]) -> list[str]:
    """vLLM's -O spellings and dotted config flags as FlexibleArgumentParser rewrites them before argparse
    (vllm/utils/argparse_utils.py@0.33.0): -O3, -O=3 and -O 3 are --optimization-level 3 (:395-406); `--X.a.b v`,
    `--X.a.b=v` and `-cc.a v` fold into one `--X '{"a": {"b": v}}'` appended after the other words, values read as JSON
    else the word, `+` keys as a comma list (:462-500), so `--compilation-config.cudagraph_mode NONE` reaches graph_mode.
    A bare -O, `-O 7` and `-O.x=v` (0.33.0 has -O as the level only: `-O.x` becomes the level `.x`) are refused naming -O."""
    level = "0, 1, 2 or 3 (-O0 to -O3, -O=N, -O N: vLLM 0.33.0's --optimization-level, argparse_utils.py:395-406; " \
            "compilation-config's fields are -cc.FIELD / --compilation-config.FIELD, :462-489)"
    out, dotted, i = [], {}, 0
    while i < len(words):
        w = words[i]
        if w == "-O":
            nxt = words[i + 1] if i + 1 < len(words) else None
            if nxt not in ("0", "1", "2", "3"):
                raise InputError("-O", "-O" if nxt is None else f"-O {nxt}", level)
            out.append("--optimization-level")
        elif w.startswith("-O"):
            n = w[3:] if w[2] == "=" else w[2:]
            if n not in ("0", "1", "2", "3"):
                raise InputError("-O", w, level)
            out += ["--optimization-level", n]
        elif w.startswith("-") and "." in w.partition("=")[0] and w.lstrip("-")[:1].isalpha():
            key, eq, value = w.partition("=")
            if not eq:
                if i + 1 >= len(words):
                    raise InputError(key, None, "a value after it (vLLM reads the next word)")
                i, value = i + 1, words[i + 1]
            if key.endswith("+"):
                key, value = key[:-1], json.dumps(value.split(","))
            head, *path = key.split(".")
            head = "--" + head[2:].replace("_", "-") if head.startswith("--") else head  # dashes before the first dot only
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                try:  # `-cc.max_cudagraph_capture_size 1k`: human_readable_int's 1,000, else the word (:475-485)
                    value = human_int(value)
                except ValueError:
                    pass
            node = dotted.setdefault(head, {})
            for k in path[:-1]:
                if not isinstance(node.get(k), dict):
                    node[k] = {}
                node = node[k]
            node[path[-1]] = node[path[-1]] + value if isinstance(value, list) and isinstance(node.get(path[-1]), list) else value
        else:
            out.append(w)
        i += 1
    for head, tree in dotted.items():  # after the rest, as vLLM appends them (argparse's last word wins)
        out += [head, json.dumps(tree)]
    return out


class VLLMExporter(Exporter):
    name, file_name, dynamo_image = VLLM.name, "vllm_config.yaml", "vllm"
    reads = frozenset({"attention-backend", "model", "tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size", "decode-context-parallel-size",
                       "enable-expert-parallel", "quantization", "kv-cache-dtype", "max-num-seqs", "max-num-batched-tokens",
                       "enable-chunked-prefill", "gpu-memory-utilization", "speculative-config", "spec-method", "spec-tokens", "spec-model",
                       "enforce-eager", "max-cudagraph-capture-size", "cudagraph-capture-sizes", "compilation-config", "optimization-level"})
    switches = frozenset({"enable-expert-parallel", "enable-chunked-prefill", "enforce-eager"})

    def options(self, model: ModelSpec, dep: Deployment, concurrency: int) -> dict:
        return vllm_options(model, dep, concurrency)

    def with_context(self, opts: dict, model: ModelSpec, dep: Deployment, tokens: int | None) -> dict:
        """max-model-len for the workload's requests (model_len), so the launch starts where its KV cache holds one."""
        return opts if tokens is None else {**opts, "max-model-len": model_len(opts, model, tokens)}

    def render(self, opts: dict, *, head: list[str], model: ModelSpec, file_name: str, env: dict[str, str]) -> str:
        # quoted as trtllm's line is (shlex.join): a name with a space ran as two arguments
        cmd = shlex.join([*env_words(env), "vllm", "serve", "--config", file_name])
        return "\n".join(head + [f"# launch: {cmd}", yaml_io.dump(opts)]) + "\n"

    def parse(self, text: str, origin: str = "export") -> tuple[dict, str | None]:
        """Its export or a `vllm serve --config` YAML (keys as flags, underscores or dashes), or a `vllm
        serve MODEL ...` command line (`python -m vllm.entrypoints.openai.api_server`, the vllm-openai
        image's arguments): its options by their documented names, and the model they name."""
        words = command_words(text, origin) if any(m in code_lines(text) for m in COMMAND_MARKERS) else None
        if words is None:
            o = human_values(Flags(_yaml_options(text, origin)))
            return o, o.get("model")
        start = next((i + 1 for i, w in enumerate(words) if (w == "serve" and i and words[i - 1].endswith("vllm"))
                      or w.endswith(("vllm.entrypoints.openai.api_server", "vllm-openai")) or "vllm-openai:" in w), len(words))
        o, pos = read_flags(optimization_words(words[start:]), "vllm", origin)
        if isinstance(o.get("config"), str):  # `--config FILE`: its keys beneath the command line's (vLLM's precedence)
            o = Flags({**_yaml_options(file_beside(o.pop("config"), origin), origin), **o}, typed=o.typed)
        return human_values(o), o.get("model") or (pos[0] if pos else None)

    def plan_from(self, o: dict, model: ModelSpec) -> tuple[Plan, int | None]:
        sizes = {k: whole(k, o.get(k)) for k in ("tensor-parallel-size", "pipeline-parallel-size", "data-parallel-size",
                                                 "decode-context-parallel-size")}
        kvp, tps = sizes["decode-context-parallel-size"], sizes["tensor-parallel-size"]
        if tps % kvp:  # DCP shards the KV cache over ranks of the TP group
            raise InputError("tensor-parallel-size", tps, f"a multiple of decode-context-parallel-size ({kvp})")
        tp, pp, adp = tps // kvp, sizes["pipeline-parallel-size"], sizes["data-parallel-size"]
        stage = tp * adp * kvp
        ep, moe_tp = (stage, 1) if o.get("enable-expert-parallel") else (1, stage if model.is_moe else 1)
        seqs = whole("max-num-seqs", o.get("max-num-seqs"), None, hi=1 << 20)
        return Plan(tp, pp, ep, moe_tp, adp, kvp), seqs * adp if seqs else None

    def replicas(self, o: dict, model: ModelSpec) -> tuple[dict, int]:
        """A dense model's data-parallel ranks are copies of it (the experts are what DP shares)."""
        dp = whole("data-parallel-size", o.get("data-parallel-size"))
        if model.is_moe or dp == 1:
            return o, 1
        return {k: v for k, v in o.items() if k != "data-parallel-size"}, dp

    def cuda_graph_max_bs(self, o: dict) -> int | None:
        """The decode capture in requests a rank: 0 where --enforce-eager, compilation-config's cudagraph_mode NONE or -O0
        turns graphs off (graph_mode); else --max-cudagraph-capture-size, else the largest of --cudagraph-capture-sizes (either
        also inside compilation-config), in tokens, over the 1 + k tokens a decode request carries (vLLM pads a batch up to
        the next captured size); None where none is set (the engine's default capture). A capture size of 0 is refused: it
        is the value vLLM writes once graphs are off (vllm/config/vllm.py:2008, 2652@0.33.0 wheel), not a way to turn them
        off; given with graphs on, VllmConfig stops on it (`assert max_cudagraph_capture_size >= 1`, vllm.py:2554)."""
        cc = o.get("compilation-config")
        cc = cc if isinstance(cc, dict) else {}
        if bad := sorted(set(cc) - set(nested_keys("vllm", "compilation-config"))):  # CompilationConfig forbids other keys
            raise InputError(f"compilation-config.{bad[0]}", cc[bad[0]], f"a CompilationConfig field of vLLM {engine_spec('vllm')['version']}, "
                             "which refuses any other at start (mode, cudagraph_mode, max_cudagraph_capture_size, ...; "
                             "data/engines/vllm.toml [nested.compilation-config])")
        if o.get("enforce-eager") or graph_mode(o) == "NONE":
            return 0
        # each read where the user set it: a flag, else compilation-config's field, named so in a refusal
        top_at = "max-cudagraph-capture-size" if "max-cudagraph-capture-size" in o else "compilation-config.max_cudagraph_capture_size"
        sizes_at = "cudagraph-capture-sizes" if "cudagraph-capture-sizes" in o else "compilation-config.cudagraph_capture_sizes"
        top = o.get("max-cudagraph-capture-size", cc.get("max_cudagraph_capture_size"))
        sizes = o.get("cudagraph-capture-sizes", cc.get("cudagraph_capture_sizes"))
        off = "--enforce-eager (or compilation-config's cudagraph_mode NONE) turns its CUDA graphs off"
        if sizes is not None:  # every size checked (read_flags keeps each word as typed: nan, 1.5, -3 are none)
            sizes = sizes if isinstance(sizes, list) else [sizes]
            if not sizes:  # VllmConfig: `assert len(cudagraph_capture_sizes) > 0` with graphs on (config/vllm.py:2561@0.33.0 wheel)
                raise InputError(sizes_at, sizes, f"one size or more: vLLM does not start with an empty capture list; {off}")
            listed = max(whole(sizes_at, b, hi=1 << 20) for b in sizes)  # argparse's type=int (a list[int] field)
            if top is None:
                top, top_at = listed, sizes_at
        if top in (0, "0"):
            raise InputError(top_at, top, f"1 or more: vLLM does not start with a capture of 0; {off}")
        top = whole(top_at, top, None, hi=1 << 20)
        if top is None:
            return None
        return max(top // (1 + draft_tokens(o)), 1)

    def piecewise_graphs(self, o: dict) -> bool:
        """Whether its decode graphs are pieces between the attention ops: compilation-config's cudagraph_mode PIECEWISE, or
        -O1's where the run sets none (graph_mode), without --enforce-eager (which turns graphs off: cuda_graph_max_bs 0)."""
        return not o.get("enforce-eager") and graph_mode(o) == "PIECEWISE"

    def unread(self, o: dict, model: ModelSpec, dep: Deployment) -> list[str]:
        """--attention-backend other than the one its export writes (vllm_fallback), compilation-config's fields other than
        the capture and its mode (CC_READ), each by name, and the compilation a
        level prices as what it is not: -O0 and -O1 compile less (no torch.compile at -O0, fewer fusions at -O1), and the
        kernels are priced as -O2 compiles them. PIECEWISE (compilation-config's, or -O1's) is priced: piecewise_graphs."""
        cc = o.get("compilation-config")
        out = [f"compilation-config.{k}" for k in (cc if isinstance(cc, dict) else {}) if k not in CC_READ]
        # --attention-backend read only as the one its export writes (vllm_fallback); another is not priced apart
        said = o.get("attention-backend")
        if said is not None and said != vllm_fallback(model, dep.gpu, dep.precision.kv.name):
            out.append("attention-backend")
        if cc is not None and not isinstance(cc, dict):
            out.append("compilation-config (not a mapping of CompilationConfig fields)")
        level = o.get("optimization-level")
        if level is not None and str(level).strip() in ("0", "1"):
            out.append(f"optimization-level ({level}: {'no torch.compile' if str(level).strip() == '0' else 'fewer fusions'}; "
                       "its kernels priced as -O2 compiles them)")
        return out

    def worker_args(self, model: ModelSpec, dep: Deployment, concurrency: int, mode: str, *, tokens: int | None = None) -> list[str]:
        """Its Dynamo worker's flags; chunking off as --no-enable-chunked-prefill (a bool field's BooleanOptionalAction,
        vllm/engine/arg_utils.py:386@0.33.0), which flags() would leave out as a false value (the worker then chunked)."""
        words = super().worker_args(model, dep, concurrency, mode, tokens=tokens)
        return words + ["--no-enable-chunked-prefill"] if dep.chunked_prefill is False else words

    def worker_options(self, args: dict) -> tuple[dict, str]:
        """A Dynamo vLLM worker's flags, which vLLM's own parser reads (FlexibleArgumentParser with
        AsyncEngineArgs.add_cli_args, dynamo/vllm/args.py:136-137@ai-dynamo 1.6.1): its human-readable integers as the
        plain command line's (human_values); --no-enable-chunked-prefill as the switch off."""
        if args.pop("no-enable-chunked-prefill", None) is True:
            args = {**args, "enable-chunked-prefill": False}
        return super().worker_options(human_values(Flags(args)))

    def chunked_prefill(self, o: dict) -> bool | None:
        """False where --enable-chunked-prefill is off (--no-enable-chunked-prefill; EngineArgs.enable_chunked_prefill,
        vllm/engine/arg_utils.py:713@0.33.0): V1's scheduler then runs each prompt whole within max-num-batched-tokens
        (v1/core/sched/scheduler.py:1335-1344), priced as estimate --no-chunked-prefill prices it. None: on, its default."""
        return False if o.get("enable-chunked-prefill") is False else None

    def kv_fraction(self, o: dict) -> float | None:
        """--gpu-memory-utilization: the share of the GPU weights, activations and KV cache take (Engine.kv_budget "total")."""
        return fraction("gpu-memory-utilization", o.get("gpu-memory-utilization"))

    def settings(self, o: dict, meta: dict) -> tuple:
        sc = o.get("speculative-config") or {"method": o.get("spec-method"), "num_speculative_tokens": o.get("spec-tokens"),
                                             "model": o.get("spec-model")}
        if not isinstance(sc, dict):
            raise InputError("speculative-config", sc, 'a JSON mapping, e.g. {"method": "eagle3", "num_speculative_tokens": 3}')
        spec = read_spec(meta, sc.get("method"), sc.get("num_speculative_tokens"), "vllm", sc.get("model"))
        return o.get("quantization"), o.get("kv-cache-dtype", "auto"), spec, o.get("max-num-batched-tokens")


COMMAND_MARKERS = ("vllm serve", "vllm.entrypoints", "vllm-openai")  # a command line rather than a YAML config


def _yaml_options(text: str, origin: str) -> dict:
    """A `vllm serve --config` YAML's options by their documented names (it takes underscores too)."""
    o = yaml_io.load(text, origin)
    if not isinstance(o, dict):
        raise InputError("config", origin, "a YAML mapping of vLLM options")
    return {resolve_option("vllm", k, abbrev=False) or k: v for k, v in o.items()}


register_exporter(VLLMExporter())
