"""A prefill step on an idle engine: its host's dispatch of every launch shows where it outlasts the GPU
(serve.aggregated.prefill_step `idle`, default.toml [default.idle_launch_s], docs/modelling-notes.md#hostp-idle-prefill)."""
from dataclasses import replace

import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.aggregated import Serving, evaluate, forward_ops, kernels_time, launches, prefill_batch, prefill_step
from llm_codesign.serve.disagg import prefill_pool
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.precision import Precision
from llm_codesign.spec.registry import get_model

FP8 = Precision.of("fp8_block")


def _parts(model, gpu, costs, sh, tokens):
    t = np.array([tokens])
    ops = forward_ops(model, gpu, costs.cal, FP8, sh, b=prefill_batch(tokens=t, isl=t, chunk=t), engine=costs.engine, sample=True)
    n = launches(ops)
    return t, float(n[0]), float(kernels_time(ops, gpu, costs, n_launches=n)[0])


def test_sglang_idle_launch_is_the_documented_middle_and_the_pr_step_sits_in_its_range():
    # sgl-project/sglang PR #12160: DeepSeek-V3, one new token on an idle server, 82.6 ms eager, 23.1 ms graph-captured;
    # the step's 1,202 launches (SGLang on Hopper, TP8, FP8 block) give 59.5 / 1202 = 49.5 us to 82.6 / 1202 = 68.7 us
    m, g = get_model("deepseek-v3"), get_gpu("h200")
    costs = get_engine("sglang").costs(calibration_for(g))
    assert costs.idle_launch == pytest.approx(59.0e-6)
    _, n, _ = _parts(m, g, costs, Plan(tp=8, ep=1, moe_tp=8).broadcast(), 1.0)
    assert n == 1202.0
    assert 59.5e-3 / n <= costs.idle_launch <= 82.6e-3 / n
    for other in ("trtllm", "vllm", "atom"):  # no idle-engine figure read: not priced
        assert get_engine(other).costs(calibration_for(g)).idle_launch == 0.0


def test_idle_step_takes_the_hosts_dispatch_where_it_outlasts_kernels_and_launches():
    m, g = get_model("deepseek-r1"), get_gpu("h200")
    costs = get_engine("sglang").costs(calibration_for(g))
    sh = Plan(tp=8, ep=1, moe_tp=8).broadcast()
    e = float(costs.eager_per_launch(8.0))
    t, n, k = _parts(m, g, costs, sh, 1.0)
    busy = float(prefill_step(m, g, FP8, sh, costs=costs, tokens=t, isl=t, chunk=t)[0])
    idle = float(prefill_step(m, g, FP8, sh, costs=costs, tokens=t, isl=t, chunk=t, idle=True)[0])
    # one token: 1,202 x 59 us = 70.918 ms of dispatch against the kernels and the eager launches the busy step adds
    assert n * costs.idle_launch == pytest.approx(70.918e-3, rel=1e-12)
    assert n * costs.idle_launch > k + e * n
    assert idle - busy == pytest.approx(70.918e-3 - (k + e * n), rel=1e-9, abs=1e-12)
    # the busy step's own host costs (step, per sequence) stay on top: idle = S + sigma x 1 + n h
    assert idle == pytest.approx(costs.step_overhead + costs.seq_overhead * 1.0 + 70.918e-3, rel=1e-9)
    # 8,192 tokens: the kernels outlast the dispatch, so the idle step is the busy one, bit for bit
    t8, n8, k8 = _parts(m, g, costs, sh, 8192.0)
    assert k8 > n8 * costs.idle_launch
    assert prefill_step(m, g, FP8, sh, costs=costs, tokens=t8, isl=t8, chunk=t8, idle=True)[0] == \
        prefill_step(m, g, FP8, sh, costs=costs, tokens=t8, isl=t8, chunk=t8)[0]
    # an engine without the figure: idle is busy
    trt = get_engine("trtllm").costs(calibration_for(g))
    assert prefill_step(m, g, FP8, sh, costs=trt, tokens=t, isl=t, chunk=t, idle=True)[0] == \
        prefill_step(m, g, FP8, sh, costs=trt, tokens=t, isl=t, chunk=t)[0]


def test_disaggregated_lone_prompt_pays_the_idle_step_once_its_first_chunk():
    m, g = get_model("deepseek-r1"), get_gpu("b200")
    cal = calibration_for(g)
    costs = get_engine("sglang").costs(cal)
    plan = Plan(tp=8, ep=1, moe_tp=8)
    sh = plan.broadcast()
    isl = np.array([256.0])
    p = prefill_pool(m, g, FP8, plan, costs=costs, isl=isl)
    busy = prefill_step(m, g, FP8, sh, costs=costs, tokens=isl, isl=isl, chunk=isl)
    idle = prefill_step(m, g, FP8, sh, costs=costs, tokens=isl, isl=isl, chunk=isl, idle=True)
    assert float(p["t_idle"][0]) == pytest.approx(float(idle[0] - busy[0]), rel=1e-12) and float(p["t_idle"][0]) > 0.0
    assert float(p["t_alone"][0]) == pytest.approx(float(idle[0]), rel=1e-12)  # one chunk, no attention DP: the idle step
    # two chunks (a 4,096-token budget, an 8,192-token prompt): the second launches under the first, t_alone = idle + busy
    isl2, c = np.array([8192.0]), np.array([4096.0])
    p2 = prefill_pool(m, g, FP8, plan, costs=costs, isl=isl2, max_num_tokens=4096.0)
    b2 = prefill_step(m, g, FP8, sh, costs=costs, tokens=c, isl=isl2, chunk=c)
    i2 = prefill_step(m, g, FP8, sh, costs=costs, tokens=c, isl=isl2, chunk=c, idle=True)
    assert float(p2["t_alone"][0]) == pytest.approx(float(i2[0] + b2[0]), rel=1e-12)
    # with the figure at 0 nothing changes
    zero = replace(cal, idle_launch_s=tuple((k, 0.0) for k, _ in cal.idle_launch_s))
    p0 = prefill_pool(m, g, FP8, plan, costs=get_engine("sglang").costs(zero), isl=isl)
    assert float(p0["t_idle"][0]) == 0.0 and float(p0["t_alone"][0]) == float(busy[0])


def test_a_lone_request_pays_the_idle_step_and_two_do_not():
    m, g = get_model("deepseek-r1"), get_gpu("b200")
    cal = calibration_for(g)
    zero = replace(cal, idle_launch_s=tuple((k, 0.0) for k, _ in cal.idle_launch_s))
    at = Serving(gpu=g, prec=FP8, plan=Plan(tp=8, ep=1, moe_tp=8), engine=get_engine("sglang"))
    costs = get_engine("sglang").costs(cal)
    sh, isl = at.plan.broadcast(), np.array([256.0])
    extra = float((prefill_step(m, g, FP8, sh, costs=costs, tokens=isl, isl=isl, chunk=isl, idle=True)
                   - prefill_step(m, g, FP8, sh, costs=costs, tokens=isl, isl=isl, chunk=isl))[0])
    assert extra > 0.0
    one, one0 = (evaluate(m, at, cal=c, concurrency=1, isl=256, osl=64) for c in (cal, zero))
    assert float(np.ravel(one["ttft_s"])[0] - np.ravel(one0["ttft_s"])[0]) == pytest.approx(extra, rel=1e-9)
    assert float(np.ravel(one["tpot_s"])[0]) == float(np.ravel(one0["tpot_s"])[0])
    two, two0 = (evaluate(m, at, cal=c, concurrency=2, isl=256, osl=64) for c in (cal, zero))
    assert float(np.ravel(two["ttft_s"])[0]) == float(np.ravel(two0["ttft_s"])[0])
