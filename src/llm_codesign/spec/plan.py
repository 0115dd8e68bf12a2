"""What is deployed: the parallel `Plan` (sizes as arrays, with the one validity predicate and its
reasons), `SpecDecoding`, the whole `Deployment` (GPU, plan, precision, engine, speculation) and the
`Workload` it serves, with the one builder from loose options (`deployment`) that the CLI, the web
page and the Python API share."""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field, replace
from inspect import signature
from numbers import Real

import numpy as np

from llm_codesign.errors import InputError, MissingInput
from llm_codesign.spec.engines import check_kv_format, check_runs, engine_for, get_engine
from llm_codesign.spec.engines.base import ENGINES
from llm_codesign.spec.engines.head_dims import check_head_dims
from llm_codesign.spec.hardware import Gpu, get_gpu
from llm_codesign.spec.harness import DEFAULT_ARRIVAL, FRACTION, OFFLINE_ARRIVAL, check_arrival, memory_fraction
from llm_codesign.spec.kinds import GQA, MLA, DenseFfn, MoE
from llm_codesign.spec.model import ModelSpec
from llm_codesign.spec.precision import DTYPES, Precision, executable, get_dtype
from llm_codesign.spec.registry import get_model
from llm_codesign.spec.validation import as_float, as_int

# reason codes, in the order they are checked; the first failing one is reported
REASONS = (
    "gpus_mismatch",      # tp*adp*kvp*pp != num_gpus or ep*moe_tp*pp != num_gpus
    "heads",              # attention heads not divisible by tp
    "kv_heads",           # KV heads neither divisible by tp nor a divisor of it
    "experts",            # experts not divisible by ep
    "moe_width",          # expert width not divisible by moe_tp
    "layers",             # more pipeline stages than layers
    "scale_up",           # a TP/Helix group larger than the scale-up domain
    "no_moe",             # ep/moe_tp > 1 on a dense model
    "dense_width",        # dense FFN width not divisible by tp*kvp
    "quant_groups",       # a row-parallel shard of an INT4/INT8 checkpoint holds part of a quantization group
)
MESSAGES = {
    "gpus_mismatch": "the parallel sizes must multiply to the GPU count: tp*attention_dp*kvp*pp = ep*moe_tp*pp = gpus",
    "heads": "attention heads must be divisible by tp (heads {heads}: tp {heads_tp})",
    "kv_heads": "KV heads must divide tp or be divisible by it (kv_heads {kv_heads})",
    "experts": "experts must be divisible by ep (experts {experts}: ep {experts_ep})",
    "moe_width": "the expert FFN width must be divisible by moe_tp (width {moe_width})",
    "layers": "pp must not exceed the layer count (layers {layers})",
    "scale_up": "a tensor-parallel group must fit in one scale-up domain ({link}) of {domain}",
    "no_moe": "ep and moe_tp must be 1 for a dense model",
    "dense_width": "the dense FFN width must be divisible by tp*kvp (width {dense_width})",
    "quant_groups": ("each rank's share of {group_widths} must be whole groups of {group} values ({group_note}): the engines "
                     "refuse a shard that splits a quantization group at load (vLLM's AWQ/GPTQ linear methods); {group_tp}"),
}

# what each vendor's scale-up domain is, as a refusal names it (AMD: the Infinity Fabric links between the 8 GPUs of a node)
SCALE_UP_LINKS = {"nvidia": "NVLink; PCIe within a server for PCIe cards", "amd": "AMD's Infinity Fabric"}

# the names a plan's sizes go by in `Plan.parse` (vLLM / TensorRT-LLM vocabulary) -> Plan's fields
PLAN_KEYS = {"tp": "tp", "pp": "pp", "ep": "ep", "moe_tp": "moe_tp", "adp": "adp", "attention_dp": "adp", "kvp": "kvp"}


@dataclass(frozen=True)
class Plan:
    """Parallel sizes: ints for one deployment, or int arrays that broadcast for a sweep (what the cost
    model prices, every formula broadcasting over them). GPUs = tp*adp*kvp*pp = ep*moe_tp*pp."""
    tp: object = 1
    pp: object = 1
    ep: object = 1
    moe_tp: object = 1
    adp: object = 1  # attention data-parallel ranks
    kvp: object = 1  # Helix KV-parallel ranks (sequence-sharded KV cache)

    @classmethod
    def parse(cls, text: str, model: ModelSpec, field: str = "plan") -> "Plan":
        """'tp=4,ep=4' -> Plan; unnamed sizes are 1, and a MoE model's moe_tp defaults to what EP leaves
        of a stage's GPUs. A bad text is one InputError naming `field`."""
        kw: dict[str, int] = {}
        for part in (p.strip() for p in text.split(",") if p.strip()):
            key, _, val = part.partition("=")
            if key.strip().lower() not in PLAN_KEYS or not val.strip().isdigit() or not 1 <= int(val) <= MAX_GPUS:
                raise InputError(field, text, f"comma-separated sizes from 1 to {MAX_GPUS:,} such as tp=4,ep=4 (keys: tp, pp, ep, moe_tp, attention_dp, kvp)")
            if PLAN_KEYS[key.strip().lower()] in kw:  # tp=8,tp=4: which one was meant is not ours to guess
                raise InputError(field, text, f"each size once ({key.strip()} is given twice)")
            kw[PLAN_KEYS[key.strip().lower()]] = int(val)
        if not kw:
            raise InputError(field, text, "at least one size, e.g. tp=8")
        tp, pp, adp, kvp, ep = (kw.get(k, 1) for k in ("tp", "pp", "adp", "kvp", "ep"))
        moe_tp = kw.get("moe_tp", max(tp * adp * kvp // ep, 1) if model.is_moe else 1)
        return cls(tp, pp, ep, moe_tp, adp, kvp)

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        """The plan of a record holding tp, pp, ep, moe_tp, attention_dp and kvp (`to_dict`, a frontier point's)."""
        return cls(d["tp"], d["pp"], d["ep"], d["moe_tp"], d["attention_dp"], d["kvp"])

    def to_dict(self) -> dict:
        """The sizes as ints (a sweep's first plan), under the names the CLI's options use."""
        tp, pp, ep, moe_tp, adp, kvp = (int(np.asarray(x).reshape(-1)[0]) for x in self.sizes)
        return {"tp": tp, "pp": pp, "ep": ep, "moe_tp": moe_tp, "attention_dp": adp, "kvp": kvp}

    @property
    def sizes(self) -> tuple:
        """(tp, pp, ep, moe_tp, adp, kvp) as given."""
        return self.tp, self.pp, self.ep, self.moe_tp, self.adp, self.kvp

    def arrays(self):
        """The six sizes as int64 arrays of one shape."""
        return np.broadcast_arrays(*(np.asarray(x, dtype=np.int64) for x in self.sizes))

    def broadcast(self) -> "Plan":
        """This plan with its sizes as int64 arrays of one shape, as the serving model prices it."""
        return Plan(*self.arrays())

    def take(self, index) -> "Plan":
        """The plans of a sweep at `index` (numpy indexing of every size, broadcast: a slice, an index array, new axes)."""
        return Plan(*(x[index] for x in self.arrays()))

    def at(self, i: int) -> "Plan":
        """The one plan at flat position `i` of a sweep (a size given as one number is every plan's), its sizes as ints."""
        return Plan(*(int(np.asarray(x).reshape(-1)[i] if np.ndim(x) else x) for x in self.sizes))

    @property
    def gpus(self):
        """The GPUs the attention side spans (TP x attention DP x Helix KVP x PP)."""
        return np.asarray(self.tp) * np.asarray(self.adp) * np.asarray(self.kvp) * np.asarray(self.pp)

    @property
    def moe_gpus(self):
        """The GPUs a MoE model's expert side spans (EP x MoE TP x PP): `validity` holds both sides to the GPU count."""
        return np.asarray(self.ep) * np.asarray(self.moe_tp) * np.asarray(self.pp)

    def label(self, i: int | None = None) -> str:
        tp, pp, ep, moe_tp, adp, kvp = self.at(i or 0).sizes
        parts = [f"TP{tp}"] if adp == 1 else [f"DP{adp}xTP{tp}"]
        if kvp > 1:
            parts.append(f"Helix{kvp}")
        if pp > 1:
            parts.append(f"PP{pp}")
        if ep > 1 or moe_tp > 1:
            parts.append(f"EP{ep}" + (f"/MoE-TP{moe_tp}" if moe_tp > 1 else ""))
        return " ".join(parts)


def attn_dims(model: ModelSpec):
    """Head counts TP must divide, and KV heads it must divide or be divided by, as each mixer splits
    (spec.kinds tp_heads, tp_kv_heads)."""
    heads = [h for layer, _ in model.groups for h in layer.attn.tp_heads]
    kvh = [k for layer, _ in model.groups for k in layer.attn.tp_kv_heads]
    return heads, kvh


def _moe(model: ModelSpec):
    for layer, _ in model.groups:
        if isinstance(layer.ffn, MoE):
            return layer.ffn
    return None


def validity(model: ModelSpec, gpu: Gpu, plan: Plan, num_gpus) -> np.ndarray:
    """Reason code index per deployment (-1 when valid): one vectorised predicate for every plan."""
    tp, pp, ep, moe_tp, adp, kvp = plan.arrays()
    reason = np.full(tp.shape, -1, dtype=np.int64)

    def flag(code, bad):
        nonlocal reason  # broadcasts up when model dimensions are arrays (shape sweeps)
        reason = np.where((reason < 0) & bad, REASONS.index(code), reason)

    n = np.asarray(num_gpus)
    moe_bad = (plan.moe_gpus != n) if model.is_moe else False
    flag("gpus_mismatch", (plan.gpus != n) | moe_bad)
    heads, kvh = attn_dims(model)
    for h in heads:  # ints, or arrays when shapes are swept
        flag("heads", h % tp != 0)
    for k in kvh:
        flag("kv_heads", (k % tp != 0) & (tp % k != 0))
    moe = _moe(model)
    if moe:
        flag("experts", moe.experts % ep != 0)
        flag("moe_width", moe.expert_inter % moe_tp != 0)
    else:
        flag("no_moe", (ep > 1) | (moe_tp > 1))
    # uneven stages are priced (cost.ops forward_ops: the slowest stage sets the pace), as engines
    # split L layers over any pp (vLLM get_pp_indices); a stage needs at least one layer
    flag("layers", np.asarray(model.num_layers) < pp)
    # TP all-reduces every layer: keep TP (and Helix, which re-uses those GPUs as TP) inside the scale-up domain
    flag("scale_up", (tp * kvp > gpu.scale_up_domain) | ((ep * moe_tp > gpu.scale_up_domain) & (ep * moe_tp > 1) & (gpu.scale_up_domain < 8)))
    for layer, _ in model.groups:
        if isinstance(layer.ffn, DenseFfn):
            flag("dense_width", layer.ffn.inter % (tp * kvp) != 0)
    g = quant_group(model)
    for width, split in group_widths(model) if g else ():  # o_proj over tp, the dense FFN's down_proj over tp*kvp
        flag("quant_groups", width % ((tp if split == "tp" else tp * kvp) * g) != 0)
    return reason


def quant_group(model: ModelSpec) -> int:
    """The quantization group of the checkpoint's INT4/INT8 weights (AWQ's and GPTQ's group_size, compressed-tensors' pack-
    quantized group: spec.precision.int_grouped), 0 where its weights are another format or one scale per channel. Its
    row-parallel layers split their input over the ranks, and each rank must hold whole groups: vLLM's AWQ linear method
    raises "The input size is not aligned with the quantized weight shape. This can be caused by too large tensor parallel
    size" where input_size_per_partition % group_size != 0 (model_executor/layers/quantization/auto_awq.py:819-824@0.33.0), and
    GPTQ/AWQ Marlin the same through verify_group_size_divides_partition (distributed/utils.py:137-152, called from
    quantization/utils/marlin_utils.py:199-204@0.33.0). MoE experts are not judged: vLLM's GPTQ MoE falls back to its
    MoeWNA16 kernels where Marlin refuses the shard (auto_gptq.py:239-248@0.33.0)."""
    w = model.default_precision.weight
    return int(w.weight_block) if w.name in ("int4", "int8") and w.weight_block > 0 else 0


def group_widths(model: ModelSpec) -> list[tuple]:
    """The input widths of the row-parallel layers an INT checkpoint quantizes, with the size that splits each: attention's
    o_proj (heads x v_head_dim, over tp) where the attention weights are the grouped format, each dense FFN's down_proj
    (its width, over tp*kvp, as dense_width)."""
    out = []
    if model.default_precision.attn_weight in (None, model.default_precision.weight):
        out += [(layer.attn.heads * layer.attn.v_head_dim, "tp") for layer, _ in model.groups if isinstance(layer.attn, (GQA, MLA))]
    out += [(layer.ffn.inter, "tp*kvp") for layer, _ in model.groups if isinstance(layer.ffn, DenseFfn)]
    if any(np.ndim(w) for w, _ in out):  # swept shapes (arrays: lint's and design's): each as it is
        return out
    return sorted(set(out), key=lambda x: (x[1], int(x[0])))


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def reason_text(model: ModelSpec, gpu: Gpu, code: int) -> str:
    heads, kvh = attn_dims(model)
    moe = _moe(model)
    dense = [layer.ffn.inter for layer, _ in model.groups if isinstance(layer.ffn, DenseFfn)]
    head_counts = sorted({int(np.max(h)) for h in heads})

    def sizes(n: int, most: int | None = None) -> str:  # the sizes that divide n (up to `most`), as the message lists them
        d = [x for x in divisors(n) if most is None or x <= most]
        return ", ".join(map(str, d[:-1])) + (" or " if len(d) > 1 else "") + str(d[-1])

    # a TP the next check refuses is not offered: only those within the GPU's scale-up domain (the "scale_up" reason;
    # newc12 #8: 8B on H100 at TP3 listed 16 and 32, past NVLink's 8)
    return MESSAGES[REASONS[code]].format(
        heads=head_counts, heads_tp=sizes(math.gcd(*head_counts) if head_counts else 1, int(gpu.scale_up_domain)), experts_ep=sizes(moe.experts if moe else 1),
        kv_heads=sorted({int(np.max(k)) for k in kvh}), experts=moe.experts if moe else 0,
        moe_width=moe.expert_inter if moe else 0, layers=model.num_layers,
        domain=f"{gpu.scale_up_domain} GPU{'' if gpu.scale_up_domain == 1 else 's'}", link=SCALE_UP_LINKS.get(gpu.vendor, SCALE_UP_LINKS["nvidia"]),
        dense_width=sorted(set(dense)), **_group_words(model, math.gcd(*head_counts) if head_counts else 1))


def _group_words(model: ModelSpec, heads: int) -> dict:
    """reason_text's words for quant_groups: the widths in groups, and the TPs whose shards hold whole groups (Qwen2.5-72B-AWQ:
    down_proj 29568 = 231 groups of 128, so TP 1 only of the powers of two; at TP8 a rank holds 3696 = 28.875 groups), of
    those that also divide the `heads` (a TP must). A width not whole in groups at TP1 leaves no TP (gcd(0, x) is x, so it
    is tested first)."""
    g, widths = quant_group(model), group_widths(model)
    if not g or not widths:
        return {"group_widths": "", "group": 0, "group_note": "", "group_tp": ""}
    names = {"tp": "o_proj", "tp*kvp": "down_proj"}
    whole = 0 if any(int(w) % g for w, _ in widths) else math.gcd(*(int(w) // g for w, _ in widths))
    ok = [t for t in divisors(math.gcd(whole, heads)) if t <= 64] if whole else []
    return {"group_widths": ", ".join(f"{names[s]} {w} (over {s})" for w, s in widths), "group": g,
            "group_note": "; ".join(f"{w} = {w / g:g} groups" for w, _ in widths),
            "group_tp": f"tp {', '.join(map(str, ok))} hold{'s' if len(ok) == 1 else ''} whole groups" if ok else "no TP holds whole groups"}


# the drafters priced: a model's MTP module, an EAGLE-3 head, a separate draft model, and prompt lookup (n-gram: drafts matched
# in the request's own tokens, no draft forward pass: on the host between steps in SGLang, serve.aggregated.ngram_propose_time;
# in two small GPU kernels of the step in vLLM 0.33's default runner, ngram_scan_time, spec.engines.vllm ngram_gpu_scan)
SPEC_METHODS = ("mtp", "eagle3", "draft", "ngram")


@dataclass(frozen=True)
class SpecDecoding:
    """Speculative decoding: method, draft length k and acceptance.

    `rates` are per-position conditional acceptance probabilities; `mean_accepted` is the mean number
    of tokens a step emits (accepted drafts plus the target's own token, 1..k+1). One of them is set.
    """
    method: str  # one of SPEC_METHODS
    k: int
    mean_accepted: float | None = None
    rates: tuple[float, ...] = ()
    draft_model: str | None = None
    source: str = ""  # where a default acceptance was read from (published_acceptance); "" where the user gave it

    def __post_init__(self):
        if self.method not in SPEC_METHODS:
            raise InputError("spec", self.method, "one of: " + ", ".join(SPEC_METHODS))
        # typed before compared: lc.deployment(acceptance="2.5") is an InputError, not a TypeError (crev12 #5)
        as_int("draft_len", self.k, lo=1, hi=16, what="an integer from 1 to 16")
        if self.mean_accepted is None and not self.rates:
            raise MissingInput("acceptance", acceptance_hint(self.method), word="not given")
        if self.mean_accepted is not None:
            as_float("acceptance", self.mean_accepted, lo=1.0, hi=self.k + 1,
                     what=f"a mean accepted length between 1 and k+1 = {self.k + 1}")
        if any(not (isinstance(r, Real) and not isinstance(r, bool) and 0.0 <= r <= 1.0) for r in self.rates):
            raise InputError("acceptance_rates", self.rates, "probabilities between 0 and 1")
        check_draft_model(self.method, self.draft_model)

    @property
    def on_gpu(self) -> bool:
        """Whether its drafts come from a forward pass on the GPU (MTP, EAGLE-3, a draft model); prompt lookup's (ngram) are
        matched in the request's own tokens with no pass: on the host between the target's steps (SGLang), or in two small
        kernels of the step (vLLM's default runner) (serve.aggregated.ngram_propose_time, ngram_scan_time)."""
        return self.method != "ngram"

    def _rates(self) -> np.ndarray:
        if self.rates:
            r = list(self.rates)
        else:
            # a mean accepted length for k: the constant per-position rate r with 1 + r + ... + r^k = mean
            lo, hi = 0.0, 1.0
            for _ in range(60):
                mid = (lo + hi) / 2
                if sum(mid ** i for i in range(self.k + 1)) < self.mean_accepted:
                    lo = mid
                else:
                    hi = mid
            r = [lo]
        return np.asarray(r + [r[-1]] * 32, dtype=float)

    def at(self, k: int) -> "SpecDecoding":
        """The same drafter run at draft length k, its acceptance as the k per-position rates that
        `accepted(k)` reads (so a search's point rebuilds exactly from its record)."""
        if k == self.k and self.rates and len(self.rates) == k:
            return self
        return SpecDecoding(self.method, int(k), None, tuple(float(x) for x in self._rates()[:k]), self.draft_model, self.source)

    def draft_precision(self, prec: Precision) -> Precision:
        """The precision its draft runs in: the target's, but NVIDIA's NVFP4 checkpoints of DeepSeek-V3/R1 keep
        the MTP layer in BF16 (ModelOpt's hf_quant_config exclude_modules "model.layers.61*",
        data/models/nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json; TensorRT-LLM's min-latency recipe,
        blog 1: "3x MTP Layers: bf16"), on the target's KV-cache format."""
        if self.method == "mtp" and prec.weight.name == "nvfp4":
            return Precision.of("bf16", kv=prec.kv.name)
        return prec

    def accepted(self, k=None) -> np.ndarray:
        """Mean tokens per step at draft length k (array ok): 1 + sum_i prod_{j<=i} r_j."""
        k = np.asarray(self.k if k is None else k, dtype=np.int64)
        cum = np.concatenate([[1.0], 1.0 + np.cumsum(np.cumprod(self._rates()))])
        return cum[np.clip(k, 0, len(cum) - 1)]


def accepted_within(accepted, osl):
    """Tokens a step credits each request: the mean `accepted` (SpecDecoding.accepted), but no more than the OSL - 1 a
    request decodes after its first token (at least 1): its last step emits only what it has left, and it needs one step
    at least. At OSL 2 an acceptance of 4 credits 1 token a step, not 4 (review crev #4: TPOT 1.92 ms under a 4.53 ms
    weight read). A bound: the exact r / E[steps for r tokens] is lower still where a step's acceptance varies."""
    return np.minimum(np.asarray(accepted, float), np.maximum(np.asarray(osl, float) - 1.0, 1.0))


@dataclass(frozen=True)
class Deployment:
    """One deployment, validated at the edge: it reaches the cost model unchanged."""
    gpu: Gpu
    num_gpus: int
    plan: Plan = field(default_factory=Plan)
    precision: Precision = field(default_factory=Precision.of)
    backend: str | None = None  # the serving engine (spec/engines/); None: the GPU vendor's (engine_for)
    spec: SpecDecoding | None = None
    max_num_tokens: int | None = None  # step token budget; None: the engine's default on this GPU
    cpp: bool = False  # chunked pipeline parallelism for long-context prefill
    # whether a prompt is split into chunks of the step budget, as the engine's launch option states it (TensorRT-LLM's
    # enable_chunked_prefill, read by `import`); None: the engine's default (Engine.chunks_prefill, serve.aggregated.prompt_budget)
    chunked_prefill: bool | None = None
    # the share of memory the engine's KV budget takes, as its launch option states it (SGLang --mem-fraction-static, vLLM
    # --gpu-memory-utilization, TensorRT-LLM kv_cache_config.free_gpu_memory_fraction; Engine.kv_budget says of what), read by
    # `import` and written by `export`; None: the engine's own (Engine.kv_fraction)
    kv_fraction: float | None = None
    # the largest decode batch per rank its CUDA graphs capture, every batch up to it padded to a captured one (SGLang
    # --cuda-graph-max-bs, TensorRT-LLM cuda_graph_config max_batch_size with enable_padding); 0: none captured, every decode
    # step eager (TensorRT-LLM `cuda_graph_config: null`, SGLang --disable-cuda-graph, vLLM --enforce-eager: what `import` reads;
    # estimate's and disagg's capture flags, the page's field and lc.deployment take 0 too); None: the engine's default capture (Engine.graphs_default:
    # TensorRT-LLM's LLM API stops at 128 and skips 33-63 and 65-127; SGLang's by GPU memory and TP, vLLM's by max_num_seqs)
    cuda_graph_max_bs: int | None = None
    # whether its decode graphs are vLLM's pieces between the attention ops rather than one full graph (cudagraph_mode
    # PIECEWISE, or -O1's default, as `import` reads them): each layer's attention and KV-cache write is launched from the
    # host between the pieces (serve.aggregated.piecewise_launches). vLLM only; not with graphs off (cuda_graph_max_bs 0)
    piecewise_graphs: bool = False
    # the most requests each attention-DP rank runs at once, the engine's own batch cap as its launch states it (TensorRT-LLM
    # max_batch_size, vLLM --max-num-seqs, both per rank; SGLang --max-running-requests over its attention-DP ranks): requests
    # past it wait for a slot (first/slot_queue) as past the KV cache's limit (serve.aggregated: SchedulerFlags.max_running_requests).
    # Read by `import`, given by estimate --max-batch; None: the engine's own limit (Engine.max_batch)
    max_batch: int | None = None
    # where the GPU count was read off tp x attention_dp with TP > 1 (no count given): the line saying so (attention_dp_note),
    # which the answers print; not part of the record (to_dict): a count read back is a count given
    plan_note: str | None = field(default=None, compare=False)

    def __post_init__(self):
        if not isinstance(self.gpu, Gpu):  # a catalog id or a TOML path, as lc.deployment takes it (else an AttributeError below)
            object.__setattr__(self, "gpu", get_gpu(self.gpu))
        # built by hand in a notebook: a plan size of 0 was a ZeroDivisionError, a precision named as text an AttributeError
        if not isinstance(self.plan, Plan):
            raise InputError("plan", self.plan, "a Plan, e.g. Plan(tp=4), or lc.deployment(model, gpu=..., tp=4)")
        for name in ("tp", "pp", "ep", "moe_tp", "adp", "kvp"):
            v = np.asarray(getattr(self.plan, name))
            if v.dtype.kind not in "iu" or v.size == 0 or v.min() < 1:
                raise InputError(f"plan.{name}", getattr(self.plan, name) if v.ndim == 0 else v.reshape(-1)[:6].tolist(), "a positive integer")
        if not isinstance(self.precision, Precision):
            raise InputError("precision", self.precision, "a Precision, e.g. Precision.of('fp8', kv='fp8'), or lc.deployment(model, "
                                                          "gpu=..., weight_dtype='fp8')")
        # the engine by its registry name, one that runs on this GPU (spec.engines.engine_for): TensorRT-LLM on an MI355X is refused
        engine = engine_for(self.gpu, self.backend)
        object.__setattr__(self, "backend", engine.name)
        # a KV-cache format the engine holds on this GPU (Engine.kv_formats): NVFP4 on an MI355X or an H100 was priced
        check_kv_format(engine, self.gpu, self.precision.kv.name)
        if self.kv_fraction is not None and memory_fraction(self.kv_fraction) is None:
            raise InputError("kv_fraction", self.kv_fraction, FRACTION + ", or absent (the engine's own)")
        g = self.cuda_graph_max_bs
        if g is not None and (isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 0 <= g <= MAX_CONCURRENCY):
            raise InputError("cuda_graph_max_bs", g, f"a whole number of requests from 0 (graphs off) to {MAX_CONCURRENCY:,}, or absent "
                                                     "(the engine's default)")
        b = self.max_batch
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 1 <= b <= MAX_CONCURRENCY):
            raise InputError("max_batch", b, f"a whole number of requests per attention-DP rank from 1 to {MAX_CONCURRENCY:,}, or absent "
                                             "(the engine's own limit)")
        if self.plan_note is not None and not isinstance(self.plan_note, str):
            raise InputError("plan_note", self.plan_note, "a line of text or None (lc.deployment writes it)")
        if not isinstance(self.piecewise_graphs, (bool, np.bool_)):
            raise InputError("piecewise_graphs", self.piecewise_graphs, "true or false (vLLM's cudagraph_mode PIECEWISE)")
        if self.piecewise_graphs and (engine.name != "vllm" or g == 0):
            raise InputError("piecewise_graphs", self.piecewise_graphs, "false here: piecewise decode graphs are vLLM's "
                             f"cudagraph_mode PIECEWISE, with CUDA graphs on (this is {engine.name}, cuda_graph_max_bs {g})")
        # an activation format left to the GPU settled on this one (MXFP4 weights: W4A4 on CDNA4), so that its label says what runs
        object.__setattr__(self, "precision", self.precision.on(self.gpu))
        # refused: a plan the engine has no launch for (TensorRT-LLM's attention DP x TP) or a format it has no kernel for on
        # this GPU (TensorRT-LLM's NVFP4 before Blackwell), which were priced and exported as if it ran them (newc7 #1, #2)
        # the plan half only on a plan whose sizes make an instance of these GPUs: a plan whose sides disagree, or that
        # divides no GPU count, is estimate's refusal to make (its advice checked against this rule), not this one's
        p = self.plan
        agree = (np.asarray(p.gpus) == np.asarray(p.moe_gpus)) | ((np.asarray(p.ep) == 1) & (np.asarray(p.moe_tp) == 1))
        whole = bool(np.all(agree & (self.num_gpus % np.asarray(p.gpus) == 0)))
        check_runs(engine, self.gpu, p if whole else None, self.precision, moe=None)  # no model here: lc.deployment adds its
        if self.spec is not None and self.spec.method == "ngram" and engine.ngram_host is None:
            runs = ", ".join(e.name for e in ENGINES.values() if e.ngram_host is not None)
            raise InputError("spec", "ngram", f"mtp, eagle3 or draft on {engine.title} ({engine.ngram_refusal}); prompt lookup is "
                                              f"priced on {runs} (--engine)")
        if self.spec is not None and self.spec.method == "mtp" and self.spec.draft_model and not engine.mtp_module_apart:
            apart = ", ".join(e.title for e in ENGINES.values() if e.mtp_module_apart)
            raise InputError("draft_model", self.spec.draft_model, f"left out with --spec mtp on {engine.title} (its launch reads the "
                             f"MTP module from the target's checkpoint); {apart} load{'s' if ', ' not in apart else ''} it apart")
        if self.spec is not None and not bool(np.all(engine.runs_spec(p.pp, self.spec.k))):  # SGLang's PP + speculation
            raise InputError("pp", int(np.max(p.pp)), f"1 with speculative decoding on {engine.title} ({engine.spec_pp_refusal}); "
                             "drop --spec, or --pp 1")

    @property
    def step_tokens(self) -> int:
        return self.engine.launch_step_tokens(self.gpu, self.chunked_prefill) if self.max_num_tokens is None else self.max_num_tokens

    @property
    def rank_step_tokens(self):
        """The step budget one attention-DP rank runs (Engine.rank_step_tokens: step_tokens, or SGLang's share of it):
        an int, or an int array over a sweep's plans."""
        r = np.asarray(self.engine.rank_step_tokens(self.step_tokens, self.plan.adp)).astype(int)
        return int(r) if r.ndim == 0 else r

    @property
    def engine(self):
        return get_engine(self.backend)

    @property
    def draft_len(self) -> int:
        """The tokens its speculation drafts a step, k (0 without): a decode request carries 1 + k, which vLLM's capture
        sizes count. The one reading of it for its record, its export's options and capture, and the eager note."""
        return 0 if self.spec is None else int(self.spec.k)

    def to_dict(self) -> dict:
        """Everything needed to rebuild this deployment (`Deployment.from_dict`), in plain types."""
        p, s = self.precision, self.spec
        return {"gpu": self.gpu.id, "num_gpus": int(self.num_gpus), **self.plan.to_dict(), "weight_dtype": p.weight.name, "activation_dtype": p.activation.name,
                "kv_dtype": p.kv.name, "attn_weight_dtype": p.attn.name,
                **({"attn_in_weight_dtype": p.attn_in.name} if p.attn_in != p.attn else {}), "backend": self.backend,
                "spec": s.method if s else None, "draft_len": self.draft_len,
                "acceptance": s.mean_accepted if s else None, "acceptance_rates": list(s.rates) if s else [],
                "draft_model": s.draft_model if s else None, "max_num_tokens": self.step_tokens, "cpp": bool(self.cpp),
                **({} if self.chunked_prefill is None else {"chunked_prefill": bool(self.chunked_prefill)}),
                **({} if self.kv_fraction is None else {"kv_fraction": float(self.kv_fraction)}),
                **({} if self.cuda_graph_max_bs is None else {"cuda_graph_max_bs": int(self.cuda_graph_max_bs)}),
                **({"piecewise_graphs": True} if self.piecewise_graphs else {}),
                **({} if self.max_batch is None else {"max_batch": int(self.max_batch)}), **_weight_groups(p.weight)}

    @classmethod
    def from_dict(cls, d: dict, gpu: Gpu | None = None) -> "Deployment":
        """The deployment a `to_dict()` (or a frontier point's record) describes; `gpu` for a what-if GPU
        that the catalog does not hold."""
        w = _grouped(get_dtype(d["weight_dtype"], "weight_dtype"), d.get("weight_groups"))
        aw = d.get("attn_weight_dtype")
        prec = Precision(weight=w, activation=get_dtype(d["activation_dtype"], "activation_dtype"), kv=get_dtype(d["kv_dtype"], "kv_dtype"),
                         attn_weight=get_dtype(aw, "attn_weight_dtype") if aw and aw != w.name else None,
                         attn_in_weight=get_dtype(d["attn_in_weight_dtype"], "attn_in_weight_dtype") if d.get("attn_in_weight_dtype") else None)
        spec = None
        if d.get("spec") or d.get("draft_len"):  # half a speculation (a method without a draft length, or the reverse) was none, in silence
            if not d.get("spec"):
                raise InputError("spec", d.get("spec"), f"{', '.join(SPEC_METHODS)} with draft_len {d['draft_len']!r} (none with draft_len 0)")
            k = d.get("draft_len") or 0
            if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k != int(k):
                raise InputError("draft_len", k, "an integer from 1 to 16")
            spec = SpecDecoding(d["spec"], int(k), d.get("acceptance"), tuple(d.get("acceptance_rates") or ()), d.get("draft_model"))
        else:
            given = next((k for k in ("acceptance", "acceptance_rates", "draft_model") if d.get(k)), None)
            if given:
                raise InputError(given, d[given], "left out where spec is none (a record without speculation carries none)")
        plan = Plan.from_dict(d)
        chunked = d.get("chunked_prefill")
        if chunked is not None and not isinstance(chunked, bool):
            raise InputError("chunked_prefill", chunked, "true, false or absent (the engine's default)")
        n = d.get("num_gpus") or d.get("instance_gpus") or int(plan.gpus)
        return cls(gpu=gpu or get_gpu(d["gpu"]), num_gpus=int(n), plan=plan, precision=prec, backend=d.get("backend"),
                   spec=spec, max_num_tokens=d.get("max_num_tokens"), cpp=bool(d.get("cpp", False)),
                   chunked_prefill=chunked, kv_fraction=d.get("kv_fraction"), cuda_graph_max_bs=d.get("cuda_graph_max_bs"),
                   piecewise_graphs=d.get("piecewise_graphs", False), max_batch=d.get("max_batch"))


def _weight_groups(w) -> dict:
    """A checkpoint's own INT4 / INT8 groups where they are not the format's default (spec.precision.int_grouped: an AWQ
    checkpoint's 128 values a 16-bit scale and 4-bit zero point), so that a record rebuilds the bytes it priced."""
    return {} if w == DTYPES[str(w.name)] else {"weight_groups": {"group_size": w.weight_block, "scale_bits": w.scale_bits}}


def _grouped(w, groups):
    """`w` with a record's weight_groups (_weight_groups), for INT4 and INT8 (a GPTQ checkpoint's) only."""
    if groups is None:
        return w
    g = groups if isinstance(groups, dict) else {}
    size, bits = g.get("group_size"), g.get("scale_bits")
    if w.name not in ("int4", "int8") or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 1 << 20 for x in (size, bits)):
        raise InputError("weight_groups", groups, "{group_size, scale_bits} (integers, 0 or more) with weight_dtype int4 or int8, as a record writes them")
    return replace(w, weight_block=size, scale_bits=bits)


# a request count past which no engine runs one instance (TensorRT-LLM's max_batch_size default is 2048,
# vLLM's max_num_seqs 256-1024): larger figures are typing errors, not loads. The one bound of the CLI, the page and the
# API (lc.disagg priced 2,000,000 where the CLI refused it past its own 1 << 20)
MAX_CONCURRENCY = 1 << 20
# the CLI's and the API's bounds on what a user sizes: far beyond any real deployment, low enough that no product of
# them overflows
MAX_GPUS = 1 << 16  # GPUs, and each parallel size
MAX_STEP_TOKENS = 1 << 24  # tokens of one step (max_num_tokens), and of one request as the CLI takes it
# a request's ISL/OSL: the CLI's bound, one constant for Workload, the CLI and the page (Workload took 100,000,000 where the
# CLI refused past 16,777,216, newc5 #22); the longest contexts of bundled models are 10M (Llama 4 Scout)
MAX_TOKENS = MAX_STEP_TOKENS
# InferenceX, whose runs the tool bundles, writes its lengths 1k1k, 1k8k and 8k1k for ISL/OSL 1024/1024, 1024/8192 and
# 8192/1024 (SemiAnalysisAI/InferenceX utils/matrix_logic/generate_sweep_configs.py:17-21 seq_len_stoi @033aa6ec; the
# bundled serving_inferencex_*.csv hold isl and osl 1024 and 8192 only, 862 runs): a k after a token count is 1,024
# (newc5 #16). The CLI's options and the page's isl/osl read it (newc12 #6); lc.* take integers.
K_TOKENS = 1024
K_TEXT = f"or a whole number of k (1k = {K_TOKENS:,} tokens, InferenceX's 1k)"


def read_tokens(value, lo: int = 1, hi: int | None = MAX_TOKENS) -> tuple[int, bool]:
    """A token count given as an integer or text, a whole number of k (K_TOKENS each: `8k` is 8,192): (the count, whether
    it was read in k). Outside lo..hi or unreadable: a ValueError (the CLI's and the page's one line say what is valid)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a token count")
    if isinstance(value, float) and value.is_integer():  # JSON's 2048.0
        value = int(value)
    text = str(value).strip()
    k = text[-1:] in ("k", "K") and text[:-1].isdigit()
    try:
        n = int(text[:-1]) * K_TOKENS if k else int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a token count") from None
    if n < lo or (hi is not None and n > hi):
        raise ValueError(f"{text!r} is out of range")
    return n, k


def check_concurrency(c, *, arrays: bool = False) -> np.ndarray:
    """A user's requests in flight: an integer from 1 to MAX_CONCURRENCY (`arrays`: or an array of them, as lc.evaluate
    takes). Only what a user gives: the load grids the core builds (BATCH_GRID times attention-DP) run past it."""
    a = np.asarray(c)
    if a.dtype.kind not in "iu" or a.size == 0 or (a.ndim and not arrays) or a.min() < 1 or a.max() > MAX_CONCURRENCY:
        flat = a.reshape(-1).tolist()  # an array said in one line: its first values
        shown = c if a.ndim == 0 else flat if len(flat) <= 6 else [*flat[:6], "..."]
        tail = ", or an array of them" if arrays else " (or omit it for offline max throughput)"
        raise InputError("concurrency", shown, f"a positive integer up to {MAX_CONCURRENCY:,}{tail}")
    return a


def cached_tokens(isl, prefix_hit):
    """The prompt tokens found in the prefix cache, not prefilled (array-valued): whole tokens, as an engine caches whole
    blocks, and a fraction of a token would quantise as a whole tile row."""
    return np.floor(np.asarray(isl, float) * np.asarray(prefix_hit, float) + 1e-9)


@dataclass(frozen=True)
class Workload:
    """What a deployment serves: tokens in and out per request, and the load (`concurrency` requests
    in flight across the deployment; None asks for the offline maximum throughput)."""
    isl: int = 1024
    osl: int = 1024
    concurrency: int | None = None
    prefix_hit: float = 0.0  # share of each prompt already in the engine's prefix cache (not prefilled)
    # how the requests arrive (spec.harness.ARRIVALS): "waves" (identical requests started together, kept in step:
    # DEFAULT_ARRIVAL), "closed_loop" (slots refilled as requests finish, lengths spread) or "burst" (lockstep waves)
    arrival: str = DEFAULT_ARRIVAL

    def __post_init__(self):
        check_arrival(self.arrival)
        for name in ("isl", "osl"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= MAX_TOKENS:
                raise InputError(name, v, f"a positive integer number of tokens (at most {MAX_TOKENS:,})")
        if self.concurrency is not None:
            check_concurrency(self.concurrency)
        h = self.prefix_hit
        if isinstance(h, bool) or not isinstance(h, (int, float, np.floating)) or not 0.0 <= h < 1.0:
            raise InputError("prefix_hit", h, "a share of the prompt found in the prefix cache, from 0 up to (not including) 1")

    @property
    def priced_arrival(self) -> str:
        """The arrival its metrics are priced at: its own at a concurrency, the offline benchmark's (OFFLINE_ARRIVAL)
        where none is given (the offline maximum throughput: every request queued, as trtllm-bench runs them)."""
        return self.arrival if self.concurrency is not None else OFFLINE_ARRIVAL

    @property
    def new_tokens(self) -> int:
        """The prompt tokens each request prefills: those not in the prefix cache (cached_tokens)."""
        return self.isl - int(cached_tokens(self.isl, self.prefix_hit))


def quark_mxfp4(model: ModelSpec, prec: Precision, gpu=None) -> Precision:
    """`prec` with an MLA model's attention projections in BF16 where its weights are MXFP4 re-quantised (not the
    checkpoint's own format), no attention format is stated and `gpu` is a CDNA one (None: not known, taken as one; an
    NVIDIA GPU's MXFP4 is priced as every layer MXFP4, as before): AMD's Quark MXFP4 checkpoints of DeepSeek-R1
    (amd/DeepSeek-R1-0528-MXFP4-Preview, InferenceX's MI355X FP4 model) quantise the MoE and dense MLPs and keep
    self_attn BF16. ATOM's May 2026 build loads every MLA projection of such a checkpoint unquantised, quant_config
    None, when its fused_qkv_a_proj reads fp4x2 and ATOM_USE_TRITON_GEMM is off, InferenceX's launch
    (atom/models/deepseek_v2.py:1297-1304@fb7cef64; envs.py:32); only the later full-MXFP4 "V2" checkpoints store
    attention weights in MXFP4 (:2448-2463@ffdf3bb5). SGLang's profile of the same checkpoint shows the q/kv/o
    projections as hipBLASLt GEMMs beside the MoE's ck moe_mxgemm (SemiAnalysisAI/InferenceX issue #1005, run
    23997779285). docs/modelling-notes.md#mxtrue-kv."""
    from llm_codesign.spec.kinds import MLA

    own = model.default_precision.weight.name == "mxfp4"
    if prec.weight.name != "mxfp4" or own or prec.attn_weight is not None or not quark_runs_on(gpu):
        return prec
    if any(isinstance(layer.attn, MLA) for layer, _ in model.groups):
        return replace(prec, attn_weight=get_dtype("bf16"))
    return prec


def release_checkpoint(model: ModelSpec, weight, gpu=None, *, skip=None) -> str | None:
    """The registry's checkpoint of `model` already quantized to `weight` (a Dtype), or None: an entry of the same shape
    (hidden, layers, parameters) whose own weights are `weight` and whose Hugging Face id extends one of `model`'s (the
    same release: nvidia/Llama-3.1-70B-Instruct-FP8 for meta-llama/Llama-3.1-70B; never another release of one shape,
    kimi-k2.5's int4 for kimi-k2). An AMD Quark checkpoint only where Quark's MXFP4 runs (quark_runs_on: CDNA;
    `gpu` None counts as one); none of the entries `skip(entry)` is true of. What export launches (explore.export_engines.base.quantized_checkpoint) and what an answer
    at `weight` prices (spec.plan.precision_for: the checkpoint's own attention format), one lookup."""
    import re

    from llm_codesign.spec.registry import entries

    stems = [h.split("/")[-1].lower() for h in model.hf_ids]
    if not stems:
        return None
    shape = (model.hidden, model.num_layers, model.total_params)
    for e in entries():
        m = get_model(e["name"])
        if m.name == model.name or (m.hidden, m.num_layers, m.total_params) != shape or m.default_precision.weight != weight:
            continue
        if (_is_quark(e) and not quark_runs_on(gpu)) or (skip is not None and skip(e)):
            continue
        # `model`'s own id first; a stem ends at a dash, so Llama-3.1-70B never takes Llama-3.3-70B's FP8 nor Kimi-K2 K2.5
        for stem in stems:
            if hit := next((h for h in m.hf_ids if re.fullmatch(re.escape(stem) + r"(-.*)?", h.split("/")[-1].lower())), None):
                return hit
    return None


def _is_quark(entry: dict) -> bool:
    return str(entry.get("quantization_config", {}).get("quant_method", "")).lower() == "quark"


def checkpoint_precision(model: ModelSpec, prec: Precision, gpu=None) -> Precision:
    """`prec`, weights re-quantised from `model`'s own, with the attention format of the checkpoint an answer at them
    launches and quotes (newc12 #1): the registry's checkpoint of the same release at those weights
    (release_checkpoint, what export names) where it keeps its attention wider, else AMD Quark's
    (quark_mxfp4). llama-4-maverick at FP8 is Meta's FP8 checkpoint, whose modules_to_not_convert leaves the whole
    self_attn BF16 (spec.quant.attn_excluded); deepseek-r1 at NVFP4 is nvidia/DeepSeek-R1-NVFP4, which leaves only
    q_a/q_b/kv_a/kv_b BF16: those priced BF16, its o_proj NVFP4 (attn_in_weight, said by partial_attn_note).
    A format stated for the attention, or weights in the checkpoint's own format, are kept."""
    if prec.attn_weight is None and prec.weight != model.default_precision.weight and (ck := release_checkpoint(model, prec.weight, gpu)):
        own = get_model(ck).default_precision
        if (attn := own.attn_weight) is not None and attn != prec.weight:
            return replace(prec, attn_weight=attn)
        if own.attn_in != prec.weight:
            return replace(prec, attn_in_weight=own.attn_in)
    return quark_mxfp4(model, prec, gpu)


def quark_runs_on(gpu) -> bool:
    """Whether AMD's Quark MXFP4 checkpoint is the one an MXFP4 answer on `gpu` runs: a CDNA GPU's (InferenceX runs
    amd/DeepSeek-R1-0528-MXFP4-Preview on MI355X only: .github/configs/amd-master.yaml@843c6254); None (no GPU known)
    counts as one."""
    return gpu is None or str(getattr(gpu, "family", "")).startswith("cdna")


def quark_note(model: ModelSpec, prec: Precision) -> tuple[str, ...]:
    """The precision note of an answer quark_mxfp4 applied to (MXFP4 weights re-quantised, an MLA model's attention BF16)."""
    own = model.default_precision.weight.name == "mxfp4"
    if prec.weight.name == "mxfp4" and not own and prec.attn_weight is not None and prec.attn_weight.name == "bf16":
        return ("attention projections BF16 (AMD Quark MXFP4 checkpoint)",)
    return ()


def precision_notes(model: ModelSpec, dep: Deployment) -> tuple[str, ...]:
    """What an answer says of the precision it priced (estimate's precision_notes and every frontier point's, frev #6): a
    checkpoint format priced as BF16 (ModelSpec.unpriced_quant), a format the GPU cannot run as the engines map it
    (spec.precision.executable), a Quark MXFP4 checkpoint's BF16 attention, and an engine's MXFP4 emulation
    (Engine.mxfp4_emulation: vLLM's Quark on CDNA3)."""
    _, said = executable(dep.precision, dep.gpu)
    emulated = dep.engine.mxfp4_emulation(dep.precision, dep.gpu, moe=model.is_moe)  # the checkpoint's format, as cost.ops asks
    if emulated:  # the emulation's line says what runs in place of the GPU's FP4 mapping (vLLM's NVFP4 on AMD)
        said = tuple(n for n in said if not n.startswith("nvfp4 has no") and "has no FP4 math" not in n)
    # a checkpoint format read as BF16 (ModelSpec.unpriced_quant), while the weights run at that fallback (no other
    # --weight-dtype given): said in --json, the API and the page, not only on stderr (newc9 #8)
    fallback = (model.unpriced_quant,) if model.unpriced_quant and dep.precision.weight == model.default_precision.weight else ()
    # the launched checkpoint's BF16 part, where the GPU runs its format as priced (a remapped one says its own line)
    part = () if said or emulated else partial_attn_note(model, dep)
    return fallback + tuple(said) + quark_note(model, dep.precision) + part + ((emulated,) if emulated else ())


def launched_checkpoint(model: ModelSpec, prec: Precision, gpu=None) -> ModelSpec:
    """The checkpoint an answer at `prec` launches: `model` at its own weights, else the registry's of its release at
    those weights (release_checkpoint), else `model` re-quantised."""
    ck = None if prec.weight == model.default_precision.weight else release_checkpoint(model, prec.weight, gpu)
    return get_model(ck) if ck else model


# the weights of each MLA projection a layer (DeepSeek-V2 sec. 2.1; vLLM deepseek_v2.py DeepseekV2MLAAttention), and
# whether TP splits them: the down-projections q_a and kv_a are replicated on every rank (spec.kinds MLA.weight_bytes_per_gpu)
_MLA_PROJ = {"q_a_proj": (lambda a, h: h * a.q_lora_rank, False),
             "q_b_proj": (lambda a, h: a.q_lora_rank * a.heads * a.head_dim, True),
             "kv_a_proj_with_mqa": (lambda a, h: h * (a.kv_lora_rank + a.rope_dim), False),
             "kv_b_proj": (lambda a, h: a.kv_lora_rank * a.heads * (a.nope_dim + a.v_head_dim), True)}


def partial_attn_note(model: ModelSpec, dep: Deployment) -> tuple[str, ...]:
    """Where the launched checkpoint leaves only some attention projections BF16 (ModelSpec.attn_kept_partial:
    nvidia/DeepSeek-R1-NVFP4's q_a/q_b/kv_a/kv_b, o_proj NVFP4): which run at which format where the precision prices
    them so (attn_in_weight: spec.quant.input_projs_kept), else the part priced at the linear format and its weight bytes
    a GPU not priced, params a GPU (q_b and kv_b split by TP, q_a and kv_a whole) x (2 - bytes a weight of the format) x
    MLA layers (fixN5a; attnproj: fixN5a split q_a and kv_a too)."""
    p = dep.precision
    kept = launched_checkpoint(model, p, dep.gpu).attn_kept_partial if p.attn_weight is None else ()
    if not kept:
        return ()
    if p.attn_in != p.attn:
        return (f"the checkpoint keeps {', '.join(kept)} {p.attn_in.name.upper()}, priced so; o_proj in {p.attn.name}",)
    mla = [(layer.attn, n) for layer, n in model.groups if isinstance(layer.attn, MLA)]
    tp = int(np.asarray(dep.plan.tp).reshape(-1)[0])
    per = sum(n * _MLA_PROJ[k][0](a, model.hidden) / (tp if _MLA_PROJ[k][1] else 1) for a, n in mla for k in kept if k in _MLA_PROJ)
    gb = per * (2 - p.weight.bytes_per_weight()) / 1e9
    return (f"the checkpoint keeps {', '.join(kept)} BF16, priced here in {p.weight.name}: "
            f"{gb:.2f} GB of weights a GPU not priced (at TP{tp})",)


def precision_for(model: ModelSpec, weight: str | None = None, activation: str | None = None, kv: str | None = None, *,
                  gpu=None) -> Precision:
    """The checkpoint's own precision with the formats given overridden, on `gpu` where known (quark_mxfp4). Naming the
    checkpoint's own weight format keeps what the checkpoint keeps wider (gpt-oss: MXFP4 experts, BF16 attention)."""
    p = model.default_precision
    if weight:
        q = Precision.of(weight, activation, kv or p.kv.name)
        if q.weight.name != p.weight.name:
            return checkpoint_precision(model, q, gpu)
        # the checkpoint's own format: its activations too unless others are named (gpt-oss's MXFP4 runs W4A16), and its
        # own groups (an AWQ checkpoint's int4 at 4.156 bits, not --weight-dtype int4's 4.5: spec.precision.int_grouped)
        return replace(p, kv=q.kv) if activation is None else replace(q, weight=p.weight, attn_weight=p.attn_weight,
                                                                      attn_in_weight=p.attn_in_weight)
    if activation:
        p = replace(p, activation=get_dtype(activation, "activation_dtype"))
    if kv:
        p = replace(p, kv=get_dtype(kv, "kv_dtype"))
    return p


# DeepSeek-V3's published MTP acceptance: its technical report (arXiv:2412.19437v2, §5.4.3 "Multi-Token Prediction
# Evaluation", PDF p.35): "the acceptance rate of the second token prediction ranges between 85% and 90% across various
# generation topics" (one MTP module, so one draft token; batch and hardware not given). Range 0.85-0.90; the midpoint
# is V3's position-1 default.
MTP_PUBLISHED_RANGE = (0.85, 0.90)
MTP_PUBLISHED_SOURCE = ("DeepSeek-V3 technical report (arXiv:2412.19437v2 §5.4.3): the 2nd token accepted 85-90% "
                        "across generation topics")
# DeepSeek-R1's measured depth scan: TensorRT-LLM tech blog 1 ("Pushing Latency Boundaries ... DeepSeek-R1 on B200",
# its "Autoregressive MTP Layers" table; data/measurements/SOURCES.md, published_mtp_depth.csv): mean accepted tokens a
# step at 1-5 draft tokens, one request on 8 x B200, the one MTP module run autoregressively. Its per-position conditional
# rates follow from the differences (mtp_depth_rates); past position 5 the last rate is held, so the mean stays ~3.01.
MTP_DEPTH_CSV = "published_mtp_depth.csv"
MTP_DEPTH_SOURCE = "TensorRT-LLM blog 1's MTP depth scan of DeepSeek-R1 (8 x B200, one request; published_mtp_depth.csv)"
# the models whose published acceptance is bundled: R1 (and NVIDIA's NVFP4 R1, the scan's own checkpoint) from the scan
# alone, V3 its own report's position 1 and the scan's positions 2-5 (R1 is post-trained from V3-Base and ships the same
# one-module MTP layer, num_nextn_predict_layers 1; V3's later positions are unpublished). AMD's MXFP4 R1
# (deepseek-r1-mxfp4) is R1's weights with that module left BF16 (its model card excludes model.layers.61): the scan's too
MTP_DEFAULTS = {"deepseek-v3": "v3", "deepseek-r1": "scan", "deepseek-r1-nvfp4": "scan", "deepseek-r1-mxfp4": "scan"}
# EAGLE-3's published acceptance. Its paper's Table 1 (Li et al., arXiv:2503.01840v3; data/speculative/SOURCES.md,
# published_eagle3_tau.csv) gives the mean tokens a draft-verify cycle (tau) of its own heads, measured with a dynamic
# draft tree (Appendix A: depth 8, 60 / 48 draft tokens for the 8B / 70B targets) in HF Transformers at batch 1: quoted,
# never priced as the chain of --draft-len tokens the engines here run, which accepts less (the 8B head's tau 6.13 would
# read as a flat 0.90 a position, 5.7 tokens at a chain of 7; vLLM's chain of 7 measured 3.53 on MT-bench,
# vllm-project/vllm#26191). The one chain measurement bundled, Llama 4 Maverick's scan at 1-7 draft tokens on vLLM
# (eagle3_chain_maverick.csv), is its default: the three datasets' mean at each length, read as mtp_depth_rates reads R1's.
EAGLE3_CSV = "published_eagle3_tau.csv"
EAGLE3_CHAIN_CSV = "eagle3_chain_maverick.csv"
EAGLE3_CELL = ("MT-bench", "0")  # the hint's column and temperature
EAGLE3_SOURCE = "EAGLE-3's Table 1 (arXiv:2503.01840v3)"
EAGLE3_CHAIN_SOURCE = ("RedHatAI's EAGLE-3 chain scan of Llama 4 Maverick (its model card: nvidia/Llama-4-Maverick-17B-128E-"
                       "Eagle3 on vLLM 0.11.0, 8 x B200, T=0.6; eagle3_chain_maverick.csv)")
DRAFT_HINT = ("a separate draft model has no default (its acceptance depends on the draft, the target and the data): give "
              "its measured --acceptance (mean accepted tokens a step) or --acceptance-rates")


NGRAM_HINT = ("prompt lookup's hit rate is the workload's own (how much of each output repeats its prompt or itself: code "
              "edits and retrieval answers hit often, open chat rarely), so none is assumed: give the mean tokens a step your "
              "traffic accepts, --acceptance between 1 and k+1 (e.g. --draft-len 3 --acceptance 2.0), or --acceptance-rates")


def mtp_depth_rates(lengths) -> tuple[float, ...]:
    """Per-position conditional acceptance from mean accepted lengths at k = 1, 2, ...: position i is accepted with
    p_i = L_i - L_(i-1) (L_0 = 1), so its rate given the one before is p_i / p_(i-1): 1.92, 2.58 -> 0.92, 0.66/0.92."""
    p = np.diff(np.concatenate([[1.0], np.asarray(lengths, dtype=float)]))
    return tuple(float(x) for x in p / np.concatenate([[1.0], p[:-1]]))


@functools.lru_cache(maxsize=1)
def mtp_depth_scan() -> tuple[float, ...]:
    """The depth scan's mean accepted lengths at k = 1..5 (published_mtp_depth.csv, its rows with a draft length)."""
    import csv
    from importlib import resources

    with resources.files("llm_codesign").joinpath("data", "measurements", MTP_DEPTH_CSV).open() as f:
        rows = [r for r in csv.DictReader(f) if r["spec_draft_len"]]
    return tuple(float(r["spec_acceptance"]) for r in sorted(rows, key=lambda r: int(r["spec_draft_len"])))


@functools.lru_cache(maxsize=1)
def eagle3_table() -> tuple[dict, ...]:
    """The EAGLE-3 rows of the paper's Table 1, one a cell (published_eagle3_tau.csv)."""
    import csv
    from importlib import resources

    with resources.files("llm_codesign").joinpath("data", "speculative", EAGLE3_CSV).open() as f:
        return tuple(csv.DictReader(f))


@functools.lru_cache(maxsize=1)
def eagle3_chain() -> dict:
    """The bundled EAGLE-3 chain scans, {model: (head, datasets, mean accepted lengths at k = 1..)}: each length the mean
    of the scan's datasets at that draft length (eagle3_chain_maverick.csv)."""
    import csv
    from importlib import resources

    with resources.files("llm_codesign").joinpath("data", "speculative", EAGLE3_CHAIN_CSV).open() as f:
        rows = list(csv.DictReader(f))
    out = {}
    for m in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == m]
        ks = sorted({int(r["draft_len"]) for r in mine})
        sets = tuple(dict.fromkeys(r["dataset"] for r in mine))
        lengths = tuple(float(np.mean([float(r["acceptance_length"]) for r in mine if int(r["draft_len"]) == k])) for k in ks)
        out[m] = (mine[0]["head"], sets, lengths)
    return out


def eagle3_published(name: str, head: str | None = None) -> tuple[tuple[float, ...], str] | None:
    """`name`'s EAGLE-3 default from a bundled chain scan (eagle3_chain: Llama 4 Maverick's) as per-position rates
    (mtp_depth_rates), or None where none is bundled, or where the draft `head` named is not the scan's (None: unnamed,
    taken as the scan's)."""
    got = eagle3_chain().get(name)
    if got is None or (head is not None and head != got[0]):
        return None
    _, sets, lengths = got
    rates = mtp_depth_rates(lengths)
    return rates, (f"acceptance from {EAGLE3_CHAIN_SOURCE}: mean accepted {', '.join(f'{x:.2f}' for x in lengths)} at "
                   f"k=1-{len(lengths)}, the mean of {', '.join(sets)}; per position {', '.join(f'{r:.3f}' for r in rates)}")


def published_acceptance(method: str, model, head: str | None = None) -> tuple[tuple[float, ...], str] | None:
    """The per-position rates and source of a published acceptance for `model`'s `method` (MTP on DeepSeek-V3/R1,
    MTP_DEFAULTS; EAGLE-3 where a measured chain scan is bundled, with its own `head`: Llama 4 Maverick's,
    eagle3_published), or None where none is (the EAGLE-3 paper's tree taus are quoted by acceptance_hint, never priced)."""
    name = getattr(model, "name", model)
    if method == "eagle3":
        return eagle3_published(name, head)
    kind = MTP_DEFAULTS.get(name) if method == "mtp" else None
    if kind is None:
        return None
    lengths = mtp_depth_scan()
    rates = mtp_depth_rates(lengths)
    scan = (f"{MTP_DEPTH_SOURCE}: mean accepted {', '.join(f'{x:g}' for x in lengths)} at k=1-{len(lengths)}")
    if kind == "v3":
        r1 = sum(MTP_PUBLISHED_RANGE) / 2
        return (r1, *rates[1:]), (f"position 1 {r1:.3f}, the midpoint of {MTP_PUBLISHED_SOURCE}; positions 2-{len(rates)} "
                                  f"{', '.join(f'{r:.3f}' for r in rates[1:])} from R1's {scan} (V3's own unpublished)")
    # each depth is its own run, so the conditional rates that reproduce every depth's mean need not fall smoothly
    # (0.364 then 0.708): say so, with the shares that do fall, the steps accepting at least i tokens (newc7 #8)
    shares = np.cumprod(rates)
    return rates, (f"per position {', '.join(f'{r:.3f}' for r in rates)} from {scan}: the rates given the position "
                   f"before that reproduce each depth's mean, each depth its own run, so not a smooth curve; steps "
                   f"accepting at least 1-{len(rates)} draft tokens {', '.join(f'{x:.2f}' for x in shares)}")


def acceptance_hint(method: str) -> str:
    """What to give where no acceptance is given and none is bundled, per method (the refusal's second half)."""
    if method == "eagle3":
        cells = [r for r in eagle3_table() if (r["dataset"], r["temperature"]) == EAGLE3_CELL]
        taus = ", ".join(f"{r['target']} {r['tau']}" for r in cells)
        return (f"an EAGLE-3 head's acceptance depends on the head and the data, and no chain of draft tokens is measured for "
                f"this model and head: {EAGLE3_SOURCE} measured tau on MT-bench at T=0 {taus}, with its heads and a dynamic "
                f"draft tree of depth {cells[0]['tree_depth']}, an upper bound for the chain an engine drafts (vLLM's chain of "
                "7 with the 8B head: 3.53, vllm-project/vllm#26191); give your head's measured --acceptance or "
                "--acceptance-rates")
    if method == "draft":
        return DRAFT_HINT
    if method == "ngram":
        return NGRAM_HINT
    return (f"none is published for this model: give --acceptance or --acceptance-rates; a model's own MTP module: "
            f"DeepSeek-V3's accepts its first draft token 0.85-0.90 ({MTP_PUBLISHED_SOURCE}), R1's "
            f"{', '.join(f'{x:g}' for x in mtp_depth_scan())} tokens a step at k=1-5 ({MTP_DEPTH_SOURCE}), e.g. --draft-len 1 "
            "--acceptance-rates 0.85")


# why a drafter named with a method that runs none is refused: the one rule of the CLI's --draft-model, the page's
# draft_model, lc's and import's (spec_decoding, SpecDecoding). MTP's is not refused: it names the module's checkpoint where
# an engine loads it apart (SGLang's NEXTN with --speculative-draft-model-path, as DeepSeek-R1's launches set it, which its
# export writes); a Hub id or folder only (check_draft_model), on an engine that loads it so (Engine.mtp_module_apart)
NO_DRAFTER = {None: "used with --spec draft or eagle3 (without --spec nothing is drafted)",
              "ngram": "left out with --spec ngram (prompt lookup drafts from the request's own tokens; no draft model runs)"}


def check_draft_model(method: str | None, draft_model: str | None) -> None:
    """Refuses a drafter with a method that runs none (NO_DRAFTER), and an MTP module's checkpoint that names no Hub id or
    folder (it is written as the launch's path, never looked up), in one line naming draft_model."""
    if draft_model and method in (None, "none", "ngram"):
        raise InputError("draft_model", draft_model, NO_DRAFTER[None if method == "none" else method])
    if draft_model and method == "mtp" and not re.fullmatch(r"[\w.~/-]*/[\w.-]+/?", str(draft_model)):
        raise InputError("draft_model", draft_model, "the MTP module's checkpoint as a Hugging Face id (owner/name, e.g. "
                         "lmsys/DeepSeek-R1-NextN) or a folder, or left out (the target's own module)")


def spec_decoding(method: str | None, *, draft_len: int | None = None, acceptance: float | None = None,
                  acceptance_rates: str | tuple | None = None, draft_model: str | None = None, model=None) -> SpecDecoding | None:
    """SpecDecoding from loose options (None when `method` is None or "none"); rates as "0.8,0.6" or a tuple. With no
    acceptance given, `model`'s published one (published_acceptance) where there is one, its source in `source`: every
    published position kept (a search's other draft lengths read them: SpecDecoding.at), as many draft tokens as
    `draft_len` says, else MTP's one (the one module DeepSeek ships) and EAGLE-3's three; positions
    past the published ones held at the last."""
    check_draft_model(method, draft_model)
    if method is None or method == "none":
        if acceptance is not None or acceptance_rates:
            raise InputError("spec", method, f"--spec {'|'.join(SPEC_METHODS)} when --acceptance or --acceptance-rates is given")
        if draft_len is not None:
            raise InputError("draft_len", draft_len, f"used with --spec {'|'.join(SPEC_METHODS)} (without it nothing is drafted)")
        return None
    if method == "mtp":  # no MTP module: refused before any acceptance is asked for (a rate for a method no engine runs here)
        check_mtp_module(model)
    rates = acceptance_rates_of(acceptance_rates, k=draft_len, draft=f"--draft-len {draft_len}")  # one per draft token
    source = ""
    if acceptance is None and not rates and (pub := published_acceptance(method, model, draft_model)) is not None:
        rates, source = pub
        # no --draft-len: MTP one draft token (the one module DeepSeek ships), EAGLE-3 three (NVIDIA's Maverick record's)
        k = draft_len if draft_len is not None else (1 if method == "mtp" else 3)
        if k > len(rates):
            source += f"; positions {len(rates) + 1}-{k} held at the last, {rates[-1]:.3f} (unpublished)"
        elif draft_len is not None:
            rates = rates[:k]  # one rate per draft token, as given ones are (an export states k rates)
    else:
        k = draft_len if draft_len is not None else (len(rates) if rates else 3)
    return SpecDecoding(method, k, acceptance, rates, draft_model, source)


def acceptance_rates_of(rates, *, k: int | None = None, draft: str = "") -> tuple[float, ...]:
    """Per-position acceptance rates as given: "0.8,0.6" (the CLI's), a list, tuple or array of numbers, or None or ""
    (none); with `k`, one per draft token, neither padded nor cut (`draft` says where k comes from, for the refusal).
    The one parser of --acceptance-rates: estimate's and the searches' (spec_decoding), import's (explore.export)."""
    if rates is None or (isinstance(rates, str) and not rates):
        return ()
    out = None
    try:
        if isinstance(rates, str):
            out = tuple(float(x) for x in rates.split(","))
        elif isinstance(rates, (list, tuple, np.ndarray)) and all(isinstance(x, Real) and not isinstance(x, bool) for x in np.ravel(rates)):
            out = tuple(float(x) for x in np.ravel(rates))
    except ValueError:
        pass
    if out is None:
        raise InputError("acceptance_rates", rates if isinstance(rates, (str, int, float, list, tuple)) else type(rates).__name__,
                         "comma-separated probabilities, e.g. 0.8,0.6,0.5")
    if out and k is not None and len(out) != k:
        raise InputError("acceptance_rates", rates, f"{k} rates, one per draft token ({draft})")
    return out


def check_sizes(hi: int = MAX_GPUS, **sizes) -> None:
    """Each size given (not None) an integer from 1 to `hi` (GPUs and parallel sizes: MAX_GPUS; step budgets: pass
    MAX_STEP_TOKENS), the CLI's bounds: a float (2.5, NaN), a string or a boolean is refused in one line before it
    reaches an array (where NaN became a plan and '2' a TypeError), and 10^9 GPUs before a frontier of 10^9 replicas."""
    for name, v in sizes.items():
        if v is not None:
            as_int(name, v, hi=hi, what=f"a positive integer up to {hi:,}")


def engine_arg(engine: str | None, backend: str | None) -> str | None:
    """The engine named as `engine=` or as `backend=` (the CLI takes --backend and --engine; answers, records and
    Deployment call it `backend`): one of the two, or both naming the same."""
    if engine is not None and backend is not None and engine != backend:
        raise InputError("backend", backend, f"the engine engine={engine!r} names, or only one of the two")
    return engine if engine is not None else backend


def default_moe_tp(num_gpus, ep, pp):
    """MoE TP where none is given: what EP and PP leave of the GPUs, at least 1 (scalars or arrays: lc.deployment and
    the validation rows fill a blank one alike)."""
    return np.maximum(np.asarray(num_gpus) // (np.asarray(ep) * np.asarray(pp)), 1)


# SGLang's --tp-size counts every GPU of a stage, and --dp-size with --enable-dp-attention splits them into attention-DP
# ranks of tp_size // dp_size GPUs (python/sglang/srt/layers/dp_attention.py compute_dp_attention_world_info, read through
# the search index, unpinned; `import` reads it so, explore/export_engines/sglang.py plan_from). Here --tp is one rank's TP
# and the GPUs are tp x attention_dp (TensorRT-LLM's tp_size with enable_attention_dp, vLLM's --data-parallel-size): an
# SGLang launch copied flag for flag prices tp x dp GPUs, 64 for its 8 (newc8 #9). Said, never refused (the convention kept)
def attention_dp_note(plan: Plan, *, gpus_given: bool = False) -> str | None:
    """One line where a plan of attention DP over a TP > 1 group was sized from its parallel sizes alone (no GPU count
    given), naming its GPUs and SGLang's spelling of the plan a copied SGLang launch meant: "DP8xTP8 is 64 GPUs; SGLang's
    --tp 8 --dp 8 --enable-dp-attention is --tp 1 --attention-dp 8 here (8 GPUs)". None otherwise. The one rule of
    estimate, export, disagg and lc.deployment (Deployment.plan_note)."""
    tp, pp, _, _, adp, kvp = plan.at(0).sizes
    if gpus_given or adp == 1 or tp == 1:
        return None
    n, by = tp * adp * kvp * pp, "tp x attention_dp" + (" x kvp" if kvp > 1 else "") + (" x pp" if pp > 1 else "")
    sglang = (f"SGLang's --tp {tp} --dp {adp} --enable-dp-attention is --tp {tp // adp} --attention-dp {adp} here ({tp * kvp * pp} GPUs)"
              if tp % adp == 0 else f"SGLang's --tp-size counts every GPU: this plan is its --tp {tp * adp} --dp {adp} --enable-dp-attention")
    return f"DP{adp}xTP{tp} is {n} GPUs ({by}); {sglang}"


def fill_plan(model: ModelSpec, *, num_gpus: int | None = None, tp: int | None = None, pp: int | None = None, ep: int | None = None,
              moe_tp: int | None = None, attention_dp: int | None = None, kvp: int | None = None) -> tuple[Plan, int]:
    """The plan loose sizes name, filled in as the engines do, and its GPU count (num_gpus, else the sizes' product): TP
    takes the GPUs the other sizes leave, MoE TP what EP and PP leave of the attention side's GPUs. The one fill-in of
    lc.deployment (every command's plan options) and roofline's."""
    # each named as this call names it (num_gpus, not the CLI's --gpus: cli.common._deployment says it as the CLI does)
    check_sizes(tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp, num_gpus=num_gpus)
    tp_, pp_, ep_, adp_, kvp_ = tp or 1, pp or 1, ep or 1, attention_dp or 1, kvp or 1
    n = num_gpus or tp_ * pp_ * adp_ * kvp_
    if n > MAX_GPUS:  # each size bounded, their product too (--attention-dp 65536 --kvp 8 priced 524,288 GPUs)
        raise InputError("num_gpus", n, f"at most {MAX_GPUS:,} GPUs, which tp x pp x attention_dp x kvp multiply to")
    if tp is None and num_gpus and n % (pp_ * adp_ * kvp_) == 0:
        tp_ = n // (pp_ * adp_ * kvp_)
    if model.is_moe:
        # of the GPUs the attention side spans, which are n wherever the plan is valid: `--gpus 8 --tp 1 --replicas 8` inferred
        # MoE-TP8 from the 8 and its refusal offered DP8 attention, another deployment (newc8 #15); now TP1 EP1 on 1 GPU, the
        # refusal's advice one GPU and 8 replicas, as a dense model's
        moe_tp_ = moe_tp if moe_tp is not None else int(default_moe_tp(tp_ * pp_ * adp_ * kvp_, ep_, pp_))
    else:
        moe_tp_ = moe_tp or 1
    return Plan(tp_, pp_, ep_, moe_tp_, adp_, kvp_), n


def deployment(model: ModelSpec | str | dict, *, gpu: Gpu | str, num_gpus: int | None = None, tp: int | None = None, pp: int | None = None,
               ep: int | None = None, moe_tp: int | None = None, attention_dp: int | None = None, kvp: int | None = None,
               weight_dtype: str | None = None, activation_dtype: str | None = None, kv_dtype: str | None = None,
               engine: str | None = None, spec: str | SpecDecoding | None = None, draft_len: int | None = None,
               acceptance: float | None = None, acceptance_rates: str | tuple | None = None, draft_model: str | None = None,
               max_num_tokens: int | None = None, cpp: bool = False, backend: str | None = None, max_batch: int | None = None,
               chunked_prefill: bool | None = None, kv_fraction: float | None = None, cuda_graph_max_bs: int | None = None,
               piecewise_graphs: bool = False, **unknown) -> Deployment:
    """A Deployment from loose options, filled in as the engines do: TP takes the GPUs the other sizes
    leave, MoE TP what EP and PP leave of the attention side's GPUs; with attention DP over TP > 1 and no `num_gpus`, the
    GPUs are tp x attention_dp, said in `plan_note` (attention_dp_note: SGLang's --tp counts every GPU); precision defaults to the checkpoint's own; the engine to the GPU
    vendor's, and one that does not run on the GPU is refused (spec.engines.engine_for; `backend=` names it as well).
    `max_batch`: the engine's batch cap per attention-DP rank (Deployment.max_batch; None: the engine's own); `chunked_prefill`:
    the launch's enable_chunked_prefill (Deployment.chunked_prefill; None: the engine's default); `kv_fraction`,
    `cuda_graph_max_bs` (0: eager, as estimate --cuda-graph-max-bs 0) and `piecewise_graphs` as Deployment's, checked there
    (the one check of the CLI's flags, the page's fields and this). `model` is a ModelSpec or anything `get_model` takes;
    `gpu` a Gpu, a catalog id or a GPU TOML path. Any other keyword is refused in one line naming it."""
    if unknown:  # a misspelt keyword was Python's TypeError traceback, not the one line every input error is
        name = sorted(unknown)[0]
        raise InputError(name, unknown[name], "left out: not a deployment option (lc.deployment's keywords: "
                         + ", ".join(p for p in signature(deployment).parameters if p not in ("model", "unknown")) + ")")
    if not isinstance(model, ModelSpec):  # a name, an id, a path or a config dict, as every other entry point takes it
        model = get_model(model)
    check_sizes(MAX_STEP_TOKENS, max_num_tokens=max_num_tokens)
    if chunked_prefill is not None and not isinstance(chunked_prefill, bool):
        raise InputError("chunked_prefill", chunked_prefill, "True, False or None (the engine's default)")
    plan, n = fill_plan(model, num_gpus=num_gpus, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp)
    sd = spec if isinstance(spec, SpecDecoding) else spec_decoding(spec, draft_len=draft_len, acceptance=acceptance,
                                                                   acceptance_rates=acceptance_rates, draft_model=draft_model, model=model)
    check_spec_model(model, sd)
    gpu = gpu if isinstance(gpu, Gpu) else get_gpu(gpu)
    prec, backend = precision_for(model, weight_dtype, activation_dtype, kv_dtype, gpu=gpu), engine_arg(engine, backend)
    # the model's own refusal first (a dense model's MXFP4 advice differs from a MoE's): Deployment's own check, which
    # knows no model, would pre-empt it (review frev #7)
    check_runs(engine_for(gpu, backend), gpu, prec=prec.on(gpu), moe=model.is_moe)
    check_head_dims(model, engine_for(gpu, backend).name, gpu, prec.kv.name)  # lint R4's error: a head size no kernel runs
    dep = Deployment(gpu=gpu, num_gpus=n, plan=plan, precision=prec, backend=backend, spec=sd, max_num_tokens=max_num_tokens, cpp=cpp, max_batch=max_batch,
                     chunked_prefill=chunked_prefill, kv_fraction=kv_fraction, cuda_graph_max_bs=cuda_graph_max_bs,
                     piecewise_graphs=piecewise_graphs, plan_note=attention_dp_note(plan, gpus_given=bool(num_gpus)))
    check_step_budget(dep)
    return dep


def check_spec_model(model: ModelSpec, spec: SpecDecoding | None) -> None:
    """Refuse MTP on a model whose config ships no MTP module (ModelSpec.mtp_layers 0): the engines' MTP drafts with the
    checkpoint's own module, loaded from its layers past num_hidden_layers (vLLM's SpeculativeConfig.hf_config_override
    reads num_nextn_predict_layers as the draft's n_predict, vllm/config/speculative.py; SGLang's NEXTN and TensorRT-LLM's
    MTP load DeepSeek's model.layers.61), so no engine runs it; a model not read from a config (None) is not judged."""
    if spec is not None and spec.method == "mtp":
        check_mtp_module(model)
    if spec is not None and spec.method == "draft" and spec.draft_model:
        check_draft_vocab(model, spec.draft_model)


def check_draft_vocab(model: ModelSpec, name: str) -> None:
    """Refuse a drafter whose vocabulary is not the target's: its proposed token ids are verified as the target's, so the
    engines take a draft model of the target's tokenizer only. vLLM raises "Target and draft model should have the same
    vocabulary size" (SpeculativeConfig.verify_equal_vocab_size_if_draft_model, vllm/config/speculative.py:2040-2055,
    called by DraftModelProposer, v1/spec_decode/draft_model.py:56-61@0.33.0) unless use_heterogeneous_vocab (greedy drafts
    mapped over the two tokenizers' intersection, :1995-2009), which no answer here prices. SGLang's and TensorRT-LLM's
    draft-model paths are not read here; their verification takes the draft's ids as the target's, as every draft-model
    scheme does (Leviathan et al. 2023). A vocabulary size is what a config states of the tokenizer (Qwen3's 151,936
    against Llama 3.1's 128,256)."""
    draft = get_model(name)
    if draft.vocab != model.vocab:
        raise InputError("draft_model", name, f"a drafter with {model.name}'s tokenizer (vocabulary {model.vocab:,}; {draft.name}'s "
                                              f"{draft.vocab:,}): the engines verify its token ids as the target's")


def check_mtp_module(model) -> None:
    """check_spec_model's refusal for `model` (a ModelSpec; anything else, or mtp_layers None, is not judged), which
    spec_decoding applies before it asks for an acceptance."""
    if getattr(model, "mtp_layers", None) != 0:
        return
    from llm_codesign.spec.registry import entries

    ships = [e["name"] for e in entries() if get_model(e["name"]).mtp_layers]
    raise InputError("spec", "mtp", f"eagle3 or draft for {model.name}: its config ships no MTP module (it sets none of "
                                    f"num_nextn_predict_layers, mtp_num_hidden_layers, num_mtp_modules); mtp is for a model that "
                                    f"does ({', '.join(ships)})")


def check_step_budget(dep: Deployment, field: str = "max_num_tokens") -> None:
    """Refuse a step token budget below one decoding request's tokens (1 + its draft length) where the engine counts
    the decodes in it (Engine.budget_batch): no request would ever decode; or one that leaves an attention-DP rank no token
    where the engine splits the server's figure over its ranks (Deployment.rank_step_tokens: SGLang's chunked_prefill_size //
    dp_size), the engine's default included. `field`: the option that set it."""
    check_budget_holds(dep.max_num_tokens, dep.engine, dep.spec.k if dep.spec is not None else 0, field)
    adp = int(np.max(dep.plan.adp))
    if np.min(dep.rank_step_tokens) < 1:
        raise InputError(field, dep.step_tokens, f"at least {adp}: {dep.engine.title} splits a prefill step's budget over its {adp} "
                                                 "attention-DP ranks")


def chunks_prompts(dep: Deployment) -> bool:
    """Whether `dep`'s engine splits a prompt over steps: its launch option (Deployment.chunked_prefill), else the
    engine's default (Engine.chunks_prefill: TensorRT-LLM's enable_chunked_prefill is off)."""
    return bool(dep.engine.chunks_prefill if dep.chunked_prefill is None else dep.chunked_prefill)


def whole_prompts(engine, chunked_prefill, *, stated: bool):
    """Whether a launch on `engine` schedules prompts whole as it states them (arrays broadcast over `chunked_prefill`, the
    launch's flag or None for the engine's default): chunked prefill turned off, or left at an engine's default of off with
    a step budget of its own `stated` (max_num_tokens). Left both at TensorRT-LLM's defaults, a prompt over the default
    budget is read as a launch with chunked prefill on (what TensorRT-LLM's long-context guides set) and priced chunked, as
    before: the page's and the docs' long-context answers (Helix at 131,072 tokens) name neither option. The one rule
    behind states_whole_prompts (a deployment) and prompt_schedules (a search's columns)."""
    if chunked_prefill is None:
        return bool(stated and not engine.chunks_prefill)
    return np.logical_not(np.asarray(chunked_prefill, bool))


def states_whole_prompts(dep: Deployment) -> bool:
    """whole_prompts for one deployment: its launch option (Deployment.chunked_prefill) and whether it states max_num_tokens."""
    return bool(whole_prompts(dep.engine, dep.chunked_prefill, stated=dep.max_num_tokens is not None))


def whole_length(engine, isl, osl, kvp=1):
    """The tokens a launch that schedules prompts whole must hold in its step budget (arrays ok): the prompt per KV-parallel
    rank, or the whole request, isl + osl, where the engine bounds that (Engine.whole_request_in_budget: vLLM's
    max_model_len within max_num_batched_tokens)."""
    if engine.whole_request_in_budget:
        return np.asarray(isl, float) + np.asarray(osl, float)
    return np.asarray(isl, float) / np.asarray(kvp, float) + 0.0 * np.asarray(osl, float)  # broadcast as the other's


def prompt_schedules(engine, chunked_prefill, isl, mnt, *, stated: bool, osl=0, kvp=1):
    """Whether a request of `isl` + `osl` tokens (arrays ok; `kvp` KV-parallel ranks) is scheduled under a step budget of
    `mnt`: always where the launch chunks prompts (whole_prompts false) or the engine is not read to refuse one over its
    budget (Engine.whole_prompt_refusal None: SGLang), else only where the budget holds whole_length. check_whole_prompt
    refuses one deployment's request by it, export's file too; serve.aggregated marks a search's point unfit by it."""
    return (np.logical_not(whole_prompts(engine, chunked_prefill, stated=stated))
            | (whole_length(engine, isl, osl, kvp) <= np.asarray(mnt, float)) | (engine.whole_prompt_refusal is None))


def check_whole_prompt(dep: Deployment, isl: int, field: str = "isl", *, osl: int = 0) -> None:
    """Refuse a prompt longer than the step budget where the launch schedules it whole (states_whole_prompts): TensorRT-LLM's
    LLM API rejects such a request, `if self.args.backend == "pytorch" and not self.args.enable_chunked_prefill and not
    is_gen_only: ... if max_num_tokens and prompt_len / cp_size + query_len > max_num_tokens: raise ValueError("The sum of
    prompt length (...) ... should not exceed max_num_tokens")` (NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm.py
    BaseLLM._check_arguments@4c05a748; the whole prompt, prefix hits included; cp_size: our kvp). review crev #5. Each
    engine's own rule, options and source (Engine.whole_prompt_refusal: vLLM's launch check, ATOM's scheduler; none for
    SGLang, which serves the longer prompt whole: serve.aggregated.prompt_budget); the option here as both callers spell it
    (the CLI's --chunked-prefill, the API's chunked_prefill). vLLM's budget holds the whole request, `isl` + `osl`
    (whole_length; the field then "isl+osl"): estimate, mix, the searches and export's file by one rule (crev12 #3)."""
    kvp = int(np.max(dep.plan.kvp))
    if not np.all(prompt_schedules(dep.engine, dep.chunked_prefill, isl, dep.step_tokens, stated=dep.max_num_tokens is not None,
                                   osl=osl, kvp=kvp)):
        why, budget, on = dep.engine.whole_prompt_refusal
        need = float(whole_length(dep.engine, int(isl), int(osl), kvp))
        field, value = (field.replace("isl", "isl+osl", 1), int(isl) + int(osl)) if dep.engine.whole_request_in_budget else (field, int(isl))
        raise InputError(field, value, f"at most max_num_tokens ({dep.step_tokens:,}): {dep.engine.title} without chunked prefill "
                                       f"{why}; raise max_num_tokens{f' ({budget})' if budget else ''} to {math.ceil(need):,} or more, or turn "
                                       f"chunked prefill on ({on}; --chunked-prefill, the API's chunked_prefill: true)")


def check_budget_holds(max_num_tokens: int | None, engine, draft_len: int, field: str = "max_num_tokens") -> None:
    """check_step_budget's rule for a budget and draft length given apart (a search's fixed draft length)."""
    need = 1 + draft_len
    if max_num_tokens is not None and engine.decodes_in_budget and max_num_tokens < need:
        raise InputError(field, max_num_tokens, f"at least {need}: {engine.name}'s step budget counts a decoding request's "
                                                f"1 + {need - 1} draft tokens")


