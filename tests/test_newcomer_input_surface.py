"""A newcomer's first hour (newc5 #1, #7, #8, #9, #15, #22): the input surface of the page's JSON API, lc.deployment and
the CLI says one thing in one line. Each test asserts the exact line a user reads, through the CLI, the API or the page."""
import json
import re

import pytest
from conftest import cli, hf_config, run

import llm_codesign as lc

pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx (in the dev extra)")
from fastapi.testclient import TestClient  # noqa: E402

from llm_codesign.web.app import create_app  # noqa: E402

BODY = {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "isl": 1024, "osl": 256, "concurrency": 8}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_backend_is_the_engine_on_every_request(client):
    """#1: `backend`, the name every answer uses, is `engine` on the page's requests: the same answer either way."""
    by_engine = client.post("/api/estimate", json={**BODY, "engine": "vllm"})
    by_backend = client.post("/api/estimate", json={**BODY, "backend": "vllm"})
    assert by_engine.status_code == by_backend.status_code == 200
    assert by_backend.json()["backend"] == "vllm" and by_backend.json()["tpot_ms"] == by_engine.json()["tpot_ms"]
    # an answer's own names sent back as a request: the same answer (`backend` was the one a request refused)
    r = by_backend.json()
    again = client.post("/api/estimate", json={k: r[k] for k in ("model", "gpu", "num_gpus", "backend", "isl", "osl", "concurrency", "arrival")})
    assert again.status_code == 200 and again.json()["tpot_ms"] == r["tpot_ms"] and again.json()["plan"] == r["plan"] == "TP1"
    lint = client.post("/api/lint", json={"model": "llama-3.1-8b", "gpu": "h100", "backend": "sglang"})
    assert lint.status_code == 200, lint.json()


@pytest.mark.parametrize("path,body,field,line", [
    # difflib's nearest of the request's fields and their aliases (SequenceMatcher ratio: backnd/backend 0.92)
    ("/api/estimate", {**BODY, "backnd": "vllm"}, "backnd", "backnd: unknown field; did you mean 'backend'?"),
    ("/api/pareto", {"model": "llama-3.1-8b", "gpus": ["h200"], "islx": 5}, "islx", "islx: unknown field; did you mean 'isl'?"),
    # nothing near: the object's fields where they are few, else where they are listed
    ("/api/estimate", {**BODY, "zzz": 1}, "zzz", "zzz: unknown field; GET /openapi.json lists the request's fields"),
    ("/api/disagg", {"model": "llama-3.1-8b", "gpu": "h100", "prefill": {"tp": 4}, "decode": {"tp": 4, "dp": 2}}, "decode.dp",
     "decode.dp: unknown field; one of: attention_dp, ep, instances, kvp, moe_tp, pp, tp"),
    # an alias beside its own field: both name one field
    ("/api/estimate", {**BODY, "engine": "vllm", "backend": "vllm"}, "backend",
     "backend: not valid beside 'engine': both name the one field; send one"),
])
def test_an_unknown_key_names_the_nearest_field(client, path, body, field, line):
    r = client.post(path, json=body)
    assert r.status_code == 422 and r.json() == {"error": line, "field": field}


def test_pareto_takes_one_gpu_as_estimate_names_it(client):
    """#1: /api/pareto's `gpu` (one id) is a one-element `gpus`: the same series as `gpus: [id]`."""
    one = {"model": "llama-3.1-8b", "num_gpus": 1, "isl": 1024, "osl": 256}
    a = client.post("/api/pareto", json={**one, "gpu": "h100"})
    b = client.post("/api/pareto", json={**one, "gpus": ["h100"]})
    assert a.status_code == b.status_code == 200 and len(a.json()["series"]) == 1
    (sa,), (sb,) = a.json()["series"], b.json()["series"]
    assert sa["gpu"] == "h100" and sa["frontier"] == sb["frontier"] and sa["frontier"]  # the one series, the same points


@pytest.mark.parametrize("options,line", [
    # 64 heads: TP3 divides none of them
    # the TPs offered are those the scale-up domain of 8 takes too (newc12 #8: 16, 32 and 64 the next check refuses)
    ({"num_gpus": 3}, "deployment: 'TP3 on 3 GPUs' is not valid; attention heads must be divisible by tp (heads [64]: tp 1, 2, 4 or 8)"),
    ({"num_gpus": 16}, "deployment: 'TP16 on 16 GPUs' is not valid; a tensor-parallel group must fit in one scale-up domain (NVLink; "
                       "PCIe within a server for PCIe cards) of 8 GPUs; plans priced on 16 GPUs: TP8 PP2"),
])
def test_lc_deployment_refuses_what_estimate_would(options, line):
    """#8: refused when built, in the line `estimate` gives, not later when priced."""
    with pytest.raises(lc.InputError) as e:
        lc.deployment("llama-3.1-70b", gpu="h100", **options)
    assert str(e.value) == line


def test_lc_deployment_leaves_memory_to_the_pricing():
    """#8's memory half: 70.6e9 params x 2 B (BF16) = 141.2 GB of weights on one GPU, + activations and a 2-token sequence =
    145.3 GB = 135.3 GiB, + the 2,046 more tokens of a 1k/1k sequence at 80 x 8 x 128 x 2 x 2 B = 327,680 B each (0.67 GB,
    0.31 GiB) = 135.6 GiB > the 79.6 GiB (85.5e9 B) an H100 reports; TP2 halves the weights to 70.6 GB, which fits: the least
    count, priced. Built (an engine registered later may price it), refused by estimate in the CLI's line."""
    dep = lc.deployment("llama-3.1-70b", gpu="h100", tp=1)
    with pytest.raises(lc.InputError) as e:
        lc.estimate("llama-3.1-70b", dep, lc.Workload(isl=1024, osl=1024, concurrency=1))
    assert str(e.value).startswith("deployment: 'TP1 on 1xh100' is not valid; needs 135.6 GiB per GPU for one sequence, H100 SXM "
                                   "reports 79.6 GiB (80 GB on the data sheet")
    assert str(e.value).endswith("at least 2 GPUs hold it, e.g. TP2 (priced: one sequence fits), or lower the precision")


def test_out_of_memory_names_the_least_gpus_and_a_plan_that_prices():
    """#22: DeepSeek-R1 FP8 (671e9 params ~ 1 B each = 671 GB; /8 = 84 GB + activations = 88 GB = 81.6 GiB > 85.5 GB = 79.6
    GiB) on 8 H100s under
    EP8: raising EP or PP on the same 8 GPUs changes nothing per GPU; 16 GPUs halve it (42 GB) and TP8 PP2 EP8 prices."""
    code, out, err = cli("estimate", "deepseek-r1", "--gpu", "h100", "--gpus", "8", "--ep", "8")
    assert code == 2 and err.strip() == (
        "error: deployment: 'TP8 EP8 on 8xh100' is not valid; needs 81.6 GiB per GPU for one sequence, H100 SXM reports 79.6 GiB (80 "
        "GB on the data sheet): at least "
        "16 GPUs hold it, e.g. TP8 PP2 EP8 (priced: one sequence fits), or lower the precision")
    code, out, _ = cli("estimate", "deepseek-r1", "--gpu", "h100", "--tp", "8", "--pp", "2", "--ep", "8", "--json")
    assert code == 0 and json.loads(out)["plan"] == "TP8 PP2 EP8"


def test_estimate_prices_replicas_once():
    """#7: --replicas N: one instance priced, per-GPU and per-user figures unchanged; GPUs, requests and tok/s times N."""
    args = ("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--isl", "1024", "--osl", "256", "--concurrency", "32", "--json")
    one = json.loads(cli(*args)[1])
    three = json.loads(cli(*args, "--replicas", "3")[1])
    assert three["output_tok_s_per_gpu"] == one["output_tok_s_per_gpu"] and three["tpot_ms"] == one["tpot_ms"]
    rep = three["replicas"]
    # 3 copies of 1 GPU: 3 GPUs, 3 x 32 = 96 requests, 3 x 1 x tok/s/GPU in all
    assert (rep["count"], rep["instance_gpus"], rep["gpus"], rep["concurrency"]) == (3, 1, 3, 96)
    assert rep["output_tok_s"] == pytest.approx(3 * one["output_tok_s_per_gpu"], rel=1e-12)
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h100", "--gpus", "16", "--tp", "8")
    assert code == 2 and err.strip().endswith("these sizes make an instance of 8 GPUs: ask for 8, and 2 replicas of it (estimate "
                                              "and export take replicas; pareto searches copies)")


def test_estimate_heading_counts_every_gpu_and_the_concurrency_per_replica_and_in_all():
    """newc6 #21: "on 8x H200 SXM (x2 replicas)" read as 8 GPUs split in two; 2 replicas of TP8 price 2 x 8 = 16 GPUs and
    64 requests each, 2 x 64 = 128 in all."""
    code, out, err = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8", "--concurrency", "64",
                         "--replicas", "2")
    assert code == 0, err
    assert "llama-3.1-70b on 16x H200 SXM: 2 replicas of TP8 (8 GPUs each), W:fp8 A:fp8 KV:bf16, trtllm" in out
    assert re.search(r"│ concurrency +│ +64 per replica \(128 in all\) │", out), out[:1500]
    code, out, _ = cli("estimate", "llama-3.1-70b", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8", "--concurrency", "64")
    assert code == 0 and "llama-3.1-70b on 8x H200 SXM, TP8, W:fp8" in out and re.search(r"│ concurrency +│ +64 │", out)


def test_import_says_requests_per_instance_and_across_replicas(tmp_path):
    """#9: 48 per instance on 2 replicas is 96 in flight behind the load balancer."""
    out = tmp_path / "vllm.yaml"
    code, _, err = cli("export", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--tp", "4", "--backend", "vllm", "--weight-dtype", "fp8",
                       "--kv-dtype", "fp8", "--isl", "2048", "--osl", "512", "--concurrency", "48", "--replicas", "2", "-o", str(out))
    assert code == 0, err
    code, text, err = cli("import", str(out), "--isl", "2048", "--osl", "512", "--concurrency", "48")
    assert code == 0, err
    # the exported checkpoint is the registry's FP8 one (newfixE), which import reads back as the model the export names
    # (newc8 #6: it named llama-3.1-70b-fp8, another entry, with other bands)
    # newc6 #21: the heading counts every GPU priced, 2 x 4 = 8, and what each copy is
    assert "nvidia/Llama-3.1-70B-Instruct-FP8" in out.read_text()
    assert text.startswith("llama-3.1-70b on 8x H100 SXM: 2 replicas of TP4 (4 GPUs each), W:fp8 A:fp8 KV:fp8, vllm (defaults as 0.11-0.14): 48 requests per instance "
                           "(96 across 2 replicas; --concurrency), ")


@pytest.mark.parametrize("key,typo,line", [
    # SequenceMatcher ratio intermediate_sise/intermediate_size = 2 x 16 / 34 = 0.94 >= 0.9
    ("intermediate_size", "intermediate_sise", "config.intermediate_size: missing; the config.json of model 'typo' has no "
                                               "'intermediate_size' (did you mean 'intermediate_sise'?): a positive integer"),
    ("num_attention_heads", "num_attention_head", "config.num_attention_heads: missing; the config.json of model 'typo' has no "
                                                  "'num_attention_heads' (did you mean 'num_attention_head'?): a positive integer"),
])
def test_a_missing_config_key_names_its_near_miss(tmp_path, key, typo, line):
    """#15: the misspelt key named, the model's name (its folder's) quoted: a model named `typo` read as part of the sentence."""
    cfg = json.loads(open(hf_config(tmp_path, "x")).read())
    cfg[typo] = cfg.pop(key)
    (tmp_path / "typo").mkdir()
    (tmp_path / "typo" / "config.json").write_text(json.dumps(cfg))
    code, _, err = cli("estimate", str(tmp_path / "typo" / "config.json"), "--gpu", "h100")
    assert code == 2 and err.strip() == "error: " + line


def test_a_moe_width_is_no_near_miss_of_the_dense_one():
    """moe_intermediate_size is a key of its own (ratio 2 x 17 / 38 = 0.895 < 0.9): not offered for intermediate_size."""
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 1000, "moe_intermediate_size": 1024}
    with pytest.raises(lc.InputError) as e:
        lc.get_model(cfg)
    assert str(e.value) == "config.intermediate_size: missing; the config.json of model 'custom' has no 'intermediate_size': a positive integer"


def test_workload_bounds_isl_as_the_cli_does():
    """#22: one bound, 2^24 = 16,777,216 tokens, for lc.Workload and --isl (Workload took 100,000,000)."""
    assert lc.Workload(isl=1 << 24, osl=1 << 24).isl == 16_777_216
    with pytest.raises(lc.InputError) as e:
        lc.Workload(isl=(1 << 24) + 1)
    assert str(e.value) == "isl: 16777217 is not valid; a positive integer number of tokens (at most 16,777,216)"
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--isl", str((1 << 24) + 1))
    assert code == 2 and err.strip() == "error: isl: '16777217' is not valid; an integer from 1 to 16,777,216, or a whole number of k (1k = 1,024 tokens, InferenceX's 1k) (--isl)"


@pytest.mark.torch
def test_bench_without_a_gpu_says_so_first(tmp_path):
    """#22: --device auto with no CUDA/ROCm device is refused as that, not as a missing --system for CPU rows."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    r = run("bench", "gemm", "--model", "llama-3.1-8b", "-o", str(tmp_path / "g.csv"))
    assert r.returncode == 2 and r.stderr.strip() == (
        f"error: device: 'auto' is not valid; no CUDA or ROCm device found (torch {torch.__version__} sees none): bench measures "
        "GPUs; --device cpu --system GPU_ID only for a smoke test (CPU timings under that GPU's label)")
