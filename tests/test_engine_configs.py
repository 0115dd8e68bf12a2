"""`import` of the engines' own configurations, as people run them: the plan, precision and batch read
from a vLLM command line or --config YAML, an SGLang launch_server command, a TensorRT-LLM
extra_llm_api_options YAML or trtllm-serve command; the options not modelled listed, not refused."""
import json
from dataclasses import replace

import pytest
from conftest import cli
from typer.testing import CliRunner

from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.explore.export import read_config
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan

VLLM_CMD = """#!/bin/sh
# Llama 3.1 70B with FP8 weights and KV cache on one 8xH200 node
VLLM_USE_V1=1 vllm serve meta-llama/Llama-3.1-70B-Instruct \\
  --tensor-parallel-size 8 \\
  --quantization fp8 --kv-cache-dtype fp8_e4m3 \\
  --max-num-seqs 256 --max-num-batched-tokens 8192 \\
  --gpu-memory-utilization 0.95 --max-model-len 16384 \\
  --host 0.0.0.0 --port 8000 --served-model-name llama --enable-prefix-caching
"""

SGLANG_CMD = """python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --ep 8 --enable-dp-attention --dp 8 \\
  --trust-remote-code --mem-fraction-static 0.85 --max-running-requests 512 --chunked-prefill-size 16384 \\
  --kv-cache-dtype fp8_e4m3 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 \\
  --speculative-num-draft-tokens 4 --host 0.0.0.0 --port 30000
"""

TRTLLM_YAML = """# DeepSeek-R1 FP4 on 8 B200, max throughput
enable_attention_dp: true
cuda_graph_config:
  enable_padding: true
  max_batch_size: 256
kv_cache_config:
  dtype: fp8
  free_gpu_memory_fraction: 0.85
moe_config:
  backend: CUTLASS
print_iter_log: true
tensor_parallel_size: 8
moe_expert_parallel_size: 8
max_batch_size: 256
max_num_tokens: 8192
"""


def _golden(imp, *, model, plan, precision, concurrency, replicas=1, step_tokens=None):
    d = imp.deployment
    assert (imp.model.name, d.plan, d.precision.label(), imp.concurrency, imp.replicas) == (model, plan, precision, concurrency, replicas)
    if step_tokens is not None:
        assert d.max_num_tokens == step_tokens


def test_vllm_command_line():
    imp = read_config(VLLM_CMD, "serve.sh", gpu=get_gpu("h200"))
    _golden(imp, model="llama-3.1-70b", plan=Plan(8, 1, 1, 1, 1, 1), precision="W:fp8 A:fp8 KV:fp8", concurrency=256, step_tokens=8192)
    assert imp.engine == "vllm" and imp.deployment.num_gpus == 8
    # the server's and the cache's options the deployment does not hold: listed, not refused
    assert imp.ignored == ("enable-prefix-caching", "host", "max-model-len", "port", "served-model-name")
    assert imp.deployment.kv_fraction == 0.95  # --gpu-memory-utilization: the KV budget's fraction (Deployment.kv_fraction)


def test_vllm_short_flags_equals_and_underscores_on_a_moe_model():
    # -tp/-dp/-ep are vLLM's short flags (arg_utils.py), --max_num_seqs=64 its underscore and = forms;
    # each of the 2 DP ranks schedules 64, the experts run EP over all 8 GPUs
    cmd = ("vllm serve Qwen/Qwen3-30B-A3B -tp 4 -dp 2 -ep --max_num_seqs=64 --kv-cache-dtype fp8 "
           """--speculative-config '{"method": "eagle3", "model": "x/eagle3-head", "num_speculative_tokens": 3}'""")
    imp = read_config(cmd, "cmd.txt", gpu=get_gpu("h100"), acceptance=2.2)
    _golden(imp, model="qwen3-30b-a3b", plan=Plan(4, 1, 8, 1, 2, 1), precision="W:bf16 A:bf16 KV:fp8", concurrency=128)
    s = imp.deployment.spec
    assert (s.method, s.k, s.mean_accepted, s.draft_model) == ("eagle3", 3, 2.2, "x/eagle3-head") and imp.ignored == ()


def test_vllm_dense_data_parallel_ranks_are_replicas():
    imp = read_config("vllm serve meta-llama/Llama-3.1-8B -dp 4 -tp 2 --max-num-seqs 32", "x", gpu=get_gpu("h100"))
    _golden(imp, model="llama-3.1-8b", plan=Plan(2, 1, 1, 1, 1, 1), precision="W:bf16 A:bf16 KV:bf16", concurrency=32, replicas=4)


def test_vllm_config_yaml_and_the_command_line_over_it(tmp_path):
    # a `vllm serve --config` YAML takes underscores for dashes; the command line's flags win over it
    (tmp_path / "cfg.yaml").write_text("model: meta-llama/Llama-3.1-8B-Instruct\ntensor_parallel_size: 2\nmax-num-seqs: 128\n"
                                       "kv-cache-dtype: auto\nport: 8000\n")
    imp = read_config((tmp_path / "cfg.yaml").read_text(), str(tmp_path / "cfg.yaml"), gpu=get_gpu("h100"))
    _golden(imp, model="llama-3.1-8b", plan=Plan(2, 1, 1, 1, 1, 1), precision="W:bf16 A:bf16 KV:bf16", concurrency=128)
    assert imp.ignored == ("port",)
    cmd = tmp_path / "serve.sh"
    cmd.write_text("vllm serve --config cfg.yaml --max-num-seqs 32 -q fp8\n")
    imp = read_config(cmd.read_text(), str(cmd), gpu=get_gpu("h100"))
    _golden(imp, model="llama-3.1-8b", plan=Plan(2, 1, 1, 1, 1, 1), precision="W:fp8 A:fp8 KV:bf16", concurrency=32)


@pytest.mark.parametrize("word,ep", [("yes", 4), ("on", 4), ("no", 1), ("off", 1)])
def test_yaml_1_1_booleans_read_as_the_engines_read_them(word, ep):
    # vLLM's --config and TensorRT-LLM's extra_llm_api_options are read with yaml.safe_load (YAML 1.1): `no` and
    # `off` are false (the experts then TP-sharded over the 4 ranks, attention TP8)
    imp = read_config(f"model: Qwen/Qwen3-30B-A3B\ntensor-parallel-size: 2\ndata-parallel-size: 2\nenable-expert-parallel: {word}\n",
                      "v.yaml", gpu=get_gpu("h100"))
    assert imp.deployment.plan == Plan(2, 1, ep, 4 // ep, 2, 1)
    trt = read_config(f"tensor_parallel_size: 8\nenable_attention_dp: {word}\n", "t.yaml", model="deepseek-r1", gpu=get_gpu("b200"))
    assert (trt.deployment.plan.tp, trt.deployment.plan.adp) == ((1, 8) if ep == 4 else (8, 1))


@pytest.mark.parametrize("text, kw, line", [
    # an on/off option holding anything but true or false, in every engine's way in: read by its truth, 7 was true (the
    # experts run expert-parallel) and the answer priced a deployment the file does not state
    ("model: Qwen/Qwen3-30B-A3B\ntensor-parallel-size: 2\nenable-expert-parallel: 7\n", {}, "enable-expert-parallel: 7 is not valid; true or false"),
    ("model: Qwen/Qwen3-30B-A3B\ntensor-parallel-size: 2\nenable_chunked_prefill: maybe\n", {}, "enable-chunked-prefill: 'maybe' is not valid; true or false"),
    ("vllm serve Qwen/Qwen3-30B-A3B -tp 2 --enable-expert-parallel=2", {}, "enable-expert-parallel: 2 is not valid; true or false"),
    ("python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 4 --dp-size 4 --enable-dp-attention=1", {},
     "enable-dp-attention: 1 is not valid; true or false"),
    ("tensor_parallel_size: 8\nenable_attention_dp: 8\n", {"model": "deepseek-r1"}, "enable_attention_dp: 8 is not valid; true or false"),
    ("tensor_parallel_size: 8\nenable_chunked_prefill: 'yes'\n", {"model": "deepseek-r1", "engine": "trtllm"},
     "enable_chunked_prefill: 'yes' is not valid; true or false"),
])
def test_an_on_off_option_that_is_not_true_or_false_is_one_line(text, kw, line):
    with pytest.raises(InputError) as e:
        read_config(text, "c", **({"gpu": get_gpu("b200")} | kw))
    assert str(e.value) == line


@pytest.mark.parametrize("backend, flag", [("vllm", "--enable-expert-parallel"), ("trtllm", "--enable-attention-dp")])
def test_an_on_off_flag_of_a_dynamo_worker_that_is_not_true_or_false_is_one_line(backend, flag):
    import yaml

    from llm_codesign.explore import yaml_io
    from llm_codesign.explore.export import export_dynamo, read_dynamo
    from llm_codesign.spec.plan import Deployment
    from llm_codesign.spec.registry import get_model

    r1, b200 = get_model("deepseek-r1"), get_gpu("b200")
    dep = Deployment(gpu=b200, num_gpus=8, plan=Plan(1, 1, 8, 1, 8, 1), precision=r1.default_precision, backend=backend, max_num_tokens=8192)
    text = export_dynamo(r1, prefill=dep, decode=dep, prefill_instances=1, decode_instances=1, concurrency=64)
    doc = yaml.safe_load(text)
    args = next(c for c in doc["spec"]["components"] if c["type"] == "decode")["podTemplate"]["spec"]["containers"][0]["args"]
    args.insert(args.index(flag) + 1, "3")
    head = [line for line in text.splitlines() if line.startswith("#")]
    with pytest.raises(InputError) as e:
        read_dynamo("\n".join(head) + "\n" + yaml_io.dump(doc))
    assert str(e.value) == f"{flag[2:]}: 3 is not valid; true or false"


def test_sglang_command_line():
    # --tp is argparse's prefix of --tp-size, --ep SGLang's alias of --ep-size; --dp 8 with the deprecated
    # --enable-dp-attention is attention DP 8; EAGLE is the MTP drafter on DeepSeek; the checkpoint's FP8 blocks kept
    imp = read_config(SGLANG_CMD, "launch.sh", gpu=get_gpu("b200"), acceptance=2.5)
    _golden(imp, model="deepseek-r1", plan=Plan(1, 1, 8, 1, 8, 1), precision="W:fp8_block A:fp8_block KV:fp8", concurrency=512,
            step_tokens=16384)
    assert (imp.deployment.spec.method, imp.deployment.spec.k) == ("mtp", 3)
    assert imp.ignored == ("host", "port", "trust-remote-code") and imp.deployment.kv_fraction == 0.85
    dense = read_config("python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 4 --dp 2", "x", gpu=get_gpu("h100"))
    _golden(dense, model="qwen3-32b", plan=Plan(4, 1, 1, 1, 1, 1), precision="W:bf16 A:bf16 KV:bf16", concurrency=None, replicas=2)


def test_trtllm_extra_llm_api_options_yaml_with_the_model_given():
    imp = read_config(TRTLLM_YAML, "extra_llm_api_options.yaml", model="nvidia/DeepSeek-R1-0528-FP4", gpu=get_gpu("b200"))
    # attention DP: every rank attention TP1 and its own batch of 256; the NVFP4 checkpoint's weights
    _golden(imp, model="deepseek-r1-nvfp4", plan=Plan(1, 1, 8, 1, 8, 1), precision="W:nvfp4 q/kv-W:bf16 A:nvfp4 KV:fp8",
            concurrency=2048, step_tokens=8192)
    # its CUDA graphs read (padded up to 256 a rank), not ignored
    assert imp.engine == "trtllm" and imp.ignored == ("moe_config.backend", "print_iter_log")
    assert imp.deployment.cuda_graph_max_bs == 256
    assert imp.deployment.kv_fraction == 0.85
    with pytest.raises(InputError, match=r"^model: missing; this trtllm configuration names no model: give --model"):
        read_config(TRTLLM_YAML, "x.yaml", gpu=get_gpu("b200"))


@pytest.mark.parametrize("yaml,line", [
    # a plain value where TensorRT-LLM takes a mapping (was an AttributeError: 'int' object has no attribute 'get')
    ("kv_cache_config: 5", "kv_cache_config: 5 is not valid; a mapping of TensorRT-LLM fields: dtype, free_gpu_memory_fraction, "
     "enable_block_reuse, tokens_per_block, max_tokens"),
    ("speculative_config: [1]", "speculative_config: [1] is not valid; a mapping of TensorRT-LLM fields: decoding_type, max_draft_len, "
     "speculative_model, max_matching_ngram_size, is_keep_all, is_use_oldest, is_public_pool"),
    ("context_parallel_size: 2\ncp_config: helix", "cp_config: 'helix' is not valid; a mapping of TensorRT-LLM fields: cp_type"),
])
def test_trtllm_yaml_with_a_value_where_a_mapping_belongs_is_one_line(yaml, line):
    with pytest.raises(InputError) as e:
        read_config(f"tensor_parallel_size: 1\n{yaml}\n", "x.yaml", engine="trtllm", model="llama-3.1-8b", gpu=get_gpu("h100"))
    assert str(e.value) == line


def test_trtllm_serve_command_with_its_yaml(tmp_path):
    (tmp_path / "extra.yaml").write_text("enable_attention_dp: true\nkv_cache_config:\n  dtype: fp8\n")
    cmd = tmp_path / "run.sh"
    cmd.write_text("trtllm-serve nvidia/DeepSeek-R1-FP4 --backend pytorch --tp_size 8 --ep_size 8 --max_batch_size 128 "
                   "--max_num_tokens 4096 --kv_cache_free_gpu_memory_fraction 0.9 --extra_llm_api_options extra.yaml\n")
    imp = read_config(cmd.read_text(), str(cmd), gpu=get_gpu("b200"))
    _golden(imp, model="deepseek-r1-nvfp4", plan=Plan(1, 1, 8, 1, 8, 1), precision="W:nvfp4 q/kv-W:bf16 A:nvfp4 KV:fp8",
            concurrency=1024, step_tokens=4096)
    assert imp.ignored == () and imp.deployment.kv_fraction == 0.9  # --kv_cache_free_gpu_memory_fraction


@pytest.mark.parametrize("text, kw, line", [
    # a model the registry lacks: one line, and the way round it
    ("vllm serve /models/my-llama -tp 8", {}, "model: '/models/my-llama' is not valid; "),
    ("port: 8000\n", {}, "config: 'c' is not valid; a vLLM or SGLang command line"),
    ("vllm serve meta-llama/Llama-3.1-8B -q awq_4bit", {}, "quantization: 'awq_4bit' is not valid; a method llm-codesign models: "),
    ("vllm serve meta-llama/Llama-3.1-70B -tp 8 --speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": 2}'", {},
     "acceptance: not given; the configuration drafts tokens"),
    ("vllm serve meta-llama/Llama-3.1-8B", {"gpu": None}, "gpu: missing; an engine's configuration names no GPU"),
    # values the engines would refuse: the option named, never a traceback or a TP0 plan
    ("vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size eight", {}, "tensor-parallel-size: 'eight' is not valid; a whole number"),
    ("vllm serve meta-llama/Llama-3.1-8B -tp -2", {}, "tensor-parallel-size: -2 is not valid; a whole number from 1 to 65,536"),
    ("vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 1.5", {}, "max-num-seqs: 1.5 is not valid; a whole number from 1 to 1,048,576"),
    ("python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 2 --attn-dp-size 4", {},
     "tp-size: 2 is not valid; a multiple of attn-dp-size x dcp-size (4)"),
    ("vllm serve meta-llama/Llama-3.1-8B --speculative-config '{bad'", {}, "speculative-config: '{bad' is not valid; a JSON mapping"),
    # YAML that is no mapping of options, a model that is no name, a date where a number goes (read as written)
    ("- {a: 1}\n", {}, "config: 'c' is not valid; a vLLM or SGLang command line"),
    ("model: [a]\ntensor-parallel-size: 2\n", {}, "model: ['a'] is not valid; a model's name: a bundled name or Hugging Face id"),
    ("model: meta-llama/Llama-3.1-8B\nmax-num-seqs: 2024-01-01\n", {}, "max-num-seqs: '2024-01-01' is not valid; a whole number"),
])
def test_what_cannot_be_read_is_one_line(text, kw, line):
    with pytest.raises(InputError) as e:
        read_config(text, "c", **({"gpu": get_gpu("h100")} | kw))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)
    if "my-llama" in line:
        assert str(e.value).endswith("or --model NAME for the model this configuration serves")


def test_cli_import_of_a_vllm_command_prices_as_estimate(tmp_path):
    """The same figures as `estimate` with the flags the command states, and the ignored options in one line."""
    f = tmp_path / "serve.sh"
    f.write_text(VLLM_CMD)
    runner = CliRunner()
    got = json.loads(runner.invoke(app, ["import", str(f), "--gpu", "h200", "--json"]).stdout)
    est = json.loads(runner.invoke(app, ["estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8", "--kv-dtype",
                                         "fp8", "--concurrency", "256", "--max-num-tokens", "8192", "--engine", "vllm", "--json"]).stdout)
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "concurrency", "plan", "precision", "max_num_tokens"):
        assert got[k] == est[k], k
    r = runner.invoke(app, ["import", str(f), "--gpu", "h200"], env={"COLUMNS": "2000"})
    assert r.exit_code == 0 and r.stdout.splitlines()[-1] == (
        "ignored (not modelled): enable-prefix-caching, host, port, served-model-name")  # max-model-len read: crev #5
    r = runner.invoke(app, ["import", str(f)])
    assert r.exit_code == 2 and r.stderr.strip() == ("error: gpu: missing; serve.sh names no GPU (an engine's configuration "
                                                     "does not): give --gpu, the one it runs on (e.g. --gpu h200)")


def _trtllm_yaml(chunked: str) -> str:
    return f"tensor_parallel_size: 8\nmax_batch_size: 64\nmax_num_tokens: 2048\n{chunked}"


@pytest.mark.parametrize("chunked, isl, ttft_ms, tpot_ms, tok_s_gpu", [
    # 1,500-token prompts under a 2,048-token budget: whole prompts, one a step, with the flag off (TensorRT-LLM's default) or
    # unset; with it on, the 2,048 less the other 63 requests' decode tokens a step (serve.aggregated.prompt_budget), so the
    # 64 prompts' 96,000 tokens take 49 steps, not 64, less of each decode
    # (the final fit's figures; the one-shot all-reduce's cost per further peer, 2.69 us
    # + 0.104 us a peer on H100's table, moved them by < 0.05%: 270.675, 36.3344, 214.767 and 273.177, 33.3622, 233.243 before;
    # the serving re-fit 43e853e, TensorRT-LLM's prefill queue share 0.017 -> 0.028 and host step 35 -> 45 us, moved them by
    # up to 12%: 270.700, 36.3469, 214.694 and 273.202, 33.3758, 233.150 before; the final re-fit b5dd5a5, the queue share
    # 0.0282 -> 0.0171 and request overhead 0.736 -> 1.070 ms: TTFT down by up to 16%, TPOT up 0.7-0.9%, the rate down
    # 0.3-0.4%; 303.937, 35.0297, 221.729 and 302.212, 32.3403, 239.561 before; mtf's serving re-fit 117a840, TensorRT-LLM's
    # queue share 0.0171 -> 0.0151, host step 121.8 -> 34.9 us, eager launch 3.89 -> 1.84 us: TTFT down 5.3-5.9%, TPOT down
    # 0.7-1.0%, the rate up 0.8-1.1%; 262.400, 35.3032, 221.053 and 266.125, 32.5831, 238.839 before; TensorRT-LLM's request
    # cost overlapping the wait at its documented 3 ms, where 0.24 ms fitted was added: TTFT down 0.35-0.39 ms; 246.989, 34.9620,
    # 223.525 and 252.071, 32.3613, 240.822 before; revfix2 + the re-fit ba3a87f, the queue share 0.0171 -> 0.0133, host step
    # 39.6 -> 10 us, eager launch 1.84 -> 0.68 us: TTFT down 5.4-6.3%, TPOT down 0.7-0.8%, the rate up 0.7-1.0%; 246.637,
    # 34.9620, 223.534 and 251.681, 32.3613, 240.833 before; the re-fit 14086fe, the queue share 0.0133 -> 0.0151, host step
    # 10.0 -> 18.7 us, eager launch 0.68 -> 0.28 us: TTFT up 2.9-5.3%, TPOT down 0.3%, the rate up 0.2%; 231.069, 34.6692,
    # 225.757 and 238.036, 32.1265, 242.934 before; the 2026-12-06 wait split 0d4c090, TensorRT-LLM's closed-loop wait
    # 1.5 -> 2 steps (TTFT 258.506 and 263.033 at it: up half a decode step, 14-15 ms), and the re-fit 8ddcbce, host step
    # 10.0 -> 12.8 us, eager launch 0 -> 0.71 us, host cost a sequence 1.43 -> 2.36 us: TTFT up 6.3-6.9%, TPOT up 0.2-0.3%,
    # the rate down 0.4%; 243.346, 34.5424, 226.257 and 248.770, 32.0266, 243.359 before; the re-fit 0db78f4, host step
    # 12.8 -> 16.5 us, eager launch 0.71 -> 0.14 us, host cost a sequence 2.36 -> 1.84 us: TTFT down 0.4-0.5%, TPOT down
    # 0.35-0.4%, the rate up 0.35-0.4%; 260.147, 34.6335, 225.261 and 264.483, 32.1026, 242.348 before; the re-fit c7c8c06,
    # host step 16.5 -> 18.7 us, eager launch 0.14 -> 0.20 us, host cost a sequence 1.84 -> 2.36 us: TTFT up 0.09-0.10%, TPOT
    # up 0.12%, the rate down 0.12%; 258.911, 34.4897, 226.204 and 263.395, 31.9897, 243.208 before)
    ("", 1500, 259.178, 34.5309, 225.935),
    ("enable_chunked_prefill: false\n", 1500, 259.178, 34.5309, 225.935),
    ("enable_chunked_prefill: true\n", 1500, 263.637, 32.0295, 242.909),
    # a 4,000-token prompt runs chunked or not at all: TensorRT-LLM refuses it past max_num_tokens unchunked, and so does
    # import with the option left out (test_an_unchunked_prompt_over_the_configs_budget_is_refused); chunked, as it was priced  # 526.196, 68.9552, 113.088 before the re-fit c7c8c06; 528.333, 69.2077, 112.674 before the re-fit 0db78f4; 502.266, 69.1118, 112.988 before the 2026-12-06 wait split 0d4c090 + re-fit 8ddcbce (TTFT 525.532 at 0d4c090); 487.950, 69.3756, 112.659 before the re-fit 14086fe; 507.999, 69.8297, 111.824 before the re-fit ba3a87f; 508.351, 69.8297, 111.821 before the request cost overlapped the wait; 549.479, 72.4677, 107.627 before the serving re-fit 43e853e; 634.030, 69.8939, 110.961 before b5dd5a5; 534.298, 70.5420, 110.568 before mtf's re-fit 117a840
    ("enable_chunked_prefill: true\n", 4000, 526.613, 69.0018, 113.011),
])
def test_trtllm_chunked_prefill_reaches_the_estimate(tmp_path, chunked, isl, ttft_ms, tpot_ms, tok_s_gpu):
    """An imported TensorRT-LLM configuration's enable_chunked_prefill is how its steps take prompts (golden figures: H200,
    Llama-3.1-70B TP8, 64 requests, OSL 256)."""
    f = tmp_path / "extra_llm_api_options.yaml"
    f.write_text(_trtllm_yaml(chunked))
    r = CliRunner().invoke(app, ["import", str(f), "--gpu", "h200", "--model", "llama-3.1-70b", "--isl", str(isl), "--osl", "256", "--json"])
    got = json.loads(r.stdout)
    assert got["ignored"] == [] and got["deployment"].get("chunked_prefill") == {"": None, "enable_chunked_prefill: false\n": False}.get(chunked, True)
    assert (got["ttft_ms"], got["tpot_ms"], got["output_tok_s_per_gpu"]) == pytest.approx((ttft_ms, tpot_ms, tok_s_gpu), rel=1e-5)


def test_an_unchunked_prompt_over_the_configs_budget_is_refused(tmp_path):
    # crev #5: the YAML states max_num_tokens 2,048 and leaves enable_chunked_prefill at TensorRT-LLM's default, off
    f = tmp_path / "extra_llm_api_options.yaml"
    f.write_text(_trtllm_yaml(""))
    r = CliRunner().invoke(app, ["import", str(f), "--gpu", "h200", "--model", "llama-3.1-70b", "--isl", "4000", "--osl", "256"])
    assert r.exit_code == 2 and r.output.strip().startswith("error: isl: 4000 is not valid; at most max_num_tokens (2,048): ")


def test_trtllm_chunked_prefill_is_the_run_flag_and_round_trips():
    """The deployment's option prices as the run's scheduler flag (SchedulerFlags.chunked_prefill, what validate reads from
    campaigns); export writes it and import reads it back, so the estimate is the same."""
    import numpy as np

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.serve.aggregated import Serving, evaluate
    from llm_codesign.spec.harness import SchedulerFlags

    imp = read_config(_trtllm_yaml("enable_chunked_prefill: true\n"), "x.yaml", model="llama-3.1-70b", gpu=get_gpu("h200"))
    dep = imp.deployment
    assert dep.chunked_prefill is True
    cal = calibration_for(dep.gpu)
    kw = dict(cal=cal, concurrency=np.array([16, 64]), isl=1500, osl=256)
    own = evaluate(imp.model, Serving.of(dep), **kw)
    run = evaluate(imp.model, Serving.of(replace(dep, chunked_prefill=None)), flags=SchedulerFlags(chunked_prefill=True), **kw)
    off = evaluate(imp.model, Serving.of(replace(dep, chunked_prefill=False)), **kw)
    for k in ("ttft_s", "tpot_s", "output_tok_s_per_gpu"):
        assert np.array_equal(own[k], run[k]) and not np.array_equal(own[k], off[k]), k
    text = export_config(imp.model, dep, engine="trtllm", concurrency=64, extra={"isl": 1500, "osl": 256})
    assert "enable_chunked_prefill: true" in text
    # and its CUDA graphs padded up to the 64 a rank runs, which the import reads as the deployment's capture
    assert read_export(text).deployment == replace(dep, cuda_graph_max_bs=64)


@pytest.mark.parametrize("flag, max_batch", [
    # Llama-3.1-8B BF16 on one H100 (85.52 GB), SGLang: weights 16.06 GB and the KV pool share mem_fraction_static of the
    # GPU; a sequence of 1,024 + 0.5 x 1,024 tokens holds 1,536 x 131,072 B = 201.33 MB (32 layers x 8 KV heads x 128 x
    # K,V x 2 B). The engine's own fraction for TP1 is 0.835: (0.835 x 85.52 - 16.06) / 0.20133 = 274.9 -> 274 sequences;
    # --mem-fraction-static 0.8: (0.8 x 85.52 - 16.06) / 0.20133 = 260.06 -> 260
    ("", 274),
    (" --mem-fraction-static 0.8", 260),
])
def test_sglang_mem_fraction_static_sizes_the_kv_cache(tmp_path, flag, max_batch):
    f = tmp_path / "launch.sh"
    f.write_text(f"python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1{flag}\n")
    got = json.loads(CliRunner().invoke(app, ["import", str(f), "--gpu", "h100", "--json"]).stdout)
    assert (got["ignored"], got["max_batch"], got["deployment"].get("kv_fraction")) == ([], max_batch, 0.8 if flag else None)


@pytest.mark.parametrize("model, flag, advice", [
    # Llama-3.1-8B fits a whole H100 (16.06 GB of weights): the fraction it states is the cause, and the option is named;
    # 79.65 GiB x 0.19 = 15.1 GiB, x 0.5 = 39.8 GiB
    ("Llama-3.1-8B-Instruct", "0.19", "15.1 GiB usable by sglang): raise --mem-fraction-static (the deployment states 0.19)"),
    # Llama-3.1-70B's 141 GB of weights fit no fraction of one H100: the usual advice
    # (141.2 GB / 2 = 70.6 GB > 43 GB = 39.8 GiB usable; / 4 = 35.3 GB fits: the least count, priced with the fraction the launch states)
    ("Llama-3.1-70B-Instruct", "0.5", "39.8 GiB usable by sglang): at least 4 GPUs hold it, e.g. TP4 (priced: one sequence fits), or lower the precision"),
])
def test_a_stated_kv_fraction_too_small_names_its_option(tmp_path, model, flag, advice):
    f = tmp_path / "launch.sh"
    f.write_text(f"python -m sglang.launch_server --model-path meta-llama/{model} --tp 1 --mem-fraction-static {flag}\n")
    r = CliRunner().invoke(app, ["import", str(f), "--gpu", "h100"])
    assert r.exit_code == 2 and r.stderr.strip().endswith(advice), r.stderr


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_stated_kv_fraction_round_trips_through_export(engine):
    """export writes the deployment's KV fraction as the engine's option and import reads it back; the engine's own
    (written where the deployment states none) reads back as none."""
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.spec.plan import Deployment
    from llm_codesign.spec.registry import get_model

    model = get_model("llama-3.1-8b")
    dep = Deployment(gpu=get_gpu("h100"), num_gpus=1, backend=engine, max_num_tokens=8192, kv_fraction=0.7,
                     max_batch=64)  # the batch cap export writes at 64 requests, which import reads back
    text = export_config(model, dep, engine=engine, concurrency=64)
    assert {"vllm": "gpu-memory-utilization: 0.7", "sglang": "--mem-fraction-static 0.7",
            "trtllm": "free_gpu_memory_fraction: 0.7"}[engine] in text
    graphs = {"cuda_graph_max_bs": 64} if engine == "trtllm" else {}  # TensorRT-LLM's export captures its 64 a rank
    assert read_export(text).deployment == replace(dep, **graphs) and Deployment.from_dict(dep.to_dict()) == dep
    own = replace(dep, kv_fraction=None)
    assert read_export(export_config(model, own, engine=engine, concurrency=64)).deployment == replace(own, **graphs)
    with pytest.raises(InputError) as e:  # a deployment read from JSON (the API, the page) is checked as the CLI's
        Deployment.from_dict(dep.to_dict() | {"kv_fraction": 1.5})
    assert str(e.value) == "kv_fraction: 1.5 is not valid; a fraction in (0, 1], or absent (the engine's own)"


@pytest.mark.parametrize("text, line", [
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --mem-fraction-static 1.5",
     "mem-fraction-static: 1.5 is not valid; a fraction in (0, 1]"),
    ("vllm serve meta-llama/Llama-3.1-8B --gpu-memory-utilization 0", "gpu-memory-utilization: 0 is not valid; a fraction in (0, 1]"),
    ("model: meta-llama/Llama-3.1-8B\nkv_cache_config:\n  free_gpu_memory_fraction: most\n",
     "free_gpu_memory_fraction: 'most' is not valid; a fraction in (0, 1]"),
])
def test_a_kv_fraction_an_engine_refuses_is_one_line(text, line):
    with pytest.raises(InputError) as e:
        read_config(text, "c", engine="trtllm" if "kv_cache_config" in text else None, gpu=get_gpu("h100"))
    assert str(e.value) == line


@pytest.mark.parametrize("engine, graphs, line", [
    # each engine's spelling of a capture up to 48 a rank (vLLM's counts tokens: 48 x (1 + 0 drafted)) and of none
    ("vllm", 48, "max-cudagraph-capture-size: 48"),
    ("sglang", 48, "--cuda-graph-max-bs-decode 48"),
    ("trtllm", 48, "max_batch_size: 48"),
    ("vllm", 0, "enforce-eager: true"),
    ("sglang", 0, "--disable-decode-cuda-graph"),
    ("trtllm", 0, "cuda_graph_config: null"),
])
def test_the_cuda_graph_capture_round_trips_through_export(engine, graphs, line):
    """export writes the deployment's capture as the engine's option, import reads the same capture back (0: graphs off,
    every decode step eager); a deployment that states none reads back as none, but for TensorRT-LLM's export, which
    writes its batch per rank padded (the LLM API's own default stops at 128)."""
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.spec.plan import Deployment
    from llm_codesign.spec.registry import get_model

    model = get_model("llama-3.1-8b")
    dep = Deployment(gpu=get_gpu("h100"), num_gpus=1, backend=engine, max_num_tokens=8192, cuda_graph_max_bs=graphs,
                     max_batch=64)  # the batch cap export writes at 64 requests, which import reads back
    text = export_config(model, dep, engine=engine, concurrency=64)
    assert line in text
    assert read_export(text).deployment == dep and Deployment.from_dict(dep.to_dict()) == dep
    own = replace(dep, cuda_graph_max_bs=None)
    back = read_export(export_config(model, own, engine=engine, concurrency=64)).deployment
    assert back.cuda_graph_max_bs == (64 if engine == "trtllm" else None)


def test_the_vllm_capture_counts_a_drafting_requests_tokens():
    """vLLM's capture sizes are tokens, 1 + k a decode request (uniform_decode_query_len): 32 requests drafting 3 write 128."""
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.spec.plan import Deployment, SpecDecoding
    from llm_codesign.spec.registry import get_model

    dep = Deployment(gpu=get_gpu("h100"), num_gpus=1, backend="vllm", max_num_tokens=8192, cuda_graph_max_bs=32,
                     spec=SpecDecoding("eagle3", 3, 2.5, draft_model="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"))
    text = export_config(get_model("llama-3.1-8b"), dep, engine="vllm", concurrency=64)
    assert "max-cudagraph-capture-size: 128" in text and read_export(text).deployment.cuda_graph_max_bs == 32


@pytest.mark.parametrize("text, engine, graphs", [
    # SGLang's older single-phase spellings (0.5.9 server_args.py:4478, the campaigns'), the per-phase list's largest
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --cuda-graph-max-bs 160", None, 160),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --disable-cuda-graph", None, 0),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --cuda-graph-bs-decode [1,2,4,24]", None, 24),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct", None, None),
    # vLLM's flags and the same inside compilation-config, and --enforce-eager
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-cudagraph-capture-size 256", None, 256),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --cudagraph-capture-sizes [1,2,4,8,96]", None, 96),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --compilation-config '{\"max_cudagraph_capture_size\": 64}'", None, 64),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --compilation-config '{\"cudagraph_mode\": \"NONE\"}'", None, 0),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager", None, 0),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct", None, None),
    # TensorRT-LLM: null turns graphs off; a bare file takes the LLM API's default
    ("model: meta-llama/Llama-3.1-8B-Instruct\ncuda_graph_config: null\n", "trtllm", 0),
    ("model: meta-llama/Llama-3.1-8B-Instruct\n", "trtllm", None),
])
def test_import_reads_each_engines_cuda_graph_capture(text, engine, graphs):
    imp = read_config(text, "c", engine=engine, gpu=get_gpu("h100"))
    assert imp.deployment.cuda_graph_max_bs == graphs
    assert not any("graph" in x for x in imp.ignored), imp.ignored


SGLANG_8B = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
VLLM_8B = "vllm serve meta-llama/Llama-3.1-8B-Instruct "


@pytest.mark.parametrize("cmd, flag, field, off", [
    # SGLang has no capture of 0: its server stops at start (base_cuda_graph_runner.py:104@0.5.23 wheel); the older spelling an
    # alias, named as typed (the newcomer reviewer: the refusal named cuda-graph-max-bs-decode, which the user never wrote)
    (SGLANG_8B, "--cuda-graph-max-bs 0", "cuda-graph-max-bs", "--disable-decode-cuda-graph"),
    (SGLANG_8B, "--cuda-graph-max-bs-decode 0", "cuda-graph-max-bs-decode", "--disable-decode-cuda-graph"),
    (SGLANG_8B, "--cuda-graph-bs-decode [0,8]", "cuda-graph-bs-decode", "--disable-decode-cuda-graph"),
    # nor has vLLM: 0 is what it writes once graphs are off; given with graphs on, VllmConfig stops (vllm.py:2554@0.33.0 wheel)
    (VLLM_8B, "--max-cudagraph-capture-size 0", "max-cudagraph-capture-size", "--enforce-eager"),
    (VLLM_8B, "--compilation-config '{\"max_cudagraph_capture_size\": 0}'", "compilation-config.max_cudagraph_capture_size", "--enforce-eager"),
    (VLLM_8B, "--max_cudagraph_capture_size 0", "max_cudagraph_capture_size", "--enforce-eager"),
])
def test_a_capture_of_0_is_refused_with_the_engines_own_off_switch(cmd, flag, field, off):
    """A decode capture of 0 read as each engine reads it: neither SGLang nor vLLM starts with one (vLLM's import read it as
    graphs off, SGLang's refused it as "a whole number from 1"), so both refuse it in one line naming the flag, the value
    and the engine's own off switch; with that switch beside it, graphs are off (0)."""
    from llm_codesign.errors import InputError

    with pytest.raises(InputError) as e:
        read_config(cmd + flag, "c", gpu=get_gpu("h100"))
    msg = str(e.value)
    assert msg.startswith(f"{field}: {'[0, 8]' if '[' in flag else 0} is not valid; 1 or more: ") and f"{off} " in msg and "turns its CUDA graphs off" in msg
    assert msg.count("\n") == 0
    assert read_config(cmd + flag + " " + off, "c", gpu=get_gpu("h100")).deployment.cuda_graph_max_bs == 0


@pytest.mark.parametrize("flag, field", [
    ("--cudagraph-capture-sizes []", "cudagraph-capture-sizes"),
    ("--compilation-config '{\"cudagraph_capture_sizes\": []}'", "compilation-config.cudagraph_capture_sizes")])
def test_an_empty_vllm_capture_list_is_refused_not_read_as_the_default(flag, field, tmp_path):
    """vLLM with graphs on stops on an empty capture list (`assert len(cudagraph_capture_sizes) > 0`,
    vllm/config/vllm.py:2561@0.33.0 wheel); import read it as no capture set, the engine's default. One line, exit 2,
    naming the field as typed; with --enforce-eager beside it, graphs are off (0)."""
    from typer.testing import CliRunner

    from llm_codesign.cli import app
    from llm_codesign.errors import InputError

    with pytest.raises(InputError) as e:
        read_config(VLLM_8B + flag, "c", gpu=get_gpu("h100"))
    assert str(e.value).startswith(f"{field}: [] is not valid; one size or more: vLLM does not start with an empty capture list; "
                                   "--enforce-eager ") and "\n" not in str(e.value)
    assert read_config(VLLM_8B + flag + " --enforce-eager", "c", gpu=get_gpu("h100")).deployment.cuda_graph_max_bs == 0
    cfg = tmp_path / "serve.sh"
    cfg.write_text(VLLM_8B + flag + "\n")
    r = CliRunner().invoke(app, ["import", str(cfg), "--gpu", "h100"])
    assert r.exit_code == 2 and f"{field}: [] is not valid" in r.output and "Traceback" not in r.output


def test_an_unpadded_trtllm_capture_list_is_read_at_its_largest_and_says_so():
    imp = read_config("model: meta-llama/Llama-3.1-8B-Instruct\ncuda_graph_config:\n  batch_sizes: [1, 2, 4, 8, 200]\n", "c",
                      engine="trtllm", gpu=get_gpu("h100"))
    assert imp.deployment.cuda_graph_max_bs == 200
    assert imp.ignored == ("cuda_graph_config.batch_sizes (unpadded: priced as padded up to its largest, the batches between its "
                           "sizes that run eagerly are not)",)


# ---- flags that take several words (data/engines/NAME.toml [nargs]) and vLLM's graph modes (branch impflags2) ----

@pytest.mark.parametrize("cmd, graphs, words", [
    # SGLang 0.5.23's List[int] fields take every word to the next flag (arg_utils.py:370-390): the largest is the capture
    (SGLANG_8B + "--cuda-graph-bs-decode 1 2 64 --tp 1", 64, ["1", "2", "64"]),
    # 0.5.9's --cuda-graph-bs (type=int, nargs="+", server_args.py:4484-4488), an alias of the -decode list
    (SGLANG_8B + "--cuda-graph-bs 1 2 4 24", 24, ["1", "2", "4", "24"]),
    # vLLM's list[int] field (CompilationConfig.cudagraph_capture_sizes, nargs "+"), a request's 1 + 0 tokens each
    (VLLM_8B + "--cudagraph-capture-sizes 1 2 64 --tensor-parallel-size 1", 64, ["1", "2", "64"]),
])
def test_a_list_flag_takes_every_word_up_to_the_next_flag(cmd, graphs, words):
    """Before, read_flags took the first word (a capture of 1) and left 2 and 64 positional."""
    imp = read_config(cmd, "c", gpu=get_gpu("h100"))
    assert imp.deployment.cuda_graph_max_bs == graphs and imp.ignored == () and imp.deployment.plan == Plan(tp=1)
    key = next(k for k in ("cuda-graph-bs-decode", "cudagraph-capture-sizes") if k in imp.options)
    assert imp.options[key] == words


def test_the_list_flags_are_the_engines_own_nargs_options():
    """Each [nargs] list is documented options only (the wheel's argparse, tools/engine_nargs.py), holding the capture lists;
    an option outside it takes one word (--served-model-name takes two in vLLM, one in SGLang)."""
    from llm_codesign.explore.export_engines.base import engine_spec, nargs_flags, read_flags

    for engine, capture in (("sglang", "cuda-graph-bs-decode"), ("vllm", "cudagraph-capture-sizes")):
        spec = engine_spec(engine)
        assert capture in nargs_flags(engine) and nargs_flags(engine) <= set(spec["options"]) | set(spec.get("command_options", ()))
    assert nargs_flags("trtllm") == frozenset()
    o, pos = read_flags(["serve", "--served-model-name", "a", "b", "--port", "8000"], "vllm")
    assert o["served-model-name"] == ["a", "b"] and pos == ["serve"] and o["port"] == 8000
    o, pos = read_flags(["--served-model-name", "a", "b"], "sglang")
    assert o["served-model-name"] == "a" and pos == ["b"]


@pytest.mark.parametrize("cmd, typed, bad", [
    (SGLANG_8B + "--cuda-graph-bs-decode 1 nan 64", "cuda-graph-bs-decode", "nan"),
    (SGLANG_8B + "--cuda-graph-bs 1 2 -3", "cuda-graph-bs", "-3"),  # argparse reads -3 as a value; the alias named as typed
    (SGLANG_8B + "--cuda-graph-bs-decode 8 1.5", "cuda-graph-bs-decode", "1.5"),
    (VLLM_8B + "--cudagraph-capture-sizes 1 inf", "cudagraph-capture-sizes", "inf"),
    (VLLM_8B + "--cudagraph_capture_sizes 4 1e3", "cudagraph_capture_sizes", "1e3"),  # int('1e3') fails in argparse too
])
def test_a_capture_list_word_that_is_not_a_size_is_one_line_exit_2(cmd, typed, bad, tmp_path, monkeypatch):
    """Before, the words after the first were positional, so nan, inf, -3 and 1.5 passed silently."""
    with pytest.raises(InputError) as e:
        read_config(cmd, "c", gpu=get_gpu("h100"))
    assert str(e.value) == f"{typed}: '{bad}' is not valid; a whole number from 1 to 1,048,576"
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["import", cmd, "--gpu", "h100"])
    assert r.exit_code == 2 and f"{typed}: '{bad}' is not valid" in r.output and "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_list_flag_with_no_word_is_refused():
    with pytest.raises(InputError) as e:
        read_config(SGLANG_8B + "--cuda-graph-bs-decode --tp 1", "c", gpu=get_gpu("h100"))
    assert str(e.value).startswith("cuda-graph-bs-decode: missing; one value or more after it (sglang 0.5.23's parser")


CC = VLLM_8B + "-cc '{{\"cudagraph_mode\": {}}}'"
PIECEWISE = "piecewise"  # priced as its graph pieces (Deployment.piecewise_graphs, tests/test_piecewise.py), no longer ignored


@pytest.mark.parametrize("cmd, graphs, ignored", [
    # CUDAGraphMode (vllm/config/compilation.py:53-63@0.33.0): a name in any case (:873-879) or the enum's value
    (CC.format('"NONE"'), 0, ()),
    (CC.format('"none"'), 0, ()),
    (CC.format("0"), 0, ()),
    (VLLM_8B + "--compilation-config '{\"cudagraph_mode\": \"NONE\", \"pass_config\": {}}'", 0, ("compilation-config.pass_config",)),
    (CC.format('"FULL"'), None, ()),
    (CC.format("2"), None, ()),
    (CC.format('"FULL_DECODE_ONLY"'), None, ()),
    (CC.format('"full_and_piecewise"'), None, ()),
    (CC.format('"PIECEWISE"'), PIECEWISE, ()),
    (CC.format("1"), PIECEWISE, ()),
    # -O levels (FlexibleArgumentParser: -O0, -O=0, -O 0; OPTIMIZATION_LEVEL_00-03, vllm/config/vllm.py:255-345)
    (VLLM_8B + "-O0", 0, ("optimization-level (0: no torch.compile; its kernels priced as -O2 compiles them)",)),
    (VLLM_8B + "-O 1", PIECEWISE, ("optimization-level (1: fewer fusions; its kernels priced as -O2 compiles them)",)),
    (VLLM_8B + "-O 1 --enforce-eager", 0, ("optimization-level (1: fewer fusions; its kernels priced as -O2 compiles them)",)),
    (VLLM_8B + "-O=3", None, ()),
    # a level's mode applies only where the run sets none (_apply_optimization_level_defaults)
    (VLLM_8B + "-O0 -cc '{\"cudagraph_mode\": \"FULL\"}'", None, ("optimization-level (0: no torch.compile; its kernels priced as -O2 compiles them)",)),
    # dotted flags fold into compilation-config before argparse (FlexibleArgumentParser, argparse_utils.py:462-500@0.33.0)
    (VLLM_8B + "--compilation-config.cudagraph_mode NONE", 0, ()),
    (VLLM_8B + "--compilation_config.cudagraph_mode=none", 0, ()),
    (VLLM_8B + "-cc.cudagraph_mode=NONE", 0, ()),
    (VLLM_8B + "-cc.cudagraph_mode PIECEWISE", PIECEWISE, ()),
    (VLLM_8B + "-cc.cudagraph_mode=FULL -cc.max_cudagraph_capture_size=32", 32, ()),
])
def test_vllm_graph_modes_as_vllm_reads_them(cmd, graphs, ignored):
    """Before, `cudagraph_mode: NONE` was priced as graphs off but compilation-config was listed as ignored, and 0 was not off.
    PIECEWISE (or -O1's) is the engine's default capture as graph pieces (piecewise_graphs), once listed as ignored."""
    imp = read_config(cmd, "c", gpu=get_gpu("h100"))
    pieces = graphs == PIECEWISE
    assert imp.deployment.cuda_graph_max_bs == (None if pieces else graphs) and imp.deployment.piecewise_graphs == pieces
    assert imp.ignored == tuple(sorted(ignored))


@pytest.mark.parametrize("cmd, line", [
    (CC.format('"HALF"'), "compilation-config.cudagraph_mode: 'HALF' is not valid; one of NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, "
                          "FULL_AND_PIECEWISE (in any case), or 0, 1, 2"),
    (CC.format("5"), "compilation-config.cudagraph_mode: 5 is not valid; one of NONE"),
    # 0.33's CompilationConfig has no `level` (`mode` took its place) and forbids other keys (vllm/config/utils.py:71)
    (VLLM_8B + "-cc '{\"level\": 0}'", "compilation-config.level: 0 is not valid; a CompilationConfig field of vLLM 0.33.0"),
    (VLLM_8B + "-O7", "-O: '-O7' is not valid; 0, 1, 2 or 3"),
    # 0.33.0's -O is the level only: -O.x becomes the level `.x`, a bare -O or `-O 7` an unknown flag (argparse_utils.py:395-406)
    (VLLM_8B + "-O.cudagraph_mode=NONE", "-O: '-O.cudagraph_mode=NONE' is not valid; 0, 1, 2 or 3"),
    (VLLM_8B + "-O 7", "-O: '-O 7' is not valid; 0, 1, 2 or 3"),
    (VLLM_8B + "-O", "-O: '-O' is not valid; 0, 1, 2 or 3"),
    (VLLM_8B + "-cc.cudagraph_mode=HALF", "compilation-config.cudagraph_mode: 'HALF' is not valid"),
])
def test_a_graph_mode_vllm_refuses_is_one_line(cmd, line):
    with pytest.raises(InputError) as e:
        read_config(cmd, "c", gpu=get_gpu("h100"))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


@pytest.mark.parametrize("engine, written, listed", [
    ("sglang", "--cuda-graph-max-bs-decode 48", "--cuda-graph-bs-decode 1 2 4 8 16 24 32 40 48"),
    ("sglang", "--cuda-graph-max-bs-decode 48", "--cuda-graph-bs 1 2 4 8 16 24 32 40 48"),
    ("vllm", "max-cudagraph-capture-size: 48", "cudagraph-capture-sizes: [1, 2, 4, 8, 16, 24, 32, 40, 48]"),
])
def test_the_capture_round_trips_in_its_list_form(engine, written, listed):
    """An export's capture of 48 and the same capture as the engine's list (its largest, 48: the engine pads a batch up to
    the next size) read back to one deployment, priced alike; the command line's list form too."""
    from llm_codesign.api import estimate
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.spec.plan import Deployment
    from llm_codesign.spec.registry import get_model

    model = get_model("llama-3.1-8b")
    dep = Deployment(gpu=get_gpu("h100"), num_gpus=1, backend=engine, max_num_tokens=8192, cuda_graph_max_bs=48,
                     max_batch=64)  # the batch cap export writes at 64 requests, which import reads back
    text = export_config(model, dep, engine=engine, concurrency=64)
    assert written in text
    back = read_export(text.replace(written, listed)).deployment
    assert back == read_export(text).deployment == dep
    wl = lc_workload(64)
    assert estimate(model, back, wl).tpot_s == estimate(model, dep, wl).tpot_s
    if engine == "sglang":  # the command line itself: the list and the cap flag start one deployment
        a = read_config(SGLANG_8B + listed, "c", gpu=get_gpu("h100")).deployment
        assert a == read_config(SGLANG_8B + written, "c", gpu=get_gpu("h100")).deployment and a.cuda_graph_max_bs == 48
    else:
        a = read_config(VLLM_8B + "--cudagraph-capture-sizes 1 2 4 8 16 24 32 40 48", "c", gpu=get_gpu("h100")).deployment
        assert a == read_config(VLLM_8B + "--max-cudagraph-capture-size 48", "c", gpu=get_gpu("h100")).deployment
        assert a.cuda_graph_max_bs == 48


def lc_workload(c: int):
    import llm_codesign as lc

    return lc.Workload(isl=1024, osl=1024, concurrency=c)


# ---- vLLM's human-readable integers (branch smallfix) ----

def test_human_int_is_vllms_human_readable_int():
    """vllm/utils/argparse_utils.py:30-74@0.33.0: lower-case suffixes are powers of 1,000 and take decimals, upper-case
    powers of 1,024 and do not; anything else is int()."""
    from llm_codesign.explore.export_engines.vllm import human_int

    assert [human_int(v) for v in ("1k", "1K", "25.6k", "2M", "3g", "1t", "1T", " 12 ", "8_192")] == [
        1_000, 1_024, 25_600, 2 * 1_048_576, 3_000_000_000, 10**12, 2**40, 12, 8_192]
    for bad in ("1.5K", "8x", "1e3", "8 k", "k"):
        with pytest.raises(ValueError):
            human_int(bad)


@pytest.mark.parametrize("flags, field, value", [
    # --max-num-batched-tokens: human_readable_int_args (vllm/engine/arg_utils.py:397-408@0.33.0)
    ("--max-num-batched-tokens 8k", "max_num_tokens", 8_000),
    ("--max-num-batched-tokens=8K", "max_num_tokens", 8_192),
    ("--max-num-batched-tokens 2.5k", "max_num_tokens", 2_500),
    # a dotted compilation-config key's value: JSON, else human_readable_int (argparse_utils.py:475-485)
    ("-cc.max_cudagraph_capture_size 1k", "cuda_graph_max_bs", 1_000),
    ("--compilation-config.max_cudagraph_capture_size=1K", "cuda_graph_max_bs", 1_024),
    # compilation-config's JSON, its bare numbers expanded before validation (arg_utils.py:302-321, :371)
    ("-cc '{\"max_cudagraph_capture_size\": 2k}'", "cuda_graph_max_bs", 2_000),
])
def test_vllm_reads_its_human_readable_integers_through_the_cli(flags, field, value, tmp_path, monkeypatch):
    """Before, `--max-num-batched-tokens 8k` was refused ('max_num_tokens: '8k' is not valid') although vLLM reads 8,000."""
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["import", VLLM_8B + "--max-num-seqs 64 " + flags, "--gpu", "h100", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["deployment"][field] == value and out["ignored"] == []


def test_a_vllm_yaml_configs_values_are_read_as_its_parser_reads_their_text(tmp_path, monkeypatch):
    # load_config_file hands each scalar to the parser as str(value) (argparse_utils.py:653-671@0.33.0): 16k is 16,000,
    # 128k for --max-model-len 128,000, read (the 2,048-token requests within it: no longer listed ignored, crev #5)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("model: meta-llama/Llama-3.1-8B-Instruct\nmax_num_batched_tokens: 16k\n"
                                     "max_model_len: 128k\n")
    r = CliRunner().invoke(app, ["import", "c.yaml", "--gpu", "h100", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["deployment"]["max_num_tokens"] == 16_000 and out["ignored"] == []


@pytest.mark.parametrize("flags, line", [
    # a binary suffix with decimals: vLLM's ArgumentTypeError
    ("--max-num-batched-tokens 1.5K", "max-num-batched-tokens: '1.5K' is not valid; a whole number, or one with vLLM 0.33.0's"),
    # a float's text: int('8192.0') fails in vLLM's parser too
    ("--max-num-batched-tokens 8192.0", "max-num-batched-tokens: 8192.0 is not valid; a whole number, or one with vLLM"),
    ("--max-model-len 1x", "max-model-len: '1x' is not valid; a whole number, or one with vLLM"),
    # plain int flags (argparse's int): no suffix
    ("--max-num-seqs 1k", "max-num-seqs: '1k' is not valid; a whole number from 1 to 1,048,576"),
    ("--max-cudagraph-capture-size 1k", "max-cudagraph-capture-size: '1k' is not valid; a whole number from 1 to 1,048,576"),
    ("--cudagraph-capture-sizes 1k 2k", "cudagraph-capture-sizes: '1k' is not valid; a whole number from 1 to 1,048,576"),
    ("-cc '{\"max_cudagraph_capture_size\": 1.5K}'",
     "cc: '{\"max_cudagraph_capture_size\": 1.5K}' is not valid; JSON whose unquoted"),
])
def test_a_vllm_integer_vllm_refuses_is_one_line_exit_2(flags, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["import", VLLM_8B + flags, "--gpu", "h100"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip().splitlines()[0].startswith("error: " + line), r.output


def test_a_yaml_compilation_config_mapping_keeps_1k_text_as_vllm_does(tmp_path, monkeypatch):
    # a YAML mapping reaches vLLM as json.dumps, "1k" quoted: not expanded (only bare tokens are), pydantic's int refuses it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("model: meta-llama/Llama-3.1-8B-Instruct\ncompilation_config:\n"
                                     "  max_cudagraph_capture_size: 1k\n")
    r = CliRunner().invoke(app, ["import", "c.yaml", "--gpu", "h100"])
    assert r.exit_code == 2 and "compilation-config.max_cudagraph_capture_size: '1k' is not valid" in r.output


# ---- a Dynamo worker's list flags (branch smallfix) ----

def _edited_dynamo(tmp_path, backend: str, extra: list) -> str:
    """A Dynamo export of Llama-3.1-8B (TP1 pools on H100, 32 in flight) with `extra` words appended to its decode worker's
    args, written as d.yaml in `tmp_path`; its path."""
    import yaml

    from llm_codesign.explore import yaml_io

    out = tmp_path / "d.yaml"
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--backend", backend, "--prefill", "tp=1", "--decode", "tp=1",
                       "--concurrency", "32", "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    doc = yaml.safe_load(text)
    next(c for c in doc["spec"]["components"] if c["type"] == "decode")["podTemplate"]["spec"]["containers"][0]["args"] += extra
    out.write_text("\n".join(line for line in text.splitlines() if line.startswith("#")) + "\n" + yaml_io.dump(doc))
    return str(out)


@pytest.mark.parametrize("backend, words, cap", [
    ("sglang", ["--cuda-graph-bs-decode", "1", "2", "64", "--tp-size", "1"], 64),  # 64 covers the 32: priced as the default
    ("sglang", ["--cuda-graph-bs-decode", "1", "2", "8", "--tp-size", "1"], 8),
    ("sglang", ["--cuda-graph-bs", "1", "2", "8"], 8),  # SGLang's alias of the -decode list (sglang.toml [aliases])
    ("vllm", ["--cudagraph-capture-sizes", "1", "2", "8"], 8),
])
def test_a_list_flag_in_a_dynamo_worker_is_read_whole(backend, words, cap, tmp_path):
    """Before, the worker's args were read a word a flag: `--cuda-graph-bs-decode 1 2 64` stopped at '2' ("export: '2' is
    not valid; --flag value pairs"). Now the decode pool captures up to the list's largest as the plain command line's
    list does; at 8 its steps of 32 requests run eagerly: the TPOT of `disagg --decode-cuda-graph-max-bs 8` (11.06 ms
    for SGLang against 10.04 with the default 256 the unedited export keeps)."""
    path = _edited_dynamo(tmp_path, backend, words)
    code, stdout, err = cli("import", path, "--json")
    assert code == 0, err
    got = json.loads(stdout)
    assert got["decode"]["cuda_graph_max_bs"] == cap and got["prefill"].get("cuda_graph_max_bs") is None
    code, stdout, err = cli("disagg", "llama-3.1-8b", "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=1",
                            "--engine", backend, "--concurrency", "32", "--decode-cuda-graph-max-bs", str(cap), "--json")
    assert code == 0, err
    assert got["tpot_ms"] == pytest.approx(json.loads(stdout)["rows"][0]["tpot_ms"], rel=1e-9)
    code, stdout, err = cli("import", _edited_dynamo(tmp_path, backend, []), "--json")  # the export's own: the default capture
    assert code == 0, err
    default = json.loads(stdout)["tpot_ms"]
    assert default < got["tpot_ms"] if cap < 32 else default == pytest.approx(got["tpot_ms"], rel=1e-9)


@pytest.mark.parametrize("words, line", [
    (["--cuda-graph-bs-decode", "1", "nan"], "cuda-graph-bs-decode: 'nan' is not valid; a whole number from 1 to 1,048,576"),
    (["--cuda-graph-bs-decode"], "cuda-graph-bs-decode: missing; one value or more after it"),
    (["--cuda-graph-bs-decode", 64], "args: 64 is not valid; text: a container's args are strings"),  # YAML's unquoted 64
])
def test_a_bad_list_in_a_dynamo_worker_is_one_line_exit_2(words, line, tmp_path):
    code, stdout, err = cli("import", _edited_dynamo(tmp_path, "sglang", words))
    assert code == 2 and "Traceback" not in stdout + err
    assert line in " ".join((stdout + err).split()), stdout + err


def test_a_dynamo_vllm_workers_human_readable_budget_is_read_as_vllm_reads_it(tmp_path):
    # dynamo.vllm parses its args with vLLM's own parser (dynamo/vllm/args.py:136-137@ai-dynamo 1.6.1): the budget
    # written after the export's 8192 (argparse's last word wins) is 4k = 4,000
    code, stdout, err = cli("import", _edited_dynamo(tmp_path, "vllm", ["--max-num-batched-tokens", "4k"]), "--json")
    assert code == 0, err
    assert json.loads(stdout)["decode"]["max_num_tokens"] == 4_000
    code, stdout, err = cli("import", _edited_dynamo(tmp_path, "vllm", ["--max-num-batched-tokens", "1.5K"]))
    assert code == 2 and "max-num-batched-tokens: '1.5K' is not valid; a whole number, or one with vLLM" in " ".join(err.split())


def test_a_dynamo_vllm_workers_launch_admits_the_workload_and_import_repeats_its_prediction(tmp_path):
    # each vLLM worker is given --max-model-len for the workload's requests as export_config's file is (ceil(2,048 + 1,024
    # to 1,024) = 3,072), and the export prices the decode pool at the max-num-seqs it writes (16: a stated cap shrinks
    # vLLM's sampler warm-up, leftD), so import gives its header's figures (frev13: the header priced vLLM's default
    # 1,024, TTFT 14,452 ms against import's 10,612)
    import yaml

    out = tmp_path / "dyn.yaml"
    code, _, err = cli("export", "llama-3.1-70b", "--gpu", "h100", "--backend", "dynamo", "--engine", "vllm", "--prefill", "tp=2",
                       "--decode", "tp=2", "--prefill-instances", "1", "--decode-instances", "1", "--isl", "2048", "--osl", "1024",
                       "--concurrency", "16", "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    for comp in yaml.safe_load(text)["spec"]["components"][1:]:
        args = comp["podTemplate"]["spec"]["containers"][0]["args"]
        assert args[args.index("--max-model-len") + 1] == "3072" and args[args.index("--max-num-seqs") + 1] == "16"
    predicted = json.loads(text.splitlines()[0].split(":", 1)[1])["predicted"]
    code, stdout, err = cli("import", str(out), "--json")
    assert code == 0, err
    got = json.loads(stdout)
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
        assert got[k] == pytest.approx(predicted[k], rel=1e-9)
