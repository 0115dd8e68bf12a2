"""Model specs: one normaliser from a Hugging Face config.json to an immutable shape description.

A model is a tuple of layer groups, each a (Layer, count) pair, so interleaved or heterogeneous
stacks (DeepSeek leading dense layers, Llama 4 alternating MoE, gpt-oss sliding/full attention,
Nemotron-NAS per-block widths) are exact and the cost model visits each distinct layer once.
"""
from __future__ import annotations

import difflib
import functools
import json
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from llm_codesign.errors import InputError, MissingInput, UnsupportedModelError, parse_nested
from llm_codesign.spec.kinds import (
    DSA,
    GQA,
    MLA,
    DenseFfn,
    Ffn,
    GatedDeltaNet,
    LinearFfn,
    LinearMixer,
    Mamba2,
    Mixer,
    MoE,
    NoFfn,
    NoMixer,
)
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.quant import attn_excluded, excluded_modules, read_quant
from llm_codesign.spec.validation import check_config, check_hf_quant

SUPPORTED_LAYERS = ("full attention (MHA/GQA/MQA, optionally output-gated)", "sliding-window attention", "MLA",
                    "Gated DeltaNet linear attention", "Mamba-2", "dense FFN (gated or not)", "MoE with shared experts",
                    "Nemotron-NAS no-op/linear blocks", "Nemotron-H hybrid patterns")


# FLA's chunked gated delta rule processes a sequence in chunks of this many tokens
# (fla.ops.gated_delta_rule.chunk, BT = 64: the kernels vLLM and SGLang vendor)
GDN_CHUNK = 64


@dataclass(frozen=True)
class Layer:
    attn: Mixer  # the token mixer (attention, a recurrent mixer, ...), whatever its kind
    ffn: Ffn


class Note(str):
    """A ModelSpec note with its kind, so a reader picks the notes it says by tag, not by their words: "loader" (what the
    loader read a config as, loader_facts: the CLI says it on stderr), "source" (where the config came from, spec.hub)."""

    def __new__(cls, text: str, *, kind: str):
        note = super().__new__(cls, text)
        note.kind = kind
        return note

    def __getnewargs_ex__(self):  # pickled whole (a search's worker processes)
        return (str(self),), {"kind": self.kind}


@dataclass(frozen=True)
class ModelSpec:
    """A model's shape, immutable: hidden width, vocabulary and its layers as (Layer, count) groups in `layout`'s
    order, the checkpoint's own precision and longest context. Built from a Hugging Face config.json (`get_model`:
    a registry name, an id, a path, or the config as a dict; spec.model.from_hf_config); parameter counts exclude
    norms and biases."""
    name: str
    hidden: int
    vocab: int
    groups: tuple[tuple[Layer, int], ...]
    tie_embeddings: bool = False
    default_precision: Precision = field(default_factory=Precision.of)
    hf_ids: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # Note each, tagged with its kind
    max_context: int = 0  # tokens of context the checkpoint supports (max_context_from_config); 0: unknown
    # the group (index into `groups`) of each layer in stack order; empty: the groups lie in blocks in
    # their listed order. Pipeline stages take consecutive layers, so the order sets what each holds.
    layout: tuple[int, ...] = ()
    architecture: str = ""  # the checkpoint's architectures[0] (engines pick some defaults by it); '' unknown
    mtp_layers: int | None = None  # MTP modules the checkpoint ships (loader_facts); None: not read from a config
    # the checkpoint's quantization no format here prices, read as BF16 (spec.quant.read_quant's note): an answer priced at
    # that fallback carries it in its precision_notes (spec.plan.precision_notes), not on stderr alone (newc9 #8); '' none
    unpriced_quant: str = ""
    # the attention projections the checkpoint leaves BF16 where it leaves only some (spec.quant.attn_excluded:
    # nvidia/DeepSeek-R1-NVFP4's q_a/q_b/kv_a/kv_b, not o_proj), priced per projection where they are all the input ones
    # (Precision.attn_in_weight, spec.quant.input_projs_kept), a smaller part at the linear format (spec.plan.partial_attn_note)
    attn_kept_partial: tuple[str, ...] = ()

    def check_context(self, isl, osl, *, field: str = "isl+osl") -> None:
        """One line refusing a request longer than the model's context, as engines refuse it (vLLM
        rejects max_model_len beyond the derived maximum unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set);
        `field` names the input it came from (roofline's "context")."""
        if self.max_context and int(isl) + int(osl) > self.max_context:
            raise InputError(field, int(isl) + int(osl),
                             f"at most {self.name}'s context of {self.max_context:,} tokens (max_position_embeddings"
                             " with its RoPE scaling)")

    @property
    def num_layers(self) -> int:
        return sum(n for _, n in self.groups)

    def stage_counts(self, pp: int) -> tuple[tuple[int, ...], ...]:
        """Layers of each group on each of `pp` pipeline stages, split as vLLM does (get_pp_indices:
        L // pp layers per stage, the L % pp left over one each on the stages before the last, which
        holds the LM head; TensorRT-LLM's split also gives the extra layers to non-last stages)."""
        return stage_split(tuple(int(n) for _, n in self.groups), self.layout, int(pp))

    @property
    def is_moe(self) -> bool:
        return any(isinstance(layer.ffn, MoE) for layer, _ in self.groups)

    @property
    def moe_gated(self) -> bool:
        """Whether its routed experts are gated (SwiGLU; MoE.gated: False for relu2's, Nemotron-H): the first MoE layer's,
        as the one expert format the weights are held in (cost.memory.expert_weight_bytes) reads it; True without a MoE."""
        gated = [layer.ffn.gated for layer, _ in self.groups if isinstance(layer.ffn, MoE)]
        return gated[0] if gated else True

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tie_embeddings else self.vocab * self.hidden

    def _body(self) -> tuple[int, int]:
        total = active = 0
        for layer, n in self.groups:
            a = layer.attn.params(self.hidden)
            ft, fa = layer.ffn.params(self.hidden)
            total += n * (a + ft)
            active += n * (a + fa)
        return total, active

    @property
    def total_params(self) -> int:
        """All weights: embedding, layers, and the LM head when it is not tied."""
        return self.embedding_params + self._body()[0] + self.lm_head_params

    @property
    def active_params(self) -> int:
        """Weights a token multiplies: layers with top-k experts, plus the LM head (unembedding).

        The input embedding is a lookup, not a matmul, so it is left out (OpenAI's gpt-oss
        convention); `active_params_with_embedding` adds it back (Mistral's and Meta's convention).
        """
        return self._body()[1] + self.vocab * self.hidden

    @property
    def active_params_with_embedding(self) -> int:
        return self.active_params + self.embedding_params

    def kv_values_per_token(self, context: float | None = None) -> float:
        """KV-cache values per token over all layers; sliding-window layers cap at their window."""
        total = 0.0
        for layer, n in self.groups:
            v = layer.attn.kv_values_per_token()
            if context is not None:
                v *= layer.attn.held_fraction(context)
            total += n * v
        return total

    def state_bytes_per_seq(self) -> float:
        """Fixed-size recurrent state per sequence over all layers (Gated DeltaNet, Mamba-2), unsharded."""
        return sum(n * layer.attn.state_bytes_per_seq() for layer, n in self.groups)

    def with_precision(self, p: Precision) -> "ModelSpec":
        """This model as a checkpoint in `p` (its `default_precision`: what a deployment runs when no format is named)."""
        return replace(self, default_precision=p)


@functools.lru_cache(maxsize=1024)  # a search asks for every pp of every chunk: the same few splits
def stage_split(counts: tuple[int, ...], layout: tuple[int, ...], pp: int) -> tuple[tuple[int, ...], ...]:
    """ModelSpec.stage_counts of a model whose groups hold `counts` layers in `layout` order."""
    L = sum(counts)
    sizes = [L // pp] * pp
    for i in range(2, L % pp + 2):
        sizes[-i] += 1
    # a layout left stale by replace(groups=...) (other counts or fewer groups) reads as blocks
    ok = len(layout) == L and max(layout, default=0) < len(counts) and all(layout.count(i) == n for i, n in enumerate(counts))
    order = layout if ok else tuple(i for i, n in enumerate(counts) for _ in range(n))
    out, start = [], 0
    for size in sizes:
        c = [0] * len(counts)
        for g in order[start:start + size]:
            c[g] += 1
        out.append(tuple(c))
        start += size
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Normaliser


def _missing(cfg: dict, key: str, origin: str, what: str = "a positive integer") -> MissingInput:
    """A required config key the config lacks, in one line with the model's name quoted and the config's nearest key where
    one is a near miss (difflib ratio >= 0.9: "intermediate_sise" for intermediate_size, 0.94; moe_intermediate_size, a key
    of its own, is 0.895): "None is not valid" read as a bug, and a model named `typo` as part of the sentence (newc5 #15)."""
    near = difflib.get_close_matches(key, [k for k in cfg if isinstance(k, str) and k != key], n=1, cutoff=0.9)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return MissingInput(f"config.{key}", f"the config.json of model {origin!r} has no {key!r}{hint}: {what}")


def _req(cfg: dict, key: str, origin: str):
    if cfg.get(key) is None:
        raise _missing(cfg, key, origin)
    v = cfg[key]
    if not isinstance(v, int) or v <= 0:
        raise InputError(f"config.{key}", v, "a positive integer")
    return v


def _group(layers: list[Layer]) -> tuple[tuple[Layer, int], ...]:
    """Run-length-free grouping: identical layers share a group (order does not change costs)."""
    counts = Counter(layers)
    seen: list[Layer] = []
    for layer in layers:
        if layer not in seen:
            seen.append(layer)
    return tuple((layer, counts[layer]) for layer in seen)


def _nas_inter(ffn_mult: float, hidden: int) -> int:
    # DeciLM (Nemotron-NAS) modeling code: int(2 * ffn_mult * hidden / 3) rounded up to a multiple of 256
    i = int(2 * ffn_mult * hidden / 3)
    return int(math.ceil(i / 256) * 256)


def _state_bytes(cfg: dict, default: str) -> int:
    """Bytes per recurrent-state value: config mamba_ssm_dtype (FP32 or 16-bit), else `default`."""
    return 4 if str(cfg.get("mamba_ssm_dtype") or default) in ("float32", "fp32") else 2


# activations of non-gated MLPs (2 matrices); SwiGLU-style gated MLPs (silu) have 3
_UNGATED = ("relu2", "relu", "gelu", "gelu_new", "gelu_pytorch_tanh")


def _hybrid_pattern_layers(cfg: dict, pattern: str, L: int, origin: str, attn: GQA) -> tuple[list, list]:
    """Nemotron-H `hybrid_override_pattern`, one character per layer (NemotronHConfig): "M" a Mamba-2
    mixer, "*" self-attention, "-" an MLP, "E" a MoE block; each layer is one of them only."""
    bad = sorted(set(pattern) - set("M*-E"))
    if bad:
        raise UnsupportedModelError("config.hybrid_override_pattern", ",".join(bad),
                                    "characters M (Mamba-2), * (attention), - (MLP) and E (MoE); supported layers: " + ", ".join(SUPPORTED_LAYERS))
    if len(pattern) != L:
        raise InputError("config.hybrid_override_pattern", len(pattern), f"one character per layer ({L})")
    none_a, none_f = NoMixer(), NoFfn()
    gated = str(cfg.get("mlp_hidden_act") or "silu") not in _UNGATED
    mamba = None
    if "M" in pattern:
        P, heads, N = (_req(cfg, k, origin) for k in ("mamba_head_dim", "mamba_num_heads", "ssm_state_size"))
        # Mamba-2's default chunk is 256 (mamba_ssm Mamba2); Nemotron-H sets chunk_size 128
        mamba = Mamba2(heads=heads, groups=int(cfg.get("n_groups") or 1), head_dim=P, state_dim=N, conv_kernel=int(cfg.get("conv_kernel") or 4),
                       state_bytes=_state_bytes(cfg, "bfloat16"), chunk=int(cfg.get("chunk_size") or 256))
    moe = None
    if "E" in pattern:
        E, k, w = (_req(cfg, key, origin) for key in ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size"))
        shared = int(cfg.get("moe_shared_expert_intermediate_size") or 0) or int(cfg.get("n_shared_experts") or 0) * w
        moe = MoE(experts=E, top_k=k, expert_inter=w, shared_inter=shared, gated=gated)
    mlp = DenseFfn(inter=_req(cfg, "intermediate_size", origin), gated=gated) if "-" in pattern else None
    attns = [mamba if c == "M" else attn if c == "*" else none_a for c in pattern]
    ffns = [mlp if c == "-" else moe if c == "E" else none_f for c in pattern]
    return attns, ffns


def precision_from_quant(cfg: dict, quant: dict | None) -> Precision:
    """Default precision of a checkpoint from hf_quant_config.json (modelopt) or quantization_config (spec.quant)."""
    return read_quant(cfg, quant)[0]


def max_context_from_config(cfg: dict, mtype: str = "") -> int:
    """The longest context a config supports, derived as vLLM does (vllm/config/model.py,
    _get_and_verify_max_len): max_position_embeddings, or for RoPE scaling other than su, longrope and
    llama3 (whose max_position_embeddings already counts it) the factor times the base, YaRN's base
    being original_max_position_embeddings. Gemma 3 is left out of the scaling step ("NOTE(woosuk):
    Gemma3's max_model_len (128K) is already scaled by RoPE scaling", `"gemma3" not in
    hf_config.model_type`, same function, vLLM v0.10+). 0 when the config gives none."""
    base = int(cfg.get("max_position_embeddings") or 0)
    rs = cfg.get("rope_scaling") or {}
    if not base or not isinstance(rs, dict) or not rs.get("factor") or "gemma3" in mtype:
        return base
    kind = str(rs.get("rope_type") or rs.get("type") or "")
    if kind in ("su", "longrope", "llama3"):
        return base
    if kind == "yarn" and rs.get("original_max_position_embeddings"):
        base = int(rs["original_max_position_embeddings"])
    return int(base * float(rs["factor"]))


def from_hf_config(cfg: dict, name: str = "custom", quant: dict | None = None,
                   hf_ids: tuple[str, ...] = ()) -> ModelSpec:
    """Normalise a Hugging Face config.json dict (nested text_config allowed) to a ModelSpec."""
    if not isinstance(cfg, dict):
        raise InputError("config", type(cfg).__name__, "a JSON object")
    outer = cfg
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "quantization_config": cfg["text_config"].get("quantization_config") or outer.get("quantization_config")}
    if str(cfg.get("model_type") or outer.get("model_type") or "") in GEMMA3_TYPES:
        cfg = {**GEMMA3_DEFAULTS, **cfg}  # the keys Gemma3TextConfig fills in where the config.json leaves them out
    check_config(cfg, outer)  # every field read below: type, range, relations (spec.validation)
    falcon = _is_falcon(cfg, outer)
    if falcon:
        cfg = _falcon_config(cfg, name)
    if quant is not None:
        check_hf_quant(quant)
    mtype = str(cfg.get("model_type") or outer.get("model_type") or "")
    lt = cfg.get("layer_types")
    known = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")
    if lt and any(t not in known for t in lt):
        bad = sorted({t for t in lt if t not in known})
        raise UnsupportedModelError("config.layer_types", ",".join(bad),
                                    f"{name} has layer types the cost model cannot represent; supported layers: " + ", ".join(SUPPORTED_LAYERS))
    h = _req(cfg, "hidden_size", name)
    L = _req(cfg, "num_hidden_layers", name)
    vocab = _req(cfg, "vocab_size", name)
    _req(cfg, "num_attention_heads", name)
    attns, pattern_ffns = _attention_layers(cfg, mtype, L, name)
    ffns = _ffn_layers(cfg, mtype, L, name, pattern_ffns=pattern_ffns, gated=not falcon)
    if len(attns) != L or len(ffns) != L:
        raise InputError("config.num_hidden_layers", L, f"match the per-layer lists ({len(attns)}, {len(ffns)})")
    tie = bool(outer.get("tie_word_embeddings", cfg.get("tie_word_embeddings", mtype in TIED_BY_DEFAULT)))
    prec, quant_note = read_quant(cfg, quant)
    layers = [Layer(a, f) for a, f in zip(attns, ffns, strict=True)]
    groups = _group(layers)
    index = {layer: i for i, (layer, _) in enumerate(groups)}
    facts = loader_facts(cfg, outer, mtype)
    if quant_note:  # a quantization the tool cannot price, said where the loader's notes are (stderr, the answer's notes)
        facts["notes"] += (Note(quant_note, kind="loader"),)
    return ModelSpec(name=name, hidden=h, vocab=vocab, groups=groups,
                     tie_embeddings=tie, default_precision=prec, hf_ids=hf_ids, **facts,
                     max_context=max_context_from_config(cfg, mtype), layout=tuple(index[layer] for layer in layers),
                     architecture=_architecture(outer), unpriced_quant=quant_note or "",
                     attn_kept_partial=attn_excluded(excluded_modules(cfg, quant))[1])


# the keys a checkpoint's config counts its MTP modules by: DeepSeek-V3/R1/V3.2, GLM and MiMo num_nextn_predict_layers
# (vLLM's SpeculativeConfig.hf_config_override reads it as the MTP draft's n_predict, vllm/config/speculative.py),
# Qwen3.5's mtp_num_hidden_layers, MiniMax-M2.5's num_mtp_modules (the bundled configs, data/models/)
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


# model_types whose decoder is Llama's, read field for field, though no bundled config carries them: transformers'
# MistralConfig is LlamaConfig's fields plus sliding_window (models/mistral/configuration_mistral.py@v4.46; the window read
# by _uniform_attention, a null one none: Mistral-Nemo), MistralForCausalLM its decoder (Mistral-7B, Nemo, Small, Codestral)
LLAMA_LAYOUT_TYPES = ("mistral",)
# model_types read whole by the readers above though no config of them is bundled: DeepSeek-V2 (V2, V2-Lite, V2.5,
# Coder-V2) names MLA and its experts with V3's keys (transformers models/deepseek_v2/configuration_deepseek_v2.py
# DeepseekV2Config: kv_lora_rank, q_lora_rank, None in V2-Lite, qk_rope/qk_nope/v_head_dim, n_routed_experts,
# n_shared_experts, num_experts_per_tok, first_k_dense_replace, moe_layer_freq; newc9 #13), and Gemma 3 (GEMMA3_TYPES)
FIELD_READ_TYPES = ("deepseek_v2",)


@functools.cache
def known_model_types() -> frozenset[str]:
    """The model_types the loader has a bundled config of (data/models/*_config.json, outer and text_config), those
    whose decoder is Llama's (LLAMA_LAYOUT_TYPES) and those its readers take whole (FIELD_READ_TYPES, GEMMA3_TYPES)."""
    out = set(LLAMA_LAYOUT_TYPES) | set(FIELD_READ_TYPES) | set(GEMMA3_TYPES)
    for f in (Path(__file__).resolve().parent.parent / "data" / "models").glob("*_config.json"):
        c = json.loads(f.read_text(encoding="utf-8"))
        out |= {str(d.get("model_type")) for d in (c, c.get("text_config")) if isinstance(d, dict) and d.get("model_type")}
    return frozenset(out)


def loader_facts(cfg: dict, outer: dict, mtype: str) -> dict:
    """What the loader says of a config beside its shape: `notes` (a model_type it has no config of, read as a standard
    decoder from its fields) and `mtp_layers` (the MTP modules it ships, MTP_KEYS; 0 where it names none)."""
    notes = () if not mtype or mtype in known_model_types() or mtype in FALCON_TYPES else (
        Note(f"model_type {mtype} is not one the loader knows; read as a standard decoder from its fields", kind="loader"),)
    unread = unread_layer_keys(cfg)
    if unread:
        notes += (Note(f"config key{'s' * (len(unread) > 1)} {', '.join(unread)} not read: every layer priced as the other "
                       "keys describe it (the kinds those keys set are not)", kind="loader"),)
    n = 0
    for key in MTP_KEYS:
        v = cfg.get(key, outer.get(key))
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(f"config.{key}", v, "a non-negative integer (the MTP modules the checkpoint ships)")
        n = max(n, v)
    return {"notes": notes, "mtp_layers": n}


# config keys that set which layers are of which kind in families no reader here takes, each with the family whose config
# class reads it (transformers): present and not read (no layer_types beside them), each is named in a loader note, never
# priced as uniform layers without a word (newc9 #2)
UNREAD_LAYER_KEYS = {
    "full_attention_interval": "Qwen3-Next: one full-attention layer in n, the rest linear",
    "attn_layer_period": "Jamba: attention every n layers, the rest Mamba", "attn_layer_offset": "Jamba: the first attention layer",
    "expert_layer_period": "Jamba: MoE every n layers", "expert_layer_offset": "Jamba: the first MoE layer",
    "max_window_layers": "Qwen2: the layers from which use_sliding_window applies",
    "sliding_window_pattern": "a local/global pattern string (Exaone 4)",
}


def unread_layer_keys(cfg: dict) -> list[str]:
    """UNREAD_LAYER_KEYS the config sets and the loader does not read, each as "key=value (what it sets)"."""
    if cfg.get("layer_types") or cfg.get("hybrid_override_pattern"):
        return []  # the layers are listed; these keys would only repeat them
    skip = {"sliding_window_pattern": isinstance(cfg.get("sliding_window_pattern"), int),
            "max_window_layers": not cfg.get("use_sliding_window")}
    return [f"{k}={cfg[k]!r} ({what})" for k, what in UNREAD_LAYER_KEYS.items() if cfg.get(k) is not None and not skip.get(k)]


# Falcon's config forms: transformers' FalconConfig (model_type "falcon", FalconForCausalLM) and TII's earlier custom code
# (RWForCausalLM; model_type "RefinedWebModel" for 7B, "RefinedWeb" for 40B), which transformers' conversion script maps onto
# it (src/transformers/models/falcon/convert_custom_code_checkpoint.py@15ea02a2: n_head -> num_attention_heads, n_layer ->
# num_hidden_layers, n_head_kv -> num_kv_heads with new_decoder_architecture true, else false)
FALCON_TYPES = ("falcon", "RefinedWeb", "RefinedWebModel")
FALCON_ARCHS = ("FalconForCausalLM", "RWForCausalLM")
# FalconConfig's defaults for keys a Falcon config.json may leave out (transformers 4.57.1 configuration_falcon.py:162-177)
FALCON_CONTEXT = 2048  # max_position_embeddings: "Pretrained Falcon models with RoPE support up to 2048 tokens"


# model_types whose config class ties the LM head to the embedding unless the config.json says otherwise, as transformers
# 4.57.1 builds them: Gemma2Config (configuration_gemma2.py:136) and CohereConfig (configuration_cohere.py:174) default
# tie_word_embeddings=True, and the released Gemma-2 / Command R(+) config.json files leave the key out
TIED_BY_DEFAULT = ("gemma2", "cohere", "gemma3", "gemma3_text")
# Gemma 3: the text config (model_type gemma3_text, alone or as a multimodal gemma3 config's text_config; the vision tower
# is not priced) and the defaults its config class fills in for keys a released config.json leaves out: transformers
# Gemma3TextConfig.__init__ (models/gemma3/configuration_gemma3.py@d98ac17c, v4.50): vocab_size 262_208, hidden 2304,
# intermediate 9216, 26 layers, 8 heads, 4 KV heads, head_dim 256, max_position_embeddings 131_072, sliding_window 4096,
# sliding_window_pattern 6 (_window_pattern), tie_word_embeddings True (TIED_BY_DEFAULT)
GEMMA3_TYPES = ("gemma3", "gemma3_text")
GEMMA3_DEFAULTS = {"vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                   "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
                   "sliding_window": 4096, "sliding_window_pattern": 6}


def _is_falcon(cfg: dict, outer: dict) -> bool:
    mtype = str(cfg.get("model_type") or outer.get("model_type") or "")
    return mtype in FALCON_TYPES or _architecture(outer) in FALCON_ARCHS


def _falcon_config(cfg: dict, origin: str) -> dict:
    """A Falcon config as the keys the normaliser reads, mapped as transformers 4.57.1 builds the model
    (models/falcon/modeling_falcon.py): query_key_value holds (2 num_kv_heads + heads) head_dim outputs with
    new_decoder_architecture (Falcon-40B/180B's grouped KV, :216-217), hidden + 2 head_dim with multi_query (Falcon-7B's
    one KV head, :218-219), else 3 hidden (MHA, :220-221); head_dim = hidden // heads (:193, refused unless it divides,
    :207); the MLP is dense_h_to_4h, GELU, dense_4h_to_h (:534-536: two matrices, not gated) of ffn_hidden_size, 4 x
    hidden unless set (configuration_falcon.py:195-198); the LM head is tied to the embedding (FalconForCausalLM
    _tied_weights_keys, :993, and PretrainedConfig's tie_word_embeddings default True, configuration_utils.py:220).
    parallel_attn and ALiBi add no weights (layer norms and biases are not counted), so they are not read."""
    out = {k: v for k, v in cfg.items() if k not in ("num_key_value_heads", "intermediate_size", "head_dim")}
    for new, old in (("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"), ("hidden_size", "n_embed"),
                     ("num_kv_heads", "n_head_kv")):
        if cfg.get(new) is not None and cfg.get(old) is not None and cfg[new] != cfg[old]:
            raise InputError(f"config.{old}", cfg[old], f"equal to {new} ({cfg[new]}) where a Falcon config sets both")
        if cfg.get(new) is None and cfg.get(old) is not None:
            out[new] = cfg[old]
    for key, rw in (("hidden_size", "n_embed"), ("num_hidden_layers", "n_layer"), ("num_attention_heads", "n_head"), ("vocab_size", "")):
        if out.get(key) is None:
            raise _missing(cfg, key, origin, "a positive integer" + (f" (or {rw}, a Falcon config's name of it)" if rw else ""))
    h, H = out["hidden_size"], out["num_attention_heads"]
    if h % H:
        raise InputError("config.hidden_size", h, f"a multiple of num_attention_heads ({H}): Falcon's head size is hidden_size // heads")
    # custom code's 40B form has n_head_kv and no new_decoder_architecture key: it is the new decoder (conversion script)
    new_decoder = bool(cfg.get("new_decoder_architecture")) or cfg.get("n_head_kv") is not None
    multi_query = cfg.get("multi_query", True)  # FalconConfig's default
    kv = (out.get("num_kv_heads") or H) if new_decoder else 1 if multi_query else H
    if kv > H or H % kv:
        raise InputError("config.num_kv_heads" if cfg.get("num_kv_heads") is not None else "config.n_head_kv", kv,
                         f"a divisor of num_attention_heads ({H}): each KV head serves a whole group of query heads")
    if not cfg.get("max_position_embeddings"):
        # FalconConfig's __init__ default, whatever `alibi` is (the ALiBi path keeps the same 2048 field)
        out["max_position_embeddings"] = FALCON_CONTEXT
    if out.get("tie_word_embeddings") is None:
        out["tie_word_embeddings"] = True  # FalconForCausalLM ties its head (PretrainedConfig's default)
    return out | {"num_key_value_heads": kv, "intermediate_size": cfg.get("ffn_hidden_size") or 4 * h, "head_dim": h // H}


def _architecture(cfg: dict) -> str:
    arch = cfg.get("architectures") or []  # a list of strings (check_config)
    return arch[0] if arch else ""


def _gqa_of(cfg: dict):
    """GQA attention as one config builds it: (window, heads, KV heads, head dim, K = V) defaulting
    to the config's heads, KV heads and head dim, with its cross-head QK norm and output gate."""
    H = cfg["num_attention_heads"]
    kv, head_dim = cfg.get("num_key_value_heads") or H, cfg.get("head_dim") or cfg["hidden_size"] // H
    qk_across = bool(cfg.get("use_qk_norm")) and cfg.get("qk_norm_type") == "per_layer"
    gate = bool(cfg.get("attn_output_gate"))

    def gqa(window=0, heads=H, kvh=kv, hd=head_dim, k_eq_v=False):
        return GQA(heads=heads, kv_heads=kvh, head_dim=hd, v_head_dim=hd, window=window, k_eq_v=k_eq_v, qk_norm_across_heads=qk_across,
                   out_gate=gate)
    return gqa, kv, head_dim


def _attention_layers(cfg: dict, mtype: str, L: int, origin: str) -> tuple[list, list | None]:
    """Each layer's mixer, by how the family describes it: NemotronH's hybrid pattern (which sets
    the FFNs too: the second item, else None), MLA (DeepSeek), per-layer types (gpt-oss, Gemma,
    Qwen3.5), Nemotron-NAS blocks, or one GQA for every layer (Llama 4's chunked layers)."""
    gqa, kv, head_dim = _gqa_of(cfg)
    H = cfg["num_attention_heads"]
    pattern = str(cfg.get("hybrid_override_pattern") or "")
    if pattern:
        return _hybrid_pattern_layers(cfg, pattern, L, origin, gqa(hd=int(cfg.get("attention_head_dim") or head_dim)))
    if cfg.get("kv_lora_rank"):
        rope, nope = int(cfg.get("qk_rope_head_dim") or 64), int(cfg.get("qk_nope_head_dim") or 128)
        mla = dict(heads=H, v_head_dim=int(cfg.get("v_head_dim") or nope), q_lora_rank=int(cfg.get("q_lora_rank") or 0),
                   kv_lora_rank=int(cfg["kv_lora_rank"]), rope_dim=rope, nope_dim=nope)
        if cfg.get("index_topk"):  # DeepSeek-V3.2's sparse attention
            return [DSA(**mla, index_heads=int(cfg.get("index_n_heads") or 0), index_head_dim=int(cfg.get("index_head_dim") or 0),
                        index_topk=int(cfg["index_topk"]))] * L, None
        return [MLA(**mla)] * L, None
    every = _window_pattern(cfg, mtype)
    if every and not cfg.get("layer_types") and cfg.get("sliding_window"):
        cfg = {**cfg, "layer_types": ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(L)]}
    if cfg.get("layer_types"):
        return _typed_attention(cfg, mtype, L, origin), None
    if cfg.get("block_configs"):
        attns = []
        for b in cfg["block_configs"]:
            a = b.get("attention", {})
            if a.get("no_op"):
                attns.append(NoMixer())
            elif a.get("replace_with_linear"):
                attns.append(LinearMixer())
            else:
                attns.append(gqa(int(a.get("window_length") or 0), H, H // int(a["n_heads_in_group"])))
        return attns, None
    return _uniform_attention(cfg, mtype, L), None


def _window_pattern(cfg: dict, mtype: str) -> int:
    """Every how many layers one is global where a config windows the others and gives no layer_types; 0: none.

    Gemma 2 alternates: Gemma2Config's layer_types default, sliding where (i + 1) % 2 (layer 0 sliding, layer 1 global;
    transformers 4.57.1 configuration_gemma2.py:175-178, modeling_gemma2.py:229), which the configs released before
    layer_types existed (transformers 4.42) leave out. Gemma 3 (and Cohere2) say it as `sliding_window_pattern`: layer i
    is global where (i + 1) % pattern == 0 (transformers v4.50 modeling_gemma3.py Gemma3Attention: is_sliding =
    bool((layer_idx + 1) % config.sliding_window_pattern)@d98ac17c; the later layer_types form derives its default from
    the same key, "BC -> the pattern used to be a simple int, and it's still present in configs on the Hub"). Every
    layer windowed would understate the KV of the global layers (newc9 #2: 4.16 GB for gemma-3-27b's 9.03)."""
    v = cfg.get("sliding_window_pattern")  # an int from 1 or a string (spec.validation.check_config)
    if isinstance(v, int):
        return v
    return 2 if mtype == "gemma2" else 0  # a string pattern (Exaone 4's) is not read: said by loader_facts


def _typed_attention(cfg: dict, mtype: str, L: int, origin: str) -> list:
    """Per-layer `layer_types`: sliding-window and full GQA (Gemma 4's full layers with their own
    KV heads and head dim, K = V), Gated DeltaNet for linear attention."""
    gqa, kv, head_dim = _gqa_of(cfg)
    lt = cfg["layer_types"]
    win = int(cfg.get("sliding_window") or 0)
    if mtype.startswith("gemma4"):
        # Gemma 4 full-attention layers use global_head_dim and num_global_key_value_heads with K=V
        glob = gqa(0, cfg["num_attention_heads"], int(cfg.get("num_global_key_value_heads") or kv),
                   int(cfg.get("global_head_dim") or head_dim), bool(cfg.get("attention_k_eq_v")))
    else:
        glob = gqa(0)
    lin = None
    if "linear_attention" in lt:
        need = ("linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim")
        nv, nk, dk, dv, ck = (_req(cfg, k, origin) for k in need)
        default = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
        lin = GatedDeltaNet(heads=nv, kv_heads=nk, head_dim=dk, v_head_dim=dv, conv_kernel=ck, state_bytes=_state_bytes(cfg, default),
                            chunk=GDN_CHUNK)
    attns = [gqa(win) if t == "sliding_attention" else lin if t == "linear_attention" else glob for t in lt]
    if len(attns) != L:
        raise InputError("config.layer_types", len(attns), f"one entry per layer ({L})")
    return attns


def _uniform_attention(cfg: dict, mtype: str, L: int) -> list:
    """One GQA for every layer (its sliding window where the config uses one); Llama 4's RoPE
    layers attend within chunks."""
    gqa = _gqa_of(cfg)[0]
    win = int(cfg.get("sliding_window") or 0) if cfg.get("use_sliding_window", True) else 0
    if mtype in ("qwen3", "qwen3_moe", "qwen2", "qwen2_moe") and not cfg.get("use_sliding_window"):
        win = 0  # Qwen configs carry sliding_window but use_sliding_window is false
    attns = [gqa(win)] * L
    chunk = int(cfg.get("attention_chunk_size") or 0)
    if mtype.startswith("llama4") and chunk:
        # Llama 4: RoPE layers attend within chunks, every nope_layer_interval-th layer (NoPE) attends
        # globally (HF Llama4TextConfig no_rope_layers: 1 = RoPE, default (i + 1) % 4 != 0; vLLM
        # llama4.py uses chunked local attention where the layer is not NoPE)
        every = int(cfg.get("nope_layer_interval") or 4)
        rope = cfg.get("no_rope_layers") or [int((i + 1) % every != 0) for i in range(L)]
        if len(rope) != L:
            raise InputError("config.no_rope_layers", len(rope), f"one entry per layer ({L})")
        attns = [replace(a, attn_chunk=chunk) if r else a for a, r in zip(attns, rope, strict=True)]
    return attns


def _ffn_layers(cfg: dict, mtype: str, L: int, name: str, *, pattern_ffns: list | None, gated: bool = True) -> list:
    """Each layer's FFN: the hybrid pattern's, Nemotron-NAS blocks' (widths from ffn_mult), routed
    experts where the config has them (_moe_layers), else one dense MLP for every layer (`gated`: SwiGLU's three
    matrices; False for Falcon's GELU MLP, two)."""
    E = cfg.get("n_routed_experts") or cfg.get("num_local_experts") or cfg.get("num_experts") or 0
    topk = cfg.get("num_experts_per_tok") or cfg.get("top_k_experts") or cfg.get("moe_topk") or 0
    inter = cfg.get("intermediate_size")
    if E and not topk:
        raise InputError("config.num_experts_per_tok", None, f"{name} has {E} experts; set the experts per token")
    if pattern_ffns is not None:
        return pattern_ffns
    if cfg.get("block_configs"):
        ffns = []
        for b in cfg["block_configs"]:
            f = b.get("ffn", {})
            if f.get("no_op"):
                ffns.append(NoFfn())
            elif f.get("replace_with_linear"):
                ffns.append(LinearFfn())
            else:
                ffns.append(DenseFfn(inter=_nas_inter(float(f["ffn_mult"]), cfg["hidden_size"])))
        return ffns
    if E:
        return _moe_layers(cfg, mtype, L, name, experts=(E, topk))
    if inter is None:
        raise _missing(cfg, "intermediate_size", name)
    if not inter:
        raise InputError("config.intermediate_size", inter, "a positive integer")
    return [DenseFfn(inter=int(inter), gated=gated)] * L


def _moe_layers(cfg: dict, mtype: str, L: int, name: str, *, experts: tuple[int, int]) -> list:
    """Routed-expert FFNs (`experts`: routed, per token) and the dense layers among them: Llama 4's
    interleave step, DeepSeek's first dense layers and layer frequency, Qwen's sparse step and
    MLP-only layers; shared experts, or Gemma 4's dense MLP beside the experts."""
    inter = cfg.get("intermediate_size")
    if mtype.startswith("llama4"):
        e_inter, dense_inter, shared = inter, cfg.get("intermediate_size_mlp") or inter, inter
        step = int(cfg.get("interleave_moe_layer_step") or 1)
        is_moe = [(i + 1) % step == 0 for i in range(L)]
    else:
        e_inter = cfg.get("moe_intermediate_size") or inter
        dense_inter = inter
        n_shared = cfg.get("n_shared_experts") or cfg.get("num_shared_experts") or 0
        shared = n_shared * e_inter if n_shared else int(cfg.get("shared_expert_intermediate_size") or 0)
        if mtype.startswith("gemma4") and cfg.get("enable_moe_block"):
            shared = inter  # Gemma 4: a dense MLP runs beside the routed experts in every layer
        first_dense = int(cfg.get("first_k_dense_replace") or 0)
        freq = int(cfg.get("moe_layer_freq") or cfg.get("decoder_sparse_step") or 1)
        mlp_only = set(cfg.get("mlp_only_layers") or [])
        is_moe = [i >= first_dense and i % freq == 0 and i not in mlp_only for i in range(L)]
        if freq > 1 and "decoder_sparse_step" in cfg:  # Qwen: (i + 1) % step == 0
            is_moe = [(i + 1) % freq == 0 and i not in mlp_only for i in range(L)]
    if not e_inter:
        raise InputError("config.moe_intermediate_size", None, f"{name}: the expert width is required")
    # gpt-oss's clamped SwiGLU: its config's swiglu_limit (transformers GptOssConfig), the activation AITER's fused MoE
    # runs on its own path (cost.ffns.aiter_quantised_activation)
    act = "swiglu_clamped" if cfg.get("swiglu_limit") else "silu"
    moe = MoE(experts=int(experts[0]), top_k=int(experts[1]), expert_inter=int(e_inter), shared_inter=int(shared), activation=act)
    if not dense_inter and not all(is_moe):
        raise InputError("config.intermediate_size", None, f"{name}: the width of its {is_moe.count(False)} dense layers is required")
    return [moe if m else DenseFfn(inter=int(dense_inter)) for m in is_moe]


def pasted_name(cfg) -> str:
    """The name of a config given as its contents (a dict, the page's paste): the last part of its `_name_or_path`
    (transformers writes the id or folder it was saved from), else "custom"."""
    v = cfg.get("_name_or_path") if isinstance(cfg, dict) else None
    return (v.strip().rstrip("/\\").replace("\\", "/").split("/")[-1] or "custom") if isinstance(v, str) and v.strip() else "custom"


def load_config_file(path: str | Path, name: str | None = None) -> ModelSpec:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise InputError("model", str(path), "an existing config.json path (no such file), a registry name (see `llm-codesign "
                                              "models`) or a Hugging Face id")
    try:
        cfg = parse_nested(json.loads, p.read_text(encoding="utf-8-sig"), "model", str(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError("model", str(path), f"a valid JSON config ({e.__class__.__name__}: {e})") from None
    quant = None
    qp = p.with_name(p.name.replace("config.json", "hf_quant_config.json"))
    if qp != p and qp.is_file():
        try:
            quant = parse_nested(json.loads, qp.read_text(encoding="utf-8-sig"), "model", str(qp))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError("model", str(qp), f"a valid JSON quantization config ({e.__class__.__name__}: {e})") from None
    # a checkpoint's config.json is named by its folder (my-model/config.json: my-model), another file by its own name;
    # the folder is where an engine loads it from (export's --model-path), a bare my-model.json names none. Resolved: the
    # launch file and its import run from other directories than the one the config was read in
    folder = str(p.resolve().parent) if p.stem == "config" else None
    return from_hf_config(cfg, name or (p.resolve().parent.name or p.stem if p.stem == "config" else p.stem), quant,
                          hf_ids=(folder,) if folder else ())
