"""fixN3: newcomer newc11's findings #7, #11, #12, #13 and #15 (serving answers and the files they write)."""
import json

from conftest import cli

from llm_codesign.explore.export import _per_rank_concurrency

NEMO_DP = "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --data-parallel-size 2"


def test_a_data_parallel_launch_line_splits_the_endpoints_concurrency_over_its_ranks():
    """#11: one `vllm serve --data-parallel-size 2` is one endpoint: a client's 32 in flight are 16 a rank (its front end
    balances), priced as a TP2 instance at 16, not 32 (which read 64 in all). 33 leaves the busiest rank ceil(33/2) = 17."""
    assert _per_rank_concurrency(32, 2, stated_dp=True) == (16, 32)
    assert _per_rank_concurrency(33, 2, stated_dp=True) == (17, 33)
    assert _per_rank_concurrency(32, 2, stated_dp=False) == (32, None)  # an export's replicas: separate instances
    assert _per_rank_concurrency(32, 1, stated_dp=True) == (32, None)
    assert _per_rank_concurrency(None, 2, stated_dp=True) == (None, None)
    code, out, err = cli("import", NEMO_DP, "--gpu", "h100", "--concurrency", "32", "--json")
    assert code == 0, err
    dp = json.loads(out)
    assert (dp["concurrency"], dp["endpoint_concurrency"], dp["replicas"]) == (16, 32, 2)
    code, out, err = cli("import", NEMO_DP.replace(" --data-parallel-size 2", ""), "--gpu", "h100", "--concurrency", "16", "--json")
    one = json.loads(out)
    assert code == 0 and one["concurrency"] == 16 and "endpoint_concurrency" not in one
    assert dp["tpot_ms"] == one["tpot_ms"]  # a rank at 16 is the TP2 instance at 16
    code, text, err = cli("import", NEMO_DP, "--gpu", "h100", "--concurrency", "32")
    assert code == 0, err
    assert "16 requests on the busiest data-parallel rank (--concurrency 32 at the one endpoint, split over its 2 data-parallel ranks)" in text


def test_a_profile_slice_takes_the_finite_sample_conformal_rule():
    """#15: the k-th order statistic bounds a new exchangeable residual's tail with probability k/(n+1): the 90th percentile
    needs ceil((n+1) 0.9) <= n, n >= 9 (n = 9: ceil(9.0) = 9; n = 8: ceil(8.1) = 9 > 8), the 97.5th n >= 39
    (n = 38: ceil(38.025) = 39 > 38). 30 runs -2.9% ... +2.9% (log(1 + (i - 15)/500), i = 1..30): the 80% band runs from
    the floor(31 x 0.1) = 3rd smallest, log(1 - 12/500), to the ceil(31 x 0.9) = 28th, log(1 + 13/500); no 95%."""
    import math

    from llm_codesign.measure import intervals as iv

    assert iv.OWN_MIN_ROWS == 9 and iv.MIN_ROWS == 39
    assert math.isfinite(iv.conformal(list(range(9)), 0.9)) and math.isnan(iv.conformal(list(range(8)), 0.9))
    assert math.isfinite(iv.conformal(list(range(39)), 0.975)) and math.isnan(iv.conformal(list(range(38)), 0.975))
    r = [math.log(1 + (i - 15) / 500) for i in range(1, 31)]
    c = iv.cell(r)
    assert (c["n"], c["q100"], c["q900"]) == (30, round(math.log(1 - 12 / 500), 4), round(math.log(1 + 13 / 500), 4))
    assert math.isnan(c["q025"]) and math.isnan(c["q975"])
    ctx = iv.Context("serving", "vllm", "hopper", "dense", "5-32", "balanced", ("dense", "gqa"), "bf16")
    own = iv.build([(ctx, {"tpot_ms": x}) for x in r], min_rows=iv.OWN_MIN_ROWS)
    assert own["slices"]["tpot_ms"]["serving|vllm|hopper"]["n"] == 30  # kept: under MIN_ROWS, over OWN_MIN_ROWS
    assert "serving|vllm|hopper" not in iv.build([(ctx, {"tpot_ms": x}) for x in r])["slices"]["tpot_ms"]


def test_thirty_own_runs_narrow_the_80_band_and_keep_the_bundled_95(tmp_path):
    """#15: a profile's own 30 vLLM Hopper runs, 80% within -10%/+10% of the prediction (q100 = -0.1, q900 = 0.1 about
    q500 = 0): the 80% band is p x exp(-0.1) ... p x exp(0.1), no campaign term (an own slice); its 95% has no order
    statistic at 30 (q025, q975 NaN), so it is the bundled band's 95% for the same question, which holds the 80%."""
    import math
    from importlib import resources

    import pytest

    prof = tmp_path / "mine.toml"
    slice_ = '"serving|vllm|hopper" = {n = 30, q025 = nan, q100 = -0.1, q500 = 0.0, q900 = 0.1, q975 = nan, mad = 0.05}\n'
    env = ('\n[intervals.envelope]\nserving = {metrics = ["tpot_ms"], families = ["hopper"], engines = ["vllm"], '
           'runs = {"vllm|hopper" = 30}, ranges = {vllm = {concurrency = [1.0, 64.0]}}}\nkinds = ["gqa", "dense"]\n'
           'formats = ["hopper|fp8|dense", "hopper|bf16|dense"]\nmodels = ["llama-3.1-70b"]\n\n[intervals.slices.tpot_ms]\n')
    prof.write_text(resources.files("llm_codesign").joinpath("data/calibration/fitted.toml").read_text() + env + slice_)
    args = ("estimate", "llama-3.1-70b", "--gpu", "h100", "--tp", "8", "--concurrency", "64", "--backend", "vllm", "--json")
    code, out, err = cli(*args, "--calibration", str(prof))
    assert code == 0, err
    r = json.loads(out)
    b, p = r["intervals"]["tpot_ms"], r["tpot_ms"]
    assert b["source"] == "mine.toml's own 30 serving runs with vLLM, on Hopper GPUs" and b["widened"] == []
    assert [b["lo80"], b["hi80"]] == pytest.approx([p * math.exp(-0.1), p * math.exp(0.1)], rel=1e-9)
    # the bundled 95% of this question as this profile's envelope has it (its slice set aside): wider than the own 80%
    prof.write_text(resources.files("llm_codesign").joinpath("data/calibration/fitted.toml").read_text() + env.replace(
        '"vllm|hopper" = 30', '"vllm|hopper" = 39'))
    code, out, err = cli(*args, "--calibration", str(prof))
    assert code == 0, err
    bundled = json.loads(out)["intervals"]["tpot_ms"]
    assert [b["lo95"], b["hi95"]] == pytest.approx([bundled["lo95"], bundled["hi95"]], rel=1e-9)
    assert b["lo95"] < b["lo80"] < p < b["hi80"] < b["hi95"]


def test_estimate_stars_a_bound_its_kernel_rate_sets_as_roofline_does():
    """#12: gpt-oss-120b's MXFP4 experts on an MI355X at 32 requests, W4A16 (CDNA4 has FP4 math but the checkpoint runs
    BF16 activations): a decode layer's gate_up reads the distinct experts' 4.25-bit weights and multiplies 32 x 4 (top-4)
    rows by them, 2 FLOPs a weight: FLOP/B = 32 x 4 x 2 / (128 x (1 - (124/128)^32) x 4.25/8) = 256 / (81.66 x 0.53125)
    = 5.90, against the MI355X's BF16 ridge 2.5166e15 / 8.0e12 = 314.6: memory on the roofline, compute only by the
    dequantising kernel's rate. estimate said "compute"; it is "compute*", with why, as roofline's column says."""
    import math

    from llm_codesign.spec.hardware import get_gpu

    g = get_gpu("mi355x")
    assert round(g.peak("bf16") / g.hbm_bandwidth_bytes_per_s) == 315
    assert 256 / (128 * (1 - (124 / 128) ** 32) * 4.25 / 8) == __import__("pytest").approx(5.90, abs=0.005)
    code, out, err = cli("estimate", "gpt-oss-120b", "--gpu", "mi355x", "--tp", "1", "--concurrency", "32", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["decode_bound"] == "compute*"
    assert r["bound_why"]["decode"].startswith("moe/experts_gate_up at 5.9 FLOP/B against the GPU's ridge of 315: its kernel's own rates")
    code, out, err = cli("roofline", "gpt-oss-120b", "--gpu", "mi355x", "--batch", "32", "--context", "1536", "--json")
    assert code == 0, err
    row = next(o for o in json.loads(out)["ops"] if o["name"].endswith("experts_gate_up"))
    assert row["bound"] == "compute*" and math.isclose(row["intensity"], 5.9, abs_tol=0.05) and round(row["ridge_point"]) == 315
    # the table row says it, with the kernel table the band says is missing: the rate is assumed
    code, out, err = cli("estimate", "gpt-oss-120b", "--gpu", "mi355x", "--tp", "1", "--concurrency", "32")
    assert code == 0 and "compute* (moe/experts_gate_up at 5.9 FLOP/B" in " ".join(out.split())
    assert "the rate assumed: no MoE W4A16 kernel table on CDNA4)" in " ".join(out.replace("│", " ").split())
    # a weight-streaming decode (Llama-3.1-8B BF16, one request on an H100) is memory-bound on both sides: no star, no why
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1", "--json")
    r = json.loads(out)
    assert code == 0 and r["decode_bound"] == "memory" and "bound_why" not in r


def test_requests_in_step_past_the_full_context_count_are_said_to_be_preempted():
    """#7: Llama-3.1-8B BF16 on one H100 with vLLM, 1024/1024: a token's KV is 32 layers x 8 heads x 128 x 2 (K, V) x 2 B
    = 131,072 B; the pool (KV + free, 58.385 + 1.120 GB) holds 59.505e9 / (1536 x 131,072) = 295.6 -> 295 at the mean
    context vLLM sizes at, 59.505e9 / (2048 x 131,072) = 221.7 -> 221 at the full one. In waves the 290 reach 2048 tokens
    together: vLLM preempts about 69 (290 - 221), the newest first, near each wave's end (scheduler.py running.pop()); said,
    and priced in a burst and a run's first wave (tests/test_preempt.py)."""
    base = ("estimate", "llama-3.1-8b", "--gpu", "h100", "--tp", "1", "--isl", "1024", "--osl", "1024", "--json")
    code, out, err = cli(*base, "--backend", "vllm", "--concurrency", "290")
    assert code == 0, err
    r = json.loads(out)
    pool = (r["memory"]["kv_gb"] + r["memory"]["free_gb"]) * 1e9
    assert int(pool // (1536 * 131072)) == r["max_batch"] == 295 and int(pool // (2048 * 131072)) == 221
    assert r["in_step"].startswith("in step (waves), the 290 requests reach 1024+1024 tokens together and the KV cache holds 221 of them")
    assert "preempts about 69 of them" in r["in_step"]
    # staggered (closed_loop) a sequence holds ISL + OSL/2 on average: the mean sizing's premise, nothing to say
    code, out, err = cli(*base, "--backend", "vllm", "--concurrency", "290", "--arrival", "closed_loop")
    assert code == 0 and "in_step" not in json.loads(out)
    # within the full-context count, and TensorRT-LLM (which reserves ISL + OSL a request), neither
    code, out, err = cli(*base, "--backend", "vllm", "--concurrency", "221")
    assert code == 0 and "in_step" not in json.loads(out)
    code, out, err = cli(*base, "--backend", "trtllm", "--concurrency", "200")
    assert code == 0 and "in_step" not in json.loads(out)
