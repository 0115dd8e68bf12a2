"""An export predicts what the file it writes runs: the decode capture it writes is the one priced (review 2026-12-06
items 4, 5: branch revfix11b)."""
from __future__ import annotations

import json

import pytest
from conftest import cli


@pytest.mark.parametrize("engine, tpot", [("trtllm", 99.18), ("sglang", 94.42)])
def test_a_fixed_plan_export_prices_the_capture_it_writes(tmp_path, engine, tpot):
    # Llama-3.1-70B on 4 H200 at TP4, 600 requests: TensorRT-LLM's file wrote cuda_graph_config {enable_padding: true,
    # max_batch_size: 600} but its header predicted TPOT 129.47 ms, 1150 tok/s/GPU (priced eager past the default's 128);
    # its import gave 99.18 ms, 1498. SGLang's went eager past its default 512 without a word
    out = tmp_path / f"a_{engine}.out"
    code, stdout, err = cli("export", "llama-3.1-70b", "--gpu", "h200", "--gpus", "4", "--tp", "4", "--backend", engine,
                            "--concurrency", "600", "-o", str(out), "--json")
    assert code == 0, err
    exported = json.loads(stdout)
    assert exported["predicted"]["tpot_ms"] == pytest.approx(tpot, abs=0.005)
    assert exported["deployment"]["cuda_graph_max_bs"] == 600
    code, stdout, err = cli("import", str(out), "--json")
    assert code == 0, err
    assert json.loads(stdout)["tpot_ms"] == pytest.approx(exported["predicted"]["tpot_ms"], rel=1e-9)


def test_a_dynamo_export_prices_as_disagg_with_the_capture_it_writes(tmp_path):
    # at 1,024 requests the export predicted TPOT 66.22 ms (graphs padded to 1,024, its pools rebuilt by hand) and disagg
    # 98.8 (the engine's default, eager past 128): now one code path (price_pools), and the export says which capture
    code, stdout, err = cli("export", "llama-3.1-70b", "--gpu", "h200", "--backend", "dynamo", "--prefill", "tp=4", "--decode", "tp=4",
                            "--concurrency", "1024", "-o", str(tmp_path / "d.yaml"))
    assert code == 0, err
    said = " ".join((stdout + err).split())
    assert "TPOT 66.22 ms" in said
    assert "decode priced with graphs padded to 1024 a rank (disagg --decode-cuda-graph-max-bs 1024)" in said
    code, stdout, err = cli("disagg", "llama-3.1-70b", "--gpu", "h200", "--prefill", "tp=4", "--decode", "tp=4", "--engine", "trtllm",
                            "--concurrency", "1024", "--decode-cuda-graph-max-bs", "1024", "--json")
    assert code == 0, err
    assert json.loads(stdout)["rows"][0]["tpot_ms"] == pytest.approx(66.22, abs=0.005)
