"""A frontier point pasted into estimate gives the point (newc6 #4): the point's record carries the CUDA-graph capture it
was priced with (padded up to its own batch per rank, not the search's largest, 16384) and the estimate command line
that prices it again; pareto's table says which capture it assumed."""
from __future__ import annotations

import json
import shlex

import pytest
from conftest import cli

ARGS = ["pareto", "llama-3.1-70b", "--gpu", "h200", "--gpus", "8", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--isl", "1024", "--osl", "1024"]


@pytest.fixture(scope="module")
def frontier():
    code, out, err = cli(*ARGS, "--json")
    assert code == 0, err
    return json.loads(out)


def test_each_point_carries_its_own_capture_and_a_command_that_prices_it_again(frontier):
    pts = frontier["frontier"]
    assert all(p["deployment"].get("cuda_graph_max_bs") == p["deployment"]["concurrency_per_instance"] for p in pts)  # adp 1
    # the newcomer's point: TP2 x4 at 66 requests each, TPOT 19.60 ms (estimate without the capture said 29.76: eager)
    tp2 = next(p for p in pts if p["deployment"]["plan"] == "TP2" and p["deployment"]["concurrency_per_instance"] == 66)
    assert tp2["estimate_command"] == (
        "llm-codesign estimate llama-3.1-70b --gpu h200 --gpus 2 --tp 2 --pp 1 --weight-dtype fp8 --activation-dtype fp8 --kv-dtype fp8 "
        "--backend trtllm --max-num-tokens 8192 --cuda-graph-max-bs 66 --isl 1024 --osl 1024 --concurrency 66 --replicas 4")
    for p in (pts[0], tp2, pts[-1]):  # both ends and the newcomer's
        code, out, err = cli(*shlex.split(p["estimate_command"])[1:], "--json")
        assert code == 0, err
        e = json.loads(out)
        for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "tok_s_per_user"):
            assert e[k] == pytest.approx(p[k], rel=1e-9), (k, p["estimate_command"])


def test_the_table_says_which_graphs_it_priced():
    code, out, err = cli(*ARGS)
    assert code == 0, err
    assert ("CUDA graphs: every point priced with graphs padded up to its batch, as export writes them; estimate prices the "
            "engine's default capture unless --cuda-graph-max-bs (pareto --json: each point's estimate_command)") in out


def test_export_point_prints_the_estimate_that_prices_it(frontier, tmp_path):
    f = tmp_path / "f.json"
    f.write_text(json.dumps(frontier))
    code, out, err = cli("export-point", str(f), "--index", "0", "-o", str(tmp_path / "x.yaml"))
    assert code == 0, err
    assert f"priced again by: {frontier['frontier'][0]['estimate_command']}" in out


@pytest.fixture(scope="module")
def disagg_frontier():
    code, out, err = cli(*ARGS, "--disagg", "--json")
    assert code == 0, err
    return next(r for r in json.loads(out)["comparisons"] if r.get("mode") == "disaggregated")


def test_each_disaggregated_point_carries_the_disagg_command_that_prices_it_again(disagg_frontier):
    """crev9 #1: a disaggregated point had no command, and `disagg` without the point's decode capture priced TensorRT-LLM's
    default one (1-32, 64, 128; 78 requests a rank decode eagerly): TPOT 26.21 ms and 370.5 tok/s/GPU against the point's
    11.28 ms and 856.0. Each point now states its capture at its own batch per rank and the command that prices it again."""
    pts = disagg_frontier["frontier"]
    # every decode pool's capture is its batch per rank: the unit's requests over its decode instances and their DP ranks
    assert all(p["deployment"]["decode"]["cuda_graph_max_bs"] * p["deployment"]["decode"]["attention_dp"] * p["deployment"]["decode"]["instances"]
               == p["deployment"]["concurrency_per_instance"] for p in pts)
    p78 = next(p for p in pts if p["deployment"]["plan"] == "P 1x TP4 + D 1x TP4" and p["deployment"]["concurrency_per_instance"] == 78)
    assert p78["disagg_command"] == (
        "llm-codesign disagg llama-3.1-70b --gpu h200 --prefill tp=4,pp=1 --decode tp=4,pp=1 --prefill-instances 1 --decode-instances 1 "
        "--weight-dtype fp8 --activation-dtype fp8 --kv-dtype fp8 --backend trtllm --max-num-tokens 8192 --decode-cuda-graph-max-bs 78 "
        "--isl 1024 --osl 1024 --concurrency 78")
    assert p78["output_tok_s_per_gpu"] == pytest.approx(856.0, abs=0.5) and p78["tpot_ms"] == pytest.approx(11.28, abs=0.01)
    multi = next(p for p in pts if p["deployment"]["decode"]["instances"] > 1)  # a unit of several decode instances, PP on both
    for p in (pts[0], multi, p78, pts[-1]):
        code, out, err = cli(*shlex.split(p["disagg_command"])[1:], "--json")
        assert code == 0, err
        row = json.loads(out)["rows"][0]
        for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "tok_s_per_user"):
            assert row[k] == pytest.approx(p[k], rel=1e-9), (k, p["disagg_command"])
        for m, b in p["intervals"].items():  # and its bands, as the point's
            assert [row["intervals"][m][x] for x in ("lo80", "hi80", "lo95", "hi95")] == pytest.approx([b[x] for x in ("lo80", "hi80", "lo95", "hi95")], rel=1e-9)
    # the command without the capture prices the engine's default one, which misses 78: the gap the command closes
    code, out, err = cli(*shlex.split(p78["disagg_command"].replace(" --decode-cuda-graph-max-bs 78", ""))[1:], "--json")
    assert code == 0 and json.loads(out)["rows"][0]["output_tok_s_per_gpu"] < 0.5 * p78["output_tok_s_per_gpu"]


def test_export_point_prints_the_disagg_that_prices_it(disagg_frontier, tmp_path):
    f = tmp_path / "f.json"
    f.write_text(json.dumps({"comparisons": [disagg_frontier]}))
    code, out, err = cli("export-point", str(f), "--series", "disagg", "--index", "0", "-o", str(tmp_path / "d.yaml"))
    assert code == 0, err
    assert f"priced again by: {disagg_frontier['frontier'][0]['disagg_command']}" in out


def test_the_disaggregated_table_says_which_graphs_it_priced():
    code, out, err = cli(*ARGS, "--disagg")
    assert code == 0, err
    assert " ".join(("CUDA graphs: every point's decode workers priced with graphs padded up to their batch, as export writes them; "
                     "disagg prices the engine's default capture unless --decode-cuda-graph-max-bs (pareto --json: each point's "
                     "disagg_command)").split()) in " ".join(out.split())
