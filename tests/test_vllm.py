"""spec/engines/vllm.py: vLLM's defaults as its EngineArgs and custom all-reduce state them, and its exporter
(explore/export_engines/vllm.py)."""
import numpy as np

from llm_codesign.spec.engines import VLLM
from llm_codesign.spec.engines.vllm import custom_allreduce
from llm_codesign.spec.hardware import get_gpu

MIB = 2.0**20


def test_batch_defaults_by_gpu():
    # EngineArgs.get_batch_defaults: max_num_batched_tokens 8192 and max_num_seqs 1024 on GPUs of >= 70 GiB
    # other than A100, else 2048 and 256 (the 80 GB A100 is excluded by name)
    for gid, tokens, seqs in (("h100", 8192, 1024.0), ("b200", 8192, 1024.0), ("a100", 2048, 256.0), ("l40s", 2048, 256.0)):
        g = get_gpu(gid)
        assert (VLLM.step_tokens(g), VLLM.max_batch(g)) == (tokens, seqs)
    assert VLLM.kv_budget == ("total", 0.92, 0.5) and VLLM.admission == (0.0, 0.0)


def test_custom_all_reduce_sizes():
    # world sizes 2, 4, 6, 8 below 8 MiB; on PCIe cards only between two GPUs
    n = np.array([2.0, 3.0, 4.0, 6.0, 8.0, 16.0])
    assert custom_allreduce(1 * MIB, n, "hopper").tolist() == [True, False, True, True, True, False]
    assert custom_allreduce(8 * MIB, 8.0, "hopper").tolist() is False
    assert custom_allreduce(1 * MIB, n, "ada").tolist() == [True, False, False, False, False, False]
    # on Hopper its custom kernel's; on Blackwell below the symmetric-memory limits (tests/test_custom_allreduce.py
    # test_vllm_blackwell_all_reduce_dispatch): 2 MiB at 2 and 4 GPUs, 1 MiB at 6 and 8
    assert VLLM.own_allreduce(1 * MIB, n, "hopper").tolist() == custom_allreduce(1 * MIB, n, "hopper").tolist()
    assert VLLM.own_allreduce(1 * MIB, n, "blackwell").tolist() == [True, False, True, False, False, False]


def test_deepgemm_and_mtp_eh_proj():
    assert VLLM.gemm_kernel("hopper", "fp8_block") == "fp8_deepgemm" and VLLM.gemm_kernel("blackwell", "fp8_block") == "fp8_block"
    assert VLLM.mtp_eh_proj_split(np.array([1, 8])).tolist() == [False, False]  # nn.Linear, whole on every GPU


def test_export_writes_its_memory_utilization():
    from llm_codesign.explore.export_engines.vllm import vllm_options
    from llm_codesign.spec.plan import Deployment, Plan
    from llm_codesign.spec.registry import get_model

    llama = get_model("llama-3.1-70b")
    dep = Deployment(gpu=get_gpu("h100"), num_gpus=8, plan=Plan(8), precision=llama.default_precision, backend="vllm")
    o = vllm_options(llama, dep, 64)
    assert (o["gpu-memory-utilization"], o["max-num-batched-tokens"], o["max-num-seqs"]) == (0.92, 8192, 64)
