"""The one-request decode step of DeepSeek-R1 as the model prices it, operator by operator, against the kernel
tables' rows at 1-4 tokens (issue 39 item 4): does the table-based step reach the published step?

    python benchmarks/one_request_step.py VALIDATION_DIR

VALIDATION_DIR: the kernel measurements as published (kernels/ with B200's tables, kernels_hopper/ with H100's,
including its all-reduce and MLA module tables, which the package does not ship); the project's own copies of the
rest are in src/llm_codesign/data/measurements/.

B200: TensorRT-LLM blog 1's depth scan without MTP (NVFP4, attention TP 8, MoE TP 2 x EP 4, 111 tok/s/user: 9.0 ms
a step) against the B200 tables (kernels/: TensorRT-LLM 1.3's GEMMs, its trtllm-gen MoE, decode attention, NCCL).
H200: the best-perf guide's min-latency run (block FP8, MTP 3 verifying 4 tokens, 158.1 tok/s/user), every launch of
one MTP iteration (the verify step and the three draft passes) against TensorRT-LLM 1.3's H100 tables (kernels_hopper/),
each H100 figure scaled to H200 by the model's own H200 / H100 price of that operator.
A GEMM's table figure is the model's isolated price at the step's shape times the median table/model ratio of the
table's rows of that dtype at small m within +-40% of its weight count; a module or block the tables time whole is
compared whole. Operators no table times (norms, RoPE, top-k, permute, the host step) count at the model's price.
Findings (docs/accuracy.md#one-request-step, #one-request-h200): the tables agree with the priced operators (the
table-based B200 step is 6.0 ms, the priced one 6.1; the H200 MTP iteration 11.9 against 11.5 ms), so the published
steps' missing time (9.0 and 17.8 ms) is not in the kernels the tables time but in those the runs' software ran.
"""
from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

import numpy as np

from llm_codesign import api
from llm_codesign.cost import gemm
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.ops import Batch, forward_ops, mtp_module_ops, spec_worker_ops
from llm_codesign.measure.kernel_tables import GEMM_DTYPES, predict
from llm_codesign.serve.aggregated import draft_model, op_step_time, pdl_per_launch
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Workload

ROOT = Path(__file__).resolve().parents[1]
# DeepSeek-R1's GEMMs at attention TP 8 (config.json: hidden 7168, q_lora 1536, kv_lora 512 + rope 64, 128 heads
# of 192 / 128, shared expert 2048, vocabulary 129,280): the step's operator, (N, K) per GPU
SHAPES = {"qkv_a": (2112, 7168), "q_b": (3072, 1536), "o": (7168, 2048), "router": (256, 7168),
          "shared_gate_up": (512, 7168), "shared_down": (7168, 256), "lm_head": (16160, 7168), "gate_up": (4608, 7168), "down": (7168, 2304)}


def _open(p: Path):
    return gzip.open(p, "rt") if p.suffix == ".gz" else open(p)


def _breakdown(model: str, gpu: str, **kw) -> tuple[dict, dict, float]:
    """The one-request step of `model` on 8 `gpu`s (attention TP 8, MoE TP 2 x EP 4): each operator's seconds a
    step, its launches a step and the TPOT. The launches are the step's own (cost.ops.forward_ops over the model
    spec's layer groups: DeepSeek-R1's config.json gives 61 layers, first_k_dense_replace 3 of them dense, all
    sharing one MLA)."""
    m = api.get_model(model)
    dep = api.deployment(m, gpu=gpu, num_gpus=8, tp=8, ep=4, moe_tp=2, kv_dtype="bf16", **kw)
    est = api.estimate(m, dep, Workload(isl=1024, osl=2048, concurrency=1), breakdown=True)
    costs = dep.engine.costs(calibration_for(dep.gpu))
    ops = forward_ops(m, dep.gpu, costs.cal, dep.precision, dep.plan.broadcast(), b=Batch(dec_seqs=1.0, dec_ctx=2048.0),
                      engine=costs.engine, sample=True)
    counts = {op.name: float(np.sum(op.count)) for op in ops}
    # the operator rows (the rest of the step and of TPOT say `what` they are: serve.estimate.step_rows)
    return {o.name: o.time_s for o in est.breakdown if not o.what}, counts, est.tpot_s


def _gemm_table(rows, gpu, dt: str, n: int, k: int, m: int) -> tuple[float, float, int]:
    """(the model's price as a table row, table-based figure in the step, rows used) for an (m, n, k) GEMM of table
    dtype `dt`, in us: the step's own price (TensorRT-LLM's fused activation quantise, Engine.fusions) times the
    median table / model ratio of the table's rows near it (those rows time a quantise launch of their own)."""
    cal = calibration_for(gpu)
    math, ab, wb = GEMM_DTYPES[dt]

    def price(mm, nn, kk, engine=None):
        return float(gemm.gemm_time(np.float64(mm), np.float64(nn), np.float64(kk), gpu, cal, math=math, a_bytes=ab, w_bytes=wb,
                                    kernel=gemm.gemm_kernel(math, dt), engine=engine)[0]) * 1e6
    near = [r for r in rows if r["gemm_dtype"] == dt and int(r["m"]) <= 4 and abs(np.log(int(r["n"]) * int(r["k"]) / (n * k))) < 0.35]
    ratio = np.median([float(r["latency_ms"]) * 1e3 / price(int(r["m"]), int(r["n"]), int(r["k"])) for r in near])
    return price(m, n, k), price(m, n, k, get_engine("trtllm")) * ratio, len(near)


def b200(shared: Path) -> None:
    ops, counts, tpot = _breakdown("nvidia/DeepSeek-R1-FP4", "b200", weight_dtype="nvfp4")
    gpu = get_gpu("b200_sxm")
    gemms = [r for r in csv.DictReader(_open(shared / "kernels" / "gemm.csv")) if r["system"] == "b200_sxm" and int(r["m"]) <= 4]
    moe = [r for r in csv.DictReader(_open(shared / "kernels" / "moe.csv")) if r["system"] == "b200_sxm" and int(r["num_tokens"]) <= 4]
    pred, _ = predict("moe", moe, calibration_for)
    moe_ratio = float(np.median([float(r["latency_ms"]) / p for r, p in zip(moe, pred, strict=True)]))
    attn = [float(r["latency_ms"]) * 1e3 for r in csv.DictReader(_open(shared / "kernels" / "decode_attention.csv"))
            if r["system"] == "b200_sxm" and int(r["batch_size"]) <= 2 and r["num_key_value_heads"] == "1"
            and r["head_dim"] == "512" and 1023 <= int(r["step"]) <= 4095]
    # TensorRT-LLM 1.3's own one-shot all-reduce at TP 8 on H100 at one token's 7,168 elements (kernels_hopper comm;
    # message_size counts elements: aiconfigurator's CustomAllReduce(..., h, tp) per token; B200's table is NCCL's).
    # It times the bare all-reduce (AllReduce(..., fusion_op=AllReduceFusionOp.NONE), ai-dynamo/aiconfigurator@095f58a5
    # collector/network/collect_all_reduce.py:152): no table times the residual + RMSNorm the step fuses into it
    ar = _loglog([r for r in csv.DictReader(_open(shared / "kernels_hopper" / "comm.csv.gz"))
                  if r["kernel_source"] == "TRTLLM" and r["num_gpus"] == "8"], 7168, "message_size")
    print("B200 no MTP, one token (us per launch; count per step)")
    print(f"{'operator':28s} {'count':>5s} {'priced':>7s} {'table':>7s} {'ratio':>6s}  table basis")
    step_p = step_t = 0.0
    for name, t in sorted(ops.items(), key=lambda x: -x[1]):
        role = name.split("/")[-1]
        count = round(counts[name])
        us = t * 1e6 / count
        basis, tab = "none (priced)", us
        if role in SHAPES:
            n, k = SHAPES[role]
            dt = "nvfp4" if role.startswith("shared") or name.startswith("layer0/ffn") else "bfloat16"
            iso, tab, used = _gemm_table(gemms, gpu, dt, n, k, 1)
            basis = f"{dt} gemm rows m<=4 near ({used}); as a table row {iso:.1f}"
        elif role in ("experts_gate_up", "experts_down"):
            tab = us * moe_ratio
            basis = f"trtllm-gen MoE rows <=4 tokens: table/model {moe_ratio:.2f}"
        elif role == "core_decode":
            tab = float(np.median(attn))
            basis = f"GQA rows, 1 KV head of 512, 1-4k context ({len(attn)}; no MLA table)"
        elif role == "all_reduce":
            tab = ar
            basis = "TRT-LLM one-shot AR, H100 TP8 7168 BF16 (norm not in it)"
        step_p += us * count
        step_t += tab * count
        print(f"{name:28s} {count:5d} {us:7.2f} {tab:7.2f} {tab / us:6.2f}  {basis}")
    host = tpot * 1e6 - step_p
    print(f"kernels priced {step_p / 1e3:.2f} ms, table-based {step_t / 1e3:.2f} ms; with the rest of the TPOT (host step less PDL credit, "
          f"({host / 1e3:.2f} ms): {tpot * 1e3:.2f} / {(step_t + host) / 1e3:.2f} ms against 1000/111 = {1000 / 111:.2f} ms")


def _ops_us(gpu: str, tokens: float) -> tuple[dict, dict, dict, int]:
    """The H200 run's plan on `gpu`: (one layer's or pass's operators in the target's verify step of `tokens`
    tokens, us each as the step prices it with PDL's credit off its launches, and its counts; the MTP draft
    passes' operators, us; the draft passes a step) as serve.aggregated._decode_kernels prices them (the first
    draft pass: the MTP block over every verified position, the LM head over one; the others over one token)."""
    m = api.get_model("deepseek-ai/DeepSeek-R1")
    dep = api.deployment(m, gpu=gpu, num_gpus=8, tp=8, ep=4, moe_tp=2, kv_dtype="bf16", weight_dtype="fp8_block",
                         spec="mtp", draft_len=3, acceptance=2.82)
    costs = dep.engine.costs(calibration_for(dep.gpu))
    per, sh, cal = pdl_per_launch(dep.gpu, costs), dep.plan.broadcast(), costs.cal
    us = lambda ops: {op.name: float(op_step_time(op, per, one_layer=True)) * 1e6 for op in ops if float(op_step_time(op, per, one_layer=True)) > 0}  # noqa: E731
    ops = forward_ops(m, dep.gpu, cal, dep.precision, sh, b=Batch(dec_seqs=1.0, dec_ctx=2048.0, dec_tokens_per_seq=tokens),
                      engine=costs.engine, sample=True)
    dm = draft_model(m, dep.spec)
    dops = forward_ops(dm, dep.gpu, cal, dep.precision, sh, b=Batch(dec_seqs=1.0, dec_ctx=2048.0), engine=costs.engine)
    draft = {"mtp1/" + k.removeprefix("layer/"): v for k, v in us(dops).items()}
    draft |= {"mtp1/" + k: v for k, v in us(mtp_module_ops(dm, dep.gpu, cal, sh, tokens=1.0, seqs=1.0, engine=costs.engine)).items()}
    draft |= {"mtp4/" + k: v for k, v in us(mtp_module_ops(dm, dep.gpu, cal, sh, tokens=tokens, seqs=1.0, engine=costs.engine)).items()}
    # the MTP worker's own small kernels a step (ops.spec_worker_ops: none PDL-launched, so at its own time)
    draft |= {op.name: float(np.sum(op.total_time)) * 1e6
              for op in spec_worker_ops(dep.gpu, cal, sh, engine=costs.engine, method=dep.spec.method, k=dep.spec.k)}
    counts = {op.name: float(np.sum(op.count)) for op in ops}
    host = (costs.step_overhead + costs.seq_overhead) * 1e6  # the host's step, with its one running sequence
    return us(ops) | {"host/step_overhead": host}, counts | {"host/step_overhead": 1.0}, draft, dep.spec.k


def _near(rows, x: float, key: str) -> list:
    """The rows at the `key` value nearest `x` on a log scale (every row that shares it)."""
    best = min(abs(np.log(float(r[key]) / x)) for r in rows)
    return [r for r in rows if abs(np.log(float(r[key]) / x)) <= best + 1e-9]


def _loglog(rows, x: float, key: str) -> float:
    """Latency (us) of `rows` at `key` = x, interpolated on log-log axes between the neighbouring sizes."""
    xs = np.array([float(r[key]) for r in rows])
    order = np.argsort(xs)
    return float(np.exp(np.interp(np.log(x), np.log(xs[order]), np.log([float(rows[i]["latency_ms"]) * 1e3 for i in order]))))


def _h100_tables(shared: Path, kern: Path):
    """What the H100 tables of TensorRT-LLM 1.3 (kernels_hopper/) measure at the H200 run's shapes, us: a
    function (operator role, tokens) -> (H100 figure, basis), or None where no table times the operator.
    A GEMM or MoE block is the model's own H100 price as a table row at the step's shape times the median
    table / model ratio of its rows near it (GEMMs of that dtype at m <= 8 within +-40% of its weights; the
    MoE block's rows of DeepSeek-R1's experts at MoE TP 2 x EP 4, 2-8 tokens); the others are read off
    the tables at the shape (collectives interpolated in message size)."""
    gemms = [r for r in csv.DictReader(_open(kern / "gemm.csv.gz")) if r["framework"] == "trtllm" and int(r["m"]) <= 8
             and r["gemm_dtype"] in ("fp8_block", "bfloat16")]
    moe = [r for r in csv.DictReader(_open(kern / "moe.csv.gz")) if r["framework"] == "trtllm" and r["moe_dtype"] == "fp8_block"
           and r["kernel_source"] == "moe_torch_flow_cutlass" and (r["hidden_size"], r["inter_size"], r["num_experts"], r["topk"])
           == ("7168", "2048", "256", "8") and (r["moe_tp_size"], r["moe_ep_size"]) == ("2", "4") and int(r["num_tokens"]) <= 8]
    moe_ratio = [float(r["latency_ms"]) / p for r, p in zip(moe, predict("moe", moe, calibration_for)[0], strict=True)]
    mla = [r for r in csv.DictReader(_open(shared / "kernels_hopper" / "mla.csv.gz")) if r["framework"] == "trtllm" and r["num_heads"] == "16"]
    comm = [r for r in csv.DictReader(_open(shared / "kernels_hopper" / "comm.csv.gz")) if r["num_gpus"] == "8"
            and (r["kernel_source"] == "TRTLLM" or (r["op_name"] == "all_gather" and r["nccl_dtype"] == "half"))]
    ar = [r for r in comm if r["kernel_source"] == "TRTLLM"]
    ag = [r for r in comm if r["op_name"] == "all_gather" and r["framework"] == "nccl"]
    # (N, K) per GPU and table dtype of each GEMM at attention TP 8: block FP8 as the checkpoint stores it,
    # BF16 where TensorRT-LLM keeps it (router, LM head, MTP's eh_proj)
    shapes = {"qkv_a": (2112, 7168, "fp8_block"), "q_b": (3072, 1536, "fp8_block"), "o": (7168, 2048, "fp8_block"),
              "shared_gate_up": (512, 7168, "fp8_block"), "shared_down": (7168, 256, "fp8_block"), "gate_up": (4608, 7168, "fp8_block"),
              "down": (7168, 2304, "fp8_block"), "router": (256, 7168, "bfloat16"), "lm_head": (16160, 7168, "bfloat16"),
              "eh_proj": (7168, 1792, "bfloat16")}

    def gemm_row(dt, m, n, k):
        return {"system": "h100_sxm", "framework": "trtllm", "kernel_source": "torch_flow", "gemm_dtype": dt, "m": f"{m:g}", "n": str(n), "k": str(k),
                "latency_ms": "1"}

    def table(role: str, tokens: float):
        if role in shapes:
            n, k, dt = shapes[role]
            near = [r for r in gemms if r["gemm_dtype"] == dt and abs(np.log(int(r["n"]) * int(r["k"]) / (n * k))) < 0.35]
            ratio = np.median([float(r["latency_ms"]) / p for r, p in zip(near, predict("gemm", near, calibration_for)[0], strict=True)])
            iso = float(predict("gemm", [gemm_row(dt, tokens, n, k)], calibration_for)[0][0]) * 1e3
            return iso * ratio, f"{dt} GEMM rows m<=8 near ({len(near)}): table/model {ratio:.2f}"
        if role == "moe_block":
            row = {**moe[0], "num_tokens": f"{tokens:g}", "distribution": "balanced"}
            iso = float(predict("moe", [row], calibration_for)[0][0]) * 1e3
            return iso * float(np.median(moe_ratio)), f"CUTLASS fp8_block MoE, TP2 x EP4, {len(moe)} rows 2-8 tokens: table/model {np.median(moe_ratio):.2f}"
        if role in ("mla_q_absorb", "mla_v_up"):
            op = "mla_gen_pre" if role == "mla_q_absorb" else "mla_gen_post"
            rows = _near([r for r in mla if r["op_name"] == op and r["bmm_dtype"] == "fp8"], tokens, "num_tokens")
            bf16 = _near([r for r in mla if r["op_name"] == op and r["bmm_dtype"] == "bfloat16"], tokens, "num_tokens")
            return (float(np.median([float(r["latency_ms"]) for r in rows])) * 1e3,
                    f"{op} FP8 BMM, 16 heads, {tokens:g} tokens (BF16: {float(np.median([float(r['latency_ms']) for r in bf16])) * 1e3:.1f})")
        if role == "core_decode":
            rows = [r for r in mla if r["op_name"] == "mla_generation" and r["kv_cache_dtype"] == "bfloat16" and float(r["batch_size"]) == 1
                    and float(r["step"]) == 2047]
            return float(rows[0]["latency_ms"]) * 1e3, "generation MLA kernel, 16 heads, BF16 KV, 2k, one sequence of one token"
        if role == "mla_module":
            b = 4 if tokens > 1 else 1
            rows = [r for r in mla if r["op_name"] == "mla_generation_module" and r["gemm_type"] == "fp8_block" and r["kv_cache_dtype"] == "bfloat16"
                    and float(r["batch_size"]) == b and float(r["step"]) == 2048]
            return float(rows[0]["latency_ms"]) * 1e3, f"generation MLA module, block FP8, 16 heads, 2k, {b} sequence(s) of one token"
        if role in ("all_reduce", "eh_proj_all_reduce"):
            return _loglog(ar, tokens * 7168, "message_size"), f"TensorRT-LLM custom all-reduce, TP 8, {tokens:g} x 7168 BF16 (norm not in it)"
        if role == "logits_gather":
            return _loglog(ag, tokens * 16160, "message_size"), "NCCL all-gather, 8 GPUs"
        if role == "argmax_gather":
            return _loglog(ag, 256, "message_size"), "NCCL all-gather, 8 GPUs, smallest message"
        return None
    return table


# operators of one MLA module and one MoE block as the tables time them whole (the module's RoPE and cache
# append are one of the layer's two elementwise launches: half of it)
MLA_MODULE = ("qkv_a", "latent_norms", "q_b", "mla_q_absorb", "mla_bmm_quant", "core_decode", "mla_v_up", "o")
MOE_BLOCK_OPS = ("topk", "permute", "experts_gate_up", "experts_act", "experts_down")
DRAFTS = "drafts 2-3"  # the draft passes after the first, at the run's MTP 3


def iteration(gpu: str) -> list[tuple[str, str, float, float, float]]:
    """Every launch of one MTP iteration of the H200 run's plan on `gpu`: (pass, operator, launches, tokens, us
    each). The verify step; the first draft pass runs the MTP block (the MoE layer's operators) over the 4
    verified positions with its module's input path at 4 and the LM head at one; the other passes (the draft
    length less one) run everything at one token (serve.aggregated._decode_kernels). Each pass runs the draft
    model's one MTP block (serve.aggregated.draft_model: DeepSeek-V3 report sec. 2.2)."""
    ops, counts, draft, passes = _ops_us(gpu, 4.0)
    its = [("verify", k, counts[k], 1.0 if k.startswith("host") else 4.0, v) for k, v in ops.items()]
    its += [("draft 1", k, 1.0, 4.0, v) for k, v in ops.items() if k.startswith(("layer0/attn", "layer1/"))]
    its += [("draft 1", k, 1.0, 4.0, v) for k, v in draft.items() if k.startswith("mtp4/")]
    its += [("draft 1", "mtp1/lm_head", 1.0, 1.0, draft["mtp1/lm_head"]), ("worker", "mtp/worker", 1.0, 1.0, draft["mtp/worker"])]
    return its + [(DRAFTS, k, passes - 1.0, 1.0, v) for k, v in draft.items() if k.startswith("mtp1/")]


def h200(shared: Path) -> None:
    """DeepSeek-R1 block FP8 on 8xH200 (attention TP 8, MoE TP 2 x EP 4), one request verifying 3 MTP drafts
    at 2k context: each operator of the verify step and the draft passes as the model prices it, against the
    H100 tables scaled to H200 as the model scales them (the H100 figure x the model's H200 / H100 price of
    that operator: H200 has H100's compute and 4.8 against 3.35 TB/s, so a kernel bound by its weights'
    bytes gets ~0.7x, one bound by its fixed cost ~1x)."""
    table = _h100_tables(shared, ROOT / "src/llm_codesign/data/measurements/kernels_hopper")
    its = [(*x, y[4]) for x, y in zip(iteration("h200"), iteration("h100"), strict=True)]

    def priced100(where: str, roles, pre: str) -> float:  # H100 us of one pass's operators of these roles
        return sum(x[5] for x in its if x[0] == where and x[1].startswith(pre) and x[1].split("/")[-1] in roles)

    def block(tokens: float) -> float:  # the MoE block's priced H100 us at `tokens`
        return priced100("verify", MOE_BLOCK_OPS, "layer1/") if tokens > 1 else priced100(DRAFTS, MOE_BLOCK_OPS, "mtp1/")

    def figure(name, tokens, us200, us100) -> tuple[float, str]:
        """The table-based H200 us of one launch, and its basis."""
        role = name.split("/")[-1]
        if role in MOE_BLOCK_OPS:  # timed whole by the tables: each of its operators at the block's table / priced
            t100, basis = table("moe_block", tokens)
            return us200 * t100 / block(tokens), f"MoE block whole: {basis}; H100 {t100:.1f} against {block(tokens):.1f}"
        if role == "mla_bmm_quant":  # the SM90 BMMs' 1x128 quantise: inside the FP8 BMM rows the table times (mla_gen_pre/post)
            return 0.0, "in the FP8 BMM rows"
        got = table(role, tokens)
        if got is None:
            return us200, "none (priced)"
        return got[0] * us200 / us100, f"{got[1]}; H100 {got[0]:.1f}"

    print("\nH200 MTP 3, one request, 2k context (us per launch on H200; a table figure is the H100 table's x the model's "
          "H200 / H100 price of that operator)")
    print(f"{'pass / operator':38s} {'count':>5s} {'priced':>7s} {'table':>7s} {'ratio':>6s}  table basis")
    fam_p: dict[str, float] = {}
    fam_t: dict[str, float] = {}
    for where, name, cnt, tokens, us200, us100 in sorted(its, key=lambda x: (x[0] != "verify", x[0], -x[2] * x[4])):
        t, basis = figure(name, tokens, us200, us100)
        fam = _family(name)
        fam_p[fam] = fam_p.get(fam, 0.0) + us200 * cnt
        fam_t[fam] = fam_t.get(fam, 0.0) + t * cnt
        print(f"{where + ' ' + name:38s} {cnt:5.0f} {us200:7.2f} {t:7.2f} {t / us200:6.2f}  {basis}")
    print("by family over the iteration (ms): priced, table-based, table - priced")
    for fam in sorted(fam_p, key=lambda f: -fam_p[f]):
        print(f"  {fam:38s} {fam_p[fam] / 1e3:6.3f} {fam_t[fam] / 1e3:6.3f} {(fam_t[fam] - fam_p[fam]) / 1e3:+7.3f}")
    # the modules the tables time whole (RoPE and cache append: half of the layer's two elementwise launches)
    for tokens, where, pre in ((4.0, "verify", "layer"), (1.0, DRAFTS, "mtp1")):
        ph = priced100(where, MLA_MODULE, f"{pre}{'0' if tokens > 1 else ''}/attn/") + \
            priced100(where, ("elementwise",), f"{pre}{'1' if tokens > 1 else ''}/elementwise") / 2
        t100, basis = table("mla_module", tokens)
        print(f"MLA module on H100 at {tokens:g} token(s): priced {ph:.1f}, table {t100:.1f} ({basis}), {t100 / ph - 1:+.1%}")
    it_p, it_t = sum(fam_p.values()) / 1e3, sum(fam_t.values()) / 1e3
    print(f"MTP iteration priced {it_p:.2f} ms, table-based {it_t:.2f} ms ({it_t / it_p - 1:+.1%}), against 2.82 / 158.1 = "
          f"{2.82 / 158.1 * 1e3:.2f} ms (2.82 assumed: the acceptance is not published)")


def _family(name: str) -> str:
    """The kernel family an operator of the H200 breakdown belongs to, for the per-family sums."""
    role = name.split("/")[-1]
    if role in MOE_BLOCK_OPS:
        return "MoE block (CUTLASS)"
    if role in ("qkv_a", "q_b", "o", "shared_gate_up", "shared_down", "gate_up", "down"):
        return "block-FP8 GEMMs"
    if role in ("router", "eh_proj", "lm_head"):
        return "BF16 GEMMs (router, eh_proj, LM head)"
    if role in ("mla_q_absorb", "mla_v_up", "mla_bmm_quant"):
        return "MLA absorbed BMMs"
    if role == "core_decode":
        return "MLA decode kernel"
    if role in ("all_reduce", "eh_proj_all_reduce", "logits_gather", "argmax_gather"):
        return "collectives"
    return "host" if name.startswith("host") else "norms, elementwise, sampling (priced)"


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "kernels_hopper").is_dir():
        sys.exit("usage: python benchmarks/one_request_step.py VALIDATION_DIR (a directory holding kernels/ and kernels_hopper/)")
    shared = Path(sys.argv[1])
    b200(shared)
    h200(shared)
