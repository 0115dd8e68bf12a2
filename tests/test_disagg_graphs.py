"""The disaggregated decode pool's CUDA graphs (docs/modelling-notes.md#dagcap-decode-graphs): its step is the aggregated
decode's (serve.aggregated._decode_stage), so a batch per rank above the decode workers' capture pays every kernel's eager
launch; `disagg` says so as `estimate` does (serve.estimate.eager_note); the campaigns' recipes state their captures."""
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.measure import campaigns
from llm_codesign.measure.validate import _decode_graphs

FITTED = Path(lc.__file__).parent / "data" / "calibration" / "fitted.toml"


def _pools(graphs=None):
    m = lc.get_model("llama-3.1-70b")
    pre = lc.deployment(m, gpu="h100", num_gpus=8, tp=8, engine="trtllm")
    return m, pre, replace(pre, cuda_graph_max_bs=graphs)


def _tpot(graphs=None, conc=100):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.disagg import evaluate_disagg

    m, pre, dec = _pools(graphs)
    r = evaluate_disagg(m, pre, dec, calibration=calibration_for(pre.gpu), prefill_instances=1, decode_instances=1, concurrency=conc,
                        isl=1024, osl=1024)
    return {k: float(np.ravel(r[k])[0]) for k in ("tpot_s", "decode_eager_s", "decode_batch")}


def test_one_eager_decode_pool_step_hand_derived():
    # TensorRT-LLM's default capture (1-32, 64, 128 unpadded) misses a decode batch of 100 on TP8: each step launches its
    # 723 kernels (80 layers x 9 + LM head + the sampler's 2, as test_estimate_eager's aggregated step) from each rank's
    # host at 35 us, the slowest of 8 ranks at each of 161 collectives (sqrt(723 x 161) x 2 us x 1.42360), 26.276 ms, under
    # which the step's 15.391 ms of kernels run: +10.886 ms (docs/modelling-notes.md#ppeager-eager; 32.63 ms before)
    host = 723 * 35e-6 + math.sqrt(723 * 161) * 2e-6 * 1.4236003
    eager, padded = _tpot(), _tpot(graphs=100)
    assert eager["decode_batch"] == 100 and eager["decode_eager_s"] == pytest.approx(host - 15.3908e-3, abs=1e-7)
    assert eager["decode_eager_s"] == pytest.approx(10.886e-3, abs=5e-6) and padded["decode_eager_s"] == 0.0
    # one token a step, one stage: TPOT is the step, so the eager part is the whole difference
    assert eager["tpot_s"] - padded["tpot_s"] == pytest.approx(eager["decode_eager_s"], rel=1e-9)
    # 128 is a captured size; 129 is above it
    assert _tpot(conc=128)["decode_eager_s"] == 0.0 and _tpot(conc=129)["decode_eager_s"] > 0.0


def test_disagg_says_the_eager_step_as_estimate_does():
    m, pre, _ = _pools()
    r = lc.disagg(m, gpu="h100", prefill="tp=8", decode="tp=8", engine="trtllm", concurrency=[64, 100, 128])
    rows = {row["concurrency"]: row for row in r.to_dict()["rows"]}
    assert "eager_decode" not in rows[64] and "eager_decode" not in rows[128]
    e = rows[100]["eager_decode"]
    assert e["batch_per_rank"] == 100 and e["cuda_graph_max_bs"] == 100 and e["extra_ms_per_step"] == pytest.approx(10.886, abs=0.005)
    assert e["share_of_tpot"] == pytest.approx(e["tpot_ms"] / rows[100]["tpot_ms"], rel=1e-12)
    assert "batches 1-32, 64, 128 per rank, unpadded" in e["note"]
    assert "`cuda_graph_config: {enable_padding: true, max_batch_size: 100}`" in e["note"] and "--decode-cuda-graph-max-bs 100" in e["note"]
    # the unmeasured part widens the band, as estimate's
    assert any(w.kind == "eager" for w in rows[100]["intervals"]["tpot_ms"]["widened"])
    # the capture given: no note, and the step as the padded one's
    r2 = lc.disagg(m, gpu="h100", prefill="tp=8", decode="tp=8", engine="trtllm", concurrency=[100], decode_cuda_graph_max_bs=100)
    assert "eager_decode" not in r2.to_dict()["rows"][0]
    assert r2.to_dict()["rows"][0]["tpot_ms"] == pytest.approx(rows[100]["tpot_ms"] - e["extra_ms_per_step"], rel=1e-9)


def test_disagg_says_its_eager_loads_in_one_note(tmp_path):
    # one line in `notes` (the CLI's and the page's) for every eager load, not the paragraph per row ("CUDA graphs at 1
    # requests", review 2026-12-06 item 8); the capture it advises covers the largest batch
    from conftest import cli

    r = lc.disagg("llama-3.1-70b", gpu="h100", prefill="tp=8", decode="tp=8", engine="trtllm", concurrency=[64, 100, 120])
    eager = [n for n in r.notes if n.startswith("CUDA graphs: ")]
    assert len(eager) == 1 and sum("eager_decode" in row for row in r.to_dict()["rows"]) == 2
    assert eager[0].startswith("CUDA graphs: decode runs without them at 100, 120 requests (captured: TensorRT-LLM's default where "
                               "the launch sets none: batches 1-32, 64, 128 per rank, unpadded), so each step launches every kernel "
                               "from the host (host/eager_launches): 100 per rank at 100: +10.9 ms a step, 41% of TPOT; ")
    assert "; 120 per rank at 120: +10.1 ms a step, 38% of TPOT. " in eager[0]
    assert ("Avoid it with `cuda_graph_config: {enable_padding: true, max_batch_size: 120}` in the extra LLM API options (here: "
            "--decode-cuda-graph-max-bs 120,") in eager[0] and eager[0].endswith(
        "The launches are priced at 35 us a launch (documented, range 8-40 us) per fused operator (standing for the unfused "
        "kernels an eager forward runs beside it), and each collective waits for the slowest of "
        "the 8 ranks' launches (jitter 2 us a launch, range 0-5 us), not fitted; no measured run decodes without CUDA graphs, "
        "so this part is unmeasured for decode (each side of the intervals widens by its own end's move)")
    code, out, err = cli("disagg", "llama-3.1-70b", "--gpu", "h100", "--prefill", "tp=8", "--decode", "tp=8", "--engine", "trtllm",
                         "--concurrency", "1,100,120")
    assert code == 0, err
    assert "CUDA graphs at" not in out and out.count("CUDA graphs: decode runs without them at 100, 120 requests") == 1


def test_the_campaigns_decode_captures():
    src = "inferencex https://github.com/SemiAnalysisAI/InferenceX/actions/runs/23438524239/attempts/5"
    trt = {"source": src, "backend": "trtllm", "gpu": "gb200", "decode_attention_dp": "8"}
    # TensorRT-LLM's recipes capture up to the decode workers' max_batch_size (the row's decode_max_batch; blank: every batch)
    assert campaigns.settings(trt)["decode_graphs_to_max_batch"] is True
    assert _decode_graphs(campaigns.settings(trt), 256.0) == 256.0 and _decode_graphs(campaigns.settings(trt), np.inf) == np.inf
    # SGLang's GB300 FP8 max-throughput recipe on 8 DP ranks captures up to 1,024 (960 a rank at 7,680 requests)
    sgl = {"source": src, "backend": "sglang", "gpu": "gb300", "weight_dtype": "fp8_block", "decode_attention_dp": "8"}
    assert _decode_graphs(campaigns.settings(sgl), np.inf) == 1024.0
    # an SGLang pool the campaign names none for: the engine's default (NaN)
    assert np.isnan(_decode_graphs(campaigns.settings(sgl | {"gpu": "b200"}), np.inf))


def test_the_search_prices_and_states_the_capture_its_export_writes(h200, llama70b):
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.disagg_search import search_disagg
    from llm_codesign.explore.search import SearchSpace
    from llm_codesign.serve.disagg import evaluate_disagg
    from llm_codesign.spec.precision import Precision

    cal = calibration_for(h200)
    r = search_disagg(llama70b, h200, cal, SearchSpace(8, precisions=(Precision.of("fp8", kv="fp8"),)), isl=1024, osl=256)
    assert r.points
    for p in r.points:
        # TensorRT-LLM's default is unpadded: every point states a capture padded up to its own batch per rank (crev9 #1; the
        # grid's largest, 16384, before), which misses no step, as the search priced them
        assert p.decode.cuda_graph_max_bs == p.concurrency // p.decode_instances // int(p.decode.plan.adp)
        one = evaluate_disagg(llama70b, p.prefill, p.decode, calibration=cal, prefill_instances=p.prefill_instances,
                              decode_instances=p.decode_instances, concurrency=p.concurrency, isl=1024, osl=256)
        assert float(np.ravel(one["decode_eager_s"])[0]) == 0.0 and float(np.ravel(one["tpot_s"])[0]) == pytest.approx(p.tpot_s)


def test_a_dynamo_export_writes_the_decode_capture_the_default_misses(tmp_path):
    from conftest import run

    # SGLang on H100 at TP 2 captures up to 256 a rank by default (spec/engines/sglang.py graph_max_bs): 300 a rank is above it
    # (written, priced captured) and 200 is not (left at the default)
    for conc, written in ((300, True), (200, False)):
        out = tmp_path / f"d{conc}.yaml"
        run("export", "llama-3.1-8b", "--gpu", "h100", "--backend", "sglang", "--prefill", "tp=2", "--decode", "tp=2",
            "--concurrency", str(conc), "-o", str(out))
        text = out.read_text()
        assert ("--cuda-graph-max-bs-decode" in text) == written
        if written:
            args = text.split("--cuda-graph-max-bs-decode", 1)[1].split()
            assert args[1].strip("'") == "300"
