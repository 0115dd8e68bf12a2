"""A checkpoint's own number formats, read from its quantization config as the engines' loaders read it.

Each `quant_method` of a config.json's `quantization_config` (and NVIDIA ModelOpt's hf_quant_config.json) maps to the
tool's weight / activation / KV formats (spec.precision) the way vLLM's loader for it builds the layers
(vllm/model_executor/layers/quantization/*). A method, or a variant of one, that no format here prices is said in
one note (`read_quant`'s second value), never read as BF16 without a word (newc8 #2).
"""
from __future__ import annotations

from dataclasses import replace

from llm_codesign.spec.precision import Precision, get_dtype, int_grouped

# the quant_method values read here, as the note on any other one lists them
READ_METHODS = ("fp8", "fbgemm_fp8", "mxfp4", "compressed-tensors", "awq", "gptq", "quark", "modelopt")


def _d(v) -> dict:
    return v if isinstance(v, dict) else {}


def _names(v) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def attn_excluded(names: list[str]) -> tuple[bool, tuple[str, ...]]:
    """(whether a module list leaves the whole attention unquantized, the projections it leaves where only some): a name
    ending at self_attn or a wildcard after it (Meta's FP8 Maverick "layers.*.self_attn", Quark's "*self_attn*"), or one
    naming o_proj, is the whole; nvidia/DeepSeek-R1-NVFP4's exclude_modules names q_a_proj, q_b_proj, kv_a_proj_with_mqa
    and kv_b_proj of every layer, not o_proj (data/models/nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json): a part."""
    projs = set()
    for n in names:
        _, sep, tail = n.partition("self_attn")
        tail = tail.lstrip(".")
        if sep and (not tail or tail[0] in "*.$"):
            return True, ()
        if sep:
            projs.add(tail.split(".")[0].rstrip("*"))
    return (True, ()) if "o_proj" in projs else (False, tuple(sorted(projs)))


# the attention's input projections as checkpoints name them: MLA's with a query LoRA (DeepSeek-V3/R1), MLA's without
# (DeepSeek-V2-Lite), GQA's apart and fused (HF LlamaAttention, Phi-3's qkv_proj): a part naming every one of a layout
_INPUT_PROJS = ({"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}, {"q_proj", "kv_a_proj_with_mqa", "kv_b_proj"},
                {"q_proj", "k_proj", "v_proj"}, {"qkv_proj"})


def input_projs_kept(part: tuple[str, ...]) -> bool:
    """Whether an attention part left unquantized (attn_excluded's second value) is all of the input projections of one
    layout (_INPUT_PROJS), priced BF16 beside an o_proj at the linear format; a smaller part stays at it, said."""
    return any(layout <= set(part) for layout in _INPUT_PROJS)


def _attn_kept(names: list[str], p: Precision) -> Precision:
    """`p` with BF16 attention projections where the checkpoint leaves them unquantized (attn_excluded; modelopt
    exclude_modules, compressed-tensors ignore, fbgemm/mxfp4 modules_to_not_convert, Quark exclude), as each loader skips
    the layers it names (vLLM is_layer_skipped / should_ignore_layer; TensorRT-LLM's DecoderModelForCausalLM.__post_init__
    gives each module is_module_excluded_from_quantization names a QuantConfig with no quant_algo, an unquantized BF16
    Linear, tensorrt_llm/_torch/models/modeling_utils.py@000a01de "2. skip quant for modules in
    QuantConfig.exclude_modules"): the whole attention (attn_weight), or its input projections alone where the part names
    all of them (attn_in_weight: nvidia/DeepSeek-R1-NVFP4's q_a/q_b/kv_a/kv_b BF16, o_proj NVFP4). A smaller part is
    priced at the linear format, said by spec.plan.partial_attn_note."""
    whole, part = attn_excluded(names)
    if whole:
        return replace(p, attn_weight=get_dtype("bf16"))
    return replace(p, attn_in_weight=get_dtype("bf16")) if input_projs_kept(part) else p


def excluded_modules(cfg: dict, quant: dict | None) -> list[str]:
    """The module names a checkpoint leaves unquantized, from whichever list its reader reads (_attn_kept's)."""
    if quant and isinstance(quant.get("quantization"), dict):
        return _names(quant["quantization"].get("exclude_modules"))
    qc = _d(cfg.get("quantization_config"))
    q = _d(qc.get("quantization")) or qc
    return [n for k in ("exclude_modules", "ignore", "modules_to_not_convert", "exclude") for n in _names(q.get(k))]


def _modelopt(q: dict) -> tuple[Precision | None, str]:
    """ModelOpt (hf_quant_config.json's `quantization`, or a config.json's quantization_config with quant_method
    "modelopt", flat): quant_algo FP8 is per-tensor W8A8, NVFP4 W4A4 with one FP8 scale per 16 values, W4A8_AWQ INT4
    weights, MXFP4; kv_cache_quant_algo FP8 an FP8 cache (vLLM modelopt.py ModelOptFp8Config / ModelOptNvFp4Config
    .from_config read quant_algo, kv_cache_quant_algo and exclude_modules from either form@04843c7c; TensorRT-LLM's
    reader: tensorrt_llm/_torch/model_config.py ModelConfig.load_modelopt_quant_config)."""
    algo = str(q.get("quant_algo") or "").upper()
    # INT8 (TensorRT-LLM's QuantAlgo, tensorrt_llm/quantization/mode.py): W8A8_SQ_* SmoothQuant, per-channel INT8 weights on
    # INT8 activations; W8A16 / W8A16_GPTQ INT8 weight-only on BF16 activations
    int8 = "int8" if algo.startswith("W8A8_SQ") else "bf16" if algo in ("W8A16", "W8A16_GPTQ") else None
    w = "int8" if int8 else {"NVFP4": "nvfp4", "FP8": "fp8", "W4A8_AWQ": "int4", "MXFP4": "mxfp4"}.get(algo)
    if w is None:
        return None, f"modelopt quant_algo {algo or 'missing'}"
    kv = "fp8" if str(q.get("kv_cache_quant_algo") or "").upper() == "FP8" else None
    return _attn_kept(_names(q.get("exclude_modules")), Precision.of(w, activation=int8, kv=kv)), ""


def _ct_format(w: dict, a: dict | None) -> str | None:
    """A compressed-tensors group's weight format, as vLLM's CompressedTensorsConfig picks its scheme
    (compressed_tensors.py _is_fp8_w8a8 / _is_fp8_w8a16 / _is_fp4a4_nvfp4 / _is_fp4a16_nvfp4 / _is_wNa16_group_channel
    @be696453), on the presets llm-compressor writes (compressed-tensors quant_scheme.py PRESET_SCHEMES@0bb1251a):
    float 8 bits per tensor or channel is FP8 (FP8, FP8_DYNAMIC), per 128 x 128 block FP8 blocks (FP8_BLOCK), float 4
    bits in groups of 16 NVFP4, of 32 MXFP4, int 4 bits weight-only INT4 (W4A16), int 8 bits INT8 on int 8-bit input
    activations (W8A8, _is_static/dynamic_tensor_w8a8: CompressedTensorsW8A8Int8, the INT8_W8A8 preset) or none
    (W8A16: CompressedTensorsWNA16, WNA16_SUPPORTED_BITS 4 and 8); anything else (MXFP8's groups of 32, W4A8) none here."""
    kind, bits, group = str(w.get("type") or "int"), w.get("num_bits"), w.get("group_size")
    strategy = str(w.get("strategy") or "tensor")
    if kind == "float" and bits == 8:
        return {"tensor": "fp8", "channel": "fp8", "block": "fp8_block"}.get(strategy)
    if kind == "float" and bits == 4:
        return {16: "nvfp4", 32: "mxfp4"}.get(group)
    if kind == "int" and bits == 4 and a is None:
        return "int4"
    if kind == "int" and bits == 8 and (a is None or (str(a.get("type") or "int") == "int" and a.get("num_bits") == 8)):
        return "int8"
    return None


def _compressed_tensors(qc: dict) -> tuple[Precision | None, str]:
    """compressed-tensors (llm-compressor: RedHatAI / neuralmagic FP8 and NVFP4, Kimi-K2.5's INT4): the Linear
    group's weights and input activations (none: weight-only, BF16 activations), its kv_cache_scheme (float 8 bits:
    an FP8 cache, vLLM compressed_tensors.py get_cache_scale / CompressedTensorsKVCacheMethod) and ignore list."""
    groups = [_d(g) for g in _d(qc.get("config_groups")).values()]
    g = next((g for g in groups if "Linear" in _names(g.get("targets"))), groups[0] if groups else {})
    w, a = _d(g.get("weights")), g.get("input_activations")
    a = _d(a) if isinstance(a, dict) else None
    fmt = _ct_format(w, a)
    if fmt is None:
        return None, (f"compressed-tensors weights {w.get('type', 'int')} {w.get('num_bits')} bits"
                      + (f" (group {w['group_size']})" if w.get("group_size") else ""))
    act = None if fmt == "int4" or a is None else fmt
    kv = "fp8" if _d(qc.get("kv_cache_scheme")).get("num_bits") == 8 else None
    p = Precision.of(fmt, activation=act or "bf16", kv=kv)
    if fmt == "int8" and w.get("strategy") == "group":  # W8A16 in groups: a 16-bit scale (and zero point) a group
        p = replace(p, weight=int_grouped(8, w.get("group_size") or 128, 0 if w.get("symmetric", True) else 8))
    if fmt == "int4":  # its groups (strategy channel: one scale a row) and, asymmetric, a packed 4-bit zero point a group
        # (vLLM compressed_tensors_wNa16.py CompressedTensorsWNA16.create_weights: weight_zero_point [N/8, K/g] int32 where
        # not symmetric); Kimi-K2.5's symmetric groups of 32: 4 + 16/32 = 4.5 bits, as before
        group = -1 if w.get("strategy") == "channel" else w.get("group_size") or 32
        p = replace(p, weight=int_grouped(4, group, 0 if w.get("symmetric", True) else 4))
    return _attn_kept(_names(qc.get("ignore")), p), ""


def _weight_only_int(qc: dict, method: str) -> tuple[Precision | None, str]:
    """AWQ and GPTQ: weight-only INT (`bits`, `w_bit` in older AWQ configs), activations BF16/FP16, every linear layer
    quantized unless modules_to_not_convert names it: 4 bits is W4A16 (vLLM awq.py AWQConfig / gptq.py GPTQConfig
    .from_config, their Marlin forms awq_marlin.py / gptq_marlin.py, W4A16 GEMMs@04843c7c), GPTQ's 8 bits W8A16; 2 and 3
    bits (and AWQ's 8) no format here. Its bytes from its groups (int_grouped): group_size (q_group_size in older AWQ configs; 128, AutoAWQ's and
    AutoGPTQ's default, where absent), a 16-bit scale a group, and a 4-bit zero point a group where the kernel reads one:
    AWQ's (zero_point, on in every AutoAWQ config: awq_marlin keeps qzeros as Marlin zero points) and an asymmetric
    GPTQ's (sym false: the GPTQ kernel reads qzeros); a symmetric GPTQ's Marlin form reads none (zero_points=False,
    gptq_marlin.py@00161ce0). On ROCm a symmetric GPTQ runs gptq.py's kernel, which reads its qzeros too: 4/128 = 0.03
    bits, not priced."""
    bits = qc.get("bits", qc.get("w_bit"))
    if bits != 4 and not (bits == 8 and method == "gptq"):  # AWQ is 4-bit only (awq.py AWQConfig: "only 4-bit")
        return None, f"{method} {bits} bits"
    group = qc.get("group_size", qc.get("q_group_size"))
    zero = qc.get("zero_point", True) if method == "awq" else qc.get("sym", True) is False
    # GPTQ 8 bits: Marlin's uint8b128 (gptq_marlin.py TYPE_MAP), INT8 weights on BF16 activations (W8A16), its zero point 8 bits
    p = replace(Precision.of(f"int{bits}", activation="bf16"),
                weight=int_grouped(bits, 128 if group is None else group, bits if zero else 0))
    return _attn_kept(_names(qc.get("modules_to_not_convert")), p), ""


def _quark(qc: dict) -> tuple[Precision | None, str]:
    """AMD Quark (amd/*-FP8-KV, the MXFP4 previews): global_quant_config's weight and input_tensors dtypes, fp8_e4m3
    FP8 (per tensor), fp4 MXFP4 (OCP MX, 32 values a scale), int4/uint4 weight-only INT4; export.kv_cache_group
    naming the K and V projections an FP8 cache (vLLM quark.py QuarkConfig.from_config reads kv_cache_group and
    layer_quant_config's output_tensors for it; _is_fp8_w8a8 / _is_ocp_mx pick the schemes)."""
    gq = _d(qc.get("global_quant_config"))
    wd, ad = str(_d(gq.get("weight")).get("dtype") or ""), str(_d(gq.get("input_tensors")).get("dtype") or "")
    fmt = {"fp8_e4m3": "fp8", "fp4": "mxfp4", "int4": "int4", "uint4": "int4"}.get(wd)
    if fmt is None:
        return None, f"quark weight dtype {wd or 'missing'}"
    # the activations run in the weights' format where input_tensors names it (W8A8, W4A4), else BF16 (weight-only)
    act = fmt if (fmt, ad) in (("fp8", "fp8_e4m3"), ("mxfp4", "fp4")) else "bf16"
    kv = "fp8" if _names(_d(qc.get("export")).get("kv_cache_group")) else None
    return _attn_kept(_names(qc.get("exclude")), Precision.of(fmt, activation=act, kv=kv)), ""


def _fp8(qc: dict) -> tuple[Precision | None, str]:
    """quant_method fp8 (DeepSeek-V3/R1, Qwen3-*-FP8, MiniMax): 128 x 128 weight blocks where weight_block_size says
    so, else per-tensor; W8A8 (vLLM fp8.py Fp8Config.from_config: weight_block_size, activation_scheme)."""
    p = Precision.of("fp8_block" if qc.get("weight_block_size") else "fp8")
    return _attn_kept(_names(qc.get("modules_to_not_convert")), p), ""


def _fbgemm_fp8(qc: dict) -> tuple[Precision | None, str]:
    """fbgemm_fp8 (Meta's Llama-3.1-405B / Llama-4-Maverick FP8): per-channel FP8 weights, activations quantized per
    token as they run (W8A8), the modules_to_not_convert in BF16 (vLLM fbgemm_fp8.py FBGEMMFp8Config.from_config,
    FBGEMMFp8LinearMethod's Fp8LinearOp(use_per_token_if_dynamic=True)@04843c7c)."""
    return _attn_kept(_names(qc.get("modules_to_not_convert")), Precision.of("fp8")), ""


def _mxfp4(qc: dict) -> tuple[Precision | None, str]:
    """gpt-oss: MXFP4 experts on BF16 activations, attention in BF16 (modules_to_not_convert)."""
    return replace(Precision.of("mxfp4", activation="bf16"), attn_weight=get_dtype("bf16")), ""


READERS = {"fp8": _fp8, "fbgemm_fp8": _fbgemm_fp8, "mxfp4": _mxfp4, "compressed-tensors": _compressed_tensors,
           "awq": lambda qc: _weight_only_int(qc, "awq"), "gptq": lambda qc: _weight_only_int(qc, "gptq"), "quark": _quark,
           "modelopt": lambda qc: _modelopt(_d(qc.get("quantization")) or qc)}
assert tuple(READERS) == READ_METHODS


def read_quant(cfg: dict, quant: dict | None) -> tuple[Precision, str | None]:
    """(the checkpoint's default precision, a note or None): from hf_quant_config.json (ModelOpt) where given, else
    the config.json's quantization_config. A method or variant no format here prices is read as BF16 and said in the
    note, with the formats that are read."""
    if quant and isinstance(quant.get("quantization"), dict):
        p, why = _modelopt(quant["quantization"])
    else:
        qc = _d(cfg.get("quantization_config"))
        method = str(qc.get("quant_method") or "").strip().lower()
        if not method:
            return Precision.of("bf16"), None
        reader = READERS.get(method)
        p, why = reader(qc) if reader else (None, f"quant_method {method}")
    if p is not None:
        return p, None
    qc = _d(quant.get("quantization")) if quant else _d(cfg.get("quantization_config"))
    return Precision.of("bf16"), (f"the checkpoint's quantization ({why}) is not a format the tool prices (quant_method "
                                  f"{', '.join(READ_METHODS)} are read): priced as BF16 weights; {_bytes_advice(qc)}")


def _bytes_advice(qc: dict) -> str:
    """How to price an unread format's bytes, by its weight bits (GPTQ/AWQ bits, HQQ nbits, bitsandbytes load_in_8bit /
    load_in_4bit, a compressed-tensors group's num_bits): 8 bits as int8, on BF16 activations where the format is
    weight-only (GPTQ/AWQ/HQQ bits, a group with no input_activations: W8A16); 4 bits as int4 (W4A16); newc9 #8."""
    groups = [_d(g) for g in _d(qc.get("config_groups")).values()]
    own = qc.get("bits", qc.get("w_bit", qc.get("nbits")))
    bits = own or next((_d(g.get("weights")).get("num_bits") for g in groups if _d(g.get("weights"))), None)
    bits = bits or (8 if qc.get("load_in_8bit") else 4 if qc.get("load_in_4bit") else None)
    weight_only = own is not None or any(_d(g.get("weights")) and not g.get("input_activations") for g in groups)
    if bits == 8 and weight_only:
        return "--weight-dtype int8 --activation-dtype bf16 prices its bytes (INT8 weights on BF16 activations, W8A16)"
    if bits == 8:
        return "--weight-dtype int8 prices its bytes (W8A8 INT8)"
    if bits == 4:
        return "--weight-dtype int4 prices its bytes (4-bit weights on BF16 activations)"
    return "give --weight-dtype for its bytes"
