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
