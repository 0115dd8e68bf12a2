"""spec/engines/sglang.py: SGLang's defaults as its server_args.py derives them (hand-derived values), and
its exporter (explore/export_engines/sglang.py)."""
import json

import numpy as np
import pytest
from conftest import cli, run
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llm_codesign.spec.engines import SGLANG
from llm_codesign.spec.engines.sglang import static_fraction
from llm_codesign.spec.hardware import catalog, get_gpu
from llm_codesign.spec.plan import Plan


def test_static_fraction_hand_derived():
    # H100 (81,559 MiB reported): cuda_graph_max_bs 256 at TP1; reserved = 512 + 1.5 x 8192 + 2 x 256 + 1024 x 1/8
    # = 13,440 MiB (above the 10 GiB floor) -> (81,559 - 13,440) / 81,559 = 0.835
    g = get_gpu("h100")
    mem = g.memory_bytes / 2**20
    assert float(static_fraction(g, 1)) == pytest.approx(round((mem - 13440) / mem, 3))


def test_static_fraction_golden():
    # ServerArgs._handle_gpu_memory_settings by hand, in MiB. B200 reports 183359: chunk 16384, max graph
    # batch 512, TP8: reserved 512 + 24576 + 1024 + 1024 = 27136 -> 156223 / 183359 = 0.852; attention DP 8
    # (TP1 x 8 ranks, tp_size 8) adds 512 x 8 x 3 + 512 x 8 x 1.5 = 18432 -> 137791 / 183359 = 0.751
    b200 = get_gpu("b200")
    assert float(static_fraction(b200, 8)) == 0.852
    assert float(static_fraction(b200, 1, 1, 8)) == 0.751
    # H200 (143771 MiB, under 160 GiB): chunk 8192, batch 512 at TP8: 14848 reserved -> 0.897
    assert float(static_fraction(get_gpu("h200"), 8)) == 0.897
    # a 2048 chunk at TP1 reserves 4736, under the 10 GiB floor of GPUs over 60 GiB -> 173119 / 183359
    assert float(static_fraction(b200, 1, chunk=2048)) == 0.944
    # an MTP draft adds 2 GiB: 29184 -> 0.841
    assert float(static_fraction(b200, 8, spec_method="mtp")) == 0.841


@settings(max_examples=60, deadline=None)
@given(gid=st.sampled_from(sorted(catalog())), tp=st.sampled_from([1, 2, 4, 8]), adp=st.sampled_from([1, 2, 4, 8]),
       spec=st.sampled_from([None, "mtp", "draft"]))
def test_sglang_fraction_shrinks_with_what_it_reserves(gid, tp, adp, spec):
    # SGLang reserves more for more GPUs per stage, attention DP and draft models, never the whole GPU
    assume(tp * adp <= 8)  # one node: SGLang's own heuristics (beyond it a small GPU can go below zero)
    g = get_gpu(gid)
    f = float(static_fraction(g, tp, 1, adp, spec_method=spec))
    assert 0.4 < f < 0.96
    assert float(static_fraction(g, tp * 2, 1, adp, spec_method=spec)) <= f
    assert float(static_fraction(g, tp, 1, adp * 2, spec_method=spec)) <= f
    assert float(static_fraction(g, tp, 1, adp, spec_method="draft")) <= float(static_fraction(g, tp, 1, adp, spec_method=None))


def test_kv_fraction_follows_the_plan_and_the_draft():
    """Its KV budget's fraction is mem_fraction_static for the plan (kv_fraction), the draft's reserve
    only where a draft runs (a sweep's k = 0); without a plan, the fallback 0.88 of kv_budget."""
    b200 = get_gpu("b200")
    plan = Plan(8)
    assert SGLANG.kv_fraction(b200, plan, chunk=16384.0).tolist() == 0.852  # test_static_fraction_golden's TP8
    f = SGLANG.kv_fraction(b200, plan, chunk=16384.0, spec_method="mtp", draft_len=np.array([0.0, 3.0]))
    assert f.tolist() == [0.852, 0.841]
    assert SGLANG.kv_budget == ("static", 0.88, 0.5)


def test_request_pool_and_admission():
    b200 = get_gpu("b200")
    # int(KV tokens / context x 512) clipped to [2048, 4096], at most half the KV tokens: 1e6 / 131072 x 512 = 3906
    assert float(SGLANG.max_batch(b200, 1e6, 131072)) == 3906.0
    assert float(SGLANG.max_batch(b200, 3000.0, 131072)) == 1500.0  # half of 3,000 KV tokens
    assert SGLANG.max_batch(b200) == 4096.0  # no KV size known
    assert SGLANG.admission == (0.098, 4096.0)  # new_token_ratio 0.7 x 0.14, clipped at 4096


def test_export_states_its_static_fraction():
    """The exported --mem-fraction-static is the fraction the estimate priced (kv_fraction)."""
    from llm_codesign.explore.export_engines.sglang import sglang_options
    from llm_codesign.spec.plan import Deployment
    from llm_codesign.spec.registry import get_model

    llama = get_model("llama-3.1-70b")
    dep = Deployment(gpu=get_gpu("b200"), num_gpus=8, plan=Plan(8), precision=llama.default_precision, backend="sglang")
    o = sglang_options(llama, dep, 64)
    assert (o["tp-size"], o["chunked-prefill-size"], o["mem-fraction-static"]) == (8, 16384, 0.852)


def test_aggregated_prices_a_ranks_share_of_the_servers_chunk_under_attention_dp(b200):
    """SGLang runs chunked_prefill_size // dp_size on each attention-DP rank (_handle_data_parallelism, server_args.py:2117
    @0.5.9), after sizing its memory on the server's figure (_handle_gpu_memory_settings runs first): the aggregated model's
    step budget (engine_budget) is the rank's, as the disaggregated prefill pool's is, and its fraction the server's."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.aggregated import engine_budget
    from llm_codesign.serve.estimate import prefill_ops
    from llm_codesign.spec.engines import TRTLLM
    from llm_codesign.spec.plan import Workload, deployment
    from llm_codesign.spec.registry import get_model

    dp8 = Plan(tp=1, ep=8, moe_tp=1, adp=8)
    mnt, (budget, fraction, _) = engine_budget(b200, engine=SGLANG, plan=dp8)
    assert (mnt.item(), budget) == (2048.0, "static")  # B200's default 16,384 // 8
    assert fraction.item() == static_fraction(b200, 1, 1, 8, chunk=16384.0).item()  # reserved for the server's 16,384
    assert engine_budget(b200, engine=SGLANG, max_num_tokens=20000, plan=Plan(tp=1, ep=3, moe_tp=1, adp=3))[0].item() == 6666.0
    assert engine_budget(b200, engine=SGLANG, plan=Plan(tp=8, ep=8, moe_tp=1))[0].item() == 16384.0  # no attention DP: whole
    assert engine_budget(b200, engine=TRTLLM, plan=dp8)[0].item() == 8192.0  # each TensorRT-LLM rank takes max_num_tokens
    # one 8k prompt's prefill chunk on a rank: 2,048 tokens, so the output projection (128 heads x 128 wide -> 7,168, attention
    # TP 1) does 2 x 2,048 x 7,168 x 16,384 FLOPs a layer, not 8,192 rows' worth
    m = get_model("deepseek-r1")
    dep = deployment(m, gpu=b200, num_gpus=8, attention_dp=8, ep=8, engine="sglang")
    o = next(op for op in prefill_ops(m, dep, calibration_for(b200), Workload(isl=8192, osl=1024)) if op.name == "layer0/attn/o")
    assert (float(o.flops), float(o.count)) == (2.0 * 2048 * 7168 * 16384, 61.0)


def test_a_plan_whose_ranks_get_no_token_of_the_budget_does_not_fit(b200):
    """A search's plan (arrays, not refused at the edge) that leaves an attention-DP rank none of the server's figure
    never prefills: it does not fit, and max_running gives it no sequence; ranks given 8 // 8 = 1 token still do."""
    from llm_codesign.cost.calibration import calibration_for
    from llm_codesign.serve.aggregated import Serving, evaluate, max_running
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    m, plan = get_model("deepseek-r1"), Plan(tp=1, ep=8, moe_tp=1, adp=8)
    at = Serving(gpu=b200, prec=Precision.of("fp8_block"), plan=plan, engine=SGLANG, max_num_tokens=np.array([8.0, 7.0]))
    r = evaluate(m, at, cal=calibration_for(b200), concurrency=1, isl=1024, osl=128)
    assert r["fits"].tolist() == [True, False]
    assert (max_running(m, at, isl=1024, osl=128) > 0).tolist() == [True, False]


def test_a_budget_leaving_an_attention_dp_rank_no_token_is_refused_in_aggregated_serving():
    r = run("estimate", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--attention-dp", "8", "--ep", "8", "--backend", "sglang",
            "--max-num-tokens", "4", "--concurrency", "1")
    assert r.returncode == 2 and not r.stdout and r.stderr.strip().splitlines() == [
        "error: max_num_tokens: 4 is not valid; at least 8: SGLang splits a prefill step's budget over its 8 attention-DP ranks"]


def test_estimate_names_a_ranks_share_of_the_budget_under_attention_dp():
    # SGLang splits its 16,384-token chunk over 8 attention-DP ranks: 16,384 // 8 = 2,048 a rank (server_args.py:2117@0.5.9);
    # the table had shown the server's figure alone
    args = ("estimate", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--attention-dp", "8", "--ep", "8", "--backend", "sglang",
            "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--concurrency", "64")
    code, out, _ = cli(*args, "--json")
    assert code == 0
    d = json.loads(out)
    assert (d["max_num_tokens"], d["rank_step_tokens"]) == (16384, 2048)
    code, out, _ = cli(*args)
    assert code == 0 and "16384 (sglang); 2048 a rank" in out
    code, out, _ = cli("estimate", "deepseek-r1", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--ep", "8", "--backend", "sglang",
                       "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--concurrency", "64")
    assert code == 0 and "16384 (sglang) " in out and "a rank" not in out


def test_a_deployments_rank_share_of_the_step_budget_is_one_int():
    # Deployment.rank_step_tokens, what estimate's JSON, its prefill chunk and its over-capacity line read: SGLang's 16,384
    # on a B200 split over 8 attention-DP ranks, 2,048 a rank (16,384 // 8); 16,384 // 3 = 5,461 at 3 ranks; TensorRT-LLM's
    # 8,192 each rank's whole; over a sweep's plans, one int per plan
    from llm_codesign.spec.plan import Deployment
    from llm_codesign.spec.registry import get_model

    dsr1, b200 = get_model("deepseek-r1"), get_gpu("b200")
    deps = [Deployment(gpu=b200, num_gpus=8, plan=Plan(1, ep=8, adp=8), precision=dsr1.default_precision, backend=e) for e in ("sglang", "trtllm")]
    assert [(d.step_tokens, d.rank_step_tokens, type(d.rank_step_tokens)) for d in deps] == [(16384, 2048, int), (8192, 8192, int)]
    sweep = Deployment(gpu=b200, num_gpus=8, plan=Plan(1, adp=np.array([1, 3, 8])), precision=dsr1.default_precision, backend="sglang")
    assert sweep.rank_step_tokens.tolist() == [16384, 5461, 2048] and sweep.rank_step_tokens.dtype.kind == "i"
