"""The edge checks: every value read from a user's config.json, GPU TOML, calibration profile,
measurement CSV or command line passes here before the core sees it, and every result before it is
printed. A bad value is one InputError naming the field, the value and what is valid.

Numbers: booleans are never numbers, integers must be integers, everything finite and in a stated
range. config.json fields follow CONFIG_FIELDS (a test checks it lists every field the normaliser
in spec/model.py reads); relations between fields (query heads divisible by KV heads, top-k within
the experts) follow in `check_config`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from llm_codesign.errors import InputError

# generous ceilings: far beyond any real model or GPU, low enough that no product overflows
WIDTH = 1 << 20  # hidden sizes, FFN widths, head dims, LoRA ranks
LAYERS = 1 << 14
HEADS = 1 << 14
EXPERTS = 1 << 16
TOKENS = 1 << 31  # windows, top-k of sparse attention


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_int(field: str, v, *, lo: int = 1, hi: int = 1 << 62, what: str = "") -> int:
    """An integer (a numpy one too) in [lo, hi] (a float with a fractional part, a string or a boolean is refused)."""
    v = int(v) if isinstance(v, np.integer) else v  # said as a plain number, not np.int64(...)
    if not (isinstance(v, int) and not isinstance(v, bool)) or not lo <= v <= hi:
        raise InputError(field, v, what or f"an integer from {lo:,} to {hi:,}")
    return int(v)


def as_float(field: str, v, *, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False, what: str = "") -> float:
    """A finite number in [lo, hi] ((lo, hi] when lo_open); never a boolean, string, NaN or infinity."""
    v = float(v) if isinstance(v, np.floating) else v  # a numpy float is a number, said as a plain one (as as_int's)
    ok = _is_number(v) and math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi
    if not ok:
        raise InputError(field, v, what or f"a finite number {'above' if lo_open else 'from'} {lo:g}{'' if hi == math.inf else f' to {hi:g}'}")
    return float(v)


def as_str(field: str, v, *, choices: Iterable[str] | None = None) -> str:
    if not isinstance(v, str) or (choices is not None and v not in choices):
        raise InputError(field, v, "one of: " + ", ".join(choices) if choices is not None else "a string")
    return v


def as_bool(field: str, v) -> bool:
    if not isinstance(v, bool):
        raise InputError(field, v, "true or false")
    return v


def str_list(field: str, v, *, choices: Iterable[str] | None = None) -> list[str]:
    if not isinstance(v, list):
        raise InputError(field, v, "a list of strings")
    return [as_str(f"{field}[{i}]", x, choices=choices) for i, x in enumerate(v)]


# ---------------------------------------------------------------------------------------------
# config.json (Hugging Face): field -> (kind, low, high); a field set to null counts as absent

_I = "int"
CONFIG_FIELDS: dict[str, tuple] = {
    "hidden_size": (_I, 1, WIDTH), "num_hidden_layers": (_I, 1, LAYERS), "vocab_size": (_I, 1, 1 << 24),
    "num_attention_heads": (_I, 1, HEADS), "num_key_value_heads": (_I, 1, HEADS), "head_dim": (_I, 1, WIDTH),
    "intermediate_size": (_I, 1, WIDTH), "intermediate_size_mlp": (_I, 1, WIDTH), "moe_intermediate_size": (_I, 1, WIDTH),
    "shared_expert_intermediate_size": (_I, 0, WIDTH), "moe_shared_expert_intermediate_size": (_I, 0, WIDTH),
    "num_experts_per_tok": (_I, 1, EXPERTS), "top_k_experts": (_I, 1, EXPERTS), "moe_topk": (_I, 1, EXPERTS),
    "n_routed_experts": (_I, 0, EXPERTS), "num_local_experts": (_I, 0, EXPERTS), "num_experts": (_I, 0, EXPERTS),
    "n_shared_experts": (_I, 0, EXPERTS), "num_shared_experts": (_I, 0, EXPERTS),
    "first_k_dense_replace": (_I, 0, LAYERS), "moe_layer_freq": (_I, 1, LAYERS), "decoder_sparse_step": (_I, 1, LAYERS),
    "interleave_moe_layer_step": (_I, 1, LAYERS), "sliding_window": (_I, 0, TOKENS),
    "kv_lora_rank": (_I, 0, WIDTH), "q_lora_rank": (_I, 0, WIDTH), "qk_rope_head_dim": (_I, 1, WIDTH),
    "qk_nope_head_dim": (_I, 1, WIDTH), "v_head_dim": (_I, 1, WIDTH),
    "index_n_heads": (_I, 0, HEADS), "index_head_dim": (_I, 0, WIDTH), "index_topk": (_I, 0, TOKENS),
    "global_head_dim": (_I, 1, WIDTH), "num_global_key_value_heads": (_I, 1, HEADS), "attention_head_dim": (_I, 1, WIDTH),
    "mamba_head_dim": (_I, 1, WIDTH), "mamba_num_heads": (_I, 1, HEADS), "ssm_state_size": (_I, 1, WIDTH),
    "n_groups": (_I, 1, HEADS), "conv_kernel": (_I, 1, 1 << 10), "chunk_size": (_I, 1, 1 << 16),
    "linear_num_value_heads": (_I, 1, HEADS), "linear_num_key_heads": (_I, 1, HEADS), "linear_key_head_dim": (_I, 1, WIDTH),
    "linear_value_head_dim": (_I, 1, WIDTH), "linear_conv_kernel_dim": (_I, 1, 1 << 10),
    "use_sliding_window": ("bool",), "tie_word_embeddings": ("bool",), "attn_output_gate": ("bool",), "use_qk_norm": ("bool",),
    "attention_k_eq_v": ("bool",), "enable_moe_block": ("bool",),
    "model_type": ("str",), "hybrid_override_pattern": ("str",), "mamba_ssm_dtype": ("str",), "torch_dtype": ("str",),
    "dtype": ("str",), "mlp_hidden_act": ("str",), "qk_norm_type": ("str",), "_name_or_path": ("str",),
    "layer_types": ("str_list",), "architectures": ("str_list",), "mlp_only_layers": ("int_list",), "text_config": ("dict",),
    "quantization_config": ("dict",), "block_configs": ("dict_list",),
    "max_position_embeddings": (_I, 1, TOKENS), "attention_chunk_size": (_I, 0, TOKENS), "nope_layer_interval": (_I, 1, LAYERS),
    "no_rope_layers": ("int_list",), "rope_scaling": ("dict",),
    # every n-th layer global (Gemma 3, spec.model._window_pattern), or a pattern string the loader names as unread
    "sliding_window_pattern": ("int_or_str", 1, LAYERS),
    # gpt-oss's clamped SwiGLU: the clamp on the gate and linear halves (transformers GptOssConfig, 7.0); 0 or absent: none
    "swiglu_limit": ("float", 0.0, 1e6),
    # Falcon (transformers FalconConfig; n_layer, n_head, n_head_kv, n_embed: TII's earlier custom code, spec.model._falcon_config)
    "n_layer": (_I, 1, LAYERS), "n_head": (_I, 1, HEADS), "n_head_kv": (_I, 1, HEADS), "num_kv_heads": (_I, 1, HEADS),
    "n_embed": (_I, 1, WIDTH), "ffn_hidden_size": (_I, 1, WIDTH), "multi_query": ("bool",), "new_decoder_architecture": ("bool",),
    "alibi": ("bool",),
}
# fields inside the nested objects the normaliser reads
BLOCK_FIELDS = {"attention": ("no_op", "replace_with_linear", "n_heads_in_group", "window_length"),
                "ffn": ("no_op", "replace_with_linear", "ffn_mult")}
QUANT_FIELDS = ("quant_method", "weight_block_size", "config_groups", "weights", "num_bits")
HF_QUANT_FIELDS = ("quantization", "quant_algo", "kv_cache_quant_algo", "exclude_modules")
ROPE_FIELDS = ("factor", "rope_type", "type", "original_max_position_embeddings")


def _field(name: str, v, spec: tuple) -> None:
    f = f"config.{name}"
    kind = spec[0]
    if kind == _I:
        as_int(f, v, lo=spec[1], hi=spec[2], what=f"an integer from {spec[1]} to {spec[2]:,}" if spec[1] else f"a non-negative integer up to {spec[2]:,}")
    elif kind == "float":
        as_float(f, v, lo=spec[1], hi=spec[2])
    elif kind == "bool":
        as_bool(f, v)
    elif kind == "str":
        as_str(f, v)
    elif kind == "int_or_str" and not isinstance(v, str):
        as_int(f, v, lo=spec[1], hi=spec[2], what=f"a positive integer up to {spec[2]:,}: every n-th layer global, the rest sliding")
    elif kind == "str_list":
        str_list(f, v)
    elif kind == "int_list":
        if not isinstance(v, list):
            raise InputError(f, v, "a list of layer indices")
        for i, x in enumerate(v):
            as_int(f"{f}[{i}]", x, lo=0, hi=LAYERS)
    elif kind == "dict":
        if not isinstance(v, dict):
            raise InputError(f, v, "a JSON object")
    elif kind == "dict_list":
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise InputError(f, v, "a list of JSON objects, one per layer")


def _blocks(blocks: list, heads: int) -> None:
    """Nemotron-NAS block_configs: per layer an attention and an FFN object."""
    for i, b in enumerate(blocks):
        for part, names in BLOCK_FIELDS.items():
            d = b.get(part, {})
            f = f"config.block_configs[{i}].{part}"
            if not isinstance(d, dict):
                raise InputError(f, d, "a JSON object")
            for k in ("no_op", "replace_with_linear"):
                if d.get(k) is not None:
                    as_bool(f"{f}.{k}", d[k])
            if d.get("no_op") or d.get("replace_with_linear"):
                continue
            if part == "attention":
                g = as_int(f"{f}.n_heads_in_group", d.get("n_heads_in_group"), lo=1, hi=heads,
                           what=f"a positive integer dividing num_attention_heads ({heads})")
                if heads % g:
                    raise InputError(f"{f}.n_heads_in_group", g, f"a divisor of num_attention_heads ({heads})")
                if d.get("window_length") is not None:
                    as_int(f"{f}.window_length", d["window_length"], lo=0, hi=TOKENS)
            else:
                as_float(f"{f}.ffn_mult", d.get("ffn_mult"), lo=0.0, hi=1e3, lo_open=True)
            assert set(names) >= {"no_op"}  # the table above names what is read


def _quant(qc: dict) -> None:
    if qc.get("quant_method") is not None:
        as_str("config.quantization_config.quant_method", qc["quant_method"])
    wbs = qc.get("weight_block_size")
    if wbs is not None and not (isinstance(wbs, list) and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in wbs)):
        raise InputError("config.quantization_config.weight_block_size", wbs, "a list of positive integers")
    groups = qc.get("config_groups")
    if groups is not None:
        if not isinstance(groups, dict) or not all(isinstance(g, dict) for g in groups.values()):
            raise InputError("config.quantization_config.config_groups", groups, "an object of quantization groups")
        for name, g in groups.items():
            w = g.get("weights")
            if w is not None and not isinstance(w, dict):
                raise InputError(f"config.quantization_config.config_groups.{name}.weights", w, "a JSON object")
            # spec.quant reads both (a group of 16 or 32 4-bit floats: NVFP4, MXFP4)
            for k, hi in (("num_bits", 64), ("group_size", 1 << 20)):
                if w and w.get(k) is not None:
                    as_int(f"config.quantization_config.config_groups.{name}.weights.{k}", w[k], lo=1, hi=hi)
            if w and w.get("strategy") is not None:
                as_str(f"config.quantization_config.config_groups.{name}.weights.strategy", w["strategy"])
            if w and w.get("symmetric") is not None:  # the zero point spec.quant prices ("no" read as symmetric: frev9 #7)
                as_bool(f"config.quantization_config.config_groups.{name}.weights.symmetric", w["symmetric"])
    for k in ("bits", "w_bit"):  # AWQ's and GPTQ's weight bits (spec.quant._weight_only_int)
        if qc.get(k) is not None:
            as_int(f"config.quantization_config.{k}", qc[k], lo=1, hi=64)
    for k in ("sym", "zero_point"):  # GPTQ's and AWQ's zero point (spec.quant._weight_only_int: "false" read as true)
        if qc.get(k) is not None:
            as_bool(f"config.quantization_config.{k}", qc[k])
    for k in ("group_size", "q_group_size"):  # their groups: -1 is one a row (spec.precision.int_grouped)
        g = qc.get(k)
        if g is not None and g != -1:
            as_int(f"config.quantization_config.{k}", g, lo=1, hi=1 << 20, what="-1 (one scale per output channel) or an integer from 1 to 1,048,576")


def check_hf_quant(quant) -> None:
    """hf_quant_config.json (NVIDIA ModelOpt): the `quantization` object the normaliser reads."""
    if not isinstance(quant, dict):
        raise InputError("hf_quant_config", type(quant).__name__, "a JSON object")
    q = quant.get("quantization")
    if q is None:
        return
    if not isinstance(q, dict):
        raise InputError("hf_quant_config.quantization", q, "a JSON object")
    for k in ("quant_algo", "kv_cache_quant_algo"):
        if q.get(k) is not None:
            as_str(f"hf_quant_config.quantization.{k}", q[k])
    if q.get("exclude_modules") is not None:
        str_list("hf_quant_config.quantization.exclude_modules", q["exclude_modules"])


def check_config(cfg: dict, outer: dict | None = None) -> None:
    """Every field the normaliser reads from a config.json (after text_config is merged in), then
    the relations between them. Raises InputError on the first bad one."""
    for src in (outer or {}, cfg):
        for name, spec in CONFIG_FIELDS.items():
            v = src.get(name)
            if v is not None:
                _field(name, v, spec)
    H = cfg.get("num_attention_heads")
    kv = cfg.get("num_key_value_heads")
    if H and kv and not cfg.get("kv_lora_rank") and (kv > H or H % kv):
        raise InputError("config.num_key_value_heads", kv, f"a divisor of num_attention_heads ({H}): each KV head serves a whole group of query heads")
    h = cfg.get("hidden_size")
    if H and h and not cfg.get("head_dim") and not cfg.get("kv_lora_rank") and h % H:
        # head_dim = hidden_size // heads would floor it (4095 / 32 -> 127, a q_proj 4064 wide on a 4095 residual), a shape no
        # trained checkpoint has: transformers' attention refused it ("hidden_size must be divisible by num_heads") before
        # its head_dim default; a config that means another head size states head_dim, which is priced as given (newc11 #2)
        raise InputError("config.hidden_size", h, f"a multiple of num_attention_heads ({H}), or give head_dim (head_dim = hidden_size "
                                                  "// heads otherwise)")
    E = cfg.get("n_routed_experts") or cfg.get("num_local_experts") or cfg.get("num_experts") or 0
    for k in ("num_experts_per_tok", "top_k_experts", "moe_topk"):
        if E and cfg.get(k) and cfg[k] > E:
            raise InputError(f"config.{k}", cfg[k], f"at most the {E} routed experts")
    L = cfg.get("num_hidden_layers")
    for i in cfg.get("mlp_only_layers") or []:
        if L and i >= L:
            raise InputError("config.mlp_only_layers", i, f"layer indices below num_hidden_layers ({L})")
    nv, nk = cfg.get("linear_num_value_heads"), cfg.get("linear_num_key_heads")
    if nv and nk and nv % nk:
        raise InputError("config.linear_num_value_heads", nv, f"a multiple of linear_num_key_heads ({nk})")
    mh, ng = cfg.get("mamba_num_heads"), cfg.get("n_groups")
    if mh and ng and mh % ng:
        raise InputError("config.n_groups", ng, f"a divisor of mamba_num_heads ({mh})")
    if cfg.get("block_configs"):
        _blocks(cfg["block_configs"], H or 1)
    if isinstance(cfg.get("quantization_config"), dict):
        _quant(cfg["quantization_config"])
    rs = cfg.get("rope_scaling")
    if isinstance(rs, dict):
        if rs.get("factor") is not None:
            as_float("config.rope_scaling.factor", rs["factor"], lo=0.0, hi=1e4, lo_open=True)
        for k in ("rope_type", "type"):
            if rs.get(k) is not None:
                as_str(f"config.rope_scaling.{k}", rs[k])
        if rs.get("original_max_position_embeddings") is not None:
            as_int("config.rope_scaling.original_max_position_embeddings", rs["original_max_position_embeddings"], lo=1, hi=TOKENS)


# ---------------------------------------------------------------------------------------------
# GPU TOML

GPU_NUMBERS = {  # field -> (low, high, low excluded); lows far below any accelerator (1 GB, 1 GB/s, 1 W)
    "hbm_bytes": (1e9, 1e15, False), "memory_bytes": (1e9, 1e15, False), "hbm_bandwidth_bytes_per_s": (1e9, 1e15, False),
    "l2_bytes": (0.0, 1e12, False), "scale_up_bandwidth_bytes_per_s": (0.0, 1e14, False),
    "scale_out_bandwidth_bytes_per_s": (1e6, 1e14, False), "tdp_w": (1.0, 1e6, False),
}
PEAK_FLOPS = (1e11, 1e18)  # dense FLOP/s: 0.1 TFLOP/s to 1 EFLOP/s per GPU
FP4_FORMATS = ("nvfp4", "mxfp4")


def check_gpu(d: dict, origin: str) -> None:
    """A parsed GPU TOML: types, finite positive figures, tile shapes, and a scale-up link wherever
    there is a scale-up domain."""
    for k in ("id", "family", "name", "vendor", "arch"):
        if k in d:
            as_str(f"gpu.{k}", d[k])
    if not str(d.get("id", "x")).strip():
        raise InputError("gpu.id", d["id"], "a non-empty name")
    if "aliases" in d:
        str_list("gpu.aliases", d["aliases"])
    if "fp4_formats" in d:
        str_list("gpu.fp4_formats", d["fp4_formats"], choices=FP4_FORMATS)
    if "sms" in d:
        as_int("gpu.sms", d["sms"], lo=1, hi=1 << 17)
    dom = as_int("gpu.scale_up_domain", d.get("scale_up_domain", 1), lo=1, hi=1 << 20)
    for k, (lo, hi, lo_open) in GPU_NUMBERS.items():
        if k in d:
            as_float(f"gpu.{k}", d[k], lo=lo, hi=hi, lo_open=lo_open,
                     what=f"a {'positive' if lo > 0 else 'non-negative'} number from {lo:g} to {hi:g}")
    _check_scale_up(d, dom, origin)
    pf = d.get("peak_flops")
    if not isinstance(pf, dict):
        raise InputError("gpu.peak_flops", pf, "a table of math precision = dense FLOP/s")
    for k, v in pf.items():  # a precision the tensor cores lack is 0 or absent; a present one is a real figure
        if not (_is_number(v) and v == 0 and k != "bf16"):
            as_float(f"gpu.peak_flops.{k}", v, lo=PEAK_FLOPS[0], hi=PEAK_FLOPS[1], what="dense FLOP/s from 1e11 to 1e18")
    if "bf16" not in pf:
        raise InputError("gpu.peak_flops.bf16", None, "a positive FLOP/s figure")
    tiles = d.get("tiles", {})
    if not isinstance(tiles, dict):
        raise InputError("gpu.tiles", tiles, "a table with shapes = [[M, N, SMs per tile], ...]")
    if "shapes" in tiles:
        sh = tiles["shapes"]
        ok = isinstance(sh, list) and sh and all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 1 << 12 for x in t)
            for t in sh)
        if not ok:
            raise InputError("gpu.tiles.shapes", sh, "a non-empty list of [tile M, tile N, SMs per tile], positive integers")
    feed = tiles.get("smem_bytes_per_bf16_flop", 0.0)
    if isinstance(feed, bool) or not isinstance(feed, int | float) or not 0.0 <= float(feed) <= 1.0:
        raise InputError("gpu.tiles.smem_bytes_per_bf16_flop", feed, "a number from 0 (no bound) to 1 byte per FLOP")
    rate = tiles.get("block_scale_rate", 1.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 < float(rate) <= 1.0:
        raise InputError("gpu.tiles.block_scale_rate", rate, "a share above 0 and at most 1 (1: block scales cost the main loop nothing)")


SCALE_UP_TOPOLOGIES = ("switch", "mesh")  # spec.hardware.Gpu.scale_up_topology


def _check_scale_up(d: dict, dom: int, origin: str) -> None:
    """A GPU file's scale-up figures: a link wherever the domain holds more than one GPU, and a topology
    (SCALE_UP_TOPOLOGIES) whose mesh has peers to link (a domain of at least 2)."""
    if 0 < d.get("scale_up_bandwidth_bytes_per_s", 0) < GPU_NUMBERS["hbm_bandwidth_bytes_per_s"][0]:
        raise InputError("gpu.scale_up_bandwidth_bytes_per_s", d["scale_up_bandwidth_bytes_per_s"],
                         "0 (no scale-up link) or a number from 1e9 to 1e14 (bytes/s per GPU, one direction)")
    if dom > 1 and not d.get("scale_up_bandwidth_bytes_per_s", 0) > 0:  # missing is 0 in hardware.py: TP over no link
        raise InputError("gpu.scale_up_bandwidth_bytes_per_s", d.get("scale_up_bandwidth_bytes_per_s"),
                         f"a positive figure: {origin} has a scale-up domain of {dom} GPUs")
    topo = as_str("gpu.scale_up_topology", d.get("scale_up_topology", "switch"), choices=SCALE_UP_TOPOLOGIES)
    if topo == "mesh" and dom < 2:
        raise InputError("gpu.scale_up_topology", topo, f"switch (a mesh links the GPUs of a scale-up domain of 2 or "
                         f"more; {origin} has {dom})")


# ---------------------------------------------------------------------------------------------
# calibration profiles: each parameter's physical range (low, high, low excluded)

def param_range(name: str) -> tuple[float, float, bool]:
    """The range a calibration parameter may take: efficiencies are fractions of a peak in
    [1e-4, 1] (moe_eff and moe_eff_fp8_deepgemm are relative to a dense kernel, up to 2; below 1e-4
    times overflow); times are seconds up to 1 (what PDL hides of a kernel boundary up to 1 us); the
    per-head decode fallback's rate attn_decode_wide_flop_clk in FLOP per SM clock above 0 and at most an
    SM's BF16 tensor FLOP a clock, 8,192 (Blackwell; fitted 27.6-30.3, calibrate's bounds 1-256); the
    others as their meaning allows."""
    if name in ("moe_eff", "moe_eff_fp8_deepgemm"):
        return 1e-4, 2.0, False
    if name.endswith("_eff") or "_eff_" in name:
        return 1e-4, 1.0, False
    if name == "prefill_queue_fraction":
        return 0.0, 1.0, False
    if name == "pdl_credit_s":  # what PDL hides of a kernel boundary: at most the launch latency, ~1 us
        return 0.0, 1e-6, False
    if name.endswith("_s"):
        return 0.0, 1.0, False
    return {"gemm_blend_p": (1.0, 100.0, False), "gemm_max_split_k": (1.0, 1024.0, False), "moe_routing_alpha": (0.0, 3.0, False),
            "attn_decode_group_bf16": (1.0, 1e6, False), "attn_decode_group_fp8": (1.0, 1e6, False),
            "attn_decode_max_group": (1.0, 1e6, False), "attn_decode_wide_flop_clk": (0.0, 8192.0, True),
            "ttft_wait_steps": (0.0, 1.0, False), "adp_wait_steps": (0.0, 1e3, False),
            "comm_latency_scale": (0.0, 100.0, False),
            "elementwise_kernels_per_layer": (0.0, 1e3, False)}.get(name, (0.0, 1e12, False))


def check_param(field: str, name: str, v) -> float:
    lo, hi, lo_open = param_range(name)
    return as_float(field, v, lo=lo, hi=hi, lo_open=lo_open,
                    what=f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}] ({name}'s physical range)")


# ---------------------------------------------------------------------------------------------
# results: nothing non-finite, negative or absurd leaves the core

def _absurd(key: str, v: float) -> bool:
    if key.endswith("_ms"):
        return v > 1e10  # 115 days
    if key.endswith("_s") or key == "seconds":
        return v > 1e7
    if "tok_s" in key:
        return v > 1e9
    return abs(v) > 1e30


def _signed(key: str) -> bool:
    # figures that are differences, signed errors or gains may be negative
    return key.endswith("_pe") or any(s in key for s in ("signed", "gain", "delta", "diff", "bias", "change", "slope", "loss",
                                                         "cost_pct", "score"))


def check_result(obj, path: str = "result") -> None:
    """Walks a result (dicts, lists, numbers): a NaN, an infinity, a negative time, rate or size, or
    an absurd figure is an InputError naming it (the inputs that led there passed the edge checks,
    so the message says which figure, not which input)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            check_result(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            check_result(v, path)
    elif _is_number(obj) or type(obj).__module__ == "numpy":
        try:
            x = float(obj)
        except (TypeError, ValueError):
            return
        key = path.rsplit(".", 1)[-1].lower()
        if not math.isfinite(x) or (x < 0 and not _signed(key)) or _absurd(key, x):
            raise InputError(path, x, "a finite, non-negative figure: these inputs lie outside what the model can price "
                             "(non-finite result)")
