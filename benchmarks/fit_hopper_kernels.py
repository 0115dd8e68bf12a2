"""The kernel families per engine on Hopper, fitted on the H100 per-engine kernel tables (issue 39).

Three fits, each through measure.calibrate (fit_kind / fit_kernels), the code `calibrate --kernels` runs:

1. The kernel tables' own MoE pair (moe_eff, moe_overhead_s) of every GPU family, on kernels/moe.csv.gz
   (TensorRT-LLM's rows: A100, H100 non-gated, B200 W4A8), re-fitted since the priced MoE block is the
   block the tables time (top-k, permutation, expert GEMMs and their activation; not the layer's norms).
   Each GPU family's is kept ([ampere], [hopper]) but Blackwell's: on the block where TRTLLM-Gen's FC1 gathers and
   activates (cost.ffns.FC1_FUSED) its re-fit moves the fixed cost to 7 us to cover the 65-4096-token rows' bias and
   prices the table (19.6 against 17.5%) and the serving campaigns out of sample worse than the three it keeps
   (fitted.toml's [blackwell] note).
2. Each Hopper MoE kernel family's pair (moe_kernel_eff: its share of the dense peak; moe_kernel_overhead_s:
   its fixed cost per grouped-GEMM launch; moe_kernel_route_s: its time per assignment to another rank's expert;
   for TensorRT-LLM's CUTLASS MoE moe_kernel_expert_s, its time per launch per expert the rank holds: where that
   takes the whole fixed cost, onto its bound, the launch's own is held at its dense kernel's)
   per GEMM kernel family of the weights, on the rows of kernels_hopper/moe.csv.gz that time it
   (kernel_tables.MOE_SOURCES), each from fit 1's Hopper three (measure.calibrate.moe_parts).
   A pair whose fit lands on a bound of its range is not kept (a missing mechanism or rows that do not
   time a kernel, not a rate): it runs at the tables' pair.
3. DeepGEMM's dense block-FP8 GEMM (gemm_eff/_k_half/_overhead_fp8_deepgemm), SGLang's on Hopper, on the
   SGLang DeepGEMM rows of kernels_hopper/gemm.csv.gz (in place of the DeepGEMM README's 18 H800 rows).
4. CUTLASS's per-tensor FP8 scaled-mm (gemm_eff/_k_half/_overhead_fp8_cutlass), SGLang's and vLLM's per-tensor FP8
   GEMM on Hopper, on the SGLang sgl_kernel fp8_scaled_mm rows of kernels_hopper/gemm.csv.gz (vLLM's
   CutlassFP8ScaledMM rows, the same kernel lineage, priced out of sample).
5. FlashAttention-3's decode on an FP8 cache (attn_decode_bw_eff_fa3_fp8), SGLang's and vLLM's GQA decode on Hopper
   (cost.kernels.runs_fa3_decode), on both engines' FA3 FP8 rows of kernels_hopper/decode_attention.csv.gz (the same
   kernel), with each engine's fit priced on the other's rows out of sample.
6. FlashAttention-3's prefill (attn_prefill_eff_fa3, attn_prefill_eff_fa3_fp8, attn_prefill_overhead_fa3_s), SGLang's and
   vLLM's GQA prefill on Hopper (cost.kernels.runs_fa3_prefill), on both engines' FA3 rows of
   kernels_hopper/prefill_attention.csv.gz, with each engine's fit priced on the other's rows and a fit on half the shapes
   priced on the other half, out of sample. No earlier fit moves a prefill parameter, so it runs alone too.
7. vLLM's dynamic per-token FP8 quantise kernel's time per token (quant_token_s_vllm; cost.gemm.vllm_token_quant, which also
   prices its second read of each row), on vLLM's CutlassFP8ScaledMM rows of kernels_hopper/gemm.csv.gz, CUTLASS's values
   (fit 4's, SGLang's rows) held; a fit on alternate rows priced on the others. Runs alone (--vllm-quant-only); in the full
   run it is not chained (fit 4's values there are the run's own).

    python benchmarks/fit_hopper_kernels.py          # figures and the TOML for data/calibration/fitted.toml (~10 min)
    python benchmarks/fit_hopper_kernels.py --moe-only marlin marlin_fp4 --holdout   # fit 2 alone for Marlin's MoE (INT4,
                                                     # MXFP4), each also fitted on half the token counts, priced on the rest
    python benchmarks/fit_hopper_kernels.py --moe-only cutlass sglang_triton   # fit 2 alone, on the bundled Hopper
                                                     # profile's tables' three, for the MoE kernel families named
    python benchmarks/fit_hopper_kernels.py --moe-only sglang_triton --holdout   # SGLang's Triton MoE: its BF16 pair fitted
                                                     # on its BF16 rows and its MXFP4 ones (upcast at load: MOE_RUNS_AS)
    python benchmarks/fit_hopper_kernels.py --fa3-prefill-only   # fit 6 alone, from the bundled Hopper profile (seconds)
    python benchmarks/fit_hopper_kernels.py --vllm-quant-only    # fit 7 alone, from the bundled Hopper profile (seconds)
"""
from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from llm_codesign.cost.calibration import KERNEL_KEYED, calibration_for
from llm_codesign.measure.calibrate import PARAMS, fit_kernels, fit_kind, moe_parts
from llm_codesign.measure.kernel_tables import ATTENTION_SOURCES, moe_row_family, predict, read_csv
from llm_codesign.measure.stats import error_stats
from llm_codesign.spec.hardware import get_gpu

DEEPGEMM = {"gemm_eff_fp8_deepgemm": (0.2, 1.0), "gemm_k_half_fp8_deepgemm": (1.0, 4096.0), "gemm_overhead_fp8_deepgemm_s": (1e-7, 1e-4)}
CUTLASS_FP8 = {p: b for p, b in PARAMS["gemm"].items() if p.endswith(("_fp8_cutlass", "_fp8_cutlass_s"))}
# its share of HBM bandwidth on an FP8 cache, the range default.toml states (fitted here only: the kernel tables time no FA3 rows)
FA3_FP8 = {"attn_decode_bw_eff_fa3_fp8": (0.2, 1.0)}
# FlashAttention-3's prefill: its matmuls' shares of the BF16 and FP8 peaks and the op's fixed cost, the ranges default.toml states
# vLLM's dynamic per-token FP8 quantise kernel's time per token (one CTA a token; cost.gemm.vllm_token_quant), the range
# default.toml states
VLLM_QUANT = {"quant_token_s_vllm": (1e-10, 2e-8)}
FA3_PREFILL = {"attn_prefill_eff_fa3": (0.3, 1.0), "attn_prefill_eff_fa3_fp8": (0.2, 1.0), "attn_prefill_overhead_fa3_s": (1e-6, 1e-4)}


def _line(r: dict) -> str:
    bounds = f"; ON A BOUND: {', '.join(r['at_bounds'])}" if r["at_bounds"] else ""
    return (f"{r['family']:9s} {r['kind']:32s} {r['rows']:6d} rows: median APE {r['start_median_ape']:5.1f} -> {r['median_ape']:5.1f}% "
            f"(p90 {r['p90_ape']:.1f}, signed {r['signed_median_pe']:+.1f}){bounds}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moe-only", nargs="+", metavar="FAMILY", help="fit 2 alone for these MoE kernel families (spec.engines.MOE_KERNELS)")
    ap.add_argument("--holdout", action="store_true", help="fit 2: each family also fitted on alternate token counts, priced on the rest")
    ap.add_argument("--fa3-prefill-only", action="store_true", help="fit 6 alone, from the bundled Hopper profile")
    ap.add_argument("--vllm-quant-only", action="store_true", help="fit 7 alone, from the bundled Hopper profile")
    args = ap.parse_args()
    toml: dict[str, list[str]] = {}
    if args.vllm_quant_only:
        hopper = _vllm_quant(calibration_for(get_gpu("h100_sxm")))
        print("\nTOML:", "[hopper]", *(f"{p} = {hopper.param(p):.6g}" for p in VLLM_QUANT), sep="\n")
        return
    if args.fa3_prefill_only:
        hopper = _fa3_prefill(calibration_for(get_gpu("h100_sxm")))
        print("\nTOML:", "[hopper]", *(f"{p} = {hopper.param(p):.6g}" for p in FA3_PREFILL), sep="\n")
        return
    if args.moe_only:
        hopper = calibration_for(get_gpu("h100_sxm"))  # the bundled profile's tables' three (fit 1's)
    else:
        print("1. the kernel tables' MoE pair, per GPU family (kernels/moe.csv.gz)")
        fams, report = fit_kernels({"moe": read_csv("moe")[1]})
        for r in report:
            print("  ", _line(r))
        for fam, c in sorted(fams.items()):
            toml[fam] = [f"{p} = {c.param(p):.6g}" for p in ("moe_eff", "moe_overhead_s", "moe_route_s")]
        hopper = fams["hopper"]

    print("2. the Hopper MoE kernel families (kernels_hopper/moe.csv.gz)")
    # each family from the tables' three (fit 1's), not from values a previous run left in the profile
    hopper = replace(hopper, **dict.fromkeys(KERNEL_KEYED, ()))
    kept = []
    for params, part in moe_parts(read_csv("hopper/moe")[1], hopper):
        if params is None or (args.moe_only and moe_row_family(part[0]) not in args.moe_only):
            continue  # (the per-engine table's rows of the tables' own kernels: fit 1's three price them)
        cal, r = fit_kind("moe", part, hopper, "hopper", params=params)
        print("  ", _line(r))
        if args.holdout:
            _moe_holdout(part, hopper, params)
        pair = r["kind"].split()[1]
        fixed = f"moe_kernel_overhead_s.{pair}"
        if r["at_bounds"] == [fixed] and f"moe_kernel_expert_s.{pair}" in params:
            # the time per expert the rank holds took the whole fixed cost: the launch's own held at its dense
            # kernel's (the same CUTLASS main loop's launch, gemm_overhead), the other three fitted
            held = hopper.with_param(fixed, hopper.gemm_overhead(pair.split(".")[1]))
            cal, r = fit_kind("moe", part, held, "hopper", params={k: v for k, v in params.items() if k != fixed})
            print("   fixed cost held at the dense kernel's:", _line(r))
        print("      " + ", ".join(f"{t} {cal.param(f'{t}.{pair}'):.4g}" for t in KERNEL_KEYED))
        if not r["at_bounds"]:
            kept.append(pair)
            for t in KERNEL_KEYED:
                # a value its rows do not inform (left at the tables' by the fit: vLLM's Triton block FP8 runs without EP) is not written
                if cal.param(f"{t}.{pair}") != hopper.param(f"{t}.{pair}"):
                    hopper = hopper.with_param(f"{t}.{pair}", cal.param(f"{t}.{pair}"))

    if args.moe_only:
        _moe_toml(hopper, kept)
        return
    print("3. DeepGEMM's dense block-FP8 GEMM (SGLang's rows of kernels_hopper/gemm.csv.gz)")
    rows = [r for r in read_csv("hopper/gemm")[1] if r["kernel_source"] == "sglang_deepgemm_gemm_nt_f8f8bf16"]
    hopper, r = fit_kind("gemm", rows, hopper, "hopper", params=DEEPGEMM)
    print("  ", _line(r))
    toml["hopper"] += [f"{p} = {hopper.param(p):.6g}" for p in DEEPGEMM]
    base = calibration_for(get_gpu("h100_sxm"))
    print(f"   (bundled: eff {base.gemm_eff_fp8_deepgemm}, k_half {base.gemm_k_half_fp8_deepgemm}, fixed {base.gemm_overhead_fp8_deepgemm_s})")

    print("4. CUTLASS's per-tensor FP8 scaled-mm (SGLang's sgl_kernel fp8_scaled_mm rows of kernels_hopper/gemm.csv.gz)")
    per_tensor = [r for r in read_csv("hopper/gemm")[1] if r["gemm_dtype"] == "fp8"]
    hopper, r = fit_kind("gemm", [r for r in per_tensor if r["kernel_source"] == "sglang_sgl_kernel_fp8_scaled_mm"], hopper, "hopper",
                         params=CUTLASS_FP8)
    print("  ", _line(r))
    vllm = [r for r in per_tensor if r["kernel_source"] == "CutlassFP8ScaledMMLinearKernel"]
    s = error_stats(predict("gemm", vllm, lambda g: hopper)[0], np.array([float(r["latency_ms"]) for r in vllm]))
    print(f"   vLLM's CutlassFP8ScaledMM rows, out of sample: median APE {s['median_ape']:.1f}% (p90 {s['p90_ape']:.1f}, "
          f"signed {s['signed_median_pe']:+.1f}), {s['n']} rows")
    toml["hopper"] += [f"{p} = {hopper.param(p):.6g}" for p in CUTLASS_FP8]

    print("5. FlashAttention-3's decode on an FP8 cache (SGLang's and vLLM's FA3 rows of kernels_hopper/decode_attention.csv.gz)")
    fa3 = {e: [r for r in read_csv("hopper/decode_attention")[1] if r["framework"] == e and r["kv_cache_dtype"] == "fp8"
               and r["kernel_source"] == ATTENTION_SOURCES[e]] for e in ("sglang", "vllm")}
    for e, other in (("sglang", "vllm"), ("vllm", "sglang")):
        cal, r = fit_kind("decode_attention", fa3[e], hopper, "hopper", params=FA3_FP8)
        held = error_stats(predict("decode_attention", fa3[other], lambda g, c=cal: c)[0], np.array([float(x["latency_ms"]) for x in fa3[other]]))
        print(f"   {e} alone: {cal.attn_decode_bw_eff_fa3_fp8:.3f}, {_line(r)}; {other}'s rows out of sample: median APE "
              f"{held['median_ape']:.1f}% (p90 {held['p90_ape']:.1f}, signed {held['signed_median_pe']:+.1f})")
    hopper, r = fit_kind("decode_attention", fa3["sglang"] + fa3["vllm"], hopper, "hopper", params=FA3_FP8)
    print("  ", _line(r))
    toml["hopper"] += [f"{p} = {hopper.param(p):.6g}" for p in FA3_FP8]

    hopper = _fa3_prefill(hopper)
    toml["hopper"] += [f"{p} = {hopper.param(p):.6g}" for p in FA3_PREFILL]

    print("\nTOML:")
    for fam, lines in toml.items():
        print(f"[{fam}]", *lines, sep="\n")
    _moe_toml(hopper, kept)


def _fa3_prefill(hopper):
    """Fit 6: FlashAttention-3's prefill on both engines' FA3 rows, with its out-of-sample checks; `hopper` with the fit."""
    print("6. FlashAttention-3's prefill (SGLang's and vLLM's FA3 rows of kernels_hopper/prefill_attention.csv.gz)")
    table = read_csv("hopper/prefill_attention")[1]
    fa3 = {e: [r for r in table if r["framework"] == e and r["kernel_source"] == ATTENTION_SOURCES[e]] for e in ("sglang", "vllm")}

    def held(cal, rows, what):
        for kv in ("bfloat16", "fp8"):
            sub = [r for r in rows if r["kv_cache_dtype"] == kv]
            s = error_stats(predict("prefill_attention", sub, lambda g: cal)[0], np.array([float(r["latency_ms"]) for r in sub]))
            print(f"      {what} {kv}: median APE {s['median_ape']:.1f}% (p90 {s['p90_ape']:.1f}, signed {s['signed_median_pe']:+.1f}), "
                  f"{s['n']} rows")

    def vals(cal):
        return ", ".join(f"{p} {cal.param(p):.4g}" for p in FA3_PREFILL)

    for e, other in (("sglang", "vllm"), ("vllm", "sglang")):
        cal, r = fit_kind("prefill_attention", fa3[e], hopper, "hopper", params=FA3_PREFILL)
        print(f"   {e} alone: {vals(cal)}; {_line(r)}")
        held(cal, fa3[other], f"{other}'s rows, out of sample,")
    # half the shapes (every other shape, the engines' rows of one shape together) against the other half
    both = fa3["sglang"] + fa3["vllm"]
    shapes = sorted({_shape(r) for r in both})
    half = set(shapes[::2])
    for name, fit_on, price_on in (("even", [r for r in both if _shape(r) in half], [r for r in both if _shape(r) not in half]),
                                   ("odd", [r for r in both if _shape(r) not in half], [r for r in both if _shape(r) in half])):
        cal, r = fit_kind("prefill_attention", fit_on, hopper, "hopper", params=FA3_PREFILL)
        print(f"   {name} half of the {len(shapes)} shapes: {vals(cal)}; {_line(r)}")
        for e in ("sglang", "vllm"):
            held(cal, [x for x in price_on if x["framework"] == e], f"the other half's {e} rows, out of sample,")
    hopper, r = fit_kind("prefill_attention", both, hopper, "hopper", params=FA3_PREFILL)
    print(f"   both: {vals(hopper)}; {_line(r)}")
    for e in ("sglang", "vllm"):
        held(hopper, fa3[e], f"{e}'s rows, in sample,")
    return hopper


def _moe_holdout(part, start, params) -> None:
    """Out of sample for a MoE kernel family's fit: fitted on alternate token counts of its rows (the table's 27 counts, 1 to
    16,384), priced on the other counts, each engine's rows apart."""
    counts = sorted({int(r["num_tokens"]) for r in part})
    for h in (0, 1):
        mine = set(counts[h::2])
        cal, r = fit_kind("moe", [x for x in part if int(x["num_tokens"]) in mine], start, "hopper", params=params)
        for e in sorted({x["framework"] for x in part}):
            held = [x for x in part if int(x["num_tokens"]) not in mine and x["framework"] == e]
            s = error_stats(predict("moe", held, lambda g, cal=cal: cal)[0], np.array([float(x["latency_ms"]) for x in held]))
            print(f"      half {h} ({r['median_ape']:.1f}% in sample) -> {e}'s other counts, out of sample: median APE "
                  f"{s['median_ape']:.1f}% (signed {s['signed_median_pe']:+.1f}), {s['n']} rows")


def _vllm_quant(hopper):
    """Fit 7: vLLM's per-token FP8 quantise kernel's time per token on vLLM's CutlassFP8ScaledMM rows (CUTLASS's own
    values, fit 4's on SGLang's rows, held), with a fit on alternate rows of the table's order priced on the rest."""
    print("7. vLLM's per-token FP8 quantise kernel (vLLM's CutlassFP8ScaledMM rows of kernels_hopper/gemm.csv.gz)")
    rows = [r for r in read_csv("hopper/gemm")[1] if r["kernel_source"] == "CutlassFP8ScaledMMLinearKernel"]

    def held(cal, sub, what):
        s = error_stats(predict("gemm", sub, lambda g: cal)[0], np.array([float(r["latency_ms"]) for r in sub]))
        print(f"      {what}: median APE {s['median_ape']:.1f}% (p90 {s['p90_ape']:.1f}, signed {s['signed_median_pe']:+.1f}), {s['n']} rows")

    for h in (0, 1):
        fit_on, price_on = rows[h::2], rows[1 - h::2]
        cal, r = fit_kind("gemm", fit_on, hopper, "hopper", params=VLLM_QUANT)
        print(f"   half {h}: quant_token_s_vllm {cal.quant_token_s_vllm:.4g}; {_line(r)}")
        held(cal, price_on, "the other half, out of sample")
    hopper, r = fit_kind("gemm", rows, hopper, "hopper", params=VLLM_QUANT)
    print(f"   all: quant_token_s_vllm {hopper.quant_token_s_vllm:.4g}; {_line(r)}")
    return hopper


def _shape(r: dict) -> tuple:
    return tuple(r[c] for c in ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size", "kv_cache_dtype"))


def _moe_toml(hopper, kept: list[str]) -> None:
    for t in KERNEL_KEYED:
        per: dict[str, list[str]] = {}
        for pair in kept:
            if pair in dict(getattr(hopper, t)):
                moe_fam, kern = pair.split(".")
                per.setdefault(moe_fam, []).append(f"{kern} = {hopper.param(f'{t}.{pair}'):.6g}")
        for moe_fam, kv in per.items():
            print(f"[hopper.{t}.{moe_fam}]", *kv, sep="\n")


if __name__ == "__main__":
    main()
