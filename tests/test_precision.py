import pytest

from llm_codesign.errors import InputError
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.precision import DTYPES, Precision, gemm_math, get_dtype


def test_block_scale_overhead():
    # NVFP4: 4 bits + one 8-bit scale per 16 values = 4.5 bits; MXFP4: 4 + 8/32 = 4.25 bits
    assert DTYPES["nvfp4"].bytes_per_weight() == pytest.approx(4.5 / 8)
    assert DTYPES["mxfp4"].bytes_per_weight() == pytest.approx(4.25 / 8)
    # FP8 block-scaled: an FP32 scale per 128x128 weights, per 1x128 activations
    assert DTYPES["fp8_block"].bytes_per_weight() == pytest.approx((8 + 32 / 16384) / 8)
    assert DTYPES["fp8_block"].bytes_per_value() == pytest.approx((8 + 32 / 128) / 8)
    assert DTYPES["bf16"].bytes_per_weight() == 2.0


def test_gemm_math_follows_hardware():
    h100, b200, a100, mi355 = (get_gpu(x) for x in ("h100", "b200", "a100", "mi355x"))
    bf16, fp8, nvfp4, mxfp4 = (DTYPES[x] for x in ("bf16", "fp8", "nvfp4", "mxfp4"))
    assert gemm_math(mxfp4, bf16, h100) == "bf16"  # W4A16 runs at the 16-bit rate
    assert gemm_math(nvfp4, nvfp4, b200) == "fp4"
    assert gemm_math(nvfp4, nvfp4, h100) == "fp8"  # no FP4 tensor cores on Hopper
    assert gemm_math(fp8, fp8, a100) == "bf16"  # no FP8 on Ampere
    assert gemm_math(nvfp4, nvfp4, mi355) == "fp8"  # CDNA4 runs MXFP4, not NVFP4
    assert gemm_math(mxfp4, mxfp4, mi355) == "fp4"


def test_bad_dtype():
    with pytest.raises(InputError, match="weight_dtype"):
        Precision.of("fp3")
    with pytest.raises(InputError, match="nvfp4"):
        get_dtype("int2")


def test_mxfp4_activations_follow_the_gpu():
    # AMD's MXFP4 checkpoints run W4A4 on CDNA4 (SGLang's QuarkW4A4MXFP4, ATOM, AITER's per_1x32 fused MoE);
    # NVIDIA's engines and GPUs without MXFP4 math run MXFP4 weights on BF16 activations (W4A16)
    from llm_codesign.spec.precision import executable, mxfp4_activation

    assert {g: mxfp4_activation(get_gpu(g)).name for g in ("mi355x", "mi300x", "h100", "b200")} == {
        "mi355x": "mxfp4", "mi300x": "bf16", "h100": "bf16", "b200": "bf16"}
    p = Precision.of("mxfp4", kv="fp8")
    # not yet settled (no GPU): no activation to read, and the label says so rather than show a placeholder
    assert p.activation is None and p.label() == "W:mxfp4 A:per GPU KV:fp8"
    assert p.on(get_gpu("mi355x")) == Precision(DTYPES["mxfp4"], DTYPES["mxfp4"], DTYPES["fp8"])
    assert p.on(get_gpu("b200")) == Precision(DTYPES["mxfp4"], DTYPES["bf16"], DTYPES["fp8"])
    assert executable(p, get_gpu("mi355x")) == (Precision(DTYPES["mxfp4"], DTYPES["mxfp4"], DTYPES["fp8"]), ())
    # named activations are kept: gpt-oss's W4A16 and an explicit BF16 stay BF16 on CDNA4
    explicit = Precision.of("mxfp4", activation="bf16")
    assert explicit.activation == DTYPES["bf16"] and explicit.on(get_gpu("mi355x")).activation.name == "bf16"
    # other formats name their activations themselves
    assert [Precision.of(w).activation.name for w in ("bf16", "fp8", "fp8_block", "nvfp4", "int4")] == ["bf16", "fp8", "fp8_block", "nvfp4", "bf16"]
    # only MXFP4 leaves its activation to the GPU: an unsettled precision of another format cannot be made
    with pytest.raises(ValueError, match="fp8 weights name their activation; only MXFP4's is left to the GPU"):
        Precision(DTYPES["fp8"], None, DTYPES["fp8"])


def test_a_deployment_settles_mxfp4_activations_on_its_gpu():
    from llm_codesign.spec.plan import Deployment, precision_for
    from llm_codesign.spec.registry import get_model

    mi355 = get_gpu("mi355x")
    assert Deployment(gpu=mi355, num_gpus=8, precision=Precision.of("mxfp4")).precision.label() == "W:mxfp4 A:mxfp4 KV:bf16"
    assert Deployment(gpu=get_gpu("h200"), num_gpus=8, precision=Precision.of("mxfp4")).precision.label() == "W:mxfp4 A:bf16 KV:bf16"
    # naming gpt-oss's own weight format keeps its checkpoint's W4A16 and BF16 attention, on CDNA4 too
    gpt = get_model("gpt-oss-120b")
    q = precision_for(gpt, weight="mxfp4", kv="fp8")
    assert Deployment(gpu=mi355, num_gpus=1, precision=q).precision.label() == "W:mxfp4 attn-W:bf16 A:bf16 KV:fp8"


def test_an_activation_named_after_the_fact_is_kept_and_a_sweep_records_what_runs():
    from dataclasses import replace

    from llm_codesign.explore.search import parse_precisions
    from llm_codesign.spec.registry import get_model

    mi355 = get_gpu("mi355x")
    p = Precision.of("mxfp4")
    assert replace(p, activation=DTYPES["fp8"]).on(mi355).activation.name == "fp8"
    # a BF16 named after the fact is kept (the flag it took to say so, forgotten, read it as the placeholder: W4A4)
    assert replace(p, activation=DTYPES["bf16"]).on(mi355).activation.name == "bf16"
    # a sweep's task carries the activation's name: the one the GPU runs, not the placeholder (and a re-quantised MLA
    # model's BF16 attention projections, spec.plan.quark_mxfp4)
    got = parse_precisions("mxfp4", None, "fp8", get_model("deepseek-r1"), mi355)
    assert [x.label() for x in got] == ["W:mxfp4 attn-W:bf16 A:mxfp4 KV:fp8"]


def test_a_search_settles_the_precisions_it_is_given():
    # design's side-by-side searches SearchSpace(precisions=(Precision.of("mxfp4"),)): its roofline bound read the
    # placeholder's BF16 math on CDNA4, where MXFP4 runs W4A4 at the FP4 rate (now unsettled, it is None: settled first)
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.explore.search import SearchSpace, roofline_bound, search, searched_precisions
    from llm_codesign.spec.engines import get_engine
    from llm_codesign.spec.registry import get_model

    m, mi355 = get_model("llama-3.1-8b"), get_gpu("mi355x")
    space = SearchSpace(1, tp=(1,), pp=(1,), precisions=(Precision.of("mxfp4", kv="fp8"),), batches=(1, 64))
    precs, _ = searched_precisions(m, mi355, space, engine=get_engine("sglang"))
    assert precs == (Precision(DTYPES["mxfp4"], DTYPES["mxfp4"], DTYPES["fp8"]),)
    f = search(m, mi355, calibration_for(mi355), space, isl=1024, osl=1024, engine=get_engine("sglang"))
    # the frontier's bound reads each request's KV cache at the workload's mean context, 1024 + 1024 / 2 (fixroof)
    assert f.roofline_bound == roofline_bound(m, mi355, precs, 1, context=1536)
    # without the cache's reads, at 64k requests the bound is compute-bound: 2 x 8.0e9 active params x B over MI355X's
    # dense FP4 peak, not its BF16 one
    assert roofline_bound(m, mi355, precs, 1)["output_tok_s_per_gpu"][-1] == pytest.approx(mi355.peak("fp4") / (2 * m.active_params), rel=1e-3)


def test_activations_narrower_than_the_weights_run_at_the_weights_format_and_say_so():
    """crev9 #7: --activation-dtype fp8 on BF16 weights was labelled A:fp8 as run, priced as BF16 (TTFT 203.80 against
    203.92 ms: some bytes at FP8) and exported as a plain BF16 launch, with no note. No engine has a W16A8 GEMM (each
    quantises activations only with the weights): they run BF16, the label says "as run" and one note says why."""
    import llm_codesign as lc
    from llm_codesign.spec.precision import executable
    from llm_codesign.spec.registry import get_model

    h100, b200 = get_gpu("h100"), get_gpu("b200")
    ran, notes = executable(Precision.of("bf16", "fp8"), h100)
    assert ran == Precision.of("bf16") and notes == (
        "W16A8 has no GEMM in any engine (activations are quantised only with the weights): the activations run bf16, priced and "
        "exported as W16A16; --weight-dtype fp8 for fp8 GEMMs",)
    w16a8 = notes[0]
    ran, notes = executable(Precision.of("fp8", "nvfp4"), b200)  # W8A4 alike: the activations at FP8
    assert ran.activation.name == "fp8" and notes[0].startswith("W8A4 has no GEMM")
    # weight-only formats keep their activations (INT4's math is the activations', W4A8), and the usual pairs say nothing
    for w, a in (("int4", "fp8"), ("fp8", "fp8"), ("bf16", "bf16"), ("nvfp4", "nvfp4"), ("mxfp4", "bf16")):
        assert executable(Precision.of(w, a), b200) == (Precision.of(w, a), ()), (w, a)
    m = get_model("llama-3.1-8b")
    w = lc.Workload(isl=8192, osl=16, concurrency=1)
    asked = lc.estimate(m, lc.deployment(m, gpu="h100", num_gpus=1, activation_dtype="fp8"), w).to_dict()
    plain = lc.estimate(m, lc.deployment(m, gpu="h100", num_gpus=1), w).to_dict()
    assert asked["precision"] == "W:bf16 A:fp8 KV:bf16" and asked["precision_as_run"] == "W:bf16 A:bf16 KV:bf16 as run"
    assert asked["precision_notes"] == [w16a8]
    assert (asked["ttft_ms"], asked["tpot_ms"]) == (plain["ttft_ms"], plain["tpot_ms"])  # priced as what runs: W16A16
