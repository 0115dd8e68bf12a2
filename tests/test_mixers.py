"""The mixers' operator builders behind their registry (cost.ops.op_builder): every kind the
normaliser builds has one, a new kind joins through the registries alone, and a kind without a
builder refuses to be priced instead of pricing 0."""
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from llm_codesign import api
from llm_codesign.cost import kernels, ops
from llm_codesign.spec import kinds
from llm_codesign.spec.kinds import DenseFfn, Ffn, Mixer
from llm_codesign.spec.model import Layer, ModelSpec
from llm_codesign.spec.plan import Plan, Workload


def _concrete(base):
    out, todo = [], [base]
    while todo:
        t = todo.pop()
        todo += t.__subclasses__()
        if t.__module__ == kinds.__name__ and not getattr(t, "__abstractmethods__", None):
            out.append(t)
    return out


@pytest.mark.parametrize("kind", _concrete(Mixer) + _concrete(Ffn), ids=lambda t: t.__name__)
def test_every_kind_has_its_own_builder(kind):
    # looked up by the exact type: DSA (an MLA) has its own, not MLA's
    assert kind in ops._BUILDERS


@dataclass(frozen=True, kw_only=True)
class StateMixer(Mixer):
    """A toy linear-attention mixer: per head a fixed head_dim x head_dim state, no KV cache."""

    kind: ClassVar[str] = "toy_state"
    heads: int
    head_dim: int

    def params(self, hidden):
        return 4 * hidden * self.heads * self.head_dim  # Q, K, V and the output

    def kv_values_per_token(self):
        return 0

    def kv_values_per_gpu(self, tp):
        return 0.0

    def state_bytes_per_seq(self):
        return self.heads * self.head_dim * self.head_dim * 2.0  # BF16

    @property
    def tp_heads(self):
        return (self.heads,)


def _state_ops(a: StateMixer, P: ops.Site, *, at, s, b, prec):
    width = a.heads * a.head_dim / s.tp
    flops = s.dec_tok * 4.0 * width * a.head_dim  # decay, update and read-out of each state
    nbytes = np.asarray(b.dec_seqs, float) * width * a.head_dim * 2.0 * 2.0  # each state read and written, BF16
    return [ops._gemm(P / "qkv", s.M, 3 * width, s.h, at, **s.fa),
            ops._attention(P / "state", flops, nbytes,
                           kernels.attention_decode_time(flops, nbytes, at.gpu, at.cal, seq_heads=s.dec_tok * a.heads / s.tp), at),
            ops._gemm(P / "o", s.M, s.h, width, at, **s.fa),
            ops._comm(P / "all_reduce", "all_reduce", s.T * s.h * 2.0, s.tp, at)]


def _toy_model(mixer):
    return ModelSpec("toy", hidden=4096, vocab=32000, groups=((Layer(mixer, DenseFfn(inter=14336)), 8),))


@pytest.fixture
def registry(monkeypatch):
    """The builders as registered, the test's own added to a copy that goes with the test."""
    monkeypatch.setattr(ops, "_BUILDERS", dict(ops._BUILDERS))


def test_a_new_mixer_prices_an_estimate_through_the_registries(registry):
    ops.op_builder(StateMixer, part="attention")(_state_ops)
    m = _toy_model(StateMixer(heads=32, head_dim=128))
    dep = api.deployment(m, gpu="h100", num_gpus=1)
    r = api.estimate(m, dep, Workload(isl=1024, osl=128, concurrency=8), breakdown=True).to_dict()
    by = {o["name"]: o for o in r["breakdown"]}
    # the decode step of 8 sequences, 8 layers: QKV 2 x 8 tokens x (3 x 4096) x 4096 FLOPs a layer
    assert by["layer/attn/qkv"]["flops"] == 8 * 2.0 * 8 * 3 * 4096 * 4096
    assert by["layer/attn/state"]["bytes"] == 8 * 8 * 4096 * 128 * 2.0 * 2.0
    assert by["layer/attn/state"]["time_ms"] > 0 and by["layer/ffn/gate_up"]["time_ms"] > 0
    # the memory holds each sequence's state, 8 layers of 32 x 128 x 128 in BF16, and no KV cache
    assert r["memory"]["state_gb"] == pytest.approx(8 * 8 * 32 * 128 * 128 * 2.0 / 1e9, rel=1e-12)
    assert r["memory"]["kv_gb"] == pytest.approx(0.0, abs=1e-12)
    assert r["memory"]["weights_gb"] == pytest.approx(
        (8 * (4 * 4096 * 4096 + 3 * 4096 * 14336) + 2 * 32000 * 4096) * 2.0 / 1e9, rel=1e-12)
    assert 0 < r["tpot_ms"] < 1e3 and 0 < r["ttft_ms"] < 1e4


def test_a_kind_without_a_builder_refuses_to_be_priced():
    @dataclass(frozen=True, kw_only=True)
    class Unpriced(StateMixer):
        kind: ClassVar[str] = "unpriced"

    m = _toy_model(Unpriced(heads=32, head_dim=128))
    dep = api.deployment(m, gpu="h100", num_gpus=1)
    # a subclass of a priced kind is not priced as its parent either: it registers its own builder
    with pytest.raises(NotImplementedError, match=r"^no op builder for Unpriced \(kind 'unpriced'\): register one with "
                                                  r"cost\.ops\.op_builder$"):
        api.estimate(m, dep, Workload(isl=1024, osl=128, concurrency=8))


def test_registering_checks_the_type_and_refuses_a_second_builder(registry):
    with pytest.raises(TypeError, match="op_builder takes a Mixer or Ffn type"):
        ops.op_builder("gqa", part="attention")
    with pytest.raises(ValueError, match=r"^GQA already has an op builder \(gqa_ops\)$"):
        ops.op_builder(kinds.GQA, part="attention")(_state_ops)


def test_linear_mixer_is_one_square_gemm_and_its_all_reduce(h100, cal_h100):
    m = ModelSpec("lin", hidden=4096, vocab=32000, groups=((Layer(kinds.LinearMixer(), kinds.NoFfn()), 4),))
    got = ops.layer_ops(m, m.groups[0][0], 4.0, h100, cal_h100, prec=m.default_precision, sh=Plan(tp=2),
                        b=ops.Batch(dec_seqs=16, dec_ctx=100), prefix="x", parts=("attn",))
    assert [(o.name, o.part) for o in got] == [("x/attn/linear", "attention"), ("x/attn/all_reduce", "attention")]
    assert float(got[0].flops) == 2.0 * 16 * 2048 * 4096
    assert float(got[1].bytes) == 16 * 4096 * 2.0


def test_cross_head_qk_norm_splits_around_its_all_reduce():
    """MiniMax-M2's RMSNorm of Q and K over all heads: under TP its sums of squares are all-reduced, which ends a
    kernel, so the sums run as a pass of their own before it (the scaling after it fuses with RoPE, as the whole norm
    does on one GPU). TP4, 4 decoding sequences: 4 tokens x (48 / 4 + 8 / 4 heads) x 128 x 2 B = 14,336 B read at
    8 TB/s x 0.85, 2.1 ns, plus one launch of 3 us; nothing at TP1."""
    from llm_codesign.cost.calibration import documented
    from llm_codesign.spec.hardware import get_gpu
    from llm_codesign.spec.precision import Precision
    from llm_codesign.spec.registry import get_model

    g, cal, m = get_gpu("b200"), documented("blackwell"), get_model("minimax-m2.5")

    def sums(tp):
        step = ops.forward_ops(m, g, cal, Precision.of("fp8"), Plan(tp=tp).broadcast(), b=ops.Batch(dec_seqs=4, dec_ctx=1024))
        return next(o for o in step if o.role == "qk_norm_sums"), ops.launches(step)

    (s4, n4), (s1, n1) = sums(4), sums(1)
    assert float(s4.time) == pytest.approx(14336 / (8e12 * 0.85) + 3e-6, rel=1e-9) and s4.kernels == 1.0
    assert float(s1.time) == 0.0
    # under TP each of the 62 layers launches four kernels more: the sums, their all-reduce and the attention's and
    # MoE's output all-reduces (no engine: nothing fused)
    assert float(n4 - n1) == pytest.approx(62 * 4, rel=1e-12)
