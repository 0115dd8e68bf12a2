"""The GPUs a plan's options make, said where they could be misread (newc8 #9, #15, #16), and roofline's plan (#10)."""
import json

import pytest
from conftest import cli

import llm_codesign as lc
from llm_codesign.cli.common import on_gpus
from llm_codesign.explore.lengths import from_csv
from llm_codesign.spec.plan import Plan, attention_dp_note, fill_plan
from llm_codesign.spec.registry import get_model

# DP8xTP8: 8 x 8 = 64 GPUs; SGLang's --tp 8 --dp 8 --enable-dp-attention: attention TP 8 // 8 = 1 on 8 GPUs
DP8TP8 = ("DP8xTP8 is 64 GPUs (tp x attention_dp); SGLang's --tp 8 --dp 8 --enable-dp-attention is --tp 1 --attention-dp 8 "
          "here (8 GPUs)")


def test_the_attention_dp_note_names_the_gpus_and_sglangs_spelling():
    assert attention_dp_note(Plan(tp=8, ep=8, moe_tp=8, adp=8)) == DP8TP8
    assert attention_dp_note(Plan(tp=8, ep=8, moe_tp=8, adp=8), gpus_given=True) is None  # a count given is no surprise
    assert attention_dp_note(Plan(tp=1, ep=8, adp=8)) is None  # DP8xTP1: 8 GPUs either way
    assert attention_dp_note(Plan(tp=8)) is None
    # TP4 x DP8 = 32 GPUs; 4 % 8 != 0: no SGLang --tp 4 --dp 8, its --tp 32 --dp 8 is this plan; with PP2, 64
    assert attention_dp_note(Plan(tp=4, adp=8, pp=2)) == ("DP8xTP4 is 64 GPUs (tp x attention_dp x pp); SGLang's --tp-size counts "
                                                         "every GPU: this plan is its --tp 32 --dp 8 --enable-dp-attention")


def test_estimate_says_the_64_gpus_of_tp8_attention_dp8_and_the_api_carries_it():
    d = lc.deployment("deepseek-r1", gpu="mi355x", tp=8, attention_dp=8, ep=8)
    assert (d.num_gpus, d.plan.moe_tp, d.plan_note) == (64, 8, DP8TP8)
    assert lc.deployment("deepseek-r1", gpu="mi355x", num_gpus=64, tp=8, attention_dp=8, ep=8).plan_note is None
    assert "plan_note" not in d.to_dict()  # a record's count is read back as given
    code, out, err = cli("estimate", "deepseek-r1", "--gpu", "mi355x", "--tp", "8", "--attention-dp", "8", "--ep", "8",
                         "--concurrency", "64", "--json")
    assert code == 0 and json.loads(out)["plan_note"] == DP8TP8 and f"note: {DP8TP8}" in err


def test_disagg_says_a_pools_tp_times_attention_dp():
    r = lc.disagg("deepseek-r1", "mi355x", prefill="tp=8", decode="tp=8,ep=8,attention_dp=8", concurrency=64,
                  workload=lc.Workload(isl=1024, osl=1024)).to_dict()
    assert f"decode pool: {DP8TP8}" in r["notes"] and not any(n.startswith("prefill pool") for n in r["notes"])


@pytest.mark.parametrize("args, advice", [
    # 8 x 8 = 64 GPUs asked on 8: SGLang's reading (TP 8 // 8 = 1 a rank), TP taking what DP8 leaves (8 // 8 = 1, the same),
    # TP8 alone with the 8 experts over EP8
    (["deepseek-r1", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--attention-dp", "8", "--ep", "8"],
     "these sizes make 64 GPUs: --gpus 64 (DP8xTP8 EP8/MoE-TP8), or on 8 GPUs: DP8xTP1 EP8 or TP8 EP8"),
    # TP2 x PP2 = 4 GPUs on 2: TP 2 // 2 = 1 beside PP2, or TP2 alone (newc8 #16: the one plan error without a fix)
    (["llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--pp", "2"],
     "these sizes make 4 GPUs: --gpus 4 (TP2 PP2), or on 2 GPUs: TP1 PP2 or TP2"),
])
def test_a_plan_past_its_gpu_count_is_refused_with_a_fix(args, advice):
    code, _, err = cli("estimate", *args, "--concurrency", "8")
    assert code == 2 and err.count("\n") == 1 and err.rstrip().endswith(advice)


def test_moe_tp_is_inferred_from_the_attention_side():
    m = get_model("qwen3-30b-a3b")
    # --gpus 8 --tp 1: the attention side is 1 GPU, MoE TP 1 // (ep 1 x pp 1) = 1 (it was 8 // 1 = 8, and the refusal
    # offered DP8 attention); a valid plan's sides are the count, as before: --gpus 8 --tp 8 gives MoE TP 8
    assert fill_plan(m, num_gpus=8, tp=1) == (Plan(1, 1, 1, 1, 1, 1), 8)
    assert fill_plan(m, num_gpus=8, tp=8) == (Plan(8, 1, 1, 8, 1, 1), 8)
    assert fill_plan(m, num_gpus=8, attention_dp=8, ep=8) == (Plan(1, 1, 8, 1, 8, 1), 8)


@pytest.mark.parametrize("command", [
    ["estimate"], ["export", "--backend", "vllm", "-o", "-"],
])
def test_gpus_per_replica_is_named_where_it_counted_every_replica(command):
    # 8 replicas of TP1 make 8 GPUs: --gpus is one replica's, 1 (newc8 #15: a MoE was offered DP8 attention instead)
    code, _, err = cli(*command[:1], "qwen3-30b-a3b", "--gpu", "mi300x", "--gpus", "8", "--tp", "1", "--replicas", "8",
                       "--concurrency", "64", *command[1:])
    assert code == 2 and err.rstrip() == ("error: gpus: 8 is not valid; the GPUs of one replica with --replicas 8: --gpus 1 "
                                          "--replicas 8 runs 8 copies of TP1, 8 GPUs in all")


def test_replica_titles_say_1_gpu():
    assert on_gpus("m", 1, "MI300X", "TP1", 8) == "m on 8x MI300X: 8 replicas of TP1 (1 GPU each)"
    assert on_gpus("m", 8, "H200", "TP8", 2) == "m on 16x H200: 2 replicas of TP8 (8 GPUs each)"


def test_compare_takes_a_comma_string_as_the_cli_does(tmp_path):
    from llm_codesign.api import _names

    assert _names("mi300x, h200", "gpu", "a GPU id") == ["mi300x", "h200"]
    p = tmp_path / "a,b.toml"
    p.write_text("")
    assert _names(str(p), "gpu", "a GPU id") == [str(p)]  # a path holding a comma is one name
    with pytest.raises(lc.InputError, match="names between commas"):
        _names("mi300x,,h200", "gpu", "a GPU id")
    kw = dict(min_tps_user=30, weight_dtype="bf16", workload=lc.Workload(isl=1024, osl=256))
    assert (lc.compare("llama-3.1-8b", gpu="mi300x,h200", **kw).to_records()
            == lc.compare("llama-3.1-8b", gpu=["mi300x", "h200"], **kw).to_records())
    with pytest.raises(lc.InputError, match="one a call"):
        lc.pareto("llama-3.1-8b", "mi300x,h200")


def test_mix_titles_count_length_classes_and_requests(tmp_path):
    w = tmp_path / "w.csv"
    w.write_text("isl,osl,weight\n1024,256,5\n4096,512,3\n8192,1024,2\n")  # shares 5/10, 3/10, 2/10
    assert from_csv(str(w)).source == "w.csv: 3 length classes (weights 0.5/0.3/0.2)"
    c = tmp_path / "c.csv"
    c.write_text("isl,osl,count\n1024,256,10\n4096,512,20\n")  # 10 + 20 requests
    assert from_csv(str(c)).source == "c.csv: 30 requests in 2 rows"
    r = tmp_path / "r.csv"
    r.write_text("isl,osl\n1024,256\n")
    assert from_csv(str(r)).source == "r.csv: 1 request"
    code, out, _ = cli("mix", "llama-3.1-70b", "--gpu", "mi325x", "--tp", "4", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
                       "--lengths", str(w), "--concurrency", "32")
    title = " ".join(out.split())  # the title wraps at the table's width
    assert code == 0 and "on 4x MI325X, TP4, W:fp8 A:fp8 KV:fp8, sglang: w.csv: 3 length classes (weights 0.5/0.3/0.2)" in title


def test_roofline_takes_the_plan_and_prices_its_experts_as_estimate_does():
    args = ("deepseek-r1", "--gpu", "mi355x", "--attention-dp", "8", "--ep", "8")
    code, out, _ = cli("roofline", *args, "--batch", "64", "--json")
    r = json.loads(out)
    # 64 requests over 8 attention-DP ranks: 8 a rank; DP8xTP1 with the 256 experts over EP8 on 8 GPUs
    assert code == 0 and (r["plan"], r["num_gpus"], r["batch_per_rank"], r["ep"], r["moe_tp"]) == ("DP8xTP1 EP8", 8, 8, 8, 1)
    ops = {o["name"]: o for o in r["ops"]}
    assert "layer1/moe/all_gather" in ops and "layer1/moe/all_reduce" not in ops  # attention DP's exchange, not TP's
    code, out, _ = cli("estimate", *args, "--gpus", "8", "--concurrency", "64", "--breakdown", "--json")
    bd = {o["name"]: o for o in json.loads(out)["breakdown"] if o["phase"] == "decode"}
    for name in ("layer1/moe/experts_gate_up", "layer1/moe/experts_down", "layer1/moe/all_gather"):  # one code path
        assert ops[name]["time_s"] * 1e3 == pytest.approx(bd[name]["time_ms"], rel=1e-9)
    # TP8 alone: MoE TP8 and its all-reduce, as before the plan options
    tp8 = {o["name"] for o in json.loads(cli("roofline", "deepseek-r1", "--gpu", "mi355x", "--tp", "8", "--batch", "64", "--json")[1])["ops"]}
    assert "layer1/moe/all_reduce" in tp8 and "layer1/moe/all_gather" not in tp8


def test_roofline_json_carries_the_plan_note_estimate_carries():
    # frev #8a: the same DP8xTP8 on roofline --json as estimate --json (8 x 8 = 64 GPUs), none where the plan says its count
    code, out, err = cli("roofline", "deepseek-r1", "--gpu", "b200", "--tp", "8", "--attention-dp", "8", "--batch", "64",
                         "--backend", "sglang", "--json")
    assert code == 0 and json.loads(out)["plan_note"] == DP8TP8 and f"note: {DP8TP8}" in err
    code, out, _ = cli("roofline", "llama-3.1-8b", "--gpu", "h100", "--batch", "8", "--json")
    assert code == 0 and "plan_note" not in json.loads(out)


def test_a_one_gpu_scale_up_domain_says_1_gpu():
    # frev #8b: a what-if MI300X with a domain of 1 refuses TP8 in one line, "of 1 GPU" (was "1 GPUs"); 8 GPUs on the catalog's
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    body = {"model": "llama-3.1-70b", "gpu": "what-if", "num_gpus": 8, "tp": 8, "concurrency": 64,
            "what_if": {"base": "mi300x", "id": "what-if", "scale_up_domain": 1}}
    r = TestClient(create_app()).post("/api/estimate", json=body)
    assert r.status_code == 422 and r.json()["error"] == (
        "deployment: 'TP8 on 8 GPUs' is not valid; a tensor-parallel group must fit in one scale-up domain (AMD's Infinity "
        "Fabric) of 1 GPU; plans priced on 8 GPUs: TP1 PP8")  # the plans on those GPUs within a domain of 1 (newc9 #7)
    code, _, err = cli("estimate", "llama-3.1-70b", "--gpu", "mi300x", "--tp", "16", "--gpus", "16")
    assert code == 2 and err.rstrip().endswith("of 8 GPUs; plans priced on 16 GPUs: TP8 PP2")
