"""Review crev #6, #8, #10 on the page's JSON API: a what-if GPU identical to its base keeps the base's measured power
and price; /api/estimate and /api/disagg answer the time budget; a point's deployment record refuses a misspelt key."""
import pytest

pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed: pip install -e '.[serve]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx (in the dev extra)")

from fastapi.testclient import TestClient  # noqa: E402

import llm_codesign as lc  # noqa: E402
from llm_codesign.explore.pricing import gpu_hour_price  # noqa: E402
from llm_codesign.serve.energy import board_power  # noqa: E402
from llm_codesign.web.app import _what_if, create_app  # noqa: E402

B = {"model": "llama-3.1-8b", "tp": 1, "isl": 1024, "osl": 256, "concurrency": 8}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_an_untouched_what_if_is_its_base_in_power_and_price(client):
    for base in ("mi300x", "b200"):
        own = client.post("/api/estimate", json={**B, "gpu": base, "gpu_hour_price": "bundled"}).json()
        wi = client.post("/api/estimate", json={**B, "gpu": "what-if", "what_if": {"base": base}, "gpu_hour_price": "bundled"})
        assert wi.status_code == 200, wi.text
        wi = wi.json()
        # data/power.toml: MI300X idle 191 W measured (the default share, 19% of 750 W = 142.5 W, before); B200 194 W
        assert wi["power"]["idle_w"] == own["power"]["idle_w"] == {"mi300x": 191.0, "b200": 194.0}[base]
        assert wi["tpot_ms"] == own["tpot_ms"] and wi["tokens_per_joule"] == own["tokens_per_joule"]
        assert wi["tokens_per_joule_node"] == own["tokens_per_joule_node"]  # B200's DGX share; MI300X none bundled
        assert wi["cost"]["usd_per_gpu_hour"] == own["cost"]["usd_per_gpu_hour"]
    assert own["tokens_per_joule_node"] is not None  # b200's node share carried, not None as before


def test_a_what_if_that_changes_a_figure_keeps_the_power_but_not_the_price(client):
    # the form has no TDP field: the board's idle reading and the node's share carry; a price is the product's
    faster = _what_if(type("W", (), {"base": "h200", "id": "fast", **{f: None for f in (
        "hbm_tb_s", "memory_gb", "bf16_tflops", "fp8_tflops", "fp4_tflops", "scale_up_gb_s", "scale_up_domain")}, "hbm_tb_s": 6.0})())
    h200 = lc.get_gpu("h200")
    assert faster.base_id == "h200" and faster.figures() != h200.figures()
    assert board_power(faster).idle_w == board_power(h200).idle_w == 133.0
    with pytest.raises(lc.InputError, match="fast changes h200's figures"):
        gpu_hour_price(faster, "bundled")
    r = client.post("/api/estimate", json={**B, "gpu": "what-if", "what_if": {"base": "h200", "hbm_tb_s": 6.0}, "gpu_hour_price": "bundled"})
    assert r.status_code == 422 and r.json()["field"] == "gpu_hour_price"
    assert client.post("/api/estimate", json={**B, "gpu": "what-if", "what_if": {"base": "h200", "hbm_tb_s": 6.0},
                                              "gpu_hour_price": 4.0}).status_code == 200


def test_estimate_and_disagg_answer_the_time_budget():
    # a warm estimate takes 0.07-0.3 s here, a cold one 1.3 s: a 0.01 s budget stops both, checked as they end
    tight = TestClient(create_app(time_budget_s=0.01), raise_server_exceptions=False)
    r = tight.post("/api/estimate", json={**B, "gpu": "h100"})
    assert r.status_code == 503 and r.json()["field"] == "body"
    assert "ran past this server's time budget of 0.01 s and was stopped; serve --time-budget" in r.json()["error"]
    d = tight.post("/api/disagg", json={"model": "llama-3.1-8b", "gpu": "h100", "prefill": "tp=1", "decode": "tp=1",
                                        "concurrency": list(range(1, 33))})
    assert d.status_code == 503
    roomy = TestClient(create_app(time_budget_s=600))
    assert roomy.post("/api/estimate", json={**B, "gpu": "h100"}).status_code == 200


D = {"tp": 1, "pp": 1, "ep": 1, "moe_tp": 1, "attention_dp": 1, "kvp": 1, "weight_dtype": "bf16", "activation_dtype": "bf16",
     "kv_dtype": "bf16", "concurrency_per_instance": 64}


@pytest.mark.parametrize("typo, near", [("kv_fracton", "kv_fraction"), ("max_bacth", "max_batch"),
                                        ("cuda_graph_max_bz", "cuda_graph_max_bs")])
def test_a_misspelt_key_in_the_deployment_record_is_a_422(client, typo, near):
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "isl": 1024, "osl": 256,
                                           "deployment": {**D, typo: 1}})
    assert r.status_code == 422
    assert r.json()["error"] == f"deployment.{typo}: unknown field; did you mean {near!r}?"


def test_the_records_launch_options_are_read(client):
    def batch(**extra):
        r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "isl": 1024, "osl": 256, "deployment": {**D, **extra}})
        assert r.status_code == 200, r.text
        return r.json()["max_batch"]
    # the KV budget at 0.3 of memory holds a third of the default's 360 sequences (w7.py: 120); a batch cap of 16 is 16
    assert (batch(), batch(kv_fraction=0.3), batch(max_batch=16)) == (360, 120, 16)


@pytest.mark.parametrize("isl", [1024, 16384])
def test_a_frontier_points_record_goes_back_whole(client, isl):
    p = client.post("/api/pareto", json={"model": "llama-3.1-8b", "gpus": ["h100"], "num_gpus": 1, "isl": isl, "osl": 256})
    assert p.status_code == 200, p.text
    point = p.json()["series"][0]["frontier"][0]
    rec = point["deployment"]
    # TensorRT-LLM's default budget on an H100 is 8,192 tokens: a 16,384-token prompt was priced chunked, and the record
    # says so (crev #5), so that it rebuilds as priced; at 1,024 tokens it states nothing (the engine's default)
    assert rec["backend"] == "trtllm" and rec["max_num_tokens"] == 8192 and rec.get("chunked_prefill") == (True if isl > 8192 else None)
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "isl": isl, "osl": 256, "deployment": rec})
    assert r.status_code == 200, r.text
    assert r.json()["ttft_ms"] == pytest.approx(point["ttft_ms"], rel=1e-9)
    if isl > 8192:  # the same record launched without chunked prefill: the engine refuses the prompt, and so does this
        rec.pop("chunked_prefill")
        r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "isl": isl, "osl": 256, "deployment": rec})
        assert r.status_code == 422 and r.json()["field"] == "isl"
