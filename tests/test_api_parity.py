"""The page's JSON API takes what the CLI takes (newc6 #19, #22, #15): every `estimate --help` option is an
/api/estimate field, /api/pareto takes --gpus' range, and a disaggregated frontier point can be exported."""
import json

import pytest
from conftest import cli, cli_ok

pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx (in the dev extra)")
from fastapi.testclient import TestClient  # noqa: E402

from llm_codesign.web.app import EstimateRequest, create_app  # noqa: E402

BODY = {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "isl": 1024, "osl": 256, "concurrency": 8}
ARGS = ("llama-3.1-8b", "--gpu", "h100", "--tp", 1, "--isl", 1024, "--osl", 256, "--concurrency", 8)
# estimate's options that only choose how the answer is printed (the API always answers JSON)
DISPLAY_ONLY = {"as_json"}
# a CLI parameter named otherwise in the request: --gpus is num_gpus (as every answer names it), --backend is engine
RENAMED = {"gpus_": "num_gpus", "backend": "engine"}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def test_every_estimate_option_is_a_request_field():
    """Adding an estimate option without its request field (or listing it display-only) fails here, so they can't drift."""
    from typer.main import get_command

    from llm_codesign.cli import app

    params = {p.name for p in get_command(app).commands["estimate"].params} - DISPLAY_ONLY
    fields = set(EstimateRequest.model_fields)
    assert sorted(RENAMED.get(p, p) for p in params if RENAMED.get(p, p) not in fields) == []
    # the six the newcomer could not send (newc6 #19) and --max-batch/--cpp beside them
    assert {"replicas", "max_num_tokens", "prefix_hit", "calibration", "gpu_hour_price", "max_batch", "cpp"} <= fields


def test_the_new_fields_give_the_clis_answer(client):
    """Each field priced as its CLI option: the API's numbers equal `estimate --json`'s."""
    extra = {"replicas": 2, "max_num_tokens": 4096, "prefix_hit": 0.5, "gpu_hour_price": 2.0, "max_batch": 4}
    r = client.post("/api/estimate", json={**BODY, **extra})
    assert r.status_code == 200, r.json()
    a = r.json()
    c = json.loads(cli_ok("estimate", *ARGS, "--replicas", 2, "--max-num-tokens", 4096, "--prefix-hit", 0.5,
                          "--gpu-hour-price", 2.0, "--max-batch", 4, "--json"))
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "max_num_tokens", "replicas", "cost"):
        assert a[k] == pytest.approx(c[k]), k
    assert a["max_num_tokens"] == 4096
    # replicas: 2 copies of a 1-GPU instance at 8 requests each = 2 GPUs, 16 requests, 2 x tok/s/GPU in all
    assert a["replicas"]["gpus"] == 2 and a["replicas"]["concurrency"] == 16
    assert a["replicas"]["output_tok_s"] == pytest.approx(2 * a["output_tok_s_per_gpu"])
    # $2/GPU-hour: 2 / 3600 s * 1e6 tokens / (tok/s/GPU) dollars per million output tokens
    assert a["cost"]["usd_per_m_output_tokens"] == pytest.approx(2 / 3600 * 1e6 / a["output_tok_s_per_gpu"])
    # half of each prompt cached: a shorter TTFT than the plain request's, as --prefix-hit gives
    plain = client.post("/api/estimate", json={**BODY, "max_num_tokens": 4096, "max_batch": 4}).json()
    assert a["ttft_ms"] < plain["ttft_ms"]


def test_a_profiles_content_is_priced_as_its_file(client, tmp_path):
    """`calibration` takes the profile's TOML text: the answer --calibration FILE gives (a slower GEMM: a longer TTFT)."""
    text = "[hopper]\ngemm_eff_bf16 = 0.4\n"
    (tmp_path / "own.toml").write_text(text)
    a = client.post("/api/estimate", json={**BODY, "calibration": text})
    assert a.status_code == 200, a.json()
    c = json.loads(cli_ok("estimate", *ARGS, "--calibration", tmp_path / "own.toml", "--json"))
    assert a.json()["ttft_ms"] == pytest.approx(c["ttft_ms"]) and a.json()["tpot_ms"] == pytest.approx(c["tpot_ms"])
    assert a.json()["ttft_ms"] > client.post("/api/estimate", json=BODY).json()["ttft_ms"]


@pytest.mark.parametrize("extra,line", [
    ({"calibration": "/etc/own.toml"}, "calibration: '/etc/own.toml' is not valid; a calibration profile's content as TOML text "
                                       "(a path is not read by the server; send the file's content)"),
    ({"gpu_hour_price": "prices.toml"}, "gpu_hour_price: 'prices.toml' is not valid; Input should be dollars per GPU-hour or "
                                        "`bundled` (a price file's path is not read by the server)"),
    ({"gpu_hour_price": "bundled", "gpu": "h100"}, None),
    ({"prefix_hit": 1}, "prefix_hit"),
    ({"replicas": 0}, "replicas"),
])
def test_a_path_or_bad_value_is_one_line_naming_the_field(client, extra, line):
    r = client.post("/api/estimate", json={**BODY, **extra})
    if line is None:  # the bundled, cited price is read: not a path the request names
        assert r.status_code == 200 and r.json()["cost"]["usd_per_gpu_hour"] > 0, r.json()
        return
    assert r.status_code in (400, 422), r.json()
    err = r.json()["error"]
    assert err.startswith(line) and "\n" not in err and "Traceback" not in err


def test_a_points_own_fields_are_refused_beside_its_record(client):
    """A frontier point's record carries its replicas and token budget: the request's own would be ignored, so refused."""
    r = client.post("/api/pareto", json={"model": "llama-3.1-8b", "gpus": ["h100"], "num_gpus": 1, "isl": 1024, "osl": 256})
    point = r.json()["series"][0]["frontier"][0]
    e = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "isl": 1024, "osl": 256,
                                           "deployment": point["deployment"], "replicas": 2})
    assert e.status_code == 422 and e.json()["error"] == ("replicas: 2 is not valid; left out with `deployment` "
                                                          "(a frontier point's record carries it)")


def test_pareto_takes_the_clis_gpu_range(client):
    """num_gpus "2-4" is pareto --gpus 2-4: instances of 2, 3 or 4 GPUs, the same frontier as the CLI's."""
    body = {"model": "llama-3.1-8b", "gpus": ["h200"], "num_gpus": "2-4", "isl": 1024, "osl": 256}
    r = client.post("/api/pareto", json=body)
    assert r.status_code == 200, r.json()
    api = r.json()["series"][0]
    c = json.loads(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", "2-4", "--isl", 1024, "--osl", 256, "--json"))
    assert [p["deployment"] for p in api["frontier"]] == [p["deployment"] for p in c["frontier"]]
    assert [p["output_tok_s_per_gpu"] for p in api["frontier"]] == pytest.approx([p["output_tok_s_per_gpu"] for p in c["frontier"]])
    # the range's sizes only: no 1-GPU instance, at least one of 3 GPUs (a size 4 does not divide)
    sizes = {p["deployment"]["instance_gpus"] for p in api["frontier"]}
    assert sizes <= {2, 3, 4} and 3 in sizes
    bad = client.post("/api/pareto", json={**body, "num_gpus": "4-2"})
    assert bad.status_code == 422 and bad.json()["error"] == ("num_gpus: '4-2' is not valid; a whole number of GPUs from 1 to 72, "
                                                              "or a range of instance sizes as pareto --gpus takes it ('8-72')")


@pytest.mark.parametrize("ref", ["my13b/config.json", "/data/llama/config.json", "./llama"])
def test_a_model_path_names_the_config_field(client, ref):
    r = client.post("/api/pareto", json={"model": ref, "gpus": ["h200"], "num_gpus": "8-72"})
    assert r.status_code in (400, 422) and r.json()["error"] == (
        f"model: {ref!r} is not valid; a path is not read by the server; send the config.json's content as `config`")


def test_a_disaggregated_point_exports_as_dynamos_file(tmp_path):
    """export-point --series disagg (newc6 #15): the point's Dynamo file, re-imported, gives the row's tok/s/GPU and TTFT."""
    import llm_codesign as lc

    front = tmp_path / "dis.json"
    front.write_text(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", 4, "--disagg", "--isl", 1024, "--osl", 256, "--json"))
    rows = [c for c in json.loads(front.read_text())["comparisons"] if c.get("mode") == "disaggregated"][0]["frontier"]
    k = len(rows) // 2
    out = tmp_path / "dynamo.yaml"
    said = cli_ok("export-point", front, "--series", "disagg", "--index", k, "-o", out)
    rec = rows[k]["deployment"]
    assert f"disaggregated point {k} ({rec['plan']}, {rec['concurrency_per_instance']} requests" in " ".join(said.split())
    back = lc.import_config(out, gpu="h200").to_dict()
    assert back["engine"] == "dynamo" and back["concurrency"] == rec["concurrency_per_instance"]
    assert (back["prefill"]["instances"], back["decode"]["instances"]) == (rec["prefill"]["instances"], rec["decode"]["instances"])
    for key in ("output_tok_s_per_gpu", "ttft_ms", "tpot_ms"):
        assert back[key] == pytest.approx(rows[k][key], rel=1e-6), key
    # the aggregated series is the default; a frontier without a disaggregated one is refused naming what to give
    agg = tmp_path / "agg.json"
    agg.write_text(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", 1, "--isl", 1024, "--osl", 256, "--json"))
    code, _, err = cli("export-point", str(agg), "--series", "disagg", "--index", "0", "-o", str(tmp_path / "x.yaml"))
    assert code == 2 and f"path: '{agg}' is not valid; a pareto --disagg --json result (a disaggregated frontier)" in " ".join(err.split())


def test_a_speculative_disaggregated_point_exports_at_its_own_acceptance(tmp_path):
    """The final review: a disaggregated point drafting with EAGLE-3 at the user's --acceptance 2.5 was refused on
    export-point ("acceptance: not given"): the point's record now carries its acceptance (as rates at its draft length),
    and the file's predicted figures are the row's."""
    front = tmp_path / "dis.json"
    # the head named (an EAGLE-3 file without one is refused: no engine has a default drafter, crev10 #6)
    front.write_text(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", 2, "--disagg", "--osl", 128, "--spec", "eagle3",
                            "--acceptance", "2.5", "--draft-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--json"))
    rows = [c for c in json.loads(front.read_text())["comparisons"] if c.get("mode") == "disaggregated"][0]["frontier"]
    rec = rows[3]["deployment"]
    assert rec["spec"] == "eagle3" and rec["acceptance_rates"]
    out = tmp_path / "dynamo.yaml"
    cli_ok("export-point", front, "--series", "disagg", "--index", 3, "-o", out)
    head = json.loads(next(x for x in out.read_text().splitlines() if x.startswith("# llm-codesign export: "))[len("# llm-codesign export: "):])
    assert head["spec"]["rates"] == pytest.approx(rec["acceptance_rates"])
    for key in ("output_tok_s_per_gpu", "ttft_ms", "tpot_ms"):
        assert head["predicted"][key] == pytest.approx(rows[3][key], rel=1e-9), key


def test_exports_slo_refusal_names_the_disaggregated_way():
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "h200", "--backend", "dynamo", "--prefill", "tp=1", "--decode", "tp=1",
                       "--min-tps-user", "30", "-o", "-")
    assert code == 2 and "export-point --series disagg --index N" in " ".join(err.split())
