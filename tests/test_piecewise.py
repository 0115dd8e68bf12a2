"""vLLM's PIECEWISE CUDA graphs (cudagraph_mode PIECEWISE, -O1) priced as what they are: each decode step replays one
graph piece per layer boundary and launches each layer's attention ops from the host between them (docs/modelling-notes.md
#piecewise-graphs). The golden figures are worked by hand from serve.aggregated's constants: DECODE_LAUNCH_S 35 us an op,
GRAPH_PIECE_S 5 us a piece, LAUNCH_JITTER_S 2 us, E[max of 8 normals] 1.4236."""
import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

import llm_codesign as lc
from llm_codesign.cli import app
from llm_codesign.errors import InputError
from llm_codesign.serve import aggregated as agg

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _stage(name: str, tp: int, *, piecewise: bool, batch: float = 1.0):
    m = lc.get_model(name)
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=tp, engine="vllm", tp=tp), piecewise_graphs=piecewise)
    costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
    parts, _, ops = agg._decode_stage(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=costs, b=np.asarray(batch),
                                      ctx=np.asarray(1536.0), k=np.asarray(0.0), spec=None,
                                      flags=agg.Serving.of(dep).flags(None), piecewise=piecewise)
    return m, parts, ops


@pytest.mark.parametrize("name, ops, pieces", [
    ("llama-3.1-8b", 64.0, 33.0),  # 32 GQA layers x (KV-cache write + attention); 32 + 1 pieces
    ("qwen3-0.6b", 56.0, 29.0),  # 28 x 2; 28 + 1
    ("nemotron-h-56b", 74.0, 65.0),  # 54 Mamba2 x 1 (mamba_mixer2) + 10 GQA x 2; its 54 MLP-only layers split nothing: 64 + 1
    ("qwen3.5-397b-a17b", 75.0, 61.0),  # 45 gated DeltaNet x 1 (qwen_gdn_attention_core) + 15 GQA x 2; 60 + 1
    ("deepseek-v3.2", 183.0, 62.0),  # 61 sparse MLA x 3 (indexer, KV-cache write, attention); 61 + 1
])
def test_the_splitting_ops_and_pieces_by_mixer(name, ops, pieces):
    m, _, step = _stage(name, 1, piecewise=True) if name in ("llama-3.1-8b", "qwen3-0.6b") else (lc.get_model(name), None, None)
    if step is None:  # a large model: its operators on enough GPUs to hold it, one stage
        dep = lc.deployment(m, gpu="h200", num_gpus=8, engine="vllm", tp=8)
        costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
        step = agg.forward_ops(m, dep.gpu, costs.cal, dep.precision, dep.plan.broadcast(), b=agg.Batch(dec_seqs=1.0, dec_ctx=1536.0),
                               engine=dep.engine)
    n, p = agg.piecewise_launches(m, step)
    assert (float(n), float(p)) == (ops, pieces)


def test_llama_8b_tp1_one_request_hides_its_pieces_under_the_kernels():
    """The brief's golden: Llama-3.1-8B TP1 H100, vLLM -O1, 1 request 1k/1k. The host launches 64 ops x 35 us = 2.240 ms
    and replays 33 pieces x 5 us = 0.165 ms: 2.405 ms (one rank: no jitter), under the step's 6.815 ms of kernels, so the
    step takes its kernels (max(host, kernels)) and TPOT is the full graph's, 7.128 ms, bit for bit."""
    _, full, _ = _stage("llama-3.1-8b", 1, piecewise=False)
    _, pw, _ = _stage("llama-3.1-8b", 1, piecewise=True)
    assert float(pw.eager_host) == pytest.approx(64 * 35e-6 + 33 * 5e-6, rel=1e-12)  # 2.405 ms
    assert float(pw.eager_n) == 64.0 and bool(pw.piecewise)
    assert float(pw.kernels) == pytest.approx(6.8154e-3, rel=1e-4) and float(pw.eager) == 0.0
    assert float(pw.stage) == float(full.stage)


def test_llama_8b_tp8_one_request_is_bound_by_the_host():
    """TP8: the kernels fall to 1.9696 ms while each rank still launches 64 ops and 33 pieces, and each of the stage's
    65 collectives (2 all-reduces a layer and the logits gather) waits for the slowest of 8 ranks' launches:
    64 x 35 us + sqrt(64 x 65) x 2 us x 1.4236 + 33 x 5 us = 2.240 + 0.18364 + 0.165 = 2.58864 ms, 0.61907 ms beyond the
    kernels: TPOT 2.2826 -> 2.9017 ms (1 stage, no draft: the step's excess whole)."""
    _, full, ops = _stage("llama-3.1-8b", 8, piecewise=False)
    _, pw, _ = _stage("llama-3.1-8b", 8, piecewise=True)
    assert float(agg.launches(agg._collectives(ops))) == 65.0
    host = 64 * 35e-6 + np.sqrt(64 * 65) * 2e-6 * 1.4236 + 33 * 5e-6
    assert float(pw.eager_host) == pytest.approx(host, rel=1e-4)  # 2.58864 ms
    assert float(pw.eager) == pytest.approx(host - float(pw.kernels), rel=1e-3)  # 0.61907 ms
    assert float(pw.stage) - float(full.stage) == pytest.approx(0.61907e-3, rel=1e-3)
    assert float(full.eager) == 0.0 and not bool(np.any(full.piecewise))


def test_a_batch_above_the_capture_runs_eager_in_every_mode():
    """vLLM's capture (512 tokens on H100 where the run sets none) holds 512 decodes; 600 run without graphs in PIECEWISE
    mode as in the default: the same eager step, not the piecewise one."""
    _, full, _ = _stage("qwen3-0.6b", 1, piecewise=False, batch=600.0)
    _, pw, _ = _stage("qwen3-0.6b", 1, piecewise=True, batch=600.0)
    assert not bool(pw.piecewise) and float(pw.eager_host) == float(full.eager_host) > 0.0
    assert float(pw.stage) == float(full.stage)


def test_the_note_and_the_intervals_take_the_host_ops_range():
    """estimate's note at TP8 (above): TPOT moves with the ops' launch cost at 8 and 40 us (the pieces held at 5 us). At 8 us
    the host (64 x 8 us + 0.18364 + 0.165 = 0.86064 ms) falls under the 1.9696 ms of kernels: TPOT 2.9017 -> 2.2826 ms,
    down ln(2.9017 / 2.2826) = 0.23997; at 40 us 64 x 5 us = 0.32 ms more: up ln(3.2217 / 2.9017) = 0.10461."""
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=8, engine="vllm", tp=8), piecewise_graphs=True)
    e = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=1), breakdown=True)
    assert e.eager_decode.moves == pytest.approx((0.23997, 0.10461), abs=2e-4)
    assert "piecewise CUDA graphs" in e.eager_decode.note and "FULL_AND_PIECEWISE" in e.eager_decode.avoid
    row = next(o for o in e.breakdown if o.name == "host/eager_launches")
    assert row.time_s == pytest.approx(0.61907e-3, rel=1e-3) and "piecewise" in row.what


def _import(tmp_path, words: str, *extra: str) -> dict:
    f = tmp_path / "serve.sh"
    f.write_text(f"vllm serve {LLAMA} {words}\n")
    r = CliRunner().invoke(app, ["import", str(f), "--gpu", "h100", "--isl", "1024", "--osl", "1024", "--concurrency", "1", "--json", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("mode", ["-O1", "-O 1", """--compilation-config '{"cudagraph_mode":"PIECEWISE"}'""",
                                  "-cc.cudagraph_mode=piecewise", """--compilation-config '{"cudagraph_mode": 1}'"""])
def test_import_prices_a_piecewise_launch(tmp_path, mode):
    """import of `vllm serve ... -O1` or of compilation-config's cudagraph_mode PIECEWISE (any spelling) prices the piecewise
    step: at TP8 TPOT 2.2826 -> 2.9017 ms (above), and no longer lists PIECEWISE as ignored; at TP1 the kernels hide it."""
    base = _import(tmp_path, "--tensor-parallel-size 8")
    got = _import(tmp_path, f"--tensor-parallel-size 8 {mode}")
    assert got["tpot_ms"] - base["tpot_ms"] == pytest.approx(0.61907, rel=1e-3)
    assert got["deployment"]["piecewise_graphs"] is True and "piecewise_graphs" not in base["deployment"]
    assert got["eager_decode"]["tpot_log_moves"] == pytest.approx([0.23997, 0.10461], abs=2e-4)
    # only -O1's lesser compilation is left unpriced; the graph mode no longer is
    assert got["ignored"] == (["optimization-level (1: fewer fusions; its kernels priced as -O2 compiles them)"] if mode.startswith("-O") else [])
    assert _import(tmp_path, mode)["tpot_ms"] == _import(tmp_path, "")["tpot_ms"]


def test_import_of_enforce_eager_with_O1_is_graphs_off(tmp_path):
    """--enforce-eager turns vLLM's graphs off whatever the level (cuda_graph_max_bs 0): eager, not piecewise."""
    off = _import(tmp_path, "--tensor-parallel-size 8 --enforce-eager")
    both = _import(tmp_path, "--tensor-parallel-size 8 --enforce-eager -O1")
    assert both["tpot_ms"] == off["tpot_ms"] > _import(tmp_path, "--tensor-parallel-size 8 -O1")["tpot_ms"]


def test_export_writes_piecewise_and_import_reads_it_back():
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.explore.export_engines.vllm import vllm_options

    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=8, engine="vllm", tp=8), piecewise_graphs=True)
    o = vllm_options(m, dep, 1)
    assert o["compilation-config"] == {"cudagraph_mode": "PIECEWISE"}
    assert "compilation-config" not in vllm_options(m, replace(dep, piecewise_graphs=False), 1)
    text = export_config(m, dep, engine="vllm", concurrency=1)
    assert "cudagraph_mode: PIECEWISE" in text
    assert read_export(text).deployment.piecewise_graphs
    assert not read_export(export_config(m, replace(dep, piecewise_graphs=False), engine="vllm", concurrency=1)).deployment.piecewise_graphs


@pytest.mark.parametrize("bad, why", [
    ({"piecewise_graphs": "yes"}, "true or false"),
    ({"piecewise_graphs": True, "cuda_graph_max_bs": 0}, "with CUDA graphs on"),
])
def test_a_bad_piecewise_field_is_one_line(bad, why):
    m = lc.get_model("llama-3.1-8b")
    d = lc.deployment(m, gpu="h100", num_gpus=1, engine="vllm").to_dict() | bad
    with pytest.raises(InputError, match=why):
        lc.Deployment.from_dict(d)
    with pytest.raises(InputError, match="this is sglang"):
        replace(lc.deployment(m, gpu="h100", num_gpus=1, engine="sglang"), piecewise_graphs=True)


def test_the_record_carries_the_mode_only_where_set():
    m = lc.get_model("llama-3.1-8b")
    dep = lc.deployment(m, gpu="h100", num_gpus=1, engine="vllm")
    assert "piecewise_graphs" not in dep.to_dict()  # every record written before reads the same
    assert lc.Deployment.from_dict(replace(dep, piecewise_graphs=True).to_dict()).piecewise_graphs


# merged with eagerfix (docs/modelling-notes.md#piecewise-graphs, "Merged with eagerfix"): the piecewise host is what the
# per-stage repricing at the launch range's ends moves (StepParts.at_launch), the hidden step and the eager wording alike

def _pp_stage(tp: int, pp: int, batch: float = 1.0):
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=tp * pp, engine="vllm", tp=tp, pp=pp), piecewise_graphs=True)
    costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
    parts, _, _ = agg._decode_stage(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=costs, b=np.asarray(batch),
                                    ctx=np.asarray(1536.0), k=np.asarray(0.0), spec=None, flags=agg.Serving.of(dep).flags(None),
                                    piecewise=True)
    return parts


def test_a_piecewise_pipeline_is_repriced_per_stage_and_in_turn():
    """TP4 PP2, 1 request: each stage launches 16 layers x 2 = 32 ops, every stage in turn 64 with 33 pieces (one more than
    the 32 layers split) and 65 collectives: host_all = 64 x 35 us + sqrt(64 x 65) x 2 us x 1.0294 (E[max of 4 normals])
    + 33 x 5 us = 2240 + 132.79 + 165 = 2537.8 us, under the 2628.2 us of every stage's kernels: hidden at 35 us. At 40 us
    the ops take 64 x 5 us = 320 us more: 2857.8 - 2628.2 = 229.5 us in turn; per stage 32 x 5 = 160 us more on its 1271.9 us
    against its 1369.8 us of kernels: 62.0 us. At 8 us both hide. (Before the merge eager_n_all was 0 for a piecewise step,
    so at_launch left eager_all at 0 at 40 us.)"""
    p = _pp_stage(4, 2)
    assert (float(p.eager_n), float(p.eager_n_all)) == (32.0, 64.0) and bool(p.piecewise)
    assert float(p.eager_host_all) == pytest.approx(64 * 35e-6 + np.sqrt(64 * 65) * 2e-6 * 1.0294 + 33 * 5e-6, rel=1e-4)
    assert (float(p.eager), float(p.eager_all)) == (0.0, 0.0)
    hi = p.at_launch(40e-6, np.asarray(2.0), hosts_in_turn=False)
    assert float(hi.eager_all) == pytest.approx(float(p.eager_host_all) + 64 * 5e-6 - float(p.kernels_all), rel=1e-12)
    assert float(hi.eager_all) == pytest.approx(229.5e-6, rel=2e-3) and float(hi.eager_ring) == float(hi.eager_all) / 2
    assert float(hi.eager) == pytest.approx(float(p.eager_host) + 32 * 5e-6 - float(p.kernels), rel=1e-12)
    assert float(hi.eager) == pytest.approx(62.0e-6, rel=5e-3)
    lo = p.at_launch(8e-6, np.asarray(2.0), hosts_in_turn=False)
    assert (float(lo.eager), float(lo.eager_all)) == (0.0, 0.0)


def test_a_hidden_piecewise_step_widens_above_only():
    """TP4 PP1, 1 request: host 2537.8 us (above) under 2614.5 us of kernels at 35 us; at 40 us 2857.8 us, 243.3 us over:
    TPOT 2.9275 -> 3.1708 ms, up ln(1 + 0.2433 / 2.9275) = 0.07984, down 0. The note is the hidden step's one line in
    piecewise words; the intervals' eager reason names piecewise graphs."""
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=4, engine="vllm", tp=4), piecewise_graphs=True)
    e = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=1), breakdown=True)
    d = e.eager_decode
    assert d.piecewise and d.extra_s == 0.0 and d.share == 0.0 and d.moves[0] == 0.0
    assert d.moves[1] == pytest.approx(np.log1p(0.2433e-3 / 2.9275e-3), abs=2e-4)  # 0.07984
    assert "piecewise CUDA graphs" in d.note and "widen above only" in d.note and "+0.243 ms" in d.note
    assert d.ttft_moves[0] == 0.0 and d.ttft_moves[1] > 0.0 and d.to_dict()["piecewise"] is True
    why = [w for w in e.intervals["tpot_ms"]["widened"] if w.kind == "eager"]
    assert len(why) == 1 and "no decode run without CUDA graphs or with piecewise graphs" in why[0]
    full = lc.estimate(m, replace(dep, piecewise_graphs=False), lc.Workload(isl=1024, osl=1024, concurrency=1))
    assert full.eager_decode is None and full.tpot_s == e.tpot_s  # hidden: the full graph's TPOT, bit for bit


def test_a_shown_piecewise_note_words_each_side_its_own():
    """TP8's shown step (above): the note gives TPOT's moves at the range's ends and says each side widens by its own."""
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=8, engine="vllm", tp=8), piecewise_graphs=True)
    d = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=1)).eager_decode
    assert "TPOT x0.79-x1.11 with the launches at the range's ends; each side of the intervals widens by its own end's move" in d.note
    assert "larger move" not in d.note and d.extra_s == pytest.approx(0.61907e-3, rel=1e-3)
