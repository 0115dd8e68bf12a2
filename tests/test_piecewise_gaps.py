"""vLLM's PIECEWISE graphs where the first landing left them out (docs/modelling-notes.md#pwgaps-piecewise-gaps): a
disaggregated decode pool's workers, the drafter's own pieces, and a mixed step under the default FULL_AND_PIECEWISE.
The goldens are worked by hand from serve.aggregated's constants: DECODE_LAUNCH_S 35 us an op, GRAPH_PIECE_S 5 us a
piece, LAUNCH_JITTER_S 2 us, E[max of 8 normals] 1.4236."""
import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import cli

import llm_codesign as lc
from llm_codesign.explore.export import export_dynamo

LLAMA = "llama-3.1-8b"
# the aggregated TP8 golden (tests/test_piecewise.py): 64 x 35 us + sqrt(64 x 65) x 2 us x 1.4236 + 33 x 5 us = 2.58864 ms
# of host over 1.9696 ms of kernels, +0.61907 ms a step: TPOT 2.2826 -> 2.9017 ms at one request
TP8_FULL_MS, TP8_PIECEWISE_MS = 2.2826, 2.9017


def _disagg(**kw):
    return lc.disagg(LLAMA, "h100", prefill="tp=1", decode="tp=8", concurrency=[1, 8], engine="vllm", **kw)


def test_a_disaggregated_decode_pool_prices_its_pieces_as_the_aggregated_step():
    """lc.disagg's decode_piecewise_graphs: the decode pool's step at one request is the aggregated TP8 step, +0.61907 ms;
    the row carries the piecewise note (the intervals' eager term reads its piecewise flag) and the table's line says so."""
    full, pw = _disagg(), _disagg(decode_piecewise_graphs=True)
    assert full.rows[0]["tpot_ms"] == pytest.approx(TP8_FULL_MS, abs=1e-4) and "eager_decode" not in full.rows[0]
    assert pw.rows[0]["tpot_ms"] == pytest.approx(TP8_PIECEWISE_MS, abs=1e-4)
    assert pw.rows[0]["tpot_ms"] - full.rows[0]["tpot_ms"] == pytest.approx(0.61907, rel=1e-3)
    note = pw.rows[0]["eager_decode"]
    assert note["piecewise"] is True and note["extra_ms_per_step"] == pytest.approx(0.61907, rel=1e-3)
    assert note["tpot_log_moves"] == pytest.approx([0.23997, 0.10461], abs=2e-4)  # the aggregated step's moves
    assert any(n.startswith("Piecewise CUDA graphs: ") and "at 1, 8 requests" in n for n in pw.notes)
    assert not any("Piecewise" in n for n in full.notes)
    # TTFT's hand-off waits for the decode worker's step boundary (serve.disagg.decode_admission), which the longer step
    # moves by less than the step's extra; the prefill itself does not move
    assert 0.0 < pw.rows[0]["ttft_ms"] - full.rows[0]["ttft_ms"] <= 0.61907 + 1e-6
    assert pw.rows[0]["prefill_ms"] == full.rows[0]["prefill_ms"]


@pytest.mark.parametrize("flags", [["--decode-optimization-level", "1"], ["--decode-O", "1"],
                                   ["--decode-compilation-config", '{"cudagraph_mode": "piecewise"}'],
                                   ["--decode-cc", '{"cudagraph_mode": 1}', "--decode-O", "3"]])
def test_the_cli_reads_the_decode_workers_vllm_flags(flags):
    """disagg's -O / --compilation-config of the decode workers read as import reads a vLLM launch (graph_mode: the mode
    before the level): each prices the piecewise pool, TPOT 2.9017 ms at one request."""
    code, out, err = cli("disagg", LLAMA, "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=8", "--concurrency", "1",
                         "--backend", "vllm", "--json", *flags)
    assert code == 0, err
    assert json.loads(out)["rows"][0]["tpot_ms"] == pytest.approx(TP8_PIECEWISE_MS, abs=1e-4)


def test_the_cli_reads_none_as_graphs_off_and_full_as_the_default():
    def tpot(*flags):
        code, out, err = cli("disagg", LLAMA, "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=8", "--concurrency", "1",
                             "--backend", "vllm", "--json", *flags)
        assert code == 0, err
        return json.loads(out)["rows"][0]["tpot_ms"]

    assert tpot("--decode-O", "2") == tpot("--decode-cc", '{"cudagraph_mode": "FULL_AND_PIECEWISE"}') == tpot()
    # -O0: no graphs (cuda_graph_max_bs 0), every kernel launched: as --decode-cuda-graph-max-bs 0
    assert tpot("--decode-O", "0") == tpot("--decode-cuda-graph-max-bs", "0") > TP8_PIECEWISE_MS


@pytest.mark.parametrize("flags, field", [
    (["--decode-cc", '{"cudagraph_mode": "halfway"}'], "compilation-config.cudagraph_mode"),
    (["--decode-cc", '{"max_cudagraph_capture_size": 64}'], "decode-compilation-config"),
    (["--decode-cc", "PIECEWISE"], "decode-compilation-config"),
    (["--decode-O", "1", "--backend", "sglang"], "decode-optimization-level"),
])
def test_bad_decode_flags_are_one_line(flags, field):
    code, out, err = cli("disagg", LLAMA, "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=8", "--concurrency", "1",
                         *(["--backend", "vllm"] if "--backend" not in flags else []), *flags)
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and field in err


def test_the_api_refuses_piecewise_on_another_engine_naming_its_keyword():
    with pytest.raises(lc.InputError, match="decode_piecewise_graphs"):
        lc.disagg(LLAMA, "h100", prefill="tp=1", decode="tp=8", concurrency=1, engine="sglang", decode_piecewise_graphs=True)


def test_import_of_a_vllm_dynamo_deployment_prices_its_piecewise_decode_pool(tmp_path):
    """A Dynamo deployment of vLLM workers whose decode workers run `--compilation-config {cudagraph_mode: PIECEWISE}`
    (export writes it, import reads it back: VLLMExporter.piecewise_graphs) is priced with the pool's pieces: 2.9017 ms."""
    m = lc.get_model(LLAMA)
    pre = lc.deployment(m, gpu="h100", num_gpus=1, engine="vllm", tp=1)
    dec = replace(lc.deployment(m, gpu="h100", num_gpus=8, engine="vllm", tp=8), piecewise_graphs=True)
    f = tmp_path / "dyn.yaml"
    f.write_text(export_dynamo(m, prefill=pre, decode=dec, prefill_instances=1, decode_instances=1, concurrency=1,
                               extra={"isl": 1024, "osl": 1024}))
    assert "PIECEWISE" in f.read_text()
    got = lc.import_config(str(f)).to_dict()
    assert got["tpot_ms"] == pytest.approx(TP8_PIECEWISE_MS, abs=1e-4) and got["eager_decode"]["piecewise"] is True
    f.write_text(export_dynamo(m, prefill=pre, decode=replace(dec, piecewise_graphs=False), prefill_instances=1,
                               decode_instances=1, concurrency=1, extra={"isl": 1024, "osl": 1024}))
    assert lc.import_config(str(f)).to_dict()["tpot_ms"] == pytest.approx(TP8_FULL_MS, abs=1e-4)
    assert np.isfinite(got["ttft_ms"])


def _eagle_stage(piecewise: bool, draft_len: float = 3.0):
    from llm_codesign.serve import aggregated as agg

    m = lc.get_model(LLAMA)
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=8, engine="vllm", tp=8, spec="eagle3", draft_len=3, acceptance=2.5),
                  piecewise_graphs=piecewise)
    costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
    parts, _, _ = agg._decode_stage(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=costs, b=np.asarray(1.0),
                                    ctx=np.asarray(1536.0), k=np.asarray(draft_len), spec=dep.spec,
                                    flags=agg.Serving.of(dep).flags(None), piecewise=piecewise)
    return parts


def test_the_drafters_pieces_are_priced_under_piecewise():
    """vLLM's EAGLE-3 drafter replays its own PIECEWISE graphs (llm_base_proposer.py:420-435): each of k = 3 passes of its
    one GQA layer launches 2 ops (KV-cache write, attention) between 2 pieces, 6 ops and 6 pieces a step beside the
    target's 64 and 33. TP8, 1 request: host = 70 x 35 us + sqrt(70 x 65) x 2 us x 1.4236 + 39 x 5 us
    = 2.450 + 0.19205 + 0.195 = 2.83705 ms over 2.01644 ms of target kernels + 0.22443 ms of draft: +0.59617 ms a step
    (without the drafter's: 64 x 35 + sqrt(64 x 65) x 2 x 1.4236 + 33 x 5 = 2.58864 ms, +0.34777 ms)."""
    pw, full = _eagle_stage(True), _eagle_stage(False)
    assert float(pw.eager_n) == 70.0
    assert float(pw.eager_host) == pytest.approx(70 * 35e-6 + np.sqrt(70 * 65) * 2e-6 * 1.4236 + 39 * 5e-6, rel=1e-4)
    assert float(pw.eager) == pytest.approx(0.59617e-3, rel=1e-3)
    assert float(pw.stage) - float(full.stage) == pytest.approx(0.59617e-3, rel=1e-3)
    assert float(full.eager) == 0.0 and float(full.eager_n) == 0.0  # one full graph a step: no launches priced
    # no draft tokens, no draft passes: the target's 64 ops and 33 pieces alone
    assert float(_eagle_stage(True, draft_len=0.0).eager_n) == 64.0


def _mixed(tokens: float, *, gpu: str = "h100", engine: str = "vllm", flags=None):
    from llm_codesign.serve import aggregated as agg

    m = lc.get_model(LLAMA)
    dep = lc.deployment(m, gpu=gpu, num_gpus=1, engine=engine, tp=1)
    costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
    t = np.asarray(tokens)
    return agg.prefill_step_parts(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=costs, tokens=t, isl=t, chunk=t,
                                  flags=flags), costs


def test_a_prefill_step_within_the_capture_runs_vllms_piecewise_graphs():
    """Under vLLM's default FULL_AND_PIECEWISE a step carrying prefill dispatches to the PIECEWISE graphs up to
    max_cudagraph_capture_size tokens (cudagraph_dispatcher.py:270-318): 512 on H100 (min(2 x 1,024 x 1, 512)). Llama-3.1-8B
    TP1: an eager step launches 290 kernels at the fitted 6.69393 us (one rank, no skew) = 1.94124 ms; a piecewise one its
    64 splitting ops and 33 pieces, 97 x 6.69393 us = 0.64931 ms: 1.29193 ms less a step at 256 and 512 tokens, none at 513."""
    from llm_codesign.serve import aggregated as agg

    per = 6.69393e-6
    for tokens, launched in ((256.0, 97.0), (512.0, 97.0), (513.0, 290.0)):
        parts, costs = _mixed(tokens)
        assert float(costs.eager_per_launch(1.0)) == pytest.approx(per, rel=1e-5)
        assert float(parts.eager) == pytest.approx(launched * per, rel=1e-5)
    # graphs off (--enforce-eager: cuda_graph_max_bs 0) and other engines: every kernel launched, as before
    off = replace(agg.DEFAULT_FLAGS, cuda_graph_max_bs=0.0)
    assert float(_mixed(256.0, flags=off)[0].eager) == pytest.approx(290.0 * per, rel=1e-5)
    sg, sg_costs = _mixed(256.0, engine="sglang")
    assert float(sg.eager) == pytest.approx(float(sg_costs.eager_per_launch(1.0)) * 290.0, rel=1e-9)
    # a padded capture of 64 a rank: 64 tokens, so a 256-token step runs eager again
    assert float(_mixed(256.0, flags=replace(agg.DEFAULT_FLAGS, cuda_graph_max_bs=64.0))[0].eager) == pytest.approx(290.0 * per, rel=1e-5)


def test_one_request_ttft_moves_by_the_piecewise_prompt_step():
    """One request, ISL 256 on H100 (below 512) and ISL 1024 on B200 (1,024 there): the prompt's one step saves
    193 x 6.69393 us = 1.29193 ms of TTFT; ISL 1024 on H100 (above 512) does not move. TPOT does not move (decode-only
    steps are one full graph)."""
    def answer(gpu, isl):
        dep = lc.deployment(LLAMA, gpu=gpu, num_gpus=1, engine="vllm", tp=1)
        return lc.estimate(LLAMA, dep, lc.Workload(isl=isl, osl=1024, concurrency=1)).to_dict()

    assert answer("h100", 256)["ttft_ms"] == pytest.approx(18.2027 - 1.29193, abs=2e-3)
    assert answer("b200", 1024)["ttft_ms"] == pytest.approx(18.8379 - 1.29193, abs=2e-3)
    assert answer("h100", 1024)["ttft_ms"] == pytest.approx(32.3282, abs=1e-3)
    assert answer("h100", 256)["tpot_ms"] == pytest.approx(7.07165, abs=1e-4)


def test_piecewise_decode_with_no_capture_is_refused_in_the_users_flags():
    # the final review: "piecewise_graphs: True is not valid" named a Deployment field the user never typed
    code, out, err = cli("disagg", "llama-3.1-8b", "--gpu", "h100", "--prefill", "tp=1", "--decode", "tp=1", "--backend", "vllm",
                         "--decode-cc", '{"cudagraph_mode": "PIECEWISE"}', "--decode-cuda-graph-max-bs", "0")
    assert code == 2 and out == "" and err == ("error: decode-cuda-graph-max-bs: 0 is not valid; left out, or a capture above 0, "
                                               "with PIECEWISE decode graphs (0 captures none: give cudagraph_mode NONE for no "
                                               "graphs)\n")


def _draft_model_stage(draft_len: float, *, piecewise: bool = False, engine: str = "vllm", b: float = 1.0):
    from llm_codesign.serve import aggregated as agg

    m = lc.get_model("qwen3-32b")
    dep = replace(lc.deployment(m, gpu="b200", num_gpus=8, engine=engine, tp=8, spec="draft", draft_model="qwen3-0.6b",
                                draft_len=int(draft_len), acceptance=2.0), piecewise_graphs=piecewise)
    costs = dep.engine.costs(lc.api._calibration(dep.gpu, None))
    parts, _, _ = agg._decode_stage(m, dep.gpu, dep.precision, dep.plan.broadcast(), costs=costs, b=np.asarray(b),
                                    ctx=np.asarray(1536.0), k=np.asarray(draft_len), spec=dep.spec,
                                    flags=agg.Serving.of(dep).flags(None), piecewise=piecewise)
    return parts


def test_the_drafters_pieces_show_in_the_default_mode_where_they_outlast_the_kernels():
    """vLLM's default FULL_AND_PIECEWISE replays the target as one full graph but its drafter under PIECEWISE graphs
    (llm_base_proposer.py:420-435), launched with no sync after the target (gpu_model_runner.py:4358-4375), so its k
    passes' ops and pieces hide under the step's kernels unless they outlast them. A separate draft model is where they
    do: Qwen3-0.6B (28 layers: 56 ops, 29 pieces and 56 TP collectives a pass) drafting for Qwen3-32B on 8 B200 at TP8,
    1 request. k = 5: host = 280 x 35 us + sqrt(280 x 280) x 2 us x 1.4236 + 145 x 5 us = 9.8 + 0.79722 + 0.725
    = 11.32222 ms over 3.93635 ms of target and 5.41315 ms of draft kernels (9.34950): +1.97271 ms a step. k = 3: 6.79333 ms
    of host under 7.14565 ms of kernels: hidden, 0. EAGLE-3 at 8B TP8 k = 3 (6 ops, 6 pieces, 6 collectives): 0.210 +
    0.01708 + 0.030 = 0.257 ms under 2.24 ms, as #pwgaps-piecewise-gaps argued."""
    five = _draft_model_stage(5.0)
    host5 = 280 * 35e-6 + np.sqrt(280 * 280) * 2e-6 * 1.4236 + 145 * 5e-6
    assert host5 == pytest.approx(11.32222e-3, rel=1e-6)
    assert float(five.draft_host) == pytest.approx(host5 - float(five.kernels + five.draft), rel=1e-4)
    assert float(five.draft_host) == pytest.approx(1.97271e-3, rel=1e-3) and float(five.eager) == 0.0
    assert float(five.stage) == pytest.approx(float(five.kernels + five.host_step + five.host_seq + five.draft) + 1.97271e-3, rel=1e-4)
    three = _draft_model_stage(3.0)
    host3 = 168 * 35e-6 + 168 * 2e-6 * 1.4236 + 87 * 5e-6
    assert host3 < float(three.kernels + three.draft) and float(three.draft_host) == 0.0
    assert float(_eagle_stage(False).draft_host) == 0.0  # EAGLE-3 at 8B TP8 k = 3 hides
    # not where the step already prices the drafter: PIECEWISE (its pieces in the step's launches, _piecewise_stage), an
    # engine whose drafter runs in the target's graph (SGLang), a batch the capture misses (every launch eager)
    assert float(_draft_model_stage(5.0, piecewise=True).draft_host) == 0.0
    assert float(_draft_model_stage(5.0, engine="sglang").draft_host) == 0.0
    missed = _draft_model_stage(5.0, b=4096.0)
    assert float(missed.draft_host) == 0.0 and float(missed.eager_n) > 0.0  # its launches, the drafter's too, counted eager


def test_estimate_shows_the_drafters_pieces_as_a_host_row():
    # the same deployment through estimate: the breakdown's host/draft_pieces row is the stage's 1.97271 ms, the step host-bound
    code, out, err = cli("estimate", "qwen3-32b", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--backend", "vllm", "--concurrency",
                         "1", "--spec", "draft", "--draft-model", "qwen3-0.6b", "--draft-len", "5", "--acceptance", "3", "--breakdown",
                         "--json")
    assert code == 0, err
    d = json.loads(out)
    row = next(o for o in d["breakdown"] if o["name"] == "host/draft_pieces")
    assert row["time_ms"] == pytest.approx(1.97271, rel=1e-3) and row["kind"] == "host"
    assert d["decode_bound"] == "host"
