"""Formats and vendors an engine cannot run, the what-if block, and MTP's refusal order (newc10 #2, #7, #8, #11; crev10 #12).
#7's cross-vendor disagg refusal is pinned in test_disagg.py, test_cli_first_hour.py and test_app.py."""
import pytest
from conftest import cli
from fastapi.testclient import TestClient

from llm_codesign.web.app import create_app

NO_MTP = ("error: spec: 'mtp' is not valid; eagle3 or draft for llama-3.1-8b: its config ships no MTP module (it sets none of "
          "num_nextn_predict_layers, mtp_num_hidden_layers, num_mtp_modules)")
MOE_NVFP4 = ("error: weight_dtype: 'nvfp4' is not valid; a format SGLang runs on {gpu} for a MoE: its ROCm NVFP4 path, petit_nvfp4, "
             "covers linear layers only (its experts get no method); fp8 runs natively\n")


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


@pytest.mark.parametrize("gpu,name", [("mi300x", "MI300X"), ("mi325x", "MI325X")])
def test_sglang_refuses_a_moe_in_nvfp4_on_cdna3(gpu, name):
    # SGLang's ROCm NVFP4 is petit_nvfp4, whose get_quant_method gives LinearBase layers a method and the experts none
    # (spec.engines.sglang._cdna3_nvfp4); it priced TPOT 4.23 ms and exported --quantization modelopt_fp4 (min capability 100)
    code, out, err = cli("estimate", "qwen3-30b-a3b", "--gpu", gpu, "--tp", "1", "--weight-dtype", "nvfp4", "--concurrency", "8")
    assert (code, out, err) == (2, "", MOE_NVFP4.format(gpu=name))
    code, _, err = cli("export", "qwen3-30b-a3b", "--gpu", gpu, "--gpus", "1", "--tp", "1", "--weight-dtype", "nvfp4",
                       "--concurrency", "8", "-o", "-")
    assert code == 2 and err == MOE_NVFP4.format(gpu=name)


def test_a_dense_model_in_nvfp4_on_cdna3_exports_petit(tmp_path):
    # a dense model's linears all run petit_nvfp4 (W4A16, as spec.precision prices NVFP4 on a GPU without FP4 math)
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "mi300x", "--gpus", "1", "--tp", "1", "--weight-dtype", "nvfp4",
                       "--concurrency", "8", "-o", str(tmp_path / "amd.sh"))
    assert code == 0, err
    text = (tmp_path / "amd.sh").read_text()
    assert "--quantization petit_nvfp4" in text and "modelopt_fp4" not in text
    # NVIDIA's NVFP4 export is untouched: ModelOpt's own method on a B200
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", "b200", "--gpus", "1", "--tp", "1", "--weight-dtype", "nvfp4",
                       "--concurrency", "8", "--backend", "sglang", "-o", str(tmp_path / "nv.sh"))
    assert code == 0 and "--quantization modelopt_fp4" in (tmp_path / "nv.sh").read_text(), err


@pytest.mark.parametrize("args", [
    ("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--concurrency", "8", "--spec", "mtp"),
    ("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--concurrency", "8", "--spec", "mtp", "--acceptance", "1.8"),
    ("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--spec", "mtp"),
    ("disagg", "llama-3.1-8b", "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=1", "--spec", "mtp"),
])
def test_mtp_without_a_module_is_refused_before_any_acceptance_is_asked(args):
    # it first asked for an acceptance (quoting DeepSeek's 0.85), and only on retry said no engine runs MTP here (crev10 #12)
    code, out, err = cli(*args)
    assert code == 2 and out == "" and err.startswith(NO_MTP) and "acceptance" not in err


def test_mtp_without_a_module_through_the_api(client):
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "concurrency": 8, "spec": "mtp"})
    assert r.status_code == 422 and r.json()["field"] == "spec" and r.json()["error"].startswith(NO_MTP.removeprefix("error: "))
    import llm_codesign as lc

    with pytest.raises(lc.InputError) as e:
        lc.deployment("llama-3.1-8b", gpu="h100", num_gpus=1, spec="mtp")
    assert e.value.field == "spec"


BODY = {"model": "llama-3.1-8b", "tp": 1, "concurrency": 8}


@pytest.mark.parametrize("path,body,text", [
    ("/api/estimate", {**BODY, "gpu": "h100"}, "named by no gpu (the answer would be the catalog GPU's); set gpu to 'what-if', or leave"),
    ("/api/lint", {"model": "llama-3.1-8b", "gpu": "h100"}, "named by no gpu (the answer would be the catalog GPU's); set gpu to"),
    ("/api/pareto", {"model": "llama-3.1-8b", "gpus": ["h100"], "num_gpus": 1}, "named by no gpus (the answer would be the catalog "
                                                                                 "GPU's); add 'what-if' to gpus, or leave"),
])
def test_a_what_if_no_gpu_names_is_refused(client, path, body, text):
    # it answered the catalog H100 (TPOT 7.469 ms) with no word of the what-if (newc10 #8)
    r = client.post(path, json={**body, "what_if": {"base": "h100", "hbm_tb_s": 10}})
    assert r.status_code == 422 and r.json()["field"] == "what_if" and text in r.json()["error"], r.text


def test_a_what_if_is_checked_whether_or_not_a_gpu_names_it(client):
    # an invalid figure passed silently where gpu was a catalog id; now the same line as where it is used
    line = {"error": "what_if.hbm_tb_s: -1.0 is not valid; a number from 0.001 to 1000 TB/s", "field": "what_if.hbm_tb_s"}
    for gpu in ("h100", "what-if"):
        r = client.post("/api/estimate", json={**BODY, "gpu": gpu, "what_if": {"base": "h100", "hbm_tb_s": -1}})
        assert r.status_code == 422 and r.json() == line
    r = client.post("/api/estimate", json={**BODY, "gpu": "what-if", "what_if": {"base": "h100", "hbm_tb_s": 10}})
    assert r.status_code == 200 and r.json()["gpu"] == "what-if"


def test_what_if_memory_states_the_range_it_holds(client):
    # memory_gb 1 on an H100 makes a data-sheet capacity of 1e9 x 80e9 / 85520809984 = 0.935e9 B, under check_gpu's 1 GB:
    # the lowest memory_gb is 85520809984 / 80e9 = 1.069 GB (it said "a number from 1 to 1e+06 GB", refusing 1; newc10 #11)
    r = client.post("/api/estimate", json={**BODY, "gpu": "what-if", "what_if": {"base": "h100", "memory_gb": 1}})
    assert r.status_code == 422 and r.json() == {"field": "what_if.memory_gb", "error": (
        "what_if.memory_gb: 1.0 is not valid; a number from 1.069 to 1e+06 GB (h100's driver reports 1.069x its data sheet's "
        "capacity, which follows memory_gb and is held to 1 GB or more)")}
    # 1.07 GB is inside it: the GPU is built, and the 8B's 17.3 GiB is what refuses it
    r = client.post("/api/estimate", json={**BODY, "gpu": "what-if", "what_if": {"base": "h100", "memory_gb": 1.07}})
    assert r.status_code == 422 and r.json()["field"] == "deployment", r.text
