"""SGLang's and vLLM's own default decode CUDA graphs (Engine.graphs_default, serve.aggregated.default_capture:
docs/modelling-notes.md#sgcap-default-caps). SGLang sets an unset cuda_graph_max_bs from the memory the device reports and
its tp_size (ServerArgs._handle_gpu_memory_settings, sglang/srt/server_args.py:936-998@0.5.9); vLLM an unset
max_cudagraph_capture_size to min(max_num_seqs x (1 + k) x 2, 1024 on compute capability 10.x else 512) tokens
(VllmConfig._set_cudagraph_sizes, vllm/config/vllm.py:2447-2470@0.33.0). Both pad a batch up to the next captured size and
run one above the largest without graphs, every kernel launched from the host (serve.aggregated._eager_decode)."""
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import llm_codesign as lc
from llm_codesign.serve.aggregated import default_capture, graph_misses
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.harness import SchedulerFlags
from llm_codesign.spec.plan import Plan

FITTED = Path(lc.__file__).parent / "data" / "calibration" / "fitted.toml"


def _cap(engine: str, gpu: str, **kw):
    k = kw.pop("k", 0.0)
    flags = SchedulerFlags(max_running_requests=kw.pop("max_running")) if "max_running" in kw else SchedulerFlags()
    top, padded = default_capture(get_engine(engine), get_gpu(gpu), Plan(**kw), k=k, flags=flags)
    return float(np.asarray(top).reshape(-1)[0]), padded


@pytest.mark.parametrize("gpu,plan,cap", [
    # H100 SXM reports 81,559 MiB: below 90 GiB, 256 at tp_size < 4, else 512
    ("h100", {"tp": 1}, 256.0), ("h100", {"tp": 2}, 256.0), ("h100", {"tp": 4}, 512.0), ("h100", {"tp": 8}, 512.0),
    # tp_size is every GPU of the stage: attention TP 2 x 2 attention-DP ranks = 4
    ("h100", {"tp": 2, "adp": 2}, 512.0),
    # H200, 143,771 MiB: below 160 GiB, the same steps; B200 (183,359 MiB) and MI355X: 512 at any TP
    ("h200", {"tp": 1}, 256.0), ("h200", {"tp": 8}, 512.0), ("b200", {"tp": 1}, 512.0), ("mi355x", {"tp": 1}, 512.0),
    # L40S, 46,068 MiB: below 60 GiB, 32 at tp_size < 4, else 160
    ("l40s", {"tp": 1}, 32.0), ("l40s", {"tp": 4}, 160.0),
])
def test_sglang_caps_its_graphs_by_gpu_memory_and_tp(gpu, plan, cap):
    assert _cap("sglang", gpu, **plan) == (cap, True)


@pytest.mark.parametrize("gpu,kw,cap", [
    # max_num_seqs 1024 on >= 70 GiB GPUs: min(1024 x 2, 512) tokens on Hopper, min(2048, 1024) on B200 (SM100)
    ("h100", {}, 512.0), ("b200", {}, 1024.0), ("gb200", {}, 1024.0),
    # RTX PRO 6000 is SM120, not the 10.x family: 512
    ("rtx-pro-6000", {}, 512.0),
    # the run's --max-num-seqs 100: 200 tokens; with a draft of 1 each request is 2 tokens: min(100 x 2 x 2, 512) / 2
    ("h100", {"max_running": 100.0}, 200.0), ("h100", {"max_running": 100.0, "k": 1.0}, 200.0),
    # a draft of 3 on B200: min(1024 x 4 x 2, 1024) / 4 = 256 requests
    ("b200", {"k": 3.0}, 256.0),
])
def test_vllm_caps_its_capture_in_tokens_from_max_num_seqs(gpu, kw, cap):
    assert _cap("vllm", gpu, tp=1, **kw) == (cap, True)


def test_trtllm_keeps_its_unpadded_128_and_sglang_misses_only_above_its_cap():
    assert _cap("trtllm", "h100", tp=8) == (128.0, False)
    b = np.array([1, 200, 255, 256, 257, 300, 512, 513])
    h100_tp1 = default_capture(get_engine("sglang"), get_gpu("h100"), Plan(tp=1))
    h100_tp8 = default_capture(get_engine("sglang"), get_gpu("h100"), Plan(tp=8))
    assert graph_misses(b, SchedulerFlags(), h100_tp1).tolist() == [False] * 4 + [True] * 4
    assert graph_misses(b, SchedulerFlags(), h100_tp8).tolist() == [False] * 7 + [True]
    # a run's own capture wins over the default, padded up to it
    assert not graph_misses(b, SchedulerFlags(cuda_graph_max_bs=1024.0), h100_tp1).any()


def _est(engine: str, conc: int, graphs: int | None = None, *, gpus: int = 1):
    m = lc.get_model("llama-3.1-8b")
    dep = replace(lc.deployment(m, gpu="h100", num_gpus=gpus, tp=gpus, engine=engine), cuda_graph_max_bs=graphs)
    return lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=conc), breakdown=True)


def test_sglang_prices_an_eager_decode_above_its_default_and_says_so():
    # llama-3.1-8b BF16 on one H100 at 300 requests runs 274 a step, above SGLang's 256 there, but the host's 290 launches
    # (32 layers x 9: two RMSNorms, QKV, RoPE, attention, O, gate-up, SiLU-and-mul, down; the LM head; the sampler) take
    # 290 x 35 us = 10.15 ms, under the step's ~29 ms of kernels: hidden, no eager cost and no note
    # (docs/modelling-notes.md#ppeager-eager; 3.861 ms before, SGLang's prefill-fitted rate)
    assert _est("sglang", 300).eager_decode is None
    # on 8 H100 (TP8) at 600, above SGLang's 512 there: 355 launches (32 layers x 11 with the two all-reduces, the LM
    # head, the sampler's gather and sample) at 35 us, the slowest of 8 ranks at 65 collectives (sqrt(355 x 65) x 2 us x
    # E[max of 8 normals] 1.42360) = 12.425 + 0.432 ms, less the step's 11.661 ms of kernels: +1.197 ms a step
    est = _est("sglang", 600, gpus=8)
    e = est.eager_decode
    kernels = sum(o.time_s for o in est.breakdown if o.phase == "decode" and o.kind not in ("host", "fitted") and not o.what)
    assert kernels == pytest.approx(11.6606e-3, abs=1e-7)
    assert e.batch_per_rank == 600 and e.extra_s == pytest.approx(355 * 35e-6 + math.sqrt(355 * 65) * 2e-6 * 1.4236003 - kernels, rel=1e-6)
    assert e.extra_s == pytest.approx(1.1969e-3, abs=1e-6) and est.decode_bound == "host"
    row = next(o for o in est.breakdown if o.name == "host/eager_launches")
    assert row.time_s == e.extra_s and e.share == row.tpot_s / est.tpot_s
    assert "SGLang's default: padded graphs up to 512 per rank" in e.note and "`--cuda-graph-max-bs-decode 600` (`--cuda-graph-max-bs 600` before 0.5.23)" in e.note
    assert any(w.kind == "eager" for w in est.intervals["tpot_ms"]["widened"])
    # the padded capture the note advises removes it, and with it the step's 1.197 ms
    fixed = _est("sglang", 600, graphs=600, gpus=8)
    assert fixed.eager_decode is None and fixed.tpot_s == pytest.approx(est.tpot_s - e.tpot_s, rel=1e-9)
    assert not any(o.name == "host/eager_launches" and o.time_s > 0 for o in fixed.breakdown)


def test_vllm_names_its_own_flag_and_captures_where_sglang_does_not():
    # vLLM's 512 on Hopper holds the same 274: no note
    assert _est("vllm", 300).eager_decode is None
    # a run's --max-num-seqs-sized capture below the batch: the note names vLLM's flag
    e = _est("vllm", 600, graphs=128, gpus=8).eager_decode
    assert e is not None and "`--max-cudagraph-capture-size " in e.note and math.isfinite(e.extra_s) and e.extra_s > 0


def test_the_workflows_sglang_and_vllm_runs_keep_their_own_capture_from_the_date_it_wrote_them():
    # aiconfigurator's generator writes --cuda-graph-bs 1..max_batch_size for SGLang from 2025-12-04 and
    # --cudagraph-capture-sizes for vLLM from 2026-01-30 (campaigns.toml): the row's batch per rank; runs measured earlier,
    # or with no date recorded (vLLM 0.17.0's 15), keep the engine's default (NaN, no setting)
    import csv
    from collections import Counter
    from importlib import resources

    from llm_codesign.measure import campaigns

    text = resources.files("llm_codesign").joinpath("data/measurements/serving_measured_blackwell_clean.csv").read_text()
    first = {"sglang": "2025-12-04", "vllm": "2026-01-30"}
    got = Counter()
    for r in csv.DictReader(text.splitlines()):
        if r["backend"] in first:
            date = campaigns._sample_builds().get(r["source"], ("", ""))[1]
            g = campaigns.campaign_of(r).get("cuda_graph_max_bs")
            own = g is not None and g == math.ceil(float(r["concurrency"]) / float(r["attention_dp"] or 1))
            got[(r["backend"], bool(date) and date >= first[r["backend"]], "own" if own else g)] += 1
    assert got == {("sglang", True, "own"): 298, ("sglang", False, None): 71, ("vllm", True, "own"): 443,
                   ("vllm", False, None): 145}
    # the counts from the two data files alone, by a plain date filter: the clean sample's SGLang rows measured on or after
    # 2025-12-04 (serving_measured_blackwell.builds.csv's `measured`) 298, before 71; vLLM's on or after 2026-01-30 443,
    # before 130 and undated 15 (145): every late row takes its own capture, every early or undated one none
    builds = resources.files("llm_codesign").joinpath("data/measurements/serving_measured_blackwell.builds.csv").read_text()
    when = {b["source"]: b["measured"] for b in csv.DictReader(builds.splitlines())}
    by_date = Counter((r["backend"], when.get(r["source"], "") >= first[r["backend"]], bool(when.get(r["source"])))
                      for r in csv.DictReader(text.splitlines()) if r["backend"] in first)
    assert by_date == {("sglang", True, True): 298, ("sglang", False, True): 71, ("vllm", True, True): 443,
                       ("vllm", False, True): 130, ("vllm", False, False): 15}


@pytest.mark.parametrize("engine, conc, graphs, line", [
    # a search's point states its grid's largest batch (explore.search.point_graphs); its export writes it only up to the
    # rank's batch and only where the engine's own default would miss it: SGLang on one H100 captures up to 256
    ("sglang", 78, 16384, None), ("sglang", 300, 16384, "--cuda-graph-max-bs-decode 300"),
    # vLLM's default with --max-num-seqs 300 is min(600, 512) tokens: it holds 300, not 600
    ("vllm", 300, 16384, None), ("vllm", 600, 16384, "max-cudagraph-capture-size: 600"),
    # a capture below the batch is the user's and is written as given
    ("sglang", 78, 48, "--cuda-graph-max-bs-decode 48"),
])
def test_an_export_writes_the_capture_only_where_the_engines_default_misses_the_batch(engine, conc, graphs, line):
    from llm_codesign.explore.export import export_config, read_export
    from llm_codesign.spec.plan import Deployment

    dep = Deployment(gpu=get_gpu("h100"), num_gpus=1, backend=engine, max_num_tokens=8192, cuda_graph_max_bs=graphs)
    text = export_config(lc.get_model("llama-3.1-8b"), dep, engine=engine, concurrency=conc)
    key = "cuda-graph-max-bs-decode" if engine == "sglang" else "max-cudagraph-capture-size"
    if line is None:
        assert key not in text and read_export(text).deployment.cuda_graph_max_bs is None
    else:
        assert line in text and read_export(text).deployment.cuda_graph_max_bs == int(line.split()[-1])


def test_point_graphs_returns_the_points_own_batch_or_none():
    """frev9 #6: point_graphs returned the grid's largest batch, which both searches used only as a flag for the point's
    own. SGLang on one H100 captures up to 256 padded (the test above): a grid up to 300 misses 257-300, so a point at 78
    states graphs padded to its own 78; a grid up to 200 misses none (None, the default); alone, the batch itself decides."""
    from llm_codesign.explore.search import point_graphs

    sg, h100, one = get_engine("sglang"), get_gpu("h100"), Plan(tp=1)
    assert point_graphs(sg, 78, gpu=h100, plan=one, largest=300) == 78
    assert point_graphs(sg, 78, gpu=h100, plan=one, largest=200) is None
    assert (point_graphs(sg, 300, gpu=h100, plan=one), point_graphs(sg, 256, gpu=h100, plan=one)) == (300, None)
