"""Measure kernels on the local device (`llm-codesign bench`), written in the columns of the kernel
tables shipped in data/measurements/kernels, so `validate --kernels` and `calibrate --kernels` read them
as they read the published ones: predict them, or re-fit a GPU family on them.

torch (the `measure` extra, pinned) is imported only here. On a CUDA GPU each time is the median of
`repeat` calls timed with CUDA events after `warmup` untimed ones; on the CPU, wall-clock time of
each call (it checks the pipeline end to end; it does not calibrate a GPU). GEMMs run as torch.matmul
(BF16) or torch._scaled_mm (FP8, per-tensor scales); decode attention as
scaled_dot_product_attention over a BF16 KV cache, one query token per sequence.
"""
from __future__ import annotations

import re
import statistics
import time

from llm_codesign.errors import InputError, MissingInput
from llm_codesign.spec.hardware import catalog, get_gpu
from llm_codesign.spec.kinds import GQA, DenseFfn, MoE, Recurrent
from llm_codesign.spec.model import ModelSpec

GEMM_COLUMNS = ("system", "trtllm_version", "gemm_dtype", "m", "n", "k", "latency_ms")
DECODE_COLUMNS = ("system", "trtllm_version", "batch_size", "isl", "step", "num_heads", "num_key_value_heads",
                  "head_dim", "attn_dtype", "kv_cache_dtype", "latency_ms")
GEMM_DTYPES = ("bfloat16", "fp8")


def _torch():
    try:
        import torch
    except ImportError:
        raise InputError("bench", "torch", 'the measure extra installed: pip install "llm-codesign[measure]" (torch==2.13.0)') from None
    return torch


# what a CPU run is for: bench measures GPUs, and rows timed on the CPU carry a GPU's label (--system)
CPU_ONLY = "bench measures GPUs; --device cpu --system GPU_ID only for a smoke test (CPU timings under that GPU's label)"


def device_of(torch, device: str) -> str:
    """The device measured: CUDA (a ROCm build of torch answers as cuda too) where torch sees one; `auto` without one is
    refused first, as what it is, not left to a CPU run that then asked for "--system" (newc5 #22)."""
    if device in ("auto", "cuda") and not torch.cuda.is_available():
        raise InputError("device", device, f"no CUDA or ROCm device found (torch {torch.__version__} sees none): {CPU_ONLY}")
    return "cuda" if device == "auto" else device


def system_for(device_name: str | None, system: str | None) -> str:
    """The catalog id that labels the rows: `system` when given, else the CUDA device's name
    ("NVIDIA H100 80GB HBM3" -> h100). Variants the catalog does not hold (PCIe, NVL boards) and
    the CPU are not guessed: they need an explicit `--system`."""
    if system:
        return get_gpu(system).id
    if device_name is None:
        raise MissingInput("system", "--device cpu labels its rows with --system, a catalog GPU id (" + ", ".join(catalog()) + "): " + CPU_ONLY)
    upper = device_name.upper()
    if not re.search(r"PCIE|\bNVL\b", upper):
        for token in re.findall(r"[A-Z]+\d+[A-Z]*", upper):
            try:
                return get_gpu(token).id
            except InputError:
                continue
    raise InputError("system", device_name, "a catalog GPU id for this device, set with --system (" + ", ".join(catalog()) + ")")


def linear_shapes(model: ModelSpec, tp: int) -> list[tuple[int, int]]:
    """Distinct (N, K) of one TP rank's dense projections: attention QKV and output (or a recurrent
    mixer's input and output projections), dense FFN and shared experts split by TP, one routed
    expert's FFN whole (as a plain GEMM), and the LM head."""
    h, out = model.hidden, set()
    for layer, _ in model.groups:
        a, f = layer.attn, layer.ffn
        if isinstance(a, GQA):
            q = a.heads * a.head_dim * (2 if a.out_gate else 1)
            out |= {((q + 2 * a.kv_heads * a.head_dim) // tp, h), (h, a.heads * a.v_head_dim // tp)}
        elif isinstance(a, Recurrent):
            out |= {(a.in_proj_width // tp, h), (h, a.value_width // tp)}
        widths = ((f.inter, tp),) if isinstance(f, DenseFfn) else ((f.shared_inter, tp), (f.expert_inter, 1)) if isinstance(f, MoE) else ()
        for width, part in widths:
            if width:
                out |= {((f.mats - 1) * width // part, h), (h, width // part)}
    out.add((model.vocab // tp, h))
    return sorted(out)


def _timer(torch, dev: str, make, *, warmup: int, repeat: int, what: str) -> float:
    """Median latency in ms of the call `make()` sets up (allocating its inputs); a kernel or buffer
    the device refuses (out of memory, unsupported) is a one-line error naming the shape."""
    try:
        return _median_ms(torch, dev, make(), warmup, repeat)
    except RuntimeError as e:  # torch.OutOfMemoryError and kernel errors are RuntimeErrors
        raise InputError("shape", what, f"a shape this device runs ({str(e).splitlines()[0][:120]})") from None


def _median_ms(torch, dev: str, fn, warmup: int, repeat: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    if dev == "cuda":
        torch.cuda.synchronize()
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def free_bytes(torch, dev: str) -> float:
    """Memory the device has free now: CUDA's own count, or the host's available pages."""
    if dev == "cuda":
        return float(torch.cuda.mem_get_info()[0])
    import os

    return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _prepare(device: str, system: str | None, field: str, what: str, need: float, *, fp8: bool = False):
    """torch, the device and the rows' label, after every check of the input. On an explicit CPU the
    checks run before torch is imported: bad input reads the same with or without the measure extra."""
    if device not in ("auto", "cuda", "cpu"):
        raise InputError("device", device, "auto, cuda or cpu")
    torch = None if device == "cpu" else _torch()
    dev = device_of(torch, device) if torch else "cpu"
    label = system_for(torch.cuda.get_device_name() if dev == "cuda" else None, system)
    if fp8 and (dev != "cuda" or torch.cuda.get_device_capability() < (8, 9)):
        raise InputError("dtype", "fp8", "bfloat16 on this device: FP8 GEMMs need a CUDA GPU of compute capability 8.9 or newer")
    check_fits(field, what, need, torch, dev)
    return torch or _torch(), dev, label


def check_fits(field: str, what: str, need: float, torch, dev: str) -> None:
    """Refuses, before allocating, a benchmark whose tensors would take over half the free memory
    (the rest for the kernel's workspace and the allocator), instead of being killed mid-run."""
    free = free_bytes(torch, dev)
    if need > 0.5 * free:
        raise InputError(field, what, f"sizes whose tensors fit on this {dev} device ({need / 1e9:.1f} GB needed, "
                         f"half of {free / 1e9:.1f} GB free allowed)")


def bench_gemm(ms, nks, dtype: str, device: str = "auto", system: str | None = None, *, warmup: int = 3, repeat: int = 10) -> list[dict]:
    if dtype not in GEMM_DTYPES:
        raise InputError("dtype", dtype, " or ".join(GEMM_DTYPES))
    fp8 = dtype == "fp8"
    # A, B and C in BF16 (FP8 adds byte copies of A and B) for the largest GEMM
    m_, (n_, k_) = max(ms), max(nks, key=lambda t: t[0] * t[1])
    torch, dev, label = _prepare(device, system, "nk", f"{m_}x{n_}x{k_}",
                                 (2 + fp8) * (m_ * k_ + k_ * n_) + 2 * m_ * n_ + 2 * max(ms) * max(t[0] for t in nks), fp8=fp8)
    rows = []
    for n, k in nks:
        for m in ms:
            if fp8 and (n % 16 or k % 16):  # torch._scaled_mm: K and N multiples of 16 (M free)
                raise InputError("shape", f"{m}x{n}x{k}", "N and K multiples of 16 for FP8 (torch._scaled_mm)")

            def make(m=m, n=n, k=k):
                a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                if not fp8:
                    b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
                    return lambda: a @ b
                a8 = a.to(torch.float8_e4m3fn)
                b8 = torch.randn(n, k, device=dev, dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()  # column-major B
                one = torch.ones((), device=dev, dtype=torch.float32)
                return lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            rows.append({"system": label, "trtllm_version": f"torch-{torch.__version__}", "gemm_dtype": dtype,
                         "m": m, "n": n, "k": k, "latency_ms": _timer(torch, dev, make, warmup=warmup, repeat=repeat, what=f"{m}x{n}x{k}")})
    return rows


def bench_decode(batches, contexts, heads: int, *, kv_heads: int, head_dim: int, device: str = "auto",
                 system: str | None = None, warmup: int = 3, repeat: int = 10) -> list[dict]:
    if heads <= 0 or kv_heads <= 0 or heads % kv_heads:
        raise InputError("kv_heads", kv_heads, f"a positive divisor of the query heads ({heads})")
    # the query and the K and V caches of the largest batch and context, BF16
    B_, c_ = max(batches), max(contexts)
    torch, dev, label = _prepare(device, system, "batch", f"batch {B_} x context {c_}", 2.0 * B_ * head_dim * (heads + 2 * kv_heads * c_))
    rows = []
    for ctx in contexts:
        for B in batches:

            def make(B=B, ctx=ctx):
                q = torch.randn(B, heads, 1, head_dim, device=dev, dtype=torch.bfloat16)
                kv = torch.randn(B, kv_heads, ctx, head_dim, device=dev, dtype=torch.bfloat16)
                return lambda: torch.nn.functional.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
            rows.append({"system": label, "trtllm_version": f"torch-{torch.__version__}", "batch_size": B, "isl": ctx, "step": 0,
                         "num_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim, "attn_dtype": "bfloat16",
                         "kv_cache_dtype": "bfloat16", "latency_ms": _timer(torch, dev, make, warmup=warmup, repeat=repeat,
                                                                                what=f"batch {B} x context {ctx}")})
    return rows
