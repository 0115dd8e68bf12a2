"""Review fixB13: vLLM's export writes the context its KV cache holds; a CUDA-graph capture of 0 (eager) on the CLI, the
page and lc alike; the page's drafter and range refusals in the CLI's words; compare's widening reasons once a GPU; the
what-if GPU's memory_gb unit."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import cli
from fastapi.testclient import TestClient

import llm_codesign as lc
from llm_codesign.cli.compare import said_once
from llm_codesign.errors import InputError
from llm_codesign.explore.export_engines.vllm import model_len
from llm_codesign.measure.intervals import Widening
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model
from llm_codesign.web.app import create_app

KEYS = ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu")


def _json(*args) -> dict:
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_a_vllm_export_writes_a_context_its_kv_cache_holds(tmp_path):
    # Llama-3.1-70B TP2 on H100s, 8,000 + 2,000 tokens at 3 requests: unset, vLLM takes the model's 131,072 tokens and
    # refuses to start where the KV cache cannot hold one such request (_check_enough_kv_cache_memory,
    # vllm/v1/core/kv_cache_planning.py:50-86@0.33.0). The file writes 10,000 rounded up to a multiple of 1,024: 10,240
    args = ["llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--backend", "vllm", "--isl", "8000", "--osl", "2000",
            "--concurrency", "3"]
    e = _json("export", *args, "-o", str(tmp_path / "v70.yaml"))
    assert "max-model-len: 10240" in (tmp_path / "v70.yaml").read_text().splitlines()
    # a token's KV a GPU: 80 layers x K and V x 8 KV heads / TP2 x 128 x 2 bytes = 163,840 bytes
    per_token = 80 * 2 * (8 // 2) * 128 * 2
    mem = _json("estimate", *args)["memory"]
    pool = (mem["kv_gb"] + mem["free_gb"]) * 1e9  # the KV cache a GPU: ~5.0 GB
    assert 10240 * per_token == 1_677_721_600 <= pool < 131072 * per_token == 21_474_836_480
    back = _json("import", str(tmp_path / "v70.yaml"))
    assert {k: back[k] for k in KEYS} == pytest.approx(e["predicted"], rel=1e-9) and back["ignored"] == []


def test_a_closed_loop_exports_context_admits_its_longest_draws(tmp_path):
    # a closed loop is vLLM's bench at --random-range-ratio 0.8, which draws ISL and OSL up to ceil(L x 1.8)
    # (vllm/benchmarks/datasets.py:488-491@0.11.0): 2,048 / 1,024 sends up to 3,687 + 1,844 = 5,531 tokens, written
    # 6,144 (waves' fixed lengths: 3,072); the file still prices as its header says
    from llm_codesign.spec.harness import longest_request

    assert longest_request(2048, 1024, "closed_loop") == 3687 + 1844 and longest_request(2048, 1024, "waves") == 3072
    assert longest_request(2048, 1024, "burst") == 3072
    args = ["llama-3.1-70b", "--gpu", "h100", "--gpus", "2", "--backend", "vllm", "--isl", "2048", "--osl", "1024", "--concurrency", "16"]
    for arrival, written in (("waves", 3072), ("closed_loop", 6144)):
        path = tmp_path / f"{arrival}.yaml"
        e = _json("export", *args, "--arrival", arrival, "-o", str(path))
        assert f"max-model-len: {written}" in path.read_text().splitlines()
        back = _json("import", str(path))
        assert {k: back[k] for k in KEYS} == pytest.approx(e["predicted"], rel=1e-9)


def test_the_context_rule_rounds_up_within_the_model_and_the_budget():
    m = get_model("llama-3.1-8b")  # 131,072 tokens of context
    assert model_len({}, m, 10000) == 10240 and model_len({}, m, 10240) == 10240 and model_len({}, m, 1) == 1024
    assert model_len({}, m, 131000) == 131072 and model_len({}, replace(m, max_context=10000), 9999) == 10000
    # chunked prefill off: vLLM's max_model_len may not pass the step budget (verify_max_model_len), which export wrote
    assert model_len({"max-model-len": 8192}, m, 4256) == 5120 and model_len({"max-model-len": 8192}, m, 8100) == 8192


def test_a_capture_of_0_is_eager_on_the_cli_the_page_and_lc(client):
    est = _json("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "8", "--cuda-graph-max-bs", "0")
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "concurrency": 8, "cuda_graph_max_bs": 0})
    assert r.status_code == 200, r.text
    assert r.json()["tpot_ms"] == pytest.approx(est["tpot_ms"], rel=1e-9)
    dep = lc.deployment("llama-3.1-8b", gpu="h100", cuda_graph_max_bs=0)
    got = lc.estimate("llama-3.1-8b", dep, lc.Workload(concurrency=8)).to_dict()
    assert dep.cuda_graph_max_bs == 0 and got["tpot_ms"] == pytest.approx(est["tpot_ms"], rel=1e-9)
    # eager is slower than the default capture: the 0 is priced, not dropped
    assert est["tpot_ms"] > _json("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "8")["tpot_ms"]
    v = lc.deployment("llama-3.1-8b", gpu="h100", engine="vllm", kv_fraction=0.8, piecewise_graphs=True)
    assert (v.kv_fraction, v.piecewise_graphs) == (0.8, True)
    with pytest.raises(InputError, match=r"^cuda_graph_max_bs: -1 is not valid; a whole number of requests from 0"):
        lc.deployment("llama-3.1-8b", gpu="h100", cuda_graph_max_bs=-1)
    with pytest.raises(InputError, match=r"^cuda_grph_max_bs: 0 is not valid; left out: not a deployment option .*cuda_graph_max_bs"):
        lc.deployment("llama-3.1-8b", gpu="h100", cuda_grph_max_bs=0)


def test_the_page_refuses_a_drafter_with_ngram_in_the_clis_line(client):
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--backend", "vllm", "--spec", "ngram", "--acceptance", "2",
                       "--draft-model", "llama-3.2-1b", "--concurrency", "4")
    line = "draft_model: 'llama-3.2-1b' is not valid; left out with --spec ngram (prompt lookup drafts from the request's own " \
           "tokens; no draft model runs)"
    assert code == 2 and line in " ".join(err.split())
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "engine": "vllm", "spec": "ngram",
                                           "acceptance": 2, "draft_model": "llama-3.2-1b", "concurrency": 4})
    assert r.status_code == 422 and r.json() == {"error": line, "field": "draft_model"}
    # without a method nothing drafts: refused on both (the CLI dropped it without a word)
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--draft-model", "llama-3.2-1b", "--concurrency", "4")
    assert code == 2 and "draft_model: 'llama-3.2-1b' is not valid; used with --spec draft or eagle3" in " ".join(err.split())


@pytest.mark.parametrize("body,field,words", [
    ({"concurrency": -3}, "concurrency", "concurrency: -3 is not valid; an integer from 1 to 1,048,576"),
    ({"prefix_hit": 1.5}, "prefix_hit", "prefix_hit: 1.5 is not valid; a number from 0 up to (not including) 1"),
    ({"spec": "eagle3", "draft_len": 40, "acceptance": 2}, "draft_len", "draft_len: 40 is not valid; an integer from 1 to 16"),
    ({"acceptance_rates": [0.5, 1.5]}, "acceptance_rates.1", "acceptance_rates.1: 1.5 is not valid; a number from 0 to 1"),
    ({"gpu_hour_price": -1}, "gpu_hour_price", "gpu_hour_price: -1 is not valid; a number above 0, or bundled"),
])
def test_the_page_says_a_range_as_the_cli_does(client, body, field, words):
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", **body})
    assert r.status_code == 422 and r.json() == {"error": words, "field": field}


def test_the_cli_says_concurrencys_range_in_the_pages_words():
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "-3")
    assert code == 2 and "an integer from 1 to 1,048,576" in err


def test_compare_says_a_gpus_widening_once():
    # an MI300X's two rows: one lacks the GEMM and attention tables, the other the attention table alone (the same term)
    both = Widening("kernel_table", "no GEMM bf16 kernel table on CDNA3; no attention kernel table on CDNA3", factors=(1.12, 1.36),
                    levels=(80, 95), note="the largest term, the band's")
    attn = Widening("kernel_table", "no attention kernel table on CDNA3", factors=(1.12, 1.36), levels=(80, 95),
                    note="the largest term, the band's")
    run = Widening("unrun", "no serving run on any CDNA3 GPU", factors=(1.07, 1.26), levels=(80, 95))
    assert said_once([run, both, run, attn]) == [run, both] and said_once([attn, attn]) == [attn]
    code, out, _ = cli("compare", "llama-3.1-8b", "--gpu", "h100,mi300x", "--min-tps-user", "100", "--backend", "vllm")
    assert code == 0 and out.count("no attention kernel table on CDNA3") == 1 and out.count("mi300x: no serving run") == 1


def test_the_what_if_memory_unit_is_said_with_the_h200s_figures():
    g = get_gpu("h200")
    assert round(g.memory_bytes / 2**30, 1) == 140.4 and round(g.memory_bytes / 1e9, 2) == 150.75
    howto = " ".join((Path(__file__).parents[1] / "docs/howto/compare-gpus.md").read_text().split())
    assert "in GB of 10^9 bytes: `gpus` prints it in GiB, so the H200's 140.4 GiB is `memory_gb = 150.75`" in howto


def test_an_mtp_modules_checkpoint_is_written_for_sglang_and_refused_elsewhere(tmp_path):
    # --spec mtp --draft-model was taken and dropped (frev13): SGLang writes it as NEXTN's --speculative-draft-model-path
    # (a Hub id or folder: anything else is refused), the engines whose launch reads the module from the target's
    # checkpoint refuse it naming the one that loads it apart; a real NEXTN launch line naming it still imports
    kw = dict(gpu="h200", num_gpus=8, spec="mtp")
    with pytest.raises(InputError, match=r"^draft_model: 'no such model at all!' is not valid; the MTP module's checkpoint as a "
                                         r"Hugging Face id \(owner/name"):
        lc.deployment("deepseek-r1", draft_model="no such model at all!", engine="sglang", **kw)
    for engine, title in (("vllm", "vLLM"), ("trtllm", "TensorRT-LLM")):
        with pytest.raises(InputError) as e:
            lc.deployment("deepseek-r1", draft_model="lmsys/DeepSeek-R1-NextN", engine=engine, **kw)
        assert str(e.value) == (f"draft_model: 'lmsys/DeepSeek-R1-NextN' is not valid; left out with --spec mtp on {title} (its launch "
                                "reads the MTP module from the target's checkpoint); SGLang loads it apart")
    assert lc.deployment("deepseek-r1", draft_model="/models/DeepSeek-R1-NextN", engine="sglang", **kw).spec.draft_model == "/models/DeepSeek-R1-NextN"
    args = ["deepseek-r1", "--gpu", "h200", "--gpus", "8", "--backend", "sglang", "--spec", "mtp", "--draft-model", "lmsys/DeepSeek-R1-NextN",
            "--concurrency", "32"]
    e = _json("export", *args, "-o", str(tmp_path / "s.sh"))
    assert "--speculative-draft-model-path lmsys/DeepSeek-R1-NextN" in (tmp_path / "s.sh").read_text()
    back = _json("import", str(tmp_path / "s.sh"))
    assert {k: back[k] for k in KEYS} == pytest.approx(e["predicted"], rel=1e-9) and back["deployment"]["draft_model"] == "lmsys/DeepSeek-R1-NextN"
    line = ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --speculative-algorithm NEXTN "
            "--speculative-draft-model-path lmsys/DeepSeek-R1-NextN --speculative-num-steps 3 --speculative-eagle-topk 1 "
            "--speculative-num-draft-tokens 4")
    got = _json("import", line, "--gpu", "h200")
    d = got["deployment"]
    assert (d["spec"], d["draft_len"], d["draft_model"]) == ("mtp", 3, "lmsys/DeepSeek-R1-NextN")
