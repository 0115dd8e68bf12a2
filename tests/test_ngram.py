"""--spec ngram (prompt lookup): SGLang's and TensorRT-LLM's host proposers' cost beside the target's verify step, vLLM's
default runner's none (it matches on the GPU), no draft pass, the overlap loop kept (dropped by TensorRT-LLM), the acceptance
required, the engines that run it, and the export's flags read back."""
import re

import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.memory import fit
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import decode_step, draft_model, ngram_propose_time, ngram_scan_time
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.plan import Plan, SpecDecoding, deployment
from llm_codesign.spec.registry import get_model


def test_the_proposers_cost_is_each_engines_read_cost(h100):
    # vLLM 0.33's default runner (Model Runner V2) matches on the GPU (NgramGPUSpeculator): no host time at any batch or
    # context. SGLang: 5 us a request, whatever the context: 80 us at 16 requests
    assert ngram_propose_time(get_engine("vllm"), np.array([16.0, 256.0]), np.array([2048.0, 8704.0]), 3).tolist() == [0.0, 0.0]
    assert ngram_propose_time(get_engine("sglang"), 16.0, 2048.0, 3) == pytest.approx(80e-6, rel=1e-12)
    assert ngram_propose_time(get_engine("sglang"), 16.0, 32768.0, 3) == pytest.approx(80e-6, rel=1e-12)
    # TensorRT-LLM: 20 us a request + 25 ns a context token (each request's token copy and its pool's match sets):
    # 16 x (20 + 0.025 x 2,048) = 1,139.2 us; at 8,192 + 1,024 / 2 = 8,704 tokens 16 x 237.6 = 3,801.6 us
    assert ngram_propose_time(get_engine("trtllm"), 16.0, np.array([2048.0, 8704.0]), 3) == pytest.approx([1139.2e-6, 3801.6e-6], rel=1e-12)
    # nothing to propose: no decoding request, or k = 0 (a sweep's point without speculation)
    assert ngram_propose_time(get_engine("sglang"), np.array([0.0, 16.0]), 2048.0, np.array([3, 0])).tolist() == [0.0, 0.0]
    cal = calibration_for(h100)
    scan = ngram_scan_time(get_engine("vllm"), h100, cal, b=np.array([0.0, 16.0, 16.0]), ctx=2048.0, k=np.array([3, 0, 3]))
    assert scan.tolist()[:2] == [0.0, 0.0] and scan[2] > 0
    assert ngram_scan_time(get_engine("sglang"), h100, cal, b=16.0, ctx=2048.0, k=3) == 0.0  # its match is the host's


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_step_is_the_verify_step_plus_the_proposer(h100, engine):
    # k = 3: the target verifies 1 + 3 tokens a sequence, as for every method (the same operators: spec None at k = 3
    # prices exactly that step), and SGLang's host matcher's time adds to it, vLLM's GPU scan (2 launches of the H100's
    # 3 us kernel overhead + 16 x 2,048 x 4 bytes of token ids at its HBM bandwidth x bw_eff); no draft pass runs
    m = get_model("llama-3.1-8b")
    sh, costs = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))).broadcast(), get_engine(engine).costs(calibration_for(h100))
    spec = SpecDecoding("ngram", 3, mean_accepted=2.0)
    b = np.array([16.0])
    verify, _, _ = decode_step(m, h100, m.default_precision, sh, costs=costs, b=b, ctx=2048.0, k=3.0, spec=None)
    step, t_draft, _ = decode_step(m, h100, m.default_precision, sh, costs=costs, b=b, ctx=2048.0, k=3.0, spec=spec)
    cal = calibration_for(h100)
    scan = 2 * cal.kernel_overhead_s + 16 * 2048 * 4 / (h100.hbm_bandwidth_bytes_per_s * cal.bw_eff)
    assert 6e-6 < scan < 6.5e-6  # ~0.2 us of reading at 3.35 TB/s beside the two launches
    host = {"vllm": scan, "sglang": 80e-6, "trtllm": 1139.2e-6}[engine]
    assert t_draft.item() == pytest.approx(host, rel=1e-12)
    assert step.item() == pytest.approx(verify.item() + host, rel=1e-12)
    # at a mean 2.0 tokens a step, each token costs half the step: (verify + host) / 2.0
    assert step.item() / spec.accepted(3) == pytest.approx((verify.item() + host) / 2.0, rel=1e-12)


def test_no_draft_weights_or_cache_are_held(h100):
    m = get_model("llama-3.1-8b")
    spec = SpecDecoding("ngram", 3, mean_accepted=2.0)
    assert draft_model(m, spec) is None
    sh = Plan().broadcast()
    plain = fit(m, h100, m.default_precision, sh, 2048.0, osl=256.0)
    ngram = fit(m, h100, m.default_precision, sh, 2048.0, osl=256.0, spec=spec, draft=None)
    assert float(ngram["draft_weights"]) == 0.0
    assert float(ngram["kv_per_token"]) == float(plain["kv_per_token"])
    assert float(ngram["weights"]) == float(plain["weights"])


def test_the_acceptance_is_required_and_no_draft_model_is_taken():
    with pytest.raises(InputError, match=r"^acceptance: not given; prompt lookup's hit rate is the workload's own"):
        deployment("llama-3.1-8b", gpu="h100", engine="vllm", spec="ngram", draft_len=3)
    with pytest.raises(InputError, match=r"^draft_model: 'llama-3.2-1b' is not valid; left out with --spec ngram"):
        deployment("llama-3.1-8b", gpu="h100", engine="vllm", spec="ngram", draft_len=3, acceptance=2.0, draft_model="llama-3.2-1b")
    with pytest.raises(InputError, match=r"^acceptance: 4.5 is not valid; a mean accepted length between 1 and k\+1 = 4"):
        deployment("llama-3.1-8b", gpu="h100", engine="vllm", spec="ngram", draft_len=3, acceptance=4.5)


def test_an_engine_that_prices_no_prompt_lookup_is_refused_naming_those_that_do():
    with pytest.raises(InputError, match=r"^spec: 'ngram' is not valid; mtp, eagle3 or draft on ATOM \(no prompt-lookup proposer is read "
                                         r"for it\); prompt lookup is priced on trtllm, vllm, sglang \(--engine\)$"):
        deployment("llama-3.1-8b", gpu="mi355x", engine="atom", spec="ngram", draft_len=3, acceptance=2.0)


@pytest.mark.parametrize("engine, flags", [
    ("vllm", {"speculative-config": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 5, "prompt_lookup_min": 5}}),
    # a chain: the last token and 3 drafts verified, breadth 1 (SGLang's default 10 drafts a tree); no EAGLE steps or topk
    ("sglang", {"speculative-algorithm": "NGRAM", "speculative-ngram-max-bfs-breadth": "1", "speculative-num-draft-tokens": "4"}),
    # NGramDecodingConfig: its default n-gram size stated, the private pool the estimate prices
    ("trtllm", {"speculative_config": {"decoding_type": "NGram", "max_draft_len": 3, "max_matching_ngram_size": 2, "is_public_pool": False}}),
])
def test_the_export_writes_the_engines_flags_and_import_repeats_its_prediction(tmp_path, engine, flags):
    import json

    import yaml
    from conftest import cli_ok
    from test_export import parsed

    import llm_codesign as lc

    p = tmp_path / f"{engine}.out"
    cli_ok("export", "llama-3.1-8b", "--gpu", "h100", "--engine", engine, "--isl", 2048, "--osl", 256, "--concurrency", 16,
           "--spec", "ngram", "--draft-len", 3, "--acceptance", 2.0, "-o", p)
    text = p.read_text()
    o = yaml.safe_load(text) if engine in ("vllm", "trtllm") else parsed("sglang", text)
    assert {k: o[k] for k in flags} == flags
    assert not {"speculative-num-steps", "speculative-eagle-topk", "speculative-draft-model-path"} & set(o)
    r = lc.import_config(p)
    head = json.loads(next(x for x in text.splitlines() if x.startswith("# llm-codesign export: "))[len("# llm-codesign export: "):])
    assert (r.deployment.spec.method, r.deployment.spec.k, r.deployment.spec.mean_accepted) == ("ngram", 3, 2.0)
    assert r.to_dict()["tpot_ms"] == pytest.approx(head["predicted"]["tpot_ms"], rel=1e-9)
    assert r.to_dict()["ttft_ms"] == pytest.approx(head["predicted"]["ttft_ms"], rel=1e-9)


@pytest.mark.parametrize("line, field, valid", [
    # SGLang's NGRAM at its default breadth drafts a tree of 12, which is not priced
    ("--speculative-algorithm NGRAM", "speculative-ngram-max-bfs-breadth", "1 with --speculative-algorithm NGRAM (a chain"),
    ("--speculative-algorithm NGRAM --speculative-ngram-max-bfs-breadth 1 --speculative-num-draft-tokens 1",
     "speculative-num-draft-tokens", "2 to 17 with NGRAM"),
])
def test_an_sglang_ngram_launch_it_cannot_price_is_refused_naming_the_flag(line, field, valid):
    import llm_codesign as lc

    cmd = f"python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 1 {line}"
    with pytest.raises(InputError, match=rf"^{field}: .* is not valid; {re.escape(valid)}"):
        lc.import_config(cmd, gpu="h100", acceptance=2.0)


def test_an_sglang_ngram_chain_reads_its_draft_length():
    from llm_codesign.explore.export_engines.sglang import ngram_draft_len

    assert ngram_draft_len({"speculative-ngram-max-bfs-breadth": "1", "speculative-num-draft-tokens": "6"}) == 5
    assert ngram_draft_len({"speculative-ngram-max-bfs-breadth": 1}) == 11  # SGLang's 12 where unset


def test_the_api_prices_and_refuses_prompt_lookup_as_the_cli():
    pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient
    from test_app import _cli_json

    from llm_codesign.web.app import create_app

    client = TestClient(create_app())
    body = {"model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1, "engine": "vllm", "concurrency": 8, "spec": "ngram", "draft_len": 3,
            "acceptance": 2.0}
    r = client.post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    got.pop("point_breakdown"), got.pop("export")
    assert got == _cli_json("estimate", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--engine", "vllm", "--concurrency", "8",
                            "--spec", "ngram", "--draft-len", "3", "--acceptance", "2.0")
    assert got["spec"]["method"] == "ngram" and got["accepted_per_step"] == pytest.approx(2.0)
    r = client.post("/api/estimate", json={k: v for k, v in body.items() if k != "acceptance"})
    assert r.status_code == 422 and r.json()["field"] == "acceptance"
    r = client.post("/api/estimate", json={**body, "engine": "atom", "gpu": "mi355x"})
    assert r.status_code == 422 and r.json()["field"] == "spec" and "prompt lookup is priced on trtllm, vllm, sglang" in r.json()["error"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("graphs", [0.0, float("nan")])
def test_the_proposer_neither_launches_nor_hides_launches(h100, graphs, engine):
    # an eager step (no graphs): the same launches as the verify step alone, the same kernels to hide them under (SGLang's
    # matcher's host seconds hide none); captured under vLLM's default FULL_AND_PIECEWISE: no drafter pieces to replay
    from llm_codesign.serve.aggregated import _decode_stage
    from llm_codesign.spec.harness import SchedulerFlags

    m = get_model("llama-3.1-8b")
    sh, costs = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))).broadcast(), get_engine(engine).costs(calibration_for(h100))
    kw = dict(costs=costs, b=np.array([16.0]), ctx=2048.0, k=3.0, flags=SchedulerFlags(cuda_graph_max_bs=graphs))
    verify, _, _ = _decode_stage(m, h100, m.default_precision, sh, spec=None, **kw)
    ngram, t_draft, _ = _decode_stage(m, h100, m.default_precision, sh, spec=SpecDecoding("ngram", 3, mean_accepted=2.0), **kw)
    assert np.array_equal(ngram.eager, verify.eager) and np.array_equal(ngram.eager_n, verify.eager_n)
    assert np.all(np.asarray(ngram.draft_host) == 0.0)
    host = ngram_propose_time(costs.engine, 16.0, 2048.0, 3) + ngram_scan_time(costs.engine, h100, costs.cal, b=16.0, ctx=2048.0, k=3)
    assert host == pytest.approx({"vllm": 6.2e-6, "sglang": 80e-6, "trtllm": 1139.2e-6}[engine], rel=0.05)
    assert ngram.stage.item() == pytest.approx(verify.stage.item() + host, rel=1e-12)
    assert (verify.eager.item() > 0) == (graphs == 0.0)


def test_the_breakdown_names_the_host_match_not_draft_passes():
    from conftest import cli_ok

    out = " ".join(cli_ok("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "sglang", "--concurrency", 16, "--spec", "ngram",
                          "--draft-len", 3, "--acceptance", 2.0, "--breakdown").split())
    assert "spec/draft_passes: the host's prompt-lookup match (the GPU idle" in out and "draft passes proposing" not in out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_prompt_lookup_keeps_the_overlap_loop(h100, engine):
    # neither engine's loop turns synchronous under prompt lookup at the releases read (vLLM 0.33's V2 runner keeps async
    # scheduling; SGLang 0.5.23 keeps its overlap loop on CUDA): a new request waits the steps queued ahead as without it
    # (2 decode iterations in a closed loop: the running one's rest and the one queued), and the breakdown says the
    # overlap scheduler hides the rest of the host's work; vLLM's shows no draft row, SGLang's its host match
    from conftest import cli_ok

    from llm_codesign.serve.aggregated import Serving, evaluate

    m, cal, eng = get_model("llama-3.1-8b"), calibration_for(h100), get_engine(engine)
    for spec in (None, SpecDecoding("ngram", 3, mean_accepted=2.0)):
        at = Serving(gpu=h100, prec=m.default_precision, plan=Plan(), engine=eng, spec=spec)
        tp = evaluate(m, at, cal=cal, concurrency=16, isl=2048, osl=256, with_ops=True, arrival="closed_loop")["time_parts"]
        assert np.asarray(tp["wait"]).item() == pytest.approx(2.0 * np.asarray(tp["iteration"]).item(), rel=1e-12)
    out = " ".join(cli_ok("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", engine, "--concurrency", 16, "--spec", "ngram",
                          "--draft-len", 3, "--acceptance", 2.0, "--breakdown").split())
    assert "the engine's overlap scheduler runs the rest of its host work under the step before" in out
    match = {"vllm": "spec/draft_passes: the GPU's prompt-lookup scan", "sglang": "spec/draft_passes: the host's prompt-lookup match"}
    assert match[engine] in out


def test_tensorrt_llm_drops_its_overlap_scheduler_under_prompt_lookup(h100):
    # NGRAM is not among SpeculativeDecodingMode.support_overlap_scheduler's modes, so create_py_executor turns the overlap
    # scheduler off: no step queued ahead of a new request. A closed loop's request waits the running step's rest alone,
    # 1 decode iteration, against 2 (the running one's rest and the one queued) without speculation; the run's own
    # queued_steps, where stated, is kept
    from conftest import cli_ok

    from llm_codesign.serve.aggregated import Serving, evaluate
    from llm_codesign.spec.harness import SchedulerFlags

    m, cal, eng = get_model("llama-3.1-8b"), calibration_for(h100), get_engine("trtllm")
    for spec, flags, waits in ((None, None, 2.0), (SpecDecoding("ngram", 3, mean_accepted=2.0), None, 1.0),
                               (SpecDecoding("ngram", 3, mean_accepted=2.0), SchedulerFlags(queued_steps=1.0), 2.0)):
        at = Serving(gpu=h100, prec=m.default_precision, plan=Plan(), engine=eng, spec=spec)
        tp = evaluate(m, at, cal=cal, concurrency=16, isl=2048, osl=256, with_ops=True, arrival="closed_loop", flags=flags)["time_parts"]
        assert np.asarray(tp["wait"]).item() == pytest.approx(waits * np.asarray(tp["iteration"]).item(), rel=1e-12)
    # a sweep's k = 0 rows launch without speculation and keep the overlap loop's 2 iterations, its k = 3 rows 1
    at = Serving(gpu=h100, prec=m.default_precision, plan=Plan(), engine=eng, spec=SpecDecoding("ngram", 3, mean_accepted=2.0),
                 spec_k=np.array([0.0, 3.0]))
    tp = evaluate(m, at, cal=cal, concurrency=16, isl=2048, osl=256, with_ops=True, arrival="closed_loop")["time_parts"]
    np.testing.assert_allclose(tp["wait"], np.array([2.0, 1.0]) * tp["iteration"], rtol=1e-12)
    out = " ".join(cli_ok("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "trtllm", "--concurrency", 16, "--spec", "ngram",
                          "--draft-len", 3, "--acceptance", 2.0, "--breakdown").split())
    assert "the build's loop is synchronous (no step queued ahead): its host work runs in series" in out
    assert "spec/draft_passes: the host's prompt-lookup match" in out


def test_tensorrt_llms_prompt_lookup_tpot_beside_the_other_engines():
    # Llama-3.1-8B on an H100, 8,192 / 1,024 at 16 requests, k = 3 at 2.0 tokens a step: TensorRT-LLM's TPOT 16.06 ms
    # without speculation, 11.61 with prompt lookup (its matcher 3.8 ms of each step: 16 x (20 us + 25 ns x 8,704));
    # vLLM's 9.83 and SGLang's 8.71, whose matchers cost 6.2 us (the GPU's scan) and 80 us
    from test_app import _cli_json

    def tpot(engine, *spec):
        return _cli_json("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", engine, "--isl", "8192", "--osl", "1024",
                         "--concurrency", "16", *spec)["tpot_ms"]

    ngram = ("--spec", "ngram", "--draft-len", "3", "--acceptance", "2.0")
    assert tpot("trtllm") == pytest.approx(16.06, abs=0.005)
    assert tpot("trtllm", *ngram) == pytest.approx(11.61, abs=0.005)
    assert (tpot("vllm", *ngram), tpot("sglang", *ngram)) == pytest.approx((9.83, 8.71), abs=0.005)


def test_a_tensorrt_llm_public_pool_is_priced_as_the_private_one_and_said(tmp_path):
    # a real configuration (no export header) with TensorRT-LLM's default public pool: the same figures, the option listed
    # as not priced (its match sets grow with every request served)
    import llm_codesign as lc

    cfg = ("tensor_parallel_size: 1\nmax_batch_size: 16\nspeculative_config:\n  decoding_type: NGram\n  max_draft_len: 3\n"
           "  max_matching_ngram_size: 2\n")
    p = tmp_path / "extra.yaml"
    got = {}
    for pool in ("  is_public_pool: false\n", ""):
        p.write_text(cfg + pool)
        r = lc.import_config(p, gpu="h100", model="llama-3.1-8b", acceptance=2.0, isl=2048, osl=256, concurrency=16)
        got[bool(pool)] = (r.to_dict()["tpot_ms"], r.ignored)
    assert got[True][0] == got[False][0] and got[True][1] == ()
    assert got[False][1] == ("speculative_config.is_public_pool (the public pool, never pruned: its host time grows with every request "
                             "served; priced as the private pool)",)


def test_a_tensorrt_llm_prompt_lookup_searchs_points_are_their_own_estimates():
    # a search under --spec ngram prices k = 0 (no speculation) beside k = 2: each point's TTFT is its deployment's own
    # estimate, the no-speculation rows at the overlap loop's wait, not the synchronous loop's (frev13)
    import llm_codesign as lc

    w = lc.Workload(isl=1024, osl=256, arrival="waves")
    pts = lc.pareto("llama-3.1-8b", "h100", num_gpus=1, engine="trtllm", weight_dtype="bf16", workload=w, spec="ngram",
                    acceptance=1.8, draft_len=2).points
    seen = set()
    for p in pts:
        dep = p.deployment
        e = lc.estimate("llama-3.1-8b", dep, lc.Workload(isl=1024, osl=256, concurrency=int(p.concurrency), arrival="waves"))
        assert float(e.ttft_s) == pytest.approx(p.ttft_s, rel=1e-9)
        seen.add(dep.draft_len)
    assert seen == {0, 2}
