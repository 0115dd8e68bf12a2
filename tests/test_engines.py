"""spec/engines/: the engines' documented defaults side by side (each cited in its engine's module), their
lookup, and their fitted costs read from a calibration profile."""
import re

import numpy as np
import pytest

from llm_codesign.errors import InputError
from llm_codesign.measure.calibrate import DOCUMENTED
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model


def test_step_token_budgets_follow_each_engines_source():
    h100, a100, l40s, b200 = (get_gpu(g) for g in ("h100", "a100", "l40s", "b200"))
    # vLLM EngineArgs.get_batch_defaults: 8192 on >= 70 GiB GPUs other than A100, else 2048
    vllm, sglang = get_engine("vllm"), get_engine("sglang")
    assert (vllm.step_tokens(h100), vllm.step_tokens(a100), vllm.step_tokens(l40s)) == (8192, 2048, 2048)
    # SGLang: 4096 below 60 GiB (L40S 48 GB), 8192 below 160 GiB (H100), 16384 above (B200 180 GB)
    assert (sglang.step_tokens(l40s), sglang.step_tokens(h100), sglang.step_tokens(b200)) == (4096, 8192, 16384)
    assert get_engine("trtllm").step_tokens(b200) == 8192  # TensorRT-LLM max_num_tokens default


def test_admission_rules():
    assert get_engine("trtllm").admission is None  # GUARANTEED_NO_EVICT reserves ISL + OSL: admits only what fits
    assert get_engine("vllm").admission == (0.0, 0.0)  # admits on the prompt's blocks, preempts later
    assert get_engine("sglang").admission == (0.098, 4096.0)  # new_token_ratio 0.7 x 0.14, clipped at 4096


def test_engine_lookup():
    assert get_engine("TensorRT-LLM").name == "trtllm" and get_engine(" SGLang ").title == "SGLang"
    assert get_engine("vllm").step_tokens(get_gpu("a100")) == 2048
    with pytest.raises(InputError, match="backend.*one of: trtllm, vllm, sglang"):
        get_engine("tgi")


def test_engine_wraps_its_documented_defaults():
    b200 = get_gpu("b200")
    vllm, sglang = get_engine("vllm"), get_engine("sglang")
    assert vllm.kv_budget == ("total", 0.92, 0.5) and sglang.admission == (0.098, 4096.0)  # gpu_memory_utilization; new_token_ratio
    assert vllm.max_batch(b200) == 1024.0  # max_num_seqs on a >= 70 GiB GPU
    # SGLang's request pool: int(KV tokens / context x 512) clipped to [2048, 4096]: 1e6 / 131072 x 512 = 3906
    assert float(sglang.max_batch(b200, 1e6, 131072)) == 3906.0


def test_calibration_view_reads_the_fitted_profile():
    """Engine.costs reads each engine's fitted values once: those fitted.toml ships (read here through
    the file itself), and the in-step calibration for that engine."""
    import tomllib
    from dataclasses import replace
    from importlib import resources

    from llm_codesign.cost.calibration import calibration_for, documented

    fit = tomllib.loads(resources.files("llm_codesign").joinpath("data/calibration/fitted.toml").read_text())["default"]
    start = tomllib.loads(resources.files("llm_codesign").joinpath("data/calibration/default.toml").read_text())["default"]
    b200 = get_gpu("b200")
    cal = calibration_for(b200)
    for name in ("trtllm", "vllm", "sglang"):
        c = get_engine(name).costs(cal)
        got = (c.step_overhead, c.seq_overhead, c.ttft_overhead, c.eager_launch, c.eager_skew, c.queue_fraction)
        # TensorRT-LLM's and vLLM's request cost: documented (default.toml's), not fitted (measure.calibrate.DOCUMENTED), so not
        # in fitted.toml
        want = tuple(fit[k].get(name, start[k][name]) if k == "ttft_overhead_s" else fit[k][name]
                     for k in ("step_overhead_s", "seq_overhead_s", "ttft_overhead_s", "eager_launch_s", "eager_skew_s", "prefill_queue_fraction"))
        assert (name in fit["ttft_overhead_s"]) == (name == "sglang")
        assert got == want
        # the fit, not default.toml's starting values
        assert c.step_overhead != documented(b200.family).step_overhead(name)
        # the steps each engine's overlap loop has queued ahead of a new request (1, documented, not fitted:
        # measure.calibrate.DOCUMENTED) while another request keeps it running, plus the arrival's phase (a closed
        # loop's whole running step: 2 in all; a burst's wave lands on an idle engine: none), and attention DP's on top
        wait = fit.get("ttft_wait_steps", {}).get(name, 1.0)
        assert wait == start["ttft_wait_steps"][name] == 1.0
        assert (name not in fit.get("ttft_wait_steps", {})) == (("ttft_wait_steps", name) in DOCUMENTED)
        assert float(c.wait_steps(1, 64)) == float(c.wait_steps(1, 64, "waves")) == 2.0
        assert float(c.wait_steps(1, 64, "burst")) == 0.0
        # a lone request: nothing else keeps the loop running, so nothing is queued ahead of it: the phase alone
        assert float(c.wait_steps(1, 1)) == 1.0
        # a synchronous build (vLLM 0.11, SchedulerFlags.queued_steps 0) queues none: the phase alone
        assert float(c.wait_steps(1, 64, "closed_loop", queued=0.0)) == 1.0 and float(c.wait_steps(1, 64, "burst", queued=0.0)) == 0.0
        # "waves" of 4 rounds: the first wave (1 / 4 of the requests) is a burst on an idle engine, no phase and
        # nothing queued: 0.75 x (1 + 1)
        assert float(c.wait_steps(1, 64, "waves", rounds=4.0)) == 1.5 and float(c.phase_steps("waves", 20.0)) == 0.95
        assert float(c.phase_steps("closed_loop", 4.0)) == 1.0
        wait = 2.0
        assert float(c.wait_steps(8, 64)) == wait + fit["adp_wait_steps"][name]
        # TensorRT-LLM holds none while a rank has no request to decode (8 requests over 8 ranks: the 7 others leave one
        # idle); the others' hold applies at any load
        held = 0.0 if name == "trtllm" else fit["adp_wait_steps"][name]
        assert float(c.wait_steps(8, 8)) == wait + held
        assert c.cal == cal.in_step(name) and c.engine is get_engine(name)
    # a profile that lacks the engine says so, naming the table
    with pytest.raises(InputError, match=r"engine: 'vllm' is not valid; .*missing from \[default.step_overhead_s\] \("):
        get_engine("vllm").costs(replace(cal, step_overhead_s=(("trtllm", 1e-3),)))


def test_pdl_saves_its_share_of_a_boundary_per_launch_on_sm90_and_newer():
    """Programmatic dependent launch: a decode step is shorter by share x pdl_credit_s per kernel launch
    where the engine PDL-launches (TensorRT-LLM 0.7, SGLang 0.25, vLLM 0.15 on Blackwell and 0 on
    Hopper, Engine.pdl); nothing before SM90 (A100)."""
    from dataclasses import replace

    import numpy as np

    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import launches
    from llm_codesign.serve.aggregated import decode_step
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    trt, sgl, vllm = (get_engine(e) for e in ("trtllm", "sglang", "vllm"))
    assert (trt.pdl_share("blackwell"), sgl.pdl_share("hopper"), vllm.pdl_share("hopper"), vllm.pdl_share("blackwell"),
            trt.pdl_share("ampere")) == (0.7, 0.25, 0.0, 0.15, 0.0)
    m = get_model("llama-3.1-70b")
    for gid, backend, share in (("b200", "trtllm", 0.7), ("h100", "sglang", 0.25), ("h100", "vllm", 0.0), ("a100", "trtllm", 0.0)):
        g = get_gpu(gid)
        cal = calibration_for(g)
        eng = get_engine(backend)
        step = {}
        for credit in (0.0, 0.25e-6):
            costs = eng.costs(replace(cal, pdl_credit_s=credit))
            step[credit], _, ops = decode_step(m, g, Precision.of("fp8" if gid != "a100" else "bf16"), Plan(tp=8), costs=costs,
                                               b=16.0, ctx=2048.0, k=np.zeros(1), spec=None)
        n = float(np.ravel(launches(ops))[0])
        assert n > 100  # the step's launches: 80 layers of several kernels
        assert float(np.ravel(step[0.0] - step[0.25e-6])[0]) == pytest.approx(share * 0.25e-6 * n, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("backend, gid, tokens", [
    ("trtllm", "b200", 8192), ("trtllm", "a100", 8192),
    ("vllm", "h100", 8192), ("vllm", "b200", 8192), ("vllm", "a100", 2048), ("vllm", "l40s", 2048),
    ("sglang", "b200", 16384), ("sglang", "gb200", 16384), ("sglang", "h200", 8192), ("sglang", "l40s", 4096),
])
def test_engine_step_token_budget_defaults(backend, gid, tokens):
    # the engines' documented defaults (each engine's step_tokens): vLLM 8192 on >= 70 GiB but not
    # A100, else 2048; SGLang by reported memory: < 35 GiB 2048, < 60 GiB 4096 (L40S 45 GiB), < 160 GiB
    # 8192 (H200 140 GiB), else 16384 (B200 179 GiB); TensorRT-LLM 8192
    assert get_engine(backend).step_tokens(get_gpu(gid)) == tokens


def test_engine_attention_kernels_by_kind(h100):
    """Engines run TensorRT-LLM's kernel efficiencies; where their default backend picks another
    attention kernel, that kernel's cited time ratio applies (Engine.attention_kernels), by kind and
    phase, not one scale per engine: vLLM on Blackwell decodes GQA with a BF16 cache on trtllm-gen
    kernels up to 256 decode tokens and on FlashInfer's own (1.3x) beyond; with an FP8 cache always on
    trtllm-gen. GEMMs are the same in every engine, and a profile naming a removed scale is refused."""
    from llm_codesign.cost.calibration import _apply, calibration_for

    vllm, sglang, trt = get_engine("vllm"), get_engine("sglang"), get_engine("trtllm")
    t = vllm.attention_time_factor("blackwell", "gqa", "decode", kv_fp8=False, dec_tokens=np.array([64.0, 256.0, 257.0, 2048.0]))
    assert t.tolist() == [1.0, 1.0, 1.3, 1.3]
    assert vllm.attention_time_factor("blackwell", "gqa", "decode", kv_fp8=True, dec_tokens=2048.0) == 1.0
    assert vllm.attention_time_factor("blackwell", "mla", "decode", kv_fp8=True) == 1.15
    assert sglang.attention_time_factor("blackwell", "mla", "decode", kv_fp8=True) == 1.0  # trtllm_mla
    # FlashAttention-3: its MLA prefill a cited factor, its GQA prefill its own fitted rates (fa3_prefill; tests/test_kernels.py test_fa3_prefill_*)
    assert sglang.attention_time_factor("hopper", "mla", "prefill", kv_fp8=False) == 1.07
    assert sglang.attention_time_factor("hopper", "gqa", "prefill", kv_fp8=False) == 1.0 and sglang.fa3_prefill == ("hopper",)
    # its FA3 MLA decode on Hopper: 1.02x TensorRT-LLM's at the H100 MLA table's shapes with a BF16 cache (was 1.15)
    assert sglang.attention_time_factor("hopper", "mla", "decode", kv_fp8=False) == 1.0
    assert trt.attention_time_factor("hopper", "gqa", "prefill", kv_fp8=False) == 1.0  # the kernel tables' own
    base = calibration_for(h100)
    v, t = base.in_step("vllm"), base.in_step("trtllm")
    assert (v.gemm_eff_fp8, v.moe_eff, v.bw_eff, v.attn_prefill_eff) == (t.gemm_eff_fp8, t.moe_eff, t.bw_eff, t.attn_prefill_eff)
    for removed in ("gemm_eff_scale", "attn_eff_scale"):
        with pytest.raises(InputError, match=removed):
            _apply(base, {removed: {"vllm": 0.8}}, "profile.toml")
    # GQA decode on Hopper is no factor: SGLang's and vLLM's FlashAttention-3 kernel is priced by its own rules (fa3_decode;
    # its operator in a serving step against hand-derived reads: tests/test_kernels.py test_fa3_*)
    assert vllm.attention_time_factor("hopper", "gqa", "decode", kv_fp8=False) == 1.0 and vllm.fa3_decode == sglang.fa3_decode == ("hopper",)
    assert trt.fa3_decode == ()


@pytest.mark.parametrize("backend, kernel, weight, ep, family", [
    # TensorRT-LLM: CUTLASS fused MoE (its default backend), INT4 weight-only too; gpt-oss's MXFP4 on its own Triton
    # MoE (AUTO -> TRITON on SM90), the kernel its table's moe_torch_flow rows time, not vLLM's triton_kernels rows
    ("trtllm", "fp8_block", "fp8_block", False, "cutlass"), ("trtllm", "bf16", "bf16", True, "cutlass"),
    ("trtllm", "fp8", "fp8", False, "cutlass"), ("trtllm", "w4a16", "mxfp4", False, "trtllm_w4a16"),
    ("trtllm", "w4a16", "mxfp4", True, "trtllm_w4a16"), ("trtllm", "w4a16", "int4", False, "cutlass"),
    # SGLang 0.5.12: Triton fused MoE for block FP8 (DeepGEMM only with a DeepEP all-to-all, not its default); MXFP4 on triton_kernels at EP 1 only
    ("sglang", "fp8_block", "fp8_block", False, "sglang_triton"), ("sglang", "fp8_block", "fp8_block", True, "sglang_triton"),
    ("sglang", "bf16", "bf16", False, "sglang_triton"),
    ("sglang", "w4a16", "mxfp4", False, "triton_kernels"), ("sglang", "w4a16", "mxfp4", True, "sglang_triton"),
    ("sglang", "w4a16", "int4", False, "marlin"),
    # vLLM 0.24: block FP8 on Triton under TP and FlashInfer's CUTLASS under EP; per-tensor FP8 on FlashInfer's CUTLASS
    ("vllm", "fp8_block", "fp8_block", False, "vllm_triton"), ("vllm", "fp8_block", "fp8_block", True, "flashinfer_cutlass"),
    ("vllm", "fp8", "fp8", False, "flashinfer_cutlass"), ("vllm", "bf16", "bf16", True, "vllm_triton"),
    ("vllm", "w4a16", "mxfp4", True, "triton_kernels"), ("vllm", "w4a16", "int4", False, "marlin"),
])
def test_moe_kernel_family_per_engine_on_hopper(backend, kernel, weight, ep, family):
    from llm_codesign.spec.engines import MOE_KERNELS

    e = get_engine(backend)
    assert e.moe_kernel("hopper", kernel, weight=weight, ep=ep) == family and family in MOE_KERNELS
    # elsewhere every engine's experts run at the kernel tables' rates (no per-engine tables there)
    assert e.moe_kernel("blackwell", kernel, weight=weight, ep=ep) is None
    # a non-gated MoE (Nemotron-H's relu2) on TensorRT-LLM's CUTLASS MoE at the kernel tables' own (fitted on its
    # non-gated rows); the other engines' families do not depend on it
    assert e.moe_kernel("hopper", kernel, weight=weight, ep=ep, gated=False) == (None if family == "cutlass" else family)


def test_trtllm_gpt_oss_moe_block_on_hopper_at_its_tables_time(h100):
    """gpt-oss-120b's MoE block (top-4 of 128 experts, h = I = 2880, MXFP4 weights) under TensorRT-LLM on H100 at
    EP 2, 4 and 8 and 4096 tokens: its per-engine table's balanced moe_torch_flow rows (TensorRT-LLM's Triton MoE)
    read 1291, 813 and 566 us (kernels_hopper/moe.csv.gz); the model prices the block (top-k, permutation, expert
    GEMMs, activation) within 15% of each (1.09-1.10x); priced as vLLM's triton_kernels, as before, at 0.55-0.73x."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ffns import MOE_BLOCK
    from llm_codesign.cost.ops import Batch, layer_ops

    m = get_model("gpt-oss-120b")
    layer = next(layer for layer, _ in m.groups if layer.ffn.kind == "moe")
    sh = Plan(tp=np.array([2, 4, 8]), ep=np.array([2, 4, 8]), moe_tp=np.array([1, 1, 1]))
    ops = layer_ops(m, layer, 1.0, h100, calibration_for(h100), prec=m.default_precision, sh=sh,
                    b=Batch(pf_tokens=np.full(3, 4096.0), pf_seqs=1.0), prefix="l", engine=get_engine("trtllm"))
    block = sum(np.broadcast_to(o.time, (3,)) for o in ops if o.role in MOE_BLOCK)
    np.testing.assert_allclose(block * 1e6, [1290.8, 812.8, 566.4], rtol=0.15)


def test_moe_experts_are_priced_in_the_engines_kernel_family(h100):
    """DeepSeek-R1 (block FP8) on 8 H100s: the expert GEMMs run at the rates of the MoE kernel family each
    engine picks (Calibration.moe_kernel), so a family's rate moves only the engines that run it: SGLang's
    Triton MoE (not its dense DeepGEMM), TensorRT-LLM's CUTLASS, and vLLM's Triton under TP and FlashInfer's
    CUTLASS under EP, within one array of plans."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.cost.ops import Batch, layer_ops

    m = get_model("deepseek-r1")
    cal = calibration_for(h100)
    layer = next(layer for layer, _ in m.groups if layer.ffn.kind == "moe")
    sh = Plan(tp=np.array([8, 8]), ep=np.array([1, 8]), moe_tp=np.array([8, 1]))

    def experts(engine, c):
        ops = layer_ops(m, layer, 1.0, h100, c, prec=m.default_precision, sh=sh, b=Batch(pf_tokens=np.array([4096.0, 4096.0]), pf_seqs=1.0),
                        prefix="l", engine=get_engine(engine))
        return next(o for o in ops if o.name.endswith("experts_gate_up")).time

    base = {e: experts(e, cal) for e in ("trtllm", "vllm", "sglang")}
    for fam, moved in (("sglang_triton", {"sglang": [1, 1]}), ("cutlass", {"trtllm": [1, 1]}),
                       ("vllm_triton", {"vllm": [1, 0]}), ("flashinfer_cutlass", {"vllm": [0, 1]})):
        key = f"moe_kernel_eff.{fam}.fp8_block"
        slower = cal.with_param(key, cal.param(key) / 2.0)  # half the rate: compute-bound at 4096 tokens
        for e in base:
            changed = (experts(e, slower) > base[e] * 1.2).astype(int).tolist()
            assert changed == moved.get(e, [0, 0]), (fam, e)


def test_attention_dp_hold_is_charged_only_where_the_engine_has_one():
    from dataclasses import replace

    from llm_codesign.cost.calibration import calibration_for

    # the same 10 held iterations in every engine's table: TensorRT-LLM and vLLM wait them with 4 ranks and 64 requests;
    # SGLang's DP controller and ATOM's CoreManager send each request to a rank at once, so nothing is held
    b200 = get_gpu("b200")
    cal = replace(calibration_for(b200), adp_wait_steps=tuple((e, 10.0) for e in ("atom", "sglang", "trtllm", "vllm")))
    for name, held in (("trtllm", 10.0), ("vllm", 10.0), ("sglang", 0.0), ("atom", 0.0)):
        c = get_engine(name).costs(cal)
        assert float(c.wait_steps(np.array([4.0]), np.array([64.0]))[0]) == pytest.approx(1.0 + c.ttft_wait_steps + held)


def test_each_gpu_runs_its_vendors_engines_and_defaults_to_its_vendors():
    """engine_for, the one rule the CLI, the API, the page and lint share: TensorRT-LLM is CUDA-only and ATOM ROCm-only,
    vLLM and SGLang run on both; unnamed, NVIDIA's GPUs price TensorRT-LLM and AMD's SGLang; a GPU file of another
    vendor takes TensorRT-LLM and refuses none."""
    from dataclasses import replace

    from llm_codesign.spec.engines import engine_choices, engine_for, engines_on

    h200, mi355x = get_gpu("h200"), get_gpu("mi355x")
    assert [engine_for(g).name for g in (h200, get_gpu("b200"), mi355x, get_gpu("mi300x"))] == ["trtllm", "trtllm", "sglang", "sglang"]
    assert engines_on(h200) == ("trtllm", "vllm", "sglang") and engines_on(mi355x) == ("vllm", "sglang", "atom")
    assert engine_for(mi355x, "ATOM").name == "atom" and engine_for(h200, "tensorrt-llm").name == "trtllm"
    assert engine_choices(mi355x) == {"engines": ["vllm", "sglang", "atom"], "engine": "sglang"}
    with pytest.raises(InputError, match=re.escape("backend: 'trtllm' is not valid; an engine that runs on MI355X (TensorRT-LLM runs on "
                                                   "NVIDIA GPUs only): vllm, sglang, atom")):
        engine_for(mi355x, "trtllm")
    with pytest.raises(InputError, match=re.escape("backend: 'atom' is not valid; an engine that runs on H200 SXM (ATOM runs on AMD "
                                                   "GPUs only): trtllm, vllm, sglang")):
        engine_for(h200, "atom")
    other = replace(h200, vendor="acme")
    assert engine_for(other).name == "trtllm" and engine_for(other, "atom").name == "atom" and len(engines_on(other)) == 4


def test_a_registered_engine_names_known_vendors():
    from dataclasses import replace

    from llm_codesign.spec.engines import VLLM, register_engine

    with pytest.raises(ValueError, match="vendors \\('intel',\\) are not among \\('nvidia', 'amd'\\)"):
        register_engine(replace(VLLM, name="vllm-xpu", aliases=(), vendors=("intel",)))


def test_a_deployment_prices_its_gpu_vendors_engine_and_refuses_one_it_cannot_run():
    """A Deployment built without an engine, by any path (the API's deployment(), the dataclass, a record), prices the GPU
    vendor's; TensorRT-LLM on an MI355X is refused wherever it comes from (it used to be priced, as CUDA kernels on HIP)."""
    from llm_codesign.spec.plan import Deployment, deployment

    m, mi355x = get_model("gpt-oss-120b"), get_gpu("mi355x")
    assert deployment(m, gpu="mi355x", num_gpus=8).backend == "sglang"
    assert Deployment(gpu=mi355x, num_gpus=8).backend == "sglang" and Deployment(gpu=get_gpu("h200"), num_gpus=8).backend == "trtllm"
    assert Deployment(gpu=mi355x, num_gpus=8, backend="SGLang").backend == "sglang"  # the registry's name, whatever the spelling
    for make in (lambda: deployment(m, gpu="mi355x", num_gpus=8, engine="trtllm"),
                 lambda: Deployment.from_dict(deployment(m, gpu="h200", num_gpus=8).to_dict(), mi355x)):
        with pytest.raises(InputError, match=re.escape("backend: 'trtllm' is not valid; an engine that runs on MI355X")):
            make()


def test_each_engine_s_kv_formats_per_gpu():
    """What each engine's --kv-cache-dtype admits per GPU, from its source (Engine.kv_formats): NVFP4 on Blackwell in
    TensorRT-LLM and SGLang, in vLLM (CacheDType's nvfp4, 0.33.0) on the SM100 family alone, where FlashInfer's trtllm-gen
    kernels read it, and not for MLA; FP4 nowhere on AMD; ATOM bf16 or fp8 alone; TensorRT-LLM no FP8 cache without FP8 math
    (A100)."""
    from llm_codesign.spec.engines import ENGINES
    from llm_codesign.spec.hardware import get_gpu

    got = {g: {n: e.kv_formats(get_gpu(g)) for n, e in ENGINES.items()} for g in ("a100", "h100", "b200", "mi300x", "mi355x")}
    nv3 = ("bf16", "fp16", "fp8")
    assert got["b200"] == {"trtllm": (*nv3, "nvfp4"), "vllm": (*nv3, "nvfp4"), "sglang": (*nv3, "nvfp4"), "atom": ("bf16", "fp8")}
    assert got["h100"] == {"trtllm": nv3, "vllm": nv3, "sglang": nv3, "atom": ("bf16", "fp8")}
    assert got["a100"]["trtllm"] == ("bf16", "fp16")
    assert got["mi300x"] == got["mi355x"] == {"trtllm": nv3, "vllm": nv3, "sglang": nv3, "atom": ("bf16", "fp8")}


def test_vllm_holds_an_nvfp4_cache_on_sm100_for_gqa_only_and_prices_its_bytes():
    """vLLM 0.33.0's --kv-cache-dtype nvfp4 runs FlashInfer's trtllm-gen kernels on SM100 (B200, B300, GB200, GB300); SM90
    decodes it with fa2 and SM120 with XQA (prefill fa2: flashinfer.py:114-115, 994-998), neither timed on an NVFP4 cache
    (refused); no MLA backend takes it (refused with the model named). What the change decides: accepted on B200 for
    Llama-3.1-70B, where a deployment then holds 4.5 bits a value: 80 layers x K and V x 1 head x 128 at TP8 = 11,520 bytes a
    token against FP8's 20,480 (its KV budget's tokens 20,480 / 11,520 = 1.78x FP8's); refused on H100 and for deepseek-r1."""
    from llm_codesign.errors import InputError
    from llm_codesign.spec.engines import VLLM, check_kv_format
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.plan import deployment
    from llm_codesign.spec.registry import get_model

    llama, r1 = get_model("llama-3.1-70b"), get_model("deepseek-r1")
    assert [("nvfp4" in VLLM.kv_formats(get_gpu(g), llama)) for g in ("b200", "b300", "gb200", "h200", "rtx-pro-6000")] == [
        True, True, True, False, False]
    dep = deployment(llama, gpu="b200", num_gpus=8, tp=8, backend="vllm", kv_dtype="nvfp4")
    attn = llama.groups[0][0].attn
    assert attn.kv_values_per_gpu(8) * dep.precision.kv.bytes_per_value() * 80 == 11520.0
    with pytest.raises(InputError, match=re.escape("one of bf16, fp16, fp8: the KV-cache formats vLLM runs on H100 SXM")):
        deployment(llama, gpu="h100", num_gpus=8, tp=8, backend="vllm", kv_dtype="nvfp4")
    with pytest.raises(InputError, match=re.escape("one of bf16, fp16, fp8: the KV-cache formats vLLM runs on B200 for "
                                                   "deepseek-r1's attention")):
        check_kv_format(VLLM, get_gpu("b200"), "nvfp4", r1)


def test_the_kv_check_without_an_engine_takes_a_model():
    """The roofline's check (no engine) with a model named: the GPU's formats, one line, not an AttributeError."""
    from llm_codesign.errors import InputError
    from llm_codesign.spec.engines import check_kv_format
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.registry import get_model

    check_kv_format(None, get_gpu("b200"), "nvfp4", get_model("deepseek-r1"))
    with pytest.raises(InputError, match=re.escape("one of bf16, fp16, fp8, mxfp4: the KV-cache formats MI355X holds")):
        check_kv_format(None, get_gpu("mi355x"), "nvfp4", get_model("deepseek-r1"))

