"""The engine's own batch cap (TensorRT-LLM max_batch_size, vLLM --max-num-seqs, SGLang --max-running-requests):
`import` carries it into Deployment.max_batch and `estimate --max-batch` takes it, so requests past it queue for a
slot (first/slot_queue) instead of being priced as all running (newcomer review newc6 #3); and SGLang's all-to-all MoE
backends, which the server turns into EP = TP (newc6 #17)."""
import json

import pytest
from conftest import cli

from llm_codesign.errors import InputError
from llm_codesign.explore.export import read_config
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan

# an engine's own extra_llm_api_options, as `export --concurrency 64` writes it for llama-3.1-8b on one H100
T8 = "max_batch_size: 64\nmax_num_tokens: 8192\ncuda_graph_config:\n  enable_padding: true\n  max_batch_size: 64\n"
ISL_OSL = ("--isl", "1024", "--osl", "1024")


def _import(path, *args) -> dict:
    code, out, err = cli("import", str(path), "--gpu", "h100", "--model", "llama-3.1-8b", *ISL_OSL, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _estimate(*args) -> dict:
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "trtllm", *ISL_OSL, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_import_of_a_trtllm_cap_of_64_at_200_runs_64_and_queues_the_rest(tmp_path):
    """max_batch_size 64 at --concurrency 200: 64 run (TPOT and tok/s/GPU of 64 running, exactly), the other 136 wait in
    whole waves. Hand-derived from the 64-request answer (bundled profile, 2026-12-07): life of a slot = TTFT + (OSL - 1)
    x TPOT = 200.40 + 1023 x 12.9405 = 13,438.6 ms; the queue (first/slot_queue) = (200 / 64 - 1) x life = 2.125 x
    13,438.6 = 28,557 ms, so TTFT = 200.4 + 28,557 = 28,757 ms (main priced all 200 running: TPOT 26.7 ms, TTFT 264 ms);
    tok/s/GPU = 64 x 1024 / 13.4386 s = 4,877."""
    f = tmp_path / "t8.yaml"
    f.write_text(T8)
    at64, at200 = _import(f, "--concurrency", "64"), _import(f, "--concurrency", "200")
    assert at64["deployment"]["max_batch"] == at200["deployment"]["max_batch"] == 64
    assert at200["max_batch"] == 64 and at200["concurrency"] == 200
    assert at200["tpot_ms"] == at64["tpot_ms"] and at200["output_tok_s_per_gpu"] == at64["output_tok_s_per_gpu"]
    life = at64["ttft_ms"] + 1023 * at64["tpot_ms"]
    assert at200["ttft_ms"] == pytest.approx(at64["ttft_ms"] + (200 / 64 - 1) * life, rel=1e-4)
    assert at64["output_tok_s_per_gpu"] == pytest.approx(64 * 1024 / (life / 1e3), rel=1e-4)
    assert "caps the batch at 64 requests" in at200["over_capacity"]
    # without the cap the same GPU runs more at once (its KV cache holds 295): a slower step, the figure main gave
    free = _estimate("--concurrency", "200", "--cuda-graph-max-bs", "64")
    assert free["max_batch"] > 200 and free["tpot_ms"] > 1.5 * at200["tpot_ms"]
    # estimate --max-batch prices the same deployment the same
    capped = _estimate("--concurrency", "200", "--cuda-graph-max-bs", "64", "--max-batch", "64")
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "max_batch"):
        assert capped[k] == at200[k], k


def test_a_cap_above_the_kv_limit_moves_nothing():
    """The running batch is min(KV limit, cap): a cap the KV cache never reaches prices as no cap, to the bit."""
    free, loose = _estimate("--concurrency", "400"), _estimate("--concurrency", "400", "--max-batch", "100000")
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "max_batch"):
        assert loose[k] == free[k], k


def test_vllm_max_num_seqs_caps_the_running_batch():
    """--max-num-seqs 64 at 128 requests: TPOT and tok/s/GPU of the 64 that run (main: 21.55 ms, 5867 tok/s/GPU, as if all
    128 ran); TTFT gains one whole wave of the 64-request life."""
    cmd = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 64"
    at64, at128 = (json.loads(cli("import", cmd, "--gpu", "h100", "--concurrency", c, "--json")[1]) for c in ("64", "128"))
    assert at128["deployment"]["max_batch"] == 64
    assert at128["tpot_ms"] == at64["tpot_ms"] and at128["output_tok_s_per_gpu"] == at64["output_tok_s_per_gpu"]
    life = at64["ttft_ms"] + 1023 * at64["tpot_ms"]
    assert at128["ttft_ms"] == pytest.approx(at64["ttft_ms"] + (128 / 64 - 1) * life, rel=1e-4)


def test_sglang_max_running_requests_is_split_over_its_attention_dp_ranks():
    """SGLang's --max-running-requests is the server's: each attention-DP worker runs max(1, n // attn_dp_size)
    (pool_configurator.py:1141-1145@0.5.23): 512 over DP8 is 64 a rank; TensorRT-LLM's and vLLM's are a rank's already."""
    sgl = read_config("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 --enable-dp-attention "
                      "--max-running-requests 512", gpu=get_gpu("h200"))
    assert sgl.deployment.max_batch == 64 and sgl.concurrency == 512
    trt = read_config("enable_attention_dp: true\ntensor_parallel_size: 8\nmoe_expert_parallel_size: 8\nmax_batch_size: 32\n",
                      model="deepseek-r1", gpu=get_gpu("b200"))
    assert trt.deployment.max_batch == 32 and trt.concurrency == 256  # 32 a rank x 8 ranks
    assert read_config("vllm serve meta-llama/Llama-3.1-8B-Instruct", gpu=get_gpu("h100")).deployment.max_batch is None


def test_max_batch_bad_input_and_round_trip():
    """One line naming the field, the value and what is valid; a deployment's record keeps its cap."""
    with pytest.raises(InputError, match=r"max_batch.*0.*from 1 to"):
        Deployment(gpu=get_gpu("h100"), num_gpus=1, max_batch=0)
    with pytest.raises(InputError, match="max_batch"):
        Deployment(gpu=get_gpu("h100"), num_gpus=1, max_batch=True)
    d = Deployment(gpu=get_gpu("h100"), num_gpus=1, plan=Plan(), max_batch=48)
    assert d.to_dict()["max_batch"] == 48 and Deployment.from_dict(d.to_dict()).max_batch == 48
    assert "max_batch" not in Deployment(gpu=get_gpu("h100"), num_gpus=1).to_dict()
    import llm_codesign as lc

    assert lc.deployment("llama-3.1-8b", gpu="h100", max_batch=32).max_batch == 32
    with pytest.raises(InputError, match="max_batch: -1 is not valid"):
        lc.deployment("llama-3.1-8b", gpu="h100", max_batch=-1)
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--max-batch", "0")
    assert code == 2 and "--max-batch" in err and "Traceback" not in err + out


DSR1 = ("python -m sglang.launch_server --model deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 --enable-dp-attention "
        "--cuda-graph-max-bs 128")


@pytest.mark.parametrize("flags, ep, graphs", [
    ("", 1, 128),  # no all-to-all backend: the MoE is TP8 over the stage
    ("--moe-a2a-backend deepep", 8, 128),  # ep_size = tp_size (overrides.py:1578-1619@0.5.23); auto mode keeps decode graphs
    ("--moe-a2a-backend deepep --deepep-mode normal", 8, 0),  # normal dispatch: graphs off (moe_hook.py:383-397@0.5.23)
    ("--moe-a2a-backend mooncake --ep-size 2", 8, 128),  # the server's override wins over --ep-size
])
def test_sglang_all_to_all_backends_apply_the_servers_own_overrides(flags, ep, graphs):
    imp = read_config(f"{DSR1} {flags}", gpu=get_gpu("h200"))
    d = imp.deployment
    assert (int(d.plan.ep), int(d.plan.moe_tp), int(d.plan.adp)) == (ep, 8 // ep, 8)
    assert d.cuda_graph_max_bs == graphs
    assert not any(x.startswith(("moe-a2a-backend", "deepep-mode")) for x in imp.ignored)
