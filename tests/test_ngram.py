"""--spec ngram (prompt lookup): the host proposer's cost beside the target's verify step, no draft on the GPU, the
acceptance required, the engines that run it, and the export's flags read back."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.cost.memory import fit
from llm_codesign.errors import InputError
from llm_codesign.serve.aggregated import decode_step, draft_model, ngram_propose_time
from llm_codesign.spec.engines import get_engine
from llm_codesign.spec.plan import Plan, SpecDecoding, deployment
from llm_codesign.spec.registry import get_model


def test_the_proposers_host_cost_is_each_engines_read_cost():
    # vLLM: 20 us + b (1.6 us + 6 ns b + 1.4 ns ctx); 16 requests at 2,048 tokens of context:
    # 20 + 16 x (1.6 + 0.096 + 2.8672) = 93.0112 us. SGLang: 5 us a request, whatever the context: 80 us
    assert ngram_propose_time(get_engine("vllm"), 16.0, 2048.0, 3) == pytest.approx(93.0112e-6, rel=1e-12)
    assert ngram_propose_time(get_engine("sglang"), 16.0, 2048.0, 3) == pytest.approx(80e-6, rel=1e-12)
    assert ngram_propose_time(get_engine("sglang"), 16.0, 32768.0, 3) == pytest.approx(80e-6, rel=1e-12)
    # nothing to propose: no decoding request, or k = 0 (a sweep's point without speculation)
    assert ngram_propose_time(get_engine("vllm"), np.array([0.0, 16.0]), 2048.0, np.array([3, 0])).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_step_is_the_verify_step_plus_the_host_proposer(h100, engine):
    # k = 3: the target verifies 1 + 3 tokens a sequence, as for every method (the same operators: spec None at k = 3
    # prices exactly that step), and the proposer's host time adds to it; no draft pass runs on the GPU
    m = get_model("llama-3.1-8b")
    sh, costs = Plan(*(np.array([v]) for v in (1, 1, 1, 1, 1, 1))).broadcast(), get_engine(engine).costs(calibration_for(h100))
    spec = SpecDecoding("ngram", 3, mean_accepted=2.0)
    b = np.array([16.0])
    verify, _, _ = decode_step(m, h100, m.default_precision, sh, costs=costs, b=b, ctx=2048.0, k=3.0, spec=None)
    step, t_draft, _ = decode_step(m, h100, m.default_precision, sh, costs=costs, b=b, ctx=2048.0, k=3.0, spec=spec)
    host = {"vllm": 93.0112e-6, "sglang": 80e-6}[engine]
    assert t_draft.item() == pytest.approx(host, rel=1e-12)
    assert step.item() == pytest.approx(verify.item() + host, rel=1e-12)
    # at a mean 2.0 tokens a step, each token costs half the step: (verify + host) / 2.0
    assert step.item() / spec.accepted(3) == pytest.approx((verify.item() + host) / 2.0, rel=1e-12)


def test_no_draft_weights_or_cache_are_held(h100):
    m = get_model("llama-3.1-8b")
    spec = SpecDecoding("ngram", 3, mean_accepted=2.0)
    assert draft_model(m, spec) is None
    sh = Plan().broadcast()
    plain = fit(m, h100, m.default_precision, sh, 2048.0, osl=256.0)
    ngram = fit(m, h100, m.default_precision, sh, 2048.0, osl=256.0, spec=spec, draft=None)
    assert float(ngram["draft_weights"]) == 0.0
    assert float(ngram["kv_per_token"]) == float(plain["kv_per_token"])
    assert float(ngram["weights"]) == float(plain["weights"])


def test_the_acceptance_is_required_and_no_draft_model_is_taken():
    with pytest.raises(InputError, match=r"^acceptance: not given; prompt lookup's hit rate is the workload's own"):
        deployment("llama-3.1-8b", gpu="h100", engine="vllm", spec="ngram", draft_len=3)
    with pytest.raises(InputError, match=r"^draft_model: 'llama-3.2-1b' is not valid; left out with --spec ngram"):
        deployment("llama-3.1-8b", gpu="h100", engine="vllm", spec="ngram", draft_len=3, acceptance=2.0, draft_model="llama-3.2-1b")
    with pytest.raises(InputError, match=r"^acceptance: 4.5 is not valid; a mean accepted length between 1 and k\+1 = 4"):
        deployment("llama-3.1-8b", gpu="h100", engine="vllm", spec="ngram", draft_len=3, acceptance=4.5)


def test_an_engine_that_prices_no_prompt_lookup_is_refused_naming_those_that_do():
    with pytest.raises(InputError, match=r"^spec: 'ngram' is not valid; mtp, eagle3 or draft on TensorRT-LLM \(its NGram drafter "
                                         r".*prompt lookup is priced on vllm, sglang \(--engine\)$"):
        deployment("llama-3.1-8b", gpu="h100", engine="trtllm", spec="ngram", draft_len=3, acceptance=2.0)
