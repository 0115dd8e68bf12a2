"""spec/plan.py: the Deployment record round-trips, the builder fills sizes as engines do, and a
checkpoint's own weight format keeps what the checkpoint keeps wider."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.explore.search import SearchSpace, parse_precisions, point_breakdown, search
from llm_codesign.serve.metrics import evaluate
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan, SpecDecoding, Workload, deployment, precision_for, validity
from llm_codesign.spec.registry import get_model


def test_checkpoint_format_keeps_bf16_attention():
    # gpt-oss ships MXFP4 experts and BF16 attention (quantization_config modules_to_not_convert);
    # naming its own format must not quantise the attention projections too
    m = get_model("openai/gpt-oss-120b")
    assert precision_for(m, "mxfp4").attn.name == "bf16"
    assert all(p.attn.name == "bf16" for p in parse_precisions("mxfp4", None, None, m, get_gpu("b200")))
    assert precision_for(m, "fp8").attn.name == "fp8"  # another format re-quantises everything


def test_builder_fills_sizes_as_engines_do():
    m = get_model("deepseek-r1")
    d = deployment(m, gpu="b200", num_gpus=8, attention_dp=8, ep=8)
    assert (d.plan.tp, d.plan.adp, d.plan.ep, d.plan.moe_tp) == (1, 8, 8, 1)
    d = deployment(get_model("llama-3.1-70b"), gpu="h200", num_gpus=8, engine="VLLM")
    assert (d.plan.tp, d.backend) == (8, "vllm")  # engine names are case-insensitive, like GPU ids
    with pytest.raises(InputError, match="backend"):
        deployment(m, gpu="b200", engine="tgi")
    with pytest.raises(InputError, match="isl"):
        Workload(isl=0)
    with pytest.raises(InputError, match="concurrency"):
        Workload(concurrency=10**23)


@pytest.mark.parametrize("change,line", [
    # half a speculation was priced as none, in silence: a method without a draft length, a length without a method,
    # an acceptance without either
    ({"spec": "bogus"}, "spec: 'bogus' is not valid; one of: mtp, eagle3, draft, ngram"),
    ({"spec": "mtp"}, "draft_len: 0 is not valid; an integer from 1 to 16"),
    ({"draft_len": 3}, "spec: None is not valid; mtp, eagle3, draft, ngram with draft_len 3 (none with draft_len 0)"),
    ({"acceptance_rates": [0.8]}, "acceptance_rates: [0.8] is not valid; left out where spec is none (a record without speculation carries none)"),
    # (was a ValueError from int())
    ({"spec": "mtp", "draft_len": "abc", "acceptance": 2.0}, "draft_len: 'abc' is not valid; an integer from 1 to 16"),
    ({"spec": "mtp", "draft_len": 1.5, "acceptance": 2.0}, "draft_len: 1.5 is not valid; an integer from 1 to 16"),
])
def test_a_record_with_half_a_speculation_is_one_line(change, line):
    rec = deployment(get_model("llama-3.1-8b"), gpu="h100", num_gpus=1).to_dict()
    assert rec["spec"] is None and rec["draft_len"] == 0
    with pytest.raises(InputError) as e:
        Deployment.from_dict({**rec, **change})
    assert str(e.value) == line


def test_record_round_trips():
    m = get_model("openai/gpt-oss-120b")
    d = deployment(m, gpu="b200", num_gpus=8, ep=8, weight_dtype="mxfp4", kv_dtype="fp8", spec="eagle3",
                   acceptance_rates="0.8,0.6,0.5")
    assert Deployment.from_dict(d.to_dict()) == d.__class__(**{**d.__dict__, "max_num_tokens": d.step_tokens})
    assert d.to_dict()["attn_weight_dtype"] == "bf16"


def test_spec_at_a_draft_length_keeps_its_acceptance():
    s = SpecDecoding("mtp", 3, mean_accepted=2.5)
    for k in (1, 2, 3, 5):
        assert s.at(k).accepted() == pytest.approx(float(s.accepted(k)), rel=1e-12)


def test_every_frontier_point_reproduces_and_its_breakdown_is_its_own():
    # gpt-oss-120b on 8xB200 with its own MXFP4 format: each point rebuilt from its record gives the
    # point's figures, and its breakdown prices the BF16 attention projections the point was priced with
    m, g = get_model("openai/gpt-oss-120b"), get_gpu("b200")
    cal = calibration_for(g)
    r = search(m, g, cal, SearchSpace(8, precisions=parse_precisions("mxfp4", None, None, m, g)), isl=1024, osl=1024)
    assert len(r.points) > 10
    for p in r.points:
        d = p.to_dict()["deployment"]
        assert d["attn_weight_dtype"] == "bf16" and Deployment.from_dict(d) == p.deployment  # the record rebuilds the point's own
        one = evaluate(m, p.deployment, Workload(isl=1024, osl=1024, concurrency=p.concurrency), calibration=cal)
        assert one.tok_s_per_user.item() == pytest.approx(p.tok_s_per_user, rel=1e-9)
        assert one.output_tok_s_per_gpu.item() == pytest.approx(p.output_tok_s_per_gpu, rel=1e-9)
    p = r.points[0]
    rows = point_breakdown(m, cal, p.deployment, p.concurrency, isl=1024, osl=1024)
    qkv = [x for x in rows if x["name"].endswith("/attn/qkv")]
    assert qkv
    # the breakdown's step is the point's step: the slowest point's decode step within its TPOT
    assert sum(x["time_ms"] for x in rows) <= p.tpot_s * 1e3 * 1.0000001


def test_point_breakdowns_price_each_point_as_alone():
    """The batched breakdowns (a frontier's points of one deployment priced as one concurrency array)
    equal each point's own breakdown, row for row, on a frontier that mixes plans, precisions and
    MTP draft lengths at many batch sizes."""
    from llm_codesign.explore.search import point_breakdowns
    from llm_codesign.spec.plan import SpecDecoding

    m, g = get_model("deepseek-r1"), get_gpu("b200")
    cal = calibration_for(g)
    r = search(m, g, cal, SearchSpace(8, spec=SpecDecoding("mtp", 3, rates=(0.85, 0.7, 0.6)), spec_ks=(0, 1, 3)),
               isl=1024, osl=1024)
    points = [(p.deployment, p.concurrency) for p in r.points]
    assert len({(d.plan, d.spec, d.precision) for d, _ in points}) >= 3
    batched = point_breakdowns(m, cal, points, r.workload)
    for (d, c), rows in zip(points, batched, strict=True):
        alone = point_breakdown(m, cal, d, c, isl=1024, osl=1024)
        assert [x["name"] for x in rows] == [x["name"] for x in alone]
        assert [x["time_ms"] for x in rows] == pytest.approx([x["time_ms"] for x in alone], rel=1e-12)


def test_acceptance_forms():
    s = SpecDecoding("mtp", 3, rates=(0.9, 0.8, 0.5))
    assert float(s.accepted()) == pytest.approx(1 + 0.9 + 0.72 + 0.36)
    s2 = SpecDecoding("eagle3", 3, mean_accepted=2.94)  # EAGLE-3 Maverick k=3 (speculative_acceptance.csv)
    assert float(s2.accepted()) == pytest.approx(2.94, rel=1e-6)
    assert float(s2.accepted(1)) < float(s2.accepted(3)) < float(s2.accepted(5)) < 6
    with pytest.raises(InputError, match="acceptance"):
        SpecDecoding("mtp", 3, mean_accepted=5.0)


def test_validity_reasons():
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    r = validity(m, g, Plan(tp=np.array([8, 3, 16, 4, 1]), pp=np.array([1, 1, 1, 3, 96])), np.array([8, 3, 16, 12, 96]))
    from llm_codesign.spec.plan import REASONS

    # 80 layers over PP3 split 27/27/26 (priced, issue 20); 96 stages would leave stages without a layer
    assert [REASONS[i] if i >= 0 else None for i in r] == [None, "heads", "scale_up", None, "layers"]
    ds = get_model("deepseek-r1")
    r = validity(ds, g, Plan(tp=8, ep=3, moe_tp=1), 8)
    assert REASONS[int(r)] == "gpus_mismatch"
    # a refusal lists the sizes that would do
    from llm_codesign.spec.plan import reason_text

    # the TPs listed are those the GPU's scale-up domain holds as well (newc12 #8): 8 on an H100, 72 on a GB200 NVL72
    assert reason_text(m, g, REASONS.index("heads")) == "attention heads must be divisible by tp (heads [64]: tp 1, 2, 4 or 8)"
    assert reason_text(m, get_gpu("gb200"), REASONS.index("heads")).endswith("(heads [64]: tp 1, 2, 4, 8, 16, 32 or 64)")
    assert all(REASONS[int(validity(m, g, Plan(tp=t), t))] == "scale_up" for t in (16, 32, 64))  # why they are left out
    assert reason_text(ds, g, REASONS.index("experts")).endswith("(experts 256: ep 1, 2, 4, 8, 16, 32, 64, 128 or 256)")


def test_plan_parse_golden():
    # the one parser of a plan's text (disagg --prefill/--decode, export --engine dynamo): named sizes,
    # the rest 1, a MoE model's moe_tp what EP leaves of a stage's tp*attention_dp*kvp GPUs
    ds, llama = get_model("deepseek-r1"), get_model("llama-3.1-70b")
    assert Plan.parse("tp=8,ep=8", ds).sizes == (8, 1, 8, 1, 1, 1)
    assert Plan.parse("tp=8", ds).sizes == (8, 1, 1, 8, 1, 1)
    assert Plan.parse(" attention_dp=8 , EP=4 ", ds).sizes == (1, 1, 4, 2, 8, 1)
    assert Plan.parse("adp=2,tp=2,kvp=2,pp=3,ep=2", ds).sizes == (2, 3, 2, 4, 2, 2)
    assert Plan.parse("tp=4,pp=2", llama).sizes == (4, 2, 1, 1, 1, 1)  # dense: moe_tp stays 1
    assert Plan.parse("tp=8,moe_tp=2,ep=4", ds).sizes == (8, 1, 4, 2, 1, 1)  # given, not filled
    p = Plan.parse("tp=4,kvp=4,ep=16", ds)
    assert (int(p.gpus), p.label(), p.to_dict()) == (16, "TP4 Helix4 EP16", {"tp": 4, "pp": 1, "ep": 16, "moe_tp": 1, "attention_dp": 1, "kvp": 4})
    assert Plan.from_dict(p.to_dict()) == p
    sizes = "comma-separated sizes from 1 to 65,536 such as tp=4,ep=4 (keys: tp, pp, ep, moe_tp, attention_dp, kvp)"
    for text, valid in (("tp=0", sizes), ("tq=2", sizes), ("tp=x", sizes), ("tp=65537", sizes), ("", "at least one size, e.g. tp=8"),
                        ("tp=8,tp=4", "each size once (tp is given twice)"), ("adp=2,attention_dp=2", "each size once (attention_dp is given twice)")):
        with pytest.raises(InputError) as e:
            Plan.parse(text, ds, "decode")
        assert str(e.value) == f"decode: {text!r} is not valid; {valid}"


def test_plan_sweeps_index_and_broadcast():
    # a sweep's plans as arrays: take() indexes every size, at() is one plan of ints, broadcast() the
    # int64 arrays of one shape the serving model prices
    sweep = Plan(tp=np.array([8, 4, 2]), pp=np.array([1, 2, 4]), ep=8, moe_tp=np.array([1, 1, 1]))
    assert sweep.at(1) == Plan(4, 2, 8, 1, 1, 1) and type(sweep.at(1).tp) is int
    assert [x.tolist() for x in sweep.take(np.s_[1:, None]).sizes[:2]] == [[[4], [2]], [[2], [4]]]
    b = sweep.broadcast()
    assert all(x.dtype == np.int64 and x.shape == (3,) for x in b.sizes) and b.ep.tolist() == [8, 8, 8]
    assert sweep.label(2) == "TP2 PP4 EP8" and sweep.gpus.tolist() == [8, 8, 8]
