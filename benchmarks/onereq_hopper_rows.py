"""The one-request DeepSeek-R1 MTP iteration on Hopper built bottom-up from the measured H100 kernel rows, op by op
against the model's price (issue 39 mechanism 4; docs/modelling-notes.md#onereq5-hopper-rows).

    python benchmarks/onereq_hopper_rows.py VALIDATION_DIR

VALIDATION_DIR holds kernels_hopper/ (aiconfigurator-core 0.12.0's H100 tables, TensorRT-LLM 1.3.0rc20 rows; its
README): the package ships gemm / moe / comm, not the MLA tables. The plan is the best-perf page's H200 min-latency
run (block FP8, attention TP 8, MoE TP 2 x EP 4, MTP 3: a verify step of 4 tokens, one draft pass over the 4 verified
positions, two at one token, 2k context), priced by benchmarks/one_request_step.py's `iteration` (serve.aggregated's
_decode_kernels). Unlike that script, which scales each GEMM by the median table / model ratio near its shape, every
measured figure here is ONE table row: the nearest shape (log n + log k), then the nearest token count, of the op's
own kernel; a GEMM row off the step's shape is moved to it by the model's own H100 ratio of the two shapes (printed).
H200 = H100 row x the model's H200 / H100 price of that op where that ratio is under 0.95 (bandwidth-bound: 3.35 ->
4.8 TB/s), else the H100 row (fixed-cost-bound; H200 has H100's SMs and clocks). Ops no table times (norms, RoPE,
top-k of the gate, sampling, the host, the MTP worker) count at the model's price on both sides.
The rows are CUDA-graph replays timed between two events, and a graph launch the step's single graph does not pay
rides in them unevenly: a mla_bmm row is one graph of the quantise + BMM per replay (ai-dynamo/aiconfigurator
collector/trtllm/collect_mla_bmm.py@302edbc4, 10 g.replay()), a small GEMM row up to 5 distinct-weight GEMMs in one
graph, the latency divided by that count (collect_gemm.py@00095909, outside_loop_count = min(5, ceil(L2 / weight bytes)),
captured by collector/helper.py's benchmark_with_power), a generation MLA row one graph of attn.forward per replay (its
RoPE / cache append with FlashMLA: collect_mla.py@070f5afd). The MLA module rows (the whole attention block in one graph)
against the sum of their parts' rows say how much a launch is; the last line takes it, and the RoPE counted twice, out.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_request_step import iteration  # noqa: E402  (the model's price of each launch of the iteration)

from llm_codesign.cost.calibration import calibration_for  # noqa: E402
from llm_codesign.measure.kernel_tables import predict  # noqa: E402

# (N, K) per GPU at attention TP 8 and the table dtype of each GEMM (DeepSeek-R1 config.json: hidden 7168, q_lora 1536,
# kv_lora 512 + rope 64, 128 heads of 192 / 128, shared expert 2048, dense FFN 18432, vocabulary 129,280; block FP8 as
# the checkpoint stores it, BF16 where TensorRT-LLM keeps it: router, LM head, MTP's eh_proj)
GEMMS = {"qkv_a": (2112, 7168, "fp8_block"), "q_b": (3072, 1536, "fp8_block"), "o": (7168, 2048, "fp8_block"),
         "shared_gate_up": (512, 7168, "fp8_block"), "shared_down": (7168, 256, "fp8_block"), "gate_up": (4608, 7168, "fp8_block"),
         "down": (7168, 2304, "fp8_block"), "router": (256, 7168, "bfloat16"), "lm_head": (16160, 7168, "bfloat16"),
         "eh_proj": (7168, 1792, "bfloat16")}
MOE = ("topk", "permute", "experts_gate_up", "experts_act", "experts_down")  # the CUTLASS MoE op the moe rows time whole
BMM = {"mla_q_absorb": "mla_gen_pre", "mla_v_up": "mla_gen_post"}  # FP8 rows: the 1x128 quantise + the strided BMM
BANDWIDTH_BOUND = 0.95


def load(kern: Path) -> dict[str, pd.DataFrame]:
    """TensorRT-LLM's (and NCCL's) H100 rows the step's ops can be read from."""
    read = lambda f: pd.read_csv(kern / f, low_memory=False)  # noqa: E731
    g, m, c, a = read("gemm.csv.gz"), read("moe.csv.gz"), read("comm.csv.gz"), read("mla.csv.gz")
    moe = m[(m.framework == "trtllm") & (m.kernel_source == "moe_torch_flow_cutlass") & (m.moe_dtype == "fp8_block")
            & (m.hidden_size == 7168) & (m.inter_size == 2048) & (m.num_experts == 256) & (m.topk == 8)
            & (m.moe_tp_size == 2) & (m.moe_ep_size == 4)]
    return {"gemm": g[(g.framework == "trtllm") & (g.m <= 16)], "moe": moe,
            "ar": c[(c.framework == "trtllm") & (c.kernel_source == "TRTLLM") & (c.num_gpus == 8)],
            "ag": c[(c.framework == "nccl") & (c.op_name == "all_gather") & (c.nccl_dtype == "half") & (c.num_gpus == 8)],
            "mla": a[(a.framework == "trtllm") & (a.num_heads == 16)]}


def _nearest(df: pd.DataFrame, col: str, x: float) -> pd.Series:
    """The row whose `col` is nearest `x` on a log scale (the first of ties)."""
    return df.iloc[int(np.argmin(np.abs(np.log(df[col].astype(float) / x))))]


def _gemm_price(dt: str, m: float, n: int, k: int) -> float:
    """The model's H100 price of an (m, n, k) GEMM as a table row (its quantise launch included), us."""
    row = {"system": "h100_sxm", "framework": "trtllm", "kernel_source": "torch_flow", "gemm_dtype": dt,
           "m": f"{m:g}", "n": str(n), "k": str(k), "latency_ms": "1"}
    return float(predict("gemm", [row], calibration_for)[0][0]) * 1e3


def gemm_row(t: dict, role: str, tokens: float, dtype: str = "") -> tuple[float, str]:
    """H100 us of the GEMM `role` at `tokens` rows (its own dtype, or `dtype`): the nearest-shape row at the nearest m,
    moved to the step's shape by the model's ratio of the two shapes."""
    n, k, dt = GEMMS[role]
    dt = dtype or dt
    g = t["gemm"][t["gemm"].gemm_dtype == dt]
    d = np.abs(np.log(g.n / n)) + np.abs(np.log(g.k / k))
    r = _nearest(g[d <= d.min() + 1e-9], "m", tokens)
    us = float(r.latency_ms) * 1e3
    move = _gemm_price(dt, tokens, n, k) / _gemm_price(dt, float(r.m), int(r.n), int(r.k))
    return us * move, f"{dt} row {int(r.m)}x{int(r.n)}x{int(r.k)} {us:.1f} us x shape {move:.2f}"


def table_h100(t: dict, role: str, tokens: float) -> tuple[float, str] | None:
    """The H100 row of one launch of `role` at `tokens` tokens (us, basis), or None where no table times it."""
    if role in GEMMS:
        return gemm_row(t, role, tokens)
    if role in BMM:
        r = _nearest(t["mla"][(t["mla"].op_name == BMM[role]) & (t["mla"].bmm_dtype == "fp8")], "num_tokens", tokens)
        return float(r.latency_ms) * 1e3, f"{BMM[role]} fp8 row, 16 heads, {r.num_tokens:g} tokens (quantise + BMM)"
    if role == "core_decode":
        g = t["mla"][(t["mla"].op_name == "mla_generation") & (t["mla"].kv_cache_dtype == "bfloat16") & (t["mla"].batch_size == 1)]
        r = _nearest(g, "step", 2047)
        return float(r.latency_ms) * 1e3, f"generation MLA row, 16 heads, BF16 KV, 1 sequence, step {r.step:g} (holds RoPE + append)"
    if role in ("all_reduce", "eh_proj_all_reduce"):
        r = _nearest(t["ar"], "message_size", tokens * 7168)
        return float(r.latency_ms) * 1e3, f"custom all-reduce row, TP 8, {r.message_size:g} elements (norm not in it)"
    if role in ("logits_gather", "argmax_gather"):
        r = _nearest(t["ag"], "message_size", tokens * 16160 if role == "logits_gather" else 256)
        return float(r.latency_ms) * 1e3, f"NCCL all-gather row, 8 GPUs, {r.message_size:g} elements"
    return None


def moe_row(t: dict, tokens: float, dist: str = "balanced") -> tuple[float, str]:
    """H100 us of the whole CUTLASS MoE op (DeepSeek-R1's experts, MoE TP 2 x EP 4) at the nearest token count of the
    `dist` rows (two equally near: their geometric mean, the log-log midpoint)."""
    d = t["moe"][t["moe"].distribution == dist]
    if not (d.num_tokens == tokens).any():  # a skewed distribution only where it was timed at this count
        d = t["moe"][t["moe"].distribution == "balanced"]
    gap = np.abs(np.log(d.num_tokens / tokens))
    near = d[gap <= gap.min() + 1e-9]
    us = float(np.exp(np.mean(np.log(near.latency_ms * 1e3))))
    return us, f"CUTLASS fp8_block MoE, {dist}, {'/'.join(f'{x:g}' for x in near.num_tokens)} tokens"


def rows(t: dict, dist: str = "balanced") -> list[tuple]:
    """Every launch of the iteration: (pass, op, launches, tokens, model H200 us, model H100 us, table H200 us,
    table H100 us, basis). The MoE op's table row is shared over its five priced launches in their H100 price's
    proportion; the BMM rows hold the quantise (mla_bmm_quant: 0 on the table side)."""
    out = []
    for (where, name, cnt, tok, us200), (*_, us100) in zip(iteration("h200"), iteration("h100"), strict=True):
        role = name.split("/")[-1]
        if role in MOE:
            block = sum(x[4] for x in iteration_h100(where) if x[1].rsplit("/", 1)[0] == name.rsplit("/", 1)[0]
                        and x[1].split("/")[-1] in MOE)
            t100, basis = moe_row(t, tok, dist)
            t100 *= us100 / block
            basis += f"; the op priced {block:.1f} on H100"
        elif role == "mla_bmm_quant":
            t100, basis = 0.0, "inside the fp8 BMM rows"
        else:
            t100, basis = table_h100(t, role, tok) or (us100, "no table: the model's price")
        scale = us200 / us100 if us200 / us100 < BANDWIDTH_BOUND else 1.0
        out.append((where, name, cnt, tok, us200, us100, t100 * scale, t100, basis + (" (bw)" if scale < 1 else "")))
    return out


_H100: dict = {}


def iteration_h100(where: str) -> list[tuple]:
    """The H100-priced launches of one pass (cached: the MoE op's priced total)."""
    if not _H100:
        for x in iteration("h100"):
            _H100.setdefault(x[0], []).append(x)
    return _H100[where]


def family(role: str) -> str:
    """The kernel family an op belongs to, for the per-family sums."""
    fam = {"MoE op (CUTLASS, one row)": MOE, "MLA absorbed BMMs + quantise": (*BMM, "mla_bmm_quant"), "MLA decode kernel": ("core_decode",),
           "all-reduce / all-gather": ("all_reduce", "eh_proj_all_reduce", "logits_gather", "argmax_gather"),
           "block-FP8 GEMMs": ("qkv_a", "q_b", "o", "shared_gate_up", "shared_down", "gate_up", "down"),
           "BF16 GEMMs (router, eh_proj, LM head)": ("router", "eh_proj", "lm_head")}
    return next((f for f, rs in fam.items() if role in rs), "no table (norms, top-k, sampling, host, worker)")


MODULE = ("qkv_a", "latent_norms", "q_b", "mla_q_absorb", "mla_v_up", "mla_bmm_quant", "mla_rope", "core_decode", "o")


def module_priced(gemm_type: str, seqs: float) -> tuple[float, dict]:
    """The model's H100 MLA module of DeepSeek-R1 at 16 heads (TP 8), `seqs` sequences of one token at 2k, TensorRT-LLM,
    as the step prices it (serve.aggregated.op_step_time; RoPE and the cache append: half the layer's two elementwise
    launches): (us, each part's us)."""
    from llm_codesign.cost.ops import Batch, forward_ops
    from llm_codesign.serve.aggregated import op_step_time, pdl_per_launch
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import Plan
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model
    m, gpu = get_model("deepseek-r1"), get_gpu("h100")
    costs = get_engine("trtllm").costs(calibration_for(gpu))
    ops = forward_ops(m, gpu, costs.cal, Precision.of(gemm_type, kv="bf16"), Plan.parse("tp=8", m, "decode"),
                      b=Batch(dec_seqs=seqs, dec_ctx=2048.0), engine=costs.engine)
    us = {o.name: float(op_step_time(o, pdl_per_launch(gpu, costs), one_layer=True)) * 1e6 for o in ops}
    parts = {k.split("/")[-1]: v for k, v in us.items() if k.startswith("layer0/attn/") and k.split("/")[-1] in MODULE}
    return sum(parts.values()) + us["layer1/elementwise"] / 2, parts | {"half_elementwise": us["layer1/elementwise"] / 2}


def module_check(t: dict) -> float:
    """The MLA module row (one graph: norms, projections, BMMs, RoPE / cache append, FlashMLA, o; one layer's weights
    replayed with no L2 flush) against the sum of its parts' rows (the latent norms at the model's price) and
    the model's module, H100, per GEMM dtype and batch. The parts' excess over the module is what the isolated rows carry
    that the module's one graph does not (their own graph launches; for block FP8 also the module's weights, ~37 MB at
    16 heads, fitting H100's 50 MB L2 where the BF16 ones, ~73 MB, do not). Returns the BF16 excess per row that holds a
    whole graph launch (the two BMM rows and FlashMLA's; a GEMM row holds at most a fifth of one), us: the launches, or
    the overlap of the module's q x W_UK on a second stream beside RoPE (docs/accuracy.md#one-request-h200)."""
    mla, bf16 = t["mla"], []
    print("\nMLA module, H100, 16 heads, 2k, BF16 KV: module row | its parts' rows (excess) | model (model / row)")
    for gt, gdt, bdt in (("fp8_block", "fp8_block", "fp8"), ("bfloat16", "bfloat16", "bfloat16")):
        for b in (1, 4):
            priced, parts = module_priced("fp8_block" if gt == "fp8_block" else "bf16", float(b))
            rows = sum(gemm_row(t, r, b, gdt)[0] for r in ("qkv_a", "q_b", "o"))
            rows += sum(float(_nearest(mla[(mla.op_name == op) & (mla.bmm_dtype == bdt)], "num_tokens", b).latency_ms) * 1e3
                        for op in BMM.values())
            sel = mla[(mla.op_name == "mla_generation") & (mla.kv_cache_dtype == "bfloat16") & (mla.batch_size == b)]
            rows += float(_nearest(sel, "step", 2047).latency_ms) * 1e3
            rows += parts["latent_norms"] + parts["mla_rope"]  # RoPE / append: inside the generation MLA row (collect_mla.py)
            mod = mla[(mla.op_name == "mla_generation_module") & (mla.gemm_type == gt) & (mla.kv_cache_dtype == "bfloat16")
                      & (mla.batch_size == b) & (mla.step == 2048)].latency_ms.iloc[0] * 1e3
            print(f"  {gt:9s} {b} sequence(s): {mod:5.1f} | {rows:5.1f} ({rows - mod:+5.1f}) | {priced:5.1f} ({priced / mod - 1:+.1%})")
            bf16 += [(rows - mod) / 3.0] if gt == "bfloat16" else []
    return float(np.mean(bf16))


def main(kern: Path) -> None:
    t = load(kern)
    its = rows(t)
    print("DeepSeek-R1 block FP8, H200 min latency plan (TP 8, MoE TP 2 x EP 4, MTP 3), one MTP iteration, us a launch")
    print(f"{'pass / op':36s} {'n':>3s} {'tok':>3s} {'H100 mdl':>8s} {'H100 row':>8s} {'H200 mdl':>8s} {'H200 row':>8s}  basis")
    sums = {}
    for w, name, cnt, tok, m200, m100, t200, t100, basis in its:
        f = sums.setdefault(family(name.split("/")[-1]), np.zeros(4))
        f += cnt * np.array([m100, t100, m200, t200])
        print(f"{w + ' ' + name:36s} {cnt:3.0f} {tok:3.0f} {m100:8.2f} {t100:8.2f} {m200:8.2f} {t200:8.2f}  {basis}")
    print(f"\n{'by family, ms an iteration':44s} {'H100 mdl':>8s} {'H100 row':>8s} {'H200 mdl':>8s} {'H200 row':>8s} {'row-mdl':>8s}")
    for f, v in sorted(sums.items(), key=lambda x: -x[1][2]):
        print(f"  {f:42s} {v[0] / 1e3:8.3f} {v[1] / 1e3:8.3f} {v[2] / 1e3:8.3f} {v[3] / 1e3:8.3f} {(v[3] - v[2]) / 1e3:+8.3f}")
    tot = sum(sums.values())
    print(f"  {'iteration':42s} {tot[0] / 1e3:8.3f} {tot[1] / 1e3:8.3f} {tot[2] / 1e3:8.3f} {tot[3] / 1e3:8.3f} {(tot[3] - tot[2]) / 1e3:+8.3f}")
    skew = sum(x[2] * x[6] for x in rows(t, "power_law_1.2"))
    print(f"  {'iteration, the MoE op at 4 tokens from its power_law_1.2 row':62s} {skew / 1e3:8.3f} (H200 row)")
    launch = module_check(t)
    # the generation MLA row times attn.forward (collect_mla.py@070f5afd): its RoPE / cache append too, which the step
    # prices as half the layer's elementwise launches, so that half is counted twice on the table side
    twice = sum(x[2] * x[6] / 2 for x in its if x[1].split("/")[-1] == "elementwise")
    n = sum(x[2] for x in its if x[1].split("/")[-1] in (*BMM, "core_decode"))
    off = n * launch + twice
    print(f"the BF16 module's excess over its parts (launches the rows hold, or q x W_UK's second stream beside RoPE), "
          f"{launch:.1f} us on each of the {n:.0f} BMM and MLA rows, and the RoPE / append the MLA rows hold ({twice / 1e3:.3f} ms) "
          f"taken out of the rows: "
          f"{(tot[3] - off) / 1e3:.3f} ms (power-law MoE {(skew - off) / 1e3:.3f})")
    print(f"published H200 (158.1 tok/s/user at an assumed 2.82 tokens a step): {2.82 / 158.1 * 1e3:.2f} ms an iteration")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "kernels_hopper" / "mla.csv.gz").is_file():
        sys.exit("usage: python benchmarks/onereq_hopper_rows.py VALIDATION_DIR (holding kernels_hopper/ with mla.csv.gz)")
    main(Path(sys.argv[1]) / "kernels_hopper")
