"""Predict measured kernel latencies (the kernel tables in data/measurements/kernels/*.csv.gz) with the cost model.

Each kind of kernel table is recognised by its columns; rows are grouped by system and priced with
the same array formulas the operator graph uses (cost.gemm.gemm_time, attention, collectives, the MoE
expert block of ops.layer_ops), so a fit here is a fit of the whole model.
"""
from __future__ import annotations

import csv
import gzip
import math
import re
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from llm_codesign.cost import gemm
from llm_codesign.cost import kernels as cost
from llm_codesign.cost.calibration import Calibration
from llm_codesign.cost.ffns import DEEPEP_MODES, MOE_BLOCK, deepep_time
from llm_codesign.cost.mixers import GqaDecode
from llm_codesign.cost.ops import Batch, layer_ops
from llm_codesign.errors import InputError, check_header
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.engines.base import MOE_UPCAST
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.kinds import MoE, NoMixer
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import DTYPES, Precision, executable, gemm_math

KINDS = {
    "gemm": {"gemm_dtype", "m", "n", "k", "latency_ms"},
    "decode_attention": {"batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "latency_ms"},
    "prefill_attention": {"batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype", "latency_ms"},
    "collectives": {"op_name", "nccl_dtype", "num_gpus", "message_size", "latency_ms"},
    "moe": {"moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "latency_ms"},
    # expert-parallel dispatch / combine (kernels_hopper/ep_comm.csv.gz: tools/bundle_ep_comm.py)
    "ep_comm": {"mode", "phase", "ep_size", "hidden_size", "topk", "num_experts", "num_tokens", "latency_ms"},
}
# GEMM dtype -> (math, A bytes, B bytes); block scales counted as in precision.DTYPES
GEMM_DTYPES = {
    "bfloat16": ("bf16", 2.0, 2.0), "fp8": ("fp8", 1.0, 1.0),
    "fp8_block": ("fp8", DTYPES["fp8_block"].bytes_per_value(), DTYPES["fp8_block"].bytes_per_weight()),
    "nvfp4": ("fp4", DTYPES["nvfp4"].bytes_per_value(), DTYPES["nvfp4"].bytes_per_weight()),
}
MOE_PRECISION = {"bfloat16": Precision.of("bf16"), "fp8": Precision.of("fp8"), "fp8_block": Precision.of("fp8_block"),
                 "nvfp4": Precision.of("nvfp4"), "w4a8_mxfp4_mxfp8": Precision.of("mxfp4", activation="fp8"),
                 "w4a16_mxfp4": Precision.of("mxfp4", activation="bf16"), "int4_wo": Precision.of("int4")}
# MoE rows whose kernel runs another precision than the row's dtype, (MoE kernel family, moe_dtype) -> the precision
# it runs: SGLang's MXFP4 experts on its Triton fused MoE (the "triton" runner, not OpenAI's triton_kernels) are
# upcast to BF16 once at load (Mxfp4MoEMethod.process_weights_after_loading: upcast_from_mxfp(..., target_dtype=
# torch.bfloat16)) and run its BF16 fused_experts (TritonMoeQuantInfo with the BF16 weights, no quant flag):
# sglang 0.5.14 python/sglang/srt/layers/quantization/mxfp4.py:861-881,1294-1300, the table's version (pip wheel)
# (spec.engines.base.MOE_UPCAST, which serving prices by)
MOE_RUNS_AS = {("sglang_triton", "w4a16_mxfp4"): Precision.of(MOE_UPCAST["sglang_triton", "mxfp4"])}
# The per-engine tables (a `framework` column: data/measurements/kernels_hopper) name the kernel each row
# timed in `kernel_source`; its MoE kernel family (spec.engines.MOE_KERNELS). Rows without the column are
# TensorRT-LLM's, the kernel tables' own kernels (moe_eff / moe_overhead_s), as are the per-engine table's
# TensorRT-LLM non-gated rows: the kernel and collector the tables' three were fitted on (kernels/moe.csv.gz's
# H100 rows are all non-gated), which price them as well as a family's own (BF16 9.7%, FP8 6.8% median APE,
# against 10.1% and 11.8% at the gated CUTLASS MoE's: its per-tensor FP8 launch floors at ~25-30 us where the
# non-gated one floors at ~40-47 us; TensorRTLLMEngine.moe_kernel).
MOE_SOURCES = {
    "moe_torch_flow_cutlass": "cutlass", "moe_torch_flow_nongated": None, "moe_torch_flow": "trtllm_w4a16",
    "sglang_fused_moe_triton": "sglang_triton", "sglang_flashinfer_cutlass_moe": "flashinfer_cutlass",
    "sglang_marlin_moe": "marlin", "sglang_marlin_moe_situ_as_silu": "marlin_fp4",
    "vllm_fp8moe_triton_tritonexperts": "vllm_triton", "vllm_unquantizedfusedmoe_triton_tritonexperts": "vllm_triton",
    "vllm_fp8moe_flashinfer_cutlass_flashinferexperts": "flashinfer_cutlass",
    "vllm_modeloptfp8moe_flashinfer_cutlass_flashinferexperts": "flashinfer_cutlass",
    "vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic": "triton_kernels",
    "vllm_compressedtensorsw4a4mxfp4moe_marlin_marlinexperts_situ_as_silu": "marlin_fp4",
    "vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts": "marlin",
}
# MoE rows that do not time their kernel at a rate: FlashInfer's CUTLASS MoE, whose kernels are TensorRT-LLM's
# CUTLASS MoE's, takes 1.5-4.9x (median 3.5x, 202 shapes) TensorRT-LLM's time on the same shapes at
# per-tensor FP8 and ~3x the model at every token count at BF16, against 1.07x at block FP8 (research notes
# of issue 39): untuned tactics or host work, not a kernel rate
MOE_UNTIMED = {("vllm_modeloptfp8moe_flashinfer_cutlass_flashinferexperts", "fp8"), ("sglang_flashinfer_cutlass_moe", "bfloat16")}
# MoE rows under EP that time work serving does not do. SGLang's collector times its Triton fused MoE (BF16, block FP8)
# through the framework's FusedMoE layer, as serving runs it, for the models whose case files set routing options
# (DeepSeek, Qwen3, Kimi, GLM, MiniMax, Nemotron-H, Llama-4 Scout/Maverick...): every token routed, a remote expert
# mapped to -1 (srt/layers/moe/token_dispatcher/standard.py:197-210@0.5.14) and its rows written as zeros by the
# kernel (moe_runner/triton_utils/fused_moe_triton_kernels.py:192-196), which the route time prices. For the others
# it calls the raw kernel on rank 0's tokens with each remote expert's id set to -1 (collector/helper.py:1509) and
# then clamped to 0 (collector/sglang/collect_moe.py:366-372, use_framework_layer 1069-1080@e23be5a, the 0.5.14
# collector that took these rows): every remote assignment is computed on local expert 0, a hot expert serving
# never runs. Those rows are left out: SGLang's Triton MoE rows under EP of these shapes (hidden, expert width,
# top-k, experts; Gemma 4, Mixtral 8x7B and 8x22B, Qwen1.5-MoE, Llama-4's 8192-wide case; the case files' with no
# routing option at e23be5a).
MOE_EXPERT0_EP = {(2816, 704, 8, 128), (4096, 14336, 2, 8), (6144, 16384, 2, 8), (2048, 1408, 4, 60), (8192, 5120, 1, 16)}
# GEMM rows whose kernel is not the tables' kernel of their dtype: DeepGEMM's block-scaled FP8 (SGLang's
# dense block-FP8 GEMM on Hopper, Engine.gemm_kernel); and rows that do not time a kernel: vLLM's
# block-FP8 linear methods floor at 60-180 us and take 2-12x TensorRT-LLM's time below M = 1k, host-side
# work in eager mode (scale layout, quantisation), not the GEMM (research notes of issue 39)
GEMM_SOURCES = {"sglang_deepgemm_gemm_nt_f8f8bf16": "fp8_deepgemm", "sglang_sgl_kernel_fp8_scaled_mm": "fp8_cutlass",
               "CutlassFP8ScaledMMLinearKernel": "fp8_cutlass"}
# GEMM rows that time vLLM's dynamic per-token FP8 quantise kernel before CUTLASS's per-tensor scaled-mm (gemm.vllm_token_quant;
# ai-dynamo/aiconfigurator collector/vllm/collect_gemm.py: Fp8Config(activation_scheme="dynamic"), the layer's forward timed)
VLLM_TOKEN_QUANT = {"CutlassFP8ScaledMMLinearKernel"}
GEMM_HOST_TIMED = {"DeepGemmFp8BlockScaledMMKernel", "CutlassFp8BlockScaledMMKernel", "FlashInferFp8BlockScaledMMKernel"}
NCCL_BYTES = {"half": 2, "bfloat16": 2, "float": 4, "int8": 1, "fp8": 1}
NCCL_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter", "alltoall": "all_to_all"}


def detect(columns) -> str:
    cols = set(columns)
    for kind in ("moe", "gemm", "decode_attention", "prefill_attention", "collectives", "ep_comm"):
        if KINDS[kind] <= cols:
            return kind
    raise InputError("kernels", ",".join(sorted(cols)), "a CSV with the columns of one of: " +
                     "; ".join(f"{k} ({', '.join(sorted(v))})" for k, v in KINDS.items()))


# kernel tables shipped with the package (data/measurements/SOURCES.md), by the name `--kernels` accepts
BUNDLED = {**{k: f"kernels/{k}.csv.gz" for k in ("gemm", "decode_attention", "prefill_attention", "collectives", "moe")},
           "amd/gemm": "kernels_amd/gemm.csv", "amd/collectives": "kernels_amd/collectives.csv",
           # H100, per engine (TensorRT-LLM, SGLang, vLLM) and kernel
           **{f"hopper/{k}": f"kernels_hopper/{k}.csv.gz" for k in ("gemm", "decode_attention", "prefill_attention", "moe", "comm")},
           "hopper/ep_comm": "kernels_hopper/ep_comm.csv.gz"}


def bundled_path(name: str) -> Path:
    """Path of a shipped kernel table (a key of BUNDLED)."""
    return Path(str(resources.files("llm_codesign").joinpath("data", "measurements", BUNDLED[name])))


def read_dicts(p: Path, field: str, what: str) -> list[dict]:
    """Rows of a CSV file, gzipped or not (by its .gz suffix); an unreadable file is one InputError. A
    byte-order mark (Excel's "CSV UTF-8") is dropped, not read into the first column's name."""
    try:
        with (gzip.open(p, "rt", encoding="utf-8-sig", newline="") if p.suffix == ".gz" else p.open(encoding="utf-8-sig", newline="")) as f:
            reader = csv.DictReader(f)
            check_header(reader.fieldnames, field, str(p), what)
            return list(reader)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(field, str(p), f"{what} ({type(e).__name__}: {e})") from None


def read_csv(path: str | Path) -> tuple[str, list[dict]]:
    """A kernel table: a CSV file (.csv or .csv.gz), or the name of a bundled one (BUNDLED)."""
    p = Path(path)
    if not p.is_file() and str(path) in BUNDLED:
        p = bundled_path(str(path))
    if not p.is_file():
        raise InputError("kernels", str(path), "an existing CSV file (.csv or .csv.gz) or a bundled table: " + ", ".join(BUNDLED))
    rows = read_dicts(p, "kernels", "a readable CSV file, plain or gzipped")
    if not rows:
        raise InputError("kernels", str(path), "a CSV with at least one row")
    kind = detect(rows[0].keys())
    if "system" not in rows[0]:
        raise InputError("kernels.system", str(path), "a system column naming each row's GPU (a catalog id, e.g. h100_sxm)")
    return kind, rows


# the text columns of the kernel tables; every other column a kind requires is a number
TEXT_COLUMNS = {"gemm_dtype", "kv_cache_dtype", "attn_dtype", "op_name", "nccl_dtype", "moe_dtype", "mode", "phase"}


# count columns a row may leave empty, checked where it fills them: the SMs a DeepEP normal-mode row ran on (0 or
# empty: DeepEP's default, cost.ffns.deepep_time)
_OPTIONAL_COUNTS = {"ep_comm": ("sms",)}


def _least(col: str) -> int:
    """The least a count column takes: a step index and a number of SMs (DeepEP's default) may be 0."""
    return 0 if col in ("step", "sms") else 1


# a measured kernel's least latency: 0.1 us, under any kernel's launch (the bundled tables' least is 1.6 us, a GEMM);
# a 1e-300 ms row put an error of 1.8e301 % in validate's report and sank calibrate's fit
LEAST_LATENCY_MS = 1e-4


def row_problem(kind: str, r: dict) -> str | None:
    """Why a kernel-table row cannot be priced (a count that is not a whole number, a latency that is
    not a positive finite figure), or None."""
    filled = [c for c in _OPTIONAL_COUNTS.get(kind, ()) if (r.get(c) or "").strip()]
    for col in sorted(KINDS[kind] - TEXT_COLUMNS) + filled:
        v = (r.get(col) or "").strip()
        try:
            x = float(v)
        except ValueError:
            x = math.nan
        if col == "latency_ms":
            if not (math.isfinite(x) and x > 0):
                return f"latency_ms {v!r} is not a positive finite time"
            if x < LEAST_LATENCY_MS:
                return f"latency_ms {v!r} is not a time of at least {LEAST_LATENCY_MS:g} ms (a kernel's launch alone takes microseconds)"
        elif not (math.isfinite(x) and x.is_integer() and x >= _least(col) and x <= 1 << 40):
            return f"{col} {v!r} is not a whole number of at least {_least(col)}"
    if "kv_cache_dtype" in KINDS[kind] and r.get("kv_cache_dtype") not in _KV_BYTES:
        return f"kv_cache_dtype {r.get('kv_cache_dtype')!r} is not one of {', '.join(_KV_BYTES)}"
    if kind in ("moe", "ep_comm"):
        # a token's top-k experts are distinct, and every expert-parallel rank holds at least one
        ep = "moe_ep_size" if kind == "moe" else "ep_size"
        topk, experts, ranks = (float(r[c]) for c in ("topk", "num_experts", ep))
        if topk > experts:
            return f"topk {r['topk'].strip()!r} is more than num_experts {r['num_experts'].strip()!r} (a token's experts are distinct)"
        if experts < ranks:
            return f"num_experts {r['num_experts'].strip()!r} is fewer than {ep} {r[ep].strip()!r} (each rank holds at least one expert)"
    return None


def _col(rows, name, typ=float):
    try:
        return np.array([typ(float(r[name])) for r in rows])  # "4096.0" is a whole 4096 (row_problem checked it)
    except (KeyError, ValueError) as e:
        raise InputError(f"kernels.{name}", str(e), "a numeric column") from None


def predict(kind: str, rows: list[dict], cal_for) -> tuple[np.ndarray, list[str]]:
    """Predicted latency (ms) per row, and per row the group label (system x dtype/op) or the reason
    it could not be modelled (prefixed 'unmodeled:'). `cal_for(gpu)` gives a Calibration."""
    return Table(kind, rows).predict(cal_for)


class Table:
    """A kernel table's rows read once (checked, grouped by system, their columns as arrays, labelled),
    to be priced under any calibration: a fit prices the same rows hundreds of times. `checked`: the
    caller has already dropped every row row_problem refuses."""

    def __init__(self, kind: str, rows: list[dict], *, checked: bool = False):
        self.label = [""] * len(rows)
        by_sys: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            why = None if checked else row_problem(kind, r)
            if why:  # skipped and listed, not the end of the run
                self.label[i] = f"unmodeled: line {i + 2}: {why}"
                continue
            by_sys.setdefault(r.get("system", ""), []).append(i)
        self.groups = []  # (GPU, row indices, price(cal) -> ms per row)
        for system, idx in by_sys.items():
            try:
                gpu = get_gpu(system)
            except InputError:
                for i in idx:
                    self.label[i] = f"unmodeled: unknown system {system!r}"
                continue
            price, lab = _PRED[kind]([rows[i] for i in idx], gpu)
            self.groups.append((gpu, np.array(idx), price))
            for j, i in enumerate(idx):
                self.label[i] = f"{gpu.id} {lab[j]}" if not lab[j].startswith("unmodeled") else lab[j]

    def predict(self, cal_for) -> tuple[np.ndarray, list[str]]:
        """predict's (latency per row, label per row) under `cal_for(gpu)`'s calibration."""
        pred = np.full(len(self.label), np.nan)
        for gpu, idx, price in self.groups:
            pred[idx] = price(cal_for(gpu))
        return pred, self.label


def engine_of(r: dict) -> str:
    """The engine a row's collector ran: a per-engine table's `framework`, TensorRT-LLM's otherwise
    (the kernel tables' own)."""
    return (r.get("framework") or "trtllm").strip().lower()


def gemm_row_kernel(r: dict) -> str | None:
    """The GEMM kernel family a GEMM row timed (cost.kernels.gemm_kernel's, or DeepGEMM's where the row
    names it), None for a dtype the tables do not price."""
    dt = r["gemm_dtype"]
    if dt not in GEMM_DTYPES:
        return None
    return GEMM_SOURCES.get(r.get("kernel_source", ""), gemm.gemm_kernel(GEMM_DTYPES[dt][0], dt))


def _gemm(rows, gpu):
    groups: dict[tuple, list[int]] = {}
    lab = [""] * len(rows)
    for i, r in enumerate(rows):
        if r.get("kernel_source") in GEMM_HOST_TIMED:
            lab[i] = f"unmodeled: {engine_of(r)} {r['kernel_source']} times host-side work, not the GEMM"
            continue
        groups.setdefault((r["gemm_dtype"], gemm_row_kernel(r), engine_of(r) if "framework" in r else ""), []).append(i)
    parts = []
    for (dt, kernel, engine), idx in groups.items():
        if kernel is None or not gpu.supports(GEMM_DTYPES[dt][0]):
            for i in idx:
                lab[i] = f"unmodeled: gemm dtype {dt} on {gpu.id}"
            continue
        math, ab, wb = GEMM_DTYPES[dt]
        sub = [rows[i] for i in idx]
        # vLLM's per-tensor FP8 rows time its per-token quantise kernel with the GEMM (the collector's layer forward,
        # activation_scheme "dynamic"): what it costs beyond the quantise pass gemm_time prices (gemm.vllm_token_quant)
        vq = np.array([r.get("kernel_source") in VLLM_TOKEN_QUANT for r in sub])
        parts.append((np.array(idx), _col(sub, "m"), _col(sub, "n"), _col(sub, "k"), math, ab, wb, kernel, vq))
        for i in idx:
            lab[i] = f"{engine} {dt} {kernel}" if engine else dt

    def price(cal: Calibration):
        out = np.full(len(rows), np.nan)
        for idx, m, n, k, math, ab, wb, kernel, vq in parts:
            t = gemm.gemm_time(m, n, k, gpu, cal, math=math, a_bytes=ab, w_bytes=wb, kernel=kernel)[0]
            if vq.any():
                t = t + np.where(vq, gemm.vllm_token_quant(m, k, gpu, cal), 0.0)
            out[idx] = t * 1e3
        return out
    return price, lab


_KV_BYTES = {"fp8": 1.0, "bfloat16": 2.0, "float16": 2.0, "nvfp4": DTYPES["nvfp4"].bytes_per_value()}


def _kv_bytes(name: str) -> float:
    return _KV_BYTES[name]  # row_problem refused any other name


# The kernel each engine's default backend runs for GQA attention on Hopper, as the per-engine tables name
# it (FlashAttention-3's, SGLang's and vLLM's, priced by its own rules: decode cost.mixers.GqaDecode, prefill at its
# own rates, cost.kernels.runs_fa3_prefill; Engine.attention_kernels would price another against TensorRT-LLM's);
# their other kernels (SGLang's Triton backend, vLLM's FlashAttention-4) are no engine's default there. SGLang's Triton
# backend runs where its default kernels take no head size (Engine.triton_attention): priced by its own rules
# (cost.kernels.triton_decode_split, triton_decode_grid, triton_prefill_compute), `triton` rows
ATTENTION_SOURCES = {"trtllm": "torch_flow", "sglang": "fa3", "vllm": "vllm_flash_attn_fa3"}
TRITON_SOURCE = ("sglang", "triton")


def _triton(rows) -> np.ndarray:
    """Per row: SGLang's Triton attention backend timed it (TRITON_SOURCE)."""
    return np.array([(engine_of(r), r.get("kernel_source")) == TRITON_SOURCE for r in rows])


def _engine_factor(rows, gpu, phase: str, price, lab: list[str], *, kv_fp8, fa3):
    """`price` (cal -> ms per row) with each per-engine row's time scaled by its engine's attention kernel
    against TensorRT-LLM's (Engine.attention_time_factor), and the labels by engine, and by kernel family where
    `price` prices the row as FlashAttention-3's (`fa3`, per row, as the price reads it: runs_fa3_decode,
    runs_fa3_prefill); a kernel that is not the engine's default is not priced. Rows without a `framework` column
    are the tables' own."""
    if not rows or "framework" not in rows[0]:
        return price, lab
    factor = np.empty(len(rows))
    for i, r in enumerate(rows):
        engine = engine_of(r)
        if ATTENTION_SOURCES.get(engine) != r.get("kernel_source") and (engine, r.get("kernel_source")) != TRITON_SOURCE:
            factor[i], lab[i] = np.nan, f"unmodeled: {engine} attention kernel {r.get('kernel_source')!r} (not its default on {gpu.family})"
            continue
        e = get_engine(engine)
        factor[i] = float(e.attention_time_factor(gpu.family, "gqa", phase, kv_fp8=bool(kv_fp8[i]), dec_tokens=float(r["batch_size"])))
        lab[i] = f"{engine} {lab[i]}" + (" triton" if r.get("kernel_source") == "triton" else " fa3" if fa3[i] else "")
    return (lambda cal: price(cal) * factor), lab


def _window(rows):
    """Each row's sliding window (0: full attention; tables without the column are full)."""
    return np.array([float(r.get("window_size") or 0) for r in rows])


def _decode(rows, gpu):
    B, held = _col(rows, "batch_size"), _col(rows, "isl") + _col(rows, "step")
    w = _window(rows)
    ctx = np.where(w > 0, np.minimum(held, w), held)  # a sliding window reads its last w keys
    H, KV, d = _col(rows, "num_heads"), _col(rows, "num_key_value_heads"), _col(rows, "head_dim")
    kvb = np.array([_kv_bytes(r["kv_cache_dtype"]) for r in rows])
    flops = 2.0 * B * H * ctx * 2 * d
    fp8 = np.array([r["kv_cache_dtype"] == "fp8" for r in rows])
    # the serving step's decode kernel (cost.mixers.GqaDecode), one token per sequence: per-engine rows (a framework
    # column) run their engine's, the tables' own TensorRT-LLM's
    k = GqaDecode(gpu, [get_engine(engine_of(r)) for r in rows], tokens=B, seqs=B, kv_heads=KV, heads=H, head_dim=d, keys=ctx,
                  ctx=held, window=w, kv_fp8=fp8, triton=_triton(rows))
    floor = np.broadcast_to(k.floor, B.shape)
    grid = tuple(np.broadcast_to(x, B.shape) for x in k.grid)

    def price(cal: Calibration):
        t = np.empty(len(rows))
        mmha, keys, items, fp8_math = k.priced(cal)
        nbytes = B * keys * KV * 2 * d * kvb + B * H * 2 * d * 2.0
        for flag in (False, True):
            m = fp8 == flag
            if m.any():
                t[m] = cost.attention_decode_time(flops[m], nbytes[m], gpu, cal, seq_heads=items[m], kv_fp8=flag, group=k.group[m],
                                                  split=k.merge[m], rope_fused=k.rope_fused[m], mmha=mmha[m], fa3=k.fa3[m],
                                                  fp8_math=fp8_math[m], floor_s=floor[m],
                                                  grid=(grid[0][m], grid[1][m]))[0]
        return t * 1e3
    return _engine_factor(rows, gpu, "decode", price, [f"kv {r['kv_cache_dtype']}" for r in rows], kv_fp8=fp8, fa3=k.fa3)


def _prefill(rows, gpu):
    B, S = _col(rows, "batch_size"), _col(rows, "isl")
    H, KV, d = _col(rows, "num_heads"), _col(rows, "num_key_value_heads"), _col(rows, "head_dim")
    kvb = np.array([_kv_bytes(r["kv_cache_dtype"]) for r in rows])
    w = _window(rows)
    # keys per query, causal: (S + 1) / 2, or with a sliding window of w < S the first w queries' and w each after
    keys = np.where((w > 0) & (w < S), (w * (w + 1) / 2 + (S - w) * w) / S, (S + 1) / 2)
    flops = 2.0 * B * H * S * keys * 2 * d
    nbytes = B * S * (KV * 2 * d * kvb + H * 2 * d * 2.0)
    # SGLang's Triton rows with an FP8 query (attn_dtype fp8: q, k and v cast to FP8) run a kernel of their own, not the
    # path serving runs on an FP8 cache (its BF16 query): TRITON_PREFILL_EFF's "fp8q", its matmuls on the BF16 peak
    triton = _triton(rows)
    fp8q = triton & np.array([r.get("attn_dtype") == "fp8" for r in rows])
    fp8 = np.array([r["kv_cache_dtype"] == "fp8" and gpu.supports("fp8") for r in rows]) & ~fp8q
    tri_s = np.full(len(rows), np.nan)  # NaN: not Triton (cost.attention_prefill_time)
    if triton.any():  # its whole and skipped tiles (cost.kernels.triton_prefill_compute), a prompt with no cached prefix
        tri_s[triton] = cost.triton_prefill_compute(S[triton], 0.0, w[triton], d[triton], gpu, qkv_d=2 * d[triton],
                                                    seq_heads=(B * H)[triton], fp8=fp8[triton], fp8_query=fp8q[triton])
    # the serving step's kernel: per-engine rows (a framework column) run their engine's, the tables' own TensorRT-LLM's
    names = [engine_of(r) for r in rows]
    runs = {n: cost.runs_fa3_prefill(get_engine(n), gpu) for n in set(names)}  # once per engine of the group
    fa3 = np.array([runs[n] for n in names]) & ~triton

    def price(cal: Calibration):
        out = np.empty(len(rows))
        for flag, kind in ((False, "bf16"), (True, "fp8")):
            m = fp8 == flag
            if m.any():
                t, _, _ = cost.attention_prefill_time(flops[m], nbytes[m], gpu, cal, math=kind, seq_heads=(B * H)[m],
                                                      keys=keys[m], scores=(B * H * S * keys)[m], fa3=fa3[m], triton_s=tri_s[m])
                out[m] = t * 1e3
        return out
    return _engine_factor(rows, gpu, "prefill", price, [f"kv {r['kv_cache_dtype']}" for r in rows], kv_fp8=fp8, fa3=fa3)


def own_ar_mode(r: dict) -> str | None:
    """How a per-engine table's all-reduce row ran its engine's own all-reduce (data/measurements/kernels_hopper/comm.csv.gz:
    each engine's AllReduce op as serving calls it, NCCL past the engine's limits): "graph" (replayed from a CUDA graph,
    TensorRT-LLM's rows and SGLang's / vLLM's `_graph` ones) or "eager"; None for NCCL's own rows and the kernel tables'."""
    if "framework" not in r or r["op_name"] != "all_reduce" or engine_of(r) == "nccl":
        return None
    return "eager" if (r.get("backend") or "").strip() == "eager" or r.get("kernel_source", "").endswith("_eager") else "graph"


# Kernels an eager all-reduce row's timed loop launches per call: aiconfigurator's collector times
# tensor_model_parallel_all_reduce(input_tensor.clone()) (collector/network/collect_all_reduce.py:595-640@095f58a), a clone
# and the all-reduce; the custom kernel's unregistered path copies the input into its IPC buffer before the kernel
# (ops.all_reduce with the rank's buffer, sglang/srt/distributed/device_communicators/custom_all_reduce.py:285-329@0.5.14,
# vLLM's the same code), one more pass over the message that the host does not dispatch on its own: a cudaMemcpyAsync the
# op's C++ issues on its stream (vLLM csrc/custom_all_reduce.cu all_reduce, reg_buffer; not mirrored here), a GPU copy with
# its own fixed cost (priced as a kernel's in _coll) but no eager launch of its own
EAGER_AR_LAUNCHES = 2.0


def _coll(rows, gpu):
    lab = [""] * len(rows)
    by_op: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        op = NCCL_OPS.get(r["op_name"])
        if op is None:
            lab[i] = f"unmodeled: collective {r['op_name']}"
            continue
        mode = own_ar_mode(r)
        key = (op, engine_of(r) if mode else None, mode)
        by_op.setdefault(key, []).append(i)
        lab[i] = f"{key[1]} {op} {mode}" if mode else f"{engine_of(r)} {op}" if "framework" in r else op
    # each group's rows in one call: the same values as one call a row (the formulas are per element). An engine's own
    # rows count allreduce_dtype's bytes, NCCL's nccl_dtype's; message_size counts elements per GPU (the collector's
    # torch.ones(shape) of that many, collect_all_reduce.py:69-75,168@095f58a)
    parts = [(op, get_engine(name) if name else None, mode, np.array(idx),
              np.array([float(rows[i]["message_size"]) * NCCL_BYTES.get(rows[i].get("allreduce_dtype") if mode else rows[i]["nccl_dtype"], 2)
                        for i in idx]), _col([rows[i] for i in idx], "num_gpus")) for (op, name, mode), idx in by_op.items()]

    def price(cal: Calibration):
        out = np.full(len(rows), np.nan)
        for op, engine, mode, idx, nbytes, n in parts:
            # an engine's rows: its own all-reduce where it runs one (Engine.own_allreduce), NCCL past its limits, as serving
            t = cost.collective_time(op, nbytes, n, gpu, cal, engine=engine)
            if mode == "eager":
                # the clone and the staging copy each read and write the message (memory-bound passes, each with a GPU
                # launch's fixed cost); the host launches the loop's two ops (EAGER_AR_LAUNCHES: the copy is issued inside
                # the all-reduce's) at the engine's eager cost (EngineCosts.eager_per_launch over the group's ranks), and
                # back-to-back calls overlap the host's launches with the GPU's work, so a call takes the longer of the two
                copies = 1.0 + engine.own_allreduce(nbytes, n, gpu.family)
                gpu_t = t + cost.elementwise_time(2.0 * nbytes * copies, copies, gpu, cal)[0]
                t = np.maximum(gpu_t, EAGER_AR_LAUNCHES * engine.costs(cal).eager_per_launch(n))
            out[idx] = t * 1e3
        return out
    return price, lab


def routing_alpha(distribution: str) -> float | None:
    """The power-law exponent of a MoE table row's routing (`balanced`: 0, uniform; aiconfigurator's
    `power_law_1.01`: 1.01), or None for one this model does not price (EPLB-rebalanced, sampled)."""
    d = (distribution or "balanced").strip()
    if d in ("balanced", "uniform"):
        return 0.0
    m = re.fullmatch(r"power_law_(\d+(\.\d+)?)", d)
    return float(m.group(1)) if m and 0.0 < float(m.group(1)) <= 3.0 else None


def _moe(rows, gpu):
    lab = [""] * len(rows)
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        why = moe_row_problem(r)
        if why:
            lab[i] = f"unmodeled: {why}"
            continue
        key = (r["moe_dtype"], int(r["hidden_size"]), int(r["inter_size"]), int(r["num_experts"]), int(r["topk"]),
               "nongated" not in r.get("kernel_source", ""), routing_alpha(r.get("distribution", "balanced")), engine_of(r), moe_row_family(r))
        groups.setdefault(key, []).append(i)
    parts = []
    for (dt, h, inter, E, topk, gated, alpha, engine, fam), idx in groups.items():
        sub = [rows[i] for i in idx]
        m = ModelSpec("kernel", h, 1, ((Layer(NoMixer(), MoE(experts=E, top_k=topk, expert_inter=inter, gated=gated)), 1),))
        parts.append((np.array(idx), m, moe_row_precision(dt, fam), alpha, fam, Plan(ep=_col(sub, "moe_ep_size"), moe_tp=_col(sub, "moe_tp_size")),
                      Batch(pf_tokens=_col(sub, "num_tokens"), pf_seqs=1.0)))
        for i in idx:
            # (a per-engine table's row of the tables' own kernel: TensorRT-LLM's non-gated CUTLASS MoE)
            lab[i] = f"{engine} {dt} {fam}" if fam else f"{engine} {dt} tables_moe" if "framework" in rows[i] else dt

    def price(cal: Calibration):
        out = np.full(len(rows), np.nan)
        for idx, m, prec, alpha, fam, sh, b in parts:
            cal_row = replace(cal, moe_routing_alpha=alpha)  # each row is priced at the routing it was measured with
            ops = layer_ops(m, m.groups[0][0], 1.0, gpu, cal_row, prec=prec, sh=sh, b=b, prefix="moe", moe_kernel=fam)
            out[idx] = sum(np.broadcast_to(o.time, (len(idx),)) for o in ops if o.role in MOE_BLOCK) * 1e3
        return out
    return price, lab


def moe_row_family(r: dict) -> str | None:
    """The MoE kernel family a MoE row timed: its kernel_source's in a per-engine table (MOE_SOURCES),
    None (the kernel tables' own) in TensorRT-LLM's tables."""
    return MOE_SOURCES.get(r.get("kernel_source", "")) if "framework" in r else None


def moe_row_precision(dtype: str, fam: str | None) -> Precision:
    """The precision a MoE row's kernel runs: its dtype's (MOE_PRECISION), or the one its family runs it at (MOE_RUNS_AS)."""
    return MOE_RUNS_AS.get((fam, dtype), MOE_PRECISION[dtype])


def moe_row_kernel(r: dict, gpu) -> tuple[str | None, str]:
    """(MoE kernel family, GEMM kernel family of its weights) whose rates a MoE row informs on `gpu`: the
    keys of Calibration.moe_kernel (a family None: moe_eff / moe_overhead_s)."""
    p = executable(moe_row_precision(r["moe_dtype"], moe_row_family(r)), gpu)[0]  # as layer_ops prices it
    return moe_row_family(r), gemm.gemm_kernel(gemm_math(p.weight, p.activation, gpu), p.weight.name, fp4_math=gpu.supports("fp4"))


def moe_row_problem(r: dict) -> str | None:
    """Why a MoE row is not priced (a dtype, routing, op or kernel this model does not price), or None."""
    if r["moe_dtype"] not in MOE_PRECISION:
        return f"moe dtype {r['moe_dtype']}"
    if routing_alpha(r.get("distribution", "balanced")) is None:
        return f"routing distribution {r.get('distribution')!r} (balanced or power_law_<alpha>)"
    if (r.get("op_name") or "moe") != "moe":
        # wide-EP tables: the EP group's tokens with a simulated dispatch, per rank (rank0_num_tokens)
        return f"{engine_of(r)} {r['op_name']} (wide-EP tables: the EP group's tokens, not one GPU's MoE block)"
    if "framework" in r and r.get("kernel_source", "") not in MOE_SOURCES:
        return f"{engine_of(r)} MoE kernel {r.get('kernel_source')!r}"
    if (r.get("kernel_source"), r["moe_dtype"]) in MOE_UNTIMED:
        return f"{engine_of(r)} {r['kernel_source']} {r['moe_dtype']} runs ~3.5x TensorRT-LLM's CUTLASS MoE on the same shapes, not a kernel rate"
    if (r.get("kernel_source") == "sglang_fused_moe_triton" and r["moe_dtype"] in ("bfloat16", "fp8_block") and int(r.get("moe_ep_size") or 1) > 1
            and tuple(int(r[c]) for c in ("hidden_size", "inter_size", "topk", "num_experts")) in MOE_EXPERT0_EP):
        return f"{engine_of(r)} {r['kernel_source']} {r['moe_dtype']} under EP times remote assignments on expert 0 (its collector's raw-kernel path), not serving's work"
    return None


# The bytes per hidden element an all-to-all row's payload puts on the wire: a dispatch in its comm_dtype (FP8 with its
# 1x128 FP32 scales; SGLang's DeepEP rows, which record none, dispatch FP8: DeepEP's low-latency test sends FP8, the
# table's bandwidth column is its FP8 bytes over the time, and its normal test times FP8 first on an SM90 build,
# ai-dynamo/aiconfigurator collector/wideep/sglang/collect_deepep_normal.py:285-291@095f58a; vLLM's "default" is the
# model's BF16); a combine returns BF16 sums
EP_PAYLOAD = {"": DTYPES["fp8_block"].bytes_per_value(), "fp8": DTYPES["fp8_block"].bytes_per_value(), "bfloat16": 2.0,
              "default": 2.0, "nvfp4": DTYPES["nvfp4"].bytes_per_value()}


def _ep_comm(rows, gpu):
    """Each engine's expert-parallel dispatch and combine, priced as DeepEP's kernels in the row's mode (cost.ffns.deepep_time)."""
    lab = [""] * len(rows)
    idx = []
    for i, r in enumerate(rows):
        eng, mode, phase, dt = engine_of(r), r["mode"], r["phase"], r.get("comm_dtype", "")
        if mode not in DEEPEP_MODES:
            lab[i] = f"unmodeled: {eng} all-to-all mode {mode!r} (DeepEP's {' or '.join(DEEPEP_MODES)})"
        elif phase not in ("dispatch", "combine") or dt not in EP_PAYLOAD:
            lab[i] = f"unmodeled: {eng} {mode} {phase} {dt!r} (a dispatch or combine of {', '.join(d or 'FP8' for d in EP_PAYLOAD)})"
        elif float(r["ep_size"]) > gpu.scale_up_domain:
            lab[i] = f"unmodeled: {eng} EP {r['ep_size']} beyond one NVLink domain of {gpu.scale_up_domain}"
        else:
            idx.append(i)
            lab[i] = f"{eng} deepep {mode} {phase}"
    sub = [rows[i] for i in idx]
    cols = {c: _col(sub, c) for c in ("num_tokens", "hidden_size", "topk", "num_experts", "ep_size")}
    sms = np.array([float(r.get("sms") or 0) for r in sub])
    parts = [(np.array([j for j, r in enumerate(sub) if (r["mode"], r["phase"]) == (m, p)]), m, p) for m in DEEPEP_MODES for p in ("dispatch", "combine")]
    payload = np.array([EP_PAYLOAD[r.get("comm_dtype", "") if r["phase"] == "dispatch" else "bfloat16"] for r in sub])
    where = np.array(idx, dtype=int)

    def price(cal: Calibration):
        out = np.full(len(rows), np.nan)
        for j, m, p in parts:
            if len(j):
                out[where[j]] = deepep_time(m, p, cols["num_tokens"][j], gpu, cal, hidden=cols["hidden_size"][j], top_k=cols["topk"][j],
                                            experts=cols["num_experts"][j], ep=cols["ep_size"][j], payload_b=payload[j], sms=sms[j]) * 1e3
        return out
    return price, lab


_PRED = {"gemm": _gemm, "decode_attention": _decode, "prefill_attention": _prefill, "collectives": _coll, "moe": _moe, "ep_comm": _ep_comm}
