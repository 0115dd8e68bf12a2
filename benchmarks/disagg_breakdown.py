"""Where a disaggregated first token's time goes on 8-GPU nodes (H100, H200, MI355X, B200): DeepSeek-R1 FP8, 1k/1k and
8k/1k, each GPU's InferenceX SGLang recipe as committed, priced with serve.disagg.evaluate_disagg (docs/disaggregated.md).

The recipes (SemiAnalysisAI/InferenceX, benchmarks/multi_node/srt-slurm-recipes/dsr1/sglang/<gpu>-fp8/ at commit 792d8aa4;
MI355X: configs/amd-master.yaml dsr1-fp8-mi355x-sglang-disagg and benchmarks/multi_node/amd_utils/models.yaml at 843c6254):
instances and plans, the prefill's chunked-prefill-size (its step budget), the decode's max-running-requests (its slots),
the KV cache dtype (H100/H200 set none: BF16, the model's dtype). Their prefill workers' --load-balance-method round_robin is
read by the SGLang builds they name (0.5.8-0.5.9) as follow_bootstrap_room on a PD prefill server (sglang server_args.py:790-800
@0.5.8.post1), so each attention-DP rank queues its own prompts: SGLang's own routing. H100's prefill and decode
are TP16 over two nodes, which `disagg` refuses (a tensor-parallel group must fit one NVLink domain) and validation prices
over the NICs; it is priced here as validation would. MI355X's 1k/1k shape is its 8k/1k recipe's (no 1k/1k recipe).

    python benchmarks/disagg_breakdown.py
"""
from __future__ import annotations

import numpy as np

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.disagg import evaluate_disagg
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

# gpu, isl, recipe, kv dtype, prefill plan, decode plan, decode instances, chunk, decode max-running-requests per rank,
# prefill instances (1 where not given). MI355X's DEP prefill chunk is MORI_MAX_DISPATCH_TOKENS_PREFILL (8,192: env.sh:255)
# x its TP size 8 (models.yaml DeepSeek-R1 prefill.dp), its decode 4,096 running (decode.dp)
RECIPES = [
    ("h100", 1024, "h100-fp8-1p2d-max-tp", "bf16", "tp=16", "tp=16", 2, 2048, 128),
    ("h100", 8192, "h100-fp8-1p1d-max-tp", "bf16", "tp=16", "tp=16", 1, 2048, 128),
    ("h200", 1024, "low-latency-1p9d", "bf16", "tp=8", "tp=8", 9, 163840, 256),
    ("h200", 8192, "bs16-1p3d", "bf16", "tp=8", "tp=8", 3, 32768, 32),
    ("mi355x", 1024, "1P TP8 / 2D TP8 (8k/1k shape)", "fp8", "tp=8", "tp=8", 2, 262144, 128),
    ("mi355x", 8192, "1P TP8 / 2D TP8", "fp8", "tp=8", "tp=8", 2, 262144, 128),
    ("mi355x", 8192, "2P DEP8 / 1D DEP8", "fp8", "attention_dp=8,ep=8", "attention_dp=8,ep=8", 1, 65536, 4096, 2),
    ("b200", 1024, "1k1k stp_lowlat[1]", "fp8", "tp=8,ep=8", "tp=8,ep=8", 3, 32768, 512),
    ("b200", 8192, "8k1k_stp_lowlat_2", "fp8", "attention_dp=8", "tp=8", 6, 65536, 22),
]
CONCURRENCY = np.array([1.0, 64.0])


def main() -> None:
    m = get_model("deepseek-r1")
    print("| GPU | ISL | recipe | C | prefill | KV transfer | admission (less transfer) | prefill step + queue | decode slot | TTFT |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for gpu_id, isl, recipe, kv, pre, dec, n_d, chunk, mrr, *n_p in RECIPES:
        g = get_gpu(gpu_id)
        cal = calibration_for(g)
        one = dict(gpu=g, precision=Precision.of("fp8_block", kv=kv), backend="sglang")
        # the chunk is the prefill workers'; the decode workers' recipes set none (the engine's default)
        pools = [Deployment(num_gpus=int(p.gpus), plan=p, max_num_tokens=mnt, **one)
                 for p, mnt in ((Plan.parse(pre, m, "prefill"), chunk), (Plan.parse(dec, m, "decode"), None))]
        r = evaluate_disagg(m, *pools, calibration=cal, prefill_instances=n_p[0] if n_p else 1, decode_instances=n_d, concurrency=CONCURRENCY, isl=isl,
                            osl=1024, decode_max_batch=mrr / pools[1].plan.adp)
        overhead = pools[0].engine.costs(cal).ttft_overhead
        for j, c in enumerate(CONCURRENCY):
            def ms(key, r=r, j=j):
                return 1e3 * float(np.broadcast_to(r[key], CONCURRENCY.shape)[j])
            parts = (ms("prefill_alone_s") + 1e3 * overhead, ms("kv_transfer_s"), ms("decode_admission_s") - ms("kv_transfer_s"),
                     ms("prefill_step_wait_s") + ms("prefill_wait_s"), ms("decode_slot_wait_s"), ms("ttft_s"))
            print(f"| {g.name} | {isl} | {recipe} | {int(c)} | " + " | ".join(f"{x:,.1f}" for x in parts) + " |")


if __name__ == "__main__":
    main()
