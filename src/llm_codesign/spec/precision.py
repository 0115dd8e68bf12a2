"""Number formats for weights, activations and KV cache, with block-scale overhead in the bytes.

NVFP4: E2M1 values with one FP8 (E4M3) scale per 16 values; MXFP4: one E8M0 scale per 32 values;
FP8 block-scaled: one FP32 scale per 128x128 weight block and per 1x128 activation block
(DeepSeek-V3 / DeepGEMM). Sources: gpu-reference.yaml gemm_tile_facts.blackwell_sm100.block_scaled,
DeepSeek-V3 config quantization_config.weight_block_size [128, 128].
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from llm_codesign.errors import InputError, Spelled


@dataclass(frozen=True)
class Dtype:
    name: str
    bits: int
    scale_bits: int  # bits of one block scale
    weight_block: int  # values sharing one scale in a weight tensor (0: per-tensor, negligible)
    act_block: int  # values sharing one scale in an activation / KV tensor
    math: str  # tensor-core math class it needs: bf16, fp8, fp4

    def bytes_per_weight(self) -> float:
        return (self.bits + (self.scale_bits / self.weight_block if self.weight_block else 0)) / 8

    def bytes_per_value(self) -> float:
        """Bytes per activation or KV value, scales included."""
        return (self.bits + (self.scale_bits / self.act_block if self.act_block else 0)) / 8


DTYPES: dict[str, Dtype] = {
    "bf16": Dtype("bf16", 16, 0, 0, 0, "bf16"),
    "fp16": Dtype("fp16", 16, 0, 0, 0, "bf16"),
    "fp8": Dtype("fp8", 8, 0, 0, 0, "fp8"),
    "fp8_block": Dtype("fp8_block", 8, 32, 128 * 128, 128, "fp8"),
    "nvfp4": Dtype("nvfp4", 4, 8, 16, 16, "fp4"),
    "mxfp4": Dtype("mxfp4", 4, 8, 32, 32, "fp4"),
    # weight-only INT4, one BF16 scale per 32 values (compressed-tensors pack-quantized, Kimi-K2.5; --weight-dtype int4);
    # dequantised to the activation precision in the GEMM. A checkpoint's own groups: int_grouped
    "int4": Dtype("int4", 4, 16, 32, 32, "bf16"),
    # INT8, one scale per output channel (weights) and per token (activations): W8A8 on INT8 tensor cores (compressed-tensors
    # int-quantized, e.g. RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8: vLLM CompressedTensorsW8A8Int8, strategy
    # channel + dynamic per-token input), or W8A16 with BF16 activations (GPTQ 8 bits, compressed-tensors W8A16: Marlin's
    # uint8b128, gptq_marlin.py TYPE_MAP). A channel's FP32 scale is 32/K bits a weight, 0.008 at K 4,096: read as none,
    # as FP8's per-channel scales; a GPTQ checkpoint's groups: int_grouped
    "int8": Dtype("int8", 8, 0, 0, 0, "int8"),
}
_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "fp8_e4m3": "fp8", "e4m3": "fp8",
            "fp8-block": "fp8_block", "fp8block": "fp8_block", "fp4": "nvfp4", "nvfp4": "nvfp4",
            "w4a16_mxfp4": "mxfp4", "auto": "bf16"}
MATH_ORDER = ("fp4", "fp8", "bf16")  # fastest first


def int_grouped(bits: int, group: int, zero_bits: int = 0) -> Dtype:
    """A weight-only INT checkpoint's layout as its quantization_config lays it out, at `bits` (4 or 8) a value, one 16-bit
    (BF16/FP16) scale and, where the format stores one, a `zero_bits` zero point per `group` values along the input (vLLM's
    AWQ qweight [K, N/8] int32, qzeros [K/g, N/8] int32, scales [K/g, N]: awq.py AWQLinearMethod.create_weights@000796ac;
    GPTQ's Marlin form the same scales and no zero point, zero_points=False, sym only: gptq_marlin.py TYPE_MAP,
    GPTQMarlinLinearMethod.create_weights@00161ce0). INT4 group 128 with AWQ's zero point: 4 + 16/128 + 4/128 = 4.156
    bits; GPTQ 8 bits in groups of 128, symmetric: 8 + 16/128 = 8.125. group -1 (one scale per output channel over the
    whole input, gptq_marlin.py's group_size = input_size) adds 16/K bits, 0.004 at K 4,096: read as none (weight_block 0)."""
    return replace(DTYPES[f"int{bits}"], scale_bits=16 + zero_bits, weight_block=max(int(group), 0))


MATH_BITS = {"fp4": 4, "fp8": 8, "int8": 8, "bf16": 16}


def get_dtype(name: str, field: str = "dtype") -> Dtype:
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise InputError(field, name, "one of: " + ", ".join(DTYPES))
    if key != str(name).strip().lower():  # read through an alias: keep the user's spelling for the errors that follow
        return replace(DTYPES[key], name=Spelled(key, getattr(name, "typed", str(name))))
    return DTYPES[key]


def gemm_math(weight: Dtype, activation: Dtype, gpu) -> str:
    """Math precision a GEMM runs at: the wider of its operands, lowered to what the GPU executes.

    A W4A16 GEMM dequantises weights and runs at the 16-bit rate; W4A4 runs at the FP4 rate only where
    the tensor cores have it (NVFP4 on Blackwell, MXFP4 also on CDNA4); FP8 needs Ada/Hopper or newer.
    """
    if "int8" in (weight.math, activation.math):
        # INT8 tensor cores take INT8 x INT8 alone (W8A8: vLLM's CUTLASS scaled_mm, sgl-kernel's int8_scaled_mm, AITER's
        # gemm_a8w8), at the GPU's INT8 rate; INT8 weights on 16-bit activations dequantise in the main loop (W8A16)
        return "int8" if weight.math == activation.math == "int8" and gpu.supports("int8") else "bf16"
    need = max(MATH_BITS[weight.math], MATH_BITS[activation.math])
    for math in MATH_ORDER:
        if MATH_BITS[math] < need:
            continue
        if math == "fp4" and not (weight.name in gpu.fp4_formats and activation.name in gpu.fp4_formats):
            continue
        if gpu.supports(math):
            return math
    return "bf16"


def mxfp4_activation(gpu) -> Dtype:
    """The activation format MXFP4 weights run on where none is named: MXFP4 (W4A4) on AMD GPUs whose matrix
    cores run MXFP4, BF16 (W4A16) elsewhere.

    On CDNA4 (gfx950) AMD's MXFP4 checkpoints (Quark w_mxfp4_a_mxfp4, e.g. amd/DeepSeek-R1-0528-MXFP4-Preview,
    InferenceX's MI355X FP4 model) run W4A4 in SGLang and ATOM: SGLang's QuarkW4A4MXFP4 quantises the input
    per 1x32 (aiter dynamic_mxfp4_quant) and runs aiter's gemm_afp4wfp4 (quark_w4a4_mxfp4.py:116,130@0.5.9,
    :128,153@0.5.12), its MoE aiter's fused_moe with QuantType.per_1x32 (quark_w4a4_mxfp4_moe.py:196-202@0.5.9);
    ATOM's MXFP4 MoE calls the same fused_moe (atom/model_ops/moe.py:1047-1055@7934d5e, ATOM's May 2026 build)
    and its linears quantise per 1x32 before gemm_a4w4 (atom/model_ops/linear.py:90-124,482-483@7934d5e). For a SiLU MoE aiter's fused_moe quantises the
    activations to MXFP4 (q_dtype_a fp4x2: aiter/fused_moe.py:310-319@3c5f0ba; the BF16/FP8 branches are
    SwiGLU's, gpt-oss's). NVIDIA's engines run MXFP4 weights on BF16 or FP8 activations (gpt-oss: Marlin,
    triton_kernels, trtllm-gen MXFP4 x BF16/MXFP8), no W4A4 MXFP4 kernel."""
    return DTYPES["mxfp4"] if gpu.vendor == "amd" and gpu.supports("fp4") and "mxfp4" in gpu.fp4_formats else DTYPES["bf16"]


def _narrower_activations(w: Dtype, a: Dtype) -> tuple[Dtype, list[str]]:
    """Activations narrower than weights stored at their own math's width (W16A8, W16A4, W8A4): no engine has such a GEMM,
    since each quantises activations only with the weights (TensorRT-LLM's QuantMode.from_description: "We must quantize
    weights when we quantize activations", tensorrt_llm/quantization/mode.py@03bcfcd; vLLM's and SGLang's --quantization
    fp8 quantise a BF16 checkpoint's weights at load, W8A8), and a 16-bit checkpoint's launch has no activation option.
    They run at the weights' format (priced and exported so), one note saying it: --activation-dtype fp8 on BF16 weights
    was labelled A:fp8 and priced as BF16 without a word (crev9 #7). Weight-only formats (INT4: 4 bits, BF16 math) are
    not this: their activations are the GEMM's (W4A16, W4A8)."""
    if w.bits < MATH_BITS[w.math] or MATH_BITS[a.math] >= MATH_BITS[w.math]:
        return a, []
    wa = f"W{MATH_BITS[w.math]}A{MATH_BITS[a.math]}"
    return w, [f"{wa} has no GEMM in any engine (activations are quantised only with the weights): the activations run {w.name}, "
               f"priced and exported as W{MATH_BITS[w.math]}A{MATH_BITS[w.math]}; --weight-dtype {a.name} for {a.name} GEMMs"]


def _executable(prec: "Precision", gpu) -> tuple["Precision", tuple[str, ...]]:
    prec = prec.on(gpu)
    w, a, attn, attn_in = prec.weight, prec.activation, prec.attn_weight, prec.attn_in_weight
    a, notes = _narrower_activations(w, a)
    has_fp4 = gpu.supports("fp4")
    for d in {x.name: x for x in (w, a, attn, attn_in) if x is not None and x.math == "fp4"}.values():
        if has_fp4 and d.name not in gpu.fp4_formats and gpu.fp4_formats:
            # FP4 tensor cores of another block format (CDNA4 runs MXFP4, no NVFP4: AMD CDNA4 ISA;
            # AMD publishes MXFP4 re-quantisations, e.g. amd/DeepSeek-R1-MXFP4-Preview)
            alt = DTYPES[gpu.fp4_formats[0]]
            w, a = (alt if x.name == d.name else x for x in (w, a))
            attn, attn_in = (alt if x is not None and x.name == d.name else x for x in (attn, attn_in))
            cores = "matrix cores" if gpu.vendor == "amd" else "tensor cores"  # each vendor's name for them (AMD CDNA4 ISA)
            notes.append(f"{d.name} has no {gpu.name} kernel: priced as {alt.name} (the FP4 format its {cores} run, "
                         "a re-quantised checkpoint)")
    if a.math == "fp4" and not (has_fp4 and a.name in gpu.fp4_formats):
        # no FP4 math: FP4 weights run weight-only, dequantised to BF16 in the GEMM (vLLM's Marlin
        # FP4 fallback, "Weight-only FP4 compression will be used leveraging the Marlin kernel")
        a = DTYPES["bf16"]
        # Marlin is a CUDA kernel: on AMD's GPUs (CDNA3) the weight-only rate is an assumption (default.toml's w4a16), no kernel timed
        how = "as vLLM's Marlin kernel does" if gpu.vendor == "nvidia" else "at an assumed rate: no such kernel timed on AMD GPUs"
        notes.append(f"{gpu.name} has no FP4 math: W4A4 runs as W4A16 (4-bit weights dequantised to BF16, {how})")
    if a.math == "int8" and not gpu.supports("int8"):
        # a GPU file that states no INT8 rate: the INT8 weights priced weight-only, dequantised to BF16 (W8A16)
        a = DTYPES["bf16"]
        notes.append(f"{gpu.name} states no INT8 rate (peak_flops.int8): W8A8 priced as W8A16 (INT8 weights dequantised to BF16)")
    if a.math == "fp8" and not gpu.supports("fp8"):
        # no FP8 math (Ampere): FP8 checkpoints run weight-only FP8 (vLLM Marlin W8A16 fallback)
        a = DTYPES["bf16"]
        notes.append(f"{gpu.name} has no FP8 math: W8A8 runs as W8A16 (FP8 weights dequantised to BF16, as vLLM's Marlin kernel does)")
    return Precision(w, a, prec.kv, attn, attn_in), tuple(notes)


def executable(prec: "Precision", gpu) -> tuple["Precision", tuple[str, ...]]:
    """The precision `gpu` really runs for `prec`, as engines map a format the GPU cannot execute,
    and one note per mapping (empty when it runs as given). Cached: the cost path calls it per layer, on the canonical
    names: a name read through an alias (errors.Spelled) equals and hashes as its canonical one, so a cached answer
    would carry one caller's spelling into another's errors (the final review)."""
    def plain(d):
        return d if d is None or type(d.name) is str else replace(d, name=str(d.name))
    return _executable_cached(replace(prec, weight=plain(prec.weight), activation=plain(prec.activation), kv=plain(prec.kv),
                                      attn_weight=plain(prec.attn_weight), attn_in_weight=plain(prec.attn_in_weight)), gpu)


@lru_cache(maxsize=256)
def _executable_cached(prec, gpu):
    return _executable(prec, gpu)


@dataclass(frozen=True)
class Precision:
    """The number formats a deployment runs: weights, activations (the GEMMs' math), KV cache, and the attention
    projections' where the checkpoint keeps them wider. Built with `Precision.of("fp8", kv="fp8")`; `label()` is
    what answers print ("W:fp8 A:fp8 KV:fp8")."""
    weight: Dtype  # FFN weights: dense MLP, experts, shared experts
    # None: left to the GPU (MXFP4 weights named without an activation: W4A4 on CDNA4, W4A16 elsewhere,
    # mxfp4_activation) until `on(gpu)` settles it; nothing reads the math or bytes of an unsettled one
    activation: Dtype | None
    kv: Dtype
    attn_weight: Dtype | None = None  # attention projections when the checkpoint keeps them wider
    # the attention's input projections (GQA's q/k/v, MLA's q_a, q_b, kv_a, kv_b) where the checkpoint keeps those alone
    # wider, its o_proj at `attn` (nvidia/DeepSeek-R1-NVFP4: spec.quant.attn_excluded's part); None: at `attn`
    attn_in_weight: Dtype | None = None

    def __post_init__(self):
        if self.activation is None and self.weight.name != "mxfp4":
            raise ValueError(f"{self.weight.name} weights name their activation; only MXFP4's is left to the GPU")

    @property
    def attn(self) -> Dtype:
        """The attention projections' format: all of them, or the output projection where the inputs differ (attn_in)."""
        return self.attn_weight or self.weight

    @property
    def attn_in(self) -> Dtype:
        """The attention's input projections' format (q/k/v; MLA's q_a, q_b, kv_a, kv_b)."""
        return self.attn_in_weight or self.attn

    @classmethod
    def of(cls, weight: str = "bf16", activation: str | None = None, kv: str | None = None) -> "Precision":
        """A precision from format names (bf16, fp16, fp8, fp8_block, nvfp4, mxfp4, int4, int8): the activation defaults to what
        the weight format runs with (W8A8 for FP8 and INT8, W4A4 for NVFP4, BF16 else; MXFP4's is the GPU's), the KV cache to BF16."""
        w = get_dtype(weight, "weight_dtype")
        # default activations: FP4 checkpoints run W4A4 in NVFP4 (modelopt), FP8 checkpoints W8A8; MXFP4's
        # depend on the GPU (left unsettled: `on`)
        if activation is not None:
            a = get_dtype(activation, "activation_dtype")
        else:
            a = None if w.name == "mxfp4" else w if w.name in ("nvfp4", "fp8", "fp8_block", "int8") else DTYPES["bf16"]
        if a is not None and ((w.math == "int8" and a.math in ("fp8", "fp4")) or (a.math == "int8" and w.math != "int8" and w.bits < 16)):
            # INT8 tensor cores take INT8 x INT8 alone: no engine's GEMM pairs INT8 with FP8/FP4 activations, nor INT8
            # activations with 4- or 8-bit float weights (16-bit weights on INT8 activations run at the weights': W16A8 below)
            raise InputError("activation_dtype", a.name, f"a format {w.name} weights run with: "
                             + ("int8 (W8A8) or bf16 (W8A16)" if w.math == "int8" else f"not int8 ({w.name} x int8 has no GEMM)"))
        k = get_dtype(kv, "kv_dtype") if kv else DTYPES["bf16"]
        return cls(w, a, k)

    def on(self, gpu) -> "Precision":
        """This precision on `gpu`: its activation format settled where it was left to the GPU (mxfp4_activation)."""
        return self if self.activation is not None else replace(self, activation=mxfp4_activation(gpu))

    def label(self, moe_activation: str | None = None) -> str:
        """W:, A: and KV: formats; `moe_activation`: the format the MoE's experts run on where it is not A:'s (AITER's
        switch: cost.ffns.moe_step_activation)."""
        attn = f" attn-W:{self.attn_weight.name}" if self.attn_weight and self.attn_weight != self.weight else ""
        attn += f" q/kv-W:{self.attn_in.name}" if self.attn_in != self.attn else ""
        moe = f" MoE-A:{moe_activation}" if moe_activation else ""
        return f"W:{self.weight.name}{attn} A:{self.activation.name if self.activation else 'per GPU'}{moe} KV:{self.kv.name}"
