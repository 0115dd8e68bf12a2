"""serve/estimate.py: one deployment's report — its figures are the metrics', its refusals one line."""
from dataclasses import replace

import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.serve.estimate import estimate
from llm_codesign.serve.metrics import evaluate
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan, Workload, deployment
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_report_units_are_the_metrics_in_ms_and_gb():
    m = get_model("qwen3-32b")
    dep = deployment(m, gpu="b200", tp=2)
    w = Workload(isl=4096, osl=512, concurrency=32)
    cal = calibration_for(dep.gpu)
    r, e = estimate(m, dep, w, calibration=cal), evaluate(m, dep, w, calibration=cal)
    assert r.ttft_s == pytest.approx(e.ttft_s.item(), rel=1e-12) and r.tpot_s == pytest.approx(e.tpot_s.item(), rel=1e-12)
    assert r.memory.weights == pytest.approx(e.weights_bytes.item(), rel=1e-12)
    d = r.to_dict()  # what --json prints: ms and GB
    assert (d["ttft_ms"], d["tpot_ms"], d["memory"]["weights_gb"]) == (r.ttft_s * 1e3, r.tpot_s * 1e3, r.memory.weights / 1e9)
    assert r.mode == "concurrency" and r.fits


def test_speculation_break_even_is_reported():
    m = get_model("llama-3.1-70b")
    dep = deployment(m, gpu="b200", tp=8, spec="eagle3", acceptance_rates="0.8,0.6,0.5")
    r = estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=1), calibration=calibration_for(dep.gpu))
    s = r.spec
    # memory-bound at one request: verifying 4 tokens costs about one step, so ~2.2 accepted tokens pay
    assert r.accepted_per_step == pytest.approx(1 + 0.8 + 0.8 * 0.6 + 0.8 * 0.6 * 0.5)
    assert s.speedup_at_1 > 1.4 and s.draft_len == 3


def test_a_plan_that_does_not_divide_is_refused():
    m = get_model("llama-3.1-70b")
    with pytest.raises(InputError, match="heads must be divisible by tp"):
        estimate(m, deployment(m, gpu="b200", tp=3), Workload(), calibration=calibration_for(deployment(m, gpu="b200").gpu))


def test_a_format_the_gpu_cannot_run_says_how_it_runs():
    m = get_model("llama-3.1-70b")
    # vLLM runs NVFP4 weight-only on Hopper (Marlin); TensorRT-LLM has no such kernel (tests/test_engine_runs.py)
    dep = deployment(m, gpu="h100", tp=8, weight_dtype="nvfp4", engine="vllm")
    r = estimate(m, dep, Workload(concurrency=8), calibration=calibration_for(dep.gpu))
    assert len(r.precision_notes) == 1 and "W4A16" in r.precision_notes[0]
    ok = deployment(m, gpu="b200", tp=8, weight_dtype="nvfp4")
    assert estimate(m, ok, Workload(concurrency=8), calibration=calibration_for(ok.gpu)).precision_notes == ()


def test_estimate_offline_and_errors():
    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    dep = Deployment(gpu=g, num_gpus=8, plan=Plan(tp=8), precision=Precision.of("fp8", kv="fp8"))
    r = estimate(m, dep, Workload(isl=1024, osl=1024), calibration=calibration_for(g))
    assert r.mode == "offline-max-throughput" and r.concurrency <= r.max_batch
    r1 = estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=1), calibration=calibration_for(g))
    assert r1.tok_s_per_user > r.tok_s_per_user and r1.output_tok_s_per_gpu < r.output_tok_s_per_gpu
    assert r1.tok_s_per_user == pytest.approx(1 / r1.tpot_s)
    big = Deployment(gpu=get_gpu("h100"), num_gpus=1, plan=Plan(tp=1))
    with pytest.raises(InputError, match="needs .* GiB per GPU"):
        estimate(m, big, Workload(isl=1024, osl=1024), calibration=calibration_for(g))
    with pytest.raises(InputError, match="concurrency"):
        estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=0), calibration=calibration_for(g))
    # more requests than the KV cache holds are priced and flagged, not refused
    over = estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=10 * r.max_batch), calibration=calibration_for(g))
    assert not over.fits and f"holds {r.max_batch} sequences" in over.over_capacity
    assert over.ttft_s > 9 * 1024 * r1.tpot_s  # nine whole requests' lives ahead of the average arrival


def test_offline_max_throughput_prices_the_offline_benchmarks_arrival():
    # without a concurrency the answer is the offline benchmark's (every request queued, spec.harness.OFFLINE_ARRIVAL):
    # a closed loop asked for there had been half applied (its TTFT and TPOT, the offline throughput)
    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    dep = Deployment(gpu=g, num_gpus=1, plan=Plan(tp=1))
    a, b = (estimate(m, dep, Workload(isl=1024, osl=1024, arrival=x), calibration=calibration_for(g)) for x in ("waves", "closed_loop"))
    assert (a.ttft_s, a.tpot_s, a.output_tok_s_per_gpu) == (b.ttft_s, b.tpot_s, b.output_tok_s_per_gpu)
    assert Workload(arrival="closed_loop").priced_arrival == "waves" and Workload(arrival="closed_loop", concurrency=8).priced_arrival == "closed_loop"


def test_mxfp4_deepseek_on_mi355x_reads_w4a4_in_its_header():
    # SGLang and ATOM run AMD's MXFP4 DeepSeek-R1 W4A4 on CDNA4 (spec.precision.mxfp4_activation), its MLA projections
    # BF16 as AMD's Quark checkpoint stores them (spec.plan.quark_mxfp4): the header says so
    from conftest import cli

    code, out, _ = cli("estimate", "deepseek-r1", "--gpu", "mi355x", "--gpus", "8", "--weight-dtype", "mxfp4",
                       "--backend", "sglang", "--concurrency", "32")
    assert code == 0 and out.lstrip().startswith("deepseek-r1 on 8x MI355X, TP8 EP1/MoE-TP8, W:mxfp4 attn-W:bf16 A:mxfp4 KV:bf16, sglang")


@pytest.mark.parametrize("size", [np.array, lambda v: np.array([v])], ids=["0-d", "one-element"])
def test_a_plan_of_numpy_sizes_estimates_as_its_plan_of_ints(size):
    """A Deployment built with numpy sizes (Deployment.__post_init__ takes 0-d and one-element arrays)
    estimates as the same plan of ints, bit for bit, through lc.estimate: a 0-d one raised `unhashable
    type: 'numpy.ndarray'` from deployment_ops's cache, a one-element one `only 0-dimensional arrays can
    be converted` (estimate's int(adp)). Several sizes are a sweep's: one line naming the size."""
    import llm_codesign as lc
    from llm_codesign.serve.aggregated import _deployment_ops

    m = get_model("llama-3.1-8b")
    ints = deployment(m, gpu="h100", tp=2)
    arrays = replace(ints, plan=Plan(*(size(v) for v in ints.plan.sizes)))
    w = Workload(isl=1024, osl=1024, concurrency=16)
    _deployment_ops.cache_clear()
    got, want = lc.estimate(m, arrays, w, breakdown=True), lc.estimate(m, ints, w, breakdown=True)
    assert got.to_dict() == want.to_dict() and got.deployment.plan == ints.plan  # the same plan, as ints
    assert got.breakdown and got.energy["tokens_per_joule"] > 0
    # the plan of ints' evaluation kept once: its energy priced it, its operators (and the second estimate's) reused it
    assert _deployment_ops.cache_info()[:2] == (3, 1)
    with pytest.raises(InputError) as e:
        lc.estimate(m, replace(ints, plan=Plan(tp=np.array([1, 2]))), w)
    assert e.value.field == "plan.tp" and e.value.value == [1, 2]


def test_deployment_ops_keeps_a_few_read_only():
    """deployment_ops's cache: an estimate asks it twice (energy, then operators), so it keeps a few
    (_OPS_KEPT, ~115 KB each), read only: a caller writing into an array or the dict would change every
    later estimate of that deployment."""
    from types import MappingProxyType

    from llm_codesign.serve.aggregated import _OPS_KEPT, _deployment_ops, deployment_ops

    assert _deployment_ops.cache_info().maxsize == _OPS_KEPT == 8
    m = get_model("llama-3.1-8b")
    dep, w = deployment(m, gpu="h100"), Workload(isl=1024, osl=1024, concurrency=16)
    r = deployment_ops(m, dep, w, cal=calibration_for(dep.gpu), concurrency=16)
    assert isinstance(r, MappingProxyType) and isinstance(r["ops"], tuple) and isinstance(r["prefill_ops"], tuple)
    with pytest.raises(TypeError):
        r["ttft_s"] = 0.0  # the dict is read only
    held = [v for v in r.values() if isinstance(v, np.ndarray)]
    held += [x for op in r["ops"] + r["prefill_ops"] for x in (op.time, op.count) if isinstance(x, np.ndarray)]
    assert len(held) > 20 and not any(a.flags.writeable for a in held)
    with pytest.raises(ValueError, match="read-only"):
        held[0][...] = 0.0  # an array kept (a scalar load's figures are numpy scalars: immutable)
    with pytest.raises(TypeError):
        r["ttft_s"][...] = 0.0
    assert deployment_ops(m, dep, w, cal=calibration_for(dep.gpu), concurrency=16) is r


def test_an_unfit_sglang_ep_deployment_names_the_bf16_upcast():
    """gpt-oss-120b on 2x H100 TP2 EP2 with SGLang: its Triton MoE holds the MXFP4 experts as BF16 under EP (Engine.moe_weight),
    118 GB per GPU; the refusal names that, and what keeps MXFP4 (EP=1, another engine)."""
    from conftest import cli

    code, _, err = cli("estimate", "gpt-oss-120b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--ep", "2", "--backend", "sglang",
                       "--concurrency", "8")
    assert code == 2
    # the least count that holds one sequence is these 2 GPUs without EP: TP1 PP2 keeps the experts MXFP4 (priced)
    assert ("at least 2 GPUs hold it, e.g. TP1 PP2 (priced: one sequence fits), or lower the precision; SGLang holds these mxfp4 "
            "experts as bf16 under EP (converted at load): EP=1 or another engine keeps mxfp4") in " ".join(err.split())


def test_a_launch_cap_queues_the_rest_and_the_memory_still_fits():
    # newc7 #7: Llama-3.1-70B BF16 TP8 on H200 at 1k/1k, 64 requests on a launch cap of 16 (--max-batch; an imported
    # --max-num-seqs). 16 run, 64 - 16 = 48 wait (queued); the KV cache holds all 64 (fits, fits_memory). A request past the
    # 16 waits whole cohorts: 64 / 16 - 1 = 3 slot cycles, each the 16-batch's TTFT + (1024 - 1) x its TPOT
    # (serve.aggregated._slot_cycle): 365.67 + 1023 x 9.3091 = 9888.9 ms, so TTFT = 365.67 + 3 x 9888.9 = 30,032 ms
    import llm_codesign as lc

    m = lc.get_model("llama-3.1-70b")
    dep = lc.deployment(m, gpu="h200", num_gpus=8, tp=8)
    capped = lc.estimate(m, replace(dep, max_batch=16), lc.Workload(isl=1024, osl=1024, concurrency=64))
    free = lc.estimate(m, dep, lc.Workload(isl=1024, osl=1024, concurrency=16))
    d = capped.to_dict()
    assert (d["fits"], d["fits_memory"], d["queued"], d["max_batch"]) == (True, True, 48, 16) and capped.kv_seqs >= 64
    assert d["over_capacity"].startswith("the launch caps the batch at 16 requests")
    q = d["queue"]
    assert q["cohorts"] == pytest.approx(3.0, rel=1e-12)
    assert q["cycle_ms"] == pytest.approx((free.ttft_s + 1023 * free.tpot_s) * 1e3, rel=1e-9)
    assert d["ttft_ms"] == pytest.approx(free.ttft_s * 1e3 + 3 * q["cycle_ms"], rel=1e-9) and 29_000 < q["ttft_ms"] < d["ttft_ms"]
    # the intervals come from the runs at the batch that runs (16: the 5-32 band), not the 64 offered (33+)
    # (the queued TTFT's band says the queue it adds at TPOT's spread after them: intervals.with_queue)
    assert d["intervals"]["ttft_ms"]["source"].startswith(free.intervals["ttft_ms"]["source"] + ", for the TTFT once a request runs; its ")
    assert "load band 5-32 requests" in d["intervals"]["ttft_ms"]["source"]
    # uncapped, nothing waits: no queue, fits
    assert "queue" not in free.to_dict() and free.queued == 0 and free.fits


def test_the_ep_tp_mismatch_names_both_sides_and_the_plans_that_agree():
    # newc7 #12: --tp 2 --ep 4 on Qwen3-30B-A3B: attention 2 x 1 x 1 x 1 = 2 GPUs, experts 4 x 1 x 1 = 4 (moe_tp: 2 // 4 -> 1).
    # The two plans that agree: the experts over the attention's 2 GPUs (ep 2), or attention DP 4 / 2 = 2 over the experts' 4
    # (on vLLM: TensorRT-LLM, the H100's default, runs attention DP at TP 1 only, so its advice offers the first alone)
    m = get_model("qwen3-30b-a3b")
    said = {}
    for backend in ("vllm", "trtllm"):
        dep = Deployment(gpu=get_gpu("h100"), num_gpus=2, plan=Plan(tp=2, ep=4, moe_tp=1), backend=backend)
        with pytest.raises(InputError) as e:
            estimate(m, dep, Workload(isl=1024, osl=1024, concurrency=8), calibration=calibration_for(get_gpu("h100")))
        said[backend] = str(e.value)
    assert ("the attention side makes 2 GPUs (tp*attention_dp*kvp*pp) and the MoE side 4 (ep*moe_tp*pp); plans that agree: "
            "TP2 EP2 on 2 GPUs (ep 2) or DP2xTP2 EP4 on 4 GPUs (attention_dp 2)") in said["vllm"] and "replicas" not in said["vllm"]
    assert said["trtllm"].endswith("plans that agree: TP2 EP2 on 2 GPUs (ep 2)")


def test_a_mistral_config_reads_as_the_llama_decoder_it_is(tmp_path):
    # newc7 #11: a Mistral-Nemo-shaped config (model_type mistral, sliding_window null) says nothing of its type, and its
    # counts are the Llama-typed twin's: 40 x (attention 5120 x (32 + 2 x 8 + 32) x 128 + MLP 3 x 5120 x 14336) + 2 x 131072
    # x 5120 = 40 x (52.4M + 220.2M) + 1342.2M = 12.25B
    import json

    from llm_codesign.spec.model import load_config_file

    cfg = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 5120, "num_hidden_layers": 40,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 131072,
           "max_position_embeddings": 1024000, "tie_word_embeddings": False, "hidden_act": "silu", "sliding_window": None}
    (tmp_path / "mistral.json").write_text(json.dumps(cfg))
    (tmp_path / "llama.json").write_text(json.dumps(cfg | {"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    mis, lla = (load_config_file(str(tmp_path / f"{n}.json")) for n in ("mistral", "llama"))
    assert mis.notes == () and mis.total_params == lla.total_params
    assert mis.total_params == 40 * (5120 * (32 + 2 * 8 + 32) * 128 + 3 * 5120 * 14336) + 2 * 131072 * 5120
