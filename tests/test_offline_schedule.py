"""An offline run priced as TensorRT-LLM's scheduler runs it (serve.aggregated._offline_round), step by step."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.serve.aggregated import Serving, decode_step, evaluate, prefill_step
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.harness import SchedulerFlags
from llm_codesign.spec.plan import Plan
from llm_codesign.spec.registry import get_model


def test_four_requests_one_round_step_by_step():
    # 4 requests of 1,024 in / 64 out, whole prompts (chunked context off) in a 2,048-token budget: the decodes come first,
    # so beside 1-3 decodes only one 1,024-token prompt fits (2,045 // 1,024 = 1) and step 1 takes one too (the rank's 4
    # running slots each get their prompt in steps 1-4). Request i (1-4) prefills in step i beside i - 1 decodes, gets its
    # first token there, decodes 63 more steps and ends in step i + 63: steps 5-64 decode all 4 (60 steps), 65-67 decode
    # 3, 2, 1. 67 steps = OSL + 3; 4 x 64 tokens over them.
    m, gpu = get_model("llama-3.1-8b"), get_gpu("h100")
    cal, plan, engine = calibration_for(gpu), Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))), get_engine("trtllm")
    costs, sh, prec = engine.costs(cal), plan.broadcast(), m.default_precision
    at = Serving(gpu=gpu, prec=prec, plan=plan, engine=engine, max_num_tokens=2048.0)
    fl = SchedulerFlags(chunked_prefill=False, rounds=1.0)
    r = evaluate(m, at, cal=cal, concurrency=4.0, isl=1024.0, osl=64.0, offline=True, flags=fl)

    def mixed(d):
        return np.asarray(prefill_step(m, gpu, prec, sh, costs=costs, tokens=1024.0, isl=1024.0, chunk=1024.0, dec_seqs=d, dec_ctx=1024.0 + 32.0)).item()

    def dec(b):
        return np.asarray(decode_step(m, gpu, prec, sh, costs=costs, b=b, ctx=1024.0 + 32.0, k=0.0, spec=None)[0]).item()

    steps = sum(mixed(d) for d in (0.0, 1.0, 2.0, 3.0)) + 60 * dec(4.0) + sum(dec(b) for b in (3.0, 2.0, 1.0))
    # the model's closed form: the ramp's 4 prompt steps at their mean 1.5 decodes, 60 steps of 4, the tail's 3 at a mean of 2
    closed = 4 * mixed(1.5) + 60 * dec(4.0) + 3 * dec(2.0)
    assert r["output_tok_s_per_gpu"].item() == pytest.approx(4 * 64 / closed, rel=1e-9)
    assert r["output_tok_s_per_gpu"].item() == pytest.approx(4 * 64 / steps, rel=0.01)  # a step's price is near linear in its batch
    # steady state alone (rounds inf): the 4 prompt steps each beside 3 decodes, 60 decode steps of 4, no tail
    s = evaluate(m, at, cal=cal, concurrency=4.0, isl=1024.0, osl=64.0, offline=True, flags=SchedulerFlags(chunked_prefill=False))
    assert s["output_tok_s_per_gpu"].item() == pytest.approx(4 * 64 / (4 * mixed(3.0) + 60 * dec(4.0)), rel=1e-9)
