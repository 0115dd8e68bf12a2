"""SGLang's fitted per-request cost (fitted.toml [default.ttft_overhead_s] sglang, 24.9 ms; its mechanism open) is said on
the answers where it is a material share of TTFT, and widens the TTFT and tok/s/GPU bands of a model class it was not
fitted on (newc6 #1: a dense 8B on one H100 priced with the cost fitted on large-MoE runs)."""
import json
import math

import pytest
from conftest import cli

import llm_codesign as lc
from llm_codesign.cost.calibration import calibration_for
from llm_codesign.measure import intervals as iv
from llm_codesign.serve.estimate import MATERIAL_SHARE
from llm_codesign.spec.engines import ENGINES


def _estimate(*args):
    code, out, err = cli("estimate", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_the_fitted_cost_is_said_where_it_is_a_material_share_of_ttft():
    d = _estimate("llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--backend", "sglang", "--concurrency", "8", "--breakdown")
    front = next(b["time_ms"] for b in d["breakdown"] if b["name"] == "first/front_end")
    per = calibration_for(lc.get_gpu("h100")).ttft_overhead("sglang")  # fitted.toml [default.ttft_overhead_s] sglang
    # 8 requests arriving together: 24.89 ms x (8 + 1) / 2 = 112.0 ms, served one at a time; of TTFT 298.1 ms: 37.6%
    assert per == pytest.approx(0.0248903) and front == pytest.approx(24.8903 * 9 / 2, rel=1e-4)
    assert front / d["ttft_ms"] == pytest.approx(0.376, abs=0.002) and 0.376 >= MATERIAL_SHARE
    note = d["request_cost_note"]
    assert note.startswith("112 ms of TTFT (38%) is SGLang's fitted per-request cost (ttft_overhead_s, 24.9 ms a request")
    assert "fitted on MoE runs only (DeepSeek-R1/V3, GLM-5 and Qwen3.5-397B on Blackwell and MI355X)" in note
    assert "its mechanism is open" in note and note.endswith("this dense model lies outside them: beyond the runs says what its intervals took of it")
    code, out, _ = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--backend", "sglang", "--concurrency", "8")
    assert code == 0 and "fitted request cost" in out
    # vLLM's and TensorRT-LLM's per-request cost is the documented 3 ms front end, not fitted: nothing said, nothing widened
    for engine in ("vllm", "trtllm"):
        assert ENGINES[engine].request_cost_fitted_on == ()
        other = _estimate("llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--backend", engine, "--concurrency", "8")
        assert "request_cost_note" not in other


def test_a_moe_model_inside_the_cost_fit_is_told_but_not_widened():
    d = _estimate("deepseek-r1", "--gpu", "b200", "--gpus", "8", "--tp", "8", "--backend", "sglang", "--concurrency", "64")
    note = d["request_cost_note"]
    # 64 arriving together: 24.89 x 65 / 2 = 809 ms
    assert note.startswith("809 ms of TTFT") and "lies outside" not in note
    assert not any("per-request cost" in w for b in d["intervals"].values() for w in b["widened"])


def test_a_dense_model_on_sglang_is_widened_by_the_model_term_on_ttft_and_tok_s_per_gpu():
    d = _estimate("llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--backend", "sglang", "--concurrency", "8")
    t = iv.bundled()["between"]["model"]
    # the held-out models' term: exp(0.0631) = 1.07, exp(0.2043) = 1.23 at 80/95%; the Hopper family's (the 2026-12-08
    # folds, 0.0667 / 0.2326) x1.07/x1.26 sits over it at both, so the band takes the family's and says the model's
    # reason lies within it (the largest term, not a product; crev9 #6)
    fam = iv.bundled()["between"]["family"]
    assert fam["t80"] > t["t80"] and fam["t95"] > t["t95"]
    why = ("SGLang's per-request cost (ttft_overhead_s) fitted on MoE runs alone, its mechanism open: priced here on a dense "
           f"model (x{math.exp(t['t80']):.2f}/x{math.exp(t['t95']):.2f} at 80/95%: within a larger reason's term, not widened for it)")
    assert why.endswith("(x1.07/x1.23 at 80/95%: within a larger reason's term, not widened for it)")
    for m in ("ttft_ms", "output_tok_s_per_gpu"):
        assert why in d["intervals"][m]["widened"], m
    for m in iv.DECODE_ONLY:  # a cost before the prefill moves no decode step
        assert not any("per-request cost" in w for w in d["intervals"][m]["widened"]), m
    # the band as iv.band prices it with the reason (the model term, x1.22 at 95% since the folds re-run of 2026-12-07,
    # now under the Hopper family's x1.30, so the family's term sets the 95%: 90.2-6452.5 ms, x71.5)
    ctx = iv.context(lc.get_model("llama-3.1-8b"), lc.get_gpu("h100"), lc.Precision.of("bf16"), engine="sglang", concurrency=8,
                     isl=1024, osl=1024, arrival="waves")
    assert iv.request_cost_outside(ctx) and iv.request_cost_outside(ctx.__class__(**{**ctx.__dict__, "model_class": "moe"})) is None
    plain = iv.band("ttft_ms", d["ttft_ms"], ctx)
    assert plain["lo95"] == pytest.approx(d["intervals"]["ttft_ms"]["lo95"]) and plain["hi95"] / plain["lo95"] > 50


def test_the_request_cost_reason_is_a_kind_of_its_own_selected_by_kind(monkeypatch):
    # the reason is kind "request_cost", widened by the held-out models' term (TERM_OF); TPOT's band drops it by that kind,
    # so the same words under another kind (a model reason) are kept: selection by kind, not by text
    ctx = iv.context(lc.get_model("llama-3.1-8b"), lc.get_gpu("h100"), lc.Precision.of("bf16"), engine="sglang", concurrency=8,
                     isl=1024, osl=1024, arrival="waves")
    table = iv.bundled()
    fitted = [w for w in iv.reasons(ctx, table) if w.kind == "request_cost"]
    assert len(fitted) == 1 and fitted[0].what == iv.request_cost_outside(ctx) and fitted[0].term == "model"
    t = table["between"]["model"]
    # its factors are the model term's: exp(0.1154) = 1.12, exp(0.5211) = 1.68 at 80/95% (as the test above)
    ttft = iv.band("ttft_ms", 100.0, ctx)["widened"]
    assert [w.factors for w in ttft if w.kind == "request_cost"] == [pytest.approx((math.exp(t["t80"]), math.exp(t["t95"])))]
    assert not any(w.kind == "request_cost" for w in iv.band("tpot_ms", 10.0, ctx)["widened"])
    as_model = [iv.Widening("model", w.what) if w.kind == "request_cost" else w for w in iv.reasons(ctx, table)]
    monkeypatch.setattr(iv, "reasons", lambda c, tb: as_model)
    assert any(w.what == fitted[0].what and w.kind == "model" for w in iv.band("tpot_ms", 10.0, ctx)["widened"])
