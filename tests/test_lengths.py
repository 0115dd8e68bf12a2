"""Workloads of many lengths (explore/lengths.py): priced through the array path, mixed by request share."""
import numpy as np
import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.errors import InputError
from llm_codesign.explore.lengths import from_csv, from_distributions, parametric, price_mix
from llm_codesign.serve.metrics import evaluate
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.plan import Deployment, Plan, Workload
from llm_codesign.spec.registry import get_model

M, G = get_model("llama-3.1-8b"), get_gpu("h100")
DEP = Deployment(gpu=G, num_gpus=2, plan=Plan(2), precision=M.default_precision)
CAL = calibration_for(G)


class single:
    """One length's metrics as plain floats."""

    def __init__(self, isl, osl, c=32):
        m = evaluate(M, DEP, Workload(isl=isl, osl=osl, concurrency=c), calibration=CAL)
        for k in ("output_tok_s_per_gpu", "ttft_s", "tpot_s"):
            setattr(self, k, float(np.asarray(getattr(m, k)).reshape(-1)[0]))


def test_one_length_is_the_estimate(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("isl,osl\n2048,256\n2048,256\n")
    r = price_mix(M, DEP, from_csv(str(f)), 32, calibration=CAL)
    s = single(2048, 256)
    assert r["output_tok_s_per_gpu"] == pytest.approx(float(s.output_tok_s_per_gpu), rel=1e-12)
    assert r["ttft_ms"]["mean"] == pytest.approx(float(s.ttft_s) * 1e3, rel=1e-12)
    assert r["tpot_ms"] == pytest.approx(float(s.tpot_s) * 1e3, rel=1e-12)


def test_two_lengths_mix_by_request_share(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("isl,osl,count\n512,128,3\n8192,1024,1\n")
    r = price_mix(M, DEP, from_csv(str(f)), 32, calibration=CAL)
    a, b = single(512, 128), single(8192, 1024)
    # a slot serves a request for its life: C x OSL / (output tok/s per GPU x GPUs)
    life = [32 * o / (float(x.output_tok_s_per_gpu) * 2) for o, x in ((128, a), (1024, b))]
    want = 32 * (0.75 * 128 + 0.25 * 1024) / (0.75 * life[0] + 0.25 * life[1]) / 2
    assert r["output_tok_s_per_gpu"] == pytest.approx(want, rel=1e-12)
    assert r["ttft_ms"]["mean"] == pytest.approx((0.75 * float(a.ttft_s) + 0.25 * float(b.ttft_s)) * 1e3, rel=1e-12)
    assert r["ttft_ms"]["p50"] == pytest.approx(float(a.ttft_s) * 1e3) and r["ttft_ms"]["p90"] == pytest.approx(float(b.ttft_s) * 1e3)
    tok = np.array([0.75 * 127, 0.25 * 1023])  # the decoded tokens, OSL - 1 a request: TPOT is the time per token after the first
    assert r["tpot_ms"] == pytest.approx(float(np.dot(tok / tok.sum(), [float(a.tpot_s), float(b.tpot_s)])) * 1e3, rel=1e-12)
    assert r["mean_isl"] == pytest.approx(0.75 * 512 + 0.25 * 8192)


def test_parametric_bins():
    v, w = parametric("lognormal:median=2048,sigma=1", "isl_dist", bins=24)
    assert len(v) == 24 and w.sum() == pytest.approx(1.0) and np.all(np.diff(v) > 0)
    assert v[11] < 2048 < v[12]  # the median sits between the two middle bins
    v, w = parametric("uniform:100,300", "isl_dist", bins=4)
    assert list(v) == [125, 175, 225, 275]
    assert list(parametric("fixed:777", "osl_dist")[0]) == [777]
    mix = from_distributions("fixed:1024", "uniform:100,300")
    assert mix.mean_isl == 1024 and mix.mean_osl == pytest.approx(200, abs=1)
    for bad in ("lognormal:median=0,sigma=1", "lognormal:sigma=1", "gamma:2", "uniform:300,100", "fixed:-4"):
        with pytest.raises(InputError, match="isl_dist|isl"):
            parametric(bad, "isl_dist")


def test_bad_csv_is_one_line(tmp_path):
    f = tmp_path / "l.csv"
    for text, field in (("a,b\n1,2\n", "lengths"), ("isl,osl\n10,x\n", "osl"), ("isl,osl\n0,5\n", "isl"),
                        ("isl,osl,count\n10,5,-1\n", "count"), ("isl,osl\n", "lengths")):
        f.write_text(text)
        with pytest.raises(InputError) as e:
            from_csv(str(f))
        assert e.value.field == field and "\n" not in str(e.value)


def test_a_csv_naming_a_column_twice_is_one_line(tmp_path):
    # csv.DictReader kept the second isl and dropped the first in silence: a mix of 20-token prompts, not 10
    f = tmp_path / "l.csv"
    f.write_text("isl,osl,isl\n10,5,20\n")
    with pytest.raises(InputError) as e:
        from_csv(str(f))
    assert str(e.value) == f"lengths: '{f}' is not valid; a CSV with columns isl,osl, whose header names each column once ('isl' is named twice)"


def test_cli_mix():
    from typer.testing import CliRunner

    from llm_codesign.cli import app

    r = CliRunner().invoke(app, ["mix", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--isl-dist", "lognormal:median=1024,sigma=0.8",
                                 "--osl-dist", "fixed:256", "--concurrency", "16", "--json"])
    assert r.exit_code == 0, r.output
    import json

    out = json.loads(r.stdout)
    assert out["distinct_lengths"] == 24 and out["ttft_ms"]["p99"] >= out["ttft_ms"]["p90"] >= out["ttft_ms"]["p50"] > 0
    bad = CliRunner().invoke(app, ["mix", "llama-3.1-8b", "--gpu", "h100", "--isl-dist", "fixed:10"])
    assert bad.exit_code == 2


CTX = "llama-3.1-8b's context of 131,072 tokens"


@pytest.mark.parametrize("isl, osl, line", [
    # 24 equal-probability bins each: lognormal's top bin, 8,000 e^(1.5 x 2.04) = 169,812 tokens, is 1 of 24 (4.17%); with
    # the 1,000-token outputs, 170,812 in all
    ("lognormal:median=8000,sigma=1.5", "fixed:1000",
     f"isl_dist: 'lognormal:median=8000,sigma=1.5' is not valid; draws within {CTX} (ISL+OSL, with --osl-dist fixed:1000): "
     "4.17% of the mix's requests exceed it, up to 170,812, and an engine refuses such a request"),
    ("fixed:1000", "lognormal:median=8000,sigma=1.5",
     f"osl_dist: 'lognormal:median=8000,sigma=1.5' is not valid; draws within {CTX} (ISL+OSL, with --isl-dist fixed:1000): "
     "4.17% of the mix's requests exceed it, up to 170,812, and an engine refuses such a request"),
    # neither alone: bins at 1,000 + 99,000 (k + 0.5) / 24; the pairs past 131,072 are 136 of 576 (23.6%)
    ("uniform:1000,100000", "uniform:1000,100000",
     f"isl_dist/osl_dist: '--isl-dist uniform:1000,100000, --osl-dist uniform:1000,100000' is not valid; draws whose sums lie "
     f"within {CTX}: "
     "23.6% of the mix's requests exceed it, up to 195,876, and an engine refuses such a request"),
])
def test_a_mix_drawing_past_the_context_names_its_part_and_share(isl, osl, line):
    with pytest.raises(InputError) as e:
        price_mix(M, DEP, from_distributions(isl, osl), 32, calibration=CAL)
    assert str(e.value) == line


def test_a_csv_mix_is_checked_request_by_request(tmp_path):
    # the longest ISL and the longest OSL of different requests were summed: 130,000 + 130,000 refused a mix whose
    # every request fits (130,010 tokens each); one request of four (by count) past the context is named with its share
    f = tmp_path / "l.csv"
    f.write_text("isl,osl\n130000,10\n10,130000\n")
    assert price_mix(M, DEP, from_csv(str(f)), 4, calibration=CAL)["distinct_lengths"] == 2
    f.write_text("isl,osl,count\n130000,10,3\n131000,100,1\n")
    with pytest.raises(InputError) as e:
        price_mix(M, DEP, from_csv(str(f)), 4, calibration=CAL)
    assert str(e.value) == (f"lengths: '{f}' is not valid; requests within {CTX} (ISL+OSL): 25% of the mix's requests exceed it, "
                            "up to 131,100, and an engine refuses such a request")


def test_tpot_weighs_the_decoded_tokens(tmp_path):
    """crev9 #3: TPOT and tok/s/user average over the tokens decoded, OSL - 1 a request (its first token is its prefill's).
    Weighted by OSL, 1,000 one-token requests beside one 128/32 request made the mix's TPOT 11.21 ms against the one
    decoding request's 6.68 (llama-3.1-8b, H100)."""
    f = tmp_path / "l.csv"
    f.write_text("isl,osl,count\n8192,1,1000\n128,32,1\n")
    r = price_mix(M, DEP, from_csv(str(f)), 32, calibration=CAL)
    # the one-token requests weigh 1000 x (1 - 1) = 0 decoded tokens: the mix's TPOT is the 128/32 request's own
    only = float(single(128, 32).tpot_s) * 1e3
    assert r["tpot_ms"] == pytest.approx(only, rel=1e-12) and r["tok_s_per_user"] == pytest.approx(1e3 / only, rel=1e-12)
    f.write_text("isl,osl,count\n512,2,3\n512,11,1\n")
    r = price_mix(M, DEP, from_csv(str(f)), 32, calibration=CAL)
    a, b = (float(single(512, o).tpot_s) * 1e3 for o in (2, 11))
    # decoded tokens: 3 requests x (2 - 1) = 3 and 1 x (11 - 1) = 10, so TPOT = (3 a + 10 b) / 13 (by OSL it was (6 a + 11 b) / 17)
    assert r["tpot_ms"] == pytest.approx((3 * a + 10 * b) / 13, rel=1e-12)
    assert r["tok_s_per_user"] == pytest.approx(13e3 / (3 * a + 10 * b), rel=1e-12)


def test_the_mix_ceiling_is_priced_as_the_mix(tmp_path):
    """crev9 #4: tok/s/GPU's ceiling was one ideal step at the smallest batch of any length (the prefill-bound 1024/2
    requests' 7 of 16 in flight), ~1350 tok/s/GPU below the mix's own 1697, so both upper bounds were cut to the prediction.
    Now each length's ideal at its own batch and acceptance, combined as the mix's rate: E[OSL] / E[OSL / rate]."""
    import llm_codesign as lc
    from llm_codesign.measure.intervals import ideal

    f = tmp_path / "l.csv"
    f.write_text("isl,osl,count\n1024,2,3\n1024,1024,1\n")
    dep = lc.deployment(M, gpu="h100", num_gpus=1)
    d = lc.mix(M, dep, lengths=str(f), concurrency=16).to_dict()
    est = {o: lc.estimate(M, dep, Workload(isl=1024, osl=o, concurrency=16)) for o in (2, 1024)}
    assert (est[2].max_batch, min(16, est[1024].max_batch)) == (7, 16)  # each length's batch that runs
    per = {o: ideal(M, dep, min(16, est[o].max_batch), isl=1024, osl=o, accepted=1.0) for o in (2, 1024)}
    # E[OSL] = 0.75 x 2 + 0.25 x 1024 = 257.5 output tokens a request
    ceiling = 257.5 / (0.75 * 2 / per[2]["output_tok_s_per_gpu"] + 0.25 * 1024 / per[1024]["output_tok_s_per_gpu"])
    assert per[2]["output_tok_s_per_gpu"] < d["output_tok_s_per_gpu"] < ceiling  # the old ceiling lay below the value
    band = d["intervals"]["output_tok_s_per_gpu"]
    assert "capped" not in band and band["hi80"] > d["output_tok_s_per_gpu"] and band["hi95"] > band["hi80"]
    # TPOT's floor over the decoded tokens: 3 x 1 of the 1024/2 requests' and 1 x 1023 of the 1024/1024 one's
    floor = (3 * per[2]["tpot_ms"] + 1023 * per[1024]["tpot_ms"]) / 1026
    assert d["intervals"]["tpot_ms"]["lo95"] >= floor * (1 - 1e-12) and d["intervals"]["tpot_ms"].get("capped", floor) == pytest.approx(floor)


def test_a_mix_of_lengths_arrives_as_a_closed_loop():
    """fixN5c (newc12 #9): waves' cohorts stay in step only where requests are identical (they end in one step and refill
    together); a mix's end apart. So a mix of lengths defaults to closed_loop, one length to waves, and its TTFT then rises
    with the prompt, where in waves TensorRT-LLM's whole prompts made it a sawtooth (floor(8192 / ISL) prompts a step:
    3 x 2200 = 6600 tokens a step against 4 x 2000 = 8000, a shorter step, an earlier first token)."""
    from llm_codesign.explore.lengths import mix, mix_arrival

    assert mix_arrival(from_distributions("fixed:800", "fixed:288")) == "waves"
    assert mix_arrival(from_distributions("uniform:100,2000", "fixed:288")) == "closed_loop"
    m70 = get_model("llama-3.1-70b")
    dep = Deployment(gpu=get_gpu("h200"), num_gpus=8, plan=Plan(8), precision=m70.default_precision)
    d = mix(m70, dep, isl_dist="lognormal:median=800,sigma=0.8", osl_dist="uniform:64,512", concurrency=32).to_dict()
    assert d["arrival"] == "closed_loop"
    rows = sorted(d["per_length"], key=lambda x: x["isl"])
    at = {x["isl"]: x["ttft_ms"] for x in rows if x["osl"] == rows[0]["osl"]}
    assert list(at.values()) == sorted(at.values())  # one OSL's TTFT rises with its ISL
    t = d["ttft_ms"]
    # p99's ~4k prompt against p50's ~800: 283 vs 109 ms (waves read 432 vs 400)
    assert t["p50"] == pytest.approx(109.3, abs=1.0) and t["p99"] == pytest.approx(283.5, abs=3.0) and t["p99"] > 2.4 * t["p50"]
