"""spec/engines/trtllm.py: TensorRT-LLM's defaults, and its exporter (explore/export_engines/trtllm.py),
whose Dynamo worker carries the sizes as flags and the rest of its options as one mapping."""
import json

import numpy as np

from llm_codesign.spec.engines import TRTLLM, get_engine
from llm_codesign.spec.hardware import get_gpu


def test_defaults():
    for gid in ("a100", "h100", "b200"):
        g = get_gpu(gid)
        assert (TRTLLM.step_tokens(g), TRTLLM.max_batch(g)) == (8192, 4096.0)  # max_num_tokens; trtllm-bench's cap
    assert TRTLLM.kv_budget == ("free", 0.90, 1.0) and TRTLLM.admission is None  # GUARANTEED_NO_EVICT
    assert get_engine("TensorRT-LLM") is TRTLLM and get_engine("trt-llm") is TRTLLM
    # eh_proj row-parallel over TP unless attention DP is on
    assert TRTLLM.mtp_eh_proj_split(np.array([1, 2, 8])).tolist() == [True, False, False]
    # its own block-scaled kernels, the kernel tables'; its attention kernels are the tables' own
    assert TRTLLM.gemm_kernel("hopper", "fp8_block") == "fp8_block"
    assert TRTLLM.attention_time_factor("hopper", "mla", "decode", kv_fp8=True) == 1.0
    # its all-reduce kernels need NVLink: NCCL on PCIe cards whatever the size
    assert TRTLLM.own_allreduce(np.array([1e3, 1e6]), 2.0, "ada").tolist() == [False, False]


def test_dynamo_worker_args_and_back():
    from llm_codesign.explore.export_engines import exporter
    from llm_codesign.explore.export_engines.base import parse_flags
    from llm_codesign.spec.plan import Deployment, Plan
    from llm_codesign.spec.registry import get_model

    r1 = get_model("deepseek-r1")
    dep = Deployment(gpu=get_gpu("b200"), num_gpus=8, plan=Plan(1, 1, 8, 1, 8, 1), precision=r1.default_precision, max_num_tokens=4096)
    x = exporter("trtllm")
    words = x.worker_args(r1, dep, 256, "decode")
    args = parse_flags(words)
    # attention DP 8: TensorRT-LLM's TP 8 with attention DP on, 256 / 8 requests per rank, the 0.9 KV fraction
    assert (args["tensor-parallel-size"], args["expert-parallel-size"], args["enable-attention-dp"]) == (8, 8, True)
    assert (args["max-batch-size"], args["max-num-tokens"], args["free-gpu-memory-fraction"]) == (32, 4096, 0.9)
    assert json.loads(words[words.index("--override-engine-args") + 1])["kv_cache_config"] == {"dtype": "auto"}
    args.pop("disaggregation-mode")
    o, model = x.worker_options(args)
    assert model == "deepseek-ai/DeepSeek-R1" and x.plan_from(o, r1) == (dep.plan, 256)
