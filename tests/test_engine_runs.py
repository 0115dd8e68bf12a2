"""One validity rule per engine (Engine.runs_plans / precision_refusal, spec.engines.check_runs): a plan or a format the
named engine cannot run is neither searched nor priced nor exported (newcomer review newc7 #1, #2)."""
import numpy as np
import pytest
from conftest import cli

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.explore.export import export_config
from llm_codesign.explore.search import SearchSpace, plans, search
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan, deployment
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model


def test_each_engines_plan_rule():
    # TensorRT-LLM: attention DP only at attention TP 1 (Attention.__init__ tp_size = 1 under enable_attention_dp)
    tp, adp = np.array([1, 2, 8, 1, 4]), np.array([8, 4, 1, 1, 2])
    assert get_engine("trtllm").runs_plans(Plan(tp=tp, adp=adp)).tolist() == [True, False, True, True, False]
    # vLLM: experts EP over the whole stage (TP x DP x KVP) or MoE-TP over it, never EP x MoE-TP
    ep, moe_tp = np.array([8, 2, 1, 8, 4]), np.array([1, 4, 8, 1, 2])
    plan = Plan(tp=np.array([8, 8, 8, 2, 8]), ep=ep, moe_tp=moe_tp, adp=np.array([1, 1, 1, 4, 1]))
    assert get_engine("vllm").runs_plans(plan).tolist() == [True, False, True, True, False]
    assert get_engine("vllm").runs_plans(plan, moe=False).all()  # a dense model has no experts to split
    # SGLang runs both (--attn-dp-size under --tp-size, --ep-size dividing it)
    assert get_engine("sglang").runs_plans(Plan(tp=tp, adp=adp)).all() and get_engine("sglang").runs_plans(plan).all()


def test_a_plan_the_engine_cannot_launch_is_refused_naming_the_nearest():
    with pytest.raises(InputError) as e:
        deployment("deepseek-r1", gpu="h200", num_gpus=8, tp=2, attention_dp=4, ep=8)  # TensorRT-LLM: H200's vendor engine
    # the nearest: the same 4 x 2 = 8 GPUs as 8 attention-DP ranks of TP 1, EP8 kept
    assert e.value.field == "plan" and e.value.value == "DP4xTP2 EP8"
    assert "nearest is DP8xTP1 EP8" in str(e.value) and "--backend vllm or sglang runs DP4xTP2 EP8" in str(e.value)
    assert deployment("deepseek-r1", gpu="h200", num_gpus=8, tp=2, attention_dp=4, ep=8, engine="sglang").plan.adp == 4
    # vLLM at TP8 EP2 (MoE TP 8 / 2 = 4): its experts go EP over the whole stage, 8 x 1 x 1 = EP8
    with pytest.raises(InputError, match=r"not EP2 x MoE-TP4\): the nearest is TP8 EP8; --backend trtllm or sglang runs TP8 EP2/MoE-TP4"):
        deployment("deepseek-r1", gpu="h200", num_gpus=8, tp=8, ep=2, engine="vllm")
    # the CLI: one line, exit 2
    code, out, err = cli("estimate", "deepseek-r1", "--gpu", "h200", "--gpus", "8", "--attention-dp", "4", "--tp", "2", "--ep", "8")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "plan: 'DP4xTP2 EP8' is not valid" in err and "Traceback" not in err


@pytest.mark.parametrize("gpu,weight,why", [("h100", "nvfp4", "no FP4 GEMM before Blackwell"), ("h200", "fp4", "no FP4 GEMM before Blackwell"),
                                            ("a100", "fp8", "no FP8 GEMM before Ada"), ("a100", "fp8_block", "no FP8 GEMM before Ada")])
def test_a_format_tensorrt_llm_has_no_kernel_for_is_refused(gpu, weight, why):
    with pytest.raises(InputError) as e:
        deployment("llama-3.1-8b", gpu=gpu, weight_dtype=weight)
    assert e.value.field == "weight_dtype" and why in str(e.value) and str(e.value).endswith("--backend vllm runs it weight-only (Marlin)")
    # vLLM runs it weight-only, as priced (spec.precision.executable's Marlin note)
    assert deployment("llama-3.1-8b", gpu=gpu, weight_dtype=weight, engine="vllm").backend == "vllm"
    code, _, err = cli("export", "llama-3.1-8b", "--gpu", gpu, "--gpus", "1", "--weight-dtype", weight, "--concurrency", "8", "-o", "x.yaml")
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1


def test_formats_tensorrt_llm_runs_stay_priced():
    for gpu, weight in (("b200", "nvfp4"), ("h100", "fp8"), ("l40s", "fp8"), ("h100", "mxfp4"), ("a100", "bf16"), ("rtx-pro-6000", "nvfp4")):
        assert deployment("llama-3.1-8b", gpu=gpu, weight_dtype=weight).backend == "trtllm"


def test_a_search_leaves_out_the_plans_and_formats_the_engine_does_not_run():
    r1, h200 = get_model("deepseek-r1"), get_gpu("h200")
    every, _ = plans(r1, h200, SearchSpace(8), engine=get_engine("sglang"))
    trt, _ = plans(r1, h200, SearchSpace(8), engine=get_engine("trtllm"))
    dxt = (np.asarray(every.adp) > 1) & (np.asarray(every.tp) > 1)
    assert dxt.any() and len(trt.tp) == len(every.tp) - int(dxt.sum())  # exactly the DP x TP plans dropped
    with pytest.raises(InputError, match="plan: 'DP4xTP2 EP8' is not valid"):  # fixed sizes leaving only such plans
        plans(r1, h200, SearchSpace(8, tp=(2,), adp=(4,), ep=(8,)), engine=get_engine("trtllm"))
    # a format named for the search is refused; left to the defaults, one the engine has none of is not searched
    with pytest.raises(InputError, match="no FP4 GEMM before Blackwell"):
        search(r1, h200, calibration_for(h200), SearchSpace(8, precisions=(Precision.of("nvfp4", kv="fp8"),)), isl=1024, osl=1024)
    nv = get_model("deepseek-r1-nvfp4")
    r = search(nv, h200, calibration_for(h200), SearchSpace(8, batches=(1, 8, 64)), isl=1024, osl=1024)
    assert r.points and {p.deployment.precision.weight.name for p in r.points} == {"fp8"}


@pytest.mark.parametrize("gpu,prec", [("h200", None), ("b200", Precision.of("fp8", kv="fp8"))])
@pytest.mark.parametrize("floor", [None, 30.0])
def test_every_tensorrt_llm_frontier_point_of_deepseek_r1_exports(gpu, prec, floor):
    """newc7 #1: `export deepseek-r1 --gpu h200 --gpus 8 --min-tps-user 30` failed on the DP4xTP2 EP8 point the search
    recommended; every point the search yields now exports, and none is DP x TP."""
    r1, g = get_model("deepseek-r1"), get_gpu(gpu)
    space = SearchSpace(8, precisions=(prec,) if prec else ())
    r = search(r1, g, calibration_for(g), space, isl=1024, osl=1024, min_tps_user=floor)
    assert len(r.points) >= 5
    for p in r.points:
        dep = p.deployment
        assert not (dep.plan.adp > 1 and dep.plan.tp > 1), dep.plan.label()
        assert "tensor_parallel_size" in export_config(r1, dep, engine="trtllm", concurrency=p.concurrency)
        if floor:
            assert p.tok_s_per_user >= floor


def test_the_bundled_campaigns_plans_all_run():
    """Every plan and format the measured campaigns ran builds (Deployment applies the rule): the rule refuses nothing
    an engine was seen to run (TensorRT-LLM's attention-DP rows all have TP 1; vLLM's EP rows EP = TP x DP)."""
    import csv
    from importlib import resources

    from llm_codesign.spec.hardware import catalog

    base = resources.files("llm_codesign").joinpath("data/measurements")
    seen = set()
    for name in ("serving_inferencex_blackwell.csv", "serving_measured_blackwell.csv", "trtllm_perf_overview.csv", "published_runs.csv",
                 "serving_inferencex_mi355x.csv"):
        for row in csv.DictReader(base.joinpath(name).open()):
            ints = [int(row[k] or 1) for k in ("tp", "pp", "ep", "moe_tp", "attention_dp")]
            if row["gpu"] in catalog():  # the perf overview's GH200 rows are not priced (no catalog entry)
                seen.add((row["gpu"], row["backend"], row["weight_dtype"], *ints))
    assert len(seen) > 40
    for gpu, backend, weight, tp, pp, ep, moe_tp, adp in seen:
        w = {"int4_wo": "int4"}.get(weight, weight)
        Deployment(gpu=get_gpu(gpu), num_gpus=tp * adp * pp, plan=Plan(tp, pp, ep, moe_tp, adp, 1), precision=Precision.of(w), backend=backend)



def test_validate_lists_a_row_its_engine_cannot_run_as_unmodeled():
    """A user's run file: a TensorRT-LLM row at DP4xTP2 is listed with estimate's refusal, the same run at DP8xTP1 priced."""
    import csv
    from importlib import resources

    from llm_codesign.measure.validate import predict_serving

    path = resources.files("llm_codesign").joinpath("data/measurements/serving_inferencex_blackwell.csv")
    row = next(r for r in csv.DictReader(path.open()) if r["backend"] == "trtllm" and r["attention_dp"] == "8" and not r["spec_method"])
    bad = {**row, "tp": "2", "attention_dp": "4"}  # 2 x 4 = the same 8 GPUs, EP8
    preds, unmodeled = predict_serving([row, bad])
    assert preds[0]["tpot_ms"] > 0 and preds[1] == {}
    assert [u["row"] for u in unmodeled] == [1] and "line 3 plan: 'DP4xTP2 EP8' is not valid" in unmodeled[0]["reason"]
    # a disaggregated row's pool alike (an array Deployment of every row's pools would refuse the whole file)
    from llm_codesign.measure.validate import _pool_unlaunched

    pools = {"model": "deepseek-r1", "backend": "trtllm", "prefill_tp": "2", "prefill_attention_dp": "4", "prefill_ep": "8", "decode_tp": "1",
             "decode_attention_dp": "8", "decode_ep": "8"}
    assert _pool_unlaunched(pools, 5).startswith("line 5 prefill plan: 'DP4xTP2 EP8' is not valid")
    assert _pool_unlaunched({**pools, "prefill_tp": "1"}, 5) is None
    # leftA #3: the plan judged is the one _plan prices (the row's model's: a dense model's pools hold no EP), one builder
    from llm_codesign.measure.validate import _plan

    dense = {**pools, "model": "llama-3.1-70b"}
    assert _plan([dense], "prefill", False).label() == "DP4xTP2"
    assert _pool_unlaunched(dense, 5).startswith("line 5 prefill plan: 'DP4xTP2' is not valid")
    assert _pool_unlaunched({**pools, "model": "no-such-model"}, 5) is None  # _resolve names the model


def test_a_plan_whose_sides_disagree_gets_estimates_refusal_with_plans_the_engine_runs():
    # review r8 #1, #2: the engine's plan rule ran before the GPU count's: vLLM TP2 EP8 on 8 GPUs read "--backend trtllm or
    # sglang runs TP2 EP8" beside TP2 EP2 (2 GPUs); and the sides' advice offered TensorRT-LLM DP4xTP2 EP8, which it refuses
    from conftest import cli

    code, _, err = cli("estimate", "deepseek-r1", "--gpu", "h200", "--gpus", "8", "--tp", "2", "--ep", "8", "--backend", "vllm",
                       "--concurrency", "8")
    assert code == 2 and err.startswith("error: deployment: 'TP2 EP8 on 8 GPUs' is not valid")
    # attention 2 GPUs, experts 8: EP 2 over the attention's, or attention DP 4 (vLLM runs DP x TP)
    assert err.rstrip().endswith("plans that agree: TP2 EP2 on 2 GPUs (ep 2) or DP4xTP2 EP8 on 8 GPUs (attention_dp 4)")
    code, _, err = cli("estimate", "deepseek-r1", "--gpu", "h200", "--gpus", "8", "--tp", "2", "--ep", "8", "--concurrency", "8")
    assert code == 2 and err.rstrip().endswith("plans that agree: TP2 EP2 on 2 GPUs (ep 2)")  # TensorRT-LLM: no DP x TP


def test_roofline_refuses_a_format_its_engine_has_no_kernel_for():
    from conftest import cli

    code, _, err = cli("roofline", "llama-3.1-8b", "--gpu", "a100", "--weight-dtype", "fp8")
    assert code == 2 and err.startswith("error: weight_dtype: 'fp8' is not valid; a format TensorRT-LLM runs on A100")
    assert cli("roofline", "llama-3.1-8b", "--gpu", "a100", "--weight-dtype", "fp8", "--backend", "vllm")[0] == 0


def test_atoms_plan_rule():
    """ROCm/ATOM@ffdf3bb5: --enable-dp-attention launches TP x DP ranks of tensor_parallel_size 1 and asserts pp_size 1
    (engine_core_mgr.py:152-162); its experts go EP over the whole flattened width with MoE-TP 1 (moe.py:217-305)."""
    atom = get_engine("atom")
    # DP8xTP1 EP8 | DP4xTP2 EP8 | TP8 EP8 | TP8 (MoE-TP8) | DP4xTP1 PP2 EP4 | TP4 PP2 EP4 | TP8 EP2/MoE-TP4
    plan = Plan(tp=np.array([1, 2, 8, 8, 1, 4, 8]), pp=np.array([1, 1, 1, 1, 2, 2, 1]), ep=np.array([8, 8, 8, 1, 4, 4, 2]),
                moe_tp=np.array([1, 1, 1, 8, 1, 1, 4]), adp=np.array([8, 4, 1, 1, 4, 1, 1]))
    assert atom.runs_plans(plan).tolist() == [True, False, True, True, False, True, False]
    # the nearest on the same GPUs: 4 x 2 = 8 ranks of TP 1; the 4 DP ranks of a 2-stage pipeline as TP4 x PP2, EP4 kept
    assert atom.plan_refusal(Plan(tp=2, adp=4, ep=8))[2].label() == "DP8xTP1 EP8"
    assert atom.plan_refusal(Plan(tp=1, pp=2, adp=4, ep=4))[2].label() == Plan(tp=4, pp=2, ep=4).label()
    # both faults at once: DP4xTP2 with EP2 x MoE-TP4 -> DP8xTP1 with EP over the 1 x 8 x 1 = 8 GPUs of the stage
    why, _, near = atom.plan_refusal(Plan(tp=2, adp=4, ep=2, moe_tp=4))
    assert near.label() == "DP8xTP1 EP8" and "not DP x TP" in why and "not EP2 x MoE-TP4" in why
    with pytest.raises(InputError, match=r"a plan ATOM launches .*: the nearest is DP8xTP1 EP8; --backend vllm or sglang runs DP4xTP2 EP8"):
        deployment("deepseek-r1", gpu="mi355x", num_gpus=8, tp=2, attention_dp=4, ep=8, engine="atom")
    assert deployment("deepseek-r1", gpu="mi355x", num_gpus=8, tp=1, attention_dp=8, ep=8, engine="atom").plan.adp == 8


def test_tensorrt_llm_has_no_block_fp8_moe_on_ada():
    """Its block-FP8 MoE GEMM dispatches SM90 and SM120 only (thop/fp8BlockScalingGemm.cpp@1e9d2162); its dense block-FP8
    GEMM has an Ada kernel (case 89): a MoE in fp8_block on an L40S is refused, a dense model priced, SM120 and Hopper run both."""
    with pytest.raises(InputError) as e:
        deployment("qwen3-30b-a3b", gpu="l40s", num_gpus=2, tp=2, weight_dtype="fp8_block")
    assert e.value.field == "weight_dtype" and "no block-FP8 grouped GEMM on Ada" in str(e.value)
    assert str(e.value).endswith("--backend vllm runs it (its Triton block-FP8 MoE)")
    assert deployment("qwen3-30b-a3b", gpu="l40s", num_gpus=2, tp=2, weight_dtype="fp8_block", engine="vllm").backend == "vllm"
    for model, gpu in (("llama-3.1-8b", "l40s"), ("qwen3-30b-a3b", "rtx-pro-6000"), ("qwen3-30b-a3b", "h100")):
        assert deployment(model, gpu=gpu, num_gpus=2, tp=2, weight_dtype="fp8_block").backend == "trtllm"
    # per-tensor FP8 experts run on Ada (its CUTLASS FP8 MoE), as before
    assert deployment("qwen3-30b-a3b", gpu="l40s", num_gpus=2, tp=2, weight_dtype="fp8").backend == "trtllm"
    # the rule sees the model only where it is known: a Deployment alone is not refused, lc.deployment and the CLI are
    fp8b = Precision.of("fp8_block")
    assert Deployment(gpu=get_gpu("l40s"), num_gpus=2, plan=Plan(tp=2, ep=2, moe_tp=1), precision=fp8b).engine.name == "trtllm"
    code, _, err = cli("estimate", "qwen3-30b-a3b", "--gpu", "l40s", "--gpus", "2", "--tp", "2", "--weight-dtype", "fp8_block")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "for a MoE: it has no block-FP8 grouped GEMM on Ada" in err
    # a search left to its defaults on an L40S searches the formats it runs; one named is refused
    m, g = get_model("qwen3-30b-a3b"), get_gpu("l40s")
    with pytest.raises(InputError, match="no block-FP8 grouped GEMM on Ada"):
        search(m, g, calibration_for(g), SearchSpace(2, precisions=(fp8b,)), isl=1024, osl=1024)


def test_export_refuses_a_plan_with_estimates_and_the_engines_rule_not_its_own():
    """uxleft2: the exporters' own plan refusals (field "engine", "export this plan for another engine") duplicated
    Engine.runs_plans; they are gone and export applies estimate's check, under which Deployment holds the engine's rule."""
    from llm_codesign.explore.export_engines import base

    r1, h200 = get_model("deepseek-r1"), get_gpu("h200")
    assert not hasattr(base, "refuse")
    # vLLM TP2 EP8 on 8 GPUs: attention 2 x 1 x 1 = 2 GPUs, experts 8 x 1 = 8; Deployment leaves sides that disagree to
    # estimate, so it builds, and export refuses it as estimate does, with the plans that agree (EP 2 over the 2, or DP 8 / 2 = 4)
    dep = Deployment(gpu=h200, num_gpus=8, plan=Plan(2, 1, 8, 1, 1, 1), precision=Precision.of("fp8"), backend="vllm")
    with pytest.raises(InputError) as e:
        export_config(r1, dep, engine="vllm", concurrency=8)
    assert e.value.field == "deployment" and e.value.value == "TP2 EP8 on 8 GPUs"
    assert str(e.value).endswith("plans that agree: TP2 EP2 on 2 GPUs (ep 2) or DP4xTP2 EP8 on 8 GPUs (attention_dp 4)")
    # TensorRT-LLM DP4xTP2 EP4: attention 2 x 4 = 8 GPUs, experts 4; both plans that agree (EP 8 / 1 = 8 over the 8: DP4xTP2
    # EP8; attention DP 4 / 2 = 2 over the 4: DP2xTP2 EP4) are DP x TP, which TensorRT-LLM does not launch: none is offered
    dep = Deployment(gpu=h200, num_gpus=8, plan=Plan(2, 1, 4, 1, 4, 1), precision=Precision.of("fp8"), backend="trtllm")
    with pytest.raises(InputError, match=r"the MoE side 4 \(ep\*moe_tp\*pp\)$"):
        export_config(r1, dep, engine="trtllm", concurrency=8)
    # a whole plan the engine does not launch never reaches an exporter: Deployment refuses it with the engine's words
    with pytest.raises(InputError, match=r"plan: 'DP4xTP2 EP8' is not valid; a plan TensorRT-LLM launches .* nearest is DP8xTP1 EP8"):
        Deployment(gpu=h200, num_gpus=8, plan=Plan(2, 1, 8, 1, 4, 1), precision=Precision.of("fp8"), backend="trtllm")
