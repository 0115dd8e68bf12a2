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
