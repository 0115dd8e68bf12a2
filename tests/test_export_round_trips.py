"""A file `export`, `export-point`, `lc.export_point` or the page writes re-imports at the figures it was priced at
(crev11 #1, #2, #3, #7, #9): its header records what the engine's options cannot hold (the arrival, the prefix cache's
hits, the concurrency beside a smaller batch cap, the MXFP4 checkpoint's BF16 attention, a custom shape's digest), and
`import` reads it back."""
import json
from dataclasses import replace

import pytest
from conftest import cli, cli_ok

import llm_codesign as lc
from llm_codesign.explore.export import HEADER

KEYS = ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu")


def _header(text: str) -> dict:
    return json.loads(next(x for x in text.splitlines() if x.startswith(HEADER))[len(HEADER):])


def _same(back: dict, point: dict) -> None:
    for k in KEYS:
        assert back[k] == pytest.approx(point[k], rel=1e-12), k


def test_a_burst_frontier_point_with_prefix_hits_reimports_at_its_figures(tmp_path):
    """crev11 #1: export-point dropped the frontier's --arrival and --prefix-hit, and its point 5 (1596 ms / 14.15 ms)
    re-imported in waves with no hits (188 ms / 30.48 ms)."""
    front = tmp_path / "p.json"
    front.write_text(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", 1, "--arrival", "burst", "--prefix-hit", 0.5,
                            "--isl", 2048, "--osl", 256, "--json"))
    points = json.loads(front.read_text())["frontier"]
    k = len(points) // 2
    out = tmp_path / "x.yaml"
    cli_ok("export-point", front, "--index", k, "-o", out)
    head = _header(out.read_text())
    assert (head["arrival"], head["prefix_hit"]) == ("burst", 0.5)
    back = json.loads(cli_ok("import", out, "--json"))
    assert (back["arrival"], back["prefix_hit"], back["concurrency"]) == ("burst", 0.5, points[k]["deployment"]["concurrency_per_instance"])
    _same(back, points[k])
    # asked again without the hits: all 2,048 prompt tokens prefilled, not 2,048 - floor(2,048 x 0.5) = 1,024, so a longer TTFT
    none = lc.import_config(out, prefix_hit=0.0)
    assert none.ttft_s * 1e3 > back["ttft_ms"] and none.estimate.workload.new_tokens == 2048


def test_lc_export_point_and_the_pages_file_record_the_workload(tmp_path):
    """lc.export_point and POST /api/estimate with export: true go through point_config too (crev11 #1's page half: 903 ms
    answered, 213 ms re-imported)."""
    from fastapi.testclient import TestClient

    from llm_codesign.web.app import create_app

    w = lc.Workload(isl=2048, osl=256, prefix_hit=0.25, arrival="closed_loop")
    f = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, workload=w)
    (name, text), = lc.export_point(f, 0).items()
    assert {k: _header(text)[k] for k in ("arrival", "prefix_hit")} == {"arrival": "closed_loop", "prefix_hit": 0.25}
    body = {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "isl": 2048, "osl": 256, "concurrency": 64, "arrival": "burst",
            "prefix_hit": 0.5, "export": True}
    r = TestClient(create_app()).post("/api/estimate", json=body).json()
    head = _header(r["export"]["text"])
    assert (head["arrival"], head["prefix_hit"], head["predicted"]["ttft_ms"]) == ("burst", 0.5, r["ttft_ms"])
    (tmp_path / name).write_text(r["export"]["text"])
    _same(lc.import_config(tmp_path / name).to_dict(), head["predicted"])  # 903 ms, not the 213 ms of waves with no hits


def test_an_export_whose_cap_is_smaller_than_its_concurrency_reimports_at_its_concurrency(tmp_path):
    """crev11 #2: export --concurrency 256 --max-batch 64 predicted TTFT 78.1 s and re-imported at the cap's 64 requests
    (0.60 s); import takes the header's concurrency."""
    out = tmp_path / "t.yaml"
    said = json.loads(cli_ok("export", "llama-3.1-70b", "--gpu", "h100", "--tp", 4, "--concurrency", 256, "--max-batch", 64, "-o", out, "--json"))
    r = lc.import_config(out)
    assert (r.concurrency, r.batch, r.deployment.max_batch) == (256, "the export's", 64)
    _same(r.to_dict(), said["predicted"])
    # 256 requests through 64 slots: 256 / 64 = 4 cohorts, the last 3 of them queued behind the first
    assert " 3 cohorts of " in " ".join(cli_ok("import", out).split())


def test_an_attention_dp_export_reimports_at_its_concurrency_not_the_ranks_rounding(tmp_path):
    """crev11 #2: at attention DP 8 the file caps each rank at ceil(250 / 8) = 32 requests, which reads back as 32 x 8 = 256;
    the export priced 250."""
    out = tmp_path / "adp.yaml"
    said = json.loads(cli_ok("export", "deepseek-r1", "--gpu", "b200", "--gpus", 8, "--tp", 1, "--attention-dp", 8, "--ep", 8,
                             "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", "--concurrency", 250, "-o", out, "--json"))
    r = lc.import_config(out)
    assert (r.concurrency, r.deployment.max_batch) == (250, 32)
    _same(r.to_dict(), said["predicted"])


def test_an_mi355x_mxfp4_r1_point_reimports_with_the_quark_checkpoints_bf16_attention(tmp_path):
    """crev11 #3: the header now records the attention's format (attn_weight_dtype), and a file written before it did, which
    names the Quark checkpoint, is read with that checkpoint's BF16 attention (spec.plan.quark_mxfp4)."""
    f = lc.pareto("deepseek-r1", "mi355x", num_gpus=8, weight_dtype="mxfp4", kv_dtype="fp8")
    d = f.to_dict()["frontier"]
    k = next(i for i, p in enumerate(d) if p["deployment"]["plan"] == "TP8 EP8")
    assert d[k]["deployment"]["attn_weight_dtype"] == "bf16"
    (name, text), = lc.export_point(f, k).items()
    assert _header(text)["attn_weight_dtype"] == "bf16"
    dep = f.points[k].deployment
    all_mx, w = replace(dep, precision=replace(dep.precision, attn_weight=None)), lc.Workload(concurrency=f.points[k].concurrency)
    for i, t in enumerate((text, text.replace(', "attn_weight_dtype": "bf16"', ""))):  # as written, and as written before crev11
        path = tmp_path / f"{i}{name}"
        path.write_text(t)
        back = lc.import_config(path)
        assert back.deployment.precision.label() == "W:mxfp4 attn-W:bf16 A:mxfp4 KV:fp8"
        # the BF16 attention projections (q_a, kv_a, q_b, kv_b, o of 61 MLA layers) weigh more than at MXFP4's 4.25 bits
        assert back.to_dict()["memory"]["weights_gb"] > lc.estimate("deepseek-r1", all_mx, w).to_dict()["memory"]["weights_gb"]
        assert back.to_dict()["precision_notes"] == ["attention projections BF16 (AMD Quark MXFP4 checkpoint)"]
        _same(back.to_dict(), d[k])


def test_a_dict_frontiers_file_reimports_with_the_config_it_came_from(tmp_path):
    """crev11 #7: a frontier of a config.json's dict wrote a header naming "custom", and import refused the config.json it
    came from by name ("q_awq4"), and lc.import_config refused the dict; the header records the shape's digest."""
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    f = lc.pareto(cfg, "h100", num_gpus=1, workload=lc.Workload(isl=1024, osl=256))
    (name, text), = lc.export_point(f, 0).items()
    assert _header(text)["model"] == "custom" and len(_header(text)["model_shape"]) == 16
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "mine.json").write_text(json.dumps(cfg))
    point = f.to_dict()["frontier"][0]
    for given in (cfg, lc.get_model(cfg), str(tmp_path / "mine.json")):  # the dict, its ModelSpec, its file under another name
        _same(lc.import_config(path, model=given).to_dict(), point)
    _same(json.loads(cli_ok("import", path, "--model", tmp_path / "mine.json", "--json")), point)
    code, _, err = cli("import", str(path), "--model", "llama-3.1-70b")  # another shape: one line, exit 2
    assert code == 2 and "model: 'llama-3.1-70b' is not valid; left out or custom (or its config.json, of the shape the header " \
                          "records)" in " ".join(err.split())


def test_each_pareto_json_point_states_the_series_and_index_export_point_takes(tmp_path):
    """crev11 #9: a pareto --disagg --json lists the disaggregated points after the aggregated ones; each point now says
    its series and its index in it, which export-point takes, and the point's Dynamo file re-imports at its figures."""
    front = tmp_path / "d.json"
    front.write_text(cli_ok("pareto", "llama-3.1-8b", "--gpu", "h200", "--gpus", 4, "--disagg", "--isl", 1024, "--osl", 256, "--json"))
    points = json.loads(front.read_text())["frontier"]
    n_agg = sum(p["series"] == "aggregated" for p in points)
    assert 0 < n_agg < len(points)
    # the combined list: the aggregated series 0 .. n_agg - 1, then the disaggregated one from 0 again
    assert [(p["series"], p["index"]) for p in points] == [("aggregated", i) for i in range(n_agg)] + [
        ("disagg", i - n_agg) for i in range(n_agg, len(points))]
    last = points[-1]
    code, _, err = cli("export-point", str(front), "--index", len(points) - 1, "-o", str(tmp_path / "x.yaml"))
    # fixN5c's --index counts from either end: -n_agg (the throughput end) to n_agg - 1
    assert code == 2 and (f"a point of the aggregated series, -{n_agg} to {n_agg - 1} (0 the throughput end, -1 or {n_agg - 1} "
                          "the interactive end)") in " ".join(err.split())
    out = tmp_path / "dyn.yaml"
    cli_ok("export-point", front, "--series", last["series"], "--index", last["index"], "-o", out)
    _same(lc.import_config(out).to_dict(), last)
