"""One answer on every surface (crev12 #2-#6): mix's bands are estimate's at fixed lengths, vLLM's unchunked budget holds
the whole request wherever it is judged, design's defaults are one, a string acceptance is an InputError, and the page's
pareto and the CLI's export take the options their siblings take."""
import pytest

import llm_codesign.api as lc
from llm_codesign.spec.plan import Workload

LEVELS = ("lo80", "hi80", "lo95", "hi95")


@pytest.mark.parametrize("model, opts, c, kind", [
    # 70B FP8 TP4 on H200 at 78 requests: the decode batch misses TensorRT-LLM's default capture (eager term)
    ("llama-3.1-70b", dict(gpu="h200", num_gpus=4, tp=4, weight_dtype="fp8", kv_dtype="fp8"), 78, "eager"),
    # DeepSeek-R1 DP8 EP8 on B200 at 64 requests: TensorRT-LLM's fitted attention-DP wait (adp_wait term)
    ("deepseek-r1", dict(gpu="b200", num_gpus=8, tp=1, ep=8, attention_dp=8), 64, "adp_wait"),
])
def test_mix_at_fixed_lengths_has_estimates_bands(model, opts, c, kind):
    dep = lc.deployment(model, **opts)
    e = lc.estimate(model, dep, Workload(isl=1024, osl=1024, concurrency=c))
    x = lc.mix(model, dep, isl_dist="fixed:1024", osl_dist="fixed:1024", concurrency=c).to_dict()
    for q in ("ttft_ms", "tpot_ms", "tok_s_per_user", "output_tok_s_per_gpu"):
        assert [x["intervals"][q][k] for k in LEVELS] == pytest.approx([e.intervals[q][k] for k in LEVELS], rel=1e-9), q
    # the widening the review found missing from mix's (crev12 #2: 70B TPOT 80% 17.11-36.39 estimate vs 25.64-35.14 mix;
    # R1 TTFT 687-10053 vs 1000-6907)
    assert kind in [w.kind for w in x["intervals"]["ttft_ms"]["widened"]]


def _refusal(f) -> str:
    with pytest.raises(lc.InputError) as e:
        f()
    return str(e.value)


def test_vllm_unchunked_budget_holds_the_whole_request_in_estimate_and_export(tmp_path):
    # vLLM without chunked prefill: max_model_len (prompt + output) within max_num_batched_tokens (SchedulerConfig.
    # verify_max_model_len): 3,000 + 1,096 = 4,096 fits a 4,096 budget, one more token does not, in estimate and in
    # export's file alike (crev12 #3: estimate took isl 4,000 <= 4,096 at OSL 1,000, export refused 5,000)
    from conftest import cli

    dep = lc.deployment("llama-3.1-8b", gpu="h100", backend="vllm", chunked_prefill=False, max_num_tokens=4096)
    est = lambda isl, osl: lc.estimate("llama-3.1-8b", dep, Workload(isl=isl, osl=osl, concurrency=4))  # noqa: E731
    assert est(3000, 1096).fits
    line = _refusal(lambda: est(4000, 1000))
    assert line.startswith("isl+osl: 5000 is not valid; at most max_num_tokens (4,096): vLLM without chunked prefill ")
    assert "raise max_num_tokens (--max-num-batched-tokens) to 5,000 or more" in line
    args = ("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "vllm", "--no-chunked-prefill",
            "--max-num-tokens", "4096", "--concurrency", "4", "--isl", "3000")
    code, _, err = cli(*args, "--osl", "1097", "-o", str(tmp_path / "no.yaml"))
    assert code == 2 and err == "error: " + _refusal(lambda: est(3000, 1097)) + "\n" and not (tmp_path / "no.yaml").exists()
    code, _, err = cli(*args, "--osl", "1096", "-o", str(tmp_path / "ok.yaml"))
    assert code == 0, err
    assert "max-model-len: 4096" in (tmp_path / "ok.yaml").read_text().splitlines()
    # TensorRT-LLM's LLM API checks the prompt alone (BaseLLM._check_arguments): 4,000 + 1,000 runs in a 4,096 budget
    trt = lc.deployment("llama-3.1-8b", gpu="h100", backend="trtllm", chunked_prefill=False, max_num_tokens=4096)
    assert lc.estimate("llama-3.1-8b", trt, Workload(isl=4000, osl=1000, concurrency=4)).fits


def test_one_rule_for_a_search_point_and_a_deployment():
    import numpy as np

    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.plan import prompt_schedules

    osl = np.array([1096, 1097])
    assert prompt_schedules(get_engine("vllm"), False, 3000, 4096, stated=True, osl=osl).tolist() == [True, False]
    assert prompt_schedules(get_engine("trtllm"), False, 3000, 4096, stated=True, osl=osl).tolist() == [True, True]
    # a prompt per KV-parallel rank on TensorRT-LLM (cp_size): 8,000 over 2 ranks in a 4,096 budget
    assert prompt_schedules(get_engine("trtllm"), False, 8000, 4096, stated=True, kvp=2, osl=osl).tolist() == [True, True]


def test_design_has_one_default_gpu_and_top_on_every_surface():
    import inspect

    from llm_codesign.cli.design import design as cli_design
    from llm_codesign.web.app import DesignRequest

    api = inspect.signature(lc.design).parameters
    cli_ = inspect.signature(cli_design).parameters
    page = DesignRequest.model_fields
    # the CLI's: B200, ten rows (crev12 #4: the page's were H200 and five, lc.design's gpu had none)
    assert api["gpu"].default == cli_["gpu"].default.default == page["gpu"].default == "b200"
    assert api["top"].default == cli_["top"].default.default == page["top"].default == 10


@pytest.mark.parametrize("call", [
    lambda: lc.deployment("llama-3.1-8b", gpu="h200", spec="eagle3", acceptance="2.5"),
    lambda: lc.pareto("llama-3.1-8b", "h200", num_gpus=1, workload=Workload(isl=1024, osl=1024), spec="eagle3", acceptance="2.5"),
    lambda: lc.disagg("llama-3.1-8b", "h200", prefill="TP1", decode="TP1", spec="eagle3", acceptance="2.5"),
])
def test_a_string_acceptance_is_one_line_naming_it(call):
    # crev12 #5: a TypeError ("'<=' not supported between 'float' and 'str'") before; EAGLE-3's default k = 3
    assert _refusal(call) == "acceptance: '2.5' is not valid; a mean accepted length between 1 and k+1 = 4"


def test_a_string_draft_length_is_one_line_naming_it():
    assert _refusal(lambda: lc.deployment("llama-3.1-8b", gpu="h200", spec="eagle3", acceptance=2.0, draft_len="3")) == \
        "draft_len: '3' is not valid; an integer from 1 to 16"


def test_the_pages_pareto_takes_prefix_hit_and_max_num_tokens_as_lc_pareto_does():
    # crev12 #6: a 422 "unknown field" before; the page's answer is lc.pareto's at the same workload and budget
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    c = TestClient(create_app())
    body = {"model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1, "isl": 2048, "osl": 256, "prefix_hit": 0.5, "max_num_tokens": 4096}
    r = c.post("/api/pareto", json=body)
    assert r.status_code == 200, r.text
    page = r.json()["series"][0]
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, workload=Workload(isl=2048, osl=256, prefix_hit=0.5), max_num_tokens=4096).to_dict()
    assert page["prefix_hit"] == 0.5 and {p["deployment"]["max_num_tokens"] for p in page["frontier"]} == {4096}
    assert [p["ttft_ms"] for p in page["frontier"]] == pytest.approx([p["ttft_ms"] for p in f["frontier"]], rel=1e-12)
    bad = c.post("/api/pareto", json=body | {"prefix_hit": 1})
    assert bad.status_code == 422 and "prefix_hit" in bad.text


def test_export_takes_prefix_hit_and_its_file_prices_it_as_estimate_does(tmp_path):
    # crev12 #6: export refused --prefix-hit while export-point and the page record it in the header (workload_said)
    import json

    from conftest import cli

    out = tmp_path / "a.yaml"
    code, stdout, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--backend", "vllm", "--isl", "2048", "--osl",
                            "256", "--prefix-hit", "0.5", "--concurrency", "8", "-o", str(out), "--json")
    assert code == 0, err
    head = json.loads(out.read_text().splitlines()[0].split(": ", 1)[1])
    e = lc.estimate("llama-3.1-8b", lc.deployment("llama-3.1-8b", gpu="h100", backend="vllm"),
                    Workload(isl=2048, osl=256, concurrency=8, prefix_hit=0.5))
    assert head["prefix_hit"] == 0.5 and head["predicted"]["ttft_ms"] == pytest.approx(e.ttft_s * 1e3, rel=1e-9)
    # and read back at the hits it was priced at
    assert lc.import_config(str(out)).estimate.ttft_s == pytest.approx(e.ttft_s, rel=1e-9)
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h100", "--prefix-hit", "1", "-o", str(tmp_path / "b.yaml"))
    assert code == 2 and err.startswith("error: prefix_hit: 1.0 is not valid; a share of the prompt found in the prefix cache")
