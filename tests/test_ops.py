import numpy as np
import pytest

from llm_codesign.ops import Batch, Sharding, distinct_experts, forward_ops, step_time
from llm_codesign.registry import get_model


def _sum(ops, attr, kinds=("gemm",)):
    return float(sum(np.sum(getattr(o, attr) * o.count) for o in ops if o.kind in kinds))


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-32b", "nemotron-super-49b"])
def test_linear_flops_are_two_times_active_params_per_token(name, h100, cal_h100):
    m = get_model(name)
    B = 32
    ops = forward_ops(m, h100, cal_h100, m.default_precision, Sharding(), Batch(dec_seqs=B, dec_ctx=512))
    assert _sum(ops, "flops") == pytest.approx(2 * m.active_params * B, rel=1e-9)


def test_moe_flops_match_active_params_at_large_batch(b200):
    from llm_codesign.calibration import calibration_for

    m = get_model("deepseek-v3")
    cal = calibration_for(b200)
    T = 4096
    ops = forward_ops(m, b200, cal, m.default_precision, Sharding(), Batch(pf_tokens=T, pf_seqs=4, pf_ctx=0))
    lin = _sum([o for o in ops if o.name != "lm_head"], "flops")
    # LM head runs on 4 sampled positions only; everything else on all tokens
    expect = 2 * (m.active_params - m.vocab * m.hidden) * T
    assert lin == pytest.approx(expect, rel=1e-6)


def test_attention_decode_flops_golden(h100, cal_h100):
    m = get_model("llama-3.1-8b")
    ops = forward_ops(m, h100, cal_h100, m.default_precision, Sharding(), Batch(dec_seqs=4, dec_ctx=1000))
    core = next(o for o in ops if o.name == "layer/attn/core_decode")
    # QK^T and PV: 2 x B x heads x ctx x (128 + 128) per layer
    assert float(core.flops) == 2 * 4 * 32 * 1000 * 256
    # KV read: B x ctx x 8 KV heads x 256 values x 2 bytes (+ q/o)
    assert float(core.bytes) >= 4 * 1000 * 8 * 256 * 2


def test_flops_unchanged_by_tp(h100, cal_h100):
    m = get_model("llama-3.1-70b")
    b = Batch(dec_seqs=64, dec_ctx=2048)
    per = [_sum(forward_ops(m, h100, cal_h100, m.default_precision, Sharding(tp=tp), b), "flops", ("gemm", "attention")) * tp
           for tp in (1, 2, 4, 8)]
    assert per == pytest.approx([per[0]] * 4, rel=1e-9)


def test_distinct_experts():
    assert distinct_experts(256, 8, 1) == pytest.approx(8)
    assert distinct_experts(256, 8, 10_000) == pytest.approx(256)
    assert 8 < distinct_experts(256, 8, 16) < 128


def test_operator_names_are_slash_paths(h100, cal_h100):
    m = get_model("deepseek-r1")
    names = [o.name for o in forward_ops(m, h100, cal_h100, m.default_precision, Sharding(tp=8, ep=8), Batch(dec_seqs=8, dec_ctx=100))]
    assert "layer1/moe/experts_gate_up" in names and "layer0/ffn/gate_up" in names and names[-1] == "lm_head"
    assert float(step_time(forward_ops(m, h100, cal_h100, m.default_precision, Sharding(tp=8, ep=8), Batch(dec_seqs=8, dec_ctx=100)))) > 0
